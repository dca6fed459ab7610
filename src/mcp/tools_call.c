// SPDX-License-Identifier: Apache-2.0
/*
 * tools_call.c - one MCP tool call: its arguments (checked against the
 * schema), the time range and profile type, the query API requests made
 * through the backend, and the header and explorer link of its text.
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

int tool_bad_arg(struct call *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

void tool_fail(struct call *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return; /* the first reason is the precise one */
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	c->failed = true;
}

const char *tool_sarg(const struct call *c, const char *name)
{
	return json_string_value(json_object_get(c->args, name));
}

int64_t tool_iarg(const struct call *c, const char *name, int64_t def)
{
	json_t *v = json_object_get(c->args, name);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return def;
}

double tool_narg(const struct call *c, const char *name, double def)
{
	json_t *v = json_object_get(c->args, name);

	return json_is_number(v) ? json_number_value(v) : def;
}

bool tool_barg(const struct call *c, const char *name, bool def)
{
	json_t *v = json_object_get(c->args, name);

	return json_is_boolean(v) ? json_is_true(v) : def;
}

/* A time argument as text (integers are unix ms), or NULL. */
const char *tool_targ(const struct call *c, const char *name, char *tmp, size_t n)
{
	json_t *v = json_object_get(c->args, name);

	if (json_is_string(v))
		return json_string_value(v);
	if (json_is_integer(v)) {
		snprintf(tmp, n, "%" PRId64, (int64_t)json_integer_value(v));
		return tmp;
	}
	return NULL;
}

/* Check @args against the tool's schema. 0 or -EINVAL with c->msg. */
int tool_check_args(struct call *c)
{
	const struct tool_spec *t = c->tool;
	const char *key;
	json_t *v;
	void *it;

	/* A null argument is an absent one (clients fill unset fields with null). */
	json_object_foreach_safe(c->args, it, key, v)
	{
		if (json_is_null(v))
			json_object_del(c->args, key);
	}
	json_object_foreach(c->args, key, v)
	{
		const struct arg_spec *a = NULL;

		for (size_t i = 0; i < t->nargs; i++)
			if (!strcmp(t->args[i].name, key))
				a = &t->args[i];
		if (!a) {
			char names[1024] = "";
			size_t n = 0;

			for (size_t i = 0; i < t->nargs && n < sizeof(names); i++)
				n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s",
						      i ? ", " : "", t->args[i].name);
			return tool_bad_arg(c,
					    "%s: unknown argument '%.100s'; the arguments are: %s",
					    t->name, key, names);
		}
		switch (a->kind) {
		case A_STR:
		case A_TIME:
			if (json_is_integer(v) && a->kind == A_TIME)
				break;
			if (!json_is_string(v))
				return tool_bad_arg(
					c, "%s: argument '%s' must be a string%s", t->name, key,
					a->kind == A_TIME ? " or unix milliseconds" : "");
			if (json_string_length(v) > MCP_MAX_ARG_LEN)
				return tool_bad_arg(c, "%s: argument '%s' is longer than %d bytes",
						    t->name, key, MCP_MAX_ARG_LEN);
			if (memchr(json_string_value(v), '\0', json_string_length(v)))
				return tool_bad_arg(c, "%s: argument '%s' contains a NUL character",
						    t->name, key);
			if (a->values) {
				bool ok = false;

				for (const char *const *p = a->values; *p; p++)
					ok |= !strcmp(*p, json_string_value(v));
				if (!ok)
					return tool_bad_arg(
						c, "%s: argument '%s' must be one of %s%s%s",
						t->name, key, a->values[0],
						a->values[1] ? " or " : "",
						a->values[1] ? a->values[1] : "");
			}
			if (a->required && !json_string_length(v))
				return tool_bad_arg(c, "%s: argument '%s' must not be empty",
						    t->name, key);
			break;
		case A_INT: {
			double d = json_number_value(v);

			if (!json_is_number(v) || d != floor(d))
				return tool_bad_arg(c, "%s: argument '%s' must be an integer",
						    t->name, key);
			if (d < a->min || d > a->max)
				return tool_bad_arg(
					c, "%s: argument '%s' must be between %.0f and %.0f",
					t->name, key, a->min, a->max);
			break;
		}
		case A_NUM: {
			double d = json_number_value(v);

			if (!json_is_number(v) || !isfinite(d))
				return tool_bad_arg(c, "%s: argument '%s' must be a number",
						    t->name, key);
			if (d < a->min || d > a->max)
				return tool_bad_arg(c,
						    "%s: argument '%s' must be between %g and %g",
						    t->name, key, a->min, a->max);
			break;
		}
		case A_BOOL:
			if (!json_is_boolean(v))
				return tool_bad_arg(c, "%s: argument '%s' must be true or false",
						    t->name, key);
			break;
		}
	}
	for (size_t i = 0; i < t->nargs; i++)
		if (t->args[i].required && !json_object_get(c->args, t->args[i].name))
			return tool_bad_arg(c, "%s: missing required argument '%s'", t->name,
					    t->args[i].name);
	return 0;
}

/* --- time range and type ------------------------------------------------------------------ */

static const struct {
	const char *name;
	int64_t ms;
} presets[] = { { "5m", 300000 },
		{ "15m", 900000 },
		{ "1h", 3600000 },
		{ "6h", 21600000 },
		{ "24h", 86400000 } };

/*
 * Resolve the time arguments @fk/@tk (defaults: [*@from_def, *@to_def]
 * when not NULL, else the last hour) into inclusive unix ms. 0 or -EINVAL.
 */
int tool_resolve_range(struct call *c, const char *fk, const char *tk, const int64_t *def,
		       int64_t *from, int64_t *to)
{
	char t1[32], t2[32], a[64], b[64];
	const char *fs = tool_targ(c, fk, t1, sizeof(t1)), *ts = tool_targ(c, tk, t2, sizeof(t2));

	*to = def ? def[1] : c->now_ms;
	*from = def ? def[0] : c->now_ms - DEFAULT_RANGE_MS;
	if (ts && mcp_parse_time(ts, c->now_ms, to))
		return tool_bad_arg(
			c,
			"argument '%s': expected unix milliseconds, RFC 3339 (2024-05-01T12:00:00Z), "
			"'now' or 'now-<duration>' such as now-15m, got '%.100s'",
			tk, ts);
	if (fs && mcp_parse_time(fs, c->now_ms, from))
		return tool_bad_arg(
			c,
			"argument '%s': expected unix milliseconds, RFC 3339 (2024-05-01T12:00:00Z), "
			"'now' or 'now-<duration>' such as now-15m, got '%.100s'",
			fk, fs);
	/* bounds first: the span below must not overflow */
	if (*from < 0 || *from > MAX_TIME_MS || *to < 0 || *to > MAX_TIME_MS)
		return tool_bad_arg(c, "the time range %s .. %s is out of bounds (1970 to 9999)",
				    mcp_fmt_time(*from, a, sizeof(a)),
				    mcp_fmt_time(*to, b, sizeof(b)));
	if (*from > *to)
		return tool_bad_arg(c, "argument '%s' (%s) is after '%s' (%s)", fk,
				    mcp_fmt_time(*from, a, sizeof(a)), tk,
				    mcp_fmt_time(*to, b, sizeof(b)));
	if (*to - *from > MCP_MAX_RANGE_MS)
		return tool_bad_arg(
			c,
			"the time range %s .. %s spans %s, more than the limit of 31 days: "
			"narrow '%s'/'%s'",
			mcp_fmt_time(*from, a, sizeof(a)), mcp_fmt_time(*to, b, sizeof(b)),
			mcp_fmt_span(*to - *from, t1, sizeof(t1)), fk, tk);
	return 0;
}

/* The common range (from/to) and, when the range is "the last X", the explorer's preset. */
int tool_common_range(struct call *c)
{
	int rc = tool_resolve_range(c, "from", "to", NULL, &c->from, &c->to);
	char t[32];
	const char *fs = tool_targ(c, "from", t, sizeof(t));
	const char *ts = tool_sarg(c, "to");

	if (rc)
		return rc;
	if ((!ts || !strcmp(ts, "now")) && c->to == c->now_ms)
		for (size_t i = 0; i < PROF_ARRAY_SIZE(presets); i++)
			if ((!fs && presets[i].ms == DEFAULT_RANGE_MS) ||
			    (fs && c->to - c->from == presets[i].ms && !strncmp(fs, "now-", 4)))
				snprintf(c->range_preset, sizeof(c->range_preset), "%s",
					 presets[i].name);
	return 0;
}

/* --- the query API -------------------------------------------------------------------------- */

void tool_url_time(struct buf *u, const char *key, int64_t ms)
{
	char v[32];

	snprintf(v, sizeof(v), "%" PRId64, ms);
	(void)mcp_url_arg(u, key, v);
}

void tool_url_fold(struct call *c, struct buf *u)
{
	const char *f = tool_sarg(c, "fold");

	c->fold = f && *f ? f : "recursion";
	(void)mcp_url_arg(u, "fold", c->fold);
}

/* "/api/v1/VIEW" with type, query, from, to (and hide when given). */
void tool_url_common(struct call *c, struct buf *u, const char *path, bool with_type)
{
	buf_reset(u);
	(void)buf_addstr(u, path);
	if (with_type && c->type[0])
		(void)mcp_url_arg(u, "type", c->type);
	(void)mcp_url_arg(u, "query", c->query[0] ? c->query : NULL);
	tool_url_time(u, "from", c->from);
	tool_url_time(u, "to", c->to);
	(void)mcp_url_arg(u, "hide", tool_sarg(c, "hide"));
	(void)mcp_url_arg(u, "trace_id", tool_sarg(c, "trace_id"));
	(void)mcp_url_arg(u, "span_id", tool_sarg(c, "span_id"));
}

/*
 * GET @url (path + query) through the backend into @body (capped at
 * MCP_MAX_ANSWER): 0 for a 200 answer, else -1 after tool_fail() with the
 * reason (the API's own message for a 4xx).
 */
int tool_api_body(struct call *c, const char *url, struct buf *body)
{
	int status = 0, rc;

	VEC_PUSH(&c->queries, xstrdup(url));
	buf_init(body, MCP_MAX_ANSWER);
	rc = c->be->get(c->be->ctx, url, body, &status);
	if (rc == -PROF_ETOOBIG) {
		tool_fail(
			c,
			"the query API's answer to %s is larger than %zu MiB: narrow the selection "
			"or the time range",
			url, MCP_MAX_ANSWER >> 20);
	} else if (rc) {
		tool_fail(c, "cannot reach the profd query API for %s: %s", url,
			  body->len ? body->p : prof_strerror(rc));
	} else if (status != 200) {
		json_t *e = json_loadb(body->p ? body->p : "", body->len, 0, NULL);
		const char *m = json_string_value(json_object_get(e, "error"));

		tool_fail(c, "the query API answered HTTP %d to %s: %.600s", status, url,
			  m ? m : (body->len ? body->p : "(no message)"));
		json_decref(e);
	} else {
		return 0;
	}
	return -1;
}

/*
 * GET @url: the parsed JSON answer (new reference), or NULL after tool_fail()
 * with the reason; c->too_deep tells a JSON nested past jansson's limit.
 * "\u0000" is accepted: the API writes names and source text as the bytes
 * ingested, so a binary file's line or a name may hold one (the string
 * reads as C text up to it).
 */
json_t *tool_api(struct call *c, const char *url)
{
	struct buf body;
	json_error_t jerr;
	json_t *j = NULL;

	if (!tool_api_body(c, url, &body)) {
		j = json_loadb(body.p ? body.p : "", body.len, JSON_ALLOW_NUL, &jerr);
		if (!j && strstr(jerr.text, "depth")) {
			c->too_deep = true;
			tool_fail(
				c,
				"the answer to %s nests deeper than the JSON reader allows (a stack "
				"of more than ~1000 frames): hide runtime frames (hide), filter frames "
				"out, or use top_functions / flamegraph_summary",
				url);
		} else if (!j) {
			tool_fail(c, "the answer to %s is not valid JSON: %s", url, jerr.text);
		}
	}
	buf_release(&body);
	tool_take_nearest(c, j);
	return j;
}

void tool_take_nearest(struct call *c, json_t *j)
{
	json_t *n = json_object_get(j, "nearest"), *b, *a;
	struct tool_nearest *o = &c->near;

	b = json_object_get(n, "before_ms");
	a = json_object_get(n, "after_ms");
	if (json_is_integer(b) && (!o->have_before || json_integer_value(b) > o->before_ms)) {
		o->have_before = true;
		o->before_ms = json_integer_value(b);
	}
	if (json_is_integer(a) && (!o->have_after || json_integer_value(a) < o->after_ms)) {
		o->have_after = true;
		o->after_ms = json_integer_value(a);
	}
}

/* @ms as "40 min", "30.0 h" or "12.5 days". */
static void fmt_gap(int64_t ms, char *out, size_t n)
{
	double h = (double)ms / 3.6e6;

	if (h < 1)
		snprintf(out, n, "%.0f min", h * 60);
	else if (h < 48)
		snprintf(out, n, "%.1f h", h);
	else
		snprintf(out, n, "%.1f days", h / 24);
}

/* "at T (N h before the range)" and/or "... after it" into @out; false when neither. */
static bool nearest_text(const struct tool_nearest *n, int64_t from, int64_t to, const char *range,
			 char *out, size_t outsz)
{
	char t1[64], t2[64], g1[32], g2[32];

	if (n->have_before) {
		mcp_fmt_time(n->before_ms, t1, sizeof(t1));
		fmt_gap(from - n->before_ms, g1, sizeof(g1));
	}
	if (n->have_after) {
		mcp_fmt_time(n->after_ms, t2, sizeof(t2));
		fmt_gap(n->after_ms - to, g2, sizeof(g2));
	}
	if (n->have_before && n->have_after)
		snprintf(out, outsz, "%s (%s before %s) and %s (%s after it)", t1, g1, range, t2,
			 g2);
	else if (n->have_before)
		snprintf(out, outsz, "%s (%s before %s)", t1, g1, range);
	else if (n->have_after)
		snprintf(out, outsz, "%s (%s after %s)", t2, g2, range);
	return n->have_before || n->have_after;
}

void tool_nearest_note(struct call *c)
{
	char t[256];

	if (nearest_text(&c->near, c->from, c->to, "the range", t, sizeof(t)))
		mcp_text_tail(&c->out, "No samples in range; nearest data for this selector at %s.",
			      t);
}

void tool_nearest_side(struct call *c, const char *who, const struct tool_nearest *n, int64_t from,
		       int64_t to)
{
	char t[256];

	if (nearest_text(n, from, to, "its range", t, sizeof(t)))
		mcp_text_line(&c->out,
			      "%s: no samples in range; nearest data for its selector at %s.", who,
			      t);
}

double tool_jnum(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

const char *tool_jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

int tool_cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The unit of @type (its sample unit), "" when it is not a type id. */
static void set_type(struct call *c, const char *type)
{
	struct query_type_id id;

	snprintf(c->type, sizeof(c->type), "%s", type);
	c->unit[0] = '\0';
	if (query_type_split(type, &id))
		snprintf(c->unit, sizeof(c->unit), "%s", id.sample_unit);
}

/* The type argument, or the type written before the selector in query ("type{...}"). */
void tool_split_type(struct call *c)
{
	const char *t = tool_sarg(c, "type"), *q = tool_sarg(c, "query");
	const char *brace = q ? strchr(q, '{') : NULL;

	snprintf(c->query, sizeof(c->query), "%s", q ? q : "");
	if (t) {
		set_type(c, t);
	} else if (q && brace && brace != q) {
		/* "process_cpu:...{service.name="x"}": the API's own shorthand */
		char tmp[sizeof(c->type)];
		size_t n = PROF_MIN((size_t)(brace - q), sizeof(tmp) - 1);

		memcpy(tmp, q, n);
		tmp[n] = '\0';
		while (n && tmp[n - 1] == ' ')
			tmp[--n] = '\0';
		set_type(c, tmp);
		snprintf(c->query, sizeof(c->query), "%s", brace);
	}
}

/* Unix ms past which no data is looked for: the year 2255, within the API's range. */
#define MCP_ALL_TIME_MS 9000000000000LL

/*
 * Set c->type to the default type (CPU first) among those with data in
 * [@from, @to]. False when there is none or the API failed (c->failed).
 */
static bool pick_type(struct call *c, int64_t from, int64_t to)
{
	struct buf u = BUF_INIT;
	json_t *types, *v;
	size_t i;
	const char *best = NULL;

	(void)buf_addstr(&u, "/api/v1/profile-types");
	tool_url_time(&u, "from", from);
	tool_url_time(&u, "to", to);
	types = tool_api(c, u.p);
	buf_release(&u);
	if (!types)
		return false;
	VEC(const char *) names = { 0 };
	json_array_foreach(types, i, v) if (json_is_string(v))
		VEC_PUSH(&names, json_string_value(v));
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), tool_cmp_str);
	for (i = 0; i < names.n && !best; i++)
		if (!strcmp(names.v[i], CPU_TYPE))
			best = names.v[i];
	for (i = 0; i < names.n && !best; i++) {
		struct query_type_id id;

		if (query_type_split(names.v[i], &id) && !strcmp(id.sample_type, "cpu") &&
		    !strcmp(id.sample_unit, "nanoseconds"))
			best = names.v[i];
	}
	if (!best && names.n)
		best = names.v[0];
	if (best) {
		set_type(c, best);
		c->type_defaulted = true;
	}
	VEC_FREE(&names);
	json_decref(types);
	return best != NULL;
}

/*
 * The type to query: split_type's, or the default (CPU) among the types
 * with data in [@from, @to], else among all the store's types (the view's
 * empty answer then says where the data is). Returns false when there is
 * nothing to query (no data at all: a line says so, or the API failed:
 * c->failed).
 */
bool tool_resolve_type(struct call *c, int64_t from, int64_t to)
{
	char a[64], b[64];

	tool_split_type(c);
	if (c->type[0])
		return true;
	/* None in range: the default among all the store's types, so that the view's
	 * empty answer carries where this selection's data is (tool_nearest_note). */
	if (!pick_type(c, from, to) && !c->failed && !pick_type(c, 0, MCP_ALL_TIME_MS) &&
	    !c->failed)
		mcp_text_line(&c->out,
			      "No profiles between %s and %s in this dataset: nothing to show. "
			      "Widen from/to, or check the dataset.",
			      mcp_fmt_time(from, a, sizeof(a)), mcp_fmt_time(to, b, sizeof(b)));
	return c->type[0] != '\0';
}

/*
 * The common start of a tool over one selection: the time range, then the
 * profile type (asked of the server when not given). False when the tool
 * stops there: *@rc is the error (a bad range), or 0 with the answer
 * already written (no type to query).
 */
bool tool_range_and_type(struct call *c, int *rc)
{
	*rc = tool_common_range(c);
	return !*rc && tool_resolve_type(c, c->from, c->to);
}

const char *tool_unit_words(const char *unit)
{
	if (!strcmp(unit, "nanoseconds"))
		return "nanoseconds, shown as durations";
	if (!strcmp(unit, "bytes"))
		return "bytes, shown as B/KiB/MiB/GiB";
	if (!strcmp(unit, "count") || !*unit)
		return "counts";
	return unit;
}

/* "Type: ... (values in ...)" and "Selection: ..., FROM .. TO (SPAN)". */
void tool_header(struct call *c)
{
	char a[64], b[64], s[32];

	mcp_text_line(&c->out, "Profile type: %s (values in %s)%s", c->type,
		      tool_unit_words(c->unit),
		      c->type_defaulted ? "; chosen by default, pass 'type' to pick another" : "");
	mcp_text_line(&c->out, "Selection: %s, %s .. %s (%s)", c->query[0] ? c->query : "{}",
		      mcp_fmt_time(c->from, a, sizeof(a)), mcp_fmt_time(c->to, b, sizeof(b)),
		      mcp_fmt_span(c->to - c->from + 1, s, sizeof(s)));
	tool_fold_note(c);
}

void tool_fold_note(struct call *c)
{
	if (!c->fold)
		return;
	if (!strcmp(c->fold, "none"))
		mcp_text_line(&c->out, "Frames: not folded (fold=none).");
	else
		mcp_text_line(&c->out,
			      "Frames: fold=%s (consecutive frames of one %s are one frame; "
			      "fold=none keeps every frame).",
			      c->fold,
			      strstr(c->fold, "library")
				      ? (strstr(c->fold, "recursion") ? "function or library"
								      : "shared library")
				      : "function");
}

/* The explorer link for the common selection (ui/js/state.js: type, query, range, search). */
void tool_make_link(struct call *c, const char *search)
{
	struct buf u = BUF_INIT;

	(void)buf_addstr(&u, c->be->base_url ? c->be->base_url : "");
	(void)buf_addstr(&u, "/");
	(void)mcp_url_arg(&u, "type", c->type[0] ? c->type : NULL);
	(void)mcp_url_arg(&u, "query", c->query[0] ? c->query : NULL);
	(void)mcp_url_arg(&u, "trace", tool_sarg(c, "trace_id"));
	(void)mcp_url_arg(&u, "span", tool_sarg(c, "span_id"));
	(void)mcp_url_arg(&u, "range", c->range_preset[0] ? c->range_preset : NULL);
	tool_url_time(&u, "from", c->from);
	tool_url_time(&u, "to", c->to);
	(void)mcp_url_arg(&u, "search", search);
	snprintf(c->link, sizeof(c->link), "%s", u.p);
	buf_release(&u);
}
