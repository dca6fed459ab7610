// SPDX-License-Identifier: Apache-2.0
/*
 * head.c - the in-memory head: hash-consed symbol dictionary, stack tree,
 * series and sample rows; see head.h for the model and locking.
 *
 * Hash-consing of mappings reuses strtab: a mapping is serialized into a
 * small key blob and interned, and the dense strtab id is its index
 * (strtab id 0 is "", which no blob equals, matching the zero entry at
 * index 0 of the dictionary tables). Locations, many per request, get
 * open-addressing tables without key blobs: plain native locations
 * (mapping + address, no lines: what eBPF agents send) one keyed by
 * (mapping, address), the others one holding a hash of the translated
 * fields and lines and the location id, compared field by field with
 * the dictionary entry. Stack nodes, far more numerous, get their own
 * table keyed by (parent, location) with the key in the slot, one cache
 * line per probe.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/stackkey.h"
#include "store/head.h"

#include <pthread.h>

/*
 * Rows of a series come in arrival order, which is nearly but not quite
 * time order; each run of SPAN_ROWS rows (rows [i * SPAN_ROWS, (i + 1) *
 * SPAN_ROWS)) keeps the time range of its rows, so a scan of part of the
 * series' range skips the runs wholly outside it and hands the runs
 * wholly inside it out in place, testing rows only in the runs that
 * straddle a bound. 16 bytes per 256 rows (of 24 bytes): 0.3 %.
 */
#define SPAN_ROWS 256

struct span {
	int64_t min_ts, max_ts;
};

/*
 * Per-stack sums of a series' first @nrows rows, in the order each stack
 * first appears among them: what summing those rows one by one gives,
 * entry for entry (store_head_scan_totals). Kept only when every value is
 * >= 0 (then saturating sums do not depend on grouping) and the distinct
 * stacks are at most a quarter of the rows.
 */
struct series_totals {
	size_t nrows, n;
	struct store_stack_total e[];
};

/*
 * Each completed run of CHUNK_ROWS rows of a series (rows [k * CHUNK_ROWS,
 * (k + 1) * CHUNK_ROWS), CHUNK_SPANS spans) may keep its own per-stack
 * sums (a struct series_totals of those rows) for totals queries whose
 * range covers the run but not the whole series (the halves of a diff, a
 * range that ends before now): built by the first such query, never at
 * ingest, under the same conditions as a series' sums (values >= 0, at
 * most a quarter of the rows distinct stacks: at most 6 bytes per row of
 * 24), else marked CHUNK_NONE and not tried again (a completed run does
 * not change). Entries come in the order stacks first appear in the run,
 * so runs summed in row order give what summing the rows one by one does.
 */
#define CHUNK_ROWS  8192
#define CHUNK_SPANS (CHUNK_ROWS / SPAN_ROWS)
static struct series_totals chunk_none;
#define CHUNK_NONE (&chunk_none)

/*
 * The unfinished last run of a series (rows from @lo = k * CHUNK_ROWS on,
 * fewer than CHUNK_ROWS) may keep the sums of its first completed spans
 * (struct series_totals of rows [lo, lo + nrows), nrows a multiple of
 * SPAN_ROWS, at least TAIL_MIN_ROWS): a range that cuts the series but
 * covers those spans (a diff's second half, the last 30 minutes: the run
 * being written is always unfinished) adds them and reads only the rows
 * after. Built by the first such query, never at ingest, under the
 * conditions of a series' sums, and renewed like them when the completed
 * spans since are over a quarter of the run; once the run completes, its
 * run sums (CHUNK_ROWS) take over and the next run's tail replaces these.
 */
#define TAIL_MIN_ROWS (CHUNK_ROWS / 4)

struct series {
	struct store_series pub;
	VEC(struct store_label) labels;
	VEC(struct store_row) rows;
	VEC(struct span) spans;	      /* rows.n / SPAN_ROWS rounded up */
	struct series_totals *tot;    /* under the head's tot_mu */
	size_t tot_tried;	      /* rows.n when a build last gave up */
	struct series_totals **chunk; /* [nchunk]: run sums, NULL or CHUNK_NONE (tot_mu) */
	size_t nchunk;
	struct series_totals *tail; /* sums of the unfinished run from tail_lo (tot_mu) */
	size_t tail_lo, tail_tried; /* its first row; rows summed when a build gave up */
};

/* A stack node slot carries its key, so a probe touches one cache line. */
struct node_slot {
	uint32_t parent, loc;
	uint32_t id1; /* node id + 1, 0 = empty */
};

/*
 * Unsymbolized native locations (a mapping and an address, no lines,
 * the bulk of what an eBPF agent sends) skip the key-blob interning:
 * one probe in this table instead of hashing and comparing a blob.
 */
struct addr_slot {
	uint64_t addr;
	uint32_t mapping; /* head mapping id */
	uint32_t id1;	  /* head location id + 1, 0 = empty */
};

/*
 * Other locations (with lines, folded or typed): a hash of the translated
 * location (loc_hash) and its id; equality is checked against the
 * dictionary entry itself, so no key is stored twice.
 */
struct loc_slot {
	uint32_t hash;
	uint32_t id1; /* head location id + 1, 0 = empty */
};

/* Whole-stack memo slot (see stack_node). */
struct stack_slot {
	uint64_t lo, hi; /* XXH3-128 of the stack's key (see stack_node), root first */
	uint32_t id1;	 /* leaf node + 1, 0 = empty */
};

struct locpath {
	struct model_key *v;
	size_t n, cap;
};

struct store_head {
	pthread_rwlock_t lock;
	struct model_profile dict;
	struct strtab map_keys;	    /* mapping key blob -> mapping index */
	struct loc_slot *loc_slots; /* other locations: hash -> id */
	uint32_t loc_nslots, loc_n; /* power of two; entries */

	VEC(struct store_stack_node) nodes;
	struct node_slot *node_slots;	/* open addressing on (parent, loc) */
	uint32_t node_nslots;		/* power of two */
	struct addr_slot *addr_slots;	/* plain native locations: (mapping, address) */
	uint32_t addr_nslots, addr_n;	/* power of two; entries */
	struct stack_slot *stack_slots; /* whole stacks seen: hash -> leaf node */
	uint32_t stack_nslots, stack_n;

	struct strtab series_keys; /* series key blob -> series index + 1 */
	struct strtab label_strs;  /* label names and values, type ids */
	VEC(struct series *) series;

	struct strtab set_keys;		 /* attribute set key blob -> set id ("" = set 0) */
	struct strtab attr_keys;	 /* names used by some attribute set */
	VEC(struct store_attr_set) sets; /* by id; labels malloc'd, strings in label_strs */
	uint64_t set_bytes;

	uint64_t rows, profiles;
	int64_t min_ts, max_ts; /* over all rows */
	uint64_t str_bytes;	/* bytes held by the strtabs' strings (estimate) */
	uint64_t row_bytes;	/* capacity of the series' row arrays, in bytes */
	uint64_t series_bytes;	/* series structs and their label arrays */
	pthread_mutex_t tot_mu; /* the series' totals caches (queries build them) */
	uint64_t tot_bytes;	/* their memory (atomic: head_bytes reads it unlocked) */
};

/* Intern into one of the head's tables, counting the memory a new entry takes. */
static uint32_t h_intern(struct store_head *h, struct strtab *t, const char *s, size_t n)
{
	uint32_t before = t->n, id = strtab_intern(t, s, n);

	if (t->n != before)
		h->str_bytes +=
			n + 1 + 16 /* malloc overhead */ + 12 /* s[], len[] */ + 8 /* slots */;
	return id;
}

struct store_head *store_head_new(void)
{
	struct store_head *h = xcalloc(1, sizeof(*h));
	struct store_stack_node root = { 0, 0 };
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	/* Queued writers (ingest) go before new readers (queries). */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&h->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&h->tot_mu, NULL);
	model_profile_init(&h->dict);
	strtab_init(&h->map_keys);
	strtab_init(&h->series_keys);
	strtab_init(&h->label_strs);
	strtab_init(&h->set_keys);
	strtab_init(&h->attr_keys);
	{
		struct store_attr_set empty = { 0 };

		VEC_PUSH(&h->sets, empty);
	}
	VEC_PUSH(&h->nodes, root);
	h->min_ts = INT64_MAX;
	h->max_ts = INT64_MIN;
	return h;
}

void store_head_free(struct store_head *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->series.n; i++) {
		VEC_FREE(&h->series.v[i]->labels);
		VEC_FREE(&h->series.v[i]->rows);
		VEC_FREE(&h->series.v[i]->spans);
		free(h->series.v[i]->tot);
		for (size_t k = 0; k < h->series.v[i]->nchunk; k++)
			if (h->series.v[i]->chunk[k] != CHUNK_NONE)
				free(h->series.v[i]->chunk[k]);
		free(h->series.v[i]->chunk);
		free(h->series.v[i]->tail);
		free(h->series.v[i]);
	}
	VEC_FREE(&h->series);
	for (size_t i = 0; i < h->sets.n; i++)
		free((void *)h->sets.v[i].labels);
	VEC_FREE(&h->sets);
	strtab_release(&h->set_keys);
	strtab_release(&h->attr_keys);
	VEC_FREE(&h->nodes);
	free(h->node_slots);
	free(h->addr_slots);
	free(h->stack_slots);
	free(h->loc_slots);
	strtab_release(&h->label_strs);
	strtab_release(&h->series_keys);
	strtab_release(&h->map_keys);
	model_profile_release(&h->dict);
	pthread_rwlock_destroy(&h->lock);
	pthread_mutex_destroy(&h->tot_mu);
	free(h);
}

/* --- key blobs ---------------------------------------------------------- */

struct blob {
	unsigned char b[512];
	size_t n;
	struct buf *big; /* used once b overflows */
};

static void blob_add(struct blob *k, const void *p, size_t n)
{
	if (!k->big && k->n + n <= sizeof(k->b)) {
		memcpy(k->b + k->n, p, n);
		k->n += n;
		return;
	}
	if (!k->big) {
		k->big = xcalloc(1, sizeof(*k->big));
		buf_init(k->big, 0);
		PROF_ASSERT(buf_add(k->big, k->b, k->n) == 0);
	}
	PROF_ASSERT(buf_add(k->big, p, n) == 0);
}

static void blob_u32(struct blob *k, uint32_t v)
{
	blob_add(k, &v, sizeof(v));
}

static void blob_u64(struct blob *k, uint64_t v)
{
	blob_add(k, &v, sizeof(v));
}

static uint32_t blob_intern(struct store_head *h, struct strtab *t, struct blob *k, bool *is_new)
{
	const char *p = k->big ? k->big->p : (const char *)k->b;
	size_t n = k->big ? k->big->len : k->n;
	uint32_t before = t->n, id = h_intern(h, t, p, n);

	*is_new = t->n != before;
	if (k->big) {
		buf_release(k->big);
		free(k->big);
		k->big = NULL;
	}
	return id;
}

/* --- translation of one profile into the dictionary ---------------------- */

/* A content key (model/stackkey.h), valid for the dictionary whose epoch it carries. */
struct hslot {
	struct model_key h;
	uint32_t epoch;
};

struct xlate {
	const struct model_profile *p;
	/* profile index -> head index, UINT32_MAX = unmapped; allocated on first use */
	uint32_t *str, *map, *fn, *loc;
	VEC(struct model_line) lines; /* scratch: a location's translated lines */
	/* content keys by profile index (stack_node): add_scratch's tables,
	 * entries of this dictionary carry @epoch; NULL outside ingest */
	struct hslot *str_h, *map_h, *loc_h;
	uint32_t epoch;
	VEC(struct model_key_line) klines; /* scratch: a location's lines */
};

/*
 * The translation table *@t for a profile table of @n entries: allocated
 * on first use (a profile whose stacks all hit the whole-stack memo needs
 * none but the mappings'), every entry unmapped except the zero entry.
 */
static uint32_t *xl_tab(uint32_t **t, size_t n)
{
	if (!*t) {
		*t = xmalloc(sizeof(uint32_t) * (n + 1));
		memset(*t, 0xff, sizeof(uint32_t) * (n + 1));
		(*t)[0] = 0;
	}
	return *t;
}

static void xlate_release(struct xlate *x)
{
	free(x->str);
	free(x->map);
	free(x->fn);
	free(x->loc);
	VEC_FREE(&x->lines);
	VEC_FREE(&x->klines);
}

static uint32_t xl_str(struct store_head *h, struct xlate *x, uint32_t id)
{
	xl_tab(&x->str, x->p->strings.n);
	if (x->str[id] == UINT32_MAX)
		x->str[id] =
			h_intern(h, &h->dict.strings, x->p->strings.s[id], x->p->strings.len[id]);
	return x->str[id];
}

static uint32_t xl_mapping(struct store_head *h, struct xlate *x, uint32_t id)
{
	if (xl_tab(&x->map, x->p->mappings.n)[id] != UINT32_MAX)
		return x->map[id];
	const struct model_mapping *m = &x->p->mappings.v[id];
	struct model_mapping nm = *m;
	struct blob k = { .n = 0 };
	bool is_new;

	nm.filename = xl_str(h, x, m->filename);
	nm.build_id = xl_str(h, x, m->build_id);
	blob_add(&k, "M", 1);
	blob_u64(&k, nm.memory_start);
	blob_u64(&k, nm.memory_limit);
	blob_u64(&k, nm.file_offset);
	blob_u32(&k, nm.filename);
	blob_u32(&k, nm.build_id);
	blob_u32(&k, model_mapping_flags(&nm));
	uint32_t hid = blob_intern(h, &h->map_keys, &k, &is_new);
	if (is_new) {
		uint32_t got = model_mapping_add(&h->dict, &nm);

		PROF_ASSERT(got == hid);
	}
	x->map[id] = hid;
	return hid;
}

static uint32_t xl_function(struct store_head *h, struct xlate *x, uint32_t id)
{
	if (xl_tab(&x->fn, x->p->functions.n)[id] != UINT32_MAX)
		return x->fn[id];
	const struct model_function *f = &x->p->functions.v[id];

	x->fn[id] =
		model_function_intern(&h->dict, xl_str(h, x, f->name), xl_str(h, x, f->system_name),
				      xl_str(h, x, f->filename), f->start_line);
	return x->fn[id];
}

/* A plain native location: named by (mapping, address) alone (see addr_slot). */
static bool plain_location(const struct model_location *l)
{
	return !l->nlines && !l->is_folded && !l->frame_type;
}

static uint32_t addr_hash(uint32_t mapping, uint64_t addr)
{
	uint64_t z = addr * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)mapping << 32 | mapping);

	z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
	return (uint32_t)(z ^ (z >> 32));
}

static void addr_rehash(struct store_head *h)
{
	uint32_t ns = h->addr_nslots ? h->addr_nslots * 2 : 1024;
	struct addr_slot *old = h->addr_slots;
	uint32_t on = h->addr_nslots;

	h->addr_slots = xcalloc(ns, sizeof(*h->addr_slots));
	h->addr_nslots = ns;
	for (uint32_t i = 0; i < on; i++) {
		if (!old[i].id1)
			continue;
		uint32_t s = addr_hash(old[i].mapping, old[i].addr) & (ns - 1);

		while (h->addr_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->addr_slots[s] = old[i];
	}
	free(old);
}

/* Slot of (mapping, addr) in the plain-location table: holds it, or is empty. */
static struct addr_slot *addr_slot(struct store_head *h, uint32_t mapping, uint64_t addr)
{
	if ((h->addr_n + 1) * 2 > h->addr_nslots)
		addr_rehash(h);
	uint32_t s = addr_hash(mapping, addr) & (h->addr_nslots - 1);
	struct addr_slot *sl;

	while ((sl = &h->addr_slots[s])->id1) {
		if (sl->addr == addr && sl->mapping == mapping)
			break;
		s = (s + 1) & (h->addr_nslots - 1);
	}
	return sl;
}

/*
 * Hash of a location with lines (splitmix64-style mixing of every field;
 * the table compares the fields on a hash match, so this only spreads).
 */
static uint32_t loc_hash(uint32_t mapping, uint64_t addr, bool folded, uint32_t frame_type,
			 const struct model_line *lines, uint32_t nlines)
{
	uint64_t z = addr * 0x9e3779b97f4a7c15ULL ^
		     ((uint64_t)mapping << 32 | (uint64_t)frame_type << 1 | folded);

	z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL ^ nlines;
	for (uint32_t i = 0; i < nlines; i++) {
		z ^= lines[i].function + 0x632be59bd9b4e019ULL;
		z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
		z ^= (uint64_t)lines[i].line * 0xff51afd7ed558ccdULL ^ (uint64_t)lines[i].column;
		z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
	}
	return (uint32_t)(z ^ (z >> 32));
}

static void loc_rehash(struct store_head *h)
{
	uint32_t ns = h->loc_nslots ? h->loc_nslots * 2 : 1024;
	struct loc_slot *old = h->loc_slots;
	uint32_t on = h->loc_nslots;

	h->loc_slots = xcalloc(ns, sizeof(*h->loc_slots));
	h->loc_nslots = ns;
	for (uint32_t i = 0; i < on; i++) {
		if (!old[i].id1)
			continue;
		uint32_t s = old[i].hash & (ns - 1);

		while (h->loc_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->loc_slots[s] = old[i];
	}
	free(old);
}

/* Field by field: struct model_line has padding, so no memcmp. */
static bool lines_equal(const struct model_line *a, const struct model_line *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].function != b[i].function || a[i].line != b[i].line ||
		    a[i].column != b[i].column)
			return false;
	return true;
}

/*
 * Head id of the location with these translated fields and @lines[@nlines]
 * (head function ids), adding it if new (write lock held).
 */
static uint32_t loc_intern(struct store_head *h, uint32_t mapping, uint64_t addr, bool folded,
			   uint32_t frame_type, const struct model_line *lines, uint32_t nlines)
{
	uint32_t hash = loc_hash(mapping, addr, folded, frame_type, lines, nlines), s, got;
	struct loc_slot *sl;

	if ((h->loc_n + 1) * 2 > h->loc_nslots)
		loc_rehash(h);
	s = hash & (h->loc_nslots - 1);
	while ((sl = &h->loc_slots[s])->id1) {
		const struct model_location *l = &h->dict.locations.v[sl->id1 - 1];

		if (sl->hash == hash && l->address == addr && l->mapping == mapping &&
		    l->nlines == nlines && l->is_folded == folded && l->frame_type == frame_type &&
		    lines_equal(&h->dict.lines.v[l->line_off], lines, nlines))
			return sl->id1 - 1;
		s = (s + 1) & (h->loc_nslots - 1);
	}
	got = model_location_add(&h->dict, mapping, addr, lines, nlines);
	h->dict.locations.v[got].is_folded = folded;
	h->dict.locations.v[got].frame_type = frame_type;
	*sl = (struct loc_slot){ hash, got + 1 };
	h->loc_n++;
	return got;
}

static uint32_t xl_location(struct store_head *h, struct xlate *x, uint32_t id)
{
	if (xl_tab(&x->loc, x->p->locations.n)[id] != UINT32_MAX)
		return x->loc[id];
	const struct model_location *l = &x->p->locations.v[id];
	uint32_t mapping = l->mapping ? xl_mapping(h, x, l->mapping) : 0;
	if (plain_location(l)) {
		struct addr_slot *sl = addr_slot(h, mapping, l->address);

		if (!sl->id1) {
			uint32_t got = model_location_add(&h->dict, mapping, l->address, NULL, 0);

			*sl = (struct addr_slot){ l->address, mapping, got + 1 };
			h->addr_n++;
		}
		x->loc[id] = sl->id1 - 1;
		return x->loc[id];
	}
	uint32_t frame_type = xl_str(h, x, l->frame_type);

	x->lines.n = 0;
	VEC_RESERVE(&x->lines, l->nlines);
	for (uint32_t i = 0; i < l->nlines; i++) {
		struct model_line ln = x->p->lines.v[l->line_off + i];

		ln.function = ln.function ? xl_function(h, x, ln.function) : 0;
		x->lines.v[x->lines.n++] = ln;
	}
	x->loc[id] =
		loc_intern(h, mapping, l->address, l->is_folded, frame_type, x->lines.v, l->nlines);
	return x->loc[id];
}

/* --- content keys --------------------------------------------------------- */

/*
 * The whole-stack memo (stack_node) keys a stack by the content of its
 * locations (model/stackkey.h), the same key fmt_otlp_decode_pending
 * computes from the wire, so a stack seen before costs no dictionary
 * lookups at all. Each string, mapping and location key is computed once
 * per dictionary.
 */
static struct model_key xh_str(struct xlate *x, uint32_t id)
{
	struct hslot *e = &x->str_h[id];

	if (e->epoch != x->epoch) {
		e->h = model_key_bytes(x->p->strings.s[id], x->p->strings.len[id]);
		e->epoch = x->epoch;
	}
	return e->h;
}

static struct model_key xh_mapping(struct xlate *x, uint32_t id)
{
	struct hslot *e = &x->map_h[id];

	if (!id)
		return (struct model_key){ 0, 0 };
	if (e->epoch != x->epoch) {
		const struct model_mapping *m = &x->p->mappings.v[id];

		e->h = model_key_mapping(m->memory_start, m->memory_limit, m->file_offset,
					 xh_str(x, m->filename), xh_str(x, m->build_id),
					 model_mapping_flags(m));
		e->epoch = x->epoch;
	}
	return e->h;
}

/* The key of location @id of the profile (model_key_location), once per dictionary. */
static struct model_key xh_location(struct xlate *x, uint32_t id)
{
	struct hslot *e = &x->loc_h[id];

	if (e->epoch == x->epoch)
		return e->h;
	e->epoch = x->epoch;
	const struct model_location *l = &x->p->locations.v[id];
	struct model_key map = xh_mapping(x, l->mapping), ft = xh_str(x, l->frame_type);

	x->klines.n = 0;
	VEC_RESERVE(&x->klines, l->nlines);
	for (uint32_t i = 0; i < l->nlines; i++) {
		const struct model_line *ln = &x->p->lines.v[l->line_off + i];
		const struct model_function *f = &x->p->functions.v[ln->function];

		/* Function 0 (none) reads as all empty strings, like a function with
		 * empty names, which the head keeps apart: has_function tells them apart. */
		x->klines.v[i] = (struct model_key_line){ x->p->strings.s[f->name],
							  x->p->strings.s[f->system_name],
							  x->p->strings.s[f->filename],
							  x->p->strings.len[f->name],
							  x->p->strings.len[f->system_name],
							  x->p->strings.len[f->filename],
							  f->start_line,
							  ln->function != 0,
							  ln->line,
							  ln->column };
	}
	e->h = model_key_location(map, l->address, l->is_folded, ft, x->klines.v, l->nlines);
	return e->h;
}

/* --- stack tree ------------------------------------------------------------ */

static uint32_t node_hash(uint32_t parent, uint32_t loc)
{
	uint64_t z = ((uint64_t)parent << 32 | loc) + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)(z ^ (z >> 31));
}

static void node_rehash(struct store_head *h)
{
	uint32_t ns = h->node_nslots ? h->node_nslots * 2 : 1024;

	free(h->node_slots);
	h->node_slots = xcalloc(ns, sizeof(*h->node_slots));
	h->node_nslots = ns;
	for (uint32_t id = 1; id < h->nodes.n; id++) {
		const struct store_stack_node *nd = &h->nodes.v[id];
		uint32_t s = node_hash(nd->parent, nd->loc) & (ns - 1);

		while (h->node_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->node_slots[s] = (struct node_slot){ nd->parent, nd->loc, id + 1 };
	}
}

static uint32_t node_intern(struct store_head *h, uint32_t parent, uint32_t loc)
{
	uint32_t s;
	struct node_slot *sl;

	if ((h->nodes.n + 1) * 2 > h->node_nslots)
		node_rehash(h);
	s = node_hash(parent, loc) & (h->node_nslots - 1);
	while ((sl = &h->node_slots[s])->id1) {
		if (sl->parent == parent && sl->loc == loc)
			return sl->id1 - 1;
		s = (s + 1) & (h->node_nslots - 1);
	}
	PROF_ASSERT(h->nodes.n < UINT32_MAX - 1);
	struct store_stack_node nd = { parent, loc };
	VEC_PUSH(&h->nodes, nd);
	uint32_t id = (uint32_t)h->nodes.n - 1;
	*sl = (struct node_slot){ parent, loc, id + 1 };
	return id;
}

/*
 * Whole stacks: a table from the 128-bit XXH3 of a stack's location keys
 * (root first; see stack_node) to its leaf node, so a stack seen before in
 * this head costs one probe instead of one per frame (deep stacks: 20..60
 * probes, each a cache miss in a large tree) and no dictionary lookups. A
 * collision of two different stacks needs a 2^-128 event; the first walk
 * of every stack is exact.
 */
static void stack_rehash(struct store_head *h)
{
	uint32_t ns = h->stack_nslots ? h->stack_nslots * 2 : 1024;
	struct stack_slot *old = h->stack_slots;
	uint32_t on = h->stack_nslots;

	h->stack_slots = xcalloc(ns, sizeof(*h->stack_slots));
	h->stack_nslots = ns;
	for (uint32_t i = 0; i < on; i++) {
		if (!old[i].id1)
			continue;
		uint32_t s = (uint32_t)old[i].lo & (ns - 1);

		while (h->stack_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->stack_slots[s] = old[i];
	}
	free(old);
}

/* The stack-memo slot of @key: holds it, or is empty (write lock held). */
static struct stack_slot *stack_slot(struct store_head *h, struct model_key key)
{
	uint32_t s = (uint32_t)key.lo & (h->stack_nslots - 1);
	struct stack_slot *sl;

	while ((sl = &h->stack_slots[s])->id1) {
		if (sl->lo == key.lo && sl->hi == key.hi)
			break;
		s = (s + 1) & (h->stack_nslots - 1);
	}
	return sl;
}

/*
 * Leaf node of the stack @locs[@n] (profile location ids, leaf first).
 * The stack's key (model_key_stack) is built without looking locations
 * up in the head, so a stack seen before costs one probe in all; @given,
 * when not NULL, is that key already (a decoder computed it).
 */
static uint32_t stack_node(struct store_head *h, struct xlate *x, const uint32_t *locs, uint32_t n,
			   struct locpath *path, const struct model_key *given)
{
	uint32_t node = 0;
	struct model_key key;

	if (!n)
		return 0;
	if (given) {
		key = *given;
	} else {
		VEC_RESERVE(path, n);
		for (uint32_t j = 0; j < n; j++)
			path->v[j] = xh_location(x, locs[n - 1 - j]);
		key = model_key_stack(path->v, n);
	}
	if ((h->stack_n + 1) * 2 > h->stack_nslots)
		stack_rehash(h);
	struct stack_slot *sl = stack_slot(h, key);
	if (sl->id1)
		return sl->id1 - 1;
	for (uint32_t j = 0; j < n; j++)
		node = node_intern(h, node, xl_location(h, x, locs[n - 1 - j]));
	*sl = (struct stack_slot){ key.lo, key.hi, node + 1 };
	h->stack_n++;
	return node;
}

/* --- input checks -------------------------------------------------------- */

#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		if (!(cond))                                                       \
			return prof_err_set(err, -PROF_ECORRUPT, -1, __VA_ARGS__); \
	} while (0)

/* The checks both store_head_check and store_head_check_validated start with. */
static int check_header(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	CHECK(ns >= 1 && p->mappings.n >= 1 && p->functions.n >= 1 && p->locations.n >= 1,
	      "profile: dictionary tables lack their zero entry");
	CHECK(p->time_ns >= 0 && p->time_ns <= STORE_HEAD_MAX_TIME_NS,
	      "profile: time %" PRId64 " ns out of range (0 .. %" PRId64 " unix ns)", p->time_ns,
	      (int64_t)STORE_HEAD_MAX_TIME_NS);
	return 0;
}

int store_head_check(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	if (check_header(p, err))
		return -PROF_ECORRUPT;
	for (size_t i = 0; i < p->sample_types.n; i++)
		CHECK(p->sample_types.v[i].type < ns && p->sample_types.v[i].unit < ns,
		      "sample type %zu: string index out of range", i);
	CHECK(p->period_type.type < ns && p->period_type.unit < ns && p->name < ns,
	      "profile: period type or name string index out of range");
	for (size_t i = 0; i < p->mappings.n; i++)
		CHECK(p->mappings.v[i].filename < ns && p->mappings.v[i].build_id < ns,
		      "mapping %zu: string index out of range (%u strings)", i, ns);
	for (size_t i = 0; i < p->functions.n; i++) {
		const struct model_function *f = &p->functions.v[i];

		CHECK(f->name < ns && f->system_name < ns && f->filename < ns,
		      "function %zu: string index out of range (%u strings)", i, ns);
	}
	for (size_t i = 0; i < p->locations.n; i++) {
		const struct model_location *l = &p->locations.v[i];

		CHECK(l->mapping < p->mappings.n, "location %zu: mapping %u out of range (%zu)", i,
		      l->mapping, p->mappings.n);
		CHECK(l->frame_type < ns, "location %zu: frame type string out of range", i);
		CHECK((uint64_t)l->line_off + l->nlines <= p->lines.n,
		      "location %zu: lines out of range", i);
		for (uint32_t j = 0; j < l->nlines; j++)
			CHECK(p->lines.v[l->line_off + j].function < p->functions.n,
			      "location %zu line %u: function out of range", i, j);
	}
	for (size_t i = 0; i < p->attrs.n; i++)
		CHECK(p->attrs.v[i].key < ns && p->attrs.v[i].str < ns,
		      "attribute %zu: string index out of range", i);
	/* Every stack entry once: samples share stack ranges (decoders intern stacks). */
	for (size_t i = 0; i < p->stack_locs.n; i++)
		CHECK(p->stack_locs.v[i] < p->locations.n,
		      "stack entry %zu: location %u out of range (%zu locations)", i,
		      p->stack_locs.v[i], p->locations.n);
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];

		CHECK((uint64_t)s->stack_off + s->nstack <= p->stack_locs.n,
		      "sample %zu: stack range out of bounds", i);
		CHECK((uint64_t)s->value_off + p->sample_types.n <= p->values.n,
		      "sample %zu: values out of bounds", i);
		CHECK((uint64_t)s->label_off + s->nlabels <= p->labels.n,
		      "sample %zu: attributes out of bounds", i);
		CHECK(s->link == 0 || s->link < p->links.n, "sample %zu: link %u out of range", i,
		      s->link);
		CHECK(s->timestamp_ns >= 0 && s->timestamp_ns <= STORE_HEAD_MAX_TIME_NS,
		      "sample %zu: timestamp %" PRId64 " ns out of range (0 .. %" PRId64
		      " unix ns)",
		      i, s->timestamp_ns, (int64_t)STORE_HEAD_MAX_TIME_NS);
	}
	for (size_t i = 0; i < p->labels.n; i++)
		CHECK(p->labels.v[i].key < ns && p->labels.v[i].str < ns,
		      "sample attribute %zu: string index out of range", i);
	return 0;
}

int store_head_check_validated(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	for (size_t i = 0; i < p->locations.n; i++)
		CHECK(p->locations.v[i].frame_type < ns,
		      "location %zu: frame type string out of range", i);
	return store_head_check_samples(p, err);
}

int store_head_check_samples(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	if (check_header(p, err))
		return -PROF_ECORRUPT;
	CHECK(p->period_type.type < ns && p->period_type.unit < ns && p->name < ns,
	      "profile: period type or name string index out of range");
	for (size_t i = 0; i < p->attrs.n; i++)
		CHECK(p->attrs.v[i].key < ns && p->attrs.v[i].str < ns,
		      "attribute %zu: string index out of range", i);
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];

		CHECK((uint64_t)s->value_off + p->sample_types.n <= p->values.n,
		      "sample %zu: values out of bounds", i);
		CHECK(s->timestamp_ns >= 0 && s->timestamp_ns <= STORE_HEAD_MAX_TIME_NS,
		      "sample %zu: timestamp %" PRId64 " ns out of range (0 .. %" PRId64
		      " unix ns)",
		      i, s->timestamp_ns, (int64_t)STORE_HEAD_MAX_TIME_NS);
	}
	return 0;
}

/* --- series -------------------------------------------------------------- */

struct attr_ref {
	const char *key, *val;
	size_t pos;
	char num[24];
};

static int attr_cmp(const void *a, const void *b)
{
	const struct attr_ref *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The label set of @p (sorted by name, first value of a key wins). */
static size_t profile_labels(const struct model_profile *p, struct attr_ref **out)
{
	struct attr_ref *a = xcalloc(p->attrs.n + 1, sizeof(*a));
	size_t n = 0, k = 0;

	for (size_t i = 0; i < p->attrs.n; i++) {
		const struct model_label *l = &p->attrs.v[i];
		struct attr_ref *r = &a[n];

		r->key = model_str(p, l->key);
		if (!*r->key)
			continue;
		if (l->str) {
			r->val = model_str(p, l->str);
		} else {
			snprintf(r->num, sizeof(r->num), "%" PRId64, l->num);
			r->val = NULL; /* fixed up below: r->num moves with qsort */
		}
		r->pos = i;
		n++;
	}
	qsort(a, n, sizeof(*a), attr_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(a[k - 1].key, a[i].key))
			continue;
		a[k++] = a[i];
	}
	*out = a;
	return k;
}

static const char *attr_val(const struct attr_ref *r)
{
	return r->val ? r->val : r->num;
}

static struct series *series_get(struct store_head *h, const char *type,
				 const struct attr_ref *labels, size_t nlabels)
{
	struct blob key = { .n = 0 };
	uint32_t id;
	bool is_new;

	blob_add(&key, type, strlen(type) + 1);
	for (size_t i = 0; i < nlabels; i++) {
		blob_add(&key, labels[i].key, strlen(labels[i].key) + 1);
		blob_add(&key, attr_val(&labels[i]), strlen(attr_val(&labels[i])) + 1);
	}
	id = blob_intern(h, &h->series_keys, &key, &is_new);
	if (!is_new)
		return h->series.v[id - 1];

	struct series *s = xcalloc(1, sizeof(*s));
	PROF_ASSERT(id - 1 == h->series.n);
	s->pub.id = id - 1;
	s->pub.type = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, type, strlen(type)));
	for (size_t i = 0; i < nlabels; i++) {
		struct store_label l;
		const char *v = attr_val(&labels[i]);

		l.name = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, labels[i].key,
							     strlen(labels[i].key)));
		l.value = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, v, strlen(v)));
		VEC_PUSH(&s->labels, l);
	}
	h->series_bytes +=
		sizeof(*s) + sizeof(struct series *) + s->labels.cap * sizeof(struct store_label);
	s->pub.labels = s->labels.v;
	s->pub.nlabels = (uint32_t)s->labels.n;
	s->pub.min_ts_ns = INT64_MAX;
	s->pub.max_ts_ns = INT64_MIN;
	VEC_PUSH(&h->series, s);
	return s;
}

/* --- attribute sets ------------------------------------------------------ */

/*
 * Id of the set (@labels[@n], sorted by name, names distinct; @link or
 * NULL), hash-consed on a key blob: the count, length-prefixed names and
 * values, then 0xff and the link; the empty set is never interned (it is
 * set 0, and no blob equals "", strtab id 0).
 * Write lock held.
 */
static uint32_t set_intern(struct store_head *h, const struct store_label *labels, uint32_t n,
			   const struct model_link *link)
{
	struct blob key = { .n = 0 };
	uint32_t id;
	bool is_new;

	if (!n && !link)
		return 0;
	blob_u32(&key, n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ln = (uint32_t)strlen(labels[i].name),
			 lv = (uint32_t)strlen(labels[i].value);

		blob_u32(&key, ln);
		blob_add(&key, labels[i].name, ln);
		blob_u32(&key, lv);
		blob_add(&key, labels[i].value, lv);
	}
	if (link) {
		blob_add(&key, "\xff", 1);
		blob_add(&key, link->trace_id, 16);
		blob_add(&key, link->span_id, 8);
	}
	id = blob_intern(h, &h->set_keys, &key, &is_new);
	if (!is_new)
		return id;
	PROF_ASSERT(id == h->sets.n);
	struct store_attr_set st = { 0 };
	struct store_label *ls = xcalloc(n + 1, sizeof(*ls));
	for (uint32_t i = 0; i < n; i++) {
		ls[i].name = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, labels[i].name,
								 strlen(labels[i].name)));
		ls[i].value =
			strtab_get(&h->label_strs, h_intern(h, &h->label_strs, labels[i].value,
							    strlen(labels[i].value)));
		h_intern(h, &h->attr_keys, labels[i].name, strlen(labels[i].name));
	}
	st.labels = ls;
	st.nlabels = n;
	if (link) {
		st.has_link = true;
		memcpy(st.trace_id, link->trace_id, 16);
		memcpy(st.span_id, link->span_id, 8);
	}
	VEC_PUSH(&h->sets, st);
	h->set_bytes += sizeof(st) + (n + 1) * sizeof(*ls) + 16;
	return id;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_label *)a)->name, ((const struct store_label *)b)->name);
}

/*
 * The attribute set of sample @s of @p (write lock held). @num is scratch
 * for the decimal form of numeric values (24 bytes per label).
 */
static uint32_t sample_set(struct store_head *h, const struct model_profile *p,
			   const struct model_sample *s, struct store_label *tmp, char (*num)[24])
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < s->nlabels; k++) {
		const struct model_label *l = &p->labels.v[s->label_off + k];
		const char *key = model_str(p, l->key);
		bool dup = false;

		if (!*key)
			continue;
		for (uint32_t j = 0; j < n && !dup; j++)
			dup = !strcmp(tmp[j].name, key); /* the first value of a key wins */
		if (dup)
			continue;
		tmp[n].name = key;
		if (l->str) {
			tmp[n].value = model_str(p, l->str);
		} else {
			snprintf(num[n], sizeof(num[n]), "%" PRId64, l->num);
			tmp[n].value = num[n];
		}
		n++;
	}
	if (n > 1)
		qsort(tmp, n, sizeof(*tmp), label_cmp);
	return set_intern(h, tmp, n, s->link ? &p->links.v[s->link] : NULL);
}

/*
 * Per-profile memo of attribute sets: samples of one profile whose label
 * ranges hold the same (key, string, number) triples and the same link
 * get the same set, so only the first of them is rendered, sorted and
 * interned (agents repeat a thread's attributes on all its samples).
 * Open addressing on a hash of the triples and the link; an entry names
 * the sample it came from, whose labels are compared on a hash match.
 */
struct set_memo_slot {
	uint64_t hash;
	uint32_t sample1; /* sample index + 1, 0 = empty */
	uint32_t set;
};

struct set_memo {
	struct set_memo_slot *v;
	uint32_t nslots; /* power of two, >= 2 * samples */
};

static uint64_t sample_labels_hash(const struct model_profile *p, const struct model_sample *s)
{
	uint64_t z = (uint64_t)s->nlabels * 0x9e3779b97f4a7c15ULL ^ s->link;

	for (uint32_t k = 0; k < s->nlabels; k++) {
		const struct model_label *l = &p->labels.v[s->label_off + k];

		z ^= ((uint64_t)l->key << 32 | l->str) + 0x632be59bd9b4e019ULL;
		z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
		z ^= (uint64_t)l->num * 0xff51afd7ed558ccdULL;
		z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
	}
	return z ^ (z >> 32);
}

/* Same labels (key, string, number; the unit does not reach a set) and link. */
static bool sample_labels_equal(const struct model_profile *p, const struct model_sample *a,
				const struct model_sample *b)
{
	if (a->nlabels != b->nlabels || a->link != b->link)
		return false;
	for (uint32_t k = 0; k < a->nlabels; k++) {
		const struct model_label *x = &p->labels.v[a->label_off + k],
					 *y = &p->labels.v[b->label_off + k];

		if (x->key != y->key || x->str != y->str || x->num != y->num)
			return false;
	}
	return true;
}

/* sample_set through the memo @m (write lock held). */
static uint32_t sample_set_memo(struct store_head *h, const struct model_profile *p, size_t i,
				struct set_memo *m, struct store_label *tmp, char (*num)[24])
{
	const struct model_sample *s = &p->samples.v[i];
	uint64_t hash = sample_labels_hash(p, s);
	uint32_t at = (uint32_t)hash & (m->nslots - 1);
	struct set_memo_slot *sl;

	while ((sl = &m->v[at])->sample1) {
		if (sl->hash == hash && sample_labels_equal(p, &p->samples.v[sl->sample1 - 1], s))
			return sl->set;
		at = (at + 1) & (m->nslots - 1);
	}
	*sl = (struct set_memo_slot){ hash, (uint32_t)i + 1, sample_set(h, p, s, tmp, num) };
	return sl->set;
}

void store_head_import_attrs(struct store_head *h, const struct store_attr_set *sets, size_t n,
			     uint32_t *map)
{
	struct model_link ln;

	pthread_rwlock_wrlock(&h->lock);
	map[0] = 0;
	for (size_t i = 1; i < n; i++) {
		if (sets[i].has_link) {
			memcpy(ln.trace_id, sets[i].trace_id, 16);
			memcpy(ln.span_id, sets[i].span_id, 8);
		}
		map[i] = set_intern(h, sets[i].labels, sets[i].nlabels,
				    sets[i].has_link ? &ln : NULL);
	}
	pthread_rwlock_unlock(&h->lock);
}

const struct store_attr_set *store_head_attrs(const struct store_head *h, size_t *n)
{
	*n = h->sets.n;
	return h->sets.v;
}

bool store_head_has_attr_key(const struct store_head *h, const char *name)
{
	return strtab_find(&h->attr_keys, name, strlen(name)) != UINT32_MAX;
}

int store_head_add(struct store_head *h, const struct model_profile *p, int64_t default_ts_ns,
		   struct prof_err *err)
{
	int rc = store_head_check(p, err);

	if (rc)
		return rc;
	store_head_add_checked(h, p, default_ts_ns);
	return 0;
}

/*
 * What consecutive profiles of one store_head_add_batch that share a
 * dictionary (model_profile_same_dict) share: the translation of its
 * entries to head ids and content keys, and the leaf node of each stack
 * range, so the profiles of one OTLP request (one per process and sample
 * type over the same stacks) translate each entry once.
 */
/* The leaf node of a stack range (+ 1) and its length, for the dictionary
 * whose epoch it carries. */
struct stack_slot_memo {
	uint32_t node1, n, epoch;
};

/*
 * The tables add_ctx fills per dictionary (content hashes of its strings
 * and locations, leaf nodes by stack_off), kept between calls (spares,
 * base/mem.h) so that a request does not allocate and zero them (they are
 * sized by the dictionary: 50 KiB for a request of 1200 locations): an
 * entry holds for the dictionary whose epoch it carries, and epochs only
 * grow; the tables are zeroed when the epoch would wrap. A kept scratch
 * holds at most ADD_KEEP_BYTES.
 */
struct add_scratch {
	uint32_t epoch; /* of the dictionary in use, >= 1 */
	struct hslot *str_h, *map_h, *loc_h;
	struct stack_slot_memo *stack;
	size_t str_cap, map_cap, loc_cap, stack_cap;
};

#define ADD_KEEP_BYTES (4u << 20)

static struct prof_spares add_spares = PROF_SPARES_INIT;

static void add_scratch_free(struct add_scratch *sc)
{
	if (sc) {
		free(sc->str_h);
		free(sc->map_h);
		free(sc->loc_h);
		free(sc->stack);
		free(sc);
	}
}

/* A kept scratch (base/mem.h spares: the one used last), or a new one. */
static struct add_scratch *add_scratch_get(void)
{
	struct add_scratch *sc = prof_spares_take(&add_spares);

	return sc ? sc : xcalloc(1, sizeof(*sc));
}

/* Keeps @sc as a spare, or frees it when it is large or spares are full. */
static void add_scratch_put(struct add_scratch *sc)
{
	size_t bytes = (sc->str_cap + sc->map_cap + sc->loc_cap) * sizeof(struct hslot) +
		       sc->stack_cap * sizeof(*sc->stack);

	if (bytes > ADD_KEEP_BYTES || !prof_spares_give(&add_spares, sc))
		add_scratch_free(sc);
}

/* Zeroed room for @n entries of @size bytes in *@v (capacity *@cap). */
static void scratch_room(void **v, size_t *cap, size_t n, size_t size)
{
	if (n <= *cap)
		return;
	free(*v);
	*cap = PROF_MAX(n, 2 * *cap);
	*v = xcalloc(*cap, size);
}

/* A new epoch for dictionary @p, with room for its tables. */
static void add_scratch_use(struct add_scratch *sc, const struct model_profile *p)
{
	if (sc->epoch == UINT32_MAX) {
		memset(sc->str_h, 0, sc->str_cap * sizeof(*sc->str_h));
		memset(sc->map_h, 0, sc->map_cap * sizeof(*sc->map_h));
		memset(sc->loc_h, 0, sc->loc_cap * sizeof(*sc->loc_h));
		memset(sc->stack, 0, sc->stack_cap * sizeof(*sc->stack));
		sc->epoch = 0;
	}
	sc->epoch++;
	scratch_room((void **)&sc->str_h, &sc->str_cap, p->strings.n + 1, sizeof(*sc->str_h));
	scratch_room((void **)&sc->map_h, &sc->map_cap, p->mappings.n + 1, sizeof(*sc->map_h));
	scratch_room((void **)&sc->loc_h, &sc->loc_cap, p->locations.n + 1, sizeof(*sc->loc_h));
	scratch_room((void **)&sc->stack, &sc->stack_cap, p->stack_locs.n + 1, sizeof(*sc->stack));
}

struct add_ctx {
	struct xlate x;
	struct add_scratch *sc;
	struct locpath path;
};

static void add_ctx_release(struct add_ctx *c)
{
	xlate_release(&c->x);
	memset(&c->x, 0, sizeof(c->x));
}

/* Point @c at @p's dictionary, keeping what it has when @p shares it. */
static void add_ctx_use(struct add_ctx *c, const struct model_profile *p)
{
	if (c->x.p && (c->x.p == p || model_profile_same_dict(c->x.p, p))) {
		c->x.p = p;
		return;
	}
	add_ctx_release(c);
	add_scratch_use(c->sc, p);
	c->x.p = p;
	c->x.str_h = c->sc->str_h;
	c->x.map_h = c->sc->map_h;
	c->x.loc_h = c->sc->loc_h;
	c->x.epoch = c->sc->epoch;
}

/*
 * The leaf node of each stack the pending profiles @p[0..@n) (sharing
 * @pd) use, by the decoder's stack id; UINT32_MAX for those this head
 * lacks, counted in *@missing. Nodes are never removed from a head, so
 * the answer holds after the read lock is dropped.
 */
static uint32_t *pending_nodes(struct store_head *h, const struct model_pending *pd,
			       const struct model_profile *const *p, size_t n, size_t *missing)
{
	uint32_t *node = xmalloc(sizeof(*node) * pd->nkeys);

	memset(node, 0xff, sizeof(*node) * pd->nkeys);
	*missing = 0;
	pthread_rwlock_rdlock(&h->lock);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < p[i]->samples.n; j++) {
			uint32_t si = p[i]->samples.v[j].stack_off;
			struct model_key key = pd->key[si];
			const struct stack_slot *sl;

			if (node[si] != UINT32_MAX)
				continue;
			if (!key.lo && !key.hi) {
				node[si] = 0; /* the empty stack */
				continue;
			}
			sl = h->stack_nslots ? stack_slot(h, key) : NULL;
			if (sl && sl->id1) {
				node[si] = sl->id1 - 1;
			} else {
				node[si] = UINT32_MAX - 1; /* counted once */
				(*missing)++;
			}
		}
	}
	pthread_rwlock_unlock(&h->lock);
	for (size_t i = 0; *missing && i < pd->nkeys; i++)
		if (node[i] == UINT32_MAX - 1)
			node[i] = UINT32_MAX;
	return node;
}

/*
 * Add @p's rows. A profile with pending stacks takes each sample's leaf
 * node from @known (pending_nodes) and translates nothing. A profile
 * resolved because some stack was unknown comes with @sis, its samples'
 * stack ids from before: it takes the known nodes from @known, and the
 * others by translating with the decoder's @keys (then noted in @known).
 */
static void add_profile(struct store_head *h, struct add_ctx *c, const struct model_profile *p,
			int64_t default_ts_ns, uint32_t *known, const uint32_t *sis,
			const struct model_key *keys)
{
	struct xlate *xp = &c->x;
	struct attr_ref *labels = NULL;
	struct series **ser = NULL;
	struct set_memo memo = { NULL, 0 };
	struct stack_slot_memo *stack_cache;
	uint32_t epoch;
	char type[512];

	if (p->samples.n == 0 || p->sample_types.n == 0)
		return;
	/* The memo is sized for all samples at half load; huge profiles go without. */
	if (p->samples.n <= (1u << 28)) {
		memo.nslots = 16;
		while (memo.nslots < 2 * p->samples.n)
			memo.nslots *= 2;
	}

	if (!p->pending) {
		add_ctx_use(c, p);
		stack_cache = c->sc->stack;
		epoch = c->x.epoch;
	} else {
		stack_cache = NULL;
		epoch = 0;
	}

	size_t nlabels = profile_labels(p, &labels);
	ser = xcalloc(p->sample_types.n, sizeof(*ser));
	uint32_t maxsl = 0;
	for (size_t i = 0; i < p->samples.n; i++)
		maxsl = PROF_MAX(maxsl, p->samples.v[i].nlabels);
	struct store_label *sl = xcalloc(maxsl + 1, sizeof(*sl));
	char(*slnum)[24] = xcalloc(maxsl + 1, sizeof(*slnum));

	pthread_rwlock_wrlock(&h->lock);
	for (size_t t = 0; t < p->sample_types.n; t++) {
		model_profile_type_id(p, (uint32_t)t, type, sizeof(type));
		ser[t] = series_get(h, type, labels, nlabels);
	}
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];
		uint32_t node = 0;

		/* Samples sharing a stack range share the walk. */
		struct stack_slot_memo *sm =
			s->nstack && stack_cache ? &stack_cache[s->stack_off] : NULL;

		if (p->pending) {
			node = known[s->stack_off];
		} else if (sis && known[sis[i]] != UINT32_MAX) {
			node = known[sis[i]];
		} else if (sm && sm->epoch == epoch && sm->n == s->nstack) {
			node = sm->node1 - 1;
		} else {
			node = stack_node(h, xp, p->stack_locs.v + s->stack_off, s->nstack,
					  &c->path, sis ? &keys[sis[i]] : NULL);
			if (sm)
				*sm = (struct stack_slot_memo){ node + 1, s->nstack, epoch };
			if (sis)
				known[sis[i]] = node;
		}
		int64_t ts = s->timestamp_ns ? s->timestamp_ns
					     : (p->time_ns ? p->time_ns : default_ts_ns);
		uint32_t set = 0;

		if ((s->nlabels || s->link) && memo.nslots) {
			if (!memo.v)
				memo.v = xcalloc(memo.nslots, sizeof(*memo.v));
			set = sample_set_memo(h, p, i, &memo, sl, slnum);
		} else if (s->nlabels || s->link) {
			set = sample_set(h, p, s, sl, slnum);
		}
		for (size_t t = 0; t < p->sample_types.n; t++) {
			int64_t v = p->values.v[s->value_off + t];
			struct series *se = ser[t];

			if (v == 0)
				continue; /* adds nothing to any sum; pprof often has zero columns */
			struct store_row r = { ts, v, node, set };
			size_t cap = se->rows.cap;
			VEC_PUSH(&se->rows, r);
			h->row_bytes += (se->rows.cap - cap) * sizeof(r);
			if ((se->rows.n - 1) % SPAN_ROWS == 0) {
				struct span sp = { ts, ts };

				cap = se->spans.cap;
				VEC_PUSH(&se->spans, sp);
				h->row_bytes += (se->spans.cap - cap) * sizeof(sp);
			} else {
				struct span *sp = &se->spans.v[se->spans.n - 1];

				sp->min_ts = PROF_MIN(sp->min_ts, ts);
				sp->max_ts = PROF_MAX(sp->max_ts, ts);
			}
			se->pub.nrows = se->rows.n;
			se->pub.min_ts_ns = PROF_MIN(se->pub.min_ts_ns, ts);
			se->pub.max_ts_ns = PROF_MAX(se->pub.max_ts_ns, ts);
			h->min_ts = PROF_MIN(h->min_ts, ts);
			h->max_ts = PROF_MAX(h->max_ts, ts);
			h->rows++;
		}
	}
	h->profiles++;
	pthread_rwlock_unlock(&h->lock);

	free(ser);
	free(labels);
	free(sl);
	free(slnum);
	free(memo.v);
}

void store_head_add_checked(struct store_head *h, const struct model_profile *p,
			    int64_t default_ts_ns)
{
	store_head_add_batch(h, &p, 1, default_ts_ns);
}

void store_head_add_batch(struct store_head *h, const struct model_profile *const *p, size_t n,
			  int64_t default_ts_ns)
{
	struct add_ctx c;

	struct model_pending *pd = NULL;
	const struct model_key *keys = NULL;
	uint32_t *known = NULL, *sis = NULL;
	size_t end = 0, next = 0; /* profiles [.., end) share pd; next: their sis */

	memset(&c, 0, sizeof(c));
	c.sc = add_scratch_get();
	for (size_t i = 0; i < n; i++) {
		if (i >= end) {
			free(known);
			free(sis);
			known = sis = NULL;
			pd = NULL;
		}
		if (p[i]->pending && p[i]->pending != pd) {
			size_t missing, total = 0;

			pd = p[i]->pending;
			keys = pd->key;
			for (end = i; end < n && p[end]->pending == pd; end++)
				total += p[end]->samples.n;
			known = pending_nodes(h, pd, p + i, end - i, &missing);
			if (missing) {
				/* a stack this head lacks: translate the batch, keeping each
				 * sample's stack id to take the known ones and the keys */
				sis = xmalloc(sizeof(*sis) * (total + 1));
				next = 0;
				for (size_t j = i; j < end; j++)
					for (size_t k = 0; k < p[j]->samples.n; k++)
						sis[next++] = p[j]->samples.v[k].stack_off;
				next = 0;
				pd->resolve(pd);
			}
		}
		add_profile(h, &c, p[i], default_ts_ns, known, sis ? sis + next : NULL, keys);
		if (sis)
			next += p[i]->samples.n;
	}
	free(known);
	free(sis);
	add_ctx_release(&c);
	VEC_FREE(&c.path);
	add_scratch_put(c.sc);
}

/* --- readers ------------------------------------------------------------- */

void store_head_rdlock(struct store_head *h)
{
	pthread_rwlock_rdlock(&h->lock);
}

void store_head_rdunlock(struct store_head *h)
{
	pthread_rwlock_unlock(&h->lock);
}

const struct model_profile *store_head_dict(const struct store_head *h)
{
	return &h->dict;
}

const struct store_stack_node *store_head_stacks(const struct store_head *h, size_t *n)
{
	*n = h->nodes.n;
	return h->nodes.v;
}

static const char *series_label(const struct series *s, const char *name)
{
	const char *alt = store_label_alias(name);

	for (size_t i = 0; i < s->labels.n; i++)
		if (!strcmp(s->labels.v[i].name, name))
			return s->labels.v[i].value;
	for (size_t i = 0; alt && i < s->labels.n; i++) /* stored by an earlier version */
		if (!strcmp(s->labels.v[i].name, alt))
			return s->labels.v[i].value;
	return NULL;
}

static bool series_selected(const struct series *s, const char *type, const struct store_matcher *m,
			    size_t nm, int64_t from_ns, int64_t to_ns)
{
	if (!s->rows.n || s->pub.max_ts_ns < from_ns || s->pub.min_ts_ns > to_ns)
		return false;
	if (type && strcmp(type, s->pub.type))
		return false;
	for (size_t i = 0; i < nm; i++)
		if (!store_matcher_match(&m[i], series_label(s, m[i].name)))
			return false;
	return true;
}

/* Memory of kept sums @t, as h->tot_bytes counts it. */
static size_t totals_bytes(const struct series_totals *t)
{
	return sizeof(*t) + t->n * sizeof(t->e[0]);
}

/*
 * Put @t (NULL ok) in *@slot, moving h->tot_bytes from the sums there
 * before to @t's; returns those (the caller frees them after tot_mu).
 */
static struct series_totals *totals_install(struct store_head *h, struct series_totals **slot,
					    struct series_totals *t)
{
	struct series_totals *old = *slot;

	if (old)
		__atomic_sub_fetch(&h->tot_bytes, totals_bytes(old), __ATOMIC_RELAXED);
	if (t)
		__atomic_add_fetch(&h->tot_bytes, totals_bytes(t), __ATOMIC_RELAXED);
	*slot = t;
	return old;
}

/*
 * The totals of @rows[@n] (see struct series_totals), or NULL when a
 * value is negative or the stacks are too many for sums to pay.
 */
static struct series_totals *series_totals_build(const struct store_row *rows, size_t n)
{
	size_t nslots = 64, max = n / 4;
	struct series_totals *t;
	uint32_t *slot; /* (entry index + 1, stack) pairs; index 0 = empty */

	while (nslots < 2 * max)
		nslots *= 2;
	slot = xcalloc(nslots, 2 * sizeof(*slot));
	t = xmalloc(sizeof(*t) + (max + 1) * sizeof(t->e[0]));
	t->nrows = n;
	t->n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct store_row *r = &rows[i];
		uint32_t k = (uint32_t)(r->stack * 0x9E3779B1u) & (uint32_t)(nslots - 1);

		if (r->value < 0)
			goto fail;
		while (slot[2 * k] && slot[2 * k + 1] != r->stack)
			k = (k + 1) & (uint32_t)(nslots - 1);
		if (!slot[2 * k]) {
			if (t->n == max)
				goto fail;
			slot[2 * k] = (uint32_t)++t->n;
			slot[2 * k + 1] = r->stack;
			t->e[t->n - 1] = (struct store_stack_total){ r->stack, 0, 0 };
		}
		struct store_stack_total *e = &t->e[slot[2 * k] - 1];

		e->total = prof_add_sat(e->total, r->value);
		e->rows++;
	}
	free(slot);
	return t;
fail:
	free(slot);
	free(t);
	return NULL;
}

/*
 * Hand @tfn the kept sums of @s's first rows, building or renewing them
 * first when the rows appended since are over a quarter of the series
 * (rdlock held: rows do not change; tot_mu orders the queries that build).
 * Sets *@done to the rows the sums cover (0 = none: scan them all).
 */
static int series_totals_use(struct store_head *h, struct series *s, store_scan_totals_fn tfn,
			     void *arg, size_t *done)
{
	size_t n = s->rows.n;
	struct series_totals *t, *old = NULL;
	int rc = 0;

	*done = 0;
	if (n < SPAN_ROWS)
		return 0;
	pthread_mutex_lock(&h->tot_mu);
	t = s->tot;
	if (!(t && n - t->nrows <= n / 4)) {
		bool tried = s->tot_tried && n - s->tot_tried <= n / 4;

		pthread_mutex_unlock(&h->tot_mu);
		if (tried)
			return 0;
		t = series_totals_build(s->rows.v, n);
		pthread_mutex_lock(&h->tot_mu);
		if (!t) {
			s->tot_tried = n;
		} else if (!s->tot || s->tot->nrows < t->nrows) {
			old = totals_install(h, &s->tot, t);
		} else {
			old = t; /* another query built as much or more meanwhile */
			t = s->tot;
		}
	}
	if (t) {
		rc = tfn(arg, &s->pub, t->e, t->n, t->nrows);
		*done = t->nrows;
	}
	pthread_mutex_unlock(&h->tot_mu);
	free(old);
	return rc;
}

/*
 * The kept sums of run @k of @s (complete: (@k + 1) * CHUNK_ROWS <=
 * rows.n; see CHUNK_ROWS), built now when no query has tried yet, or
 * NULL when the run keeps none. Kept sums do not change until the head is
 * freed, so they are read without tot_mu (rdlock held).
 */
static const struct series_totals *series_chunk(struct store_head *h, struct series *s, size_t k)
{
	struct series_totals *t, *mine;

	pthread_mutex_lock(&h->tot_mu);
	t = k < s->nchunk ? s->chunk[k] : NULL;
	pthread_mutex_unlock(&h->tot_mu);
	if (t)
		return t == CHUNK_NONE ? NULL : t;
	mine = series_totals_build(s->rows.v + k * CHUNK_ROWS, CHUNK_ROWS);
	if (!mine)
		mine = CHUNK_NONE;
	pthread_mutex_lock(&h->tot_mu);
	if (k >= s->nchunk) {
		size_t want = s->rows.n / CHUNK_ROWS;

		s->chunk = xreallocarray(s->chunk, want, sizeof(*s->chunk));
		memset(s->chunk + s->nchunk, 0, (want - s->nchunk) * sizeof(*s->chunk));
		__atomic_add_fetch(&h->tot_bytes, (want - s->nchunk) * sizeof(*s->chunk),
				   __ATOMIC_RELAXED);
		s->nchunk = want;
	}
	t = s->chunk[k];
	if (!t) {
		t = s->chunk[k] = mine;
		if (mine != CHUNK_NONE)
			__atomic_add_fetch(&h->tot_bytes, totals_bytes(t), __ATOMIC_RELAXED);
	} else if (mine != CHUNK_NONE) {
		free(mine); /* another query built it meanwhile */
	}
	pthread_mutex_unlock(&h->tot_mu);
	return t == CHUNK_NONE ? NULL : t;
}

/* Are spans @sp[@n] all within [@from_ns, @to_ns]? */
static bool spans_within(const struct span *sp, size_t n, int64_t from_ns, int64_t to_ns)
{
	for (size_t i = 0; i < n; i++)
		if (sp[i].min_ts < from_ns || sp[i].max_ts > to_ns)
			return false;
	return true;
}

/*
 * Hand @tfn the kept sums of the unfinished last run of @s, which starts
 * at row @lo (see TAIL_MIN_ROWS), when [@from_ns, @to_ns] covers the spans
 * they sum; built or renewed first (rdlock held: rows do not change;
 * tot_mu orders the queries that build and guards s->tail while @tfn
 * reads it). Sets *@done to the rows the sums cover (0 = none).
 */
static int series_tail_use(struct store_head *h, struct series *s, size_t lo, int64_t from_ns,
			   int64_t to_ns, store_scan_totals_fn tfn, void *arg, size_t *done)
{
	size_t avail = (s->rows.n - lo) / SPAN_ROWS * SPAN_ROWS; /* rows of completed spans */
	struct series_totals *t, *old = NULL;
	int rc = 0;

	*done = 0;
	if (avail < TAIL_MIN_ROWS ||
	    !spans_within(&s->spans.v[lo / SPAN_ROWS], avail / SPAN_ROWS, from_ns, to_ns))
		return 0;
	pthread_mutex_lock(&h->tot_mu);
	t = s->tail && s->tail_lo == lo ? s->tail : NULL;
	if (!(t && avail - t->nrows <= avail / 4)) {
		bool tried =
			s->tail_lo == lo && s->tail_tried && avail - s->tail_tried <= avail / 4;

		pthread_mutex_unlock(&h->tot_mu);
		if (tried)
			return 0;
		t = series_totals_build(s->rows.v + lo, avail);
		pthread_mutex_lock(&h->tot_mu);
		if (!t || !s->tail || s->tail_lo != lo || s->tail->nrows < t->nrows) {
			/* the old one is stale, or another run's: not used again */
			old = totals_install(h, &s->tail, t);
			s->tail_lo = lo;
			s->tail_tried = t ? 0 : avail;
		} else {
			old = t; /* another query built as much or more meanwhile */
			t = s->tail;
		}
	}
	if (t) {
		rc = tfn(arg, &s->pub, t->e, t->n, t->nrows);
		*done = t->nrows;
	}
	pthread_mutex_unlock(&h->tot_mu);
	free(old);
	return rc;
}

int store_head_scan(struct store_head *h, const char *type, const struct store_matcher *m,
		    size_t nm, int64_t from_ns, int64_t to_ns, store_scan_fn fn, void *arg)
{
	return store_head_scan_totals(h, type, m, nm, from_ns, to_ns, fn, NULL, arg);
}

int store_head_scan_totals(struct store_head *h, const char *type, const struct store_matcher *m,
			   size_t nm, int64_t from_ns, int64_t to_ns, store_scan_fn fn,
			   store_scan_totals_fn tfn, void *arg)
{
	struct store_row batch[1024];
	int rc;

	for (size_t i = 0; i < h->series.n; i++) {
		struct series *s = h->series.v[i];

		if (!series_selected(s, type, m, nm, from_ns, to_ns))
			continue;
		if (s->pub.min_ts_ns >= from_ns && s->pub.max_ts_ns <= to_ns) {
			/* The whole series is in range: its kept sums, then the
			 * rows in place. */
			size_t done = 0;

			if (tfn) {
				rc = series_totals_use(h, s, tfn, arg, &done);
				if (rc)
					return rc;
			}
			if (done < s->rows.n) {
				rc = fn(arg, &s->pub, s->rows.v + done, s->rows.n - done);
				if (rc)
					return rc;
			}
			continue;
		}
		/*
		 * Part of it: by spans (see SPAN_ROWS), a completed run of
		 * CHUNK_ROWS rows wholly in range by its kept sums when it has
		 * them (see CHUNK_ROWS); the batch keeps arrival order.
		 */
		size_t nb = 0;
		for (size_t k = 0; k < s->spans.n; k++) {
			const struct span *sp = &s->spans.v[k];
			size_t lo = k * SPAN_ROWS, hi = PROF_MIN(lo + SPAN_ROWS, s->rows.n);

			if (sp->max_ts < from_ns || sp->min_ts > to_ns)
				continue;
			if (tfn && k % CHUNK_SPANS == 0 && lo + CHUNK_ROWS <= s->rows.n &&
			    spans_within(sp, CHUNK_SPANS, from_ns, to_ns)) {
				const struct series_totals *t = series_chunk(h, s, k / CHUNK_SPANS);

				if (t) {
					if (nb) {
						rc = fn(arg, &s->pub, batch, nb);
						if (rc)
							return rc;
						nb = 0;
					}
					rc = tfn(arg, &s->pub, t->e, t->n, t->nrows);
					if (rc)
						return rc;
					k += CHUNK_SPANS - 1;
					continue;
				}
			}
			if (tfn && k % CHUNK_SPANS == 0 && lo + CHUNK_ROWS > s->rows.n &&
			    s->rows.n - lo >= TAIL_MIN_ROWS) {
				/* The unfinished last run: its kept sums, if in range. */
				size_t done;

				if (nb) {
					rc = fn(arg, &s->pub, batch, nb);
					if (rc)
						return rc;
					nb = 0;
				}
				rc = series_tail_use(h, s, lo, from_ns, to_ns, tfn, arg, &done);
				if (rc)
					return rc;
				if (done) {
					k += done / SPAN_ROWS - 1;
					continue;
				}
			}
			if (sp->min_ts >= from_ns && sp->max_ts <= to_ns) {
				/* A run of spans wholly in range: in place (up to a
				 * run with sums, with @tfn). */
				while (k + 1 < s->spans.n && (!tfn || (k + 1) % CHUNK_SPANS) &&
				       s->spans.v[k + 1].min_ts >= from_ns &&
				       s->spans.v[k + 1].max_ts <= to_ns) {
					k++;
					hi = PROF_MIN(hi + SPAN_ROWS, s->rows.n);
				}
				if (nb) {
					rc = fn(arg, &s->pub, batch, nb);
					if (rc)
						return rc;
					nb = 0;
				}
				rc = fn(arg, &s->pub, s->rows.v + lo, hi - lo);
				if (rc)
					return rc;
				continue;
			}
			for (size_t j = lo; j < hi; j++) {
				const struct store_row *r = &s->rows.v[j];

				if (r->ts_ns < from_ns || r->ts_ns > to_ns)
					continue;
				batch[nb++] = *r;
				if (nb == PROF_ARRAY_SIZE(batch)) {
					rc = fn(arg, &s->pub, batch, nb);
					if (rc)
						return rc;
					nb = 0;
				}
			}
		}
		if (nb) {
			rc = fn(arg, &s->pub, batch, nb);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int store_head_types(struct store_head *h, int64_t from_ns, int64_t to_ns,
		     int (*fn)(void *arg, const char *type), void *arg)
{
	const char **types = xcalloc(h->series.n + 1, sizeof(*types));
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < h->series.n; i++)
		if (series_selected(h->series.v[i], NULL, NULL, 0, from_ns, to_ns))
			types[n++] = h->series.v[i]->pub.type;
	qsort(types, n, sizeof(*types), cmp_str);
	for (size_t i = 0; i < n && !rc; i++)
		if (i == 0 || strcmp(types[i - 1], types[i]))
			rc = fn(arg, types[i]);
	free(types);
	return rc;
}

/* Memory held, in bytes: an estimate within a few percent (allocator overhead aside). */
static uint64_t head_bytes(const struct store_head *h)
{
	const struct model_profile *d = &h->dict;

	return sizeof(*h) + h->row_bytes + h->series_bytes + h->str_bytes + h->set_bytes +
	       __atomic_load_n(&h->tot_bytes, __ATOMIC_RELAXED) + h->sets.cap * sizeof(*h->sets.v) +
	       h->nodes.cap * sizeof(*h->nodes.v) +
	       (uint64_t)h->node_nslots * sizeof(*h->node_slots) +
	       (uint64_t)h->addr_nslots * sizeof(*h->addr_slots) +
	       (uint64_t)h->loc_nslots * sizeof(*h->loc_slots) +
	       (uint64_t)h->stack_nslots * sizeof(*h->stack_slots) +
	       d->mappings.cap * sizeof(*d->mappings.v) +
	       d->functions.cap * sizeof(*d->functions.v) +
	       d->locations.cap * sizeof(*d->locations.v) + d->lines.cap * sizeof(*d->lines.v) +
	       (uint64_t)d->fn_nslots * sizeof(uint32_t);
}

size_t store_head_nseries(const struct store_head *h)
{
	return h->series.n;
}

const struct store_series *store_head_series_at(const struct store_head *h, size_t i,
						const struct store_row **rows)
{
	PROF_ASSERT(i < h->series.n);
	*rows = h->series.v[i]->rows.v;
	return &h->series.v[i]->pub;
}

int store_head_import(struct store_head *h, const struct model_profile *src,
		      const struct store_stack_node *nodes, size_t nnodes, uint32_t *map)
{
	struct xlate x = { .p = src };
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = store_head_check(src, &err);
	if (rc)
		return rc;
	for (size_t i = 1; i < nnodes; i++)
		if (nodes[i].parent >= i || nodes[i].loc >= src->locations.n)
			return -PROF_ECORRUPT;
	pthread_rwlock_wrlock(&h->lock);
	map[0] = 0;
	for (size_t i = 1; i < nnodes; i++)
		map[i] = node_intern(h, map[nodes[i].parent], xl_location(h, &x, nodes[i].loc));
	pthread_rwlock_unlock(&h->lock);
	xlate_release(&x);
	return 0;
}

void store_head_get_stats(struct store_head *h, struct store_head_stats *st)
{
	pthread_rwlock_rdlock(&h->lock);
	st->series = h->series.n;
	st->rows = h->rows;
	st->stack_nodes = h->nodes.n;
	st->locations = h->dict.locations.n;
	st->functions = h->dict.functions.n;
	st->mappings = h->dict.mappings.n;
	st->strings = h->dict.strings.n;
	st->profiles = h->profiles;
	st->min_ts_ns = h->min_ts;
	st->max_ts_ns = h->max_ts;
	st->bytes = head_bytes(h);
	pthread_rwlock_unlock(&h->lock);
}
