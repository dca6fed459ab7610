/* SPDX-License-Identifier: Apache-2.0 */
/*
 * detect.h - tell profile formats apart by their bytes and decode any of
 * them into one model profile (for the CLI and the server's generic
 * ingest). File names are not trusted: the corpus has a raw protobuf named
 * *.pb.gz, and `go tool pprof` sniffs too (docs/formats.md "pprof profile.proto"); the
 * name is only a hint for when the bytes do not decide.
 *
 * Sniffing order (fmt_detect):
 *   1. gzip (1f 8b): the first 64 KiB are inflated and sniffed as below;
 *   2. "FLR\0": JFR;
 *   3. JSON ('{' or '[' after a BOM and blanks): the top-level keys decide
 *      -- resourceProfiles / resource_profiles / dictionary: OTLP/JSON;
 *      $schema (speedscope's), shared, profiles, activeProfileIndex,
 *      exporter: speedscope; nodes, samples, timeDeltas, startTime,
 *      endTime, head, traceEvents (or a top-level array, Chrome's trace
 *      events): V8 cpuprofile (whose decoder explains what it does not
 *      support);
 *   4. text (no control bytes but tab/CR/LF in the first 4 KiB): a
 *      header of a legacy format pprof reads (heap profile:, --- mutex:,
 *      goroutine profile: total N, ...; pprof_legacy.h) is pprof-legacy;
 *      a first line that parses as a perf script sample header is perf
 *      script, else folded stacks;
 *   5. binary: the legacy CPU header (words 0, 3, 0|1, period, 0) is
 *      pprof-legacy; else protobuf, by structure: pprof and OTLP both start with field 1 or
 *      2, so a top-level field number above 2 means pprof (Profile has 15
 *      fields, ExportProfilesServiceRequest 2); field 1 of pprof
 *      (ValueType) holds varints while field 1 of OTLP (ResourceProfiles)
 *      holds only length-delimited fields;
 *   6. the name: .pb.gz .pprof .prof -> pprof, .jfr -> JFR,
 *      .folded .collapsed -> folded, .speedscope.json -> speedscope,
 *      .cpuprofile -> cpuprofile, .perf .perf-script .linux-perf.txt ->
 *      perf script, .otlp.json .pb.json -> OTLP/JSON, .otlp -> OTLP.
 */
#ifndef PROF_FORMAT_DETECT_H
#define PROF_FORMAT_DETECT_H

#include "base/compat.h"
#include "base/err.h"
#include "format/opts.h"
#include "model/profile.h"

/**
 * fmt_kind_name() - "pprof", "otlp", "otlp-json", "jfr", "folded",
 * "perf-script", "speedscope", "cpuprofile", "pprof-legacy" or "unknown".
 * Static string.
 */
const char *fmt_kind_name(enum fmt_kind k);

/**
 * fmt_kind_parse() - the kind named @s (a fmt_kind_name, or the aliases
 * "collapsed", "perf", "v8"); 0 or -EINVAL.
 */
int fmt_kind_parse(const char *s, enum fmt_kind *out);

/**
 * fmt_detect() - the format of the @n bytes at @data (gzipped or not;
 * see the order above), with @name (a file name, may be NULL) as the last
 * resort. FMT_KIND_UNKNOWN when nothing decides. Reads at most the first
 * 64 KiB (inflated) of the input; never fails otherwise.
 */
enum fmt_kind fmt_detect(const void *data, size_t n, const char *name);

/**
 * fmt_decode_any() - decode a profile in any format above (gzipped or
 * not) into @out, initialised by the caller (model_profile_init) and
 * owned by the caller (release it on error too). @opts may be NULL
 * (defaults, see opts.h); opts->kind forces a format. OTLP requests (both
 * encodings) are merged into one profile with model_profile_merge; JFR
 * takes opts->event ("cpu" when NULL). Input larger than opts->max_input
 * (after gunzip; default FMT_DEFAULT_MAX_INPUT, FMT_JFR_DEFAULT_MAX for
 * JFR) is refused with -PROF_ETOOBIG.
 *
 * Errors are the chosen decoder's (each names its format, where and why);
 * -PROF_EFORMAT when the bytes are in no known format (for binary input
 * that is neither recognisably pprof nor OTLP, both are tried and pprof's
 * error is reported); -EINVAL for a bad opts->event. Offsets in @err are
 * in the gunzipped bytes when the input was gzipped (the message says so).
 */
int fmt_decode_any(const void *data, size_t n, const char *name_hint,
		   const struct fmt_decode_opts *opts, struct model_profile *out,
		   struct prof_err *err);

#endif
