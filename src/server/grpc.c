// SPDX-License-Identifier: Apache-2.0
/*
 * grpc.c - OTLP/gRPC over h2c with libnghttp2; see grpc.h.
 *
 * nghttp2 does the HTTP/2 framing, HPACK and flow control; we feed it the
 * bytes read from the socket (nghttp2_session_mem_recv) and write what it
 * produces (send callback, blocking). A stream's request is complete when
 * a frame with END_STREAM arrives; the connection thread then handles it
 * (the same pipeline as HTTP: pipeline.h) and submits the answer before
 * reading further. Requests on one connection are therefore handled one
 * after the other; clients that want parallelism open more connections
 * (gRPC clients multiplex, which is still correct, only serialized).
 *
 * gRPC over HTTP/2: grpc/grpc doc/PROTOCOL-HTTP2.md (length-prefixed
 * messages, trailers, percent-encoded grpc-message, HTTP 415 for a
 * non-gRPC content-type, status 12 (no such method) for an unknown compression).
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "server/conns.h"
#include "server/grpc.h"
#include "server/pipeline.h"
#include "server/route.h"
#include "server/tls.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <arpa/inet.h>
#include <poll.h>
#include <pthread.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#define IDLE_TIMEOUT_NS (120 * 1000000000LL)
#define RECV_CHUNK	(64 * 1024)
#define GRPC_NO_METHOD	12

struct server_grpc {
	struct server *srv;
	int lfd;
	unsigned port;
	pthread_t acceptor;
	bool stop;  /* atomic */
	int nconns; /* atomic: connection threads alive */
	pthread_mutex_t lock;
	VEC(int) fds; /* sockets of live connections, for a forced stop */
};

struct gstream {
	int32_t id;
	struct gstream *next;
	char path[160], ctype[64], encoding[24], dataset[80];
	char *authorization; /* malloc'd; wiped on free */
	struct buf body;
	bool too_big, complete, answered;
	bool slot;    /* holds an ingest slot (pipeline.h) while its body is buffered */
	bool refused; /* no slot was free: the body is dropped, UNAVAILABLE */
	struct server *srv;
	/* the DATA of a successful answer */
	struct buf resp;
	size_t resp_off;
	int status;
	char message[1024];
};

struct gconn {
	struct server_grpc *g;
	int fd;
	struct server_conn *gc;	     /* the connection guard's entry (conns.h) */
	struct server_tls_sess *tls; /* with --tls-cert: the session over @fd */
	char peer[INET6_ADDRSTRLEN + 8];
	nghttp2_session *sess;
	struct gstream *streams;
	bool failed;
};

static void stream_free(struct gstream *s)
{
	if (!s)
		return;
	if (s->slot)
		server_ingest_leave(s->srv);
	if (s->authorization) {
		memset(s->authorization, 0, strlen(s->authorization));
		free(s->authorization);
	}
	buf_release(&s->body);
	buf_release(&s->resp);
	free(s);
}

static ssize_t on_send(nghttp2_session *sess, const uint8_t *data, size_t len, int flags,
		       void *user)
{
	struct gconn *c = user;
	size_t off = 0;

	(void)sess;
	(void)flags;
	if (c->tls) {
		if (server_tls_send(c->tls, data, len)) {
			c->failed = true;
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		}
		return (ssize_t)len;
	}
	while (off < len) {
		ssize_t n = send(c->fd, data + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			c->failed = true;
			return NGHTTP2_ERR_CALLBACK_FAILURE;
		}
		off += (size_t)n;
	}
	return (ssize_t)len;
}

static int on_begin_headers(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
	struct gconn *c = user;
	struct gstream *s;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = xcalloc(1, sizeof(*s));
	s->id = f->hd.stream_id;
	s->srv = c->g->srv;
	server_conns_phase(s->srv->conns, c->gc, SERVER_CONN_BODY);
	/* A stream's body is buffered until it ends: it takes an ingest slot
	 * now, so max_inflight bounds the memory of gRPC as of HTTP. */
	{
		struct server_ingest_out o = { 0 };

		s->slot = server_ingest_enter(s->srv, &o);
		s->refused = !s->slot;
	}
	/* A gRPC message, its 5-byte prefix, and a little slack for nothing else. */
	buf_init(&s->body, c->g->srv->limits.max_body + 5);
	buf_init(&s->resp, 0);
	s->next = c->streams;
	c->streams = s;
	nghttp2_session_set_stream_user_data(sess, s->id, s);
	return 0;
}

static void copy_hdr(char *dst, size_t dstsz, const uint8_t *v, size_t vn)
{
	size_t n = PROF_MIN(vn, dstsz - 1);

	memcpy(dst, v, n);
	dst[n] = '\0';
}

static int on_header(nghttp2_session *sess, const nghttp2_frame *f, const uint8_t *name,
		     size_t namelen, const uint8_t *value, size_t valuelen, uint8_t flags,
		     void *user)
{
	struct gstream *s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);

	(void)flags;
	(void)user;
	if (!s || f->hd.type != NGHTTP2_HEADERS)
		return 0;
#define IS(lit) (namelen == sizeof(lit) - 1 && !memcmp(name, lit, namelen))
	if (IS(":path"))
		copy_hdr(s->path, sizeof(s->path), value, valuelen);
	else if (IS("content-type"))
		copy_hdr(s->ctype, sizeof(s->ctype), value, valuelen);
	else if (IS("grpc-encoding"))
		copy_hdr(s->encoding, sizeof(s->encoding), value, valuelen);
	else if (IS("x-profd-dataset") || (IS("x-scope-orgid") && !s->dataset[0]))
		copy_hdr(s->dataset, sizeof(s->dataset), value, valuelen);
	else if (IS("authorization") && !s->authorization && valuelen < 4096)
		s->authorization = xstrndup((const char *)value, valuelen);
#undef IS
	return 0;
}

static int on_data_chunk(nghttp2_session *sess, uint8_t flags, int32_t id, const uint8_t *data,
			 size_t len, void *user)
{
	struct gstream *s = nghttp2_session_get_stream_user_data(sess, id);
	struct gconn *c = user;

	(void)flags;
	server_conns_body(c->g->srv->conns, c->gc, len);
	if (!s || s->too_big || s->refused)
		return 0;
	if (buf_add(&s->body, data, len)) {
		s->too_big = true; /* answered RESOURCE_EXHAUSTED once the stream ends */
		buf_release(&s->body);
	}
	return 0;
}

static int on_frame_recv(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
	struct gstream *s;

	(void)user;
	if ((f->hd.type != NGHTTP2_DATA && f->hd.type != NGHTTP2_HEADERS) ||
	    !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
		return 0;
	s = nghttp2_session_get_stream_user_data(sess, f->hd.stream_id);
	if (s)
		s->complete = true;
	return 0;
}

static int on_stream_close(nghttp2_session *sess, int32_t id, uint32_t error_code, void *user)
{
	struct gconn *c = user;

	(void)sess;
	(void)error_code;
	for (struct gstream **pp = &c->streams; *pp; pp = &(*pp)->next) {
		if ((*pp)->id == id) {
			struct gstream *s = *pp;

			*pp = s->next;
			stream_free(s);
			break;
		}
	}
	return 0;
}

/* grpc-message: percent-encode bytes outside 0x20..0x7e and '%'. */
static void pct_encode(const char *in, char *out, size_t outsz)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *in && n + 4 < outsz; in++) {
		unsigned char ch = (unsigned char)*in;

		if (ch < 0x20 || ch > 0x7e || ch == '%') {
			out[n++] = '%';
			out[n++] = hex[ch >> 4];
			out[n++] = hex[ch & 15];
		} else {
			out[n++] = (char)ch;
		}
	}
	out[n] = '\0';
}

#define NV(n, v)                                                                               \
	{                                                                                      \
		(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, strlen(v), NGHTTP2_NV_FLAG_NONE \
	}

static ssize_t read_resp(nghttp2_session *sess, int32_t id, uint8_t *buf, size_t length,
			 uint32_t *flags, nghttp2_data_source *src, void *user)
{
	struct gstream *s = src->ptr;
	size_t n = PROF_MIN(length, s->resp.len - s->resp_off);

	(void)user;
	memcpy(buf, s->resp.p + s->resp_off, n);
	s->resp_off += n;
	if (s->resp_off == s->resp.len) {
		nghttp2_nv tr[] = { NV("grpc-status", "0") };

		*flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
		if (nghttp2_submit_trailer(sess, id, tr, PROF_ARRAY_SIZE(tr)))
			return NGHTTP2_ERR_CALLBACK_FAILURE;
	}
	return (ssize_t)n;
}

/* A trailers-only answer: HEADERS with the status, END_STREAM. */
static void answer_status(struct gconn *c, struct gstream *s, int code, const char *msg,
			  unsigned retry_after)
{
	char st[16], enc[1400], ra[16];
	nghttp2_nv hdr[5] = { NV(":status", "200"), NV("content-type", "application/grpc") };
	size_t n = 2;

	snprintf(st, sizeof(st), "%d", code);
	pct_encode(msg, enc, sizeof(enc));
	hdr[n++] = (nghttp2_nv)NV("grpc-status", st);
	if (*enc)
		hdr[n++] = (nghttp2_nv)NV("grpc-message", enc);
	if (retry_after) {
		/* A hint in metadata; gRPC clients back off on UNAVAILABLE by themselves. */
		snprintf(ra, sizeof(ra), "%u", retry_after);
		hdr[n++] = (nghttp2_nv)NV("retry-after", ra);
	}
	s->answered = true;
	nghttp2_submit_response(c->sess, s->id, hdr, n, NULL);
}

static void count_call(struct server *srv, int code)
{
	char lbl[96];

	snprintf(lbl, sizeof(lbl), "method=\"Export\",grpc_status=\"%d\"", code);
	server_metrics_inc(srv->metrics, "profd_grpc_requests_total", lbl, 1);
}

static void handle_stream(struct gconn *c, struct gstream *s)
{
	struct server *srv = c->g->srv;
	struct server_ingest_out out = { 0 };
	struct server_auth auth;
	struct buf inflated;
	const void *msg;
	size_t mlen;
	int64_t t0 = prof_now_ns();
	size_t blen = s->body.len;

	buf_init(&inflated, 0);
	if (strcmp(s->path, SERVER_GRPC_EXPORT_PATH)) {
		answer_status(c, s, GRPC_NO_METHOD,
			      "unknown method; this server implements "
			      "ProfilesService/Export only",
			      0);
		count_call(srv, GRPC_NO_METHOD);
		log_warn("grpc path=%.100s grpc_status=%d reason=\"unknown method\"", s->path,
			 GRPC_NO_METHOD);
		return;
	}
	if (strncasecmp(s->ctype, "application/grpc", 16)) {
		nghttp2_nv hdr[] = { NV(":status", "415") };

		s->answered = true;
		nghttp2_submit_response(c->sess, s->id, hdr, PROF_ARRAY_SIZE(hdr), NULL);
		log_warn("grpc path=%s status=415 reason=\"content-type '%s' is not "
			 "application/grpc\"",
			 s->path, s->ctype);
		return;
	}
	server_authorize(&srv->tenants, s->authorization, s->dataset[0] ? s->dataset : NULL,
			 SERVER_PERM_INGEST, &auth);
	if (auth.status) {
		server_ingest_fail(srv, &out,
				   auth.status == 401	? SERVER_FAIL_UNAUTHORIZED
				   : auth.status == 403 ? SERVER_FAIL_FORBIDDEN
				   : auth.status == 404 ? SERVER_FAIL_NOT_FOUND
							: SERVER_FAIL_BAD_INPUT,
				   "auth", "%s", auth.msg);
		goto done;
	}
	if (__atomic_load_n(&srv->stopping, __ATOMIC_SEQ_CST)) {
		server_ingest_fail(srv, &out, SERVER_FAIL_UNAVAILABLE, "shutting_down",
				   "the server is shutting down");
		goto done;
	}
	if (s->refused) {
		server_ingest_fail(
			srv, &out, SERVER_FAIL_OVERLOADED, "overloaded",
			"server busy: %u ingest requests in flight (limit max_inflight); "
			"retry later",
			srv->limits.max_inflight);
		goto done;
	}
	if (s->too_big) {
		server_ingest_fail(srv, &out, SERVER_FAIL_TOO_LARGE, "max_body",
				   "message exceeds the limit of %zu bytes (limit max_body)",
				   srv->limits.max_body);
		goto done;
	}
	if (s->body.len < 5) {
		server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "decode",
				   "the request has no gRPC message (%zu bytes; a message is a "
				   "5-byte prefix and the protobuf)",
				   s->body.len);
		goto done;
	}
	const unsigned char *b = (const unsigned char *)s->body.p;
	uint32_t len = (uint32_t)b[1] << 24 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 8 | b[4];

	if ((size_t)len != s->body.len - 5 || b[0] > 1) {
		server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "decode",
				   "bad gRPC message framing: flag %u, length %u, %zu bytes follow "
				   "(a unary call carries exactly one message)",
				   b[0], len, s->body.len - 5);
		goto done;
	}
	msg = b + 5;
	mlen = len;
	if (b[0] == 1) {
		if (strcasecmp(s->encoding, "gzip")) {
			answer_status(c, s, GRPC_NO_METHOD,
				      *s->encoding
					      ? "unsupported grpc-encoding; use gzip or identity"
					      : "compressed message without grpc-encoding",
				      0);
			count_call(srv, GRPC_NO_METHOD);
			return;
		}
		if (!server_inflate(srv, &msg, &mlen, true, &inflated, "gRPC message (gzip)", &out))
			goto done;
	}
	if (!server_ingest_otlp(srv, auth.ds, msg, mlen, false, "otlp-grpc", &out))
		goto done;
	/* Success: HEADERS, one DATA message, trailers. */
	{
		struct buf pb;
		unsigned char pre[5];
		nghttp2_nv hdr[] = { NV(":status", "200"), NV("content-type", "application/grpc") };
		nghttp2_data_provider prd;

		buf_init(&pb, 0);
		server_otlp_response(&out, false, &pb);
		pre[0] = 0;
		pre[1] = (unsigned char)(pb.len >> 24);
		pre[2] = (unsigned char)(pb.len >> 16);
		pre[3] = (unsigned char)(pb.len >> 8);
		pre[4] = (unsigned char)pb.len;
		(void)buf_add(&s->resp, pre, 5);
		(void)buf_add(&s->resp, pb.p ? pb.p : "", pb.len);
		buf_release(&pb);
		prd.source.ptr = s;
		prd.read_callback = read_resp;
		s->answered = true;
		nghttp2_submit_response(c->sess, s->id, hdr, PROF_ARRAY_SIZE(hdr), &prd);
		count_call(srv, 0);
		log_info("grpc path=%s grpc_status=0 dataset=%s token=%s body_bytes=%zu "
			 "samples=%" PRIu64 " ms=%.1f%s%s%s",
			 s->path, auth.ds->name, auth.token, s->body.len, out.accepted,
			 (double)(prof_now_ns() - t0) / 1e6, out.partial[0] ? " note=\"" : "",
			 out.partial, out.partial[0] ? "\"" : "");
	}
done:
	/* The body is no longer needed: give the slot back now. */
	buf_release(&s->body);
	if (s->slot) {
		server_ingest_leave(srv);
		s->slot = false;
	}
	if (!s->answered) {
		int code = server_fail_grpc(out.fail);

		answer_status(c, s, code, out.msg,
			      out.fail == SERVER_FAIL_OVERLOADED ||
					      out.fail == SERVER_FAIL_UNAVAILABLE
				      ? srv->limits.retry_after_s
				      : 0);
		count_call(srv, code);
		log_warn("grpc path=%s grpc_status=%d dataset=%s token=%s body_bytes=%zu ms=%.1f "
			 "reason=\"%s\"",
			 s->path, code, auth.ds ? auth.ds->name : "-",
			 auth.token ? auth.token : "-", blen, (double)(prof_now_ns() - t0) / 1e6,
			 out.msg);
	}
	buf_release(&inflated);
}

static void conn_track(struct server_grpc *g, int fd, bool add)
{
	pthread_mutex_lock(&g->lock);
	if (add) {
		VEC_PUSH(&g->fds, fd);
	} else {
		for (size_t i = 0; i < g->fds.n; i++)
			if (g->fds.v[i] == fd) {
				g->fds.v[i] = g->fds.v[--g->fds.n];
				break;
			}
	}
	pthread_mutex_unlock(&g->lock);
}

/*
 * With --tls-cert: the handshake on the connection's own thread, so a
 * slow one holds up no other client. The guard's header deadline closes
 * one that dawdles (phase NEW from accept); GnuTLS's timeout, the same,
 * is the backstop. False when the client is refused (logged).
 */
static bool tls_accept(struct gconn *c)
{
	struct server *srv = c->g->srv;
	unsigned ms = (unsigned)PROF_MIN(srv->header_timeout_ns / 1000000, 3600000LL);
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = server_tls_accept(srv->tls, c->fd, ms, &c->tls, &err);
	if (!rc)
		return true;
	if (rc == -ECONNRESET)
		log_debug("grpc: client=%s %s", c->peer, err.msg);
	else
		log_warn("grpc: refused client=%s: %s", c->peer, err.msg);
	if (rc == -EACCES)
		server_metrics_inc(srv->metrics, "profd_tls_client_refused_total",
				   "listener=\"grpc\"", 1);
	return false;
}

static void *conn_main(void *arg)
{
	struct gconn *c = arg;
	struct server_grpc *g = c->g;
	nghttp2_session_callbacks *cb;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20 },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 64 << 10 },
	};
	uint8_t *rbuf = xmalloc(RECV_CHUNK);
	int64_t last = prof_now_ns();
	bool goaway = false;

	if (g->srv->tls && !tls_accept(c))
		goto out;
	nghttp2_session_callbacks_new(&cb);
	nghttp2_session_callbacks_set_send_callback(cb, on_send);
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	if (nghttp2_session_server_new(&c->sess, cb, c)) {
		nghttp2_session_callbacks_del(cb);
		goto out;
	}
	nghttp2_session_callbacks_del(cb);
	nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, PROF_ARRAY_SIZE(iv));
	nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, 16 << 20);

	for (;;) {
		/* Answer every completed request, then flush. */
		bool handled = false;

		for (struct gstream *s = c->streams; s; s = s->next)
			if (s->complete && !s->answered) {
				if (!handled)
					server_conns_phase(g->srv->conns, c->gc, SERVER_CONN_BUSY);
				handle_stream(c, s);
				handled = true;
			}
		if (handled) /* the guard's idle deadline runs from the answer */
			server_conns_phase(g->srv->conns, c->gc, SERVER_CONN_IDLE);
		if (nghttp2_session_send(c->sess) || c->failed)
			break;
		if (!nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess))
			break;
		if (__atomic_load_n(&g->stop, __ATOMIC_SEQ_CST) && !goaway) {
			nghttp2_submit_goaway(c->sess, NGHTTP2_FLAG_NONE,
					      nghttp2_session_get_last_proc_stream_id(c->sess),
					      NGHTTP2_NO_ERROR, NULL, 0);
			goaway = true;
			continue;
		}
		if (goaway && !c->streams)
			break;
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		/* TLS may hold decrypted bytes that poll(2) cannot see. */
		int pr = c->tls && server_tls_pending(c->tls) ? 1 : poll(&pfd, 1, 200);

		if (pr < 0 && errno != EINTR)
			break;
		if (pr <= 0) {
			if (prof_now_ns() - last > IDLE_TIMEOUT_NS)
				break;
			continue;
		}
		ssize_t n = c->tls ? server_tls_recv(c->tls, rbuf, RECV_CHUNK)
				   : recv(c->fd, rbuf, RECV_CHUNK, 0);

		if (c->tls && n == -EAGAIN)
			continue;
		if (!c->tls && n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		last = prof_now_ns();
		ssize_t used = nghttp2_session_mem_recv(c->sess, rbuf, (size_t)n);

		if (used < 0) {
			log_warn("grpc: connection closed: %s", nghttp2_strerror((int)used));
			(void)nghttp2_session_send(c->sess); /* the GOAWAY, if any */
			break;
		}
	}
out:
	nghttp2_session_del(c->sess); /* frees the streams through on_stream_close; NULL ok */
	while (c->streams) {
		struct gstream *s = c->streams;

		c->streams = s->next;
		stream_free(s);
	}
	server_tls_sess_free(c->tls);
	conn_track(g, c->fd, false);
	server_conns_close(g->srv->conns, c->gc);
	close(c->fd);
	free(rbuf);
	free(c);
	__atomic_sub_fetch(&g->nconns, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

/* "ADDR" of @ss (for the log). */
static void peer_name(const struct sockaddr_storage *ss, char *out, size_t outsz)
{
	const void *a = ss->ss_family == AF_INET6
				? (const void *)&((const struct sockaddr_in6 *)ss)->sin6_addr
				: (const void *)&((const struct sockaddr_in *)ss)->sin_addr;

	if (!inet_ntop(ss->ss_family == AF_INET6 ? AF_INET6 : AF_INET, a, out, (socklen_t)outsz))
		snprintf(out, outsz, "?");
}

static void *accept_main(void *arg)
{
	struct server_grpc *g = arg;

	while (!__atomic_load_n(&g->stop, __ATOMIC_SEQ_CST)) {
		struct pollfd pfd = { .fd = g->lfd, .events = POLLIN };
		int pr = poll(&pfd, 1, 200);
		int fd, one = 1;
		pthread_attr_t at;
		pthread_t th;

		if (pr <= 0)
			continue;
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		struct server_conn *gc;

		fd = accept4(g->lfd, (struct sockaddr *)&peer, &plen, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		if (__atomic_load_n(&g->nconns, __ATOMIC_SEQ_CST) >= SERVER_GRPC_MAX_CONNS) {
			log_warn("grpc: %d connections open, refusing another",
				 SERVER_GRPC_MAX_CONNS);
			close(fd);
			continue;
		}
		/* per-client and total limits, deadlines: shared with HTTP */
		gc = server_conns_open(g->srv->conns, fd, (struct sockaddr *)&peer, plen);
		if (!gc) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		struct gconn *c = xcalloc(1, sizeof(*c));

		c->g = g;
		c->fd = fd;
		c->gc = gc;
		peer_name(&peer, c->peer, sizeof(c->peer));
		__atomic_add_fetch(&g->nconns, 1, __ATOMIC_SEQ_CST);
		conn_track(g, fd, true);
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (pthread_create(&th, &at, conn_main, c)) {
			conn_track(g, fd, false);
			server_conns_close(g->srv->conns, gc);
			close(fd);
			free(c);
			__atomic_sub_fetch(&g->nconns, 1, __ATOMIC_SEQ_CST);
		}
		pthread_attr_destroy(&at);
	}
	return NULL;
}

int server_grpc_start(struct server *srv, const char *addr, struct server_grpc **out,
		      struct prof_err *err)
{
	struct sockaddr_storage ss;
	socklen_t sslen;
	char *host = NULL;
	struct server_grpc *g;
	int one = 1, rc;

	*out = NULL;
	rc = server_resolve_listen(addr, &ss, &sslen, &host, err);
	free(host);
	if (rc)
		return rc;
	g = xcalloc(1, sizeof(*g));
	g->srv = srv;
	pthread_mutex_init(&g->lock, NULL);
	g->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (g->lfd < 0 || setsockopt(g->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(g->lfd, (struct sockaddr *)&ss, sslen) || listen(g->lfd, 128)) {
		rc = prof_err_set(err, -errno, -1, "cannot listen on %s (--grpc-listen): %s", addr,
				  strerror(errno));
		if (g->lfd >= 0)
			close(g->lfd);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return rc;
	}
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);

	if (!getsockname(g->lfd, (struct sockaddr *)&bound, &bl))
		g->port = ntohs(bound.ss_family == AF_INET6
					? ((struct sockaddr_in6 *)&bound)->sin6_port
					: ((struct sockaddr_in *)&bound)->sin_port);
	if (pthread_create(&g->acceptor, NULL, accept_main, g)) {
		rc = prof_err_set(err, -EAGAIN, -1, "grpc: cannot start the accept thread");
		close(g->lfd);
		pthread_mutex_destroy(&g->lock);
		free(g);
		return rc;
	}
	*out = g;
	return 0;
}

unsigned server_grpc_port(const struct server_grpc *g)
{
	return g ? g->port : 0;
}

void server_grpc_stop(struct server_grpc *g)
{
	int64_t deadline = prof_now_ns() + 10 * 1000000000LL;

	if (!g)
		return;
	__atomic_store_n(&g->stop, true, __ATOMIC_SEQ_CST);
	pthread_join(g->acceptor, NULL);
	close(g->lfd);
	/* Connections send GOAWAY, finish their streams and leave. */
	while (__atomic_load_n(&g->nconns, __ATOMIC_SEQ_CST) > 0 && prof_now_ns() < deadline) {
		struct timespec ts = { 0, 10 * 1000000 };

		nanosleep(&ts, NULL);
	}
	pthread_mutex_lock(&g->lock);
	for (size_t i = 0; i < g->fds.n; i++)
		shutdown(g->fds.v[i], SHUT_RDWR);
	pthread_mutex_unlock(&g->lock);
	while (__atomic_load_n(&g->nconns, __ATOMIC_SEQ_CST) > 0) {
		struct timespec ts = { 0, 10 * 1000000 };

		nanosleep(&ts, NULL);
	}
	VEC_FREE(&g->fds);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
