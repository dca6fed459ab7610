/* SPDX-License-Identifier: Apache-2.0 */
/*
 * interp_python.h - the decoders of CPython's in-memory data that
 * interp_python.c uses, exposed for unit tests and the fuzz target (the
 * runtime itself is agent_interp_python, interp.h).
 */
#ifndef PROF_AGENT_INTERP_PYTHON_H
#define PROF_AGENT_INTERP_PYTHON_H

#include "base/compat.h"

/**
 * agent_py_linetable_line() - the line of code unit @index of a code
 * object whose location table (co_linetable, 3.11+) is @t (@n bytes) and
 * whose first line is @firstline. Format: CPython Objects/locations.md
 * (entries of a first byte 1cccclll: code c, length l+1 code units, then
 * per code a line delta as a signed 6-bit varint (13, 14), a delta of
 * c - 10 (10-12) or none (0-9), and column bytes or varints to skip;
 * 15 = no location). Returns the line, or 0 when @index has no line, lies
 * past the table, or the table is corrupt. Never reads past @n.
 */
int64_t agent_py_linetable_line(const uint8_t *t, size_t n, int64_t firstline, uint64_t index);

/**
 * agent_py_unicode_utf8() - @ndata bytes of a compact str object's
 * characters of @kind bytes each (1 Latin-1, 2 UCS-2, 4 UCS-4; little
 * endian) as UTF-8 into @out (@max bytes with the NUL; cut at a
 * character boundary). Surrogates and values past U+10FFFF become
 * U+FFFD. 0, -PROF_ECORRUPT for another kind, -E2BIG when @max is 0.
 */
int agent_py_unicode_utf8(const uint8_t *data, size_t ndata, unsigned kind, char *out, size_t max);

/**
 * agent_py_namer_new() - the naming state agent_interp_python.attach
 * makes, for CPython 3.@minor (11 or 12) with PyCode_Type at @code_type,
 * for tests and the fuzz target that feed name_frame memory of their own.
 * NULL for another minor version. Free with agent_interp_python.free.
 */
void *agent_py_namer_new(int minor, uint64_t code_type);

struct agent_memreader;

/**
 * agent_py_code_check() - the check value of the code object at @code as
 * the BPF walker computes it (bpf/interp.h PY_CODE_CHECK ^ PY_STR_CHECK
 * of co_qualname ^ 3 * PY_STR_CHECK of co_filename), read through @mem
 * with the layout of namer @priv (agent_py_namer_new). 0 when the code
 * object cannot be read.
 */
uint32_t agent_py_code_check(const void *priv, const struct agent_memreader *mem, uint64_t code);

#endif
