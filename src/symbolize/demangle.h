/* SPDX-License-Identifier: Apache-2.0 */
/*
 * demangle.h - C++ (Itanium ABI, "_Z...") and Rust (legacy "_ZN...17h<hash>E"
 * and v0 "_R...") symbol names to readable ones, through libiberty (the
 * demangler binutils and GCC use).
 *
 * Rust is tried first: a legacy Rust name is also a valid C++ name, and
 * demangled as C++ it keeps the "::h0123456789abcdef" hash suffix that
 * rustfilt and addr2line -C drop. C++ names keep their parameter lists
 * (DMGL_PARAMS | DMGL_ANSI), as `addr2line -C` and perf print them, which
 * tells overloads apart.
 *
 * Only cplus_demangle_v3 and rust_demangle are called, not libiberty's
 * cplus_demangle: that one pulls in libiberty's own xmalloc/xstrdup, whose
 * names clash with ours (base/mem.h). Thread-safe (no global state).
 */
#ifndef PROF_SYMBOLIZE_DEMANGLE_H
#define PROF_SYMBOLIZE_DEMANGLE_H

#include "base/compat.h"

/**
 * sym_demangle() - write the demangled form of @name into @out (size
 * @outsz, truncated, always NUL-terminated when @outsz > 0) and return
 * true; when @name is not a mangled C++/Rust name (or is malformed), copy
 * it unchanged and return false. @name and @out must not overlap.
 */
bool sym_demangle(const char *name, char *out, size_t outsz);

#endif
