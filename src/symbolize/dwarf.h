/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dwarf.h - address -> function, file, line and inline chain from the
 * DWARF of one ELF file (libdw), the way `addr2line -i -f` answers it.
 *
 * The file is an executable or shared library with its debug info, or a
 * separate debug file (objcopy --only-keep-debug, /usr/lib/debug/...):
 * both carry the addresses the binary was linked at, which are the ELF
 * virtual addresses profd's native frames use (elf.h), so no bias applies.
 *
 * Index, built lazily to keep opening cheap:
 *   - at open, each compile unit's address ranges (DW_AT_ranges or
 *     low/high pc), sorted, so an address finds its CU by binary search;
 *   - on a CU's first lookup, its functions (DW_TAG_subprogram with code,
 *     also inside namespaces, classes and modules as C++ and Rust nest
 *     them) with their ranges, sorted;
 *   - a lookup then walks only the one function's DIE subtree down
 *     through the lexical blocks and DW_TAG_inlined_subroutine DIEs
 *     that contain the address: that path is the inline chain.
 * Names come from DW_AT_linkage_name (demangled) else DW_AT_name, through
 * DW_AT_abstract_origin and DW_AT_specification; the innermost frame's
 * line from the CU's line table, each outer frame's from the inlined
 * DIE's DW_AT_call_file / DW_AT_call_line.
 *
 * Not thread-safe (lazy index, libdw's per-CU caches): one user at a
 * time (the symbolizer holds its lock). The file stays open (mmap'd by
 * libelf) until sym_dwarf_free.
 *
 * Sources: DWARF 5 standard sections 3.3.8 (inlined subroutines), 2.17
 * (code addresses and ranges), 6.2 (line table); elfutils libdw.h and
 * src/addr2line.c (print_inline).
 */
#ifndef PROF_SYMBOLIZE_DWARF_H
#define PROF_SYMBOLIZE_DWARF_H

#include "base/compat.h"
#include "base/err.h"
#include "symbolize/frame.h"

struct sym_dwarf;

/**
 * sym_dwarf_open() - open @path and index its compile units. On success
 * *@out is the caller's (sym_dwarf_free). Errors: -errno when the file
 * cannot be opened; -PROF_EFORMAT when it is not ELF; -PROF_ENOTFOUND when
 * it has no DWARF (.debug_info absent, empty or stripped to NOBITS);
 * -PROF_ECORRUPT when libdw rejects it (@err gives libdw's reason).
 */
int sym_dwarf_open(const char *path, struct sym_dwarf **out, struct prof_err *err);

/** sym_dwarf_free() - close the file and free the index; NULL is allowed. */
void sym_dwarf_free(struct sym_dwarf *d);

/**
 * sym_dwarf_lookup() - the frames at ELF virtual address @vaddr,
 * innermost first, into @out[0..@max) (see frame.h for what each frame's
 * file:line means; a chain deeper than @max keeps its innermost @max
 * frames). Returns the number of frames written, 0 when no function's
 * DWARF covers @vaddr (then a symbol table may still know it).
 */
int sym_dwarf_lookup(struct sym_dwarf *d, uint64_t vaddr, struct sym_frame *out, size_t max);

/** sym_dwarf_ncus() - compile units with code addresses (tests, stats). */
size_t sym_dwarf_ncus(const struct sym_dwarf *d);

#endif
