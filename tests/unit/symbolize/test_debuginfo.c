// SPDX-License-Identifier: Apache-2.0
/*
 * test_debuginfo.c - the debuginfo store (symbolize/debuginfo.h) with this
 * test program as the uploaded file: build IDs are checked and
 * normalized; a valid file is stored (quality dwarf: the tests are built
 * with -g), an equal one kept, a worse one never replaces it; a file under
 * the wrong build ID, a non-ELF file and a truncated ELF are refused with
 * a reason and leave nothing behind; the symbolizer finds the stored file
 * by build ID alone, and symbolizer_invalidate drops what it cached; the
 * debuginfod fetcher does not start without DEBUGINFOD_URLS.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/debuginfo.h"
#include "symbolize/debuginfod.h"
#include "symbolize/elf.h"
#include "symbolize/symbolizer.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

int test_debuginfo_marker(int x);
__attribute__((noinline)) int test_debuginfo_marker(int x)
{
	volatile int v = x;

	for (int i = 0; i < 4; i++)
		v = v * 13 + i;
	return v;
}

static char self_bid[256];

/* Copy @n bytes of this executable (all when 0) into a new store temp file. */
static void stage(struct sym_debuginfo *s, size_t n, char *path, size_t pathsz)
{
	char buf[65536];
	int in = open("/proc/self/exe", O_RDONLY), out = sym_debuginfo_tmpfile(s, path, pathsz);
	size_t done = 0;
	ssize_t r;

	assert_true(in >= 0 && out >= 0);
	while ((r = read(in, buf, sizeof(buf))) > 0 && (n == 0 || done < n)) {
		size_t w = (size_t)r;

		if (n && done + w > n)
			w = n - done;
		assert_int_equal(write(out, buf, w), (ssize_t)w);
		done += w;
	}
	close(in);
	close(out);
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	assert_non_null(d);
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ELF virtual address of runtime address @addr in this executable. */
static uint64_t self_vaddr(uintptr_t addr)
{
	char line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t off = 0, va = 0;
	bool found = false;
	struct sym_elf *e = NULL;
	struct prof_err err;

	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, pgoff;

		if (sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &pgoff) == 3 && addr >= lo &&
		    addr < hi) {
			off = addr - lo + pgoff;
			found = true;
		}
	}
	fclose(f);
	assert_true(found);
	prof_err_init(&err);
	assert_int_equal(sym_elf_open("/proc/self/exe", &e, &err), 0);
	assert_int_equal(sym_elf_offset_to_vaddr(e, off, &va), 0);
	sym_elf_free(e);
	return va;
}

static void test_debuginfo_build_id_normalize(void **state)
{
	char out[SYM_BUILD_ID_MAX_HEX + 1];
	struct prof_err err;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(sym_build_id_normalize("ABCDEF0123456789", out, &err), 0);
	assert_string_equal(out, "abcdef0123456789");
	assert_int_equal(sym_build_id_normalize("a", out, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "hex digits"));
	assert_int_equal(sym_build_id_normalize("abcdef012", out, NULL), -EINVAL); /* odd */
	assert_int_equal(sym_build_id_normalize("abcdefgh", out, NULL), -EINVAL);
	assert_int_equal(sym_build_id_normalize("", out, NULL), -EINVAL);
	assert_int_equal(sym_build_id_normalize(NULL, out, NULL), -EINVAL);
	char longid[SYM_BUILD_ID_MAX_HEX + 3];
	memset(longid, 'a', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	assert_int_equal(sym_build_id_normalize(longid, out, NULL), -EINVAL);
}

static void test_debuginfo_store_rules(void **state)
{
	char dir[] = "/tmp/profd-test-debuginfo-XXXXXX", tmp[4096], p[4096];
	struct sym_debuginfo *s = NULL;
	struct sym_debuginfo_entry e;
	enum sym_debuginfo_outcome oc;
	struct prof_err err;
	const char *wrong = "0123456789abcdef0123456789abcdef01234567";

	(void)state;
	assert_non_null(mkdtemp(dir));
	prof_err_init(&err);
	assert_int_equal(sym_debuginfo_open(dir, &s, &err), 0);
	assert_int_equal(sym_debuginfo_get(s, self_bid, &e), -ENOENT);
	assert_int_equal(sym_debuginfo_path(s, self_bid, SYM_DI_DEBUGINFO, p, sizeof(p)), -ENOENT);

	/* Refusals: nothing stored, temp file gone. */
	stage(s, 0, tmp, sizeof(tmp));
	prof_err_init(&err);
	assert_int_equal(sym_debuginfo_add(s, wrong, tmp, &oc, &e, &err), -EINVAL);
	assert_non_null(strstr(err.msg, "mismatch"));
	assert_int_equal(access(tmp, F_OK), -1);
	stage(s, 5000, tmp, sizeof(tmp));
	prof_err_init(&err);
	assert_int_equal(sym_debuginfo_add(s, self_bid, tmp, &oc, &e, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "truncated"));
	int fd = sym_debuginfo_tmpfile(s, tmp, sizeof(tmp));
	assert_int_equal(write(fd, "#!/bin/sh\n", 10), 10);
	close(fd);
	prof_err_init(&err);
	assert_int_equal(sym_debuginfo_add(s, self_bid, tmp, &oc, &e, &err), -PROF_EFORMAT);
	assert_non_null(strstr(err.msg, "not an ELF"));
	stage(s, 0, tmp, sizeof(tmp));
	prof_err_init(&err);
	assert_int_equal(sym_debuginfo_add(s, "z", tmp, &oc, &e, &err), -EINVAL);
	assert_int_equal(count_entries(dir), 0);
	snprintf(p, sizeof(p), "%s/.tmp", dir);
	assert_int_equal(count_entries(p), 0);

	/* Stored, then kept. */
	stage(s, 0, tmp, sizeof(tmp));
	prof_err_init(&err);
	assert_int_equal(sym_debuginfo_add(s, self_bid, tmp, &oc, &e, &err), 0);
	assert_int_equal(oc, SYM_DI_STORED);
	assert_true(e.has_debuginfo && e.has_executable);
	assert_int_equal(e.quality, SYM_SRC_DWARF);
	assert_int_equal(e.exec_quality, SYM_SRC_DWARF);
	assert_false(e.separate);
	assert_true(e.debuginfo_size > 5000);
	stage(s, 0, tmp, sizeof(tmp));
	assert_int_equal(sym_debuginfo_add(s, self_bid, tmp, &oc, &e, &err), 0);
	assert_int_equal(oc, SYM_DI_KEPT);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(count_entries(dir), 1);

	/* Readable by any case of the ID; the two kinds are the same file here. */
	char upper[256];
	for (size_t i = 0; i <= strlen(self_bid); i++)
		upper[i] = (char)(self_bid[i] >= 'a' && self_bid[i] <= 'f' ? self_bid[i] - 32
									   : self_bid[i]);
	assert_int_equal(sym_debuginfo_get(s, upper, &e), 0);
	assert_int_equal(sym_debuginfo_path(s, upper, SYM_DI_EXECUTABLE, p, sizeof(p)), 0);
	struct sym_elf *elf = NULL;
	assert_int_equal(sym_elf_open(p, &elf, &err), 0);
	assert_string_equal(sym_elf_build_id(elf), self_bid);
	sym_elf_free(elf);

	/* A reopened store sees the same entry (meta on disk). */
	sym_debuginfo_free(s);
	assert_int_equal(sym_debuginfo_open(dir, &s, &err), 0);
	assert_int_equal(sym_debuginfo_get(s, self_bid, &e), 0);
	assert_int_equal(e.quality, SYM_SRC_DWARF);

	/* The symbolizer finds it by build ID alone, and forgets it on invalidate. */
	struct symbolizer *sz = symbolizer_new(4);
	symbolizer_set_symbol_paths(sz, (const char *const[]){ "/" }, 1, NULL);
	struct sym_frame fr[4];
	struct symbolizer_stats st;
	uint64_t start = self_vaddr((uintptr_t)test_debuginfo_marker);

	symbolizer_set_debug_root(sz, "/nonexistent");
	/* Without the store: nothing by build ID alone. */
	assert_int_equal(symbolizer_lookup_frames(sz, "", self_bid, start + 1, fr, 4), -ENOENT);
	symbolizer_set_debuginfo(sz, s);
	assert_int_equal(symbolizer_lookup_frames(sz, "", self_bid, start + 1, fr, 4), 1);
	assert_string_equal(fr[0].name, "test_debuginfo_marker");
	assert_int_equal(fr[0].source, SYM_SRC_DWARF);
	symbolizer_invalidate(sz, upper);
	symbolizer_get_stats(sz, &st);
	assert_int_equal(st.invalidations, 1);
	assert_int_equal(symbolizer_lookup_frames(sz, "", self_bid, start + 1, fr, 4), 1);
	symbolizer_get_stats(sz, &st);
	assert_true(st.store_hits >= 1);
	assert_int_equal(st.memo_hits, 0);
	symbolizer_free(sz);
	assert_int_not_equal(test_debuginfo_marker(3), 7);

	sym_debuginfo_free(s);
	sym_debuginfo_free(NULL);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

static int setup(void **state)
{
	(void)state;
	return sym_elf_read_build_id("/proc/self/exe", self_bid, sizeof(self_bid));
}

static void noop_done(void *arg, const char *build_id)
{
	(void)arg;
	(void)build_id;
}

/* Without DEBUGINFOD_URLS the fetcher does not start, and says why. */
static void test_debuginfod_needs_urls(void **state)
{
	struct sym_debuginfod *d = (struct sym_debuginfod *)1;
	struct symbolizer *s = symbolizer_new(1);
	symbolizer_set_symbol_paths(s, (const char *const[]){ "/" }, 1, NULL);
	struct prof_err err;
	char p[64];

	(void)state;
	unsetenv("DEBUGINFOD_URLS");
	prof_err_init(&err);
	assert_int_equal(sym_debuginfod_new(noop_done, NULL, &d, &err), -PROF_EUNSUPPORTED);
	assert_null(d);
	assert_non_null(strstr(err.msg, "DEBUGINFOD_URLS"));
	setenv("DEBUGINFOD_URLS", "  ", 1);
	prof_err_init(&err);
	assert_int_equal(symbolizer_enable_debuginfod(s, &err), -PROF_EUNSUPPORTED);
	unsetenv("DEBUGINFOD_URLS");
	assert_int_equal(sym_debuginfod_lookup(NULL, self_bid, SYM_DI_DEBUGINFO, p, sizeof(p)),
			 -ENOENT);
	sym_debuginfod_free(NULL);
	symbolizer_free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_debuginfod_needs_urls),
		cmocka_unit_test(test_debuginfo_build_id_normalize),
		cmocka_unit_test(test_debuginfo_store_rules),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
