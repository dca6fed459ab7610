// SPDX-License-Identifier: Apache-2.0
/*
 * qsort_nofp.c - workload for test_agent_dwarf.sh, built with -O2
 * -fomit-frame-pointer: its hot function, cmp_slow(), is a comparator
 * that libc's qsort() and bsearch() call (Debian's libc has no frame
 * pointers either), so frame-pointer unwinding cannot see main() above
 * it. main() alternates two phases and measures their CPU time with
 * CLOCK_THREAD_CPUTIME_ID: sort_phase() (qsort + bsearch with cmp_slow)
 * and mix_phase() (a plain loop), and prints the share of sort_phase, the
 * expected share of samples whose stack has sort_phase in it.
 *
 *   qsort_nofp [SECONDS]   runs for SECONDS (default 6) of wall time; with
 *   QSORT_CPU_SECONDS set in the environment it runs on past SECONDS until
 *   its thread has used that much CPU (a loaded machine gives it less than
 *   SECONDS), but for at most 5 * SECONDS, as spin.c does.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define N 20000

static volatile uint64_t sink;

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Expensive on purpose: the comparator is where the time goes. */
__attribute__((noinline)) int cmp_slow(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	for (int i = 0; i < 24; i++) {
		x = x * 6364136223846793005ULL + 1;
		y = y * 6364136223846793005ULL + 1;
		__asm__ volatile("" : "+r"(x), "+r"(y));
	}
	return (*(const uint64_t *)a > *(const uint64_t *)b) -
	       (*(const uint64_t *)a < *(const uint64_t *)b) + (int)((x ^ y) & 0);
}

__attribute__((noinline)) void sort_phase(uint64_t *v, uint64_t *seed)
{
	for (int i = 0; i < N; i++) {
		*seed = *seed * 6364136223846793005ULL + 1442695040888963407ULL;
		v[i] = *seed >> 11;
	}
	qsort(v, N, sizeof(*v), cmp_slow);
	for (int i = 0; i < N; i += 4)
		sink += bsearch(&v[i], v, N, sizeof(*v), cmp_slow) != NULL;
}

__attribute__((noinline)) void mix_phase(uint64_t *seed)
{
	uint64_t x = *seed;

	for (long i = 0; i < 6000000; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		__asm__ volatile("" : "+r"(x));
	}
	*seed = x;
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 6.0, start = wall_s();
	const char *cpu_env = getenv("QSORT_CPU_SECONDS");
	double cpu_want = cpu_env ? atof(cpu_env) : 0.0;
	double t_sort = 0, t_mix = 0, t, ran;
	uint64_t *v = malloc(N * sizeof(*v)), seed = 42;

	if (!v || !(seconds > 0))
		return 2;
	for (;;) {
		ran = wall_s() - start;
		if (ran >= 5 * seconds || (ran >= seconds && t_sort + t_mix >= cpu_want))
			break;
		t = cpu_s();
		sort_phase(v, &seed);
		t_sort += cpu_s() - t;
		t = cpu_s();
		mix_phase(&seed);
		t_mix += cpu_s() - t;
	}
	printf("qsort_nofp: sort_phase %.3f s mix_phase %.3f s share %.1f\n", t_sort, t_mix,
	       100.0 * t_sort / (t_sort + t_mix));
	free(v);
	return 0;
}
