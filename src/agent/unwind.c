// SPDX-License-Identifier: Apache-2.0
/*
 * unwind.c - .eh_frame unwinding of user stack copies; see unwind.h.
 *
 * Two caches: open files with their CFI (by device and inode, LRU on a
 * small bound, because each holds a descriptor and libdw's tables), and
 * a direct-mapped memo of "simple" CFI rows by (file, address) so a hot
 * pc costs a hash probe instead of libdw's FDE interpretation. A row is
 * simple when CFA = rsp|rbp + N, the return address is at CFA + N (or
 * undefined) and rbp is unchanged, at CFA + N or undefined: nearly every
 * row compilers emit. Anything else (the PLT's CFA expression, DRAP
 * realignment, signal frames) is evaluated from libdw's rule each time
 * by a small DWARF expression machine.
 *
 * DWARF register numbers, x86-64 psABI: 6 rbp, 7 rsp, 16 return address.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/log.h"
#include "agent/unwind.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <libelf.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <unistd.h>

#define UNWIND_DEFAULT_FILES 256
#define UNWIND_MEMO_SLOTS    16384 /* power of two */
#define UNWIND_REG_RBP	     6
#define UNWIND_REG_RSP	     7
#define UNWIND_REG_RA	     16
#define UNWIND_EXPR_STACK    16

enum unwind_rule { RULE_UNDEF = 0, RULE_SAME, RULE_OFFSET };

/* A memoized simple row (see the file comment). */
struct unwind_row {
	uint32_t file_id; /* 0 = empty slot */
	uint8_t cfa_reg;  /* UNWIND_REG_RSP or UNWIND_REG_RBP */
	uint8_t ra_rule, bp_rule;
	uint8_t signal;
	uint64_t vaddr;
	int64_t cfa_off, ra_off, bp_off;
};

struct unwind_file {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	uint32_t id;
	int fd;
	Elf *elf;
	Dwarf_CFI *eh_cfi;  /* from .eh_frame, owned (dwarf_cfi_end) */
	Dwarf *dw;	    /* for .debug_frame, or NULL */
	Dwarf_CFI *dbg_cfi; /* owned by @dw */
	bool failed;	    /* no CFI at all: every pc takes the frame-pointer path */
	uint64_t used;	    /* LRU tick */
	uint64_t trim_used; /* @used at the last trim */
};

struct agent_unwinder {
	VEC(struct unwind_file *) files;
	size_t max_files;
	uint32_t next_id;
	uint64_t tick;
	struct unwind_row *memo;
	struct unwind_file *vdso; /* this process's vDSO: the same image in every process */
	bool vdso_tried;
	struct agent_unwind_stats st;
	struct agent_jit *jit; /* lent; NULL = no JIT runtimes */
};

/* The registers the walk knows in the current frame. */
struct unwind_regs {
	uint64_t pc, sp, bp;
	bool bp_ok;
};

struct unwind_mem {
	uint64_t base;
	uint32_t len;
	const uint8_t *bytes;
};

const char *agent_unwind_end_name(enum agent_unwind_end end)
{
	static const char *const names[AGENT_UNWIND_END_MAX] = {
		"complete",   "truncated",   "no_cfi",	 "bad_stack",
		"no_mapping", "unsupported", "no_stack",
	};

	return (unsigned)end < AGENT_UNWIND_END_MAX ? names[end] : "unknown";
}

struct agent_unwinder *agent_unwinder_new(size_t max_files)
{
	struct agent_unwinder *u = xcalloc(1, sizeof(*u));

	u->max_files = max_files ? max_files : UNWIND_DEFAULT_FILES;
	u->memo = xcalloc(UNWIND_MEMO_SLOTS, sizeof(*u->memo));
	u->next_id = 1;
	elf_version(EV_CURRENT);
	return u;
}

static void unwind_file_close(struct unwind_file *f)
{
	if (!f)
		return;
	if (f->eh_cfi)
		dwarf_cfi_end(f->eh_cfi);
	if (f->dw)
		dwarf_end(f->dw);
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

void agent_unwinder_free(struct agent_unwinder *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->files.n; i++)
		unwind_file_close(u->files.v[i]);
	VEC_FREE(&u->files);
	unwind_file_close(u->vdso);
	free(u->memo);
	free(u);
}

void agent_unwinder_trim(struct agent_unwinder *u)
{
	for (size_t i = 0; i < u->files.n;) {
		struct unwind_file *f = u->files.v[i];
		size_t size = 0;
		char *base;

		if (f->used == f->trim_used) {
			/* Unused since the last trim: close (its memo rows die with its id). */
			unwind_file_close(f);
			u->files.v[i] = u->files.v[--u->files.n];
			u->st.cfi_evictions++;
			continue;
		}
		f->trim_used = f->used;
		base = f->elf ? elf_rawfile(f->elf, &size) : NULL;
		if (base && size) {
			long pg = sysconf(_SC_PAGESIZE);
			uintptr_t lo = (uintptr_t)base & ~(uintptr_t)(pg - 1);

			madvise((void *)lo, size + ((uintptr_t)base - lo), MADV_DONTNEED);
		}
		i++;
	}
}

void agent_unwinder_set_jit(struct agent_unwinder *u, struct agent_jit *j)
{
	u->jit = j;
}

void agent_unwind_get_stats(const struct agent_unwinder *u, struct agent_unwind_stats *st)
{
	*st = u->st;
}

/* Attach CFI to an opened ELF: .eh_frame first, .debug_frame when there is none. */
static void unwind_file_cfi(struct unwind_file *f)
{
	f->eh_cfi = dwarf_getcfi_elf(f->elf);
	if (!f->eh_cfi) {
		f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
		if (f->dw)
			f->dbg_cfi = dwarf_getcfi(f->dw);
	}
	f->failed = !f->eh_cfi && !f->dbg_cfi;
}

static struct unwind_file *unwind_file_new(struct agent_unwinder *u)
{
	struct unwind_file *f = xcalloc(1, sizeof(*f));

	f->fd = -1;
	f->id = u->next_id++;
	if (!u->next_id)
		u->next_id = 1;
	return f;
}

/* The file of mapping @m of process @pid (opened on first use). */
static struct unwind_file *unwind_file_get(struct agent_unwinder *u, const struct agent_map *m,
					   uint32_t pid)
{
	struct unwind_file *f = NULL;
	char path[4096];
	size_t lru = 0;

	for (size_t i = 0; i < u->files.n; i++) {
		struct unwind_file *g = u->files.v[i];

		if (g->dev == m->dev && g->ino == m->ino && g->size == m->size &&
		    g->mtime_ns == m->mtime_ns) {
			g->used = ++u->tick;
			return g;
		}
		if (g->used < u->files.v[lru]->used)
			lru = i;
	}
	if (u->files.n >= u->max_files) {
		/* Forget the least recently used file; memo rows die with its id. */
		unwind_file_close(u->files.v[lru]);
		u->files.v[lru] = u->files.v[--u->files.n];
		u->st.cfi_evictions++;
	}
	f = unwind_file_new(u);
	f->dev = m->dev;
	f->ino = m->ino;
	f->size = m->size;
	f->mtime_ns = m->mtime_ns;
	f->used = ++u->tick;
	struct stat st;

	f->fd = agent_map_file_path(m, "/proc", (int)pid, path, sizeof(path), &st)
			? open(path, O_RDONLY | O_CLOEXEC)
			: -1;
	if (f->fd >= 0)
		f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	if (f->elf)
		unwind_file_cfi(f);
	else
		f->failed = true;
	if (f->failed)
		u->st.cfi_failures++;
	else
		u->st.cfi_files++;
	VEC_PUSH(&u->files, f);
	return f;
}

/* The vDSO of this process, as an in-memory ELF (same kernel, same image). */
static struct unwind_file *unwind_vdso(struct agent_unwinder *u, uint64_t *load_vaddr)
{
	*load_vaddr = 0;
	if (!u->vdso_tried) {
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
		struct unwind_file *f = unwind_file_new(u);

		u->vdso_tried = true;
		u->vdso = f;
		f->failed = true;
		if (eh && !memcmp(eh->e_ident, ELFMAG, SELFMAG)) {
			const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)eh + eh->e_phoff);
			uint64_t size = 0;

			for (int i = 0; i < eh->e_phnum; i++)
				if (ph[i].p_type == PT_LOAD)
					size = PROF_MAX(size, ph[i].p_offset + ph[i].p_filesz);
			if (size)
				f->elf = elf_memory((char *)eh, size);
			if (f->elf)
				unwind_file_cfi(f);
		}
	}
	if (u->vdso && u->vdso->elf) {
		const Elf64_Ehdr *eh = (const Elf64_Ehdr *)getauxval(AT_SYSINFO_EHDR);
		const Elf64_Phdr *ph = (const Elf64_Phdr *)((const char *)eh + eh->e_phoff);

		for (int i = 0; i < eh->e_phnum; i++)
			if (ph[i].p_type == PT_LOAD && ph[i].p_offset == 0)
				*load_vaddr = ph[i].p_vaddr;
	}
	return u->vdso;
}

/* 8 bytes of the copied stack at @addr; the end reason on failure. */
static int mem_read(const struct unwind_mem *mem, uint64_t addr, uint64_t *out,
		    enum agent_unwind_end *why)
{
	if (addr < mem->base || addr & 7) {
		*why = AGENT_UNWIND_BAD_STACK;
		return -1;
	}
	if (addr - mem->base > (uint64_t)mem->len - 8 || mem->len < 8) {
		*why = AGENT_UNWIND_TRUNCATED; /* deeper than the copy */
		return -1;
	}
	memcpy(out, mem->bytes + (addr - mem->base), 8);
	return 0;
}

static bool reg_value(const struct unwind_regs *r, unsigned reg, uint64_t *v)
{
	switch (reg) {
	case UNWIND_REG_RSP:
		*v = r->sp;
		return true;
	case UNWIND_REG_RBP:
		*v = r->bp;
		return r->bp_ok;
	case UNWIND_REG_RA:
		*v = r->pc;
		return true;
	default:
		return false;
	}
}

/*
 * Evaluate a DWARF expression (the CFI subset compilers and glibc emit).
 * *@is_value is set when it ends in DW_OP_stack_value. 0 or -1 with @why.
 */
static int eval_expr(const Dwarf_Op *ops, size_t nops, const struct unwind_regs *r, uint64_t cfa,
		     const struct unwind_mem *mem, uint64_t *out, bool *is_value,
		     enum agent_unwind_end *why)
{
	uint64_t st[UNWIND_EXPR_STACK], a, b;
	size_t sp = 0;

	*is_value = false;
#define PUSH(x)                              \
	do {                                 \
		if (sp >= UNWIND_EXPR_STACK) \
			goto unsupported;    \
		st[sp++] = (x);              \
	} while (0)
#define POP(x)                            \
	do {                              \
		if (!sp)                  \
			goto unsupported; \
		(x) = st[--sp];           \
	} while (0)
	for (size_t i = 0; i < nops; i++) {
		const Dwarf_Op *op = &ops[i];
		uint8_t at = op->atom;

		if (at >= DW_OP_breg0 && at <= DW_OP_breg31) {
			if (!reg_value(r, at - DW_OP_breg0, &a))
				goto unsupported;
			PUSH(a + op->number);
		} else if (at >= DW_OP_lit0 && at <= DW_OP_lit31) {
			PUSH((uint64_t)(at - DW_OP_lit0));
		} else if (at >= DW_OP_reg0 && at <= DW_OP_reg31) {
			if (!reg_value(r, at - DW_OP_reg0, &a))
				goto unsupported;
			PUSH(a);
			*is_value = true;
		} else {
			switch (at) {
			case DW_OP_bregx:
				if (!reg_value(r, (unsigned)op->number, &a))
					goto unsupported;
				PUSH(a + op->number2);
				break;
			case DW_OP_call_frame_cfa:
				PUSH(cfa);
				break;
			case DW_OP_const1u:
			case DW_OP_const1s:
			case DW_OP_const2u:
			case DW_OP_const2s:
			case DW_OP_const4u:
			case DW_OP_const4s:
			case DW_OP_const8u:
			case DW_OP_const8s:
			case DW_OP_constu:
			case DW_OP_consts:
				PUSH(op->number);
				break;
			case DW_OP_plus_uconst:
				POP(a);
				PUSH(a + op->number);
				break;
			case DW_OP_deref:
				POP(a);
				if (mem_read(mem, a, &b, why))
					return -1;
				PUSH(b);
				break;
			case DW_OP_dup:
				POP(a);
				PUSH(a);
				PUSH(a);
				break;
			case DW_OP_plus:
			case DW_OP_minus:
			case DW_OP_and:
			case DW_OP_or:
			case DW_OP_xor:
			case DW_OP_shl:
			case DW_OP_shr:
			case DW_OP_ge:
			case DW_OP_gt:
			case DW_OP_le:
			case DW_OP_lt:
			case DW_OP_eq:
			case DW_OP_ne:
				POP(b);
				POP(a);
				switch (at) {
				case DW_OP_plus:
					a = a + b;
					break;
				case DW_OP_minus:
					a = a - b;
					break;
				case DW_OP_and:
					a &= b;
					break;
				case DW_OP_or:
					a |= b;
					break;
				case DW_OP_xor:
					a ^= b;
					break;
				case DW_OP_shl:
					a = b < 64 ? a << b : 0;
					break;
				case DW_OP_shr:
					a = b < 64 ? a >> b : 0;
					break;
				case DW_OP_ge:
					a = (int64_t)a >= (int64_t)b;
					break;
				case DW_OP_gt:
					a = (int64_t)a > (int64_t)b;
					break;
				case DW_OP_le:
					a = (int64_t)a <= (int64_t)b;
					break;
				case DW_OP_lt:
					a = (int64_t)a < (int64_t)b;
					break;
				case DW_OP_eq:
					a = a == b;
					break;
				default:
					a = a != b;
					break;
				}
				PUSH(a);
				break;
			case DW_OP_stack_value:
				*is_value = true;
				break;
			default:
				goto unsupported;
			}
		}
	}
#undef PUSH
#undef POP
	if (!sp)
		goto unsupported;
	*out = st[sp - 1];
	return 0;
unsupported:
	*why = AGENT_UNWIND_UNSUPPORTED;
	return -1;
}

/* The simple-row form of register rule (@ops, @nops), if it has one. */
static bool simple_reg_rule(const Dwarf_Op *ops, size_t nops, const Dwarf_Op *ops_mem,
			    uint8_t *rule, int64_t *off)
{
	if (nops == 0) {
		*rule = ops == NULL ? RULE_SAME : RULE_UNDEF;
		(void)ops_mem;
		*off = 0;
		return true;
	}
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return false;
	if (nops == 1) {
		*rule = RULE_OFFSET;
		*off = 0;
		return true;
	}
	if (nops == 2 && ops[1].atom == DW_OP_plus_uconst) {
		*rule = RULE_OFFSET;
		*off = (int64_t)ops[1].number;
		return true;
	}
	return false;
}

/* One register's value in the caller per rule (@ops, @nops). */
static int eval_reg_rule(const Dwarf_Op *ops, size_t nops, const struct unwind_regs *r,
			 uint64_t cfa, uint64_t same, const struct unwind_mem *mem, uint64_t *out,
			 int *state, enum agent_unwind_end *why)
{
	bool is_value;
	uint64_t v;

	if (nops == 0) {
		*state = ops == NULL ? RULE_SAME : RULE_UNDEF;
		*out = same;
		return 0;
	}
	*state = RULE_OFFSET;
	if (eval_expr(ops, nops, r, cfa, mem, &v, &is_value, why))
		return -1;
	if (is_value) {
		*out = v;
		return 0;
	}
	return mem_read(mem, v, out, why);
}

/*
 * One CFI step from @r (the frame at vaddr @vaddr of @f) to its caller
 * in @nr. Returns 1 when @r is the outermost frame, 0 after a step, -1
 * with @why, -2 when @f has no row for @vaddr (try frame pointers).
 */
static int cfi_step(struct agent_unwinder *u, struct unwind_file *f, uint64_t vaddr,
		    const struct unwind_regs *r, const struct unwind_mem *mem,
		    struct unwind_regs *nr, bool *signal, enum agent_unwind_end *why)
{
	size_t slot =
		(size_t)((vaddr * 0x9e3779b97f4a7c15ULL ^ f->id * 0xbf58476d1ce4e5b9ULL) >> 32) &
		(UNWIND_MEMO_SLOTS - 1);
	struct unwind_row *row = &u->memo[slot];
	Dwarf_Frame *fr = NULL;
	Dwarf_Op ops_mem[3], *ops;
	size_t nops;
	uint64_t cfa, v;
	bool is_value, sig = false;
	int state, rc = -1;

	if (row->file_id == f->id && row->vaddr == vaddr) {
		if (!reg_value(r, row->cfa_reg, &cfa)) {
			*why = AGENT_UNWIND_UNSUPPORTED;
			return -1;
		}
		cfa += (uint64_t)row->cfa_off;
		*signal = row->signal;
		if (row->ra_rule == RULE_UNDEF)
			return 1;
		if (mem_read(mem, cfa + (uint64_t)row->ra_off, &nr->pc, why))
			return -1;
		nr->sp = cfa;
		nr->bp = r->bp;
		nr->bp_ok = r->bp_ok;
		if (row->bp_rule == RULE_OFFSET) {
			nr->bp_ok = mem_read(mem, cfa + (uint64_t)row->bp_off, &nr->bp, why) == 0;
		} else if (row->bp_rule == RULE_UNDEF) {
			nr->bp_ok = false;
		}
		return 0;
	}

	if (!((f->eh_cfi && dwarf_cfi_addrframe(f->eh_cfi, vaddr, &fr) == 0) ||
	      (f->dbg_cfi && dwarf_cfi_addrframe(f->dbg_cfi, vaddr, &fr) == 0)))
		return -2;
	dwarf_frame_info(fr, NULL, NULL, &sig);
	*signal = sig;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops == 0 ||
	    eval_expr(ops, nops, r, 0, mem, &cfa, &is_value, why)) {
		if (nops == 0)
			*why = AGENT_UNWIND_UNSUPPORTED;
		goto out;
	}
	{
		struct unwind_row nrow = { 0 };
		bool simple = nops == 1 &&
			      (ops[0].atom == DW_OP_breg0 + UNWIND_REG_RSP ||
			       ops[0].atom == DW_OP_breg0 + UNWIND_REG_RBP ||
			       (ops[0].atom == DW_OP_bregx && (ops[0].number == UNWIND_REG_RSP ||
							       ops[0].number == UNWIND_REG_RBP)));

		if (simple) {
			nrow.cfa_reg = ops[0].atom == DW_OP_bregx ? (uint8_t)ops[0].number
								  : ops[0].atom - DW_OP_breg0;
			nrow.cfa_off = (int64_t)(ops[0].atom == DW_OP_bregx ? ops[0].number2
									    : ops[0].number);
		}
		/* Return address. */
		if (dwarf_frame_register(fr, UNWIND_REG_RA, ops_mem, &ops, &nops) != 0) {
			*why = AGENT_UNWIND_UNSUPPORTED;
			goto out;
		}
		simple = simple && simple_reg_rule(ops, nops, ops_mem, &nrow.ra_rule, &nrow.ra_off);
		if (eval_reg_rule(ops, nops, r, cfa, r->pc, mem, &v, &state, why))
			goto out;
		if (state != RULE_OFFSET) {
			/* "undefined" return address: the outermost frame (_start, clone). */
			if (simple && nrow.ra_rule == RULE_UNDEF) {
				nrow.file_id = f->id;
				nrow.vaddr = vaddr;
				nrow.signal = sig;
				*row = nrow;
			}
			rc = state == RULE_UNDEF ? 1 : -1;
			if (rc < 0)
				*why = AGENT_UNWIND_BAD_STACK;
			goto out;
		}
		nr->pc = v;
		nr->sp = cfa;
		/* Frame pointer. */
		if (dwarf_frame_register(fr, UNWIND_REG_RBP, ops_mem, &ops, &nops) != 0) {
			*why = AGENT_UNWIND_UNSUPPORTED;
			goto out;
		}
		simple = simple && simple_reg_rule(ops, nops, ops_mem, &nrow.bp_rule, &nrow.bp_off);
		nr->bp_ok = r->bp_ok;
		nr->bp = r->bp;
		{
			enum agent_unwind_end bwhy;

			if (eval_reg_rule(ops, nops, r, cfa, r->bp, mem, &v, &state, &bwhy) == 0) {
				if (state == RULE_UNDEF)
					nr->bp_ok = false;
				else if (state == RULE_OFFSET)
					nr->bp = v, nr->bp_ok = true;
			} else {
				nr->bp_ok = false;
			}
		}
		if (simple) {
			nrow.file_id = f->id;
			nrow.vaddr = vaddr;
			nrow.signal = sig;
			*row = nrow;
		}
		rc = 0;
	}
out:
	free(fr);
	return rc;
}

/* One frame-pointer step: code without CFI (JIT) that keeps rbp as a frame pointer. */
static int fp_step(const struct unwind_regs *r, const struct unwind_mem *mem,
		   struct unwind_regs *nr, enum agent_unwind_end *why)
{
	uint64_t ra, bp;

	if (!r->bp_ok || r->bp < r->sp || (r->bp & 7)) {
		*why = AGENT_UNWIND_NO_CFI;
		return -1;
	}
	if (mem_read(mem, r->bp + 8, &ra, why) || mem_read(mem, r->bp, &bp, why))
		return -1;
	nr->pc = ra;
	nr->sp = r->bp + 16;
	nr->bp = bp;
	nr->bp_ok = true;
	return 0;
}

int agent_unwind_user(struct agent_unwinder *u, struct agent_procs *ps, struct agent_proc *pr,
		      const struct profile_event_ext *x, int64_t now_ns, uint64_t *pcs,
		      struct agent_jit_frame *jf, int max, enum agent_unwind_end *end)
{
	struct unwind_mem mem = { x->sp, PROF_MIN(x->stack_len, (uint32_t)PROFILE_STACK_COPY),
				  x->stack };
	struct unwind_regs r = { x->ip, x->sp, x->bp, true }, nr;
	enum agent_unwind_end why = AGENT_UNWIND_COMPLETE;
	bool signal = false; /* the previous frame was a signal frame: pc is exact */
	bool jit = agent_jit_has(u->jit, pr->pid);
	int n = 0;

	if (!x->ip || !x->sp || max <= 0) {
		*end = AGENT_UNWIND_NO_STACK;
		u->st.ends[AGENT_UNWIND_NO_STACK]++;
		return 0;
	}
	u->st.stacks++;
	if (jf)
		memset(jf, 0, (size_t)max * sizeof(*jf));
	pcs[n++] = r.pc;
	for (;;) {
		uint64_t lookup = (n == 1 || signal) ? r.pc : r.pc - 1, vaddr = 0;
		struct agent_map *m = agent_procs_find_map(ps, pr, lookup, now_ns);
		struct unwind_file *f = NULL;
		int rc = -2;

		if (!m) {
			why = AGENT_UNWIND_NO_MAPPING;
			if (n > 1)
				n--; /* not a return address after all */
			break;
		}
		if (jit) {
			/* A JIT runtime's code (no CFI; HotSpot's keeps no frame pointer). */
			struct agent_jit_stack stk = { mem.base, mem.len, mem.bytes, x->r13 };
			struct agent_jit_regs jr = { r.pc, r.sp, r.bp, r.bp_ok }, jc;
			struct agent_jit_frame fr;

			rc = agent_jit_step(u->jit, pr, m, &stk, &jr, n == 1 || signal, &jc, &fr);
			if (rc == 0) {
				nr.pc = jc.pc;
				nr.sp = jc.sp;
				nr.bp = jc.bp;
				nr.bp_ok = jc.bp_ok;
				if (jf)
					jf[n - 1] = fr;
				u->st.jit_steps++;
				signal = false;
				goto stepped;
			}
			rc = -2; /* not stepped: CFI or the frame pointer, as before */
		}
		if (m->kind == AGENT_MAP_FILE && m->normalized) {
			f = unwind_file_get(u, m, pr->pid);
			vaddr = agent_map_vaddr(m, lookup);
		} else if (m->kind == AGENT_MAP_VDSO) {
			uint64_t load;

			f = unwind_vdso(u, &load);
			vaddr = lookup - m->start + load;
		}
		if (f && !f->failed)
			rc = cfi_step(u, f, vaddr, &r, &mem, &nr, &signal, &why);
		else
			rc = -2;
		if (rc == -2) {
			/* No CFI here: one frame-pointer step. */
			signal = false;
			if (r.bp_ok && r.bp == 0 && n > 1) {
				/* psABI: the outermost frame has rbp = 0 (ld.so's _start has no CFI). */
				why = AGENT_UNWIND_COMPLETE;
				break;
			}
			rc = fp_step(&r, &mem, &nr, &why);
			if (rc == 0)
				u->st.fp_steps++;
		}
		if (rc == 1) {
			why = AGENT_UNWIND_COMPLETE;
			break;
		}
		if (rc < 0)
			break;
stepped:
		if (nr.pc == 0) {
			why = AGENT_UNWIND_COMPLETE; /* a zero return address ends some stacks */
			break;
		}
		if (nr.sp <= r.sp && !signal) {
			why = AGENT_UNWIND_BAD_STACK; /* no progress: a loop */
			break;
		}
		if (n >= max) {
			why = AGENT_UNWIND_TRUNCATED;
			break;
		}
		pcs[n++] = nr.pc;
		r = nr;
	}
	u->st.frames += (uint64_t)n;
	u->st.ends[why]++;
	*end = why;
	return n;
}
