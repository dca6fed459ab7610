// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_push.c - libFuzzer target for the Pyroscope Connect PushRequest
 * decoder (src/format/push.c), both encodings: the first byte picks
 * binary or JSON, the rest is the body. Any input gives an error with a
 * code and a reason and an empty result, or series whose labels are
 * NUL-free text with a name and whose raw profiles lie in the result's
 * own memory. Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/err.h"
#include "format/push.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_push_req r;
	struct prof_err err;
	bool json;
	int rc;

	if (!size)
		return 0;
	json = data[0] & 1;
	prof_err_init(&err);
	rc = fmt_push_decode(data + 1, size - 1, json, &r, &err);
	if (rc) {
		PROF_ASSERT(rc < 0 && err.code == rc && err.msg[0] != '\0' && r.n == 0);
		return 0;
	}
	for (size_t i = 0; i < r.n; i++) {
		for (size_t k = 0; k < r.series[i].nlabels; k++)
			PROF_ASSERT(r.series[i].labels[k].name[0] != '\0');
		for (size_t k = 0; k < r.series[i].nsamples; k++) {
			const struct fmt_push_sample *s = &r.series[i].samples[k];
			volatile uint8_t sum = 0;

			for (size_t j = 0; j < s->len; j++) /* ASan checks every byte is readable */
				sum += s->data[j];
			(void)sum;
		}
	}
	fmt_push_release(&r);
	return 0;
}
