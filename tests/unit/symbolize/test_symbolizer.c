// SPDX-License-Identifier: Apache-2.0
/*
 * test_symbolizer.c - the query-time symbolizer on this test program and
 * on libc: names resolve when the build ID matches (any case) or is not
 * given; a mismatching build ID is never used and the refusal is
 * remembered; a missing file is a miss; answers are memoized; the file
 * cache stays within its bound; many threads get the same answers as a
 * direct lookup.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/elf.h"
#include "symbolize/symbolizer.h"

#include <ctype.h>
#include <pthread.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

int test_symbolizer_marker(int x);
__attribute__((noinline)) int test_symbolizer_marker(int x)
{
	volatile int v = x;

	for (int i = 0; i < 3; i++)
		v = v * 7 + i;
	return v;
}

/* Runtime address -> (file path, file offset) from /proc/self/maps. */
static bool runtime_to_file(uintptr_t addr, char *path, size_t pathsz, uint64_t *off)
{
	char line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8], p[4096] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &start, &end, perms, &pgoff, p) <
		    5)
			continue;
		if (addr >= start && addr < end && p[0] == '/') {
			snprintf(path, pathsz, "%s", p);
			*off = addr - start + pgoff;
			found = true;
		}
	}
	fclose(f);
	return found;
}

struct target {
	char path[4096];
	char build_id[256];
	uint64_t vaddr;
	struct sym_elf *elf;
};

static void target_of(uintptr_t addr, struct target *t)
{
	struct prof_err err;
	uint64_t off;

	assert_true(runtime_to_file(addr, t->path, sizeof(t->path), &off));
	prof_err_init(&err);
	assert_int_equal(sym_elf_open(t->path, &t->elf, &err), 0);
	snprintf(t->build_id, sizeof(t->build_id), "%s", sym_elf_build_id(t->elf));
	assert_int_equal(sym_elf_offset_to_vaddr(t->elf, off, &t->vaddr), 0);
}

static void test_symbolizer_matches_and_refuses_mismatch(void **state)
{
	struct symbolizer *s = symbolizer_new(8);
	struct symbolizer_stats st;
	struct target t;
	char out[256], upper[256], small[5];
	const char *wrong = "0123456789abcdef0123456789abcdef01234567";

	(void)state;
	target_of((uintptr_t)test_symbolizer_marker, &t);
	assert_true(t.build_id[0]);

	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, sizeof(out)), 0);
	assert_string_equal(out, "test_symbolizer_marker");
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, sizeof(out)), 0);
	assert_string_equal(out, "test_symbolizer_marker");
	symbolizer_get_stats(s, &st);
	assert_int_equal(st.lookups, 2);
	assert_int_equal(st.memo_hits, 1);
	assert_int_equal(st.file_opens, 1);

	/* Upper-case hex is the same build ID. */
	for (size_t i = 0; i <= strlen(t.build_id); i++)
		upper[i] = (char)toupper((unsigned char)t.build_id[i]);
	assert_int_equal(symbolizer_lookup(s, t.path, upper, t.vaddr + 2, out, sizeof(out)), 0);
	assert_string_equal(out, "test_symbolizer_marker");

	/* No build ID given: the file is used as it is. */
	assert_int_equal(symbolizer_lookup(s, t.path, "", t.vaddr, out, sizeof(out)), 0);
	assert_string_equal(out, "test_symbolizer_marker");
	assert_int_equal(symbolizer_lookup(s, t.path, NULL, t.vaddr, out, sizeof(out)), 0);

	/* Mismatch: never used, and the refusal is remembered (one check only). */
	assert_int_equal(symbolizer_lookup(s, t.path, wrong, t.vaddr, out, sizeof(out)), -ENOENT);
	assert_string_equal(out, "");
	assert_int_equal(symbolizer_lookup(s, t.path, wrong, t.vaddr, out, sizeof(out)), -ENOENT);
	symbolizer_get_stats(s, &st);
	assert_int_equal(st.mismatches, 1);

	/* Missing file. */
	assert_int_equal(
		symbolizer_lookup(s, "/nonexistent/bin", t.build_id, t.vaddr + 1, out, sizeof(out)),
		-ENOENT);
	symbolizer_get_stats(s, &st);
	assert_int_equal(st.missing, 1);

	/* An address with no symbol, and a short output buffer. */
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, 0, out, sizeof(out)), -ENOENT);
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, small, sizeof(small)),
			 0);
	assert_string_equal(small, "test");
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, 0), -EINVAL);

	assert_true(test_symbolizer_marker(2) != 12345);
	sym_elf_free(t.elf);
	symbolizer_free(s);
	symbolizer_free(NULL);
}

static void test_symbolizer_cache_is_bounded(void **state)
{
	struct symbolizer *s = symbolizer_new(1);
	struct symbolizer_stats st;
	struct target self, libc;
	char out[256], libc_name[256];

	(void)state;
	target_of((uintptr_t)test_symbolizer_marker, &self);
	target_of((uintptr_t)&getpid, &libc);
	assert_string_not_equal(self.path, libc.path);
	/* libc's name for getpid may come from its debug file (libc6-dbg): take the first answer. */
	assert_int_equal(symbolizer_lookup(s, libc.path, libc.build_id, libc.vaddr, libc_name,
					   sizeof(libc_name)),
			 0);
	assert_non_null(strstr(libc_name, "getpid"));

	for (int round = 0; round < 3; round++) {
		/* Distinct addresses each round so the memo does not answer. */
		assert_int_equal(symbolizer_lookup(s, self.path, self.build_id,
						   self.vaddr + (uint64_t)round, out, sizeof(out)),
				 0);
		assert_string_equal(out, "test_symbolizer_marker");
		assert_int_equal(symbolizer_lookup(s, libc.path, libc.build_id,
						   libc.vaddr + 1 + (uint64_t)round, out,
						   sizeof(out)),
				 0);
		assert_string_equal(out, libc_name);
	}
	symbolizer_get_stats(s, &st);
	assert_true(st.evictions >= 2);
	assert_true(st.file_opens >= 3);
	sym_elf_free(self.elf);
	sym_elf_free(libc.elf);
	symbolizer_free(s);
}

struct worker {
	struct symbolizer *s;
	const struct target *t;
	char (*want)[256]; /* [4000]: single-threaded answers, "" = -ENOENT */
	int failures;
};

static uint64_t worker_vaddr(const struct target *t, int i)
{
	return t->vaddr - 2048 + (uint64_t)(i * 37 % 8192);
}

static void *worker_run(void *arg)
{
	struct worker *w = arg;
	char out[256];

	for (int i = 0; i < 4000; i++) {
		uint64_t va = worker_vaddr(w->t, i);
		int rc = symbolizer_lookup(w->s, w->t->path, w->t->build_id, va, out, sizeof(out));

		if (w->want[i][0] ? (rc != 0 || strcmp(out, w->want[i]) != 0) : rc != -ENOENT)
			w->failures++;
	}
	return NULL;
}

static void test_symbolizer_threads_agree_with_direct_lookup(void **state)
{
	struct symbolizer *s = symbolizer_new(2), *ref = symbolizer_new(2);
	struct target t;
	pthread_t th[8];
	struct worker w[8];
	char(*want)[256] = calloc(4000, sizeof(*want));
	size_t named = 0;

	(void)state;
	target_of((uintptr_t)test_symbolizer_marker, &t);
	/* The answers of a fresh symbolizer, one thread, one at a time. */
	for (int i = 0; i < 4000; i++) {
		uint64_t va = worker_vaddr(&t, i);

		if (symbolizer_lookup(ref, t.path, t.build_id, va, want[i], sizeof(want[i])) == 0) {
			assert_true(want[i][0] != '\0');
			named++;
		} else {
			want[i][0] = '\0';
		}
		/* Where the symbol table knows the function, DWARF names the same one. */
		const char *sym = sym_elf_lookup(t.elf, va, NULL);
		if (sym && want[i][0] && !strchr(sym, '.'))
			assert_string_equal(want[i], sym);
	}
	assert_true(named > 1000);
	symbolizer_free(ref);
	for (int i = 0; i < 8; i++) {
		w[i] = (struct worker){ .s = s, .t = &t, .want = want };
		assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(w[i].failures, 0);
	}
	free(want);
	sym_elf_free(t.elf);
	symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbolizer_matches_and_refuses_mismatch),
		cmocka_unit_test(test_symbolizer_cache_is_bounded),
		cmocka_unit_test(test_symbolizer_threads_agree_with_direct_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
