// SPDX-License-Identifier: Apache-2.0
/* elfinfo.c - per-file build ID and load bias cache; see elfinfo.h. */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "agent/elfinfo.h"

#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#define ELFINFO_MAX_SEGS  8    /* PT_LOAD segments kept per file (executables have 2-5) */
#define ELFINFO_MAX_PHDRS 4096 /* more program headers than this: not a plausible ELF file */
#define NT_GNU_BUILD_ID_  3    /* <elf.h> NT_GNU_BUILD_ID */

/* One PT_LOAD segment: file range [offset, offset + filesz) at vaddr. */
struct elfinfo_seg {
	uint64_t offset, filesz, vaddr;
	bool exec;
};

struct elfinfo_entry {
	uint64_t dev, ino, size;
	int64_t mtime_ns;
	int rc; /* result of reading the file: 0, 1 = not read yet, or negative */
	char build_id[AGENT_BUILD_ID_MAX];
	struct elfinfo_seg segs[ELFINFO_MAX_SEGS];
	uint32_t nsegs;
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
	(void)elf_version(EV_CURRENT);
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
 * What the agent needs of an ELF file, read with as little I/O as it
 * takes: the ELF header, the program headers and the PT_NOTE segments
 * (libelf ELF_C_READ reads what is asked for with pread). Not the symbol
 * tables (the server symbolizes): a full symbolize/elf.h open read and
 * sorted every symbol of each new binary, most of the agent's CPU time
 * and its peak memory on a host that starts compilers (bench/results/agent.md).
 * 0, -PROF_EFORMAT (not ELF, or malformed), or -errno.
 */
static int elfinfo_read(const char *path, struct elfinfo_entry *e)
{
	size_t phnum = 0;
	int fd, rc = 0;
	Elf *elf;

	e->nsegs = 0;
	e->build_id[0] = '\0';
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF || elf_getphdrnum(elf, &phnum) != 0 ||
	    phnum > ELFINFO_MAX_PHDRS) {
		rc = -PROF_EFORMAT;
		goto out;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			rc = -PROF_EFORMAT;
			goto out;
		}
		if (ph.p_type == PT_LOAD && e->nsegs < ELFINFO_MAX_SEGS) {
			struct elfinfo_seg *sg = &e->segs[e->nsegs++];

			sg->offset = ph.p_offset;
			sg->filesz = ph.p_filesz;
			sg->vaddr = ph.p_vaddr;
			sg->exec = (ph.p_flags & PF_X) != 0;
		} else if (ph.p_type == PT_NOTE && ph.p_filesz && !e->build_id[0]) {
			Elf_Data *d =
				elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz,
						     ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
			size_t off = 0, name_off, desc_off, next;
			GElf_Nhdr nh;

			while (d && (next = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
				const char *base = d->d_buf;

				if (nh.n_type == NT_GNU_BUILD_ID_ && nh.n_namesz == 4 &&
				    !memcmp(base + name_off, "GNU", 4) && nh.n_descsz > 0 &&
				    nh.n_descsz * 2 < sizeof(e->build_id)) {
					for (size_t k = 0; k < nh.n_descsz; k++)
						snprintf(e->build_id + 2 * k, 3, "%02x",
							 (uint8_t)base[desc_off + k]);
					break;
				}
				off = next;
			}
		}
	}
out:
	if (elf)
		elf_end(elf);
	close(fd);
	return rc;
}

/* @off's ELF vaddr from @e's segments, executable ones first (a page-rounded mapping may touch data). */
static int elfinfo_vaddr(const struct elfinfo_entry *e, uint64_t off, uint64_t *vaddr)
{
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = 0; i < e->nsegs; i++) {
			const struct elfinfo_seg *s = &e->segs[i];

			if (s->exec != (pass == 0))
				continue;
			if (off >= s->offset && off - s->offset < s->filesz) {
				*vaddr = s->vaddr + (off - s->offset);
				return 0;
			}
		}
	}
	return -ENOENT;
}

/*
 * The mapping starts at the page holding the segment's first byte, so its
 * offset may lie just below p_offset when p_offset is not page aligned;
 * then a byte one page further in is inside the segment.
 */
static int elfinfo_bias_of(const struct elfinfo_entry *e, uint64_t map_off, uint64_t map_len,
			   int64_t *bias)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE), cand[2], vaddr;

	cand[0] = map_off;
	cand[1] = map_off + page - 1;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cand); i++) {
		if (i > 0 && map_len < page)
			break;
		if (elfinfo_vaddr(e, cand[i], &vaddr) == 0) {
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
	int rc;

	c->stats.lookups++;
	if (e && (e->size != (uint64_t)st->st_size || e->mtime_ns != stat_mtime_ns(st))) {
		/* Same inode, new contents: forget what we knew. */
		e->size = (uint64_t)st->st_size;
		e->mtime_ns = stat_mtime_ns(st);
		e->rc = 1;
		e->nsegs = 0;
		e->build_id[0] = '\0';
	}
	if (!e)
		e = elfinfo_insert(c, st);
	if (e->rc == 1) {
		c->stats.opens++;
		rc = elfinfo_read(path, e);
		if (rc) {
			c->stats.failures++;
			/* A file we may read later (EACCES on a racing exit) is not remembered. */
			if (rc == -PROF_EFORMAT)
				e->rc = rc;
			return rc;
		}
		e->rc = 0;
	}
	if (e->rc < 0)
		return e->rc;
	rc = elfinfo_bias_of(e, map_off, map_len, bias);
	if (rc == 0)
		snprintf(build_id, bsz, "%s", e->build_id);
	return rc;
}
