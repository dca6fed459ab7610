/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_compat.h - OTLP profiles requests of older proto releases,
 * rewritten into the layout profd's decoder reads (opentelemetry-proto
 * v1.10/v1.11, src/format/proto/).
 *
 * OTLP profiles is an alpha signal: its messages were renumbered between
 * releases under one package name, with no version marker on the wire
 * (docs/formats.md, "OTLP layout history"). Producers users run still send older layouts:
 * async-profiler 4.3/4.4 and the OpenTelemetry eBPF profiler write v1.9
 * (Sample{1 stack_index; 2 values; 3 attribute_indices; 4 link_index}),
 * where v1.10 reads field 2 as attribute indices; async-profiler 4.2 and
 * its jfr-converter write v1.7 (no Stack table). fmt_otlp_layout_sniff
 * tells the layout from the wire types and field numbers of the
 * request's Profile and Sample messages; fmt_otlp_compat_upgrade
 * rewrites one into the current layout (for v1.8/v1.9 field numbers
 * only, payload bytes copied), which the decoder then reads as any
 * request. docs/ingest.md, "OTLP proto versions", has the
 * matrix of producers and layouts.
 */
#ifndef PROF_FORMAT_OTLP_COMPAT_H
#define PROF_FORMAT_OTLP_COMPAT_H

#include "base/buf.h"
#include "base/err.h"
#include "format/otlp.h"

enum fmt_otlp_layout {
	FMT_OTLP_LAYOUT_CURRENT = 0, /* v1.10 and v1.11 (what the decoder reads) */
	FMT_OTLP_LAYOUT_V1_9,	     /* v1.9: Sample fields 2..4 are values, attributes, link */
	FMT_OTLP_LAYOUT_V1_8, /* v1.8: v1.9's Sample; Profile fields 7..12 numbered one higher */
	FMT_OTLP_LAYOUT_V1_7, /* v1.7: Sample ranges into Profile.location_indices, no Stack table */
};

/** fmt_otlp_layout_name() - "v1.10", "v1.9", "v1.8" or "v1.7". */
const char *fmt_otlp_layout_name(enum fmt_otlp_layout l);

/**
 * fmt_otlp_layout_sniff() - which layout the ExportProfilesServiceRequest
 * @data (@n bytes, raw protobuf) is in. Evidence, from every Profile and
 * Sample of the request:
 *   - v1.7: a Profile with field 3 length-delimited (location_indices;
 *     later a fixed64 time), field 5 a varint (duration; later
 *     period_type), field 6 length-delimited (period_type; later period),
 *     field 1 repeated, or field 13/14;
 *   - v1.8: a Profile with field 8 length-delimited (profile_id; later
 *     dropped_attributes_count) or field 12;
 *   - v1.9: a Sample with field 3 packed or repeated (attribute_indices;
 *     v1.10's link_index is one varint), or with field 2 but neither
 *     field 4 nor 5 (v1.9's values; in v1.10 such a sample is
 *     attributes alone, which carries no observation);
 *   - v1.10: a Sample with field 4 packed or repeated (values; v1.9's
 *     link_index is one varint).
 * Profile evidence decides first (v1.7, then v1.8); samples say v1.9 only
 * with v1.9 evidence and none of v1.10. Only the first 64 samples of each
 * Profile are looked at, and none once one showed v1.10's values (the
 * Profile fields are read whole; samples are skipped by length). A request that is not well-formed
 * protobuf, or that shows nothing, is FMT_OTLP_LAYOUT_CURRENT (the
 * decoder then reports what is wrong). Never reads outside @data;
 * nesting is fixed (request, resource, scope, profile, sample).
 */
enum fmt_otlp_layout fmt_otlp_layout_sniff(const void *data, size_t n);

/**
 * fmt_otlp_compat_upgrade() - rewrite the request @data (@n bytes, in
 * layout @from: FMT_OTLP_LAYOUT_V1_7, _V1_8 or _V1_9) into the current
 * layout, appended to @out (the caller's; initialised, released by the
 * caller; its cap bounds the rewrite). v1.9 -> v1.10: Sample fields 2, 3,
 * 4 become 4, 2, 3. v1.8 -> v1.10: the same, and Profile field 7
 * (comment_strindices, gone) is dropped, 8..12 become 7..11; everything
 * else is copied byte for byte. v1.7 -> v1.10: see otlp_compat.c (stack
 * table built, one Profile per sample type, attribute keys interned).
 * Errors: -PROF_ECORRUPT with @err naming the byte offset when @data is
 * not well-formed protobuf, or for v1.7 when a sample's range falls
 * outside its profile's location_indices or its value count differs
 * from the profile's sample types; -PROF_ETOOBIG for a v1.7 profile of
 * more than 64 sample types or when @out's cap is reached; -EINVAL for
 * FMT_OTLP_LAYOUT_CURRENT.
 */
int fmt_otlp_compat_upgrade(const void *data, size_t n, enum fmt_otlp_layout from, struct buf *out,
			    struct prof_err *err);

/**
 * fmt_otlp_decode_any() - fmt_otlp_decode for a request in any layout
 * fmt_otlp_layout_sniff tells: an older one is rewritten into a buffer of
 * its own (at most 4 * @n + 64 bytes, freed before returning: @out does
 * not point into it) and decoded from there. Same contract as
 * fmt_otlp_decode; an error in a rewritten request has "(read as the OTLP
 * v1.x layout)" appended to @err's message. For files (profd convert,
 * format detection); the server's ingest path does the same around
 * fmt_otlp_decode_pending.
 */
int fmt_otlp_decode_any(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *out,
			struct prof_err *err);

#endif
