// SPDX-License-Identifier: Apache-2.0
/*
 * tools_read.c - the MCP tools that read one view: list_profile_types,
 * list_labels, label_values, top_functions, find_function,
 * flamegraph_summary, callers_callees, function_timeseries and
 * source_location.
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

/* --- list_profile_types ------------------------------------------------------------------- */

int tool_run_profile_types(struct call *c)
{
	struct buf u = BUF_INIT;
	char a[64], b[64];
	json_t *types, *v;
	size_t i;
	int rc = tool_common_range(c);

	if (rc)
		return rc;
	(void)buf_addstr(&u, "/api/v1/profile-types");
	tool_url_time(&u, "from", c->from);
	tool_url_time(&u, "to", c->to);
	types = tool_api(c, u.p);
	buf_release(&u);
	if (!types)
		return 0;
	VEC(const char *) names = { 0 };
	json_array_foreach(types, i, v) if (json_is_string(v))
		VEC_PUSH(&names, json_string_value(v));
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), tool_cmp_str);
	mcp_text_line(&c->out, "%zu profile type%s with data between %s and %s:", names.n,
		      names.n == 1 ? "" : "s", mcp_fmt_time(c->from, a, sizeof(a)),
		      mcp_fmt_time(c->to, b, sizeof(b)));
	for (i = 0; i < names.n; i++) {
		struct query_type_id id;

		if (query_type_split(names.v[i], &id))
			mcp_text_line(&c->out, "- %s: %s measured in %s (values in %s; %s)",
				      names.v[i], id.sample_type, id.sample_unit,
				      tool_unit_words(id.sample_unit),
				      query_type_is_cumulative(names.v[i])
					      ? "cumulative: summed over the range"
					      : "gauge: averaged over the range");
		else
			mcp_text_line(&c->out, "- %s", names.v[i]);
	}
	if (!names.n)
		mcp_text_line(&c->out, "No data in this range: widen from/to.");
	VEC_FREE(&names);
	json_decref(types);
	return 0;
}

/* --- list_labels, label_values ------------------------------------------------------------ */

static int run_labels(struct call *c, const char *name)
{
	struct buf u = BUF_INIT, path = BUF_INIT;
	char a[64], b[64];
	json_t *arr, *v;
	size_t i, shown = 0;
	int rc = tool_common_range(c);

	if (rc)
		return rc;
	if (name && strpbrk(name, "/?#"))
		return tool_bad_arg(
			c, "label_values: argument 'name' must be a label name, got '%.100s'",
			name);
	tool_split_type(c); /* optional here: labels of every type unless one is asked for */
	if (name) {
		(void)buf_addstr(&path, "/api/v1/labels/");
		(void)buf_add_url_escaped(&path, name);
		(void)buf_addstr(&path, "/values");
	} else {
		(void)buf_addstr(&path, "/api/v1/labels");
	}
	tool_url_common(c, &u, path.p, true);
	buf_release(&path);
	arr = tool_api(c, u.p);
	if (arr && !json_array_size(arr)) {
		/* Empty: the object form says where the selection's data is (tool_nearest_note). */
		(void)mcp_url_arg(&u, "limit", "1");
		json_decref(tool_api(c, u.p));
		c->failed = false;
	}
	buf_release(&u);
	if (!arr)
		return 0;
	if (c->type[0])
		mcp_text_line(&c->out, "Profile type: %s", c->type);
	mcp_text_line(&c->out, "Selection: %s, %s .. %s", c->query[0] ? c->query : "{}",
		      mcp_fmt_time(c->from, a, sizeof(a)), mcp_fmt_time(c->to, b, sizeof(b)));
	if (name)
		mcp_text_line(&c->out, "%zu value%s of label %s:", json_array_size(arr),
			      json_array_size(arr) == 1 ? "" : "s", name);
	else
		mcp_text_line(&c->out, "%zu label name%s:", json_array_size(arr),
			      json_array_size(arr) == 1 ? "" : "s");
	json_array_foreach(arr, i, v)
	{
		if (!json_is_string(v))
			continue;
		if (!mcp_text_line(&c->out, "- %s", json_string_value(v)))
			break;
		shown++;
	}
	if (shown < json_array_size(arr))
		mcp_text_line(&c->out, "(%zu more not shown)", json_array_size(arr) - shown);
	tool_make_link(c, NULL);
	json_decref(arr);
	return 0;
}

int tool_run_list_labels(struct call *c)
{
	return run_labels(c, NULL);
}

int tool_run_label_values(struct call *c)
{
	return run_labels(c, tool_sarg(c, "name"));
}

/* --- top_functions, find_function --------------------------------------------------------- */

static void table_rows(struct call *c, json_t *t, size_t *shown)
{
	double total = tool_jnum(t, "total");
	json_t *rows = json_object_get(t, "rows"), *r;
	size_t i;

	mcp_text_line(&c->out, "%10s %8s %10s %8s  %s", "self", "self%", "total", "total%",
		      "function");
	json_array_foreach(rows, i, r)
	{
		char s[48], tt[48], sp[16], tp[16];
		double sv = tool_jnum(r, "self"), tv = tool_jnum(r, "total");

		if (!mcp_text_line(&c->out, "%10s %8s %10s %8s  %s", tool_val(c, sv, s, sizeof(s)),
				   mcp_fmt_pct(sv, total, sp, sizeof(sp)),
				   tool_val(c, tv, tt, sizeof(tt)),
				   mcp_fmt_pct(tv, total, tp, sizeof(tp)), tool_jstr(r, "name")))
			break;
		(*shown)++;
	}
}

int tool_run_top_functions(struct call *c)
{
	struct buf u = BUF_INIT;
	const char *sort = tool_sarg(c, "sort") ? tool_sarg(c, "sort") : "self";
	char lim[16], tv[48];
	size_t shown = 0;
	json_t *t;
	int rc;

	if (!tool_range_and_type(c, &rc))
		return rc;
	snprintf(lim, sizeof(lim), "%" PRId64, tool_iarg(c, "limit", DEFAULT_LIMIT));
	tool_url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "sort", sort);
	(void)mcp_url_arg(&u, "limit", lim);
	(void)mcp_url_arg(&u, "search", tool_sarg(c, "search"));
	(void)mcp_url_arg(&u, "stack_filter", tool_sarg(c, "stack_filter"));
	t = tool_api(c, u.p);
	buf_release(&u);
	if (!t)
		return 0;
	tool_header(c);
	mcp_text_line(&c->out, "Total: %s in %.0f samples; %.0f functions%s",
		      tool_val(c, tool_jnum(t, "total"), tv, sizeof(tv)), tool_jnum(t, "samples"),
		      tool_jnum(t, "functions"),
		      tool_sarg(c, "search") || tool_sarg(c, "stack_filter") ? " (filtered)" : "");
	mcp_text_line(&c->out,
		      "Top functions by %s (self: in the function itself; total: including its "
		      "callees; %% of the total):",
		      sort);
	if (!json_array_size(json_object_get(t, "rows")))
		mcp_text_line(&c->out, "(no samples in this selection)");
	else
		table_rows(c, t, &shown);
	if (tool_jnum(t, "matched") > (double)shown)
		mcp_text_line(&c->out, "(%zu of %.0f functions shown)", shown,
			      tool_jnum(t, "matched"));
	if (tool_jnum(t, "unsymbolized") > 0)
		mcp_text_line(&c->out,
			      "Note: %.0f frames are unsymbolized (module+0xaddr or [module]); "
			      "upload debug info (profd debuginfo upload) to name them.",
			      tool_jnum(t, "unsymbolized"));
	tool_make_link(c, tool_sarg(c, "search"));
	json_decref(t);
	return 0;
}

int tool_run_find_function(struct call *c)
{
	struct buf u = BUF_INIT;
	const char *search = tool_sarg(c, "search");
	bool regex = tool_barg(c, "regex", false);
	char lim[16], tv[48];
	size_t shown = 0;
	json_t *t;
	int rc;

	if (!tool_range_and_type(c, &rc))
		return rc;
	snprintf(lim, sizeof(lim), "%" PRId64, tool_iarg(c, "limit", DEFAULT_LIMIT));
	tool_url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "search", search);
	if (regex)
		(void)mcp_url_arg(&u, "search_regex", "true");
	(void)mcp_url_arg(&u, "sort", "total");
	(void)mcp_url_arg(&u, "limit", lim);
	t = tool_api(c, u.p);
	buf_release(&u);
	if (!t)
		return 0;
	tool_header(c);
	mcp_text_line(&c->out, "%.0f function%s %s '%s' (of %.0f; profile total %s):",
		      tool_jnum(t, "matched"),
		      tool_jnum(t, "matched") == 1 ? " matches" : "s match",
		      regex ? "the regex" : "the substring", search, tool_jnum(t, "functions"),
		      tool_val(c, tool_jnum(t, "total"), tv, sizeof(tv)));
	if (json_array_size(json_object_get(t, "rows")))
		table_rows(c, t, &shown);
	else
		mcp_text_line(&c->out, "(no match: try a shorter substring, regex true, or a wider "
				       "time range)");
	if (tool_jnum(t, "matched") > (double)shown)
		mcp_text_line(&c->out, "(%zu of %.0f matches shown, by total)", shown,
			      tool_jnum(t, "matched"));
	tool_make_link(c, search);
	json_decref(t);
	return 0;
}

/* --- flamegraph_summary ----------------------------------------------------------------- */

/*
 * flamegraph_summary when the flame graph JSON nests too deep for the
 * reader: the hottest stacks from the folded export ("a;b;c VALUE" per
 * distinct stack), at most @k, largest first (ties: the export's order).
 */
static void folded_paths(struct call *c, size_t k)
{
	struct folded_line {
		const char *stack;
		size_t len;
		int64_t value;
	} top[50];
	struct buf u = BUF_INIT, body;
	size_t n = 0, lines = 0;
	double total = 0;
	char tv[48], pc[16];

	k = PROF_MIN(k, PROF_ARRAY_SIZE(top));
	tool_url_common(c, &u, "/api/v1/export/folded", true);
	tool_url_fold(c, &u);
	(void)mcp_url_arg(&u, "stack_filter", tool_sarg(c, "stack_filter"));
	if (tool_api_body(c, u.p, &body)) {
		buf_release(&u);
		buf_release(&body);
		return;
	}
	buf_release(&u);
	for (char *p = body.p, *end = body.p + body.len; p && p < end;) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *sp;
		int64_t v;

		if (nl)
			*nl = '\0';
		sp = strrchr(p, ' ');
		if (sp && sp > p && !parse_i64(sp + 1, &v) && v > 0) {
			struct folded_line f = { p, (size_t)(sp - p), v };
			size_t pos;

			lines++;
			total += (double)v;
			if (k && (n < k || v > top[n - 1].value)) {
				pos = n < k ? n++ : k - 1;
				while (pos > 0 && top[pos - 1].value < v) {
					top[pos] = top[pos - 1];
					pos--;
				}
				top[pos] = f;
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	tool_header(c);
	mcp_text_line(&c->out, "Total: %s in %zu distinct stacks",
		      tool_val(c, total, tv, sizeof(tv)), lines);
	mcp_text_line(
		&c->out,
		"Note: a stack of this selection is deeper than the JSON reader allows, so no "
		"call tree is shown; the hottest stacks come from the folded export.");
	mcp_text_line(&c->out, "Hottest call paths (by value of the whole stack, root -> leaf):");
	for (size_t i = 0; i < n; i++) {
		VEC(const char *) names = { 0 };
		char *copy = xstrndup(top[i].stack, top[i].len), *q = copy, p[1200];

		for (char *semi; (semi = strchr(q, ';')); q = semi + 1) {
			*semi = '\0';
			VEC_PUSH(&names, q);
		}
		VEC_PUSH(&names, q);
		tool_path_text(names.v, names.n, p, sizeof(p));
		mcp_text_line(&c->out, "%zu. %s (%s): %s", i + 1,
			      tool_val(c, (double)top[i].value, tv, sizeof(tv)),
			      mcp_fmt_pct((double)top[i].value, total, pc, sizeof(pc)), p);
		VEC_FREE(&names);
		free(copy);
	}
	buf_release(&body);
}

int tool_run_flamegraph(struct call *c)
{
	struct buf u = BUF_INIT;
	bool invert = tool_barg(c, "invert", false);
	double min_share = tool_narg(c, "min_share", 0.01);
	int64_t npaths = tool_iarg(c, "hot_paths", 10);
	struct tree_opts o = { 0 };
	char tv[48], mn[16];
	json_t *fg, *root;
	int rc;

	if (!tool_range_and_type(c, &rc))
		return rc;
	snprintf(mn, sizeof(mn), "%d", TREE_MAX_NODES);
	tool_url_common(c, &u, "/api/v1/flamegraph", true);
	tool_url_fold(c, &u);
	(void)mcp_url_arg(&u, "max_nodes", mn);
	if (invert)
		(void)mcp_url_arg(&u, "invert", "true");
	(void)mcp_url_arg(&u, "stack_filter", tool_sarg(c, "stack_filter"));
	fg = tool_api(c, u.p);
	buf_release(&u);
	if (!fg && c->too_deep && !invert) {
		c->failed = c->too_deep = false;
		folded_paths(c, npaths > 0 ? (size_t)npaths : 10);
		tool_make_link(c, NULL);
	}
	if (!fg)
		return 0;
	root = json_object_get(fg, "root");
	tool_header(c);
	mcp_text_line(&c->out, "Total: %s in %.0f samples",
		      tool_val(c, tool_jnum(fg, "total"), tv, sizeof(tv)),
		      tool_jnum(fg, "samples"));
	if (!tool_jnum(fg, "total")) {
		mcp_text_line(&c->out, "(no samples in this selection)");
		goto done;
	}
	if (!invert && npaths > 0) {
		struct hot_path hp[50] = { 0 };
		size_t n = tool_hot_paths(root, (size_t)npaths, hp);

		mcp_text_line(&c->out,
			      "Hottest call paths (by self value of the leaf, root -> leaf):");
		for (size_t i = 0; i < n; i++) {
			char p[1200], sp[16], sv[48];

			tool_path_text(hp[i].names, hp[i].n, p, sizeof(p));
			mcp_text_line(
				&c->out, "%zu. %s self (%s): %s", i + 1,
				tool_val(c, hp[i].self, sv, sizeof(sv)),
				mcp_fmt_pct(hp[i].self, tool_jnum(fg, "total"), sp, sizeof(sp)), p);
		}
		for (size_t i = 0; i < n; i++)
			free(hp[i].names);
	}
	o.grand = tool_jnum(fg, "total");
	o.min_share = min_share;
	o.max_depth = (int)tool_iarg(c, "max_depth", 16);
	o.skip_root = true;
	o.no_self = invert; /* below a leaf come its callers: their "self" is not theirs */
	o.label = "nodes";
	mcp_text_line(&c->out, "%s (nodes of at least %.2f%% of the total, %d levels%s):",
		      invert ? "Inverted call tree (functions where samples were taken, each with "
			       "the cost of that leaf on the callers below it)"
			     : "Call tree (root first)",
		      min_share * 100, o.max_depth,
		      invert ? "" : "; total includes callees, self is the node itself");
	tool_render_tree(c, root, &o);
done:
	if (tool_jnum(json_object_get(fg, "truncated"), "nodes") > 0)
		mcp_text_line(
			&c->out,
			"(the API merged %.0f small nodes into 'other' nodes, %s: max_nodes %d)",
			tool_jnum(json_object_get(fg, "truncated"), "nodes"),
			tool_val(c, tool_jnum(json_object_get(fg, "truncated"), "total"), tv,
				 sizeof(tv)),
			TREE_MAX_NODES);
	tool_make_link(c, NULL);
	json_decref(fg);
	return 0;
}

/* --- callers_callees ---------------------------------------------------------------------- */

/* Up to 5 function names containing @fn, as suggestions. */
void tool_suggest(struct call *c, const char *fn)
{
	struct buf u = BUF_INIT;
	json_t *t, *r;
	size_t i;

	tool_url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "search", fn);
	(void)mcp_url_arg(&u, "sort", "total");
	(void)mcp_url_arg(&u, "limit", "5");
	t = tool_api(c, u.p);
	buf_release(&u);
	if (!t)
		return;
	if (!json_array_size(json_object_get(t, "rows")))
		mcp_text_line(&c->out,
			      "No function name contains '%s' either: use find_function "
			      "or top_functions to see the names.",
			      fn);
	else
		mcp_text_line(&c->out, "Names containing '%s' (by total):", fn);
	json_array_foreach(json_object_get(t, "rows"), i, r)
	{
		char tv[48], tp[16];

		mcp_text_line(
			&c->out, "- %s (total %s, %s)", tool_jstr(r, "name"),
			tool_val(c, tool_jnum(r, "total"), tv, sizeof(tv)),
			mcp_fmt_pct(tool_jnum(r, "total"), tool_jnum(t, "total"), tp, sizeof(tp)));
	}
	json_decref(t);
}

int tool_run_callers_callees(struct call *c)
{
	struct buf u = BUF_INIT;
	const char *fn = tool_sarg(c, "function");
	struct tree_opts o = { 0 };
	char tv[48], sv[48], tp[16], sp[16], mn[16];
	double pt, ft;
	json_t *sw;
	int rc;

	if (!tool_range_and_type(c, &rc))
		return rc;
	snprintf(mn, sizeof(mn), "%d", TREE_MAX_NODES);
	tool_url_common(c, &u, "/api/v1/sandwich", true);
	tool_url_fold(c, &u);
	(void)mcp_url_arg(&u, "function", fn);
	(void)mcp_url_arg(&u, "max_nodes", mn);
	sw = tool_api(c, u.p);
	buf_release(&u);
	if (!sw)
		return 0;
	tool_header(c);
	pt = tool_jnum(sw, "profile_total");
	ft = tool_jnum(sw, "total");
	tool_make_link(c, fn);
	if (!json_is_true(json_object_get(sw, "found")) || ft <= 0) {
		mcp_text_line(&c->out,
			      "Function '%s' has no samples in this selection (profile "
			      "total %s).",
			      fn, tool_val(c, pt, tv, sizeof(tv)));
		tool_suggest(c, fn);
		json_decref(sw);
		return 0;
	}
	mcp_text_line(&c->out, "Function %s: total %s (%s of all), self %s (%s of all)", fn,
		      tool_val(c, ft, tv, sizeof(tv)), mcp_fmt_pct(ft, pt, tp, sizeof(tp)),
		      tool_val(c, tool_jnum(sw, "self"), sv, sizeof(sv)),
		      mcp_fmt_pct(tool_jnum(sw, "self"), pt, sp, sizeof(sp)));
	o.grand = pt;
	o.fn_total = ft;
	o.fn = fn;
	o.min_share = tool_narg(c, "min_share", 0.005);
	o.max_depth = (int)tool_iarg(c, "max_depth", 8);
	o.skip_root = true;

	size_t budget = mcp_text_room(&c->out), keep = c->out.limit;
	/* half the room for the callers, the rest for the callees */
	c->out.limit = c->out.b.len + budget / 2;
	mcp_text_line(&c->out,
		      "Callers (who calls %s, with the cost of %s on that path; each level below "
		      "is a caller of the one above):",
		      fn, fn);
	o.label = "callers";
	o.no_self = true;
	tool_render_tree(c, json_object_get(json_object_get(sw, "callers"), "root"), &o);
	bool cut = c->out.truncated;
	c->out.truncated = false;
	c->out.limit = keep;
	mcp_text_line(&c->out, "Callees (what %s calls; self of %s is its own cost):", fn, fn);
	o.label = "callees";
	o.no_self = false;
	tool_render_tree(c, json_object_get(json_object_get(sw, "callees"), "root"), &o);
	c->out.truncated |= cut;
	json_decref(sw);
	return 0;
}

/* --- function_timeseries ------------------------------------------------------------------- */

/* Per-step sums over every series and "other" of a series answer; NULL-safe. */
static double *series_sum(json_t *s, size_t nts)
{
	double *v = xcalloc(nts + 1, sizeof(double));
	json_t *ser, *o = json_object_get(s, "other");
	size_t i;

	json_array_foreach(json_object_get(s, "series"), i, ser) for (size_t k = 0; k < nts; k++)
		v[k] += json_number_value(json_array_get(json_object_get(ser, "values"), k));
	for (size_t k = 0; k < nts && o; k++)
		v[k] += json_number_value(json_array_get(json_object_get(o, "values"), k));
	return v;
}

int tool_run_timeseries(struct call *c)
{
	const char *fn = tool_sarg(c, "function"),
		   *mode = tool_sarg(c, "mode") ? tool_sarg(c, "mode") : "total";
	const char *step_arg = tool_sarg(c, "step");
	struct buf u = BUF_INIT;
	json_t *fs = NULL, *all = NULL;
	double *fv = NULL, *av = NULL;
	int64_t step_ns;
	char step[32], tv[48], tv2[48], tv3[48], a[64];
	int rc = tool_common_range(c);

	if (rc)
		return rc;
	if (step_arg) {
		if (parse_duration_ns(step_arg, &step_ns) || step_ns < 1000000)
			return tool_bad_arg(
				c,
				"function_timeseries: argument 'step': expected a duration "
				"of at least 1ms such as 10s, 1m or 1h, got '%.100s'",
				step_arg);
	} else {
		int64_t s = (c->to - c->from + 1 + DEFAULT_SERIES_ROWS * 1000 - 1) /
			    (DEFAULT_SERIES_ROWS * 1000);

		step_ns = (s < 1 ? 1 : s) * 1000000000LL;
	}
	if ((c->to - c->from + 1) / (step_ns / 1000000) > MAX_SERIES_STEPS)
		return tool_bad_arg(
			c,
			"function_timeseries: steps of %s over the range are more than %d: "
			"pick a larger step",
			step_arg ? step_arg : "(default)", MAX_SERIES_STEPS);
	if (!tool_resolve_type(c, c->from, c->to))
		return 0;
	if (step_ns % 1000000000LL == 0)
		snprintf(step, sizeof(step), "%" PRId64 "s", step_ns / 1000000000);
	else
		snprintf(step, sizeof(step), "%" PRId64 "ms", step_ns / 1000000);
	tool_url_common(c, &u, "/api/v1/series", true);
	(void)mcp_url_arg(&u, "step", step);
	(void)mcp_url_arg(&u, "function", fn);
	(void)mcp_url_arg(&u, "mode", mode);
	fs = tool_api(c, u.p);
	if (!fs)
		goto out;
	tool_url_common(c, &u, "/api/v1/series", true);
	(void)mcp_url_arg(&u, "step", step);
	all = tool_api(c, u.p);
	if (!all)
		goto out;
	tool_header(c);
	json_t *ts = json_object_get(fs, "timestamps");
	size_t nts = json_array_size(ts);
	bool gauge = json_is_false(json_object_get(fs, "cumulative"));
	double ftot = 0, atot = 0, peak = 0;
	size_t peak_i = 0;

	fv = series_sum(fs, nts);
	av = series_sum(all, json_array_size(json_object_get(all, "timestamps")) == nts ? nts : 0);
	for (size_t k = 0; k < nts; k++) {
		ftot += fv[k];
		atot += av[k];
		if (fv[k] > peak) {
			peak = fv[k];
			peak_i = k;
		}
	}
	mcp_text_line(&c->out, "%s of %s (mode %s: %s) per %s step%s",
		      gauge ? "Mean value" : "Cost", fn, mode,
		      strcmp(mode, "self") ? "samples whose stack contains it"
					   : "samples where it is the leaf",
		      step, gauge ? " (gauge type: averaged)" : "");
	if (ftot <= 0) {
		mcp_text_line(&c->out, "%s has no samples in this selection (all: %s).", fn,
			      tool_val(c, atot, tv, sizeof(tv)));
		tool_suggest(c, fn);
		goto out;
	}
	mcp_text_line(
		&c->out, "In range: %s of %s (%.2f%%); peak %s at %s",
		tool_val(c, ftot, tv, sizeof(tv)), tool_val(c, atot, tv2, sizeof(tv2)),
		atot ? 100 * ftot / atot : 0.0, tool_val(c, peak, tv3, sizeof(tv3)),
		mcp_fmt_time((int64_t)json_number_value(json_array_get(ts, peak_i)), a, sizeof(a)));
	mcp_text_line(&c->out, "%-24s %12s %12s %8s", "step start (UTC)", fn[0] ? "function" : "",
		      "all", "share");
	for (size_t k = 0; k < nts; k++) {
		size_t z = k;
		char pc[16];

		while (z < nts && fv[z] == 0 && av[z] == 0)
			z++;
		if (z - k >= 2) {
			mcp_text_line(&c->out, "... %zu steps without samples", z - k);
			k = z - 1;
			continue;
		}
		if (!mcp_text_line(&c->out, "%-24s %12s %12s %8s",
				   mcp_fmt_time((int64_t)json_number_value(json_array_get(ts, k)),
						a, sizeof(a)),
				   tool_val(c, fv[k], tv, sizeof(tv)),
				   tool_val(c, av[k], tv2, sizeof(tv2)),
				   mcp_fmt_pct(fv[k], av[k], pc, sizeof(pc))))
			break;
	}
out:
	tool_make_link(c, fn);
	buf_release(&u);
	free(fv);
	free(av);
	json_decref(fs);
	json_decref(all);
	return 0;
}

/* --- source_location ------------------------------------------------------------------------ */

/* The snippet of a source line: its text without leading blanks, at most SNIPPET_MAX bytes. */
#define SNIPPET_MAX 100

/*
 * The hottest lines of @fn from the source view @s (/api/v1/source):
 * file:line with self and total (shares of the function's total), the
 * line's text when the server has the source, else once why not. The
 * first line's place was printed as "Source:" by the caller.
 */
static void source_lines_text(struct call *c, json_t *s)
{
	json_t *lines = json_object_get(s, "lines"), *files = json_object_get(s, "files");
	json_t *builds = json_object_get(s, "builds"), *l, *f;
	double ftot = tool_jnum(s, "total");
	char tv[48], tv2[48], p1[16], p2[16];
	size_t i;

	if (json_array_size(builds) > 1) {
		mcp_text_line(&c->out,
			      "Builds: %zu build IDs in this range, each with its own lines "
			      "(another build may run other code):",
			      json_array_size(builds));
		json_array_foreach(builds, i, l)
			mcp_text_line(&c->out, "- %s", json_string_value(l));
	}
	if (!json_array_size(lines) ||
	    (json_array_size(lines) == 1 && tool_jnum(json_array_get(lines, 0), "line") <= 0)) {
		mcp_text_line(&c->out, "Lines: unknown (the profile and the symbolizer give no "
				       "source line for its frames).");
		return;
	}
	mcp_text_line(&c->out, "Hottest lines (%zu of %.0f; %% of the function's total):",
		      json_array_size(lines), tool_jnum(s, "nlines"));
	json_array_foreach(lines, i, l)
	{
		const char *file = tool_jstr(l, "file"), *base = strrchr(file, '/');
		const char *text = tool_jstr(l, "text");
		double self = tool_jnum(l, "self"), tot = tool_jnum(l, "total");

		if (!mcp_text_line(&c->out, "%s:%.0f  self %s (%s)  total %s (%s)%s%s",
				   base ? base + 1 : file, tool_jnum(l, "line"),
				   tool_val(c, self, tv, sizeof(tv)),
				   mcp_fmt_pct(self, ftot, p1, sizeof(p1)),
				   tool_val(c, tot, tv2, sizeof(tv2)),
				   mcp_fmt_pct(tot, ftot, p2, sizeof(p2)),
				   json_array_size(builds) > 1 ? "  build " : "",
				   json_array_size(builds) > 1 ? tool_jstr(l, "build_id") : ""))
			return;
		while (*text == ' ' || *text == '\t')
			text++;
		if (*text && !mcp_text_line(&c->out, "    | %.*s%s", SNIPPET_MAX, text,
					    strlen(text) > SNIPPET_MAX ? " ..." : ""))
			return;
	}
	json_array_foreach(files, i, f) if (strcmp(tool_jstr(f, "source"), "available"))
	{
		mcp_text_line(&c->out, "No source text: %s.", tool_jstr(f, "reason"));
		break;
	}
}

int tool_run_source_location(struct call *c)
{
	const char *fn = tool_sarg(c, "function");
	struct buf u = BUF_INIT, re = BUF_INIT;
	json_t *t = NULL, *h = NULL, *s = NULL, *row = NULL, *r;
	char tv[48], tv2[48], tp[16], lim[24];
	size_t i;
	int rc;

	if (!tool_range_and_type(c, &rc))
		return rc;
	(void)buf_addstr(&re, "^");
	tool_regex_escape(&re, fn);
	(void)buf_addstr(&re, "$");
	tool_url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "search", re.p);
	(void)mcp_url_arg(&u, "search_regex", "true");
	(void)mcp_url_arg(&u, "limit", "5");
	t = tool_api(c, u.p);
	if (!t)
		goto out;
	tool_header(c);
	json_array_foreach(json_object_get(t, "rows"), i, r) if (!strcmp(tool_jstr(r, "name"), fn))
		row = r;
	if (!row) {
		mcp_text_line(&c->out, "Function '%s' has no samples in this selection.", fn);
		tool_suggest(c, fn);
		goto out;
	}
	mcp_text_line(&c->out, "Function %s: total %s (%s of all), self %s", fn,
		      tool_val(c, tool_jnum(row, "total"), tv, sizeof(tv)),
		      mcp_fmt_pct(tool_jnum(row, "total"), tool_jnum(t, "total"), tp, sizeof(tp)),
		      tool_val(c, tool_jnum(row, "self"), tv2, sizeof(tv2)));

	/* Its lines (the source view: DWARF or the profile's lines, per build). */
	tool_url_common(c, &u, "/api/v1/source", true);
	(void)mcp_url_arg(&u, "function", fn);
	snprintf(lim, sizeof(lim), "%" PRId64, tool_iarg(c, "limit", 5));
	(void)mcp_url_arg(&u, "limit", lim);
	s = tool_api(c, u.p);
	if (!s) {
		c->failed = false; /* the table part stands on its own */
		c->msg[0] = '\0';
	}
	json_t *hot = s ? json_array_get(json_object_get(s, "lines"), 0) : NULL;

	/* Where the code is: the hottest line, else what the table knows (file, build ID, binary). */
	const char *file = tool_jstr(row, "file"), *bid = tool_jstr(row, "build_id");
	const char *mapping = tool_jstr(row, "mapping");
	double line = tool_jnum(row, "line");
	bool known = *file || *bid || *mapping;

	if (hot && *tool_jstr(hot, "file")) {
		file = tool_jstr(hot, "file");
		line = tool_jnum(hot, "line");
		known = true;
	}
	if (*file && line > 0)
		mcp_text_line(&c->out, "Source: %s:%.0f", file, line);
	else if (*file)
		mcp_text_line(&c->out, "Source: %s", file);
	if (*mapping)
		mcp_text_line(&c->out, "Binary: %s", mapping);
	if (*bid)
		mcp_text_line(&c->out, "Build ID: %s", bid);
	if (s && known)
		source_lines_text(c, s);

	/* What the name itself says: unsymbolized frames are "module+0xaddr" or "[module]". */
	const char *plus = strstr(fn, "+0x");
	size_t fl = strlen(fn);

	if (plus && plus != fn && strspn(plus + 3, "0123456789abcdefABCDEF") == strlen(plus + 3)) {
		mcp_text_line(
			&c->out,
			"This frame is unsymbolized: binary '%.*s' at address %s (an ELF "
			"virtual address), no function name or source line is known. Upload "
			"the binary's debug info (profd debuginfo upload FILE) and it will be "
			"named, old data too.",
			(int)(plus - fn), fn, plus + 1);
		known = true;
	} else if (fl > 2 && fn[0] == '[' && fn[fl - 1] == ']') {
		mcp_text_line(&c->out,
			      "This is pprof's module-level row for the unsymbolized frames of "
			      "binary %s: no function name or source line is known. Upload debug "
			      "info (profd debuginfo upload FILE) to name them.",
			      fn);
		known = true;
	}
	if (!known)
		mcp_text_line(
			&c->out,
			"Source location: unknown. Neither the profile nor the symbolizer gave "
			"a source file, line or binary for '%s' (the profiler sent the name "
			"only).",
			fn);

	if (*bid || *file)
		goto out; /* the row itself says where the code is */
	/* The binaries of the selection, from the stack health view (build IDs, symbol status). */
	tool_url_common(c, &u, "/api/v1/health/symbols", true);
	h = tool_api(c, u.p);
	if (!h) {
		c->failed = false; /* the table part stands on its own */
		c->msg[0] = '\0';
		goto out;
	}
	json_t *bins = json_object_get(h, "binaries");
	if (json_array_size(bins)) {
		mcp_text_line(&c->out,
			      "Native binaries in this selection that needed the symbolizer "
			      "(any of them may hold %s; the API does not say which):",
			      fn);
		json_array_foreach(bins, i, r)
		{
			if (i == 10) {
				mcp_text_line(&c->out, "(%zu more binaries)",
					      json_array_size(bins) - 10);
				break;
			}
			mcp_text_line(&c->out, "- %s build_id %s: %s", tool_jstr(r, "path"),
				      *tool_jstr(r, "build_id") ? tool_jstr(r, "build_id")
								: "(none)",
				      tool_jstr(r, "status"));
		}
	} else {
		mcp_text_line(&c->out, "No native binary of this selection needed the symbolizer: "
				       "its frames were named by the profiler that sent them (so "
				       "no build ID is recorded for them).");
	}
out:
	tool_make_link(c, fn);
	buf_release(&u);
	buf_release(&re);
	json_decref(t);
	json_decref(h);
	json_decref(s);
	return 0;
}
