// SPDX-License-Identifier: Apache-2.0
/* strtab.c - string interning; see strtab.h. */
#include "base/compat.h"
#include "base/strtab.h"
#include "base/mem.h"

#include <xxhash.h>

void strtab_init(struct strtab *t)
{
	memset(t, 0, sizeof(*t));
	strtab_intern(t, "", 0);
}

void strtab_release(struct strtab *t)
{
	for (uint32_t i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	free(t->len);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

static void strtab_rehash(struct strtab *t)
{
	uint32_t ns = t->nslots ? t->nslots * 2 : 64;

	free(t->slots);
	t->slots = xcalloc(ns, sizeof(uint32_t));
	t->nslots = ns;
	for (uint32_t id = 0; id < t->n; id++) {
		uint32_t h = (uint32_t)XXH3_64bits(t->s[id], t->len[id]) & (ns - 1);

		while (t->slots[h])
			h = (h + 1) & (ns - 1);
		t->slots[h] = id + 1;
	}
}

uint32_t strtab_find(const struct strtab *t, const char *s, size_t n)
{
	uint32_t h;

	if (!t->nslots)
		return UINT32_MAX;
	h = (uint32_t)XXH3_64bits(s, n) & (t->nslots - 1);
	while (t->slots[h]) {
		uint32_t id = t->slots[h] - 1;

		/* n == 0 may come with s == NULL (an empty protobuf bytes field). */
		if (t->len[id] == n && (n == 0 || memcmp(t->s[id], s, n) == 0))
			return id;
		h = (h + 1) & (t->nslots - 1);
	}
	return UINT32_MAX;
}

uint32_t strtab_intern(struct strtab *t, const char *s, size_t n)
{
	uint32_t id = strtab_find(t, s, n), h;

	if (id != UINT32_MAX)
		return id;
	PROF_ASSERT(n < UINT32_MAX);
	if ((t->n + 1) * 2 > t->nslots)
		strtab_rehash(t);
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->s = xreallocarray(t->s, t->cap, sizeof(*t->s));
		t->len = xreallocarray(t->len, t->cap, sizeof(*t->len));
	}
	id = t->n++;
	t->s[id] = xstrndup(s, n);
	t->len[id] = (uint32_t)n;
	h = (uint32_t)XXH3_64bits(s, n) & (t->nslots - 1);
	while (t->slots[h])
		h = (h + 1) & (t->nslots - 1);
	t->slots[h] = id + 1;
	return id;
}
