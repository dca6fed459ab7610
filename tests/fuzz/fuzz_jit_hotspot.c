// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_jit_hotspot.c - libFuzzer target for the HotSpot runtime
 * (src/agent/jit_hotspot.c, jit_hotspot_decode.c): the input is a JVM's
 * memory as the agent would read it, 64 KiB at a fixed base, with the
 * JDK 17 layout (agent_hs_jdk17_vm). Its first 0x500 bytes are replaced
 * by a code cache header (one code heap over the rest of the image, its
 * segment map at 0x1000) and the blob names "nmethod", "Interpreter" and
 * "vtable chunks", so the fuzzer's bytes are the segment map, blobs,
 * nmethods, Methods, pools and Symbols; the stack copy is the image's
 * bytes from 0x8000. The registers of a sampled frame (from bytes
 * 0x500-0x517) are stepped up to 32 frames, each frame found named, and
 * frames of every kind made from bytes 0x518- are named too: every
 * answer must be a count with NUL-terminated strings or a negative code.
 * The stream decoders run on the whole input as well. Build:
 * scripts/fuzz.sh. Seeds: none needed.
 */
#include "base/compat.h"
#include "agent/jit.h"
#include "agent/jit_hotspot.h"

#define FZ_BASE	 0x100000000ULL
#define FZ_SIZE	 0x10000
#define FZ_HEAD	 0x500
#define FZ_CODE	 0x2000
#define FZ_STACK 0x8000

static uint8_t fz_img[FZ_SIZE];

static int fz_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < FZ_BASE || addr - FZ_BASE > FZ_SIZE || len > FZ_SIZE - (addr - FZ_BASE))
		return -EFAULT;
	memcpy(buf, fz_img + (addr - FZ_BASE), len);
	return 0;
}

static void fz_put64(uint32_t off, uint64_t v)
{
	memcpy(fz_img + off, &v, 8);
}

static void fz_check(const struct agent_interp_name *nm, int k)
{
	for (int i = 0; i < k; i++)
		if (strlen(nm[i].function) > 4096 || strlen(nm[i].file) > 4096)
			__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct agent_memreader mem = { fz_read, NULL };
	struct agent_interp_name nm[AGENT_JIT_MAX_INLINE];
	struct agent_hs_vm vm;
	struct agent_jit_stack stk = { 0 };
	struct agent_jit_regs r, c;
	struct agent_jit_frame f;
	uint64_t regs[3] = { 0 };
	void *pv;
	size_t i = 0;
	uint32_t v;

	/* The decoders alone, on the raw input. */
	while (agent_hs_u5(data, size, &i, &v) && i < 64)
		;
	(void)agent_hs_line_for_bci(data, size, size > 0 ? data[0] : 0);
	if (size >= 4) {
		struct agent_hs_scope s;

		(void)agent_hs_scope_decode(data, size, data[1] % (uint32_t)size, &s);
	}

	memset(fz_img, 0, sizeof(fz_img));
	memcpy(fz_img, data, PROF_MIN(size, sizeof(fz_img)));
	memset(fz_img, 0, FZ_HEAD);
	fz_put64(0x000, FZ_BASE + 0x100);	      /* &CodeCache::_heaps */
	fz_put64(0x100, 1);			      /* GrowableArray: _len */
	fz_put64(0x108, FZ_BASE + 0x200);	      /* _data */
	fz_put64(0x200, FZ_BASE + 0x300);	      /* the CodeHeap */
	fz_put64(0x300 + 8, FZ_BASE + FZ_CODE);	      /* _memory._low_boundary */
	fz_put64(0x300 + 16, FZ_BASE + FZ_SIZE);      /* _memory._high_boundary */
	fz_put64(0x300 + 24, FZ_BASE + FZ_CODE);      /* _memory._low */
	fz_put64(0x300 + 120 + 16, FZ_BASE + 0x1000); /* _segmap._low */
	fz_put64(0x300 + 256, 7);		      /* _log2_segment_size */
	memcpy(fz_img + 0x480, "nmethod", 8);
	memcpy(fz_img + 0x490, "Interpreter", 12);
	memcpy(fz_img + 0x4a0, "vtable chunks", 14);
	if (size >= FZ_HEAD + 24)
		memcpy(regs, data + FZ_HEAD, 24);

	agent_hs_jdk17_vm(&vm, FZ_BASE);
	if (agent_hs_priv_new(&vm, &mem, FZ_BASE + 0x400, FZ_BASE + 0x480, &pv))
		return 0;
	stk = (struct agent_jit_stack){ FZ_BASE + FZ_STACK, FZ_SIZE - FZ_STACK, fz_img + FZ_STACK };
	r = (struct agent_jit_regs){ FZ_BASE + FZ_CODE + (regs[0] % (FZ_SIZE - FZ_CODE)),
				     stk.base + (regs[1] % 0x1000), regs[2], (regs[1] >> 63) != 0 };
	for (int n = 0; n < 32; n++) {
		int k;

		if (agent_jit_hotspot.step(pv, &mem, &stk, &r, n == 0, &c, &f))
			break;
		k = agent_jit_hotspot.name_frame(pv, &mem, &f, nm, AGENT_JIT_MAX_INLINE);
		fz_check(nm, k);
		if (c.sp <= r.sp)
			break;
		r = c;
	}
	for (size_t off = FZ_HEAD + 24; off + 24 <= PROF_MIN(size, (size_t)FZ_HEAD + 24 * 9);
	     off += 24) {
		uint32_t obj;
		int k;

		memset(&f, 0, sizeof(f));
		f.kind = 1 + data[off] % 3;
		memcpy(&obj, data + off + 4, 4);
		f.obj = FZ_BASE + (obj % FZ_SIZE);
		memcpy(&f.offset, data + off + 8, 8);
		f.offset %= 0x20000;
		memcpy(&f.check, data + off + 16, 8);
		k = agent_jit_hotspot.name_frame(pv, &mem, &f, nm, 1 + data[off + 1] % 8);
		fz_check(nm, k);
	}
	agent_jit_hotspot.free(pv);
	return 0;
}
