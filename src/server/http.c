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
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "server/route.h"

#include <fcntl.h>
#include <microhttpd.h>
#include <netdb.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

struct conn_state {
	struct buf body;
	bool too_big;
	bool answered; /* a reply was queued (possibly before the body was read) */
	bool counted;  /* counted in server.inflight */
	int64_t start_ns;
};

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
	ROUTE_HEALTHZ,
	ROUTE_TYPES,
	ROUTE_FLAMEGRAPH,
	ROUTE_API_UNKNOWN,
	ROUTE_UI,
};

static enum route route_of(const char *url)
{
	if (!strcmp(url, "/v1development/profiles"))
		return ROUTE_OTLP;
	if (!strcmp(url, "/healthz"))
		return ROUTE_HEALTHZ;
	if (!strcmp(url, "/api/v1/profile-types"))
		return ROUTE_TYPES;
	if (!strcmp(url, "/api/v1/flamegraph"))
		return ROUTE_FLAMEGRAPH;
	if (!strncmp(url, "/api/", 5) || !strncmp(url, "/v1", 3))
		return ROUTE_API_UNKNOWN;
	return ROUTE_UI;
}

const char *server_arg(const struct server_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *server_header(const struct server_req *rq, const char *name)
{
	return MHD_lookup_connection_value(rq->conn, MHD_HEADER_KIND, name);
}

void server_reply_text(struct server_reply *rp, unsigned status, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rp->status = status;
	snprintf(rp->reason, sizeof(rp->reason), "%s", msg);
	rp->content_type = "text/plain; charset=utf-8";
	buf_reset(&rp->body);
	(void)buf_addf(&rp->body, "%s\n", msg);
}

void server_reply_json_error(struct server_reply *rp, unsigned status, const char *fmt, ...)
{
	va_list ap;
	char msg[1024];

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	rp->status = status;
	snprintf(rp->reason, sizeof(rp->reason), "%s", msg);
	rp->content_type = "application/json";
	buf_reset(&rp->body);
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
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
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

/* Checks that need only the request line and headers. 0 = go on. */
static bool early_reply(struct server *srv, struct MHD_Connection *c, enum route r,
			const char *method, struct server_reply *rp)
{
	bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");

	switch (r) {
	case ROUTE_OTLP:
		if (strcmp(method, "POST")) {
			server_reply_text(rp, 405, "use POST for OTLP ingest");
			rp->allow = "POST";
			return true;
		}
		break;
	case ROUTE_API_UNKNOWN:
		server_reply_json_error(rp, 404, "no such API endpoint");
		return true;
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
	if (cl && !parse_u64(cl, &n) && n > srv->max_body) {
		server_reply_text(rp, 413,
				  "request body of %" PRIu64
				  " bytes exceeds the limit of %zu bytes (max body size)",
				  n, srv->max_body);
		return true;
	}
	return false;
}

static void dispatch(struct server_req *rq, enum route r, struct server_reply *rp)
{
	switch (r) {
	case ROUTE_OTLP:
		server_handle_otlp(rq, rp);
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
	case ROUTE_UI:
		server_handle_ui(rq, rp);
		break;
	default:
		server_reply_json_error(rp, 404, "not found");
		break;
	}
}

static void access_log(struct MHD_Connection *c, const char *method, const char *url,
		       const struct server_reply *rp, size_t body_len, int64_t start_ns,
		       enum route r)
{
	const union MHD_ConnectionInfo *ci =
		MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	char host[NI_MAXHOST] = "?";
	double ms = (double)(prof_now_ns() - start_ns) / 1e6;

	if (ci && ci->client_addr)
		getnameinfo(ci->client_addr,
			    ci->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								   : sizeof(struct sockaddr_in),
			    host, sizeof(host), NULL, 0, NI_NUMERICHOST);
	if (r == ROUTE_UI && rp->status < 400)
		log_debug("http method=%s path=%s status=%u client=%s ms=%.1f", method, url,
			  rp->status, host, ms);
	else if (rp->status >= 400)
		log_warn("http method=%s path=%s status=%u client=%s body_bytes=%zu ms=%.1f "
			 "reason=\"%s\"",
			 method, url, rp->status, host, body_len, ms, rp->reason);
	else
		log_info("http method=%s path=%s status=%u client=%s body_bytes=%zu ms=%.1f",
			 method, url, rp->status, host, body_len, ms);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct server *srv = cls;
	struct conn_state *cs = *con_cls;
	enum route r = route_of(url);
	struct server_reply rp;
	enum MHD_Result ret;

	(void)version;
	if (!cs) {
		cs = xcalloc(1, sizeof(*cs));
		buf_init(&cs->body, srv->max_body);
		cs->start_ns = prof_now_ns();
		cs->counted = true;
		__atomic_add_fetch(&srv->inflight, 1, __ATOMIC_SEQ_CST);
		*con_cls = cs;
		reply_init(&rp);
		if (early_reply(srv, c, r, method, &rp)) {
			cs->answered = true;
			access_log(c, method, url, &rp, 0, cs->start_ns, r);
			ret = send_reply(c, &rp);
			reply_release(&rp);
			inflight_done(srv, cs);
			return ret;
		}
		reply_release(&rp);
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

	reply_init(&rp);
	if (cs->too_big) {
		server_reply_text(&rp, 413,
				  "request body exceeds the limit of %zu bytes (max body size)",
				  srv->max_body);
	} else {
		struct server_req rq = {
			.srv = srv,
			.conn = c,
			.method = method,
			.url = url,
			.body = cs->body.len ? cs->body.p : NULL,
			.body_len = cs->body.len,
		};
		dispatch(&rq, r, &rp);
	}
	access_log(c, method, url, &rp, cs->body.len, cs->start_ns, r);
	cs->answered = true;
	ret = send_reply(c, &rp);
	reply_release(&rp);
	inflight_done(srv, cs);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn_state *cs = *con_cls;

	(void)c;
	(void)toe;
	if (!cs)
		return;
	inflight_done(cls, cs); /* the client went away before an answer */
	buf_release(&cs->body);
	free(cs);
	*con_cls = NULL;
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
static int resolve_listen(const char *listen, struct sockaddr_storage *ss, socklen_t *sslen,
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

int server_start(const struct server_config *cfg, struct store *st, struct symbolizer *sym,
		 struct server **out, struct prof_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	struct server *srv;
	char *host = NULL;
	unsigned flags;
	int rc;

	*out = NULL;
	rc = resolve_listen(cfg->listen ? cfg->listen : SERVER_DEFAULT_LISTEN, &ss, &sslen, &host,
			    err);
	if (rc)
		return rc;
	(void)sslen;
	srv = xcalloc(1, sizeof(*srv));
	srv->st = st;
	srv->sym = sym;
	srv->host = host;
	srv->ui_dir = xstrdup(cfg->ui_dir ? cfg->ui_dir : "ui");
	srv->max_body = cfg->max_body ? cfg->max_body : SERVER_DEFAULT_MAX_BODY;
	srv->max_inflated = cfg->max_inflated ? cfg->max_inflated : srv->max_body;
	srv->max_samples = cfg->max_samples ? cfg->max_samples : SERVER_DEFAULT_MAX_SAMPLES;

	/* MHD writes with MSG_NOSIGNAL, but a closed peer must never kill us. */
	signal(SIGPIPE, SIG_IGN);
	/* ITC: needed by MHD_quiesce_daemon in server_stop. */
	flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ITC |
		MHD_USE_ERROR_LOG;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	srv->daemon = MHD_start_daemon(
		flags, 0, NULL, NULL, on_request, srv, MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, srv,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)(cfg->max_connections ? cfg->max_connections
						: SERVER_DEFAULT_CONNECTIONS),
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)60, MHD_OPTION_NOTIFY_COMPLETED,
		on_completed, srv, MHD_OPTION_END);
	if (!srv->daemon) {
		rc = prof_err_set(err, errno ? -errno : -EADDRINUSE, -1, "cannot listen on %s: %s",
				  cfg->listen ? cfg->listen : SERVER_DEFAULT_LISTEN,
				  errno ? strerror(errno) : "bind failed");
		server_stop(srv);
		return rc;
	}
	const union MHD_DaemonInfo *di =
		MHD_get_daemon_info(srv->daemon, MHD_DAEMON_INFO_BIND_PORT);
	srv->port = di ? di->port : 0;
	*out = srv;
	return 0;
}

unsigned server_port(const struct server *s)
{
	return s->port;
}

const char *server_host(const struct server *s)
{
	return s->host;
}

void server_stop(struct server *s)
{
	if (!s)
		return;
	if (s->daemon) {
		/* Stop accepting, let requests in flight finish (up to 10 s) so an
		 * ingest that reached the WAL also gets its answer, then close
		 * every connection (idle keep-alive ones included). */
		MHD_socket lfd = MHD_quiesce_daemon(s->daemon);
		int64_t deadline = prof_now_ns() + 10 * 1000000000LL;

		while (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST) > 0 &&
		       prof_now_ns() < deadline) {
			struct timespec ts = { 0, 10 * 1000000 };

			nanosleep(&ts, NULL);
		}
		if (__atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST) > 0)
			log_warn("server: stopping with %d requests still in flight",
				 __atomic_load_n(&s->inflight, __ATOMIC_SEQ_CST));
		MHD_stop_daemon(s->daemon);
		if (lfd != MHD_INVALID_SOCKET)
			close(lfd);
	}
	free(s->ui_dir);
	free(s->host);
	free(s);
}
