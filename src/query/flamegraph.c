// SPDX-License-Identifier: Apache-2.0
/*
 * flamegraph.c - call trees from stack sets, truncation into explicit
 * "other" nodes, iterative JSON output; see flamegraph.h.
 *
 * Not inverted, the stack set's trie already is the call tree: flame node
 * i is trie node i (same parent links), its self the sum of the set's
 * entries at that node. Inverted, each stack with a non-zero self is
 * walked leaf -> root and inserted into a new tree, its value going to the
 * node where the walk ends. Then (finish): totals bottom-up in reverse
 * creation order (children are created after their parents), empty nodes
 * dropped, truncation with a max-heap on totals, children sorted.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "model/profile.h"
#include "query/jsonout.h"
#include "query/flamegraph.h"
#include "query/scratch.h"

void query_flamegraph_init(struct query_flamegraph *fg, const char *root_name)
{
	struct query_flame_node root = { 0 };

	memset(fg, 0, sizeof(*fg));
	strtab_init(&fg->names);
	strtab_init(&fg->ftypes);
	root.name = strtab_intern_cstr(&fg->names, root_name);
	VEC_PUSH(&fg->nodes, root);
}

void query_flamegraph_release(struct query_flamegraph *fg)
{
	if (!fg)
		return;
	strtab_release(&fg->names);
	strtab_release(&fg->ftypes);
	free(fg->ftype_of);
	query_scratch_give(fg->nodes.v); /* big when not truncated: kept for the next query */
	query_scratch_give(fg->children.v);
	qmap_release(&fg->child_idx);
	memset(fg, 0, sizeof(*fg));
}

uint32_t query_flamegraph_child_id(struct query_flamegraph *fg, uint32_t parent, uint32_t name)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	uint32_t id = qmap_get(&fg->child_idx, key);

	if (id != QMAP_NONE)
		return id;
	struct query_flame_node nd = { 0 };
	nd.name = name;
	nd.parent = parent;
	id = (uint32_t)fg->nodes.n;
	VEC_PUSH(&fg->nodes, nd);
	qmap_put(&fg->child_idx, key, id);
	return id;
}

uint32_t *query_flamegraph_names_of(struct query_flamegraph *fg, const struct query_stackset *ss)
{
	uint32_t *name_of = xcalloc(ss->names.n + 1, sizeof(uint32_t));

	for (uint32_t i = 0; i < ss->names.n; i++)
		name_of[i] = strtab_intern(&fg->names, ss->names.s[i], ss->names.len[i]);
	return name_of;
}

uint32_t query_flamegraph_child(struct query_flamegraph *fg, uint32_t parent, const char *s,
				size_t n)
{
	return query_flamegraph_child_id(fg, parent, strtab_intern(&fg->names, s, n));
}

/* --- from a stack set ----------------------------------------------------------------- */

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, PROF_MIN(la, lb));

	return c ? c : (la < lb ? -1 : la > lb);
}

static int cmp_ftype(const void *a, const void *b, void *arg)
{
	const struct strtab *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return cmp_bytes(t->s[x], t->len[x], t->s[y], t->len[y]);
}

/* Frame types numbered in byte order of their names, not in the order they were met. */
static void sort_ftypes(struct query_flamegraph *fg)
{
	size_t n = fg->ftypes.n;

	if (n < 3)
		return;
	uint32_t *by = xcalloc(n, sizeof(uint32_t)), *to = xcalloc(n, sizeof(uint32_t));
	struct strtab t;

	for (uint32_t i = 1; i < n; i++)
		by[i - 1] = i;
	qsort_r(by, n - 1, sizeof(uint32_t), cmp_ftype, &fg->ftypes);
	strtab_init(&t);
	for (size_t k = 0; k < n - 1; k++)
		to[by[k]] = strtab_intern(&t, fg->ftypes.s[by[k]], fg->ftypes.len[by[k]]);
	for (size_t i = 0; i < fg->nftype_of; i++)
		fg->ftype_of[i] = to[fg->ftype_of[i]];
	strtab_release(&fg->ftypes);
	fg->ftypes = t;
	free(by);
	free(to);
}

void query_flamegraph_frame_types(struct query_flamegraph *fg, const struct query_stackset *ss)
{
	free(fg->ftype_of);
	fg->ftype_of = NULL;
	fg->nftype_of = 0;
	if (!ss->srcs.n)
		return;
	for (uint32_t i = 1; i < fg->names.n; i++) {
		uint32_t nm = strtab_find(&ss->names, fg->names.s[i], fg->names.len[i]);
		const struct query_ss_srcloc *sl =
			nm == UINT32_MAX ? NULL : query_stackset_srcloc(ss, nm);

		if (!sl || !sl->frame_type)
			continue;
		if (!fg->ftype_of) {
			fg->nftype_of = fg->names.n;
			fg->ftype_of = xcalloc(fg->nftype_of, sizeof(uint32_t));
		}
		fg->ftype_of[i] = strtab_intern(&fg->ftypes, ss->names.s[sl->frame_type],
						ss->names.len[sl->frame_type]);
	}
	sort_ftypes(fg);
}

void query_flamegraph_from_stackset(const struct query_stackset *ss,
				    const struct query_flame_opts *o, struct query_flamegraph *fg)
{
	int64_t *self;
	uint64_t *count;
	uint32_t *name_of; /* set name -> fg name */

	query_flamegraph_init(fg, "total");
	snprintf(fg->unit, sizeof(fg->unit), "%s", ss->unit);
	fg->samples = ss->rows;
	fg->unsymbolized = ss->unsymbolized;
	fg->filtered_rows = ss->filtered_rows;
	fg->filtered_value = ss->filtered_value;
	fg->inverted = o->invert;
	query_stackset_node_sums(ss, &self, &count);

	if (!o->invert) {
		struct query_flame_src src = { ss, self, count, NULL, NULL };

		query_flamegraph_shape(fg, &src, o->max_nodes, o->min_share);
		query_scratch_give(self);
		query_scratch_give(count);
		query_flamegraph_frame_types(fg, ss);
		return;
	} else {
		/* Names interned on first use (id + 1): a set may hold many more than it uses. */
		name_of = query_scratch_take(ss->names.n + 1, sizeof(uint32_t), true);
		for (size_t i = 0; i < ss->nodes.n; i++) {
			if (!count[i] && !self[i])
				continue;
			uint32_t at = 0;

			for (uint32_t n = (uint32_t)i; n; n = ss->nodes.v[n].parent) {
				uint32_t nm = ss->nodes.v[n].name;

				if (!name_of[nm])
					name_of[nm] = strtab_intern(&fg->names, ss->names.s[nm],
								    ss->names.len[nm]) +
						      1;
				at = query_flamegraph_child_id(fg, at, name_of[nm] - 1);
			}
			fg->nodes.v[at].self += self[i];
			fg->nodes.v[at].self_samples += count[i];
		}
	}
	query_scratch_give(self);
	query_scratch_give(count);
	query_scratch_give(name_of);
	query_flamegraph_finish(fg, o->max_nodes, o->min_share);
	query_flamegraph_frame_types(fg, ss);
}

/* --- finishing: totals, truncation, children -------------------------------------------- */

/* Ties of rank_before, by the nodes' contents (query_stackset_node_cmp). */
static int cmp_ss_path(const void *ctx, uint32_t a, uint32_t b)
{
	return query_stackset_node_cmp(ctx, a, b);
}

/* The same over a flame graph's nodes. */
static int cmp_fg_path(const void *ctx, uint32_t a, uint32_t b)
{
	const struct query_flamegraph *fg = ctx;

	while (a != b) {
		if (!a || !b)
			return a ? 1 : -1;
		uint32_t x = fg->nodes.v[a].name, y = fg->nodes.v[b].name;
		int c = cmp_bytes(fg->names.s[x], fg->names.len[x], fg->names.s[y],
				  fg->names.len[y]);

		if (c)
			return c;
		a = fg->nodes.v[a].parent;
		b = fg->nodes.v[b].parent;
	}
	return 0;
}

struct aheap {
	const int64_t *total;
	const double *rank;
	uint32_t *v;
	size_t n;
	int (*tie)(const void *ctx, uint32_t a, uint32_t b); /* cmp_ss_path, cmp_fg_path */
	const void *ctx;
};

/*
 * Is node a ranked before b? Larger total (diff: larger rank) first; ties
 * by content (h->tie), not by node id, so the kept nodes do not depend on
 * the order the stacks were added in.
 */
static bool rank_before(const struct aheap *h, uint32_t a, uint32_t b)
{
	if (h->rank) {
		if (h->rank[a] != h->rank[b])
			return h->rank[a] > h->rank[b];
	} else if (h->total[a] != h->total[b]) {
		return h->total[a] > h->total[b];
	}
	return h->tie(h->ctx, a, b) < 0;
}

static void aheap_push(struct aheap *h, uint32_t x)
{
	size_t i = h->n++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!rank_before(h, x, h->v[p]))
			break;
		h->v[i] = h->v[p];
		i = p;
	}
	h->v[i] = x;
}

static uint32_t aheap_pop(struct aheap *h)
{
	uint32_t top = h->v[0], x = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && rank_before(h, h->v[c + 1], h->v[c]))
			c++;
		if (!rank_before(h, h->v[c], x))
			break;
		h->v[i] = h->v[c];
		i = c;
	}
	if (h->n)
		h->v[i] = x;
	return top;
}

/* Fill fg->children ranges from the parent links of the non-dropped nodes. */
static void link_children(struct query_flamegraph *fg)
{
	size_t n = fg->nodes.n;
	uint32_t *cnt = query_scratch_take(n + 1, sizeof(uint32_t), true);

	for (size_t i = 1; i < n; i++)
		if (!fg->nodes.v[i].dropped)
			cnt[fg->nodes.v[i].parent]++;
	fg->children.n = 0;
	uint32_t off = 0;
	for (size_t i = 0; i < n; i++) {
		fg->nodes.v[i].child_off = off;
		fg->nodes.v[i].nchildren = 0;
		off += cnt[i];
	}
	VEC_RESERVE(&fg->children, off + 1);
	fg->children.n = off;
	for (size_t i = 1; i < n; i++) {
		struct query_flame_node *nd = &fg->nodes.v[i];

		if (nd->dropped)
			continue;
		struct query_flame_node *p = &fg->nodes.v[nd->parent];
		fg->children.v[p->child_off + p->nchildren++] = (uint32_t)i;
	}
	query_scratch_give(cnt);
}

static double share(int64_t v, int64_t total)
{
	return total ? (double)v / (double)total : 0.0;
}

/* Rank of every node for a diff: the larger of its two shares. */
static double *diff_ranks(const struct query_flamegraph *fg)
{
	double *r = query_scratch_take(fg->nodes.n + 1, sizeof(double), true);

	for (size_t i = 0; i < fg->nodes.n; i++) {
		const struct query_flame_node *nd = &fg->nodes.v[i];

		r[i] = PROF_MAX(share(nd->total, fg->total), share(nd->base_total, fg->base_total));
	}
	return r;
}

static void truncate_tree(struct query_flamegraph *fg, size_t max_nodes, double min_share)
{
	size_t n = fg->nodes.n;
	size_t live = 0;

	for (size_t i = 0; i < n; i++)
		live += !fg->nodes.v[i].dropped;
	if ((!max_nodes || live <= max_nodes) && min_share <= 0)
		return;
	link_children(fg);

	double *rank = fg->diff ? diff_ranks(fg) : NULL;
	bool *kept = query_scratch_take(n, sizeof(bool), true);
	int64_t *tot = query_scratch_take(n + 1, sizeof(int64_t), false);
	for (size_t i = 0; i < n; i++)
		tot[i] = fg->nodes.v[i].total;
	struct aheap h = { .total = tot,
			   .rank = rank,
			   .v = query_scratch_take(n + 1, sizeof(uint32_t), false),
			   .tie = cmp_fg_path,
			   .ctx = fg };
	size_t nkept = 0;
	int64_t root_total = fg->nodes.v[0].total;

	aheap_push(&h, 0);
	while (h.n && (!max_nodes || nkept < max_nodes)) {
		uint32_t x = aheap_pop(&h);
		const struct query_flame_node *nd = &fg->nodes.v[x];

		if (x && min_share > 0) {
			double s = rank ? rank[x] : share(nd->total, root_total);

			if (s < min_share)
				break; /* the heap gives the largest first: the rest are smaller */
		}
		kept[x] = true;
		nkept++;
		for (uint32_t c = 0; c < nd->nchildren; c++)
			aheap_push(&h, fg->children.v[nd->child_off + c]);
	}
	query_scratch_give(h.v);
	query_scratch_give(tot);
	query_scratch_give(rank);

	/* Per kept node, merge its dropped children into one "other" child. */
	uint32_t other_name = strtab_intern_cstr(&fg->names, "other");
	for (size_t i = 0; i < n; i++) {
		if (!kept[i])
			continue;
		struct query_flame_node o = { 0 };
		uint32_t cnt = 0;
		const struct query_flame_node *nd = &fg->nodes.v[i];

		for (uint32_t c = 0; c < nd->nchildren; c++) {
			const struct query_flame_node *ch =
				&fg->nodes.v[fg->children.v[nd->child_off + c]];

			if (kept[fg->children.v[nd->child_off + c]])
				continue;
			o.self = prof_add_sat(o.self, ch->total);
			o.samples += ch->samples;
			o.base_self = prof_add_sat(o.base_self, ch->base_total);
			o.base_samples += ch->base_samples;
			cnt++;
		}
		if (!cnt)
			continue;
		o.name = other_name;
		o.parent = (uint32_t)i;
		o.total = o.self;
		o.self_samples = o.samples;
		o.base_total = o.base_self;
		o.base_self_samples = o.base_samples;
		o.other = true;
		VEC_PUSH(&fg->nodes, o); /* may move nodes: nd is not used after this */
		fg->truncated_total = prof_add_sat(fg->truncated_total, o.total);
		fg->truncated_base_total = prof_add_sat(fg->truncated_base_total, o.base_total);
	}
	for (size_t i = 0; i < n; i++) {
		if (!kept[i] && !fg->nodes.v[i].dropped) {
			fg->nodes.v[i].dropped = true;
			fg->truncated_nodes++;
		}
	}
	query_scratch_give(kept);
}

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct query_flamegraph *fg = arg;
	const struct query_flame_node *x = &fg->nodes.v[*(const uint32_t *)a];
	const struct query_flame_node *y = &fg->nodes.v[*(const uint32_t *)b];

	if (fg->diff) {
		double rx =
			PROF_MAX(share(x->total, fg->total), share(x->base_total, fg->base_total));
		double ry =
			PROF_MAX(share(y->total, fg->total), share(y->base_total, fg->base_total));

		if (rx != ry)
			return rx > ry ? -1 : 1;
	} else if (x->total != y->total) {
		return x->total > y->total ? -1 : 1;
	}
	if (x->other != y->other)
		return x->other ? 1 : -1; /* "other" last among equals */
	return strcmp(strtab_get(&fg->names, x->name), strtab_get(&fg->names, y->name));
}

/* --- shaping a stack set's own trie (truncation before the tree is built) ------------------- */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * One pass over the trie, leaves first (a child's id is above its
 * parent's): the parent adds each child's total (children in descending
 * id order after the parent's own value, as the tree's bottom-up sum
 * does), and each child, its sums final by then, is marked live or not
 * and, when live, put at the head of its parent's list (@first / @next,
 * 0 = none), so each list runs in ascending id order. Returns the live
 * nodes, the root included.
 */
static size_t shape_sum(const struct query_ss_node *nodes, size_t nn, int64_t *total,
			uint64_t *samples, int64_t *btotal, uint64_t *bsamples, uint8_t *live,
			uint32_t *first, uint32_t *next)
{
	size_t nlive = 1;

	for (size_t i = nn; i-- > 1;) {
		uint32_t p = nodes[i].parent;
		bool l = samples[i] || total[i];

		total[p] = prof_add_sat(total[p], total[i]);
		samples[p] += samples[i];
		if (btotal) {
			btotal[p] = prof_add_sat(btotal[p], btotal[i]);
			bsamples[p] += bsamples[i];
			l = l || bsamples[i] || btotal[i];
		}
		live[i] = l;
		if (l) {
			next[i] = first[p];
			first[p] = (uint32_t)i;
			nlive++;
		}
	}
	live[0] = 1;
	return nlive;
}

void query_flamegraph_shape(struct query_flamegraph *fg, const struct query_flame_src *s,
			    size_t max_nodes, double min_share)
{
	const struct query_stackset *ss = s->ss;
	size_t nn = ss->nodes.n;
	const struct query_ss_node *nodes = ss->nodes.v;
	/* Scratch arrays (query/scratch.h): the ones not zeroed are written before read. */
	int64_t *total = query_scratch_take(nn + 1, sizeof(int64_t), false), *btotal = NULL;
	uint64_t *samples = query_scratch_take(nn + 1, sizeof(uint64_t), false), *bsamples = NULL;
	uint8_t *live = query_scratch_take(nn + 1, 1, false);
	uint32_t *first = query_scratch_take(nn + 1, sizeof(uint32_t), true);
	uint32_t *next = query_scratch_take(nn + 1, sizeof(uint32_t), false);
	uint32_t *order = NULL; /* the kept nodes in id order (parents first) */
	size_t nlive, norder = 0;

	memcpy(total, s->self, nn * sizeof(*total));
	memcpy(samples, s->count, nn * sizeof(*samples));
	if (s->base_self) {
		btotal = query_scratch_take(nn + 1, sizeof(int64_t), false);
		bsamples = query_scratch_take(nn + 1, sizeof(uint64_t), false);
		memcpy(btotal, s->base_self, nn * sizeof(*btotal));
		memcpy(bsamples, s->base_count, nn * sizeof(*bsamples));
	}
	/* Nodes nothing reached (a stack filter left them empty) are not shown. */
	nlive = shape_sum(nodes, nn, total, samples, btotal, bsamples, live, first, next);

	/*
	 * Which nodes to keep: the largest (by total, diff: by the larger
	 * share), each with its parent; a heap over the children of the kept
	 * nodes, so only those are ranked.
	 */
	uint8_t *kept = live;
	double *rank = NULL;
	bool truncating = (max_nodes && nlive > max_nodes) || min_share > 0;
	if (truncating) {
		if (btotal)
			rank = query_scratch_take(nn + 1, sizeof(double), false);
		kept = query_scratch_take(nn + 1, 1, true);
		order = query_scratch_take(PROF_MIN(nlive, max_nodes ? max_nodes : nlive) + 1,
					   sizeof(uint32_t), false);
		struct aheap h = { .total = total,
				   .rank = rank,
				   .v = query_scratch_take(nlive + 1, sizeof(uint32_t), false),
				   .tie = cmp_ss_path,
				   .ctx = ss };

		if (rank)
			rank[0] = PROF_MAX(share(total[0], total[0]), share(btotal[0], btotal[0]));
		aheap_push(&h, 0);
		while (h.n && (!max_nodes || norder < max_nodes)) {
			uint32_t x = aheap_pop(&h);

			if (x && min_share > 0 &&
			    (rank ? rank[x] : share(total[x], total[0])) < min_share)
				break; /* the heap gives the largest first: the rest are smaller */
			kept[x] = 1;
			order[norder++] = x;
			for (uint32_t c = first[x]; c; c = next[c]) {
				if (rank)
					rank[c] = PROF_MAX(share(total[c], total[0]),
							   share(btotal[c], btotal[0]));
				aheap_push(&h, c);
			}
		}
		query_scratch_give(h.v);
		qsort(order, norder, sizeof(*order), cmp_u32);
	}

	/* The tree: kept nodes in id order (parents first), then one "other" per kept parent. */
	uint32_t *map = query_scratch_take(nn + 1, sizeof(uint32_t), false); /* ss -> fg node */
	uint32_t *name_of = query_scratch_take(ss->names.n + 1, sizeof(uint32_t), true);
	fg->nodes.v[0].self = s->self[0];
	fg->nodes.v[0].self_samples = s->count[0];
	if (s->base_self) {
		fg->nodes.v[0].base_self = s->base_self[0];
		fg->nodes.v[0].base_self_samples = s->base_count[0];
	}
	map[0] = 0;
	VEC_RESERVE(&fg->nodes, truncating ? norder + 1 : nlive + 1);
	for (size_t k = 0, i = 0;; k++) {
		if (truncating) {
			if (k >= norder)
				break;
			i = order[k];
		} else if (++i >= nn) {
			break;
		}
		if (!i || !kept[i])
			continue;
		uint32_t nm = nodes[i].name;
		struct query_flame_node nd = { 0 };

		if (!name_of[nm])
			name_of[nm] =
				strtab_intern(&fg->names, ss->names.s[nm], ss->names.len[nm]) + 1;
		nd.name = name_of[nm] - 1;
		nd.parent = map[nodes[i].parent];
		nd.self = s->self[i];
		nd.self_samples = s->count[i];
		if (s->base_self) {
			nd.base_self = s->base_self[i];
			nd.base_self_samples = s->base_count[i];
		}
		map[i] = (uint32_t)fg->nodes.n;
		VEC_PUSH(&fg->nodes, nd);
	}
	if (truncating) {
		/* Per kept node, in tree order, its live children not kept merge into one "other". */
		uint32_t other_name = strtab_intern_cstr(&fg->names, "other");

		fg->truncated_nodes += nlive - norder;
		for (size_t k = 0; k < norder; k++) {
			uint32_t i = order[k];
			struct query_flame_node o = { 0 };

			for (uint32_t c = first[i]; c; c = next[c]) {
				if (kept[c])
					continue;
				o.self = prof_add_sat(o.self, total[c]);
				o.samples += samples[c];
				o.base_self = prof_add_sat(o.base_self, (btotal ? btotal[c] : 0));
				o.base_samples += bsamples ? bsamples[c] : 0;
				o.nchildren++;
			}
			if (!o.nchildren)
				continue;
			o.nchildren = 0;
			o.name = other_name;
			o.parent = map[i];
			o.self_samples = o.samples;
			o.base_self_samples = o.base_samples;
			o.other = true;
			fg->truncated_total = prof_add_sat(fg->truncated_total, o.self);
			fg->truncated_base_total =
				prof_add_sat(fg->truncated_base_total, o.base_self);
			VEC_PUSH(&fg->nodes, o);
		}
		query_scratch_give(kept);
	}
	query_scratch_give(order);
	query_scratch_give(map);
	query_scratch_give(name_of);
	query_scratch_give(rank);
	query_scratch_give(live);
	query_scratch_give(first);
	query_scratch_give(next);
	query_scratch_give(total);
	query_scratch_give(samples);
	query_scratch_give(btotal);
	query_scratch_give(bsamples);
	query_flamegraph_finish(fg, 0, 0);
}

void query_flamegraph_finish(struct query_flamegraph *fg, size_t max_nodes, double min_share)
{
	struct query_flame_node *v = fg->nodes.v;

	/* Totals bottom-up: children are created after their parents. */
	for (size_t i = 0; i < fg->nodes.n; i++) {
		v[i].total = v[i].self;
		v[i].samples = v[i].self_samples;
		v[i].base_total = v[i].base_self;
		v[i].base_samples = v[i].base_self_samples;
	}
	for (size_t i = fg->nodes.n; i-- > 1;) {
		PROF_ASSERT(v[i].parent < i);
		v[v[i].parent].total = prof_add_sat(v[v[i].parent].total, v[i].total);
		v[v[i].parent].samples += v[i].samples;
		v[v[i].parent].base_total =
			prof_add_sat(v[v[i].parent].base_total, v[i].base_total);
		v[v[i].parent].base_samples += v[i].base_samples;
	}
	/* Nodes nothing reached (a stack filter left them empty) are not shown. */
	for (size_t i = 1; i < fg->nodes.n; i++)
		if (!v[i].samples && !v[i].base_samples && !v[i].total && !v[i].base_total)
			v[i].dropped = true;
	fg->total = v[0].total;
	fg->base_total = v[0].base_total;
	truncate_tree(fg, max_nodes, min_share);
	link_children(fg);
	for (size_t i = 0; i < fg->nodes.n; i++) {
		const struct query_flame_node *nd = &fg->nodes.v[i];

		if (nd->nchildren > 1)
			qsort_r(fg->children.v + nd->child_off, nd->nchildren, sizeof(uint32_t),
				cmp_child, fg);
	}
}

int query_flamegraph_build(struct store *st, const struct query_flame_params *p,
			   struct query_flamegraph *fg, struct prof_err *err)
{
	struct query_stackset ss;
	struct query_stackset_params sp = {
		.type = p->type,
		.m = p->m,
		.nm = p->nm,
		.from_ns = p->from_ns,
		.to_ns = p->to_ns,
		.filter = p->filter,
		.sym = p->sym,
	};
	struct query_flame_opts o = { p->max_nodes, p->min_share, p->invert };
	int rc;

	rc = query_stackset_collect(st, &sp, &ss, err);
	if (rc) {
		query_flamegraph_init(fg, "total");
		if (ss.unit[0])
			snprintf(fg->unit, sizeof(fg->unit), "%s", ss.unit);
		query_stackset_release(&ss);
		return rc;
	}
	query_flamegraph_from_stackset(&ss, &o, fg);
	query_stackset_release(&ss);
	return 0;
}

/* --- output ----------------------------------------------------------------------- */

int query_flamegraph_write_tree(const struct query_flamegraph *fg, uint32_t root,
				query_flamegraph_node_fn fn, void *arg, struct buf *out)
{
	struct frame {
		uint32_t node, next;
	};
	VEC(struct frame) st = { 0 };
	int rc = fn(fg, root, out, arg);
	struct frame f0 = { root, 0 };

	VEC_PUSH(&st, f0);
	while (!rc && st.n) {
		struct frame *top = &st.v[st.n - 1];
		const struct query_flame_node *nd = &fg->nodes.v[top->node];

		if (top->next < nd->nchildren) {
			uint32_t child = fg->children.v[nd->child_off + top->next];

			if (top->next > 0)
				rc = buf_add(out, ",", 1);
			top->next++;
			if (!rc)
				rc = fn(fg, child, out, arg);
			struct frame f = { child, 0 };
			VEC_PUSH(&st, f); /* may move st.v: top is not used after this */
		} else {
			rc = buf_add(out, "]}", 2);
			st.n--;
		}
	}
	VEC_FREE(&st);
	return rc;
}

int query_flamegraph_node_json(const struct query_flamegraph *fg, uint32_t id, struct buf *out,
			       void *arg)
{
	const struct query_flame_node *nd = &fg->nodes.v[id];
	int rc = buf_addstr(out, "{\"name\":");

	(void)arg;
	if (!rc)
		rc = query_json_str(out, strtab_get(&fg->names, nd->name), fg->names.len[nd->name]);
	if (!rc && fg->ftype_of && nd->name < fg->nftype_of && fg->ftype_of[nd->name] && !nd->other)
		rc = buf_addf(out, ",\"ft\":%" PRIu32, fg->ftype_of[nd->name] - 1);
	if (!rc)
		rc = buf_addf(out, ",\"self\":%" PRId64 ",\"total\":%" PRId64 "%s,\"children\":[",
			      nd->self, nd->total, nd->other ? ",\"other\":true" : "");
	return rc;
}

int query_flamegraph_write_json(const struct query_flamegraph *fg, const char *type,
				size_t max_nodes, struct buf *out)
{
	int rc;

	rc = query_json_open(out, type ? type : "", fg->unit);
	if (!rc)
		rc = buf_addf(out,
			      ",\"total\":%" PRId64 ",\"samples\":%" PRIu64 ",\"max_nodes\":%zu"
			      ",\"truncated\":{\"nodes\":%" PRIu64 ",\"total\":%" PRId64 "}"
			      ",\"inverted\":%s,\"unsymbolized\":%" PRIu64
			      ",\"filtered_samples\":%" PRIu64 ",\"filtered_total\":%" PRId64,
			      fg->total, fg->samples, max_nodes, fg->truncated_nodes,
			      fg->truncated_total, fg->inverted ? "true" : "false",
			      fg->unsymbolized, fg->filtered_rows, fg->filtered_value);
	if (!rc && fg->ftypes.n > 1) {
		rc = buf_addstr(out, ",\"frame_types\":[");
		for (uint32_t i = 1; i < fg->ftypes.n && !rc; i++) {
			if (i > 1)
				rc = buf_add(out, ",", 1);
			if (!rc)
				rc = query_json_str(out, fg->ftypes.s[i], fg->ftypes.len[i]);
		}
		if (!rc)
			rc = buf_add(out, "]", 1);
	}
	if (!rc)
		rc = buf_addstr(out, ",\"root\":");
	if (!rc)
		rc = query_flamegraph_write_tree(fg, 0, query_flamegraph_node_json, NULL, out);
	if (!rc)
		rc = buf_add(out, "}", 1);
	return rc;
}
