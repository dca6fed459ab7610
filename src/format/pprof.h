/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof.h - pprof profile.proto (perftools.profiles, docs/formats.md "pprof profile.proto")
 * decoder and encoder.
 */
#ifndef PROF_FORMAT_PPROF_H
#define PROF_FORMAT_PPROF_H

#include "base/buf.h"
#include "base/err.h"
#include "model/profile.h"

/** Decompressed-size cap applied when the caller passes 0. */
#define FMT_PPROF_DEFAULT_MAX (256u << 20)
/** Most concatenated Profile messages one input may hold (docs/formats.md). */
#define FMT_PPROF_MAX_CONCAT 1024

/**
 * fmt_pprof_decode() - decode a pprof profile (gzip or raw protobuf,
 * sniffed by the gzip magic) into @out, which must be initialised by the
 * caller (model_profile_init) and is owned by the caller (release it on
 * error too; it may hold part of the profile).
 * @max_decoded caps the decompressed size (0 = FMT_PPROF_DEFAULT_MAX).
 * pprof ids (any non-zero uint64) become dense model indexes; line
 * function_id 0 and location mapping_id 0 mean "none". Edge cases
 * (docs/formats.md): no string table reads as [""]; a mapping_id that
 * names no mapping is dropped (as pprof does) and noted in a comment;
 * several Profile messages back to back (cat, multi-member gzip) are
 * decoded one by one and merged (model/merge.h), with a comment, when the
 * whole is not one valid Profile.
 * Errors, each with @err naming what is wrong:
 *   -PROF_ECORRUPT  malformed protobuf ("pprof: Profile.sample: truncated
 *                   varint at byte 123"; offsets are in the gunzipped
 *                   bytes when the input was gzipped, and the message says
 *                   so), a corrupt gzip stream or bytes after it that are
 *                   not another member, a sample location or line function
 *                   referring to nothing ("pprof: sample[3]: location_id[0]
 *                   = 99 not found (12 locations)"), a zero or duplicate id,
 *                   a string index out of range ("pprof: function[2].name:
 *                   string index 40 out of range (38 strings)"), a
 *                   non-empty string_table[0], a sample whose value count
 *                   differs from the sample types, a broken message among
 *                   concatenated ones ("pprof: the input is 2 Profile
 *                   messages back to back; message 2 (bytes 402-804): ...");
 *   -PROF_ETOOBIG   over the cap, nesting too deep, an input that would
 *                   unpack to far more memory than its size (format/pbcheck.h),
 *                   more than FMT_PPROF_MAX_CONCAT concatenated messages;
 *   -PROF_EFORMAT   empty input.
 * Never reads outside @data. Thread-safe (no shared state).
 */
int fmt_pprof_decode(const void *data, size_t n, size_t max_decoded, struct model_profile *out,
		     struct prof_err *err);

/**
 * fmt_pprof_decode_pbc() - fmt_pprof_decode without the direct unpack:
 * every message goes through fmt_pb_check and protobuf-c. The same
 * answer, code and message as fmt_pprof_decode for every input; kept for
 * the differential test (tests/unit/format/test_pprof_direct.c).
 */
int fmt_pprof_decode_pbc(const void *data, size_t n, size_t max_decoded, struct model_profile *out,
			 struct prof_err *err);

/**
 * fmt_pprof_direct_shape() - whether fmt_pprof_decode reads the raw
 * (not gzipped) Profile message of @n bytes at @data without protobuf-c:
 * every field known and in its declared wire type, each singular message
 * once, within the allocation bound. For tests and benchmarks.
 */
bool fmt_pprof_direct_shape(const void *data, size_t n);

/**
 * fmt_pprof_encode() - encode @p (which must pass model_profile_validate)
 * as pprof protobuf, gzipped when @gzip, appended to @out. Model index i
 * of mappings, functions and locations becomes pprof id i; model string
 * ids are the string table indexes. Profile-level attributes become labels
 * on every sample (pprof has no resource); sample timestamps and links are
 * not representable and are dropped. Deterministic. Returns 0 or
 * -PROF_ETOOBIG when @out's cap is reached.
 */
int fmt_pprof_encode(const struct model_profile *p, bool gzip, struct buf *out);

#endif
