/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sampler.h - the kernel half of the agent: loads bpf/profile.bpf.c,
 * attaches it to one perf_event per CPU (software cpu-clock, one sample
 * every 1e9 / frequency ns of CPU time), to the process exec/exit
 * tracepoints, to the dynamic loader's debugger hook (a uprobe on ld.so's
 * _dl_debug_state; optional: a warning when it cannot attach) and, with
 * off-CPU profiling, to sched_switch and sys_exit; hands each event to a
 * callback from a ring buffer poll loop.
 *
 * Sequence (libbpf-bootstrap): open -> set rodata (our pid, threshold,
 * filter flags), map sizes and which programs load -> load -> fill the
 * targeting maps -> perf_event_open + attach on every CPU and attach the
 * tracepoints, each checked -> poll until the caller stops ->
 * stop (detach) -> read what is left -> free. Needs root (or CAP_BPF +
 * CAP_PERFMON); every failure is reported with what to do.
 * Not thread-safe: one thread opens, polls and frees.
 */
#ifndef PROF_AGENT_SAMPLER_H
#define PROF_AGENT_SAMPLER_H

#include "base/compat.h"
#include "base/err.h"
#include "agent/bpf/profile.h"

/**
 * struct agent_sampler_opts - configuration (pointers borrowed for the
 * call to agent_sampler_open only).
 * @frequency:      samples per second per CPU (1..10000)
 * @ringbuf_bytes:  ring buffer size, a power of two >= 4096, or 0 to size
 *                  it for a quarter second of samples on every CPU, at
 *                  least 48 of them (256 KiB to 16 MiB)
 * @off_cpu:        also record off-CPU time (sched_switch)
 * @off_cpu_min_ns: off-CPU threshold: shorter times away are not sent
 * @offcpu_threads: threads whose switch-out can be remembered at once
 *                  (LRU; 0 = 16384)
 * @stack_copy:     send the top of the user stack with each sample
 *                  (struct profile_event_ext) for .eh_frame unwinding
 * @include_exe, @exclude_exe: executable file names (@n_include_exe,
 *                  @n_exclude_exe of them), cut to PROFILE_EXE_KEY_LEN - 1
 * @include_cgroup, @exclude_cgroup: cgroup v2 ids (the inode number of the
 *                  cgroup's directory); a rule covers the cgroup's subtree
 * @on_event:       called for each sample event (CPU or off-CPU) from
 *                  agent_sampler_poll; @size is the record's size, at least
 *                  sizeof(struct profile_event), and sizeof(struct
 *                  profile_event_ext) when PROFILE_F_STACK_COPY is set.
 *                  Lent for the call.
 * @on_proc:        called for each exec/exit event (may be NULL). Lent.
 * @on_kstack:      called for each off-CPU kernel stack (may be NULL). Lent.
 * @on_libs:        called for each loader link map (may be NULL). Lent.
 * @on_interp:      called for each interpreter stack (may be NULL); the
 *                  sample event it belongs to follows it. Lent.
 * @on_ctx:         called for each trace context (may be NULL); the sample
 *                  event it belongs to follows it. Lent.
 * @ctx:            passed through.
 */
struct agent_sampler_opts {
	unsigned frequency;
	size_t ringbuf_bytes;
	bool off_cpu;
	uint64_t off_cpu_min_ns;
	uint32_t offcpu_threads;
	bool stack_copy;
	const char *const *include_exe, *const *exclude_exe;
	size_t n_include_exe, n_exclude_exe;
	const uint64_t *include_cgroup, *exclude_cgroup;
	size_t n_include_cgroup, n_exclude_cgroup;
	void (*on_event)(void *ctx, const struct profile_event *e, size_t size);
	void (*on_proc)(void *ctx, const struct profile_proc_event *pe);
	void (*on_kstack)(void *ctx, const struct profile_kstack_event *ke);
	void (*on_libs)(void *ctx, const struct profile_libs_event *le);
	void (*on_interp)(void *ctx, const struct profile_interp_event *ie);
	void (*on_ctx)(void *ctx, const struct profile_ctx_event *ce);
	void *ctx;
};

struct agent_sampler;

/**
 * agent_sampler_open() - load and attach. On success *@out is the
 * sampler (caller frees with agent_sampler_free) and sampling runs.
 * Errors (with @err saying why and what to do): -EPERM when not
 * privileged, -EINVAL for bad options, -ENOENT when no CPU could be
 * attached,
 * other -errno from libbpf or perf_event_open.
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

/**
 * agent_sampler_stat_name() - "samples", "idle", "self", "ringbuf_full",
 * ... (the enum profile_stat names in lower case, for logs and metrics).
 */
const char *agent_sampler_stat_name(enum profile_stat st);

/**
 * agent_sampler_interp_set() - register process @pid as running the
 * interpreter described by @p (profile.h struct profile_interp_proc):
 * its samples carry that runtime's frames from now on. 0 or -errno
 * (-E2BIG: the map is full, SAMPLER_INTERP_PROCS processes).
 */
int agent_sampler_interp_set(struct agent_sampler *s, uint32_t pid,
			     const struct profile_interp_proc *p);

/** agent_sampler_interp_del() - forget @pid's interpreter; 0 also when it had none. */
int agent_sampler_interp_del(struct agent_sampler *s, uint32_t pid);

/**
 * agent_sampler_ctx_set() - register process @pid as publishing a trace
 * context read as @p says (profile.h struct profile_ctx_proc): its
 * samples are preceded by PROFILE_EV_CTX events from now on. 0 or -errno
 * (-E2BIG: the map is full, SAMPLER_CTX_PROCS processes).
 */
int agent_sampler_ctx_set(struct agent_sampler *s, uint32_t pid, const struct profile_ctx_proc *p);

/** agent_sampler_ctx_del() - forget @pid's trace context; 0 also when it had none. */
int agent_sampler_ctx_del(struct agent_sampler *s, uint32_t pid);

#endif
