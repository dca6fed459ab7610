/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h - the agent's /metrics endpoint: Prometheus text format
 * (version 0.0.4) on a local address, served by libmicrohttpd from its
 * own thread.
 *
 * The main loop renders the page (agent.c) and publishes it with
 * agent_metrics_publish about once a second; a scrape answers the last
 * published page, so serving never touches the sampler's state and
 * never blocks it for longer than a copy. Paths other than /metrics are
 * 404; methods other than GET/HEAD are 405. At most 4 connections, 5 s
 * idle timeout: a stuck client cannot pile up threads.
 */
#ifndef PROF_AGENT_METRICS_H
#define PROF_AGENT_METRICS_H

#include "base/compat.h"
#include "base/err.h"

struct agent_metrics;

/**
 * agent_metrics_start() - listen on @listen ("HOST:PORT", an IPv4
 * address or "localhost"; PORT 0 picks a free port). On success *@out
 * serves an empty page until the first publish; the caller stops it with
 * agent_metrics_stop. Errors: -EINVAL (bad address), -EADDRINUSE or
 * another -errno when the socket cannot be bound; @err says which.
 */
int agent_metrics_start(const char *listen, struct agent_metrics **out, struct prof_err *err);

/** agent_metrics_port() - the port actually bound. */
unsigned agent_metrics_port(const struct agent_metrics *m);

/** agent_metrics_publish() - replace the page with @n bytes of @text (copied). Thread-safe. */
void agent_metrics_publish(struct agent_metrics *m, const char *text, size_t n);

/** agent_metrics_stop() - stop serving and free; NULL ok. */
void agent_metrics_stop(struct agent_metrics *m);

#endif
