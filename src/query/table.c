// SPDX-License-Identifier: Apache-2.0
/* table.c - per-function self and total of a stack set; see table.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/jsonout.h"
#include "query/filter.h"
#include "query/scratch.h"
#include "query/table.h"

void query_name_totals(const struct query_stackset *ss, bool by_frame, int64_t **self_out,
		       int64_t **total_out, uint64_t **self_samples_out,
		       uint64_t **total_samples_out)
{
	size_t nn = ss->nodes.n, nnames = ss->names.n;
	const struct query_ss_node *nodes = ss->nodes.v;
	int64_t *sub, *node_self;
	uint64_t *subc, *node_cnt;
	/* Per-query arrays from the scratch pool (query/scratch.h): kept between queries. */
	int64_t *self = query_scratch_take(nnames + 1, sizeof(int64_t), true);
	int64_t *total = query_scratch_take(nnames + 1, sizeof(int64_t), true);
	uint64_t *selfc = query_scratch_take(nnames + 1, sizeof(uint64_t), true);
	uint64_t *totalc = query_scratch_take(nnames + 1, sizeof(uint64_t), true);

	/* The name each node counts under. */
	uint32_t *nm = query_scratch_take(nn + 1, sizeof(uint32_t), false);
	nm[0] = 0;
	for (size_t i = 1; i < nn; i++)
		nm[i] = by_frame ? nodes[i].name : query_stackset_fn_name(ss, nodes[i].name);
	query_stackset_node_sums(ss, &node_self, &node_cnt);
	sub = query_scratch_take(nn + 1, sizeof(int64_t), false);
	subc = query_scratch_take(nn + 1, sizeof(uint64_t), false);
	for (size_t i = 0; i < nn; i++) {
		sub[i] = node_self[i];
		subc[i] = node_cnt[i];
	}
	for (size_t i = nn; i-- > 1;) {
		sub[nodes[i].parent] = prof_add_sat(sub[nodes[i].parent], sub[i]);
		subc[nodes[i].parent] += subc[i];
	}
	for (size_t i = 1; i < nn; i++) {
		self[nm[i]] = prof_add_sat(self[nm[i]], node_self[i]);
		selfc[nm[i]] += node_cnt[i];
	}

	/* Children lists (CSR) for the depth-first walk. */
	uint32_t *off = query_scratch_take(nn + 2, sizeof(uint32_t), true),
		 *kids = query_scratch_take(nn + 1, sizeof(uint32_t), false);
	for (size_t i = 1; i < nn; i++)
		off[nodes[i].parent + 1]++;
	for (size_t i = 0; i < nn; i++)
		off[i + 1] += off[i];
	uint32_t *fill = query_scratch_take(nn + 1, sizeof(uint32_t), true);
	for (size_t i = 1; i < nn; i++) {
		uint32_t p = nodes[i].parent;

		kids[off[p] + fill[p]++] = (uint32_t)i;
	}
	query_scratch_give(fill);

	/* Walk: on_path[name] counts the name's nodes on the current path. */
	uint32_t *on_path = query_scratch_take(nnames + 1, sizeof(uint32_t), true);
	struct frame {
		uint32_t node, next;
	};
	VEC(struct frame) st = { 0 };
	struct frame f0 = { 0, 0 };
	VEC_PUSH(&st, f0);
	while (st.n) {
		struct frame *top = &st.v[st.n - 1];
		uint32_t nd = top->node;

		if (top->next < off[nd + 1] - off[nd]) {
			uint32_t c = kids[off[nd] + top->next++];
			uint32_t name = nm[c];

			if (on_path[name]++ == 0) {
				total[name] = prof_add_sat(total[name], sub[c]);
				totalc[name] += subc[c];
			}
			struct frame f = { c, 0 };
			VEC_PUSH(&st, f); /* may move st.v */
		} else {
			if (nd)
				on_path[nm[nd]]--;
			st.n--;
		}
	}
	VEC_FREE(&st);
	query_scratch_give(nm);
	query_scratch_give(on_path);
	query_scratch_give(off);
	query_scratch_give(kids);
	query_scratch_give(sub);
	query_scratch_give(subc);
	query_scratch_give(node_self);
	query_scratch_give(node_cnt);

#define HAND_OUT(ptr, out)                       \
	do {                                     \
		if (out)                         \
			*(out) = ptr;            \
		else                             \
			query_scratch_give(ptr); \
	} while (0)
	HAND_OUT(self, self_out);
	HAND_OUT(total, total_out);
	HAND_OUT(selfc, self_samples_out);
	HAND_OUT(totalc, total_samples_out);
#undef HAND_OUT
}

static uint64_t abs64(int64_t v)
{
	return v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
}

struct sort_ctx {
	const struct query_stackset *ss;
	enum query_table_sort by;
};

static int cmp_name(const struct query_stackset *ss, uint32_t a, uint32_t b)
{
	size_t la = ss->names.len[a], lb = ss->names.len[b];
	int c = memcmp(ss->names.s[a], ss->names.s[b], PROF_MIN(la, lb));

	return c ? c : (la < lb ? -1 : la > lb);
}

static int cmp_row(const void *a, const void *b, void *arg)
{
	const struct sort_ctx *c = arg;
	const struct query_table_row *x = a, *y = b;
	uint64_t x1, y1, x2, y2;

	if (c->by == QUERY_SORT_NAME)
		return cmp_name(c->ss, x->name, y->name);
	if (c->by == QUERY_SORT_SELF) {
		x1 = abs64(x->self), y1 = abs64(y->self), x2 = abs64(x->total),
		y2 = abs64(y->total);
	} else {
		x1 = abs64(x->total), y1 = abs64(y->total), x2 = abs64(x->self),
		y2 = abs64(y->self);
	}
	if (x1 != y1)
		return x1 > y1 ? -1 : 1;
	int n = cmp_name(c->ss, x->name, y->name);
	if (n)
		return n;
	return x2 > y2 ? -1 : x2 < y2;
}

int query_table_build(const struct query_stackset *ss, const struct query_table_opts *o,
		      struct query_table *t, struct prof_err *err)
{
	int64_t *self, *total;
	uint64_t *selfc, *totalc;
	void *re = NULL, *md = NULL;
	const char *search = o->search && *o->search ? o->search : NULL;
	int rc;

	memset(t, 0, sizeof(*t));
	t->total = ss->total;
	t->samples = ss->rows;
	if (search && o->search_regex) {
		rc = query_regex_compile("search", search, &re, &md, err);
		if (rc)
			return rc;
	}
	query_name_totals(ss, o->by_frame, &self, &total, &selfc, &totalc);
	t->rows = query_scratch_take(ss->names.n + 1, sizeof(*t->rows), false);
	for (uint32_t i = 1; i < ss->names.n; i++) {
		if (!self[i] && !total[i])
			continue;
		t->nfunctions++;
		if (search) {
			const char *s = ss->names.s[i];
			size_t n = ss->names.len[i];

			if (re ? !query_regex_match(re, md, s, n)
			       : !memmem(s, n, search, strlen(search)))
				continue;
		}
		struct query_table_row r = { i, self[i], total[i], selfc[i], totalc[i] };
		t->rows[t->nrows++] = r;
	}
	t->nrows_matched = t->nrows;
	struct sort_ctx c = { ss, o->sort };
	if (t->nrows > 1)
		qsort_r(t->rows, t->nrows, sizeof(*t->rows), cmp_row, &c);
	if (o->limit && t->nrows > o->limit)
		t->nrows = o->limit;
	query_scratch_give(self);
	query_scratch_give(total);
	query_scratch_give(selfc);
	query_scratch_give(totalc);
	query_regex_free(re, md);
	return 0;
}

/* ,"file":..,"line":N,"build_id":..,"mapping":.. of frame name @name, the parts that are known. */
static int write_srcloc(struct buf *out, const struct query_stackset *ss, uint32_t name)
{
	const struct query_ss_srcloc *sl = query_stackset_srcloc(ss, name);
	static const char *const keys[] = { ",\"file\":", ",\"build_id\":", ",\"mapping\":" };
	int rc = 0;

	if (!sl)
		return 0;
	uint32_t ids[3] = { sl->file, sl->build_id, sl->mapping };
	for (int k = 0; k < 3 && !rc; k++) {
		if (!ids[k])
			continue;
		rc = buf_addstr(out, keys[k]);
		if (!rc)
			rc = query_json_str(out, ss->names.s[ids[k]], ss->names.len[ids[k]]);
		if (!rc && k == 0 && sl->line > 0)
			rc = buf_addf(out, ",\"line\":%" PRId64, sl->line);
	}
	return rc;
}

int query_table_write_json(const struct query_table *t, const struct query_stackset *ss,
			   struct buf *out)
{
	int rc = query_json_open(out, ss->type, ss->unit);

	if (!rc)
		rc = buf_addf(out,
			      ",\"total\":%" PRId64 ",\"samples\":%" PRIu64 ",\"functions\":%zu"
			      ",\"matched\":%zu,\"unsymbolized\":%" PRIu64
			      ",\"filtered_samples\":%" PRIu64 ",\"filtered_total\":%" PRId64
			      ",\"rows\":[",
			      t->total, t->samples, t->nfunctions, t->nrows_matched,
			      ss->unsymbolized, ss->filtered_rows, ss->filtered_value);
	for (size_t i = 0; i < t->nrows && !rc; i++) {
		const struct query_table_row *r = &t->rows[i];

		rc = buf_addstr(out, i ? ",{\"name\":" : "{\"name\":");
		if (!rc)
			rc = query_json_str(out, ss->names.s[r->name], ss->names.len[r->name]);
		if (!rc)
			rc = buf_addf(out,
				      ",\"self\":%" PRId64 ",\"total\":%" PRId64
				      ",\"self_samples\":%" PRIu64 ",\"total_samples\":%" PRIu64,
				      r->self, r->total, r->self_samples, r->total_samples);
		if (!rc)
			rc = write_srcloc(out, ss, r->name);
		if (!rc)
			rc = buf_add(out, "}", 1);
	}
	if (!rc)
		rc = buf_addstr(out, "]}");
	return rc;
}

void query_table_release(struct query_table *t)
{
	if (!t)
		return;
	query_scratch_give(t->rows);
	memset(t, 0, sizeof(*t));
}
