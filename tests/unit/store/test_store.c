// SPDX-License-Identifier: Apache-2.0
/*
 * test_store.c - the store across flushes, compaction, retention and
 * restarts: per-(series, stack) totals never change except by retention;
 * flushed WAL segments are deleted; a crash after a block's rename but
 * before the checkpoint, in the middle of a block write (.tmp) or after a
 * compaction's rename but before its sources are deleted replays nothing
 * twice; the head's memory stays under its bound (flushing instead of
 * growing), also with the background thread and concurrent ingest, and
 * while the WAL is replayed at start (small segments, flushed between); a
 * damaged page is skipped and reported with its file and offset while
 * the rest stays queryable; a damaged WAL record in the middle loses only
 * that record.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/mem.h"
#include "store/block.h"
#include "format/otlp.h"
#include "format/pprof.h"
#include "store/store.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>

#include <setjmp.h>
#include <cmocka.h>

#include "unit/testlib.h"

#define SEC 1000000000LL
#define T0  (1700000000LL * SEC)

static const char *const stacks[] = {
	"main;run;compute;leaf_a", "main;run;compute;leaf_b", "main;run;io;read", "main;gc",
	"main;run;compute",	   "other;thread;loop",
};

/* Profile @i: 12 samples over a few stacks, hosts alternating, times spread. */
static void make_profile(struct model_profile *p, int i, struct tl_totals *expect)
{
	char host[32];

	snprintf(host, sizeof(host), "host-%d", i % 5);
	tl_profile_init(p, host);
	for (int k = 0; k < 12; k++) {
		const char *st = stacks[(i * 7 + k * 3) % PROF_ARRAY_SIZE(stacks)];
		int64_t v = 1 + (i + k) % 5;
		int64_t ts = T0 + (int64_t)i * 10 * SEC + k * 37 * 1000000LL;

		tl_sample(p, st, v, ts);
		if (expect) {
			char key[512];

			snprintf(key, sizeof(key), "%s|host.name=%s|%s", TL_CPU, host, st);
			tl_totals_add(expect, key, strlen(key), v, 1);
		}
	}
}

static void ingest_range(struct store *st, int from, int to, struct tl_totals *expect)
{
	for (int i = from; i < to; i++) {
		struct model_profile p;

		make_profile(&p, i, expect);
		assert_int_equal(tl_ingest(st, &p), 0);
		model_profile_release(&p);
	}
}

static void assert_store_equals(struct store *st, const struct tl_totals *expect)
{
	struct tl_totals got;

	tl_totals_init(&got);
	assert_int_equal(tl_scan_rows(st, NULL, &got, NULL), 0);
	assert_true(tl_totals_equal(&got, expect));
	tl_totals_release(&got);
}

static size_t count_entries(const char *dir, const char *suffix)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), k = strlen(suffix);

		if (de->d_name[0] != '.' && l >= k && !strcmp(de->d_name + l - k, suffix))
			n++;
	}
	closedir(d);
	return n;
}

static void test_store_flush_compact_retention_keep_totals(void **state)
{
	char *dir = tl_tmpdir("store");
	char *wal = xasprintf("%s/wal", dir), *blocks = xasprintf("%s/blocks", dir);
	struct store_options o = tl_opts();
	struct tl_totals expect;
	struct store_stats ss;
	struct prof_err err;
	struct store *st;
	uint32_t n;

	(void)state;
	tl_totals_init(&expect);
	st = tl_open(dir, &o);
	assert_non_null(st);
	ingest_range(st, 0, 10, &expect);
	assert_store_equals(st, &expect);

	prof_err_init(&err);
	assert_int_equal(store_flush(st, &err), 0);
	assert_int_equal(count_entries(blocks, ""), 1);
	assert_int_equal(count_entries(wal, ".wal"), 1); /* only the new, current segment */
	store_get_stats(st, &ss);
	assert_int_equal(ss.blocks, 1);
	assert_int_equal(ss.head.rows, 0);
	assert_int_equal(ss.block_rows, 120);
	assert_store_equals(st, &expect);
	/* The flushed block has its hour rollup: a range covering it reads no page. */
	struct store_query qall = { TL_CPU, NULL, 0, T0 - 86400 * SEC, T0 + 86400 * SEC };
	struct store_scan_stats fst;
	struct tl_totals fa;
	tl_totals_init(&fa);
	assert_int_equal(tl_scan_totals(st, &qall, &fa, &fst), 0);
	assert_true(fst.rollup_series > 0);
	assert_int_equal(fst.rollup_series, fst.series);
	assert_int_equal(fst.pages, 0);
	assert_true(fst.rows > 0);
	tl_totals_release(&fa);

	/* Two more blocks and a head, then a restart. */
	ingest_range(st, 10, 20, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	ingest_range(st, 20, 30, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	ingest_range(st, 30, 35, &expect);
	store_close(st);
	st = tl_open(dir, &o);
	assert_non_null(st);
	assert_store_equals(st, &expect);
	store_get_stats(st, &ss);
	assert_int_equal(ss.blocks, 3);
	assert_int_equal(ss.head.rows, 60);

	/* The three blocks share one 24 h window: one forced compaction. */
	assert_int_equal(store_compact(st, true, &n, &err), 0);
	assert_int_equal(n, 3);
	assert_int_equal(count_entries(blocks, ""), 1);
	store_get_stats(st, &ss);
	assert_int_equal(ss.blocks, 1);
	assert_int_equal(ss.block_rows, 360);
	assert_int_equal(ss.compactions, 1);
	assert_store_equals(st, &expect);
	assert_int_equal(store_compact(st, true, &n, &err), 0);
	assert_int_equal(n, 0);

	/* The totals form agrees with the rows form, with and without a range. */
	struct tl_totals a, b;
	struct store_query q = { TL_CPU, NULL, 0, T0 + 50 * SEC, T0 + 320 * SEC + 123 };
	struct store_scan_stats sst;
	tl_totals_init(&a);
	tl_totals_init(&b);
	assert_int_equal(tl_scan_totals(st, &q, &a, &sst), 0);
	assert_int_equal(sst.sources, 2); /* the block and the head */
	struct store_visitor v = { .arg = &b, .rows = tl_rows_cb };
	assert_int_equal(store_scan(st, &q, &v, NULL, &err), 0);
	/* fold b's per-series keys into per-stack totals */
	struct tl_totals b2;
	tl_totals_init(&b2);
	for (uint32_t i = 1; i < b.keys.n; i++) {
		const char *k = strrchr(b.keys.s[i], '|') + 1;
		tl_totals_add(&b2, k, strlen(k), b.val.v[i], 0);
	}
	assert_true(tl_totals_equal(&a, &b2));
	assert_true(a.keys.n > 2);
	tl_totals_release(&a);
	tl_totals_release(&b);
	tl_totals_release(&b2);
	store_close(st);

	/* Retention: everything in blocks is older than a day before "now". */
	o.retention_ns = 24 * 3600 * SEC;
	st = tl_open(dir, &o);
	assert_non_null(st);
	assert_int_equal(store_apply_retention(st, T0 + 3600 * SEC, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_int_equal(store_apply_retention(st, T0 + 30 * 24 * 3600 * SEC, &n, &err), 0);
	assert_int_equal(n, 1);
	assert_int_equal(count_entries(blocks, ""), 0);
	store_get_stats(st, &ss);
	assert_int_equal(ss.blocks, 0);
	assert_int_equal(ss.head.rows, 60);
	store_close(st);

	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
	free(wal);
	free(blocks);
}

static void check_report(void *arg, enum store_check_level lvl, const char *path, int64_t offset,
			 const char *msg)
{
	(void)arg;
	(void)offset;
	if (lvl == STORE_CHECK_ERROR)
		fprintf(stderr, "store check: %s: %s\n", path, msg);
}

/*
 * Compaction merges by time window: blocks from WAL segments 1 and 3 (one
 * day) merge into a block whose range 1..3 encloses segment 2, whose rows
 * (another day) stay in their own block. Nothing is stored twice, and
 * store_check_dir must say so (a found false positive).
 */
static void test_store_check_accepts_interleaved_compaction(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect;
	struct store_check_result res = { 0 };
	struct prof_err err;
	struct model_profile p;
	struct store *st;
	uint32_t n;

	(void)state;
	tl_totals_init(&expect);
	st = tl_open(dir, &o);
	assert_non_null(st);
	prof_err_init(&err);
	ingest_range(st, 0, 5, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	/* ten days earlier: another compaction window */
	tl_profile_init(&p, "old-host");
	tl_sample(&p, "main;old", 7, T0 - 10 * 24 * 3600 * SEC);
	assert_int_equal(tl_ingest(st, &p), 0);
	model_profile_release(&p);
	assert_int_equal(store_flush(st, &err), 0);
	ingest_range(st, 5, 10, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	assert_int_equal(store_compact(st, true, &n, &err), 0);
	assert_int_equal(n, 2); /* the two blocks of day T0 */
	store_close(st);
	assert_int_equal(store_check_dir(dir, check_report, NULL, &res), 0);
	assert_int_equal(res.errors, 0);
	assert_int_equal(res.blocks, 2);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

static void test_store_crash_between_block_and_checkpoint_replays_nothing_twice(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect;
	struct prof_err err;
	struct store *st;

	(void)state;
	tl_totals_init(&expect);
	st = tl_open(dir, &o);
	ingest_range(st, 0, 8, &expect);
	store_close(st);
	/* Keep the segments as they are before the flush deletes them. */
	assert_int_equal(tl_sh("cp -a '%s/wal' '%s/wal.bak'", dir, dir), 0);
	st = tl_open(dir, &o);
	prof_err_init(&err);
	assert_int_equal(store_flush(st, &err), 0);
	store_close(st);
	/* The crash: block renamed, checkpoint not written, segments not deleted. */
	assert_int_equal(tl_sh("rm -rf '%s/wal' && mv '%s/wal.bak' '%s/wal'", dir, dir, dir), 0);
	st = tl_open(dir, &o);
	assert_non_null(st);
	assert_store_equals(st, &expect);
	store_close(st);

	/* A half-written block (.tmp) is removed; the segments replay. */
	st = tl_open(dir, &o);
	ingest_range(st, 8, 12, &expect);
	store_close(st);
	assert_int_equal(tl_sh("mkdir '%s/blocks/00000000000000ff.tmp' && echo junk > "
			       "'%s/blocks/00000000000000ff.tmp/samples'",
			       dir, dir),
			 0);
	st = tl_open(dir, &o);
	assert_non_null(st);
	assert_store_equals(st, &expect);
	assert_int_not_equal(tl_sh("test -e '%s/blocks/00000000000000ff.tmp'", dir), 0);
	store_close(st);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

static void test_store_crash_after_compaction_rename_deletes_sources(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect;
	struct prof_err err;
	struct store *st;
	uint32_t n;

	(void)state;
	tl_totals_init(&expect);
	prof_err_init(&err);
	st = tl_open(dir, &o);
	ingest_range(st, 0, 5, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	ingest_range(st, 5, 10, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	assert_int_equal(tl_sh("cp -a '%s/blocks' '%s/blocks.bak'", dir, dir), 0);
	assert_int_equal(store_compact(st, true, &n, &err), 0);
	assert_int_equal(n, 2);
	/* A second level: merge the compacted block with a new one. */
	ingest_range(st, 10, 15, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	assert_int_equal(store_compact(st, true, &n, &err), 0);
	assert_int_equal(n, 2);
	store_close(st);
	/* The crash: the sources of both compactions are still there. */
	assert_int_equal(tl_sh("cp -a '%s/blocks.bak/.' '%s/blocks/'", dir, dir), 0);
	char *bd = xasprintf("%s/blocks", dir);
	assert_int_equal(count_entries(bd, ""), 3);
	free(bd);
	st = tl_open(dir, &o);
	assert_non_null(st);
	assert_store_equals(st, &expect);
	struct store_stats ss;
	store_get_stats(st, &ss);
	assert_int_equal(ss.blocks, 1);
	store_close(st);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

static void test_store_head_memory_is_bounded_by_flushing(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect;
	struct store_stats ss;
	struct store *st;
	uint64_t peak = 0;

	(void)state;
	o.head_max_bytes = 48 << 10;
	tl_totals_init(&expect);
	st = tl_open(dir, &o);
	for (int i = 0; i < 600; i++) {
		ingest_range(st, i, i + 1, &expect);
		store_get_stats(st, &ss);
		peak = PROF_MAX(peak, ss.head.bytes);
	}
	print_message("head bound %" PRIu64 " bytes, peak %" PRIu64 ", %" PRIu64 " flushes\n",
		      o.head_max_bytes, peak, ss.flushes);
	assert_true(ss.flushes >= 4);
	/* Over the bound by at most one request and one doubling of one
	 * series' row array (here 5 series share the rows). */
	assert_true(peak < o.head_max_bytes + o.head_max_bytes / 2);
	assert_store_equals(st, &expect);
	store_close(st);
	st = tl_open(dir, &o);
	assert_store_equals(st, &expect);
	store_close(st);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

static void test_store_replay_flushes_a_full_head_between_segments(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect;
	struct store_stats ss;
	struct store *st;

	(void)state;
	o.wal_segment_bytes = 8 << 10; /* a segment every few requests */
	tl_totals_init(&expect);
	st = tl_open(dir, &o);
	ingest_range(st, 0, 400, &expect);
	store_get_stats(st, &ss);
	print_message("segments after ingest: %" PRIu64 " (%" PRIu64 " bytes)\n", ss.wal.segment,
		      ss.wal.bytes);
	assert_true(ss.wal.segment > 15);
	assert_int_equal(ss.blocks, 0);
	store_close(st);

	/* A smaller bound at the next start: replay must not hold it all. */
	o.head_max_bytes = 48 << 10;
	st = tl_open(dir, &o);
	assert_non_null(st);
	store_get_stats(st, &ss);
	print_message("replay: %" PRIu64 " blocks flushed, head %" PRIu64 " bytes, %" PRIu64
		      " segments left\n",
		      ss.blocks, ss.head.bytes, ss.wal.segments);
	assert_true(ss.blocks >= 2);
	assert_true(ss.head.bytes < o.head_max_bytes + o.head_max_bytes / 2);
	assert_true(ss.wal.segments < 10); /* the flushed ones were deleted */
	assert_store_equals(st, &expect);
	store_close(st);
	st = tl_open(dir, &o);
	assert_store_equals(st, &expect);
	store_close(st);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

struct ingester {
	struct store *st;
	int from, to;
};

static void *ingest_main(void *arg)
{
	struct ingester *in = arg;

	for (int i = in->from; i < in->to; i++) {
		struct model_profile p;

		make_profile(&p, i, NULL);
		if (tl_ingest(in->st, &p)) {
			model_profile_release(&p);
			return (void *)1;
		}
		model_profile_release(&p);
	}
	return NULL;
}

static void test_store_background_flush_under_concurrent_ingest(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect;
	struct store_stats ss;
	struct store *st;
	pthread_t th[4];
	struct ingester in[4];

	(void)state;
	o.background = true;
	o.head_max_bytes = 64 << 10;
	o.maint_interval_ns = 20 * 1000000;
	o.compact_min_blocks = 3;
	o.compact_window_ns = 3600 * SEC;
	tl_totals_init(&expect);
	for (int i = 0; i < 400; i++) {
		struct model_profile p;

		make_profile(&p, i, &expect);
		model_profile_release(&p);
	}
	st = tl_open(dir, &o);
	for (int t = 0; t < 4; t++) {
		in[t] = (struct ingester){ st, t * 100, t * 100 + 100 };
		assert_int_equal(pthread_create(&th[t], NULL, ingest_main, &in[t]), 0);
	}
	for (int t = 0; t < 4; t++) {
		void *ret;

		pthread_join(th[t], &ret);
		assert_null(ret);
	}
	assert_store_equals(st, &expect);
	store_get_stats(st, &ss);
	print_message("background: %" PRIu64 " flushes, %" PRIu64 " compactions, %" PRIu64
		      " blocks\n",
		      ss.flushes, ss.compactions, ss.blocks);
	assert_true(ss.flushes >= 2);
	store_close(st);
	st = tl_open(dir, &o);
	assert_store_equals(st, &expect);
	store_close(st);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

/* The only block directory of @dir (caller frees). */
static char *only_block(const char *dir)
{
	char *blocks = xasprintf("%s/blocks", dir), *out = NULL;
	DIR *d = opendir(blocks);
	struct dirent *de;

	assert_non_null(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			out = xasprintf("%s/%s", blocks, de->d_name);
	closedir(d);
	free(blocks);
	assert_non_null(out);
	return out;
}

static void flip_byte(const char *path, uint64_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, (off_t)off), 1);
	c ^= 0x40;
	assert_int_equal(pwrite(fd, &c, 1, (off_t)off), 1);
	close(fd);
}

static void test_store_damaged_page_is_skipped_and_named(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect, got;
	struct store_scan_stats sst;
	struct prof_err err;
	struct store *st;

	(void)state;
	o.page_rows = 16; /* several pages per series */
	tl_totals_init(&expect);
	prof_err_init(&err);
	st = tl_open(dir, &o);
	ingest_range(st, 0, 30, &expect);
	assert_int_equal(store_flush(st, &err), 0);
	store_close(st);

	char *bdir = only_block(dir);
	struct store_block *b;
	assert_int_equal(store_block_open(bdir, &b, &err), 0);
	assert_true(b->meta.npages > 4);
	uint64_t off = b->pages[2].col[STORE_COL_STK].offset;
	uint32_t lost = b->pages[2].nrows;
	store_block_free(b);
	char *samples = xasprintf("%s/samples", bdir);
	flip_byte(samples, off + 1);

	/* store check names the file and the offset. */
	prof_err_init(&err);
	assert_int_equal(store_block_check(bdir, NULL, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "samples"));
	assert_int_equal(err.offset, (int64_t)off);

	/* The rest stays queryable. */
	st = tl_open(dir, &o);
	assert_non_null(st);
	tl_totals_init(&got);
	assert_int_equal(tl_scan_rows(st, NULL, &got, &sst), 0);
	assert_int_equal(sst.pages_corrupt, 1);
	uint64_t want = 0, have = 0;
	for (uint32_t i = 1; i < expect.keys.n; i++)
		want += expect.rows.v[i];
	for (uint32_t i = 1; i < got.keys.n; i++)
		have += got.rows.v[i];
	assert_int_equal(have, want - lost);
	tl_totals_release(&got);
	store_close(st);

	/* A damaged symbols file: the block is left out, the store opens. */
	char *syms = xasprintf("%s/symbols", bdir);
	flip_byte(syms, 20);
	st = tl_open(dir, &o);
	assert_non_null(st);
	tl_totals_init(&got);
	assert_int_equal(tl_scan_rows(st, NULL, &got, &sst), 0);
	assert_int_equal(sst.blocks_failed, 1);
	tl_totals_release(&got);
	store_close(st);

	free(syms);
	free(samples);
	free(bdir);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

/* Rows keyed by series, stack and time, so equal keys mean equal rows. */
static int rows_ts_cb(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_row *rows, size_t n)
{
	struct tl_totals *t = arg;

	for (size_t i = 0; i < n; i++) {
		buf_reset(&t->tmp);
		tl_series_key(s, &t->tmp);
		tl_folded(src, rows[i].stack, &t->tmp);
		buf_addf(&t->tmp, "|%" PRId64 "|%u", rows[i].ts_ns, rows[i].attrs);
		tl_totals_add(t, t->tmp.p, t->tmp.len, rows[i].value, 1);
	}
	return 0;
}

static void scan_ts(struct store *st, struct tl_totals *t)
{
	struct store_visitor v = { .arg = t, .rows = rows_ts_cb };
	struct store_query all = { NULL, NULL, 0, INT64_MIN, INT64_MAX };
	struct prof_err err;

	tl_totals_init(t);
	prof_err_init(&err);
	assert_int_equal(store_scan(st, &all, &v, NULL, &err), 0);
}

/*
 * An OTLP request of several profiles over one dictionary: stored through
 * the shared dictionary (store_ingest_otlp: fmt_otlp_decode_shared, one
 * translation) it gives the same rows, stacks and dictionary as its
 * profiles decoded apart and stored one by one, and again after a replay.
 */
static void test_store_shared_dictionary_same_rows(void **state)
{
	char *da = tl_tmpdir("store"), *db = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct model_profile prof[6];
	const struct model_profile *pp[6];
	struct fmt_otlp_batch b;
	struct tl_totals ta, tb, tc, expect;
	struct store_stats sa, sb;
	struct prof_err err;
	struct buf req;
	struct store *a, *bs;

	(void)state;
	tl_totals_init(&expect);
	buf_init(&req, 0);
	for (int i = 0; i < 6; i++) {
		make_profile(&prof[i], i, &expect);
		pp[i] = &prof[i];
	}
	assert_int_equal(fmt_otlp_encode(pp, 6, &req), 0);
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode_shared(req.p, req.len, 0, &b, &err), 0);
	assert_int_equal(b.n, 6);
	assert_true(b.shared_dict);
	fmt_otlp_batch_release(&b);

	a = tl_open(da, &o);
	bs = tl_open(db, &o);
	assert_non_null(a);
	assert_non_null(bs);
	assert_int_equal(store_ingest_otlp(a, req.p, req.len, 0, NULL, &err), 0);
	assert_int_equal(fmt_otlp_decode_direct(req.p, req.len, 0, &b), 0);
	assert_false(b.shared_dict);
	const struct model_profile **bp = xcalloc(b.n, sizeof(*bp));
	for (size_t i = 0; i < b.n; i++)
		bp[i] = &b.profiles[i];
	assert_int_equal(store_ingest_profiles(bs, bp, b.n, req.p, req.len, NULL, &err), 0);
	free(bp);
	fmt_otlp_batch_release(&b);

	scan_ts(a, &ta);
	scan_ts(bs, &tb);
	assert_true(ta.keys.n > 6);
	assert_true(tl_totals_equal(&ta, &tb));
	store_get_stats(a, &sa);
	store_get_stats(bs, &sb);
	assert_int_equal(sa.head.rows, 72);
	assert_int_equal(sa.head.rows, sb.head.rows);
	assert_int_equal(sa.head.series, sb.head.series);
	assert_int_equal(sa.head.stack_nodes, sb.head.stack_nodes);
	assert_int_equal(sa.head.locations, sb.head.locations);
	assert_int_equal(sa.head.functions, sb.head.functions);
	assert_int_equal(sa.head.strings, sb.head.strings);
	/* and what make_profile put in, per series and stack */
	struct tl_totals rows;
	tl_totals_init(&rows);
	assert_int_equal(tl_scan_rows(a, NULL, &rows, NULL), 0);
	assert_true(tl_totals_equal(&rows, &expect));
	tl_totals_release(&rows);

	/* The WAL replay goes through the shared path too. */
	store_close(a);
	a = tl_open(da, &o);
	assert_non_null(a);
	scan_ts(a, &tc);
	assert_true(tl_totals_equal(&ta, &tc));

	store_close(a);
	store_close(bs);
	tl_totals_release(&ta);
	tl_totals_release(&tb);
	tl_totals_release(&tc);
	tl_totals_release(&expect);
	for (int i = 0; i < 6; i++)
		model_profile_release(&prof[i]);
	buf_release(&req);
	tl_rmdir(da);
	tl_rmdir(db);
	free(da);
	free(db);
}

/* The type of the first record of segment 1 of the store at @dir. */
static int first_record_type(const char *dir)
{
	char *path = xasprintf("%s/wal/00000001.wal", dir);
	unsigned char b[STORE_WAL_FILE_HDR + STORE_WAL_REC_HDR];
	int fd = open(path, O_RDONLY), type = -1;

	if (fd >= 0 && read(fd, b, sizeof(b)) == (ssize_t)sizeof(b))
		type = b[STORE_WAL_FILE_HDR + 8];
	if (fd >= 0)
		close(fd);
	free(path);
	return type;
}

/*
 * Pushed pprof profiles logged as pprof (store_ingest_pprof, a
 * STORE_WAL_PPROF record): the head gets the same rows as from the OTLP
 * record store_ingest_profiles writes, and the replay rebuilds them with
 * what ingest changed after decoding (time, duration, name, attributes).
 */
static void test_store_pprof_record_replays_the_edited_profiles(void **state)
{
	char *da = tl_tmpdir("store"), *db = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct model_profile prof[3];
	const struct model_profile *pp[3];
	struct store_pprof_src src[3];
	struct buf pb[3], gz = BUF_INIT;
	struct tl_totals ta, tb, tc, td;
	struct prof_err err;
	struct store *a, *bs;

	(void)state;
	prof_err_init(&err);
	for (int i = 0; i < 3; i++) {
		struct model_profile m;

		make_profile(&m, i, NULL);
		buf_init(&pb[i], 0);
		assert_int_equal(fmt_pprof_encode(&m, false, &pb[i]), 0);
		model_profile_release(&m);
		model_profile_init(&prof[i]);
		assert_int_equal(fmt_pprof_decode(pb[i].p, pb[i].len, 0, &prof[i], &err), 0);
		/* what Pyroscope's /ingest does with from/until, name and labels */
		src[i] = (struct store_pprof_src){ pb[i].p, pb[i].len, (i + 1) * 7 * SEC, NULL, 0 };
		if (i == 2) { /* logged as the gzip it was pushed in */
			assert_int_equal(gzip_deflate(pb[i].p, pb[i].len, &gz), 0);
			src[i].gz = gz.p;
			src[i].gz_len = gz.len;
		}
		prof[i].time_ns = T0 + i * 60 * SEC;
		prof[i].duration_ns = 10 * SEC;
		for (size_t k = 0; k < prof[i].samples.n; k++) /* none: pprof has no times */
			if (prof[i].samples.v[k].timestamp_ns)
				prof[i].samples.v[k].timestamp_ns += src[i].shift;
		prof[i].name = model_intern(&prof[i], i ? "process_cpu" : "");
		model_attr_add_str(&prof[i], "service.name", i == 1 ? "one" : "other");
		model_attr_add_num(&prof[i], "replica", i);
		pp[i] = &prof[i];
	}
	a = tl_open(da, &o);
	bs = tl_open(db, &o);
	assert_int_equal(store_ingest_pprof(a, pp, src, 3, NULL, &err), 0);
	assert_int_equal(store_ingest_profiles(bs, pp, 3, NULL, 0, NULL, &err), 0);
	assert_int_equal(first_record_type(da), STORE_WAL_PPROF);
	assert_int_equal(first_record_type(db), STORE_WAL_OTLP);
	scan_ts(a, &ta);
	scan_ts(bs, &tb);
	assert_true(ta.keys.n > 6);
	assert_true(tl_totals_equal(&ta, &tb));

	store_close(a);
	store_close(bs);
	a = tl_open(da, &o);
	bs = tl_open(db, &o);
	assert_non_null(a);
	scan_ts(a, &tc);
	scan_ts(bs, &td);
	assert_true(tl_totals_equal(&ta, &tc));
	assert_true(tl_totals_equal(&tb, &td));

	/* The replay reads the logged bytes: other bytes, other rows. */
	src[1] = src[2];
	store_close(a);
	tl_rmdir(da);
	free(da);
	da = tl_tmpdir("store");
	a = tl_open(da, &o);
	assert_int_equal(store_ingest_pprof(a, pp, src, 3, NULL, &err), 0);
	store_close(a);
	a = tl_open(da, &o);
	tl_totals_release(&tc);
	scan_ts(a, &tc);
	assert_false(tl_totals_equal(&ta, &tc));

	store_close(a);
	store_close(bs);
	tl_totals_release(&ta);
	tl_totals_release(&tb);
	tl_totals_release(&tc);
	tl_totals_release(&td);
	for (int i = 0; i < 3; i++) {
		model_profile_release(&prof[i]);
		buf_release(&pb[i]);
	}
	buf_release(&gz);
	tl_rmdir(da);
	tl_rmdir(db);
	free(da);
	free(db);
}

/*
 * A STORE_WAL_PPROF payload is read back as written, and every cut of it
 * short of an entry's end, and gzip profile bytes, are refused.
 */
static void test_store_wal_pprof_payload_bounds(void **state)
{
	struct model_profile m, *out;
	struct store_pprof_src src;
	struct buf pb, pay, gz = BUF_INIT;
	struct prof_err err;
	size_t n, one;

	(void)state;
	make_profile(&m, 1, NULL);
	m.time_ns = T0;
	model_attr_add_str(&m, "k", "v");
	buf_init(&pb, 0);
	buf_init(&pay, 0);
	assert_int_equal(fmt_pprof_encode(&m, false, &pb), 0);
	src = (struct store_pprof_src){ pb.p, pb.len, 0, NULL, 0 };
	assert_int_equal(store_wal_pprof_encode(&m, &src, &pay), 0);
	one = pay.len;
	assert_int_equal(gzip_deflate(pb.p, pb.len, &gz), 0);
	src.gz = gz.p;
	src.gz_len = gz.len;
	assert_int_equal(store_wal_pprof_encode(&m, &src, &pay), 0);
	assert_true(pay.len - one < one);
	prof_err_init(&err);
	assert_int_equal(store_wal_pprof_decode(pay.p, pay.len, &out, &n, &err), 0);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(out[i].time_ns, T0);
		assert_int_equal(out[i].samples.n, m.samples.n);
		assert_int_equal(out[i].attrs.n, 2);
		assert_string_equal(model_str(&out[i], out[i].attrs.v[1].str), "v");
		model_profile_release(&out[i]);
	}
	free(out);
	for (size_t cut = 0; cut < pay.len; cut++) {
		if (cut == one)
			continue; /* one whole entry */
		prof_err_init(&err);
		assert_int_not_equal(store_wal_pprof_decode(pay.p, cut, &out, &n, &err), 0);
		assert_null(out);
	}
	/* stored gzip that inflates to other than P bytes */
	buf_reset(&pay);
	src.len--;
	assert_int_equal(store_wal_pprof_encode(&m, &src, &pay), 0);
	prof_err_init(&err);
	assert_int_equal(store_wal_pprof_decode(pay.p, pay.len, &out, &n, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "entry 0"));
	/* profile bytes that are gzip */
	buf_reset(&pb);
	buf_reset(&pay);
	assert_int_equal(fmt_pprof_encode(&m, true, &pb), 0);
	src = (struct store_pprof_src){ pb.p, pb.len, 0, NULL, 0 };
	assert_int_equal(store_wal_pprof_encode(&m, &src, &pay), 0);
	prof_err_init(&err);
	assert_int_equal(store_wal_pprof_decode(pay.p, pay.len, &out, &n, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "gzip"));
	model_profile_release(&m);
	buf_release(&pb);
	buf_release(&gz);
	buf_release(&pay);
}

static void test_store_damaged_wal_record_loses_only_itself(void **state)
{
	char *dir = tl_tmpdir("store");
	struct store_options o = tl_opts();
	struct tl_totals expect, got;
	struct store_stats ss;
	struct store *st;

	(void)state;
	tl_totals_init(&expect);
	st = tl_open(dir, &o);
	ingest_range(st, 0, 1, &expect);
	store_close(st);
	char *seg = xasprintf("%s/wal/00000001.wal", dir);
	struct stat sb;
	assert_int_equal(stat(seg, &sb), 0);
	uint64_t second = (uint64_t)sb.st_size;
	st = tl_open(dir, &o);
	ingest_range(st, 1, 2, NULL); /* the record that will be damaged */
	ingest_range(st, 2, 4, &expect);
	store_close(st);
	flip_byte(seg, second + STORE_WAL_REC_HDR + 30);

	st = tl_open(dir, &o);
	assert_non_null(st);
	store_get_stats(st, &ss);
	assert_true(ss.wal.corrupt_bytes > 0);
	tl_totals_init(&got);
	assert_int_equal(tl_scan_rows(st, NULL, &got, NULL), 0);
	assert_true(tl_totals_equal(&got, &expect));
	tl_totals_release(&got);
	store_close(st);
	char *saved = xasprintf("%s.corrupt-%" PRIu64, seg, second);
	assert_int_equal(access(saved, F_OK), 0);
	free(saved);
	free(seg);
	tl_totals_release(&expect);
	tl_rmdir(dir);
	free(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_store_flush_compact_retention_keep_totals),
		cmocka_unit_test(test_store_check_accepts_interleaved_compaction),
		cmocka_unit_test(
			test_store_crash_between_block_and_checkpoint_replays_nothing_twice),
		cmocka_unit_test(test_store_crash_after_compaction_rename_deletes_sources),
		cmocka_unit_test(test_store_head_memory_is_bounded_by_flushing),
		cmocka_unit_test(test_store_replay_flushes_a_full_head_between_segments),
		cmocka_unit_test(test_store_background_flush_under_concurrent_ingest),
		cmocka_unit_test(test_store_damaged_page_is_skipped_and_named),
		cmocka_unit_test(test_store_damaged_wal_record_loses_only_itself),
		cmocka_unit_test(test_store_shared_dictionary_same_rows),
		cmocka_unit_test(test_store_pprof_record_replays_the_edited_profiles),
		cmocka_unit_test(test_store_wal_pprof_payload_bounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
