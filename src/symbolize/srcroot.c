// SPDX-License-Identifier: Apache-2.0
/*
 * srcroot.c - reading source files from under one directory (srcroot.h):
 * candidates from the data's name, each canonicalized and checked to lie
 * in the root, opened only when a regular file and without following a
 * last symlink, read with a cap.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/fs.h"
#include "base/mem.h"
#include "symbolize/srcroot.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct sym_srcroot {
	char *dir; /* canonical, no trailing '/' unless it is "/" */
	size_t len;
};

int sym_srcroot_new(const char *dir, struct sym_srcroot **out, struct prof_err *err)
{
	char canon[PATH_MAX];
	struct stat st;
	struct sym_srcroot *r;

	*out = NULL;
	if (!dir || dir[0] != '/')
		return prof_err_set(err, -EINVAL, -1,
				    "source path '%s' is not an absolute directory",
				    dir ? dir : "");
	if (!realpath(dir, canon) || stat(canon, &st) != 0)
		return prof_err_set(err, -errno, -1, "source path %s: %s", dir, strerror(errno));
	if (!S_ISDIR(st.st_mode))
		return prof_err_set(err, -ENOTDIR, -1, "source path %s is not a directory", dir);
	r = xcalloc(1, sizeof(*r));
	r->dir = xstrdup(canon);
	r->len = strlen(canon);
	*out = r;
	return 0;
}

void sym_srcroot_free(struct sym_srcroot *r)
{
	if (!r)
		return;
	free(r->dir);
	free(r);
}

const char *sym_srcroot_dir(const struct sym_srcroot *r)
{
	return r->dir;
}

/* Is canonical path @canon inside the root (or the root itself)? */
static bool inside(const struct sym_srcroot *r, const char *canon)
{
	if (r->len == 1) /* the root is "/" */
		return true;
	return !strncmp(canon, r->dir, r->len) && (canon[r->len] == '/' || !canon[r->len]);
}

/*
 * Read candidate ROOT/@rel into @out when it is a regular file inside the
 * root: 0, -ENOENT (not there, not a file, or outside; *@special set when
 * it is inside but not a regular file), -EFBIG, -errno.
 */
static int read_candidate(const struct sym_srcroot *r, const char *rel, struct buf *out,
			  bool *special)
{
	char path[PATH_MAX], canon[PATH_MAX];
	struct stat st;
	int fd, rc;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", r->len == 1 ? "" : r->dir, rel) >=
	    sizeof(path))
		return -ENOENT;
	if (!realpath(path, canon) || !inside(r, canon))
		return -ENOENT;
	/*
	 * Only a regular file is opened: opening a FIFO wakes its writer, and
	 * opening a device (a watchdog, a tape, a serial line) acts on it.
	 */
	if (stat(canon, &st) != 0)
		return -ENOENT;
	if (!S_ISREG(st.st_mode)) {
		*special = true;
		return -ENOENT;
	}
	fd = open(canon, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -ENOENT;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return -ENOENT;
	}
	if ((uint64_t)st.st_size > SYM_SRCROOT_MAX_FILE) {
		close(fd);
		return -EFBIG;
	}
	buf_reset(out);
	rc = 0;
	if (st.st_size > 0) {
		char *p = xmalloc((size_t)st.st_size);

		rc = fs_pread_full(fd, p, (size_t)st.st_size, 0);
		if (!rc)
			rc = buf_add(out, p, (size_t)st.st_size);
		free(p);
	} else {
		rc = buf_add(out, "", 0);
	}
	close(fd);
	return rc;
}

int sym_srcroot_read(const struct sym_srcroot *r, const char *name, struct buf *out,
		     struct prof_err *err)
{
	const char *rel = name;
	bool special = false;
	int rc = -ENOENT;

	if (!name || !*name)
		return prof_err_set(err, -EINVAL, -1, "the profile names no source file");
	/* The name as it is (relative), then each shorter tail after a '/'. */
	while (*rel == '/')
		rel++;
	while (*rel) {
		rc = read_candidate(r, rel, out, &special);
		if (rc != -ENOENT)
			break;
		const char *slash = strchr(rel, '/');

		if (!slash)
			break;
		rel = slash + 1;
		while (*rel == '/')
			rel++;
	}
	if (rc == -ENOENT && special)
		return prof_err_set(err, rc, -1,
				    "%s is under the source path but not a regular file", name);
	if (rc == -ENOENT)
		return prof_err_set(err, rc, -1, "%s is not under the source path", name);
	if (rc == -EFBIG)
		return prof_err_set(err, rc, -1, "%s is over %zu bytes", name,
				    SYM_SRCROOT_MAX_FILE);
	if (rc)
		return prof_err_set(err, rc, -1, "%s: %s", name, prof_strerror(rc));
	return 0;
}
