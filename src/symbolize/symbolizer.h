/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer.h - query-time symbolization of native frames: given the
 * mapping's file path and GNU build ID and an ELF virtual address, the
 * frames there (function, file, line, and the functions inlined at that
 * address, innermost first; see frame.h).
 *
 * Where the answer comes from, per (path, build ID), first found wins:
 *   binary      the debuginfo store's executable for the build ID, else
 *               the file at the mapping path if its build ID matches;
 *   debug info  the store's debuginfo file for the build ID, else the
 *               binary itself when it has DWARF, else a separate debug
 *               file: <debug root>/.build-id/<xx>/<rest>.debug, then the
 *               binary's .gnu_debuglink name in the binary's directory,
 *               its .debug/ subdirectory and <debug root>/<binary's
 *               directory> (gdb's search order), else, when enabled, what
 *               a debuginfod server has (fetched in the background); a
 *               candidate is used only when its build ID matches;
 *   frames      DWARF with inline chains, else the full symbol table
 *               (.symtab of the debug file or the binary), else Go's
 *               pclntab (also preferred over a .symtab hit of the same
 *               name, as it adds file and line), else .dynsym.
 * Names are demangled (C++, Rust legacy and v0: demangle.h).
 *
 * Which files may be opened: the data names paths (a mapping's file) and
 * build IDs, and the data may come from anyone, so neither is trusted.
 * A build ID is used only when it is hex (parse_build_id_ok), so it can
 * never walk out of a directory; a local path - the mapping's file, a
 * debug file under the debug root or next to the binary - is opened only
 * when its canonical form (symlinks and ".." resolved) lies inside one of
 * the symbol paths (symbolizer_set_symbol_paths; none after
 * symbolizer_new), or is one of this process's own loaded files and the
 * lookup has a build ID (symbolizer_allow_own_objects). The debuginfo
 * store and the debuginfod cache are the symbolizer's own and always
 * used. Every file is checked to be a regular file before it is opened
 * and again after (sym_open_regular: a FIFO or device named by the data
 * is never opened), and its size is capped (SYM_ELF_MAX_FILE).
 *
 * Caches: opened files per (path, build ID), at most max_files, least
 * recently used evicted; a file whose build ID does not match is never
 * used and that refusal is remembered; a missing file is retried after
 * 30 s. Answers are memoized per (build ID, address) (per path when no
 * build ID is known), up to about a million addresses, then the memo
 * starts over. symbolizer_invalidate() forgets one build ID's files and
 * the memo, so a debuginfo upload takes effect on the next query, old
 * data included.
 *
 * Thread-safe (one internal mutex, held while a file is opened).
 */
#ifndef PROF_SYMBOLIZE_SYMBOLIZER_H
#define PROF_SYMBOLIZE_SYMBOLIZER_H

#include "base/compat.h"
#include "base/err.h"
#include "symbolize/frame.h"

struct symbolizer;
struct sym_debuginfo;

#define SYMBOLIZER_DEFAULT_DEBUG_ROOT "/usr/lib/debug"

/**
 * symbolizer_new() - cache of at most @max_files opened binaries (0 is
 * taken as 1); remembered misses count towards the bound. Caller frees.
 */
struct symbolizer *symbolizer_new(size_t max_files);
/** symbolizer_free() - release the cache and everything in it; NULL ok. */
void symbolizer_free(struct symbolizer *s);

/**
 * symbolizer_set_debuginfo() - consult @store (not owned; must outlive
 * @s; NULL to stop) before the mapping path. Forgets cached files and the
 * memo. Call before sharing @s between threads, or at any time.
 */
void symbolizer_set_debuginfo(struct symbolizer *s, struct sym_debuginfo *store);

/** symbolizer_debuginfo() - the store set above, or NULL. Lent. */
struct sym_debuginfo *symbolizer_debuginfo(struct symbolizer *s);

/**
 * symbolizer_set_debug_root() - where system debug files live (default
 * SYMBOLIZER_DEFAULT_DEBUG_ROOT; copied). Forgets cached files and the memo.
 */
void symbolizer_set_debug_root(struct symbolizer *s, const char *dir);

/**
 * symbolizer_set_symbol_paths() - the local directories (@n of them,
 * absolute, existing; copied in canonical form) whose files lookups may
 * open, replacing the previous list; "/" allows every file, n = 0 none
 * (the default). 0, or -EINVAL / -errno / -ENOTDIR with @err naming the
 * path (the list is then unchanged). Forgets cached files and the memo.
 */
int symbolizer_set_symbol_paths(struct symbolizer *s, const char *const *dirs, size_t n,
				struct prof_err *err);

/**
 * symbolizer_allow_own_objects() - also allow the files this process has
 * loaded (its executable and shared libraries, as dl_iterate_phdr lists
 * them now), for lookups that give a build ID, which the file must then
 * carry: a server symbolizes its own self-profile without opening
 * anything else of its host. Forgets cached files and the memo.
 */
void symbolizer_allow_own_objects(struct symbolizer *s);

/**
 * symbolizer_enable_debuginfod() - when DEBUGINFOD_URLS is set, also ask
 * those servers for the build IDs nothing local covers, in the background
 * (debuginfod.h: a query never waits for the network; the first query
 * shows addresses, a later one names the frames once the file arrived).
 * 0, or -PROF_EUNSUPPORTED with @err saying why (variable unset,
 * libdebuginfod missing). Stopped by symbolizer_free.
 */
int symbolizer_enable_debuginfod(struct symbolizer *s, struct prof_err *err);

/**
 * symbolizer_invalidate() - forget the cached files of @build_id (any
 * case) and every memoized answer, so new debug info for it is used by
 * the next lookup.
 */
void symbolizer_invalidate(struct symbolizer *s, const char *build_id);

/**
 * symbolizer_lookup_frames() - the frames at @vaddr in the binary at
 * @path (may be "" when @build_id is given: then only the debuginfo
 * store and the debug root are searched) whose build ID must equal
 * @build_id (lowercase or uppercase hex; "" or NULL skips the check; a
 * value parse_build_id_ok refuses is -EINVAL, nothing opened).
 * Writes up to @max frames, innermost first, into @out (a chain deeper
 * than @max keeps its innermost frames) and returns how many (>= 1);
 * -ENOENT when no usable file was found or nothing covers @vaddr;
 * -EINVAL for bad arguments.
 */
int symbolizer_lookup_frames(struct symbolizer *s, const char *path, const char *build_id,
			     uint64_t vaddr, struct sym_frame *out, size_t max);

/**
 * struct symbolizer_mapping - where a mapping of the file was in the
 * process the addresses come from: runtime range [@start, @limit) and the
 * file offset of @start (pprof Mapping memory_start, memory_limit,
 * file_offset; OTLP's Mapping likewise).
 */
struct symbolizer_mapping {
	uint64_t start, limit, offset;
};

/**
 * symbolizer_mapping_offset() - the file offset of runtime address @addr
 * in @m (addr - start + offset) into *@off: true when @m has a range
 * (start < limit, other than the catch-all [0, UINT64_MAX) of pseudo
 * mappings) that holds @addr; false otherwise (@addr is then taken as an
 * ELF virtual address as it is). Pure.
 */
bool symbolizer_mapping_offset(const struct symbolizer_mapping *m, uint64_t addr, uint64_t *off);

/**
 * symbolizer_lookup_frames_mapped() - as symbolizer_lookup_frames, for an
 * address @addr of a process that had the file mapped as @map (NULL: none
 * known): when symbolizer_mapping_offset gives a file offset, it becomes
 * an ELF virtual address through the PT_LOAD segments of the binary (the
 * agent's own conversion, design.md), so pprof and OTLP data that carry
 * runtime addresses name the right function. Agent data, whose mappings
 * are in ELF address space already, convert to the same address. Without
 * a file that maps offsets (only a debug file from objcopy, whose
 * segments lost theirs) @addr is taken as an ELF vaddr. Same returns.
 */
int symbolizer_lookup_frames_mapped(struct symbolizer *s, const char *path, const char *build_id,
				    const struct symbolizer_mapping *map, uint64_t addr,
				    struct sym_frame *out, size_t max);

/**
 * symbolizer_lookup() - name of the function containing @vaddr (the
 * outermost frame of symbolizer_lookup_frames: the real function that
 * code was inlined into). Writes it into @out (truncated to @outsz) and
 * returns 0; -ENOENT when the file is missing, does not match, or has no
 * symbol there; -EINVAL for bad arguments.
 */
int symbolizer_lookup(struct symbolizer *s, const char *path, const char *build_id, uint64_t vaddr,
		      char *out, size_t outsz);

/**
 * enum symbolizer_reason - why a binary's frames are or are not named,
 * for stack health: SYMBOLIZER_OK_DWARF / _OK_SYMBOLS (names, from DWARF
 * or from a symbol table / Go pclntab), _NO_FILE (neither the mapping
 * path nor any debug info was found: upload debug info), _MISMATCH (the
 * file at the path is another build; upload debug info), _STRIPPED (the
 * file was found but has no symbols at all).
 */
enum symbolizer_reason {
	SYMBOLIZER_OK_DWARF,
	SYMBOLIZER_OK_SYMBOLS,
	SYMBOLIZER_NO_FILE,
	SYMBOLIZER_MISMATCH,
	SYMBOLIZER_STRIPPED,
};

/** symbolizer_reason_name() - "dwarf", "symbols", "no_debuginfo", ... (static). */
const char *symbolizer_reason_name(enum symbolizer_reason r);

/**
 * symbolizer_binary_status() - what is known for (@path, @build_id),
 * opening it if needed (same rules as symbolizer_lookup_frames). Always
 * answers.
 */
enum symbolizer_reason symbolizer_binary_status(struct symbolizer *s, const char *path,
						const char *build_id);

/**
 * struct symbolizer_stats - counters since symbolizer_new, for /metrics and
 * tests: @lookups calls, @memo_hits answered from the memo, @file_opens
 * binaries opened and indexed, @mismatches files refused for a build ID
 * mismatch, @missing opens that failed (file absent or unreadable),
 * @evictions cached files dropped to respect max_files, @debug_files
 * separate debug files used, @store_hits files taken from the debuginfo
 * store, @invalidations symbolizer_invalidate calls that dropped something,
 * @debuginfod_hits files taken from the debuginfod fetcher's cache,
 * @refused local paths not opened because no symbol path allows them.
 */
struct symbolizer_stats {
	uint64_t lookups, memo_hits, file_opens, mismatches, missing, evictions;
	uint64_t debug_files, store_hits, invalidations, debuginfod_hits, refused;
};

/** symbolizer_get_stats() - copy the counters (consistent snapshot). */
void symbolizer_get_stats(struct symbolizer *s, struct symbolizer_stats *st);

#endif
