// SPDX-License-Identifier: Apache-2.0
/*
 * api.c - the JSON query API under /api/v1 and /healthz.
 *
 * Time parameters (from, to) take unix milliseconds, "now" or
 * "now-<duration>" ("now-15m", "now-1h"; base/parse.h); the range is
 * inclusive and defaults to the last hour. Bad parameters get 400 with
 * {"error": "<which parameter, what was expected, what was given>"}.
 */
#include "base/compat.h"
#include "base/parse.h"
#include "query/flamegraph.h"
#include "query/selector.h"
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
	const char *f = server_arg(rq, "from"), *t = server_arg(rq, "to");

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
	size_t n;
};

static int emit_type(void *arg, const char *type)
{
	struct types_out *o = arg;
	int rc = o->n++ ? buf_add(o->b, ",", 1) : 0;

	return rc ? rc : buf_add_json_str(o->b, type, strlen(type));
}

void server_handle_profile_types(struct server_req *rq, struct server_reply *rp)
{
	struct store_head *h = store_get_head(rq->srv->st);
	struct types_out o = { &rp->body, 0 };
	int64_t from, to;

	if (!time_range(rq, rp, &from, &to))
		return;
	(void)buf_add(&rp->body, "[", 1);
	store_head_rdlock(h);
	int rc = store_head_types(h, from, to, emit_type, &o);
	store_head_rdunlock(h);
	if (rc) {
		server_reply_json_error(rp, 500, "listing profile types failed: %s",
					prof_strerror(rc));
		return;
	}
	(void)buf_add(&rp->body, "]\n", 2);
	rp->status = 200;
	rp->content_type = "application/json";
	rp->cache = "no-store";
}

void server_handle_flamegraph(struct server_req *rq, struct server_reply *rp)
{
	const char *type = server_arg(rq, "type");
	const char *query = server_arg(rq, "query");
	const char *mn = server_arg(rq, "max_nodes");
	struct query_selector sel;
	struct query_flamegraph fg;
	struct prof_err err;
	uint64_t max_nodes = SERVER_DEFAULT_MAX_NODES;
	int64_t from, to;
	int rc;

	if (mn && *mn && (parse_u64(mn, &max_nodes) || max_nodes < 1)) {
		server_reply_json_error(
			rp, 400, "parameter 'max_nodes': expected a positive integer, got '%s'",
			mn);
		return;
	}
	if (max_nodes > SERVER_MAX_MAX_NODES) {
		server_reply_json_error(rp, 400, "parameter 'max_nodes': at most %d, got '%s'",
					SERVER_MAX_MAX_NODES, mn);
		return;
	}
	if (!time_range(rq, rp, &from, &to))
		return;
	prof_err_init(&err);
	if (query_selector_parse(query, &sel, &err)) {
		server_reply_json_error(rp, 400, "parameter 'query': %s", err.msg);
		query_selector_release(&sel);
		return;
	}
	if (sel.type && type && *type && strcmp(sel.type, type)) {
		server_reply_json_error(rp, 400,
					"parameter 'type' (%s) and the type in 'query' (%s) differ",
					type, sel.type);
		query_selector_release(&sel);
		return;
	}
	if (!type || !*type)
		type = sel.type;
	if (!type || !*type) {
		server_reply_json_error(rp, 400,
					"parameter 'type' is required, e.g. "
					"type=process_cpu:cpu:nanoseconds:cpu:nanoseconds "
					"(see /api/v1/profile-types)");
		query_selector_release(&sel);
		return;
	}
	struct query_flame_params p = {
		.type = type,
		.m = sel.m,
		.nm = sel.n,
		.from_ns = from,
		.to_ns = to,
		.max_nodes = (size_t)max_nodes,
		.sym = rq->srv->sym,
	};
	rc = query_flamegraph_build(store_get_head(rq->srv->st), &p, &fg, &err);
	if (!rc)
		rc = query_flamegraph_write_json(&fg, type, (size_t)max_nodes, &rp->body);
	if (rc) {
		server_reply_json_error(rp, rc == -EINVAL ? 400 : 500, "flamegraph: %s",
					err.msg[0] ? err.msg : prof_strerror(rc));
	} else {
		(void)buf_add(&rp->body, "\n", 1);
		rp->status = 200;
		rp->content_type = "application/json";
		rp->cache = "no-store";
	}
	query_flamegraph_release(&fg);
	query_selector_release(&sel);
}
