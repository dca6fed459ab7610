/* SPDX-License-Identifier: Apache-2.0 */
/*
 * table.h - the function table of a stack set: per frame name, self and
 * total, as `go tool pprof -top` reports flat and cum at function
 * granularity (query/top.h states the same rules for one profile):
 *
 *   - self: the value of each stack goes to its leaf frame; the root's
 *     own value (samples with an empty stack, or whose frames were all
 *     hidden) counts in the grand total only;
 *   - total: every distinct name on a stack gets the stack's value once,
 *     however often recursion repeats it;
 *   - names with self and total both 0 are not rows.
 *
 * Computed in O(trie nodes): subtree sums bottom-up, then one iterative
 * depth-first walk that counts, per name, its occurrences on the current
 * path; a node adds its subtree sum to its name's total only when its name
 * is not already on the path above it.
 *
 * Granularity: by default names are taken at pprof's function
 * granularity, so unsymbolized frames ("libc.so.6+0x1a2b") count as their
 * module ("[libc.so.6]", or "<unknown>" without a mapping), as
 * `go tool pprof -top` counts them; with @by_frame every frame name is its
 * own row (the flame graph's names).
 *
 * search: keep rows whose name contains @search (substring) or, with
 * @search_regex, matches it (PCRE2, unanchored). sort: by self (|self|
 * descending, then name, then |total|, pprof's flat order), by total
 * (|total|, name, |self|) or by name (bytewise). limit: first N rows
 * after sorting (0 = all); @nrows_matched tells how many there were.
 */
#ifndef PROF_QUERY_TABLE_H
#define PROF_QUERY_TABLE_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "query/stackset.h"

enum query_table_sort { QUERY_SORT_SELF, QUERY_SORT_TOTAL, QUERY_SORT_NAME };

struct query_table_opts {
	const char *search; /* NULL or "" = all */
	bool search_regex;
	enum query_table_sort sort;
	size_t limit;  /* 0 = all */
	bool by_frame; /* frame names, not pprof's function granularity */
};

struct query_table_row {
	uint32_t name; /* id in the stack set's names */
	int64_t self, total;
	uint64_t self_samples, total_samples; /* sample rows */
};

/** struct query_table - rows in order; owns @rows. */
struct query_table {
	struct query_table_row *rows;
	size_t nrows;	      /* rows returned (after limit) */
	size_t nrows_matched; /* rows matching the search, before the limit */
	size_t nfunctions;    /* names with a non-zero value */
	int64_t total;	      /* the stack set's total */
	uint64_t samples;
};

/**
 * query_table_build() - the table of @ss (all groups and buckets merged)
 * into @t (overwritten; release it also after an error). Errors: -EINVAL
 * for a bad search regex, @err naming parameter 'search'.
 */
int query_table_build(const struct query_stackset *ss, const struct query_table_opts *o,
		      struct query_table *t, struct prof_err *err);

/**
 * query_table_write_json() - append
 * {"type":..,"unit":..,"total":N,"samples":N,"functions":N,"matched":N,
 *  "rows":[{"name":..,"self":N,"total":N,"self_samples":N,"total_samples":N},...]}
 * 0 or -PROF_ETOOBIG.
 */
int query_table_write_json(const struct query_table *t, const struct query_stackset *ss,
			   struct buf *out);

/** query_table_release() - NULL is allowed. */
void query_table_release(struct query_table *t);

/**
 * query_name_totals() - the per-name self and total (once per stack) of
 * @ss, indexed by name id, names at function granularity unless
 * @by_frame: arrays of ss->names.n entries (any may be NULL when not
 * wanted) from the scratch pool; the caller gives them back with
 * query_scratch_give() (or frees them). The engine of query_table_build,
 * shared with the sandwich.
 */
void query_name_totals(const struct query_stackset *ss, bool by_frame, int64_t **self,
		       int64_t **total, uint64_t **self_samples, uint64_t **total_samples);

#endif
