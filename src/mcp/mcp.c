// SPDX-License-Identifier: Apache-2.0
/*
 * mcp.c - JSON-RPC 2.0 and the MCP methods; see mcp.h. Sources: the
 * JSON-RPC 2.0 specification (error codes, batches, notifications) and
 * the MCP specification revisions 2025-06-18, 2025-03-26, 2024-11-05
 * (basic/lifecycle: version negotiation; server/tools; server/resources).
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "mcp/mcp.h"
#include "mcp/resources.h"
#include "mcp/tools.h"

#include <jansson.h>

#define SERVER_NAME    "profd"
#define SERVER_VERSION "0.1.0"

static const char *const versions[] = { "2025-06-18", "2025-03-26", "2024-11-05" };

static const char instructions[] =
	"profd serves continuous profiles from production (CPU time, allocations, heap, ...). "
	"Start with list_profile_types and label_values (e.g. name service.name) to find what "
	"to look at, top_functions for where the cost goes, callers_callees for who calls a hot "
	"function, explain_change or compare for what changed between two time ranges or "
	"selections. Outputs give values in their units and shares of the total (links=true adds "
	"the exact queries and an explorer link). Read the profd://guide resource for selectors "
	"and time syntax. ";

struct mcp_server {
	const struct mcp_backend *be;
	bool initialized;
	char version[16]; /* negotiated */
};

struct mcp_server *mcp_server_new(const struct mcp_backend *be)
{
	struct mcp_server *s = xcalloc(1, sizeof(*s));

	s->be = be;
	snprintf(s->version, sizeof(s->version), "%s", MCP_LATEST_VERSION);
	return s;
}

void mcp_server_free(struct mcp_server *s)
{
	free(s);
}

bool mcp_server_initialized(const struct mcp_server *s)
{
	return s->initialized;
}

bool mcp_version_supported(const char *v)
{
	for (size_t i = 0; v && i < PROF_ARRAY_SIZE(versions); i++)
		if (!strcmp(v, versions[i]))
			return true;
	return false;
}

/* An error response; @id is borrowed (NULL = null). */
static json_t *error_resp(json_t *id, int code, const char *fmt, ...) PROF_PRINTF(3, 4);
static json_t *error_resp(json_t *id, int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return json_pack("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			 "error", "code", code, "message", msg);
}

/* A result response; @result is stolen. */
static json_t *result_resp(json_t *id, json_t *result)
{
	return json_pack("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result",
			 result ? result : json_object());
}

/* MCP ids are strings or integers (never null). */
static bool valid_id(json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

static json_t *do_initialize(struct mcp_server *s, json_t *id, json_t *params)
{
	json_t *v = json_object_get(params, "protocolVersion");
	const char *want = json_string_value(v);

	if (!json_is_string(v))
		return error_resp(id, MCP_INVALID_PARAMS,
				  "initialize: params.protocolVersion must be a string such as "
				  "\"%s\"",
				  MCP_LATEST_VERSION);
	snprintf(s->version, sizeof(s->version), "%s",
		 mcp_version_supported(want) ? want : MCP_LATEST_VERSION);
	char help[sizeof(instructions) + 4096];

	snprintf(help, sizeof(help), "%s%s", instructions, mcp_tools_shared_args);
	return result_resp(id, json_pack("{s:s, s:{s:{s:b}, s:{s:b, s:b}}, s:{s:s, s:s, s:s}, s:s}",
					 "protocolVersion", s->version, "capabilities", "tools",
					 "listChanged", 0, "resources", "subscribe", 0,
					 "listChanged", 0, "serverInfo", "name", SERVER_NAME,
					 "title", "profd continuous profiling", "version",
					 SERVER_VERSION, "instructions", help));
}

static json_t *do_tools_call(struct mcp_server *s, json_t *id, json_t *params)
{
	json_t *name = json_object_get(params, "name"),
	       *args = json_object_get(params, "arguments");
	json_t *res = NULL;
	struct prof_err e;
	int rc;

	prof_err_init(&e);
	if (!json_is_string(name))
		return error_resp(id, MCP_INVALID_PARAMS,
				  "tools/call: params.name must be a tool name (tools/list)");
	if (args && !json_is_object(args) && !json_is_null(args))
		return error_resp(id, MCP_INVALID_PARAMS,
				  "tools/call: params.arguments must be an object");
	rc = mcp_tools_call(s->be, json_string_value(name), json_is_object(args) ? args : NULL,
			    &res, &e);
	if (rc == -PROF_ENOTFOUND || rc == -EINVAL)
		return error_resp(id, MCP_INVALID_PARAMS, "%s", e.msg);
	if (rc || !res)
		return error_resp(id, MCP_INTERNAL_ERROR, "tools/call: %s", prof_strerror(rc));
	return result_resp(id, res);
}

static json_t *do_resources_read(struct mcp_server *s, json_t *id, json_t *params)
{
	json_t *uri = json_object_get(params, "uri"), *res = NULL;
	struct prof_err perr;
	int rc;

	prof_err_init(&perr);
	if (!json_is_string(uri))
		return error_resp(id, MCP_INVALID_PARAMS,
				  "resources/read: params.uri must be a string (resources/list)");
	rc = mcp_resources_read(s->be, json_string_value(uri), &res, &perr);
	if (rc == -PROF_ENOTFOUND) {
		json_t *e = error_resp(id, MCP_RESOURCE_NOT_FOUND, "%s", perr.msg);

		json_object_set_new(json_object_get(e, "error"), "data",
				    json_pack("{s:O}", "uri", uri));
		return e;
	}
	if (rc || !res)
		return error_resp(id, MCP_INTERNAL_ERROR, "resources/read: %s", perr.msg);
	return result_resp(id, res);
}

/* One message (already known to be JSON): a response, or NULL when none is due. */
static json_t *handle_one(struct mcp_server *s, json_t *m)
{
	json_t *id, *method, *params;
	const char *meth;

	if (!json_is_object(m))
		return error_resp(NULL, MCP_INVALID_REQUEST,
				  "Invalid Request: a JSON-RPC message is an object");
	id = json_object_get(m, "id");
	method = json_object_get(m, "method");
	if (!method && id && (json_object_get(m, "result") || json_object_get(m, "error")))
		return NULL; /* a response to a request we never send: ignore */
	if (id && !valid_id(id))
		return error_resp(NULL, MCP_INVALID_REQUEST,
				  "Invalid Request: id must be a string or an integer");
	if (!json_is_string(json_object_get(m, "jsonrpc")) ||
	    strcmp(json_string_value(json_object_get(m, "jsonrpc")), "2.0"))
		return error_resp(id, MCP_INVALID_REQUEST,
				  "Invalid Request: \"jsonrpc\" must be \"2.0\"");
	if (!json_is_string(method))
		return error_resp(id, MCP_INVALID_REQUEST,
				  "Invalid Request: \"method\" must be a string");
	meth = json_string_value(method);
	params = json_object_get(m, "params");
	if (!id) {
		/* A notification: never answered, whatever it is. */
		if (!strcmp(meth, "notifications/initialized"))
			s->initialized = true;
		return NULL;
	}
	if (params && !json_is_object(params))
		return error_resp(id, MCP_INVALID_PARAMS,
				  "Invalid params: \"params\" must be an object");
	if (!strcmp(meth, "initialize"))
		return do_initialize(s, id, params);
	if (!strcmp(meth, "ping"))
		return result_resp(id, json_object());
	if (!strcmp(meth, "tools/list"))
		return result_resp(id, json_pack("{s:o}", "tools", mcp_tools_list()));
	if (!strcmp(meth, "tools/call"))
		return do_tools_call(s, id, params);
	if (!strcmp(meth, "resources/list"))
		return result_resp(id, json_pack("{s:o}", "resources", mcp_resources_list()));
	if (!strcmp(meth, "resources/templates/list"))
		return result_resp(id, json_pack("{s:[]}", "resourceTemplates"));
	if (!strcmp(meth, "resources/read"))
		return do_resources_read(s, id, params);
	return error_resp(id, MCP_METHOD_NOT_FOUND, "Method not found: %.200s", meth);
}

/* Serialize @resp (stolen) onto @out; an oversized one becomes an internal error. */
static int emit(struct buf *out, json_t *resp, json_t *id)
{
	char *txt = json_dumps(resp, JSON_COMPACT);
	size_t n = txt ? strlen(txt) : 0;
	int rc = 0;

	if (!txt || n > MCP_MAX_RESPONSE || buf_add(out, txt, n)) {
		json_t *e = error_resp(id, MCP_INTERNAL_ERROR,
				       "Internal error: the response is larger than %zu bytes",
				       MCP_MAX_RESPONSE);
		char *et = json_dumps(e, JSON_COMPACT);

		rc = -PROF_ETOOBIG;
		(void)buf_addstr(out, et ? et : "");
		free(et);
		json_decref(e);
	}
	free(txt);
	json_decref(resp);
	return rc;
}

int mcp_server_handle(struct mcp_server *s, const char *msg, size_t len, struct buf *out)
{
	json_error_t jerr;
	json_t *in, *resp;
	int rc = 0;

	if (len > MCP_MAX_MESSAGE)
		return emit(out,
			    error_resp(NULL, MCP_INVALID_REQUEST,
				       "Invalid Request: the message is larger than %zu bytes",
				       MCP_MAX_MESSAGE),
			    NULL);
	in = json_loadb(msg, len, JSON_DECODE_ANY, &jerr);
	if (!in)
		return emit(out,
			    error_resp(NULL, MCP_PARSE_ERROR, "Parse error: %s (at byte %d)",
				       jerr.text, jerr.position),
			    NULL);
	if (!json_is_array(in)) {
		resp = handle_one(s, in);
		if (resp)
			rc = emit(out, resp,
				  valid_id(json_object_get(in, "id")) ? json_object_get(in, "id")
								      : NULL);
		json_decref(in);
		return rc;
	}
	if (!json_array_size(in) || json_array_size(in) > MCP_MAX_BATCH) {
		rc = emit(out,
			  error_resp(NULL, MCP_INVALID_REQUEST,
				     "Invalid Request: a batch holds 1 to %d messages, got %zu",
				     MCP_MAX_BATCH, json_array_size(in)),
			  NULL);
		json_decref(in);
		return rc;
	}
	json_t *all = json_array(), *m;
	size_t i;

	json_array_foreach(in, i, m) if ((resp = handle_one(s, m)))
		json_array_append_new(all, resp);
	if (json_array_size(all))
		rc = emit(out, all, NULL);
	else
		json_decref(all);
	json_decref(in);
	return rc;
}
