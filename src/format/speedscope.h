/* SPDX-License-Identifier: Apache-2.0 */
/*
 * speedscope.h - decoder of the speedscope file format
 * (https://www.speedscope.app/file-format-schema.json; jlfwong/speedscope
 * src/lib/file-format-spec.ts; docs/formats.md "speedscope"):
 *
 *     { "$schema": "...", "shared": { "frames": [ {"name": "a"}, ... ] },
 *       "profiles": [ { "type": "sampled", "unit": "milliseconds",
 *                       "samples": [[0, 1], [0, 2]], "weights": [3, 4], ... },
 *                     { "type": "evented", "unit": "none",
 *                       "events": [ {"type": "O", "at": 0, "frame": 0}, ... ] } ] }
 *
 * Mapping to the model:
 *   - each shared frame is a function (name, file, line) with one location
 *     (line, col); stacks are root first in the file, leaf first in the model;
 *   - sampled: one model sample per sample with its weight (1 when the
 *     profile has no weights); zero weights add nothing (speedscope skips
 *     them);
 *   - evented: the open frames form a stack; every interval between two
 *     events during which a frame is open becomes a sample of the stack
 *     open then, valued at the interval's length;
 *   - value columns by unit: nanoseconds/microseconds/milliseconds/seconds
 *     -> "cpu"/"nanoseconds" (weights scaled to ns), bytes ->
 *     "alloc_space"/"bytes", none -> "samples"/"count". Fractional values
 *     are rounded to the nearest integer; evented times are rounded before
 *     they are subtracted, so intervals add up exactly. A file whose
 *     profiles use several kinds of unit gets one column per kind;
 *   - every sample has the label speedscope.profile = its profile's name
 *     (or "profile N", 1-based, when it has none); the file's name and
 *     exporter go to profile attributes speedscope.name, speedscope.exporter;
 *   - no timestamps (speedscope values are relative): duration_ns is the
 *     longest endValue - startValue of a time-unit profile.
 *
 * Errors (each -PROF_ECORRUPT naming the JSON path, e.g.
 * "speedscope: profiles[0].events[7]: closes frame 2 (\"c\") but frame 1
 * (\"b\") is on top"): JSON syntax (line:column), a missing or mistyped
 * member, a frame index out of range, negative or non-finite weights,
 * weights and samples of different lengths, events out of time order,
 * unbalanced events (a close that does not match the innermost open frame,
 * frames left open at the end), an unknown profile type or unit.
 * -PROF_ETOOBIG: over opts->max_input, opts->max_samples, or stacks
 * beyond FMT_STACK_BUDGET (textutil.h). -EINVAL: opts->profile beyond the
 * file's profiles.
 */
#ifndef PROF_FORMAT_SPEEDSCOPE_H
#define PROF_FORMAT_SPEEDSCOPE_H

#include "base/err.h"
#include "format/opts.h"
#include "model/profile.h"

/**
 * fmt_speedscope_decode() - decode a speedscope JSON file into @out
 * (initialised by the caller, owned by the caller; partial on error).
 * @opts may be NULL; opts->profile picks one profile (1-based), 0 = all.
 */
int fmt_speedscope_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			  struct model_profile *out, struct prof_err *err);

#endif
