// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_detect.c - libFuzzer target for format sniffing and dispatch
 * (src/format/detect.c): fmt_detect on any bytes (gzip, JSON key scan,
 * text and protobuf sniffing) returns a kind without reading past the
 * input, and fmt_decode_any of the text and JSON formats gives an error
 * with a reason or a valid profile. Binary formats have their own targets
 * (fuzz_pprof, fuzz_otlp, fuzz_jfr). Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "format/detect.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_decode_opts o = { .max_samples = 100000, .max_input = 1u << 20 };
	struct model_profile p;
	struct prof_err err;
	enum fmt_kind k = fmt_detect(data, size, "x.pb.gz");

	PROF_ASSERT(k >= FMT_KIND_UNKNOWN && k <= FMT_KIND_PPROF_LEGACY);
	PROF_ASSERT(strcmp(fmt_kind_name(k), "") != 0);
	if (k == FMT_KIND_PPROF || k == FMT_KIND_OTLP || k == FMT_KIND_JFR || k == FMT_KIND_UNKNOWN)
		return 0;
	prof_err_init(&err);
	model_profile_init(&p);
	if (fmt_decode_any(data, size, NULL, &o, &p, &err) != 0)
		PROF_ASSERT(err.code < 0 && err.msg[0] != '\0');
	else
		PROF_ASSERT(model_profile_validate(&p, &err) == 0);
	model_profile_release(&p);
	return 0;
}
