/* SPDX-License-Identifier: Apache-2.0 */
/*
 * interp_ruby.h - the decoders of CRuby's in-memory data that
 * interp_ruby.c uses, exposed for unit tests and the fuzz target (the
 * runtime itself is agent_interp_ruby, interp.h).
 */
#ifndef PROF_AGENT_INTERP_RUBY_H
#define PROF_AGENT_INTERP_RUBY_H

#include "base/compat.h"

#define AGENT_RB_STR_HEAD   40 /* bytes of an RString read: RBasic, then the heap or embedded part */
#define AGENT_RB_INSN_ENTRY 12 /* sizeof(struct iseq_insn_info_entry): line_no @0 (int) */
#define AGENT_RB_SUCC_IMM   54 /* positions in the succinct table's immediate part */
#define AGENT_RB_SUCC_HEAD  48 /* bytes of that part (54 entries of 7 bits, 9 per u64) */
#define AGENT_RB_SUCC_BLOCK 80 /* a 512-position block: rank u32 @0, small ranks u64 @8, bits @16 */

/**
 * agent_rb_succ_size() - the bytes of the succinct index table (3.1
 * iseq.c struct succ_index_table) of an iseq of @iseq_size VALUEs.
 */
size_t agent_rb_succ_size(uint64_t iseq_size);

/**
 * agent_rb_insn_line() - the line of instruction position @pos (VALUEs
 * from iseq_encoded, the frame's pc less one, as Ruby's calc_pos) of an
 * iseq whose insns_info has @nentries entries @entries (AGENT_RB_INSN_ENTRY
 * bytes each, little endian) and whose succinct index table is @succ
 * (@nsucc bytes; unused when @nentries is 1). Returns the line, or 0 when
 * @pos lies past the table or the table's rank names no entry. Never
 * reads past @nsucc or @nentries.
 */
int64_t agent_rb_insn_line(const uint8_t *succ, size_t nsucc, const uint8_t *entries,
			   size_t nentries, uint64_t pos);

/**
 * agent_rb_str_head() - decode the first AGENT_RB_STR_HEAD bytes @head
 * of an RString (3.1, x86-64): an embedded string's characters lie in
 * @head itself (*@emb points into it), a heap string's at *@ptr; *@len is
 * the length in bytes either way. 0, or -PROF_ECORRUPT when the object
 * is not a T_STRING or an embedded length is past the embedded room.
 */
int agent_rb_str_head(const uint8_t head[AGENT_RB_STR_HEAD], const uint8_t **emb, uint64_t *ptr,
		      uint64_t *len);

#define AGENT_RB_ST_HEAD \
	56 /* bytes of an st_table read: entries_start @32, _bound @40, entries @48 */
#define AGENT_RB_ST_ENTRY 24 /* st_table_entry: hash @0 (~0: deleted), key @8, record @16 */

/**
 * agent_rb_st_find() - the record of @key among the @n st_table entries
 * @ents (AGENT_RB_ST_ENTRY bytes each, as st_table.entries holds them from
 * entries_start): 0 and *@val, or -ENOENT. Deleted entries are skipped.
 */
int agent_rb_st_find(const uint8_t *ents, size_t n, uint64_t key, uint64_t *val);

/**
 * agent_rb_rel32_targets() - the targets of the x86-64 "call rel32"
 * (@op 0xe8) or "jmp rel32" (@op 0xe9) byte patterns in @code (@len
 * bytes at address @addr), at most @max into @out, in order, distinct.
 * A byte scan, not a decoder: callers check each target.
 */
size_t agent_rb_rel32_targets(const uint8_t *code, size_t len, uint64_t addr, uint8_t op,
			      uint64_t *out, size_t max);

/**
 * agent_rb_gsyms_candidates() - where Ruby's symbol table
 * (rb_symbols_t: last_id u32 @0, ids @16) may lie, from the code of a
 * function that reads both fields with RIP-relative operands: a 32-bit
 * "cmp" or "mov" of [rip+d1] (opcodes 0x39, 0x3b, 0x8b; optional REX
 * without W) followed within 16 bytes by a 64-bit "mov" of [rip+d2]
 * (REX.W 0x8b) that reads 16 bytes further. @code: @len bytes at @addr;
 * at most @max addresses into @out. Callers check each in memory.
 */
size_t agent_rb_gsyms_candidates(const uint8_t *code, size_t len, uint64_t addr, uint64_t *out,
				 size_t max);

#endif
