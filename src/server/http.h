/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h - the profd HTTP server. libmicrohttpd serves the sockets from
 * a few threads each waiting in epoll(7) (http_threads), so thousands of
 * idle or slow connections cost no thread; a request whose handler may
 * block (ingest: the WAL's group commit; queries; debug info) is
 * suspended and handed to a worker pool (workers.h: ingest and query
 * pools, so slow queries never hold up ingest), and resumed with the
 * answer; /healthz, /readyz, /metrics and the explorer's files are
 * answered on the socket thread. The connection guard (conns.h) admits
 * connections per client address and in all, and closes those past an
 * absolute header deadline, an idle deadline, or an upload that stalls.
 * Routes:
 *
 *   POST /v1development/profiles   OTLP/HTTP ingest, protobuf or JSON, gzip or none (ingest.c)
 *   POST /ingest, /pyroscope/ingest Pyroscope-compatible ingest (pyroscope.c)
 *   POST /api/v1/ingest/pprof      pprof with labels as query parameters (pyroscope.c)
 *   GET  /api/v1/profile-types     JSON array of profile type ids
 *   GET  /api/v1/targets           scrape target health (targets.c, scrape/scrape.h)
 *   GET  /api/v1/flamegraph        flame graph JSON (query/flamegraph.h)
 *   GET  /api/v1/usage             usage per dataset, type and hour (ops.c)
 *   GET  /metrics                  Prometheus text (metrics.h)
 *   POST/GET/HEAD /api/v1/debuginfo/<buildid>  debug info upload/lookup (debuginfo.c;
 *                                  uploads stream to disk, own cap, not max_body)
 *   GET  /buildid/<buildid>/{debuginfo,executable}  debuginfod protocol (debuginfo.c)
 *   GET  /api/v1/health/symbols    stack health per binary (query/symhealth.h)
 *   GET  /healthz                  "ok" while the process serves
 *   GET  /readyz                   200 when ready to ingest, 503 while stopping
 *   GET  /, /<file>                the explorer, static files from the UI dir
 *   (hooks)                        routes of higher layers (server_hook): POST /mcp
 * and, with --grpc-listen, OTLP/gRPC (grpc.h).
 *
 * Datasets and tokens (tenant.h) come from the config (config.h); the
 * server opens one store per dataset under @data_dir. Without a config
 * file the server refuses to listen on anything but loopback; with one
 * but without TLS a non-loopback listener is logged as a warning. TLS
 * (tls.h, server_config.tls_*): libmicrohttpd's own, on both HTTP
 * listeners; with a client CA each request but /healthz and /readyz is
 * refused (403) unless its connection presented a certificate the CA
 * signed.
 *
 * Limits (config.h server_limits): a request body above max_body gets
 * 413 (before it is read when Content-Length says so); a gzip body
 * inflating past max_decompressed bytes or max_ratio times its size gets
 * 413 naming the limit (a "gzip bomb" costs at most that much memory);
 * more than max_inflight ingest requests at once get 429 with
 * Retry-After before their body is read. OTLP/HTTP: docs/formats.md "OTLP transport".
 *
 * Calling sequence: server_start -> (serve until a signal) -> server_stop,
 * which refuses new ingest (503), waits for requests in flight, flushes
 * the usage counters and closes the stores.
 */
#ifndef PROF_SERVER_HTTP_H
#define PROF_SERVER_HTTP_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "server/conns.h"
#include "store/store.h"
#include "symbolize/srcroot.h"
#include "symbolize/symbolizer.h"

#define SERVER_DEFAULT_LISTEN	      "127.0.0.1:4040"
#define SERVER_DEFAULT_MAX_BODY	      ((size_t)64 << 20) /* OTLP's recommended 64 MiB */
#define SERVER_DEFAULT_QUERY_WORKERS  16
#define SERVER_DEFAULT_REPLAY_WAIT_NS (30 * 1000000000LL)
#define SERVER_DEFAULT_MAX_SAMPLES    ((size_t)32 << 20)

struct server_conf;
struct scrape_config;

struct server_config {
	const char *listen;	 /* "host:port", "[v6]:port" or ":port"; port 0 = any */
	const char *otlp_listen; /* a second HTTP listener (OTLP's :4318), or NULL */
	const char *grpc_listen; /* OTLP/gRPC listener (:4317), or NULL */
	/* TLS on every listener (tls.h: PEM files), or NULL for plain HTTP and
	 * h2c; @tls_client_ca (optional) = clients must present a certificate
	 * it signed (HTTP: 403 otherwise, /healthz and /readyz excepted; gRPC:
	 * the handshake fails). */
	const char *tls_cert, *tls_key, *tls_client_ca;
	const char *ui_dir;   /* explorer files; may be missing (then 404 with a hint) */
	const char *data_dir; /* one store per dataset in DATA_DIR/<name>/; NULL = "data" */
	/* the datasets' rows in ClickHouse (store/clickhouse.h URL) instead of
	 * DATA_DIR/<name>/, or NULL; DATA_DIR still holds usage and debuginfo */
	const char *storage;
	const struct server_conf *conf; /* lent, outlives the server; NULL = no file */
	size_t max_body;		/* bytes of request body as sent; 0 = config / default */
	size_t max_inflated;		/* bytes after gzip inflation; 0 = config / default */
	size_t max_samples;		/* per ingest request; 0 = config / default */
	/* Connections (conns.h; 0 fields = defaults): admission per client
	 * address and in all, deadlines, upload progress. */
	struct server_conn_limits conn_limits;
	unsigned http_threads;	/* socket threads of each HTTP listener; 0 = CPUs (>= 2) */
	unsigned query_workers; /* threads for queries and other slow routes; 0 = default */
	int64_t replay_wait_ns; /* a query waits this long for a WAL replay; 0 = default */
	/* Scraping (scrape/config.h; lent, outlives the server; NULL = none) and
	 * self-profiling (scrape/selfprof.h) into the default dataset. */
	const struct scrape_config *scrape;
	bool self_profile;
	unsigned self_profile_hz; /* 0 = default */
	/* Source files the source view may show (lent, outlives the server; NULL = none). */
	const struct sym_srcroot *src_root;
	/* Routes served by a higher layer (lent, outlive the server; see server_hook). */
	const struct server_hook *hooks;
	size_t nhooks;
};

struct server;
struct server_req;
struct server_reply;

/**
 * struct server_hook - a route served by a layer above the server, such
 * as the MCP endpoint (src/mcp, registered by the CLI: the server must not
 * include the headers of layers above it). @handle runs like the server's
 * own handlers (route.h): with the body complete and within max_body, any
 * method (it answers 405 itself), the access log and metrics done by
 * http.c. It may call server_local_get for the query API. @path is matched
 * exactly; hooks are looked up before the explorer's files.
 */
struct server_hook {
	const char *path;
	void (*handle)(void *ctx, struct server_req *rq, struct server_reply *rp);
	void *ctx;
};

/**
 * server_local_get() - answer GET @path_and_query ("/api/v1/table?type=..",
 * percent-encoded as on the wire) in this process, through the same
 * handler a client would reach, as a client sending @authorization (the
 * Authorization header value, or NULL) and @dataset (X-Profd-Dataset, or
 * NULL) would get it: same token rules, parameter checks and JSON. Only
 * the query API is reachable (/api/v1/profile-types, the query views of
 * docs/api.md, labels); other paths answer 404. The answer's body is
 * appended to @out (up to out->max: -PROF_ETOOBIG beyond) and its HTTP
 * status stored in *@status (400 with {"error":..} for bad parameters,
 * 401/403 for the token, ...). Returns 0 when an answer was produced,
 * -EINVAL for a malformed @path_and_query (local.h). Thread-safe, like
 * the handlers; call it while the server runs (from a hook).
 */
int server_local_get(struct server *srv, const char *path_and_query, const char *authorization,
		     const char *dataset, struct buf *out, unsigned *status);

/**
 * server_start() - open the datasets of cfg->conf under cfg->data_dir,
 * bind and start serving, with @sym for query-time symbolization (may be
 * NULL; not owned). *@out is the caller's, stopped with server_stop.
 * Errors: -EINVAL for a bad listen address, -EPERM for a non-loopback
 * address without a config file, -EADDRINUSE / -errno when a socket
 * cannot be bound, the errors of server_tls_new for the TLS files (and
 * -PROF_EUNSUPPORTED when libmicrohttpd lacks TLS), the errors of
 * store_open (-EBUSY: a dataset is in use by another process); @err says
 * which. A non-loopback listener without TLS is logged as a warning.
 */
int server_start(const struct server_config *cfg, struct symbolizer *sym, struct server **out,
		 struct prof_err *err);

/** server_port() - the bound TCP port (useful with port 0). */
unsigned server_port(const struct server *s);
/** server_otlp_port() - the port of --otlp-http-listen, 0 without. */
unsigned server_otlp_port(const struct server *s);
/** server_grpc_listen_port() - the port of --grpc-listen, 0 without. */
unsigned server_grpc_listen_port(const struct server *s);

/** server_host() - the host part of the listen address as configured. Lent. */
const char *server_host(const struct server *s);

/** server_stop() - stop accepting, wait for requests in flight, free; NULL ok. */
void server_stop(struct server *s);

#endif
