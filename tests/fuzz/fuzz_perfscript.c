// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_perfscript.c - libFuzzer target for the `perf script` decoder
 * (src/format/perfscript.c): any bytes give an error with a code and a
 * reason, or a profile that passes model_profile_validate with one
 * "samples" count per sample. Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "format/perfscript.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_decode_opts o = { .max_samples = 100000 };
	struct model_profile p;
	struct prof_err err;

	prof_err_init(&err);
	model_profile_init(&p);
	(void)fmt_perfscript_sniff(data, size);
	if (fmt_perfscript_decode(data, size, &o, &p, &err) != 0) {
		PROF_ASSERT(err.code < 0 && err.msg[0] != '\0');
	} else {
		PROF_ASSERT(model_profile_validate(&p, &err) == 0);
		for (size_t i = 0; i < p.samples.n; i++)
			PROF_ASSERT(p.values.v[p.samples.v[i].value_off] == 1);
	}
	model_profile_release(&p);
	return 0;
}
