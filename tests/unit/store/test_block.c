// SPDX-License-Identifier: Apache-2.0
/*
 * test_block.c - the block format on its own: a head written through the
 * block writer reads back row for row (timestamps rounded to the
 * resolution, stacks the same names paths), with symbols garbage-
 * collected to what rows reach, stack nodes in preorder, leaves ranked by
 * row count; series selection by type, equality (postings), regex and
 * negative matchers and time range; the totals form equals the rows form
 * also on pages that straddle the range; the writer refuses series out of
 * order and rows naming a stack without leaf count; a flipped byte in
 * any of the four files is caught by store_block_check with the file and
 * an offset inside the damaged chunk or frame; truncated files and
 * foreign files are refused. Per-sample attribute sets: a block without
 * them has no ATTR, SATK or PATR chunk; with them every row reads back
 * with its set (labels and link), SATK names the attributes, the writer
 * refuses a set id out of range, and a flipped byte in an ATR frame is
 * named with the frame's offset.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "store/block.h"
#include "store/head.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <setjmp.h>
#include <cmocka.h>

#include "unit/testlib.h"

#define MS  1000000LL
#define SEC 1000000000LL
#define T0  (1700000000LL * SEC)

struct fixture {
	char *dir;
	struct store_head *h;
	uint64_t id;
	char *bdir;
	uint64_t rows;
};

/* A head with 3 hosts x 2 types; one location no row reaches. */
static void fill_head(struct store_head *h, uint64_t *nrows)
{
	static const char *const st[] = { "main;a;b;c", "main;a;b;d", "main;a;e", "main;f",
					  "other" };
	struct prof_err err;

	*nrows = 0;
	for (int i = 0; i < 30; i++) {
		struct model_profile p;
		char host[16];

		snprintf(host, sizeof(host), "h%d", i % 3);
		tl_profile_init(&p, host);
		if (i % 5 == 0) {
			/* a second type: samples/count */
			model_profile_release(&p);
			model_profile_init(&p);
			model_sample_type_add(&p, "samples", "count");
			p.period_type.type = model_intern(&p, "cpu");
			p.period_type.unit = model_intern(&p, "nanoseconds");
			model_attr_add_str(&p, "host.name", host);
		}
		/* an unreferenced location in the profile's dictionary */
		struct model_line ln = { 0 };
		ln.function = model_function_intern(&p, model_intern(&p, "never_sampled"), 0, 0, 0);
		model_location_add(&p, 0, 0, &ln, 1);
		for (int k = 0; k < 7; k++) {
			/* sub-ms offsets: rounded down to 1 ms in the block */
			int64_t ts = T0 + (int64_t)i * SEC + (int64_t)k * 3 * MS + 777;

			tl_sample(&p, st[(i + k) % 5], 1 + (i * k) % 9, ts);
			(*nrows)++;
		}
		prof_err_init(&err);
		assert_int_equal(store_head_add(h, &p, T0, &err), 0);
		model_profile_release(&p);
	}
}

struct ser_ref {
	const struct store_series *s;
	const struct store_row *rows;
};

static int cmp_ser(const void *a, const void *b)
{
	const struct store_series *x = ((const struct ser_ref *)a)->s,
				  *y = ((const struct ser_ref *)b)->s;

	return store_series_key_cmp(x->type, x->labels, x->nlabels, y->type, y->labels, y->nlabels);
}

static int cmp_row(const void *a, const void *b)
{
	const struct store_row *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

static bool g_rollup;	 /* write_block writes the hour rollup (RHRS) */
static bool g_rser;	 /* ... and the older per-series rollup (RSER) */
static int64_t g_bucket; /* RHRS bucket width (0: the default hour) */

/* Write @h as block @id under @dir/blocks; returns the block directory. */
static char *write_block(const char *dir, struct store_head *h, uint64_t id, uint32_t page_rows)
{
	struct store_block_write_opts o = {
		.zstd_level = 3,
		.ts_resolution_ns = MS,
		.page_rows = page_rows,
		.rollup = g_rollup,
		.rser = g_rser,
		.rollup_bucket_ns = g_bucket,
	};
	struct store_block_writer *w;
	struct store_block_info info = { .level = 1, .wal_first = 3, .wal_last = 4 };
	struct prof_err err;
	char *blocks = xasprintf("%s/blocks", dir);
	size_t nn, ns;

	mkdir(blocks, 0755);
	prof_err_init(&err);
	assert_int_equal(store_block_writer_new(blocks, id, &o, &w, &err), 0);
	const struct store_stack_node *nodes = store_head_stacks(h, &nn);
	uint64_t *leaf = xcalloc(nn, sizeof(uint64_t));
	ns = store_head_nseries(h);
	struct ser_ref *ser = xcalloc(ns, sizeof(*ser));
	for (size_t i = 0; i < ns; i++) {
		ser[i].s = store_head_series_at(h, i, &ser[i].rows);
		for (uint64_t r = 0; r < ser[i].s->nrows; r++)
			leaf[ser[i].rows[r].stack]++;
	}
	qsort(ser, ns, sizeof(*ser), cmp_ser);
	size_t nsets;
	const struct store_attr_set *sets = store_head_attrs(h, &nsets);
	assert_int_equal(store_block_writer_symbols(w, store_head_dict(h), nodes, nn, leaf, sets,
						    nsets, &err),
			 0);
	for (size_t i = 0; i < ns; i++) {
		struct store_row *tmp = xmalloc(sizeof(*tmp) * ser[i].s->nrows);

		memcpy(tmp, ser[i].rows, sizeof(*tmp) * ser[i].s->nrows);
		qsort(tmp, ser[i].s->nrows, sizeof(*tmp), cmp_row);
		assert_int_equal(store_block_writer_series(w, ser[i].s->type, ser[i].s->labels,
							   ser[i].s->nlabels, tmp, ser[i].s->nrows,
							   &err),
				 0);
		free(tmp);
	}
	assert_int_equal(store_block_writer_finish(w, &info, &err), 0);
	store_block_writer_free(w);
	free(ser);
	free(leaf);
	char name[17];
	store_block_dir_name(id, name);
	char *out = xasprintf("%s/%s", blocks, name);
	free(blocks);
	return out;
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));

	f->dir = tl_tmpdir("block");
	f->h = store_head_new();
	fill_head(f->h, &f->rows);
	f->id = 0x0123456789abcdefULL;
	f->bdir = write_block(f->dir, f->h, f->id, 16);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	store_head_free(f->h);
	tl_rmdir(f->dir);
	free(f->dir);
	free(f->bdir);
	free(f);
	return 0;
}

/* Per (series, stack, rounded ts) sums of a head, as "key" totals. */
static void head_totals(struct store_head *h, struct tl_totals *t)
{
	struct store_source src = { 0 };
	struct buf b;

	buf_init(&b, 0);
	src.dict = store_head_dict(h);
	src.stacks = store_head_stacks(h, &src.nstacks);
	for (size_t i = 0; i < store_head_nseries(h); i++) {
		const struct store_row *rows;
		const struct store_series *s = store_head_series_at(h, i, &rows);

		for (uint64_t r = 0; r < s->nrows; r++) {
			buf_reset(&b);
			tl_series_key(s, &b);
			tl_folded(&src, rows[r].stack, &b);
			buf_addf(&b, "@%" PRId64, (int64_t)(rows[r].ts_ns / MS * MS));
			tl_totals_add(t, b.p, b.len, rows[r].value, 1);
		}
	}
	buf_release(&b);
}

static void test_block_round_trip_with_gc_preorder_and_ranked_leaves(void **state)
{
	struct fixture *f = *state;
	struct store_block *b;
	struct store_block_syms *sy;
	struct store_block_scratch sc = { 0 };
	struct prof_err err;
	struct tl_totals want, got;
	struct buf key;
	uint64_t nrows;

	prof_err_init(&err);
	assert_int_equal(store_block_check(f->bdir, &nrows, &err), 0);
	assert_int_equal(nrows, f->rows);
	assert_int_equal(store_block_open(f->bdir, &b, &err), 0);
	assert_int_equal(b->meta.id, f->id);
	assert_int_equal(b->meta.nrows, f->rows);
	assert_int_equal(b->meta.nseries, 6);
	assert_int_equal(b->meta.wal_first, 3);
	assert_int_equal(b->meta.wal_last, 4);
	assert_int_equal(b->meta.ts_resolution_ns, MS);
	assert_true(b->meta.npages > 6); /* 16 rows a page */
	assert_int_equal(store_block_syms_load(b, &sy, &err), 0);

	/* GC: "never_sampled" is not in the block's strings. */
	assert_int_equal(strtab_find(&sy->dict.strings, "never_sampled", 13), UINT32_MAX);
	assert_int_not_equal(strtab_find(&sy->dict.strings, "main", 4), UINT32_MAX);
	/* Preorder: a parent right before its first child is the common case. */
	size_t adjacent = 0;
	for (size_t i = 1; i < sy->nnodes; i++) {
		assert_true(sy->nodes[i].parent < i);
		adjacent += sy->nodes[i].parent == i - 1;
	}
	assert_true(adjacent * 2 >= sy->nnodes - 1);
	/* Leaves ranked by rows, most first; they sum to the rows. */
	uint64_t sum = 0;
	for (size_t r = 0; r < sy->nleaves; r++) {
		assert_true(r == 0 || sy->leaf_rows[r] <= sy->leaf_rows[r - 1]);
		sum += sy->leaf_rows[r];
	}
	assert_int_equal(sum, f->rows);

	/* Row for row (sums per series, stack and rounded time). */
	tl_totals_init(&want);
	tl_totals_init(&got);
	buf_init(&key, 0);
	head_totals(f->h, &want);
	struct store_source src = {
		1, false, &sy->dict, sy->nodes, sy->nnodes, sy->sets, sy->nsets
	};
	for (uint32_t s = 0; s < b->nseries; s++) {
		const struct store_block_series *se = &b->series[s];
		int64_t last = INT64_MIN;

		for (uint32_t p = se->first_page; p < se->first_page + se->npages; p++) {
			assert_int_equal(
				store_block_page_rows(b, p, sy, INT64_MIN, INT64_MAX, &sc, &err),
				0);
			for (size_t r = 0; r < sc.rows.n; r++) {
				assert_true(sc.rows.v[r].ts_ns >= last); /* sorted */
				assert_int_equal(sc.rows.v[r].ts_ns % MS, 0);
				last = sc.rows.v[r].ts_ns;
				buf_reset(&key);
				tl_series_key(&se->pub, &key);
				tl_folded(&src, sc.rows.v[r].stack, &key);
				buf_addf(&key, "@%" PRId64, sc.rows.v[r].ts_ns);
				tl_totals_add(&got, key.p, key.len, sc.rows.v[r].value, 1);
			}
		}
	}
	assert_true(tl_totals_equal(&want, &got));
	buf_release(&key);
	tl_totals_release(&want);
	tl_totals_release(&got);
	store_block_scratch_release(&sc);
	store_block_syms_free(sy);
	store_block_free(b);
}

static void test_block_select_and_totals_agree_with_rows(void **state)
{
	struct fixture *f = *state;
	struct store_block *b;
	struct store_block_syms *sy;
	struct store_block_scratch sc = { 0 };
	struct prof_err err;
	struct store_matcher m[2];
	VEC(uint32_t) sel = { 0 };

	prof_err_init(&err);
	assert_int_equal(store_block_open(f->bdir, &b, &err), 0);
	assert_int_equal(store_block_syms_load(b, &sy, &err), 0);

	/* type only */
	store_block_select(b, TL_CPU, NULL, 0, INT64_MIN, INT64_MAX, &sel);
	assert_int_equal(sel.n, 3);
	/* equality through the postings */
	sel.n = 0;
	assert_int_equal(store_matcher_init(&m[0], "host.name", STORE_MATCH_EQ, "h1", &err), 0);
	store_block_select(b, NULL, m, 1, INT64_MIN, INT64_MAX, &sel);
	assert_int_equal(sel.n, 2);
	for (size_t i = 0; i < sel.n; i++)
		assert_string_equal(b->series[sel.v[i]].pub.labels[0].value, "h1");
	/* a value no series has */
	sel.n = 0;
	store_matcher_release(&m[0]);
	assert_int_equal(store_matcher_init(&m[0], "host.name", STORE_MATCH_EQ, "zz", &err), 0);
	store_block_select(b, NULL, m, 1, INT64_MIN, INT64_MAX, &sel);
	assert_int_equal(sel.n, 0);
	store_matcher_release(&m[0]);
	/* regex and negation */
	assert_int_equal(store_matcher_init(&m[0], "host.name", STORE_MATCH_RE, "h[01]", &err), 0);
	assert_int_equal(store_matcher_init(&m[1], "host.name", STORE_MATCH_NE, "h0", &err), 0);
	store_block_select(b, TL_CPU, m, 2, INT64_MIN, INT64_MAX, &sel);
	assert_int_equal(sel.n, 1);
	store_matcher_release(&m[0]);
	store_matcher_release(&m[1]);
	/* time range outside the block */
	sel.n = 0;
	store_block_select(b, NULL, NULL, 0, T0 + 3600 * SEC, INT64_MAX, &sel);
	assert_int_equal(sel.n, 0);

	/* Totals over a range that cuts pages equal the rows form's sums. */
	int64_t from = T0 + 7 * SEC + 4 * MS, to = T0 + 21 * SEC + 9 * MS;
	struct store_leaf_acc *acc = xcalloc(b->meta.nleaves, sizeof(*acc));
	int64_t *want = xcalloc(sy->nnodes, sizeof(int64_t));
	uint64_t got_rows = 0, want_rows = 0;
	for (uint32_t p = 0; p < b->meta.npages; p++) {
		uint64_t n;

		assert_int_equal(store_block_page_totals(b, p, from, to, acc, &n, &sc, &err), 0);
		got_rows += n;
		assert_int_equal(store_block_page_rows(b, p, sy, from, to, &sc, &err), 0);
		for (size_t r = 0; r < sc.rows.n; r++)
			want[sc.rows.v[r].stack] += sc.rows.v[r].value;
		want_rows += sc.rows.n;
	}
	assert_int_equal(got_rows, want_rows);
	assert_true(want_rows > 0 && want_rows < b->meta.nrows);
	uint64_t acc_rows = 0;
	for (size_t r = 0; r < sy->nleaves; r++) {
		assert_int_equal(acc[r].total, want[sy->leaf_node[r]]);
		acc_rows += acc[r].rows;
	}
	assert_int_equal(acc_rows, want_rows);
	free(acc);
	free(want);
	VEC_FREE(&sel);
	store_block_scratch_release(&sc);
	store_block_syms_free(sy);
	store_block_free(b);
}

/* Pages of thousands of rows: range queries start at a time mark and still count exactly. */
static void test_block_time_marks_cut_long_pages_exactly(void **state)
{
	struct fixture *f = *state;
	struct store_head *h = store_head_new();
	struct prof_err err;
	uint64_t seed = 7;

	/* one series, 9000 rows, irregular gaps, some equal times */
	struct model_profile p;
	tl_profile_init(&p, "solo");
	int64_t t = T0;
	for (int i = 0; i < 9000; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		t += (int64_t)((seed >> 33) % 5) * MS;
		tl_sample(&p, (seed >> 40) % 3 ? "main;hot" : "main;cold", 1 + (int64_t)(i % 4), t);
	}
	prof_err_init(&err);
	assert_int_equal(store_head_add(h, &p, T0, &err), 0);
	model_profile_release(&p);
	char *bdir = write_block(f->dir, h, 0x77, 65536);
	struct store_block *b;
	struct store_block_syms *sy;
	struct store_block_scratch sc = { 0 };
	assert_int_equal(store_block_check(bdir, NULL, &err), 0);
	assert_int_equal(store_block_open(bdir, &b, &err), 0);
	assert_int_equal(store_block_syms_load(b, &sy, &err), 0);
	assert_int_equal(b->meta.npages, 1);
	int64_t first = b->pages[0].first_ts_ns, last = b->pages[0].last_ts_ns;
	for (int q = 0; q < 200; q++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		int64_t from = first - 5 * MS +
			       (int64_t)((seed >> 20) % (uint64_t)(last - first + 10 * MS));
		int64_t to = from + (int64_t)((seed >> 5) % (uint64_t)(last - first + 10 * MS)) /
					    (1 + q % 7);
		struct store_leaf_acc *acc = xcalloc(b->meta.nleaves, sizeof(*acc));
		uint64_t n, want_rows = 0, got_rows = 0;
		int64_t want = 0, got = 0;

		from = from / MS * MS + (q % 2) * 123; /* on and off the resolution */
		assert_int_equal(store_block_page_totals(b, 0, from, to, acc, &n, &sc, &err), 0);
		for (size_t r = 0; r < b->meta.nleaves; r++) {
			got += acc[r].total;
			got_rows += acc[r].rows;
		}
		assert_int_equal(got_rows, n);
		assert_int_equal(store_block_page_rows(b, 0, sy, from, to, &sc, &err), 0);
		for (size_t r = 0; r < sc.rows.n; r++)
			want += sc.rows.v[r].value;
		want_rows = sc.rows.n;
		assert_int_equal(got_rows, want_rows);
		assert_int_equal(got, want);
		/* Without the stack column: the same rows, stack 0. */
		struct store_row *wr = xmalloc(sizeof(*wr) * (sc.rows.n + 1));
		memcpy(wr, sc.rows.v, sizeof(*wr) * sc.rows.n);
		assert_int_equal(store_block_page_times(b, 0, sy, from, to, &sc, &err), 0);
		assert_int_equal(sc.rows.n, want_rows);
		for (size_t r = 0; r < sc.rows.n; r++) {
			assert_int_equal(sc.rows.v[r].ts_ns, wr[r].ts_ns);
			assert_int_equal(sc.rows.v[r].value, wr[r].value);
			assert_int_equal(sc.rows.v[r].attrs, wr[r].attrs);
			assert_int_equal(sc.rows.v[r].stack, 0);
		}
		/* Summed per step of 7 ms from a point before the range: the rows' sums. */
		int64_t step = 7 * MS, origin = from - 3 * MS;
		VEC(struct store_step_sum) steps = { 0 };
		int64_t *wsum = xcalloc((size_t)((to - origin) / step) + 2, sizeof(int64_t));
		uint64_t *wcnt = xcalloc((size_t)((to - origin) / step) + 2, sizeof(uint64_t));
		for (size_t r = 0; r < want_rows; r++) {
			wsum[(wr[r].ts_ns - origin) / step] += wr[r].value;
			wcnt[(wr[r].ts_ns - origin) / step]++;
		}
		assert_int_equal(
			store_block_page_steps(b, 0, from, to, origin, step, &steps, &sc, &err), 0);
		uint64_t srows = 0;
		for (size_t k = 0; k < steps.n; k++) {
			assert_true(k == 0 || steps.v[k].step > steps.v[k - 1].step);
			assert_true(steps.v[k].rows > 0);
			assert_int_equal(steps.v[k].value, wsum[steps.v[k].step]);
			assert_int_equal(steps.v[k].rows, wcnt[steps.v[k].step]);
			srows += steps.v[k].rows;
		}
		assert_int_equal(srows, want_rows);
		VEC_FREE(&steps);
		free(wsum);
		free(wcnt);
		free(wr);
		free(acc);
	}
	store_block_scratch_release(&sc);
	store_block_syms_free(sy);
	store_block_free(b);
	store_head_free(h);
	free(bdir);
}

/*
 * store_block_page_steps over times whose deltas take 1, 2 and 3 bytes
 * (runs of small gaps, gaps of seconds, a minute), with equal times and
 * several values: per-step sums and counts equal summing the page's rows,
 * for steps of 1 ms to 2 min and random ranges on and off the resolution.
 */
static void test_block_page_steps_equal_rows_with_any_deltas(void **state)
{
	struct fixture *f = *state;
	struct store_head *h = store_head_new();
	struct prof_err err;
	uint64_t seed = 99;
	struct model_profile p;
	int64_t t = T0;

	tl_profile_init(&p, "steps");
	for (int i = 0; i < 20000; i++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		uint64_t r = (seed >> 33) % 1000;
		int64_t gap = r < 700	? (int64_t)(r % 130) /* 1 byte, a few 128-129 */
			      : r < 990 ? 100 + (int64_t)(seed >> 45) % 4000	 /* 1-2 bytes */
					: 16000 + (int64_t)(seed >> 40) % 60000; /* 2-3 bytes */

		t += gap * MS;
		tl_sample(&p, "main;hot", i / 3000 % 2 ? 5 : 1 + (int64_t)(i % 3), t);
	}
	prof_err_init(&err);
	assert_int_equal(store_head_add(h, &p, T0, &err), 0);
	model_profile_release(&p);
	char *bdir = write_block(f->dir, h, 0x78, 65536);
	struct store_block *b;
	struct store_block_syms *sy;
	struct store_block_scratch sc = { 0 };
	assert_int_equal(store_block_check(bdir, NULL, &err), 0);
	assert_int_equal(store_block_open(bdir, &b, &err), 0);
	assert_int_equal(store_block_syms_load(b, &sy, &err), 0);
	assert_int_equal(b->meta.npages, 1);
	int64_t first = b->pages[0].first_ts_ns, last = b->pages[0].last_ts_ns;
	static const int64_t steps_ms[] = { 1, 7, 1000, 60000, 120000 };
	int64_t span = last - first; /* about 6 h */
	for (int q = 0; q < 120; q++) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		int64_t step = steps_ms[q % PROF_ARRAY_SIZE(steps_ms)] * MS;
		int64_t len = step < SEC ? span / 200 : span; /* at most some 10^5 steps */
		int64_t from = q % 4 == 0
				       ? first
				       : first - 5 * MS + (int64_t)((seed >> 20) % (uint64_t)span);
		int64_t to = q % 4 == 0 && step >= SEC
				     ? last
				     : from + (int64_t)((seed >> 5) % (uint64_t)len);
		int64_t origin = from - (int64_t)(seed >> 50) % step;

		from += (q % 3) * 123; /* on and off the resolution */
		assert_int_equal(store_block_page_rows(b, 0, sy, from, to, &sc, &err), 0);
		size_t nst = (size_t)((to - origin) / step) + 2;
		int64_t *wsum = xcalloc(nst, sizeof(int64_t));
		uint64_t *wcnt = xcalloc(nst, sizeof(uint64_t)), want_rows = sc.rows.n, srows = 0;
		for (size_t r = 0; r < sc.rows.n; r++) {
			wsum[(sc.rows.v[r].ts_ns - origin) / step] += sc.rows.v[r].value;
			wcnt[(sc.rows.v[r].ts_ns - origin) / step]++;
		}
		VEC(struct store_step_sum) steps = { 0 };
		assert_int_equal(
			store_block_page_steps(b, 0, from, to, origin, step, &steps, &sc, &err), 0);
		for (size_t k = 0; k < steps.n; k++) {
			assert_true(k == 0 || steps.v[k].step > steps.v[k - 1].step);
			assert_true(steps.v[k].step < nst);
			assert_int_equal(steps.v[k].value, wsum[steps.v[k].step]);
			assert_int_equal(steps.v[k].rows, wcnt[steps.v[k].step]);
			srows += steps.v[k].rows;
		}
		assert_int_equal(srows, want_rows);
		VEC_FREE(&steps);
		free(wsum);
		free(wcnt);
	}
	store_block_scratch_release(&sc);
	store_block_syms_free(sy);
	store_block_free(b);
	store_head_free(h);
	free(bdir);
}

static void test_block_writer_refuses_bad_input(void **state)
{
	struct fixture *f = *state;
	struct store_block_writer *w;
	struct prof_err err;
	char *blocks = xasprintf("%s/blocks", f->dir);
	struct store_stack_node nodes[3] = { { 0, 0 }, { 0, 1 }, { 1, 1 } };
	uint64_t leaf[3] = { 0, 0, 2 };
	struct model_profile d;
	struct store_label l1 = { "k", "b" }, l0 = { "k", "a" };
	struct store_row rows[2] = { { T0, 1, 2, 0 }, { T0 + MS, 1, 2, 0 } };
	struct store_row bad[1] = { { T0, 1, 1, 0 } };

	model_profile_init(&d);
	struct model_line ln = { 0 };
	ln.function = model_function_intern(&d, model_intern(&d, "f"), 0, 0, 0);
	model_location_add(&d, 0, 0, &ln, 1);
	prof_err_init(&err);
	assert_int_equal(store_block_writer_new(blocks, 7, NULL, &w, &err), 0);
	assert_int_equal(store_block_writer_symbols(w, &d, nodes, 3, leaf, NULL, 0, &err), 0);
	/* a row naming node 1, which has no leaf count */
	assert_int_equal(store_block_writer_series(w, "t", &l0, 1, bad, 1, &err), -EINVAL);
	prof_err_init(&err);
	assert_int_equal(store_block_writer_series(w, "t", &l1, 1, rows, 2, &err), 0);
	/* out of order: "a" after "b" */
	prof_err_init(&err);
	assert_int_equal(store_block_writer_series(w, "t", &l0, 1, rows, 2, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "out of order"));
	store_block_writer_free(w); /* unfinished: its .tmp directory goes */
	assert_int_not_equal(tl_sh("test -e '%s/0000000000000007.tmp'", blocks), 0);

	/* announced leaf counts that the rows do not meet */
	leaf[2] = 5;
	assert_int_equal(store_block_writer_new(blocks, 8, NULL, &w, &err), 0);
	assert_int_equal(store_block_writer_symbols(w, &d, nodes, 3, leaf, NULL, 0, &err), 0);
	assert_int_equal(store_block_writer_series(w, "t", &l1, 1, rows, 2, &err), 0);
	prof_err_init(&err);
	struct store_block_info info = { .level = 1 };
	assert_int_equal(store_block_writer_finish(w, &info, &err), -EINVAL);
	store_block_writer_free(w);
	model_profile_release(&d);
	free(blocks);
}

static void flip(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
	c ^= 0x01;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

static void test_block_flipped_byte_in_each_file_is_named_with_offset(void **state)
{
	struct fixture *f = *state;
	static const char *const files[] = { "meta", "symbols", "index", "samples" };
	struct prof_err err;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(files); i++) {
		char *path = xasprintf("%s/%s", f->bdir, files[i]);
		struct stat st;

		assert_int_equal(tl_sh("cp '%s' '%s.bak'", path, path), 0);
		/* a byte in the middle of the file's data */
		assert_int_equal(stat(path, &st), 0);
		uint64_t off =
			STORE_CHUNKFILE_HDR +
			((uint64_t)st.st_size - STORE_CHUNKFILE_HDR - STORE_CHUNKFILE_FOOTER) / 3;
		flip(path, off);
		prof_err_init(&err);
		assert_int_not_equal(store_block_check(f->bdir, NULL, &err), 0);
		print_message("%s: %s (offset %" PRId64 ")\n", files[i], err.msg, err.offset);
		assert_non_null(strstr(err.msg, files[i]));
		assert_true(err.offset >= 0 && (uint64_t)err.offset <= off);
		assert_int_equal(tl_sh("mv '%s.bak' '%s'", path, path), 0);
		free(path);
	}
	prof_err_init(&err);
	assert_int_equal(store_block_check(f->bdir, NULL, &err), 0);

	/* A truncated file and a foreign file are refused with a reason. */
	char *copy = xasprintf("%s/blocks/00000000000000aa", f->dir);
	char *path = xasprintf("%s/index", copy);
	assert_int_equal(tl_sh("cp -a '%s' '%s' && truncate -s 40 '%s'", f->bdir, copy, path), 0);
	struct store_block *b = NULL;
	prof_err_init(&err);
	assert_int_not_equal(store_block_open(copy, &b, &err), 0);
	assert_null(b);
	assert_non_null(strstr(err.msg, "index"));
	assert_int_equal(buf_write_file(path, "this is not a block file, not at all", 37), 0);
	prof_err_init(&err);
	assert_int_equal(store_block_open(copy, &b, &err), -PROF_EFORMAT);
	assert_non_null(strstr(err.msg, "bad magic"));
	free(path);
	free(copy);
}

/* A head whose samples carry thread attributes (some none) and links (some). */
static void fill_head_attrs(struct store_head *h)
{
	static const char *const st[] = { "main;a;b", "main;a;c", "main;d" };
	struct prof_err err;

	for (int i = 0; i < 12; i++) {
		struct model_profile p;

		tl_profile_init(&p, i % 2 ? "h1" : "h0");
		for (int k = 0; k < 40; k++) {
			struct model_label l[2];
			uint32_t nl = 0, link = 0;

			memset(l, 0, sizeof(l));
			tl_sample(&p, st[(i + k) % 3], 1 + k % 5, T0 + (int64_t)(i * 40 + k) * MS);
			if (k % 4 != 3) {
				char name[16];

				snprintf(name, sizeof(name), "t%d", k % 3);
				l[nl].key = model_intern(&p, "thread.name");
				l[nl++].str = model_intern(&p, name);
				l[nl].key = model_intern(&p, "thread.id");
				l[nl++].num = 100 + k % 3;
			}
			if (k % 5 == 0) {
				struct model_link ln;

				memset(&ln, 0, sizeof(ln));
				ln.trace_id[0] = (uint8_t)(1 + k % 2);
				ln.span_id[7] = (uint8_t)k;
				VEC_PUSH(&p.links, ln);
				link = (uint32_t)p.links.n - 1;
			}
			struct model_sample *sm = &p.samples.v[p.samples.n - 1];
			sm->label_off = (uint32_t)p.labels.n;
			sm->nlabels = nl;
			sm->link = link;
			for (uint32_t j = 0; j < nl; j++)
				VEC_PUSH(&p.labels, l[j]);
		}
		prof_err_init(&err);
		assert_int_equal(store_head_add(h, &p, T0, &err), 0);
		model_profile_release(&p);
	}
}

/* "series|stack@ts#labels@link" of each row, through the sets of @sets. */
static void attr_key(struct buf *b, const struct store_source *src, const struct store_series *s,
		     const struct store_row *r, const struct store_attr_set *sets)
{
	const struct store_attr_set *a = &sets[r->attrs];

	buf_reset(b);
	tl_series_key(s, b);
	tl_folded(src, r->stack, b);
	buf_addf(b, "@%" PRId64 "#", (int64_t)(r->ts_ns / MS * MS));
	for (uint32_t j = 0; j < a->nlabels; j++)
		buf_addf(b, "%s=%s,", a->labels[j].name, a->labels[j].value);
	if (a->has_link)
		buf_addf(b, "@%02x%02x", a->trace_id[0], a->span_id[7]);
}

static void test_block_attribute_sets_round_trip_and_damage(void **state)
{
	struct fixture *f = *state;
	struct store_head *h = store_head_new();
	struct store_block *b = NULL;
	struct store_block_syms *sy = NULL;
	struct store_block_scratch sc = { 0 };
	struct store_chunkfile cf;
	struct tl_totals want, got;
	struct prof_err err;
	struct buf k;
	size_t nsets;

	/* The fixture's block has no attributes: none of the new chunks. */
	char *p = xasprintf("%s/samples", f->bdir);
	prof_err_init(&err);
	assert_int_equal(store_chunkfile_open(&cf, p, STORE_BLOCK_MAGIC_SAMPLES,
					      STORE_BLOCK_VERSION, true, &err),
			 0);
	assert_null(store_chunkfile_find(&cf, "PATR"));
	store_chunkfile_close(&cf);
	free(p);
	assert_int_equal(store_block_open(f->bdir, &b, &err), 0);
	assert_null(b->attr_cols);
	assert_int_equal(b->nakeys, 0);
	store_block_free(b);

	fill_head_attrs(h);
	const struct store_attr_set *hs = store_head_attrs(h, &nsets);
	/* (t0..t2 or none) x (two traces x spans, or none): more than the empty set */
	assert_true(nsets > 4);
	g_rollup = g_rser = true;
	g_bucket = 100 * MS;
	char *bdir = write_block(f->dir, h, 0x77, 16);
	g_rollup = g_rser = false;
	g_bucket = 0;
	prof_err_init(&err);
	assert_int_equal(store_block_check(bdir, NULL, &err), 0);
	assert_int_equal(store_block_open(bdir, &b, &err), 0);
	assert_non_null(b->attr_cols);
	assert_int_equal(b->nakeys, 2);
	assert_true(store_block_has_attr_key(b, "thread.name"));
	assert_true(store_block_has_attr_key(b, "thread.id"));
	assert_false(store_block_has_attr_key(b, "host.name"));
	assert_int_equal(store_block_syms_load(b, &sy, &err), 0);
	assert_int_equal(sy->nsets, nsets);
	/* The rollups: per series, rows per leaf add up to the series' rows
	 * (store_block_check compared every entry with the pages above). */
	assert_non_null(sy->rsum);
	assert_int_equal(sy->rh_width, 100 * MS);
	for (uint32_t s = 0; s < b->nseries; s++) {
		uint64_t rows = 0, hrows = 0;

		for (uint64_t e = sy->rsum_off[s]; e < sy->rsum_off[s + 1]; e++)
			rows += sy->rsum[e].rows;
		assert_int_equal(rows, b->series[s].pub.nrows);
		assert_true(sy->rh_off[s + 1] - sy->rh_off[s] >= 2);
		for (uint64_t e = sy->rh_off[s]; e < sy->rh_off[s + 1]; e++)
			hrows += sy->rh[e].nrows;
		assert_int_equal(hrows, b->series[s].pub.nrows);
	}

	/* Every row with its set, as the head has it. */
	buf_init(&k, 0);
	tl_totals_init(&want);
	tl_totals_init(&got);
	struct store_source hsrc = { 0 }, bsrc = { 0 };
	hsrc.dict = store_head_dict(h);
	hsrc.stacks = store_head_stacks(h, &hsrc.nstacks);
	bsrc.dict = &sy->dict;
	bsrc.stacks = sy->nodes;
	bsrc.nstacks = sy->nnodes;
	for (size_t i = 0; i < store_head_nseries(h); i++) {
		const struct store_row *rows;
		const struct store_series *s = store_head_series_at(h, i, &rows);

		for (uint64_t r = 0; r < s->nrows; r++) {
			attr_key(&k, &hsrc, s, &rows[r], hs);
			tl_totals_add(&want, k.p, k.len, rows[r].value, 1);
		}
	}
	for (uint32_t pg = 0; pg < b->meta.npages; pg++) {
		assert_int_equal(store_block_page_rows(b, pg, sy, INT64_MIN, INT64_MAX, &sc, &err),
				 0);
		for (size_t r = 0; r < sc.rows.n; r++) {
			attr_key(&k, &bsrc, &b->series[b->pages[pg].series].pub, &sc.rows.v[r],
				 sy->sets);
			tl_totals_add(&got, k.p, k.len, sc.rows.v[r].value, 1);
		}
		/* Without the stack column: the same times, values and sets. */
		size_t n = sc.rows.n;
		struct store_row *wr = xmalloc(sizeof(*wr) * (n + 1));
		memcpy(wr, sc.rows.v, sizeof(*wr) * n);
		assert_int_equal(store_block_page_times(b, pg, sy, INT64_MIN, INT64_MAX, &sc, &err),
				 0);
		assert_int_equal(sc.rows.n, n);
		for (size_t r = 0; r < n; r++) {
			assert_int_equal(sc.rows.v[r].ts_ns, wr[r].ts_ns);
			assert_int_equal(sc.rows.v[r].value, wr[r].value);
			assert_int_equal(sc.rows.v[r].attrs, wr[r].attrs);
			assert_int_equal(sc.rows.v[r].stack, 0);
		}
		free(wr);
	}
	assert_true(tl_totals_equal(&want, &got));
	assert_true(want.keys.n > 100);
	tl_totals_release(&want);
	tl_totals_release(&got);
	buf_release(&k);

	/* A flipped byte in an ATR frame: named with the frame's offset. */
	const struct store_block_col_ref *ar = NULL;
	for (uint32_t pg = 0; pg < b->meta.npages && !ar; pg++)
		if (b->attr_cols[pg].raw_len)
			ar = &b->attr_cols[pg];
	assert_non_null(ar);
	uint64_t at = ar->offset;
	p = xasprintf("%s/samples", bdir);
	flip(p, at + ar->stored_len / 2);
	prof_err_init(&err);
	assert_int_not_equal(store_block_check(bdir, NULL, &err), 0);
	print_message("ATR: %s (offset %" PRId64 ")\n", err.msg, err.offset);
	assert_non_null(strstr(err.msg, "samples"));
	assert_int_equal(err.offset, (int64_t)at);
	flip(p, at + ar->stored_len / 2); /* repaired */
	/* A flipped byte in a rollup: check names it; loading ignores the
	 * rollups (scans then read the rows) instead of losing the block. */
	for (int k = 0; k < 2; k++) {
		const char *id = k ? "RHRS" : "RSER";
		struct store_chunkfile sf;

		assert_int_equal(store_chunkfile_open(&sf, p, STORE_BLOCK_MAGIC_SAMPLES,
						      STORE_BLOCK_VERSION, false, &err),
				 0);
		const struct store_chunkfile_entry *re = store_chunkfile_find(&sf, id);
		assert_non_null(re);
		uint64_t roff = re->offset + re->stored_len / 2;
		store_chunkfile_close(&sf);
		flip(p, roff);
		prof_err_init(&err);
		assert_int_not_equal(store_block_check(bdir, NULL, &err), 0);
		print_message("%s: %s\n", id, err.msg);
		assert_non_null(strstr(err.msg, id));
		struct store_block_syms *sy2 = NULL;
		prof_err_init(&err);
		assert_int_equal(store_block_syms_load(b, &sy2, &err), 0);
		/* only the damaged one is lost */
		if (k)
			assert_non_null(sy2->rsum);
		else
			assert_null(sy2->rsum);
		assert_int_equal(sy2->rh_width, k ? 0 : 100 * MS);
		store_block_syms_free(sy2);
		flip(p, roff); /* repaired */
	}
	free(p);
	store_block_syms_free(sy);
	store_block_free(b);
	store_block_scratch_release(&sc);

	/* The writer refuses a set id outside the table it was given. */
	{
		struct store_block_writer *w;
		struct model_profile d;
		struct store_stack_node nodes[2] = { { 0, 0 }, { 0, 1 } };
		uint64_t leaf[2] = { 0, 1 };
		struct store_label l0 = { "host.name", "a" };
		struct store_row bad[1] = { { T0, 1, 1, 5 } };
		char *blocks = xasprintf("%s/blocks", f->dir);
		struct model_line ln = { 0 };

		model_profile_init(&d);
		ln.function = model_function_intern(&d, model_intern(&d, "f"), 0, 0, 0);
		model_location_add(&d, 0, 0, &ln, 1);
		prof_err_init(&err);
		assert_int_equal(store_block_writer_new(blocks, 0x99, NULL, &w, &err), 0);
		assert_int_equal(store_block_writer_symbols(w, &d, nodes, 2, leaf, hs, nsets, &err),
				 0);
		bad[0].attrs = (uint32_t)nsets;
		assert_int_equal(store_block_writer_series(w, "t", &l0, 1, bad, 1, &err), -EINVAL);
		assert_non_null(strstr(err.msg, "attribute set"));
		store_block_writer_free(w);
		model_profile_release(&d);
		free(blocks);
	}
	free(bdir);
	store_head_free(h);
}

/*
 * The hour rollup (RHRS) with 10 s buckets over 100 s of two series, one
 * whose rows all have one value (entries carry rows only) and one whose
 * values differ: for ranges cut anywhere, the covered buckets plus the
 * pages outside them equal the pages over the whole range.
 */
static void test_block_hour_rollup_covers_whole_buckets_exactly(void **state)
{
	static const char *const st[] = { "main;a;b", "main;a;c", "main;d", "x" };
	struct fixture *f = *state;
	struct store_head *h = store_head_new();
	struct store_block *b;
	struct store_block_syms *sy;
	struct store_block_scratch sc = { 0 };
	struct prof_err err;
	uint64_t used = 0, partial = 0;

	for (int i = 0; i < 400; i++) {
		for (int s = 0; s < 2; s++) {
			struct model_profile p;

			tl_profile_init(&p, s ? "varying" : "uniform");
			tl_sample(&p, st[(i * 7 + s) % 4 == 3 && i % 5 ? 0 : (i * 7 + s) % 4],
				  s ? 1 + i % 13 : 5, T0 + (int64_t)i * 250 * MS + 3);
			prof_err_init(&err);
			assert_int_equal(store_head_add(h, &p, T0, &err), 0);
			model_profile_release(&p);
		}
	}
	g_rollup = true;
	g_bucket = 10 * SEC;
	char *bdir = write_block(f->dir, h, 0x99, 64);
	g_rollup = false;
	g_bucket = 0;
	prof_err_init(&err);
	assert_int_equal(store_block_check(bdir, NULL, &err), 0);
	assert_int_equal(store_block_open(bdir, &b, &err), 0);
	assert_int_equal(store_block_syms_load(b, &sy, &err), 0);
	assert_int_equal(sy->rh_width, 10 * SEC);
	assert_null(sy->rsum);
	assert_int_equal(b->nseries, 2);
	for (uint32_t s = 0; s < 2; s++) {
		bool uni = !strcmp(b->series[s].pub.labels[0].value, "uniform");

		/* 100 s from T0 (a multiple of 10 s): buckets 0..9 */
		assert_int_equal(sy->rh_off[s + 1] - sy->rh_off[s], 10);
		for (uint64_t e = sy->rh_off[s]; e < sy->rh_off[s + 1]; e++) {
			assert_int_equal(sy->rh[e].nrows, 40);
			assert_int_equal(sy->rh[e].value, uni ? 5 : 0);
			assert_int_equal(sy->rh[e].bucket,
					 T0 / (10 * SEC) + (int64_t)(e - sy->rh_off[s]));
		}
	}
	struct store_leaf_acc *want = xcalloc(sy->nleaves + 1, sizeof(*want));
	struct store_leaf_acc *got = xcalloc(sy->nleaves + 1, sizeof(*got));
	for (int k = 0; k < 300; k++) {
		int64_t from = T0 - 5 * SEC + (int64_t)((k * 7919) % 1100) * 100 * MS;
		int64_t to = from + (int64_t)((k * 104729) % 700) * 250 * MS + (k % 3) * MS;

		if (k % 10 == 0) {
			/* exactly bucket edges */
			from = T0 + (k % 7) * 10 * SEC;
			to = from + (k % 4 + 1) * 10 * SEC - 1;
		}
		memset(want, 0, (sy->nleaves + 1) * sizeof(*want));
		memset(got, 0, (sy->nleaves + 1) * sizeof(*got));
		uint64_t nwant = 0, ngot = 0, n;
		for (uint32_t s = 0; s < 2; s++) {
			const struct store_block_series *se = &b->series[s];
			int64_t lo, hi;
			uint32_t nb = store_block_hours_add(b, sy, s, from, to, got, &lo, &hi, &n);

			ngot += n;
			used += nb;
			if (nb) {
				assert_true(lo <= hi);
				partial += lo > se->pub.min_ts_ns || hi < se->pub.max_ts_ns;
			}
			for (uint32_t p = se->first_page; p < se->first_page + se->npages; p++) {
				assert_int_equal(store_block_page_totals(b, p, from, to, want, &n,
									 &sc, &err),
						 0);
				nwant += n;
				if (!nb) {
					assert_int_equal(store_block_page_totals(b, p, from, to,
										 got, &n, &sc,
										 &err),
							 0);
					ngot += n;
					continue;
				}
				if (from < lo) {
					assert_int_equal(store_block_page_totals(b, p, from, lo - 1,
										 got, &n, &sc,
										 &err),
							 0);
					ngot += n;
				}
				if (to > hi) {
					assert_int_equal(store_block_page_totals(b, p, hi + 1, to,
										 got, &n, &sc,
										 &err),
							 0);
					ngot += n;
				}
			}
		}
		assert_int_equal(ngot, nwant);
		assert_memory_equal(got, want, (sy->nleaves + 1) * sizeof(*want));
	}
	print_message("buckets from the rollup: %" PRIu64 ", partial-series uses: %" PRIu64 "\n",
		      used, partial);
	assert_true(used > 300);
	assert_true(partial > 50);
	/* A range inside one bucket takes nothing from the rollup. */
	{
		int64_t lo, hi;
		uint64_t n;

		assert_int_equal(store_block_hours_add(b, sy, 0, T0 + 11 * SEC, T0 + 19 * SEC, got,
						       &lo, &hi, &n),
				 0);
		assert_true(lo > hi);
		assert_int_equal(n, 0);
	}
	free(want);
	free(got);
	store_block_scratch_release(&sc);
	store_block_syms_free(sy);
	store_block_free(b);
	free(bdir);
	store_head_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_block_round_trip_with_gc_preorder_and_ranked_leaves, setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_select_and_totals_agree_with_rows, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_block_time_marks_cut_long_pages_exactly, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_block_page_steps_equal_rows_with_any_deltas,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_writer_refuses_bad_input, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_block_flipped_byte_in_each_file_is_named_with_offset, setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_hour_rollup_covers_whole_buckets_exactly,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_block_attribute_sets_round_trip_and_damage,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
