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
 * mcp_curl_new() - a backend for the server at @url ("http://host:4040",
 * a trailing '/' is dropped), with @token and @dataset (each may be NULL).
 * The strings are copied. Errors: -EINVAL for a URL that is not http(s),
 * -PROF_EUNSUPPORTED when libcurl cannot be loaded; @err says why.
 * Fills @be (its ctx is the new object). Free with mcp_curl_free.
 */
int mcp_curl_new(const char *url, const char *token, const char *dataset, struct mcp_curl **out,
		 struct mcp_backend *be, struct prof_err *err);

/** mcp_curl_free() - free @c; NULL ok. */
void mcp_curl_free(struct mcp_curl *c);

#endif
