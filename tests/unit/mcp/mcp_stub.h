/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mcp_stub.h - a query API stand-in for the MCP tests and the fuzz target:
 * fixed JSON answers, shaped like the real API's (docs/api.md), for a
 * profile where main -> serve -> hot_loop holds 60% of the CPU time in
 * side A (from=1700000000000) and 80% in side B (from=1700000600000).
 * A query containing "bad" is refused with 400, as the API refuses a bad
 * selector; a path containing "down" fails as an unreachable server. The
 * source view has parse_request's lines only, the hottest one's text with
 * a NUL byte (JSON "\u0000", as the API writes a binary file's bytes).
 */
#ifndef PROF_TESTS_MCP_STUB_H
#define PROF_TESTS_MCP_STUB_H

#include "base/buf.h"
#include "base/compat.h"
#include "mcp/backend.h"

#define STUB_CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

static const char stub_types[] = "[\"" STUB_CPU "\",\"memory:alloc_space:bytes:space:bytes\"]";

static const char stub_table_a[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"total\":2000000000,\"samples\":200,"
	"\"functions\":5,\"matched\":5,\"unsymbolized\":0,\"rows\":["
	"{\"name\":\"hot_loop\",\"self\":1200000000,\"total\":1200000000,\"self_samples\":120,"
	"\"total_samples\":120},"
	"{\"name\":\"parse_request\",\"self\":600000000,\"total\":600000000,\"self_samples\":60,"
	"\"total_samples\":60},"
	"{\"name\":\"gc\",\"self\":200000000,\"total\":200000000,\"self_samples\":20,"
	"\"total_samples\":20},"
	"{\"name\":\"main\",\"self\":0,\"total\":2000000000,\"self_samples\":0,\"total_samples\":200},"
	"{\"name\":\"serve\",\"self\":0,\"total\":1800000000,\"self_samples\":0,"
	"\"total_samples\":180}]}";

static const char stub_table_b[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"total\":2000000000,\"samples\":200,"
	"\"functions\":5,\"matched\":5,\"unsymbolized\":0,\"rows\":["
	"{\"name\":\"hot_loop\",\"self\":1600000000,\"total\":1600000000,\"self_samples\":160,"
	"\"total_samples\":160},"
	"{\"name\":\"parse_request\",\"self\":200000000,\"total\":200000000,\"self_samples\":20,"
	"\"total_samples\":20},"
	"{\"name\":\"gc\",\"self\":200000000,\"total\":200000000,\"self_samples\":20,"
	"\"total_samples\":20},"
	"{\"name\":\"main\",\"self\":0,\"total\":2000000000,\"self_samples\":0,\"total_samples\":200},"
	"{\"name\":\"serve\",\"self\":0,\"total\":1800000000,\"self_samples\":0,"
	"\"total_samples\":180}]}";

static const char stub_flamegraph[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"total\":2000000000,\"samples\":200,"
	"\"truncated\":{\"nodes\":0,\"total\":0},\"root\":{\"name\":\"total\",\"self\":0,"
	"\"total\":2000000000,\"children\":[{\"name\":\"main\",\"self\":0,\"total\":2000000000,"
	"\"children\":[{\"name\":\"serve\",\"self\":0,\"total\":1800000000,\"children\":["
	"{\"name\":\"hot_loop\",\"self\":1200000000,\"total\":1200000000,\"children\":[]},"
	"{\"name\":\"parse_request\",\"self\":600000000,\"total\":600000000,\"children\":[]}]},"
	"{\"name\":\"gc\",\"self\":200000000,\"total\":200000000,\"children\":[]}]}]}}";

static const char stub_sandwich[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"function\":\"hot_loop\","
	"\"found\":true,\"self\":1200000000,\"total\":1200000000,\"profile_total\":2000000000,"
	"\"samples\":200,\"callers\":{\"root\":{\"name\":\"hot_loop\",\"self\":1200000000,"
	"\"total\":1200000000,\"children\":[{\"name\":\"serve\",\"self\":0,\"total\":1200000000,"
	"\"children\":[{\"name\":\"main\",\"self\":1200000000,\"total\":1200000000,"
	"\"children\":[]}]}]}},\"callees\":{\"root\":{\"name\":\"hot_loop\",\"self\":1200000000,"
	"\"total\":1200000000,\"children\":[]}}}";

static const char stub_sandwich_missing[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"function\":\"nosuch\","
	"\"found\":false,\"self\":0,\"total\":0,\"profile_total\":2000000000,\"samples\":200,"
	"\"callers\":{\"root\":{\"name\":\"nosuch\",\"self\":0,\"total\":0,\"children\":[]}},"
	"\"callees\":{\"root\":{\"name\":\"nosuch\",\"self\":0,\"total\":0,\"children\":[]}}}";

static const char stub_series_fn[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"cumulative\":true,"
	"\"timestamps\":[1700000000000,1700000060000,1700000120000],\"series\":[{\"labels\":{},"
	"\"total\":2800000000,\"values\":[1200000000,0,1600000000]}]}";

static const char stub_series_all[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"cumulative\":true,"
	"\"timestamps\":[1700000000000,1700000060000,1700000120000],\"series\":[{\"labels\":{},"
	"\"total\":4000000000,\"values\":[2000000000,0,2000000000]}]}";

static const char stub_diff[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"a\":{\"total\":2000000000,"
	"\"samples\":200},\"b\":{\"total\":2000000000,\"samples\":200},\"root\":{\"name\":\"total\","
	"\"a_total\":2000000000,\"b_total\":2000000000,\"children\":[{\"name\":\"main\","
	"\"a_total\":2000000000,\"b_total\":2000000000,\"children\":[{\"name\":\"serve\","
	"\"a_total\":1800000000,\"b_total\":1800000000,\"children\":[{\"name\":\"hot_loop\","
	"\"a_total\":1200000000,\"b_total\":1600000000,\"children\":[]},{\"name\":"
	"\"parse_request\",\"a_total\":600000000,\"b_total\":200000000,\"children\":[]}]},"
	"{\"name\":\"gc\",\"a_total\":200000000,\"b_total\":200000000,\"children\":[]}]}]}}";

static const char stub_source_parse[] =
	"{\"type\":\"" STUB_CPU "\",\"unit\":\"nanoseconds\",\"function\":\"parse_request\","
	"\"found\":true,\"self\":600000000,\"total\":600000000,\"profile_total\":2000000000,"
	"\"samples\":200,\"sort\":\"self\",\"limit\":5,\"nlines\":2,\"truncated\":false,"
	"\"builds\":[],\"lines\":[{\"file\":\"/src/parse.c\",\"build_id\":\"\",\"line\":42,"
	"\"self\":500000000,\"total\":500000000,\"text\":\"\\tscan(p);\\u0000\\u0001\"},"
	"{\"file\":\"/src/parse.c\",\"build_id\":\"\",\"line\":7,\"self\":100000000,"
	"\"total\":100000000,\"text\":\"int n;\"}],\"files\":[{\"file\":\"/src/parse.c\","
	"\"build_id\":\"\",\"self\":600000000,\"lines\":2,\"source\":\"available\"}]}";

static const char stub_health[] =
	"{\"binaries\":[{\"path\":\"/usr/bin/api\",\"build_id\":\"4fe3aa\",\"status\":\"symbols\"}]}";

/* struct mcp_backend.get for the stub; @ctx counts the calls (size_t *), may be NULL. */
static int stub_get(void *ctx, const char *pq, struct buf *out, int *status)
{
	const char *body = NULL;
	bool side_b = strstr(pq, "from=1700000600000") != NULL;

	if (ctx)
		(*(size_t *)ctx)++;
	*status = 200;
	if (strstr(pq, "down")) {
		(void)buf_addstr(out, "connect: connection refused");
		return -ECONNREFUSED;
	}
	if (strstr(pq, "deep") && !strncmp(pq, "/api/v1/flamegraph", 18)) {
		/* a stack too deep for jansson (2048 levels): 1100 nested nodes */
		int rc = buf_addstr(out, "{\"total\":40,\"samples\":2,\"root\":");

		for (int i = 0; i < 1100 && !rc; i++)
			rc = buf_addstr(out,
					"{\"name\":\"f\",\"self\":0,\"total\":40,\"children\":[");
		for (int i = 0; i < 1100 && !rc; i++)
			rc = buf_addstr(out, "]}");
		return rc ? rc : buf_addstr(out, "}");
	}
	if (!strncmp(pq, "/api/v1/export/folded", 21))
		return buf_addstr(out, "main;c 10\nmain;a;b 30\n");
	if (strstr(pq, "bad")) {
		*status = 400;
		body = "{\"error\":\"parameter 'query': expected a selector such as "
		       "{service.name=\\\"api\\\"}\"}";
	} else if (!strncmp(pq, "/api/v1/profile-types", 21)) {
		body = stub_types;
	} else if (!strncmp(pq, "/api/v1/labels/", 15)) {
		body = "[\"api\",\"db\"]";
	} else if (!strncmp(pq, "/api/v1/labels", 14)) {
		body = "[\"host.name\",\"service.name\"]";
	} else if (!strncmp(pq, "/api/v1/table", 13)) {
		body = side_b ? stub_table_b : stub_table_a;
	} else if (!strncmp(pq, "/api/v1/flamegraph", 18)) {
		body = stub_flamegraph;
	} else if (!strncmp(pq, "/api/v1/sandwich", 16)) {
		body = strstr(pq, "function=hot_loop") ? stub_sandwich : stub_sandwich_missing;
	} else if (!strncmp(pq, "/api/v1/series", 14)) {
		body = strstr(pq, "function=") ? stub_series_fn : stub_series_all;
	} else if (!strncmp(pq, "/api/v1/diff", 12)) {
		body = stub_diff;
	} else if (!strncmp(pq, "/api/v1/source", 14) && strstr(pq, "function=parse_request")) {
		body = stub_source_parse;
	} else if (!strncmp(pq, "/api/v1/health/symbols", 22)) {
		body = stub_health;
	} else {
		*status = 404;
		body = "{\"error\":\"no such API endpoint\"}";
	}
	return buf_addstr(out, body);
}

#endif
