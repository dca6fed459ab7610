// SPDX-License-Identifier: Apache-2.0
/*
 * test_collect.c - sample events -> per-process profiles: the profile's
 * types and resource attributes, kernel frames named from kallsyms, user
 * frames as ELF vaddrs that symbolize back to the right function, the
 * return-address adjustment of non-leaf frames, shared stacks, samples of
 * exited processes kept under [unknown], the bounds, off-CPU events as
 * their own off_cpu profile, the [truncated] root frame, JIT frames named
 * from a perf map (and kept as [jit] when it has no symbol), a
 * short-lived process named from its exec event after it is gone, and
 * the per-executable unwind counters (top N by samples, the rest "other").
 */
#include "base/compat.h"
#include "agent/collect.h"
#include "symbolize/elf.h"
#include "symbolize/kallsyms.h"

#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#define PERIOD 52631578 /* 19 Hz */

__attribute__((noinline)) int collect_test_leaf(int x);
__attribute__((noinline)) int collect_test_leaf(int x)
{
	return x * 7 + 3;
}

__attribute__((noinline)) int collect_test_caller(int x);
__attribute__((noinline)) int collect_test_caller(int x)
{
	return collect_test_leaf(x) + 1;
}

struct fixture {
	char ksyms_path[64];
	struct sym_kallsyms *ksyms;
	struct agent_elfinfo_cache *cache;
	struct agent_collect *c;
	char exe[4096];
};

static int setup(void **state)
{
	static const char ksyms[] = "ffffffff81000000 T fake_fn_a\n"
				    "ffffffff81000100 t fake_fn_b\n"
				    "ffffffff81000105 T fake_fn_c\n"
				    "ffffffff81000200 D some_data\n";
	struct fixture *f = calloc(1, sizeof(*f));
	struct agent_collect_opts o = { 0 };
	ssize_t n;
	int fd;

	snprintf(f->ksyms_path, sizeof(f->ksyms_path), "/tmp/profd-test-ksyms-XXXXXX");
	fd = mkstemp(f->ksyms_path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, ksyms, sizeof(ksyms) - 1), (ssize_t)sizeof(ksyms) - 1);
	close(fd);
	assert_int_equal(sym_kallsyms_load(f->ksyms_path, &f->ksyms, NULL), 0);
	f->cache = agent_elfinfo_cache_new(0);
	o.period_ns = PERIOD;
	o.host_name = "testhost";
	o.ksyms = f->ksyms;
	o.elfcache = f->cache;
	o.max_samples = 3;
	assert_int_equal(agent_collect_new(&o, &f->c), 0);
	n = readlink("/proc/self/exe", f->exe, sizeof(f->exe) - 1);
	assert_true(n > 0);
	f->exe[n] = '\0';
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	agent_collect_free(f->c);
	agent_elfinfo_cache_free(f->cache);
	sym_kallsyms_free(f->ksyms);
	unlink(f->ksyms_path);
	free(f);
	return 0;
}

static void make_event(struct profile_event *e, uint32_t pid)
{
	memset(e, 0, sizeof(*e));
	e->kind = PROFILE_EV_CPU;
	e->time_ns = 1000;
	e->pid = pid;
	e->tid = (uint32_t)syscall(SYS_gettid);
	e->cpu = 1;
	snprintf(e->comm, sizeof(e->comm), "worker-1");
	e->kstack_n = 2;
	e->kstack[0] = 0xffffffff81000010ULL; /* leaf: exact */
	/* A return address right at fake_fn_c: the call was in fake_fn_b. */
	e->kstack[1] = 0xffffffff81000105ULL;
	e->ustack_n = 2;
	e->ustack[0] = (uint64_t)(uintptr_t)&collect_test_leaf + 1;
	e->ustack[1] = (uint64_t)(uintptr_t)&collect_test_caller + 1; /* -1: the function start */
}

static const struct model_label *find_attr(const struct model_profile *p, const char *key)
{
	for (size_t i = 0; i < p->attrs.n; i++)
		if (!strcmp(model_str(p, p->attrs.v[i].key), key))
			return &p->attrs.v[i];
	return NULL;
}

static const char *loc_function(const struct model_profile *p, uint32_t loc)
{
	const struct model_location *l = &p->locations.v[loc];

	if (!l->nlines)
		return NULL;
	return model_str(p, p->functions.v[p->lines.v[l->line_off].function].name);
}

static void test_event_becomes_process_cpu_profile(void **state)
{
	struct fixture *f = *state;
	struct profile_event e;
	struct model_profile **ps;
	const struct model_profile *p;
	const struct model_sample *s;
	const struct model_location *l;
	const struct model_mapping *m;
	struct sym_elf *elf = NULL;
	struct prof_err err;
	char type[256];
	const char *slash = strrchr(f->exe, '/');
	size_t n, nlocs;

	make_event(&e, (uint32_t)getpid());
	assert_int_equal(agent_collect_add(f->c, &e, 5000000000LL), 0);
	e.time_ns += 10;
	assert_int_equal(agent_collect_add(f->c, &e, 4000000000LL), 0);

	n = agent_collect_take(f->c, 4500000000LL, 1000000000LL, &ps);
	assert_int_equal(n, 1);
	p = ps[0];
	prof_err_init(&err);
	assert_int_equal(model_profile_validate(p, &err), 0);

	assert_int_equal(p->sample_types.n, 2);
	assert_string_equal(model_str(p, p->sample_types.v[0].type), "samples");
	assert_string_equal(model_str(p, p->sample_types.v[0].unit), "count");
	assert_int_equal(p->period, PERIOD);
	model_profile_type_id(p, 1, type, sizeof(type));
	assert_string_equal(type, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	/* The window was widened back to the earlier sample. */
	assert_int_equal(p->time_ns, 4000000000LL);
	assert_true(p->time_ns + p->duration_ns >= 5500000000LL);

	assert_int_equal(find_attr(p, "process.pid")->num, getpid());
	assert_string_equal(model_str(p, find_attr(p, "process.executable.name")->str), slash + 1);
	assert_string_equal(model_str(p, find_attr(p, "process.executable.path")->str), f->exe);
	assert_string_equal(model_str(p, find_attr(p, "host.name")->str), "testhost");

	assert_int_equal(p->samples.n, 2);
	s = &p->samples.v[0];
	assert_int_equal(p->values.v[s->value_off], 1);
	assert_int_equal(p->values.v[s->value_off + 1], PERIOD);
	assert_int_equal(s->timestamp_ns, 5000000000LL);
	assert_int_equal(s->nlabels, 3);
	assert_string_equal(model_str(p, p->labels.v[s->label_off].key), "thread.name");
	assert_string_equal(model_str(p, p->labels.v[s->label_off].str), "worker-1");
	assert_int_equal(p->labels.v[s->label_off + 1].num, e.tid);
	assert_int_equal(p->labels.v[s->label_off + 2].num, 1);
	/* Equal stacks share one range. */
	assert_int_equal(p->samples.v[1].stack_off, s->stack_off);

	assert_int_equal(s->nstack, 4);
	l = &p->locations.v[p->stack_locs.v[s->stack_off]];
	assert_string_equal(model_str(p, p->mappings.v[l->mapping].filename), "[kernel.kallsyms]");
	assert_string_equal(model_str(p, l->frame_type), "kernel");
	assert_string_equal(loc_function(p, p->stack_locs.v[s->stack_off]), "fake_fn_a");
	assert_string_equal(loc_function(p, p->stack_locs.v[s->stack_off + 1]), "fake_fn_b");

	assert_int_equal(sym_elf_open(f->exe, &elf, NULL), 0);
	nlocs = 0;
	for (uint32_t i = 2; i < 4; i++) {
		static const char *want[] = { "collect_test_leaf", "collect_test_caller" };
		const char *name;

		l = &p->locations.v[p->stack_locs.v[s->stack_off + i]];
		m = &p->mappings.v[l->mapping];
		assert_string_equal(model_str(p, l->frame_type), "native");
		assert_int_equal(l->nlines, 0); /* user frames are left to the server */
		assert_string_equal(model_str(p, m->filename), f->exe);
		assert_string_equal(model_str(p, m->build_id), sym_elf_build_id(elf));
		assert_true(l->address >= m->memory_start && l->address < m->memory_limit);
		name = sym_elf_lookup(elf, l->address, NULL);
		assert_non_null(name);
		assert_string_equal(name, want[i - 2]);
		nlocs++;
	}
	assert_int_equal(nlocs, 2);
	assert_int_equal(collect_test_caller(1), 11);
	sym_elf_free(elf);
	agent_collect_profiles_free(ps, n);

	/* The next interval starts empty. */
	assert_int_equal(agent_collect_take(f->c, 0, 1, &ps), 0);
	assert_null(ps);
}

static void test_exited_process_keeps_its_samples(void **state)
{
	struct fixture *f = *state;
	struct agent_collect_stats st;
	struct profile_event e;
	struct model_profile **ps;
	const struct model_profile *p;
	const struct model_location *l;
	pid_t pid = fork();
	size_t n;

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	make_event(&e, (uint32_t)pid);
	assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	n = agent_collect_take(f->c, 0, 10, &ps);
	assert_int_equal(n, 1);
	p = ps[0];
	assert_int_equal(model_profile_validate(p, NULL), 0);
	assert_int_equal(p->samples.n, 1);
	assert_string_equal(model_str(p, find_attr(p, "process.executable.name")->str), "worker-1");
	assert_null(find_attr(p, "process.executable.path"));
	l = &p->locations.v[p->stack_locs.v[p->samples.v[0].stack_off + 2]];
	assert_string_equal(model_str(p, p->mappings.v[l->mapping].filename), "[unknown]");
	assert_int_equal(l->address, e.ustack[0]);
	agent_collect_get_stats(f->c, &st);
	assert_true(st.maps_failed >= 1);
	assert_true(st.unknown_frames >= 2);
	agent_collect_profiles_free(ps, n);
}

static void test_bounds_drop_and_count(void **state)
{
	struct fixture *f = *state;
	struct agent_collect_stats st;
	struct profile_event e;
	struct model_profile **ps;
	size_t n;

	make_event(&e, (uint32_t)getpid());
	e.kstack_n = -14; /* unreadable stacks still make a sample */
	e.ustack_n = -14;
	for (int i = 0; i < 3; i++)
		assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	assert_int_equal(agent_collect_add(f->c, &e, 1), -PROF_ETOOBIG);
	agent_collect_get_stats(f->c, &st);
	assert_int_equal(st.dropped, 1);
	assert_int_equal(st.ustack_errors, 4 - 1);
	n = agent_collect_take(f->c, 0, 10, &ps);
	assert_int_equal(n, 1);
	assert_int_equal(ps[0]->samples.n, 3);
	assert_int_equal(ps[0]->samples.v[0].nstack, 0);
	assert_int_equal(model_profile_validate(ps[0], NULL), 0);
	agent_collect_profiles_free(ps, n);
}

static void test_off_cpu_events_make_their_own_profile(void **state)
{
	struct fixture *f = *state;
	struct agent_collect_stats st;
	struct profile_event e;
	struct model_profile **ps;
	char type[256];
	size_t n;

	make_event(&e, (uint32_t)getpid());
	assert_int_equal(agent_collect_add(f->c, &e, 1000), 0);
	e.kind = PROFILE_EV_OFFCPU;
	e.value = 200000000; /* 200 ms away */
	assert_int_equal(agent_collect_add(f->c, &e, 2000), 0);
	e.kind = 77;
	assert_int_equal(agent_collect_add(f->c, &e, 2000), -EINVAL);
	n = agent_collect_take(f->c, 0, 10, &ps);
	assert_int_equal(n, 2);
	model_profile_type_id(ps[0], 1, type, sizeof(type));
	assert_string_equal(type, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	assert_int_equal(ps[1]->sample_types.n, 1);
	model_profile_type_id(ps[1], 0, type, sizeof(type));
	assert_string_equal(type, "off_cpu:off_cpu:nanoseconds::");
	assert_int_equal(ps[1]->samples.n, 1);
	assert_int_equal(ps[1]->values.v[ps[1]->samples.v[0].value_off], 200000000);
	assert_int_equal(ps[1]->samples.v[0].timestamp_ns, 2000);
	assert_int_equal(ps[1]->period, 0);
	/* Same resource attributes on both. */
	assert_int_equal(find_attr(ps[1], "process.pid")->num, getpid());
	assert_int_equal(ps[0]->attrs.n, ps[1]->attrs.n);
	assert_int_equal(model_profile_validate(ps[1], NULL), 0);
	agent_collect_get_stats(f->c, &st);
	assert_int_equal(st.offcpu_samples, 1);
	assert_int_equal(st.offcpu_ns, 200000000);
	assert_int_equal(st.samples, 1);
	agent_collect_profiles_free(ps, n);
}

static const char *root_function(const struct model_profile *p, const struct model_sample *s)
{
	return loc_function(p, p->stack_locs.v[s->stack_off + s->nstack - 1]);
}

static void test_truncated_stack_gets_a_root_marker(void **state)
{
	struct fixture *f = *state;
	struct profile_event e;
	struct model_profile **ps;
	const struct model_profile *p;
	const struct model_location *l;
	size_t n;

	make_event(&e, (uint32_t)getpid());
	e.flags = PROFILE_F_USTACK_TRUNCATED;
	assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	n = agent_collect_take(f->c, 0, 10, &ps);
	assert_int_equal(n, 1);
	p = ps[0];
	assert_int_equal(p->samples.v[0].nstack, 2 + 2 + 1);
	assert_string_equal(root_function(p, &p->samples.v[0]), "[truncated]");
	l = &p->locations.v[p->stack_locs.v[p->samples.v[0].stack_off + 4]];
	assert_string_equal(model_str(p, l->frame_type), "abort-marker");
	assert_int_equal(model_profile_validate(p, NULL), 0);
	agent_collect_profiles_free(ps, n);
}

/* Add @e (with comm @comm, pid @pid) @times times, one interval each. */
static void add_in_intervals(struct agent_collect *c, struct profile_event *e, uint32_t pid,
			     const char *comm, int times)
{
	struct model_profile **ps;

	e->pid = pid;
	snprintf(e->comm, sizeof(e->comm), "%s", comm);
	for (int i = 0; i < times; i++) {
		assert_int_equal(agent_collect_add(c, e, 1), 0);
		agent_collect_profiles_free(ps, agent_collect_take(c, 0, 10, &ps));
	}
}

static void test_per_binary_unwind_counters(void **state)
{
	struct fixture *f = *state;
	struct agent_binary_stats top[2], other;
	struct profile_event e;
	struct model_profile **ps;
	const char *self = strrchr(f->exe, '/') + 1;
	char bid[AGENT_BUILD_ID_MAX];
	size_t n;

	/* This process: one complete stack, one truncated, one with no user stack. */
	make_event(&e, (uint32_t)getpid());
	assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	e.flags = PROFILE_F_USTACK_TRUNCATED;
	assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	e.flags = 0;
	e.ustack_n = -14;
	assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	agent_collect_profiles_free(ps, agent_collect_take(f->c, 0, 10, &ps));
	/* Processes already gone (named from their comm): 5, 4 and 1 samples. */
	make_event(&e, 0);
	add_in_intervals(f->c, &e, 0x3ffffff0, "alpha", 5);
	add_in_intervals(f->c, &e, 0x3ffffff1, "beta", 4);
	add_in_intervals(f->c, &e, 0x3ffffff2, "gamma", 1);

	n = agent_collect_binary_stats(f->c, top, 2, &other);
	assert_int_equal(n, 2);
	assert_string_equal(top[0].exe, "alpha");
	assert_int_equal(top[0].samples, 5);
	assert_int_equal(top[0].no_user_stack, 0);
	assert_string_equal(top[1].exe, "beta");
	assert_int_equal(top[1].samples, 4);
	/* The rest summed: this process's 3 and gamma's 1. */
	assert_string_equal(other.exe, "other");
	assert_int_equal(other.samples, 4);
	assert_int_equal(other.complete + other.truncated + other.no_user_stack, 4);
	assert_int_equal(other.truncated, 1);
	assert_int_equal(other.no_user_stack, 1);

	{
		struct agent_binary_stats all[8];
		bool found = false;

		n = agent_collect_binary_stats(f->c, all, 8, &other);
		assert_int_equal(n, 4);
		assert_int_equal(other.samples, 0);
		for (size_t i = 0; i < n; i++) {
			if (strcmp(all[i].exe, self))
				continue;
			found = true;
			assert_int_equal(all[i].samples, 3);
			assert_int_equal(all[i].complete, 1);
			assert_int_equal(all[i].truncated, 1);
			assert_int_equal(all[i].no_user_stack, 1);
			/* The executable's build ID, from its mapping. */
			assert_int_equal(sym_elf_read_build_id(f->exe, bid, sizeof(bid)), 0);
			assert_string_equal(all[i].build_id, bid);
		}
		assert_true(found);
	}
}

static void test_jit_frames_named_from_perf_map(void **state)
{
	struct fixture *f = *state;
	struct agent_collect_stats st;
	struct profile_event e;
	struct model_profile **ps;
	const struct model_profile *p;
	const struct model_sample *s;
	const struct model_location *l;
	char path[64];
	uint8_t *code;
	FILE *mf;
	size_t n;

	/* Anonymous executable memory, as a JIT makes, and its perf map. */
	code = mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		    0);
	assert_ptr_not_equal(code, MAP_FAILED);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)getpid());
	mf = fopen(path, "w");
	assert_non_null(mf);
	fprintf(mf, "%" PRIxPTR " 100 JS:*hotFunction /app/hot.js:12\n", (uintptr_t)code);
	fclose(mf);

	make_event(&e, (uint32_t)getpid());
	e.ustack_n = 3;
	e.ustack[0] = (uint64_t)(uintptr_t)code + 0x10;	      /* named */
	e.ustack[1] = (uint64_t)(uintptr_t)code + 0x1000 + 1; /* JIT, not in the map */
	e.ustack[2] = (uint64_t)(uintptr_t)&collect_test_caller + 1;
	assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	n = agent_collect_take(f->c, 0, 10, &ps);
	assert_int_equal(n, 1);
	p = ps[0];
	s = &p->samples.v[0];
	assert_int_equal(s->nstack, 2 + 3);
	assert_string_equal(loc_function(p, p->stack_locs.v[s->stack_off + 2]),
			    "JS:*hotFunction /app/hot.js:12");
	l = &p->locations.v[p->stack_locs.v[s->stack_off + 2]];
	assert_string_equal(model_str(p, p->mappings.v[l->mapping].filename), "[jit]");
	assert_string_equal(model_str(p, l->frame_type), "jit");
	assert_string_equal(loc_function(p, p->stack_locs.v[s->stack_off + 3]), "[jit]");
	assert_int_equal(model_profile_validate(p, NULL), 0);
	agent_collect_get_stats(f->c, &st);
	assert_int_equal(st.jit_frames, 2);
	assert_int_equal(st.jit_named, 1);
	agent_collect_profiles_free(ps, n);
	unlink(path);
	munmap(code, 8192);
}

static void test_short_lived_process_named_from_exec(void **state)
{
	struct fixture *f = *state;
	struct profile_event e;
	struct model_profile **ps;
	const struct model_profile *p;
	struct agent_procs *procs = agent_collect_procs(f->c);
	struct agent_procs_stats pst;
	int pipefd[2];
	pid_t pid;
	size_t n;

	/* A child that execs and waits for us: the exec event snapshots it. */
	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(pipefd[0], 0);
		close(pipefd[1]);
		execl("/bin/cat", "cat", (char *)NULL);
		_exit(127);
	}
	close(pipefd[0]);
	for (int i = 0; i < 200; i++) { /* until the exec happened */
		char exe[256];
		char p2[64];
		ssize_t k;

		snprintf(p2, sizeof(p2), "/proc/%d/exe", (int)pid);
		k = readlink(p2, exe, sizeof(exe) - 1);
		if (k > 0 && (exe[k] = '\0', strstr(exe, "cat")))
			break;
		usleep(5000);
	}
	{
		struct agent_exec ex = { .filename = "/bin/cat", .comm = "cat" };

		agent_procs_on_exec(procs, (uint32_t)pid, &ex, 100);
	}
	/* Gone before its sample is read (EOF on its stdin ends cat). */
	close(pipefd[1]);
	assert_int_equal(waitpid(pid, NULL, 0), pid);

	make_event(&e, (uint32_t)pid);
	snprintf(e.comm, sizeof(e.comm), "cat");
	e.time_ns = 200;
	assert_int_equal(agent_collect_add(f->c, &e, 1), 0);
	n = agent_collect_take(f->c, 0, 10, &ps);
	assert_int_equal(n, 1);
	p = ps[0];
	assert_string_equal(model_str(p, find_attr(p, "process.executable.name")->str), "cat");
	assert_non_null(find_attr(p, "process.executable.path"));
	agent_procs_get_stats(procs, &pst);
	/* Facts read at exec; maps only at the first sample, too late here. */
	assert_int_equal(pst.exec_reads, 1);
	assert_int_equal(pst.maps_failed, 1);
	/* Exit: freed after the grace time. */
	agent_procs_on_exit(procs, (uint32_t)pid, 300);
	agent_procs_tick(procs, 300 + AGENT_PROCS_DEAD_NS);
	agent_procs_get_stats(procs, &pst);
	assert_int_equal(pst.entries, 0);
	agent_collect_profiles_free(ps, n);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_event_becomes_process_cpu_profile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_exited_process_keeps_its_samples, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_bounds_drop_and_count, setup, teardown),
		cmocka_unit_test_setup_teardown(test_off_cpu_events_make_their_own_profile, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_truncated_stack_gets_a_root_marker, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_per_binary_unwind_counters, setup, teardown),
		cmocka_unit_test_setup_teardown(test_jit_frames_named_from_perf_map, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_short_lived_process_named_from_exec, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
