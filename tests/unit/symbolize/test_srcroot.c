// SPDX-License-Identifier: Apache-2.0
/*
 * test_srcroot.c - source files read from under a root only
 * (symbolize/srcroot.h): a relative name, an absolute build path found by
 * its tail, and everything that would leave the root or is not a plain
 * small file refused: "..", a symlink out, an absolute name outside, a
 * directory, a file over the cap, a root that is not an absolute
 * directory; a FIFO refused without being opened (inotify sees opens).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "symbolize/srcroot.h"
#include "unit/testlib.h"

#include <setjmp.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_srcroot_reads_inside_refuses_outside(void **state)
{
	char *base = tl_tmpdir("srcroot"), root[2048], p[4096];
	struct sym_srcroot *r = NULL;
	struct prof_err err;
	struct buf b;

	(void)state;
	buf_init(&b, 0);
	snprintf(root, sizeof(root), "%s/root", base);
	assert_int_equal(tl_sh("mkdir -p '%s/src/sub' '%s/secret'", root, base), 0);
	snprintf(p, sizeof(p), "%s/src/sub/a.c", root);
	write_file(p, "int a;\n");
	snprintf(p, sizeof(p), "%s/secret/key.c", base);
	write_file(p, "SECRET\n");
	snprintf(p, sizeof(p), "%s/src/link.c", root);
	assert_int_equal(symlink("../../secret/key.c", p), 0);
	prof_err_init(&err);
	assert_int_equal(sym_srcroot_new(root, &r, &err), 0);

	/* Relative as given, and an absolute build path by its tail. */
	assert_int_equal(sym_srcroot_read(r, "src/sub/a.c", &b, &err), 0);
	assert_string_equal(b.p, "int a;\n");
	assert_int_equal(sym_srcroot_read(r, "/home/ci/build/src/sub/a.c", &b, &err), 0);
	assert_string_equal(b.p, "int a;\n");
	assert_int_equal(sym_srcroot_read(r, "a.c", &b, &err), -ENOENT);

	/* Leaving the root: "..", a symlink out, an absolute path of a file outside. */
	assert_int_equal(sym_srcroot_read(r, "../secret/key.c", &b, &err), -ENOENT);
	assert_int_equal(sym_srcroot_read(r, "src/link.c", &b, &err), -ENOENT);
	snprintf(p, sizeof(p), "%s/secret/key.c", base);
	assert_int_equal(sym_srcroot_read(r, p, &b, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "is not under the source path"));
	assert_int_equal(sym_srcroot_read(r, "/etc/passwd", &b, &err), -ENOENT);
	/* Not a regular file; over the cap; no name. */
	prof_err_init(&err);
	assert_int_equal(sym_srcroot_read(r, "src/sub", &b, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "src/sub is under the source path but not a regular file"));
	assert_int_equal(tl_sh("truncate -s %zu '%s/big.c'", SYM_SRCROOT_MAX_FILE + 1, root), 0);
	assert_int_equal(sym_srcroot_read(r, "big.c", &b, &err), -EFBIG);
	assert_int_equal(sym_srcroot_read(r, "", &b, &err), -EINVAL);
	sym_srcroot_free(r);

	/* The root itself must be an absolute directory. */
	assert_int_equal(sym_srcroot_new("relative/dir", &r, &err), -EINVAL);
	assert_null(r);
	snprintf(p, sizeof(p), "%s/src/sub/a.c", root);
	assert_int_equal(sym_srcroot_new(p, &r, &err), -ENOTDIR);
	snprintf(p, sizeof(p), "%s/missing", root);
	assert_int_equal(sym_srcroot_new(p, &r, &err), -ENOENT);
	buf_release(&b);
	tl_rmdir(base);
	free(base);
}

/*
 * A FIFO a profile names is refused without being opened: an open would
 * wake a writer blocked on it (a device would act on the open). The
 * inotify watch on it records every open as an IN_OPEN event.
 */
static void test_srcroot_fifo_not_opened(void **state)
{
	char *base = tl_tmpdir("srcroot-fifo"), p[4096];
	char ev[sizeof(struct inotify_event) + 256];
	struct sym_srcroot *r = NULL;
	struct prof_err err;
	struct buf b;
	int in;

	(void)state;
	buf_init(&b, 0);
	snprintf(p, sizeof(p), "%s/pipe.c", base);
	assert_int_equal(mkfifo(p, 0600), 0);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, p, IN_OPEN) >= 0);
	prof_err_init(&err);
	assert_int_equal(sym_srcroot_new(base, &r, &err), 0);
	assert_int_equal(sym_srcroot_read(r, "/build/pipe.c", &b, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "is under the source path but not a regular file"));
	assert_int_equal(read(in, ev, sizeof(ev)), -1);
	assert_int_equal(errno, EAGAIN);
	close(in);
	sym_srcroot_free(r);
	buf_release(&b);
	tl_rmdir(base);
	free(base);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srcroot_reads_inside_refuses_outside),
		cmocka_unit_test(test_srcroot_fifo_not_opened),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
