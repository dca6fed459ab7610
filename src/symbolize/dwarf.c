// SPDX-License-Identifier: Apache-2.0
/*
 * dwarf.c - DWARF address lookups with inline chains; see dwarf.h.
 *
 * Two sorted range tables, each with a running maximum of the range ends
 * (maxhi[i] = max(hi[0..i])) so that overlapping or nested ranges are
 * still found: the search takes the last range starting at or below the
 * address and walks back while maxhi says an earlier range could still
 * reach it. The first hit is the range with the highest start, i.e. the
 * innermost of nested ranges.
 *
 * Untrusted input (an uploaded debug file): libdw bounds-checks its
 * reads; here every DIE walk is iterative with a fixed depth, counts are
 * capped, and ranges that are empty, inverted or at 0 (functions dropped
 * by the linker keep a tombstone address of 0 or -1) are ignored.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "symbolize/demangle.h"
#include "symbolize/dwarf.h"
#include "symbolize/elf.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#define SYM_DWARF_MAX_DEPTH  128	 /* DIE nesting followed */
#define SYM_DWARF_MAX_RANGES (64u << 20) /* ranges indexed per file */

struct sym_dwarf_range {
	uint64_t lo, hi, maxhi;
	uint32_t idx; /* CU index (CU table) or function index (function table) */
};

struct sym_dwarf_func {
	Dwarf_Die die;
};

struct sym_dwarf_cu {
	Dwarf_Die die;
	bool indexed;
	VEC(struct sym_dwarf_range) ranges; /* of funcs, sorted */
	VEC(struct sym_dwarf_func) funcs;
};

struct sym_dwarf {
	int fd;
	Elf *elf;
	Dwarf *dw;
	VEC(struct sym_dwarf_cu) cus;
	VEC(struct sym_dwarf_range) ranges; /* of CUs, sorted */
	size_t nranges_total;
};

static int sym_dwarf_range_cmp(const void *pa, const void *pb)
{
	const struct sym_dwarf_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi > b->hi ? -1 : 1; /* wider first: the narrower one wins the search */
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static void sym_dwarf_ranges_sort(struct sym_dwarf_range *r, size_t n)
{
	uint64_t m = 0;

	if (n > 1)
		qsort(r, n, sizeof(*r), sym_dwarf_range_cmp);
	for (size_t i = 0; i < n; i++) {
		m = PROF_MAX(m, r[i].hi);
		r[i].maxhi = m;
	}
}

/* The innermost range containing @a, or NULL. */
static const struct sym_dwarf_range *sym_dwarf_ranges_find(const struct sym_dwarf_range *r,
							   size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i > 0 && r[i - 1].maxhi > a; i--)
		if (a < r[i - 1].hi)
			return &r[i - 1];
	return NULL;
}

/* Append the code ranges of @die to @v with index @idx; false when capped. */
#define SYM_DWARF_ADD_RANGES(d, die, v, index)                                                \
	do {                                                                                  \
		Dwarf_Addr base_, lo_, hi_;                                                   \
		ptrdiff_t off_ = 0;                                                           \
		while ((off_ = dwarf_ranges((die), off_, &base_, &lo_, &hi_)) > 0) {          \
			if (lo_ == 0 || lo_ >= hi_ || hi_ == (Dwarf_Addr)-1)                  \
				continue;                                                     \
			if ((d)->nranges_total >= SYM_DWARF_MAX_RANGES)                       \
				break;                                                        \
			struct sym_dwarf_range r_ = { .lo = lo_, .hi = hi_, .idx = (index) }; \
			VEC_PUSH((v), r_);                                                    \
			(d)->nranges_total++;                                                 \
		}                                                                             \
	} while (0)

/* Tags whose children may hold function definitions but that have no code themselves. */
static bool sym_dwarf_is_container(int tag)
{
	switch (tag) {
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_interface_type:
		return true;
	default:
		return false;
	}
}

/* Collect the functions of @cu with their ranges (once). */
static void sym_dwarf_index_cu(struct sym_dwarf *d, struct sym_dwarf_cu *cu)
{
	Dwarf_Die stack[SYM_DWARF_MAX_DEPTH];
	size_t sp = 0;

	cu->indexed = true;
	if (dwarf_child(&cu->die, &stack[0]) != 0)
		return;
	sp = 1;
	while (sp > 0) {
		Dwarf_Die *die = &stack[sp - 1], child;
		int tag = dwarf_tag(die);

		if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point) {
			size_t before = cu->ranges.n;

			SYM_DWARF_ADD_RANGES(d, die, &cu->ranges, (uint32_t)cu->funcs.n);
			if (cu->ranges.n > before) {
				struct sym_dwarf_func f = { .die = *die };

				VEC_PUSH(&cu->funcs, f);
			}
		} else if (sym_dwarf_is_container(tag) && sp < SYM_DWARF_MAX_DEPTH &&
			   dwarf_child(die, &child) == 0) {
			stack[sp++] = child;
			continue;
		}
		/* Next sibling, climbing up when a level is done. */
		while (sp > 0 && dwarf_siblingof(&stack[sp - 1], &child) != 0)
			sp--;
		if (sp > 0)
			stack[sp - 1] = child;
	}
	sym_dwarf_ranges_sort(cu->ranges.v, cu->ranges.n);
}

static int sym_dwarf_index(struct sym_dwarf *d)
{
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie;
	Dwarf_Half version;
	uint8_t unit_type;

	while (dwarf_get_units(d->dw, cu, &cu, &version, &unit_type, &cudie, &subdie) == 0) {
		struct sym_dwarf_cu c = { 0 };
		uint32_t idx = (uint32_t)d->cus.n;
		size_t before = d->ranges.n;

		if (unit_type != DW_UT_compile && unit_type != DW_UT_partial)
			continue; /* type units; skeleton units of split DWARF are not supported */
		c.die = cudie;
		VEC_PUSH(&d->cus, c);
		SYM_DWARF_ADD_RANGES(d, &cudie, &d->ranges, idx);
		if (d->ranges.n == before) {
			/* A CU without its own ranges: index its functions and use theirs. */
			struct sym_dwarf_cu *pc = &d->cus.v[idx];

			sym_dwarf_index_cu(d, pc);
			for (size_t i = 0; i < pc->ranges.n; i++) {
				struct sym_dwarf_range r = pc->ranges.v[i];

				r.idx = idx;
				VEC_PUSH(&d->ranges, r);
			}
		}
		if (d->nranges_total >= SYM_DWARF_MAX_RANGES)
			break;
	}
	sym_dwarf_ranges_sort(d->ranges.v, d->ranges.n);
	return 0;
}

/* Whether @elf has non-empty DWARF info bits. */
static bool sym_dwarf_elf_has_info(Elf *elf)
{
	size_t shstrndx;
	Elf_Scn *scn = NULL;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || sh.sh_size == 0)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

int sym_dwarf_open(const char *path, struct sym_dwarf **out, struct prof_err *err)
{
	struct sym_dwarf *d;
	unsigned char ident[SELFMAG];
	uint64_t size;
	int fd;

	*out = NULL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1, "libelf version mismatch");
	fd = sym_open_regular(path, SYM_ELF_MAX_FILE, &size, err);
	if (fd < 0)
		return fd;
	if (pread(fd, ident, sizeof(ident), 0) != (ssize_t)sizeof(ident) ||
	    memcmp(ident, ELFMAG, SELFMAG) != 0) {
		close(fd);
		return prof_err_set(err, -PROF_EFORMAT, 0, "%s: not an ELF file", path);
	}
	d = xcalloc(1, sizeof(*d));
	d->fd = fd;
	d->elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!d->elf || elf_kind(d->elf) != ELF_K_ELF) {
		prof_err_set(err, -PROF_ECORRUPT, 0, "%s: invalid ELF: %s", path,
			     elf_errmsg(-1) ? elf_errmsg(-1) : "?");
		goto fail;
	}
	if (!sym_dwarf_elf_has_info(d->elf)) {
		prof_err_set(err, -PROF_ENOTFOUND, -1, "%s: no DWARF debug info", path);
		goto fail;
	}
	d->dw = dwarf_begin_elf(d->elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		prof_err_set(err, -PROF_ECORRUPT, -1, "%s: unreadable DWARF: %s", path,
			     dwarf_errmsg(-1) ? dwarf_errmsg(-1) : "?");
		goto fail;
	}
	sym_dwarf_index(d);
	*out = d;
	return 0;
fail:
	sym_dwarf_free(d);
	return err ? err->code : -PROF_ECORRUPT;
}

void sym_dwarf_free(struct sym_dwarf *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->cus.n; i++) {
		VEC_FREE(&d->cus.v[i].ranges);
		VEC_FREE(&d->cus.v[i].funcs);
	}
	VEC_FREE(&d->cus);
	VEC_FREE(&d->ranges);
	if (d->dw)
		dwarf_end(d->dw);
	if (d->elf)
		elf_end(d->elf);
	if (d->fd >= 0)
		close(d->fd);
	free(d);
}

size_t sym_dwarf_ncus(const struct sym_dwarf *d)
{
	return d->cus.n;
}

/* A DIE's name, demangled, into @out; false when it has none. */
static bool sym_dwarf_die_name(Dwarf_Die *die, char *out, size_t outsz)
{
	Dwarf_Attribute a;
	const char *n;

	n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a));
	if (!n)
		n = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &a));
	if (!n || !n[0])
		return false;
	sym_demangle(n, out, outsz);
	return true;
}

static void sym_dwarf_set_file(struct sym_frame *f, const char *file)
{
	snprintf(f->file, sizeof(f->file), "%s", file ? file : "");
}

int sym_dwarf_lookup(struct sym_dwarf *d, uint64_t vaddr, struct sym_frame *out, size_t max)
{
	const struct sym_dwarf_range *r;
	struct sym_dwarf_cu *cu;
	Dwarf_Die chain[SYM_DWARF_MAX_DEPTH], cur;
	size_t nchain = 0, nout = 0;

	if (max == 0)
		return 0;
	r = sym_dwarf_ranges_find(d->ranges.v, d->ranges.n, vaddr);
	if (!r)
		return 0;
	cu = &d->cus.v[r->idx];
	if (!cu->indexed)
		sym_dwarf_index_cu(d, cu);
	r = sym_dwarf_ranges_find(cu->ranges.v, cu->ranges.n, vaddr);
	if (!r)
		return 0;

	/* Walk down from the function through the blocks containing @vaddr. */
	chain[nchain++] = cu->funcs.v[r->idx].die;
	cur = chain[0];
	for (int depth = 0; depth < SYM_DWARF_MAX_DEPTH; depth++) {
		Dwarf_Die child;
		bool found = false;

		if (dwarf_child(&cur, &child) != 0)
			break;
		do {
			int tag = dwarf_tag(&child);

			if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_lexical_block &&
			    tag != DW_TAG_try_block && tag != DW_TAG_catch_block &&
			    tag != DW_TAG_with_stmt)
				continue;
			if (dwarf_haspc(&child, vaddr) <= 0)
				continue;
			if (tag == DW_TAG_inlined_subroutine && nchain < SYM_DWARF_MAX_DEPTH)
				chain[nchain++] = child;
			cur = child;
			found = true;
			break;
		} while (dwarf_siblingof(&child, &child) == 0);
		if (!found)
			break;
	}

	/* Innermost first: names from the chain, lines from the line table / call sites. */
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	Dwarf_Line *line = dwarf_getsrc_die(&cu->die, vaddr);

	if (dwarf_getsrcfiles(&cu->die, &files, &nfiles) != 0)
		files = NULL;
	for (size_t k = nchain; k-- > 0 && nout < max;) {
		struct sym_frame *f = &out[nout];

		memset(f, 0, sizeof(*f));
		f->source = SYM_SRC_DWARF;
		if (!sym_dwarf_die_name(&chain[k], f->name, sizeof(f->name)))
			snprintf(f->name, sizeof(f->name), "0x%" PRIx64, vaddr);
		if (k == nchain - 1) {
			int ln = 0;

			if (line) {
				sym_dwarf_set_file(f, dwarf_linesrc(line, NULL, NULL));
				if (dwarf_lineno(line, &ln) == 0 && ln > 0)
					f->line = (uint32_t)ln;
			}
		} else {
			Dwarf_Attribute a;
			Dwarf_Word v;
			Dwarf_Die *callee = &chain[k + 1];

			if (files &&
			    dwarf_formudata(dwarf_attr(callee, DW_AT_call_file, &a), &v) == 0 &&
			    v < nfiles)
				sym_dwarf_set_file(f, dwarf_filesrc(files, v, NULL, NULL));
			if (dwarf_formudata(dwarf_attr(callee, DW_AT_call_line, &a), &v) == 0 &&
			    v <= UINT32_MAX)
				f->line = (uint32_t)v;
		}
		nout++;
	}
	return (int)nout;
}
