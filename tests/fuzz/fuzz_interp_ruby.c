// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_interp_ruby.c - libFuzzer target for the agent's decoders of Ruby
 * 3.1 memory (src/agent/interp_ruby.c): the succinct index table and
 * instruction-info entries of an iseq (line lookup) and RString heads,
 * from any bytes: the input is split into a table, entries and a string
 * head; every position's line must be found without reading past either
 * buffer, and a string head decodes to a length inside the head when
 * embedded. The same bytes are also code for the x86-64 scans that find
 * the symbol table and rb_vm_exec's callees (no read past the input, no
 * more results than room, every symbol-table candidate backed by its
 * two RIP-relative loads), and st_table entries for the ivar lookup.
 * Build: scripts/fuzz.sh. Seeds: none needed.
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
	{
		uint64_t out[4], v = 0, addr = 0x7f0000001000;

		if (agent_rb_rel32_targets(data, size, addr, 0xe8, out, 4) > 4 ||
		    agent_rb_rel32_targets(data, size, addr, 0xe9, out, 4) > 4)
			__builtin_trap();
		for (size_t i = 0, n = agent_rb_gsyms_candidates(data, size, addr, out, 4); i < n;
		     i++)
			if (out[i] < addr - (1ULL << 31) || out[i] > addr + size + (1ULL << 31))
				__builtin_trap();
		if (!agent_rb_st_find(data, size / AGENT_RB_ST_ENTRY, data[0], &v)) {
			bool seen = false;

			for (size_t i = 0; i < size / AGENT_RB_ST_ENTRY; i++) {
				uint64_t rec;

				memcpy(&rec, data + i * AGENT_RB_ST_ENTRY + 16, 8);
				seen |= rec == v;
			}
			if (!seen)
				__builtin_trap();
		}
	}
	return 0;
}
