// SPDX-License-Identifier: Apache-2.0
/*
 * symbolizer.c - query-time symbolization with caches; see symbolizer.h.
 *
 * Two caches behind one mutex:
 *
 *   files  - up to max_files entries keyed by (path, expected build ID),
 *            least recently used evicted first. An entry holds what was
 *            found for that binary (its ELF index, a separate debug file's
 *            ELF index, the DWARF index, the Go pclntab index), or
 *            remembers why there is none: the build ID differed
 *            (remembered until evicted or invalidated: the file at that
 *            path is another binary), or nothing could be opened (retried
 *            after SYMBOLIZER_RETRY_NS, since a missing file may be
 *            installed later).
 *   memo   - (key, vaddr) -> an answer record in @blob, where key is the
 *            build ID, or "path:" plus the path when the caller gave no
 *            build ID (keys interned in @strs). Only answers that came
 *            from an opened file are memoized (frames, or "nothing
 *            there"), so a miss caused by a missing file is never served
 *            from the memo. Names and files are interned (one copy per
 *            distinct string: a binary has far fewer functions and files
 *            than addresses, so they stay cache-resident); the memo slot
 *            (32 bytes) holds the answer's innermost frame as ids, and an
 *            inline chain's further frames go to a record in the blob:
 *
 *              n - 1 times: u32 name id, u32 file id, u32 line, u8 source
 *
 *            so a warm lookup of an address without inlined callers
 *            touches one memo cache line and the (hot) strings; the warm
 *            path is bound by memory latency, not by work.
 *
 *            When the memo reaches SYMBOLIZER_MEMO_MAX entries or the
 *            records SYMBOLIZER_BLOB_MAX bytes it is cleared wholesale:
 *            cheap, and bounds memory without per-entry LRU. An
 *            invalidation clears it too (uploads are rare; the memo refills
 *            at query speed).
 *
 * The mutex is held while a file is opened and indexed: simple and
 * correct; concurrent lookups of other files wait for that one open. A
 * server that symbolizes in bulk sees mostly memo hits.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/strtab.h"
#include "symbolize/debuginfo.h"
#include "symbolize/debuginfod.h"
#include "symbolize/demangle.h"
#include "symbolize/dwarf.h"
#include "symbolize/elf.h"
#include "symbolize/gopclntab.h"
#include "symbolize/symbolizer.h"

#include <limits.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define SYMBOLIZER_RETRY_NS  (30 * 1000000000LL) /* re-try a missing file after 30 s */
#define SYMBOLIZER_MEMO_MAX  (1u << 20)		 /* memo entries before it is cleared */
#define SYMBOLIZER_BLOB_MAX  (96u << 20)	 /* bytes of answer records before it is cleared */
#define SYMBOLIZER_NONE	     UINT32_MAX		 /* memo: nothing at that address */
#define SYMBOLIZER_STRS_MAX  (64u << 20) /* bytes of interned names/files before it is cleared */
#define SYMBOLIZER_FRAME_REC 13		 /* name id, file id, line, source */

_Static_assert(SYM_FRAMES_MAX <= 255, "answer record fields");

enum symbolizer_state { SYM_FILE_OK, SYM_FILE_MISMATCH, SYM_FILE_MISSING };

struct symbolizer_file {
	char *path, *build_id; /* build_id lowercase as requested, "" = unchecked */
	enum symbolizer_state state;
	int64_t retry_ns; /* SYM_FILE_MISSING: when to try again */
	uint64_t last_use;
	/* SYM_FILE_OK: at least one of bin and dbg */
	struct sym_elf *bin;	  /* the binary */
	struct sym_elf *dbg;	  /* a separate debug file */
	struct sym_dwarf *dwarf;  /* DWARF of dbg or bin */
	struct sym_gopclntab *go; /* over bin's (or dbg's) .gopclntab bytes */
};

struct symbolizer_memo {
	uint64_t vaddr;
	uint32_t key;	     /* strtab id; 0 = empty slot (id 0 is "" and never a key) */
	uint32_t off;	     /* frames 1..n-1 in blob (n > 1) */
	uint32_t name, file; /* frame 0: strtab ids */
	uint32_t line;
	uint8_t n; /* frames; 0 = nothing at that address */
	uint8_t source;
};

struct symbolizer {
	pthread_mutex_t lock;
	size_t max_files;
	VEC(struct symbolizer_file *) files;
	uint64_t tick;
	struct sym_debuginfo *store;
	struct sym_debuginfod *dfd; /* debuginfod fetcher, or NULL */
	char *debug_root;
	VEC(char *) roots; /* canonical directories whose files may be opened */
	VEC(char *) own;   /* canonical files of this process, used with a matching build ID */

	struct strtab strs;
	struct symbolizer_memo *memo;
	size_t memo_n, memo_cap;   /* memo_cap: power of two */
	VEC(char) blob;		   /* inline chains' outer frames */
	size_t str_bytes;	   /* bytes interned into strs since the last clear */
	struct sym_frame *scratch; /* SYM_FRAMES_MAX frames for resolving a miss */
	/* The memo key of the last (path, build ID) asked: callers ask runs of one binary. */
	char *last_path, *last_bid;
	uint32_t last_key; /* UINT32_MAX = none */
	bool last_off;	   /* ... for file-offset addresses */

	struct symbolizer_stats stats;
};

struct symbolizer *symbolizer_new(size_t max_files)
{
	struct symbolizer *s = xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	s->max_files = max_files ? max_files : 1;
	s->debug_root = xstrdup(SYMBOLIZER_DEFAULT_DEBUG_ROOT);
	s->scratch = xcalloc(SYM_FRAMES_MAX, sizeof(*s->scratch));
	s->last_key = UINT32_MAX;
	strtab_init(&s->strs);
	return s;
}

static void symbolizer_file_free(struct symbolizer_file *f)
{
	if (!f)
		return;
	sym_gopclntab_free(f->go);
	sym_dwarf_free(f->dwarf);
	sym_elf_free(f->dbg);
	sym_elf_free(f->bin);
	free(f->path);
	free(f->build_id);
	free(f);
}

static void symbolizer_memo_clear(struct symbolizer *s)
{
	s->last_key = UINT32_MAX;
	free(s->memo);
	s->memo = NULL;
	s->memo_n = s->memo_cap = 0;
	VEC_FREE(&s->blob);
	strtab_release(&s->strs);
	strtab_init(&s->strs);
	s->str_bytes = 0;
}

static void symbolizer_files_clear(struct symbolizer *s)
{
	for (size_t i = 0; i < s->files.n; i++)
		symbolizer_file_free(s->files.v[i]);
	s->files.n = 0;
}

void symbolizer_free(struct symbolizer *s)
{
	if (!s)
		return;
	sym_debuginfod_free(s->dfd); /* first: its callback uses @s */
	symbolizer_files_clear(s);
	VEC_FREE(&s->files);
	free(s->memo);
	VEC_FREE(&s->blob);
	strtab_release(&s->strs);
	free(s->scratch);
	free(s->last_path);
	free(s->last_bid);
	free(s->debug_root);
	for (size_t i = 0; i < s->roots.n; i++)
		free(s->roots.v[i]);
	VEC_FREE(&s->roots);
	for (size_t i = 0; i < s->own.n; i++)
		free(s->own.v[i]);
	VEC_FREE(&s->own);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

void symbolizer_set_debuginfo(struct symbolizer *s, struct sym_debuginfo *store)
{
	pthread_mutex_lock(&s->lock);
	s->store = store;
	symbolizer_files_clear(s);
	symbolizer_memo_clear(s);
	pthread_mutex_unlock(&s->lock);
}

struct sym_debuginfo *symbolizer_debuginfo(struct symbolizer *s)
{
	struct sym_debuginfo *d;

	pthread_mutex_lock(&s->lock);
	d = s->store;
	pthread_mutex_unlock(&s->lock);
	return d;
}

void symbolizer_set_debug_root(struct symbolizer *s, const char *dir)
{
	pthread_mutex_lock(&s->lock);
	free(s->debug_root);
	s->debug_root = xstrdup(dir ? dir : SYMBOLIZER_DEFAULT_DEBUG_ROOT);
	symbolizer_files_clear(s);
	symbolizer_memo_clear(s);
	pthread_mutex_unlock(&s->lock);
}

int symbolizer_set_symbol_paths(struct symbolizer *s, const char *const *dirs, size_t n,
				struct prof_err *err)
{
	VEC(char *) roots = { 0 };
	char canon[PATH_MAX];
	struct stat st;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		if (!dirs[i] || dirs[i][0] != '/')
			rc = prof_err_set(err, -EINVAL, -1,
					  "symbol path '%s' is not an absolute directory",
					  dirs[i] ? dirs[i] : "");
		else if (!realpath(dirs[i], canon) || stat(canon, &st) != 0)
			rc = prof_err_set(err, -errno, -1, "symbol path %s: %s", dirs[i],
					  strerror(errno));
		else if (!S_ISDIR(st.st_mode))
			rc = prof_err_set(err, -ENOTDIR, -1, "symbol path %s is not a directory",
					  dirs[i]);
		else
			VEC_PUSH(&roots, xstrdup(canon));
	}
	if (rc) {
		for (size_t i = 0; i < roots.n; i++)
			free(roots.v[i]);
		VEC_FREE(&roots);
		return rc;
	}
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->roots.n; i++)
		free(s->roots.v[i]);
	VEC_FREE(&s->roots);
	s->roots.v = roots.v;
	s->roots.n = roots.n;
	s->roots.cap = roots.cap;
	symbolizer_files_clear(s);
	symbolizer_memo_clear(s);
	pthread_mutex_unlock(&s->lock);
	return 0;
}

static int symbolizer_own_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct symbolizer *s = arg;
	char canon[PATH_MAX];
	const char *name = info->dlpi_name;

	(void)size;
	/* The executable itself comes with an empty name. */
	if (!name || !name[0])
		name = "/proc/self/exe";
	if (realpath(name, canon))
		VEC_PUSH(&s->own, xstrdup(canon));
	return 0;
}

void symbolizer_allow_own_objects(struct symbolizer *s)
{
	pthread_mutex_lock(&s->lock);
	if (!s->own.n)
		dl_iterate_phdr(symbolizer_own_cb, s);
	symbolizer_files_clear(s);
	symbolizer_memo_clear(s);
	pthread_mutex_unlock(&s->lock);
}

/*
 * May the symbolizer open local file @path (a mapping's path from the
 * data, or a debug file candidate)? Only an absolute path whose
 * canonical form (symlinks and "..", resolved) lies inside a symbol path,
 * or is one of this process's own files when @build_id is set (the file
 * must then carry it). The canonical path goes to @canon (PATH_MAX
 * bytes), to be opened instead of @path. Lock held.
 */
static bool symbolizer_local_ok(struct symbolizer *s, const char *path, const char *build_id,
				char *canon)
{
	if (path[0] != '/' || (!s->roots.n && !(build_id[0] && s->own.n)))
		return false;
	if (!realpath(path, canon))
		return false;
	for (size_t i = 0; i < s->roots.n; i++) {
		const char *r = s->roots.v[i];
		size_t n = strlen(r);

		if (!strcmp(r, "/") ||
		    (!strncmp(canon, r, n) && (canon[n] == '/' || canon[n] == '\0')))
			return true;
	}
	for (size_t i = 0; build_id[0] && i < s->own.n; i++)
		if (!strcmp(canon, s->own.v[i]))
			return true;
	return false;
}

static void symbolizer_lower(const char *in, char *out, size_t outsz)
{
	size_t i = 0;

	for (; in[i] && i + 1 < outsz; i++)
		out[i] = (in[i] >= 'A' && in[i] <= 'Z') ? (char)(in[i] + 32) : in[i];
	out[i] = '\0';
}

void symbolizer_invalidate(struct symbolizer *s, const char *build_id)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1];
	bool dropped = false;

	if (!s || !build_id || !build_id[0])
		return;
	symbolizer_lower(build_id, id, sizeof(id));
	pthread_mutex_lock(&s->lock);
	for (size_t i = 0; i < s->files.n;) {
		if (!strcmp(s->files.v[i]->build_id, id)) {
			symbolizer_file_free(s->files.v[i]);
			s->files.v[i] = s->files.v[--s->files.n];
			dropped = true;
		} else {
			i++;
		}
	}
	if (s->memo_n)
		dropped = true;
	symbolizer_memo_clear(s);
	if (dropped)
		s->stats.invalidations++;
	pthread_mutex_unlock(&s->lock);
}

static size_t symbolizer_memo_slot(const struct symbolizer *s, uint32_t key, uint64_t vaddr)
{
	uint64_t in[2] = { key, vaddr };

	return (size_t)XXH3_64bits(in, sizeof(in)) & (s->memo_cap - 1);
}

/* The memo entry for (key, vaddr), or NULL. */
static struct symbolizer_memo *symbolizer_memo_find(const struct symbolizer *s, uint32_t key,
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

static struct symbolizer_memo *symbolizer_memo_insert(struct symbolizer *s, uint32_t key,
						      uint64_t vaddr)
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
	memset(&s->memo[i], 0, sizeof(s->memo[i]));
	s->memo[i].key = key;
	s->memo[i].vaddr = vaddr;
	s->memo_n++;
	return &s->memo[i];
}

/* Intern @str for an answer, counting the bytes it adds. */
static uint32_t symbolizer_str(struct symbolizer *s, const char *str)
{
	uint32_t n = s->strs.n, id = strtab_intern_cstr(&s->strs, str);

	if (s->strs.n != n)
		s->str_bytes += strlen(str) + 1 + sizeof(char *) + 2 * sizeof(uint32_t);
	return id;
}

/* Frame @i (0 = innermost) of memo answer @m into @out. */
static void symbolizer_memo_frame(const struct symbolizer *s, const struct symbolizer_memo *m,
				  size_t i, struct sym_frame *out)
{
	uint32_t name = m->name, file = m->file, line = m->line;
	uint8_t source = m->source;
	size_t cn, cf;

	if (i > 0) {
		const char *rec = s->blob.v + m->off + (i - 1) * SYMBOLIZER_FRAME_REC;

		memcpy(&name, rec, 4);
		memcpy(&file, rec + 4, 4);
		memcpy(&line, rec + 8, 4);
		source = (uint8_t)rec[12];
	}
	out->line = line;
	out->source = source;
	cn = PROF_MIN((size_t)s->strs.len[name], sizeof(out->name) - 1);
	cf = PROF_MIN((size_t)s->strs.len[file], sizeof(out->file) - 1);
	memcpy(out->name, s->strs.s[name], cn);
	out->name[cn] = '\0';
	memcpy(out->file, s->strs.s[file], cf);
	out->file[cf] = '\0';
}

/*
 * Memo key string for this request: the build ID, else "path:<path>";
 * for addresses that are file offsets (@off) "o:" before either.
 */
static uint32_t symbolizer_memo_key_slow(struct symbolizer *s, const char *path,
					 const char *build_id, bool off, bool add)
{
	char stackbuf[512];
	char *k = stackbuf;
	size_t n;
	uint32_t id;

	if (build_id[0] && !off) /* already lowercase */
		return add ? strtab_intern_cstr(&s->strs, build_id)
			   : strtab_find(&s->strs, build_id, strlen(build_id));
	n = (build_id[0] ? strlen(build_id) : strlen(path) + 5) + (off ? 2 : 0);
	if (n + 1 > sizeof(stackbuf))
		k = xmalloc(n + 1);
	snprintf(k, n + 1, "%s%s%s", off ? "o:" : "",
		 build_id[0] ? "" : "path:", build_id[0] ? build_id : path);
	id = add ? strtab_intern(&s->strs, k, n) : strtab_find(&s->strs, k, n);
	if (k != stackbuf)
		free(k);
	return id;
}

/* The memo key, remembering the last one asked (cleared with the memo). */
static uint32_t symbolizer_memo_key(struct symbolizer *s, const char *path, const char *build_id,
				    bool off, bool add)
{
	uint32_t id;

	if (s->last_key != UINT32_MAX && s->last_off == off && !strcmp(s->last_bid, build_id) &&
	    (build_id[0] || !strcmp(s->last_path, path)))
		return s->last_key;
	id = symbolizer_memo_key_slow(s, path, build_id, off, add);
	if (id != UINT32_MAX) {
		s->last_off = off;
		free(s->last_path);
		free(s->last_bid);
		s->last_path = xstrdup(path);
		s->last_bid = xstrdup(build_id);
		s->last_key = id;
	}
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

/* Open @path as an ELF index; NULL on any failure. */
static struct sym_elf *symbolizer_open_elf(const char *path)
{
	struct sym_elf *e = NULL;
	struct prof_err err;

	prof_err_init(&err);
	if (sym_elf_open(path, &e, &err) != 0)
		return NULL;
	return e;
}

static bool symbolizer_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/*
 * A separate debug file for @f (whose binary, if any, is at @bin_path)
 * with build ID @id (may be ""): system debug root by build ID, then
 * .gnu_debuglink (gdb's order). Sets f->dbg and @dbg_path on success.
 */
static void symbolizer_find_debug(struct symbolizer *s, struct symbolizer_file *f,
				  const char *bin_path, const char *id, char *dbg_path,
				  size_t dbg_pathsz)
{
	char cand[4][PATH_MAX];
	size_t ncand = 0;
	const char *link = f->bin ? sym_elf_info(f->bin)->debuglink : NULL;
	const char *slash = strrchr(bin_path, '/');

	if (strlen(id) > 2)
		snprintf(cand[ncand++], sizeof(cand[0]), "%s/.build-id/%.2s/%s.debug",
			 s->debug_root, id, id + 2);
	if (link && slash && !strchr(link, '/')) {
		int dlen = (int)(slash - bin_path);

		snprintf(cand[ncand++], sizeof(cand[0]), "%.*s/%s", dlen, bin_path, link);
		snprintf(cand[ncand++], sizeof(cand[0]), "%.*s/.debug/%s", dlen, bin_path, link);
		snprintf(cand[ncand++], sizeof(cand[0]), "%s%.*s/%s", s->debug_root, dlen, bin_path,
			 link);
	}
	for (size_t i = 0; i < ncand && !f->dbg; i++) {
		struct sym_elf *e;

		char canon[PATH_MAX];

		if (!strcmp(cand[i], bin_path))
			continue;
		if (!symbolizer_local_ok(s, cand[i], "", canon)) {
			s->stats.refused++;
			continue;
		}
		if (!strcmp(canon, bin_path) || !(e = symbolizer_open_elf(canon)))
			continue;
		/* Use it only when it is this build's: by build ID, or both lack one. */
		if (id[0] ? strcmp(sym_elf_build_id(e), id) != 0 : sym_elf_build_id(e)[0] != '\0') {
			sym_elf_free(e);
			continue;
		}
		if ((size_t)snprintf(dbg_path, dbg_pathsz, "%s", canon) >= dbg_pathsz) {
			sym_elf_free(e);
			continue;
		}
		f->dbg = e;
		s->stats.debug_files++;
	}
}

/* Open what (f->path, f->build_id) refers to; sets f->state and the indexes. */
static void symbolizer_file_load(struct symbolizer *s, struct symbolizer_file *f)
{
	char bin_path[PATH_MAX] = "", dbg_path[PATH_MAX] = "", p[PATH_MAX];
	const char *id = f->build_id;
	bool mismatch = false;
	struct prof_err err;

	if (id[0] && s->store) {
		if (sym_debuginfo_path(s->store, id, SYM_DI_EXECUTABLE, p, sizeof(p)) == 0 &&
		    (f->bin = symbolizer_open_elf(p)) != NULL) {
			snprintf(bin_path, sizeof(bin_path), "%s", p);
			s->stats.store_hits++;
		}
		if (sym_debuginfo_path(s->store, id, SYM_DI_DEBUGINFO, p, sizeof(p)) == 0 &&
		    !(f->bin && symbolizer_same_file(p, bin_path)) &&
		    (f->dbg = symbolizer_open_elf(p)) != NULL) {
			snprintf(dbg_path, sizeof(dbg_path), "%s", p);
			s->stats.store_hits++;
		}
	}
	if (!f->bin && f->path[0] && !symbolizer_local_ok(s, f->path, id, p))
		s->stats.refused++;
	else if (!f->bin && f->path[0]) {
		struct sym_elf *e = symbolizer_open_elf(p);

		if (e && id[0] && strcmp(sym_elf_build_id(e), id) != 0) {
			sym_elf_free(e);
			mismatch = true;
		} else if (e) {
			f->bin = e;
			snprintf(bin_path, sizeof(bin_path), "%s", p);
		}
	}
	const char *want = id[0] ? id : (f->bin ? sym_elf_build_id(f->bin) : "");
	if (!f->dbg && !(f->bin && sym_elf_info(f->bin)->has_dwarf))
		symbolizer_find_debug(s, f, bin_path, want, dbg_path, sizeof(dbg_path));
	/* Last resort: what the debuginfod fetcher has (never waits; queues a fetch). */
	if (s->dfd && want[0] && !f->dbg && !(f->bin && sym_elf_info(f->bin)->has_dwarf) &&
	    sym_debuginfod_lookup(s->dfd, want, SYM_DI_DEBUGINFO, p, sizeof(p)) == 1 &&
	    (f->dbg = symbolizer_open_elf(p)) != NULL) {
		if (strcmp(sym_elf_build_id(f->dbg), want) != 0) {
			sym_elf_free(f->dbg);
			f->dbg = NULL;
		} else {
			snprintf(dbg_path, sizeof(dbg_path), "%s", p);
			s->stats.debuginfod_hits++;
		}
	}
	if (s->dfd && want[0] && !f->bin &&
	    sym_debuginfod_lookup(s->dfd, want, SYM_DI_EXECUTABLE, p, sizeof(p)) == 1 &&
	    (f->bin = symbolizer_open_elf(p)) != NULL) {
		if (strcmp(sym_elf_build_id(f->bin), want) != 0) {
			sym_elf_free(f->bin);
			f->bin = NULL;
		} else {
			snprintf(bin_path, sizeof(bin_path), "%s", p);
			s->stats.debuginfod_hits++;
		}
	}
	if (!f->bin && !f->dbg) {
		if (mismatch) {
			f->state = SYM_FILE_MISMATCH;
			s->stats.mismatches++;
		} else {
			f->state = SYM_FILE_MISSING;
			f->retry_ns = prof_now_ns() + SYMBOLIZER_RETRY_NS;
			s->stats.missing++;
		}
		return;
	}
	f->state = SYM_FILE_OK;
	s->stats.file_opens++;
	prof_err_init(&err);
	if (f->dbg && sym_elf_info(f->dbg)->has_dwarf)
		sym_dwarf_open(dbg_path, &f->dwarf, &err);
	else if (f->bin && sym_elf_info(f->bin)->has_dwarf)
		sym_dwarf_open(bin_path, &f->dwarf, &err);
	for (int i = 0; i < 2 && !f->go; i++) {
		const struct sym_elf *e = i == 0 ? f->bin : f->dbg;
		const uint8_t *tab;
		size_t n;

		if (e && (tab = sym_elf_gopclntab(e, &n)) != NULL &&
		    sym_gopclntab_parse(tab, n, sym_elf_info(e)->text_vaddr, &f->go, &err) == 0 &&
		    (tab = sym_elf_gofunc(e, &n)) != NULL)
			sym_gopclntab_set_funcdata(f->go, tab, n);
	}
}

static struct symbolizer_file *symbolizer_file_open(struct symbolizer *s, const char *path,
						    const char *build_id)
{
	struct symbolizer_file *f = xcalloc(1, sizeof(*f));

	f->path = xstrdup(path);
	f->build_id = xstrdup(build_id);
	symbolizer_file_load(s, f);
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
		if (strcmp(f->path, path) == 0 && strcmp(f->build_id, build_id) == 0)
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

/* Symbol-table frame from @e if it has symbols of kind @kind. */
static const char *symbolizer_symtab(const struct sym_elf *e, uint8_t kind, uint64_t vaddr)
{
	if (!e || sym_elf_info(e)->symbols != kind)
		return NULL;
	return sym_elf_lookup(e, vaddr, NULL);
}

/* Resolve @vaddr in @f into out[0..max); returns the number of frames. */
static size_t symbolizer_file_frames(struct symbolizer_file *f, uint64_t vaddr,
				     struct sym_frame *out, size_t max)
{
	const char *name;
	uint8_t src = SYM_SRC_SYMTAB;
	int n;

	if (f->dwarf && (n = sym_dwarf_lookup(f->dwarf, vaddr, out, max)) > 0)
		return (size_t)n;
	name = symbolizer_symtab(f->dbg, SYM_SRC_SYMTAB, vaddr);
	if (!name)
		name = symbolizer_symtab(f->bin, SYM_SRC_SYMTAB, vaddr);
	if (f->go && (n = sym_gopclntab_lookup_frames(f->go, vaddr, out, max)) > 0 &&
	    (!name || !strcmp(name, out[n - 1].name)))
		return (size_t)n;
	if (!name) {
		src = SYM_SRC_DYNSYM;
		name = symbolizer_symtab(f->bin, SYM_SRC_DYNSYM, vaddr);
		if (!name)
			name = symbolizer_symtab(f->dbg, SYM_SRC_DYNSYM, vaddr);
	}
	if (!name)
		return 0;
	memset(&out[0], 0, sizeof(out[0]));
	sym_demangle(name, out[0].name, sizeof(out[0].name));
	out[0].source = src;
	return 1;
}

/*
 * The memo entry answering (path, build_id, vaddr), resolving and
 * memoizing a miss; NULL when no usable file exists. Lock held; the
 * entry is valid until the lock is dropped.
 */
/*
 * The ELF virtual address of file offset @off in @f's binary, through its
 * PT_LOAD segments (else a separate debug file's, when they keep file
 * offsets, as eu-strip's do and objcopy's do not): 1 and *@vaddr set, 0
 * when no segment holds @off (nothing there), -1 when no file tells.
 */
static int symbolizer_file_vaddr(const struct symbolizer_file *f, uint64_t off, uint64_t *vaddr)
{
	const struct sym_elf *e = f->bin && sym_elf_maps_offsets(f->bin)   ? f->bin
				  : f->dbg && sym_elf_maps_offsets(f->dbg) ? f->dbg
									   : NULL;

	if (!e)
		return -1;
	return sym_elf_offset_to_vaddr(e, off, vaddr) == 0 ? 1 : 0;
}

bool symbolizer_mapping_offset(const struct symbolizer_mapping *m, uint64_t addr, uint64_t *off)
{
	if (!m || m->start >= m->limit || (m->start == 0 && m->limit == UINT64_MAX))
		return false;
	if (addr < m->start || addr >= m->limit || addr - m->start > UINT64_MAX - m->offset)
		return false;
	*off = addr - m->start + m->offset;
	return true;
}

static const struct symbolizer_memo *symbolizer_resolve(struct symbolizer *s, const char *path,
							const char *build_id,
							const struct symbolizer_mapping *map,
							uint64_t addr)
{
	struct symbolizer_memo *m;
	struct symbolizer_file *f;
	uint64_t off = 0, vaddr = addr;
	bool om = symbolizer_mapping_offset(map, addr, &off);
	uint64_t at = om ? off : addr; /* the memo's address: file offset or ELF vaddr */
	uint32_t key;
	size_t n, need;

	s->stats.lookups++;
	key = symbolizer_memo_key(s, path, build_id, om, false);
	if (key != UINT32_MAX && (m = symbolizer_memo_find(s, key, at)) != NULL) {
		s->stats.memo_hits++;
		return m;
	}
	f = symbolizer_file_get(s, path, build_id);
	if (f->state != SYM_FILE_OK)
		return NULL;
	if (om) {
		int t = symbolizer_file_vaddr(f, off, &vaddr);

		/* No file maps offsets (only objcopy's debug file): take @addr as a vaddr. */
		if (t < 0) {
			s->stats.lookups--;
			return symbolizer_resolve(s, path, build_id, NULL, addr);
		}
		n = t ? symbolizer_file_frames(f, vaddr, s->scratch, SYM_FRAMES_MAX) : 0;
	} else {
		n = symbolizer_file_frames(f, vaddr, s->scratch, SYM_FRAMES_MAX);
	}
	need = n > 1 ? (n - 1) * SYMBOLIZER_FRAME_REC : 0;
	if (s->memo_n >= SYMBOLIZER_MEMO_MAX || s->blob.n + need > SYMBOLIZER_BLOB_MAX ||
	    s->str_bytes > SYMBOLIZER_STRS_MAX)
		symbolizer_memo_clear(s);
	key = symbolizer_memo_key(s, path, build_id, om, true);
	m = symbolizer_memo_insert(s, key, at);
	if (n == 0)
		return m;
	m->n = (uint8_t)n;
	m->off = (uint32_t)s->blob.n;
	VEC_RESERVE(&s->blob, need);
	for (size_t i = 0; i < n; i++) {
		const struct sym_frame *fr = &s->scratch[i];
		uint32_t name = symbolizer_str(s, fr->name), file = symbolizer_str(s, fr->file);

		if (i == 0) {
			m->name = name;
			m->file = file;
			m->line = fr->line;
			m->source = fr->source;
			continue;
		}
		char *w = s->blob.v + s->blob.n;

		memcpy(w, &name, 4);
		memcpy(w + 4, &file, 4);
		memcpy(w + 8, &fr->line, 4);
		w[12] = (char)fr->source;
		s->blob.n += SYMBOLIZER_FRAME_REC;
	}
	return m;
}

/* Validate arguments and lowercase the build ID into @id. */
static int symbolizer_args(struct symbolizer *s, const char *path, const char *build_id, char *id,
			   size_t idsz)
{
	if (!s || !path)
		return -EINVAL;
	/* A build ID names files: only hex digits, never a path (see parse_build_id_ok). */
	if (build_id && build_id[0] && !parse_build_id_ok(build_id, strlen(build_id)))
		return -EINVAL;
	symbolizer_lower(build_id ? build_id : "", id, idsz);
	if (!path[0] && !id[0])
		return -EINVAL;
	return 0;
}

int symbolizer_lookup_frames(struct symbolizer *s, const char *path, const char *build_id,
			     uint64_t vaddr, struct sym_frame *out, size_t max)
{
	return symbolizer_lookup_frames_mapped(s, path, build_id, NULL, vaddr, out, max);
}

int symbolizer_lookup_frames_mapped(struct symbolizer *s, const char *path, const char *build_id,
				    const struct symbolizer_mapping *map, uint64_t addr,
				    struct sym_frame *out, size_t max)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1];
	const struct symbolizer_memo *m;
	int rc = -ENOENT;

	if (!out || max == 0 || symbolizer_args(s, path, build_id, id, sizeof(id)))
		return -EINVAL;
	pthread_mutex_lock(&s->lock);
	m = symbolizer_resolve(s, path, id, map, addr);
	if (m && m->n) {
		size_t n = PROF_MIN((size_t)m->n, max);

		for (size_t i = 0; i < n; i++)
			symbolizer_memo_frame(s, m, i, &out[i]);
		rc = (int)n;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

int symbolizer_lookup(struct symbolizer *s, const char *path, const char *build_id, uint64_t vaddr,
		      char *out, size_t outsz)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1];
	const struct symbolizer_memo *m;
	int rc = -ENOENT;

	if (!out || outsz == 0 || symbolizer_args(s, path, build_id, id, sizeof(id)))
		return -EINVAL;
	out[0] = '\0';
	pthread_mutex_lock(&s->lock);
	m = symbolizer_resolve(s, path, id, NULL, vaddr);
	if (m && m->n) {
		/* The outermost frame is the last one. */
		uint32_t name = m->name;
		size_t n;

		if (m->n > 1)
			memcpy(&name, s->blob.v + m->off + (m->n - 2) * SYMBOLIZER_FRAME_REC, 4);
		n = PROF_MIN((size_t)s->strs.len[name], outsz - 1);
		memcpy(out, s->strs.s[name], n);
		out[n] = '\0';
		rc = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return rc;
}

static void symbolizer_dfd_done(void *arg, const char *build_id)
{
	symbolizer_invalidate(arg, build_id);
}

int symbolizer_enable_debuginfod(struct symbolizer *s, struct prof_err *err)
{
	struct sym_debuginfod *d = NULL;
	int rc;

	if (s->dfd)
		return 0;
	rc = sym_debuginfod_new(symbolizer_dfd_done, s, &d, err);
	if (rc)
		return rc;
	pthread_mutex_lock(&s->lock);
	s->dfd = d;
	symbolizer_files_clear(s); /* misses may now be answered */
	pthread_mutex_unlock(&s->lock);
	return 0;
}

const char *symbolizer_reason_name(enum symbolizer_reason r)
{
	switch (r) {
	case SYMBOLIZER_OK_DWARF:
		return "dwarf";
	case SYMBOLIZER_OK_SYMBOLS:
		return "symbols";
	case SYMBOLIZER_NO_FILE:
		return "no_debuginfo";
	case SYMBOLIZER_MISMATCH:
		return "build_id_mismatch";
	case SYMBOLIZER_STRIPPED:
		return "stripped";
	}
	return "unknown";
}

enum symbolizer_reason symbolizer_binary_status(struct symbolizer *s, const char *path,
						const char *build_id)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1];
	struct symbolizer_file *f;
	enum symbolizer_reason r;

	if (symbolizer_args(s, path, build_id, id, sizeof(id)))
		return SYMBOLIZER_NO_FILE;
	pthread_mutex_lock(&s->lock);
	f = symbolizer_file_get(s, path, id);
	if (f->state == SYM_FILE_MISMATCH)
		r = SYMBOLIZER_MISMATCH;
	else if (f->state == SYM_FILE_MISSING)
		r = SYMBOLIZER_NO_FILE;
	else if (f->dwarf)
		r = SYMBOLIZER_OK_DWARF;
	else if (f->go || (f->bin && sym_elf_info(f->bin)->symbols != SYM_SRC_NONE) ||
		 (f->dbg && sym_elf_info(f->dbg)->symbols != SYM_SRC_NONE))
		r = SYMBOLIZER_OK_SYMBOLS;
	else
		r = SYMBOLIZER_STRIPPED;
	pthread_mutex_unlock(&s->lock);
	return r;
}

void symbolizer_get_stats(struct symbolizer *s, struct symbolizer_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->stats;
	pthread_mutex_unlock(&s->lock);
}
