// SPDX-License-Identifier: Apache-2.0
/*
 * stackset.c - the aggregated, name-based stack set; see stackset.h.
 *
 * Collecting from the store, in four steps:
 *   (1) scan: sum values and count rows per (store stack id, group,
 *       bucket): a dense array indexed by stack id when there is neither
 *       group_by nor step (the flame graph / table / diff path), else a
 *       hash of entries. Group ids are found once per series (memo).
 *       Gauge types get a first pass counting each series' snapshots
 *       per bucket (the whole range without a step), so each row can be
 *       weighted by 1/nsnap, and their entries' values are then those
 *       means (gauge_means): every view shows the mean snapshot;
 *   (2) close the set of touched store stacks under "parent of" and sort
 *       it by id: parents come first (store invariant parent < id);
 *   (3) translate each store stack node to a trie node: its location's
 *       frames (inline chain expanded outer first, symbolized or named by
 *       the fallback, frame-filtered) appended under its parent's trie
 *       node; the stack-filter match is inherited from the parent, so it
 *       costs one regex match per distinct location, not per row;
 *   (4) move the aggregates to entries keyed by trie node (several store
 *       stacks may share a names path: same function, other addresses).
 * Locations are translated once per query (memo by location index).
 *
 * The store hands rows over source by source (each block has its own
 * symbol tables and stack ids, the heads theirs): steps (2)-(4) run at the
 * end of each source, so stack ids never outlive their source, and the
 * trie merges equal name paths of different sources. Without group_by,
 * step or kept samples the store itself sums per stack (its totals scan,
 * which skips the timestamp column) and step (1) is empty.
 *
 * That totals path, without a frame filter, skips steps (2)-(4): the
 * translation of a source's stacks is kept across queries in a shared
 * names trie (see "the translation cache" below), the totals are summed
 * per trie node, and the touched trie nodes are copied into the set,
 * which borrows the trie's names.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "query/scratch.h"
#include "query/stackset.h"
#include "query/units.h"

#include <math.h>
#include <pthread.h>
#include <xxhash.h>

/* --- the set itself -------------------------------------------------------------- */

/*
 * VEC_RESERVE for a vector of per-query size (a set's nodes and entries,
 * a collector's totals and sums): room for @extra more from the scratch
 * pool, which keeps such blocks between queries (query/scratch.h);
 * released with query_scratch_give().
 */
#define SS_VEC_RESERVE_SCRATCH(vec, extra)                                           \
	do {                                                                         \
		if ((vec)->n + (extra) > (vec)->cap) {                               \
			size_t c_ = (vec)->n + (extra);                              \
			void *v_ = query_scratch_take(c_, sizeof(*(vec)->v), false); \
                                                                                     \
			if ((vec)->n)                                                \
				memcpy(v_, (vec)->v, (vec)->n * sizeof(*(vec)->v));  \
			query_scratch_give((vec)->v);                                \
			(vec)->v = v_;                                               \
			(vec)->cap = c_;                                             \
		}                                                                    \
	} while (0)

/*
 * A pin keeps one generation of the translation cache's name bytes alive
 * while sets that borrowed them live (see xc_share_names): the cache
 * holds a reference while it owns those string chunks; when it is
 * emptied it hands the chunks to the pin and drops its reference; the
 * last reference frees them.
 */
struct query_ss_pin {
	unsigned long refs;
	char *chunks; /* strtab chunk chain, set when the cache lets go of it */
};

static struct query_ss_pin *pin_new(void)
{
	struct query_ss_pin *p = xcalloc(1, sizeof(*p));

	p->refs = 1;
	return p;
}

static struct query_ss_pin *pin_get(struct query_ss_pin *p)
{
	__atomic_add_fetch(&p->refs, 1, __ATOMIC_RELAXED);
	return p;
}

static void pin_put(struct query_ss_pin *p)
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
	pin_put(ss->pin); /* after the names: their own chunks are freed, the shared ones kept */
	memset(ss, 0, sizeof(*ss));
}

/* The (parent, name) index of nodes that were set without it (a set built from the cache). */
static void child_idx_rebuild(struct query_stackset *ss)
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
		child_idx_rebuild(ss);
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
static uint32_t of_get(const uint32_t *of, size_t n, uint32_t name)
{
	return name < n ? of[name] : 0;
}

static void of_put(uint32_t **of, size_t *n, uint32_t name, uint32_t v)
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
	uint32_t i = of_get(ss->src_of, ss->nsrc_of, name);

	return i ? &ss->srcs.v[i - 1] : NULL;
}

/* The source-location record of the strings (may be ""), names interned in @ss. */
static void srcloc_make(struct query_stackset *ss, struct query_ss_srcloc *r, const char *file,
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

/* How much @r says: 2 a file, 1 a binary, 0 only a frame type (the first of the most wins). */
static int srcloc_rank(const struct query_ss_srcloc *r)
{
	return r->file ? 2 : r->build_id || r->mapping ? 1 : 0;
}

/*
 * Note where frame name @name's code is (strings may be ""): the first
 * record with a file wins, else the first with a binary, else the first
 * with a frame type.
 */
static void srcloc_note(struct query_stackset *ss, uint32_t name, const char *file, int64_t line,
			const char *build_id, const char *mapping, const char *ftype)
{
	uint32_t i = of_get(ss->src_of, ss->nsrc_of, name) - 1; /* QMAP_NONE when none */
	int rank = *file ? 2 : *build_id || *mapping ? 1 : 0;
	struct query_ss_srcloc r;

	if ((i != QMAP_NONE && srcloc_rank(&ss->srcs.v[i]) >= rank) ||
	    (!*file && !*build_id && !*mapping && !*ftype))
		return;
	srcloc_make(ss, &r, file, line, build_id, mapping, ftype);
	if (i != QMAP_NONE) {
		ss->srcs.v[i] = r;
		return;
	}
	VEC_PUSH(&ss->srcs, r);
	of_put(&ss->src_of, &ss->nsrc_of, name, (uint32_t)ss->srcs.n);
}

const struct query_ss_raw *query_stackset_raw(const struct query_stackset *ss, uint32_t name)
{
	uint32_t i = of_get(ss->raw_of, ss->nraw_of, name);

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

/* --- location translation, shared by the store and profile paths ---------------------- */

#define FR_HIDDEN 1u
#define FR_MATCH  2u

struct xlator {
	struct query_stackset *ss;
	const struct model_profile *dict;
	struct symbolizer *sym;
	const struct query_filter *filter;
	bool used_sym;	   /* a location was looked up in the symbolizer */
	uint32_t *loc_off; /* [dict locations]: offset in frames + 1, 0 = not yet */
	bool once;	   /* the caller asks once per location (xc_location): no memo */
	bool trie;	   /* translating for the cache's trie (xc_source): see frames */
	/*
	 * Per location: n, then n x (name id, FR_* flags), outer first. For
	 * the trie (no filter: the flags would be 0) the second word is the
	 * frame's source-location variant instead (xc_variant), and nothing
	 * is noted in the trie's own srcs.
	 */
	VEC(uint32_t) frames;
	struct sym_frame *symbuf; /* SYM_FRAMES_MAX, allocated on first use */
};

static void xlator_init(struct xlator *x, struct query_stackset *ss,
			const struct model_profile *dict, const struct query_stackset_params *p)
{
	memset(x, 0, sizeof(*x));
	x->ss = ss;
	x->dict = dict;
	x->sym = p->sym;
	x->filter = p->filter;
}

static void xlator_release(struct xlator *x)
{
	free(x->loc_off);
	VEC_FREE(&x->frames);
	free(x->symbuf);
}

static uint32_t push_frame(struct xlator *x, const char *name, size_t n, const char *ftype,
			   const char *module)
{
	uint32_t flags = 0, id;

	if (!n) { /* id 0 names the root: an empty name would vanish from the table */
		name = "<unknown>";
		n = strlen(name);
	}
	id = query_stackset_name(x->ss, name, n);

	if (query_filter_hides(x->filter, name, n, ftype, module))
		flags |= FR_HIDDEN;
	if (query_filter_stack_match(x->filter, name, n))
		flags |= FR_MATCH;
	VEC_PUSH(&x->frames, id);
	VEC_PUSH(&x->frames, flags);
	return id;
}

static uint32_t xc_variant(uint32_t name, const struct query_ss_srcloc *r);

/* Where the code of frame @id (the last one pushed) is: see xlator.frames. */
static void frame_srcloc(struct xlator *x, uint32_t id, const char *file, int64_t line,
			 const char *build_id, const char *mapping, const char *ftype)
{
	struct query_ss_srcloc r;

	if (!x->trie) {
		srcloc_note(x->ss, id, file, line, build_id, mapping, ftype);
		return;
	}
	srcloc_make(x->ss, &r, file, line, build_id, mapping, ftype);
	x->frames.v[x->frames.n - 1] = xc_variant(id, &r);
}

/*
 * Name of line @j of @l with its length (names may hold any bytes, NUL
 * included): model_frame_name's rules (function name, else system name,
 * else "[basename of mapping]", else "<unknown>").
 */
static const char *line_name(const struct model_profile *d, const struct model_location *l,
			     uint32_t j, char *tmp, size_t tmpsz, size_t *len)
{
	const struct model_function *f = &d->functions.v[d->lines.v[l->line_off + j].function];
	uint32_t sid = f->name ? f->name : f->system_name;

	if (sid) {
		*len = d->strings.len[sid];
		return model_str(d, sid);
	}
	const char *s = model_frame_name(d, l, l->nlines, tmp, tmpsz);
	*len = strlen(s);
	return s;
}

/* Frames of location @loc: offset of its record in x->frames. */
static uint32_t xlator_location(struct xlator *x, uint32_t loc)
{
	PROF_ASSERT(loc < x->dict->locations.n);
	if (!x->loc_off && !x->once)
		x->loc_off = xcalloc(x->dict->locations.n + 1, sizeof(uint32_t));
	uint32_t off = x->once ? 0 : x->loc_off[loc];

	if (off)
		return off - 1;
	const struct model_profile *d = x->dict;
	const struct model_location *l = &d->locations.v[loc];
	const char *ftype = l->frame_type ? model_str(d, l->frame_type) : "";
	char tmp[SYM_FRAME_NAME_MAX];
	size_t len;
	const struct model_mapping *m = l->mapping ? &d->mappings.v[l->mapping] : NULL;
	const char *path = m ? model_str(d, m->filename) : "";
	const char *bid = m ? model_str(d, m->build_id) : "";
	const char *module = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	off = (uint32_t)x->frames.n;
	if (!x->once)
		x->loc_off[loc] = off + 1;
	if (l->nlines) {
		VEC_PUSH(&x->frames, l->nlines);
		for (uint32_t j = l->nlines; j-- > 0;) {
			const struct model_line *ln = &d->lines.v[l->line_off + j];
			const struct model_function *f = &d->functions.v[ln->function];
			const char *nm = line_name(d, l, j, tmp, sizeof(tmp), &len);
			uint32_t id = push_frame(x, nm, len, ftype, module);

			frame_srcloc(x, id, ln->function ? model_str(d, f->filename) : "",
				     ln->function && f->start_line > 0 ? f->start_line : ln->line,
				     bid, path, ftype);
		}
		return off;
	}
	if (x->sym && *path != '[' && (*path || *bid)) {
		if (!x->symbuf)
			x->symbuf = xcalloc(SYM_FRAMES_MAX, sizeof(*x->symbuf));
		x->used_sym = true;
		struct symbolizer_mapping sm = { m->memory_start, m->memory_limit, m->file_offset };
		int nf = symbolizer_lookup_frames_mapped(x->sym, path, bid, &sm, l->address,
							 x->symbuf, SYM_FRAMES_MAX);
		if (nf > 0) {
			/* Innermost first from the symbolizer; the trie wants outer first. */
			VEC_PUSH(&x->frames, (uint32_t)nf);
			for (int j = nf; j-- > 0;) {
				const char *nm =
					x->symbuf[j].name[0] ? x->symbuf[j].name : "<unknown>";
				uint32_t id = push_frame(x, nm, strlen(nm), ftype, module);

				frame_srcloc(x, id, x->symbuf[j].file, x->symbuf[j].line, bid, path,
					     ftype);
			}
			return off;
		}
	}
	VEC_PUSH(&x->frames, 1);
	if (*path)
		snprintf(tmp, sizeof(tmp), "%s+0x%" PRIx64, module, l->address);
	else
		snprintf(tmp, sizeof(tmp), "0x%" PRIx64, l->address);
	x->ss->unsymbolized++;
	uint32_t id = push_frame(x, tmp, strlen(tmp), ftype, module);
	frame_srcloc(x, id, "", 0, bid, path, ftype);
	if (!of_get(x->ss->raw_of, x->ss->nraw_of, id)) {
		struct query_ss_raw r = { l->address, 0, 0 };

		if (*path) {
			r.mapping = query_stackset_name(x->ss, path, strlen(path));
			snprintf(tmp, sizeof(tmp), "[%s]", module);
		} else {
			snprintf(tmp, sizeof(tmp), "<unknown>");
		}
		r.fn_name = query_stackset_name(x->ss, tmp, strlen(tmp));
		VEC_PUSH(&x->ss->raw, r);
		of_put(&x->ss->raw_of, &x->ss->nraw_of, id, (uint32_t)x->ss->raw.n);
	}
	return off;
}

/* Append location @loc's visible frames under trie node @at; ORs the stack-filter match. */
static uint32_t xlator_apply(struct xlator *x, uint32_t at, uint32_t loc, bool *match)
{
	uint32_t off = xlator_location(x, loc);
	uint32_t nf = x->frames.v[off];

	for (uint32_t f = 0; f < nf; f++) {
		uint32_t name = x->frames.v[off + 1 + 2 * f], flags = x->frames.v[off + 2 + 2 * f];

		if (flags & FR_MATCH)
			*match = true;
		if (!(flags & FR_HIDDEN))
			at = query_stackset_child(x->ss, at, name);
	}
	return at;
}

/* --- common parameter handling ---------------------------------------------------------- */

static int setup(struct query_stackset *ss, const char *type, const struct query_stackset_params *p,
		 struct prof_err *err)
{
	struct query_type_id t;

	query_stackset_init(ss);
	if (!type || !*type)
		return prof_err_set(err, -EINVAL, -1, "query: a profile type is required");
	if (p->ngroup_by > QUERY_SS_MAX_GROUP_BY)
		return prof_err_set(err, -EINVAL, -1,
				    "parameter 'group_by': at most %d labels, got %zu",
				    QUERY_SS_MAX_GROUP_BY, p->ngroup_by);
	if (p->from_ns > p->to_ns)
		return prof_err_set(err, -EINVAL, -1, "query: 'from' is after 'to'");
	if (p->step_ns < 0)
		return prof_err_set(err, -EINVAL, -1, "parameter 'step': must be positive");
	snprintf(ss->type, sizeof(ss->type), "%s", type);
	query_type_split(type, &t);
	snprintf(ss->unit, sizeof(ss->unit), "%s", t.sample_unit);
	ss->cumulative = query_type_is_cumulative(type);
	ss->from_ns = p->from_ns;
	ss->to_ns = p->to_ns;
	ss->step_ns = p->step_ns;
	if (p->step_ns > 0) {
		uint64_t nb =
			(uint64_t)((__int128)p->to_ns - p->from_ns) / (uint64_t)p->step_ns + 1;

		if (nb > QUERY_SS_MAX_BUCKETS)
			return prof_err_set(err, -EINVAL, -1,
					    "parameter 'step': %" PRIu64
					    " steps in the range; at most %d (use a larger step)",
					    nb, QUERY_SS_MAX_BUCKETS);
		ss->nbuckets = (uint32_t)nb;
	}
	if (p->ngroup_by)
		query_stackset_set_group_by(ss, p->group_by, p->ngroup_by);
	ss->max_entries = p->max_entries ? p->max_entries : QUERY_SS_MAX_ENTRIES;
	return 0;
}

static int too_many_entries(const struct query_stackset *ss, struct prof_err *err)
{
	return prof_err_set(
		err, -PROF_ETOOBIG, -1,
		"query: more than %zu distinct (stack, group, step) cells; narrow the "
		"time range or the selector, use a larger step or fewer group_by labels",
		ss->max_entries);
}

static int too_many_samples(size_t max, struct prof_err *err)
{
	return prof_err_set(err, -PROF_ETOOBIG, -1,
			    "query: more than %zu samples to keep for a flame chart; narrow the "
			    "time range or the selector",
			    max);
}

static uint32_t bucket_of(const struct query_stackset *ss, int64_t ts)
{
	if (ss->step_ns <= 0)
		return 0;
	return (uint32_t)((uint64_t)((__int128)ts - ss->from_ns) / (uint64_t)ss->step_ns);
}

/* --- snapshots of gauge series: nsnap per (series, bucket) ------------------------------ */

struct snap {
	uint32_t series, bucket;
	int64_t ts;
};

struct snaps {
	VEC(struct snap) v;
	struct qmap count; /* series << 32 | bucket -> distinct timestamps */
};

static void snaps_add(struct snaps *sn, uint32_t series, uint32_t bucket, int64_t ts)
{
	if (sn->v.n) {
		const struct snap *last = &sn->v.v[sn->v.n - 1];

		if (last->series == series && last->ts == ts)
			return;
	}
	struct snap s = { series, bucket, ts };
	VEC_PUSH(&sn->v, s);
}

static int cmp_snap(const void *a, const void *b)
{
	const struct snap *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void snaps_finish(struct snaps *sn)
{
	if (sn->v.n > 1)
		qsort(sn->v.v, sn->v.n, sizeof(*sn->v.v), cmp_snap);
	for (size_t i = 0; i < sn->v.n; i++) {
		const struct snap *s = &sn->v.v[i];

		if (i && !cmp_snap(s, &sn->v.v[i - 1]))
			continue;
		uint64_t key = (uint64_t)s->series << 32 | s->bucket;
		uint32_t c = qmap_get(&sn->count, key);
		qmap_put(&sn->count, key, c == QMAP_NONE ? 1 : c + 1);
	}
	VEC_FREE(&sn->v);
}

static double snaps_weight(const struct snaps *sn, uint32_t series, uint32_t bucket)
{
	uint32_t c = qmap_get(&sn->count, (uint64_t)series << 32 | bucket);

	return c == QMAP_NONE || c == 0 ? 1.0 : 1.0 / c;
}

/* --- the translation cache --------------------------------------------------------------- */

/*
 * Translating a source's store stacks into names (locations symbolized,
 * inline chains expanded) costs a hash lookup per stack node, and an
 * hour of a fleet touches about a million nodes: redone per query it is
 * most of a flame graph's time. So the translation is kept across
 * queries, process-wide: one shared names trie (@trie: names, nodes,
 * raw and source-location records, never frame-filtered) and, per source
 * (block or head), the trie node of each of its store stack ids.
 *
 * A source's map stays valid while what it was computed from does: a
 * fingerprint (XXH3) of the source's stack nodes and of its dictionary
 * (locations, lines, functions, mappings, strings) is checked on every
 * use, so a block id or a head address reused by other data cannot hand
 * out wrong names; a head, which only appends, is extended from where its
 * map ends. Sources that went through the symbolizer also record its
 * generation (counters that move when debug info is uploaded, fetched or
 * a binary opened): a change re-translates them. Bounded: at most
 * XC_MAX_NODES trie nodes and XC_MAX_MAPPED mapped stack ids; sources are
 * evicted least recently used first, and the trie is emptied (@epoch
 * moves) when it would pass its cap; a query that saw the epoch move
 * falls back to translating on its own.
 *
 * Translating a source goes through the location cache (see there): a
 * location another source already named costs a hash lookup, and a
 * location met again under the same trie node (the same call path in the
 * next block) no trie lookup at all. The trie lookups of a source whose
 * call paths the trie mostly holds already (the second and later blocks
 * of a fleet) go a level of depth at a time with the next slots
 * prefetched (xc_resolve), the rest in stack order as before, so the
 * trie comes out the same whichever way.
 *
 * A query in the cached path (no group_by, step or kept samples, no frame
 * filter) sums the store's per-stack totals per trie node (an array over
 * the trie's ids), then copies the touched trie nodes and their ancestors
 * into its own set in id order (parents first: no hashing), see
 * xc_extract. It does not copy names: the set shares the trie's name
 * strings and ids (xc_share_names; a pin keeps the strings alive after
 * the cache lets go of them), so an answer over a month of blocks with a
 * few hundred thousand distinct frames interns none of them again.
 *
 * Where a function's code is (file, line, binary) is not part of the
 * trie: one trie node serves every source whose call path has those
 * names, whatever their files, so the answer must come from the selected
 * data, not from the trie (one service's main() in a.c must not name
 * another's main() in b.c, nor one dataset's file another's). Each frame
 * of a trie record carries its source-location variant (an id in xc.var,
 * see xc_variant), and each trie name remembers whether it has met one
 * variant or several (XC_MULTI). A name of one variant has it in any
 * selection. For the names of several, the query looks at the stacks of
 * each source it reads (the touched ones and their ancestors) whose
 * location has such a frame (xc_variant_stacks, kept per source) and
 * picks as the uncached path does: sources in scan order, stacks by id,
 * frames outer first, the first record with a file, else the first with
 * a binary (see struct query_ss_srcloc). A name that gets a second
 * variant while a query runs (from a source translated after one it
 * already summed) makes it run once more (collect; collector.var_moved).
 */
#define XC_MAX_NODES   ((size_t)16 << 20)
#define XC_MAX_MAPPED  ((size_t)64 << 20)
#define XC_MAX_SOURCES 4096

struct xc_src {
	uint64_t id;
	bool is_head;
	const struct model_profile *dict;
	const struct symbolizer *sym;
	uint64_t sym_gen;
	bool uses_sym;
	uint32_t *node; /* [n]: store stack id -> trie node */
	size_t n;
	uint64_t fp;
	size_t nlocs, nlines, nfuncs, nmaps, nstrs; /* dictionary sizes fingerprinted */
	uint64_t used;				    /* LRU clock */
	uint32_t *locrec; /* [nlocrec]: location -> its frame record in lwords + 1, 0 = none */
	size_t nlocrec;
	VEC(uint32_t) vstk;   /* stacks (ascending) with a frame of a name of several variants */
	VEC(uint32_t) vnames; /* those names, each once */
	uint64_t vgen;	      /* xc.var_gen and ... */
	size_t vn;	      /* ... n that vstk was made for */
};

/*
 * A location translated for the trie, by content (see "the location
 * cache" in xc_location): its key and frame record in lwords; a record
 * that asked the symbolizer holds for that symbolizer at that generation.
 */
struct xc_loc {
	uint32_t key, klen, frames;
	bool used_sym;
	const struct symbolizer *sym;
	uint64_t sym_gen;
};

static struct {
	pthread_mutex_t mu;
	bool ready;
	uint64_t epoch, clock;
	struct query_stackset trie;
	struct query_ss_pin *pin; /* keeps the trie's name bytes alive for sets sharing them */
	VEC(struct xc_src) src;
	struct qmap lidx; /* the location cache: hash of a location key -> index in lrec */
	VEC(struct xc_loc) lrec;
	VEC(uint32_t) lwords; /* location keys and frame records ([n, name, variant, ...]) */
	/* Source-location variants (see xc_variant). */
	VEC(struct query_ss_srcloc) var; /* id 0: nothing known */
	struct qmap var_idx;		 /* hash of a record (probed on) -> id */
	uint32_t *name_var;		 /* [nname_var]: trie name -> variant + 1, XC_MULTI */
	size_t nname_var;
	size_t nmulti;	  /* names at XC_MULTI */
	uint64_t var_gen; /* moves when a name gets its second variant */
	size_t mapped;
	struct query_ss_cache_stats stats;
	/*
	 * Per-query arrays over the trie's nodes, kept between queries (a
	 * fresh one costs a page fault and a page clear per 4 KiB; over the
	 * 861 k nodes of the fleet of bench/bench_query.sh that was a fifth
	 * of a warm flame graph): xc_extract's ids and marks (used with mu
	 * held; marks all zero between uses), and one spare of a collector's
	 * slot map (all zero while spare).
	 */
	uint32_t *ex_newid;
	uint8_t *ex_mark;
	size_t nex;
	uint32_t *qslot_spare;
	size_t nqslot_spare;
} xc = { .mu = PTHREAD_MUTEX_INITIALIZER };

/* Fingerprint input, buffered: XXH3's streaming update has a cost per call. */
struct fpbuf {
	XXH3_state_t *st;
	size_t n;
	unsigned char b[16384];
};

static void fp_flush(struct fpbuf *f)
{
	XXH3_64bits_update(f->st, f->b, f->n);
	f->n = 0;
}

static void fp_bytes(struct fpbuf *f, const void *p, size_t n)
{
	if (f->n + n > sizeof(f->b)) {
		fp_flush(f);
		if (n > sizeof(f->b)) {
			XXH3_64bits_update(f->st, p, n);
			return;
		}
	}
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

static void fp_word(struct fpbuf *f, uint64_t v)
{
	fp_bytes(f, &v, sizeof(v));
}

/* Fingerprint of what a source's map was computed from (its first @n stacks, dictionary prefixes). */
static uint64_t xc_fingerprint(const struct store_stack_node *stacks, const struct xc_src *e)
{
	const struct model_profile *d = e->dict;
	struct fpbuf *f = xmalloc(sizeof(*f)); /* 16 KiB: not on a thread's stack */
	uint64_t h;

	f->st = XXH3_createState();
	f->n = 0;
	PROF_ASSERT(f->st);
	XXH3_64bits_reset(f->st);
	XXH3_64bits_update(f->st, stacks, e->n * sizeof(*stacks));
	for (size_t i = 0; i < e->nlocs; i++) {
		const struct model_location *l = &d->locations.v[i];

		fp_word(f, l->mapping);
		fp_word(f, l->address);
		fp_word(f, (uint64_t)l->line_off << 32 | l->nlines);
		fp_word(f, (uint64_t)l->frame_type << 1 | l->is_folded);
	}
	for (size_t i = 0; i < e->nlines; i++) {
		fp_word(f, d->lines.v[i].function);
		fp_word(f, (uint64_t)d->lines.v[i].line);
	}
	for (size_t i = 0; i < e->nfuncs; i++) {
		const struct model_function *fn = &d->functions.v[i];

		fp_word(f, (uint64_t)fn->name << 32 | fn->system_name);
		fp_word(f, fn->filename);
		fp_word(f, (uint64_t)fn->start_line);
	}
	for (size_t i = 0; i < e->nmaps; i++)
		fp_word(f, (uint64_t)d->mappings.v[i].filename << 32 | d->mappings.v[i].build_id);
	for (size_t i = 0; i < e->nstrs; i++) {
		uint32_t len = d->strings.len[i];

		fp_bytes(f, &len, sizeof(len));
		fp_bytes(f, d->strings.s[i], len);
	}
	fp_flush(f);
	h = XXH3_64bits_digest(f->st);
	XXH3_freeState(f->st);
	free(f);
	return h;
}

static uint64_t xc_sym_gen(struct symbolizer *sym)
{
	struct symbolizer_stats st;

	if (!sym)
		return 0;
	symbolizer_get_stats(sym, &st);
	return st.invalidations + st.file_opens + st.store_hits + st.debuginfod_hits;
}

static void xc_drop_map(struct xc_src *e)
{
	xc.mapped -= e->n;
	free(e->node);
	e->node = NULL;
	e->n = 0;
	e->uses_sym = false;
	free(e->locrec);
	e->locrec = NULL;
	e->nlocrec = 0;
	VEC_FREE(&e->vstk);
	VEC_FREE(&e->vnames);
	e->vn = 0;
}

static void xc_reset(void)
{
	for (size_t i = 0; i < xc.src.n; i++)
		xc_drop_map(&xc.src.v[i]);
	xc.src.n = 0;
	xc.mapped = 0;
	qmap_release(&xc.lidx);
	VEC_FREE(&xc.lrec);
	VEC_FREE(&xc.lwords);
	VEC_FREE(&xc.var);
	qmap_release(&xc.var_idx);
	free(xc.name_var);
	xc.name_var = NULL;
	xc.nname_var = 0;
	xc.nmulti = 0;
	xc.var_gen++;
	/* Sets built earlier may still read the names: the pin takes the bytes. */
	xc.pin->chunks = xc.trie.names.chunk;
	xc.trie.names.chunk = NULL;
	pin_put(xc.pin);
	xc.pin = pin_new();
	query_stackset_release(&xc.trie);
	query_stackset_init(&xc.trie);
	xc.epoch++;
	xc.stats.resets++;
}

/* Evict least recently used maps (never @keep) until @need more ids fit; false if they cannot. */
static bool xc_make_room(size_t need, const struct xc_src *keep)
{
	while (xc.mapped + need > XC_MAX_MAPPED) {
		struct xc_src *lru = NULL;

		for (size_t i = 0; i < xc.src.n; i++) {
			struct xc_src *e = &xc.src.v[i];

			if (e != keep && e->n && (!lru || e->used < lru->used))
				lru = e;
		}
		if (!lru)
			return false;
		xc_drop_map(lru);
	}
	return true;
}

/*
 * The location cache. Each source (block, head) has its own dictionary,
 * so the same code address or function comes with other ids in every
 * block, and translating a block means naming each of its locations
 * again: for a month of day blocks of one fleet, the same few hundred
 * thousand locations thirty times. So the trie's translations are also
 * kept by content: a location's key is what its frames are made of,
 * with strings as trie name ids (the mapping's path and build ID, the
 * location's frame type; then
 * either the address, for a location without lines, or per line its
 * function name, file and line as srcloc_note takes them), and a source
 * finds a location it has not seen through one hash of its key (checked
 * word for word: a colliding key is translated directly) instead of
 * formatting and interning its names. A record made through the
 * symbolizer is used again only while that symbolizer's generation is
 * the one it saw. Emptied with the trie.
 */
#define XC_LOCAL     0x80000000u /* xc_memo.loc: an offset in the xlator's own frames */
#define XC_MAX_LOCS  ((size_t)16 << 20)
#define XC_MAX_LINES 64 /* longer inline chains are not keyed */

/* Per source, while it is translated: its dictionary ids -> trie name ids. */
struct xc_memo {
	uint32_t *map_path, *map_bid; /* [mappings]: path id + 1, build ID id */
	uint32_t *fn_name,
		*fn_file; /* [functions]: name id + 1 (UINT32_MAX: not keyable), file id */
	uint32_t *loc;	  /* [locations]: frame record offset + 1 (| XC_LOCAL) */
	VEC(uint32_t) key;
};

static void xc_memo_init(struct xc_memo *m, const struct model_profile *d)
{
	memset(m, 0, sizeof(*m));
	m->map_path = xcalloc(d->mappings.n + 1, sizeof(uint32_t));
	m->map_bid = xcalloc(d->mappings.n + 1, sizeof(uint32_t));
	m->fn_name = xcalloc(d->functions.n + 1, sizeof(uint32_t));
	m->fn_file = xcalloc(d->functions.n + 1, sizeof(uint32_t));
	m->loc = xcalloc(d->locations.n + 1, sizeof(uint32_t));
}

static void xc_memo_release(struct xc_memo *m)
{
	free(m->map_path);
	free(m->map_bid);
	free(m->fn_name);
	free(m->fn_file);
	free(m->loc);
	VEC_FREE(&m->key);
}

static uint32_t trie_name(const char *s, size_t n)
{
	return strtab_intern(&xc.trie.names, s, n);
}

/* xc.name_var of a name met with more than one variant. */
#define XC_MULTI UINT32_MAX

static bool xc_is_multi(uint32_t name)
{
	return name < xc.nname_var && xc.name_var[name] == XC_MULTI;
}

/*
 * The variant id of source-location record @r (names of the trie; 0 when
 * it knows nothing), the same id for equal records, and @name's variant
 * state updated: the first variant it meets, or XC_MULTI from its second
 * on (xc.var_gen moves then). Called with xc.mu held.
 */
static uint32_t xc_variant(uint32_t name, const struct query_ss_srcloc *r)
{
	uint32_t v = 0;

	if (!xc.var.n) {
		struct query_ss_srcloc none = { 0 };

		VEC_PUSH(&xc.var, none);
	}
	if (r->file || r->build_id || r->mapping || r->frame_type) {
		uint64_t h = XXH3_64bits(r, sizeof(*r));

		for (;; h++) { /* probe on past records of another content with this hash */
			v = qmap_get(&xc.var_idx, h);
			if (v == QMAP_NONE) {
				VEC_PUSH(&xc.var, *r);
				v = (uint32_t)xc.var.n - 1;
				qmap_put(&xc.var_idx, h, v);
				break;
			}
			if (!memcmp(&xc.var.v[v], r, sizeof(*r)))
				break;
		}
	}
	if (name >= xc.nname_var) {
		size_t want = PROF_MAX((size_t)name + 1, PROF_MAX(xc.nname_var * 2, (size_t)1024));

		xc.name_var = xreallocarray(xc.name_var, want, sizeof(uint32_t));
		memset(xc.name_var + xc.nname_var, 0, (want - xc.nname_var) * sizeof(uint32_t));
		xc.nname_var = want;
	}
	uint32_t *st = &xc.name_var[name];
	if (!*st) {
		*st = v + 1;
	} else if (*st != XC_MULTI && *st != v + 1) {
		*st = XC_MULTI;
		xc.nmulti++;
		xc.var_gen++;
	}
	return v;
}

/* The key of location @loc into m->key; false when it has none (translated directly). */
static bool xc_location_key(struct xc_memo *m, const struct model_profile *d, uint32_t loc)
{
	const struct model_location *l = &d->locations.v[loc];
	uint32_t path = 0, bid = 0;

	m->key.n = 0;
	if (l->nlines > XC_MAX_LINES)
		return false;
	if (l->mapping) {
		if (!m->map_path[l->mapping]) {
			const struct model_mapping *mp = &d->mappings.v[l->mapping];
			const char *ps = model_str(d, mp->filename),
				   *bs = model_str(d, mp->build_id);

			m->map_path[l->mapping] = trie_name(ps, strlen(ps)) + 1;
			m->map_bid[l->mapping] = trie_name(bs, strlen(bs));
		}
		path = m->map_path[l->mapping] - 1;
		bid = m->map_bid[l->mapping];
	}
	uint32_t ftype = l->frame_type ? trie_name(model_str(d, l->frame_type),
						   d->strings.len[l->frame_type])
				       : 0;
	VEC_RESERVE(&m->key, 9 + 4 * (size_t)l->nlines);
	uint32_t *k = m->key.v;
	size_t n = 0;
	k[n++] = path;
	k[n++] = bid;
	k[n++] = ftype;
	k[n++] = l->nlines;
	if (!l->nlines) {
		/* Where the mapping was loaded decides the file offset it is symbolized at. */
		struct symbolizer_mapping sm = { 0 };
		uint64_t off, delta = 0;
		bool mapped = false;

		if (l->mapping) {
			const struct model_mapping *mp = &d->mappings.v[l->mapping];

			sm = (struct symbolizer_mapping){ mp->memory_start, mp->memory_limit,
							  mp->file_offset };
			mapped = symbolizer_mapping_offset(&sm, l->address, &off);
			delta = mapped ? sm.start - sm.offset : 0;
		}
		k[n++] = (uint32_t)l->address;
		k[n++] = (uint32_t)(l->address >> 32);
		k[n++] = mapped;
		k[n++] = (uint32_t)delta;
		k[n++] = (uint32_t)(delta >> 32);
	}
	for (uint32_t j = 0; j < l->nlines; j++) {
		const struct model_line *ln = &d->lines.v[l->line_off + j];
		const struct model_function *f = &d->functions.v[ln->function];

		if (!ln->function)
			return false; /* named by the location's fallback: not keyed */
		if (!m->fn_name[ln->function]) {
			uint32_t sid = f->name ? f->name : f->system_name;
			const char *file = model_str(d, f->filename);

			if (!sid) {
				m->fn_name[ln->function] = UINT32_MAX;
			} else {
				m->fn_name[ln->function] =
					trie_name(model_str(d, sid), d->strings.len[sid]) + 1;
				m->fn_file[ln->function] = trie_name(file, strlen(file));
			}
		}
		if (m->fn_name[ln->function] == UINT32_MAX)
			return false;
		int64_t line = f->start_line > 0 ? f->start_line : ln->line;

		k[n++] = m->fn_name[ln->function] - 1;
		k[n++] = m->fn_file[ln->function];
		k[n++] = (uint32_t)line;
		k[n++] = (uint32_t)((uint64_t)line >> 32);
	}
	m->key.n = n;
	return true;
}

/*
 * Frame record ([n, name, flags, ...], see xlator) of location @loc of
 * the source being translated by @x into the trie: from the location
 * cache, else translated by @x (and kept when keyed). A cached record is
 * followed by two words, *@last: the trie node it was last applied under
 * (UINT32_MAX: none yet) and the node that gave, so a location met again
 * under the same caller (the next block of the same program) costs no
 * trie lookup; *@last is NULL for a record of @x's own. Sets x->used_sym
 * when the record depends on the symbolizer. The pointers are valid until
 * the next call. Called with xc.mu held.
 */
static const uint32_t *xc_location(struct xlator *x, struct xc_memo *m, uint32_t loc, uint64_t gen,
				   uint32_t **last)
{
	uint32_t r = m->loc[loc];

	*last = NULL;
	if (r && (r & XC_LOCAL))
		return &x->frames.v[(r & ~XC_LOCAL) - 1];
	if (r) {
		uint32_t *fr = &xc.lwords.v[r - 1];

		*last = fr + 1 + 2 * fr[0];
		return fr;
	}
	bool keyed = xc.lrec.n < XC_MAX_LOCS && xc_location_key(m, x->dict, loc);
	uint64_t h = keyed ? XXH3_64bits(m->key.v, m->key.n * sizeof(uint32_t)) : 0;
	uint32_t li = keyed ? qmap_get(&xc.lidx, h) : QMAP_NONE;

	if (li != QMAP_NONE) {
		const struct xc_loc *c = &xc.lrec.v[li];

		if (c->klen != m->key.n ||
		    memcmp(&xc.lwords.v[c->key], m->key.v, m->key.n * sizeof(uint32_t))) {
			keyed = false; /* another key with the same hash */
		} else if (!c->used_sym || (c->sym == x->sym && c->sym_gen == gen)) {
			uint32_t *fr = &xc.lwords.v[c->frames];

			x->used_sym |= c->used_sym;
			xc.stats.loc_hits++;
			m->loc[loc] = c->frames + 1;
			*last = fr + 1 + 2 * fr[0];
			return fr;
		}
	}
	bool was = x->used_sym;
	x->used_sym = false;
	uint32_t off = xlator_location(x, loc);
	bool used = x->used_sym;
	x->used_sym |= was;
	if (!keyed) {
		PROF_ASSERT(off + 1 < XC_LOCAL);
		m->loc[loc] = (off + 1) | XC_LOCAL;
		return &x->frames.v[off];
	}
	uint32_t nf = x->frames.v[off];
	PROF_ASSERT(xc.lwords.n + m->key.n + 2 * nf + 3 < XC_LOCAL);
	struct xc_loc c = { (uint32_t)xc.lwords.n, (uint32_t)m->key.n, 0, used, x->sym, gen };

	if (li == QMAP_NONE) {
		VEC_RESERVE(&xc.lwords, m->key.n);
		memcpy(xc.lwords.v + xc.lwords.n, m->key.v, m->key.n * sizeof(uint32_t));
		xc.lwords.n += m->key.n;
	} else {
		c.key = xc.lrec.v[li].key; /* a stale record: the same key, new frames */
	}
	c.frames = (uint32_t)xc.lwords.n;
	VEC_RESERVE(&xc.lwords, 3 + 2 * (size_t)nf);
	memcpy(xc.lwords.v + xc.lwords.n, x->frames.v + off,
	       (1 + 2 * (size_t)nf) * sizeof(uint32_t));
	xc.lwords.n += 1 + 2 * (size_t)nf;
	xc.lwords.v[xc.lwords.n++] = UINT32_MAX; /* *last: applied under no node yet */
	xc.lwords.v[xc.lwords.n++] = 0;
	x->frames.n = off; /* the copy is the record now (m->loc answers @loc from here on) */
	if (li == QMAP_NONE) {
		VEC_PUSH(&xc.lrec, c);
		qmap_put(&xc.lidx, h, (uint32_t)xc.lrec.n - 1);
	} else {
		xc.lrec.v[li] = c;
	}
	m->loc[loc] = c.frames + 1;
	*last = &xc.lwords.v[c.frames + 1 + 2 * nf];
	return &xc.lwords.v[c.frames];
}

/*
 * Before a source's stacks are translated: find its locations in the
 * location cache in batches, so that the memory reads of one batch
 * (hash slot, record, key words) overlap instead of waiting one by one;
 * m->loc gets the records found (the rest xc_location translates).
 * Called with xc.mu held.
 */
static void xc_prefill(struct xlator *x, struct xc_memo *m, uint64_t gen)
{
	enum { BATCH = 64 };
	const struct model_profile *d = x->dict;
	VEC(uint32_t) keys = { 0 };
	uint64_t h[BATCH];
	uint32_t koff[BATCH], klen[BATCH], li[BATCH];

	for (size_t base = 0; base < d->locations.n; base += BATCH) {
		size_t n = PROF_MIN((size_t)BATCH, d->locations.n - base);

		keys.n = 0;
		for (size_t i = 0; i < n; i++) {
			li[i] = QMAP_NONE;
			klen[i] = 0;
			if (m->loc[base + i] || !xc_location_key(m, d, (uint32_t)(base + i)))
				continue;
			koff[i] = (uint32_t)keys.n;
			klen[i] = (uint32_t)m->key.n;
			VEC_RESERVE(&keys, m->key.n);
			memcpy(keys.v + keys.n, m->key.v, m->key.n * sizeof(uint32_t));
			keys.n += m->key.n;
			h[i] = XXH3_64bits(m->key.v, m->key.n * sizeof(uint32_t));
			__builtin_prefetch(&xc.lidx.slots[qmap_hash(h[i]) & (xc.lidx.nslots - 1)]);
		}
		for (size_t i = 0; i < n; i++) {
			if (klen[i])
				li[i] = qmap_get(&xc.lidx, h[i]);
			if (li[i] != QMAP_NONE)
				__builtin_prefetch(&xc.lrec.v[li[i]]);
		}
		for (size_t i = 0; i < n; i++)
			if (li[i] != QMAP_NONE)
				__builtin_prefetch(&xc.lwords.v[xc.lrec.v[li[i]].key]);
		for (size_t i = 0; i < n; i++) {
			if (li[i] == QMAP_NONE)
				continue;
			const struct xc_loc *c = &xc.lrec.v[li[i]];

			if (c->klen != klen[i] ||
			    memcmp(&xc.lwords.v[c->key], keys.v + koff[i],
				   klen[i] * sizeof(uint32_t)) ||
			    (c->used_sym && (c->sym != x->sym || c->sym_gen != gen)))
				continue; /* xc_location sorts it out */
			x->used_sym |= c->used_sym;
			xc.stats.loc_hits++;
			m->loc[base + i] = c->frames + 1;
		}
	}
	VEC_FREE(&keys);
}

/*
 * Keep @m's location -> frame record map in @e (the query reads the
 * frames' variants through it, xc_variant_stacks; a grown head starts
 * from it), the records of @x's own first copied to lwords (unindexed,
 * with the two words xc_location expects after a record). Called with
 * xc.mu held.
 */
static void xc_keep_locations(struct xc_src *e, struct xlator *x, struct xc_memo *m, size_t nlocs)
{
	for (size_t l = 0; l < nlocs; l++) {
		uint32_t r = m->loc[l];

		if (!(r & XC_LOCAL))
			continue;
		const uint32_t *fr = &x->frames.v[(r & ~XC_LOCAL) - 1];
		size_t words = 1 + 2 * (size_t)fr[0];

		PROF_ASSERT(xc.lwords.n + words + 2 < XC_LOCAL);
		VEC_RESERVE(&xc.lwords, words + 2);
		m->loc[l] = (uint32_t)xc.lwords.n + 1;
		memcpy(xc.lwords.v + xc.lwords.n, fr, words * sizeof(uint32_t));
		xc.lwords.n += words;
		xc.lwords.v[xc.lwords.n++] = UINT32_MAX;
		xc.lwords.v[xc.lwords.n++] = 0;
	}
	free(e->locrec);
	e->locrec = m->loc;
	e->nlocrec = nlocs;
	m->loc = NULL;
}

/*
 * e->vstk for the names at XC_MULTI now: the stacks of @src (ascending)
 * whose location has a frame of such a name, and e->vnames those names.
 * Remade when a name got there or the source grew. Called with xc.mu
 * held.
 */
static void xc_variant_stacks(struct xc_src *e, const struct store_source *src)
{
	if (e->vgen == xc.var_gen && e->vn == e->n)
		return;
	uint8_t *multi = query_scratch_take(e->nlocrec + 1, 1, true);
	uint8_t *seen = query_scratch_take(xc.nname_var + 1, 1, true);

	e->vnames.n = 0;
	for (size_t l = 0; l < e->nlocrec; l++) {
		const uint32_t *fr = e->locrec[l] ? &xc.lwords.v[e->locrec[l] - 1] : NULL;

		for (uint32_t f = 0; fr && f < fr[0]; f++) {
			uint32_t nm = fr[1 + 2 * f];

			if (!xc_is_multi(nm))
				continue;
			multi[l] = 1;
			if (!seen[nm]) {
				seen[nm] = 1;
				VEC_PUSH(&e->vnames, nm);
			}
		}
	}
	e->vstk.n = 0;
	for (size_t s = 1; s < e->n; s++)
		if (src->stacks[s].loc < e->nlocrec && multi[src->stacks[s].loc])
			VEC_PUSH(&e->vstk, (uint32_t)s);
	query_scratch_give(seen);
	query_scratch_give(multi);
	e->vgen = xc.var_gen;
	e->vn = e->n;
}

/* xc_source's mark of a stack not yet mapped (no trie node has this id: XC_MAX_NODES). */
#define XC_UNRESOLVED UINT32_MAX

/*
 * The first pass of xc_source over stacks [@from, src->nstacks): map each
 * stack whose whole path is in the trie already to its node in @node, the
 * others to XC_UNRESOLVED (the second pass maps those in stack order,
 * creating nodes as a single pass would: the trie comes out the same).
 * The locations are translated first, in stack order (the names and the
 * location cache then come out the same too). Then lookups only, a level
 * of depth at a time: a stack's parent is mapped before it, and within a
 * level the lookups do not depend on each other, so they are prefetched
 * ahead in four stages XC_AHEAD stacks apart (each stage's address needs
 * what the stage before brought in): the stack node, then its location's
 * record index and its parent's node, then the frame record, then the
 * trie's hash slot. The reads of a level then overlap instead of each
 * waiting on its cache miss: one source of a fleet has 861 k stacks and
 * a level's stacks lie tens of entries apart, so each of those reads
 * misses (with the slot alone prefetched, computing its address stalled
 * on the three reads before it: 2/3 of a cold 24 h query).
 */
#define XC_AHEAD 16
static void xc_resolve(struct xlator *x, struct xc_memo *m, const struct store_source *src,
		       size_t from, uint64_t gen, uint32_t *node)
{
	size_t n = src->nstacks, maxd = 0;
	uint32_t *depth = query_scratch_take(n + 1, sizeof(uint32_t), false);
	const struct qmap *ci;

	if (xc.trie.child_idx_stale)
		child_idx_rebuild(&xc.trie);
	ci = &xc.trie.child_idx;
	depth[0] = 0;
	for (size_t s = 1; s < from; s++)
		depth[s] = 0; /* mapped already: not visited */
	for (size_t s = from; s < n; s++) {
		uint32_t *last;

		PROF_ASSERT(src->stacks[s].parent < s && src->stacks[s].loc < x->dict->locations.n);
		(void)xc_location(x, m, src->stacks[s].loc, gen, &last);
		depth[s] = (src->stacks[s].parent < from ? 0 : depth[src->stacks[s].parent]) + 1;
		maxd = PROF_MAX(maxd, depth[s]);
	}
	/* Stacks by level (a counting sort on depth, stack order within a level). */
	uint32_t *off = query_scratch_take(maxd + 2, sizeof(uint32_t), true);
	uint32_t *order = query_scratch_take(n + 1, sizeof(uint32_t), false);
	size_t norder = n - from;
	for (size_t s = from; s < n; s++)
		off[depth[s]]++;
	for (size_t d = 0, sum = 0; d <= maxd; d++) {
		size_t c = off[d];

		off[d] = (uint32_t)sum;
		sum += c;
	}
	for (size_t s = from; s < n; s++)
		order[off[depth[s]]++] = (uint32_t)s;
	query_scratch_give(off);
	query_scratch_give(depth);

	for (size_t j = 0; j < norder; j++) {
		if (j + 4 * XC_AHEAD < norder)
			__builtin_prefetch(&src->stacks[order[j + 4 * XC_AHEAD]]);
		if (j + 3 * XC_AHEAD < norder) {
			const struct store_stack_node *a = &src->stacks[order[j + 3 * XC_AHEAD]];

			__builtin_prefetch(&m->loc[a->loc]);
			__builtin_prefetch(&node[a->parent]);
		}
		if (j + 2 * XC_AHEAD < norder) {
			uint32_t r = m->loc[src->stacks[order[j + 2 * XC_AHEAD]].loc];

			if (r && !(r & XC_LOCAL))
				__builtin_prefetch(&xc.lwords.v[r - 1]);
		}
		if (j + XC_AHEAD < norder && ci->nslots) {
			const struct store_stack_node *a = &src->stacks[order[j + XC_AHEAD]];
			uint32_t r = m->loc[a->loc], pat = node[a->parent];

			if (pat != XC_UNRESOLVED && !(r & XC_LOCAL)) {
				uint64_t key = (uint64_t)pat << 32 | xc.lwords.v[r - 1 + 1];

				if (xc.lwords.v[r - 1])
					__builtin_prefetch(
						&ci->slots[qmap_hash(key) & (ci->nslots - 1)]);
			}
		}
		uint32_t s = order[j], r = m->loc[src->stacks[s].loc];
		uint32_t at = node[src->stacks[s].parent];
		const uint32_t *fr =
			r & XC_LOCAL ? &x->frames.v[(r & ~XC_LOCAL) - 1] : &xc.lwords.v[r - 1];

		if (at != XC_UNRESOLVED && !(r & XC_LOCAL)) {
			const uint32_t *last = fr + 1 + 2 * fr[0];

			if (last[0] == at) {
				node[s] = last[1];
				continue;
			}
		}
		for (uint32_t f = 0; f < fr[0] && at != XC_UNRESOLVED; f++) {
			uint32_t id = qmap_get(ci, (uint64_t)at << 32 | fr[1 + 2 * f]);

			at = id == QMAP_NONE ? XC_UNRESOLVED : id;
		}
		node[s] = at;
	}
	query_scratch_give(order);
}

/*
 * The map of @src, valid and covering all its stacks, translating what is
 * missing; NULL when it cannot be cached (too big). May empty the trie
 * (xc.epoch moves). Called with xc.mu held.
 */
static struct xc_src *xc_source(const struct store_source *src, struct symbolizer *sym)
{
	const struct model_profile *d = src->dict;
	uint64_t gen = xc_sym_gen(sym);
	struct xc_src *e = NULL;
	struct query_stackset_params np = { 0 };
	struct xlator x;
	struct xc_memo memo;

	if (!xc.ready) {
		query_stackset_init(&xc.trie);
		xc.pin = pin_new();
		xc.ready = true;
	}
	if (src->nstacks > XC_MAX_MAPPED || src->nstacks > XC_MAX_NODES)
		return NULL;
	for (size_t i = 0; i < xc.src.n && !e; i++) {
		struct xc_src *c = &xc.src.v[i];

		if (c->id == src->id && c->is_head == src->is_head && c->dict == d)
			e = c;
	}
	if (e && e->n) {
		bool ok = e->sym == sym && (!e->uses_sym || e->sym_gen == gen) &&
			  e->n <= src->nstacks && e->nlocs <= d->locations.n &&
			  e->nlines <= d->lines.n && e->nfuncs <= d->functions.n &&
			  e->nmaps <= d->mappings.n && e->nstrs <= d->strings.n &&
			  xc_fingerprint(src->stacks, e) == e->fp;

		if (!ok)
			xc_drop_map(e);
	}
	if (!e) {
		if (xc.src.n >= XC_MAX_SOURCES) {
			size_t lru = 0;

			for (size_t i = 1; i < xc.src.n; i++)
				if (xc.src.v[i].used < xc.src.v[lru].used)
					lru = i;
			xc_drop_map(&xc.src.v[lru]);
			xc.src.v[lru] = xc.src.v[--xc.src.n];
		}
		struct xc_src z = { 0 };
		z.id = src->id;
		z.is_head = src->is_head;
		z.dict = d;
		VEC_PUSH(&xc.src, z);
		e = &xc.src.v[xc.src.n - 1];
	}
	e->used = ++xc.clock;
	if (e->n == src->nstacks && e->n) {
		xc.stats.hits++;
		return e;
	}
	xc.stats.misses++;
	size_t from = e->n ? e->n : 1, add = src->nstacks - e->n;
	if (!xc_make_room(add, e))
		return NULL;
	if (xc.trie.nodes.n + add > XC_MAX_NODES) {
		uint64_t id = e->id;
		bool head = e->is_head;

		xc_reset();
		struct xc_src z = { 0 };
		z.id = id;
		z.is_head = head;
		z.dict = d;
		z.used = ++xc.clock;
		VEC_PUSH(&xc.src, z);
		e = &xc.src.v[0];
		from = 1;
		add = src->nstacks;
	}
	if (!e->n)
		e->sym_gen = gen;
	e->sym = sym;
	e->node = xrealloc(e->node, (src->nstacks + 1) * sizeof(uint32_t));
	e->node[0] = 0;
	np.sym = sym;
	xlator_init(&x, &xc.trie, d, &np);
	x.once = true;
	x.trie = true;
	xc_memo_init(&memo, d);
	if (e->n && e->locrec) /* a head grown: its locations so far are translated */
		memcpy(memo.loc, e->locrec,
		       PROF_MIN(e->nlocrec, d->locations.n) * sizeof(uint32_t));
	if (from == 1 && xc.lrec.n)
		xc_prefill(&x, &memo, gen);
	qmap_reserve(&xc.trie.child_idx, xc.trie.nodes.n + add);
	if (xc.trie.nodes.n > 1) {
		xc_resolve(&x, &memo, src, from, gen, e->node);
	} else { /* an empty trie: nothing to look up */
		for (size_t s = from; s < src->nstacks; s++)
			e->node[s] = XC_UNRESOLVED;
	}
	for (size_t s = from; s < src->nstacks; s++) {
		uint32_t p = src->stacks[s].parent, at = e->node[p];

		if (e->node[s] != XC_UNRESOLVED)
			continue;
		PROF_ASSERT(p < s && src->stacks[s].loc < d->locations.n);
		uint32_t *last;
		const uint32_t *fr = xc_location(&x, &memo, src->stacks[s].loc, gen, &last);

		if (last && last[0] == at) {
			e->node[s] = last[1];
			continue;
		}
		uint32_t under = at;
		/* No frame filter here: every frame is a trie level (xlator_apply's loop). */
		for (uint32_t f = 0; f < fr[0]; f++)
			at = query_stackset_child(&xc.trie, at, fr[1 + 2 * f]);
		if (last) {
			last[0] = under;
			last[1] = at;
		}
		e->node[s] = at;
	}
	e->uses_sym |= x.used_sym;
	xc_keep_locations(e, &x, &memo, d->locations.n);
	xc_memo_release(&memo);
	xlator_release(&x);
	xc.mapped += src->nstacks - e->n;
	e->n = src->nstacks;
	e->nlocs = d->locations.n;
	e->nlines = d->lines.n;
	e->nfuncs = d->functions.n;
	e->nmaps = d->mappings.n;
	e->nstrs = d->strings.n;
	e->fp = xc_fingerprint(src->stacks, e);
	/* Lookups of this translation may have opened files: the generation they saw. */
	if (e->uses_sym && xc_sym_gen(sym) != gen)
		e->sym_gen = gen;
	return e;
}

void query_stackset_cache_stats(struct query_ss_cache_stats *st)
{
	pthread_mutex_lock(&xc.mu);
	*st = xc.stats;
	st->nodes = xc.ready ? xc.trie.nodes.n : 0;
	st->mapped = xc.mapped;
	st->locs = xc.lrec.n;
	pthread_mutex_unlock(&xc.mu);
}

void query_stackset_cache_clear(void)
{
	pthread_mutex_lock(&xc.mu);
	if (xc.ready)
		xc_reset();
	pthread_mutex_unlock(&xc.mu);
}

/* One touched trie node of a cached query: per side, summed values and rows. */
struct qacc {
	uint32_t node;
	int64_t value[2];
	uint64_t count[2];
};

/*
 * Name @name of @from as a name of @to (interned; @memo[name] caches id +
 * 1), with its raw-frame and source-location records.
 */
static uint32_t copy_name(struct query_stackset *to, const struct query_stackset *from,
			  uint32_t *memo, uint32_t name)
{
	if (memo[name])
		return memo[name] - 1;
	uint32_t id = query_stackset_name(to, from->names.s[name], from->names.len[name]);
	memo[name] = id + 1;

	const struct query_ss_raw *r = query_stackset_raw(from, name);
	if (r && !of_get(to->raw_of, to->nraw_of, id)) {
		struct query_ss_raw nr = { r->address, 0, 0 };

		if (r->mapping)
			nr.mapping = copy_name(to, from, memo, r->mapping);
		nr.fn_name = copy_name(to, from, memo, r->fn_name);
		VEC_PUSH(&to->raw, nr);
		of_put(&to->raw_of, &to->nraw_of, id, (uint32_t)to->raw.n);
		to->unsymbolized++;
	}
	const struct query_ss_srcloc *sl = query_stackset_srcloc(from, name);
	if (sl && !of_get(to->src_of, to->nsrc_of, id)) {
		struct query_ss_srcloc n = *sl;

		n.file = sl->file ? copy_name(to, from, memo, sl->file) : 0;
		n.build_id = sl->build_id ? copy_name(to, from, memo, sl->build_id) : 0;
		n.mapping = sl->mapping ? copy_name(to, from, memo, sl->mapping) : 0;
		n.frame_type = sl->frame_type ? copy_name(to, from, memo, sl->frame_type) : 0;
		VEC_PUSH(&to->srcs, n);
		of_put(&to->src_of, &to->nsrc_of, id, (uint32_t)to->srcs.n);
	}
	return id;
}

/*
 * Give @ss (an empty set) the trie's names with the same ids, without
 * interning them again: its own copies of the id -> string and length
 * arrays and of the hash index, pointing into the trie's string chunks,
 * which the pin keeps alive; names @ss interns later go to chunks of its
 * own (struct strtab: chunk is NULL here, so its release frees only
 * those). Called with xc.mu held.
 */
static void *memdup_n(const void *p, size_t n)
{
	void *q = xmalloc(n ? n : 1);

	if (n)
		memcpy(q, p, n);
	return q;
}

static void xc_share_names(struct query_stackset *ss)
{
	const struct strtab *t = &xc.trie.names;
	struct strtab *n = &ss->names;

	strtab_release(n);
	n->n = n->cap = t->n;
	n->s = memdup_n(t->s, t->n * sizeof(*t->s));
	n->len = memdup_n(t->len, t->n * sizeof(*t->len));
	n->nslots = t->nslots;
	n->slots = memdup_n(t->slots, t->nslots * sizeof(*t->slots));
	ss->pin = pin_get(xc.pin);
}

/*
 * The raw-frame and source-location records of the names @ss's nodes
 * use, from the trie (ids are shared), with the names those records name
 * in turn (what copy_name does name by name); each raw record counts as
 * an unsymbolized frame. A name's source location is its one variant, or
 * for a name of several what the query picked, @qvar[name] (@nqvar ids;
 * 0 = none). Called with xc.mu held.
 */
static void xc_copy_records(struct query_stackset *ss, const uint32_t *qvar, size_t nqvar)
{
	const struct query_stackset *t = &xc.trie;
	uint8_t *seen = xcalloc(t->names.n + 1, 1);
	VEC(uint32_t) work = { 0 };

	if (!t->raw.n && xc.var.n <= 1)
		goto out;
	for (size_t i = 1; i < ss->nodes.n; i++) {
		uint32_t nm = ss->nodes.v[i].name;

		if (!seen[nm]) {
			seen[nm] = 1;
			VEC_PUSH(&work, nm);
		}
	}
	while (work.n) {
		uint32_t nm = work.v[--work.n], next[6];
		size_t nnext = 0;
		const struct query_ss_raw *r = query_stackset_raw(t, nm);
		uint32_t st = nm < xc.nname_var ? xc.name_var[nm] : 0;
		uint32_t v = st == XC_MULTI ? (nm < nqvar ? qvar[nm] : 0) : st ? st - 1 : 0;
		const struct query_ss_srcloc *sl = v ? &xc.var.v[v] : NULL;

		if (r) {
			VEC_PUSH(&ss->raw, *r);
			of_put(&ss->raw_of, &ss->nraw_of, nm, (uint32_t)ss->raw.n);
			ss->unsymbolized++;
			next[nnext++] = r->mapping;
			next[nnext++] = r->fn_name;
		}
		if (sl) {
			VEC_PUSH(&ss->srcs, *sl);
			of_put(&ss->src_of, &ss->nsrc_of, nm, (uint32_t)ss->srcs.n);
			next[nnext++] = sl->file;
			next[nnext++] = sl->build_id;
			next[nnext++] = sl->mapping;
			next[nnext++] = sl->frame_type;
		}
		for (size_t k = 0; k < nnext; k++) {
			if (next[k] && !seen[next[k]]) {
				seen[next[k]] = 1;
				VEC_PUSH(&work, next[k]);
			}
		}
	}
out:
	VEC_FREE(&work);
	free(seen);
}

/*
 * Copy the touched trie nodes @acc[@n] and their ancestors into @ss (an
 * empty set) in trie id order, with their entries (side s in bucket s),
 * and apply the stack filter @f. Names are shared with the trie
 * (xc_share_names), so a node keeps its trie name id; @qvar[@nqvar] as
 * xc_copy_records. Called with xc.mu held.
 */
static int xc_extract(const struct qacc *acc, size_t n, bool pair, const struct query_filter *f,
		      const uint32_t *qvar, size_t nqvar, struct query_stackset *ss)
{
	const struct query_stackset *t = &xc.trie;
	if (xc.nex < t->nodes.n + 1) {
		size_t want = t->nodes.n + t->nodes.n / 4 + 1;

		xc.ex_newid = xreallocarray(xc.ex_newid, want, sizeof(uint32_t));
		xc.ex_mark = xrealloc(xc.ex_mark, want);
		memset(xc.ex_mark + xc.nex, 0, want - xc.nex);
		xc.nex = want;
	}
	uint32_t *newid = xc.ex_newid; /* read only where written below (0: the root) */
	uint8_t *mark = xc.ex_mark;    /* small: stays in cache */
	uint32_t hi = 0;
	size_t count = 1;

	/* Touched nodes, then their ancestors: one sweep down the ids (parent < id). */
	for (size_t i = 0; i < n; i++) {
		mark[acc[i].node] = 1;
		hi = PROF_MAX(hi, acc[i].node);
	}
	for (uint32_t i = hi; i > 0; i--) {
		if (mark[i]) {
			mark[t->nodes.v[i].parent] = 1;
			count++;
		}
	}
	xc_share_names(ss);
	SS_VEC_RESERVE_SCRATCH(&ss->nodes, count);
	mark[0] = 0;
	newid[0] = 0;
	for (size_t i = 1; i <= hi; i++) {
		if (!mark[i])
			continue;
		mark[i] = 0; /* all zero again for the next query */
		const struct query_ss_node *tn = &t->nodes.v[i];
		struct query_ss_node nd;

		nd.parent = tn->parent ? newid[tn->parent] : 0;
		nd.name = tn->name;
		nd.depth = ss->nodes.v[nd.parent].depth + 1;
		newid[i] = (uint32_t)ss->nodes.n;
		ss->nodes.v[ss->nodes.n++] = nd;
	}
	ss->child_idx_stale = true;
	xc_copy_records(ss, qvar, nqvar);

	/* The stack filter: a node matches when a frame on its path does (parents first). */
	uint8_t *match = NULL;
	if (query_filter_has_stack(f)) {
		uint8_t *nmatch =
			query_scratch_take(ss->names.n + 1, 1, true); /* 0 unknown, 1 no, 2 yes */

		match = query_scratch_take(ss->nodes.n + 1, 1, true);
		for (size_t i = 1; i < ss->nodes.n; i++) {
			uint32_t nm = ss->nodes.v[i].name;

			if (!nmatch[nm])
				nmatch[nm] = query_filter_stack_match(f, ss->names.s[nm],
								      ss->names.len[nm])
						     ? 2
						     : 1;
			match[i] = match[ss->nodes.v[i].parent] || nmatch[nm] == 2;
		}
		query_scratch_give(nmatch);
	}
	size_t want = n * (pair ? 2 : 1);
	if (ss->max_entries && want > ss->max_entries) {
		query_scratch_give(match);
		return -PROF_ETOOBIG;
	}
	SS_VEC_RESERVE_SCRATCH(&ss->entries, want);
	for (size_t i = 0; i < n; i++) {
		uint32_t node = newid[acc[i].node];

		for (uint32_t side = 0; side < (pair ? 2u : 1u); side++) {
			if (!acc[i].count[side])
				continue;
			if (match && !match[node]) {
				ss->filtered_rows += acc[i].count[side];
				ss->filtered_value =
					prof_add_sat(ss->filtered_value, acc[i].value[side]);
				continue;
			}
			struct query_ss_entry e = { node,
						    0,
						    side,
						    0,
						    acc[i].value[side],
						    acc[i].count[side],
						    (double)acc[i].value[side] };
			ss->entries.v[ss->entries.n++] = e;
			ss->total = prof_add_sat(ss->total, e.value);
			ss->rows += e.count;
		}
	}
	/* Entries were placed without the index: query_stackset_add rebuilds it. */
	free(ss->entry_slots);
	ss->entry_slots = NULL;
	ss->entry_nslots = 0;
	query_scratch_give(match);
	return 0;
}

/* --- collecting from the store ---------------------------------------------------------- */

struct collector {
	struct query_stackset *ss;
	const struct query_stackset_params *p;
	bool filtering, gauge, keep;
	/* per source (the store's stack ids are the source's) */
	size_t nstacks;
	bool dense;
	int64_t *dval; /* dense: per source stack */
	uint64_t *dcnt;
	struct query_stackset raw;	      /* hash mode: entries keyed by source stack id */
	VEC(struct store_stack_total) totals; /* totals scan: what the store summed */
	size_t samples_from;		      /* first kept sample of this source */
	struct qmap local;		      /* source series id -> global series id */
	struct qmap attr_group;		      /* (series id << 32 | attribute set) -> group */
	/* whole scan */
	struct strtab series_keys; /* type '\0' labels: the global series ids */
	struct qmap series_group;  /* global series id -> group id */
	struct buf key;
	struct snaps snaps;
	size_t max_samples;
	bool over_entries, over_samples; /* the visitor stopped on a cap */
	int rc;				 /* error of a source_end step */
	/* the cached path (see "the translation cache") */
	bool cached, epoch_set, xc_lost;
	uint32_t side; /* 0, or 1 for side B of a pair */
	uint64_t epoch;
	uint32_t *qslot; /* [nqslot]: trie node -> index in qacc + 1, 0 = none yet */
	size_t nqslot;
	VEC(struct qacc) qacc;
	uint32_t *qvar; /* [nqvar]: trie name at XC_MULTI -> the variant picked, 0 = none */
	size_t nqvar;
	bool var_set, var_moved; /* var_gen seen; it moved since (the query runs again) */
	uint64_t var_gen;
};

/*
 * The same label set has a different series id in every source (each
 * block numbers its own series), so series are identified across sources
 * by their key: type, then name, value pairs, '\0'-separated.
 */
static uint32_t global_series(struct collector *c, const struct store_series *s)
{
	uint32_t g = qmap_get(&c->local, s->id);

	if (g != QMAP_NONE)
		return g;
	buf_reset(&c->key);
	buf_add(&c->key, s->type, strlen(s->type) + 1);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		buf_add(&c->key, s->labels[i].name, strlen(s->labels[i].name) + 1);
		buf_add(&c->key, s->labels[i].value, strlen(s->labels[i].value) + 1);
	}
	g = strtab_intern(&c->series_keys, c->key.p, c->key.len);
	qmap_put(&c->local, s->id, g);
	return g;
}

static uint32_t series_group(struct collector *c, const struct store_series *s)
{
	uint32_t gid = global_series(c, s);
	uint32_t g = qmap_get(&c->series_group, gid);

	if (g != QMAP_NONE)
		return g;
	const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
	for (size_t i = 0; i < c->ss->ngroup_by; i++) {
		/* service_name and service.name are one label (store/matcher.h) */
		const char *want = store_label_canonical(c->ss->group_by[i]);

		for (uint32_t j = 0; j < s->nlabels; j++)
			if (!vals[i] && !strcmp(store_label_canonical(s->labels[j].name), want))
				vals[i] = s->labels[j].value;
	}
	g = query_stackset_group(c->ss, vals);
	qmap_put(&c->series_group, gid, g);
	c->ss->series++;
	return g;
}

/*
 * The group of a row of series @s with attribute set @a (> 0) of @src:
 * group_by names the set has take its values, the others the series'
 * (per-sample attributes such as thread.name give flame chart lanes).
 */
static uint32_t row_group(struct collector *c, const struct store_source *src,
			  const struct store_series *s, uint32_t a, uint32_t series_g)
{
	uint64_t key = (uint64_t)s->id << 32 | a;
	uint32_t g = qmap_get(&c->attr_group, key);

	if (g != QMAP_NONE)
		return g;
	const struct store_attr_set *set = a < src->nattrs ? &src->attrs[a] : NULL;
	const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
	bool own = false;
	for (size_t i = 0; i < c->ss->ngroup_by; i++) {
		for (uint32_t j = 0; j < s->nlabels; j++)
			if (!strcmp(s->labels[j].name, c->ss->group_by[i]))
				vals[i] = s->labels[j].value;
		for (uint32_t j = 0; set && j < set->nlabels; j++)
			if (!strcmp(set->labels[j].name, c->ss->group_by[i])) {
				vals[i] = set->labels[j].value;
				own = true;
			}
	}
	g = own ? query_stackset_group(c->ss, vals) : series_g;
	qmap_put(&c->attr_group, key, g);
	return g;
}

static int snaps_begin(void *arg, const struct store_source *src)
{
	struct collector *c = arg;

	(void)src;
	qmap_release(&c->local);
	return 0;
}

static int scan_snaps(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_row *rows, size_t n)
{
	struct collector *c = arg;
	uint32_t gid = global_series(c, s);

	(void)src;
	for (size_t i = 0; i < n; i++)
		snaps_add(&c->snaps, gid, bucket_of(c->ss, rows[i].ts_ns), rows[i].ts_ns);
	return 0;
}

static int source_begin(void *arg, const struct store_source *src)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;

	qmap_release(&c->local);
	qmap_release(&c->attr_group);
	c->nstacks = src->nstacks;
	c->dense = !ss->ngroup_by && ss->nbuckets == 1 && c->nstacks <= ((size_t)8 << 20);
	if (!c->p->keep_samples)
		c->dense = false; /* the store sums (totals scan), or groups/steps: hash */
	if (c->dense) {
		c->dval = xcalloc(c->nstacks + 1, sizeof(int64_t));
		c->dcnt = xcalloc(c->nstacks + 1, sizeof(uint64_t));
	}
	query_stackset_release(&c->raw);
	query_stackset_init(&c->raw);
	c->raw.nbuckets = ss->nbuckets;
	c->raw.max_entries = ss->max_entries;
	c->totals.n = 0;
	c->samples_from = ss->samples.n;
	return 0;
}

static int scan_series(void *arg, const struct store_source *src, const struct store_series *s)
{
	(void)src;
	series_group(arg, s);
	return 0;
}

static int scan_totals(void *arg, const struct store_source *src, const struct store_stack_total *t,
		       size_t n, uint64_t nrows)
{
	struct collector *c = arg;

	(void)src;
	(void)nrows;
	SS_VEC_RESERVE_SCRATCH(&c->totals, n);
	memcpy(c->totals.v, t, sizeof(*t) * n);
	c->totals.n = n;
	return 0;
}

/*
 * scan_rows for a series of group @g whose rows all count at the root
 * (merge_stacks, cumulative, no per-row group): one entry add per run of
 * consecutive rows in one step bucket instead of one per row (a page of a
 * block is sorted by time, so a run is every row of the series in the
 * bucket: 760 rows per minute on the fleet of bench/bench_query.sh). The
 * sums are the same as the row by row adds: a run is summed only while
 * its values are >= 0 and their sum does not overflow (then saturating
 * adds of it and of its rows one by one agree); a row that breaks that
 * is added on its own. The gauge sum (only read for gauges, which do not
 * come here) gets the run's sum.
 */
static int add_runs(struct collector *c, uint32_t g, const struct store_row *rows, size_t n)
{
	struct query_stackset *ss = c->ss;
	int64_t step = ss->step_ns, lo = 0, hi = -1; /* the run's bucket: [lo, hi] */
	uint32_t b = 0;

	for (size_t i = 0; i < n;) {
		int64_t ts = rows[i].ts_ns, sum = 0;
		size_t j = i;

		if (ts < lo || ts > hi) {
			b = bucket_of(ss, ts);
			if (step > 0) {
				lo = (int64_t)((__int128)ss->from_ns + (__int128)b * step);
				hi = (int64_t)((__int128)lo + step - 1);
			} else {
				lo = INT64_MIN;
				hi = INT64_MAX;
			}
		}
		for (int64_t t;
		     j < n && rows[j].ts_ns >= lo && rows[j].ts_ns <= hi && rows[j].value >= 0 &&
		     !__builtin_add_overflow(sum, rows[j].value, &t);
		     j++)
			sum = t;
		if (j == i) {
			sum = rows[i].value; /* negative, or past the run's overflow: alone */
			j = i + 1;
		}
		if (query_stackset_add(&c->raw, 0, g, b, sum, j - i, (double)sum)) {
			c->over_entries = true;
			return 1;
		}
		i = j;
	}
	return 0;
}

/* The steps form of the same (blocks' pages summed per step; see add_runs). */
static int scan_steps(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_step_sum *v, size_t n)
{
	struct collector *c = arg;
	uint32_t g = series_group(c, s);

	(void)src;
	for (size_t i = 0; i < n; i++) {
		PROF_ASSERT(v[i].step < c->ss->nbuckets);
		if (query_stackset_add(&c->raw, 0, g, v[i].step, v[i].value, v[i].rows,
				       (double)v[i].value)) {
			c->over_entries = true;
			return 1;
		}
	}
	return 0;
}

static int scan_rows(void *arg, const struct store_source *src, const struct store_series *s,
		     const struct store_row *rows, size_t n)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;
	uint32_t g = series_group(c, s);
	uint32_t gid = global_series(c, s);
	bool per_row = ss->ngroup_by && src->nattrs > 1;

	if (c->p->keep_samples) {
		if (ss->samples.n + n > c->max_samples) {
			c->over_samples = true;
			return 1;
		}
		VEC_RESERVE(&ss->samples, n);
		for (size_t i = 0; i < n; i++) {
			uint32_t gr = per_row && rows[i].attrs
					      ? row_group(c, src, s, rows[i].attrs, g)
					      : g;
			struct query_ss_sample sm = { rows[i].ts_ns, rows[i].value, rows[i].stack,
						      gr };

			ss->samples.v[ss->samples.n++] = sm;
		}
	}
	if (c->dense) {
		for (size_t i = 0; i < n; i++) {
			uint32_t st = rows[i].stack;

			PROF_ASSERT(st < c->nstacks);
			c->dval[st] += rows[i].value;
			c->dcnt[st]++;
		}
		return 0;
	}
	if (c->p->merge_stacks && !c->gauge && !per_row && ss->cumulative)
		return add_runs(c, g, rows, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t b = bucket_of(ss, rows[i].ts_ns);
		double w = c->gauge ? snaps_weight(&c->snaps, gid, b) : 1.0;

		PROF_ASSERT(rows[i].stack < c->nstacks);
		uint32_t gr = per_row && rows[i].attrs ? row_group(c, src, s, rows[i].attrs, g) : g;
		if (query_stackset_add(&c->raw, c->p->merge_stacks ? 0 : rows[i].stack, gr, b,
				       rows[i].value, 1, (double)rows[i].value * w)) {
			c->over_entries = true;
			return 1;
		}
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct query_ss_sample *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/*
 * Store stack id -> trie node << 1 | stack-filter match. Dense (an array
 * over the source's stack ids, value + 1, 0 = absent) when the source's
 * tree is small enough that the array costs less than hashing the nodes
 * a query touches (a flame graph of an hour touches millions); else a
 * hash map.
 */
#define SMAP_DENSE_MAX ((size_t)32 << 20)

struct smap {
	uint32_t *dense; /* [nstacks] or NULL */
	struct qmap sparse;
};

static uint32_t smap_get(const struct smap *m, uint32_t s)
{
	if (m->dense)
		return m->dense[s] ? m->dense[s] - 1 : QMAP_NONE;
	return qmap_get(&m->sparse, s);
}

static void smap_put(struct smap *m, uint32_t s, uint32_t v)
{
	if (m->dense)
		m->dense[s] = v + 1;
	else
		qmap_put(&m->sparse, s, v);
}

static void smap_release(struct smap *m)
{
	free(m->dense);
	qmap_release(&m->sparse);
	memset(m, 0, sizeof(*m));
}

/*
 * Translate the touched store stacks (@touched, @n distinct ids) and their
 * ancestors into trie nodes, parents first: @map receives store id ->
 * trie node << 1 | match.
 */
static void translate_stacks(struct xlator *x, const struct store_stack_node *stacks,
			     size_t nstacks, uint32_t *touched, size_t n, struct smap *map)
{
	VEC(uint32_t) ids = { 0 };

	memset(map, 0, sizeof(*map));
	if (nstacks <= SMAP_DENSE_MAX && n * 8 >= nstacks / 64) {
		/* Dense: mark the touched nodes and their ancestors, then walk ids in order. */
		uint8_t *mark = xcalloc(nstacks + 1, 1);
		size_t nmarked = 0;

		map->dense = xcalloc(nstacks + 1, sizeof(uint32_t));
		for (size_t i = 0; i < n; i++) {
			for (uint32_t s = touched[i]; s != 0 && !mark[s]; s = stacks[s].parent) {
				PROF_ASSERT(s < nstacks);
				mark[s] = 1;
				nmarked++;
			}
		}
		qmap_reserve(&x->ss->child_idx, x->ss->nodes.n + nmarked);
		VEC_RESERVE(&x->ss->nodes, nmarked);
		smap_put(map, 0, 0); /* the empty stack: root, no match */
		for (size_t s = 1; s < nstacks; s++) {
			if (!mark[s])
				continue;
			uint32_t p = stacks[s].parent, pv = map->dense[p] - 1;

			PROF_ASSERT(p < s && map->dense[p]);
			bool match = pv & 1;
			uint32_t node = xlator_apply(x, pv >> 1, stacks[s].loc, &match);
			PROF_ASSERT(node < (QMAP_NONE >> 1));
			map->dense[s] = (node << 1 | (uint32_t)match) + 1;
		}
		free(mark);
		return;
	}
	struct qmap seen = { 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t s = touched[i];

		while (s != 0 && qmap_get(&seen, s) == QMAP_NONE) {
			PROF_ASSERT(s < nstacks);
			qmap_put(&seen, s, 0);
			VEC_PUSH(&ids, s);
			s = stacks[s].parent;
		}
	}
	qmap_release(&seen);
	if (ids.n > 1)
		qsort(ids.v, ids.n, sizeof(uint32_t), cmp_u32);
	qmap_reserve(&x->ss->child_idx, x->ss->nodes.n + ids.n);
	smap_put(map, 0, 0);
	for (size_t i = 0; i < ids.n; i++) {
		uint32_t s = ids.v[i], p = stacks[s].parent;
		uint32_t pv = smap_get(map, p);

		PROF_ASSERT(p < s && pv != QMAP_NONE);
		bool match = pv & 1;
		uint32_t node = xlator_apply(x, pv >> 1, stacks[s].loc, &match);
		PROF_ASSERT(node < (QMAP_NONE >> 1));
		smap_put(map, s, node << 1 | (uint32_t)match);
	}
	VEC_FREE(&ids);
}

/* Kept samples from @from on: source stack -> trie node, dropping the stack-filtered ones. */
static void remap_samples(struct query_stackset *ss, size_t from, const struct smap *map,
			  bool filtering)
{
	size_t k = from;

	for (size_t i = from; i < ss->samples.n; i++) {
		struct query_ss_sample sm = ss->samples.v[i];
		uint32_t v = smap_get(map, sm.node);

		PROF_ASSERT(v != QMAP_NONE);
		if (filtering && !(v & 1))
			continue;
		sm.node = v >> 1;
		ss->samples.v[k++] = sm;
	}
	ss->samples.n = k;
}

/* Add one aggregate of source stack @s (translated through @map) to the set. */
static int add_one(struct collector *c, const struct smap *map, uint32_t s, uint32_t group,
		   uint32_t bucket, int64_t value, uint64_t count, double gauge)
{
	uint32_t v = smap_get(map, s);

	if (c->filtering && !(v & 1)) {
		c->ss->filtered_rows += count;
		c->ss->filtered_value = prof_add_sat(c->ss->filtered_value, value);
		return 0;
	}
	return query_stackset_add(c->ss, v >> 1, group, bucket, value, count, gauge);
}

/*
 * The source-location variants of this source's frames of names at
 * XC_MULTI into c->qvar: the touched stacks and their ancestors in id
 * order, frames outer first, the first variant with a file, else the
 * first (srcloc_note's rule, as the uncached path notes them). A name
 * with a file is settled: the source is skipped when all of its names
 * are (settled by an earlier source), and left when they become so.
 * Called with xc.mu held.
 */
static void xc_note_variants(struct collector *c, struct xc_src *e, const struct store_source *src)
{
	size_t open = 0;

	xc_variant_stacks(e, src);
	if (c->nqvar < xc.trie.names.n) {
		size_t want = xc.trie.names.n + xc.trie.names.n / 4 + 1;
		uint32_t *q = query_scratch_take(want, sizeof(uint32_t), true);

		if (c->nqvar)
			memcpy(q, c->qvar, c->nqvar * sizeof(uint32_t));
		query_scratch_give(c->qvar);
		c->qvar = q;
		c->nqvar = want;
	}
	for (size_t k = 0; k < e->vnames.n; k++)
		open += !c->qvar[e->vnames.v[k]] || !xc.var.v[c->qvar[e->vnames.v[k]]].file;
	if (!open)
		return;
	uint8_t *mark = query_scratch_take(e->n + 1, 1, true);

	/*
	 * The touched stacks and their ancestors: few, by walking up from
	 * each; many, by one sweep down the ids (parent < id), which reads
	 * the stacks in order instead of at random.
	 */
	if (c->totals.n < e->n / 16) {
		for (size_t i = 0; i < c->totals.n; i++)
			for (uint32_t s = c->totals.v[i].stack; s && !mark[s];
			     s = src->stacks[s].parent)
				mark[s] = 1;
	} else {
		for (size_t i = 0; i < c->totals.n; i++)
			mark[c->totals.v[i].stack] = 1;
		for (size_t s = e->n; s-- > 1;)
			if (mark[s])
				mark[src->stacks[s].parent] = 1;
	}
	for (size_t k = 0; k < e->vstk.n && open; k++) {
		uint32_t s = e->vstk.v[k];

		if (!mark[s])
			continue;
		const uint32_t *fr = &xc.lwords.v[e->locrec[src->stacks[s].loc] - 1];
		for (uint32_t f = 0; f < fr[0]; f++) {
			uint32_t nm = fr[1 + 2 * f], v = fr[2 + 2 * f], cur;

			if (!v || !xc_is_multi(nm))
				continue;
			cur = c->qvar[nm];
			if (!cur || srcloc_rank(&xc.var.v[cur]) < srcloc_rank(&xc.var.v[v])) {
				c->qvar[nm] = v;
				open -= !!xc.var.v[v].file;
			}
		}
	}
	query_scratch_give(mark);
}

/* How many totals ahead source_end_cached prefetches (two stages). */
#define XC_SUM_AHEAD 16

/* The end of a source, cached path: sum its per-stack totals per trie node. */
static int source_end_cached(struct collector *c, const struct store_source *src)
{
	pthread_mutex_lock(&xc.mu);
	struct xc_src *e = xc_source(src, c->p->sym);
	if (!e || (c->epoch_set && xc.epoch != c->epoch)) {
		pthread_mutex_unlock(&xc.mu);
		c->xc_lost = true;
		return 1;
	}
	c->epoch = xc.epoch;
	c->epoch_set = true;
	if (c->var_set && c->var_gen != xc.var_gen) {
		/* A name got a second variant: the sources summed before did not note it. */
		pthread_mutex_unlock(&xc.mu);
		c->xc_lost = c->var_moved = true;
		return 1;
	}
	c->var_gen = xc.var_gen;
	c->var_set = true;
	if (xc.nmulti)
		xc_note_variants(c, e, src);
	if (!c->qslot && xc.qslot_spare) {
		c->qslot = xc.qslot_spare; /* all zero */
		c->nqslot = xc.nqslot_spare;
		xc.qslot_spare = NULL;
		xc.nqslot_spare = 0;
	}
	if (c->nqslot < xc.trie.nodes.n) {
		size_t want = xc.trie.nodes.n + xc.trie.nodes.n / 4 + 1;

		c->qslot = xreallocarray(c->qslot, want, sizeof(uint32_t));
		memset(c->qslot + c->nqslot, 0, (want - c->nqslot) * sizeof(uint32_t));
		c->nqslot = want;
	}
	SS_VEC_RESERVE_SCRATCH(&c->qacc, c->totals.n); /* at most one new sum per total */
	/*
	 * The totals come in the store's order, their stacks and trie nodes
	 * at random over arrays of MBs: the map entry of the total
	 * 2 * XC_SUM_AHEAD on and the slot of the one XC_SUM_AHEAD on are
	 * prefetched (the slot's address needs the map entry).
	 */
	for (size_t i = 0; i < c->totals.n; i++) {
		if (i + 2 * XC_SUM_AHEAD < c->totals.n)
			__builtin_prefetch(&e->node[c->totals.v[i + 2 * XC_SUM_AHEAD].stack]);
		if (i + XC_SUM_AHEAD < c->totals.n) {
			uint32_t ahead = c->totals.v[i + XC_SUM_AHEAD].stack;

			if (ahead < e->n)
				__builtin_prefetch(&c->qslot[e->node[ahead]], 1);
		}
		const struct store_stack_total *t = &c->totals.v[i];

		PROF_ASSERT(t->stack < e->n);
		uint32_t node = e->node[t->stack];
		uint32_t k = c->qslot[node];
		if (!k) {
			struct qacc a = { node, { 0, 0 }, { 0, 0 } };

			VEC_PUSH(&c->qacc, a);
			k = c->qslot[node] = (uint32_t)c->qacc.n;
		}
		k--;
		c->qacc.v[k].value[c->side] = prof_add_sat(c->qacc.v[k].value[c->side], t->total);
		c->qacc.v[k].count[c->side] += t->rows;
	}
	pthread_mutex_unlock(&xc.mu);
	c->totals.n = 0;
	query_stackset_release(&c->raw);
	return 0;
}

/* The end of a source: translate its stacks to names and move its aggregates into the set. */
static int source_end(void *arg, const struct store_source *src)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;
	VEC(uint32_t) touched = { 0 };
	struct smap map = { 0 };
	struct xlator x;
	int rc = 0;

	if (c->cached)
		return source_end_cached(c, src);
	if (c->dense) {
		for (size_t s = 0; s < c->nstacks; s++)
			if (c->dcnt[s])
				VEC_PUSH(&touched, (uint32_t)s);
	} else if (c->totals.n) {
		for (size_t i = 0; i < c->totals.n; i++)
			VEC_PUSH(&touched, c->totals.v[i].stack);
	} else {
		struct qmap seen = { 0 };

		for (size_t i = 0; i < c->raw.entries.n; i++) {
			uint32_t s = c->raw.entries.v[i].node;

			if (qmap_get(&seen, s) == QMAP_NONE) {
				qmap_put(&seen, s, 0);
				VEC_PUSH(&touched, s);
			}
		}
		qmap_release(&seen);
	}
	xlator_init(&x, ss, src->dict, c->p);
	translate_stacks(&x, src->stacks, src->nstacks, touched.v, touched.n, &map);
	xlator_release(&x);

	for (size_t i = 0; i < touched.n && c->dense && !rc; i++) {
		uint32_t s = touched.v[i];

		rc = add_one(c, &map, s, 0, 0, c->dval[s], c->dcnt[s], (double)c->dval[s]);
	}
	for (size_t i = 0; i < c->totals.n && !c->dense && !rc; i++) {
		const struct store_stack_total *t = &c->totals.v[i];

		rc = add_one(c, &map, t->stack, 0, 0, t->total, t->rows, (double)t->total);
	}
	for (size_t i = 0; i < c->raw.entries.n && !c->dense && !rc; i++) {
		const struct query_ss_entry *e = &c->raw.entries.v[i];

		rc = add_one(c, &map, e->node, e->group, e->bucket, e->value, e->count, e->gauge);
	}
	if (!rc && c->p->keep_samples)
		remap_samples(ss, c->samples_from, &map, c->filtering);
	free(c->dval);
	free(c->dcnt);
	c->dval = NULL;
	c->dcnt = NULL;
	query_stackset_release(&c->raw);
	smap_release(&map);
	VEC_FREE(&touched);
	if (rc)
		c->rc = rc;
	return rc;
}

/*
 * Can this query use the translation cache? (per-stack totals, names not
 * frame-filtered; not a gauge, whose rows are weighted per series)
 */
static bool cacheable(const struct query_stackset_params *p)
{
	const struct query_filter *f = p->filter;

	return !p->ngroup_by && !p->step_ns && !p->keep_samples &&
	       !(f && (f->frame_re || f->hide)) && query_type_is_cumulative(p->type);
}

/*
 * A gauge set's values become its means: each entry's value the rounded
 * sum over its series of value / snapshots (@gauge), so the flame graph,
 * table, sandwich, diff and exports show the average snapshot over the
 * range (per step for the series view, which reads @gauge), not the sum
 * of every snapshot in it. Kept samples (the flame chart) stay as taken.
 */
static void gauge_means(struct query_stackset *ss)
{
	if (ss->cumulative)
		return;
	ss->total = 0;
	for (size_t i = 0; i < ss->entries.n; i++) {
		struct query_ss_entry *e = &ss->entries.v[i];

		e->value = (int64_t)llround(e->gauge);
		ss->total = prof_add_sat(ss->total, e->value);
	}
}

/*
 * One scan of @p into @c->ss (set up by the caller), as side @side. In the
 * cached path the totals go to @c->qacc (moved into the set by
 * xc_extract); c->xc_lost says the cache could not serve it.
 */
static int collect_scan(struct store *st, const struct query_stackset_params *p,
			struct collector *c, uint32_t side, struct prof_err *err)
{
	struct query_stackset *ss = c->ss;
	struct store_query q = { p->type, p->m, p->nm, p->from_ns, p->to_ns };
	struct store_link_filter lf = { p->trace_id, p->span_id };
	struct store_visitor v = { .arg = c };
	int rc = 0;

	c->p = p;
	c->side = side;
	c->filtering = !c->cached && query_filter_has_stack(p->filter);
	c->max_samples = p->max_samples ? p->max_samples : QUERY_SS_MAX_SAMPLES;
	/* Gauges weigh each row by 1/snapshots of its series (per step, or the whole range). */
	c->gauge = !ss->cumulative && !p->keep_samples;

	if (c->gauge) {
		v.source_begin = snaps_begin;
		v.rows = scan_snaps;
		rc = store_scan_ex(st, &q, &lf, &v, NULL, err);
		snaps_finish(&c->snaps);
	}
	/* No group_by, no step, no samples: the store sums per stack (fast path). */
	bool totals = !ss->ngroup_by && !p->step_ns && !p->keep_samples && !c->gauge;
	v.source_begin = source_begin;
	v.series = scan_series;
	v.rows = totals ? NULL : scan_rows;
	v.totals = totals ? scan_totals : NULL;
	v.source_end = source_end;
	/* scan_rows reads no stack then (add_runs; the row path counts at 0) */
	v.rows_no_stacks = !totals && p->merge_stacks && !p->keep_samples && !c->gauge;
	/* and blocks may sum a page per step (pages with per-row attribute
	 * sets, which may name groups, still come as rows) */
	if (v.rows_no_stacks && ss->cumulative && ss->step_ns > 0) {
		v.steps = scan_steps;
		v.step_from_ns = ss->from_ns;
		v.step_ns = ss->step_ns;
	}
	if (!rc)
		rc = store_scan_ex(st, &q, &lf, &v, NULL, err);
	if (c->rc)
		rc = c->rc;
	if (c->xc_lost)
		rc = 0;
	return rc;
}

static void collector_release(struct collector *c)
{
	free(c->dval);
	free(c->dcnt);
	query_stackset_release(&c->raw);
	query_scratch_give(c->totals.v);
	memset(&c->totals, 0, sizeof(c->totals));
	qmap_release(&c->local);
	qmap_release(&c->attr_group);
	qmap_release(&c->series_group);
	qmap_release(&c->snaps.count);
	VEC_FREE(&c->snaps.v);
	strtab_release(&c->series_keys);
	buf_release(&c->key);
	if (c->qslot) {
		/* Zero again where used, and keep it as the spare if it is the larger. */
		for (size_t i = 0; i < c->qacc.n; i++)
			c->qslot[c->qacc.v[i].node] = 0;
		pthread_mutex_lock(&xc.mu);
		if (c->nqslot > xc.nqslot_spare) {
			uint32_t *old = xc.qslot_spare;

			xc.qslot_spare = c->qslot;
			xc.nqslot_spare = c->nqslot;
			c->qslot = old;
		}
		pthread_mutex_unlock(&xc.mu);
		free(c->qslot);
		c->qslot = NULL;
	}
	query_scratch_give(c->qacc.v);
	memset(&c->qacc, 0, sizeof(c->qacc));
	query_scratch_give(c->qvar);
	c->qvar = NULL;
	c->nqvar = 0;
}

/*
 * Collect @p (and, with @pb, side B into bucket 1) into @ss. @use_cache:
 * try the translation cache; *@lost is set when it could not serve the
 * query (nothing usable is in @ss then), *@moved too when that was a
 * name getting a second source-location variant (another try is likely
 * to be served: the sources are translated now).
 */
static int collect(struct store *st, const struct query_stackset_params *p,
		   const struct query_stackset_params *pb, struct query_stackset *ss,
		   bool use_cache, bool *lost, bool *moved, struct prof_err *err)
{
	struct collector c = { 0 };
	int rc;

	*lost = false;
	*moved = false;
	rc = setup(ss, p->type, p, err);
	if (rc)
		return rc;
	if (pb)
		ss->nbuckets = 2;
	c.ss = ss;
	c.cached = use_cache;
	buf_init(&c.key, 0);
	strtab_init(&c.series_keys);
	query_stackset_init(&c.raw);

	rc = collect_scan(st, p, &c, 0, err);
	if (!rc && pb && !c.xc_lost)
		rc = collect_scan(st, pb, &c, 1, err);
	if (!rc && c.cached && !c.xc_lost) {
		pthread_mutex_lock(&xc.mu);
		if (c.epoch_set && xc.epoch != c.epoch)
			c.xc_lost = true;
		else if (c.var_set && xc.var_gen != c.var_gen)
			c.xc_lost = c.var_moved = true;
		else if (c.qacc.n)
			rc = xc_extract(c.qacc.v, c.qacc.n, pb != NULL, p->filter, c.qvar, c.nqvar,
					ss);
		pthread_mutex_unlock(&xc.mu);
	}
	if (c.xc_lost)
		*lost = true;
	*moved = c.var_moved;
	if (!rc && p->keep_samples && ss->samples.n > 1)
		qsort(ss->samples.v, ss->samples.n, sizeof(*ss->samples.v), cmp_sample);
	if (c.over_samples)
		rc = too_many_samples(c.max_samples, err);
	else if (c.over_entries || rc == -PROF_ETOOBIG)
		rc = too_many_entries(ss, err);
	if (!rc && c.gauge)
		gauge_means(ss);
	collector_release(&c);
	return rc;
}

int query_stackset_collect(struct store *st, const struct query_stackset_params *p,
			   struct query_stackset *ss, struct prof_err *err)
{
	bool lost, moved;
	int rc = collect(st, p, NULL, ss, cacheable(p), &lost, &moved, err);

	if (!rc && lost && moved) { /* once more through the cache, now filled */
		query_stackset_release(ss);
		rc = collect(st, p, NULL, ss, true, &lost, &moved, err);
	}
	if (!rc && lost) {
		query_stackset_release(ss);
		rc = collect(st, p, NULL, ss, false, &lost, &moved, err);
	}
	return rc;
}

/* Add the nodes and entries of @b to @ss as bucket 1 (the uncached pair). */
static int merge_side_b(struct query_stackset *ss, const struct query_stackset *b)
{
	uint32_t *map = xcalloc(b->nodes.n + 1, sizeof(uint32_t));
	uint32_t *memo = xcalloc(b->names.n + 1, sizeof(uint32_t));
	int rc = 0;

	for (size_t i = 1; i < b->nodes.n; i++)
		map[i] = query_stackset_child(ss, map[b->nodes.v[i].parent],
					      copy_name(ss, b, memo, b->nodes.v[i].name));
	for (size_t i = 0; i < b->entries.n && !rc; i++) {
		const struct query_ss_entry *e = &b->entries.v[i];

		rc = query_stackset_add(ss, map[e->node], 0, 1, e->value, e->count, e->gauge);
	}
	ss->filtered_rows += b->filtered_rows;
	ss->filtered_value = prof_add_sat(ss->filtered_value, b->filtered_value);
	ss->series += b->series;
	free(map);
	free(memo);
	return rc;
}

int query_stackset_collect_pair(struct store *st, const struct query_stackset_params *a,
				const struct query_stackset_params *b, struct query_stackset *ss,
				struct prof_err *err)
{
	struct query_stackset sb;
	bool lost = false, moved = false;
	int rc;

	if (cacheable(a) && cacheable(b)) {
		rc = collect(st, a, b, ss, true, &lost, &moved, err);
		if (!rc && lost && moved) {
			query_stackset_release(ss);
			rc = collect(st, a, b, ss, true, &lost, &moved, err);
		}
		if (rc || !lost)
			return rc;
		query_stackset_release(ss);
	}
	rc = query_stackset_collect(st, a, ss, err);
	if (rc)
		return rc;
	rc = query_stackset_collect(st, b, &sb, err);
	if (!rc) {
		uint64_t unsym = ss->unsymbolized;

		ss->nbuckets = 2;
		rc = merge_side_b(ss, &sb);
		ss->unsymbolized = unsym + sb.unsymbolized;
		if (rc == -PROF_ETOOBIG)
			rc = too_many_entries(ss, err);
	}
	query_stackset_release(&sb);
	return rc;
}

/* --- from a model profile ------------------------------------------------------------- */

int query_stackset_from_profile(const struct model_profile *prof, uint32_t sample_type,
				const struct query_stackset_params *p, struct query_stackset *ss,
				struct prof_err *err)
{
	struct query_stackset_params q = *p;
	struct xlator x;
	struct qmap memo = { 0 }; /* stack_off << 32 | nstack -> node << 1 | match */
	struct snaps snaps = { 0 };
	char type[512];
	bool filtering = query_filter_has_stack(p->filter), over_samples = false;
	int rc;

	if (sample_type >= prof->sample_types.n) {
		query_stackset_init(ss);
		return prof_err_set(err, -EINVAL, -1,
				    "sample type %u out of range (the profile has %zu)",
				    sample_type, prof->sample_types.n);
	}
	model_profile_type_id(prof, sample_type, type, sizeof(type));
	bool all_time = !q.from_ns && !q.to_ns;
	if (all_time) {
		int64_t lo = INT64_MAX, hi = INT64_MIN;

		for (size_t i = 0; i < prof->samples.n; i++) {
			int64_t ts = prof->samples.v[i].timestamp_ns
					     ? prof->samples.v[i].timestamp_ns
					     : prof->time_ns;
			lo = PROF_MIN(lo, ts);
			hi = PROF_MAX(hi, ts);
		}
		q.from_ns = prof->samples.n ? lo : 0;
		q.to_ns = prof->samples.n ? hi : 0;
	}
	rc = setup(ss, type, &q, err);
	if (rc)
		return rc;
	bool gauge = !ss->cumulative && !p->keep_samples;
	size_t max_samples = p->max_samples ? p->max_samples : QUERY_SS_MAX_SAMPLES;

	if (gauge) {
		for (size_t i = 0; i < prof->samples.n; i++) {
			const struct model_sample *s = &prof->samples.v[i];
			int64_t ts = s->timestamp_ns ? s->timestamp_ns : prof->time_ns;

			if (ts >= q.from_ns && ts <= q.to_ns)
				snaps_add(&snaps, 0, bucket_of(ss, ts), ts);
		}
		snaps_finish(&snaps);
	}
	xlator_init(&x, ss, prof, p);
	ss->series = prof->samples.n ? 1 : 0;
	for (size_t i = 0; i < prof->samples.n && !rc; i++) {
		const struct model_sample *s = &prof->samples.v[i];
		int64_t v = prof->values.v[s->value_off + sample_type];
		int64_t ts = s->timestamp_ns ? s->timestamp_ns : prof->time_ns;

		if (v == 0 || ts < q.from_ns || ts > q.to_ns)
			continue;
		uint64_t key = (uint64_t)s->stack_off << 32 | s->nstack;
		uint32_t nv = s->nstack ? qmap_get(&memo, key) : 0;
		if (nv == QMAP_NONE) {
			uint32_t at = 0;
			bool match = false;

			for (uint32_t j = s->nstack; j-- > 0;)
				at = xlator_apply(&x, at, prof->stack_locs.v[s->stack_off + j],
						  &match);
			PROF_ASSERT(at < (QMAP_NONE >> 1));
			nv = at << 1 | (uint32_t)match;
			qmap_put(&memo, key, nv);
		}
		if (filtering && !(nv & 1)) {
			ss->filtered_rows++;
			ss->filtered_value = prof_add_sat(ss->filtered_value, v);
			continue;
		}
		uint32_t g = 0;
		if (ss->ngroup_by) {
			const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
			char nums[QUERY_SS_MAX_GROUP_BY][24];

			for (size_t k = 0; k < ss->ngroup_by; k++) {
				for (uint32_t j = 0; j < s->nlabels; j++) {
					const struct model_label *l =
						&prof->labels.v[s->label_off + j];

					if (strcmp(model_str(prof, l->key), ss->group_by[k]))
						continue;
					if (l->str) {
						vals[k] = model_str(prof, l->str);
					} else {
						snprintf(nums[k], sizeof(nums[k]), "%" PRId64,
							 l->num);
						vals[k] = nums[k];
					}
					break;
				}
			}
			g = query_stackset_group(ss, vals);
		}
		uint32_t b = bucket_of(ss, ts);
		double w = gauge ? snaps_weight(&snaps, 0, b) : 1.0;
		rc = query_stackset_add(ss, nv >> 1, g, b, v, 1, (double)v * w);
		if (!rc && p->keep_samples) {
			if (ss->samples.n >= max_samples) {
				over_samples = true;
				rc = too_many_samples(max_samples, err);
				break;
			}
			struct query_ss_sample sm = { ts, v, nv >> 1, g };
			VEC_PUSH(&ss->samples, sm);
		}
	}
	if (rc == -PROF_ETOOBIG && !over_samples)
		rc = too_many_entries(ss, err);
	if (!rc && gauge)
		gauge_means(ss);
	if (!rc && ss->samples.n > 1)
		qsort(ss->samples.v, ss->samples.n, sizeof(*ss->samples.v), cmp_sample);
	xlator_release(&x);
	qmap_release(&memo);
	qmap_release(&snaps.count);
	VEC_FREE(&snaps.v);
	return rc;
}
