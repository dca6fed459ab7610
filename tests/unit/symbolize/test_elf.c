// SPDX-License-Identifier: Apache-2.0
/*
 * test_elf.c - ELF reading on a real binary (this test program itself) and
 * on broken ones: the build ID equals the one the dynamic loader sees (and
 * readelf -n, when installed), functions of this program resolve to their
 * names through /proc/self/maps -> file offset -> ELF vaddr -> symbol, and
 * truncated or mutated copies are refused with a reason, never a crash;
 * a Go binary's go:func.* bytes are found through its moduledata in both
 * the older (.noptrdata, .rodata) and the Go 1.26 (.go.module,
 * .gopclntab) placements, on small ELF files built here; a symbol names
 * only its own addresses (its size, else up to the next symbol and the end
 * of its section), on another such file.
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
	assert_int_equal(start, va);
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
		assert_int_not_equal(err.msg[0], '\0');
		assert_int_equal(rc, lens[i] < 4 ? -PROF_EFORMAT : -PROF_ECORRUPT);
		rc = sym_elf_read_build_id(tmp, hex, sizeof(hex));
		assert_true(rc < 0 || strlen(hex) >= 16);

		prof_err_init(&err);
		rc = sym_elf_open_mem(b.p, lens[i], &e, &err);
		assert_true(rc < 0);
		assert_null(e);
		assert_int_not_equal(err.msg[0], '\0');
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
			assert_int_not_equal(err.msg[0], '\0');
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

/*
 * A minimal Go-like ELF (section headers only) for sym_elf_gofunc: .text,
 * .rodata, .gopclntab and the section holding runtime.firstmoduledata,
 * whose pcHeader word (0), text word (176) and gofunc word (320 for the
 * Go 1.20+ magic, 304 for 1.18-1.19) locate go:func.*.
 */
#define GO_TEXT	 0x401000u
#define GO_RO	 0x480000u
#define GO_PCLN	 0x4a0000u
#define GO_MD	 0x500000u
#define GO_SECTS 6

struct go_elf {
	uint8_t b[4096];
	size_t n;
};

static void go_put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8); /* little-endian host (x86-64, arm64), as the ELF says */
}

/*
 * @md_name: ".go.module" (Go 1.26 linkers) or ".noptrdata" (Go 1.19), the
 * moduledata at @md_off in it; @gofunc: the address its gofunc word holds.
 */
static void go_elf_build(struct go_elf *g, uint32_t magic, const char *md_name, size_t md_off,
			 uint64_t gofunc)
{
	/* section names: .text at 1, .rodata 7, .gopclntab 15, .shstrtab 26, @md_name 36 */
	static const char shstr_fixed[] = "\0.text\0.rodata\0.gopclntab\0.shstrtab";
	char shstr[64];
	size_t shstr_n;
	struct {
		uint32_t name, type;
		uint64_t flags, addr, size;
	} sec[GO_SECTS] = {
		{ 0, SHT_NULL, 0, 0, 0 },
		{ 1, SHT_PROGBITS, SHF_ALLOC | SHF_EXECINSTR, GO_TEXT, 16 },
		{ 7, SHT_PROGBITS, SHF_ALLOC, GO_RO, 64 },
		{ 15, SHT_PROGBITS, SHF_ALLOC, GO_PCLN, 128 },
		{ 36, SHT_PROGBITS, SHF_ALLOC | SHF_WRITE, GO_MD, 400 },
		{ 26, SHT_STRTAB, 0, 0, 0 },
	};
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[GO_SECTS];
	size_t off = sizeof(eh);

	memcpy(shstr, shstr_fixed, sizeof(shstr_fixed));
	snprintf(shstr + 36, sizeof(shstr) - 36, "%s", md_name);
	shstr_n = 36 + strlen(md_name) + 1;
	sec[GO_SECTS - 1].size = shstr_n;
	memset(g, 0, sizeof(*g));
	memset(sh, 0, sizeof(sh));
	for (int i = 1; i < GO_SECTS; i++) {
		sh[i].sh_name = sec[i].name;
		sh[i].sh_type = sec[i].type;
		sh[i].sh_flags = sec[i].flags;
		sh[i].sh_addr = sec[i].addr;
		sh[i].sh_offset = off;
		sh[i].sh_size = sec[i].size;
		sh[i].sh_addralign = 8;
		off += (sec[i].size + 7) & ~(uint64_t)7;
	}
	assert_true(off + sizeof(sh) <= sizeof(g->b));
	/* .text: any bytes; .rodata and .gopclntab: a counting pattern */
	for (size_t k = 0; k < 64; k++)
		g->b[sh[2].sh_offset + k] = (uint8_t)(0x40 + k);
	for (size_t k = 0; k < 128; k++)
		g->b[sh[3].sh_offset + k] = (uint8_t)(0x80 + k);
	memcpy(g->b + sh[3].sh_offset, &magic, 4);
	memset(g->b + sh[3].sh_offset + 4, 0, 4);
	go_put64(g->b + sh[4].sh_offset + md_off, GO_PCLN);
	go_put64(g->b + sh[4].sh_offset + md_off + 176, GO_TEXT);
	go_put64(g->b + sh[4].sh_offset + md_off + (magic == 0xfffffff1u ? 320 : 304), gofunc);
	memcpy(g->b + sh[5].sh_offset, shstr, shstr_n);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = GO_SECTS;
	eh.e_shstrndx = GO_SECTS - 1;
	eh.e_shoff = off;
	memcpy(g->b, &eh, sizeof(eh));
	memcpy(g->b + off, sh, sizeof(sh));
	g->n = off + sizeof(sh);
}

/* sym_elf_gofunc of @g: @want_n bytes equal to @want, or NULL when !want. */
static void go_elf_expect(const struct go_elf *g, const uint8_t *want, size_t want_n)
{
	struct sym_elf *e = NULL;
	struct prof_err err;
	const uint8_t *fd;
	size_t n = 1;

	prof_err_init(&err);
	assert_int_equal(sym_elf_open_mem(g->b, g->n, &e, &err), 0);
	assert_true(sym_elf_info(e)->has_gopclntab);
	fd = sym_elf_gofunc(e, &n);
	if (!want) {
		assert_null(fd);
		assert_int_equal(n, 0);
	} else {
		assert_non_null(fd);
		assert_int_equal(n, want_n);
		assert_memory_equal(fd, want, want_n);
	}
	sym_elf_free(e);
}

static void test_elf_go_funcdata_found(void **state)
{
	static struct go_elf g;
	uint8_t want[128];

	(void)state;
	/* Go 1.26: moduledata alone in .go.module; go:func.* inside .gopclntab. */
	go_elf_build(&g, 0xfffffff1u, ".go.module", 0, GO_PCLN + 96);
	for (size_t k = 0; k < 32; k++)
		want[k] = (uint8_t)(0x80 + 96 + k);
	go_elf_expect(&g, want, 32);
	/* Older linkers (Go 1.19): moduledata in .noptrdata, go:func.* in .rodata. */
	for (size_t k = 0; k < 24; k++)
		want[k] = (uint8_t)(0x40 + 40 + k);
	go_elf_build(&g, 0xfffffff1u, ".noptrdata", 16, GO_RO + 40);
	go_elf_expect(&g, want, 24);
	go_elf_build(&g, 0xfffffff0u, ".noptrdata", 24, GO_RO + 40);
	go_elf_expect(&g, want, 24);
	go_elf_build(&g, 0xfffffff0u, ".go.module", 0, GO_RO + 40);
	go_elf_expect(&g, want, 24);
	/* gofunc outside every read-only section, or a magic without it: none. */
	go_elf_build(&g, 0xfffffff1u, ".go.module", 0, GO_PCLN + 128);
	go_elf_expect(&g, NULL, 0);
	go_elf_build(&g, 0xfffffff1u, ".go.module", 0, GO_MD + 8);
	go_elf_expect(&g, NULL, 0);
	go_elf_build(&g, 0xfffffffau, ".go.module", 0, GO_PCLN + 96);
	go_elf_expect(&g, NULL, 0);
	/* Moduledata in a section of another name is not looked for. */
	go_elf_build(&g, 0xfffffff1u, ".data", 0, GO_PCLN + 96);
	go_elf_expect(&g, NULL, 0);
}

/*
 * Symbol extents on a small ELF built here: .text [0x1000, 0x1100) and
 * .fini [0x1200, 0x1210), with a sized function, sizeless ones (as
 * hand-written _init/_fini are), and an absolute sizeless symbol last.
 */
static void test_elf_symbols_bounded(void **state)
{
	/* .symtab 1, .strtab 9, .shstrtab 17, .text 27, .fini 33 */
	static const char shstr[] = "\0.symtab\0.strtab\0.shstrtab\0.text\0.fini";
	static const char str[] = "\0sized\0nosize\0last_text\0fini\0abs_last";
	struct {
		uint64_t value, size;
		uint16_t shndx;
		uint32_t name;
	} defs[] = {
		{ 0x1000, 0x20, 1, 1 },	    /* sized [0x1000, 0x1020) */
		{ 0x1040, 0, 1, 7 },	    /* nosize: to last_text */
		{ 0x10c0, 0, 1, 14 },	    /* last_text: to the end of .text (0x1100) */
		{ 0x1200, 0, 2, 24 },	    /* fini: the end of .fini (0x1210) */
		{ 0x5000, 0, SHN_ABS, 29 }, /* abs_last: no section, no next: its address */
	};
	enum { NSEC = 6, NSYM = PROF_ARRAY_SIZE(defs) + 1 };
	uint8_t b[4096] = { 0 };
	Elf64_Ehdr eh = { 0 };
	Elf64_Shdr sh[NSEC];
	Elf64_Sym sym[NSYM];
	size_t off = sizeof(eh);
	struct sym_elf *e = NULL;
	struct prof_err err;
	static const struct {
		uint64_t addr;
		const char *name;
	} want[] = {
		{ 0x1000, "sized" },	 { 0x101f, "sized" },	  { 0x1020, NULL },
		{ 0x103f, NULL },	 { 0x1040, "nosize" },	  { 0x10bf, "nosize" },
		{ 0x10c0, "last_text" }, { 0x10ff, "last_text" }, { 0x1100, NULL },
		{ 0x11ff, NULL },	 { 0x1200, "fini" },	  { 0x120f, "fini" },
		{ 0x1210, NULL },	 { 0x2000, NULL },	  { 0x5000, "abs_last" },
		{ 0x5001, NULL },	 { 0x7fffffff, NULL },
	};

	(void)state;
	memset(sh, 0, sizeof(sh));
	memset(sym, 0, sizeof(sym));
	for (size_t i = 0; i < PROF_ARRAY_SIZE(defs); i++) {
		sym[i + 1].st_name = defs[i].name;
		sym[i + 1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
		sym[i + 1].st_shndx = defs[i].shndx;
		sym[i + 1].st_value = defs[i].value;
		sym[i + 1].st_size = defs[i].size;
	}
	/* 1 .text, 2 .fini (no bits: only their addresses matter), 3 .symtab, 4 .strtab, 5 .shstrtab */
	sh[1] = (Elf64_Shdr){ .sh_name = 27,
			      .sh_type = SHT_NOBITS,
			      .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			      .sh_addr = 0x1000,
			      .sh_size = 0x100 };
	sh[2] = (Elf64_Shdr){ .sh_name = 33,
			      .sh_type = SHT_NOBITS,
			      .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
			      .sh_addr = 0x1200,
			      .sh_size = 0x10 };
	sh[3] = (Elf64_Shdr){ .sh_name = 1,
			      .sh_type = SHT_SYMTAB,
			      .sh_offset = off,
			      .sh_size = sizeof(sym),
			      .sh_link = 4,
			      .sh_entsize = sizeof(Elf64_Sym),
			      .sh_addralign = 8 };
	memcpy(b + off, sym, sizeof(sym));
	off += sizeof(sym);
	sh[4] = (Elf64_Shdr){ .sh_name = 9,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = off,
			      .sh_size = sizeof(str),
			      .sh_addralign = 1 };
	memcpy(b + off, str, sizeof(str));
	off += sizeof(str);
	sh[5] = (Elf64_Shdr){ .sh_name = 17,
			      .sh_type = SHT_STRTAB,
			      .sh_offset = off,
			      .sh_size = sizeof(shstr),
			      .sh_addralign = 1 };
	memcpy(b + off, shstr, sizeof(shstr));
	off = (off + sizeof(shstr) + 7) & ~(size_t)7;
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_DYN;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof(eh);
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = NSEC;
	eh.e_shstrndx = 5;
	eh.e_shoff = off;
	memcpy(b, &eh, sizeof(eh));
	memcpy(b + off, sh, sizeof(sh));
	off += sizeof(sh);
	assert_true(off <= sizeof(b));

	prof_err_init(&err);
	assert_int_equal(sym_elf_open_mem(b, off, &e, &err), 0);
	assert_int_equal(sym_elf_nsymbols(e), 5);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(want); i++) {
		const char *got = sym_elf_lookup(e, want[i].addr, NULL);

		if (!want[i].name && got)
			fail_msg("0x%" PRIx64 ": want no name, got %s", want[i].addr, got);
		if (want[i].name && (!got || strcmp(got, want[i].name)))
			fail_msg("0x%" PRIx64 ": want %s, got %s", want[i].addr, want[i].name,
				 got ? got : "none");
	}
	sym_elf_free(e);
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
		cmocka_unit_test(test_elf_go_funcdata_found),
		cmocka_unit_test(test_elf_symbols_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
