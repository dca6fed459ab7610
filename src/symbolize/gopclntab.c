// SPDX-License-Identifier: Apache-2.0
/*
 * gopclntab.c - Go pclntab reader; see gopclntab.h for the layout.
 *
 * All reads go through sym_go_u32/sym_go_word/sym_go_str, which check the
 * offset against the end of the data and fail softly (a lookup then
 * answers "not found"), so hostile tables cannot read out of bounds.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "symbolize/gopclntab.h"

#define SYM_GO_MAGIC_12	   0xfffffffbu /* Go 1.2-1.15: not handled */
#define SYM_GO_MAGIC_116   0xfffffffau /* Go 1.16-1.17 */
#define SYM_GO_MAGIC_118   0xfffffff0u /* Go 1.18-1.19 */
#define SYM_GO_MAGIC_120   0xfffffff1u /* Go 1.20+: same tables; _func gains startLine */
#define SYM_GO_MAX_PCVALUE (1u << 20)  /* pairs decoded in one pc-value table */

struct sym_gopclntab {
	const uint8_t *d;
	size_t n;
	bool v118;					/* 1.18+ layout (u32 functab), else 1.16 */
	uint8_t quantum;				/* pc delta unit */
	uint8_t ptrsize;				/* 4 or 8 */
	uint64_t nfunc;					/* functab has nfunc + 1 entries */
	uint64_t text;					/* textStart (1.18+) */
	uint64_t funcname, cu, filetab, pctab, functab; /* offsets into d */
};

static bool sym_go_u32(const struct sym_gopclntab *g, uint64_t off, uint32_t *v)
{
	if (off > g->n || g->n - off < 4)
		return false;
	*v = (uint32_t)g->d[off] | (uint32_t)g->d[off + 1] << 8 | (uint32_t)g->d[off + 2] << 16 |
	     (uint32_t)g->d[off + 3] << 24;
	return true;
}

static bool sym_go_word(const struct sym_gopclntab *g, uint64_t off, uint64_t *v)
{
	uint32_t lo, hi = 0;

	if (!sym_go_u32(g, off, &lo))
		return false;
	if (g->ptrsize == 8 && !sym_go_u32(g, off + 4, &hi))
		return false;
	*v = (uint64_t)hi << 32 | lo;
	return true;
}

/* NUL-terminated string at @off, or NULL when it runs off the end. */
static const char *sym_go_str(const struct sym_gopclntab *g, uint64_t off)
{
	if (off >= g->n || !memchr(g->d + off, '\0', g->n - off))
		return NULL;
	return (const char *)g->d + off;
}

static bool sym_go_uvarint(const struct sym_gopclntab *g, uint64_t *off, uint32_t *v)
{
	uint32_t r = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		uint8_t b;

		if (*off >= g->n)
			return false;
		b = g->d[(*off)++];
		r |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = r;
			return true;
		}
	}
	return false;
}

/*
 * Value of pc-value table at pctab + @tab for @pc in the function starting
 * at @entry (Go runtime pcvalue / debug/gosym pcvalue). false when absent.
 */
static bool sym_go_pcvalue(const struct sym_gopclntab *g, uint32_t tab, uint64_t entry, uint64_t pc,
			   int32_t *out)
{
	uint64_t off = g->pctab + tab, cur = entry;
	int32_t val = -1;

	if (tab == 0)
		return false;
	for (uint32_t i = 0; i < SYM_GO_MAX_PCVALUE; i++) {
		uint32_t uv, pcd;

		if (!sym_go_uvarint(g, &off, &uv))
			return false;
		if (uv == 0 && i > 0)
			return false; /* end of table before reaching pc */
		/* zig-zag delta; wraps like Go's int32 arithmetic on hostile input */
		val = (int32_t)((uint32_t)val + ((uv & 1) ? ~(uv >> 1) : (uv >> 1)));
		if (!sym_go_uvarint(g, &off, &pcd))
			return false;
		cur += (uint64_t)pcd * g->quantum;
		if (pc < cur) {
			*out = val;
			return true;
		}
	}
	return false;
}

int sym_gopclntab_parse(const uint8_t *data, size_t n, uint64_t text_vaddr,
			struct sym_gopclntab **out, struct prof_err *err)
{
	struct sym_gopclntab g = { .d = data, .n = n };
	uint64_t hdr[8];
	uint32_t magic;
	size_t nw;

	*out = NULL;
	if (!sym_go_u32(&g, 0, &magic) || n < 16)
		return prof_err_set(err, -PROF_EFORMAT, 0, "not a Go pclntab: too short");
	if (magic != SYM_GO_MAGIC_120 && magic != SYM_GO_MAGIC_118 && magic != SYM_GO_MAGIC_116) {
		if (magic == SYM_GO_MAGIC_12)
			return prof_err_set(
				err, -PROF_EUNSUPPORTED, 0,
				"Go pclntab magic 0x%08x (Go 1.2-1.15) is not supported", magic);
		return prof_err_set(err, -PROF_EFORMAT, 0, "not a Go pclntab (magic 0x%08x)",
				    magic);
	}
	g.v118 = magic != SYM_GO_MAGIC_116;
	g.quantum = data[6];
	g.ptrsize = data[7];
	if (data[4] != 0 || data[5] != 0 || (g.quantum != 1 && g.quantum != 2 && g.quantum != 4) ||
	    (g.ptrsize != 4 && g.ptrsize != 8))
		return prof_err_set(err, -PROF_ECORRUPT, 4,
				    "Go pclntab header: bad quantum %u or pointer size %u",
				    g.quantum, g.ptrsize);
	nw = g.v118 ? 8 : 7;
	for (size_t i = 0; i < nw; i++)
		if (!sym_go_word(&g, 8 + i * g.ptrsize, &hdr[i]))
			return prof_err_set(err, -PROF_ECORRUPT, 8, "Go pclntab header truncated");
	g.nfunc = hdr[0];
	if (g.v118) {
		g.text = hdr[2] ? hdr[2] : text_vaddr;
		g.funcname = hdr[3];
		g.cu = hdr[4];
		g.filetab = hdr[5];
		g.pctab = hdr[6];
		g.functab = hdr[7];
	} else {
		g.funcname = hdr[2];
		g.cu = hdr[3];
		g.filetab = hdr[4];
		g.pctab = hdr[5];
		g.functab = hdr[6];
	}
	/* The functab (nfunc + 1 pairs) must fit. */
	uint64_t entsz = g.v118 ? 8 : 2 * (uint64_t)g.ptrsize;
	if (g.functab > n || g.nfunc >= (n - g.functab) / entsz || g.funcname > n || g.cu > n ||
	    g.filetab > n || g.pctab > n)
		return prof_err_set(err, -PROF_ECORRUPT, 8,
				    "Go pclntab tables lie outside its %zu bytes (nfunc %" PRIu64
				    ", functab at %" PRIu64 ")",
				    n, g.nfunc, g.functab);
	*out = xmalloc(sizeof(**out));
	**out = g;
	return 0;
}

void sym_gopclntab_free(struct sym_gopclntab *g)
{
	free(g);
}

size_t sym_gopclntab_nfuncs(const struct sym_gopclntab *g)
{
	return (size_t)g->nfunc;
}

/* functab entry @i: its pc and _func offset. */
static bool sym_go_functab(const struct sym_gopclntab *g, uint64_t i, uint64_t *pc,
			   uint64_t *funcoff)
{
	if (g->v118) {
		uint32_t e, f;

		if (!sym_go_u32(g, g->functab + i * 8, &e) ||
		    !sym_go_u32(g, g->functab + i * 8 + 4, &f))
			return false;
		*pc = g->text + e;
		*funcoff = f;
		return true;
	}
	return sym_go_word(g, g->functab + i * 2 * g->ptrsize, pc) &&
	       sym_go_word(g, g->functab + i * 2 * g->ptrsize + g->ptrsize, funcoff);
}

int sym_gopclntab_lookup(const struct sym_gopclntab *g, uint64_t pc, struct sym_frame *out)
{
	uint64_t lo = 0, hi = g->nfunc, fpc, foff, endpc, entry, fn;
	uint32_t nameoff, pcfile, pcln, cuoff, fileoff;
	int32_t fileno, line;
	const char *name;

	if (g->nfunc == 0 || !sym_go_functab(g, 0, &fpc, &foff) || pc < fpc ||
	    !sym_go_functab(g, g->nfunc, &endpc, &foff) || pc >= endpc)
		return 0;
	/* Last entry with entry pc <= @pc. */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!sym_go_functab(g, mid, &fpc, &foff))
			return 0;
		if (fpc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (!sym_go_functab(g, lo, &entry, &foff))
		return 0;
	fn = g->functab + foff; /* the _func */
	if (g->v118) {
		if (!sym_go_u32(g, fn + 4, &nameoff) || !sym_go_u32(g, fn + 20, &pcfile) ||
		    !sym_go_u32(g, fn + 24, &pcln) || !sym_go_u32(g, fn + 32, &cuoff))
			return 0;
	} else {
		uint64_t b = fn + g->ptrsize;

		if (!sym_go_u32(g, b, &nameoff) || !sym_go_u32(g, b + 16, &pcfile) ||
		    !sym_go_u32(g, b + 20, &pcln) || !sym_go_u32(g, b + 28, &cuoff))
			return 0;
	}
	name = sym_go_str(g, g->funcname + nameoff);
	if (!name || !name[0])
		return 0;
	memset(out, 0, sizeof(*out));
	out->source = SYM_SRC_GOPCLNTAB;
	snprintf(out->name, sizeof(out->name), "%s", name);
	if (sym_go_pcvalue(g, pcln, entry, pc, &line) && line > 0)
		out->line = (uint32_t)line;
	if (sym_go_pcvalue(g, pcfile, entry, pc, &fileno) && fileno >= 0 &&
	    sym_go_u32(g, g->cu + 4 * ((uint64_t)cuoff + (uint64_t)fileno), &fileoff) &&
	    fileoff != UINT32_MAX) {
		const char *file = sym_go_str(g, g->filetab + fileoff);

		if (file)
			snprintf(out->file, sizeof(out->file), "%s", file);
	}
	return 1;
}
