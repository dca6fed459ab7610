/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ruby.bpf.h - the CRuby (3.1) walker, included by profile.bpf.c after
 * python.bpf.h (it uses ns_tid): finds the execution context running on
 * the sampled thread and walks its control frames (leaf first), sending
 * per Ruby-code frame the iseq body's address, the frame's pc and a check
 * value (RB_ISEQ_CHECK) read from the body.
 *
 * Execution context: ruby_single_main_ractor->threads.running_ec, the
 * context holding the GVL. It is used only when its thread's native id
 * (ec->thread_ptr) is the sampled thread's id in its pid namespace: a
 * thread waiting for the GVL, or one in a C function that released it,
 * sends nothing (counted as no thread). With several ractors
 * ruby_single_main_ractor is NULL and nothing is sent.
 *
 * Frames: control frames lie from ec->cfp (leaf) up to the top of the
 * VM stack (vm_stack + vm_stack_size VALUEs). Each Ruby-code frame also
 * carries its method entry (@obj2; 0 = none, as in <main> or a class
 * body), found as Ruby's rb_vm_frame_method_entry does: ep[-2] when it
 * is an imemo_ment, else the outer envs' (ep[-1], up to RB_ENV_MAX_UP),
 * and at the local env an imemo_svar's cref_or_me. Frames of C functions
 * (cfuncs) are sent as their method entry (@addr, flagged
 * PROFILE_IF_CFUNC, check RB_ME_CHECK) when user space could name them
 * (off[RB_O_ME_OWNER] set: it found and checked the symbol table);
 * otherwise they, C blocks (imemo other than an iseq) and the thread's
 * dummy bottom frame are not sent. The classification is done here,
 * while the frames are valid.
 *
 * Activations: each vm_exec call runs frames up to the one flagged
 * VM_FRAME_FLAG_FINISH, marked PROFILE_IF_ENTRY (when that frame is one
 * not sent, the last frame sent of its activation is marked instead), so
 * user space puts each run in place of its rb_vm_exec native frame.
 *
 * Facts: docs/runtimes.md; offsets checked against a running Debian
 * ruby3.1 (bpf/interp.h).
 */
#ifndef PROF_AGENT_BPF_RUBY_BPF_H
#define PROF_AGENT_BPF_RUBY_BPF_H

struct rb_walk {
	struct profile_interp_proc p;
	__u64 cfp, end;
	__u32 n, err, act; /* @act: frames sent before the current activation */
};

static __always_inline int rb_read_u64(__u64 *v, __u64 addr)
{
	return bpf_probe_read_user(v, sizeof(*v), (const void *)addr);
}

/* The frame just left was the first of its activation: mark the last one sent of it. */
static __always_inline void rb_mark_entry(struct rb_walk *w, struct profile_interp_event *e)
{
	__u32 n = w->n;

	if (n > w->act && n > 0 && n <= PROFILE_INTERP_MAX_FRAMES)
		e->frames[n - 1].flags |= PROFILE_IF_ENTRY;
	w->act = n;
}

/* The imemo flags at @v (a VALUE that may be anything), 0 when it is not an imemo. */
static __always_inline __u64 rb_imemo_flags(__u64 v)
{
	__u64 fl = 0;

	if (!v || (v & 7) || v == 8 /* Qnil */ || rb_read_u64(&fl, v) ||
	    (fl & RB_T_MASK) != RB_T_IMEMO)
		return 0;
	return fl;
}

/* An imemo_ment at @v: @v, else 0; an imemo_svar's cref_or_me when @svar. */
static __always_inline __u64 rb_as_me(__u64 v, bool svar)
{
	__u64 fl = rb_imemo_flags(v);

	if (fl && RB_IMEMO_TYPE(fl) == RB_IMEMO_MENT)
		return v;
	if (!fl || !svar || RB_IMEMO_TYPE(fl) != RB_IMEMO_SVAR || rb_read_u64(&v, v + 8))
		return 0;
	fl = rb_imemo_flags(v);
	return fl && RB_IMEMO_TYPE(fl) == RB_IMEMO_MENT ? v : 0;
}

/* The method entry of the frame whose env is @ep (@flags = ep[0]); 0 when none was found. */
static __always_inline __u64 rb_frame_me(__u64 ep, __u64 flags)
{
	__u64 v = 0, me;

	for (int i = 0; i < RB_ENV_MAX_UP; i++) {
		bool local = flags & RB_ENV_FLAG_LOCAL;

		if (rb_read_u64(&v, ep - 16))
			return 0;
		me = rb_as_me(v, local);
		if (me || local)
			return me;
		if (rb_read_u64(&v, ep - 8))
			return 0;
		ep = v & ~3ULL;
		if (!ep || rb_read_u64(&flags, ep))
			return 0;
	}
	return 0;
}

/* One bpf_loop step: control frame @w->cfp into the per-CPU record; 1 stops the walk. */
static long rb_walk_step(__u64 index, void *ctx)
{
	struct rb_walk *w = ctx;
	const struct profile_interp_proc *ip = &w->p;
	__u64 cfp = w->cfp, pc = 0, iseq = 0, ep = 0, flags = 0, ofl = 0, body = 0, first = 0;
	__u32 zero = 0, n = w->n, type = 0, size = 0, magic;
	struct profile_interp_event *e;
	struct profile_interp_frame *f;

	if (cfp >= w->end)
		return 1;
	e = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!e)
		return 1;
	if (rb_read_u64(&pc, cfp + ip->off[RB_O_CFP_PC]) ||
	    rb_read_u64(&iseq, cfp + ip->off[RB_O_CFP_ISEQ]) ||
	    rb_read_u64(&ep, cfp + ip->off[RB_O_CFP_EP]) || rb_read_u64(&flags, ep)) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	w->cfp = cfp + ip->off[RB_O_CFP_SIZE];
	magic = (__u32)flags & RB_FRAME_MAGIC_MASK;
	if (magic == RB_FRAME_MAGIC_CFUNC && ip->off[RB_O_ME_OWNER] != PROFILE_INTERP_OFF_NONE) {
		__u64 me = rb_frame_me(ep, flags), def = 0, owner = 0;

		if (!me || rb_read_u64(&def, me + ip->off[RB_O_ME_DEF]) ||
		    rb_read_u64(&owner, me + ip->off[RB_O_ME_OWNER]))
			goto skip;
		if (n >= PROFILE_INTERP_MAX_FRAMES) {
			w->err = PROFILE_IE_TOO_DEEP;
			return 1;
		}
		f = &e->frames[n];
		f->addr = me;
		f->aux = 0;
		f->obj2 = me;
		f->check = RB_ME_CHECK(def, owner);
		f->flags = PROFILE_IF_CFUNC;
		goto sent;
	}
	if (magic == RB_FRAME_MAGIC_DUMMY || !pc || !iseq)
		goto skip;
	if (rb_read_u64(&ofl, iseq)) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	if ((ofl & RB_T_MASK) != RB_T_IMEMO) {
		w->err = PROFILE_IE_BAD_OBJ;
		return 1;
	}
	if (RB_IMEMO_TYPE(ofl) != RB_IMEMO_ISEQ)
		goto skip; /* a C block (ifunc) */
	if (rb_read_u64(&body, iseq + ip->off[RB_O_ISEQ_BODY]) ||
	    bpf_probe_read_user(&type, 4, (const void *)body) ||
	    bpf_probe_read_user(&size, 4, (const void *)(body + ip->off[RB_O_BODY_ISEQ_SIZE])) ||
	    rb_read_u64(&first, body + ip->off[RB_O_BODY_FIRSTLINE])) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	if (n >= PROFILE_INTERP_MAX_FRAMES) {
		w->err = PROFILE_IE_TOO_DEEP;
		return 1;
	}
	f = &e->frames[n];
	f->addr = body;
	f->aux = pc;
	f->check = RB_ISEQ_CHECK(type, size, first);
	f->flags = 0;
	f->obj2 = rb_frame_me(ep, flags);
sent:
	w->n = n + 1;
	if (flags & RB_FRAME_FLAG_FINISH) {
		f->flags |= PROFILE_IF_ENTRY;
		w->act = n + 1;
	}
	return 0;
skip:
	if (flags & RB_FRAME_FLAG_FINISH)
		rb_mark_entry(w, e);
	return 0;
}

/*
 * Send the Ruby frames of the current thread (tgid/tid) as a
 * PROFILE_EV_INTERP event stamped @now; nothing when the thread does not
 * hold the GVL (it runs no Ruby code now).
 */
static __always_inline void ruby_walk(const struct profile_interp_proc *ip, __u32 tgid, __u32 tid,
				      __u64 now)
{
	__u64 ractor = 0, ec = 0, th = 0, stack = 0, size = 0;
	struct profile_interp_event *e;
	struct rb_walk w = { 0 };
	__u32 zero = 0, got = 0;

	if (rb_read_u64(&ractor, ip->addr[RB_A_MAIN_RACTOR]) || !ractor ||
	    rb_read_u64(&ec, ractor + ip->off[RB_O_RACTOR_EC]) || !ec ||
	    rb_read_u64(&th, ec + ip->off[RB_O_EC_THREAD]) || !th ||
	    bpf_probe_read_user(&got, 4, (const void *)(th + ip->off[RB_O_TH_TID])) ||
	    got != ns_tid()) {
		stat_inc(PROFILE_STAT_INTERP_NO_THREAD);
		return;
	}
	if (rb_read_u64(&w.cfp, ec + ip->off[RB_O_EC_CFP]) ||
	    rb_read_u64(&stack, ec + ip->off[RB_O_EC_VM_STACK]) ||
	    rb_read_u64(&size, ec + ip->off[RB_O_EC_STACK_SIZE]) || !w.cfp || !stack ||
	    size > (1ULL << 30))
		return;
	w.end = stack + size * 8;
	e = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!e)
		return;
	__builtin_memcpy(&w.p, ip, sizeof(w.p));
	/* Room for one skipped (C) frame per Ruby frame. */
	bpf_loop(2 * PROFILE_INTERP_MAX_FRAMES, rb_walk_step, &w, 0);
	if (w.cfp < w.end && w.err == PROFILE_IE_OK)
		w.err = PROFILE_IE_TOO_DEEP;
	interp_send(e, PROFILE_RT_RUBY, tid, now, w.n, w.err);
}

#endif
