// SPDX-License-Identifier: Apache-2.0
/*
 * test_kallsyms.c - /proc/kallsyms parsing: text symbols only, module
 * suffix dropped from the names, global aliases preferred, symbols
 * bounded by _etext and module ends, hidden (all-zero) addresses
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
	/* The last symbol, with no _etext and no next symbol: its own address only. */
	assert_string_equal(sym_kallsyms_lookup(k, 0xffffffff81000400ULL), "no_newline_at_end");
	assert_null(sym_kallsyms_lookup(k, 0xffffffff81000401ULL));
	sym_kallsyms_free(k);
}

/*
 * No symbol names addresses past the code it may cover: the kernel image
 * ends at _etext, a module at the end /proc/modules gives (the "modules"
 * file beside the kallsyms file), a module /proc/modules does not list
 * (BPF programs) at the next symbol.
 */
static void test_kallsyms_bounded_by_etext_and_module_ends(void **state)
{
	char dir[] = "/tmp/profd-test-kallsyms-XXXXXX", path[64], mods[64];
	struct sym_kallsyms *k = NULL;
	struct prof_err err;
	FILE *f;
	static const struct {
		uint64_t addr;
		const char *name;
	} want[] = {
		{ 0xffffffff81000100ULL, "_stext" },
		{ 0xffffffff81e00fffULL, "last_text" },
		{ 0xffffffff81e01000ULL, NULL }, /* _etext itself */
		{ 0xffffffff82000000ULL, NULL }, /* far past it */
		{ 0xffffffff83000010ULL, "init_fn" },
		{ 0xffffffff83000100ULL, NULL }, /* _einittext */
		{ 0xffffffffc0001000ULL, "mod_a_fn" },
		{ 0xffffffffc0001fffULL, "mod_a_last" },
		{ 0xffffffffc0002000ULL, NULL }, /* past mod_a's 0x2000 bytes */
		{ 0xffffffffc0008000ULL, NULL },
		{ 0xffffffffc0010010ULL, "bpf_prog_x" },
		{ 0xffffffffc0010100ULL, "mod_b_fn" },
		{ 0xffffffffc0010500ULL, NULL }, /* past mod_b's 0x400 bytes */
	};

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kallsyms", dir);
	snprintf(mods, sizeof(mods), "%s/modules", dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("ffffffff81000000 T _stext\n"
	      "ffffffff81e00000 t last_text\n"
	      "ffffffff81e01000 T _etext\n"
	      "ffffffff83000000 T init_fn\n"
	      "ffffffff83000100 T _einittext\n"
	      "ffffffffc0001000 t mod_a_fn\t[mod_a]\n"
	      "ffffffffc0001800 t mod_a_last\t[mod_a]\n"
	      "ffffffffc0010000 t bpf_prog_x\t[bpf]\n"
	      "ffffffffc0010100 T mod_b_fn\t[mod_b]\n",
	      f);
	fclose(f);
	f = fopen(mods, "w");
	assert_non_null(f);
	fputs("mod_a 8192 0 - Live 0xffffffffc0000000\n"
	      "mod_b 1024 1 mod_a, Live 0xffffffffc0010100 (O)\n"
	      "garbage line\n",
	      f);
	fclose(f);
	prof_err_init(&err);
	assert_int_equal(sym_kallsyms_load(path, &k, &err), 0);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(want); i++) {
		const char *got = sym_kallsyms_lookup(k, want[i].addr);

		if (!want[i].name && got)
			fail_msg("0x%" PRIx64 ": want no name, got %s", want[i].addr, got);
		if (want[i].name && (!got || strcmp(got, want[i].name)))
			fail_msg("0x%" PRIx64 ": want %s, got %s", want[i].addr, want[i].name,
				 got ? got : "none");
	}
	sym_kallsyms_free(k);
	unlink(path);
	unlink(mods);
	rmdir(dir);
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
	assert_int_not_equal(addr, 0);
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
		cmocka_unit_test(test_kallsyms_bounded_by_etext_and_module_ends),
		cmocka_unit_test(test_kallsyms_hidden_addresses_give_nothing),
		cmocka_unit_test(test_kallsyms_bad_files_are_refused),
		cmocka_unit_test(test_kallsyms_real_kernel_schedule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
