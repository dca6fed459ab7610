// SPDX-License-Identifier: Apache-2.0
/*
 * pyroscope.c - Pyroscope-compatible ingest (docs/formats.md "Pyroscope ingest"),
 * so the Pyroscope SDKs (Go, Java, Node, Python, ...) push to profd
 * unchanged:
 *
 *   POST /ingest?name=app{k=v,...}&from=&until=&sampleRate=&spyName=
 *                &units=&aggregationType=&format=       (also /pyroscope/ingest)
 *   POST /api/v1/ingest/pprof?service_name=app&k=v...   pprof, labels as parameters
 *
 * /ingest body formats, chosen as Pyroscope does (docs/formats.md "Pyroscope ingest"):
 * format=pprof (raw pprof, gzip or not), format=jfr (raw JFR or multipart
 * with field `jfr`, gzip or not; the optional `labels` field, a protobuf
 * LabelsSnapshot of per-context labels, is accepted and ignored),
 * format=lines (one stack per line, identical lines counted),
 * format=speedscope, a multipart/form-data body without format (pprof in
 * field `profile`, optional `sample_type_config`; `prev_profile`, the
 * legacy cumulative baseline, is refused as Pyroscope refuses it), else
 * folded "groups" text (format=folded, or none). format=trie and
 * format=tree (legacy binary formats of the old Pyroscope agents) get 415;
 * any other format value 400.
 *
 * Series labels (docs/formats.md "Pyroscope ingest", Pyroscope's ingest adapter): the user
 * labels of `name` (keys starting "__" dropped), pyroscope_spy =
 * spyName, service.name = the application name (if the client sent its
 * own service_name, the application name goes to app_name). Pyroscope's
 * `service_name` is stored as `service.name`, the OpenTelemetry key the
 * agent uses, so one service has one key (store/matcher.h: selectors
 * take either). The profile
 * name (the type id's first part) is Pyroscope's: for pprof derived from
 * the sample types (a "wall" type wins; then cpu -> process_cpu,
 * alloc_/inuse_/space/objects -> memory, mutex_ -> mutex, block_ -> block,
 * goroutines), sample_type_config display-names taken into account; for
 * text formats from the suffix after the last '.' of the application
 * name (myapp.cpu, myapp.alloc_space; none = cpu), which is then removed
 * from service.name. cpu and wall text profiles are scaled by
 * 1e9/sampleRate into cpu|wall nanoseconds with period type
 * cpu/nanoseconds, as Pyroscope does, so they meet the agent's CPU
 * profiles under process_cpu:cpu:nanoseconds:cpu:nanoseconds. For JFR
 * every event family present becomes its own profile (cpu, wall, alloc,
 * lock, malloc) with label jfr_event = the family.
 *
 * Times: from/until take Pyroscope's attime forms: digits = seconds, or
 * 13/16/19 digits = ms/us/ns, 8 digits = YYYYMMDD; "now", "now-1h".
 * A pprof's time is from and its duration until - from when the request
 * gives from (Pyroscope stores a push at from/until whatever the pprof's
 * own time_nanos; per-sample timestamps move by the same shift); without
 * from, a time_nanos that is 0 or in 1970 becomes now. Text profiles get
 * from as their time.
 *
 * Answers: 200 with an empty body, or with one line "skipped N WHAT
 * (first: REASON)" when the decoder left unreadable parts out and stored
 * the rest (model_skipped_text); errors in text, naming the parameter,
 * the part or the limit (400, 401, 403, 413, 415, 429, 503).
 *
 * POST /push.v1.PusherService/Push is Pyroscope's Connect push API
 * (docs/formats.md "Pyroscope ingest"; what Grafana Alloy's pyroscope.write sends): a
 * PushRequest (format/push.h), binary (application/proto) or JSON, gzip
 * Content-Encoding allowed; each series' labels as given (keys starting
 * "__" dropped), `__name__` the profile name (else derived as for
 * /ingest pprof), each raw_profile a pprof, gzipped or not. The whole
 * request is stored or nothing; answers are Connect's (ingest.c).
 */
#include "base/compat.h"
#include "base/compress.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/detect.h"
#include "format/pprof_legacy.h"
#include "format/folded.h"
#include "format/jfr.h"
#include "format/pprof.h"
#include "format/push.h"
#include "server/multipart.h"
#include "server/pipeline.h"
#include "server/route.h"
#include "store/matcher.h"

#include <jansson.h>
#include <strings.h>

#define PYRO_MAX_LABELS 128

struct pyro_label {
	char *key, *val;
};

struct pyro_req {
	char *app;  /* application name before '{' (and before the type suffix for text) */
	char *type; /* text formats: the suffix after the last '.', "cpu" when none */
	struct pyro_label labels[PYRO_MAX_LABELS];
	size_t nlabels;
	int64_t from_ns, until_ns;
	bool has_from; /* the request gave 'from' */
	uint64_t sample_rate;
	const char *spy, *units;
	json_t *stc; /* sample_type_config, or NULL */
};

static void pyro_release(struct pyro_req *r)
{
	free(r->app);
	free(r->type);
	for (size_t i = 0; i < r->nlabels; i++) {
		free(r->labels[i].key);
		free(r->labels[i].val);
	}
	json_decref(r->stc);
}

static bool label_name_ok(const char *s, size_t n)
{
	if (!n || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.'))
			return false;
	}
	return true;
}

static void trim(const char **s, size_t *n)
{
	while (*n && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*n)--;
	}
	while (*n && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
		(*n)--;
}

static bool add_label(struct pyro_req *r, const char *k, size_t kn, const char *v, size_t vn,
		      char *msg, size_t msgsz)
{
	if (kn >= 2 && k[0] == '_' && k[1] == '_')
		return true; /* reserved names are dropped, as Pyroscope does */
	if (!label_name_ok(k, kn)) {
		snprintf(msg, msgsz,
			 "label name '%.*s' is not valid (letters, digits, '_' and '.', not "
			 "starting with a digit)",
			 (int)PROF_MIN(kn, 64), k);
		return false;
	}
	for (size_t i = 0; i < r->nlabels; i++)
		if (strlen(r->labels[i].key) == kn && !memcmp(r->labels[i].key, k, kn)) {
			snprintf(msg, msgsz, "label '%.*s' is given twice", (int)PROF_MIN(kn, 64),
				 k);
			return false;
		}
	if (r->nlabels >= PYRO_MAX_LABELS) {
		snprintf(msg, msgsz, "more than %d labels", PYRO_MAX_LABELS);
		return false;
	}
	r->labels[r->nlabels].key = xstrndup(k, kn);
	r->labels[r->nlabels].val = xstrndup(v, vn);
	r->nlabels++;
	return true;
}

/* "app.name{k1=v1,k2=v2}" into app and labels (docs/formats.md "Pyroscope ingest"). */
static bool parse_name(struct pyro_req *r, const char *name, bool text, char *msg, size_t msgsz)
{
	const char *brace = strchr(name, '{');
	const char *app = name;
	size_t an = brace ? (size_t)(brace - name) : strlen(name);

	trim(&app, &an);
	if (!an) {
		snprintf(msg, msgsz, "parameter 'name': the application name before '{' is empty");
		return false;
	}
	if (brace) {
		const char *p = brace + 1, *end = name + strlen(name);

		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			end--;
		if (end == p || end[-1] != '}') {
			snprintf(msg, msgsz, "parameter 'name': labels must end with '}'");
			return false;
		}
		end--;
		while (p < end) {
			const char *comma = memchr(p, ',', (size_t)(end - p));
			const char *pe = comma ? comma : end;
			const char *eq = memchr(p, '=', (size_t)(pe - p));
			const char *k = p, *v;
			size_t kn, vn;

			if (pe == p || (pe - p == 1 && *p == ' ')) {
				p = pe + 1;
				continue;
			}
			if (!eq) {
				snprintf(msg, msgsz,
					 "parameter 'name': label '%.*s' has no '=' (expected "
					 "app{key=value,...})",
					 (int)PROF_MIN(pe - p, 64), p);
				return false;
			}
			kn = (size_t)(eq - k);
			v = eq + 1;
			vn = (size_t)(pe - v);
			trim(&k, &kn);
			trim(&v, &vn);
			if (!add_label(r, k, kn, v, vn, msg, msgsz))
				return false;
			p = pe + 1;
		}
	}
	if (text) {
		const char *dot = memrchr(app, '.', an);

		if (dot && dot > app) {
			r->type = xstrndup(dot + 1, (size_t)(app + an - dot - 1));
			an = (size_t)(dot - app);
		}
	}
	if (!r->type)
		r->type = xstrdup("cpu");
	r->app = xstrndup(app, an);
	return true;
}

/* Pyroscope's attime: digits by count, "now", "now-<duration>". */
static bool parse_attime(const char *s, int64_t now_ns, int64_t *out)
{
	size_t n = strlen(s);
	uint64_t v;

	if (!n)
		return false;
	if (!strcmp(s, "now")) {
		*out = now_ns;
		return true;
	}
	if (!strncmp(s, "now-", 4)) {
		char tmp[32];
		int64_t d;
		size_t k = strlen(s + 4);

		/* Graphite spells minutes "min". */
		if (k >= sizeof(tmp))
			return false;
		memcpy(tmp, s + 4, k + 1);
		if (k > 3 && !strcmp(tmp + k - 3, "min"))
			tmp[k - 2] = '\0';
		if (parse_duration_ns(tmp, &d) || d < 0 || d > now_ns)
			return false;
		*out = now_ns - d;
		return true;
	}
	if (parse_u64(s, &v))
		return false;
	if (n == 8) { /* YYYYMMDD */
		struct tm tm = { 0 };

		tm.tm_year = (int)(v / 10000) - 1900;
		tm.tm_mon = (int)(v / 100 % 100) - 1;
		tm.tm_mday = (int)(v % 100);
		if (tm.tm_mon < 0 || tm.tm_mon > 11 || tm.tm_mday < 1 || tm.tm_mday > 31)
			return false;
		*out = (int64_t)timegm(&tm) * 1000000000LL;
		return true;
	}
	if (n == 13)
		v *= 1000000ULL;
	else if (n == 16)
		v *= 1000ULL;
	else if (n != 19) {
		if (v > (uint64_t)INT64_MAX / 1000000000ULL)
			return false;
		v *= 1000000000ULL;
	}
	if (v > (uint64_t)INT64_MAX)
		return false;
	*out = (int64_t)v;
	return true;
}

static bool parse_common(struct server_req *rq, struct pyro_req *r, char *msg, size_t msgsz)
{
	int64_t now = prof_now_ns();
	const char *f = server_arg(rq, "from"), *u = server_arg(rq, "until");
	const char *sr = server_arg(rq, "sampleRate");

	r->from_ns = r->until_ns = now;
	if (f && *f && !parse_attime(f, now, &r->from_ns)) {
		snprintf(
			msg, msgsz,
			"parameter 'from': expected unix seconds (or 13/16/19 digits for ms/us/ns), "
			"YYYYMMDD, 'now' or 'now-1h', got '%.40s'",
			f);
		return false;
	}
	if (u && *u && !parse_attime(u, now, &r->until_ns)) {
		snprintf(msg, msgsz,
			 "parameter 'until': expected unix seconds (or 13/16/19 digits for "
			 "ms/us/ns), YYYYMMDD, 'now' or 'now-1h', got '%.40s'",
			 u);
		return false;
	}
	r->has_from = f && *f;
	if (!(u && *u) && f && *f)
		r->until_ns = PROF_MAX(r->from_ns, r->until_ns);
	if (r->until_ns < r->from_ns) {
		snprintf(msg, msgsz, "parameter 'until' (%.40s) is before 'from' (%.40s)",
			 u ? u : "now", f ? f : "now");
		return false;
	}
	/* Pyroscope: an invalid or missing sampleRate means 100. */
	r->sample_rate = 100;
	if (sr && *sr &&
	    (parse_u64(sr, &r->sample_rate) || r->sample_rate == 0 ||
	     r->sample_rate > 1000000000ULL))
		r->sample_rate = 100;
	r->spy = server_arg(rq, "spyName");
	if (!r->spy || !*r->spy)
		r->spy = "unknown";
	r->units = server_arg(rq, "units");
	return true;
}

/* Labels of a Pyroscope push on profile @p (docs/formats.md "Pyroscope ingest"). */
static void set_labels(const struct pyro_req *r, struct model_profile *p, const char *jfr_event)
{
	bool has_service = false;

	for (size_t i = 0; i < r->nlabels; i++) {
		/* service_name and service.name are one key, stored as service.name */
		const char *key = store_label_canonical(r->labels[i].key);
		bool service = !strcmp(key, STORE_LABEL_SERVICE);

		if (service && has_service)
			continue; /* both keys given: the first is kept */
		model_attr_add_str(p, key, r->labels[i].val);
		has_service |= service;
	}
	if (!r->app) {
		/* /api/v1/ingest/pprof: the labels as given. */
	} else if (!has_service) {
		model_attr_add_str(p, STORE_LABEL_SERVICE, r->app);
	} else {
		bool has_app = false;

		for (size_t i = 0; i < r->nlabels; i++)
			has_app |= !strcmp(r->labels[i].key, "app_name");
		if (!has_app)
			model_attr_add_str(p, "app_name", r->app);
	}
	if (r->spy)
		model_attr_add_str(p, "pyroscope_spy", r->spy);
	if (jfr_event)
		model_attr_add_str(p, "jfr_event", jfr_event);
}

/*
 * Pyroscope's metric name of a pprof upload (pprof RawProfile.metricName);
 * NULL where Pyroscope falls back to the last sample type's name ("should
 * not happen"): the model then derives the name from the period type
 * (cpu -> process_cpu, ...), which names such profiles better.
 */
static const char *pprof_metric(const struct model_profile *p, json_t *stc)
{
	const char *st = "";

	for (size_t i = 0; i < p->sample_types.n; i++)
		if (!strcmp(model_str(p, p->sample_types.v[i].type), "wall"))
			return "wall";
	for (size_t i = 0; i < p->sample_types.n; i++) {
		json_t *c, *dn;

		st = model_str(p, p->sample_types.v[i].type);
		c = stc ? json_object_get(stc, st) : NULL;
		dn = c ? json_object_get(c, "display-name") : NULL;
		if (json_is_string(dn) && *json_string_value(dn))
			st = json_string_value(dn);
		if (strstr(st, "cpu"))
			return "process_cpu";
		if (strstr(st, "alloc_") || strstr(st, "inuse_") || !strcmp(st, "space") ||
		    !strcmp(st, "objects"))
			return "memory";
		if (strstr(st, "mutex_"))
			return "mutex";
		if (strstr(st, "block_"))
			return "block";
		if (strstr(st, "goroutines"))
			return "goroutines";
	}
	return NULL;
}

/* Text formats: the metric, sample type and unit of the name's suffix. */
static bool text_type(const char *suffix, const char *units, const char **metric,
		      const char **stype, const char **sunit)
{
	static const struct {
		const char *suffix, *metric, *type, *unit;
	} map[] = {
		{ "cpu", "process_cpu", "samples", "count" },
		{ "itimer", "process_cpu", "samples", "count" },
		{ "wall", "wall", "samples", "count" },
		{ "inuse_objects", "memory", "inuse_objects", "count" },
		{ "inuse_space", "memory", "inuse_space", "bytes" },
		{ "alloc_objects", "memory", "alloc_objects", "count" },
		{ "alloc_space", "memory", "alloc_space", "bytes" },
		{ "goroutines", "goroutine", "goroutines", "count" },
		{ "mutex_count", "mutex", "contentions", "count" },
		{ "mutex_duration", "mutex", "delay", "nanoseconds" },
		{ "block_count", "block", "contentions", "count" },
		{ "block_duration", "block", "delay", "nanoseconds" },
		{ "lock_count", "block", "contentions", "count" },
		{ "lock_duration", "block", "delay", "nanoseconds" },
		{ "alloc_in_new_tlab_objects", "memory", "alloc_in_new_tlab_objects", "count" },
		{ "alloc_in_new_tlab_bytes", "memory", "alloc_in_new_tlab_bytes", "bytes" },
		{ "alloc_outside_tlab_objects", "memory", "alloc_outside_tlab_objects", "count" },
		{ "alloc_outside_tlab_bytes", "memory", "alloc_outside_tlab_bytes", "bytes" },
		{ "live", "memory", "live", "count" },
		{ "exceptions", "exceptions", "samples", "count" },
		{ "seconds", "wall", "samples", "count" },
		{ "nanoseconds", "wall", "samples", "count" },
		{ "microseconds", "wall", "samples", "count" },
		{ "milliseconds", "wall", "samples", "count" },
		{ "bytes", "memory", "samples", "bytes" },
	};

	(void)units;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(map); i++)
		if (!strcmp(suffix, map[i].suffix)) {
			*metric = map[i].metric;
			*stype = map[i].type;
			*sunit = map[i].unit;
			return true;
		}
	return false;
}

/* Scale value column 0 of @p by @k (cpu/wall: 1e9 / sampleRate); false on overflow. */
static bool scale_values(struct model_profile *p, int64_t k)
{
	for (size_t i = 0; i < p->values.n; i++)
		if (__builtin_mul_overflow(p->values.v[i], k, &p->values.v[i]))
			return false;
	return true;
}

struct decoded {
	struct model_profile p[5];
	size_t n;
	/* p[0] read by fmt_pprof_decode from src.data: what the log keeps (store_ingest_pprof) */
	bool has_src;
	struct store_pprof_src src;
};

static void decoded_release(struct decoded *d)
{
	for (size_t i = 0; i < d->n; i++)
		model_profile_release(&d->p[i]);
	d->n = 0;
}

static bool fail_rc(struct server *srv, struct server_ingest_out *out, int rc,
		    const struct prof_err *err, const char *what)
{
	enum server_fail f = server_fail_from_rc(rc);
	const char *msg = err->msg[0] ? err->msg : prof_strerror(rc);

	if (f == SERVER_FAIL_TOO_LARGE)
		return server_ingest_fail(srv, out, f, "max_samples",
					  "%s: too large: %s (limits max_samples %zu, "
					  "max_decompressed %zu)",
					  what, msg, srv->limits.max_samples,
					  srv->limits.max_decompressed);
	/* Decoder messages often start with their format's name already. */
	if (!strncmp(msg, what, strlen(what)) && msg[strlen(what)] == ':')
		return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode", "%s", msg);
	return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode", "%s: %s", what, msg);
}

/*
 * A pprof body (already gunzipped) into @p: profile.proto, or else one of
 * the legacy formats `go tool pprof` still reads (pprof_legacy.h: text
 * heap/contention profiles, the binary CPU format), which old clients
 * push. On failure @err holds the profile.proto decoder's reason, or the
 * legacy decoder's when the bytes look like a legacy profile.
 */
static int decode_pprof_body(struct server *srv, const void *data, size_t n,
			     struct model_profile *p, bool *legacy, struct prof_err *err)
{
	int rc = fmt_pprof_decode(data, n, srv->limits.max_decompressed, p, err);

	*legacy = false;
	if ((rc == -PROF_EFORMAT || rc == -PROF_ECORRUPT) &&
	    fmt_detect(data, n, NULL) == FMT_KIND_PPROF_LEGACY) {
		struct fmt_decode_opts o = { .kind = FMT_KIND_PPROF_LEGACY,
					     .max_input = srv->limits.max_decompressed,
					     .max_samples = srv->limits.max_samples };

		model_profile_release(p);
		model_profile_init(p);
		prof_err_init(err);
		rc = fmt_pprof_legacy_decode(data, n, &o, p, err);
		*legacy = true;
	}
	return rc;
}

static bool decode_pprof(struct server *srv, struct pyro_req *r, const void *data, size_t n,
			 struct decoded *d, struct buf *tmp, struct server_ingest_out *out)
{
	struct model_profile *p = &d->p[0];
	const void *gz = data;
	size_t gz_len = n;
	struct prof_err err;
	int64_t shift = 0;
	bool legacy;
	int rc;

	if (!n)
		return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode",
					  "the pprof profile is empty");
	if (!server_inflate(srv, &data, &n, false, tmp, "pprof profile", out))
		return false;
	prof_err_init(&err);
	model_profile_init(p);
	d->n = 1;
	rc = decode_pprof_body(srv, data, n, p, &legacy, &err);
	if (rc)
		return fail_rc(srv, out, rc, &err, "pprof");
	if (p->samples.n > srv->limits.max_samples)
		return server_ingest_fail(srv, out, SERVER_FAIL_TOO_LARGE, "max_samples",
					  "limit max_samples (%zu) exceeded: the profile has %zu "
					  "samples",
					  srv->limits.max_samples, p->samples.n);
	/*
	 * from/until are the profile's time, as Pyroscope stores a push (the
	 * pprof's own time_nanos is not used then); per-sample timestamps move
	 * with it. Without from: old pyspy/rbspy/pyroscope-rs send 0 or
	 * microseconds, so now replaces those.
	 */
	if (r->has_from || p->time_ns < 365LL * 86400 * 1000000000LL) {
		shift = p->time_ns >= 365LL * 86400 * 1000000000LL ? r->from_ns - p->time_ns : 0;
		p->time_ns = r->from_ns;
		for (size_t i = 0; shift && i < p->samples.n; i++)
			if (p->samples.v[i].timestamp_ns)
				p->samples.v[i].timestamp_ns += shift;
	}
	if (r->until_ns > r->from_ns && (r->has_from || !p->duration_ns))
		p->duration_ns = r->until_ns - r->from_ns;
	const char *metric = pprof_metric(p, r->stc);

	if (metric)
		p->name = model_intern(p, metric);
	set_labels(r, p, NULL);
	/* The log keeps these bytes (as the gzip they came in) and the edits
	 * above; a gzip inside the gzip and the legacy formats are logged as
	 * OTLP instead. */
	d->has_src = !legacy && !gzip_is(data, n);
	d->src = (struct store_pprof_src){ data, n, shift, data != gz ? gz : NULL, gz_len };
	return true;
}

static bool decode_jfr(struct server *srv, struct pyro_req *r, const void *data, size_t n,
		       struct decoded *d, struct buf *tmp, struct server_ingest_out *out)
{
	static const enum fmt_jfr_event fam[] = { FMT_JFR_CPU, FMT_JFR_WALL, FMT_JFR_ALLOC,
						  FMT_JFR_LOCK, FMT_JFR_MALLOC };
	uint64_t total = 0;

	if (!server_inflate(srv, &data, &n, false, tmp, "JFR recording", out))
		return false;
	if (!fmt_jfr_sniff(data, n))
		return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode",
					  "format=jfr but the body is not a JFR recording (no "
					  "FLR chunk magic)");
	for (size_t k = 0; k < PROF_ARRAY_SIZE(fam); k++) {
		struct fmt_jfr_opts o = { .event = fam[k],
					  .max_decoded = srv->limits.max_decompressed };
		struct model_profile *p = &d->p[d->n];
		struct prof_err err;
		int rc;

		prof_err_init(&err);
		model_profile_init(p);
		d->n++;
		rc = fmt_jfr_decode(data, n, &o, p, &err);
		if (rc)
			return fail_rc(srv, out, rc, &err, "jfr");
		total += p->samples.n;
		if (total > srv->limits.max_samples)
			return server_ingest_fail(srv, out, SERVER_FAIL_TOO_LARGE, "max_samples",
						  "limit max_samples (%zu) exceeded by the JFR "
						  "recording",
						  srv->limits.max_samples);
		if (!p->samples.n) {
			model_profile_release(p);
			d->n--;
			continue;
		}
		if (!p->time_ns)
			p->time_ns = r->from_ns;
		set_labels(r, p, fmt_jfr_event_name(fam[k]));
	}
	return true;
}

/* folded ("groups") and lines; @lines: one stack per line, no count. */
static bool decode_text(struct server *srv, struct pyro_req *r, const void *data, size_t n,
			bool lines, struct decoded *d, struct buf *tmp,
			struct server_ingest_out *out)
{
	const char *metric, *stype, *sunit;
	struct model_profile *p = &d->p[0];
	struct prof_err err;
	int rc;

	if (!text_type(r->type, r->units, &metric, &stype, &sunit))
		return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "profile_type",
					  "unknown profile type '%.40s' (the suffix of name '%.60s."
					  "%.40s'; e.g. cpu, wall, alloc_space, inuse_objects, "
					  "goroutines, mutex_count, block_duration)",
					  r->type, r->app, r->type);
	if (!server_inflate(srv, &data, &n, false, tmp, "request body", out))
		return false;
	if (lines) {
		/* Each line is one sample: append " 1" and read it as folded. */
		struct buf t;
		const char *s = data, *end = s + n;

		buf_init(&t, n + n / 2 + 16);
		while (s < end) {
			const char *eol = memchr(s, '\n', (size_t)(end - s));
			size_t ln = eol ? (size_t)(eol - s) : (size_t)(end - s);

			if (ln && s[ln - 1] == '\r')
				ln--;
			if (ln && (buf_add(&t, s, ln) || buf_add(&t, " 1\n", 3))) {
				buf_release(&t);
				return server_ingest_fail(srv, out, SERVER_FAIL_TOO_LARGE,
							  "max_samples",
							  "format=lines: too many lines");
			}
			s = eol ? eol + 1 : end;
		}
		buf_release(tmp);
		*tmp = t;
		data = tmp->p ? tmp->p : "";
		n = tmp->len;
	}
	struct fmt_decode_opts o = { .max_input = srv->limits.max_decompressed,
				     .max_samples = srv->limits.max_samples,
				     .sample_type = stype,
				     .sample_unit = sunit };
	prof_err_init(&err);
	model_profile_init(p);
	d->n = 1;
	rc = fmt_folded_decode(data, n, &o, p, &err);
	if (rc == -PROF_EFORMAT && n == 0)
		rc = 0;
	if (rc)
		return fail_rc(srv, out, rc, &err, lines ? "lines" : "folded");
	if (!strcmp(metric, "process_cpu") || !strcmp(metric, "wall")) {
		int64_t period = 1000000000LL / (int64_t)r->sample_rate;

		if (!scale_values(p, period))
			return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode",
						  "a count times the sampling period (%" PRId64
						  " ns) overflows",
						  period);
		p->sample_types.v[0].type =
			model_intern(p, strcmp(metric, "wall") ? "cpu" : "wall");
		p->sample_types.v[0].unit = model_intern(p, "nanoseconds");
		p->period_type.type = model_intern(p, "cpu");
		p->period_type.unit = model_intern(p, "nanoseconds");
		p->period = period;
	}
	p->name = model_intern(p, metric);
	p->time_ns = r->from_ns;
	if (r->until_ns > r->from_ns)
		p->duration_ns = r->until_ns - r->from_ns;
	set_labels(r, p, NULL);
	return true;
}

static bool decode_speedscope(struct server *srv, struct pyro_req *r, const void *data, size_t n,
			      struct decoded *d, struct buf *tmp, struct server_ingest_out *out)
{
	struct fmt_decode_opts o = { .kind = FMT_KIND_SPEEDSCOPE,
				     .max_input = srv->limits.max_decompressed,
				     .max_samples = srv->limits.max_samples };
	struct model_profile *p = &d->p[0];
	struct prof_err err;
	int rc;

	if (!server_inflate(srv, &data, &n, false, tmp, "request body", out))
		return false;
	prof_err_init(&err);
	model_profile_init(p);
	d->n = 1;
	rc = fmt_decode_any(data, n, NULL, &o, p, &err);
	if (rc)
		return fail_rc(srv, out, rc, &err, "speedscope");
	if (!p->time_ns)
		p->time_ns = r->from_ns;
	set_labels(r, p, NULL);
	return true;
}

static bool load_stc(struct server *srv, struct pyro_req *r, const struct server_part *part,
		     struct server_ingest_out *out)
{
	json_error_t je;

	if (!part)
		return true;
	r->stc = json_loadb(part->data, part->len, 0, &je);
	if (!json_is_object(r->stc))
		return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode",
					  "form field 'sample_type_config': expected a JSON object "
					  "(%s)",
					  r->stc ? "not an object" : je.text);
	return true;
}

static void ingest_decoded(struct server_req *rq, struct decoded *d, const char *source,
			   struct server_ingest_out *out)
{
	struct model_profile *pp[PROF_ARRAY_SIZE(d->p)];
	const struct model_skipped *sk = NULL;

	/* The JFR families read one recording: report the largest skip, not their sum. */
	for (size_t i = 0; i < d->n; i++) {
		pp[i] = &d->p[i];
		if (d->p[i].skipped.n && (!sk || d->p[i].skipped.n > sk->n))
			sk = &d->p[i].skipped;
	}
	if (sk)
		model_skipped_text(sk, out->skipped, sizeof(out->skipped));
	if (server_ingest_profiles(rq->srv, rq->auth->ds, pp, d->n, NULL, 0,
				   d->has_src && d->n == 1 ? &d->src : NULL, source, out))
		rq->samples = out->accepted;
}

static bool authorized(struct server_req *rq, struct server_auth *auth,
		       struct server_ingest_out *out)
{
	if (!rq->auth) {
		server_req_auth(rq, SERVER_PERM_INGEST, auth);
		rq->auth = auth;
	}
	if (!rq->auth->status)
		return true;
	return server_ingest_fail(rq->srv, out,
				  rq->auth->status == 401   ? SERVER_FAIL_UNAUTHORIZED
				  : rq->auth->status == 403 ? SERVER_FAIL_FORBIDDEN
				  : rq->auth->status == 404 ? SERVER_FAIL_NOT_FOUND
							    : SERVER_FAIL_BAD_INPUT,
				  "auth", "%s", rq->auth->msg);
}

/* The multipart parts of the body, when it is multipart; false after failing. */
static bool parts_of(struct server_req *rq, struct server_part *parts, size_t *nparts,
		     bool *multipart, struct server_ingest_out *out)
{
	const char *ct = server_header(rq, "Content-Type");
	char boundary[96];
	struct prof_err err;
	int rc;

	*nparts = 0;
	*multipart = ct && strcasestr(ct, "multipart/form-data");
	if (!*multipart)
		return true;
	if (server_multipart_boundary(ct, boundary, sizeof(boundary)))
		return server_ingest_fail(rq->srv, out, SERVER_FAIL_BAD_INPUT, "multipart",
					  "Content-Type multipart/form-data without a valid "
					  "boundary parameter");
	prof_err_init(&err);
	rc = server_multipart_parse(boundary, rq->body ? rq->body : "", rq->body_len, parts,
				    SERVER_MULTIPART_MAX_PARTS, nparts, &err);
	if (rc)
		return server_ingest_fail(rq->srv, out, SERVER_FAIL_BAD_INPUT, "multipart", "%s",
					  err.msg);
	return true;
}

void server_handle_pyroscope(struct server_req *rq, struct server_reply *rp)
{
	struct server *srv = rq->srv;
	struct server_part parts[SERVER_MULTIPART_MAX_PARTS];
	struct server_ingest_out out = { 0 };
	struct pyro_req r = { 0 };
	struct decoded d = { .n = 0 };
	struct server_auth auth;
	struct buf tmp;
	const char *name = server_arg(rq, "name");
	const char *format = server_arg(rq, "format");
	const char *ct = server_header(rq, "Content-Type");
	const char *source = "pyroscope";
	const void *body = rq->body ? rq->body : "";
	size_t blen = rq->body_len, nparts = 0;
	char msg[256];
	bool multipart, text = false;

	buf_init(&tmp, 0);
	if (!authorized(rq, &auth, &out))
		goto reply;
	if (!format || !*format) {
		if (ct && strcasestr(ct, "binary/octet-stream+trie"))
			format = "trie";
		else if (ct && strcasestr(ct, "binary/octet-stream+tree"))
			format = "tree";
		else if (ct && strcasestr(ct, "multipart/form-data"))
			format = "pprof";
		else
			format = "folded";
	}
	if (!strcmp(format, "trie") || !strcmp(format, "tree")) {
		server_ingest_fail(
			srv, &out, SERVER_FAIL_MEDIA_TYPE, "format",
			"format=%s (the legacy binary format of old Pyroscope agents) is "
			"not supported; send pprof, jfr, folded or lines",
			format);
		goto reply;
	}
	text = !strcmp(format, "folded") || !strcmp(format, "groups") || !strcmp(format, "lines");
	if (!text && strcmp(format, "pprof") && strcmp(format, "jfr") &&
	    strcmp(format, "speedscope")) {
		server_ingest_fail(
			srv, &out, SERVER_FAIL_BAD_INPUT, "format",
			"parameter 'format': unknown format '%.40s' (pprof, jfr, folded, "
			"lines or speedscope)",
			format);
		goto reply;
	}
	if (!name || !*name) {
		server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "parameter",
				   "parameter 'name' is required: the application name and labels, "
				   "e.g. name=myapp.cpu{env=prod}");
		goto reply;
	}
	msg[0] = '\0';
	if (!parse_name(&r, name, text, msg, sizeof(msg)) ||
	    !parse_common(rq, &r, msg, sizeof(msg))) {
		server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "parameter", "%s", msg);
		goto reply;
	}
	if (!parts_of(rq, parts, &nparts, &multipart, &out))
		goto reply;
	if (!strcmp(format, "pprof")) {
		source = "pyroscope-pprof";
		if (multipart) {
			const struct server_part *pr =
				server_multipart_find(parts, nparts, "profile");
			const struct server_part *prev =
				server_multipart_find(parts, nparts, "prev_profile");

			if (prev && prev->len) {
				server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "multipart",
						   "form field 'prev_profile' (cumulative profiles "
						   "of old clients) is not supported: update the "
						   "client (pyroscope-go >= 1.0 sends deltas)");
				goto reply;
			}
			if (!pr) {
				server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "multipart",
						   "multipart upload without the form field "
						   "'profile'");
				goto reply;
			}
			if (!load_stc(srv, &r,
				      server_multipart_find(parts, nparts, "sample_type_config"),
				      &out))
				goto reply;
			body = pr->data;
			blen = pr->len;
		}
		if (!decode_pprof(srv, &r, body, blen, &d, &tmp, &out))
			goto reply;
	} else if (!strcmp(format, "jfr")) {
		source = "pyroscope-jfr";
		if (multipart) {
			const struct server_part *pr = server_multipart_find(parts, nparts, "jfr");

			if (!pr) {
				server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "multipart",
						   "multipart JFR upload without the form field "
						   "'jfr'");
				goto reply;
			}
			body = pr->data;
			blen = pr->len;
		}
		if (!decode_jfr(srv, &r, body, blen, &d, &tmp, &out))
			goto reply;
	} else if (!strcmp(format, "speedscope")) {
		source = "pyroscope-speedscope";
		if (!decode_speedscope(srv, &r, body, blen, &d, &tmp, &out))
			goto reply;
	} else {
		source = !strcmp(format, "lines") ? "pyroscope-lines" : "pyroscope-folded";
		if (!decode_text(srv, &r, body, blen, !strcmp(format, "lines"), &d, &tmp, &out))
			goto reply;
	}
	ingest_decoded(rq, &d, source, &out);
reply:
	server_ingest_reply(rq, rp, &out);
	decoded_release(&d);
	pyro_release(&r);
	buf_release(&tmp);
}

struct arg_labels {
	struct pyro_req *r;
	char msg[256];
	bool ok;
};

static int arg_label(void *arg, const char *k, const char *v)
{
	struct arg_labels *a = arg;

	if (!a->ok || !strcmp(k, "dataset") || !strcmp(k, "from") || !strcmp(k, "until"))
		return 0;
	a->ok = add_label(a->r, k, strlen(k), v ? v : "", v ? strlen(v) : 0, a->msg,
			  sizeof(a->msg));
	return 0;
}

void server_handle_ingest_pprof(struct server_req *rq, struct server_reply *rp)
{
	struct server *srv = rq->srv;
	struct server_part parts[SERVER_MULTIPART_MAX_PARTS];
	struct server_ingest_out out = { 0 };
	struct pyro_req r = { 0 };
	struct decoded d = { .n = 0 };
	struct server_auth auth;
	struct arg_labels al = { .r = &r, .ok = true };
	struct buf tmp;
	const void *body = rq->body ? rq->body : "";
	size_t blen = rq->body_len, nparts = 0;
	char msg[256] = "";
	bool multipart;

	buf_init(&tmp, 0);
	if (!authorized(rq, &auth, &out))
		goto reply;
	server_args_foreach(rq, arg_label, &al);
	if (!al.ok) {
		server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "parameter", "%s", al.msg);
		goto reply;
	}
	if (!parse_common(rq, &r, msg, sizeof(msg))) {
		server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "parameter", "%s", msg);
		goto reply;
	}
	r.spy = NULL; /* no pyroscope_spy label on this route, and r.app stays NULL */
	if (!parts_of(rq, parts, &nparts, &multipart, &out))
		goto reply;
	if (multipart) {
		const struct server_part *pr = server_multipart_find(parts, nparts, "profile");

		if (!pr) {
			server_ingest_fail(srv, &out, SERVER_FAIL_BAD_INPUT, "multipart",
					   "multipart upload without the form field 'profile'");
			goto reply;
		}
		body = pr->data;
		blen = pr->len;
	}
	if (!decode_pprof(srv, &r, body, blen, &d, &tmp, &out))
		goto reply;
	ingest_decoded(rq, &d, "pprof", &out);
reply:
	server_ingest_reply(rq, rp, &out);
	decoded_release(&d);
	pyro_release(&r);
	buf_release(&tmp);
}

/* Media type of Content-Type @ct (parameters ignored) is @want? */
static bool ctype_is(const char *ct, const char *want)
{
	size_t n = strcspn(ct, ";");

	while (n && (ct[n - 1] == ' ' || ct[n - 1] == '\t'))
		n--;
	return n == strlen(want) && !strncasecmp(ct, want, n);
}

/*
 * The profiles of one RawProfileSeries: labels as given (keys starting
 * "__" dropped), __name__ the profile name, each raw_profile a pprof
 * (gzip or not). Appends to @ps; false after failing @out.
 */
/*
 * The profiles of a push request, and for each the pprof bytes it was
 * decoded from (store_ingest_pprof) while @src_ok; @kept owns the
 * inflated copies those point into.
 */
struct push_acc {
	VEC(struct model_profile *) ps;
	VEC(struct store_pprof_src) src;
	VEC(char *) kept;
	bool src_ok;
};

static bool push_series(struct server *srv, const struct fmt_push_series *s, size_t si,
			struct buf *tmp, struct push_acc *acc, struct server_ingest_out *out)
{
	struct pyro_req r = { 0 };
	const char *metric = NULL;
	int64_t now = prof_now_ns();
	char msg[256];
	bool ok = true;

	for (size_t k = 0; k < s->nlabels && ok; k++) {
		const struct fmt_push_label *l = &s->labels[k];

		if (!strcmp(l->name, "__name__")) {
			metric = l->value;
			if (!label_name_ok(metric, strlen(metric)))
				ok = server_ingest_fail(
					srv, out, SERVER_FAIL_BAD_INPUT, "parameter",
					"series[%zu]: __name__ '%.64s' is not a valid "
					"profile name (letters, digits, '_' and '.')",
					si, metric);
		} else if (!add_label(&r, l->name, strlen(l->name), l->value, strlen(l->value), msg,
				      sizeof(msg))) {
			ok = server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "parameter",
						"series[%zu]: %s", si, msg);
		}
	}
	for (size_t k = 0; k < s->nsamples && ok; k++) {
		struct model_profile *p = xmalloc(sizeof(*p));
		const void *data = s->samples[k].data, *gz = data;
		size_t n = s->samples[k].len, gz_len = n;
		struct prof_err err;
		char what[96];
		bool legacy;
		int rc;

		model_profile_init(p);
		VEC_PUSH(&acc->ps, p);
		snprintf(what, sizeof(what), "series[%zu].samples[%zu].raw_profile", si, k);
		if (!n) {
			ok = server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode",
						"%s is empty", what);
			break;
		}
		if (!server_inflate(srv, &data, &n, false, tmp, what, out)) {
			ok = false;
			break;
		}
		if (data == tmp->p) { /* the next profile inflates into tmp too */
			char *copy = buf_detach(tmp, NULL);

			VEC_PUSH(&acc->kept, copy);
			data = copy;
		}
		prof_err_init(&err);
		rc = decode_pprof_body(srv, data, n, p, &legacy, &err);
		if (rc) {
			ok = fail_rc(srv, out, rc, &err, what);
			break;
		}
		/* logged as these bytes when every profile of the request is pprof */
		acc->src_ok &= !legacy && !gzip_is(data, n);
		VEC_PUSH(&acc->src,
			 ((struct store_pprof_src){ data, n, 0, data != gz ? gz : NULL, gz_len }));
		if (p->time_ns < 365LL * 86400 * 1000000000LL)
			p->time_ns = now;
		if (!metric)
			metric = pprof_metric(p, NULL);
		if (metric)
			p->name = model_intern(p, metric);
		set_labels(&r, p, NULL);
	}
	pyro_release(&r);
	return ok;
}

void server_handle_push(struct server_req *rq, struct server_reply *rp)
{
	struct server *srv = rq->srv;
	const char *ct = server_header(rq, "Content-Type");
	const char *enc = server_header(rq, "Content-Encoding");
	struct server_ingest_out out = { 0 };
	struct server_auth auth;
	struct fmt_push_req req = { 0 };
	struct push_acc acc = { .src_ok = true };
	struct buf body_tmp, tmp;
	struct prof_err err;
	const void *body = rq->body ? rq->body : "";
	size_t blen = rq->body_len;
	bool json = false;
	int rc;

	buf_init(&body_tmp, 0);
	buf_init(&tmp, 0);
	if (!authorized(rq, &auth, &out))
		goto reply;
	if (ct && ctype_is(ct, "application/json")) {
		json = true;
	} else if (ct && *ct && !ctype_is(ct, "application/proto") &&
		   !ctype_is(ct, "application/protobuf") &&
		   !ctype_is(ct, "application/x-protobuf")) {
		server_ingest_fail(srv, &out, SERVER_FAIL_MEDIA_TYPE, "content_type",
				   "Content-Type '%.64s' is not supported here: the Connect push "
				   "API takes application/proto or application/json",
				   ct);
		goto reply;
	}
	if (enc && *enc && strcasecmp(enc, "identity")) {
		if (strcasecmp(enc, "gzip")) {
			server_ingest_fail(srv, &out, SERVER_FAIL_MEDIA_TYPE, "content_encoding",
					   "Content-Encoding '%.32s' is not supported (gzip or "
					   "identity)",
					   enc);
			goto reply;
		}
		if (!server_inflate(srv, &body, &blen, true, &body_tmp, "request body", &out))
			goto reply;
	}
	prof_err_init(&err);
	rc = fmt_push_decode(body, blen, json, &req, &err);
	if (rc) {
		fail_rc(srv, &out, rc, &err, "push request");
		goto reply;
	}
	for (size_t i = 0; i < req.n; i++)
		if (!push_series(srv, &req.series[i], i, &tmp, &acc, &out))
			goto reply;
	/* All series of the request are stored together, or none. */
	if (server_ingest_profiles(srv, rq->auth->ds, acc.ps.v, acc.ps.n, NULL, 0,
				   acc.src_ok && acc.src.n == acc.ps.n ? acc.src.v : NULL, "push",
				   &out))
		rq->samples = out.accepted;
reply:
	server_ingest_reply(rq, rp, &out);
	for (size_t i = 0; i < acc.ps.n; i++) {
		model_profile_release(acc.ps.v[i]);
		free(acc.ps.v[i]);
	}
	for (size_t i = 0; i < acc.kept.n; i++)
		free(acc.kept.v[i]);
	VEC_FREE(&acc.ps);
	VEC_FREE(&acc.src);
	VEC_FREE(&acc.kept);
	fmt_push_release(&req);
	buf_release(&body_tmp);
	buf_release(&tmp);
}
