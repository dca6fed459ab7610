// SPDX-License-Identifier: Apache-2.0
/*
 * test_otlp_compat.c - older OTLP profiles layouts (format/otlp_compat.h):
 * one request's content - functions main and work, stacks [work, main]
 * and [main], attribute k="v", two sample types (cpu/nanoseconds and
 * samples/count), two samples - written in the v1.10, v1.9, v1.8 and
 * v1.7 layouts field by field (numbers from docs/formats.md, "Field
 * lists of older layouts").
 * Each is sniffed as its layout, rewritten, decoded, and re-encoded by
 * fmt_otlp_encode: byte for byte what the v1.10 request gives (and
 * fmt_otlp_decode_any reads each in one call). The
 * current encoder's output and malformed bytes are sniffed as current;
 * a v1.7 sample range outside location_indices and a v1.7 profile of 65
 * sample types are errors.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "format/otlp.h"
#include "format/otlp_compat.h"
#include "model/profile.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <cmocka.h>

#include "unit/format/pbwrite.h"

static void fpacked(struct buf *b, unsigned num, const uint64_t *v, size_t n)
{
	struct buf x = BUF_INIT;

	for (size_t i = 0; i < n; i++)
		pv(&x, v[i]);
	fmsg(b, num, &x);
	buf_release(&x);
}
static void ffixed(struct buf *b, unsigned num, uint64_t v)
{
	unsigned char t[8];

	for (int i = 0; i < 8; i++)
		t[i] = (unsigned char)(v >> (8 * i));
	pv(b, (uint64_t)num << 3 | 1);
	buf_add(b, t, 8);
}

enum { L10, L9, L8, L7 };
#define T0  1700000000000000000ull
#define PID "0123456789abcdef"

/* The strings, functions, locations and attribute of every layout. */
static void dict_common(struct buf *d, int layout)
{
	static const char *const strs[] = { "",	 "cpu",	 "nanoseconds", "main",
					    "k", "work", "samples",	"count" };
	struct buf m = BUF_INIT, x = BUF_INIT;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(strs); i++)
		fbytes(d, 5, strs[i], strlen(strs[i]));
	fmsg(d, 3, &m); /* function 0 */
	fv(&m, 1, 3);
	fmsg(d, 3, &m); /* function 1: main */
	fv(&m, 1, 5);
	fmsg(d, 3, &m); /* function 2: work */
	fmsg(d, 2, &m); /* location 0 */
	for (unsigned fn = 1; fn <= 2; fn++) {
		fv(&x, 1, fn);
		fmsg(&m, 3, &x);
		if (layout == L7)
			fv(&m, 4, 0); /* is_folded, gone since v1.8 */
		fmsg(d, 2, &m);	      /* location fn -> function fn */
	}
	fmsg(d, 6, &m); /* attribute 0 */
	if (layout == L7)
		fbytes(&m, 1, "k", 1); /* KeyValue */
	else
		fv(&m, 1, 4); /* KeyValueAndUnit */
	fbytes(&x, 1, "v", 1);
	fmsg(&m, 2, &x);
	fmsg(d, 6, &m); /* attribute 1: k = "v" */
	buf_release(&m);
	buf_release(&x);
}

/* One Profile (v1.8 .. v1.10) of type @t (0 cpu, 1 samples); values [7,1] / [3,1]. */
static void profile_v8(struct buf *pr, int layout, int t)
{
	static const uint64_t val[2][2] = { { 7, 3 }, { 1, 1 } };
	struct buf m = BUF_INIT, s = BUF_INIT;
	uint64_t one = 1;

	fv(&m, 1, t ? 6 : 1);
	fv(&m, 2, t ? 7 : 2);
	if (layout == L8)
		fv(&m, 3, 2); /* aggregation_temporality, gone since v1.9 */
	fmsg(pr, 1, &m);
	for (int i = 0; i < 2; i++) {
		fv(&s, 1, i ? 2 : 1); /* stacks 1 [work, main], 2 [main] */
		if (layout == L10) {
			if (!i)
				fpacked(&s, 2, &one, 1);
			fpacked(&s, 4, &val[t][i], 1);
		} else {
			fpacked(&s, 2, &val[t][i], 1);
			if (!i)
				fpacked(&s, 3, &one, 1);
		}
		fmsg(pr, 2, &s);
	}
	ffixed(pr, 3, T0);
	fv(pr, 4, 1000000000);
	fv(&m, 1, 1);
	fv(&m, 2, 2);
	fmsg(pr, 5, &m);
	fv(pr, 6, 10000000);
	if (layout == L8) {
		fpacked(pr, 7, &one, 1); /* comment_strindices */
		fbytes(pr, 8, PID, 16);
	} else {
		fbytes(pr, 7, PID, 16);
	}
	buf_release(&m);
	buf_release(&s);
}

/* v1.7: how many of location_indices [2, 1, 1] to write (3; fewer makes
 * the second sample's range [2, +1) fall outside). */
static size_t v7_nlocidx = 3;

static void build(struct buf *out, int layout)
{
	struct buf d = BUF_INIT, m = BUF_INIT, x = BUF_INIT, pr = BUF_INIT, sp = BUF_INIT,
		   rp = BUF_INIT;
	static const uint64_t stack1[] = { 2, 1 }, stack2[] = { 1 }, locidx[] = { 2, 1, 1 };

	buf_reset(out);
	dict_common(&d, layout);
	if (layout != L7) {
		fmsg(&d, 7, &m); /* stack 0 */
		fpacked(&m, 1, stack1, 2);
		fmsg(&d, 7, &m);
		fpacked(&m, 1, stack2, 1);
		fmsg(&d, 7, &m);
		for (int t = 0; t < 2; t++) {
			profile_v8(&pr, layout, t);
			fmsg(&sp, 2, &pr);
		}
	} else {
		static const uint64_t v0[] = { 7, 1 }, v1[] = { 3, 1 }, one = 1;

		fv(&m, 1, 1), fv(&m, 2, 2), fv(&m, 3, 2);
		fmsg(&pr, 1, &m);
		fv(&m, 1, 6), fv(&m, 2, 7), fv(&m, 3, 2);
		fmsg(&pr, 1, &m);
		fv(&m, 1, 0), fv(&m, 2, 2);
		fpacked(&m, 3, v0, 2);
		fpacked(&m, 4, &one, 1);
		fmsg(&pr, 2, &m);
		fv(&m, 1, 2), fv(&m, 2, 1);
		fpacked(&m, 3, v1, 2);
		fmsg(&pr, 2, &m);
		fpacked(&pr, 3, locidx, v7_nlocidx);
		fv(&pr, 4, T0);
		fv(&pr, 5, 1000000000);
		fv(&m, 1, 1), fv(&m, 2, 2);
		fmsg(&pr, 6, &m);
		fv(&pr, 7, 10000000);
		fv(&pr, 9, 0); /* default_sample_type_index */
		fbytes(&pr, 10, PID, 16);
		fmsg(&sp, 2, &pr);
	}
	fbytes(&x, 1, "scope", 5);
	fmsg(&sp, 1, &x);
	fmsg(&rp, 2, &sp);
	fmsg(out, 1, &rp);
	fmsg(out, 2, &d);
	buf_release(&d), buf_release(&m), buf_release(&x), buf_release(&pr);
	buf_release(&sp), buf_release(&rp);
}

/* decode @req (rewritten first unless current) and re-encode it into @enc. */
static void reencode(const struct buf *req, int want_layout, struct buf *enc)
{
	enum fmt_otlp_layout l = fmt_otlp_layout_sniff(req->p, req->len);
	struct buf up = BUF_INIT;
	struct fmt_otlp_batch b;
	struct prof_err err;
	const struct model_profile *pp[8];

	assert_int_equal(l, want_layout);
	prof_err_init(&err);
	buf_init(&up, 0);
	if (l != FMT_OTLP_LAYOUT_CURRENT) {
		assert_int_equal(fmt_otlp_compat_upgrade(req->p, req->len, l, &up, &err), 0);
		assert_int_equal(fmt_otlp_layout_sniff(up.p, up.len), FMT_OTLP_LAYOUT_CURRENT);
	} else {
		buf_add(&up, req->p, req->len);
	}
	if (fmt_otlp_decode(up.p, up.len, 0, &b, &err))
		fail_msg("%s: %s", fmt_otlp_layout_name(l), err.msg);
	assert_int_equal(b.n, 2);
	for (size_t i = 0; i < b.n; i++) {
		assert_int_equal(b.profiles[i].samples.n, 2);
		pp[i] = &b.profiles[i];
	}
	buf_reset(enc);
	assert_int_equal(fmt_otlp_encode(pp, b.n, enc), 0);
	fmt_otlp_batch_release(&b);
	buf_release(&up);
	/* fmt_otlp_decode_any does the same in one call */
	if (fmt_otlp_decode_any(req->p, req->len, 0, &b, &err))
		fail_msg("fmt_otlp_decode_any %s: %s", fmt_otlp_layout_name(l), err.msg);
	assert_int_equal(b.n, 2);
	assert_int_equal(b.profiles[1].samples.n, 2);
	fmt_otlp_batch_release(&b);
}

static void test_layouts_read_alike(void **state)
{
	static const int want[] = { [L10] = FMT_OTLP_LAYOUT_CURRENT,
				    [L9] = FMT_OTLP_LAYOUT_V1_9,
				    [L8] = FMT_OTLP_LAYOUT_V1_8,
				    [L7] = FMT_OTLP_LAYOUT_V1_7 };
	struct buf req = BUF_INIT, ref = BUF_INIT, enc = BUF_INIT;

	(void)state;
	buf_init(&req, 0), buf_init(&ref, 0), buf_init(&enc, 0);
	build(&req, L10);
	reencode(&req, want[L10], &ref);
	/* what the current encoder writes is sniffed as current too */
	assert_int_equal(fmt_otlp_layout_sniff(ref.p, ref.len), FMT_OTLP_LAYOUT_CURRENT);
	for (int l = L9; l <= L7; l++) {
		build(&req, l);
		reencode(&req, want[l], &enc);
		assert_int_equal(enc.len, ref.len);
		assert_memory_equal(enc.p, ref.p, ref.len);
	}
	buf_release(&req), buf_release(&ref), buf_release(&enc);
}

static void test_bad_input(void **state)
{
	struct buf req = BUF_INIT, up = BUF_INIT;
	struct prof_err err;
	static const unsigned char junk[] = { 0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f };

	(void)state;
	assert_int_equal(fmt_otlp_layout_sniff(junk, sizeof(junk)), FMT_OTLP_LAYOUT_CURRENT);
	assert_int_equal(fmt_otlp_layout_sniff("", 0), FMT_OTLP_LAYOUT_CURRENT);
	prof_err_init(&err);
	buf_init(&up, 0);
	assert_int_equal(
		fmt_otlp_compat_upgrade(junk, sizeof(junk), FMT_OTLP_LAYOUT_V1_9, &up, &err),
		-PROF_ECORRUPT);
	/* v1.7: the second sample's range [2, +1) past 2 location indices */
	buf_init(&req, 0);
	v7_nlocidx = 2;
	build(&req, L7);
	v7_nlocidx = 3;
	buf_reset(&up);
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_compat_upgrade(req.p, req.len, FMT_OTLP_LAYOUT_V1_7, &up, &err),
			 -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "outside the profile's 2 location_indices"));
	/* v1.7: 65 sample types would be 65 passes over the samples */
	{
		struct buf pr = BUF_INIT, m = BUF_INIT, x = BUF_INIT;
		static const uint64_t one = 1;

		buf_init(&pr, 0), buf_init(&m, 0), buf_init(&x, 0);
		buf_reset(&req);
		for (int i = 0; i < 65; i++) {
			fv(&m, 1, 1);
			fmsg(&pr, 1, &m);
		}
		fpacked(&pr, 3, &one, 1);
		fmsg(&x, 2, &pr);
		fmsg(&m, 2, &x);
		fmsg(&req, 1, &m);
		assert_int_equal(fmt_otlp_layout_sniff(req.p, req.len), FMT_OTLP_LAYOUT_V1_7);
		buf_reset(&up);
		prof_err_init(&err);
		assert_int_equal(
			fmt_otlp_compat_upgrade(req.p, req.len, FMT_OTLP_LAYOUT_V1_7, &up, &err),
			-PROF_ETOOBIG);
		assert_non_null(strstr(err.msg, "65 sample types"));
		buf_release(&pr), buf_release(&m), buf_release(&x);
	}
	buf_release(&req), buf_release(&up);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_layouts_read_alike),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
