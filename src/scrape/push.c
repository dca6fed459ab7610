// SPDX-License-Identifier: Apache-2.0
/*
 * push.c - OTLP/HTTP sinks for scraped and watched profiles; see push.h.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/curl_dl.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/export.h"
#include "format/otlp.h"
#include "scrape/fetch.h"
#include "scrape/push.h"

#include <pthread.h>
#include <unistd.h>

#define PUSH_PATH	   "/v1development/profiles"
#define PUSH_MAX_REQUEST   ((size_t)256 << 20)
#define PUSH_MAX_REPLY	   4096
#define PUSH_ATTEMPTS	   4
#define PUSH_MAX_EXPORTERS 64

struct exporter {
	char *dataset; /* NULL = the default */
	struct agent_export *x;
};

struct scrape_push {
	struct scrape_push_opts o;
	char *base, *url, *token, *dataset;
	char *ca_file, *cert_file, *key_file;
	pthread_mutex_t lock;
	VEC(struct exporter) ex; /* async */
	uint64_t submitted, sent, failed;
};

int scrape_push_new(const struct scrape_push_opts *o, struct scrape_push **out,
		    struct prof_err *err)
{
	struct scrape_push *p;
	size_t n;
	int rc;

	*out = NULL;
	if (!o->url || (strncmp(o->url, "http://", 7) && strncmp(o->url, "https://", 8)))
		return prof_err_set(err, -EINVAL, -1,
				    "URL '%s' must start with http:// or https://",
				    o->url ? o->url : "");
	if ((o->token && strpbrk(o->token, "\r\n")) || (o->dataset && strpbrk(o->dataset, "\r\n")))
		return prof_err_set(err, -EINVAL, -1,
				    "the token and the dataset must not contain line breaks");
	if (o->key_file && !o->cert_file)
		return prof_err_set(err, -EINVAL, -1, "a client key needs its certificate");
	const char *const files[] = { o->ca_file, o->cert_file, o->key_file };

	for (size_t i = 0; i < PROF_ARRAY_SIZE(files); i++)
		if (files[i] && access(files[i], R_OK))
			return prof_err_set(err, -errno, -1, "%s '%s': %s",
					    i == 0   ? "CA file"
					    : i == 1 ? "client certificate"
						     : "client key",
					    files[i], strerror(errno));
	rc = scrape_fetch_init(err);
	if (rc)
		return rc;
	p = xcalloc(1, sizeof(*p));
	p->o = *o;
	n = strlen(o->url);
	while (n && o->url[n - 1] == '/')
		n--;
	p->base = xstrndup(o->url, n);
	p->url = xasprintf("%s%s", p->base, PUSH_PATH);
	p->token = o->token ? xstrdup(o->token) : NULL;
	p->dataset = o->dataset ? xstrdup(o->dataset) : NULL;
	p->ca_file = o->ca_file ? xstrdup(o->ca_file) : NULL;
	p->cert_file = o->cert_file ? xstrdup(o->cert_file) : NULL;
	p->key_file = o->key_file ? xstrdup(o->key_file) : NULL;
	p->o.url = p->o.token = p->o.dataset = NULL;
	p->o.ca_file = p->o.cert_file = p->o.key_file = NULL;
	if (p->o.timeout_ms <= 0)
		p->o.timeout_ms = 10000;
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return 0;
}

/* The exporter for @dataset, created on first use. Under p->lock. */
static struct agent_export *exporter_for(struct scrape_push *p, const char *dataset,
					 struct prof_err *err)
{
	struct agent_export_opts eo = { 0 };
	struct exporter e;

	if (!dataset)
		dataset = p->dataset;
	for (size_t i = 0; i < p->ex.n; i++)
		if ((!dataset && !p->ex.v[i].dataset) ||
		    (dataset && p->ex.v[i].dataset && !strcmp(dataset, p->ex.v[i].dataset)))
			return p->ex.v[i].x;
	if (p->ex.n >= PUSH_MAX_EXPORTERS) {
		prof_err_set(err, -PROF_ETOOBIG, -1, "more than %d datasets", PUSH_MAX_EXPORTERS);
		return NULL;
	}
	eo.server_url = p->base;
	eo.bearer_token = p->token;
	eo.dataset = dataset;
	eo.timeout_ms = p->o.timeout_ms;
	eo.max_queue_bytes = p->o.max_queue_bytes;
	eo.ca_file = p->ca_file;
	eo.cert_file = p->cert_file;
	eo.key_file = p->key_file;
	if (agent_export_new(&eo, &e.x, err))
		return NULL;
	e.dataset = dataset ? xstrdup(dataset) : NULL;
	VEC_PUSH(&p->ex, e);
	return e.x;
}

static int submit_async(struct scrape_push *p, const char *dataset, struct model_profile *const *pr,
			size_t n, struct prof_err *err)
{
	struct agent_export *x;
	int rc;

	pthread_mutex_lock(&p->lock);
	x = exporter_for(p, dataset, err);
	rc = x ? agent_export_submit(x, (const struct model_profile *const *)pr, n) : -EINVAL;
	if (!rc)
		p->submitted += n;
	pthread_mutex_unlock(&p->lock);
	if (rc && x)
		prof_err_set(err, rc, -1, "cannot queue for %s: %s", p->url, prof_strerror(rc));
	return rc;
}

static size_t on_reply(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct buf *b = ud;
	size_t n = size * nmemb;

	(void)buf_add(b, ptr, PROF_MIN(n, b->max > b->len ? b->max - b->len : 0));
	return n;
}

/* One POST; 0 on 2xx, 1 on a transient failure, <0 on a permanent one. */
static int post_once(struct scrape_push *p, const char *dataset, const struct buf *gz,
		     struct prof_err *err)
{
	CURL *c = curl_easy_init();
	struct curl_slist *h = NULL;
	struct buf reply;
	char *auth = NULL, *ds = NULL;
	long status = 0;
	CURLcode cc;
	int rc;

	if (!c)
		return prof_err_set(err, -ENOMEM, -1, "curl_easy_init failed");
	buf_init(&reply, PUSH_MAX_REPLY);
	h = curl_slist_append(h, "Content-Type: application/x-protobuf");
	h = curl_slist_append(h, "Content-Encoding: gzip");
	h = curl_slist_append(h, "Expect:");
	if (p->token) {
		auth = xasprintf("Authorization: Bearer %s", p->token);
		h = curl_slist_append(h, auth);
	}
	if (dataset) {
		ds = xasprintf("X-Profd-Dataset: %s", dataset);
		h = curl_slist_append(h, ds);
	}
	curl_easy_setopt(c, CURLOPT_URL, p->url);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, gz->p);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)gz->len);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, p->o.timeout_ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, PROF_MIN(p->o.timeout_ms, 5000L));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_USERAGENT, "profd-scrape");
	if (p->ca_file)
		curl_easy_setopt(c, CURLOPT_CAINFO, p->ca_file);
	if (p->cert_file)
		curl_easy_setopt(c, CURLOPT_SSLCERT, p->cert_file);
	if (p->key_file)
		curl_easy_setopt(c, CURLOPT_SSLKEY, p->key_file);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_reply);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
	cc = curl_easy_perform(c);
	if (cc == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	if (auth) {
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	free(ds);
	if (cc != CURLE_OK) {
		prof_err_set(err, -EIO, -1, "POST %s: %s", p->url, curl_easy_strerror(cc));
		rc = 1;
	} else if (status >= 200 && status < 300) {
		rc = 0;
	} else {
		for (size_t i = 0; i < reply.len; i++)
			if ((unsigned char)reply.p[i] < 0x20)
				reply.p[i] = ' ';
		prof_err_set(err, -EPROTO, -1, "POST %s: HTTP %ld: %.200s", p->url, status,
			     reply.p ? reply.p : "");
		rc = (status == 408 || status == 429 || status >= 500) ? 1 : -EPROTO;
	}
	buf_release(&reply);
	return rc;
}

static int submit_sync(struct scrape_push *p, const char *dataset, struct model_profile *const *pr,
		       size_t n, struct prof_err *err)
{
	struct buf body, gz;
	long wait_ms = 500;
	int rc;

	buf_init(&body, PUSH_MAX_REQUEST);
	buf_init(&gz, PUSH_MAX_REQUEST);
	rc = fmt_otlp_encode((const struct model_profile *const *)pr, n, &body);
	if (!rc)
		rc = gzip_deflate(body.p, body.len, &gz);
	buf_release(&body);
	if (rc) {
		buf_release(&gz);
		return prof_err_set(err, rc, -1, "encoding OTLP: %s", prof_strerror(rc));
	}
	for (int attempt = 0; attempt < PUSH_ATTEMPTS; attempt++) {
		struct prof_err e1;

		prof_err_init(&e1);
		rc = post_once(p, dataset ? dataset : p->dataset, &gz, &e1);
		if (rc <= 0) {
			if (rc)
				prof_err_set(err, rc, -1, "%s", e1.msg);
			break;
		}
		if (attempt + 1 == PUSH_ATTEMPTS) {
			rc = prof_err_set(err, -EIO, -1, "%s (after %d attempts)", e1.msg,
					  PUSH_ATTEMPTS);
			break;
		}
		log_debug("scrape push: %s; retrying in %ld ms", e1.msg, wait_ms);
		struct timespec ts = { wait_ms / 1000, (wait_ms % 1000) * 1000000 };

		nanosleep(&ts, NULL);
		wait_ms *= 2;
	}
	buf_release(&gz);
	pthread_mutex_lock(&p->lock);
	p->submitted += n;
	if (rc)
		p->failed++;
	else
		p->sent++;
	pthread_mutex_unlock(&p->lock);
	return rc;
}

static int push_submit(void *arg, const char *dataset, struct model_profile *const *pr, size_t n,
		       struct prof_err *err)
{
	struct scrape_push *p = arg;

	return p->o.async ? submit_async(p, dataset, pr, n, err)
			  : submit_sync(p, dataset, pr, n, err);
}

void scrape_push_sink(struct scrape_push *p, struct scrape_sink *out)
{
	out->submit = push_submit;
	out->arg = p;
}

void scrape_push_get_stats(struct scrape_push *p, struct scrape_push_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&p->lock);
	st->submitted = p->submitted;
	st->sent = p->sent;
	st->failed = p->failed;
	for (size_t i = 0; i < p->ex.n; i++) {
		struct agent_export_stats es;

		agent_export_get_stats(p->ex.v[i].x, &es);
		st->sent += es.sent;
		st->failed += es.failures;
		st->dropped += es.dropped;
		st->queued += es.queued;
	}
	pthread_mutex_unlock(&p->lock);
}

void scrape_push_free(struct scrape_push *p, long drain_ms)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->ex.n; i++) {
		agent_export_close(p->ex.v[i].x, drain_ms);
		free(p->ex.v[i].dataset);
	}
	VEC_FREE(&p->ex);
	free(p->base);
	free(p->url);
	if (p->token) {
		explicit_bzero(p->token, strlen(p->token));
		free(p->token);
	}
	free(p->dataset);
	free(p->ca_file);
	free(p->cert_file);
	free(p->key_file);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
