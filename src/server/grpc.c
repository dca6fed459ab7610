// SPDX-License-Identifier: Apache-2.0
/*
 * grpc.c - OTLP/gRPC over h2c or TLS with libnghttp2; see grpc.h.
 *
 * One event-loop thread serves every connection: non-blocking sockets in
 * an epoll set (level-triggered), the bytes read fed to nghttp2
 * (nghttp2_session_mem_recv), what nghttp2 has to say taken with
 * nghttp2_session_mem_send into the connection's output buffer and
 * written as far as the socket takes it (EPOLLOUT for the rest). nghttp2
 * sessions are touched by the loop thread only. A stream whose request is
 * complete (a frame with END_STREAM) goes to the server's ingest worker
 * pool (workers.h), which authorizes, decodes and stores it (the WAL
 * fsync included) and leaves the outcome in the stream; the worker queues
 * the stream on the loop's done list and wakes it (eventfd), and the loop
 * submits the answer. A stream or a connection that ends while its
 * request is on a worker is kept until the worker is done with it.
 *
 * gRPC over HTTP/2: grpc/grpc doc/PROTOCOL-HTTP2.md (length-prefixed
 * messages, trailers, percent-encoded grpc-message, HTTP 415 for a
 * non-gRPC content-type, status 12 (no such method) for an unknown
 * compression).
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
#include "server/workers.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <nghttp2/nghttp2.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stddef.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#define RECV_CHUNK	(64 * 1024)
#define READ_BUDGET	(1 << 20)    /* bytes read from one connection per turn (cleartext) */
#define OUT_HIGH	(256 * 1024) /* unsent bytes beyond which nghttp2 is not asked for more */
#define TLS_RECORD	(16 * 1024)
#define MAX_EVENTS	256
#define STOP_GRACE_NS	(10 * 1000000000LL)
#define ACCEPT_PAUSE_NS (100 * 1000000LL)
#define GRPC_NO_METHOD	12

struct gconn;

/* What a worker decided for a stream; the loop turns it into frames. */
enum gresult {
	GRES_NONE,
	GRES_OK,     /* HEADERS, the DATA in @resp, trailers with status 0 */
	GRES_STATUS, /* trailers-only: @code, @message, @retry_after */
	GRES_415,    /* :status 415, not gRPC */
};

struct gstream {
	int32_t id;
	struct gstream *next;	   /* the connection's streams */
	struct gstream *done_next; /* the loop's done list */
	struct gconn *c;
	struct server_job job; /* the request's run on a worker */
	char path[160], ctype[64], encoding[24], dataset[80];
	char *authorization; /* malloc'd; wiped on free */
	struct buf body;
	bool too_big, complete;
	bool dispatched; /* handed to a worker; the outcome is not back yet */
	bool closed;	 /* nghttp2 closed it while on a worker: free when back */
	bool slot;	 /* holds an ingest slot (pipeline.h) while its body is buffered */
	bool refused;	 /* no slot was free: the body is dropped, UNAVAILABLE */
	struct server *srv;
	/* the outcome */
	enum gresult result;
	int code;
	unsigned retry_after;
	struct buf resp; /* GRES_OK: the DATA */
	size_t resp_off;
	char message[1024];
};

struct gconn {
	struct server_grpc *g;
	struct gconn *prev, *next; /* the loop's live connections */
	int fd;
	struct server_conn *gc;	     /* the connection guard's entry (conns.h) */
	struct server_tls_sess *tls; /* with --tls-cert: the session over @fd */
	bool handshaking;	     /* TLS handshake not complete: no nghttp2 yet */
	char peer[INET6_ADDRSTRLEN + 8];
	nghttp2_session *sess;
	struct gstream *streams;
	struct buf out; /* bytes for the socket, from @out_off */
	size_t out_off;
	size_t tls_held; /* bytes of @out GnuTLS holds after -EAGAIN (server_tls_send_some) */
	unsigned jobs;	 /* streams on a worker */
	uint32_t events; /* registered with epoll */
	bool goaway;	 /* sent: close once the streams are done */
	bool eof;	 /* the client closed its side: answer what came, then close */
	bool dead;	 /* closed; freed when the last job is back */
};

struct server_grpc {
	struct server *srv;
	int lfd, epfd, evfd;
	unsigned port;
	pthread_t loop;
	bool stop; /* atomic */
	pthread_mutex_t lock;
	struct gstream *done; /* under @lock: streams back from workers */
	/* the loop thread's own */
	struct gconn *conns;
	struct gconn *graveyard;  /* closed, no job left: freed after the turn */
	unsigned jobs;		  /* streams on workers, every connection */
	int64_t accept_paused_ns; /* out of descriptors: accept again after this */
	uint8_t rbuf[RECV_CHUNK];
};

/* epoll data of the two descriptors that are not connections */
static char listen_tag, wake_tag;

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

static int on_begin_headers(nghttp2_session *sess, const nghttp2_frame *f, void *user)
{
	struct gconn *c = user;
	struct gstream *s;

	if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
		return 0;
	s = xcalloc(1, sizeof(*s));
	s->id = f->hd.stream_id;
	s->c = c;
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
			if (s->dispatched)
				s->closed = true; /* the worker's until it is back */
			else
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
	nghttp2_submit_response(c->sess, s->id, hdr, n, NULL);
}

static void count_call(struct server *srv, int code)
{
	char lbl[96];

	snprintf(lbl, sizeof(lbl), "method=\"Export\",grpc_status=\"%d\"", code);
	server_metrics_inc(srv->metrics, "profd_grpc_requests_total", lbl, 1);
}

/* The outcome for @s: trailers-only with @code and @msg. */
static void set_status(struct gstream *s, int code, const char *msg, unsigned retry_after)
{
	s->result = GRES_STATUS;
	s->code = code;
	s->retry_after = retry_after;
	snprintf(s->message, sizeof(s->message), "%s", msg);
}

/*
 * A worker's part of a stream: authorize, check, decode and store the
 * request, leaving the outcome in @s (no nghttp2 here: the session is
 * the loop's).
 */
static void stream_work(struct gstream *s)
{
	struct server *srv = s->srv;
	struct server_ingest_out out = { 0 };
	struct server_auth auth;
	struct buf inflated;
	const void *msg;
	size_t mlen;
	int64_t t0 = prof_now_ns();
	size_t blen = s->body.len;

	buf_init(&inflated, 0);
	if (strcmp(s->path, SERVER_GRPC_EXPORT_PATH)) {
		set_status(s, GRPC_NO_METHOD,
			   "unknown method; this server implements "
			   "ProfilesService/Export only",
			   0);
		count_call(srv, GRPC_NO_METHOD);
		log_warn("grpc path=%.100s grpc_status=%d reason=\"unknown method\"", s->path,
			 GRPC_NO_METHOD);
		return;
	}
	if (strncasecmp(s->ctype, "application/grpc", 16)) {
		s->result = GRES_415;
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
			set_status(s, GRPC_NO_METHOD,
				   *s->encoding ? "unsupported grpc-encoding; use gzip or identity"
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
		s->result = GRES_OK;
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
	if (s->result == GRES_NONE) {
		int code = server_fail_grpc(out.fail);

		set_status(s, code, out.msg,
			   out.fail == SERVER_FAIL_OVERLOADED || out.fail == SERVER_FAIL_UNAVAILABLE
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

/* A worker's job: the request's work, then back to the loop. */
static void stream_job(struct server_job *job)
{
	struct gstream *s = (struct gstream *)((char *)job - offsetof(struct gstream, job));
	struct server_grpc *g = s->c->g;
	uint64_t one = 1;

	stream_work(s);
	pthread_mutex_lock(&g->lock);
	s->done_next = g->done;
	g->done = s;
	pthread_mutex_unlock(&g->lock);
	if (write(g->evfd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		log_warn("grpc: cannot wake the event loop: %s", strerror(errno));
}

/* The loop's part of a stream back from its worker: the answer's frames. */
static void stream_answer(struct gconn *c, struct gstream *s)
{
	if (s->result == GRES_OK) {
		nghttp2_nv hdr[] = { NV(":status", "200"), NV("content-type", "application/grpc") };
		nghttp2_data_provider prd = { .source.ptr = s, .read_callback = read_resp };

		nghttp2_submit_response(c->sess, s->id, hdr, PROF_ARRAY_SIZE(hdr), &prd);
	} else if (s->result == GRES_415) {
		nghttp2_nv hdr[] = { NV(":status", "415") };

		nghttp2_submit_response(c->sess, s->id, hdr, PROF_ARRAY_SIZE(hdr), NULL);
	} else {
		answer_status(c, s, s->code, s->message, s->retry_after);
	}
}

static void conn_events(struct gconn *c, uint32_t ev)
{
	struct epoll_event e = { .events = ev, .data.ptr = c };

	if (c->events == ev)
		return;
	if (epoll_ctl(c->g->epfd, EPOLL_CTL_MOD, c->fd, &e) == 0)
		c->events = ev;
}

/* Close @c now; it is freed here, or when its last stream is back from a worker. */
static void conn_close(struct gconn *c)
{
	struct server_grpc *g = c->g;

	if (c->dead)
		return;
	epoll_ctl(g->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	/* on_stream_close frees each stream, or marks one on a worker */
	nghttp2_session_del(c->sess);
	c->sess = NULL;
	while (c->streams) {
		struct gstream *s = c->streams;

		c->streams = s->next;
		if (s->dispatched)
			s->closed = true;
		else
			stream_free(s);
	}
	server_tls_sess_free(c->tls);
	c->tls = NULL;
	server_conns_close(g->srv->conns, c->gc);
	close(c->fd);
	buf_release(&c->out);
	if (c->prev)
		c->prev->next = c->next;
	else
		g->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->dead = true;
	if (!c->jobs) {
		c->next = g->graveyard;
		g->graveyard = c;
	}
}

/*
 * Write what nghttp2 has to send, as far as the socket takes it; watch
 * for writability while bytes remain; close @c when neither side has
 * more to say. False when @c was closed.
 */
static bool conn_flush(struct gconn *c)
{
	for (;;) {
		size_t pending = c->out.len - c->out_off;

		if (!pending) {
			c->out.len = c->out_off = 0;
			while (c->out.len < OUT_HIGH) {
				const uint8_t *d;
				ssize_t n = nghttp2_session_mem_send(c->sess, &d);

				if (n < 0) {
					log_warn("grpc: client=%s: %s", c->peer,
						 nghttp2_strerror((int)n));
					conn_close(c);
					return false;
				}
				if (!n)
					break;
				if (buf_add(&c->out, d, (size_t)n)) {
					conn_close(c);
					return false;
				}
			}
			pending = c->out.len;
			if (!pending)
				break;
		}
		const char *p = c->out.p + c->out_off;
		ssize_t w;

		if (c->tls) {
			size_t chunk = c->tls_held ? c->tls_held : PROF_MIN(pending, TLS_RECORD);

			w = server_tls_send_some(c->tls, c->tls_held ? NULL : p,
						 c->tls_held ? 0 : chunk);
			if (w == -EAGAIN) {
				c->tls_held = chunk;
				break;
			}
			if (w > 0)
				w = (ssize_t)chunk;
			c->tls_held = 0;
		} else {
			w = send(c->fd, p, pending, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (w < 0 && (errno == EAGAIN || errno == EINTR))
				break;
		}
		if (w <= 0) {
			conn_close(c);
			return false;
		}
		c->out_off += (size_t)w;
	}
	bool pending = c->out.len > c->out_off;

	if (!pending && !c->jobs &&
	    ((!nghttp2_session_want_read(c->sess) && !nghttp2_session_want_write(c->sess)) ||
	     (c->goaway && !c->streams) || c->eof)) {
		conn_close(c);
		return false;
	}
	conn_events(c, (c->eof ? 0 : EPOLLIN) | (pending ? EPOLLOUT : 0));
	return true;
}

/* Hand every stream whose request is complete to the ingest workers. */
static void conn_dispatch(struct gconn *c)
{
	struct server *srv = c->g->srv;

	for (struct gstream *s = c->streams; s; s = s->next) {
		if (!s->complete || s->dispatched)
			continue;
		if (!c->jobs)
			server_conns_phase(srv->conns, c->gc, SERVER_CONN_BUSY);
		s->dispatched = true;
		c->jobs++;
		c->g->jobs++;
		s->job.fn = stream_job;
		if (server_workers_submit(srv->ingest_workers, &s->job)) {
			/* no worker: answered at once, through the done list all the same */
			struct server_ingest_out out = { 0 };

			server_ingest_fail(srv, &out, SERVER_FAIL_UNAVAILABLE, "workers",
					   "no worker thread could be started; retry later");
			set_status(s, server_fail_grpc(out.fail), out.msg,
				   srv->limits.retry_after_s);
			pthread_mutex_lock(&c->g->lock);
			s->done_next = c->g->done;
			c->g->done = s;
			pthread_mutex_unlock(&c->g->lock);
		}
	}
}

static bool conn_start_h2(struct gconn *c)
{
	nghttp2_session_callbacks *cb;
	nghttp2_settings_entry iv[] = {
		{ NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100 },
		{ NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20 },
		{ NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 64 << 10 },
	};
	int rc;

	if (nghttp2_session_callbacks_new(&cb))
		return false;
	nghttp2_session_callbacks_set_on_begin_headers_callback(cb, on_begin_headers);
	nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
	nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data_chunk);
	nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame_recv);
	nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_stream_close);
	rc = nghttp2_session_server_new(&c->sess, cb, c);
	nghttp2_session_callbacks_del(cb);
	if (rc)
		return false;
	nghttp2_submit_settings(c->sess, NGHTTP2_FLAG_NONE, iv, PROF_ARRAY_SIZE(iv));
	nghttp2_session_set_local_window_size(c->sess, NGHTTP2_FLAG_NONE, 0, 16 << 20);
	return true;
}

/* Feed what the socket has to nghttp2. False when @c was closed. */
static bool conn_read(struct gconn *c)
{
	struct server_grpc *g = c->g;
	size_t got = 0;

	for (;;) {
		ssize_t n;

		if (c->tls) {
			n = server_tls_recv(c->tls, g->rbuf, RECV_CHUNK);
			if (n == -EAGAIN) {
				if (server_tls_pending(c->tls))
					continue;
				break;
			}
		} else {
			if (got >= READ_BUDGET)
				break; /* level-triggered: the rest on the next turn */
			n = recv(c->fd, g->rbuf, RECV_CHUNK, MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				break;
		}
		if (n == 0) {
			/* The client closed its side (shutdown or close): what arrived
			 * whole is handled and answered, then the connection closes
			 * (conn_flush). No more reading: EOF is always readable. */
			conn_dispatch(c);
			c->eof = true;
			return true;
		}
		if (n < 0) {
			conn_close(c);
			return false;
		}
		got += (size_t)n;
		ssize_t used = nghttp2_session_mem_recv(c->sess, g->rbuf, (size_t)n);

		if (used < 0) {
			log_warn("grpc: client=%s: connection closed: %s", c->peer,
				 nghttp2_strerror((int)used));
			/* the GOAWAY nghttp2 queued, if the socket takes it */
			if (conn_flush(c))
				conn_close(c);
			return false;
		}
	}
	conn_dispatch(c);
	return true;
}

/* A step of the TLS handshake; then HTTP/2. False when @c was closed. */
static bool conn_handshake(struct gconn *c)
{
	struct server *srv = c->g->srv;
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = server_tls_handshake(c->tls, &err);
	if (rc == -EAGAIN) {
		conn_events(c, server_tls_want_write(c->tls) ? EPOLLIN | EPOLLOUT : EPOLLIN);
		return true;
	}
	if (rc) {
		if (rc == -ECONNRESET)
			log_debug("grpc: client=%s %s", c->peer, err.msg);
		else
			log_warn("grpc: refused client=%s: %s", c->peer, err.msg);
		if (rc == -EACCES)
			server_metrics_inc(srv->metrics, "profd_tls_client_refused_total",
					   "listener=\"grpc\"", 1);
		conn_close(c);
		return false;
	}
	c->handshaking = false;
	if (!conn_start_h2(c)) {
		conn_close(c);
		return false;
	}
	/* the client's first bytes may already sit decrypted in GnuTLS */
	return conn_read(c) && conn_flush(c);
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

static void accept_some(struct server_grpc *g)
{
	struct server *srv = g->srv;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage peer;
		socklen_t plen = sizeof(peer);
		struct server_conn *gc;
		struct gconn *c;
		int one = 1;
		int fd = accept4(g->lfd, (struct sockaddr *)&peer, &plen,
				 SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				/* the pending connection stays queued: try again shortly */
				log_warn("grpc: cannot accept: %s", strerror(errno));
				g->accept_paused_ns = prof_now_ns() + ACCEPT_PAUSE_NS;
				epoll_ctl(g->epfd, EPOLL_CTL_DEL, g->lfd, NULL);
			}
			return;
		}
		/* per-client and total limits, deadlines: shared with HTTP */
		gc = server_conns_open(srv->conns, fd, (struct sockaddr *)&peer, plen);
		if (!gc) {
			close(fd);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		c = xcalloc(1, sizeof(*c));
		c->g = g;
		c->fd = fd;
		c->gc = gc;
		buf_init(&c->out, 0);
		peer_name(&peer, c->peer, sizeof(c->peer));
		struct epoll_event e = { .events = EPOLLIN, .data.ptr = c };

		if (epoll_ctl(g->epfd, EPOLL_CTL_ADD, fd, &e)) {
			server_conns_close(srv->conns, gc);
			close(fd);
			free(c);
			continue;
		}
		c->events = EPOLLIN;
		c->next = g->conns;
		if (g->conns)
			g->conns->prev = c;
		g->conns = c;
		if (srv->tls) {
			unsigned ms =
				(unsigned)PROF_MIN(srv->header_timeout_ns / 1000000, 3600000LL);
			struct prof_err err;

			/* the guard's header deadline (phase NEW from accept) bounds the handshake */
			prof_err_init(&err);
			if (server_tls_start(srv->tls, fd, ms, &c->tls, &err)) {
				log_warn("grpc: client=%s: %s", c->peer, err.msg);
				conn_close(c);
				continue;
			}
			c->handshaking = true;
			continue;
		}
		if (!conn_start_h2(c)) {
			conn_close(c);
			continue;
		}
		(void)conn_flush(c); /* the server's SETTINGS */
	}
}

/* Answer the streams workers are done with. */
static void take_done(struct server_grpc *g)
{
	struct gstream *s;
	uint64_t n;

	if (read(g->evfd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		log_debug("grpc: eventfd: %s", strerror(errno));
	pthread_mutex_lock(&g->lock);
	s = g->done;
	g->done = NULL;
	pthread_mutex_unlock(&g->lock);
	while (s) {
		struct gstream *next = s->done_next;
		struct gconn *c = s->c;

		s->dispatched = false;
		c->jobs--;
		g->jobs--;
		if (s->closed) {
			stream_free(s);
		} else {
			stream_answer(c, s);
			if (!c->jobs) /* the guard's idle deadline runs from the answer */
				server_conns_phase(g->srv->conns, c->gc, SERVER_CONN_IDLE);
		}
		if (c->dead) {
			if (!c->jobs) {
				c->next = g->graveyard;
				g->graveyard = c;
			}
		} else {
			(void)conn_flush(c);
		}
		s = next;
	}
}

/* Stopping: no more connections; GOAWAY to each; after the grace, close the rest. */
static void loop_stop(struct server_grpc *g, int64_t deadline)
{
	if (g->lfd >= 0) {
		epoll_ctl(g->epfd, EPOLL_CTL_DEL, g->lfd, NULL);
		close(g->lfd);
		g->lfd = -1;
	}
	for (struct gconn *c = g->conns, *next; c; c = next) {
		next = c->next;
		if (prof_now_ns() > deadline || c->handshaking) {
			conn_close(c);
		} else if (!c->goaway) {
			nghttp2_submit_goaway(c->sess, NGHTTP2_FLAG_NONE,
					      nghttp2_session_get_last_proc_stream_id(c->sess),
					      NGHTTP2_NO_ERROR, NULL, 0);
			c->goaway = true;
			(void)conn_flush(c);
		}
	}
}

static void *loop_main(void *arg)
{
	struct server_grpc *g = arg;
	struct epoll_event ev[MAX_EVENTS];
	int64_t deadline = 0;

	for (;;) {
		while (g->graveyard) {
			struct gconn *c = g->graveyard;

			g->graveyard = c->next;
			free(c);
		}
		if (__atomic_load_n(&g->stop, __ATOMIC_SEQ_CST)) {
			if (!deadline)
				deadline = prof_now_ns() + STOP_GRACE_NS;
			loop_stop(g, deadline);
			if (!g->conns && !g->jobs && !g->graveyard)
				break;
		}
		if (g->accept_paused_ns && prof_now_ns() >= g->accept_paused_ns && g->lfd >= 0) {
			struct epoll_event e = { .events = EPOLLIN, .data.ptr = &listen_tag };

			g->accept_paused_ns = 0;
			epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->lfd, &e);
		}
		int n = epoll_wait(g->epfd, ev, MAX_EVENTS, 100);

		for (int i = 0; i < n; i++) {
			void *tag = ev[i].data.ptr;
			struct gconn *c = tag;

			if (tag == &listen_tag) {
				if (g->lfd >= 0)
					accept_some(g);
				continue;
			}
			if (tag == &wake_tag) {
				take_done(g);
				continue;
			}
			/* closed earlier in this turn: its memory waits in the graveyard */
			if (c->dead)
				continue;
			if (c->handshaking) {
				(void)conn_handshake(c);
				continue;
			}
			if (c->eof) { /* answering what came before the client's end */
				if (ev[i].events & (EPOLLHUP | EPOLLERR))
					conn_close(c); /* gone both ways: nobody to answer */
				else
					(void)conn_flush(c);
				continue;
			}
			if ((ev[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !conn_read(c))
				continue;
			(void)conn_flush(c);
		}
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
	g->epfd = g->evfd = -1;
	pthread_mutex_init(&g->lock, NULL);
	g->lfd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (g->lfd < 0 || setsockopt(g->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(g->lfd, (struct sockaddr *)&ss, sslen) || listen(g->lfd, 1024)) {
		rc = prof_err_set(err, -errno, -1, "cannot listen on %s (--grpc-listen): %s", addr,
				  strerror(errno));
		goto fail;
	}
	struct sockaddr_storage bound;
	socklen_t bl = sizeof(bound);

	if (!getsockname(g->lfd, (struct sockaddr *)&bound, &bl))
		g->port = ntohs(bound.ss_family == AF_INET6
					? ((struct sockaddr_in6 *)&bound)->sin6_port
					: ((struct sockaddr_in *)&bound)->sin_port);
	g->epfd = epoll_create1(EPOLL_CLOEXEC);
	g->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	struct epoll_event el = { .events = EPOLLIN, .data.ptr = &listen_tag };
	struct epoll_event ew = { .events = EPOLLIN, .data.ptr = &wake_tag };

	if (g->epfd < 0 || g->evfd < 0 || epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->lfd, &el) ||
	    epoll_ctl(g->epfd, EPOLL_CTL_ADD, g->evfd, &ew)) {
		rc = prof_err_set(err, -errno, -1, "grpc: cannot set up the event loop: %s",
				  strerror(errno));
		goto fail;
	}
	if (pthread_create(&g->loop, NULL, loop_main, g)) {
		rc = prof_err_set(err, -EAGAIN, -1, "grpc: cannot start the event loop thread");
		goto fail;
	}
	*out = g;
	return 0;
fail:
	if (g->lfd >= 0)
		close(g->lfd);
	if (g->epfd >= 0)
		close(g->epfd);
	if (g->evfd >= 0)
		close(g->evfd);
	pthread_mutex_destroy(&g->lock);
	free(g);
	return rc;
}

unsigned server_grpc_port(const struct server_grpc *g)
{
	return g ? g->port : 0;
}

void server_grpc_stop(struct server_grpc *g)
{
	uint64_t one = 1;

	if (!g)
		return;
	__atomic_store_n(&g->stop, true, __ATOMIC_SEQ_CST);
	if (write(g->evfd, &one, sizeof(one)) < 0)
		log_debug("grpc: eventfd: %s", strerror(errno));
	pthread_join(g->loop, NULL);
	close(g->epfd);
	close(g->evfd);
	pthread_mutex_destroy(&g->lock);
	free(g);
}
