// SPDX-License-Identifier: Apache-2.0
/*
 * tools_compare.c - the MCP tools that compare two selections: compare
 * (per-function rates with a significance test) and explain_change (the
 * diff's changed paths).
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/parse.h"
#include "mcp/text.h"
#include "mcp/tools.h"
#include "query/change.h"
#include "query/units.h"
#include "mcp/tools_int.h"

#include <math.h>

/* --- compare, explain_change --------------------------------------------------------------- */

struct side {
	char query[MCP_MAX_ARG_LEN + 1];
	int64_t from, to;
	json_t *table;
	double total, samples;
	struct tool_nearest near; /* its table's "nearest" (no samples in its range) */
};

struct fnrow {
	const char *name;
	double a_self, a_total, a_ss, a_ts; /* values, sample counts */
	double b_self, b_total, b_ss, b_ts;
	double a_share, b_share, delta, z; /* of the ranked metric; delta in points */
	double a_rate, b_rate, rate_delta; /* per second of each window (gauges: the value) */
	double share_q, rate_q;		   /* Benjamini-Hochberg adjusted p-values */
	bool testable;			   /* both sides have samples (the share test) */
	bool share_sig, rate_sig;
};

/* How one comparison was tested, for the text. */
struct tested {
	size_t n;     /* functions tested */
	double alpha; /* q below this is significant */
	bool cumulative;
};

/* Resolve sides A and B: see the compare tool's description. 0 or -EINVAL. */
static int resolve_sides(struct call *c, struct side *a, struct side *b)
{
	const char *q = tool_sarg(c, "query"), *aq = tool_sarg(c, "a_query"),
		   *bq = tool_sarg(c, "b_query");
	char tmp[32];
	int64_t def[2];
	int rc;

	rc = tool_common_range(c);
	if (rc)
		return rc;
	def[0] = c->from;
	def[1] = c->to;
	rc = tool_resolve_range(c, "b_from", "b_to", def, &b->from, &b->to);
	if (rc)
		return rc;
	snprintf(b->query, sizeof(b->query), "%s", bq ? bq : q ? q : "");
	snprintf(a->query, sizeof(a->query), "%s", aq ? aq : q ? q : "");
	bool same_sel = !strcmp(a->query, b->query);
	bool a_time =
		tool_targ(c, "a_from", tmp, sizeof(tmp)) || tool_targ(c, "a_to", tmp, sizeof(tmp));
	if (same_sel && !a_time) {
		/* the window of the same length just before B */
		def[1] = b->from - 1;
		def[0] = b->from - (b->to - b->from + 1);
	} else {
		def[0] = b->from;
		def[1] = b->to;
	}
	rc = tool_resolve_range(c, "a_from", "a_to", def, &a->from, &a->to);
	if (rc)
		return rc;
	if (same_sel && a->from == b->from && a->to == b->to)
		return tool_bad_arg(c,
				    "%s: sides A and B are the same selection and time range: give "
				    "a_query/b_query or a_from/a_to/b_from/b_to",
				    c->tool->name);
	/* The common "from/to" become the union, for the type lookup and the link. */
	c->range_preset[0] = '\0';
	c->from = PROF_MIN(a->from, b->from);
	c->to = PROF_MAX(a->to, b->to);
	if (c->to - c->from > 2 * MCP_MAX_RANGE_MS)
		return tool_bad_arg(c, "%s: sides A and B lie more than 62 days apart",
				    c->tool->name);
	return 0;
}

static json_t *side_table(struct call *c, struct side *s, const char *sort)
{
	struct buf u = BUF_INIT;
	char lim[16];

	snprintf(lim, sizeof(lim), "%d", COMPARE_ROWS);
	(void)buf_addstr(&u, "/api/v1/table");
	(void)mcp_url_arg(&u, "type", c->type);
	(void)mcp_url_arg(&u, "query", s->query[0] ? s->query : NULL);
	tool_url_time(&u, "from", s->from);
	tool_url_time(&u, "to", s->to);
	(void)mcp_url_arg(&u, "hide", tool_sarg(c, "hide"));
	(void)mcp_url_arg(&u, "trace_id", tool_sarg(c, "trace_id"));
	(void)mcp_url_arg(&u, "span_id", tool_sarg(c, "span_id"));
	(void)mcp_url_arg(&u, "sort", sort);
	(void)mcp_url_arg(&u, "limit", lim);
	s->table = tool_api(c, u.p);
	buf_release(&u);
	/* Said per side (side_line), not as the whole answer's closing line. */
	s->near = c->near;
	memset(&c->near, 0, sizeof(c->near));
	s->total = tool_jnum(s->table, "total");
	s->samples = tool_jnum(s->table, "samples");
	return s->table;
}

/* The explorer link shows side @s (the explorer has no A/B view in its URL). */
static void link_side(struct call *c, const struct side *s)
{
	snprintf(c->query, sizeof(c->query), "%s", s->query);
	c->from = s->from;
	c->to = s->to;
	c->link_note = " (side B)";
	tool_make_link(c, NULL);
}

static int cmp_row_name(const void *x, const void *y)
{
	return strcmp(((const struct fnrow *)x)->name, ((const struct fnrow *)y)->name);
}

/* The window of side @s in seconds (inclusive ms range). */
static double side_seconds(const struct side *s)
{
	return (double)(s->to - s->from + 1) / 1000.0;
}

/*
 * Join the two tables by function name into @rows (malloc'd, *@n), with
 * shares of @metric ("self" or "total") of each side's total, delta in
 * percentage points, rates per second of each window, and both tests of
 * query/change.h on sample counts, each Benjamini-Hochberg adjusted over
 * the functions with samples in @metric on either side (@t->n); significant
 * when q < @t->alpha.
 */
static struct fnrow *join_tables(struct side *a, struct side *b, const char *metric, size_t *n,
				 struct tested *t)
{
	json_t *ra = json_object_get(a->table, "rows"), *rb = json_object_get(b->table, "rows");
	size_t na = json_array_size(ra), nb = json_array_size(rb), i, j, k = 0;
	struct fnrow *x = xcalloc(na + 1, sizeof(*x)), *y = xcalloc(nb + 1, sizeof(*y));
	struct fnrow *out = xcalloc(na + nb + 1, sizeof(*out));
	double *ps = xcalloc(na + nb + 1, sizeof(double)),
	       *pr = xcalloc(na + nb + 1, sizeof(double));
	size_t *ix = xcalloc(na + nb + 1, sizeof(size_t)), m = 0;
	double ta = side_seconds(a), tb = side_seconds(b);
	bool self = !strcmp(metric, "self");

	for (i = 0; i < na; i++) {
		json_t *r = json_array_get(ra, i);

		x[i].name = tool_jstr(r, "name");
		x[i].a_self = tool_jnum(r, "self");
		x[i].a_total = tool_jnum(r, "total");
		x[i].a_ss = tool_jnum(r, "self_samples");
		x[i].a_ts = tool_jnum(r, "total_samples");
	}
	for (i = 0; i < nb; i++) {
		json_t *r = json_array_get(rb, i);

		y[i].name = tool_jstr(r, "name");
		y[i].b_self = tool_jnum(r, "self");
		y[i].b_total = tool_jnum(r, "total");
		y[i].b_ss = tool_jnum(r, "self_samples");
		y[i].b_ts = tool_jnum(r, "total_samples");
	}
	qsort(x, na, sizeof(*x), cmp_row_name);
	qsort(y, nb, sizeof(*y), cmp_row_name);
	for (i = 0, j = 0; i < na || j < nb;) {
		int d = i == na ? 1 : j == nb ? -1 : strcmp(x[i].name, y[j].name);
		struct fnrow *r = &out[k];

		if (d <= 0)
			*r = x[i++];
		if (d >= 0) {
			const struct fnrow *s = &y[j++];

			r->name = s->name;
			r->b_self = s->b_self;
			r->b_total = s->b_total;
			r->b_ss = s->b_ss;
			r->b_ts = s->b_ts;
		}
		double va = self ? r->a_self : r->a_total, vb = self ? r->b_self : r->b_total;
		double ka = self ? r->a_ss : r->a_ts, kb = self ? r->b_ss : r->b_ts;

		r->a_share = a->total ? va / a->total : 0;
		r->b_share = b->total ? vb / b->total : 0;
		r->delta = 100.0 * (r->b_share - r->a_share);
		r->a_rate = t->cumulative ? va / ta : va;
		r->b_rate = t->cumulative ? vb / tb : vb;
		r->rate_delta = r->b_rate - r->a_rate;
		r->testable = a->samples > 0 && b->samples > 0;
		r->z = query_change_share_z(ka, a->samples, kb, b->samples);
		r->share_q = r->rate_q = 1;
		if (ka + kb > 0) { /* a function without samples in the metric is not tested */
			ix[m] = k;
			ps[m] = r->testable ? query_change_p_of_z(r->z) : 1;
			pr[m++] = query_change_rate_p(ka, ta, kb, tb);
		}
		k++;
	}
	query_change_bh(ps, m, ps);
	query_change_bh(pr, m, pr);
	for (i = 0; i < m; i++) {
		struct fnrow *r = &out[ix[i]];

		r->share_q = ps[i];
		r->rate_q = pr[i];
		r->share_sig = r->testable && ps[i] < t->alpha;
		r->rate_sig = pr[i] < t->alpha;
	}
	t->n = m;
	free(ix);
	free(ps);
	free(pr);
	free(x);
	free(y);
	*n = k;
	return out;
}

/* Largest rate change first; ties by name. */
static int cmp_row_rate(const void *x, const void *y)
{
	const struct fnrow *a = x, *b = y;

	if (a->rate_delta != b->rate_delta)
		return a->rate_delta < b->rate_delta ? 1 : -1;
	return strcmp(a->name, b->name);
}

/* Largest |rate change| first; ties by name. */
static int cmp_row_rate_abs(const void *x, const void *y)
{
	const struct fnrow *a = x, *b = y;
	double da = fabs(a->rate_delta), db = fabs(b->rate_delta);

	if (da != db)
		return da < db ? 1 : -1;
	return strcmp(a->name, b->name);
}

/*
 * A rate in the profile's unit: "66.7ms/s = 0.067 cores" for CPU
 * nanoseconds, "1.50MiB/s" for bytes, "12.3/s" for counts; a gauge's
 * value as it is (its mean snapshot). @sign: "+" before a positive value
 * (a change).
 */
static char *rate_text(const struct call *c, const struct tested *t, double v, bool sign, char *out,
		       size_t n)
{
	const char *sg = v < 0 ? "-" : sign && v > 0 ? "+" : "";
	char num[32];

	tool_val(c, fabs(v), num, sizeof(num));
	if (!t->cumulative)
		snprintf(out, n, "%s%s", sg, num);
	else if (!strcmp(c->unit, "nanoseconds"))
		snprintf(out, n, "%s%s/s = %s%.3g cores", sg, num, sg, fabs(v) / 1e9);
	else
		snprintf(out, n, "%s%s/s", sg, num);
	return out;
}

/* "q=0.012, significant" / "q=0.52, within noise" / "untestable: ...". */
static char *verdict(double q, bool sig, bool testable, char *out, size_t n)
{
	if (!testable)
		snprintf(out, n, "untestable: a side has no samples");
	else
		snprintf(out, n, "q=%.2g, %s", q, sig ? "significant" : "within noise");
	return out;
}

/* The line saying how rows were tested. */
static void tests_line(struct call *c, const struct tested *t)
{
	mcp_text_line(&c->out,
		      "Tests on sample counts over the %zu functions compared, each "
		      "Benjamini-Hochberg adjusted (q < %.2g is significant): absolute, the "
		      "conditional Poisson test with each window's length as exposure; "
		      "normalized, the two-proportion z-test on shares.",
		      t->n, t->alpha);
}

/*
 * "Significant in absolute terms: ..." and the functions whose share
 * moved while their rate did not (another function's change, not theirs).
 */
static void verdict_lines(struct call *c, const struct tested *t, const struct fnrow *rows,
			  size_t n, size_t limit)
{
	struct buf b = BUF_INIT;
	size_t k = 0, more = 0;
	char rt[96];

	for (size_t i = 0; i < n; i++) {
		if (!rows[i].rate_sig)
			continue;
		if (k++ >= limit) {
			more++;
			continue;
		}
		(void)buf_addf(&b, "%s%s %s %s", k > 1 ? ", " : "", rows[i].name,
			       rows[i].rate_delta > 0 ? "grew" : "shrank",
			       rate_text(c, t, rows[i].rate_delta, true, rt, sizeof(rt)));
		if (rows[i].a_rate > 0)
			(void)buf_addf(&b, " (%+.1f%%)", 100 * rows[i].rate_delta / rows[i].a_rate);
	}
	if (more)
		(void)buf_addf(&b, " and %zu more", more);
	mcp_text_line(&c->out, "Significant in absolute terms (%s): %s",
		      t->cumulative ? "rate per second" : "mean value", k ? b.p : "none");
	b.len = 0;
	if (b.p)
		b.p[0] = '\0';
	k = more = 0;
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].share_sig || rows[i].rate_sig)
			continue;
		if (k++ >= limit) {
			more++;
			continue;
		}
		(void)buf_addf(&b, "%s%s %+.2f pts", k > 1 ? ", " : "", rows[i].name,
			       rows[i].delta);
	}
	if (more)
		(void)buf_addf(&b, " and %zu more", more);
	if (k)
		mcp_text_line(&c->out,
			      "Share moved but not the rate (a consequence of the other changes, "
			      "not a change of these functions): %s",
			      b.p);
	buf_release(&b);
}

static void side_line(struct call *c, const char *label, const struct side *s,
		      const struct tested *t)
{
	char a[64], b[64], sp[32], tv[48], rt[96];

	mcp_text_line(&c->out, "%s: %s, %s .. %s (%s): total %s in %.0f samples%s%s", label,
		      s->query[0] ? s->query : "{}", mcp_fmt_time(s->from, a, sizeof(a)),
		      mcp_fmt_time(s->to, b, sizeof(b)),
		      mcp_fmt_span(s->to - s->from + 1, sp, sizeof(sp)),
		      tool_val(c, s->total, tv, sizeof(tv)), s->samples, t->cumulative ? ", " : "",
		      t->cumulative
			      ? rate_text(c, t, s->total / side_seconds(s), false, rt, sizeof(rt))
			      : "");
	if (!s->samples) {
		char who[32];

		snprintf(who, sizeof(who), "Side %s", label);
		tool_nearest_side(c, who, &s->near, s->from, s->to);
	}
}

/* Binaries and their build IDs named by a side's table rows (each pair once, at most 16). */
struct builds {
	const char *mapping[16], *build_id[16];
	size_t n;
};

static void side_builds(const struct side *s, struct builds *o)
{
	json_t *rows = json_object_get(s->table, "rows");

	o->n = 0;
	for (size_t i = 0; i < json_array_size(rows) && o->n < PROF_ARRAY_SIZE(o->mapping); i++) {
		json_t *r = json_array_get(rows, i);
		const char *m = tool_jstr(r, "mapping"), *b = tool_jstr(r, "build_id");
		size_t j;

		if (!m || !*m || !b || !*b)
			continue;
		for (j = 0; j < o->n; j++)
			if (!strcmp(o->mapping[j], m) && !strcmp(o->build_id[j], b))
				break;
		if (j == o->n) {
			o->mapping[o->n] = m;
			o->build_id[o->n++] = b;
		}
	}
}

/* One binary by its file name: a rebuilt binary may sit in another (versioned) directory. */
static bool same_binary(const char *x, const char *y)
{
	const char *bx = strrchr(x, '/'), *by = strrchr(y, '/');

	return !strcmp(bx ? bx + 1 : x, by ? by + 1 : y);
}

static bool builds_has(const struct builds *x, const char *m, const char *b)
{
	for (size_t i = 0; i < x->n; i++)
		if (same_binary(x->mapping[i], m) && (!b || !strcmp(x->build_id[i], b)))
			return true;
	return false;
}

/* The build IDs (first 16 digits) @x has for binary @m, joined by ", ", into @out. */
static void builds_of(const struct builds *x, const char *m, char *out, size_t n)
{
	size_t at = 0;

	out[0] = '\0';
	for (size_t i = 0; i < x->n && at < n; i++)
		if (same_binary(x->mapping[i], m))
			at += (size_t)snprintf(out + at, n - at, "%s%.16s", at ? ", " : "",
					       x->build_id[i]);
}

/*
 * Say which binaries (of the functions the side tables list; one binary
 * by its file name) run another build in B than in A, by build ID: a change between two builds is the
 * first thing an agent should know. Silent when no row has a build ID.
 */
static void builds_line(struct call *c, const struct side *a, const struct side *b)
{
	struct builds x, y;
	size_t ndiff = 0, nsame = 0;
	char ba[160], bb[160];

	side_builds(a, &x);
	side_builds(b, &y);
	for (size_t i = 0; i < y.n; i++) {
		size_t k;

		for (k = 0; k < i && !same_binary(y.mapping[k], y.mapping[i]); k++)
			;
		if (k < i || !builds_has(&x, y.mapping[i], NULL))
			continue; /* seen, or the binary is not in A's rows */
		bool same = true;

		for (size_t j = 0; j < y.n; j++)
			if (same_binary(y.mapping[j], y.mapping[i]) &&
			    !builds_has(&x, y.mapping[j], y.build_id[j]))
				same = false;
		for (size_t j = 0; j < x.n; j++)
			if (same_binary(x.mapping[j], y.mapping[i]) &&
			    !builds_has(&y, x.mapping[j], x.build_id[j]))
				same = false;
		if (same) {
			nsame++;
			continue;
		}
		builds_of(&x, y.mapping[i], ba, sizeof(ba));
		builds_of(&y, y.mapping[i], bb, sizeof(bb));
		mcp_text_line(&c->out,
			      "Build differs: %s is build %s in A, %s in B (B runs another "
			      "build: a change may be in the code)",
			      y.mapping[i], ba, bb);
		ndiff++;
	}
	if (!ndiff && nsame)
		mcp_text_line(&c->out, "Builds: the same in A and B (%zu binar%s, by build ID)",
			      nsame, nsame == 1 ? "y" : "ies");
}

static void row_line(struct call *c, const struct tested *t, const struct fnrow *r,
		     const char *metric, size_t idx)
{
	char a[48], b[48], ra[96], rb[96], rd[96], vs[64], vr[64];
	bool self = !strcmp(metric, "self");

	mcp_text_line(
		&c->out,
		"%zu. %s: %s %s -> %s; %s %s -> %s (%s; %s); share %.2f%% -> %.2f%% "
		"(%+.2f pts; %s)",
		idx, r->name, metric, tool_val(c, self ? r->a_self : r->a_total, a, sizeof(a)),
		tool_val(c, self ? r->b_self : r->b_total, b, sizeof(b)),
		t->cumulative ? "rate" : "mean", rate_text(c, t, r->a_rate, false, ra, sizeof(ra)),
		rate_text(c, t, r->b_rate, false, rb, sizeof(rb)),
		rate_text(c, t, r->rate_delta, true, rd, sizeof(rd)),
		verdict(r->rate_q, r->rate_sig, true, vr, sizeof(vr)), 100 * r->a_share,
		100 * r->b_share, r->delta,
		verdict(r->share_q, r->share_sig, r->testable, vs, sizeof(vs)));
}

static void table_note(struct call *c, const struct side *a, const struct side *b)
{
	if (tool_jnum(a->table, "matched") > COMPARE_ROWS ||
	    tool_jnum(b->table, "matched") > COMPARE_ROWS)
		mcp_text_line(
			&c->out,
			"(a side has more than %d functions: those outside its top %d by total "
			"count as 0 there)",
			COMPARE_ROWS, COMPARE_ROWS);
}

/* The profile type's kind and the significance level of @zthr, for join_tables. */
static struct tested tested_for(const struct call *c, double zthr)
{
	struct tested t = { 0, query_change_alpha(zthr > 0 ? zthr : 1.96),
			    query_type_is_cumulative(c->type) };

	return t;
}

int tool_run_compare(struct call *c)
{
	struct side a = { 0 }, b = { 0 };
	const char *metric = tool_sarg(c, "sort") ? tool_sarg(c, "sort") : "self";
	size_t n = 0, limit = (size_t)tool_iarg(c, "limit", 10), shown;
	struct fnrow *rows = NULL;
	struct tested t;
	char tv[48], tv2[48], r1[96], r2[96];
	int rc = resolve_sides(c, &a, &b);

	if (rc)
		return rc;
	if (!tool_resolve_type(c, c->from, c->to))
		return 0;
	t = tested_for(c, 1.96);
	if (!side_table(c, &a, "total") || !side_table(c, &b, "total"))
		goto out;
	mcp_text_line(&c->out,
		      "Compare A (baseline) -> B, %s per function: absolute (%s) and normalized "
		      "(share of each side's total)",
		      metric, t.cumulative ? "rate per second of each window" : "mean value");
	mcp_text_line(&c->out, "Profile type: %s (values in %s)%s", c->type,
		      tool_unit_words(c->unit), c->type_defaulted ? "; chosen by default" : "");
	side_line(c, "A", &a, &t);
	side_line(c, "B", &b, &t);
	builds_line(c, &a, &b);
	if (a.total)
		mcp_text_line(&c->out, "Total change: %s -> %s (%+.1f%%)%s%s%s%s",
			      tool_val(c, a.total, tv, sizeof(tv)),
			      tool_val(c, b.total, tv2, sizeof(tv2)),
			      100.0 * (b.total - a.total) / a.total, t.cumulative ? "; rate " : "",
			      t.cumulative ? rate_text(c, &t, a.total / side_seconds(&a), false, r1,
						       sizeof(r1))
					   : "",
			      t.cumulative ? " -> " : "",
			      t.cumulative ? rate_text(c, &t, b.total / side_seconds(&b), false, r2,
						       sizeof(r2))
					   : "");
	rows = join_tables(&a, &b, metric, &n, &t);
	qsort(rows, n, sizeof(*rows), cmp_row_rate_abs);
	tests_line(c, &t);
	verdict_lines(c, &t, rows, n, limit);
	qsort(rows, n, sizeof(*rows), cmp_row_rate);
	mcp_text_line(&c->out, "Grew most (%s %s, B - A):", metric,
		      t.cumulative ? "rate per second" : "value");
	shown = 0;
	for (size_t i = 0; i < n && shown < limit && rows[i].rate_delta > 0; i++)
		row_line(c, &t, &rows[i], metric, ++shown);
	if (!shown)
		mcp_text_line(&c->out, "(none)");
	mcp_text_line(&c->out, "Shrank most:");
	shown = 0;
	for (size_t i = n; i-- > 0 && shown < limit && rows[i].rate_delta < 0;)
		row_line(c, &t, &rows[i], metric, ++shown);
	if (!shown)
		mcp_text_line(&c->out, "(none)");
	table_note(c, &a, &b);
out:
	link_side(c, &b);
	free(rows);
	json_decref(a.table);
	json_decref(b.table);
	return 0;
}

struct dpath {
	double a, b; /* shares of each side's total (node totals) */
	const char **names;
	size_t n;
};

static int cmp_dpath(const void *x, const void *y)
{
	const struct dpath *p = x, *q = y;
	double dp = fabs(p->b - p->a), dq = fabs(q->b - q->a);

	if (dp != dq)
		return dp < dq ? 1 : -1;
	return p->b != q->b ? (p->b < q->b ? 1 : -1) : 0;
}

/* The diff tree's paths ending in a node named @fn, most changed first (at most @k). */
static void change_paths(struct call *c, json_t *diff, const char *fn, size_t k)
{
	struct walk {
		json_t *node;
		size_t depth;
	};
	VEC(struct walk) st = { 0 };
	VEC(const char *) path = { 0 };
	VEC(struct dpath) found = { 0 };
	double at = tool_jnum(json_object_get(diff, "a"), "total");
	double bt = tool_jnum(json_object_get(diff, "b"), "total");
	struct walk w = { json_object_get(diff, "root"), 0 };

	VEC_PUSH(&st, w);
	while (st.n) {
		w = st.v[--st.n];
		path.n = w.depth ? w.depth - 1 : 0;
		if (w.depth)
			VEC_PUSH(&path, tool_jstr(w.node, "name"));
		if (w.depth && !strcmp(tool_jstr(w.node, "name"), fn)) {
			struct dpath d = { at ? tool_jnum(w.node, "a_total") / at : 0,
					   bt ? tool_jnum(w.node, "b_total") / bt : 0, NULL,
					   path.n };

			d.names = xcalloc(path.n, sizeof(char *));
			memcpy(d.names, path.v, path.n * sizeof(char *));
			VEC_PUSH(&found, d);
		}
		json_t *kids = json_object_get(w.node, "children");
		for (size_t i = json_array_size(kids); i-- > 0;) {
			struct walk cw = { json_array_get(kids, i), w.depth + 1 };
			VEC_PUSH(&st, cw);
		}
	}
	if (found.n)
		qsort(found.v, found.n, sizeof(*found.v), cmp_dpath);
	if (!found.n)
		mcp_text_line(&c->out,
			      "   (no call path of it in the diff tree: it was merged into "
			      "'other' nodes)");
	for (size_t i = 0; i < found.n; i++) {
		char p[1200];

		if (i < k) {
			tool_path_text(found.v[i].names, found.v[i].n, p, sizeof(p));
			mcp_text_line(&c->out, "   - %s: A %.2f%% -> B %.2f%% (%+.2f pts)", p,
				      100 * found.v[i].a, 100 * found.v[i].b,
				      100 * (found.v[i].b - found.v[i].a));
		}
		free(found.v[i].names);
	}
	if (found.n > k)
		mcp_text_line(&c->out, "   (%zu more call paths)", found.n - k);
	VEC_FREE(&st);
	VEC_FREE(&path);
	VEC_FREE(&found);
}

int tool_run_explain_change(struct call *c)
{
	struct side a = { 0 }, b = { 0 };
	size_t n = 0, limit = (size_t)tool_iarg(c, "limit", 8),
	       npaths = (size_t)tool_iarg(c, "paths", 3);
	double zthr = tool_narg(c, "z", 1.96), min_delta = tool_narg(c, "min_delta", 0.5);
	struct fnrow *rows = NULL;
	struct buf u = BUF_INIT;
	json_t *diff = NULL;
	char tv[48], tv2[48], mn[16];
	size_t sig = 0;
	struct tested t;
	int rc = resolve_sides(c, &a, &b);

	if (rc)
		return rc;
	if (!tool_resolve_type(c, c->from, c->to))
		return 0;
	if (!side_table(c, &a, "total") || !side_table(c, &b, "total"))
		goto out;
	snprintf(mn, sizeof(mn), "%d", TREE_MAX_NODES);
	(void)buf_addstr(&u, "/api/v1/diff");
	(void)mcp_url_arg(&u, "type", c->type);
	(void)mcp_url_arg(&u, "a_query", a.query[0] ? a.query : NULL);
	tool_url_time(&u, "a_from", a.from);
	tool_url_time(&u, "a_to", a.to);
	(void)mcp_url_arg(&u, "b_query", b.query[0] ? b.query : NULL);
	tool_url_time(&u, "b_from", b.from);
	tool_url_time(&u, "b_to", b.to);
	(void)mcp_url_arg(&u, "hide", tool_sarg(c, "hide"));
	tool_url_fold(c, &u);
	(void)mcp_url_arg(&u, "max_nodes", mn);
	diff = tool_api(c, u.p);
	buf_release(&u);
	if (!diff)
		goto out;
	t = tested_for(c, zthr);
	mcp_text_line(
		&c->out, "What changed from A (baseline) to B; profile type %s (values in %s)%s",
		c->type, tool_unit_words(c->unit), c->type_defaulted ? ", chosen by default" : "");
	tool_fold_note(c);
	side_line(c, "A", &a, &t);
	side_line(c, "B", &b, &t);
	builds_line(c, &a, &b);
	if (a.total)
		mcp_text_line(&c->out, "Total: %s -> %s (%+.1f%%)",
			      tool_val(c, a.total, tv, sizeof(tv)),
			      tool_val(c, b.total, tv2, sizeof(tv2)),
			      100.0 * (b.total - a.total) / a.total);
	if (!a.samples || !b.samples) {
		mcp_text_line(&c->out,
			      "Side %s has no samples: nothing to compare. Check its "
			      "selector and time range (list_profile_types, label_values).",
			      !a.samples ? "A" : "B");
		goto out;
	}
	rows = join_tables(&a, &b, "self", &n, &t);
	qsort(rows, n, sizeof(*rows), cmp_row_rate_abs);
	/* min_delta: points of share, and of A's total rate for the absolute change. */
	double ref_rate = t.cumulative ? a.total / side_seconds(&a) : a.total;
	double min_rate = min_delta / 100.0 * ref_rate;
	for (size_t i = 0; i < n; i++) {
		rows[i].rate_sig = rows[i].rate_sig && fabs(rows[i].rate_delta) >= min_rate;
		rows[i].share_sig = rows[i].share_sig && fabs(rows[i].delta) >= min_delta;
		sig += rows[i].rate_sig;
	}
	tests_line(c, &t);
	mcp_text_line(&c->out,
		      "%zu function%s changed significantly in absolute terms (self %s, and by at "
		      "least %.2f%% of A's total)%s",
		      sig, sig == 1 ? "" : "s", t.cumulative ? "rate per second" : "mean value",
		      min_delta,
		      sig ? ", largest change first, with the call paths whose share changed most:"
			  : ".");
	size_t shown = 0;
	for (size_t i = 0; i < n && shown < limit; i++) {
		const struct fnrow *r = &rows[i];
		char ta[16], tb[16], ra[96], rb[96], rd[96];

		if (!r->rate_sig)
			continue;
		shown++;
		mcp_text_line(&c->out,
			      "%zu. %s %s: self %s %s -> %s (%s%s, q=%.2g); self %s -> %s; self "
			      "share %.2f%% -> %.2f%% (%+.2f pts); total share %s -> %s",
			      shown, r->name, r->rate_delta > 0 ? "GREW" : "SHRANK",
			      t.cumulative ? "rate" : "mean",
			      rate_text(c, &t, r->a_rate, false, ra, sizeof(ra)),
			      rate_text(c, &t, r->b_rate, false, rb, sizeof(rb)),
			      rate_text(c, &t, r->rate_delta, true, rd, sizeof(rd)),
			      r->a_rate > 0 ? "" : ", new", r->rate_q,
			      tool_val(c, r->a_self, tv, sizeof(tv)),
			      tool_val(c, r->b_self, tv2, sizeof(tv2)), 100 * r->a_share,
			      100 * r->b_share, r->delta,
			      mcp_fmt_pct(r->a_total, a.total, ta, sizeof(ta)),
			      mcp_fmt_pct(r->b_total, b.total, tb, sizeof(tb)));
		if (r->a_rate > 0)
			mcp_text_line(&c->out, "   change: %+.1f%% of its A rate",
				      100 * r->rate_delta / r->a_rate);
		change_paths(c, diff, r->name, npaths);
	}
	if (sig > shown)
		mcp_text_line(&c->out, "(%zu more significant changes: raise limit)", sig - shown);
	{
		struct buf so = BUF_INIT;
		size_t k = 0;

		for (size_t i = 0; i < n; i++)
			if (rows[i].share_sig && !rows[i].rate_sig && k++ < limit)
				(void)buf_addf(&so, "%s%s %+.2f pts", k > 1 ? ", " : "",
					       rows[i].name, rows[i].delta);
		if (k)
			mcp_text_line(&c->out,
				      "Self share moved but not the rate (a consequence of the "
				      "changes above, not a change of these functions): %s%s",
				      so.p, k > limit ? ", ..." : "");
		buf_release(&so);
	}
	if (!sig) {
		mcp_text_line(&c->out, "Largest moves (all within noise or below min_delta):");
		for (size_t i = 0; i < n && i < 3; i++)
			row_line(c, &t, &rows[i], "self", i + 1);
	}
	table_note(c, &a, &b);
out:
	link_side(c, &b);
	free(rows);
	json_decref(diff);
	json_decref(a.table);
	json_decref(b.table);
	return 0;
}
