/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jit_hotspot.h - the parts of the HotSpot runtime (agent_jit_hotspot,
 * jit.h) that tests, the fuzz target and tests/tools/jvmwalk use alone:
 * the layout read from the JVM's own introspection tables, the decoders
 * of its compressed streams (jit_hotspot_decode.c, base/ only) and a
 * runtime state built from a layout without an ELF file.
 *
 * Layout facts (JDK 17, x86-64) come from the exported gHotSpotVMStructs
 * and gHotSpotVMTypes tables of the running JVM (hotspot's
 * runtime/vmStructs.cpp); the stream formats are hotspot's
 * code/compressedStream.cpp (UNSIGNED5, JDK 9-20.0.14),
 * oops/method.cpp (CompressedLineNumberReadStream) and
 * code/debugInfo.cpp + code/scopeDesc.cpp (scope records); the facts are
 * collected in docs/runtimes.md, "OpenJDK HotSpot".
 */
#ifndef PROF_AGENT_JIT_HOTSPOT_H
#define PROF_AGENT_JIT_HOTSPOT_H

#include "base/compat.h"
#include "agent/interp.h"

#define AGENT_HS_MAX_HEAPS  8
#define AGENT_HS_STRUCT_MAX 1024 /* larger types (nmethod, CodeHeap ...) are refused */

/**
 * struct agent_hs_vm - what the JVM's tables say: static addresses (in
 * the process: @heaps = &CodeCache::_heaps, @vm_release ... ) and field
 * offsets / type sizes in bytes. Every field is filled by
 * agent_hs_vm_read, or the read fails.
 */
struct agent_hs_vm {
	uint64_t heaps, vm_release, vm_major, vm_minor, vm_security;
	uint32_t blob_name, blob_frame_complete, blob_frame_size, blob_code_begin, blob_code_end,
		blob_size;
	uint32_t nm_method, nm_scopes_data, nm_deopt, nm_compile_id, nm_orig_pc, nm_metadata,
		nm_scopes_pcs, nm_deps, nm_sizeof;
	uint32_t heap_memory, heap_segmap, heap_log2, heap_sizeof;
	uint32_t vs_low_boundary, vs_high_boundary, vs_low, vs_sizeof;
	uint32_t hb_sizeof, hb_used;
	uint32_t ga_len, ga_data;
	uint32_t m_const, m_sizeof;
	uint32_t cm_constants, cm_flags, cm_code_size, cm_name_index, cm_idnum, cm_sizeof;
	uint32_t cp_holder, cp_source_file, cp_sizeof;
	uint32_t k_name, ik_methods, ik_sizeof, arr_len, arr_data;
	uint32_t sym_length, sym_body;
	uint32_t pc_pc_offset, pc_scope_offset, pc_sizeof;
};

/**
 * struct agent_hs_tables - where the introspection tables are: runtime
 * addresses of the exported variables gHotSpotVMStructs (a pointer to
 * the entry array), gHotSpotVMStructEntry{ArrayStride, TypeNameOffset,
 * FieldNameOffset, OffsetOffset, AddressOffset}, gHotSpotVMTypes and
 * gHotSpotVMTypeEntry{ArrayStride, TypeNameOffset, SizeOffset}.
 */
struct agent_hs_tables {
	uint64_t structs, s_stride, s_type, s_field, s_offset, s_address;
	uint64_t types, t_stride, t_type, t_size;
};

/**
 * agent_hs_vm_read() - read the layout from the tables @t through @mem
 * into @out. 0; -EAGAIN when the tables are not filled in yet (the JVM
 * fills them at start-up); -ENOTSUP when a field is missing or an offset
 * lies outside its type (@why, @nwhy: which, "nmethod._compile_id");
 * -EFAULT when unreadable; -PROF_ECORRUPT for a stride that makes no
 * sense. Reads at most 1 << 16 entries of each table.
 */
int agent_hs_vm_read(const struct agent_hs_tables *t, const struct agent_memreader *mem,
		     struct agent_hs_vm *out, char *why, size_t nwhy);

/**
 * agent_hs_u5() - one UNSIGNED5 number (hotspot CompressedReadStream
 * read_int, JDK 9-20.0.14: bytes below 192 end it, at most 5 bytes, low
 * 6-bit group first) from @p[*@i] (@n bytes) into *@v; advances *@i.
 * false when the buffer ends inside the number.
 */
bool agent_hs_u5(const uint8_t *p, size_t n, size_t *i, uint32_t *v);

/**
 * agent_hs_line_for_bci() - the source line of bytecode index @bci from
 * a compressed line number table @t (@n bytes: the bytes after a
 * ConstMethod's bytecodes; pairs of (bci, line) deltas, one byte
 * (bci << 3 | line) or 0xff and two signed UNSIGNED5 numbers, 0 ends it),
 * as Method::line_number_from_bci: the exact bci's line, else the line of
 * the largest bci below it. 0 when none (or the table is corrupt).
 * Pairs read are bounded by @n.
 */
int64_t agent_hs_line_for_bci(const uint8_t *t, size_t n, uint32_t bci);

/**
 * agent_hs_pcdesc_scope() - the scope decode offset of the PcDesc that
 * describes pc offset @off in the scopes_pcs array @pcs (@n bytes,
 * records of @vm->pc_sizeof bytes sorted by pc offset): the first one
 * whose pc offset is above @off (HotSpot's pc_desc_near, as JFR uses it
 * for the sampled pc; a return address is passed one byte back so the
 * call's own PcDesc is found). -1 when none has scope data.
 */
int64_t agent_hs_pcdesc_scope(const struct agent_hs_vm *vm, const uint8_t *pcs, size_t n,
			      uint32_t off);

/**
 * struct agent_hs_scope - one scope record: @sender (decode offset of the
 * caller's scope, 0 = none: the outermost method), @method_index (into
 * the nmethod's metadata, 1-based; 0 = none), @bci (-1 = method entry).
 */
struct agent_hs_scope {
	uint32_t sender, method_index;
	int32_t bci;
};

/**
 * agent_hs_scope_decode() - the scope record at decode offset @off of
 * scopes data @d (@n bytes): three UNSIGNED5 numbers (ScopeDesc
 * decode_body: sender offset, method index, bci + 1). 0, or
 * -PROF_ECORRUPT when @off is outside or the record is cut.
 */
int agent_hs_scope_decode(const uint8_t *d, size_t n, uint32_t off, struct agent_hs_scope *out);

/**
 * agent_hs_class_name() - a JVM class name (Symbol bytes @s, @n) as Java
 * writes it into @out (@max >= 1 bytes, cut to fit, NUL-terminated):
 * '/' becomes '.', and a hidden class's "+0x..." address suffix (JEP
 * 371) is dropped so names do not multiply per run. Bytes other than
 * printable ASCII become '?'.
 */
void agent_hs_class_name(const uint8_t *s, size_t n, char *out, size_t max);

/**
 * agent_hs_priv_new() - a runtime state for agent_jit_hotspot's step and
 * name_frame from layout @vm, reading the code heaps through @mem
 * (&CodeCache::_heaps at @vm->heaps). @text_lo, @text_hi: libjvm's code
 * (return addresses there are valid callers of stubs; 0, 0 = none).
 * 0 and *@out (freed with agent_jit_hotspot.free); -EAGAIN when the code
 * cache is not set up yet; -EFAULT; -PROF_ECORRUPT.
 */
int agent_hs_priv_new(const struct agent_hs_vm *vm, const struct agent_memreader *mem,
		      uint64_t text_lo, uint64_t text_hi, void **out);

/**
 * agent_hs_jdk17_vm() - the layout of Debian's OpenJDK 17.0.15 on
 * x86-64 as its tables give it (for tests and the fuzz target; the
 * runtime always reads the process's own tables). @heaps: the address to
 * use for &CodeCache::_heaps.
 */
void agent_hs_jdk17_vm(struct agent_hs_vm *vm, uint64_t heaps);

#endif
