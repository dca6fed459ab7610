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
	bool v118;	 /* 1.18+ layout (u32 functab), else 1.16 */
	bool v120;	 /* 1.20+: _func.startLine, 16-byte inlinedCall */
	uint8_t quantum; /* pc delta unit */
	uint8_t ptrsize; /* 4 or 8 */
	uint64_t nfunc;	 /* functab has nfunc + 1 entries */
	uint64_t text;	 /* textStart (1.18+) */
	uint64_t funcname, cu, filetab, pctab, functab; /* offsets into d */
	const uint8_t *fd;				/* go:func.* bytes (funcdata), or NULL */
	size_t fd_n;
};

/* One function's _func fields that lookups need (runtime/runtime2.go _func). */
struct sym_go_func {
	uint64_t entry, fn; /* entry pc; offset of the _func in d */
	uint32_t nameoff, pcfile, pcln, cuoff;
	uint32_t npcdata;
	uint8_t nfuncdata;
};

/* runtime/symtab.go: _PCDATA_InlTreeIndex and _FUNCDATA_InlTree. */
#define SYM_GO_PCDATA_INLTREEINDEX 2
#define SYM_GO_FUNCDATA_INLTREE	   3
#define SYM_GO_INLINE_MAX	   64 /* inlined frames followed for one pc */

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
	g.v120 = magic == SYM_GO_MAGIC_120;
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

/* The function containing @pc into *@f; false when outside or damaged. */
static bool sym_go_find(const struct sym_gopclntab *g, uint64_t pc, struct sym_go_func *f)
{
	uint64_t lo = 0, hi = g->nfunc, fpc, foff, endpc;
	uint32_t w;

	if (g->nfunc == 0 || !sym_go_functab(g, 0, &fpc, &foff) || pc < fpc ||
	    !sym_go_functab(g, g->nfunc, &endpc, &foff) || pc >= endpc)
		return false;
	/* Last entry with entry pc <= @pc. */
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;

		if (!sym_go_functab(g, mid, &fpc, &foff))
			return false;
		if (fpc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	if (!sym_go_functab(g, lo, &f->entry, &foff))
		return false;
	f->fn = g->functab + foff;
	f->npcdata = 0;
	f->nfuncdata = 0;
	if (g->v118) {
		uint64_t nfd = g->v120 ? 43 : 39; /* offset of nfuncdata, the last byte */

		if (!sym_go_u32(g, f->fn + 4, &f->nameoff) ||
		    !sym_go_u32(g, f->fn + 20, &f->pcfile) ||
		    !sym_go_u32(g, f->fn + 24, &f->pcln) ||
		    !sym_go_u32(g, f->fn + 28, &f->npcdata) ||
		    !sym_go_u32(g, f->fn + 32, &f->cuoff))
			return false;
		/* Only inline expansion needs the rest: a cut _func still names. */
		f->nfuncdata = sym_go_u32(g, f->fn + nfd - 3, &w) ? (uint8_t)(w >> 24) : 0;
		return true;
	}
	uint64_t b = f->fn + g->ptrsize;

	return sym_go_u32(g, b, &f->nameoff) && sym_go_u32(g, b + 16, &f->pcfile) &&
	       sym_go_u32(g, b + 20, &f->pcln) && sym_go_u32(g, b + 28, &f->cuoff);
}

/* File and line of @pc in @f into @out (left empty / 0 when unknown). */
static void sym_go_fileline(const struct sym_gopclntab *g, const struct sym_go_func *f, uint64_t pc,
			    struct sym_frame *out)
{
	int32_t fileno, line;
	uint32_t fileoff;

	out->file[0] = '\0';
	out->line = 0;
	if (sym_go_pcvalue(g, f->pcln, f->entry, pc, &line) && line > 0)
		out->line = (uint32_t)line;
	if (sym_go_pcvalue(g, f->pcfile, f->entry, pc, &fileno) && fileno >= 0 &&
	    sym_go_u32(g, g->cu + 4 * ((uint64_t)f->cuoff + (uint64_t)fileno), &fileoff) &&
	    fileoff != UINT32_MAX) {
		const char *file = sym_go_str(g, g->filetab + fileoff);

		if (file)
			snprintf(out->file, sizeof(out->file), "%s", file);
	}
}

/* @name into @out as a pclntab frame; false when the name is missing. */
static bool sym_go_name(const struct sym_gopclntab *g, uint32_t nameoff, struct sym_frame *out)
{
	const char *name = sym_go_str(g, g->funcname + nameoff);

	if (!name || !name[0])
		return false;
	memset(out, 0, sizeof(*out));
	out->source = SYM_SRC_GOPCLNTAB;
	snprintf(out->name, sizeof(out->name), "%s", name);
	return true;
}

/*
 * The inline tree of @f within the funcdata bytes: *@tree its offset in
 * g->fd; false when the function has none (or no funcdata was given).
 */
static bool sym_go_inltree(const struct sym_gopclntab *g, const struct sym_go_func *f,
			   uint64_t *tree)
{
	uint64_t base = f->fn + (g->v120 ? 44 : 40); /* pcdata[npcdata], then funcdata[] */
	uint32_t off;

	if (!g->fd || !g->v118 || f->nfuncdata <= SYM_GO_FUNCDATA_INLTREE ||
	    f->npcdata <= SYM_GO_PCDATA_INLTREEINDEX ||
	    !sym_go_u32(g, base + 4 * ((uint64_t)f->npcdata + SYM_GO_FUNCDATA_INLTREE), &off) ||
	    off == UINT32_MAX || off >= g->fd_n)
		return false;
	*tree = off;
	return true;
}

/* Inline tree index at @pc of @f (-1: not inlined code). */
static int32_t sym_go_inlindex(const struct sym_gopclntab *g, const struct sym_go_func *f,
			       uint64_t pc)
{
	uint64_t base = f->fn + (g->v120 ? 44 : 40);
	uint32_t tab;
	int32_t ix;

	if (!sym_go_u32(g, base + 4 * SYM_GO_PCDATA_INLTREEINDEX, &tab) ||
	    !sym_go_pcvalue(g, tab, f->entry, pc, &ix))
		return -1;
	return ix;
}

static bool sym_go_fd_u32(const struct sym_gopclntab *g, uint64_t off, uint32_t *v)
{
	if (off > g->fd_n || g->fd_n - off < 4)
		return false;
	*v = (uint32_t)g->fd[off] | (uint32_t)g->fd[off + 1] << 8 | (uint32_t)g->fd[off + 2] << 16 |
	     (uint32_t)g->fd[off + 3] << 24;
	return true;
}

int sym_gopclntab_lookup_frames(const struct sym_gopclntab *g, uint64_t pc, struct sym_frame *out,
				size_t max)
{
	struct sym_go_func f;
	uint64_t tree;
	size_t n = 0;

	if (max == 0 || !sym_go_find(g, pc, &f))
		return 0;
	/*
	 * Go's runtime traceback (runtime/traceback.go, Go 1.18-1.21): while
	 * the inline tree index at pc is >= 0, the frame is the inlined
	 * callee named by the tree entry, at pc's own file:line; then pc
	 * moves to entry + parentPc, an instruction of the caller at the
	 * call site. The function itself comes last.
	 */
	if (sym_go_inltree(g, &f, &tree)) {
		uint64_t cur = pc;

		for (int k = 0; k < SYM_GO_INLINE_MAX && n + 1 < max; k++) {
			int32_t ix = sym_go_inlindex(g, &f, cur);
			uint64_t rec;
			uint32_t nameoff, parentpc;

			if (ix < 0)
				break;
			/* inlinedCall: 1.20+ {funcID u8, pad 3, nameOff i32, parentPc i32,
			 * startLine i32}; 1.18-1.19 {parent i16, funcID u8, pad, file i32,
			 * line i32, func_ i32, parentPc i32} */
			rec = tree + (uint64_t)ix * (g->v120 ? 16 : 20);
			if (!sym_go_fd_u32(g, rec + (g->v120 ? 4 : 12), &nameoff) ||
			    !sym_go_fd_u32(g, rec + (g->v120 ? 8 : 16), &parentpc) ||
			    !sym_go_name(g, nameoff, &out[n]))
				break;
			sym_go_fileline(g, &f, cur, &out[n]);
			n++;
			if ((int32_t)parentpc < 0 || f.entry + parentpc == cur)
				break;
			cur = f.entry + parentpc;
		}
		pc = cur;
	}
	if (!sym_go_name(g, f.nameoff, &out[n]))
		return n ? (int)n : 0;
	sym_go_fileline(g, &f, pc, &out[n]);
	return (int)n + 1;
}

int sym_gopclntab_lookup(const struct sym_gopclntab *g, uint64_t pc, struct sym_frame *out)
{
	struct sym_go_func f;

	if (!sym_go_find(g, pc, &f) || !sym_go_name(g, f.nameoff, out))
		return 0;
	sym_go_fileline(g, &f, pc, out);
	return 1;
}

void sym_gopclntab_set_funcdata(struct sym_gopclntab *g, const uint8_t *data, size_t n)
{
	g->fd = data;
	g->fd_n = data ? n : 0;
}
