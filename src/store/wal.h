/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wal.h - the write-ahead log: every ingest request is appended here and
 * made durable (fdatasync) before the server acknowledges it, so a crash
 * loses nothing that was acknowledged. At start the log is replayed to
 * rebuild the in-memory head.
 *
 * The byte layout is specified in docs/storage-format.md; in short, a
 * segment file DIR/00000001.wal is a 16-byte file header followed by
 * records, all integers little-endian:
 *
 *   file header
 *   OFFSET SIZE MEANING
 *        0    8 magic "PROFDWAL"
 *        8    4 format version, 1
 *       12    4 CRC-32 (zlib/IEEE 802.3) of bytes 0..11
 *
 *   record
 *   OFFSET SIZE MEANING
 *        0    4 payload length N, 1 .. STORE_WAL_MAX_RECORD
 *        4    4 CRC-32 (zlib/IEEE 802.3) of bytes 8 .. 20+N-1
 *        8    1 record type (enum store_wal_type)
 *        9    1 flags, 0 (a reader refuses other values)
 *       10    2 reserved, 0
 *       12    8 ingest time, unix ns (signed)
 *       20    N payload
 *
 * Torn tail: a crash can leave a partial last record. Replay stops at the
 * first record that is incomplete, has an impossible length or fails its
 * CRC; the file is truncated there (so the next append starts on a record
 * boundary) and the number of bytes dropped, the offset and the reason
 * are logged. When a *complete* record fails its CRC (a flipped bit, not
 * a torn write) the dropped bytes are first copied to
 * DIR/00000001.wal.corrupt-<offset> so nothing is silently destroyed.
 *
 * Group commit: appenders write their record under a mutex, then wait
 * until some thread's fdatasync covers their end offset; one fdatasync
 * serves every record written before it started (the classic scheme of
 * PostgreSQL's and MySQL's logs). A failed write is rolled back with
 * ftruncate; a failed fdatasync poisons the log (every later append
 * fails with the same error) because the kernel may have dropped the
 * dirty pages (the 2018 "fsyncgate" lesson).
 *
 * Thread-safety: store_wal_append may be called from any number of
 * threads; open/close are single-threaded.
 */
#ifndef PROF_STORE_WAL_H
#define PROF_STORE_WAL_H

#include "base/compat.h"
#include "base/err.h"

#define STORE_WAL_MAGIC	       "PROFDWAL"
#define STORE_WAL_VERSION      1u
#define STORE_WAL_FILE_HDR     16u
#define STORE_WAL_REC_HDR      20u
#define STORE_WAL_MAX_RECORD   (512u << 20) /* 512 MiB: far above the ingest body limit */
#define STORE_WAL_SEGMENT_NAME "00000001.wal"

/* On-disk record types: frozen values, never renumbered. */
enum store_wal_type {
	STORE_WAL_OTLP = 1, /* an OTLP ExportProfilesServiceRequest, protobuf, uncompressed */
};

struct store_wal;

/** struct store_wal_record - one record handed to the replay callback (lent for the call). */
struct store_wal_record {
	uint8_t type;
	int64_t time_ns;     /* ingest time written with the record */
	const void *payload; /* @len bytes */
	size_t len;
	uint64_t offset; /* of the record header in the segment */
};

/**
 * store_wal_replay_fn - called once per valid record, in log order.
 * A non-zero return is logged with the record offset and the record is
 * skipped (replay goes on): the record is intact on disk, so a later
 * version that understands it can still recover it.
 */
typedef int (*store_wal_replay_fn)(void *arg, const struct store_wal_record *rec,
				   struct prof_err *err);

/** struct store_wal_stats - what replay and appends did (for logs and tests). */
struct store_wal_stats {
	uint64_t replayed;	/* records handed to the callback */
	uint64_t skipped;	/* records the callback refused */
	uint64_t dropped_bytes; /* torn or corrupt tail removed at open */
	uint64_t appended;	/* records appended since open */
	uint64_t syncs;		/* fdatasync calls since open */
	uint64_t size;		/* segment size in bytes */
};

/**
 * store_wal_open() - open (creating as needed) the log in directory @dir,
 * replay it through @fn (may be NULL) and leave it ready for appends.
 * On success *@out is the caller's, closed with store_wal_close.
 * Errors: -errno for I/O failures; -PROF_EFORMAT when the segment is not
 * a profd WAL or has an unknown version (the file is left untouched).
 */
int store_wal_open(const char *dir, store_wal_replay_fn fn, void *arg, struct store_wal **out,
		   struct prof_err *err);

/**
 * store_wal_append() - append one record and return once it is durable
 * (fdatasync covered it). @len must be 1 .. STORE_WAL_MAX_RECORD.
 * Errors: -PROF_ETOOBIG for an oversized payload; -errno (e.g. -ENOSPC,
 * -EIO) when the write or the sync failed; after a failed sync every
 * later call returns that error. Thread-safe.
 */
int store_wal_append(struct store_wal *w, enum store_wal_type type, int64_t time_ns,
		     const void *payload, size_t len, struct prof_err *err);

/** store_wal_get_stats() - a snapshot of the counters. Thread-safe. */
void store_wal_get_stats(struct store_wal *w, struct store_wal_stats *st);

/** store_wal_close() - sync and close; NULL is allowed. */
void store_wal_close(struct store_wal *w);

#endif
