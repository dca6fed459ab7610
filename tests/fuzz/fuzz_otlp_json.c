// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_otlp_json.c - libFuzzer target for the OTLP/JSON codec
 * (src/format/otlp_json.c): any bytes give an error with a code and a
 * reason, or profiles that pass model_profile_validate, encode back to
 * OTLP/JSON and decode again to the same number of profiles and samples.
 * Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "format/otlp_json.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t count_samples(const struct fmt_otlp_batch *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++)
		n += b->profiles[i].samples.n;
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_decode_opts o = { .max_samples = 100000 };
	struct fmt_otlp_batch b, b2;
	struct prof_err err;
	struct buf enc = BUF_INIT;
	const struct model_profile **in;

	prof_err_init(&err);
	if (fmt_otlp_json_decode(data, size, &o, &b, &err) != 0) {
		PROF_ASSERT(err.code < 0 && err.msg[0] != '\0');
		fmt_otlp_batch_release(&b);
		return 0;
	}
	in = xcalloc(b.n + 1, sizeof(*in));
	for (size_t i = 0; i < b.n; i++) {
		PROF_ASSERT(model_profile_validate(&b.profiles[i], &err) == 0);
		in[i] = &b.profiles[i];
	}
	PROF_ASSERT(fmt_otlp_json_encode(in, b.n, &enc) == 0);
	prof_err_init(&err);
	PROF_ASSERT(fmt_otlp_json_decode(enc.p, enc.len, NULL, &b2, &err) == 0);
	PROF_ASSERT(count_samples(&b2) == count_samples(&b));
	fmt_otlp_batch_release(&b2);
	fmt_otlp_batch_release(&b);
	free(in);
	buf_release(&enc);
	return 0;
}
