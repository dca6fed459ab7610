/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_json.h - OTLP profiles in the OTLP/JSON encoding (docs/formats.md
 * "OTLP/JSON"): an ExportProfilesServiceRequest (or the wire-identical
 * ProfilesData) written with the proto3 JSON mapping plus OTLP's rules.
 *
 * The JSON is translated field by field to and from the protobuf message,
 * driven by the protobuf-c descriptors of src/format/proto, and the
 * protobuf codec (otlp.h) does the rest, so both OTLP encodings map to
 * the model in exactly the same way (see otlp.h: one model_profile per
 * OTLP Profile, resource/scope/profile attributes in attrs).
 *
 * Accepted on input:
 *   - lowerCamelCase keys (the OTLP/JSON rule) and the proto field names
 *     in snake_case (receivers such as the Collector accept both); the
 *     same field under both spellings is an error; unknown keys are
 *     ignored; null means "not set";
 *   - 64-bit integers as decimal strings or JSON numbers; 32-bit ones as
 *     numbers or strings; bools; doubles as numbers or "NaN",
 *     "Infinity", "-Infinity"; enums as numbers or names;
 *   - traceId/spanId as hex (either case); profileId as hex (32 digits,
 *     as the Collector writes it) or base64; other bytes as base64
 *     (standard or URL-safe alphabet, padding optional).
 * Written on output: camelCase, 64-bit integers as strings, ids in
 * lowercase hex (profileId too, as the Collector does), bytes in standard
 * base64, default values left out (proto3 JSON); invalid UTF-8 in
 * strings is replaced with U+FFFD so the output is valid JSON.
 */
#ifndef PROF_FORMAT_OTLP_JSON_H
#define PROF_FORMAT_OTLP_JSON_H

#include "base/buf.h"
#include "base/err.h"
#include "format/opts.h"
#include "format/otlp.h"

/**
 * fmt_otlp_json_decode() - decode OTLP/JSON profiles into @out (zeroed by
 * the caller, released with fmt_otlp_batch_release, also on error).
 * @opts may be NULL (max_input, max_samples apply).
 * Errors: -PROF_ECORRUPT for JSON syntax ("otlp-json: line L:C (byte B):
 * ..."), a value of the wrong JSON type, a bad number, hex or base64, or a
 * nesting deeper than FMT_PB_MAX_DEPTH, each naming the JSON path
 * ("otlp-json: resourceProfiles[0].scopeProfiles[0].profiles[1].samples[3]
 * .values[0]: \"12x\" is not an int64"); the semantic errors of
 * fmt_otlp_decode (index out of range, ...) with its message after
 * "otlp-json: "; -PROF_ETOOBIG beyond opts->max_input, opts->max_samples,
 * or a message that would take more than 64 bytes per input byte.
 */
int fmt_otlp_json_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			 struct fmt_otlp_batch *out, struct prof_err *err);

/**
 * fmt_otlp_json_encode() - encode @n profiles as one OTLP/JSON
 * ExportProfilesServiceRequest (same grouping and dictionary as
 * fmt_otlp_encode), appended to @out. Returns 0, -ENOMEM, -PROF_ETOOBIG
 * (@out's cap) or the error of fmt_otlp_encode.
 */
int fmt_otlp_json_encode(const struct model_profile *const *profiles, size_t n, struct buf *out);

#endif
