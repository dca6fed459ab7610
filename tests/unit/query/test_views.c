// SPDX-License-Identifier: Apache-2.0
/*
 * test_views.c - the views as the API serves them (query/request.h) on
 * handmade profiles in a store head: time series (sums and rates per
 * step, top-N groups plus "other", gauge types averaged over snapshots,
 * a derived metric whose hot function switches on and off as a square
 * wave, self vs total under recursion), diff (identical selections give
 * all-zero deltas, different types refused in words, empty sides without
 * division by zero, appeared/disappeared stacks, the z statistic), the
 * flame chart (adjacent identical stacks merged, a gap splits a span,
 * lanes per group), labels and values scoped by selector, table and
 * flame graph parameters, and bad parameters answered -EINVAL naming the
 * parameter.
 */
#include "unit/query/qhelp.h"

#include "query/diff.h"

#include <math.h>

#define SEC 1000000000LL

static json_t *run_ok(struct store_head *h, const char *view, struct qh_args *a)
{
	struct buf out;
	struct prof_err err;
	json_t *j;

	buf_init(&out, 0);
	int rc = qh_run(h, view, a, &out, &j, &err);
	if (rc)
		fail_msg("%s: rc %d: %s", view, rc, err.msg);
	buf_release(&out);
	return j;
}

/* Run @view expecting @want_rc and an error message containing @want_msg. */
static void run_fails(struct store_head *h, const char *view, struct qh_args *a, int want_rc,
		      const char *want_msg)
{
	struct buf out;
	struct prof_err err;

	buf_init(&out, 0);
	int rc = qh_run(h, view, a, &out, NULL, &err);
	if (rc != want_rc || !strstr(err.msg, want_msg))
		fail_msg("%s: rc %d (want %d), message '%s' (want '%s')", view, rc, want_rc,
			 err.msg, want_msg);
	buf_release(&out);
}

static int64_t arr_int(json_t *arr, size_t i)
{
	json_t *v = json_array_get(arr, i);

	return json_is_integer(v) ? json_integer_value(v) : (int64_t)llround(json_number_value(v));
}

/* --- series -------------------------------------------------------------------------------- */

/* Three services over 4 one-second steps from T0. */
static struct store_head *series_head(void)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	static const struct {
		const char *svc;
		int64_t v[4];
	} data[] = { { "api", { 10, 20, 30, 40 } },
		     { "db", { 5, 0, 5, 0 } },
		     { "cache", { 1, 1, 1, 1 } } };

	for (size_t s = 0; s < PROF_ARRAY_SIZE(data); s++) {
		qh_init(&p, data[s].svc, false);
		for (int b = 0; b < 4; b++)
			if (data[s].v[b])
				tl_sample(&p, "main;work", data[s].v[b], T0 + b * SEC + 100);
		qh_head_add(h, &p);
	}
	return h;
}

static void test_series_sum_by_topn_other_and_rates(void **state)
{
	struct store_head *h = series_head();
	char to[32];

	(void)state;
	snprintf(to, sizeof(to), "%lld", (long long)(T0MS + 3999));
	struct qh_args a = { { "type", CPU, "from", "1700000000000", "to", to, "step", "1s",
			       "group_by", "service.name", "limit", "2", NULL } };
	json_t *j = run_ok(h, "series", &a);

	assert_true(json_is_true(json_object_get(j, "cumulative")));
	assert_string_equal(json_string_value(json_object_get(j, "aggregation")), "sum");
	json_t *ts = json_object_get(j, "timestamps");
	assert_int_equal(json_array_size(ts), 4);
	assert_int_equal(arr_int(ts, 1), T0MS + 1000);
	json_t *series = json_object_get(j, "series");
	assert_int_equal(json_array_size(series), 2);
	json_t *api = json_array_get(series, 0), *db = json_array_get(series, 1);
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(api, "labels"), "service.name")),
		"api");
	assert_int_equal(qh_int(api, "total"), 100);
	json_t *v = json_object_get(api, "values");
	assert_int_equal(arr_int(v, 0), 10);
	assert_int_equal(arr_int(v, 3), 40);
	/* Rate: 40 ns in a 1 s step = 40 ns/s. */
	assert_true(fabs(json_number_value(json_array_get(json_object_get(api, "rates"), 3)) - 40) <
		    1e-9);
	assert_int_equal(qh_int(db, "total"), 10);
	json_t *other = json_object_get(j, "other");
	assert_int_equal(qh_int(other, "groups"), 1);
	assert_int_equal(arr_int(json_object_get(other, "values"), 2), 1);
	json_decref(j);

	/* A 2 s step sums pairs; rates divide by 2. */
	a.kv[7] = "2s";
	a.kv[11] = "0"; /* limit 0 = all groups */
	j = run_ok(h, "series", &a);
	series = json_object_get(j, "series");
	assert_int_equal(json_array_size(series), 3);
	assert_true(json_is_null(json_object_get(j, "other")));
	v = json_object_get(json_array_get(series, 0), "values");
	assert_int_equal(arr_int(v, 0), 30);
	assert_int_equal(arr_int(v, 1), 70);
	assert_true(fabs(json_number_value(json_array_get(
				 json_object_get(json_array_get(series, 0), "rates"), 1)) -
			 35) < 1e-9);
	json_decref(j);

	/* An empty range: one series of zeros, no error. */
	struct qh_args e = { { "type", CPU, "from", "1000", "to", "5000", "step", "1s", NULL } };
	j = run_ok(h, "series", &e);
	series = json_object_get(j, "series");
	assert_int_equal(json_array_size(series), 1);
	assert_int_equal(arr_int(json_object_get(json_array_get(series, 0), "values"), 0), 0);
	json_decref(j);
	store_head_free(h);
}

static void test_series_gauge_averages_snapshots(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	char to[32];

	(void)state;
	/* Heap in use of two processes; A snapshots twice per step, B once. */
	qh_init(&p, "a", true);
	tl_sample(&p, "main;alloc", 100, T0);
	tl_sample(&p, "main;alloc", 300, T0 + SEC / 2);
	tl_sample(&p, "main;alloc", 500, T0 + SEC);
	qh_head_add(h, &p);
	qh_init(&p, "b", true);
	tl_sample(&p, "main;cache", 1000, T0);
	qh_head_add(h, &p);
	snprintf(to, sizeof(to), "%lld", (long long)(T0MS + 1999));
	struct qh_args a = { { "type", HEAP, "from", "1700000000000", "to", to, "step", "1s",
			       NULL } };
	json_t *j = run_ok(h, "series", &a);

	assert_true(json_is_false(json_object_get(j, "cumulative")));
	assert_string_equal(json_string_value(json_object_get(j, "aggregation")), "average");
	json_t *v = json_object_get(json_array_get(json_object_get(j, "series"), 0), "values");
	/* Step 0: avg(100, 300) + 1000 = 1200; step 1: 500. */
	assert_true(fabs(json_number_value(json_array_get(v, 0)) - 1200) < 1e-6);
	assert_true(fabs(json_number_value(json_array_get(v, 1)) - 500) < 1e-6);
	assert_null(json_object_get(json_array_get(json_object_get(j, "series"), 0), "rates"));
	json_decref(j);
	store_head_free(h);
}

/*
 * Six heap snapshots of one process and one of another: every view shows
 * the mean snapshot per series, summed over series (100 + 50 + 1000), as
 * the series view does per step, never the sum of the six snapshots.
 */
static void test_gauge_views_show_the_mean_snapshot(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct buf out;
	struct prof_err err;
	char to[32];

	(void)state;
	for (int k = 0; k < 6; k++) {
		qh_init(&p, "a", true);
		p.time_ns = T0 + k * 10 * SEC;
		tl_sample(&p, "main;alloc", 90 + 4 * k, p.time_ns); /* 90..110: mean 100 */
		tl_sample(&p, "main;cache", 50, p.time_ns);
		qh_head_add(h, &p);
	}
	qh_init(&p, "b", true);
	tl_sample(&p, "main;cache", 1000, T0);
	qh_head_add(h, &p);
	snprintf(to, sizeof(to), "%lld", (long long)(T0MS + 59999));
	struct qh_args a = { { "type", HEAP, "from", "1700000000000", "to", to, NULL } };

	json_t *j = run_ok(h, "flamegraph", &a);
	assert_int_equal(qh_int(j, "total"), 1150);
	assert_int_equal(qh_int(qh_path(json_object_get(j, "root"), "main;alloc"), "total"), 100);
	assert_int_equal(qh_int(qh_path(json_object_get(j, "root"), "main;cache"), "total"), 1050);
	json_decref(j);

	j = run_ok(h, "table", &a);
	json_t *rows = json_object_get(j, "rows");
	assert_int_equal(qh_int(j, "total"), 1150);
	for (size_t i = 0; i < json_array_size(rows); i++) {
		json_t *r = json_array_get(rows, i);
		const char *name = json_string_value(json_object_get(r, "name"));

		if (!strcmp(name, "alloc"))
			assert_int_equal(qh_int(r, "self"), 100);
		else if (!strcmp(name, "cache"))
			assert_int_equal(qh_int(r, "self"), 1050);
		else
			assert_int_equal(qh_int(r, "total"), 1150); /* main */
	}
	json_decref(j);

	/* One snapshot's selector: the mean of its six. */
	struct qh_args one = { { "type", HEAP, "from", "1700000000000", "to", to, "query",
				 "{service.name=\"a\"}", NULL } };
	j = run_ok(h, "flamegraph", &one);
	assert_int_equal(qh_int(j, "total"), 150);
	json_decref(j);

	/* The series view over one step of the whole range agrees. */
	struct qh_args sa = { { "type", HEAP, "from", "1700000000000", "to", to, "step", "60s",
				NULL } };
	j = run_ok(h, "series", &sa);
	json_t *v = json_object_get(json_array_get(json_object_get(j, "series"), 0), "values");
	assert_true(fabs(json_number_value(json_array_get(v, 0)) - 1150) < 1e-6);
	json_decref(j);

	/* And the folded export. */
	buf_init(&out, 0);
	assert_int_equal(qh_run(h, "export_folded", &a, &out, NULL, &err), 0);
	assert_non_null(strstr(out.p, "main;alloc 100\n"));
	assert_non_null(strstr(out.p, "main;cache 1050\n"));
	buf_release(&out);
	store_head_free(h);
}

static void test_series_derived_metric_square_wave(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	char to[32];

	(void)state;
	/* 12 profiles, 10 s apart: hot() runs in the first 2 of every 4 (a 40 s period). */
	for (int k = 0; k < 12; k++) {
		qh_init(&p, "wave", false);
		p.time_ns = T0 + k * 10 * SEC;
		tl_sample(&p, "main;idle", 50, p.time_ns);
		if (k % 4 < 2) {
			tl_sample(&p, "main;hot", 90, p.time_ns);
			tl_sample(&p, "main;hot;hot", 10,
				  p.time_ns); /* recursion: total counts once */
		}
		qh_head_add(h, &p);
	}
	snprintf(to, sizeof(to), "%lld", (long long)(T0MS + 120 * 1000 - 1));
	struct qh_args a = { { "type", CPU, "from", "1700000000000", "to", to, "step", "10s",
			       "function", "hot", "mode", "total", NULL } };
	json_t *j = run_ok(h, "series", &a);
	json_t *v = json_object_get(json_array_get(json_object_get(j, "series"), 0), "values");

	assert_int_equal(json_array_size(v), 12);
	for (int k = 0; k < 12; k++)
		if (arr_int(v, (size_t)k) != (k % 4 < 2 ? 100 : 0))
			fail_msg("step %d: %lld", k, (long long)arr_int(v, (size_t)k));
	assert_string_equal(json_string_value(json_object_get(j, "function")), "hot");
	json_decref(j);
	a.kv[11] = "self";
	j = run_ok(h, "series", &a);
	v = json_object_get(json_array_get(json_object_get(j, "series"), 0), "values");
	assert_int_equal(arr_int(v, 0), 100);
	assert_int_equal(arr_int(v, 2), 0);
	assert_int_equal(arr_int(v, 5), 100);
	json_decref(j);
	a.kv[9] = "idle";
	a.kv[11] = "total";
	j = run_ok(h, "series", &a);
	v = json_object_get(json_array_get(json_object_get(j, "series"), 0), "values");
	for (int k = 0; k < 12; k++)
		assert_int_equal(arr_int(v, (size_t)k), 50);
	json_decref(j);
	store_head_free(h);
}

/* --- diff ------------------------------------------------------------------------------------ */

static struct store_head *diff_head(void)
{
	struct store_head *h = store_head_new();
	struct model_profile p;

	/* Baseline at T0 .. T0+1s, comparison at T0+10s .. +11s. */
	qh_init(&p, "api", false);
	tl_sample(&p, "main;a", 60, T0);
	tl_sample(&p, "main;b", 40, T0 + 1);
	tl_sample(&p, "main;gone", 20, T0 + 2);
	qh_head_add(h, &p);
	qh_init(&p, "api", false);
	tl_sample(&p, "main;a", 60, T0 + 10 * SEC);
	tl_sample(&p, "main;b", 120, T0 + 10 * SEC + 1);
	tl_sample(&p, "main;new;x", 60, T0 + 10 * SEC + 2);
	qh_head_add(h, &p);
	qh_init(&p, "api", true); /* a heap profile: another type */
	tl_sample(&p, "main;alloc", 4096, T0);
	qh_head_add(h, &p);
	return h;
}

static void test_diff_identical_selections_are_all_zero(void **state)
{
	struct store_head *h = diff_head();

	(void)state;
	struct qh_args a = { { "type", CPU, "from", "1700000000000", "to", "1700000020000",
			       NULL } };
	json_t *j = run_ok(h, "diff", &a);
	json_t *root = json_object_get(j, "root");

	assert_int_equal(qh_int(json_object_get(j, "a"), "total"), 360);
	assert_int_equal(qh_int(json_object_get(j, "b"), "total"), 360);
	/* Every node: delta 0, z 0, noise. Walk iteratively. */
	json_t *stack[64];
	size_t n = 0, seen = 0;
	stack[n++] = root;
	while (n) {
		json_t *nd = stack[--n], *c;
		size_t i;

		seen++;
		assert_float_equal(qh_num(nd, "delta"), 0, 0);
		assert_float_equal(qh_num(nd, "z"), 0, 0);
		assert_true(json_is_true(json_object_get(nd, "noise")));
		assert_string_equal(json_string_value(json_object_get(nd, "status")), "both");
		assert_int_equal(qh_int(nd, "a_total"), qh_int(nd, "b_total"));
		json_array_foreach(json_object_get(nd, "children"), i, c)
		{
			if (n < 64)
				stack[n++] = c;
		}
	}
	assert_true(seen >= 7);
	assert_int_equal(qh_int(json_object_get(j, "appeared"), "count"), 0);
	assert_int_equal(qh_int(json_object_get(j, "disappeared"), "count"), 0);
	json_decref(j);
	store_head_free(h);
}

static void test_diff_normalized_absolute_appeared_disappeared(void **state)
{
	struct store_head *h = diff_head();

	(void)state;
	struct qh_args a = { { "type", CPU, "a_from", "1700000000000", "a_to", "1700000005000",
			       "b_from", "1700000010000", "b_to", "1700000015000", NULL } };
	json_t *j = run_ok(h, "diff", &a);
	json_t *root = json_object_get(j, "root");

	assert_string_equal(json_string_value(json_object_get(j, "mode")), "normalized");
	assert_int_equal(qh_int(json_object_get(j, "a"), "total"), 120);
	assert_int_equal(qh_int(json_object_get(j, "b"), "total"), 240);
	json_t *na = qh_path(root, "main;a");
	/* a: 60/120 = 0.5 in A, 60/240 = 0.25 in B. */
	assert_true(fabs(qh_num(na, "a_share") - 0.5) < 1e-9);
	assert_true(fabs(qh_num(na, "b_share") - 0.25) < 1e-9);
	assert_true(fabs(qh_num(na, "delta") + 0.25) < 1e-9);
	assert_int_equal(qh_int(na, "a_samples"), 1);
	assert_int_equal(qh_int(na, "b_samples"), 1);
	/* z for (ka=1, na=3, kb=1, nb=3): equal proportions -> 0. */
	assert_true(fabs(qh_num(na, "z")) < 1e-9);
	assert_true(json_is_true(json_object_get(na, "noise")));
	json_t *gone = qh_path(root, "main;gone"), *nw = qh_path(root, "main;new");
	assert_string_equal(json_string_value(json_object_get(gone, "status")), "disappeared");
	assert_string_equal(json_string_value(json_object_get(nw, "status")), "appeared");
	assert_int_equal(qh_int(gone, "b_total"), 0);
	assert_int_equal(qh_int(nw, "a_total"), 0);
	json_t *app = json_object_get(j, "appeared"), *dis = json_object_get(j, "disappeared");
	assert_int_equal(qh_int(app, "count"), 1);
	json_t *st = json_array_get(json_object_get(app, "stacks"), 0);
	json_t *names = json_object_get(st, "stack");
	assert_int_equal(json_array_size(names), 3);
	assert_string_equal(json_string_value(json_array_get(names, 2)), "x");
	assert_int_equal(qh_int(st, "value"), 60);
	assert_int_equal(qh_int(dis, "count"), 1);
	json_decref(j);

	/* Absolute mode: delta in nanoseconds. */
	a.kv[10] = "mode";
	a.kv[11] = "absolute";
	a.kv[12] = NULL;
	j = run_ok(h, "diff", &a);
	json_t *nb = qh_path(json_object_get(j, "root"), "main;b");
	assert_int_equal(qh_int(nb, "delta"), 80);
	json_decref(j);
	store_head_free(h);
}

static void test_diff_refuses_other_types_and_handles_empty_sides(void **state)
{
	struct store_head *h = diff_head();

	(void)state;
	struct qh_args a = { { "a_type", CPU, "b_type", HEAP, "from", "1700000000000", "to",
			       "1700000020000", NULL } };
	run_fails(h, "diff", &a, -EINVAL, "cannot compare different units");
	struct qh_args a2 = { { "a_type", CPU, "b_type",
				"process_cpu:samples:nanoseconds:cpu:nanoseconds", "from",
				"1700000000000", "to", "1700000020000", NULL } };
	run_fails(h, "diff", &a2, -EINVAL, "cannot compare different profile types");
	struct qh_args a3 = { { "type", CPU, "a_query", HEAP "{}", NULL } };
	run_fails(h, "diff", &a3, -EINVAL, "parameter 'a_type'");

	/* Empty baseline: shares 0 on that side, everything "appeared", no NaN. */
	struct qh_args e = { { "type", CPU, "a_from", "1000", "a_to", "2000", "b_from",
			       "1700000000000", "b_to", "1700000020000", NULL } };
	json_t *j = run_ok(h, "diff", &e);
	json_t *root = json_object_get(j, "root");
	assert_int_equal(qh_int(json_object_get(j, "a"), "total"), 0);
	assert_float_equal(qh_num(root, "a_share"), 0, 0);
	assert_float_equal(qh_num(root, "b_share"), 1, 0);
	assert_true(json_is_false(json_object_get(root, "noise")));
	assert_string_equal(json_string_value(json_object_get(qh_path(root, "main"), "status")),
			    "appeared");
	json_decref(j);
	/* Both empty. */
	struct qh_args e2 = { { "type", CPU, "from", "1000", "to", "2000", NULL } };
	j = run_ok(h, "diff", &e2);
	root = json_object_get(j, "root");
	assert_float_equal(qh_num(root, "delta"), 0, 0);
	assert_int_equal(json_array_size(json_object_get(root, "children")), 0);
	json_decref(j);
	store_head_free(h);
}

static void test_diff_z_statistic(void **state)
{
	(void)state;
	/* Two-proportion z-test: 30/100 vs 50/100: p = 0.4, se = sqrt(.4*.6*.02). */
	double z = query_diff_z(QUERY_DIFF_NORMALIZED, 30, 100, 50, 100, 0, 0);
	assert_true(fabs(z - 0.2 / sqrt(0.4 * 0.6 * 0.02)) < 1e-9);
	assert_true(fabs(z - 2.886751) < 1e-5);
	/* Poisson: (kb - ka) / sqrt(ka + kb). */
	assert_true(fabs(query_diff_z(QUERY_DIFF_ABSOLUTE, 9, 0, 16, 0, 0, 0) - 7.0 / 5.0) < 1e-12);
	assert_float_equal(query_diff_z(QUERY_DIFF_NORMALIZED, 0, 0, 5, 10, 0, 0), 0, 0);
	assert_float_equal(query_diff_z(QUERY_DIFF_NORMALIZED, 10, 10, 10, 10, 0, 0), 0, 0);
}

/*
 * Two builds, 60 s each at 100 Hz (10 ms samples): sort 400 -> 32 samples
 * (-92 %), search 421 -> 415 (unchanged time), the rest 100 -> 100. In
 * shares search "grows" 45.7 % -> 75.9 %; its rate (70.2 -> 69.2 ms/s)
 * does not change: only sort is a change in absolute terms.
 */
static void test_diff_absolute_test_sort_shrinks_search_unchanged(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	const int64_t ms10 = 10000000;
	const int sides[2][3] = { { 400, 421, 100 }, { 32, 415, 100 } };
	const char *stacks[3] = { "main;sort", "main;search", "main;rest" };

	(void)state;
	for (int k = 0; k < 2; k++) {
		int64_t t = T0 + (int64_t)k * 100 * SEC;

		qh_init(&p, "api", false);
		for (int f = 0; f < 3; f++)
			for (int i = 0; i < sides[k][f]; i++)
				tl_sample(&p, stacks[f], ms10, t + (int64_t)f * 20 * SEC + i);
		qh_head_add(h, &p);
	}
	struct qh_args a = { { "type", CPU, "a_from", "1700000000000", "a_to", "1700000059999",
			       "b_from", "1700000100000", "b_to", "1700000159999", NULL } };
	json_t *j = run_ok(h, "diff", &a);
	json_t *root = json_object_get(j, "root");
	json_t *sort = qh_path(root, "main;sort"), *search = qh_path(root, "main;search");

	assert_true(fabs(qh_num(json_object_get(j, "a"), "seconds") - 60) < 1e-9);
	assert_true(fabs(qh_num(json_object_get(j, "a"), "rate") - 1.535e8) <
		    1); /* 9.21 s / 60 s */
	/* Rates: search 4.21 s / 60 s = 70.17 ms/s -> 4.15 s / 60 s = 69.17 ms/s. */
	assert_true(fabs(qh_num(search, "a_rate") - 7.0166667e7) < 100);
	assert_true(fabs(qh_num(search, "b_rate") - 6.9166667e7) < 100);
	assert_true(fabs(qh_num(sort, "rate_delta") + 6.1333333e7) < 100);
	/* Normalized: search's share moved (the share test is right about shares)... */
	assert_true(qh_num(search, "share_z") > 8);
	assert_true(qh_num(search, "share_q") < 1e-10);
	assert_true(json_is_false(json_object_get(search, "noise")));
	/* ... but its rate did not; sort's did. */
	assert_true(fabs(qh_num(search, "rate_z") + 6.0 / sqrt(836.0)) < 1e-5);
	assert_true(qh_num(search, "rate_q") > 0.5);
	assert_true(qh_num(sort, "rate_q") < 1e-20);
	json_decref(j);

	a.kv[10] = "mode";
	a.kv[11] = "absolute";
	a.kv[12] = NULL;
	j = run_ok(h, "diff", &a);
	root = json_object_get(j, "root");
	assert_true(json_is_true(json_object_get(qh_path(root, "main;search"), "noise")));
	assert_true(json_is_true(json_object_get(qh_path(root, "main;rest"), "noise")));
	assert_true(json_is_false(json_object_get(qh_path(root, "main;sort"), "noise")));
	assert_true(qh_num(qh_path(root, "main;sort"), "z") < -15);
	json_decref(j);
	store_head_free(h);
}

/*
 * A same-build split: 300 functions of one steady workload, 2 samples per
 * function and 30 s on average, each half's count drawn at random (fixed
 * seed). Some nodes' raw p-values are under 0.05 (a 5 -> 0 happens); after
 * Benjamini-Hochberg no node is flagged in either mode.
 */
static uint64_t split_rng = 0x2545f4914f6cdd1dull;

static int split_draw(void)
{
	/* Binomial(8, 1/4): mean 2, as a Poisson count of mean 2 nearly is. */
	int k = 0;

	for (int i = 0; i < 8; i++) {
		split_rng ^= split_rng << 13;
		split_rng ^= split_rng >> 7;
		split_rng ^= split_rng << 17;
		k += (split_rng >> 60) < 4;
	}
	return k;
}

static void test_diff_same_build_split_flags_nothing(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	const int64_t ms10 = 10000000;
	size_t raw = 0;

	(void)state;
	for (int k = 0; k < 2; k++) {
		int64_t t = T0 + (int64_t)k * 30 * SEC;

		qh_init(&p, "api", false);
		for (int f = 0; f < 300; f++) {
			char st[32];
			int n = split_draw();

			snprintf(st, sizeof(st), "main;f%03d", f);
			for (int i = 0; i < n; i++)
				tl_sample(&p, st, ms10, t + (int64_t)f * 1000 + i);
		}
		qh_head_add(h, &p);
	}
	const char *modes[2] = { "normalized", "absolute" };
	for (int m = 0; m < 2; m++) {
		struct qh_args a = { { "type", CPU, "a_from", "1700000000000", "a_to",
				       "1700000029999", "b_from", "1700000030000", "b_to",
				       "1700000059999", "mode", modes[m], NULL } };
		json_t *j = run_ok(h, "diff", &a);
		json_t *main_ = qh_path(json_object_get(j, "root"), "main"), *c;
		size_t i, flagged = 0;

		json_array_foreach(json_object_get(main_, "children"), i, c)
		{
			double z = qh_num(c, m ? "rate_z" : "share_z");

			raw += fabs(z) >= 1.96;
			flagged += json_is_false(json_object_get(c, "noise"));
		}
		assert_int_equal(flagged, 0);
		json_decref(j);
	}
	assert_true(raw > 0); /* unadjusted, some would have been flagged */
	store_head_free(h);
}

/* --- flame chart ------------------------------------------------------------------------------ */

static void test_flamechart_merges_adjacent_identical_stacks(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	const int64_t ms10 = 10000000;

	(void)state;
	/* Lane "w": a a a (10 ms apart) b a, then a gap of 100 ms, a. */
	qh_init(&p, "w", false);
	tl_sample(&p, "main;a", 1, T0);
	tl_sample(&p, "main;a", 1, T0 + ms10);
	tl_sample(&p, "main;a", 1, T0 + 2 * ms10);
	tl_sample(&p, "main;b", 1, T0 + 3 * ms10);
	tl_sample(&p, "main;a", 1, T0 + 4 * ms10);
	tl_sample(&p, "main;a", 1, T0 + 14 * ms10);
	qh_head_add(h, &p);
	qh_init(&p, "v", false);
	tl_sample(&p, "main;b", 7, T0 + ms10);
	qh_head_add(h, &p);

	struct qh_args a = { { "type", CPU, "from", "1700000000000", "to", "1700000001000",
			       "group_by", "service.name", NULL } };
	json_t *j = run_ok(h, "flamechart", &a);
	json_t *lanes = json_object_get(j, "lanes"), *names = json_object_get(j, "names");
	json_t *stacks = json_object_get(j, "stacks");

	assert_int_equal(json_array_size(lanes), 2);
	json_t *w = NULL;
	size_t i;
	json_t *l;
	json_array_foreach(lanes, i, l)
	{
		if (!strcmp(json_string_value(
				    json_object_get(json_object_get(l, "labels"), "service.name")),
			    "w"))
			w = l;
	}
	assert_non_null(w);
	assert_int_equal(qh_int(w, "samples"), 6);
	assert_int_equal(qh_int(w, "interval_ns"), ms10);
	json_t *spans = json_object_get(w, "spans");
	assert_int_equal(json_array_size(spans), 4); /* aaa | b | a | a (after the gap) */
	json_t *s0 = json_array_get(spans, 0);
	assert_int_equal(arr_int(s0, 0), 0);
	assert_int_equal(arr_int(s0, 1), 3 * ms10);
	assert_int_equal(arr_int(s0, 3), 3);
	assert_int_equal(arr_int(s0, 4), 3);
	json_t *st = json_array_get(stacks, (size_t)arr_int(s0, 2));
	assert_int_equal(json_array_size(st), 2);
	assert_string_equal(json_string_value(json_array_get(names, (size_t)arr_int(st, 1))), "a");
	assert_int_equal(arr_int(json_array_get(spans, 3), 0), 14 * ms10);
	assert_int_equal(qh_int(j, "truncated_spans"), 0);
	json_decref(j);

	/* max_spans: the cut is reported. */
	struct qh_args b = { { "type", CPU, "from", "1700000000000", "to", "1700000001000",
			       "max_spans", "2", NULL } };
	j = run_ok(h, "flamechart", &b);
	assert_true(qh_int(j, "truncated_spans") > 0);
	json_decref(j);
	store_head_free(h);
}

/* --- labels, other views, bad parameters --------------------------------------------------------- */

static void test_labels_and_values_scoped_by_selector(void **state)
{
	struct store_head *h = diff_head();
	struct model_profile p;

	(void)state;
	qh_init(&p, "db", false);
	model_attr_add_str(&p, "k8s.namespace.name", "shop");
	tl_sample(&p, "main", 1, T0);
	qh_head_add(h, &p);

	struct qh_args a = { { "from", "1700000000000", "to", "1700000020000", NULL } };
	json_t *j = run_ok(h, "labels", &a);
	assert_int_equal(json_array_size(j), 2);
	assert_string_equal(json_string_value(json_array_get(j, 0)), "k8s.namespace.name");
	assert_string_equal(json_string_value(json_array_get(j, 1)), "service.name");
	json_decref(j);
	struct qh_args b = { { "name", "service.name", "from", "1700000000000", "to",
			       "1700000020000", NULL } };
	j = run_ok(h, "label_values", &b);
	assert_int_equal(json_array_size(j), 2);
	assert_string_equal(json_string_value(json_array_get(j, 0)), "api");
	json_decref(j);
	struct qh_args c = { { "name", "service.name", "query", "{k8s.namespace.name=\"shop\"}",
			       "from", "1700000000000", "to", "1700000020000", NULL } };
	j = run_ok(h, "label_values", &c);
	assert_int_equal(json_array_size(j), 1);
	assert_string_equal(json_string_value(json_array_get(j, 0)), "db");
	json_decref(j);
	/* Scoped by type: the heap series is api's only. */
	struct qh_args d = { { "name", "service.name", "type", HEAP, "from", "1700000000000", "to",
			       "1700000020000", NULL } };
	j = run_ok(h, "label_values", &d);
	assert_int_equal(json_array_size(j), 1);
	json_decref(j);
	/* Out of range: nothing. */
	struct qh_args e = { { "from", "1000", "to", "2000", NULL } };
	j = run_ok(h, "labels", &e);
	assert_int_equal(json_array_size(j), 0);
	json_decref(j);
	store_head_free(h);
}

/* A sample of "main;@fn" with the per-sample label @key = @val. */
static void add_labeled(struct model_profile *p, const char *fn, const char *key, const char *val,
			int64_t ts)
{
	uint32_t locs[2] = { tl_fn_loc(p, "main", 4), tl_fn_loc(p, fn, strlen(fn)) };
	struct model_label l = { model_intern(p, key), model_intern(p, val), 0, 0 };

	tl_sample_locs(p, locs, 2, 1, ts, &l, 1);
}

/* strings of a JSON array joined by ',' */
static void join_arr(json_t *a, char *out, size_t n)
{
	size_t i, at = 0;
	json_t *v;

	out[0] = '\0';
	json_array_foreach(a, i, v)
	{
		at += (size_t)snprintf(out + at, n - at, "%s%s", i ? "," : "",
				       json_string_value(v));
		if (at >= n)
			break;
	}
}

/*
 * Per-sample labels are scoped like series labels: two services in one
 * head (one attribute table), each with its own endpoint values, api with
 * an old endpoint an hour before the range and a thread.name label db
 * lacks. Each service gets its own values, the range drops the old one,
 * a per-sample matcher narrows the names' samples.
 */
static void test_labels_per_sample_values_honour_selector_and_range(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	char got[256];

	(void)state;
	qh_init(&p, "api", false);
	add_labeled(&p, "cart", "endpoint", "/cart", T0);
	add_labeled(&p, "pay", "endpoint", "/pay", T0 + 1);
	add_labeled(&p, "old", "endpoint", "/old", T0 - 3600 * SEC);
	add_labeled(&p, "work", "thread.name", "worker-1", T0 + 2);
	qh_head_add(h, &p);
	qh_init(&p, "db", false);
	add_labeled(&p, "scan", "endpoint", "query", T0);
	qh_head_add(h, &p);

	struct qh_args a = { { "name", "endpoint", "query", "{service.name=\"api\"}", "from",
			       "1700000000000", "to", "1700000020000", NULL } };
	json_t *j = run_ok(h, "label_values", &a);
	join_arr(j, got, sizeof(got));
	assert_string_equal(got, "/cart,/pay");
	json_decref(j);
	a.kv[3] = "{service.name=\"db\"}";
	j = run_ok(h, "label_values", &a);
	join_arr(j, got, sizeof(got));
	assert_string_equal(got, "query");
	json_decref(j);
	/* The old endpoint is listed only with its hour in range. */
	a.kv[3] = "{service.name=\"api\"}";
	a.kv[5] = "1699990000000";
	j = run_ok(h, "label_values", &a);
	join_arr(j, got, sizeof(got));
	assert_string_equal(got, "/cart,/old,/pay");
	json_decref(j);

	struct qh_args b = { { "query", "{service.name=\"db\"}", "from", "1700000000000", "to",
			       "1700000020000", NULL } };
	j = run_ok(h, "labels", &b);
	join_arr(j, got, sizeof(got));
	assert_string_equal(got, "endpoint,service.name"); /* no thread.name: api's only */
	json_decref(j);
	/* A per-sample matcher: the samples with endpoint /pay have no thread.name. */
	b.kv[1] = "{endpoint=\"/pay\"}";
	j = run_ok(h, "labels", &b);
	join_arr(j, got, sizeof(got));
	assert_string_equal(got, "endpoint,service.name");
	json_decref(j);
	b.kv[1] = "{}";
	j = run_ok(h, "labels", &b);
	join_arr(j, got, sizeof(got));
	assert_string_equal(got, "endpoint,service.name,thread.name");
	json_decref(j);
	store_head_free(h);
}

/* `limit`: at most that many values, with the total and whether some were left out. */
static void test_label_values_limit_and_truncated(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	char svc[32];

	(void)state;
	for (int i = 0; i < 50; i++) {
		snprintf(svc, sizeof(svc), "svc-%02d", i);
		qh_init(&p, svc, false);
		tl_sample(&p, "main", 1, T0);
		qh_head_add(h, &p);
	}
	struct qh_args a = { { "name", "service.name", "from", "1700000000000", "to",
			       "1700000020000", "limit", "10", NULL } };
	json_t *j = run_ok(h, "label_values", &a);
	json_t *v = json_object_get(j, "values");
	assert_int_equal(json_array_size(v), 10);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "svc-00");
	assert_string_equal(json_string_value(json_array_get(v, 9)), "svc-09");
	assert_int_equal(qh_int(j, "total"), 50);
	assert_int_equal(qh_int(j, "limit"), 10);
	assert_true(json_is_true(json_object_get(j, "truncated")));
	json_decref(j);
	struct qh_args b = { { "name", "service.name", "from", "1700000000000", "to",
			       "1700000020000", "limit", "50", NULL } };
	j = run_ok(h, "label_values", &b);
	assert_int_equal(json_array_size(json_object_get(j, "values")), 50);
	assert_true(json_is_false(json_object_get(j, "truncated")));
	json_decref(j);
	struct qh_args c = { { "from", "1700000000000", "to", "1700000020000", "limit", "1",
			       NULL } };
	j = run_ok(h, "labels", &c);
	assert_int_equal(json_array_size(json_object_get(j, "values")), 1);
	assert_int_equal(qh_int(j, "total"), 1);
	assert_true(json_is_false(json_object_get(j, "truncated")));
	json_decref(j);
	struct qh_args d = { { "name", "service.name", "limit", "0", NULL } };
	run_fails(h, "label_values", &d, -EINVAL, "parameter 'limit': expected an integer >= 1");
	store_head_free(h);
}

static void test_flamegraph_and_table_parameters(void **state)
{
	struct store_head *h = diff_head();

	(void)state;
	struct qh_args a = { { "type", CPU, "from", "1700000000000", "to", "1700000020000",
			       "invert", "true", "hide", "go", NULL } };
	json_t *j = run_ok(h, "flamegraph", &a);
	assert_true(json_is_true(json_object_get(j, "inverted")));
	assert_int_equal(qh_int(j, "total"), 360);
	assert_non_null(qh_path(json_object_get(j, "root"), "x;new;main"));
	json_decref(j);

	struct qh_args t = { { "type", CPU, "from", "1700000000000", "to", "1700000020000", "sort",
			       "total", "limit", "2", "search", "a", NULL } };
	j = run_ok(h, "table", &t);
	json_t *rows = json_object_get(j, "rows");
	assert_int_equal(json_array_size(rows), 2); /* main, a (substring "a") */
	assert_string_equal(json_string_value(json_object_get(json_array_get(rows, 0), "name")),
			    "main");
	assert_int_equal(qh_int(json_array_get(rows, 0), "total"), 360);
	assert_int_equal(qh_int(json_array_get(rows, 1), "self"), 120);
	assert_string_equal(json_string_value(json_object_get(j, "unit")), "nanoseconds");
	json_decref(j);

	struct qh_args s = { { "type", CPU, "from", "1700000000000", "to", "1700000020000",
			       "stack_filter", "^b$", NULL } };
	j = run_ok(h, "flamegraph", &s);
	assert_int_equal(qh_int(j, "total"), 160);
	assert_int_equal(qh_int(j, "filtered_total"), 200);
	json_decref(j);
	store_head_free(h);
}

static void test_bad_parameters_name_the_parameter(void **state)
{
	struct store_head *h = diff_head();
	static const struct {
		const char *view, *k1, *v1, *want;
	} cases[] = {
		{ "flamegraph", "max_nodes", "12abc", "parameter 'max_nodes'" },
		{ "flamegraph", "max_nodes", "0", "parameter 'max_nodes'" },
		{ "flamegraph", "max_nodes", "999999999", "parameter 'max_nodes': at most" },
		{ "flamegraph", "invert", "yes", "parameter 'invert'" },
		{ "flamegraph", "min_share", "2", "parameter 'min_share'" },
		{ "flamegraph", "from", "yesterday", "parameter 'from'" },
		{ "flamegraph", "query", "{a=~\"(\"}", "regex for label a" },
		{ "flamegraph", "query", "{a=", "parameter 'query'" },
		{ "flamegraph", "frame_filter", "(", "parameter 'frame_filter'" },
		{ "flamegraph", "hide", "cobol", "parameter 'hide'" },
		{ "table", "sort", "size", "parameter 'sort': expected one of self, total, name" },
		{ "table", "limit", "-1", "parameter 'limit'" },
		{ "series", "step", "0", "parameter 'step'" },
		{ "series", "step", "1ms", "parameter 'step'" },
		{ "series", "group_by", "a,,b", "parameter 'group_by'" },
		{ "series", "group_by", "a,b,c,d,e,f,g,h,i", "at most 8 labels" },
		{ "series", "mode", "both", "parameter 'mode'" },
		{ "sandwich", "max_nodes", "1", "parameter 'function' is required" },
		{ "diff", "mode", "relative", "parameter 'mode'" },
		{ "diff", "z", "-1", "parameter 'z'" },
		{ "flamechart", "interval", "x", "parameter 'interval'" },
	};

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cases); i++) {
		struct qh_args a = { { "type", CPU, "from", "1700000000000", "to", "1700000020000",
				       cases[i].k1, cases[i].v1, NULL } };

		if (!strcmp(cases[i].k1, "from"))
			a.kv[2] = "x"; /* keep only one "from" */
		run_fails(h, cases[i].view, &a, -EINVAL, cases[i].want);
	}
	struct qh_args none = { { "query", "{}", NULL } };
	run_fails(h, "table", &none, -EINVAL, "parameter 'type' is required");
	run_fails(h, "nosuchview", &none, -PROF_ENOTFOUND, "no such query view");
	struct qh_args both = { { "type", CPU, "query", HEAP "{}", NULL } };
	run_fails(h, "flamegraph", &both, -EINVAL, "differ");
	struct qh_args lv = { { NULL } };
	run_fails(h, "label_values", &lv, -EINVAL, "label name is required");
	assert_int_equal(query_request_status(-EINVAL), 400);
	assert_int_equal(query_request_status(-PROF_ENOTFOUND), 404);
	assert_int_equal(query_request_status(-PROF_ETOOBIG), 413);
	assert_int_equal(query_request_status(-EIO), 500);
	store_head_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_series_sum_by_topn_other_and_rates),
		cmocka_unit_test(test_series_gauge_averages_snapshots),
		cmocka_unit_test(test_gauge_views_show_the_mean_snapshot),
		cmocka_unit_test(test_series_derived_metric_square_wave),
		cmocka_unit_test(test_diff_identical_selections_are_all_zero),
		cmocka_unit_test(test_diff_normalized_absolute_appeared_disappeared),
		cmocka_unit_test(test_diff_refuses_other_types_and_handles_empty_sides),
		cmocka_unit_test(test_diff_z_statistic),
		cmocka_unit_test(test_diff_absolute_test_sort_shrinks_search_unchanged),
		cmocka_unit_test(test_diff_same_build_split_flags_nothing),
		cmocka_unit_test(test_flamechart_merges_adjacent_identical_stacks),
		cmocka_unit_test(test_labels_and_values_scoped_by_selector),
		cmocka_unit_test(test_labels_per_sample_values_honour_selector_and_range),
		cmocka_unit_test(test_label_values_limit_and_truncated),
		cmocka_unit_test(test_flamegraph_and_table_parameters),
		cmocka_unit_test(test_bad_parameters_name_the_parameter),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
