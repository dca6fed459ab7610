/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mcp.h - the Model Context Protocol server: JSON-RPC 2.0 messages in,
 * responses out, independent of the transport (stdio: mcp/stdio.h;
 * streamable HTTP: mcp/endpoint.h) and of where the data comes from (the
 * query API behind struct mcp_backend).
 *
 * Protocol (MCP 2025-06-18, 2025-03-26 and 2024-11-05): `initialize`
 * answers the client's protocolVersion when it is one of those, else the
 * latest, with serverInfo and capabilities {tools, resources};
 * `notifications/initialized` and other notifications are accepted
 * silently; `ping`; `tools/list` and `tools/call` (mcp/tools.h);
 * `resources/list`, `resources/templates/list` and `resources/read`
 * (mcp/resources.h). A batch (a JSON array, 2025-03-26) is answered with
 * an array of the responses to its requests.
 *
 * Errors are JSON-RPC error objects and the server goes on: -32700 parse
 * error (id null), -32600 invalid request (not an object, jsonrpc not
 * "2.0", no method, a null/fractional/boolean id, an empty or too large
 * batch, a message over MCP_MAX_MESSAGE bytes), -32601 method not found,
 * -32602 invalid params (params not an object, unknown tool, an argument
 * of the wrong type, out of range, unknown or missing), -32002 resource
 * not found, -32603 internal error. A tool that ran but failed (the query
 * API answered 4xx/5xx, the server cannot be reached, no data) is a
 * result with isError true and the reason as text, as the spec says, so
 * a model can correct itself.
 *
 * Lifecycle: the client should initialize first; requests before that are
 * served anyway (the HTTP transport is stateless: every POST gets a fresh
 * server), which is what a lenient peer does and costs nothing here.
 *
 * Thread-safety: one struct mcp_server per connection/thread.
 */
#ifndef PROF_MCP_MCP_H
#define PROF_MCP_MCP_H

#include "base/buf.h"
#include "base/compat.h"
#include "mcp/backend.h"

#define MCP_LATEST_VERSION "2025-06-18"
#define MCP_MAX_MESSAGE	   ((size_t)4 << 20) /* bytes of one JSON-RPC message or batch */
#define MCP_MAX_BATCH	   32		     /* messages in one batch */
#define MCP_MAX_RESPONSE   ((size_t)8 << 20) /* bytes of one response (a batch's, all) */

/* JSON-RPC / MCP error codes. */
#define MCP_PARSE_ERROR	       -32700
#define MCP_INVALID_REQUEST    -32600
#define MCP_METHOD_NOT_FOUND   -32601
#define MCP_INVALID_PARAMS     -32602
#define MCP_INTERNAL_ERROR     -32603
#define MCP_RESOURCE_NOT_FOUND -32002

struct mcp_server;

/**
 * mcp_server_new() - a server answering through @be (lent; must outlive
 * the server). Free with mcp_server_free.
 */
struct mcp_server *mcp_server_new(const struct mcp_backend *be);

/** mcp_server_free() - free @s; NULL ok. */
void mcp_server_free(struct mcp_server *s);

/**
 * mcp_server_handle() - handle one message (an object) or a batch (an
 * array) of @len bytes and append the response JSON to @out, without a
 * trailing newline; nothing is appended when no response is due (only
 * notifications or responses came in). Never fails on bad input (that is
 * answered with an error object); returns 0, or -PROF_ETOOBIG when @out's
 * cap was reached (then @out holds an internal error response instead).
 */
int mcp_server_handle(struct mcp_server *s, const char *msg, size_t len, struct buf *out);

/** mcp_server_initialized() - did a client initialize this server? */
bool mcp_server_initialized(const struct mcp_server *s);

/**
 * mcp_version_supported() - is @v one of the protocol versions this
 * server speaks (for the MCP-Protocol-Version header of HTTP requests)?
 */
bool mcp_version_supported(const char *v);

#endif
