// SPDX-License-Identifier: GPL-2.0-only
/*
 * profile.bpf.c - on-CPU sampling: runs on every tick of a per-CPU
 * perf_event (software cpu-clock, period = 1e9 / frequency ns) and sends
 * one event per sample (pid, tid, comm, cpu, time, kernel and user stack)
 * to user space over a BPF ring buffer.
 *
 * Why one event per sample instead of aggregating counts per stack in a
 * hash map (bcc profile.bpf.c): profd keeps each sample's timestamp
 * (flame chart, fine time series), and at 19-99 Hz per CPU the event
 * rate is small; a ring buffer keeps event order, needs no map swapping
 * per interval, and its "full" case is one counted drop. User space must
 * normalize user addresses while the process still exists, which also
 * favours handling events as they arrive.
 *
 * Every early return bumps a named per-CPU counter (profile.h), so lost
 * samples are never silent. Stacks come from bpf_get_stack: the kernel
 * stack from the interrupted registers, the user stack by frame-pointer
 * unwinding from the task's user registers (code without frame pointers
 * yields short stacks; DWARF unwinding is a later step).
 *
 * Sources: libbpf-bootstrap examples/c/profile.bpf.c, bcc
 * libbpf-tools/profile.bpf.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include "profile.h"

char LICENSE[] SEC("license") = "GPL";

/* Set by user space before load. */
const volatile __u32 agent_tgid = 0;   /* the agent's own process, skipped */
const volatile __u64 wakeup_bytes = 0; /* wake the reader once this much is queued */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 20); /* resized by user space before load */
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PROFILE_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;
	struct profile_event *e;
	long n;

	if (tid == 0) {
		stat_inc(PROFILE_STAT_IDLE);
		return 0;
	}
	if (tgid == agent_tgid) {
		stat_inc(PROFILE_STAT_SELF);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(PROFILE_STAT_RINGBUF_FULL);
		return 0;
	}
	e->time_ns = bpf_ktime_get_ns();
	e->pid = tgid;
	e->tid = tid;
	e->cpu = bpf_get_smp_processor_id();
	e->flags = 0;
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	n = bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
	if (n < 0)
		stat_inc(PROFILE_STAT_KSTACK_ERR);
	e->kstack_n = n < 0 ? (__s32)n : (__s32)(n / sizeof(__u64));

	n = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack), BPF_F_USER_STACK);
	if (n < 0)
		stat_inc(PROFILE_STAT_USTACK_ERR);
	e->ustack_n = n < 0 ? (__s32)n : (__s32)(n / sizeof(__u64));

	/*
	 * No wakeup per event: that would cost a reader wakeup per sample and
	 * tie the agent's running to the sampling ticks (so it would catch
	 * itself more often than it runs). User space polls on its own clock
	 * (every 100 ms); only a buffer half full wakes it early.
	 */
	bpf_ringbuf_submit(e, bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes
				      ? BPF_RB_FORCE_WAKEUP
				      : BPF_RB_NO_WAKEUP);
	stat_inc(PROFILE_STAT_SAMPLES);
	return 0;
}
