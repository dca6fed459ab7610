// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_interp_ruby.c - libFuzzer target for the agent's decoders of Ruby
 * 3.1 memory (src/agent/interp_ruby.c): the succinct index table and
 * instruction-info entries of an iseq (line lookup) and RString heads,
 * from any bytes: the input is split into a table, entries and a string
 * head; every position's line must be found without reading past either
 * buffer, and a string head decodes to a length inside the head when
 * embedded. Build: scripts/fuzz.sh. Seeds: none needed.
 */
#include "base/compat.h"
#include "agent/interp_ruby.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t head[AGENT_RB_STR_HEAD] = { 0 };
	const uint8_t *emb = NULL;
	uint64_t ptr = 0, len = 0;
	size_t split, nentries;

	if (size < 4)
		return 0;
	memcpy(head, data, PROF_MIN(size, sizeof(head)));
	if (agent_rb_str_head(head, &emb, &ptr, &len) == 0 && emb &&
	    (emb < head || emb + len > head + sizeof(head)))
		__builtin_trap();
	split = data[0] % (size + 1);
	nentries = (size - split) / AGENT_RB_INSN_ENTRY;
	for (uint64_t pos = 0; pos < 64; pos++)
		(void)agent_rb_insn_line(data, split, data + split, nentries, pos);
	(void)agent_rb_succ_size(size);
	return 0;
}
