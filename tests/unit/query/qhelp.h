/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qhelp.h - helpers for the query view tests, on top of unit/testlib.h
 * (which builds the handmade profiles, "A;B;C" stacks root first): a
 * profile added to a store head, and a request runner over key=value
 * parameters. static inline so each test uses what it needs.
 */
#ifndef PROF_TESTS_QHELP_H
#define PROF_TESTS_QHELP_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "model/profile.h"
#include "query/filter.h"
#include "query/request.h"
#include "query/stackset.h"
#include "query/stackset_int.h"
#include "query/table.h"
#include "store/store.h"
#include "store/head.h"
#include "unit/testlib.h"

#include <jansson.h>

#include <setjmp.h>
#include <cmocka.h>

#define CPU  "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define HEAP "memory:inuse_space:bytes:space:bytes"
#define T0   1700000000000000000LL /* ns */
#define T0MS 1700000000000LL

/* A CPU profile (or, with @heap, an inuse_space one) of @service at T0. */
static inline void qh_init(struct model_profile *p, const char *service, bool heap)
{
	tl_profile_init_attr(p, heap, "service.name", service);
	p->time_ns = T0;
}

static inline void qh_head_add(struct store_head *h, struct model_profile *p)
{
	struct prof_err err;

	prof_err_init(&err);
	assert_int_equal(model_profile_validate(p, &err), 0);
	assert_int_equal(store_head_add(h, p, T0, &err), 0);
	model_profile_release(p);
}

/* --- the request layer ---------------------------------------------------------------- */

struct qh_args {
	const char *kv[48]; /* name, value pairs, NULL-terminated */
};

static inline const char *qh_arg(void *ctx, const char *name)
{
	const struct qh_args *a = ctx;

	for (size_t i = 0; a->kv[i]; i += 2)
		if (!strcmp(a->kv[i], name))
			return a->kv[i + 1];
	return NULL;
}

/*
 * Run @view with the pairs of @a against @h; returns the rc, the body in
 * @out (JSON bodies parsed into *@json when @json is not NULL and rc is 0),
 * the error in @err.
 */
static inline int qh_run(struct store_head *h, const char *view, struct qh_args *a, struct buf *out,
			 json_t **json, struct prof_err *err)
{
	struct store *st;
	const char *ct;
	json_error_t jerr;

	store_open_head(h, &st); /* the query layer reads a store */
	struct query_env env = { st, NULL, T0MS + 3600 * 1000, NULL };
	buf_reset(out);
	prof_err_init(err);
	int rc = query_request_run(&env, view, qh_arg, a, out, &ct, err);
	store_close(st);
	if (json)
		*json = NULL;
	if (!rc && json && !strcmp(ct, "application/json")) {
		*json = json_loadb(out->p, out->len, 0, &jerr);
		if (!*json)
			fail_msg("%s: invalid JSON: %s: %.300s", view, jerr.text, out->p);
	}
	return rc;
}

/* Integer member @key of object @o (fails the test when absent). */
static inline int64_t qh_int(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		fail_msg("no number '%s'", key);
	return json_is_integer(v) ? json_integer_value(v) : (int64_t)json_real_value(v);
}

static inline double qh_num(json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_number(v))
		fail_msg("no number '%s'", key);
	return json_number_value(v);
}

/* The child of JSON node @n named @name, or NULL. */
static inline json_t *qh_child(json_t *n, const char *name)
{
	json_t *kids = json_object_get(n, "children");
	size_t i;
	json_t *c;

	json_array_foreach(kids, i, c)
	{
		if (!strcmp(json_string_value(json_object_get(c, "name")), name))
			return c;
	}
	return NULL;
}

/* The node at "A;B;C" under JSON node @root, or NULL. */
static inline json_t *qh_path(json_t *root, const char *path)
{
	json_t *at = root;
	char name[256];

	for (const char *s = path; *s && at;) {
		size_t k = strcspn(s, ";");

		snprintf(name, sizeof(name), "%.*s", (int)k, s);
		at = qh_child(at, name);
		s += k;
		if (*s == ';')
			s++;
	}
	return at;
}

/* The query layer reads a store; these tests build a head by hand. */
static inline int qh_collect_head(struct store_head *h, const struct query_stackset_params *p,
				  struct query_stackset *ss, struct prof_err *err)
{
	struct store *st;

	store_open_head(h, &st);
	int rc = query_stackset_collect(st, p, ss, err);
	store_close(st);
	return rc;
}

static inline void qh_collect_ok(struct store_head *h, const struct query_filter *f,
				 struct query_stackset *ss)
{
	struct query_stackset_params p = { .type = CPU, .from_ns = 0, .to_ns = INT64_MAX };
	struct prof_err err;

	p.filter = f;
	prof_err_init(&err);
	assert_int_equal(qh_collect_head(h, &p, ss, &err), 0);
}

/* "A;B;C" of trie node @node. */
static inline void qh_path_str(const struct query_stackset *ss, uint32_t node, char *out,
			       size_t outsz)
{
	struct query_ss_path path = { 0 };
	size_t at = 0;

	out[0] = '\0';
	query_stackset_path(ss, node, &path);
	for (size_t i = 0; i < path.n; i++)
		at += (size_t)snprintf(out + at, outsz - at, "%s%s", i ? ";" : "",
				       ss->names.s[path.v[i]]);
	free(path.v);
}

/* Self value at the stack "A;B" (sum over its entries), or -1 when absent. */
static inline int64_t qh_stack_value(const struct query_stackset *ss, const char *want)
{
	char got[1024];
	int64_t v = -1;

	for (size_t i = 0; i < ss->entries.n; i++) {
		qh_path_str(ss, ss->entries.v[i].node, got, sizeof(got));
		if (!strcmp(got, want))
			v = (v < 0 ? 0 : v) + ss->entries.v[i].value;
	}
	return v;
}

static inline const struct query_table_row *
qh_row_of(const struct query_table *t, const struct query_stackset *ss, const char *name)
{
	for (size_t i = 0; i < t->nrows; i++)
		if (!strcmp(ss->names.s[t->rows[i].name], name))
			return &t->rows[i];
	return NULL;
}

static inline void qh_expect_row(const struct query_table *t, const struct query_stackset *ss,
				 const char *name, int64_t self, int64_t total)
{
	const struct query_table_row *r = qh_row_of(t, ss, name);

	if (!r)
		fail_msg("no table row %s", name);
	if (r->self != self || r->total != total)
		fail_msg("%s: self %lld total %lld, want %lld %lld", name, (long long)r->self,
			 (long long)r->total, (long long)self, (long long)total);
}

#endif
