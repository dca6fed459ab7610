/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collect.h - turns sample events from the BPF program into profiles:
 * per process and export interval, one on-CPU profile and, with off-CPU
 * profiling, one off-CPU profile.
 *
 * On-CPU: each event becomes one sample (values: 1 sample, period ns of
 * CPU; its timestamp kept), type process_cpu:cpu:nanoseconds:cpu:
 * nanoseconds (and samples:count). Off-CPU: one sample per time away,
 * value = ns off CPU, type off_cpu:off_cpu:nanoseconds:: (sample type
 * off_cpu/nanoseconds, no period; docs/formats.md "What the OTel eBPF profiler sends").
 *
 * Stacks are leaf first: kernel frames, then user frames. Kernel frames
 * are symbolized here from kallsyms (Function names on a
 * "[kernel.kallsyms]" mapping, frame type "kernel"). Native user frames
 * stay unsymbolized: a location with the ELF virtual address and a
 * mapping carrying the file's full path and GNU build ID (frame type
 * "native"), for the server to symbolize from the binary. Frames in
 * anonymous executable memory are JIT code: named here from the
 * process's perf map (/tmp/perf-PID.map) on a "[jit]" mapping, or named
 * "[jit]" when the map has no symbol there (never dropped); frame type
 * "v8js" for node, "jvm" for java, "cpython" for python, else "jit".
 * Interpreter frames (Python, Ruby, PHP; interp.h), when the sample came
 * with an interpreter stack that was named whole, take the place of the
 * interpreter-loop native frames they ran in: locations with one line
 * (function, file, function start line, line) on a "[<frame type>]"
 * mapping, frame type "cpython", "ruby" or "php".
 * JIT frames (HotSpot, V8; jit.h) that the unwinder stepped and the
 * runtime named take the place of their native frame: one location per
 * raw frame with one line per method (inlined methods first, the
 * compiled method last, as pprof marks inlining) on a "[<frame type>]"
 * mapping, frame type "jvm" or "v8js"; a frame that cannot be named
 * stays "[jit]" (or its perf map name, or its native symbol).
 * A user stack that hit a capture limit gets a "[truncated]" root frame
 * (frame type "abort-marker", as the OpenTelemetry eBPF profiler marks
 * aborted unwinding).
 *
 * User stacks: from the event's frame-pointer stack, or, when the event
 * carries a copy of the user stack and an unwinder is given, unwound here
 * with .eh_frame CFI (unwind.h), which also sees through code built
 * without frame pointers.
 *
 * Return addresses: every frame but the innermost is the address after a
 * call instruction, which may already belong to the next function (a call
 * to a noreturn function ends its caller). The collector subtracts 1 from
 * non-leaf frames, kernel and user, before symbolizing or normalizing, so
 * each address points into the call (what perf and pprof do). The leaf
 * user frame is kept as is even when the sample hit in the kernel: it is
 * then the instruction after a syscall, inside the same function.
 *
 * Per process (resource attributes): process.pid, process.executable.name
 * and .path, process.vpid (its pid in its own PID namespace, when that
 * differs), container.id, k8s.pod.uid, process.command_line (opt-in),
 * host.name, all from the process cache (procs.h). Per sample:
 * thread.name, thread.id, cpu.logical_number, and with a trace context
 * (tracectx.h) its attributes and a link to the trace and span. When the process is gone
 * before its mappings could be read, its user frames keep their runtime
 * addresses under an "[unknown]" mapping: the sample is never dropped for
 * that.
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
#include "agent/interp.h"
#include "agent/k8s.h"
#include "agent/procs.h"
#include "agent/tracectx.h"
#include "agent/unwind.h"
#include "symbolize/kallsyms.h"

struct agent_unwinder;
struct agent_jit;

#define AGENT_COLLECT_KSTACKS 1024 /* off-CPU kernel stacks waiting for their event */

/**
 * struct agent_collect_opts - configuration; pointers are borrowed and
 * must outlive the collector.
 * @period_ns:   sampling period (1e9 / frequency)
 * @host_name:   value of host.name
 * @proc_root:   where /proc is ("/proc"; tests may point elsewhere); used
 *               only when @procs is NULL
 * @ksyms:       kernel symbols, or NULL (kernel frames then carry addresses only)
 * @elfcache:    build ID / bias cache shared across intervals
 * @procs:       process cache shared with the exec/exit event handling,
 *               or NULL to let the collector keep its own
 * @unwinder:    .eh_frame unwinder for events with a stack copy, or NULL
 *               (their frame-pointer stack is used)
 * @command_line: add process.command_line (only when @procs is NULL;
 *               else the cache's own option decides)
 * @max_samples: samples per interval (0 = 1000000)
 * @max_procs:   processes per interval (0 = 16384)
 */
struct agent_collect_opts {
	int64_t period_ns;
	const char *host_name;
	const char *proc_root;
	const struct sym_kallsyms *ksyms;
	struct agent_elfinfo_cache *elfcache;
	struct agent_procs *procs;
	struct agent_unwinder *unwinder;
	bool command_line;
	size_t max_samples, max_procs;
	struct agent_k8s *k8s;		 /* pod metadata, or NULL */
	struct agent_interp *interp;	 /* interpreter frames (interp.h), or NULL */
	struct agent_jit *jit;		 /* JIT frames (jit.h; also given to @unwinder), or NULL */
	struct agent_tracectx *tracectx; /* trace context of samples (tracectx.h), or NULL */
};

/** struct agent_collect_stats - running totals since _new. */
struct agent_collect_stats {
	uint64_t samples;	       /* on-CPU events turned into samples */
	uint64_t offcpu_samples;       /* off-CPU events turned into samples */
	uint64_t offcpu_ns;	       /* sum of their values */
	uint64_t offcpu_kstack_missed; /* off-CPU events whose kernel stack was not found */
	uint64_t dropped;	       /* events dropped at a bound */
	uint64_t stale_image;	   /* events of an image replaced (exec) before they were read */
	uint64_t procs;		   /* (process, interval) entries started */
	uint64_t maps_failed;	   /* processes whose maps could not be read when needed */
	uint64_t unknown_frames;   /* user frames outside every known mapping */
	uint64_t jit_frames;	   /* user frames in anonymous executable memory */
	uint64_t jit_named;	   /* ... of which the perf map named */
	uint64_t truncated;	   /* stacks marked [truncated] */
	uint64_t ustack_errors;	   /* events whose user stack was unreadable */
	uint64_t dwarf_stacks;	   /* user stacks unwound with CFI */
	uint64_t dwarf_complete;   /* ... that reached the outermost frame */
	uint64_t profiles_emitted; /* profiles handed out by _take */
};

struct agent_collect;

/** agent_collect_new() - a collector with no events. 0 or -EINVAL (bad @opts). */
int agent_collect_new(const struct agent_collect_opts *opts, struct agent_collect **out);
/** agent_collect_free() - drop everything not yet taken; NULL ok. */
void agent_collect_free(struct agent_collect *c);

/**
 * agent_collect_add() - add one sample event (PROFILE_EV_CPU or
 * PROFILE_EV_OFFCPU) sampled at @time_unix_ns (ns since the epoch). @e
 * is only read during the call; when e->flags has PROFILE_F_STACK_COPY it
 * must be the head of a struct profile_event_ext. Returns 0,
 * -PROF_ETOOBIG when a bound dropped it (counted in stats.dropped),
 * -ESTALE when the process exec'd after the sample and before it was
 * read, so nothing describes the sampled image any more (stats.
 * stale_image; agent_procs_get_image), or -EINVAL for another kind.
 */
int agent_collect_add(struct agent_collect *c, const struct profile_event *e, int64_t time_unix_ns);

/**
 * agent_collect_add_kstack() - remember the kernel stack of an off-CPU
 * sleep (sent at switch-in) for the PROFILE_EV_OFFCPU event of the same
 * thread and switch-in time that follows it. Kept in a small
 * direct-mapped table (AGENT_COLLECT_KSTACKS slots by tid): a stack whose
 * slot is reused before its event arrives is lost (counted).
 */
void agent_collect_add_kstack(struct agent_collect *c, const struct profile_kstack_event *ke);

/**
 * agent_collect_take() - the profiles of the interval that started at
 * @start_unix_ns and lasted @duration_ns: per process with samples, its
 * on-CPU profile then its off-CPU profile (each only when it has
 * samples), in the order processes were first seen. Ownership of the
 * array and of each profile passes to the caller, who frees them with
 * agent_collect_profiles_free. The collector starts a new, empty
 * interval. Returns the number of profiles (*@out is NULL when 0).
 */
size_t agent_collect_take(struct agent_collect *c, int64_t start_unix_ns, int64_t duration_ns,
			  struct model_profile ***out);

/** agent_collect_profiles_free() - release @n profiles from _take and the array. NULL ok. */
void agent_collect_profiles_free(struct model_profile **profiles, size_t n);

/** agent_collect_get_stats() - copy the counters. */
void agent_collect_get_stats(const struct agent_collect *c, struct agent_collect_stats *st);

#define AGENT_COLLECT_MAX_BINARIES 128 /* executables with their own unwind counters */
#define AGENT_BINARY_NAME_MAX	   64  /* executable names are cut to 63 bytes */

/**
 * struct agent_binary_stats - how the user stacks of one executable's
 * processes unwound, since the collector started (the agent's half of
 * "stack health"). Counts are samples (on- and off-CPU events of
 * non-kernel threads): @samples in all; @complete with user frames and
 * no [truncated] mark; @truncated marked [truncated] (cut short by a
 * capture limit or a failed unwind step); @no_user_stack with no user
 * frame at all (the stack could not be read). @ends: of the stacks
 * unwound with CFI from a stack copy that did not reach the outermost
 * frame (and frame pointers did not get further), how the unwinding
 * ended (enum agent_unwind_end; ends[0] stays 0).
 * @exe: executable file name ("other" for the sum of the rest);
 * @build_id: its GNU build ID when known, else "".
 */
struct agent_binary_stats {
	char exe[AGENT_BINARY_NAME_MAX];
	char build_id[AGENT_BUILD_ID_MAX];
	uint64_t samples, complete, truncated, no_user_stack;
	uint64_t ends[AGENT_UNWIND_END_MAX];
};

/**
 * agent_collect_binary_stats() - the @max executables with the most
 * samples into @out (most first), and everything else summed into
 * *@other (exe "other": executables past @max, and those seen after
 * AGENT_COLLECT_MAX_BINARIES were being tracked). Returns how many
 * entries of @out were filled. Bounded cardinality for /metrics.
 */
size_t agent_collect_binary_stats(const struct agent_collect *c, struct agent_binary_stats *out,
				  size_t max, struct agent_binary_stats *other);

/** agent_collect_procs() - the process cache in use (lent). */
struct agent_procs *agent_collect_procs(struct agent_collect *c);

#endif
