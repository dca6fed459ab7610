// SPDX-License-Identifier: Apache-2.0
/*
 * interp_ruby.c - CRuby 3.1: detection, layout check and frame naming
 * for the interpreter framework (interp.h); the BPF half is
 * bpf/ruby.bpf.h.
 *
 * Detection: a mapped file named libruby* or ruby* that defines
 * rb_vm_exec, ruby_version and ruby_single_main_ractor (a ruby
 * executable that links libruby has none of them: the library is the
 * one). The version is the ruby_version string ("3.1.2"), read from the
 * process; only 3.1 is supported, other versions are refused with it
 * (-ENOTSUP), never named with wrong offsets. When the main ractor has
 * a running execution context at attach time, its thread's back pointer
 * (rb_thread_t.ec) must lead to it again, or the build is refused.
 *
 * Naming: BPF sends the iseq body's address, the frame's pc and a check
 * value (RB_ISEQ_CHECK of type, iseq_size and first_lineno). The body is
 * read (the check must match), then its label ("spin", "block in main":
 * 3.1 labels carry no class), its path (pathobj: a String, or an Array
 * [path, realpath]) and its line table (insns_info entries and the
 * succinct index table from position to entry, which Debian's build
 * uses: insns_info.positions is NULL there). The line of a frame is that
 * of position (pc - iseq_encoded) / 8 - 1, as Ruby's own calc_pos.
 * Decoded bodies are cached per process by address.
 *
 * The interpreter loop is rb_vm_exec: each vm_exec call is one frame of
 * it, with vm_exec_core (a local symbol, not in .dynsym) leaf side of it,
 * so Ruby frames replace the rb_vm_exec frames. cfunc frames
 * (Integer#times) are not named: their names are IDs, whose table
 * (ruby_global_symbols) Debian's libruby does not export.
 *
 * Facts checked how (Debian ruby3.1 3.1.2, x86-64, no DWARF): every
 * offset here and in bpf/interp.h was read back from a running
 * tests/workloads/hot.rb with process_vm_readv, against known values:
 * labels and paths of its methods, first_lineno of their def lines,
 * insns_info entries and the succinct table against the lines
 * RubyVM::InstructionSequence#disasm prints for the same positions
 * (tests/unit/agent/test_interp_ruby.c has one such table), the frame
 * flags (FINISH on "block in main" and "<main>", the dummy bottom frame),
 * and rb_thread_t's native id against Thread#native_thread_id of two
 * spinning threads. Sources: Ruby 3.1 vm_core.h, iseq.h, iseq.c
 * (succ_index_table), include/ruby/internal/core/rstring.h, rarray.h;
 * the OpenTelemetry eBPF profiler's Ruby support for which structures
 * matter; docs/runtimes.md.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "agent/interp.h"
#include "agent/interp_ruby.h"
#include "agent/bpf/interp.h"

#define RB_CACHE_ENTRIES 1024
#define RB_NAME_MAX	 512 /* bytes of a label or path read */
#define RB_ISEQ_SIZE_MAX (1u << 22)
#define RB_ENTRIES_MAX	 (1u << 20)

/* rb_iseq_constant_body (3.1, x86-64), beyond what BPF reads. */
#define RB_BODY_ENCODED	   8   /* iseq_encoded */
#define RB_BODY_PATHOBJ	   64  /* location.pathobj */
#define RB_BODY_LABEL	   80  /* location.label */
#define RB_BODY_INSNS	   120 /* insns_info.body */
#define RB_BODY_INSNS_SIZE 136 /* insns_info.size (u32) */
#define RB_BODY_INSNS_SUCC 144 /* insns_info.succ_index_table */
#define RB_BODY_HEAD	   152
#define RB_TH_EC	   40 /* rb_thread_t.ec */
#define RB_T_STRING	   0x05
#define RB_T_ARRAY	   0x07
#define RB_FL_USER1	   (1u << 13) /* RSTRING_NOEMBED; RARRAY_EMBED_FLAG */
#define RB_STR_EMBED_SHIFT 14	      /* RSTRING_EMBED_LEN_SHIFT */
#define RB_STR_EMBED_MAX   23	      /* RSTRING_EMBED_LEN_MAX */
#define RB_ARY_EMBED_SHIFT 15	      /* RARRAY_EMBED_LEN_SHIFT */
#define RB_ARY_HEAP_PTR	   32	      /* RArray.as.heap.ptr */
#define RB_ARY_HEAD	   40

#define N		   PROFILE_INTERP_OFF_NONE
static const uint16_t rb31_off[RB_O_MAX] = {
	[RB_O_RACTOR_EC] = 0x208,   [RB_O_EC_VM_STACK] = 0, [RB_O_EC_STACK_SIZE] = 8,
	[RB_O_EC_CFP] = 16,	    [RB_O_EC_THREAD] = 48,  [RB_O_TH_TID] = 88,
	[RB_O_CFP_PC] = 0,	    [RB_O_CFP_ISEQ] = 16,   [RB_O_CFP_EP] = 32,
	[RB_O_CFP_SIZE] = 64,	    [RB_O_ISEQ_BODY] = 16,  [RB_O_BODY_ISEQ_SIZE] = 4,
	[RB_O_BODY_FIRSTLINE] = 88,
};
#undef N

struct rb_iseq {
	uint64_t addr; /* the body; 0 = empty */
	uint32_t check;
	char *label, *file;
	int64_t firstline;
	uint64_t encoded;
	uint8_t *succ, *entries;
	size_t nsucc, nentries;
};

struct rb_priv {
	struct rb_iseq cache[RB_CACHE_ENTRIES];
};

static bool rb_match(const char *base)
{
	return !strncmp(base, "libruby", 7) || !strncmp(base, "ruby", 4);
}

static uint64_t rb_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static uint32_t rb_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

size_t agent_rb_succ_size(uint64_t iseq_size)
{
	if (iseq_size <= AGENT_RB_SUCC_IMM)
		return AGENT_RB_SUCC_HEAD;
	return AGENT_RB_SUCC_HEAD +
	       (size_t)((iseq_size - AGENT_RB_SUCC_IMM + 511) / 512) * AGENT_RB_SUCC_BLOCK;
}

int64_t agent_rb_insn_line(const uint8_t *succ, size_t nsucc, const uint8_t *entries,
			   size_t nentries, uint64_t pos)
{
	uint64_t idx;

	if (!nentries)
		return 0;
	if (nentries == 1)
		return (int32_t)rb_u32(entries);
	if (pos < AGENT_RB_SUCC_IMM) {
		if (nsucc < AGENT_RB_SUCC_HEAD)
			return 0;
		idx = (rb_u64(succ + (pos / 9) * 8) >> ((pos % 9) * 7)) & 0x7f;
	} else {
		uint64_t rel = pos - AGENT_RB_SUCC_IMM, blk = rel / 512, bit = rel % 512;
		size_t off = AGENT_RB_SUCC_HEAD + (size_t)blk * AGENT_RB_SUCC_BLOCK;
		unsigned small = (unsigned)(bit / 64), small_rank = 0;
		uint64_t bits;

		if (blk > nsucc / AGENT_RB_SUCC_BLOCK || off + AGENT_RB_SUCC_BLOCK > nsucc)
			return 0;
		if (small)
			small_rank =
				(unsigned)((rb_u64(succ + off + 8) >> ((small - 1) * 9)) & 0x1ff);
		bits = rb_u64(succ + off + 16 + small * 8) << (63 - bit % 64);
		idx = rb_u32(succ + off) + small_rank + (uint64_t)__builtin_popcountll(bits);
	}
	if (idx < 1 || idx > nentries)
		return 0;
	return (int32_t)rb_u32(entries + (idx - 1) * AGENT_RB_INSN_ENTRY);
}

int agent_rb_str_head(const uint8_t head[AGENT_RB_STR_HEAD], const uint8_t **emb, uint64_t *ptr,
		      uint64_t *len)
{
	uint64_t flags = rb_u64(head);

	*emb = NULL;
	*ptr = 0;
	if ((flags & RB_T_MASK) != RB_T_STRING)
		return -PROF_ECORRUPT;
	if (flags & RB_FL_USER1) {
		*len = rb_u64(head + 16);
		*ptr = rb_u64(head + 24);
		return 0;
	}
	*len = (flags >> RB_STR_EMBED_SHIFT) & 0x1f;
	if (*len > RB_STR_EMBED_MAX)
		return -PROF_ECORRUPT;
	*emb = head + 16;
	return 0;
}

/* A String at @addr (its bytes cut at RB_NAME_MAX) into a new string. */
static int rb_read_str(const struct agent_memreader *mem, uint64_t addr, char **out)
{
	uint8_t head[AGENT_RB_STR_HEAD];
	const uint8_t *emb;
	char buf[RB_NAME_MAX + 1];
	uint64_t ptr, len;
	int rc;

	*out = NULL;
	if (!addr || (addr & 7) || mem->read(mem->ctx, addr, head, sizeof(head)))
		return -EFAULT;
	if ((rc = agent_rb_str_head(head, &emb, &ptr, &len)))
		return rc;
	if (len > (1u << 20))
		return -PROF_ECORRUPT;
	len = PROF_MIN(len, (uint64_t)RB_NAME_MAX);
	if (emb)
		memcpy(buf, emb, len);
	else if (mem->read(mem->ctx, ptr, buf, len))
		return -EFAULT;
	buf[len] = '\0';
	if (strlen(buf) != len)
		return -PROF_ECORRUPT; /* a NUL inside: not a name */
	*out = xstrdup(buf);
	return 0;
}

/* pathobj: a String, or a frozen Array [path, realpath] (the path is used). */
static int rb_read_path(const struct agent_memreader *mem, uint64_t addr, char **out)
{
	uint8_t head[RB_ARY_HEAD];
	uint64_t flags, elem;

	*out = NULL;
	if (!addr || (addr & 7) || mem->read(mem->ctx, addr, head, sizeof(head)))
		return -EFAULT;
	flags = rb_u64(head);
	if ((flags & RB_T_MASK) == RB_T_STRING)
		return rb_read_str(mem, addr, out);
	if ((flags & RB_T_MASK) != RB_T_ARRAY)
		return -PROF_ECORRUPT;
	if (flags & RB_FL_USER1) { /* embedded */
		if (((flags >> RB_ARY_EMBED_SHIFT) & 3) < 1)
			return -PROF_ECORRUPT;
		elem = rb_u64(head + 16);
	} else {
		if (rb_u64(head + 16) < 1 ||
		    mem->read(mem->ctx, rb_u64(head + RB_ARY_HEAP_PTR), &elem, 8))
			return rb_u64(head + 16) < 1 ? -PROF_ECORRUPT : -EFAULT;
	}
	return rb_read_str(mem, elem, out);
}

static int rb_attach(const char *path, uint64_t bias, const struct agent_memreader *mem,
		     struct agent_interp_attach *out)
{
	struct agent_interp_sym syms[] = {
		{ .name = "rb_vm_exec" },
		{ .name = "ruby_version" },
		{ .name = "ruby_single_main_ractor" },
	};
	uint64_t ractor = 0, ec = 0, th = 0, back = 0;
	int rc;

	rc = agent_interp_elf_symbols(path, syms, PROF_ARRAY_SIZE(syms));
	if (rc)
		return rc == -PROF_EFORMAT ? -ENOENT : rc;
	if (!syms[0].found || !syms[0].size || !syms[1].found)
		return -ENOENT;
	rc = agent_mem_read_str(mem, bias + syms[1].value, out->version, sizeof(out->version));
	if (rc == -EFAULT)
		return rc;
	if (strncmp(out->version, "3.1.", 4) || !syms[2].found)
		return -ENOTSUP; /* 3.0 and before: no single main ractor or other layouts */
	if (!mem->read(mem->ctx, bias + syms[2].value, &ractor, 8) && ractor &&
	    !mem->read(mem->ctx, ractor + rb31_off[RB_O_RACTOR_EC], &ec, 8) && ec &&
	    !mem->read(mem->ctx, ec + rb31_off[RB_O_EC_THREAD], &th, 8) && th) {
		if (mem->read(mem->ctx, th + RB_TH_EC, &back, 8))
			return -EFAULT;
		if (back != ec) {
			snprintf(out->version + strlen(out->version),
				 sizeof(out->version) - strlen(out->version), " (other layout)");
			return -ENOTSUP;
		}
	}
	memcpy(out->bpf.off, rb31_off, sizeof(rb31_off));
	for (size_t i = RB_O_MAX; i < PROFILE_INTERP_OFFS; i++)
		out->bpf.off[i] = PROFILE_INTERP_OFF_NONE;
	out->bpf.addr[RB_A_MAIN_RACTOR] = bias + syms[2].value;
	out->loops[0].lo = bias + syms[0].value;
	out->loops[0].hi = out->loops[0].lo + syms[0].size;
	out->nloops = 1;
	out->priv = xcalloc(1, sizeof(struct rb_priv));
	return 0;
}

static void rb_iseq_clear(struct rb_iseq *c)
{
	free(c->label);
	free(c->file);
	free(c->succ);
	free(c->entries);
	memset(c, 0, sizeof(*c));
}

static void rb_free(void *priv)
{
	struct rb_priv *pv = priv;

	if (!pv)
		return;
	for (size_t i = 0; i < RB_CACHE_ENTRIES; i++)
		rb_iseq_clear(&pv->cache[i]);
	free(pv);
}

/* Read body @addr into cache entry @c (empty); 0 or an error (then @c is left for clearing). */
static int rb_iseq_read(struct rb_iseq *c, const struct agent_memreader *mem,
			const struct profile_interp_frame *f)
{
	uint8_t head[RB_BODY_HEAD];
	uint32_t type, size, nentries;
	uint64_t first, insns, succ;
	int rc;

	if (mem->read(mem->ctx, f->addr, head, sizeof(head)))
		return -EFAULT;
	type = rb_u32(head);
	size = rb_u32(head + rb31_off[RB_O_BODY_ISEQ_SIZE]);
	first = rb_u64(head + rb31_off[RB_O_BODY_FIRSTLINE]);
	if (RB_ISEQ_CHECK(type, size, first) != f->check)
		return -ESTALE;
	nentries = rb_u32(head + RB_BODY_INSNS_SIZE);
	insns = rb_u64(head + RB_BODY_INSNS);
	succ = rb_u64(head + RB_BODY_INSNS_SUCC);
	if (!(first & 1) || size > RB_ISEQ_SIZE_MAX || nentries > RB_ENTRIES_MAX ||
	    (nentries && !insns) || (nentries > 1 && !succ))
		return -PROF_ECORRUPT;
	if ((rc = rb_read_str(mem, rb_u64(head + RB_BODY_LABEL), &c->label)) ||
	    (rc = rb_read_path(mem, rb_u64(head + RB_BODY_PATHOBJ), &c->file)))
		return rc;
	c->nentries = nentries;
	c->entries = xmalloc(nentries ? (size_t)nentries * AGENT_RB_INSN_ENTRY : 1);
	if (nentries &&
	    mem->read(mem->ctx, insns, c->entries, (size_t)nentries * AGENT_RB_INSN_ENTRY))
		return -EFAULT;
	if (nentries > 1) {
		c->nsucc = agent_rb_succ_size(size);
		c->succ = xmalloc(c->nsucc);
		if (mem->read(mem->ctx, succ, c->succ, c->nsucc))
			return -EFAULT;
	}
	c->firstline = (int64_t)first >> 1;
	c->encoded = rb_u64(head + RB_BODY_ENCODED);
	c->addr = f->addr;
	c->check = f->check;
	return 0;
}

static int rb_name_frame(void *priv, const struct agent_memreader *mem,
			 const struct profile_interp_frame *f, struct agent_interp_name *out)
{
	struct rb_priv *pv = priv;
	struct rb_iseq *c = &pv->cache[(f->addr >> 4) * 0x9e3779b97f4a7c15ULL >> 54];
	uint64_t pos = 0;

	if (c->addr != f->addr || c->check != f->check) {
		int rc;

		rb_iseq_clear(c);
		rc = rb_iseq_read(c, mem, f);
		if (rc) {
			rb_iseq_clear(c);
			return rc;
		}
	}
	if (f->aux >= c->encoded) {
		pos = (f->aux - c->encoded) / 8;
		if (pos)
			pos--;
	}
	out->function = c->label;
	out->file = c->file;
	out->start_line = c->firstline;
	out->line = agent_rb_insn_line(c->succ, c->nsucc, c->entries, c->nentries, pos);
	return 0;
}

const struct agent_interp_ops agent_interp_ruby = {
	.name = "ruby",
	.runtime = PROFILE_RT_RUBY,
	.match = rb_match,
	.attach = rb_attach,
	.name_frame = rb_name_frame,
	.free = rb_free,
};
