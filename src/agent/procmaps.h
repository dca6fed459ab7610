/* SPDX-License-Identifier: Apache-2.0 */
/*
 * procmaps.h - the executable mappings of a process (/proc/PID/maps) and
 * the translation of its runtime code addresses into (mapping, ELF
 * virtual address) pairs, the form in which the agent reports native
 * frames (see elfinfo.h for the arithmetic and why).
 *
 * Only mappings with the x permission are kept: file-backed code
 * (executables, shared libraries), [vdso], and anonymous executable
 * memory (JIT code). File mappings are read through
 * /proc/PID/map_files/START-END, which reaches the exact mapped file even
 * when it was deleted or lives in another mount namespace; the reported
 * path is the one /proc/PID/maps shows (" (deleted)" removed).
 *
 * A process may exit at any time: reading its maps then fails with
 * -ENOENT/-ESRCH and the caller keeps its frames under an "[unknown]"
 * mapping rather than dropping the sample.
 */
#ifndef PROF_AGENT_PROCMAPS_H
#define PROF_AGENT_PROCMAPS_H

#include "base/compat.h"

#include <sys/stat.h>
#include "base/mem.h"
#include "agent/elfinfo.h"

enum agent_map_kind {
	AGENT_MAP_FILE, /* file-backed code */
	AGENT_MAP_VDSO, /* [vdso] */
	AGENT_MAP_ANON, /* anonymous or special ([anon:...], memfd without ELF): JIT code */
};

/**
 * struct agent_map - one executable mapping.
 * @start, @end:  runtime range [start, end)
 * @offset:       file offset of @start
 * @path:         full path, "[vdso]", "[anon:NAME]" or "" (anonymous); owned
 * @build_id:     GNU build ID, lowercase hex, "" when unknown
 * @bias:         ELF vaddr = file offset + bias; valid when @normalized
 * @normalized:   addresses in this mapping translate to ELF vaddrs
 * @dev, @ino, @size, @mtime_ns: identity of the mapped file (stat through
 *                /proc/PID/map_files), valid when @normalized
 * @user:         free for the caller
 */
struct agent_map {
	uint64_t start, end, offset;
	char *path;
	char build_id[AGENT_BUILD_ID_MAX];
	int64_t bias;
	enum agent_map_kind kind;
	bool normalized;
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	uint32_t user;
};

/** struct agent_procmaps - executable mappings sorted by @start, non-overlapping. */
struct agent_procmaps {
	VEC(struct agent_map) maps;
};

void agent_procmaps_init(struct agent_procmaps *pm);
/** agent_procmaps_release() - free the mappings; @pm may be re-inited. NULL ok. */
void agent_procmaps_release(struct agent_procmaps *pm);

/**
 * agent_procmaps_parse() - parse @n bytes of /proc/PID/maps text,
 * appending the executable mappings to @pm (not yet normalized). Lines
 * that do not parse are skipped; returns the number skipped (>= 0).
 */
int agent_procmaps_parse(struct agent_procmaps *pm, const char *text, size_t n);

/**
 * agent_procmaps_read() - replace @pm's contents with the executable
 * mappings of process @pid under @proc_root (normally "/proc"), and
 * resolve build IDs and biases through @cache. A file that cannot be
 * read or is not ELF leaves its mapping un-normalized (runtime
 * addresses, no build ID) instead of failing.
 * Returns 0, or -errno when the maps file cannot be read (-ENOENT or
 * -ESRCH: the process is gone); @pm is then empty.
 */
int agent_procmaps_read(struct agent_procmaps *pm, const char *proc_root, int pid,
			struct agent_elfinfo_cache *cache);

/** agent_procmaps_find() - the mapping containing @addr, or NULL. Lent until the next read. */
struct agent_map *agent_procmaps_find(struct agent_procmaps *pm, uint64_t addr);

/**
 * agent_map_file_path() - a path under which the file behind mapping @m
 * of process @pid can be opened from here, written to @out (@outsz
 * bytes), or false when none is found (stat(2) fails on each). In order:
 * @proc_root/PID/map_files/START-END (the exact mapped file, also when
 * deleted or replaced; it takes CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE),
 * @proc_root/PID/root + the mapping's path (the process's own mount
 * namespace: a container's file, or any file when this agent runs in a
 * container of its own; it takes ptrace read access), the path itself.
 * @st receives the file's stat.
 */
bool agent_map_file_path(const struct agent_map *m, const char *proc_root, int pid, char *out,
			 size_t outsz, struct stat *st);

/**
 * agent_map_vaddr() - the address to report for runtime address @addr
 * inside @m: its ELF virtual address when @m is normalized, else @addr.
 */
static inline uint64_t agent_map_vaddr(const struct agent_map *m, uint64_t addr)
{
	return m->normalized ? addr - m->start + m->offset + (uint64_t)m->bias : addr;
}

/** agent_map_vstart() - @m's start in the same address space as agent_map_vaddr. */
static inline uint64_t agent_map_vstart(const struct agent_map *m)
{
	return agent_map_vaddr(m, m->start);
}

#endif
