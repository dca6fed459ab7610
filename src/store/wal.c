// SPDX-License-Identifier: Apache-2.0
/*
 * wal.c - write-ahead log with checksummed records, torn-tail repair and
 * group commit; the format and its rationale are in wal.h and
 * docs/storage-format.md.
 *
 * Group commit: an appender queues its record and, when no leader is at
 * work, becomes the leader: it takes the whole queue, writes it with one
 * pwritev at the log's end and runs one fdatasync for all of it, then
 * marks each record done. Records queued meanwhile wait for the next
 * leader. So a group costs one write and one sync instead of one write per
 * record, and the mutex is never held across a system call.
 *
 * Each waiter is woken once: a waiter whose record is in the running
 * batch sleeps on that batch's condition variable, one queued after it
 * sleeps on the next generation's, and the finishing leader wakes all of
 * its own generation but only one of the next (which then leads). With one
 * condition variable every finished sync woke every waiter, and those it
 * did not cover went back to sleep.
 */
#include "base/compat.h"
#include "base/fs.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "store/wal.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "store/chunkfile.h"

_Static_assert(sizeof(STORE_WAL_MAGIC) - 1 == 8, "WAL magic is 8 bytes");
_Static_assert(STORE_WAL_FILE_HDR == 8 + 4 + 4, "WAL file header layout");
_Static_assert(STORE_WAL_REC_HDR == 4 + 4 + 1 + 1 + 2 + 8, "WAL record header layout");

/*
 * A record waiting in the queue: on its appender's stack, which sleeps
 * until a leader has written and synced it (done) or failed (rc).
 */
struct wal_rec {
	struct iovec iov[2]; /* header, payload */
	struct wal_rec *next;
	int rc;
	bool in_write; /* rc is the write's error, not the sync's */
	bool taken;    /* in the running leader's batch */
	bool done;
};

struct store_wal {
	pthread_mutex_t mu;
	pthread_cond_t done[2]; /* done[g & 1]: waiters for the end of sync g */
	unsigned nwait[2];	/* threads waiting on done[0], done[1] */
	uint64_t gen;		/* syncs finished; the one running is number gen */
	struct wal_rec *queue;	/* records waiting for the next leader, oldest first */
	struct wal_rec **queue_tail;
	int fd;
	char *dir;
	char *path;	    /* current segment */
	uint64_t seq;	    /* current segment number */
	uint64_t seg_start; /* position of the current segment's byte 0 */
	uint64_t end;	    /* position after the last byte written */
	uint64_t synced;    /* position up to which everything is durable */
	bool syncing;	    /* a leader is writing its batch and syncing */
	bool ro;	    /* read-only: replay only */
	bool no_segment;    /* opened on a full disk: the append segment is made on demand */
	int failed;	    /* sticky error after a failed sync */
	const bool *stop;   /* replay: stop between records once *stop (atomic) */
	struct store_wal_stats st;
	/* under mu: segments left to replay (store_wal_open_deferred) */
	uint64_t pending_first, pending_last, pending_bytes, pending_done_bytes;
};

static void put_le32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static void put_le64(unsigned char *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_le64(const unsigned char *p)
{
	return (uint64_t)get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

/* The CRC-32 of the log's formats: zlib's crc32 (store_chunkfile_crc32). */
static uint32_t crc32_of(uint32_t crc, const void *p, size_t n)
{
	return store_chunkfile_crc32(crc, p, n);
}

/*
 * Write @iov[0..@iovcnt) at @off, all of it (short writes and EINTR are
 * retried); @iov is consumed (its entries are advanced). At most
 * WAL_IOV_MAX entries go to one pwritev.
 */
#define WAL_IOV_MAX 64

static int write_full_at(int fd, struct iovec *iov, int iovcnt, uint64_t off)
{
	struct iovec *cur = iov;
	int cnt = iovcnt;

	while (cnt > 0) {
		ssize_t w = pwritev(fd, cur, PROF_MIN(cnt, WAL_IOV_MAX), (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		off += (uint64_t)w;
		while (cnt > 0 && (size_t)w >= cur->iov_len) {
			w -= (ssize_t)cur->iov_len;
			cur++;
			cnt--;
		}
		if (cnt > 0) {
			cur->iov_base = (char *)cur->iov_base + w;
			cur->iov_len -= (size_t)w;
		}
	}
	return 0;
}

static char *seg_path(const char *dir, uint64_t seq)
{
	return xasprintf("%s/%08" PRIu64 ".wal", dir, seq);
}

static int write_file_header(int fd, const char *path, const char *dir, struct prof_err *err)
{
	unsigned char hdr[STORE_WAL_FILE_HDR];
	struct iovec iov = { hdr, sizeof(hdr) };
	int rc;

	memcpy(hdr, STORE_WAL_MAGIC, 8);
	put_le32(hdr + 8, STORE_WAL_VERSION);
	put_le32(hdr + 12, crc32_of(0, hdr, 12));
	if (ftruncate(fd, 0))
		return prof_err_set(err, -errno, -1, "wal %s: truncate: %s", path, strerror(errno));
	rc = write_full_at(fd, &iov, 1, 0);
	if (!rc && fdatasync(fd))
		rc = -errno;
	if (!rc)
		rc = fs_fsync_dir(dir);
	if (rc)
		return prof_err_set(err, rc, -1, "wal %s: writing the header: %s", path,
				    strerror(-rc));
	return 0;
}

/* The header of @path is valid; *@version (may be NULL) gets its version. */
static int check_file_header(int fd, const char *path, uint32_t *version, struct prof_err *err)
{
	unsigned char hdr[STORE_WAL_FILE_HDR];
	int rc = fs_pread_full(fd, hdr, sizeof(hdr), 0);
	uint32_t v;

	if (rc)
		return prof_err_set(err, rc, 0, "wal %s: reading the header: %s", path,
				    strerror(-rc));
	if (memcmp(hdr, STORE_WAL_MAGIC, 8))
		return prof_err_set(err, -PROF_EFORMAT, 0,
				    "wal %s: not a profd write-ahead log (bad magic)", path);
	if (get_le32(hdr + 12) != crc32_of(0, hdr, 12))
		return prof_err_set(err, -PROF_ECORRUPT, 12,
				    "wal %s: file header checksum mismatch", path);
	v = get_le32(hdr + 8);
	if (v < STORE_WAL_VERSION_MIN || v > STORE_WAL_VERSION)
		return prof_err_set(err, -PROF_EFORMAT, 8,
				    "wal %s: format version %" PRIu32 " is not supported (this "
				    "build reads versions %u to %u)",
				    path, v, STORE_WAL_VERSION_MIN, STORE_WAL_VERSION);
	if (version)
		*version = v;
	return 0;
}

/*
 * Keep a copy of bytes [off, end) of @path before they are skipped or
 * truncated (@what "corrupt"), or of an intact record replay could not
 * use, before a checkpoint deletes the segment (@what "skipped").
 */
static void save_span(int fd, const char *path, uint64_t off, uint64_t end, const char *what)
{
	char *out = xasprintf("%s.%s-%" PRIu64, path, what, off);
	int rc;

	if (end - off > (uint64_t)STORE_WAL_MAX_RECORD * 2) {
		log_error("wal: %s span of %" PRIu64 " bytes is too large to copy; not saved", what,
			  end - off);
		free(out);
		return;
	}
	char *data = xmalloc((size_t)(end - off) + 1);
	rc = fs_pread_full(fd, data, (size_t)(end - off), off);
	if (!rc)
		rc = buf_write_file(out, data, (size_t)(end - off));
	if (rc)
		log_error("wal: could not save the %s bytes to %s: %s", what, out, strerror(-rc));
	else
		log_warn("wal: %s bytes saved path=%s bytes=%" PRIu64, what, out, end - off);
	free(data);
	free(out);
}

static bool all_zero(int fd, uint64_t off, uint64_t end)
{
	char z[4096];

	for (uint64_t p = off; p < end; p += sizeof(z)) {
		size_t k = (size_t)PROF_MIN((uint64_t)sizeof(z), end - p);

		if (fs_pread_full(fd, z, k, p))
			return false;
		for (size_t i = 0; i < k; i++)
			if (z[i])
				return false;
	}
	return true;
}

/*
 * Is there a complete, valid record at @off of a file of @size bytes?
 * Reads the header, checks the plausible fields, then the CRC over the
 * payload (read into *@payload, grown as needed).
 */
static int record_at(int fd, uint64_t off, uint64_t size, unsigned char *hdr, char **payload,
		     size_t *cap, bool *valid)
{
	int rc;

	*valid = false;
	if (size - off < STORE_WAL_REC_HDR)
		return 0;
	rc = fs_pread_full(fd, hdr, STORE_WAL_REC_HDR, off);
	if (rc)
		return rc;
	uint32_t len = get_le32(hdr);
	if (len == 0 || len > STORE_WAL_MAX_RECORD ||
	    STORE_WAL_REC_HDR + (uint64_t)len > size - off)
		return 0;
	if (hdr[9] || hdr[10] || hdr[11])
		return 0;
	if (len + (size_t)1 > *cap) {
		*cap = len + (size_t)1;
		free(*payload);
		*payload = xmalloc(*cap);
	}
	rc = fs_pread_full(fd, *payload, len, off + STORE_WAL_REC_HDR);
	if (rc)
		return rc;
	*valid = crc32_of(crc32_of(0, hdr + 8, STORE_WAL_REC_HDR - 8), *payload, len) ==
		 get_le32(hdr + 4);
	return 0;
}

/*
 * The next offset after @from where a valid record starts, or @size.
 * Candidates are filtered on the header fields from a buffered window
 * before any CRC is computed, so the search reads the tail about once.
 */
static int resync(int fd, uint64_t from, uint64_t size, uint64_t *next)
{
	unsigned char win[65536 + STORE_WAL_REC_HDR], hdr[STORE_WAL_REC_HDR];
	char *payload = NULL;
	size_t cap = 0;
	int rc = 0;

	*next = size;
	for (uint64_t base = from; base + STORE_WAL_REC_HDR <= size && !rc;) {
		size_t k = (size_t)PROF_MIN((uint64_t)sizeof(win), size - base);

		rc = fs_pread_full(fd, win, k, base);
		if (rc)
			break;
		for (size_t i = 0; i + STORE_WAL_REC_HDR <= k; i++) {
			const unsigned char *h = win + i;
			uint32_t len = get_le32(h);
			bool valid;

			if (len == 0 || len > STORE_WAL_MAX_RECORD || h[9] || h[10] || h[11] ||
			    h[8] == 0 || base + i + STORE_WAL_REC_HDR + len > size)
				continue;
			rc = record_at(fd, base + i, size, hdr, &payload, &cap, &valid);
			if (rc)
				break;
			if (valid) {
				*next = base + i;
				free(payload);
				return 0;
			}
		}
		base += k - STORE_WAL_REC_HDR + 1;
	}
	free(payload);
	return rc;
}

/* Replay outcome of one segment. */
struct seg_result {
	uint64_t end;  /* valid bytes (where appends would continue) */
	bool has_hole; /* a damaged span was skipped inside the segment */
};

/*
 * Replay the records of segment @seq (open as @fd, @size bytes, header
 * checked). A damaged span is saved and skipped when a valid record
 * follows it; a bad tail is saved (unless torn or zero) and truncated.
 */
static int replay_segment(struct store_wal *w, int fd, const char *path, uint64_t seq,
			  uint64_t size, store_wal_replay_fn fn, void *arg, struct seg_result *res,
			  struct prof_err *err)
{
	uint64_t off = STORE_WAL_FILE_HDR;
	unsigned char hdr[STORE_WAL_REC_HDR];
	char *payload = NULL;
	size_t payload_cap = 0;
	int rc = 0;

	memset(res, 0, sizeof(*res));
	while (off < size) {
		if (w->stop && __atomic_load_n(w->stop, __ATOMIC_ACQUIRE))
			break;
		uint64_t left = size - off;
		const char *why = NULL;
		bool complete_but_bad = false, valid;

		if (left < STORE_WAL_REC_HDR) {
			why = "incomplete record header";
		} else {
			rc = record_at(fd, off, size, hdr, &payload, &payload_cap, &valid);
			if (rc)
				goto io_error;
			uint32_t len = get_le32(hdr);
			if (valid) {
				struct store_wal_record rec = {
					.type = hdr[8],
					.time_ns = (int64_t)get_le64(hdr + 12),
					.payload = payload,
					.len = len,
					.offset = off,
					.segment = seq,
				};
				if (fn) {
					struct prof_err rerr;

					prof_err_init(&rerr);
					int frc = fn(arg, &rec, &rerr);
					if (frc) {
						log_error(
							"wal: skipping record path=%s offset=%" PRIu64
							" type=%u: %s",
							path, off, rec.type,
							rerr.msg[0] ? rerr.msg
								    : prof_strerror(frc));
						w->st.skipped++;
					} else {
						w->st.replayed++;
					}
				} else {
					w->st.replayed++;
				}
				off += STORE_WAL_REC_HDR + (uint64_t)len;
				continue;
			}
			if (len == 0) {
				why = "zero record length";
			} else if (len > STORE_WAL_MAX_RECORD) {
				why = "record length above the maximum";
				complete_but_bad = true;
			} else if (STORE_WAL_REC_HDR + (uint64_t)len > left) {
				why = "incomplete record (torn write)";
			} else if (hdr[9] || hdr[10] || hdr[11]) {
				why = "unknown record flags or reserved bytes set";
				complete_but_bad = true;
			} else {
				why = "record checksum mismatch";
				complete_but_bad = true;
			}
		}
		/* Damage in the middle: is there a valid record further on? */
		uint64_t next = size;
		if (left >= STORE_WAL_REC_HDR) {
			rc = resync(fd, off + 1, size, &next);
			if (rc)
				goto io_error;
		}
		if (next < size) {
			log_error("wal: %s at offset %" PRIu64 " of %s; skipping %" PRIu64
				  " damaged bytes up to the next valid record at %" PRIu64,
				  why, off, path, next - off, next);
			if (!w->ro)
				save_span(fd, path, off, next, "corrupt");
			w->st.corrupt_bytes += next - off;
			res->has_hole = true;
			off = next;
			continue;
		}
		/* A bad tail: nothing valid follows. */
		if (w->ro) {
			log_warn("wal: %s at offset %" PRIu64 " of %s: %" PRIu64
				 " bytes a writable open would drop",
				 why, off, path, size - off);
			w->st.dropped_bytes += size - off;
			break;
		}
		if (complete_but_bad && !all_zero(fd, off, size)) {
			log_error("wal: %s at offset %" PRIu64 " of %s; dropping %" PRIu64
				  " bytes from there",
				  why, off, path, size - off);
			save_span(fd, path, off, size, "corrupt");
		} else {
			log_warn("wal: torn tail dropped path=%s offset=%" PRIu64 " bytes=%" PRIu64
				 " reason=\"%s\"",
				 path, off, size - off, why);
		}
		if (ftruncate(fd, (off_t)off)) {
			rc = -errno;
			free(payload);
			return prof_err_set(err, rc, (int64_t)off,
					    "wal %s: truncating at %" PRIu64 ": %s", path, off,
					    strerror(errno));
		}
		if (fdatasync(fd)) {
			rc = -errno;
			free(payload);
			return prof_err_set(err, rc, -1, "wal %s: sync after truncation: %s", path,
					    strerror(errno));
		}
		w->st.dropped_bytes += size - off;
		break;
	}
	free(payload);
	res->end = off;
	return 0;

io_error:
	free(payload);
	return prof_err_set(err, rc, (int64_t)off, "wal %s: read at %" PRIu64 ": %s", path, off,
			    strerror(-rc));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Segment numbers present in @dir, sorted. */
static int list_segments(const char *dir, uint64_t **out, size_t *n, struct prof_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	VEC(uint64_t) v = { 0 };

	*out = NULL;
	*n = 0;
	if (!d)
		return prof_err_set(err, -errno, -1, "wal: cannot list %s: %s", dir,
				    strerror(errno));
	while ((de = readdir(d))) {
		const char *s = de->d_name;
		uint64_t seq = 0;
		bool ok = strlen(s) == 12 && !strcmp(s + 8, ".wal");

		for (int i = 0; i < 8 && ok; i++) {
			ok = s[i] >= '0' && s[i] <= '9';
			seq = seq * 10 + (uint64_t)(s[i] - '0');
		}
		if (ok && seq > 0)
			VEC_PUSH(&v, seq);
	}
	closedir(d);
	if (v.n > 1)
		qsort(v.v, v.n, sizeof(*v.v), cmp_u64);
	*out = v.v;
	*n = v.n;
	return 0;
}

/* --- checkpoint ------------------------------------------------------------------ */

_Static_assert(STORE_WAL_CKPT_SIZE == 8 + 4 + 4 + 8 + 4 + 4, "checkpoint layout");

static uint64_t read_checkpoint(const char *dir)
{
	char *path = xasprintf("%s/checkpoint", dir);
	struct buf b;
	uint64_t covered = 0;
	int rc;

	buf_init(&b, 4096);
	rc = buf_read_file(&b, path);
	if (rc == -ENOENT) {
		/* none yet */
	} else if (rc) {
		log_error("wal: cannot read %s: %s; relying on the blocks' WAL ranges", path,
			  prof_strerror(rc));
	} else {
		const unsigned char *p = (const unsigned char *)b.p;

		if (b.len != STORE_WAL_CKPT_SIZE || memcmp(p, STORE_WAL_CKPT_MAGIC, 8) ||
		    get_le32(p + 8) != 1 || get_le32(p + 28) != crc32_of(0, p, 28))
			log_error("wal: %s is damaged (size, magic, version or checksum); relying "
				  "on the blocks' WAL ranges",
				  path);
		else
			covered = get_le64(p + 16);
	}
	buf_release(&b);
	free(path);
	return covered;
}

int store_wal_checkpoint(struct store_wal *w, uint64_t covered, struct prof_err *err)
{
	unsigned char c[STORE_WAL_CKPT_SIZE];
	char *path = xasprintf("%s/checkpoint", w->dir);
	int rc;

	PROF_ASSERT(covered < w->seq);
	memset(c, 0, sizeof(c));
	memcpy(c, STORE_WAL_CKPT_MAGIC, 8);
	put_le32(c + 8, 1);
	put_le64(c + 16, covered);
	put_le32(c + 28, crc32_of(0, c, 28));
	rc = buf_write_file(path, c, sizeof(c));
	if (!rc)
		rc = fs_fsync_dir(w->dir);
	free(path);
	if (rc)
		return prof_err_set(err, rc, -1, "wal %s: writing the checkpoint: %s", w->dir,
				    strerror(-rc));
	pthread_mutex_lock(&w->mu);
	w->st.covered = PROF_MAX(w->st.covered, covered);
	pthread_mutex_unlock(&w->mu);
	/* Delete covered segments, oldest first; a failure only leaves a file
	 * that replay skips. */
	uint64_t *segs = NULL;
	size_t nsegs = 0;
	struct prof_err lerr;

	prof_err_init(&lerr);
	if (list_segments(w->dir, &segs, &nsegs, &lerr))
		log_error("wal: %s", lerr.msg);
	for (size_t i = 0; i < nsegs && segs[i] <= covered; i++) {
		char *p = seg_path(w->dir, segs[i]);
		struct stat st;
		uint64_t sz = stat(p, &st) ? 0 : (uint64_t)st.st_size;

		if (unlink(p)) {
			log_error("wal: cannot delete %s: %s", p, strerror(errno));
		} else {
			pthread_mutex_lock(&w->mu);
			w->st.segments -= w->st.segments ? 1 : 0;
			w->st.bytes -= PROF_MIN(w->st.bytes, sz);
			pthread_mutex_unlock(&w->mu);
		}
		free(p);
	}
	free(segs);
	fs_fsync_dir(w->dir);
	return 0;
}

/* --- open ---------------------------------------------------------------------- */

/* Create segment @seq with its header and make it the current one. */
static int start_segment(struct store_wal *w, uint64_t seq, struct prof_err *err)
{
	char *path = seg_path(w->dir, seq);
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int rc;

	if (fd < 0) {
		rc = prof_err_set(err, -errno, -1, "wal: cannot create %s: %s", path,
				  strerror(errno));
		free(path);
		return rc;
	}
	rc = write_file_header(fd, path, w->dir, err);
	if (rc) {
		close(fd);
		unlink(path);
		free(path);
		return rc;
	}
	if (w->fd >= 0)
		close(w->fd);
	free(w->path);
	w->fd = fd;
	w->path = path;
	w->seq = seq;
	/* Positions run on across segments, so an appender waiting for the
	 * sync of an older segment is satisfied by the rotation's sync. */
	w->seg_start = w->end;
	w->end = w->synced = w->seg_start + STORE_WAL_FILE_HDR;
	w->st.segment = seq;
	w->st.segments++;
	w->st.bytes += STORE_WAL_FILE_HDR;
	w->st.size = STORE_WAL_FILE_HDR;
	return 0;
}

int store_wal_open_at(const char *dir, uint64_t covered, store_wal_replay_fn fn, void *arg,
		      bool read_only, struct store_wal **out, struct prof_err *err)
{
	struct store_wal *w;
	uint64_t *segs = NULL;
	size_t nsegs = 0;
	int rc;

	*out = NULL;
	if (!read_only && mkdir(dir, 0755) && errno != EEXIST)
		return prof_err_set(err, -errno, -1, "wal: cannot create %s: %s", dir,
				    strerror(errno));
	w = xcalloc(1, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->done[0], NULL);
	pthread_cond_init(&w->done[1], NULL);
	w->fd = -1;
	w->queue_tail = &w->queue;
	w->ro = read_only;
	w->dir = xstrdup(dir);
	covered = PROF_MAX(covered, read_checkpoint(dir));
	w->st.covered = covered;
	if (read_only && access(dir, F_OK)) {
		*out = w; /* no log at all */
		return 0;
	}
	rc = list_segments(dir, &segs, &nsegs, err);
	if (rc)
		goto fail;

	uint64_t last = covered;
	bool reuse_last = false;
	for (size_t i = 0; i < nsegs; i++) {
		uint64_t seq = segs[i];
		char *path = seg_path(dir, seq);
		struct stat st;
		struct seg_result res;
		uint32_t version = STORE_WAL_VERSION;
		int fd;

		if (seq <= covered) {
			if (!read_only) {
				log_info("wal: deleting segment already in blocks path=%s", path);
				if (unlink(path))
					log_error("wal: cannot delete %s: %s", path,
						  strerror(errno));
			}
			free(path);
			continue;
		}
		last = seq;
		fd = open(path, (read_only ? O_RDONLY : O_RDWR) | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st)) {
			rc = prof_err_set(err, -errno, -1, "wal: cannot open %s: %s", path,
					  strerror(errno));
			if (fd >= 0)
				close(fd);
			free(path);
			goto fail;
		}
		if ((uint64_t)st.st_size < STORE_WAL_FILE_HDR && read_only) {
			close(fd);
			free(path);
			continue;
		} else if ((uint64_t)st.st_size < STORE_WAL_FILE_HDR) {
			/* A crash while the header was being written. */
			if (st.st_size > 0)
				log_warn("wal: rewriting an incomplete file header path=%s "
					 "bytes=%lld",
					 path, (long long)st.st_size);
			rc = write_file_header(fd, path, dir, err);
			st.st_size = STORE_WAL_FILE_HDR;
		} else {
			rc = check_file_header(fd, path, &version, err);
		}
		if (!rc)
			rc = replay_segment(w, fd, path, seq, (uint64_t)st.st_size, fn, arg, &res,
					    err);
		if (rc) {
			close(fd);
			free(path);
			goto fail;
		}
		w->st.segments++;
		w->st.bytes += res.end;
		if (i + 1 == nsegs && !res.has_hole && version == STORE_WAL_VERSION) {
			/* Appends continue in the newest segment (an older
			 * version's is left as it is: it holds no newer record types). */
			w->fd = fd;
			w->path = path;
			w->seq = seq;
			w->seg_start = 0;
			w->end = w->synced = res.end;
			reuse_last = true;
		} else {
			close(fd);
			free(path);
		}
	}
	if (!reuse_last && !read_only) {
		rc = start_segment(w, last + 1, err);
		if (rc)
			goto fail;
	}
	free(segs);
	w->st.segment = w->seq;
	w->st.size = w->end - w->seg_start;
	*out = w;
	return 0;
fail:
	free(segs);
	store_wal_close(w);
	return rc;
}

int store_wal_open_deferred(const char *dir, uint64_t covered, struct store_wal **out,
			    uint64_t *first, uint64_t *last, struct prof_err *err)
{
	struct store_wal *w;
	uint64_t *segs = NULL;
	size_t nsegs = 0;
	int rc;

	*out = NULL;
	*first = *last = 0;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return prof_err_set(err, -errno, -1, "wal: cannot create %s: %s", dir,
				    strerror(errno));
	w = xcalloc(1, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->done[0], NULL);
	pthread_cond_init(&w->done[1], NULL);
	w->fd = -1;
	w->queue_tail = &w->queue;
	w->dir = xstrdup(dir);
	covered = PROF_MAX(covered, read_checkpoint(dir));
	w->st.covered = covered;
	rc = list_segments(dir, &segs, &nsegs, err);
	if (rc)
		goto fail;
	uint64_t next = covered;
	for (size_t i = 0; i < nsegs; i++) {
		char *path = seg_path(dir, segs[i]);
		struct stat st;

		if (segs[i] <= covered) {
			log_info("wal: deleting segment already in blocks path=%s", path);
			if (unlink(path))
				log_error("wal: cannot delete %s: %s", path, strerror(errno));
		} else if (!stat(path, &st)) {
			if (!*first)
				*first = segs[i];
			*last = next = segs[i];
			w->st.segments++;
			w->st.bytes += (uint64_t)st.st_size;
			w->pending_bytes += (uint64_t)st.st_size;
		}
		free(path);
	}
	free(segs);
	segs = NULL;
	w->pending_first = *first;
	w->pending_last = *last;
	/* Appends go to a segment of their own: replay never meets them. */
	rc = start_segment(w, next + 1, err);
	if (rc == -ENOSPC || rc == -EDQUOT || rc == -EFBIG) {
		/*
		 * A full disk must not keep the server from serving what it has:
		 * appends make the segment when they come, and fail (507) while
		 * there is no room.
		 */
		log_warn("wal: no room for a new segment, appends wait for space: %s", err->msg);
		prof_err_init(err);
		w->seq = next;
		w->no_segment = true;
		rc = 0;
	}
	if (rc)
		goto fail;
	w->st.segment = w->seq;
	*out = w;
	return 0;
fail:
	free(segs);
	store_wal_close(w);
	return rc;
}

int store_wal_replay_pending(struct store_wal *w, store_wal_replay_fn fn, void *arg,
			     const bool *stop, struct prof_err *err)
{
	uint64_t first, last;
	int rc = 0;

	pthread_mutex_lock(&w->mu);
	first = w->pending_first;
	last = w->pending_last;
	pthread_mutex_unlock(&w->mu);
	for (uint64_t seq = first; seq && seq <= last && !rc; seq++) {
		char *path = seg_path(w->dir, seq);
		int fd = open(path, O_RDWR | O_CLOEXEC);
		struct store_wal tmp;
		struct seg_result res;
		struct stat st;

		if (fd < 0 && errno == ENOENT) { /* numbering has gaps after repairs */
			free(path);
			continue;
		}
		if (fd < 0 || fstat(fd, &st)) {
			rc = prof_err_set(err, -errno, -1, "wal: cannot open %s: %s", path,
					  strerror(errno));
			if (fd >= 0)
				close(fd);
			free(path);
			break;
		}
		if ((uint64_t)st.st_size < STORE_WAL_FILE_HDR) {
			if (st.st_size > 0)
				log_warn("wal: rewriting an incomplete file header path=%s "
					 "bytes=%lld",
					 path, (long long)st.st_size);
			rc = write_file_header(fd, path, w->dir, err);
			st.st_size = STORE_WAL_FILE_HDR;
		} else {
			rc = check_file_header(fd, path, NULL, err);
		}
		/* A private copy for the counters: appenders update w->st meanwhile. */
		memset(&tmp, 0, sizeof(tmp));
		tmp.stop = stop;
		if (!rc)
			rc = replay_segment(&tmp, fd, path, seq, (uint64_t)st.st_size, fn, arg,
					    &res, err);
		close(fd);
		free(path);
		pthread_mutex_lock(&w->mu);
		w->st.replayed += tmp.st.replayed;
		w->st.skipped += tmp.st.skipped;
		w->st.dropped_bytes += tmp.st.dropped_bytes;
		w->st.corrupt_bytes += tmp.st.corrupt_bytes;
		w->st.bytes -= tmp.st.dropped_bytes;
		w->pending_done_bytes += (uint64_t)st.st_size;
		pthread_mutex_unlock(&w->mu);
		if (stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE))
			break;
	}
	return rc;
}

void store_wal_pending_progress(struct store_wal *w, uint64_t *done, uint64_t *total)
{
	pthread_mutex_lock(&w->mu);
	*done = w->pending_done_bytes;
	*total = w->pending_bytes;
	pthread_mutex_unlock(&w->mu);
}

int store_wal_open(const char *dir, store_wal_replay_fn fn, void *arg, struct store_wal **out,
		   struct prof_err *err)
{
	return store_wal_open_at(dir, 0, fn, arg, false, out, err);
}

/*
 * Sleep (w->mu held) until the end of sync number @g: the running one
 * (@g == w->gen) or the next. Callers recheck their condition on return.
 */
static void wait_for_sync(struct store_wal *w, uint64_t g)
{
	w->nwait[g & 1]++;
	pthread_cond_wait(&w->done[g & 1], &w->mu);
	w->nwait[g & 1]--;
}

int store_wal_rotate_if_over(struct store_wal *w, uint64_t max_bytes, struct prof_err *err)
{
	uint64_t sealed;
	bool over;

	pthread_mutex_lock(&w->mu);
	over = !w->ro && w->fd >= 0 && w->end - w->seg_start > max_bytes;
	pthread_mutex_unlock(&w->mu);
	return over ? store_wal_rotate(w, &sealed, err) : 0;
}

int store_wal_rotate(struct store_wal *w, uint64_t *sealed, struct prof_err *err)
{
	int rc;

	pthread_mutex_lock(&w->mu);
	while (w->syncing)
		wait_for_sync(w, w->gen);
	if (w->failed) {
		rc = w->failed;
		pthread_mutex_unlock(&w->mu);
		return prof_err_set(err, rc, -1, "wal: log is unusable after an earlier error: %s",
				    strerror(-rc));
	}
	if (w->synced < w->end && fdatasync(w->fd)) {
		rc = w->failed = -errno;
		pthread_mutex_unlock(&w->mu);
		return prof_err_set(err, rc, -1, "wal: fdatasync: %s", strerror(-rc));
	}
	w->synced = w->end;
	uint64_t old = w->seq;
	rc = start_segment(w, old + 1, err);
	/* Waiters of the next sync are covered now and only one was woken. */
	pthread_cond_broadcast(&w->done[0]);
	pthread_cond_broadcast(&w->done[1]);
	pthread_mutex_unlock(&w->mu);
	if (rc)
		return rc;
	*sealed = old;
	return 0;
}

/* --- verification -------------------------------------------------------------- */

typedef void (*report_fn)(void *arg, enum store_wal_issue lvl, const char *path, int64_t offset,
			  const char *msg);

static void reportf(report_fn report, void *arg, enum store_wal_issue lvl, const char *path,
		    int64_t off, const char *fmt, ...) PROF_PRINTF(6, 7);
static void reportf(report_fn report, void *arg, enum store_wal_issue lvl, const char *path,
		    int64_t off, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	report(arg, lvl, path, off, msg);
}

/* Verify one segment; returns the number of errors. */
static int verify_segment(const char *path, uint64_t seq, bool last, store_wal_replay_fn fn,
			  void *arg, report_fn report, uint64_t *nrec)
{
	unsigned char hdr[STORE_WAL_REC_HDR];
	char *payload = NULL;
	size_t cap = 0;
	struct stat st;
	struct prof_err err;
	int nerr = 0, rc;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st)) {
		reportf(report, arg, STORE_WAL_ERROR, path, -1, "cannot open: %s", strerror(errno));
		if (fd >= 0)
			close(fd);
		return 1;
	}
	uint64_t size = (uint64_t)st.st_size, off = STORE_WAL_FILE_HDR;
	if (size < STORE_WAL_FILE_HDR) {
		reportf(report, arg, last ? STORE_WAL_WARNING : STORE_WAL_ERROR, path, 0,
			"incomplete file header (%" PRIu64 " bytes)%s", size,
			last ? ": a crash while the segment was created; rewritten at the next open"
			     : "");
		close(fd);
		return last ? 0 : 1;
	}
	prof_err_init(&err);
	if (check_file_header(fd, path, NULL, &err)) {
		reportf(report, arg, STORE_WAL_ERROR, path, err.offset, "%s", err.msg);
		close(fd);
		return 1;
	}
	while (off < size) {
		bool valid;

		rc = record_at(fd, off, size, hdr, &payload, &cap, &valid);
		if (rc) {
			reportf(report, arg, STORE_WAL_ERROR, path, (int64_t)off, "read: %s",
				strerror(-rc));
			nerr++;
			break;
		}
		uint32_t len = get_le32(hdr);
		if (valid) {
			struct store_wal_record rec = { .type = hdr[8],
							.time_ns = (int64_t)get_le64(hdr + 12),
							.payload = payload,
							.len = len,
							.offset = off,
							.segment = seq };
			(*nrec)++;
			prof_err_init(&err);
			if (fn && fn(arg, &rec, &err)) {
				reportf(report, arg, STORE_WAL_ERROR, path, (int64_t)off,
					"record of type %u is intact but unusable: %s", rec.type,
					err.msg[0] ? err.msg : "refused");
				nerr++;
			}
			off += STORE_WAL_REC_HDR + (uint64_t)len;
			continue;
		}
		uint64_t next = size;
		bool torn = size - off < STORE_WAL_REC_HDR || len == 0 ||
			    (len <= STORE_WAL_MAX_RECORD &&
			     STORE_WAL_REC_HDR + (uint64_t)len > size - off);
		if (size - off >= STORE_WAL_REC_HDR && resync(fd, off + 1, size, &next)) {
			nerr++;
			break;
		}
		if (next < size) {
			reportf(report, arg, STORE_WAL_ERROR, path, (int64_t)off,
				"damaged record (%" PRIu64
				" bytes up to the next valid record at %" PRIu64
				"); skipped at replay, the rest is read",
				next - off, next);
			nerr++;
			off = next;
			continue;
		}
		if ((torn || all_zero(fd, off, size)) && last) {
			reportf(report, arg, STORE_WAL_WARNING, path, (int64_t)off,
				"torn tail of %" PRIu64
				" bytes (never acknowledged; dropped at the "
				"next open)",
				size - off);
		} else {
			reportf(report, arg, STORE_WAL_ERROR, path, (int64_t)off,
				"damaged tail of %" PRIu64 " bytes (record length %u)", size - off,
				len);
			nerr++;
		}
		break;
	}
	free(payload);
	close(fd);
	return nerr;
}

int store_wal_verify(const char *dir, uint64_t covered, store_wal_replay_fn fn, void *arg,
		     report_fn report, uint64_t *nrecords)
{
	uint64_t *segs = NULL;
	size_t nsegs = 0;
	struct prof_err err;
	int nerr = 0;
	char *ck = xasprintf("%s/checkpoint", dir);
	struct buf b;

	*nrecords = 0;
	buf_init(&b, 4096);
	int rc = buf_read_file(&b, ck);
	if (rc && rc != -ENOENT) {
		reportf(report, arg, STORE_WAL_ERROR, ck, -1, "cannot read: %s", prof_strerror(rc));
		nerr++;
	} else if (!rc) {
		const unsigned char *p = (const unsigned char *)b.p;

		if (b.len != STORE_WAL_CKPT_SIZE || memcmp(p, STORE_WAL_CKPT_MAGIC, 8) ||
		    get_le32(p + 8) != 1 || get_le32(p + 28) != crc32_of(0, p, 28)) {
			reportf(report, arg, STORE_WAL_ERROR, ck, 0,
				"damaged checkpoint (size, magic, version or checksum); the "
				"blocks' WAL ranges still say what replay skips");
			nerr++;
		} else {
			covered = PROF_MAX(covered, get_le64(p + 16));
		}
	}
	buf_release(&b);
	free(ck);
	prof_err_init(&err);
	if (access(dir, F_OK))
		return nerr; /* no log at all: an empty store */
	rc = list_segments(dir, &segs, &nsegs, &err);
	if (rc)
		return rc;
	for (size_t i = 0; i < nsegs; i++) {
		char *path = seg_path(dir, segs[i]);

		if (segs[i] <= covered)
			reportf(report, arg, STORE_WAL_NOTE, path, -1,
				"already in blocks; deleted at the next open");
		else
			nerr += verify_segment(path, segs[i], i + 1 == nsegs, fn, arg, report,
					       nrecords);
		free(path);
	}
	free(segs);
	return nerr;
}

/*
 * Run one group commit (w->mu held, no leader at work; returns with it
 * held): take the queue, write it at the log's end, fdatasync, mark every
 * taken record done with the result. A failed write is rolled back with
 * ftruncate and fails only its batch; a failed sync or rollback poisons
 * the log, and then every queued record fails too.
 */
static void lead(struct store_wal *w)
{
	struct iovec stack_iov[2 * 16], *iov = stack_iov;
	struct wal_rec *batch = w->queue, *r;
	uint64_t g = w->gen, at = w->end - w->seg_start, bytes = 0;
	int fd = w->fd, wrc = 0, src = 0, n = 0;
	int64_t dt = -1;

	w->queue = NULL;
	w->queue_tail = &w->queue;
	if (!w->failed) {
		for (r = batch; r; r = r->next) {
			r->taken = true;
			bytes += r->iov[0].iov_len + r->iov[1].iov_len;
			n++;
		}
		w->syncing = true;
		pthread_mutex_unlock(&w->mu);
		if (n > (int)PROF_ARRAY_SIZE(stack_iov) / 2)
			iov = xmalloc(sizeof(*iov) * 2 * (size_t)n);
		n = 0;
		for (r = batch; r; r = r->next) {
			iov[n++] = r->iov[0];
			iov[n++] = r->iov[1];
		}
		wrc = write_full_at(fd, iov, n, at);
		if (iov != stack_iov)
			free(iov);
		if (wrc) {
			/* Keep the log a sequence of records. */
			if (ftruncate(fd, (off_t)at))
				src = wrc;
		} else {
			int64_t t0 = prof_now_ns();

			src = fdatasync(fd) ? -errno : 0;
			dt = prof_now_ns() - t0;
		}
		pthread_mutex_lock(&w->mu);
		w->syncing = false;
		w->gen = g + 1;
		if (!wrc) {
			w->end += bytes;
			w->st.appended += (uint64_t)n / 2;
			w->st.bytes += bytes;
			w->st.size = w->end - w->seg_start;
			w->st.syncs++;
			w->st.sync_ns += dt > 0 ? (uint64_t)dt : 0;
			w->st.sync_ns_max = PROF_MAX(w->st.sync_ns_max, dt > 0 ? (uint64_t)dt : 0);
		}
		if (src)
			w->failed = src;
		else if (!wrc)
			w->synced = w->end;
	}
	for (r = batch; r; r = r->next) {
		r->rc = wrc ? wrc : w->failed;
		r->in_write = wrc != 0;
		r->done = true;
	}
	if (w->failed) {
		for (r = w->queue; r; r = r->next) {
			r->rc = w->failed;
			r->done = true;
		}
		w->queue = NULL;
		w->queue_tail = &w->queue;
	}
	pthread_cond_broadcast(&w->done[g & 1]);
	/* One waiter of the next generation leads; after a failure all of
	 * them return the error. */
	if (w->failed)
		pthread_cond_broadcast(&w->done[(g + 1) & 1]);
	else if (w->nwait[(g + 1) & 1])
		pthread_cond_signal(&w->done[(g + 1) & 1]);
}

int store_wal_append(struct store_wal *w, enum store_wal_type type, int64_t time_ns,
		     const void *payload, size_t len, struct prof_err *err)
{
	unsigned char hdr[STORE_WAL_REC_HDR];
	struct wal_rec me = { .iov = { { hdr, sizeof(hdr) }, { (void *)payload, len } } };
	int rc;

	if (len == 0 || len > STORE_WAL_MAX_RECORD)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    "wal: record of %zu bytes outside 1..%u bytes", len,
				    STORE_WAL_MAX_RECORD);
	if (w->ro)
		return prof_err_set(err, -EROFS, -1, "wal %s: opened read-only", w->dir);
	put_le32(hdr, (uint32_t)len);
	hdr[8] = (unsigned char)type;
	hdr[9] = 0;
	hdr[10] = hdr[11] = 0;
	put_le64(hdr + 12, (uint64_t)time_ns);
	put_le32(hdr + 4, crc32_of(crc32_of(0, hdr + 8, STORE_WAL_REC_HDR - 8), payload, len));

	pthread_mutex_lock(&w->mu);
	if (w->fd < 0 && w->no_segment) {
		/* Opened on a full disk: make the append segment now, or refuse this record. */
		rc = start_segment(w, w->seq + 1, err);
		if (rc) {
			pthread_mutex_unlock(&w->mu);
			return rc;
		}
		w->no_segment = false;
	}
	if (w->fd < 0) { /* w->fd changes under w->mu (rotation) */
		pthread_mutex_unlock(&w->mu);
		return prof_err_set(err, -EROFS, -1, "wal %s: opened read-only", w->dir);
	}
	if (w->failed) {
		rc = w->failed;
		pthread_mutex_unlock(&w->mu);
		return prof_err_set(err, rc, -1, "wal: log is unusable after an earlier error: %s",
				    strerror(-rc));
	}
	*w->queue_tail = &me;
	w->queue_tail = &me.next;
	while (!me.done) {
		if (w->syncing)
			wait_for_sync(w, me.taken ? w->gen : w->gen + 1);
		else
			lead(w);
	}
	rc = me.rc;
	pthread_mutex_unlock(&w->mu);
	if (rc)
		return prof_err_set(err, rc, -1, "wal: %s: %s", me.in_write ? "write" : "fdatasync",
				    strerror(-rc));
	return 0;
}

void store_wal_get_stats(struct store_wal *w, struct store_wal_stats *st)
{
	pthread_mutex_lock(&w->mu);
	*st = w->st;
	pthread_mutex_unlock(&w->mu);
}

void store_wal_close(struct store_wal *w)
{
	if (!w)
		return;
	if (w->fd >= 0) {
		if (!w->ro && !w->failed && w->synced < w->end && fdatasync(w->fd))
			log_error("wal: fdatasync at close: %s", strerror(errno));
		close(w->fd);
	}
	pthread_cond_destroy(&w->done[0]);
	pthread_cond_destroy(&w->done[1]);
	pthread_mutex_destroy(&w->mu);
	free(w->path);
	free(w->dir);
	free(w);
}
