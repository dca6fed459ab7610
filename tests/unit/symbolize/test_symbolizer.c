// SPDX-License-Identifier: Apache-2.0
/*
 * test_symbolizer.c - the query-time symbolizer on this test program and
 * on libc: names resolve when the build ID matches (any case) or is not
 * given; a mismatching build ID is never used and the refusal is
 * remembered; a missing file is a miss; answers are memoized; the file
 * cache stays within its bound; many threads get the same answers as a
 * direct lookup; only files under a symbol path (or the process's own,
 * with their build ID) are opened, build IDs must be hex, and nothing but
 * a regular file of bounded size is ever opened.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/elf.h"
#include "symbolize/symbolizer.h"

#include <ctype.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
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
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
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

	assert_int_not_equal(test_symbolizer_marker(2), 12345);
	sym_elf_free(t.elf);
	symbolizer_free(s);
	symbolizer_free(NULL);
}

static void test_symbolizer_cache_is_bounded(void **state)
{
	struct symbolizer *s = symbolizer_new(1);
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
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
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
	symbolizer_set_symbol_paths(ref, (const char *const[]){ "/" }, 1, NULL);
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
			assert_int_not_equal(want[i][0], '\0');
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

static void test_symbolizer_opens_only_allowed_paths(void **state)
{
	struct symbolizer *s = symbolizer_new(8);
	struct symbolizer_stats st;
	struct prof_err err;
	struct target t;
	char out[256], dir[4096], other[8192], dotted[8192];
	const char *dirs[1];

	(void)state;
	target_of((uintptr_t)test_symbolizer_marker, &t);
	snprintf(dir, sizeof(dir), "%s", t.path);
	*strrchr(dir, '/') = '\0';

	/* No symbol path: the file the data names is not opened, not even looked into. */
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, sizeof(out)),
			 -ENOENT);
	symbolizer_get_stats(s, &st);
	assert_int_equal(st.refused, 2); /* the binary, <debug root>/.build-id/xx/rest.debug */
	assert_int_equal(st.file_opens, 0);
	assert_int_equal(symbolizer_binary_status(s, t.path, t.build_id), SYMBOLIZER_NO_FILE);

	/* Its directory allowed: named. A ".." path that stays inside is the same file. */
	dirs[0] = dir;
	prof_err_init(&err);
	assert_int_equal(symbolizer_set_symbol_paths(s, dirs, 1, &err), 0);
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, sizeof(out)), 0);
	assert_string_equal(out, "test_symbolizer_marker");
	snprintf(dotted, sizeof(dotted), "%s/../%s/%s", dir, strrchr(dir, '/') + 1,
		 strrchr(t.path, '/') + 1);
	assert_int_equal(symbolizer_lookup(s, dotted, "", t.vaddr, out, sizeof(out)), 0);
	assert_string_equal(out, "test_symbolizer_marker");

	/* Another directory: refused again; a ".." path walking out of it too. */
	dirs[0] = "/proc";
	assert_int_equal(symbolizer_set_symbol_paths(s, dirs, 1, &err), 0);
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, sizeof(out)),
			 -ENOENT);
	snprintf(other, sizeof(other), "/proc/../%s", t.path);
	assert_int_equal(symbolizer_lookup(s, other, "", t.vaddr, out, sizeof(out)), -ENOENT);
	assert_int_equal(symbolizer_lookup(s, "relative/path", "", t.vaddr, out, sizeof(out)),
			 -ENOENT);

	/* Bad symbol paths leave the list as it was. */
	dirs[0] = "relative";
	assert_int_equal(symbolizer_set_symbol_paths(s, dirs, 1, &err), -EINVAL);
	dirs[0] = "/nonexistent/profd/dir";
	assert_int_equal(symbolizer_set_symbol_paths(s, dirs, 1, &err), -ENOENT);
	dirs[0] = t.path;
	prof_err_init(&err);
	assert_int_equal(symbolizer_set_symbol_paths(s, dirs, 1, &err), -ENOTDIR);
	assert_non_null(strstr(err.msg, "not a directory"));

	/* Build IDs are hex or nothing: never a path. */
	dirs[0] = "/";
	assert_int_equal(symbolizer_set_symbol_paths(s, dirs, 1, &err), 0);
	assert_int_equal(
		symbolizer_lookup(s, t.path, "../../etc/passwd", t.vaddr, out, sizeof(out)),
		-EINVAL);
	assert_int_equal(symbolizer_lookup(s, "", "ab/../../cd", t.vaddr, out, sizeof(out)),
			 -EINVAL);
	assert_int_equal(symbolizer_lookup(s, t.path, "abc", t.vaddr, out, sizeof(out)), -EINVAL);
	assert_int_equal(symbolizer_lookup(s, t.path, "zz", t.vaddr, out, sizeof(out)), -EINVAL);
	assert_int_equal(symbolizer_binary_status(s, t.path, "zz"), SYMBOLIZER_NO_FILE);
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, sizeof(out)), 0);
	symbolizer_free(s);

	/* The process's own files: only for lookups with their build ID. */
	s = symbolizer_new(8);
	symbolizer_allow_own_objects(s);
	assert_int_equal(symbolizer_lookup(s, t.path, "", t.vaddr, out, sizeof(out)), -ENOENT);
	assert_int_equal(symbolizer_lookup(s, t.path, t.build_id, t.vaddr, out, sizeof(out)), 0);
	assert_string_equal(out, "test_symbolizer_marker");
	assert_int_equal(
		symbolizer_lookup(s, "/etc/passwd", t.build_id, t.vaddr + 1, out, sizeof(out)),
		-ENOENT);
	sym_elf_free(t.elf);
	symbolizer_free(s);
}

/* The /proc/self/maps line holding @addr: path, runtime range and file offset. */
static bool maps_line_of(uintptr_t addr, char *path, size_t pathsz, struct symbolizer_mapping *m)
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
			*m = (struct symbolizer_mapping){ start, end, pgoff };
			found = true;
		}
	}
	fclose(f);
	return found;
}

/*
 * Runtime addresses of this process (this program, a PIE, and libc at
 * its randomized base) with their real mappings resolve to the functions
 * there, as agent-style ELF addresses with mappings in ELF space do; a
 * pseudo mapping [0, UINT64_MAX) or an empty one leaves the address as
 * an ELF address.
 */
static void test_symbolizer_runtime_addresses_through_mappings(void **state)
{
	struct symbolizer *s = symbolizer_new(8);
	struct symbolizer_mapping m, elf, any = { 0, UINT64_MAX, 0 }, none = { 0, 0, 0 };
	struct sym_frame fr[SYM_FRAMES_MAX];
	struct target t;
	char path[4096], libc_path[4096];
	uint64_t off;
	int n;

	(void)state;
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
	target_of((uintptr_t)test_symbolizer_marker, &t);
	assert_true(maps_line_of((uintptr_t)test_symbolizer_marker + 4, path, sizeof(path), &m));
	assert_true(symbolizer_mapping_offset(&m, (uintptr_t)test_symbolizer_marker + 4, &off));
	n = symbolizer_lookup_frames_mapped(
		s, path, t.build_id, &m, (uintptr_t)test_symbolizer_marker + 4, fr, SYM_FRAMES_MAX);
	assert_true(n >= 1);
	assert_string_equal(fr[n - 1].name, "test_symbolizer_marker");
	/* The agent's form: ELF address in a mapping moved into ELF space; same answer. */
	elf = (struct symbolizer_mapping){ t.vaddr + 4 - (off - m.offset), 0, m.offset };
	elf.limit = elf.start + (m.limit - m.start);
	n = symbolizer_lookup_frames_mapped(s, path, t.build_id, &elf, t.vaddr + 4, fr,
					    SYM_FRAMES_MAX);
	assert_true(n >= 1);
	assert_string_equal(fr[n - 1].name, "test_symbolizer_marker");
	/* No usable range: the address is an ELF address. */
	assert_false(symbolizer_mapping_offset(&any, t.vaddr, &off));
	assert_false(symbolizer_mapping_offset(&none, t.vaddr, &off));
	n = symbolizer_lookup_frames_mapped(s, path, t.build_id, &any, t.vaddr + 4, fr,
					    SYM_FRAMES_MAX);
	assert_true(n >= 1);
	assert_string_equal(fr[n - 1].name, "test_symbolizer_marker");
	/* The runtime address read as an ELF address names nothing here (a PIE). */
	if ((uintptr_t)test_symbolizer_marker != t.vaddr)
		assert_int_equal(symbolizer_lookup_frames(s, path, t.build_id,
							  (uintptr_t)test_symbolizer_marker + 4, fr,
							  SYM_FRAMES_MAX),
				 -ENOENT);
	sym_elf_free(t.elf);

	/* libc, at its randomized base: fputs, and the address outside the mapping. */
	uintptr_t a = (uintptr_t)&fputs + 2;
	struct target lc;

	target_of(a, &lc);
	assert_true(maps_line_of(a, libc_path, sizeof(libc_path), &m));
	n = symbolizer_lookup_frames_mapped(s, libc_path, lc.build_id, &m, a, fr, SYM_FRAMES_MAX);
	assert_true(n >= 1);
	assert_non_null(strstr(fr[n - 1].name, "fputs"));
	sym_elf_free(lc.elf);
	symbolizer_free(s);
}

static void test_open_regular_refuses_other_files(void **state)
{
	char dir[] = "/tmp/profd-test-open.XXXXXX", fifo[64], file[64];
	struct prof_err err;
	uint64_t size = 0;
	int fd;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(file, sizeof(file), "%s/file", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	fd = open(file, O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789", 10), 10);
	close(fd);

	/* A FIFO nobody writes to: refused at once, not waited on. */
	prof_err_init(&err);
	assert_int_equal(sym_open_regular(fifo, 1 << 20, &size, &err), -PROF_EFORMAT);
	assert_non_null(strstr(err.msg, "not a regular file"));
	assert_int_equal(sym_open_regular("/dev/null", 1 << 20, &size, NULL), -PROF_EFORMAT);
	assert_int_equal(sym_open_regular(dir, 1 << 20, &size, NULL), -PROF_EFORMAT);
	assert_int_equal(sym_open_regular(file, 9, &size, NULL), -PROF_ETOOBIG);
	fd = sym_open_regular(file, 10, &size, NULL);
	assert_true(fd >= 0);
	assert_int_equal(size, 10);
	close(fd);
	/* And the symbolizer, allowed everywhere, still opens neither. */
	struct symbolizer *s = symbolizer_new(2);
	char out[64];

	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
	assert_int_equal(symbolizer_lookup(s, fifo, "", 0x10, out, sizeof(out)), -ENOENT);
	assert_int_equal(symbolizer_lookup(s, "/dev/zero", "", 0x10, out, sizeof(out)), -ENOENT);
	symbolizer_free(s);
	unlink(fifo);
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symbolizer_matches_and_refuses_mismatch),
		cmocka_unit_test(test_symbolizer_cache_is_bounded),
		cmocka_unit_test(test_symbolizer_threads_agree_with_direct_lookup),
		cmocka_unit_test(test_symbolizer_opens_only_allowed_paths),
		cmocka_unit_test(test_open_regular_refuses_other_files),
		cmocka_unit_test(test_symbolizer_runtime_addresses_through_mappings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
