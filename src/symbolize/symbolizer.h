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

/** symbolizer_new() - cache of at most @max_files open ELF files. */
struct symbolizer *symbolizer_new(size_t max_files);
void symbolizer_free(struct symbolizer *s);

/**
 * symbolizer_lookup() - function name for @vaddr in the ELF at @path
 * whose build ID must equal @build_id (lowercase hex; "" skips the check).
 * Writes the name into @out (truncated to @outsz) and returns 0; -ENOENT
 * when the file is missing, does not match, or has no symbol there.
 */
int symbolizer_lookup(struct symbolizer *s, const char *path, const char *build_id, uint64_t vaddr,
		      char *out, size_t outsz);

#endif
