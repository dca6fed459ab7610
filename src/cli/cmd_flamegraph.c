// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_flamegraph.c - `profd flamegraph FILE -o out.svg`: a standalone
 * interactive SVG flame graph (query/export.h) of a profile file in any
 * format profd reads (format/detect.h: pprof, OTLP, JFR, folded, perf
 * script, speedscope, cpuprofile), through the same stack set and flame
 * graph code the server uses, so the picture equals /api/v1/export/svg.
 *
 * The sample type is the profile's default (pprof default_sample_type),
 * else its last one (go tool pprof's rule), unless --type names one.
 * Unsymbolized native frames are resolved from the local files their
 * mappings name when the build IDs match (--no-symbolize to skip).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "cli/termtext.h"
#include "model/profile.h"
#include "query/export.h"
#include "query/filter.h"
#include "query/flamegraph.h"
#include "query/stackset.h"
#include "symbolize/symbolizer.h"

static void flamegraph_usage(FILE *f)
{
	fprintf(f,
		"usage: profd flamegraph [options] FILE -o OUT.svg\n"
		"\n"
		"Draw an interactive SVG flame graph of a profile file (pprof, OTLP, JFR,\n"
		"folded, perf script, speedscope, cpuprofile; gzipped or not). Click a\n"
		"frame to zoom, Escape to reset, Ctrl-F to search.\n"
		"\n"
		"  -o, --output FILE      where to write (- = stdout); required\n"
		"  --type TYPE            sample type by name (cpu, alloc_space) or type/unit\n"
		"  --format svg|folded    output format (default svg)\n"
		"  --invert               leaves first (an icicle of callers)\n"
		"  --max-nodes N          keep the N largest nodes, merge the rest (default 8192)\n"
		"  --title TEXT           the title (default: the file name)\n"
		"  --hide LIST            hide runtime frames: go,jvm,libc,kernel\n"
		"  --frame-filter REGEX   hide matching frames (cost goes to the caller)\n"
		"  --stack-filter REGEX   keep only stacks with a matching frame\n"
		"  --no-symbolize         do not resolve native frames from local files\n");
}

/* Index of the sample type named @want ("cpu" or "cpu/nanoseconds"), or -1. */
static int find_type(const struct model_profile *p, const char *want)
{
	for (size_t i = 0; i < p->sample_types.n; i++) {
		const char *t = model_str(p, p->sample_types.v[i].type);
		const char *u = model_str(p, p->sample_types.v[i].unit);
		char both[256];

		snprintf(both, sizeof(both), "%s/%s", t, u);
		if (!strcmp(want, t) || !strcmp(want, both))
			return (int)i;
	}
	return -1;
}

static int default_type(const struct model_profile *p)
{
	if (p->default_sample_type) {
		for (size_t i = 0; i < p->sample_types.n; i++)
			if (p->sample_types.v[i].type == p->default_sample_type)
				return (int)i;
	}
	return (int)p->sample_types.n - 1;
}

int cmd_flamegraph(int argc, char **argv)
{
	const char *file = NULL, *out_path = NULL, *type = NULL, *title = NULL, *format = "svg";
	const char *hide = NULL, *frame_filter = NULL, *stack_filter = NULL;
	uint64_t max_nodes = 8192;
	bool invert = false, symbolize = true;
	struct model_profile p;
	struct query_filter f = { 0 };
	struct query_stackset ss;
	struct query_flamegraph fg;
	struct symbolizer *sym = NULL;
	struct buf out;
	struct prof_err err;
	int rc, ti, status = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		bool more = i + 1 < argc;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			flamegraph_usage(stdout);
			return 0;
		} else if ((!strcmp(a, "-o") || !strcmp(a, "--output")) && more) {
			out_path = argv[++i];
		} else if (!strcmp(a, "--type") && more) {
			type = argv[++i];
		} else if (!strcmp(a, "--format") && more) {
			format = argv[++i];
		} else if (!strcmp(a, "--title") && more) {
			title = argv[++i];
		} else if (!strcmp(a, "--hide") && more) {
			hide = argv[++i];
		} else if (!strcmp(a, "--frame-filter") && more) {
			frame_filter = argv[++i];
		} else if (!strcmp(a, "--stack-filter") && more) {
			stack_filter = argv[++i];
		} else if (!strcmp(a, "--max-nodes") && more) {
			if (parse_u64(argv[++i], &max_nodes) || max_nodes < 1 ||
			    max_nodes > 10000000) {
				fprintf(stderr,
					"profd flamegraph: --max-nodes: expected 1 to 10000000, "
					"got '%s'\n",
					cli_term_name(argv[i]));
				return 2;
			}
		} else if (!strcmp(a, "--invert")) {
			invert = true;
		} else if (!strcmp(a, "--no-symbolize")) {
			symbolize = false;
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "profd flamegraph: unknown or incomplete option '%s'\n\n",
				cli_term_name(a));
			flamegraph_usage(stderr);
			return 2;
		} else if (!file) {
			file = a;
		} else {
			fprintf(stderr, "profd flamegraph: one input file only ('%s')\n",
				cli_term_name(a));
			return 2;
		}
	}
	if (!file || !out_path) {
		flamegraph_usage(stderr);
		return 2;
	}
	if (strcmp(format, "svg") && strcmp(format, "folded")) {
		fprintf(stderr, "profd flamegraph: --format: expected svg or folded, got '%s'\n",
			format);
		return 2;
	}
	prof_err_init(&err);
	if (query_filter_init(&f, stack_filter, frame_filter, hide, &err)) {
		/* "parameter 'hide'" reads as the option of the same name here. */
		fprintf(stderr, "profd flamegraph: %s\n", cli_term_name(err.msg));
		query_filter_release(&f);
		return 2;
	}
	model_profile_init(&p);
	buf_init(&out, 0);
	if (cli_load_profile("flamegraph", file, &p, NULL))
		goto done;
	if (!p.sample_types.n) {
		fprintf(stderr, "profd flamegraph: %s: the profile has no sample types\n",
			cli_term_name(file));
		goto done;
	}
	ti = type ? find_type(&p, type) : default_type(&p);
	if (ti < 0) {
		fprintf(stderr,
			"profd flamegraph: --type: the profile has no sample type '%s' (it has:",
			type);
		for (size_t i = 0; i < p.sample_types.n; i++)
			fprintf(stderr, " %s",
				cli_term_name(model_str(&p, p.sample_types.v[i].type)));
		fprintf(stderr, ")\n");
		goto done;
	}
	if (symbolize) {
		static const char *const everywhere[] = { "/" };

		/* A local tool: the user's own files, the mapping paths the profile names. */
		sym = symbolizer_new(64);
		symbolizer_set_symbol_paths(sym, everywhere, 1, NULL);
	}
	struct query_stackset_params sp = { .filter = &f, .sym = sym };
	rc = query_stackset_from_profile(&p, (uint32_t)ti, &sp, &ss, &err);
	if (rc) {
		fprintf(stderr, "profd flamegraph: %s: %s\n", cli_term_name(file),
			cli_term_name(err.msg));
		query_stackset_release(&ss);
		goto done;
	}
	if (!strcmp(format, "folded")) {
		rc = query_export_folded(&ss, &out);
	} else {
		struct query_flame_opts o = { (size_t)max_nodes, 0, invert };
		char sub[600];

		query_flamegraph_from_stackset(&ss, &o, &fg);
		snprintf(sub, sizeof(sub), "%s, %" PRIu64 " samples", ss.type, ss.rows);
		struct query_svg_opts so = { title ? title : file, sub, 0 };
		rc = query_export_svg(&fg, ss.type, &so, &out);
		query_flamegraph_release(&fg);
	}
	query_stackset_release(&ss);
	if (rc) {
		fprintf(stderr, "profd flamegraph: %s\n", prof_strerror(rc));
		goto done;
	}
	if (!strcmp(out_path, "-"))
		rc = fwrite(out.p, 1, out.len, stdout) == out.len ? 0 : -EIO;
	else
		rc = buf_write_file(out_path, out.p, out.len);
	if (rc) {
		fprintf(stderr, "profd flamegraph: writing %s: %s\n", cli_term_name(out_path),
			prof_strerror(rc));
		goto done;
	}
	status = 0;
done:
	symbolizer_free(sym);
	buf_release(&out);
	model_profile_release(&p);
	query_filter_release(&f);
	return status;
}
