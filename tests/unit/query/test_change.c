// SPDX-License-Identifier: Apache-2.0
/*
 * test_change.c - the change tests of src/query/change.c on real values:
 * the two-build case of a sort 92 % faster with search unchanged (search's
 * share jumps, z = 35.7, while its rate is unchanged: Poisson p = 0.52;
 * sort's rate falls with p ~ 0), exact binomial p-values checked against
 * exact rational sums (5 -> 0 samples is p = 0.0625, not significant),
 * unequal windows (exposure), Benjamini-Hochberg q-values, and a same-build
 * split of 400 functions at 100 Hz that flags nothing once adjusted.
 */
#include "base/compat.h"
#include "query/change.h"

#include <math.h>
#include <setjmp.h>
#include <cmocka.h>

#define NEAR(x, want, tol) assert_true(fabs((x) - (want)) <= (tol))

/*
 * 60 s per build at 100 Hz: search 4210 -> 4150 samples (42.1 s -> 41.5 s),
 * sort 4000 -> 320 (-92 %), the rest 1000 on both: totals 9210 and 5470.
 */
static void test_two_builds_sort_shrinks_search_unchanged(void **state)
{
	(void)state;
	double zs = query_change_share_z(4210, 9210, 4150, 5470);

	NEAR(zs, 35.679248, 1e-5); /* search "grew" in share: what the share test sees */
	NEAR(query_change_rate_z(4210, 60, 4150, 60), -0.656218, 1e-6);
	NEAR(query_change_rate_p(4210, 60, 4150, 60), 0.518748, 1e-5); /* exact: unchanged */
	assert_true(query_change_rate_p(4000, 60, 320, 60) < 1e-300);  /* sort: real */
	NEAR(query_change_rate_z(4000, 60, 320, 60), -55.989, 1e-3);
	/* the rest: identical counts */
	NEAR(query_change_rate_p(1000, 60, 1000, 60), 1.0, 1e-12);
}

static void test_exact_poisson_p_values(void **state)
{
	(void)state;
	/* 5 -> 0 in equal windows: 2 * 2^-5. The normal approximation would say 0.025. */
	NEAR(query_change_rate_p(5, 1, 0, 1), 0.0625, 1e-12);
	NEAR(query_change_rate_p(0, 1, 5, 1), 0.0625, 1e-12);
	NEAR(query_change_rate_p(30, 1, 12, 1), 0.00791590, 1e-8);
	/* Exposure: 2 in a 2 s window vs 10 in 1 s, p0 = 1/3. */
	NEAR(query_change_rate_p(2, 2, 10, 1), 0.00108761, 1e-8);
	NEAR(query_change_rate_z(2, 2, 10, 1), 3.674235, 1e-6);
	/* Same rate, different windows: 20 in 2 s vs 10 in 1 s. */
	assert_true(query_change_rate_p(20, 2, 10, 1) > 0.99);
	NEAR(query_change_rate_z(20, 2, 10, 1), 0.0, 1e-12);
	/* Untestable: no samples or no window. */
	NEAR(query_change_rate_p(0, 1, 0, 1), 1.0, 0);
	NEAR(query_change_rate_p(3, 0, 1, 1), 1.0, 0);
	NEAR(query_change_rate_z(0, 1, 0, 1), 0.0, 0);
	/* Past the exact limit: the normal approximation. */
	NEAR(query_change_rate_p(20000, 1, 20400, 1),
	     query_change_p_of_z((20400.0 - 20000.0) / sqrt(40400.0)), 1e-15);
}

static void test_share_z_and_alpha(void **state)
{
	(void)state;
	NEAR(query_change_share_z(60, 100, 80, 100), 3.086067, 1e-6);
	NEAR(query_change_share_z(1, 0, 1, 3), 0.0, 0);
	NEAR(query_change_share_z(0, 10, 0, 10), 0.0, 0);
	NEAR(query_change_alpha(1.96), 0.049996, 1e-6);
	NEAR(query_change_p_of_z(-1.96), query_change_p_of_z(1.96), 0);
}

static void test_benjamini_hochberg(void **state)
{
	double p[] = { 0.01, 0.04, 0.03, 0.005 }, q[4];
	double same[] = { 0.5, 0.5 }, one[] = { 0.2 };

	(void)state;
	query_change_bh(p, 4, q);
	NEAR(q[0], 0.02, 1e-12);
	NEAR(q[1], 0.04, 1e-12);
	NEAR(q[2], 0.04, 1e-12);
	NEAR(q[3], 0.02, 1e-12);
	query_change_bh(same, 2, same); /* in place */
	NEAR(same[0], 0.5, 1e-12);
	NEAR(same[1], 0.5, 1e-12);
	query_change_bh(one, 1, one);
	NEAR(one[0], 0.2, 1e-12);
	query_change_bh(NULL, 0, NULL);
}

/*
 * A same-build split: one steady workload of 400 functions, each sampled
 * at its own rate (1 .. 400 per 30 s half), the halves drawn as two
 * Poisson counts (fixed seed). Unadjusted, some pass p < 0.05 by chance;
 * after Benjamini-Hochberg none does. Both halves are 30 s.
 */
static uint64_t rng = 0x9e3779b97f4a7c15ull;

static double uniform(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

static double poisson(double mean)
{
	double l = exp(-mean), prod = uniform(), k = 0;

	if (mean > 50) /* normal approximation, rounded */
		return fmax(0, round(mean + sqrt(mean) * sqrt(-2 * log(uniform())) *
						    cos(2 * M_PI * uniform())));
	while (prod > l) {
		prod *= uniform();
		k++;
	}
	return k;
}

static void test_same_build_split_flags_nothing_after_bh(void **state)
{
	enum { N = 400 };
	double p[N], q[N];
	size_t raw = 0, adjusted = 0;

	(void)state;
	for (int i = 0; i < N; i++) {
		double mean = (double)(i + 1);

		p[i] = query_change_rate_p(poisson(mean), 30, poisson(mean), 30);
		raw += p[i] < 0.05;
	}
	query_change_bh(p, N, q);
	for (int i = 0; i < N; i++)
		adjusted += q[i] < 0.05;
	assert_true(raw > 0); /* the problem BH solves is there */
	assert_int_equal(adjusted, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_builds_sort_shrinks_search_unchanged),
		cmocka_unit_test(test_exact_poisson_p_values),
		cmocka_unit_test(test_share_z_and_alpha),
		cmocka_unit_test(test_benjamini_hochberg),
		cmocka_unit_test(test_same_build_split_flags_nothing_after_bh),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
