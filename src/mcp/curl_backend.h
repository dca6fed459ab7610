/* SPDX-License-Identifier: Apache-2.0 */
/*
 * curl_backend.h - the MCP backend of `profd mcp --server URL`: GET
 * requests to a running profd server's query API with libcurl (loaded
 * with dlopen, base/curl_dl.h), sending the token as "Authorization:
 * Bearer" and the dataset as X-Profd-Dataset (docs/ingest.md).
 *
 * Limits: 5 s to connect, 120 s per request, answers capped by the
 * caller's buffer (MCP_MAX_ANSWER); http and https only, no redirects.
 */
#ifndef PROF_MCP_CURL_BACKEND_H
#define PROF_MCP_CURL_BACKEND_H

#include "base/compat.h"
#include "base/err.h"
#include "mcp/backend.h"

struct mcp_curl;

/**
 * struct mcp_curl_tls - TLS to an https:// server, PEM file paths or NULL:
 * @ca_file the CA certificates that sign its certificate (NULL = the
 * system's store), @cert_file and @key_file a client certificate and its
 * key for a server that asks for one (profd server --tls-client-ca; a
 * NULL @key_file = the key is in @cert_file).
 */
struct mcp_curl_tls {
	const char *ca_file, *cert_file, *key_file;
};

/**
 * mcp_curl_new() - a backend for the server at @url ("http://host:4040",
 * a trailing '/' is dropped), with @token and @dataset (each may be NULL)
 * and @tls (NULL = no TLS files). The strings are copied. Errors: -EINVAL
 * for a URL that is not http(s) or a key without a certificate, -errno
 * for a TLS file that cannot be read, -PROF_EUNSUPPORTED when libcurl
 * cannot be loaded; @err says why. Fills @be (its ctx is the new
 * object). Free with mcp_curl_free.
 */
int mcp_curl_new(const char *url, const char *token, const char *dataset,
		 const struct mcp_curl_tls *tls, struct mcp_curl **out, struct mcp_backend *be,
		 struct prof_err *err);

/** mcp_curl_free() - free @c; NULL ok. */
void mcp_curl_free(struct mcp_curl *c);

#endif
