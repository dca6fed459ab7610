// SPDX-License-Identifier: Apache-2.0
/*
 * lib.c - fixture: a shared library (libdemo.so) with code inlined into
 * lib_entry; lib_sink records the return address inside that code.
 */
volatile unsigned long lsink;
void *ra_lib;

__attribute__((noinline)) void lib_sink(unsigned long v)
{
	ra_lib = __builtin_return_address(0);
	lsink += v;
}

static inline __attribute__((always_inline)) void lib_inner(unsigned long v)
{
	lib_sink(v * 7); /* MARK_LIB_INNER */
	lsink++;
}

void lib_entry(unsigned long v);
__attribute__((noinline)) void lib_entry(unsigned long v)
{
	lib_inner(v + 2); /* MARK_LIB_ENTRY */
	lsink++;
}
