// SPDX-License-Identifier: Apache-2.0
/*
 * jit_hotspot.c - OpenJDK HotSpot (JDK 17, x86-64) for the JIT
 * framework (jit.h): detection, unwinding one frame in the code cache,
 * and naming interpreted, compiled (with inlined methods) and stub frames
 * from the JVM's own data, with no flag in the target.
 *
 * Detection: libjvm.so exports gHotSpotVMStructs / gHotSpotVMTypes
 * (.dynsym); the tables live in the process and are read through the
 * memreader (agent_hs_vm_read, jit_hotspot_decode.c) for every offset
 * used here, never a per-build table. Until the JVM has filled them and
 * set up its code heaps (CodeCache::_heaps), attach says -EAGAIN. Only
 * JDK 16-19 are accepted: the UNSIGNED5 streams changed in 20.0.15 and
 * nmethod's layout in 23; 17 is what was checked.
 *
 * Unwinding (hotspot's frame_x86.cpp sender_for_*; docs/runtimes.md, "OpenJDK HotSpot"):
 * pc -> the CodeHeap holding it -> its segment map walked back to the
 * block start (a byte per segment: 0 = block start, 0xff = free, else
 * how many segments to step back) -> HeapBlock (in use) -> CodeBlob,
 * whose name says the kind:
 *   - "Interpreter": the template interpreter keeps rbp as the frame
 *     pointer; Method* at fp-3 words, bcp at fp-8 (what the interpreter
 *     last saved, before a call; for the sampled frame the live bcp is
 *     r13, which BPF reads with the stack copy), sender sp at fp-1,
 *     saved rbp at fp, return pc at fp+1.
 *   - nmethod (C1/C2): no frame pointer; the caller's sp is sp +
 *     frame_size words, the return pc and saved rbp the two words below.
 *     The sampled frame may be in its prologue (pc before
 *     frame_complete_offset: only the return address, or that and rbp,
 *     are pushed) or its epilogue (after "pop rbp": the instructions
 *     left are the return poll and ret), told by the code bytes at pc.
 *     A frame whose return was redirected to the deopt handler keeps the
 *     original pc at sp + orig_pc_offset (named by it).
 *   - other blobs (stubs, adapters): frame_size when set, else rbp when
 *     it points into the stack, else the return address at sp.
 * Every return address found must lie in a blob's code in a code heap
 * (the callers of Java code and stubs are Java code or stubs) or, for a
 * stub's caller, in libjvm's text; otherwise the step fails and the
 * unwinder falls back to frame pointers. Stack words are read from the
 * sample's stack copy only, code cache data through the memreader.
 *
 * Raw frames: interpreted {Method*, bci, check = its ConstMethod*};
 * compiled {nmethod, pc offset (a return address one byte back, so its
 * call's PcDesc is found), check = compile id}; stub {blob, pc offset,
 * check = the blob's name pointer}. Naming reads them again and answers
 * -ESTALE when the check differs (a freed and reused Method or nmethod is
 * never named as what lives there now); a Method must also be at its
 * idnum in its class's method array.
 *
 * Naming (docs/runtimes.md, "OpenJDK HotSpot"): Method -> ConstMethod -> ConstantPool ->
 * pool holder InstanceKlass; "pkg.Class.method" from Klass._name and the
 * pool's Symbol at _name_index; file from _source_file_name_index; line
 * from the compressed line number table after the bytecodes. nmethod:
 * the PcDesc for the pc offset, then its scope chain (innermost first),
 * one frame per inlined level, methods from the nmethod's metadata.
 * Decoded methods and nmethods are cached per process by address.
 *
 * Sources: OpenJDK 17 hotspot (runtime/vmStructs.cpp, memory/heap.cpp,
 * cpu/x86/frame_x86.{hpp,cpp}, code/nmethod.cpp, code/scopeDesc.cpp,
 * oops/method.cpp); the OpenTelemetry eBPF profiler's
 * interpreter/hotspot and support/ebpf/hotspot_tracer.ebpf.c for how an
 * outside walker does it.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/jit.h"
#include "agent/jit_hotspot.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <gelf.h>
#include <libelf.h>
#include <time.h>
#include <unistd.h>

#define HS_METHODS     512	  /* Methods cached per process */
#define HS_NMETHODS    128	  /* nmethods cached per process */
#define HS_KINDS       64	  /* blob names classified */
#define HS_SEG_CHUNK   128	  /* segment map bytes read at once */
#define HS_SEG_HOPS    512	  /* segment map steps per lookup */
#define HS_LINES_MAX   (64 << 10) /* line number table bytes read */
#define HS_NM_DATA_MAX (1u << 20) /* metadata + scopes bytes of one nmethod */
#define HS_FRAME_MAX   (64 << 10) /* a frame larger than this is corrupt */
#define HS_RA_SLOTS    6	  /* extra slots searched for a return address */
#define HS_SYM_MAX     200	  /* bytes of a class or method name */
#define HS_METHODS_MAX 65536	  /* methods of one class */

enum hs_kind {
	HS_K_STUB = 0,
	HS_K_NMETHOD,
	HS_K_INTERP,
	HS_K_VTABLE,
};

struct hs_heap {
	uint64_t lo, hi;  /* reserved [low_boundary, high_boundary) */
	uint64_t mem_low; /* _memory.low: segment 0 */
	uint64_t seg_low; /* _segmap.low */
};

/* One CodeBlob as read at a step. */
struct hs_blob {
	uint64_t addr, code_begin, code_end, name, deopt, method;
	uint32_t frame_size; /* bytes */
	int32_t frame_complete, orig_pc;
	uint32_t compile_id;
	enum hs_kind kind;
};

struct hs_method {
	uint64_t addr, cm; /* 0 = empty */
	uint16_t code_size;
	int64_t first_line;
	char name[AGENT_INTERP_NAME_MAX], file[AGENT_INTERP_NAME_MAX];
	uint8_t *lines;
	size_t nlines;
};

struct hs_nmethod {
	uint64_t addr; /* 0 = empty */
	uint32_t compile_id;
	uint64_t method;
	uint8_t *data; /* metadata, scopes data, scopes pcs */
	size_t nmeta, nscopes, npcs;
};

struct hs_kindname {
	uint64_t ptr;
	enum hs_kind kind;
};

/*
 * A pc's blob lookup, kept for HS_PC_TTL_NS: the stacks of one hot
 * thread repeat their return addresses sample after sample, and each
 * lookup costs three reads of the process. A blob freed and its memory
 * reused within the TTL can give one stale answer: its return address
 * is still checked, and naming checks the compile id against the blob.
 */
#define HS_PC_CACHE  512 /* power of 2 */
#define HS_PC_TTL_NS 500000000LL

struct hs_pc_entry {
	uint64_t pc; /* 0 = empty */
	int64_t at_ns;
	int rc;
	struct hs_blob b;
};

#define HS_RECENT_BLOBS 32 /* blobs whose code range answers pcs not in the pc cache */
#define HS_STUB_NAMES	16 /* blob names (static strings in libjvm) kept by address */

struct hs_stub_name {
	uint64_t ptr; /* 0 = empty */
	char name[AGENT_INTERP_NAME_MAX];
};

struct hs_priv {
	struct agent_hs_vm vm;
	struct hs_pc_entry pcs[HS_PC_CACHE];
	struct hs_pc_entry recent[HS_RECENT_BLOBS]; /* found blobs (.pc = 1), by their code range */
	size_t recent_next;
	struct hs_stub_name stub_names[HS_STUB_NAMES];
	struct hs_heap heaps[AGENT_HS_MAX_HEAPS];
	size_t nheaps;
	uint64_t text_lo, text_hi;
	struct hs_kindname kinds[HS_KINDS];
	struct hs_method methods[HS_METHODS];
	struct hs_nmethod nmethods[HS_NMETHODS];
	char out[AGENT_JIT_MAX_INLINE][2][AGENT_INTERP_NAME_MAX];
	char stub[AGENT_INTERP_NAME_MAX];
};

static bool hs_match(const char *base)
{
	return !strcmp(base, "libjvm.so");
}

static uint64_t hs_get64(const uint8_t *p, uint32_t off)
{
	uint64_t v;

	memcpy(&v, p + off, 8);
	return v;
}

static uint32_t hs_get32(const uint8_t *p, uint32_t off)
{
	uint32_t v;

	memcpy(&v, p + off, 4);
	return v;
}

static uint16_t hs_get16(const uint8_t *p, uint32_t off)
{
	uint16_t v;

	memcpy(&v, p + off, 2);
	return v;
}

/* The word at @addr of the stack copy: 0 or -ERANGE (see agent_jit_stack_read). */
static int hs_stack_word(const struct agent_jit_stack *stk, uint64_t addr, uint64_t *out)
{
	if (addr < stk->base || addr - stk->base > stk->len || stk->len - (addr - stk->base) < 8)
		return -ERANGE;
	memcpy(out, stk->bytes + (addr - stk->base), 8);
	return 0;
}

static int hs_read_heaps(struct hs_priv *pv, const struct agent_memreader *mem)
{
	const struct agent_hs_vm *vm = &pv->vm;
	uint8_t ga[64], heap[AGENT_HS_STRUCT_MAX];
	uint64_t arr, data, ptrs[AGENT_HS_MAX_HEAPS];
	uint32_t len, log2_at = vm->heap_log2, shift = 0;

	if (vm->ga_len + 4 > sizeof(ga) || vm->ga_data + 8 > sizeof(ga) ||
	    vm->heap_sizeof > sizeof(heap) || vm->heap_log2 + 4 > vm->heap_sizeof ||
	    vm->heap_memory + vm->vs_sizeof > vm->heap_sizeof ||
	    vm->heap_segmap + vm->vs_sizeof > vm->heap_sizeof || vm->vs_sizeof > 256 ||
	    vm->vs_low_boundary + 8 > vm->vs_sizeof || vm->vs_high_boundary + 8 > vm->vs_sizeof ||
	    vm->vs_low + 8 > vm->vs_sizeof)
		return -PROF_ECORRUPT;
	if (mem->read(mem->ctx, vm->heaps, &arr, 8))
		return -EFAULT;
	if (!arr)
		return -EAGAIN;
	if (mem->read(mem->ctx, arr, ga, sizeof(ga)))
		return -EFAULT;
	len = hs_get32(ga, vm->ga_len);
	data = hs_get64(ga, vm->ga_data);
	if (!len || !data)
		return -EAGAIN;
	if (len > AGENT_HS_MAX_HEAPS)
		return -PROF_ECORRUPT;
	if (mem->read(mem->ctx, data, ptrs, 8 * (size_t)len))
		return -EFAULT;
	pv->nheaps = 0;
	for (uint32_t i = 0; i < len; i++) {
		struct hs_heap *h = &pv->heaps[pv->nheaps];
		unsigned log2;

		if (!ptrs[i])
			return -EAGAIN;
		if (mem->read(mem->ctx, ptrs[i], heap, vm->heap_sizeof))
			return -EFAULT;
		h->lo = hs_get64(heap, vm->heap_memory + vm->vs_low_boundary);
		h->hi = hs_get64(heap, vm->heap_memory + vm->vs_high_boundary);
		h->mem_low = hs_get64(heap, vm->heap_memory + vm->vs_low);
		h->seg_low = hs_get64(heap, vm->heap_segmap + vm->vs_low);
		log2 = hs_get32(heap, log2_at);
		if (!h->lo || !h->seg_low)
			return -EAGAIN;
		if (h->hi <= h->lo || h->mem_low < h->lo || h->mem_low >= h->hi || log2 < 4 ||
		    log2 > 16 || (i && log2 != shift))
			return -PROF_ECORRUPT;
		shift = log2;
		pv->nheaps++;
	}
	pv->vm.heap_log2 = shift; /* from here on: the shift, not its offset */
	return 0;
}

int agent_hs_priv_new(const struct agent_hs_vm *vm, const struct agent_memreader *mem,
		      uint64_t text_lo, uint64_t text_hi, void **out)
{
	struct hs_priv *pv = xcalloc(1, sizeof(*pv));
	int rc;

	*out = NULL;
	pv->vm = *vm;
	pv->text_lo = text_lo;
	pv->text_hi = text_hi;
	if (vm->nm_sizeof > AGENT_HS_STRUCT_MAX || vm->nm_sizeof < vm->nm_compile_id + 4 ||
	    vm->blob_name + 8 > vm->nm_sizeof || vm->blob_code_end + 8 > vm->nm_sizeof ||
	    vm->blob_code_begin + 8 > vm->nm_sizeof || vm->blob_frame_size + 4 > vm->nm_sizeof ||
	    vm->blob_frame_complete + 4 > vm->nm_sizeof || vm->hb_sizeof > 64 ||
	    vm->hb_used >= vm->hb_sizeof || vm->pc_sizeof > 64) {
		free(pv);
		return -PROF_ECORRUPT;
	}
	rc = hs_read_heaps(pv, mem);
	if (rc) {
		free(pv);
		return rc;
	}
	*out = pv;
	return 0;
}

static void hs_free(void *priv)
{
	struct hs_priv *pv = priv;

	if (!pv)
		return;
	for (size_t i = 0; i < HS_METHODS; i++)
		free(pv->methods[i].lines);
	for (size_t i = 0; i < HS_NMETHODS; i++)
		free(pv->nmethods[i].data);
	free(pv);
}

/* The kind of blob whose _name is at @ptr (names are static strings in libjvm: cached). */
static enum hs_kind hs_kind_of(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t ptr)
{
	struct hs_kindname *k = &pv->kinds[(ptr >> 3) % HS_KINDS];
	char name[32];

	if (k->ptr == ptr)
		return k->kind;
	if (agent_mem_read_str(mem, ptr, name, sizeof(name)) == -EFAULT)
		return HS_K_STUB;
	k->ptr = ptr;
	if (!strcmp(name, "nmethod") || !strcmp(name, "native nmethod"))
		k->kind = HS_K_NMETHOD;
	else if (!strcmp(name, "Interpreter"))
		k->kind = HS_K_INTERP;
	else if (!strcmp(name, "vtable chunks") || !strcmp(name, "itable chunks"))
		k->kind = HS_K_VTABLE;
	else
		k->kind = HS_K_STUB;
	return k->kind;
}

/* Read the blob at @addr (a CodeBlob in a used HeapBlock): 0, -EFAULT, -PROF_ECORRUPT. */
static int hs_read_blob(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t addr,
			struct hs_blob *b)
{
	const struct agent_hs_vm *vm = &pv->vm;
	uint8_t head[AGENT_HS_STRUCT_MAX];
	size_t n = vm->nm_sizeof;
	bool whole = true;

	/* A small stub at the end of the committed heap may end before an nmethod's size. */
	if (mem->read(mem->ctx, addr, head, n)) {
		n = PROF_MAX(vm->blob_name, vm->blob_code_end) + 8;
		n = PROF_MAX(n, (size_t)vm->blob_frame_size + 4);
		whole = false;
		if (mem->read(mem->ctx, addr, head, n))
			return -EFAULT;
	}
	memset(b, 0, sizeof(*b));
	b->addr = addr;
	b->name = hs_get64(head, vm->blob_name);
	b->code_begin = hs_get64(head, vm->blob_code_begin);
	b->code_end = hs_get64(head, vm->blob_code_end);
	b->frame_size = hs_get32(head, vm->blob_frame_size);
	b->frame_complete = (int32_t)hs_get32(head, vm->blob_frame_complete);
	if (b->code_begin < addr || b->code_end < b->code_begin ||
	    b->code_end - b->code_begin > (1u << 30) || b->frame_size > HS_FRAME_MAX / 8)
		return -PROF_ECORRUPT;
	b->frame_size *= 8;
	b->kind = hs_kind_of(pv, mem, b->name);
	if (b->kind == HS_K_NMETHOD) {
		if (!whole)
			return -EFAULT;
		b->compile_id = hs_get32(head, vm->nm_compile_id);
		b->deopt = hs_get64(head, vm->nm_deopt);
		b->orig_pc = (int32_t)hs_get32(head, vm->nm_orig_pc);
		b->method = hs_get64(head, vm->nm_method);
	}
	return 0;
}

/*
 * The blob whose code holds @pc: 0; -ENOENT when @pc is in no code heap,
 * in a free block or outside the block's code; -EFAULT; -PROF_ECORRUPT.
 */
static int hs_find_blob_uncached(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t pc,
				 struct hs_blob *b)
{
	const struct hs_heap *h = NULL;
	uint8_t seg[HS_SEG_CHUNK], used = 0;
	uint64_t idx, lo = 0, hi = 0, block;
	int rc;

	for (size_t i = 0; i < pv->nheaps; i++)
		if (pc >= pv->heaps[i].mem_low && pc < pv->heaps[i].hi)
			h = &pv->heaps[i];
	if (!h)
		return -ENOENT;
	idx = (pc - h->mem_low) >> pv->vm.heap_log2;
	for (int hop = 0;; hop++) {
		uint8_t tag;

		if (hop >= HS_SEG_HOPS)
			return -PROF_ECORRUPT;
		if (hi == 0 || idx < lo || idx >= hi) {
			lo = idx >= HS_SEG_CHUNK - 1 ? idx - (HS_SEG_CHUNK - 1) : 0;
			hi = idx + 1;
			if (mem->read(mem->ctx, h->seg_low + lo, seg, hi - lo))
				return -EFAULT;
		}
		tag = seg[idx - lo];
		if (tag == 0xff)
			return -ENOENT;
		if (tag == 0)
			break;
		if (tag > idx)
			return -PROF_ECORRUPT;
		idx -= tag;
	}
	block = h->mem_low + (idx << pv->vm.heap_log2);
	if (mem->read(mem->ctx, block + pv->vm.hb_used, &used, 1))
		return -EFAULT;
	if (used != 1)
		return -ENOENT;
	rc = hs_read_blob(pv, mem, block + pv->vm.hb_sizeof, b);
	if (rc)
		return rc;
	return pc >= b->code_begin && pc < b->code_end ? 0 : -ENOENT;
}

static int64_t hs_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* The blob holding @pc (hs_find_blob_uncached), through the pc cache. */
static int hs_find_blob(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t pc,
			struct hs_blob *b)
{
	struct hs_pc_entry *e = &pv->pcs[((pc * 0x9e3779b97f4a7c15ULL) >> 40) & (HS_PC_CACHE - 1)];
	int64_t now = hs_now_ns();
	int rc;

	if (pc && e->pc == pc && now - e->at_ns < HS_PC_TTL_NS && now >= e->at_ns) {
		*b = e->b;
		return e->rc;
	}
	/* A leaf pc rarely repeats exactly, but its blob does: its code range answers. */
	for (size_t i = 0; i < HS_RECENT_BLOBS; i++) {
		const struct hs_pc_entry *r = &pv->recent[i];

		if (r->pc && pc >= r->b.code_begin && pc < r->b.code_end && now >= r->at_ns &&
		    now - r->at_ns < HS_PC_TTL_NS) {
			*b = r->b;
			return 0;
		}
	}
	rc = hs_find_blob_uncached(pv, mem, pc, b);
	if (rc == 0) {
		struct hs_pc_entry *r = &pv->recent[pv->recent_next++ % HS_RECENT_BLOBS];

		r->pc = 1;
		r->at_ns = now;
		r->rc = 0;
		r->b = *b;
	}
	if (rc == 0 || rc == -ENOENT) { /* not a failed read: those are asked again */
		e->pc = pc;
		e->at_ns = now;
		e->rc = rc;
		e->b = rc ? (struct hs_blob){ 0 } : *b;
	}
	return rc;
}

/* Whether @ra may be a return address: in a blob's code, or (@native_ok) in libjvm's text. */
static bool hs_ra_ok(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t ra,
		     bool native_ok)
{
	struct hs_blob b;

	if (native_ok && ra >= pv->text_lo && ra < pv->text_hi)
		return true;
	return hs_find_blob(pv, mem, ra, &b) == 0;
}

static int hs_step_interp(struct hs_priv *pv, const struct agent_memreader *mem,
			  const struct agent_jit_stack *stk, const struct agent_jit_regs *r,
			  bool leaf, struct agent_jit_regs *caller, struct agent_jit_frame *f)
{
	uint64_t fp = r->bp, method, bcp, sender_sp, saved_fp, ret, cm, base;

	if (!r->bp_ok || fp < r->sp || fp - r->sp >= stk->len)
		return -PROF_ECORRUPT;
	if (hs_stack_word(stk, fp - 24, &method) || hs_stack_word(stk, fp - 64, &bcp) ||
	    hs_stack_word(stk, fp - 8, &sender_sp) || hs_stack_word(stk, fp, &saved_fp) ||
	    hs_stack_word(stk, fp + 8, &ret))
		return -ERANGE;
	/*
	 * The saved rbp is the caller's frame pointer only when the caller
	 * keeps one (the interpreter, stubs); a compiled caller uses rbp as
	 * a plain register, so any value may be there, and it is stepped by
	 * its frame size instead.
	 */
	if (!method || (method & 7) || sender_sp <= fp || sender_sp - fp > HS_FRAME_MAX)
		return -PROF_ECORRUPT;
	if (mem->read(mem->ctx, method + pv->vm.m_const, &cm, 8))
		return -EFAULT;
	if (!cm || (cm & 7) || !hs_ra_ok(pv, mem, ret, false))
		return -PROF_ECORRUPT;
	base = cm + pv->vm.cm_sizeof;
	/* The sampled frame's live bcp is r13 (rbcp); the slot holds it only across calls. */
	if (leaf && stk->r13 >= base && stk->r13 - base < 0x10000)
		bcp = stk->r13;
	f->kind = AGENT_JIT_INTERPRETED;
	f->obj = method;
	f->offset = bcp >= base && bcp - base < 0x10000 ? bcp - base : 0xffff;
	f->check = cm;
	caller->pc = ret;
	caller->sp = sender_sp;
	caller->bp = saved_fp;
	caller->bp_ok = saved_fp > fp;
	return 0;
}

/* The caller of a frame whose return address is at @slot: searched up to HS_RA_SLOTS further. */
static int hs_unwind_at(struct hs_priv *pv, const struct agent_memreader *mem,
			const struct agent_jit_stack *stk, uint64_t slot, bool native_ok,
			struct agent_jit_regs *caller)
{
	for (int i = 0; i <= HS_RA_SLOTS; i++, slot += 8) {
		uint64_t ra, bp;

		if (hs_stack_word(stk, slot, &ra) || hs_stack_word(stk, slot - 8, &bp))
			return -ERANGE;
		if (!hs_ra_ok(pv, mem, ra, native_ok))
			continue;
		caller->pc = ra;
		caller->sp = slot + 8;
		caller->bp = bp;
		caller->bp_ok = true;
		return 0;
	}
	return -PROF_ECORRUPT;
}

/* Only the return address at sp (and maybe rbp below it) is on the stack: rbp is the caller's. */
static int hs_unwind_ra(struct hs_priv *pv, const struct agent_memreader *mem,
			const struct agent_jit_stack *stk, const struct agent_jit_regs *r,
			uint64_t slot, bool native_ok, struct agent_jit_regs *caller)
{
	uint64_t ra, bp = r->bp;
	bool bp_ok = r->bp_ok;

	if (hs_stack_word(stk, slot, &ra))
		return -ERANGE;
	if (slot != r->sp) {
		if (hs_stack_word(stk, slot - 8, &bp))
			return -ERANGE;
		bp_ok = true;
	}
	if (!hs_ra_ok(pv, mem, ra, native_ok))
		return -PROF_ECORRUPT;
	caller->pc = ra;
	caller->sp = slot + 8;
	caller->bp = bp;
	caller->bp_ok = bp_ok;
	return 0;
}

/*
 * Where the sampled pc of a complete frame is in its epilogue: 0 = not
 * (or not yet: "add rsp" not run), 1 = rbp popped (return poll or ret
 * left), 2 = on "pop rbp". C1 and C2 end a method with add rsp, N; pop
 * rbp; cmp rsp, [r15 + poll word]; ja slow path; ret (hotspot 17
 * MachEpilogNode::emit, C1_MacroAssembler::remove_frame,
 * MacroAssembler::safepoint_poll at return).
 */
static int hs_epilogue(const struct agent_memreader *mem, uint64_t pc)
{
	uint8_t c[8];

	if (mem->read(mem->ctx, pc, c, sizeof(c)))
		return 0;
	if (c[0] == 0x5d)
		return 2;
	if (c[0] == 0xc3 || (c[0] == 0x49 && c[1] == 0x3b && c[2] == 0xa7) ||
	    (c[0] == 0x0f && c[1] == 0x87))
		return 1;
	return 0;
}

static int hs_step_compiled(struct hs_priv *pv, const struct agent_memreader *mem,
			    const struct agent_jit_stack *stk, const struct agent_jit_regs *r,
			    bool leaf, const struct hs_blob *b, struct agent_jit_regs *caller,
			    struct agent_jit_frame *f)
{
	uint64_t pc = r->pc, orig;
	int rc, epi;

	if (!leaf && pc == b->deopt && b->orig_pc > 0 && b->orig_pc < HS_FRAME_MAX &&
	    !hs_stack_word(stk, r->sp + (uint64_t)b->orig_pc, &orig) && orig >= b->code_begin &&
	    orig < b->code_end)
		pc = orig; /* deoptimized: named where it was */
	if (leaf && b->frame_complete >= 0 && pc < b->code_begin + (uint64_t)b->frame_complete) {
		rc = hs_unwind_ra(pv, mem, stk, r, r->sp, false, caller);
		if (rc)
			rc = hs_unwind_ra(pv, mem, stk, r, r->sp + 8, false, caller);
	} else if (leaf && (epi = hs_epilogue(mem, pc)) != 0) {
		rc = hs_unwind_ra(pv, mem, stk, r, epi == 2 ? r->sp + 8 : r->sp, false, caller);
	} else {
		if (b->frame_size < 16)
			return -PROF_ECORRUPT;
		rc = hs_unwind_at(pv, mem, stk, r->sp + b->frame_size - 8, false, caller);
	}
	if (rc)
		return rc;
	f->kind = AGENT_JIT_COMPILED;
	f->obj = b->addr;
	f->offset = pc - b->code_begin - (leaf ? 0 : 1);
	f->check = b->compile_id;
	return 0;
}

static int hs_step_stub(struct hs_priv *pv, const struct agent_memreader *mem,
			const struct agent_jit_stack *stk, const struct agent_jit_regs *r,
			bool leaf, const struct hs_blob *b, struct agent_jit_regs *caller,
			struct agent_jit_frame *f)
{
	int rc = -PROF_ECORRUPT;

	if (b->kind == HS_K_VTABLE) {
		rc = hs_unwind_ra(pv, mem, stk, r, r->sp, false, caller);
	} else if (b->frame_size >= 16 &&
		   (!leaf || (b->frame_complete >= 0 &&
			      r->pc >= b->code_begin + (uint64_t)b->frame_complete))) {
		rc = hs_unwind_at(pv, mem, stk, r->sp + b->frame_size - 8, true, caller);
	} else {
		if (r->bp_ok && r->bp >= r->sp && r->bp - r->sp < stk->len)
			rc = hs_unwind_ra(pv, mem, stk, r, r->bp + 8, true, caller);
		if (rc && leaf)
			rc = hs_unwind_ra(pv, mem, stk, r, r->sp, true, caller);
	}
	if (rc)
		return rc;
	f->kind = AGENT_JIT_STUB;
	f->obj = b->addr;
	f->offset = r->pc - b->code_begin;
	f->check = b->name;
	return 0;
}

static int hs_step(void *priv, const struct agent_memreader *mem, const struct agent_jit_stack *stk,
		   const struct agent_jit_regs *r, bool leaf, struct agent_jit_regs *caller,
		   struct agent_jit_frame *f)
{
	struct hs_priv *pv = priv;
	struct hs_blob b;
	int rc;

	memset(f, 0, sizeof(*f));
	/* A return address may be just past its blob's code (a call as the last instruction). */
	rc = hs_find_blob(pv, mem, leaf ? r->pc : r->pc - 1, &b);
	if (rc)
		return rc;
	switch (b.kind) {
	case HS_K_INTERP:
		return hs_step_interp(pv, mem, stk, r, leaf, caller, f);
	case HS_K_NMETHOD:
		return hs_step_compiled(pv, mem, stk, r, leaf, &b, caller, f);
	default:
		return hs_step_stub(pv, mem, stk, r, leaf, &b, caller, f);
	}
}

/* The Symbol at @addr as a class name (agent_hs_class_name) or, @raw, its bytes as they are. */
static int hs_symbol(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t addr, bool raw,
		     char *out, size_t max)
{
	uint8_t buf[HS_SYM_MAX + 16];
	uint16_t len;
	size_t n;

	out[0] = '\0';
	if (!addr || pv->vm.sym_body + HS_SYM_MAX > sizeof(buf) || pv->vm.sym_length + 2 > 16)
		return -PROF_ECORRUPT;
	if (mem->read(mem->ctx, addr, buf, pv->vm.sym_body) ||
	    mem->read(mem->ctx, addr + pv->vm.sym_length, &len, 2))
		return -EFAULT;
	n = PROF_MIN((size_t)len, (size_t)HS_SYM_MAX);
	if (mem->read(mem->ctx, addr + pv->vm.sym_body, buf, n))
		return -EFAULT;
	if (raw) {
		size_t o = 0;

		for (size_t i = 0; i < n && o + 1 < max; i++)
			out[o++] = buf[i] >= 0x20 && buf[i] < 0x7f ? (char)buf[i] : '?';
		out[o] = '\0';
	} else {
		agent_hs_class_name(buf, n, out, max);
	}
	return 0;
}

/* The Symbol* in constant pool @cp's slot @index (low bit: a tag, masked). */
static int hs_pool_symbol(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t cp,
			  uint16_t index, char *out, size_t max)
{
	uint64_t sym;

	out[0] = '\0';
	if (!index)
		return -ENOENT;
	if (mem->read(mem->ctx, cp + pv->vm.cp_sizeof + 8 * (uint64_t)index, &sym, 8))
		return -EFAULT;
	return hs_symbol(pv, mem, sym & ~1ULL, true, out, max);
}

/*
 * Read the line number table at @addr into @m: in pieces (none crossing a
 * 256-byte boundary, so the end of a mapping is not read past early) up
 * to its end marker, a 0 where a pair starts.
 */
static void hs_read_lines(const struct agent_memreader *mem, uint64_t addr, struct hs_method *m)
{
	size_t n = 0, i = 0;

	m->lines = xmalloc(HS_LINES_MAX);
	while (n < HS_LINES_MAX) {
		size_t piece = PROF_MIN(256 - ((addr + n) & 255), (size_t)HS_LINES_MAX - n);

		if (mem->read(mem->ctx, addr + n, m->lines + n, piece))
			break;
		n += piece;
		while (i < n) {
			size_t j = i + 1;
			uint32_t v;

			if (!m->lines[i]) {
				m->nlines = i + 1;
				return;
			}
			if (m->lines[i] == 0xff && (!agent_hs_u5(m->lines, n, &j, &v) ||
						    !agent_hs_u5(m->lines, n, &j, &v)))
				break; /* cut: read more */
			i = j;
		}
	}
	m->nlines = n; /* no end seen: the decoder stops at the buffer's end */
}

static void hs_method_clear(struct hs_method *m)
{
	free(m->lines);
	memset(m, 0, sizeof(*m));
}

/*
 * The decoded Method at @addr; @check: its ConstMethod as sampled (0 =
 * take the current one: an nmethod that is still alive keeps its methods).
 */
static int hs_method_get(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t addr,
			 uint64_t check, const struct hs_method **out)
{
	const struct agent_hs_vm *vm = &pv->vm;
	struct hs_method *m = &pv->methods[(addr >> 3) * 0x9e3779b97f4a7c15ULL >> 55];
	uint8_t cmb[AGENT_HS_STRUCT_MAX], cpb[AGENT_HS_STRUCT_MAX];
	uint64_t cm, cp, holder, arr, at, ksym;
	uint32_t alen;
	uint16_t idnum, flags;
	char cls[AGENT_INTERP_NAME_MAX], meth[AGENT_INTERP_NAME_MAX];
	int rc;

	if (!addr || (addr & 7))
		return -PROF_ECORRUPT;
	if (mem->read(mem->ctx, addr + vm->m_const, &cm, 8))
		return -EFAULT;
	if (check && cm != check)
		return -ESTALE;
	if (m->addr == addr && m->cm == cm) {
		*out = m;
		return 0;
	}
	hs_method_clear(m);
	if (vm->cm_sizeof > sizeof(cmb) || vm->cp_sizeof > sizeof(cpb))
		return -PROF_ECORRUPT;
	if (!cm || mem->read(mem->ctx, cm, cmb, vm->cm_sizeof))
		return -EFAULT;
	cp = hs_get64(cmb, vm->cm_constants);
	if (!cp || mem->read(mem->ctx, cp, cpb, vm->cp_sizeof))
		return -EFAULT;
	holder = hs_get64(cpb, vm->cp_holder);
	/* The method must be where its class keeps it: not a freed Method's memory. */
	idnum = hs_get16(cmb, vm->cm_idnum);
	if (!holder || mem->read(mem->ctx, holder + vm->ik_methods, &arr, 8) || !arr ||
	    mem->read(mem->ctx, arr + vm->arr_len, &alen, 4))
		return -EFAULT;
	if (idnum >= alen || alen > HS_METHODS_MAX)
		return -ESTALE;
	if (mem->read(mem->ctx, arr + vm->arr_data + 8 * (uint64_t)idnum, &at, 8))
		return -EFAULT;
	if (at != addr)
		return -ESTALE;
	if (mem->read(mem->ctx, holder + vm->k_name, &ksym, 8))
		return -EFAULT;
	if ((rc = hs_symbol(pv, mem, ksym, false, cls, sizeof(cls))) ||
	    (rc = hs_pool_symbol(pv, mem, cp, hs_get16(cmb, vm->cm_name_index), meth,
				 sizeof(meth))))
		return rc == -ENOENT ? -PROF_ECORRUPT : rc;
	snprintf(m->name, sizeof(m->name), "%.180s.%.70s", cls, meth);
	if (hs_pool_symbol(pv, mem, cp, hs_get16(cpb, vm->cp_source_file), m->file,
			   sizeof(m->file)) == -EFAULT)
		return -EFAULT;
	m->code_size = hs_get16(cmb, vm->cm_code_size);
	flags = hs_get16(cmb, vm->cm_flags);
	if (flags & 1) /* _has_linenumber_table: the table follows the bytecodes */
		hs_read_lines(mem, cm + vm->cm_sizeof + m->code_size, m);
	m->first_line = m->lines ? agent_hs_line_for_bci(m->lines, m->nlines, 0) : 0;
	m->addr = addr;
	m->cm = cm;
	*out = m;
	return 0;
}

/* Name @m at @bci into output slot @k. */
static void hs_put(struct hs_priv *pv, const struct hs_method *m, int64_t bci, size_t k,
		   struct agent_interp_name *out)
{
	memcpy(pv->out[k][0], m->name, sizeof(m->name));
	memcpy(pv->out[k][1], m->file, sizeof(m->file));
	out->function = pv->out[k][0];
	out->file = pv->out[k][1];
	out->start_line = m->first_line;
	out->line = bci >= 0 && bci < m->code_size && m->lines
			    ? agent_hs_line_for_bci(m->lines, m->nlines, (uint32_t)bci)
			    : 0;
}

static void hs_nmethod_clear(struct hs_nmethod *n)
{
	free(n->data);
	memset(n, 0, sizeof(*n));
}

/* The nmethod at @addr with compile id @check, its debug data read. */
static int hs_nmethod_get(struct hs_priv *pv, const struct agent_memreader *mem, uint64_t addr,
			  uint32_t check, const struct hs_nmethod **out)
{
	const struct agent_hs_vm *vm = &pv->vm;
	struct hs_nmethod *n = &pv->nmethods[(addr >> 4) * 0x9e3779b97f4a7c15ULL >> 57];
	uint8_t head[AGENT_HS_STRUCT_MAX];
	uint64_t meta, scopes, pcs, deps, name;
	uint32_t id;

	if (mem->read(mem->ctx, addr, head, vm->nm_sizeof))
		return -EFAULT;
	id = hs_get32(head, vm->nm_compile_id);
	name = hs_get64(head, vm->blob_name);
	if (id != check || hs_kind_of(pv, mem, name) != HS_K_NMETHOD)
		return -ESTALE;
	if (n->addr == addr && n->compile_id == id) {
		*out = n;
		return 0;
	}
	hs_nmethod_clear(n);
	/* JDK 17 nmethod.hpp: metadata at +_metadata_offset up to _scopes_data_begin (a
	 * pointer), scopes data up to +_scopes_pcs_offset, PcDescs up to +_dependencies_offset. */
	meta = addr + hs_get32(head, vm->nm_metadata);
	scopes = hs_get64(head, vm->nm_scopes_data);
	pcs = addr + hs_get32(head, vm->nm_scopes_pcs);
	deps = addr + hs_get32(head, vm->nm_deps);
	if (meta > scopes || scopes > pcs || pcs > deps || deps - meta > HS_NM_DATA_MAX ||
	    meta < addr + vm->nm_sizeof)
		return -PROF_ECORRUPT;
	n->data = xmalloc(deps - meta + 1);
	if (mem->read(mem->ctx, meta, n->data, deps - meta)) {
		hs_nmethod_clear(n);
		return -EFAULT;
	}
	n->nmeta = scopes - meta;
	n->nscopes = pcs - scopes;
	n->npcs = deps - pcs;
	n->method = hs_get64(head, vm->nm_method);
	n->addr = addr;
	n->compile_id = id;
	*out = n;
	return 0;
}

static int hs_name_compiled(struct hs_priv *pv, const struct agent_memreader *mem,
			    const struct agent_jit_frame *f, struct agent_interp_name *out,
			    size_t max)
{
	const struct hs_nmethod *n;
	const struct hs_method *m;
	struct {
		uint64_t method;
		int32_t bci;
	} lv[AGENT_JIT_MAX_INLINE];
	size_t nlv = 0;
	int64_t off;
	int rc;

	if (f->offset > UINT32_MAX || f->check > UINT32_MAX)
		return -PROF_ECORRUPT;
	rc = hs_nmethod_get(pv, mem, f->obj, (uint32_t)f->check, &n);
	if (rc)
		return rc;
	off = agent_hs_pcdesc_scope(&pv->vm, n->data + n->nmeta + n->nscopes, n->npcs,
				    (uint32_t)f->offset);
	while (off > 0 && nlv < PROF_MIN(max, (size_t)AGENT_JIT_MAX_INLINE)) {
		struct agent_hs_scope s;
		uint64_t meth;

		rc = agent_hs_scope_decode(n->data + n->nmeta, n->nscopes, (uint32_t)off, &s);
		if (rc)
			return rc;
		if (!s.method_index || (uint64_t)s.method_index * 8 > n->nmeta)
			return -PROF_ECORRUPT;
		memcpy(&meth, n->data + 8 * ((size_t)s.method_index - 1), 8);
		lv[nlv].method = meth;
		lv[nlv].bci = s.bci;
		nlv++;
		if (s.sender >= (uint64_t)off)
			break; /* senders are written before their callees: offsets go down */
		off = s.sender;
	}
	if (!nlv) {
		lv[0].method = n->method;
		lv[0].bci = -1;
		nlv = 1;
	}
	for (size_t k = 0; k < nlv; k++) {
		rc = hs_method_get(pv, mem, lv[k].method, 0, &m);
		if (rc)
			return rc == -ESTALE ? -PROF_ECORRUPT : rc;
		hs_put(pv, m, lv[k].bci, k, &out[k]);
	}
	return (int)nlv;
}

static int hs_name_frame(void *priv, const struct agent_memreader *mem,
			 const struct agent_jit_frame *f, struct agent_interp_name *out, size_t max)
{
	struct hs_priv *pv = priv;
	const struct hs_method *m;
	uint64_t name;
	int rc;

	if (!max)
		return -PROF_ECORRUPT;
	switch (f->kind) {
	case AGENT_JIT_INTERPRETED:
		rc = hs_method_get(pv, mem, f->obj, f->check, &m);
		if (rc)
			return rc;
		hs_put(pv, m, (int64_t)f->offset, 0, out);
		return 1;
	case AGENT_JIT_COMPILED:
		return hs_name_compiled(pv, mem, f, out, max);
	case AGENT_JIT_STUB:
		if (mem->read(mem->ctx, f->obj + pv->vm.blob_name, &name, 8))
			return -EFAULT;
		if (name != f->check)
			return -ESTALE;
		{
			/* Blob names are static strings of libjvm: read once per address. */
			struct hs_stub_name *sn =
				&pv->stub_names[((name * 0x9e3779b97f4a7c15ULL) >> 40) &
						(HS_STUB_NAMES - 1)];

			if (sn->ptr != name) {
				if (agent_mem_read_str(mem, name, sn->name, sizeof(sn->name)) ==
				    -EFAULT)
					return -EFAULT;
				sn->ptr = name;
			}
			snprintf(pv->stub, sizeof(pv->stub), "%s", sn->name);
		}
		out->function = pv->stub;
		out->file = "";
		out->line = out->start_line = 0;
		return 1;
	default:
		return -PROF_ECORRUPT;
	}
}

/* libjvm's executable PT_LOAD [*@lo, *@hi) (ELF virtual addresses). */
static int hs_text_range(const char *path, uint64_t *lo, uint64_t *hi)
{
	size_t n = 0;
	Elf *elf;
	int fd, rc = -PROF_EFORMAT;

	*lo = *hi = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -PROF_EFORMAT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf && !elf_getphdrnum(elf, &n)) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    !(ph.p_flags & PF_X))
				continue;
			*lo = ph.p_vaddr;
			*hi = ph.p_vaddr + ph.p_memsz;
			rc = 0;
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return rc;
}

/*
 * The JDK's version from JAVA_VERSION="..." in the release file of the
 * Java home holding @libjvm (<home>/lib/server/libjvm.so), for the
 * message of a refused JVM. 0, or -ENOENT.
 */
static int hs_release_version(const char *libjvm, char *out, size_t outsz)
{
	char path[PROFILE_PATH_LEN + 96], line[256];
	const char *cut = strstr(libjvm, "/lib/server/libjvm.so");
	struct stat st;
	FILE *f;
	int rc = -ENOENT, fd;

	if (!cut || snprintf(path, sizeof(path), "%.*s/release", (int)(cut - libjvm), libjvm) >=
			    (int)sizeof(path))
		return -ENOENT;
	/* A file in the target's tree: a FIFO or device there must not block the agent. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > 65536 ||
	    !(f = fdopen(fd, "r"))) {
		close(fd);
		return -ENOENT;
	}
	while (rc && fgets(line, sizeof(line), f)) {
		size_t n;

		if (strncmp(line, "JAVA_VERSION=\"", 14))
			continue;
		n = strcspn(line + 14, "\"\n");
		if (n && n < outsz && n < 32) {
			memcpy(out, line + 14, n);
			out[n] = '\0';
			rc = 0;
		}
	}
	fclose(f);
	return rc;
}

static int hs_attach(const char *path, uint64_t bias, const struct agent_memreader *mem,
		     struct agent_jit_attach *out)
{
	struct agent_interp_sym syms[] = {
		{ .name = "gHotSpotVMStructs" },
		{ .name = "gHotSpotVMStructEntryArrayStride" },
		{ .name = "gHotSpotVMStructEntryTypeNameOffset" },
		{ .name = "gHotSpotVMStructEntryFieldNameOffset" },
		{ .name = "gHotSpotVMStructEntryOffsetOffset" },
		{ .name = "gHotSpotVMStructEntryAddressOffset" },
		{ .name = "gHotSpotVMTypes" },
		{ .name = "gHotSpotVMTypeEntryArrayStride" },
		{ .name = "gHotSpotVMTypeEntryTypeNameOffset" },
		{ .name = "gHotSpotVMTypeEntrySizeOffset" },
	};
	struct agent_hs_tables t;
	struct agent_hs_vm vm;
	uint64_t lo, hi;
	int32_t major = 0, minor = 0, security = 0;
	char why[96];
	int rc;

	rc = agent_interp_elf_symbols(path, syms, PROF_ARRAY_SIZE(syms));
	if (rc)
		return rc == -PROF_EFORMAT ? -ENOENT : rc;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(syms); i++)
		if (!syms[i].found)
			return -ENOENT;
	t = (struct agent_hs_tables){
		.structs = bias + syms[0].value,
		.s_stride = bias + syms[1].value,
		.s_type = bias + syms[2].value,
		.s_field = bias + syms[3].value,
		.s_offset = bias + syms[4].value,
		.s_address = bias + syms[5].value,
		.types = bias + syms[6].value,
		.t_stride = bias + syms[7].value,
		.t_type = bias + syms[8].value,
		.t_size = bias + syms[9].value,
	};
	rc = agent_hs_vm_read(&t, mem, &vm, why, sizeof(why));
	if (rc == -ENOTSUP) {
		/* Not a layout read here: say which JDK from its release file, the field in the log. */
		log_info("agent jit hotspot %s: %s", path, why);
		if (hs_release_version(path, out->version, sizeof(out->version)))
			snprintf(out->version, sizeof(out->version), "%.*s", 31, why);
	}
	if (rc)
		return rc;
	if (mem->read(mem->ctx, vm.vm_major, &major, 4) ||
	    mem->read(mem->ctx, vm.vm_minor, &minor, 4) ||
	    mem->read(mem->ctx, vm.vm_security, &security, 4))
		return -EFAULT;
	snprintf(out->version, sizeof(out->version), "%d.%d.%d", major, minor, security);
	/* UNSIGNED5 and nmethod layouts as read here hold for 16 up to 20.0.14 (docs/runtimes.md, "OpenJDK HotSpot"). */
	if (major < 16 || major > 19)
		return -ENOTSUP;
	rc = hs_text_range(path, &lo, &hi);
	if (rc)
		return rc == -PROF_EFORMAT ? -ENOENT : rc;
	rc = agent_hs_priv_new(&vm, mem, lo + bias, hi + bias, &out->priv);
	if (rc)
		return rc;
	out->anon_exec = true;
	out->nranges = 0;
	return 0;
}

const struct agent_jit_ops agent_jit_hotspot = {
	.name = "jvm",
	.match = hs_match,
	.attach = hs_attach,
	.step = hs_step,
	.name_frame = hs_name_frame,
	.free = hs_free,
};
