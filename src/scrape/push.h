/* SPDX-License-Identifier: Apache-2.0 */
/*
 * push.h - sinks (scrape.h struct scrape_sink) that send profiles to
 * another collector as OTLP/HTTP (POST URL/v1development/profiles,
 * protobuf ExportProfilesServiceRequest, gzip; docs/formats.md "OTLP transport"):
 * a profd server or any OTLP profiles receiver. Nothing is stored here.
 *
 * Two modes:
 *   - async (the forwarder, `profd scrape --forward`): each submit is
 *     encoded and queued in an agent exporter (agent/export.h: bounded
 *     queue, oldest dropped when full, retries with backoff for
 *     transient failures), one exporter per dataset (X-Profd-Dataset);
 *     submit returns once queued, so a slow collector never stalls
 *     scraping;
 *   - sync (file mode): submit posts and waits for the answer, retrying
 *     transient failures (connection errors, 408, 429, 5xx) up to three
 *     times (0.5 s, 1 s, 2 s apart), so the caller records a file as
 *     ingested only once the receiver acknowledged it.
 * Both are thread-safe.
 */
#ifndef PROF_SCRAPE_PUSH_H
#define PROF_SCRAPE_PUSH_H

#include "base/compat.h"
#include "base/err.h"
#include "scrape/scrape.h"

struct scrape_push_opts {
	const char *url;	/* base URL, http:// or https:// */
	const char *token;	/* bearer token or NULL */
	const char *dataset;	/* X-Profd-Dataset for profiles without a dataset, or NULL */
	long timeout_ms;	/* per request (0 = 10000) */
	size_t max_queue_bytes; /* async: per exporter (0 = 32 MiB) */
	bool async;
	/* TLS to an https:// receiver, PEM files or NULL: the CAs that sign
	 * its certificate (NULL = the system's), a client certificate and key
	 * for one that asks (NULL key = in the certificate's file). */
	const char *ca_file, *cert_file, *key_file;
};

/** struct scrape_push_stats - totals since _new. */
struct scrape_push_stats {
	uint64_t submitted; /* profiles handed to submit */
	uint64_t sent;	    /* requests acknowledged (async: by the exporters) */
	uint64_t failed;    /* sync: submits that failed; async: failed attempts */
	uint64_t dropped;   /* async: requests given up */
	uint64_t queued;    /* async: requests waiting now */
};

struct scrape_push;

/**
 * scrape_push_new() - a pusher to o->url (the strings of @o are copied).
 * Errors: -EINVAL for a URL that is not http(s)://, a token/dataset with
 * a line break, a key file without a certificate; -errno for a TLS file
 * that cannot be read;
 * -PROF_EUNSUPPORTED without libcurl; @err says which.
 */
int scrape_push_new(const struct scrape_push_opts *o, struct scrape_push **out,
		    struct prof_err *err);

/** scrape_push_sink() - @p as a sink (lent: @p must outlive its users). */
void scrape_push_sink(struct scrape_push *p, struct scrape_sink *out);

/** scrape_push_get_stats() - a snapshot. Thread-safe. */
void scrape_push_get_stats(struct scrape_push *p, struct scrape_push_stats *st);

/**
 * scrape_push_free() - async: send what is queued within @drain_ms, then
 * stop; free. NULL ok.
 */
void scrape_push_free(struct scrape_push *p, long drain_ms);

#endif
