/* SPDX-License-Identifier: Apache-2.0 */
/*
 * strtab.h - string interning: each distinct byte string gets a dense id.
 *
 * Id 0 is always the empty string (the pprof/OTLP convention that index 0
 * of a string table is ""). Strings are copied into the table and owned by
 * it; pointers returned by strtab_get stay valid until strtab_release
 * (strings live in chunks that are never moved or freed before then:
 * one allocation per chunk, not per string).
 * Lookup is an open-addressing hash table keyed by XXH3 of the bytes.
 * Not thread-safe.
 */
#ifndef PROF_BASE_STRTAB_H
#define PROF_BASE_STRTAB_H

#include "base/compat.h"

struct strtab {
	char **s;      /* s[id], NUL-terminated */
	uint32_t *len; /* len[id] in bytes */
	uint32_t n, cap;
	uint32_t *slots; /* id + 1, 0 = empty */
	uint32_t nslots; /* power of two */
	char *chunk;	 /* newest string chunk; each starts with a link to the previous */
	size_t chunk_left, chunk_size;
};

void strtab_init(struct strtab *t);
void strtab_release(struct strtab *t);
/** strtab_intern() - id of the @n bytes at @s, adding them if new. */
uint32_t strtab_intern(struct strtab *t, const char *s, size_t n);
static inline uint32_t strtab_intern_cstr(struct strtab *t, const char *s)
{
	return strtab_intern(t, s ? s : "", s ? strlen(s) : 0);
}
/**
 * strtab_reserve() - make room for @n strings in all (ids and hash
 * slots), so that interning up to @n costs no rehash. A hint: a table
 * still grows past it.
 */
void strtab_reserve(struct strtab *t, uint32_t n);
/** strtab_find() - id of the string, or UINT32_MAX when absent. */
uint32_t strtab_find(const struct strtab *t, const char *s, size_t n);
/** strtab_get() - the string with @id ("" when out of range). */
static inline const char *strtab_get(const struct strtab *t, uint32_t id)
{
	return id < t->n ? t->s[id] : "";
}

#endif
