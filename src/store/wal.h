/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wal.h - the write-ahead log: every ingest request is appended here and
 * made durable (fdatasync) before the server acknowledges it, so a crash
 * loses nothing that was acknowledged. At start the log is replayed to
 * rebuild the in-memory head.
 *
 * The log is a sequence of segment files DIR/NNNNNNNN.wal (8 decimal
 * digits, increasing). Appends go to the newest segment. When the store
 * flushes its head to a block it first *rotates* (seals the current
 * segment and starts the next one, so the head's content is exactly the
 * sealed segments), writes the block, and then *checkpoints*: records in
 * DIR/checkpoint that segments <= N are in blocks and deletes them.
 * Replay skips (and deletes) segments <= max(checkpoint, the WAL range of
 * the store's blocks), so every record is either replayed or in a block,
 * never both.
 *
 * The byte layout is specified in docs/storage-format.md; in short, a
 * segment is a 16-byte file header followed by records, all integers
 * little-endian:
 *
 *   file header
 *   OFFSET SIZE MEANING
 *        0    8 magic "PROFDWAL"
 *        8    4 format version, 2 (1 is read too: an older build's, never
 *               appended to, holds only type 1 records)
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
 *   checkpoint (DIR/checkpoint, 32 bytes, written to a temporary name,
 *   fsynced and renamed)
 *   OFFSET SIZE MEANING
 *        0    8 magic "PROFDCKP"
 *        8    4 version, 1
 *       12    4 reserved, 0
 *       16    8 covered: segments <= this are in blocks
 *       24    4 reserved, 0
 *       28    4 CRC-32 of bytes 0..27
 *
 * Torn tail: a crash can leave a partial last record. Replay stops at a
 * record that is incomplete at the end of a segment; the file is
 * truncated there (so the next append starts on a record boundary) and
 * the number of bytes dropped, the offset and the reason are logged.
 *
 * Damage: when a *complete* record fails its CRC (a flipped bit, not a
 * torn write), replay searches forward for the next valid record
 * (plausible header and matching CRC) and goes on from there; the bytes
 * skipped are copied to DIR/NNNNNNNN.wal.corrupt-<offset> and logged
 * with the file and offset, so only the damaged record is lost. When no
 * valid record follows, the tail is saved the same way and truncated.
 * A segment with a damaged middle is never appended to again.
 *
 * Group commit: appenders queue their record; one of them (the leader)
 * writes every queued record with one pwritev and covers them all with
 * one fdatasync, while records queued meanwhile wait for the next leader
 * (the classic scheme of PostgreSQL's and MySQL's logs). No appender
 * returns before the fdatasync covering its record. A failed write is
 * rolled back with ftruncate and fails the records of that write; a
 * failed fdatasync poisons the log (every later append fails with the
 * same error) because the kernel may have dropped the dirty pages (the
 * 2018 "fsyncgate" lesson).
 *
 * Thread-safety: store_wal_append and the rotations may be called from
 * any number of threads; open/close are single-threaded.
 */
#ifndef PROF_STORE_WAL_H
#define PROF_STORE_WAL_H

#include "base/compat.h"
#include "base/err.h"

#define STORE_WAL_MAGIC	       "PROFDWAL"
#define STORE_WAL_VERSION      2u /* written; 1 and 2 are read */
#define STORE_WAL_VERSION_MIN  1u
#define STORE_WAL_FILE_HDR     16u
#define STORE_WAL_REC_HDR      20u
#define STORE_WAL_MAX_RECORD   (512u << 20)   /* 512 MiB: far above the ingest body limit */
#define STORE_WAL_SEGMENT_NAME "00000001.wal" /* the first segment of a new log */
#define STORE_WAL_CKPT_MAGIC   "PROFDCKP"
#define STORE_WAL_CKPT_SIZE    32u

/* On-disk record types: frozen values, never renumbered. */
enum store_wal_type {
	STORE_WAL_OTLP = 1,  /* an OTLP ExportProfilesServiceRequest, protobuf, uncompressed */
	STORE_WAL_PPROF = 2, /* pushed pprof profiles and ingest's edits (wal_pprof.h); version 2 */
};

struct store_wal;

/** struct store_wal_record - one record handed to the replay callback (lent for the call). */
struct store_wal_record {
	uint8_t type;
	int64_t time_ns;     /* ingest time written with the record */
	const void *payload; /* @len bytes */
	size_t len;
	uint64_t offset;  /* of the record header in the segment */
	uint64_t segment; /* sequence number of the segment */
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
	uint64_t sync_ns;	/* time spent in those calls, ns */
	uint64_t sync_ns_max;	/* the longest one, ns */
	uint64_t size;		/* current segment size in bytes */
	uint64_t corrupt_bytes; /* damaged bytes skipped inside segments at open */
	uint64_t segment;	/* sequence number of the current segment */
	uint64_t covered;	/* segments <= this are in blocks (checkpoint) */
	uint64_t segments;	/* segment files present */
	uint64_t bytes;		/* bytes of all segment files */
};

/**
 * store_wal_open() - open (creating as needed) the log in directory @dir,
 * replay it through @fn (may be NULL) and leave it ready for appends.
 * On success *@out is the caller's, closed with store_wal_close.
 * Errors: -errno for I/O failures; -PROF_EFORMAT when a segment is not
 * a profd WAL or has an unknown version (the file is left untouched).
 */
int store_wal_open(const char *dir, store_wal_replay_fn fn, void *arg, struct store_wal **out,
		   struct prof_err *err);

/**
 * store_wal_open_at() - store_wal_open for a store whose blocks hold
 * segments <= @covered: those (and those <= the checkpoint) are deleted,
 * not replayed. With @read_only nothing on disk changes (no truncation,
 * no deletion, no new segment) and appends fail with -EROFS: the replay
 * sees what a real open would replay.
 */
int store_wal_open_at(const char *dir, uint64_t covered, store_wal_replay_fn fn, void *arg,
		      bool read_only, struct store_wal **out, struct prof_err *err);

/**
 * store_wal_rotate() - seal the current segment and start the next one;
 * *@sealed gets the sealed segment's number. Every record appended
 * before the call is in a segment <= *@sealed, every later one after.
 * Errors: -errno (the log stays on the old segment). Safe with appends in
 * flight; the store rotates with ingest excluded when it must know which
 * records are in which segment (a flush), and by size otherwise.
 */
int store_wal_rotate(struct store_wal *w, uint64_t *sealed, struct prof_err *err);

/**
 * store_wal_open_deferred() - open the log in @dir for appends at once,
 * without reading it: segments <= @covered (or the checkpoint) are
 * deleted, the others are left for store_wal_replay_pending and appends
 * go to a new segment after them. *@first / *@last: the segments left to
 * replay (both 0 when none). Errors as store_wal_open. Not read-only.
 */
int store_wal_open_deferred(const char *dir, uint64_t covered, struct store_wal **out,
			    uint64_t *first, uint64_t *last, struct prof_err *err);

/**
 * store_wal_replay_pending() - replay the segments store_wal_open_deferred
 * left, oldest first, through @fn, with the repairs of a normal open
 * (torn tail truncated, damaged spans skipped and saved); safe while
 * appends run (they are in later segments). Stops between records once
 * *@stop (atomic; may be NULL) is true. 0 or -errno / -PROF_EFORMAT
 * with @err naming the file. Call once, from one thread.
 */
int store_wal_replay_pending(struct store_wal *w, store_wal_replay_fn fn, void *arg,
			     const bool *stop, struct prof_err *err);

/**
 * store_wal_pending_progress() - bytes of the segments left by
 * store_wal_open_deferred that replay has read (*@done) and in all
 * (*@total). Thread-safe.
 */
void store_wal_pending_progress(struct store_wal *w, uint64_t *done, uint64_t *total);

/**
 * store_wal_rotate_if_over() - rotate when the current segment holds more
 * than @max_bytes, so segments stay small enough for replay to flush
 * between them. Safe with appends in flight (an appender waiting for its
 * sync is satisfied by the rotation's). Errors as store_wal_rotate.
 */
int store_wal_rotate_if_over(struct store_wal *w, uint64_t max_bytes, struct prof_err *err);

/**
 * store_wal_checkpoint() - segments <= @covered are safely in blocks:
 * write DIR/checkpoint durably, then delete those segments. @covered must
 * be below the current segment. Errors: -errno; a failed deletion is
 * only logged (replay skips covered segments anyway).
 */
int store_wal_checkpoint(struct store_wal *w, uint64_t covered, struct prof_err *err);

/** enum store_wal_issue - how bad a finding of store_wal_verify is. */
enum store_wal_issue {
	STORE_WAL_NOTE,	   /* expected leftovers (covered segments, saved .corrupt files) */
	STORE_WAL_WARNING, /* a torn tail: never acknowledged, dropped at the next open */
	STORE_WAL_ERROR,   /* damage: a record that was acknowledged is unreadable */
};

/**
 * store_wal_verify() - check the log in @dir without changing anything:
 * checkpoint, segment headers, every record's length, flags and CRC; each
 * intact record of a segment > covered is handed to @fn (may be NULL;
 * a non-zero return is reported as an error at that record). Findings go
 * to @report with the file and byte offset (-1 when none). @covered as in
 * store_wal_open_at. *@nrecords gets the records read. Returns the number
 * of errors, or a negative errno when @dir cannot be listed.
 */
int store_wal_verify(const char *dir, uint64_t covered, store_wal_replay_fn fn, void *arg,
		     void (*report)(void *arg, enum store_wal_issue lvl, const char *path,
				    int64_t offset, const char *msg),
		     uint64_t *nrecords);

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
