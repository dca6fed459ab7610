/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.h - the kernel half of the agent: loads bpf/profile.bpf.c,
 * attaches it to one perf_event per CPU (software cpu-clock, one sample
 * every 1e9 / frequency ns of CPU time) and hands each sample event to a
 * callback from a ring buffer poll loop.
 *
 * Sequence (libbpf-bootstrap): open -> set rodata (our pid) and the ring
 * buffer size -> load -> perf_event_open + attach on every CPU, each
 * checked -> poll until the caller stops -> stop (detach) -> read what is
 * left -> free. Needs root (or
 * CAP_BPF + CAP_PERFMON); every failure is reported with what to do.
 * Not thread-safe: one thread opens, polls and frees.
 */
#ifndef PROF_AGENT_SAMPLER_H
#define PROF_AGENT_SAMPLER_H

#include "base/compat.h"
#include "base/err.h"
#include "agent/bpf/profile.h"

/**
 * struct agent_sampler_opts - @frequency: samples per second per CPU
 * (1..10000); @ringbuf_bytes: ring buffer size, a power of two >= 4096, or
 * 0 to size it for about one second of events at @frequency on every CPU;
 * @on_event: called for each event from agent_sampler_poll (the event is
 * lent for the call); @ctx: passed through.
 */
struct agent_sampler_opts {
	unsigned frequency;
	size_t ringbuf_bytes;
	void (*on_event)(void *ctx, const struct profile_event *e);
	void *ctx;
};

struct agent_sampler;

/**
 * agent_sampler_open() - load and attach. On success *@out is the
 * sampler (caller frees with agent_sampler_free) and sampling runs.
 * Errors (with @err saying why and what to do): -EPERM when not
 * privileged, -EINVAL for bad options, -ENOENT when no CPU could be
 * attached, other -errno from libbpf or perf_event_open.
 */
int agent_sampler_open(const struct agent_sampler_opts *opts, struct agent_sampler **out,
		       struct prof_err *err);

/**
 * agent_sampler_stop() - detach from every CPU: no new events; those in
 * the ring buffer can still be read with agent_sampler_poll. Idempotent.
 */
void agent_sampler_stop(struct agent_sampler *s);

/** agent_sampler_free() - detach, unload, free. NULL ok. */
void agent_sampler_free(struct agent_sampler *s);

/**
 * agent_sampler_poll() - wait up to @timeout_ms for events and deliver
 * them; 0 delivers only what is ready. Returns the number delivered, 0
 * when interrupted by a signal, or -errno.
 */
int agent_sampler_poll(struct agent_sampler *s, int timeout_ms);

/** agent_sampler_ncpus() - number of CPUs the program is attached to. */
unsigned agent_sampler_ncpus(const struct agent_sampler *s);

/**
 * agent_sampler_read_stats() - the BPF program's counters (enum
 * profile_stat), summed over CPUs, into @out. 0 or -errno.
 */
int agent_sampler_read_stats(struct agent_sampler *s, uint64_t out[PROFILE_STAT_MAX]);

/** agent_sampler_stat_name() - "samples", "idle", "self", "ringbuf_full", ... for logs. */
const char *agent_sampler_stat_name(enum profile_stat st);

#endif
