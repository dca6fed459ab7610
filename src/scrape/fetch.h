/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fetch.h - one bounded HTTP GET of a profile endpoint (libcurl, loaded
 * with dlopen: base/curl_dl.h).
 *
 * Bounds, so a bad target costs little and never blocks the others:
 *   - time: the whole request (connect, wait, body) within @timeout_ms;
 *   - size: a Content-Length above @max_body is refused before the body
 *     is read; a body (chunked or lying) that grows past it is cut off
 *     there: memory per fetch is at most @max_body;
 *   - cancellation: when *@stop becomes true the transfer is aborted
 *     within about a second (libcurl's progress callback), so a target
 *     removed from discovery or a server shutting down never waits for
 *     a hung peer's timeout;
 *   - redirects are not followed, only http and https are spoken.
 * Errors carry the reason the target's health shows:
 *   "connect: Connection refused", "timeout after 5.0 s (scrape_timeout)",
 *   "HTTP 500: <first 200 bytes of the body, control bytes escaped>",
 *   "body exceeds body_size_limit (1048576 bytes)".
 */
#ifndef PROF_SCRAPE_FETCH_H
#define PROF_SCRAPE_FETCH_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "scrape/config.h"

/** struct scrape_fetch_pem - PEM held in memory (a kubeconfig's *-data); NULL members = none. */
struct scrape_fetch_pem {
	const char *ca, *cert, *key;
	size_t ca_len, cert_len, key_len;
};

struct scrape_fetch_opts {
	long timeout_ms;
	size_t max_body;
	const bool *stop; /* read atomically; may be NULL */
	/* Optional, for API servers (k8s.h); zero for profile endpoints: */
	const char *bearer;		    /* "Authorization: Bearer <bearer>"; NULL = none */
	const struct scrape_tls_conf *tls;  /* CA, client certificate; NULL = system CAs */
	const struct scrape_fetch_pem *pem; /* the same from memory, over @tls; NULL = none */
	/*
	 * Streaming: a 200 body goes to @on_data piece by piece instead of
	 * into @body (which then only holds an error answer's body). A
	 * non-zero return aborts the transfer: scrape_fetch returns it.
	 */
	int (*on_data)(void *arg, const char *p, size_t n);
	void *on_data_arg;
};

/**
 * scrape_fetch_init() - load libcurl and initialise it once for the
 * process. 0 or -PROF_EUNSUPPORTED (libcurl missing) with @err.
 * Thread-safe.
 */
int scrape_fetch_init(struct prof_err *err);

/** scrape_fetch_handle_new() - a reusable connection handle (CURL *); NULL on failure. */
void *scrape_fetch_handle_new(void);
/** scrape_fetch_handle_free() - NULL ok. */
void scrape_fetch_handle_free(void *h);

/**
 * scrape_fetch() - GET @url with handle @h into @body (reset first; its
 * cap is replaced by o->max_body). 0 for a 200 answer. Errors, each with
 * @err as above: -ETIMEDOUT, -PROF_ETOOBIG, -ECANCELED (stopped),
 * -ECONNREFUSED / -EHOSTUNREACH / -EIO for transport failures, -EPROTO
 * for a status other than 200; -PROF_EUNSUPPORTED when @o->pem is given
 * and libcurl is older than 7.77 (no certificates from memory). @status (may be NULL) gets the HTTP status
 * or 0. @h is used by one thread at a time.
 */
int scrape_fetch(void *h, const char *url, const struct scrape_fetch_opts *o, struct buf *body,
		 long *status, struct prof_err *err);

#endif
