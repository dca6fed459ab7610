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

#endif
