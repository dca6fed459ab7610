/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse.h - a store whose rows live in ClickHouse (store/backend.h),
 * spoken to over ClickHouse's HTTP interface with libcurl.
 *
 * Schema (version 2, created by profd in database DB; docs/clickhouse.md):
 *   profd_schema (version, applied_ns)             one row per migration
 *   samples   (dataset, series_id, ts, stack_id, attrs_id, value)
 *             MergeTree, PARTITION BY (dataset, day of ts),
 *             ORDER BY (dataset, series_id, ts, stack_id)
 *   samples_hour (dataset, series_id, hour, stack_id, states of sum,
 *             count, min/max ts, first row)   schema 2: AggregatingMergeTree
 *             fed by the materialized view samples_hour_mv, partitioned
 *             and ordered like samples by hour
 *   series    (dataset, series_id, type, names[], values[])
 *   stacks    (dataset, stack_id, locs[] leaf first)
 *   locations (dataset, loc_id, mapping_id, address, folded, frame_type,
 *              per line: function name, system name, file, start line,
 *              has function, line, column)
 *   mappings  (dataset, mapping_id, start, limit, offset, file, build id, flags)
 *   attrs     (dataset, attrs_id, names[], values[], link)
 * the last five ReplacingMergeTree ORDER BY (dataset, id): every id is a
 * content id (XXH3-64 with a fixed seed of what the row says, a stack's
 * chained from its parent's and its leaf location's), so every profd
 * server writes the same id for the same stack and a repeated row
 * collapses into one when ClickHouse merges. Series labels and
 * per-sample attribute sets are those the embedded head derives
 * (ingest goes through a head of its own first).
 *
 * Inserts are RowBinary, one INSERT per table per ingest request, the
 * dictionary tables before samples, so a stack a sample names is there
 * before the sample is. Scans push down the dataset, the time range, the
 * profile type and equality matchers on series labels, and for an
 * unfiltered totals scan the GROUP BY (series, stack) with sum(value)
 * (the range's whole hours from samples_hour, its partial hours from
 * samples), for a steps scan the GROUP BY (series, step);
 * the rows read are rebuilt into a head of the query's own and visited
 * as the embedded store visits a head.
 *
 * With ?cluster=NAME every table is a Replicated* table TABLE_local on
 * each node (ON CLUSTER) and a Distributed table TABLE over them,
 * sharded by the id; inserts are synchronous (insert_distributed_sync),
 * subqueries GLOBAL IN. Sample times are kept at 1 ms, as blocks keep
 * them.
 *
 * Versions: SQL kept to what ClickHouse 18.16 (Debian 12) accepts; it has
 * no TTL clause, so retention is profd's: a thread of the store drops the
 * dataset's day partitions older than the retention (ON CLUSTER with a
 * cluster).
 */
#ifndef PROF_STORE_CLICKHOUSE_H
#define PROF_STORE_CLICKHOUSE_H

#include "base/compat.h"
#include "base/err.h"
#include "store/store.h"

/** The schema version this profd writes and reads. */
#define STORE_CH_SCHEMA_VERSION 2

/**
 * store_ch_is_url() - does @s name a ClickHouse store ("clickhouse://...")?
 */
bool store_ch_is_url(const char *s);

/**
 * store_open_clickhouse() - a store for dataset @dataset in the ClickHouse
 * database that @url names:
 *   clickhouse://[USER[:PASSWORD]@]HOST:PORT/DB[?user=U&password=P&timeout_ms=N
 *   &cluster=NAME]
 * (HTTP interface, usually port 8123; DB of [A-Za-z0-9_]). Connects,
 * creates the database and tables when missing and checks the schema
 * version. Of @o (NULL = defaults) it uses retention_ns (> 0: a thread
 * drops the day partitions of samples wholly older than that, at once
 * and every maint_interval_ns; counted in store_get_stats'
 * partitions_dropped / retention_failures). *@out is closed with
 * store_close. Errors, with @err saying
 * which: -EINVAL for a URL it cannot read, -PROF_EUNSUPPORTED without
 * libcurl or for a schema newer than this profd, -ECONNREFUSED /
 * -ETIMEDOUT / -EIO when ClickHouse cannot be reached or refuses.
 */
int store_open_clickhouse(const char *url, const char *dataset, const struct store_options *o,
			  struct store **out, struct prof_err *err);

#endif
