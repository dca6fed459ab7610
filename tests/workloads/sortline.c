// SPDX-License-Identifier: Apache-2.0
/*
 * sortline.c - a sort whose cost is in one known source line: main()
 * sorts an array again and again with qsort() and a slow comparator,
 * cmp_slow(), that burns its time in the one-line loop marked HOT (the
 * line the source view must name hottest), then compares on the line
 * marked CMP. Built -O0 -g by the test so every address of the loop maps
 * to that line in the DWARF line table. Runs for SECONDS (default 5).
 *
 * Build: cc -O0 -g -fno-omit-frame-pointer -o sortline sortline.c
 */
#include <stdlib.h>
#include <time.h>

volatile long sink;

__attribute__((noinline)) static int cmp_slow(const void *a, const void *b)
{
	long x = *(const long *)a, y = *(const long *)b, acc = 0;

	// clang-format off
	for (long i = 0; i < 2000; i++) acc = acc * 31 + (i ^ x); /* HOT */
	// clang-format on
	sink = acc;
	return (x > y) - (x < y); /* CMP */
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 5;
	long v[64];
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 64; i++)
			v[i] = (i * 7919) % 64;
		qsort(v, 64, sizeof(v[0]), cmp_slow);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return 0;
}
