// SPDX-License-Identifier: Apache-2.0
/*
 * test_push.c - the Pyroscope Connect PushRequest decoder
 * (src/format/push.c): a hand-encoded binary request (field numbers of
 * docs/formats.md "Pyroscope ingest", Push API; annotations and unknown fields skipped), the same
 * request in protobuf JSON (camelCase and proto names, standard and
 * URL-safe base64, padding or not), and errors naming the field or byte.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "format/push.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "unit/format/pbwrite.h"

static void test_binary(void **state)
{
	struct buf req = BUF_INIT, s = BUF_INIT, m = BUF_INIT;
	struct fmt_push_req r;
	struct prof_err err;

	(void)state;
	buf_init(&req, 0);
	buf_init(&s, 0);
	buf_init(&m, 0);
	fbytes(&m, 1, "__name__", 8);
	fbytes(&m, 2, "process_cpu", 11);
	fmsg(&s, 1, &m);
	fbytes(&m, 1, "service_name", 12);
	fbytes(&m, 2, "api", 3);
	fmsg(&s, 1, &m);
	fbytes(&m, 1, "\x1f\x8b\x08", 3);
	fbytes(&m, 2, "id-1", 4);
	fmsg(&s, 2, &m);
	fbytes(&m, 1, "k", 1); /* an annotation: ignored */
	fmsg(&s, 3, &m);
	fbytes(&m, 1, "PPROF", 5);
	fmsg(&s, 2, &m);
	fmsg(&req, 1, &s);
	pv(&req, 9 << 3 | 0); /* an unknown varint field */
	pv(&req, 7);
	prof_err_init(&err);
	assert_int_equal(fmt_push_decode(req.p, req.len, false, &r, &err), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.series[0].nlabels, 2);
	assert_string_equal(r.series[0].labels[0].name, "__name__");
	assert_string_equal(r.series[0].labels[0].value, "process_cpu");
	assert_string_equal(r.series[0].labels[1].value, "api");
	assert_int_equal(r.series[0].nsamples, 2);
	assert_int_equal(r.series[0].samples[0].len, 3);
	assert_memory_equal(r.series[0].samples[0].data, "\x1f\x8b\x08", 3);
	assert_memory_equal(r.series[0].samples[1].data, "PPROF", 5);
	fmt_push_release(&r);

	/* Truncated: the error names the field path and the byte. */
	prof_err_init(&err);
	assert_int_equal(fmt_push_decode(req.p, 10, false, &r, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "byte"));
	assert_int_equal(r.n, 0);
	/* A label without a name. */
	buf_reset(&req);
	fbytes(&m, 2, "v", 1);
	fmsg(&s, 1, &m);
	fmsg(&req, 1, &s);
	prof_err_init(&err);
	assert_int_equal(fmt_push_decode(req.p, req.len, false, &r, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "push: series[0].labels[0]: empty label name");
	buf_release(&req);
	buf_release(&s);
	buf_release(&m);
}

static void test_json(void **state)
{
	/* "hi?" is aGk/ (standard) or aGk_ (URL-safe); "hello" is aGVsbG8= or aGVsbG8. */
	static const char ok[] =
		"{\"series\":[{\"labels\":[{\"name\":\"__name__\",\"value\":\"memory\"},"
		"{\"name\":\"service_name\",\"value\":\"web\"}],"
		"\"samples\":[{\"rawProfile\":\"aGk/\",\"ID\":\"x\"},{\"raw_profile\":\"aGk_\"},"
		"{\"rawProfile\":\"aGVsbG8=\"},{\"rawProfile\":\"aGVsbG8\"}]},{}]}";
	struct fmt_push_req r;
	struct prof_err err;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(fmt_push_decode(ok, strlen(ok), true, &r, &err), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.series[0].nlabels, 2);
	assert_string_equal(r.series[0].labels[0].value, "memory");
	assert_int_equal(r.series[0].nsamples, 4);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(r.series[0].samples[i].len, 3);
		assert_memory_equal(r.series[0].samples[i].data, "hi?", 3);
	}
	for (int i = 2; i < 4; i++) {
		assert_int_equal(r.series[0].samples[i].len, 5);
		assert_memory_equal(r.series[0].samples[i].data, "hello", 5);
	}
	assert_int_equal(r.series[1].nsamples, 0);
	fmt_push_release(&r);

	static const struct {
		const char *in, *msg;
	} bad[] = {
		{ "[1]", "push: expected a JSON object" },
		{ "{\"series\":{}}", "push: series: expected an array" },
		{ "{\"series\":[{\"samples\":[{\"rawProfile\":\"a*b=\"}]}]}",
		  "push: series[0].samples[0].rawProfile: not base64" },
		{ "{\"series\":[{\"samples\":[{\"rawProfile\":\"aGVsb\"}]}]}",
		  "push: series[0].samples[0].rawProfile: not base64" },
		{ "{\"series\":[{\"samples\":[{\"rawProfile\":5}]}]}",
		  "push: series[0].samples[0].rawProfile: expected a base64 string" },
		{ "{\"series\":[{\"labels\":[{\"name\":1}]}]}",
		  "push: series[0].labels[0]: name and value must be strings" },
	};
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++) {
		prof_err_init(&err);
		assert_int_equal(fmt_push_decode(bad[i].in, strlen(bad[i].in), true, &r, &err),
				 -PROF_ECORRUPT);
		assert_string_equal(err.msg, bad[i].msg);
		assert_int_equal(r.n, 0);
	}
	prof_err_init(&err);
	assert_int_equal(fmt_push_decode("{\"series\":", 10, true, &r, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "push: line 1"));
	/* jansson itself refuses \u0000 in a string (so no label can hold a NUL). */
	prof_err_init(&err);
	assert_int_equal(fmt_push_decode("{\"series\":[{\"labels\":[{\"name\":\"a\\u0000\"}]}]}",
					 44, true, &r, &err),
			 -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "push: line 1"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_binary),
		cmocka_unit_test(test_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
