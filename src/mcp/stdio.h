/* SPDX-License-Identifier: Apache-2.0 */
/*
 * stdio.h - the MCP stdio transport: the client starts `profd mcp` and
 * writes JSON-RPC messages to its stdin, one per line (UTF-8, no embedded
 * newline); each response goes to stdout as one line. Nothing else is
 * written to stdout: logs go to stderr.
 *
 * Bad input never stops the loop: a line that is not JSON gets a -32700
 * error, a line longer than MCP_MAX_MESSAGE is skipped to its newline and
 * answered -32600, an empty line is ignored. Memory is bounded by
 * MCP_MAX_MESSAGE plus one response.
 */
#ifndef PROF_MCP_STDIO_H
#define PROF_MCP_STDIO_H

#include "base/compat.h"
#include "mcp/mcp.h"

/**
 * mcp_stdio_serve() - serve @s on @in_fd / @out_fd until end of input.
 * Returns 0 at end of input, -errno when reading or writing fails (the
 * client went away: -EPIPE).
 */
int mcp_stdio_serve(struct mcp_server *s, int in_fd, int out_fd);

#endif
