/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * php.bpf.h - the PHP walker, included by profile.bpf.c: follows
 * EG(current_execute_data) down the zend_execute_data chain
 * (prev_execute_data, leaf first), sending per frame the zend_function's
 * address, the line its current opline is at (read here: the opline
 * moves right after the tick) and a check value (PHP_FUNC_CHECK) read
 * from the function.
 *
 * Threads: a non-ZTS PHP runs PHP code on one thread only, the one whose
 * executor_globals it is: the process's main thread (CLI, CGI, FPM
 * workers). Other threads (an extension's) are not walked.
 *
 * Activations: each call of execute_ex runs frames up to the first one
 * it was entered with, which carries ZEND_CALL_TOP in its call info
 * (This.u1.type_info bits 16+): that user frame is marked
 * PROFILE_IF_ENTRY. Internal functions (str_repeat, array_map) have
 * frames too and are sent, flagged PROFILE_IF_CFUNC; one called straight
 * from C (zend_call_function) also has ZEND_CALL_TOP but runs in no
 * execute_ex, so it is never an entry. Frames without a function
 * (fake frames some calls from C push) are skipped.
 *
 * Invariants: every read is bpf_probe_read_user; a failed read stops the
 * walk with PROFILE_IE_READ, a function of unknown type with
 * PROFILE_IE_BAD_OBJ; at most PROFILE_INTERP_MAX_FRAMES frames are sent.
 * Offsets (bpf/interp.h enum php_off) come from user space
 * (agent/interp_php.c, which says how they were checked).
 */
#ifndef PROF_AGENT_BPF_PHP_BPF_H
#define PROF_AGENT_BPF_PHP_BPF_H

struct php_walk {
	struct profile_interp_proc p;
	__u64 ex;
	__u32 n, err;
};

/* One bpf_loop step: execute_data @w->ex into the per-CPU record; 1 stops the walk. */
static long php_walk_step(__u64 index, void *ctx)
{
	struct php_walk *w = ctx;
	const struct profile_interp_proc *ip = &w->p;
	__u64 opline = 0, func = 0, prev = 0, name = 0, ex = w->ex;
	__u32 type_info = 0, line_start = 0, lineno = 0, zero = 0, n = w->n;
	struct profile_interp_event *e;
	struct profile_interp_frame *f;
	__u8 type = 0;

	if (!ex)
		return 1;
	e = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!e)
		return 1;
	if (bpf_probe_read_user(&opline, 8, (const void *)(ex + ip->off[PHP_O_EX_OPLINE])) ||
	    bpf_probe_read_user(&func, 8, (const void *)(ex + ip->off[PHP_O_EX_FUNC])) ||
	    bpf_probe_read_user(&type_info, 4, (const void *)(ex + ip->off[PHP_O_EX_TYPEINFO])) ||
	    bpf_probe_read_user(&prev, 8, (const void *)(ex + ip->off[PHP_O_EX_PREV]))) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	w->ex = prev;
	if (!func)
		return 0; /* a fake frame: no function of its own */
	if (bpf_probe_read_user(&type, 1, (const void *)(func + ip->off[PHP_O_FN_TYPE])) ||
	    bpf_probe_read_user(&name, 8, (const void *)(func + ip->off[PHP_O_FN_NAME]))) {
		w->err = PROFILE_IE_READ;
		return 1;
	}
	if (type == PHP_FUNC_USER || type == PHP_FUNC_EVAL) {
		if (bpf_probe_read_user(&line_start, 4,
					(const void *)(func + ip->off[PHP_O_OP_LINESTART])) ||
		    (opline &&
		     bpf_probe_read_user(&lineno, 4,
					 (const void *)(opline + ip->off[PHP_O_OPLINE_LINENO])))) {
			w->err = PROFILE_IE_READ;
			return 1;
		}
	} else if (type != PHP_FUNC_INTERNAL) {
		w->err = PROFILE_IE_BAD_OBJ;
		return 1;
	}
	if (n >= PROFILE_INTERP_MAX_FRAMES) {
		w->err = PROFILE_IE_TOO_DEEP;
		return 1;
	}
	f = &e->frames[n];
	f->addr = func;
	f->aux = lineno;
	f->check = PHP_FUNC_CHECK(type, name, line_start);
	f->obj2 = 0;
	if (type == PHP_FUNC_INTERNAL)
		f->flags = PROFILE_IF_CFUNC;
	else
		f->flags = (type_info & PHP_CALL_TOP) ? PROFILE_IF_ENTRY : 0;
	w->n = n + 1;
	return 0;
}

/*
 * Send the PHP frames of the current thread (tgid/tid) as a
 * PROFILE_EV_INTERP event stamped @now; nothing for another thread than
 * the main one or while no PHP code runs (EG(current_execute_data) NULL).
 */
static __always_inline void php_walk(const struct profile_interp_proc *ip, __u32 tgid, __u32 tid,
				     __u64 now)
{
	struct profile_interp_event *e;
	struct php_walk w = { 0 };
	__u32 zero = 0;

	if (tid != tgid) {
		stat_inc(PROFILE_STAT_INTERP_NO_THREAD);
		return;
	}
	if (bpf_probe_read_user(&w.ex, 8, (const void *)ip->addr[PHP_A_CUR_EX]) || !w.ex)
		return;
	e = bpf_map_lookup_elem(&interp_scratch, &zero);
	if (!e)
		return;
	__builtin_memcpy(&w.p, ip, sizeof(w.p));
	/* Room for one fake frame per real one. */
	bpf_loop(2 * PROFILE_INTERP_MAX_FRAMES, php_walk_step, &w, 0);
	if (w.ex && w.err == PROFILE_IE_OK)
		w.err = PROFILE_IE_TOO_DEEP;
	interp_send(e, PROFILE_RT_PHP, tid, now, w.n, w.err);
}

#endif
