// SPDX-License-Identifier: Apache-2.0
/*
 * stackset.c - the aggregated, name-based stack set itself (see
 * stackset.h): nodes, children, entries per (node, group, bucket), groups,
 * source locations and raw frames. Filling it: stackset_collect.c (from the
 * store, through the translation cache of stackset_cache.c, or from a
 * profile).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "query/scratch.h"
#include "query/stackset.h"
#include "query/units.h"
#include "query/stackset_int.h"

#include <math.h>
#include <pthread.h>
#include <xxhash.h>

/* --- the set itself -------------------------------------------------------------- */

struct query_ss_pin *ss_pin_new(void)
{
	struct query_ss_pin *p = xcalloc(1, sizeof(*p));

	p->refs = 1;
	return p;
}

struct query_ss_pin *ss_pin_get(struct query_ss_pin *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

void ss_pin_put(struct query_ss_pin *p)
{
	if (!p || __atomic_sub_fetch(&p->refs, 1, __ATOMIC_ACQ_REL))
		return;
	struct strtab t = { 0 };

	t.chunk = p->chunks; /* strtab_release frees the chain, the rest is empty */
	strtab_release(&t);
	free(p);
}

void query_stackset_init(struct query_stackset *ss)
{
	struct query_ss_node root = { 0, 0, 0 };

	memset(ss, 0, sizeof(*ss));
	strtab_init(&ss->names);
	strtab_init(&ss->groups);
	VEC_PUSH(&ss->nodes, root);
	ss->nbuckets = 1;
	ss->cumulative = true;
}

void query_stackset_release(struct query_stackset *ss)
{
	if (!ss)
		return;
	strtab_release(&ss->names);
	strtab_release(&ss->groups);
	query_scratch_give(ss->nodes.v); /* big per-query arrays: kept for the next query */
	query_scratch_give(ss->entries.v);
	VEC_FREE(&ss->samples);
	for (size_t i = 0; i < ss->ngroup_by; i++)
		free(ss->group_by[i]);
	free(ss->group_by);
	qmap_release(&ss->child_idx);
	free(ss->raw_of);
	VEC_FREE(&ss->raw);
	free(ss->src_of);
	VEC_FREE(&ss->srcs);
	free(ss->entry_slots);
	ss_pin_put(ss->pin); /* after the names: their own chunks are freed, the shared ones kept */
	memset(ss, 0, sizeof(*ss));
}

/* The (parent, name) index of nodes that were set without it (a set built from the cache). */
void ss_child_idx_rebuild(struct query_stackset *ss)
{
	qmap_release(&ss->child_idx);
	qmap_reserve(&ss->child_idx, ss->nodes.n);
	for (size_t i = 1; i < ss->nodes.n; i++)
		qmap_put(&ss->child_idx,
			 (uint64_t)ss->nodes.v[i].parent << 32 | ss->nodes.v[i].name, (uint32_t)i);
	ss->child_idx_stale = false;
}

uint32_t query_stackset_child(struct query_stackset *ss, uint32_t parent, uint32_t name)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	uint32_t id;

	if (ss->child_idx_stale)
		ss_child_idx_rebuild(ss);
	id = qmap_get(&ss->child_idx, key);
	if (id != QMAP_NONE)
		return id;
	PROF_ASSERT(parent < ss->nodes.n && ss->nodes.n < QMAP_NONE - 1);
	struct query_ss_node nd = { parent, name, ss->nodes.v[parent].depth + 1 };
	id = (uint32_t)ss->nodes.n;
	VEC_PUSH(&ss->nodes, nd);
	qmap_put(&ss->child_idx, key, id);
	return id;
}

static size_t entry_hash(uint32_t node, uint32_t group, uint32_t bucket)
{
	return qmap_hash((uint64_t)node << 32 ^ (uint64_t)group << 20 ^ bucket);
}

static void entry_rehash(struct query_stackset *ss)
{
	size_t ns = ss->entry_nslots ? ss->entry_nslots * 2 : 1024;

	while ((ss->entries.n + 1) * 2 > ns)
		ns *= 2;

	free(ss->entry_slots);
	ss->entry_slots = xcalloc(ns, sizeof(uint32_t));
	ss->entry_nslots = ns;
	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[i];
		size_t s = entry_hash(e->node, e->group, e->bucket) & (ns - 1);

		while (ss->entry_slots[s])
			s = (s + 1) & (ns - 1);
		ss->entry_slots[s] = (uint32_t)i + 1;
	}
}

int query_stackset_add(struct query_stackset *ss, uint32_t node, uint32_t group, uint32_t bucket,
		       int64_t value, uint64_t count, double gauge_value)
{
	size_t s;
	uint32_t id;

	PROF_ASSERT(bucket < ss->nbuckets);
	if ((ss->entries.n + 1) * 2 > ss->entry_nslots)
		entry_rehash(ss);
	s = entry_hash(node, group, bucket) & (ss->entry_nslots - 1);
	while ((id = ss->entry_slots[s])) {
		struct query_ss_entry *e = &ss->entries.v[id - 1];

		if (e->node == node && e->group == group && e->bucket == bucket) {
			e->value = prof_add_sat(e->value, value);
			e->count += count;
			e->gauge += gauge_value;
			ss->total = prof_add_sat(ss->total, value);
			ss->rows += count;
			return 0;
		}
		s = (s + 1) & (ss->entry_nslots - 1);
	}
	if (ss->max_entries && ss->entries.n >= ss->max_entries)
		return -PROF_ETOOBIG;
	PROF_ASSERT(ss->entries.n < UINT32_MAX - 1);
	struct query_ss_entry e = { node, group, bucket, 0, value, count, gauge_value };
	VEC_PUSH(&ss->entries, e);
	ss->entry_slots[s] = (uint32_t)ss->entries.n;
	ss->total = prof_add_sat(ss->total, value);
	ss->rows += count;
	return 0;
}

void query_stackset_set_group_by(struct query_stackset *ss, const char *const *names, size_t n)
{
	PROF_ASSERT(ss->entries.n == 0 && ss->ngroup_by == 0);
	ss->group_by = xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		ss->group_by[i] = xstrdup(names[i]);
	ss->ngroup_by = n;
}

uint32_t query_stackset_group(struct query_stackset *ss, const char *const *values)
{
	size_t len = 0;

	if (!ss->ngroup_by)
		return 0;
	for (size_t i = 0; i < ss->ngroup_by; i++)
		len += strlen(values[i] ? values[i] : "") + (i ? 1 : 0);
	char stackbuf[512];
	char *key = len < sizeof(stackbuf) ? stackbuf : xmalloc(len + 1);
	size_t at = 0;
	for (size_t i = 0; i < ss->ngroup_by; i++) {
		const char *v = values[i] ? values[i] : "";
		size_t k = strlen(v);

		if (i)
			key[at++] = '\0';
		memcpy(key + at, v, k);
		at += k;
	}
	uint32_t id = strtab_intern(&ss->groups, key, len);
	if (key != stackbuf)
		free(key);
	return id;
}

const char *query_stackset_group_value(const struct query_stackset *ss, uint32_t group, size_t i,
				       size_t *len)
{
	const char *k = strtab_get(&ss->groups, group);
	size_t klen = group < ss->groups.n ? ss->groups.len[group] : 0, at = 0;

	for (size_t j = 0; j < i && at <= klen; j++) {
		const char *z = memchr(k + at, '\0', klen - at);

		at = z ? (size_t)(z - k) + 1 : klen + 1;
	}
	if (at > klen) {
		*len = 0;
		return "";
	}
	const char *z = memchr(k + at, '\0', klen - at);
	*len = z ? (size_t)(z - (k + at)) : klen - at;
	return k + at;
}

/* Per-name index arrays (raw_of, src_of): index + 1 of @name's record, 0 = none. */
uint32_t ss_of_get(const uint32_t *of, size_t n, uint32_t name)
{
	return name < n ? of[name] : 0;
}

void ss_of_put(uint32_t **of, size_t *n, uint32_t name, uint32_t v)
{
	if (name >= *n) {
		size_t want = PROF_MAX((size_t)name + 1, PROF_MAX(*n * 2, (size_t)64));

		*of = xreallocarray(*of, want, sizeof(uint32_t));
		memset(*of + *n, 0, (want - *n) * sizeof(uint32_t));
		*n = want;
	}
	(*of)[name] = v;
}

const struct query_ss_srcloc *query_stackset_srcloc(const struct query_stackset *ss, uint32_t name)
{
	uint32_t i = ss_of_get(ss->src_of, ss->nsrc_of, name);

	return i ? &ss->srcs.v[i - 1] : NULL;
}

/* The source-location record of the strings (may be ""), names interned in @ss. */
void ss_srcloc_make(struct query_stackset *ss, struct query_ss_srcloc *r, const char *file,
		    int64_t line, const char *build_id, const char *mapping, const char *ftype)
{
	memset(r, 0, sizeof(*r));
	if (*file)
		r->file = query_stackset_name(ss, file, strlen(file));
	if (*build_id)
		r->build_id = query_stackset_name(ss, build_id, strlen(build_id));
	if (*mapping)
		r->mapping = query_stackset_name(ss, mapping, strlen(mapping));
	if (*ftype)
		r->frame_type = query_stackset_name(ss, ftype, strlen(ftype));
	r->line = *file && line > 0 ? line : 0;
}

/* How much @r says: 2 a file, 1 a binary, 0 only a frame type (the most wins). */
int ss_srcloc_rank(const struct query_ss_srcloc *r)
{
	return r->file ? 2 : r->build_id || r->mapping ? 1 : 0;
}

/* Lines in ss_srcloc_cmp's order: known ones ascending, unknown (0) last. */
static int cmp_line(int64_t a, int64_t b)
{
	uint64_t x = a > 0 ? (uint64_t)a : UINT64_MAX, y = b > 0 ? (uint64_t)b : UINT64_MAX;

	return x < y ? -1 : x > y;
}

int ss_srcloc_cmp_str(const struct query_ss_srcloc *a, const struct strtab *na, const char *file,
		      int64_t line, const char *build_id, const char *mapping, const char *ftype)
{
	int rb = *file ? 2 : *build_id || *mapping ? 1 : 0, ra = ss_srcloc_rank(a), c;

	if (ra != rb)
		return ra > rb ? -1 : 1;
	if ((c = strcmp(strtab_get(na, a->file), file)))
		return c;
	if ((c = cmp_line(a->line, *file && line > 0 ? line : 0)))
		return c;
	if ((c = strcmp(strtab_get(na, a->build_id), build_id)))
		return c;
	if ((c = strcmp(strtab_get(na, a->mapping), mapping)))
		return c;
	return strcmp(strtab_get(na, a->frame_type), ftype);
}

int ss_srcloc_cmp(const struct query_ss_srcloc *a, const struct query_ss_srcloc *b,
		  const struct strtab *names)
{
	return ss_srcloc_cmp_str(a, names, strtab_get(names, b->file), b->line,
				 strtab_get(names, b->build_id), strtab_get(names, b->mapping),
				 strtab_get(names, b->frame_type));
}

/*
 * Note where frame name @name's code is (strings may be ""): the record
 * that ss_srcloc_cmp puts first is kept, whatever the order they come in.
 */
void ss_srcloc_note(struct query_stackset *ss, uint32_t name, const char *file, int64_t line,
		    const char *build_id, const char *mapping, const char *ftype)
{
	uint32_t i = ss_of_get(ss->src_of, ss->nsrc_of, name) - 1; /* QMAP_NONE when none */
	struct query_ss_srcloc r;

	if ((i != QMAP_NONE && ss_srcloc_cmp_str(&ss->srcs.v[i], &ss->names, file, line, build_id,
						 mapping, ftype) <= 0) ||
	    (!*file && !*build_id && !*mapping && !*ftype))
		return;
	ss_srcloc_make(ss, &r, file, line, build_id, mapping, ftype);
	if (i != QMAP_NONE) {
		ss->srcs.v[i] = r;
		return;
	}
	VEC_PUSH(&ss->srcs, r);
	ss_of_put(&ss->src_of, &ss->nsrc_of, name, (uint32_t)ss->srcs.n);
}

const struct query_ss_raw *query_stackset_raw(const struct query_stackset *ss, uint32_t name)
{
	uint32_t i = ss_of_get(ss->raw_of, ss->nraw_of, name);

	return i ? &ss->raw.v[i - 1] : NULL;
}

void query_stackset_path(const struct query_stackset *ss, uint32_t node, struct query_ss_path *out)
{
	uint32_t depth = ss->nodes.v[node].depth;

	out->n = 0;
	VEC_RESERVE(out, depth + 1);
	out->n = depth;
	for (uint32_t at = node, i = depth; at; at = ss->nodes.v[at].parent)
		out->v[--i] = ss->nodes.v[at].name;
}

static int cmp_bytes(const char *a, size_t la, const char *b, size_t lb)
{
	int c = memcmp(a, b, PROF_MIN(la, lb));

	return c ? c : (la < lb ? -1 : la > lb);
}

static int cmp_sibling(const void *a, const void *b, void *arg)
{
	const struct query_stackset *ss = arg;
	uint32_t x = ss->nodes.v[*(const uint32_t *)a].name;
	uint32_t y = ss->nodes.v[*(const uint32_t *)b].name;

	return cmp_bytes(ss->names.s[x], ss->names.len[x], ss->names.s[y], ss->names.len[y]);
}

void query_stackset_node_order(const struct query_stackset *ss, uint32_t **order, uint32_t **rank)
{
	size_t n = ss->nodes.n;
	/* Children of each node, grouped by parent (parent < child): kid[off[p] .. off[p + 1]). */
	uint32_t *off = query_scratch_take(n + 2, sizeof(uint32_t), true);
	uint32_t *kid = query_scratch_take(n + 1, sizeof(uint32_t), false);
	uint32_t *ord = query_scratch_take(n + 1, sizeof(uint32_t), false);
	uint32_t *stk = query_scratch_take(n + 1, sizeof(uint32_t), false);
	size_t k = 0, sp = 0;

	for (size_t i = 1; i < n; i++)
		off[ss->nodes.v[i].parent + 2]++;
	for (size_t p = 2; p < n + 2; p++)
		off[p] += off[p - 1];
	for (size_t i = 1; i < n; i++)
		kid[off[ss->nodes.v[i].parent + 1]++] = (uint32_t)i;
	for (size_t p = 0; p < n; p++)
		if (off[p + 1] - off[p] > 1)
			qsort_r(kid + off[p], off[p + 1] - off[p], sizeof(uint32_t), cmp_sibling,
				(void *)ss);
	if (n)
		stk[sp++] = 0;
	while (sp) {
		uint32_t at = stk[--sp];

		ord[k++] = at;
		for (uint32_t c = off[at + 1]; c-- > off[at];)
			stk[sp++] = kid[c];
	}
	PROF_ASSERT(k == n);
	if (rank) {
		uint32_t *r = query_scratch_take(n + 1, sizeof(uint32_t), false);

		for (size_t i = 0; i < n; i++)
			r[ord[i]] = (uint32_t)i;
		*rank = r;
	}
	if (order)
		*order = ord;
	else
		query_scratch_give(ord);
	query_scratch_give(off);
	query_scratch_give(kid);
	query_scratch_give(stk);
}

int query_stackset_node_cmp(const struct query_stackset *ss, uint32_t a, uint32_t b)
{
	while (a != b) {
		if (!a || !b)
			return a ? 1 : -1;
		uint32_t x = ss->nodes.v[a].name, y = ss->nodes.v[b].name;
		int c = cmp_bytes(ss->names.s[x], ss->names.len[x], ss->names.s[y],
				  ss->names.len[y]);

		if (c)
			return c;
		a = ss->nodes.v[a].parent;
		b = ss->nodes.v[b].parent;
	}
	return 0;
}

int query_stackset_group_cmp(const struct query_stackset *ss, uint32_t a, uint32_t b)
{
	if (a == b)
		return 0;
	return cmp_bytes(strtab_get(&ss->groups, a), a < ss->groups.n ? ss->groups.len[a] : 0,
			 strtab_get(&ss->groups, b), b < ss->groups.n ? ss->groups.len[b] : 0);
}

void query_stackset_node_sums(const struct query_stackset *ss, int64_t **self, uint64_t **count)
{
	int64_t *s = self ? query_scratch_take(ss->nodes.n + 1, sizeof(int64_t), true) : NULL;
	uint64_t *c = count ? query_scratch_take(ss->nodes.n + 1, sizeof(uint64_t), true) : NULL;

	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[i];

		if (s)
			s[e->node] = prof_add_sat(s[e->node], e->value);
		if (c)
			c[e->node] += e->count;
	}
	if (self)
		*self = s;
	if (count)
		*count = c;
}

/* --- folding ---------------------------------------------------------------------------- */

/* The library frame @name is in: a names id of its binary, UINT32_MAX for the kernel, 0 = none. */
static uint32_t fold_library(const struct query_stackset *ss, uint32_t name)
{
	const struct query_ss_srcloc *l = query_stackset_srcloc(ss, name);

	if (!l)
		return 0;
	if (l->frame_type && !strcmp(strtab_get(&ss->names, l->frame_type), "kernel"))
		return UINT32_MAX;
	if (!l->mapping)
		return 0;
	const char *path = strtab_get(&ss->names, l->mapping), *base = strrchr(path, '/');

	return strstr(base ? base + 1 : path, ".so") ? l->mapping : 0;
}

void query_stackset_fold(struct query_stackset *ss, unsigned how)
{
	size_t n = ss->nodes.n;

	if (!how || n <= 1)
		return;
	struct query_ss_node *old = ss->nodes.v;
	uint32_t *map = xmalloc(n * sizeof(*map)), *lib = NULL;
	struct query_ss_node root = { 0, 0, 0 };

	if (how & QUERY_FOLD_LIBRARY) {
		lib = xmalloc(n * sizeof(*lib));
		lib[0] = 0;
		for (size_t i = 1; i < n; i++)
			lib[i] = fold_library(ss, old[i].name);
	}
	memset(&ss->nodes, 0, sizeof(ss->nodes));
	VEC_PUSH(&ss->nodes, root);
	qmap_release(&ss->child_idx);
	ss->child_idx_stale = false;
	map[0] = 0;
	for (size_t i = 1; i < n; i++) {
		uint32_t p = old[i].parent;

		if (p && (((how & QUERY_FOLD_RECURSION) && old[p].name == old[i].name) ||
			  (lib && lib[i] && lib[i] == lib[p])))
			map[i] = map[p];
		else
			map[i] = query_stackset_child(ss, map[p], old[i].name);
	}
	query_scratch_give(old);
	free(lib);

	/* Entries again, merged per (new node, group, bucket). */
	struct query_ss_entry *ev = ss->entries.v;
	size_t en = ss->entries.n, cap = ss->max_entries;

	memset(&ss->entries, 0, sizeof(ss->entries));
	free(ss->entry_slots);
	ss->entry_slots = NULL;
	ss->entry_nslots = 0;
	ss->total = 0;
	ss->rows = 0;
	ss->max_entries = 0;
	for (size_t i = 0; i < en; i++)
		(void)query_stackset_add(ss, map[ev[i].node], ev[i].group, ev[i].bucket,
					 ev[i].value, ev[i].count, ev[i].gauge);
	ss->max_entries = cap;
	query_scratch_give(ev);
	for (size_t i = 0; i < ss->samples.n; i++)
		ss->samples.v[i].node = map[ss->samples.v[i].node];
	free(map);
}

int query_fold_parse(const char *s, unsigned *how, struct prof_err *err)
{
	*how = 0;
	if (!s || !*s || !strcmp(s, "none"))
		return 0;
	for (const char *p = s; *p;) {
		size_t k = strcspn(p, ",");

		if (k == 9 && !strncmp(p, "recursion", 9))
			*how |= QUERY_FOLD_RECURSION;
		else if (k == 7 && !strncmp(p, "library", 7))
			*how |= QUERY_FOLD_LIBRARY;
		else
			return prof_err_set(err, -EINVAL, -1,
					    "parameter 'fold': unknown value '%.*s' (known: "
					    "recursion, library, recursion,library, none)",
					    (int)PROF_MIN(k, 64), p);
		p += k + (p[k] == ',');
	}
	return 0;
}
