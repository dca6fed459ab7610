// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_pprof.c - libFuzzer target for the pprof decoder (src/format/pprof.c)
 * and what runs on its output: any byte string must give either an error
 * with a code and a reason, or a profile that passes model_profile_validate,
 * whose top table builds, and that re-encodes to bytes decoding to the same
 * number of samples and locations. Raw and gzipped inputs both reach the
 * decoder (gzip is sniffed). Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "format/pprof.h"
#include "model/profile.h"
#include "query/top.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_profile p, q;
	struct prof_err err;
	struct query_top top;
	struct buf enc = BUF_INIT;
	int rc;

	model_profile_init(&p);
	prof_err_init(&err);
	/* A small cap keeps gzip inputs from spending the run inflating. */
	rc = fmt_pprof_decode(data, size, 16u << 20, &p, &err);
	if (rc) {
		PROF_ASSERT(rc < 0 && err.code == rc && err.msg[0] != '\0');
		model_profile_release(&p);
		return 0;
	}
	PROF_ASSERT(model_profile_validate(&p, NULL) == 0);
	PROF_ASSERT(query_top_build(&p, &top) == 0);
	for (size_t t = 0; t < top.ntypes; t++) {
		size_t n;
		struct query_top_row *rows = query_top_rows(&top, t, false, &n);
		const char **labels = query_top_inline_labels(&p, &top, t, rows, n < 5 ? n : 5);

		free(labels);
		free(rows);
	}
	query_top_release(&top);
	PROF_ASSERT(fmt_pprof_encode(&p, false, &enc) == 0);
	model_profile_init(&q);
	PROF_ASSERT(fmt_pprof_decode(enc.p ? enc.p : "", enc.len, 0, &q, NULL) == 0);
	PROF_ASSERT(q.samples.n == p.samples.n && q.locations.n == p.locations.n);
	model_profile_release(&q);
	buf_release(&enc);
	model_profile_release(&p);
	return 0;
}
