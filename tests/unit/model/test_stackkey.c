// SPDX-License-Identifier: Apache-2.0
/*
 * test_stackkey.c - content keys (src/model/stackkey.c): equal content,
 * equal key; the fields of each kind of key each change it; keys of
 * different kinds never coincide by construction (a string spelling a
 * mapping's hashed fields, two unsymbolized frames whose mapping and
 * frame type keys are swapped: both were ways to merge two different
 * frames into one stack).
 */
#include "base/compat.h"
#include "model/stackkey.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static bool same(struct model_key a, struct model_key b)
{
	return a.lo == b.lo && a.hi == b.hi;
}

static void test_kinds_do_not_collide(void **state)
{
	struct model_key f = model_key_bytes("/lib/a.so", 9), b = model_key_bytes("x", 1);
	uint64_t w[8] = { 0x400000, 0x500000, 0, f.lo, f.hi, b.lo, b.hi, 0 };
	struct model_key m = model_key_mapping(0x400000, 0x500000, 0, f, b, 0);

	(void)state;
	/* the same bytes as a string are another key */
	assert_false(same(model_key_bytes(w, sizeof(w)), m));
	/* a location of (mapping, frame type) is not that of (frame type, mapping) */
	assert_false(same(model_key_location(m, 0x401234, false, f, NULL, 0),
			  model_key_location(f, 0x401234, false, m, NULL, 0)));
	/* nor a stack of one frame that frame */
	struct model_key l = model_key_location(m, 0x401234, false, f, NULL, 0);
	assert_false(same(model_key_stack(&l, 1), l));
}

static void test_every_field_counts(void **state)
{
	struct model_key m =
		model_key_mapping(1, 2, 3, model_key_bytes("a", 1), model_key_bytes("b", 1), 5);
	struct model_key ft = model_key_bytes("native", 6), none = model_key_bytes("", 0);
	struct model_key_line ln = { "main", "", "main.c", 4, 0, 6, 10, true, 30, 2 };
	struct model_key base = model_key_location(m, 0x10, false, ft, &ln, 1), k;

	(void)state;
	assert_true(same(base, model_key_location(m, 0x10, false, ft, &ln, 1)));
	assert_false(same(base, model_key_location(m, 0x11, false, ft, &ln, 1)));
	assert_false(same(base, model_key_location(m, 0x10, true, ft, &ln, 1)));
	assert_false(same(base, model_key_location(m, 0x10, false, none, &ln, 1)));
	assert_false(same(base, model_key_location(none, 0x10, false, ft, &ln, 1)));
	for (int f = 0; f < 6; f++) {
		struct model_key_line v = ln;

		switch (f) {
		case 0:
			v.name = "mai";
			v.name_len = 3;
			break;
		case 1: /* the same bytes split differently between the names */
			v.name = "mainmain.c";
			v.name_len = 10;
			v.filename = NULL;
			v.filename_len = 0;
			break;
		case 2:
			v.start_line = 11;
			break;
		case 3:
			v.has_function = false;
			break;
		case 4:
			v.line = 31;
			break;
		case 5:
			v.column = 3;
			break;
		}
		k = model_key_location(m, 0x10, false, ft, &v, 1);
		assert_false(same(base, k));
	}
	assert_false(same(
		model_key_mapping(1, 2, 3, model_key_bytes("a", 1), model_key_bytes("b", 1), 4),
		m));
	/* the empty stack is {0, 0}; a stack's key depends on its order */
	struct model_key two[2] = { base, m }, owt[2] = { m, base };
	k = model_key_stack(NULL, 0);
	assert_int_equal(k.lo, 0);
	assert_int_equal(k.hi, 0);
	assert_false(same(model_key_stack(two, 2), model_key_stack(owt, 2)));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_do_not_collide),
		cmocka_unit_test(test_every_field_counts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
