// SPDX-License-Identifier: Apache-2.0
/*
 * inl.c - fixture for tests/integration/test_symbolize_*.sh: code inlined
 * two levels deep (always_inline) into inl_outer, so an address inside
 * it resolves to the chain inl_leaf <- inl_mid <- inl_outer. The MARK_*
 * comments name the lines each frame must report.
 *
 * Run with an argument, it prints the runtime return addresses taken
 * inside that inlined code (and, built with -DWITH_LIB, inside libdemo's
 * inlined code) and waits, so a test can map them through
 * /proc/PID/maps as the agent does.
 */
#include <stdio.h>
#include <unistd.h>

volatile unsigned long sink;
void *ra_exe;

__attribute__((noinline)) void sink_call(unsigned long v)
{
	ra_exe = __builtin_return_address(0);
	sink += v;
}

static inline __attribute__((always_inline)) void inl_leaf(unsigned long v)
{
	sink_call(v * 3); /* MARK_LEAF */
	sink++;
}

static inline __attribute__((always_inline)) void inl_mid(unsigned long v)
{
	inl_leaf(v + 1); /* MARK_MID */
	sink++;
}

__attribute__((noinline)) void inl_outer(unsigned long v)
{
	inl_mid(v ^ 5); /* MARK_OUTER */
	sink++;
}

#ifdef WITH_LIB
void lib_entry(unsigned long v);
extern void *ra_lib;
#endif

int main(int argc, char **argv)
{
	(void)argv;
	for (int i = 0; i < argc * 10; i++)
		inl_outer((unsigned long)i);
	if (argc > 1) {
#ifdef WITH_LIB
		lib_entry(1);
		printf("%p %p\n", ra_exe, ra_lib);
#else
		printf("%p\n", ra_exe);
#endif
		fflush(stdout);
		pause();
	}
	return 0;
}
