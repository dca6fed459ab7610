// SPDX-License-Identifier: Apache-2.0
/*
 * curl_backend.c - the query API over HTTP with libcurl; see
 * curl_backend.h.
 */
#include "base/compat.h"
#include "base/curl_dl.h"
#include "base/mem.h"
#include "mcp/curl_backend.h"

#include <unistd.h>

struct mcp_curl {
	CURL *h;
	char *base;
	struct curl_slist *headers;
};

struct sink {
	struct buf *b;
	bool too_big;
};

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct sink *s = arg;

	if (buf_add(s->b, p, size * n)) {
		s->too_big = true;
		return 0;
	}
	return size * n;
}

static int curl_get(void *ctx, const char *path_and_query, struct buf *out, int *status)
{
	struct mcp_curl *c = ctx;
	struct sink s = { out, false };
	char msg[CURL_ERROR_SIZE] = "";
	long code = 0;
	CURLcode cc;
	char *url = xasprintf("%s%s", c->base, path_and_query);

	*status = 0;
	curl_easy_setopt(c->h, CURLOPT_URL, url);
	curl_easy_setopt(c->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c->h, CURLOPT_WRITEDATA, &s);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, msg);
	cc = curl_easy_perform(c->h);
	curl_easy_setopt(c->h, CURLOPT_ERRORBUFFER, NULL);
	free(url);
	if (cc == CURLE_WRITE_ERROR && s.too_big)
		return -PROF_ETOOBIG;
	if (cc != CURLE_OK) {
		buf_reset(out);
		(void)buf_addstr(out, msg[0] ? msg : curl_easy_strerror(cc));
		return cc == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -ECONNREFUSED;
	}
	curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &code);
	*status = (int)code;
	return 0;
}

/* The TLS files exist and are readable: else every call fails the same way later. */
static int tls_check(const struct mcp_curl_tls *t, struct prof_err *err)
{
	const char *const f[][2] = { { "--ca-file", t->ca_file },
				     { "--cert-file", t->cert_file },
				     { "--key-file", t->key_file } };

	if (t->key_file && !t->cert_file)
		return prof_err_set(err, -EINVAL, -1, "--key-file needs --cert-file");
	for (size_t i = 0; i < PROF_ARRAY_SIZE(f); i++)
		if (f[i][1] && access(f[i][1], R_OK))
			return prof_err_set(err, -errno, -1, "%s '%s': %s", f[i][0], f[i][1],
					    strerror(errno));
	return 0;
}

int mcp_curl_new(const char *url, const char *token, const char *dataset,
		 const struct mcp_curl_tls *tls, struct mcp_curl **out, struct mcp_backend *be,
		 struct prof_err *err)
{
	struct mcp_curl *c;
	size_t n;
	int rc;

	*out = NULL;
	if (strncmp(url, "http://", 7) && strncmp(url, "https://", 8))
		return prof_err_set(err, -EINVAL, -1,
				    "--server '%s': expected an http:// or https:// URL", url);
	if (tls && (rc = tls_check(tls, err)))
		return rc;
	rc = prof_curl_load(err);
	if (rc)
		return rc;
	c = xcalloc(1, sizeof(*c));
	c->base = xstrdup(url);
	n = strlen(c->base);
	while (n && c->base[n - 1] == '/')
		c->base[--n] = '\0';
	c->h = curl_easy_init();
	if (!c->h) {
		mcp_curl_free(c);
		return prof_err_set(err, -ENOMEM, -1, "curl_easy_init failed");
	}
	c->headers = curl_slist_append(c->headers, "Accept: application/json");
	if (token && *token) {
		char *h = xasprintf("Authorization: Bearer %s", token);

		c->headers = curl_slist_append(c->headers, h);
		free(h);
	}
	if (dataset && *dataset) {
		char *h = xasprintf("X-Profd-Dataset: %s", dataset);

		c->headers = curl_slist_append(c->headers, h);
		free(h);
	}
	curl_easy_setopt(c->h, CURLOPT_HTTPHEADER, c->headers);
	curl_easy_setopt(c->h, CURLOPT_HTTPGET, 1L);
	curl_easy_setopt(c->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c->h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
	curl_easy_setopt(c->h, CURLOPT_TIMEOUT_MS, 120000L);
	curl_easy_setopt(c->h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c->h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c->h, CURLOPT_USERAGENT, "profd-mcp");
	curl_easy_setopt(c->h, CURLOPT_ACCEPT_ENCODING, "");
	/* libcurl copies string options: the paths need not outlive this call. */
	if (tls && tls->ca_file)
		curl_easy_setopt(c->h, CURLOPT_CAINFO, tls->ca_file);
	if (tls && tls->cert_file)
		curl_easy_setopt(c->h, CURLOPT_SSLCERT, tls->cert_file);
	if (tls && tls->key_file)
		curl_easy_setopt(c->h, CURLOPT_SSLKEY, tls->key_file);
	be->get = curl_get;
	be->ctx = c;
	be->base_url = c->base;
	*out = c;
	return 0;
}

void mcp_curl_free(struct mcp_curl *c)
{
	if (!c)
		return;
	if (c->h)
		curl_easy_cleanup(c->h);
	curl_slist_free_all(c->headers);
	free(c->base);
	free(c);
}
