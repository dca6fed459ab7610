// SPDX-License-Identifier: Apache-2.0
/*
 * tools.c - the MCP tools (tools.h): argument schemas, the tool table
 * and dispatch. The tools themselves are in tools_read.c,
 * tools_compare.c and tools_optimize.c, what a call shares in
 * tools_call.c and tools_text.c.
 *
 * A call goes: check the arguments against the tool's schema (-EINVAL,
 * a JSON-RPC -32602, naming the argument) -> resolve the time range
 * (capped at 31 days) and the profile type (default: the CPU type) ->
 * GET the API views it needs through the backend -> write text within
 * the max_tokens budget -> close with the API requests and an explorer
 * link. A failure after the arguments were accepted (the API said 4xx,
 * the server is down) is a result with isError and the reason.
 *
 * Trees (flame graph, sandwich, diff) are walked with explicit stacks,
 * never recursion; jansson refuses JSON nested deeper than 2048 levels,
 * which a flame graph of a stack deeper than ~1000 frames is: such an
 * answer is reported as a tool error suggesting frame_filter or hide.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/parse.h"
#include "mcp/text.h"
#include "mcp/tools.h"
#include "query/change.h"
#include "query/units.h"
#include "mcp/tools_int.h"

#include <math.h>

/* --- argument schemas ---------------------------------------------------------------------- */

static const char *const sorts[] = { "self", "total", NULL };
static const char *const modes[] = { "total", "self", NULL };

/*
 * The arguments many tools share are described once, here, and sent once
 * per session (the initialize result's instructions), not in every tool's
 * schema: that text was most of a 22 k character tool list.
 */
const char mcp_tools_shared_args[] =
	"Arguments shared by the tools (their schemas list them without text): "
	"type = profile type id name:sample_type:sample_unit:period_type:period_unit, e.g. " CPU_TYPE
	" (list_profile_types; default: the CPU type when it has data, else the first "
	"type with data). "
	"query = series selector, PromQL style on OpenTelemetry attribute names, e.g. "
	"{service.name=\"api\", k8s.pod.name=~\"api-.*\"} (=, !=, =~, !~; default {}). "
	"trace_id (32 hex digits) / span_id (16) = only the samples of that trace / span "
	"(OTLP links, or pprof trace_id/span_id labels as the eBPF agent reads them from Go "
	"and from the OpenTelemetry thread context): which functions ran in one slow request. "
	"from / to = time range: unix ms, RFC 3339, 'now' or 'now-15m' / 'now-6h' / 'now-7d' "
	"(default the last hour, to inclusive, at most 31 days). "
	"hide = comma list of runtime frame presets whose cost goes to the caller (go, jvm, "
	"libc, kernel, python, ruby, php, node). "
	"fold (flamegraph_summary, callers_callees, explain_change, optimization_candidates) = recursion (default: a function calling itself is one frame), "
	"library (a run of one shared library's frames is its entry frame), "
	"recursion,library or none. "
	"max_tokens = output budget, about 4 characters each (default 2000; a longer output is "
	"cut and says so). "
	"function = a frame name exactly as the profiles show it (top_functions, find_function). "
	"stack_filter = PCRE2 regex: only samples with a matching frame. "
	"limit = rows listed (default 20; compare 10 per direction; source_location 5 lines, optimization_candidates 5). "
	"min_share / max_depth = tree nodes below the share (0..1) or deeper are summarized. "
	"links = true to end with the query API requests made and an explorer link (default "
	"false). "
	"a_query, a_from, a_to / b_query, b_from, b_to (compare, explain_change) = side A (the "
	"baseline) and side B: B defaults to query/from/to, A to the same selector in the window "
	"of the same length just before B, or to B's range when a_query differs from B's.";

#define ARG_TYPE                                       \
	{                                              \
		"type", A_STR, false, 0, 0, NULL, NULL \
	}
#define ARG_QUERY                                               \
	{ "query", A_STR, false, 0, 0, NULL, NULL },            \
		{ "trace_id", A_STR, false, 0, 0, NULL, NULL }, \
	{                                                       \
		"span_id", A_STR, false, 0, 0, NULL, NULL       \
	}
#define ARG_FROM                                        \
	{                                               \
		"from", A_TIME, false, 0, 0, NULL, NULL \
	}
#define ARG_TO                                        \
	{                                             \
		"to", A_TIME, false, 0, 0, NULL, NULL \
	}
#define ARG_TOKENS                                                                  \
	{ "max_tokens", A_INT, false, MCP_MIN_TOKENS, MCP_MAX_TOKENS, NULL, NULL }, \
	{                                                                           \
		"links", A_BOOL, false, 0, 0, NULL, NULL                            \
	}
#define ARG_FUNCTION                                      \
	{                                                 \
		"function", A_STR, true, 0, 0, NULL, NULL \
	}
#define ARG_HIDE                                       \
	{                                              \
		"hide", A_STR, false, 0, 0, NULL, NULL \
	}
#define ARG_FOLD                                       \
	{                                              \
		"fold", A_STR, false, 0, 0, NULL, NULL \
	}
#define ARG_AB                                                 \
	{ "a_query", A_STR, false, 0, 0, NULL, NULL },         \
		{ "a_from", A_TIME, false, 0, 0, NULL, NULL }, \
		{ "a_to", A_TIME, false, 0, 0, NULL, NULL },   \
		{ "b_query", A_STR, false, 0, 0, NULL, NULL }, \
		{ "b_from", A_TIME, false, 0, 0, NULL, NULL }, \
	{                                                      \
		"b_to", A_TIME, false, 0, 0, NULL, NULL        \
	}

/* --- the tool table ------------------------------------------------------------------------ */

static const struct arg_spec args_types[] = { ARG_FROM, ARG_TO, ARG_TOKENS };
static const struct arg_spec args_labels[] = { ARG_TYPE, ARG_QUERY, ARG_FROM, ARG_TO, ARG_TOKENS };
static const struct arg_spec args_label_values[] = {
	{ "name", A_STR, true, 0, 0, NULL, "Label name, e.g. service.name." },
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_TOKENS,
};
static const struct arg_spec args_top[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "sort", A_STR, false, 0, 0, sorts, "Default self." },
	{ "limit", A_INT, false, 1, 200, NULL, NULL },
	{ "search", A_STR, false, 0, 0, NULL, "Name substring." },
	{ "stack_filter", A_STR, false, 0, 0, NULL, NULL },
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_flame[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "min_share", A_NUM, false, 0, 1, NULL, "Default 0.01." },
	{ "max_depth", A_INT, false, 1, MAX_DEPTH, NULL, "Default 16." },
	{ "hot_paths", A_INT, false, 0, 50, NULL, "Default 10." },
	{ "invert", A_BOOL, false, 0, 0, NULL, "Leaves first." },
	{ "stack_filter", A_STR, false, 0, 0, NULL, NULL },
	ARG_HIDE,
	ARG_FOLD,
	ARG_TOKENS,
};
static const struct arg_spec args_sandwich[] = {
	ARG_FUNCTION,
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "min_share", A_NUM, false, 0, 1, NULL, "Default 0.005." },
	{ "max_depth", A_INT, false, 1, MAX_DEPTH, NULL, "Default 8." },
	ARG_HIDE,
	ARG_FOLD,
	ARG_TOKENS,
};
static const struct arg_spec args_compare[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_AB,
	{ "sort", A_STR, false, 0, 0, sorts, "Default self." },
	{ "limit", A_INT, false, 1, 200, NULL, NULL },
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_explain[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_AB,
	{ "z", A_NUM, false, 0, 100, NULL, "|z| level (1.96: q < 0.05)." },
	{ "min_delta", A_NUM, false, 0, 100, NULL, "% of A's total (0.5)." },
	{ "limit", A_INT, false, 1, 50, NULL, "Default 8." },
	{ "paths", A_INT, false, 0, 10, NULL, "Default 3." },
	ARG_HIDE,
	ARG_FOLD,
	ARG_TOKENS,
};
static const struct arg_spec args_series[] = {
	ARG_FUNCTION,
	{ "mode", A_STR, false, 0, 0, modes, "Default total." },
	{ "step", A_STR, false, 0, 0, NULL, "Default range / 60." },
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_find[] = {
	{ "search", A_STR, true, 0, 0, NULL, "Substring or regex." },
	{ "regex", A_BOOL, false, 0, 0, NULL, "search is a PCRE2 regex." },
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "limit", A_INT, false, 1, 200, NULL, NULL },
	ARG_TOKENS,
};
static const struct arg_spec args_source[] = {
	ARG_FUNCTION, ARG_TYPE,	  ARG_QUERY,
	ARG_FROM,     ARG_TO,	  { "limit", A_INT, false, 1, 50, NULL, NULL },
	ARG_HIDE,     ARG_TOKENS,
};

static const struct arg_spec args_optimize[] = {
	ARG_TYPE, ARG_QUERY, ARG_FROM,	 ARG_TO, { "limit", A_INT, false, 1, 20, NULL, NULL },
	ARG_HIDE, ARG_FOLD,  ARG_TOKENS,
};

#define TOOL(n, d, a, r)                       \
	{                                      \
		n, d, a, PROF_ARRAY_SIZE(a), r \
	}

static const struct tool_spec tools[] = {
	TOOL("list_profile_types",
	     "Profile types with data, their unit, cumulative or gauge. Start here.", args_types,
	     tool_run_profile_types),
	TOOL("list_labels", "Label names of a selection (service.name, thread.name, ...).",
	     args_labels, tool_run_list_labels),
	TOOL("label_values", "Values of one label in a selection, for selectors.",
	     args_label_values, tool_run_label_values),
	TOOL("top_functions", "Functions by self and total cost (pprof -top).", args_top,
	     tool_run_top_functions),
	TOOL("flamegraph_summary", "Hottest paths, then the call tree pruned to min_share.",
	     args_flame, tool_run_flamegraph),
	TOOL("callers_callees", "Callers and callees trees of one function.", args_sandwich,
	     tool_run_callers_callees),
	TOOL("compare",
	     "Functions whose cost per second grew or shrank most from A to B, absolute and share "
	     "tests (BH-adjusted).",
	     args_compare, tool_run_compare),
	TOOL("function_timeseries", "A function's cost per step beside the selection's.",
	     args_series, tool_run_timeseries),
	TOOL("find_function", "Function names matching a substring or regex.", args_find,
	     tool_run_find_function),
	TOOL("source_location",
	     "A function's hottest source lines (self, total, per build) with their text when the "
	     "server has it; binary, build ID.",
	     args_source, tool_run_source_location),
	TOOL("explain_change",
	     "What changed from A to B (deploy, canary): functions whose self rate changed "
	     "significantly, with the call paths that changed most.",
	     args_explain, tool_run_explain_change),
	TOOL("optimization_candidates",
	     "Where a code change pays: functions by self cost, hottest lines, callers.",
	     args_optimize, tool_run_optimization_candidates),
};

/* --- schemas and dispatch ------------------------------------------------------------------- */

static json_t *arg_schema(const struct arg_spec *a)
{
	json_t *s = json_object();

	switch (a->kind) {
	case A_STR:
		json_object_set_new(s, "type", json_string("string"));
		if (a->values) {
			json_t *e = json_array();

			for (const char *const *p = a->values; *p; p++)
				json_array_append_new(e, json_string(*p));
			json_object_set_new(s, "enum", e);
		}
		break;
	case A_TIME:
		json_object_set_new(s, "type", json_pack("[ss]", "string", "integer"));
		break;
	case A_INT:
		json_object_set_new(s, "type", json_string("integer"));
		if (a->desc) { /* shared ones: the range is in the shared text */
			json_object_set_new(s, "minimum", json_integer((json_int_t)a->min));
			json_object_set_new(s, "maximum", json_integer((json_int_t)a->max));
		}
		break;
	case A_NUM:
		json_object_set_new(s, "type", json_string("number"));
		json_object_set_new(s, "minimum", json_real(a->min));
		json_object_set_new(s, "maximum", json_real(a->max));
		break;
	case A_BOOL:
		json_object_set_new(s, "type", json_string("boolean"));
		break;
	}
	if (a->desc) /* shared arguments: described once (mcp_tools_shared_args) */
		json_object_set_new(s, "description", json_string(a->desc));
	return s;
}

json_t *mcp_tools_list(void)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < PROF_ARRAY_SIZE(tools); i++) {
		const struct tool_spec *t = &tools[i];
		json_t *props = json_object(), *req = json_array();

		for (size_t k = 0; k < t->nargs; k++) {
			json_object_set_new(props, t->args[k].name, arg_schema(&t->args[k]));
			if (t->args[k].required)
				json_array_append_new(req, json_string(t->args[k].name));
		}
		json_t *schema = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
					   "additionalProperties", 0);
		if (json_array_size(req))
			json_object_set_new(schema, "required", req);
		else
			json_decref(req);
		/* read-only implies idempotent and no side effects: one hint says it */
		json_array_append_new(arr, json_pack("{s:s, s:s, s:o, s:{s:b}}", "name", t->name,
						     "description", t->desc, "inputSchema", schema,
						     "annotations", "readOnlyHint", 1));
	}
	return arr;
}

/* The CallToolResult of @c: the text (or the failure), the queries, the link. */
static json_t *finish(struct call *c)
{
	struct mcp_text *t = &c->out;
	json_t *res;

	if (c->failed) {
		buf_reset(&t->b);
		mcp_text_tail(t, "Error: %s", c->msg);
	} else if (t->truncated) {
		mcp_text_tail(t,
			      "[truncated: the output reached its budget of %zu tokens; raise "
			      "max_tokens (up to %d), lower limit/max_depth, or narrow the query]",
			      t->limit / MCP_CHARS_PER_TOKEN, MCP_MAX_TOKENS);
	}
	if (!c->failed)
		tool_nearest_note(c);
	if (tool_barg(c, "links", false)) {
		mcp_text_tail(t, "%s (query API, reproducible with curl):",
			      c->queries.n > 1 ? "Queries" : "Query");
		for (size_t i = 0; i < c->queries.n; i++)
			mcp_text_tail(t, "- GET %s%s", c->be->base_url ? c->be->base_url : "",
				      c->queries.v[i]);
		if (c->link[0] && !c->failed)
			mcp_text_tail(t, "Explorer%s: %s", c->link_note, c->link);
	}
	res = json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text", "text",
			t->b.p ? t->b.p : "", t->b.len, "isError", c->failed);
	return res;
}

int mcp_tools_call(const struct mcp_backend *be, const char *name, json_t *args, json_t **result,
		   struct prof_err *err)
{
	struct call c;
	json_t *empty = NULL;
	int rc;

	*result = NULL;
	memset(&c, 0, sizeof(c));
	for (size_t i = 0; i < PROF_ARRAY_SIZE(tools) && !c.tool; i++)
		if (!strcmp(tools[i].name, name))
			c.tool = &tools[i];
	if (!c.tool)
		return prof_err_set(err, -PROF_ENOTFOUND, -1,
				    "Unknown tool: %.200s (tools/list names them)", name);
	if (!args)
		args = empty = json_object();
	c.be = be;
	c.args = args;
	c.now_ms = prof_now_ns() / 1000000;
	c.link_note = "";
	rc = tool_check_args(&c);
	mcp_text_init(&c.out, (size_t)tool_iarg(&c, "max_tokens", MCP_DEFAULT_TOKENS));
	if (!rc)
		rc = c.tool->run(&c);
	if (rc)
		prof_err_set(err, rc, -1, "%s", c.msg);
	else
		*result = finish(&c);
	for (size_t i = 0; i < c.queries.n; i++)
		free(c.queries.v[i]);
	VEC_FREE(&c.queries);
	mcp_text_release(&c.out);
	json_decref(empty);
	return rc;
}
