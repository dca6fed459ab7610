// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_pprof_legacy.c - libFuzzer target for the legacy pprof formats
 * (src/format/pprof_legacy.c: binary CPU, heap/contention/count/threadz
 * text, Java text, memory maps): any bytes give an error with a code and
 * a reason, or a profile that passes model_profile_validate, whose top
 * table builds, and that re-encodes as pprof protobuf decoding to the
 * same numbers of samples and locations. The sniffer runs on every input
 * too. Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "format/pprof.h"
#include "format/pprof_legacy.h"
#include "model/profile.h"
#include "query/top.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_decode_opts o = { .max_samples = 100000 };
	struct model_profile p, q;
	struct prof_err err;
	struct query_top top;
	struct buf enc = BUF_INIT;

	(void)fmt_pprof_legacy_sniff(data, size);
	model_profile_init(&p);
	prof_err_init(&err);
	if (fmt_pprof_legacy_decode(data, size, &o, &p, &err) != 0) {
		PROF_ASSERT(err.code < 0 && err.msg[0] != '\0');
		model_profile_release(&p);
		return 0;
	}
	PROF_ASSERT(model_profile_validate(&p, NULL) == 0);
	PROF_ASSERT(query_top_build(&p, &top) == 0);
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
