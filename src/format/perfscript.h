/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfscript.h - decoder of `perf script` text (Linux perf, default
 * fields, recorded with callchains: `perf record -g` / `--call-graph`):
 *
 *     cwork-fp 14251 [003]   581.335949:    2004008 cpu-clock:ppp:
 *     	ffffffff8225fd19 pvm_irq_enable+0x19 ([kernel.kallsyms])
 *     	            139f sort_work+0x6f (/tmp/cwork-fp)
 *     	           2724a __libc_start_call_main+0x7a (/usr/lib/libc.so.6)
 *     <blank line>
 *
 * A header line per sample: the command name (may contain spaces), the
 * thread id or "pid/tid", an optional "[cpu]", the time in seconds with a
 * ':' ("581.335949:"), an optional period, and the event name with a ':'
 * (the rest of the line, e.g. tracepoint fields, is ignored unless it is
 * an "addr sym (dso)" frame, which perf prints there when there is no
 * callchain). Then one indented line per frame, leaf first:
 * "addr sym+off (dso)"; sym may be "[unknown]" and may contain spaces and
 * parentheses (C++ signatures), dso is the last balanced "(...)".
 *
 * Mapping to the model:
 *   - one model sample per perf sample; value columns: "samples"/"count"
 *     (1 per sample) and, per distinct event that carries a period, one
 *     column with the period: "cpu"/"nanoseconds" for cpu-clock and
 *     task-clock (their period is in ns), "<event>"/"count" otherwise
 *     (modifiers such as ":ppp" are stripped). The first such column is
 *     also the profile's period type, with the first period seen;
 *   - labels per sample: thread.name (comm), thread.id, process.pid (when
 *     "pid/tid" is printed), cpu.logical_number (when "[cpu]" is printed);
 *   - sample timestamps are the perf timestamps in ns, exactly (no
 *     floating point). They are perf's clock (CLOCK_MONOTONIC unless the
 *     recording chose another), not Unix time: the profile's time_ns and
 *     duration_ns stay 0 and the caller may shift the timestamps;
 *   - functions by symbol name with the "+0x.." offset stripped; one
 *     mapping per dso path (none for "[unknown]"); one location per
 *     (dso, address, symbol) with frame type "kernel" (dso [kernel.*] or
 *     [guest.kernel.*]) or "native". A "[unknown]" symbol gives a
 *     location without lines (address + mapping) that a symbolizer can
 *     resolve later; stacks are interned.
 */
#ifndef PROF_FORMAT_PERFSCRIPT_H
#define PROF_FORMAT_PERFSCRIPT_H

#include "base/err.h"
#include "format/opts.h"
#include "model/profile.h"

/**
 * fmt_perfscript_decode() - decode `perf script` output into @out
 * (initialised by the caller, owned by the caller; partial on error).
 * @opts may be NULL (only max_input and max_samples apply).
 * Errors: -PROF_ECORRUPT "perf-script: line L:C (byte B): <reason>" for a
 * header that does not parse, a bad timestamp, a frame line without an
 * address or before any header; -PROF_EFORMAT when there is no sample at
 * all; -PROF_ETOOBIG over opts->max_input or opts->max_samples.
 */
int fmt_perfscript_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			  struct model_profile *out, struct prof_err *err);

/**
 * fmt_perfscript_sniff() - true when the first non-blank, non-'#' line of
 * the @n bytes at @data parses as a perf script sample header (used by
 * fmt_detect; only the first 4 KiB are looked at).
 */
bool fmt_perfscript_sniff(const void *data, size_t n);

#endif
