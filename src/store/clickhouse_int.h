/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse_int.h - what the ClickHouse backend's three files share
 * (clickhouse.c: URL, HTTP calls, schema, open/close; clickhouse_ingest.c:
 * content ids and RowBinary inserts; clickhouse_scan.c: pushed-down scans
 * rebuilt into a head): the connection, the RowBinary writer and reader,
 * SQL literals. Not part of the store's interface (store/clickhouse.h).
 *
 * RowBinary (ClickHouse's HTTP interface documentation, checked against
 * 18.16.1): UInt8/UInt32/UInt64/Int64 little-endian fixed width, String
 * as LEB128 length then bytes, Array as LEB128 count then the elements.
 */
#ifndef PROFD_STORE_CLICKHOUSE_INT_H
#define PROFD_STORE_CLICKHOUSE_INT_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "store/backend.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Fixed seed of content ids: the same content gives the same id in every
 * profd process (unlike model/stackkey.h's per-process keys). */
#define CH_ID_SEED 0x70726f6664636831ULL /* "profdch1" */

/* Sample times are kept to this resolution: the embedded store's block
 * default (store_options.ts_resolution_ns), so both give one answer. */
#define CH_TS_RESOLUTION_NS 1000000

/* Answers above this are refused (a scan of a huge range fails clearly). */
#define CH_MAX_ANSWER (4ULL << 30)

struct ch {
	char *base;  /* http://HOST:PORT/?database=DB */
	char *root;  /* http://HOST:PORT/? (for CREATE DATABASE) */
	char *db;    /* DB, [A-Za-z0-9_] */
	char *ds;    /* dataset, as an SQL literal ('...') */
	char *dsraw; /* dataset as given */
	char *user, *password;
	char *desc;    /* clickhouse://HOST:PORT/DB, no credentials */
	char *cluster; /* ?cluster=NAME: Replicated tables, Distributed ones over them */
	long timeout_ms;
	/* Maintenance (clickhouse_maint.c): retention by day partitions. */
	int64_t retention_ns;	   /* drop the days wholly older than this (0 = keep) */
	int64_t maint_interval_ns; /* how often the thread looks */
	pthread_t thread;
	bool thread_running, stopping; /* stopping under mu */
	pthread_mutex_t mu;
	pthread_cond_t cond;
	uint64_t partitions_dropped, retention_failures; /* under mu */
};

/* --- SQL text ----------------------------------------------------------- */

/* Append @s as a quoted SQL string literal (backslash and quote escaped). */
static inline void sql_str(struct buf *b, const char *s, size_t n)
{
	PROF_ASSERT(buf_add(b, "'", 1) == 0);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '\\' || c == '\'')
			PROF_ASSERT(buf_add(b, "\\", 1) == 0);
		if (c == 0) {
			PROF_ASSERT(buf_add(b, "\\0", 2) == 0);
			continue;
		}
		PROF_ASSERT(buf_add(b, &c, 1) == 0);
	}
	PROF_ASSERT(buf_add(b, "'", 1) == 0);
}

/* --- RowBinary ---------------------------------------------------------- */

static inline void rb_u8(struct buf *b, uint8_t v)
{
	PROF_ASSERT(buf_add(b, &v, 1) == 0);
}

static inline void rb_u64(struct buf *b, uint64_t v)
{
	unsigned char x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	PROF_ASSERT(buf_add(b, x, 8) == 0);
}

static inline void rb_u32(struct buf *b, uint32_t v)
{
	unsigned char x[4];

	for (int i = 0; i < 4; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	PROF_ASSERT(buf_add(b, x, 4) == 0);
}

static inline void rb_varint(struct buf *b, uint64_t v)
{
	unsigned char x[10];
	size_t n = 0;

	do {
		x[n] = (unsigned char)(v & 0x7f);
		v >>= 7;
		if (v)
			x[n] |= 0x80;
		n++;
	} while (v);
	PROF_ASSERT(buf_add(b, x, n) == 0);
}

static inline void rb_str(struct buf *b, const char *s, size_t n)
{
	rb_varint(b, n);
	PROF_ASSERT(buf_add(b, s, n) == 0);
}

static inline void rb_cstr(struct buf *b, const char *s)
{
	rb_str(b, s ? s : "", s ? strlen(s) : 0);
}

/* A reader over an answer; @bad is sticky: once set, every read gives 0. */
struct rd {
	const unsigned char *p, *end;
	bool bad;
};

static inline bool rd_more(const struct rd *r)
{
	return !r->bad && r->p < r->end;
}

static inline uint64_t rd_u64(struct rd *r)
{
	uint64_t v = 0;

	if (r->bad || r->end - r->p < 8) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < 8; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += 8;
	return v;
}

static inline uint8_t rd_u8(struct rd *r)
{
	if (r->bad || r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static inline uint64_t rd_varint(struct rd *r)
{
	uint64_t v = 0;

	for (int shift = 0; shift < 64; shift += 7) {
		uint8_t c = rd_u8(r);

		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

/* A string of the answer, lent (not NUL-terminated): *@n bytes. */
static inline const char *rd_str(struct rd *r, size_t *n)
{
	uint64_t len = rd_varint(r);
	const char *s;

	if (r->bad || len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		*n = 0;
		return "";
	}
	s = (const char *)r->p;
	r->p += len;
	*n = (size_t)len;
	return s;
}

/* An array's element count, bounded by the bytes left (each element takes one at least). */
static inline size_t rd_count(struct rd *r)
{
	uint64_t n = rd_varint(r);

	if (r->bad || n > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		return 0;
	}
	return (size_t)n;
}

/*
 * store_ch_call() - run @sql in ClickHouse. With @data (@n bytes) the SQL
 * goes in the URL and @data is the body (an INSERT's rows), else the SQL
 * is the body. The answer goes to @out (may be NULL), which the caller
 * releases. Errors: -ECONNREFUSED (cannot connect), -ETIMEDOUT, -EIO (any
 * other transport failure, or an answer other than 200: @err has the
 * start of ClickHouse's message), -PROF_ETOOBIG (answer over
 * CH_MAX_ANSWER).
 */
int store_ch_call(struct ch *c, const char *sql, const void *data, size_t n, struct buf *out,
		  struct prof_err *err);

/* store_ch_sql() - store_ch_call with the SQL built in @sql (released
 * here); with a cluster, IN (SELECT becomes GLOBAL IN. Errors as
 * store_ch_call. */
int store_ch_sql(struct ch *c, struct buf *sql, struct buf *out, struct prof_err *err);

/*
 * store_ch_retention() - drop the day partitions of the dataset (samples
 * and every table partitioned like it) whose whole day, in the server's
 * time zone as its partition key (toDate) reads it, is older than
 * @now_ns - c->retention_ns: the rows a day partition holds are then all
 * older than that, as the embedded store deletes a block whose newest row
 * is. With a cluster the parts are listed on every node (cluster()) and
 * dropped ON CLUSTER. *@dropped (may be NULL) gets how many partitions
 * of samples went. No-op without a retention. Errors as store_ch_call.
 */
int store_ch_retention(struct ch *c, int64_t now_ns, uint32_t *dropped, struct prof_err *err);

/* store_ch_maint_start() - the thread that runs store_ch_retention at
 * once and then every c->maint_interval_ns (not started without a
 * retention); store_ch_maint_stop() ends it (no-op when not running).
 * -errno when the thread cannot start. */
int store_ch_maint_start(struct ch *c, struct prof_err *err);
void store_ch_maint_stop(struct ch *c);

/* store_ch_stats() - the backend's counters into @st (struct store_backend.stats). */
void store_ch_stats(void *ctx, struct store_stats *st);

/* The backend's operations (store/backend.h's struct store_backend), on
 * a struct ch: ingest in clickhouse_ingest.c, scan and types in
 * clickhouse_scan.c. */
int store_ch_ingest(void *ctx, const struct model_profile *const *p, size_t n, int64_t now_ns,
		    struct prof_err *err);
int store_ch_scan(void *ctx, const struct store_query *q, const struct store_link_filter *lf,
		  const struct store_visitor *v, struct store_scan_stats *st, struct prof_err *err);
int store_ch_types(void *ctx, int64_t from_ns, int64_t to_ns,
		   int (*fn)(void *arg, const char *type), void *arg);

#endif
