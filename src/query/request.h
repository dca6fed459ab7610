/* SPDX-License-Identifier: Apache-2.0 */
/*
 * request.h - run a named query view from string parameters: the query
 * API's parameter parsing and view dispatch in one place, so the HTTP
 * server (/api/v1/<view>), and later the MCP server, answer the same
 * parameters with the same words. docs/api.md documents every view and
 * parameter; in short:
 *
 *   common     type, query (selector, may carry the type), from, to
 *              (unix ms, "now", "now-15m"; default the last hour),
 *              stack_filter, frame_filter, hide (query/filter.h), fold
 *              (recursion|library|none, query_stackset_fold)
 *   flamegraph max_nodes (default 2048, at most 200000), min_share (0..1),
 *              invert (true/false)
 *   table      search, search_regex, sort (self|total|name), limit,
 *              granularity (function|frame)
 *   series     step (duration; default range/240 rounded up to a whole
 *              second), group_by (comma list), limit (groups, default
 *              10), function, mode (self|total)
 *   sandwich   function (required), max_nodes
 *   source     function (required), sort (self|total|line), limit (lines,
 *              default 50, 0 = all), text (lines|file|none)
 *   diff       a_query, a_from, a_to, a_type, b_query, b_from, b_to,
 *              b_type (each defaulting to query/from/to/type), mode
 *              (normalized|absolute), max_nodes, min_share, z, max_stacks
 *   flamechart group_by, interval (duration), max_spans
 *   labels, label_values (name)
 *   export_pprof, export_folded, export_svg (max_nodes, invert, title)
 *
 * Errors: -EINVAL with @err naming the parameter, what was expected and
 * what was given (HTTP 400); -PROF_ENOTFOUND for an unknown view (404);
 * -PROF_ETOOBIG when the query or its answer is over a limit (413, the
 * message says which); anything else is an internal error (500).
 *
 * Thread-safety: each call compiles its own selectors and regexes; calls
 * may run in parallel on one head.
 */
#ifndef PROF_QUERY_REQUEST_H
#define PROF_QUERY_REQUEST_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "store/head.h"
#include "store/store.h"
#include "symbolize/srcroot.h"
#include "symbolize/symbolizer.h"

#define QUERY_DEFAULT_MAX_NODES 2048
#define QUERY_MAX_MAX_NODES	200000
#define QUERY_DEFAULT_RANGE_MS	(60 * 60 * 1000LL)

/** query_arg_fn - the value of parameter @name, or NULL when absent. Lent for the call. */
typedef const char *(*query_arg_fn)(void *ctx, const char *name);

/** struct query_env - what a request runs against. */
struct query_env {
	struct store *store;
	struct symbolizer *sym;		    /* may be NULL */
	int64_t now_ms;			    /* for "now-15m"; 0 = the clock */
	const struct sym_srcroot *src_root; /* source files the source view may read, or NULL */
};

/**
 * query_request_run() - run view @view ("flamegraph", "table", "series",
 * "sandwich", "source", "diff", "flamechart", "labels", "label_values",
 * "export_pprof", "export_folded", "export_svg") with the parameters
 * @arg(@ctx, name) gives, appending the answer to @out (whose cap, if
 * any, bounds the answer) and setting *@content_type to a static MIME
 * type. Returns 0 or an error as above.
 */
int query_request_run(const struct query_env *env, const char *view, query_arg_fn arg, void *ctx,
		      struct buf *out, const char **content_type, struct prof_err *err);

/**
 * query_request_check_param() - 0 when view @view (as query_request_run
 * names it) takes a parameter called @name, else -EINVAL with @err naming
 * it and listing what the view takes ("unknown parameter 'maxnodes' for
 * this view (it takes: type, query, ...)"). Every view takes type, query,
 * from, to, dataset, trace_id and span_id; the stack views also
 * stack_filter, frame_filter and hide; then each its own (docs/api.md).
 * Unknown views pass (query_request_run answers them).
 */
int query_request_check_param(const char *view, const char *name, struct prof_err *err);

/**
 * query_request_status() - the HTTP status for a query_request_run
 * return code: 200, 400, 404, 413 or 500.
 */
unsigned query_request_status(int rc);

#endif
