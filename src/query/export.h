/* SPDX-License-Identifier: Apache-2.0 */
/*
 * export.h - a query result in other tools' formats:
 *
 *   pprof   profile.proto (gzipped as Go writes it), readable by
 *           `go tool pprof`: one sample type (the type id's sample
 *           type/unit), its period type; one function and one location
 *           per frame name (so pprof's function-granularity numbers equal
 *           the table's), except that an unsymbolized frame stays a bare
 *           address in its mapping, as ingested; one sample per (stack,
 *           group) with the group_by
 *           labels as pprof string labels; time_nanos/duration_nanos from
 *           the query range. Timestamps and buckets are merged away;
 *   folded  Brendan Gregg's collapsed stacks, "root;...;leaf value\n", one
 *           line per distinct stack in stack-set order (deterministic),
 *           ';' in names written ':' and control characters ' ' (as
 *           fmt_folded_encode does), so every line reads back as the same
 *           stack. The empty stack's value (samples whose frames were all
 *           hidden) has no folded form and is left out;
 *   svg     a standalone interactive flame graph (flamegraph.pl's look:
 *           root at the bottom, warm colours, one rect + title + label
 *           per frame): click a frame to zoom, click the root or press
 *           Escape to reset, "Search" (or Ctrl-F) highlights frames
 *           matching a regex and shows their share of the total. Frames
 *           narrower than 0.1 px are not drawn (their value is in their
 *           parent's width); the subtitle says how many. No external
 *           resources; scripts are inline.
 */
#ifndef PROF_QUERY_EXPORT_H
#define PROF_QUERY_EXPORT_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "query/flamegraph.h"
#include "query/stackset.h"

/**
 * query_export_pprof() - append @ss as pprof (gzipped when @gzip) to
 * @out. 0, or -PROF_ETOOBIG when @out's cap is reached (@err says so).
 */
int query_export_pprof(const struct query_stackset *ss, bool gzip, struct buf *out,
		       struct prof_err *err);

/** query_export_folded() - append @ss as folded text. 0 or -PROF_ETOOBIG. */
int query_export_folded(const struct query_stackset *ss, struct buf *out);

struct query_svg_opts {
	const char *title;    /* NULL = "Flame Graph" */
	const char *subtitle; /* NULL = type and total; always followed by the counts */
	unsigned width;	      /* px; 0 = 1200 */
};

/**
 * query_export_svg() - append an interactive SVG of @fg (already shaped:
 * truncation and inversion as the caller chose) to @out. @type is shown
 * in the subtitle. 0 or -PROF_ETOOBIG.
 */
int query_export_svg(const struct query_flamegraph *fg, const char *type,
		     const struct query_svg_opts *o, struct buf *out);

#endif
