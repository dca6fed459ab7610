// SPDX-License-Identifier: Apache-2.0
/*
 * test_jit.c - the JIT runtime framework (agent/jit.h) with a runtime
 * written here: detection by file name, attach results (attached, not
 * ready and asked again a second later, refused with its reason), which
 * pcs a runtime is asked to step (its ranges, anonymous executable
 * mappings when it claims them, nothing else), naming and the counters,
 * and forgetting a process. The real runtimes are tested end to end with
 * a JVM and node (tests/integration/test_agent_java.sh, _node.sh).
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "agent/jit.h"

#include <setjmp.h>
#include <cmocka.h>

static int fake_attach_rc;
static int fake_steps;

static bool fake_match(const char *basename)
{
	return !strcmp(basename, "libfake.so");
}

static int fake_attach(const char *path, uint64_t bias, const struct agent_memreader *mem,
		       struct agent_jit_attach *out)
{
	(void)path;
	(void)mem;
	snprintf(out->version, sizeof(out->version), "1.2");
	if (fake_attach_rc)
		return fake_attach_rc;
	out->anon_exec = true;
	out->ranges[0].lo = bias + 0x1000;
	out->ranges[0].hi = bias + 0x2000;
	out->nranges = 1;
	out->priv = xcalloc(1, 16);
	return 0;
}

static int fake_step(void *priv, const struct agent_memreader *mem,
		     const struct agent_jit_stack *stk, const struct agent_jit_regs *r, bool leaf,
		     struct agent_jit_regs *caller, struct agent_jit_frame *f)
{
	uint64_t ra;

	(void)priv;
	(void)mem;
	fake_steps++;
	if (agent_jit_stack_read(stk, r->sp, &ra))
		return -ERANGE;
	caller->pc = ra;
	caller->sp = r->sp + 8;
	caller->bp = r->bp;
	caller->bp_ok = r->bp_ok;
	f->kind = AGENT_JIT_INTERPRETED;
	f->obj = r->pc;
	f->offset = leaf ? 1 : 2;
	return 0;
}

static int fake_name(void *priv, const struct agent_memreader *mem, const struct agent_jit_frame *f,
		     struct agent_interp_name *out, size_t max)
{
	(void)priv;
	(void)mem;
	if (f->obj == 0xdead)
		return -ESTALE;
	out[0].function = "inlined";
	out[0].file = "A.java";
	out[0].line = 7;
	if (max < 2)
		return 1;
	out[1].function = "outer";
	out[1].file = "A.java";
	out[1].line = 3;
	return 2;
}

static void fake_free(void *priv)
{
	free(priv);
}

static const struct agent_jit_ops fake_ops = {
	.name = "fake",
	.match = fake_match,
	.attach = fake_attach,
	.step = fake_step,
	.name_frame = fake_name,
	.free = fake_free,
};

static const struct agent_jit_ops *const fake_list[] = { &fake_ops };

static char fake_exe[] = "fake", fake_path[] = "/opt/libfake.so", anon_path[] = "";

/* A process mapping libfake.so at 0x400000 (offset 0) and an anonymous executable region. */
static void proc_init(struct agent_proc *ap, uint32_t pid)
{
	struct agent_map m;

	memset(ap, 0, sizeof(*ap));
	ap->pid = pid;
	ap->exe_name = fake_exe;
	ap->maps_gen = 1;
	memset(&m, 0, sizeof(m));
	m.start = 0x400000;
	m.end = 0x500000;
	m.path = fake_path;
	m.kind = AGENT_MAP_FILE;
	m.normalized = true;
	VEC_PUSH(&ap->maps.maps, m);
	memset(&m, 0, sizeof(m));
	m.start = 0x7f0000000000;
	m.end = 0x7f0000100000;
	m.path = anon_path;
	m.kind = AGENT_MAP_ANON;
	VEC_PUSH(&ap->maps.maps, m);
}

static void test_attach_step_name(void **state)
{
	struct agent_jit_opts o = { .ops = fake_list, .nops = 1 };
	struct agent_jit *j;
	struct agent_proc ap;
	uint64_t words[2] = { 0x401234, 0 };
	struct agent_jit_stack stk = { 0x7ffc0000, sizeof(words), (const uint8_t *)words, 0 };
	struct agent_jit_regs r = { 0x7f0000000100, 0x7ffc0000, 0x7ffc0100, true }, c;
	struct agent_jit_frame f;
	struct agent_interp_name nm[4];
	struct agent_jit_stats st[4];
	const char *ft = NULL;

	(void)state;
	fake_attach_rc = 0;
	fake_steps = 0;
	assert_int_equal(agent_jit_new(&o, &j), 0);
	proc_init(&ap, 42);
	assert_false(agent_jit_has(j, 42));
	agent_jit_check(j, &ap, "", 0);
	assert_true(agent_jit_has(j, 42));
	assert_false(agent_jit_has(j, 43));

	/* An anonymous executable mapping: stepped, the caller from the stack copy. */
	assert_int_equal(agent_jit_step(j, &ap, &ap.maps.maps.v[1], &stk, &r, true, &c, &f), 0);
	assert_int_equal(c.pc, 0x401234);
	assert_int_equal(c.sp, 0x7ffc0008);
	assert_int_equal(f.kind, AGENT_JIT_INTERPRETED);
	assert_int_equal(f.offset, 1);
	/* The file mapping inside the runtime's range (a return address: pc - 1 is looked up). */
	r.pc = 0x401001;
	assert_int_equal(agent_jit_step(j, &ap, &ap.maps.maps.v[0], &stk, &r, false, &c, &f), 0);
	assert_int_equal(f.offset, 2);
	/* Exactly at the range's start as a return address: pc - 1 is outside. */
	r.pc = 0x401000;
	assert_int_equal(agent_jit_step(j, &ap, &ap.maps.maps.v[0], &stk, &r, false, &c, &f),
			 -ENOENT);
	/* The same file outside the range, and no mapping: not the runtime's. */
	r.pc = 0x403000;
	assert_int_equal(agent_jit_step(j, &ap, &ap.maps.maps.v[0], &stk, &r, true, &c, &f),
			 -ENOENT);
	assert_int_equal(agent_jit_step(j, &ap, NULL, &stk, &r, true, &c, &f), -ENOENT);
	assert_int_equal(fake_steps, 2);
	/* A step that fails is counted and leaves no frame. */
	r.pc = 0x7f0000000100;
	r.sp = 0x7ffc1000;
	assert_int_equal(agent_jit_step(j, &ap, &ap.maps.maps.v[1], &stk, &r, true, &c, &f),
			 -ERANGE);
	assert_int_equal(f.kind, AGENT_JIT_NONE);

	/* Naming: inlined first, capped at max; stale counted; other pids not named. */
	f.kind = AGENT_JIT_COMPILED;
	f.obj = 0x1;
	assert_int_equal(agent_jit_name(j, &ap, &f, nm, 4, &ft), 2);
	assert_string_equal(ft, "fake");
	assert_string_equal(nm[0].function, "inlined");
	assert_string_equal(nm[1].function, "outer");
	assert_int_equal(agent_jit_name(j, &ap, &f, nm, 1, &ft), 1);
	f.obj = 0xdead;
	assert_int_equal(agent_jit_name(j, &ap, &f, nm, 4, &ft), -ESTALE);
	ap.pid = 43;
	assert_int_equal(agent_jit_name(j, &ap, &f, nm, 4, &ft), -ENOENT);
	ap.pid = 42;

	agent_jit_count_sample(j, 42, true);
	agent_jit_count_sample(j, 42, false);
	agent_jit_count_sample(j, 43, true); /* no runtime there: not counted */
	assert_int_equal(agent_jit_get_stats(j, st, 4), 1);
	assert_int_equal(st[0].samples, 2);
	assert_int_equal(st[0].samples_named, 1);
	assert_string_equal(st[0].runtime, "fake");
	assert_string_equal(st[0].exe, "fake");
	assert_string_equal(st[0].version, "1.2");
	assert_true(st[0].supported);
	assert_int_equal(st[0].procs, 1);
	assert_int_equal(st[0].frames, 2);
	assert_int_equal(st[0].step_failed, 1);
	assert_int_equal(st[0].named, 2);
	assert_int_equal(st[0].stale, 1);

	agent_jit_forget(j, 42);
	assert_false(agent_jit_has(j, 42));
	VEC_FREE(&ap.maps.maps);
	agent_jit_free(j);
}

static void test_not_ready_and_refused(void **state)
{
	struct agent_jit_opts o = { .ops = fake_list, .nops = 1 };
	struct agent_jit *j;
	struct agent_proc ap, bp;
	struct agent_jit_stats st[4];

	(void)state;
	assert_int_equal(agent_jit_new(&o, &j), 0);
	proc_init(&ap, 7);
	fake_attach_rc = -EAGAIN;
	agent_jit_check(j, &ap, "", 1000);
	assert_false(agent_jit_has(j, 7));
	/* Ready now, but asked again only a second after the last try. */
	fake_attach_rc = 0;
	agent_jit_check(j, &ap, "", 1000 + 500000000LL);
	assert_false(agent_jit_has(j, 7));
	agent_jit_check(j, &ap, "", 1000 + 1000000000LL);
	assert_true(agent_jit_has(j, 7));
	assert_null(agent_jit_unsupported(j, 7));

	/* A version the runtime refuses: never attached, the reason kept and counted. */
	proc_init(&bp, 8);
	fake_attach_rc = -ENOTSUP;
	agent_jit_check(j, &bp, "", 0);
	assert_false(agent_jit_has(j, 8));
	assert_string_equal(agent_jit_unsupported(j, 8), "fake 1.2: JIT frames not supported");
	assert_int_equal(agent_jit_get_stats(j, st, 4), 2);
	assert_false(st[1].supported);
	assert_int_equal(st[1].procs, 1);
	/* Forgotten (exec): detected again. */
	agent_jit_forget(j, 8);
	assert_null(agent_jit_unsupported(j, 8));
	fake_attach_rc = 0;
	agent_jit_check(j, &bp, "", 0);
	assert_true(agent_jit_has(j, 8));
	assert_true(agent_jit_has(j, 7));
	VEC_FREE(&ap.maps.maps);
	VEC_FREE(&bp.maps.maps);
	agent_jit_free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_attach_step_name),
		cmocka_unit_test(test_not_ready_and_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
