// SPDX-License-Identifier: Apache-2.0
/*
 * ops.c - operations endpoints:
 *
 *   GET /metrics        Prometheus text (metrics.h) plus gauges read at
 *                       scrape time: requests in flight, and per dataset
 *                       the WAL (appends, fsyncs and their time, size) and
 *                       the head (series, rows). Open without tokens;
 *                       with tokens configured it needs a token with the
 *                       `metrics` permission (401 / 403 otherwise): it
 *                       names every dataset and its volumes, which a
 *                       tenant's ingest or query token must not see.
 *   GET /readyz         200 "ready" while ingest is accepted; 503 once
 *                       shutdown began (load balancers stop sending).
 *   GET /api/v1/usage?dataset=&from=&to=
 *                       samples received, accepted and dropped per dataset,
 *                       profile type and UTC hour (usage.h), for the
 *                       datasets the token may query (all without tokens,
 *                       the one named by dataset= / X-Profd-Dataset when
 *                       given). from/to: unix ms, "now", "now-<duration>";
 *                       default the last 24 hours.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "query/labels.h"
#include "server/conns.h"
#include "server/route.h"
#include "server/workers.h"

#include <pthread.h>

void server_handle_readyz(struct server_req *rq, struct server_reply *rp)
{
	rp->cache = "no-store";
	if (__atomic_load_n(&rq->srv->stopping, __ATOMIC_SEQ_CST)) {
		server_reply_text(rp, 503, "shutting down");
		rp->retry_after = rq->srv->limits.retry_after_s;
		return;
	}
	/* After a restart: ingest is taken at once, queries wait for the WAL's
	 * replay (X-Profd-Replay past --replay-query-wait). ?for=query: 503
	 * until every dataset is replayed, for a balancer of query traffic. */
	const char *purpose = server_arg(rq, "for");
	bool query = purpose && !strcmp(purpose, "query");
	bool replaying = false;

	rp->status = 200;
	rp->content_type = "text/plain; charset=utf-8";
	for (size_t i = 0; i < rq->srv->tenants.n; i++) {
		struct store_stats st;

		store_get_stats(rq->srv->tenants.ds[i].st, &st);
		if (!st.replaying)
			continue;
		if (!replaying)
			(void)buf_addstr(&rp->body,
					 query ? "not ready for queries: " : "ready for ingest; ");
		replaying = true;
		(void)buf_addf(&rp->body,
			       "replaying the WAL: dataset=%s %.0f%% (%" PRIu64 " of %" PRIu64
			       " bytes, %.1fs); ",
			       rq->srv->tenants.ds[i].name,
			       st.replay_total_bytes ? 100.0 * (double)st.replay_done_bytes /
							       (double)st.replay_total_bytes
						     : 0.0,
			       st.replay_done_bytes, st.replay_total_bytes,
			       (double)st.replay_ns / 1e9);
	}
	if (!replaying) {
		(void)buf_addstr(&rp->body, "ready\n");
		return;
	}
	(void)buf_addf(&rp->body, "queries wait up to %.0fs, then answer with what is replayed\n",
		       (double)rq->srv->replay_wait_ns / 1e9);
	if (query) {
		rp->status = 503;
		rp->retry_after = 1;
	}
}

static void gauge_head(struct buf *b, const char *name, const char *type, const char *help)
{
	(void)buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

#define OPS_TOP_LABELS	     10
#define OPS_LABELS_EVERY_NS  (60 * (int64_t)1000000000) /* recounted at most once a minute */
#define OPS_LABELS_DATASETS  64
#define OPS_LABELS_WINDOW_NS (3600 * (int64_t)1000000000)

/* The last count per dataset (by index), shared by every /metrics request. */
static struct ops_label_count {
	int64_t at_ns; /* 0 = never counted */
	size_t n;
	struct {
		char name[128];
		size_t values;
	} top[OPS_TOP_LABELS];
} ops_labels[OPS_LABELS_DATASETS];
static pthread_mutex_t ops_labels_lock = PTHREAD_MUTEX_INITIALIZER;

/* Count the values of every label of @st's series with data in the last hour; keep the top. */
static void ops_label_count(struct store *st, int64_t now, struct ops_label_count *c)
{
	struct query_strlist names = { 0 };

	c->n = 0;
	c->at_ns = now;
	if (query_labels_collect(st, NULL, NULL, 0, now - OPS_LABELS_WINDOW_NS, now, NULL, &names))
		return;
	for (size_t i = 0; i < names.n; i++) {
		struct query_strlist vals = { 0 };
		size_t k, nv;

		if (query_labels_collect(st, NULL, NULL, 0, now - OPS_LABELS_WINDOW_NS, now,
					 names.v[i], &vals))
			continue;
		nv = vals.n;
		query_strlist_release(&vals);
		/* Insert into the top list, largest first. */
		for (k = c->n; k > 0 && c->top[k - 1].values < nv; k--)
			if (k < OPS_TOP_LABELS)
				c->top[k] = c->top[k - 1];
		if (k < OPS_TOP_LABELS) {
			snprintf(c->top[k].name, sizeof(c->top[k].name), "%s", names.v[i]);
			c->top[k].values = nv;
			if (c->n < OPS_TOP_LABELS)
				c->n++;
		}
	}
	query_strlist_release(&names);
}

/*
 * profd_label_values{dataset,label}: the labels with the most distinct
 * values among each dataset's series of the last hour (the top
 * OPS_TOP_LABELS), so a label that explodes cardinality shows before the
 * series limit is hit. Recounted at most once a minute.
 */
static void ops_label_cardinality(struct buf *b, struct server *srv, int64_t now)
{
	char dsn[256], lb[256];

	gauge_head(b, "profd_label_values", "gauge",
		   "Distinct values of the labels with the most of them, per dataset, among "
		   "series with data in the last hour (top 10; recounted once a minute).");
	pthread_mutex_lock(&ops_labels_lock);
	for (size_t i = 0; i < srv->tenants.n && i < OPS_LABELS_DATASETS; i++) {
		struct ops_label_count *c = &ops_labels[i];

		if (!c->at_ns || now - c->at_ns >= OPS_LABELS_EVERY_NS || now < c->at_ns)
			ops_label_count(srv->tenants.ds[i].st, now, c);
		server_metrics_escape(srv->tenants.ds[i].name, dsn, sizeof(dsn));
		for (size_t k = 0; k < c->n; k++) {
			server_metrics_escape(c->top[k].name, lb, sizeof(lb));
			(void)buf_addf(b, "profd_label_values{dataset=\"%s\",label=\"%s\"} %zu\n",
				       dsn, lb, c->top[k].values);
		}
	}
	pthread_mutex_unlock(&ops_labels_lock);
}

void server_handle_metrics(struct server_req *rq, struct server_reply *rp)
{
	struct server *srv = rq->srv;
	struct buf *b = &rp->body;
	struct server_auth a;
	char dsn[160];

	/* With tokens: a token with the metrics permission (docs/ingest.md). */
	server_authorize_global(&srv->tenants, server_header(rq, "Authorization"),
				SERVER_PERM_METRICS, &a);
	rq->token = a.token;
	if (a.status) {
		if (a.status == 401)
			rp->www_authenticate = "Bearer realm=\"profd\"";
		server_reply_json_error(rp, a.status, "%s", a.msg);
		return;
	}
	(void)server_metrics_write(srv->metrics, b);
	gauge_head(b, "profd_http_inflight", "gauge", "HTTP requests being handled.");
	(void)buf_addf(b, "profd_http_inflight %d\n",
		       __atomic_load_n(&srv->inflight, __ATOMIC_SEQ_CST));
	if (srv->conns)
		server_conns_write_metrics(srv->conns, b);
	if (srv->ingest_workers)
		server_workers_write_metrics(srv->ingest_workers, b, true);
	if (srv->query_workers)
		server_workers_write_metrics(srv->query_workers, b, !srv->ingest_workers);
	gauge_head(b, "profd_ingest_inflight", "gauge",
		   "Ingest requests admitted and not yet answered (limit max_inflight).");
	(void)buf_addf(b, "profd_ingest_inflight %d\n",
		       __atomic_load_n(&srv->ingest_inflight, __ATOMIC_SEQ_CST));
	gauge_head(b, "profd_ingest_inflight_limit", "gauge", "The max_inflight limit.");
	(void)buf_addf(b, "profd_ingest_inflight_limit %u\n", srv->limits.max_inflight);

	static const struct {
		const char *name, *type, *help;
	} per_ds[] = {
		{ "profd_wal_appends_total", "counter", "WAL records appended since start." },
		{ "profd_wal_fsync_total", "counter", "WAL fdatasync calls since start." },
		{ "profd_wal_fsync_seconds_total", "counter",
		  "Time spent in WAL fdatasync since start (divide by profd_wal_fsync_total "
		  "for the mean latency)." },
		{ "profd_wal_fsync_seconds_max", "gauge",
		  "The longest WAL fdatasync since start." },
		{ "profd_wal_bytes", "gauge", "Size of the WAL segment." },
		{ "profd_head_series", "gauge", "Series in the in-memory head." },
		{ "profd_head_rows", "gauge", "Sample rows in the in-memory head." },
		{ "profd_head_bytes", "gauge",
		  "Memory of the in-memory heads (active and frozen; flushed at head_max_bytes)." },
		{ "profd_wal_total_bytes", "gauge",
		  "Bytes of all WAL segments not yet in blocks (what a restart replays)." },
		{ "profd_wal_segments", "gauge", "WAL segment files." },
		{ "profd_wal_oldest_age_seconds", "gauge",
		  "Age of the oldest WAL data not yet in a block (0 = none)." },
		{ "profd_replay_in_progress", "gauge",
		  "1 while the WAL's old segments are replayed into the head after a start." },
		{ "profd_replay_done_bytes", "gauge", "Bytes of those segments replayed." },
		{ "profd_replay_total_bytes", "gauge", "Bytes of those segments in all." },
		{ "profd_replay_seconds", "gauge", "Time the replay took (or has taken so far)." },
		{ "profd_retention_partitions_dropped_total", "counter",
		  "Day partitions of a ClickHouse store dropped by retention since start." },
		{ "profd_retention_failures_total", "counter",
		  "Retention rounds of a ClickHouse store that failed since start (logged)." },
	};
	struct store_stats *sts = xcalloc(srv->tenants.n + 1, sizeof(*sts));
	int64_t now = prof_now_ns();

	for (size_t i = 0; i < srv->tenants.n; i++)
		store_get_stats(srv->tenants.ds[i].st, &sts[i]); /* a consistent snapshot */
	for (size_t m = 0; m < PROF_ARRAY_SIZE(per_ds); m++) {
		gauge_head(b, per_ds[m].name, per_ds[m].type, per_ds[m].help);
		for (size_t i = 0; i < srv->tenants.n; i++) {
			const struct store_wal_stats *ws = &sts[i].wal;
			const struct store_head_stats *hs = &sts[i].head;
			const struct store_stats *st = &sts[i];
			double v = 0;

			switch (m) {
			case 0:
				v = (double)ws->appended;
				break;
			case 1:
				v = (double)ws->syncs;
				break;
			case 2:
				v = (double)ws->sync_ns / 1e9;
				break;
			case 3:
				v = (double)ws->sync_ns_max / 1e9;
				break;
			case 4:
				v = (double)ws->size;
				break;
			case 5:
				v = (double)hs->series;
				break;
			case 6:
				v = (double)hs->rows;
				break;
			case 7:
				v = (double)hs->bytes;
				break;
			case 8:
				v = (double)ws->bytes;
				break;
			case 9:
				v = (double)ws->segments;
				break;
			case 10:
				v = st->wal_oldest_ns ? (double)(now - st->wal_oldest_ns) / 1e9 : 0;
				break;
			case 11:
				v = st->replaying;
				break;
			case 12:
				v = (double)st->replay_done_bytes;
				break;
			case 13:
				v = (double)st->replay_total_bytes;
				break;
			case 14:
				v = (double)st->replay_ns / 1e9;
				break;
			case 15:
				v = (double)st->partitions_dropped;
				break;
			default:
				v = (double)st->retention_failures;
				break;
			}
			server_metrics_escape(srv->tenants.ds[i].name, dsn, sizeof(dsn));
			(void)buf_addf(b, "%s{dataset=\"%s\"} %.9g\n", per_ds[m].name, dsn, v);
		}
	}
	free(sts);
	gauge_head(b, "profd_active_series", "gauge",
		   "Active series per dataset (stored into within the last hour; limit "
		   "max_active_series).");
	for (size_t i = 0; i < srv->tenants.n; i++) {
		server_metrics_escape(srv->tenants.ds[i].name, dsn, sizeof(dsn));
		(void)buf_addf(b, "profd_active_series{dataset=\"%s\"} %zu\n", dsn,
			       server_series_count(srv->tenants.ds[i].series));
	}
	gauge_head(b, "profd_active_series_limit", "gauge", "The max_active_series limit.");
	(void)buf_addf(b, "profd_active_series_limit %zu\n", srv->limits.max_active_series);
	ops_label_cardinality(b, srv, now);
	rp->status = 200;
	rp->content_type = "text/plain; version=0.0.4; charset=utf-8";
	rp->cache = "no-store";
}

static bool usage_time(struct server_req *rq, struct server_reply *rp, const char *name,
		       int64_t now, int64_t *out)
{
	const char *v;

	if (server_arg_once(rq, name, &v)) {
		server_reply_json_error(rp, 400, "parameter '%s' given more than once", name);
		return false;
	}
	if (!v || !*v)
		return true;
	if (parse_time_ms(v, now, out)) {
		server_reply_json_error(rp, 400,
					"parameter '%s': expected unix milliseconds, 'now' or "
					"'now-<duration>' such as now-24h, got '%.64s'",
					name, v);
		return false;
	}
	return true;
}

void server_handle_usage(struct server_req *rq, struct server_reply *rp)
{
	struct server *srv = rq->srv;
	const char *want = server_header(rq, "X-Profd-Dataset");
	int64_t now = prof_now_ns() / 1000000, from = now - 24 * 3600 * 1000LL, to = now;
	struct server_auth auth;
	size_t shown = 0;

	if (!want || !*want)
		want = server_arg(rq, "dataset");
	if (!usage_time(rq, rp, "from", now, &from) || !usage_time(rq, rp, "to", now, &to))
		return;
	if (from > to) {
		server_reply_json_error(rp, 400, "parameter 'from' is after 'to'");
		return;
	}
	if (want && *want) {
		/* One dataset: the usual check, 401/403/404 as for queries. */
		if (!server_req_store(rq, SERVER_PERM_QUERY, rp))
			return;
	} else {
		/* Every dataset the token may query; 401 for a bad token. */
		server_req_auth(rq, SERVER_PERM_QUERY, &auth);
		if (auth.status == 401) {
			server_reply_json_error(rp, 401, "%s", auth.msg);
			rp->www_authenticate = "Bearer realm=\"profd\"";
			return;
		}
		rq->dataset = "*";
	}
	(void)buf_addf(&rp->body, "{\"from\":%lld,\"to\":%lld,\"datasets\":[", (long long)from,
		       (long long)to);
	for (size_t i = 0; i < srv->tenants.n; i++) {
		struct server_dataset *d = &srv->tenants.ds[i];
		uint64_t tot[3];

		if (want && *want ? strcmp(d->name, want)
				  : !server_may(&srv->tenants, server_header(rq, "Authorization"),
						d, SERVER_PERM_QUERY))
			continue;
		if (shown++)
			(void)buf_add(&rp->body, ",", 1);
		(void)buf_addstr(&rp->body, "{\"dataset\":");
		(void)buf_add_json_str(&rp->body, d->name, strlen(d->name));
		(void)buf_addstr(&rp->body, ",\"hours\":");
		(void)server_usage_json(d->usage, from, to, &rp->body, tot);
		(void)buf_addf(&rp->body,
			       ",\"total\":{\"received\":%" PRIu64 ",\"accepted\":%" PRIu64
			       ",\"dropped\":%" PRIu64 "}}",
			       tot[0], tot[1], tot[2]);
	}
	if (!shown && !(want && *want)) {
		buf_reset(&rp->body);
		server_reply_json_error(rp, 403, "token '%s' may not query any dataset",
					auth.token);
		return;
	}
	(void)buf_addstr(&rp->body, "]}\n");
	rp->status = 200;
	rp->content_type = "application/json";
	rp->cache = "no-store";
}
