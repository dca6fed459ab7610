// SPDX-License-Identifier: Apache-2.0
/*
 * endpoint.c - POST /mcp, MCP over streamable HTTP with an in-process
 * backend; see endpoint.h.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "mcp/endpoint.h"
#include "mcp/mcp.h"
#include "server/route.h"

struct local_ctx {
	struct server *srv;
	const char *authorization; /* the caller's, lent */
	const char *dataset;	   /* the authorized dataset's name */
};

static int local_get(void *ctx, const char *path_and_query, struct buf *out, int *status)
{
	struct local_ctx *l = ctx;
	unsigned st = 0;
	int rc = server_local_get(l->srv, path_and_query, l->authorization, l->dataset, out, &st);

	*status = (int)st;
	return rc;
}

/* Does the Origin header name the host of the Host header? (scheme://host[:port]) */
static bool same_origin(const char *origin, const char *host)
{
	const char *p = strstr(origin, "://");

	if (!p || !host)
		return false;
	p += 3;
	return !strcasecmp(p, host);
}

/* Does an Accept header allow a JSON answer? */
static bool accepts_json(const char *accept)
{
	return !accept || strstr(accept, "application/json") || strstr(accept, "*/*") ||
	       strstr(accept, "application/*");
}

void mcp_endpoint_handle(void *ctx, struct server_req *rq, struct server_reply *rp)
{
	const char *origin = server_header(rq, "Origin"), *host = server_header(rq, "Host");
	const char *ver = server_header(rq, "MCP-Protocol-Version");
	const char *ct = server_header(rq, "Content-Type");
	struct server_auth auth;
	struct mcp_backend be;
	struct mcp_server *s;
	struct local_ctx lc;
	char *base;

	(void)ctx;
	rp->cache = "no-store";
	if (strcmp(rq->method, "POST")) {
		server_reply_json_error(rp, 405,
					"MCP: use POST with JSON-RPC messages; this server offers "
					"no SSE stream (GET) and no sessions (DELETE)");
		rp->allow = "POST";
		return;
	}
	if (origin && strcmp(origin, "null") && !same_origin(origin, host)) {
		server_reply_json_error(rp, 403, "MCP: Origin '%.200s' is not this server", origin);
		return;
	}
	server_req_auth(rq, SERVER_PERM_QUERY, &auth);
	if (auth.status) {
		server_reply_json_error(rp, auth.status, "%s", auth.msg);
		if (auth.status == 401)
			rp->www_authenticate = "Bearer realm=\"profd\"";
		return;
	}
	if (ver && !mcp_version_supported(ver)) {
		server_reply_json_error(rp, 400,
					"MCP: unsupported MCP-Protocol-Version '%.40s'; supported: "
					"2025-06-18, 2025-03-26, 2024-11-05",
					ver);
		return;
	}
	if (!ct || strncasecmp(ct, "application/json", 16)) {
		server_reply_json_error(rp, 415,
					"MCP: the body must be application/json, got '%.100s'",
					ct ? ct : "(none)");
		return;
	}
	if (!accepts_json(server_header(rq, "Accept"))) {
		server_reply_json_error(rp, 406,
					"MCP: this server answers application/json; the Accept "
					"header must allow it");
		return;
	}
	if (rq->body_len > MCP_MAX_MESSAGE) {
		server_reply_json_error(rp, 413, "MCP: a message is at most %zu bytes",
					MCP_MAX_MESSAGE);
		return;
	}
	lc.srv = rq->srv;
	lc.authorization = server_header(rq, "Authorization");
	lc.dataset = auth.ds ? auth.ds->name : NULL;
	base = xasprintf("http://%s", host ? host : "127.0.0.1");
	be.get = local_get;
	be.ctx = &lc;
	be.base_url = base;
	s = mcp_server_new(&be);
	buf_reset(&rp->body);
	(void)mcp_server_handle(s, rq->body ? rq->body : "", rq->body_len, &rp->body);
	mcp_server_free(s);
	free(base);
	if (!rp->body.len) {
		rp->status = 202; /* notifications or responses only */
		return;
	}
	rp->status = 200;
	rp->content_type = "application/json";
}
