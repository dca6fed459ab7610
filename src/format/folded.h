/* SPDX-License-Identifier: Apache-2.0 */
/*
 * folded.h - Brendan Gregg's folded ("collapsed") stacks, the text that
 * stackcollapse-*.pl, async-profiler (-o collapsed), py-spy --raw and
 * Pyroscope's /ingest speak (docs/formats.md "Folded stacks", "Pyroscope ingest"):
 *
 *     main;foo;bar 31
 *
 * one stack per line, frames separated by ';' *root first*, then
 * whitespace, then the count. The count is the last whitespace-separated
 * token, so frames may contain spaces ("Thread 1;run 5" is the stack
 * [Thread 1, run]). The model's stacks are leaf first, so the frames are
 * reversed on the way in and out.
 *
 * Decoding rules (each documented case has a unit test):
 *   - "\n" and "\r\n" line ends, a UTF-8 BOM, and a missing final newline
 *     are accepted; text with a UTF-16 BOM (little- or big-endian, as
 *     PowerShell and Notepad write it) is converted to UTF-8 first
 *     (fmt_utf16_to_utf8), and line/byte positions in messages are those
 *     of the UTF-8 text;
 *   - blank lines are skipped silently;
 *   - a line whose last token is not a count (comments such as "# ..." or
 *     "// ...", text without a count) is invalid: by default it is
 *     skipped, like flamegraph.pl does, and the profile gets a comment
 *     "folded: skipped N invalid lines (first: line L)"; with
 *     opts->strict it is an error naming line and column;
 *   - a count is a decimal integer, optionally with a fraction
 *     (flamegraph.pl accepts \d+(\.\d*)?), rounded half up; negative
 *     counts and counts above INT64_MAX are invalid;
 *   - a count of 0 adds no sample (the line is valid);
 *   - empty frames ("a;;b") are dropped; a line with no frames at all
 *     (" 5") is a sample with an empty stack;
 *   - frame names are kept byte for byte, including the annotation
 *     suffixes _[k] _[j] _[i] _[w]; "_[k]" frames get frame type "kernel".
 *   - identical stacks share one function/location/stack each (one
 *     location per distinct frame name, no mappings).
 */
#ifndef PROF_FORMAT_FOLDED_H
#define PROF_FORMAT_FOLDED_H

#include "base/buf.h"
#include "base/err.h"
#include "format/opts.h"
#include "model/profile.h"

/**
 * fmt_folded_decode() - decode folded text into @out (initialised by the
 * caller with model_profile_init and owned by the caller; on error it
 * holds a partial profile the caller releases). One value column,
 * opts->sample_type/sample_unit (default "samples"/"count"); @opts may be
 * NULL. Errors: -PROF_ETOOBIG (over opts->max_input, or more samples than
 * opts->max_samples), -PROF_ECORRUPT in strict mode ("folded: line L:C
 * (byte B): ..."), -PROF_EFORMAT when the input is not empty but has no
 * valid line at all (the message quotes the first line).
 */
int fmt_folded_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
		      struct model_profile *out, struct prof_err *err);

/**
 * fmt_folded_encode() - append value column @sample_type of @p as folded
 * text to @out: one line per distinct stack (root first, inlined lines
 * expanded outermost first), in order of first appearance, with the sum
 * of its values; zero sums are left out. Frame names are
 * model_frame_name's; ';' in a name becomes ':' and control characters
 * become ' ', so every line reads back as the same stack. When the text
 * would start with a byte order mark (a first frame beginning with the
 * bytes FF FE, FE FF or EF BB BF), a UTF-8 BOM is written first, so the
 * decoder does not take the frame's bytes for one.
 * Returns 0, -EINVAL (@sample_type out of range) or -PROF_ETOOBIG (@out's cap).
 */
int fmt_folded_encode(const struct model_profile *p, uint32_t sample_type, struct buf *out);

#endif
