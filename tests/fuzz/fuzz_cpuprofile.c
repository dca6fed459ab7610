// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_cpuprofile.c - libFuzzer target for the V8 .cpuprofile decoder
 * (src/format/cpuprofile.c): any bytes give an error with a code and a
 * reason, or a profile that passes model_profile_validate whose stacks
 * all end at one root location (the tree was checked for cycles).
 * Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "format/cpuprofile.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_decode_opts o = { .max_samples = 100000 };
	struct model_profile p;
	struct prof_err err;

	prof_err_init(&err);
	model_profile_init(&p);
	if (fmt_cpuprofile_decode(data, size, &o, &p, &err) != 0) {
		PROF_ASSERT(err.code < 0 && err.msg[0] != '\0');
	} else {
		uint32_t root = 0;

		PROF_ASSERT(model_profile_validate(&p, &err) == 0);
		for (size_t i = 0; i < p.samples.n; i++) {
			const struct model_sample *s = &p.samples.v[i];
			uint32_t r;

			PROF_ASSERT(s->nstack > 0);
			r = p.stack_locs.v[s->stack_off + s->nstack - 1];
			PROF_ASSERT(!root || r == root);
			root = r;
		}
	}
	model_profile_release(&p);
	return 0;
}
