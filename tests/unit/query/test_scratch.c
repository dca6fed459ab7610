// SPDX-License-Identifier: Apache-2.0
/*
 * test_scratch.c - the pool of per-query arrays (src/query/scratch.c): a
 * given-back block is handed out again (zeroed when asked), the smallest
 * fitting block is picked, small requests bypass the pool, a full pool
 * keeps its larger blocks, free() of a taken block is allowed, and trim
 * empties it.
 */
#include "base/compat.h"
#include "query/scratch.h"

#include <malloc.h>
#include <setjmp.h>
#include <cmocka.h>

#define MIB ((size_t)1 << 20)

static int reset(void **state)
{
	(void)state;
	query_scratch_trim();
	return 0;
}

static void test_given_block_is_taken_again_and_zeroed(void **state)
{
	struct query_scratch_stats st0, st;
	unsigned char *p, *q;

	(void)state;
	query_scratch_stats(&st0);
	p = query_scratch_take(MIB, 1, true);
	for (size_t i = 0; i < MIB; i++)
		assert_int_equal(p[i], 0);
	memset(p, 0xab, MIB);
	query_scratch_give(p);
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 1);
	assert_true(st.bytes >= MIB);
	assert_int_equal(st.misses, st0.misses + 1);

	q = query_scratch_take(MIB / 2, 2, true); /* the same size: the same block, cleared */
	assert_ptr_equal(q, p);
	for (size_t i = 0; i < MIB; i++)
		assert_int_equal(q[i], 0);
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(st.hits, st0.hits + 1);

	memset(q, 0xcd, MIB);
	query_scratch_give(q);
	q = query_scratch_take(MIB, 1, false); /* not cleared when not asked */
	assert_ptr_equal(q, p);
	assert_int_equal(q[MIB - 1], 0xcd);
	free(q); /* a taken block may also be freed */
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 0);
}

static void test_smallest_fitting_block_is_picked(void **state)
{
	void *big = query_scratch_take(8 * MIB, 1, false);
	void *mid = query_scratch_take(2 * MIB, 1, false);
	void *small = query_scratch_take(MIB, 1, false);
	struct query_scratch_stats st;

	(void)state;
	query_scratch_give(big);
	query_scratch_give(mid);
	query_scratch_give(small);
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 3);
	/* past small's usable size (glibc rounds a 1 MiB mmap up to a page) */
	assert_ptr_equal(query_scratch_take(MIB + 64 * 1024, 1, false), mid);
	assert_ptr_equal(query_scratch_take(MIB, 1, false), small);
	void *fresh = query_scratch_take(16 * MIB, 1, false); /* none fits: a new one */
	assert_ptr_not_equal(fresh, big);
	assert_ptr_not_equal(fresh, mid);
	assert_ptr_not_equal(fresh, small);
	assert_true(malloc_usable_size(fresh) >= 16 * MIB);
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 1); /* big is still parked */
	free(fresh);
	free(mid);
	free(small);
}

static void test_small_requests_bypass_the_pool(void **state)
{
	struct query_scratch_stats st0, st;
	unsigned char *p;

	(void)state;
	query_scratch_stats(&st0);
	p = query_scratch_take(100, 8, true);
	for (size_t i = 0; i < 800; i++)
		assert_int_equal(p[i], 0);
	query_scratch_give(p);
	query_scratch_give(NULL);
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(st.hits, st0.hits);
	assert_int_equal(st.misses, st0.misses);
	p = query_scratch_take(0, 8, true); /* an empty array is still a pointer */
	assert_non_null(p);
	query_scratch_give(p);
}

static void test_full_pool_keeps_the_larger_blocks(void **state)
{
	void *b[QUERY_SCRATCH_SLOTS + 1];
	struct query_scratch_stats st;

	(void)state;
	for (size_t i = 0; i <= QUERY_SCRATCH_SLOTS; i++)
		b[i] = query_scratch_take(QUERY_SCRATCH_MIN_BYTES + i * 4096, 1, false);
	for (size_t i = 0; i <= QUERY_SCRATCH_SLOTS; i++)
		query_scratch_give(b[i]);
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, QUERY_SCRATCH_SLOTS);
	/* The smallest (b[0]) was dropped: every kept block is larger. */
	for (size_t i = 0; i < QUERY_SCRATCH_SLOTS; i++) {
		void *p = query_scratch_take(QUERY_SCRATCH_MIN_BYTES, 1, false);

		assert_true(malloc_usable_size(p) >= QUERY_SCRATCH_MIN_BYTES + 4096);
		free(p);
	}
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 0);

	/* Too large to keep: freed at once. */
	void *huge = query_scratch_take(QUERY_SCRATCH_MAX_BYTES + MIB, 1, false);
	query_scratch_give(huge);
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 0);
}

static void test_trim_empties_the_pool(void **state)
{
	struct query_scratch_stats st;

	(void)state;
	query_scratch_give(query_scratch_take(MIB, 1, false));
	query_scratch_give(query_scratch_take(3 * MIB, 1, false));
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 2);
	assert_true(st.bytes >= 4 * MIB);
	/* blocks parked just now are not idle: expiry keeps them */
	query_scratch_expire();
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 2);
	query_scratch_trim();
	query_scratch_stats(&st);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(st.bytes, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_given_block_is_taken_again_and_zeroed, reset),
		cmocka_unit_test_setup(test_smallest_fitting_block_is_picked, reset),
		cmocka_unit_test_setup(test_small_requests_bypass_the_pool, reset),
		cmocka_unit_test_setup(test_full_pool_keeps_the_larger_blocks, reset),
		cmocka_unit_test_setup(test_trim_empties_the_pool, reset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
