// SPDX-License-Identifier: Apache-2.0
/*
 * fs.c - file-system helpers (fs.h).
 */
#include "base/fs.h"
#include "base/log.h"
#include "base/mem.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

int fs_pread_full(int fd, void *p, size_t n, uint64_t off)
{
	char *b = p;

	while (n) {
		ssize_t r = pread(fd, b, n, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			return -EIO; /* the file shrank under us */
		b += r;
		n -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

int fs_fsync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	if (fsync(fd))
		rc = -errno;
	close(fd);
	return rc;
}

void fs_rm_flat_dir(const char *dir, const char *who)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char *p = xasprintf("%s/%s", dir, de->d_name);
			if (unlink(p) && who)
				log_error("%s: cannot delete %s: %s", who, p, strerror(errno));
			free(p);
		}
		closedir(d);
	}
	if (rmdir(dir) && errno != ENOENT && who)
		log_error("%s: cannot delete %s: %s", who, dir, strerror(errno));
}
