// SPDX-License-Identifier: GPL-2.0-only
/*
 * profile.bpf.c - the agent's kernel half:
 *
 *   profile_sample     perf_event (software cpu-clock, one per CPU):
 *                      on-CPU samples;
 *   profile_switch     tp_btf/sched_switch: remembers when a thread went
 *                      to sleep and, when it comes back after at least
 *                      the threshold, how long it was away, and sends its
 *                      kernel stack (opt-in, --off-cpu);
 *   profile_sys_exit   tp_btf/sys_exit: in that thread, as the syscall it
 *                      slept in returns, sends the time away with its
 *                      user stack;
 *   profile_exec/exit  tp_btf/sched_process_exec / _exit: process events
 *                      for user space's /proc snapshots and caches;
 *   profile_libs       uprobe on ld.so's _dl_debug_state, the hook the
 *                      loader calls for debuggers whenever its list of
 *                      loaded objects changes: sends that list (load bias
 *                      and path of each object) once it is consistent.
 *
 * Why one event per sample instead of aggregating counts per stack in a
 * hash map (bcc profile.bpf.c): profd keeps each sample's timestamp
 * (flame chart, fine time series), and at 19-99 Hz per CPU the event
 * rate is small; a ring buffer keeps event order, needs no map swapping
 * per interval, and its "full" case is one counted drop. User space must
 * normalize user addresses while the process still exists, which also
 * favours handling events as they arrive.
 *
 * Off-CPU design (after the OpenTelemetry eBPF profiler's): sched_switch
 * stores (tid -> time, syscall) for a thread going to sleep in an LRU
 * hash and, for the thread coming back, turns it into the time away, so
 * the cost of a context switch is one map update and one lookup; stacks
 * are taken only when the time away reached the threshold: the kernel
 * stack of the sleeper from sched_switch (bpf_get_task_stack), the user
 * stack in the thread itself as its syscall returns (a user stack can
 * only be read from inside its process). A blocked thread has not run
 * since it switched out, so both are the ones it blocked in; user space
 * joins the two events by (tid, switch-in time). Storing full stacks at
 * every switch-out would cost an unwind per context switch and ~2 KiB of
 * map per sleeping thread. Only sleeps count (a preempted thread is
 * runnable, not blocked). The profiler takes the stacks in a kprobe on
 * finish_task_switch; kprobes and fexit are not available on every
 * kernel (not on the test machines), tracepoints are.
 *
 * Targeting: --include/--exclude by executable name or cgroup become the
 * maps exe_filter and cgroup_filter; a process's executable verdict is
 * cached per tgid and address space (verdicts, reset at exec, kept
 * through the exit of the last thread). The check comes
 * before any unwinding, so skipped processes cost one map lookup.
 *
 * Every early return bumps a named per-CPU counter (profile.h), so lost
 * samples are never silent. Stacks come from bpf_get_stack: the kernel
 * stack from the interrupted registers, the user stack by frame-pointer
 * unwinding from the task's user registers; with stack copies on, the
 * top of the user stack is sent as well for .eh_frame unwinding in user
 * space (unwind.h).
 *
 * Sources: libbpf-bootstrap examples/c/profile.bpf.c, bcc
 * libbpf-tools/profile.bpf.c and offcputime.bpf.c, opentelemetry-ebpf-
 * profiler support/ebpf/off_cpu.ebpf.c.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "profile.h"
#include "interp.h"

char LICENSE[] SEC("license") = "GPL";

#define PF_EXITING 0x00000004
#define PF_KTHREAD 0x00200000

/* Set by user space before load. */
const volatile __u32 agent_tgid = 0;	      /* the agent's own process, skipped */
const volatile __u64 wakeup_bytes = 0;	      /* wake the reader once this much is queued */
const volatile __u64 offcpu_min_ns = 1000000; /* off-CPU threshold */
const volatile __u32 filter_flags = 0;	      /* PROFILE_FILTER_* */
const volatile __u32 stack_copy = 0;	      /* send struct profile_event_ext */
const volatile __s64 rdebug_off = 0;	      /* ld.so: &_r_debug - &_dl_debug_state */

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

/*
 * Off-CPU state per thread: @start_ns and @nr (the syscall it sleeps in)
 * set at switch-out; at switch-in, if away long enough, @delta_ns and
 * @in_ns set (start_ns cleared) until profile_sys_exit sends it.
 */
struct offcpu_rec {
	__u64 start_ns, in_ns, delta_ns;
	__u64 nr;
};

/* A switch-in older than this at the syscall's return is not ours. */
#define OFFCPU_STALE_NS 1000000000ULL

/* tid -> struct offcpu_rec; sized by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct offcpu_rec);
} offcpu_start SEC(".maps");

/* Executable name -> PROFILE_V_INCLUDE or _EXCLUDE. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, struct profile_exe_key);
	__type(value, __u8);
} exe_filter SEC(".maps");

/* Cgroup v2 id (inode of its directory) -> PROFILE_V_INCLUDE or _EXCLUDE. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u64);
	__type(value, __u8);
} cgroup_filter SEC(".maps");

/* tgid -> executable verdict (PROFILE_V_INCLUDE, _EXCLUDE or _NOMATCH) and its mm. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct profile_exe_verdict);
} verdicts SEC(".maps");

static __always_inline void stat_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &idx);

	if (v)
		*v += 1;
}

/* The verdict of the current task's cgroup or its nearest listed ancestor. */
static __always_inline __u8 cgroup_verdict(void)
{
	for (int level = PROFILE_CGROUP_MAX_LEVEL; level >= 0; level--) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(level);
		__u8 *v;

		if (!id)
			continue; /* deeper than the task's own cgroup */
		v = bpf_map_lookup_elem(&cgroup_filter, &id);
		if (v)
			return *v;
	}
	return PROFILE_V_NOMATCH;
}

/*
 * The verdict for @task's executable name, cached per tgid for its
 * current address space (struct profile_exe_verdict: a tick inside an
 * exec, after the new image is installed, decides again).
 */
static __always_inline __u8 exe_verdict(struct task_struct *task, __u32 tgid)
{
	struct profile_exe_verdict nv = { 0 }, *cached;
	struct profile_exe_key key;
	const unsigned char *name;
	__u64 mm;

	if (BPF_CORE_READ(task, flags) & PF_KTHREAD)
		return PROFILE_V_NOMATCH; /* no executable (and its tgid may be a reused one) */
	mm = (__u64)BPF_CORE_READ(task, mm);
	cached = bpf_map_lookup_elem(&verdicts, &tgid);
	/* No mm: an exiting task (exit_mm ran); its image's verdict still holds. */
	if (cached && (cached->mm == mm || !mm))
		return cached->verdict;
	nv.mm = mm;
	nv.verdict = PROFILE_V_NOMATCH;
	__builtin_memset(&key, 0, sizeof(key));
	name = BPF_CORE_READ(task, mm, exe_file, f_path.dentry, d_name.name);
	if (name && bpf_probe_read_kernel_str(key.name, sizeof(key.name), name) > 0) {
		__u8 *f = bpf_map_lookup_elem(&exe_filter, &key);

		if (f)
			nv.verdict = *f;
	}
	if (bpf_map_update_elem(&verdicts, &tgid, &nv, BPF_ANY))
		stat_inc(PROFILE_STAT_VERDICT_UPDATE_ERR);
	return nv.verdict;
}

/*
 * Whether the current task (@task, of process @tgid) is to be profiled:
 * excluded by no rule, and, when include rules exist, included by one.
 */
static __always_inline bool task_allowed(struct task_struct *task, __u32 tgid)
{
	__u8 cg = PROFILE_V_NOMATCH, exe = PROFILE_V_NOMATCH;

	if (!filter_flags)
		return true;
	if (filter_flags & (PROFILE_FILTER_INCLUDE_CGROUP | PROFILE_FILTER_EXCLUDE_CGROUP))
		cg = cgroup_verdict();
	if (cg == PROFILE_V_EXCLUDE)
		return false;
	if (filter_flags & (PROFILE_FILTER_INCLUDE_EXE | PROFILE_FILTER_EXCLUDE_EXE))
		exe = exe_verdict(task, tgid);
	if (exe == PROFILE_V_EXCLUDE)
		return false;
	if (filter_flags & (PROFILE_FILTER_INCLUDE_EXE | PROFILE_FILTER_INCLUDE_CGROUP))
		return cg == PROFILE_V_INCLUDE || exe == PROFILE_V_INCLUDE;
	return true;
}

/*
 * Copy the top of the user stack into @x: as many bytes from the stack
 * pointer up as can be read, at most PROFILE_STACK_COPY, and on the main
 * thread no further than the end of the environment strings (the top of
 * its stack).
 *
 * Read in pieces that cross at most one page boundary, and on a failed
 * piece keep what lies before that boundary: bpf_probe_read_user
 * (copy_from_user_nofault) cannot fault pages in, so one page that is not
 * present fails the whole read, and the main thread's stack has such a
 * page in about one process in four. At exec the kernel places the
 * argument/environment pointers and the auxiliary vector a random
 * 0-8 KiB below the strings (arch_align_stack); nothing ever touches
 * that gap, so when it spans a whole page that page is never faulted in.
 * A program's outermost frames sit just below the pointers, a few KiB
 * under the strings, so a read from the stack pointer up to env_end in
 * one piece failed for every sample of such a process, and so did the
 * 8 and 2 KiB retries whenever the gap began within 2 KiB of the stack
 * pointer (shallow stacks, small environments): off-CPU samples, taken
 * in syscall wrappers just below main, lost their user stacks
 * (stack_len 0). Page-bounded pieces stop at the gap, after the frames
 * the unwinder needs. The same holds at the end of a thread's stack
 * mapping.
 */
#define STACK_PAGE 4096
static __always_inline void copy_user_stack(struct profile_event_ext *x)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);
	__u64 env_end, limit = PROFILE_STACK_COPY, len = 0;
	const char *sp;

	x->ip = BPF_CORE_READ(regs, ip);
	x->sp = BPF_CORE_READ(regs, sp);
	x->bp = BPF_CORE_READ(regs, bp);
	x->r13 = BPF_CORE_READ(regs, r13);
	x->stack_len = 0;
	sp = (const char *)x->sp;
	if (!sp || (x->ev.flags & PROFILE_F_KTHREAD))
		return;
	env_end = BPF_CORE_READ(task, mm, env_end);
	if (x->sp < env_end && env_end - x->sp < limit)
		limit = (env_end - x->sp) & ~7ULL;
#pragma unroll
	for (int k = 0; k < PROFILE_STACK_COPY / STACK_PAGE; k++) {
		__u64 off = (__u64)k * STACK_PAGE, want, to_page;

		if (off >= limit)
			break;
		want = limit - off;
		if (want > STACK_PAGE)
			want = STACK_PAGE;
		if (!bpf_probe_read_user(x->stack + off, want, sp + off)) {
			len = off + want;
			continue;
		}
		/* The piece crossed into a page that is not there: keep what is before it. */
		to_page = STACK_PAGE - ((x->sp + off) & (STACK_PAGE - 1));
		if (to_page < want && !bpf_probe_read_user(x->stack + off, to_page, sp + off))
			len = off + to_page;
		break;
	}
	if (len)
		x->stack_len = (__u32)len;
	else
		stat_inc(PROFILE_STAT_STACK_COPY_ERR);
}

/* Fill everything but kind, time and value; @ctx is the program's context. */
static __always_inline void fill_event(void *ctx, struct profile_event *e, __u32 tgid, __u32 tid)
{
	struct task_struct *task = (struct task_struct *)bpf_get_current_task();
	long n;

	e->pid = tgid;
	e->tid = tid;
	e->cpu = bpf_get_smp_processor_id();
	e->flags = 0;
	if (BPF_CORE_READ(task, flags) & PF_KTHREAD)
		e->flags |= PROFILE_F_KTHREAD;
	/* A kernel thread or an exiting task has no mm: the reads fail and leave 0. */
	e->img.start_code = BPF_CORE_READ(task, mm, start_code);
	e->img.end_code = BPF_CORE_READ(task, mm, end_code);
	e->img.start_brk = BPF_CORE_READ(task, mm, start_brk);
	bpf_get_current_comm(e->comm, sizeof(e->comm));

	if (e->kind == PROFILE_EV_OFFCPU) {
		/* Sent at switch-in (PROFILE_EV_OFFCPU_KSTACK): here it would be the exit path. */
		e->kstack_n = 0;
	} else {
		n = bpf_get_stack(ctx, e->kstack, sizeof(e->kstack), 0);
		if (n < 0)
			stat_inc(PROFILE_STAT_KSTACK_ERR);
		e->kstack_n = n < 0 ? (__s32)n : (__s32)(n / sizeof(__u64));
	}

	if (e->flags & PROFILE_F_KTHREAD) {
		e->ustack_n = 0;
		return;
	}
	n = bpf_get_stack(ctx, e->ustack, sizeof(e->ustack), BPF_F_USER_STACK);
	if (n < 0)
		stat_inc(PROFILE_STAT_USTACK_ERR);
	e->ustack_n = n < 0 ? (__s32)n : (__s32)(n / sizeof(__u64));
	if (e->ustack_n == PROFILE_MAX_FRAMES) {
		e->flags |= PROFILE_F_USTACK_TRUNCATED;
		stat_inc(PROFILE_STAT_USTACK_TRUNCATED);
	}
}

/*
 * No wakeup per event: that would cost a reader wakeup per sample and tie
 * the agent's running to the sampling ticks (so it would catch itself
 * more often than it runs). User space polls on its own clock (every
 * 100 ms); only a buffer filled past wakeup_bytes wakes it early.
 */
static __always_inline __u64 wakeup_flag(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ? BPF_RB_FORCE_WAKEUP
									     : BPF_RB_NO_WAKEUP;
}

/*
 * Reserve, fill and submit one sample event (@kind, @now, @value), with a
 * copy of the user stack when stack_copy is set. 0, or -1 when the ring
 * buffer had no room (the caller counts it).
 */
static __always_inline int emit_event(void *ctx, __u32 kind, __u32 tgid, __u32 tid, __u64 now,
				      __u64 value, __u64 aux)
{
	struct profile_event *e;

	if (stack_copy) {
		struct profile_event_ext *x = bpf_ringbuf_reserve(&events, sizeof(*x), 0);

		if (!x)
			return -1;
		x->ev.kind = kind;
		x->ev.time_ns = now;
		x->ev.value = value;
		x->ev.aux = aux;
		fill_event(ctx, &x->ev, tgid, tid);
		copy_user_stack(x);
		x->ev.flags |= PROFILE_F_STACK_COPY;
		bpf_ringbuf_submit(x, wakeup_flag());
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e)
		return -1;
	e->kind = kind;
	e->time_ns = now;
	e->value = value;
	e->aux = aux;
	fill_event(ctx, e, tgid, tid);
	bpf_ringbuf_submit(e, wakeup_flag());
	return 0;
}

/*
 * Processes running a known interpreter (struct profile_interp_proc, by
 * tgid), written by user space when it detects the runtime; sized by
 * user space before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct profile_interp_proc);
} interp_procs SEC(".maps");

/* The interpreter stack being gathered, per CPU (struct profile_interp_event). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct profile_interp_event);
} interp_scratch SEC(".maps");

/*
 * Send the interpreter stack gathered in @e (@n frames, walk result @err)
 * for the sample of @tid at @now: the record's head and its @n frames
 * only. Nothing when @n is 0.
 */
static __always_inline void interp_send(struct profile_interp_event *e, __u32 runtime, __u32 tid,
					__u64 now, __u32 n, __u32 err)
{
	__u64 size;

	if (err == PROFILE_IE_READ)
		stat_inc(PROFILE_STAT_INTERP_READ_ERR);
	else if (err == PROFILE_IE_BAD_OBJ)
		stat_inc(PROFILE_STAT_INTERP_BAD_OBJ);
	else if (err == PROFILE_IE_TOO_DEEP)
		stat_inc(PROFILE_STAT_INTERP_TOO_DEEP);
	if (!n || n > PROFILE_INTERP_MAX_FRAMES)
		return;
	e->kind = PROFILE_EV_INTERP;
	e->tid = tid;
	e->time_ns = now;
	e->runtime = runtime;
	e->n = n;
	e->err = err;
	e->pad = 0;
	size = offsetof(struct profile_interp_event, frames) +
	       (__u64)n * sizeof(struct profile_interp_frame);
	/* Keep the compiler from folding the bound the verifier must see. */
	barrier_var(size);
	if (size > sizeof(*e))
		return;
	if (bpf_ringbuf_output(&events, e, size, BPF_RB_NO_WAKEUP)) {
		stat_inc(PROFILE_STAT_INTERP_RINGBUF_FULL);
		return;
	}
	stat_inc(PROFILE_STAT_INTERP_EVENTS);
}

/*
 * Processes that publish a trace context (struct profile_ctx_proc, by
 * tgid), written by user space when it finds a Go runtime or the
 * OpenTelemetry thread-context symbol; sized by user space before load.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct profile_ctx_proc);
} ctx_procs SEC(".maps");

/* Go string header (runtime.stringStruct) and pprof label pairs (runtime/pprof label). */
struct go_str {
	__u64 ptr, len;
};
struct go_label {
	struct go_str key, val;
};

/* hmap (runtime/map.go, Go <= 1.23): count, B, buckets; a bucket of map[string]string. */
#define GO_HMAP_B	   9
#define GO_HMAP_BUCKETS	   16
#define GO_BUCKET_SLOTS	   8
#define GO_BUCKET_KEYS	   8
#define GO_BUCKET_VALS	   (8 + 8 * 16)
#define GO_BUCKET_SIZE	   (8 + 8 * 32 + 8)
#define GO_TOPHASH_MIN	   5 /* tophash below this: an empty or evacuated slot */
#define GO_MAP_MAX_BUCKETS 2 /* B <= 1: up to 16 slots read */

/* Copy one label (its key and value heads) into @l; 0 or -1. */
static __always_inline int ctx_label_copy(struct profile_ctx_label *l, const struct go_label *gl)
{
	__u32 kl, vl;

	l->klen = gl->key.len > 255 ? 255 : (__u8)gl->key.len;
	l->vlen = gl->val.len > 255 ? 255 : (__u8)gl->val.len;
	kl = gl->key.len > PROFILE_CTX_KEY ? PROFILE_CTX_KEY : (__u32)gl->key.len;
	vl = gl->val.len > PROFILE_CTX_VAL ? PROFILE_CTX_VAL : (__u32)gl->val.len;
	barrier_var(kl);
	barrier_var(vl);
	if (kl > PROFILE_CTX_KEY || vl > PROFILE_CTX_VAL)
		return -1;
	if (bpf_probe_read_user(l->key, kl, (void *)gl->key.ptr) ||
	    bpf_probe_read_user(l->val, vl, (void *)gl->val.ptr))
		return -1;
	return 0;
}

/* Copy one label into slot @i of @e; 0 or -1. */
static __always_inline int ctx_label_put(struct profile_ctx_event *e, __u32 i,
					 const struct go_label *gl)
{
	if (i >= PROFILE_CTX_LABELS)
		return -1;
	return ctx_label_copy(&e->labels[i], gl);
}

/*
 * The search for the labels trace_id and span_id among all of a
 * goroutine's labels (ctx_id_step), when there are more than the first
 * PROFILE_CTX_LABELS read in order: a slice is sorted by key, so a few
 * labels named before "span_id" would push the link out; a map spreads
 * its labels over its buckets by hash.
 */
struct ctx_id_scan {
	__u64 list;		   /* slice: the label array; map: its buckets */
	__u64 len;		   /* slice: labels in it */
	__u64 old;		   /* map: its old buckets while it grows, 0 = none */
	__u32 nb, nold;		   /* map: buckets and old buckets searched */
	bool map;		   /* a map (Go <= 1.23), else a slice */
	__u8 found;		   /* bit 0: @trace, bit 1: @span */
	__u8 top[GO_BUCKET_SLOTS]; /* the tophash bytes of the bucket being searched */
	struct go_label trace, span;
};

#define GO_HMAP_FLAGS	       8
#define GO_HMAP_OLDBUCKETS     24
#define GO_HMAP_SAME_SIZE_GROW 8 /* hmap.flags: oldbuckets has as many buckets as buckets */
#define GO_ID_SCAN_BUCKETS     8 /* buckets (and old buckets) searched: B <= 3 whole */
#define GO_KEY_TRACE_ID	       0x64695f6563617274ull /* "trace_id", little-endian */
#define GO_KEY_SPAN_ID	       0x0064695f6e617073ull /* "span_id" */

/* One bpf_loop step: label @i of the search @ctx; 1 stops it (both found, or the end). */
static long ctx_id_step(__u64 i, void *ctx)
{
	struct ctx_id_scan *w = ctx;
	struct go_label gl;
	__u64 key = 0;
	bool span;

	if (!w->map) {
		if (i >= w->len ||
		    bpf_probe_read_user(&gl, sizeof(gl), (void *)(w->list + i * sizeof(gl))))
			return 1;
	} else {
		__u64 b = i / GO_BUCKET_SLOTS, j = i % GO_BUCKET_SLOTS, bk;

		if (b < w->nb)
			bk = w->list + b * GO_BUCKET_SIZE;
		else if (b - w->nb < w->nold)
			bk = w->old + (b - w->nb) * GO_BUCKET_SIZE;
		else
			return 1;
		if (j == 0 && bpf_probe_read_user(w->top, sizeof(w->top), (void *)bk))
			return 1;
		/* Below GO_TOPHASH_MIN: empty, or evacuated to the new buckets. */
		if (w->top[j & (GO_BUCKET_SLOTS - 1)] < GO_TOPHASH_MIN)
			return 0;
		if (bpf_probe_read_user(&gl.key, sizeof(gl.key),
					(void *)(bk + GO_BUCKET_KEYS + j * 16)) ||
		    bpf_probe_read_user(&gl.val, sizeof(gl.val),
					(void *)(bk + GO_BUCKET_VALS + j * 16)))
			return 1;
	}
	if (gl.key.len != 7 && gl.key.len != 8)
		return 0;
	span = gl.key.len == 7;
	if (bpf_probe_read_user(&key, span ? 7 : 8, (void *)gl.key.ptr))
		return 0;
	if (span && key == GO_KEY_SPAN_ID) {
		w->span = gl;
		w->found |= 2;
	} else if (!span && key == GO_KEY_TRACE_ID) {
		w->trace = gl;
		w->found |= 1;
	}
	return w->found == 3;
}

/* Search the labels of @w for trace_id and span_id into @e->ids. */
static __always_inline void ctx_go_ids(struct profile_ctx_event *e, struct ctx_id_scan *w)
{
	w->found = 0;
	bpf_loop(w->map ? GO_ID_SCAN_BUCKETS * GO_BUCKET_SLOTS * 2 : PROFILE_CTX_ID_SCAN,
		 ctx_id_step, w, 0);
	e->ids[0].klen = 0;
	e->ids[1].klen = 0;
	if (((w->found & 1) && ctx_label_copy(&e->ids[0], &w->trace)) ||
	    ((w->found & 2) && ctx_label_copy(&e->ids[1], &w->span))) {
		stat_inc(PROFILE_STAT_CTX_READ_ERR);
		return;
	}
	e->flags |= PROFILE_CTXF_GO_IDS;
}

/* The labels of the slice (Go 1.24+) at @list: {ptr, len, cap} of label pairs. */
static __always_inline int ctx_go_slice(struct profile_ctx_event *e, __u64 list,
					struct ctx_id_scan *w)
{
	struct go_str sl;
	__u32 n = 0;

	if (bpf_probe_read_user(&sl, sizeof(sl), (void *)list))
		return -1;
	w->map = false;
	w->list = sl.ptr;
	w->len = sl.len;
	for (int i = 0; i < PROFILE_CTX_LABELS; i++) {
		struct go_label gl;

		if ((__u64)i >= sl.len)
			break;
		if (bpf_probe_read_user(&gl, sizeof(gl),
					(void *)(sl.ptr + (__u64)i * sizeof(gl))) ||
		    ctx_label_put(e, n, &gl))
			return -1;
		n++;
	}
	e->n = n;
	if (sl.len > PROFILE_CTX_LABELS) {
		e->flags |= PROFILE_CTXF_GO_MORE;
		ctx_go_ids(e, w);
	}
	return 0;
}

/*
 * The labels of the map (Go <= 1.23) whose hmap pointer is at @mp: slot
 * j of bucket k goes to label k * 8 + j, an empty slot stays empty (klen
 * 0), so where a label lands never depends on which slots before it were
 * used (that kept the verifier's states apart: 40 times the instructions
 * to check). Bucket 0 whole and the first two slots of bucket 1 (B = 1,
 * 9 to 16 labels): PROFILE_CTX_LABELS slots in all.
 */
static __always_inline int ctx_go_map(struct profile_ctx_event *e, __u64 mp, struct ctx_id_scan *w)
{
	__u64 hmap = 0, buckets = 0, count = 0, old = 0;
	__u8 b = 0, flags = 0, top[GO_BUCKET_SLOTS * GO_MAP_MAX_BUCKETS];

	if (bpf_probe_read_user(&hmap, sizeof(hmap), (void *)mp) || !hmap ||
	    bpf_probe_read_user(&count, sizeof(count), (void *)hmap) ||
	    bpf_probe_read_user(&flags, sizeof(flags), (void *)(hmap + GO_HMAP_FLAGS)) ||
	    bpf_probe_read_user(&b, sizeof(b), (void *)(hmap + GO_HMAP_B)) ||
	    bpf_probe_read_user(&buckets, sizeof(buckets), (void *)(hmap + GO_HMAP_BUCKETS)) ||
	    bpf_probe_read_user(&old, sizeof(old), (void *)(hmap + GO_HMAP_OLDBUCKETS)))
		return -1;
	if (!buckets || !count)
		return 0;
	w->map = true;
	w->list = buckets;
	w->nb = b >= 3 ? GO_ID_SCAN_BUCKETS : 1u << b;
	w->old = old;
	w->nold = !old ? 0 : (flags & GO_HMAP_SAME_SIZE_GROW) ? w->nb : b ? w->nb / 2 : 0;
	__builtin_memset(top, 0, sizeof(top));
	if (bpf_probe_read_user(top, GO_BUCKET_SLOTS, (void *)buckets) ||
	    (b >= 1 && bpf_probe_read_user(top + GO_BUCKET_SLOTS, GO_BUCKET_SLOTS,
					   (void *)(buckets + GO_BUCKET_SIZE))))
		return -1;
	for (int i = 0; i < PROFILE_CTX_LABELS; i++) {
		__u64 bk = buckets + (i >= GO_BUCKET_SLOTS ? GO_BUCKET_SIZE : 0);
		int j = i % GO_BUCKET_SLOTS;
		struct go_label gl;

		e->labels[i].klen = 0;
		if (top[i] < GO_TOPHASH_MIN)
			continue;
		if (bpf_probe_read_user(&gl.key, sizeof(gl.key),
					(void *)(bk + GO_BUCKET_KEYS + j * 16)) ||
		    bpf_probe_read_user(&gl.val, sizeof(gl.val),
					(void *)(bk + GO_BUCKET_VALS + j * 16)) ||
		    ctx_label_put(e, i, &gl))
			return -1;
	}
	e->n = PROFILE_CTX_LABELS;
	if (b > 1 || count > PROFILE_CTX_LABELS)
		e->flags |= PROFILE_CTXF_GO_MORE;
	/* Beyond bucket 0 whole and two slots of bucket 1 the link may be anywhere. */
	if (b >= 1 || old)
		ctx_go_ids(e, w);
	return 0;
}

/*
 * The address of the thread's otel_thread_ctx_v1 (thread pointer @fs):
 * TP + offset for static TLS, else through the DTV (PROFILE_CTX_OTEL_DTV
 * in bpf/profile.h); 0 when the thread has no block for the module yet
 * (a dlopen'd library's block is allocated at the thread's first use).
 */
static __always_inline __u64 ctx_otel_at(const struct profile_ctx_proc *cp, __u64 fs)
{
	__u64 dtv = 0, len = 0, blk = 0;

	if (!(cp->flags & PROFILE_CTX_OTEL_DTV))
		return fs + cp->otel_tls_off;
	if (bpf_probe_read_user(&dtv, sizeof(dtv), (void *)(fs + 8)) || dtv < 16 ||
	    bpf_probe_read_user(&len, sizeof(len), (void *)(dtv - 16)) || cp->otel_mod > len ||
	    bpf_probe_read_user(&blk, sizeof(blk), (void *)(dtv + 16 * (__u64)cp->otel_mod)) ||
	    !blk || blk == (__u64)-1)
		return 0;
	return blk + cp->otel_tls_off;
}

/*
 * Send the current thread's trace context for the sample of @tid at
 * @now, when process @tgid is registered in ctx_procs and the thread has
 * one: the running goroutine's pprof labels (TLS g -> m -> curg ->
 * labels; m.curg is the user goroutine even while the thread runs on
 * its g0 or signal stack) and the OpenTelemetry thread-context record
 * (TLS otel_thread_ctx_v1 -> {trace_id, span_id, valid}). The thread is
 * stopped in the kernel while this runs (a tick, a syscall's return),
 * so a record is read whole: the writer's "valid last" order matters
 * only for a reader on another CPU.
 */
static __always_inline void ctx_send(__u32 tgid, __u32 tid, __u64 now)
{
	struct profile_ctx_proc *cp = bpf_map_lookup_elem(&ctx_procs, &tgid);
	struct task_struct *task;
	struct profile_ctx_event *e;
	__u64 fs, p = 0, g = 0, m = 0;
	struct ctx_id_scan w = {};
	bool any = false;

	if (!cp)
		return;
	task = bpf_get_current_task_btf();
	fs = BPF_CORE_READ(task, thread.fsbase);
	if (!fs) {
		stat_inc(PROFILE_STAT_CTX_NONE);
		return;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(PROFILE_STAT_CTX_RINGBUF_FULL);
		return;
	}
	e->kind = PROFILE_EV_CTX;
	e->tid = tid;
	e->time_ns = now;
	e->flags = 0;
	e->n = 0;
	if (cp->flags & PROFILE_CTX_OTEL) {
		__u8 valid = 0;

		__u64 at = ctx_otel_at(cp, fs);

		if (at && !bpf_probe_read_user(&p, sizeof(p), (void *)at) && p &&
		    !bpf_probe_read_user(&valid, sizeof(valid), (void *)(p + 24)) && valid == 1 &&
		    !bpf_probe_read_user(e->trace_id, sizeof(e->trace_id), (void *)p) &&
		    !bpf_probe_read_user(e->span_id, sizeof(e->span_id), (void *)(p + 16))) {
			e->flags |= PROFILE_CTXF_OTEL;
			any = true;
		}
	}
	if ((cp->flags & PROFILE_CTX_GO) &&
	    !bpf_probe_read_user(&g, sizeof(g), (void *)(fs + cp->go_tls_off)) && g &&
	    !bpf_probe_read_user(&m, sizeof(m), (void *)(g + cp->go_m)) && m &&
	    !bpf_probe_read_user(&g, sizeof(g), (void *)(m + cp->go_curg)) && g &&
	    !bpf_probe_read_user(&p, sizeof(p), (void *)(g + cp->go_labels)) && p) {
		int rc = (cp->flags & PROFILE_CTX_GO_MAP) ? ctx_go_map(e, p, &w)
							  : ctx_go_slice(e, p, &w);

		if (rc)
			stat_inc(PROFILE_STAT_CTX_READ_ERR);
		if (!rc && e->n) {
			e->flags |= PROFILE_CTXF_GO_LABELS;
			any = true;
		}
	}
	if (!any) {
		bpf_ringbuf_discard(e, BPF_RB_NO_WAKEUP);
		stat_inc(PROFILE_STAT_CTX_NONE);
		return;
	}
	bpf_ringbuf_submit(e, BPF_RB_NO_WAKEUP);
	stat_inc(PROFILE_STAT_CTX_EVENTS);
}

#include "python.bpf.h"
#include "ruby.bpf.h"
#include "php.bpf.h"

/* The sample event itself (after any interpreter event stamped @now). */
static __always_inline int sample_emit(void *ctx, __u32 tgid, __u32 tid, __u64 now)
{
	ctx_send(tgid, tid, now);
	if (emit_event(ctx, PROFILE_EV_CPU, tgid, tid, now, 0, 0)) {
		stat_inc(PROFILE_STAT_RINGBUF_FULL);
		return 0;
	}
	stat_inc(PROFILE_STAT_SAMPLES);
	return 0;
}

/*
 * The runtimes' programs, reached by tail call from profile_sample with
 * its context: each sends the interpreter's frames, then the sample.
 */
SEC("perf_event")
int profile_python(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct profile_interp_proc *ip = bpf_map_lookup_elem(&interp_procs, &tgid);

	if (ip && ip->runtime == PROFILE_RT_PYTHON)
		python_walk(ip, tgid, tid, now);
	return sample_emit(ctx, tgid, tid, now);
}

SEC("perf_event")
int profile_ruby(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct profile_interp_proc *ip = bpf_map_lookup_elem(&interp_procs, &tgid);

	if (ip && ip->runtime == PROFILE_RT_RUBY)
		ruby_walk(ip, tgid, tid, now);
	return sample_emit(ctx, tgid, tid, now);
}

SEC("perf_event")
int profile_php(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid(), now = bpf_ktime_get_ns();
	__u32 tgid = id >> 32, tid = (__u32)id;
	struct profile_interp_proc *ip = bpf_map_lookup_elem(&interp_procs, &tgid);

	if (ip && ip->runtime == PROFILE_RT_PHP)
		php_walk(ip, tgid, tid, now);
	return sample_emit(ctx, tgid, tid, now);
}

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, PROFILE_RT_MAX);
	__type(key, __u32);
	__array(values, int(void *));
} interp_progs SEC(".maps") = {
	.values = {
		[PROFILE_RT_PYTHON] = (void *)&profile_python,
		[PROFILE_RT_RUBY] = (void *)&profile_ruby,
		[PROFILE_RT_PHP] = (void *)&profile_php,
	},
};

SEC("perf_event")
int profile_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;
	struct profile_interp_proc *ip;

	if (tid == 0) {
		stat_inc(PROFILE_STAT_IDLE);
		return 0;
	}
	if (tgid == agent_tgid) {
		stat_inc(PROFILE_STAT_SELF);
		return 0;
	}
	if (!task_allowed(bpf_get_current_task_btf(), tgid)) {
		stat_inc(PROFILE_STAT_FILTERED);
		return 0;
	}
	ip = bpf_map_lookup_elem(&interp_procs, &tgid);
	if (ip && !(BPF_CORE_READ(bpf_get_current_task_btf(), flags) & PF_KTHREAD)) {
		bpf_tail_call(ctx, &interp_progs, ip->runtime);
		stat_inc(PROFILE_STAT_INTERP_TAILCALL_ERR);
	}
	return sample_emit(ctx, tgid, tid, bpf_ktime_get_ns());
}

/* The task's state word (__state since 5.14, state before). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return (unsigned int)BPF_CORE_READ((struct task_struct___pre514 *)t, state);
}

/*
 * sched_switch, both sides. @next coming back after long enough: record
 * the time away for profile_sys_exit and send @next's kernel stack now
 * (it is still the one it blocked in; its user stack can only be read
 * from inside it). @prev leaving to sleep in a syscall: remember when
 * and which syscall.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(profile_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u32 tid = prev->pid, tgid = prev->tgid, ntid = next->pid;
	struct offcpu_rec *r, rec = { 0 };
	__u64 now = bpf_ktime_get_ns();
	struct pt_regs *regs;

	if (ntid && (r = bpf_map_lookup_elem(&offcpu_start, &ntid)) && r->start_ns) {
		__u64 delta = now - r->start_ns;

		if (delta < offcpu_min_ns) {
			bpf_map_delete_elem(&offcpu_start, &ntid);
			stat_inc(PROFILE_STAT_OFFCPU_SHORT);
		} else {
			struct profile_kstack_event *k;

			r->delta_ns = delta;
			r->in_ns = now;
			r->start_ns = 0;
			k = bpf_ringbuf_reserve(&events, sizeof(*k), 0);
			if (k) {
				long n = bpf_get_task_stack(next, k->kstack, sizeof(k->kstack), 0);

				k->kind = PROFILE_EV_OFFCPU_KSTACK;
				k->tid = ntid;
				k->in_ns = now;
				k->kstack_n = n < 0 ? (__s32)n : (__s32)(n / sizeof(__u64));
				k->pad = 0;
				bpf_ringbuf_submit(k, wakeup_flag());
			} else {
				stat_inc(PROFILE_STAT_OFFCPU_KSTACK_LOST);
			}
		}
	}

	if (tid == 0) {
		stat_inc(PROFILE_STAT_OFFCPU_SKIP_IDLE);
		return 0;
	}
	if (tgid == agent_tgid) {
		stat_inc(PROFILE_STAT_OFFCPU_SKIP_SELF);
		return 0;
	}
	if (prev->flags & PF_KTHREAD) {
		stat_inc(PROFILE_STAT_OFFCPU_SKIP_KTHREAD);
		return 0;
	}
	if (prev->flags & PF_EXITING) {
		stat_inc(PROFILE_STAT_OFFCPU_SKIP_EXITING);
		return 0;
	}
	if (task_state(prev) == 0) {
		/* TASK_RUNNING: preempted, waiting for a CPU, not blocked. */
		stat_inc(PROFILE_STAT_OFFCPU_SKIP_PREEMPTED);
		return 0;
	}
	/* sched_switch runs in @prev: the current-task helpers describe it. */
	if (!task_allowed(prev, tgid)) {
		stat_inc(PROFILE_STAT_OFFCPU_FILTERED);
		return 0;
	}
	regs = (struct pt_regs *)bpf_task_pt_regs(prev);
	rec.start_ns = now;
	rec.nr = BPF_CORE_READ(regs, orig_ax);
	if (bpf_map_update_elem(&offcpu_start, &tid, &rec, BPF_ANY))
		stat_inc(PROFILE_STAT_OFFCPU_MAP_FULL);
	return 0;
}

/*
 * A syscall returns: if this thread slept in it for long enough, send the
 * time away with its user stack, which has not changed since it went to
 * sleep. (Tracepoints only: kprobes, which the OpenTelemetry profiler
 * uses on finish_task_switch, and fexit are not available on every
 * kernel; this hook costs one hash lookup per syscall while --off-cpu is
 * on.) Sleeps outside syscalls (page faults) are not reported: their
 * record is overwritten at the next switch-out or found stale here.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(profile_sys_exit, struct pt_regs *regs, long ret)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	__u32 tid = (__u32)id;
	struct offcpu_rec *r;
	__u64 now, delta, in_ns;

	r = bpf_map_lookup_elem(&offcpu_start, &tid);
	if (!r || !r->in_ns) {
		stat_inc(PROFILE_STAT_OFFCPU_UNTRACKED);
		return 0;
	}
	now = bpf_ktime_get_ns();
	delta = r->delta_ns;
	in_ns = r->in_ns;
	if (r->nr != BPF_CORE_READ(regs, orig_ax) || now - in_ns > OFFCPU_STALE_NS) {
		/* Not the syscall it slept in (it slept in a page fault, say). */
		bpf_map_delete_elem(&offcpu_start, &tid);
		stat_inc(PROFILE_STAT_OFFCPU_STALE);
		return 0;
	}
	bpf_map_delete_elem(&offcpu_start, &tid);
	/*
	 * The context the thread blocked with: it has run no user code since
	 * its switch-out (it is still in the syscall it slept in), so reading
	 * its TLS here gives what a read at the switch-out would have.
	 */
	ctx_send(tgid, tid, now);
	if (emit_event(ctx, PROFILE_EV_OFFCPU, tgid, tid, now, delta, in_ns)) {
		stat_inc(PROFILE_STAT_OFFCPU_RINGBUF_FULL);
		return 0;
	}
	stat_inc(PROFILE_STAT_OFFCPU_SAMPLES);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(profile_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 tgid = p->tgid;
	struct profile_proc_event *pe;

	if (tgid == agent_tgid) {
		stat_inc(PROFILE_STAT_PROC_SELF);
		return 0;
	}
	/* A new executable: decide again. */
	bpf_map_delete_elem(&verdicts, &tgid);
	if (!task_allowed(p, tgid)) {
		stat_inc(PROFILE_STAT_PROC_FILTERED);
		return 0;
	}
	pe = bpf_ringbuf_reserve(&events, sizeof(*pe), 0);
	if (!pe) {
		stat_inc(PROFILE_STAT_PROC_RINGBUF_FULL);
		return 0;
	}
	pe->kind = PROFILE_EV_EXEC;
	pe->pid = tgid;
	pe->time_ns = bpf_ktime_get_ns();
	pe->img.start_code = BPF_CORE_READ(p, mm, start_code);
	pe->img.end_code = BPF_CORE_READ(p, mm, end_code);
	pe->img.start_brk = BPF_CORE_READ(p, mm, start_brk);
	/* A relative filename is resolved in the parent's directory and checked against these. */
	pe->exe_ino = BPF_CORE_READ(bprm, file, f_inode, i_ino);
	pe->exe_dev = BPF_CORE_READ(bprm, file, f_inode, i_sb, s_dev);
	pe->ppid = BPF_CORE_READ(p, real_parent, tgid);
	pe->mnt_ns = BPF_CORE_READ(p, nsproxy, mnt_ns, ns.inum);
	pe->pad = 0;
	bpf_get_current_comm(pe->comm, sizeof(pe->comm));
	if (bpf_probe_read_kernel_str(pe->filename, sizeof(pe->filename), bprm->filename) < 0)
		pe->filename[0] = '\0';
	/* Wake the reader now: it must read /proc/PID before a short process is gone. */
	bpf_ringbuf_submit(pe, BPF_RB_FORCE_WAKEUP);
	stat_inc(PROFILE_STAT_PROC_EVENTS);
	return 0;
}

/*
 * A new process (not a thread) inherits its parent's executable verdict
 * for its own address space: a child that never execs runs the parent's
 * image, and one that exits before it is ever sampled still tears its
 * memory down after exit_mm, when its executable can no longer be read
 * (brk8: 40 forked children of an excluded program leaked 370 ticks).
 * Only with executable rules.
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(profile_fork, struct task_struct *parent, struct task_struct *child)
{
	struct profile_exe_verdict nv = { 0 };
	__u32 ptgid = parent->tgid, ctgid = child->tgid;

	if (!(filter_flags & (PROFILE_FILTER_INCLUDE_EXE | PROFILE_FILTER_EXCLUDE_EXE)) ||
	    ctgid == ptgid || (BPF_CORE_READ(child, flags) & PF_KTHREAD))
		return 0;
	nv.verdict = exe_verdict(parent, ptgid);
	nv.mm = (__u64)BPF_CORE_READ(child, mm);
	if (bpf_map_update_elem(&verdicts, &ctgid, &nv, BPF_ANY))
		stat_inc(PROFILE_STAT_VERDICT_UPDATE_ERR);
	return 0;
}

/*
 * A thread exits. The process is gone when its last thread goes, which
 * need not be the main one (a main thread may pthread_exit first): do_exit
 * has decremented signal->live before this tracepoint on every kernel.
 * The last thread still runs a while after it (exit_mm tears down the
 * address space, on newer kernels after this point), so the executable
 * verdict is kept, marked with mm 0: an exiting task has no mm and must
 * still be excluded when its executable is (struct profile_exe_verdict).
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(profile_exit, struct task_struct *p)
{
	__u32 tid = p->pid, tgid = p->tgid;
	struct profile_exe_verdict *v;
	struct profile_proc_event *pe;

	bpf_map_delete_elem(&offcpu_start, &tid);
	if (BPF_CORE_READ(p, signal, live.counter) > 0) {
		stat_inc(PROFILE_STAT_THREAD_EXIT);
		return 0;
	}
	if (tgid == agent_tgid) {
		stat_inc(PROFILE_STAT_PROC_SELF);
		return 0;
	}
	v = bpf_map_lookup_elem(&verdicts, &tgid);
	if (v)
		v->mm = 0;
	pe = bpf_ringbuf_reserve(&events, sizeof(*pe), 0);
	if (!pe) {
		stat_inc(PROFILE_STAT_PROC_RINGBUF_FULL);
		return 0;
	}
	pe->kind = PROFILE_EV_EXIT;
	pe->pid = tgid;
	pe->time_ns = bpf_ktime_get_ns();
	__builtin_memset(&pe->img, 0, sizeof(pe->img));
	pe->exe_ino = 0;
	pe->exe_dev = 0;
	pe->ppid = 0;
	pe->mnt_ns = 0;
	pe->pad = 0;
	bpf_get_current_comm(pe->comm, sizeof(pe->comm));
	pe->filename[0] = '\0';
	bpf_ringbuf_submit(pe, wakeup_flag());
	stat_inc(PROFILE_STAT_PROC_EVENTS);
	return 0;
}

/* glibc's r_debug and the public head of struct link_map (<link.h>). */
#define RDEBUG_R_MAP   8
#define RDEBUG_R_STATE 24
#define RT_CONSISTENT  0
#define LM_L_ADDR      0
#define LM_L_NAME      8
#define LM_L_NEXT      24

SEC("uprobe")
int profile_libs(struct pt_regs *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 tgid = id >> 32;
	struct profile_libs_event *e;
	__u64 rdebug = 0, lm = 0;
	int version = 0, state = -1;

	if (tgid == agent_tgid) {
		stat_inc(PROFILE_STAT_PROC_SELF);
		return 0;
	}
	if (!task_allowed(bpf_get_current_task_btf(), tgid)) {
		stat_inc(PROFILE_STAT_LIBS_FILTERED);
		return 0;
	}
	/* The probe address is _dl_debug_state (or one past its int3): find r_debug. */
	for (int back = 0; back < 2; back++) {
		__u64 cand = PT_REGS_IP(ctx) - back + rdebug_off;

		if (!bpf_probe_read_user(&version, sizeof(version), (void *)cand) && version >= 1 &&
		    version <= 2) {
			rdebug = cand;
			break;
		}
	}
	if (!rdebug ||
	    bpf_probe_read_user(&state, sizeof(state), (void *)(rdebug + RDEBUG_R_STATE)) ||
	    bpf_probe_read_user(&lm, sizeof(lm), (void *)(rdebug + RDEBUG_R_MAP))) {
		stat_inc(PROFILE_STAT_LIBS_READ_ERR);
		return 0;
	}
	if (state != RT_CONSISTENT) {
		stat_inc(PROFILE_STAT_LIBS_NOT_READY);
		return 0;
	}
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);
	if (!e) {
		stat_inc(PROFILE_STAT_LIBS_RINGBUF_FULL);
		return 0;
	}
	e->kind = PROFILE_EV_LIBS;
	e->pid = tgid;
	e->time_ns = bpf_ktime_get_ns();
	e->n = 0;
	e->pad = 0;
	for (int i = 0; i < PROFILE_MAX_LIBS; i++) {
		__u64 name = 0;

		if (!lm)
			break;
		if (bpf_probe_read_user(&e->libs[i].l_addr, sizeof(__u64),
					(void *)(lm + LM_L_ADDR)) ||
		    bpf_probe_read_user(&name, sizeof(name), (void *)(lm + LM_L_NAME)))
			break;
		e->libs[i].name[0] = '\0';
		if (name && bpf_probe_read_user_str(e->libs[i].name, sizeof(e->libs[i].name),
						    (void *)name) < 0)
			e->libs[i].name[0] = '\0';
		e->n = i + 1;
		if (bpf_probe_read_user(&lm, sizeof(lm), (void *)(lm + LM_L_NEXT)))
			break;
	}
	bpf_ringbuf_submit(e, wakeup_flag());
	stat_inc(PROFILE_STAT_LIBS_EVENTS);
	return 0;
}
