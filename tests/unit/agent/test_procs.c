// SPDX-License-Identifier: Apache-2.0
/*
 * test_procs.c - the process cache on its own: a process gone before its
 * maps were read gets them rebuilt from the loader's link map event
 * (libc found where it was loaded, with the same ELF addresses our own
 * /proc maps give), the exec event's file name stands in for the
 * executable, malformed link-map names are skipped, the rate limit
 * on exec reads, /proc/PID/stat's image fields, and samples across an
 * exec (a real child that execs sleep): a sample of the image the child
 * left is refused once /proc shows the new one, and an entry read before
 * an exec nobody announced is read again for a sample of the new image.
 */
#include "base/compat.h"
#include "agent/procs.h"

#include <limits.h>
#include <link.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
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
	agent_procs_on_exec(ps, (uint32_t)pid, "/usr/bin/true", "true", 0, 0, 10);
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
		agent_procs_on_exec(ps, 4000000 + i, "/opt/x/tool", "tool", 0, 0, 1000 + i);
	agent_procs_get_stats(ps, &st);
	assert_true(st.exec_reads == 5 && st.exec_skipped == 15 && st.entries == 20);
	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
}

static void test_stat_image(void **state)
{
	static const char line[] =
		"42 (a) b (c)) R 1 42 42 0 -1 4194560 100 0 0 0 5 1 0 0 20 0 1 0 "
		"900 1000 200 18446744073709551615 94000000000000 "
		"94000000065536 140000000000000 0 0 0 0 0 0 0 0 0 17 1 0 0\n";
	uint64_t sc = 7, ec = 7;
	char buf[4096];
	size_t n;
	FILE *f;

	(void)state;
	/* The comm holds spaces and ')': fields count from the last ')'. */
	assert_int_equal(agent_stat_image(line, strlen(line), &sc, &ec), 0);
	assert_true(sc == 94000000000000ull && ec == 94000000065536ull);
	/* Hidden (1) or no mm (0): unknown. */
	{
		static const char hidden[] =
			"7 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 9 9 9 1 1 1";

		assert_int_equal(agent_stat_image(hidden, strlen(hidden), &sc, &ec), 0);
		assert_true(sc == 0 && ec == 0);
	}
	/* Cut before field 27, no ')', not a number: errors. */
	assert_int_equal(agent_stat_image(line, 110, &sc, &ec), -EINVAL);
	assert_int_equal(agent_stat_image("12 comm R 1", 11, &sc, &ec), -EINVAL);
	{
		static const char bad[] =
			"7 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 9 9 9 zz 1 1";

		assert_int_equal(agent_stat_image(bad, strlen(bad), &sc, &ec), -EINVAL);
	}
	/* Ours: this function's code lies between start_code and end_code. */
	f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(agent_stat_image(buf, n, &sc, &ec), 0);
	assert_true(sc <= (uintptr_t)test_stat_image && (uintptr_t)test_stat_image < ec);
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Our image, as a sample of our forked child before it execs carries it. */
static void self_image(uint64_t *sc, uint64_t *ec)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen("/proc/self/stat", "r");

	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(agent_stat_image(buf, n, sc, ec), 0);
	assert_true(*sc != 0);
}

/*
 * Wait until /proc/@pid/exe is @want and the new image is complete (the
 * exec installs the new mm and its exe before it sets start_code), and
 * return the image /proc/@pid/stat shows.
 */
static void wait_exec(pid_t pid, const char *want, uint64_t *sc, uint64_t *ec)
{
	char path[64], exe[4096], buf[4096];

	for (int i = 0; i < 5000; i++) {
		ssize_t n;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
		n = readlink(path, exe, sizeof(exe) - 1);
		if (n > 0) {
			exe[n] = '\0';
			snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
			f = fopen(path, "r");
			assert_non_null(f);
			n = (ssize_t)fread(buf, 1, sizeof(buf), f);
			fclose(f);
			if (!strcmp(exe, want) && agent_stat_image(buf, (size_t)n, sc, ec) == 0 &&
			    *sc)
				return;
		}
		usleep(1000);
	}
	fail_msg("child %d never exec'd %s", (int)pid, want);
}

/* A child that waits for a byte on @fd, then execs sleep. */
static pid_t spawn_exec_later(int fds[2], const char *sleep_path)
{
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char c;

		close(fds[1]);
		if (read(fds[0], &c, 1) == 1)
			execl(sleep_path, "sleep", "30", (char *)NULL);
		_exit(127);
	}
	close(fds[0]);
	return pid;
}

static void test_samples_across_exec(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct agent_procs_stats st;
	struct agent_procs *ps;
	struct agent_proc *pr;
	char sleep_path[PATH_MAX];
	uint64_t sc, ec, new_sc, new_ec;
	int64_t t_before;
	int fds[2];
	pid_t pid;

	(void)state;
	assert_non_null(realpath("/bin/sleep", sleep_path));
	self_image(&sc, &ec);
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);

	/* 1. Sampled before the exec, read after it: refused; the entry describes sleep. */
	pid = spawn_exec_later(fds, sleep_path);
	t_before = mono_ns();
	assert_int_equal(write(fds[1], "x", 1), 1);
	wait_exec(pid, sleep_path, &new_sc, &new_ec);
	assert_null(agent_procs_get_image(ps, (uint32_t)pid, "test", t_before, sc, ec));
	agent_procs_get_stats(ps, &st);
	assert_true(st.stale_image == 1 && st.image_rereads == 0);
	pr = agent_procs_get_image(ps, (uint32_t)pid, "sleep", mono_ns(), 0, 0);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, "sleep");
	assert_true(pr->start_code == new_sc && pr->end_code == new_ec);
	assert_true(new_sc != sc || new_ec != ec);
	/* A sample of the new image is taken. */
	assert_non_null(
		agent_procs_get_image(ps, (uint32_t)pid, "sleep", mono_ns(), new_sc, new_ec));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(fds[1]);

	/* 2. Read before an unannounced exec: a sample of the new image reads it again. */
	pid = spawn_exec_later(fds, sleep_path);
	pr = agent_procs_get_image(ps, (uint32_t)pid, "test", mono_ns(), sc, ec);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, program_invocation_short_name);
	assert_int_equal(write(fds[1], "x", 1), 1);
	wait_exec(pid, sleep_path, &new_sc, &new_ec);
	pr = agent_procs_get_image(ps, (uint32_t)pid, "sleep", mono_ns(), new_sc, new_ec);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, "sleep");
	agent_procs_get_stats(ps, &st);
	assert_true(st.stale_image == 1 && st.image_rereads == 1);
	/* Unknown images (kernel threads, unreadable stat) are never refused. */
	assert_non_null(agent_procs_get_image(ps, (uint32_t)pid, "sleep", 0, 0, 0));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(fds[1]);

	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gone_process_maps_rebuilt_from_link_map),
		cmocka_unit_test(test_exec_reads_are_rate_limited),
		cmocka_unit_test(test_stat_image),
		cmocka_unit_test(test_samples_across_exec),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
