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
 * Naming: BPF sends the iseq body's address, the frame's pc, a check
 * value (RB_ISEQ_CHECK of type, iseq_size and first_lineno) and the
 * frame's method entry (obj2). The body is read (the check must match),
 * then its label and base label, its path (pathobj: a String, or an
 * Array [path, realpath]), its local_iseq and its line table
 * (insns_info entries and the succinct index table from position to
 * entry, which Debian's build uses: insns_info.positions is NULL there).
 * The line of a frame is that of position (pc - iseq_encoded) / 8 - 1,
 * as Ruby's own calc_pos. Decoded bodies are cached per process by
 * address, with the full label made for the last method entry seen.
 *
 * Full labels, as rb_profile_frame_full_label: "block in " (the label
 * less its base label) + the class of me->defined_class + "#" (or "."
 * for a singleton class: its __attached__ ivar) + the base label of the
 * method's iseq (me->def->body.iseq.iseqptr, which must be the body's
 * local_iseq, or the bare label is kept). A class's name is its
 * __classpath__ ivar in RCLASS_IV_TBL (an st_table, scanned). cfunc
 * frames (Integer#times) come as their method entry: class + "#" + the
 * name of def->original_id, through ruby_global_symbols, found (not
 * exported) from rb_id2str's code and used only after it named five
 * IDs whose values 3.1 fixes right (rb31_ids); without it nothing of
 * this is done: bare labels, cfunc frames not sent (off[RB_O_ME_OWNER]
 * is NONE).
 *
 * The interpreter loop is rb_vm_exec: each vm_exec call is one frame of
 * it, with vm_exec_core (a local symbol, not in .dynsym) leaf side of
 * it, found as the largest callee of rb_vm_exec by .eh_frame_hdr (at
 * least 8 KiB) and given as an inner range: Ruby frames replace the
 * rb_vm_exec and vm_exec_core frames of one activation.
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
 * spinning threads. Method entries (flags, defined_class +8, def +16,
 * called_id +24, owner +32), definitions (type in the low 4 bits, iseqptr
 * +8, original_id +32), RClass.ptr +24 -> iv_tbl +8 and st_table entries,
 * base_label +72 and local_iseq +176 were read from a process running
 * Outer#run (blocks two levels deep), Mod#mixed (an iclass), Outer.cm (a
 * singleton), Integer#times, Array#each and Kernel#loop; the ID values
 * of rb31_ids with rb_intern through Fiddle, in two processes; the
 * symbol table at 0x3af1c0 from the disassembly of get_id_serial_entry
 * (rb_id2str jumps to it); vm_exec_core at 0x24ebd0 with eu-stack on a
 * spinning process (below rb_vm_exec, returning after that call). Sources: Ruby 3.1 vm_core.h, iseq.h, iseq.c
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
#define RB_BODY_BASE_LABEL 72  /* location.base_label */
#define RB_BODY_LOCAL_ISEQ 176 /* local_iseq: the method's iseq for its blocks, else itself */
#define RB_BODY_HEAD	   184
#define RB_ISEQ_METHOD	   1  /* ISEQ_TYPE_METHOD */
#define RB_TH_EC	   40 /* rb_thread_t.ec */
#define RB_T_STRING	   0x05
#define RB_T_ARRAY	   0x07
#define RB_FL_USER1	   (1u << 13) /* RSTRING_NOEMBED; RARRAY_EMBED_FLAG */
#define RB_STR_EMBED_SHIFT 14	      /* RSTRING_EMBED_LEN_SHIFT */
#define RB_STR_EMBED_MAX   23	      /* RSTRING_EMBED_LEN_MAX */
#define RB_ARY_EMBED_SHIFT 15	      /* RARRAY_EMBED_LEN_SHIFT */
#define RB_ARY_HEAP_PTR	   32	      /* RArray.as.heap.ptr */
#define RB_ARY_HEAD	   40
#define RB_T_CLASS	   0x02
#define RB_T_MODULE	   0x03
#define RB_T_ICLASS	   0x1c
#define RB_FL_SINGLETON	   (1u << 12) /* FL_USER0 on a class */
#define RB_CLASS_KLASS	   8	      /* RBasic.klass: an iclass's module */
#define RB_CLASS_EXT	   24	      /* RClass.ptr: rb_classext_t */
#define RB_EXT_IV_TBL	   8	      /* rb_classext_t.iv_tbl (st_table *) */
#define RB_ST_MAX	   256	      /* st_table entries scanned for an ivar */
#define RB_ME_HEAD	   40	      /* rb_method_entry_t: flags, defined_class @8, ... */
#define RB_ME_DCLASS	   8
#define RB_DEF_HEAD	   40	/* rb_method_definition_t: type (low 4 bits of u32 @0), ... */
#define RB_DEF_ISEQPTR	   8	/* body.iseq.iseqptr */
#define RB_DEF_ORIG_ID	   32	/* original_id */
#define RB_METHOD_ISEQ	   0	/* VM_METHOD_TYPE_ISEQ */
#define RB_ID_LAST_OP	   0xa9 /* tLAST_OP_ID: IDs up to it are their own serial */
#define RB_ID_SCOPE_SHIFT  4
#define RB_ID_ENTRY_UNIT   512	 /* ids[] entries per sub-array, 2 VALUEs each (string first) */
#define RB_GSYMS_IDS	   16	 /* rb_symbols_t.ids; last_id (u32) @0 */
#define RB_ID_CLASSPATH	   0xf01 /* __classpath__ (serial 240) */
#define RB_ID_ATTACHED	   0xc11 /* __attached__ (serial 193) */

#define N		   PROFILE_INTERP_OFF_NONE
static const uint16_t rb31_off[RB_O_MAX] = {
	[RB_O_RACTOR_EC] = 0x208,   [RB_O_EC_VM_STACK] = 0, [RB_O_EC_STACK_SIZE] = 8,
	[RB_O_EC_CFP] = 16,	    [RB_O_EC_THREAD] = 48,  [RB_O_TH_TID] = 88,
	[RB_O_CFP_PC] = 0,	    [RB_O_CFP_ISEQ] = 16,   [RB_O_CFP_EP] = 32,
	[RB_O_CFP_SIZE] = 64,	    [RB_O_ISEQ_BODY] = 16,  [RB_O_BODY_ISEQ_SIZE] = 4,
	[RB_O_BODY_FIRSTLINE] = 88, [RB_O_ME_DEF] = 16,	    [RB_O_ME_OWNER] = 32,
};

/* IDs whose serials 3.1 fixes (defs/id.def, the operators), and their names: the table's check. */
static const struct {
	uint64_t id;
	const char *name;
} rb31_ids[] = {
	{ 0x2b, "+" },
	{ 0x2a, "*" },
	{ 0xbc1, "each" },
	{ RB_ID_ATTACHED, "__attached__" },
	{ RB_ID_CLASSPATH, "__classpath__" },
};
#undef N

struct rb_iseq {
	uint64_t addr; /* the body, or a cfunc's method entry (@cfunc); 0 = empty */
	uint32_t check;
	bool cfunc;
	char *label, *file, *base;
	uint64_t local_iseq;
	uint64_t me; /* the method entry @full was made for (0: none yet) */
	char *full;  /* "block in Outer#run"; NULL: the label alone */
	int64_t firstline;
	uint64_t encoded;
	uint8_t *succ, *entries;
	size_t nsucc, nentries;
};

struct rb_priv {
	struct rb_iseq cache[RB_CACHE_ENTRIES];
	uint64_t gsyms; /* &ruby_global_symbols, checked; 0: no class or cfunc names */
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

int agent_rb_st_find(const uint8_t *ents, size_t n, uint64_t key, uint64_t *val)
{
	for (size_t i = 0; i < n; i++) {
		const uint8_t *e = ents + i * AGENT_RB_ST_ENTRY;

		if (rb_u64(e) != ~0ULL && rb_u64(e + 8) == key) {
			*val = rb_u64(e + 16);
			return 0;
		}
	}
	return -ENOENT;
}

static uint64_t rb_rip_target(const uint8_t *disp, uint64_t next)
{
	return next + (uint64_t)(int64_t)(int32_t)rb_u32(disp);
}

size_t agent_rb_rel32_targets(const uint8_t *code, size_t len, uint64_t addr, uint8_t op,
			      uint64_t *out, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i + 5 <= len && n < max; i++) {
		uint64_t t;
		bool seen = false;

		if (code[i] != op)
			continue;
		t = rb_rip_target(code + i + 1, addr + i + 5);
		for (size_t k = 0; k < n; k++)
			seen |= out[k] == t;
		if (!seen)
			out[n++] = t;
	}
	return n;
}

size_t agent_rb_gsyms_candidates(const uint8_t *code, size_t len, uint64_t addr, uint64_t *out,
				 size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i + 6 <= len && n < max; i++) {
		size_t at = i + (code[i] >= 0x40 && code[i] <= 0x47), end;
		uint64_t t;

		if (at + 6 > len || (code[at] != 0x39 && code[at] != 0x3b && code[at] != 0x8b) ||
		    (code[at + 1] & 0xc7) != 0x05)
			continue;
		end = at + 6;
		t = rb_rip_target(code + at + 2, addr + end);
		for (size_t j = end; j <= end + 16 && j + 7 <= len; j++) {
			if ((code[j] & 0xf8) != 0x48 || code[j + 1] != 0x8b ||
			    (code[j + 2] & 0xc7) != 0x05 ||
			    rb_rip_target(code + j + 3, addr + j + 7) != t + RB_GSYMS_IDS)
				continue;
			out[n++] = t;
			break;
		}
	}
	return n;
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

static int rb_read_val(const struct agent_memreader *mem, uint64_t addr, uint64_t *v)
{
	return mem->read(mem->ctx, addr, v, 8);
}

/* Element @i of Array @ary into *@v: 0, -EFAULT, -ENOENT past its end, -PROF_ECORRUPT. */
static int rb_ary_at(const struct agent_memreader *mem, uint64_t ary, uint64_t i, uint64_t *v)
{
	uint8_t head[RB_ARY_HEAD];
	uint64_t flags;

	if (!ary || (ary & 7) || mem->read(mem->ctx, ary, head, sizeof(head)))
		return -EFAULT;
	flags = rb_u64(head);
	if ((flags & RB_T_MASK) != RB_T_ARRAY)
		return -PROF_ECORRUPT;
	if (flags & RB_FL_USER1) { /* embedded */
		if (i >= ((flags >> RB_ARY_EMBED_SHIFT) & 3))
			return -ENOENT;
		*v = rb_u64(head + 16 + i * 8);
		return 0;
	}
	if (i >= rb_u64(head + 16))
		return -ENOENT;
	return rb_read_val(mem, rb_u64(head + RB_ARY_HEAP_PTR) + i * 8, v) ? -EFAULT : 0;
}

/* The name of @id from the symbol table at @gs, as Ruby's rb_id2str (get_id_serial_entry). */
static int rb_id2str(const struct agent_memreader *mem, uint64_t gs, uint64_t id, char **out)
{
	uint64_t serial = id > RB_ID_LAST_OP ? id >> RB_ID_SCOPE_SHIFT : id, ids, sub, str;
	uint32_t last;
	int rc;

	*out = NULL;
	if (mem->read(mem->ctx, gs, &last, 4) || rb_read_val(mem, gs + RB_GSYMS_IDS, &ids))
		return -EFAULT;
	if (!serial || serial > last)
		return -ENOENT;
	if ((rc = rb_ary_at(mem, ids, serial / RB_ID_ENTRY_UNIT, &sub)) ||
	    (rc = rb_ary_at(mem, sub, (serial % RB_ID_ENTRY_UNIT) * 2, &str)))
		return rc;
	return rb_read_str(mem, str, out);
}

/* Whether @gs holds a symbol table that names every ID of rb31_ids right. */
static bool rb_gsyms_check(const struct agent_memreader *mem, uint64_t gs)
{
	for (size_t i = 0; i < PROF_ARRAY_SIZE(rb31_ids); i++) {
		char *name = NULL;
		bool ok = !rb_id2str(mem, gs, rb31_ids[i].id, &name) &&
			  !strcmp(name, rb31_ids[i].name);

		free(name);
		if (!ok)
			return false;
	}
	return true;
}

/*
 * ruby_global_symbols (not exported) from the code of rb_id2str at @fn
 * (@size bytes) and the functions it calls or jumps to: the first
 * candidate (agent_rb_gsyms_candidates) that names rb31_ids right, or 0.
 */
static uint64_t rb_find_gsyms(const struct agent_memreader *mem, uint64_t fn, uint64_t size)
{
	uint8_t code[256];
	uint64_t fns[9] = { fn }, cand[8];
	size_t nfns = 1, len = PROF_MIN(size, (uint64_t)sizeof(code));

	if (!fn || !len || mem->read(mem->ctx, fn, code, len))
		return 0;
	nfns += agent_rb_rel32_targets(code, len, fn, 0xe9, fns + nfns, 4);
	nfns += agent_rb_rel32_targets(code, len, fn, 0xe8, fns + nfns, 4);
	for (size_t f = 0; f < nfns; f++) {
		size_t n, l = f ? sizeof(code) : len;

		if (f && mem->read(mem->ctx, fns[f], code, l))
			continue;
		n = agent_rb_gsyms_candidates(code, l, fns[f], cand, PROF_ARRAY_SIZE(cand));
		for (size_t i = 0; i < n; i++)
			if (rb_gsyms_check(mem, cand[i]))
				return cand[i];
	}
	return 0;
}

/* Instance variable @id of class or module @klass (its RCLASS_IV_TBL, an st_table). */
static int rb_class_ivar(const struct agent_memreader *mem, uint64_t klass, uint64_t id,
			 uint64_t *v)
{
	uint8_t head[AGENT_RB_ST_HEAD], *ents;
	uint64_t ext, tbl, start, bound;
	int rc;

	if (rb_read_val(mem, klass + RB_CLASS_EXT, &ext) || !ext ||
	    rb_read_val(mem, ext + RB_EXT_IV_TBL, &tbl))
		return -EFAULT;
	if (!tbl)
		return -ENOENT;
	if (mem->read(mem->ctx, tbl, head, sizeof(head)))
		return -EFAULT;
	start = rb_u64(head + 32);
	bound = rb_u64(head + 40);
	if (bound < start || bound - start > RB_ST_MAX)
		return -PROF_ECORRUPT;
	if (bound == start)
		return -ENOENT;
	ents = xmalloc((size_t)(bound - start) * AGENT_RB_ST_ENTRY);
	rc = mem->read(mem->ctx, rb_u64(head + 48) + start * AGENT_RB_ST_ENTRY, ents,
		       (size_t)(bound - start) * AGENT_RB_ST_ENTRY)
		     ? -EFAULT
		     : agent_rb_st_find(ents, (size_t)(bound - start), id, v);
	free(ents);
	return rc;
}

/*
 * The class part of a method's name, as Ruby 3.1's
 * rb_profile_frame_classpath (of the method entry's defined_class
 * @klass) gives it, with the method separator: "Outer#", "Outer." for a
 * singleton class's methods. -ENOENT for anonymous classes and
 * singletons of objects other than classes (Ruby prints an address).
 */
static int rb_class_prefix(const struct agent_memreader *mem, uint64_t klass, char **out)
{
	uint64_t fl, name;
	const char *sep = "#";
	char *s;
	int rc;

	*out = NULL;
	if (!klass || (klass & 7) || rb_read_val(mem, klass, &fl))
		return -EFAULT;
	if ((fl & RB_T_MASK) == RB_T_ICLASS) {
		if (rb_read_val(mem, klass + RB_CLASS_KLASS, &klass) || !klass || (klass & 7) ||
		    rb_read_val(mem, klass, &fl))
			return -EFAULT;
	}
	if ((fl & RB_T_MASK) == RB_T_CLASS && (fl & RB_FL_SINGLETON)) {
		if ((rc = rb_class_ivar(mem, klass, RB_ID_ATTACHED, &klass)))
			return rc;
		if (!klass || (klass & 7) || rb_read_val(mem, klass, &fl))
			return -ENOENT; /* attached to a special constant */
		if (fl & RB_FL_SINGLETON)
			return -ENOENT;
		sep = ".";
	}
	if ((fl & RB_T_MASK) != RB_T_CLASS && (fl & RB_T_MASK) != RB_T_MODULE)
		return -ENOENT;
	if ((rc = rb_class_ivar(mem, klass, RB_ID_CLASSPATH, &name)) ||
	    (rc = rb_read_str(mem, name, &s)))
		return rc;
	*out = xasprintf("%s%s", s, sep);
	free(s);
	return 0;
}

/* Method entry @me: *@def and *@dclass, after checking it is an imemo_ment. */
static int rb_read_me(const struct agent_memreader *mem, uint64_t me, uint8_t head[RB_ME_HEAD])
{
	uint64_t fl;

	if (!me || (me & 7) || mem->read(mem->ctx, me, head, RB_ME_HEAD))
		return -EFAULT;
	fl = rb_u64(head);
	if ((fl & RB_T_MASK) != RB_T_IMEMO || RB_IMEMO_TYPE(fl) != RB_IMEMO_MENT)
		return -PROF_ECORRUPT;
	return 0;
}

/*
 * The full label of iseq @c run under method entry @me, as Ruby's
 * rb_profile_frame_full_label: the label's prefix before its base label
 * ("block in "), the class part, the method's name (its iseq's base
 * label). NULL when any of it is not sure: the method entry is not the
 * one of this iseq's method (def->iseqptr must be its local_iseq), the
 * class is anonymous, a read failed.
 */
static char *rb_full_label(const struct agent_memreader *mem, const struct rb_iseq *c, uint64_t me)
{
	uint8_t mh[RB_ME_HEAD], dh[RB_DEF_HEAD];
	uint64_t mbody, mlabel;
	uint32_t mtype;
	size_t ll = strlen(c->label), bl = c->base ? strlen(c->base) : 0;
	char *cls = NULL, *mname = NULL, *out = NULL;

	if (!c->base || bl > ll || strcmp(c->label + ll - bl, c->base) || rb_read_me(mem, me, mh) ||
	    mem->read(mem->ctx, rb_u64(mh + rb31_off[RB_O_ME_DEF]), dh, sizeof(dh)) ||
	    (rb_u32(dh) & 0xf) != RB_METHOD_ISEQ || rb_u64(dh + RB_DEF_ISEQPTR) != c->local_iseq ||
	    rb_read_val(mem, c->local_iseq + rb31_off[RB_O_ISEQ_BODY], &mbody) || !mbody ||
	    mem->read(mem->ctx, mbody, &mtype, 4) || mtype != RB_ISEQ_METHOD ||
	    rb_read_val(mem, mbody + RB_BODY_BASE_LABEL, &mlabel) ||
	    rb_read_str(mem, mlabel, &mname) ||
	    rb_class_prefix(mem, rb_u64(mh + RB_ME_DCLASS), &cls))
		goto out;
	out = xasprintf("%.*s%s%s", (int)(ll - bl), c->label, cls, mname);
out:
	free(cls);
	free(mname);
	return out;
}

/* A cfunc frame's method entry (@f->addr) into cache entry @c (empty): "Integer#times". */
static int rb_cfunc_read(struct rb_iseq *c, const struct agent_memreader *mem, uint64_t gs,
			 const struct profile_interp_frame *f)
{
	uint8_t mh[RB_ME_HEAD];
	uint64_t def, orig;
	char *cls = NULL, *name = NULL;
	int rc;

	if ((rc = rb_read_me(mem, f->addr, mh)))
		return rc;
	def = rb_u64(mh + rb31_off[RB_O_ME_DEF]);
	if (RB_ME_CHECK(def, rb_u64(mh + rb31_off[RB_O_ME_OWNER])) != f->check)
		return -ESTALE;
	if (!gs)
		return -PROF_ECORRUPT; /* BPF sends cfuncs only when the table was found */
	if (rb_read_val(mem, def + RB_DEF_ORIG_ID, &orig))
		return -EFAULT;
	if ((rc = rb_id2str(mem, gs, orig, &name)))
		return rc == -ENOENT ? -PROF_ECORRUPT : rc;
	if (!rb_class_prefix(mem, rb_u64(mh + RB_ME_DCLASS), &cls)) {
		c->label = xasprintf("%s%s", cls, name);
		free(name);
		free(cls);
	} else {
		c->label = name; /* an anonymous class's: the method's name alone */
	}
	c->cfunc = true;
	c->addr = f->addr;
	c->check = f->check;
	return 0;
}

/*
 * vm_exec_core (a local symbol) from rb_vm_exec's code at runtime
 * address @fn (@size bytes): of the functions it calls (call rel32), the
 * one whose .eh_frame FDE (in @path, ELF addresses = runtime - @bias)
 * starts at the call's target and is the largest, when at least 8 KiB
 * (the interpreter core; Debian's 3.1.2: 17527 bytes, the next largest
 * 1446). 0 and its range in *@r, or -ENOENT.
 */
static int rb_find_core(const char *path, uint64_t bias, const struct agent_memreader *mem,
			uint64_t fn, uint64_t size, struct agent_interp_range *r)
{
	uint64_t t[64], best = 0, lo, hi;
	uint8_t *code;
	size_t n;

	if (!size || size > (1u << 16))
		return -ENOENT;
	code = xmalloc(size);
	if (mem->read(mem->ctx, fn, code, size)) {
		free(code);
		return -EFAULT;
	}
	n = agent_rb_rel32_targets(code, size, fn, 0xe8, t, PROF_ARRAY_SIZE(t));
	free(code);
	for (size_t i = 0; i < n; i++) {
		if (t[i] < bias || (t[i] >= fn && t[i] < fn + size) ||
		    agent_interp_elf_fde(path, t[i] - bias, &lo, &hi) || lo != t[i] - bias ||
		    hi - lo <= best)
			continue;
		best = hi - lo;
		r->lo = t[i];
		r->hi = t[i] + best;
	}
	if (best < 8192)
		return -ENOENT;
	r->inner = true;
	return 0;
}

static int rb_attach(const char *path, uint64_t bias, const struct agent_memreader *mem,
		     struct agent_interp_attach *out)
{
	struct agent_interp_sym syms[] = {
		{ .name = "rb_vm_exec" },
		{ .name = "ruby_version" },
		{ .name = "ruby_single_main_ractor" },
		{ .name = "rb_id2str" },
	};
	struct rb_priv *pv;
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
	if (!rb_find_core(path, bias, mem, out->loops[0].lo, syms[0].size, &out->loops[1]))
		out->nloops = 2;
	out->priv = pv = xcalloc(1, sizeof(struct rb_priv));
	if (syms[3].found)
		pv->gsyms = rb_find_gsyms(mem, bias + syms[3].value, syms[3].size);
	if (!pv->gsyms)
		out->bpf.off[RB_O_ME_OWNER] = PROFILE_INTERP_OFF_NONE; /* cfuncs not sent */
	return 0;
}

static void rb_iseq_clear(struct rb_iseq *c)
{
	free(c->label);
	free(c->file);
	free(c->base);
	free(c->full);
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
	if (rb_read_str(mem, rb_u64(head + RB_BODY_BASE_LABEL), &c->base))
		c->base = NULL; /* then the label alone */
	c->local_iseq = rb_u64(head + RB_BODY_LOCAL_ISEQ);
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

	bool cfunc = f->flags & PROFILE_IF_CFUNC;

	if (c->addr != f->addr || c->check != f->check || c->cfunc != cfunc) {
		int rc;

		rb_iseq_clear(c);
		rc = cfunc ? rb_cfunc_read(c, mem, pv->gsyms, f) : rb_iseq_read(c, mem, f);
		if (rc) {
			rb_iseq_clear(c);
			return rc;
		}
	}
	if (cfunc) {
		out->function = c->label;
		out->file = NULL;
		out->start_line = out->line = 0;
		return 0;
	}
	if (pv->gsyms && f->obj2 && f->obj2 != c->me) {
		free(c->full);
		c->full = rb_full_label(mem, c, f->obj2);
		c->me = f->obj2;
	}
	if (f->aux >= c->encoded) {
		pos = (f->aux - c->encoded) / 8;
		if (pos)
			pos--;
	}
	out->function = f->obj2 && f->obj2 == c->me && c->full ? c->full : c->label;
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
