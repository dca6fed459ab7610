/* SPDX-License-Identifier: Apache-2.0 */
/*
 * diff.h - differential flame graph of two stack sets of the same profile
 * type: A, the baseline, and B, the comparison. One merged call tree; per
 * node A's and B's self, total and sample rows, ready for a green (less)
 * / red (more) rendering:
 *
 *   - normalized mode (default): each side's values are divided by that
 *     side's total (a_share, b_share); delta = b_share - a_share, so two
 *     selections of different length or load compare by proportion. A
 *     side with total 0 has share 0 everywhere (no division by zero);
 *   - absolute mode: delta = b_total - a_total in the type's unit;
 *   - rates: each node's total per second of its side's window (a_rate,
 *     b_rate; cores for CPU nanoseconds once divided by 1e9, bytes/s for
 *     allocations), when the caller gives the windows' lengths;
 *   - noise: is the node's change within sampling noise? Both tests of
 *     query/change.h run on every node, on sample rows (the stack set's
 *     counts): the share test (two-proportion z, share_z) and the rate
 *     test (conditional Poisson with the window lengths as exposure,
 *     rate_z; equal windows give z = (k_b - k_a) / sqrt(k_a + k_b)). Each
 *     test's p-values are Benjamini-Hochberg adjusted over the testable
 *     nodes of the answer (share_q, rate_q): a diff tests hundreds of
 *     nodes at once. z is the mode's test (normalized: share, absolute:
 *     rate) and a change is noise when that test's q is >= alpha, alpha =
 *     P(|N(0,1)| >= z_threshold) (0.05 for the default 1.96). When either
 *     side is empty (normalized) or both (absolute) no test is possible:
 *     noise is false, q is 1;
 *   - status: "appeared" (no rows in A), "disappeared" (no rows in B) or
 *     "both"; and the full stacks (leaf nodes with self rows) that exist
 *     on one side only are listed, largest first, up to max_stacks, with
 *     their number;
 *   - identical sides give delta 0 and z 0 everywhere.
 *
 * query_diff_check() refuses sides of different profile types or units.
 */
#ifndef PROF_QUERY_DIFF_H
#define PROF_QUERY_DIFF_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "query/flamegraph.h"
#include "query/stackset.h"

enum query_diff_mode { QUERY_DIFF_NORMALIZED, QUERY_DIFF_ABSOLUTE };

struct query_diff_opts {
	enum query_diff_mode mode;
	size_t max_nodes;	     /* 0 = no limit */
	double min_share;	     /* 0 = none */
	size_t max_stacks;	     /* appeared/disappeared listed; 0 = 100 */
	double z_threshold;	     /* 0 = 1.96 */
	double a_seconds, b_seconds; /* the windows' lengths; 0 = unknown (no rates, rate_z 0) */
};

struct query_diff_stack {
	uint32_t node; /* in the pair stack set */
	int64_t value; /* self value on the side where it exists */
	uint64_t samples;
};

/** struct query_diff - owns everything. */
struct query_diff {
	struct query_flamegraph fg; /* diff tree: base_* = A, self/total/samples = B */
	VEC(struct query_diff_stack) appeared, disappeared; /* sorted, capped */
	size_t nappeared, ndisappeared;			    /* before the cap */
	double *share_q, *rate_q;	    /* per fg node: BH-adjusted p-values (1: untestable) */
	size_t ntested_share, ntested_rate; /* nodes each adjustment ran over */
};

/**
 * query_diff_check() - 0 when profile type ids @type_a and @type_b can be
 * compared, else -EINVAL with @err in words: "cannot compare different
 * profile types: A is <type>, B is <type>" or "... units: A (<type>) is
 * in <unit>, B (<type>) in <unit>".
 */
int query_diff_check(const char *type_a, const char *type_b, struct prof_err *err);

/**
 * query_diff_build() - the diff of the two sides of @ss (a pair set,
 * query_stackset_collect_pair: A in bucket 0, B in bucket 1; one trie, so
 * no merging) into @d (overwritten; release it). Truncation happens
 * before the tree is built (query_flamegraph_shape).
 */
void query_diff_build(const struct query_stackset *ss, const struct query_diff_opts *o,
		      struct query_diff *d);

/**
 * query_diff_z() - the z statistic of one node in @mode: the share z of
 * @ka of @na rows against @kb of @nb, or the rate z of @ka in @ta seconds
 * against @kb in @tb (equal windows when either is 0); 0 when untestable.
 */
double query_diff_z(enum query_diff_mode mode, uint64_t ka, uint64_t na, uint64_t kb, uint64_t nb,
		    double ta, double tb);

/**
 * query_diff_write_json() - append
 * {"type":..,"unit":..,"mode":"normalized"|"absolute",
 *  "noise_test":"<which test and threshold>","z_threshold":X,
 *  "alpha":X,"tests":{"share":N,"rate":N} (nodes each adjustment covered),
 *  "a":{"total":N,"samples":N[,"seconds":X,"rate":X]},"b":{...},
 *  "max_nodes":N,"truncated":{"nodes":N,"a_total":N,"b_total":N},
 *  "root":{"name":..,"a_self":N,"a_total":N,"a_samples":N,"b_self":N,
 *          "b_total":N,"b_samples":N,"a_share":X,"b_share":X,"delta":X,
 *          "z":X,"share_z":X,"share_q":X,"rate_z":X,"rate_q":X
 *          [,"a_rate":X,"b_rate":X,"rate_delta":X],
 *          "noise":B,"status":S[,"other":true],"children":[...]},
 *  "appeared":{"count":N,"stacks":[{"stack":[names root first],
 *              "value":N,"samples":N}]},"disappeared":{...}}
 * 0 or -PROF_ETOOBIG.
 */
int query_diff_write_json(const struct query_diff *d, const struct query_stackset *ss,
			  const struct query_diff_opts *o, struct buf *out);

/** query_diff_release() - NULL is allowed. */
void query_diff_release(struct query_diff *d);

#endif
