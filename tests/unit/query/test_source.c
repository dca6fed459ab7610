// SPDX-License-Identifier: Apache-2.0
/*
 * test_source.c - the line-level view (query/source.h) as the API serves
 * it (/api/v1/source), on handmade profiles with lines: self and total
 * per line, a recursive stack counted once per line, a callee inlined
 * into the function counted on the calling line, two builds kept apart,
 * the hide filter and fold applied, the hottest line first, text from a
 * source root (sym_srcroot) and the reason when there is none.
 */
#include "unit/query/qhelp.h"

#include "query/source.h"
#include "symbolize/srcroot.h"

#include <stdio.h>

/* A location of @fn at @file:@line in mapping @map (0 = none), one line. */
static uint32_t loc_at(struct model_profile *p, uint32_t map, uint64_t addr, const char *fn,
		       const char *file, int64_t line)
{
	uint32_t f = model_function_intern(p, model_intern(p, fn), 0, model_intern(p, file), 0);
	struct model_line ln = { f, line, 0 };

	return model_location_add(p, map, addr, &ln, 1);
}

/* Run the source view with @a, @root as the server's source path. */
static json_t *source_ok(struct store_head *h, struct qh_args *a, const struct sym_srcroot *root)
{
	struct store *st;
	struct buf out;
	struct prof_err err;
	const char *ct;
	json_error_t jerr;

	buf_init(&out, 0);
	prof_err_init(&err);
	store_open_head(h, &st);
	struct query_env env = { st, NULL, T0MS + 3600 * 1000, root };
	int rc = query_request_run(&env, "source", qh_arg, a, &out, &ct, &err);
	store_close(st);
	if (rc)
		fail_msg("source: rc %d: %s", rc, err.msg);
	json_t *j = json_loadb(out.p, out.len, 0, &jerr);
	if (!j)
		fail_msg("invalid JSON: %s: %.300s", jerr.text, out.p);
	buf_release(&out);
	return j;
}

/* Line entry @i of @j: "FILE:LINE self total". */
static const char *line_str(json_t *j, size_t i, char *b, size_t n)
{
	json_t *l = json_array_get(json_object_get(j, "lines"), i);

	if (!l)
		return "(none)";
	snprintf(b, n, "%s:%" PRId64 " %" PRId64 " %" PRId64,
		 json_string_value(json_object_get(l, "file")), qh_int(l, "line"),
		 qh_int(l, "self"), qh_int(l, "total"));
	return b;
}

/*
 * main;qsort;cmp: cmp at sort.c:10 8 times (leaf), at :12 once (leaf),
 * at :11 calling memcpy once, and once recursing cmp:11 -> cmp:11 ->
 * cmp:10 (a leaf at line 10).
 */
static void sort_profile(struct store_head *h)
{
	struct model_profile p;

	qh_init(&p, "sorter", false);
	uint32_t m = tl_fn_loc(&p, "main", 4), q = tl_fn_loc(&p, "qsort", 5);
	uint32_t c10 = loc_at(&p, 0, 0x10, "cmp", "sort.c", 10);
	uint32_t c11 = loc_at(&p, 0, 0x11, "cmp", "sort.c", 11);
	uint32_t c12 = loc_at(&p, 0, 0x12, "cmp", "sort.c", 12);
	uint32_t mc = loc_at(&p, 0, 0x20, "memcpy", "string.c", 3);
	uint32_t s1[3] = { m, q, c10 }, s2[3] = { m, q, c12 }, s3[4] = { m, q, c11, mc };
	uint32_t s4[5] = { m, q, c11, c11, c10 };

	tl_sample_locs(&p, s1, 3, 80, T0, NULL, 0);
	tl_sample_locs(&p, s2, 3, 10, T0, NULL, 0);
	tl_sample_locs(&p, s3, 4, 5, T0, NULL, 0);
	tl_sample_locs(&p, s4, 5, 7, T0, NULL, 0);
	qh_head_add(h, &p);
}

static void test_source_self_total_per_line_recursion_once(void **state)
{
	struct store_head *h = store_head_new();
	struct qh_args a = { { "type", CPU, "query", "{}", "function", "cmp", NULL } };
	char b[256];

	(void)state;
	sort_profile(h);
	json_t *j = source_ok(h, &a, NULL);
	assert_true(json_is_true(json_object_get(j, "found")));
	assert_int_equal(qh_int(j, "self"), 80 + 10 + 7);
	assert_int_equal(qh_int(j, "total"), 80 + 10 + 5 + 7);
	assert_int_equal(qh_int(j, "nlines"), 3);
	/* Hottest first: line 10 has the 80 and the recursive stack's leaf 7. */
	assert_string_equal(line_str(j, 0, b, sizeof(b)), "sort.c:10 87 87");
	assert_string_equal(line_str(j, 1, b, sizeof(b)), "sort.c:12 10 10");
	/* Line 11 is twice on the recursive stack: counted once (5 + 7). */
	assert_string_equal(line_str(j, 2, b, sizeof(b)), "sort.c:11 0 12");
	json_t *f = json_array_get(json_object_get(j, "files"), 0);
	assert_string_equal(json_string_value(json_object_get(f, "source")), "unavailable");
	assert_non_null(strstr(json_string_value(json_object_get(f, "reason")), "--source-path"));
	json_decref(j);

	/* By line; limit 1 truncates. */
	struct qh_args bl = { { "type", CPU, "query", "{}", "function", "cmp", "sort", "line",
				"limit", "1", NULL } };
	j = source_ok(h, &bl, NULL);
	assert_string_equal(line_str(j, 0, b, sizeof(b)), "sort.c:10 87 87");
	assert_int_equal(json_array_size(json_object_get(j, "lines")), 1);
	assert_true(json_is_true(json_object_get(j, "truncated")));
	json_decref(j);

	/* frame_filter=^memcpy$ hides memcpy: cmp at line 11 becomes the leaf of that stack. */
	struct qh_args hd = { { "type", CPU, "query", "{}", "function", "cmp", "frame_filter",
				"^memcpy$", "sort", "total", NULL } };
	j = source_ok(h, &hd, NULL);
	assert_int_equal(qh_int(j, "self"), 80 + 10 + 5 + 7);
	assert_string_equal(line_str(j, 1, b, sizeof(b)), "sort.c:11 5 12");
	json_decref(j);

	/* An absent function: found false, no lines; a function name is required. */
	struct qh_args no = { { "type", CPU, "query", "{}", "function", "nope", NULL } };
	j = source_ok(h, &no, NULL);
	assert_true(json_is_false(json_object_get(j, "found")));
	assert_int_equal(json_array_size(json_object_get(j, "lines")), 0);
	json_decref(j);
	struct qh_args none = { { "type", CPU, "query", "{}", NULL } };
	struct buf out;
	struct prof_err err;
	buf_init(&out, 0);
	assert_int_equal(qh_run(h, "source", &none, &out, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'function' is required"));
	struct qh_args bad = { { "type", CPU, "query", "{}", "function", "cmp", "text", "all",
				 NULL } };
	assert_int_equal(qh_run(h, "source", &bad, &out, NULL, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "'text'"));
	buf_release(&out);
	store_head_free(h);
}

/* memcpy inlined into cmp at line 14 (lines[0] innermost): cmp's cost is on line 14. */
static void test_source_inlined_callee_on_calling_line(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	char b[256];

	(void)state;
	qh_init(&p, "inl", false);
	struct model_line lines[2] = {
		{ model_function_intern(&p, model_intern(&p, "memcpy"), 0,
					model_intern(&p, "string.h"), 0),
		  5, 0 },
		{ model_function_intern(&p, model_intern(&p, "cmp"), 0, model_intern(&p, "sort.c"),
					9),
		  14, 0 },
	};
	uint32_t locs[2] = { tl_fn_loc(&p, "main", 4), model_location_add(&p, 0, 0x40, lines, 2) };
	tl_sample_locs(&p, locs, 2, 3, T0, NULL, 0);
	qh_head_add(h, &p);

	struct qh_args a = { { "type", CPU, "query", "{}", "function", "cmp", NULL } };
	json_t *j = source_ok(h, &a, NULL);
	/* The call site's line, not the function's start line 9. */
	assert_string_equal(line_str(j, 0, b, sizeof(b)), "sort.c:14 0 3");
	json_decref(j);
	struct qh_args m = { { "type", CPU, "query", "{}", "function", "memcpy", NULL } };
	j = source_ok(h, &m, NULL);
	assert_string_equal(line_str(j, 0, b, sizeof(b)), "string.h:5 3 3");
	json_decref(j);
	store_head_free(h);
}

/* One function in two builds of a binary: each build has its own lines and build ID. */
static void test_source_two_builds_apart(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct model_mapping m1 = { 0 }, m2 = { 0 };

	(void)state;
	qh_init(&p, "app", false);
	m1.memory_limit = m2.memory_limit = UINT64_MAX;
	m1.filename = m2.filename = model_intern(&p, "/opt/app");
	m1.build_id = model_intern(&p, "aaaa");
	m2.build_id = model_intern(&p, "bbbb");
	m1.has_functions = m2.has_functions = m1.has_line_numbers = m2.has_line_numbers = true;
	uint32_t a = model_mapping_add(&p, &m1), b = model_mapping_add(&p, &m2);
	uint32_t main_l = tl_fn_loc(&p, "main", 4);
	uint32_t s1[2] = { main_l, loc_at(&p, a, 0x100, "work", "app.c", 7) };
	uint32_t s2[2] = { main_l, loc_at(&p, b, 0x100, "work", "app.c", 8) };
	tl_sample_locs(&p, s1, 2, 4, T0, NULL, 0);
	tl_sample_locs(&p, s2, 2, 6, T0, NULL, 0);
	qh_head_add(h, &p);

	struct qh_args q = { { "type", CPU, "query", "{}", "function", "work", NULL } };
	json_t *j = source_ok(h, &q, NULL), *l = json_object_get(j, "lines");
	json_t *builds = json_object_get(j, "builds");
	assert_int_equal(json_array_size(builds), 2);
	assert_string_equal(json_string_value(json_array_get(builds, 0)), "bbbb");
	assert_string_equal(json_string_value(json_array_get(builds, 1)), "aaaa");
	assert_string_equal(json_string_value(json_object_get(json_array_get(l, 0), "build_id")),
			    "bbbb");
	assert_int_equal(qh_int(json_array_get(l, 0), "line"), 8);
	assert_int_equal(qh_int(json_array_get(l, 1), "line"), 7);
	assert_int_equal(json_array_size(json_object_get(j, "files")), 2);
	json_decref(j);
	store_head_free(h);
}

/* With a source root: each line's text, the file's lines with text=file, and why not. */
static void test_source_text_from_root(void **state)
{
	struct store_head *h = store_head_new();
	struct sym_srcroot *root = NULL;
	struct prof_err err;
	char *dir = tl_tmpdir("source"), path[4096];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/sort.c", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	for (int i = 1; i <= 12; i++)
		if (i == 11) /* longer than a listed line's text may be */
			fprintf(f, "%0300d\n", 11);
		else
			fprintf(f, "line %d%s\n", i, i == 10 ? " hot" : "");
	fclose(f);
	prof_err_init(&err);
	assert_int_equal(sym_srcroot_new(dir, &root, &err), 0);
	sort_profile(h);

	struct qh_args a = { { "type", CPU, "query", "{}", "function", "cmp", NULL } };
	json_t *j = source_ok(h, &a, root), *l0 = json_array_get(json_object_get(j, "lines"), 0);
	assert_string_equal(json_string_value(json_object_get(l0, "text")), "line 10 hot");
	json_t *l2 = json_array_get(json_object_get(j, "lines"), 2);
	assert_int_equal(qh_int(l2, "line"), 11);
	assert_int_equal(strlen(json_string_value(json_object_get(l2, "text"))),
			 QUERY_SOURCE_MAX_LINE_TEXT);
	json_t *f0 = json_array_get(json_object_get(j, "files"), 0);
	assert_string_equal(json_string_value(json_object_get(f0, "source")), "available");
	assert_null(json_object_get(f0, "text"));
	json_decref(j);

	struct qh_args tf = { { "type", CPU, "query", "{}", "function", "cmp", "text", "file",
				NULL } };
	j = source_ok(h, &tf, root);
	f0 = json_array_get(json_object_get(j, "files"), 0);
	assert_int_equal(json_array_size(json_object_get(f0, "text")), 12);
	assert_string_equal(json_string_value(json_array_get(json_object_get(f0, "text"), 11)),
			    "line 12");
	json_decref(j);

	/* memcpy's string.c is not under the root: no text, and the reason. */
	struct qh_args mc = { { "type", CPU, "query", "{}", "function", "memcpy", NULL } };
	j = source_ok(h, &mc, root);
	f0 = json_array_get(json_object_get(j, "files"), 0);
	assert_string_equal(json_string_value(json_object_get(f0, "source")), "unavailable");
	assert_string_equal(json_string_value(json_object_get(f0, "reason")),
			    "string.c is not under the source path");
	assert_null(json_object_get(json_array_get(json_object_get(j, "lines"), 0), "text"));
	json_decref(j);
	/* main is known by name only: no file to look for, whatever the root. */
	struct qh_args mn = { { "type", CPU, "query", "{}", "function", "main", NULL } };
	j = source_ok(h, &mn, root);
	f0 = json_array_get(json_object_get(j, "files"), 0);
	assert_string_equal(json_string_value(json_object_get(f0, "reason")),
			    "the profile and the symbolizer name no source file");
	assert_int_equal(qh_int(json_array_get(json_object_get(j, "lines"), 0), "line"), 0);
	json_decref(j);
	sym_srcroot_free(root);
	store_head_free(h);
	tl_rmdir(dir);
	free(dir);
}

/*
 * 8 files of 4 MiB, each holding one line of big(): the first 4 (16 MiB,
 * the answer's budget) are read, the others answered with the reason.
 */
static void test_source_text_budget(void **state)
{
	struct store_head *h = store_head_new();
	struct sym_srcroot *root = NULL;
	struct model_profile p;
	struct prof_err err;
	char *dir = tl_tmpdir("source-budget"), file[32];
	size_t have = 0, over = 0;

	(void)state;
	qh_init(&p, "big", false);
	uint32_t m = tl_fn_loc(&p, "main", 4);
	for (int i = 0; i < 8; i++) {
		snprintf(file, sizeof(file), "b%d.c", i);
		assert_int_equal(tl_sh("yes | head -c %zu >'%s/%s'", (size_t)SYM_SRCROOT_MAX_FILE,
				       dir, file),
				 0);
		uint32_t s[2] = { m, loc_at(&p, 0, 0x100 + (uint64_t)i, "big", file, 1) };
		tl_sample_locs(&p, s, 2, 10 - i, T0, NULL, 0);
	}
	qh_head_add(h, &p);
	prof_err_init(&err);
	assert_int_equal(sym_srcroot_new(dir, &root, &err), 0);

	struct qh_args a = { { "type", CPU, "query", "{}", "function", "big", NULL } };
	json_t *j = source_ok(h, &a, root), *f;
	size_t i;

	json_array_foreach(json_object_get(j, "files"), i, f)
	{
		if (!strcmp(json_string_value(json_object_get(f, "source")), "available"))
			have++;
		else if (strstr(json_string_value(json_object_get(f, "reason")),
				"source files are over 16 MiB"))
			over++;
	}
	assert_int_equal(have, QUERY_SOURCE_MAX_TEXT_BYTES / SYM_SRCROOT_MAX_FILE);
	assert_int_equal(over, 8 - have);
	json_decref(j);
	sym_srcroot_free(root);
	store_head_free(h);
	tl_rmdir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_source_self_total_per_line_recursion_once),
		cmocka_unit_test(test_source_inlined_callee_on_calling_line),
		cmocka_unit_test(test_source_two_builds_apart),
		cmocka_unit_test(test_source_text_from_root),
		cmocka_unit_test(test_source_text_budget),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
