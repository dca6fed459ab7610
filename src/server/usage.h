/* SPDX-License-Identifier: Apache-2.0 */
/*
 * usage.h - usage metering of one dataset: sample rows received, accepted
 * and dropped (by signal control) per profile type per UTC hour, the
 * basis for per-sample pricing (docs/ingest.md, "Signal control").
 *
 * A "sample" here is one stored row: a (sample, value column) pair with
 * a non-zero value, what store_head_add stores; so "accepted" counts
 * exactly what a query can see.
 *
 * Persistence: the counters live in memory and are written to one small
 * JSON file per dataset (DATA/<dataset>.usage.json, beside the dataset's
 * store directory, not in it) by server_usage_flush: a temporary file,
 * fsync, rename (buf_write_file), so a crash leaves the old or the new
 * file, never a torn one. The server flushes every 10 s when something
 * changed and at shutdown, so a crash loses at most the last 10 s of
 * counts (not of data: the samples themselves are in the WAL). Hours
 * older than SERVER_USAGE_KEEP_HOURS are forgotten at flush, and at most
 * SERVER_USAGE_MAX_TYPES profile types are counted per hour (the rest go
 * to the type "other"), so the file and the memory stay bounded.
 *
 *   {"version":1,"dataset":"prod","hours":[
 *     {"hour":1732910400000,"type":"process_cpu:cpu:nanoseconds:cpu:nanoseconds",
 *      "received":1200,"accepted":1000,"dropped":200}, ...]}
 *
 * Thread-safe (one mutex per dataset).
 */
#ifndef PROF_SERVER_USAGE_H
#define PROF_SERVER_USAGE_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"

#define SERVER_USAGE_KEEP_HOURS (24 * 400) /* a little over a year */
#define SERVER_USAGE_MAX_TYPES	256	   /* per hour */
#define SERVER_USAGE_HOUR_MS	(3600 * 1000LL)

struct server_usage;

/** struct server_usage_row - one (hour, type) cell. */
struct server_usage_row {
	int64_t hour_ms; /* start of the UTC hour, unix ms */
	char *type;	 /* profile type id */
	uint64_t received, accepted, dropped;
};

/**
 * server_usage_open() - counters for dataset @name kept in @path (read if
 * it exists; a file that does not parse is renamed to PATH.bad-<unix s>
 * and counting starts afresh, with a warning). *@out is the caller's.
 * Errors: -errno when @path exists but cannot be read.
 */
int server_usage_open(const char *path, const char *name, struct server_usage **out,
		      struct prof_err *err);

/** server_usage_close() - flush (if changed) and free; NULL ok. */
void server_usage_close(struct server_usage *u);

/**
 * server_usage_add() - count @received, @accepted, @dropped rows of type
 * @type at time @ts_ms (unix ms; the hour is derived). Thread-safe.
 */
void server_usage_add(struct server_usage *u, const char *type, int64_t ts_ms, uint64_t received,
		      uint64_t accepted, uint64_t dropped);

/**
 * server_usage_flush() - write the counters to the file if they changed
 * since the last flush. Returns 0 or -errno (the counters stay in memory
 * and the next flush retries).
 */
int server_usage_flush(struct server_usage *u);

/**
 * server_usage_json() - append the rows with @from_ms <= hour start <=
 * @to_ms to @out as a JSON array of {"hour": unix ms, "time": ISO 8601,
 * "type", "received", "accepted", "dropped"}, sorted by hour then type;
 * *@totals (3 counters, may be NULL) receives their sums. Returns 0 or
 * -PROF_ETOOBIG (@out's cap).
 */
int server_usage_json(struct server_usage *u, int64_t from_ms, int64_t to_ms, struct buf *out,
		      uint64_t totals[3]);

#endif
