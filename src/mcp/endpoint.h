/* SPDX-License-Identifier: Apache-2.0 */
/*
 * endpoint.h - MCP over streamable HTTP (MCP 2025-06-18 "Transports"), as
 * the server's POST /mcp route, JSON responses only (no SSE streams),
 * stateless (no Mcp-Session-Id: every POST is served by a fresh
 * struct mcp_server, so any server instance can answer any request).
 *
 * The server must not include src/mcp (mcp sits above server in the
 * layering), so the CLI registers this as a server_hook (server/http.h):
 *
 *   static const struct server_hook hooks[] = { MCP_ENDPOINT_HOOK };
 *   cfg.hooks = hooks; cfg.nhooks = 1;
 *
 * A POST is authorized like the query API (token with the query
 * permission on the dataset picked by X-Profd-Dataset / ?dataset= /
 * the token's default; 401/403/404 otherwise), then its JSON-RPC
 * message(s) are handled; the tools read the query API in process
 * (server_local_get) with the caller's Authorization and that dataset,
 * so MCP sees exactly what the token may query. Answers: 200
 * application/json with the response(s); 202 without a body when the
 * POST held only notifications or responses; 405 for GET (no SSE stream
 * is offered) and DELETE (no sessions); 415 for a body that is not
 * application/json; 406 when Accept excludes application/json; 400 for
 * an unsupported MCP-Protocol-Version header; 403 for an Origin header
 * naming another host than Host (DNS rebinding, as the spec requires).
 * Bodies are capped at MCP_MAX_MESSAGE (413).
 */
#ifndef PROF_MCP_ENDPOINT_H
#define PROF_MCP_ENDPOINT_H

#include "base/compat.h"
#include "server/http.h"

#define MCP_ENDPOINT_PATH "/mcp"
/* The server_hook initializer for /mcp. */
#define MCP_ENDPOINT_HOOK                                    \
	{                                                    \
		MCP_ENDPOINT_PATH, mcp_endpoint_handle, NULL \
	}

/** mcp_endpoint_handle() - the /mcp route (a server_hook handler; @ctx unused). */
void mcp_endpoint_handle(void *ctx, struct server_req *rq, struct server_reply *rp);

#endif
