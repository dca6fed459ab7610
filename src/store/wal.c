// SPDX-License-Identifier: Apache-2.0
/*
 * wal.c - write-ahead log with checksummed records, torn-tail repair and
 * group commit; the format and its rationale are in wal.h and
 * docs/storage-format.md.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "store/wal.h"

#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <zlib.h>

_Static_assert(sizeof(STORE_WAL_MAGIC) - 1 == 8, "WAL magic is 8 bytes");
_Static_assert(STORE_WAL_FILE_HDR == 8 + 4 + 4, "WAL file header layout");
_Static_assert(STORE_WAL_REC_HDR == 4 + 4 + 1 + 1 + 2 + 8, "WAL record header layout");

struct store_wal {
	pthread_mutex_t mu;
	pthread_cond_t synced_cond;
	int fd;
	char *path;
	uint64_t end;	 /* bytes written (next record offset) */
	uint64_t synced; /* bytes known to be durable */
	bool syncing;	 /* a thread is in fdatasync */
	int failed;	 /* sticky error after a failed sync */
	struct store_wal_stats st;
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

static uint32_t crc32_of(uint32_t crc, const void *p, size_t n)
{
	const unsigned char *b = p;

	/* zlib's crc32 takes a uInt length; feed large buffers in pieces. */
	while (n) {
		uInt k = (uInt)PROF_MIN(n, (size_t)1 << 30);

		crc = (uint32_t)crc32(crc, b, k);
		b += k;
		n -= k;
	}
	return crc;
}

static int write_full_at(int fd, const struct iovec *iov_in, int iovcnt, uint64_t off)
{
	struct iovec iov[4];
	int cnt = iovcnt;

	PROF_ASSERT(iovcnt <= 4);
	memcpy(iov, iov_in, sizeof(*iov) * (size_t)iovcnt);
	struct iovec *cur = iov;
	while (cnt > 0) {
		ssize_t w = pwritev(fd, cur, cnt, (off_t)off);

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

static int read_full_at(int fd, void *p, size_t n, uint64_t off)
{
	char *b = p;

	while (n) {
		ssize_t r = pread(fd, b, n, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO; /* the file shrank under us */
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static int fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

static int write_file_header(struct store_wal *w, const char *dir, struct prof_err *err)
{
	unsigned char hdr[STORE_WAL_FILE_HDR];
	struct iovec iov = { hdr, sizeof(hdr) };
	int rc;

	memcpy(hdr, STORE_WAL_MAGIC, 8);
	put_le32(hdr + 8, STORE_WAL_VERSION);
	put_le32(hdr + 12, crc32_of(0, hdr, 12));
	if (ftruncate(w->fd, 0))
		return prof_err_set(err, -errno, -1, "wal %s: truncate: %s", w->path,
				    strerror(errno));
	rc = write_full_at(w->fd, &iov, 1, 0);
	if (!rc && fdatasync(w->fd))
		rc = -errno;
	if (!rc)
		rc = fsync_dir(dir);
	if (rc)
		return prof_err_set(err, rc, -1, "wal %s: writing the header: %s", w->path,
				    strerror(-rc));
	return 0;
}

static int check_file_header(struct store_wal *w, struct prof_err *err)
{
	unsigned char hdr[STORE_WAL_FILE_HDR];
	int rc = read_full_at(w->fd, hdr, sizeof(hdr), 0);

	if (rc)
		return prof_err_set(err, rc, 0, "wal %s: reading the header: %s", w->path,
				    strerror(-rc));
	if (memcmp(hdr, STORE_WAL_MAGIC, 8))
		return prof_err_set(err, -PROF_EFORMAT, 0,
				    "wal %s: not a profd write-ahead log (bad magic)", w->path);
	if (get_le32(hdr + 12) != crc32_of(0, hdr, 12))
		return prof_err_set(err, -PROF_ECORRUPT, 12,
				    "wal %s: file header checksum mismatch", w->path);
	if (get_le32(hdr + 8) != STORE_WAL_VERSION)
		return prof_err_set(err, -PROF_EFORMAT, 8,
				    "wal %s: format version %" PRIu32 " is not supported (this "
				    "build reads version %u)",
				    w->path, get_le32(hdr + 8), STORE_WAL_VERSION);
	return 0;
}

/* Keep a copy of bytes [off, size) before truncating them away. */
static void save_corrupt_tail(struct store_wal *w, uint64_t off, uint64_t size)
{
	char *path = xasprintf("%s.corrupt-%" PRIu64, w->path, off);
	int rc;

	if (size - off > (uint64_t)STORE_WAL_MAX_RECORD * 2) {
		log_error("wal: corrupt tail of %" PRIu64 " bytes is too large to copy; not saved",
			  size - off);
		free(path);
		return;
	}
	char *data = xmalloc((size_t)(size - off) + 1);
	rc = read_full_at(w->fd, data, (size_t)(size - off), off);
	if (!rc)
		rc = buf_write_file(path, data, (size_t)(size - off));
	if (rc)
		log_error("wal: could not save the corrupt tail to %s: %s", path, strerror(-rc));
	else
		log_warn("wal: corrupt tail saved path=%s bytes=%" PRIu64, path, size - off);
	free(data);
	free(path);
}

/*
 * Replay records from the end of the file header. Returns 0 (possibly
 * after truncating a bad tail) or a negative I/O error.
 */
static int replay(struct store_wal *w, uint64_t size, store_wal_replay_fn fn, void *arg,
		  struct prof_err *err)
{
	uint64_t off = STORE_WAL_FILE_HDR;
	unsigned char hdr[STORE_WAL_REC_HDR];
	char *payload = NULL;
	size_t payload_cap = 0;
	const char *why = NULL;
	bool complete_but_bad = false;
	int rc = 0;

	while (off < size) {
		uint64_t left = size - off;

		if (left < STORE_WAL_REC_HDR) {
			why = "incomplete record header";
			break;
		}
		rc = read_full_at(w->fd, hdr, sizeof(hdr), off);
		if (rc)
			goto io_error;
		uint32_t len = get_le32(hdr);
		uint32_t crc = get_le32(hdr + 4);
		if (len == 0 || len > STORE_WAL_MAX_RECORD) {
			why = len ? "record length above the maximum" : "zero record length";
			complete_but_bad = len != 0;
			break;
		}
		if ((uint64_t)STORE_WAL_REC_HDR + len > left) {
			why = "incomplete record (torn write)";
			break;
		}
		if (len + (size_t)1 > payload_cap) {
			payload_cap = len + (size_t)1;
			free(payload);
			payload = xmalloc(payload_cap);
		}
		rc = read_full_at(w->fd, payload, len, off + STORE_WAL_REC_HDR);
		if (rc)
			goto io_error;
		uint32_t want = crc32_of(crc32_of(0, hdr + 8, STORE_WAL_REC_HDR - 8), payload, len);
		if (want != crc) {
			why = "record checksum mismatch";
			complete_but_bad = true;
			break;
		}
		if (hdr[9] != 0 || hdr[10] != 0 || hdr[11] != 0) {
			why = "unknown record flags or reserved bytes set";
			complete_but_bad = true;
			break;
		}
		struct store_wal_record rec = {
			.type = hdr[8],
			.time_ns = (int64_t)get_le64(hdr + 12),
			.payload = payload,
			.len = len,
			.offset = off,
		};
		if (fn) {
			struct prof_err rerr;

			prof_err_init(&rerr);
			int frc = fn(arg, &rec, &rerr);
			if (frc) {
				log_error("wal: skipping record offset=%" PRIu64 " type=%u: %s",
					  off, rec.type,
					  rerr.msg[0] ? rerr.msg : prof_strerror(frc));
				w->st.skipped++;
			} else {
				w->st.replayed++;
			}
		} else {
			w->st.replayed++;
		}
		off += STORE_WAL_REC_HDR + (uint64_t)len;
	}
	free(payload);
	payload = NULL;
	if (off < size) {
		bool all_zero = true;
		/* A tail of zeros is a pre-extended file, not damage. */
		if (complete_but_bad || size - off > STORE_WAL_REC_HDR) {
			char z[4096];
			for (uint64_t p = off; p < size && all_zero; p += sizeof(z)) {
				size_t k = (size_t)PROF_MIN((uint64_t)sizeof(z), size - p);
				if (read_full_at(w->fd, z, k, p))
					break;
				for (size_t i = 0; i < k; i++)
					if (z[i]) {
						all_zero = false;
						break;
					}
			}
		}
		if (complete_but_bad && !all_zero) {
			log_error("wal: %s at offset %" PRIu64 " of %s; dropping %" PRIu64
				  " bytes from there",
				  why, off, w->path, size - off);
			save_corrupt_tail(w, off, size);
		} else {
			log_warn("wal: torn tail dropped path=%s offset=%" PRIu64 " bytes=%" PRIu64
				 " reason=\"%s\"",
				 w->path, off, size - off, why);
		}
		if (ftruncate(w->fd, (off_t)off)) {
			rc = -errno;
			return prof_err_set(err, rc, (int64_t)off,
					    "wal %s: truncating at %" PRIu64 ": %s", w->path, off,
					    strerror(errno));
		}
		if (fdatasync(w->fd)) {
			rc = -errno;
			return prof_err_set(err, rc, -1, "wal %s: sync after truncation: %s",
					    w->path, strerror(errno));
		}
		w->st.dropped_bytes = size - off;
	}
	w->end = w->synced = off;
	return 0;

io_error:
	free(payload);
	return prof_err_set(err, rc, (int64_t)off, "wal %s: read at %" PRIu64 ": %s", w->path, off,
			    strerror(-rc));
}

int store_wal_open(const char *dir, store_wal_replay_fn fn, void *arg, struct store_wal **out,
		   struct prof_err *err)
{
	struct store_wal *w;
	struct stat st;
	int rc;

	*out = NULL;
	if (mkdir(dir, 0755) && errno != EEXIST)
		return prof_err_set(err, -errno, -1, "wal: cannot create %s: %s", dir,
				    strerror(errno));
	w = xcalloc(1, sizeof(*w));
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->synced_cond, NULL);
	w->path = xasprintf("%s/%s", dir, STORE_WAL_SEGMENT_NAME);
	w->fd = open(w->path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		rc = prof_err_set(err, -errno, -1, "wal: cannot open %s: %s", w->path,
				  strerror(errno));
		goto fail;
	}
	if (fstat(w->fd, &st)) {
		rc = prof_err_set(err, -errno, -1, "wal: stat %s: %s", w->path, strerror(errno));
		goto fail;
	}
	if ((uint64_t)st.st_size < STORE_WAL_FILE_HDR) {
		/* New file, or a crash while its header was being written. */
		if (st.st_size > 0)
			log_warn("wal: rewriting an incomplete file header path=%s bytes=%lld",
				 w->path, (long long)st.st_size);
		rc = write_file_header(w, dir, err);
		if (rc)
			goto fail;
		st.st_size = STORE_WAL_FILE_HDR;
	} else {
		rc = check_file_header(w, err);
		if (rc)
			goto fail;
	}
	rc = replay(w, (uint64_t)st.st_size, fn, arg, err);
	if (rc)
		goto fail;
	w->st.size = w->end;
	*out = w;
	return 0;
fail:
	store_wal_close(w);
	return rc;
}

int store_wal_append(struct store_wal *w, enum store_wal_type type, int64_t time_ns,
		     const void *payload, size_t len, struct prof_err *err)
{
	unsigned char hdr[STORE_WAL_REC_HDR];
	uint64_t my_end;
	int rc;

	if (len == 0 || len > STORE_WAL_MAX_RECORD)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    "wal: record of %zu bytes outside 1..%u bytes", len,
				    STORE_WAL_MAX_RECORD);
	put_le32(hdr, (uint32_t)len);
	hdr[8] = (unsigned char)type;
	hdr[9] = 0;
	hdr[10] = hdr[11] = 0;
	put_le64(hdr + 12, (uint64_t)time_ns);
	put_le32(hdr + 4, crc32_of(crc32_of(0, hdr + 8, STORE_WAL_REC_HDR - 8), payload, len));

	struct iovec iov[2] = { { hdr, sizeof(hdr) }, { (void *)payload, len } };

	pthread_mutex_lock(&w->mu);
	if (w->failed) {
		rc = w->failed;
		pthread_mutex_unlock(&w->mu);
		return prof_err_set(err, rc, -1, "wal: log is unusable after an earlier error: %s",
				    strerror(-rc));
	}
	rc = write_full_at(w->fd, iov, 2, w->end);
	if (rc) {
		/* Roll back a partial write so the log stays a sequence of records. */
		if (ftruncate(w->fd, (off_t)w->end))
			w->failed = rc;
		pthread_mutex_unlock(&w->mu);
		return prof_err_set(err, rc, -1, "wal: write: %s", strerror(-rc));
	}
	w->end += sizeof(hdr) + len;
	w->st.appended++;
	w->st.size = w->end;
	my_end = w->end;

	/* Group commit: one fdatasync covers every record written before it began. */
	while (w->synced < my_end && !w->failed) {
		if (w->syncing) {
			pthread_cond_wait(&w->synced_cond, &w->mu);
			continue;
		}
		uint64_t target = w->end;

		w->syncing = true;
		pthread_mutex_unlock(&w->mu);
		int src = fdatasync(w->fd) ? -errno : 0;
		pthread_mutex_lock(&w->mu);
		w->syncing = false;
		w->st.syncs++;
		if (src)
			w->failed = src;
		else
			w->synced = PROF_MAX(w->synced, target);
		pthread_cond_broadcast(&w->synced_cond);
	}
	rc = w->synced >= my_end ? 0 : w->failed;
	pthread_mutex_unlock(&w->mu);
	if (rc)
		return prof_err_set(err, rc, -1, "wal: fdatasync: %s", strerror(-rc));
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
		if (!w->failed && w->synced < w->end && fdatasync(w->fd))
			log_error("wal: fdatasync at close: %s", strerror(errno));
		close(w->fd);
	}
	pthread_cond_destroy(&w->synced_cond);
	pthread_mutex_destroy(&w->mu);
	free(w->path);
	free(w);
}
