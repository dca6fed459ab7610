/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof_legacy.h - the profile formats that came before profile.proto and
 * that `go tool pprof` still reads (google/pprof profile/legacy_profile.go
 * and legacy_java_profile.go, parseLegacy), decoded into the model with
 * the numbers pprof gives (shared corpus pprof-legacy/ and its facts):
 *
 *   binary CPU ("profilez", gperftools and Go before 1.9): a header of
 *       five words 0, 3, 0, period (microseconds), 0 in 32- or 64-bit,
 *       little- or big-endian words, then records count, n, pc[n]
 *       (leaf first), ended by 0, 1, 0, then an optional /proc/self/maps
 *       text; header word 3 = 1 is the Java variant, whose trailer names
 *       the addresses ("0x1f com.Foo.bar (Foo.java:12)");
 *       -> samples/count, cpu/nanoseconds (count x period);
 *   heap text ("heap profile: N: M [N: M] @ heap/RATE", heap_v2/RATE,
 *       heapprofile, growthz, fragmentationz; tcmalloc, and Go's debug=1
 *       heap/allocs output): lines "inuse_n: inuse_bytes [alloc_n:
 *       alloc_bytes] @ 0x... 0x..." -> alloc_objects/count,
 *       alloc_space/bytes, inuse_objects/count, inuse_space/bytes (or
 *       objects/space when the header shows no allocations), with the
 *       numeric label "bytes" (average block size); heap and heap_v2
 *       values are de-sampled as pprof does (scaleHeapSample: divided by
 *       1 - exp(-avg/rate), rate = the header's, halved for "heap/");
 *   contention text ("--- contentionz ", Go's "--- mutex:" and
 *       "--- contention:" debug=1 output): "attribute = value" lines then
 *       "cycles count @ 0x..." -> contentions/count, delay/nanoseconds;
 *   Go count text ("goroutine profile: total N", threadcreate): lines
 *       "N @ 0x..." (comment lines, e.g. symbolized frames, skipped);
 *   threadz text ("--- threadz N ---" / "--- Thread ...");
 *   Java text ("--- heapz 1 ---", "--- contentionz 1 ---" + format =
 *       java): samples then a table of "0xADDR function (file:line)".
 *
 * What pprof keeps, we keep: return addresses are moved back one byte
 * into the call (not the leaf's where pprof does not), one location per
 * distinct address, a mapping per /proc/maps entry (or one unnamed mapping
 * covering everything when a location falls in none), drop_frames /
 * keep_frames set to pprof's regexes for the profile kind, comment lines
 * ignored: the function names in a Go debug=1 file's "#" lines are not
 * read (pprof does not read them either; symbolize the addresses).
 *
 * Deviations from pprof, all on input pprof reads wrongly or not at all:
 * a binary CPU record cut short by the end of the input is an error
 * (pprof fills the missing words with 0); numbers with '_' separators are
 * not accepted; lines may be longer than bufio.Scanner's 64 KiB; memory
 * map lines longer than 4 KiB after $attribute substitution are skipped.
 */
#ifndef PROF_FORMAT_PPROF_LEGACY_H
#define PROF_FORMAT_PPROF_LEGACY_H

#include "base/compat.h"
#include "base/err.h"
#include "format/opts.h"
#include "model/profile.h"

/**
 * fmt_pprof_legacy_sniff() - true when the @n bytes at @data (not
 * gzipped) start like one of the formats above: the binary CPU header in
 * any of its four word encodings, or a first line (for the Go count and
 * threadz formats, the first line that is not blank or a '#' comment)
 * that one of pprof's legacy parsers accepts as its header. Reads at
 * most the first line or 40 bytes. Never fails.
 */
bool fmt_pprof_legacy_sniff(const void *data, size_t n);

/**
 * fmt_pprof_legacy_decode() - decode a legacy profile (not gzipped; see
 * fmt_decode_any for that) into @out, initialised by the caller
 * (model_profile_init) and owned by the caller (release it on error too).
 * @opts may be NULL; opts->max_samples applies. The parsers are tried in
 * pprof's order (binary CPU, heap, Go count, threadz, contention, Java),
 * each passing the input on when the header is not its own.
 *
 * Errors (@err names the parser, and the line and byte or the record's
 * byte offset):
 *   -PROF_ECORRUPT  a malformed record in a recognised profile, with
 *                   pprof's reason where it has one ("line 3:1 (byte 51):
 *                   inuse count was 0 but inuse bytes was 16"; "Java heap
 *                   sample \"0 0 @ 0\": second value must be non-zero"), a
 *                   number out of range, a binary record cut short;
 *   -PROF_EFORMAT   no parser recognises the input (the message says what
 *                   the closest one expected);
 *   -PROF_ETOOBIG   more samples than opts->max_samples.
 * The model holds O(input size) entries. Thread-safe (no shared state).
 */
int fmt_pprof_legacy_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			    struct model_profile *out, struct prof_err *err);

#endif
