/* SPDX-License-Identifier: Apache-2.0 */
/*
 * scrape.h - the scrape manager: discovers targets (static_configs,
 * file_sd_configs, kubernetes_sd_configs (k8s.h), relabel_configs;
 * config.h), scrapes each target's
 * profile endpoints on its job's interval, shapes the profiles (delta.h)
 * and hands them to a sink: the server's ingest path (server mode), an
 * OTLP exporter (`profd scrape --forward`), or a test.
 *
 * Threads: one manager thread re-reads target files (it polls their
 * mtime, size and inode every second, and re-reads each at least every
 * refresh_interval), checks every second whether a Kubernetes watcher
 * (k8s.h, its own threads) changed its objects, and starts or stops
 * targets when the set changes;
 * one thread per target scrapes its endpoints one after the other, so a
 * hung, slow or huge target only ever delays itself (each request is
 * bounded in time and size, fetch.h). A target's first round starts at an
 * offset within its interval derived from its identity, spreading load as
 * Prometheus does; a round that overruns its interval starts the next one
 * at once (no catch-up burst). Within a round the CPU profile comes last
 * (?seconds=N, config.h), so it covers most of the interval.
 *
 * Series labels: each stored profile carries the target's labels after
 * relabeling, minus the "__" ones, as profile attributes: `job`,
 * `instance` (= __address__ unless relabeled) and the static/file labels.
 *
 * Health (scrape_mgr_targets_json, GET /api/v1/targets): per target up /
 * down / unknown (not scraped yet), the last error ("heap: HTTP 500:
 * ..."), last scrape time and duration (of the whole last round, the
 * CPU profile's seconds included), and the same per endpoint; a target is
 * up when the last attempt of every endpoint succeeded.
 * Shaped after Prometheus' /api/v1/targets.
 */
#ifndef PROF_SCRAPE_SCRAPE_H
#define PROF_SCRAPE_SCRAPE_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"
#include "scrape/config.h"

/**
 * struct scrape_sink - where scraped profiles go. @submit stores or sends
 * @n profiles (lent for the call; it may modify them, e.g. signal
 * control) for dataset @dataset (NULL = the default) and returns 0 once
 * they are accepted (durable, or queued by a forwarder), or a negative
 * code with @err saying why (the baseline of a delta is then kept, so
 * the next scrape's delta covers this one too). Called from several
 * target threads at once: it must be thread-safe.
 */
struct scrape_sink {
	int (*submit)(void *arg, const char *dataset, struct model_profile *const *p, size_t n,
		      struct prof_err *err);
	void *arg;
};

/** struct scrape_stats - totals since start. */
struct scrape_stats {
	uint64_t targets, targets_up, targets_down;
	uint64_t scrapes, failures, profiles_stored, samples_stored, bytes_fetched;
};

struct scrape_mgr;

/* flags of scrape_mgr_new */
#define SCRAPE_ONCE 1u /* one round per target at once, target files read once */

/**
 * scrape_mgr_new() - start scraping the jobs of @c (lent: it must outlive
 * the manager) into @sink (copied). Loads libcurl. Errors: -PROF_EUNSUPPORTED
 * without libcurl, -errno when a thread cannot start; @err says which.
 * Target files that cannot be read yet are not errors (they are retried).
 * With SCRAPE_ONCE (`profd scrape --once`) every target scrapes each
 * endpoint once, right away (cumulative endpoints then only prime and
 * store nothing); scrape_mgr_wait waits for that.
 */
int scrape_mgr_new(const struct scrape_config *c, const struct scrape_sink *sink, unsigned flags,
		   struct scrape_mgr **out, struct prof_err *err);

/** scrape_mgr_wait() - SCRAPE_ONCE: wait until every target finished its round. */
void scrape_mgr_wait(struct scrape_mgr *m);

/**
 * scrape_mgr_targets_json() - append the health of every target as JSON to
 * @out: {"status":"success","data":{"activeTargets":[...],
 * "droppedTargets":[...]}} (Prometheus' shape, plus per-profile entries
 * under "profiles"). Returns 0 or -PROF_ETOOBIG when @out's cap is hit.
 * Thread-safe.
 */
int scrape_mgr_targets_json(struct scrape_mgr *m, struct buf *out);

/** scrape_mgr_get_stats() - a snapshot of the counters. Thread-safe. */
void scrape_mgr_get_stats(struct scrape_mgr *m, struct scrape_stats *st);

/**
 * scrape_mgr_free() - stop every thread (aborting transfers in flight
 * within about a second) and free everything. NULL ok.
 */
void scrape_mgr_free(struct scrape_mgr *m);

/**
 * scrape_format_time() - @ns (unix) as RFC 3339 UTC with milliseconds
 * ("2024-05-01T12:00:00.123Z") into @out; "" for 0.
 */
void scrape_format_time(int64_t ns, char *out, size_t outsz);

#endif
