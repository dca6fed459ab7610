// SPDX-License-Identifier: Apache-2.0
/*
 * pipeline.c - the shared ingest path: inflate, decode, limits, signal
 * control, store, usage; see pipeline.h.
 */
#include "base/compat.h"
#include "base/compress.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp.h"
#include "format/otlp_compat.h"
#include "format/otlp_json.h"
#include "server/pipeline.h"
#include "server/route.h"
#include "server/rules.h"

unsigned server_fail_http(enum server_fail f)
{
	static const unsigned codes[] = {
		[SERVER_OK] = 200,
		[SERVER_FAIL_BAD_INPUT] = 400,
		[SERVER_FAIL_UNAUTHORIZED] = 401,
		[SERVER_FAIL_FORBIDDEN] = 403,
		[SERVER_FAIL_NOT_FOUND] = 404,
		[SERVER_FAIL_TOO_LARGE] = 413,
		[SERVER_FAIL_MEDIA_TYPE] = 415,
		[SERVER_FAIL_OVERLOADED] = 429,
		[SERVER_FAIL_UNAVAILABLE] = 503,
		[SERVER_FAIL_INSUFFICIENT] = 507,
	};

	return (size_t)f < PROF_ARRAY_SIZE(codes) ? codes[f] : 500;
}

int server_fail_grpc(enum server_fail f)
{
	/* google.rpc.Code: OK 0, INVALID_ARGUMENT 3, NOT_FOUND 5, PERMISSION_DENIED 7,
	 * RESOURCE_EXHAUSTED 8, UNAVAILABLE 14, UNAUTHENTICATED 16. */
	static const int codes[] = {
		[SERVER_OK] = 0,
		[SERVER_FAIL_BAD_INPUT] = 3,
		[SERVER_FAIL_UNAUTHORIZED] = 16,
		[SERVER_FAIL_FORBIDDEN] = 7,
		[SERVER_FAIL_NOT_FOUND] = 5,
		[SERVER_FAIL_TOO_LARGE] = 8,
		[SERVER_FAIL_MEDIA_TYPE] = 3,
		[SERVER_FAIL_OVERLOADED] = 14,
		[SERVER_FAIL_UNAVAILABLE] = 14,
		[SERVER_FAIL_INSUFFICIENT] = 14,
	};

	return (size_t)f < PROF_ARRAY_SIZE(codes) ? codes[f] : 13;
}

bool server_ingest_fail(struct server *srv, struct server_ingest_out *out, enum server_fail f,
			const char *reason, const char *fmt, ...)
{
	char lbl[96];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out->msg, sizeof(out->msg), fmt, ap);
	va_end(ap);
	out->fail = f;
	out->reason = reason;
	snprintf(lbl, sizeof(lbl), "reason=\"%s\"", reason);
	server_metrics_inc(srv->metrics, "profd_ingest_rejects_total", lbl, 1);
	return false;
}

enum server_fail server_fail_from_rc(int rc)
{
	switch (rc) {
	case 0:
		return SERVER_OK;
	case -PROF_ETOOBIG:
		return SERVER_FAIL_TOO_LARGE;
	case -PROF_ECORRUPT:
	case -PROF_EFORMAT:
	case -PROF_EUNSUPPORTED:
	case -PROF_ENOTFOUND:
	case -EINVAL:
		return SERVER_FAIL_BAD_INPUT;
	case -ENOSPC:
	case -EDQUOT:
	case -EFBIG: /* the file-size limit (RLIMIT_FSIZE) */
		return SERVER_FAIL_INSUFFICIENT;
	default:
		return SERVER_FAIL_UNAVAILABLE;
	}
}

bool server_ingest_enter(struct server *srv, struct server_ingest_out *out)
{
	int now = __atomic_add_fetch(&srv->ingest_inflight, 1, __ATOMIC_SEQ_CST);

	if ((unsigned)now > srv->limits.max_inflight) {
		__atomic_sub_fetch(&srv->ingest_inflight, 1, __ATOMIC_SEQ_CST);
		return server_ingest_fail(srv, out, SERVER_FAIL_OVERLOADED, "overloaded",
					  "server busy: %u ingest requests in flight (limit "
					  "max_inflight); retry after %u s",
					  srv->limits.max_inflight, srv->limits.retry_after_s);
	}
	return true;
}

void server_ingest_leave(struct server *srv)
{
	__atomic_sub_fetch(&srv->ingest_inflight, 1, __ATOMIC_SEQ_CST);
}

bool server_inflate(struct server *srv, const void **data, size_t *n, bool force, struct buf *tmp,
		    const char *what, struct server_ingest_out *out)
{
	const struct server_limits *l = &srv->limits;
	struct prof_err err;
	size_t cap = l->max_decompressed;
	bool by_ratio = false;
	int rc;

	if (!force && !gzip_is(*data, *n))
		return true;
	if (*n && (uint64_t)*n * l->max_ratio < cap) {
		cap = *n * l->max_ratio;
		by_ratio = true;
	}
	prof_err_init(&err);
	buf_reset(tmp);
	rc = gzip_inflate(*data ? *data : "", *n, cap, tmp, &err);
	if (rc == -PROF_ETOOBIG) {
		if (by_ratio)
			return server_ingest_fail(
				srv, out, SERVER_FAIL_TOO_LARGE, "max_ratio",
				"%s: gzip of %zu bytes inflates past %u times its size (limit "
				"max_ratio, decompression bomb?)",
				what, *n, l->max_ratio);
		return server_ingest_fail(srv, out, SERVER_FAIL_TOO_LARGE, "max_decompressed",
					  "%s: gzip inflates past the limit of %zu bytes "
					  "(limit max_decompressed)",
					  what, l->max_decompressed);
	}
	if (rc)
		return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "bad_gzip",
					  "%s is not valid gzip: %s", what,
					  err.msg[0] ? err.msg : prof_strerror(rc));
	*data = tmp->p ? tmp->p : "";
	*n = tmp->len;
	return true;
}

/* Per-type row counts of one request, for usage and metrics. */
struct type_count {
	char *type;
	uint64_t received, accepted;
};

struct type_counts {
	struct type_count *v;
	size_t n, cap;
};

static void count_add(struct type_counts *v, const char *type, uint64_t rec, uint64_t acc)
{
	for (size_t i = 0; i < v->n; i++)
		if (!strcmp(v->v[i].type, type)) {
			v->v[i].received += rec;
			v->v[i].accepted += acc;
			return;
		}
	struct type_count c = { xstrdup(type), rec, acc };
	VEC_PUSH(v, c);
}

/* Rows (non-zero values) of column @t. */
static uint64_t column_rows(const struct model_profile *p, size_t t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < p->samples.n; i++)
		n += p->values.v[p->samples.v[i].value_off + t] != 0;
	return n;
}

/*
 * What the limits, signal control, series admission and accounting need
 * of one profile, computed once per request (and again only when signal
 * control changed the profile): its type ids, its label set and the rows
 * of each column.
 */
struct prof_info {
	char **types;		  /* sample_types.n + 1, NULL-terminated, into one block, owned */
	struct server_label *lab; /* server_profile_labels, owned */
	size_t nl;
	uint64_t *rows; /* per column */
	uint64_t total; /* sum of rows */
};

static void info_release(struct prof_info *in)
{
	free(in->types);
	free(in->lab);
	free(in->rows);
	memset(in, 0, sizeof(*in));
}

/*
 * The type id of column @k of @p (model_profile_type_id) in @out. The id is
 * a function of five strings of the profile; the last few seen by this
 * thread are kept with their id, since an agent sends the same types in
 * every request and formatting the id was most of info_fill.
 */
static size_t type_id(const struct model_profile *p, size_t k, char *out, size_t outsz)
{
	enum { MEMO = 4, KEY = 160 };
	static __thread struct {
		char key[KEY]; /* the five strings, each NUL-terminated */
		size_t klen;
		char id[512];
		size_t idlen;
	} memo[MEMO];
	static __thread unsigned next;
	const char *part[5] = { model_str(p, p->name), model_str(p, p->sample_types.v[k].type),
				model_str(p, p->sample_types.v[k].unit),
				model_str(p, p->period_type.type),
				model_str(p, p->period_type.unit) };
	char key[KEY];
	size_t kl = 0;
	unsigned m;

	for (size_t i = 0; i < 5; i++) {
		size_t n = strlen(part[i]) + 1;

		if (kl + n > sizeof(key))
			goto uncached; /* long names: no memo */
		memcpy(key + kl, part[i], n);
		kl += n;
	}
	for (m = 0; m < MEMO; m++)
		if (memo[m].klen == kl && !memcmp(memo[m].key, key, kl) && memo[m].idlen < outsz) {
			memcpy(out, memo[m].id, memo[m].idlen + 1);
			return memo[m].idlen;
		}
	m = next++ % MEMO;
	model_profile_type_id(p, (uint32_t)k, memo[m].id, sizeof(memo[m].id));
	memo[m].idlen = strlen(memo[m].id);
	memcpy(memo[m].key, key, kl);
	memo[m].klen = kl;
	if (memo[m].idlen < outsz) {
		memcpy(out, memo[m].id, memo[m].idlen + 1);
		return memo[m].idlen;
	}
uncached:
	model_profile_type_id(p, (uint32_t)k, out, outsz);
	return strlen(out);
}

static void info_fill(struct prof_info *in, const struct model_profile *p)
{
	typedef char id_buf[512];
	size_t nt = p->sample_types.n, total = 0, off;
	id_buf stack_ids[4], *ids = nt <= 4 ? stack_ids : xcalloc(nt, sizeof(*ids));
	size_t stack_len[4], *len = nt <= 4 ? stack_len : xcalloc(nt, sizeof(*len));
	char *block;

	info_release(in);
	for (size_t k = 0; k < nt; k++)
		total += len[k] = type_id(p, k, ids[k], sizeof(ids[k])) + 1;
	/* The pointer array, then the ids: one block, freed by info_release. */
	block = xmalloc((nt + 1) * sizeof(char *) + total);
	in->types = (char **)(void *)block;
	off = (nt + 1) * sizeof(char *);
	for (size_t k = 0; k < nt; k++) {
		in->types[k] = block + off;
		memcpy(block + off, ids[k], len[k]);
		off += len[k];
	}
	in->types[nt] = NULL;
	if (ids != stack_ids)
		free(ids);
	if (len != stack_len)
		free(len);
	in->rows = xcalloc(nt + 1, sizeof(*in->rows));
	if (nt == 1) {
		in->rows[0] = column_rows(p, 0);
	} else {
		for (size_t i = 0; i < p->samples.n; i++)
			for (size_t k = 0; k < nt; k++)
				in->rows[k] += p->values.v[p->samples.v[i].value_off + k] != 0;
	}
	in->total = 0;
	for (size_t k = 0; k < nt; k++)
		in->total += in->rows[k];
	in->nl = server_profile_labels(p, &in->lab);
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * max_active_series: may profile @p (after signal control; @in describes
 * it) store into its series? Series of columns without rows do not count.
 * *@nnew gets the new series refused.
 */
static bool admit_series(struct server *srv, struct server_dataset *ds,
			 const struct model_profile *p, const struct prof_info *in, int64_t now_ns,
			 size_t *nnew)
{
	uint64_t hs[8], *h = p->sample_types.n <= 8 ? hs : xcalloc(p->sample_types.n, sizeof(*h));
	size_t nh = 0;
	bool ok;

	for (size_t t = 0; t < p->sample_types.n; t++)
		if (in->rows[t])
			h[nh++] = server_series_hash(in->types[t], in->lab, in->nl);
	ok = !nh ||
	     server_series_admit(ds->series, h, nh, srv->limits.max_active_series, now_ns, nnew);
	if (h != hs)
		free(h);
	return ok;
}

/* Label and size limits of the @n profiles described by @in; false after filling @out. */
static bool check_limits(struct server *srv, struct model_profile *const *p,
			 const struct prof_info *in, size_t n, struct server_ingest_out *out)
{
	const struct server_limits *l = &srv->limits;
	VEC(uint64_t) series = { 0 };
	uint64_t rows = 0, columns = 0, slabels = 0;
	bool ok = true;

	for (size_t i = 0; i < n; i++)
		columns += p[i]->sample_types.n;
	for (size_t i = 0; i < n && ok; i++) {
		const struct server_label *lab = in[i].lab;
		size_t nl = in[i].nl;

		if (nl > l->max_labels) {
			ok = server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "max_labels",
						"limit max_labels (%zu) exceeded: profile %zu has "
						"%zu labels",
						l->max_labels, i, nl);
		}
		for (size_t k = 0; k < nl && ok; k++) {
			size_t kn = strlen(lab[k].key), vn = strlen(lab[k].val);

			if (kn > l->max_label_name)
				ok = server_ingest_fail(
					srv, out, SERVER_FAIL_BAD_INPUT, "max_label_name",
					"limit max_label_name (%zu bytes) exceeded: profile %zu "
					"label '%.40s...' has a name of %zu bytes",
					l->max_label_name, i, lab[k].key, kn);
			else if (vn > l->max_label_value)
				ok = server_ingest_fail(
					srv, out, SERVER_FAIL_BAD_INPUT, "max_label_value",
					"limit max_label_value (%zu bytes) exceeded: profile %zu "
					"label '%.64s' has a value of %zu bytes",
					l->max_label_value, i, lab[k].key, vn);
		}
		rows += in[i].total;
		/* Distinct series are counted only when the request could exceed the limit. */
		for (size_t t = 0; ok && columns > l->max_series && t < p[i]->sample_types.n; t++)
			if (in[i].rows[t])
				VEC_PUSH(&series, server_series_hash(in[i].types[t], lab, nl));
	}
	if (ok && rows > l->max_samples)
		ok = server_ingest_fail(srv, out, SERVER_FAIL_TOO_LARGE, "max_samples",
					"limit max_samples (%zu) exceeded: the request has %" PRIu64
					" samples",
					l->max_samples, rows);
	/* Each model sample's labels are hashed by the head: the work a request
	 * asks for is its samples times their labels, although the decoders
	 * keep one copy of a sample's labels for all its observations. */
	for (size_t i = 0; i < n && ok; i++) {
		for (size_t k = 0; k < p[i]->samples.n; k++)
			slabels += p[i]->samples.v[k].nlabels;
		if (slabels > l->max_sample_labels)
			ok = server_ingest_fail(srv, out, SERVER_FAIL_TOO_LARGE,
						"max_sample_labels",
						"limit max_sample_labels (%zu) exceeded: the "
						"request's samples carry %" PRIu64
						" labels or more (a sample's labels count once "
						"per value or timestamp)",
						l->max_sample_labels, slabels);
	}
	if (ok && series.n > l->max_series) {
		size_t d = 0;

		qsort(series.v, series.n, sizeof(*series.v), u64_cmp);
		for (size_t i = 0; i < series.n; i++)
			d += !i || series.v[i] != series.v[i - 1];
		if (d > l->max_series)
			ok = server_ingest_fail(srv, out, SERVER_FAIL_TOO_LARGE, "max_series",
						"limit max_series (%zu) exceeded: the request has "
						"%zu series",
						l->max_series, d);
	}
	VEC_FREE(&series);
	return ok;
}

/* The metric labels of an accepted request: dataset and source, dataset and result. */
struct ingest_labels {
	char name[SERVER_DATASET_NAME_MAX + 1], src[32]; /* the key, as given */
	char source[SERVER_DATASET_NAME_MAX * 2 + 64];
	char received[SERVER_DATASET_NAME_MAX * 2 + 40];
	char accepted[SERVER_DATASET_NAME_MAX * 2 + 40];
	char dropped[SERVER_DATASET_NAME_MAX * 2 + 40];
};

/*
 * The labels for dataset @name and @source, formatted again only when they
 * differ from this thread's previous request (a connection's thread mostly
 * serves one agent). Lent until the thread's next call.
 */
static const struct ingest_labels *ingest_labels(const char *name, const char *source)
{
	static __thread struct ingest_labels l;
	char dsn[SERVER_DATASET_NAME_MAX * 2 + 8];

	if (l.name[0] && !strcmp(l.name, name) && !strcmp(l.src, source))
		return &l;
	snprintf(l.name, sizeof(l.name), "%s", name);
	snprintf(l.src, sizeof(l.src), "%s", source);
	if (strcmp(l.name, name) || strcmp(l.src, source))
		l.name[0] = '\0'; /* too long to be a key: not kept */
	server_metrics_escape(name, dsn, sizeof(dsn));
	snprintf(l.source, sizeof(l.source), "dataset=\"%s\",source=\"%s\"", dsn, source);
	snprintf(l.received, sizeof(l.received), "dataset=\"%s\",result=\"received\"", dsn);
	snprintf(l.accepted, sizeof(l.accepted), "dataset=\"%s\",result=\"accepted\"", dsn);
	snprintf(l.dropped, sizeof(l.dropped), "dataset=\"%s\",result=\"dropped\"", dsn);
	return &l;
}

bool server_ingest_profiles(struct server *srv, struct server_dataset *ds,
			    struct model_profile *const *p, size_t n, const void *otlp,
			    size_t otlp_len, const struct store_pprof_src *pprof,
			    const char *source, struct server_ingest_out *out)
{
	const struct server_dataset_conf *dc = ds->conf;
	struct type_counts counts = { 0 };
	/* Most requests carry a few profiles: no allocation for those. */
	struct model_profile const *live_s[8],
		**live = n < 8 ? live_s : xcalloc(n + 1, sizeof(*live));
	struct prof_info info_s[8] = { 0 }, *info = n < 8 ? info_s : xcalloc(n + 1, sizeof(*info));
	struct store_pprof_src src_s[8], *src = !pprof	? NULL
						: n < 8 ? src_s
							: xcalloc(n + 1, sizeof(*src));
	struct store_ingest_result res;
	struct prof_err err;
	int64_t t0 = prof_now_ns();
	bool changed = false, ok = true;
	size_t nlive = 0, series_refused = 0, profiles_refused = 0;
	const struct ingest_labels *lbl;
	int rc;

	for (size_t i = 0; i < n; i++)
		info_fill(&info[i], p[i]);
	if (!check_limits(srv, p, info, n, out)) {
		ok = false;
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		struct prof_info *in = &info[i];
		uint64_t before = in->total, after;
		bool ch = false;

		for (size_t t = 0; t < p[i]->sample_types.n; t++)
			count_add(&counts, in->types[t], in->rows[t], 0);
		if (dc->nrules && before) {
			server_rules_apply(dc->rules, dc->nrules, &ds->rules_lock, p[i], in->types,
					   &ch);
			changed |= ch;
			if (ch)
				info_fill(in, p[i]);
		}
		if (p[i]->samples.n && p[i]->sample_types.n) {
			size_t nnew = 0;

			if (!admit_series(srv, ds, p[i], in, t0, &nnew)) {
				/* The whole profile goes; it is counted as dropped. */
				p[i]->samples.n = 0;
				series_refused += nnew;
				profiles_refused++;
				ch = changed = true;
				info_fill(in, p[i]);
			}
		}
		after = in->total;
		for (size_t t = 0; t < p[i]->sample_types.n; t++)
			count_add(&counts, in->types[t], 0, in->rows[t]);
		if (ch && before && !after)
			out->rejected_profiles++;
		out->received += before;
		out->accepted += after;
		if (p[i]->samples.n && p[i]->sample_types.n) {
			if (src)
				src[nlive] = pprof[i];
			live[nlive++] = p[i];
		}
	}
	out->dropped = out->received - out->accepted;
	if (profiles_refused) {
		if (nlive) {
			/* (a refusal of the whole request is counted by server_ingest_fail) */
			server_metrics_inc(srv->metrics, "profd_ingest_rejects_total",
					   "reason=\"max_active_series\"", 1);
		} else {
			ok = server_ingest_fail(
				srv, out, SERVER_FAIL_TOO_LARGE, "max_active_series",
				"limit max_active_series (%zu) reached in dataset '%s': %zu new series "
				"refused; series already active are still accepted",
				srv->limits.max_active_series, ds->name, series_refused);
			out->received = out->accepted = out->dropped = out->rejected_profiles = 0;
			goto done;
		}
	}

	prof_err_init(&err);
	if (src && !changed)
		rc = store_ingest_pprof(ds->st, live, src, nlive, &res, &err);
	else
		rc = store_ingest_profiles(ds->st, live, nlive, changed ? NULL : otlp,
					   changed ? 0 : otlp_len, &res, &err);
	if (rc) {
		enum server_fail f = server_fail_from_rc(rc);
		const char *msg = err.msg[0] ? err.msg : prof_strerror(rc);

		if (f == SERVER_FAIL_UNAVAILABLE || f == SERVER_FAIL_INSUFFICIENT)
			log_error("ingest: dataset %s: storing failed: %s", ds->name, msg);
		ok = server_ingest_fail(
			srv, out, f,
			f == SERVER_FAIL_BAD_INPUT   ? "invalid"
			: f == SERVER_FAIL_TOO_LARGE ? "too_large"
						     : "storage",
			"%s%s", f == SERVER_FAIL_BAD_INPUT ? "bad profile data: " : "", msg);
		out->received = out->accepted = out->dropped = out->rejected_profiles = 0;
		goto done;
	}
	out->profiles = res.profiles;
	int64_t now_ms = prof_now_ns() / 1000000;
	for (size_t i = 0; i < counts.n; i++)
		server_usage_add(ds->usage, counts.v[i].type, now_ms, counts.v[i].received,
				 counts.v[i].accepted, counts.v[i].received - counts.v[i].accepted);
	lbl = ingest_labels(ds->name, source);
	server_metrics_inc(srv->metrics, "profd_ingest_requests_total", lbl->source, 1);
	server_metrics_inc(srv->metrics, "profd_ingest_samples_total", lbl->received,
			   out->received);
	server_metrics_inc(srv->metrics, "profd_ingest_samples_total", lbl->accepted,
			   out->accepted);
	server_metrics_inc(srv->metrics, "profd_ingest_samples_total", lbl->dropped, out->dropped);
	server_metrics_observe_ingest(srv->metrics, prof_now_ns() - t0);
	if (profiles_refused)
		snprintf(out->partial, sizeof(out->partial),
			 "limit max_active_series (%zu) reached in dataset '%s': %zu profiles "
			 "with %zu new series refused; %" PRIu64 " of %" PRIu64
			 " samples dropped in all (signal control included)",
			 srv->limits.max_active_series, ds->name, profiles_refused, series_refused,
			 out->dropped, out->received);
	else if (out->dropped)
		snprintf(out->partial, sizeof(out->partial),
			 "signal control of dataset '%s' dropped %" PRIu64 " of %" PRIu64
			 " samples (%" PRIu64 " profiles entirely)",
			 ds->name, out->dropped, out->received, out->rejected_profiles);
done:
	for (size_t i = 0; i < counts.n; i++)
		free(counts.v[i].type);
	VEC_FREE(&counts);
	for (size_t i = 0; i < n; i++)
		info_release(&info[i]);
	if (info != info_s)
		free(info);
	if (live != live_s)
		free(live);
	if (src != src_s)
		free(src);
	return ok;
}

bool server_ingest_otlp(struct server *srv, struct server_dataset *ds, const void *data, size_t n,
			bool json, const char *source, struct server_ingest_out *out)
{
	struct fmt_otlp_batch batch = { 0 };
	struct model_profile *pp_s[8], **pp;
	struct buf upgraded = BUF_INIT;
	enum fmt_otlp_layout layout = FMT_OTLP_LAYOUT_CURRENT;
	struct prof_err err;
	bool ok;
	int rc = 0;

	prof_err_init(&err);
	/* An older proto release's layout is rewritten first; the rewrite is
	 * what is decoded and stored (otlp_compat.h). */
	if (!json && data)
		layout = fmt_otlp_layout_sniff(data, n);
	if (layout != FMT_OTLP_LAYOUT_CURRENT) {
		buf_init(&upgraded, 4 * n + 64);
		rc = fmt_otlp_compat_upgrade(data, n, layout, &upgraded, &err);
		if (!rc) {
			data = upgraded.p;
			n = upgraded.len;
		}
	} else if (layout == FMT_OTLP_LAYOUT_V1_7) {
		rc = prof_err_set(
			&err, -PROF_ECORRUPT, -1,
			"otlp: the request is in the OTLP v1.7 layout (samples as ranges of "
			"Profile.location_indices), which profd does not read: send v1.8 "
			"or later");
	}
	if (!rc && json) {
		struct fmt_decode_opts o = { .max_input = srv->limits.max_decompressed,
					     .max_samples = srv->limits.max_samples };

		rc = fmt_otlp_json_decode(data ? data : "", n, &o, &batch, &err);
	} else if (!rc) {
		/* one dictionary for the request's profiles, its stacks keyed and
		 * translated only when the store's head lacks one (data outlives batch) */
		rc = fmt_otlp_decode_pending(data ? data : "", n, srv->limits.max_samples, &batch,
					     &err);
	}
	if (rc) {
		enum server_fail f = server_fail_from_rc(rc);
		const char *msg = err.msg[0] ? err.msg : prof_strerror(rc);
		char at[96] = "";

		if (err.offset >= 0 && !strstr(msg, "byte"))
			snprintf(at, sizeof(at), " (at byte %" PRId64 ")", err.offset);
		if (layout != FMT_OTLP_LAYOUT_CURRENT) {
			size_t l = strlen(at);

			snprintf(at + l, sizeof(at) - l, " (read as the OTLP %s layout)",
				 fmt_otlp_layout_name(layout));
		}
		fmt_otlp_batch_release(&batch);
		buf_release(&upgraded);
		if (f == SERVER_FAIL_TOO_LARGE && strstr(msg, "samples"))
			return server_ingest_fail(srv, out, f, "max_samples",
						  "limit max_samples (%zu) exceeded: %s%s",
						  srv->limits.max_samples, msg, at);
		if (f == SERVER_FAIL_TOO_LARGE)
			return server_ingest_fail(srv, out, f, "too_large",
						  "request too large: %s%s", msg, at);
		return server_ingest_fail(srv, out, SERVER_FAIL_BAD_INPUT, "decode",
					  "bad OTLP profiles request: %s%s", msg, at);
	}
	pp = batch.n < PROF_ARRAY_SIZE(pp_s) ? pp_s : xcalloc(batch.n + 1, sizeof(*pp));
	for (size_t i = 0; i < batch.n; i++)
		pp[i] = &batch.profiles[i];
	ok = server_ingest_profiles(srv, ds, pp, batch.n, json ? NULL : data, json ? 0 : n, NULL,
				    source, out);
	if (pp != pp_s)
		free(pp);
	fmt_otlp_batch_release(&batch);
	buf_release(&upgraded);
	return ok;
}

static void pb_varint(struct buf *b, uint64_t v)
{
	unsigned char tmp[10];
	size_t n = 0;

	do {
		tmp[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	(void)buf_add(b, tmp, n);
}

void server_otlp_response(const struct server_ingest_out *out, bool json, struct buf *b)
{
	if (json) {
		if (!out->partial[0]) {
			(void)buf_addstr(b, "{}");
			return;
		}
		(void)buf_addf(b,
			       "{\"partialSuccess\":{\"rejectedProfiles\":\"%" PRIu64
			       "\",\"errorMessage\":",
			       out->rejected_profiles);
		(void)buf_add_json_str(b, out->partial, strlen(out->partial));
		(void)buf_addstr(b, "}}");
		return;
	}
	if (!out->partial[0])
		return; /* an empty ExportProfilesServiceResponse is zero bytes */
	struct buf ps = BUF_INIT;
	size_t ml = strlen(out->partial);

	buf_init(&ps, 0);
	if (out->rejected_profiles) {
		pb_varint(&ps, 1 << 3 | 0);
		pb_varint(&ps, out->rejected_profiles);
	}
	pb_varint(&ps, 2 << 3 | 2);
	pb_varint(&ps, ml);
	(void)buf_add(&ps, out->partial, ml);
	pb_varint(b, 1 << 3 | 2);
	pb_varint(b, ps.len);
	(void)buf_add(b, ps.p, ps.len);
	buf_release(&ps);
}

void server_rpc_status(int code, const char *msg, bool json, struct buf *b)
{
	size_t n = strlen(msg);

	if (json) {
		(void)buf_addf(b, "{\"code\":%d,\"message\":", code);
		(void)buf_add_json_str(b, msg, n);
		(void)buf_addstr(b, "}");
		return;
	}
	if (code) {
		pb_varint(b, 1 << 3 | 0);
		pb_varint(b, (uint64_t)code);
	}
	pb_varint(b, 2 << 3 | 2);
	pb_varint(b, n);
	(void)buf_add(b, msg, n);
}
