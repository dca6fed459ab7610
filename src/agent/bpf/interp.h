/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/*
 * interp.h - the per-runtime layout of struct profile_interp_proc
 * (profile.h): which @addr and @off slot holds what, shared by the BPF
 * walkers (python.bpf.h, ...) and the user-space detectors that fill them
 * (agent/interp_<runtime>.c). Offsets are bytes from the start of the
 * structure named in the comment; PROFILE_INTERP_OFF_NONE where a version
 * has no such field.
 */
#ifndef PROF_AGENT_BPF_INTERP_H
#define PROF_AGENT_BPF_INTERP_H

/* ---- CPython (3.11, 3.12; docs/runtimes.md) ---- */
enum py_addr {
	PY_A_INTERP = 0,    /* &_PyRuntime.interpreters.main (holds the PyInterpreterState *) */
	PY_A_CODE_TYPE = 1, /* &PyCode_Type: a frame's code object must have this ob_type */
};

enum py_off {
	PY_O_TS_HEAD = 0,      /* PyInterpreterState.threads.head */
	PY_O_TS_NEXT = 1,      /* PyThreadState.next */
	PY_O_TS_TID = 2,       /* PyThreadState.native_thread_id (gettid() in its pid namespace) */
	PY_O_TS_FRAME = 3,     /* PyThreadState.cframe (3.11, 3.12) or .current_frame (3.13+) */
	PY_O_CF_FRAME = 4,     /* _PyCFrame.current_frame; NONE when PY_O_TS_FRAME is the frame */
	PY_O_FR_CODE = 5,      /* _PyInterpreterFrame.f_code / f_executable */
	PY_O_FR_PREV = 6,      /* _PyInterpreterFrame.previous */
	PY_O_FR_INSTR = 7,     /* _PyInterpreterFrame.prev_instr / instr_ptr */
	PY_O_FR_ENTRY = 8,     /* _PyInterpreterFrame.is_entry (3.11; NONE later) */
	PY_O_FR_OWNER = 9,     /* _PyInterpreterFrame.owner */
	PY_O_CO_ADAPTIVE = 10, /* PyCodeObject.co_code_adaptive (the first code unit) */
	PY_O_CO_FIRSTLINE = 11,
	PY_O_CO_ARGCOUNT = 12,
	PY_O_CO_FLAGS = 13,
	PY_O_MAX = 14,
};

#define PY_OWNER_CSTACK 3 /* 3.12+: a shim frame the C stack owns, below each activation */

/*
 * The check value of a code object: what BPF reads from it and user space
 * reads again before trusting its cached name for that address.
 */
#define PY_CODE_CHECK(firstline, argcount, flags) \
	((__u32)(firstline) ^ ((__u32)(argcount) << 16) ^ ((__u32)(flags) << 24))

#endif
