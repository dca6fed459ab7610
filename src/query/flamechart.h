/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flamechart.h - the flame chart: samples along the time axis, one lane
 * per group (group_by labels such as thread.name, k8s.pod.name, cpu),
 * from a stack set collected with keep_samples (its samples are sorted by
 * group, then time).
 *
 * Each sample covers [ts, ts + interval): @interval_ns when given, else
 * the median gap between consecutive distinct timestamps of the lane
 * (the sampling period), else of all lanes, else 10 ms. Adjacent samples
 * of a lane with the identical stack merge into one span when the next
 * starts at most 1.5 intervals after the previous one began (so a gap in
 * sampling splits a span); the span ends one interval after its last
 * sample. Samples with equal timestamps (an aggregated profile) follow
 * each other in stack order.
 *
 * Output is compact: stacks are listed once as arrays of name indexes
 * (root first) into "names", spans as arrays
 * [start offset ns from "from_ms", duration ns, stack index, value,
 * samples]. At most max_spans spans are written, lanes in order; the
 * number left out is reported ("truncated_spans"), never silent.
 */
#ifndef PROF_QUERY_FLAMECHART_H
#define PROF_QUERY_FLAMECHART_H

#include "base/buf.h"
#include "base/compat.h"
#include "query/stackset.h"

struct query_flamechart_opts {
	int64_t interval_ns; /* 0 = estimate */
	size_t max_spans;    /* 0 = 100000 */
};

/**
 * query_flamechart_write_json() - append
 * {"type":..,"unit":..,"from_ms":N,"to_ms":N,"group_by":[..],
 *  "interval_ns":N,"samples":N,"spans_total":N,"truncated_spans":N,
 *  "names":[..],"stacks":[[i,..],..],
 *  "lanes":[{"labels":{..},"samples":N,"total":N,"spans":[[t,d,s,v,n],..]}]}
 * for @ss (collected with keep_samples). 0 or -PROF_ETOOBIG.
 */
int query_flamechart_write_json(const struct query_stackset *ss,
				const struct query_flamechart_opts *o, struct buf *out);

#endif
