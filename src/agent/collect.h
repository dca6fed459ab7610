/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect.h - turns sample events from the BPF program into one
 * model_profile per process per export interval.
 *
 * Each event becomes one sample (values: 1 sample, period ns of CPU; its
 * timestamp kept) whose stack is leaf first: kernel frames, then user
 * frames. Kernel frames are symbolized here from kallsyms (Function
 * names on a "[kernel.kallsyms]" mapping, frame type "kernel"). User
 * frames stay unsymbolized: a location with the ELF virtual address and a
 * mapping carrying the file's full path and GNU build ID (frame type
 * "native"), for the server to symbolize from the binary.
 *
 * Return addresses: every frame but the innermost is the address after a
 * call instruction, which may already belong to the next function (a call
 * to a noreturn function ends its caller). The collector subtracts 1 from
 * non-leaf frames, kernel and user, before symbolizing or normalizing, so
 * each address points into the call (what perf and pprof do). The leaf
 * user frame is kept as is even when the sample hit in the kernel: it is
 * then the instruction after a syscall, inside the same function.
 *
 * Per process: resource attributes process.pid, process.executable.name
 * (basename of /proc/PID/exe, else the main thread's comm, else the
 * sampled thread's comm), process.executable.path (/proc/PID/exe),
 * host.name; per sample: thread.name, thread.id, cpu.logical_number.
 * The process's executable mappings are read when it is first seen in an
 * interval, and again (at most once a second) when a frame falls outside
 * every known mapping (dlopen). When the process is gone by then, its
 * user frames keep their runtime addresses under an "[unknown]" mapping:
 * the sample is never dropped for that.
 *
 * Bounded: at most max_samples samples and max_procs processes per
 * interval; events past either bound are dropped and counted.
 * Not thread-safe: one thread adds events and takes profiles.
 */
#ifndef PROF_AGENT_COLLECT_H
#define PROF_AGENT_COLLECT_H

#include "base/compat.h"
#include "model/profile.h"
#include "agent/bpf/profile.h"
#include "agent/elfinfo.h"
#include "symbolize/kallsyms.h"

/**
 * struct agent_collect_opts - configuration; pointers are borrowed and
 * must outlive the collector.
 * @period_ns:   sampling period (1e9 / frequency)
 * @host_name:   value of host.name
 * @proc_root:   where /proc is ("/proc"; tests may point elsewhere)
 * @ksyms:       kernel symbols, or NULL (kernel frames then carry addresses only)
 * @elfcache:    build ID / bias cache shared across intervals
 * @max_samples: samples per interval (0 = 1000000)
 * @max_procs:   processes per interval (0 = 16384)
 */
struct agent_collect_opts {
	int64_t period_ns;
	const char *host_name;
	const char *proc_root;
	const struct sym_kallsyms *ksyms;
	struct agent_elfinfo_cache *elfcache;
	size_t max_samples, max_procs;
};

/** struct agent_collect_stats - running totals since _new. */
struct agent_collect_stats {
	uint64_t samples;	   /* events turned into samples */
	uint64_t dropped;	   /* events dropped at a bound */
	uint64_t procs;		   /* (process, interval) profiles started */
	uint64_t maps_failed;	   /* maps reads that failed (process gone) */
	uint64_t unknown_frames;   /* user frames outside every known mapping */
	uint64_t ustack_errors;	   /* events whose user stack was unreadable */
	uint64_t profiles_emitted; /* profiles handed out by _take */
};

struct agent_collect;

/** agent_collect_new() - a collector with no events. 0 or -EINVAL (bad @opts). */
int agent_collect_new(const struct agent_collect_opts *opts, struct agent_collect **out);
/** agent_collect_free() - drop everything not yet taken; NULL ok. */
void agent_collect_free(struct agent_collect *c);

/**
 * agent_collect_add() - add one event sampled at @time_unix_ns (ns since
 * the epoch). @e is only read during the call. Returns 0, or
 * -PROF_ETOOBIG when a bound dropped it (counted in stats.dropped).
 */
int agent_collect_add(struct agent_collect *c, const struct profile_event *e, int64_t time_unix_ns);

/**
 * agent_collect_take() - the profiles of the interval that started at
 * @start_unix_ns and lasted @duration_ns: one per process with samples,
 * in the order processes were first seen. Ownership of the array and of
 * each profile passes to the caller, who frees them with
 * agent_collect_profiles_free. The collector starts a new, empty interval.
 * Returns the number of profiles (*@out is NULL when 0).
 */
size_t agent_collect_take(struct agent_collect *c, int64_t start_unix_ns, int64_t duration_ns,
			  struct model_profile ***out);

/** agent_collect_profiles_free() - release @n profiles from _take and the array. NULL ok. */
void agent_collect_profiles_free(struct model_profile **profiles, size_t n);

/** agent_collect_get_stats() - copy the counters. */
void agent_collect_get_stats(const struct agent_collect *c, struct agent_collect_stats *st);

#endif
