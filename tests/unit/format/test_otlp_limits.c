// SPDX-License-Identifier: Apache-2.0
/*
 * test_otlp_limits.c - what an OTLP request may expand to (issue #4),
 * through both decoders (fmt_otlp_decode_direct and fmt_otlp_decode_pbc):
 *   - a sample's labels are copied once and shared by its observations
 *     (one model sample per value/timestamp): 30000 attribute indices x
 *     100000 timestamps, 830 KB on the wire, decode to 30000 labels, not
 *     3 billion (72 GB);
 *   - profiles x dictionary: many profiles using one large string get a
 *     copy each; with a sample limit (the server's case) the decoded size
 *     is capped at FMT_OTLP_DECODED_MAX (-PROF_ETOOBIG naming the limit),
 *     without one (WAL replay of what was accepted) it is not; the direct
 *     decoder reports the limit itself, in protobuf-c's words.
 * Requests are written field by field (numbers from src/format/proto).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "format/otlp.h"
#include "model/profile.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "unit/format/pbwrite.h"

/*
 * A request: strings "", cpu, nanoseconds, main (or @fn_len bytes of 'm'),
 * k; function main; one location; stack [1]; attribute 1 k="v". @nprof
 * profiles, each with one sample on stack 1 carrying @nattr attribute
 * indices (all 1) and @nts timestamps (value 1 each), or one value 7
 * when @nts is 0.
 */
static void build(struct buf *out, size_t fn_len, size_t nprof, size_t nattr, size_t nts)
{
	struct buf d = BUF_INIT, m = BUF_INIT, s = BUF_INIT, pr = BUF_INIT, sp = BUF_INIT,
		   rp = BUF_INIT, x = BUF_INIT;
	char *fn = malloc(fn_len + 1);

	buf_init(&d, 0), buf_init(&m, 0), buf_init(&s, 0), buf_init(&pr, 0);
	buf_init(&sp, 0), buf_init(&rp, 0), buf_init(&x, 0);
	memset(fn, 'm', fn_len);
	buf_reset(out);
	fbytes(&d, 5, "", 0);
	fbytes(&d, 5, "cpu", 3);
	fbytes(&d, 5, "nanoseconds", 11);
	fbytes(&d, 5, fn_len ? fn : "main", fn_len ? fn_len : 4);
	fbytes(&d, 5, "k", 1);
	fmsg(&d, 3, &m); /* function 0 */
	fv(&m, 1, 3);
	fmsg(&d, 3, &m); /* function 1: name 3 */
	fmsg(&d, 2, &m); /* location 0 */
	fv(&x, 1, 1);
	fmsg(&m, 3, &x);
	fmsg(&d, 2, &m); /* location 1: line -> function 1 */
	fmsg(&d, 7, &m); /* stack 0 */
	pv(&m, 1 << 3 | 2), pv(&m, 1), pv(&m, 1);
	fmsg(&d, 7, &m); /* stack 1: [1] */
	fmsg(&d, 6, &m); /* attribute 0 */
	fv(&m, 1, 4);
	fbytes(&x, 1, "v", 1);
	fmsg(&m, 2, &x);
	fmsg(&d, 6, &m); /* attribute 1: k = "v" */

	fv(&s, 1, 1);
	for (size_t i = 0; i < nattr; i++)
		pv(&x, 1);
	if (nattr)
		fmsg(&s, 2, &x);
	if (nts) {
		for (size_t i = 0; i < nts; i++) {
			uint64_t t = 1700000000000000000ull + i;

			buf_add(&x, &t, 8); /* fixed64, little-endian on our targets */
		}
		fmsg(&s, 5, &x);
	} else {
		pv(&x, 7);
		fmsg(&s, 4, &x);
	}
	fv(&m, 1, 1);
	fv(&m, 2, 2);
	fmsg(&pr, 1, &m); /* sample_type cpu/nanoseconds */
	fmsg(&pr, 2, &s);
	for (size_t i = 0; i < nprof; i++)
		fbytes(&sp, 2, pr.p, pr.len);
	fmsg(&rp, 2, &sp);
	fmsg(out, 1, &rp);
	fmsg(out, 2, &d);
	free(fn);
	buf_release(&d), buf_release(&m), buf_release(&s), buf_release(&pr);
	buf_release(&sp), buf_release(&rp), buf_release(&x);
}

/* Both decoders on @req with @max_samples; the batch of @which (0 direct, 1 pbc). */
static int decode(const struct buf *req, size_t max_samples, int which, struct fmt_otlp_batch *b,
		  struct prof_err *err)
{
	prof_err_init(err);
	return which ? fmt_otlp_decode_pbc(req->p, req->len, max_samples, b, err)
		     : fmt_otlp_decode_direct(req->p, req->len, max_samples, b);
}

/*
 * The direct decoder's own answer (fmt_otlp_decode_direct_err) on @req:
 * protobuf-c's code @code and message @msg; the store's decoders' too,
 * unless @store_takes (their one dictionary for all profiles is counted
 * once, so they take what passes the limit only through its copies).
 */
static void same_as_pbc(const struct buf *req, size_t max_samples, int code, const char *msg,
			bool store_takes)
{
	char want[sizeof(((struct prof_err *)0)->msg)];
	struct fmt_otlp_batch b;
	struct prof_err err;

	snprintf(want, sizeof(want), "%s", msg);
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode_direct_err(req->p, req->len, max_samples, &b, &err), code);
	assert_string_equal(err.msg, want);
	assert_int_equal(b.n, 0);
	if (store_takes) {
		assert_int_equal(fmt_otlp_decode_pending(req->p, req->len, max_samples, &b, &err),
				 0);
		fmt_otlp_batch_release(&b);
		return;
	}
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode_shared(req->p, req->len, max_samples, &b, &err), code);
	assert_string_equal(err.msg, want);
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode_pending(req->p, req->len, max_samples, &b, &err), code);
	assert_string_equal(err.msg, want);
	assert_int_equal(b.n, 0);
}

static void test_labels_shared_by_observations(void **state)
{
	struct buf req = BUF_INIT;

	(void)state;
	buf_init(&req, 0);
	build(&req, 0, 1, 30000, 100000);
	assert_true(req.len > 800000 && req.len < 900000);
	for (int which = 0; which < 2; which++) {
		struct fmt_otlp_batch b;
		struct prof_err err;
		const struct model_profile *p;

		assert_int_equal(decode(&req, 1000000, which, &b, &err), 0);
		assert_int_equal(b.n, 1);
		p = &b.profiles[0];
		assert_int_equal(p->samples.n, 100000);
		assert_int_equal(p->labels.n, 30000); /* not 3e9 */
		for (size_t i = 0; i < p->samples.n; i += 9999) {
			const struct model_sample *s = &p->samples.v[i];

			assert_int_equal(s->label_off, 0);
			assert_int_equal(s->nlabels, 30000);
			assert_int_equal(s->timestamp_ns, 1700000000000000000ll + (int64_t)i);
			assert_int_equal(p->values.v[s->value_off], 1);
		}
		assert_string_equal(model_str(p, p->labels.v[29999].key), "k");
		assert_string_equal(model_str(p, p->labels.v[29999].str), "v");
		assert_int_equal(model_profile_validate(p, NULL), 0);
		/* samples 100000 x 32 + values 8 + labels 30000 x 24 + a few strings,
		 * with the tables' reserved capacity (6.0 MB for the direct decoder);
		 * copied per observation, the labels alone would be 72 GB */
		assert_true(fmt_otlp_profile_bytes(p) < 8000000);
		fmt_otlp_batch_release(&b);
	}
	buf_release(&req);
}

static void test_profiles_times_dictionary(void **state)
{
	struct buf req = BUF_INIT;
	struct fmt_otlp_batch b;
	struct prof_err err;

	(void)state;
	buf_init(&req, 0);
	/* 700 profiles, each a copy of a 100 KB function name: ~70 MB decoded
	 * from ~110 KB, over 64 x 110 KB + 16 MiB = 23 MB */
	build(&req, 100000, 700, 1, 0);
	assert_true(req.len < 120000);
	assert_int_equal(decode(&req, 1000000, 0, &b, &err), FMT_OTLP_FALLBACK);
	assert_int_equal(b.n, 0);
	assert_int_equal(decode(&req, 1000000, 1, &b, &err), -PROF_ETOOBIG);
	assert_int_equal(b.n, 0);
	assert_non_null(strstr(err.msg, "decoded size limit (64 x the request's"));
	same_as_pbc(&req, 1000000, -PROF_ETOOBIG, err.msg, true);
	assert_int_equal(fmt_otlp_decode(req.p, req.len, 1000000, &b, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "each profile copies the dictionary entries it uses"));
	/* A bad index in a profile after the one that passes the limit: the
	 * limit is what protobuf-c's path reports, so it is what all report. */
	{
		struct buf bad = BUF_INIT, rp = BUF_INIT, sp = BUF_INIT, pr = BUF_INIT,
			   sm = BUF_INIT;

		buf_init(&bad, 0), buf_init(&rp, 0), buf_init(&sp, 0), buf_init(&pr, 0);
		buf_init(&sm, 0);
		buf_add(&bad, req.p, req.len);
		fv(&sm, 1, 9); /* stack_index 9 of 2 */
		fmsg(&pr, 2, &sm);
		fmsg(&sp, 2, &pr);
		fmsg(&rp, 2, &sp);
		fmsg(&bad, 1, &rp); /* resource_profiles: the 701st profile */
		assert_int_equal(decode(&bad, 1000000, 1, &b, &err), -PROF_ETOOBIG);
		assert_non_null(strstr(err.msg, "decoded size limit"));
		same_as_pbc(&bad, 1000000, -PROF_ETOOBIG, err.msg, false);
		/* without the limit, the bad index */
		assert_int_equal(decode(&bad, 0, 1, &b, &err), -PROF_ECORRUPT);
		assert_string_equal(err.msg, "otlp: profile 700 sample 0: stack_index 9 out of "
					     "range (2 stacks)");
		same_as_pbc(&bad, 0, -PROF_ECORRUPT, err.msg, false);
		buf_release(&bad), buf_release(&rp), buf_release(&sp), buf_release(&pr);
		buf_release(&sm);
	}
	/* No sample limit (WAL replay): decoded whole, by both paths. */
	for (int which = 0; which < 2; which++) {
		size_t bytes = 0;

		assert_int_equal(decode(&req, 0, which, &b, &err), 0);
		assert_int_equal(b.n, 700);
		for (size_t i = 0; i < b.n; i++)
			bytes += fmt_otlp_profile_bytes(&b.profiles[i]);
		assert_true(bytes > 700 * 100000 && bytes > FMT_OTLP_DECODED_MAX(req.len));
		assert_int_equal(b.profiles[699].samples.n, 1);
		assert_int_equal(b.profiles[699].values.v[0], 7);
		fmt_otlp_batch_release(&b);
	}
	/* 100 profiles (10 MB decoded) stay under the limit. */
	build(&req, 100000, 100, 1, 0);
	assert_int_equal(decode(&req, 1000000, 0, &b, &err), 0);
	assert_int_equal(b.n, 100);
	fmt_otlp_batch_release(&b);
	buf_release(&req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_labels_shared_by_observations),
		cmocka_unit_test(test_profiles_times_dictionary),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
