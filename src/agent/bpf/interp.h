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
	PY_O_CO_QUALNAME = 14,
	PY_O_CO_FILENAME = 15,
	PY_O_STR_DATA = 16, /* sizeof(PyASCIIObject): where a compact ASCII str's bytes start */
	PY_O_MAX = 17,
};

#define PY_OWNER_CSTACK 3 /* 3.12+: a shim frame the C stack owns, below each activation */

/*
 * The check value of a code object: what BPF reads from it and user space
 * reads again before trusting its cached name for that address.
 */
#define PY_CODE_CHECK(firstline, argcount, flags) \
	((__u32)(firstline) ^ ((__u32)(argcount) << 16) ^ ((__u32)(flags) << 24))

/*
 * What a str object adds to the check (its qualified name's and file
 * name's): its length (PyASCIIObject.length, +16), its first 8 bytes past
 * the ASCII header (masked to the length) and the 8 bytes ending at the
 * length. Code objects made from one template share lines, argument
 * counts and flags, and an address freed and reused gets another of
 * them: their names tell them apart. Read the same way on both sides,
 * raw (a non-ASCII str's words there are header and characters: still
 * the same on both sides).
 */
#define PY_STR_LENGTH 16
#define PY_STR_CHECK(len, head, tail)                                          \
	((__u32)((__u64)(len)*0x9e3779b1u) ^ (__u32)(head) ^                   \
	 ((__u32)((head) >> 32) * 0x85ebca6bu) ^ ((__u32)(tail)*0xc2b2ae35u) ^ \
	 (__u32)((tail) >> 32))

/*
 * ---- CRuby (3.1; docs/runtimes.md) ----
 * Checked against Debian's ruby3.1 (3.1.2, x86-64, no DWARF) by reading
 * a running process's memory (process_vm_readv): labels, paths and line
 * entries of methods of tests/workloads/hot.rb, and the thread id of
 * each of two spinning threads.
 */
enum rb_addr {
	RB_A_MAIN_RACTOR =
		0, /* &ruby_single_main_ractor (holds the rb_ractor_t *; NULL with several ractors) */
};

enum rb_off {
	RB_O_RACTOR_EC = 0,	  /* rb_ractor_t.threads.running_ec */
	RB_O_EC_VM_STACK = 1,	  /* rb_execution_context_t.vm_stack */
	RB_O_EC_STACK_SIZE = 2,	  /* rb_execution_context_t.vm_stack_size (VALUEs) */
	RB_O_EC_CFP = 3,	  /* rb_execution_context_t.cfp */
	RB_O_EC_THREAD = 4,	  /* rb_execution_context_t.thread_ptr */
	RB_O_TH_TID = 5,	  /* rb_thread_t native thread id (gettid() in its pid namespace) */
	RB_O_CFP_PC = 6,	  /* rb_control_frame_t.pc */
	RB_O_CFP_ISEQ = 7,	  /* rb_control_frame_t.iseq */
	RB_O_CFP_EP = 8,	  /* rb_control_frame_t.ep (ep[0]: the frame's flags) */
	RB_O_CFP_SIZE = 9,	  /* sizeof(rb_control_frame_t) */
	RB_O_ISEQ_BODY = 10,	  /* rb_iseq_t.body */
	RB_O_BODY_ISEQ_SIZE = 11, /* rb_iseq_constant_body.iseq_size (u32) */
	RB_O_BODY_FIRSTLINE = 12, /* rb_iseq_constant_body.location.first_lineno (a Fixnum) */
	RB_O_ME_DEF = 13,	  /* rb_callable_method_entry_t.def */
	RB_O_ME_OWNER = 14, /* rb_callable_method_entry_t.owner; NONE: cfunc frames not sent */
	RB_O_MAX = 15,
};

#define RB_FRAME_MAGIC_MASK  0x7fff0001u /* ep[0] & this: the frame's magic */
#define RB_FRAME_MAGIC_DUMMY 0x79990001u /* the thread's bottom frame: never named */
#define RB_FRAME_MAGIC_CFUNC 0x55550001u /* a C function's frame: its method entry at ep[-2] */
#define RB_ENV_FLAG_LOCAL    0x0002u	 /* ep[0]: the method's own env (no outer ep[-1]) */
#define RB_ENV_MAX_UP	     4		 /* outer envs searched for a block's method entry */
#define RB_FRAME_FLAG_FINISH 0x0020u	 /* the first frame one vm_exec call ran */
#define RB_T_MASK	     0x1fu	 /* RBasic.flags & this: the object's type */
#define RB_T_IMEMO	     0x1au
#define RB_IMEMO_TYPE(fl)    (((fl) >> 12) & 0xf) /* an imemo's kind */
#define RB_IMEMO_ISEQ	     7
#define RB_IMEMO_MENT	     6 /* a method entry */
#define RB_IMEMO_SVAR	     2 /* special variables; .cref_or_me at 8 may be the method entry */

/*
 * The check value of an iseq body: what BPF reads from it and user space
 * reads again before trusting its cached name for that address.
 */
#define RB_ISEQ_CHECK(type, size, firstline) \
	((__u32)(firstline) ^ ((__u32)(size) << 12) ^ ((__u32)(type) << 28))

/* The check value of a cfunc frame's method entry: of its def and owner pointers. */
#define RB_ME_CHECK(def, owner) ((__u32)((def) >> 3) ^ (__u32)((owner) >> 3) ^ 0x4d45u)

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
