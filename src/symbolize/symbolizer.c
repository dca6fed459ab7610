// SPDX-License-Identifier: Apache-2.0
/*
 * symbolizer.c - query-time symbolization with caches; see symbolizer.h.
 *
 * Two caches behind one mutex:
 *
 *   files  - up to max_files entries keyed by (path, expected build ID),
 *            least recently used evicted first. An entry holds the indexed
 *            ELF, or remembers why there is none: the build ID differed
 *            (remembered until evicted: the file at that path is another
 *            binary, and reopening it will not change that), or the file
 *            could not be opened (retried after SYMBOLIZER_RETRY_NS, since
 *            a missing file may be restored or installed later).
 *   memo   - (key, vaddr) -> name, where key is the build ID, or "path:"
 *            plus the path when the caller gave no build ID. Only answers
 *            that came from a matching, opened file are memoized (a name,
 *            or "no symbol there"), so a miss caused by a missing file is
 *            never served from the memo for another path with that build
 *            ID. Keys and names are interned in one string table; when the
 *            memo reaches SYMBOLIZER_MEMO_MAX entries it is cleared
 *            wholesale (cheap, and bounds memory without per-entry LRU).
 *
 * The mutex is held while a file is opened and indexed: simple and
 * correct; concurrent lookups of other files wait for that one open. A
 * server that symbolizes in bulk sees mostly memo hits.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/strtab.h"
#include "symbolize/elf.h"
#include "symbolize/symbolizer.h"

#include <pthread.h>
#include <strings.h>
#include <xxhash.h>

#define SYMBOLIZER_RETRY_NS (30 * 1000000000LL) /* re-try a missing file after 30 s */
#define SYMBOLIZER_MEMO_MAX (1u << 20)		/* memo entries before it is cleared */
#define SYMBOLIZER_NONE	    UINT32_MAX		/* memo: no symbol at that address */

enum symbolizer_state { SYM_FILE_OK, SYM_FILE_MISMATCH, SYM_FILE_MISSING };

struct symbolizer_file {
	char *path, *build_id; /* build_id as requested, "" = unchecked */
	struct sym_elf *elf;   /* NULL unless state == SYM_FILE_OK */
	enum symbolizer_state state;
	int64_t retry_ns; /* SYM_FILE_MISSING: when to try again */
	uint64_t last_use;
};

struct symbolizer_memo {
	uint64_t vaddr;
	uint32_t key;  /* strtab id; 0 = empty slot (id 0 is "" and never a key) */
	uint32_t name; /* strtab id or SYMBOLIZER_NONE */
};

struct symbolizer {
	pthread_mutex_t lock;
	size_t max_files;
	VEC(struct symbolizer_file *) files;
	uint64_t tick;

	struct strtab strs;
	struct symbolizer_memo *memo;
	size_t memo_n, memo_cap; /* memo_cap: power of two */

	struct symbolizer_stats stats;
};

struct symbolizer *symbolizer_new(size_t max_files)
{
	struct symbolizer *s = xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	s->max_files = max_files ? max_files : 1;
	strtab_init(&s->strs);
	return s;
}

static void symbolizer_file_free(struct symbolizer_file *f)
{
	if (!f)
		return;
	sym_elf_free(f->elf);
	free(f->path);
	free(f->build_id);
	free(f);
}

static void symbolizer_memo_clear(struct symbolizer *s)
{
	free(s->memo);
	s->memo = NULL;
	s->memo_n = s->memo_cap = 0;
	strtab_release(&s->strs);
	strtab_init(&s->strs);
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->files.n; i++)
		symbolizer_file_free(s->files.v[i]);
	VEC_FREE(&s->files);
	free(s->memo);
	strtab_release(&s->strs);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

static size_t symbolizer_memo_slot(const struct symbolizer *s, uint32_t key, uint64_t vaddr)
{
	uint64_t in[2] = { key, vaddr };

	return (size_t)XXH3_64bits(in, sizeof(in)) & (s->memo_cap - 1);
}

/* The memo entry for (key, vaddr), or NULL. */
static const struct symbolizer_memo *symbolizer_memo_find(const struct symbolizer *s, uint32_t key,
							  uint64_t vaddr)
{
	size_t i;

	if (!s->memo_cap)
		return NULL;
	for (i = symbolizer_memo_slot(s, key, vaddr); s->memo[i].key;
	     i = (i + 1) & (s->memo_cap - 1))
		if (s->memo[i].key == key && s->memo[i].vaddr == vaddr)
			return &s->memo[i];
	return NULL;
}

static void symbolizer_memo_insert(struct symbolizer *s, uint32_t key, uint64_t vaddr,
				   uint32_t name)
{
	size_t i;

	if ((s->memo_n + 1) * 2 > s->memo_cap) {
		struct symbolizer_memo *old = s->memo;
		size_t oldcap = s->memo_cap;

		s->memo_cap = oldcap ? oldcap * 2 : 1024;
		s->memo = xcalloc(s->memo_cap, sizeof(*s->memo));
		for (size_t j = 0; j < oldcap; j++) {
			if (!old[j].key)
				continue;
			for (i = symbolizer_memo_slot(s, old[j].key, old[j].vaddr); s->memo[i].key;
			     i = (i + 1) & (s->memo_cap - 1))
				;
			s->memo[i] = old[j];
		}
		free(old);
	}
	for (i = symbolizer_memo_slot(s, key, vaddr); s->memo[i].key;
	     i = (i + 1) & (s->memo_cap - 1))
		;
	s->memo[i].key = key;
	s->memo[i].vaddr = vaddr;
	s->memo[i].name = name;
	s->memo_n++;
}

/* Memo key string for this request: the build ID, else "path:<path>". */
static uint32_t symbolizer_memo_key(struct symbolizer *s, const char *path, const char *build_id,
				    bool add)
{
	char stackbuf[512];
	char *k = stackbuf;
	size_t n;
	uint32_t id;

	if (build_id[0]) {
		n = strlen(build_id);
		if (n + 1 > sizeof(stackbuf))
			k = xmalloc(n + 1);
		for (size_t i = 0; i < n; i++) /* build IDs compare case-insensitively */
			k[i] = (build_id[i] >= 'A' && build_id[i] <= 'F') ? (char)(build_id[i] + 32)
									  : build_id[i];
		k[n] = '\0';
	} else {
		n = strlen(path) + 5;
		if (n + 1 > sizeof(stackbuf))
			k = xmalloc(n + 1);
		snprintf(k, n + 1, "path:%s", path);
	}
	id = add ? strtab_intern(&s->strs, k, n) : strtab_find(&s->strs, k, n);
	if (k != stackbuf)
		free(k);
	return id;
}

static void symbolizer_evict_lru(struct symbolizer *s)
{
	size_t victim = 0;

	for (size_t i = 1; i < s->files.n; i++)
		if (s->files.v[i]->last_use < s->files.v[victim]->last_use)
			victim = i;
	symbolizer_file_free(s->files.v[victim]);
	s->files.v[victim] = s->files.v[--s->files.n];
	s->stats.evictions++;
}

/* Open @path and record the outcome as a new cache entry. */
static struct symbolizer_file *symbolizer_file_open(struct symbolizer *s, const char *path,
						    const char *build_id)
{
	struct symbolizer_file *f = xcalloc(1, sizeof(*f));
	struct prof_err err;

	prof_err_init(&err);
	f->path = xstrdup(path);
	f->build_id = xstrdup(build_id);
	if (sym_elf_open(path, &f->elf, &err) != 0) {
		f->state = SYM_FILE_MISSING;
		f->retry_ns = prof_now_ns() + SYMBOLIZER_RETRY_NS;
		s->stats.missing++;
	} else if (build_id[0] && strcasecmp(sym_elf_build_id(f->elf), build_id) != 0) {
		sym_elf_free(f->elf);
		f->elf = NULL;
		f->state = SYM_FILE_MISMATCH;
		s->stats.mismatches++;
	} else {
		f->state = SYM_FILE_OK;
		s->stats.file_opens++;
	}
	if (s->files.n >= s->max_files)
		symbolizer_evict_lru(s);
	VEC_PUSH(&s->files, f);
	return f;
}

static struct symbolizer_file *symbolizer_file_get(struct symbolizer *s, const char *path,
						   const char *build_id)
{
	struct symbolizer_file *f = NULL;
	size_t i;

	for (i = 0; i < s->files.n; i++) {
		f = s->files.v[i];
		if (strcmp(f->path, path) == 0 && strcasecmp(f->build_id, build_id) == 0)
			break;
	}
	if (i == s->files.n) {
		f = symbolizer_file_open(s, path, build_id);
	} else if (f->state == SYM_FILE_MISSING && prof_now_ns() >= f->retry_ns) {
		symbolizer_file_free(f);
		s->files.v[i] = s->files.v[--s->files.n];
		f = symbolizer_file_open(s, path, build_id);
	}
	f->last_use = ++s->tick;
	return f;
}

int symbolizer_lookup(struct symbolizer *s, const char *path, const char *build_id, uint64_t vaddr,
		      char *out, size_t outsz)
{
	const struct symbolizer_memo *m;
	struct symbolizer_file *f;
	const char *name;
	uint32_t key, name_id;
	int rc = -ENOENT;

	if (!s || !path || !out || outsz == 0)
		return -EINVAL;
	if (!build_id)
		build_id = "";
	out[0] = '\0';
	pthread_mutex_lock(&s->lock);
	s->stats.lookups++;
	key = symbolizer_memo_key(s, path, build_id, false);
	if (key != UINT32_MAX && (m = symbolizer_memo_find(s, key, vaddr)) != NULL) {
		s->stats.memo_hits++;
		if (m->name != SYMBOLIZER_NONE) {
			snprintf(out, outsz, "%s", strtab_get(&s->strs, m->name));
			rc = 0;
		}
		goto out;
	}
	f = symbolizer_file_get(s, path, build_id);
	if (f->state != SYM_FILE_OK)
		goto out;
	name = sym_elf_lookup(f->elf, vaddr, NULL);
	if (s->memo_n >= SYMBOLIZER_MEMO_MAX)
		symbolizer_memo_clear(s);
	key = symbolizer_memo_key(s, path, build_id, true);
	name_id = name ? strtab_intern_cstr(&s->strs, name) : SYMBOLIZER_NONE;
	symbolizer_memo_insert(s, key, vaddr, name_id);
	if (name) {
		snprintf(out, outsz, "%s", name);
		rc = 0;
	}
out:
	pthread_mutex_unlock(&s->lock);
	return rc;
}

void symbolizer_get_stats(struct symbolizer *s, struct symbolizer_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->stats;
	pthread_mutex_unlock(&s->lock);
}
