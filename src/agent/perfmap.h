/* SPDX-License-Identifier: Apache-2.0 */
/*
 * perfmap.h - symbols of JIT-compiled code from a perf map file,
 * /tmp/perf-PID.map, the format written by node --perf-basic-prof, Java
 * perf-map agents, Python 3.12 -X perf, .NET, LuaJIT and others (Linux
 * tools/perf/Documentation/jit-interface.txt):
 *
 *   START SIZE NAME\n
 *
 * START and SIZE in hex (with or without "0x"), NAME to the end of the
 * line (it may contain spaces). Runtimes append as they compile, and may
 * compile new code at an address that held older code: a later line for
 * the same start replaces an earlier one.
 *
 * The table is sorted by start for binary search; names are kept in one
 * block. Bounded by the caller's limits on file size and entries.
 * Not thread-safe.
 */
#ifndef PROF_AGENT_PERFMAP_H
#define PROF_AGENT_PERFMAP_H

#include "base/compat.h"
#include "base/mem.h"

struct agent_perfmap_sym {
	uint64_t start, end; /* [start, end) */
	uint32_t name_off;   /* into names */
	uint32_t line;	     /* line number, for "later wins" */
};

/** struct agent_perfmap - zero-initialized = empty. */
struct agent_perfmap {
	VEC(struct agent_perfmap_sym) syms; /* sorted by start, unique starts */
	VEC(char) names;		    /* NUL-terminated names */
	uint64_t dev, ino, size;	    /* identity of the file last loaded */
	int64_t mtime_ns;
	size_t bad_lines; /* lines that did not parse in the last load */
};

/** agent_perfmap_release() - free the table; the struct can be reused. NULL ok. */
void agent_perfmap_release(struct agent_perfmap *pm);

/**
 * agent_perfmap_parse() - replace @pm's table with the symbols in @n
 * bytes of perf map text, keeping at most @max_syms (0 = no limit; the
 * rest are ignored). Lines that do not parse, and zero-sized entries, are
 * skipped and counted in @pm->bad_lines. Returns the number of symbols.
 */
size_t agent_perfmap_parse(struct agent_perfmap *pm, const char *text, size_t n, size_t max_syms);

/**
 * agent_perfmap_load() - (re)load @path if its size or mtime differ from
 * the last load. Returns 1 when reloaded, 0 when unchanged, -errno when
 * it cannot be read (the old table is kept), -PROF_ETOOBIG when larger
 * than @max_bytes (the old table is kept).
 */
int agent_perfmap_load(struct agent_perfmap *pm, const char *path, size_t max_bytes,
		       size_t max_syms);

/** agent_perfmap_lookup() - the name of the symbol containing @addr, or NULL. Lent from @pm. */
const char *agent_perfmap_lookup(const struct agent_perfmap *pm, uint64_t addr);

#endif
