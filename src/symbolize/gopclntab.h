/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gopclntab.h - Go's own symbol table (.gopclntab, "pclntab"), which every
 * Go binary keeps because the runtime needs it for stack traces and the
 * garbage collector: it survives `strip` and `go build -ldflags=-s -w`, so
 * a stripped Go binary still symbolizes (function, file, line).
 *
 * Layout handled (little-endian, as on amd64 and arm64; from Go's
 * src/runtime/symtab.go and src/debug/gosym/pclntab.go):
 *
 *   header   magic u32 (0xfffffff1 Go 1.20+, 0xfffffff0 Go 1.18-1.19,
 *            0xfffffffa Go 1.16-1.17; 0xfffffffb, Go 1.2-1.15, is refused),
 *            0, 0, quantum u8 (instruction size: 1 on x86), ptrsize u8,
 *            then ptrsize words: nfunc, nfiles, [textStart, 1.18+ only],
 *            funcnameOffset, cuOffset, filetabOffset, pctabOffset,
 *            pclnOffset (the functab), all offsets from the header start
 *   functab  nfunc+1 (entry, funcoff) pairs sorted by entry, the last one
 *            the end of the text: 1.18+ u32 entry offsets from textStart,
 *            1.16 ptrsize absolute pcs; funcoff from the functab start
 *   _func    entry (u32 offset, or a ptrsize pc in 1.16), nameOff i32
 *            (into funcnametab), args, deferreturn, pcsp, pcfile, pcln
 *            (u32 offsets into pctab), npcdata, cuOffset (u32), ...
 *   pc-value tables  (pctab + off): pairs of uvarint zig-zag value delta
 *            and uvarint pc delta (times quantum), value starting at -1;
 *            a value delta of 0 ends the table (except the first pair)
 *   files    pcfile gives a file number; cutab[cuOffset + n] (u32) is the
 *            offset of its NUL-terminated name in filetab
 *
 * Inlined Go frames: a function's FUNCDATA_InlTree (an array of
 * inlinedCall records) lives in go:func.* data, at an offset from
 * moduledata.gofunc (in .rodata with Go 1.19; Go 1.26's linker writes it
 * into .gopclntab after the tables); PCDATA_InlTreeIndex maps each pc to its
 * tree entry (runtime/symtab.go, runtime/traceback.go). With those bytes
 * given (sym_gopclntab_set_funcdata, Go 1.18+), lookups expand the inline
 * chain as Go's own tracebacks do.
 *
 * The object points into the bytes given to sym_gopclntab_parse, which
 * must outlive it; it is immutable after parsing (thread-safe lookups).
 * Every offset read from the table is bounds-checked (fuzzed:
 * tests/fuzz/fuzz_gopclntab.c).
 */
#ifndef PROF_SYMBOLIZE_GOPCLNTAB_H
#define PROF_SYMBOLIZE_GOPCLNTAB_H

#include "base/compat.h"
#include "base/err.h"
#include "symbolize/frame.h"

struct sym_gopclntab;

/**
 * sym_gopclntab_parse() - check the header of the @n bytes at @data and
 * index them. @text_vaddr is the address of .text, used when the table's
 * textStart is 0 (relocated at run time in PIE builds; never stored by
 * Go 1.26, whose runtime uses moduledata.text). Errors:
 * -PROF_EFORMAT (not a pclntab), -PROF_EUNSUPPORTED (a version or byte
 * order not handled: the magic is named), -PROF_ECORRUPT (a table lies
 * outside the data). *@out is the caller's (sym_gopclntab_free).
 */
int sym_gopclntab_parse(const uint8_t *data, size_t n, uint64_t text_vaddr,
			struct sym_gopclntab **out, struct prof_err *err);

/** sym_gopclntab_free() - NULL is allowed; the data is not the object's. */
void sym_gopclntab_free(struct sym_gopclntab *g);

/**
 * sym_gopclntab_lookup() - the function containing @pc (an ELF virtual
 * address) with its file and line, into @out (source SYM_SRC_GOPCLNTAB).
 * 1 when found, 0 when @pc is outside the table or the entry is damaged.
 */
int sym_gopclntab_lookup(const struct sym_gopclntab *g, uint64_t pc, struct sym_frame *out);

/**
 * sym_gopclntab_lookup_frames() - the frames of @pc innermost first: each
 * inlined callee (name, file, line), then the function itself at the call
 * site; at most @max. Without funcdata this is sym_gopclntab_lookup.
 * Returns the number of frames, 0 when @pc is not in the table.
 */
int sym_gopclntab_lookup_frames(const struct sym_gopclntab *g, uint64_t pc, struct sym_frame *out,
				size_t max);

/**
 * sym_gopclntab_set_funcdata() - the @n bytes starting at the binary's
 * moduledata.gofunc address (go:func.*: sym_elf_gofunc), which must outlive
 * @g; every read is bounds-checked against @n. NULL turns expansion off.
 */
void sym_gopclntab_set_funcdata(struct sym_gopclntab *g, const uint8_t *data, size_t n);

/** sym_gopclntab_nfuncs() - number of functions in the table. */
size_t sym_gopclntab_nfuncs(const struct sym_gopclntab *g);

#endif
