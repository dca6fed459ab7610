/* SPDX-License-Identifier: Apache-2.0 */
/*
 * local.h - an in-process request: the path, query arguments and the
 * few headers a query handler reads, for server_local_get (http.h), which
 * runs the server's own GET handlers without a socket.
 *
 * Why: the MCP endpoint (src/mcp, above the server) talks to the query
 * engine only through the JSON query API. Over stdio it uses HTTP; inside
 * the server it calls the same handlers directly, with the caller's
 * Authorization and dataset, so the answers, the parameter checks and the
 * token rules are the API's by construction.
 *
 * The query string is decoded as libmicrohttpd decodes it for a real
 * request ('+' is a space, %XX a byte; the path: %XX only), so a handler
 * cannot tell the two apart. server_arg / server_header (route.h) read
 * from here when server_req.local is set.
 */
#ifndef PROF_SERVER_LOCAL_H
#define PROF_SERVER_LOCAL_H

#include "base/compat.h"

#define SERVER_LOCAL_MAX_ARGS  64	  /* query arguments per request */
#define SERVER_LOCAL_MAX_INPUT (64 << 10) /* bytes of path + query */

struct server_local_arg {
	const char *key, *value; /* into server_local.buf; value NULL for "key" without '=' */
};

/** struct server_local - a parsed in-process request; everything lent from @buf. */
struct server_local {
	char *buf;	  /* owned: decoded copy of the input */
	const char *path; /* "/api/v1/table", decoded */
	struct server_local_arg args[SERVER_LOCAL_MAX_ARGS];
	size_t nargs;
	const char *authorization; /* the caller's Authorization header, lent, or NULL */
	const char *dataset;	   /* the caller's X-Profd-Dataset, lent, or NULL */
};

/**
 * server_local_parse() - split and decode @path_and_query ("/api/v1/x?a=1&b=%7B%7D")
 * into @l. -EINVAL when it does not start with '/', is longer than
 * SERVER_LOCAL_MAX_INPUT, has more than SERVER_LOCAL_MAX_ARGS arguments or
 * decodes to a NUL byte. Release @l with server_local_release (also after
 * an error).
 */
int server_local_parse(struct server_local *l, const char *path_and_query);

/** server_local_release() - free what server_local_parse allocated. */
void server_local_release(struct server_local *l);

/** server_local_arg() - the first argument @name, or NULL. Lent. */
const char *server_local_arg(const struct server_local *l, const char *name);

/**
 * server_local_header() - "Authorization" and "X-Profd-Dataset" (any case)
 * as the caller gave them; every other header is absent (NULL).
 */
const char *server_local_header(const struct server_local *l, const char *name);

#endif
