// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_top.c - `profd top [--json] [--type SAMPLE_TYPE] [-n N] [--event E]
 * [--format KIND] FILE`: the functions of a profile file (any format
 * fmt_decode_any reads, gzipped or not; --event picks the JFR event family
 * cpu, wall, alloc, lock or malloc) by self and total value per sample type, like
 * `go tool pprof -top` (see query/top.h for the exact rules).
 *
 * --json prints one object:
 *   {"sample_types":[{"type":..,"unit":..}],"samples":N,
 *    "totals":{TYPE:VALUE},"top":{TYPE:[{"function":..,"self":..,"total":..,
 *    "inline":..}]}}
 * where "samples" counts sample records (pprof Sample messages; for OTLP,
 * observations), totals sum each value column, and each top list holds
 * the first N functions by self (ties by name). "inline" is the text
 * report's label without its parentheses, "inline" or "partial-inline"
 * (query/top.h), on the rows that have one; like the label it depends on
 * which rows -n shows. "skipped":{"count":N,"what":..,"first":..}, after
 * "samples" and only when the decoder skipped unreadable parts of the
 * file (model/profile.h struct model_skipped), says how many and the
 * first reason; the same goes to stderr as a note in both forms. Function
 * names are JSON strings; bytes that are
 * not UTF-8 become \ufffd, as Go's encoders do. The text report escapes
 * what a terminal would act on (cli/termtext.h).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "cli/termtext.h"
#include "model/profile.h"
#include "query/jsonout.h"
#include "query/top.h"

static void top_usage(FILE *f)
{
	fprintf(f,
		"usage: profd top [--json] [--type SAMPLE_TYPE] [-n N] [--event E] [--format KIND]\n"
		"                 FILE\n"
		"\n"
		"Print the functions of a profile by self (flat) and total (cum) value, per\n"
		"sample type, like `go tool pprof -top`. FILE may be pprof (protobuf or legacy),\n"
		"OTLP (protobuf or JSON), JFR, folded, perf script, speedscope or a V8\n"
		"cpuprofile, gzipped or not.\n"
		"\n"
		"  --json            one JSON object with sample types, totals and top lists\n"
		"  --type TYPE       only this sample type (its name, e.g. cpu, or type/unit)\n"
		"  -n N              rows per sample type (default 10, 0 = all)\n"
		"  --event E         JFR: the events to read (cpu, wall, alloc, lock, malloc;\n"
		"                    default cpu)\n"
		"  --format KIND     read FILE as KIND instead of sniffing it\n");
}

/* @s (@n bytes, any content) as a JSON string that is valid UTF-8. */
static void json_str(struct buf *b, const char *s, size_t n)
{
	query_json_str(b, s, n);
}

static void json_pstr(struct buf *b, const struct model_profile *p, uint32_t id)
{
	json_str(b, p->strings.s[id], p->strings.len[id]);
}

static void print_json(const struct model_profile *p, const struct query_top *top, const char *want,
		       size_t nrows)
{
	struct buf b = BUF_INIT;
	size_t nt = p->sample_types.n;
	bool first = true;

	buf_addstr(&b, "{\"sample_types\":[");
	for (size_t t = 0; t < nt; t++) {
		buf_addstr(&b, t ? ",{\"type\":" : "{\"type\":");
		json_pstr(&b, p, p->sample_types.v[t].type);
		buf_addstr(&b, ",\"unit\":");
		json_pstr(&b, p, p->sample_types.v[t].unit);
		buf_addstr(&b, "}");
	}
	buf_addf(&b, "],\"samples\":%zu,", p->samples.n);
	if (p->skipped.n) {
		buf_addf(&b, "\"skipped\":{\"count\":%" PRIu64 ",\"what\":", p->skipped.n);
		json_str(&b, p->skipped.what, strlen(p->skipped.what));
		buf_addstr(&b, ",\"first\":");
		json_str(&b, p->skipped.first, strlen(p->skipped.first));
		buf_addstr(&b, "},");
	}
	buf_addstr(&b, "\"totals\":{");
	for (size_t t = 0; t < nt; t++) {
		if (t)
			buf_addstr(&b, ",");
		json_pstr(&b, p, p->sample_types.v[t].type);
		buf_addf(&b, ":%" PRId64, top->totals[t]);
	}
	buf_addstr(&b, "},\"top\":{");
	for (size_t t = 0; t < nt; t++) {
		struct query_top_row *rows;
		const char **labels;
		size_t n, show;

		if (want && !cli_type_matches(p, t, want))
			continue;
		rows = query_top_rows(top, t, false, &n);
		show = nrows == 0 || nrows > n ? n : nrows;
		/* The same rows as the text report, so the same inline labels. */
		labels = query_top_inline_labels(p, top, t, rows, show);
		if (!first)
			buf_addstr(&b, ",");
		first = false;
		json_pstr(&b, p, p->sample_types.v[t].type);
		buf_addstr(&b, ":[");
		for (size_t i = 0; i < show; i++) {
			buf_addstr(&b, i ? ",{\"function\":" : "{\"function\":");
			json_str(&b, top->names.s[rows[i].fn], top->names.len[rows[i].fn]);
			buf_addf(&b, ",\"self\":%" PRId64 ",\"total\":%" PRId64, rows[i].self,
				 rows[i].total);
			if (*labels[i])
				buf_addf(&b, ",\"inline\":\"%s\"",
					 strcmp(labels[i], "(inline)") ? "partial-inline"
								       : "inline");
			buf_addstr(&b, "}");
		}
		buf_addstr(&b, "]");
		free(labels);
		free(rows);
	}
	buf_addstr(&b, "}}\n");
	fwrite(b.p, 1, b.len, stdout);
	buf_release(&b);
}

/*
 * A value in its unit scaled for people, as pprof's measurement.ScaledLabel
 * does: "7.91s", "1.50MB", "873"; zero is "0".
 */
static void scaled(char *out, size_t outsz, int64_t v, const char *unit)
{
	static const struct {
		const char *unit;
		double factor; /* size of the base unit in the smallest one */
		const char *names[6];
		double steps[6];
	} scales[] = {
		{ "nanoseconds", 1, { "ns", "us", "ms", "s", NULL }, { 1, 1e3, 1e6, 1e9 } },
		{ "ns", 1, { "ns", "us", "ms", "s", NULL }, { 1, 1e3, 1e6, 1e9 } },
		{ "microseconds", 1e3, { "ns", "us", "ms", "s", NULL }, { 1, 1e3, 1e6, 1e9 } },
		{ "milliseconds", 1e6, { "ns", "us", "ms", "s", NULL }, { 1, 1e3, 1e6, 1e9 } },
		{ "seconds", 1e9, { "ns", "us", "ms", "s", NULL }, { 1, 1e3, 1e6, 1e9 } },
		{ "bytes",
		  1,
		  { "B", "kB", "MB", "GB", "TB", NULL },
		  { 1, 1024.0, 1048576.0, 1073741824.0, 1099511627776.0 } },
	};
	char num[64];
	double x = (double)v, ax;
	const char *suffix = "";

	if (v == 0) {
		snprintf(out, outsz, "0");
		return;
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(scales); i++) {
		if (strcmp(unit, scales[i].unit))
			continue;
		x *= scales[i].factor;
		ax = x < 0 ? -x : x;
		size_t k = 0;

		while (scales[i].names[k + 1] && ax >= scales[i].steps[k + 1])
			k++;
		x /= scales[i].steps[k];
		suffix = scales[i].names[k];
		break;
	}
	snprintf(num, sizeof(num), "%.2f", x);
	size_t len = strlen(num);

	if (len > 3 && !strcmp(num + len - 3, ".00"))
		num[len - 3] = '\0';
	snprintf(out, outsz, "%s%s", num, suffix);
}

/* pprof's measurement.Percentage: "  100%" near 100, "%5.2f%%" from 1, "%5.2g%%" below. */
static const char *pct(char *out, size_t outsz, int64_t v, int64_t total)
{
	double r = total ? 100.0 * (double)v / (double)total : 0.0;

	if (r < 0)
		r = -r;
	if (r >= 99.95 && r <= 100.05)
		snprintf(out, outsz, "  100%%");
	else if (r >= 1.0)
		snprintf(out, outsz, "%5.2f%%", r);
	else
		snprintf(out, outsz, "%5.2g%%", r);
	return out;
}

static void print_text(const char *file, const struct model_profile *p, const struct query_top *top,
		       const char *want, size_t nrows)
{
	struct buf tb = BUF_INIT, ub = BUF_INIT; /* names as cli_term_str prints them */

	printf("File: %s\n", cli_term_name(file));
	if (p->time_ns) {
		time_t sec = (time_t)(p->time_ns / 1000000000);
		struct tm tm;
		char when[64];

		if (gmtime_r(&sec, &tm) &&
		    strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm))
			printf("Time: %s\n", when);
	}
	if (p->duration_ns) {
		char d[64];

		scaled(d, sizeof(d), p->duration_ns, "nanoseconds");
		printf("Duration: %s\n", d);
	}
	for (size_t t = 0; t < p->sample_types.n; t++) {
		const char *unit = model_str(p, p->sample_types.v[t].unit);
		struct query_top_row *rows;
		int64_t shown = 0, sum = 0, total = top->totals[t];
		size_t n, show;
		char a[64], b[64], c[64], p1[32], p2[32], p3[32];

		if (want && !cli_type_matches(p, t, want))
			continue;
		rows = query_top_rows(top, t, false, &n);
		show = nrows == 0 || nrows > n ? n : nrows;
		for (size_t i = 0; i < show; i++)
			shown = (int64_t)((uint64_t)shown + (uint64_t)rows[i].self);
		scaled(a, sizeof(a), shown, unit);
		scaled(b, sizeof(b), total, unit);
		pct(p1, sizeof(p1), shown, total);
		uint32_t ty = p->sample_types.v[t].type;

		printf("\nType: %s (%s)\n", cli_term_str(&tb, p->strings.s[ty], p->strings.len[ty]),
		       cli_term_str(&ub, unit, strlen(unit)));
		printf("Showing nodes accounting for %s, %s of %s total\n", a, p1 + strspn(p1, " "),
		       b);
		if (show < n)
			printf("Showing top %zu nodes out of %zu\n", show, n);
		printf("%10s %6s %6s %10s %6s\n", "flat", "flat%", "sum%", "cum", "cum%");
		const char **labels = query_top_inline_labels(p, top, t, rows, show);

		for (size_t i = 0; i < show; i++) {
			const char *label = labels[i];

			sum = (int64_t)((uint64_t)sum + (uint64_t)rows[i].self);
			scaled(a, sizeof(a), rows[i].self, unit);
			scaled(c, sizeof(c), rows[i].total, unit);
			printf("%10s %s %s %10s %s  %s%s%s\n", a,
			       pct(p1, sizeof(p1), rows[i].self, total),
			       pct(p2, sizeof(p2), sum, total), c,
			       pct(p3, sizeof(p3), rows[i].total, total),
			       cli_term_str(&tb, top->names.s[rows[i].fn],
					    top->names.len[rows[i].fn]),
			       *label ? " " : "", label);
		}
		free(labels);
		free(rows);
	}
	buf_release(&tb);
	buf_release(&ub);
}

int cmd_top(int argc, char **argv)
{
	const char *want = NULL, *file = NULL;
	struct fmt_decode_opts opts = { 0 };
	enum fmt_kind kind;
	bool json = false;
	uint64_t nrows = 10;
	struct model_profile p;
	struct query_top top;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--json")) {
			json = true;
		} else if (!strcmp(a, "--type") || !strcmp(a, "-n") || !strcmp(a, "--event") ||
			   !strcmp(a, "--format")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "profd top: %s needs a value\n", cli_term_name(a));
				return 2;
			}
			if (!strcmp(a, "--event")) {
				opts.event = argv[++i];
			} else if (!strcmp(a, "--format")) {
				if (fmt_kind_parse(argv[++i], &opts.kind)) {
					fprintf(stderr,
						"profd top: --format: unknown format '%s'\n",
						cli_term_name(argv[i]));
					return 2;
				}
			} else if (a[1] == 'n') {
				if (parse_u64(argv[++i], &nrows)) {
					fprintf(stderr, "profd top: -n: not a number: '%s'\n",
						cli_term_name(argv[i]));
					return 2;
				}
			} else {
				want = argv[++i];
			}
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			top_usage(stdout);
			return 0;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "profd top: unknown option '%s'\n", cli_term_name(a));
			top_usage(stderr);
			return 2;
		} else if (!file) {
			file = a;
		} else {
			fprintf(stderr, "profd top: more than one FILE\n");
			return 2;
		}
	}
	if (!file) {
		top_usage(stderr);
		return 2;
	}
	model_profile_init(&p);
	if (cli_load_profile_opts("top", file, &opts, &p, &kind)) {
		model_profile_release(&p);
		return 1;
	}
	if (opts.event && kind != FMT_KIND_JFR) {
		fprintf(stderr, "profd top: --event applies to JFR input; %s is %s\n",
			cli_term_name(file), fmt_kind_name(kind));
		model_profile_release(&p);
		return 2;
	}
	if (want) {
		bool found = false;

		for (size_t t = 0; t < p.sample_types.n && !found; t++)
			found = cli_type_matches(&p, t, want);
		if (!found) {
			fprintf(stderr,
				"profd top: %s: no sample type '%s' (it has:", cli_term_name(file),
				cli_term_name(want));
			for (size_t t = 0; t < p.sample_types.n; t++)
				fprintf(stderr, " %s/%s",
					cli_term_name(model_str(&p, p.sample_types.v[t].type)),
					cli_term_name(model_str(&p, p.sample_types.v[t].unit)));
			fprintf(stderr, ")\n");
			model_profile_release(&p);
			return 1;
		}
	}
	rc = query_top_build(&p, &top);
	if (!rc) {
		if (json)
			print_json(&p, &top, want, (size_t)nrows);
		else
			print_text(file, &p, &top, want, (size_t)nrows);
	}
	query_top_release(&top);
	model_profile_release(&p);
	if (fflush(stdout) || ferror(stdout)) {
		fprintf(stderr, "profd top: cannot write the output\n");
		return 1;
	}
	return rc ? 1 : 0;
}
