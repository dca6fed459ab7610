// SPDX-License-Identifier: Apache-2.0
/*
 * load.c - reading profile files for the subcommands; see load.h.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "cli/load.h"
#include "cli/termtext.h"

/* Prints a decode error the way every subcommand does: file, reason, offset. */
void cli_print_decode_error(const char *cmd, const char *file, int rc, const struct prof_err *err)
{
	if (err->code && err->msg[0]) {
		fprintf(stderr, "profd %s: %s: %s", cmd, cli_term_name(file),
			cli_term_name(err->msg));
		if (err->offset >= 0 && !strstr(err->msg, "byte"))
			fprintf(stderr, " (at byte %" PRId64 ")", err->offset);
		fprintf(stderr, "\n");
	} else {
		fprintf(stderr, "profd %s: %s: %s\n", cmd, cli_term_name(file), prof_strerror(rc));
	}
}

void cli_print_decode_notes(const char *cmd, const char *file, enum fmt_kind kind,
			    const struct model_profile *p)
{
	char text[sizeof(p->skipped.what) + sizeof(p->skipped.first) + 48];

	/* What a decoder skipped as unreadable: say it, never drop input silently. */
	if (model_skipped_text(&p->skipped, text, sizeof(text)))
		fprintf(stderr, "profd %s: %s: note: %s\n", cmd, cli_term_name(file),
			cli_term_name(text));
	/* The JFR decoder's word on an empty family (jfr.h). Other comments are
	 * the producer's own text, not ours to print. */
	for (size_t i = 0; kind == FMT_KIND_JFR && i < p->comments.n; i++) {
		const char *c = model_str(p, p->comments.v[i]);

		if (!strncmp(c, "jfr: no ", 8))
			fprintf(stderr, "profd %s: %s: note: %s\n", cmd, cli_term_name(file),
				cli_term_name(c));
	}
}

int cli_read_file(const char *cmd, const char *file, struct buf *data)
{
	int rc = buf_read_file(data, file);

	if (rc)
		fprintf(stderr, "profd %s: %s: %s\n", cmd, cli_term_name(file),
			rc == -PROF_ETOOBIG ? "file larger than 1 GiB" : prof_strerror(rc));
	return rc;
}

int cli_decode_profile(const char *cmd, const char *file, const struct buf *data,
		       const struct fmt_decode_opts *opts, struct model_profile *p)
{
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = fmt_decode_any(data->p ? data->p : "", data->len, file, opts, p, &err);
	if (rc)
		cli_print_decode_error(cmd, file, rc, &err);
	return rc;
}

int cli_load_profile_opts(const char *cmd, const char *file, const struct fmt_decode_opts *opts,
			  struct model_profile *p, enum fmt_kind *kind)
{
	enum fmt_kind k = FMT_KIND_UNKNOWN;
	struct buf data;
	int rc;

	buf_init(&data, CLI_MAX_FILE);
	rc = cli_read_file(cmd, file, &data);
	if (!rc) {
		k = opts && opts->kind ? opts->kind
				       : fmt_detect(data.p ? data.p : "", data.len, file);
		if (kind)
			*kind = k;
		rc = cli_decode_profile(cmd, file, &data, opts, p);
	}
	buf_release(&data);
	if (!rc)
		cli_print_decode_notes(cmd, file, k, p);
	return rc;
}

int cli_load_profile(const char *cmd, const char *file, struct model_profile *p,
		     enum fmt_kind *kind)
{
	return cli_load_profile_opts(cmd, file, NULL, p, kind);
}

bool cli_type_matches(const struct model_profile *p, size_t t, const char *want)
{
	const char *type = model_str(p, p->sample_types.v[t].type);
	const char *unit = model_str(p, p->sample_types.v[t].unit);
	size_t tl = strlen(type);

	if (!strcmp(want, type))
		return true;
	return !strncmp(want, type, tl) && want[tl] == '/' && !strcmp(want + tl + 1, unit);
}
