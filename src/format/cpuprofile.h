/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cpuprofile.h - decoder of V8 CPU profiles: the `.cpuprofile` files of
 * `node --cpu-prof` and Chrome DevTools, i.e. the Profiler.Profile object
 * of the DevTools protocol (ChromeDevTools/devtools-protocol
 * json/js_protocol.json; docs/formats.md "V8 cpuprofile"):
 *
 *     { "nodes": [ { "id": 1, "callFrame": { "functionName": "(root)",
 *                    "scriptId": "0", "url": "", "lineNumber": -1,
 *                    "columnNumber": -1 }, "hitCount": 0, "children": [2] }, ... ],
 *       "startTime": 574391052, "endTime": 577540808,        (microseconds)
 *       "samples": [2, 5, 5, ...], "timeDeltas": [5715, 1060, ...] }
 *
 * Mapping to the model:
 *   - the node tree is given by "children" (node ids); the first node is
 *     the root. Each sample is the stack from its node up to the root,
 *     synthetic nodes included ("(root)", "(program)", "(idle)",
 *     "(garbage collector)"), so totals match what DevTools shows;
 *   - a function per (name, url, line): an empty functionName becomes
 *     "(anonymous)" (the V8 / DevTools convention), filename = url,
 *     start_line = lineNumber + 1 (the protocol's lines are 0-based), and
 *     one location per function with line/column 1-based; frames with a
 *     url or a real name have frame type "v8js";
 *   - value columns "samples"/"count" (1 per sample) and
 *     "wall"/"nanoseconds": V8 samples the JS thread on a timer whether
 *     it runs or idles, so this is wall time. Sample i's time is
 *     timestamp[i+1] - timestamp[i] (the time until the next sample, as
 *     DevTools attributes it) and the last sample's is 0; timestamp[i] =
 *     startTime + timeDeltas[0] + ... + timeDeltas[i]. A negative interval
 *     (samples out of order, seen in old Chrome profiles) counts 0. The
 *     profile name is "wall", period type wall/nanoseconds, period the mean
 *     interval;
 *   - sample timestamps are those times in ns. V8's clock is monotonic,
 *     not Unix time: time_ns stays 0, duration_ns = endTime - startTime;
 *   - without "samples", each node with a hitCount becomes one sample of
 *     hitCount (count column only);
 *   - the pre-2016 layout (old DevTools, v8-profiler, speedscope's
 *     "old V8 CPU profile"): {"head": {functionName, url, lineNumber,
 *     columnNumber, hitCount, id, children: [nested nodes]}, "startTime"
 *     and "endTime" in seconds, "samples", "timestamps" (absolute, in
 *     microseconds)} is read as the same profile in the current layout:
 *     lines and columns there are 1-based (0 = none), a node without an id
 *     gets one (only samples need them).
 *
 * Errors (-PROF_ECORRUPT, naming the node or array index): JSON syntax
 * (line:column), missing "nodes" or "callFrame", a non-integer or
 * duplicate node id, a child id that is not a node, a node listed as the
 * child of two nodes, a first node that has a parent, a node not
 * reachable from the root (a cycle of children), a sample naming an
 * unknown node, "samples" and "timeDeltas" of different lengths.
 * -PROF_EUNSUPPORTED: Chrome trace-event files ("traceEvents").
 * -PROF_ETOOBIG: opts->max_input,
 * opts->max_samples, or stacks beyond FMT_STACK_BUDGET (textutil.h).
 */
#ifndef PROF_FORMAT_CPUPROFILE_H
#define PROF_FORMAT_CPUPROFILE_H

#include "base/err.h"
#include "format/opts.h"
#include "model/profile.h"

/**
 * fmt_cpuprofile_decode() - decode a V8 .cpuprofile into @out (initialised
 * by the caller, owned by the caller; partial on error). @opts may be NULL.
 */
int fmt_cpuprofile_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			  struct model_profile *out, struct prof_err *err);

#endif
