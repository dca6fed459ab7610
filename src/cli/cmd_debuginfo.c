// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_debuginfo.c - `profd debuginfo`: talk to a server's debuginfo store
 * (server/debuginfo.c, symbolize/debuginfo.h).
 *
 *   profd debuginfo upload [--server URL] [TOKEN OPTIONS] FILE...
 *       read each FILE's GNU build ID and POST the file (streamed from
 *       disk) to /api/v1/debuginfo/<buildid>; the server verifies it and
 *       keeps it when it is better than what it has. A file the server
 *       already has at equal or better quality is skipped after a GET.
 *   profd debuginfo find [--server URL] [TOKEN OPTIONS] [--output FILE]
 *                        [--executable] BUILDID
 *       print what the server has for BUILDID (JSON); with --output,
 *       download the debuginfo (or --executable) file through the
 *       debuginfod endpoint /buildid/<id>/{debuginfo,executable}.
 *
 * Exit status: 0 all done, 1 a file failed or the build ID is unknown,
 * 2 usage. libcurl is loaded on first use (base/curl_dl.h).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/curl_dl.h"
#include "base/mem.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "server/http.h"
#include "symbolize/debuginfo.h"
#include "symbolize/elf.h"

#include <sys/stat.h>

#define DI_DEFAULT_SERVER "http://" SERVER_DEFAULT_LISTEN
#define DI_MAX_REPLY	  (1 << 20) /* bytes of a JSON reply kept */

struct di_opts {
	const char *server;
	char *token;
	const char *dataset;
};

static void di_usage(FILE *f)
{
	fprintf(f,
		"usage: profd debuginfo upload [--server URL] [options] FILE...\n"
		"       profd debuginfo find [--server URL] [options] [--output FILE] "
		"[--executable] BUILDID\n"
		"\n"
		"  --server URL              profd server (default " DI_DEFAULT_SERVER ")\n"
		"  --bearer-token TOKEN      send Authorization: Bearer TOKEN\n"
		"  --bearer-token-file FILE  read the token from FILE\n"
		"  --dataset NAME            send X-Profd-Dataset: NAME (whose token rules apply)\n"
		"  --output FILE             find: download the file to FILE\n"
		"  --executable              find --output: the executable, not the debuginfo\n");
}

static size_t di_write_buf(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	(void)buf_add(b, p, size * n); /* past the cap the reply is cut, not an error */
	return size * n;
}

static size_t di_write_file(char *p, size_t size, size_t n, void *arg)
{
	return fwrite(p, size, n, arg) * size;
}

static size_t di_read_file(char *p, size_t size, size_t n, void *arg)
{
	return fread(p, size, n, arg) * size;
}

/* A curl handle for @url with the auth headers; *@hdrs to free after perform. */
static CURL *di_curl(const struct di_opts *o, const char *url, struct curl_slist **hdrs)
{
	CURL *c = curl_easy_init();
	char h[4200];

	*hdrs = NULL;
	if (!c)
		return NULL;
	if (o->token) {
		snprintf(h, sizeof(h), "Authorization: Bearer %s", o->token);
		*hdrs = curl_slist_append(*hdrs, h);
	}
	if (o->dataset) {
		snprintf(h, sizeof(h), "X-Profd-Dataset: %s", o->dataset);
		*hdrs = curl_slist_append(*hdrs, h);
	}
	*hdrs = curl_slist_append(*hdrs, "Expect:");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, *hdrs);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(c, CURLOPT_NOPROXY, "127.0.0.1,localhost,::1");
	return c;
}

/* Perform @c; 0 with *@status, or -1 after printing the transport error. */
static int di_perform(CURL *c, const char *what, long *status)
{
	CURLcode rc = curl_easy_perform(c);

	if (rc != CURLE_OK) {
		fprintf(stderr, "profd debuginfo: %s: %s\n", what, curl_easy_strerror(rc));
		return -1;
	}
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, status);
	return 0;
}

/* The "error" string of a JSON error reply, or the body itself. */
static const char *di_reason(struct buf *b)
{
	char *p, *e;

	if (!b->p)
		return "";
	p = strstr(b->p, "\"error\":\"");
	if (!p)
		return b->p;
	p += 9;
	e = strchr(p, '"');
	if (e)
		*e = '\0';
	return p;
}

/* The value of "key":"..." in @json into @out, "" when absent. */
static void di_json_str(const char *json, const char *key, char *out, size_t outsz)
{
	char pat[64];
	const char *p;
	size_t n;

	out[0] = '\0';
	snprintf(pat, sizeof(pat), "\"%s\":\"", key);
	if (!json || !(p = strstr(json, pat)))
		return;
	p += strlen(pat);
	n = strcspn(p, "\"");
	snprintf(out, outsz, "%.*s", (int)PROF_MIN(n, outsz - 1), p);
}

static int di_quality_rank(const char *q)
{
	for (int i = SYM_SRC_NONE; i <= SYM_SRC_DWARF; i++)
		if (!strcmp(q, sym_source_name((enum sym_source)i)))
			return i;
	return -1;
}

static int di_upload_one(const struct di_opts *o, const char *path)
{
	char url[4096], remote_q[32], remote_xq[32];
	struct sym_elf *e = NULL;
	struct prof_err err;
	struct curl_slist *hdrs;
	struct buf reply;
	struct stat st;
	long status = 0;
	FILE *f;
	CURL *c;
	int q, rc = 1;

	prof_err_init(&err);
	if (sym_elf_open(path, &e, &err)) {
		fprintf(stderr, "profd debuginfo: %s: %s\n", path, err.msg);
		return 1;
	}
	const struct sym_elf_info *in = sym_elf_info(e);
	char bid[SYM_BUILD_ID_MAX_HEX + 1];
	snprintf(bid, sizeof(bid), "%s", sym_elf_build_id(e));
	q = in->has_dwarf ? SYM_SRC_DWARF : in->has_gopclntab ? SYM_SRC_GOPCLNTAB : in->symbols;
	bool has_text = in->has_text;
	sym_elf_free(e);
	if (!bid[0]) {
		fprintf(stderr, "profd debuginfo: %s: no GNU build ID (link with -Wl,--build-id)\n",
			path);
		return 1;
	}

	/* Skip what the server already has at least as good. */
	buf_init(&reply, DI_MAX_REPLY);
	snprintf(url, sizeof(url), "%s/api/v1/debuginfo/%s", o->server, bid);
	c = di_curl(o, url, &hdrs);
	if (!c)
		goto out;
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, di_write_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
	if (di_perform(c, url, &status) == 0 && status == 200) {
		di_json_str(reply.p, "quality", remote_q, sizeof(remote_q));
		di_json_str(reply.p, "executable_quality", remote_xq, sizeof(remote_xq));
		bool has_exec = reply.p && strstr(reply.p, "\"executable\":true");
		if (di_quality_rank(remote_q) >= q && (!has_text || has_exec)) {
			printf("%s: build ID %s: server already has it (quality %s), skipped\n",
			       path, bid, remote_q);
			rc = 0;
			curl_easy_cleanup(c);
			curl_slist_free_all(hdrs);
			goto out;
		}
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);

	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st) != 0) {
		fprintf(stderr, "profd debuginfo: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		goto out;
	}
	buf_reset(&reply);
	c = di_curl(o, url, &hdrs);
	if (!c) {
		fclose(f);
		goto out;
	}
	hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(c, CURLOPT_POST, 1L);
	curl_easy_setopt(c, CURLOPT_READFUNCTION, di_read_file);
	curl_easy_setopt(c, CURLOPT_READDATA, f);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)st.st_size);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, di_write_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
	if (di_perform(c, url, &status) == 0) {
		if (status == 200 || status == 201) {
			char outcome[32], qual[32];

			di_json_str(reply.p, "outcome", outcome, sizeof(outcome));
			di_json_str(reply.p, "quality", qual, sizeof(qual));
			printf("%s: build ID %s: %s (server quality %s)\n", path, bid, outcome,
			       qual);
			rc = 0;
		} else {
			fprintf(stderr, "profd debuginfo: %s: server answered %ld: %s\n", path,
				status, di_reason(&reply));
		}
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
	fclose(f);
out:
	buf_release(&reply);
	return rc;
}

static int di_find(const struct di_opts *o, const char *id_in, const char *output, bool exec)
{
	char id[SYM_BUILD_ID_MAX_HEX + 1], url[4096];
	struct curl_slist *hdrs;
	struct prof_err err;
	struct buf reply;
	long status = 0;
	CURL *c;
	int rc = 1;

	prof_err_init(&err);
	if (sym_build_id_normalize(id_in, id, &err)) {
		fprintf(stderr, "profd debuginfo find: %s\n", err.msg);
		return 2;
	}
	buf_init(&reply, DI_MAX_REPLY);
	if (output) {
		FILE *f = fopen(output, "wb");

		if (!f) {
			fprintf(stderr, "profd debuginfo find: %s: %s\n", output, strerror(errno));
			goto out;
		}
		snprintf(url, sizeof(url), "%s/buildid/%s/%s", o->server, id,
			 exec ? "executable" : "debuginfo");
		c = di_curl(o, url, &hdrs);
		if (c) {
			curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, di_write_file);
			curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
			if (di_perform(c, url, &status) == 0 && status == 200)
				rc = 0;
			curl_easy_cleanup(c);
			curl_slist_free_all(hdrs);
		}
		if (fclose(f) != 0)
			rc = 1;
		if (rc) {
			remove(output);
			if (status)
				fprintf(stderr, "profd debuginfo find: %s: server answered %ld\n",
					id, status);
		} else {
			printf("%s: wrote %s\n", id, output);
		}
		goto out;
	}
	snprintf(url, sizeof(url), "%s/api/v1/debuginfo/%s", o->server, id);
	c = di_curl(o, url, &hdrs);
	if (!c)
		goto out;
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, di_write_buf);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply);
	if (di_perform(c, url, &status) == 0) {
		if (status == 200) {
			fputs(reply.p ? reply.p : "", stdout);
			rc = 0;
		} else {
			fprintf(stderr, "profd debuginfo find: %s: %s (HTTP %ld)\n", id,
				status == 404 ? "not found" : di_reason(&reply), status);
		}
	}
	curl_easy_cleanup(c);
	curl_slist_free_all(hdrs);
out:
	buf_release(&reply);
	return rc;
}

int cmd_debuginfo(int argc, char **argv)
{
	struct di_opts o = { .server = DI_DEFAULT_SERVER };
	const char *output = NULL, *sub;
	const char **args;
	size_t nargs = 0;
	bool exec = false;
	struct prof_err err;
	char *server = NULL;
	int rc = 0;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		di_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	sub = argv[1];
	if (strcmp(sub, "upload") && strcmp(sub, "find")) {
		fprintf(stderr, "profd debuginfo: unknown subcommand '%s'\n", sub);
		di_usage(stderr);
		return 2;
	}
	args = xcalloc((size_t)argc, sizeof(*args));
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		bool has_val = i + 1 < argc;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			di_usage(stdout);
			goto done;
		} else if (!strcmp(a, "--executable")) {
			exec = true;
		} else if (!strcmp(a, "--server") || !strcmp(a, "--bearer-token") ||
			   !strcmp(a, "--bearer-token-file") || !strcmp(a, "--dataset") ||
			   !strcmp(a, "--output")) {
			if (!has_val) {
				fprintf(stderr, "profd debuginfo: %s needs a value\n", a);
				rc = 2;
				goto done;
			}
			const char *v = argv[++i];
			if (!strcmp(a, "--server")) {
				o.server = v;
			} else if (!strcmp(a, "--bearer-token")) {
				free(o.token);
				o.token = xstrdup(v);
			} else if (!strcmp(a, "--bearer-token-file")) {
				free(o.token);
				o.token = cli_read_token(v);
				if (!o.token) {
					fprintf(stderr,
						"profd debuginfo: cannot read a token from %s\n",
						v);
					rc = 2;
					goto done;
				}
			} else if (!strcmp(a, "--dataset")) {
				o.dataset = v;
			} else {
				output = v;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "profd debuginfo: unknown option '%s'\n", a);
			di_usage(stderr);
			rc = 2;
			goto done;
		} else {
			args[nargs++] = a;
		}
	}
	if (nargs == 0 || (!strcmp(sub, "find") && nargs != 1)) {
		fprintf(stderr, "profd debuginfo %s: %s\n", sub,
			!strcmp(sub, "find") ? "expected one BUILDID" : "expected FILE...");
		rc = 2;
		goto done;
	}
	/* "http://host:port/" and "http://host:port" are the same server. */
	server = xstrdup(o.server);
	for (size_t n = strlen(server); n > 0 && server[n - 1] == '/';)
		server[--n] = '\0';
	o.server = server;
	if (strncmp(o.server, "http://", 7) && strncmp(o.server, "https://", 8)) {
		fprintf(stderr, "profd debuginfo: --server '%s': expected http://HOST:PORT\n",
			o.server);
		rc = 2;
		goto done;
	}
	prof_err_init(&err);
	if (prof_curl_load(&err)) {
		fprintf(stderr, "profd debuginfo: %s\n", err.msg);
		rc = 1;
		goto done;
	}
	if (!strcmp(sub, "find")) {
		rc = di_find(&o, args[0], output, exec);
	} else {
		for (size_t i = 0; i < nargs; i++)
			if (di_upload_one(&o, args[i]))
				rc = 1;
	}
done:
	free(server);
	free(o.token);
	free(args);
	return rc;
}
