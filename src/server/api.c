// SPDX-License-Identifier: Apache-2.0
/*
 * api.c - the JSON query API under /api/v1 and /healthz. The query views
 * (flame graph, table, series, sandwich, diff, flame chart, labels,
 * exports) all go through query_request_run (query/request.h), which
 * parses their parameters; this file maps URLs to views, picks the
 * dataset's store and turns error codes into HTTP statuses.
 *
 * Time parameters (from, to) take unix milliseconds, "now" or
 * "now-<duration>" ("now-15m", "now-1h"; base/parse.h); the range is
 * inclusive and defaults to the last hour. Bad parameters get 400 with
 * {"error": "<which parameter, what was expected, what was given>"}; so
 * does a parameter given twice unless it is a list (qargs.h).
 */
#include "base/compat.h"
#include "base/parse.h"
#include "query/request.h"
#include "server/qargs.h"
#include "server/route.h"

#define DEFAULT_RANGE_MS (60 * 60 * 1000LL)
/* Unix ms beyond which ms * 1e6 overflows int64 ns. */
#define MAX_ABS_MS (INT64_MAX / 1000000 - 1)

void server_handle_healthz(struct server_req *rq, struct server_reply *rp)
{
	(void)rq;
	rp->status = 200;
	rp->content_type = "text/plain; charset=utf-8";
	rp->cache = "no-store";
	(void)buf_addstr(&rp->body, "ok\n");
}

/* from/to into an inclusive ns range; false after replying 400. */
static bool time_range(struct server_req *rq, struct server_reply *rp, int64_t *from_ns,
		       int64_t *to_ns)
{
	int64_t now = prof_now_ns() / 1000000, from, to;
	const char *f, *t;

	if (server_arg_once(rq, "from", &f) || server_arg_once(rq, "to", &t)) {
		server_reply_json_error(rp, 400, "parameters 'from'/'to': each takes one value");
		return false;
	}
	to = now;
	from = now - DEFAULT_RANGE_MS;
	if (t && *t && parse_time_ms(t, now, &to)) {
		server_reply_json_error(rp, 400,
					"parameter 'to': expected unix milliseconds, 'now' or "
					"'now-<duration>' such as now-15m, got '%s'",
					t);
		return false;
	}
	if (f && *f && parse_time_ms(f, now, &from)) {
		server_reply_json_error(rp, 400,
					"parameter 'from': expected unix milliseconds, 'now' or "
					"'now-<duration>' such as now-15m, got '%s'",
					f);
		return false;
	}
	if (from < -MAX_ABS_MS || from > MAX_ABS_MS || to < -MAX_ABS_MS || to > MAX_ABS_MS) {
		server_reply_json_error(rp, 400, "parameters 'from'/'to': out of range");
		return false;
	}
	if (from > to) {
		server_reply_json_error(
			rp, 400, "parameter 'from' (%" PRId64 ") is after 'to' (%" PRId64 ")", from,
			to);
		return false;
	}
	*from_ns = from * 1000000;
	*to_ns = to * 1000000 + 999999;
	return true;
}

struct types_out {
	struct buf *b;
	size_t n;     /* types met */
	size_t limit; /* written at most (SIZE_MAX: all) */
};

static int emit_type(void *arg, const char *type)
{
	struct types_out *o = arg;
	int rc;

	if (o->n >= o->limit) {
		o->n++;
		return 0;
	}
	rc = o->n++ ? buf_add(o->b, ",", 1) : 0;
	return rc ? rc : buf_add_json_str(o->b, type, strlen(type));
}

#define TYPES_MAX_LIMIT 100000

void server_handle_profile_types(struct server_req *rq, struct server_reply *rp)
{
	struct store *st = server_req_store(rq, SERVER_PERM_QUERY, rp);
	struct types_out o = { &rp->body, 0, SIZE_MAX };
	const char *lim = NULL;
	int64_t from, to;
	uint64_t limit = 0;

	if (!st)
		return;
	if (!time_range(rq, rp, &from, &to))
		return;
	/* With limit=N: {"values":[...],"total","limit","truncated"}, as the label listings. */
	if (server_arg_once(rq, "limit", &lim)) {
		server_reply_json_error(rp, 400, "parameter 'limit' given more than once");
		return;
	}
	if (lim && (parse_u64(lim, &limit) || limit < 1 || limit > TYPES_MAX_LIMIT)) {
		server_reply_json_error(rp, 400, "parameter 'limit': expected 1..%d, got '%.32s'",
					TYPES_MAX_LIMIT, lim);
		return;
	}
	if (lim) {
		o.limit = (size_t)limit;
		(void)buf_add(&rp->body, "{\"values\":", 10);
	}
	(void)buf_add(&rp->body, "[", 1);
	int rc = store_types(st, from, to, emit_type, &o);
	if (rc) {
		server_reply_json_error(rp, 500, "listing profile types failed: %s",
					prof_strerror(rc));
		return;
	}
	(void)buf_add(&rp->body, "]", 1);
	if (lim)
		(void)buf_addf(&rp->body, ",\"total\":%zu,\"limit\":%zu,\"truncated\":%s}", o.n,
			       o.limit, o.n > o.limit ? "true" : "false");
	(void)buf_add(&rp->body, "\n", 1);
	rp->status = 200;
	rp->content_type = "application/json";
	rp->cache = "no-store";
}

/* --- the query views (query/request.h): one handler for all of them ------------------- */

/* Answers are bounded: a request can ask for a lot, not for unbounded memory. */
#define QUERY_MAX_ANSWER ((size_t)256 << 20)

static const struct {
	const char *path, *view;
} query_routes[] = {
	{ "/api/v1/flamegraph", "flamegraph" },
	{ "/api/v1/table", "table" },
	{ "/api/v1/series", "series" },
	{ "/api/v1/sandwich", "sandwich" },
	{ "/api/v1/source", "source" },
	{ "/api/v1/diff", "diff" },
	{ "/api/v1/flamechart", "flamechart" },
	{ "/api/v1/labels", "labels" },
	{ "/api/v1/export/pprof", "export_pprof" },
	{ "/api/v1/export/folded", "export_folded" },
	{ "/api/v1/export/svg", "export_svg" },
	{ "/api/v1/health/symbols", "symbol_health" },
};

#define LABELS_PREFIX "/api/v1/labels/"
#define VALUES_SUFFIX "/values"
/*
 * /api/v1/traces/{trace_id}/profile: the flame graph of one trace's
 * samples (docs/api.md), the flamegraph view with trace_id from the path
 * and a range that defaults to the last day.
 */
#define TRACES_PREFIX	   "/api/v1/traces/"
#define PROFILE_SUFFIX	   "/profile"
#define TRACE_DEFAULT_FROM "now-24h"
#define TRACE_ID_MAX	   64

/* The trace ID part of a /api/v1/traces/{trace_id}/profile URL (@n bytes), or NULL. */
static const char *trace_route_id(const char *url, size_t *n)
{
	size_t len = strlen(url), pl = strlen(TRACES_PREFIX), sl = strlen(PROFILE_SUFFIX);

	if (len <= pl + sl || strncmp(url, TRACES_PREFIX, pl) ||
	    strcmp(url + len - sl, PROFILE_SUFFIX))
		return NULL;
	*n = len - pl - sl;
	return memchr(url + pl, '/', *n) ? NULL : url + pl;
}

const char *server_query_view(const char *url)
{
	size_t n = strlen(url), pl = strlen(LABELS_PREFIX), sl = strlen(VALUES_SUFFIX), tn;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(query_routes); i++)
		if (!strcmp(url, query_routes[i].path))
			return query_routes[i].view;
	if (n > pl + sl && !strncmp(url, LABELS_PREFIX, pl) && !strcmp(url + n - sl, VALUES_SUFFIX))
		return "label_values";
	if (trace_route_id(url, &tn))
		return "flamegraph";
	return NULL;
}

struct query_ctx {
	struct server_qargs args; /* each parameter once, repeats combined (qargs.h) */
	char name[256];		  /* the label name of /api/v1/labels/NAME/values */
	char trace[TRACE_ID_MAX]; /* the trace ID of /api/v1/traces/ID/profile, "" otherwise */
};

static const char *query_arg(void *arg, const char *name)
{
	struct query_ctx *c = arg;
	const char *v;

	if (c->name[0] && !strcmp(name, "name"))
		return c->name;
	if (c->trace[0] && !strcmp(name, "trace_id"))
		return c->trace;
	v = server_qargs_get(&c->args, name);
	if (!v && c->trace[0] && !strcmp(name, "from"))
		return TRACE_DEFAULT_FROM;
	return v;
}

struct arg_check {
	const char *view;
	struct server_qargs *args;
	struct prof_err *err;
	int rc;
	bool trace_in_path;
};

static int check_arg(void *arg, const char *key, const char *value)
{
	struct arg_check *a = arg;

	if (a->trace_in_path && !strcmp(key, "trace_id")) {
		a->rc = prof_err_set(a->err, -EINVAL, -1,
				     "trace_id is given by the path (/api/v1/traces/ID/profile)");
		return a->rc;
	}
	a->rc = query_request_check_param(a->view, key, a->err);
	if (!a->rc)
		a->rc = server_qargs_add(a->args, key, value, a->err);
	return a->rc;
}

void server_handle_query(struct server_req *rq, struct server_reply *rp)
{
	const char *view = server_query_view(rq->url);
	struct store *st = server_req_store(rq, SERVER_PERM_QUERY, rp);
	struct query_ctx ctx = { .name = "", .trace = "" };
	struct prof_err err;
	const char *ct, *tid;
	size_t tn;
	int rc;

	if (!st)
		return;
	if (!view) {
		server_reply_json_error(rp, 404, "no such API endpoint");
		return;
	}
	if (!strcmp(view, "label_values")) {
		size_t pl = strlen(LABELS_PREFIX), k = strlen(rq->url) - pl - strlen(VALUES_SUFFIX);

		if (k >= sizeof(ctx.name)) {
			server_reply_json_error(rp, 400, "label name longer than %zu bytes",
						sizeof(ctx.name) - 1);
			return;
		}
		memcpy(ctx.name, rq->url + pl, k);
		ctx.name[k] = '\0';
	}
	if ((tid = trace_route_id(rq->url, &tn))) {
		if (tn >= sizeof(ctx.trace)) {
			server_reply_json_error(rp, 400, "trace_id: expected 32 hex digits");
			return;
		}
		memcpy(ctx.trace, tid, tn);
		ctx.trace[tn] = '\0';
	}
	struct query_env env = { st, rq->srv->sym, 0, rq->srv->src_root };
	prof_err_init(&err);
	/* A misspelt or a repeated single parameter is an error, not a silent default. */
	struct arg_check ac = { view, &ctx.args, &err, 0, ctx.trace[0] != '\0' };
	server_args_foreach(rq, check_arg, &ac);
	if (ac.rc) {
		server_qargs_release(&ctx.args);
		server_reply_json_error(rp, 400, "%s", err.msg);
		return;
	}
	buf_reset(&rp->body);
	rp->body.max = QUERY_MAX_ANSWER;
	rc = query_request_run(&env, view, query_arg, &ctx, &rp->body, &ct, &err);
	server_qargs_release(&ctx.args);
	if (rc) {
		rp->body.max = 0;
		server_reply_json_error(rp, query_request_status(rc), "%s",
					err.msg[0] ? err.msg : prof_strerror(rc));
		return;
	}
	rp->status = 200;
	rp->content_type = ct;
	rp->cache = "no-store";
}

void server_handle_flamegraph(struct server_req *rq, struct server_reply *rp)
{
	server_handle_query(rq, rp);
}
