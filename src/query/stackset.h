/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stackset.h - the query's own aggregated stack set: the ONE thing that
 * stands between the store and every view.
 *
 * query_stackset_collect() runs a store scan and turns what it returns
 * into a set of name-based stacks with values; every view (flame graph,
 * table, sandwich, diff, flame chart, time series, exports) is a pure
 * function of one or two stack sets. Store details (stack ids, per-block
 * symbol tables, unsymbolized locations) never leak past this file: when
 * the store grows immutable blocks, only query_stackset_collect changes.
 *
 * Shape:
 *
 *   names    frame names interned in a strtab (id 0 is "" and names the
 *            root). A frame is one line of a location's inline chain (the
 *            outer function first, the innermost inlined callee deepest);
 *            an unsymbolized native frame is resolved through the
 *            symbolizer (mapping file + build ID + ELF virtual address;
 *            DWARF inline chains become frames too, outer first),
 *            else named "<basename of mapping>+0x<address>" ("0x<address>"
 *            without a mapping) and counted in @unsymbolized: frames are
 *            never dropped (unless a frame filter hides them);
 *   nodes    a trie of name paths: node 0 is the root (the empty stack),
 *            node i > 0 is (parent, name), unique per (parent, name), with
 *            parent < i (a pass in id order sees parents first). A stack
 *            is named by its leaf node; query_stackset_path() gives its
 *            names root -> leaf;
 *   entries  (node, group, bucket) -> value (sum of the sample values, in
 *            the type's unit), count (number of sample rows), and @gauge
 *            (the value averaged over snapshots, see below), unique per
 *            key. Only entries with count > 0 exist;
 *   groups   with group_by labels, each distinct tuple of their values is
 *            a group id: the id of an interned key, the values joined by
 *            '\0'. Id 0 is the key "": the only group without group_by,
 *            the empty value with one label, unused with more;
 *   buckets  with step_ns > 0, bucket = (ts - from_ns) / step_ns, and
 *            there are nbuckets = (to_ns - from_ns) / step_ns + 1; else 0;
 *   samples  with keep_samples, every sample row (ts, node, group, value)
 *            sorted by (group, ts), for the flame chart.
 *
 * Gauge averaging (gauge types, query/units.h, with step_ns > 0): each
 * entry's @gauge sums value / nsnap(series, bucket), where nsnap is the
 * number of distinct timestamps ("snapshots") that series has in that
 * bucket, so summing @gauge over a group gives the sum over its series of
 * each series' average snapshot. For cumulative types @gauge == value.
 *
 * Filters (query/filter.h) are applied here: stack filters drop samples
 * (counted in @filtered_rows/@filtered_value), frame filters leave frames
 * out of the names path.
 *
 * Ownership: a stack set owns everything in it; it does not point into the
 * store. A set collected through the translation cache shares the bytes
 * of its names with the cache (its own id arrays and hash index point
 * into the cache's string chunks, which a reference keeps alive until
 * query_stackset_release); names it interns later are its own.
 * Not thread-safe; independent sets may be built in parallel.
 * Nothing here recurses (30000-deep stacks work on a small thread stack).
 */
#ifndef PROF_QUERY_STACKSET_H
#define PROF_QUERY_STACKSET_H

#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/profile.h"
#include "query/filter.h"
#include "query/hashmap.h"
#include "store/head.h"
#include "store/matcher.h"
#include "store/store.h"
#include "symbolize/symbolizer.h"

/** Default caps (params 0): distinct entries, kept samples, time buckets. */
#define QUERY_SS_MAX_ENTRIES  ((size_t)16 << 20)
#define QUERY_SS_MAX_SAMPLES  ((size_t)10 << 20)
#define QUERY_SS_MAX_BUCKETS  11000
#define QUERY_SS_MAX_GROUP_BY 8

struct query_ss_pin;

struct query_ss_node {
	uint32_t parent; /* node id, < this id; the root's is 0 */
	uint32_t name;	 /* id in query_stackset.names */
	uint32_t depth;	 /* root 0 */
};

struct query_ss_entry {
	uint32_t node, group, bucket;
	uint32_t pad_;
	int64_t value;	/* sum of sample values */
	uint64_t count; /* sample rows */
	double gauge;	/* value averaged over snapshots (gauge types), else == value */
};

/**
 * struct query_ss_raw - what is known of a frame named by the fallback
 * (an unsymbolized native frame, "libfoo.so+0x1a2b" or "0x1a2b"): its
 * address, its mapping file, and the name it has at pprof's function
 * granularity ("[libfoo.so]", or "<unknown>" without a mapping), so the
 * table can agree with `go tool pprof -top` and exports can hand the
 * address on instead of a made-up function.
 */
struct query_ss_raw {
	uint64_t address;
	uint32_t mapping; /* names id of the mapping's file path; 0 = none */
	uint32_t fn_name; /* names id of the function-granularity name */
};

/**
 * struct query_ss_srcloc - where a frame name's code is, when the data or
 * the symbolizer says: its source file, a line, the build ID and path of
 * its binary (names ids in the set, 0 = unknown). @line is the function's
 * start line when the profile gives it (pprof Function.start_line), else
 * the lowest source line of its addresses the set met (DWARF line table;
 * for the caller part of an inline chain, the call site).
 *
 * It comes from the set's own data only (the selected series of the
 * queried store, never another series, store or earlier query). When that
 * data has the name in several places (two services' main() in a.c and
 * b.c), one is chosen by content alone, so the answer is the same whatever
 * order the data was stored or read in, from the head or a block: a record
 * with a file before one with only a build ID or binary, before one with
 * only a frame type (a kernel frame); among equals the first file
 * byte-wise, then the lowest known line (the start line where the data
 * gives it), then build ID, binary and frame type byte-wise
 * (ss_srcloc_cmp). The frame type is that record's, so a name met as two
 * types (rare: a native and a JIT frame of one name) has the type of the
 * record kept.
 */
struct query_ss_srcloc {
	uint32_t file, build_id, mapping;
	uint32_t frame_type; /* the location's profile.frame.type ("cpython", ...), 0 = none */
	int64_t line;
};

struct query_ss_sample {
	int64_t ts_ns;
	int64_t value;
	uint32_t node, group;
};

/** struct query_ss_path - a names path, root first (VEC layout; owner frees @v). */
struct query_ss_path {
	uint32_t *v;
	size_t n, cap;
};

struct query_stackset {
	struct strtab names;
	VEC(struct query_ss_node) nodes;
	VEC(struct query_ss_entry) entries;
	VEC(struct query_ss_sample) samples;

	char **group_by; /* [ngroup_by] label names, owned */
	size_t ngroup_by;
	struct strtab groups; /* group id -> values joined by '\0' */

	int64_t from_ns, to_ns, step_ns;
	uint32_t nbuckets; /* >= 1 */

	char type[256]; /* profile type id ("" when built by hand) */
	char unit[64];	/* its sample unit */
	bool cumulative;

	int64_t total;		/* sum of entry values */
	uint64_t rows;		/* sum of entry counts */
	uint64_t filtered_rows; /* rows dropped by the stack filter */
	int64_t filtered_value; /* their values */
	uint64_t unsymbolized;	/* distinct locations named by the fallback */
	uint64_t series;	/* series that contributed rows */

	/* private */
	struct qmap child_idx; /* (parent << 32 | name) -> node */
	bool child_idx_stale;  /* nodes were set without it: rebuilt on first use */
	uint32_t *raw_of;      /* [nraw_of]: name id -> index in raw + 1, 0 = none */
	size_t nraw_of;
	VEC(struct query_ss_raw) raw;
	uint32_t *src_of; /* [nsrc_of]: name id -> index in srcs + 1, 0 = none */
	size_t nsrc_of;
	VEC(struct query_ss_srcloc) srcs;
	uint32_t *entry_slots;	  /* entry index + 1, 0 = empty */
	size_t entry_nslots;	  /* power of two */
	size_t max_entries;	  /* 0 = no cap */
	struct query_ss_pin *pin; /* names borrowed from the translation cache (stackset_cache.c) */
};

/** struct query_stackset_params - what query_stackset_collect aggregates. */
struct query_stackset_params {
	const char *type; /* profile type id, required */
	const struct store_matcher *m;
	size_t nm;
	int64_t from_ns, to_ns; /* inclusive, unix ns */
	int64_t step_ns;	/* 0 = one bucket for the whole range */
	const char *const *group_by;
	size_t ngroup_by; /* <= QUERY_SS_MAX_GROUP_BY */
	bool keep_samples;
	bool merge_stacks; /* with group_by or a step: every row counts at the root (a series
			    * that needs no stacks: cells are (group, step) only) */
	const struct query_filter *filter; /* may be NULL; used by this thread only */
	const uint8_t *trace_id; /* 16 bytes: only rows linked to this trace (NULL = any) */
	const uint8_t *span_id;	 /* 8 bytes: only rows linked to this span (NULL = any) */
	struct symbolizer *sym;	 /* may be NULL: no query-time symbolization */
	const char *line_fn; /* frames of this name are named by their line key (below), or NULL */
	size_t max_entries, max_samples; /* 0 = the QUERY_SS_MAX_* defaults */
};

/*
 * Line keys (params.line_fn): with line_fn set, each frame of that
 * function is named "NAME\x1fLINE\x1fFILE\x1fBUILD_ID" instead of NAME,
 * LINE the source line of the frame's address (the call site for the
 * outer part of an inline chain, as pprof's Line and DWARF's inline
 * records give it; 0 when unknown), FILE its source file and BUILD_ID its
 * binary's ("" when unknown), so the set keeps the function's frames apart
 * per line and per build (query/source.h sums them). Filters still see
 * NAME. Such a set does not use the translation cache.
 */
#define QUERY_SS_LINE_SEP '\x1f'

/* --- building by hand (views that derive a stack set, tests) -------------------- */

/** query_stackset_init() - an empty set: the root node, one group, one bucket. */
void query_stackset_init(struct query_stackset *ss);
/** query_stackset_release() - free everything; NULL is allowed. */
void query_stackset_release(struct query_stackset *ss);

/** query_stackset_name() - id of frame name @s (@n bytes), interned. */
static inline uint32_t query_stackset_name(struct query_stackset *ss, const char *s, size_t n)
{
	return strtab_intern(&ss->names, s, n);
}

/** query_stackset_child() - the node (@parent, @name), created if new. */
uint32_t query_stackset_child(struct query_stackset *ss, uint32_t parent, uint32_t name);

/**
 * query_stackset_add() - add @value and @count to entry (@node, @group,
 * @bucket) (@gauge += @gauge_value). @group must be a group id of @ss and
 * @bucket < nbuckets. Returns 0, or -PROF_ETOOBIG when a new entry would
 * exceed the set's entry cap (nothing is added then).
 */
int query_stackset_add(struct query_stackset *ss, uint32_t node, uint32_t group, uint32_t bucket,
		       int64_t value, uint64_t count, double gauge_value);

/**
 * query_stackset_set_group_by() - name the group_by labels (copied); only
 * on an empty set, once.
 */
void query_stackset_set_group_by(struct query_stackset *ss, const char *const *names, size_t n);

/** query_stackset_group() - id of the group with label values @values[ngroup_by]. */
uint32_t query_stackset_group(struct query_stackset *ss, const char *const *values);

/**
 * query_stackset_group_value() - value of group_by label @i in @group, as
 * a pointer into the group key and its length in *@len. Lent until the
 * set changes.
 */
const char *query_stackset_group_value(const struct query_stackset *ss, uint32_t group, size_t i,
				       size_t *len);

/** query_stackset_ngroups() - number of group ids. */
static inline uint32_t query_stackset_ngroups(const struct query_stackset *ss)
{
	return ss->groups.n;
}

/**
 * query_stackset_raw() - the raw-frame record of frame name @name, or NULL
 * when @name is a real function name. Lent until the set changes.
 */
const struct query_ss_raw *query_stackset_raw(const struct query_stackset *ss, uint32_t name);

/**
 * query_stackset_srcloc() - the source location of frame name @name, or
 * NULL when nothing is known. Lent until the set changes.
 */
const struct query_ss_srcloc *query_stackset_srcloc(const struct query_stackset *ss, uint32_t name);

/** query_stackset_fn_name() - @name at function granularity (see query_ss_raw). */
static inline uint32_t query_stackset_fn_name(const struct query_stackset *ss, uint32_t name)
{
	const struct query_ss_raw *r = query_stackset_raw(ss, name);

	return r ? r->fn_name : name;
}

/** query_stackset_path() - names of @node root first into @out (replaced). */
void query_stackset_path(const struct query_stackset *ss, uint32_t node, struct query_ss_path *out);

/**
 * query_stackset_node_order() - the nodes of @ss in an order that is a
 * function of the stacks' contents alone (not of the order they were
 * added in, nor of how the store keeps them): depth first from the root,
 * parents before children, siblings by name byte-wise (unique per parent,
 * so the order is total). @order[nodes.n] lists the node ids in it
 * (order[0] is the root), @rank[nodes.n] is each node's position in it
 * (either may be NULL). Views that list stacks walk this order or break
 * ties by rank so their bytes do not depend on node ids. Arrays from the
 * scratch pool (query/scratch.h), given back with query_scratch_give().
 */
void query_stackset_node_order(const struct query_stackset *ss, uint32_t **order, uint32_t **rank);

/**
 * query_stackset_node_cmp() - nodes @a and @b of @ss by content, without
 * building query_stackset_node_order (for ties among few): their names,
 * then their parents' and so on up (a node nearer the root first), names
 * byte-wise; 0 only when a == b (names are unique among siblings).
 */
int query_stackset_node_cmp(const struct query_stackset *ss, uint32_t a, uint32_t b);

/**
 * query_stackset_group_cmp() - groups @a and @b of @ss by their label
 * values byte-wise (a group id is the order groups were met in): < 0, 0, > 0.
 */
int query_stackset_group_cmp(const struct query_stackset *ss, uint32_t a, uint32_t b);

/**
 * query_stackset_node_sums() - per node, the sums of its entries over all
 * groups and buckets: @self[nodes.n] values and @count[nodes.n] rows
 * (either may be NULL). Arrays from the scratch pool (query/scratch.h):
 * the caller gives them back with query_scratch_give() (or frees them).
 */
void query_stackset_node_sums(const struct query_stackset *ss, int64_t **self, uint64_t **count);

/** What query_stackset_fold collapses (bits). */
enum query_fold {
	QUERY_FOLD_RECURSION = 1 << 0, /* a frame with its parent's name */
	QUERY_FOLD_LIBRARY = 1 << 1,   /* a frame in its parent's shared library */
};

/**
 * query_stackset_fold() - collapse runs of consecutive frames into their
 * outermost frame, in place: with QUERY_FOLD_RECURSION a frame whose name
 * is its parent's (direct recursion: msort_with_tmp -> msort_with_tmp),
 * with QUERY_FOLD_LIBRARY a frame in the same shared library as its parent
 * (the binary named by the frame's source location, query_stackset_srcloc,
 * whose file name contains ".so"; kernel frames count as one library), so
 * qsort -> msort_with_tmp -> ... -> msort_with_tmp is one "qsort" frame.
 * A collapsed frame's value becomes its outermost frame's self; totals,
 * rows, groups, buckets and kept samples are unchanged, entries that land
 * on one node are summed (the set's entry cap is not applied: folding only
 * merges). Node ids change (parents still before children). @how 0 does
 * nothing. Folding happens after the stack filter, and hidden frames
 * (query/filter.h) are already gone, so A -> hidden -> A folds too.
 */
void query_stackset_fold(struct query_stackset *ss, unsigned how);

/**
 * query_fold_parse() - @s ("recursion", "library", "recursion,library",
 * "none" or NULL/"") into enum query_fold bits in *@how. -EINVAL with
 * @err naming the parameter 'fold' and the known values otherwise.
 */
int query_fold_parse(const char *s, unsigned *how, struct prof_err *err);

/* --- from the store and from a profile -------------------------------------------- */

/**
 * query_stackset_collect() - scan the store (its heads and every block
 * overlapping the range, store_scan) for the rows of series of @p->type
 * whose labels satisfy @p->m, with from_ns <= ts <= to_ns, and aggregate
 * them into @ss (overwritten; release it also after an error). Matchers
 * and group_by names also see per-sample attributes (thread.name, ...):
 * a row's own value wins over its series label (store.h, struct
 * store_query); @p->trace_id / span_id keep only the rows linked to that
 * trace / span. A series is the same across blocks when its label set is.
 *
 * Errors, with @err saying which parameter: -EINVAL (no type; from > to;
 * step_ns < 0; more than QUERY_SS_MAX_BUCKETS buckets; too many
 * group_by labels); -PROF_ETOOBIG when the distinct (stack, group, step)
 * cells exceed max_entries or kept samples exceed max_samples (the
 * message says to narrow the range, raise the step or drop labels).
 * An empty selection is not an error: the set has no entries.
 */
int query_stackset_collect(struct store *st, const struct query_stackset_params *p,
			   struct query_stackset *ss, struct prof_err *err);

/**
 * query_stackset_collect_pair() - the two sides of a comparison in one
 * set: the rows of @a in bucket 0 and those of @b in bucket 1 (nbuckets
 * 2, no step, no group_by, no kept samples; @a's type, range and filter
 * name the set; both must have the same type, checked by the caller).
 * One names trie serves both sides, so a node id is the same call path in
 * A and B; a side's totals are the sums of its bucket's entries, and
 * @filtered_rows/@filtered_value cover both. Errors as
 * query_stackset_collect.
 */
int query_stackset_collect_pair(struct store *st, const struct query_stackset_params *a,
				const struct query_stackset_params *b, struct query_stackset *ss,
				struct prof_err *err);

/**
 * query_stackset_cache_stats() - counters of the translation cache (the
 * process-wide store-stack -> names-trie translation kept across queries,
 * see stackset_cache.c): @hits sources whose translation was reused, @misses
 * sources translated (again), @nodes names-trie nodes held, @mapped store
 * stack ids held, @resets times the cache was emptied for its caps,
 * @loc_hits locations of a source being translated that another source
 * (or an earlier pass) had translated with the same content, @locs such
 * translated locations held (the location cache).
 */
struct query_ss_cache_stats {
	uint64_t hits, misses, nodes, mapped, resets, loc_hits, locs;
};
void query_stackset_cache_stats(struct query_ss_cache_stats *st);

/** query_stackset_cache_clear() - empty the translation cache (tests). */
void query_stackset_cache_clear(void);

/**
 * query_stackset_from_profile() - the same from one model profile (a file
 * given to the CLI): value column @sample_type; @p->type, m and nm are
 * ignored (the type id is derived from the profile); group_by reads the
 * samples' own labels (pprof labels: string values as they are, numbers in
 * decimal); timestamps are the samples', else the profile's time. Rows
 * outside [from_ns, to_ns] are skipped unless both are 0. @prof must pass
 * model_profile_validate. Errors as query_stackset_collect, and -EINVAL
 * when @sample_type is out of range.
 */
int query_stackset_from_profile(const struct model_profile *prof, uint32_t sample_type,
				const struct query_stackset_params *p, struct query_stackset *ss,
				struct prof_err *err);

#endif
