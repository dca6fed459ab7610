/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.h - `profd agent`: sample every process on this host with eBPF
 * (sampler.h), build one profile per process per interval (collect.h)
 * and send them as OTLP profiles (export.h).
 *
 * Main loop (libbpf-bootstrap bootstrap.c): poll the ring buffer with a
 * 100 ms timeout, check the caller's stop flag, and at each interval
 * boundary hand the interval's profiles to the exporter. On stop: read
 * what is left in the ring buffer, detach, send the last interval and
 * whatever is queued (within a deadline), return 0.
 */
#ifndef PROF_AGENT_AGENT_H
#define PROF_AGENT_AGENT_H

#include "base/compat.h"
#include "base/err.h"

#include <signal.h>

#define AGENT_DEFAULT_FREQUENCY	  19
#define AGENT_DEFAULT_INTERVAL_NS (10 * 1000000000LL)

/**
 * struct agent_opts - @server_url: base URL of the profd server (or any
 * OTLP/HTTP profiles receiver), NULL to only dump; @dump_dir: also write
 * each request body there, or NULL; @frequency: samples per second per
 * CPU; @interval_ns: export period; @duration_ns: stop after this long
 * (0 = until stopped); @proc_root: "/proc" unless testing.
 */
struct agent_opts {
	const char *server_url;
	const char *dump_dir;
	unsigned frequency;
	int64_t interval_ns;
	int64_t duration_ns;
	const char *proc_root;
};

/**
 * agent_run() - run until *@stop becomes non-zero (set it from a signal
 * handler) or the duration ends. Returns 0, or a negative code when the
 * agent could not start (no privileges, no BTF, bad options; @err says
 * what and what to do). Failures while running (a server that is down,
 * a process that exits) are logged and do not stop the agent.
 */
int agent_run(const struct agent_opts *opts, volatile sig_atomic_t *stop, struct prof_err *err);

#endif
