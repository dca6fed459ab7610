/* SPDX-License-Identifier: Apache-2.0 */
/*
 * frame.h - one symbolized frame: what every resolver in this layer
 * (DWARF, ELF symbol tables, Go pclntab) answers for an address, and what
 * the symbolizer hands to the query layer.
 *
 * An address inside inlined code yields several frames: the innermost
 * (the inlined callee whose code is at the address) first, then each
 * caller it was inlined into, up to the real (out-of-line) function last.
 * Each frame's file:line is where execution is *in that frame*: the
 * innermost frame's from the line table, every outer frame's from the
 * call site (DW_AT_call_file / DW_AT_call_line) of the frame inside it.
 * This is what `addr2line -i -f` prints, in the same order.
 */
#ifndef PROF_SYMBOLIZE_FRAME_H
#define PROF_SYMBOLIZE_FRAME_H

#include "base/compat.h"

#define SYM_FRAME_NAME_MAX 1024 /* bytes incl. NUL; longer names are truncated */
#define SYM_FRAME_FILE_MAX 512
#define SYM_FRAMES_MAX	   64 /* deepest inline chain reported; deeper ones are cut outermost */

/** enum sym_source - where a frame's name came from (lowest quality first). */
enum sym_source {
	SYM_SRC_NONE = 0,
	SYM_SRC_DYNSYM,	   /* exported symbols only (.dynsym) */
	SYM_SRC_SYMTAB,	   /* full ELF symbol table */
	SYM_SRC_GOPCLNTAB, /* Go's runtime symbol table */
	SYM_SRC_DWARF,	   /* DWARF subprogram / inlined_subroutine */
};

/**
 * struct sym_frame - a function name (demangled when it was a C++ or Rust
 * symbol), its source file ("" when unknown) and line (0 when unknown).
 */
struct sym_frame {
	char name[SYM_FRAME_NAME_MAX];
	char file[SYM_FRAME_FILE_MAX];
	uint32_t line;
	uint8_t source; /* enum sym_source */
};

/** sym_source_name() - "dwarf", "symtab", ... for @s (static string). */
const char *sym_source_name(enum sym_source s);

#endif
