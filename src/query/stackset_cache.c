// SPDX-License-Identifier: Apache-2.0
/*
 * stackset_cache.c - translating store locations into the set's frames
 * (the xlator: inline chains expanded, symbolized, frame-filtered) and the
 * process-wide translation cache: a shared names trie keeping each
 * source's translated stacks across queries, so a warm totals query sums
 * per trie node without translating again.
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

/* --- location translation, shared by the store and profile paths ---------------------- */

void ss_xlator_init(struct xlator *x, struct query_stackset *ss, const struct model_profile *dict,
		    const struct query_stackset_params *p)
{
	memset(x, 0, sizeof(*x));
	x->ss = ss;
	x->dict = dict;
	x->sym = p->sym;
	x->filter = p->filter;
	x->line_fn = p->line_fn;
	x->line_fn_len = p->line_fn ? strlen(p->line_fn) : 0;
}

void ss_xlator_release(struct xlator *x)
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

/*
 * A frame of @name at @file:@line of build @build_id: push_frame, but a
 * frame of the function the set keeps apart per line (params.line_fn) is
 * named by its line key (query_stackset_line_key); filters still see
 * @name.
 */
static uint32_t push_frame_at(struct xlator *x, const char *name, size_t n, const char *ftype,
			      const char *module, const char *file, int64_t line,
			      const char *build_id)
{
	if (!x->line_fn || n != x->line_fn_len || memcmp(name, x->line_fn, n))
		return push_frame(x, name, n, ftype, module);
	struct buf key = BUF_INIT;
	uint32_t id;

	(void)buf_add(&key, name, n);
	(void)buf_addf(&key, "%c%" PRId64 "%c%s%c%s", QUERY_SS_LINE_SEP, line > 0 ? line : 0,
		       QUERY_SS_LINE_SEP, file, QUERY_SS_LINE_SEP, build_id);
	(void)push_frame(x, name, n, ftype, module);
	id = query_stackset_name(x->ss, key.p, key.len);
	x->frames.v[x->frames.n - 2] = id;
	buf_release(&key);
	return id;
}

/* Where the code of frame @id (the last one pushed) is: see xlator.frames. */
static void frame_srcloc(struct xlator *x, uint32_t id, const char *file, int64_t line,
			 const char *build_id, const char *mapping, const char *ftype)
{
	struct query_ss_srcloc r;

	if (!x->trie) {
		ss_srcloc_note(x->ss, id, file, line, build_id, mapping, ftype);
		return;
	}
	ss_srcloc_make(x->ss, &r, file, line, build_id, mapping, ftype);
	x->frames.v[x->frames.n - 1] = ss_xc_variant(id, &r);
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
uint32_t ss_xlator_location(struct xlator *x, uint32_t loc)
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
			uint32_t id = push_frame_at(x, nm, len, ftype, module,
						    ln->function ? model_str(d, f->filename) : "",
						    ln->line, bid);

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
				uint32_t id =
					push_frame_at(x, nm, strlen(nm), ftype, module,
						      x->symbuf[j].file, x->symbuf[j].line, bid);

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
	if (!ss_of_get(x->ss->raw_of, x->ss->nraw_of, id)) {
		struct query_ss_raw r = { l->address, 0, 0 };

		if (*path) {
			r.mapping = query_stackset_name(x->ss, path, strlen(path));
			snprintf(tmp, sizeof(tmp), "[%s]", module);
		} else {
			snprintf(tmp, sizeof(tmp), "<unknown>");
		}
		r.fn_name = query_stackset_name(x->ss, tmp, strlen(tmp));
		VEC_PUSH(&x->ss->raw, r);
		ss_of_put(&x->ss->raw_of, &x->ss->nraw_of, id, (uint32_t)x->ss->raw.n);
	}
	return off;
}

/* Append location @loc's visible frames under trie node @at; ORs the stack-filter match. */
uint32_t ss_xlator_apply(struct xlator *x, uint32_t at, uint32_t loc, bool *match)
{
	uint32_t off = ss_xlator_location(x, loc);
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
 * ss_xc_extract. It does not copy names: the set shares the trie's name
 * strings and ids (xc_share_names; a pin keeps the strings alive after
 * the cache lets go of them), so an answer over a month of blocks with a
 * few hundred thousand distinct frames interns none of them again.
 *
 * Where a function's code is (file, line, binary) is not part of the
 * trie: one trie node serves every source whose call path has those
 * names, whatever their files, so the answer must come from the selected
 * data, not from the trie (one service's main() in a.c must not name
 * another's main() in b.c, nor one dataset's file another's). Each frame
 * of a trie record carries its source-location variant (an id in ss_xc.var,
 * see ss_xc_variant), and each trie name remembers whether it has met one
 * variant or several (XC_MULTI). A name of one variant has it in any
 * selection. For the names of several, the query looks at the stacks of
 * each source it reads (the touched ones and their ancestors) whose
 * location has such a frame (ss_xc_variant_stacks, kept per source) and
 * picks as the uncached path does: the variant ss_srcloc_cmp puts first
 * (see struct query_ss_srcloc). A name that gets a second
 * variant while a query runs (from a source translated after one it
 * already summed) makes it run once more (collect; collector.var_moved).
 */
#define XC_MAX_NODES   ((size_t)16 << 20)
#define XC_MAX_MAPPED  ((size_t)64 << 20)
#define XC_MAX_SOURCES 4096

struct ss_xc_state ss_xc = { .mu = PTHREAD_MUTEX_INITIALIZER };

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
	ss_xc.mapped -= e->n;
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
	for (size_t i = 0; i < ss_xc.src.n; i++)
		xc_drop_map(&ss_xc.src.v[i]);
	ss_xc.src.n = 0;
	ss_xc.mapped = 0;
	qmap_release(&ss_xc.lidx);
	VEC_FREE(&ss_xc.lrec);
	VEC_FREE(&ss_xc.lwords);
	VEC_FREE(&ss_xc.var);
	qmap_release(&ss_xc.var_idx);
	free(ss_xc.name_var);
	ss_xc.name_var = NULL;
	ss_xc.nname_var = 0;
	ss_xc.nmulti = 0;
	ss_xc.var_gen++;
	/* Sets built earlier may still read the names: the pin takes the bytes. */
	ss_xc.pin->chunks = ss_xc.trie.names.chunk;
	ss_xc.trie.names.chunk = NULL;
	ss_pin_put(ss_xc.pin);
	ss_xc.pin = ss_pin_new();
	query_stackset_release(&ss_xc.trie);
	query_stackset_init(&ss_xc.trie);
	ss_xc.epoch++;
	ss_xc.stats.resets++;
}

/* Evict least recently used maps (never @keep) until @need more ids fit; false if they cannot. */
static bool xc_make_room(size_t need, const struct xc_src *keep)
{
	while (ss_xc.mapped + need > XC_MAX_MAPPED) {
		struct xc_src *lru = NULL;

		for (size_t i = 0; i < ss_xc.src.n; i++) {
			struct xc_src *e = &ss_xc.src.v[i];

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
 * function name, file and line as ss_srcloc_note takes them), and a source
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
	return strtab_intern(&ss_xc.trie.names, s, n);
}

/* ss_xc.name_var of a name met with more than one variant. */
#define XC_MULTI UINT32_MAX

bool ss_xc_is_multi(uint32_t name)
{
	return name < ss_xc.nname_var && ss_xc.name_var[name] == XC_MULTI;
}

/*
 * The variant id of source-location record @r (names of the trie; 0 when
 * it knows nothing), the same id for equal records, and @name's variant
 * state updated: the first variant it meets, or XC_MULTI from its second
 * on (ss_xc.var_gen moves then). Called with ss_xc.mu held.
 */
uint32_t ss_xc_variant(uint32_t name, const struct query_ss_srcloc *r)
{
	uint32_t v = 0;

	if (!ss_xc.var.n) {
		struct query_ss_srcloc none = { 0 };

		VEC_PUSH(&ss_xc.var, none);
	}
	if (r->file || r->build_id || r->mapping || r->frame_type) {
		uint64_t h = XXH3_64bits(r, sizeof(*r));

		for (;; h++) { /* probe on past records of another content with this hash */
			v = qmap_get(&ss_xc.var_idx, h);
			if (v == QMAP_NONE) {
				VEC_PUSH(&ss_xc.var, *r);
				v = (uint32_t)ss_xc.var.n - 1;
				qmap_put(&ss_xc.var_idx, h, v);
				break;
			}
			if (!memcmp(&ss_xc.var.v[v], r, sizeof(*r)))
				break;
		}
	}
	if (name >= ss_xc.nname_var) {
		size_t want =
			PROF_MAX((size_t)name + 1, PROF_MAX(ss_xc.nname_var * 2, (size_t)1024));

		ss_xc.name_var = xreallocarray(ss_xc.name_var, want, sizeof(uint32_t));
		memset(ss_xc.name_var + ss_xc.nname_var, 0,
		       (want - ss_xc.nname_var) * sizeof(uint32_t));
		ss_xc.nname_var = want;
	}
	uint32_t *st = &ss_xc.name_var[name];
	if (!*st) {
		*st = v + 1;
	} else if (*st != XC_MULTI && *st != v + 1) {
		*st = XC_MULTI;
		ss_xc.nmulti++;
		ss_xc.var_gen++;
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
 * the next call. Called with ss_xc.mu held.
 */
static const uint32_t *xc_location(struct xlator *x, struct xc_memo *m, uint32_t loc, uint64_t gen,
				   uint32_t **last)
{
	uint32_t r = m->loc[loc];

	*last = NULL;
	if (r && (r & XC_LOCAL))
		return &x->frames.v[(r & ~XC_LOCAL) - 1];
	if (r) {
		uint32_t *fr = &ss_xc.lwords.v[r - 1];

		*last = fr + 1 + 2 * fr[0];
		return fr;
	}
	bool keyed = ss_xc.lrec.n < XC_MAX_LOCS && xc_location_key(m, x->dict, loc);
	uint64_t h = keyed ? XXH3_64bits(m->key.v, m->key.n * sizeof(uint32_t)) : 0;
	uint32_t li = keyed ? qmap_get(&ss_xc.lidx, h) : QMAP_NONE;

	if (li != QMAP_NONE) {
		const struct xc_loc *c = &ss_xc.lrec.v[li];

		if (c->klen != m->key.n ||
		    memcmp(&ss_xc.lwords.v[c->key], m->key.v, m->key.n * sizeof(uint32_t))) {
			keyed = false; /* another key with the same hash */
		} else if (!c->used_sym || (c->sym == x->sym && c->sym_gen == gen)) {
			uint32_t *fr = &ss_xc.lwords.v[c->frames];

			x->used_sym |= c->used_sym;
			ss_xc.stats.loc_hits++;
			m->loc[loc] = c->frames + 1;
			*last = fr + 1 + 2 * fr[0];
			return fr;
		}
	}
	bool was = x->used_sym;
	x->used_sym = false;
	uint32_t off = ss_xlator_location(x, loc);
	bool used = x->used_sym;
	x->used_sym |= was;
	if (!keyed) {
		PROF_ASSERT(off + 1 < XC_LOCAL);
		m->loc[loc] = (off + 1) | XC_LOCAL;
		return &x->frames.v[off];
	}
	uint32_t nf = x->frames.v[off];
	PROF_ASSERT(ss_xc.lwords.n + m->key.n + 2 * nf + 3 < XC_LOCAL);
	struct xc_loc c = { (uint32_t)ss_xc.lwords.n, (uint32_t)m->key.n, 0, used, x->sym, gen };

	if (li == QMAP_NONE) {
		VEC_RESERVE(&ss_xc.lwords, m->key.n);
		memcpy(ss_xc.lwords.v + ss_xc.lwords.n, m->key.v, m->key.n * sizeof(uint32_t));
		ss_xc.lwords.n += m->key.n;
	} else {
		c.key = ss_xc.lrec.v[li].key; /* a stale record: the same key, new frames */
	}
	c.frames = (uint32_t)ss_xc.lwords.n;
	VEC_RESERVE(&ss_xc.lwords, 3 + 2 * (size_t)nf);
	memcpy(ss_xc.lwords.v + ss_xc.lwords.n, x->frames.v + off,
	       (1 + 2 * (size_t)nf) * sizeof(uint32_t));
	ss_xc.lwords.n += 1 + 2 * (size_t)nf;
	ss_xc.lwords.v[ss_xc.lwords.n++] = UINT32_MAX; /* *last: applied under no node yet */
	ss_xc.lwords.v[ss_xc.lwords.n++] = 0;
	x->frames.n = off; /* the copy is the record now (m->loc answers @loc from here on) */
	if (li == QMAP_NONE) {
		VEC_PUSH(&ss_xc.lrec, c);
		qmap_put(&ss_xc.lidx, h, (uint32_t)ss_xc.lrec.n - 1);
	} else {
		ss_xc.lrec.v[li] = c;
	}
	m->loc[loc] = c.frames + 1;
	*last = &ss_xc.lwords.v[c.frames + 1 + 2 * nf];
	return &ss_xc.lwords.v[c.frames];
}

/*
 * Before a source's stacks are translated: find its locations in the
 * location cache in batches, so that the memory reads of one batch
 * (hash slot, record, key words) overlap instead of waiting one by one;
 * m->loc gets the records found (the rest xc_location translates).
 * Called with ss_xc.mu held.
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
			__builtin_prefetch(
				&ss_xc.lidx.slots[qmap_hash(h[i]) & (ss_xc.lidx.nslots - 1)]);
		}
		for (size_t i = 0; i < n; i++) {
			if (klen[i])
				li[i] = qmap_get(&ss_xc.lidx, h[i]);
			if (li[i] != QMAP_NONE)
				__builtin_prefetch(&ss_xc.lrec.v[li[i]]);
		}
		for (size_t i = 0; i < n; i++)
			if (li[i] != QMAP_NONE)
				__builtin_prefetch(&ss_xc.lwords.v[ss_xc.lrec.v[li[i]].key]);
		for (size_t i = 0; i < n; i++) {
			if (li[i] == QMAP_NONE)
				continue;
			const struct xc_loc *c = &ss_xc.lrec.v[li[i]];

			if (c->klen != klen[i] ||
			    memcmp(&ss_xc.lwords.v[c->key], keys.v + koff[i],
				   klen[i] * sizeof(uint32_t)) ||
			    (c->used_sym && (c->sym != x->sym || c->sym_gen != gen)))
				continue; /* xc_location sorts it out */
			x->used_sym |= c->used_sym;
			ss_xc.stats.loc_hits++;
			m->loc[base + i] = c->frames + 1;
		}
	}
	VEC_FREE(&keys);
}

/*
 * Keep @m's location -> frame record map in @e (the query reads the
 * frames' variants through it, ss_xc_variant_stacks; a grown head starts
 * from it), the records of @x's own first copied to lwords (unindexed,
 * with the two words xc_location expects after a record). Called with
 * ss_xc.mu held.
 */
static void xc_keep_locations(struct xc_src *e, struct xlator *x, struct xc_memo *m, size_t nlocs)
{
	for (size_t l = 0; l < nlocs; l++) {
		uint32_t r = m->loc[l];

		if (!(r & XC_LOCAL))
			continue;
		const uint32_t *fr = &x->frames.v[(r & ~XC_LOCAL) - 1];
		size_t words = 1 + 2 * (size_t)fr[0];

		PROF_ASSERT(ss_xc.lwords.n + words + 2 < XC_LOCAL);
		VEC_RESERVE(&ss_xc.lwords, words + 2);
		m->loc[l] = (uint32_t)ss_xc.lwords.n + 1;
		memcpy(ss_xc.lwords.v + ss_xc.lwords.n, fr, words * sizeof(uint32_t));
		ss_xc.lwords.n += words;
		ss_xc.lwords.v[ss_xc.lwords.n++] = UINT32_MAX;
		ss_xc.lwords.v[ss_xc.lwords.n++] = 0;
	}
	free(e->locrec);
	e->locrec = m->loc;
	e->nlocrec = nlocs;
	m->loc = NULL;
}

/*
 * e->vstk for the names at XC_MULTI now: the stacks of @src (ascending)
 * whose location has a frame of such a name, and e->vnames those names.
 * Remade when a name got there or the source grew. Called with ss_xc.mu
 * held.
 */
void ss_xc_variant_stacks(struct xc_src *e, const struct store_source *src)
{
	if (e->vgen == ss_xc.var_gen && e->vn == e->n)
		return;
	uint8_t *multi = query_scratch_take(e->nlocrec + 1, 1, true);
	uint8_t *seen = query_scratch_take(ss_xc.nname_var + 1, 1, true);

	e->vnames.n = 0;
	for (size_t l = 0; l < e->nlocrec; l++) {
		const uint32_t *fr = e->locrec[l] ? &ss_xc.lwords.v[e->locrec[l] - 1] : NULL;

		for (uint32_t f = 0; fr && f < fr[0]; f++) {
			uint32_t nm = fr[1 + 2 * f];

			if (!ss_xc_is_multi(nm))
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
	e->vgen = ss_xc.var_gen;
	e->vn = e->n;
}

/* ss_xc_source's mark of a stack not yet mapped (no trie node has this id: XC_MAX_NODES). */
#define XC_UNRESOLVED UINT32_MAX

/*
 * The first pass of ss_xc_source over stacks [@from, src->nstacks): map each
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

	if (ss_xc.trie.child_idx_stale)
		ss_child_idx_rebuild(&ss_xc.trie);
	ci = &ss_xc.trie.child_idx;
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
				__builtin_prefetch(&ss_xc.lwords.v[r - 1]);
		}
		if (j + XC_AHEAD < norder && ci->nslots) {
			const struct store_stack_node *a = &src->stacks[order[j + XC_AHEAD]];
			uint32_t r = m->loc[a->loc], pat = node[a->parent];

			if (pat != XC_UNRESOLVED && !(r & XC_LOCAL)) {
				uint64_t key = (uint64_t)pat << 32 | ss_xc.lwords.v[r - 1 + 1];

				if (ss_xc.lwords.v[r - 1])
					__builtin_prefetch(
						&ci->slots[qmap_hash(key) & (ci->nslots - 1)]);
			}
		}
		uint32_t s = order[j], r = m->loc[src->stacks[s].loc];
		uint32_t at = node[src->stacks[s].parent];
		const uint32_t *fr =
			r & XC_LOCAL ? &x->frames.v[(r & ~XC_LOCAL) - 1] : &ss_xc.lwords.v[r - 1];

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
 * (ss_xc.epoch moves). Called with ss_xc.mu held.
 */
struct xc_src *ss_xc_source(const struct store_source *src, struct symbolizer *sym)
{
	const struct model_profile *d = src->dict;
	uint64_t gen = xc_sym_gen(sym);
	struct xc_src *e = NULL;
	struct query_stackset_params np = { 0 };
	struct xlator x;
	struct xc_memo memo;

	if (!ss_xc.ready) {
		query_stackset_init(&ss_xc.trie);
		ss_xc.pin = ss_pin_new();
		ss_xc.ready = true;
	}
	if (src->nstacks > XC_MAX_MAPPED || src->nstacks > XC_MAX_NODES)
		return NULL;
	for (size_t i = 0; i < ss_xc.src.n && !e; i++) {
		struct xc_src *c = &ss_xc.src.v[i];

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
		if (ss_xc.src.n >= XC_MAX_SOURCES) {
			size_t lru = 0;

			for (size_t i = 1; i < ss_xc.src.n; i++)
				if (ss_xc.src.v[i].used < ss_xc.src.v[lru].used)
					lru = i;
			xc_drop_map(&ss_xc.src.v[lru]);
			ss_xc.src.v[lru] = ss_xc.src.v[--ss_xc.src.n];
		}
		struct xc_src z = { 0 };
		z.id = src->id;
		z.is_head = src->is_head;
		z.dict = d;
		VEC_PUSH(&ss_xc.src, z);
		e = &ss_xc.src.v[ss_xc.src.n - 1];
	}
	e->used = ++ss_xc.clock;
	if (e->n == src->nstacks && e->n) {
		ss_xc.stats.hits++;
		return e;
	}
	ss_xc.stats.misses++;
	size_t from = e->n ? e->n : 1, add = src->nstacks - e->n;
	if (!xc_make_room(add, e))
		return NULL;
	if (ss_xc.trie.nodes.n + add > XC_MAX_NODES) {
		uint64_t id = e->id;
		bool head = e->is_head;

		xc_reset();
		struct xc_src z = { 0 };
		z.id = id;
		z.is_head = head;
		z.dict = d;
		z.used = ++ss_xc.clock;
		VEC_PUSH(&ss_xc.src, z);
		e = &ss_xc.src.v[0];
		from = 1;
		add = src->nstacks;
	}
	if (!e->n)
		e->sym_gen = gen;
	e->sym = sym;
	e->node = xrealloc(e->node, (src->nstacks + 1) * sizeof(uint32_t));
	e->node[0] = 0;
	np.sym = sym;
	ss_xlator_init(&x, &ss_xc.trie, d, &np);
	x.once = true;
	x.trie = true;
	xc_memo_init(&memo, d);
	if (e->n && e->locrec) /* a head grown: its locations so far are translated */
		memcpy(memo.loc, e->locrec,
		       PROF_MIN(e->nlocrec, d->locations.n) * sizeof(uint32_t));
	if (from == 1 && ss_xc.lrec.n)
		xc_prefill(&x, &memo, gen);
	qmap_reserve(&ss_xc.trie.child_idx, ss_xc.trie.nodes.n + add);
	if (ss_xc.trie.nodes.n > 1) {
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
		/* No frame filter here: every frame is a trie level (ss_xlator_apply's loop). */
		for (uint32_t f = 0; f < fr[0]; f++)
			at = query_stackset_child(&ss_xc.trie, at, fr[1 + 2 * f]);
		if (last) {
			last[0] = under;
			last[1] = at;
		}
		e->node[s] = at;
	}
	e->uses_sym |= x.used_sym;
	xc_keep_locations(e, &x, &memo, d->locations.n);
	xc_memo_release(&memo);
	ss_xlator_release(&x);
	ss_xc.mapped += src->nstacks - e->n;
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
	pthread_mutex_lock(&ss_xc.mu);
	*st = ss_xc.stats;
	st->nodes = ss_xc.ready ? ss_xc.trie.nodes.n : 0;
	st->mapped = ss_xc.mapped;
	st->locs = ss_xc.lrec.n;
	pthread_mutex_unlock(&ss_xc.mu);
}

void query_stackset_cache_clear(void)
{
	pthread_mutex_lock(&ss_xc.mu);
	if (ss_xc.ready)
		xc_reset();
	pthread_mutex_unlock(&ss_xc.mu);
}

/*
 * Name @name of @from as a name of @to (interned; @memo[name] caches id +
 * 1), with its raw-frame and source-location records.
 */
uint32_t ss_copy_name(struct query_stackset *to, const struct query_stackset *from, uint32_t *memo,
		      uint32_t name)
{
	if (memo[name])
		return memo[name] - 1;
	uint32_t id = query_stackset_name(to, from->names.s[name], from->names.len[name]);
	memo[name] = id + 1;

	const struct query_ss_raw *r = query_stackset_raw(from, name);
	if (r && !ss_of_get(to->raw_of, to->nraw_of, id)) {
		struct query_ss_raw nr = { r->address, 0, 0 };

		if (r->mapping)
			nr.mapping = ss_copy_name(to, from, memo, r->mapping);
		nr.fn_name = ss_copy_name(to, from, memo, r->fn_name);
		VEC_PUSH(&to->raw, nr);
		ss_of_put(&to->raw_of, &to->nraw_of, id, (uint32_t)to->raw.n);
		to->unsymbolized++;
	}
	const struct query_ss_srcloc *sl = query_stackset_srcloc(from, name);
	uint32_t have = sl ? ss_of_get(to->src_of, to->nsrc_of, id) : 0;
	if (sl && (!have || ss_srcloc_cmp_str(&to->srcs.v[have - 1], &to->names,
					      strtab_get(&from->names, sl->file), sl->line,
					      strtab_get(&from->names, sl->build_id),
					      strtab_get(&from->names, sl->mapping),
					      strtab_get(&from->names, sl->frame_type)) > 0)) {
		struct query_ss_srcloc n = *sl;

		n.file = sl->file ? ss_copy_name(to, from, memo, sl->file) : 0;
		n.build_id = sl->build_id ? ss_copy_name(to, from, memo, sl->build_id) : 0;
		n.mapping = sl->mapping ? ss_copy_name(to, from, memo, sl->mapping) : 0;
		n.frame_type = sl->frame_type ? ss_copy_name(to, from, memo, sl->frame_type) : 0;
		if (have) {
			to->srcs.v[have - 1] = n;
		} else {
			VEC_PUSH(&to->srcs, n);
			ss_of_put(&to->src_of, &to->nsrc_of, id, (uint32_t)to->srcs.n);
		}
	}
	return id;
}

/*
 * Give @ss (an empty set) the trie's names with the same ids, without
 * interning them again: its own copies of the id -> string and length
 * arrays and of the hash index, pointing into the trie's string chunks,
 * which the pin keeps alive; names @ss interns later go to chunks of its
 * own (struct strtab: chunk is NULL here, so its release frees only
 * those). Called with ss_xc.mu held.
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
	const struct strtab *t = &ss_xc.trie.names;
	struct strtab *n = &ss->names;

	strtab_release(n);
	n->n = n->cap = t->n;
	n->s = memdup_n(t->s, t->n * sizeof(*t->s));
	n->len = memdup_n(t->len, t->n * sizeof(*t->len));
	n->nslots = t->nslots;
	n->slots = memdup_n(t->slots, t->nslots * sizeof(*t->slots));
	ss->pin = ss_pin_get(ss_xc.pin);
}

/*
 * The raw-frame and source-location records of the names @ss's nodes
 * use, from the trie (ids are shared), with the names those records name
 * in turn (what ss_copy_name does name by name); each raw record counts as
 * an unsymbolized frame. A name's source location is its one variant, or
 * for a name of several what the query picked, @qvar[name] (@nqvar ids;
 * 0 = none). Called with ss_xc.mu held.
 */
static void xc_copy_records(struct query_stackset *ss, const uint32_t *qvar, size_t nqvar)
{
	const struct query_stackset *t = &ss_xc.trie;
	uint8_t *seen = xcalloc(t->names.n + 1, 1);
	VEC(uint32_t) work = { 0 };

	if (!t->raw.n && ss_xc.var.n <= 1)
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
		uint32_t st = nm < ss_xc.nname_var ? ss_xc.name_var[nm] : 0;
		uint32_t v = st == XC_MULTI ? (nm < nqvar ? qvar[nm] : 0) : st ? st - 1 : 0;
		const struct query_ss_srcloc *sl = v ? &ss_xc.var.v[v] : NULL;

		if (r) {
			VEC_PUSH(&ss->raw, *r);
			ss_of_put(&ss->raw_of, &ss->nraw_of, nm, (uint32_t)ss->raw.n);
			ss->unsymbolized++;
			next[nnext++] = r->mapping;
			next[nnext++] = r->fn_name;
		}
		if (sl) {
			VEC_PUSH(&ss->srcs, *sl);
			ss_of_put(&ss->src_of, &ss->nsrc_of, nm, (uint32_t)ss->srcs.n);
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
 * xc_copy_records. Called with ss_xc.mu held.
 */
int ss_xc_extract(const struct qacc *acc, size_t n, bool pair, const struct query_filter *f,
		  const uint32_t *qvar, size_t nqvar, struct query_stackset *ss)
{
	const struct query_stackset *t = &ss_xc.trie;
	if (ss_xc.nex < t->nodes.n + 1) {
		size_t want = t->nodes.n + t->nodes.n / 4 + 1;

		ss_xc.ex_newid = xreallocarray(ss_xc.ex_newid, want, sizeof(uint32_t));
		ss_xc.ex_mark = xrealloc(ss_xc.ex_mark, want);
		memset(ss_xc.ex_mark + ss_xc.nex, 0, want - ss_xc.nex);
		ss_xc.nex = want;
	}
	uint32_t *newid = ss_xc.ex_newid; /* read only where written below (0: the root) */
	uint8_t *mark = ss_xc.ex_mark;	  /* small: stays in cache */
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
