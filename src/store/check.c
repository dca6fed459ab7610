// SPDX-License-Identifier: Apache-2.0
/*
 * check.c - store_check_dir: the read-only verifier behind `profd store
 * check` (in the spirit of git fsck and redis-check-rdb). It trusts
 * nothing it reads and changes nothing: blocks are verified file by file
 * and page by page, the WAL record by record, and the cross-file
 * invariant that makes "exactly once" hold is checked too: no WAL segment
 * is held by two blocks unless one lists the other as merged into it.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "store/block.h"
#include "store/store.h"

#include <dirent.h>
#include <sys/stat.h>

typedef void (*check_report_fn)(void *arg, enum store_check_level lvl, const char *path,
				int64_t offset, const char *msg);

struct checker {
	check_report_fn report;
	void *arg;
	struct store_check_result *res;
};

static void say(struct checker *c, enum store_check_level lvl, const char *path, int64_t off,
		const char *fmt, ...) PROF_PRINTF(5, 6);
static void say(struct checker *c, enum store_check_level lvl, const char *path, int64_t off,
		const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (lvl == STORE_CHECK_ERROR)
		c->res->errors++;
	if (lvl == STORE_CHECK_WARNING)
		c->res->warnings++;
	c->report(c->arg, lvl, path, off, msg);
}

/* The file named at the start of a block error message ("DIR/blocks/x/samples: ..."). */
static void say_block_error(struct checker *c, const char *dir, const struct prof_err *err)
{
	char path[512];
	const char *colon = strstr(err->msg, ": ");
	size_t n = colon ? (size_t)(colon - err->msg) : 0;

	if (n && n < sizeof(path) && !strncmp(err->msg, dir, strlen(dir))) {
		memcpy(path, err->msg, n);
		path[n] = '\0';
		say(c, STORE_CHECK_ERROR, path, err->offset, "%s", colon + 2);
	} else {
		say(c, STORE_CHECK_ERROR, dir, err->offset, "%s", err->msg);
	}
}

struct blkinfo {
	uint64_t id, wal_first, wal_last;
	uint64_t *sources;
	uint32_t nsources;
	char *dir;
};

static bool lists(const struct blkinfo *b, uint64_t id)
{
	for (uint32_t i = 0; i < b->nsources; i++)
		if (b->sources[i] == id)
			return true;
	return false;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static uint64_t check_blocks(struct checker *c, const char *dir)
{
	char *bdir = xasprintf("%s/blocks", dir);
	DIR *d = opendir(bdir);
	struct dirent *de;
	VEC(char *) names = { 0 };
	VEC(struct blkinfo) infos = { 0 };
	uint64_t covered = 0;

	if (!d) {
		if (errno != ENOENT)
			say(c, STORE_CHECK_ERROR, bdir, -1, "cannot list: %s", strerror(errno));
		free(bdir);
		return 0;
	}
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			VEC_PUSH(&names, xstrdup(de->d_name));
	closedir(d);
	if (names.n > 1)
		qsort(names.v, names.n, sizeof(*names.v), cmp_name);
	for (size_t i = 0; i < names.n; i++) {
		const char *n = names.v[i];
		size_t len = strlen(n);
		char *path = xasprintf("%s/%s", bdir, n);

		if (len > 4 && !strcmp(n + len - 4, ".tmp")) {
			say(c, STORE_CHECK_NOTE, path, -1,
			    "left by an interrupted block write; removed at the next open");
		} else if (len > 4 && !strcmp(n + len - 4, ".del")) {
			say(c, STORE_CHECK_NOTE, path, -1,
			    "left by an interrupted block deletion; removed at the next open");
		} else if (len != 16 || strspn(n, "0123456789abcdef") != 16) {
			say(c, STORE_CHECK_NOTE, path, -1, "not a block; ignored");
		} else {
			struct prof_err err;
			uint64_t rows;
			struct store_block_meta m;
			uint64_t *src = NULL;

			prof_err_init(&err);
			c->res->blocks++;
			if (store_block_check(path, &rows, &err)) {
				say_block_error(c, path, &err);
			} else {
				c->res->block_rows += rows;
				prof_err_init(&err);
				store_block_read_meta(path, &m, &src, &err);
				say(c, STORE_CHECK_OK, path, -1,
				    "rows=%" PRIu64 " series=%" PRIu64 " stacks=%" PRIu64
				    " level=%u wal=%" PRIu64 "..%" PRIu64,
				    rows, m.nseries, m.nstacks, m.level, m.wal_first, m.wal_last);
			}
			/* For the cross-block checks, whatever meta is readable. */
			prof_err_init(&err);
			free(src);
			src = NULL;
			if (store_block_read_meta(path, &m, &src, &err) == 0) {
				struct blkinfo bi = { m.id, m.wal_first, m.wal_last,
						      src,  m.nsources,	 xstrdup(path) };
				VEC_PUSH(&infos, bi);
				covered = PROF_MAX(covered, m.wal_last);
			}
		}
		free(path);
	}
	/* Exactly once: two blocks holding one WAL segment is a sample stored
	 * twice, unless one is a compaction source the next open deletes. */
	for (size_t i = 0; i < infos.n; i++) {
		const struct blkinfo *a = &infos.v[i];
		bool merged = false;

		for (size_t j = 0; j < infos.n && !merged; j++)
			merged = j != i && lists(&infos.v[j], a->id);
		if (merged) {
			say(c, STORE_CHECK_NOTE, a->dir, -1,
			    "already merged into another block; deleted at the next open");
			continue;
		}
		for (size_t j = i + 1; j < infos.n; j++) {
			const struct blkinfo *b = &infos.v[j];

			/*
			 * A compacted block's range is the hull of its sources' ranges,
			 * and compaction merges by time window: blocks of one day can
			 * come from WAL segments 1 and 3 while segment 2's block (another
			 * day) stays apart, so a hull overlapping another block proves
			 * nothing. Only two flush blocks (each holding exactly the
			 * segments of its range) overlapping are a sample stored twice;
			 * a compaction's leftover sources are caught by the lists above.
			 */
			if (!a->wal_first || !b->wal_first || a->nsources || b->nsources ||
			    lists(b, a->id) || lists(a, b->id))
				continue;
			bool bmerged = false;
			for (size_t k = 0; k < infos.n && !bmerged; k++)
				bmerged = k != j && lists(&infos.v[k], b->id);
			if (!bmerged && a->wal_first <= b->wal_last && b->wal_first <= a->wal_last)
				say(c, STORE_CHECK_ERROR, b->dir, -1,
				    "holds WAL segments %" PRIu64 "..%" PRIu64 ", overlapping %s "
				    "(%" PRIu64 "..%" PRIu64 "): rows would be counted twice",
				    b->wal_first, b->wal_last, a->dir, a->wal_first, a->wal_last);
		}
	}
	for (size_t i = 0; i < infos.n; i++) {
		free(infos.v[i].sources);
		free(infos.v[i].dir);
	}
	VEC_FREE(&infos);
	for (size_t i = 0; i < names.n; i++)
		free(names.v[i]);
	VEC_FREE(&names);
	free(bdir);
	return covered;
}

/* Each WAL record not in a block must decode as ingest would accept it. */
static int check_record(void *arg, const struct store_wal_record *rec, struct prof_err *err)
{
	struct fmt_otlp_batch batch;
	int rc;

	(void)arg;
	memset(&batch, 0, sizeof(batch));
	if (rec->type == STORE_WAL_PPROF)
		rc = store_wal_pprof_decode(rec->payload, rec->len, &batch.profiles, &batch.n, err);
	else if (rec->type == STORE_WAL_OTLP)
		rc = fmt_otlp_decode(rec->payload, rec->len, 0, &batch, err);
	else
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1, "unknown record type %u",
				    rec->type);
	for (size_t i = 0; i < batch.n && !rc; i++) {
		rc = model_profile_validate(&batch.profiles[i], err);
		if (!rc)
			rc = store_head_check(&batch.profiles[i], err);
	}
	fmt_otlp_batch_release(&batch);
	return rc;
}

static void wal_report(void *arg, enum store_wal_issue lvl, const char *path, int64_t off,
		       const char *msg)
{
	struct checker *c = arg;

	say(c,
	    lvl == STORE_WAL_ERROR     ? STORE_CHECK_ERROR
	    : lvl == STORE_WAL_WARNING ? STORE_CHECK_WARNING
				       : STORE_CHECK_NOTE,
	    path, off, "%s", msg);
}

int store_check_dir(const char *dir, check_report_fn report, void *arg,
		    struct store_check_result *res)
{
	struct checker c = { report, arg, res };
	struct stat st;

	memset(res, 0, sizeof(*res));
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return -ENOENT;
	/* A store has wal/ or blocks/: anything else is the wrong directory. */
	char *w = xasprintf("%s/wal", dir), *b = xasprintf("%s/blocks", dir);
	bool is_store = (stat(w, &st) == 0 && S_ISDIR(st.st_mode)) ||
			(stat(b, &st) == 0 && S_ISDIR(st.st_mode));

	free(w);
	free(b);
	if (!is_store) {
		say(&c, STORE_CHECK_ERROR, dir, -1,
		    "not a profd store: no wal/ or blocks/ in it (a dataset's store is "
		    "DATA/<dataset>, e.g. data/default)");
		return -PROF_ECORRUPT;
	}
	uint64_t covered = check_blocks(&c, dir);
	char *wal = xasprintf("%s/wal", dir);
	int nerr = store_wal_verify(wal, covered, check_record, &c, wal_report, &res->wal_records);
	if (nerr < 0)
		say(&c, STORE_CHECK_ERROR, wal, -1, "cannot list: %s", strerror(-nerr));
	/* Count the segments looked at. */
	DIR *d = opendir(wal);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strlen(de->d_name) == 12 && !strcmp(de->d_name + 8, ".wal"))
			res->wal_segments++;
	if (d)
		closedir(d);
	free(wal);
	return res->errors ? -PROF_ECORRUPT : 0;
}
