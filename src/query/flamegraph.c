// SPDX-License-Identifier: Apache-2.0
/*
 * flamegraph.c - stack aggregation into a flame graph tree, truncation
 * into explicit "other" nodes, and iterative JSON output; see
 * flamegraph.h.
 *
 * Steps: (1) scan the head, summing values per stack node (self values);
 * (2) add every ancestor of a touched stack node with value 0, so the set
 * is closed under "parent of"; (3) sort that set by node id, which puts
 * parents before children (head invariant parent < id), and map each
 * stack node to a flame node by expanding its location into frames under
 * its parent's flame node; (4) sum totals bottom-up in reverse creation
 * order (flame children are also created after their parents);
 * (5) truncate with a max-heap on totals; (6) sort children.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "model/profile.h"
#include "query/flamegraph.h"

/* --- a small open-addressing map: 64-bit key -> 32-bit value ---------------- */

struct u64map {
	uint64_t *keys;
	uint32_t *vals; /* value + 1; 0 = empty slot */
	size_t n, nslots;
};

static size_t u64_hash(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (size_t)(z ^ (z >> 31));
}

static void u64map_release(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

/* Slot of @key: holds it, or is the empty slot where it goes. */
static size_t u64map_slot(const struct u64map *m, uint64_t key)
{
	size_t s = u64_hash(key) & (m->nslots - 1);

	while (m->vals[s] && m->keys[s] != key)
		s = (s + 1) & (m->nslots - 1);
	return s;
}

static void u64map_grow(struct u64map *m)
{
	struct u64map g = { 0 };

	g.nslots = m->nslots ? m->nslots * 2 : 256;
	g.keys = xcalloc(g.nslots, sizeof(*g.keys));
	g.vals = xcalloc(g.nslots, sizeof(*g.vals));
	for (size_t i = 0; i < m->nslots; i++) {
		if (!m->vals[i])
			continue;
		size_t s = u64map_slot(&g, m->keys[i]);
		g.keys[s] = m->keys[i];
		g.vals[s] = m->vals[i];
	}
	g.n = m->n;
	u64map_release(m);
	*m = g;
}

/* Value of @key or UINT32_MAX. */
static uint32_t u64map_get(const struct u64map *m, uint64_t key)
{
	if (!m->nslots)
		return UINT32_MAX;
	size_t s = u64map_slot(m, key);
	return m->vals[s] ? m->vals[s] - 1 : UINT32_MAX;
}

static void u64map_put(struct u64map *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->nslots)
		u64map_grow(m);
	size_t s = u64map_slot(m, key);
	if (!m->vals[s])
		m->n++;
	m->keys[s] = key;
	m->vals[s] = val + 1;
}

/* --- building ----------------------------------------------------------------- */

struct agg {
	uint32_t stack;
	int64_t self;
};

struct builder {
	struct store_head *h;
	const struct model_profile *dict;
	const struct store_stack_node *stacks;
	size_t nstacks;
	struct symbolizer *sym;
	struct query_flamegraph *fg;
	struct u64map stack_idx; /* stack node -> index in aggs */
	VEC(struct agg) aggs;
	struct u64map children;	 /* (flame parent << 32 | name) -> flame node */
	struct u64map loc_names; /* location -> offset in names_of */
	VEC(uint32_t) names_of;	 /* per location: count, then name ids outermost first */
};

static int scan_rows(void *arg, const struct store_series *s, const struct store_row *rows,
		     size_t n)
{
	struct builder *b = arg;

	(void)s;
	for (size_t i = 0; i < n; i++) {
		uint32_t stack = rows[i].stack;
		uint32_t idx = u64map_get(&b->stack_idx, stack);

		if (idx == UINT32_MAX) {
			struct agg a = { stack, 0 };

			idx = (uint32_t)b->aggs.n;
			VEC_PUSH(&b->aggs, a);
			u64map_put(&b->stack_idx, stack, idx);
		}
		b->aggs.v[idx].self += rows[i].value;
	}
	b->fg->samples += n;
	return 0;
}

static uint32_t flame_child(struct builder *b, uint32_t parent, uint32_t name)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	uint32_t id = u64map_get(&b->children, key);

	if (id != UINT32_MAX)
		return id;
	struct query_flame_node nd = { 0 };
	nd.name = name;
	nd.parent = parent;
	id = (uint32_t)b->fg->nodes.n;
	VEC_PUSH(&b->fg->nodes, nd);
	u64map_put(&b->children, key, id);
	return id;
}

static uint32_t intern_name(struct builder *b, const char *s)
{
	return strtab_intern_cstr(&b->fg->names, s);
}

/* Frame names of location @loc, outermost first: returns the offset in names_of. */
static uint32_t location_frames(struct builder *b, uint32_t loc)
{
	uint32_t off = u64map_get(&b->loc_names, loc);

	if (off != UINT32_MAX)
		return off;
	const struct model_profile *d = b->dict;
	const struct model_location *l = &d->locations.v[loc];
	char tmp[512];

	off = (uint32_t)b->names_of.n;
	u64map_put(&b->loc_names, loc, off);
	if (l->nlines) {
		VEC_PUSH(&b->names_of, l->nlines);
		for (uint32_t j = l->nlines; j-- > 0;)
			VEC_PUSH(&b->names_of,
				 intern_name(b, model_frame_name(d, l, j, tmp, sizeof(tmp))));
		return off;
	}
	VEC_PUSH(&b->names_of, 1);
	const struct model_mapping *m = l->mapping ? &d->mappings.v[l->mapping] : NULL;
	const char *path = m ? model_str(d, m->filename) : "";
	if (b->sym && *path && *path != '[' &&
	    symbolizer_lookup(b->sym, path, model_str(d, m->build_id), l->address, tmp,
			      sizeof(tmp)) == 0 &&
	    tmp[0]) {
		VEC_PUSH(&b->names_of, intern_name(b, tmp));
		return off;
	}
	if (*path) {
		const char *base = strrchr(path, '/');

		snprintf(tmp, sizeof(tmp), "%s+0x%" PRIx64, base ? base + 1 : path, l->address);
	} else {
		snprintf(tmp, sizeof(tmp), "0x%" PRIx64, l->address);
	}
	b->fg->unsymbolized++;
	VEC_PUSH(&b->names_of, intern_name(b, tmp));
	return off;
}

static int cmp_agg(const void *a, const void *b)
{
	uint32_t x = ((const struct agg *)a)->stack, y = ((const struct agg *)b)->stack;

	return x < y ? -1 : x > y;
}

static uint32_t agg_find(const struct builder *b, uint32_t stack)
{
	size_t lo = 0, hi = b->aggs.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->aggs.v[mid].stack < stack)
			lo = mid + 1;
		else
			hi = mid;
	}
	PROF_ASSERT(lo < b->aggs.n && b->aggs.v[lo].stack == stack);
	return (uint32_t)lo;
}

static void build_tree(struct builder *b)
{
	struct query_flamegraph *fg = b->fg;
	size_t ntouched = b->aggs.n;

	/* Close the set under "parent of". */
	for (size_t i = 0; i < ntouched; i++) {
		uint32_t s = b->aggs.v[i].stack;

		while (s != 0) {
			PROF_ASSERT(s < b->nstacks);
			uint32_t p = b->stacks[s].parent;

			if (p == 0 || u64map_get(&b->stack_idx, p) != UINT32_MAX)
				break;
			struct agg a = { p, 0 };
			u64map_put(&b->stack_idx, p, (uint32_t)b->aggs.n);
			VEC_PUSH(&b->aggs, a);
			s = p;
		}
	}
	if (b->aggs.n > 1)
		qsort(b->aggs.v, b->aggs.n, sizeof(*b->aggs.v), cmp_agg);

	/* Map each stack node to the flame node of its innermost frame. */
	uint32_t *flame_of = xcalloc(b->aggs.n + 1, sizeof(uint32_t));
	for (size_t i = 0; i < b->aggs.n; i++) {
		uint32_t s = b->aggs.v[i].stack;
		uint32_t at = 0;

		if (s != 0) {
			uint32_t p = b->stacks[s].parent;

			PROF_ASSERT(p < s);
			at = p ? flame_of[agg_find(b, p)] : 0;
			uint32_t off = location_frames(b, b->stacks[s].loc);
			uint32_t nf = b->names_of.v[off];
			for (uint32_t f = 0; f < nf; f++)
				at = flame_child(b, at, b->names_of.v[off + 1 + f]);
		}
		flame_of[i] = at;
		fg->nodes.v[at].self += b->aggs.v[i].self;
	}
	free(flame_of);

	/* Totals bottom-up: children are created after their parents. */
	for (size_t i = fg->nodes.n; i-- > 0;)
		fg->nodes.v[i].total += fg->nodes.v[i].self;
	for (size_t i = fg->nodes.n; i-- > 1;)
		fg->nodes.v[fg->nodes.v[i].parent].total += fg->nodes.v[i].total;
	fg->total = fg->nodes.v[0].total;
}

/* --- truncation ----------------------------------------------------------------- */

struct heap {
	const struct query_flame_node *nodes;
	uint32_t *v;
	size_t n;
};

/* Does node a go before node b (larger total; ties: older node)? */
static bool heap_before(const struct heap *h, uint32_t a, uint32_t b)
{
	int64_t ta = h->nodes[a].total, tb = h->nodes[b].total;

	return ta != tb ? ta > tb : a < b;
}

static void heap_push(struct heap *h, uint32_t x)
{
	size_t i = h->n++;

	while (i > 0) {
		size_t p = (i - 1) / 2;

		if (!heap_before(h, x, h->v[p]))
			break;
		h->v[i] = h->v[p];
		i = p;
	}
	h->v[i] = x;
}

static uint32_t heap_pop(struct heap *h)
{
	uint32_t top = h->v[0], x = h->v[--h->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= h->n)
			break;
		if (c + 1 < h->n && heap_before(h, h->v[c + 1], h->v[c]))
			c++;
		if (!heap_before(h, h->v[c], x))
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
	uint32_t *cnt = xcalloc(n + 1, sizeof(uint32_t));

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
	free(cnt);
}

static void truncate_tree(struct query_flamegraph *fg, size_t max_nodes)
{
	size_t n = fg->nodes.n;

	if (!max_nodes || n <= max_nodes)
		return;
	link_children(fg);

	bool *kept = xcalloc(n, sizeof(bool));
	struct heap h = { fg->nodes.v, xcalloc(n + 1, sizeof(uint32_t)), 0 };
	size_t nkept = 0;

	heap_push(&h, 0);
	while (h.n && nkept < max_nodes) {
		uint32_t x = heap_pop(&h);
		const struct query_flame_node *nd = &fg->nodes.v[x];

		kept[x] = true;
		nkept++;
		for (uint32_t c = 0; c < nd->nchildren; c++)
			heap_push(&h, fg->children.v[nd->child_off + c]);
	}
	free(h.v);

	/* Per kept node, merge its dropped children into one "other" child. */
	uint32_t other_name = strtab_intern_cstr(&fg->names, "other");
	for (size_t i = 0; i < n; i++) {
		if (!kept[i])
			continue;
		int64_t sum = 0;
		uint32_t cnt = 0;
		const struct query_flame_node *nd = &fg->nodes.v[i];

		for (uint32_t c = 0; c < nd->nchildren; c++) {
			uint32_t ch = fg->children.v[nd->child_off + c];

			if (!kept[ch]) {
				sum += fg->nodes.v[ch].total;
				cnt++;
			}
		}
		if (!cnt)
			continue;
		struct query_flame_node o = { 0 };
		o.name = other_name;
		o.parent = (uint32_t)i;
		o.self = o.total = sum;
		o.other = true;
		VEC_PUSH(&fg->nodes, o); /* may move nodes: nd is not used after this */
		fg->truncated_total += sum;
	}
	for (size_t i = 0; i < n; i++) {
		if (!kept[i]) {
			fg->nodes.v[i].dropped = true;
			fg->truncated_nodes++;
		}
	}
	free(kept);
}

static int cmp_child(const void *a, const void *b, void *arg)
{
	const struct query_flamegraph *fg = arg;
	const struct query_flame_node *x = &fg->nodes.v[*(const uint32_t *)a];
	const struct query_flame_node *y = &fg->nodes.v[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->other != y->other)
		return x->other ? 1 : -1; /* "other" last among equals */
	return strcmp(strtab_get(&fg->names, x->name), strtab_get(&fg->names, y->name));
}

int query_flamegraph_build(struct store_head *h, const struct query_flame_params *p,
			   struct query_flamegraph *fg, struct prof_err *err)
{
	struct builder b = { 0 };
	struct query_flame_node root = { 0 };
	const char *u;
	int rc;

	memset(fg, 0, sizeof(*fg));
	strtab_init(&fg->names);
	root.name = strtab_intern_cstr(&fg->names, "total");
	VEC_PUSH(&fg->nodes, root);
	if (!p->type || !*p->type)
		return prof_err_set(err, -EINVAL, -1, "flamegraph: a profile type is required");
	/* The unit is the third field of name:type:unit:period_type:period_unit. */
	u = strchr(p->type, ':');
	u = u ? strchr(u + 1, ':') : NULL;
	if (u) {
		size_t k = strcspn(u + 1, ":");

		snprintf(fg->unit, sizeof(fg->unit), "%.*s", (int)PROF_MIN(k, sizeof(fg->unit) - 1),
			 u + 1);
	}

	b.h = h;
	b.sym = p->sym;
	b.fg = fg;
	store_head_rdlock(h);
	b.dict = store_head_dict(h);
	b.stacks = store_head_stacks(h, &b.nstacks);
	rc = store_head_scan(h, p->type, p->m, p->nm, p->from_ns, p->to_ns, scan_rows, &b);
	if (!rc)
		build_tree(&b);
	store_head_rdunlock(h);

	u64map_release(&b.stack_idx);
	u64map_release(&b.children);
	u64map_release(&b.loc_names);
	VEC_FREE(&b.aggs);
	VEC_FREE(&b.names_of);
	if (rc)
		return rc;
	truncate_tree(fg, p->max_nodes);
	link_children(fg);
	for (size_t i = 0; i < fg->nodes.n; i++) {
		const struct query_flame_node *nd = &fg->nodes.v[i];

		if (nd->nchildren > 1)
			qsort_r(fg->children.v + nd->child_off, nd->nchildren, sizeof(uint32_t),
				cmp_child, fg);
	}
	return 0;
}

/* --- output ----------------------------------------------------------------------- */

static int write_node_open(const struct query_flamegraph *fg, uint32_t id, struct buf *out)
{
	const struct query_flame_node *nd = &fg->nodes.v[id];
	int rc = buf_addstr(out, "{\"name\":");

	if (!rc)
		rc = buf_add_json_str(out, strtab_get(&fg->names, nd->name),
				      fg->names.len[nd->name]);
	if (!rc)
		rc = buf_addf(out, ",\"self\":%" PRId64 ",\"total\":%" PRId64 "%s,\"children\":[",
			      nd->self, nd->total, nd->other ? ",\"other\":true" : "");
	return rc;
}

int query_flamegraph_write_json(const struct query_flamegraph *fg, const char *type,
				size_t max_nodes, struct buf *out)
{
	struct frame {
		uint32_t node, next;
	};
	VEC(struct frame) st = { 0 };
	int rc;

	rc = buf_addstr(out, "{\"type\":");
	if (!rc)
		rc = buf_add_json_str(out, type ? type : "", type ? strlen(type) : 0);
	if (!rc)
		rc = buf_addstr(out, ",\"unit\":");
	if (!rc)
		rc = buf_add_json_str(out, fg->unit, strlen(fg->unit));
	if (!rc)
		rc = buf_addf(out,
			      ",\"total\":%" PRId64 ",\"samples\":%" PRIu64 ",\"max_nodes\":%zu"
			      ",\"truncated\":{\"nodes\":%" PRIu64 ",\"total\":%" PRId64 "}"
			      ",\"root\":",
			      fg->total, fg->samples, max_nodes, fg->truncated_nodes,
			      fg->truncated_total);
	if (!rc)
		rc = write_node_open(fg, 0, out);
	struct frame f0 = { 0, 0 };
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
				rc = write_node_open(fg, child, out);
			struct frame f = { child, 0 };
			VEC_PUSH(&st, f); /* may move st.v: top is not used after this */
		} else {
			rc = buf_add(out, "]}", 2);
			st.n--;
		}
	}
	if (!rc)
		rc = buf_add(out, "}", 1);
	VEC_FREE(&st);
	return rc;
}

void query_flamegraph_release(struct query_flamegraph *fg)
{
	if (!fg)
		return;
	strtab_release(&fg->names);
	VEC_FREE(&fg->nodes);
	VEC_FREE(&fg->children);
	memset(fg, 0, sizeof(*fg));
}
