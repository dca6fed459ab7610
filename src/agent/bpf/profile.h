/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * profile.h - what profile.bpf.c and the agent's user space share: the
 * sample event sent over the ring buffer and the names of the per-CPU
 * counters (bcc libbpf-tools profile.h).
 *
 * One event per cpu-clock tick of a task that is not idle and not the
 * agent: kernel and user stacks as raw instruction pointers, leaf first,
 * as bpf_get_stack() returns them (frame-pointer unwinding for user
 * space). Counts are frame counts, or a negative errno from
 * bpf_get_stack (-EFAULT when the user stack could not be read).
 *
 * The layout is an ABI between the two halves only (both are built from
 * this header in one build), never stored or sent anywhere.
 */
#ifndef PROF_AGENT_BPF_PROFILE_H
#define PROF_AGENT_BPF_PROFILE_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* perf_event_max_stack's default; bpf_get_stack fills at most this many. */
#define PROFILE_MAX_FRAMES 127
#define PROFILE_COMM_LEN   16

struct profile_event {
	__u64 time_ns; /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u32 pid;     /* tgid (process id as user space sees it in the root pid namespace) */
	__u32 tid;     /* thread id */
	__u32 cpu;
	__s32 kstack_n;		     /* kernel frames in @kstack, or -errno */
	__s32 ustack_n;		     /* user frames in @ustack, or -errno */
	__u32 flags;		     /* reserved, 0 */
	char comm[PROFILE_COMM_LEN]; /* thread name */
	__u64 kstack[PROFILE_MAX_FRAMES];
	__u64 ustack[PROFILE_MAX_FRAMES];
};

/*
 * Per-CPU counters (array map "stats", one __u64 per CPU and index).
 * Every way the program gives up a sample has its own index, so a lost
 * sample is never silent.
 */
enum profile_stat {
	PROFILE_STAT_SAMPLES = 0,      /* events submitted to the ring buffer */
	PROFILE_STAT_IDLE = 1,	       /* skipped: the idle task (pid 0) */
	PROFILE_STAT_SELF = 2,	       /* skipped: the agent's own threads */
	PROFILE_STAT_RINGBUF_FULL = 3, /* dropped: no room in the ring buffer */
	PROFILE_STAT_KSTACK_ERR = 4,   /* kernel stack unreadable (event still sent) */
	PROFILE_STAT_USTACK_ERR = 5,   /* user stack unreadable (event still sent) */
	PROFILE_STAT_MAX = 6,
};

#endif
