// SPDX-License-Identifier: Apache-2.0
/* export.c - OTLP/HTTP exporter with a bounded queue; see export.h. */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/curl_dl.h"
#include "format/otlp.h"
#include "agent/export.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#define EXPORT_PATH "/v1development/profiles"
/* OTLP/gRPC: the service's method path (opentelemetry-proto profiles_service.proto). */
#define EXPORT_GRPC_PATH \
	"/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
#define EXPORT_GRPC_HDR		 5 /* gRPC message prefix: compressed flag u8, length u32 big-endian */
#define EXPORT_DEFAULT_QUEUE	 (32u << 20)
#define EXPORT_DEFAULT_TIMEOUT	 10000L
#define EXPORT_BACKOFF_MIN_MS	 1000L
#define EXPORT_BACKOFF_MAX_MS	 30000L
#define EXPORT_MAX_REQUEST_BYTES (256u << 20) /* an encoded request larger than this is a bug */
#define EXPORT_MAX_REPLY_BYTES	 4096	      /* kept from an error answer, for the log */

struct export_req {
	char *data; /* gzip body, owned */
	size_t len;
	uint64_t seq;
	int attempts;
	bool tried_at_close; /* attempted since agent_export_close began */
};

struct agent_export {
	struct agent_export_opts o;
	char *url;		    /* server_url + EXPORT_PATH (or EXPORT_GRPC_PATH), or NULL */
	bool grpc;		    /* OTLP/gRPC (grpc:// h2c, grpcs:// TLS) instead of OTLP/HTTP */
	char *auth_hdr;		    /* "Authorization: Bearer ..." or NULL */
	char *dataset_hdr;	    /* "X-Profd-Dataset: ..." or NULL */
	char *ca_file;		    /* CA certificates (PEM) for TLS, or NULL: the system's */
	char *cert_file, *key_file; /* client certificate and key (PEM), or NULL */
	uint64_t rng;		    /* xorshift state for backoff jitter (sender thread) */
	uint64_t seq;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	pthread_t thread;
	bool thread_started;
	/* under mu: */
	VEC(struct export_req) queue; /* FIFO: v[head .. n) */
	size_t head;
	bool stopping;
	bool inflight;			/* the head request is being posted (mu released) */
	struct timespec drain_deadline; /* CLOCK_MONOTONIC, valid when stopping */
	struct agent_export_stats st;
};

static void export_req_free(struct export_req *r)
{
	free(r->data);
	r->data = NULL;
}

static struct timespec mono_after_ms(long ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += ms / 1000;
	ts.tv_nsec += (ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

static long mono_ms_until(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (long)(t->tv_sec - now.tv_sec) * 1000 + (t->tv_nsec - now.tv_nsec) / 1000000L;
}

static size_t export_on_reply(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *reply = ud;
	size_t n = size * nmemb;

	/* Keep the start of the answer for the log; ignore the rest. */
	if (reply->len < EXPORT_MAX_REPLY_BYTES)
		buf_add(reply, ptr, PROF_MIN(n, EXPORT_MAX_REPLY_BYTES - reply->len));
	return n;
}

/*
 * libcurl progress callback: abort a transfer once closing has begun and
 * its drain deadline has passed, so a hung server cannot hold up exit.
 */
static int export_on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
			      curl_off_t ulnow)
{
	struct agent_export *x = ud;
	bool late;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	pthread_mutex_lock(&x->mu);
	late = x->stopping && mono_ms_until(&x->drain_deadline) <= 0;
	pthread_mutex_unlock(&x->mu);
	return late ? 1 : 0;
}

/* gRPC status and message from the response's trailers (or headers, for Trailers-Only). */
struct export_grpc_reply {
	int status; /* -1 until a grpc-status line is seen */
	char message[256];
};

static size_t export_on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct export_grpc_reply *g = ud;
	size_t n = size * nmemb, k;

	if (n > 12 && !strncasecmp(ptr, "grpc-status:", 12)) {
		g->status = 0;
		for (k = 12; k < n && ptr[k] == ' '; k++)
			;
		for (; k < n && ptr[k] >= '0' && ptr[k] <= '9' && g->status < 1000; k++)
			g->status = g->status * 10 + (ptr[k] - '0');
	} else if (n > 13 && !strncasecmp(ptr, "grpc-message:", 13)) {
		for (k = 13; k < n && ptr[k] == ' '; k++)
			;
		snprintf(g->message, sizeof(g->message), "%.*s", (int)(n - k), ptr + k);
		g->message[strcspn(g->message, "\r\n")] = '\0';
	}
	return n;
}

/*
 * gRPC status codes worth retrying (OTLP exporter spec, "Failures"):
 * CANCELLED 1, DEADLINE_EXCEEDED 4, RESOURCE_EXHAUSTED 8, ABORTED 10,
 * OUT_OF_RANGE 11, UNAVAILABLE 14, DATA_LOSS 15.
 */
static bool export_grpc_retryable(int code)
{
	return code == 1 || code == 4 || code == 8 || code == 10 || code == 11 || code == 14 ||
	       code == 15;
}

/* One POST. 0 on 2xx (gRPC: status OK); 1 for a transient failure worth retrying; -1 to give up. */
static int export_post(struct agent_export *x, CURL *curl, const struct export_req *r,
		       long timeout_ms)
{
	struct curl_slist *hdrs = NULL;
	struct export_grpc_reply g = { .status = -1 };
	struct buf reply;
	long status = 0;
	CURLcode cc;
	int ret;

	buf_init(&reply, EXPORT_MAX_REPLY_BYTES + 1);
	if (x->grpc) {
		hdrs = curl_slist_append(hdrs, "Content-Type: application/grpc+proto");
		hdrs = curl_slist_append(hdrs, "TE: trailers");
		hdrs = curl_slist_append(hdrs, "grpc-encoding: gzip");
		hdrs = curl_slist_append(hdrs, "grpc-accept-encoding: identity,gzip");
		curl_easy_setopt(curl, CURLOPT_HTTP_VERSION,
				 strncmp(x->url, "https://", 8)
					 ? (long)CURL_HTTP_VERSION_2_PRIOR_KNOWLEDGE
					 : (long)CURL_HTTP_VERSION_2TLS);
		/*
		 * A fresh connection per export: libcurl 7.88 (Debian 12) fails the
		 * second request on a reused HTTP/2 connection after a response with
		 * trailers ("Error in the HTTP2 framing layer"; seen against profd's
		 * and node's gRPC servers alike). One connect per interval is cheap.
		 */
		curl_easy_setopt(curl, CURLOPT_FORBID_REUSE, 1L);
		curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, export_on_header);
		curl_easy_setopt(curl, CURLOPT_HEADERDATA, &g);
	} else {
		hdrs = curl_slist_append(hdrs, "Content-Type: application/x-protobuf");
		hdrs = curl_slist_append(hdrs, "Content-Encoding: gzip");
	}
	hdrs = curl_slist_append(hdrs, "Expect:");
	if (x->auth_hdr)
		hdrs = curl_slist_append(hdrs, x->auth_hdr);
	if (x->dataset_hdr)
		hdrs = curl_slist_append(hdrs, x->dataset_hdr);
	curl_easy_setopt(curl, CURLOPT_URL, x->url);
	if (x->ca_file)
		curl_easy_setopt(curl, CURLOPT_CAINFO, x->ca_file);
	if (x->cert_file)
		curl_easy_setopt(curl, CURLOPT_SSLCERT, x->cert_file);
	if (x->key_file)
		curl_easy_setopt(curl, CURLOPT_SSLKEY, x->key_file);
	curl_easy_setopt(curl, CURLOPT_POST, 1L);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, r->data);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)r->len);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms > 0 ? timeout_ms : 1L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, PROF_MIN(timeout_ms, 5000L));
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "profd-agent");
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, export_on_reply);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &reply);
	curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, export_on_progress);
	curl_easy_setopt(curl, CURLOPT_XFERINFODATA, x);
	cc = curl_easy_perform(curl);
	if (cc == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(hdrs);

	if (cc != CURLE_OK) {
		log_warn("agent export failed url=%s seq=%" PRIu64
			 " bytes=%zu attempt=%d error=\"%s\"",
			 x->url, r->seq, r->len, r->attempts + 1, curl_easy_strerror(cc));
		ret = 1;
	} else if (x->grpc && status == 200 && g.status == 0) {
		log_debug("agent export ok seq=%" PRIu64 " bytes=%zu grpc-status=0", r->seq,
			  r->len);
		ret = 0;
	} else if (x->grpc) {
		/* No grpc-status at all (a proxy's error page, a cut stream): retry. */
		ret = g.status < 0 || export_grpc_retryable(g.status) ? 1 : -1;
		log_warn("agent export rejected url=%s seq=%" PRIu64
			 " bytes=%zu status=%ld grpc-status=%d action=%s message=\"%.200s\"",
			 x->url, r->seq, r->len, status, g.status, ret > 0 ? "retry" : "drop",
			 g.message);
	} else if (status >= 200 && status < 300) {
		log_debug("agent export ok seq=%" PRIu64 " bytes=%zu status=%ld", r->seq, r->len,
			  status);
		ret = 0;
	} else {
		/* Keep log lines one line and readable: cut the answer at its first
		 * newline, show other control and non-ASCII bytes (a protobuf
		 * Status, say) as '.'. */
		char *nl = reply.p ? memchr(reply.p, '\n', reply.len) : NULL;

		size_t shown = nl ? (size_t)(nl - reply.p) : reply.len;

		for (size_t i = 0; i < shown; i++)
			if ((unsigned char)reply.p[i] < 0x20 || (unsigned char)reply.p[i] >= 0x7f ||
			    reply.p[i] == '"')
				reply.p[i] = '.';
		if (nl)
			*nl = '\0';
		ret = (status >= 500 || status == 408 || status == 429) ? 1 : -1;
		log_warn("agent export rejected url=%s seq=%" PRIu64
			 " bytes=%zu status=%ld action=%s reply=\"%.200s\"",
			 x->url, r->seq, r->len, status, ret > 0 ? "retry" : "drop",
			 reply.p ? reply.p : "");
	}
	buf_release(&reply);
	return ret;
}

/*
 * Drop queued requests, oldest first, until @extra more bytes fit. The
 * request being sent (@inflight, at the head) is left alone; a dropped
 * entry keeps its slot with data == NULL and the sender skips it. Under mu.
 */
static void export_make_room(struct agent_export *x, size_t extra)
{
	for (size_t i = x->head + (x->inflight ? 1 : 0);
	     i < x->queue.n && x->st.queued_bytes + extra > x->o.max_queue_bytes; i++) {
		struct export_req *r = &x->queue.v[i];

		if (!r->data)
			continue;
		x->st.queued_bytes -= r->len;
		x->st.queued--;
		x->st.dropped++;
		x->st.dropped_full++;
		x->st.dropped_bytes += r->len;
		log_warn("agent export queue full: dropped request seq=%" PRIu64
			 " bytes=%zu max_queue_bytes=%zu",
			 r->seq, r->len, x->o.max_queue_bytes);
		export_req_free(r);
	}
}

/* Remove the head entry (sent, dropped or skipped). Under mu. */
static void export_pop(struct agent_export *x)
{
	struct export_req *r = &x->queue.v[x->head++];

	if (r->data) {
		x->st.queued_bytes -= r->len;
		x->st.queued--;
		export_req_free(r);
	}
	/* Reclaim the consumed front of the vector. */
	if (x->head == x->queue.n) {
		x->head = x->queue.n = 0;
	} else if (x->head >= 64 && x->head * 2 >= x->queue.n) {
		memmove(x->queue.v, x->queue.v + x->head,
			(x->queue.n - x->head) * sizeof(*x->queue.v));
		x->queue.n -= x->head;
		x->head = 0;
	}
}

/* A wait in [backoff/2, backoff] ms: jitter so agents do not retry in step. */
static long export_jitter(struct agent_export *x, long backoff)
{
	uint64_t r = x->rng;

	r ^= r << 13;
	r ^= r >> 7;
	r ^= r << 17;
	x->rng = r;
	return backoff / 2 + (long)(r % (uint64_t)(backoff / 2 + 1));
}

static void *export_thread(void *arg)
{
	struct agent_export *x = arg;
	long backoff = PROF_MIN(EXPORT_BACKOFF_MIN_MS, x->o.max_backoff_ms);
	CURL *curl = curl_easy_init();

	if (!curl)
		log_error("agent export: curl_easy_init failed; nothing will be sent");
	pthread_mutex_lock(&x->mu);
	for (;;) {
		struct export_req r;
		long timeout;
		int rc;

		while (x->head == x->queue.n && !x->stopping)
			pthread_cond_wait(&x->cv, &x->mu);
		if (x->head == x->queue.n)
			break; /* stopping and nothing left */
		r = x->queue.v[x->head];
		if (!r.data) {
			export_pop(x); /* dropped while queued */
			continue;
		}
		timeout = x->o.timeout_ms;
		if (x->stopping) {
			timeout = PROF_MIN(timeout, mono_ms_until(&x->drain_deadline));
			if (timeout <= 0 || r.tried_at_close) {
				/* Past the deadline, or already tried since closing began. */
				x->st.dropped++;
				x->st.dropped_bytes += r.len;
				log_warn("agent export giving up at exit seq=%" PRIu64 " bytes=%zu",
					 r.seq, r.len);
				export_pop(x);
				continue;
			}
		}
		x->inflight = true;
		pthread_mutex_unlock(&x->mu);
		rc = curl ? export_post(x, curl, &r, timeout) : 1;
		pthread_mutex_lock(&x->mu);
		x->inflight = false;

		/* Still at the head: while in flight nobody else removes it. */
		PROF_ASSERT(x->head < x->queue.n && x->queue.v[x->head].seq == r.seq);
		if (rc == 0) {
			x->st.sent++;
			x->st.bytes_sent += r.len;
			backoff = PROF_MIN(EXPORT_BACKOFF_MIN_MS, x->o.max_backoff_ms);
			export_pop(x);
			continue;
		}
		x->st.failures++;
		x->queue.v[x->head].attempts++;
		x->queue.v[x->head].tried_at_close = x->stopping;
		if (rc < 0) {
			x->st.dropped++; /* the server refused it for good */
			x->st.dropped_rejected++;
			x->st.dropped_bytes += r.len;
			export_pop(x);
		} else if (!x->stopping) {
			struct timespec until = mono_after_ms(export_jitter(x, backoff));

			backoff = PROF_MIN(backoff * 2, x->o.max_backoff_ms);
			while (!x->stopping && pthread_cond_timedwait(&x->cv, &x->mu, &until) == 0)
				;
		}
		/* else stopping: the next turn gives up on it (tried once since). */
	}
	pthread_mutex_unlock(&x->mu);
	if (curl)
		curl_easy_cleanup(curl);
	return NULL;
}

int agent_export_new(const struct agent_export_opts *opts, struct agent_export **out,
		     struct prof_err *err)
{
	struct agent_export *x;
	pthread_condattr_t ca;
	sigset_t all, old;
	int rc;

	*out = NULL;
	if (!opts || (!opts->server_url && !opts->dump_dir))
		return prof_err_set(err, -EINVAL, -1, "need a server URL or a dump directory");
	if (opts->server_url && strncmp(opts->server_url, "http://", 7) &&
	    strncmp(opts->server_url, "https://", 8) && strncmp(opts->server_url, "grpc://", 7) &&
	    strncmp(opts->server_url, "grpcs://", 8))
		return prof_err_set(
			err, -EINVAL, -1,
			"server URL '%s' must start with http://, https:// (OTLP/HTTP), "
			"grpc:// or grpcs:// (OTLP/gRPC)",
			opts->server_url);
	if ((opts->bearer_token && strpbrk(opts->bearer_token, "\r\n")) ||
	    (opts->dataset && strpbrk(opts->dataset, "\r\n")))
		return prof_err_set(
			err, -EINVAL, -1,
			"the bearer token and the dataset must not contain line breaks");
	if (opts->ca_file && access(opts->ca_file, R_OK))
		return prof_err_set(err, -errno, -1, "CA file '%s': %s", opts->ca_file,
				    strerror(errno));
	if (opts->key_file && !opts->cert_file)
		return prof_err_set(err, -EINVAL, -1, "a client key needs its certificate");
	if (opts->cert_file && access(opts->cert_file, R_OK))
		return prof_err_set(err, -errno, -1, "client certificate '%s': %s", opts->cert_file,
				    strerror(errno));
	if (opts->key_file && access(opts->key_file, R_OK))
		return prof_err_set(err, -errno, -1, "client key '%s': %s", opts->key_file,
				    strerror(errno));
	if (opts->server_url && (rc = prof_curl_load(err)))
		return rc;
	x = xcalloc(1, sizeof(*x));
	x->o = *opts;
	if (!x->o.max_queue_bytes)
		x->o.max_queue_bytes = EXPORT_DEFAULT_QUEUE;
	if (x->o.timeout_ms <= 0)
		x->o.timeout_ms = EXPORT_DEFAULT_TIMEOUT;
	if (x->o.max_backoff_ms <= 0)
		x->o.max_backoff_ms = EXPORT_BACKOFF_MAX_MS;
	x->st.max_queue_bytes = x->o.max_queue_bytes;
	x->o.bearer_token = x->o.dataset = x->o.ca_file = NULL; /* kept as the fields below */
	x->o.cert_file = x->o.key_file = NULL;
	if (opts->ca_file)
		x->ca_file = xstrdup(opts->ca_file);
	if (opts->cert_file)
		x->cert_file = xstrdup(opts->cert_file);
	if (opts->key_file)
		x->key_file = xstrdup(opts->key_file);
	if (opts->bearer_token && opts->bearer_token[0])
		x->auth_hdr = xasprintf("Authorization: Bearer %s", opts->bearer_token);
	if (opts->dataset && opts->dataset[0])
		x->dataset_hdr = xasprintf("X-Profd-Dataset: %s", opts->dataset);
	x->rng = (uint64_t)prof_now_ns() ^ ((uint64_t)getpid() << 32) ^ 0x9e3779b97f4a7c15ULL;
	if (!x->rng)
		x->rng = 1;
	pthread_mutex_init(&x->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&x->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (opts->server_url) {
		size_t n = strlen(opts->server_url);

		while (n > 0 && opts->server_url[n - 1] == '/')
			n--;
		if (!strncmp(opts->server_url, "grpc", 4)) {
			bool tls = opts->server_url[4] == 's';
			size_t skip = tls ? 8 : 7; /* "grpcs://" or "grpc://" */

			x->grpc = true;
			x->url =
				xasprintf("%s%.*s%s", tls ? "https://" : "http://", (int)(n - skip),
					  opts->server_url + skip, EXPORT_GRPC_PATH);
		} else {
			x->url = xasprintf("%.*s%s", (int)n, opts->server_url, EXPORT_PATH);
		}
		curl_global_init(CURL_GLOBAL_DEFAULT);
		/* Signals (SIGINT, SIGTERM) go to the sampling thread, not the sender. */
		sigfillset(&all);
		pthread_sigmask(SIG_BLOCK, &all, &old);
		rc = pthread_create(&x->thread, NULL, export_thread, x);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (rc) {
			agent_export_close(x, 0);
			return prof_err_set(err, -rc, -1, "starting the export thread: %s",
					    strerror(rc));
		}
		x->thread_started = true;
	}
	*out = x;
	return 0;
}

static void export_dump(struct agent_export *x, const struct buf *body, uint64_t seq)
{
	char path[4096];
	int rc;

	snprintf(path, sizeof(path), "%s/agent-%" PRId64 "-%06" PRIu64 ".otlp.pb", x->o.dump_dir,
		 prof_now_ns() / 1000000, seq);
	rc = buf_write_file(path, body->p, body->len);
	if (rc) {
		pthread_mutex_lock(&x->mu);
		x->st.dump_failures++;
		pthread_mutex_unlock(&x->mu);
		log_warn("agent dump failed path=%s error=\"%s\"", path, prof_strerror(rc));
	} else {
		log_debug("agent dump path=%s bytes=%zu", path, body->len);
	}
}

int agent_export_submit(struct agent_export *x, const struct model_profile *const *profiles,
			size_t n)
{
	struct buf body, gz;
	struct export_req r = { 0 };
	int rc;

	if (n == 0)
		return 0;
	buf_init(&body, EXPORT_MAX_REQUEST_BYTES);
	buf_init(&gz, EXPORT_MAX_REQUEST_BYTES);
	r.seq = ++x->seq;
	rc = fmt_otlp_encode(profiles, n, &body);
	if (rc) {
		log_error("agent export: encoding %zu profiles failed error=\"%s\"", n,
			  prof_strerror(rc));
		goto out;
	}
	if (x->o.dump_dir)
		export_dump(x, &body, r.seq);
	if (!x->url)
		goto out;
	rc = gzip_deflate(body.p, body.len, &gz);
	if (rc) {
		log_error("agent export: gzip failed error=\"%s\"", prof_strerror(rc));
		goto out;
	}
	r.data = buf_detach(&gz, &r.len);
	if (x->grpc) { /* one length-prefixed, compressed gRPC message */
		char *framed = xmalloc(r.len + EXPORT_GRPC_HDR);

		framed[0] = 1;
		framed[1] = (char)(r.len >> 24);
		framed[2] = (char)(r.len >> 16);
		framed[3] = (char)(r.len >> 8);
		framed[4] = (char)r.len;
		memcpy(framed + EXPORT_GRPC_HDR, r.data, r.len);
		free(r.data);
		r.data = framed;
		r.len += EXPORT_GRPC_HDR;
	}
	pthread_mutex_lock(&x->mu);
	x->st.requests++;
	if (r.len <= x->o.max_queue_bytes)
		export_make_room(x, r.len);
	if (x->st.queued_bytes + r.len > x->o.max_queue_bytes) {
		/* Larger than the bound, or the request being sent leaves no room. */
		x->st.dropped++;
		x->st.dropped_full++;
		x->st.dropped_bytes += r.len;
		log_warn("agent export: request seq=%" PRIu64 " bytes=%zu does not fit in "
			 "max_queue_bytes=%zu (%zu in flight); dropped",
			 r.seq, r.len, x->o.max_queue_bytes, x->st.queued_bytes);
		export_req_free(&r);
	} else {
		VEC_PUSH(&x->queue, r);
		x->st.queued_bytes += r.len;
		x->st.queued++;
		pthread_cond_signal(&x->cv);
	}
	pthread_mutex_unlock(&x->mu);
	log_debug("agent export queued seq=%" PRIu64 " profiles=%zu raw_bytes=%zu gzip_bytes=%zu",
		  r.seq, n, body.len, r.len);
out:
	buf_release(&body);
	buf_release(&gz);
	return rc;
}

void agent_export_get_stats(struct agent_export *x, struct agent_export_stats *st)
{
	pthread_mutex_lock(&x->mu);
	*st = x->st;
	pthread_mutex_unlock(&x->mu);
}

void agent_export_close(struct agent_export *x, long drain_ms)
{
	if (!x)
		return;
	pthread_mutex_lock(&x->mu);
	x->stopping = true;
	x->drain_deadline = mono_after_ms(drain_ms);
	pthread_cond_broadcast(&x->cv);
	pthread_mutex_unlock(&x->mu);
	if (x->thread_started)
		pthread_join(x->thread, NULL);
	if (x->url)
		log_info("agent export closed requests=%" PRIu64 " sent=%" PRIu64
			 " failures=%" PRIu64 " dropped=%" PRIu64 " bytes_sent=%" PRIu64,
			 x->st.requests, x->st.sent, x->st.failures, x->st.dropped,
			 x->st.bytes_sent);
	for (size_t i = x->head; i < x->queue.n; i++)
		export_req_free(&x->queue.v[i]);
	VEC_FREE(&x->queue);
	pthread_cond_destroy(&x->cv);
	pthread_mutex_destroy(&x->mu);
	if (x->url)
		curl_global_cleanup();
	free(x->url);
	if (x->auth_hdr) /* a secret: do not leave it in freed memory */
		explicit_bzero(x->auth_hdr, strlen(x->auth_hdr));
	free(x->auth_hdr);
	free(x->ca_file);
	free(x->cert_file);
	free(x->key_file);
	free(x->dataset_hdr);
	free(x);
}
