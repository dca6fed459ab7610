// SPDX-License-Identifier: Apache-2.0
/*
 * test_otlp_json.c - OTLP/JSON profiles: camelCase and snake_case keys,
 * 64-bit integers as strings or numbers, hex trace/span ids, base64
 * bytes, unknown keys and nulls; each bad-input kind with its exact error
 * (bad number, bad hex, a field given twice, wrong JSON type, nesting
 * bomb, truncated JSON, an index the OTLP decoder rejects); and
 * model -> JSON -> model.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "format/otlp_json.h"
#include "model/profile.h"

#include <setjmp.h>
#include <cmocka.h>

#define PROFILE_HEAD                                                                       \
	"{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":\"service.name\"," \
	"\"value\":{\"stringValue\":\"api\"}}]},\"unknownKey\":[1,2],\"scopeProfiles\":[{" \
	"\"scope\":{\"name\":\"s\"},\"profiles\":[{\"sampleType\":{\"typeStrindex\":1,"    \
	"\"unitStrindex\":2},\"samples\":["

#define PROFILE_TAIL                                                                                 \
	"],\"timeUnixNano\":\"1700000000000000000\",\"durationNano\":1000000000,"                    \
	"\"periodType\":{\"typeStrindex\":1,\"unitStrindex\":2},\"period\":\"10000000\","            \
	"\"originalPayloadFormat\":\"pprof\",\"originalPayload\":\"AAEC\",\"profileId\":null}]}]}]," \
	"\"dictionary\":{\"stringTable\":[\"\",\"cpu\",\"nanoseconds\",\"main\",\"foo\"],"           \
	"\"functionTable\":[{},{\"nameStrindex\":3},{\"name_strindex\":4}],"                         \
	"\"locationTable\":[{},{\"lines\":[{\"functionIndex\":2,\"line\":\"7\"}]},"                  \
	"{\"lines\":[{\"functionIndex\":1}],\"address\":\"4096\"}],"                                 \
	"\"stackTable\":[{},{\"locationIndices\":[1,2]}],"                                           \
	"\"linkTable\":[{},{\"traceId\":\"0102030405060708090A0B0C0D0E0F10\",\"spanId\":"            \
	"\"1112131415161718\"}],\"mappingTable\":[{}],\"attributeTable\":[{}]}}"

static const char good[] = PROFILE_HEAD
	"{\"stackIndex\":1,\"values\":[\"10\",20],\"timestampsUnixNano\":[\"1700000000000000001\","
	"1700000000000000002],\"linkIndex\":1},"
	"{\"stack_index\":\"1\",\"timestamps_unix_nano\":[\"1700000000000000003\"]}" PROFILE_TAIL;

static int decode(const char *text, struct fmt_otlp_batch *b, struct prof_err *err)
{
	prof_err_init(err);
	return fmt_otlp_json_decode(text, strlen(text), NULL, b, err);
}

static void test_otlp_json_decode(void **state)
{
	struct fmt_otlp_batch b;
	struct prof_err err;
	const struct model_profile *p;
	const struct model_link *k;
	char tmp[64];

	(void)state;
	assert_int_equal(decode(good, &b, &err), 0);
	assert_int_equal(b.n, 1);
	p = &b.profiles[0];
	assert_int_equal(model_profile_validate(p, &err), 0);
	assert_int_equal(p->sample_types.n, 1);
	assert_string_equal(model_str(p, p->sample_types.v[0].type), "cpu");
	assert_int_equal(p->samples.n, 3);
	assert_int_equal(p->values.v[0], 10);
	assert_int_equal(p->values.v[1], 20);
	assert_int_equal(p->values.v[2], 1); /* timestamps only: 1 per timestamp */
	assert_int_equal(p->samples.v[1].timestamp_ns, 1700000000000000002LL);
	assert_int_equal(p->samples.v[2].timestamp_ns, 1700000000000000003LL);
	assert_int_equal(p->time_ns, 1700000000000000000LL);
	assert_int_equal(p->duration_ns, 1000000000);
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->samples.v[0].nstack, 2);
	assert_string_equal(
		model_frame_name(p, &p->locations.v[p->stack_locs.v[p->samples.v[0].stack_off]], 0,
				 tmp, sizeof(tmp)),
		"foo");
	assert_int_equal(
		p->lines.v[p->locations.v[p->stack_locs.v[p->samples.v[0].stack_off]].line_off]
			.line,
		7);
	assert_int_equal(p->locations.v[p->stack_locs.v[p->samples.v[0].stack_off + 1]].address,
			 4096);
	k = &p->links.v[p->samples.v[0].link];
	assert_int_equal(k->trace_id[0], 0x01);
	assert_int_equal(k->trace_id[15], 0x10);
	assert_int_equal(k->span_id[7], 0x18);
	assert_int_equal(p->samples.v[2].link, 0);
	assert_string_equal(model_attr_get(p, "service.name"), "api");
	fmt_otlp_batch_release(&b);
}

static void expect_error(const char *json, int code, const char *msg)
{
	struct fmt_otlp_batch b;
	struct prof_err err;

	assert_int_equal(decode(json, &b, &err), code);
	assert_string_equal(err.msg, msg);
	assert_int_equal(b.n, 0);
	fmt_otlp_batch_release(&b);
}

#define SAMPLES_PATH "resourceProfiles[0].scopeProfiles[0].profiles[0].samples"

static void test_otlp_json_bad_values(void **state)
{
	(void)state;
	expect_error(PROFILE_HEAD "{\"stackIndex\":1,\"values\":[\"12x\"]}" PROFILE_TAIL,
		     -PROF_ECORRUPT,
		     "otlp-json: " SAMPLES_PATH "[0].values[0]: \"12x\" is not an int64");
	expect_error(PROFILE_HEAD "{\"stackIndex\":1,\"values\":[1.5]}" PROFILE_TAIL,
		     -PROF_ECORRUPT,
		     "otlp-json: " SAMPLES_PATH
		     "[0].values[0]: expected an int64 (a decimal string or a number)");
	expect_error(PROFILE_HEAD "{\"stackIndex\":4294967296,\"values\":[1]}" PROFILE_TAIL,
		     -PROF_ECORRUPT,
		     "otlp-json: " SAMPLES_PATH "[0].stackIndex: expected an int32");
	expect_error(PROFILE_HEAD
		     "{\"stackIndex\":1,\"stack_index\":1,\"values\":[1]}" PROFILE_TAIL,
		     -PROF_ECORRUPT,
		     "otlp-json: " SAMPLES_PATH
		     "[0].stack_index: field given twice (as stack_index and in another spelling)");
	expect_error(PROFILE_HEAD "{\"stackIndex\":1,\"values\":{}}" PROFILE_TAIL, -PROF_ECORRUPT,
		     "otlp-json: " SAMPLES_PATH "[0].values: expected an array");
	expect_error(PROFILE_HEAD "null" PROFILE_TAIL, -PROF_ECORRUPT,
		     "otlp-json: " SAMPLES_PATH "[0]: null is not allowed in an array");
	expect_error("{\"resourceProfiles\":{}}", -PROF_ECORRUPT,
		     "otlp-json: resourceProfiles: expected an array");
	expect_error("[]", -PROF_ECORRUPT,
		     "otlp-json: (top level): expected an object (ExportProfilesServiceRequest)");
	expect_error("{\"dictionary\":{\"linkTable\":[{},{\"traceId\":\"zz\"}]}}", -PROF_ECORRUPT,
		     "otlp-json: dictionary.linkTable[1].traceId: \"zz\" is not an even number of "
		     "hex digits");
	expect_error("{\"resourceProfiles\":[{\"scopeProfiles\":[{\"profiles\":[{"
		     "\"originalPayload\":\"%%%\"}]}]}]}",
		     -PROF_ECORRUPT,
		     "otlp-json: resourceProfiles[0].scopeProfiles[0].profiles[0].originalPayload: "
		     "\"%%%\" is not base64");
	expect_error(
		"{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":\"k\","
		"\"value\":{\"stringValue\":\"a\",\"intValue\":\"1\"}}]}}]}",
		-PROF_ECORRUPT,
		"otlp-json: resourceProfiles[0].resource.attributes[0].value.intValue: a second "
		"member of a oneof (only one may be set)");
	expect_error("{\"resourceProfiles\":[", -PROF_ECORRUPT,
		     "otlp-json: line 1:21 (byte 20): ']' expected near end of file");
}

static void test_otlp_json_semantic_errors_and_nesting(void **state)
{
	struct fmt_otlp_batch b;
	struct prof_err err;
	struct buf deep = BUF_INIT;

	(void)state;
	/* An index the OTLP decoder rejects: its message after our prefix. */
	assert_int_equal(
		decode(PROFILE_HEAD "{\"stackIndex\":9,\"values\":[1]}" PROFILE_TAIL, &b, &err),
		-PROF_ECORRUPT);
	assert_memory_equal(err.msg, "otlp-json: otlp: ", 17);
	assert_non_null(strstr(err.msg, "stack_index 9"));
	fmt_otlp_batch_release(&b);

	/* AnyValue nesting itself 100 levels deep: refused, not recursed into. */
	buf_addstr(&deep, "{\"resourceProfiles\":[{\"resource\":{\"attributes\":[{\"key\":\"k\","
			  "\"value\":");
	for (int i = 0; i < 100; i++)
		buf_addstr(&deep, "{\"arrayValue\":{\"values\":[");
	buf_addstr(&deep, "{}");
	for (int i = 0; i < 100; i++)
		buf_addstr(&deep, "]}}");
	buf_addstr(&deep, "}]}}]}");
	assert_int_equal(decode(deep.p, &b, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, ": nested deeper than 64 messages"));
	fmt_otlp_batch_release(&b);
	buf_release(&deep);
}

static void test_otlp_json_encode_round_trip(void **state)
{
	struct model_profile p;
	const struct model_profile *one = &p;
	struct fmt_otlp_batch b;
	struct prof_err err;
	struct buf out = BUF_INIT;
	struct model_line ln = { 0 };
	struct model_link link = { { 0xab, 1 }, { 0xcd } };
	struct model_label lab = { 0 };
	uint32_t loc, off;
	int64_t v = 5;

	(void)state;
	model_profile_init(&p);
	model_sample_type_add(&p, "cpu", "nanoseconds");
	ln.function = model_function_intern(&p, model_intern(&p, "f\xff\"x"), 0, 0, 0);
	loc = model_location_add(&p, 0, 0x1234, &ln, 1);
	off = model_stack_add(&p, &loc, 1);
	VEC_PUSH(&p.links, link);
	lab.key = model_intern(&p, "thread.name");
	lab.str = model_intern(&p, "main");
	model_sample_add(&p, off, 1, &v, &lab, 1, 1700000000000000123LL, 1);
	model_attr_add_str(&p, "service.name", "svc");

	assert_int_equal(fmt_otlp_json_encode(&one, 1, &out), 0);
	assert_non_null(strstr(out.p, "\"values\":[\"5\"]"));
	assert_non_null(strstr(out.p, "\"timestampsUnixNano\":[\"1700000000000000123\"]"));
	assert_non_null(strstr(out.p, "\"traceId\":\"ab010000000000000000000000000000\""));
	assert_non_null(strstr(out.p, "\"address\":\"4660\""));
	/* Invalid UTF-8 is replaced, quotes escaped. */
	assert_non_null(strstr(out.p, "\"f\\ufffd\\\"x\""));

	prof_err_init(&err);
	assert_int_equal(fmt_otlp_json_decode(out.p, out.len, NULL, &b, &err), 0);
	assert_int_equal(b.n, 1);
	assert_int_equal(b.profiles[0].samples.n, 1);
	assert_int_equal(b.profiles[0].values.v[0], 5);
	assert_int_equal(b.profiles[0].samples.v[0].timestamp_ns, 1700000000000000123LL);
	assert_int_equal(b.profiles[0].links.v[b.profiles[0].samples.v[0].link].trace_id[0], 0xab);
	assert_string_equal(model_attr_get(&b.profiles[0], "service.name"), "svc");
	fmt_otlp_batch_release(&b);
	model_profile_release(&p);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_otlp_json_decode),
		cmocka_unit_test(test_otlp_json_bad_values),
		cmocka_unit_test(test_otlp_json_semantic_errors_and_nesting),
		cmocka_unit_test(test_otlp_json_encode_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
