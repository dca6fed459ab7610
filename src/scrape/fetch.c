// SPDX-License-Identifier: Apache-2.0
/*
 * fetch.c - bounded HTTP GET with libcurl; see fetch.h.
 */
#include "base/compat.h"
#include "base/curl_dl.h"
#include "base/mem.h"
#include "scrape/fetch.h"

#include <pthread.h>

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
static int init_rc;
static struct prof_err init_err;

static void init(void)
{
	prof_err_init(&init_err);
	init_rc = prof_curl_load(&init_err);
	if (!init_rc && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		init_rc = prof_err_set(&init_err, -PROF_EUNSUPPORTED, -1,
				       "libcurl: global initialisation failed");
}

int scrape_fetch_init(struct prof_err *err)
{
	pthread_once(&init_once, init);
	if (init_rc)
		return prof_err_set(err, init_rc, -1, "%s", init_err.msg);
	return 0;
}

void *scrape_fetch_handle_new(void)
{
	if (scrape_fetch_init(NULL))
		return NULL;
	return curl_easy_init();
}

void scrape_fetch_handle_free(void *h)
{
	if (h)
		curl_easy_cleanup(h);
}

struct sink {
	struct buf *body;
	bool too_big;
	void *h;
	const struct scrape_fetch_opts *o;
	int stream_rc; /* what o->on_data returned to abort */
};

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct sink *s = ud;
	size_t n = size * nmemb;

	if (s->o->on_data) {
		long code = 0;

		curl_easy_getinfo(s->h, CURLINFO_RESPONSE_CODE, &code);
		if (code == 200) {
			s->stream_rc = s->o->on_data(s->o->on_data_arg, ptr, n);
			return s->stream_rc ? 0 : n;
		}
	}
	if (buf_add(s->body, ptr, n)) {
		s->too_big = true;
		return 0; /* aborts with CURLE_WRITE_ERROR */
	}
	return n;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	const bool *stop = ud;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return stop && __atomic_load_n(stop, __ATOMIC_ACQUIRE) ? 1 : 0;
}

/* The first bytes of a body for a message, control bytes as '.'. */
static void snippet(const struct buf *b, char *out, size_t outsz)
{
	size_t n = PROF_MIN(b->len, outsz - 1), j = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)b->p[i];

		if (c == '\n' || c == '\r' || c == '\t')
			c = ' ';
		out[j++] = (c < 0x20 || c == 0x7f || c == '"' || c == '\\') ? '.' : (char)c;
	}
	while (j && out[j - 1] == ' ')
		j--;
	out[j] = '\0';
}

/* Set a blob option from memory (copied by libcurl); true when libcurl refused it. */
static bool set_blob(void *h, CURLoption opt, const char *p, size_t n)
{
	struct curl_blob b = { (void *)p, n, CURL_BLOB_COPY };

	return p && curl_easy_setopt(h, opt, &b) != CURLE_OK;
}

int scrape_fetch(void *h, const char *url, const struct scrape_fetch_opts *o, struct buf *body,
		 long *status, struct prof_err *err)
{
	struct sink s = { body, false, h, o, 0 };
	struct curl_slist *hdrs = NULL;
	long code = 0;
	CURLcode cc;
	char msg[CURL_ERROR_SIZE] = "";

	if (status)
		*status = 0;
	if (!h)
		return prof_err_set(err, -EIO, -1, "no HTTP client (libcurl did not load)");
	buf_reset(body);
	body->max = o->max_body;
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, o->timeout_ms > 0 ? o->timeout_ms : 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS,
			 PROF_MIN(o->timeout_ms > 0 ? o->timeout_ms : 1L, 10000L));
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	/* A stream (a watch) has no total size; @max_body then bounds an error body only. */
	curl_easy_setopt(h, CURLOPT_MAXFILESIZE_LARGE, o->on_data ? 0 : (curl_off_t)o->max_body);
	/* A watch idles for minutes: keepalive finds a peer that vanished. */
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, o->on_data ? 1L : 0L);
	curl_easy_setopt(h, CURLOPT_USERAGENT, "profd-scrape");
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(h, CURLOPT_XFERINFODATA, (void *)o->stop);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, msg);
	if (o->bearer) {
		char *auth = xasprintf("Authorization: Bearer %s", o->bearer);

		hdrs = curl_slist_append(NULL, auth);
		memset(auth, 0, strlen(auth));
		free(auth);
	}
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	if (o->tls) { /* a handle always sees the same options: set once is enough */
		if (o->tls->ca_file)
			curl_easy_setopt(h, CURLOPT_CAINFO, o->tls->ca_file);
		if (o->tls->cert_file)
			curl_easy_setopt(h, CURLOPT_SSLCERT, o->tls->cert_file);
		if (o->tls->key_file)
			curl_easy_setopt(h, CURLOPT_SSLKEY, o->tls->key_file);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, o->tls->insecure_skip_verify ? 0L : 1L);
		curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, o->tls->insecure_skip_verify ? 0L : 2L);
	}
	if (o->pem && (set_blob(h, CURLOPT_CAINFO_BLOB, o->pem->ca, o->pem->ca_len) ||
		       set_blob(h, CURLOPT_SSLCERT_BLOB, o->pem->cert, o->pem->cert_len) ||
		       set_blob(h, CURLOPT_SSLKEY_BLOB, o->pem->key, o->pem->key_len))) {
		curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
		curl_slist_free_all(hdrs);
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1,
				    "this libcurl cannot take certificates from memory (a "
				    "kubeconfig's *-data needs libcurl 7.77 or later)");
	}
	cc = curl_easy_perform(h);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hdrs);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
	if (status)
		*status = code;
	if (cc != CURLE_OK) {
		const char *why = msg[0] ? msg : curl_easy_strerror(cc);

		switch (cc) {
		case CURLE_OPERATION_TIMEDOUT:
			return prof_err_set(err, -ETIMEDOUT, -1, "timeout after %.1f s (%s)",
					    (double)o->timeout_ms / 1000.0, why);
		case CURLE_FILESIZE_EXCEEDED:
			return prof_err_set(
				err, -PROF_ETOOBIG, -1,
				"body exceeds body_size_limit (%zu bytes; Content-Length "
				"says more)",
				o->max_body);
		case CURLE_WRITE_ERROR:
			if (s.stream_rc)
				return prof_err_set(err, s.stream_rc, -1, "stopped by the reader");
			if (s.too_big)
				return prof_err_set(err, -PROF_ETOOBIG, -1,
						    "body exceeds body_size_limit (%zu bytes)",
						    o->max_body);
			break;
		case CURLE_ABORTED_BY_CALLBACK:
			return prof_err_set(err, -ECANCELED, -1, "stopped");
		case CURLE_COULDNT_CONNECT:
			return prof_err_set(err, -ECONNREFUSED, -1, "connect: %s", why);
		case CURLE_COULDNT_RESOLVE_HOST:
			return prof_err_set(err, -EHOSTUNREACH, -1, "resolve: %s", why);
		default:
			break;
		}
		return prof_err_set(err, -EIO, -1, "%s", why);
	}
	if (code != 200) {
		char snip[201];

		snippet(body, snip, sizeof(snip));
		return prof_err_set(err, -EPROTO, -1, "HTTP %ld%s%s", code, snip[0] ? ": " : "",
				    snip);
	}
	return 0;
}
