/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jit_v8.h - the parts of the V8 runtime (jit_v8.c, agent_jit_v8 in
 * jit.h) that tests and the fuzz target reach directly: the layout of
 * V8's objects and frames the agent reads, the decoders of V8's tables
 * (jit_v8_decode.c, which needs only base/), and a constructor of the
 * runtime's per-process state from a layout, so a fake memory image can
 * be stepped and named without a node binary.
 *
 * Layout facts are V8 11.3 (Node.js 20) on x86-64 without pointer
 * compression: tagged words are 8 bytes; a heap object's address has
 * tag 1 in its two low bits; a Smi keeps its 32-bit value in the upper
 * half. Offsets come from the v8dbg_* post-mortem constants node
 * carries; the ones the metadata lacks for 11.x are filled in as the
 * OpenTelemetry eBPF profiler does (interpreter/nodev8/v8.go,
 * readIntrospectionData) and were checked on node 20.20 by reading a
 * running node's heap. docs/runtimes.md, "Node.js / V8", has the facts.
 */
#ifndef PROF_AGENT_JIT_V8_H
#define PROF_AGENT_JIT_V8_H

#include "base/compat.h"
#include "agent/jit.h"

/*
 * struct agent_v8_layout - every offset (bytes from an object's untagged
 * address), instance type and constant the runtime uses.
 */
struct agent_v8_layout {
	uint32_t version; /* major << 24 | minor << 16 | build */
	/* frame slots, bytes from the frame pointer (negative: below it) */
	int32_t fp_marker, fp_function, fp_bytecode_array, fp_bytecode_offset;
	/* instance types */
	uint16_t t_jsfunction_first, t_jsfunction_last, t_sfi, t_code, t_bytecode_array,
		t_scope_info, t_script, t_fixed_array, t_byte_array, t_interpreter_data,
		first_nonstring;
	/* objects */
	uint16_t heapobject_map, map_instance_type;
	uint16_t jsfunction_shared, jsfunction_code;
	uint16_t sfi_function_data, sfi_name_or_scope_info, sfi_script_or_debug_info;
	uint16_t code_source_positions, code_instruction_start, code_flags, code_instruction_size,
		code_bytecode_or_interpreter_data;
	uint16_t bytecode_array_source_positions, bytecode_array_data;
	uint16_t interpreter_data_bytecode_array;
	uint16_t script_name, script_source, script_line_ends;
	uint16_t fixed_array_length, fixed_array_data;
	uint16_t scope_info_ncontext_locals, scope_info_first_vars; /* slot indexes after the map */
	uint32_t code_kind_mask, code_kind_shift, code_kind_baseline, code_kind_interpreted;
	/* strings */
	uint16_t string_length, seq_chars, cons_first, cons_second, thin_actual, sliced_parent,
		sliced_offset, external_resource_data;
	uint16_t str_rep_mask, str_enc_mask, str_one_byte, str_seq, str_cons, str_external,
		str_sliced, str_thin;
};

/**
 * agent_v8_layout_default() - @l filled with the values of V8 11.3.244 on
 * x86-64 (node 20), the ones attach starts from before the binary's own
 * constants replace them. Tests build fake heaps with it.
 */
void agent_v8_layout_default(struct agent_v8_layout *l);

/*
 * Raw frames agent_jit_v8's step returns (struct agent_jit_frame):
 *   AGENT_JIT_INTERPRETED  @obj the SharedFunctionInfo (tagged), @offset
 *                          the bytecode offset, @aux the JSFunction;
 *   AGENT_JIT_COMPILED     @obj the SharedFunctionInfo, @offset the pc
 *                          offset in the Code's instructions to look up
 *                          (a return address minus one) or
 *                          AGENT_V8_NO_OFFSET when the pc is not in the
 *                          function's current code, @aux the Code;
 *   AGENT_JIT_NONE         a typed frame (entry, exit, stub, builtin:
 *                          @check the frame type) or the leaf pc in a
 *                          callee's prologue; native naming stays.
 * @check of a JavaScript frame: the SharedFunctionInfo's
 * name_or_scope_info word at the tick; naming refuses (-ESTALE) an
 * object whose word differs (the GC moved the function and reused the
 * address). @flags: AGENT_V8_F_* below.
 */
#define AGENT_V8_NO_OFFSET  UINT64_MAX
#define AGENT_V8_F_BASELINE 1u /* compiled: Sparkplug code (no source position table) */

/**
 * agent_v8_priv_new() - the runtime's per-process state for layout @l
 * (copied), as attach makes it: pass it to agent_jit_v8's step,
 * name_frame and free. Never NULL.
 */
void *agent_v8_priv_new(const struct agent_v8_layout *l);

/**
 * agent_v8_srcpos_find() - the source position of code offset @off in
 * V8 source position table @tab (@n bytes): pairs of zigzag VLQ deltas
 * (code offset, with a negative value marking a non-statement entry;
 * source position), sorted by code offset, starting from code offset -1
 * and position 0 (V8 src/codegen/source-position-table.cc). The position
 * of the last entry at or before @off goes to *@pos: a raw SourcePosition
 * (bit 0 external; bits 1..30 script offset + 1; bits 31..46 inlining
 * id). 0; -ENOENT when no entry is at or before @off; -PROF_ECORRUPT for
 * a truncated or overlong number.
 */
int agent_v8_srcpos_find(const uint8_t *tab, size_t n, uint64_t off, uint64_t *pos);

/**
 * agent_v8_srcpos_script_offset() - the script offset (bytes) of raw
 * SourcePosition @pos, or -1 for an external or unknown position.
 */
int64_t agent_v8_srcpos_script_offset(uint64_t pos);

/**
 * struct agent_v8_scope - what agent_v8_scope_info_parse found: @name
 * (a tagged word: the first string-like heap object after the context
 * locals, or 0) and the function's @start / @end script offsets (-1 when
 * not found).
 */
struct agent_v8_scope {
	uint64_t name;
	int64_t start, end;
};

/**
 * agent_v8_scope_info_parse() - a ScopeInfo's slots @slots (@n tagged
 * words after its map) read heuristically, as the OpenTelemetry profiler
 * does for V8 before 12.8 (its layout has no post-mortem metadata):
 * skip @first_vars slots and twice the context-local count (Smi slot
 * @ncl); the first heap object for which @is_string says yes is the
 * name; the first two consecutive Smis start < end after it are the
 * position (before it, when no name follows: an anonymous function). @is_string gets @ctx and a tagged word. Always succeeds.
 */
void agent_v8_scope_info_parse(const uint64_t *slots, size_t n, unsigned first_vars, unsigned ncl,
			       bool (*is_string)(void *ctx, uint64_t tagged), void *ctx,
			       struct agent_v8_scope *out);

/**
 * agent_v8_utf16_to_utf8() - @n UTF-16LE code units at @in as UTF-8 into
 * @out (at most @max - 1 bytes and a NUL; @max >= 1): pairs of
 * surrogates combined, lone ones as U+FFFD; a character that does not
 * fit ends the output. Returns the bytes written.
 */
size_t agent_v8_utf16_to_utf8(const uint8_t *in, size_t n, char *out, size_t max);

#endif
