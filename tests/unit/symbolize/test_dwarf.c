// SPDX-License-Identifier: Apache-2.0
/*
 * test_dwarf.c - DWARF lookups on this test program itself (built with
 * -g): an address inside two levels of always_inline functions resolves
 * to the full inline chain, innermost first, each frame with its own
 * function name, this file and the right line (the innermost from the
 * line table, the outer ones from the call sites); the symbolizer gives
 * the same chain and names the outermost function for symbolizer_lookup;
 * C++ and Rust names demangle; a file without DWARF is refused with
 * -PROF_ENOTFOUND; addresses outside any function give no frames.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/demangle.h"
#include "symbolize/dwarf.h"
#include "symbolize/elf.h"
#include "symbolize/symbolizer.h"

#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

uintptr_t test_dwarf_outer(void);
volatile int test_dwarf_sink;

__attribute__((noinline)) static uintptr_t test_dwarf_grab_ra(void)
{
	return (uintptr_t)__builtin_return_address(0);
}

static const unsigned line_leaf = __LINE__ + 3;
static inline __attribute__((always_inline)) uintptr_t test_dwarf_leaf(void)
{
	uintptr_t r = test_dwarf_grab_ra();
	test_dwarf_sink++; /* no tail call: the return address stays in the inlined code */
	return r;
}

static const unsigned line_mid = __LINE__ + 3;
static inline __attribute__((always_inline)) uintptr_t test_dwarf_mid(void)
{
	uintptr_t r = test_dwarf_leaf();
	test_dwarf_sink++;
	return r;
}

static const unsigned line_outer = __LINE__ + 3;
__attribute__((noinline)) uintptr_t test_dwarf_outer(void)
{
	uintptr_t r = test_dwarf_mid();
	test_dwarf_sink++;
	return r;
}

/* Runtime address -> (file, ELF vaddr) via /proc/self/maps. */
static void runtime_to_vaddr(uintptr_t addr, char *path, size_t pathsz, uint64_t *vaddr,
			     char *build_id, size_t bidsz)
{
	char line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;
	uint64_t off = 0;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8], p[4096] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &start, &end, perms, &pgoff, p) <
		    5)
			continue;
		if (addr >= start && addr < end && p[0] == '/') {
			snprintf(path, pathsz, "%s", p);
			off = addr - start + pgoff;
			found = true;
		}
	}
	fclose(f);
	assert_true(found);
	struct sym_elf *e = NULL;
	struct prof_err err;
	prof_err_init(&err);
	assert_int_equal(sym_elf_open(path, &e, &err), 0);
	assert_int_equal(sym_elf_offset_to_vaddr(e, off, vaddr), 0);
	snprintf(build_id, bidsz, "%s", sym_elf_build_id(e));
	sym_elf_free(e);
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static void check_chain(const struct sym_frame *fr, int n)
{
	assert_int_equal(n, 3);
	assert_string_equal(fr[0].name, "test_dwarf_leaf");
	assert_string_equal(base_name(fr[0].file), "test_dwarf.c");
	assert_int_equal(fr[0].line, line_leaf);
	assert_string_equal(fr[1].name, "test_dwarf_mid");
	assert_string_equal(base_name(fr[1].file), "test_dwarf.c");
	assert_int_equal(fr[1].line, line_mid);
	assert_string_equal(fr[2].name, "test_dwarf_outer");
	assert_string_equal(base_name(fr[2].file), "test_dwarf.c");
	assert_int_equal(fr[2].line, line_outer);
	for (int i = 0; i < n; i++)
		assert_int_equal(fr[i].source, SYM_SRC_DWARF);
}

static void test_dwarf_inline_chain_innermost_first(void **state)
{
	char path[4096], bid[256];
	uint64_t vaddr;
	struct sym_dwarf *d = NULL;
	struct sym_frame fr[8];
	struct prof_err err;
	int n;

	(void)state;
	/* The return address follows the call; one byte back is the call itself. */
	runtime_to_vaddr(test_dwarf_outer() - 1, path, sizeof(path), &vaddr, bid, sizeof(bid));
	prof_err_init(&err);
	assert_int_equal(sym_dwarf_open(path, &d, &err), 0);
	assert_true(sym_dwarf_ncus(d) >= 1);
	n = sym_dwarf_lookup(d, vaddr, fr, 8);
	check_chain(fr, n);

	/* A short output keeps the innermost frames. */
	assert_int_equal(sym_dwarf_lookup(d, vaddr, fr, 1), 1);
	assert_string_equal(fr[0].name, "test_dwarf_leaf");
	assert_int_equal(sym_dwarf_lookup(d, vaddr, fr, 0), 0);

	/* Nothing at address 0 or at the top of the address space. */
	assert_int_equal(sym_dwarf_lookup(d, 0, fr, 8), 0);
	assert_int_equal(sym_dwarf_lookup(d, UINT64_MAX, fr, 8), 0);
	sym_dwarf_free(d);
	sym_dwarf_free(NULL);
}

static void test_dwarf_symbolizer_frames_and_outermost_name(void **state)
{
	char path[4096], bid[256], name[256];
	uint64_t vaddr;
	struct sym_frame fr[8];
	struct symbolizer *s = symbolizer_new(4);
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
	struct symbolizer_stats st;

	(void)state;
	runtime_to_vaddr(test_dwarf_outer() - 1, path, sizeof(path), &vaddr, bid, sizeof(bid));
	for (int round = 0; round < 2; round++) /* second round: from the memo */
		check_chain(fr, symbolizer_lookup_frames(s, path, bid, vaddr, fr, 8));
	assert_int_equal(symbolizer_lookup(s, path, bid, vaddr, name, sizeof(name)), 0);
	assert_string_equal(name, "test_dwarf_outer");
	symbolizer_get_stats(s, &st);
	assert_int_equal(st.lookups, 3);
	assert_int_equal(st.memo_hits, 2);
	assert_int_equal(symbolizer_binary_status(s, path, bid), SYMBOLIZER_OK_DWARF);
	assert_int_equal(symbolizer_lookup_frames(s, path, bid, vaddr, fr, 0), -EINVAL);
	assert_int_equal(symbolizer_lookup_frames(s, "", "", vaddr, fr, 8), -EINVAL);
	/* By build ID alone there is nothing (no store, no system debug file). */
	symbolizer_set_debug_root(s, "/nonexistent");
	assert_int_equal(symbolizer_lookup_frames(s, "", bid, vaddr, fr, 8), -ENOENT);
	assert_int_equal(symbolizer_binary_status(s, "", bid), SYMBOLIZER_NO_FILE);
	symbolizer_free(s);
}

static void test_dwarf_refuses_file_without_debug_info(void **state)
{
	struct sym_dwarf *d = (struct sym_dwarf *)1;
	struct prof_err err;
	char tmp[] = "/tmp/profd-test-dwarf-XXXXXX";
	int fd = mkstemp(tmp);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "not an ELF file at all", 22), 22);
	close(fd);
	prof_err_init(&err);
	assert_int_equal(sym_dwarf_open(tmp, &d, &err), -PROF_EFORMAT);
	assert_null(d);
	unlink(tmp);
	prof_err_init(&err);
	assert_true(sym_dwarf_open("/nonexistent/x", &d, &err) < 0);
	assert_int_not_equal(err.msg[0], '\0');
}

static void test_demangle_cpp_and_rust(void **state)
{
	char out[512];

	(void)state;
	assert_true(sym_demangle("_ZN2ns5Klass6methodEi", out, sizeof(out)));
	assert_string_equal(out, "ns::Klass::method(int)");
	assert_true(sym_demangle("_Z3fooPKcm", out, sizeof(out)));
	assert_string_equal(out, "foo(char const*, unsigned long)");
	/* Rust legacy: the hash suffix is dropped. */
	assert_true(
		sym_demangle("_ZN4core3ptr13drop_in_place17h0123456789abcdefE", out, sizeof(out)));
	assert_string_equal(out, "core::ptr::drop_in_place");
	/* Rust v0 (RFC 2603 example). */
	assert_true(sym_demangle("_RNvCs1234_7mycrate3foo", out, sizeof(out)));
	assert_string_equal(out, "mycrate::foo");
	/* C names and garbage pass through. */
	assert_false(sym_demangle("main", out, sizeof(out)));
	assert_string_equal(out, "main");
	assert_false(sym_demangle("_Zgarbage!!", out, sizeof(out)));
	assert_string_equal(out, "_Zgarbage!!");
	assert_true(sym_demangle("_ZN2ns5Klass6methodEi", out, 5));
	assert_string_equal(out, "ns::");
	assert_false(sym_demangle("x", out, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dwarf_inline_chain_innermost_first),
		cmocka_unit_test(test_dwarf_symbolizer_frames_and_outermost_name),
		cmocka_unit_test(test_dwarf_refuses_file_without_debug_info),
		cmocka_unit_test(test_demangle_cpp_and_rust),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
