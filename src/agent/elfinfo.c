// SPDX-License-Identifier: Apache-2.0
/* elfinfo.c - per-file build ID and load bias cache; see elfinfo.h. */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "agent/elfinfo.h"
#include "symbolize/elf.h"

#include <unistd.h>

#define ELFINFO_MAX_BIASES 4 /* executable mappings remembered per file */

struct elfinfo_bias {
	uint64_t off; /* mapping file offset */
	int64_t bias;
	int rc; /* 0 or -ENOENT */
};

struct elfinfo_entry {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	int rc; /* result of opening the file: 0 or negative */
	char build_id[AGENT_BUILD_ID_MAX];
	struct elfinfo_bias biases[ELFINFO_MAX_BIASES];
	uint32_t nbiases, next; /* next: slot replaced when all are used */
};

struct agent_elfinfo_cache {
	VEC(struct elfinfo_entry) entries;
	uint32_t *slots; /* entry index + 1, 0 = empty; 2 * max_files, power of two */
	size_t nslots, max_files;
	struct agent_elfinfo_stats stats;
};

static uint64_t elfinfo_hash(uint64_t dev, uint64_t ino)
{
	uint64_t h = (dev + 0x9e3779b97f4a7c15ULL) * 0xbf58476d1ce4e5b9ULL;

	h ^= (ino + 0x632be59bd9b4e019ULL) * 0x94d049bb133111ebULL;
	return h ^ (h >> 29);
}

struct agent_elfinfo_cache *agent_elfinfo_cache_new(size_t max_files)
{
	struct agent_elfinfo_cache *c = xcalloc(1, sizeof(*c));

	c->max_files = max_files ? max_files : 1024;
	c->nslots = 16;
	while (c->nslots < c->max_files * 2)
		c->nslots *= 2;
	c->slots = xcalloc(c->nslots, sizeof(*c->slots));
	return c;
}

void agent_elfinfo_cache_free(struct agent_elfinfo_cache *c)
{
	if (!c)
		return;
	VEC_FREE(&c->entries);
	free(c->slots);
	free(c);
}

void agent_elfinfo_get_stats(const struct agent_elfinfo_cache *c, struct agent_elfinfo_stats *st)
{
	*st = c->stats;
}

static int64_t stat_mtime_ns(const struct stat *st)
{
	return (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
}

static struct elfinfo_entry *elfinfo_find(struct agent_elfinfo_cache *c, const struct stat *st)
{
	size_t h = elfinfo_hash(st->st_dev, st->st_ino) & (c->nslots - 1);

	while (c->slots[h]) {
		struct elfinfo_entry *e = &c->entries.v[c->slots[h] - 1];

		if (e->dev == st->st_dev && e->ino == st->st_ino)
			return e;
		h = (h + 1) & (c->nslots - 1);
	}
	return NULL;
}

static struct elfinfo_entry *elfinfo_insert(struct agent_elfinfo_cache *c, const struct stat *st)
{
	struct elfinfo_entry e = { 0 };
	size_t h;

	if (c->entries.n >= c->max_files) {
		c->entries.n = 0;
		memset(c->slots, 0, c->nslots * sizeof(*c->slots));
		c->stats.flushes++;
	}
	e.dev = st->st_dev;
	e.ino = st->st_ino;
	e.size = (uint64_t)st->st_size;
	e.mtime_ns = stat_mtime_ns(st);
	e.rc = 1; /* not opened yet */
	VEC_PUSH(&c->entries, e);
	h = elfinfo_hash(e.dev, e.ino) & (c->nslots - 1);
	while (c->slots[h])
		h = (h + 1) & (c->nslots - 1);
	c->slots[h] = (uint32_t)c->entries.n;
	return &c->entries.v[c->entries.n - 1];
}

/*
 * The mapping starts at the page holding the segment's first byte, so its
 * offset may lie just below p_offset when p_offset is not page aligned;
 * then a byte one page further in is inside the segment.
 */
static int elfinfo_bias_of(const struct sym_elf *elf, uint64_t map_off, uint64_t map_len,
			   int64_t *bias)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), cand[2], vaddr;

	cand[0] = map_off;
	cand[1] = map_off + page - 1;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cand); i++) {
		if (i > 0 && map_len < page)
			break;
		if (sym_elf_offset_to_vaddr(elf, cand[i], &vaddr) == 0) {
			*bias = (int64_t)(vaddr - cand[i]);
			return 0;
		}
	}
	return -ENOENT;
}

int agent_elfinfo_lookup(struct agent_elfinfo_cache *c, const char *path, const struct stat *st,
			 uint64_t map_off, uint64_t map_len, char *build_id, size_t bsz,
			 int64_t *bias)
{
	struct elfinfo_entry *e = elfinfo_find(c, st);
	struct elfinfo_bias *b;
	struct sym_elf *elf = NULL;
	struct prof_err err;
	int rc;

	c->stats.lookups++;
	if (e && (e->size != (uint64_t)st->st_size || e->mtime_ns != stat_mtime_ns(st))) {
		/* Same inode, new contents: forget what we knew. */
		e->size = (uint64_t)st->st_size;
		e->mtime_ns = stat_mtime_ns(st);
		e->rc = 1;
		e->nbiases = e->next = 0;
		e->build_id[0] = '\0';
	}
	if (!e)
		e = elfinfo_insert(c, st);
	if (e->rc < 0)
		return e->rc;
	for (uint32_t i = 0; e->rc == 0 && i < e->nbiases; i++) {
		b = &e->biases[i];
		if (b->off == map_off) {
			if (b->rc == 0) {
				snprintf(build_id, bsz, "%s", e->build_id);
				*bias = b->bias;
			}
			return b->rc;
		}
	}

	prof_err_init(&err);
	c->stats.opens++;
	rc = sym_elf_open(path, &elf, &err);
	if (rc) {
		c->stats.failures++;
		/* A file we may read later (EACCES on a racing exit) is not remembered. */
		if (rc == -PROF_EFORMAT || rc == -PROF_ECORRUPT || rc == -PROF_ETOOBIG)
			e->rc = -PROF_EFORMAT;
		return rc == -PROF_ECORRUPT || rc == -PROF_ETOOBIG ? -PROF_EFORMAT : rc;
	}
	e->rc = 0;
	snprintf(e->build_id, sizeof(e->build_id), "%s", sym_elf_build_id(elf));
	if (e->nbiases < ELFINFO_MAX_BIASES) {
		b = &e->biases[e->nbiases++];
	} else {
		b = &e->biases[e->next];
		e->next = (e->next + 1) % ELFINFO_MAX_BIASES;
	}
	b->off = map_off;
	b->rc = elfinfo_bias_of(elf, map_off, map_len, &b->bias);
	sym_elf_free(elf);
	if (b->rc == 0) {
		snprintf(build_id, bsz, "%s", e->build_id);
		*bias = b->bias;
	}
	return b->rc;
}
