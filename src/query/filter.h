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
 *   hide=go,jvm,libc,kernel
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
};

/** struct query_filter - compiled filters; zeroed = no filtering. Owns its regexes. */
struct query_filter {
	void *stack_re, *stack_md; /* pcre2 code and match data, or NULL */
	void *frame_re, *frame_md;
	void *hide_re, *hide_md;	 /* the union of the name presets in @hide */
	void *hide_mod_re, *hide_mod_md; /* the union of their module regexes */
	unsigned hide;			 /* enum query_hide bits */
};

/**
 * query_filter_init() - compile the filters; each argument may be NULL or
 * "" for "none". @hide is a comma-separated list of preset names. Errors:
 * -EINVAL with @err naming the parameter ("parameter 'frame_filter': regex
 * error: missing ) at offset 3", "parameter 'hide': unknown preset 'x'
 * (known: go, jvm, libc, kernel)"). @f needs release also after an error.
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
 * filter or a preset? @kernel says the location's frame type is "kernel";
 * @module is the basename of its mapping file (NULL or "" when none).
 * False when @f is NULL.
 */
bool query_filter_hides(const struct query_filter *f, const char *name, size_t n, bool kernel,
			const char *module);

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
