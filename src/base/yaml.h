/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml.h - walking a YAML configuration document along its schema, with
 * errors that name the file, the line and the key path.
 *
 * The configuration readers (server/config.c, scrape/config.c) load a
 * document whole with libyaml's document API and walk it along the schema
 * only: the walk's depth is fixed whatever the input holds, and aliases
 * cannot make it recurse (an alias is a node id that resolves to a node
 * already in the document). This module is the shared part of that walk:
 * loading, looking up node ids, and the "want_*" readers that check one
 * node's shape and convert its text, each setting the walk's struct
 * prof_err to "NAME:LINE: WHAT: reason" (LINE 1-based, 0 when there is no
 * node, e.g. a missing key) and returning -EINVAL when the node is not
 * what the schema wants.
 *
 * Calling sequence:
 *
 *	struct ywalk w;
 *	yaml_node_t *root;
 *
 *	rc = ywalk_load(&w, text, n, "profd.yaml", &err, &root);
 *	if (!rc)
 *		rc = walk_my_schema(&w, root);
 *	ywalk_release(&w);
 *
 * Node pointers and scalar texts point into the document: valid until
 * ywalk_release(). Not thread-safe per walk; independent walks may run
 * in parallel. The prefix is ywalk_, not yaml_ (libyaml's).
 */
#ifndef PROF_BASE_YAML_H
#define PROF_BASE_YAML_H

#include "base/compat.h"
#include "base/err.h"

#include <yaml.h>

/**
 * struct ywalk - one loaded document and where its errors go.
 * @doc:    the document (valid between ywalk_load() success and ywalk_release())
 * @name:   the file name errors start with (lent; must outlive the walk)
 * @err:    receives the first failure's message (may be NULL)
 * @loaded: @doc holds a document to delete
 */
struct ywalk {
	yaml_document_t doc;
	const char *name;
	struct prof_err *err;
	bool loaded;
};

/* Iterate the key/value pairs of a mapping node @node (checked by ywalk_want_type). */
#define YWALK_MAP_FOREACH(node, pair)                                   \
	for (yaml_node_pair_t *pair = (node)->data.mapping.pairs.start; \
	     pair < (node)->data.mapping.pairs.top; pair++)
/* Iterate the item ids of a sequence node @node (checked by ywalk_want_type). */
#define YWALK_SEQ_FOREACH(node, item)                                    \
	for (yaml_node_item_t *item = (node)->data.sequence.items.start; \
	     item < (node)->data.sequence.items.top; item++)

/**
 * ywalk_load() - parse the first YAML document of @text (@n bytes; NULL
 * with 0 is an empty text) into @w and point *@root at its root node
 * (NULL for an empty document). @name and @err are kept in @w for the
 * errors of the walk. Returns 0; -EINVAL for a YAML syntax error (the
 * message gives line and column: "NAME:LINE:COL: YAML: problem context");
 * -ENOMEM when libyaml cannot start. Call ywalk_release() in every case.
 */
int ywalk_load(struct ywalk *w, const char *text, size_t n, const char *name, struct prof_err *err,
	       yaml_node_t **root);

/** ywalk_release() - free the document of @w; safe after a failed or no load. */
void ywalk_release(struct ywalk *w);

/**
 * ywalk_err() - set @w's error to "NAME:LINE: @what: MESSAGE" for node @n
 * (may be NULL: line 0) and return -EINVAL. @what is the key path
 * ("datasets[].limits.max_series"); MESSAGE is printf-formatted.
 */
int ywalk_err(struct ywalk *w, const yaml_node_t *n, const char *what, const char *fmt, ...)
	PROF_PRINTF(4, 5);

/** ywalk_node() - the node with id @id (from a pair or a sequence item), or NULL. */
yaml_node_t *ywalk_node(struct ywalk *w, int id);

/**
 * ywalk_scalar() - the text of scalar node @n; NULL for a missing or
 * non-scalar node and for text with a NUL byte inside (libyaml accepts
 * "\0" escapes, C strings would cut the value short).
 */
const char *ywalk_scalar(const yaml_node_t *n);

/** ywalk_want_scalar() - *@out = ywalk_scalar(@n), or -EINVAL when that is NULL. */
int ywalk_want_scalar(struct ywalk *w, const yaml_node_t *n, const char *what, const char **out);

/**
 * ywalk_want_type() - 0 when @n is a node of type @t (YAML_MAPPING_NODE
 * or YAML_SEQUENCE_NODE), else -EINVAL saying which was expected.
 */
int ywalk_want_type(struct ywalk *w, const yaml_node_t *n, yaml_node_type_t t, const char *what);

/** ywalk_want_u64() - a decimal integer 0..@max (parse_u64). */
int ywalk_want_u64(struct ywalk *w, const yaml_node_t *n, const char *what, uint64_t max,
		   uint64_t *out);

/** ywalk_want_size() - a byte size, 1 byte .. 16 GiB (parse_size_bytes: "64MiB", "1048576"). */
int ywalk_want_size(struct ywalk *w, const yaml_node_t *n, const char *what, size_t *out);

/**
 * ywalk_want_duration() - a positive duration up to 7 days in nanoseconds
 * (parse_duration_ns: "10s", "500ms", "1m"; a bare number is seconds).
 */
int ywalk_want_duration(struct ywalk *w, const yaml_node_t *n, const char *what, int64_t *out);

/** ywalk_want_bool() - true/yes/on or false/no/off (YAML 1.1 booleans, lower case). */
int ywalk_want_bool(struct ywalk *w, const yaml_node_t *n, const char *what, bool *out);

/**
 * ywalk_want_strings() - a list of scalars (or one scalar, as a list of
 * one) of at most @max entries, copied into a new array: *@out (never NULL
 * on success, even for an empty list) and *@nout entries, both owned by
 * the caller (ywalk_strings_free). On error *@out holds the entries copied
 * so far (*@nout of them): free it the same way.
 */
int ywalk_want_strings(struct ywalk *w, const yaml_node_t *n, const char *what, size_t max,
		       char ***out, size_t *nout);

/** ywalk_strings_free() - free @n strings of @v and @v itself; NULL-safe. */
void ywalk_strings_free(char **v, size_t n);

#endif
