// SPDX-License-Identifier: Apache-2.0
/*
 * top.c - per-function self/total table of a profile; see top.h for the
 * rules (they reproduce `go tool pprof -top` at function granularity).
 */
#include "base/compat.h"
#include "query/top.h"

/* Function id of line @k of location @loc (display name interned in @names). */
static uint32_t top_frame_fn(const struct model_profile *p, const struct model_location *loc,
			     uint32_t k, struct strtab *names)
{
	char tmp[512];
	const char *s;

	/* Same rule as model_frame_name, keeping byte lengths (names may hold NULs). */
	if (k < loc->nlines) {
		const struct model_function *f =
			&p->functions.v[p->lines.v[loc->line_off + k].function];
		uint32_t id = f->name ? f->name : f->system_name;

		if (id)
			return strtab_intern(names, p->strings.s[id], p->strings.len[id]);
	}
	s = model_frame_name(p, loc, k, tmp, sizeof(tmp));
	return strtab_intern_cstr(names, s);
}

/* Sums wrap around like Go's int64 (pprof's own arithmetic) instead of being UB. */
static int64_t top_add(int64_t a, int64_t b)
{
	return (int64_t)((uint64_t)a + (uint64_t)b);
}

/*
 * Call edges (parent function -> function) with bit 0 set when seen
 * inlined and bit 1 when seen as a real call. pprof marks an edge inline
 * only if every occurrence was (graph.go AddToEdgeDiv).
 */
struct top_edges {
	uint64_t *keys; /* (parent << 32 | fn) + 1, 0 = empty slot */
	uint32_t *idx;
	uint32_t nslots, n;
	VEC(uint8_t) flags; /* by edge index */
	VEC(uint64_t) list; /* keys by edge index */
};

static uint32_t edge_slot(uint64_t key, uint32_t mask)
{
	key *= 0x9e3779b97f4a7c15ULL;
	return (uint32_t)(key >> 32) & mask;
}

static void edges_grow(struct top_edges *e)
{
	uint32_t ns = e->nslots ? e->nslots * 2 : 1024;

	free(e->keys);
	free(e->idx);
	e->keys = xcalloc(ns, sizeof(*e->keys));
	e->idx = xcalloc(ns, sizeof(*e->idx));
	e->nslots = ns;
	for (uint32_t i = 0; i < e->n; i++) {
		uint32_t h = edge_slot(e->list.v[i], ns - 1);

		while (e->keys[h])
			h = (h + 1) & (ns - 1);
		e->keys[h] = e->list.v[i];
		e->idx[h] = i;
	}
}

static uint8_t *edges_flags(struct top_edges *e, uint32_t parent, uint32_t fn)
{
	uint64_t key = ((uint64_t)parent << 32 | fn) + 1;
	uint32_t h;

	if ((e->n + 1) * 2 > e->nslots)
		edges_grow(e);
	for (h = edge_slot(key, e->nslots - 1); e->keys[h]; h = (h + 1) & (e->nslots - 1))
		if (e->keys[h] == key)
			return &e->flags.v[e->idx[h]];
	e->keys[h] = key;
	e->idx[h] = e->n++;
	VEC_PUSH(&e->list, key);
	VEC_PUSH(&e->flags, 0);
	return &e->flags.v[e->idx[h]];
}

static void edges_release(struct top_edges *e)
{
	free(e->keys);
	free(e->idx);
	VEC_FREE(&e->flags);
	VEC_FREE(&e->list);
}

int query_top_build(const struct model_profile *p, struct query_top *out)
{
	size_t nt = p->sample_types.n, nloc = p->locations.n;
	uint32_t *frame_off = xcalloc(nloc + 1, sizeof(*frame_off));
	VEC(uint32_t) frames = { 0 };
	uint32_t *stamp;
	const int64_t *v;

	memset(out, 0, sizeof(*out));
	strtab_init(&out->names);
	/* Frames of every location, innermost line first, as function ids. */
	for (size_t i = 1; i < nloc; i++) {
		const struct model_location *loc = &p->locations.v[i];
		uint32_t nf = loc->nlines ? loc->nlines : 1;

		frame_off[i] = (uint32_t)frames.n;
		for (uint32_t k = 0; k < nf; k++)
			VEC_PUSH(&frames, top_frame_fn(p, loc, k, &out->names));
	}
	frame_off[nloc] = (uint32_t)frames.n;
	out->ntypes = nt;
	out->nfn = out->names.n;
	out->totals = xcalloc(nt + 1, sizeof(*out->totals));
	out->self = xcalloc(nt * out->nfn + 1, sizeof(*out->self));
	out->total = xcalloc(nt * out->nfn + 1, sizeof(*out->total));
	stamp = xcalloc(out->nfn + 1, sizeof(*stamp));

	for (size_t si = 0; si < p->samples.n; si++) {
		const struct model_sample *s = &p->samples.v[si];
		uint32_t leaf = 0, mark = (uint32_t)si + 1;
		bool any = false;

		if (!nt)
			break; /* no value columns: nothing to add up */
		v = &p->values.v[s->value_off];
		for (size_t t = 0; t < nt; t++) {
			out->totals[t] = top_add(out->totals[t], v[t]);
			any |= v[t] != 0;
		}
		if (!any || !s->nstack)
			continue;
		/* Root to leaf: outermost location first, outer line first. */
		for (uint32_t i = s->nstack; i-- > 0;) {
			uint32_t loc = p->stack_locs.v[s->stack_off + i];
			uint32_t off = frame_off[loc], nf = frame_off[loc + 1] - off;

			for (uint32_t k = nf; k-- > 0;) {
				uint32_t fn = frames.v[off + k];

				if (stamp[fn] != mark) {
					stamp[fn] = mark;
					for (size_t t = 0; t < nt; t++)
						out->total[t * out->nfn + fn] = top_add(
							out->total[t * out->nfn + fn], v[t]);
				}
				leaf = fn;
			}
		}
		/* The last frame walked is the leaf: innermost line of the first location. */
		for (size_t t = 0; t < nt; t++)
			out->self[t * out->nfn + leaf] =
				top_add(out->self[t * out->nfn + leaf], v[t]);
	}
	free(stamp);
	out->frame_off = frame_off;
	out->frames = frames.v;
	return 0;
}

void query_top_release(struct query_top *t)
{
	if (!t)
		return;
	strtab_release(&t->names);
	free(t->totals);
	free(t->self);
	free(t->total);
	free(t->frame_off);
	free(t->frames);
	memset(t, 0, sizeof(*t));
}

static uint64_t top_abs(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

static int top_cmp_name(const struct strtab *sort_names, uint32_t a, uint32_t b)
{
	uint32_t la = sort_names->len[a], lb = sort_names->len[b];
	int c = memcmp(sort_names->s[a], sort_names->s[b], PROF_MIN(la, lb));

	if (c)
		return c;
	return la < lb ? -1 : la > lb;
}

static int top_cmp_u64_desc(uint64_t a, uint64_t b)
{
	return a > b ? -1 : a < b;
}

static int top_cmp_self(const void *x, const void *y, void *names)
{
	const struct query_top_row *a = x, *b = y;
	int c = top_cmp_u64_desc(top_abs(a->self), top_abs(b->self));

	if (!c)
		c = top_cmp_name(names, a->fn, b->fn);
	if (!c)
		c = top_cmp_u64_desc(top_abs(a->total), top_abs(b->total));
	return c;
}

static int top_cmp_total(const void *x, const void *y, void *names)
{
	const struct query_top_row *a = x, *b = y;
	int c = top_cmp_u64_desc(top_abs(a->total), top_abs(b->total));

	if (!c)
		c = top_cmp_name(names, a->fn, b->fn);
	if (!c)
		c = top_cmp_u64_desc(top_abs(a->self), top_abs(b->self));
	return c;
}

struct query_top_row *query_top_rows(const struct query_top *t, size_t type, bool by_total,
				     size_t *n)
{
	struct query_top_row *rows = xcalloc(t->nfn + 1, sizeof(*rows));
	size_t k = 0;

	PROF_ASSERT(type < t->ntypes);
	for (uint32_t fn = 1; fn < t->nfn; fn++) {
		int64_t self = t->self[type * t->nfn + fn], total = t->total[type * t->nfn + fn];

		if (!self && !total)
			continue;
		rows[k].fn = fn;
		rows[k].self = self;
		rows[k].total = total;
		k++;
	}
	qsort_r(rows, k, sizeof(*rows), by_total ? top_cmp_total : top_cmp_self, (void *)&t->names);
	*n = k;
	return rows;
}

const char **query_top_inline_labels(const struct model_profile *p, const struct query_top *t,
				     size_t type, const struct query_top_row *rows, size_t n)
{
	const char **labels = xcalloc(n + 1, sizeof(*labels));
	uint32_t *row_of = xcalloc(t->nfn + 1, sizeof(*row_of)); /* fn -> row + 1 */
	uint8_t *in = xcalloc(n + 1, 1);			 /* bit 0 inline, bit 1 not */
	struct top_edges edges = { 0 };

	PROF_ASSERT(type < t->ntypes);
	for (size_t i = 0; i < n; i++)
		row_of[rows[i].fn] = (uint32_t)i + 1;
	for (size_t si = 0; si < p->samples.n; si++) {
		const struct model_sample *s = &p->samples.v[si];
		uint32_t parent = 0;

		if (!p->values.v[s->value_off + type])
			continue;
		for (uint32_t i = s->nstack; i-- > 0;) {
			uint32_t loc = p->stack_locs.v[s->stack_off + i];
			uint32_t off = t->frame_off[loc], nf = t->frame_off[loc + 1] - off;

			for (uint32_t k = nf; k-- > 0;) {
				uint32_t fn = t->frames[off + k];

				if (!row_of[fn])
					continue; /* not shown: its callers link to its callees */
				if (parent && parent != fn)
					*edges_flags(&edges, parent, fn) |= k + 1 < nf ? 1 : 2;
				parent = fn;
			}
		}
	}
	for (uint32_t i = 0; i < edges.n; i++) {
		uint32_t fn = (uint32_t)((edges.list.v[i] - 1) & 0xffffffffu);

		in[row_of[fn] - 1] |= edges.flags.v[i] == 1 ? 1 : 2;
	}
	for (size_t i = 0; i < n; i++)
		labels[i] = in[i] == 1 ? "(inline)" : in[i] == 3 ? "(partial-inline)" : "";
	edges_release(&edges);
	free(row_of);
	free(in);
	return labels;
}
