/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend.h - the storage seam: where a store keeps its rows.
 *
 * A struct store is the one interface the server, the query engine and
 * the CLI use (store.h): ingest (store_ingest_profiles/_otlp) and the
 * scans every view reads through (store_scan_ex, store_types). Its rows
 * live either in the embedded store (WAL, heads, blocks in a directory:
 * the default, no backend) or with a backend that this vtable names,
 * today ClickHouse (store/clickhouse.h). A backend store is a memory
 * store shell whose ingest and scans go to the backend: the checks of
 * ingest (check_profile: model_profile_validate, store_head_check) run
 * before the backend sees a profile, and a backend answers a scan with
 * the visitor calls of store.h (struct store_visitor), so views,
 * symbolization and the explorer cannot tell which one answered.
 * Maintenance (flush, compaction, retention commands) fails with -EROFS
 * on a backend store: the backend does its own (ClickHouse: a thread of
 * its own drops the day partitions retention is past).
 */
#ifndef PROF_STORE_BACKEND_H
#define PROF_STORE_BACKEND_H

#include "base/compat.h"
#include "base/err.h"
#include "store/store.h"

/**
 * struct store_backend - what a backend implements; every function may be
 * called from any number of threads at once.
 *
 * @ingest: store @p[@n] (checked profiles, each with samples), stamping
 * samples without a time with @now_ns; return 0 only once the backend has
 * acknowledged every row (the caller then acknowledges the client).
 * -ECONNREFUSED / -EIO / -ETIMEDOUT when the backend is away (the server
 * answers 503 with Retry-After).
 * @scan: store_scan_ex's contract (store.h), @lf NULL = no link filter.
 * @types: store_types's contract.
 * @stats: optional: add the backend's counters to @st (store_get_stats).
 * @close: release @ctx (called by store_close).
 */
struct store_backend {
	const char *name;
	int (*ingest)(void *ctx, const struct model_profile *const *p, size_t n, int64_t now_ns,
		      struct prof_err *err);
	int (*scan)(void *ctx, const struct store_query *q, const struct store_link_filter *lf,
		    const struct store_visitor *v, struct store_scan_stats *st,
		    struct prof_err *err);
	int (*types)(void *ctx, int64_t from_ns, int64_t to_ns,
		     int (*fn)(void *arg, const char *type), void *arg);
	void (*stats)(void *ctx, struct store_stats *st);
	void (*close)(void *ctx);
};

/**
 * store_open_backend() - a store whose rows are kept by @be; @ctx becomes
 * the store's (be->close(ctx) at store_close). @desc (copied) names it in
 * messages, e.g. "clickhouse://host:8123/db". Cannot fail.
 */
int store_open_backend(const struct store_backend *be, void *ctx, const char *desc,
		       struct store **out);

#endif
