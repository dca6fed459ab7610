// SPDX-License-Identifier: Apache-2.0
/*
 * test_store_query.c - the query layer over a store with blocks: the same
 * samples stored (a) in one in-memory head and (b) across three blocks (one
 * of them compacted), a frozen-free active head, and a restart, give the
 * same stack sets through query_stackset_collect for the flame graph path
 * (the store's totals scan), a stepped time series (rows scan with
 * buckets; without stacks, blocks' pages summed per step), group_by a
 * label, kept samples (flame chart) and a selector;
 * label listings see the blocks' series too.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "query/labels.h"
#include "query/selector.h"
#include "query/stackset.h"
#include "store/matcher.h"
#include "store/store.h"

#include <setjmp.h>
#include <cmocka.h>

#include "unit/testlib.h"

#define SEC 1000000000LL
#define T0  (1700000000LL * SEC)

static const char *const stacks[] = { "main;a;b", "main;a;c", "main;d", "x;y;z;w", "main;a" };

static void make(struct model_profile *p, int i)
{
	char host[8];

	snprintf(host, sizeof(host), "h%d", i % 3);
	tl_profile_init(p, host);
	for (int k = 0; k < 9; k++)
		tl_sample(p, stacks[(i + k) % 5], 1 + (i * 3 + k) % 11,
			  T0 + (int64_t)i * 20 * SEC + k * 1000000LL);
}

/* "group|bucket|path" -> value, count: a stack set as comparable text. */
static void ss_totals(const struct query_stackset *ss, struct tl_totals *t)
{
	struct query_ss_path path = { 0 };
	struct buf b;

	buf_init(&b, 0);
	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[i];

		query_stackset_path(ss, e->node, &path);
		buf_reset(&b);
		buf_addf(&b, "%s|%u|", ss->groups.s[e->group], e->bucket);
		for (size_t k = 0; k < path.n; k++)
			buf_addf(&b, "%s%s", k ? ";" : "", strtab_get(&ss->names, path.v[k]));
		tl_totals_add(t, b.p, b.len, e->value, e->count);
	}
	free(path.v);
	buf_release(&b);
}

static void same_sets(struct store *a, struct store *b, const struct query_stackset_params *p)
{
	struct query_stackset sa, sb;
	struct prof_err err;
	struct tl_totals ta, tb;

	prof_err_init(&err);
	assert_int_equal(query_stackset_collect(a, p, &sa, &err), 0);
	assert_int_equal(query_stackset_collect(b, p, &sb, &err), 0);
	tl_totals_init(&ta);
	tl_totals_init(&tb);
	ss_totals(&sa, &ta);
	ss_totals(&sb, &tb);
	assert_true(ta.keys.n > 1);
	assert_true(tl_totals_equal(&ta, &tb));
	/* counts too */
	for (uint32_t i = 1; i < ta.keys.n; i++) {
		uint32_t j = strtab_find(&tb.keys, ta.keys.s[i], ta.keys.len[i]);

		assert_int_equal(ta.rows.v[i], tb.rows.v[j]);
	}
	assert_int_equal(sa.total, sb.total);
	assert_int_equal(sa.rows, sb.rows);
	assert_int_equal(sa.series, sb.series);
	assert_int_equal(sa.samples.n, sb.samples.n);
	for (size_t i = 0; i < sa.samples.n; i++) {
		assert_int_equal(sa.samples.v[i].ts_ns, sb.samples.v[i].ts_ns);
		assert_int_equal(sa.samples.v[i].value, sb.samples.v[i].value);
	}
	tl_totals_release(&ta);
	tl_totals_release(&tb);
	query_stackset_release(&sa);
	query_stackset_release(&sb);
}

static void test_query_over_blocks_equals_query_over_one_head(void **state)
{
	char *dir = tl_tmpdir("squery");
	struct store_options o = tl_opts();
	struct store *mem, *st;
	struct prof_err err;
	uint32_t n;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(store_open_mem(&mem), 0);
	st = tl_open(dir, &o);
	for (int i = 0; i < 40; i++) {
		struct model_profile p;

		make(&p, i);
		assert_int_equal(tl_ingest(mem, &p), 0);
		assert_int_equal(tl_ingest(st, &p), 0);
		model_profile_release(&p);
		if (i == 9 || i == 19 || i == 29)
			assert_int_equal(store_flush(st, &err), 0);
	}
	/* Two of the three blocks merged; then a restart. */
	o.compact_min_blocks = 2;
	store_close(st);
	st = tl_open(dir, &o);
	assert_int_equal(store_compact(st, false, &n, &err), 0);
	assert_int_equal(n, 3); /* an open window: its three flushed blocks */
	struct store_stats ss;
	store_get_stats(st, &ss);
	assert_int_equal(ss.blocks, 1);
	assert_true(ss.head.rows > 0);

	struct query_stackset_params p = { .type = TL_CPU,
					   .from_ns = T0,
					   .to_ns = T0 + 3600 * SEC };
	same_sets(mem, st, &p);		 /* flame graph: the totals scan */
	p.from_ns = T0 + 95 * SEC + 500; /* a range that cuts pages */
	p.to_ns = T0 + 655 * SEC;
	same_sets(mem, st, &p);
	p.step_ns = 60 * SEC; /* a time series: the rows scan, buckets */
	same_sets(mem, st, &p);
	const char *gb[] = { "host.name" };
	p.group_by = gb;
	p.ngroup_by = 1;
	same_sets(mem, st, &p);
	/* A series needing no stacks: blocks sum their pages per step
	 * (store_block_page_steps), heads by runs of rows; steps of 7 s cut
	 * the 20 s profiles, with and without group_by. */
	p.merge_stacks = true;
	same_sets(mem, st, &p);
	p.step_ns = 7 * SEC;
	same_sets(mem, st, &p);
	p.ngroup_by = 0;
	same_sets(mem, st, &p);
	p.merge_stacks = false;
	p.step_ns = 60 * SEC;
	p.ngroup_by = 1;
	p.step_ns = 0;
	p.ngroup_by = 0;
	p.keep_samples = true; /* flame chart */
	same_sets(mem, st, &p);
	p.keep_samples = false;
	struct query_selector sel;
	assert_int_equal(query_selector_parse("{host.name=~\"h[12]\"}", &sel, &err), 0);
	p.m = sel.m;
	p.nm = sel.n;
	same_sets(mem, st, &p);
	query_selector_release(&sel);

	/* Labels see the block's series. */
	struct query_strlist a, b;
	assert_int_equal(
		query_labels_collect(mem, TL_CPU, NULL, 0, T0, T0 + 3600 * SEC, "host.name", &a),
		0);
	assert_int_equal(
		query_labels_collect(st, TL_CPU, NULL, 0, T0, T0 + 3600 * SEC, "host.name", &b), 0);
	assert_int_equal(a.n, 3);
	assert_int_equal(b.n, 3);
	for (size_t i = 0; i < a.n; i++)
		assert_string_equal(a.v[i], b.v[i]);
	query_strlist_release(&a);
	query_strlist_release(&b);

	store_close(st);
	store_close(mem);
	tl_rmdir(dir);
	free(dir);
}

/*
 * A regex past PCRE2's match limit: a plain match counts it as no match;
 * inside a query it is counted (the query is refused) and later matches
 * return false at once. "(a|a)*c" on 40 a's needs 2^40 steps.
 */
static void test_regex_match_limit_is_counted_in_a_query(void **state)
{
	struct store_matcher m;
	struct prof_err err;
	char v[64];

	(void)state;
	memset(v, 'a', 40);
	memcpy(v + 40, "bX", 3);
	prof_err_init(&err);
	assert_int_equal(
		store_matcher_init(&m, "service.name", STORE_MATCH_RE, "(a|a)*c|.*X", &err), 0);
	assert_false(store_matcher_match(&m, v)); /* the limit: no match, not counted for a query */
	assert_true(store_matcher_match(&m, "X"));
	store_regex_query_begin();
	assert_false(store_matcher_match(&m, v));
	assert_false(store_matcher_match(&m, "X")); /* refused anyway: no more work */
	assert_int_equal(store_regex_query_end(), 1);
	store_regex_query_begin();
	assert_true(store_matcher_match(&m, "X"));
	assert_int_equal(store_regex_query_end(), 0);
	store_matcher_release(&m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_query_over_blocks_equals_query_over_one_head),
		cmocka_unit_test(test_regex_match_limit_is_counted_in_a_query),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
