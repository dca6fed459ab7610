// SPDX-License-Identifier: Apache-2.0
/*
 * test_unwind.c - .eh_frame unwinding of a real stack copy: this test
 * captures its own registers and the top of its stack (as the BPF
 * program does) three calls deep in functions built without frame
 * pointers, and the unwinder must walk from the leaf through
 * unwind_test_c, _b, _a, the test body and cmocka into libc up to the
 * outermost frame with CFI alone (no frame-pointer steps). Also: a copy
 * cut short ends as "truncated", a garbage stack ends without crashing
 * or looping, and an event without registers yields nothing.
 */
#include "base/compat.h"
#include "agent/procs.h"
#include "agent/unwind.h"
#include "symbolize/elf.h"

#include <fcntl.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static struct profile_event_ext *captured;

/*
 * Read our own stack through /proc/self/mem (no sanitizer sees the copy),
 * at most up to the top of the stack mapping, as the BPF side does.
 */
static uint32_t copy_own_stack(uint64_t sp, uint8_t *dst, uint32_t want)
{
	int fd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
	FILE *maps = fopen("/proc/self/maps", "re");
	char line[512];
	uint32_t got = 0;

	assert_true(fd >= 0 && maps);
	while (fgets(line, sizeof(line), maps)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && sp >= lo && sp < hi && hi - sp < want)
			want = (uint32_t)(hi - sp);
	}
	fclose(maps);
	if (pread(fd, dst, want, (off_t)sp) == (ssize_t)want)
		got = want;
	close(fd);
	return got;
}

__attribute__((noinline, optimize("omit-frame-pointer"))) void unwind_test_capture(void);
__attribute__((noinline, optimize("omit-frame-pointer"))) void unwind_test_capture(void)
{
	uint64_t ip, sp, bp;

	__asm__ volatile("lea (%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	captured->ip = ip;
	captured->sp = sp;
	captured->bp = bp;
	captured->stack_len = copy_own_stack(sp, captured->stack, PROFILE_STACK_COPY);
}

__attribute__((noinline, optimize("omit-frame-pointer"))) int unwind_test_c(int x);
__attribute__((noinline, optimize("omit-frame-pointer"))) int unwind_test_c(int x)
{
	volatile int pad[8];

	pad[0] = x;
	unwind_test_capture();
	return pad[0] + 1;
}

__attribute__((noinline, optimize("omit-frame-pointer"))) int unwind_test_b(int x);
__attribute__((noinline, optimize("omit-frame-pointer"))) int unwind_test_b(int x)
{
	return unwind_test_c(x * 3) + 2;
}

__attribute__((noinline, optimize("omit-frame-pointer"))) int unwind_test_a(int x);
__attribute__((noinline, optimize("omit-frame-pointer"))) int unwind_test_a(int x)
{
	return unwind_test_b(x + 5) * 2;
}

struct fixture {
	struct agent_elfinfo_cache *cache;
	struct agent_procs *procs;
	struct agent_unwinder *u;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct agent_procs_opts o = { 0 };

	f->cache = agent_elfinfo_cache_new(0);
	o.elfcache = f->cache;
	assert_int_equal(agent_procs_new(&o, &f->procs), 0);
	f->u = agent_unwinder_new(0);
	captured = calloc(1, sizeof(*captured));
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	agent_unwinder_free(f->u);
	agent_procs_free(f->procs);
	agent_elfinfo_cache_free(f->cache);
	free(captured);
	free(f);
	return 0;
}

/* The function name of runtime address @pc in our executable, or NULL. */
static const char *own_symbol(struct agent_procs *ps, struct agent_proc *pr,
			      const struct sym_elf *elf, const char *exe, uint64_t pc)
{
	struct agent_map *m = agent_procs_find_map(ps, pr, pc, 0);

	if (!m || strcmp(m->path, exe))
		return NULL;
	return sym_elf_lookup(elf, agent_map_vaddr(m, pc), NULL);
}

static void test_unwinds_own_stack_without_frame_pointers(void **state)
{
	static const char *const want[] = { "unwind_test_capture", "unwind_test_c", "unwind_test_b",
					    "unwind_test_a",
					    "test_unwinds_own_stack_without_frame_pointers" };
	struct fixture *f = *state;
	struct agent_unwind_stats st;
	enum agent_unwind_end end;
	struct agent_proc *pr;
	struct sym_elf *elf = NULL;
	uint64_t pcs[PROFILE_MAX_FRAMES];
	char exe[4096];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t w = 0;
	int n;

	assert_true(k > 0);
	exe[k] = '\0';
	assert_int_equal(sym_elf_open(exe, &elf, NULL), 0);
	assert_int_equal(unwind_test_a(1), 2 * (3 * 6 + 1 + 2));
	assert_true(captured->stack_len >= 4096);

	pr = agent_procs_get(f->procs, (uint32_t)getpid(), "test", 0);
	n = agent_unwind_user(f->u, f->procs, pr, captured, 0, pcs, NULL, PROFILE_MAX_FRAMES, &end);
	assert_int_equal(end, AGENT_UNWIND_COMPLETE);
	assert_true(n >= 8); /* ours, cmocka's, libc's */
	/* Our frames, innermost first, in order (return addresses - 1 land in the caller). */
	for (int i = 0; i < n && w < PROF_ARRAY_SIZE(want); i++) {
		const char *name = own_symbol(f->procs, pr, elf, exe, pcs[i] - (i > 0));

		if (name && !strcmp(name, want[w]))
			w++;
	}
	assert_int_equal(w, PROF_ARRAY_SIZE(want));
	agent_unwind_get_stats(f->u, &st);
	assert_int_equal(st.fp_steps, 0); /* CFI all the way */
	assert_int_equal(st.ends[AGENT_UNWIND_COMPLETE], 1);
	assert_int_equal(st.stacks, 1);
	assert_true(st.cfi_files >= 2); /* the test binary and libc at least */

	/* A second walk answers from the memo and gets the same stack. */
	{
		uint64_t again[PROFILE_MAX_FRAMES];
		int n2 = agent_unwind_user(f->u, f->procs, pr, captured, 0, again, NULL,
					   PROFILE_MAX_FRAMES, &end);

		assert_int_equal(n2, n);
		assert_memory_equal(again, pcs, (size_t)n * sizeof(*pcs));
	}
	/* Too few frame slots: truncated. */
	n = agent_unwind_user(f->u, f->procs, pr, captured, 0, pcs, NULL, 3, &end);
	assert_int_equal(n, 3);
	assert_int_equal(end, AGENT_UNWIND_TRUNCATED);
	/* Cut the copy: the walk runs off its end, truncated, never past it. */
	captured->stack_len = 64;
	n = agent_unwind_user(f->u, f->procs, pr, captured, 0, pcs, NULL, PROFILE_MAX_FRAMES, &end);
	assert_true(n >= 1 && n <= 4);
	assert_true(end == AGENT_UNWIND_TRUNCATED || end == AGENT_UNWIND_BAD_STACK);
	sym_elf_free(elf);
}

static void test_garbage_stack_ends_cleanly(void **state)
{
	struct fixture *f = *state;
	enum agent_unwind_end end;
	struct agent_proc *pr = agent_procs_get(f->procs, (uint32_t)getpid(), "test", 0);
	uint64_t pcs[PROFILE_MAX_FRAMES];
	uint64_t seed = 7;
	int n;

	assert_true(unwind_test_a(2) > 0);
	/* Random bytes below a real pc and sp: whatever the rules read, no crash, no loop. */
	for (uint32_t i = 0; i < PROFILE_STACK_COPY; i += 8) {
		seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
		memcpy(captured->stack + i, &seed, 8);
	}
	n = agent_unwind_user(f->u, f->procs, pr, captured, 0, pcs, NULL, PROFILE_MAX_FRAMES, &end);
	assert_true(n >= 1 && n < PROFILE_MAX_FRAMES);
	assert_true(end != AGENT_UNWIND_COMPLETE || n <= 2);
	/* No registers: nothing. */
	captured->ip = 0;
	n = agent_unwind_user(f->u, f->procs, pr, captured, 0, pcs, NULL, PROFILE_MAX_FRAMES, &end);
	assert_int_equal(n, 0);
	assert_int_equal(end, AGENT_UNWIND_NO_STACK);
	assert_string_equal(agent_unwind_end_name(AGENT_UNWIND_BAD_STACK), "bad_stack");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unwinds_own_stack_without_frame_pointers,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_garbage_stack_ends_cleanly, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
