/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symhealth.h - stack health: how much of what a selection shows is
 * named, and, per binary, why not (GET /api/v1/health/symbols).
 *
 * Every frame of every selected sample is classified: named by the
 * producer (the location came with function lines: JIT, interpreted and
 * kernel frames the agent resolved, pprof from Go), resolved at query
 * time through the symbolizer, or left as module+0xaddr. Frames that
 * need the symbolizer are attributed to their binary (mapping path + GNU
 * build ID) with the symbolizer's verdict for it (symbolizer.h enum
 * symbolizer_reason: dwarf, symbols, no_debuginfo, build_id_mismatch,
 * stripped) and a hint of what would fix it. Counts are in sample rows
 * (unit-free, so any profile type or a mix can be judged), each frame
 * counted once per row it appears in. Unwinding: a stack whose root frame
 * is "[truncated]" (the agent's marker for a stack deeper than it could
 * walk; JFR's truncated traces) is not fully unwound; samples_truncated
 * counts those rows, overall and per binary on the stack. Runtimes the
 * agent found in a selected process but cannot unwind (the series label
 * profd.interpreter.unsupported, agent/interp.h) are listed by reason
 * (at most 32): their frames show the interpreter's own native code.
 *
 * JSON answer:
 *   {"type":T|null,"from":MS,"to":MS,"samples":N,
 *    "samples_with_unsymbolized":N,"samples_truncated":N,"frames":N,
 *    "frames_symbolized":N,
 *    "runtimes":[{"runtime":"native","frames":N,"frames_symbolized":N},...],
 *    "unsupported_runtimes":["cpython 3.13.0: interpreter frames not supported",...],
 *    "binaries":[{"path":P,"build_id":B,"status":S,"frames":N,
 *                 "frames_symbolized":N,"samples":N,"samples_unsymbolized":N,
 *                 "samples_truncated":N,"hint":H},...]}   most unsymbolized samples first, at most
 *                                   QUERY_SYMHEALTH_MAX_BINARIES
 */
#ifndef PROF_QUERY_SYMHEALTH_H
#define PROF_QUERY_SYMHEALTH_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "store/matcher.h"
#include "store/store.h"
#include "symbolize/symbolizer.h"

#define QUERY_SYMHEALTH_MAX_BINARIES 1000

/** struct query_symhealth_params - the selection judged. */
struct query_symhealth_params {
	const char *type; /* NULL = every type */
	const struct store_matcher *m;
	size_t nm;
	int64_t from_ns, to_ns; /* inclusive */
	struct symbolizer *sym; /* may be NULL: every native frame counts as no_debuginfo */
};

/**
 * query_symhealth_run() - scan the selection (totals scan) and append the
 * JSON answer above to @out. 0, a store error (with @err), or
 * -PROF_ETOOBIG when @out's cap is reached.
 */
int query_symhealth_run(struct store *st, const struct query_symhealth_params *p, struct buf *out,
			struct prof_err *err);

#endif
