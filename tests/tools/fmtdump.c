// SPDX-License-Identifier: Apache-2.0
/*
 * fmtdump.c - test helper: decode a profile file with fmt_decode_any and
 * print what the corpus facts talk about, as JSON, so integration tests
 * can compare the decoders with the facts of independent tools
 * (tests/integration/test_formats_corpus.sh).
 *
 *   fmtdump [--format KIND] [--event cpu|wall|alloc|lock] [--profile N]
 *           [--strict] [--type T --unit U] [--key name|file-line]
 *           [--encode folded[:COLUMN]|otlp-json|pprof] FILE
 *
 * Output (one JSON object): format, samples, sample_types [{type, unit,
 * total}], period_type, period, name, duration_ns, functions (distinct
 * names on stacks), max_depth (frames, inlined lines expanded), timestamps
 * {count, min, max}, labels {key: samples carrying it}, attrs {key:
 * value}, comments, and per value column "type/unit": self {name: value}
 * (leaf frame) and cum {name: value} (each distinct name once per
 * sample, the MANIFEST's definition). --key file-line names a frame
 * "name file:line" when its function has a file (the cpuprofile facts'
 * convention). With --encode the encoded profile is written instead.
 * Exit status 0, or 1 with the decode error on stderr
 * ("fmtdump: FILE: message").
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/strtab.h"
#include "format/detect.h"
#include "format/folded.h"
#include "format/otlp_json.h"
#include "format/pprof.h"
#include "model/profile.h"

#include <jansson.h>

static bool key_fileline;

static void usage(void)
{
	fprintf(stderr,
		"usage: fmtdump [--format KIND] [--event E] [--profile N] [--strict] "
		"[--type T --unit U] [--key name|file-line] [--encode folded[:COL]|otlp-json|pprof] FILE\n");
	exit(2);
}

/* Display name of line @l of @loc into @out. */
static const char *frame_key(const struct model_profile *p, const struct model_location *loc,
			     uint32_t l, struct buf *out)
{
	char tmp[256];
	const char *name = model_frame_name(p, loc, l, tmp, sizeof(tmp));

	buf_reset(out);
	buf_addstr(out, name);
	if (key_fileline && l < loc->nlines) {
		const struct model_function *f =
			&p->functions.v[p->lines.v[loc->line_off + l].function];

		if (f->filename)
			buf_addf(out, " %s:%" PRId64, model_str(p, f->filename), f->start_line);
	}
	return out->p;
}

static json_t *dump(const struct model_profile *p, enum fmt_kind kind)
{
	json_t *o = json_object(), *types = json_array(), *self = json_object(),
	       *cum = json_object(), *labels = json_object(), *attrs = json_object(),
	       *comments = json_array(), *ts = json_object();
	size_t nt = p->sample_types.n, max_depth = 0, nts = 0;
	int64_t tmin = INT64_MAX, tmax = INT64_MIN;
	struct strtab names;
	VEC(int64_t) selfv = { 0 }, cumv = { 0 };
	VEC(size_t) stamp = { 0 };
	VEC(uint32_t) ids = { 0 };
	struct buf key = BUF_INIT;
	char id[512];

	strtab_init(&names);
	json_object_set_new(o, "format", json_string(fmt_kind_name(kind)));
	json_object_set_new(o, "samples", json_integer((json_int_t)p->samples.n));
	model_profile_type_id(p, 0, id, sizeof(id));
	json_object_set_new(o, "type_id", json_string(id));
	snprintf(id, sizeof(id), "%s/%s", model_str(p, p->period_type.type),
		 model_str(p, p->period_type.unit));
	json_object_set_new(o, "period_type", json_string(id));
	json_object_set_new(o, "period", json_integer(p->period));
	json_object_set_new(o, "name", json_string(model_str(p, p->name)));
	json_object_set_new(o, "time_ns", json_integer(p->time_ns));
	json_object_set_new(o, "duration_ns", json_integer(p->duration_ns));
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];
		size_t depth = 0;

		ids.n = 0;
		for (uint32_t k = 0; k < s->nstack; k++) {
			const struct model_location *loc =
				&p->locations.v[p->stack_locs.v[s->stack_off + k]];
			uint32_t nl = loc->nlines ? loc->nlines : 1;

			for (uint32_t l = 0; l < nl; l++) {
				const char *name = frame_key(p, loc, l, &key);

				VEC_PUSH(&ids, strtab_intern_cstr(&names, name));
				depth++;
			}
		}
		max_depth = PROF_MAX(max_depth, depth);
		while (stamp.n < names.n) {
			VEC_PUSH(&stamp, 0);
			for (size_t c = 0; c < nt; c++) {
				VEC_PUSH(&selfv, 0);
				VEC_PUSH(&cumv, 0);
			}
		}
		for (size_t c = 0; c < nt; c++) {
			int64_t v = p->values.v[s->value_off + c];

			if (ids.n)
				selfv.v[ids.v[0] * nt + c] += v;
		}
		for (size_t k = 0; k < ids.n; k++) {
			if (stamp.v[ids.v[k]] == i + 1)
				continue;
			stamp.v[ids.v[k]] = i + 1;
			for (size_t c = 0; c < nt; c++)
				cumv.v[ids.v[k] * nt + c] += p->values.v[s->value_off + c];
		}
		for (uint32_t k = 0; k < s->nlabels; k++) {
			const char *lk = model_str(p, p->labels.v[s->label_off + k].key);
			json_t *cnt = json_object_get(labels, lk);

			json_object_set_new(labels, lk,
					    json_integer(cnt ? json_integer_value(cnt) + 1 : 1));
		}
		if (s->timestamp_ns) {
			nts++;
			tmin = PROF_MIN(tmin, s->timestamp_ns);
			tmax = PROF_MAX(tmax, s->timestamp_ns);
		}
	}
	for (size_t c = 0; c < nt; c++) {
		json_t *t = json_object(), *sm = json_object(), *cm = json_object();
		int64_t total = 0;

		json_object_set_new(t, "type",
				    json_string(model_str(p, p->sample_types.v[c].type)));
		json_object_set_new(t, "unit",
				    json_string(model_str(p, p->sample_types.v[c].unit)));
		for (size_t i = 0; i < p->samples.n; i++)
			total += p->values.v[p->samples.v[i].value_off + c];
		json_object_set_new(t, "total", json_integer(total));
		json_array_append_new(types, t);
		for (uint32_t n = 1; n < names.n && n < stamp.n; n++) {
			if (selfv.v[n * nt + c])
				json_object_set_new(sm, names.s[n],
						    json_integer(selfv.v[n * nt + c]));
			if (cumv.v[n * nt + c])
				json_object_set_new(cm, names.s[n],
						    json_integer(cumv.v[n * nt + c]));
		}
		snprintf(id, sizeof(id), "%s/%s", model_str(p, p->sample_types.v[c].type),
			 model_str(p, p->sample_types.v[c].unit));
		json_object_set_new(self, id, sm);
		json_object_set_new(cum, id, cm);
	}
	for (size_t i = 0; i < p->attrs.n; i++) {
		const struct model_label *a = &p->attrs.v[i];

		json_object_set_new(attrs, model_str(p, a->key),
				    a->str ? json_string(model_str(p, a->str))
					   : json_integer(a->num));
	}
	for (size_t i = 0; i < p->comments.n; i++)
		json_array_append_new(comments, json_string(model_str(p, p->comments.v[i])));
	json_object_set_new(ts, "count", json_integer((json_int_t)nts));
	json_object_set_new(ts, "min", json_integer(nts ? tmin : 0));
	json_object_set_new(ts, "max", json_integer(nts ? tmax : 0));
	json_object_set_new(o, "sample_types", types);
	json_object_set_new(o, "functions", json_integer(names.n ? names.n - 1 : 0));
	json_object_set_new(o, "max_depth", json_integer((json_int_t)max_depth));
	json_object_set_new(o, "timestamps", ts);
	json_object_set_new(o, "labels", labels);
	json_object_set_new(o, "attrs", attrs);
	json_object_set_new(o, "comments", comments);
	json_object_set_new(o, "self", self);
	json_object_set_new(o, "cum", cum);
	strtab_release(&names);
	VEC_FREE(&selfv);
	VEC_FREE(&cumv);
	VEC_FREE(&stamp);
	VEC_FREE(&ids);
	buf_release(&key);
	return o;
}

int main(int argc, char **argv)
{
	struct fmt_decode_opts opts = { 0 };
	const char *file = NULL, *encode = NULL;
	struct model_profile p;
	struct prof_err err;
	struct buf data, out = BUF_INIT;
	enum fmt_kind kind;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		uint64_t v;

		if (!strcmp(a, "--strict")) {
			opts.strict = true;
		} else if (i + 1 < argc && !strcmp(a, "--format")) {
			if (fmt_kind_parse(argv[++i], &opts.kind))
				usage();
		} else if (i + 1 < argc && !strcmp(a, "--event")) {
			opts.event = argv[++i];
		} else if (i + 1 < argc && !strcmp(a, "--profile")) {
			if (parse_u64(argv[++i], &v) || v > 1000000)
				usage();
			opts.profile = (unsigned)v;
		} else if (i + 1 < argc && !strcmp(a, "--type")) {
			opts.sample_type = argv[++i];
		} else if (i + 1 < argc && !strcmp(a, "--unit")) {
			opts.sample_unit = argv[++i];
		} else if (i + 1 < argc && !strcmp(a, "--key")) {
			key_fileline = !strcmp(argv[++i], "file-line");
		} else if (i + 1 < argc && !strcmp(a, "--encode")) {
			encode = argv[++i];
		} else if (a[0] == '-' && a[1]) {
			usage();
		} else {
			file = a;
		}
	}
	if (!file)
		usage();
	buf_init(&data, 1u << 30);
	rc = buf_read_file(&data, file);
	if (rc) {
		fprintf(stderr, "fmtdump: %s: %s\n", file, prof_strerror(rc));
		return 1;
	}
	prof_err_init(&err);
	model_profile_init(&p);
	kind = opts.kind ? opts.kind : fmt_detect(data.p ? data.p : "", data.len, file);
	rc = fmt_decode_any(data.p ? data.p : "", data.len, file, &opts, &p, &err);
	if (!rc)
		rc = model_profile_validate(&p, &err);
	if (rc) {
		fprintf(stderr, "fmtdump: %s: %s (%s)\n", file, err.msg[0] ? err.msg : "",
			prof_strerror(rc));
		model_profile_release(&p);
		buf_release(&data);
		return 1;
	}
	if (encode) {
		const struct model_profile *one = &p;

		if (!strncmp(encode, "folded", 6))
			rc = fmt_folded_encode(
				&p, encode[6] == ':' ? (uint32_t)atoi(encode + 7) : 0, &out);
		else if (!strcmp(encode, "otlp-json"))
			rc = fmt_otlp_json_encode(&one, 1, &out);
		else if (!strcmp(encode, "pprof"))
			rc = fmt_pprof_encode(&p, false, &out);
		else
			usage();
		if (!rc && out.len)
			fwrite(out.p, 1, out.len, stdout);
	} else {
		json_t *o = dump(&p, kind);

		json_dumpf(o, stdout, JSON_INDENT(1) | JSON_SORT_KEYS);
		fputc('\n', stdout);
		json_decref(o);
	}
	model_profile_release(&p);
	buf_release(&data);
	buf_release(&out);
	return rc ? 1 : 0;
}
