/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kallsyms.h - kernel symbols from /proc/kallsyms (text symbols t/T/w/W),
 * sorted for address -> name lookups of kernel stack frames.
 * Immutable after load; shareable between threads.
 */
#ifndef PROF_SYMBOLIZE_KALLSYMS_H
#define PROF_SYMBOLIZE_KALLSYMS_H

#include "base/compat.h"
#include "base/err.h"

struct sym_kallsyms;

/**
 * sym_kallsyms_load() - parse @path (normally "/proc/kallsyms"), and the
 * module ranges from "modules" in the same directory when it is there
 * (/proc/modules); caller frees.
 */
int sym_kallsyms_load(const char *path, struct sym_kallsyms **out, struct prof_err *err);
void sym_kallsyms_free(struct sym_kallsyms *k);
/**
 * sym_kallsyms_lookup() - name of the kernel symbol covering @addr: the
 * last one at or before it, if @addr is before the next symbol, before
 * _etext for the kernel image's text, and inside its module's range when
 * the "modules" file beside @path (/proc/modules) gives it (kallsyms.c).
 * NULL if no symbol covers @addr or addresses are hidden (kptr_restrict
 * gives all zeros). Lent until free.
 */
const char *sym_kallsyms_lookup(const struct sym_kallsyms *k, uint64_t addr);
size_t sym_kallsyms_count(const struct sym_kallsyms *k);

#endif
