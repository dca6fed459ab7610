// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_folded.c - libFuzzer target for the folded-stacks decoder and
 * encoder (src/format/folded.c): any bytes give an error with a code and
 * a reason, or a profile that passes model_profile_validate and whose
 * folded encoding decodes again to the same total. Strict mode is taken
 * from the first byte so both paths run. Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "format/folded.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Sum of all values, or -1 when it does not fit in int64. */
static int64_t total(const struct model_profile *p)
{
	int64_t t = 0;

	for (size_t i = 0; i < p->values.n; i++)
		if (__builtin_add_overflow(t, p->values.v[i], &t))
			return -1;
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_decode_opts o = { 0 };
	struct model_profile p, q;
	struct prof_err err;
	struct buf enc = BUF_INIT;

	o.strict = size && (data[0] & 1);
	o.max_samples = 100000;
	prof_err_init(&err);
	model_profile_init(&p);
	if (fmt_folded_decode(data, size, &o, &p, &err) != 0) {
		PROF_ASSERT(err.code < 0 && err.msg[0] != '\0');
		model_profile_release(&p);
		return 0;
	}
	PROF_ASSERT(model_profile_validate(&p, &err) == 0);
	PROF_ASSERT(fmt_folded_encode(&p, 0, &enc) == 0);
	model_profile_init(&q);
	PROF_ASSERT(fmt_folded_decode(enc.p ? enc.p : "", enc.len, NULL, &q, &err) == 0 ||
		    p.samples.n == 0);
	/* Totals survive when no sum overflows int64 (the encoder saturates). */
	if (total(&p) >= 0)
		PROF_ASSERT(total(&q) == total(&p));
	model_profile_release(&q);
	model_profile_release(&p);
	buf_release(&enc);
	return 0;
}
