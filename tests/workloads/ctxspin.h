/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctxspin.h - the hot functions of the thread-context workloads
 * (ctxthreads.c, ctxdlopen.c): spin_red() and spin_blue() each burn @ns
 * of the calling thread's own CPU time (CLOCK_THREAD_CPUTIME_ID) in a
 * loop of their own, so a flame graph tells them apart by name.
 */
#ifndef CTXSPIN_H
#define CTXSPIN_H

#include <time.h>

static volatile unsigned long sink;

static inline long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((noinline)) static void spin_red(long long ns)
{
	long long start = thread_cpu_ns();
	unsigned long x = sink;

	while (thread_cpu_ns() - start < ns)
		for (int i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

__attribute__((noinline)) static void spin_blue(long long ns)
{
	long long start = thread_cpu_ns();
	unsigned long x = sink;

	while (thread_cpu_ns() - start < ns)
		for (int i = 0; i < 20000; i++) {
			x ^= x << 13;
			x ^= x >> 7;
		}
	sink = x;
}

#endif
