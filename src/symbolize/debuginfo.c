// SPDX-License-Identifier: Apache-2.0
/*
 * debuginfo.c - the debuginfo store by build ID; see debuginfo.h for the
 * layout and the replacement rule.
 *
 * Additions hold the store mutex from the check of the current entry to
 * the rename of the new meta file, so two uploads of one build ID cannot
 * interleave. Readers take no lock: each file they see is complete
 * (created under .tmp/ and renamed in), and the meta file is written last.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "symbolize/debuginfo.h"
#include "symbolize/elf.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYM_DI_META_MAGIC "profd-debuginfo 1"

struct sym_debuginfo {
	char *dir;
	pthread_mutex_t lock;
	uint64_t tmp_seq;
};

int sym_build_id_normalize(const char *s, char *out, struct prof_err *err)
{
	size_t n = s ? strnlen(s, SYM_BUILD_ID_MAX_HEX + 1) : 0;

	if (n < SYM_BUILD_ID_MIN_HEX || n > SYM_BUILD_ID_MAX_HEX || n % 2)
		return prof_err_set(err, -EINVAL, -1,
				    "build ID '%.*s' must be an even number of %d to %d hex digits",
				    (int)PROF_MIN(n, (size_t)SYM_BUILD_ID_MAX_HEX), s ? s : "",
				    SYM_BUILD_ID_MIN_HEX, SYM_BUILD_ID_MAX_HEX);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c >= 'A' && c <= 'F')
			c = (char)(c + 32);
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			return prof_err_set(err, -EINVAL, (int64_t)i,
					    "build ID has a non-hex character at position %zu", i);
		out[i] = c;
	}
	out[n] = '\0';
	return 0;
}

static int sym_di_mkdir(const char *path)
{
	struct stat st;

	if (mkdir(path, 0755) == 0)
		return 0;
	if (errno != EEXIST)
		return -errno;
	if (stat(path, &st) != 0)
		return -errno;
	return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

/* mkdir -p for the store directory. */
static int sym_di_mkdirs(const char *dir)
{
	char *p = xstrdup(dir);
	int rc = 0;

	for (char *s = p + 1; *s && !rc; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		rc = sym_di_mkdir(p);
		*s = '/';
	}
	if (!rc)
		rc = sym_di_mkdir(p);
	free(p);
	return rc;
}

int sym_debuginfo_open(const char *dir, struct sym_debuginfo **out, struct prof_err *err)
{
	struct sym_debuginfo *s;
	char tmp[4096];
	DIR *d;
	int rc;

	*out = NULL;
	rc = sym_di_mkdirs(dir);
	if (rc)
		return prof_err_set(err, rc, -1, "debuginfo store %s: %s", dir, strerror(-rc));
	snprintf(tmp, sizeof(tmp), "%s/.tmp", dir);
	rc = sym_di_mkdir(tmp);
	if (rc)
		return prof_err_set(err, rc, -1, "debuginfo store %s: %s", tmp, strerror(-rc));
	/* Uploads cut short by a crash. */
	d = opendir(tmp);
	if (d) {
		struct dirent *de;

		while ((de = readdir(d)) != NULL)
			if (de->d_name[0] != '.')
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	s = xcalloc(1, sizeof(*s));
	s->dir = xstrdup(dir);
	pthread_mutex_init(&s->lock, NULL);
	*out = s;
	return 0;
}

void sym_debuginfo_free(struct sym_debuginfo *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->dir);
	free(s);
}

int sym_debuginfo_tmpfile(struct sym_debuginfo *s, char *path, size_t pathsz)
{
	uint64_t seq = __atomic_add_fetch(&s->tmp_seq, 1, __ATOMIC_SEQ_CST);
	int fd;

	if ((size_t)snprintf(path, pathsz, "%s/.tmp/upload-%d-%" PRIu64 "-XXXXXX", s->dir,
			     (int)getpid(), seq) >= pathsz)
		return -ENAMETOOLONG;
	fd = mkostemp(path, O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

static uint8_t sym_di_quality_of(const char *word)
{
	for (int q = SYM_SRC_NONE; q <= SYM_SRC_DWARF; q++)
		if (!strcmp(word, sym_source_name((enum sym_source)q)))
			return (uint8_t)q;
	return SYM_SRC_NONE;
}

static uint64_t sym_di_file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

/* Read <dir>/<id>/meta into @e (build ID already normalized). */
static int sym_di_read_meta(struct sym_debuginfo *s, const char *id, struct sym_debuginfo_entry *e)
{
	char path[4096], line[256];
	FILE *f;
	bool ok = false;

	memset(e, 0, sizeof(*e));
	snprintf(e->build_id, sizeof(e->build_id), "%s", id);
	snprintf(path, sizeof(path), "%s/%s/meta", s->dir, id);
	f = fopen(path, "re");
	if (!f)
		return -ENOENT;
	while (fgets(line, sizeof(line), f)) {
		char *v = strchr(line, ' ');
		size_t n = strlen(line);
		uint64_t u;

		if (n && line[n - 1] == '\n')
			line[--n] = '\0';
		if (!strcmp(line, SYM_DI_META_MAGIC)) {
			ok = true;
			continue;
		}
		if (!v)
			continue;
		*v++ = '\0';
		if (!strcmp(line, "quality"))
			e->quality = sym_di_quality_of(v);
		else if (!strcmp(line, "executable_quality"))
			e->exec_quality = sym_di_quality_of(v);
		else if (!strcmp(line, "separate"))
			e->separate = !strcmp(v, "1");
		else if (!strcmp(line, "updated_ns") && parse_u64(v, &u) == 0)
			e->updated_ns = (int64_t)u;
	}
	fclose(f);
	if (!ok)
		return -ENOENT;
	snprintf(path, sizeof(path), "%s/%s/debuginfo", s->dir, id);
	e->has_debuginfo = access(path, R_OK) == 0;
	e->debuginfo_size = e->has_debuginfo ? sym_di_file_size(path) : 0;
	snprintf(path, sizeof(path), "%s/%s/executable", s->dir, id);
	e->has_executable = access(path, R_OK) == 0;
	e->executable_size = e->has_executable ? sym_di_file_size(path) : 0;
	if (!e->has_debuginfo)
		e->quality = SYM_SRC_NONE;
	if (!e->has_executable)
		e->exec_quality = SYM_SRC_NONE;
	return e->has_debuginfo || e->has_executable ? 0 : -ENOENT;
}

static int sym_di_write_meta(struct sym_debuginfo *s, const struct sym_debuginfo_entry *e)
{
	char path[4096], tmp[4096], text[512];
	int n, rc = 0;
	int fd;

	n = snprintf(text, sizeof(text),
		     SYM_DI_META_MAGIC "\nquality %s\nexecutable_quality %s\nseparate %d\n"
				       "updated_ns %" PRId64 "\n",
		     sym_source_name((enum sym_source)e->quality),
		     sym_source_name((enum sym_source)e->exec_quality), e->separate ? 1 : 0,
		     e->updated_ns);
	snprintf(path, sizeof(path), "%s/%s/meta", s->dir, e->build_id);
	fd = sym_debuginfo_tmpfile(s, tmp, sizeof(tmp));
	if (fd < 0)
		return fd;
	if (write(fd, text, (size_t)n) != n || fsync(fd) != 0)
		rc = -EIO;
	close(fd);
	if (!rc && rename(tmp, path) != 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

int sym_debuginfo_get(struct sym_debuginfo *s, const char *build_id,
		      struct sym_debuginfo_entry *entry)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1];

	if (sym_build_id_normalize(build_id, id, NULL))
		return -EINVAL;
	return sym_di_read_meta(s, id, entry);
}

int sym_debuginfo_path(struct sym_debuginfo *s, const char *build_id, enum sym_debuginfo_kind kind,
		       char *path, size_t pathsz)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1];

	if (!s || sym_build_id_normalize(build_id, id, NULL))
		return -ENOENT;
	if ((size_t)snprintf(path, pathsz, "%s/%s/%s", s->dir, id,
			     kind == SYM_DI_EXECUTABLE ? "executable" : "debuginfo") >= pathsz)
		return -ENOENT;
	return access(path, R_OK) == 0 ? 0 : -ENOENT;
}

/* Best frame source the file offers. */
static uint8_t sym_di_quality(const struct sym_elf *e)
{
	const struct sym_elf_info *in = sym_elf_info(e);

	if (in->has_dwarf)
		return SYM_SRC_DWARF;
	if (in->has_gopclntab)
		return SYM_SRC_GOPCLNTAB;
	return in->symbols;
}

int sym_debuginfo_add(struct sym_debuginfo *s, const char *build_id, const char *tmp_path,
		      enum sym_debuginfo_outcome *outcome, struct sym_debuginfo_entry *entry,
		      struct prof_err *err)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1], dir[4096], dpath[4096], xpath[4096], lpath[4096];
	struct sym_debuginfo_entry cur, next;
	struct sym_elf *elf = NULL;
	bool to_debug, to_exec, had;
	uint8_t q;
	int rc;

	rc = sym_build_id_normalize(build_id, id, err);
	if (rc)
		goto out;
	rc = sym_elf_open(tmp_path, &elf, err);
	if (rc) {
		if (rc == -PROF_EFORMAT) { /* the reason without the temporary file's name */
			prof_err_init(err);
			prof_err_set(err, rc, 0, "not an ELF file (no \\177ELF magic)");
		}
		goto out;
	}
	if (!sym_elf_build_id(elf)[0]) {
		rc = prof_err_set(err, -EINVAL, -1,
				  "the file has no GNU build ID note, so it cannot be matched to "
				  "frames (link with -Wl,--build-id)");
		goto out;
	}
	if (strcmp(sym_elf_build_id(elf), id) != 0) {
		rc = prof_err_set(
			err, -EINVAL, -1,
			"build ID mismatch: the URL says %s but the file's build ID is %s", id,
			sym_elf_build_id(elf));
		goto out;
	}
	q = sym_di_quality(elf);

	pthread_mutex_lock(&s->lock);
	had = sym_di_read_meta(s, id, &cur) == 0;
	if (!had)
		memset(&cur, 0, sizeof(cur));
	to_debug = q > SYM_SRC_NONE && (!cur.has_debuginfo || q > cur.quality);
	to_exec = sym_elf_info(elf)->has_text && (!cur.has_executable || q > cur.exec_quality);
	if (!to_debug && !to_exec) {
		*outcome = SYM_DI_KEPT;
		if (entry)
			*entry = cur;
		pthread_mutex_unlock(&s->lock);
		unlink(tmp_path);
		rc = 0;
		goto done;
	}
	snprintf(dir, sizeof(dir), "%s/%s", s->dir, id);
	snprintf(dpath, sizeof(dpath), "%s/%s/debuginfo", s->dir, id);
	snprintf(xpath, sizeof(xpath), "%s/%s/executable", s->dir, id);
	rc = sym_di_mkdir(dir);
	if (!rc && to_debug && to_exec) {
		/* One file serves both: link it in twice. */
		snprintf(lpath, sizeof(lpath), "%s.link", tmp_path);
		if (link(tmp_path, lpath) != 0)
			rc = -errno;
		if (!rc && rename(lpath, xpath) != 0)
			rc = -errno;
		unlink(lpath);
	}
	if (!rc && rename(tmp_path, to_debug ? dpath : xpath) != 0)
		rc = -errno;
	if (!rc) {
		next = cur;
		snprintf(next.build_id, sizeof(next.build_id), "%s", id);
		if (to_debug) {
			next.quality = q;
			next.separate =
				sym_elf_info(elf)->has_dwarf && !sym_elf_info(elf)->has_text;
		}
		if (to_exec)
			next.exec_quality = q;
		next.updated_ns = (int64_t)time(NULL) * 1000000000LL;
		rc = sym_di_write_meta(s, &next);
	}
	if (!rc && entry)
		rc = sym_di_read_meta(s, id, entry);
	pthread_mutex_unlock(&s->lock);
	if (rc) {
		prof_err_set(err, rc, -1, "debuginfo store %s: %s", dir, strerror(-rc));
		goto out;
	}
	*outcome = had ? SYM_DI_UPGRADED : SYM_DI_STORED;
	goto done;
out:
	unlink(tmp_path);
done:
	sym_elf_free(elf);
	return rc;
}
