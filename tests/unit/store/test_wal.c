// SPDX-License-Identifier: Apache-2.0
/*
 * test_wal.c - the write-ahead log: records come back in order after a
 * reopen; a torn tail (partial header, partial payload, zero fill) is
 * truncated and later appends start on a record boundary; a flipped byte
 * fails the CRC and only that record is lost: replay resynchronizes on
 * the next valid record, the damaged bytes are saved to a
 * .corrupt-<offset> file (a damaged last record is saved and truncated);
 * rotation, checkpoint and covered segments; read-only replay; a foreign file is refused untouched; a record
 * the replay callback refuses is skipped, not fatal; concurrent appenders
 * all get durable, distinct records (group commit, batches of more
 * records than one pwritev takes included); a failed write is rolled back
 * and fails only its records; record CRCs are
 * zlib's crc32() at every length (the accelerated path included), and a
 * segment written byte by byte with zlib's CRCs replays.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "store/chunkfile.h"
#include "store/wal.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <setjmp.h>
#include <cmocka.h>

struct seen {
	VEC(char *) payloads;
	VEC(int64_t) times;
	int refuse_from; /* refuse records from this index on; -1 = never */
};

static int collect(void *arg, const struct store_wal_record *rec, struct prof_err *err)
{
	struct seen *s = arg;

	assert_int_equal(rec->type, STORE_WAL_OTLP);
	if (s->refuse_from >= 0 && (int)s->payloads.n >= s->refuse_from)
		return prof_err_set(err, -PROF_ECORRUPT, -1, "refused on purpose");
	VEC_PUSH(&s->payloads, xstrndup(rec->payload, rec->len));
	VEC_PUSH(&s->times, rec->time_ns);
	return 0;
}

static void seen_reset(struct seen *s)
{
	for (size_t i = 0; i < s->payloads.n; i++)
		free(s->payloads.v[i]);
	VEC_FREE(&s->payloads);
	VEC_FREE(&s->times);
	s->refuse_from = -1;
}

static char *make_dir(void)
{
	char tmpl[] = "/tmp/profd-test-wal-XXXXXX";
	char *d = mkdtemp(tmpl);

	assert_non_null(d);
	return xstrdup(d);
}

static void remove_dir(const char *dir)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);

	assert_int_equal(system(cmd), 0);
	free(cmd);
}

static char *seg_path(const char *dir)
{
	return xasprintf("%s/%s", dir, STORE_WAL_SEGMENT_NAME);
}

static off_t file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return st.st_size;
}

static struct store_wal *open_ok(const char *dir, struct seen *s)
{
	struct store_wal *w = NULL;
	struct prof_err err;

	prof_err_init(&err);
	seen_reset(s);
	assert_int_equal(store_wal_open(dir, collect, s, &w, &err), 0);
	assert_non_null(w);
	return w;
}

static void append_ok(struct store_wal *w, const char *payload, int64_t t)
{
	struct prof_err err;

	prof_err_init(&err);
	assert_int_equal(store_wal_append(w, STORE_WAL_OTLP, t, payload, strlen(payload), &err), 0);
}

static void test_wal_records_survive_reopen_in_order(void **state)
{
	char *dir = make_dir();
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct store_wal *w;

	(void)state;
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 0);
	append_ok(w, "first", 11);
	append_ok(w, "second record", 22);
	append_ok(w, "third", -33);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.appended, 3);
	assert_true(st.syncs >= 1 && st.syncs <= 3);
	assert_int_equal(st.size, STORE_WAL_FILE_HDR + 3 * STORE_WAL_REC_HDR + 5 + 13 + 5);
	store_wal_close(w);

	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 3);
	assert_string_equal(s.payloads.v[0], "first");
	assert_string_equal(s.payloads.v[1], "second record");
	assert_string_equal(s.payloads.v[2], "third");
	assert_int_equal(s.times.v[0], 11);
	assert_int_equal(s.times.v[1], 22);
	assert_int_equal(s.times.v[2], -33);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.replayed, 3);
	assert_int_equal(st.dropped_bytes, 0);
	store_wal_close(w);
	seen_reset(&s);
	remove_dir(dir);
	free(dir);
}

/* Cut the segment to @keep bytes, or append @extra bytes of @fill. */
static void cut_to(const char *path, off_t keep)
{
	assert_int_equal(truncate(path, keep), 0);
}

static void append_bytes(const char *path, const void *p, size_t n)
{
	int fd = open(path, O_WRONLY | O_APPEND);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, n), (ssize_t)n);
	close(fd);
}

static void test_wal_torn_tail_is_truncated_and_appends_continue(void **state)
{
	char *dir = make_dir(), *seg = seg_path(dir);
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct store_wal *w;
	off_t two;

	(void)state;
	w = open_ok(dir, &s);
	append_ok(w, "one", 1);
	append_ok(w, "two", 2);
	two = file_size(seg);
	append_ok(w, "three-is-longer", 3);
	store_wal_close(w);

	/* A crash in the middle of the third record's payload. */
	cut_to(seg, two + STORE_WAL_REC_HDR + 4);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 2);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.dropped_bytes, STORE_WAL_REC_HDR + 4);
	assert_int_equal(file_size(seg), two);
	append_ok(w, "three again", 4);
	store_wal_close(w);

	/* A crash inside a record header. */
	append_bytes(seg, "\x10\x00\x00", 3);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 3);
	assert_string_equal(s.payloads.v[2], "three again");
	store_wal_get_stats(w, &st);
	assert_int_equal(st.dropped_bytes, 3);
	store_wal_close(w);

	/* A file extended with zeros (allocated, never written). */
	char zeros[4096] = { 0 };
	append_bytes(seg, zeros, sizeof(zeros));
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 3);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.dropped_bytes, sizeof(zeros));
	append_ok(w, "four", 5);
	store_wal_close(w);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 4);
	assert_string_equal(s.payloads.v[3], "four");
	store_wal_close(w);

	/* Nothing but torn tails: no .corrupt file was kept. */
	char *corrupt = xasprintf("%s.corrupt-%lld", seg, (long long)two);
	assert_int_not_equal(access(corrupt, F_OK), 0);
	free(corrupt);
	seen_reset(&s);
	remove_dir(dir);
	free(seg);
	free(dir);
}

static void flip_at(const char *path, off_t off)
{
	int fd = open(path, O_RDWR);
	unsigned char c;

	assert_true(fd >= 0);
	assert_int_equal(pread(fd, &c, 1, off), 1);
	c ^= 0x20;
	assert_int_equal(pwrite(fd, &c, 1, off), 1);
	close(fd);
}

static void test_wal_damaged_record_is_skipped_saved_and_the_rest_replayed(void **state)
{
	char *dir = make_dir(), *seg = seg_path(dir);
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct store_wal *w;
	off_t one, two, size;

	(void)state;
	w = open_ok(dir, &s);
	append_ok(w, "alpha", 1);
	one = file_size(seg);
	append_ok(w, "bravo", 2);
	two = file_size(seg);
	append_ok(w, "charlie", 3);
	store_wal_close(w);
	size = file_size(seg);

	/* Flip one payload byte of the second record: only it is lost. */
	flip_at(seg, one + STORE_WAL_REC_HDR + 2);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 2);
	assert_string_equal(s.payloads.v[0], "alpha");
	assert_string_equal(s.payloads.v[1], "charlie");
	store_wal_get_stats(w, &st);
	assert_int_equal(st.corrupt_bytes, two - one);
	assert_int_equal(st.dropped_bytes, 0);
	assert_int_equal(file_size(seg), size); /* nothing truncated in the middle */
	/* The damaged bytes were kept for inspection. */
	char *corrupt = xasprintf("%s.corrupt-%lld", seg, (long long)one);
	assert_int_equal(file_size(corrupt), two - one);
	free(corrupt);
	/* A segment with a hole is not appended to: the next one is. */
	assert_int_equal(st.segment, 2);
	append_ok(w, "delta", 4);
	store_wal_close(w);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 3);
	assert_string_equal(s.payloads.v[2], "delta");
	store_wal_close(w);

	/* A corrupt length field (far above the maximum): resynchronized too. */
	int fd = open(seg, O_RDWR);
	assert_true(fd >= 0);
	unsigned char big[4] = { 0xff, 0xff, 0xff, 0x7f };
	assert_int_equal(pwrite(fd, big, 4, one), 4);
	close(fd);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 3);
	assert_string_equal(s.payloads.v[1], "charlie");
	store_wal_close(w);

	/* Damage in the last record: nothing valid follows, so the tail is
	 * saved and truncated as before. */
	char *seg2 = xasprintf("%s/00000002.wal", dir);
	off_t before = file_size(seg2);
	w = open_ok(dir, &s);
	append_ok(w, "echo", 5);
	store_wal_close(w);
	flip_at(seg2, before + STORE_WAL_REC_HDR + 1);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 3);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.dropped_bytes, STORE_WAL_REC_HDR + 4);
	assert_int_equal(file_size(seg2), before);
	store_wal_close(w);
	corrupt = xasprintf("%s.corrupt-%lld", seg2, (long long)before);
	assert_int_equal(file_size(corrupt), STORE_WAL_REC_HDR + 4);
	free(corrupt);
	free(seg2);

	seen_reset(&s);
	remove_dir(dir);
	free(seg);
	free(dir);
}

static void test_wal_rotate_checkpoint_and_covered_segments(void **state)
{
	char *dir = make_dir();
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct store_wal *w;
	struct prof_err err;
	uint64_t sealed;

	(void)state;
	w = open_ok(dir, &s);
	append_ok(w, "a", 1);
	append_ok(w, "b", 2);
	prof_err_init(&err);
	assert_int_equal(store_wal_rotate(w, &sealed, &err), 0);
	assert_int_equal(sealed, 1);
	append_ok(w, "c", 3);
	assert_int_equal(store_wal_rotate(w, &sealed, &err), 0);
	assert_int_equal(sealed, 2);
	append_ok(w, "d", 4);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.segment, 3);
	assert_int_equal(st.segments, 3);
	store_wal_close(w);

	/* Everything replays, in order, across segments. */
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 4);
	assert_string_equal(s.payloads.v[2], "c");
	/* Segments <= 1 are in a block: checkpoint deletes them. */
	assert_int_equal(store_wal_checkpoint(w, 1, &err), 0);
	store_wal_close(w);
	char *p1 = xasprintf("%s/00000001.wal", dir), *ck = xasprintf("%s/checkpoint", dir);
	assert_int_not_equal(access(p1, F_OK), 0);
	assert_int_equal(file_size(ck), STORE_WAL_CKPT_SIZE);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 2);
	assert_string_equal(s.payloads.v[0], "c");
	store_wal_close(w);

	/* A store whose blocks cover segment 2 (crash before the checkpoint). */
	seen_reset(&s);
	assert_int_equal(store_wal_open_at(dir, 2, collect, &s, false, &w, &err), 0);
	assert_int_equal(s.payloads.n, 1);
	assert_string_equal(s.payloads.v[0], "d");
	store_wal_close(w);

	/* A damaged checkpoint is ignored (replay relies on the blocks' ranges). */
	assert_int_equal(buf_write_file(ck, "garbage", 7), 0);
	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 1);
	store_wal_close(w);

	/* Read-only: a torn tail is reported, not truncated; appends refused. */
	char *p3 = xasprintf("%s/00000003.wal", dir);
	append_bytes(p3, "\x10\x00", 2);
	off_t sz = file_size(p3);
	seen_reset(&s);
	assert_int_equal(store_wal_open_at(dir, 0, collect, &s, true, &w, &err), 0);
	assert_int_equal(s.payloads.n, 1);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.dropped_bytes, 2);
	assert_int_equal(store_wal_append(w, STORE_WAL_OTLP, 0, "x", 1, &err), -EROFS);
	store_wal_close(w);
	assert_int_equal(file_size(p3), sz);

	free(p1);
	free(p3);
	free(ck);
	seen_reset(&s);
	remove_dir(dir);
	free(dir);
}

static void test_wal_refuses_foreign_file_untouched(void **state)
{
	char *dir = make_dir(), *seg = seg_path(dir);
	struct store_wal *w = NULL;
	struct prof_err err;
	const char junk[] = "this is not a write-ahead log at all";

	(void)state;
	assert_int_equal(buf_write_file(seg, junk, sizeof(junk)), 0);
	prof_err_init(&err);
	assert_int_equal(store_wal_open(dir, NULL, NULL, &w, &err), -PROF_EFORMAT);
	assert_null(w);
	assert_non_null(strstr(err.msg, "not a profd write-ahead log"));
	assert_int_equal(file_size(seg), sizeof(junk));
	remove_dir(dir);
	free(seg);
	free(dir);
}

static void test_wal_refused_record_is_skipped_not_fatal(void **state)
{
	char *dir = make_dir();
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct store_wal *w = NULL;
	struct prof_err err;

	(void)state;
	w = open_ok(dir, &s);
	append_ok(w, "a", 1);
	append_ok(w, "b", 2);
	append_ok(w, "c", 3);
	store_wal_close(w);

	seen_reset(&s);
	s.refuse_from = 1;
	prof_err_init(&err);
	assert_int_equal(store_wal_open(dir, collect, &s, &w, &err), 0);
	assert_int_equal(s.payloads.n, 1);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.replayed, 1);
	assert_int_equal(st.skipped, 2);
	assert_int_equal(st.dropped_bytes, 0); /* intact records are never dropped */
	store_wal_close(w);
	seen_reset(&s);
	remove_dir(dir);
	free(dir);
}

static void test_wal_rejects_empty_and_oversized_records(void **state)
{
	char *dir = make_dir();
	struct seen s = { .refuse_from = -1 };
	struct store_wal *w;
	struct prof_err err;

	(void)state;
	w = open_ok(dir, &s);
	prof_err_init(&err);
	assert_int_equal(store_wal_append(w, STORE_WAL_OTLP, 0, "", 0, &err), -PROF_ETOOBIG);
	prof_err_init(&err);
	assert_int_equal(
		store_wal_append(w, STORE_WAL_OTLP, 0, "x", (size_t)STORE_WAL_MAX_RECORD + 1, &err),
		-PROF_ETOOBIG);
	store_wal_close(w);
	seen_reset(&s);
	remove_dir(dir);
	free(dir);
}

#define NTHREADS   8
#define PER_THREAD 40

struct writer {
	struct store_wal *w;
	int id;
};

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	char payload[64];
	struct prof_err err;

	for (int i = 0; i < PER_THREAD; i++) {
		snprintf(payload, sizeof(payload), "t%d-r%d", wr->id, i);
		prof_err_init(&err);
		if (store_wal_append(wr->w, STORE_WAL_OTLP, wr->id, payload, strlen(payload), &err))
			return (void *)1;
		/* Rotations by size race with the appends and their syncs. */
		if (store_wal_rotate_if_over(wr->w, 300, &err))
			return (void *)1;
	}
	return NULL;
}

/*
 * @nthreads appenders at once, rotating by size: every record once, each
 * thread's in its own order, fewer syncs than records. With 64 threads a
 * leader's batch holds more records than one pwritev takes.
 */
static void concurrent_appends(int nthreads)
{
	char *dir = make_dir();
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct store_wal *w;
	pthread_t *th = xcalloc((size_t)nthreads, sizeof(*th));
	struct writer *wr = xcalloc((size_t)nthreads, sizeof(*wr));
	int *next = xcalloc((size_t)nthreads, sizeof(*next));

	w = open_ok(dir, &s);
	for (int i = 0; i < nthreads; i++) {
		wr[i].w = w;
		wr[i].id = i;
		assert_int_equal(pthread_create(&th[i], NULL, writer_main, &wr[i]), 0);
	}
	for (int i = 0; i < nthreads; i++) {
		void *ret;

		pthread_join(th[i], &ret);
		assert_null(ret);
	}
	store_wal_get_stats(w, &st);
	assert_int_equal(st.appended, (uint64_t)nthreads * PER_THREAD);
	assert_true(st.segment > 5);
	assert_true(st.syncs <= st.appended);
	print_message("group commit: %" PRIu64 " records, %" PRIu64 " fdatasync calls\n",
		      st.appended, st.syncs);
	store_wal_close(w);

	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, (size_t)nthreads * PER_THREAD);
	/* Every record once, each thread's records in its own order. */
	for (size_t i = 0; i < s.payloads.n; i++) {
		int t, r;

		assert_int_equal(sscanf(s.payloads.v[i], "t%d-r%d", &t, &r), 2);
		assert_true(t >= 0 && t < nthreads);
		assert_int_equal(r, next[t]);
		assert_int_equal(s.times.v[i], t);
		next[t]++;
	}
	store_wal_close(w);
	seen_reset(&s);
	remove_dir(dir);
	free(dir);
	free(next);
	free(wr);
	free(th);
}

static void test_wal_concurrent_appends_share_syncs(void **state)
{
	(void)state;
	concurrent_appends(NTHREADS);
	concurrent_appends(64);
}

/*
 * A write that fails (here: past RLIMIT_FSIZE, so part of it lands
 * before EFBIG) fails its record, is rolled back, and does not poison the
 * log: the next append succeeds and a reopen replays exactly the records
 * that were acknowledged.
 */
static void test_wal_failed_write_is_rolled_back_not_fatal(void **state)
{
	char *dir = make_dir();
	char *seg = seg_path(dir);
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct prof_err err;
	struct rlimit old, lim;
	char big[600];
	void (*old_sig)(int) = signal(SIGXFSZ, SIG_IGN);

	(void)state;
	struct store_wal *w = open_ok(dir, &s);
	append_ok(w, "before", 1);
	off_t size = file_size(seg);
	memset(big, 'b', sizeof(big));
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = (rlim_t)size + 100;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	prof_err_init(&err);
	int rc = store_wal_append(w, STORE_WAL_OTLP, 2, big, sizeof(big), &err);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_sig);
	assert_int_equal(rc, -EFBIG);
	assert_non_null(strstr(err.msg, "wal: write:"));
	assert_int_equal(file_size(seg), size); /* the partial record is gone */
	append_ok(w, "after", 3);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.appended, 2);
	store_wal_close(w);

	w = open_ok(dir, &s);
	assert_int_equal(s.payloads.n, 2);
	assert_string_equal(s.payloads.v[0], "before");
	assert_string_equal(s.payloads.v[1], "after");
	assert_int_equal(s.times.v[1], 3);
	store_wal_close(w);
	seen_reset(&s);
	remove_dir(dir);
	free(seg);
	free(dir);
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Lengths around the 16- and 64-byte steps of the folding CRC, and large. */
static size_t crc_len(int i)
{
	static const size_t big[] = { 4096 + 7, 65536 + 13, 1000003 };

	return i < 200 ? (size_t)i + 1 : big[i - 200];
}
#define NCRC (200 + 3)

/* Non-zero bytes (the collector keeps payloads as strings). */
static void fill(char *p, size_t n, uint32_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (char)(1 + (seed >> 16) % 255);
	}
}

static void test_wal_record_crc_is_zlib_crc32_at_every_length(void **state)
{
	char *dir = make_dir(), *path = seg_path(dir);
	struct seen s = { .refuse_from = -1 };
	struct store_wal *w;
	struct prof_err err;
	struct buf b;
	char *p = xmalloc(crc_len(NCRC - 1));

	(void)state;
	w = open_ok(dir, &s);
	for (int i = 0; i < NCRC; i++) {
		fill(p, crc_len(i), (uint32_t)i);
		prof_err_init(&err);
		assert_int_equal(store_wal_append(w, STORE_WAL_OTLP, i, p, crc_len(i), &err), 0);
	}
	store_wal_close(w);
	buf_init(&b, (size_t)1 << 24);
	assert_int_equal(buf_read_file(&b, path), 0);
	const unsigned char *u = (const unsigned char *)b.p;
	size_t off = STORE_WAL_FILE_HDR;
	for (int i = 0; i < NCRC; i++) {
		uint32_t len = get32(u + off);

		assert_int_equal(len, crc_len(i));
		uint32_t want = (uint32_t)crc32(0, u + off + 8, STORE_WAL_REC_HDR - 8);
		want = (uint32_t)crc32(want, u + off + STORE_WAL_REC_HDR, len);
		assert_int_equal(get32(u + off + 4), want);
		off += STORE_WAL_REC_HDR + len;
	}
	assert_int_equal(off, b.len);
	buf_release(&b);
	seen_reset(&s);
	remove_dir(dir);
	free(p);
	free(path);
	free(dir);
}

static void test_wal_segment_with_zlib_crcs_replays(void **state)
{
	char *dir = make_dir(), *path = seg_path(dir);
	struct seen s = { .refuse_from = -1 };
	struct store_wal_stats st;
	struct store_wal *w;
	struct buf b;
	unsigned char h[STORE_WAL_REC_HDR];

	(void)state;
	buf_init(&b, (size_t)1 << 24);
	memcpy(h, STORE_WAL_MAGIC, 8);
	put32(h + 8, STORE_WAL_VERSION);
	put32(h + 12, (uint32_t)crc32(0, h, 12));
	assert_int_equal(buf_add(&b, h, STORE_WAL_FILE_HDR), 0);
	for (int i = 0; i < NCRC; i++) {
		size_t n = crc_len(i);
		char *p = xmalloc(n);

		fill(p, n, (uint32_t)i + 7);
		memset(h, 0, sizeof(h));
		put32(h, (uint32_t)n);
		h[8] = STORE_WAL_OTLP;
		h[12] = (unsigned char)i; /* ingest time i */
		put32(h + 4, (uint32_t)crc32(crc32(0, h + 8, STORE_WAL_REC_HDR - 8),
					     (const unsigned char *)p, (uInt)n));
		assert_int_equal(buf_add(&b, h, sizeof(h)), 0);
		assert_int_equal(buf_add(&b, p, n), 0);
		free(p);
	}
	assert_int_equal(buf_write_file(path, b.p, b.len), 0);
	buf_release(&b);

	w = open_ok(dir, &s);
	store_wal_get_stats(w, &st);
	assert_int_equal(st.replayed, NCRC);
	assert_int_equal(st.dropped_bytes + st.corrupt_bytes, 0);
	assert_int_equal(s.payloads.n, NCRC);
	for (int i = 0; i < NCRC; i++) {
		char *p = xmalloc(crc_len(i) + 1);

		fill(p, crc_len(i), (uint32_t)i + 7);
		p[crc_len(i)] = 0;
		assert_string_equal(s.payloads.v[i], p);
		assert_int_equal(s.times.v[i], i);
		free(p);
	}
	store_wal_close(w);
	seen_reset(&s);
	remove_dir(dir);
	free(path);
	free(dir);
}

/* store_chunkfile_crc32 equals zlib's crc32 at every length, alignment and start value. */
static void test_wal_crc32_equals_zlib(void **state)
{
	unsigned char *p = xmalloc(5000 + 16);

	(void)state;
	fill((char *)p, 5000 + 16, 99);
	for (size_t n = 0; n <= 5000; n += n < 300 ? 1 : 97) {
		for (size_t at = 0; at < 16; at += 5) {
			uint32_t start = (uint32_t)(n * 2654435761u);

			assert_int_equal(store_chunkfile_crc32(0, p + at, n),
					 (uint32_t)crc32(0, p + at, (uInt)n));
			assert_int_equal(store_chunkfile_crc32(start, p + at, n),
					 (uint32_t)crc32(start, p + at, (uInt)n));
		}
	}
	/* a CRC continued piece by piece is the CRC of the whole */
	assert_int_equal(store_chunkfile_crc32(store_chunkfile_crc32(0, p, 1000), p + 1000, 3000),
			 (uint32_t)crc32(0, p, 4000));
	free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_wal_records_survive_reopen_in_order),
		cmocka_unit_test(test_wal_torn_tail_is_truncated_and_appends_continue),
		cmocka_unit_test(test_wal_damaged_record_is_skipped_saved_and_the_rest_replayed),
		cmocka_unit_test(test_wal_rotate_checkpoint_and_covered_segments),
		cmocka_unit_test(test_wal_refuses_foreign_file_untouched),
		cmocka_unit_test(test_wal_refused_record_is_skipped_not_fatal),
		cmocka_unit_test(test_wal_rejects_empty_and_oversized_records),
		cmocka_unit_test(test_wal_concurrent_appends_share_syncs),
		cmocka_unit_test(test_wal_failed_write_is_rolled_back_not_fatal),
		cmocka_unit_test(test_wal_record_crc_is_zlib_crc32_at_every_length),
		cmocka_unit_test(test_wal_segment_with_zlib_crcs_replays),
		cmocka_unit_test(test_wal_crc32_equals_zlib),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
