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
#include "server/http.h"

struct MHD_Connection;
struct MHD_Daemon;

struct server {
	struct MHD_Daemon *daemon;
	struct store *st;
	struct symbolizer *sym;
	char *ui_dir;
	char *host;
	unsigned port;
	size_t max_body, max_inflated, max_samples;
	int inflight; /* requests being handled (atomic), drained by server_stop */
};

struct server_req {
	struct server *srv;
	struct MHD_Connection *conn;
	const char *method, *url;
	const char *body; /* @body_len bytes, NUL-terminated; NULL when empty */
	size_t body_len;
};

/** struct server_reply - filled by a handler. @body is sent as is. */
struct server_reply {
	unsigned status;
	const char *content_type; /* static string */
	const char *allow;	  /* Allow header for 405, static, or NULL */
	const char *cache;	  /* Cache-Control value, static, or NULL */
	struct buf body;
	char reason[1024]; /* for the access log of an error reply */
	int fd;		   /* a file to send instead of @body (taken), or -1 */
	uint64_t fd_size;  /* its size */
};

/** server_arg() - query argument @name, decoded, or NULL. Lent for the request. */
const char *server_arg(const struct server_req *rq, const char *name);
/** server_header() - request header @name (case-insensitive) or NULL. Lent. */
const char *server_header(const struct server_req *rq, const char *name);

/** server_reply_text() - @status with a text/plain body (a trailing newline is added). */
void server_reply_text(struct server_reply *rp, unsigned status, const char *fmt, ...)
	PROF_PRINTF(3, 4);
/** server_reply_json_error() - @status with {"error":"<message>"}. */
void server_reply_json_error(struct server_reply *rp, unsigned status, const char *fmt, ...)
	PROF_PRINTF(3, 4);

/* Handlers (one file each: ingest.c, api.c, ui.c). */
void server_handle_otlp(struct server_req *rq, struct server_reply *rp);
void server_handle_healthz(struct server_req *rq, struct server_reply *rp);
void server_handle_profile_types(struct server_req *rq, struct server_reply *rp);
void server_handle_flamegraph(struct server_req *rq, struct server_reply *rp);
void server_handle_ui(struct server_req *rq, struct server_reply *rp);

#endif
