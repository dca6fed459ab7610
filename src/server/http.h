/* SPDX-License-Identifier: Apache-2.0 */
/*
 * http.h - the profd HTTP server (libmicrohttpd, one thread per
 * connection up to a connection limit, so a request blocked in the WAL's
 * group commit never stalls other clients):
 *
 *   POST /v1development/profiles   OTLP/HTTP ingest (protobuf; gzip or none)
 *   GET  /api/v1/profile-types     JSON array of profile type ids
 *   GET  /api/v1/flamegraph        flame graph JSON (query/flamegraph.h)
 *   GET  /healthz                  "ok"
 *   GET  /, /<file>                the explorer, static files from the UI dir
 *
 * Limits: a request body above @max_body bytes gets 413 (before it is
 * read when Content-Length says so); a gzip body inflating past
 * @max_inflated bytes gets 413 naming the limit (a "gzip bomb" costs
 * at most that much memory). OTLP/HTTP spec: shared formats.md 1.2.
 *
 * Calling sequence: server_start -> (serve until a signal) -> server_stop,
 * which waits for requests in flight, then the caller closes the store.
 */
#ifndef PROF_SERVER_HTTP_H
#define PROF_SERVER_HTTP_H

#include "base/compat.h"
#include "base/err.h"
#include "store/store.h"
#include "symbolize/symbolizer.h"

#define SERVER_DEFAULT_LISTEN	   "127.0.0.1:4040"
#define SERVER_DEFAULT_MAX_BODY	   ((size_t)64 << 20) /* OTLP's recommended 64 MiB */
#define SERVER_DEFAULT_MAX_NODES   2048
#define SERVER_MAX_MAX_NODES	   200000
#define SERVER_DEFAULT_CONNECTIONS 256
#define SERVER_DEFAULT_MAX_SAMPLES ((size_t)32 << 20)

struct server_config {
	const char *listen;	  /* "host:port", "[v6]:port" or ":port"; port 0 = any */
	const char *ui_dir;	  /* explorer files; may be missing (then 404 with a hint) */
	size_t max_body;	  /* bytes of request body as sent; 0 = default */
	size_t max_inflated;	  /* bytes after gzip inflation; 0 = default (max_body) */
	size_t max_samples;	  /* per ingest request; 0 = default */
	unsigned max_connections; /* 0 = default */
};

struct server;

/**
 * server_start() - bind and start serving @st (not owned; must outlive
 * the server) with @sym for query-time symbolization (may be NULL; not
 * owned). *@out is the caller's, stopped with server_stop. Errors:
 * -EINVAL for a bad listen address, -EADDRINUSE / -errno when the
 * socket cannot be bound; @err says which.
 */
int server_start(const struct server_config *cfg, struct store *st, struct symbolizer *sym,
		 struct server **out, struct prof_err *err);

/** server_port() - the bound TCP port (useful with port 0). */
unsigned server_port(const struct server *s);

/** server_host() - the host part of the listen address as configured. Lent. */
const char *server_host(const struct server *s);

/** server_stop() - stop accepting, wait for requests in flight, free; NULL ok. */
void server_stop(struct server *s);

#endif
