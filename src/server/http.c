// SPDX-License-Identifier: Apache-2.0
/*
 * http.c - libmicrohttpd glue: daemon start/stop, request bodies with a
 * size cap, routing, replies, access log; see http.h.
 *
 * MHD calls the access handler several times per request: once when the
 * headers are in (no body yet; a 413 for an announced oversized body or a
 * 404/405 can be answered right then, before the body is read), once per
 * body chunk, and once with *upload_data_size == 0 when the body is
 * complete. A chunked body that outgrows the cap is drained and dropped,
 * then answered with 413.
 */
#include "base/compat.h"
#include "base/mhd_dl.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/utf8.h"
#include "query/scratch.h"
#include "server/conns.h"
#include "server/grpc.h"
#include "server/pipeline.h"
#include "server/local.h"
#include "server/route.h"
#include "server/tls.h"
#include "server/workers.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

enum job_state {
	JOB_NONE,
	JOB_RUNNING, /* on a worker thread; the connection is suspended */
	JOB_DONE,    /* @rp is the answer; the connection was resumed */
};

struct conn_state {
	struct server_job job;	/* the handler's run on a worker thread (workers.h) */
	struct server_req rq;	/* ... with the request */
	struct server_reply rp; /* ... and its answer */
	int job_state;		/* enum job_state (atomic) */
	int route;		/* enum route */
	struct server_conn *gc; /* the connection guard's entry (conns.h), or NULL */
	struct buf body;
	bool too_big;
	bool answered;		      /* a reply was queued (possibly before the body was read) */
	bool counted;		      /* counted in server.inflight */
	bool slot;		      /* holds an ingest slot (pipeline.h server_ingest_enter) */
	struct server_auth auth;      /* ingest routes: checked before the body is read */
	struct server_upload *upload; /* debuginfo upload: the body goes to a file */
	int64_t start_ns;
};

static void slot_done(struct server *srv, struct conn_state *cs)
{
	if (cs->slot) {
		server_ingest_leave(srv);
		cs->slot = false;
	}
}

static void inflight_done(struct server *srv, struct conn_state *cs)
{
	if (cs->counted) {
		__atomic_sub_fetch(&srv->inflight, 1, __ATOMIC_SEQ_CST);
		cs->counted = false;
	}
}

enum route {
	ROUTE_NONE,
	ROUTE_OTLP,
	ROUTE_PYROSCOPE,
	ROUTE_INGEST_PPROF,
	ROUTE_PUSH, /* Pyroscope's Connect push API */
	ROUTE_HEALTHZ,
	ROUTE_READYZ,
	ROUTE_METRICS,
	ROUTE_USAGE,
	ROUTE_TYPES,
	ROUTE_FLAMEGRAPH,
	ROUTE_QUERY, /* the other query views: server_query_view */
	ROUTE_DEBUGINFO,
	ROUTE_DEBUGINFOD,
	ROUTE_TARGETS,
	ROUTE_API_UNKNOWN,
	ROUTE_UI,
	ROUTE_HOOK, /* server_config.hooks: a higher layer's route (/mcp) */
};

/* Routes that ingest: authorized and admitted before their body is read. */
static bool is_ingest(enum route r)
{
	return r == ROUTE_OTLP || r == ROUTE_PYROSCOPE || r == ROUTE_INGEST_PPROF ||
	       r == ROUTE_PUSH;
}

/* The route's name in metrics (a bounded set). */
static const char *route_name(enum route r)
{
	switch (r) {
	case ROUTE_OTLP:
		return "otlp";
	case ROUTE_PYROSCOPE:
		return "pyroscope_ingest";
	case ROUTE_INGEST_PPROF:
		return "ingest_pprof";
	case ROUTE_PUSH:
		return "push";
	case ROUTE_HEALTHZ:
		return "healthz";
	case ROUTE_READYZ:
		return "readyz";
	case ROUTE_METRICS:
		return "metrics";
	case ROUTE_USAGE:
		return "usage";
	case ROUTE_UI:
		return "ui";
	case ROUTE_HOOK:
		return "hook";
	case ROUTE_API_UNKNOWN:
	case ROUTE_NONE:
		return "unknown";
	default:
		return "api";
	}
}

/* The routes served at one exact path (the query views and prefixes follow in route_of). */
static const struct {
	const char *path;
	enum route route;
} exact_routes[] = {
	{ "/v1development/profiles", ROUTE_OTLP },
	{ "/ingest", ROUTE_PYROSCOPE },
	{ "/pyroscope/ingest", ROUTE_PYROSCOPE },
	{ "/api/v1/ingest/pprof", ROUTE_INGEST_PPROF },
	{ "/push.v1.PusherService/Push", ROUTE_PUSH },
	{ "/api/v1/usage", ROUTE_USAGE },
	{ "/metrics", ROUTE_METRICS },
	{ "/readyz", ROUTE_READYZ },
	{ "/healthz", ROUTE_HEALTHZ },
	{ "/api/v1/profile-types", ROUTE_TYPES },
	{ "/api/v1/targets", ROUTE_TARGETS },
	{ "/api/v1/flamegraph", ROUTE_FLAMEGRAPH },
};

static enum route route_of(const char *url)
{
	for (size_t i = 0; i < PROF_ARRAY_SIZE(exact_routes); i++)
		if (!strcmp(url, exact_routes[i].path))
			return exact_routes[i].route;
	if (server_query_view(url))
		return ROUTE_QUERY;
	if (!strncmp(url, "/api/v1/debuginfo/", 18))
		return ROUTE_DEBUGINFO;
	if (!strncmp(url, "/buildid/", 9))
		return ROUTE_DEBUGINFOD;
	if (!strncmp(url, "/api/", 5) || !strncmp(url, "/v1", 3))
		return ROUTE_API_UNKNOWN;
	return ROUTE_UI;
}

/* The hook serving @url, or NULL. */
static const struct server_hook *hook_of(const struct server *srv, const char *url)
{
	for (size_t i = 0; i < srv->nhooks; i++)
		if (!strcmp(url, srv->hooks[i].path))
			return &srv->hooks[i];
	return NULL;
}

const char *server_arg(const struct server_req *rq, const char *name)
{
	if (rq->local)
		return server_local_arg(rq->local, name);
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct args_cb {
	int (*fn)(void *arg, const char *key, const char *value);
	void *arg;
};

static enum MHD_Result args_iter(void *cls, enum MHD_ValueKind kind, const char *key,
				 const char *value)
{
	struct args_cb *a = cls;

	(void)kind;
	return a->fn(a->arg, key, value) ? MHD_NO : MHD_YES;
}

size_t server_args_foreach(const struct server_req *rq,
			   int (*fn)(void *arg, const char *key, const char *value), void *arg)
{
	struct args_cb a = { fn, arg };

	if (rq->local) {
		size_t i;

		for (i = 0; i < rq->local->nargs; i++)
			if (fn(arg, rq->local->args[i].key, rq->local->args[i].value))
				break;
		return i;
	}
	int n = MHD_get_connection_values(rq->conn, MHD_GET_ARGUMENT_KIND, args_iter, &a);

	return n > 0 ? (size_t)n : 0;
}

struct arg_count {
	const char *name;
	size_t n;
};

static int arg_count(void *arg, const char *key, const char *value)
{
	struct arg_count *c = arg;

	(void)value;
	c->n += !strcmp(key, c->name);
	return 0;
}

int server_arg_once(const struct server_req *rq, const char *name, const char **out)
{
	struct arg_count c = { name, 0 };

	server_args_foreach(rq, arg_count, &c);
	*out = server_arg(rq, name);
	return c.n > 1 ? -EINVAL : 0;
}

const char *server_header(const struct server_req *rq, const char *name)
{
	if (rq->local)
		return server_local_header(rq->local, name);
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

/* A reply's status, reason (@msg) and content type, with an empty body. */
static void reply_start(struct server_reply *rp, unsigned status, const char *msg,
			const char *content_type)
{
	rp->status = status;
	snprintf(rp->reason, sizeof(rp->reason), "%s", msg);
	rp->content_type = content_type;
	buf_reset(&rp->body);
}

int server_text_add(struct buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	int rc = 0;

	for (size_t i = 0; i < n && !rc;) {
		size_t k = utf8_seq_len(u + i, n - i);

		if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f))
			rc = buf_addf(b, "\\x%02x", u[i]);
		else if (k == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0)
			rc = buf_addf(b, "\\u%04x", u[i + 1]); /* C1 controls U+0080..U+009F */
		else if (k == 0)
			rc = buf_add(b, "\xef\xbf\xbd", 3); /* U+FFFD, one per byte (Go's rule) */
		else
			rc = buf_add(b, s + i, k);
		i += k ? k : 1;
	}
	return rc;
}

void server_reply_text(struct server_reply *rp, unsigned status, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_start(rp, status, msg, "text/plain; charset=utf-8");
	if (!server_text_add(&rp->body, msg, strlen(msg)))
		(void)buf_add(&rp->body, "\n", 1);
}

void server_reply_json_error(struct server_reply *rp, unsigned status, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	reply_start(rp, status, msg, "application/json");
	(void)buf_addstr(&rp->body, "{\"error\":");
	(void)buf_add_json_str(&rp->body, msg, strlen(msg));
	(void)buf_addstr(&rp->body, "}\n");
}

static enum MHD_Result send_reply(struct MHD_Connection *c, struct server_reply *rp)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	if (rp->fd >= 0) {
		resp = MHD_create_response_from_fd64(rp->fd_size, rp->fd);
		if (!resp)
			close(rp->fd);
		rp->fd = -1;
	} else if (rp->body.len) {
		size_t len;
		char *p = buf_detach(&rp->body, &len);

		resp = MHD_create_response_from_buffer(len, p, MHD_RESPMEM_MUST_FREE);
		if (!resp)
			free(p);
	} else {
		resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	}
	if (!resp)
		return MHD_NO;
	if (rp->content_type)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, rp->content_type);
	if (rp->allow)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_ALLOW, rp->allow);
	if (rp->cache)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, rp->cache);
	if (rp->retry_after) {
		char ra[16];

		snprintf(ra, sizeof(ra), "%u", rp->retry_after);
		MHD_add_response_header(resp, MHD_HTTP_HEADER_RETRY_AFTER, ra);
	}
	if (rp->www_authenticate)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_WWW_AUTHENTICATE,
					rp->www_authenticate);
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (rp->replaying)
		MHD_add_response_header(
			resp, "X-Profd-Replay",
			"in-progress; the answer may miss samples not yet replayed");
	ret = MHD_queue_response(c, rp->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static void reply_init(struct server_reply *rp)
{
	memset(rp, 0, sizeof(*rp));
	buf_init(&rp->body, 0);
	rp->fd = -1;
	rp->status = 500;
}

static void reply_release(struct server_reply *rp)
{
	buf_release(&rp->body);
	if (rp->fd >= 0)
		close(rp->fd);
	rp->fd = -1;
}

/*
 * libmicrohttpd keeps a request's line and headers, and a 64-byte record
 * per query parameter and header, in one pool per connection (32 KiB by
 * default). When a record no longer fits, 0.9.75 queues a 431 but goes on
 * parsing and closes the connection without a reply (about 500 query
 * parameters at the default). HTTP_POOL_BYTES fits HTTP_MAX_ARGS
 * parameters and HTTP_MAX_HEADERS headers with a 64 KiB URL; past those
 * counts profd answers 414 / 431 itself, naming the limit. A request line
 * or header block that outgrows the pool is libmicrohttpd's own 414 / 431;
 * only a URL of more than about 1,500 very short parameters still fills
 * the pool with records and gets no reply. Why not larger: the zeroing
 * costs every keep-alive request (an ingest request too) a memset of the
 * pool; bench/results/ingest.md.
 * The pool is mapped lazily but zeroed between keep-alive requests, so an
 * idle keep-alive connection holds up to HTTP_POOL_BYTES. See docs/api.md.
 */
#define HTTP_POOL_BYTES	 ((size_t)128 << 10)
#define HTTP_MAX_ARGS	 512
#define HTTP_MAX_HEADERS 128

/*
 * With --tls-client-ca: whether the client presented a certificate the CA
 * signed. libmicrohttpd only asks for one in the handshake and leaves the
 * verdict to us, so every request but the health checks (a load
 * balancer's or kubelet's probe has no certificate, and they tell
 * nothing) is checked before anything else is read.
 */
static bool client_cert_refused(struct server *srv, struct MHD_Connection *c, enum route r,
				struct server_reply *rp)
{
	const union MHD_ConnectionInfo *ci;
	char why[160] = "no TLS session";

	if (!srv->tls || !server_tls_client_ca_pem(srv->tls) || r == ROUTE_HEALTHZ ||
	    r == ROUTE_READYZ)
		return false;
	ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (ci && ci->tls_session && !server_tls_check_peer(ci->tls_session, why, sizeof(why)))
		return false;
	server_reply_text(rp, 403,
			  "client certificate refused: %s (this server accepts "
			  "clients with a certificate its --tls-client-ca signed)",
			  why);
	server_metrics_inc(srv->metrics, "profd_tls_client_refused_total", "listener=\"http\"", 1);
	return true;
}

/* Checks that need only the request line and headers. 0 = go on. */
static bool early_reply(struct server *srv, struct MHD_Connection *c, enum route r,
			const char *method, struct server_reply *rp)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
	int nargs = MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, NULL, NULL);
	int nhdrs = MHD_get_connection_values(c, MHD_HEADER_KIND, NULL, NULL);

	if (client_cert_refused(srv, c, r, rp))
		return true;
	if (nargs > HTTP_MAX_ARGS) {
		server_reply_json_error(
			rp, 414,
			"the URL has %d query parameters; the server takes at most "
			"%d (combine list values with commas or narrow the request)",
			nargs, HTTP_MAX_ARGS);
		return true;
	}
	if (nhdrs > HTTP_MAX_HEADERS) {
		server_reply_json_error(rp, 431,
					"the request has %d header fields; the server takes at "
					"most %d",
					nhdrs, HTTP_MAX_HEADERS);
		return true;
	}
	switch (r) {
	case ROUTE_OTLP:
	case ROUTE_PYROSCOPE:
	case ROUTE_INGEST_PPROF:
	case ROUTE_PUSH:
		if (strcmp(method, "POST")) {
			server_reply_text(rp, 405, "use POST for %s",
					  r == ROUTE_OTLP ? "OTLP ingest" : "ingest");
			rp->allow = "POST";
			return true;
		}
		break;
	case ROUTE_API_UNKNOWN:
		server_reply_json_error(rp, 404, "no such API endpoint");
		return true;
	case ROUTE_HOOK:
		break; /* any method: the hook answers 405 itself */
	case ROUTE_DEBUGINFO:
		if (!get)
			return false; /* server_debuginfo_early checks method and size */
		break;
	default:
		if (!get) {
			server_reply_json_error(rp, 405, "method %s not allowed here; use GET",
						method);
			rp->allow = "GET, HEAD";
			return true;
		}
		break;
	}
	const char *cl =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	uint64_t n;
	if (cl && !parse_u64(cl, &n) && n > srv->limits.max_body) {
		server_reply_text(rp, 413,
				  "request body of %" PRIu64
				  " bytes exceeds the limit of %zu bytes (limit max_body)",
				  n, srv->limits.max_body);
		server_metrics_inc(srv->metrics, "profd_ingest_rejects_total",
				   "reason=\"max_body\"", is_ingest(r));
		return true;
	}
	return false;
}

/* Ingest routes, once the headers are in: token and dataset, then a slot. */
static bool ingest_early_reply(struct server *srv, struct MHD_Connection *c, const char *method,
			       const char *url, struct conn_state *cs, struct server_reply *rp)
{
	struct server_ingest_out out = { 0 };
	struct server_req rq = { .srv = srv, .conn = c, .method = method, .url = url };

	server_req_auth(&rq, SERVER_PERM_INGEST, &cs->auth);
	if (cs->auth.status) {
		server_ingest_fail(srv, &out,
				   cs->auth.status == 401   ? SERVER_FAIL_UNAUTHORIZED
				   : cs->auth.status == 403 ? SERVER_FAIL_FORBIDDEN
				   : cs->auth.status == 404 ? SERVER_FAIL_NOT_FOUND
							    : SERVER_FAIL_BAD_INPUT,
				   "auth", "%s", cs->auth.msg);
	} else if (__atomic_load_n(&srv->stopping, __ATOMIC_SEQ_CST)) {
		server_ingest_fail(srv, &out, SERVER_FAIL_UNAVAILABLE, "shutting_down",
				   "the server is shutting down; retry against another instance "
				   "or later");
	} else if (server_ingest_enter(srv, &out)) {
		cs->slot = true;
		return false;
	}
	server_ingest_reply(&rq, rp, &out);
	return true;
}

static void dispatch(struct server_req *rq, enum route r, struct server_reply *rp)
{
	switch (r) {
	case ROUTE_OTLP:
		server_handle_otlp(rq, rp);
		break;
	case ROUTE_PYROSCOPE:
		server_handle_pyroscope(rq, rp);
		break;
	case ROUTE_INGEST_PPROF:
		server_handle_ingest_pprof(rq, rp);
		break;
	case ROUTE_PUSH:
		server_handle_push(rq, rp);
		break;
	case ROUTE_USAGE:
		server_handle_usage(rq, rp);
		break;
	case ROUTE_METRICS:
		server_handle_metrics(rq, rp);
		break;
	case ROUTE_READYZ:
		server_handle_readyz(rq, rp);
		break;
	case ROUTE_HEALTHZ:
		server_handle_healthz(rq, rp);
		break;
	case ROUTE_TYPES:
		server_handle_profile_types(rq, rp);
		break;
	case ROUTE_FLAMEGRAPH:
		server_handle_flamegraph(rq, rp);
		break;
	case ROUTE_QUERY:
		server_handle_query(rq, rp);
		break;
	case ROUTE_UI:
		server_handle_ui(rq, rp);
		break;
	case ROUTE_DEBUGINFO:
		server_handle_debuginfo(rq, rp);
		break;
	case ROUTE_DEBUGINFOD:
		server_handle_debuginfod(rq, rp);
		break;
	case ROUTE_TARGETS:
		server_handle_targets(rq, rp);
		break;
	case ROUTE_HOOK: {
		const struct server_hook *h = hook_of(rq->srv, rq->url);

		if (h)
			h->handle(h->ctx, rq, rp);
		else
			server_reply_json_error(rp, 404, "not found");
		break;
	}
	default:
		server_reply_json_error(rp, 404, "not found");
		break;
	}
}

/*
 * @s as the value of a key="value" log field, in @b (reset first): what
 * server_text_add escapes (control bytes, invalid UTF-8) plus \" and \\, so
 * a request cannot forge a field or a log line. "(too long to log)" past
 * @b's cap.
 */
static const char *log_field(struct buf *b, const char *s)
{
	size_t i = 0, n;
	int rc = 0;

	/* Most fields (a path, a dataset name, a reason) need no escape and fit
	 * the cap: lend @s instead of copying it. */
	for (n = 0; s[n]; n++) {
		unsigned char ch = (unsigned char)s[n];

		if (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\')
			break;
	}
	if (!s[n] && (!b->max || n < b->max))
		return s;
	n += strlen(s + n);
	buf_reset(b);
	while (i < n && !rc) {
		size_t k = strcspn(s + i, "\"\\");

		rc = server_text_add(b, s + i, k);
		i += k;
		if (i < n && !rc) {
			rc = buf_add(b, "\\", 1);
			if (!rc)
				rc = buf_add(b, s + i, 1);
			i++;
		}
	}
	if (rc || buf_add(b, "", 1))
		return "(too long to log)";
	return b->p;
}

static void access_log(struct server *srv, struct MHD_Connection *c, const char *method,
		       const char *url, const struct server_reply *rp, size_t body_len,
		       int64_t start_ns, enum route r, const struct server_req *rq)
{
	static __thread char lbl_code[96], lbl_bytes[64];
	static __thread int lbl_route = -1;
	static __thread unsigned lbl_status;
	struct buf fm, fu, fd, fr;
	const char *ds = rq && rq->dataset ? rq->dataset : "-";
	const char *tok = rq && rq->token ? rq->token : "-";

	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char host[NI_MAXHOST] = "?";
	double ms = (double)(prof_now_ns() - start_ns) / 1e6;

	if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ci->client_addr)->sin_addr, host,
			  sizeof(host)); /* what getnameinfo NI_NUMERICHOST gives, for less */
	else if (ci && ci->client_addr)
		getnameinfo(ci->client_addr,
			    ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								   : sizeof(struct sockaddr_in),
			    host, sizeof(host), NULL, 0, NI_NUMERICHOST);
	if (lbl_route != (int)r || lbl_status != rp->status) {
		/* formatted again only when the thread's previous request differed */
		snprintf(lbl_code, sizeof(lbl_code), "route=\"%s\",code=\"%u\"", route_name(r),
			 rp->status);
		snprintf(lbl_bytes, sizeof(lbl_bytes), "route=\"%s\"", route_name(r));
		lbl_route = (int)r;
		lbl_status = rp->status;
	}
	server_metrics_inc(srv->metrics, "profd_http_requests_total", lbl_code, 1);
	server_metrics_inc(srv->metrics, "profd_http_request_bytes_total", lbl_bytes, body_len);
	/* Structured: key=value, the token by its configured name, never its secret;
	 * what the request chose is escaped (log_field). */
	buf_init(&fm, 64);
	buf_init(&fu, 4096);
	buf_init(&fd, 256);
	buf_init(&fr, 2048);
	method = log_field(&fm, method);
	url = log_field(&fu, url);
	ds = log_field(&fd, ds);
	if ((r == ROUTE_UI || r == ROUTE_METRICS || r == ROUTE_HEALTHZ || r == ROUTE_READYZ) &&
	    rp->status < 400)
		log_debug("http method=%s path=%s status=%u client=%s ms=%.1f", method, url,
			  rp->status, host, ms);
	else if (rp->status >= 400 &&
		 !(rp->status == 404 && !strcmp(method, "HEAD"))) /* "do you have X?": no */
		log_warn("http method=%s path=%s status=%u client=%s dataset=%s token=%s "
			 "body_bytes=%zu ms=%.1f reason=\"%s\"",
			 method, url, rp->status, host, ds, tok, body_len, ms,
			 log_field(&fr, rp->reason));
	else
		log_info("http method=%s path=%s status=%u client=%s dataset=%s token=%s "
			 "body_bytes=%zu samples=%" PRIu64 " ms=%.1f%s%s%s",
			 method, url, rp->status, host, ds, tok, body_len, rq ? rq->samples : 0, ms,
			 rp->reason[0] ? " note=\"" : "", log_field(&fr, rp->reason),
			 rp->reason[0] ? "\"" : "");
	buf_release(&fm);
	buf_release(&fu);
	buf_release(&fd);
	buf_release(&fr);
}

/* The guard's entry of @c (conns.h), set when the connection was accepted. */
static struct server_conn *conn_guard(struct MHD_Connection *c)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);

	return ci ? ci->socket_context : NULL;
}

/* Routes answered on the socket thread itself: they never block. */
static bool runs_inline(enum route r)
{
	return r == ROUTE_HEALTHZ || r == ROUTE_READYZ || r == ROUTE_METRICS || r == ROUTE_UI ||
	       r == ROUTE_API_UNKNOWN || r == ROUTE_NONE;
}

/* The handler proper, with the body complete: anywhere but the access log's sending. */
static void run_request(struct server *srv, struct conn_state *cs)
{
	struct server_req *rq = &cs->rq;
	enum route r = (enum route)cs->route;

	if (cs->too_big) {
		server_reply_text(&cs->rp, 413,
				  "request body exceeds the limit of %zu bytes (limit max_body)",
				  srv->limits.max_body);
		server_metrics_inc(srv->metrics, "profd_ingest_rejects_total",
				   "reason=\"max_body\"", is_ingest(r));
	} else {
		dispatch(rq, r, &cs->rp);
	}
	slot_done(srv, cs);
	access_log(srv, rq->conn, rq->method, rq->url, &cs->rp, cs->body.len, cs->start_ns, r, rq);
}

/* On a worker thread: answer, then hand the connection back to its socket thread. */
static void request_job(struct server_job *j)
{
	struct conn_state *cs = (struct conn_state *)j; /* @job is the first member */
	struct MHD_Connection *c = cs->rq.conn;

	run_request(cs->rq.srv, cs);
	__atomic_store_n(&cs->job_state, JOB_DONE, __ATOMIC_RELEASE);
	MHD_resume_connection(c); /* @cs may be freed from here on */
}

static enum MHD_Result queue_answer(struct server *srv, struct MHD_Connection *c,
				    struct conn_state *cs)
{
	enum MHD_Result ret = send_reply(c, &cs->rp);

	reply_release(&cs->rp);
	cs->answered = true;
	inflight_done(srv, cs);
	return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct server *srv = cls;
	struct conn_state *cs = *con_cls;
	enum route r = hook_of(srv, url) ? ROUTE_HOOK : route_of(url);
	struct server_reply rp;
	enum MHD_Result ret;

	(void)version;
	if (!cs) {
		cs = xcalloc(1, sizeof(*cs));
		buf_init(&cs->body, srv->limits.max_body);
		cs->start_ns = prof_now_ns();
		cs->counted = true;
		cs->gc = conn_guard(c);
		server_conns_phase(srv->conns, cs->gc, SERVER_CONN_BODY);
		__atomic_add_fetch(&srv->inflight, 1, __ATOMIC_SEQ_CST);
		*con_cls = cs;
		reply_init(&rp);
		if (early_reply(srv, c, r, method, &rp) ||
		    (is_ingest(r) && ingest_early_reply(srv, c, method, url, cs, &rp)) ||
		    (r == ROUTE_DEBUGINFO &&
		     server_debuginfo_early(srv, c, method, url, &cs->upload, &rp))) {
			struct server_req lrq = { .dataset = cs->auth.ds ? cs->auth.ds->name : NULL,
						  .token = cs->auth.token };

			cs->answered = true;
			access_log(srv, c, method, url, &rp, 0, cs->start_ns, r, &lrq);
			ret = send_reply(c, &rp);
			reply_release(&rp);
			inflight_done(srv, cs);
			return ret;
		}
		reply_release(&rp);
		return MHD_YES;
	}
	if (*upload_data_size)
		server_conns_body(srv->conns, cs->gc, *upload_data_size);
	if (*upload_data_size && cs->upload) {
		server_upload_write(cs->upload, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		if (!cs->too_big && !cs->answered &&
		    buf_add(&cs->body, upload_data, *upload_data_size)) {
			cs->too_big = true; /* drain the rest, answer 413 at the end */
			buf_release(&cs->body);
		}
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (cs->answered)
		return MHD_YES;
	switch (__atomic_load_n(&cs->job_state, __ATOMIC_ACQUIRE)) {
	case JOB_RUNNING:
		return MHD_YES; /* not resumed yet */
	case JOB_DONE:
		return queue_answer(srv, c, cs);
	default:
		break;
	}

	server_conns_phase(srv->conns, cs->gc, SERVER_CONN_BUSY);
	reply_init(&cs->rp);
	cs->route = (int)r;
	cs->rq = (struct server_req){
		.srv = srv,
		.conn = c,
		.method = method,
		.url = url,
		.body = cs->body.len ? cs->body.p : NULL,
		.body_len = cs->body.len,
		.upload = cs->upload,
	};
	if (is_ingest(r)) {
		cs->rq.auth = &cs->auth;
		cs->rq.dataset = cs->auth.ds ? cs->auth.ds->name : NULL;
		cs->rq.token = cs->auth.token;
	}
	if (runs_inline(r) || cs->too_big) {
		run_request(srv, cs);
		return queue_answer(srv, c, cs);
	}
	/* Suspended before the job can resume it; MHD calls us again after. */
	cs->job.fn = request_job;
	__atomic_store_n(&cs->job_state, JOB_RUNNING, __ATOMIC_RELEASE);
	MHD_suspend_connection(c);
	if (server_workers_submit(is_ingest(r) ? srv->ingest_workers : srv->query_workers,
				  &cs->job))
		request_job(&cs->job); /* no thread to be had: answer here */
	return MHD_YES;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct server *srv = cls;
	struct conn_state *cs = *con_cls;

	(void)toe;
	if (!cs)
		return;
	server_conns_phase(srv->conns, cs->gc, SERVER_CONN_IDLE);
	slot_done(srv, cs);
	inflight_done(srv, cs); /* the client went away before an answer */
	server_upload_free(cs->upload);
	if (cs->job_state != JOB_NONE && !cs->answered)
		reply_release(&cs->rp);
	buf_release(&cs->body);
	free(cs);
	*con_cls = NULL;
	(void)c;
}

/* Admission by the connection guard, and its bookkeeping at close. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct server *srv = cls;

	if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
		server_conns_close(srv->conns, *socket_context);
		*socket_context = NULL;
		return;
	}
	const union MHD_ConnectionInfo *fi =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
	const union MHD_ConnectionInfo *ai =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	const struct sockaddr *sa = ai ? ai->client_addr : NULL;

	*socket_context = NULL;
	if (!fi)
		return;
	*socket_context =
		server_conns_open(srv->conns, fi->connect_fd, sa,
				  sa && sa->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								  : sizeof(struct sockaddr_in));
	if (!*socket_context)
		shutdown(fi->connect_fd, SHUT_RDWR); /* refused: MHD sees the end and closes */
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
	char msg[512];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	log_warn("http: %s", msg);
}

/* Split "host:port", "[v6]:port" or ":port" and resolve it. */
int server_resolve_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sslen,
			  char **host_out, struct prof_err *err)
{
	const char *colon = strrchr(listen, ':');
	char *host;
	struct addrinfo hints = { 0 }, *res = NULL;
	uint64_t port;
	int rc;

	if (!colon || parse_u64(colon + 1, &port) || port > 65535)
		return prof_err_set(err, -EINVAL, -1,
				    "listen address '%s': expected HOST:PORT, e.g. 127.0.0.1:4040",
				    listen);
	if (listen[0] == '[') {
		const char *close = strchr(listen, ']');

		if (!close || close + 1 != colon)
			return prof_err_set(err, -EINVAL, -1,
					    "listen address '%s': bad [IPv6]:PORT", listen);
		host = xstrndup(listen + 1, (size_t)(close - listen - 1));
	} else {
		host = xstrndup(listen, (size_t)(colon - listen));
	}
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(*host ? host : NULL, colon + 1, &hints, &res);
	if (rc || !res) {
		prof_err_set(err, -EINVAL, -1, "listen address '%s': %s", listen,
			     rc ? gai_strerror(rc) : "no address");
		free(host);
		return -EINVAL;
	}
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*sslen = res->ai_addrlen;
	freeaddrinfo(res);
	*host_out = host;
	return 0;
}

bool server_addr_is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		return (ntohl(a->sin_addr.s_addr) >> 24) == 127;
	}
	if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		if (IN6_IS_ADDR_LOOPBACK(&a->sin6_addr))
			return true;
		return IN6_IS_ADDR_V4MAPPED(&a->sin6_addr) && a->sin6_addr.s6_addr[12] == 127;
	}
	return false;
}

/*
 * Without a config file there is no authentication: loopback only. With
 * one but without TLS, tokens and profiles would cross the network in
 * clear: allowed (a TLS proxy in front is a common setup), with a warning.
 */
static int check_exposure(const struct server *srv, const char *what, const char *listen,
			  const struct sockaddr_storage *ss, struct prof_err *err)
{
	const struct server_conf *conf = srv->conf;

	if (server_addr_is_loopback(ss))
		return 0;
	if (conf->from_file) {
		if (!srv->tls)
			log_warn("server: %s %s is not a loopback address and TLS is off: "
				 "tokens and profiles cross the network in clear; give "
				 "--tls-cert and --tls-key, or put a TLS proxy in front",
				 what, listen);
		return 0;
	}
	return prof_err_set(err, -EPERM, -1,
			    "refusing to listen on %s without a config file: with no --config "
			    "there are no tokens, so anyone who can reach the port could read "
			    "and write profiles; listen on 127.0.0.1 or pass --config with "
			    "tokens",
			    listen);
}

static struct MHD_Daemon *start_daemon(struct server *srv, const struct sockaddr_storage *ss,
				       const struct server_conn_limits *cl, unsigned threads)
{
	/* EPOLL + a thread pool: each thread waits in its own epoll set and
	 * takes its share of the connections, any number of them, with no
	 * descriptor-number limit (select(2)'s FD_SETSIZE closed every
	 * connection numbered past 1024; test_server_many_fds.sh).
	 * ALLOW_SUSPEND_RESUME (implies ITC, which MHD_quiesce_daemon in
	 * server_stop needs too): blocking handlers run on the worker pools.
	 * The guard admits connections (on_connection), so MHD's own limit
	 * is set where it never refuses first: each pool thread may hold up
	 * to the whole limit. MHD's per-byte timeout stays as a backstop for
	 * a reader that stalls a response. */
	unsigned flags =
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG;
	unsigned idle_s = (unsigned)((cl->idle_timeout_ns + 999999999) / 1000000000);
	unsigned mhd_limit = cl->max_conns * threads + threads;

	/* TLS: libmicrohttpd's own GnuTLS sessions, from the PEM text tls.h read. */
	struct MHD_OptionItem tls[5] = { { MHD_OPTION_END, 0, NULL } };

	if (ss->ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (srv->tls) {
		size_t n = 0;

		flags |= MHD_USE_TLS;
		tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_CERT, 0,
						    (void *)server_tls_cert_pem(srv->tls) };
		tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_KEY, 0,
						    (void *)server_tls_key_pem(srv->tls) };
		tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_PRIORITIES, 0,
						    (void *)SERVER_TLS_PRIORITIES };
		if (server_tls_client_ca_pem(srv->tls))
			tls[n++] = (struct MHD_OptionItem){ MHD_OPTION_HTTPS_MEM_TRUST, 0,
							    (void *)server_tls_client_ca_pem(
								    srv->tls) };
		tls[n] = (struct MHD_OptionItem){ MHD_OPTION_END, 0, NULL };
	}
	return MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
		MHD_OPTION_ARRAY, tls, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)ss,
		MHD_OPTION_THREAD_POOL_SIZE, threads, MHD_OPTION_CONNECTION_LIMIT, mhd_limit,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, HTTP_POOL_BYTES, MHD_OPTION_CONNECTION_TIMEOUT,
		idle_s, MHD_OPTION_NOTIFY_CONNECTION, on_connection, srv,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, srv, MHD_OPTION_END);
}

/*
 * Raise the descriptor limit to its hard limit (each connection is one),
 * and keep max_conns below what is left after a reserve for the stores'
 * files, the listeners and the worker threads' own.
 */
static void raise_nofile(struct server_conn_limits *cl, bool explicit_limit)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur < rl.rlim_max) {
		rlim_t old = rl.rlim_cur;

		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			rl.rlim_cur = old;
		else
			log_debug("server: descriptor limit raised from %llu to %llu",
				  (unsigned long long)old, (unsigned long long)rl.rlim_cur);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > (rlim_t)cl->max_conns + 512)
		return;
	unsigned fit = rl.rlim_cur > 1024 ? (unsigned)rl.rlim_cur - 512 : (unsigned)rl.rlim_cur / 2;

	if (explicit_limit)
		log_warn("server: max-connections %u is above what the descriptor limit (%llu) "
			 "leaves; using %u",
			 cl->max_conns, (unsigned long long)rl.rlim_cur, fit);
	cl->max_conns = fit;
	if (cl->max_per_client > fit)
		cl->max_per_client = fit;
}

static unsigned daemon_port(struct MHD_Daemon *d)
{
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);

	return di ? di->port : 0;
}

/* Usage counters reach their files every 10 s (and at stop). */
static void *flusher_main(void *arg)
{
	struct server *srv = arg;

	pthread_mutex_lock(&srv->flush_lock);
	while (!srv->stopping) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 10;
		pthread_cond_timedwait(&srv->flush_cond, &srv->flush_lock, &ts);
		pthread_mutex_unlock(&srv->flush_lock);
		for (size_t i = 0; i < srv->tenants.n; i++)
			(void)server_usage_flush(srv->tenants.ds[i].usage);
		query_scratch_expire(); /* an idle server gives query scratch back */
		pthread_mutex_lock(&srv->flush_lock);
	}
	pthread_mutex_unlock(&srv->flush_lock);
	return NULL;
}

int server_start(const struct server_config *cfg, struct symbolizer *sym, struct server **out,
		 struct prof_err *err)
{
	const char *listen = cfg->listen ? cfg->listen : SERVER_DEFAULT_LISTEN;
	struct server_conn_limits cl = cfg->conn_limits;
	unsigned threads = cfg->http_threads;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	struct sockaddr_storage ss, ss2;
	socklen_t sslen;
	struct server *srv;
	char *host = NULL, *host2 = NULL;
	int rc;

	*out = NULL;
	rc = prof_mhd_load(err);
	if (rc)
		return rc;
	srv = xcalloc(1, sizeof(*srv));
	pthread_mutex_init(&srv->flush_lock, NULL);
	pthread_cond_init(&srv->flush_cond, NULL);
	if (cfg->conf) {
		srv->conf = cfg->conf;
	} else {
		server_conf_default(&srv->own_conf);
		srv->conf = &srv->own_conf;
	}
	srv->limits = srv->conf->limits;
	if (cfg->max_body)
		srv->limits.max_body = cfg->max_body;
	if (cfg->max_inflated)
		srv->limits.max_decompressed = cfg->max_inflated;
	if (cfg->max_samples)
		srv->limits.max_samples = cfg->max_samples;
	server_limits_fill_defaults(&srv->limits, SERVER_DEFAULT_MAX_BODY);
	srv->sym = sym;
	srv->src_root = cfg->src_root;
	srv->replay_wait_ns =
		cfg->replay_wait_ns > 0 ? cfg->replay_wait_ns : SERVER_DEFAULT_REPLAY_WAIT_NS;
	srv->hooks = cfg->hooks;
	srv->nhooks = cfg->hooks ? cfg->nhooks : 0;
	srv->ui_dir = xstrdup(cfg->ui_dir ? cfg->ui_dir : "ui");
	srv->metrics = server_metrics_new();

	if (cfg->tls_cert || cfg->tls_key || cfg->tls_client_ca) {
		struct server_tls_conf tc = { .cert = cfg->tls_cert,
					      .key = cfg->tls_key,
					      .client_ca = cfg->tls_client_ca };

		rc = server_tls_new(&tc, &srv->tls, err);
		if (!rc && !MHD_is_feature_supported(MHD_FEATURE_TLS))
			rc = prof_err_set(err, -PROF_EUNSUPPORTED, -1,
					  "this libmicrohttpd is built without TLS");
		if (rc)
			goto fail;
	}
	rc = server_resolve_listen(listen, &ss, &sslen, &host, err);
	srv->host = host;
	if (!rc)
		rc = check_exposure(srv, "--listen", listen, &ss, err);
	if (!rc && cfg->otlp_listen) {
		rc = server_resolve_listen(cfg->otlp_listen, &ss2, &sslen, &host2, err);
		free(host2);
		if (!rc)
			rc = check_exposure(srv, "--otlp-http-listen", cfg->otlp_listen, &ss2, err);
	}
	if (!rc && cfg->grpc_listen) {
		struct sockaddr_storage ss3;

		rc = server_resolve_listen(cfg->grpc_listen, &ss3, &sslen, &host2, err);
		free(host2);
		if (!rc)
			rc = check_exposure(srv, "--grpc-listen", cfg->grpc_listen, &ss3, err);
	}
	if (rc)
		goto fail;
	rc = server_tenants_open(&srv->tenants, srv->conf, cfg->data_dir ? cfg->data_dir : "data",
				 cfg->storage, err);
	if (rc)
		goto fail;
	if (!srv->conf->ntokens && srv->conf->from_file)
		log_warn("server: %s has no tokens: every client may ingest and query every "
			 "dataset",
			 srv->conf->path);

	/* MHD writes with MSG_NOSIGNAL, but a closed peer must never kill us;
	 * past a file-size limit (ulimit -f) a write fails with EFBIG (507 for
	 * the request, rolled back) instead of SIGXFSZ killing the server. */
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	if (!threads)
		threads = ncpu > 2 ? (unsigned)PROF_MIN(ncpu, 16) : 2;
	server_conn_limits_fill(&cl);
	srv->header_timeout_ns = cl.header_timeout_ns;
	raise_nofile(&cl, cfg->conn_limits.max_conns != 0);
	rc = server_conns_new(&cl, &srv->conns, err);
	if (rc)
		goto fail;
	/* Ingest is admitted up to max_inflight (429 beyond), so its pool never queues. */
	srv->ingest_workers = server_workers_new("ingest", srv->limits.max_inflight);
	srv->query_workers = server_workers_new(
		"query", cfg->query_workers ? cfg->query_workers : SERVER_DEFAULT_QUERY_WORKERS);
	srv->daemon = start_daemon(srv, &ss, &cl, threads);
	if (!srv->daemon) {
		rc = prof_err_set(err, errno ? -errno : -EADDRINUSE, -1, "cannot listen on %s: %s",
				  listen, errno ? strerror(errno) : "bind failed");
		goto fail;
	}
	srv->port = daemon_port(srv->daemon);
	if (cfg->otlp_listen) {
		srv->otlp_daemon = start_daemon(srv, &ss2, &cl, threads);
		if (!srv->otlp_daemon) {
			rc = prof_err_set(err, errno ? -errno : -EADDRINUSE, -1,
					  "cannot listen on %s (--otlp-http-listen): %s",
					  cfg->otlp_listen,
					  errno ? strerror(errno) : "bind failed");
			goto fail;
		}
		srv->otlp_port = daemon_port(srv->otlp_daemon);
	}
	if (cfg->grpc_listen) {
		rc = server_grpc_start(srv, cfg->grpc_listen, &srv->grpc, err);
		if (rc)
			goto fail;
		srv->grpc_port = server_grpc_port(srv->grpc);
	}
	if ((cfg->scrape || cfg->self_profile) && (rc = server_scrape_start(srv, cfg, err)))
		goto fail;
	if (pthread_create(&srv->flusher, NULL, flusher_main, srv) == 0)
		srv->flusher_started = true;
	*out = srv;
	return 0;
fail:
	server_stop(srv);
	return rc;
}

int server_local_get(struct server *srv, const char *path_and_query, const char *authorization,
		     const char *dataset, struct buf *out, unsigned *status)
{
	struct server_local l;
	struct server_reply rp;
	enum route r;
	int rc = server_local_parse(&l, path_and_query);

	if (rc) {
		server_local_release(&l);
		return rc;
	}
	l.authorization = authorization;
	l.dataset = dataset;
	struct server_req rq = { .srv = srv, .method = "GET", .url = l.path, .local = &l };
	reply_init(&rp);
	r = route_of(l.path);
	if (r == ROUTE_TYPES || r == ROUTE_FLAMEGRAPH || r == ROUTE_QUERY)
		dispatch(&rq, r, &rp);
	else
		server_reply_json_error(&rp, 404, "no such API endpoint");
	if (rp.fd >= 0)
		server_reply_json_error(&rp, 500, "the answer is a file, not JSON");
	*status = rp.status;
	rc = buf_add(out, rp.body.p ? rp.body.p : "", rp.body.len);
	log_debug("http local path=%s status=%u dataset=%s token=%s bytes=%zu", l.path, rp.status,
		  rq.dataset ? rq.dataset : "-", rq.token ? rq.token : "-", rp.body.len);
	reply_release(&rp);
	server_local_release(&l);
	return rc;
}

unsigned server_port(const struct server *s)
{
	return s->port;
}

unsigned server_otlp_port(const struct server *s)
{
	return s->otlp_port;
}

unsigned server_grpc_listen_port(const struct server *s)
{
	return s->grpc_port;
}

const char *server_host(const struct server *s)
{
	return s->host;
}

/* Stop accepting, let requests in flight finish (up to 10 s) so an ingest
 * that reached the WAL also gets its answer. */
static void drain_daemon(struct server *s, struct MHD_Daemon *d, int64_t deadline)
{
	MHD_socket lfd = MHD_quiesce_daemon(d);

	while (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST) > 0 && prof_now_ns() < deadline) {
		struct timespec ts = { 0, 10 * 1000000 };

		nanosleep(&ts, NULL);
	}
	if (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST) > 0)
		log_warn("server: stopping with %d requests still in flight",
			 __atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST));
	if (lfd != MHD_INVALID_SOCKET)
		close(lfd);
}

void server_stop(struct server *s)
{
	int64_t deadline;

	if (!s)
		return;
	deadline = prof_now_ns() + 10 * 1000000000LL;
	__atomic_store_n(&s->stopping, true, __ATOMIC_SEQ_CST);
	server_scrape_stop(s); /* before the stores close: scrapes store through them */
	server_grpc_stop(s->grpc);
	if (s->otlp_daemon) {
		MHD_socket lfd = MHD_quiesce_daemon(s->otlp_daemon);

		if (lfd != MHD_INVALID_SOCKET)
			close(lfd);
	}
	if (s->daemon)
		drain_daemon(s, s->daemon, deadline);
	/* Every job still running resumes its connection when done; only then
	 * may the daemons (which free the connections) stop. */
	server_workers_free(s->ingest_workers);
	server_workers_free(s->query_workers);
	if (s->daemon)
		MHD_stop_daemon(s->daemon); /* closes idle keep-alive connections too */
	if (s->otlp_daemon)
		MHD_stop_daemon(s->otlp_daemon);
	server_conns_free(s->conns);
	if (s->flusher_started) {
		pthread_mutex_lock(&s->flush_lock);
		pthread_cond_broadcast(&s->flush_cond);
		pthread_mutex_unlock(&s->flush_lock);
		pthread_join(s->flusher, NULL);
	}
	server_tenants_close(&s->tenants); /* flushes usage, closes the stores */
	server_tls_free(s->tls);	   /* no listener is left to use it */
	server_metrics_free(s->metrics);
	if (s->conf == &s->own_conf)
		server_conf_release(&s->own_conf);
	pthread_mutex_destroy(&s->flush_lock);
	pthread_cond_destroy(&s->flush_cond);
	free(s->ui_dir);
	free(s->host);
	free(s);
}
