// SPDX-License-Identifier: Apache-2.0
/*
 * maint.c - the store's background work: flushing the head to a block,
 * compacting blocks, applying retention, and the thread that does it.
 *
 * Flush (the sequence that makes it crash-safe, see store.h):
 *   1. rotate: with ingest excluded, seal WAL segment N and start N+1;
 *      the active head (records of segments first..N) becomes the frozen
 *      head, a new active head takes segments N+1..;
 *   2. write the frozen head as block <id>.tmp (with its hour rollup,
 *      RHRS), fsync, rename to <id>, fsync blocks/ — the block's meta says
 *      it holds WAL first..N;
 *   3. publish: the block enters the view and the frozen head leaves it,
 *      in one step under view_mu;
 *   4. checkpoint: wal/checkpoint := N, segments <= N deleted.
 * A crash before 2 completes leaves a .tmp (removed at open) and the
 * segments (replayed); after it, open sees the block's WAL range and
 * skips those segments. A failure in 2 keeps the frozen head, queried as
 * before, and the next flush writes it again.
 *
 * Compaction streams: the merged dictionary is built by importing each
 * source block's stack tree into a fresh head (hash-consing merges equal
 * locations and stacks), then series are merged in key order, one series
 * in memory at a time, each row keeping its attribute set (re-numbered
 * through the merged head's set table); the writer sums each series'
 * rows per stack and hour into the block's hour rollup (RHRS) as it
 * goes. The new
 * block lists its sources and their own
 * sources; it is published in place of them in one step, then they are
 * deleted. A crash after its rename leaves sources that open deletes
 * because the new block lists them.
 *
 * Retention removes whole blocks from the view; a block's directory is
 * renamed to <id>.del and removed once no query holds it.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "store/store_int.h"

#include <sys/stat.h>

uint64_t store_new_block_id(struct store *s)
{
	/* Time-ordered like the names of most stores' blocks, and strictly
	 * above every id in use so an id is never reused while a block that
	 * lists it as a source exists. */
	uint64_t id = (uint64_t)(prof_now_ns() / 1000000) << 16;

	id = PROF_MAX(id, s->next_block_id);
	s->next_block_id = id + 1;
	return id;
}

int store_rotate(struct store *s, struct prof_err *err)
{
	struct store_hold *act, *fresh;
	struct store_head_stats hs;
	uint64_t sealed;
	int rc;

	pthread_rwlock_wrlock(&s->ingest_rw);
	pthread_mutex_lock(&s->view_mu);
	act = s->active;
	bool busy = s->frozen != NULL || __atomic_load_n(&s->replaying, __ATOMIC_ACQUIRE);
	pthread_mutex_unlock(&s->view_mu);
	store_head_get_stats(act->h, &hs);
	if (busy || hs.rows == 0) {
		pthread_rwlock_unlock(&s->ingest_rw);
		return 0;
	}
	rc = store_wal_rotate(s->wal, &sealed, err);
	if (rc) {
		pthread_rwlock_unlock(&s->ingest_rw);
		return rc;
	}
	fresh = store_hold_new(sealed + 1);
	pthread_mutex_lock(&s->view_mu);
	act->wal_last = sealed;
	s->frozen = act;
	s->active = fresh;
	pthread_mutex_unlock(&s->view_mu);
	pthread_rwlock_unlock(&s->ingest_rw);
	return 0;
}

/* --- writing a head ------------------------------------------------------------- */

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

/* Row order in a block: by time, then stack. */
static inline bool row_less(const struct store_row *x, const struct store_row *y)
{
	return x->ts_ns < y->ts_ns || (x->ts_ns == y->ts_ns && x->stack < y->stack);
}

/* Stable insertion sort of @r[@n] (row_less). */
static void sort_rows_insert(struct store_row *r, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		struct store_row x = r[i];
		size_t j = i;

		while (j > 0 && row_less(&x, &r[j - 1])) {
			r[j] = r[j - 1];
			j--;
		}
		r[j] = x;
	}
}

/* Stable merge sort of @r[@n] (row_less); @tmp holds @n rows. */
static void sort_rows_merge(struct store_row *r, size_t n, struct store_row *tmp)
{
	size_t h = n / 2, i = 0, j = h, k = 0;

	if (n <= 32) {
		sort_rows_insert(r, n);
		return;
	}
	sort_rows_merge(r, h, tmp);
	sort_rows_merge(r + h, n - h, tmp);
	if (!row_less(&r[h], &r[h - 1]))
		return;
	while (i < h && j < n)
		tmp[k++] = row_less(&r[j], &r[i]) ? r[j++] : r[i++];
	while (i < h)
		tmp[k++] = r[i++];
	memcpy(r, tmp, k * sizeof(*r)); /* r[j..n) are in place */
}

/*
 * Radix key of a row for sort_segment: its time's offset from @tmin, or
 * (@by_stack, when every row has the same time) its stack.
 */
static inline uint64_t row_key(const struct store_row *x, int64_t tmin, bool by_stack)
{
	return by_stack ? x->stack : (uint64_t)x->ts_ns - (uint64_t)tmin;
}

/*
 * Stable LSD radix sort of @r[@n] (n < 2^32) on row_key, @npass 8-bit
 * digits (at most 8); a digit every row shares is skipped. @tmp holds @n
 * rows. The counts of all digits come from one pass over the rows.
 */
static void sort_rows_radix(struct store_row *r, size_t n, struct store_row *tmp, int64_t tmin,
			    bool by_stack, unsigned npass)
{
	uint32_t cnt[8][256];
	struct store_row *from = r, *to = tmp;

	memset(cnt, 0, npass * sizeof(cnt[0]));
	for (size_t i = 0; i < n; i++) {
		uint64_t k = row_key(&r[i], tmin, by_stack);

		for (unsigned p = 0; p < npass; p++)
			cnt[p][(k >> (8 * p)) & 255]++;
	}
	for (unsigned p = 0; p < npass; p++) {
		uint32_t *c = cnt[p], sum = 0;
		unsigned sh = 8 * p;

		if (c[(row_key(&from[0], tmin, by_stack) >> sh) & 255] == n)
			continue;
		for (unsigned d = 0; d < 256; d++) {
			uint32_t x = c[d];

			c[d] = sum;
			sum += x;
		}
		for (size_t i = 0; i < n; i++)
			to[c[(row_key(&from[i], tmin, by_stack) >> sh) & 255]++] = from[i];
		struct store_row *t = from;
		from = to;
		to = t;
	}
	if (from != r)
		memcpy(r, from, n * sizeof(*r));
}

/*
 * Sort segment @r[@n] (row_less, stably) whose times lie in [@tmin,
 * @tmax] and whose stack ids OR to @sor; @tmp holds @n rows. Large
 * segments take a radix sort on the time (on the stack when all times are
 * equal), then each run of equal times is put in stack order; small ones,
 * or ones whose times need too many digits for their size, the merge sort.
 * The synthetic load's series are one such segment: every request of a
 * client repeats the same 200 times, so one pass of 256 buckets sorts a
 * million rows (a merge sort does 15 passes).
 */
static void sort_segment(struct store_row *r, size_t n, struct store_row *tmp, int64_t tmin,
			 int64_t tmax, uint32_t sor)
{
	uint64_t range = (uint64_t)tmax - (uint64_t)tmin;
	bool by_stack = range == 0;
	unsigned bits = by_stack ? (sor ? 32 - (unsigned)__builtin_clz(sor) : 1)
				 : 64 - (unsigned)__builtin_clzll(range);
	unsigned npass = (bits + 7) / 8;

	/* A pass costs about 2n moves and 256 buckets: worth it from 128
	 * rows a pass (measured against the merge sort on agent-like rows). */
	if (n > UINT32_MAX || n < (size_t)npass * 128) {
		sort_rows_merge(r, n, tmp);
		return;
	}
	sort_rows_radix(r, n, tmp, tmin, by_stack, npass);
	if (by_stack)
		return;
	for (size_t i = 0; i + 1 < n;) {
		size_t j = i + 1;
		bool sorted = true;

		for (; j < n && r[j].ts_ns == r[i].ts_ns; j++)
			sorted = sorted && r[j].stack >= r[j - 1].stack;
		if (!sorted)
			sort_rows_merge(r + i, j - i, tmp);
		i = j;
	}
}

/*
 * Rows by time, then stack (row_less), stably: the order glibc's qsort (a
 * merge sort) gave. Rows come in arrival order, sorted but for the rows
 * of one request (a request's samples, e.g. grouped by stack), so
 * the rows split into segments where every row before a boundary is
 * strictly older than every row after it; each segment is sorted on its
 * own (the result is the same as sorting all of them), by sort_segment.
 * Rows already in order (time, then stack) are left as they are.
 */
void store_rows_sort(struct store_row *r, size_t n)
{
	int64_t *sufmin, pmax, pmin;
	struct store_row *tmp;
	size_t i = 1, start;
	uint32_t sor;

	while (i < n && !row_less(&r[i], &r[i - 1]))
		i++;
	if (i >= n)
		return;
	sufmin = xmalloc(sizeof(*sufmin) * n);
	sufmin[n - 1] = r[n - 1].ts_ns;
	for (size_t k = n - 1; k-- > 0;)
		sufmin[k] = PROF_MIN(r[k].ts_ns, sufmin[k + 1]);
	tmp = xmalloc(sizeof(*tmp) * n);
	start = 0;
	pmax = INT64_MIN;
	pmin = INT64_MAX;
	sor = 0;
	for (size_t k = 0; k < n; k++) {
		pmax = PROF_MAX(pmax, r[k].ts_ns);
		pmin = PROF_MIN(pmin, r[k].ts_ns);
		sor |= r[k].stack;
		if (k + 1 == n || pmax < sufmin[k + 1]) {
			if (k + 1 - start > 32)
				sort_segment(r + start, k + 1 - start, tmp, pmin, pmax, sor);
			else
				sort_rows_insert(r + start, k + 1 - start);
			start = k + 1;
			pmax = INT64_MIN;
			pmin = INT64_MAX;
			sor = 0;
		}
	}
	free(tmp);
	free(sufmin);
}

static struct store_block_write_opts write_opts(const struct store *s, int level_bonus)
{
	struct store_block_write_opts o = { 0 };

	o.zstd_level = PROF_MIN(s->opt.zstd_level + level_bonus, 19);
	o.ts_resolution_ns = s->opt.ts_resolution_ns;
	o.page_rows = s->opt.page_rows;
	/* Flushes too: an hour block's rollup costs a pass over its rows
	 * (hours_encode) and about 2 % of the block's bytes, and lets a long
	 * range sum the hours it covers without reading their pages before
	 * compaction merges them (bench/results/query.md). */
	o.rollup = s->opt.rollups;
	o.rollup_bucket_ns = s->opt.rollup_bucket_ns;
	return o;
}

int store_write_head(struct store *s, struct store_head *h, uint64_t id,
		     const struct store_block_info *info, struct prof_err *err)
{
	struct store_block_writer *w = NULL;
	struct store_block_write_opts wo = write_opts(s, 0);
	const struct model_profile *d;
	const struct store_stack_node *nodes;
	struct ser_ref *ser = NULL;
	uint64_t *leaf_rows = NULL;
	struct store_row *tmp = NULL;
	size_t nn, ns, tmpcap = 0;
	int rc;

	store_head_rdlock(h);
	d = store_head_dict(h);
	nodes = store_head_stacks(h, &nn);
	ns = store_head_nseries(h);
	leaf_rows = xcalloc(nn + 1, sizeof(uint64_t));
	ser = xcalloc(ns + 1, sizeof(*ser));
	size_t k = 0;
	for (size_t i = 0; i < ns; i++) {
		ser[k].s = store_head_series_at(h, i, &ser[k].rows);
		if (!ser[k].s->nrows)
			continue;
		for (uint64_t j = 0; j < ser[k].s->nrows; j++)
			leaf_rows[ser[k].rows[j].stack]++;
		k++;
	}
	ns = k;
	if (!ns) {
		rc = -ENODATA;
		goto out;
	}
	qsort(ser, ns, sizeof(*ser), cmp_ser);
	rc = store_block_writer_new(s->blocks_dir, id, &wo, &w, err);
	size_t nsets;
	const struct store_attr_set *sets = store_head_attrs(h, &nsets);
	if (!rc)
		rc = store_block_writer_symbols(w, d, nodes, nn, leaf_rows, sets, nsets, err);
	for (size_t i = 0; i < ns && !rc; i++) {
		size_t n = ser[i].s->nrows;

		if (n > tmpcap) {
			free(tmp);
			tmpcap = n;
			tmp = xmalloc(sizeof(*tmp) * tmpcap);
		}
		memcpy(tmp, ser[i].rows, sizeof(*tmp) * n);
		store_rows_sort(tmp, n);
		rc = store_block_writer_series(w, ser[i].s->type, ser[i].s->labels,
					       ser[i].s->nlabels, tmp, n, err);
	}
	if (!rc)
		rc = store_block_writer_finish(w, info, err);
out:
	store_head_rdunlock(h);
	store_block_writer_free(w);
	free(tmp);
	free(ser);
	free(leaf_rows);
	return rc;
}

/* Remove the directory of block @id, which never entered the view. */
static void remove_block(struct store *s, uint64_t id)
{
	char name[17];

	store_block_dir_name(id, name);
	char *path = xasprintf("%s/%s", s->blocks_dir, name);
	store_delete_block_dir(s->blocks_dir, path);
	free(path);
}

/* Open the block just written as @id and put it in the view in place of @gone (may be NULL). */
static int publish(struct store *s, uint64_t id, struct store_hold *gone_head,
		   struct store_blk **gone, size_t ngone, struct prof_err *err)
{
	char name[17];
	struct store_block *b = NULL;
	int rc;

	store_block_dir_name(id, name);
	char *path = xasprintf("%s/%s", s->blocks_dir, name);
	rc = store_block_open(path, &b, err);
	free(path);
	if (rc)
		return rc;
	struct store_blk *nb = store_blk_new(b);
	pthread_mutex_lock(&s->view_mu);
	store_view_add_block(s, nb);
	s->covered = PROF_MAX(s->covered, b->meta.wal_last);
	if (gone_head && s->frozen == gone_head)
		s->frozen = NULL;
	for (size_t i = 0; i < ngone; i++) {
		for (size_t j = 0; j < s->blocks.n; j++) {
			if (s->blocks.v[j] == gone[i]) {
				memmove(s->blocks.v + j, s->blocks.v + j + 1,
					sizeof(*s->blocks.v) * (s->blocks.n - j - 1));
				s->blocks.n--;
				break;
			}
		}
		gone[i]->doomed = true;
	}
	pthread_cond_broadcast(&s->view_cond);
	pthread_mutex_unlock(&s->view_mu);
	/* Drop the view's references; the directories go with the last one. */
	for (size_t i = 0; i < ngone; i++)
		store_blk_put(s, gone[i]);
	if (gone_head)
		store_hold_put(s, gone_head);
	return 0;
}

/* Take frozen head @fz out of the view (its segments are covered by a block or hold nothing). */
static void drop_frozen(struct store *s, struct store_hold *fz)
{
	bool had;

	pthread_mutex_lock(&s->view_mu);
	had = s->frozen == fz;
	if (had)
		s->frozen = NULL;
	s->covered = PROF_MAX(s->covered, fz->wal_last);
	pthread_cond_broadcast(&s->view_cond);
	pthread_mutex_unlock(&s->view_mu);
	if (had)
		store_hold_put(s, fz); /* the view's reference */
}

static int flush_locked(struct store *s, bool from_replay, struct prof_err *err)
{
	struct store_hold *fz;
	uint64_t id;
	int rc;

	/* The frozen head is the replay's and still filling. */
	if (!from_replay && __atomic_load_n(&s->replaying, __ATOMIC_ACQUIRE))
		return 0;
	rc = store_rotate(s, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&s->view_mu);
	fz = s->frozen;
	if (fz)
		fz->refs++;
	id = fz ? store_new_block_id(s) : 0;
	pthread_mutex_unlock(&s->view_mu);
	if (!fz)
		return 0;
	struct store_block_info info = { .level = 1,
					 .wal_first = fz->wal_first,
					 .wal_last = fz->wal_last };
	int64_t t0 = prof_now_ns();
	bool written = false;
	rc = store_write_head(s, fz->h, id, &info, err);
	if (rc == -ENODATA) {
		/* Segments without rows (all refused at replay): nothing to write. */
		drop_frozen(s, fz);
		rc = 0;
	} else if (!rc) {
		rc = publish(s, id, fz, NULL, 0, err);
		if (rc) {
			/* Written but not readable back: remove it (its segments
			 * stay, the frozen head stays queried and is written again
			 * by the next flush), so nothing is held twice. */
			log_error("store: block %016" PRIx64
				  " was written but cannot be opened: %s",
				  id, err && err->msg[0] ? err->msg : prof_strerror(rc));
			remove_block(s, id);
		} else {
			written = true;
		}
	}
	pthread_mutex_lock(&s->view_mu);
	if (rc) {
		s->flush_err = rc;
		s->flush_failures++;
	} else {
		s->flush_err = 0;
		s->flushes += written;
	}
	pthread_cond_broadcast(&s->view_cond);
	uint64_t covered = s->covered;
	pthread_mutex_unlock(&s->view_mu);
	if (written && !rc)
		log_info("store: flushed head to block %016" PRIx64 " wal=%" PRIu64 "..%" PRIu64
			 " in %.3fs",
			 id, fz->wal_first, fz->wal_last, (double)(prof_now_ns() - t0) / 1e9);
	store_hold_put(s, fz);
	if (!rc) {
		struct prof_err cerr;

		prof_err_init(&cerr);
		if (covered && store_wal_checkpoint(s->wal, covered, &cerr))
			log_error("store: %s (the segments stay; replay skips them)", cerr.msg);
	}
	return rc;
}

int store_flush(struct store *s, struct prof_err *err)
{
	int rc;

	if (s->opt.read_only || s->mem)
		return prof_err_set(err, -EROFS, -1, "store %s: opened read-only or in memory",
				    s->dir);
	pthread_mutex_lock(&s->maint_mu);
	rc = flush_locked(s, false, err);
	pthread_mutex_unlock(&s->maint_mu);
	return rc;
}

int store_flush_replay(struct store *s, struct prof_err *err)
{
	int rc;

	pthread_mutex_lock(&s->maint_mu);
	rc = flush_locked(s, true, err);
	pthread_mutex_unlock(&s->maint_mu);
	return rc;
}

/* --- compaction ------------------------------------------------------------------ */

static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/*
 * Pick the blocks to merge: the first window (by time) that is closed
 * (newer data exists past its end) and has two blocks or more, or that
 * has compact_min_blocks flushed (level 1) blocks; in an open window only
 * the level-1 blocks are merged, so a growing window is not rewritten
 * over and over. At most compact_max_rows rows. view_mu held; the chosen
 * blocks get a reference each.
 */
static size_t pick(struct store *s, bool force, struct store_blk ***out)
{
	int64_t W = s->opt.compact_window_ns, newest = INT64_MIN;
	size_t n = s->blocks.n;
	struct store_blk **sel = xcalloc(n + 1, sizeof(*sel));
	size_t nsel = 0;

	for (size_t i = 0; i < n; i++)
		newest = PROF_MAX(newest, s->blocks.v[i]->b->meta.max_ts_ns);
	if (s->active) {
		struct store_head_stats hs;

		store_head_get_stats(s->active->h, &hs);
		if (hs.rows)
			newest = PROF_MAX(newest, hs.max_ts_ns);
	}
	/* Windows in time order: s->blocks is sorted by min_ts. */
	for (size_t i = 0; i < n && nsel < 2;) {
		int64_t win = floor_div(s->blocks.v[i]->b->meta.min_ts_ns, W);
		size_t j = i, level1 = 0;

		while (j < n && floor_div(s->blocks.v[j]->b->meta.min_ts_ns, W) == win) {
			level1 += s->blocks.v[j]->b->meta.level == 1;
			j++;
		}
		bool closed = force || (win + 1 <= INT64_MAX / W && newest >= (win + 1) * W);
		nsel = 0;
		if (j - i >= 2 && (closed || level1 >= s->opt.compact_min_blocks)) {
			uint64_t rows = 0;

			for (size_t k = i; k < j; k++) {
				struct store_blk *b = s->blocks.v[k];

				if (!closed && b->b->meta.level != 1)
					continue;
				if (nsel >= 2 && s->opt.compact_max_rows &&
				    rows + b->b->meta.nrows > s->opt.compact_max_rows)
					break;
				rows += b->b->meta.nrows;
				sel[nsel++] = b;
			}
		}
		i = j;
	}
	if (nsel < 2) {
		free(sel);
		*out = NULL;
		return 0;
	}
	for (size_t k = 0; k < nsel; k++)
		sel[k]->refs++;
	*out = sel;
	return nsel;
}

struct src_state {
	struct store_blk *b;
	struct store_block_syms *sy;
	uint32_t *map;	/* source node -> merged node */
	uint32_t *amap; /* source attribute set -> merged set */
	uint32_t cur;	/* next series */
};

/* Merge @srcs (sorted by time) into block @id. */
static int merge(struct store *s, struct store_blk **srcs, size_t n, uint64_t id,
		 struct prof_err *err)
{
	struct src_state *st = xcalloc(n, sizeof(*st));
	struct store_head *mh = store_head_new();
	struct store_block_writer *w = NULL;
	struct store_block_write_opts wo = write_opts(s, 6);
	struct store_block_scratch sc = { 0 };
	VEC(struct store_row) rows = { 0 };
	VEC(uint64_t) sources = { 0 };
	uint64_t *leaf_rows = NULL;
	struct store_block_info info = { 0 };
	int rc = 0;

	info.wal_first = UINT64_MAX;
	for (size_t i = 0; i < n && !rc; i++) {
		const struct store_block_meta *m = &srcs[i]->b->meta;

		st[i].b = srcs[i];
		rc = store_syms_pin(s, srcs[i], &st[i].sy, err);
		if (rc)
			break;
		st[i].map = xmalloc(sizeof(uint32_t) * (st[i].sy->nnodes + 1));
		rc = store_head_import(mh, &st[i].sy->dict, st[i].sy->nodes, st[i].sy->nnodes,
				       st[i].map);
		st[i].amap = xmalloc(sizeof(uint32_t) * (st[i].sy->nsets + 1));
		store_head_import_attrs(mh, st[i].sy->sets, st[i].sy->nsets, st[i].amap);
		if (rc)
			prof_err_set(err, rc, -1, "compaction: symbols of %s are inconsistent",
				     srcs[i]->b->dir);
		info.level = PROF_MAX(info.level, m->level + 1);
		if (m->wal_first)
			info.wal_first = PROF_MIN(info.wal_first, m->wal_first);
		info.wal_last = PROF_MAX(info.wal_last, m->wal_last);
		VEC_PUSH(&sources, m->id);
		for (uint32_t k = 0; k < m->nsources; k++)
			VEC_PUSH(&sources, srcs[i]->b->sources[k]);
	}
	if (info.wal_first == UINT64_MAX)
		info.wal_first = 0;
	if (sources.n > STORE_BLOCK_MAX_SOURCES) /* keep the direct ones at least */
		sources.n = STORE_BLOCK_MAX_SOURCES;
	info.sources = sources.v;
	info.nsources = (uint32_t)sources.n;
	if (rc)
		goto out;

	size_t nn;
	store_head_rdlock(mh);
	const struct store_stack_node *nodes = store_head_stacks(mh, &nn);
	leaf_rows = xcalloc(nn + 1, sizeof(uint64_t));
	for (size_t i = 0; i < n; i++)
		for (size_t r = 0; r < st[i].sy->nleaves; r++)
			leaf_rows[st[i].map[st[i].sy->leaf_node[r]]] += st[i].sy->leaf_rows[r];
	rc = store_block_writer_new(s->blocks_dir, id, &wo, &w, err);
	size_t nsets;
	const struct store_attr_set *sets = store_head_attrs(mh, &nsets);
	if (!rc)
		rc = store_block_writer_symbols(w, store_head_dict(mh), nodes, nn, leaf_rows, sets,
						nsets, err);
	store_head_rdunlock(mh);

	/* k-way merge of the series lists, which are sorted by key. */
	while (!rc) {
		const struct store_block_series *min = NULL;

		for (size_t i = 0; i < n; i++) {
			const struct store_block *b = st[i].b->b;

			if (st[i].cur >= b->nseries)
				continue;
			const struct store_block_series *c = &b->series[st[i].cur];
			if (!min || store_series_key_cmp(c->pub.type, c->pub.labels, c->pub.nlabels,
							 min->pub.type, min->pub.labels,
							 min->pub.nlabels) < 0)
				min = c;
		}
		if (!min)
			break;
		const char *type = min->pub.type;
		const struct store_label *labels = min->pub.labels;
		uint32_t nlabels = min->pub.nlabels;
		bool sorted = true;

		rows.n = 0;
		for (size_t i = 0; i < n && !rc; i++) {
			const struct store_block *b = st[i].b->b;

			if (st[i].cur >= b->nseries)
				continue;
			const struct store_block_series *c = &b->series[st[i].cur];
			if (store_series_key_cmp(c->pub.type, c->pub.labels, c->pub.nlabels, type,
						 labels, nlabels))
				continue;
			for (uint32_t p = c->first_page; p < c->first_page + c->npages && !rc;
			     p++) {
				rc = store_block_page_rows(b, p, st[i].sy, INT64_MIN, INT64_MAX,
							   &sc, err);
				for (size_t r = 0; r < sc.rows.n && !rc; r++) {
					struct store_row row = sc.rows.v[r];

					row.stack = st[i].map[row.stack];
					row.attrs = st[i].amap[row.attrs];
					if (rows.n && row.ts_ns < rows.v[rows.n - 1].ts_ns)
						sorted = false;
					VEC_PUSH(&rows, row);
				}
			}
		}
		if (rc)
			break;
		if (!sorted)
			store_rows_sort(rows.v, rows.n);
		rc = store_block_writer_series(w, type, labels, nlabels, rows.v, rows.n, err);
		/* Advance every source past this key (which points into min's
		 * block, unchanged by advancing). */
		for (size_t i = 0; i < n; i++) {
			const struct store_block *b = st[i].b->b;

			if (st[i].cur < b->nseries) {
				const struct store_block_series *c = &b->series[st[i].cur];

				if (!store_series_key_cmp(c->pub.type, c->pub.labels,
							  c->pub.nlabels, type, labels, nlabels))
					st[i].cur++;
			}
		}
	}
	if (!rc)
		rc = store_block_writer_finish(w, &info, err);
out:
	store_block_writer_free(w);
	for (size_t i = 0; i < n; i++) {
		if (st[i].sy)
			store_syms_unpin(s, st[i].b);
		free(st[i].map);
		free(st[i].amap);
	}
	free(st);
	free(leaf_rows);
	VEC_FREE(&rows);
	VEC_FREE(&sources);
	store_block_scratch_release(&sc);
	store_head_free(mh);
	return rc;
}

int store_compact(struct store *s, bool force, uint32_t *merged, struct prof_err *err)
{
	struct store_blk **sel = NULL;
	size_t n;
	uint64_t id;
	int rc = 0;

	if (merged)
		*merged = 0;
	if (s->opt.read_only || s->mem)
		return prof_err_set(err, -EROFS, -1, "store %s: opened read-only or in memory",
				    s->dir);
	pthread_mutex_lock(&s->maint_mu);
	pthread_mutex_lock(&s->view_mu);
	n = pick(s, force, &sel);
	id = n ? store_new_block_id(s) : 0;
	pthread_mutex_unlock(&s->view_mu);
	if (n) {
		int64_t t0 = prof_now_ns();
		uint64_t rows = 0;

		for (size_t i = 0; i < n; i++)
			rows += sel[i]->b->meta.nrows;
		rc = merge(s, sel, n, id, err);
		if (!rc) {
			rc = publish(s, id, NULL, sel, n, err);
			if (rc) /* not readable back: gone before a restart takes its
				 * sources for merged */
				remove_block(s, id);
		}
		if (!rc) {
			pthread_mutex_lock(&s->view_mu);
			s->compactions++;
			pthread_mutex_unlock(&s->view_mu);
			log_info("store: compacted %zu blocks (%" PRIu64 " rows) into %016" PRIx64
				 " in %.3fs",
				 n, rows, id, (double)(prof_now_ns() - t0) / 1e9);
			if (merged)
				*merged = (uint32_t)n;
		}
		for (size_t i = 0; i < n; i++)
			store_blk_put(s, sel[i]); /* pick's references */
	}
	free(sel);
	pthread_mutex_unlock(&s->maint_mu);
	return rc;
}

/* --- retention ------------------------------------------------------------------- */

int store_apply_retention(struct store *s, int64_t now_ns, uint32_t *deleted, struct prof_err *err)
{
	VEC(struct store_blk *) gone = { 0 };

	if (deleted)
		*deleted = 0;
	if (s->opt.read_only || s->mem)
		return prof_err_set(err, -EROFS, -1, "store %s: opened read-only or in memory",
				    s->dir);
	if (s->opt.retention_ns <= 0)
		return 0;
	int64_t cutoff = now_ns - s->opt.retention_ns;
	pthread_mutex_lock(&s->maint_mu);
	pthread_mutex_lock(&s->view_mu);
	for (size_t i = 0; i < s->blocks.n;) {
		struct store_blk *b = s->blocks.v[i];

		if (b->b->meta.max_ts_ns < cutoff) {
			b->doomed = true;
			VEC_PUSH(&gone, b);
			memmove(s->blocks.v + i, s->blocks.v + i + 1,
				sizeof(*s->blocks.v) * (s->blocks.n - i - 1));
			s->blocks.n--;
			continue;
		}
		i++;
	}
	s->blocks_deleted += gone.n;
	pthread_mutex_unlock(&s->view_mu);
	for (size_t i = 0; i < gone.n; i++) {
		log_info("store: retention deletes block %s (newest row %" PRId64 " ns)",
			 gone.v[i]->b->dir, gone.v[i]->b->meta.max_ts_ns);
		store_blk_put(s, gone.v[i]);
	}
	if (deleted)
		*deleted = (uint32_t)gone.n;
	VEC_FREE(&gone);
	pthread_mutex_unlock(&s->maint_mu);
	return 0;
}

/* --- the maintenance round and its thread ------------------------------------------------ */

int store_maintain(struct store *s, int64_t now_ns, struct prof_err *err)
{
	int rc = 0;
	uint32_t merged;

	pthread_mutex_lock(&s->view_mu);
	struct store_hold *act = s->active;
	bool frozen = s->frozen != NULL;
	act->refs++;
	pthread_mutex_unlock(&s->view_mu);
	bool due = store_head_due(s, act, now_ns);
	store_hold_put(s, act);
	if (due || frozen)
		rc = store_flush(s, err);
	/* Bounded, so a stream of work cannot starve the flushes. */
	for (int i = 0; i < 8 && !rc; i++) {
		rc = store_compact(s, false, &merged, err);
		if (!merged)
			break;
	}
	if (!rc)
		rc = store_apply_retention(s, now_ns, NULL, err);
	return rc;
}

static void *maint_main(void *arg)
{
	struct store *s = arg;

	pthread_mutex_lock(&s->view_mu);
	while (!s->stopping) {
		struct timespec until;
		int64_t wake = prof_now_ns() + s->opt.maint_interval_ns;

		until.tv_sec = (time_t)(wake / 1000000000);
		until.tv_nsec = (long)(wake % 1000000000);
		/* Woken early by an ingest that froze a full head (a frozen head
		 * is written at once, unless it is the background replay's,
		 * which broadcasts when it is done). */
		if (!s->frozen || s->replaying)
			pthread_cond_timedwait(&s->view_cond, &s->view_mu, &until);
		if (s->stopping)
			break;
		pthread_mutex_unlock(&s->view_mu);
		struct prof_err err;
		prof_err_init(&err);
		int rc = store_maintain(s, prof_now_ns(), &err);
		if (rc)
			log_error("store %s: maintenance: %s", s->dir,
				  err.msg[0] ? err.msg : prof_strerror(rc));
		pthread_mutex_lock(&s->view_mu);
		if (rc && s->frozen && !s->stopping) {
			/* Back off before retrying a failed flush. */
			int64_t t = prof_now_ns() + s->opt.maint_interval_ns;

			until.tv_sec = (time_t)(t / 1000000000);
			until.tv_nsec = (long)(t % 1000000000);
			pthread_cond_timedwait(&s->view_cond, &s->view_mu, &until);
		}
	}
	pthread_mutex_unlock(&s->view_mu);
	return NULL;
}

int store_maint_start(struct store *s, struct prof_err *err)
{
	int rc = pthread_create(&s->thread, NULL, maint_main, s);

	if (rc)
		return prof_err_set(err, -rc, -1, "store: cannot start the maintenance thread: %s",
				    strerror(rc));
	s->thread_running = true;
	return 0;
}

void store_maint_stop(struct store *s)
{
	if (!s->thread_running)
		return;
	pthread_mutex_lock(&s->view_mu);
	s->stopping = true;
	pthread_cond_broadcast(&s->view_cond);
	pthread_mutex_unlock(&s->view_mu);
	pthread_join(s->thread, NULL);
	s->thread_running = false;
}
