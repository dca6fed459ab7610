// SPDX-License-Identifier: Apache-2.0
/*
 * test_gopclntab.c - the Go pclntab reader on a table built here in the
 * Go 1.18 layout (two functions, one file, line and file pc-value
 * tables): names, files and lines per pc, both ends of the text, the
 * unsupported and foreign magics, and every truncation and single-byte
 * corruption of the table (under ASan: never a read out of bounds);
 * inline trees (go:func.* data) in both the Go 1.18 and 1.20 layouts,
 * including hostile trees (a parentPc loop, offsets past the end). The
 * integration test test_symbolize_native.sh covers a real Go binary.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/gopclntab.h"

#include <setjmp.h>
#include <cmocka.h>

#define TEXT 0x401000u

static uint8_t tab[512];
static size_t tab_n;

static void put32(size_t off, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		tab[off + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static void put64(size_t off, uint64_t v)
{
	put32(off, (uint32_t)v);
	put32(off + 4, (uint32_t)(v >> 32));
}

/*
 * Layout: header (72) | funcnametab | cutab | filetab | pctab | functab +
 * _funcs. main.a covers [TEXT, TEXT+8): line 10 for 4 bytes, then 12;
 * main.b covers [TEXT+8, TEXT+16) with the same tables (relative to its entry).
 */
static void build(uint32_t magic)
{
	const char names[] = "main.a\0main.b";
	const char files[] = "/src/x.go";
	const uint8_t pcln[] = { 0, 22, 4, 4, 4, 0 }; /* [0] unused: offset 0 means "none" */
	const uint8_t pcfile[] = { 2, 8, 0 };
	size_t o = 72, fn, cu, ft, pc, ftab;

	memset(tab, 0, sizeof(tab));
	put32(0, magic);
	tab[6] = 1; /* quantum */
	tab[7] = 8; /* pointer size */
	fn = o;
	memcpy(tab + o, names, sizeof(names));
	o += sizeof(names);
	cu = o;
	put32(o, 0); /* CU 0, file 0 -> filetab offset 0 */
	o += 4;
	ft = o;
	memcpy(tab + o, files, sizeof(files));
	o += sizeof(files);
	pc = o;
	memcpy(tab + o, pcln, sizeof(pcln));
	memcpy(tab + o + sizeof(pcln), pcfile, sizeof(pcfile));
	o += sizeof(pcln) + sizeof(pcfile);
	o = (o + 7) & ~(size_t)7;
	ftab = o;
	put64(8, 2);	 /* nfunc */
	put64(16, 1);	 /* nfiles */
	put64(24, TEXT); /* textStart */
	put64(32, fn);
	put64(40, cu);
	put64(48, ft);
	put64(56, pc);
	put64(64, ftab);
	/* functab: (entry offset, _func offset from ftab) x 2, then the end */
	put32(ftab + 0, 0);
	put32(ftab + 4, 24);
	put32(ftab + 8, 8);
	put32(ftab + 12, 24 + 40);
	put32(ftab + 16, 16);
	put32(ftab + 20, 0);
	for (int f = 0; f < 2; f++) {
		size_t b = ftab + 24 + 40 * (size_t)f;

		put32(b + 0, f ? 8 : 0);	       /* entryOff */
		put32(b + 4, f ? 7 : 0);	       /* nameOff */
		put32(b + 20, (uint32_t)sizeof(pcln)); /* pcfile */
		put32(b + 24, 1);		       /* pcln */
		put32(b + 32, 0);		       /* cuOffset */
	}
	tab_n = ftab + 24 + 80;
	PROF_ASSERT(tab_n <= sizeof(tab));
}

static void test_gopclntab_lookups(void **state)
{
	struct sym_gopclntab *g = NULL;
	struct sym_frame f;
	struct prof_err err;

	(void)state;
	for (int v = 0; v < 2; v++) {
		build(v ? 0xfffffff1u : 0xfffffff0u); /* Go 1.18-1.19, then 1.20+ */
		prof_err_init(&err);
		assert_int_equal(sym_gopclntab_parse(tab, tab_n, 0, &g, &err), 0);
		assert_int_equal(sym_gopclntab_nfuncs(g), 2);
		assert_int_equal(sym_gopclntab_lookup(g, TEXT, &f), 1);
		assert_string_equal(f.name, "main.a");
		assert_string_equal(f.file, "/src/x.go");
		assert_int_equal(f.line, 10);
		assert_int_equal(f.source, SYM_SRC_GOPCLNTAB);
		assert_int_equal(sym_gopclntab_lookup(g, TEXT + 5, &f), 1);
		assert_string_equal(f.name, "main.a");
		assert_int_equal(f.line, 12);
		assert_int_equal(sym_gopclntab_lookup(g, TEXT + 8, &f), 1);
		assert_string_equal(f.name, "main.b");
		assert_int_equal(f.line, 10);
		assert_int_equal(sym_gopclntab_lookup(g, TEXT + 15, &f), 1);
		assert_string_equal(f.name, "main.b");
		assert_int_equal(sym_gopclntab_lookup(g, TEXT + 16, &f), 0); /* end of text */
		assert_int_equal(sym_gopclntab_lookup(g, TEXT - 1, &f), 0);
		assert_int_equal(sym_gopclntab_lookup(g, 0, &f), 0);
		sym_gopclntab_free(g);
	}
	sym_gopclntab_free(NULL);
}

static void test_gopclntab_bad_tables(void **state)
{
	struct sym_gopclntab *g = NULL;
	struct sym_frame f;
	struct prof_err err;

	(void)state;
	build(0xfffffffbu);
	prof_err_init(&err);
	assert_int_equal(sym_gopclntab_parse(tab, tab_n, 0, &g, &err), -PROF_EUNSUPPORTED);
	assert_non_null(strstr(err.msg, "0xfffffffb"));
	build(0x12345678u);
	prof_err_init(&err);
	assert_int_equal(sym_gopclntab_parse(tab, tab_n, 0, &g, &err), -PROF_EFORMAT);
	assert_null(g);
	build(0xfffffff0u);
	put64(8, 1u << 30); /* nfunc far past the data */
	prof_err_init(&err);
	assert_int_equal(sym_gopclntab_parse(tab, tab_n, 0, &g, &err), -PROF_ECORRUPT);

	/* Every truncation and every one-byte corruption: an error or safe lookups. */
	for (size_t cut = 0; cut <= tab_n; cut++) {
		build(0xfffffff0u);
		if (sym_gopclntab_parse(tab, cut, 0, &g, NULL) == 0) {
			for (uint64_t pc = TEXT - 2; pc < TEXT + 20; pc++)
				(void)sym_gopclntab_lookup(g, pc, &f);
			sym_gopclntab_free(g);
		}
	}
	for (size_t i = 0; i < tab_n; i++) {
		build(0xfffffff0u);
		tab[i] ^= 0xa5;
		if (sym_gopclntab_parse(tab, tab_n, 0, &g, NULL) == 0) {
			for (uint64_t pc = TEXT - 2; pc < TEXT + 20; pc++)
				if (sym_gopclntab_lookup(g, pc, &f))
					assert_true(strlen(f.name) < sizeof(f.name));
			sym_gopclntab_free(g);
		}
	}
}

/*
 * One function main.outer on [TEXT, TEXT+16) with an inline tree:
 * main.inner (line 10) is inlined on [TEXT, TEXT+8), called from the
 * instruction at entry + 12 (line 20); [TEXT+8, TEXT+16) is main.outer's
 * own code (line 20). Go 1.18 layout (_func 40 bytes, inlinedCall 20) or
 * 1.20 (_func 44, inlinedCall 16). The funcdata bytes go into @fd.
 */
static void build_inline(bool v120, uint8_t *fd, size_t *fd_n, uint32_t parent_pc)
{
	const char names[] = "main.outer\0main.inner";
	const char files[] = "/src/y.go";
	const uint8_t pcln[] = { 0, 22, 8, 20, 8, 0 };
	const uint8_t pcfile[] = { 2, 16, 0 };
	const uint8_t pcinl[] = { 2, 8, 1, 8, 0 }; /* 0 on [0,8), -1 on [8,16) */
	size_t o = 72, fn, cu, ft, pc, ftab, b, fsz = v120 ? 44 : 40;

	memset(tab, 0, sizeof(tab));
	put32(0, v120 ? 0xfffffff1u : 0xfffffff0u);
	tab[6] = 1;
	tab[7] = 8;
	fn = o;
	memcpy(tab + o, names, sizeof(names));
	o += sizeof(names);
	cu = o;
	put32(o, 0);
	o += 4;
	ft = o;
	memcpy(tab + o, files, sizeof(files));
	o += sizeof(files);
	pc = o;
	memcpy(tab + o, pcln, sizeof(pcln));
	memcpy(tab + o + sizeof(pcln), pcfile, sizeof(pcfile));
	memcpy(tab + o + sizeof(pcln) + sizeof(pcfile), pcinl, sizeof(pcinl));
	o += sizeof(pcln) + sizeof(pcfile) + sizeof(pcinl);
	o = (o + 7) & ~(size_t)7;
	ftab = o;
	put64(8, 1);
	put64(16, 1);
	put64(24, TEXT);
	put64(32, fn);
	put64(40, cu);
	put64(48, ft);
	put64(56, pc);
	put64(64, ftab);
	put32(ftab + 0, 0);
	put32(ftab + 4, 16);
	put32(ftab + 8, 16); /* end of text */
	put32(ftab + 12, 0);
	b = ftab + 16;
	put32(b + 4, 0);					       /* nameOff */
	put32(b + 20, (uint32_t)sizeof(pcln));			       /* pcfile */
	put32(b + 24, 1);					       /* pcln */
	put32(b + 28, 3);					       /* npcdata */
	tab[b + fsz - 1] = 4;					       /* nfuncdata */
	put32(b + fsz + 8, (uint32_t)(sizeof(pcln) + sizeof(pcfile))); /* pcdata[2] */
	put32(b + fsz + 12 + 0, UINT32_MAX);			       /* funcdata[0..2] */
	put32(b + fsz + 12 + 4, UINT32_MAX);
	put32(b + fsz + 12 + 8, UINT32_MAX);
	put32(b + fsz + 12 + 12, 8); /* funcdata[3]: the tree at fd + 8 */
	tab_n = b + fsz + 28;
	PROF_ASSERT(tab_n <= sizeof(tab));
	/* The tree: entry 0 = main.inner, called at entry + parent_pc. */
	memset(fd, 0xee, 8 + 20);
	for (int i = 0; i < 4; i++) {
		uint32_t nameoff = 11; /* "main.inner" */

		fd[8 + (v120 ? 4 : 12) + i] = (uint8_t)(nameoff >> (8 * i));
		fd[8 + (v120 ? 8 : 16) + i] = (uint8_t)(parent_pc >> (8 * i));
	}
	*fd_n = 8 + (v120 ? 16 : 20);
}

static void test_gopclntab_inline(void **state)
{
	struct sym_gopclntab *g = NULL;
	struct sym_frame f[4];
	uint8_t fd[64];
	size_t fd_n;

	(void)state;
	for (int v = 0; v < 2; v++) {
		build_inline(v, fd, &fd_n, 12);
		assert_int_equal(sym_gopclntab_parse(tab, tab_n, 0, &g, NULL), 0);
		/* Without funcdata: one frame, the function's own name. */
		assert_int_equal(sym_gopclntab_lookup_frames(g, TEXT + 2, f, 4), 1);
		assert_string_equal(f[0].name, "main.outer");
		sym_gopclntab_set_funcdata(g, fd, fd_n);
		assert_int_equal(sym_gopclntab_lookup_frames(g, TEXT + 2, f, 4), 2);
		assert_string_equal(f[0].name, "main.inner");
		assert_string_equal(f[0].file, "/src/y.go");
		assert_int_equal(f[0].line, 10);
		assert_string_equal(f[1].name, "main.outer");
		assert_int_equal(f[1].line, 20); /* the call site */
		assert_int_equal(sym_gopclntab_lookup_frames(g, TEXT + 9, f, 4), 1);
		assert_string_equal(f[0].name, "main.outer");
		/* Room for one frame: the innermost one. */
		assert_int_equal(sym_gopclntab_lookup_frames(g, TEXT + 2, f, 1), 1);
		assert_int_equal(sym_gopclntab_lookup_frames(g, TEXT + 16, f, 4), 0);
		/* Funcdata cut short: the tree is not read past its end. */
		sym_gopclntab_set_funcdata(g, fd, 10);
		assert_int_equal(sym_gopclntab_lookup_frames(g, TEXT + 2, f, 4), 1);
		sym_gopclntab_free(g);

		/* A parentPc pointing back into the inlined range: bounded walk. */
		build_inline(v, fd, &fd_n, 4);
		assert_int_equal(sym_gopclntab_parse(tab, tab_n, 0, &g, NULL), 0);
		sym_gopclntab_set_funcdata(g, fd, fd_n);
		assert_true(sym_gopclntab_lookup_frames(g, TEXT + 2, f, 4) <= 4);
		sym_gopclntab_free(g);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gopclntab_lookups),
		cmocka_unit_test(test_gopclntab_bad_tables),
		cmocka_unit_test(test_gopclntab_inline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
