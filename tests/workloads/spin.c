// SPDX-License-Identifier: Apache-2.0
/*
 * spin.c - CPU workload for the agent end-to-end test: main() calls
 * hot_a() and hot_b() in turn; both run the same loop, hot_a 7 units of
 * it and hot_b 3, so 70 % of the CPU time is in hot_a and 30 % in hot_b
 * whatever the CPU speed or contention (`perf record -F 4000` agrees:
 * 70.2 / 29.5 %). Runs for SECONDS (default 10) of wall time; with
 * SPIN_CPU_SECONDS set in the environment, it runs on past SECONDS until
 * it has used that much CPU (a loaded machine gives it less than SECONDS),
 * but for at most 5 * SECONDS. Further arguments are ignored (tests use
 * them as markers).
 *
 * Each round's length is drawn at random: iters is 1 to 7 UNIT_ITERS,
 * uniform in steps of 1/4096 (fixed seed), hot_a runs 7 * iters and hot_b
 * 3 * iters, so the work stays 7:3 inside every round. With a fixed
 * round length the workload is periodic, and a profiler sampling at a
 * fixed period P (the agent's 19 Hz cpu-clock timer) aliases with it:
 * when P is close to k + 1/2 round lengths the samples alternate between
 * two points of the round (hot_a share 50 % or 100 %), close to k round
 * lengths they all land at one point (0 % or 100 %). A quiet CI machine
 * gave hot_a 52.6 %; a spin made exactly periodic (wall-clock deadlines,
 * 3.5 rounds per 19 Hz period) gives 48-51 % under the agent, alternating
 * samples.
 * Random lengths make the sampling instants independent of the round's
 * phase, so each sample lands in hot_a with probability 0.7.
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

/* xorshift64 (Marsaglia, "Xorshift RNGs", J. Stat. Softw. 8(14), 2003). */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

__attribute__((noinline)) void consume(uint64_t x)
{
	sink = x;
}

static double clock_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* hot_a runs the loop 7 * iters times, hot_b 3 * iters times. */
__attribute__((noinline)) void hot_a(uint64_t iters)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 7 * iters; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	consume(x);
}

__attribute__((noinline)) void hot_b(uint64_t iters)
{
	uint64_t x = sink;

	for (uint64_t i = 0; i < 3 * iters; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	consume(x);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 10.0;
	const char *cpu_env = getenv("SPIN_CPU_SECONDS");
	double cpu_want = cpu_env ? atof(cpu_env) : 0.0;
	double start = clock_s(CLOCK_MONOTONIC);
	uint64_t rounds = 0, seed = 0x9e3779b97f4a7c15ULL;

	if (!(seconds > 0)) {
		fprintf(stderr, "usage: spin [SECONDS]\n");
		return 2;
	}
	for (;;) {
		double ran = clock_s(CLOCK_MONOTONIC) - start;
		uint64_t iters;

		if (ran >= 5 * seconds ||
		    (ran >= seconds && clock_s(CLOCK_PROCESS_CPUTIME_ID) >= cpu_want))
			break;
		/* 1 to 7 units in steps of 1/4096: no period to alias with. */
		iters = UNIT_ITERS + rng_next(&seed) % (6 * 4096) * UNIT_ITERS / 4096;
		hot_a(iters);
		hot_b(iters);
		rounds++;
	}
	printf("spin: %llu rounds, %.3f s of CPU\n", (unsigned long long)rounds,
	       clock_s(CLOCK_PROCESS_CPUTIME_ID));
	return 0;
}
