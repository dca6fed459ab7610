// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_tracectx.c - libFuzzer target for the agent's trace-context
 * decoders (src/agent/tracectx.c), whose input is another process's
 * memory: the input's head is taken as a struct profile_ctx_event as BPF
 * would send it (goroutine labels with any lengths and bytes, an OTel
 * record), decoded with and without an allow-list; the whole input is
 * also read as a .go.buildinfo section. Decoding must give NUL-terminated
 * attributes within their buffers and valid UTF-8, the version parser 0
 * with a "go" string or a negative code; nothing is read outside the
 * input. Build: scripts/fuzz.sh. Seeds: none needed (the layout is flat).
 */
#include "base/compat.h"
#include "base/utf8.h"
#include "agent/tracectx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

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
	return 0;
}
