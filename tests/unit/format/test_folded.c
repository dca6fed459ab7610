// SPDX-License-Identifier: Apache-2.0
/*
 * test_folded.c - folded/collapsed stacks: every decoding rule of
 * folded.h on a small handmade input with exact expectations, strict-mode
 * errors with line:column, and the encoder's round trip.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "format/folded.h"
#include "model/profile.h"

#include <setjmp.h>
#include <cmocka.h>

/* Name of frame @k (leaf first) of sample @s. */
static const char *frame(const struct model_profile *p, size_t s, uint32_t k)
{
	static char tmp[256];
	const struct model_sample *sm = &p->samples.v[s];
	const struct model_location *loc = &p->locations.v[p->stack_locs.v[sm->stack_off + k]];

	return model_frame_name(p, loc, 0, tmp, sizeof(tmp));
}

static int decode(const char *text, const struct fmt_decode_opts *opts, struct model_profile *p,
		  struct prof_err *err)
{
	model_profile_init(p);
	prof_err_init(err);
	return fmt_folded_decode(text, strlen(text), opts, p, err);
}

static void test_folded_basic_root_first_to_leaf_first(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("main;foo;bar 3\nmain;foo 2\nmain;foo;bar 4\n", NULL, &p, &err), 0);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(p.samples.n, 3);
	assert_int_equal(p.sample_types.n, 1);
	assert_string_equal(model_str(&p, p.sample_types.v[0].type), "samples");
	assert_string_equal(model_str(&p, p.sample_types.v[0].unit), "count");
	assert_int_equal(p.samples.v[0].nstack, 3);
	assert_string_equal(frame(&p, 0, 0), "bar");
	assert_string_equal(frame(&p, 0, 2), "main");
	assert_int_equal(p.values.v[0], 3);
	assert_int_equal(p.values.v[1], 2);
	assert_int_equal(p.values.v[2], 4);
	/* Identical stacks share one range; 3 functions, 3 locations (+ zero entries). */
	assert_int_equal(p.samples.v[0].stack_off, p.samples.v[2].stack_off);
	assert_int_equal(p.functions.n, 4);
	assert_int_equal(p.locations.n, 4);
	assert_int_equal(p.stack_locs.n, 5);
	assert_int_equal(p.comments.n, 0);
	model_profile_release(&p);
}

static void test_folded_crlf_bom_no_final_newline(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("\xef\xbb\xbf"
				"a;b 1\r\n\r\na;c 2",
				NULL, &p, &err),
			 0);
	assert_int_equal(p.samples.n, 2);
	assert_string_equal(frame(&p, 0, 0), "b");
	assert_string_equal(frame(&p, 0, 1), "a");
	assert_string_equal(frame(&p, 1, 0), "c");
	assert_int_equal(p.values.v[1], 2);
	model_profile_release(&p);
}

/* @text (ASCII plus é) as UTF-16 with a BOM, little- (@le) or big-endian, into @out. */
static void utf16(const char *text, bool le, struct buf *out)
{
	buf_reset(out);
	assert_int_equal(buf_add(out, le ? "\xff\xfe" : "\xfe\xff", 2), 0);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		unsigned c = *p;
		char u[2];

		if (c == 0xc3) /* é = c3 a9 */
			c = 0xe9, p++;
		u[le ? 0 : 1] = (char)(c & 0xff);
		u[le ? 1 : 0] = (char)(c >> 8);
		assert_int_equal(buf_add(out, u, 2), 0);
	}
}

/* Windows tools write UTF-16 with a BOM: read as its UTF-8, both byte orders. */
static void test_folded_utf16_bom_is_converted(void **state)
{
	struct buf in = BUF_INIT;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	for (int le = 0; le < 2; le++) {
		utf16("main;caf\xc3\xa9 3\r\nmain;foo 2\r\n", le, &in);
		model_profile_init(&p);
		prof_err_init(&err);
		assert_int_equal(fmt_folded_decode(in.p, in.len, NULL, &p, &err), 0);
		assert_int_equal(p.samples.n, 2);
		assert_string_equal(frame(&p, 0, 0), "caf\xc3\xa9");
		assert_string_equal(frame(&p, 0, 1), "main");
		assert_int_equal(p.values.v[0], 3);
		assert_int_equal(p.values.v[1], 2);
		model_profile_release(&p);
	}
	/* A surrogate pair becomes one 4-byte character; a lone one and an odd byte U+FFFD. */
	buf_reset(&in);
	assert_int_equal(buf_add(&in,
				 "\xff\xfe"
				 "a\0;\0\x3d\xd8\x00\xde \0"
				 "1\0\n\0"
				 "b\0;\0\x00\xdc \0"
				 "2\0\n\0"
				 "x",
				 29),
			 0);
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_folded_decode(in.p, in.len, NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_string_equal(frame(&p, 0, 0), "\xf0\x9f\x98\x80");
	assert_string_equal(frame(&p, 1, 0), "\xef\xbf\xbd");
	assert_int_equal(p.skipped.n, 1); /* the last line, "x" + U+FFFD, has no count */
	model_profile_release(&p);

	/* Bytes read as bytes whose first frame starts like a BOM encode to a file that
	 * reads back the same (the fuzzer's case: a frame "\xfe\xff\xff\x81"). */
	buf_reset(&in);
	assert_int_equal(decode("\n\n\xfe\xff\xff\x81\t3", NULL, &p, &err), 0);
	assert_int_equal(fmt_folded_encode(&p, 0, &in), 0);
	assert_int_equal(in.len, 3 + 4 + 3);
	assert_memory_equal(in.p, "\xef\xbb\xbf\xfe\xff\xff\x81 3\n", in.len);
	model_profile_release(&p);
	model_profile_init(&p);
	assert_int_equal(fmt_folded_decode(in.p, in.len, NULL, &p, &err), 0);
	assert_string_equal(frame(&p, 0, 0), "\xfe\xff\xff\x81");
	assert_int_equal(p.values.v[0], 3);
	model_profile_release(&p);
	buf_release(&in);
}

static void test_folded_invalid_lines_skipped_and_counted(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(
		decode("a;b 1\n# comment\n\n// other comment\ninvalid line\na 2\n", NULL, &p, &err),
		0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.comments.n, 1);
	assert_string_equal(model_str(&p, p.comments.v[0]),
			    "folded: skipped 3 invalid lines (first: line 2)");
	assert_int_equal(p.skipped.n, 3);
	assert_string_equal(p.skipped.what, "invalid lines");
	assert_string_equal(p.skipped.first, "line 2");
	model_profile_release(&p);
}

static void test_folded_frames_with_spaces_count_is_last_token(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("Thread 1 (main);run loop  \t 5  \n", NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(p.samples.v[0].nstack, 2);
	assert_string_equal(frame(&p, 0, 0), "run loop");
	assert_string_equal(frame(&p, 0, 1), "Thread 1 (main)");
	assert_int_equal(p.values.v[0], 5);
	model_profile_release(&p);
}

static void test_folded_zero_decimal_empty_frames(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("a;b 0\na;;b 2.5\na 2.4\n 7\n", NULL, &p, &err), 0);
	/* The zero line is valid but adds no sample. */
	assert_int_equal(p.samples.n, 3);
	assert_int_equal(p.samples.v[0].nstack, 2); /* "a;;b": empty frame dropped */
	assert_int_equal(p.values.v[0], 3);	    /* 2.5 rounds half up */
	assert_int_equal(p.values.v[1], 2);
	assert_int_equal(p.samples.v[2].nstack, 0); /* " 7": empty stack */
	assert_int_equal(p.values.v[2], 7);
	assert_int_equal(p.comments.n, 0);
	model_profile_release(&p);
}

static void test_folded_bad_counts_are_invalid(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(
		decode("a -1\na 99999999999999999999\na 12abc\na 1.2.3\na 4\n", NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 1);
	assert_string_equal(model_str(&p, p.comments.v[0]),
			    "folded: skipped 4 invalid lines (first: line 1)");
	model_profile_release(&p);
	/* INT64_MAX is the largest count. */
	assert_int_equal(decode("a 9223372036854775807\n", NULL, &p, &err), 0);
	assert_int_equal(p.values.v[0], INT64_MAX);
	model_profile_release(&p);
}

static void test_folded_strict_errors_name_line_and_column(void **state)
{
	struct fmt_decode_opts o = { .strict = true };
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("a;b 1\nfoo bar\n", &o, &p, &err), -PROF_ECORRUPT);
	assert_string_equal(
		err.msg, "folded: line 2:5 (byte 10): count \"bar\" is not a non-negative number");
	assert_int_equal(err.offset, 10);
	model_profile_release(&p);
	assert_int_equal(decode("a 1\r\nnocount\r\n", &o, &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg, "folded: line 2:8 (byte 12): no count after the stack");
	model_profile_release(&p);
}

static void test_folded_no_valid_line_is_a_format_error(void **state)
{
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("\n\nhello world\n", NULL, &p, &err), -PROF_EFORMAT);
	assert_string_equal(err.msg, "folded: no line of the form \"frame;frame count\" (first "
				     "line: \"hello world\")");
	model_profile_release(&p);
	/* Empty input: an empty profile, not an error. */
	assert_int_equal(decode("", NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 0);
	model_profile_release(&p);
}

static void test_folded_options_type_kernel_limits(void **state)
{
	struct fmt_decode_opts o = { .sample_type = "cpu", .sample_unit = "nanoseconds" };
	struct model_profile p;
	struct prof_err err;

	(void)state;
	assert_int_equal(decode("main;do_syscall_64_[k] 10\n", &o, &p, &err), 0);
	assert_string_equal(model_str(&p, p.sample_types.v[0].type), "cpu");
	assert_string_equal(model_str(&p, p.locations.v[p.stack_locs.v[0]].frame_type), "kernel");
	assert_int_equal(p.locations.v[p.stack_locs.v[1]].frame_type, 0);
	model_profile_release(&p);

	o.max_input = 4;
	assert_int_equal(decode("main 10\n", &o, &p, &err), -PROF_ETOOBIG);
	assert_string_equal(err.msg, "folded: input of 8 bytes exceeds the limit of 4 bytes");
	model_profile_release(&p);

	o.max_input = 0;
	o.max_samples = 1;
	assert_int_equal(decode("a 1\nb 1\n", &o, &p, &err), -PROF_ETOOBIG);
	assert_string_equal(err.msg, "folded: line 2:1 (byte 4): more than 1 samples");
	model_profile_release(&p);
}

static void test_folded_encode_round_trip(void **state)
{
	struct model_profile p, q;
	struct prof_err err;
	struct buf out = BUF_INIT;
	struct model_line inl[2];
	uint32_t l1, l2, stack[2], off;
	int64_t v = 6;

	(void)state;
	assert_int_equal(
		decode("main;foo;bar 3\nmain;foo 2\nmain;foo;bar 4\nx 0\n", NULL, &p, &err), 0);
	assert_int_equal(fmt_folded_encode(&p, 0, &out), 0);
	assert_string_equal(out.p, "main;foo;bar 7\nmain;foo 2\n");
	assert_int_equal(fmt_folded_encode(&p, 1, &out), -EINVAL);
	model_profile_release(&p);

	/* Inlined lines expand outermost first; ';' in a name becomes ':'. */
	model_profile_init(&q);
	model_sample_type_add(&q, "samples", "count");
	inl[0].function = model_function_intern(&q, model_intern(&q, "inner"), 0, 0, 0);
	inl[1].function = model_function_intern(&q, model_intern(&q, "outer;x"), 0, 0, 0);
	inl[0].line = inl[1].line = inl[0].column = inl[1].column = 0;
	l1 = model_location_add(&q, 0, 0x10, inl, 2);
	l2 = model_location_add(&q, 0, 0x20, &inl[1], 1);
	stack[0] = l1;
	stack[1] = l2;
	off = model_stack_add(&q, stack, 2);
	model_sample_add(&q, off, 2, &v, NULL, 0, 0, 0);
	buf_reset(&out);
	assert_int_equal(fmt_folded_encode(&q, 0, &out), 0);
	assert_string_equal(out.p, "outer:x;outer:x;inner 6\n");
	model_profile_release(&q);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_folded_basic_root_first_to_leaf_first),
		cmocka_unit_test(test_folded_crlf_bom_no_final_newline),
		cmocka_unit_test(test_folded_utf16_bom_is_converted),
		cmocka_unit_test(test_folded_invalid_lines_skipped_and_counted),
		cmocka_unit_test(test_folded_frames_with_spaces_count_is_last_token),
		cmocka_unit_test(test_folded_zero_decimal_empty_frames),
		cmocka_unit_test(test_folded_bad_counts_are_invalid),
		cmocka_unit_test(test_folded_strict_errors_name_line_and_column),
		cmocka_unit_test(test_folded_no_valid_line_is_a_format_error),
		cmocka_unit_test(test_folded_options_type_kernel_limits),
		cmocka_unit_test(test_folded_encode_round_trip),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
