/* SPDX-License-Identifier: Apache-2.0 */
/*
 * symbolizer.h - query-time symbolization of native frames: given the
 * mapping's file path and GNU build ID and an ELF virtual address, the
 * function name. Opened ELF files are cached per (path, build ID) with a
 * bound on their number; a file whose build ID does not match the one
 * the frame was recorded with is never used (the binary was replaced), and
 * that miss is remembered. Results are memoized per (build ID, address).
 * Thread-safe (one internal mutex).
 */
#ifndef PROF_SYMBOLIZE_SYMBOLIZER_H
#define PROF_SYMBOLIZE_SYMBOLIZER_H

#include "base/compat.h"

struct symbolizer;

/**
 * symbolizer_new() - cache of at most @max_files indexed ELF files (0 is
 * taken as 1); remembered misses count towards the bound. Caller frees.
 */
struct symbolizer *symbolizer_new(size_t max_files);
/** symbolizer_free() - release the cache and everything in it; NULL ok. */
void symbolizer_free(struct symbolizer *s);

/**
 * symbolizer_lookup() - function name for @vaddr in the ELF at @path
 * whose build ID must equal @build_id (lowercase hex; "" skips the check).
 * Writes the name into @out (truncated to @outsz) and returns 0; -ENOENT
 * when the file is missing, does not match, or has no symbol there.
 */
int symbolizer_lookup(struct symbolizer *s, const char *path, const char *build_id, uint64_t vaddr,
		      char *out, size_t outsz);

/**
 * struct symbolizer_stats - counters since symbolizer_new, for /metrics and
 * tests: @lookups calls, @memo_hits answered from the memo, @file_opens ELF
 * files opened and indexed, @mismatches files refused for a build ID
 * mismatch, @missing opens that failed (file absent or unreadable),
 * @evictions cached files dropped to respect max_files.
 */
struct symbolizer_stats {
	uint64_t lookups, memo_hits, file_opens, mismatches, missing, evictions;
};

/** symbolizer_get_stats() - copy the counters (consistent snapshot). */
void symbolizer_get_stats(struct symbolizer *s, struct symbolizer_stats *st);

#endif
