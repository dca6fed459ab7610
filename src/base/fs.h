/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fs.h - file-system helpers the storage code shares: whole reads at an
 * offset, durable directory entries, removing a flat directory. Each
 * returns 0 or a negative errno; none allocates beyond a path string.
 */
#ifndef PROF_BASE_FS_H
#define PROF_BASE_FS_H

#include "base/compat.h"

/**
 * fs_pread_full() - read exactly @n bytes of @fd at @off into @p,
 * retrying short reads and EINTR. Returns 0, -errno, or -EIO when the
 * file ends first (it shrank, or was shorter than its header says).
 */
int fs_pread_full(int fd, void *p, size_t n, uint64_t off);

/**
 * fs_fsync_dir() - fsync the directory @dir, so a create, rename or
 * unlink in it is durable. Returns 0 or -errno.
 */
int fs_fsync_dir(const char *dir);

/**
 * fs_rm_flat_dir() - remove the files of @dir (no subdirectories are
 * expected: they are left, and the rmdir then fails) and @dir itself.
 * A missing @dir is fine. With @who non-NULL each failure is logged as
 * "@who: cannot delete PATH: REASON"; with NULL it is silent (cleaning
 * up after an error already reported).
 */
void fs_rm_flat_dir(const char *dir, const char *who);

#endif
