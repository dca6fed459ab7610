/* SPDX-License-Identifier: Apache-2.0 */
/*
 * buf.h - growable byte buffer (git strbuf, curl dynbuf).
 *
 * Invariant: p[len] == '\0' whenever p != NULL, so text can be handed to
 * C string functions. A buffer may carry a cap (max): appends that would
 * grow past it fail with -PROF_ETOOBIG and leave the buffer unchanged
 * (curl DYNBUF.md). max == 0 means no cap.
 */
#ifndef PROF_BASE_BUF_H
#define PROF_BASE_BUF_H

#include "base/compat.h"

struct buf {
	char *p;
	size_t len, cap, max;
};

#define BUF_INIT              \
	{                     \
		NULL, 0, 0, 0 \
	}

void buf_init(struct buf *b, size_t max);
void buf_release(struct buf *b);
/** buf_add() - append @n bytes; 0 or -PROF_ETOOBIG. */
int buf_add(struct buf *b, const void *data, size_t n);
int buf_addstr(struct buf *b, const char *s);
int buf_addf(struct buf *b, const char *fmt, ...) PROF_PRINTF(2, 3);
/**
 * buf_add_json_str() - append the @n bytes of @s (any bytes, NULs too) as
 * a quoted JSON string that is valid UTF-8 (RFC 8259 section 8.1): '"' and
 * '\\' escaped, control characters (U+0000..U+001F, U+007F) as \u00XX,
 * U+2028 and U+2029 as \u2028 and \u2029, other valid UTF-8 sequences as
 * they are, and each byte that does not start one as \ufffd, as Go's
 * encoding/json does (base/utf8.h). 0, or -PROF_ETOOBIG with @b unchanged.
 */
int buf_add_json_str(struct buf *b, const char *s, size_t n);
/**
 * buf_add_url_escaped() - append @s (NUL-terminated) percent-encoded for a
 * URL query or path segment: RFC 3986 section 2.3 unreserved characters
 * (A-Z a-z 0-9 - . _ ~) as they are, every other byte as %XX (upper-case
 * hex, section 2.1). 0, or -PROF_ETOOBIG with what fitted appended.
 */
int buf_add_url_escaped(struct buf *b, const char *s);
void buf_reset(struct buf *b);
/** buf_detach() - hand the array to the caller (who frees it); @b is reset. */
char *buf_detach(struct buf *b, size_t *len);

/**
 * buf_read_file() - read a whole file into @b (appending).
 * Returns 0, -errno, or -PROF_ETOOBIG when the file exceeds @b->max.
 */
int buf_read_file(struct buf *b, const char *path);
/** buf_write_file() - write @n bytes atomically (temp file, fsync, rename). */
int buf_write_file(const char *path, const void *data, size_t n);

#endif
