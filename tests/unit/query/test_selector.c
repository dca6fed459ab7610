// SPDX-License-Identifier: Apache-2.0
/*
 * test_selector.c - PromQL-style selectors: the four operators, dotted
 * and quoted names, the three quote styles and escapes, a type prefix,
 * empty selectors; matching rules (regexes anchored at both ends, an
 * absent label equals ""); parse errors name the byte offset.
 */
#include "base/compat.h"
#include "query/selector.h"

#include <setjmp.h>
#include <cmocka.h>

static void parse_ok(const char *s, struct query_selector *sel)
{
	struct prof_err err;

	prof_err_init(&err);
	if (query_selector_parse(s, sel, &err))
		fail_msg("parse of %s failed: %s", s, err.msg);
}

/* Parse must fail at byte @at with a message containing @what. */
static void parse_fails(const char *s, int64_t at, const char *what)
{
	struct query_selector sel;
	struct prof_err err;
	char want[64];

	prof_err_init(&err);
	assert_int_equal(query_selector_parse(s, &sel, &err), -EINVAL);
	query_selector_release(&sel);
	if (err.offset != at)
		fail_msg("%s: error at %lld, want %lld (%s)", s, (long long)err.offset,
			 (long long)at, err.msg);
	snprintf(want, sizeof(want), "at byte %lld", (long long)at);
	assert_non_null(strstr(err.msg, want));
	if (!strstr(err.msg, what))
		fail_msg("%s: message '%s' lacks '%s'", s, err.msg, what);
}

static void test_selector_parses_all_operators_and_dotted_names(void **state)
{
	struct query_selector sel;

	(void)state;
	parse_ok("{service.name=\"api\", k8s.pod.name=~\"api-.*\", thread.name!=\"\", "
		 "host.name!~\"db.*\"}",
		 &sel);
	assert_null(sel.type);
	assert_int_equal(sel.n, 4);
	assert_string_equal(sel.m[0].name, "service.name");
	assert_int_equal(sel.m[0].op, STORE_MATCH_EQ);
	assert_string_equal(sel.m[0].value, "api");
	assert_string_equal(sel.m[1].name, "k8s.pod.name");
	assert_int_equal(sel.m[1].op, STORE_MATCH_RE);
	assert_int_equal(sel.m[2].op, STORE_MATCH_NE);
	assert_string_equal(sel.m[2].value, "");
	assert_int_equal(sel.m[3].op, STORE_MATCH_NOT_RE);
	query_selector_release(&sel);
}

static void test_selector_quotes_escapes_whitespace_and_trailing_comma(void **state)
{
	struct query_selector sel;

	(void)state;
	parse_ok("  { \"odd key\" = 'it\\'s' ,\tre=~`a\\d+` , nl=\"x\\ny\\\\\\\"\", }  ", &sel);
	assert_int_equal(sel.n, 3);
	assert_string_equal(sel.m[0].name, "odd key");
	assert_string_equal(sel.m[0].value, "it's");
	assert_string_equal(sel.m[1].value, "a\\d+"); /* backquotes are raw */
	assert_string_equal(sel.m[2].value, "x\ny\\\"");
	query_selector_release(&sel);
}

static void test_selector_empty_and_type_prefix(void **state)
{
	struct query_selector sel;

	(void)state;
	parse_ok("", &sel);
	assert_int_equal(sel.n, 0);
	query_selector_release(&sel);
	parse_ok(NULL, &sel);
	assert_int_equal(sel.n, 0);
	query_selector_release(&sel);
	parse_ok(" {} ", &sel);
	assert_int_equal(sel.n, 0);
	query_selector_release(&sel);
	parse_ok("process_cpu:cpu:nanoseconds:cpu:nanoseconds{service.name=\"a\"}", &sel);
	assert_string_equal(sel.type, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	assert_int_equal(sel.n, 1);
	query_selector_release(&sel);
	parse_ok("memory:alloc_space:bytes:space:bytes", &sel);
	assert_string_equal(sel.type, "memory:alloc_space:bytes:space:bytes");
	assert_int_equal(sel.n, 0);
	query_selector_release(&sel);
}

static void test_selector_matching_rules(void **state)
{
	struct query_selector sel;

	(void)state;
	parse_ok("{a=~\"api\", b=~\"api-.*\", c!=\"\", d=\"\", e!~\"x|y\"}", &sel);
	/* Regexes are anchored at both ends. */
	assert_true(store_matcher_match(&sel.m[0], "api"));
	assert_false(store_matcher_match(&sel.m[0], "api-1"));
	assert_false(store_matcher_match(&sel.m[0], "my-api"));
	assert_true(store_matcher_match(&sel.m[1], "api-1"));
	assert_false(store_matcher_match(&sel.m[1], "xapi-1"));
	/* An absent label (NULL) is "". */
	assert_false(store_matcher_match(&sel.m[2], NULL));
	assert_true(store_matcher_match(&sel.m[2], "t1"));
	assert_true(store_matcher_match(&sel.m[3], NULL));
	assert_false(store_matcher_match(&sel.m[3], "v"));
	assert_true(store_matcher_match(&sel.m[4], "z"));
	assert_false(store_matcher_match(&sel.m[4], "x"));
	assert_true(store_matcher_match(&sel.m[4], "xy"));
	/* Invalid UTF-8 in a value neither crashes nor matches a plain regex. */
	assert_false(store_matcher_match(&sel.m[0], "\xff\xfe"));
	query_selector_release(&sel);
}

static void test_selector_errors_name_the_byte_offset(void **state)
{
	(void)state;
	parse_fails("{a=\"b\"", 6, "expected ',' or '}'");
	parse_fails("{a=b}", 3, "expected a quoted string");
	parse_fails("{a:\"b\"}", 2, "expected '=', '!=', '=~' or '!~'");
	parse_fails("{=\"b\"}", 1, "expected a label name");
	parse_fails("{a=\"b}", 3, "unterminated string");
	parse_fails("{a=\"\\q\"}", 4, "unknown escape");
	parse_fails("{a=\"b\"} x", 8, "unexpected 'x'");
	parse_fails("{a=\"b\" b=\"c\"}", 7, "expected ',' or '}'");
	parse_fails("{\"\"=\"b\"}", 1, "empty label name");
	/* Regex errors point into the pattern: "(" is missing its ")" at the end. */
	parse_fails("{a=~\"x(\"}", 7, "regex for label a");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_selector_parses_all_operators_and_dotted_names),
		cmocka_unit_test(test_selector_quotes_escapes_whitespace_and_trailing_comma),
		cmocka_unit_test(test_selector_empty_and_type_prefix),
		cmocka_unit_test(test_selector_matching_rules),
		cmocka_unit_test(test_selector_errors_name_the_byte_offset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
