/* SPDX-License-Identifier: Apache-2.0 */
/*
 * filter.h - the stack and frame filters every view takes, applied while
 * the stack set is collected (query/stackset.h), never to stored data:
 *
 *   stack_filter=REGEX  keep only samples whose stack has a frame whose
 *                       name matches REGEX (all frames count, hidden ones
 *                       too); the others are left out of every total;
 *   frame_filter=REGEX  hide frames whose name matches REGEX: they are
 *                       taken out of the stack, so their cost goes to the
 *                       nearest visible caller (a hidden leaf's value
 *                       becomes its caller's self);
 *   hide=go,jvm,libc,kernel,python,ruby,php,node
 *                       presets of runtime frames to hide, by name and,
 *                       for native frames, by the module (basename of the
 *                       mapping file) they belong to:
 *     go     Go runtime and internals: runtime.*, runtime/internal/...,
 *            internal/..., plus the goroutine entry runtime.goexit
 *     jvm    JVM internals: frames in module libjvm.so (C++ such as
 *            JavaCalls::call_helper, Interpreter, call_stub,
 *            thread_native_entry, JavaMain) and the JDK's own classes
 *            (java., javax., jdk., sun., com.sun.)
 *     libc   C runtime and the dynamic loader: every frame in module
 *            libc.so*, libpthread, libdl, libm, librt, ld-linux*.so, and by
 *            name __libc_start_main, __libc_start_call_main, _start,
 *            start_thread, clone, clone3, _dl_*, "libc.so.6+0x..."
 *     kernel kernel frames: locations whose frame type is "kernel", module
 *            [kernel.kallsyms] or vmlinux, folded "_[k]" frames, and the
 *            syscall entry symbols (entry_SYSCALL*, do_syscall_64,
 *            __x64_sys_*, __arm64_sys_*)
 *
 *   The next four hide an interpreter's own native code, so the
 *   interpreted frames the agent names (frame types "cpython", "ruby",
 *   "php", "v8js") sit right under each other and a hidden internal's
 *   cost goes to the user function that called it. They look only at
 *   native frames (no frame type, or "native"): an interpreted frame is
 *   never hidden by them, whatever its name (a PHP function "execute_ex")
 *   or mapping ("[cpython]", or the interpreter's own file):
 *     python CPython: modules libpython3.X.so* and the python3.X
 *            executable, and by name the evaluation loop and call
 *            machinery (_PyEval_*, PyEval_*, _PyObject_Call*, _PyObject_Vectorcall*,
 *            _PyFunction_*, _PyVectorcall_*, method_vectorcall*,
 *            cfunction_*, slot_tp_*, vectorcall_*, Py_RunMain, Py_Main,
 *            pymain_*, _PyRun_*, run_mod, run_eval_code_obj)
 *     ruby   CRuby: modules libruby*.so and the ruby executable, by name
 *            vm_exec_core, vm_exec, rb_vm_exec, vm_call_*, vm_sendish,
 *            rb_funcall*, rb_vm_invoke_*, invoke_block*, vm_invoke_*,
 *            vm_yield*, rb_yield*, rb_ec_exec_node, ruby_run_node
 *     php    the Zend engine: modules php*, php-fpm*, php-cgi*, libphp*.so,
 *            by name execute_ex, zend_execute*, ZEND_*_HANDLER,
 *            php_execute_script*, php_cli*, zend_call_function, do_cli
 *     node   Node.js: modules node, nodejs, libnode.so*, by name node::*,
 *            v8::* (v8::internal:: included), Builtins_*, Builtin:*
 *            (V8's perf-map names), uv_run, uv__*; and Node.js's own
 *            JavaScript (files node:*), which the agent names on the
 *            mapping "[v8js:node]" (the one interpreted-frame exception)
 *
 * Regexes are PCRE2, unanchored (a match anywhere in the name; use ^ and $
 * to anchor), UTF-8 with invalid sequences tolerated. A filter holds its
 * own match data, so one filter must not be used by two threads at once;
 * build one per request.
 */
#ifndef PROF_QUERY_FILTER_H
#define PROF_QUERY_FILTER_H

#include "base/compat.h"
#include "base/err.h"

enum query_hide {
	QUERY_HIDE_GO = 1 << 0,
	QUERY_HIDE_JVM = 1 << 1,
	QUERY_HIDE_LIBC = 1 << 2,
	QUERY_HIDE_KERNEL = 1 << 3,
	QUERY_HIDE_PYTHON = 1 << 4,
	QUERY_HIDE_RUBY = 1 << 5,
	QUERY_HIDE_PHP = 1 << 6,
	QUERY_HIDE_NODE = 1 << 7,
};

/** struct query_filter - compiled filters; zeroed = no filtering. Owns its regexes. */
struct query_filter {
	void *stack_re, *stack_md; /* pcre2 code and match data, or NULL */
	void *frame_re, *frame_md;
	void *hide_re, *hide_md;	 /* the union of the name presets in @hide */
	void *hide_mod_re, *hide_mod_md; /* the union of their module regexes */
	void *hide_nat_re, *hide_nat_md; /* the same of the native-only presets */
	void *hide_nat_mod_re, *hide_nat_mod_md;
	unsigned hide; /* enum query_hide bits */
};

/**
 * query_filter_init() - compile the filters; each argument may be NULL or
 * "" for "none". @hide is a comma-separated list of preset names. Errors:
 * -EINVAL with @err naming the parameter ("parameter 'frame_filter': regex
 * error: missing ) at offset 3", "parameter 'hide': unknown preset 'x'
 * (known: go, jvm, libc, kernel, python, ruby, php, node)"). @f needs
 * release also after an error.
 */
int query_filter_init(struct query_filter *f, const char *stack_filter, const char *frame_filter,
		      const char *hide, struct prof_err *err);

/** query_filter_release() - free what @f owns; NULL is allowed. */
void query_filter_release(struct query_filter *f);

/** query_filter_has_stack() - is a stack filter set? */
static inline bool query_filter_has_stack(const struct query_filter *f)
{
	return f && f->stack_re;
}

/** query_filter_stack_match() - does frame @name (@n bytes) satisfy the stack filter? */
bool query_filter_stack_match(const struct query_filter *f, const char *name, size_t n);

/**
 * query_filter_hides() - is frame @name (@n bytes) hidden by the frame
 * filter or a preset? @frame_type is the location's profile.frame.type
 * ("kernel", "cpython", "native", ...; NULL or "" when none); @module is
 * the basename of its mapping file (NULL or "" when none). False when @f
 * is NULL.
 */
bool query_filter_hides(const struct query_filter *f, const char *name, size_t n,
			const char *frame_type, const char *module);

/**
 * query_regex_compile() - compile @pattern (unanchored PCRE2, UTF-8) for
 * the query engine's other searches (the table's search). On error
 * returns -EINVAL with @err "parameter '@param': regex error: ...".
 * *@re and *@md are released with query_regex_free.
 */
int query_regex_compile(const char *param, const char *pattern, void **re, void **md,
			struct prof_err *err);
/** query_regex_match() - does @re match somewhere in the @n bytes at @s? */
bool query_regex_match(void *re, void *md, const char *s, size_t n);
/** query_regex_free() - NULLs allowed. */
void query_regex_free(void *re, void *md);

#endif
