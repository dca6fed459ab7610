/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elfinfo.h - what the agent needs from each mapped ELF file, cached per
 * file identity: its GNU build ID and, per executable mapping, the load
 * bias that turns a file offset into the ELF virtual address.
 *
 * Why: native frames are reported as ELF virtual addresses plus a mapping
 * carrying the file's path and build ID (the OpenTelemetry eBPF profiler
 * convention, docs/formats.md "What the OTel eBPF profiler sends"), so the server can symbolize them
 * from the binary, and one function has one address in every process.
 * For a runtime address A inside a mapping [start, end) at file offset
 * O: file offset F = A - start + O, vaddr = F + bias, where
 * bias = p_vaddr - p_offset of the PT_LOAD segment the mapping comes from
 * (constant over one mmap of one segment); executable segments are
 * preferred when a page-rounded mapping touches two.
 *
 * Identity: (st_dev, st_ino, st_size, st_mtime) of the mapped file as seen
 * through /proc/PID/map_files, so a binary replaced in place is read
 * again, while libc shared by every process is read once. Files are not
 * kept open: an entry holds the build ID and the PT_LOAD segments (up to
 * 8), read once with libelf from the ELF header, program headers and
 * PT_NOTE segments only (never the symbol tables: the server symbolizes).
 *
 * Bounded: at most max_files entries; when full, the cache is emptied
 * (simple and rare; counted). Not thread-safe.
 */
#ifndef PROF_AGENT_ELFINFO_H
#define PROF_AGENT_ELFINFO_H

#include "base/compat.h"

#include <sys/stat.h>

#define AGENT_BUILD_ID_MAX 129 /* hex of up to 64 bytes, NUL-terminated */

struct agent_elfinfo_cache;

/** struct agent_elfinfo_stats - counters since _new (for logs and tests). */
struct agent_elfinfo_stats {
	uint64_t lookups;  /* agent_elfinfo_lookup calls */
	uint64_t opens;	   /* ELF files opened and parsed */
	uint64_t failures; /* opens that failed (not ELF, unreadable) */
	uint64_t flushes;  /* times the cache was emptied because it was full */
};

/** agent_elfinfo_cache_new() - empty cache of at most @max_files files (0 = 1024). Caller frees. */
struct agent_elfinfo_cache *agent_elfinfo_cache_new(size_t max_files);
/** agent_elfinfo_cache_free() - release everything; NULL is allowed. */
void agent_elfinfo_cache_free(struct agent_elfinfo_cache *c);

/**
 * agent_elfinfo_lookup() - build ID and load bias for the mapping at file
 * offset @map_off (length @map_len bytes) of the file readable at @path,
 * whose identity is @st (from stat(@path)).
 *
 * On success writes the build ID as lowercase hex into @build_id (""
 * when the file has none; @bsz >= AGENT_BUILD_ID_MAX avoids truncation)
 * and the bias (ELF vaddr - file offset) into *@bias, and returns 0.
 * Errors: -PROF_EFORMAT when the file is not ELF (or cannot be parsed),
 * -ENOENT when no PT_LOAD segment covers the mapping, -errno when the
 * file cannot be read. Failures are remembered per file, so a non-ELF
 * file is not reopened for every process.
 */
int agent_elfinfo_lookup(struct agent_elfinfo_cache *c, const char *path, const struct stat *st,
			 uint64_t map_off, uint64_t map_len, char *build_id, size_t bsz,
			 int64_t *bias);

/** agent_elfinfo_get_stats() - copy the counters. */
void agent_elfinfo_get_stats(const struct agent_elfinfo_cache *c, struct agent_elfinfo_stats *st);

#endif
