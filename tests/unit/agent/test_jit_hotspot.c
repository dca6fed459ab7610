// SPDX-License-Identifier: Apache-2.0
/*
 * test_jit_hotspot.c - the HotSpot runtime (agent/jit_hotspot.h): the
 * stream decoders (UNSIGNED5, line tables, PcDescs, scope records), class
 * names, the introspection tables, and step + name_frame over a fake
 * process memory laid out as JDK 17.0.15 lays it out (agent_hs_jdk17_vm,
 * the offsets tests/tools/jvmwalk --layout checks against a live JVM):
 * one code heap with an "Interpreter" blob and an nmethod whose PcDescs
 * and scopes inline pkg.Hot.mix into pkg.Hot.run, and the Methods,
 * ConstMethods (with line tables), constant pool, class and Symbols
 * naming them. Reused addresses (another compile id, another ConstMethod,
 * a Method no longer in its class) must answer -ESTALE.
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/jit.h"
#include "agent/jit_hotspot.h"

#include <setjmp.h>
#include <cmocka.h>

#define B	   0x10000000ULL /* fake memory */
#define MEM_SIZE   0x10000
#define CODE	   (B + 0x4000) /* code heap: 0x8000 bytes of 128-byte segments */
#define SEGMAP	   (B + 0x800)
#define IBLOB	   (CODE + 16) /* the Interpreter blob (block at CODE, segments 0-7) */
#define IBEGIN	   (CODE + 0x100)
#define NBLOCK	   (CODE + 0x400) /* the nmethod's block: segments 8-23 */
#define NBLOB	   (NBLOCK + 16)
#define NBEGIN	   (NBLOB + 0x200)
#define M1	   (B + 0xc000)
#define CM1	   (B + 0xc100)
#define M2	   (B + 0xc400)
#define CM2	   (B + 0xc500)
#define CP	   (B + 0xd000)
#define IK	   (B + 0xd400)
#define ARR	   (B + 0xd800)
#define STACK	   0x7ff000000000ULL
#define STACK_SIZE 1024

static uint8_t mem_buf[MEM_SIZE];
static uint8_t stack_buf[STACK_SIZE];

static int buf_read(void *ctx, uint64_t addr, void *out, size_t len)
{
	(void)ctx;
	if (addr < B || addr - B > MEM_SIZE || len > MEM_SIZE - (addr - B))
		return -EFAULT;
	memcpy(out, mem_buf + (addr - B), len);
	return 0;
}

static const struct agent_memreader mem = { buf_read, NULL };

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem_buf + (addr - B), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem_buf + (addr - B), &v, 4);
}

static void put16(uint64_t addr, uint16_t v)
{
	memcpy(mem_buf + (addr - B), &v, 2);
}

static void putbytes(uint64_t addr, const void *p, size_t n)
{
	memcpy(mem_buf + (addr - B), p, n);
}

static void spush(uint64_t addr, uint64_t v)
{
	memcpy(stack_buf + (addr - STACK), &v, 8);
}

/* A Symbol at @addr: length (u2) at 4, bytes at 6. */
static uint64_t sym(uint64_t addr, const char *s)
{
	put16(addr + 4, (uint16_t)strlen(s));
	putbytes(addr + 6, s, strlen(s));
	return addr;
}

/* A Method and its ConstMethod: @lines is the table after @code_size bytecodes. */
static void method(uint64_t m, uint64_t cm, uint16_t idnum, uint16_t name_index, uint16_t code_size,
		   const uint8_t *lines, size_t nlines)
{
	put64(m + 8, cm);
	put64(cm + 8, CP);
	put16(cm + 28, 1); /* has a line number table */
	put16(cm + 32, code_size);
	put16(cm + 34, name_index);
	put16(cm + 38, idnum);
	putbytes(cm + 48 + code_size, lines, nlines);
}

static void *hs_new(void)
{
	struct agent_hs_vm vm;
	void *pv = NULL;

	agent_hs_jdk17_vm(&vm, B);
	assert_int_equal(agent_hs_priv_new(&vm, &mem, 0, 0, &pv), 0);
	return pv;
}

static int setup(void **state)
{
	/* run: line 20 at bci 0 (escape: two signed UNSIGNED5), 22 at bci 5 (one byte). */
	static const uint8_t lines1[] = { 0xff, 0, 40, (5 << 3) | 2, 0 };
	static const uint8_t lines2[] = { 0xff, 0, 60, 0 }; /* mix: line 30 from bci 0 */
	/* Scopes data: 0 is no scope; run@4 at 1 (outermost), mix@1 inlined at 4. */
	static const uint8_t scopes[] = { 0, 0, 2, 6, 1, 1, 2 };
	uint64_t meta = NBLOB + 0x400, sd = NBLOB + 0x410, pcs = NBLOB + 0x440;
	struct {
		int32_t pc, scope, obj, flags;
	} pcd[] = { { -1, 0, 0, 0 }, { 0x20, 4, 0, 0 }, { 0x80, 1, 0, 0 }, { 0x100, 0, 0, 0 } };

	(void)state;
	memset(mem_buf, 0, sizeof(mem_buf));
	memset(stack_buf, 0, sizeof(stack_buf));
	put64(B, B + 0x100); /* CodeCache::_heaps -> GrowableArray<CodeHeap*> */
	put32(B + 0x100, 1);
	put64(B + 0x108, B + 0x200);
	put64(B + 0x200, B + 0x300);
	put64(B + 0x300 + 8, CODE);	      /* _memory._low_boundary */
	put64(B + 0x300 + 16, CODE + 0x8000); /* _memory._high_boundary */
	put64(B + 0x300 + 24, CODE);	      /* _memory._low */
	put64(B + 0x300 + 120 + 16, SEGMAP);  /* _segmap._low */
	put32(B + 0x300 + 256, 7);	      /* _log2_segment_size */
	memset(mem_buf + (SEGMAP - B), 0xff, 256);
	for (int i = 0; i < 8; i++)
		mem_buf[SEGMAP - B + i] = (uint8_t)i;
	for (int i = 0; i < 16; i++)
		mem_buf[SEGMAP - B + 8 + i] = (uint8_t)i;
	putbytes(B + 0xf000, "Interpreter", 12);
	putbytes(B + 0xf020, "nmethod", 8);
	/* The Interpreter blob. */
	mem_buf[CODE - B + 8] = 1; /* HeapBlock used */
	put64(IBLOB + 96, B + 0xf000);
	put64(IBLOB + 32, IBEGIN);
	put64(IBLOB + 40, IBEGIN + 0x300);
	/* The nmethod: frame 4 words, complete at +0x10, compile id 77, method run. */
	mem_buf[NBLOCK - B + 8] = 1;
	put64(NBLOB + 96, B + 0xf020);
	put64(NBLOB + 32, NBEGIN);
	put64(NBLOB + 40, NBEGIN + 0x180);
	put32(NBLOB + 28, 4);
	put32(NBLOB + 20, 0x10);
	put32(NBLOB + 304, 77);
	put64(NBLOB + 112, M1);
	put64(NBLOB + 128, NBEGIN + 0x170); /* deopt handler */
	put32(NBLOB + 300, 8);		    /* orig pc at sp + 8 */
	put32(NBLOB + 260, (uint32_t)(meta - NBLOB));
	put64(NBLOB + 120, sd);
	put32(NBLOB + 268, (uint32_t)(pcs - NBLOB));
	put32(NBLOB + 272, (uint32_t)(pcs - NBLOB + sizeof(pcd)));
	put64(meta, M2); /* metadata index 1 */
	put64(meta + 8, M1);
	putbytes(sd, scopes, sizeof(scopes));
	putbytes(pcs, pcd, sizeof(pcd));
	/* The methods, their pool, class and names. */
	method(M1, CM1, 0, 1, 10, lines1, sizeof(lines1));
	method(M2, CM2, 1, 2, 4, lines2, sizeof(lines2));
	put64(CP + 24, IK);
	put16(CP + 54, 3);
	put64(CP + 72 + 8, sym(B + 0xe000, "run") | 1); /* low bit: a tag */
	put64(CP + 72 + 16, sym(B + 0xe040, "mix"));
	put64(CP + 72 + 24, sym(B + 0xe080, "Hot.java"));
	put64(IK + 24, sym(B + 0xe100, "pkg/Hot"));
	put64(IK + 408, ARR);
	put32(ARR, 2);
	put64(ARR + 8, M1);
	put64(ARR + 16, M2);
	return 0;
}

static void test_u5(void **state)
{
	const uint8_t one[] = { 191 }, two[] = { 192, 1 }, cut[] = { 200 };
	const uint8_t five[] = { 255, 255, 255, 255, 255 };
	uint32_t v;
	size_t i = 0;

	(void)state;
	assert_true(agent_hs_u5(one, 1, &i, &v));
	assert_int_equal(v, 191);
	assert_int_equal(i, 1);
	i = 0;
	assert_true(agent_hs_u5(two, 2, &i, &v));
	assert_int_equal(v, 192 + 64);
	i = 0;
	assert_false(agent_hs_u5(cut, 1, &i, &v));
	i = 0;
	assert_true(agent_hs_u5(five, 5, &i, &v)); /* the fifth byte ends it whatever it is */
	assert_int_equal(i, 5);
}

static void test_line_table(void **state)
{
	/* (0, 20), (5, 22), then an escape of +300 bcis and -2 lines: (305, 20) */
	const uint8_t t[] = { 0xff, 0, 40, (5 << 3) | 2, 0xff, 0xd8, 0x06, 3, 0 };

	(void)state;
	assert_int_equal(agent_hs_line_for_bci(t, sizeof(t), 0), 20);
	assert_int_equal(agent_hs_line_for_bci(t, sizeof(t), 4), 20);
	assert_int_equal(agent_hs_line_for_bci(t, sizeof(t), 5), 22);
	assert_int_equal(agent_hs_line_for_bci(t, sizeof(t), 304), 22);
	assert_int_equal(agent_hs_line_for_bci(t, sizeof(t), 305), 20);
	assert_int_equal(agent_hs_line_for_bci(t, 5, 305), 0); /* cut inside the escape */
	assert_int_equal(agent_hs_line_for_bci(NULL, 0, 3), 0);
}

static void test_pcdesc_and_scope(void **state)
{
	struct agent_hs_vm vm;
	int32_t pcs[] = { -1, 0, 0, 0, 0x20, 4, 0, 0, 0x80, 1, 0, 0, 0x100, 0, 0, 0 };
	const uint8_t sd[] = { 0, 0, 2, 6, 1, 1, 2 };
	struct agent_hs_scope s;

	(void)state;
	agent_hs_jdk17_vm(&vm, 0);
	assert_int_equal(agent_hs_pcdesc_scope(&vm, (uint8_t *)pcs, sizeof(pcs), 0), 4);
	assert_int_equal(agent_hs_pcdesc_scope(&vm, (uint8_t *)pcs, sizeof(pcs), 0x1f), 4);
	assert_int_equal(agent_hs_pcdesc_scope(&vm, (uint8_t *)pcs, sizeof(pcs), 0x20), 1);
	assert_int_equal(agent_hs_pcdesc_scope(&vm, (uint8_t *)pcs, sizeof(pcs), 0x80), -1);
	assert_int_equal(agent_hs_pcdesc_scope(&vm, (uint8_t *)pcs, sizeof(pcs), 0x100), -1);
	assert_int_equal(agent_hs_scope_decode(sd, sizeof(sd), 4, &s), 0);
	assert_int_equal(s.sender, 1);
	assert_int_equal(s.method_index, 1);
	assert_int_equal(s.bci, 1);
	assert_int_equal(agent_hs_scope_decode(sd, sizeof(sd), 1, &s), 0);
	assert_int_equal(s.sender, 0);
	assert_int_equal(s.bci, 5);
	assert_int_equal(agent_hs_scope_decode(sd, sizeof(sd), 6, &s), -PROF_ECORRUPT);
	assert_int_equal(agent_hs_scope_decode(sd, sizeof(sd), 99, &s), -PROF_ECORRUPT);
}

static void test_class_name(void **state)
{
	char out[32];
	const char *hidden = "app/Main$$Lambda$14+0x0000000800c01234";

	(void)state;
	agent_hs_class_name((const uint8_t *)"java/lang/String", 16, out, sizeof(out));
	assert_string_equal(out, "java.lang.String");
	agent_hs_class_name((const uint8_t *)hidden, strlen(hidden), out, sizeof(out));
	assert_string_equal(out, "app.Main$$Lambda$14");
	agent_hs_class_name((const uint8_t *)"a\nb\xff", 4, out, sizeof(out));
	assert_string_equal(out, "a?b?");
	agent_hs_class_name((const uint8_t *)"abcdefgh", 8, out, 4);
	assert_string_equal(out, "abc");
}

static void test_step_compiled_and_name_inlined(void **state)
{
	void *pv = hs_new();
	struct agent_jit_stack stk = { STACK, STACK_SIZE, stack_buf, 0 };
	struct agent_jit_regs r = { NBEGIN + 0x30, STACK + 0x100, 0x1234, true }, c;
	struct agent_jit_frame f;
	struct agent_interp_name nm[AGENT_JIT_MAX_INLINE];

	(void)state;
	spush(STACK + 0x100 + 24, IBEGIN + 0x50); /* return address: the interpreter */
	spush(STACK + 0x100 + 16, STACK + 0x300); /* saved rbp */
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_COMPILED);
	assert_int_equal(f.obj, NBLOB);
	assert_int_equal(f.offset, 0x30);
	assert_int_equal(f.check, 77);
	assert_int_equal(c.pc, IBEGIN + 0x50);
	assert_int_equal(c.sp, STACK + 0x120);
	assert_int_equal(c.bp, STACK + 0x300);
	/* pc offset 0x30: the next PcDesc (0x80) has run@4 only: line 22. */
	assert_int_equal(agent_jit_hotspot.name_frame(pv, &mem, &f, nm, AGENT_JIT_MAX_INLINE), 1);
	assert_string_equal(nm[0].function, "pkg.Hot.run");
	assert_string_equal(nm[0].file, "Hot.java");
	assert_int_equal(nm[0].line, 22);
	assert_int_equal(nm[0].start_line, 20);
	/* pc offset 0x10: PcDesc 0x20, mix@1 inlined in run@4, innermost first. */
	f.offset = 0x10;
	assert_int_equal(agent_jit_hotspot.name_frame(pv, &mem, &f, nm, AGENT_JIT_MAX_INLINE), 2);
	assert_string_equal(nm[0].function, "pkg.Hot.mix");
	assert_int_equal(nm[0].line, 30);
	assert_string_equal(nm[1].function, "pkg.Hot.run");
	assert_int_equal(nm[1].line, 22);
	assert_int_equal(agent_jit_hotspot.name_frame(pv, &mem, &f, nm, 1), 1); /* @max caps */
	/* Another compilation at the same address is not named as this one. */
	f.check = 78;
	assert_int_equal(agent_jit_hotspot.name_frame(pv, &mem, &f, nm, 4), -ESTALE);
	agent_jit_hotspot.free(pv);
}

static void test_step_prologue_epilogue_deopt(void **state)
{
	void *pv = hs_new();
	struct agent_jit_stack stk = { STACK, STACK_SIZE, stack_buf, 0 };
	struct agent_jit_regs r = { NBEGIN + 4, STACK + 0x100, 0x1234, true }, c;
	struct agent_jit_frame f;

	(void)state;
	/* Prologue: only the return address pushed. */
	spush(STACK + 0x100, IBEGIN + 0x60);
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(c.pc, IBEGIN + 0x60);
	assert_int_equal(c.sp, STACK + 0x108);
	assert_int_equal(c.bp, 0x1234);
	/* Prologue after push rbp: [sp] is a stack address, the return address above it. */
	spush(STACK + 0x100, STACK + 0x300);
	spush(STACK + 0x108, IBEGIN + 0x60);
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(c.sp, STACK + 0x110);
	assert_int_equal(c.bp, STACK + 0x300);
	/* Epilogue on "pop rbp". */
	r.pc = NBEGIN + 0x40;
	mem_buf[r.pc - B] = 0x5d;
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(c.sp, STACK + 0x110);
	assert_int_equal(c.bp, STACK + 0x300);
	/* Epilogue on ret: only the return address left. */
	mem_buf[r.pc - B] = 0xc3;
	spush(STACK + 0x100, IBEGIN + 0x70);
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(c.pc, IBEGIN + 0x70);
	assert_int_equal(c.sp, STACK + 0x108);
	/* A return to the deopt handler is named by the pc kept at sp + orig_pc_offset. */
	r.pc = NBEGIN + 0x170;
	spush(STACK + 0x108, NBEGIN + 0x21);
	spush(STACK + 0x100 + 24, IBEGIN + 0x50);
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, false, &c, &f), 0);
	assert_int_equal(f.offset, 0x20);
	/* A return address outside any code: not stepped (the frame pointer is used). */
	r.pc = NBEGIN + 0x31;
	for (int i = 0; i <= 8; i++)
		spush(STACK + 0x100 + 24 + 8 * (uint64_t)i, 0x4242);
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, false, &c, &f), -PROF_ECORRUPT);
	/* Free segments and other memory are not the JVM's code. */
	r.pc = CODE + 0x2000;
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), -ENOENT);
	r.pc = B + 0x100;
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), -ENOENT);
	agent_jit_hotspot.free(pv);
}

static void test_step_interpreter_and_stale(void **state)
{
	void *pv = hs_new();
	struct agent_jit_stack stk = { STACK, STACK_SIZE, stack_buf, 0 };
	uint64_t fp = STACK + 0x100;
	struct agent_jit_regs r = { IBEGIN + 0x51, STACK + 0x80, fp, true }, c;
	struct agent_jit_frame f;
	struct agent_interp_name nm[2];

	(void)state;
	spush(fp - 24, M1);
	spush(fp - 64, CM1 + 48 + 5); /* bcp: bci 5 */
	spush(fp - 8, fp + 0x40);     /* sender sp */
	spush(fp, fp + 0x80);	      /* saved rbp */
	spush(fp + 8, NBEGIN + 0x21); /* return into the nmethod */
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, false, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_INTERPRETED);
	assert_int_equal(f.obj, M1);
	assert_int_equal(f.offset, 5);
	assert_int_equal(f.check, CM1);
	assert_int_equal(c.pc, NBEGIN + 0x21);
	assert_int_equal(c.sp, fp + 0x40);
	assert_int_equal(c.bp, fp + 0x80);
	/* The sampled frame: its live bcp is r13, not the saved slot; r13 outside the code is not. */
	stk.r13 = CM1 + 48 + 9;
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.offset, 9);
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, false, &c, &f), 0);
	assert_int_equal(f.offset, 5);
	stk.r13 = 0x1234;
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.offset, 5);
	stk.r13 = 0;
	assert_int_equal(agent_jit_hotspot.name_frame(pv, &mem, &f, nm, 2), 1);
	assert_string_equal(nm[0].function, "pkg.Hot.run");
	assert_int_equal(nm[0].line, 22);
	/* The Method now has another ConstMethod: freed and reused. */
	put64(M1 + 8, CM2);
	assert_int_equal(agent_jit_hotspot.name_frame(pv, &mem, &f, nm, 2), -ESTALE);
	put64(M1 + 8, CM1);
	/* The Method is no longer where its class keeps it. */
	put64(ARR + 8, M2);
	f.check = CM1;
	agent_jit_hotspot.free(pv);
	pv = hs_new(); /* nothing cached */
	assert_int_equal(agent_jit_hotspot.name_frame(pv, &mem, &f, nm, 2), -ESTALE);
	/* No frame set up (rbp below sp): not stepped. */
	r.bp = STACK;
	assert_int_equal(agent_jit_hotspot.step(pv, &mem, &stk, &r, true, &c, &f), -PROF_ECORRUPT);
	agent_jit_hotspot.free(pv);
}

/* An introspection table in the fake memory: entries of 48 bytes as JDK 17 has them. */
static void table_entry(uint64_t at, uint64_t type, uint64_t field, uint64_t off, uint64_t addr)
{
	put64(at, type);
	put64(at + 8, field);
	put64(at + 32, off);
	put64(at + 40, addr);
}

static void test_vm_tables(void **state)
{
	struct agent_hs_vm vm, ref;
	struct agent_hs_tables t = { B + 0x10, B + 0x18, B + 0x20, B + 0x28, B + 0x30,
				     B + 0x38, B + 0x40, B + 0x48, B + 0x50, B + 0x58 };
	/* type, field, value (offset, size or address) */
	static const struct {
		const char *type, *field;
		uint64_t v;
	} e[] = {
		{ "CodeCache", "_heaps", B + 0x900 },
		{ "Abstract_VM_Version", "_s_vm_release", B + 0x908 },
		{ "Abstract_VM_Version", "_vm_major_version", B + 0x910 },
		{ "Abstract_VM_Version", "_vm_minor_version", B + 0x914 },
		{ "Abstract_VM_Version", "_vm_security_version", B + 0x918 },
		{ "CodeBlob", "_name", 96 },
		{ "CodeBlob", "_frame_complete_offset", 20 },
		{ "CodeBlob", "_frame_size", 28 },
		{ "CodeBlob", "_code_begin", 32 },
		{ "CodeBlob", "_code_end", 40 },
		{ "CodeBlob", "_size", 12 },
		{ "CompiledMethod", "_method", 112 },
		{ "CompiledMethod", "_scopes_data_begin", 120 },
		{ "CompiledMethod", "_deopt_handler_begin", 128 },
		{ "nmethod", "_compile_id", 304 },
		{ "nmethod", "_orig_pc_offset", 300 },
		{ "nmethod", "_metadata_offset", 260 },
		{ "nmethod", "_scopes_pcs_offset", 268 },
		{ "nmethod", "_dependencies_offset", 272 },
		{ "CodeHeap", "_memory", 8 },
		{ "CodeHeap", "_segmap", 120 },
		{ "CodeHeap", "_log2_segment_size", 256 },
		{ "VirtualSpace", "_low_boundary", 0 },
		{ "VirtualSpace", "_high_boundary", 8 },
		{ "VirtualSpace", "_low", 16 },
		{ "HeapBlock::Header", "_used", 8 },
		{ "GrowableArrayBase", "_len", 0 },
		{ "GrowableArray<int>", "_data", 8 },
		{ "Method", "_constMethod", 8 },
		{ "ConstMethod", "_constants", 8 },
		{ "ConstMethod", "_flags", 28 },
		{ "ConstMethod", "_code_size", 32 },
		{ "ConstMethod", "_name_index", 34 },
		{ "ConstMethod", "_method_idnum", 38 },
		{ "ConstantPool", "_pool_holder", 24 },
		{ "ConstantPool", "_source_file_name_index", 54 },
		{ "Klass", "_name", 24 },
		{ "InstanceKlass", "_methods", 408 },
		{ "Array<Klass*>", "_length", 0 },
		{ "Array<Method*>", "_data", 8 },
		{ "Symbol", "_length", 4 },
		{ "Symbol", "_body", 6 },
		{ "PcDesc", "_pc_offset", 0 },
		{ "PcDesc", "_scope_decode_offset", 4 },
	};
	static const struct {
		const char *type;
		uint64_t size;
	} sz[] = { { "nmethod", 352 },	   { "CodeHeap", 344 },	     { "VirtualSpace", 112 },
		   { "HeapBlock", 16 },	   { "Method", 88 },	     { "ConstMethod", 48 },
		   { "ConstantPool", 72 }, { "InstanceKlass", 464 }, { "PcDesc", 16 } };
	uint64_t strs = B + 0x6000, at = B + 0x1000;
	char why[96];

	(void)state;
	memset(mem_buf, 0, sizeof(mem_buf));
	/* Not filled in yet: the strides are 0 until the JVM starts. */
	put64(t.structs, B + 0x1000);
	put64(t.types, B + 0x3000);
	assert_int_equal(agent_hs_vm_read(&t, &mem, &vm, why, sizeof(why)), -EAGAIN);
	put64(t.s_stride, 48);
	put64(t.s_type, 0);
	put64(t.s_field, 8);
	put64(t.s_offset, 32);
	put64(t.s_address, 40);
	put64(t.t_stride, 48);
	put64(t.t_type, 0);
	put64(t.t_size, 32);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(e); i++, at += 48) {
		uint64_t ts = strs, fs = strs + 64;
		bool is_static = e[i].v >= B;

		putbytes(ts, e[i].type, strlen(e[i].type) + 1);
		putbytes(fs, e[i].field, strlen(e[i].field) + 1);
		strs += 128;
		table_entry(at, ts, fs, is_static ? 0 : e[i].v, is_static ? e[i].v : 0);
	}
	at = B + 0x3000;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(sz); i++, at += 48) {
		putbytes(strs, sz[i].type, strlen(sz[i].type) + 1);
		table_entry(at, strs, 0, sz[i].size, 0);
		strs += 64;
	}
	assert_int_equal(agent_hs_vm_read(&t, &mem, &vm, why, sizeof(why)), 0);
	agent_hs_jdk17_vm(&ref, B + 0x900);
	ref.vm_release = B + 0x908;
	ref.vm_major = B + 0x910;
	ref.vm_minor = B + 0x914;
	ref.vm_security = B + 0x918;
	assert_memory_equal(&vm, &ref, sizeof(vm));
	/* An offset outside its type is refused, with the field named. */
	put64(B + 0x1000 + 48 * 14 + 32, 400); /* nmethod._compile_id */
	assert_int_equal(agent_hs_vm_read(&t, &mem, &vm, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "nmethod._compile_id"));
	/* A missing field likewise. */
	put64(B + 0x1000 + 48 * 14, 0); /* ends the table there */
	assert_int_equal(agent_hs_vm_read(&t, &mem, &vm, why, sizeof(why)), -ENOTSUP);
	assert_non_null(strstr(why, "missing"));
	/* A stride no entry could have. */
	put64(t.s_stride, 4096);
	assert_int_equal(agent_hs_vm_read(&t, &mem, &vm, why, sizeof(why)), -PROF_ECORRUPT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_u5),
		cmocka_unit_test(test_line_table),
		cmocka_unit_test(test_pcdesc_and_scope),
		cmocka_unit_test(test_class_name),
		cmocka_unit_test_setup(test_step_compiled_and_name_inlined, setup),
		cmocka_unit_test_setup(test_step_prologue_epilogue_deopt, setup),
		cmocka_unit_test_setup(test_step_interpreter_and_stale, setup),
		cmocka_unit_test(test_vm_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
