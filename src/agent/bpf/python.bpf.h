/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * python.bpf.h - the CPython walker, included by profile.bpf.c: finds the
 * sampled thread's PyThreadState and walks its _PyInterpreterFrame list
 * (leaf first), sending per frame the code object's address, the index
 * of the instruction it is at (code units since co_code_adaptive) and a
 * check value (PY_CODE_CHECK) read from the code object.
 *
 * The thread state is found without TLS: the main interpreter's thread
 * list is walked for the state whose native_thread_id is the thread's id
 * in its own pid namespace (what py-spy does from outside the process),
 * and cached per thread in an LRU map, checked again on every use (a
 * state freed and reused holds another id). So it works for threads that
 * released the GIL (a C extension computing) and needs no pthread key.
 *
 * Activations: each call of _PyEval_EvalFrameDefault runs frames up to
 * an entry frame, marked PROFILE_IF_ENTRY: 3.11 has is_entry in the
 * frame; 3.12 pushes a shim frame owned by the C stack below the
 * activation's first frame, which is not sent. User space uses the marks
 * to put each run of frames in place of its interpreter-loop native
 * frame (interp.h).
 *
 * Facts (offsets per version, the entry rules) from docs/runtimes.md,
 * after the OpenTelemetry eBPF profiler (support/ebpf/python_tracer.ebpf.c)
 * and py-spy.
 */
#ifndef PROF_AGENT_BPF_PYTHON_BPF_H
#define PROF_AGENT_BPF_PYTHON_BPF_H

#define PY_MAX_THREADS 64 /* thread states tried per uncached thread */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 16384);
	__type(key, __u64);   /* tgid << 32 | tid */
	__type(value, __u64); /* PyThreadState * */
} py_tstate SEC(".maps");

static __always_inline int py_read_u64(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr);
}

/* The id the process sees for the current thread (gettid() in its pid namespace). */
static __always_inline __u32 ns_tid(void)
{
	struct task_struct *t = bpf_get_current_task_btf();
	struct pid *p = BPF_CORE_READ(t, thread_pid);
	unsigned int level = BPF_CORE_READ(p, level);
	struct upid up = { 0 };

	if (level > 31)
		return 0;
	bpf_probe_read_kernel(&up, sizeof(up), &p->numbers[level]);
	return (__u32)up.nr;
}

static __always_inline __u64 py_tstate_find(const struct profile_interp_proc *ip, __u32 tgid,
					    __u32 tid)
{
	__u64 key = ((__u64)tgid << 32) | tid, interp = 0, ts = 0, got = 0, *cached;
	__u32 me = ns_tid();

	cached = bpf_map_lookup_elem(&py_tstate, &key);
	if (cached && *cached && !py_read_u64(&got, *cached + ip->off[PY_O_TS_TID]) && got == me)
		return *cached;
	if (py_read_u64(&interp, ip->addr[PY_A_INTERP]) || !interp ||
	    py_read_u64(&ts, interp + ip->off[PY_O_TS_HEAD]))
		return 0;
	for (int i = 0; i < PY_MAX_THREADS && ts; i++) {
		if (py_read_u64(&got, ts + ip->off[PY_O_TS_TID]))
			return 0;
		if (got == me) {
			bpf_map_update_elem(&py_tstate, &key, &ts, BPF_ANY);
			return ts;
		}
		if (py_read_u64(&ts, ts + ip->off[PY_O_TS_NEXT]))
			return 0;
	}
	return 0;
}

/* PY_STR_CHECK of the str object at @str (0 when it cannot be read). */
static __always_inline __u32 py_str_check(const struct profile_interp_proc *ip, __u64 str)
{
	__u64 len = 0, head = 0, tail = 0, data = str + ip->off[PY_O_STR_DATA];

	if (!str || py_read_u64(&len, str + PY_STR_LENGTH) || len > (1u << 20))
		return 0;
	if (len && py_read_u64(&head, data))
		return 0;
	if (len < 8)
		head &= (1ULL << ((len & 7) * 8)) - 1;
	else if (py_read_u64(&tail, data + len - 8))
		return 0;
	return PY_STR_CHECK(len, head, tail);
}

struct py_walk {
	struct profile_interp_proc p;
	__u64 frame;
	__u32 n, err;
	bool shim;
};

/* One bpf_loop step: frame @w->frame into the per-CPU record; 1 stops the walk. */
static long py_walk_step(__u64 index, void *ctx)
{
	struct py_walk *w = ctx;
	const struct profile_interp_proc *ip = &w->p;
	__u64 code = 0, prev = 0, instr = 0, type = 0, first, frame = w->frame;
	__s32 firstline = 0, argcount = 0, flags = 0;
	__u64 qual = 0, file = 0;
	struct profile_interp_event *e;
	struct profile_interp_frame *f;
	__u8 entry = 0, owner = 0;
	__u32 zero = 0, n = w->n;

	if (!frame)
		return 1;
	e = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!e)
		return 1;
	if (py_read_u64(&code, frame + ip->off[PY_O_FR_CODE]) ||
	    py_read_u64(&prev, frame + ip->off[PY_O_FR_PREV]) ||
	    py_read_u64(&instr, frame + ip->off[PY_O_FR_INSTR]) ||
	    bpf_probe_read_user(&owner, 1, (const void *)(frame + ip->off[PY_O_FR_OWNER]))) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	if (w->shim && owner == PY_OWNER_CSTACK) {
		if (n > 0 && n <= PROFILE_INTERP_MAX_FRAMES)
			e->frames[n - 1].flags |= PROFILE_IF_ENTRY;
		w->frame = prev;
		return 0;
	}
	if (!w->shim &&
	    bpf_probe_read_user(&entry, 1, (const void *)(frame + ip->off[PY_O_FR_ENTRY]))) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	if (py_read_u64(&type, code + 8)) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	if (type != ip->addr[PY_A_CODE_TYPE]) {
		w->err = PROFILE_IE_BAD_OBJ;
		return 1;
	}
	if (bpf_probe_read_user(&firstline, 4, (const void *)(code + ip->off[PY_O_CO_FIRSTLINE])) ||
	    bpf_probe_read_user(&argcount, 4, (const void *)(code + ip->off[PY_O_CO_ARGCOUNT])) ||
	    bpf_probe_read_user(&flags, 4, (const void *)(code + ip->off[PY_O_CO_FLAGS])) ||
	    py_read_u64(&qual, code + ip->off[PY_O_CO_QUALNAME]) ||
	    py_read_u64(&file, code + ip->off[PY_O_CO_FILENAME])) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	if (n >= PROFILE_INTERP_MAX_FRAMES) {
		w->err = PROFILE_IE_TOO_DEEP;
		return 1;
	}
	f = &e->frames[n];
	first = code + ip->off[PY_O_CO_ADAPTIVE];
	f->addr = code;
	f->aux = instr >= first ? (instr - first) / 2 : 0;
	f->check = PY_CODE_CHECK(firstline, argcount, flags) ^ py_str_check(ip, qual) ^
		   (py_str_check(ip, file) * 3);
	f->obj2 = 0;
	f->flags = (!w->shim && entry) ? PROFILE_IF_ENTRY : 0;
	w->n = n + 1;
	w->frame = prev;
	return 0;
}

/*
 * Send the Python frames of the current thread (tgid/tid) as a
 * PROFILE_EV_INTERP event stamped @now; nothing when the thread has no
 * Python state or runs no Python code. The frames are gathered in the
 * per-CPU record (bpf_loop: one verified step, not an unrolled walk) and
 * sent with only the frames used.
 */
static __always_inline void python_walk(const struct profile_interp_proc *ip, __u32 tgid, __u32 tid,
					__u64 now)
{
	struct profile_interp_event *e;
	struct py_walk w = { 0 };
	__u64 tstate;
	__u32 zero = 0;

	tstate = py_tstate_find(ip, tgid, tid);
	if (!tstate) {
		stat_inc(PROFILE_STAT_INTERP_NO_THREAD);
		return;
	}
	if (py_read_u64(&w.frame, tstate + ip->off[PY_O_TS_FRAME]))
		return;
	if (w.frame && ip->off[PY_O_CF_FRAME] != PROFILE_INTERP_OFF_NONE &&
	    py_read_u64(&w.frame, w.frame + ip->off[PY_O_CF_FRAME]))
		return;
	if (!w.frame)
		return; /* no Python code running on this thread */
	e = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!e)
		return;
	__builtin_memcpy(&w.p, ip, sizeof(w.p));
	w.shim = ip->off[PY_O_FR_ENTRY] == PROFILE_INTERP_OFF_NONE;
	/* Room for one shim frame per Python frame (3.12). */
	bpf_loop(2 * PROFILE_INTERP_MAX_FRAMES, py_walk_step, &w, 0);
	if (w.frame && w.err == PROFILE_IE_OK)
		w.err = PROFILE_IE_TOO_DEEP;
	interp_send(e, PROFILE_RT_PYTHON, tid, now, w.n, w.err);
}

#endif
