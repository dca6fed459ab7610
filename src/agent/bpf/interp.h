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

/* ---- PHP (8.2, non-ZTS; docs/design.md "Interpreter frames", agent/interp_php.c) ---- */
enum php_addr {
	PHP_A_CUR_EX = 0, /* &executor_globals.current_execute_data (a zend_execute_data *) */
};

enum php_off {
	PHP_O_EX_OPLINE = 0,	 /* zend_execute_data.opline (const zend_op *) */
	PHP_O_EX_FUNC = 1,	 /* zend_execute_data.func (zend_function *) */
	PHP_O_EX_TYPEINFO = 2,	 /* zend_execute_data.This.u1.type_info (call info in bits 16+) */
	PHP_O_EX_PREV = 3,	 /* zend_execute_data.prev_execute_data */
	PHP_O_FN_TYPE = 4,	 /* zend_function.type (u8: 1 internal, 2 user, 4 eval) */
	PHP_O_FN_NAME = 5,	 /* zend_function.common.function_name (zend_string *) */
	PHP_O_OP_LINESTART = 6,	 /* zend_op_array.line_start (u32) */
	PHP_O_OPLINE_LINENO = 7, /* zend_op.lineno (u32) */
	PHP_O_MAX = 8,
};

#define PHP_FUNC_INTERNAL 1	     /* ZEND_INTERNAL_FUNCTION */
#define PHP_FUNC_USER	  2	     /* ZEND_USER_FUNCTION */
#define PHP_FUNC_EVAL	  4	     /* ZEND_EVAL_CODE */
#define PHP_CALL_CODE	  (1u << 16) /* ZEND_CALL_CODE: top-level code of a file or eval */
#define PHP_CALL_TOP	  (1u << 17) /* ZEND_CALL_TOP: first frame of one execute_ex activation */

/*
 * The check value of a zend_function: its type, the address of its name
 * string and, for user code, its first line, as BPF reads them and user
 * space reads them again before trusting a cached name for that address.
 */
#define PHP_FUNC_CHECK(type, name, line_start) \
	((__u32)(type) ^ (__u32)(name) ^ (__u32)((__u64)(name) >> 32) ^ ((__u32)(line_start) << 8))

#endif
