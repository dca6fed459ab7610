// SPDX-License-Identifier: Apache-2.0
/*
 * test_top.c - the top table (src/query/top.c) on handmade profiles:
 * recursion counted once in totals, inlined lines as functions of their
 * own, frames without lines named after their mapping, pprof's ordering
 * (self, then name, then total), zero rows dropped, negative values
 * ordered by magnitude, and the "(inline)" labels that depend on which
 * rows are shown.
 */
#include "base/compat.h"
#include "model/profile.h"
#include "query/top.h"

#include <setjmp.h>
#include <cmocka.h>

static uint32_t fn(struct model_profile *p, const char *name)
{
	return model_function_intern(p, model_intern(p, name), 0, 0, 0);
}

static void add_sample(struct model_profile *p, const uint32_t *locs, uint32_t n, int64_t v)
{
	uint32_t off = model_stack_add(p, locs, n);

	model_sample_add(p, off, n, &v, NULL, 0, 0, 0);
}

static const char *name_of(const struct query_top *t, const struct query_top_row *r)
{
	return t->names.s[r->fn];
}

/*
 * Stacks (leaf first):  [mix,hashLoop,worker] <- [main]   x 4
 *                       [hashLoop,worker] <- [main]       x 2
 *                       [rec] <- [rec] <- [main]           x 3
 *                       [0x10 in /lib/libc.so.6] <- [main] x 1
 *                       [] (no frames)                     x 5
 *                       [zero] <- [main]                   x 0
 */
static void build(struct model_profile *p)
{
	struct model_mapping m = { 0 };
	struct model_line l3[3] = { { 0 } }, l2[2] = { { 0 } }, l1 = { 0 };
	uint32_t main_loc, inl3, inl2, rec, libc, zero, s[3];

	model_profile_init(p);
	model_sample_type_add(p, "samples", "count");
	m.filename = model_intern(p, "/lib/libc.so.6");
	model_mapping_add(p, &m);
	l1.function = fn(p, "main");
	main_loc = model_location_add(p, 0, 0x1, &l1, 1);
	l3[0].function = fn(p, "mix");
	l3[1].function = fn(p, "hashLoop");
	l3[2].function = fn(p, "worker");
	inl3 = model_location_add(p, 0, 0x2, l3, 3);
	l2[0].function = fn(p, "hashLoop");
	l2[1].function = fn(p, "worker");
	inl2 = model_location_add(p, 0, 0x3, l2, 2);
	l1.function = fn(p, "rec");
	rec = model_location_add(p, 0, 0x4, &l1, 1);
	libc = model_location_add(p, 1, 0x10, NULL, 0);
	l1.function = fn(p, "zero");
	zero = model_location_add(p, 0, 0x5, &l1, 1);

	s[0] = inl3, s[1] = main_loc;
	add_sample(p, s, 2, 4);
	s[0] = inl2, s[1] = main_loc;
	add_sample(p, s, 2, 2);
	s[0] = rec, s[1] = rec, s[2] = main_loc;
	add_sample(p, s, 3, 3);
	s[0] = libc, s[1] = main_loc;
	add_sample(p, s, 2, 1);
	add_sample(p, NULL, 0, 5);
	s[0] = zero, s[1] = main_loc;
	add_sample(p, s, 2, 0);
	assert_int_equal(model_profile_validate(p, NULL), 0);
}

static void test_self_total_and_order(void **state)
{
	struct model_profile p;
	struct query_top t;
	struct query_top_row *r;
	size_t n;

	(void)state;
	build(&p);
	assert_int_equal(query_top_build(&p, &t), 0);
	assert_int_equal(t.totals[0], 15);
	r = query_top_rows(&t, 0, false, &n);
	assert_int_equal(n, 6); /* "zero" has self 0 and total 0: no row */
	assert_string_equal(name_of(&t, &r[0]), "mix");
	assert_int_equal(r[0].self, 4);
	assert_int_equal(r[0].total, 4);
	assert_string_equal(name_of(&t, &r[1]), "rec");
	assert_int_equal(r[1].self, 3);
	assert_int_equal(r[1].total, 3); /* recursion counted once */
	assert_string_equal(name_of(&t, &r[2]), "hashLoop");
	assert_int_equal(r[2].self, 2);
	assert_int_equal(r[2].total, 6);
	assert_string_equal(name_of(&t, &r[3]), "[libc.so.6]");
	assert_int_equal(r[3].self, 1);
	assert_int_equal(r[3].total, 1);
	/* self 0: by name, bytewise */
	assert_string_equal(name_of(&t, &r[4]), "main");
	assert_int_equal(r[4].total, 10);
	assert_string_equal(name_of(&t, &r[5]), "worker");
	assert_int_equal(r[5].total, 6);
	free(r);
	r = query_top_rows(&t, 0, true, &n);
	assert_string_equal(name_of(&t, &r[0]), "main");
	/* total ties (6): by name, then self */
	assert_string_equal(name_of(&t, &r[1]), "hashLoop");
	assert_string_equal(name_of(&t, &r[2]), "worker");
	free(r);
	query_top_release(&t);
	model_profile_release(&p);
}

static void test_inline_labels_follow_shown_rows(void **state)
{
	struct model_profile p;
	struct query_top t;
	struct query_top_row *r;
	const char **labels;
	size_t n;

	(void)state;
	build(&p);
	assert_int_equal(query_top_build(&p, &t), 0);
	r = query_top_rows(&t, 0, false, &n);
	/* All rows shown: hashLoop's caller worker is shown and always inlines it. */
	labels = query_top_inline_labels(&p, &t, 0, r, n);
	assert_string_equal(labels[0], "(inline)"); /* mix */
	assert_string_equal(labels[1], "");	    /* rec: called, and recursion is no edge */
	assert_string_equal(labels[2], "(inline)"); /* hashLoop */
	assert_string_equal(labels[5], "");	    /* worker: called by main */
	free(labels);
	/* Top 3 only: worker is not shown, so hashLoop has no shown caller. */
	labels = query_top_inline_labels(&p, &t, 0, r, 3);
	assert_string_equal(labels[0], "(inline)");
	assert_string_equal(labels[2], "");
	free(labels);
	free(r);
	query_top_release(&t);
	model_profile_release(&p);
}

static void test_negative_values_by_magnitude(void **state)
{
	struct model_profile p;
	struct model_line l = { 0 };
	struct query_top t;
	struct query_top_row *r;
	uint32_t a, b;
	size_t n;

	(void)state;
	model_profile_init(&p);
	model_sample_type_add(&p, "delay", "nanoseconds");
	l.function = fn(&p, "a");
	a = model_location_add(&p, 0, 1, &l, 1);
	l.function = fn(&p, "b");
	b = model_location_add(&p, 0, 2, &l, 1);
	add_sample(&p, &a, 1, -7);
	add_sample(&p, &b, 1, 5);
	assert_int_equal(query_top_build(&p, &t), 0);
	r = query_top_rows(&t, 0, false, &n);
	assert_int_equal(n, 2);
	assert_string_equal(name_of(&t, &r[0]), "a");
	assert_int_equal(r[0].self, -7);
	assert_int_equal(t.totals[0], -2);
	free(r);
	query_top_release(&t);
	model_profile_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_self_total_and_order),
		cmocka_unit_test(test_inline_labels_follow_shown_rows),
		cmocka_unit_test(test_negative_values_by_magnitude),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
