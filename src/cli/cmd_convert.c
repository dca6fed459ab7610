// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_convert.c - `profd convert IN OUT`: convert a profile between pprof
 * and OTLP protobuf. The input format is sniffed from its bytes (gzip,
 * then pprof vs OTLP structure: format/detect.h); the output format comes
 * from OUT's name:
 *
 *   *.otlp.pb          OTLP ExportProfilesServiceRequest, protobuf
 *   *.otlp.pb.gz       the same, gzipped
 *   *.pb.gz, *.pprof, *.pprof.gz   pprof, gzipped (as Go writes it)
 *   *.pb               pprof, raw protobuf
 *
 * OTLP to OTLP keeps the request's profiles as they are; any conversion to
 * pprof merges them into one profile (model/merge.h); pprof to OTLP turns
 * K sample types into K OTLP Profiles (format/otlp.h). OUT is written
 * atomically (temp file, fsync, rename).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "cli/cli.h"
#include "cli/load.h"
#include "format/otlp.h"
#include "format/pprof.h"

enum out_kind { OUT_NONE, OUT_PPROF_GZ, OUT_PPROF, OUT_OTLP, OUT_OTLP_GZ };

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
	if (ends_with(path, ".pb.gz") || ends_with(path, ".pprof") || ends_with(path, ".pprof.gz"))
		return OUT_PPROF_GZ;
	if (ends_with(path, ".pb"))
		return OUT_PPROF;
	return OUT_NONE;
}

static void convert_usage(FILE *f)
{
	fprintf(f, "usage: profd convert IN OUT\n"
		   "\n"
		   "Convert a profile between pprof and OTLP. IN may be pprof or OTLP\n"
		   "protobuf, gzipped or not (sniffed). OUT's name picks the format:\n"
		   "  .pb.gz .pprof .pprof.gz   pprof (gzipped)    .pb   pprof (raw)\n"
		   "  .otlp.pb                  OTLP protobuf      .otlp.pb.gz   OTLP (gzipped)\n");
}

/* OTLP in, OTLP out: re-encode the request's profiles without merging them. */
static int otlp_to_otlp(const char *in, struct buf *out)
{
	struct buf data, raw = BUF_INIT;
	struct fmt_otlp_batch batch;
	struct prof_err err;
	const struct model_profile **ps = NULL;
	const void *p;
	size_t n;
	int rc;

	buf_init(&data, CLI_MAX_FILE);
	prof_err_init(&err);
	rc = buf_read_file(&data, in);
	if (rc) {
		fprintf(stderr, "profd convert: %s: %s\n", in, prof_strerror(rc));
		goto out;
	}
	p = data.p;
	n = data.len;
	if (gzip_is(p, n)) {
		rc = gzip_inflate(p, n, FMT_PPROF_DEFAULT_MAX, &raw, &err);
		if (rc) {
			cli_print_decode_error("convert", in, rc, &err);
			goto out;
		}
		p = raw.p;
		n = raw.len;
	}
	rc = fmt_otlp_decode(p, n, 0, &batch, &err);
	if (rc) {
		cli_print_decode_error("convert", in, rc, &err);
		goto out;
	}
	ps = calloc(batch.n + 1, sizeof(*ps));
	for (size_t i = 0; ps && i < batch.n; i++)
		ps[i] = &batch.profiles[i];
	rc = ps ? fmt_otlp_encode(ps, batch.n, out) : -ENOMEM;
	if (rc)
		fprintf(stderr, "profd convert: cannot encode OTLP: %s\n", prof_strerror(rc));
	free(ps);
	fmt_otlp_batch_release(&batch);
out:
	buf_release(&raw);
	buf_release(&data);
	return rc;
}

int cmd_convert(int argc, char **argv)
{
	const char *in = NULL, *outpath = NULL;
	struct model_profile p;
	struct buf out = BUF_INIT, gz = BUF_INIT;
	enum fmt_kind kind = FMT_KIND_UNKNOWN;
	enum out_kind ok;
	bool reported = false;
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			convert_usage(stdout);
			return 0;
		}
		if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "profd convert: unknown option '%s'\n", argv[i]);
			convert_usage(stderr);
			return 2;
		}
		if (!in) {
			in = argv[i];
		} else if (!outpath) {
			outpath = argv[i];
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
			".otlp.pb or .otlp.pb.gz)\n",
			outpath);
		return 2;
	}
	model_profile_init(&p);
	if (cli_load_profile("convert", in, &p, &kind)) {
		model_profile_release(&p);
		return 1;
	}
	if (ok == OUT_OTLP || ok == OUT_OTLP_GZ) {
		if (kind == FMT_KIND_OTLP) {
			rc = otlp_to_otlp(in, &out);
			reported = rc != 0;
		} else {
			const struct model_profile *one = &p;

			rc = fmt_otlp_encode(&one, 1, &out);
		}
		if (!rc && ok == OUT_OTLP_GZ) {
			rc = gzip_deflate(out.p, out.len, &gz);
			buf_release(&out);
			out = gz;
		}
	} else {
		rc = fmt_pprof_encode(&p, ok == OUT_PPROF_GZ, &out);
	}
	if (!rc) {
		rc = buf_write_file(outpath, out.p ? out.p : "", out.len);
		if (rc)
			fprintf(stderr, "profd convert: %s: %s\n", outpath, prof_strerror(rc));
	} else if (!reported) {
		fprintf(stderr, "profd convert: %s: cannot encode: %s\n", outpath,
			prof_strerror(rc));
	}
	buf_release(&out);
	model_profile_release(&p);
	return rc ? 1 : 0;
}
