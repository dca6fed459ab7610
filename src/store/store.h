/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.h - the profile store of one data directory: write-ahead log +
 * in-memory head (issue 2); immutable blocks, compaction and retention
 * come later (issue 5) behind this same interface.
 *
 * Directory layout (docs/storage-format.md):
 *   DIR/LOCK              flock()ed while a process has the store open
 *   DIR/wal/00000001.wal  the write-ahead log (store/wal.h)
 *
 * Calling sequence: store_open (replays the WAL into the head) ->
 * store_ingest_* from any number of threads, queries through
 * store_get_head -> store_close after the last ingest returned.
 */
#ifndef PROF_STORE_STORE_H
#define PROF_STORE_STORE_H

#include "base/compat.h"
#include "base/err.h"
#include "store/head.h"
#include "store/wal.h"

struct store;

/** struct store_ingest_result - what one ingest added. */
struct store_ingest_result {
	uint64_t profiles; /* model profiles (one per OTLP Profile) */
	uint64_t samples;  /* model samples */
};

/**
 * store_open() - open (creating as needed) the store in @dir and rebuild
 * the head from the WAL. *@out is the caller's, closed with store_close.
 * Errors: -EBUSY when another process holds DIR/LOCK; -errno for I/O;
 * -PROF_EFORMAT/-PROF_ECORRUPT when the WAL header is not ours (the files
 * are left untouched). @err names the file.
 */
int store_open(const char *dir, struct store **out, struct prof_err *err);

/** store_close() - flush and close; NULL is allowed. */
void store_close(struct store *s);

/**
 * store_ingest_otlp() - decode an OTLP ExportProfilesServiceRequest
 * (protobuf, already inflated, @n bytes), check it, append it to the WAL
 * and make it durable, then add it to the head. Returns only after the
 * fdatasync, so a 0 return may be acknowledged to the client. An empty
 * request succeeds without touching the log. Errors, with @err saying
 * what is wrong: -PROF_ECORRUPT / -PROF_EFORMAT for bad input (nothing is
 * stored); -PROF_ETOOBIG over @max_samples samples (0 = no cap); -errno
 * when the log could not be written (nothing acknowledged). Thread-safe.
 */
int store_ingest_otlp(struct store *s, const void *data, size_t n, size_t max_samples,
		      struct store_ingest_result *res, struct prof_err *err);

/** store_get_head() - the head, for queries (see head.h for locking). Lent. */
struct store_head *store_get_head(struct store *s);

/** store_get_wal() - the log, for stats. Lent. */
struct store_wal *store_get_wal(struct store *s);

#endif
