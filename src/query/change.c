// SPDX-License-Identifier: Apache-2.0
/* change.c - tests of a change between two selections; see change.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/change.h"

#include <math.h>

double query_change_share_z(double ka, double na, double kb, double nb)
{
	if (na <= 0 || nb <= 0)
		return 0.0;
	double p = (ka + kb) / (na + nb);
	double var = p * (1 - p) * (1.0 / na + 1.0 / nb);

	return var > 0 ? (kb / nb - ka / na) / sqrt(var) : 0.0;
}

double query_change_rate_z(double ka, double ta, double kb, double tb)
{
	double n = ka + kb;

	if (n <= 0 || ta <= 0 || tb <= 0)
		return 0.0;
	double p0 = tb / (ta + tb);

	return (kb - n * p0) / sqrt(n * p0 * (1 - p0));
}

double query_change_p_of_z(double z)
{
	return erfc(fabs(z) / sqrt(2.0));
}

double query_change_alpha(double z)
{
	return query_change_p_of_z(z);
}

/*
 * P(X <= k) when k is below the mean n p, else P(X >= k), X ~ Binomial(n,
 * p): the tail on k's side, summed from k outwards (terms shrink
 * geometrically there, so the sum stops once they no longer count).
 */
static double binom_tail(uint64_t k, uint64_t n, double p)
{
	double lp = log(p), lq = log1p(-p);
	double term = exp(lgamma((double)n + 1) - lgamma((double)k + 1) -
			  lgamma((double)(n - k) + 1) + (double)k * lp + (double)(n - k) * lq);
	double sum = term, odds = p / (1 - p);

	if ((double)k <= (double)n * p) {
		for (uint64_t i = k; i > 0 && term > sum * 1e-17; i--) {
			term *= (double)i / (double)(n - i + 1) / odds;
			sum += term;
		}
	} else {
		for (uint64_t i = k; i < n && term > sum * 1e-17; i++) {
			term *= (double)(n - i) / (double)(i + 1) * odds;
			sum += term;
		}
	}
	return sum;
}

double query_change_rate_p(double ka, double ta, double kb, double tb)
{
	double n = round(ka) + round(kb);

	if (n <= 0 || ta <= 0 || tb <= 0)
		return 1.0;
	if (n > QUERY_CHANGE_EXACT_MAX)
		return query_change_p_of_z(query_change_rate_z(ka, ta, kb, tb));
	double p0 = tb / (ta + tb), tail = binom_tail((uint64_t)round(kb), (uint64_t)n, p0);

	return tail * 2 < 1 ? tail * 2 : 1.0;
}

struct ranked {
	double p;
	size_t i;
};

/* Smaller p first; ties in input order. */
static int cmp_ranked(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;

	if (a->p != b->p)
		return a->p < b->p ? -1 : 1;
	return a->i < b->i ? -1 : a->i > b->i;
}

void query_change_bh(const double *p, size_t n, double *q)
{
	struct ranked *r;
	double run = 1.0;

	if (!n)
		return;
	r = xmalloc(n * sizeof(*r));
	for (size_t i = 0; i < n; i++) {
		r[i].p = p[i];
		r[i].i = i;
	}
	qsort(r, n, sizeof(*r), cmp_ranked);
	for (size_t k = n; k-- > 0;) {
		double v = r[k].p * (double)n / (double)(k + 1);

		if (v < run)
			run = v;
		r[k].p = run;
	}
	for (size_t k = 0; k < n; k++)
		q[r[k].i] = r[k].p;
	free(r);
}
