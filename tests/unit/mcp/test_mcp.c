// SPDX-License-Identifier: Apache-2.0
/*
 * test_mcp.c - the MCP server (src/mcp) against a stub query API
 * (mcp_stub.h):
 *   - initialize negotiates the protocol version (the client's when
 *     supported, else the latest; a missing version is -32602);
 *   - tools/list names the eleven tools, each with an object input schema
 *     that forbids unknown arguments;
 *   - JSON-RPC errors: parse error, invalid requests (non-object, bad
 *     jsonrpc, null id, empty batch), unknown method, unknown tool, bad
 *     arguments (type, range, unknown, missing), bad params; the same
 *     server answers a ping after each; notifications get no answer;
 *     batches answer their requests only;
 *   - the tools' text: hot function and caller with exact shares and
 *     units, the API requests and the explorer link; compare and
 *     explain_change find the 60% -> 80% growth; an API 400 and an
 *     unreachable server are isError results; max_tokens truncates and
 *     says so;
 *   - the stdio loop: one response line per request, oversized and
 *     empty lines handled, EOF ends it;
 *   - text helpers: RFC 3339 parsing, spans, URL arguments.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "mcp/mcp.h"
#include "mcp/stdio.h"
#include "mcp/text.h"
#include "mcp/tools.h"
#include "unit/mcp/mcp_stub.h"

#include <jansson.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static size_t ncalls;
static const struct mcp_backend stub = { stub_get, &ncalls, "http://stub:4040" };

/* Send @msg to a server, return the parsed response (NULL when none). */
static json_t *rpc(struct mcp_server *s, const char *msg)
{
	struct buf out = BUF_INIT;
	json_t *j = NULL;

	assert_int_equal(mcp_server_handle(s, msg, strlen(msg), &out), 0);
	if (out.len) {
		assert_null(memchr(out.p, '\n', out.len)); /* one line for stdio */
		j = json_loadb(out.p, out.len, 0, NULL);
		assert_non_null(j);
	}
	buf_release(&out);
	return j;
}

static int err_code(json_t *r)
{
	return (int)json_integer_value(json_object_get(json_object_get(r, "error"), "code"));
}

static void assert_alive(struct mcp_server *s)
{
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"ping\"}");

	assert_non_null(json_object_get(r, "result"));
	assert_int_equal(json_integer_value(json_object_get(r, "id")), 99);
	json_decref(r);
}

/* tools/call @name with @args (JSON text); returns the text, sets *is_error. Caller frees. */
/*
 * Call tool @name with the JSON object @args; links: true is added unless
 * @args says links (the tests read the requests and links a tool made).
 */
static char *call_tool(struct mcp_server *s, const char *name, const char *args, bool *is_error)
{
	bool add = !strstr(args, "\"links\"") && strcmp(args, "{}");
	char *msg = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":"
			      "{\"name\":\"%s\",\"arguments\":%s%.*s%s}}",
			      name, add ? "{\"links\":true," : "", add ? (int)strlen(args) - 1 : 0,
			      add ? args + 1 : "", add ? "" : args);
	json_t *r = rpc(s, msg), *res = json_object_get(r, "result");
	const char *t;
	char *out;

	free(msg);
	assert_non_null(res);
	*is_error = json_is_true(json_object_get(res, "isError"));
	t = json_string_value(
		json_object_get(json_array_get(json_object_get(res, "content"), 0), "text"));
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(res, "content"), 0), "type")),
			    "text");
	assert_non_null(t);
	out = xstrdup(t);
	json_decref(r);
	return out;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("expected '%s' in:\n%s", needle, hay);
}

static void test_initialize_negotiates_version(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	json_t *r;

	(void)state;
	r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
		   "\"protocolVersion\":\"2025-03-26\",\"capabilities\":{},\"clientInfo\":{"
		   "\"name\":\"t\",\"version\":\"1\"}}}");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")),
		"2025-03-26");
	assert_non_null(json_object_get(
		json_object_get(json_object_get(r, "result"), "capabilities"), "tools"));
	assert_non_null(json_object_get(
		json_object_get(json_object_get(r, "result"), "capabilities"), "resources"));
	assert_string_equal(
		json_string_value(json_object_get(
			json_object_get(json_object_get(r, "result"), "serverInfo"), "name")),
		"profd");
	json_decref(r);
	r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\",\"params\":{"
		   "\"protocolVersion\":\"2099-01-01\"}}");
	assert_string_equal(
		json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")),
		MCP_LATEST_VERSION);
	json_decref(r);
	r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"initialize\",\"params\":{}}");
	assert_int_equal(err_code(r), MCP_INVALID_PARAMS);
	json_decref(r);
	assert_false(mcp_server_initialized(s));
	assert_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"));
	assert_true(mcp_server_initialized(s));
	assert_true(mcp_version_supported("2024-11-05"));
	assert_false(mcp_version_supported("2024-10-07"));
	mcp_server_free(s);
}

static void test_tools_list_has_schemas(void **state)
{
	static const char *names[] = {
		"list_profile_types", "list_labels",	 "label_values",   "top_functions",
		"flamegraph_summary", "callers_callees", "compare",	   "function_timeseries",
		"find_function",      "source_location", "explain_change", "optimization_candidates"
	};
	struct mcp_server *s = mcp_server_new(&stub);
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}");
	json_t *tools = json_object_get(json_object_get(r, "result"), "tools");

	(void)state;
	assert_int_equal(json_array_size(tools), PROF_ARRAY_SIZE(names));
	for (size_t i = 0; i < PROF_ARRAY_SIZE(names); i++) {
		json_t *t = json_array_get(tools, i);
		json_t *sch = json_object_get(t, "inputSchema");

		assert_string_equal(json_string_value(json_object_get(t, "name")), names[i]);
		assert_true(json_string_length(json_object_get(t, "description")) > 40);
		assert_string_equal(json_string_value(json_object_get(sch, "type")), "object");
		assert_true(json_is_false(json_object_get(sch, "additionalProperties")));
		assert_true(json_object_size(json_object_get(sch, "properties")) >= 2);
		assert_non_null(json_object_get(json_object_get(sch, "properties"), "max_tokens"));
	}
	/* required arguments are declared */
	json_t *req = json_object_get(json_object_get(json_array_get(tools, 5), "inputSchema"),
				      "required");
	assert_string_equal(json_string_value(json_array_get(req, 0)), "function");
	json_decref(r);
	mcp_server_free(s);
}

static void test_protocol_errors_keep_serving(void **state)
{
	static const struct {
		const char *msg;
		int code;
		bool null_id;
	} cases[] = {
		{ "{bad json", MCP_PARSE_ERROR, true },
		{ "", MCP_PARSE_ERROR, true },
		{ "42", MCP_INVALID_REQUEST, true },
		{ "[]", MCP_INVALID_REQUEST, true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", MCP_INVALID_REQUEST,
		  true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":true,\"method\":\"ping\"}", MCP_INVALID_REQUEST,
		  true },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", MCP_INVALID_REQUEST,
		  true },
		{ "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", MCP_INVALID_REQUEST,
		  false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1}", MCP_INVALID_REQUEST, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", MCP_INVALID_REQUEST, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"frob\"}", MCP_METHOD_NOT_FOUND,
		  false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]}",
		  MCP_INVALID_PARAMS, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":\"a\",\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"nope\"}}",
		  MCP_INVALID_PARAMS, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{}}",
		  MCP_INVALID_PARAMS, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
		  "\"top_functions\",\"arguments\":[]}}",
		  MCP_INVALID_PARAMS, false },
		{ "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":"
		  "\"profd://nope\"}}",
		  MCP_RESOURCE_NOT_FOUND, false },
	};
	static const char *bad_args[] = {
		"{\"limit\":\"x\"}",
		"{\"limit\":0}",
		"{\"limit\":2.5}",
		"{\"bogus\":1}",
		"{\"from\":\"yesterday\"}",
		"{\"from\":\"now-40d\"}",
		"{\"from\":\"now\",\"to\":\"now-1h\"}",
		"{\"sort\":\"name\"}",
		"{\"max_tokens\":5}",
		"{\"query\":7}",
	};
	struct mcp_server *s = mcp_server_new(&stub);

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cases); i++) {
		json_t *r = rpc(s, cases[i].msg);

		assert_non_null(r);
		if (err_code(r) != cases[i].code)
			fail_msg("case %zu (%s): code %d, want %d", i, cases[i].msg, err_code(r),
				 cases[i].code);
		assert_string_equal(json_string_value(json_object_get(r, "jsonrpc")), "2.0");
		assert_true(json_string_length(
				    json_object_get(json_object_get(r, "error"), "message")) > 5);
		if (cases[i].null_id)
			assert_true(json_is_null(json_object_get(r, "id")));
		else
			assert_false(json_is_null(json_object_get(r, "id")));
		json_decref(r);
		assert_alive(s);
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad_args); i++) {
		char *m = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
				    "\"params\":{\"name\":\"top_functions\",\"arguments\":%s}}",
				    bad_args[i]);
		json_t *r = rpc(s, m);

		if (err_code(r) != MCP_INVALID_PARAMS)
			fail_msg("arguments %s: code %d", bad_args[i], err_code(r));
		json_decref(r);
		free(m);
		assert_alive(s);
	}
	/* missing required argument, and a notification or a response gets no answer */
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
			   "\"name\":\"callers_callees\",\"arguments\":{}}}");
	assert_int_equal(err_code(r), MCP_INVALID_PARAMS);
	assert_non_null(
		strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")),
		       "function"));
	json_decref(r);
	assert_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"}"));
	assert_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}"));
	assert_null(rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":4,\"result\":{}}"));
	/* a batch answers its requests, in order */
	r = rpc(s, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\","
		   "\"method\":\"notifications/initialized\"},{\"jsonrpc\":\"2.0\",\"id\":2,"
		   "\"method\":\"frob\"}]");
	assert_int_equal(json_array_size(r), 2);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(r, 0), "id")), 1);
	assert_int_equal(err_code(json_array_get(r, 1)), MCP_METHOD_NOT_FOUND);
	json_decref(r);
	mcp_server_free(s);
}

static void test_top_functions_text(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	bool iserr;
	char *t;

	(void)state;
	t = call_tool(s, "top_functions",
		      "{\"query\":\"{service.name=\\\"api\\\"}\",\"from\":1700000000000,"
		      "\"to\":1700000019999,\"links\":true}",
		      &iserr);
	assert_false(iserr);
	assert_contains(t,
			"Profile type: " STUB_CPU " (values in nanoseconds, shown as durations)");
	assert_contains(t, "chosen by default");
	assert_contains(t, "Selection: {service.name=\"api\"}, 2023-11-14T22:13:20Z .. "
			   "2023-11-14T22:13:39.999Z (20s)");
	assert_contains(t, "Total: 2.00s in 200 samples");
	assert_contains(t, "     1.20s   60.00%      1.20s   60.00%  hot_loop\n");
	assert_contains(t, "       0ns    0.00%      1.80s   90.00%  serve\n");
	assert_contains(t, "- GET http://stub:4040/api/v1/table?type=process_cpu%3Acpu%3A"
			   "nanoseconds%3Acpu%3Ananoseconds&query=%7Bservice.name%3D%22api%22%7D&"
			   "from=1700000000000&to=1700000019999&sort=self&limit=20\n");
	assert_contains(t, "Explorer: http://stub:4040/?type=process_cpu%3Acpu%3Ananoseconds%3A"
			   "cpu%3Ananoseconds&query=%7Bservice.name%3D%22api%22%7D&from="
			   "1700000000000&to=1700000019999\n");
	/* the same call gives the same text */
	bool iserr2;
	char *t2 = call_tool(s, "top_functions",
			     "{\"query\":\"{service.name=\\\"api\\\"}\",\"from\":1700000000000,"
			     "\"to\":1700000019999,\"links\":true}",
			     &iserr2);
	assert_string_equal(t, t2);
	free(t2);
	free(t);

	/* the last hour: the explorer's range preset; type given: no lookup */
	size_t before = ncalls;
	t = call_tool(s, "top_functions", "{\"type\":\"" STUB_CPU "\",\"from\":\"now-1h\"}",
		      &iserr);
	assert_int_equal(ncalls - before, 1);
	assert_contains(t, "&range=1h&");
	free(t);
	mcp_server_free(s);
}

static void test_callers_and_flamegraph_name_the_caller(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	bool iserr;
	char *t;

	(void)state;
	t = call_tool(s, "callers_callees",
		      "{\"function\":\"hot_loop\",\"from\":1700000000000,\"to\":1700000019999}",
		      &iserr);
	assert_false(iserr);
	assert_contains(t, "Function hot_loop: total 1.20s (60.00% of all), self 1.20s (60.00% of "
			   "all)");
	assert_contains(t, "\nserve  1.20s (60.00% of all, 100.00% of hot_loop)\n");
	assert_contains(t, "\n  main  1.20s (60.00% of all, 100.00% of hot_loop)\n");
	assert_contains(t, "Callees (what hot_loop calls");
	assert_contains(t, "(none)");
	free(t);

	t = call_tool(s, "callers_callees",
		      "{\"function\":\"nosuch\",\"from\":1700000000000,\"to\":1700000019999}",
		      &iserr);
	assert_false(iserr);
	assert_contains(t, "Function 'nosuch' has no samples");
	free(t);

	t = call_tool(s, "flamegraph_summary", "{\"from\":1700000000000,\"to\":1700000019999}",
		      &iserr);
	assert_false(iserr);
	assert_contains(t, "1. 1.20s self (60.00%): main -> serve -> hot_loop\n");
	assert_contains(t, "2. 600.00ms self (30.00%): main -> serve -> parse_request\n");
	assert_contains(t, "\nmain  total 2.00s (100.00%), self 0ns (0.00%)\n");
	assert_contains(t, "\n  serve  total 1.80s (90.00%), self 0ns (0.00%)\n");
	assert_contains(t, "\n    hot_loop  total 1.20s (60.00%), self 1.20s (60.00%)\n");
	free(t);

	/* a flame graph too deep for the JSON reader: the hottest stacks of the folded export */
	t = call_tool(s, "flamegraph_summary",
		      "{\"query\":\"{deep}\",\"from\":1700000000000,\"to\":1700000019999,"
		      "\"links\":true}",
		      &iserr);
	assert_false(iserr);
	assert_contains(t, "Total: 40ns in 2 distinct stacks\n");
	assert_contains(t, "1. 30ns (75.00%): main -> a -> b\n2. 10ns (25.00%): main -> c\n");
	assert_contains(t, "/api/v1/export/folded?");
	free(t);

	/* min_share prunes: gc (10%) is summarized */
	t = call_tool(s, "flamegraph_summary",
		      "{\"from\":1700000000000,\"to\":1700000019999,\"min_share\":0.2}", &iserr);
	assert_contains(t, "\n  ... 1 more nodes, total 200.00ms (10.00%)\n");
	free(t);
	mcp_server_free(s);
}

static void test_compare_and_explain_find_growth(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	const char *ab = "{\"a_from\":1700000000000,\"a_to\":1700000019999,\"b_from\":"
			 "1700000600000,\"b_to\":1700000619999,\"links\":true}";
	bool iserr;
	char *t;

	(void)state;
	t = call_tool(s, "compare", ab, &iserr);
	assert_false(iserr);
	assert_contains(t, "Grew most");
	/* 120 -> 160 samples in 20 s windows: Poisson q = 0.029 (3 functions tested) */
	assert_contains(t, "Significant in absolute terms (rate per second): hot_loop grew "
			   "+20.00ms/s = +0.02 cores (+33.3%), parse_request shrank -20.00ms/s = "
			   "-0.02 cores (-66.7%)\n");
	assert_contains(t, "1. hot_loop: self 1.20s -> 1.60s; rate 60.00ms/s = 0.06 cores -> "
			   "80.00ms/s = 0.08 cores (+20.00ms/s = +0.02 cores; q=0.029, "
			   "significant); share 60.00% -> 80.00% (+20.00 pts; q=1.9e-05, "
			   "significant)\n");
	assert_contains(t, "1. parse_request: self 600.00ms -> 200.00ms;");
	assert_contains(t, "Explorer (side B): ");
	free(t);

	t = call_tool(s, "explain_change", ab, &iserr);
	assert_false(iserr);
	assert_contains(t, "2 functions changed significantly in absolute terms");
	assert_contains(t, "1. hot_loop GREW: self rate 60.00ms/s = 0.06 cores -> 80.00ms/s = "
			   "0.08 cores (+20.00ms/s = +0.02 cores, q=0.029); self 1.20s -> 1.60s; "
			   "self share 60.00% -> 80.00% (+20.00 pts)");
	assert_contains(t, "   change: +33.3% of its A rate\n");
	assert_contains(t, "   - main -> serve -> hot_loop: A 60.00% -> B 80.00% (+20.00 pts)\n");
	assert_contains(t, "2. parse_request SHRANK");
	assert_contains(t, "/api/v1/diff?");
	free(t);

	/* the same selection and range on both sides is refused */
	char *m = xasprintf("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{"
			    "\"name\":\"compare\",\"arguments\":{\"a_from\":1,\"a_to\":2,"
			    "\"b_from\":1,\"b_to\":2}}}");
	json_t *r = rpc(s, m);
	assert_int_equal(err_code(r), MCP_INVALID_PARAMS);
	json_decref(r);
	free(m);
	mcp_server_free(s);
}

static void test_other_tools(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	bool iserr;
	char *t;

	(void)state;
	t = call_tool(s, "list_profile_types", "{}", &iserr);
	assert_contains(t, "2 profile types with data");
	assert_contains(t, "- memory:alloc_space:bytes:space:bytes: alloc_space measured in bytes");
	free(t);
	t = call_tool(s, "list_labels", "{}", &iserr);
	assert_contains(t, "2 label names:\n- host.name\n- service.name\n");
	free(t);
	t = call_tool(s, "label_values", "{\"name\":\"service.name\",\"links\":true}", &iserr);
	assert_contains(t, "2 values of label service.name:\n- api\n- db\n");
	assert_contains(t, "/api/v1/labels/service.name/values?");
	free(t);
	/* links only when asked: the same answer without its requests and link */
	t = call_tool(s, "label_values", "{\"name\":\"service.name\",\"links\":false}", &iserr);
	assert_contains(t, "2 values of label service.name:\n- api\n- db\n");
	assert_null(strstr(t, "/api/v1/"));
	assert_null(strstr(t, "Explorer"));
	free(t);
	t = call_tool(s, "function_timeseries",
		      "{\"function\":\"hot_loop\",\"from\":1700000000000,\"to\":1700000179999,"
		      "\"step\":\"1m\",\"links\":true}",
		      &iserr);
	assert_false(iserr);
	assert_contains(t, "In range: 2.80s of 4.00s (70.00%); peak 1.60s at 2023-11-14T22:15:20Z");
	assert_contains(t, "2023-11-14T22:13:20Z            1.20s        2.00s   60.00%");
	assert_contains(t, "&step=60s&function=hot_loop&mode=total");
	free(t);
	t = call_tool(s, "find_function", "{\"search\":\"loop\"}", &iserr);
	assert_contains(t, "5 functions match the substring 'loop'");
	free(t);
	t = call_tool(s, "source_location", "{\"function\":\"hot_loop\"}", &iserr);
	assert_false(iserr);
	assert_contains(t, "Source location: unknown");
	assert_contains(t, "- /usr/bin/api build_id 4fe3aa: symbols");
	assert_contains(t, "search=%5Ehot_loop%24&search_regex=true");
	free(t);
	/* A line's text with a NUL byte (a binary file under the source path) is still read. */
	t = call_tool(s, "source_location", "{\"function\":\"parse_request\"}", &iserr);
	assert_false(iserr);
	assert_contains(t, "Source: /src/parse.c:42\n");
	assert_contains(t, "parse.c:42  self 500.00ms (83.33%)  total 500.00ms (83.33%)\n"
			   "    | scan(p);\n");
	assert_contains(t, "parse.c:7  self 100.00ms");
	free(t);
	t = call_tool(s, "optimization_candidates", "{}", &iserr);
	assert_false(iserr);
	assert_contains(t, "   line parse.c:42  self 500.00ms (83.33% of its self)  | scan(p);\n");
	free(t);
	mcp_server_free(s);
}

static void test_tool_failures_are_results(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	bool iserr;
	char *t;

	(void)state;
	t = call_tool(s, "top_functions", "{\"type\":\"" STUB_CPU "\",\"query\":\"{bad}\"}",
		      &iserr);
	assert_true(iserr);
	assert_contains(t, "Error: the query API answered HTTP 400");
	assert_contains(t, "parameter 'query'");
	free(t);
	t = call_tool(s, "top_functions", "{\"type\":\"" STUB_CPU "\",\"query\":\"{down}\"}",
		      &iserr);
	assert_true(iserr);
	assert_contains(t, "cannot reach the profd query API");
	assert_contains(t, "connection refused");
	free(t);
	assert_alive(s);
	mcp_server_free(s);
}

static void test_max_tokens_truncates(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	bool iserr;
	char *t;

	(void)state;
	t = call_tool(s, "flamegraph_summary",
		      "{\"from\":1700000000000,\"to\":1700000019999,\"max_tokens\":200,"
		      "\"links\":true}",
		      &iserr);
	assert_contains(t, "[truncated: the output reached its budget of 200 tokens");
	/* the body stays within 800 bytes; the closing lines come after it */
	assert_true(strstr(t, "[truncated") - t <= 800);
	assert_contains(t, "(query API, reproducible with curl):");
	free(t);
	mcp_server_free(s);
}

static void test_resources(void **state)
{
	struct mcp_server *s = mcp_server_new(&stub);
	json_t *r = rpc(s, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/list\"}");

	(void)state;
	assert_int_equal(
		json_array_size(json_object_get(json_object_get(r, "result"), "resources")), 2);
	json_decref(r);
	r = rpc(s,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":"
		"\"profd://profile-types\"}}");
	json_t *c = json_array_get(json_object_get(json_object_get(r, "result"), "contents"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(c, "text")), STUB_CPU));
	json_decref(r);
	r = rpc(s,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"resources/read\",\"params\":{\"uri\":"
		"\"profd://guide\"}}");
	c = json_array_get(json_object_get(json_object_get(r, "result"), "contents"), 0);
	assert_non_null(strstr(json_string_value(json_object_get(c, "text")), "Selectors"));
	json_decref(r);
	mcp_server_free(s);
}

/* Write @in to a temp file, serve it, return what was written (caller frees). */
static char *serve_stdio(const char *in, size_t n)
{
	char ip[] = "/tmp/profd-mcp-in.XXXXXX", op[] = "/tmp/profd-mcp-out.XXXXXX";
	int ifd = mkstemp(ip), ofd = mkstemp(op);
	struct mcp_server *s = mcp_server_new(&stub);
	struct buf out = BUF_INIT;

	assert_true(ifd >= 0 && ofd >= 0);
	assert_int_equal(write(ifd, in, n), (ssize_t)n);
	assert_int_equal(lseek(ifd, 0, SEEK_SET), 0);
	assert_int_equal(mcp_stdio_serve(s, ifd, ofd), 0);
	close(ifd);
	close(ofd);
	assert_int_equal(buf_read_file(&out, op), 0);
	unlink(ip);
	unlink(op);
	mcp_server_free(s);
	return out.p ? buf_detach(&out, NULL) : xstrdup("");
}

static void test_stdio_loop(void **state)
{
	const char *in =
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"
		"\n"
		"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\r\n"
		"not json\n"
		"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}"; /* no final newline */
	char *out = serve_stdio(in, strlen(in));

	(void)state;
	assert_string_equal(out,
			    "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n"
			    "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32700,"
			    "\"message\":\"Parse error: invalid token near 'not' (at byte 3)\"}}\n"
			    "{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n");
	free(out);

	/* a line over the limit is answered once, and the next line is served */
	size_t big = MCP_MAX_MESSAGE + 100;
	char *b = xmalloc(big + 64);
	memset(b, 'x', big);
	const char *tail = "\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n";
	memcpy(b + big, tail, strlen(tail));
	out = serve_stdio(b, big + strlen(tail));
	assert_non_null(strstr(out, "\"code\":-32600"));
	assert_non_null(strstr(out, "}\n{\"jsonrpc\":\"2.0\",\"id\":3,\"result\":{}}\n"));
	free(out);
	free(b);
}

static void test_text_helpers(void **state)
{
	char s[64];
	int64_t ms;
	struct buf u = BUF_INIT;

	(void)state;
	assert_int_equal(mcp_parse_time("2023-11-14T22:13:20Z", 0, &ms), 0);
	assert_int_equal(ms, 1700000000000);
	assert_int_equal(mcp_parse_time("2023-11-14T23:13:20.5+01:00", 0, &ms), 0);
	assert_int_equal(ms, 1700000000500);
	assert_int_equal(mcp_parse_time("1700000000000", 0, &ms), 0);
	assert_int_equal(ms, 1700000000000);
	assert_int_equal(mcp_parse_time("now-1h", 7200000, &ms), 0);
	assert_int_equal(ms, 3600000);
	assert_int_equal(mcp_parse_time("2023-11-14T22:13:20", 0, &ms), -EINVAL);
	assert_int_equal(mcp_parse_time("2023-13-14T22:13:20Z", 0, &ms), -EINVAL);
	assert_int_equal(mcp_parse_time("12abc", 0, &ms), -EINVAL);
	assert_string_equal(mcp_fmt_span(620000, s, sizeof(s)), "10m20s");
	assert_string_equal(mcp_fmt_span(3600000, s, sizeof(s)), "1h");
	assert_string_equal(mcp_fmt_span(93600000, s, sizeof(s)), "1d2h");
	assert_string_equal(mcp_fmt_span(1500, s, sizeof(s)), "1.5s");
	assert_string_equal(mcp_fmt_time(1700000000123, s, sizeof(s)), "2023-11-14T22:13:20.123Z");
	assert_string_equal(mcp_fmt_value("bytes", 1536, s, sizeof(s)), "1.50KiB");
	assert_string_equal(mcp_fmt_value("nanoseconds", 1.5e9, s, sizeof(s)), "1.50s");
	assert_string_equal(mcp_fmt_value("count", 42, s, sizeof(s)), "42");
	assert_string_equal(mcp_fmt_value("lines", 42, s, sizeof(s)), "42 lines");
	(void)buf_addstr(&u, "/x");
	assert_int_equal(mcp_url_arg(&u, "q", "{a=\"b c\"}"), 0);
	assert_int_equal(mcp_url_arg(&u, "k", "v"), 0);
	assert_string_equal(u.p, "/x?q=%7Ba%3D%22b%20c%22%7D&k=v");
	buf_release(&u);

	struct mcp_text t;
	mcp_text_init(&t, 10); /* 40 bytes */
	assert_true(mcp_text_line(&t, "%s", "0123456789012345678"));
	assert_false(mcp_text_line(&t, "%s", "0123456789012345678901"));
	assert_true(t.truncated);
	assert_false(mcp_text_line(&t, "x")); /* a cut text stays a prefix */
	assert_int_equal(t.b.len, 20);
	mcp_text_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initialize_negotiates_version),
		cmocka_unit_test(test_tools_list_has_schemas),
		cmocka_unit_test(test_protocol_errors_keep_serving),
		cmocka_unit_test(test_top_functions_text),
		cmocka_unit_test(test_callers_and_flamegraph_name_the_caller),
		cmocka_unit_test(test_compare_and_explain_find_growth),
		cmocka_unit_test(test_other_tools),
		cmocka_unit_test(test_tool_failures_are_results),
		cmocka_unit_test(test_max_tokens_truncates),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_stdio_loop),
		cmocka_unit_test(test_text_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
