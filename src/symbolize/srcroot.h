/* SPDX-License-Identifier: Apache-2.0 */
/*
 * srcroot.h - source files the server may show (`profd server
 * --source-path DIR`): the text of a file a profile names, read only from
 * under one configured directory.
 *
 * A profile's file names are the data's word, not a permission: a name
 * is looked for under the root only, as given when it is relative
 * ("src/sort.c"), else by its trailing components (the build's
 * "/home/ci/app/src/sort.c" is found as ROOT/home/ci/app/src/sort.c,
 * ROOT/ci/app/src/sort.c, ... ROOT/sort.c, the longest match first). Each
 * candidate's canonical path (symlinks and ".." resolved) must lie inside
 * the root's canonical path, be a regular file and at most
 * SYM_SRCROOT_MAX_FILE bytes; nothing outside the root is opened, whatever
 * the name says (the same care as the symbolizer's symbol paths).
 *
 * Thread-safety: a root is read-only after sym_srcroot_new; reads may run
 * in parallel.
 */
#ifndef PROF_SYMBOLIZE_SRCROOT_H
#define PROF_SYMBOLIZE_SRCROOT_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"

/** The largest source file read (bytes). */
#define SYM_SRCROOT_MAX_FILE ((size_t)4 << 20)

struct sym_srcroot;

/**
 * sym_srcroot_new() - a root at directory @dir (absolute; canonicalized).
 * Returns 0 and *@out (free with sym_srcroot_free), or -EINVAL (not
 * absolute), -ENOTDIR, or -errno of realpath, with @err saying which.
 */
int sym_srcroot_new(const char *dir, struct sym_srcroot **out, struct prof_err *err);

/** sym_srcroot_free() - free @r; NULL is allowed. */
void sym_srcroot_free(struct sym_srcroot *r);

/** sym_srcroot_dir() - the root's canonical path (lent while @r lives). */
const char *sym_srcroot_dir(const struct sym_srcroot *r);

/**
 * sym_srcroot_read() - the text of source file @name (as the profile names
 * it) into @out (replaced), found under @r as described above. Returns 0;
 * -ENOENT when no candidate is a file under the root (also for names with
 * a NUL-free ".." that would leave it: they are resolved and refused);
 * -EFBIG when the file found is over SYM_SRCROOT_MAX_FILE; -EINVAL for an
 * empty name; another -errno when reading failed. @err says why in words.
 */
int sym_srcroot_read(const struct sym_srcroot *r, const char *name, struct buf *out,
		     struct prof_err *err);

#endif
