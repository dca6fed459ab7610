// SPDX-License-Identifier: Apache-2.0
/*
 * test_qargs.c - repeated query parameters (server/qargs.h), after each
 * add: the lists of docs/api.md combine (group_by/hide items in order,
 * stack_filter/frame_filter as an alternation), empty repeats add nothing,
 * a single-valued parameter given twice is refused naming it, and the
 * values of parameters given once are the request's own pointers.
 */
#include "base/compat.h"
#include "server/qargs.h"
#include "query/filter.h"

#include <setjmp.h>
#include <cmocka.h>

static void test_qargs_lists_combine(void **state)
{
	struct server_qargs q = { 0 };
	struct prof_err err;
	const char *type = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";

	(void)state;
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "type", type, &err), 0);
	assert_ptr_equal(server_qargs_get(&q, "type"), type); /* lent, not copied */
	assert_int_equal(server_qargs_add(&q, "group_by", "service.name", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), "service.name");
	assert_int_equal(server_qargs_add(&q, "group_by", "thread.name", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), "service.name,thread.name");
	assert_int_equal(server_qargs_add(&q, "group_by", "", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), "service.name,thread.name");
	assert_int_equal(server_qargs_add(&q, "hide", "go", &err), 0);
	assert_int_equal(server_qargs_add(&q, "hide", "libc,kernel", &err), 0);
	assert_string_equal(server_qargs_get(&q, "hide"), "go,libc,kernel");
	/* the explorer's chips: a stack with a frame matching any of them */
	assert_int_equal(server_qargs_add(&q, "stack_filter", "^main$", &err), 0);
	assert_string_equal(server_qargs_get(&q, "stack_filter"), "^main$");
	assert_int_equal(server_qargs_add(&q, "stack_filter", "a|b", &err), 0);
	assert_string_equal(server_qargs_get(&q, "stack_filter"), "(?:^main$\\E)|(?:a|b\\E)");
	assert_int_equal(server_qargs_add(&q, "stack_filter", "hot", &err), 0);
	assert_string_equal(server_qargs_get(&q, "stack_filter"),
			    "(?:^main$\\E)|(?:a|b\\E)|(?:hot\\E)");
	/* an empty first value, a key without '=' */
	assert_int_equal(server_qargs_add(&q, "frame_filter", "", &err), 0);
	assert_int_equal(server_qargs_add(&q, "frame_filter", NULL, &err), 0);
	assert_string_equal(server_qargs_get(&q, "frame_filter"), "");
	assert_int_equal(server_qargs_add(&q, "frame_filter", "runtime\\.", &err), 0);
	assert_string_equal(server_qargs_get(&q, "frame_filter"), "(?:runtime\\.\\E)");
	assert_int_equal(q.n, 5);
	assert_null(server_qargs_get(&q, "query"));
	assert_int_equal(err.code, 0);
	server_qargs_release(&q);
	assert_int_equal(q.n, 0);
}

/* Does @re (a combined filter) match somewhere in @s? */
static bool regex_matches(const char *re, const char *s)
{
	struct prof_err err;
	void *c, *md;
	bool m;

	prof_err_init(&err);
	assert_int_equal(query_regex_compile("t", re, &c, &md, &err), 0);
	m = query_regex_match(c, md, s, strlen(s));
	query_regex_free(c, md);
	return m;
}

static void test_qargs_regex_values_stay_apart(void **state)
{
	struct server_qargs q = { 0 };
	struct prof_err err;
	const char *v;

	(void)state;
	/* a \Q left open ends inside its own value: "ho\Q" is "ho" then nothing quoted */
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "stack_filter", "ho\\Q", &err), 0);
	assert_int_equal(server_qargs_add(&q, "stack_filter", "\\Et", &err), 0);
	v = server_qargs_get(&q, "stack_filter");
	assert_string_equal(v, "(?:ho\\Q\\E)|(?:\\Et\\E)");
	assert_true(regex_matches(v, "shop"));
	assert_true(regex_matches(v, "t"));
	assert_false(regex_matches(v, "xyz"));
	assert_false(regex_matches(v, ")|(?:"));
	server_qargs_release(&q);
	/* a quoted literal stays quoted */
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "frame_filter", "\\Qa.b", &err), 0);
	assert_int_equal(server_qargs_add(&q, "frame_filter", "c", &err), 0);
	v = server_qargs_get(&q, "frame_filter");
	assert_true(regex_matches(v, "a.b"));
	assert_false(regex_matches(v, "axb"));
	assert_true(regex_matches(v, "c"));
	server_qargs_release(&q);
	/* a value that is no regex alone is refused, named, offset within it */
	for (int order = 0; order < 2; order++) {
		prof_err_init(&err);
		assert_int_equal(
			server_qargs_add(&q, "stack_filter", order ? "b" : "a)|(?:b", &err), 0);
		assert_int_equal(
			server_qargs_add(&q, "stack_filter", order ? "a)|(?:b" : "b", &err),
			-EINVAL);
		assert_non_null(strstr(err.msg, "parameter 'stack_filter'"));
		assert_non_null(strstr(err.msg, "at offset 1 of 'a)|(?:b'"));
		assert_int_equal(err.offset, 1);
		server_qargs_release(&q);
	}
	/* valid alone, but only at the start of a pattern: refused on combining */
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "frame_filter", "x", &err), 0);
	assert_int_equal(server_qargs_add(&q, "frame_filter", "(*UCP)y", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "value '(*UCP)y' has a (*...) verb or option at offset 0"));
	assert_string_equal(server_qargs_get(&q, "frame_filter"), "x");
	server_qargs_release(&q);
	/* a backtracking verb acts on the whole alternation: (?:ain)|(?:(*COMMIT)zz)
	 * fails "main" at its first start (the verb commits) instead of matching */
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "stack_filter", "ain", &err), 0);
	assert_int_equal(server_qargs_add(&q, "stack_filter", "(*COMMIT)zz", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'(*COMMIT)zz' has a (*...) verb"));
	assert_int_equal(err.offset, 0);
	assert_int_equal(server_qargs_add(&q, "stack_filter", "a[(*]\\Q(*\\E", &err), 0);
	assert_true(regex_matches(server_qargs_get(&q, "stack_filter"), "main"));
	server_qargs_release(&q);
	/* alone, a verb is the user's to give */
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "stack_filter", "(*COMMIT)zz", &err), 0);
	server_qargs_release(&q);
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "frame_filter", "(?x)a#", &err), 0);
	assert_int_equal(server_qargs_add(&q, "frame_filter", "b", &err), -EINVAL);
	assert_non_null(strstr(err.msg, "value '(?x)a#' does not combine"));
	server_qargs_release(&q);
}

/*
 * A value that refers to a capture group would, after the first value,
 * point into that value's groups ("(a)" then "(b)\1": \1 is a's group):
 * refused naming the value and the offset of the reference, in either
 * order; alone it is taken as it is. Escapes, classes, quoted text and
 * comments that only look like references pass.
 */
static void test_qargs_group_refs_refused(void **state)
{
	static const struct {
		const char *v;
		long off;
	} refs[] = {
		{ "(b)\\1", 3 },
		{ "(b)\\g{1}", 3 },
		{ "(b)\\g1", 3 },
		{ "(b)\\g{-1}", 3 },
		{ "(?<n>b)\\k<n>", 7 },
		{ "(?<n>b)\\k{n}", 7 },
		{ "(?P<n>b)(?P=n)", 8 },
		{ "(b(?1)?)", 2 },
		{ "x(b(?-1)?)", 3 },
		{ "(b(?R)?c)", 2 },
		{ "(?<n>b(?&n)?)", 6 },
		{ "(b)(?(1)c|d)", 3 },
		{ "(?(DEFINE)(?<d>x))y", 0 },
		{ "a[x](b)\\2?(c)", 7 },
		{ "\\Q(\\E(b)\\1", 8 },
	};
	static const char *const plain[] = {
		"(b)c",		 "a\\0\\x{31}", "[\\1(?1)]x",  "[]\\1]",      "[[:alpha:]\\1]",
		"\\Q\\1(?R)\\E", "(?#\\1)x",	"(?(?=a)a|b)", "(?i)x(?-i)y", "(\\c(?R)",
	};
	struct server_qargs q = { 0 };
	struct prof_err err;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(refs); i++) {
		for (int order = 0; order < 2; order++) {
			prof_err_init(&err);
			assert_int_equal(server_qargs_add(&q, "stack_filter",
							  order ? refs[i].v : "(a)", &err),
					 0);
			assert_int_equal(server_qargs_add(&q, "stack_filter",
							  order ? "(a)" : refs[i].v, &err),
					 -EINVAL);
			assert_non_null(strstr(err.msg, "parameter 'stack_filter'"));
			assert_non_null(strstr(err.msg, refs[i].v));
			assert_non_null(strstr(err.msg, "refers to a capture group"));
			assert_int_equal(err.offset, refs[i].off);
			server_qargs_release(&q);
		}
		/* alone it is the whole pattern: its numbers are its own */
		prof_err_init(&err);
		assert_int_equal(server_qargs_add(&q, "frame_filter", refs[i].v, &err), 0);
		assert_string_equal(server_qargs_get(&q, "frame_filter"), refs[i].v);
		server_qargs_release(&q);
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(plain); i++) {
		prof_err_init(&err);
		assert_int_equal(server_qargs_add(&q, "frame_filter", "(a)", &err), 0);
		assert_int_equal(server_qargs_add(&q, "frame_filter", plain[i], &err), 0);
		assert_int_equal(err.code, 0);
		server_qargs_release(&q);
	}
	/* why: joined after "(a)", "(b)\1" no longer matches "bb" (its \1 is a's group) */
	assert_true(regex_matches("(?:(b)\\1\\E)", "bb"));
	assert_false(regex_matches("(?:(a)\\E)|(?:(b)\\1\\E)", "bb"));
}

static void test_qargs_comma_items_once(void **state)
{
	struct server_qargs q = { 0 };
	struct prof_err err;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "group_by", "x", &err), 0);
	assert_int_equal(server_qargs_add(&q, "group_by", "x", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), "x");
	assert_int_equal(server_qargs_add(&q, "group_by", "y, x", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), "x,y");
	assert_int_equal(server_qargs_add(&q, "group_by", " y ,z,x", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), "x,y,z");
	/* empty items stay, for the view to refuse */
	assert_int_equal(server_qargs_add(&q, "group_by", ",w", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), "x,y,z,,w");
	assert_int_equal(server_qargs_add(&q, "hide", "go,libc", &err), 0);
	assert_int_equal(server_qargs_add(&q, "hide", "libc,go,kernel", &err), 0);
	assert_string_equal(server_qargs_get(&q, "hide"), "go,libc,kernel");
	assert_int_equal(err.code, 0);
	server_qargs_release(&q);
	/* an empty first item is kept as the first */
	assert_int_equal(server_qargs_add(&q, "group_by", ",a", &err), 0);
	assert_int_equal(server_qargs_add(&q, "group_by", "a", &err), 0);
	assert_string_equal(server_qargs_get(&q, "group_by"), ",a");
	server_qargs_release(&q);
}

static void test_qargs_single_value_repeated_refused(void **state)
{
	static const char *const single[] = { "type", "query", "from", "to", "step", "limit" };
	struct prof_err err;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(single); i++) {
		struct server_qargs q = { 0 };

		prof_err_init(&err);
		assert_int_equal(server_qargs_add(&q, single[i], "1", &err), 0);
		assert_int_equal(server_qargs_add(&q, single[i], "1", &err), -EINVAL);
		assert_non_null(strstr(err.msg, "given more than once"));
		assert_non_null(strstr(err.msg, single[i]));
		assert_string_equal(server_qargs_get(&q, single[i]), "1"); /* unchanged */
		server_qargs_release(&q);
	}
}

static void test_qargs_caps(void **state)
{
	struct server_qargs q = { 0 };
	struct prof_err err;
	char keys[SERVER_QARGS_MAX + 1][16];
	char *big = malloc(SERVER_QARGS_MAX_JOINED);

	(void)state;
	prof_err_init(&err);
	for (int i = 0; i <= SERVER_QARGS_MAX; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		assert_int_equal(server_qargs_add(&q, keys[i], "v", &err),
				 i < SERVER_QARGS_MAX ? 0 : -EINVAL);
	}
	assert_int_equal(q.n, SERVER_QARGS_MAX);
	server_qargs_release(&q);
	/* a combined value past the cap */
	memset(big, 'x', SERVER_QARGS_MAX_JOINED - 1);
	big[SERVER_QARGS_MAX_JOINED - 1] = '\0';
	prof_err_init(&err);
	assert_int_equal(server_qargs_add(&q, "group_by", "a", &err), 0);
	assert_int_equal(server_qargs_add(&q, "group_by", big, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "group_by"));
	server_qargs_release(&q);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_qargs_lists_combine),
		cmocka_unit_test(test_qargs_regex_values_stay_apart),
		cmocka_unit_test(test_qargs_group_refs_refused),
		cmocka_unit_test(test_qargs_comma_items_once),
		cmocka_unit_test(test_qargs_single_value_repeated_refused),
		cmocka_unit_test(test_qargs_caps),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
