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
#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
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

/* An exec event with only a file name and comm. */
static void exec_event(struct agent_procs *ps, uint32_t pid, const char *file, const char *comm,
		       int64_t now_ns)
{
	struct agent_exec ex = { 0 };

	ex.filename = file;
	ex.comm = comm;
	agent_procs_on_exec(ps, pid, &ex, now_ns);
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
	assert_int_equal(dl_iterate_phdr(find_libc, &li), 1);
	assert_true(li.code);
	addr = li.code;
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);

	/* What the kernel sent while it lived: exec, then the loader's link map. */
	exec_event(ps, (uint32_t)pid, "/usr/bin/true", "true", 10);
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
	assert_int_equal(agent_map_vaddr(m, addr), agent_map_vaddr(ms, addr));
	assert_string_equal(m->build_id, ms->build_id);
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.maps_rebuilt, 1);
	assert_int_equal(st.libs_events, 1);
	assert_true(st.libs_mapped >= 1);
	assert_int_equal(st.exec_reads, 1);

	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
	free(le);
}

/* Whether /proc/@pid/exe is @want. */
static bool proc_exe_is(pid_t pid, const char *want)
{
	char path[64], exe[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, exe, sizeof(exe) - 1);
	if (n <= 0)
		return false;
	exe[n] = '\0';
	return !strcmp(exe, want);
}

/* Our mount namespace's inode (/proc/self/ns/mnt is "mnt:[N]"). */
static uint32_t own_mnt_ns(void)
{
	char link[64];
	ssize_t n = readlink("/proc/self/ns/mnt", link, sizeof(link) - 1);

	assert_true(n > 5);
	link[n] = '\0';
	return (uint32_t)strtoul(link + 5, NULL, 10);
}

/*
 * A gone process's libc is found by path in our root only when the
 * process was in our mount namespace (in another, the same path may name
 * another file: a container's libc).
 */
static void test_gone_process_in_another_mount_namespace(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct profile_libs_event *le = calloc(1, sizeof(*le));
	struct libc_info li;
	struct agent_procs *ps;
	struct agent_proc *pr;
	uint32_t own = own_mnt_ns();

	(void)state;
	memset(&li, 0, sizeof(li));
	assert_int_equal(dl_iterate_phdr(find_libc, &li), 1);
	assert_true(li.code);
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	le->kind = PROFILE_EV_LIBS;
	le->n = 1;
	snprintf(le->libs[0].name, sizeof(le->libs[0].name), "%s", li.path);
	le->libs[0].l_addr = li.bias;
	for (int k = 0; k < 2; k++) {
		struct agent_exec ex = { 0 };
		uint32_t fake = 4000200 + (uint32_t)k; /* no such pid: gone */

		ex.filename = "/usr/bin/true";
		ex.comm = "true";
		ex.mnt_ns = k == 0 ? own + 1 : own;
		agent_procs_on_exec(ps, fake, &ex, 10);
		le->pid = fake;
		agent_procs_on_libs(ps, le, 20);
		pr = agent_procs_get(ps, fake, "true", 30);
		assert_non_null(pr);
		if (k == 0)
			assert_null(agent_procs_find_map(ps, pr, li.code, 30));
		else
			assert_non_null(agent_procs_find_map(ps, pr, li.code, 30));
	}
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
		exec_event(ps, 4000000 + i, "/opt/x/tool", "tool", 1000 + i);
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.exec_reads, 5);
	assert_int_equal(st.exec_skipped, 15);
	assert_int_equal(st.entries, 20);
	/*
	 * A live process exec'd by a relative path past the limit: the event
	 * gives only "sleep"; its first sample reads /proc for the path.
	 */
	{
		char sleep_path[PATH_MAX];
		struct agent_proc *pr;
		pid_t pid;

		assert_non_null(realpath("/bin/sleep", sleep_path));
		pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			execl(sleep_path, "sleep", "30", (char *)NULL);
			_exit(127);
		}
		for (int i = 0; i < 5000 && !proc_exe_is(pid, sleep_path); i++)
			usleep(1000);
		exec_event(ps, (uint32_t)pid, "sleep", "sleep", 2000);
		pr = agent_procs_get(ps, (uint32_t)pid, "sleep", 2001);
		assert_non_null(pr);
		assert_string_equal(pr->exe_name, "sleep");
		assert_string_equal(pr->exe_path, sleep_path);
		kill(pid, SIGKILL);
		assert_int_equal(waitpid(pid, NULL, 0), pid);
	}
	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
}

static void test_stat_image(void **state)
{
	/* proc(5) fields 1-52; 26, 27 and 47 are the image. */
	static const char line[] =
		"42 (a) b (c)) R 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 "
		"24 25 94000000000000 94000000065536 140000000000000 29 30 31 32 33 34 "
		"35 36 37 38 39 40 41 42 43 44 45 46 94000000200000 48 49 50 51 52\n";
	struct profile_image img;
	char buf[4096];
	size_t n;
	FILE *f;

	(void)state;
	/* The comm holds spaces and ')': fields count from the last ')'. */
	assert_int_equal(agent_stat_image(line, strlen(line), &img), 0);
	assert_int_equal(img.start_code, 94000000000000ull);
	assert_int_equal(img.end_code, 94000000065536ull);
	assert_int_equal(img.start_brk, 94000000200000ull);
	/* Before Linux 3.3 the line ends at field 44: no start_brk. */
	{
		const char *p44 = strstr(line, " 45 46 ");

		assert_non_null(p44);
		assert_int_equal(agent_stat_image(line, (size_t)(p44 - line), &img), 0);
		assert_int_equal(img.start_code, 94000000000000ull);
		assert_int_equal(img.start_brk, 0);
	}
	/* Hidden (1) or no mm (0): unknown. */
	{
		static const char hidden[] =
			"7 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 9 9 9 1 1 1";

		assert_int_equal(agent_stat_image(hidden, strlen(hidden), &img), 0);
		assert_int_equal(img.start_code, 0);
		assert_int_equal(img.end_code, 0);
		assert_int_equal(img.start_brk, 0);
	}
	/* Cut before field 27, no ')', not a number: errors. */
	assert_int_equal(agent_stat_image(line, 88, &img), -EINVAL);
	assert_int_equal(agent_stat_image("12 comm R 1", 11, &img), -EINVAL);
	{
		static const char bad[] =
			"7 (x) S 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 9 9 9 zz 1 1";

		assert_int_equal(agent_stat_image(bad, strlen(bad), &img), -EINVAL);
	}
	/* Ours: this function's code lies in [start_code, end_code), the heap starts at start_brk. */
	f = fopen("/proc/self/stat", "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	assert_int_equal(agent_stat_image(buf, n, &img), 0);
	assert_true(img.start_code <= (uintptr_t)test_stat_image &&
		    (uintptr_t)test_stat_image < img.end_code);
	assert_true(img.start_brk && img.start_brk <= (uintptr_t)sbrk(0));
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The image /proc/@pid/stat shows ("self" for @pid 0); 0 when it cannot. */
static int pid_image(pid_t pid, struct profile_image *img)
{
	char path[64], buf[4096];
	size_t n;
	FILE *f;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/stat");
	f = fopen(path, "r");
	if (!f)
		return -errno;
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	return agent_stat_image(buf, n, img);
}

/*
 * Wait until /proc/@pid/exe is @want and the new image is complete (the
 * exec installs the new mm and its exe before it sets start_code), and
 * return the image /proc/@pid/stat shows.
 */
static void wait_exec(pid_t pid, const char *want, struct profile_image *img)
{
	for (int i = 0; i < 5000; i++) {
		if (proc_exe_is(pid, want) && pid_image(pid, img) == 0 && img->start_code)
			return;
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

		prctl(PR_SET_PDEATHSIG, SIGKILL); /* gone with us if an assertion fails */
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
	struct profile_image self, img, zero = { 0, 0, 0 };
	struct agent_procs_stats st;
	struct agent_procs *ps;
	struct agent_proc *pr;
	char sleep_path[PATH_MAX];
	int64_t t_before;
	int fds[2];
	pid_t pid;

	(void)state;
	assert_non_null(realpath("/bin/sleep", sleep_path));
	assert_int_equal(pid_image(0, &self), 0);
	assert_true(self.start_code && self.end_code && self.start_brk);
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);

	/* 1. Sampled before the exec, read after it: refused; the entry describes sleep. */
	pid = spawn_exec_later(fds, sleep_path);
	t_before = mono_ns();
	assert_int_equal(write(fds[1], "x", 1), 1);
	wait_exec(pid, sleep_path, &img);
	assert_null(
		agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "test", t_before, &self));
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.stale_image, 1);
	assert_int_equal(st.image_rereads, 0);
	pr = agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "sleep", mono_ns(), &zero);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, "sleep");
	assert_memory_equal(&pr->img, &img, sizeof(img));
	assert_true(img.start_code != self.start_code || img.start_brk != self.start_brk);
	/* A sample of the new image is taken. */
	assert_ptr_equal(
		agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "sleep", mono_ns(), &img),
		pr);
	/* One part differing (start_brk: two non-PIE files with one layout) is another image. */
	img.start_brk ^= 0x1000;
	assert_null(
		agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "sleep", t_before, &img));
	img.start_brk ^= 0x1000;
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(fds[1]);

	/*
	 * 2. After the exit event, the last thread's teardown (no mm: image
	 * 0) and ticks of the same image still belong to the dead process;
	 * another image at that pid is a new process.
	 */
	agent_procs_on_exit(ps, (uint32_t)pid, mono_ns());
	assert_ptr_equal(
		agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "sleep", mono_ns(), &zero),
		pr);
	assert_ptr_equal(
		agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "sleep", mono_ns(), &img),
		pr);
	assert_string_equal(pr->exe_name, "sleep");
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.created, 1);
	agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "x", mono_ns(), &self);
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.created, 2);

	/* 3. Read before an unannounced exec: a sample of the new image reads it again. */
	pid = spawn_exec_later(fds, sleep_path);
	pr = agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "test", mono_ns(), &self);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, program_invocation_short_name);
	assert_int_equal(write(fds[1], "x", 1), 1);
	wait_exec(pid, sleep_path, &img);
	pr = agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "sleep", mono_ns(), &img);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, "sleep");
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.stale_image, 2);
	assert_int_equal(st.image_rereads, 1);
	/* Kernel threads (no image at all) are never refused. */
	assert_non_null(agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "sleep", 0, NULL));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	close(fds[1]);

	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
}

/* Write @text to @dir/@name. */
static void put_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/*
 * /proc read in the middle of an exec (a fake /proc: the executable link
 * is the new file's, stat's image still 0): a sample of the old image
 * taken before must not get the new names; once the exec is complete, a
 * sample of the new image reads /proc again and is taken.
 */
static void test_read_mid_exec(void **state)
{
	static const char stat_fmt[] =
		"777 (newexe) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 9 9 9 9 "
		"%s %s 9 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 0 0 %s 0 0 0 0 0\n";
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct profile_image old_img = { 0x1000, 0x2000, 0x3000 },
			     new_img = { 0x5000, 0x6000, 0x7000 };
	char root[] = "/tmp/profd-test-procs-XXXXXX", dir[128], exe[128], text[512];
	struct agent_procs_stats st;
	struct agent_procs *ps;
	struct agent_proc *pr;
	int64_t t0 = mono_ns();

	(void)state;
	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/777", root);
	assert_int_equal(mkdir(dir, 0755), 0);
	snprintf(exe, sizeof(exe), "%s/newexe", root);
	put_file(root, "newexe", "");
	snprintf(text, sizeof(text), "%s/exe", dir);
	assert_int_equal(symlink(exe, text), 0);
	snprintf(text, sizeof(text), stat_fmt, "0", "0", "0");
	put_file(dir, "stat", text);

	o.elfcache = cache;
	o.proc_root = root;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	assert_null(agent_procs_get_image(ps, 777, 777, "oldexe", t0, &old_img));
	/* A sample after that read: read again, still mid-exec: refused too. */
	assert_null(agent_procs_get_image(ps, 777, 777, "oldexe", mono_ns(), &old_img));
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.stale_image, 2);
	assert_int_equal(st.image_rereads, 1);
	/* The exec completes; a sample of the new image is taken, with its names. */
	snprintf(text, sizeof(text), stat_fmt, "20480", "24576", "28672");
	put_file(dir, "stat", text);
	pr = agent_procs_get_image(ps, 777, 777, "newexe", mono_ns(), &new_img);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, "newexe");
	assert_memory_equal(&pr->img, &new_img, sizeof(new_img));
	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
	snprintf(text, sizeof(text), "rm -rf '%s'", root);
	assert_int_equal(system(text), 0);
}

/*
 * A process exec'd by a relative name and gone before /proc could be
 * read: the name is found in its parent's working directory (a child of
 * ours that chdir'd to a temporary directory holding "tool") when the
 * file there is the exec'd one (inode and device); any other file of that
 * name is not taken.
 */
static void test_relative_exec_in_parents_directory(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	char dir[] = "/tmp/profd-test-relexec-XXXXXX", tool[128], cmd[256];
	struct agent_exec ex = { 0 };
	struct agent_procs *ps;
	struct agent_proc *pr;
	struct stat st;
	int fds[2];
	pid_t parent;
	char c;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(tool, sizeof(tool), "%s/tool", dir);
	snprintf(cmd, sizeof(cmd), "cp /bin/true '%s'", tool);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(stat(tool, &st), 0);
	assert_int_equal(pipe(fds), 0);
	parent = fork();
	assert_true(parent >= 0);
	if (parent == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (chdir(dir) || write(fds[1], "x", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	assert_int_equal(read(fds[0], &c, 1), 1);
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	ex.filename = "./tool";
	ex.comm = "tool";
	ex.ppid = (uint32_t)parent;
	ex.exe_ino = (uint64_t)st.st_ino;
	ex.exe_dev = (uint32_t)(major(st.st_dev) << 20 | minor(st.st_dev));
	agent_procs_on_exec(ps, 4000100, &ex, 10); /* no such pid: gone */
	pr = agent_procs_get(ps, 4000100, "tool", 11);
	assert_non_null(pr);
	assert_string_equal(pr->exe_path, tool);
	assert_string_equal(pr->exe_name, "tool");
	/* Any spelling of it gives the canonical path, as /proc/PID/exe would. */
	ex.filename = ".//./tool";
	agent_procs_on_exec(ps, 4000102, &ex, 10);
	pr = agent_procs_get(ps, 4000102, "tool", 11);
	assert_non_null(pr);
	assert_string_equal(pr->exe_path, tool);
	/* Another inode: not the exec'd file. */
	ex.exe_ino++;
	agent_procs_on_exec(ps, 4000101, &ex, 12);
	pr = agent_procs_get(ps, 4000101, "tool", 13);
	assert_non_null(pr);
	assert_string_equal(pr->exe_path, "");
	assert_string_equal(pr->exe_name, "tool");
	kill(parent, SIGKILL);
	assert_int_equal(waitpid(parent, NULL, 0), parent);
	close(fds[0]);
	close(fds[1]);
	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * A forked child that never exec'd, gone before it was read: it runs our
 * image, so it gets our entry's names and mappings (its code resolves).
 */
static void test_gone_fork_child_inherits(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct profile_image self, other;
	struct agent_procs_stats st;
	struct agent_procs *ps;
	struct agent_proc *pr;
	pid_t pid[2];

	(void)state;
	assert_int_equal(pid_image(0, &self), 0);
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	assert_non_null(agent_procs_get(ps, (uint32_t)getpid(), "test", mono_ns()));
	for (int k = 0; k < 2; k++) {
		pid[k] = fork();
		assert_true(pid[k] >= 0);
		if (pid[k] == 0)
			_exit(0);
		assert_int_equal(waitpid(pid[k], NULL, 0), pid[k]);
	}
	pr = agent_procs_get_image(ps, (uint32_t)pid[0], (uint32_t)pid[0], "test", mono_ns(),
				   &self);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, program_invocation_short_name);
	assert_int_equal(pr->exe_path[0], '/');
	assert_int_equal(pr->pid, (uint32_t)pid[0]);
	assert_non_null(agent_procs_find_map(
		ps, pr, (uint64_t)(uintptr_t)test_gone_fork_child_inherits, mono_ns()));
	/* Another image (start_brk differs): nothing to inherit. */
	other = self;
	other.start_brk += 0x1000;
	pr = agent_procs_get_image(ps, (uint32_t)pid[1], (uint32_t)pid[1], "x", mono_ns(), &other);
	assert_non_null(pr);
	assert_string_equal(pr->exe_path, "");
	agent_procs_get_stats(ps, &st);
	assert_int_equal(st.inherited, 1);
	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
}

/* The worker of test_main_thread_gone: says its tid, then waits. */
static void *worker_wait(void *arg)
{
	int fd = *(int *)arg;
	pid_t tid = gettid();

	if (write(fd, &tid, sizeof(tid)) != (ssize_t)sizeof(tid))
		_exit(1);
	for (;;)
		pause();
	return NULL;
}

/*
 * A process whose main thread exited (pthread_exit) while a worker runs:
 * /proc/PID shows no executable or maps any more; the entry is read
 * through the worker's /proc/PID/task/TID, so the process keeps its name
 * and its code resolves.
 */
static void test_main_thread_gone(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct profile_image self;
	struct agent_procs *ps;
	struct agent_proc *pr;
	char path[64], exe[256];
	int fds[2];
	pid_t pid, tid = 0;

	(void)state;
	assert_int_equal(pid_image(0, &self), 0);
	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(fds[0]);
		if (pthread_create(&t, NULL, worker_wait, &fds[1]))
			_exit(1);
		pthread_exit(NULL);
	}
	close(fds[1]);
	assert_int_equal(read(fds[0], &tid, sizeof(tid)), (ssize_t)sizeof(tid));
	close(fds[0]);
	/* Wait for the main thread to be gone: its exe link goes. */
	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	for (int i = 0; i < 5000 && readlink(path, exe, sizeof(exe)) > 0; i++)
		usleep(1000);
	assert_true(readlink(path, exe, sizeof(exe)) < 0);

	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	pr = agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)tid, "worker", mono_ns(), &self);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, program_invocation_short_name);
	assert_int_equal(pr->exe_path[0], '/');
	assert_non_null(agent_procs_find_map(ps, pr, (uint64_t)(uintptr_t)test_main_thread_gone,
					     mono_ns()));
	assert_memory_equal(&pr->img, &self, sizeof(self));
	agent_procs_free(ps);

	/* Its exec event read before any sample named a thread: found in /proc/PID/task. */
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	exec_event(ps, (uint32_t)pid, "relative-name", "comm", mono_ns());
	pr = agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "comm", mono_ns(), &self);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, program_invocation_short_name);
	assert_int_equal(pr->exe_path[0], '/');
	assert_int_equal(pr->via_tid, (uint32_t)tid);
	assert_non_null(agent_procs_find_map(ps, pr, (uint64_t)(uintptr_t)test_main_thread_gone,
					     mono_ns()));
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	agent_procs_free(ps);
	agent_elfinfo_cache_free(cache);
}

/*
 * A zombie (no executable any more) that renamed itself after it was
 * sampled: the sample of its main thread names it as it was then (a
 * spawned child sampled before its exec and read after it).
 */
static void test_zombie_named_by_its_sample(void **state)
{
	struct agent_elfinfo_cache *cache = agent_elfinfo_cache_new(0);
	struct agent_procs_opts o = { 0 };
	struct profile_image self;
	struct agent_procs *ps;
	struct agent_proc *pr;
	char path[64], comm[32] = "";
	pid_t pid;
	FILE *f;

	(void)state;
	assert_int_equal(pid_image(0, &self), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_NAME, "renamed-later");
		_exit(0);
	}
	/* Wait for the zombie with its new name (not reaped until the end). */
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	for (int i = 0; i < 5000; i++) {
		struct profile_image img;

		f = fopen(path, "r");
		if (f && fgets(comm, sizeof(comm), f) && !strncmp(comm, "renamed-later", 13) &&
		    pid_image(pid, &img) == 0 && !img.start_code) {
			fclose(f);
			break;
		}
		if (f)
			fclose(f);
		usleep(1000);
	}
	assert_int_equal(strncmp(comm, "renamed-later", 13), 0);
	o.elfcache = cache;
	assert_int_equal(agent_procs_new(&o, &ps), 0);
	pr = agent_procs_get_image(ps, (uint32_t)pid, (uint32_t)pid, "spawner", mono_ns(), &self);
	assert_non_null(pr);
	assert_string_equal(pr->exe_name, "spawner");
	agent_procs_free(ps);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	agent_elfinfo_cache_free(cache);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gone_process_maps_rebuilt_from_link_map),
		cmocka_unit_test(test_gone_process_in_another_mount_namespace),
		cmocka_unit_test(test_exec_reads_are_rate_limited),
		cmocka_unit_test(test_stat_image),
		cmocka_unit_test(test_samples_across_exec),
		cmocka_unit_test(test_main_thread_gone),
		cmocka_unit_test(test_read_mid_exec),
		cmocka_unit_test(test_zombie_named_by_its_sample),
		cmocka_unit_test(test_relative_exec_in_parents_directory),
		cmocka_unit_test(test_gone_fork_child_inherits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
