// SPDX-License-Identifier: Apache-2.0
/*
 * test_speedscope.c - speedscope JSON: sampled profiles (weights, units,
 * zero weights, several profiles, picking one), evented profiles
 * (time-weighted stacks), and each bad-input kind with its exact error:
 * truncated JSON, missing members, bad indexes, negative weights,
 * unbalanced or out-of-order events.
 */
#include "base/compat.h"
#include "format/speedscope.h"
#include "model/profile.h"

#include <setjmp.h>
#include <cmocka.h>

static const char *frame(const struct model_profile *p, size_t s, uint32_t k)
{
	static char tmp[256];
	const struct model_sample *sm = &p->samples.v[s];
	const struct model_location *loc = &p->locations.v[p->stack_locs.v[sm->stack_off + k]];

	return model_frame_name(p, loc, 0, tmp, sizeof(tmp));
}

static int decode(const char *text, const struct fmt_decode_opts *o, struct model_profile *p,
		  struct prof_err *err)
{
	model_profile_init(p);
	prof_err_init(err);
	return fmt_speedscope_decode(text, strlen(text), o, p, err);
}

#define FRAMES                                                                                         \
	"{\"$schema\":\"https://www.speedscope.app/file-format-schema.json\",\"shared\":{\"frames\":[" \
	"{\"name\":\"a\",\"file\":\"a.c\",\"line\":3,\"col\":7},{\"name\":\"b\"},{\"name\":\"c\"}]},"

static const char sampled[] =
	FRAMES "\"name\":\"file\",\"exporter\":\"x@1\",\"profiles\":["
	       "{\"type\":\"sampled\",\"name\":\"one\",\"unit\":\"milliseconds\",\"startValue\":0,"
	       "\"endValue\":6,\"samples\":[[0,1],[0,1,2],[0],[0,1]],\"weights\":[1.5,2,0,2.5]},"
	       "{\"type\":\"sampled\",\"name\":\"two\",\"unit\":\"none\",\"startValue\":0,"
	       "\"endValue\":2,\"samples\":[[2],[2]]}]}";

static void test_speedscope_sampled(void **state)
{
	struct model_profile p;
	struct prof_err err;
	const struct model_location *l;
	const struct model_function *f;

	(void)state;
	assert_int_equal(decode(sampled, NULL, &p, &err), 0);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(p.sample_types.n, 2);
	assert_string_equal(model_str(&p, p.sample_types.v[0].type), "cpu");
	assert_string_equal(model_str(&p, p.sample_types.v[0].unit), "nanoseconds");
	assert_string_equal(model_str(&p, p.sample_types.v[1].type), "samples");
	/* The zero weight is skipped: 3 + 2 samples. */
	assert_int_equal(p.samples.n, 5);
	assert_int_equal(p.values.v[0], 1500000);
	assert_int_equal(p.values.v[2], 2000000);
	assert_int_equal(p.values.v[4], 2500000);
	assert_int_equal(p.values.v[1], 0);
	assert_int_equal(p.values.v[6], 0);
	assert_int_equal(p.values.v[7], 1);
	assert_int_equal(p.samples.v[1].nstack, 3);
	assert_string_equal(frame(&p, 1, 0), "c");
	assert_string_equal(frame(&p, 1, 2), "a");
	/* [0,1] twice: one stack. */
	assert_int_equal(p.samples.v[0].stack_off, p.samples.v[2].stack_off);
	/* Frame a keeps file, line and column. */
	l = &p.locations.v[p.stack_locs.v[p.samples.v[1].stack_off + 2]];
	f = &p.functions.v[p.lines.v[l->line_off].function];
	assert_string_equal(model_str(&p, f->filename), "a.c");
	assert_int_equal(f->start_line, 3);
	assert_int_equal(p.lines.v[l->line_off].column, 7);
	/* Labels and attributes. */
	assert_string_equal(model_str(&p, p.labels.v[p.samples.v[0].label_off].str), "one");
	assert_string_equal(model_str(&p, p.labels.v[p.samples.v[4].label_off].str), "two");
	assert_string_equal(model_attr_get(&p, "speedscope.name"), "file");
	assert_string_equal(model_attr_get(&p, "speedscope.exporter"), "x@1");
	assert_int_equal(p.duration_ns, 6000000);
	model_profile_release(&p);
}

static void test_speedscope_pick_one_profile(void **state)
{
	struct fmt_decode_opts o = { .profile = 2 };
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode(sampled, &o, &p, &err), 0);
	assert_int_equal(p.sample_types.n, 1);
	assert_string_equal(model_str(&p, p.sample_types.v[0].type), "samples");
	assert_int_equal(p.samples.n, 2);
	model_profile_release(&p);
	o.profile = 3;
	assert_int_equal(decode(sampled, &o, &p, &err), -EINVAL);
	assert_string_equal(err.msg, "speedscope: profile 3 requested but the file has 2 profiles");
	model_profile_release(&p);
}

static void test_speedscope_evented(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	/* a [0,10), b [1,4) inside a, c [6,9) inside a; times in microseconds. */
	assert_int_equal(decode(FRAMES "\"profiles\":[{\"type\":\"evented\",\"name\":\"ev\","
				       "\"unit\":\"microseconds\",\"startValue\":0,\"endValue\":10,"
				       "\"events\":[{\"type\":\"O\",\"at\":0,\"frame\":0},"
				       "{\"type\":\"O\",\"at\":1,\"frame\":1},"
				       "{\"type\":\"C\",\"at\":4,\"frame\":1},"
				       "{\"type\":\"O\",\"at\":6,\"frame\":2},"
				       "{\"type\":\"C\",\"at\":9,\"frame\":2},"
				       "{\"type\":\"C\",\"at\":10,\"frame\":0}]}]}",
				NULL, &p, &err),
			 0);
	assert_int_equal(p.samples.n, 5);
	/* a 1us, a;b 3us, a 2us, a;c 3us, a 1us */
	assert_int_equal(p.values.v[0], 1000);
	assert_int_equal(p.values.v[1], 3000);
	assert_int_equal(p.values.v[2], 2000);
	assert_int_equal(p.values.v[3], 3000);
	assert_int_equal(p.values.v[4], 1000);
	assert_int_equal(p.samples.v[1].nstack, 2);
	assert_string_equal(frame(&p, 1, 0), "b");
	assert_string_equal(frame(&p, 3, 0), "c");
	/* The stack of a alone is written once. */
	assert_int_equal(p.samples.v[0].stack_off, p.samples.v[4].stack_off);
	assert_int_equal(p.stack_locs.n, 5);
	model_profile_release(&p);
}

static void expect_error(const char *profiles, int code, const char *msg)
{
	char buf[2048];
	struct model_profile p;
	struct prof_err err;

	snprintf(buf, sizeof(buf), FRAMES "\"profiles\":[%s]}", profiles);
	assert_int_equal(decode(buf, NULL, &p, &err), code);
	assert_string_equal(err.msg, msg);
	model_profile_release(&p);
}

static void test_speedscope_unbalanced_events(void **state)
{
	(void)state;
	expect_error(
		"{\"type\":\"evented\",\"unit\":\"none\",\"events\":["
		"{\"type\":\"O\",\"at\":0,\"frame\":0},{\"type\":\"O\",\"at\":1,\"frame\":1},"
		"{\"type\":\"C\",\"at\":2,\"frame\":0}]}",
		-PROF_ECORRUPT,
		"speedscope: profiles[0].events[2]: closes frame 0 (\"a\") but frame 1 (\"b\") "
		"is on top");
	expect_error("{\"type\":\"evented\",\"unit\":\"none\",\"events\":["
		     "{\"type\":\"C\",\"at\":2,\"frame\":2}]}",
		     -PROF_ECORRUPT,
		     "speedscope: profiles[0].events[0]: closes frame 2 (\"c\") but no frame is "
		     "open");
	expect_error(
		"{\"type\":\"evented\",\"unit\":\"none\",\"events\":["
		"{\"type\":\"O\",\"at\":0,\"frame\":0},{\"type\":\"O\",\"at\":1,\"frame\":1}]}",
		-PROF_ECORRUPT,
		"speedscope: profiles[0]: 2 frames still open at the end (innermost: 1, \"b\")");
	expect_error(
		"{\"type\":\"evented\",\"unit\":\"none\",\"events\":["
		"{\"type\":\"O\",\"at\":5,\"frame\":0},{\"type\":\"C\",\"at\":4,\"frame\":0}]}",
		-PROF_ECORRUPT,
		"speedscope: profiles[0].events[1]: at 4 is before the previous event's 5");
	expect_error("{\"type\":\"evented\",\"unit\":\"none\",\"events\":["
		     "{\"type\":\"X\",\"at\":5,\"frame\":0}]}",
		     -PROF_ECORRUPT,
		     "speedscope: profiles[0].events[0]: expected {\"type\": \"O\"|\"C\", \"at\": "
		     "number, \"frame\": index}");
}

static void test_speedscope_bad_samples(void **state)
{
	(void)state;
	expect_error(
		"{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0,3]]}", -PROF_ECORRUPT,
		"speedscope: profiles[0].samples[0]: frame index must be an integer in [0, 3)");
	expect_error("{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[-1]}",
		     -PROF_ECORRUPT,
		     "speedscope: profiles[0].weights[0]: weight must be a non-negative number");
	expect_error("{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0]],\"weights\":[1,2]}",
		     -PROF_ECORRUPT,
		     "speedscope: profiles[0]: \"weights\" must be an array as long as \"samples\" "
		     "(1)");
	expect_error("{\"type\":\"sampled\",\"unit\":\"none\"}", -PROF_ECORRUPT,
		     "speedscope: profiles[0]: sampled profile without a \"samples\" array");
	expect_error("{\"type\":\"sampled\",\"unit\":\"parsecs\",\"samples\":[]}", -PROF_ECORRUPT,
		     "speedscope: profiles[0]: unknown unit \"parsecs\" (none, nanoseconds, "
		     "microseconds, milliseconds, seconds, bytes)");
	expect_error("{\"type\":\"flat\",\"unit\":\"none\"}", -PROF_ECORRUPT,
		     "speedscope: profiles[0]: unknown type \"flat\" (sampled or evented)");
}

static void test_speedscope_bad_json(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	/* Truncated: jansson's reason with line, column and byte offset. */
	assert_int_equal(decode("{\"shared\":{\"frames\":[\n{\"name\":\"a\"", NULL, &p, &err),
			 -PROF_ECORRUPT);
	assert_string_equal(err.msg,
			    "speedscope: line 2:11 (byte 32): '}' expected near end of file");
	assert_int_equal(err.offset, 32);
	model_profile_release(&p);
	assert_int_equal(decode("{\"shared\":{},\"profiles\":[]}", NULL, &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "speedscope: expected an object with \"shared\": {\"frames\": "
				     "[...]} and \"profiles\": [...]");
	model_profile_release(&p);
	/* Duplicate keys are rejected by the parser. */
	assert_int_equal(decode("{\"profiles\":[],\"profiles\":[]}", NULL, &p, &err),
			 -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "duplicate object key"));
	model_profile_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_speedscope_sampled),
		cmocka_unit_test(test_speedscope_pick_one_profile),
		cmocka_unit_test(test_speedscope_evented),
		cmocka_unit_test(test_speedscope_unbalanced_events),
		cmocka_unit_test(test_speedscope_bad_samples),
		cmocka_unit_test(test_speedscope_bad_json),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
