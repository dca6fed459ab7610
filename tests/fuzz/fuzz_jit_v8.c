// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_jit_v8.c - libFuzzer target for the V8 runtime
 * (src/agent/jit_v8.c): the input is a node process's memory as the
 * agent would read it, a region at a fixed base address, with the V8
 * 11.3 layout (agent_v8_layout_default). Its first 24 bytes give the
 * sampled pc and the stack and frame pointers (offsets into the region);
 * the stack copy is the region from sp. Up to 16 frames are stepped from
 * there and each JavaScript frame named; every answer must be 0 (names
 * NUL-terminated and bounded, the caller's sp above the frame's) or a
 * negative code. The decoders are also run on the whole input. Build:
 * scripts/fuzz.sh. Seeds: none needed (comparisons with the instance
 * types guide the fuzzer).
 */
#include "base/compat.h"
#include "agent/jit.h"
#include "agent/jit_v8.h"

#define FZ_BASE 0x100000u

struct fz_mem {
	const uint8_t *p;
	size_t n;
};

static int fz_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fz_mem *m = ctx;

	if (addr < FZ_BASE || addr - FZ_BASE > m->n || len > m->n - (addr - FZ_BASE))
		return -EFAULT;
	memcpy(buf, m->p + (addr - FZ_BASE), len);
	return 0;
}

static bool fz_is_str(void *ctx, uint64_t w)
{
	(void)ctx;
	return (w & 0xff) == 0x11;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_mem m = { data, size };
	struct agent_memreader mem = { fz_read, &m };
	struct agent_v8_layout l;
	struct agent_jit_stack stk = { 0 };
	struct agent_jit_regs r, c;
	struct agent_v8_scope sc;
	uint32_t hdr[6];
	uint64_t pos;
	char out[64];
	void *pv;

	(void)agent_v8_srcpos_find(data, size, size / 2, &pos);
	(void)agent_v8_utf16_to_utf8(data, size / 2, out, sizeof(out));
	if (size >= 8 * 16)
		agent_v8_scope_info_parse((const uint64_t *)(const void *)data, 16, data[0] % 8,
					  data[1] % 8, fz_is_str, NULL, &sc);
	if (size < sizeof(hdr))
		return 0;
	memcpy(hdr, data, sizeof(hdr));
	agent_v8_layout_default(&l);
	pv = agent_v8_priv_new(&l);
	r.pc = hdr[0];
	r.sp = FZ_BASE + hdr[1] % (size + 1);
	r.bp = FZ_BASE + hdr[2] % (size + 1);
	r.bp_ok = !(hdr[3] & 1);
	stk.base = r.sp;
	stk.len = (uint32_t)(size - (r.sp - FZ_BASE));
	stk.bytes = data + (r.sp - FZ_BASE);
	for (int d = 0; d < 16; d++) {
		struct agent_jit_frame f;
		struct agent_interp_name nm[AGENT_JIT_MAX_INLINE];
		int n;

		if (agent_jit_v8.step(pv, &mem, &stk, &r, d == 0, &c, &f))
			break;
		if (f.kind != AGENT_JIT_NONE) {
			n = agent_jit_v8.name_frame(pv, &mem, &f, nm, AGENT_JIT_MAX_INLINE);
			for (int k = 0; k < n; k++)
				if (strlen(nm[k].function) > 4096 || strlen(nm[k].file) > 4096)
					__builtin_trap();
			/* twice: the second from the caches */
			(void)agent_jit_v8.name_frame(pv, &mem, &f, nm, 1);
		}
		if (c.sp <= r.sp)
			break;
		r = c;
	}
	agent_jit_v8.free(pv);
	return 0;
}
