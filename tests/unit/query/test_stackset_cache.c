// SPDX-License-Identifier: Apache-2.0
/*
 * test_stackset_cache.c - the stack set's process-wide translation cache
 * (query/stackset_cache.c) and what collection takes from the selected
 * data: a source translated once and reused while the head grows,
 * locations shared by sources of one mapping and not confused with
 * another's, names that outlive the cache; a function's source file and
 * line from the queried data only, over a block and the head; and
 * service.name / service_name as one label; every view the same bytes
 * whatever the order the data came in and where it is stored. The rest of the stack set's
 * tests are in test_stackset.c; the helpers both use are in qhelp.h.
 */
#include "unit/query/qhelp.h"

#include "format/pprof.h"
#include "query/export.h"
#include "query/filter.h"
#include "query/flamegraph.h"
#include "query/stackset_int.h"
#include "query/sandwich.h"
#include "query/selector.h"
#include "query/table.h"
#include "unit/testlib.h"

#include <pthread.h>

/* --- the translation cache: reuse, a growing head, reused addresses, pairs, source lines ---- */

/* Flame graph, table and diff of @h as JSON text, through the request layer. */
static void views_text(struct store_head *h, const char *extra_k, const char *extra_v, char **fg,
		       char **tb, char **df)
{
	struct buf out;
	struct prof_err err;
	struct qh_args a = { { "type", CPU, "from", "0", "to", "now", extra_k, extra_v, NULL } };
	struct qh_args d = { { "type", CPU, "a_from", "0", "a_to", "1700000001000", "b_from",
			       "1700000001001", "b_to", "now", extra_k, extra_v, NULL } };

	buf_init(&out, 0);
	assert_int_equal(qh_run(h, "flamegraph", &a, &out, NULL, &err), 0);
	*fg = xstrdup(out.p);
	assert_int_equal(qh_run(h, "table", &a, &out, NULL, &err), 0);
	*tb = xstrdup(out.p);
	assert_int_equal(qh_run(h, "diff", &d, &out, NULL, &err), 0);
	*df = xstrdup(out.p);
	buf_release(&out);
}

static void test_translation_cache(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct query_stackset ss;
	struct query_ss_cache_stats c0, c1;
	char *fg[2], *tb[2], *df[2];

	(void)state;
	query_stackset_cache_clear();
	qh_init(&p, "api", false);
	/* work() lives in src/work.c from line 42 (pprof Function.start_line). */
	struct model_line ln = { model_function_intern(&p, model_intern(&p, "work"), 0,
						       model_intern(&p, "src/work.c"), 42),
				 47, 0 };
	uint32_t locs[2] = { tl_fn_loc(&p, "main", 4), model_location_add(&p, 0, 0x40, &ln, 1) };
	tl_sample_locs(&p, locs, 2, 30, T0, NULL, 0);
	tl_sample(&p, "main;a;b", 10, T0);
	tl_sample(&p, "main;a;c", 5, T0 + 2000000000LL);
	qh_head_add(h, &p);

	qh_collect_ok(h, NULL, &ss);
	assert_int_equal(qh_stack_value(&ss, "main;a;b"), 10);
	assert_int_equal(qh_stack_value(&ss, "main;work"), 30);
	const struct query_ss_srcloc *sl =
		query_stackset_srcloc(&ss, strtab_find(&ss.names, "work", 4));
	assert_non_null(sl);
	assert_string_equal(ss.names.s[sl->file], "src/work.c");
	assert_int_equal(sl->line, 42);
	query_stackset_release(&ss);

	/* Again: served from the cache, same answer. */
	query_stackset_cache_stats(&c0);
	qh_collect_ok(h, NULL, &ss);
	query_stackset_cache_stats(&c1);
	assert_int_equal(c1.hits, c0.hits + 1);
	assert_int_equal(c1.misses, c0.misses);
	assert_int_equal(ss.total, 45);
	assert_int_equal(qh_stack_value(&ss, "main;a;c"), 5);
	query_stackset_release(&ss);

	/* The head grows: only its new stacks are translated, old ones keep their names. */
	qh_init(&p, "api", false);
	tl_sample(&p, "main;a;d", 7, T0 + 3000000000LL);
	qh_head_add(h, &p);
	qh_collect_ok(h, NULL, &ss);
	assert_int_equal(ss.total, 52);
	assert_int_equal(qh_stack_value(&ss, "main;a;d"), 7);
	assert_int_equal(qh_stack_value(&ss, "main;a;b"), 10);
	query_stackset_release(&ss);

	/* A stack filter on the cached path. */
	struct query_filter f;
	struct prof_err err;
	prof_err_init(&err);
	assert_int_equal(query_filter_init(&f, "^[cd]$", NULL, NULL, &err), 0);
	qh_collect_ok(h, &f, &ss);
	assert_int_equal(ss.total, 12);
	assert_int_equal(ss.filtered_rows, 2);
	assert_int_equal(ss.filtered_value, 40);
	query_filter_release(&f);
	query_stackset_release(&ss);

	/* Cached and uncached (a frame filter hiding nothing) views agree byte for byte. */
	views_text(h, NULL, NULL, &fg[0], &tb[0], &df[0]);
	views_text(h, "frame_filter", "^nothing$", &fg[1], &tb[1], &df[1]);
	assert_string_equal(fg[0], fg[1]);
	assert_string_equal(tb[0], tb[1]);
	assert_string_equal(df[0], df[1]);
	assert_non_null(strstr(tb[0], "\"name\":\"work\",\"self\":30,\"total\":30,"
				      "\"self_samples\":1,\"total_samples\":1,"
				      "\"file\":\"src/work.c\",\"line\":42}"));
	for (int i = 0; i < 2; i++) {
		free(fg[i]);
		free(tb[i]);
		free(df[i]);
	}

	/* The pair: A in bucket 0, B in bucket 1, one trie. */
	struct store *st;
	struct query_stackset_params pa = { .type = CPU, .from_ns = 0, .to_ns = T0 + 1000000000LL };
	struct query_stackset_params pb = { .type = CPU,
					    .from_ns = T0 + 1000000001LL,
					    .to_ns = INT64_MAX };
	store_open_head(h, &st);
	assert_int_equal(query_stackset_collect_pair(st, &pa, &pb, &ss, &err), 0);
	store_close(st);
	assert_int_equal(ss.nbuckets, 2);
	int64_t side[2] = { 0, 0 };
	for (size_t i = 0; i < ss.entries.n; i++)
		side[ss.entries.v[i].bucket] += ss.entries.v[i].value;
	assert_int_equal(side[0], 40);
	assert_int_equal(side[1], 12);
	query_stackset_release(&ss);
	store_head_free(h);

	/*
	 * Another head, maybe at the same address, with the same shape but other
	 * names: the fingerprint tells them apart.
	 */
	for (int round = 0; round < 3; round++) {
		h = store_head_new();
		qh_init(&p, "api", false);
		tl_sample(&p, round ? "x;y;z" : "main;a;b", 10, T0);
		qh_head_add(h, &p);
		qh_collect_ok(h, NULL, &ss);
		assert_int_equal(qh_stack_value(&ss, round ? "x;y;z" : "main;a;b"), 10);
		query_stackset_release(&ss);
		store_head_free(h);
	}
}

/* A head of two processes' worth of frames: @lib's unsymbolized addresses under main(). */
static struct store_head *lib_head(const char *lib)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct model_mapping mp = { 0 };

	qh_init(&p, "raw", false);
	mp.memory_limit = UINT64_MAX;
	mp.filename = model_intern(&p, lib);
	uint32_t ml = model_mapping_add(&p, &mp);
	uint32_t a1 = model_location_add(&p, ml, 0x10, NULL, 0);
	uint32_t a2 = model_location_add(&p, ml, 0x20, NULL, 0);
	uint32_t bare = model_location_add(&p, 0, 0x99, NULL, 0);
	uint32_t m = tl_fn_loc(&p, "main", 4);
	uint32_t s1[3] = { m, a1, a2 }, s2[2] = { m, bare };
	tl_sample_locs(&p, s1, 3, 5, T0, NULL, 0);
	tl_sample_locs(&p, s2, 2, 1, T0, NULL, 0);
	qh_head_add(h, &p);
	return h;
}

static uint32_t name_id(const struct query_stackset *ss, const char *s)
{
	return strtab_find(&ss->names, s, strlen(s));
}

/*
 * The location cache (sources with the same locations translate them
 * once, a different mapping is not confused with it) and sets that share
 * the cache's names outliving it (run under ASan by `make test`).
 */
static void test_translation_cache_locations_and_shared_names(void **state)
{
	struct store_head *h1 = lib_head("/nonexistent/libfoo.so.1");
	struct store_head *h2 = lib_head("/nonexistent/libfoo.so.1");
	struct store_head *h3 = lib_head("/nonexistent/libbar.so");
	struct query_stackset ss, ss2;
	struct query_ss_cache_stats c0, c1;
	struct query_table t;
	struct query_table_opts o = { 0 };
	struct prof_err err;

	(void)state;
	query_stackset_cache_clear();
	qh_collect_ok(h1, NULL, &ss);
	query_stackset_cache_stats(&c0);
	assert_int_equal(c0.locs, 4);
	qh_collect_ok(h2, NULL, &ss2);
	query_stackset_cache_stats(&c1);
	/* h2's four locations (main, two addresses, a bare address) come from h1's. */
	assert_int_equal(c1.loc_hits - c0.loc_hits, 4);
	assert_int_equal(c1.locs, 4);
	assert_int_equal(c1.misses, c0.misses + 1);
	assert_int_equal(qh_stack_value(&ss2, "main;libfoo.so.1+0x10;libfoo.so.1+0x20"), 5);
	assert_int_equal(qh_stack_value(&ss2, "main;0x99"), 1);
	assert_int_equal(ss2.unsymbolized, 3);
	query_stackset_release(&ss2);

	/* Same addresses in another file: other names, other raw records. */
	qh_collect_ok(h3, NULL, &ss2);
	assert_int_equal(qh_stack_value(&ss2, "main;libbar.so+0x10;libbar.so+0x20"), 5);
	assert_int_equal(query_stackset_fn_name(&ss2, name_id(&ss2, "libbar.so+0x20")),
			 name_id(&ss2, "[libbar.so]"));
	assert_int_equal(ss2.unsymbolized, 3);
	query_stackset_release(&ss2);

	/* @ss borrowed h1's names from the cache: emptying the cache leaves them readable. */
	query_stackset_cache_clear();
	qh_collect_ok(h3, NULL, &ss2); /* refills the cache: new trie, new string chunks */
	assert_int_equal(qh_stack_value(&ss, "main;libfoo.so.1+0x10;libfoo.so.1+0x20"), 5);
	assert_int_equal(query_stackset_fn_name(&ss, name_id(&ss, "libfoo.so.1+0x10")),
			 name_id(&ss, "[libfoo.so.1]"));
	uint32_t fresh = query_stackset_name(&ss, "fresh", 5);
	assert_int_equal(name_id(&ss, "fresh"), fresh);
	assert_string_equal(ss.names.s[name_id(&ss, "main")], "main");
	prof_err_init(&err);
	assert_int_equal(query_table_build(&ss, &o, &t, &err), 0);
	assert_int_equal(t.total, 6);
	const struct query_table_row *r = qh_row_of(&t, &ss, "[libfoo.so.1]");
	assert_non_null(r);
	assert_int_equal(r->total, 5);
	query_table_release(&t);
	query_stackset_release(&ss);
	query_stackset_release(&ss2);
	store_head_free(h1);
	store_head_free(h2);
	store_head_free(h3);
}

/* A profile of service @svc: main;work, work() in @file (NULL: none) from @line. */
static void work_profile(struct model_profile *pp, const char *svc, const char *file, int64_t line,
			 int64_t value)
{
	struct model_profile p;

	qh_init(&p, svc, false);
	uint32_t fn = model_function_intern(&p, model_intern(&p, "work"), 0,
					    file ? model_intern(&p, file) : 0, line);
	struct model_line ln = { fn, line + 3, 0 };
	uint32_t locs[2] = { tl_fn_loc(&p, "main", 4), model_location_add(&p, 0, 0, &ln, 1) };
	tl_sample_locs(&p, locs, 2, value, T0, NULL, 0);
	*pp = p;
}

static void add_work(struct store_head *h, const char *svc, const char *file, int64_t line,
		     int64_t value)
{
	struct model_profile p;

	work_profile(&p, svc, file, line, value);
	qh_head_add(h, &p);
}

/* The table of @st for @selector (@frame_filter: NULL, or one that hides nothing). */
static char *table_text(struct store *st, const char *selector, const char *frame_filter)
{
	struct qh_args a = { { "type", CPU, "query", selector, "from", "1699999999000", "to",
			       "1700000001000", frame_filter ? "frame_filter" : NULL, frame_filter,
			       NULL } };
	struct query_env env = { st, NULL, T0MS + 3600 * 1000, NULL };
	struct buf out;
	struct prof_err err;
	const char *ct;

	buf_init(&out, 0);
	prof_err_init(&err);
	if (query_request_run(&env, "table", qh_arg, &a, &out, &ct, &err))
		fail_msg("%s: %s", selector, err.msg);
	char *s = xstrdup(out.p);
	buf_release(&out);
	return s;
}

/* The table row of work() in @selector's table must end in @want (JSON text of file and line). */
static void expect_work_st(struct store *st, const char *selector, const char *want)
{
	for (int uncached = 0; uncached < 2; uncached++) {
		char *t = table_text(st, selector, uncached ? "^nothing$" : NULL);
		const char *r = strstr(t, "{\"name\":\"work\"");

		if (!r)
			fail_msg("%s: no row work in %s", selector, t);
		const char *end = strchr(r, '}');
		if (strncmp(end - strlen(want), want, strlen(want)) ||
		    (!*want && strstr(r, "\"file\"") && strstr(r, "\"file\"") < end))
			fail_msg("%s (%s): want ...%s}, got %.*s", selector,
				 uncached ? "uncached" : "cached", want, (int)(end - r + 1), r);
		free(t);
	}
}

static void expect_work(struct store_head *h, const char *selector, const char *want)
{
	struct store *st;

	store_open_head(h, &st);
	expect_work_st(st, selector, want);
	store_close(st);
}

/*
 * A function's source file (and line) comes from the queried data, never
 * from another series or store that the process-wide translation cache
 * happened to translate first; when the selection holds it in several
 * files, the first in stack order wins (the cached and uncached paths
 * agree).
 */
static void test_srcloc_from_the_selected_data(void **state)
{
	struct store_head *h = store_head_new(), *h2 = store_head_new(), *h3 = store_head_new();

	(void)state;
	query_stackset_cache_clear();
	add_work(h, "a", "a.c", 10, 5);
	add_work(h, "b", "b.c", 20, 7);
	expect_work(h, "{service.name=\"b\"}", "\"total_samples\":1,\"file\":\"b.c\",\"line\":20");
	expect_work(h, "{service.name=\"a\"}", "\"total_samples\":1,\"file\":\"a.c\",\"line\":10");
	expect_work(h, "{}", "\"total_samples\":2,\"file\":\"a.c\",\"line\":10");
	/* Another store (a dataset of its own): work() without a file, or in c.c. */
	add_work(h2, "b", NULL, 0, 3);
	expect_work(h2, "{}", "\"total_samples\":1");
	add_work(h3, "a", "c.c", 30, 4);
	expect_work(h3, "{service.name=\"a\"}", "\"total_samples\":1,\"file\":\"c.c\",\"line\":30");
	/* And again, with every file in the cache: still each selection's own. */
	expect_work(h2, "{}", "\"total_samples\":1");
	expect_work(h, "{service.name=\"b\"}", "\"total_samples\":1,\"file\":\"b.c\",\"line\":20");
	/* The head grows by a series of a third file; b's answer does not move. */
	add_work(h, "c", "z.c", 1, 1);
	expect_work(h, "{service.name=\"b\"}", "\"total_samples\":1,\"file\":\"b.c\",\"line\":20");
	expect_work(h, "{service.name=\"c\"}", "\"total_samples\":1,\"file\":\"z.c\",\"line\":1");
	store_head_free(h);
	store_head_free(h2);
	store_head_free(h3);
}

/*
 * The same over two sources, a block (a: a.c) and the head (b: b.c): the
 * head's translation gives work() its second variant after the block was
 * summed, so the query runs once more, through the now filled cache.
 */
static void test_srcloc_over_a_block_and_the_head(void **state)
{
	char *dir = tl_tmpdir("qsrcloc");
	struct store_options o = tl_opts();
	struct store *st = tl_open(dir, &o);
	struct model_profile p;
	struct prof_err err;
	struct query_ss_cache_stats c0, c1;

	(void)state;
	prof_err_init(&err);
	work_profile(&p, "a", "a.c", 10, 5);
	assert_int_equal(tl_ingest(st, &p), 0);
	model_profile_release(&p);
	assert_int_equal(store_flush(st, &err), 0);
	work_profile(&p, "b", "b.c", 20, 7);
	assert_int_equal(tl_ingest(st, &p), 0);
	model_profile_release(&p);

	query_stackset_cache_clear();
	query_stackset_cache_stats(&c0);
	char *t = table_text(st, "{}", NULL);
	query_stackset_cache_stats(&c1);
	/* Both: the block comes first in the scan. */
	assert_non_null(strstr(t, "\"name\":\"work\",\"self\":12,\"total\":12,\"self_samples\":2,"
				  "\"total_samples\":2,\"file\":\"a.c\",\"line\":10}"));
	free(t);
	/* Block and head translated, then both served by the cache on the second try. */
	assert_int_equal(c1.misses - c0.misses, 2);
	assert_int_equal(c1.hits - c0.hits, 2);
	expect_work_st(st, "{}", "\"total_samples\":2,\"file\":\"a.c\",\"line\":10");
	expect_work_st(st, "{service.name=\"b\"}",
		       "\"total_samples\":1,\"file\":\"b.c\",\"line\":20");
	expect_work_st(st, "{service.name=\"a\"}",
		       "\"total_samples\":1,\"file\":\"a.c\",\"line\":10");
	store_close(st);
	tl_rmdir(dir);
	free(dir);
}

/* A work() profile of a series named by @key = @svc (no other label). */
static void keyed_profile(struct model_profile *p, const char *key, const char *svc, int64_t value)
{
	work_profile(p, NULL, NULL, 0, value);
	model_attr_add_str(p, key, svc);
}

/* The JSON answer of @view (labels, label_values) of @st as text. */
static char *labels_text(struct store *st, const char *name, const char *selector)
{
	struct qh_args a = { { "from", "1699999999000", "to", "1700000001000", "query", selector,
			       name ? "name" : NULL, name, NULL } };
	struct query_env env = { st, NULL, T0MS + 3600 * 1000, NULL };
	struct buf out;
	struct prof_err err;
	const char *ct;

	buf_init(&out, 0);
	prof_err_init(&err);
	if (query_request_run(&env, name ? "label_values" : "labels", qh_arg, &a, &out, &ct, &err))
		fail_msg("%s: %s", selector, err.msg);
	char *r = xstrdup(out.p);
	buf_release(&out);
	return r;
}

/*
 * service_name (Pyroscope's key, stored by earlier versions) and
 * service.name are one label: a block holding one series under each key
 * with the same value "shop" (so no one postings list has both), another
 * service "old" under service_name only, and a head with "new" under
 * service.name. Selectors on either key select both shop series, label
 * discovery lists one key and each value once.
 */
static void test_service_name_and_service_dot_name_are_one_label(void **state)
{
	char *dir = tl_tmpdir("qsvcname");
	struct store_options o = tl_opts();
	struct store *st = tl_open(dir, &o);
	struct model_profile p;
	struct prof_err err;
	char *t;

	(void)state;
	prof_err_init(&err);
	keyed_profile(&p, "service_name", "shop", 5);
	assert_int_equal(tl_ingest(st, &p), 0);
	model_profile_release(&p);
	keyed_profile(&p, "service.name", "shop", 7);
	assert_int_equal(tl_ingest(st, &p), 0);
	model_profile_release(&p);
	keyed_profile(&p, "service_name", "old", 11);
	assert_int_equal(tl_ingest(st, &p), 0);
	model_profile_release(&p);
	assert_int_equal(store_flush(st, &err), 0);
	keyed_profile(&p, "service.name", "new", 13);
	assert_int_equal(tl_ingest(st, &p), 0);
	model_profile_release(&p);

	const char *sel[] = { "{service.name=\"shop\"}", "{service_name=\"shop\"}",
			      "{service.name=~\"sh.p\"}" };
	for (size_t i = 0; i < PROF_ARRAY_SIZE(sel); i++) {
		t = table_text(st, sel[i], NULL);
		if (!strstr(t, "\"name\":\"work\",\"self\":12,"))
			fail_msg("%s: want work self 12 (both keys), got %s", sel[i], t);
		free(t);
	}
	t = table_text(st, "{service.name=\"old\"}", NULL);
	assert_non_null(strstr(t, "\"name\":\"work\",\"self\":11,"));
	free(t);
	t = table_text(st, "{service_name=\"new\"}", NULL);
	assert_non_null(strstr(t, "\"name\":\"work\",\"self\":13,"));
	free(t);
	t = table_text(st, "{service.name!=\"shop\"}", NULL);
	assert_non_null(strstr(t, "\"name\":\"work\",\"self\":24,"));
	free(t);

	t = labels_text(st, NULL, "{}");
	assert_string_equal(t, "[\"service.name\"]\n");
	free(t);
	t = labels_text(st, "service.name", "{}");
	assert_string_equal(t, "[\"new\",\"old\",\"shop\"]\n");
	free(t);
	t = labels_text(st, "service_name", "{service_name=~\"o.*\"}");
	assert_string_equal(t, "[\"old\"]\n");
	free(t);
	/* group_by on either key: one group per service, shop's two series in one. */
	for (int k = 0; k < 2; k++) {
		struct qh_args a = { { "type", CPU, "from", "1699999999000", "to", "1700000001000",
				       "group_by", k ? "service_name" : "service.name", "limit",
				       "0", NULL } };
		struct query_env env = { st, NULL, T0MS + 3600 * 1000, NULL };
		struct buf out;
		const char *ct;

		buf_init(&out, 0);
		assert_int_equal(query_request_run(&env, "series", qh_arg, &a, &out, &ct, &err), 0);
		json_t *j = json_loads(out.p, 0, NULL), *g;
		size_t i, n = 0;

		json_array_foreach(json_object_get(j, "series"), i, g)
		{
			const char *v = json_string_value(json_object_get(
				json_object_get(g, "labels"), k ? "service_name" : "service.name"));
			int64_t tot = json_integer_value(json_object_get(g, "total"));

			assert_non_null(v);
			n++;
			assert_true((!strcmp(v, "shop") && tot == 12) ||
				    (!strcmp(v, "old") && tot == 11) ||
				    (!strcmp(v, "new") && tot == 13));
		}
		assert_int_equal(n, 3);
		json_decref(j);
		buf_release(&out);
	}
	store_close(st);
	tl_rmdir(dir);
	free(dir);
}

/* --- the same data in another order, or stored otherwise, gives the same bytes ------------ */

/* A frame: function @name in @file (NULL: none) starting at @start, at @line. */
struct det_frame {
	const char *name, *file;
	int64_t start, line;
};

/* A sample: @n frames root first, of @value at T0 + @ms. */
struct det_sample {
	struct det_frame f[4];
	uint32_t n;
	int64_t value, ms;
};

/*
 * Ties everywhere: equal values under one parent and across stacks, two
 * samples at one time; work() in a.c (line 10) for service a and in b.c
 * (line 20) for b, helper() at lines 30 and 12 of h.c without a start
 * line, tie() whose start line the data gives (40).
 */
static const struct det_sample det_a[] = {
	{ { { "main", "m.c", 1, 2 }, { "work", "a.c", 10, 13 } }, 2, 5, 0 },
	{ { { "main", "m.c", 1, 2 }, { "helper", "h.c", 0, 30 } }, 2, 5, 0 },
	{ { { "main", "m.c", 1, 3 }, { "zeta", NULL, 0, 0 }, { "helper", "h.c", 0, 12 } },
	  3,
	  5,
	  10 },
	{ { { "main", "m.c", 1, 4 }, { "alpha", NULL, 0, 0 }, { "tie", "t.c", 40, 44 } },
	  3,
	  5,
	  10 },
	{ { { "main", "m.c", 1, 4 }, { "alpha", NULL, 0, 0 }, { "tie", "t.c", 40, 41 } },
	  3,
	  2,
	  20 },
};
static const struct det_sample det_b[] = {
	{ { { "main", "m.c", 1, 2 }, { "work", "b.c", 20, 23 } }, 2, 5, 0 },
	{ { { "main", "m.c", 1, 2 }, { "beta", NULL, 0, 0 }, { "work", "b.c", 20, 22 } }, 3, 5, 0 },
	{ { { "main", "m.c", 1, 5 }, { "alpha", NULL, 0, 0 } }, 2, 5, 10 },
};

/* Service @svc's profile of @s[@n], in that order or (@reverse) the other. */
static void det_profile(struct model_profile *p, const char *svc, const struct det_sample *s,
			size_t n, bool reverse)
{
	qh_init(p, svc, false);
	for (size_t k = 0; k < n; k++) {
		const struct det_sample *d = &s[reverse ? n - 1 - k : k];
		uint32_t locs[4];

		for (uint32_t j = 0; j < d->n; j++) {
			const struct det_frame *f = &d->f[j];
			uint32_t fn = model_function_intern(p, model_intern(p, f->name), 0,
							    f->file ? model_intern(p, f->file) : 0,
							    f->start);
			struct model_line ln = { fn, f->line, 0 };

			locs[j] = model_location_add(p, 0, 0, &ln, 1);
		}
		tl_sample_locs(p, locs, d->n, d->value, T0 + d->ms * 1000000, NULL, 0);
	}
}

static const char *const det_views[][7] = {
	{ "table", NULL },
	{ "table", "granularity", "frame", NULL },
	{ "flamegraph", NULL },
	{ "flamegraph", "max_nodes", "4", NULL },
	{ "flamegraph", "invert", "true", "max_nodes", "3", NULL },
	{ "flamechart", "group_by", "service.name", NULL },
	{ "export_folded", NULL },
	{ "export_pprof", NULL },
	{ "diff", "a_from", "1699999999000", "a_to", "1700000000005", NULL },
};

/* View @k of @st (@uncached: through a frame filter that hides nothing) as bytes. */
static char *det_view(struct store *st, size_t k, bool uncached, size_t *len)
{
	struct qh_args a = { { "type", CPU, "from", "1699999999000", "to", "1700000001000",
			       NULL } };
	size_t at = 6;
	struct query_env env = { st, NULL, T0MS + 3600 * 1000, NULL };
	struct buf out;
	struct prof_err err;
	const char *ct;

	for (size_t i = 1; det_views[k][i]; i++)
		a.kv[at++] = det_views[k][i];
	if (!strcmp(det_views[k][0], "diff")) {
		const char *b[] = { "b_from", "1700000000005", "b_to", "1700000001000" };

		for (size_t i = 0; i < 4; i++)
			a.kv[at++] = b[i];
	}
	if (uncached) {
		a.kv[at++] = "frame_filter";
		a.kv[at++] = "^nothing$";
	}
	a.kv[at] = NULL;
	buf_init(&out, 0);
	prof_err_init(&err);
	if (query_request_run(&env, det_views[k][0], qh_arg, &a, &out, &ct, &err))
		fail_msg("%s: %s", det_views[k][0], err.msg);
	char *r = xmalloc(out.len + 1);
	memcpy(r, out.p, out.len);
	r[out.len] = '\0';
	*len = out.len;
	buf_release(&out);
	return r;
}

/*
 * Every view is a function of the data: the same samples ingested in two
 * orders (services and samples reversed) give byte-identical answers, from
 * the head and after the head is flushed to a block, through the
 * translation cache and around it (a frame filter that hides nothing).
 * Ties are broken by content and a function's file:line is chosen by
 * content: work() in a.c (before b.c) at its start line 10, helper() at
 * its lowest line 12, tie() at its start line 40.
 */
static void test_views_do_not_depend_on_order_or_storage(void **state)
{
	char *ref[PROF_ARRAY_SIZE(det_views)] = { 0 };
	size_t reflen[PROF_ARRAY_SIZE(det_views)] = { 0 };

	(void)state;
	for (int order = 0; order < 2; order++) {
		char *dir = tl_tmpdir("qdet");
		struct store_options o = tl_opts();
		struct store *st = tl_open(dir, &o);
		struct model_profile p;
		struct prof_err err;

		prof_err_init(&err);
		for (int i = 0; i < 2; i++) {
			bool a = (i == 0) == (order == 0);

			det_profile(&p, a ? "a" : "b", a ? det_a : det_b,
				    a ? PROF_ARRAY_SIZE(det_a) : PROF_ARRAY_SIZE(det_b), order);
			assert_int_equal(tl_ingest(st, &p), 0);
			model_profile_release(&p);
		}
		for (int stored = 0; stored < 2; stored++) {
			if (stored)
				assert_int_equal(store_flush(st, &err), 0);
			for (size_t k = 0; k < PROF_ARRAY_SIZE(det_views); k++) {
				for (int uncached = 0; uncached < 2; uncached++) {
					size_t len;
					char *v = det_view(st, k, uncached, &len);

					if (!ref[k]) {
						ref[k] = v;
						reflen[k] = len;
						continue;
					}
					if (len != reflen[k] || memcmp(v, ref[k], len))
						fail_msg("%s %s: order %d, %s, %s: %.*s\n"
							 "differs from: %.*s",
							 det_views[k][0],
							 det_views[k][1] ? det_views[k][1] : "",
							 order, stored ? "block" : "head",
							 uncached ? "uncached" : "cached",
							 (int)PROF_MIN(len, 2000), v,
							 (int)PROF_MIN(reflen[k], 2000), ref[k]);
					free(v);
				}
			}
		}
		store_close(st);
		tl_rmdir(dir);
		free(dir);
	}
	assert_non_null(strstr(ref[0], "{\"name\":\"work\",\"self\":15,\"total\":15,"
				       "\"self_samples\":3,\"total_samples\":3,"
				       "\"file\":\"a.c\",\"line\":10}"));
	assert_non_null(strstr(ref[0], "\"name\":\"helper\",\"self\":10,\"total\":10,"
				       "\"self_samples\":2,\"total_samples\":2,"
				       "\"file\":\"h.c\",\"line\":12}"));
	assert_non_null(strstr(ref[0], "\"file\":\"t.c\",\"line\":40}"));
	for (size_t k = 0; k < PROF_ARRAY_SIZE(det_views); k++)
		free(ref[k]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_translation_cache),
		cmocka_unit_test(test_translation_cache_locations_and_shared_names),
		cmocka_unit_test(test_srcloc_from_the_selected_data),
		cmocka_unit_test(test_srcloc_over_a_block_and_the_head),
		cmocka_unit_test(test_service_name_and_service_dot_name_are_one_label),
		cmocka_unit_test(test_views_do_not_depend_on_order_or_storage),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
