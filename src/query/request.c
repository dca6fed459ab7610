// SPDX-License-Identifier: Apache-2.0
/* request.c - parameter parsing and view dispatch; see request.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "query/diff.h"
#include "query/export.h"
#include "query/filter.h"
#include "query/flamechart.h"
#include "query/flamegraph.h"
#include "query/labels.h"
#include "query/request.h"
#include "query/sandwich.h"
#include "query/source.h"
#include "query/selector.h"
#include "query/series.h"
#include "query/stackset.h"
#include "query/symhealth.h"
#include "query/table.h"
#include "query/units.h"
#include "store/matcher.h"

#include <math.h>

/* Unix ms beyond which ms * 1e6 overflows int64 ns. */
#define MAX_ABS_MS	     (INT64_MAX / 1000000 - 1)
#define DEFAULT_SERIES_STEPS 240
#define DEFAULT_SERIES_LIMIT 10
#define MAX_GROUP_BY_TEXT    1024

#define CT_JSON		     "application/json"

struct req {
	const struct query_env *env;
	query_arg_fn arg;
	void *ctx;
	struct prof_err *err;
	int64_t now_ms;
	uint8_t trace_buf[16], span_buf[8];
	const uint8_t *trace_id, *span_id; /* parameters trace_id, span_id (get_link), or NULL */
	struct query_nearest *nearest;	   /* set by collect when its selection came back empty */
};

static const char *arg(const struct req *r, const char *name)
{
	const char *v = r->arg(r->ctx, name);

	return v && *v ? v : NULL;
}

static int bad(const struct req *r, const char *fmt, ...) PROF_PRINTF(2, 3);
static int bad(const struct req *r, const char *fmt, ...)
{
	char msg[480];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prof_err_set(r->err, -EINVAL, -1, "%s", msg);
}

/* --- scalar parameters ------------------------------------------------------------------- */

static int get_u64(const struct req *r, const char *name, uint64_t def, uint64_t lo, uint64_t hi,
		   uint64_t *out)
{
	const char *v = arg(r, name);

	*out = def;
	if (!v)
		return 0;
	if (parse_u64(v, out) || *out < lo)
		return bad(r, "parameter '%s': expected an integer >= %" PRIu64 ", got '%s'", name,
			   lo, v);
	if (*out > hi)
		return bad(r, "parameter '%s': at most %" PRIu64 ", got '%s'", name, hi, v);
	return 0;
}

static int get_bool(const struct req *r, const char *name, bool *out)
{
	const char *v = arg(r, name);

	*out = false;
	if (!v || !strcmp(v, "false") || !strcmp(v, "0"))
		return 0;
	if (!strcmp(v, "true") || !strcmp(v, "1")) {
		*out = true;
		return 0;
	}
	return bad(r, "parameter '%s': expected true or false, got '%s'", name, v);
}

static int get_double(const struct req *r, const char *name, double def, double lo, double hi,
		      double *out)
{
	const char *v = arg(r, name);
	char *end;

	*out = def;
	if (!v)
		return 0;
	errno = 0;
	*out = strtod(v, &end);
	if (errno || end == v || *end || !isfinite(*out) || *out < lo || *out > hi)
		return bad(r, "parameter '%s': expected a number from %g to %g, got '%s'", name, lo,
			   hi, v);
	return 0;
}

static int get_duration(const struct req *r, const char *name, int64_t *out)
{
	const char *v = arg(r, name);

	*out = 0;
	if (!v)
		return 0;
	if (parse_duration_ns(v, out) || *out <= 0)
		return bad(r,
			   "parameter '%s': expected a positive duration such as 60s, 5m, 1h or "
			   "500ms (a bare number is seconds), got '%s'",
			   name, v);
	return 0;
}

static int get_enum(const struct req *r, const char *name, const char *const *choices, int def,
		    int *out)
{
	const char *v = arg(r, name);
	char list[256] = "";

	*out = def;
	if (!v)
		return 0;
	for (int i = 0; choices[i]; i++) {
		if (!strcmp(v, choices[i])) {
			*out = i;
			return 0;
		}
		snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
			 choices[i]);
	}
	return bad(r, "parameter '%s': expected one of %s, got '%s'", name, list, v);
}

static int get_time_range(const struct req *r, const char *fname, const char *tname,
			  const char *fdef, const char *tdef, int64_t *from_ns, int64_t *to_ns)
{
	int64_t now = r->now_ms, from = now - QUERY_DEFAULT_RANGE_MS, to = now;
	const char *f = arg(r, fname), *t = arg(r, tname);

	if (!f)
		f = fdef;
	if (!t)
		t = tdef;
	if (t && parse_time_ms(t, now, &to))
		return bad(r,
			   "parameter '%s': expected unix milliseconds, 'now' or 'now-<duration>' "
			   "such as now-15m, got '%s'",
			   tname, t);
	if (f && parse_time_ms(f, now, &from))
		return bad(r,
			   "parameter '%s': expected unix milliseconds, 'now' or 'now-<duration>' "
			   "such as now-15m, got '%s'",
			   fname, f);
	if (from < -MAX_ABS_MS || from > MAX_ABS_MS || to < -MAX_ABS_MS || to > MAX_ABS_MS)
		return bad(r, "parameters '%s'/'%s': out of range", fname, tname);
	if (from > to)
		return bad(r, "parameter '%s' (%" PRId64 ") is after '%s' (%" PRId64 ")", fname,
			   from, tname, to);
	*from_ns = from * 1000000;
	*to_ns = to * 1000000 + 999999;
	return 0;
}

/* --- selection: type + selector + range + filters ------------------------------------------ */

struct selection {
	struct query_selector sel;
	const char *type;
	int64_t from_ns, to_ns;
};

static void selection_release(struct selection *s)
{
	query_selector_release(&s->sel);
}

/* Five ':'-separated fields, the first three (name, sample type, unit) not empty. */
static bool type_well_formed(const char *type)
{
	struct query_type_id t;

	return query_type_split(type, &t) && t.name[0] && t.sample_type[0] && t.sample_unit[0];
}

struct type_seen {
	const char *want;
	bool any, found;
};

static int type_seen_fn(void *arg, const char *type)
{
	struct type_seen *t = arg;

	t->any = true;
	t->found = !strcmp(type, t->want);
	return t->found;
}

/*
 * After a selection came back empty: 400 when the store has data but none
 * of type @type at any time (a misspelt type), so an empty answer means
 * "nothing in this range", never "no such type". An empty store passes.
 */
static int check_type_known(const struct req *r, const char *type)
{
	struct type_seen t = { type, false, false };

	store_types(r->env->store, INT64_MIN, INT64_MAX, type_seen_fn, &t);
	if (t.any && !t.found)
		return bad(r,
			   "parameter 'type': unknown profile type '%s': the store has no data of "
			   "it at any time (see /api/v1/profile-types)",
			   type);
	return 0;
}

/*
 * Parse @qname (selector), @tname (type), and the range from @fname/@tname2
 * (defaults @qdef etc. from the unprefixed parameters). @need_type: the
 * type is required.
 */
static int get_selection(const struct req *r, const char *qname, const char *typename,
			 const char *fname, const char *tname, const char *qdef,
			 const char *typedef_, const char *fdef, const char *tdef, bool need_type,
			 struct selection *s)
{
	const char *q = arg(r, qname), *type = arg(r, typename);
	struct prof_err perr;
	int rc;

	memset(s, 0, sizeof(*s));
	if (!q)
		q = qdef;
	if (!type)
		type = typedef_;
	rc = get_time_range(r, fname, tname, fdef, tdef, &s->from_ns, &s->to_ns);
	if (rc)
		return rc;
	prof_err_init(&perr);
	if (query_selector_parse(q ? q : "", &s->sel, &perr))
		return bad(r, "parameter '%s': %s", qname, perr.msg);
	if (s->sel.type && type && strcmp(s->sel.type, type))
		return bad(r, "parameter '%s' (%s) and the type in '%s' (%s) differ", typename,
			   type, qname, s->sel.type);
	s->type = type ? type : s->sel.type;
	/* The views over stacks need a real type; labels and stack health only filter by it. */
	if (need_type && s->type && !type_well_formed(s->type))
		return bad(
			r,
			"parameter '%s': expected a profile type id "
			"name:sample_type:sample_unit:period_type:period_unit such as "
			"process_cpu:cpu:nanoseconds:cpu:nanoseconds (see /api/v1/profile-types), "
			"got '%s'",
			typename, s->type);
	if (need_type && !s->type)
		return bad(r,
			   "parameter '%s' is required, e.g. "
			   "%s=process_cpu:cpu:nanoseconds:cpu:nanoseconds "
			   "(see /api/v1/profile-types)",
			   typename, typename);
	return 0;
}

static int get_filter(const struct req *r, struct query_filter *f)
{
	return query_filter_init(f, arg(r, "stack_filter"), arg(r, "frame_filter"), arg(r, "hide"),
				 r->err);
}

/*
 * Comma-separated label names into @names (pointers into @buf), each once:
 * group_by=x,x is group_by=x, as repeated group_by parameters are
 * (server/qargs.c).
 */
static int get_group_by(const struct req *r, char *buf, size_t bufsz, const char **names, size_t *n)
{
	const char *v = arg(r, "group_by");

	*n = 0;
	if (!v)
		return 0;
	if (strlen(v) >= bufsz)
		return bad(r, "parameter 'group_by': longer than %zu bytes", bufsz - 1);
	snprintf(buf, bufsz, "%s", v);
	for (char *s = buf; *s;) {
		size_t k = strcspn(s, ",");
		char *next = s[k] ? s + k + 1 : s + k;

		s[k] = '\0';
		while (*s == ' ')
			s++;
		for (size_t e = strlen(s); e && s[e - 1] == ' ';)
			s[--e] = '\0';
		if (!*s)
			return bad(r, "parameter 'group_by': empty label name in '%s'", v);
		size_t i = 0;

		while (i < *n && strcmp(names[i], s))
			i++;
		if (i == *n && *n == QUERY_SS_MAX_GROUP_BY)
			return bad(r, "parameter 'group_by': at most %d labels, got '%s'",
				   QUERY_SS_MAX_GROUP_BY, v);
		if (i == *n)
			names[(*n)++] = s;
		s = next;
	}
	return 0;
}

/* @n bytes written as 2 @n hex digits, either case, into @out. */
static int get_hex_id(const struct req *r, const char *name, uint8_t *out, size_t n, bool *set)
{
	const char *v = arg(r, name);

	*set = false;
	if (!v)
		return 0;
	if (strlen(v) != 2 * n)
		return bad(r, "parameter '%s': expected %zu hex digits, got '%s'", name, 2 * n, v);
	for (size_t i = 0; i < 2 * n; i++) {
		char c = v[i];
		int d = c >= '0' && c <= '9'   ? c - '0'
			: c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10
					       : -1;

		if (d < 0)
			return bad(r, "parameter '%s': '%c' at offset %zu is not a hex digit", name,
				   c, i);
		out[i / 2] = (uint8_t)(i % 2 ? out[i / 2] | d : d << 4);
	}
	{
		uint8_t any = 0;

		for (size_t i = 0; i < n; i++)
			any |= out[i];
		if (!any) /* W3C Trace Context: an all-zero trace or span id is invalid */
			return bad(r, "parameter '%s': an all-zero id is not a valid id", name);
	}
	*set = true;
	return 0;
}

/*
 * Parameters trace_id (32 hex digits) and span_id (16): keep only the
 * samples linked to that trace / span (OTLP links, pprof labels trace_id
 * and span_id), on every view.
 */
static int get_link(struct req *r)
{
	bool t, sp;
	int rc = get_hex_id(r, "trace_id", r->trace_buf, 16, &t);

	if (!rc)
		rc = get_hex_id(r, "span_id", r->span_buf, 8, &sp);
	if (rc)
		return rc;
	r->trace_id = t ? r->trace_buf : NULL;
	r->span_id = sp ? r->span_buf : NULL;
	return 0;
}

static void set_params(const struct req *r, const struct selection *s,
		       struct query_stackset_params *p)
{
	p->trace_id = r->trace_id;
	p->span_id = r->span_id;
	p->type = s->type;
	p->m = s->sel.m;
	p->nm = s->sel.n;
	p->from_ns = s->from_ns;
	p->to_ns = s->to_ns;
	p->sym = r->env->sym;
}

static int collect(const struct req *r, const struct selection *s, struct query_stackset_params *p,
		   struct query_stackset *ss)
{
	set_params(r, s, p);
	int rc = query_stackset_collect(r->env->store, p, ss, r->err);

	if (!rc && !ss->series)
		rc = check_type_known(r, p->type);
	if (!rc && !ss->series && r->nearest)
		rc = query_nearest_find(r->env->store, p->type, p->m, p->nm, p->from_ns, p->to_ns,
					r->nearest);
	return rc;
}

/* --- views ------------------------------------------------------------------------------------ */

struct common {
	struct selection s;
	struct query_filter f;
	struct query_stackset ss;
	bool have_ss;
};

static void common_release(struct common *c)
{
	selection_release(&c->s);
	query_filter_release(&c->f);
	if (c->have_ss)
		query_stackset_release(&c->ss);
}

/* The common parameters, then collect with @p (filters and selection filled in). */
static int common_collect(const struct req *r, struct common *c, struct query_stackset_params *p)
{
	int rc = get_selection(r, "query", "type", "from", "to", NULL, NULL, NULL, NULL, true,
			       &c->s);

	unsigned fold = 0;

	if (!rc)
		rc = get_filter(r, &c->f);
	if (!rc)
		rc = query_fold_parse(arg(r, "fold"), &fold, r->err);
	if (rc)
		return rc;
	p->filter = &c->f;
	c->have_ss = true;
	rc = collect(r, &c->s, p, &c->ss);
	if (!rc)
		query_stackset_fold(&c->ss, fold);
	return rc;
}

static int get_max_nodes(const struct req *r, size_t *out)
{
	uint64_t v;
	int rc = get_u64(r, "max_nodes", QUERY_DEFAULT_MAX_NODES, 1, QUERY_MAX_MAX_NODES, &v);

	*out = (size_t)v;
	return rc;
}

static int view_flamegraph(const struct req *r, struct buf *out)
{
	struct common c = { 0 };
	struct query_stackset_params p = { 0 };
	struct query_flame_opts o = { 0 };
	struct query_flamegraph fg;
	int rc;

	rc = get_max_nodes(r, &o.max_nodes);
	if (!rc)
		rc = get_double(r, "min_share", 0, 0, 1, &o.min_share);
	if (!rc)
		rc = get_bool(r, "invert", &o.invert);
	if (!rc)
		rc = common_collect(r, &c, &p);
	if (!rc) {
		query_flamegraph_from_stackset(&c.ss, &o, &fg);
		rc = query_flamegraph_write_json(&fg, c.s.type, o.max_nodes, out);
		query_flamegraph_release(&fg);
	}
	common_release(&c);
	return rc;
}

static int view_table(const struct req *r, struct buf *out)
{
	static const char *const sorts[] = { "self", "total", "name", NULL };
	static const char *const grans[] = { "function", "frame", NULL };
	int gran = 0;
	struct common c = { 0 };
	struct query_stackset_params p = { 0 };
	struct query_table_opts o = { 0 };
	struct query_table t = { 0 };
	uint64_t limit;
	int sort, rc;

	o.search = arg(r, "search");
	rc = get_bool(r, "search_regex", &o.search_regex);
	if (!rc)
		rc = get_enum(r, "sort", sorts, 0, &sort);
	if (!rc)
		rc = get_u64(r, "limit", 0, 0, UINT32_MAX, &limit);
	if (!rc)
		rc = get_enum(r, "granularity", grans, 0, &gran);
	if (!rc) {
		o.by_frame = gran == 1;
		o.sort = (enum query_table_sort)sort;
		o.limit = (size_t)limit;
		rc = common_collect(r, &c, &p);
	}
	if (!rc)
		rc = query_table_build(&c.ss, &o, &t, r->err);
	if (!rc)
		rc = query_table_write_json(&t, &c.ss, out);
	query_table_release(&t);
	common_release(&c);
	return rc;
}

static int view_series(const struct req *r, struct buf *out)
{
	static const char *const modes[] = { "total", "self", NULL };
	struct common c = { 0 };
	struct query_stackset_params p = { 0 };
	struct query_series_opts o = { 0 };
	struct query_series s = { 0 };
	char gbuf[MAX_GROUP_BY_TEXT];
	const char *gnames[QUERY_SS_MAX_GROUP_BY];
	uint64_t limit;
	int mode, rc;

	rc = get_group_by(r, gbuf, sizeof(gbuf), gnames, &p.ngroup_by);
	if (!rc)
		rc = get_duration(r, "step", &p.step_ns);
	if (!rc)
		rc = get_u64(r, "limit", DEFAULT_SERIES_LIMIT, 0, 10000, &limit);
	if (!rc)
		rc = get_enum(r, "mode", modes, 0, &mode);
	if (rc)
		goto out;
	o.function = arg(r, "function");
	if (!o.function && r->arg(r->ctx, "function")) {
		rc = bad(r, "parameter 'function' is empty: give the exact frame name (as "
			    "/api/v1/table lists it), or leave the parameter out for the whole "
			    "selection");
		goto out;
	}
	o.mode = mode == 1 ? QUERY_FN_SELF : QUERY_FN_TOTAL;
	/* Without a function or stack filter no stack matters: cells are (group, step). */
	p.merge_stacks = !o.function && !arg(r, "stack_filter");
	o.limit = (size_t)limit;
	p.group_by = gnames;
	if (!p.step_ns) {
		/* Peek at the range for the default step: ~240 points, whole seconds. */
		int64_t f, t;

		rc = get_time_range(r, "from", "to", NULL, NULL, &f, &t);
		if (rc)
			goto out;
		int64_t span = t - f + 1, step = span / DEFAULT_SERIES_STEPS + 1;
		p.step_ns = (step + 999999999) / 1000000000 * 1000000000;
	}
	rc = common_collect(r, &c, &p);
	if (!rc)
		rc = query_series_build(&c.ss, &o, &s);
	if (!rc)
		rc = query_series_write_json(&s, &c.ss, &o, out);
out:
	query_series_release(&s);
	common_release(&c);
	return rc;
}

static int view_sandwich(const struct req *r, struct buf *out)
{
	struct common c = { 0 };
	struct query_stackset_params p = { 0 };
	struct query_sandwich sw;
	const char *fn = arg(r, "function");
	size_t max_nodes;
	int rc;

	if (!fn)
		return bad(r, "parameter 'function' is required: the exact frame name, as the "
			      "table lists it");
	rc = get_max_nodes(r, &max_nodes);
	if (!rc)
		rc = common_collect(r, &c, &p);
	if (!rc) {
		query_sandwich_build(&c.ss, fn, max_nodes, &sw);
		rc = query_sandwich_write_json(&sw, &c.ss, fn, max_nodes, out);
		query_sandwich_release(&sw);
	}
	common_release(&c);
	return rc;
}

static int view_source(const struct req *r, struct buf *out)
{
	static const char *const sorts[] = { "self", "total", "line", NULL };
	static const char *const texts[] = { "lines", "file", "none", NULL };
	struct common c = { 0 };
	struct query_stackset_params p = { 0 };
	struct query_source src = { 0 };
	const char *fn = arg(r, "function");
	uint64_t limit;
	int sort, text, rc;

	if (!fn)
		return bad(r, "parameter 'function' is required: the exact frame name, as the "
			      "table lists it");
	rc = get_enum(r, "sort", sorts, 0, &sort);
	if (!rc)
		rc = get_enum(r, "text", texts, 0, &text);
	if (!rc)
		rc = get_u64(r, "limit", 50, 0, UINT32_MAX, &limit);
	p.line_fn = fn;
	if (!rc)
		rc = common_collect(r, &c, &p);
	if (!rc) {
		query_source_build(&c.ss, fn, (enum query_source_sort)sort, &src);
		rc = query_source_write_json(&src, &c.ss, fn, (enum query_source_sort)sort,
					     (size_t)limit, (enum query_source_text)text,
					     r->env->src_root, out);
	}
	query_source_release(&src);
	common_release(&c);
	return rc;
}

static int view_diff(const struct req *r, struct buf *out)
{
	static const char *const modes[] = { "normalized", "absolute", NULL };
	struct selection a = { 0 }, b = { 0 };
	struct query_filter f = { 0 };
	struct query_stackset ss;
	bool have_ss = false;
	struct query_diff_opts o = { 0 };
	struct query_diff d;
	struct query_stackset_params pa = { 0 }, pb = { 0 };
	uint64_t max_stacks;
	unsigned fold = 0;
	int mode, rc;
	const char *q = arg(r, "query"), *type = arg(r, "type"), *from = arg(r, "from"),
		   *to = arg(r, "to");

	rc = get_enum(r, "mode", modes, 0, &mode);
	if (!rc)
		rc = get_max_nodes(r, &o.max_nodes);
	if (!rc)
		rc = get_double(r, "min_share", 0, 0, 1, &o.min_share);
	if (!rc)
		rc = get_double(r, "z", 1.96, 0.01, 100, &o.z_threshold);
	if (!rc)
		rc = get_u64(r, "max_stacks", 100, 0, 100000, &max_stacks);
	if (!rc)
		rc = get_selection(r, "a_query", "a_type", "a_from", "a_to", q, type, from, to,
				   true, &a);
	if (!rc)
		rc = get_selection(r, "b_query", "b_type", "b_from", "b_to", q, type, from, to,
				   true, &b);
	if (!rc)
		rc = get_filter(r, &f);
	if (!rc)
		rc = query_fold_parse(arg(r, "fold"), &fold, r->err);
	if (rc)
		goto out;
	o.mode = mode ? QUERY_DIFF_ABSOLUTE : QUERY_DIFF_NORMALIZED;
	o.max_stacks = max_stacks ? (size_t)max_stacks : 1;
	/* Windows are inclusive of both ends: to - from + 1 ns. */
	o.a_seconds = ((double)a.to_ns - (double)a.from_ns + 1) / 1e9;
	o.b_seconds = ((double)b.to_ns - (double)b.from_ns + 1) / 1e9;
	pa.filter = pb.filter = &f;
	rc = query_diff_check(a.type, b.type, r->err);
	if (!rc) {
		/* Both sides in one stack set (A in bucket 0, B in bucket 1): one names trie. */
		have_ss = true;
		set_params(r, &a, &pa);
		set_params(r, &b, &pb);
		rc = query_stackset_collect_pair(r->env->store, &pa, &pb, &ss, r->err);
		if (!rc && !ss.series)
			rc = check_type_known(r, a.type);
		if (!rc)
			query_stackset_fold(&ss, fold);
	}
	if (!rc) {
		query_diff_build(&ss, &o, &d);
		rc = query_diff_write_json(&d, &ss, &o, out);
		query_diff_release(&d);
	}
out:
	if (have_ss)
		query_stackset_release(&ss);
	selection_release(&a);
	selection_release(&b);
	query_filter_release(&f);
	return rc;
}

static int view_flamechart(const struct req *r, struct buf *out)
{
	struct common c = { 0 };
	struct query_stackset_params p = { 0 };
	struct query_flamechart_opts o = { 0 };
	char gbuf[MAX_GROUP_BY_TEXT];
	const char *gnames[QUERY_SS_MAX_GROUP_BY];
	uint64_t max_spans;
	int rc;

	rc = get_group_by(r, gbuf, sizeof(gbuf), gnames, &p.ngroup_by);
	if (!rc)
		rc = get_duration(r, "interval", &o.interval_ns);
	if (!rc)
		rc = get_u64(r, "max_spans", 100000, 1, 10000000, &max_spans);
	if (!rc) {
		o.max_spans = (size_t)max_spans;
		p.group_by = gnames;
		p.keep_samples = true;
		rc = common_collect(r, &c, &p);
	}
	if (!rc)
		rc = query_flamechart_write_json(&c.ss, &o, out);
	common_release(&c);
	return rc;
}

#define QUERY_LABELS_MAX_LIMIT 1000000 /* values one answer may list */

/*
 * An empty label listing: when the selection has no series in range at
 * all (not merely none with label @name), where its data is
 * (query_nearest_find, added to the answer by query_request_run).
 */
static int labels_nearest(const struct req *r, const struct selection *s, const char *name)
{
	struct query_strlist names = { 0 };
	int rc = 0;

	if (name)
		rc = query_labels_collect(r->env->store, s->type, s->sel.m, s->sel.n, s->from_ns,
					  s->to_ns, NULL, &names);
	if (!rc && !names.n)
		rc = query_nearest_find(r->env->store, s->type, s->sel.m, s->sel.n, s->from_ns,
					s->to_ns, r->nearest);
	query_strlist_release(&names);
	return rc;
}

/*
 * Label names or values: a JSON array of all of them, or with `limit` an
 * object with at most that many and whether some were left out
 * (query_strlist_write_json_limited).
 */
static int view_labels(const struct req *r, const char *name, struct buf *out)
{
	struct selection s;
	struct query_strlist l = { 0 };
	bool limited = arg(r, "limit") != NULL;
	uint64_t limit = 0;
	int rc;

	rc = get_u64(r, "limit", 0, 1, QUERY_LABELS_MAX_LIMIT, &limit);
	if (rc)
		return rc;
	rc = get_selection(r, "query", "type", "from", "to", NULL, NULL, NULL, NULL, false, &s);
	if (!rc)
		rc = query_labels_collect(r->env->store, s.type, s.sel.m, s.sel.n, s.from_ns,
					  s.to_ns, name, &l);
	if (!rc && !l.n && limited)
		rc = labels_nearest(r, &s, name);
	if (!rc && limited)
		rc = query_strlist_write_json_limited(&l, (size_t)limit, out);
	else if (!rc)
		rc = query_strlist_write_json(&l, out);
	query_strlist_release(&l);
	selection_release(&s);
	return rc;
}

static int view_export(const struct req *r, const char *what, struct buf *out)
{
	struct common c = { 0 };
	struct query_stackset_params p = { 0 };
	int rc = 0;
	size_t max_nodes = 0;
	bool invert = false;

	if (!strcmp(what, "svg")) {
		rc = get_max_nodes(r, &max_nodes);
		if (!rc)
			rc = get_bool(r, "invert", &invert);
	}
	if (!rc)
		rc = common_collect(r, &c, &p);
	if (!rc && !strcmp(what, "pprof")) {
		rc = query_export_pprof(&c.ss, true, out, r->err);
	} else if (!rc && !strcmp(what, "folded")) {
		rc = query_export_folded(&c.ss, out);
	} else if (!rc) {
		struct query_flamegraph fg;
		struct query_flame_opts o = { max_nodes, 0, invert };
		struct query_svg_opts so = { arg(r, "title"), NULL, 0 };

		query_flamegraph_from_stackset(&c.ss, &o, &fg);
		rc = query_export_svg(&fg, c.s.type, &so, out);
		query_flamegraph_release(&fg);
	}
	common_release(&c);
	return rc;
}

/* Stack health (query/symhealth.h): type optional, no filters. */
static int view_symbol_health(const struct req *r, struct buf *out)
{
	struct selection s;
	int rc = get_selection(r, "query", "type", "from", "to", NULL, NULL, NULL, NULL, false, &s);

	if (!rc) {
		struct query_symhealth_params p = { s.type,    s.sel.m, s.sel.n,
						    s.from_ns, s.to_ns, r->env->sym };

		rc = query_symhealth_run(r->env->store, &p, out, r->err);
	}
	selection_release(&s);
	return rc;
}

/* --- dispatch --------------------------------------------------------------------------------- */

/* Unix ns as RFC 3339 UTC with milliseconds ("2026-01-02T03:04:05.678Z"). */
static void fmt_rfc3339(int64_t ns, char *out, size_t n)
{
	int64_t ms = ns >= 0 ? ns / 1000000 : -((-(ns + 1)) / 1000000) - 1;
	time_t sec = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
	struct tm tm;

	if (!gmtime_r(&sec, &tm) || tm.tm_year + 1900 < 1 || tm.tm_year + 1900 > 9999) {
		snprintf(out, n, "%" PRId64 "ms", ms);
		return;
	}
	snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
		 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms - (int64_t)sec * 1000));
}

/*
 * An empty answer whose selection has data elsewhere: add
 * "nearest":{"before":T,"before_ms":N,"after":T,"after_ms":N} (each side
 * only when there is data on it) as the last member of the JSON object
 * the view wrote at @start.
 */
static int add_nearest(struct buf *out, size_t start, const struct query_nearest *nb)
{
	char t[48];
	const char *sep = "";
	int rc = 0;

	if (out->len < start + 2 || out->p[start] != '{' || out->p[out->len - 1] != '}')
		return 0; /* not an object: nothing to add to */
	out->len--;
	rc = buf_addstr(out, out->p[out->len - 1] == '{' ? "\"nearest\":{" : ",\"nearest\":{");
	if (!rc && nb->have_before) {
		fmt_rfc3339(nb->before_ns, t, sizeof(t));
		rc = buf_addf(out, "\"before\":\"%s\",\"before_ms\":%" PRId64, t,
			      nb->before_ns / 1000000);
		sep = ",";
	}
	if (!rc && nb->have_after) {
		fmt_rfc3339(nb->after_ns, t, sizeof(t));
		rc = buf_addf(out, "%s\"after\":\"%s\",\"after_ms\":%" PRId64, sep, t,
			      nb->after_ns / 1000000);
	}
	return rc ? rc : buf_addstr(out, "}}");
}

int query_request_run(const struct query_env *env, const char *view, query_arg_fn argfn, void *ctx,
		      struct buf *out, const char **content_type, struct prof_err *err)
{
	struct req r = { .env = env,
			 .arg = argfn,
			 .ctx = ctx,
			 .err = err,
			 .now_ms = env->now_ms ? env->now_ms : prof_now_ns() / 1000000 };
	struct query_nearest nearest = { 0 };
	size_t start = out->len;
	int rc;

	*content_type = CT_JSON;
	rc = get_link(&r);
	if (rc)
		return rc; /* nothing was written */
	r.nearest = &nearest;
	store_regex_query_begin();
	if (!strcmp(view, "flamegraph"))
		rc = view_flamegraph(&r, out);
	else if (!strcmp(view, "table"))
		rc = view_table(&r, out);
	else if (!strcmp(view, "series"))
		rc = view_series(&r, out);
	else if (!strcmp(view, "sandwich"))
		rc = view_sandwich(&r, out);
	else if (!strcmp(view, "source"))
		rc = view_source(&r, out);
	else if (!strcmp(view, "diff"))
		rc = view_diff(&r, out);
	else if (!strcmp(view, "flamechart"))
		rc = view_flamechart(&r, out);
	else if (!strcmp(view, "labels"))
		rc = view_labels(&r, NULL, out);
	else if (!strcmp(view, "label_values")) {
		const char *name = arg(&r, "name");

		rc = name ? view_labels(&r, name, out)
			  : bad(&r, "a label name is required: /api/v1/labels/NAME/values");
	} else if (!strcmp(view, "export_pprof")) {
		*content_type = "application/octet-stream";
		rc = view_export(&r, "pprof", out);
	} else if (!strcmp(view, "export_folded")) {
		*content_type = "text/plain; charset=utf-8";
		rc = view_export(&r, "folded", out);
	} else if (!strcmp(view, "symbol_health")) {
		rc = view_symbol_health(&r, out);
	} else if (!strcmp(view, "export_svg")) {
		*content_type = "image/svg+xml";
		rc = view_export(&r, "svg", out);
	} else {
		rc = prof_err_set(err, -PROF_ENOTFOUND, -1, "no such query view '%s'", view);
	}
	unsigned hits = store_regex_query_end();
	if (!rc && hits)
		rc = prof_err_set(err, -EINVAL, -1,
				  "a regular expression (stack_filter, frame_filter, search or a "
				  "selector's =~ / !~) needed more than %d match steps on a name "
				  "(PCRE2's match limit): answering would leave matches out; "
				  "simplify it (e.g. no nested or alternating repeats such as "
				  "(a|a)* or (.*a){20})",
				  STORE_REGEX_MATCH_LIMIT);
	if (rc == -PROF_ETOOBIG && (!err || !err->code))
		prof_err_set(err, rc, -1, "the answer exceeds %zu bytes; narrow the query",
			     out->max);
	if (!rc && !strcmp(*content_type, CT_JSON) && (nearest.have_before || nearest.have_after))
		rc = add_nearest(out, start, &nearest);
	if (!rc && !strcmp(*content_type, CT_JSON))
		rc = buf_add(out, "\n", 1);
	if (rc) {
		out->len = start;
		if (out->p)
			out->p[start] = '\0';
		*content_type = CT_JSON;
	}
	return rc;
}

/* --- parameters each view accepts ------------------------------------------------------------- */

/* Selection, range, trace correlation and the server's dataset: every view. */
static const char *const P_SELECT[] = { "type",	   "query",    "from",	  "to",
					"dataset", "trace_id", "span_id", NULL };
static const char *const P_FILTER[] = { "stack_filter", "frame_filter", "hide", "fold", NULL };

static const struct view_params {
	const char *view;
	bool filters;
	const char *const extra[16];
} view_params[] = {
	{ "flamegraph", true, { "invert", "max_nodes", "min_share" } },
	{ "table", true, { "search", "search_regex", "sort", "limit", "granularity" } },
	{ "series", true, { "step", "group_by", "limit", "function", "mode" } },
	{ "sandwich", true, { "function", "max_nodes" } },
	{ "source", true, { "function", "sort", "limit", "text" } },
	{ "diff",
	  true,
	  { "mode", "max_nodes", "min_share", "z", "max_stacks", "a_query", "a_type", "a_from",
	    "a_to", "b_query", "b_type", "b_from", "b_to" } },
	{ "flamechart", true, { "group_by", "interval", "max_spans" } },
	{ "labels", false, { "limit" } },
	{ "label_values", false, { "limit" } },
	{ "export_pprof", true, { 0 } },
	{ "export_folded", true, { 0 } },
	{ "export_svg", true, { "max_nodes", "invert", "title" } },
	{ "symbol_health", false, { 0 } },
};

static bool in_list(const char *const *l, const char *name)
{
	for (; *l; l++)
		if (!strcmp(*l, name))
			return true;
	return false;
}

int query_request_check_param(const char *view, const char *name, struct prof_err *err)
{
	const struct view_params *vp = NULL;
	char known[512];
	size_t at = 0;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(view_params) && !vp; i++)
		if (!strcmp(view_params[i].view, view))
			vp = &view_params[i];
	if (!vp)
		return 0; /* query_request_run says the view is unknown */
	if (in_list(P_SELECT, name) || (vp->filters && in_list(P_FILTER, name)) ||
	    in_list(vp->extra, name))
		return 0;
	known[0] = '\0';
	const char *const *lists[3] = { P_SELECT, vp->filters ? P_FILTER : NULL, vp->extra };
	for (int k = 0; k < 3; k++)
		for (const char *const *l = lists[k]; l && *l && at < sizeof(known); l++)
			at += (size_t)snprintf(known + at, sizeof(known) - at, "%s%s",
					       at ? ", " : "", *l);
	return prof_err_set(err, -EINVAL, -1, "unknown parameter '%s' for this view (it takes: %s)",
			    name, known);
}

unsigned query_request_status(int rc)
{
	switch (rc) {
	case 0:
		return 200;
	case -EINVAL:
		return 400;
	case -PROF_ENOTFOUND:
		return 404;
	case -PROF_ETOOBIG:
		return 413;
	default:
		return 500;
	}
}
