// SPDX-License-Identifier: Apache-2.0
/*
 * test_store_prop.c - property test: random interleavings of ingest,
 * flush, compaction (policy-driven and forced), retention and restart
 * give, after every step, exactly what a simple in-memory reference model
 * gives: the per-(series, stack) totals of the whole store (rows scan),
 * and the per-stack totals of a random query (type, a host matcher, a
 * time range, sometimes a per-sample thread.name matcher and a trace id)
 * through the totals and the rows scans. Compacted blocks carry hour
 * rollups (per-series stack totals per time bucket; here the bucket is a
 * few seconds, so the test's ranges of seconds cut them) that totals
 * scans use for the buckets their range covers, reading only the partial
 * buckets at the range's ends from rows; the test checks they were used,
 * also by ranges that cover part of a series, and agreed.
 *
 * Samples carry random per-sample attributes: a thread.name (or none),
 * sometimes a per-sample host.name that overrides the series label for
 * matching, and sometimes a link to one of a few traces. The rows-form
 * totals key on them too, so every flush, compaction and restart must
 * keep each row's attribute set.
 *
 * The model keeps samples in a list of blocks and a head and applies the
 * documented rules itself: a flush turns the head into a block; a
 * compaction merges the blocks of the first eligible aligned window (all
 * of a closed window, the flushed ones of a window with at least
 * compact_min_blocks of them; any window with two when forced);
 * retention drops blocks whose newest sample is older than the cutoff.
 * Seeds are fixed so a failure replays; SEED=n in the environment adds
 * one.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/strtab.h"
#include "store/store.h"

#include <setjmp.h>
#include <cmocka.h>

#include "unit/testlib.h"

#define MS  1000000LL
#define SEC 1000000000LL
#define T0  (1700000000LL * SEC)
#define W   (60 * SEC) /* compaction window */
#define RET (150 * SEC)

struct msample {
	uint32_t key; /* "type|labels|stack#attrs" in the model's keys */
	uint8_t host;
	uint8_t thread; /* 0 = none, else threads[thread - 1] */
	uint8_t hover;	/* 1: a per-sample host.name "z" */
	uint8_t link;	/* 0 = none, else trace link - 1 */
	uint32_t stack; /* index into the stack pool */
	int64_t value, ts;
};

static const char *const threads[] = { "main", "worker-1", "worker-2" };
static uint64_t g_rollup_series;  /* series the totals scans took from rollups */
static uint64_t g_partial_bucket; /* buckets taken by queries over part of the data */

/* Trace k (0..2) and its span: bytes derived from k. */
static void link_ids(int k, uint8_t trace[16], uint8_t span[8])
{
	for (int i = 0; i < 16; i++)
		trace[i] = (uint8_t)(0x10 * (k + 1) + i);
	for (int i = 0; i < 8; i++)
		span[i] = (uint8_t)(0xa0 + 8 * k + i);
}

/* "#" then the attribute set as the rows callback writes it. */
static void attrs_desc(char *out, size_t n, int thread, int hover, int link)
{
	size_t k = (size_t)snprintf(out, n, "#");

	if (hover)
		k += (size_t)snprintf(out + k, n - k, "host.name=z,");
	if (thread)
		k += (size_t)snprintf(out + k, n - k, "thread.name=%s,", threads[thread - 1]);
	if (link)
		snprintf(out + k, n - k, "@%d", link - 1);
}

/* Rows callback: series | stack # attrs, the same string attrs_desc builds. */
static int rows_attrs_cb(void *arg, const struct store_source *src, const struct store_series *s,
			 const struct store_row *rows, size_t n)
{
	struct tl_totals *t = arg;

	for (size_t i = 0; i < n; i++) {
		const struct store_attr_set *a = &src->attrs[rows[i].attrs];

		assert_true(rows[i].attrs < src->nattrs);
		buf_reset(&t->tmp);
		tl_series_key(s, &t->tmp);
		tl_folded(src, rows[i].stack, &t->tmp);
		buf_addstr(&t->tmp, "#");
		for (uint32_t j = 0; j < a->nlabels; j++)
			buf_addf(&t->tmp, "%s=%s,", a->labels[j].name, a->labels[j].value);
		if (a->has_link) {
			uint8_t tr[16], sp[8];
			int k = a->trace_id[0] / 0x10 - 1;

			link_ids(k, tr, sp);
			assert_memory_equal(tr, a->trace_id, 16);
			assert_memory_equal(sp, a->span_id, 8);
			buf_addf(&t->tmp, "@%d", k);
		}
		tl_totals_add(t, t->tmp.p, t->tmp.len, rows[i].value, 1);
	}
	return 0;
}

struct mblock {
	VEC(struct msample) s;
	int64_t min, max;
	uint32_t level;
	uint64_t order; /* creation order, as block ids */
};

struct model {
	struct strtab keys;
	VEC(struct mblock) blocks;
	VEC(struct msample) head;
	uint64_t next_order;
};

static uint64_t rnd_state;

static uint64_t rnd(void)
{
	uint64_t z = (rnd_state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint32_t rndn(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

#define NSTACKS 24
static char stacks[NSTACKS][128];
static const char *const hosts[] = { "a", "b", "c" };

static void make_stacks(void)
{
	static const char *const fn[] = { "main", "run",  "loop", "parse", "eval", "gc",
					  "io",	  "read", "lock", "hash",  "sort", "alloc" };

	for (int i = 0; i < NSTACKS; i++) {
		size_t n = 0;
		int depth = 1 + rndn(7);

		n += (size_t)snprintf(stacks[i] + n, sizeof(stacks[i]) - n, "main");
		for (int d = 1; d < depth; d++)
			n += (size_t)snprintf(stacks[i] + n, sizeof(stacks[i]) - n, ";%s",
					      fn[rndn(PROF_ARRAY_SIZE(fn))]);
	}
}

static void mblock_minmax(struct mblock *b)
{
	b->min = INT64_MAX;
	b->max = INT64_MIN;
	for (size_t i = 0; i < b->s.n; i++) {
		b->min = PROF_MIN(b->min, b->s.v[i].ts);
		b->max = PROF_MAX(b->max, b->s.v[i].ts);
	}
}

static int cmp_block(const void *a, const void *b)
{
	const struct mblock *x = a, *y = b;

	if (x->min != y->min)
		return x->min < y->min ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* The store's compaction policy (maint.c pick), applied to the model. */
static uint32_t model_compact(struct model *m, bool force, uint32_t min_blocks)
{
	int64_t newest = INT64_MIN;
	size_t n = m->blocks.n;

	if (n > 1)
		qsort(m->blocks.v, n, sizeof(*m->blocks.v), cmp_block);
	for (size_t i = 0; i < n; i++)
		newest = PROF_MAX(newest, m->blocks.v[i].max);
	for (size_t i = 0; i < m->head.n; i++)
		newest = PROF_MAX(newest, m->head.v[i].ts);
	for (size_t i = 0; i < n;) {
		int64_t win = floor_div(m->blocks.v[i].min, W);
		size_t j = i, level1 = 0;

		while (j < n && floor_div(m->blocks.v[j].min, W) == win) {
			level1 += m->blocks.v[j].level == 1;
			j++;
		}
		bool closed = force || newest >= (win + 1) * W;
		if (j - i >= 2 && (closed || level1 >= min_blocks)) {
			struct mblock nb = { 0 };
			VEC(size_t) pick = { 0 };

			for (size_t k = i; k < j; k++)
				if (closed || m->blocks.v[k].level == 1)
					VEC_PUSH(&pick, k);
			if (pick.n >= 2) {
				for (size_t k = 0; k < pick.n; k++) {
					struct mblock *b = &m->blocks.v[pick.v[k]];

					nb.level = PROF_MAX(nb.level, b->level + 1);
					for (size_t r = 0; r < b->s.n; r++)
						VEC_PUSH(&nb.s, b->s.v[r]);
					VEC_FREE(&b->s);
					b->level = UINT32_MAX; /* marked gone */
				}
				size_t w = 0;
				for (size_t k = 0; k < n; k++)
					if (m->blocks.v[k].level != UINT32_MAX)
						m->blocks.v[w++] = m->blocks.v[k];
				m->blocks.n = w;
				mblock_minmax(&nb);
				nb.order = m->next_order++;
				VEC_PUSH(&m->blocks, nb);
				uint32_t merged = (uint32_t)pick.n;
				VEC_FREE(&pick);
				return merged;
			}
			VEC_FREE(&pick);
		}
		i = j;
	}
	return 0;
}

static void model_totals(const struct model *m, struct tl_totals *t)
{
	for (size_t b = 0; b <= m->blocks.n; b++) {
		const struct msample *s = b < m->blocks.n ? m->blocks.v[b].s.v : m->head.v;
		size_t n = b < m->blocks.n ? m->blocks.v[b].s.n : m->head.n;

		for (size_t i = 0; i < n; i++)
			tl_totals_add(t, m->keys.s[s[i].key], m->keys.len[s[i].key], s[i].value, 1);
	}
}

/* One random query: type, host matcher, range, thread matcher, trace; per-stack totals. */
static void check_query(struct store *st, const struct model *m)
{
	struct store_matcher mt[2];
	struct prof_err err;
	struct tl_totals want, got, got_rows;
	int op = rndn(4), top = rndn(4), trace = (int)rndn(5) - 1; /* -1 = any */
	const char *h = rndn(6) == 0 ? "z" : hosts[rndn(3)];
	const char *th = threads[rndn(3)];
	uint8_t tr[16], sp[8];
	struct store_link_filter lf = { 0 };
	size_t nm = 0;
	int64_t from = T0 + (int64_t)rndn(400) * SEC - 30 * SEC,
		to = from + (int64_t)rndn(200) * SEC;
	bool everything = rndn(3) == 0;

	if (rndn(2))
		from += (int64_t)rndn(1000) * MS; /* not on a bucket edge */
	if (everything) {
		/* everything: whole series of compacted blocks come from rollups */
		from = T0 - 1000 * SEC;
		to = T0 + 100000 * SEC;
	}
	prof_err_init(&err);
	if (op == 1)
		assert_int_equal(
			store_matcher_init(&mt[nm++], "host.name", STORE_MATCH_NE, h, &err), 0);
	else if (op == 2)
		assert_int_equal(
			store_matcher_init(&mt[nm++], "host.name", STORE_MATCH_RE, "[abz]", &err),
			0);
	else if (op == 0)
		assert_int_equal(
			store_matcher_init(&mt[nm++], "host.name", STORE_MATCH_EQ, h, &err), 0);
	if (top == 1)
		assert_int_equal(
			store_matcher_init(&mt[nm++], "thread.name", STORE_MATCH_EQ, th, &err), 0);
	else if (top == 2)
		assert_int_equal(
			store_matcher_init(&mt[nm++], "thread.name", STORE_MATCH_NE, "", &err), 0);
	else if (top == 3)
		assert_int_equal(store_matcher_init(&mt[nm++], "thread.name", STORE_MATCH_RE,
						    "work.*", &err),
				 0);
	if (trace >= 0) {
		link_ids(trace, tr, sp);
		lf.trace_id = tr;
		if (rndn(2))
			lf.span_id = sp;
	}
	tl_totals_init(&want);
	tl_totals_init(&got);
	tl_totals_init(&got_rows);
	for (size_t b = 0; b <= m->blocks.n; b++) {
		const struct msample *s = b < m->blocks.n ? m->blocks.v[b].s.v : m->head.v;
		size_t n = b < m->blocks.n ? m->blocks.v[b].s.n : m->head.n;

		for (size_t i = 0; i < n; i++) {
			const char *sh = s[i].hover ? "z" : hosts[s[i].host];
			const char *sth = s[i].thread ? threads[s[i].thread - 1] : "";
			bool match = op == 1   ? strcmp(sh, h) != 0
				     : op == 2 ? strchr("abz", sh[0]) != NULL
					       : !strcmp(sh, h);

			if (op == 3)
				match = true; /* no matcher */
			if (top == 1)
				match = match && !strcmp(sth, th);
			else if (top == 2)
				match = match && *sth;
			else if (top == 3)
				match = match && !strncmp(sth, "work", 4);
			if (trace >= 0)
				match = match && s[i].link == trace + 1;
			if (match && s[i].ts >= from && s[i].ts <= to)
				tl_totals_add(&want, stacks[s[i].stack], strlen(stacks[s[i].stack]),
					      s[i].value, 1);
		}
	}
	struct store_query q = { TL_CPU, nm ? mt : NULL, nm, from, to };
	struct store_visitor vt = { .arg = &got, .totals = tl_totals_cb };
	struct store_visitor vr = { .arg = &got_rows, .rows = tl_rows_cb };
	struct store_scan_stats sst;
	assert_int_equal(store_scan_ex(st, &q, &lf, &vt, &sst, &err), 0);
	g_rollup_series += sst.rollup_series;
	if (!everything)
		g_partial_bucket += sst.rollup_buckets;
	if (!tl_totals_equal(&want, &got))
		fail_msg("query op=%d host=%s thread op=%d %s trace %d [%" PRId64 ", %" PRId64
			 "] differs",
			 op, h, top, th, trace, (from - T0) / SEC, (to - T0) / SEC);
	/* The rows form, summed per stack, agrees. */
	assert_int_equal(store_scan_ex(st, &q, &lf, &vr, NULL, &err), 0);
	struct tl_totals per_stack;
	tl_totals_init(&per_stack);
	for (uint32_t k = 1; k < got_rows.keys.n; k++) {
		const char *key = got_rows.keys.s[k], *bar = strrchr(key, '|');

		tl_totals_add(&per_stack, bar + 1, strlen(bar + 1), got_rows.val.v[k], 0);
	}
	if (!tl_totals_equal(&want, &per_stack))
		fail_msg("rows query op=%d thread op=%d trace %d differs", op, top, trace);
	tl_totals_release(&per_stack);
	tl_totals_release(&want);
	tl_totals_release(&got);
	tl_totals_release(&got_rows);
	for (size_t i = 0; i < nm; i++)
		store_matcher_release(&mt[i]);
}

/*
 * Give the last sample of @p its attributes (tl_sample added it without):
 * labels in a random order, to check the store sorts them.
 */
static void sample_attrs(struct model_profile *p, int thread, int hover, int link)
{
	struct model_sample *s = &p->samples.v[p->samples.n - 1];
	struct model_label l[2];
	uint32_t n = 0;

	memset(l, 0, sizeof(l));
	if (thread) {
		l[n].key = model_intern(p, "thread.name");
		l[n++].str = model_intern(p, threads[thread - 1]);
	}
	if (hover) {
		l[n].key = model_intern(p, "host.name");
		l[n++].str = model_intern(p, "z");
	}
	s->label_off = (uint32_t)p->labels.n;
	s->nlabels = n;
	for (uint32_t i = 0; i < n; i++)
		VEC_PUSH(&p->labels, l[i]);
	if (link) {
		struct model_link k;

		link_ids(link - 1, k.trace_id, k.span_id);
		VEC_PUSH(&p->links, k);
		s->link = (uint32_t)p->links.n - 1;
	}
}

static void run_seed(uint64_t seed, int steps)
{
	char *dir = tl_tmpdir("prop");
	struct store_options o = tl_opts();
	struct model m = { 0 };
	struct prof_err err;
	struct store *st;
	int64_t clock = T0;
	unsigned counts[6] = { 0 };

	rnd_state = seed;
	make_stacks();
	strtab_init(&m.keys);
	o.compact_window_ns = W;
	o.compact_min_blocks = 3;
	o.retention_ns = RET;
	o.page_rows = 8 + rndn(40); /* several pages per series */
	o.rollup_bucket_ns = (int64_t)(2 + rndn(9)) * SEC;
	st = tl_open(dir, &o);
	assert_non_null(st);
	for (int step = 0; step < steps; step++) {
		uint32_t r = rndn(100), n;

		prof_err_init(&err);
		if (r < 60) {
			/* ingest: 1..6 samples, time moves on; sometimes backfill */
			struct model_profile p;
			uint8_t host = (uint8_t)rndn(3);
			int ns = 1 + rndn(6);

			clock += (int64_t)rndn(4000) * MS;
			tl_profile_init(&p, hosts[host]);
			for (int k = 0; k < ns; k++) {
				uint32_t si = rndn(NSTACKS);
				int64_t v = rndn(10) == 0 ? 0 : 1 + rndn(100);
				/* host 2 samples like a CPU profile: one value, so its
				 * pages and hour buckets take the one-value paths */
				if (host == 2 && v)
					v = 7;
				int64_t ts = clock - (rndn(8) == 0 ? (int64_t)rndn(90) * SEC : 0) +
					     (int64_t)k * MS;
				char key[256];

				uint8_t thread = (uint8_t)rndn(4), hover = rndn(8) == 0,
					link = rndn(3) ? 0 : (uint8_t)(1 + rndn(3));
				char ad[128];

				tl_sample(&p, stacks[si], v, ts);
				sample_attrs(&p, thread, hover, link);
				if (!v)
					continue; /* zero values are not stored */
				attrs_desc(ad, sizeof(ad), thread, hover, link);
				snprintf(key, sizeof(key), "%s|host.name=%s|%s%s", TL_CPU,
					 hosts[host], stacks[si], ad);
				struct msample s = { strtab_intern_cstr(&m.keys, key),
						     host,
						     thread,
						     hover,
						     link,
						     si,
						     v,
						     ts };
				VEC_PUSH(&m.head, s);
			}
			assert_int_equal(tl_ingest(st, &p), 0);
			model_profile_release(&p);
			counts[0]++;
		} else if (r < 75) {
			assert_int_equal(store_flush(st, &err), 0);
			if (m.head.n) {
				struct mblock b = { 0 };

				b.s.v = m.head.v;
				b.s.n = m.head.n;
				b.s.cap = m.head.cap;
				memset(&m.head, 0, sizeof(m.head));
				b.level = 1;
				b.order = m.next_order++;
				mblock_minmax(&b);
				VEC_PUSH(&m.blocks, b);
			}
			counts[1]++;
		} else if (r < 87) {
			bool force = rndn(4) == 0;

			assert_int_equal(store_compact(st, force, &n, &err), 0);
			assert_int_equal(n, model_compact(&m, force, o.compact_min_blocks));
			counts[2]++;
		} else if (r < 92) {
			int64_t now = clock + (int64_t)rndn(60) * SEC;
			uint32_t want = 0;

			assert_int_equal(store_apply_retention(st, now, &n, &err), 0);
			for (size_t i = 0; i < m.blocks.n;) {
				if (m.blocks.v[i].max < now - RET) {
					VEC_FREE(&m.blocks.v[i].s);
					m.blocks.v[i] = m.blocks.v[--m.blocks.n];
					want++;
				} else {
					i++;
				}
			}
			assert_int_equal(n, want);
			counts[3]++;
		} else {
			store_close(st);
			st = tl_open(dir, &o);
			assert_non_null(st);
			counts[4]++;
		}
		/* After every step: the whole store, and one random query. */
		struct tl_totals want, got;
		tl_totals_init(&want);
		tl_totals_init(&got);
		model_totals(&m, &want);
		{
			struct store_visitor v = { .arg = &got, .rows = rows_attrs_cb };
			struct store_query all = { NULL, NULL, 0, INT64_MIN, INT64_MAX };

			assert_int_equal(store_scan(st, &all, &v, NULL, &err), 0);
		}
		if (!tl_totals_equal(&want, &got))
			fail_msg("seed %" PRIu64 " step %d (op %u): store differs from the model",
				 seed, step, r);
		tl_totals_release(&want);
		tl_totals_release(&got);
		check_query(st, &m);
		struct store_stats ss;
		store_get_stats(st, &ss);
		assert_int_equal(ss.blocks, m.blocks.n);
	}
	print_message("seed %" PRIu64 ": %u ingests, %u flushes, %u compactions, %u retentions, "
		      "%u restarts; %zu blocks left\n",
		      seed, counts[0], counts[1], counts[2], counts[3], counts[4], m.blocks.n);
	store_close(st);
	for (size_t i = 0; i < m.blocks.n; i++)
		VEC_FREE(&m.blocks.v[i].s);
	VEC_FREE(&m.blocks);
	VEC_FREE(&m.head);
	strtab_release(&m.keys);
	tl_rmdir(dir);
	free(dir);
}

static void test_store_matches_the_reference_model_under_random_operations(void **state)
{
	static const uint64_t seeds[] = { 1, 2, 3, 42, 1234567 };
	const char *env = getenv("SEED");

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(seeds); i++)
		run_seed(seeds[i], 250);
	/* Compacted blocks carry rollups, and queries covering a whole series
	 * of one took it from there (and still equalled the model). */
	print_message("series summed from rollups: %" PRIu64
		      ", buckets from them in partial ranges: %" PRIu64 "\n",
		      g_rollup_series, g_partial_bucket);
	assert_true(g_rollup_series > 0);
	assert_true(g_partial_bucket > 0);
	uint64_t extra;
	if (env && !parse_u64(env, &extra))
		run_seed(extra, 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_matches_the_reference_model_under_random_operations),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
