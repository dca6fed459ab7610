// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_otlp.c - libFuzzer target for the OTLP profiles decoder
 * (src/format/otlp.c) and what runs on its output: any byte string must
 * give either an error with a code and a reason, or profiles that pass
 * model_profile_validate, re-encode to a request that decodes again to the
 * same number of samples, and merge (src/model/merge.c) into one valid
 * profile whose top table builds. Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "model/merge.h"
#include "model/profile.h"
#include "query/top.h"

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
	struct fmt_otlp_batch b, b2;
	struct model_profile merged;
	struct prof_err err;
	struct query_top top;
	struct buf enc = BUF_INIT;
	const struct model_profile **in;
	size_t nlabels = 0, bytes = 0;
	int rc;

	prof_err_init(&err);
	/* The sample cap bounds what a tiny input can expand to (values x timestamps). */
	rc = fmt_otlp_decode(data, size, 1u << 20, &b, &err);
	if (rc) {
		PROF_ASSERT(rc < 0 && err.code == rc && err.msg[0] != '\0' && b.n == 0);
		return 0;
	}
	in = xcalloc(b.n + 1, sizeof(*in));
	for (size_t i = 0; i < b.n; i++) {
		size_t pb = fmt_otlp_profile_bytes(&b.profiles[i]);

		PROF_ASSERT(model_profile_validate(&b.profiles[i], NULL) == 0);
		in[i] = &b.profiles[i];
		/* Bounded expansion (otlp.h): a label costs an attribute index on the
		 * wire, at least a byte, whatever its values and timestamps; the
		 * decoded size passes FMT_OTLP_DECODED_MAX by one profile at most. */
		nlabels += b.profiles[i].labels.n;
		PROF_ASSERT(nlabels <= size);
		PROF_ASSERT(bytes <= FMT_OTLP_DECODED_MAX(size));
		bytes += pb;
	}
	PROF_ASSERT(fmt_otlp_encode(in, b.n, &enc) == 0);
	PROF_ASSERT(fmt_otlp_decode(enc.p ? enc.p : "", enc.len, 0, &b2, NULL) == 0);
	PROF_ASSERT(count_samples(&b2) == count_samples(&b));
	fmt_otlp_batch_release(&b2);
	model_profile_init(&merged);
	PROF_ASSERT(model_profile_merge(in, b.n, &merged, NULL) == 0);
	PROF_ASSERT(query_top_build(&merged, &top) == 0);
	query_top_release(&top);
	model_profile_release(&merged);
	free(in);
	buf_release(&enc);
	fmt_otlp_batch_release(&b);
	return 0;
}
