// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_wal_pprof.c - libFuzzer target for the payload decoder of the
 * WAL's pprof records (src/store/wal_pprof.c, docs/storage-format.md
 * "Record types"): any byte string must give either an error with a code
 * and a reason and no profiles, or profiles that pass
 * model_profile_validate and store_head_check, as replay needs, and whose
 * entries, written again with store_wal_pprof_encode (over the pprof
 * encoding of each), decode to the same time, duration, name, attributes
 * and number of samples. Seeds: the shared corpus's pprof files behind an
 * entry header (scripts/fuzz.sh). Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "format/pprof.h"
#include "store/head.h"
#include "store/wal_pprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_profile *p, *q;
	struct buf pb = BUF_INIT, pay = BUF_INIT;
	struct prof_err err;
	size_t n, m;
	int rc;

	prof_err_init(&err);
	rc = store_wal_pprof_decode(data, size, &p, &n, &err);
	if (rc) {
		PROF_ASSERT(rc < 0 && err.code == rc && err.msg[0] != '\0');
		PROF_ASSERT(p == NULL && n == 0);
		return 0;
	}
	PROF_ASSERT(n >= 1);
	for (size_t i = 0; i < n; i++) {
		struct store_pprof_src src;

		if (model_profile_validate(&p[i], NULL) || store_head_check(&p[i], NULL))
			continue; /* replay refuses the record: nothing more to hold */
		buf_reset(&pb);
		buf_reset(&pay);
		PROF_ASSERT(fmt_pprof_encode(&p[i], false, &pb) == 0);
		src = (struct store_pprof_src){ pb.p, pb.len, 0, NULL, 0 };
		PROF_ASSERT(store_wal_pprof_encode(&p[i], &src, &pay) == 0);
		prof_err_init(&err);
		PROF_ASSERT(store_wal_pprof_decode(pay.p, pay.len, &q, &m, &err) == 0 && m == 1);
		PROF_ASSERT(q->time_ns == p[i].time_ns && q->duration_ns == p[i].duration_ns);
		PROF_ASSERT(!strcmp(model_str(q, q->name), model_str(&p[i], p[i].name)));
		PROF_ASSERT(q->attrs.n == p[i].attrs.n && q->samples.n == p[i].samples.n);
		for (size_t k = 0; k < q->attrs.n; k++) {
			PROF_ASSERT(!strcmp(model_str(q, q->attrs.v[k].key),
					    model_str(&p[i], p[i].attrs.v[k].key)));
			PROF_ASSERT(!strcmp(model_str(q, q->attrs.v[k].str),
					    model_str(&p[i], p[i].attrs.v[k].str)));
			PROF_ASSERT(q->attrs.v[k].num == p[i].attrs.v[k].num);
		}
		model_profile_release(q);
		free(q);
	}
	for (size_t i = 0; i < n; i++)
		model_profile_release(&p[i]);
	free(p);
	buf_release(&pb);
	buf_release(&pay);
	return 0;
}
