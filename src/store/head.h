/* SPDX-License-Identifier: Apache-2.0 */
/*
 * head.h - the in-memory part of the store: everything ingested since
 * start (rebuilt from the WAL), indexed for the query engine.
 *
 * Data model (stacks are stored once; docs/storage-format.md, "In-memory
 * head"):
 *
 *   - one symbol dictionary for the whole head, a struct model_profile
 *     used only for its tables: strings, mappings, functions, locations
 *     and their inline lines. Entries are hash-consed, so equal mappings,
 *     functions and locations (recursively equal, by value) from
 *     different profiles get one id. Locations stay as ingested: an
 *     unsymbolized native frame is (mapping with file + build ID, ELF
 *     virtual address, no lines) and is resolved at query time, so
 *     symbols found later apply to old data too;
 *   - stacks: a parent-pointer tree of locations. Node 0 is the root
 *     (the empty stack); node i > 0 is (parent, location) and a stack is
 *     named by its leaf node. Nodes are hash-consed on (parent, location),
 *     so shared prefixes are stored once. Invariant: parent < id, so a
 *     pass in id order sees parents before children;
 *   - series: profile type id ("process_cpu:cpu:nanoseconds:cpu:nanoseconds",
 *     model_profile_type_id) + label set. Labels are the profile-level
 *     attributes (OTLP resource, scope and profile attributes), keys as
 *     they are, numbers written in decimal; the first value of a repeated
 *     key wins. Sorted by name;
 *   - rows: per series (timestamp ns, stack id, value, attribute set).
 *     A sample without a timestamp gets the profile's time, else the
 *     ingest time;
 *   - attribute sets: a sample's own attributes (OTLP Sample attributes,
 *     pprof labels: thread.name, thread.id, cpu.id, ...; numbers in
 *     decimal, first value of a repeated key wins, sorted by name) and its
 *     link (OTLP trace and span id), hash-consed into a table shared by
 *     the head's rows; a row names its set by index, 0 = no attributes and
 *     no link. A set is per sample, a series label per profile: a query
 *     matcher on a name some row's set has uses the row's value and falls
 *     back to the series label (store.h, struct store_query).
 *
 * Locking: one rwlock. store_head_add takes it for writing. Readers
 * bracket their work with store_head_rdlock/store_head_rdunlock, and every
 * function documented "rdlock held" requires that; pointers they return
 * are lent until the unlock. Read sections must not nest.
 */
#ifndef PROF_STORE_HEAD_H
#define PROF_STORE_HEAD_H

#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"
#include "store/matcher.h"

struct store_head;

/** struct store_stack_node - node of the stack tree; node 0 is the root. */
struct store_stack_node {
	uint32_t parent; /* node id, < this node's id; 0 for a root frame */
	uint32_t loc;	 /* location index in the head dictionary */
};

/** struct store_label - one label of a series; strings owned by the head. */
struct store_label {
	const char *name, *value;
};

/** struct store_row - one sample row as handed to scan visitors (24 bytes). */
struct store_row {
	int64_t ts_ns;	/* unix ns */
	int64_t value;	/* in the unit of the series' profile type */
	uint32_t stack; /* leaf node id in the stack tree */
	uint32_t attrs; /* attribute set id in the source's table, 0 = none */
};
_Static_assert(sizeof(struct store_row) == 24, "rows stay 24 bytes");

/**
 * struct store_attr_set - the per-sample attributes and link shared by
 * some rows. Entry 0 of every table is the empty set (no labels, no link).
 * Strings and the label array are owned by the table's owner (a head or a
 * block's symbols) and lent with it.
 */
struct store_attr_set {
	const struct store_label *labels; /* sorted by name, names distinct */
	uint32_t nlabels;
	bool has_link;
	uint8_t trace_id[16]; /* OTLP link, bytes as sent; valid when has_link */
	uint8_t span_id[8];
};

/** struct store_series - what a scan visitor learns about a series (lent). */
struct store_series {
	uint32_t id;
	const char *type; /* profile type id */
	const struct store_label *labels;
	uint32_t nlabels;
	int64_t min_ts_ns, max_ts_ns; /* over its rows */
	uint64_t nrows;
};

/** struct store_head_stats - sizes, for logs, tests and `store stats`. */
struct store_head_stats {
	uint64_t series, rows, stack_nodes, locations, functions, mappings, strings;
	uint64_t profiles;	      /* model profiles added */
	uint64_t bytes;		      /* memory held (estimate: tables and arrays by capacity) */
	int64_t min_ts_ns, max_ts_ns; /* over all rows; INT64_MAX / INT64_MIN when empty */
};

/** store_head_new() - an empty head; caller frees with store_head_free. */
struct store_head *store_head_new(void);
/** store_head_free() - NULL is allowed. */
void store_head_free(struct store_head *h);

/**
 * store_head_add() - add every sample of @p, one series per sample type.
 * @default_ts_ns stamps samples that have no timestamp when the profile
 * has no time either (the WAL record's ingest time, so a replay rebuilds
 * the same rows). @p must have passed model_profile_validate; indexes are
 * still bounds-checked and a bad one fails with -PROF_ECORRUPT (nothing
 * is added then). Takes the write lock.
 */
int store_head_add(struct store_head *h, const struct model_profile *p, int64_t default_ts_ns,
		   struct prof_err *err);

/**
 * store_head_add_checked() - store_head_add for a profile that has
 * passed store_head_check (the caller ran it, so it is not repeated);
 * cannot fail. Takes the write lock.
 */
void store_head_add_checked(struct store_head *h, const struct model_profile *p,
			    int64_t default_ts_ns);

/**
 * store_head_add_batch() - store_head_add_checked of @p[0..@n) in order
 * (the same rows), translating a dictionary once for consecutive
 * profiles that share it (model_profile_same_dict: the profiles of one
 * OTLP request, fmt_otlp_decode_shared). Profiles with pending stacks
 * (struct model_pending) whose every stack this head has seen take their
 * leaf nodes by key, translating nothing; otherwise their batch is
 * resolved first (the one change made to @p). Takes the write lock per
 * profile.
 */
void store_head_add_batch(struct store_head *h, const struct model_profile *const *p, size_t n,
			  int64_t default_ts_ns);

/**
 * store_head_check() - the bounds checks store_head_add does first, alone,
 * so a caller can refuse bad input before logging it. 0 or -PROF_ECORRUPT
 * with @err naming the entry. Sample and profile times must lie in
 * 0..STORE_HEAD_MAX_TIME_NS (an OTLP fixed64 time of 2^63 or more would
 * turn negative, and a time past the maximum no query range can reach).
 * Needs no lock.
 */
int store_head_check(const struct model_profile *p, struct prof_err *err);

/**
 * store_head_check_validated() - store_head_check for a profile that has
 * passed model_profile_validate: only the checks that one does not make
 * (zero entries, times, period type, name, frame type and attribute
 * strings, value ranges), so a caller that runs both pays for each check
 * once. Same errors as store_head_check for such a profile. Needs no lock.
 */
int store_head_check_validated(const struct model_profile *p, struct prof_err *err);

/**
 * store_head_check_samples() - store_head_check_validated without the
 * checks of the dictionary tables (locations' frame types), for a profile
 * that passed model_profile_validate_samples and shares a dictionary
 * already checked (model_profile_same_dict). Needs no lock.
 */
int store_head_check_samples(const struct model_profile *p, struct prof_err *err);

/* The latest sample time stored, in unix ns: the end of the last millisecond a
 * query's `to` can name (INT64_MAX / 10^6 - 1 ms). */
#define STORE_HEAD_MAX_TIME_NS ((INT64_MAX / 1000000 - 1) * 1000000 + 999999)

void store_head_rdlock(struct store_head *h);
void store_head_rdunlock(struct store_head *h);

/**
 * store_head_dict() - the symbol dictionary (rdlock held). Use its
 * strings, mappings, functions, locations and lines tables; it has no
 * samples. Lent until store_head_rdunlock.
 */
const struct model_profile *store_head_dict(const struct store_head *h);

/** store_head_stacks() - the stack tree array, *@n nodes (rdlock held; lent). */
const struct store_stack_node *store_head_stacks(const struct store_head *h, size_t *n);

/**
 * store_head_attrs() - the attribute set table, *@n >= 1 entries, entry 0
 * the empty set (rdlock held; lent).
 */
const struct store_attr_set *store_head_attrs(const struct store_head *h, size_t *n);

/**
 * store_head_has_attr_key() - does some attribute set of the head have a
 * label named @name (rdlock held)?
 */
bool store_head_has_attr_key(const struct store_head *h, const char *name);

/**
 * store_head_import_attrs() - add the attribute sets @sets[@n] of another
 * table (a block's) to this head's, hash-consed; map[i] gets the head id
 * of set i (map[0] = 0). For compaction. Takes the write lock.
 */
void store_head_import_attrs(struct store_head *h, const struct store_attr_set *sets, size_t n,
			     uint32_t *map);

/**
 * store_scan_fn - receives the rows of one series whose timestamps lie
 * in the scanned range, in batches (@n >= 1, arrival order, not sorted by
 * time). A non-zero return stops the scan and is returned by it.
 */
typedef int (*store_scan_fn)(void *arg, const struct store_series *s, const struct store_row *rows,
			     size_t n);

/**
 * store_head_scan() - visit the rows of every series with profile type
 * @type (NULL = any) whose labels satisfy all @nm matchers, with
 * from_ns <= ts_ns <= to_ns (rdlock held). The matchers' regex match data
 * is used, so they must not be shared with another thread meanwhile.
 * Rows are lent in place where a whole run of them is in range (a series
 * wholly in range is one call); a series partly in range skips the runs
 * of 256 rows whose time range lies outside, so a short range costs its
 * rows, not the series'. Returns 0 or the visitor's non-zero return.
 */
int store_head_scan(struct store_head *h, const char *type, const struct store_matcher *m,
		    size_t nm, int64_t from_ns, int64_t to_ns, store_scan_fn fn, void *arg);

/** struct store_stack_total - one stack's summed value in a totals scan. */
struct store_stack_total {
	uint32_t stack; /* node id in the source's stacks */
	int64_t total;	/* sum of the rows' values */
	uint64_t rows;	/* rows summed */
};

/**
 * store_scan_totals_fn - receives per-stack sums of @nrows consecutive
 * rows of series @s (@t[@n], each stack once, in the order the stacks
 * first appear among those rows), standing for those rows, in row order
 * with the series' other rows (which come through the scan's
 * store_scan_fn). A non-zero return stops the scan.
 */
typedef int (*store_scan_totals_fn)(void *arg, const struct store_series *s,
				    const struct store_stack_total *t, size_t n, size_t nrows);

/**
 * store_head_scan_totals() - store_head_scan, for a visitor that only sums
 * values per stack: a series wholly in range may come as its kept sums
 * (@tfn) plus the rows appended since (@fn). The first such scan of a
 * series builds the sums (after 256 rows; again once a quarter of its rows
 * are newer), later ones read them instead of the rows. A series partly in
 * range comes as rows, except that each completed run of 8192 rows wholly
 * in range comes as the run's own kept sums (built by the first scan that
 * needs them), and so do the completed 256-row spans of the unfinished
 * last run when they are 2048 rows or more and wholly in range (renewed
 * once a quarter of the run is newer). Sums are kept only for rows whose values are all >= 0 and
 * whose distinct stacks are at most a quarter of the rows; they count in
 * the head's memory. The order and values the visitor sees add up to what
 * the rows would give. @tfn NULL: store_head_scan. rdlock held; queries
 * may scan concurrently.
 */
int store_head_scan_totals(struct store_head *h, const char *type, const struct store_matcher *m,
			   size_t nm, int64_t from_ns, int64_t to_ns, store_scan_fn fn,
			   store_scan_totals_fn tfn, void *arg);

/**
 * store_head_types() - call @fn once per distinct profile type id that has
 * rows overlapping [from_ns, to_ns], in byte order of the ids (rdlock
 * held). Returns 0 or @fn's non-zero return.
 */
int store_head_types(struct store_head *h, int64_t from_ns, int64_t to_ns,
		     int (*fn)(void *arg, const char *type), void *arg);

/** store_head_get_stats() - a consistent snapshot (takes the read lock itself). */
void store_head_get_stats(struct store_head *h, struct store_head_stats *st);

/** store_head_nseries() - number of series (rdlock held, or the head no longer changes). */
size_t store_head_nseries(const struct store_head *h);

/**
 * store_head_series_at() - series @i (< store_head_nseries) and, in
 * *@rows, its s->nrows rows in arrival order. Lent like store_head_dict.
 */
const struct store_series *store_head_series_at(const struct store_head *h, size_t i,
						const struct store_row **rows);

/**
 * store_head_import() - add the stack tree @nodes[@nnodes] of another
 * dictionary @src (a block's symbols) to this head's dictionary and
 * tree, hash-consed like store_head_add; map[i] gets the head node of
 * source node i. For compaction, which merges blocks through a fresh
 * head. @src is checked (-PROF_ECORRUPT for a bad index; nothing is
 * added then). Takes the write lock.
 */
int store_head_import(struct store_head *h, const struct model_profile *src,
		      const struct store_stack_node *nodes, size_t nnodes, uint32_t *map);

#endif
