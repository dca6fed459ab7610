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
	bool has_empty; /* a series has label @name with the value "" */
	bool any;	/* a source was seen; @last its id */
	uint64_t last;
};

/*
 * The per-sample attributes (thread.name, ...) of a source that holds
 * selected series: every attribute set of the source, so names and values
 * are scoped by the selection's blocks and heads, not row by row (a rows
 * scan would read every row for a label list).
 */
static void visit_sets(struct lcollect *c, const struct store_source *src)
{
	if (c->any && c->last == src->id)
		return;
	c->any = true;
	c->last = src->id;
	for (size_t k = 1; k < src->nattrs; k++) {
		const struct store_attr_set *a = &src->attrs[k];

		for (uint32_t i = 0; i < a->nlabels; i++) {
			if (!c->name)
				strtab_intern_cstr(&c->out, a->labels[i].name);
			else if (!strcmp(a->labels[i].name, c->name) && *a->labels[i].value)
				strtab_intern_cstr(&c->out, a->labels[i].value);
		}
	}
}

/* Once per selected series per source (a series in several blocks comes
 * several times; interning makes that harmless). */
static int visit(void *arg, const struct store_source *src, const struct store_series *s)
{
	struct lcollect *c = arg;

	visit_sets(c, src);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		if (!c->name)
			strtab_intern_cstr(&c->out, s->labels[i].name);
		else if (!strcmp(s->labels[i].name, c->name) && !*s->labels[i].value)
			c->has_empty = true;
		else if (!strcmp(s->labels[i].name, c->name))
			strtab_intern_cstr(&c->out, s->labels[i].value);
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
	struct lcollect c = { .name = name };
	struct store_query q = { type && *type ? type : NULL, m, nm, from_ns, to_ns };
	struct store_visitor v = { .arg = &c, .series = visit };
	int rc;

	memset(out, 0, sizeof(*out));
	strtab_init(&c.out);
	rc = store_scan(st, &q, &v, NULL, NULL);
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
