// SPDX-License-Identifier: Apache-2.0
/* buf.c - growable byte buffer; see buf.h. */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/utf8.h"

#include <fcntl.h>
#include <unistd.h>

void buf_init(struct buf *b, size_t max)
{
	b->p = NULL;
	b->len = b->cap = 0;
	b->max = max;
}

void buf_release(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

static int buf_grow(struct buf *b, size_t extra)
{
	size_t need;

	if (__builtin_add_overflow(b->len, extra + 1, &need))
		return -PROF_ETOOBIG;
	if (b->max && need - 1 > b->max)
		return -PROF_ETOOBIG;
	if (need > b->cap) {
		size_t c = b->cap ? b->cap : 64;

		while (c < need)
			c *= 2;
		b->p = xrealloc(b->p, c);
		b->cap = c;
	}
	return 0;
}

int buf_add(struct buf *b, const void *data, size_t n)
{
	int rc = buf_grow(b, n);

	if (rc)
		return rc;
	if (n)
		memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

int buf_addstr(struct buf *b, const char *s)
{
	return buf_add(b, s, strlen(s));
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	int n, rc;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	rc = buf_grow(b, (size_t)n);
	if (rc)
		return rc;
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int buf_add_json_str(struct buf *b, const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *u = (const unsigned char *)s;
	size_t start = b->len, run = 0; /* bytes [run, i) go out as they are */
	int rc = buf_add(b, "\"", 1);

	for (size_t i = 0; i < n && !rc;) {
		unsigned char c = u[i];
		size_t k = 0; /* bytes that go out as they are */

		bool sep = c == 0xe2 && n - i >= 3 && u[i + 1] == 0x80 && (u[i + 2] & 0xfe) == 0xa8;

		if (c >= 0x80 && !sep)
			k = utf8_seq_len(u + i, n - i);
		else if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\')
			k = 1;
		if (k) {
			i += k;
			continue;
		}
		if (i > run && (rc = buf_add(b, s + run, i - run)))
			break;
		if (c == '"' || c == '\\') {
			char e[2] = { '\\', (char)c };

			rc = buf_add(b, e, 2);
		} else if (c < 0x20 || c == 0x7f) {
			char e[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

			rc = buf_add(b, e, 6);
		} else if (sep) { /* U+2028, U+2029: JavaScript line ends (Go's encoding/json) */
			rc = buf_add(b, u[i + 2] == 0xa8 ? "\\u2028" : "\\u2029", 6);
			i += 2;
		} else {
			rc = buf_add(b, "\\ufffd", 6); /* not UTF-8: U+REPLACEMENT CHARACTER */
		}
		run = ++i;
	}
	if (!rc && run < n)
		rc = buf_add(b, s + run, n - run);
	if (!rc)
		rc = buf_add(b, "\"", 1);
	if (rc && b->p) { /* all or nothing, like buf_add */
		b->len = start;
		b->p[start] = '\0';
	}
	return rc;
}

void buf_reset(struct buf *b)
{
	b->len = 0;
	if (b->p)
		b->p[0] = '\0';
}

char *buf_detach(struct buf *b, size_t *len)
{
	char *p = b->p ? b->p : xstrdup("");

	if (len)
		*len = b->len;
	b->p = NULL;
	b->len = b->cap = 0;
	return p;
}

int buf_add_url_escaped(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	int rc = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
		if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
		    (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == '~') {
			rc = buf_add(b, p, 1);
		} else {
			char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };

			rc = buf_add(b, e, 3);
		}
	}
	return rc;
}

int buf_read_file(struct buf *b, const char *path)
{
	char tmp[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	int rc = 0;

	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, tmp, sizeof(tmp));

		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (n == 0)
			break;
		rc = buf_add(b, tmp, (size_t)n);
		if (rc)
			break;
	}
	close(fd);
	return rc;
}

int buf_write_file(const char *path, const void *data, size_t n)
{
	char tmp[4096];
	const char *p = data;
	int fd, rc = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	while (n > 0) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		p += w;
		n -= (size_t)w;
	}
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	close(fd);
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}
