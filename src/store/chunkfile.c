// SPDX-License-Identifier: Apache-2.0
/*
 * chunkfile.c - the chunked container of block files: streaming writer
 * with a running CRC, reader with table checks, whole-file verification.
 * Layout in chunkfile.h and docs/storage-format.md.
 */
#include "base/compat.h"
#include "base/fs.h"
#include "base/mem.h"
#include "base/varint.h"
#include "store/chunkfile.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <isa-l/crc.h>
#include <zstd.h>

_Static_assert(STORE_CHUNKFILE_HDR == 8 + 4 + 4, "chunk file header layout");
_Static_assert(STORE_CHUNKFILE_ENTRY == 4 + 1 + 3 + 4 + 4 + 8 + 8 + 8, "chunk table entry layout");
_Static_assert(STORE_CHUNKFILE_FOOTER == 8 + 4 + 4, "chunk file footer layout");

#define WRITE_BUF (1u << 20)

uint32_t store_chunkfile_crc32(uint32_t crc, const void *p, size_t n)
{
	/* ISA-L's crc32_gzip_refl is zlib's crc32 (same polynomial, same
	 * inversions, so it chains with it), computed with PCLMULQDQ folding
	 * where the CPU has it: about 7x zlib's table-driven loop. */
	return crc32_gzip_refl(crc, p, n);
}

/* --- writer ------------------------------------------------------------------ */

static int flush_out(struct store_chunkfile_writer *w)
{
	const char *p = w->out.p;
	size_t n = w->out.len;

	while (n) {
		ssize_t k = write(w->fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	buf_reset(&w->out);
	return 0;
}

static int w_fail(struct store_chunkfile_writer *w, int rc, struct prof_err *err, const char *what)
{
	if (!w->err)
		w->err = rc;
	return prof_err_set(err, rc, (int64_t)w->off, "%s: %s: %s", w->path, what,
			    prof_strerror(rc));
}

static int w_put(struct store_chunkfile_writer *w, const void *p, size_t n, struct prof_err *err)
{
	int rc;

	if (w->err)
		return w->err;
	w->crc = store_chunkfile_crc32(w->crc, p, n);
	if (w->region_open)
		w->region_crc = store_chunkfile_crc32(w->region_crc, p, n);
	w->off += n;
	if (n >= WRITE_BUF) {
		rc = flush_out(w);
		if (!rc) {
			const char *b = p;

			while (n && !rc) {
				ssize_t k = write(w->fd, b, n);

				if (k < 0 && errno == EINTR)
					continue;
				if (k < 0)
					rc = -errno;
				else {
					b += k;
					n -= (size_t)k;
				}
			}
		}
		return rc ? w_fail(w, rc, err, "write") : 0;
	}
	if (w->out.len + n > WRITE_BUF) {
		rc = flush_out(w);
		if (rc)
			return w_fail(w, rc, err, "write");
	}
	PROF_ASSERT(buf_add(&w->out, p, n) == 0);
	return 0;
}

static void w_release(struct store_chunkfile_writer *w)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	buf_release(&w->out);
	buf_release(&w->ztmp);
	ZSTD_freeCCtx(w->cctx);
	w->cctx = NULL;
	free(w->path);
	w->path = NULL;
}

int store_chunkfile_create(struct store_chunkfile_writer *w, const char *path, const char *magic,
			   uint32_t version, int zlevel, struct prof_err *err)
{
	uint8_t hdr[STORE_CHUNKFILE_HDR];

	memset(w, 0, sizeof(*w));
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (w->fd < 0)
		return prof_err_set(err, -errno, -1, "%s: create: %s", path, strerror(errno));
	w->path = xstrdup(path);
	buf_init(&w->out, 0);
	buf_init(&w->ztmp, 0);
	w->zlevel = zlevel;
	w->cctx = ZSTD_createCCtx();
	PROF_ASSERT(w->cctx);
	memcpy(hdr, magic, 8);
	le32_put(hdr + 8, version);
	le32_put(hdr + 12, 0);
	int rc = w_put(w, hdr, sizeof(hdr), err);
	if (rc) {
		store_chunkfile_abort(w);
		return rc;
	}
	return 0;
}

/* Compress @data when asked and worth it; *out points at the bytes to store. */
static int encode(struct store_chunkfile_writer *w, enum store_chunkfile_codec codec,
		  const void *data, size_t n, struct buf *tmp, const void **out, size_t *outn,
		  uint8_t *used, struct prof_err *err)
{
	*out = data;
	*outn = n;
	*used = STORE_CHUNKFILE_RAW;
	if (codec != STORE_CHUNKFILE_ZSTD || n < 32)
		return 0;
	size_t cap = ZSTD_compressBound(n);
	buf_reset(tmp);
	if (tmp->cap < cap + 1) {
		tmp->p = xrealloc(tmp->p, cap + 1);
		tmp->cap = cap + 1;
	}
	size_t k = ZSTD_compressCCtx(w->cctx, tmp->p, cap, data, n, w->zlevel);
	if (ZSTD_isError(k))
		return w_fail(w, -EIO, err, ZSTD_getErrorName(k));
	if (k < n) {
		*out = tmp->p;
		*outn = k;
		*used = STORE_CHUNKFILE_ZSTD;
	}
	return 0;
}

int store_chunkfile_add(struct store_chunkfile_writer *w, const char *id,
			enum store_chunkfile_codec codec, const void *data, size_t n,
			struct prof_err *err)
{
	struct store_chunkfile_entry *e;
	const void *p;
	size_t pn;
	uint8_t used;
	int rc;

	if (w->err)
		return w->err;
	PROF_ASSERT(w->nents < STORE_CHUNKFILE_MAX_CHUNKS && strlen(id) == 4);
	rc = encode(w, codec, data, n, &w->ztmp, &p, &pn, &used, err);
	if (rc)
		return rc;
	e = &w->ents[w->nents++];
	memcpy(e->id, id, 5);
	e->codec = used;
	e->crc = store_chunkfile_crc32(0, p, pn);
	e->offset = w->off;
	e->stored_len = pn;
	e->raw_len = n;
	return w_put(w, p, pn, err);
}

int store_chunkfile_region_begin(struct store_chunkfile_writer *w, const char *id, uint64_t *off)
{
	(void)id;
	PROF_ASSERT(!w->region_open);
	*off = w->off;
	w->region_open = true;
	w->region_crc = 0;
	return w->err;
}

int store_chunkfile_frame(struct store_chunkfile_writer *w, enum store_chunkfile_codec codec,
			  const void *data, size_t n, uint64_t *off, uint32_t *stored,
			  uint8_t *used_codec, uint32_t *crc, struct prof_err *err)
{
	const void *p;
	size_t pn;
	int rc;

	if (w->err)
		return w->err;
	if (n > UINT32_MAX)
		return w_fail(w, -PROF_ETOOBIG, err, "frame over 4 GiB");
	rc = encode(w, codec, data, n, &w->ztmp, &p, &pn, used_codec, err);
	if (rc)
		return rc;
	*off = w->off;
	*stored = (uint32_t)pn;
	*crc = store_chunkfile_crc32(0, p, pn);
	return w_put(w, p, pn, err);
}

int store_chunkfile_region_end(struct store_chunkfile_writer *w, const char *id, uint64_t begin,
			       struct prof_err *err)
{
	struct store_chunkfile_entry *e;

	(void)err;
	PROF_ASSERT(w->region_open);
	w->region_open = false;
	if (w->err)
		return w->err;
	PROF_ASSERT(w->nents < STORE_CHUNKFILE_MAX_CHUNKS && strlen(id) == 4);
	e = &w->ents[w->nents++];
	memcpy(e->id, id, 5);
	e->codec = STORE_CHUNKFILE_RAW;
	e->crc = w->region_crc;
	e->offset = begin;
	e->stored_len = w->off - begin;
	e->raw_len = w->off - begin;
	return 0;
}

int store_chunkfile_finish(struct store_chunkfile_writer *w, struct prof_err *err)
{
	uint8_t ent[STORE_CHUNKFILE_ENTRY], foot[STORE_CHUNKFILE_FOOTER];
	uint64_t table = w->off;
	int rc = w->err;

	for (uint32_t i = 0; i < w->nents && !rc; i++) {
		const struct store_chunkfile_entry *e = &w->ents[i];

		memset(ent, 0, sizeof(ent));
		memcpy(ent, e->id, 4);
		ent[4] = e->codec;
		le32_put(ent + 8, e->crc);
		le64_put(ent + 16, e->offset);
		le64_put(ent + 24, e->stored_len);
		le64_put(ent + 32, e->raw_len);
		rc = w_put(w, ent, sizeof(ent), err);
	}
	if (!rc) {
		le64_put(foot, table);
		le32_put(foot + 8, w->nents);
		uint32_t crc = store_chunkfile_crc32(w->crc, foot, 12);
		le32_put(foot + 12, crc);
		rc = w_put(w, foot, sizeof(foot), err);
	}
	if (!rc) {
		rc = flush_out(w);
		if (rc)
			w_fail(w, rc, err, "write");
	}
	if (!rc && fsync(w->fd)) {
		rc = -errno;
		w_fail(w, rc, err, "fsync");
	}
	if (rc) {
		store_chunkfile_abort(w);
		return rc;
	}
	w_release(w);
	return 0;
}

void store_chunkfile_abort(struct store_chunkfile_writer *w)
{
	if (w->path)
		unlink(w->path);
	w_release(w);
}

/* --- reader ------------------------------------------------------------------ */

#define CORRUPT(off, ...) prof_err_set(err, -PROF_ECORRUPT, (int64_t)(off), __VA_ARGS__)

static int parse_table(struct store_chunkfile *f, const uint8_t *tab, uint64_t table_off,
		       struct prof_err *err)
{
	for (uint32_t i = 0; i < f->nents; i++) {
		const uint8_t *p = tab + (size_t)i * STORE_CHUNKFILE_ENTRY;
		struct store_chunkfile_entry *e = &f->ents[i];
		uint64_t at = table_off + (uint64_t)i * STORE_CHUNKFILE_ENTRY;

		memcpy(e->id, p, 4);
		e->id[4] = '\0';
		e->codec = p[4];
		e->crc = le32_get(p + 8);
		e->offset = le64_get(p + 16);
		e->stored_len = le64_get(p + 24);
		e->raw_len = le64_get(p + 32);
		for (int k = 0; k < 4; k++)
			if (p[k] < 0x20 || p[k] > 0x7e)
				return CORRUPT(at,
					       "%s: chunk table entry %u at offset %" PRIu64
					       ": id is not 4 ASCII characters",
					       f->path, i, at);
		if (e->codec > STORE_CHUNKFILE_ZSTD || p[5] || p[6] || p[7] || le32_get(p + 12))
			return CORRUPT(at + 4,
				       "%s: chunk %s (table offset %" PRIu64
				       "): unknown codec %u or reserved bytes set",
				       f->path, e->id, at, e->codec);
		if (e->offset < STORE_CHUNKFILE_HDR || e->offset > table_off ||
		    e->stored_len > table_off - e->offset)
			return CORRUPT(at + 16,
				       "%s: chunk %s: bytes %" PRIu64 "+%" PRIu64
				       " lie outside the data area [16, %" PRIu64 ")",
				       f->path, e->id, e->offset, e->stored_len, table_off);
		if (e->codec == STORE_CHUNKFILE_RAW && e->raw_len != e->stored_len)
			return CORRUPT(at + 32,
				       "%s: chunk %s: raw length differs from stored length",
				       f->path, e->id);
		for (uint32_t j = 0; j < i; j++)
			if (!memcmp(f->ents[j].id, e->id, 4))
				return CORRUPT(at, "%s: chunk %s appears twice", f->path, e->id);
	}
	return 0;
}

int store_chunkfile_open(struct store_chunkfile *f, const char *path, const char *magic,
			 uint32_t max_version, bool verify, struct prof_err *err)
{
	uint8_t hdr[STORE_CHUNKFILE_HDR], foot[STORE_CHUNKFILE_FOOTER];
	uint8_t tab[STORE_CHUNKFILE_MAX_CHUNKS * STORE_CHUNKFILE_ENTRY];
	struct stat st;
	int rc;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return prof_err_set(err, -errno, -1, "%s: open: %s", path, strerror(errno));
	f->path = xstrdup(path);
	if (fstat(f->fd, &st)) {
		rc = prof_err_set(err, -errno, -1, "%s: stat: %s", path, strerror(errno));
		goto fail;
	}
	f->size = (uint64_t)st.st_size;
	if (f->size < STORE_CHUNKFILE_HDR + STORE_CHUNKFILE_FOOTER) {
		rc = CORRUPT(0, "%s: %" PRIu64 " bytes is too short for a profd block file", path,
			     f->size);
		goto fail;
	}
	rc = fs_pread_full(f->fd, hdr, sizeof(hdr), 0);
	if (!rc)
		rc = fs_pread_full(f->fd, foot, sizeof(foot), f->size - STORE_CHUNKFILE_FOOTER);
	if (rc) {
		rc = prof_err_set(err, rc, -1, "%s: read: %s", path, prof_strerror(rc));
		goto fail;
	}
	if (memcmp(hdr, magic, 8)) {
		rc = prof_err_set(err, -PROF_EFORMAT, 0, "%s: bad magic (expected \"%.8s\")", path,
				  magic);
		goto fail;
	}
	f->version = le32_get(hdr + 8);
	if (f->version == 0 || f->version > max_version) {
		rc = prof_err_set(err, -PROF_EFORMAT, 8,
				  "%s: version %u is not supported (this build reads up to %u)",
				  path, f->version, max_version);
		goto fail;
	}
	if (le32_get(hdr + 12)) {
		rc = CORRUPT(12, "%s: reserved header bytes at offset 12 are not 0", path);
		goto fail;
	}
	uint64_t table_off = le64_get(foot);
	uint64_t foot_off = f->size - STORE_CHUNKFILE_FOOTER;
	f->nents = le32_get(foot + 8);
	if (f->nents == 0 || f->nents > STORE_CHUNKFILE_MAX_CHUNKS) {
		rc = CORRUPT(foot_off + 8, "%s: footer at offset %" PRIu64 ": %u chunks", path,
			     foot_off, f->nents);
		goto fail;
	}
	if (table_off < STORE_CHUNKFILE_HDR ||
	    table_off + (uint64_t)f->nents * STORE_CHUNKFILE_ENTRY != foot_off) {
		rc = CORRUPT(foot_off,
			     "%s: footer at offset %" PRIu64 ": table offset %" PRIu64
			     " does not end at the footer",
			     path, foot_off, table_off);
		goto fail;
	}
	rc = fs_pread_full(f->fd, tab, (size_t)f->nents * STORE_CHUNKFILE_ENTRY, table_off);
	if (rc) {
		rc = prof_err_set(err, rc, -1, "%s: read: %s", path, prof_strerror(rc));
		goto fail;
	}
	rc = parse_table(f, tab, table_off, err);
	if (!rc && verify)
		rc = store_chunkfile_verify(f, err);
	if (rc)
		goto fail;
	return 0;
fail:
	store_chunkfile_close(f);
	return rc;
}

void store_chunkfile_close(struct store_chunkfile *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->path);
	f->path = NULL;
}

const struct store_chunkfile_entry *store_chunkfile_find(const struct store_chunkfile *f,
							 const char *id)
{
	for (uint32_t i = 0; i < f->nents; i++)
		if (!memcmp(f->ents[i].id, id, 4))
			return &f->ents[i];
	return NULL;
}

static int decompress(void *dctx, void *dst, size_t raw_len, const void *src, size_t n,
		      const char *path, const char *what, uint64_t off, struct prof_err *err)
{
	size_t k = ZSTD_decompressDCtx(dctx, dst, raw_len, src, n);

	if (ZSTD_isError(k) || k != raw_len)
		return CORRUPT(off, "%s: %s at offset %" PRIu64 ": zstd frame %s", path, what, off,
			       ZSTD_isError(k) ? ZSTD_getErrorName(k) : "has the wrong length");
	return 0;
}

int store_chunkfile_read(const struct store_chunkfile *f, const struct store_chunkfile_entry *e,
			 size_t max_raw, struct buf *out, struct prof_err *err)
{
	struct buf tmp;
	int rc;

	if (e->raw_len > max_raw)
		return prof_err_set(err, -PROF_ETOOBIG, (int64_t)e->offset,
				    "%s: chunk %s: %" PRIu64 " bytes is over the limit of %zu",
				    f->path, e->id, e->raw_len, max_raw);
	buf_init(&tmp, 0);
	buf_reset(out);
	tmp.p = xmalloc(e->stored_len + 1);
	tmp.cap = e->stored_len + 1;
	rc = fs_pread_full(f->fd, tmp.p, e->stored_len, e->offset);
	if (rc) {
		rc = prof_err_set(err, rc, (int64_t)e->offset, "%s: read: %s", f->path,
				  prof_strerror(rc));
		goto out;
	}
	if (store_chunkfile_crc32(0, tmp.p, e->stored_len) != e->crc) {
		rc = CORRUPT(e->offset, "%s: chunk %s at offset %" PRIu64 ": checksum mismatch",
			     f->path, e->id, e->offset);
		goto out;
	}
	if (out->cap < e->raw_len + 1) {
		out->p = xrealloc(out->p, e->raw_len + 1);
		out->cap = e->raw_len + 1;
	}
	if (e->codec == STORE_CHUNKFILE_RAW) {
		memcpy(out->p, tmp.p, e->raw_len);
	} else {
		ZSTD_DCtx *d = ZSTD_createDCtx();

		PROF_ASSERT(d);
		rc = decompress(d, out->p, e->raw_len, tmp.p, e->stored_len, f->path, e->id,
				e->offset, err);
		ZSTD_freeDCtx(d);
		if (rc)
			goto out;
	}
	out->len = e->raw_len;
	out->p[out->len] = '\0';
out:
	buf_release(&tmp);
	return rc;
}

int store_chunkfile_read_frame(const struct store_chunkfile *f, uint64_t off, uint32_t stored,
			       uint32_t raw_len, uint8_t codec, uint32_t crc, void *dctx,
			       struct buf *scratch, void *dst, struct prof_err *err)
{
	int rc;

	if (off < STORE_CHUNKFILE_HDR || off > f->size || stored > f->size - off)
		return CORRUPT(off, "%s: frame at offset %" PRIu64 " runs past the end", f->path,
			       off);
	if (codec == STORE_CHUNKFILE_RAW && stored != raw_len)
		return CORRUPT(off, "%s: raw frame at offset %" PRIu64 ": length mismatch", f->path,
			       off);
	if (scratch->cap < (size_t)stored + 1) {
		scratch->p = xrealloc(scratch->p, (size_t)stored + 1);
		scratch->cap = (size_t)stored + 1;
	}
	rc = fs_pread_full(f->fd, scratch->p, stored, off);
	if (rc)
		return prof_err_set(err, rc, (int64_t)off, "%s: read at %" PRIu64 ": %s", f->path,
				    off, prof_strerror(rc));
	if (store_chunkfile_crc32(0, scratch->p, stored) != crc)
		return CORRUPT(off, "%s: frame at offset %" PRIu64 ": checksum mismatch", f->path,
			       off);
	if (codec == STORE_CHUNKFILE_RAW) {
		memcpy(dst, scratch->p, stored);
		return 0;
	}
	if (codec != STORE_CHUNKFILE_ZSTD)
		return CORRUPT(off, "%s: frame at offset %" PRIu64 ": unknown codec %u", f->path,
			       off, codec);
	return decompress(dctx, dst, raw_len, scratch->p, stored, f->path, "frame", off, err);
}

/*
 * CRC of bytes [off, off + n) of the file, streamed through a buffer of
 * at most WRITE_BUF bytes: a small chunk gets a small buffer, not 1 MiB
 * (mmap, page faults and munmap on every call for most allocators).
 */
static int crc_range(const struct store_chunkfile *f, uint64_t off, uint64_t n, uint32_t *out,
		     struct prof_err *err)
{
	uint8_t *b = xmalloc((size_t)PROF_MIN((uint64_t)WRITE_BUF, n ? n : 1));
	uint32_t crc = 0;
	int rc = 0;

	while (n && !rc) {
		size_t k = (size_t)PROF_MIN((uint64_t)WRITE_BUF, n);

		rc = fs_pread_full(f->fd, b, k, off);
		if (rc)
			rc = prof_err_set(err, rc, (int64_t)off, "%s: read at %" PRIu64 ": %s",
					  f->path, off, prof_strerror(rc));
		crc = store_chunkfile_crc32(crc, b, k);
		off += k;
		n -= k;
	}
	free(b);
	*out = crc;
	return rc;
}

int store_chunkfile_verify(const struct store_chunkfile *f, struct prof_err *err)
{
	uint32_t crc, want;
	uint8_t foot[4];
	int rc;

	/* Each chunk first: its offset is more precise than the footer's. */
	for (uint32_t i = 0; i < f->nents; i++) {
		const struct store_chunkfile_entry *e = &f->ents[i];

		if (e->codec == STORE_CHUNKFILE_RAW) {
			rc = crc_range(f, e->offset, e->stored_len, &crc, err);
			if (rc)
				return rc;
			if (crc != e->crc)
				return CORRUPT(e->offset,
					       "%s: chunk %s at offset %" PRIu64
					       ": checksum mismatch",
					       f->path, e->id, e->offset);
		} else {
			struct buf raw;

			buf_init(&raw, 0);
			rc = store_chunkfile_read(f, e, (size_t)1 << 34, &raw, err);
			buf_release(&raw);
			if (rc)
				return rc;
		}
	}
	rc = crc_range(f, 0, f->size - 4, &crc, err);
	if (!rc)
		rc = fs_pread_full(f->fd, foot, 4, f->size - 4);
	if (rc)
		return prof_err_set(err, rc, -1, "%s: read: %s", f->path, prof_strerror(rc));
	want = le32_get(foot);
	if (crc != want)
		return CORRUPT(f->size - 4,
			       "%s: file checksum mismatch (footer at offset %" PRIu64
			       "): some byte in the file is damaged",
			       f->path, f->size - STORE_CHUNKFILE_FOOTER);
	return 0;
}
