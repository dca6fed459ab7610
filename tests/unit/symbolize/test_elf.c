// SPDX-License-Identifier: Apache-2.0
/*
 * test_elf.c - ELF reading on a real binary (this test program itself) and
 * on broken ones: the build ID equals the one the dynamic loader sees (and
 * readelf -n, when installed), functions of this program resolve to their
 * names through /proc/self/maps -> file offset -> ELF vaddr -> symbol, and
 * truncated or mutated copies are refused with a reason, never a crash.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "symbolize/elf.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

/* Functions whose names the test looks up; noinline so they have their own symbols. */
int test_elf_marker_global(int x);
__attribute__((noinline)) int test_elf_marker_global(int x)
{
	volatile int v = x;

	for (int i = 0; i < 3; i++)
		v = v * 31 + i;
	return v;
}

__attribute__((noinline, used)) static int test_elf_marker_static(int x)
{
	volatile int v = x;

	for (int i = 0; i < 5; i++)
		v = v * 17 + i;
	return v;
}

static void self_path(char *out, size_t outsz)
{
	ssize_t n = readlink("/proc/self/exe", out, outsz - 1);

	assert_true(n > 0);
	out[n] = '\0';
}

/* Runtime address -> file offset in the executable, from /proc/self/maps. */
static bool runtime_to_offset(uintptr_t addr, uint64_t *off)
{
	char exe[4096], line[8192];
	FILE *f = fopen("/proc/self/maps", "r");
	bool found = false;

	self_path(exe, sizeof(exe));
	assert_non_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long start, end, pgoff;
		char perms[8], path[4096] = "";

		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", &start, &end, perms, &pgoff,
			   path) < 4)
			continue;
		if (addr >= start && addr < end && strcmp(path, exe) == 0) {
			*off = addr - start + pgoff;
			found = true;
		}
	}
	fclose(f);
	return found;
}

static uint64_t vaddr_of(const struct sym_elf *e, void (*fn)(void))
{
	uint64_t off = 0, vaddr = 0;

	assert_true(runtime_to_offset((uintptr_t)fn, &off));
	assert_int_equal(sym_elf_offset_to_vaddr(e, off, &vaddr), 0);
	return vaddr;
}

/* The build ID as the dynamic loader has it mapped: an independent reading. */
static int loader_build_id_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	char *hex = data;

	(void)size;
	if (info->dlpi_name && info->dlpi_name[0])
		return 0; /* the main program is the one without a name */
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;

		if (ph->p_type != PT_NOTE)
			continue;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			size_t align = ph->p_align == 8 ? 8 : 4;
			size_t namesz = (nh->n_namesz + align - 1) & ~(align - 1);
			size_t descsz = (nh->n_descsz + align - 1) & ~(align - 1);
			const unsigned char *desc = (const unsigned char *)p + sizeof(*nh) + namesz;

			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    memcmp(p + sizeof(*nh), "GNU", 4) == 0) {
				for (size_t j = 0; j < nh->n_descsz; j++)
					snprintf(hex + 2 * j, 3, "%02x", desc[j]);
				return 1;
			}
			p += sizeof(*nh) + namesz + descsz;
		}
	}
	return 1;
}

static void test_elf_build_id_matches_loader_and_readelf(void **state)
{
	char path[4096], loader[256] = "", quick[256], cmd[4300], line[512];
	struct sym_elf *e = NULL;
	struct prof_err err;
	FILE *p;

	(void)state;
	self_path(path, sizeof(path));
	prof_err_init(&err);
	assert_int_equal(sym_elf_open(path, &e, &err), 0);
	dl_iterate_phdr(loader_build_id_cb, loader);
	assert_true(strlen(loader) >= 16);
	assert_string_equal(sym_elf_build_id(e), loader);

	assert_int_equal(sym_elf_read_build_id(path, quick, sizeof(quick)), 0);
	assert_string_equal(quick, loader);
	assert_int_equal(sym_elf_read_build_id(path, quick, 8), -ERANGE);

	/* readelf -n prints "Build ID: <hex>"; optional cross-check when binutils is here. */
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	if (p) {
		while (fgets(line, sizeof(line), p)) {
			char *b = strstr(line, "Build ID: ");

			if (b) {
				b += strlen("Build ID: ");
				b[strcspn(b, " \r\n")] = '\0';
				assert_string_equal(b, sym_elf_build_id(e));
			}
		}
		pclose(p);
	}
	sym_elf_free(e);
}

static void test_elf_own_functions_resolve_by_name(void **state)
{
	char path[4096];
	struct sym_elf *e = NULL;
	struct prof_err err;
	uint64_t va, start = 0, junk;

	(void)state;
	self_path(path, sizeof(path));
	prof_err_init(&err);
	assert_int_equal(sym_elf_open(path, &e, &err), 0);
	assert_true(sym_elf_nsymbols(e) > 10);

	va = vaddr_of(e, (void (*)(void))test_elf_marker_global);
	assert_string_equal(sym_elf_lookup(e, va, &start), "test_elf_marker_global");
	assert_true(start == va);
	/* An address inside the function (a few bytes in) names it too. */
	assert_string_equal(sym_elf_lookup(e, va + 4, NULL), "test_elf_marker_global");

	va = vaddr_of(e, (void (*)(void))test_elf_marker_static);
	assert_string_equal(sym_elf_lookup(e, va + 1, NULL), "test_elf_marker_static");

	va = vaddr_of(e, (void (*)(void))test_elf_own_functions_resolve_by_name);
	assert_string_equal(sym_elf_lookup(e, va, NULL), "test_elf_own_functions_resolve_by_name");

	/* Below every symbol, and an offset far outside any segment. */
	assert_null(sym_elf_lookup(e, 0, NULL));
	assert_int_equal(sym_elf_offset_to_vaddr(e, UINT64_MAX - 10, &junk), -ENOENT);

	/* Keep the markers alive and called. */
	assert_true(test_elf_marker_global(1) != 0 || test_elf_marker_static(1) != 0);
	sym_elf_free(e);
}

static void test_elf_open_mem_equals_open_file(void **state)
{
	char path[4096];
	struct buf b = BUF_INIT;
	struct sym_elf *f = NULL, *m = NULL;
	struct prof_err err;
	uint64_t va;

	(void)state;
	self_path(path, sizeof(path));
	assert_int_equal(buf_read_file(&b, path), 0);
	prof_err_init(&err);
	assert_int_equal(sym_elf_open(path, &f, &err), 0);
	assert_int_equal(sym_elf_open_mem(b.p, b.len, &m, &err), 0);
	assert_string_equal(sym_elf_build_id(f), sym_elf_build_id(m));
	assert_int_equal(sym_elf_nsymbols(f), sym_elf_nsymbols(m));
	va = vaddr_of(f, (void (*)(void))test_elf_marker_global);
	assert_string_equal(sym_elf_lookup(m, va, NULL), "test_elf_marker_global");
	sym_elf_free(f);
	sym_elf_free(m);
	buf_release(&b);
}

static void write_file(const char *path, const void *data, size_t n)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	if (n)
		assert_int_equal(fwrite(data, 1, n, f), n);
	fclose(f);
}

static void test_elf_truncated_copies_fail_cleanly(void **state)
{
	char path[4096], tmp[] = "/tmp/profd-test-elf-XXXXXX";
	struct buf b = BUF_INIT;
	size_t lens[16], nlens = 0;
	int fd;

	(void)state;
	self_path(path, sizeof(path));
	assert_int_equal(buf_read_file(&b, path), 0);
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);

	lens[nlens++] = 0;
	lens[nlens++] = 3;
	lens[nlens++] = 16;
	lens[nlens++] = 52;
	lens[nlens++] = 64;
	lens[nlens++] = 200;
	lens[nlens++] = 4096;
	lens[nlens++] = b.len / 4;
	lens[nlens++] = b.len / 2;
	lens[nlens++] = b.len - 100;
	lens[nlens++] = b.len - 1;
	for (size_t i = 0; i < nlens; i++) {
		struct sym_elf *e = (struct sym_elf *)&e; /* must be reset to NULL on failure */
		struct prof_err err;
		char hex[256];
		int rc;

		write_file(tmp, b.p, lens[i]);
		prof_err_init(&err);
		rc = sym_elf_open(tmp, &e, &err);
		/* The section header table sits at the end, so every prefix is refused. */
		assert_true(rc < 0);
		assert_null(e);
		assert_int_equal(err.code, rc);
		assert_true(err.msg[0] != '\0');
		assert_int_equal(rc, lens[i] < 4 ? -PROF_EFORMAT : -PROF_ECORRUPT);
		rc = sym_elf_read_build_id(tmp, hex, sizeof(hex));
		assert_true(rc < 0 || strlen(hex) >= 16);

		prof_err_init(&err);
		rc = sym_elf_open_mem(b.p, lens[i], &e, &err);
		assert_true(rc < 0);
		assert_null(e);
		assert_true(err.msg[0] != '\0');
	}
	unlink(tmp);
	buf_release(&b);
}

/* Deterministic xorshift so a failure reproduces. */
static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void test_elf_mutated_headers_never_crash(void **state)
{
	char path[4096];
	struct buf b = BUF_INIT;
	uint64_t seed = 0x9e3779b97f4a7c15ULL;
	unsigned char *copy;
	size_t region;

	(void)state;
	self_path(path, sizeof(path));
	assert_int_equal(buf_read_file(&b, path), 0);
	copy = malloc(b.len);
	assert_non_null(copy);
	/* Mutate the ELF header, program headers and the section header table. */
	region = PROF_MIN(b.len, (size_t)4096);
	for (int iter = 0; iter < 300; iter++) {
		struct sym_elf *e = NULL;
		struct prof_err err;
		int nflips = 1 + (int)(rng_next(&seed) % 8);

		memcpy(copy, b.p, b.len);
		for (int k = 0; k < nflips; k++) {
			size_t at;

			if (rng_next(&seed) & 1)
				at = 4 + rng_next(&seed) % (region - 4);
			else
				at = b.len - 1 -
				     rng_next(&seed) % PROF_MIN(b.len - 4, (size_t)8192);
			copy[at] = (unsigned char)rng_next(&seed);
		}
		prof_err_init(&err);
		if (sym_elf_open_mem(copy, b.len, &e, &err) == 0) {
			sym_elf_lookup(e, rng_next(&seed) % (1u << 24), NULL);
			sym_elf_free(e);
		} else {
			assert_true(err.msg[0] != '\0');
		}
	}
	free(copy);
	buf_release(&b);
}

static void test_elf_not_elf_and_missing(void **state)
{
	char tmp[] = "/tmp/profd-test-elf-XXXXXX";
	static const char text[] = "#!/bin/sh\necho hello, this is not an ELF file\n";
	struct sym_elf *e = NULL;
	struct prof_err err;
	char hex[64];
	int fd;

	(void)state;
	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	close(fd);
	write_file(tmp, text, sizeof(text) - 1);
	prof_err_init(&err);
	assert_int_equal(sym_elf_open(tmp, &e, &err), -PROF_EFORMAT);
	assert_non_null(strstr(err.msg, "not an ELF"));
	unlink(tmp);

	prof_err_init(&err);
	assert_int_equal(sym_elf_open("/nonexistent/profd/binary", &e, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "/nonexistent/profd/binary"));
	assert_int_equal(sym_elf_read_build_id("/nonexistent/profd/binary", hex, sizeof(hex)),
			 -ENOENT);

	prof_err_init(&err);
	assert_int_equal(sym_elf_open("/proc/self", &e, &err), -PROF_EFORMAT);
	prof_err_init(&err);
	assert_int_equal(sym_elf_open_mem("\177ELF", 4, &e, &err), -PROF_ECORRUPT);
	assert_null(e);
	sym_elf_free(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_elf_build_id_matches_loader_and_readelf),
		cmocka_unit_test(test_elf_own_functions_resolve_by_name),
		cmocka_unit_test(test_elf_open_mem_equals_open_file),
		cmocka_unit_test(test_elf_truncated_copies_fail_cleanly),
		cmocka_unit_test(test_elf_mutated_headers_never_crash),
		cmocka_unit_test(test_elf_not_elf_and_missing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
