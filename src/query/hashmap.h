/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hashmap.h - the small open-addressing maps the query engine aggregates
 * with (internal to src/query; static inline so nothing is exported):
 *
 *   struct qmap   64-bit key -> 32-bit value (UINT32_MAX - 1 at most);
 *                 used for (parent << 32 | name) -> tree node, store stack
 *                 id -> translated node, series id -> group id.
 *
 * Linear probing over a power-of-two table kept at most half full; keys
 * are mixed with splitmix64's finalizer so dense ids spread out. Values
 * are stored + 1 so 0 marks an empty slot. Not thread-safe; the owner
 * frees it with qmap_release. Allocation failure aborts (base/mem.h).
 */
#ifndef PROF_QUERY_HASHMAP_H
#define PROF_QUERY_HASHMAP_H

#include "base/compat.h"
#include "base/mem.h"

#include <sys/mman.h>

#define QMAP_NONE UINT32_MAX

struct qmap_slot {
	uint64_t key;
	uint32_t val; /* value + 1; 0 = empty slot */
};

/* Keys and values side by side: one cache miss per probe. */
struct qmap {
	struct qmap_slot *slots;
	size_t n, nslots;
};

static inline size_t qmap_hash(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ULL;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (size_t)(z ^ (z >> 31));
}

static inline void qmap_release(struct qmap *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* Slot of @key: holds it, or is the empty slot where it goes. */
static inline size_t qmap_slot(const struct qmap *m, uint64_t key)
{
	size_t s = qmap_hash(key) & (m->nslots - 1);

	while (m->slots[s].val && m->slots[s].key != key)
		s = (s + 1) & (m->nslots - 1);
	return s;
}

/*
 * Zeroed slots. A table of megabytes is probed at random (the translation
 * cache's tables hold millions of keys): it gets 2 MiB alignment and asks
 * for transparent huge pages, so a probe costs a cache miss without a TLB
 * miss on top (where THP is "madvise", the common default). free() frees it.
 */
static inline struct qmap_slot *qmap_slots_new(size_t nslots)
{
	size_t bytes = nslots * sizeof(struct qmap_slot), huge = (size_t)2 << 20;
	void *p = NULL;

	if (bytes < huge || posix_memalign(&p, huge, bytes))
		return xcalloc(nslots, sizeof(struct qmap_slot));
#ifdef MADV_HUGEPAGE
	(void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it the table still works */
#endif
	memset(p, 0, bytes);
	return p;
}

/* Rehash into @nslots slots (a power of two, more than twice the keys). */
static inline void qmap_rehash(struct qmap *m, size_t nslots)
{
	struct qmap g = { 0 };

	g.nslots = nslots;
	g.slots = qmap_slots_new(g.nslots);
	for (size_t i = 0; i < m->nslots; i++) {
		if (!m->slots[i].val)
			continue;
		g.slots[qmap_slot(&g, m->slots[i].key)] = m->slots[i];
	}
	g.n = m->n;
	qmap_release(m);
	*m = g;
}

static inline void qmap_grow(struct qmap *m)
{
	qmap_rehash(m, m->nslots ? m->nslots * 2 : 256);
}

/* Make room for @n keys in all without growing again. */
static inline void qmap_reserve(struct qmap *m, size_t n)
{
	size_t ns = m->nslots ? m->nslots : 256;

	while ((n + 1) * 2 > ns)
		ns *= 2;
	if (ns != m->nslots)
		qmap_rehash(m, ns);
}

/* Value of @key or QMAP_NONE. */
static inline uint32_t qmap_get(const struct qmap *m, uint64_t key)
{
	if (!m->nslots)
		return QMAP_NONE;
	size_t s = qmap_slot(m, key);
	return m->slots[s].val ? m->slots[s].val - 1 : QMAP_NONE;
}

/* Set @key to @val (< QMAP_NONE). */
static inline void qmap_put(struct qmap *m, uint64_t key, uint32_t val)
{
	PROF_ASSERT(val < QMAP_NONE);
	if ((m->n + 1) * 2 > m->nslots)
		qmap_grow(m);
	size_t s = qmap_slot(m, key);
	if (!m->slots[s].val)
		m->n++;
	m->slots[s].key = key;
	m->slots[s].val = val + 1;
}

#endif
