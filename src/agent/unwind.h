/* SPDX-License-Identifier: Apache-2.0 */
/*
 * unwind.h - user stacks without frame pointers: unwinds the copy of the
 * top of a thread's user stack that the BPF program sends with each
 * sample (struct profile_event_ext: rip, rsp, rbp and up to
 * PROFILE_STACK_COPY bytes from rsp) using the call frame information of
 * the mapped ELF files (.eh_frame, else .debug_frame), read with libdw
 * (dwarf_getcfi_elf, dwarf_cfi_addrframe).
 *
 * Why in user space from a stack copy (the "perf --call-graph dwarf"
 * design) rather than in BPF from unwind tables built in user space (the
 * OpenTelemetry eBPF profiler and Parca agent): it is the simplest
 * correct design; no per-binary table has to be built, loaded into and
 * kept consistent with BPF maps before the first sample, CFI is
 * evaluated by a mature library, and the BPF side stays a copy. The cost
 * is bandwidth: 16 KiB per sample through the ring buffer, which at
 * 19-99 Hz per CPU is a few hundred KiB to a few MiB per second per CPU
 * (measured in bench/results/agent.md), and frames deeper than the copy
 * are cut (marked [truncated]).
 *
 * x86-64 only. Per step, with the CFI row of the frame's pc (the return
 * address minus one for caller frames): CFA from its rule (register +
 * offset; rsp or rbp), then rip and rbp from their rules (saved at
 * CFA+N, same value, undefined). A pc with no CFI (JIT code, a stripped
 * binary without .eh_frame) takes one frame-pointer step when rbp points
 * into the copy (V8 and the JVM keep frame pointers). The outermost
 * frame is the one whose return address rule is "undefined" (_start,
 * clone3, as glibc marks them) or whose return address is 0.
 *
 * CFI per file is cached by file identity (device, inode, size, mtime)
 * with a bound on open files; a file whose CFI cannot be read is
 * remembered as such. Not thread-safe.
 */
#ifndef PROF_AGENT_UNWIND_H
#define PROF_AGENT_UNWIND_H

#include "base/compat.h"
#include "agent/bpf/profile.h"
#include "agent/jit.h"
#include "agent/procs.h"

enum agent_unwind_end {
	AGENT_UNWIND_COMPLETE = 0,    /* reached the outermost frame */
	AGENT_UNWIND_TRUNCATED = 1,   /* ran out of copied stack or of frame slots */
	AGENT_UNWIND_NO_CFI = 2,      /* no CFI for a pc and no usable frame pointer */
	AGENT_UNWIND_BAD_STACK = 3,   /* a rule pointed outside the copy, or no progress */
	AGENT_UNWIND_NO_MAPPING = 4,  /* a pc outside every executable mapping */
	AGENT_UNWIND_UNSUPPORTED = 5, /* a CFI rule this unwinder does not evaluate */
	AGENT_UNWIND_NO_STACK = 6,    /* the event carries no stack bytes */
	AGENT_UNWIND_END_MAX = 7,
};

/** agent_unwind_end_name() - "complete", "truncated", "no_cfi", ... (static). */
const char *agent_unwind_end_name(enum agent_unwind_end end);

/** struct agent_unwind_stats - counters since _new; @ends counts stacks per way they ended. */
struct agent_unwind_stats {
	uint64_t stacks, frames;
	uint64_t fp_steps;  /* frames stepped with the frame pointer (no CFI) */
	uint64_t jit_steps; /* frames stepped by a JIT runtime */
	uint64_t ends[AGENT_UNWIND_END_MAX];
	uint64_t cfi_files, cfi_failures, cfi_evictions;
};

struct agent_unwinder;

/** agent_unwinder_new() - an unwinder caching CFI of at most @max_files files (0 = 256). */
struct agent_unwinder *agent_unwinder_new(size_t max_files);
/** agent_unwinder_free() - close every file; NULL ok. */
void agent_unwinder_free(struct agent_unwinder *u);

/**
 * agent_unwinder_set_jit() - let the JIT runtimes of @j (jit.h) step the
 * frames whose pcs they claim, before CFI and the frame pointer are
 * tried (NULL: none). @j is lent and must outlive the unwinder's use.
 */
void agent_unwinder_set_jit(struct agent_unwinder *u, struct agent_jit *j);

/**
 * agent_unwind_user() - unwind @x in process @pr (mappings from @ps,
 * re-read as needed at @now_ns). Writes up to @max runtime addresses,
 * leaf first, to @pcs: the interrupted pc, then return addresses, as
 * bpf_get_stack does; when @jf is not NULL, @jf[i] gets the raw JIT
 * frame a runtime found at @pcs[i] (kind AGENT_JIT_NONE for the others).
 * Sets *@end to how the walk ended. Returns the number of addresses (0
 * when the event has no user registers).
 */
int agent_unwind_user(struct agent_unwinder *u, struct agent_procs *ps, struct agent_proc *pr,
		      const struct profile_event_ext *x, int64_t now_ns, uint64_t *pcs,
		      struct agent_jit_frame *jf, int max, enum agent_unwind_end *end);

/**
 * agent_unwinder_trim() - call about once a second: close the files no
 * walk used since the previous call (their CFI is read again when
 * needed), and drop the pages of the others' mapped images from this
 * process's resident set (madvise MADV_DONTNEED: they stay in the page
 * cache and come back on the next access). Keeps the agent's RSS from
 * growing with the size of the binaries it has walked through.
 */
void agent_unwinder_trim(struct agent_unwinder *u);

/** agent_unwind_get_stats() - copy the counters. */
void agent_unwind_get_stats(const struct agent_unwinder *u, struct agent_unwind_stats *st);

#endif
