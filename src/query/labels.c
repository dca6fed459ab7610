// SPDX-License-Identifier: Apache-2.0
/* labels.c - label names and values of selected series; see labels.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "query/jsonout.h"
#include "query/labels.h"

struct lcollect {
	const char *name;
	struct strtab out;
	bool has_empty;	   /* a series has label @name with the value "" */
	bool per_sample;   /* a visited source has per-sample attribute sets */
	VEC(uint8_t) used; /* rows pass: the attribute sets the current source's rows use */
};

/* Label @n = @v of a series or a sample set: a name, or @name's value. */
static void take(struct lcollect *c, const char *n, const char *v, bool series)
{
	n = store_label_canonical(n); /* service_name stored by earlier versions */
	if (!c->name)
		strtab_intern_cstr(&c->out, n);
	else if (strcmp(n, c->name))
		return;
	else if (*v)
		strtab_intern_cstr(&c->out, v);
	else if (series)
		c->has_empty = true;
}

/* Once per selected series per source (a series in several blocks comes
 * several times; interning makes that harmless). */
static int visit(void *arg, const struct store_source *src, const struct store_series *s)
{
	struct lcollect *c = arg;

	c->per_sample |= src->nattrs > 1;
	for (uint32_t i = 0; i < s->nlabels; i++)
		take(c, s->labels[i].name, s->labels[i].value, true);
	return 0;
}

/*
 * The rows pass, for per-sample attributes (thread.name, ...): the sets
 * the selected rows (series, time range and per-sample matchers) use,
 * marked per source and read at its end, so another series' values in
 * the same block never leak in.
 */
static int rows_begin(void *arg, const struct store_source *src)
{
	struct lcollect *c = arg;

	c->used.n = 0;
	for (size_t i = 0; i < src->nattrs; i++)
		VEC_PUSH(&c->used, 0);
	return 0;
}

static int rows_visit(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_row *rows, size_t n)
{
	struct lcollect *c = arg;

	(void)s;
	for (size_t i = 0; i < n; i++)
		if (rows[i].attrs && rows[i].attrs < src->nattrs)
			c->used.v[rows[i].attrs] = 1;
	return 0;
}

/* Pages without per-row attribute sets come summed: nothing to learn there. */
static int rows_steps(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_step_sum *v, size_t n)
{
	(void)arg;
	(void)src;
	(void)s;
	(void)v;
	(void)n;
	return 0;
}

/* One step over [from, to], capped at INT64_MAX ns. */
static int64_t one_step(int64_t from_ns, int64_t to_ns)
{
	uint64_t span = (uint64_t)to_ns - (uint64_t)from_ns;

	if (to_ns < from_ns)
		return 1;
	return span >= (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)span + 1;
}

static int rows_end(void *arg, const struct store_source *src)
{
	struct lcollect *c = arg;

	for (size_t k = 1; k < src->nattrs && k < c->used.n; k++) {
		const struct store_attr_set *a = &src->attrs[k];

		if (!c->used.v[k])
			continue;
		for (uint32_t i = 0; i < a->nlabels; i++)
			take(c, a->labels[i].name, a->labels[i].value, false);
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int query_labels_collect(struct store *st, const char *type, const struct store_matcher *m,
			 size_t nm, int64_t from_ns, int64_t to_ns, const char *name,
			 struct query_strlist *out)
{
	struct lcollect c = { .name = name ? store_label_canonical(name) : NULL };
	struct store_query q = { type && *type ? type : NULL, m, nm, from_ns, to_ns };
	struct store_visitor v = { .arg = &c, .series = visit };
	int rc;

	memset(out, 0, sizeof(*out));
	strtab_init(&c.out);
	rc = store_scan(st, &q, &v, NULL, NULL);
	if (!rc && c.per_sample) {
		struct store_visitor rv = { .arg = &c,
					    .source_begin = rows_begin,
					    .rows = rows_visit,
					    .source_end = rows_end,
					    .rows_no_stacks = true,
					    .steps = rows_steps,
					    .step_from_ns = from_ns,
					    .step_ns = one_step(from_ns, to_ns) };

		rc = store_scan(st, &q, &rv, NULL, NULL);
	}
	VEC_FREE(&c.used);
	/* Id 0 is strtab's own ""; an empty value is listed only when a series has it. */
	out->v = xcalloc(c.out.n + 1, sizeof(char *));
	if (c.has_empty)
		out->v[out->n++] = xstrdup("");
	for (uint32_t i = 1; i < c.out.n; i++)
		out->v[out->n++] = xstrdup(c.out.s[i]);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(char *), cmp_str);
	strtab_release(&c.out);
	return rc;
}

int query_strlist_write_json(const struct query_strlist *l, struct buf *out)
{
	int rc = buf_add(out, "[", 1);

	for (size_t i = 0; i < l->n && !rc; i++) {
		if (i)
			rc = buf_add(out, ",", 1);
		if (!rc)
			rc = query_json_str(out, l->v[i], strlen(l->v[i]));
	}
	return rc ? rc : buf_add(out, "]", 1);
}

int query_strlist_write_json_limited(const struct query_strlist *l, size_t limit, struct buf *out)
{
	struct query_strlist head = { l->v, PROF_MIN(l->n, limit) };
	int rc = buf_add(out, "{\"values\":", 10);

	if (!rc)
		rc = query_strlist_write_json(&head, out);
	if (!rc)
		rc = buf_addf(out, ",\"total\":%zu,\"limit\":%zu,\"truncated\":%s}", l->n, limit,
			      l->n > limit ? "true" : "false");
	return rc;
}

void query_strlist_release(struct query_strlist *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

/* --- nearest data outside a range ---------------------------------------------------------- */

struct nearest {
	int64_t from_ns, to_ns;
	uint64_t seen;
	struct query_nearest *out;
};

static int nearest_visit(void *arg, const struct store_source *src, const struct store_series *s)
{
	struct nearest *n = arg;

	(void)src;
	if (s->min_ts_ns > s->max_ts_ns)
		return 0; /* a head series without rows */
	if (s->max_ts_ns < n->from_ns &&
	    (!n->out->have_before || s->max_ts_ns > n->out->before_ns)) {
		n->out->have_before = true;
		n->out->before_ns = s->max_ts_ns;
	}
	if (s->min_ts_ns > n->to_ns && (!n->out->have_after || s->min_ts_ns < n->out->after_ns)) {
		n->out->have_after = true;
		n->out->after_ns = s->min_ts_ns;
	}
	return ++n->seen >= QUERY_NEAREST_MAX_SERIES ? 1 : 0;
}

int query_nearest_find(struct store *st, const char *type, const struct store_matcher *m, size_t nm,
		       int64_t from_ns, int64_t to_ns, struct query_nearest *out)
{
	struct nearest n = { from_ns, to_ns, 0, out };
	struct store_visitor v = { .arg = &n, .series = nearest_visit };
	struct store_query q = { type && *type ? type : NULL, m, nm, INT64_MIN, from_ns - 1 };
	int rc = 0;

	memset(out, 0, sizeof(*out));
	if (from_ns > INT64_MIN)
		rc = store_scan(st, &q, &v, NULL, NULL);
	if (rc == 1)
		rc = 0; /* stopped at the cap */
	n.seen = 0;
	q.from_ns = to_ns + 1;
	q.to_ns = INT64_MAX;
	if (!rc && to_ns < INT64_MAX)
		rc = store_scan(st, &q, &v, NULL, NULL);
	return rc == 1 ? 0 : rc;
}
