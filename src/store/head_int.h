/* SPDX-License-Identifier: Apache-2.0 */
/*
 * head_int.h - what the parts of the head share and nothing else
 * includes: head.c (the head's life, locks, stats, import), head_dict.c
 * (the hash-consed dictionary and stack tree), head_check.c (input
 * checks), head_series.c (series, attribute sets, adding profiles) and
 * head_scan.c (scans and per-series sums). head.h has the model and the
 * locking.
 */
#ifndef PROFD_STORE_HEAD_INT_H
#define PROFD_STORE_HEAD_INT_H

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
/* The chunk sums slot value of a run that has none (head.c). */
extern struct series_totals head_chunk_none;
#define CHUNK_NONE (&head_chunk_none)

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
static inline uint32_t h_intern(struct store_head *h, struct strtab *t, const char *s, size_t n)
{
	uint32_t before = t->n, id = strtab_intern(t, s, n);

	if (t->n != before)
		h->str_bytes +=
			n + 1 + 16 /* malloc overhead */ + 12 /* s[], len[] */ + 8 /* slots */;
	return id;
}

/* --- key blobs ---------------------------------------------------------- */

struct blob {
	unsigned char b[512];
	size_t n;
	struct buf *big; /* used once b overflows */
};

static inline void blob_add(struct blob *k, const void *p, size_t n)
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

static inline void blob_u32(struct blob *k, uint32_t v)
{
	blob_add(k, &v, sizeof(v));
}

static inline void blob_u64(struct blob *k, uint64_t v)
{
	blob_add(k, &v, sizeof(v));
}

static inline uint32_t blob_intern(struct store_head *h, struct strtab *t, struct blob *k,
				   bool *is_new)
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

void head_xlate_release(struct xlate *x);

uint32_t head_xl_location(struct store_head *h, struct xlate *x, uint32_t id);

uint32_t head_node_intern(struct store_head *h, uint32_t parent, uint32_t loc);

/* The stack-memo slot of @key: holds it, or is empty (write lock held). */
struct stack_slot *head_stack_slot(struct store_head *h, struct model_key key);

/*
 * Leaf node of the stack @locs[@n] (profile location ids, leaf first).
 * The stack's key (model_key_stack) is built without looking locations
 * up in the head, so a stack seen before costs one probe in all; @given,
 * when not NULL, is that key already (a decoder computed it).
 */
uint32_t head_stack_node(struct store_head *h, struct xlate *x, const uint32_t *locs, uint32_t n,
			 struct locpath *path, const struct model_key *given);

/*
 * The series (@type, @labels[@n], sorted by name, names distinct), made
 * if new (write lock held, or a head no other thread sees yet). For
 * backends that rebuild a head from rows they read (store/clickhouse.c).
 */
struct series *head_series_labels(struct store_head *h, const char *type,
				  const struct store_label *labels, size_t n);

/* Append row @r to series @se, as ingest does (same locking). */
void head_series_push(struct store_head *h, struct series *se, const struct store_row *r);

/* Does series @s have rows in [@from_ns, @to_ns] and match @type (NULL =
 * any) and the matchers @m[@nm] on its labels? head_series_match: the
 * type and the matchers only. */
bool head_series_selected(const struct series *s, const char *type, const struct store_matcher *m,
			  size_t nm, int64_t from_ns, int64_t to_ns);
bool head_series_match(const struct series *s, const char *type, const struct store_matcher *m,
		       size_t nm);

#endif
