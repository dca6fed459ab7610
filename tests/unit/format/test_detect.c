// SPDX-License-Identifier: Apache-2.0
/*
 * test_detect.c - format sniffing (binary magic, protobuf structure, JSON
 * top-level keys, perf script vs folded text, through gzip, the name as a
 * last resort) and fmt_decode_any's dispatch, options and errors.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "format/detect.h"
#include "model/profile.h"

#include <setjmp.h>
#include <cmocka.h>

static enum fmt_kind det(const char *s, size_t n, const char *name)
{
	return fmt_detect(s, n, name);
}

#define DET(lit, name) det(lit, sizeof(lit) - 1, name)

static void test_detect_kinds(void **state)
{
	(void)state;
	/* pprof: sample_type ValueType{1, 2} (varints inside field 1), string_table. */
	assert_int_equal(DET("\x0a\x04\x08\x01\x10\x02\x32\x00", NULL), FMT_KIND_PPROF);
	/* OTLP: ResourceProfiles{resource{}} (messages inside field 1). */
	assert_int_equal(DET("\x0a\x02\x0a\x00", NULL), FMT_KIND_OTLP);
	assert_int_equal(DET("FLR\0\0\2\0\0", NULL), FMT_KIND_JFR);
	assert_int_equal(DET("{\"resourceProfiles\":[]}", NULL), FMT_KIND_OTLP_JSON);
	assert_int_equal(DET(" \n{\"resource_profiles\":[]}", NULL), FMT_KIND_OTLP_JSON);
	assert_int_equal(
		DET("{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\"}", NULL),
		FMT_KIND_SPEEDSCOPE);
	/* Keys after an unknown one with a nested value are still found. */
	assert_int_equal(DET("{\"x\":{\"nodes\":[1,{\"a\":\"}\"}]},\"shared\":{}}", NULL),
			 FMT_KIND_SPEEDSCOPE);
	assert_int_equal(DET("\xef\xbb\xbf{\"nodes\":[{\"id\":1}", NULL), FMT_KIND_CPUPROFILE);
	assert_int_equal(DET("[{\"ph\":\"P\"}]", NULL), FMT_KIND_CPUPROFILE);
	assert_int_equal(DET("{\"other\":1}", NULL), FMT_KIND_UNKNOWN);
	assert_int_equal(DET("{\"other\":1}", "a.speedscope.json"), FMT_KIND_SPEEDSCOPE);
	assert_int_equal(DET("perf 12 [000] 1.5: 1 cpu-clock:\n\tffff f (x)\n", NULL),
			 FMT_KIND_PERF_SCRIPT);
	assert_int_equal(DET("main;foo 12\n", NULL), FMT_KIND_FOLDED);
	/* Legacy pprof: text headers and the binary CPU header (before protobuf sniffing). */
	assert_int_equal(DET("heap profile: 1: 2 [3: 4] @ heap/8\n1: 2 [3: 4] @ 0x1\n", NULL),
			 FMT_KIND_PPROF_LEGACY);
	assert_int_equal(DET("goroutine profile: total 1\n1 @ 0x1\n", NULL), FMT_KIND_PPROF_LEGACY);
	assert_int_equal(DET("\0\0\0\0\3\0\0\0\0\0\0\0\x10\x27\0\0\0\0\0\0", NULL),
			 FMT_KIND_PPROF_LEGACY);
	/* UTF-16 text with a BOM is sniffed as the text it is, never as protobuf. */
	assert_int_equal(DET("\xff\xfem\0;\0f\0 \0"
			     "1\0\n\0",
			     NULL),
			 FMT_KIND_FOLDED);
	assert_int_equal(DET("\xfe\xff\0m\0;\0f\0 \0"
			     "1\0\n",
			     NULL),
			 FMT_KIND_FOLDED);
	assert_int_equal(DET("\xff\xfe{\0\"\0n\0o\0d\0e\0s\0\"\0:\0[\0]\0}\0", NULL),
			 FMT_KIND_CPUPROFILE);
	assert_int_equal(DET("", "x.cpuprofile"), FMT_KIND_CPUPROFILE);
	assert_int_equal(DET("", "PROFILE.JFR"), FMT_KIND_JFR);
	assert_int_equal(DET("", NULL), FMT_KIND_UNKNOWN);
}

static void test_detect_through_gzip(void **state)
{
	struct buf gz = BUF_INIT;
	const char text[] = "main;foo 12\nmain 3\n";
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(gzip_deflate(text, sizeof(text) - 1, &gz), 0);
	assert_int_equal(fmt_detect(gz.p, gz.len, "x.pb.gz"), FMT_KIND_FOLDED);
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_decode_any(gz.p, gz.len, NULL, NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.values.v[0] + p.values.v[1], 15);
	model_profile_release(&p);
	buf_release(&gz);
}

static void test_decode_any_dispatch_and_errors(void **state)
{
	struct fmt_decode_opts o = { 0 };
	struct model_profile p;
	struct prof_err err;
	const char folded[] = "a;b 1\n";
	const char speedscope[] = "{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\"profiles\":[{"
				  "\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]]}]}";

	(void)state;
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_decode_any(speedscope, sizeof(speedscope) - 1, NULL, NULL, &p, &err),
			 0);
	assert_int_equal(p.samples.n, 1);
	model_profile_release(&p);

	/* A forced kind wins over sniffing. */
	o.kind = FMT_KIND_CPUPROFILE;
	model_profile_init(&p);
	assert_int_equal(fmt_decode_any(folded, sizeof(folded) - 1, NULL, &o, &p, &err),
			 -PROF_ECORRUPT);
	assert_string_equal(err.msg, "cpuprofile: line 1:1 (byte 0): '[' or '{' expected near 'a'");
	model_profile_release(&p);

	/* Text in no format: the folded decoder says why. */
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_decode_any("hello\n", 6, NULL, NULL, &p, &err), -PROF_EFORMAT);
	assert_string_equal(err.msg, "folded: no line of the form \"frame;frame count\" (first "
				     "line: \"hello\")");
	model_profile_release(&p);

	/* JFR event names are checked before decoding. */
	o.kind = FMT_KIND_UNKNOWN;
	o.event = "heap";
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_decode_any("FLR\0\0\2\0\0", 8, NULL, &o, &p, &err), -EINVAL);
	assert_string_equal(err.msg,
			    "jfr: unknown event \"heap\" (cpu, wall, alloc, lock or malloc)");
	model_profile_release(&p);

	/* The input cap. */
	o.event = NULL;
	o.max_input = 3;
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_decode_any(folded, sizeof(folded) - 1, NULL, &o, &p, &err),
			 -PROF_ETOOBIG);
	assert_string_equal(err.msg, "input of 6 bytes exceeds the limit of 3 bytes");
	model_profile_release(&p);
}

static void test_kind_names(void **state)
{
	enum fmt_kind k;

	(void)state;
	for (int i = FMT_KIND_PPROF; i <= FMT_KIND_PPROF_LEGACY; i++) {
		assert_int_equal(fmt_kind_parse(fmt_kind_name((enum fmt_kind)i), &k), 0);
		assert_int_equal(k, i);
	}
	assert_int_equal(fmt_kind_parse("collapsed", &k), 0);
	assert_int_equal(k, FMT_KIND_FOLDED);
	assert_int_equal(fmt_kind_parse("nope", &k), -EINVAL);
	assert_string_equal(fmt_kind_name(FMT_KIND_UNKNOWN), "unknown");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_detect_kinds),
		cmocka_unit_test(test_detect_through_gzip),
		cmocka_unit_test(test_decode_any_dispatch_and_errors),
		cmocka_unit_test(test_kind_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
