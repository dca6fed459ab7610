// SPDX-License-Identifier: Apache-2.0
/*
 * test_perfmap.c - /tmp/perf-PID.map tables: node's and Java's line
 * shapes, names with spaces, "0x" prefixes, unsorted input, a later line
 * replacing an earlier one at the same start, malformed lines skipped and
 * counted, the symbol bound, and reloads only when the file changed.
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/perfmap.h"

#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static void test_parse_and_lookup(void **state)
{
	static const char text[] = "3a2f0c40 8c JS:*fib /tmp/w/hot.js:3\n"
				   "0x3a2f0a00 40 Builtin:ArgumentsAdaptorTrampoline\n"
				   "7f00 10 Interpreted void Foo.bar(int)\r\n"
				   "\n"
				   "not a line\n"
				   "12zz 10 bad hex\n"
				   "5000 0 zero sized\n"
				   "3a2f0c40 20 JS:*fib2 /tmp/w/hot.js:3\n"
				   "ffffffffffffffff 10 wraps\n";
	struct agent_perfmap pm = { 0 };

	(void)state;
	assert_int_equal(agent_perfmap_parse(&pm, text, sizeof(text) - 1, 0), 3);
	assert_int_equal(pm.bad_lines, 4);
	/* Later line at the same start wins (re-JIT at a reused address). */
	assert_string_equal(agent_perfmap_lookup(&pm, 0x3a2f0c40), "JS:*fib2 /tmp/w/hot.js:3");
	assert_string_equal(agent_perfmap_lookup(&pm, 0x3a2f0c5f), "JS:*fib2 /tmp/w/hot.js:3");
	assert_null(agent_perfmap_lookup(&pm, 0x3a2f0c60));
	assert_string_equal(agent_perfmap_lookup(&pm, 0x3a2f0a3f),
			    "Builtin:ArgumentsAdaptorTrampoline");
	assert_string_equal(agent_perfmap_lookup(&pm, 0x7f05), "Interpreted void Foo.bar(int)");
	assert_null(agent_perfmap_lookup(&pm, 0x7eff));
	assert_null(agent_perfmap_lookup(&pm, 0));
	/* The bound keeps the first lines. */
	assert_int_equal(agent_perfmap_parse(&pm, text, sizeof(text) - 1, 1), 1);
	assert_string_equal(agent_perfmap_lookup(&pm, 0x3a2f0c40), "JS:*fib /tmp/w/hot.js:3");
	agent_perfmap_release(&pm);
}

static void test_load_reloads_on_change(void **state)
{
	char path[] = "/tmp/profd-test-perfmap-XXXXXX";
	struct agent_perfmap pm = { 0 };
	int fd = mkstemp(path);
	FILE *f;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	f = fopen(path, "w");
	fprintf(f, "1000 100 first\n");
	fclose(f);
	assert_int_equal(agent_perfmap_load(&pm, path, 1 << 20, 0), 1);
	assert_string_equal(agent_perfmap_lookup(&pm, 0x1010), "first");
	assert_int_equal(agent_perfmap_load(&pm, path, 1 << 20, 0), 0); /* unchanged */
	f = fopen(path, "a");
	fprintf(f, "2000 100 second\n");
	fclose(f);
	assert_int_equal(agent_perfmap_load(&pm, path, 1 << 20, 0), 1);
	assert_string_equal(agent_perfmap_lookup(&pm, 0x20ff), "second");
	assert_int_equal(agent_perfmap_load(&pm, path, 8, 0), 0); /* same size: unchanged */
	f = fopen(path, "a");
	fprintf(f, "3000 100 third\n");
	fclose(f);
	/* Too big now: refused, the old table stays. */
	assert_int_equal(agent_perfmap_load(&pm, path, 8, 0), -PROF_ETOOBIG);
	assert_string_equal(agent_perfmap_lookup(&pm, 0x1000), "first");
	unlink(path);
	assert_int_equal(agent_perfmap_load(&pm, path, 1 << 20, 0), -ENOENT);
	assert_string_equal(agent_perfmap_lookup(&pm, 0x2000), "second");
	agent_perfmap_release(&pm);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_and_lookup),
		cmocka_unit_test(test_load_reloads_on_change),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
