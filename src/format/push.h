/* SPDX-License-Identifier: Apache-2.0 */
/*
 * push.h - the request body of Pyroscope's Connect push API,
 * push.v1.PusherService/Push (docs/formats.md "Pyroscope ingest"; our schema in
 * src/format/proto/push/v1/push.proto): PushRequest { repeated
 * RawProfileSeries series = 1 }, RawProfileSeries { repeated LabelPair
 * labels = 1; repeated RawSample samples = 2; annotations = 3 (ignored) },
 * RawSample { bytes raw_profile = 1; string ID = 2 }, LabelPair { name =
 * 1; value = 2 }. Grafana Alloy's pyroscope.write sends it.
 *
 * Two encodings, as the Connect protocol has them: binary protobuf
 * (Content-Type application/proto) and protobuf JSON (application/json:
 * {"series":[{"labels":[{"name":..,"value":..}],"samples":[{"rawProfile":
 * "<base64>","ID":".."}]}]}, field names in lowerCamelCase or as in the
 * .proto, bytes in standard or URL-safe base64 with or without padding).
 * The raw profiles are not decoded here (they are pprof: format/pprof.h).
 */
#ifndef PROF_FORMAT_PUSH_H
#define PROF_FORMAT_PUSH_H

#include "base/compat.h"
#include "base/err.h"

struct fmt_push_label {
	char *name, *value; /* owned, NUL-free */
};

struct fmt_push_sample {
	const uint8_t *data; /* raw_profile: lent from the request (owned by it) */
	size_t len;
};

struct fmt_push_series {
	struct fmt_push_label *labels; /* owned; nlabels entries */
	size_t nlabels;
	struct fmt_push_sample *samples; /* owned; nsamples entries */
	size_t nsamples;
};

struct fmt_push_req {
	struct fmt_push_series *series; /* owned; n entries */
	size_t n;
	void *priv; /* the unpacked message or decoded JSON bytes */
};

/**
 * fmt_push_decode() - decode a PushRequest of @n bytes (@json: protobuf
 * JSON, else binary) into @out (release with fmt_push_release; empty on
 * error). Raw profiles point into @out's own memory, valid until release.
 * Errors: -PROF_ECORRUPT with @err naming the field and byte offset (binary)
 * or the JSON path ("series[0].samples[1].rawProfile: not base64"), a
 * label with a NUL byte or an empty name; -PROF_ETOOBIG for a binary body
 * that would unpack to far more memory than its size or a JSON body too
 * costly to parse (format/pbcheck.h, format/textutil.h).
 */
int fmt_push_decode(const void *data, size_t n, bool json, struct fmt_push_req *out,
		    struct prof_err *err);

/** fmt_push_release() - free @r; NULL ok; @r is left empty. */
void fmt_push_release(struct fmt_push_req *r);

#endif
