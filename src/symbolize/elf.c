// SPDX-License-Identifier: Apache-2.0
/*
 * elf.c - build ID, PT_LOAD segments and function symbols of an ELF file;
 * see elf.h.
 *
 * Everything is read once with libelf (elfutils) and copied into plain
 * arrays, so the Elf handle and the file descriptor are closed before
 * sym_elf_open returns and a struct sym_elf is immutable afterwards.
 *
 * Untrusted input: the file may be truncated, replaced or hostile (a
 * debuginfo upload, a fuzz input). libelf bounds-checks section and chunk
 * reads against the file size; on top of that every count taken from the
 * file is capped before allocating, note sizes are checked by gelf_getnote,
 * and strings come from elf_strptr, which checks the string table bounds.
 * Any failure in a part we need (notes, symbol tables) is reported as
 * -PROF_ECORRUPT with the section or segment named.
 *
 * Symbols: STT_FUNC and STT_GNU_IFUNC symbols that are defined
 * (st_shndx != SHN_UNDEF) and named, from .symtab, or from .dynsym when the
 * file is stripped. They are sorted by address; of several symbols at one
 * address (aliases) the one with a size, then the global one (exported
 * before hidden), then the weak one, wins. Each covers [start, end): a
 * symbol with a size its size; one without (hand-written assembly such as
 * _init and _fini) up to the next symbol and never past the end of its
 * section, and only its own address when neither bound is known (an
 * absolute symbol last in the table). So no address past the last function of a
 * section is named after it.
 *
 * Sources: ELF gABI (program headers, notes, symbol table), the GNU build
 * ID note (NT_GNU_BUILD_ID, owner "GNU"), elfutils libelf/gelf.h.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "symbolize/elf.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

#define SYM_ELF_MAX_BUILD_ID 64		 /* bytes; SHA-1 IDs are 20, allow up to 512 bits */
#define SYM_ELF_MAX_SEGMENTS 4096	 /* PT_LOAD entries kept */
#define SYM_ELF_MAX_SYMBOLS  (64u << 20) /* symbols read from one table */
#define SYM_ELF_MAX_NAME     4096	 /* longer names are truncated */
#define SYM_ELF_ALIAS_WALK   16		 /* how far lookup walks back for an enclosing symbol */
#define SYM_ELF_MAX_PCLNTAB  (1u << 30)	 /* bytes of .gopclntab copied */
#define SYM_ELF_MAX_RO	     4		 /* read-only sections searched for go:func.* */

struct sym_elf_segment {
	uint64_t offset, filesz, vaddr;
	bool exec;
};

struct sym_elf_symbol {
	uint64_t start, size;
	uint64_t end;	   /* covers [start, end), see the head comment */
	uint32_t shndx;	   /* its section, 0 when not known (SHN_ABS, SHN_XINDEX...) */
	uint32_t name;	   /* offset into names */
	uint8_t bind_rank; /* 0 global, 1 weak, 2 hidden global, 3 local: lower wins among aliases */
};

struct sym_elf {
	char build_id[2 * SYM_ELF_MAX_BUILD_ID + 1];
	struct sym_elf_info info;
	char debuglink[SYM_ELF_MAX_NAME];
	uint8_t *gopclntab; /* copy of .gopclntab, NULL when absent */
	size_t gopclntab_n;
	uint8_t *gofunc; /* copy of go:func.* to its section's end, NULL when absent */
	size_t gofunc_n;
	VEC(struct sym_elf_segment) segs;
	VEC(struct sym_elf_symbol) syms;
	VEC(char) names;
};

static pthread_once_t sym_elf_once = PTHREAD_ONCE_INIT;
static bool sym_elf_lib_ok;

static void sym_elf_lib_init(void)
{
	sym_elf_lib_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static const char *sym_elf_errmsg(void)
{
	const char *m = elf_errmsg(-1);

	return m ? m : "unknown libelf error";
}

/* Hex-encode @n bytes of @id into @hex (size @hexsz); false when it does not fit. */
static bool sym_elf_hex(const uint8_t *id, size_t n, char *hex, size_t hexsz)
{
	static const char digits[] = "0123456789abcdef";

	if (n == 0 || hexsz < 2 * n + 1)
		return false;
	for (size_t i = 0; i < n; i++) {
		hex[2 * i] = digits[id[i] >> 4];
		hex[2 * i + 1] = digits[id[i] & 15];
	}
	hex[2 * n] = '\0';
	return true;
}

/*
 * Scan one block of notes for NT_GNU_BUILD_ID. Returns 1 when found (hex
 * written), 0 when not present, -PROF_ECORRUPT when the ID is malformed.
 */
static int sym_elf_scan_notes(Elf_Data *data, char *hex, size_t hexsz, struct prof_err *err)
{
	size_t off = 0, next;
	GElf_Nhdr nh;
	size_t name_off, desc_off;

	if (!data || !data->d_buf)
		return 0;
	while (off < data->d_size &&
	       (next = gelf_getnote(data, off, &nh, &name_off, &desc_off)) > 0) {
		const char *name = (const char *)data->d_buf + name_off;

		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    memcmp(name, "GNU", 4) == 0) {
			if (nh.n_descsz == 0 || nh.n_descsz > SYM_ELF_MAX_BUILD_ID)
				return prof_err_set(err, -PROF_ECORRUPT, -1,
						    "GNU build ID note has invalid size %u",
						    (unsigned)nh.n_descsz);
			if (!sym_elf_hex((const uint8_t *)data->d_buf + desc_off, nh.n_descsz, hex,
					 hexsz))
				return prof_err_set(err, -ERANGE, -1,
						    "build ID buffer too small for %u bytes",
						    (unsigned)nh.n_descsz);
			return 1;
		}
		off = next;
	}
	return 0;
}

/*
 * Find the GNU build ID: PT_NOTE segments first (present even when section
 * headers were stripped), then SHT_NOTE sections. 1 found, 0 absent, <0 error.
 */
static int sym_elf_find_build_id(Elf *elf, char *hex, size_t hexsz, struct prof_err *err)
{
	size_t phnum = 0, shstrndx;
	Elf_Scn *scn = NULL;
	int rc;

	hex[0] = '\0';
	if (elf_getphdrnum(elf, &phnum) != 0)
		return prof_err_set(err, -PROF_ECORRUPT, -1, "bad program header count: %s",
				    sym_elf_errmsg());
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		Elf_Data *data;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "program header %zu unreadable: %s", i,
					    sym_elf_errmsg());
		if (ph.p_type != PT_NOTE || ph.p_filesz == 0)
			continue;
		data = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
					    ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!data)
			return prof_err_set(err, -PROF_ECORRUPT, (int64_t)ph.p_offset,
					    "PT_NOTE segment %zu (offset %" PRIu64 ", size %" PRIu64
					    ") lies outside the file: %s",
					    i, (uint64_t)ph.p_offset, (uint64_t)ph.p_filesz,
					    sym_elf_errmsg());
		rc = sym_elf_scan_notes(data, hex, hexsz, err);
		if (rc)
			return rc;
	}
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh))
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "section header unreadable: %s", sym_elf_errmsg());
		if (sh.sh_type != SHT_NOTE || (sh.sh_flags & SHF_COMPRESSED))
			continue;
		data = elf_getdata(scn, NULL);
		if (!data) {
			const char *name = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;

			return prof_err_set(err, -PROF_ECORRUPT, (int64_t)sh.sh_offset,
					    "note section %s unreadable: %s", name ? name : "?",
					    sym_elf_errmsg());
		}
		rc = sym_elf_scan_notes(data, hex, hexsz, err);
		if (rc)
			return rc;
	}
	return 0;
}

static int sym_elf_read_segments(Elf *elf, struct sym_elf *e, struct prof_err *err)
{
	size_t phnum = 0;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return prof_err_set(err, -PROF_ECORRUPT, -1, "bad program header count: %s",
				    sym_elf_errmsg());
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		struct sym_elf_segment seg;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "program header %zu unreadable: %s", i,
					    sym_elf_errmsg());
		if (ph.p_type != PT_LOAD)
			continue;
		if (ph.p_offset + ph.p_filesz < ph.p_offset ||
		    ph.p_vaddr + ph.p_filesz < ph.p_vaddr)
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "PT_LOAD segment %zu wraps the address space", i);
		if (e->segs.n >= SYM_ELF_MAX_SEGMENTS)
			return prof_err_set(err, -PROF_ETOOBIG, -1, "more than %d PT_LOAD segments",
					    SYM_ELF_MAX_SEGMENTS);
		seg.offset = ph.p_offset;
		seg.filesz = ph.p_filesz;
		seg.vaddr = ph.p_vaddr;
		seg.exec = (ph.p_flags & PF_X) != 0;
		VEC_PUSH(&e->segs, seg);
	}
	return 0;
}

static uint32_t sym_elf_add_name(struct sym_elf *e, const char *name)
{
	size_t n = strnlen(name, SYM_ELF_MAX_NAME);
	uint32_t off;

	PROF_ASSERT(e->names.n + n + 1 < UINT32_MAX);
	off = (uint32_t)e->names.n;
	VEC_RESERVE(&e->names, n + 1);
	memcpy(e->names.v + e->names.n, name, n);
	e->names.v[e->names.n + n] = '\0';
	e->names.n += n + 1;
	return off;
}

/* Read the function symbols of one SHT_SYMTAB/SHT_DYNSYM section. */
static int sym_elf_read_symtab(Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, struct sym_elf *e,
			       struct prof_err *err)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t count;

	if (!data)
		return prof_err_set(err, -PROF_ECORRUPT, (int64_t)sh->sh_offset,
				    "%s unreadable (offset %" PRIu64 ", size %" PRIu64 "): %s",
				    sh->sh_type == SHT_SYMTAB ? ".symtab" : ".dynsym",
				    (uint64_t)sh->sh_offset, (uint64_t)sh->sh_size,
				    sym_elf_errmsg());
	if (entsz == 0 || data->d_type != ELF_T_SYM)
		return prof_err_set(err, -PROF_ECORRUPT, (int64_t)sh->sh_offset,
				    "symbol table has an unexpected data type");
	count = data->d_size / entsz;
	if (count > SYM_ELF_MAX_SYMBOLS)
		return prof_err_set(err, -PROF_ETOOBIG, (int64_t)sh->sh_offset,
				    "symbol table has %zu entries (limit %u)", count,
				    SYM_ELF_MAX_SYMBOLS);
	for (size_t i = 1; i < count; i++) {
		GElf_Sym sym;
		struct sym_elf_symbol s;
		const char *name;
		int type, bind;

		if (!gelf_getsym(data, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || !name[0])
			continue;
		s.start = sym.st_value;
		s.size = sym.st_size;
		s.shndx = sym.st_shndx < SHN_LORESERVE ? sym.st_shndx : 0;
		if (s.start + s.size < s.start)
			s.size = UINT64_MAX - s.start;
		/* Exported names first: libc's __GI_* aliases are hidden globals. */
		if (bind == STB_WEAK)
			s.bind_rank = 1;
		else if (bind != STB_GLOBAL)
			s.bind_rank = 3;
		else /* exported names first: libc's __GI_* aliases are hidden globals */
			s.bind_rank = GELF_ST_VISIBILITY(sym.st_other) == STV_DEFAULT ? 0 : 2;
		s.name = sym_elf_add_name(e, name);
		VEC_PUSH(&e->syms, s);
	}
	return 0;
}

static int sym_elf_cmp(const void *pa, const void *pb)
{
	const struct sym_elf_symbol *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if ((a->size != 0) != (b->size != 0))
		return a->size != 0 ? -1 : 1; /* sized symbols first */
	if (a->bind_rank != b->bind_rank)
		return a->bind_rank < b->bind_rank ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return a->name < b->name ? -1 : a->name > b->name; /* stable: file order */
}

/* End of section @shndx's addresses when it holds @addr (SHF_ALLOC), else 0. */
static uint64_t sym_elf_section_end(Elf *elf, uint32_t shndx, uint64_t addr)
{
	Elf_Scn *scn = shndx ? elf_getscn(elf, shndx) : NULL;
	GElf_Shdr sh;

	if (!scn || !gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC))
		return 0;
	if (addr < sh.sh_addr || addr - sh.sh_addr >= sh.sh_size)
		return 0;
	return sh.sh_addr + sh.sh_size;
}

/* Every symbol's end (after sorting and dropping aliases); see the head comment. */
static void sym_elf_symbol_ends(Elf *elf, struct sym_elf *e)
{
	uint32_t last_shndx = UINT32_MAX;
	uint64_t last_end = 0;

	for (size_t i = 0; i < e->syms.n; i++) {
		struct sym_elf_symbol *s = &e->syms.v[i];
		uint64_t next = i + 1 < e->syms.n ? e->syms.v[i + 1].start : 0;
		uint64_t sect;

		if (s->size) {
			s->end = s->start + s->size;
			continue;
		}
		/* Symbols of one section come in runs: look its bounds up once per run. */
		if (s->shndx != last_shndx || s->start >= last_end) {
			last_shndx = s->shndx;
			last_end = sym_elf_section_end(elf, s->shndx, s->start);
		}
		sect = last_end;
		if (next && sect)
			s->end = PROF_MIN(next, sect);
		else
			s->end = next ? next : sect ? sect : s->start + 1;
	}
}

static int sym_elf_read_symbols(Elf *elf, struct sym_elf *e, struct prof_err *err)
{
	static const unsigned types[] = { SHT_SYMTAB, SHT_DYNSYM };
	size_t w = 0;

	for (size_t t = 0; t < PROF_ARRAY_SIZE(types) && e->syms.n == 0; t++) {
		Elf_Scn *scn = NULL;

		while ((scn = elf_nextscn(elf, scn)) != NULL) {
			GElf_Shdr sh;
			int rc;

			if (!gelf_getshdr(scn, &sh))
				return prof_err_set(err, -PROF_ECORRUPT, -1,
						    "section header unreadable: %s",
						    sym_elf_errmsg());
			if (sh.sh_type != types[t])
				continue;
			rc = sym_elf_read_symtab(elf, scn, &sh, e, err);
			if (rc)
				return rc;
		}
		if (e->syms.n)
			e->info.symbols = types[t] == SHT_SYMTAB ? SYM_SRC_SYMTAB : SYM_SRC_DYNSYM;
	}
	if (e->syms.n == 0)
		return 0;
	qsort(e->syms.v, e->syms.n, sizeof(e->syms.v[0]), sym_elf_cmp);
	/* Keep one symbol per address: the first after sorting is the best alias. */
	for (size_t r = 0; r < e->syms.n; r++) {
		if (w > 0 && e->syms.v[w - 1].start == e->syms.v[r].start)
			continue;
		e->syms.v[w++] = e->syms.v[r];
	}
	e->syms.n = w;
	sym_elf_symbol_ends(elf, e);
	return 0;
}

/* A section's address range and bytes while sym_elf_read_sections runs. */
struct sym_elf_sect {
	uint64_t addr;
	const uint8_t *data;
	size_t n;
};

/*
 * Go 1.18+ moduledata (runtime/symtab.go): pcHeader pointer at 0, six
 * slices, findfunctab, minpc/maxpc, then text at byte 176 (64-bit); gofunc
 * follows the data/bss bounds, end/gcdata/gcbss, types/etypes and rodata:
 * at byte 304, or 320 from Go 1.20 on (covctrs/ecovctrs were added).
 * runtime.firstmoduledata is found as the 8-byte-aligned word equal to the
 * .gopclntab address, confirmed by its text word, in the section the
 * linker put it in: .go.module, a section of its own, in newer linkers
 * (Go 1.26's cmd/link/internal/ld/data.go, SMODULEDATA), .noptrdata in
 * older ones (Go 1.19). The layout is the same in both. gofunc must lie
 * in one of the read-only sections seen (.rodata in Go 1.19) or in
 * .gopclntab itself, where newer linkers write go:func.* (Go 1.26's
 * cmd/link/internal/ld/pcln.go, writeFuncData; data.go puts the symbol
 * in the .gopclntab section).
 */
static bool sym_elf_find_gofunc_in(struct sym_elf *e, uint64_t pcln_addr, size_t at,
				   const struct sym_elf_sect *nd, const struct sym_elf_sect *ro,
				   size_t nro)
{
	if (!nd->data || nd->n < 8)
		return false;
	for (size_t off = 0; off + at + 8 <= nd->n; off += 8) {
		uint64_t w, text, gofunc;

		memcpy(&w, nd->data + off, 8);
		if (w != pcln_addr)
			continue;
		memcpy(&text, nd->data + off + 176, 8);
		memcpy(&gofunc, nd->data + off + at, 8);
		if (text != e->info.text_vaddr)
			continue;
		for (size_t i = 0; i < nro; i++) {
			if (gofunc < ro[i].addr || gofunc - ro[i].addr >= ro[i].n)
				continue;
			e->gofunc_n = ro[i].n - (size_t)(gofunc - ro[i].addr);
			e->gofunc = xmalloc(e->gofunc_n);
			memcpy(e->gofunc, ro[i].data + (gofunc - ro[i].addr), e->gofunc_n);
			return true;
		}
	}
	return false;
}

static void sym_elf_find_gofunc(struct sym_elf *e, uint64_t pcln_addr,
				const struct sym_elf_sect *md, const struct sym_elf_sect *nd,
				const struct sym_elf_sect *ro, size_t nro)
{
	struct sym_elf_sect in[SYM_ELF_MAX_RO + 1];
	uint32_t magic;
	size_t at;

	if (!e->gopclntab || e->gopclntab_n < 8)
		return;
	memcpy(&magic, e->gopclntab, 4);
	if (magic != 0xfffffff0u && magic != 0xfffffff1u)
		return;
	at = magic == 0xfffffff1u ? 320 : 304;
	for (size_t i = 0; i < nro; i++)
		in[i] = ro[i];
	in[nro++] = (struct sym_elf_sect){ pcln_addr, e->gopclntab, e->gopclntab_n };
	if (!sym_elf_find_gofunc_in(e, pcln_addr, at, md, in, nro))
		sym_elf_find_gofunc_in(e, pcln_addr, at, nd, in, nro);
}

/*
 * Facts about the sections profd cares about (elf.h struct sym_elf_info):
 * DWARF, code bits, .gnu_debuglink, .gopclntab (copied), and that every
 * section with file bits lies inside the @size bytes of the file (a cut
 * upload is named as such instead of failing later in libdw).
 */
static int sym_elf_read_sections(Elf *elf, uint64_t size, struct sym_elf *e, struct prof_err *err)
{
	size_t shstrndx, nro = 0;
	Elf_Scn *scn = NULL;
	struct sym_elf_sect gomodule = { 0 }, noptrdata = { 0 }, ro[SYM_ELF_MAX_RO];
	uint64_t pcln_addr = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		shstrndx = 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh))
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "section header unreadable: %s", sym_elf_errmsg());
		name = shstrndx ? elf_strptr(elf, shstrndx, sh.sh_name) : NULL;
		if (!name)
			name = "";
		if (sh.sh_type == SHT_NOBITS || sh.sh_type == SHT_NULL)
			continue;
		if (sh.sh_offset > size || size - sh.sh_offset < sh.sh_size)
			return prof_err_set(err, -PROF_ECORRUPT, (int64_t)sh.sh_offset,
					    "section %s (offset %" PRIu64 ", size %" PRIu64
					    ") extends past the end of the file (%" PRIu64
					    " bytes): truncated?",
					    name[0] ? name : "?", (uint64_t)sh.sh_offset,
					    (uint64_t)sh.sh_size, size);
		if (sh.sh_size == 0)
			continue;
		if ((sh.sh_flags & SHF_EXECINSTR) && sh.sh_type == SHT_PROGBITS)
			e->info.has_text = true;
		if (!strcmp(name, ".text"))
			e->info.text_vaddr = sh.sh_addr;
		if (sh.sh_type == SHT_PROGBITS && sh.sh_addr &&
		    (!strcmp(name, ".noptrdata") || !strcmp(name, ".go.module") ||
		     ((sh.sh_flags & (SHF_WRITE | SHF_EXECINSTR)) == 0 &&
		      nro < PROF_ARRAY_SIZE(ro) &&
		      (!strcmp(name, ".rodata") || !strcmp(name, ".data.rel.ro"))))) {
			Elf_Data *d = elf_getdata(scn, NULL);

			if (d && d->d_buf && d->d_size) {
				struct sym_elf_sect sc = { sh.sh_addr, d->d_buf, d->d_size };

				if (!strcmp(name, ".noptrdata"))
					noptrdata = sc;
				else if (!strcmp(name, ".go.module"))
					gomodule = sc;
				else
					ro[nro++] = sc;
			}
		}
		if (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")) {
			e->info.has_dwarf = true;
		} else if (!strcmp(name, ".gnu_debuglink")) {
			Elf_Data *d = elf_getdata(scn, NULL);
			size_t n;

			if (!d || !d->d_buf || d->d_size < 8)
				continue;
			n = strnlen(d->d_buf, d->d_size);
			/* name, NUL, padding to 4, CRC-32 (gdb manual "Separate Debug Files") */
			if (n == 0 || n >= sizeof(e->debuglink) ||
			    ((n + 4) & ~(size_t)3) + 4 > d->d_size)
				continue;
			memcpy(e->debuglink, d->d_buf, n);
			e->debuglink[n] = '\0';
			memcpy(&e->info.debuglink_crc,
			       (const char *)d->d_buf + ((n + 4) & ~(size_t)3), 4);
			e->info.debuglink = e->debuglink;
		} else if ((!strcmp(name, ".gopclntab") ||
			    !strcmp(name, ".data.rel.ro.gopclntab")) &&
			   !e->gopclntab) {
			/* Go 1.19's linker names it .data.rel.ro.gopclntab in a PIE. */
			Elf_Data *d = elf_getdata(scn, NULL);

			if (!d || !d->d_buf || d->d_size < 8 || d->d_size > SYM_ELF_MAX_PCLNTAB)
				continue;
			e->gopclntab = xmalloc(d->d_size);
			memcpy(e->gopclntab, d->d_buf, d->d_size);
			e->gopclntab_n = d->d_size;
			e->info.has_gopclntab = true;
			pcln_addr = sh.sh_addr;
		}
	}
	sym_elf_find_gofunc(e, pcln_addr, &gomodule, &noptrdata, ro, nro);
	return 0;
}

/*
 * Check the ELF header and that the header tables lie inside the @size
 * bytes of the file. libelf quietly yields no sections at all when the
 * section header table is cut off; we want that named as damage.
 */
static int sym_elf_check_header(Elf *elf, uint64_t size, struct prof_err *err)
{
	GElf_Ehdr eh;
	size_t shnum = 0, phnum = 0;

	/* Callers checked the magic, so anything libelf rejects now is damage. */
	if (elf_kind(elf) != ELF_K_ELF)
		return prof_err_set(err, -PROF_ECORRUPT, 0, "truncated or invalid ELF header: %s",
				    sym_elf_errmsg());
	if (!gelf_getehdr(elf, &eh))
		return prof_err_set(err, -PROF_ECORRUPT, 0, "ELF header unreadable: %s",
				    sym_elf_errmsg());
	if (elf_getphdrnum(elf, &phnum) != 0)
		return prof_err_set(err, -PROF_ECORRUPT, 0, "bad program header count: %s",
				    sym_elf_errmsg());
	/*
	 * Not elf_getshdrnum: it answers 0 when the table is cut off. With
	 * e_shnum 0 and e_shoff set (extended numbering) entry 0 must exist.
	 */
	shnum = eh.e_shnum ? eh.e_shnum : eh.e_shoff ? 1 : 0;
	if (shnum > 0 && (eh.e_shoff > size || (size - eh.e_shoff) / shnum < eh.e_shentsize))
		return prof_err_set(err, -PROF_ECORRUPT, (int64_t)eh.e_shoff,
				    "section header table (offset %" PRIu64
				    ", %zu entries) extends past the end of the file (%" PRIu64
				    " bytes): truncated?",
				    (uint64_t)eh.e_shoff, shnum, size);
	if (phnum > 0 && (eh.e_phoff > size || (size - eh.e_phoff) / phnum < eh.e_phentsize))
		return prof_err_set(err, -PROF_ECORRUPT, (int64_t)eh.e_phoff,
				    "program header table (offset %" PRIu64
				    ", %zu entries) extends past the end of the file (%" PRIu64
				    " bytes): truncated?",
				    (uint64_t)eh.e_phoff, phnum, size);
	return 0;
}

static int sym_elf_index(Elf *elf, uint64_t size, struct sym_elf **out, struct prof_err *err)
{
	struct sym_elf *e;
	int rc;

	rc = sym_elf_check_header(elf, size, err);
	if (rc)
		return rc;
	e = xcalloc(1, sizeof(*e));
	rc = sym_elf_find_build_id(elf, e->build_id, sizeof(e->build_id), err);
	if (rc < 0)
		goto fail;
	rc = sym_elf_read_segments(elf, e, err);
	if (rc)
		goto fail;
	rc = sym_elf_read_sections(elf, size, e, err);
	if (rc)
		goto fail;
	rc = sym_elf_read_symbols(elf, e, err);
	if (rc)
		goto fail;
	*out = e;
	return 0;
fail:
	sym_elf_free(e);
	return rc;
}

int sym_open_regular(const char *path, uint64_t max_size, uint64_t *size, struct prof_err *err)
{
	struct stat st, fst;
	int fd;

	/* Look before opening: a device is never opened (that alone can act), a FIFO never waited on. */
	if (stat(path, &st) != 0)
		return prof_err_set(err, -errno, -1, "%s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return prof_err_set(err, -PROF_EFORMAT, -1, "%s: not a regular file", path);
	if ((uint64_t)st.st_size > max_size)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    "%s: %" PRIu64 " bytes, more than the %" PRIu64 " read", path,
				    (uint64_t)st.st_size, max_size);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return prof_err_set(err, -errno, -1, "%s: %s", path, strerror(errno));
	/* And after: the path may have been replaced in between. */
	if (fstat(fd, &fst) != 0 || !S_ISREG(fst.st_mode) || fst.st_dev != st.st_dev ||
	    fst.st_ino != st.st_ino || (uint64_t)fst.st_size > max_size) {
		close(fd);
		return prof_err_set(err, -PROF_EFORMAT, -1, "%s: not a regular file", path);
	}
	*size = (uint64_t)fst.st_size;
	return fd;
}

/* Common opening: libelf ready, regular file, ELF magic. Returns fd or <0; *@size set. */
static int sym_elf_open_fd(const char *path, uint64_t *size, struct prof_err *err)
{
	unsigned char ident[SELFMAG];
	ssize_t n;
	int fd;

	pthread_once(&sym_elf_once, sym_elf_lib_init);
	if (!sym_elf_lib_ok)
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1, "libelf version mismatch");
	fd = sym_open_regular(path, SYM_ELF_MAX_FILE, size, err);
	if (fd < 0)
		return fd;
	n = pread(fd, ident, sizeof(ident), 0);
	if (n != (ssize_t)sizeof(ident) || memcmp(ident, ELFMAG, SELFMAG) != 0) {
		close(fd);
		return prof_err_set(err, -PROF_EFORMAT, 0,
				    "%s: not an ELF file (no \\177ELF magic)", path);
	}
	return fd;
}

int sym_elf_open(const char *path, struct sym_elf **out, struct prof_err *err)
{
	uint64_t size = 0;
	Elf *elf;
	int fd, rc;

	*out = NULL;
	fd = sym_elf_open_fd(path, &size, err);
	if (fd < 0)
		return fd;
	/* ELF_C_READ reads what is asked for with pread, bounded by the file size. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		rc = prof_err_set(err, -PROF_ECORRUPT, 0, "%s: truncated or invalid ELF header: %s",
				  path, sym_elf_errmsg());
	} else {
		rc = sym_elf_index(elf, size, out, err);
		elf_end(elf);
	}
	close(fd);
	return rc;
}

int sym_elf_open_mem(const void *data, size_t n, struct sym_elf **out, struct prof_err *err)
{
	char *copy;
	Elf *elf;
	int rc;

	*out = NULL;
	pthread_once(&sym_elf_once, sym_elf_lib_init);
	if (!sym_elf_lib_ok)
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1, "libelf version mismatch");
	if (n < SELFMAG || memcmp(data, ELFMAG, SELFMAG) != 0)
		return prof_err_set(err, -PROF_EFORMAT, 0, "not an ELF file (no \\177ELF magic)");
	/* libelf may convert byte order in place and wants aligned data: use a copy. */
	copy = xmalloc(n);
	memcpy(copy, data, n);
	elf = elf_memory(copy, n);
	if (!elf) {
		rc = prof_err_set(err, -PROF_ECORRUPT, 0, "truncated or invalid ELF header: %s",
				  sym_elf_errmsg());
	} else {
		rc = sym_elf_index(elf, n, out, err);
		elf_end(elf);
	}
	free(copy);
	return rc;
}

void sym_elf_free(struct sym_elf *e)
{
	if (!e)
		return;
	VEC_FREE(&e->segs);
	VEC_FREE(&e->syms);
	VEC_FREE(&e->names);
	free(e->gopclntab);
	free(e->gofunc);
	free(e);
}

const char *sym_elf_build_id(const struct sym_elf *e)
{
	return e->build_id;
}

const struct sym_elf_info *sym_elf_info(const struct sym_elf *e)
{
	return &e->info;
}

const uint8_t *sym_elf_gofunc(const struct sym_elf *e, size_t *n)
{
	*n = e->gofunc_n;
	return e->gofunc;
}

const uint8_t *sym_elf_gopclntab(const struct sym_elf *e, size_t *n)
{
	*n = e->gopclntab_n;
	return e->gopclntab;
}

int sym_elf_offset_to_vaddr(const struct sym_elf *e, uint64_t off, uint64_t *vaddr)
{
	/* Executable segments first: a page-rounded mapping may also touch data. */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < e->segs.n; i++) {
			const struct sym_elf_segment *s = &e->segs.v[i];

			if (s->exec != (pass == 0))
				continue;
			if (off >= s->offset && off - s->offset < s->filesz) {
				*vaddr = s->vaddr + (off - s->offset);
				return 0;
			}
		}
	}
	return -ENOENT;
}

bool sym_elf_maps_offsets(const struct sym_elf *e)
{
	for (size_t i = 0; i < e->segs.n; i++)
		if (e->segs.v[i].exec && e->segs.v[i].filesz)
			return true;
	return false;
}

const char *sym_elf_lookup(const struct sym_elf *e, uint64_t vaddr, uint64_t *start)
{
	size_t lo = 0, hi = e->syms.n;

	/* Find the first symbol starting above @vaddr; candidates precede it. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->syms.v[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, walked = 0; i > 0 && walked < SYM_ELF_ALIAS_WALK; i--, walked++) {
		const struct sym_elf_symbol *s = &e->syms.v[i - 1];

		/* A sized symbol its size; a sizeless one to the next symbol or its section's end. */
		if (vaddr < s->end) {
			if (start)
				*start = s->start;
			return e->names.v + s->name;
		}
	}
	return NULL;
}

size_t sym_elf_nsymbols(const struct sym_elf *e)
{
	return e->syms.n;
}

int sym_elf_read_build_id(const char *path, char *hex, size_t hexsz)
{
	struct prof_err err;
	uint64_t size = 0;
	Elf *elf;
	int fd, rc;

	if (hexsz == 0)
		return -EINVAL;
	hex[0] = '\0';
	prof_err_init(&err);
	fd = sym_elf_open_fd(path, &size, &err);
	if (fd < 0)
		return fd;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		rc = -PROF_ECORRUPT;
	} else {
		rc = sym_elf_check_header(elf, size, &err);
		if (!rc) {
			rc = sym_elf_find_build_id(elf, hex, hexsz, &err);
			rc = rc == 1 ? 0 : rc == 0 ? -ENOENT : rc;
		}
		elf_end(elf);
	}
	close(fd);
	if (rc)
		hex[0] = '\0';
	return rc;
}
