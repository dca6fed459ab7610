/* SPDX-License-Identifier: Apache-2.0 */
/*
 * route.h - internals shared by the server's files: the server object,
 * the request and reply a handler works on, and the handlers.
 *
 * A handler reads a struct server_req (body complete and within limits)
 * and fills a struct server_reply; http.c turns it into an MHD response.
 * Handlers never talk to MHD except to read query arguments and headers
 * (server_arg, server_header), so they stay testable and small.
 */
#ifndef PROF_SERVER_ROUTE_H
#define PROF_SERVER_ROUTE_H

#include "base/buf.h"
#include "base/compat.h"
#include "server/config.h"
#include "server/http.h"
#include "server/metrics.h"
#include "server/tenant.h"

#include <pthread.h>
#include <sys/socket.h>

struct MHD_Connection;
struct MHD_Daemon;
struct server_grpc;
struct server_tls;
struct scrape_mgr;
struct scrape_watch;
struct scrape_selfprof;
struct server_local;

struct server {
	struct MHD_Daemon *daemon;
	struct MHD_Daemon *otlp_daemon;	       /* --otlp-http-listen, or NULL */
	struct server_grpc *grpc;	       /* --grpc-listen, or NULL */
	struct server_conns *conns;	       /* every client connection (conns.h) */
	struct server_tls *tls;		       /* --tls-cert for every listener (tls.h), or NULL */
	int64_t header_timeout_ns;	       /* the guard's, for the gRPC TLS handshake */
	struct server_workers *ingest_workers; /* handlers of ingest routes (workers.h) */
	struct server_workers *query_workers;  /* handlers of the other slow routes */
	struct server_conf own_conf;	       /* used when the caller passed no config */
	const struct server_conf *conf;	       /* datasets, tokens, limits */
	struct server_tenants tenants;	       /* the open datasets (server_req_store) */
	struct server_limits limits;	       /* conf->limits with the defaults filled in */
	struct server_metrics *metrics;
	struct symbolizer *sym;
	const struct sym_srcroot *src_root; /* cfg->src_root */
	char *ui_dir;
	char *host;
	unsigned port, otlp_port, grpc_port;
	int inflight;		/* requests being handled (atomic), drained by server_stop */
	int ingest_inflight;	/* ingest requests admitted (atomic), see pipeline.h */
	bool stopping;		/* set by server_stop: /readyz answers 503 */
	int64_t replay_wait_ns; /* a query waits this long for a WAL replay (server_config) */
	pthread_t flusher;	/* flushes usage counters every 10 s */
	pthread_mutex_t flush_lock;
	pthread_cond_t flush_cond;
	bool flusher_started;
	/* Scraping and self-profiling (targets.c), or NULL. */
	struct scrape_mgr *scrape;
	struct scrape_watch *watch;
	struct scrape_selfprof *selfprof;
	/* Routes of higher layers (server_config.hooks, lent). */
	const struct server_hook *hooks;
	size_t nhooks;
};

struct server_req {
	struct server *srv;
	struct MHD_Connection *conn;
	const char *method, *url;
	const char *body; /* @body_len bytes, NUL-terminated; NULL when empty */
	size_t body_len;
	/* Set by server_req_store (and the ingest handlers) for the access log. */
	const char *dataset, *token;
	/* Ingest routes: the authorization http.c checked before reading the body. */
	const struct server_auth *auth;
	uint64_t samples; /* rows stored, for the access log */
	/* POST /api/v1/debuginfo/<id>: the body, streamed to a file (debuginfo.c). */
	struct server_upload *upload;
	/* An in-process request (server_local_get, local.h): @conn is NULL and
	 * server_arg / server_header read from here. */
	const struct server_local *local;
};

/** struct server_reply - filled by a handler. @body is sent as is. */
struct server_reply {
	unsigned status;
	const char *content_type; /* static string */
	const char *allow;	  /* Allow header for 405, static, or NULL */
	const char *cache;	  /* Cache-Control value, static, or NULL */
	struct buf body;
	char reason[1024];	      /* for the access log of an error reply */
	int fd;			      /* a file to send instead of @body (taken), or -1 */
	uint64_t fd_size;	      /* its size */
	unsigned retry_after;	      /* seconds for a Retry-After header, 0 = none */
	const char *www_authenticate; /* WWW-Authenticate value (401), static, or NULL */
	bool replaying; /* the dataset's WAL is still replaying: the answer may miss samples */
};

/**
 * server_resolve_listen() - split "host:port", "[v6]:port" or ":port"
 * and resolve it into @ss; *@host_out (malloc'd) gets the host part.
 * -EINVAL with @err naming the address when it is not one.
 */
int server_resolve_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sslen,
			  char **host_out, struct prof_err *err);
/** server_addr_is_loopback() - 127.0.0.0/8, ::1 or ::ffff:127.x.y.z? */
bool server_addr_is_loopback(const struct sockaddr_storage *ss);

/** server_arg() - query argument @name, decoded, or NULL. Lent for the request. */
const char *server_arg(const struct server_req *rq, const char *name);
/**
 * server_arg_once() - *@out = server_arg(@rq, @name) for a parameter that
 * takes one value: 0, or -EINVAL when @name is given more than once (the
 * handler answers 400 rather than use one of them silently).
 */
int server_arg_once(const struct server_req *rq, const char *name, const char **out);
/**
 * server_args_foreach() - call @fn for every query argument of @rq, in
 * order (values decoded; NULL for a key without '='). Returns the count.
 */
size_t server_args_foreach(const struct server_req *rq,
			   int (*fn)(void *arg, const char *key, const char *value), void *arg);
/** server_header() - request header @name (case-insensitive) or NULL. Lent. */
const char *server_header(const struct server_req *rq, const char *name);

/**
 * server_text_add() - append the @n bytes of @s (any bytes: messages quote
 * request input) to @b as text/plain; charset=utf-8 that is valid UTF-8
 * and safe on a terminal: C0 controls and DEL as \xNN, C1 controls as
 * \u00NN (Go's strconv.Quote), each byte that does not start a valid
 * UTF-8 sequence (base/utf8.h) as U+FFFD, as Go's encoding/json does; the
 * rest as it is. 0, or -PROF_ETOOBIG with what fitted appended.
 */
int server_text_add(struct buf *b, const char *s, size_t n);
/**
 * server_reply_text() - @status with a text/plain body, the message
 * written by server_text_add (a trailing newline is added).
 */
void server_reply_text(struct server_reply *rp, unsigned status, const char *fmt, ...)
	PROF_PRINTF(3, 4);
/** server_reply_json_error() - @status with {"error":"<message>"}. */
void server_reply_json_error(struct server_reply *rp, unsigned status, const char *fmt, ...)
	PROF_PRINTF(3, 4);

/**
 * server_req_store() - the store of the dataset request @rq may use with
 * permission @perm (enum server_perm), after checking its token
 * (tenant.h: Authorization, X-Profd-Dataset or ?dataset=). NULL after
 * replying 400/401/403/404 in @rp (JSON error naming why). Query handlers
 * call it first: a query never sees another dataset's data.
 */
struct store *server_req_store(struct server_req *rq, unsigned perm, struct server_reply *rp);

/**
 * server_req_auth() - the same check, filling @auth (tenant.h) instead
 * of replying; records dataset and token name in @rq for the access log.
 */
void server_req_auth(struct server_req *rq, unsigned perm, struct server_auth *auth);

struct server_ingest_out;
/**
 * server_ingest_reply() - the reply of an ingest route for @out: OTLP
 * routes answer in the request's content type (google.rpc.Status or the
 * ExportProfilesServiceResponse, protobuf or JSON), Pyroscope routes in
 * text; Retry-After on 429/503, WWW-Authenticate on 401.
 */
void server_ingest_reply(struct server_req *rq, struct server_reply *rp,
			 const struct server_ingest_out *out);

/* Handlers (one file each: ingest.c, api.c, ui.c, pyroscope.c, ops.c). */
void server_handle_otlp(struct server_req *rq, struct server_reply *rp);
void server_handle_pyroscope(struct server_req *rq, struct server_reply *rp);
void server_handle_ingest_pprof(struct server_req *rq, struct server_reply *rp);
/**
 * server_handle_push() - POST /push.v1.PusherService/Push, Pyroscope's
 * Connect push API (Grafana Alloy's pyroscope.write): a PushRequest of
 * series of gzipped pprof profiles (format/push.h), protobuf or JSON.
 */
void server_handle_push(struct server_req *rq, struct server_reply *rp);
void server_handle_usage(struct server_req *rq, struct server_reply *rp);
void server_handle_metrics(struct server_req *rq, struct server_reply *rp);
void server_handle_readyz(struct server_req *rq, struct server_reply *rp);
void server_handle_healthz(struct server_req *rq, struct server_reply *rp);
void server_handle_profile_types(struct server_req *rq, struct server_reply *rp);
void server_handle_flamegraph(struct server_req *rq, struct server_reply *rp);
/**
 * server_handle_query() - every query view (api.c): /api/v1/flamegraph,
 * table, series, sandwich, diff, flamechart, labels, labels/NAME/values,
 * export/pprof, export/folded, export/svg (query/request.h).
 */
void server_handle_query(struct server_req *rq, struct server_reply *rp);
/** server_query_view() - the query view an URL names, or NULL (static string). */
const char *server_query_view(const char *url);
void server_handle_ui(struct server_req *rq, struct server_reply *rp);

/*
 * Scraping (targets.c): server_scrape_start starts the scrape manager,
 * file watcher and self profiler cfg asks for, storing through the ingest
 * pipeline (0 or an error with @err); server_scrape_stop stops them (call
 * it before the stores close); GET /api/v1/targets answers their health.
 */
int server_scrape_start(struct server *srv, const struct server_config *cfg, struct prof_err *err);
void server_scrape_stop(struct server *srv);
void server_handle_targets(struct server_req *rq, struct server_reply *rp);

/*
 * Debuginfo (debuginfo.c). Uploads stream: http.c calls
 * server_debuginfo_early once the headers are in (auth, build ID, size
 * check against SERVER_DEBUGINFO_MAX_UPLOAD instead of max_body; true =
 * replied in @rp; else *@up, when set, takes the body), then
 * server_upload_write per body chunk, server_handle_debuginfo with
 * rq->upload at the end, and server_upload_free when the connection ends.
 */
#define SERVER_DEBUGINFO_MAX_UPLOAD ((uint64_t)4 << 30) /* bytes per debuginfo upload */
struct server_upload;
bool server_debuginfo_early(struct server *srv, struct MHD_Connection *c, const char *method,
			    const char *url, struct server_upload **up, struct server_reply *rp);
void server_upload_write(struct server_upload *up, const char *data, size_t n);
void server_upload_free(struct server_upload *up);
void server_handle_debuginfo(struct server_req *rq, struct server_reply *rp);
void server_handle_debuginfod(struct server_req *rq, struct server_reply *rp);

#endif
