/* SPDX-License-Identifier: Apache-2.0 */
/*
 * series.h - time series from a stack set collected with a step and
 * group_by labels ("Sum by"): one value per step per group.
 *
 *   - cumulative types (CPU time, allocations, contentions: query/units.h)
 *     sum the values of a step, and each step also gets a rate: the sum
 *     divided by the step in seconds (unit per second; nanoseconds of CPU
 *     per second = cores x 1e9);
 *   - gauge types (heap in use, goroutines) give, per step, the sum over
 *     the group's series of each series' average snapshot in the step
 *     (query_ss_entry.gauge);
 *   - derived metrics: with @function, only that function's share counts:
 *     mode total = the value of stacks that contain a frame named
 *     exactly @function (once per stack, recursion or not), mode self =
 *     the value of stacks whose leaf frame is @function. Any function's
 *     consumption over time, without instrumentation;
 *   - top-N: groups ranked by their sum over all steps (descending, then
 *     by label values); the first @limit are returned, the rest are
 *     summed into "other" and counted. Never silently dropped.
 */
#ifndef PROF_QUERY_SERIES_H
#define PROF_QUERY_SERIES_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "query/stackset.h"

enum query_fn_mode { QUERY_FN_TOTAL, QUERY_FN_SELF };

struct query_series_opts {
	const char *function; /* NULL or "" = every stack */
	enum query_fn_mode mode;
	size_t limit; /* groups returned; 0 = all */
};

struct query_series_group {
	uint32_t group; /* group id of the stack set */
	double sum;	/* over all steps */
	double *values; /* [nbuckets] */
};

/** struct query_series - owns its arrays. */
struct query_series {
	size_t nbuckets;
	struct query_series_group *groups; /* top @ngroups, in rank order */
	size_t ngroups;
	size_t nother;	/* groups summed into @other */
	double *other;	/* [nbuckets], NULL when nother == 0 */
	double matched; /* value of the stacks the function selects (all of them without) */
};

/**
 * query_series_build() - the series of @ss into @s (overwritten; release
 * it). Cannot fail on valid input: returns 0.
 */
int query_series_build(const struct query_stackset *ss, const struct query_series_opts *o,
		       struct query_series *s);

/**
 * query_series_write_json() - append
 * {"type":..,"unit":..,"cumulative":B,"aggregation":"sum"|"average",
 *  "rate_unit":"<unit>/s" (cumulative only),"from_ms":N,"to_ms":N,
 *  "step_ms":N,"timestamps":[ms...],"group_by":[...],"function":S|null,
 *  "mode":"total"|"self","samples":N,
 *  "series":[{"labels":{..},"total"|"mean":X,"values":[...],"rates":[...]}],
 *  "other":null|{"groups":N,"values":[...],"rates":[...]}}
 * Cumulative values are integers; gauge values and rates are decimals.
 * 0 or -PROF_ETOOBIG.
 */
int query_series_write_json(const struct query_series *s, const struct query_stackset *ss,
			    const struct query_series_opts *o, struct buf *out);

/** query_series_release() - NULL is allowed. */
void query_series_release(struct query_series *s);

#endif
