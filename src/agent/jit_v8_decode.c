// SPDX-License-Identifier: Apache-2.0
/*
 * jit_v8_decode.c - the decoders of V8 data the V8 runtime (jit_v8.c)
 * reads from a node process, each on bytes already copied out: source
 * position tables, ScopeInfo slots, two-byte strings; and the default
 * layout of V8 11.3. Nothing here reads memory, so the unit test and
 * the fuzz target run them on any bytes.
 *
 * Sources: V8 11.3 src/codegen/source-position-table.cc (entry
 * encoding), src/codegen/source-position.h (SourcePosition bits),
 * src/objects/scope-info.tq (slot order); the OpenTelemetry eBPF
 * profiler's interpreter/nodev8/v8.go (the metadata fallbacks, the
 * ScopeInfo heuristic); all as facts, in docs/runtimes.md, "Node.js / V8".
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/jit_v8.h"

void agent_v8_layout_default(struct agent_v8_layout *l)
{
	memset(l, 0, sizeof(*l));
	l->version = 11u << 24 | 3u << 16 | 244u;
	l->fp_marker = -8;
	l->fp_function = -16;
	l->fp_bytecode_array = -32;
	l->fp_bytecode_offset = -40;
	l->t_jsfunction_first = 2066; /* JS_FUNCTION_TYPE, then 14 constructor subtypes */
	l->t_jsfunction_last = 2066 + 14;
	l->t_sfi = 262;
	l->t_code = 245;
	l->t_bytecode_array = 191;
	l->t_scope_info = 261;
	l->t_script = 167;
	l->t_fixed_array = 175;
	l->t_byte_array = 190;
	l->t_interpreter_data = 159;
	l->first_nonstring = 128;
	l->heapobject_map = 0;
	l->map_instance_type = 12;
	l->jsfunction_shared = 24;
	l->jsfunction_code = 48; /* shared + 3 words before 11.7.368 */
	l->sfi_function_data = 8;
	l->sfi_name_or_scope_info = 16;
	l->sfi_script_or_debug_info = 32;
	/* Code in 11.1-11.3: relocation_info 8, deoptimization_data 16,
	 * source_position_table 24, instruction stream 32, instruction_start
	 * 40 (a pointer), flags 48 (u32), builtin_id 52 (i16),
	 * kind_specific_flags 54 (u16), instruction_size 56 (i32). */
	l->code_source_positions = 24;
	l->code_instruction_start = 40;
	l->code_flags = 48;
	l->code_instruction_size = 56;
	l->code_bytecode_or_interpreter_data = 16;
	l->bytecode_array_source_positions = 32; /* length + 3 words */
	l->bytecode_array_data = 54;
	l->interpreter_data_bytecode_array = 8;
	l->script_name = 16;
	l->script_source = 8;
	l->script_line_ends = 56;
	l->fixed_array_length = 8;
	l->fixed_array_data = 16;
	l->scope_info_ncontext_locals = 2;
	l->scope_info_first_vars = 3;
	l->code_kind_mask = 0xf;
	l->code_kind_shift = 0;
	l->code_kind_baseline = 11;
	l->code_kind_interpreted = 10;
	l->string_length = 12;
	l->seq_chars = 16;
	l->cons_first = 16;
	l->cons_second = 24;
	l->thin_actual = 16;
	l->sliced_parent = 16;
	l->sliced_offset = 24;
	l->external_resource_data = 24; /* the cached data pointer after the resource */
	l->str_rep_mask = 7;
	l->str_enc_mask = 8;
	l->str_one_byte = 8;
	l->str_seq = 0;
	l->str_cons = 1;
	l->str_external = 2;
	l->str_sliced = 3;
	l->str_thin = 5;
}

/* One zigzag VLQ (V8 src/base/vlq.h): 7 bits a byte, low first, 0x80 = more. */
static int v8_vlq(const uint8_t *tab, size_t n, size_t *i, int64_t *out)
{
	uint64_t v = 0;

	for (unsigned shift = 0;; shift += 7) {
		uint8_t b;

		if (*i >= n || shift > 63)
			return -PROF_ECORRUPT;
		b = tab[(*i)++];
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			break;
	}
	*out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
	return 0;
}

int agent_v8_srcpos_find(const uint8_t *tab, size_t n, uint64_t off, uint64_t *pos)
{
	int64_t code = -1, src = 0;
	bool found = false;
	size_t i = 0;

	while (i < n) {
		int64_t dc, ds;

		if (v8_vlq(tab, n, &i, &dc) || v8_vlq(tab, n, &i, &ds))
			return -PROF_ECORRUPT;
		/* a negative delta marks a non-statement position: -(delta + 1) */
		if (__builtin_add_overflow(code, dc >= 0 ? dc : -(dc + 1), &code))
			return -PROF_ECORRUPT;
		if (code > (int64_t)PROF_MIN(off, (uint64_t)INT64_MAX))
			break;
		src = (int64_t)((uint64_t)src + (uint64_t)ds);
		found = true;
	}
	if (!found)
		return -ENOENT;
	*pos = (uint64_t)src;
	return 0;
}

int64_t agent_v8_srcpos_script_offset(uint64_t pos)
{
	uint64_t so;

	if (pos & 1)
		return -1; /* external: a line in another file (wasm, natives) */
	so = (pos >> 1) & ((1u << 30) - 1);
	return so ? (int64_t)so - 1 : -1; /* stored + 1: kNoSourcePosition is 0 */
}

void agent_v8_scope_info_parse(const uint64_t *slots, size_t n, unsigned first_vars, unsigned ncl,
			       bool (*is_string)(void *ctx, uint64_t tagged), void *ctx,
			       struct agent_v8_scope *out)
{
	int64_t early_s = -1, early_e = -1; /* a pair before any name: used when no name follows */
	uint64_t prev = 1, locals;
	size_t i, from;

	out->name = 0;
	out->start = out->end = -1;
	if (ncl >= n || first_vars > n)
		return;
	locals = slots[ncl];
	if (locals & 1)
		return; /* not a Smi */
	locals >>= 32;
	if (locals > n)
		return;
	from = first_vars + 2 * locals;
	for (i = from; i < n; i++) {
		uint64_t cur = slots[i];

		if (!out->name && (cur & 3) == 1 && is_string(ctx, cur)) {
			out->name = cur;
			prev = 1;
			continue;
		}
		if (!(cur & 1) && !(prev & 1)) {
			int64_t s = (int64_t)(prev >> 32), e = (int64_t)(cur >> 32);

			if (s >= 0 && s < e) {
				if (out->name) {
					out->start = s;
					out->end = e;
					return;
				}
				if (early_s < 0) {
					early_s = s;
					early_e = e;
				}
			}
		}
		prev = cur;
	}
	out->start = early_s;
	out->end = early_e;
}

/* Append code point @cp as UTF-8 to @out at *@o if it fits before @max - 1. */
static bool v8_put_utf8(char *out, size_t max, size_t *o, uint32_t cp)
{
	uint8_t b[4];
	size_t k;

	if (cp < 0x80) {
		b[0] = (uint8_t)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (uint8_t)(0xc0 | cp >> 6);
		b[1] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		b[0] = (uint8_t)(0xe0 | cp >> 12);
		b[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		b[0] = (uint8_t)(0xf0 | cp >> 18);
		b[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (uint8_t)(0x80 | (cp & 0x3f));
		k = 4;
	}
	if (*o + k + 1 > max)
		return false;
	memcpy(out + *o, b, k);
	*o += k;
	return true;
}

size_t agent_v8_utf16_to_utf8(const uint8_t *in, size_t n, char *out, size_t max)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		uint32_t cp = (uint32_t)in[2 * i] | (uint32_t)in[2 * i + 1] << 8;

		if (cp >= 0xd800 && cp < 0xdc00 && i + 1 < n) {
			uint32_t lo = (uint32_t)in[2 * i + 2] | (uint32_t)in[2 * i + 3] << 8;

			if (lo >= 0xdc00 && lo < 0xe000) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				i++;
			} else {
				cp = 0xfffd;
			}
		} else if (cp >= 0xd800 && cp < 0xe000) {
			cp = 0xfffd;
		}
		if (!v8_put_utf8(out, max, &o, cp))
			break;
	}
	out[o] = 0;
	return o;
}
