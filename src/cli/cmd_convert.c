// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_convert.c - `profd convert IN OUT [--event E] [--type T]
 * [--format KIND]`: convert a profile between formats. IN is any format
 * fmt_decode_any reads (pprof protobuf and legacy, OTLP protobuf and JSON,
 * JFR, folded, perf script, speedscope, V8 cpuprofile; gzipped or not,
 * sniffed from the bytes, --format forces one); OUT's name picks the
 * output:
 *
 *   *.otlp.pb                 OTLP ExportProfilesServiceRequest, protobuf
 *   *.otlp.pb.gz              the same, gzipped
 *   *.otlp.json, *.pb.json    OTLP/JSON (format/otlp_json.h)
 *   *.pb.gz, *.pprof, *.pprof.gz   pprof, gzipped (as Go writes it)
 *   *.pb                      pprof, raw protobuf
 *   *.folded, *.collapsed, *.txt   folded stacks, one value column
 *
 * OTLP to OTLP (either encoding) keeps the request's profiles as they are;
 * any other conversion goes through one model profile: OTLP profiles are
 * merged into one (model/merge.h), and a K-type profile becomes K OTLP
 * Profiles (format/otlp.h). Folded output holds one value column: --type
 * (a sample type name, or type/unit), else the profile's default sample
 * type, else its last one -- the column `go tool pprof` shows by default.
 * --event picks the JFR event family (cpu, wall, alloc, lock, malloc;
 * default cpu) and is refused for other inputs. OUT is written atomically (temp
 * file, fsync, rename).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "cli/termtext.h"
#include "format/folded.h"
#include "format/otlp.h"
#include "format/otlp_compat.h"
#include "format/otlp_json.h"
#include "format/pprof.h"

enum out_kind {
	OUT_NONE,
	OUT_PPROF_GZ,
	OUT_PPROF,
	OUT_OTLP,
	OUT_OTLP_GZ,
	OUT_OTLP_JSON,
	OUT_FOLDED
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

static enum out_kind out_kind_of(const char *path)
{
	if (ends_with(path, ".otlp.pb"))
		return OUT_OTLP;
	if (ends_with(path, ".otlp.pb.gz"))
		return OUT_OTLP_GZ;
	if (ends_with(path, ".otlp.json") || ends_with(path, ".pb.json"))
		return OUT_OTLP_JSON;
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof") || ends_with(path, ".pprof.gz"))
		return OUT_PPROF_GZ;
	if (ends_with(path, ".pb"))
		return OUT_PPROF;
	if (ends_with(path, ".folded") || ends_with(path, ".collapsed") || ends_with(path, ".txt"))
		return OUT_FOLDED;
	return OUT_NONE;
}

static void convert_usage(FILE *f)
{
	fprintf(f,
		"usage: profd convert [--event cpu|wall|alloc|lock|malloc] [--type TYPE]\n"
		"                     [--format KIND] IN OUT\n"
		"\n"
		"Convert a profile. IN may be pprof (protobuf or legacy text/binary), OTLP\n"
		"(protobuf or JSON), JFR, folded stacks, perf script, speedscope or a V8\n"
		"cpuprofile, gzipped or not (sniffed). OUT's name picks the format:\n"
		"  .pb.gz .pprof .pprof.gz   pprof (gzipped)    .pb            pprof (raw)\n"
		"  .otlp.pb                  OTLP protobuf      .otlp.pb.gz    OTLP (gzipped)\n"
		"  .otlp.json .pb.json       OTLP/JSON          .folded .collapsed .txt   folded\n"
		"\n"
		"  --event E     JFR input: the events to convert (cpu, wall, alloc, lock, malloc;\n"
		"                default cpu)\n"
		"  --type TYPE   folded output: the value column (name or type/unit; default:\n"
		"                the default sample type, else the last)\n"
		"  --format KIND read IN as KIND (pprof, pprof-legacy, otlp, otlp-json, jfr,\n"
		"                folded, perf-script, speedscope, cpuprofile)\n");
}

/* The folded column: --type, else the default sample type, else the last; -1 if none. */
static long folded_column(const struct model_profile *p, const char *want, const char *out)
{
	if (!p->sample_types.n) {
		fprintf(stderr, "profd convert: %s: the profile has no sample types\n",
			cli_term_name(out));
		return -1;
	}
	for (size_t t = 0; want && t < p->sample_types.n; t++)
		if (cli_type_matches(p, t, want))
			return (long)t;
	if (want) {
		fprintf(stderr,
			"profd convert: --type: no sample type '%s' (it has:", cli_term_name(want));
		for (size_t t = 0; t < p->sample_types.n; t++)
			fprintf(stderr, " %s/%s",
				cli_term_name(model_str(p, p->sample_types.v[t].type)),
				cli_term_name(model_str(p, p->sample_types.v[t].unit)));
		fprintf(stderr, ")\n");
		return -1;
	}
	for (size_t t = 0; p->default_sample_type && t < p->sample_types.n; t++)
		if (p->sample_types.v[t].type == p->default_sample_type)
			return (long)t;
	return (long)p->sample_types.n - 1;
}

/* OTLP in, OTLP out: re-encode the request's profiles without merging them. */
static int otlp_to_otlp(const char *in, const struct buf *data, enum fmt_kind kind, bool json,
			struct buf *out)
{
	struct buf raw = BUF_INIT;
	struct fmt_otlp_batch batch = { 0 };
	struct prof_err err;
	const struct model_profile **ps = NULL;
	const void *p = data->p ? data->p : "";
	size_t n = data->len;
	int rc;

	prof_err_init(&err);
	if (gzip_is(p, n)) {
		rc = gzip_inflate(p, n, FMT_DEFAULT_MAX_INPUT, &raw, &err);
		if (rc) {
			cli_print_decode_error("convert", in, rc, &err);
			goto out;
		}
		p = raw.p ? raw.p : "";
		n = raw.len;
	}
	rc = kind == FMT_KIND_OTLP_JSON ? fmt_otlp_json_decode(p, n, NULL, &batch, &err)
					: fmt_otlp_decode_any(p, n, 0, &batch, &err);
	if (rc) {
		cli_print_decode_error("convert", in, rc, &err);
		goto out;
	}
	ps = calloc(batch.n + 1, sizeof(*ps));
	for (size_t i = 0; ps && i < batch.n; i++)
		ps[i] = &batch.profiles[i];
	rc = !ps    ? -ENOMEM
	     : json ? fmt_otlp_json_encode(ps, batch.n, out)
		    : fmt_otlp_encode(ps, batch.n, out);
	if (rc)
		fprintf(stderr, "profd convert: cannot encode OTLP: %s\n", prof_strerror(rc));
	free(ps);
out:
	fmt_otlp_batch_release(&batch);
	buf_release(&raw);
	return rc;
}

static int encode(const struct model_profile *p, enum out_kind ok, long col, struct buf *out)
{
	const struct model_profile *one = p;

	switch (ok) {
	case OUT_OTLP:
	case OUT_OTLP_GZ:
		return fmt_otlp_encode(&one, 1, out);
	case OUT_OTLP_JSON:
		return fmt_otlp_json_encode(&one, 1, out);
	case OUT_FOLDED:
		return fmt_folded_encode(p, (uint32_t)col, out);
	default:
		return fmt_pprof_encode(p, ok == OUT_PPROF_GZ, out);
	}
}

int cmd_convert(int argc, char **argv)
{
	const char *in = NULL, *outpath = NULL, *want = NULL;
	struct fmt_decode_opts opts = { 0 };
	struct model_profile p;
	struct buf data, out = BUF_INIT, gz = BUF_INIT;
	enum fmt_kind kind;
	enum out_kind ok;
	long col = 0;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			convert_usage(stdout);
			return 0;
		}
		if (!strcmp(a, "--event") || !strcmp(a, "--type") || !strcmp(a, "--format")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "profd convert: %s needs a value\n",
					cli_term_name(a));
				return 2;
			}
			if (!strcmp(a, "--event")) {
				opts.event = argv[++i];
			} else if (!strcmp(a, "--type")) {
				want = argv[++i];
			} else if (fmt_kind_parse(argv[++i], &opts.kind)) {
				fprintf(stderr, "profd convert: --format: unknown format '%s'\n",
					cli_term_name(argv[i]));
				return 2;
			}
		} else if (a[0] == '-' && a[1]) {
			fprintf(stderr, "profd convert: unknown option '%s'\n", cli_term_name(a));
			convert_usage(stderr);
			return 2;
		} else if (!in) {
			in = a;
		} else if (!outpath) {
			outpath = a;
		} else {
			convert_usage(stderr);
			return 2;
		}
	}
	if (!in || !outpath) {
		convert_usage(stderr);
		return 2;
	}
	ok = out_kind_of(outpath);
	if (ok == OUT_NONE) {
		fprintf(stderr,
			"profd convert: %s: unknown output format (use .pb.gz, .pprof, .pb, "
			".otlp.pb, .otlp.pb.gz, .otlp.json, .folded or .txt)\n",
			cli_term_name(outpath));
		return 2;
	}
	if (want && ok != OUT_FOLDED) {
		fprintf(stderr,
			"profd convert: --type applies to folded output only (%s keeps "
			"every sample type)\n",
			cli_term_name(outpath));
		return 2;
	}
	buf_init(&data, CLI_MAX_FILE);
	if (cli_read_file("convert", in, &data)) {
		buf_release(&data);
		return 1;
	}
	kind = opts.kind ? opts.kind : fmt_detect(data.p ? data.p : "", data.len, in);
	if (opts.event && kind != FMT_KIND_JFR) {
		fprintf(stderr, "profd convert: --event applies to JFR input; %s is %s\n",
			cli_term_name(in), fmt_kind_name(kind));
		buf_release(&data);
		return 2;
	}
	if ((kind == FMT_KIND_OTLP || kind == FMT_KIND_OTLP_JSON) &&
	    (ok == OUT_OTLP || ok == OUT_OTLP_GZ || ok == OUT_OTLP_JSON)) {
		rc = otlp_to_otlp(in, &data, kind, ok == OUT_OTLP_JSON, &out);
		buf_release(&data);
		if (rc)
			goto done;
	} else {
		model_profile_init(&p);
		rc = cli_decode_profile("convert", in, &data, &opts, &p);
		buf_release(&data);
		if (!rc)
			cli_print_decode_notes("convert", in, kind, &p);
		if (!rc && ok == OUT_FOLDED && (col = folded_column(&p, want, outpath)) < 0)
			rc = -EINVAL;
		else if (!rc && (rc = encode(&p, ok, col, &out)) != 0)
			fprintf(stderr, "profd convert: %s: cannot encode: %s\n",
				cli_term_name(outpath), prof_strerror(rc));
		model_profile_release(&p);
		if (rc)
			goto done;
	}
	if (ok == OUT_OTLP_GZ) {
		rc = gzip_deflate(out.p ? out.p : "", out.len, &gz);
		buf_release(&out);
		out = gz;
		if (rc) {
			fprintf(stderr, "profd convert: %s: cannot compress: %s\n",
				cli_term_name(outpath), prof_strerror(rc));
			goto done;
		}
	}
	rc = buf_write_file(outpath, out.p ? out.p : "", out.len);
	if (rc)
		fprintf(stderr, "profd convert: %s: %s\n", cli_term_name(outpath),
			prof_strerror(rc));
done:
	buf_release(&out);
	if (rc == -EINVAL)
		return 2;
	return rc ? 1 : 0;
}
