// SPDX-License-Identifier: Apache-2.0
/*
 * store.c - data directory, open (with crash repair), WAL replay into the
 * head, ingest with backpressure; see store.h. Flush, compaction and
 * retention are in maint.c, the query side in scan.c, the shared
 * structures and the lock order in store_int.h.
 */
#include "base/compat.h"
#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp.h"
#include "store/store_int.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

void store_options_default(struct store_options *o)
{
	memset(o, 0, sizeof(*o));
	o->block_duration_ns = 3600LL * 1000000000;
	o->head_max_bytes = (uint64_t)256 << 20;
	o->head_max_rows = 0;
	o->retention_ns = 0;
	o->compact_window_ns = 24 * 3600LL * 1000000000;
	o->compact_min_blocks = 4;
	o->compact_max_rows = (uint64_t)1 << 30;
	o->ts_resolution_ns = 1000000;
	o->zstd_level = 3;
	o->page_rows = STORE_BLOCK_DEFAULT_ROWS;
	o->rollups = true;
	o->rollup_bucket_ns = 3600LL * 1000000000;
	o->wal_segment_bytes = (uint64_t)64 << 20;
	o->syms_cache_bytes = (uint64_t)512 << 20;
	o->background = true;
	o->maint_interval_ns = 10LL * 1000000000;
	o->read_only = false;
}

/*
 * model_profile_validate and store_head_check_validated of @p, whose
 * dictionary is checked once when @prev (the profile checked before it,
 * or NULL) shares it (fmt_otlp_decode_shared).
 */
static int check_profile(const struct model_profile *p, const struct model_profile *prev,
			 struct prof_err *err)
{
	int rc;

	if (prev && model_profile_same_dict(prev, p)) {
		rc = model_profile_validate_samples(p, err);
		return rc ? rc : store_head_check_samples(p, err);
	}
	rc = model_profile_validate(p, err);
	return rc ? rc : store_head_check_validated(p, err);
}

/* Decode and check an OTLP request; on success @batch holds the profiles. */
static int decode_otlp(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *batch,
		       uint64_t *nsamples, struct prof_err *err)
{
	int rc;

	memset(batch, 0, sizeof(*batch));
	*nsamples = 0;
	rc = fmt_otlp_decode_shared(data, n, max_samples, batch, err);
	if (rc) {
		if (!err || !err->code)
			prof_err_set(err, rc, -1, "otlp: %s", prof_strerror(rc));
		return rc;
	}
	for (size_t i = 0; i < batch->n; i++) {
		rc = check_profile(&batch->profiles[i], i ? &batch->profiles[i - 1] : NULL, err);
		if (rc) {
			fmt_otlp_batch_release(batch);
			return rc;
		}
		*nsamples += batch->profiles[i].samples.n;
	}
	return 0;
}

/* Decode and check a STORE_WAL_PPROF payload; on success @batch holds the profiles. */
static int decode_pprof_rec(const void *data, size_t n, struct fmt_otlp_batch *batch,
			    struct prof_err *err)
{
	int rc;

	memset(batch, 0, sizeof(*batch));
	rc = store_wal_pprof_decode(data, n, &batch->profiles, &batch->n, err);
	for (size_t i = 0; i < batch->n && !rc; i++)
		rc = check_profile(&batch->profiles[i], NULL, err);
	if (rc)
		fmt_otlp_batch_release(batch);
	return rc;
}

/* --- holds and blocks ------------------------------------------------------------- */

struct store_hold *store_hold_new(uint64_t wal_first)
{
	struct store_hold *h = xcalloc(1, sizeof(*h));

	h->h = store_head_new();
	h->refs = 1;
	h->wal_first = wal_first;
	return h;
}

void store_hold_put(struct store *s, struct store_hold *h)
{
	bool last;

	if (!h)
		return;
	pthread_mutex_lock(&s->view_mu);
	last = --h->refs == 0;
	pthread_mutex_unlock(&s->view_mu);
	if (last) {
		if (!h->borrowed)
			store_head_free(h->h);
		free(h);
	}
}

struct store_blk *store_blk_new(struct store_block *b)
{
	struct store_blk *k = xcalloc(1, sizeof(*k));

	k->b = b;
	k->refs = 1;
	return k;
}

/*
 * Delete a block directory crash-safely: rename it to <id>.del (atomic;
 * open removes leftovers of that name), make the rename durable, remove.
 */
void store_delete_block_dir(const char *blocks_dir, const char *dir)
{
	char *del = xasprintf("%s.del", dir);

	if (rename(dir, del)) {
		log_error("store: cannot rename %s to %s: %s", dir, del, strerror(errno));
	} else {
		fs_fsync_dir(blocks_dir);
		fs_rm_flat_dir(del, "store");
	}
	free(del);
}

void store_blk_put(struct store *s, struct store_blk *b)
{
	bool last;

	if (!b)
		return;
	pthread_mutex_lock(&s->view_mu);
	last = --b->refs == 0;
	if (last && b->syms)
		s->syms_bytes -= b->syms->bytes;
	pthread_mutex_unlock(&s->view_mu);
	if (!last)
		return;
	if (b->doomed && !s->opt.read_only)
		store_delete_block_dir(s->blocks_dir, b->b->dir);
	store_block_syms_free(b->syms);
	store_block_free(b->b);
	free(b);
}

void store_view_add_block(struct store *s, struct store_blk *b)
{
	size_t i = s->blocks.n;

	VEC_PUSH(&s->blocks, b);
	while (i > 0) {
		const struct store_block_meta *p = &s->blocks.v[i - 1]->b->meta;

		if (p->min_ts_ns < b->b->meta.min_ts_ns ||
		    (p->min_ts_ns == b->b->meta.min_ts_ns && p->id < b->b->meta.id))
			break;
		s->blocks.v[i] = s->blocks.v[i - 1];
		i--;
	}
	s->blocks.v[i] = b;
}

bool store_head_due(struct store *s, struct store_hold *h, int64_t now_ns)
{
	struct store_head_stats st;
	const struct store_options *o = &s->opt;

	store_head_get_stats(h->h, &st);
	if (st.rows == 0)
		return false;
	if (o->head_max_bytes && st.bytes >= o->head_max_bytes)
		return true;
	if (o->head_max_rows && st.rows >= o->head_max_rows)
		return true;
	if (o->block_duration_ns > 0 &&
	    ((uint64_t)st.max_ts_ns - (uint64_t)st.min_ts_ns >= (uint64_t)o->block_duration_ns ||
	     (h->created_ns && now_ns - h->created_ns >= o->block_duration_ns)))
		return true;
	return false;
}

/* Only the memory bounds: what an ingest must not go past. */
static bool head_full(struct store *s, struct store_hold *h)
{
	struct store_head_stats st;

	store_head_get_stats(h->h, &st);
	return (s->opt.head_max_bytes && st.bytes >= s->opt.head_max_bytes) ||
	       (s->opt.head_max_rows && st.rows >= s->opt.head_max_rows);
}

/* --- open ------------------------------------------------------------------------ */

static void store_init_locks(struct store *s)
{
	pthread_rwlockattr_t attr;

	s->lock_fd = -1;
	pthread_mutex_init(&s->maint_mu, NULL);
	pthread_rwlockattr_init(&attr);
	/* A waiting rotation goes before new ingests. */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->ingest_rw, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&s->view_mu, NULL);
	pthread_cond_init(&s->view_cond, NULL);
}

static bool hex_name(const char *s, uint64_t *id)
{
	uint64_t v = 0;

	if (strlen(s) != 16)
		return false;
	for (int i = 0; i < 16; i++) {
		char c = s[i];
		unsigned d;

		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a' + 10);
		else
			return false;
		v = v << 4 | d;
	}
	*id = v;
	return true;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static bool has_id(const uint64_t *v, size_t n, uint64_t id)
{
	return n && bsearch(&id, v, n, sizeof(*v), cmp_u64) != NULL;
}

/*
 * Open every block of DIR/blocks, repairing what a crash left: *.tmp
 * (a block being written) and *.del (a block being deleted) go, and so
 * does a block that another block lists as merged into it.
 */
static int load_blocks(struct store *s, struct prof_err *err)
{
	VEC(uint64_t) ids = { 0 };
	VEC(uint64_t) merged = { 0 };
	VEC(struct store_blk *) open_ok = { 0 };
	uint64_t maxid = 0;
	DIR *d;
	struct dirent *de;

	if (!s->opt.read_only && mkdir(s->blocks_dir, 0755) && errno != EEXIST)
		return prof_err_set(err, -errno, -1, "store: cannot create %s: %s", s->blocks_dir,
				    strerror(errno));
	d = opendir(s->blocks_dir);
	if (!d) {
		if (errno == ENOENT && s->opt.read_only)
			return 0;
		return prof_err_set(err, -errno, -1, "store: cannot list %s: %s", s->blocks_dir,
				    strerror(errno));
	}
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		size_t len = strlen(n);
		uint64_t id;

		if (len > 4 && (!strcmp(n + len - 4, ".tmp") || !strcmp(n + len - 4, ".del"))) {
			char *p = xasprintf("%s/%s", s->blocks_dir, n);

			if (!s->opt.read_only) {
				log_warn("store: removing %s left by an interrupted %s", p,
					 n[len - 3] == 't' ? "block write" : "block deletion");
				fs_rm_flat_dir(p, "store");
			}
			free(p);
		} else if (hex_name(n, &id)) {
			VEC_PUSH(&ids, id);
		}
	}
	closedir(d);
	if (ids.n > 1)
		qsort(ids.v, ids.n, sizeof(*ids.v), cmp_u64);
	for (size_t i = 0; i < ids.n; i++) {
		char name[17];
		struct store_block *b;
		struct prof_err berr;

		store_block_dir_name(ids.v[i], name);
		char *path = xasprintf("%s/%s", s->blocks_dir, name);
		maxid = PROF_MAX(maxid, ids.v[i]);
		prof_err_init(&berr);
		if (store_block_open(path, &b, &berr) == 0 && b->meta.id == ids.v[i]) {
			VEC_PUSH(&open_ok, store_blk_new(b));
			for (uint32_t k = 0; k < b->meta.nsources; k++)
				VEC_PUSH(&merged, b->sources[k]);
			s->covered = PROF_MAX(s->covered, b->meta.wal_last);
		} else {
			struct store_block_meta m;
			uint64_t *src = NULL;
			struct prof_err merr;

			if (!berr.code) {
				store_block_free(b);
				prof_err_set(&berr, -PROF_ECORRUPT, -1,
					     "%s/meta: id does not match", path);
			}
			log_error("store: block %s cannot be used and is left out of queries: %s",
				  path, berr.msg);
			s->blocks_broken++;
			/* Its WAL range still counts, or replay would duplicate it.
			 * Its sources are kept: they may be all that is readable. */
			prof_err_init(&merr);
			if (store_block_read_meta(path, &m, &src, &merr) == 0)
				s->covered = PROF_MAX(s->covered, m.wal_last);
			free(src);
		}
		free(path);
	}
	if (merged.n > 1)
		qsort(merged.v, merged.n, sizeof(*merged.v), cmp_u64);
	for (size_t i = 0; i < open_ok.n; i++) {
		struct store_blk *b = open_ok.v[i];

		if (has_id(merged.v, merged.n, b->b->meta.id)) {
			log_warn("store: block %s was already merged into another; removing it",
				 b->b->dir);
			b->doomed = true;
			store_blk_put(s, b);
			continue;
		}
		store_view_add_block(s, b);
	}
	s->next_block_id = maxid + 1;
	VEC_FREE(&ids);
	VEC_FREE(&merged);
	VEC_FREE(&open_ok);
	return 0;
}

/*
 * Replay keeps the head bounded too: when the head is full at a segment
 * boundary, the segments replayed so far are written as a block (they
 * are complete, so the block's WAL range is exact) and replay goes on
 * into a fresh head. Open deletes the covered segments at its end. A
 * failure is logged and replay goes on in the same head.
 */
static void replay_flush(struct store *s, uint64_t next_seg)
{
	struct store_block_info info = { .level = 1,
					 .wal_first = s->active->wal_first,
					 .wal_last = s->replay_seg };
	struct prof_err err;
	struct store_block *b;
	char name[17];
	uint64_t id = store_new_block_id(s);
	int rc;

	prof_err_init(&err);
	rc = store_write_head(s, s->active->h, id, &info, &err);
	if (!rc) {
		store_block_dir_name(id, name);
		char *path = xasprintf("%s/%s", s->blocks_dir, name);
		rc = store_block_open(path, &b, &err);
		free(path);
		if (!rc)
			store_view_add_block(s, store_blk_new(b));
	}
	if (rc && rc != -ENODATA) {
		log_error("store: replay could not flush its full head (%s); it goes on in memory",
			  err.msg[0] ? err.msg : prof_strerror(rc));
		return;
	}
	log_info("store: replay flushed wal=%" PRIu64 "..%" PRIu64 " to block %016" PRIx64,
		 info.wal_first, info.wal_last, id);
	s->covered = PROF_MAX(s->covered, info.wal_last);
	s->flushes++;
	store_hold_put(s, s->active);
	s->active = store_hold_new(next_seg);
}

static void replay_flush_bg(struct store *s, uint64_t next_seg);

static int replay_record(void *arg, const struct store_wal_record *rec, struct prof_err *err)
{
	struct store *s = arg;
	struct fmt_otlp_batch batch;
	uint64_t nsamples;
	int rc;

	if (rec->segment != s->replay_seg) {
		if (s->replay_seg && s->replaying && head_full(s, s->frozen))
			replay_flush_bg(s, rec->segment);
		else if (s->replay_seg && !s->replaying && !s->opt.read_only &&
			 head_full(s, s->active))
			replay_flush(s, rec->segment);
		s->replay_seg = rec->segment;
	}
	struct store_hold *into = s->replaying ? s->frozen : s->active;

	if (rec->type == STORE_WAL_PPROF)
		rc = decode_pprof_rec(rec->payload, rec->len, &batch, err);
	else if (rec->type == STORE_WAL_OTLP)
		rc = decode_otlp(rec->payload, rec->len, 0, &batch, &nsamples, err);
	else
		rc = prof_err_set(err, -PROF_EUNSUPPORTED, -1, "unknown record type %u", rec->type);
	if (rc)
		return rc;
	/* both decoders ran store_head_check */
	const struct model_profile **p = xcalloc(batch.n + 1, sizeof(*p));
	for (size_t i = 0; i < batch.n; i++)
		p[i] = &batch.profiles[i];
	store_head_add_batch(into->h, p, batch.n, rec->time_ns);
	if (!into->created_ns) {
		pthread_mutex_lock(&s->view_mu);
		into->created_ns = prof_now_ns();
		pthread_mutex_unlock(&s->view_mu);
	}
	if (s->replaying && !s->oldest_ns)
		__atomic_store_n(&s->oldest_ns, rec->time_ns, __ATOMIC_RELEASE);
	free(p);
	fmt_otlp_batch_release(&batch);
	return 0;
}

/*
 * The background replay's flush of its full head at a segment boundary:
 * the head (frozen, queried) becomes a block covering the segments read
 * so far, and a fresh head takes its place for the rest. Rotation is
 * off while replaying, so the frozen slot stays the replay's throughout.
 */
static void replay_flush_bg(struct store *s, uint64_t next_seg)
{
	struct store_hold *fz = s->frozen, *fresh;
	uint64_t last = fz->wal_last;
	struct prof_err err;

	prof_err_init(&err);
	fz->wal_last = s->replay_seg;
	if (store_flush_replay(s, &err) || s->frozen == fz) {
		log_error("store: replay could not flush its full head (%s); it goes on in memory",
			  err.msg[0] ? err.msg : "not written");
		fz->wal_last = last;
		return;
	}
	fresh = store_hold_new(next_seg);
	fresh->wal_last = last;
	pthread_mutex_lock(&s->view_mu);
	s->frozen = fresh;
	pthread_mutex_unlock(&s->view_mu);
	__atomic_store_n(&s->oldest_ns, 0, __ATOMIC_RELEASE);
}

static void *replay_main(void *arg)
{
	struct store *s = arg;
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = store_wal_replay_pending(s->wal, replay_record, s, &s->replay_stop, &err);
	if (rc)
		log_error("store %s: replay stopped: %s", s->dir,
			  err.msg[0] ? err.msg : prof_strerror(rc));
	pthread_mutex_lock(&s->view_mu);
	s->replay_end_ns = prof_now_ns();
	__atomic_store_n(&s->replaying, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&s->view_cond);
	pthread_mutex_unlock(&s->view_mu);

	struct store_wal_stats ws;
	store_wal_get_stats(s->wal, &ws);
	log_info("store: replayed dir=%s wal_records=%" PRIu64 " skipped=%" PRIu64
		 " dropped_bytes=%" PRIu64 " corrupt_bytes=%" PRIu64 " in %.3fs",
		 s->dir, ws.replayed, ws.skipped, ws.dropped_bytes, ws.corrupt_bytes,
		 (double)(s->replay_end_ns - s->replay_start_ns) / 1e9);
	if (__atomic_load_n(&s->replay_stop, __ATOMIC_ACQUIRE))
		return NULL; /* closing: the segments stay for the next open */
	/* The replayed head becomes a block, which frees the frozen slot for
	 * the active head's next rotation; an empty one just leaves. */
	prof_err_init(&err);
	if (store_flush(s, &err))
		log_error("store %s: writing the replayed head failed (%s); the next flush "
			  "retries",
			  s->dir, err.msg[0] ? err.msg : "error");
	else
		__atomic_store_n(&s->oldest_ns, 0, __ATOMIC_RELEASE);
	return NULL;
}

/* Open the WAL for appends and replay its old segments on a thread. */
static int open_replay_background(struct store *s, const char *path, struct prof_err *err)
{
	uint64_t first, last;
	struct store_wal_stats ws;
	int rc = store_wal_open_deferred(path, s->covered, &s->wal, &first, &last, err);

	if (rc)
		return rc;
	store_wal_get_stats(s->wal, &ws);
	store_hold_put(s, s->active);
	s->active = store_hold_new(ws.segment);
	if (!first)
		return 0;
	s->frozen = store_hold_new(first);
	s->frozen->wal_last = last;
	s->replaying = true; /* the thread starts at the end of store_open_opts */
	return 0;
}

/* After open's own repairs (its checkpoint, its flush): nothing runs beside them. */
static int start_replay(struct store *s, struct prof_err *err)
{
	s->replay_start_ns = prof_now_ns();
	if (pthread_create(&s->replay_thread, NULL, replay_main, s)) {
		s->replaying = false;
		return prof_err_set(err, -EAGAIN, -1, "store %s: cannot start the replay thread",
				    s->dir);
	}
	s->replay_started = true;
	return 0;
}

int store_open_opts(const char *dir, const struct store_options *o, struct store **out,
		    struct prof_err *err)
{
	struct store *s;
	char *path;
	int rc;

	*out = NULL;
	if (!(o && o->read_only) && mkdir(dir, 0755) && errno != EEXIST)
		return prof_err_set(err, -errno, -1, "store: cannot create %s: %s", dir,
				    strerror(errno));
	if (o && o->read_only && access(dir, F_OK))
		return prof_err_set(err, -errno, -1, "store: %s: %s", dir, strerror(errno));
	s = xcalloc(1, sizeof(*s));
	if (o)
		s->opt = *o;
	else
		store_options_default(&s->opt);
	if (s->opt.ts_resolution_ns <= 0)
		s->opt.ts_resolution_ns = 1;
	if (s->opt.compact_window_ns <= 0)
		s->opt.compact_window_ns = 24 * 3600LL * 1000000000;
	if (s->opt.maint_interval_ns <= 0)
		s->opt.maint_interval_ns = 10LL * 1000000000;
	if (s->opt.read_only)
		s->opt.background = false;
	s->dir = xstrdup(dir);
	s->blocks_dir = xasprintf("%s/blocks", dir);
	store_init_locks(s);
	if (!s->opt.read_only) {
		path = xasprintf("%s/LOCK", dir);
		s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (s->lock_fd < 0) {
			rc = prof_err_set(err, -errno, -1, "store: cannot open %s: %s", path,
					  strerror(errno));
			free(path);
			goto fail;
		}
		if (flock(s->lock_fd, LOCK_EX | LOCK_NB)) {
			rc = prof_err_set(err, errno == EWOULDBLOCK ? -EBUSY : -errno, -1,
					  "store: %s is in use by another profd process", dir);
			free(path);
			goto fail;
		}
		free(path);
	}

	rc = load_blocks(s, err);
	if (rc)
		goto fail;
	s->active = store_hold_new(s->covered + 1);
	path = xasprintf("%s/wal", dir);
	if (s->opt.replay_background && !s->opt.read_only)
		rc = open_replay_background(s, path, err);
	else
		rc = store_wal_open_at(path, s->covered, replay_record, s, s->opt.read_only,
				       &s->wal, err);
	free(path);
	if (rc)
		goto fail;

	struct store_wal_stats ws;
	struct store_head_stats hs;
	store_wal_get_stats(s->wal, &ws);
	store_head_get_stats(s->active->h, &hs);
	if (hs.rows)
		s->active->created_ns = prof_now_ns();
	/* Blocks may cover more than the checkpoint says (a crash between a
	 * block's rename and the checkpoint): record it now. */
	if (!s->opt.read_only && s->covered > 0 && s->covered < ws.segment) {
		struct prof_err cerr;

		prof_err_init(&cerr);
		if (store_wal_checkpoint(s->wal, s->covered, &cerr))
			log_error("store: %s", cerr.msg);
	}
	if (s->replaying)
		log_info("store: opened dir=%s blocks=%zu; replaying the WAL in the background "
			 "(%" PRIu64 " segments, %" PRIu64 " bytes)",
			 dir, s->blocks.n, ws.segments - 1, ws.bytes);
	else
		log_info("store: opened dir=%s blocks=%zu wal_records=%" PRIu64 " skipped=%" PRIu64
			 " dropped_bytes=%" PRIu64 " corrupt_bytes=%" PRIu64 " series=%" PRIu64
			 " rows=%" PRIu64 " stacks=%" PRIu64 " locations=%" PRIu64,
			 dir, s->blocks.n, ws.replayed, ws.skipped, ws.dropped_bytes,
			 ws.corrupt_bytes, hs.series, hs.rows, hs.stack_nodes, hs.locations);
	if (!s->opt.read_only && head_full(s, s->active)) {
		rc = store_flush(s, err);
		if (rc)
			goto fail;
	}
	if (s->replaying) {
		rc = start_replay(s, err);
		if (rc)
			goto fail;
	}
	if (s->opt.background) {
		rc = store_maint_start(s, err);
		if (rc)
			goto fail;
	}
	*out = s;
	return 0;
fail:
	store_close(s);
	return rc;
}

int store_open_mem(struct store **out)
{
	struct store *s = xcalloc(1, sizeof(*s));

	store_options_default(&s->opt);
	s->opt.background = false;
	s->opt.head_max_bytes = 0;
	s->opt.block_duration_ns = 0;
	s->mem = true;
	s->dir = xstrdup("(memory)");
	store_init_locks(s);
	s->active = store_hold_new(1);
	*out = s;
	return 0;
}

int store_open_head(struct store_head *h, struct store **out)
{
	struct store *s;

	store_open_mem(&s);
	store_head_free(s->active->h);
	s->active->h = h;
	s->active->borrowed = true;
	*out = s;
	return 0;
}

int store_open_backend(const struct store_backend *be, void *ctx, const char *desc,
		       struct store **out)
{
	struct store *s;

	store_open_mem(&s);
	free(s->dir);
	s->dir = xstrdup(desc);
	s->be = be;
	s->be_ctx = ctx;
	*out = s;
	return 0;
}

int store_open(const char *dir, struct store **out, struct prof_err *err)
{
	return store_open_opts(dir, NULL, out, err);
}

void store_close(struct store *s)
{
	if (!s)
		return;
	if (s->replay_started) {
		__atomic_store_n(&s->replay_stop, true, __ATOMIC_RELEASE);
		pthread_join(s->replay_thread, NULL);
	}
	store_maint_stop(s);
	if (s->be)
		s->be->close(s->be_ctx);
	store_wal_close(s->wal);
	store_hold_put(s, s->frozen);
	store_hold_put(s, s->active);
	for (size_t i = 0; i < s->blocks.n; i++)
		store_blk_put(s, s->blocks.v[i]);
	VEC_FREE(&s->blocks);
	free(s->head_acc);
	if (s->lock_fd >= 0)
		close(s->lock_fd); /* releases the flock */
	pthread_cond_destroy(&s->view_cond);
	pthread_mutex_destroy(&s->view_mu);
	pthread_rwlock_destroy(&s->ingest_rw);
	pthread_mutex_destroy(&s->maint_mu);
	free(s->blocks_dir);
	free(s->dir);
	free(s);
}

/* --- ingest ------------------------------------------------------------------------ */

/*
 * Before an ingest: keep the active head within its memory bound. Without
 * a background thread the ingest flushes itself; with one it freezes the
 * full head for the thread to write, or, when the previous frozen head is
 * still being written, waits for that (backpressure).
 */
static int make_room(struct store *s, struct prof_err *err)
{
	for (;;) {
		pthread_mutex_lock(&s->view_mu);
		struct store_hold *act = s->active;
		act->refs++;
		pthread_mutex_unlock(&s->view_mu);
		bool full = head_full(s, act);
		store_hold_put(s, act);
		if (!full)
			return 0;
		if (!s->opt.background) {
			int rc = store_flush(s, err);

			if (rc)
				return rc;
			continue;
		}
		int rc = store_rotate(s, err);
		if (rc)
			return rc;
		pthread_mutex_lock(&s->view_mu);
		pthread_cond_broadcast(&s->view_cond); /* wake the maintenance thread */
		while ((s->frozen || s->replaying) && s->active == act && !s->flush_err &&
		       !s->stopping)
			pthread_cond_wait(&s->view_cond, &s->view_mu);
		rc = s->active == act ? s->flush_err : 0;
		pthread_mutex_unlock(&s->view_mu);
		if (rc)
			return prof_err_set(err, rc, -1,
					    "store %s: the head is full and writing the previous "
					    "one to a block failed: %s",
					    s->dir, prof_strerror(rc));
	}
}

/*
 * WAL append + head add, with the rotation excluded; @payload is what the
 * log keeps. Each of @p[@n] has passed store_head_check.
 */
static int commit(struct store *s, const struct model_profile *const *p, size_t n, uint8_t type,
		  const void *payload, size_t len, int64_t now, struct prof_err *err)
{
	int rc;

	if (s->opt.read_only)
		return prof_err_set(err, -EROFS, -1, "store %s: opened read-only", s->dir);
	if (s->be)
		return s->be->ingest(s->be_ctx, p, n, now, err);
	rc = make_room(s, err);
	if (rc)
		return rc;
	pthread_rwlock_rdlock(&s->ingest_rw);
	rc = s->mem ? 0 : store_wal_append(s->wal, type, now, payload, len, err);
	if (!rc)
		store_head_add_batch(s->active->h, p, n, now);
	if (!rc && !s->active->created_ns) {
		pthread_mutex_lock(&s->view_mu);
		if (!s->active->created_ns)
			s->active->created_ns = now;
		pthread_mutex_unlock(&s->view_mu);
	}
	pthread_rwlock_unlock(&s->ingest_rw);
	if (!rc && !s->mem && s->opt.wal_segment_bytes) {
		/* Small segments let a replay flush between them (bounded memory). */
		struct prof_err rerr;

		prof_err_init(&rerr);
		if (store_wal_rotate_if_over(s->wal, s->opt.wal_segment_bytes, &rerr))
			log_error("store %s: %s", s->dir, rerr.msg);
	}
	return rc;
}

int store_ingest_otlp(struct store *s, const void *data, size_t n, size_t max_samples,
		      struct store_ingest_result *res, struct prof_err *err)
{
	struct fmt_otlp_batch batch;
	const struct model_profile **p;
	uint64_t nsamples;
	int64_t now = prof_now_ns();
	int rc;

	if (res)
		memset(res, 0, sizeof(*res));
	rc = decode_otlp(data, n, max_samples, &batch, &nsamples, err);
	if (rc)
		return rc;
	if (batch.n == 0 || nsamples == 0) {
		fmt_otlp_batch_release(&batch);
		return 0; /* OTLP: an empty request is a success */
	}
	/* The log keeps the request bytes as received: lossless, and replay
	 * benefits from every later improvement of the decoder. */
	p = xcalloc(batch.n + 1, sizeof(*p));
	for (size_t i = 0; i < batch.n; i++)
		p[i] = &batch.profiles[i];
	rc = commit(s, p, batch.n, STORE_WAL_OTLP, data, n, now, err);
	free(p);
	if (!rc && res) {
		res->profiles = batch.n;
		res->samples = nsamples;
	}
	fmt_otlp_batch_release(&batch);
	return rc;
}

/*
 * store_ingest_profiles and store_ingest_pprof: @src NULL or one entry
 * per profile (a STORE_WAL_PPROF record), else @otlp NULL or the request.
 */
static int ingest(struct store *s, const struct model_profile *const *p,
		  const struct store_pprof_src *src, size_t n, const void *otlp, size_t otlp_len,
		  struct store_ingest_result *res, struct prof_err *err)
{
	const struct model_profile **live = xcalloc(n + 1, sizeof(*live));
	int64_t now = prof_now_ns();
	uint64_t nsamples = 0;
	size_t nlive = 0;
	uint8_t type = STORE_WAL_OTLP;
	struct buf enc;
	int rc = 0;

	if (res)
		memset(res, 0, sizeof(*res));
	buf_init(&enc, STORE_WAL_MAX_RECORD);
	for (size_t i = 0; i < n && !rc; i++) {
		rc = check_profile(p[i], i ? p[i - 1] : NULL, err);
		if (!rc && p[i]->samples.n && p[i]->sample_types.n) {
			live[nlive++] = p[i];
			nsamples += p[i]->samples.n;
			if (src && !s->mem && !s->be)
				rc = store_wal_pprof_encode(p[i], &src[i], &enc);
		}
	}
	if (rc == -PROF_ETOOBIG && src)
		prof_err_set(err, rc, -1, "store: the profiles do not fit one log record");
	if (rc || nsamples == 0)
		goto out;
	if (src) {
		type = STORE_WAL_PPROF;
		otlp = enc.p;
		otlp_len = enc.len;
	} else if (!otlp) {
		/* the log needs every location: translate pending stacks */
		for (size_t i = 0; i < nlive; i++)
			if (live[i]->pending)
				live[i]->pending->resolve(live[i]->pending);
		rc = fmt_otlp_encode(live, nlive, &enc);
		if (rc) {
			prof_err_set(err, rc, -1,
				     "store: cannot encode the profiles for the log: %s",
				     prof_strerror(rc));
			goto out;
		}
		otlp = enc.p;
		otlp_len = enc.len;
	}
	rc = commit(s, live, nlive, type, otlp, otlp_len, now, err);
	if (!rc && res) {
		res->profiles = nlive;
		res->samples = nsamples;
	}
out:
	buf_release(&enc);
	free(live);
	return rc;
}

int store_ingest_profiles(struct store *s, const struct model_profile *const *p, size_t n,
			  const void *otlp, size_t otlp_len, struct store_ingest_result *res,
			  struct prof_err *err)
{
	return ingest(s, p, NULL, n, otlp, otlp_len, res, err);
}

int store_ingest_pprof(struct store *s, const struct model_profile *const *p,
		       const struct store_pprof_src *src, size_t n, struct store_ingest_result *res,
		       struct prof_err *err)
{
	return ingest(s, p, src, n, NULL, 0, res, err);
}

bool store_wait_replayed(struct store *s, int64_t timeout_ns)
{
	struct timespec ts;
	bool done;

	if (!__atomic_load_n(&s->replaying, __ATOMIC_ACQUIRE))
		return true;
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += timeout_ns / 1000000000;
	ts.tv_nsec += timeout_ns % 1000000000;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->view_mu);
	while (s->replaying && !s->stopping)
		if (pthread_cond_timedwait(&s->view_cond, &s->view_mu, &ts))
			break;
	done = !s->replaying;
	pthread_mutex_unlock(&s->view_mu);
	return done;
}

struct store_head *store_get_head(struct store *s)
{
	return s->active->h;
}

struct store_wal *store_get_wal(struct store *s)
{
	return s->wal;
}

void store_get_stats(struct store *s, struct store_stats *st)
{
	struct store_hold *h[2];

	memset(st, 0, sizeof(*st));
	st->min_ts_ns = INT64_MAX;
	st->max_ts_ns = INT64_MIN;
	st->head.min_ts_ns = INT64_MAX;
	st->head.max_ts_ns = INT64_MIN;
	pthread_mutex_lock(&s->view_mu);
	h[0] = s->active;
	h[1] = s->frozen;
	for (int i = 0; i < 2; i++)
		if (h[i])
			h[i]->refs++;
	for (size_t i = 0; i < s->blocks.n; i++) {
		const struct store_block *b = s->blocks.v[i]->b;

		st->blocks++;
		st->block_rows += b->meta.nrows;
		st->block_series += b->meta.nseries;
		st->block_stacks += b->meta.nstacks;
		st->block_locations += b->meta.nlocations;
		st->block_bytes += b->bytes_on_disk;
		st->min_ts_ns = PROF_MIN(st->min_ts_ns, b->meta.min_ts_ns);
		st->max_ts_ns = PROF_MAX(st->max_ts_ns, b->meta.max_ts_ns);
	}
	st->blocks_broken = s->blocks_broken;
	st->flushes = s->flushes;
	st->flush_failures = s->flush_failures;
	st->compactions = s->compactions;
	st->blocks_deleted = s->blocks_deleted;
	if (s->be && s->be->stats)
		s->be->stats(s->be_ctx, st);
	st->syms_cached_bytes = s->syms_bytes;
	st->replaying = s->replaying;
	if (s->replay_start_ns)
		st->replay_ns =
			(s->replay_end_ns ? s->replay_end_ns : prof_now_ns()) - s->replay_start_ns;
	/* the oldest row not in a block: the replay's head's, else the heads' first ingest */
	st->wal_oldest_ns = __atomic_load_n(&s->oldest_ns, __ATOMIC_ACQUIRE);
	for (int i = 1; i >= 0 && !st->wal_oldest_ns; i--)
		if (h[i] && h[i]->created_ns)
			st->wal_oldest_ns = h[i]->created_ns;
	pthread_mutex_unlock(&s->view_mu);
	for (int i = 0; i < 2; i++) {
		struct store_head_stats hs;

		if (!h[i])
			continue;
		store_head_get_stats(h[i]->h, &hs);
		st->head.series += hs.series;
		st->head.rows += hs.rows;
		st->head.stack_nodes += hs.stack_nodes;
		st->head.locations += hs.locations;
		st->head.functions += hs.functions;
		st->head.mappings += hs.mappings;
		st->head.strings += hs.strings;
		st->head.profiles += hs.profiles;
		st->head.bytes += hs.bytes;
		st->head.min_ts_ns = PROF_MIN(st->head.min_ts_ns, hs.min_ts_ns);
		st->head.max_ts_ns = PROF_MAX(st->head.max_ts_ns, hs.max_ts_ns);
		store_hold_put(s, h[i]);
	}
	st->min_ts_ns = PROF_MIN(st->min_ts_ns, st->head.min_ts_ns);
	st->max_ts_ns = PROF_MAX(st->max_ts_ns, st->head.max_ts_ns);
	if (s->wal) {
		store_wal_get_stats(s->wal, &st->wal);
		store_wal_pending_progress(s->wal, &st->replay_done_bytes, &st->replay_total_bytes);
	}
}

/* `profd store stats`: sizes from the chunk tables the open blocks hold. */
int store_blocks_sizes(struct store *s, struct store_block_sizes **out, size_t *n)
{
	struct store_block_sizes *v = NULL;

	*out = NULL;
	*n = 0;
	pthread_mutex_lock(&s->view_mu);
	if (s->blocks.n) {
		v = calloc(s->blocks.n, sizeof(*v));
		if (!v) {
			pthread_mutex_unlock(&s->view_mu);
			return -ENOMEM;
		}
	}
	for (size_t i = 0; i < s->blocks.n; i++) {
		const struct store_block *b = s->blocks.v[i]->b;
		struct store_block_sizes *o = &v[i];

		o->id = b->meta.id;
		o->level = b->meta.level;
		o->min_ts_ns = b->meta.min_ts_ns;
		o->max_ts_ns = b->meta.max_ts_ns;
		o->rows = b->meta.nrows;
		o->series = b->meta.nseries;
		o->bytes = b->bytes_on_disk;
		for (uint32_t k = 0; k < b->samples.nents; k++) {
			const struct store_chunkfile_entry *e = &b->samples.ents[k];
			bool rhrs = !strcmp(e->id, "RHRS");

			if (!rhrs && (strcmp(e->id, "RSER") || !strcmp(o->rollup, "RHRS")))
				continue;
			memcpy(o->rollup, e->id, sizeof(o->rollup));
			o->rollup_bytes = e->stored_len;
			o->rollup_raw_bytes = e->raw_len;
		}
	}
	*n = s->blocks.n;
	pthread_mutex_unlock(&s->view_mu);
	*out = v;
	return 0;
}
