/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h - the server's own counters, served as Prometheus text
 * (exposition format 0.0.4) by GET /metrics:
 *
 *   profd_http_requests_total{route,code}          requests answered
 *   profd_http_request_bytes_total{route}          request body bytes read
 *   profd_http_inflight                            requests being handled
 *   profd_ingest_inflight                          ingest requests being handled
 *   profd_ingest_requests_total{dataset,source}    ingest requests stored (2xx)
 *   profd_ingest_samples_total{dataset,result}     rows received/accepted/dropped
 *   profd_ingest_rejects_total{reason}             refused requests by reason
 *   profd_ingest_duration_seconds{le}              histogram, accepted ingest requests
 *   profd_tls_client_refused_total{listener}       refused client certificates (--tls-client-ca)
 *   profd_wal_fsync_total{dataset}, profd_wal_appends_total{dataset},
 *   profd_wal_bytes{dataset}, profd_head_series{dataset}, profd_head_rows{dataset}
 *                                                  from the stores, at scrape time
 *
 * Label values are escaped as the format asks. The counter tables are
 * capped (SERVER_METRICS_MAX_SERIES distinct label sets per family; more
 * are folded into one set with the value "other"), so a client inventing
 * routes or reasons cannot grow them without bound. Thread-safe.
 */
#ifndef PROF_SERVER_METRICS_H
#define PROF_SERVER_METRICS_H

#include "base/buf.h"
#include "base/compat.h"

#define SERVER_METRICS_MAX_SERIES 512

struct server_metrics;

/** server_metrics_new() - empty counters; free with server_metrics_free. */
struct server_metrics *server_metrics_new(void);
/** server_metrics_free() - NULL ok. */
void server_metrics_free(struct server_metrics *m);

/**
 * server_metrics_inc() - add @v to counter @family with the label set
 * @labels, Prometheus syntax without braces (`route="/ingest",code="200"`;
 * values already escaped with server_metrics_escape when they come from
 * clients). @family must be a static string.
 */
void server_metrics_inc(struct server_metrics *m, const char *family, const char *labels,
			uint64_t v);

/** server_metrics_observe_ingest() - one accepted ingest that took @ns nanoseconds. */
void server_metrics_observe_ingest(struct server_metrics *m, int64_t ns);

/** server_metrics_escape() - @s as a label value (\\, \", \n escaped) into @out (truncated). */
void server_metrics_escape(const char *s, char *out, size_t outsz);

/**
 * server_metrics_write() - append every counter to @out in the text
 * format, with HELP and TYPE lines (the caller appends the gauges it
 * owns). Returns 0 or -PROF_ETOOBIG (@out's cap).
 */
int server_metrics_write(struct server_metrics *m, struct buf *out);

#endif
