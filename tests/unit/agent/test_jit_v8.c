// SPDX-License-Identifier: Apache-2.0
/*
 * test_jit_v8.c - the V8 runtime (agent/jit_v8.c, agent/jit_v8.h) on a
 * fake node process: a heap laid out as V8 11.3 has it (node 20.20's
 * offsets and instance types, agent_v8_layout_default) with two
 * functions, their SharedFunctionInfos, ScopeInfos, Script, bytecode and
 * code, and a stack of V8 frames: an interpreted leaf, a TurboFan
 * caller, an entry frame. Checks each step (frame kind, offsets, the
 * caller's registers), the names and lines, the prologue rule, the
 * staleness check, string shapes (cons, thin, sliced, two-byte), and
 * the decoders on hand-encoded tables.
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/jit.h"
#include "agent/jit_v8.h"

#include <setjmp.h>
#include <cmocka.h>

#define MEM_BASE  0x10000000ULL
#define MEM_SIZE  (64u << 10)
#define STACK_OFF (48u << 10) /* the stack lives in the top 16 KiB */

static uint8_t mem_buf[MEM_SIZE];
static size_t mem_top;
static struct agent_v8_layout L;

static int buf_read(void *ctx, uint64_t addr, void *out, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (addr - MEM_BASE))
		return -EFAULT;
	memcpy(out, mem_buf + (addr - MEM_BASE), len);
	return 0;
}

static const struct agent_memreader mem = { buf_read, NULL };

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem_buf + (addr - MEM_BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem_buf + (addr - MEM_BASE), &v, 4);
}

static void put16(uint64_t addr, uint16_t v)
{
	memcpy(mem_buf + (addr - MEM_BASE), &v, 2);
}

static uint64_t smi(int64_t v)
{
	return (uint64_t)v << 32;
}

/* A new object of @size bytes (8-aligned); returns its tagged address. */
static uint64_t obj_new(size_t size)
{
	uint64_t a = MEM_BASE + mem_top;

	mem_top += (size + 7) & ~(size_t)7;
	assert_true(mem_top <= STACK_OFF);
	return a + 1;
}

/* A map of instance type @t. */
static uint64_t map_new(uint16_t t)
{
	uint64_t m = obj_new(80);

	put16(m - 1 + L.map_instance_type, t);
	return m;
}

static uint64_t obj_of(uint64_t map, size_t size)
{
	uint64_t o = obj_new(size);

	put64(o - 1, map);
	return o;
}

static uint64_t m_str1, m_str2, m_cons, m_thin, m_sliced;

static uint64_t str1(const char *s)
{
	size_t n = strlen(s);
	uint64_t o = obj_of(m_str1, L.seq_chars + n);

	put32(o - 1 + L.string_length, (uint32_t)n);
	memcpy(mem_buf + (o - 1 + L.seq_chars - MEM_BASE), s, n);
	return o;
}

/* Encode one zigzag VLQ of @v at @p; returns bytes written. */
static size_t vlq(uint8_t *p, int64_t v)
{
	uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	size_t n = 0;

	do {
		uint8_t b = z & 0x7f;

		z >>= 7;
		p[n++] = (uint8_t)(b | (z ? 0x80 : 0));
	} while (z);
	return n;
}

/* A source position table of @n (code offset, script offset) pairs. */
static size_t srcpos_encode(uint8_t *p, const int64_t (*e)[2], size_t n)
{
	int64_t code = -1, pos = 0;
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		int64_t raw = (e[i][1] + 1) << 1;

		k += vlq(p + k, e[i][0] - code);
		k += vlq(p + k, raw - pos);
		code = e[i][0];
		pos = raw;
	}
	return k;
}

static uint64_t m_bytes;

static uint64_t byte_array(const uint8_t *p, size_t n)
{
	uint64_t o = obj_of(m_bytes, L.fixed_array_data + n);

	put64(o - 1 + L.fixed_array_length, smi((int64_t)n));
	memcpy(mem_buf + (o - 1 + L.fixed_array_data - MEM_BASE), p, n);
	return o;
}

static const char SOURCE[] = "// line 1\n"	    /* 0 */
			     "function work(n) {\n" /* 10: line 2 */
			     "  let x = 0;\n"	    /* 29: line 3 */
			     "  return x + n;\n"    /* 42: line 4 */
			     "}\n"		    /* 58 */
			     "function outer() {\n" /* 60: line 6 */
			     "  return work(1);\n"  /* 79: line 7 */
			     "}\n";

struct fake {
	uint64_t m_jsf, m_sfi, m_scope, m_script, m_bca, m_code;
	uint64_t undefined, script, fn_work, sfi_work, fn_outer, sfi_outer, scope_work, bca, code;
	uint64_t code_start, code_size;
	uint64_t fp0, fp1, fp2, sp;
	uint8_t *stack;
};

static struct fake F;

/*
 * ScopeInfo of a function named @name at [@start, @end), no context
 * locals, as node 20 lays out crunch's in tests/workloads/v8mix.js:
 * flags, parameter count, context local count, function name and its
 * slot (-1: unused), inferred name (undefined), start and end position,
 * outer scope info.
 */
static uint64_t scope_new(uint64_t name, int64_t start, int64_t end)
{
	uint64_t s = obj_of(F.m_scope, 8 + 16 * 8);

	put64(s - 1 + 8, smi(0x577062));
	put64(s - 1 + 16, smi(1));
	put64(s - 1 + 24, smi(0));
	put64(s - 1 + 32, name);
	put64(s - 1 + 40, smi(-1));
	put64(s - 1 + 48, F.undefined);
	put64(s - 1 + 56, smi(start));
	put64(s - 1 + 64, smi(end));
	put64(s - 1 + 72, s);
	return s;
}

static uint64_t sfi_new(uint64_t nos, uint64_t data)
{
	uint64_t s = obj_of(F.m_sfi, 56);

	put64(s - 1 + L.sfi_function_data, data);
	put64(s - 1 + L.sfi_name_or_scope_info, nos);
	put64(s - 1 + L.sfi_script_or_debug_info, F.script);
	return s;
}

static uint64_t jsf_new(uint64_t sfi, uint64_t code)
{
	uint64_t f = obj_of(F.m_jsf, 64);

	put64(f - 1 + L.jsfunction_shared, sfi);
	put64(f - 1 + L.jsfunction_code, code);
	return f;
}

static void fake_build(void)
{
	uint8_t tab[64];
	int64_t bc_pos[][2] = { { 0, 29 }, { 5, 42 } };
	int64_t pc_pos[][2] = { { 0, 60 }, { 0x40, 79 } };
	size_t n;
	uint64_t src;

	memset(mem_buf, 0, sizeof(mem_buf));
	memset(&F, 0, sizeof(F));
	mem_top = 64;
	agent_v8_layout_default(&L);
	m_str1 = map_new(8);
	m_str2 = map_new(32);
	m_cons = map_new(41);
	m_thin = map_new(45);
	m_sliced = map_new(43);
	m_bytes = map_new(L.t_byte_array);
	F.m_jsf = map_new(L.t_jsfunction_first + 3); /* a subtype, e.g. async functions' */
	F.m_sfi = map_new(L.t_sfi);
	F.m_scope = map_new(L.t_scope_info);
	F.m_script = map_new(L.t_script);
	F.m_bca = map_new(L.t_bytecode_array);
	F.m_code = map_new(L.t_code);

	F.undefined = obj_of(map_new(131), 48); /* an Oddball */
	src = str1(SOURCE);
	F.script = obj_of(F.m_script, 96);
	put64(F.script - 1 + L.script_source, src);
	put64(F.script - 1 + L.script_name, str1("/app/x.js"));
	put64(F.script - 1 + L.script_line_ends, smi(0)); /* not computed */

	/* work: interpreted; bytecode offset 7 is at script offset 42 (line 4) */
	F.bca = obj_of(F.m_bca, 64 + 16);
	n = srcpos_encode(tab, bc_pos, 2);
	put64(F.bca - 1 + L.bytecode_array_source_positions, byte_array(tab, n));
	F.scope_work = scope_new(str1("work"), 23, 58);
	F.sfi_work = sfi_new(F.scope_work, F.bca);
	F.fn_work = jsf_new(F.sfi_work, smi(0));

	/* outer: TurboFan code at 0x50000000, 0x100 bytes; pc offset 0x48 -> offset 79 (line 7) */
	F.code_start = 0x50000000;
	F.code_size = 0x100;
	F.code = obj_of(F.m_code, 64);
	n = srcpos_encode(tab, pc_pos, 2);
	put64(F.code - 1 + L.code_source_positions, byte_array(tab, n));
	put64(F.code - 1 + L.code_instruction_start, F.code_start);
	put32(F.code - 1 + L.code_instruction_size, (uint32_t)F.code_size);
	put32(F.code - 1 + L.code_flags, 13); /* TURBOFAN */
	F.sfi_outer = sfi_new(str1("outer"), smi(0));
	put64(F.sfi_outer - 1 + L.sfi_function_data, F.bca); /* not a builtin */
	F.fn_outer = jsf_new(F.sfi_outer, F.code);

	/*
	 * The stack, from sp up: 8 words of the leaf's expressions, then the
	 * interpreted frame of work (fp0), the TurboFan frame of outer
	 * (fp1), an entry frame (fp2).
	 */
	F.sp = MEM_BASE + STACK_OFF;
	F.fp0 = F.sp + 64 + 48;
	put64(F.fp0 - 40, smi(L.bytecode_array_data - 1 + 7)); /* bytecode offset 7 */
	put64(F.fp0 - 32, F.bca);
	put64(F.fp0 - 16, F.fn_work);
	put64(F.fp0 - 8, obj_of(m_str1, 16)); /* a context: any heap object */
	F.fp1 = F.fp0 + 16 + 32;
	put64(F.fp0, F.fp1);
	put64(F.fp0 + 8, F.code_start + 0x49); /* return address into outer */
	put64(F.fp1 - 16, F.fn_outer);
	put64(F.fp1 - 8, obj_of(m_str1, 16));
	F.fp2 = F.fp1 + 16 + 32;
	put64(F.fp1, F.fp2);
	put64(F.fp1 + 8, 0x18c5000); /* into the builtins */
	put64(F.fp2 - 8, 1 << 1);    /* ENTRY marker */
	put64(F.fp2, 0x7ffc0000);
	put64(F.fp2 + 8, 0x400123);
	F.stack = mem_buf + STACK_OFF;
}

static struct agent_jit_stack fake_stack(void)
{
	struct agent_jit_stack s = { F.sp, MEM_SIZE - STACK_OFF, F.stack, 0 };

	return s;
}

static void test_walk(void **state)
{
	struct agent_jit_stack stk = { 0 };
	struct agent_jit_regs r = { 0x18c6000, 0, 0, true }, c;
	struct agent_jit_frame f;
	struct agent_interp_name nm[AGENT_JIT_MAX_INLINE];
	void *pv;

	(void)state;
	fake_build();
	stk = fake_stack();
	pv = agent_v8_priv_new(&L);
	r.sp = F.sp;
	r.bp = F.fp0;

	/* the leaf: a bytecode handler on work's interpreted frame */
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_INTERPRETED);
	assert_int_equal(f.obj, F.sfi_work);
	assert_int_equal(f.offset, 7);
	assert_int_equal(f.aux, F.fn_work);
	assert_int_equal(c.pc, F.code_start + 0x49);
	assert_int_equal(c.sp, F.fp0 + 16);
	assert_int_equal(c.bp, F.fp1);
	assert_true(c.bp_ok);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, AGENT_JIT_MAX_INLINE), 1);
	assert_string_equal(nm[0].function, "work");
	assert_string_equal(nm[0].file, "/app/x.js");
	assert_int_equal(nm[0].line, 4);
	assert_int_equal(nm[0].start_line, 2);

	/* outer: TurboFan, a return address 0x49 into its code: offset 0x48, line 7 */
	r = c;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, false, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_COMPILED);
	assert_int_equal(f.obj, F.sfi_outer);
	assert_int_equal(f.offset, 0x48);
	assert_int_equal(f.aux, F.code);
	assert_int_equal(c.pc, 0x18c5000);
	assert_int_equal(c.bp, F.fp2);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, AGENT_JIT_MAX_INLINE), 1);
	assert_string_equal(nm[0].function, "outer");
	assert_int_equal(nm[0].line, 7);
	/* the same frame again: from the caches */
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), 1);
	assert_int_equal(nm[0].line, 7);

	/* the entry frame: typed, native naming, its caller outside V8 */
	r = c;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, false, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_NONE);
	assert_int_equal(f.check, 1);
	assert_int_equal(c.pc, 0x400123);
	assert_int_equal(c.sp, F.fp2 + 16);
	agent_jit_v8.free(pv);
}

static void test_prologue(void **state)
{
	struct agent_jit_stack stk = { 0 };
	struct agent_jit_regs r, c;
	struct agent_jit_frame f;
	void *pv;

	(void)state;
	fake_build();
	pv = agent_v8_priv_new(&L);
	/* outer called a callee that has not pushed rbp: [sp] is the return address */
	F.sp = F.fp1 - 48;
	put64(F.sp, F.code_start + 0x49);
	stk = fake_stack();
	stk.base = F.sp;
	stk.bytes = mem_buf + (F.sp - MEM_BASE);
	stk.len = (uint32_t)(MEM_BASE + MEM_SIZE - F.sp);
	r.pc = 0x60000000; /* the callee's first instruction */
	r.sp = F.sp;
	r.bp = F.fp1;
	r.bp_ok = true;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_NONE);
	assert_int_equal(c.pc, F.code_start + 0x49);
	assert_int_equal(c.sp, F.sp + 8);
	assert_int_equal(c.bp, F.fp1);
	/* then outer, once */
	r = c;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, false, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_COMPILED);
	assert_int_equal(f.obj, F.sfi_outer);
	assert_int_equal(c.bp, F.fp2);

	/* a leaf pc outside outer's code with no return address near sp: outer, no offset */
	put64(F.sp, 0);
	put64(F.sp + 8, 0);
	r.pc = 0x60000000;
	r.sp = F.sp;
	r.bp = F.fp1;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_COMPILED);
	assert_int_equal(f.offset, AGENT_V8_NO_OFFSET);
	assert_int_equal(c.bp, F.fp2);
	agent_jit_v8.free(pv);
}

static void test_stale_and_bad(void **state)
{
	struct agent_jit_stack stk = { 0 };
	struct agent_jit_regs r, c;
	struct agent_jit_frame f, g;
	struct agent_interp_name nm[1];
	void *pv;

	(void)state;
	fake_build();
	stk = fake_stack();
	pv = agent_v8_priv_new(&L);
	r.pc = 0x18c6000;
	r.sp = F.sp;
	r.bp = F.fp0;
	r.bp_ok = true;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), 1);
	/* the GC put another function's SFI there: its name_or_scope_info differs */
	put64(F.sfi_work - 1 + L.sfi_name_or_scope_info, str1("other"));
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), -ESTALE);
	/* ... or something that is not an SFI at all */
	put64(F.sfi_work - 1, F.m_script);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), -ESTALE);
	/* an address outside the process */
	g = f;
	g.obj = 0x123401;
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &g, nm, 1), -EFAULT);
	g.kind = AGENT_JIT_NONE;
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &g, nm, 1), -PROF_ECORRUPT);

	/* a frame pointer below sp, or misaligned: not stepped */
	r.bp = F.sp - 16;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), -ERANGE);
	r.bp = F.fp0 + 1;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), -ERANGE);
	r.bp_ok = false;
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), -ERANGE);
	/* fp-16 not a JSFunction: a plain frame-pointer step */
	r.bp = F.fp0;
	r.bp_ok = true;
	put64(F.fp0 - 16, F.script);
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_NONE);
	assert_int_equal(c.bp, F.fp1);
	/* a builtin's function (function_data a Smi): native */
	put64(F.fp0 - 16, F.fn_work);
	put64(F.sfi_work - 1, F.m_sfi);
	put64(F.sfi_work - 1 + L.sfi_function_data, smi(77));
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(f.kind, AGENT_JIT_NONE);
	agent_jit_v8.free(pv);
	assert_false(agent_jit_v8.match("nodejs"));
	assert_true(agent_jit_v8.match("node"));
	assert_true(agent_jit_v8.match("node20"));
	assert_true(agent_jit_v8.match("libnode.so.115"));
	assert_false(agent_jit_v8.match("node-gyp"));
}

static void test_strings(void **state)
{
	struct agent_jit_stack stk = { 0 };
	struct agent_jit_regs r, c;
	struct agent_jit_frame f;
	struct agent_interp_name nm[1];
	uint64_t a, b, cons, thin, sliced, two;
	void *pv;

	(void)state;
	fake_build();
	stk = fake_stack();
	r.pc = 0x18c6000;
	r.sp = F.sp;
	r.bp = F.fp0;
	r.bp_ok = true;

	/* a cons of "ab" + a thin to a sliced "cdefg"[1..4) = "abdef" */
	a = str1("ab");
	b = str1("cdefg");
	sliced = obj_of(m_sliced, 32);
	put32(sliced - 1 + L.string_length, 3);
	put64(sliced - 1 + L.sliced_parent, b);
	put64(sliced - 1 + L.sliced_offset, smi(1));
	thin = obj_of(m_thin, 24);
	put32(thin - 1 + L.string_length, 3);
	put64(thin - 1 + L.thin_actual, sliced);
	cons = obj_of(m_cons, 32);
	put32(cons - 1 + L.string_length, 5);
	put64(cons - 1 + L.cons_first, a);
	put64(cons - 1 + L.cons_second, thin);
	put64(F.scope_work - 1 + 32, cons);
	pv = agent_v8_priv_new(&L);
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), 1);
	assert_string_equal(nm[0].function, "abdef");
	agent_jit_v8.free(pv);

	/* a two-byte name: "é€" */
	two = obj_of(m_str2, 24);
	put32(two - 1 + L.string_length, 2);
	put16(two - 1 + L.seq_chars, 0xe9);
	put16(two - 1 + L.seq_chars + 2, 0x20ac);
	put64(F.scope_work - 1 + 32, two);
	pv = agent_v8_priv_new(&L);
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), 1);
	assert_string_equal(nm[0].function, "\xc3\xa9\xe2\x82\xac");
	agent_jit_v8.free(pv);

	/* a cons cycle: cut at the depth bound, never a hang; an empty name is anonymous */
	put64(cons - 1 + L.cons_second, cons);
	put32(a - 1 + L.string_length, 0);
	put64(F.scope_work - 1 + 32, cons);
	pv = agent_v8_priv_new(&L);
	assert_int_equal(agent_jit_v8.step(pv, &mem, &stk, &r, true, &c, &f), 0);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), -PROF_ECORRUPT);
	put64(F.scope_work - 1 + 32, a);
	assert_int_equal(agent_jit_v8.name_frame(pv, &mem, &f, nm, 1), 1);
	assert_string_equal(nm[0].function, "(anonymous)");
	agent_jit_v8.free(pv);
}

static bool is_str_cb(void *ctx, uint64_t w)
{
	(void)ctx;
	return w == 0x1001;
}

static void test_decoders(void **state)
{
	uint8_t tab[64];
	int64_t e[][2] = { { 0, 10 }, { 4, 20 }, { 9, 5 } };
	size_t n = srcpos_encode(tab, e, 3);
	uint64_t pos, slots[8];
	struct agent_v8_scope sc;
	char out[8];
	const uint8_t pair[] = { 0x3d, 0xd8, 0x00, 0xde, 'A', 0 }; /* U+1F600, A */

	(void)state;
	assert_int_equal(agent_v8_srcpos_find(tab, n, 0, &pos), 0);
	assert_int_equal(agent_v8_srcpos_script_offset(pos), 10);
	assert_int_equal(agent_v8_srcpos_find(tab, n, 8, &pos), 0);
	assert_int_equal(agent_v8_srcpos_script_offset(pos), 20);
	assert_int_equal(agent_v8_srcpos_find(tab, n, 1000, &pos), 0);
	assert_int_equal(agent_v8_srcpos_script_offset(pos), 5);
	assert_int_equal(agent_v8_srcpos_find(tab, n - 1, 1000, &pos), -PROF_ECORRUPT);
	assert_int_equal(agent_v8_srcpos_find(tab, 0, 0, &pos), -ENOENT);
	assert_int_equal(agent_v8_srcpos_script_offset(1), -1);
	assert_int_equal(agent_v8_srcpos_script_offset(0), -1);
	memset(tab, 0xff, 16);
	assert_int_equal(agent_v8_srcpos_find(tab, 16, 0, &pos), -PROF_ECORRUPT);

	/* flags, params, 1 context local (name, info), receiver, name, slot, start, end */
	slots[0] = smi(1);
	slots[1] = smi(0);
	slots[2] = smi(1);
	slots[3] = 0x2001;
	slots[4] = smi(3);
	slots[5] = 0x1001;
	slots[6] = smi(100);
	slots[7] = smi(200);
	agent_v8_scope_info_parse(slots, 8, 3, 2, is_str_cb, NULL, &sc);
	assert_int_equal(sc.name, 0x1001);
	assert_int_equal(sc.start, 100);
	assert_int_equal(sc.end, 200);
	slots[2] = smi(1000); /* a bad count: nothing */
	agent_v8_scope_info_parse(slots, 8, 3, 2, is_str_cb, NULL, &sc);
	assert_int_equal(sc.name, 0);
	assert_int_equal(sc.start, -1);

	assert_int_equal(agent_v8_utf16_to_utf8(pair, 3, out, sizeof(out)), 5);
	assert_string_equal(out, "\xf0\x9f\x98\x80"
				 "A");
	assert_int_equal(agent_v8_utf16_to_utf8(pair, 3, out, 4), 0); /* cut before the 4 bytes */
	assert_string_equal(out, "");
	assert_int_equal(agent_v8_utf16_to_utf8(pair, 1, out, sizeof(out)), 3); /* lone surrogate */
	assert_string_equal(out, "\xef\xbf\xbd");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_walk),	      cmocka_unit_test(test_prologue),
		cmocka_unit_test(test_stale_and_bad), cmocka_unit_test(test_strings),
		cmocka_unit_test(test_decoders),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
