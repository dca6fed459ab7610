// SPDX-License-Identifier: Apache-2.0
/*
 * test_kallsyms.c - /proc/kallsyms parsing: text symbols only, module
 * suffix dropped, global aliases preferred, hidden (all-zero) addresses
 * give no answers, bad files are refused; and a known symbol of the
 * running kernel resolves when the kernel shows addresses.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/kallsyms.h"

#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static void write_tmp(char *tmpl, const char *text)
{
	int fd = mkstemp(tmpl);
	size_t n = strlen(text);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, n), (ssize_t)n);
	close(fd);
}

static void test_kallsyms_parses_text_symbols_and_looks_up(void **state)
{
	char tmp[] = "/tmp/profd-test-kallsyms-XXXXXX";
	struct sym_kallsyms *k = NULL;
	struct prof_err err;

	(void)state;
	write_tmp(tmp, "ffffffff81000000 t local_alias\n"
		       "ffffffff81000000 T _stext\n"
		       "ffffffff81000100 T schedule\n"
		       "ffffffff81000180 D some_data\n"
		       "this line is garbage\n"
		       "ffffffff81000200 t helper\t[mymod]\n"
		       "ffffffff81000300 W weak_fn\n"
		       "ffffffff8100zz00 T bad_hex\n"
		       "ffffffff81000400 T no_newline_at_end");
	prof_err_init(&err);
	assert_int_equal(sym_kallsyms_load(tmp, &k, &err), 0);
	unlink(tmp);
	assert_int_equal(sym_kallsyms_count(k), 5); /* _stext, schedule, helper, weak_fn, last */
	assert_null(sym_kallsyms_lookup(k, 0xffffffff80ffffffULL));
	assert_string_equal(sym_kallsyms_lookup(k, 0xffffffff81000000ULL), "_stext");
	assert_string_equal(sym_kallsyms_lookup(k, 0xffffffff81000150ULL), "schedule");
	assert_string_equal(sym_kallsyms_lookup(k, 0xffffffff810001ffULL), "schedule");
	assert_string_equal(sym_kallsyms_lookup(k, 0xffffffff81000234ULL), "helper");
	assert_string_equal(sym_kallsyms_lookup(k, 0xffffffff81000300ULL), "weak_fn");
	assert_string_equal(sym_kallsyms_lookup(k, 0xffffffff81000401ULL), "no_newline_at_end");
	sym_kallsyms_free(k);
}

static void test_kallsyms_hidden_addresses_give_nothing(void **state)
{
	char tmp[] = "/tmp/profd-test-kallsyms-XXXXXX";
	struct sym_kallsyms *k = NULL;
	struct prof_err err;

	(void)state;
	write_tmp(tmp, "0000000000000000 T _stext\n0000000000000000 T schedule\n");
	prof_err_init(&err);
	assert_int_equal(sym_kallsyms_load(tmp, &k, &err), 0);
	unlink(tmp);
	assert_int_equal(sym_kallsyms_count(k), 0);
	assert_null(sym_kallsyms_lookup(k, 0));
	assert_null(sym_kallsyms_lookup(k, 0xffffffff81000000ULL));
	sym_kallsyms_free(k);
}

static void test_kallsyms_bad_files_are_refused(void **state)
{
	char tmp[] = "/tmp/profd-test-kallsyms-XXXXXX";
	struct sym_kallsyms *k = (struct sym_kallsyms *)&k;
	struct prof_err err;

	(void)state;
	write_tmp(tmp, "no symbols\nhere\n");
	prof_err_init(&err);
	assert_int_equal(sym_kallsyms_load(tmp, &k, &err), -PROF_EFORMAT);
	assert_null(k);
	assert_non_null(strstr(err.msg, "no kernel text symbols"));
	unlink(tmp);

	prof_err_init(&err);
	assert_int_equal(sym_kallsyms_load("/nonexistent/kallsyms", &k, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/kallsyms"));
	sym_kallsyms_free(NULL);
}

/* The running kernel: "schedule" resolves to itself (or an alias at its address). */
static void test_kallsyms_real_kernel_schedule(void **state)
{
	struct sym_kallsyms *k = NULL;
	struct prof_err err;
	char line[1024], aliases[4096] = " ";
	unsigned long long addr = 0;
	const char *name;
	FILE *f;

	(void)state;
	prof_err_init(&err);
	if (sym_kallsyms_load("/proc/kallsyms", &k, &err) != 0 || sym_kallsyms_count(k) == 0) {
		sym_kallsyms_free(k);
		skip(); /* no /proc/kallsyms, or addresses hidden (kptr_restrict, not root) */
	}
	f = fopen("/proc/kallsyms", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char type, sym[512];

		if (sscanf(line, "%llx %c %511s", &addr, &type, sym) == 3 &&
		    strcmp(sym, "schedule") == 0)
			break;
		addr = 0;
	}
	assert_true(addr != 0);
	rewind(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long a;
		char type, sym[512];

		if (sscanf(line, "%llx %c %511s", &a, &type, sym) == 3 && a == addr &&
		    strlen(aliases) + strlen(sym) + 2 < sizeof(aliases)) {
			snprintf(aliases + strlen(aliases), sizeof(aliases) - strlen(aliases),
				 "%s ", sym);
		}
	}
	fclose(f);
	name = sym_kallsyms_lookup(k, addr + 1);
	assert_non_null(name);
	{
		char needle[600];

		snprintf(needle, sizeof(needle), " %s ", name);
		assert_non_null(strstr(aliases, needle));
	}
	sym_kallsyms_free(k);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kallsyms_parses_text_symbols_and_looks_up),
		cmocka_unit_test(test_kallsyms_hidden_addresses_give_nothing),
		cmocka_unit_test(test_kallsyms_bad_files_are_refused),
		cmocka_unit_test(test_kallsyms_real_kernel_schedule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
