/* SPDX-License-Identifier: Apache-2.0 */
/*
 * backend.h - how the MCP layer reaches the query engine: only through the
 * JSON query API (docs/api.md), behind one function.
 *
 * Why an interface and not calls into src/query: the MCP tools stay
 * decoupled from the engine's internals (which change), answer exactly
 * what the API answers (same parameter checks, same numbers as the
 * explorer and the CLI), and every tool output can name the API request
 * that produced it, so a person can reproduce it with curl or the
 * explorer. Two backends exist: libcurl against a running server
 * (`profd mcp --server URL`, mcp/curl_backend.h) and in-process calls to
 * the server's own handlers for its POST /mcp endpoint (mcp/endpoint.h).
 * Tests and the fuzz target use a stub returning fixed JSON.
 */
#ifndef PROF_MCP_BACKEND_H
#define PROF_MCP_BACKEND_H

#include "base/buf.h"
#include "base/compat.h"

/**
 * struct mcp_backend - the query API, as GET requests.
 *
 * @get: fetch @path_and_query ("/api/v1/table?type=...&limit=20", already
 *       percent-encoded), appending the answer body to @out_json (which
 *       carries a cap: -PROF_ETOOBIG when the answer is larger) and
 *       storing the HTTP status in *@http_status. Returns 0 when the API
 *       answered (whatever the status), a negative code when it could not
 *       be reached; then @out_json may hold a message for a person.
 *       Called from one thread per struct mcp_server at a time.
 * @ctx: passed to @get.
 * @base_url: the server as a person reaches it ("http://127.0.0.1:4040",
 *       no trailing '/'), for the explorer links and the "query" lines of
 *       tool outputs; lent, may be "" when unknown.
 */
struct mcp_backend {
	int (*get)(void *ctx, const char *path_and_query, struct buf *out_json, int *http_status);
	void *ctx;
	const char *base_url;
};

#endif
