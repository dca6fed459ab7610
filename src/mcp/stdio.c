// SPDX-License-Identifier: Apache-2.0
/*
 * stdio.c - newline-delimited JSON-RPC over a pair of file descriptors;
 * see stdio.h.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "mcp/stdio.h"

#include <unistd.h>

static int write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Handle one line (without its '\n') and write the response line, if any. */
static int one_line(struct mcp_server *s, char *line, size_t n, int out_fd, bool too_long)
{
	struct buf out;
	int rc = 0;

	while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	buf_init(&out, 0);
	if (too_long) {
		char msg[160];

		snprintf(msg, sizeof(msg),
			 "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":%d,\"message\":"
			 "\"Invalid Request: the message is larger than %zu bytes\"}}",
			 MCP_INVALID_REQUEST, MCP_MAX_MESSAGE);
		(void)buf_addstr(&out, msg);
	} else if (n && strspn(line, " \t\r") < n) {
		(void)mcp_server_handle(s, line, n, &out);
	}
	if (out.len) {
		(void)buf_add(&out, "\n", 1);
		rc = write_all(out_fd, out.p, out.len);
	}
	buf_release(&out);
	return rc;
}

int mcp_stdio_serve(struct mcp_server *s, int in_fd, int out_fd)
{
	size_t cap = MCP_MAX_MESSAGE + 2, len = 0;
	char *b = xmalloc(cap);
	bool skipping = false; /* inside a line over the limit */
	int rc = 0;

	for (;;) {
		ssize_t r = read(in_fd, b + len, cap - 1 - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			break;
		}
		if (r == 0) {
			if (len && !skipping) {
				b[len] = '\0';
				rc = one_line(s, b, len, out_fd, false);
			}
			break;
		}
		len += (size_t)r;
		size_t start = 0;
		char *nl;

		while (!rc && (nl = memchr(b + start, '\n', len - start))) {
			size_t n = (size_t)(nl - (b + start));

			*nl = '\0';
			rc = one_line(s, b + start, n, out_fd, skipping);
			skipping = false;
			start += n + 1;
		}
		if (rc)
			break;
		memmove(b, b + start, len - start);
		len -= start;
		if (len >= cap - 1) {
			/* a line over the limit: drop what we have, answer at its newline */
			skipping = true;
			len = 0;
		}
	}
	free(b);
	return rc;
}
