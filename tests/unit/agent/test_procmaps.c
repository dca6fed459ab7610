// SPDX-License-Identifier: Apache-2.0
/*
 * test_procmaps.c - /proc/PID/maps parsing, and the translation of this
 * test's own code addresses into ELF virtual addresses that symbolize to
 * the right function from the file (the agent's address convention).
 */
#include "base/compat.h"
#include "agent/elfinfo.h"
#include "agent/procmaps.h"
#include "symbolize/elf.h"

#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

__attribute__((noinline)) int procmaps_test_target(int x);
__attribute__((noinline)) int procmaps_test_target(int x)
{
	return x * 3 + 1;
}

static void test_parse_keeps_executable_mappings_only(void **state)
{
	static const char text[] =
		"55d0a0000000-55d0a0001000 r--p 00000000 fd:01 1234 /usr/bin/prog\n"
		"55d0a0001000-55d0a0005000 r-xp 00001000 fd:01 1234 /usr/bin/prog\n"
		"7f0000000000-7f0000010000 r-xp 00002000 08:02 99 /tmp/my lib.so (deleted)\n"
		"7f0000020000-7f0000021000 rwxp 00000000 00:00 0 \n"
		"7f0000030000-7f0000031000 r-xp 00000000 00:00 0 [anon:jit]\n"
		"garbage line\n"
		"7ffd00000000-7ffd00002000 r-xp 00000000 00:00 0                  [vdso]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]";
	struct agent_procmaps pm;
	int bad;

	(void)state;
	agent_procmaps_init(&pm);
	bad = agent_procmaps_parse(&pm, text, sizeof(text) - 1);
	assert_int_equal(bad, 1);
	assert_int_equal(pm.maps.n, 6);

	assert_int_equal(pm.maps.v[0].start, 0x55d0a0001000ULL);
	assert_int_equal(pm.maps.v[0].end, 0x55d0a0005000ULL);
	assert_int_equal(pm.maps.v[0].offset, 0x1000);
	assert_string_equal(pm.maps.v[0].path, "/usr/bin/prog");
	assert_int_equal(pm.maps.v[0].kind, AGENT_MAP_FILE);
	assert_false(pm.maps.v[0].normalized);

	assert_string_equal(pm.maps.v[1].path, "/tmp/my lib.so"); /* spaces kept, (deleted) cut */
	assert_int_equal(pm.maps.v[1].kind, AGENT_MAP_FILE);
	assert_string_equal(pm.maps.v[2].path, "");
	assert_int_equal(pm.maps.v[2].kind, AGENT_MAP_ANON);
	assert_string_equal(pm.maps.v[3].path, "[anon:jit]");
	assert_int_equal(pm.maps.v[3].kind, AGENT_MAP_ANON);
	assert_string_equal(pm.maps.v[4].path, "[vdso]");
	assert_int_equal(pm.maps.v[4].kind, AGENT_MAP_VDSO);

	assert_ptr_equal(agent_procmaps_find(&pm, 0x55d0a0001000ULL), &pm.maps.v[0]);
	assert_ptr_equal(agent_procmaps_find(&pm, 0x55d0a0004fffULL), &pm.maps.v[0]);
	assert_null(agent_procmaps_find(&pm, 0x55d0a0005000ULL));
	assert_null(agent_procmaps_find(&pm, 0x55d0a0000500ULL)); /* not executable */
	assert_ptr_equal(agent_procmaps_find(&pm, 0x7ffd00001000ULL), &pm.maps.v[4]);
	/* Un-normalized mappings report runtime addresses. */
	assert_int_equal(agent_map_vaddr(&pm.maps.v[0], 0x55d0a0001234ULL), 0x55d0a0001234ULL);
	agent_procmaps_release(&pm);
}

static void test_parse_rejects_overlap_and_truncation(void **state)
{
	static const char text[] = "1000-3000 r-xp 00000000 fd:01 5 /a\n"
				   "2000-4000 r-xp 00000000 fd:01 6 /b\n" /* overlaps: skipped */
				   "5000-4000 r-xp 00000000 fd:01 7 /c\n" /* end < start */
				   "6000-7000 r-x\n"			  /* truncated */
				   "8000-9000 r-xp 0 fd:01\n";		  /* no inode */
	struct agent_procmaps pm;

	(void)state;
	agent_procmaps_init(&pm);
	assert_int_equal(agent_procmaps_parse(&pm, text, sizeof(text) - 1), 4);
	assert_int_equal(pm.maps.n, 1);
	assert_string_equal(pm.maps.v[0].path, "/a");
	agent_procmaps_release(&pm);
}

/* Our own function, through the agent's arithmetic, names itself in the ELF file. */
static void test_read_self_normalizes_to_elf_vaddr(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(256);
	struct agent_elfinfo_stats st;
	struct agent_procmaps pm;
	uint64_t addr = (uint64_t)(uintptr_t)&procmaps_test_target + 2;
	struct agent_map *m;
	struct sym_elf *elf = NULL;
	const char *name;
	char self[4096];
	ssize_t n;

	(void)state;
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	assert_true(n > 0);
	self[n] = '\0';

	agent_procmaps_init(&pm);
	assert_int_equal(agent_procmaps_read(&pm, "/proc", getpid(), cache), 0);
	m = agent_procmaps_find(&pm, addr);
	assert_non_null(m);
	assert_int_equal(m->kind, AGENT_MAP_FILE);
	assert_string_equal(m->path, self);
	assert_true(m->normalized);

	assert_int_equal(sym_elf_open(self, &elf, NULL), 0);
	assert_string_equal(m->build_id, sym_elf_build_id(elf));
	name = sym_elf_lookup(elf, agent_map_vaddr(m, addr), NULL);
	assert_non_null(name);
	assert_string_equal(name, "procmaps_test_target");
	assert_true(agent_map_vstart(m) <= agent_map_vaddr(m, addr));

	/* A second read of the same process reuses the cache: no new open. */
	agent_elfinfo_get_stats(cache, &st);
	uint64_t opens = st.opens;
	assert_int_equal(agent_procmaps_read(&pm, "/proc", getpid(), cache), 0);
	agent_elfinfo_get_stats(cache, &st);
	assert_int_equal(st.opens, opens);
	assert_int_equal(procmaps_test_target(1), 4);

	sym_elf_free(elf);
	agent_procmaps_release(&pm);
	agent_elfinfo_cache_free(cache);
}

static void test_read_exited_process_fails_cleanly(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procmaps pm;
	pid_t pid = fork();
	int rc;

	(void)state;
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	agent_procmaps_init(&pm);
	rc = agent_procmaps_read(&pm, "/proc", pid, cache);
	assert_true(rc == -ENOENT || rc == -ESRCH);
	assert_int_equal(pm.maps.n, 0);
	agent_procmaps_release(&pm);
	agent_elfinfo_cache_free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_keeps_executable_mappings_only),
		cmocka_unit_test(test_parse_rejects_overlap_and_truncation),
		cmocka_unit_test(test_read_self_normalizes_to_elf_vaddr),
		cmocka_unit_test(test_read_exited_process_fails_cleanly),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
