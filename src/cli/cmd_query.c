// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_query.c - `profd query VIEW --server URL [--PARAM VALUE]...`: ask a
 * profd server's query API (docs/api.md) and print the answer for a
 * terminal: the table like `go tool pprof -top`, the flame graph and the
 * diff as indented trees, the series as columns, values in their units
 * (durations, byte sizes, counts). --json prints the server's JSON as is;
 * exports (export-pprof, export-folded, export-svg) go to -o FILE.
 *
 * Every --NAME VALUE (or --NAME=VALUE) that is not one of this command's
 * own options is passed as API parameter NAME (dashes become
 * underscores): --type, --query, --from, --to, --group-by, --step,
 * --a-query, --b-from, --hide, ... The server checks them and its 4xx
 * message is printed as is. --token (or $PROFD_TOKEN) is sent as a
 * bearer token; the server defaults to $PROFD_SERVER, else
 * http://127.0.0.1:4040.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "cli/cli.h"
#include "cli/termtext.h"
#include "base/curl_dl.h"
#include "query/units.h"

#include <jansson.h>
#include <math.h>

#define MAX_ANSWER	((size_t)512 << 20)
#define DEFAULT_SERVER	"http://127.0.0.1:4040"
#define MAX_PRINT_DEPTH 64 /* indentation stops growing past this */

static const struct {
	const char *view, *path;
} views[] = {
	{ "flamegraph", "flamegraph" },
	{ "table", "table" },
	{ "series", "series" },
	{ "diff", "diff" },
	{ "sandwich", "sandwich" },
	{ "source", "source" },
	{ "flamechart", "flamechart" },
	{ "labels", "labels" },
	{ "label-values", NULL },
	{ "export-pprof", "export/pprof" },
	{ "export-folded", "export/folded" },
	{ "export-svg", "export/svg" },
};

static void query_usage(FILE *f)
{
	fprintf(f, "usage: profd query VIEW [--server URL] [--json] [-o FILE] [--token T]\n"
		   "                        [--PARAM VALUE]...\n"
		   "\n"
		   "Ask a profd server. VIEW is one of: flamegraph, table, series, diff,\n"
		   "sandwich, source (--function NAME: cost per line), flamechart, labels,\n"
		   "label-values (--name NAME), export-pprof, export-folded, export-svg.\n"
		   "Parameters are the API's (docs/api.md), e.g.\n"
		   "\n"
		   "  profd query table --type process_cpu:cpu:nanoseconds:cpu:nanoseconds \\\n"
		   "      --query '{service.name=\"api\"}' --from now-1h --limit 20\n"
		   "  profd query series --type ... --group-by service.name --step 1m\n"
		   "  profd query diff --type ... --a-from now-2h --a-to now-1h --b-from now-1h\n"
		   "  profd query export-pprof --type ... -o cpu.pb.gz\n"
		   "\n"
		   "  --server URL   the server (default $PROFD_SERVER or " DEFAULT_SERVER ")\n"
		   "  --json         print the JSON answer as it came\n"
		   "  -o FILE        write the answer to FILE (exports; - = stdout)\n"
		   "  --token T      bearer token (default $PROFD_TOKEN)\n");
}

static size_t on_data(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	return buf_add(b, p, size * n) ? 0 : size * n;
}

/* --- printing ------------------------------------------------------------------------------ */

static const char *jstr(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? s : "";
}

/* jstr() as cli_term_str prints it, into @b (names come from profiles: any bytes). */
static const char *jtext(struct buf *b, json_t *o, const char *key)
{
	const char *s = jstr(o, key);

	return cli_term_str(b, s, strlen(s));
}

static double jnum(json_t *o, const char *key)
{
	return json_number_value(json_object_get(o, key));
}

static char *fmt(const char *unit, double v, char *out, size_t n)
{
	return query_unit_format(unit, v, out, n);
}

static double pct(double v, double total)
{
	return total ? 100.0 * v / total : 0.0;
}

static void print_table(json_t *j)
{
	const char *unit = jstr(j, "unit");
	double total = jnum(j, "total");
	json_t *rows = json_object_get(j, "rows"), *r;
	struct buf name = BUF_INIT, t = BUF_INIT;
	char a[64], b[64];
	size_t i;

	printf("Type: %s\nTotal: %s in %.0f samples; %.0f functions, %.0f matched\n",
	       jtext(&t, j, "type"), fmt(unit, total, a, sizeof(a)), jnum(j, "samples"),
	       jnum(j, "functions"), jnum(j, "matched"));
	printf("%12s %7s %12s %7s  %s\n", "self", "self%", "total", "total%", "function");
	json_array_foreach(rows, i, r)
	{
		double s = jnum(r, "self"), t = jnum(r, "total");

		printf("%12s %6.2f%% %12s %6.2f%%  %s\n", fmt(unit, s, a, sizeof(a)), pct(s, total),
		       fmt(unit, t, b, sizeof(b)), pct(t, total), jtext(&name, r, "name"));
	}
	buf_release(&name);
	buf_release(&t);
}

/* Print the tree under @root iteratively; @diff selects the diff columns. */
static void print_tree(json_t *root, const char *unit, double total, bool diff, bool normalized)
{
	struct frame {
		json_t *node;
		size_t depth;
	};
	VEC(struct frame) st = { 0 };
	struct frame f0 = { root, 0 };
	struct buf name = BUF_INIT;
	char a[64], b[64];

	if (diff)
		printf("%9s %9s %10s %6s  %s\n", "A", "B", "delta", "noise", "frame");
	else
		printf("%12s %7s %12s  %s\n", "total", "total%", "self", "frame");
	VEC_PUSH(&st, f0);
	while (st.n) {
		struct frame f = st.v[--st.n];
		size_t ind = PROF_MIN(f.depth, (size_t)MAX_PRINT_DEPTH) * 2;

		if (diff && normalized)
			printf("%8.2f%% %8.2f%% %+9.2fpp %6s  %*s%s%s\n",
			       100 * jnum(f.node, "a_share"), 100 * jnum(f.node, "b_share"),
			       100 * jnum(f.node, "delta"),
			       json_is_true(json_object_get(f.node, "noise")) ? "~" : "", (int)ind,
			       "", jtext(&name, f.node, "name"),
			       strcmp(jstr(f.node, "status"), "both")
				       ? (strcmp(jstr(f.node, "status"), "appeared") ? " (gone)"
										     : " (new)")
				       : "");
		else if (diff)
			printf("%9s %9s %+10.0f %6s  %*s%s\n",
			       fmt(unit, jnum(f.node, "a_total"), a, 64),
			       fmt(unit, jnum(f.node, "b_total"), b, 64), jnum(f.node, "delta"),
			       json_is_true(json_object_get(f.node, "noise")) ? "~" : "", (int)ind,
			       "", jtext(&name, f.node, "name"));
		else
			printf("%12s %6.2f%% %12s  %*s%s\n",
			       fmt(unit, jnum(f.node, "total"), a, sizeof(a)),
			       pct(jnum(f.node, "total"), total),
			       fmt(unit, jnum(f.node, "self"), b, sizeof(b)), (int)ind, "",
			       jtext(&name, f.node, "name"));
		json_t *kids = json_object_get(f.node, "children");
		for (size_t i = json_array_size(kids); i-- > 0;) {
			struct frame c = { json_array_get(kids, i), f.depth + 1 };
			VEC_PUSH(&st, c);
		}
	}
	VEC_FREE(&st);
	buf_release(&name);
}

/* The source view: the function's lines, hottest first, with their text when the server has it. */
static void print_source(json_t *j)
{
	const char *unit = jstr(j, "unit");
	double ftot = jnum(j, "total");
	json_t *l, *f;
	struct buf t = BUF_INIT, fn = BUF_INIT, tx = BUF_INIT;
	char a[64], b[64];
	size_t i;

	printf("Type: %s\nFunction %s: self %s, total %s; %.0f lines%s\n", jtext(&t, j, "type"),
	       jtext(&fn, j, "function"), fmt(unit, jnum(j, "self"), a, sizeof(a)),
	       fmt(unit, ftot, b, sizeof(b)), jnum(j, "nlines"),
	       json_is_true(json_object_get(j, "truncated")) ? " (first ones shown)" : "");
	json_array_foreach(json_object_get(j, "lines"), i, l)
	{
		const char *text = jstr(l, "text");

		text += strspn(text, " \t"); /* the indentation says nothing here */
		printf("%s:%.0f  self %s (%.2f%%)  total %s (%.2f%%)%s%s\n", jtext(&t, l, "file"),
		       jnum(l, "line"), fmt(unit, jnum(l, "self"), a, sizeof(a)),
		       pct(jnum(l, "self"), ftot), fmt(unit, jnum(l, "total"), b, sizeof(b)),
		       pct(jnum(l, "total"), ftot), *text ? "  | " : "",
		       cli_term_str(&tx, text, strlen(text)));
	}
	json_array_foreach(json_object_get(j, "files"), i, f)
	{
		if (strcmp(jstr(f, "source"), "available"))
			printf("No source text for %s: %s\n", jtext(&t, f, "file"),
			       jtext(&tx, f, "reason"));
	}
	buf_release(&t);
	buf_release(&fn);
	buf_release(&tx);
}

static void print_series(json_t *j)
{
	const char *unit = jstr(j, "unit");
	json_t *ts = json_object_get(j, "timestamps"), *series = json_object_get(j, "series");
	json_t *other = json_object_get(j, "other");
	struct buf txt = BUF_INIT;
	char v[64];

	printf("Type: %s (%s per step of %.0f ms)\n", jtext(&txt, j, "type"),
	       jstr(j, "aggregation"), jnum(j, "step_ms"));
	printf("%-20s", "time (UTC)");
	for (size_t s = 0; s < json_array_size(series); s++) {
		json_t *labels = json_object_get(json_array_get(series, s), "labels");
		char name[64] = "";
		const char *k;
		json_t *val;
		size_t at = 0;

		json_object_foreach(labels, k, val)
		{
			const char *lv = json_string_value(val);

			at += (size_t)snprintf(
				name + at, at < sizeof(name) ? sizeof(name) - at : 0, "%s%s",
				at ? "," : "",
				cli_term_str(&txt, lv ? lv : "", lv ? strlen(lv) : 0));
			if (at >= sizeof(name))
				break;
		}
		printf(" %14.14s", name[0] ? name : "total");
	}
	if (json_is_object(other))
		printf(" %14s", "other");
	printf("\n");
	for (size_t b = 0; b < json_array_size(ts); b++) {
		time_t t = (time_t)(json_number_value(json_array_get(ts, b)) / 1000);
		struct tm tm;
		char when[32];

		gmtime_r(&t, &tm);
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-20s", when);
		for (size_t s = 0; s < json_array_size(series); s++) {
			json_t *vals = json_object_get(json_array_get(series, s), "values");

			printf(" %14s",
			       fmt(unit, json_number_value(json_array_get(vals, b)), v, 64));
		}
		if (json_is_object(other))
			printf(" %14s", fmt(unit,
					    json_number_value(json_array_get(
						    json_object_get(other, "values"), b)),
					    v, 64));
		printf("\n");
	}
	buf_release(&txt);
}

static int print_human(const char *view, const struct buf *body)
{
	json_error_t jerr;
	json_t *j = json_loadb(body->p, body->len, 0, &jerr);
	struct buf ty = BUF_INIT;

	if (!j) {
		fprintf(stderr,
			"profd query: cannot show the answer as text (%s); use --json for the raw "
			"answer\n",
			jerr.text);
		return 1;
	}
	if (!strcmp(view, "table")) {
		print_table(j);
	} else if (!strcmp(view, "flamegraph")) {
		char a[64];

		printf("Type: %s\nTotal: %s in %.0f samples", jtext(&ty, j, "type"),
		       fmt(jstr(j, "unit"), jnum(j, "total"), a, sizeof(a)), jnum(j, "samples"));
		json_t *tr = json_object_get(j, "truncated");
		if (jnum(tr, "nodes") > 0)
			printf("; %.0f nodes merged into \"other\"", jnum(tr, "nodes"));
		printf("\n");
		print_tree(json_object_get(j, "root"), jstr(j, "unit"), jnum(j, "total"), false,
			   false);
	} else if (!strcmp(view, "diff")) {
		char a[64], b[64];
		bool norm = !strcmp(jstr(j, "mode"), "normalized");

		printf("Type: %s, %s; A total %s, B total %s\nNoise test: %s\n",
		       jtext(&ty, j, "type"), jstr(j, "mode"),
		       fmt(jstr(j, "unit"), jnum(json_object_get(j, "a"), "total"), a, 64),
		       fmt(jstr(j, "unit"), jnum(json_object_get(j, "b"), "total"), b, 64),
		       jstr(j, "noise_test"));
		print_tree(json_object_get(j, "root"), jstr(j, "unit"), 0, true, norm);
		printf("%.0f stacks appeared, %.0f disappeared\n",
		       jnum(json_object_get(j, "appeared"), "count"),
		       jnum(json_object_get(j, "disappeared"), "count"));
	} else if (!strcmp(view, "series")) {
		print_series(j);
	} else if (!strcmp(view, "source")) {
		print_source(j);
	} else {
		char *s = json_dumps(j, JSON_INDENT(2));

		printf("%s\n", s ? s : "");
		free(s);
	}
	buf_release(&ty);
	json_decref(j);
	return 0;
}

/* --- the request ------------------------------------------------------------------------------ */

int cmd_query(int argc, char **argv)
{
	const char *view = NULL, *path = NULL, *out_path = NULL;
	const char *server = getenv("PROFD_SERVER"), *token = getenv("PROFD_TOKEN");
	const char *label = NULL;
	bool json = false;
	struct buf url, body, auth;
	CURL *curl = NULL;
	struct curl_slist *hdrs = NULL;
	long status = 0;
	int rc = 1;
	char sep = '?';

	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		query_usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	view = argv[1];
	for (size_t i = 0; i < PROF_ARRAY_SIZE(views); i++)
		if (!strcmp(view, views[i].view))
			path = views[i].path ? views[i].path : "";
	if (!path) {
		fprintf(stderr, "profd query: unknown view '%s'\n\n", cli_term_name(view));
		query_usage(stderr);
		return 2;
	}
	buf_init(&url, 64 << 10);
	buf_init(&body, MAX_ANSWER);
	buf_init(&auth, 4096);
	struct prof_err err;
	prof_err_init(&err);
	if (prof_curl_load(&err)) {
		fprintf(stderr, "profd query: %s\n", cli_term_name(err.msg));
		goto out;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	curl = curl_easy_init();
	if (!curl) {
		fprintf(stderr, "profd query: cannot start the HTTP client\n");
		goto out;
	}
	/* First pass: our own options; the URL needs --server and --name first. */
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--server") && i + 1 < argc)
			server = argv[++i];
		else if (!strcmp(a, "--token") && i + 1 < argc)
			token = argv[++i];
		else if (!strcmp(a, "--name") && i + 1 < argc && !*path)
			label = argv[++i];
		else if (!strcmp(a, "-o") && i + 1 < argc)
			out_path = argv[++i];
		else if (!strcmp(a, "--json"))
			json = true;
		else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			query_usage(stdout);
			rc = 0;
			goto out;
		} else if (strncmp(a, "--", 2) || !a[2]) {
			fprintf(stderr,
				"profd query: unexpected argument '%s' (parameters are --NAME VALUE)\n",
				cli_term_name(a));
			rc = 2;
			goto out;
		} else if (!strchr(a, '=')) {
			if (i + 1 >= argc) {
				fprintf(stderr, "profd query: %s needs a value\n",
					cli_term_name(a));
				rc = 2;
				goto out;
			}
			i++;
		}
	}
	if (!server)
		server = DEFAULT_SERVER;
	if (!*path && !label) {
		fprintf(stderr, "profd query label-values: --name NAME is required\n");
		rc = 2;
		goto out;
	}
	size_t slen = strlen(server);
	while (slen && server[slen - 1] == '/')
		slen--;
	if (*path) {
		(void)buf_addf(&url, "%.*s/api/v1/%s", (int)slen, server, path);
	} else {
		(void)buf_addf(&url, "%.*s/api/v1/labels/", (int)slen, server);
		(void)buf_add_url_escaped(&url, label);
		(void)buf_addstr(&url, "/values");
	}
	/* Second pass: API parameters. */
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--server") || !strcmp(a, "--token") || !strcmp(a, "-o") ||
		    (!strcmp(a, "--name") && !*path)) {
			i++;
			continue;
		}
		if (!strcmp(a, "--json"))
			continue;
		const char *eq = strchr(a, '=');
		char name[128];
		const char *value;
		size_t k = eq ? (size_t)(eq - a - 2) : strlen(a + 2);

		if (k >= sizeof(name)) {
			fprintf(stderr, "profd query: parameter name too long: %s\n",
				cli_term_name(a));
			rc = 2;
			goto out;
		}
		memcpy(name, a + 2, k);
		name[k] = '\0';
		for (char *c = name; *c; c++)
			if (*c == '-')
				*c = '_';
		value = eq ? eq + 1 : argv[++i];
		if (buf_addf(&url, "%c%s=", sep, name) || buf_add_url_escaped(&url, value)) {
			fprintf(stderr, "profd query: the request URL is too long\n");
			rc = 2;
			goto out;
		}
		sep = '&';
	}
	if (token && *token) {
		(void)buf_addf(&auth, "Authorization: Bearer %s", token);
		hdrs = curl_slist_append(hdrs, auth.p);
	}
	curl_easy_setopt(curl, CURLOPT_URL, url.p);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 300L);
	curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT, 10L);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_USERAGENT, "profd-query");
	CURLcode cc = curl_easy_perform(curl);
	if (cc != CURLE_OK) {
		fprintf(stderr, "profd query: %s: %s\n", cli_term_name(server),
			cc == CURLE_WRITE_ERROR ? "answer larger than 512 MiB"
						: curl_easy_strerror(cc));
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200) {
		json_t *j = json_loadb(body.p ? body.p : "", body.len, 0, NULL);
		const char *msg = j ? json_string_value(json_object_get(j, "error")) : NULL;

		struct buf txt = BUF_INIT;

		fprintf(stderr, "profd query: server answered %ld: %s\n", status,
			cli_term_str(&txt, msg ? msg : (body.p ? body.p : ""),
				     msg ? strlen(msg) : PROF_MIN(body.len, 2000)));
		buf_release(&txt);
		json_decref(j);
		goto out;
	}
	if (out_path) {
		int wrc = !strcmp(out_path, "-")
				  ? (fwrite(body.p ? body.p : "", 1, body.len, stdout) == body.len
					     ? 0
					     : -EIO)
				  : buf_write_file(out_path, body.p ? body.p : "", body.len);
		if (wrc) {
			fprintf(stderr, "profd query: writing %s: %s\n", cli_term_name(out_path),
				prof_strerror(wrc));
			goto out;
		}
		rc = 0;
	} else if (json || !strncmp(view, "export-", 7)) {
		rc = fwrite(body.p ? body.p : "", 1, body.len, stdout) == body.len ? 0 : 1;
	} else {
		rc = print_human(view, &body);
	}
out:
	curl_slist_free_all(hdrs);
	if (curl) {
		curl_easy_cleanup(curl);
		curl_global_cleanup();
	}
	buf_release(&url);
	buf_release(&body);
	buf_release(&auth);
	return rc;
}
