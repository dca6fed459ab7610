// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_tracectx.c - libFuzzer target for the agent's trace-context
 * decoders (src/agent/tracectx.c), whose input is another process's
 * memory: the input's head is taken as a struct profile_ctx_event as BPF
 * would send it (goroutine labels with any lengths and bytes, an OTel
 * record), decoded with and without an allow-list; the whole input is
 * also read as a .go.buildinfo section, as Elf64_Rela records searched
 * for a TLS variable's GOT slots, and as the memory of a process whose
 * slots those are (address = offset in the input). Decoding must give
 * NUL-terminated attributes within their buffers and valid UTF-8, the
 * version parser 0 with a "go" string or a negative code, a located
 * variable a negative static offset or a DTV module ID in 1..65535;
 * nothing is read outside the input. Build: scripts/fuzz.sh. Seeds: none
 * needed (the layouts are flat).
 */
#include "base/compat.h"
#include "base/utf8.h"
#include "agent/tracectx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct fuzz_mem {
	const uint8_t *b;
	size_t n;
};

/* The input as memory: address A is byte A of the input. */
static int fuzz_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct fuzz_mem *m = ctx;

	if (addr > m->n || len > m->n - addr)
		return -EFAULT;
	memcpy(buf, m->b + addr, len);
	return 0;
}

static void fuzz_tls(const uint8_t *data, size_t size)
{
	struct fuzz_mem fm = { data, size };
	const struct agent_memreader mem = { fuzz_read, &fm };
	struct agent_tracectx_tlsref ref;
	struct profile_ctx_proc p;
	uint32_t sym = size ? data[0] : 0;

	memset(&ref, 0, sizeof(ref));
	agent_tracectx_tls_relocs(data, size, sym, &ref);
	agent_tracectx_tls_relocs(data + size / 2, size - size / 2, sym, &ref);
	if (ref.kind > AGENT_TRACECTX_TLS_GD)
		__builtin_trap();
	memset(&p, 0, sizeof(p));
	if (agent_tracectx_tls_locate(&ref, 0, size > 1 ? data[1] : 0, &mem, &p) == 0 &&
	    (!(p.flags & PROFILE_CTX_OTEL) ||
	     ((p.flags & PROFILE_CTX_OTEL_DTV) ? p.otel_mod == 0 || p.otel_mod > 65535
					       : p.otel_tls_off >= 0)))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const allow[] = { "tenant", "http.route" };
	struct profile_ctx_event e;
	struct agent_tracectx_sample s;
	char v[32];

	memset(&e, 0, sizeof(e));
	memcpy(&e, data, PROF_MIN(size, sizeof(e)));
	for (int k = 0; k < 2; k++) {
		agent_tracectx_decode(&e, k ? allow : NULL, k ? 2 : 0, &s);
		if (s.nattrs > AGENT_TRACECTX_ATTRS)
			__builtin_trap();
		for (size_t i = 0; i < s.nattrs; i++) {
			size_t kl = strnlen(s.attrs[i].key, sizeof(s.attrs[i].key));
			size_t vl = strnlen(s.attrs[i].val, sizeof(s.attrs[i].val));

			if (kl == sizeof(s.attrs[i].key) || vl == sizeof(s.attrs[i].val) ||
			    !utf8_valid(s.attrs[i].key, kl) || !utf8_valid(s.attrs[i].val, vl))
				__builtin_trap();
		}
	}
	if (agent_tracectx_go_version(data, size, v, sizeof(v)) == 0 &&
	    (strnlen(v, sizeof(v)) == sizeof(v) || strncmp(v, "go", 2)))
		__builtin_trap();
	fuzz_tls(data, size);
	return 0;
}
