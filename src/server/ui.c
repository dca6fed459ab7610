// SPDX-License-Identifier: Apache-2.0
/*
 * ui.c - the explorer's static files, served from the UI directory.
 *
 * Path safety: the URL path (already %-decoded by MHD) must consist of
 * components of [A-Za-z0-9._-], none empty, none starting with '.'
 * (so no "..", no dotfiles), at most 16 deep and 1024 bytes; anything
 * else is 404 without touching the file system. Only regular files are
 * served. "/" (and any path ending in '/') means index.html.
 */
#include "base/compat.h"
#include "server/route.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const struct {
	const char *ext, *type;
} content_types[] = {
	{ ".html", "text/html; charset=utf-8" },
	{ ".js", "text/javascript; charset=utf-8" },
	{ ".mjs", "text/javascript; charset=utf-8" },
	{ ".css", "text/css; charset=utf-8" },
	{ ".json", "application/json" },
	{ ".map", "application/json" },
	{ ".svg", "image/svg+xml" },
	{ ".png", "image/png" },
	{ ".ico", "image/x-icon" },
	{ ".woff2", "font/woff2" },
	{ ".txt", "text/plain; charset=utf-8" },
	{ ".wasm", "application/wasm" },
};

static const char *content_type_of(const char *path)
{
	size_t n = strlen(path);

	for (size_t i = 0; i < PROF_ARRAY_SIZE(content_types); i++) {
		size_t k = strlen(content_types[i].ext);

		if (n > k && !strcmp(path + n - k, content_types[i].ext))
			return content_types[i].type;
	}
	return "application/octet-stream";
}

static bool safe_path(const char *p)
{
	size_t depth = 0;

	if (p[0] != '/' || strlen(p) > 1024)
		return false;
	p++;
	while (*p) {
		size_t n = 0;

		if (*p == '.')
			return false;
		while (p[n] && p[n] != '/') {
			char c = p[n];

			if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			      (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
				return false;
			n++;
		}
		if (n == 0 || ++depth > 16)
			return false;
		p += n;
		if (*p == '/')
			p++;
	}
	return true;
}

void server_handle_ui(struct server_req *rq, struct server_reply *rp)
{
	const char *url = rq->url;
	char path[2048];
	struct stat st;
	int fd;

	if (!safe_path(url)) {
		server_reply_text(rp, 404, "not found");
		return;
	}
	size_t n = strlen(url);
	snprintf(path, sizeof(path), "%s%s%s", rq->srv->ui_dir, url,
		 url[n - 1] == '/' ? "index.html" : "");
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		if (n == 1)
			server_reply_text(rp, 404,
					  "the explorer is not installed: %s/index.html is missing "
					  "(start the server with --ui DIR)",
					  rq->srv->ui_dir);
		else
			server_reply_text(rp, 404, "not found");
		return;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		server_reply_text(rp, 404, "not found");
		return;
	}
	rp->status = 200;
	rp->fd = fd;
	rp->fd_size = (uint64_t)st.st_size;
	rp->content_type = content_type_of(path);
	rp->cache = "no-cache";
}
