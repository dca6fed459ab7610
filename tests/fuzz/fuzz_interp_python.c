// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_interp_python.c - libFuzzer target for the agent's decoders of
 * CPython memory (src/agent/interp_python.c): the input is another
 * process's memory as the agent would read it, a region at a fixed base
 * address. Frames whose object addresses, instruction indexes and check
 * values come from the first bytes are named with the 3.11 and the 3.12
 * layouts; every answer must be 0 with NUL-terminated strings or a
 * negative code, and the location table decoder is also run on the whole
 * input. Build: scripts/fuzz.sh. Seeds: none needed (any bytes).
 */
#include "base/compat.h"
#include "agent/interp.h"
#include "agent/interp_python.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_mem m = { data, size };
	struct agent_memreader mem = { fz_read, &m };

	(void)agent_py_linetable_line(data, size, 1, size / 2);
	for (int minor = 11; minor <= 12; minor++) {
		uint64_t code_type = 0;
		void *pv;

		if (size >= 8)
			memcpy(&code_type, data, 8);
		pv = agent_py_namer_new(minor, code_type);
		for (size_t k = 0; k + 24 <= size && k < 8 * 24; k += 24) {
			struct profile_interp_frame f = { 0 };
			struct agent_interp_name nm;
			uint32_t off;

			memcpy(&off, data + k + 8, 4);
			f.addr = FZ_BASE + (off % (size + 1));
			memcpy(&f.aux, data + k + 12, 8);
			memcpy(&f.check, data + k + 20, 4);
			if (agent_interp_python.name_frame(pv, &mem, &f, &nm) == 0) {
				if (strlen(nm.function) > 4096 || strlen(nm.file) > 4096)
					__builtin_trap();
			}
		}
		agent_interp_python.free(pv);
	}
	return 0;
}
