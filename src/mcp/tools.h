/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tools.h - the MCP tools: questions a coding agent asks about production
 * profiles, answered from the query API (mcp/backend.h) as text a model
 * reads well.
 *
 *   list_profile_types   which profile types have data, with their units
 *   list_labels          label names of the selected series
 *   label_values         values of one label
 *   top_functions        functions by self or total (table view)
 *   flamegraph_summary   hottest call paths and a pruned call tree
 *   callers_callees      who calls a function and what it calls (sandwich)
 *   compare              A/B: functions whose share grew or shrank most
 *   function_timeseries  one function's cost over time, with its share
 *   find_function        function names matching a substring or regex
 *   source_location      a function's hottest source lines, binary, build ID
 *   explain_change       significant share changes with their call paths
 *   optimization_candidates  functions by self cost with hottest lines and callers
 *
 * Every output states the profile type and its unit, the selection and
 * time range in UTC, values in their units with shares, the exact API
 * requests that produced it and an explorer link; it is deterministic for
 * the same data and arguments (ties broken by name) and bounded by the
 * max_tokens argument (default MCP_DEFAULT_TOKENS), saying "truncated"
 * when cut. Time ranges are capped at MCP_MAX_RANGE_MS.
 */
#ifndef PROF_MCP_TOOLS_H
#define PROF_MCP_TOOLS_H

#include "base/compat.h"
#include "base/err.h"
#include "mcp/backend.h"

#include <jansson.h>

#define MCP_DEFAULT_TOKENS 2000
#define MCP_MIN_TOKENS	   200
#define MCP_MAX_TOKENS	   25000
#define MCP_MAX_RANGE_MS   (31LL * 24 * 3600 * 1000) /* the longest time range a tool reads */
#define MCP_MAX_ARG_LEN	   4096			     /* bytes of one string argument */
#define MCP_MAX_ANSWER	   ((size_t)64 << 20)	     /* bytes of one query API answer */

/**
 * mcp_tools_shared_args - the text of the arguments many tools share
 * (type, query, from, to, hide, max_tokens, links, the a_* / b_* sides),
 * which their schemas list without a description; the server sends it
 * once, in the initialize result's instructions. Static.
 */
extern const char mcp_tools_shared_args[];

/**
 * mcp_tools_list() - the tools/list result's "tools" array: name, title,
 * description, inputSchema (JSON Schema, additionalProperties false) and
 * annotations (read-only). New reference.
 */
json_t *mcp_tools_list(void);

/**
 * mcp_tools_call() - run tool @name with @args (an object or NULL) through
 * @be. On success *@result is a CallToolResult (new reference): content
 * [{type:"text", text}] and isError (true when the tool ran but failed:
 * the API refused the query, the server is unreachable, ...). Errors
 * without a result: -PROF_ENOTFOUND for an unknown tool, -EINVAL for
 * arguments that break the tool's schema; @err (may be NULL) gets the code
 * and says which and why, for a -32602 error (offset -1).
 */
int mcp_tools_call(const struct mcp_backend *be, const char *name, json_t *args, json_t **result,
		   struct prof_err *err);

#endif
