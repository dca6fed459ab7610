/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opts.h - the options every decoder of format/ understands, gathered in
 * one struct so fmt_decode_any (detect.h) can pass them through to
 * whichever decoder the bytes call for.
 *
 * A zero-initialised struct (or a NULL pointer where a decoder takes one)
 * means "defaults": sniff the format, FMT_DEFAULT_MAX_INPUT, lenient
 * text parsing, every profile of a multi-profile file.
 */
#ifndef PROF_FORMAT_OPTS_H
#define PROF_FORMAT_OPTS_H

#include "base/compat.h"

/** Cap on the (decompressed) input size when the caller passes 0. */
#define FMT_DEFAULT_MAX_INPUT (256u << 20)

/**
 * enum fmt_kind - the formats fmt_detect tells apart (detect.h).
 * FMT_KIND_OTLP is the protobuf form, FMT_KIND_OTLP_JSON the OTLP/JSON one.
 */
enum fmt_kind {
	FMT_KIND_UNKNOWN = 0,
	FMT_KIND_PPROF,
	FMT_KIND_OTLP, /* ExportProfilesServiceRequest / ProfilesData, protobuf */
	FMT_KIND_OTLP_JSON,
	FMT_KIND_JFR,
	FMT_KIND_FOLDED,
	FMT_KIND_PERF_SCRIPT,
	FMT_KIND_SPEEDSCOPE,
	FMT_KIND_CPUPROFILE,
	FMT_KIND_PPROF_LEGACY, /* text/binary formats before profile.proto (pprof_legacy.h) */
};

/**
 * struct fmt_decode_opts - knobs of the decoders; all optional.
 * @kind:        force a format instead of sniffing (FMT_KIND_UNKNOWN = sniff)
 * @max_input:   refuse inputs (after gunzip) larger than this many bytes
 *               with -PROF_ETOOBIG; 0 = FMT_DEFAULT_MAX_INPUT
 * @max_samples: refuse inputs that would decode to more samples; 0 = none
 *               beyond what @max_input implies
 * @event:       JFR only: "cpu" (default), "wall", "alloc", "lock" or
 *               "malloc"
 * @sample_type, @sample_unit: folded only: the value column the counts
 *               go to; NULL = "samples" / "count"
 * @strict:      folded only: an unparsable line is an error (default: it
 *               is skipped and counted in a profile comment, as
 *               flamegraph.pl and speedscope skip it)
 * @profile:     speedscope only: 0 = every profile of the file (each
 *               sample labelled with its profile's name), N = only the
 *               N-th profile (1-based)
 */
struct fmt_decode_opts {
	enum fmt_kind kind;
	size_t max_input;
	size_t max_samples;
	const char *event;
	const char *sample_type, *sample_unit;
	bool strict;
	unsigned profile;
};

#endif
