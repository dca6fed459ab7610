// SPDX-License-Identifier: Apache-2.0
/*
 * test_maint.c - the row order of a flushed block's series
 * (store_rows_sort, src/store/maint.c): by time, then stack id, rows with
 * equal time and stack in arrival order. Each shape of input is checked
 * against a reference (qsort on time, stack and arrival index): the
 * shapes take the sort's different paths (a radix pass on the time, a
 * radix sort on the stack when all times are equal, runs of equal times
 * fixed up by stack, the merge sort for small or wide segments, rows
 * already in order).
 */
#include "base/compat.h"
#include "base/mem.h"
#include "store/store_int.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

struct ref_row {
	struct store_row r;
	size_t idx; /* arrival order */
};

static int cmp_ref(const void *a, const void *b)
{
	const struct ref_row *x = a, *y = b;

	if (x->r.ts_ns != y->r.ts_ns)
		return x->r.ts_ns < y->r.ts_ns ? -1 : 1;
	if (x->r.stack != y->r.stack)
		return x->r.stack < y->r.stack ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sort @r[@n] (values are the arrival index) and compare with the reference. */
static void check_sort(struct store_row *r, size_t n)
{
	struct ref_row *ref = xmalloc(sizeof(*ref) * (n + 1));

	for (size_t i = 0; i < n; i++) {
		r[i].value = (int64_t)i;
		ref[i].r = r[i];
		ref[i].idx = i;
	}
	qsort(ref, n, sizeof(*ref), cmp_ref);
	store_rows_sort(r, n);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(r[i].ts_ns, ref[i].r.ts_ns);
		assert_int_equal(r[i].stack, ref[i].r.stack);
		assert_int_equal(r[i].value, ref[i].r.value); /* stable */
		assert_int_equal(r[i].attrs, ref[i].r.attrs);
	}
	free(ref);
}

#define T0 1700000000000000000ll

/* Requests of 200 rows, 50 stacks x 4 times each, grouped by stack. */
static size_t grouped(struct store_row *r, size_t nreq, bool same_times)
{
	size_t n = 0;

	for (size_t q = 0; q < nreq; q++) {
		int64_t now = same_times ? T0 : T0 + (int64_t)q * 2000000;

		for (uint32_t s = 0; s < 50; s++)
			for (uint32_t i = s; i < 200; i += 50)
				r[n++] = (struct store_row){ now + i, 0, 1000 + s * 24, s % 3 };
	}
	return n;
}

static void test_rows_sort_matches_a_stable_sort_on_time_then_stack(void **state)
{
	size_t cap = 2000 * 200;
	struct store_row *r = xmalloc(sizeof(*r) * cap);
	size_t n;

	(void)state;
	/* Every request repeats the same 200 times (the synthetic load): one
	 * segment, a radix pass on the time, equal (time, stack) rows. */
	check_sort(r, grouped(r, 2000, true));
	/* Each request its own time-ordered segment of 200 rows. */
	check_sort(r, grouped(r, 500, false));
	/* All rows at one time (a pprof profile): ordered by stack alone,
	 * with duplicates; stack ids of up to 3 bytes. */
	for (uint32_t mask = 0xff; mask <= 0xffffff; mask = mask << 8 | 0xff) {
		n = 5000;
		for (size_t i = 0; i < n; i++)
			r[i] = (struct store_row){ T0, 0, (uint32_t)rnd() & mask, (uint32_t)i % 4 };
		check_sort(r, n);
	}
	/* Equal times with stacks out of order inside a radix-sorted segment. */
	n = 3000;
	for (size_t i = 0; i < n; i++)
		r[i] = (struct store_row){ T0 + (int64_t)(rnd() % 300), 0, (uint32_t)(rnd() % 7),
					   0 };
	check_sort(r, n);
	/* Random times over a day (several radix digits), over all of int64
	 * (too wide: the merge sort), and a few rows (insertion sort). */
	n = 20000;
	for (size_t i = 0; i < n; i++)
		r[i] = (struct store_row){ T0 + (int64_t)(rnd() % 86400000000000ull), 0,
					   (uint32_t)rnd(), 0 };
	check_sort(r, n);
	for (size_t i = 0; i < n; i++)
		r[i] = (struct store_row){ (int64_t)rnd(), 0, (uint32_t)(rnd() % 5), 0 };
	check_sort(r, n);
	n = 20;
	for (size_t i = 0; i < n; i++)
		r[i] = (struct store_row){ T0 - (int64_t)(rnd() % 10), 0, (uint32_t)(rnd() % 3),
					   0 };
	check_sort(r, n);
	/* Small requests whose times overlap (agent-like): segments of a few
	 * to a few hundred rows. */
	n = 0;
	for (size_t q = 0; q < 3000; q++)
		for (int i = 0; i < 7; i++)
			r[n++] = (struct store_row){ T0 + (int64_t)q * 2000000 -
							     (int64_t)(rnd() % 20000000),
						     0, (uint32_t)(rnd() % 100000), 0 };
	check_sort(r, n);
	/* Already in order, and empty. */
	for (size_t i = 0; i < 1000; i++)
		r[i] = (struct store_row){ T0 + (int64_t)i / 3, 0, (uint32_t)i, 0 };
	check_sort(r, 1000);
	check_sort(r, 0);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rows_sort_matches_a_stable_sort_on_time_then_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
