// SPDX-License-Identifier: Apache-2.0
/*
 * test_elfinfo.c - the per-file build ID / load bias cache: one open per
 * file, non-ELF files remembered, a replaced file read again, the bound.
 */
#include "base/compat.h"
#include "agent/elfinfo.h"
#include "symbolize/elf.h"

#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static void self_exe(char *out, size_t n)
{
	ssize_t len = readlink("/proc/self/exe", out, n - 1);

	assert_true(len > 0);
	out[len] = '\0';
}

static void test_one_open_per_file(void **state)
{
	struct agent_elfinfo_cache *c = agent_elfinfo_cache_new(8);
	struct agent_elfinfo_stats st;
	struct sym_elf *elf = NULL;
	char exe[4096], bid[AGENT_BUILD_ID_MAX];
	struct stat sb;
	int64_t bias = 1;

	(void)state;
	self_exe(exe, sizeof(exe));
	assert_int_equal(stat(exe, &sb), 0);
	assert_int_equal(agent_elfinfo_lookup(c, exe, &sb, 0, 4096, bid, sizeof(bid), &bias), 0);
	assert_int_equal(sym_elf_open(exe, &elf, NULL), 0);
	assert_string_equal(bid, sym_elf_build_id(elf));
	sym_elf_free(elf);
	bid[0] = 'x';
	assert_int_equal(agent_elfinfo_lookup(c, exe, &sb, 0, 4096, bid, sizeof(bid), &bias), 0);
	assert_int_not_equal(bid[0], 'x');
	agent_elfinfo_get_stats(c, &st);
	assert_int_equal(st.lookups, 2);
	assert_int_equal(st.opens, 1);
	assert_int_equal(st.failures, 0);
	agent_elfinfo_cache_free(c);
}

static void test_not_elf_is_remembered_and_replacement_reread(void **state)
{
	struct agent_elfinfo_cache *c = agent_elfinfo_cache_new(8);
	struct agent_elfinfo_stats st;
	char path[] = "/tmp/profd-test-elfinfo-XXXXXX", bid[AGENT_BUILD_ID_MAX];
	struct timespec times[2] = { { 0, 0 }, { 1000, 0 } };
	struct stat sb;
	int64_t bias;
	int fd = mkstemp(path);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "#!/bin/sh\necho hi\n", 18), 18);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(agent_elfinfo_lookup(c, path, &sb, 0, 4096, bid, sizeof(bid), &bias),
			 -PROF_EFORMAT);
	assert_int_equal(agent_elfinfo_lookup(c, path, &sb, 0, 4096, bid, sizeof(bid), &bias),
			 -PROF_EFORMAT);
	agent_elfinfo_get_stats(c, &st);
	assert_int_equal(st.opens, 1);
	assert_int_equal(st.failures, 1);

	/* Same inode, new contents (mtime): looked at again. */
	assert_int_equal(futimens(fd, times), 0);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(agent_elfinfo_lookup(c, path, &sb, 0, 4096, bid, sizeof(bid), &bias),
			 -PROF_EFORMAT);
	agent_elfinfo_get_stats(c, &st);
	assert_int_equal(st.opens, 2);
	close(fd);
	unlink(path);
	agent_elfinfo_cache_free(c);
}

static void test_cache_is_bounded(void **state)
{
	struct agent_elfinfo_cache *c = agent_elfinfo_cache_new(1);
	struct agent_elfinfo_stats st;
	char exe[4096], bid[AGENT_BUILD_ID_MAX];
	const char *other = "/proc/self/exe";
	struct stat a, b;
	int64_t bias;

	(void)state;
	self_exe(exe, sizeof(exe));
	assert_int_equal(stat(exe, &a), 0);
	/* A second identity for the same bytes: another inode number. */
	assert_int_equal(stat(other, &b), 0);
	b.st_ino ^= 0x5a5a5a;
	assert_int_equal(agent_elfinfo_lookup(c, exe, &a, 0, 4096, bid, sizeof(bid), &bias), 0);
	assert_int_equal(agent_elfinfo_lookup(c, other, &b, 0, 4096, bid, sizeof(bid), &bias), 0);
	assert_int_equal(agent_elfinfo_lookup(c, exe, &a, 0, 4096, bid, sizeof(bid), &bias), 0);
	agent_elfinfo_get_stats(c, &st);
	assert_int_equal(st.flushes, 2);
	assert_int_equal(st.opens, 3);
	agent_elfinfo_cache_free(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_one_open_per_file),
		cmocka_unit_test(test_not_elf_is_remembered_and_replacement_reread),
		cmocka_unit_test(test_cache_is_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
