/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elf.h - reading what profiling needs from an ELF file (libelf):
 * the GNU build ID, the PT_LOAD segments (file offset -> virtual address,
 * which handles PIEs and shared libraries whose executable segment's file
 * offset differs from its address), and function symbols from .symtab,
 * falling back to .dynsym, for address -> name lookups.
 *
 * Address convention used across profd (the OpenTelemetry eBPF profiler's,
 * docs/formats.md "What the OTel eBPF profiler sends"): native frame addresses are ELF virtual addresses
 * of the file, not runtime addresses, so the same code has the same
 * address in every process.
 *
 * A struct sym_elf is immutable after sym_elf_open and may be shared
 * between threads for lookups.
 */
#ifndef PROF_SYMBOLIZE_ELF_H
#define PROF_SYMBOLIZE_ELF_H

#include "base/compat.h"
#include "base/err.h"
#include "symbolize/frame.h"

struct sym_elf;

/**
 * sym_elf_open() - open and index @path. On success *@out is a new object
 * the caller frees with sym_elf_free. Errors: -errno when the file cannot
 * be read; -PROF_EFORMAT when it is not ELF; -PROF_ECORRUPT when its
 * headers are truncated or inconsistent, or a section's bits extend past
 * the end of the file (@err says which).
 */
int sym_elf_open(const char *path, struct sym_elf **out, struct prof_err *err);

/**
 * sym_elf_open_mem() - like sym_elf_open, for an ELF image held in memory
 * (a debuginfo upload, a fuzz input). Everything needed is copied out, so
 * @data need only live during the call. Same errors, minus -errno.
 */
int sym_elf_open_mem(const void *data, size_t n, struct sym_elf **out, struct prof_err *err);

/* Largest file opened for symbols (a debuginfo upload is capped at 4 GiB). */
#define SYM_ELF_MAX_FILE ((uint64_t)8 << 30)

/**
 * sym_open_regular() - open @path read-only if it is a regular file of
 * at most @max_size bytes: stat() first, so a device or directory is
 * never opened and a FIFO never waited on, then open with O_NONBLOCK and
 * fstat() to see that it is still that regular file. Returns the fd
 * (close-on-exec; the caller closes it) with *@size set, or -errno,
 * -PROF_EFORMAT (not a regular file) or -PROF_ETOOBIG, with @err naming
 * @path. Thread-safe.
 */
int sym_open_regular(const char *path, uint64_t max_size, uint64_t *size, struct prof_err *err);

/** sym_elf_free() - release @e; NULL is allowed. */
void sym_elf_free(struct sym_elf *e);

/**
 * struct sym_elf_info - what the file offers for symbolization:
 * @has_dwarf:     a non-empty .debug_info (or .zdebug_info) with file bits
 * @has_text:      code with file bits (false for a separate debug file,
 *                 whose .text is SHT_NOBITS)
 * @has_gopclntab: a Go .gopclntab section (sym_elf_gopclntab)
 * @symbols:       SYM_SRC_SYMTAB, SYM_SRC_DYNSYM (only .dynsym) or
 *                 SYM_SRC_NONE, for the symbols sym_elf_lookup uses
 * @debuglink:     the .gnu_debuglink file name (no directory), or NULL;
 *                 @debuglink_crc its CRC-32 (gdb manual, "Separate Debug
 *                 Files"), in the file's byte order as stored
 * @text_vaddr:    address of .text (0 when absent)
 * Lent until sym_elf_free.
 */
struct sym_elf_info {
	bool has_dwarf, has_text, has_gopclntab;
	uint8_t symbols; /* enum sym_source */
	const char *debuglink;
	uint32_t debuglink_crc;
	uint64_t text_vaddr;
};

/** sym_elf_info() - the file's struct sym_elf_info (lent). */
const struct sym_elf_info *sym_elf_info(const struct sym_elf *e);

/** sym_elf_gopclntab() - the .gopclntab bytes (*@n of them; lent), or NULL. */
const uint8_t *sym_elf_gopclntab(const struct sym_elf *e, size_t *n);

/**
 * sym_elf_gofunc() - the bytes from a Go binary's moduledata.gofunc
 * (go:func.*, holding funcdata such as inline trees) to the end of the
 * section that holds them (*@n of them; lent), or NULL when the file is
 * not a Go 1.18+ binary or its moduledata could not be found (it is found
 * through its first word, the .gopclntab address, in .go.module or, from
 * older linkers, .noptrdata; position-dependent binaries only, since a
 * PIE's moduledata words are filled in by relocations at run time).
 */
const uint8_t *sym_elf_gofunc(const struct sym_elf *e, size_t *n);

/** sym_elf_build_id() - GNU build ID as lowercase hex, "" when absent. Lent. */
const char *sym_elf_build_id(const struct sym_elf *e);

/**
 * sym_elf_offset_to_vaddr() - map a file offset inside a PT_LOAD segment
 * to the ELF virtual address (p_vaddr + off - p_offset). 0 or -ENOENT.
 */
int sym_elf_offset_to_vaddr(const struct sym_elf *e, uint64_t off, uint64_t *vaddr);

/**
 * sym_elf_maps_offsets() - true when an executable PT_LOAD segment has
 * file bytes (p_filesz > 0), so sym_elf_offset_to_vaddr can place code;
 * false for a separate debug file made by objcopy --only-keep-debug,
 * whose code segments keep their addresses but not their file offsets.
 */
bool sym_elf_maps_offsets(const struct sym_elf *e);

/**
 * sym_elf_lookup() - name of the function symbol containing @vaddr (its
 * [st_value, st_value + st_size); a symbol of size 0 covers up to the
 * next symbol and never past the end of its section, or only its own
 * address when neither is known), from .symtab, else .dynsym. NULL when none covers
 * it: an address past a section's last function stays unnamed. The
 * name is lent until sym_elf_free; *@start (optional) receives the symbol
 * address.
 */
const char *sym_elf_lookup(const struct sym_elf *e, uint64_t vaddr, uint64_t *start);

/** sym_elf_nsymbols() - number of function symbols indexed (for stats/tests). */
size_t sym_elf_nsymbols(const struct sym_elf *e);

/**
 * sym_elf_read_build_id() - read only the GNU build ID of @path into @hex
 * (lowercase, NUL-terminated; @hexsz >= 41 for SHA-1 IDs). 0, -ENOENT when
 * the file has no build ID, or another negative code.
 */
int sym_elf_read_build_id(const char *path, char *hex, size_t hexsz);

#endif
