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

/* Chunk layout: a link to the previous chunk, then strings back to back. */
#define CHUNK_LINK sizeof(char *)

void strtab_release(struct strtab *t)
{
	for (char *c = t->chunk; c;) {
		char *prev;

		memcpy(&prev, c, sizeof(prev));
		free(c);
		c = prev;
	}
	free(t->s);
	free(t->len);
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

/* A copy of @n bytes + NUL in the newest chunk (a new one when full). */
static char *strtab_copy(struct strtab *t, const char *s, size_t n)
{
	static char empty[1]; /* every table's "" (never written) */
	char *dst;

	if (!n)
		return empty;

	if (n + 1 > t->chunk_left) {
		size_t want = t->chunk_size ? t->chunk_size * 2 : 256, size;
		char *c;

		if (want > 64 * 1024)
			want = 64 * 1024;
		/* Big strings get a chunk of their own; the current one stays open. */
		size = n + 1 > want / 4 ? n + 1 : want;
		c = xmalloc(CHUNK_LINK + size);
		if (size == want || !t->chunk) {
			memcpy(c, &t->chunk, sizeof(t->chunk));
			t->chunk = c;
			t->chunk_left = size;
			t->chunk_size = size;
		} else {
			/* link it behind the current chunk so release finds it */
			char *prev;

			memcpy(&prev, t->chunk, sizeof(prev));
			memcpy(c, &prev, sizeof(prev));
			memcpy(t->chunk, &c, sizeof(c));
			dst = c + CHUNK_LINK;
			memcpy(dst, s, n);
			dst[n] = '\0';
			return dst;
		}
	}
	dst = t->chunk + CHUNK_LINK + (t->chunk_size - t->chunk_left);
	if (n)
		memcpy(dst, s, n);
	dst[n] = '\0';
	t->chunk_left -= n + 1;
	return dst;
}

/* Rebuild the index with at least twice the slots, and enough for @want ids. */
static void strtab_rehash_for(struct strtab *t, uint32_t want)
{
	uint32_t ns = t->nslots ? t->nslots * 2 : 64;

	while ((want + 1) * 2 > ns)
		ns *= 2;
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

void strtab_reserve(struct strtab *t, uint32_t n)
{
	if (n > UINT32_MAX / 4)
		return; /* a hint; the table grows as it must */
	if (n > t->cap) {
		t->cap = n;
		t->s = xreallocarray(t->s, t->cap, sizeof(*t->s));
		t->len = xreallocarray(t->len, t->cap, sizeof(*t->len));
	}
	if ((n + 1) * 2 > t->nslots)
		strtab_rehash_for(t, n); /* one rebuild, not one per doubling */
}

/* Id of @s with hash @hash, or UINT32_MAX; *slot gets the free slot probed last. */
static uint32_t strtab_lookup(const struct strtab *t, const char *s, size_t n, uint64_t hash,
			      uint32_t *slot)
{
	uint32_t h = (uint32_t)hash & (t->nslots - 1);

	while (t->slots[h]) {
		uint32_t id = t->slots[h] - 1;

		/* n == 0 may come with s == NULL (an empty protobuf bytes field). */
		if (t->len[id] == n && (n == 0 || memcmp(t->s[id], s, n) == 0))
			return id;
		h = (h + 1) & (t->nslots - 1);
	}
	*slot = h;
	return UINT32_MAX;
}

uint32_t strtab_find(const struct strtab *t, const char *s, size_t n)
{
	uint32_t slot;

	if (!t->nslots)
		return UINT32_MAX;
	return strtab_lookup(t, s, n, XXH3_64bits(s, n), &slot);
}

uint32_t strtab_intern(struct strtab *t, const char *s, size_t n)
{
	uint64_t hash = XXH3_64bits(s, n);
	uint32_t id, slot = 0;

	if (t->nslots) {
		id = strtab_lookup(t, s, n, hash, &slot);
		if (id != UINT32_MAX)
			return id;
	}
	PROF_ASSERT(n < UINT32_MAX);
	if ((t->n + 1) * 2 > t->nslots) {
		strtab_rehash_for(t, 0);
		slot = (uint32_t)hash & (t->nslots - 1);
		while (t->slots[slot])
			slot = (slot + 1) & (t->nslots - 1);
	}
	if (t->n == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 64;
		t->s = xreallocarray(t->s, t->cap, sizeof(*t->s));
		t->len = xreallocarray(t->len, t->cap, sizeof(*t->len));
	}
	id = t->n++;
	t->s[id] = strtab_copy(t, s ? s : "", n);
	t->len[id] = (uint32_t)n;
	t->slots[slot] = id + 1;
	return id;
}
