/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse_maint.c - the ClickHouse backend's maintenance: retention.
 *
 * ClickHouse 18.16 has no TTL clause, so retention is profd's: samples
 * (and the tables partitioned like it) are partitioned by (dataset, day),
 * and a thread of the backend drops, every maint_interval_ns, the day
 * partitions of its dataset that lie wholly before now - retention. A
 * partition is named by the text system.parts gives for it
 * ("('dataset','2023-11-14')"), which is ClickHouse's own literal of the
 * partition key and so what ALTER TABLE ... DROP PARTITION takes. The
 * dictionary tables (series, stacks, ...) are not partitioned and stay:
 * they are small next to samples, and rows of a dropped day that name
 * them are gone, so scans no longer read them.
 */
#include "base/compat.h"
#include "store/clickhouse_int.h"

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"

#include <errno.h>
#include <string.h>
#include <time.h>

/* The tables partitioned by (dataset, day). */
static const char *const ch_partitioned[] = { "samples", "samples_hour" };

/* The partitions of @table due for retention, as ClickHouse names them, into @ans (RowBinary). */
static int due_partitions(struct ch *c, const char *table, int64_t cutoff_ns, struct buf *ans,
			  struct prof_err *err)
{
	struct buf sql = BUF_INIT, prefix = BUF_INIT;

	/* "('dataset','": the start of a partition of this dataset */
	PROF_ASSERT(buf_addf(&prefix, "(%s,'", c->ds) == 0);
	PROF_ASSERT(buf_addstr(&sql, "SELECT DISTINCT partition FROM ") == 0);
	if (c->cluster)
		PROF_ASSERT(buf_addf(&sql, "cluster('%s', system, parts)", c->cluster) == 0);
	else
		PROF_ASSERT(buf_addstr(&sql, "system.parts") == 0);
	PROF_ASSERT(buf_addf(&sql, " WHERE database = '%s' AND table = '%s%s' AND active AND ",
			     c->db, table, c->cluster ? "_local" : "") == 0);
	PROF_ASSERT(buf_addstr(&sql, "startsWith(partition, ") == 0);
	sql_str(&sql, prefix.p, prefix.len);
	PROF_ASSERT(buf_addf(&sql,
			     ") AND substring(partition, %zu, 10) < toString(toDate(intDiv(%lld, "
			     "1000000000))) ORDER BY partition FORMAT RowBinary",
			     prefix.len + 1, (long long)PROF_MAX(cutoff_ns, (int64_t)0)) == 0);
	buf_release(&prefix);
	return store_ch_sql(c, &sql, ans, err);
}

int store_ch_retention(struct ch *c, int64_t now_ns, uint32_t *dropped, struct prof_err *err)
{
	int64_t cutoff = now_ns - c->retention_ns;
	int rc = 0;

	if (dropped)
		*dropped = 0;
	if (c->retention_ns <= 0 || cutoff <= 0)
		return 0;
	for (size_t t = 0; t < PROF_ARRAY_SIZE(ch_partitioned) && !rc; t++) {
		const char *table = ch_partitioned[t];
		struct buf ans = BUF_INIT;
		struct rd r;

		rc = due_partitions(c, table, cutoff, &ans, err);
		if (rc)
			break;
		r = (struct rd){ (const unsigned char *)ans.p,
				 (const unsigned char *)ans.p + ans.len, false };
		while (!rc && rd_more(&r)) {
			size_t n;
			const char *part = rd_str(&r, &n);
			struct buf sql = BUF_INIT;

			if (r.bad || !n || part[0] != '(' || memchr(part, ';', n)) {
				rc = prof_err_set(err, -EIO, -1,
						  "%s: malformed answer (partitions)", c->desc);
				break;
			}
			PROF_ASSERT(buf_addf(&sql, "ALTER TABLE %s.%s%s", c->db, table,
					     c->cluster ? "_local" : "") == 0);
			if (c->cluster)
				PROF_ASSERT(buf_addf(&sql, " ON CLUSTER %s", c->cluster) == 0);
			PROF_ASSERT(buf_addf(&sql, " DROP PARTITION %.*s", (int)n, part) == 0);
			rc = store_ch_sql(c, &sql, NULL, err);
			if (rc)
				break;
			log_info("store %s: retention drops partition %.*s of %s", c->desc, (int)n,
				 part, table);
			if (dropped && !strcmp(table, "samples"))
				(*dropped)++;
		}
		buf_release(&ans);
	}
	return rc;
}

static void *maint_main(void *arg)
{
	struct ch *c = arg;

	pthread_mutex_lock(&c->mu);
	while (!c->stopping) {
		struct prof_err err;
		struct timespec until;
		uint32_t n = 0;
		int rc;

		pthread_mutex_unlock(&c->mu);
		prof_err_init(&err);
		rc = store_ch_retention(c, prof_now_ns(), &n, &err);
		if (rc)
			log_error("store %s: retention: %s", c->desc,
				  err.msg[0] ? err.msg : prof_strerror(rc));
		pthread_mutex_lock(&c->mu);
		c->partitions_dropped += n;
		c->retention_failures += rc != 0;
		int64_t wake = prof_now_ns() + c->maint_interval_ns;

		until.tv_sec = (time_t)(wake / 1000000000);
		until.tv_nsec = (long)(wake % 1000000000);
		while (!c->stopping &&
		       pthread_cond_timedwait(&c->cond, &c->mu, &until) != ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

int store_ch_maint_start(struct ch *c, struct prof_err *err)
{
	int rc;

	if (c->retention_ns <= 0)
		return 0;
	rc = pthread_create(&c->thread, NULL, maint_main, c);
	if (rc)
		return prof_err_set(err, -rc, -1, "%s: cannot start the maintenance thread: %s",
				    c->desc, strerror(rc));
	c->thread_running = true;
	return 0;
}

void store_ch_maint_stop(struct ch *c)
{
	if (!c->thread_running)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->mu);
	pthread_join(c->thread, NULL);
	c->thread_running = false;
}

void store_ch_stats(void *ctx, struct store_stats *st)
{
	struct ch *c = ctx;

	pthread_mutex_lock(&c->mu);
	st->partitions_dropped = c->partitions_dropped;
	st->retention_failures = c->retention_failures;
	pthread_mutex_unlock(&c->mu);
}
