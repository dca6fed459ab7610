/* SPDX-License-Identifier: Apache-2.0 */
/*
 * chunkfile.h - the container every block file uses: a header, chunks of
 * bytes, a table of contents and a footer with a checksum of the whole
 * file (the idea of git's chunk-format files, gitformat-chunk, with the
 * table at the end as in Parquet and zip so a writer can stream).
 *
 * All integers little-endian. A file of SIZE bytes:
 *
 *   header, at offset 0
 *   OFFSET SIZE MEANING
 *        0    8 magic, 8 ASCII bytes naming the file kind ("PROFDSYM", ...)
 *        8    4 version of that file kind
 *       12    4 reserved, 0
 *
 *   chunk data: from offset 16, the stored bytes of each chunk, in any order
 *
 *   table of contents, at table_offset: nchunks entries of 40 bytes
 *   OFFSET SIZE MEANING
 *        0    4 chunk id, 4 ASCII bytes ("STRS", "PAGE", ...)
 *        4    1 codec: 0 = stored as is, 1 = one zstd frame
 *        5    3 reserved, 0
 *        8    4 CRC-32 (zlib) of the stored bytes
 *       12    4 reserved, 0
 *       16    8 offset of the stored bytes in the file (>= 16)
 *       24    8 stored length
 *       32    8 raw length (after decompression; == stored length for codec 0)
 *
 *   footer, the last 16 bytes (at SIZE - 16)
 *   OFFSET SIZE MEANING
 *        0    8 table_offset
 *        8    4 nchunks, 1 .. STORE_CHUNKFILE_MAX_CHUNKS
 *       12    4 CRC-32 (zlib) of bytes 0 .. SIZE-5 (everything but itself)
 *
 * A valid file: magic as expected, a version the reader knows, reserved
 * bytes 0, the footer CRC matches, the table lies between the header and
 * the footer, every chunk lies between the header and the table, chunk
 * ids are unique, each chunk's CRC matches and a zstd chunk decompresses
 * to exactly its raw length. A reader ignores chunk ids it does not know
 * (that is how a later version adds data without a version bump).
 *
 * Writers write to a new file (the caller names it inside a temporary
 * directory), fsync it and close it; nothing is ever modified in place.
 * Not thread-safe per object; readers use pread, so one open reader may
 * serve several threads when each brings its own decompression context.
 */
#ifndef PROF_STORE_CHUNKFILE_H
#define PROF_STORE_CHUNKFILE_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"

#define STORE_CHUNKFILE_HDR	   16u
#define STORE_CHUNKFILE_ENTRY	   40u
#define STORE_CHUNKFILE_FOOTER	   16u
#define STORE_CHUNKFILE_MAX_CHUNKS 64u

/* On-disk codec values: frozen. */
enum store_chunkfile_codec {
	STORE_CHUNKFILE_RAW = 0,
	STORE_CHUNKFILE_ZSTD = 1,
};

/** struct store_chunkfile_entry - one table entry, in host byte order. */
struct store_chunkfile_entry {
	char id[5]; /* NUL-terminated */
	uint8_t codec;
	uint32_t crc;
	uint64_t offset, stored_len, raw_len;
};

/** struct store_chunkfile_writer - a file being written; see store_chunkfile_create. */
struct store_chunkfile_writer {
	int fd;
	char *path;
	uint64_t off;	 /* bytes written so far (buffered included) */
	uint32_t crc;	 /* CRC of bytes [0, off) */
	struct buf out;	 /* write buffer */
	struct buf ztmp; /* compression output */
	struct store_chunkfile_entry ents[STORE_CHUNKFILE_MAX_CHUNKS];
	uint32_t nents;
	int zlevel;
	void *cctx; /* ZSTD_CCtx * */
	int err;    /* sticky: first failure */
	bool region_open;
	uint32_t region_crc; /* CRC of the open region's bytes */
};

/**
 * store_chunkfile_create() - create @path (which must not exist) with @magic (8
 * bytes) and @version. @zlevel is the zstd level for STORE_CHUNKFILE_ZSTD
 * chunks. On error nothing needs releasing and @path is removed.
 */
int store_chunkfile_create(struct store_chunkfile_writer *w, const char *path, const char *magic,
			   uint32_t version, int zlevel, struct prof_err *err);

/**
 * store_chunkfile_add() - append a chunk @id (4 ASCII bytes) holding @n bytes,
 * compressed with zstd when @codec says so (stored as is when that is not
 * smaller). Errors are sticky: once a call failed, later ones and
 * store_chunkfile_finish return the same code.
 */
int store_chunkfile_add(struct store_chunkfile_writer *w, const char *id,
			enum store_chunkfile_codec codec, const void *data, size_t n,
			struct prof_err *err);

/**
 * store_chunkfile_frame() - append @n bytes as a free-standing frame inside a
 * chunk that the caller opens with store_chunkfile_region_begin and closes with
 * store_chunkfile_region_end: compressed with zstd when @codec says so and that
 * is smaller. Fills the frame's file offset, stored length, codec and CRC
 * of the stored bytes. For files whose chunk is a sequence of frames
 * addressed by another chunk (the samples file).
 */
int store_chunkfile_frame(struct store_chunkfile_writer *w, enum store_chunkfile_codec codec,
			  const void *data, size_t n, uint64_t *off, uint32_t *stored,
			  uint8_t *used_codec, uint32_t *crc, struct prof_err *err);
int store_chunkfile_region_begin(struct store_chunkfile_writer *w, const char *id, uint64_t *off);
int store_chunkfile_region_end(struct store_chunkfile_writer *w, const char *id, uint64_t begin,
			       struct prof_err *err);

/**
 * store_chunkfile_finish() - write the table and the footer, fsync and close.
 * The writer is released whatever the outcome; on error @path is removed.
 */
int store_chunkfile_finish(struct store_chunkfile_writer *w, struct prof_err *err);

/** store_chunkfile_abort() - close and remove the file; the writer is released. */
void store_chunkfile_abort(struct store_chunkfile_writer *w);

/** struct store_chunkfile - an open file, its table checked. */
struct store_chunkfile {
	int fd;
	char *path;
	uint64_t size;
	uint32_t version;
	struct store_chunkfile_entry ents[STORE_CHUNKFILE_MAX_CHUNKS];
	uint32_t nents;
};

/**
 * store_chunkfile_open() - open @path, check the header (@magic, version <=
 * @max_version), the footer and the table (ranges, unique ids). With
 * @verify it also reads the whole file and checks the footer CRC and
 * every chunk's CRC. Errors: -errno; -PROF_EFORMAT for a foreign file or
 * a newer version; -PROF_ECORRUPT with err->offset the byte that is
 * wrong, and @err naming the file. On error @f needs no release.
 */
int store_chunkfile_open(struct store_chunkfile *f, const char *path, const char *magic,
			 uint32_t max_version, bool verify, struct prof_err *err);

void store_chunkfile_close(struct store_chunkfile *f);

/** store_chunkfile_find() - the entry with @id, or NULL. Lent from @f. */
const struct store_chunkfile_entry *store_chunkfile_find(const struct store_chunkfile *f,
							 const char *id);

/**
 * store_chunkfile_read() - the raw bytes of chunk @e into @out (replacing its
 * content): reads, checks the CRC, decompresses. A chunk whose raw length
 * is over @max_raw is refused (-PROF_ETOOBIG) before allocating.
 * -PROF_ECORRUPT with the chunk's offset when the CRC or the frame is bad.
 */
int store_chunkfile_read(const struct store_chunkfile *f, const struct store_chunkfile_entry *e,
			 size_t max_raw, struct buf *out, struct prof_err *err);

/**
 * store_chunkfile_read_frame() - the raw bytes of one frame (see
 * store_chunkfile_frame) into @dst (@raw_len bytes): pread into @scratch, CRC,
 * decompress with @dctx (a ZSTD_DCtx *, the caller's). Errors as above,
 * with the frame's offset.
 */
int store_chunkfile_read_frame(const struct store_chunkfile *f, uint64_t off, uint32_t stored,
			       uint32_t raw_len, uint8_t codec, uint32_t crc, void *dctx,
			       struct buf *scratch, void *dst, struct prof_err *err);

/**
 * store_chunkfile_verify() - check the footer CRC over the whole file and each
 * chunk's CRC and frame (decompressing zstd chunks to check their
 * length). 0 or -PROF_ECORRUPT naming the offset.
 */
int store_chunkfile_verify(const struct store_chunkfile *f, struct prof_err *err);

/**
 * store_chunkfile_crc32() - CRC-32 exactly as zlib's crc32(@crc, @p, @n)
 * (0 to start; chains with zlib), of any length: the checksum of block
 * chunks and of the WAL's headers and records. Computed by ISA-L
 * (crc32_gzip_refl, PCLMULQDQ where the CPU has it). Thread-safe.
 */
uint32_t store_chunkfile_crc32(uint32_t crc, const void *p, size_t n);

#endif
