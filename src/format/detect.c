// SPDX-License-Identifier: Apache-2.0
/*
 * detect.c - format sniffing and decode-anything; see detect.h.
 *
 * Sniffing reads a bounded prefix (64 KiB inflated, 4 KiB of text) so it
 * costs the same for any input size; JSON is recognised by walking its
 * top-level keys with a small scanner that skips values without building
 * them (nesting tracked with a counter, no recursion).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "format/cpuprofile.h"
#include "format/detect.h"
#include "format/folded.h"
#include "format/jfr.h"
#include "format/otlp.h"
#include "format/otlp_compat.h"
#include "format/otlp_json.h"
#include "format/pbcheck.h"
#include "format/perfscript.h"
#include "format/pprof.h"
#include "format/pprof_legacy.h"
#include "format/speedscope.h"
#include "format/textutil.h"
#include "model/merge.h"

#include <strings.h>
#include <zlib.h>

#define SNIFF_MAX (64u << 10)

static const struct {
	enum fmt_kind kind;
	const char *name;
} kind_names[] = {
	{ FMT_KIND_PPROF, "pprof" },
	{ FMT_KIND_OTLP, "otlp" },
	{ FMT_KIND_OTLP_JSON, "otlp-json" },
	{ FMT_KIND_JFR, "jfr" },
	{ FMT_KIND_FOLDED, "folded" },
	{ FMT_KIND_FOLDED, "collapsed" },
	{ FMT_KIND_PERF_SCRIPT, "perf-script" },
	{ FMT_KIND_PERF_SCRIPT, "perf" },
	{ FMT_KIND_SPEEDSCOPE, "speedscope" },
	{ FMT_KIND_CPUPROFILE, "cpuprofile" },
	{ FMT_KIND_CPUPROFILE, "v8" },
	{ FMT_KIND_PPROF_LEGACY, "pprof-legacy" },
};

const char *fmt_kind_name(enum fmt_kind k)
{
	for (size_t i = 0; i < PROF_ARRAY_SIZE(kind_names); i++)
		if (kind_names[i].kind == k)
			return kind_names[i].name;
	return "unknown";
}

int fmt_kind_parse(const char *s, enum fmt_kind *out)
{
	for (size_t i = 0; s && i < PROF_ARRAY_SIZE(kind_names); i++) {
		if (!strcmp(kind_names[i].name, s)) {
			*out = kind_names[i].kind;
			return 0;
		}
	}
	return -EINVAL;
}

/* ---- protobuf: pprof vs OTLP by structure ---- */

static enum fmt_kind sniff_protobuf(const void *data, size_t n)
{
	int wt1;
	uint64_t top = fmt_pb_top_fields(data, n, &wt1);

	if (n == 0 || (top & 1))
		return FMT_KIND_UNKNOWN;
	if (top & ~(uint64_t)7) /* fields 3..63: only pprof has them */
		return FMT_KIND_PPROF;
	if (top & 2) {
		if (wt1 == 0)
			return FMT_KIND_PPROF; /* ValueType{type, unit} varints */
		if (wt1 == 2)
			return FMT_KIND_OTLP; /* ResourceProfiles: messages and strings */
	}
	return FMT_KIND_UNKNOWN;
}

/* ---- JSON: the top-level keys ---- */

static const char *js_ws(const char *p, const char *e)
{
	while (p < e && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* p at '"': copies up to @cap - 1 bytes of the raw string; returns the byte after it. */
static const char *js_str(const char *p, const char *e, char *out, size_t cap)
{
	size_t o = 0;

	for (p++; p < e; p++) {
		if (*p == '"') {
			if (cap)
				out[o] = '\0';
			return p + 1;
		}
		if (*p == '\\')
			p++;
		else if (o + 1 < cap)
			out[o++] = *p;
	}
	return NULL;
}

/* Skips one value; NULL when the prefix ends inside it. */
static const char *js_skip(const char *p, const char *e)
{
	size_t depth = 0;

	while (p < e) {
		char ch = *p;

		if (ch == '"') {
			p = js_str(p, e, NULL, 0);
			if (!p)
				return NULL;
			if (!depth)
				return p;
			continue;
		}
		if (ch == '{' || ch == '[') {
			depth++;
		} else if (ch == '}' || ch == ']') {
			if (!depth)
				return p;
			if (--depth == 0)
				return p + 1;
		} else if (!depth &&
			   (ch == ',' || ch == ' ' || ch == '\n' || ch == '\r' || ch == '\t')) {
			return p;
		}
		p++;
	}
	return NULL;
}

static enum fmt_kind json_key_kind(const char *key)
{
	static const struct {
		const char *key;
		enum fmt_kind kind;
	} keys[] = {
		{ "resourceProfiles", FMT_KIND_OTLP_JSON },
		{ "resource_profiles", FMT_KIND_OTLP_JSON },
		{ "dictionary", FMT_KIND_OTLP_JSON },
		{ "shared", FMT_KIND_SPEEDSCOPE },
		{ "profiles", FMT_KIND_SPEEDSCOPE },
		{ "activeProfileIndex", FMT_KIND_SPEEDSCOPE },
		{ "exporter", FMT_KIND_SPEEDSCOPE },
		{ "nodes", FMT_KIND_CPUPROFILE },
		{ "samples", FMT_KIND_CPUPROFILE },
		{ "timeDeltas", FMT_KIND_CPUPROFILE },
		{ "startTime", FMT_KIND_CPUPROFILE },
		{ "endTime", FMT_KIND_CPUPROFILE },
		{ "head", FMT_KIND_CPUPROFILE },
		{ "traceEvents", FMT_KIND_CPUPROFILE },
	};

	for (size_t i = 0; i < PROF_ARRAY_SIZE(keys); i++)
		if (!strcmp(keys[i].key, key))
			return keys[i].kind;
	return FMT_KIND_UNKNOWN;
}

static enum fmt_kind sniff_json(const char *p, const char *e)
{
	if (*p == '[')
		return FMT_KIND_CPUPROFILE; /* Chrome trace events: its decoder explains */
	p = js_ws(p + 1, e);
	while (p && p < e && *p == '"') {
		char key[32], val[64];
		enum fmt_kind k;

		p = js_str(p, e, key, sizeof(key));
		if (!p)
			break;
		p = js_ws(p, e);
		if (p >= e || *p != ':')
			break;
		p = js_ws(p + 1, e);
		if (!strcmp(key, "$schema") && p < e && *p == '"') {
			p = js_str(p, e, val, sizeof(val));
			if (p && strstr(val, "speedscope"))
				return FMT_KIND_SPEEDSCOPE;
		} else {
			k = json_key_kind(key);
			if (k != FMT_KIND_UNKNOWN)
				return k;
			p = js_skip(p, e);
		}
		if (!p)
			break;
		p = js_ws(p, e);
		if (p < e && *p == ',')
			p = js_ws(p + 1, e);
	}
	return FMT_KIND_UNKNOWN;
}

/* ---- text ---- */

static bool is_text(const unsigned char *p, size_t n)
{
	n = PROF_MIN(n, 4096);
	for (size_t i = 0; i < n; i++)
		if (p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r')
			return false;
	return n > 0;
}

static enum fmt_kind sniff_plain(const void *data, size_t n)
{
	const unsigned char *p = data, *e = p + n;

	if (n >= 4 && memcmp(p, "FLR\0", 4) == 0)
		return FMT_KIND_JFR;
	/* UTF-16 text (BOM): sniff the UTF-8 of its first 4 KiB, never protobuf. */
	if (fmt_utf16_bom(data, n)) {
		struct buf u8 = BUF_INIT;
		enum fmt_kind k = FMT_KIND_UNKNOWN;

		if (!fmt_utf16_to_utf8(data, PROF_MIN(n, (size_t)8192), 8192 * 2, &u8, NULL) &&
		    u8.len)
			k = sniff_plain(u8.p, u8.len);
		buf_release(&u8);
		return k;
	}
	if (n >= 3 && p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf)
		p += 3;
	if (is_text(p, (size_t)(e - p))) {
		const char *j = js_ws((const char *)p, (const char *)e);

		if (j < (const char *)e && (*j == '{' || *j == '['))
			return sniff_json(j, (const char *)e);
		if (fmt_pprof_legacy_sniff(data, n))
			return FMT_KIND_PPROF_LEGACY;
		return fmt_perfscript_sniff(data, n) ? FMT_KIND_PERF_SCRIPT : FMT_KIND_FOLDED;
	}
	/* Before protobuf: a legacy CPU profile starts with zero words (field 0 is invalid). */
	if (fmt_pprof_legacy_sniff(data, n))
		return FMT_KIND_PPROF_LEGACY;
	return sniff_protobuf(data, n);
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && strcasecmp(s + n - m, suffix) == 0;
}

static enum fmt_kind sniff_name(const char *name)
{
	static const struct {
		const char *suffix;
		enum fmt_kind kind;
	} ext[] = {
		{ ".speedscope.json", FMT_KIND_SPEEDSCOPE },
		{ ".otlp.json", FMT_KIND_OTLP_JSON },
		{ ".pb.json", FMT_KIND_OTLP_JSON },
		{ ".linux-perf.txt", FMT_KIND_PERF_SCRIPT },
		{ ".perf-script", FMT_KIND_PERF_SCRIPT },
		{ ".perf", FMT_KIND_PERF_SCRIPT },
		{ ".cpuprofile", FMT_KIND_CPUPROFILE },
		{ ".folded", FMT_KIND_FOLDED },
		{ ".collapsed", FMT_KIND_FOLDED },
		{ ".jfr", FMT_KIND_JFR },
		{ ".jfr.gz", FMT_KIND_JFR },
		{ ".pb.gz", FMT_KIND_PPROF },
		{ ".pprof", FMT_KIND_PPROF },
		{ ".prof", FMT_KIND_PPROF },
		{ ".otlp", FMT_KIND_OTLP },
	};

	for (size_t i = 0; name && i < PROF_ARRAY_SIZE(ext); i++)
		if (ends_with(name, ext[i].suffix))
			return ext[i].kind;
	return FMT_KIND_UNKNOWN;
}

/* Inflates up to SNIFF_MAX bytes of the gzip stream at @data into @out; returns the length. */
static size_t inflate_prefix(const void *data, size_t n, unsigned char *out, bool *complete)
{
	z_stream zs;
	int zr;

	memset(&zs, 0, sizeof(zs));
	*complete = false;
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return 0;
	zs.next_in = (Bytef *)(uintptr_t)data;
	zs.avail_in = (uInt)PROF_MIN(n, (size_t)UINT32_MAX);
	zs.next_out = out;
	zs.avail_out = SNIFF_MAX;
	zr = inflate(&zs, Z_SYNC_FLUSH);
	*complete = zr == Z_STREAM_END;
	n = SNIFF_MAX - zs.avail_out;
	inflateEnd(&zs);
	return n;
}

enum fmt_kind fmt_detect(const void *data, size_t n, const char *name)
{
	enum fmt_kind k;

	if (gzip_is(data, n)) {
		unsigned char *tmp = xmalloc(SNIFF_MAX);
		bool complete;
		size_t len = inflate_prefix(data, n, tmp, &complete);

		k = len ? sniff_plain(tmp, len) : FMT_KIND_UNKNOWN;
		/* A cut protobuf does not parse to its end: gzip + binary is pprof's habit. */
		if (k == FMT_KIND_UNKNOWN && len && !complete && !is_text(tmp, len))
			k = FMT_KIND_PPROF;
		free(tmp);
	} else {
		k = sniff_plain(data, n);
	}
	if (k == FMT_KIND_UNKNOWN)
		k = sniff_name(name);
	return k;
}

static int merge_batch(struct fmt_otlp_batch *batch, struct model_profile *out,
		       struct prof_err *err)
{
	const struct model_profile **in = xcalloc(batch->n + 1, sizeof(*in));
	int rc;

	for (size_t i = 0; i < batch->n; i++)
		in[i] = &batch->profiles[i];
	rc = model_profile_merge(in, batch->n, out, err);
	free(in);
	return rc;
}

static int decode_otlp(const void *data, size_t n, bool json, const struct fmt_decode_opts *opts,
		       struct model_profile *out, struct prof_err *err)
{
	struct fmt_otlp_batch batch = { 0 };
	int rc = json ? fmt_otlp_json_decode(data, n, opts, &batch, err)
		      : fmt_otlp_decode_any(data, n, opts->max_samples, &batch, err);

	if (!rc)
		rc = merge_batch(&batch, out, err);
	fmt_otlp_batch_release(&batch);
	return rc;
}

static int decode_jfr(const void *data, size_t n, const struct fmt_decode_opts *opts, size_t max,
		      struct model_profile *out, struct prof_err *err)
{
	struct fmt_jfr_opts jo = { 0 };

	if (opts->event && fmt_jfr_event_parse(opts->event, &jo.event))
		return prof_err_set(err, -EINVAL, -1,
				    "jfr: unknown event \"%s\" (cpu, wall, alloc, lock or malloc)",
				    opts->event);
	jo.max_decoded = max;
	return fmt_jfr_decode(data, n, &jo, out, err);
}

/* Binary input that is neither recognisably pprof nor OTLP: try both, keep pprof's error. */
static int decode_binary(const void *data, size_t n, const struct fmt_decode_opts *opts, size_t max,
			 struct model_profile *out, struct prof_err *err)
{
	struct model_profile alt;
	struct prof_err e2;
	int rc = fmt_pprof_decode(data, n, max, out, err);

	if (!rc || n == 0)
		return rc;
	prof_err_init(&e2);
	model_profile_init(&alt);
	if (!decode_otlp(data, n, false, opts, &alt, &e2)) {
		model_profile_release(out);
		*out = alt;
		prof_err_init(err);
		return 0;
	}
	model_profile_release(&alt);
	return rc;
}

int fmt_decode_any(const void *data, size_t n, const char *name_hint,
		   const struct fmt_decode_opts *opts, struct model_profile *out,
		   struct prof_err *err)
{
	static const struct fmt_decode_opts defaults;
	struct buf raw = BUF_INIT;
	size_t max;
	enum fmt_kind k;
	bool utf16 = false;
	int rc;

	if (!opts)
		opts = &defaults;
	k = opts->kind ? opts->kind : fmt_detect(data, n, name_hint);
	/* Recordings are bigger than other profiles: JFR keeps its own default cap. */
	max = opts->max_input	  ? opts->max_input
	      : k == FMT_KIND_JFR ? FMT_JFR_DEFAULT_MAX
				  : FMT_DEFAULT_MAX_INPUT;
	if (gzip_is(data, n)) {
		rc = gzip_inflate(data, n, max, &raw, err);
		if (rc)
			goto out;
		data = raw.p ? raw.p : "";
		n = raw.len;
		if (!opts->kind) /* all of it now, not a 64 KiB prefix */
			k = fmt_detect(data, n, name_hint);
	} else if (n > max) {
		rc = prof_err_set(err, -PROF_ETOOBIG, -1,
				  "input of %zu bytes exceeds the limit of %zu bytes", n, max);
		goto out;
	}
	/* UTF-16 text (Windows tools write it with a BOM): every text decoder reads UTF-8. */
	if (fmt_utf16_bom(data, n)) {
		struct buf u8 = BUF_INIT;

		utf16 = true;
		rc = fmt_utf16_to_utf8(data, n, max, &u8, err);
		buf_release(&raw);
		raw = u8;
		if (rc)
			goto out;
		data = raw.p ? raw.p : "";
		n = raw.len;
		if (!opts->kind)
			k = fmt_detect(data, n, name_hint);
	}
	switch (k) {
	case FMT_KIND_PPROF:
		rc = fmt_pprof_decode(data, n, max, out, err);
		break;
	case FMT_KIND_OTLP:
		rc = decode_otlp(data, n, false, opts, out, err);
		break;
	case FMT_KIND_OTLP_JSON:
		rc = decode_otlp(data, n, true, opts, out, err);
		break;
	case FMT_KIND_JFR:
		rc = decode_jfr(data, n, opts, max, out, err);
		break;
	case FMT_KIND_FOLDED:
		rc = fmt_folded_decode(data, n, opts, out, err);
		break;
	case FMT_KIND_PERF_SCRIPT:
		rc = fmt_perfscript_decode(data, n, opts, out, err);
		break;
	case FMT_KIND_SPEEDSCOPE:
		rc = fmt_speedscope_decode(data, n, opts, out, err);
		break;
	case FMT_KIND_CPUPROFILE:
		rc = fmt_cpuprofile_decode(data, n, opts, out, err);
		break;
	case FMT_KIND_PPROF_LEGACY:
		rc = fmt_pprof_legacy_decode(data, n, opts, out, err);
		break;
	default:
		if (n >= 4 && !memcmp(data,
				      "\x7f"
				      "ELF",
				      4))
			rc = prof_err_set(err, -PROF_EFORMAT, 0,
					  "this is an ELF binary, not a profile (to give a server "
					  "its debug info: profd debuginfo upload FILE)");
		else if (is_text(data, n) || n == 0)
			rc = prof_err_set(
				err, -PROF_EFORMAT, -1,
				"unrecognized profile format (not pprof, OTLP, JFR, folded, "
				"perf script, speedscope or cpuprofile)");
		else
			rc = decode_binary(data, n, opts, max, out, err);
		break;
	}
	if (rc && raw.p && err && err->offset >= 0) {
		size_t len = strlen(err->msg);

		snprintf(err->msg + len, sizeof(err->msg) - len, " (offset in the %s)",
			 utf16 ? "text converted from UTF-16 to UTF-8" : "gunzipped data");
	}
out:
	buf_release(&raw);
	return rc;
}
