// SPDX-License-Identifier: Apache-2.0
/*
 * debuginfo.c - the debuginfo HTTP API over the store of
 * symbolize/debuginfo.h:
 *
 *   POST /api/v1/debuginfo/<buildid>   upload an ELF file (raw body)
 *   GET  /api/v1/debuginfo/<buildid>   what is stored (JSON), 404 if nothing
 *   HEAD /api/v1/debuginfo/<buildid>   the same status, no body
 *   GET  /buildid/<buildid>/debuginfo  debuginfod protocol (shared
 *   GET  /buildid/<buildid>/executable docs/formats.md "debuginfod"): the files themselves
 *
 * Uploads stream to a temporary file in the store (http.c hands each body
 * chunk to server_upload_write), so memory stays small whatever the size;
 * their own cap, SERVER_DEBUGINFO_MAX_UPLOAD, replaces max_body (debug
 * files are often hundreds of MB). The file is checked before it is kept
 * (ELF, whole, its build ID equal to the URL's) and any failure is a 4xx
 * naming the reason with nothing stored. A stored or upgraded file
 * invalidates the symbolizer's caches for that build ID, so the next
 * query names frames of data ingested before the upload.
 *
 * Authorization: uploads need the ingest permission, reads the query
 * permission (tenant.h; on the dataset the request names, or the
 * default), like the profile routes. Debug info itself is shared by all
 * datasets: a build ID names the same bytes everywhere.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "server/route.h"
#include "symbolize/debuginfo.h"
#include "symbolize/symbolizer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define SERVER_DI_API_PREFIX "/api/v1/debuginfo/"
#define SERVER_DI_BUILDID    "/buildid/"

struct server_upload {
	int fd;		 /* temporary file, -1 once closed */
	char path[4096]; /* its path */
	char build_id[SYM_BUILD_ID_MAX_HEX + 1];
	uint64_t len;  /* bytes received */
	bool too_big;  /* over SERVER_DEBUGINFO_MAX_UPLOAD: drained, not kept */
	int write_err; /* first write error (-errno), 0 = none */
};

/* The build ID in /api/v1/debuginfo/<id> (lowercase into @id), or an error in @err. */
static int server_di_api_id(const char *url, char *id, struct prof_err *err)
{
	return sym_build_id_normalize(url + strlen(SERVER_DI_API_PREFIX), id, err);
}

static unsigned server_di_auth(struct server_req *rq, unsigned perm, struct server_reply *rp)
{
	struct server_auth auth;

	server_req_auth(rq, perm, &auth);
	if (auth.status) {
		server_reply_json_error(rp, auth.status, "%s", auth.msg);
		if (auth.status == 401)
			rp->www_authenticate = "Bearer";
	}
	return auth.status;
}

bool server_debuginfo_early(struct server *srv, struct MHD_Connection *c, const char *method,
			    const char *url, struct server_upload **out, struct server_reply *rp)
{
	struct server_req rq = { .srv = srv, .conn = c, .method = method, .url = url };
	struct sym_debuginfo *store = srv->sym ? symbolizer_debuginfo(srv->sym) : NULL;
	char id[SYM_BUILD_ID_MAX_HEX + 1];
	struct server_upload *up;
	struct prof_err err;
	const char *cl;
	uint64_t n;

	*out = NULL;
	if (!strcmp(method, "GET") || !strcmp(method, "HEAD"))
		return false;
	if (strcmp(method, "POST")) {
		server_reply_json_error(
			rp, 405, "method %s not allowed here; use GET, HEAD or POST", method);
		rp->allow = "GET, HEAD, POST";
		return true;
	}
	if (server_di_auth(&rq, SERVER_PERM_INGEST, rp))
		return true;
	prof_err_init(&err);
	if (server_di_api_id(url, id, &err)) {
		server_reply_json_error(rp, 400, "%s", err.msg);
		return true;
	}
	if (!store) {
		server_reply_json_error(rp, 503, "this server has no debuginfo store");
		return true;
	}
	cl = server_header(&rq, "Content-Length");
	if (cl && !parse_u64(cl, &n) && n > SERVER_DEBUGINFO_MAX_UPLOAD) {
		server_reply_json_error(rp, 413,
					"upload of %" PRIu64
					" bytes exceeds the debuginfo limit of %llu bytes",
					n, (unsigned long long)SERVER_DEBUGINFO_MAX_UPLOAD);
		return true;
	}
	up = xcalloc(1, sizeof(*up));
	snprintf(up->build_id, sizeof(up->build_id), "%s", id);
	up->fd = sym_debuginfo_tmpfile(store, up->path, sizeof(up->path));
	if (up->fd < 0) {
		server_reply_json_error(rp, 500, "cannot create an upload file: %s",
					strerror(-up->fd));
		free(up);
		return true;
	}
	*out = up;
	return false;
}

void server_upload_write(struct server_upload *up, const char *data, size_t n)
{
	if (up->too_big || up->write_err)
		return; /* drain */
	if (n > SERVER_DEBUGINFO_MAX_UPLOAD - up->len) {
		up->too_big = true;
		return;
	}
	up->len += n;
	while (n > 0) {
		ssize_t w = write(up->fd, data, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			up->write_err = w < 0 ? -errno : -EIO;
			return;
		}
		data += w;
		n -= (size_t)w;
	}
}

void server_upload_free(struct server_upload *up)
{
	if (!up)
		return;
	if (up->fd >= 0) {
		close(up->fd);
		unlink(up->path); /* never handed to the store */
	}
	free(up);
}

static void server_di_entry_json(struct buf *b, const struct sym_debuginfo_entry *e)
{
	(void)buf_addf(
		b,
		"{\"build_id\":\"%s\",\"debuginfo\":%s,\"executable\":%s,"
		"\"quality\":\"%s\",\"executable_quality\":\"%s\",\"separate\":%s,"
		"\"debuginfo_size\":%" PRIu64 ",\"executable_size\":%" PRIu64
		",\"updated_ns\":%" PRId64,
		e->build_id, e->has_debuginfo ? "true" : "false",
		e->has_executable ? "true" : "false", sym_source_name((enum sym_source)e->quality),
		sym_source_name((enum sym_source)e->exec_quality), e->separate ? "true" : "false",
		e->debuginfo_size, e->executable_size, e->updated_ns);
}

static void server_di_upload(struct server_req *rq, struct server_reply *rp,
			     struct sym_debuginfo *store)
{
	struct server_upload *up = rq->upload;
	enum sym_debuginfo_outcome outcome;
	struct sym_debuginfo_entry e;
	struct prof_err err;
	int rc;

	if (!up) {
		server_reply_json_error(rp, 500, "upload state missing");
		return;
	}
	if (up->too_big) {
		server_reply_json_error(rp, 413, "upload exceeds the debuginfo limit of %llu bytes",
					(unsigned long long)SERVER_DEBUGINFO_MAX_UPLOAD);
		return;
	}
	if (up->write_err) {
		bool full = up->write_err == -ENOSPC || up->write_err == -EDQUOT ||
			    up->write_err == -EFBIG;

		server_reply_json_error(rp, full ? 507 : 500, "cannot write the upload: %s",
					strerror(-up->write_err));
		return;
	}
	if (up->len == 0) {
		server_reply_json_error(rp, 400, "empty upload: send the ELF file as the body");
		return;
	}
	if (fsync(up->fd) != 0) {
		server_reply_json_error(rp, 500, "cannot write the upload: %s", strerror(errno));
		return;
	}
	close(up->fd);
	up->fd = -1; /* the store consumes the file from here on */
	prof_err_init(&err);
	rc = sym_debuginfo_add(store, up->build_id, up->path, &outcome, &e, &err);
	if (rc) {
		bool client = rc == -EINVAL || rc == -PROF_EFORMAT || rc == -PROF_ECORRUPT ||
			      rc == -PROF_ETOOBIG || rc == -PROF_EUNSUPPORTED;

		server_reply_json_error(rp, client ? 400 : 500, "%s",
					err.msg[0] ? err.msg : prof_strerror(rc));
		return;
	}
	if (outcome != SYM_DI_KEPT)
		symbolizer_invalidate(rq->srv->sym, up->build_id);
	log_info("debuginfo: build_id=%s bytes=%" PRIu64 " outcome=%s quality=%s", up->build_id,
		 up->len,
		 outcome == SYM_DI_STORED     ? "stored"
		 : outcome == SYM_DI_UPGRADED ? "upgraded"
					      : "kept",
		 sym_source_name((enum sym_source)e.quality));
	rp->status = outcome == SYM_DI_KEPT ? 200 : 201;
	rp->content_type = "application/json";
	buf_reset(&rp->body);
	server_di_entry_json(&rp->body, &e);
	(void)buf_addf(&rp->body, ",\"outcome\":\"%s\"}\n",
		       outcome == SYM_DI_STORED	    ? "stored"
		       : outcome == SYM_DI_UPGRADED ? "upgraded"
						    : "kept");
	if (outcome == SYM_DI_KEPT)
		snprintf(rp->reason, sizeof(rp->reason),
			 "kept the stored file: it is as good (quality %s)",
			 sym_source_name((enum sym_source)e.quality));
}

void server_handle_debuginfo(struct server_req *rq, struct server_reply *rp)
{
	struct sym_debuginfo *store = rq->srv->sym ? symbolizer_debuginfo(rq->srv->sym) : NULL;
	char id[SYM_BUILD_ID_MAX_HEX + 1];
	struct sym_debuginfo_entry e;
	struct prof_err err;

	if (!strcmp(rq->method, "POST")) {
		server_di_upload(rq, rp, store);
		return;
	}
	if (server_di_auth(rq, SERVER_PERM_QUERY, rp))
		return;
	prof_err_init(&err);
	if (server_di_api_id(rq->url, id, &err)) {
		server_reply_json_error(rp, 400, "%s", err.msg);
		return;
	}
	if (!store || sym_debuginfo_get(store, id, &e) != 0) {
		server_reply_json_error(rp, 404, "no debuginfo for build ID %s", id);
		return;
	}
	rp->status = 200;
	rp->content_type = "application/json";
	buf_reset(&rp->body);
	server_di_entry_json(&rp->body, &e);
	(void)buf_addstr(&rp->body, "}\n");
}

void server_handle_debuginfod(struct server_req *rq, struct server_reply *rp)
{
	struct sym_debuginfo *store = rq->srv->sym ? symbolizer_debuginfo(rq->srv->sym) : NULL;
	const char *p = rq->url + strlen(SERVER_DI_BUILDID), *slash = strchr(p, '/');
	char raw[SYM_BUILD_ID_MAX_HEX + 2], path[4096];
	enum sym_debuginfo_kind kind;
	struct prof_err err;
	struct stat st;
	int fd;

	if (server_di_auth(rq, SERVER_PERM_QUERY, rp))
		return;
	if (!slash || (size_t)(slash - p) >= sizeof(raw)) {
		server_reply_text(rp, 404, "expected /buildid/BUILDID/debuginfo or /executable");
		return;
	}
	memcpy(raw, p, (size_t)(slash - p));
	raw[slash - p] = '\0';
	prof_err_init(&err);
	if (sym_build_id_normalize(raw, raw, &err)) {
		server_reply_text(rp, 400, "%s", err.msg);
		return;
	}
	if (!strcmp(slash, "/debuginfo")) {
		kind = SYM_DI_DEBUGINFO;
	} else if (!strcmp(slash, "/executable")) {
		kind = SYM_DI_EXECUTABLE;
	} else {
		server_reply_text(rp, 404,
				  "not found: this server serves /debuginfo and /executable only");
		return;
	}
	if (!store || sym_debuginfo_path(store, raw, kind, path, sizeof(path)) != 0) {
		server_reply_text(rp, 404, "no %s for build ID %s",
				  kind == SYM_DI_DEBUGINFO ? "debuginfo" : "executable", raw);
		return;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		if (fd >= 0)
			close(fd);
		server_reply_text(rp, 404, "no %s for build ID %s",
				  kind == SYM_DI_DEBUGINFO ? "debuginfo" : "executable", raw);
		return;
	}
	rp->status = 200;
	rp->content_type = "application/octet-stream";
	rp->fd = fd;
	rp->fd_size = (uint64_t)st.st_size;
}
