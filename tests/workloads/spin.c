// SPDX-License-Identifier: Apache-2.0
/*
 * spin.c - CPU workload for the agent end-to-end test: main() calls
 * hot_a() and hot_b() in turn; both run the same loop, hot_a 7 units of
 * it and hot_b 3, so about 70 % of the CPU time is in hot_a and 30 % in
 * hot_b whatever the CPU speed or contention. Runs for SECONDS (default
 * 10) of wall time.
 *
 * Build (by the test, not committed as a binary):
 *   cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
 *      -fno-optimize-sibling-calls -fno-inline -o spin spin.c
 * Frame-pointer unwinding from a function without a frame skips its
 * caller (main) entirely, and GCC 12 gives leaf functions no frame even
 * with -mno-omit-leaf-frame-pointer; so hot_a and hot_b are not leaves:
 * they end by calling consume() (not as a tail call:
 * -fno-optimize-sibling-calls), which makes GCC build their frame.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define UNIT_ITERS 200000 /* about 0.1-0.3 ms per unit */

static volatile uint64_t sink;

__attribute__((noinline)) void consume(uint64_t x)
{
	sink = x;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void hot_a(uint64_t units)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 7 * units * UNIT_ITERS; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	consume(x);
}

__attribute__((noinline)) void hot_b(uint64_t units)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 3 * units * UNIT_ITERS; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	consume(x);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10.0;
	double end = now_s() + seconds;
	uint64_t rounds = 0;

	if (!(seconds > 0)) {
		fprintf(stderr, "usage: spin [SECONDS]\n");
		return 2;
	}
	while (now_s() < end) {
		hot_a(4);
		hot_b(4);
		rounds++;
	}
	{
		struct timespec cpu;

		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &cpu);
		printf("spin: %llu rounds, %.3f s of CPU\n", (unsigned long long)rounds,
		       (double)cpu.tv_sec + (double)cpu.tv_nsec / 1e9);
	}
	return 0;
}
