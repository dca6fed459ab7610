// SPDX-License-Identifier: Apache-2.0
/*
 * test_procs.c - the process cache on its own: a process gone before its
 * maps were read gets them rebuilt from the loader's link map event
 * (libc found where it was loaded, with the same ELF addresses our own
 * /proc maps give), the exec event's file name stands in for the
 * executable, malformed link-map names are skipped, and the rate limit
 * on exec reads.
 */
#include "base/compat.h"
#include "agent/procs.h"

#include <link.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

struct libc_info {
	char path[PROFILE_PATH_LEN];
	uint64_t bias;
	uint64_t code; /* an address in its code (not &fopen: sanitizers intercept that) */
};

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	struct libc_info *li = data;

	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so")) {
		snprintf(li->path, sizeof(li->path), "%s", info->dlpi_name);
		li->bias = info->dlpi_addr;
		for (int i = 0; i < info->dlpi_phnum; i++)
			if (info->dlpi_phdr[i].p_type == PT_LOAD &&
			    (info->dlpi_phdr[i].p_flags & PF_X))
				li->code = info->dlpi_addr + info->dlpi_phdr[i].p_vaddr + 64;
		return 1;
	}
	return 0;
}

static void test_gone_process_maps_rebuilt_from_link_map(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct profile_libs_event *le = calloc(1, sizeof(*le));
	struct agent_procs_stats st;
	struct libc_info li;
	struct agent_procs *ps;
	struct agent_proc *pr, *self;
	struct agent_map *m, *ms;
	uint64_t addr;
	pid_t pid;

	(void)state;
	memset(&li, 0, sizeof(li));
	assert_true(dl_iterate_phdr(find_libc, &li) == 1 && li.code);
	addr = li.code;
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);

	/* What the kernel sent while it lived: exec, then the loader's link map. */
	agent_procs_on_exec(ps, (uint32_t)pid, "/usr/bin/true", "true", 0, 10);
	le->kind = PROFILE_EV_LIBS;
	le->pid = (uint32_t)pid;
	le->n = 3;
	snprintf(le->libs[0].name, sizeof(le->libs[0].name), "linux-vdso.so.1");
	snprintf(le->libs[1].name, sizeof(le->libs[1].name), "%s", li.path);
	le->libs[1].l_addr = li.bias;
	memset(le->libs[2].name, 'x', sizeof(le->libs[2].name)); /* unterminated: skipped */
	agent_procs_on_libs(ps, le, 20);

	pr = agent_procs_get(ps, (uint32_t)pid, "true", 30);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, "true");
	assert_string_equal(pr->exe_path, "/usr/bin/true");
	m = agent_procs_find_map(ps, pr, addr, 30);
	assert_non_null(m);
	assert_string_equal(m->path, li.path);
	assert_true(m->normalized && m->build_id[0]);
	/* The same ELF address as our own, live, mapping of libc says. */
	self = agent_procs_get(ps, (uint32_t)getpid(), "test", 30);
	ms = agent_procs_find_map(ps, self, addr, 30);
	assert_non_null(ms);
	assert_true(agent_map_vaddr(m, addr) == agent_map_vaddr(ms, addr));
	assert_string_equal(m->build_id, ms->build_id);
	agent_procs_get_stats(ps, &st);
	assert_true(st.maps_rebuilt == 1 && st.libs_events == 1 && st.libs_mapped >= 1);
	assert_true(st.exec_reads == 1);

	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
	free(le);
}

static void test_exec_reads_are_rate_limited(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct agent_procs_stats st;
	struct agent_procs *ps;

	(void)state;
	o.elfcache = cache;
	o.max_exec_reads = 5;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	/* 20 execs within a millisecond: 5 read /proc, the rest keep the event's names. */
	for (uint32_t i = 0; i < 20; i++)
		agent_procs_on_exec(ps, 4000000 + i, "/opt/x/tool", "tool", 0, 1000 + i);
	agent_procs_get_stats(ps, &st);
	assert_true(st.exec_reads == 5 && st.exec_skipped == 15 && st.entries == 20);
	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gone_process_maps_rebuilt_from_link_map),
		cmocka_unit_test(test_exec_reads_are_rate_limited),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
