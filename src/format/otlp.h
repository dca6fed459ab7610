/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp.h - OTLP profiles (opentelemetry.proto.profiles.v1development,
 * v1.10/v1.11 layout, shared formats.md 1.4) protobuf decoder and encoder
 * of ExportProfilesServiceRequest (wire-identical to ProfilesData).
 *
 * Mapping to the model: each OTLP Profile becomes one model_profile with
 * one sample type; its attrs hold the resource attributes, then the scope
 * attributes, then the profile's own attributes. Samples with several
 * values/timestamps become one model sample per observation (value 1 per
 * timestamp when there are no values) sharing one stack range.
 */
#ifndef PROF_FORMAT_OTLP_H
#define PROF_FORMAT_OTLP_H

#include "base/buf.h"
#include "base/err.h"
#include "model/profile.h"

struct fmt_otlp_batch {
	struct model_profile *profiles; /* owned; n entries */
	size_t n;
};

/**
 * fmt_otlp_decode() - decode an ExportProfilesServiceRequest (raw
 * protobuf; the caller inflates gzip) into @out (zeroed by the caller,
 * released with fmt_otlp_batch_release). Errors: -PROF_ECORRUPT with @err
 * naming the table/field and index (e.g. "sample 3: stack_index 9 out of
 * range (4 stacks)"); -PROF_ETOOBIG when decoded data would exceed
 * @max_samples samples in all (0 = no limit).
 */
int fmt_otlp_decode(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *out,
		    struct prof_err *err);
void fmt_otlp_batch_release(struct fmt_otlp_batch *b);

/**
 * fmt_otlp_encode() - encode @n profiles as one ExportProfilesServiceRequest
 * with one shared dictionary, appended to @out. Profiles with identical
 * attrs share one ResourceProfiles; a profile with K sample types becomes
 * K OTLP Profiles. Sample timestamps are kept. Returns 0 or -errno.
 */
int fmt_otlp_encode(const struct model_profile *const *profiles, size_t n, struct buf *out);

#endif
