/* SPDX-License-Identifier: Apache-2.0 */
/*
 * change.h - tests of a change between two selections, A (baseline) and
 * B, on sample counts: is a function's (or a call tree node's) change
 * more than sampling noise? Pure functions; the diff view, MCP's compare
 * and explain_change use them, so they judge alike.
 *
 * Two questions, two tests:
 *
 *   - normalized (share of each side's total): the pooled two-proportion
 *     z-test, z = (k_b/n_b - k_a/n_a) / sqrt(p (1 - p) (1/n_a + 1/n_b)),
 *     p = (k_a + k_b) / (n_a + n_b); k = the function's sample rows,
 *     n = the side's. A share moves when anything else moves: a function
 *     whose own time is unchanged gains share when another one shrinks.
 *   - absolute (rate per second of each window): samples are a Poisson
 *     process, so k_a ~ Poisson(r_a t_a), k_b ~ Poisson(r_b t_b) with
 *     t = the window's length (the exposure). Under r_a = r_b, given
 *     n = k_a + k_b, k_b ~ Binomial(n, t_b / (t_a + t_b)) (the
 *     conditional test of two Poisson rates, Przyborowski and Wilenski
 *     1940). Exact two-sided binomial p-value (twice the smaller tail,
 *     capped at 1) up to QUERY_CHANGE_EXACT_MAX samples, the normal
 *     approximation z = (k_b - n p0) / sqrt(n p0 (1 - p0)) above. With
 *     equal windows z = (k_b - k_a) / sqrt(k_a + k_b).
 *
 * Many functions are tested at once, so a few of hundreds would pass a
 * 5 % test by chance: the p-values of one comparison go through the
 * Benjamini-Hochberg step-up procedure (1995), which bounds the expected
 * share of false discoveries among the flagged ones by alpha. A function
 * is significant when its adjusted p-value (q) is < alpha. alpha comes
 * from the callers' z threshold: alpha = P(|N(0,1)| >= z), 0.05 for 1.96.
 */
#ifndef PROF_QUERY_CHANGE_H
#define PROF_QUERY_CHANGE_H

#include "base/compat.h"

/* Above this many samples (k_a + k_b) the Poisson test uses the normal approximation. */
#define QUERY_CHANGE_EXACT_MAX 20000

/**
 * query_change_share_z() - the two-proportion z of a function with @ka of
 * @na sample rows in A and @kb of @nb in B (see above). 0 when untestable
 * (a side without samples, or a pooled proportion of 0 or 1).
 */
double query_change_share_z(double ka, double na, double kb, double nb);

/**
 * query_change_rate_z() - the z of the rates @ka / @ta and @kb / @tb (sample
 * counts, window lengths in any one unit, > 0). 0 when @ka + @kb is 0 or a
 * length is not positive.
 */
double query_change_rate_z(double ka, double ta, double kb, double tb);

/**
 * query_change_rate_p() - the two-sided p-value of the conditional Poisson
 * test of @ka in a window of length @ta against @kb in @tb: exact binomial
 * up to QUERY_CHANGE_EXACT_MAX samples, else from query_change_rate_z. 1
 * when untestable (no samples, a length not positive). Counts are rounded
 * to integers.
 */
double query_change_rate_p(double ka, double ta, double kb, double tb);

/** query_change_p_of_z() - two-sided normal p-value P(|N(0,1)| >= |@z|). */
double query_change_p_of_z(double z);

/**
 * query_change_bh() - Benjamini-Hochberg adjusted p-values: @q[i] for
 * @p[i], i < @n (@q may be @p). q(i) = min over j ranked at or after i
 * of p(j) n / rank(j), capped at 1. Ties keep their order. O(n log n);
 * allocates a temporary index (dies on out of memory, as xmalloc).
 */
void query_change_bh(const double *p, size_t n, double *q);

/** query_change_alpha() - the significance level of a two-sided z threshold @z (> 0). */
double query_change_alpha(double z);

#endif
