// SPDX-License-Identifier: Apache-2.0
/*
 * resources.c - the MCP resources; see resources.h.
 */
#include "base/compat.h"
#include "base/err.h"
#include "mcp/resources.h"
#include "mcp/tools.h"

#define GUIDE_URI "profd://guide"
#define TYPES_URI "profd://profile-types"

static const char guide[] =
	"# Investigating production profiles with profd\n"
	"\n"
	"profd stores continuous profiles (CPU time, allocations, heap, locks) of every "
	"process it is sent, labelled with OpenTelemetry resource attributes.\n"
	"\n"
	"Selectors pick series, PromQL style on attribute names: {service.name=\"api\"}, "
	"{k8s.namespace.name=\"shop\", k8s.pod.name=~\"cart-.*\"}, {process.executable.name!=\"\"}; "
	"operators =, !=, =~, !~ (regexes anchored). {} selects everything.\n"
	"\n"
	"Time ranges: from/to as unix milliseconds, RFC 3339 (2024-05-01T12:00:00Z), 'now' or "
	"'now-<duration>' (now-15m, now-6h, now-7d); default the last hour; at most 31 days.\n"
	"\n"
	"Profile types are name:sample_type:sample_unit:period_type:period_unit, e.g. "
	"process_cpu:cpu:nanoseconds:cpu:nanoseconds (CPU time; values are durations) or "
	"memory:alloc_space:bytes:space:bytes (allocated bytes). Self is the cost in a function "
	"itself, total includes its callees; shares are of the selection's total.\n"
	"\n"
	"A workflow: list_profile_types -> list_labels / label_values (find the service) -> "
	"top_functions (where does time go) -> callers_callees (who calls the hot function, what "
	"it calls) or flamegraph_summary (the hot paths) -> source_location (where it lives) -> "
	"function_timeseries (since when) -> explain_change or compare (what changed between "
	"two time ranges, e.g. before and after a deploy, or canary vs stable).\n"
	"\n"
	"With links=true a tool output ends with the exact query API requests that produced it "
	"and a link to the same view in the profd explorer, for a person to check. Outputs are "
	"bounded by "
	"max_tokens (default 2000) and say 'truncated' when cut.\n";

json_t *mcp_resources_list(void)
{
	return json_pack(
		"[{s:s, s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s, s:s}]", "uri", GUIDE_URI, "name",
		"guide", "title", "How to investigate profiles with profd", "description",
		"Selectors, time ranges, profile types, units and a workflow for the tools.",
		"mimeType", "text/markdown", "uri", TYPES_URI, "name", "profile-types", "title",
		"Profile types with data", "description",
		"The profile types with data in the last 24 hours, with their units.", "mimeType",
		"text/plain");
}

int mcp_resources_read(const struct mcp_backend *be, const char *uri, json_t **result,
		       struct prof_err *err)
{
	*result = NULL;
	if (!strcmp(uri, GUIDE_URI)) {
		*result = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", GUIDE_URI,
				    "mimeType", "text/markdown", "text", guide);
		return 0;
	}
	if (!strcmp(uri, TYPES_URI)) {
		json_t *args = json_pack("{s:s}", "from", "now-24h"), *res = NULL;
		int rc = mcp_tools_call(be, "list_profile_types", args, &res, err);
		const char *text;

		json_decref(args);
		if (rc)
			return rc;
		text = json_string_value(json_object_get(
			json_array_get(json_object_get(res, "content"), 0), "text"));
		*result = json_pack("{s:[{s:s, s:s, s:s}]}", "contents", "uri", TYPES_URI,
				    "mimeType", "text/plain", "text", text ? text : "");
		json_decref(res);
		return 0;
	}
	return prof_err_set(err, -PROF_ENOTFOUND, -1,
			    "Resource not found: %.200s (resources/list names them)", uri);
}
