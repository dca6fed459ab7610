/* SPDX-License-Identifier: Apache-2.0 */
/*
 * top.h - the "top functions" table of one profile: per sample type, each
 * function's self (flat) and total (cum) value, as `go tool pprof -top`
 * prints them at its default function granularity.
 *
 * Rules (google/pprof internal/graph/graph.go newGraph, CreateNodes,
 * NameComponents; internal/report/report.go; shared corpus MANIFEST.md):
 *   - a frame is one line of a location: a location whose inline chain has
 *     n lines gives n frames (the inlined callees are functions of their
 *     own); a location without lines gives one frame;
 *   - frames are keyed by display name (model_frame_name: the function
 *     name, else system name, else "[basename of the mapping]", else
 *     "<unknown>"), so pprof's merge of same-named functions at function
 *     granularity holds;
 *   - self: the value of each sample goes to its leaf frame (the innermost
 *     line of the first location); samples with an empty stack count in the
 *     total only;
 *   - total: every distinct frame of a sample gets the sample's value once,
 *     however often recursion repeats it;
 *   - functions whose self and total are both 0 for a type are not rows
 *     of that type (pprof drops such nodes);
 *   - order: |self| descending, then name (bytewise), then |total|
 *     descending (pprof FlatNameOrder); by total: |total|, name, |self|
 *     (CumNameOrder). Values are compared as 64-bit integers; sums wrap
 *     around on overflow as Go's int64 arithmetic does.
 *   - inline labels (text reports): a function reached only through
 *     inline edges is "(inline)", through both kinds "(partial-inline)"
 *     (report.go TextItems). pprof draws the edges among the functions it
 *     shows only (its graph is rebuilt with the top N nodes, the others
 *     skipped), from samples with a non-zero value, so the label depends
 *     on which rows are shown.
 *
 * Cost: one pass over the samples for all types together, O(total stack
 * frames), plus a sort per type. The result does not point into the
 * profile. Reentrant: independent builds may run in parallel.
 */
#ifndef PROF_QUERY_TOP_H
#define PROF_QUERY_TOP_H

#include "base/compat.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/profile.h"

/** struct query_top_row - one function of one sample type. */
struct query_top_row {
	uint32_t fn; /* function id: names in query_top.names */
	int64_t self, total;
};

/**
 * struct query_top - the table of every sample type of one profile.
 * @names:  function display names (id 0 unused); strings may hold any
 *          bytes, use names.len[id] for their length
 * @ntypes: number of sample types (the profile's)
 * @totals: [ntypes] sum of each value column over all samples
 * @self, @total: [ntypes * nfn] per type then function id
 * @frame_off, @frames: the frames of location i are function ids
 *          frames[frame_off[i] .. frame_off[i + 1]), innermost line first
 */
struct query_top {
	struct strtab names;
	size_t ntypes, nfn;
	int64_t *totals;
	int64_t *self, *total;
	uint32_t *frame_off, *frames;
};

/**
 * query_top_build() - compute the table of @p into @out (overwritten;
 * release with query_top_release). @p must satisfy
 * model_profile_validate. Returns 0 (only allocation can fail, and that
 * aborts, see base/mem.h).
 */
int query_top_build(const struct model_profile *p, struct query_top *out);

/** query_top_release() - free what @t owns; NULL is allowed. */
void query_top_release(struct query_top *t);

/**
 * query_top_rows() - the non-zero rows of sample type @type sorted by
 * self (or by total when @by_total), as a malloc'd array the caller frees;
 * *@n receives their number. @type must be < t->ntypes.
 */
struct query_top_row *query_top_rows(const struct query_top *t, size_t type, bool by_total,
				     size_t *n);

/**
 * query_top_inline_labels() - for the @n rows of type @type that a report
 * shows (in @rows, from query_top_rows), the label pprof prints after each
 * name: "", "(inline)" or "(partial-inline)" (see the rules above). @t must
 * have been built from @p. Returns a malloc'd array of @n static strings;
 * the caller frees the array.
 */
const char **query_top_inline_labels(const struct model_profile *p, const struct query_top *t,
				     size_t type, const struct query_top_row *rows, size_t n);

#endif
