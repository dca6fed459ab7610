/* SPDX-License-Identifier: Apache-2.0 */
/*
 * k8s_int.h - what the two parts of Kubernetes discovery share (not a
 * public interface): the object decoder (k8s_decode.c: Kubernetes JSON to
 * targets and their __meta_kubernetes_* labels) and the discoverer
 * (k8s.c: credentials, list + watch threads, lifecycle), which reads list
 * envelopes and watch events with the decoder's field readers.
 */
#ifndef PROF_SCRAPE_K8S_INT_H
#define PROF_SCRAPE_K8S_INT_H

#include "base/compat.h"
#include "base/err.h"
#include "scrape/k8s.h"

#include <jansson.h>

#define MAX_RV 256 /* bytes of a resourceVersion we keep */

/* Decoding state: errors name the field, prefixed by @prefix. */
struct dec {
	struct prof_err *err;
	const char *prefix; /* "object." for events, "" otherwise */
	struct scrape_k8s_object *o;
};

/** k8s_ferr() - set @d's error "PREFIXFIELD: MESSAGE"; returns -EINVAL. */
int k8s_ferr(struct dec *d, const char *field, const char *fmt, ...) PROF_PRINTF(3, 4);

/**
 * k8s_get_obj(), k8s_get_arr(), k8s_get_str() - @o[@key] (borrowed from
 * @o) as an object, an array of at most @max items, or a string without
 * NUL bytes; *@out NULL when absent or null (for a string, an error when
 * @required). -EINVAL naming @path for another type.
 */
int k8s_get_obj(struct dec *d, json_t *o, const char *key, const char *path, json_t **out);
int k8s_get_arr(struct dec *d, json_t *o, const char *key, const char *path, size_t max,
		json_t **out);
int k8s_get_str(struct dec *d, json_t *o, const char *key, const char *path, bool required,
		const char **out);

/**
 * k8s_decode_json() - decode the object @obj of @role into @o (the
 * caller's; scrape_k8s_object_release); errors name fields after @prefix.
 * 0 or -EINVAL with @err set, @o released.
 */
int k8s_decode_json(enum scrape_k8s_role role, json_t *obj, const char *prefix,
		    struct scrape_k8s_object *o, struct prof_err *err);

/**
 * k8s_load_json() - parse @n bytes of @text (at most @max) into a new
 * reference (json_decref), or NULL with @err: -PROF_ETOOBIG or -EINVAL
 * with the line and column.
 */
json_t *k8s_load_json(const char *text, size_t n, size_t max, struct prof_err *err);

#endif
