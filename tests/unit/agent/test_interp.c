// SPDX-License-Identifier: Apache-2.0
/*
 * test_interp.c - interpreter frames (agent/interp.h, interp_python.c):
 * the merge rule (runs of interpreter frames in place of their
 * interpreter-loop native frames, leftovers at the root), CPython's
 * location table decoded against the lines CPython 3.11 itself gives
 * (code.co_positions() of a real function), str objects in all three
 * kinds, and naming a frame from a memory image laid out as CPython 3.11
 * lays out a code object: names, file, line, the check value, a stale
 * address, unreadable pointers and the cache.
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/interp.h"
#include "agent/interp_python.h"
#include "agent/bpf/interp.h"

#include <setjmp.h>
#include <cmocka.h>

static void test_merge(void **state)
{
	/* leaf first: libc, eval (inner), ext, eval (outer), main */
	const uint64_t pcs[] = { 0x7000, 0x1010 + 1, 0x5000 + 1, 0x1020 + 1, 0x400 + 1 };
	const struct agent_interp_range loops[] = { { 0x1000, 0x1100, false } };
	/* frames: spin, work_a (entry) | work_hash, main, <module> (entry) */
	const uint32_t flags[] = { 0, PROFILE_IF_ENTRY, 0, 0, PROFILE_IF_ENTRY };
	struct agent_interp_item out[16];
	const bool native[] = { true, false, false, true, false, false, false, true };
	const uint32_t index[] = { 0, 0, 1, 2, 2, 3, 4, 4 };
	size_t n;

	(void)state;
	n = agent_interp_merge(pcs, 5, loops, 1, flags, 5, out, 16);
	assert_int_equal(n, 8);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(out[i].native, native[i]);
		assert_int_equal(out[i].index, index[i]);
	}
	/* Native unwinding stopped after the first eval frame: the rest at the root end. */
	n = agent_interp_merge(pcs, 2, loops, 1, flags, 5, out, 16);
	assert_int_equal(n, 6);
	assert_true(out[0].native);
	for (size_t i = 1; i < 6; i++) {
		assert_false(out[i].native);
		assert_int_equal(out[i].index, i - 1);
	}
	/* No interpreter frames: the native stack as it is. */
	n = agent_interp_merge(pcs, 5, loops, 1, flags, 0, out, 16);
	assert_int_equal(n, 5);
	/* A leaf pc in the loop is not a return address: looked up as is. */
	{
		const uint64_t leaf[] = { 0x1000, 0x400 + 1 };

		n = agent_interp_merge(leaf, 2, loops, 1, flags, 2, out, 16);
		assert_int_equal(n, 3);
		assert_false(out[0].native);
		assert_false(out[1].native);
		assert_true(out[2].native);
	}
	/* The output bound holds. */
	assert_int_equal(agent_interp_merge(pcs, 5, loops, 1, flags, 5, out, 3), 3);
}

/*
 * Ruby's shape: each activation is vm_exec_core (an inner range) called
 * by rb_vm_exec; both frames take the activation's one run.
 */
static void test_merge_inner(void **state)
{
	/* leaf first: core, exec | helper, rb_yield, rb_ary_each | core, exec | main */
	const uint64_t pcs[] = { 0x2100,     0x1010 + 1, 0x5000 + 1, 0x5100 + 1,
				 0x5200 + 1, 0x2200 + 1, 0x1020 + 1, 0x400 + 1 };
	const struct agent_interp_range loops[] = { { 0x1000, 0x1100, false },
						    { 0x2000, 0x3000, true } };
	/* spin, run, block in main (entry) | Array#each, main, <main> (entry) */
	const uint32_t flags[] = { 0, 0, PROFILE_IF_ENTRY, PROFILE_IF_CFUNC, 0, PROFILE_IF_ENTRY };
	const bool native[] = { false, false, false, true, true, true, false, false, false, true };
	const uint32_t index[] = { 0, 1, 2, 2, 3, 4, 3, 4, 5, 7 };
	struct agent_interp_item out[16];
	size_t n;

	(void)state;
	n = agent_interp_merge(pcs, 8, loops, 2, flags, 6, out, 16);
	assert_int_equal(n, 10);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(out[i].native, native[i]);
		assert_int_equal(out[i].index, index[i]);
	}
	/* Without the inner range, the core frames stay native, leaf side of each run. */
	n = agent_interp_merge(pcs, 8, loops, 1, flags, 6, out, 16);
	assert_int_equal(n, 12);
	assert_true(out[0].native);
	assert_false(out[1].native);
	/* Two core frames in a row are two activations; the exec after the second is its own. */
	{
		const uint64_t two[] = { 0x2100, 0x2200 + 1, 0x1010 + 1, 0x400 + 1 };

		n = agent_interp_merge(two, 4, loops, 2, flags, 6, out, 16);
		assert_int_equal(n, 7);
		for (size_t i = 0; i < 6; i++) {
			assert_false(out[i].native);
			assert_int_equal(out[i].index, i);
		}
		assert_true(out[6].native);
		assert_int_equal(out[6].index, 3);
	}
	/* An exec frame with no inner frame before it takes its run as before. */
	{
		const uint64_t plain[] = { 0x1010, 0x5000 + 1, 0x1020 + 1 };

		n = agent_interp_merge(plain, 3, loops, 2, flags, 6, out, 16);
		assert_int_equal(n, 7);
		assert_true(out[3].native);
		assert_int_equal(out[3].index, 1);
	}
}

/*
 * f's location table as CPython 3.11.2 compiled it, and the line of each
 * of its 54 code units from f.__code__.co_positions():
 *   def f(a, b):
 *       x = a + b
 *       if x > 3:
 *           y = [i * i
 *                for i in range(x)]
 *           return sum(y)
 *       return x
 */
static const uint8_t f_table[] = {
	0x80, 0x00, 0xd8, 0x08, 0x09, 0x88, 0x41, 0x89, 0x05, 0x80, 0x41, 0xd8, 0x07, 0x08, 0x88,
	0x31, 0x82, 0x75, 0x80, 0x75, 0xf0, 0x02, 0x01, 0x0d, 0x20, 0xf0, 0x00, 0x01, 0x0d, 0x20,
	0xdd, 0x16, 0x1b, 0x98, 0x41, 0x91, 0x68, 0x94, 0x68, 0xf0, 0x03, 0x01, 0x0d, 0x20, 0xf1,
	0x00, 0x01, 0x0d, 0x20, 0xf4, 0x00, 0x01, 0x0d, 0x20, 0x88, 0x01, 0xe5, 0x0f, 0x12, 0x90,
	0x31, 0x89, 0x76, 0x8c, 0x76, 0x88, 0x0d, 0xd8, 0x0b, 0x0c, 0x80, 0x48,
};
static const int f_lines[54] = { 1, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 4, 4, 5, 5, 5, 5,
				 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 4,
				 4, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 6, 7, 7 };

static void test_linetable(void **state)
{
	(void)state;
	for (uint64_t i = 0; i < 54; i++)
		assert_int_equal(agent_py_linetable_line(f_table, sizeof(f_table), 1, i),
				 f_lines[i]);
	assert_int_equal(agent_py_linetable_line(f_table, sizeof(f_table), 1, 54), 0);
	/* Cut anywhere: never past the end, and what was decoded stays right. */
	for (size_t n = 0; n < sizeof(f_table); n++)
		for (uint64_t i = 0; i < 54; i++) {
			int64_t l = agent_py_linetable_line(f_table, n, 1, i);

			assert_true(l == 0 || l == f_lines[i]);
		}
	/* A byte without the entry bit is corrupt; 15 = no location. */
	assert_int_equal(agent_py_linetable_line((const uint8_t[]){ 0x01 }, 1, 5, 0), 0);
	assert_int_equal(agent_py_linetable_line((const uint8_t[]){ 0xf8 }, 1, 5, 0), 0);
	/* 13: no column, signed varint delta -3 (7 = 0b111: sign bit 1, value 3). */
	assert_int_equal(agent_py_linetable_line((const uint8_t[]){ 0xe8, 0x07 }, 2, 10, 0), 7);
}

static void test_unicode(void **state)
{
	const uint8_t latin1[] = { 'c', 0xe9, 'f' };
	const uint8_t ucs2[] = {
		0xb5, 0x6c, 0x2d, 0x00, 0x00, 0xd8
	}; /* U+6CB5 '-' lone surrogate */
	const uint8_t ucs4[] = { 0x00, 0xf6, 0x01, 0x00, 0xff, 0xff, 0xff, 0x7f };
	char out[32];

	(void)state;
	assert_int_equal(agent_py_unicode_utf8(latin1, 3, 1, out, sizeof(out)), 0);
	assert_string_equal(out, "c\xc3\xa9"
				 "f");
	assert_int_equal(agent_py_unicode_utf8(ucs2, 6, 2, out, sizeof(out)), 0);
	assert_string_equal(out, "\xe6\xb2\xb5-\xef\xbf\xbd");
	assert_int_equal(agent_py_unicode_utf8(ucs4, 8, 4, out, sizeof(out)), 0);
	assert_string_equal(out, "\xf0\x9f\x98\x80\xef\xbf\xbd");
	/* Cut at a character boundary. */
	assert_int_equal(agent_py_unicode_utf8(ucs2, 6, 2, out, 5), 0);
	assert_string_equal(out, "\xe6\xb2\xb5-");
	assert_int_equal(agent_py_unicode_utf8(latin1, 3, 3, out, sizeof(out)), -PROF_ECORRUPT);
}

/* A fake process: one region of memory at BASE. */
#define BASE	  0x10000u
#define CODE	  (BASE + 0x100)
#define CODE_TYPE (BASE + 0x800)
#define QUAL	  (BASE + 0x400)
#define FILE_STR  (BASE + 0x500)
#define TABLE	  (BASE + 0x600)

struct fake {
	uint8_t mem[0x1000];
	int reads;
};

static int fake_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = ctx;

	f->reads++;
	if (addr < BASE || addr + len > BASE + sizeof(f->mem) || addr + len < addr)
		return -EFAULT;
	memcpy(buf, f->mem + (addr - BASE), len);
	return 0;
}

static void put64(struct fake *f, uint64_t at, uint64_t v)
{
	memcpy(f->mem + (at - BASE), &v, 8);
}

static void put32(struct fake *f, uint64_t at, uint32_t v)
{
	memcpy(f->mem + (at - BASE), &v, 4);
}

/* A 3.11 str object: compact ASCII (kind 1) or compact UCS-2. */
static void put_str(struct fake *f, uint64_t at, const char *ascii, const uint16_t *ucs2, size_t n)
{
	put64(f, at + 16, n);
	if (ascii) {
		put32(f, at + 32, (1u << 2) | (1u << 5) | (1u << 6) | (1u << 7));
		memcpy(f->mem + (at + 48 - BASE), ascii, n + 1);
	} else {
		put32(f, at + 32, (2u << 2) | (1u << 5) | (1u << 7));
		memcpy(f->mem + (at + 72 - BASE), ucs2, n * 2);
	}
}

static void fake_code(struct fake *f)
{
	static const uint16_t file[] = { '/', 0x00e9, '.', 'p', 'y' };

	memset(f, 0, sizeof(*f));
	put64(f, CODE + 8, CODE_TYPE); /* ob_type */
	put32(f, CODE + 48, 3);	       /* co_flags */
	put32(f, CODE + 56, 2);	       /* co_argcount */
	put32(f, CODE + 72, 1);	       /* co_firstlineno */
	put64(f, CODE + 112, FILE_STR);
	put64(f, CODE + 120, QUAL);
	put64(f, CODE + 128, QUAL);
	put64(f, CODE + 136, TABLE);
	put_str(f, QUAL, "Outer.f", NULL, 7);
	put_str(f, FILE_STR, NULL, file, 5);
	put64(f, TABLE + 16, sizeof(f_table));
	memcpy(f->mem + (TABLE + 32 - BASE), f_table, sizeof(f_table));
}

static void test_name_frame(void **state)
{
	static struct fake f;
	struct agent_memreader mem = { fake_read, &f };
	struct profile_interp_frame fr = { CODE, 40, 0, 0, 0 };
	struct agent_interp_name nm;
	void *pv = agent_py_namer_new(11, CODE_TYPE);
	int reads;

	(void)state;
	assert_non_null(pv);
	assert_null(agent_py_namer_new(9, CODE_TYPE));
	fake_code(&f);
	fr.check = agent_py_code_check(pv, &mem, CODE);
	assert_int_not_equal(fr.check, PY_CODE_CHECK(1, 2, 3)); /* the names count */
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), 0);
	assert_string_equal(nm.function, "Outer.f");
	assert_string_equal(nm.file, "/\xc3\xa9.py");
	assert_int_equal(nm.start_line, 1);
	assert_int_equal(nm.line, 6);
	/* Cached: another instruction of the same object reads nothing. */
	reads = f.reads;
	fr.aux = 1;
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), 0);
	assert_int_equal(nm.line, 2);
	assert_int_equal(f.reads, reads);
	/* Another code object of the same shape at the address, with another name (code
	 * generated from one template, freed and its address reused): a cached name is
	 * not given for it. */
	{
		struct profile_interp_frame g = fr;

		put_str(&f, QUAL, "Outer.g", NULL, 7);
		g.check = agent_py_code_check(pv, &mem, CODE);
		assert_int_not_equal(g.check, fr.check);
		assert_int_equal(agent_interp_python.name_frame(pv, &mem, &g, &nm), 0);
		assert_string_equal(nm.function, "Outer.g");
		/* The sample of the old object, read after the swap: refused. */
		assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -ESTALE);
		put_str(&f, QUAL, "Outer.f", NULL, 7);
	}
	/* The object at the address changed since the sample: refused. */
	fr.check ^= 1;
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -ESTALE);
	fr.check ^= 1;
	put64(&f, CODE + 8, CODE_TYPE + 8); /* not a code object any more */
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -ESTALE);
	put64(&f, CODE + 8, CODE_TYPE);
	/* A name pointer to nowhere, a string that is not compact, a huge table. */
	put64(&f, CODE + 128, 0x10);
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -ESTALE);
	fr.check = agent_py_code_check(pv, &mem, CODE); /* as BPF would see it now */
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -EFAULT);
	put64(&f, CODE + 128, QUAL);
	fr.check = agent_py_code_check(pv, &mem, CODE);
	put32(&f, QUAL + 32, 0);
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -PROF_ECORRUPT);
	fake_code(&f);
	put64(&f, TABLE + 16, 1u << 30);
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -PROF_ECORRUPT);
	fake_code(&f);
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), 0);
	assert_string_equal(nm.function, "Outer.f");
	/* A frame outside the image. */
	fr.addr = 0x20;
	assert_int_equal(agent_interp_python.name_frame(pv, &mem, &fr, &nm), -EFAULT);
	agent_interp_python.free(pv);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge),	   cmocka_unit_test(test_merge_inner),
		cmocka_unit_test(test_linetable),  cmocka_unit_test(test_unicode),
		cmocka_unit_test(test_name_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
