// SPDX-License-Identifier: Apache-2.0
/*
 * tools.c - the MCP tools (tools.h): argument schemas and checks, the
 * query API requests each tool makes, and the text each writes.
 *
 * A call goes: check the arguments against the tool's schema (-EINVAL,
 * a JSON-RPC -32602, naming the argument) -> resolve the time range
 * (capped at 31 days) and the profile type (default: the CPU type) ->
 * GET the API views it needs through the backend -> write text within
 * the max_tokens budget -> close with the API requests and an explorer
 * link. A failure after the arguments were accepted (the API said 4xx,
 * the server is down) is a result with isError and the reason.
 *
 * Trees (flame graph, sandwich, diff) are walked with explicit stacks,
 * never recursion; jansson refuses JSON nested deeper than 2048 levels,
 * which a flame graph of a stack deeper than ~1000 frames is: such an
 * answer is reported as a tool error suggesting frame_filter or hide.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/parse.h"
#include "mcp/text.h"
#include "mcp/tools.h"
#include "query/change.h"
#include "query/units.h"

#include <math.h>

#define CPU_TYPE	    "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
#define DEFAULT_RANGE_MS    (60 * 60 * 1000LL)
#define DEFAULT_LIMIT	    20
#define COMPARE_ROWS	    2000 /* functions fetched per side for compare / explain_change */
#define TREE_MAX_NODES	    2000 /* max_nodes of the flame graph / sandwich / diff requests */
#define MAX_DEPTH	    64	 /* deepest tree level printed */
#define INDENT_CAP	    24	 /* indentation stops growing here */
#define PATH_SHOW	    12	 /* frames of a call path printed before eliding the middle */
#define MAX_SERIES_STEPS    1000
#define DEFAULT_SERIES_ROWS 60
#define MAX_TIME_MS	    253402300799999LL /* 9999-12-31T23:59:59.999Z */

/* --- argument schemas ---------------------------------------------------------------------- */

enum arg_kind { A_STR, A_INT, A_NUM, A_BOOL, A_TIME };

struct arg_spec {
	const char *name;
	enum arg_kind kind;
	bool required;
	double min, max;	   /* A_INT, A_NUM */
	const char *const *values; /* A_STR: the allowed values, NULL-terminated, or NULL */
	const char *desc;
};

static const char *const sorts[] = { "self", "total", NULL };
static const char *const modes[] = { "total", "self", NULL };

/*
 * The arguments many tools share are described once, here, and sent once
 * per session (the initialize result's instructions), not in every tool's
 * schema: that text was most of a 22 k character tool list.
 */
const char mcp_tools_shared_args[] =
	"Arguments shared by the tools (their schemas list them without text): "
	"type = profile type id name:sample_type:sample_unit:period_type:period_unit, e.g. " CPU_TYPE
	" (list_profile_types; default: the CPU type when it has data, else the first "
	"type with data). "
	"query = series selector, PromQL style on OpenTelemetry attribute names, e.g. "
	"{service.name=\"api\", k8s.pod.name=~\"api-.*\"} (=, !=, =~, !~; default {}). "
	"from / to = time range: unix ms, RFC 3339, 'now' or 'now-15m' / 'now-6h' / 'now-7d' "
	"(default the last hour, to inclusive, at most 31 days). "
	"hide = comma list of runtime frame presets whose cost goes to the caller (go, jvm, "
	"libc, kernel, python, ruby, php, node). "
	"max_tokens = output budget, about 4 characters each (default 2000; a longer output is "
	"cut and says so). "
	"function = a frame name exactly as the profiles show it (top_functions, find_function). "
	"stack_filter = PCRE2 regex: only samples with a matching frame. "
	"limit = rows listed (default 20; compare 10 per direction). "
	"min_share / max_depth = tree nodes below the share (0..1) or deeper are summarized. "
	"links = true to end with the query API requests made and an explorer link (default "
	"false). "
	"a_query, a_from, a_to / b_query, b_from, b_to (compare, explain_change) = side A (the "
	"baseline) and side B: B defaults to query/from/to, A to the same selector in the window "
	"of the same length just before B, or to B's range when a_query differs from B's.";

#define ARG_TYPE                                       \
	{                                              \
		"type", A_STR, false, 0, 0, NULL, NULL \
	}
#define ARG_QUERY                                       \
	{                                               \
		"query", A_STR, false, 0, 0, NULL, NULL \
	}
#define ARG_FROM                                        \
	{                                               \
		"from", A_TIME, false, 0, 0, NULL, NULL \
	}
#define ARG_TO                                        \
	{                                             \
		"to", A_TIME, false, 0, 0, NULL, NULL \
	}
#define ARG_TOKENS                                                                  \
	{ "max_tokens", A_INT, false, MCP_MIN_TOKENS, MCP_MAX_TOKENS, NULL, NULL }, \
	{                                                                           \
		"links", A_BOOL, false, 0, 0, NULL, NULL                            \
	}
#define ARG_FUNCTION                                      \
	{                                                 \
		"function", A_STR, true, 0, 0, NULL, NULL \
	}
#define ARG_HIDE                                       \
	{                                              \
		"hide", A_STR, false, 0, 0, NULL, NULL \
	}
#define ARG_AB                                                 \
	{ "a_query", A_STR, false, 0, 0, NULL, NULL },         \
		{ "a_from", A_TIME, false, 0, 0, NULL, NULL }, \
		{ "a_to", A_TIME, false, 0, 0, NULL, NULL },   \
		{ "b_query", A_STR, false, 0, 0, NULL, NULL }, \
		{ "b_from", A_TIME, false, 0, 0, NULL, NULL }, \
	{                                                      \
		"b_to", A_TIME, false, 0, 0, NULL, NULL        \
	}

struct call;

struct tool_spec {
	const char *name, *title, *desc;
	const struct arg_spec *args;
	size_t nargs;
	int (*run)(struct call *c);
};

/* --- one call ------------------------------------------------------------------------------- */

struct call {
	const struct mcp_backend *be;
	const struct tool_spec *tool;
	json_t *args; /* borrowed; an object */
	int64_t now_ms;
	struct mcp_text out;
	VEC(char *) queries;   /* the API requests made (path + query), owned */
	char link[8192];       /* the explorer link, or "" */
	const char *link_note; /* what the link shows when not the plain selection, static */
	bool failed;	       /* the tool ran but failed: isError */
	bool too_deep;	       /* ... because a JSON answer nested too deep */
	char msg[1024];	       /* why (failed), or the -32602 reason */
	/* Resolved common arguments. */
	char type[512];
	char unit[64];
	bool type_defaulted;
	char query[MCP_MAX_ARG_LEN + 1];
	int64_t from, to; /* ms, inclusive */
	char range_preset[8];
};

static int bad_arg(struct call *c, const char *fmt, ...) PROF_PRINTF(2, 3);
static int bad_arg(struct call *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static void fail(struct call *c, const char *fmt, ...) PROF_PRINTF(2, 3);
static void fail(struct call *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed)
		return; /* the first reason is the precise one */
	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof(c->msg), fmt, ap);
	va_end(ap);
	c->failed = true;
}

static const char *sarg(const struct call *c, const char *name)
{
	return json_string_value(json_object_get(c->args, name));
}

static int64_t iarg(const struct call *c, const char *name, int64_t def)
{
	json_t *v = json_object_get(c->args, name);

	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_real(v))
		return (int64_t)json_real_value(v);
	return def;
}

static double narg(const struct call *c, const char *name, double def)
{
	json_t *v = json_object_get(c->args, name);

	return json_is_number(v) ? json_number_value(v) : def;
}

static bool barg(const struct call *c, const char *name, bool def)
{
	json_t *v = json_object_get(c->args, name);

	return json_is_boolean(v) ? json_is_true(v) : def;
}

/* A time argument as text (integers are unix ms), or NULL. */
static const char *targ(const struct call *c, const char *name, char *tmp, size_t n)
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
static int check_args(struct call *c)
{
	const struct tool_spec *t = c->tool;
	const char *key;
	json_t *v;

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
			return bad_arg(c, "%s: unknown argument '%.100s'; the arguments are: %s",
				       t->name, key, names);
		}
		switch (a->kind) {
		case A_STR:
		case A_TIME:
			if (json_is_integer(v) && a->kind == A_TIME)
				break;
			if (!json_is_string(v))
				return bad_arg(c, "%s: argument '%s' must be a string%s", t->name,
					       key,
					       a->kind == A_TIME ? " or unix milliseconds" : "");
			if (json_string_length(v) > MCP_MAX_ARG_LEN)
				return bad_arg(c, "%s: argument '%s' is longer than %d bytes",
					       t->name, key, MCP_MAX_ARG_LEN);
			if (memchr(json_string_value(v), '\0', json_string_length(v)))
				return bad_arg(c, "%s: argument '%s' contains a NUL character",
					       t->name, key);
			if (a->values) {
				bool ok = false;

				for (const char *const *p = a->values; *p; p++)
					ok |= !strcmp(*p, json_string_value(v));
				if (!ok)
					return bad_arg(c, "%s: argument '%s' must be one of %s%s%s",
						       t->name, key, a->values[0],
						       a->values[1] ? " or " : "",
						       a->values[1] ? a->values[1] : "");
			}
			if (a->required && !json_string_length(v))
				return bad_arg(c, "%s: argument '%s' must not be empty", t->name,
					       key);
			break;
		case A_INT: {
			double d = json_number_value(v);

			if (!json_is_number(v) || d != floor(d))
				return bad_arg(c, "%s: argument '%s' must be an integer", t->name,
					       key);
			if (d < a->min || d > a->max)
				return bad_arg(c, "%s: argument '%s' must be between %.0f and %.0f",
					       t->name, key, a->min, a->max);
			break;
		}
		case A_NUM: {
			double d = json_number_value(v);

			if (!json_is_number(v) || !isfinite(d))
				return bad_arg(c, "%s: argument '%s' must be a number", t->name,
					       key);
			if (d < a->min || d > a->max)
				return bad_arg(c, "%s: argument '%s' must be between %g and %g",
					       t->name, key, a->min, a->max);
			break;
		}
		case A_BOOL:
			if (!json_is_boolean(v))
				return bad_arg(c, "%s: argument '%s' must be true or false",
					       t->name, key);
			break;
		}
	}
	for (size_t i = 0; i < t->nargs; i++)
		if (t->args[i].required && !json_object_get(c->args, t->args[i].name))
			return bad_arg(c, "%s: missing required argument '%s'", t->name,
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
static int resolve_range(struct call *c, const char *fk, const char *tk, const int64_t *def,
			 int64_t *from, int64_t *to)
{
	char t1[32], t2[32], a[64], b[64];
	const char *fs = targ(c, fk, t1, sizeof(t1)), *ts = targ(c, tk, t2, sizeof(t2));

	*to = def ? def[1] : c->now_ms;
	*from = def ? def[0] : c->now_ms - DEFAULT_RANGE_MS;
	if (ts && mcp_parse_time(ts, c->now_ms, to))
		return bad_arg(
			c,
			"argument '%s': expected unix milliseconds, RFC 3339 (2024-05-01T12:00:00Z), "
			"'now' or 'now-<duration>' such as now-15m, got '%.100s'",
			tk, ts);
	if (fs && mcp_parse_time(fs, c->now_ms, from))
		return bad_arg(
			c,
			"argument '%s': expected unix milliseconds, RFC 3339 (2024-05-01T12:00:00Z), "
			"'now' or 'now-<duration>' such as now-15m, got '%.100s'",
			fk, fs);
	/* bounds first: the span below must not overflow */
	if (*from < 0 || *from > MAX_TIME_MS || *to < 0 || *to > MAX_TIME_MS)
		return bad_arg(c, "the time range %s .. %s is out of bounds (1970 to 9999)",
			       mcp_fmt_time(*from, a, sizeof(a)), mcp_fmt_time(*to, b, sizeof(b)));
	if (*from > *to)
		return bad_arg(c, "argument '%s' (%s) is after '%s' (%s)", fk,
			       mcp_fmt_time(*from, a, sizeof(a)), tk,
			       mcp_fmt_time(*to, b, sizeof(b)));
	if (*to - *from > MCP_MAX_RANGE_MS)
		return bad_arg(c,
			       "the time range %s .. %s spans %s, more than the limit of 31 days: "
			       "narrow '%s'/'%s'",
			       mcp_fmt_time(*from, a, sizeof(a)), mcp_fmt_time(*to, b, sizeof(b)),
			       mcp_fmt_span(*to - *from, t1, sizeof(t1)), fk, tk);
	return 0;
}

/* The common range (from/to) and, when the range is "the last X", the explorer's preset. */
static int common_range(struct call *c)
{
	int rc = resolve_range(c, "from", "to", NULL, &c->from, &c->to);
	char t[32];
	const char *fs = targ(c, "from", t, sizeof(t));
	const char *ts = sarg(c, "to");

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

static void url_time(struct buf *u, const char *key, int64_t ms)
{
	char v[32];

	snprintf(v, sizeof(v), "%" PRId64, ms);
	(void)mcp_url_arg(u, key, v);
}

/* "/api/v1/VIEW" with type, query, from, to (and hide when given). */
static void url_common(struct call *c, struct buf *u, const char *path, bool with_type)
{
	buf_reset(u);
	(void)buf_addstr(u, path);
	if (with_type && c->type[0])
		(void)mcp_url_arg(u, "type", c->type);
	(void)mcp_url_arg(u, "query", c->query[0] ? c->query : NULL);
	url_time(u, "from", c->from);
	url_time(u, "to", c->to);
	(void)mcp_url_arg(u, "hide", sarg(c, "hide"));
}

/*
 * GET @url (path + query) through the backend into @body (capped at
 * MCP_MAX_ANSWER): 0 for a 200 answer, else -1 after fail() with the
 * reason (the API's own message for a 4xx).
 */
static int api_body(struct call *c, const char *url, struct buf *body)
{
	int status = 0, rc;

	VEC_PUSH(&c->queries, xstrdup(url));
	buf_init(body, MCP_MAX_ANSWER);
	rc = c->be->get(c->be->ctx, url, body, &status);
	if (rc == -PROF_ETOOBIG) {
		fail(c,
		     "the query API's answer to %s is larger than %zu MiB: narrow the selection "
		     "or the time range",
		     url, MCP_MAX_ANSWER >> 20);
	} else if (rc) {
		fail(c, "cannot reach the profd query API for %s: %s", url,
		     body->len ? body->p : prof_strerror(rc));
	} else if (status != 200) {
		json_t *e = json_loadb(body->p ? body->p : "", body->len, 0, NULL);
		const char *m = json_string_value(json_object_get(e, "error"));

		fail(c, "the query API answered HTTP %d to %s: %.600s", status, url,
		     m ? m : (body->len ? body->p : "(no message)"));
		json_decref(e);
	} else {
		return 0;
	}
	return -1;
}

/*
 * GET @url: the parsed JSON answer (new reference), or NULL after fail()
 * with the reason; c->too_deep tells a JSON nested past jansson's limit.
 */
static json_t *api(struct call *c, const char *url)
{
	struct buf body;
	json_error_t jerr;
	json_t *j = NULL;

	if (!api_body(c, url, &body)) {
		j = json_loadb(body.p ? body.p : "", body.len, 0, &jerr);
		if (!j && strstr(jerr.text, "depth")) {
			c->too_deep = true;
			fail(c,
			     "the answer to %s nests deeper than the JSON reader allows (a stack "
			     "of more than ~1000 frames): hide runtime frames (hide), filter frames "
			     "out, or use top_functions / flamegraph_summary",
			     url);
		} else if (!j) {
			fail(c, "the answer to %s is not valid JSON: %s", url, jerr.text);
		}
	}
	buf_release(&body);
	return j;
}

static double jnum(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static const char *jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "";
}

static int cmp_str(const void *a, const void *b)
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
static void split_type(struct call *c)
{
	const char *t = sarg(c, "type"), *q = sarg(c, "query");
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

/*
 * The type to query: split_type's, or the default (CPU) among the types
 * with data in [@from, @to]. Returns false when there is nothing to query
 * (no data: a line says so, or the API failed: c->failed).
 */
static bool resolve_type(struct call *c, int64_t from, int64_t to)
{
	char a[64], b[64];

	split_type(c);
	if (c->type[0])
		return true;

	struct buf u = BUF_INIT;
	json_t *types, *v;
	size_t i;
	const char *best = NULL;

	(void)buf_addstr(&u, "/api/v1/profile-types");
	url_time(&u, "from", from);
	url_time(&u, "to", to);
	types = api(c, u.p);
	buf_release(&u);
	if (!types)
		return false;
	VEC(const char *) names = { 0 };
	json_array_foreach(types, i, v) if (json_is_string(v))
		VEC_PUSH(&names, json_string_value(v));
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), cmp_str);
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
	} else {
		mcp_text_line(&c->out,
			      "No profiles between %s and %s in this dataset: nothing to show. "
			      "Widen from/to, or check the dataset.",
			      mcp_fmt_time(from, a, sizeof(a)), mcp_fmt_time(to, b, sizeof(b)));
	}
	VEC_FREE(&names);
	json_decref(types);
	return best != NULL;
}

/*
 * The common start of a tool over one selection: the time range, then the
 * profile type (asked of the server when not given). False when the tool
 * stops there: *@rc is the error (a bad range), or 0 with the answer
 * already written (no type to query).
 */
static bool range_and_type(struct call *c, int *rc)
{
	*rc = common_range(c);
	return !*rc && resolve_type(c, c->from, c->to);
}

static const char *unit_words(const char *unit)
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
static void header(struct call *c)
{
	char a[64], b[64], s[32];

	mcp_text_line(&c->out, "Profile type: %s (values in %s)%s", c->type, unit_words(c->unit),
		      c->type_defaulted ? "; chosen by default, pass 'type' to pick another" : "");
	mcp_text_line(&c->out, "Selection: %s, %s .. %s (%s)", c->query[0] ? c->query : "{}",
		      mcp_fmt_time(c->from, a, sizeof(a)), mcp_fmt_time(c->to, b, sizeof(b)),
		      mcp_fmt_span(c->to - c->from + 1, s, sizeof(s)));
}

/* The explorer link for the common selection (ui/js/state.js: type, query, range, search). */
static void make_link(struct call *c, const char *search)
{
	struct buf u = BUF_INIT;

	(void)buf_addstr(&u, c->be->base_url ? c->be->base_url : "");
	(void)buf_addstr(&u, "/");
	(void)mcp_url_arg(&u, "type", c->type[0] ? c->type : NULL);
	(void)mcp_url_arg(&u, "query", c->query[0] ? c->query : NULL);
	(void)mcp_url_arg(&u, "range", c->range_preset[0] ? c->range_preset : NULL);
	url_time(&u, "from", c->from);
	url_time(&u, "to", c->to);
	(void)mcp_url_arg(&u, "search", search);
	snprintf(c->link, sizeof(c->link), "%s", u.p);
	buf_release(&u);
}

/* --- text helpers --------------------------------------------------------------------------- */

static char *val(const struct call *c, double v, char *out, size_t n)
{
	return mcp_fmt_value(c->unit, v, out, n);
}

/* Escape @s for a PCRE2 pattern matching it literally. */
static void regex_escape(struct buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch < 0x80 && !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
				   (ch >= 'A' && ch <= 'Z') || ch == '_'))
			(void)buf_add(b, "\\", 1);
		(void)buf_add(b, s, 1);
	}
}

/* A call path root -> leaf, the middle elided past PATH_SHOW frames. */
static void path_text(const char *const *names, size_t n, char *out, size_t outsz)
{
	size_t w = 0;

	out[0] = '\0';
	for (size_t i = 0; i < n && w < outsz; i++) {
		if (n > PATH_SHOW && i == PATH_SHOW / 2) {
			w += (size_t)snprintf(out + w, outsz - w, " -> ... %zu frames ...",
					      n - PATH_SHOW);
			i = n - PATH_SHOW / 2 - 1;
			continue;
		}
		w += (size_t)snprintf(out + w, outsz - w, "%s%s", i ? " -> " : "", names[i]);
	}
}

/* --- trees ---------------------------------------------------------------------------------- */

struct tree_opts {
	double grand;	   /* shares are of this (the profile's total) */
	double fn_total;   /* > 0: also show the share of this (a function's total) */
	const char *fn;	   /* its name */
	double min_share;  /* children below this share of @grand are summarized */
	int max_depth;	   /* levels printed below the root */
	bool skip_root;	   /* print the root's children as the top level */
	bool no_self;	   /* callers trees: a caller's "self" would mean something else */
	const char *label; /* e.g. "callers" in "... more callers" */
};

struct tree_item {
	json_t *node; /* NULL: a "more" line */
	int depth;
	size_t more_n;
	double more_total;
};

static void tree_line(struct call *c, const struct tree_opts *o, json_t *n, int depth)
{
	char ind[2 * INDENT_CAP + 1], tv[48], sv[48], tp[16], sp[16], fp[16], dl[24] = "";
	int k = PROF_MIN(depth, INDENT_CAP);
	double total = jnum(n, "total"), self = jnum(n, "self");

	memset(ind, ' ', (size_t)(2 * k));
	ind[2 * k] = '\0';
	if (depth > INDENT_CAP)
		snprintf(dl, sizeof(dl), "[depth %d] ", depth);
	val(c, total, tv, sizeof(tv));
	val(c, self, sv, sizeof(sv));
	mcp_fmt_pct(total, o->grand, tp, sizeof(tp));
	mcp_fmt_pct(self, o->grand, sp, sizeof(sp));
	if (json_is_true(json_object_get(n, "other")))
		mcp_text_line(&c->out, "%s%s(other: smaller nodes merged by the API) total %s (%s)",
			      ind, dl, tv, tp);
	else if (o->fn_total > 0 && o->no_self)
		mcp_text_line(&c->out, "%s%s%s  %s (%s of all, %s of %s)", ind, dl, jstr(n, "name"),
			      tv, tp, mcp_fmt_pct(total, o->fn_total, fp, sizeof(fp)), o->fn);
	else if (o->fn_total > 0)
		mcp_text_line(&c->out, "%s%s%s  total %s (%s of all, %s of %s), self %s (%s)", ind,
			      dl, jstr(n, "name"), tv, tp,
			      mcp_fmt_pct(total, o->fn_total, fp, sizeof(fp)), o->fn, sv, sp);
	else if (o->no_self)
		mcp_text_line(&c->out, "%s%s%s  %s (%s)", ind, dl, jstr(n, "name"), tv, tp);
	else
		mcp_text_line(&c->out, "%s%s%s  total %s (%s), self %s (%s)", ind, dl,
			      jstr(n, "name"), tv, tp, sv, sp);
}

/*
 * Print @root's tree: pre-order, children in the API's order (total,
 * descending), those under min_share of the total and those deeper than
 * max_depth summed into one "... N more" line. Iterative.
 */
static void render_tree(struct call *c, json_t *root, const struct tree_opts *o)
{
	VEC(struct tree_item) st = { 0 };
	struct tree_item it = { root, o->skip_root ? -1 : 0, 0, 0 };

	if (o->skip_root && !json_array_size(json_object_get(root, "children"))) {
		mcp_text_line(&c->out, "(none)");
		return;
	}
	VEC_PUSH(&st, it);
	while (st.n && !c->out.truncated) {
		it = st.v[--st.n];
		if (!it.node) {
			char ind[2 * INDENT_CAP + 1], tv[48], tp[16];
			int k = PROF_MIN(it.depth, INDENT_CAP);

			memset(ind, ' ', (size_t)(2 * k));
			ind[2 * k] = '\0';
			mcp_text_line(&c->out, "%s... %zu more %s, total %s (%s)", ind, it.more_n,
				      o->label, val(c, it.more_total, tv, sizeof(tv)),
				      mcp_fmt_pct(it.more_total, o->grand, tp, sizeof(tp)));
			continue;
		}
		if (it.depth >= 0)
			tree_line(c, o, it.node, it.depth);
		json_t *kids = json_object_get(it.node, "children");
		size_t nk = json_array_size(kids), keep = 0;
		struct tree_item more = { NULL, it.depth + 1, 0, 0 };

		for (size_t i = 0; i < nk; i++) {
			json_t *ch = json_array_get(kids, i);
			double t = jnum(ch, "total");

			if (it.depth + 1 >= o->max_depth ||
			    (o->grand > 0 && t < o->min_share * o->grand)) {
				more.more_n++;
				more.more_total += t;
			} else {
				keep++;
			}
		}
		if (more.more_n)
			VEC_PUSH(&st, more);
		/* push the kept children in reverse so the largest pops first */
		for (size_t i = nk; i-- > 0 && keep;) {
			json_t *ch = json_array_get(kids, i);
			double t = jnum(ch, "total");

			if (it.depth + 1 >= o->max_depth ||
			    (o->grand > 0 && t < o->min_share * o->grand))
				continue;
			struct tree_item ci = { ch, it.depth + 1, 0, 0 };
			VEC_PUSH(&st, ci);
		}
	}
	VEC_FREE(&st);
}

struct hot_path {
	double self;
	const char **names; /* owned array, root first; strings lent from the JSON */
	size_t n;
};

/*
 * The @k nodes of @root's tree with the largest self value, with their
 * paths (root's name excluded), largest first; ties keep tree order.
 * Fills @out (caller frees each names array), returns how many.
 */
static size_t hot_paths(json_t *root, size_t k, struct hot_path *out)
{
	struct walk {
		json_t *node;
		size_t depth;
	};
	VEC(struct walk) st = { 0 };
	VEC(const char *) path = { 0 };
	size_t n = 0;
	struct walk w = { root, 0 };

	VEC_PUSH(&st, w);
	while (st.n) {
		w = st.v[--st.n];
		path.n = w.depth ? w.depth - 1 : 0;
		if (w.depth)
			VEC_PUSH(&path, jstr(w.node, "name"));
		double self = jnum(w.node, "self");
		if (k && w.depth && self > 0 && !json_is_true(json_object_get(w.node, "other")) &&
		    (n < k || self > out[n - 1].self)) {
			size_t pos;

			if (n < k) {
				pos = n++;
			} else {
				pos = k - 1;
				free(out[pos].names);
			}
			while (pos > 0 && out[pos - 1].self < self) {
				out[pos] = out[pos - 1];
				pos--;
			}
			out[pos].self = self;
			out[pos].n = path.n;
			out[pos].names = xcalloc(path.n ? path.n : 1, sizeof(char *));
			memcpy(out[pos].names, path.v, path.n * sizeof(char *));
		}
		json_t *kids = json_object_get(w.node, "children");
		for (size_t i = json_array_size(kids); i-- > 0;) {
			struct walk cw = { json_array_get(kids, i), w.depth + 1 };
			VEC_PUSH(&st, cw);
		}
	}
	VEC_FREE(&st);
	VEC_FREE(&path);
	return n;
}

/* --- list_profile_types ------------------------------------------------------------------- */

static int run_profile_types(struct call *c)
{
	struct buf u = BUF_INIT;
	char a[64], b[64];
	json_t *types, *v;
	size_t i;
	int rc = common_range(c);

	if (rc)
		return rc;
	(void)buf_addstr(&u, "/api/v1/profile-types");
	url_time(&u, "from", c->from);
	url_time(&u, "to", c->to);
	types = api(c, u.p);
	buf_release(&u);
	if (!types)
		return 0;
	VEC(const char *) names = { 0 };
	json_array_foreach(types, i, v) if (json_is_string(v))
		VEC_PUSH(&names, json_string_value(v));
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), cmp_str);
	mcp_text_line(&c->out, "%zu profile type%s with data between %s and %s:", names.n,
		      names.n == 1 ? "" : "s", mcp_fmt_time(c->from, a, sizeof(a)),
		      mcp_fmt_time(c->to, b, sizeof(b)));
	for (i = 0; i < names.n; i++) {
		struct query_type_id id;

		if (query_type_split(names.v[i], &id))
			mcp_text_line(&c->out, "- %s: %s measured in %s (values in %s; %s)",
				      names.v[i], id.sample_type, id.sample_unit,
				      unit_words(id.sample_unit),
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
	int rc = common_range(c);

	if (rc)
		return rc;
	if (name && strpbrk(name, "/?#"))
		return bad_arg(c,
			       "label_values: argument 'name' must be a label name, got '%.100s'",
			       name);
	split_type(c); /* optional here: labels of every type unless one is asked for */
	if (name) {
		(void)buf_addstr(&path, "/api/v1/labels/");
		(void)buf_add_url_escaped(&path, name);
		(void)buf_addstr(&path, "/values");
	} else {
		(void)buf_addstr(&path, "/api/v1/labels");
	}
	url_common(c, &u, path.p, true);
	buf_release(&path);
	arr = api(c, u.p);
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
	make_link(c, NULL);
	json_decref(arr);
	return 0;
}

static int run_list_labels(struct call *c)
{
	return run_labels(c, NULL);
}

static int run_label_values(struct call *c)
{
	return run_labels(c, sarg(c, "name"));
}

/* --- top_functions, find_function --------------------------------------------------------- */

static void table_rows(struct call *c, json_t *t, size_t *shown)
{
	double total = jnum(t, "total");
	json_t *rows = json_object_get(t, "rows"), *r;
	size_t i;

	mcp_text_line(&c->out, "%10s %8s %10s %8s  %s", "self", "self%", "total", "total%",
		      "function");
	json_array_foreach(rows, i, r)
	{
		char s[48], tt[48], sp[16], tp[16];
		double sv = jnum(r, "self"), tv = jnum(r, "total");

		if (!mcp_text_line(&c->out, "%10s %8s %10s %8s  %s", val(c, sv, s, sizeof(s)),
				   mcp_fmt_pct(sv, total, sp, sizeof(sp)),
				   val(c, tv, tt, sizeof(tt)),
				   mcp_fmt_pct(tv, total, tp, sizeof(tp)), jstr(r, "name")))
			break;
		(*shown)++;
	}
}

static int run_top_functions(struct call *c)
{
	struct buf u = BUF_INIT;
	const char *sort = sarg(c, "sort") ? sarg(c, "sort") : "self";
	char lim[16], tv[48];
	size_t shown = 0;
	json_t *t;
	int rc;

	if (!range_and_type(c, &rc))
		return rc;
	snprintf(lim, sizeof(lim), "%" PRId64, iarg(c, "limit", DEFAULT_LIMIT));
	url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "sort", sort);
	(void)mcp_url_arg(&u, "limit", lim);
	(void)mcp_url_arg(&u, "search", sarg(c, "search"));
	(void)mcp_url_arg(&u, "stack_filter", sarg(c, "stack_filter"));
	t = api(c, u.p);
	buf_release(&u);
	if (!t)
		return 0;
	header(c);
	mcp_text_line(&c->out, "Total: %s in %.0f samples; %.0f functions%s",
		      val(c, jnum(t, "total"), tv, sizeof(tv)), jnum(t, "samples"),
		      jnum(t, "functions"),
		      sarg(c, "search") || sarg(c, "stack_filter") ? " (filtered)" : "");
	mcp_text_line(&c->out,
		      "Top functions by %s (self: in the function itself; total: including its "
		      "callees; %% of the total):",
		      sort);
	if (!json_array_size(json_object_get(t, "rows")))
		mcp_text_line(&c->out, "(no samples in this selection)");
	else
		table_rows(c, t, &shown);
	if (jnum(t, "matched") > (double)shown)
		mcp_text_line(&c->out, "(%zu of %.0f functions shown)", shown, jnum(t, "matched"));
	if (jnum(t, "unsymbolized") > 0)
		mcp_text_line(&c->out,
			      "Note: %.0f frames are unsymbolized (module+0xaddr or [module]); "
			      "upload debug info (profd debuginfo upload) to name them.",
			      jnum(t, "unsymbolized"));
	make_link(c, sarg(c, "search"));
	json_decref(t);
	return 0;
}

static int run_find_function(struct call *c)
{
	struct buf u = BUF_INIT;
	const char *search = sarg(c, "search");
	bool regex = barg(c, "regex", false);
	char lim[16], tv[48];
	size_t shown = 0;
	json_t *t;
	int rc;

	if (!range_and_type(c, &rc))
		return rc;
	snprintf(lim, sizeof(lim), "%" PRId64, iarg(c, "limit", DEFAULT_LIMIT));
	url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "search", search);
	if (regex)
		(void)mcp_url_arg(&u, "search_regex", "true");
	(void)mcp_url_arg(&u, "sort", "total");
	(void)mcp_url_arg(&u, "limit", lim);
	t = api(c, u.p);
	buf_release(&u);
	if (!t)
		return 0;
	header(c);
	mcp_text_line(&c->out,
		      "%.0f function%s %s '%s' (of %.0f; profile total %s):", jnum(t, "matched"),
		      jnum(t, "matched") == 1 ? " matches" : "s match",
		      regex ? "the regex" : "the substring", search, jnum(t, "functions"),
		      val(c, jnum(t, "total"), tv, sizeof(tv)));
	if (json_array_size(json_object_get(t, "rows")))
		table_rows(c, t, &shown);
	else
		mcp_text_line(&c->out, "(no match: try a shorter substring, regex true, or a wider "
				       "time range)");
	if (jnum(t, "matched") > (double)shown)
		mcp_text_line(&c->out, "(%zu of %.0f matches shown, by total)", shown,
			      jnum(t, "matched"));
	make_link(c, search);
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
	url_common(c, &u, "/api/v1/export/folded", true);
	(void)mcp_url_arg(&u, "stack_filter", sarg(c, "stack_filter"));
	if (api_body(c, u.p, &body)) {
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
	header(c);
	mcp_text_line(&c->out, "Total: %s in %zu distinct stacks", val(c, total, tv, sizeof(tv)),
		      lines);
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
		path_text(names.v, names.n, p, sizeof(p));
		mcp_text_line(&c->out, "%zu. %s (%s): %s", i + 1,
			      val(c, (double)top[i].value, tv, sizeof(tv)),
			      mcp_fmt_pct((double)top[i].value, total, pc, sizeof(pc)), p);
		VEC_FREE(&names);
		free(copy);
	}
	buf_release(&body);
}

static int run_flamegraph(struct call *c)
{
	struct buf u = BUF_INIT;
	bool invert = barg(c, "invert", false);
	double min_share = narg(c, "min_share", 0.01);
	int64_t npaths = iarg(c, "hot_paths", 10);
	struct tree_opts o = { 0 };
	char tv[48], mn[16];
	json_t *fg, *root;
	int rc;

	if (!range_and_type(c, &rc))
		return rc;
	snprintf(mn, sizeof(mn), "%d", TREE_MAX_NODES);
	url_common(c, &u, "/api/v1/flamegraph", true);
	(void)mcp_url_arg(&u, "max_nodes", mn);
	if (invert)
		(void)mcp_url_arg(&u, "invert", "true");
	(void)mcp_url_arg(&u, "stack_filter", sarg(c, "stack_filter"));
	fg = api(c, u.p);
	buf_release(&u);
	if (!fg && c->too_deep && !invert) {
		c->failed = c->too_deep = false;
		folded_paths(c, npaths > 0 ? (size_t)npaths : 10);
		make_link(c, NULL);
	}
	if (!fg)
		return 0;
	root = json_object_get(fg, "root");
	header(c);
	mcp_text_line(&c->out, "Total: %s in %.0f samples",
		      val(c, jnum(fg, "total"), tv, sizeof(tv)), jnum(fg, "samples"));
	if (!jnum(fg, "total")) {
		mcp_text_line(&c->out, "(no samples in this selection)");
		goto done;
	}
	if (!invert && npaths > 0) {
		struct hot_path hp[50] = { 0 };
		size_t n = hot_paths(root, (size_t)npaths, hp);

		mcp_text_line(&c->out,
			      "Hottest call paths (by self value of the leaf, root -> leaf):");
		for (size_t i = 0; i < n; i++) {
			char p[1200], sp[16], sv[48];

			path_text(hp[i].names, hp[i].n, p, sizeof(p));
			mcp_text_line(&c->out, "%zu. %s self (%s): %s", i + 1,
				      val(c, hp[i].self, sv, sizeof(sv)),
				      mcp_fmt_pct(hp[i].self, jnum(fg, "total"), sp, sizeof(sp)),
				      p);
		}
		for (size_t i = 0; i < n; i++)
			free(hp[i].names);
	}
	o.grand = jnum(fg, "total");
	o.min_share = min_share;
	o.max_depth = (int)iarg(c, "max_depth", 16);
	o.skip_root = true;
	o.no_self = invert; /* below a leaf come its callers: their "self" is not theirs */
	o.label = "nodes";
	mcp_text_line(&c->out, "%s (nodes of at least %.2f%% of the total, %d levels%s):",
		      invert ? "Inverted call tree (functions where samples were taken, each with "
			       "the cost of that leaf on the callers below it)"
			     : "Call tree (root first)",
		      min_share * 100, o.max_depth,
		      invert ? "" : "; total includes callees, self is the node itself");
	render_tree(c, root, &o);
done:
	if (jnum(json_object_get(fg, "truncated"), "nodes") > 0)
		mcp_text_line(
			&c->out,
			"(the API merged %.0f small nodes into 'other' nodes, %s: max_nodes %d)",
			jnum(json_object_get(fg, "truncated"), "nodes"),
			val(c, jnum(json_object_get(fg, "truncated"), "total"), tv, sizeof(tv)),
			TREE_MAX_NODES);
	make_link(c, NULL);
	json_decref(fg);
	return 0;
}

/* --- callers_callees ---------------------------------------------------------------------- */

/* Up to 5 function names containing @fn, as suggestions. */
static void suggest(struct call *c, const char *fn)
{
	struct buf u = BUF_INIT;
	json_t *t, *r;
	size_t i;

	url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "search", fn);
	(void)mcp_url_arg(&u, "sort", "total");
	(void)mcp_url_arg(&u, "limit", "5");
	t = api(c, u.p);
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

		mcp_text_line(&c->out, "- %s (total %s, %s)", jstr(r, "name"),
			      val(c, jnum(r, "total"), tv, sizeof(tv)),
			      mcp_fmt_pct(jnum(r, "total"), jnum(t, "total"), tp, sizeof(tp)));
	}
	json_decref(t);
}

static int run_callers_callees(struct call *c)
{
	struct buf u = BUF_INIT;
	const char *fn = sarg(c, "function");
	struct tree_opts o = { 0 };
	char tv[48], sv[48], tp[16], sp[16], mn[16];
	double pt, ft;
	json_t *sw;
	int rc;

	if (!range_and_type(c, &rc))
		return rc;
	snprintf(mn, sizeof(mn), "%d", TREE_MAX_NODES);
	url_common(c, &u, "/api/v1/sandwich", true);
	(void)mcp_url_arg(&u, "function", fn);
	(void)mcp_url_arg(&u, "max_nodes", mn);
	sw = api(c, u.p);
	buf_release(&u);
	if (!sw)
		return 0;
	header(c);
	pt = jnum(sw, "profile_total");
	ft = jnum(sw, "total");
	make_link(c, fn);
	if (!json_is_true(json_object_get(sw, "found")) || ft <= 0) {
		mcp_text_line(&c->out,
			      "Function '%s' has no samples in this selection (profile "
			      "total %s).",
			      fn, val(c, pt, tv, sizeof(tv)));
		suggest(c, fn);
		json_decref(sw);
		return 0;
	}
	mcp_text_line(&c->out, "Function %s: total %s (%s of all), self %s (%s of all)", fn,
		      val(c, ft, tv, sizeof(tv)), mcp_fmt_pct(ft, pt, tp, sizeof(tp)),
		      val(c, jnum(sw, "self"), sv, sizeof(sv)),
		      mcp_fmt_pct(jnum(sw, "self"), pt, sp, sizeof(sp)));
	o.grand = pt;
	o.fn_total = ft;
	o.fn = fn;
	o.min_share = narg(c, "min_share", 0.005);
	o.max_depth = (int)iarg(c, "max_depth", 8);
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
	render_tree(c, json_object_get(json_object_get(sw, "callers"), "root"), &o);
	bool cut = c->out.truncated;
	c->out.truncated = false;
	c->out.limit = keep;
	mcp_text_line(&c->out, "Callees (what %s calls; self of %s is its own cost):", fn, fn);
	o.label = "callees";
	o.no_self = false;
	render_tree(c, json_object_get(json_object_get(sw, "callees"), "root"), &o);
	c->out.truncated |= cut;
	json_decref(sw);
	return 0;
}

/* --- compare, explain_change --------------------------------------------------------------- */

struct side {
	char query[MCP_MAX_ARG_LEN + 1];
	int64_t from, to;
	json_t *table;
	double total, samples;
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
	const char *q = sarg(c, "query"), *aq = sarg(c, "a_query"), *bq = sarg(c, "b_query");
	char tmp[32];
	int64_t def[2];
	int rc;

	rc = common_range(c);
	if (rc)
		return rc;
	def[0] = c->from;
	def[1] = c->to;
	rc = resolve_range(c, "b_from", "b_to", def, &b->from, &b->to);
	if (rc)
		return rc;
	snprintf(b->query, sizeof(b->query), "%s", bq ? bq : q ? q : "");
	snprintf(a->query, sizeof(a->query), "%s", aq ? aq : q ? q : "");
	bool same_sel = !strcmp(a->query, b->query);
	bool a_time = targ(c, "a_from", tmp, sizeof(tmp)) || targ(c, "a_to", tmp, sizeof(tmp));
	if (same_sel && !a_time) {
		/* the window of the same length just before B */
		def[1] = b->from - 1;
		def[0] = b->from - (b->to - b->from + 1);
	} else {
		def[0] = b->from;
		def[1] = b->to;
	}
	rc = resolve_range(c, "a_from", "a_to", def, &a->from, &a->to);
	if (rc)
		return rc;
	if (same_sel && a->from == b->from && a->to == b->to)
		return bad_arg(c,
			       "%s: sides A and B are the same selection and time range: give "
			       "a_query/b_query or a_from/a_to/b_from/b_to",
			       c->tool->name);
	/* The common "from/to" become the union, for the type lookup and the link. */
	c->range_preset[0] = '\0';
	c->from = PROF_MIN(a->from, b->from);
	c->to = PROF_MAX(a->to, b->to);
	if (c->to - c->from > 2 * MCP_MAX_RANGE_MS)
		return bad_arg(c, "%s: sides A and B lie more than 62 days apart", c->tool->name);
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
	url_time(&u, "from", s->from);
	url_time(&u, "to", s->to);
	(void)mcp_url_arg(&u, "hide", sarg(c, "hide"));
	(void)mcp_url_arg(&u, "sort", sort);
	(void)mcp_url_arg(&u, "limit", lim);
	s->table = api(c, u.p);
	buf_release(&u);
	s->total = jnum(s->table, "total");
	s->samples = jnum(s->table, "samples");
	return s->table;
}

/* The explorer link shows side @s (the explorer has no A/B view in its URL). */
static void link_side(struct call *c, const struct side *s)
{
	snprintf(c->query, sizeof(c->query), "%s", s->query);
	c->from = s->from;
	c->to = s->to;
	c->link_note = " (side B)";
	make_link(c, NULL);
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

		x[i].name = jstr(r, "name");
		x[i].a_self = jnum(r, "self");
		x[i].a_total = jnum(r, "total");
		x[i].a_ss = jnum(r, "self_samples");
		x[i].a_ts = jnum(r, "total_samples");
	}
	for (i = 0; i < nb; i++) {
		json_t *r = json_array_get(rb, i);

		y[i].name = jstr(r, "name");
		y[i].b_self = jnum(r, "self");
		y[i].b_total = jnum(r, "total");
		y[i].b_ss = jnum(r, "self_samples");
		y[i].b_ts = jnum(r, "total_samples");
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

	val(c, fabs(v), num, sizeof(num));
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
		      val(c, s->total, tv, sizeof(tv)), s->samples, t->cumulative ? ", " : "",
		      t->cumulative
			      ? rate_text(c, t, s->total / side_seconds(s), false, rt, sizeof(rt))
			      : "");
}

static void row_line(struct call *c, const struct tested *t, const struct fnrow *r,
		     const char *metric, size_t idx)
{
	char a[48], b[48], ra[96], rb[96], rd[96], vs[64], vr[64];
	bool self = !strcmp(metric, "self");

	mcp_text_line(&c->out,
		      "%zu. %s: %s %s -> %s; %s %s -> %s (%s; %s); share %.2f%% -> %.2f%% "
		      "(%+.2f pts; %s)",
		      idx, r->name, metric, val(c, self ? r->a_self : r->a_total, a, sizeof(a)),
		      val(c, self ? r->b_self : r->b_total, b, sizeof(b)),
		      t->cumulative ? "rate" : "mean",
		      rate_text(c, t, r->a_rate, false, ra, sizeof(ra)),
		      rate_text(c, t, r->b_rate, false, rb, sizeof(rb)),
		      rate_text(c, t, r->rate_delta, true, rd, sizeof(rd)),
		      verdict(r->rate_q, r->rate_sig, true, vr, sizeof(vr)), 100 * r->a_share,
		      100 * r->b_share, r->delta,
		      verdict(r->share_q, r->share_sig, r->testable, vs, sizeof(vs)));
}

static void table_note(struct call *c, const struct side *a, const struct side *b)
{
	if (jnum(a->table, "matched") > COMPARE_ROWS || jnum(b->table, "matched") > COMPARE_ROWS)
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

static int run_compare(struct call *c)
{
	struct side a = { 0 }, b = { 0 };
	const char *metric = sarg(c, "sort") ? sarg(c, "sort") : "self";
	size_t n = 0, limit = (size_t)iarg(c, "limit", 10), shown;
	struct fnrow *rows = NULL;
	struct tested t;
	char tv[48], tv2[48], r1[96], r2[96];
	int rc = resolve_sides(c, &a, &b);

	if (rc)
		return rc;
	if (!resolve_type(c, c->from, c->to))
		return 0;
	t = tested_for(c, 1.96);
	if (!side_table(c, &a, "total") || !side_table(c, &b, "total"))
		goto out;
	mcp_text_line(&c->out,
		      "Compare A (baseline) -> B, %s per function: absolute (%s) and normalized "
		      "(share of each side's total)",
		      metric, t.cumulative ? "rate per second of each window" : "mean value");
	mcp_text_line(&c->out, "Profile type: %s (values in %s)%s", c->type, unit_words(c->unit),
		      c->type_defaulted ? "; chosen by default" : "");
	side_line(c, "A", &a, &t);
	side_line(c, "B", &b, &t);
	if (a.total)
		mcp_text_line(&c->out, "Total change: %s -> %s (%+.1f%%)%s%s%s%s",
			      val(c, a.total, tv, sizeof(tv)), val(c, b.total, tv2, sizeof(tv2)),
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
	double at = jnum(json_object_get(diff, "a"), "total");
	double bt = jnum(json_object_get(diff, "b"), "total");
	struct walk w = { json_object_get(diff, "root"), 0 };

	VEC_PUSH(&st, w);
	while (st.n) {
		w = st.v[--st.n];
		path.n = w.depth ? w.depth - 1 : 0;
		if (w.depth)
			VEC_PUSH(&path, jstr(w.node, "name"));
		if (w.depth && !strcmp(jstr(w.node, "name"), fn)) {
			struct dpath d = { at ? jnum(w.node, "a_total") / at : 0,
					   bt ? jnum(w.node, "b_total") / bt : 0, NULL, path.n };

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
			path_text(found.v[i].names, found.v[i].n, p, sizeof(p));
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

static int run_explain_change(struct call *c)
{
	struct side a = { 0 }, b = { 0 };
	size_t n = 0, limit = (size_t)iarg(c, "limit", 8), npaths = (size_t)iarg(c, "paths", 3);
	double zthr = narg(c, "z", 1.96), min_delta = narg(c, "min_delta", 0.5);
	struct fnrow *rows = NULL;
	struct buf u = BUF_INIT;
	json_t *diff = NULL;
	char tv[48], tv2[48], mn[16];
	size_t sig = 0;
	struct tested t;
	int rc = resolve_sides(c, &a, &b);

	if (rc)
		return rc;
	if (!resolve_type(c, c->from, c->to))
		return 0;
	if (!side_table(c, &a, "total") || !side_table(c, &b, "total"))
		goto out;
	snprintf(mn, sizeof(mn), "%d", TREE_MAX_NODES);
	(void)buf_addstr(&u, "/api/v1/diff");
	(void)mcp_url_arg(&u, "type", c->type);
	(void)mcp_url_arg(&u, "a_query", a.query[0] ? a.query : NULL);
	url_time(&u, "a_from", a.from);
	url_time(&u, "a_to", a.to);
	(void)mcp_url_arg(&u, "b_query", b.query[0] ? b.query : NULL);
	url_time(&u, "b_from", b.from);
	url_time(&u, "b_to", b.to);
	(void)mcp_url_arg(&u, "hide", sarg(c, "hide"));
	(void)mcp_url_arg(&u, "max_nodes", mn);
	diff = api(c, u.p);
	buf_release(&u);
	if (!diff)
		goto out;
	t = tested_for(c, zthr);
	mcp_text_line(&c->out,
		      "What changed from A (baseline) to B; profile type %s (values in %s)%s",
		      c->type, unit_words(c->unit), c->type_defaulted ? ", chosen by default" : "");
	side_line(c, "A", &a, &t);
	side_line(c, "B", &b, &t);
	if (a.total)
		mcp_text_line(&c->out, "Total: %s -> %s (%+.1f%%)", val(c, a.total, tv, sizeof(tv)),
			      val(c, b.total, tv2, sizeof(tv2)),
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
		mcp_text_line(
			&c->out,
			"%zu. %s %s: self %s %s -> %s (%s%s, q=%.2g); self %s -> %s; self "
			"share %.2f%% -> %.2f%% (%+.2f pts); total share %s -> %s",
			shown, r->name, r->rate_delta > 0 ? "GREW" : "SHRANK",
			t.cumulative ? "rate" : "mean",
			rate_text(c, &t, r->a_rate, false, ra, sizeof(ra)),
			rate_text(c, &t, r->b_rate, false, rb, sizeof(rb)),
			rate_text(c, &t, r->rate_delta, true, rd, sizeof(rd)),
			r->a_rate > 0 ? "" : ", new", r->rate_q, val(c, r->a_self, tv, sizeof(tv)),
			val(c, r->b_self, tv2, sizeof(tv2)), 100 * r->a_share, 100 * r->b_share,
			r->delta, mcp_fmt_pct(r->a_total, a.total, ta, sizeof(ta)),
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

static int run_timeseries(struct call *c)
{
	const char *fn = sarg(c, "function"), *mode = sarg(c, "mode") ? sarg(c, "mode") : "total";
	const char *step_arg = sarg(c, "step");
	struct buf u = BUF_INIT;
	json_t *fs = NULL, *all = NULL;
	double *fv = NULL, *av = NULL;
	int64_t step_ns;
	char step[32], tv[48], tv2[48], tv3[48], a[64];
	int rc = common_range(c);

	if (rc)
		return rc;
	if (step_arg) {
		if (parse_duration_ns(step_arg, &step_ns) || step_ns < 1000000)
			return bad_arg(c,
				       "function_timeseries: argument 'step': expected a duration "
				       "of at least 1ms such as 10s, 1m or 1h, got '%.100s'",
				       step_arg);
	} else {
		int64_t s = (c->to - c->from + 1 + DEFAULT_SERIES_ROWS * 1000 - 1) /
			    (DEFAULT_SERIES_ROWS * 1000);

		step_ns = (s < 1 ? 1 : s) * 1000000000LL;
	}
	if ((c->to - c->from + 1) / (step_ns / 1000000) > MAX_SERIES_STEPS)
		return bad_arg(c,
			       "function_timeseries: steps of %s over the range are more than %d: "
			       "pick a larger step",
			       step_arg ? step_arg : "(default)", MAX_SERIES_STEPS);
	if (!resolve_type(c, c->from, c->to))
		return 0;
	if (step_ns % 1000000000LL == 0)
		snprintf(step, sizeof(step), "%" PRId64 "s", step_ns / 1000000000);
	else
		snprintf(step, sizeof(step), "%" PRId64 "ms", step_ns / 1000000);
	url_common(c, &u, "/api/v1/series", true);
	(void)mcp_url_arg(&u, "step", step);
	(void)mcp_url_arg(&u, "function", fn);
	(void)mcp_url_arg(&u, "mode", mode);
	fs = api(c, u.p);
	if (!fs)
		goto out;
	url_common(c, &u, "/api/v1/series", true);
	(void)mcp_url_arg(&u, "step", step);
	all = api(c, u.p);
	if (!all)
		goto out;
	header(c);
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
			      val(c, atot, tv, sizeof(tv)));
		suggest(c, fn);
		goto out;
	}
	mcp_text_line(
		&c->out, "In range: %s of %s (%.2f%%); peak %s at %s", val(c, ftot, tv, sizeof(tv)),
		val(c, atot, tv2, sizeof(tv2)), atot ? 100 * ftot / atot : 0.0,
		val(c, peak, tv3, sizeof(tv3)),
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
				   val(c, fv[k], tv, sizeof(tv)), val(c, av[k], tv2, sizeof(tv2)),
				   mcp_fmt_pct(fv[k], av[k], pc, sizeof(pc))))
			break;
	}
out:
	make_link(c, fn);
	buf_release(&u);
	free(fv);
	free(av);
	json_decref(fs);
	json_decref(all);
	return 0;
}

/* --- source_location ------------------------------------------------------------------------ */

static int run_source_location(struct call *c)
{
	const char *fn = sarg(c, "function");
	struct buf u = BUF_INIT, re = BUF_INIT;
	json_t *t = NULL, *h = NULL, *row = NULL, *r;
	char tv[48], tp[16];
	size_t i;
	int rc;

	if (!range_and_type(c, &rc))
		return rc;
	(void)buf_addstr(&re, "^");
	regex_escape(&re, fn);
	(void)buf_addstr(&re, "$");
	url_common(c, &u, "/api/v1/table", true);
	(void)mcp_url_arg(&u, "search", re.p);
	(void)mcp_url_arg(&u, "search_regex", "true");
	(void)mcp_url_arg(&u, "limit", "5");
	t = api(c, u.p);
	if (!t)
		goto out;
	header(c);
	json_array_foreach(json_object_get(t, "rows"), i, r) if (!strcmp(jstr(r, "name"), fn)) row =
		r;
	if (!row) {
		mcp_text_line(&c->out, "Function '%s' has no samples in this selection.", fn);
		suggest(c, fn);
		goto out;
	}
	mcp_text_line(&c->out, "Function %s: total %s (%s of all)", fn,
		      val(c, jnum(row, "total"), tv, sizeof(tv)),
		      mcp_fmt_pct(jnum(row, "total"), jnum(t, "total"), tp, sizeof(tp)));

	/* Where the table says the code is (symbolized frames: file, line, build ID, binary). */
	const char *file = jstr(row, "file"), *bid = jstr(row, "build_id");
	const char *mapping = jstr(row, "mapping");
	double line = jnum(row, "line");
	bool known = *file || *bid || *mapping;

	if (*file && line > 0)
		mcp_text_line(&c->out, "Source: %s:%.0f", file, line);
	else if (*file)
		mcp_text_line(&c->out, "Source: %s", file);
	if (*mapping)
		mcp_text_line(&c->out, "Binary: %s", mapping);
	if (*bid)
		mcp_text_line(&c->out, "Build ID: %s", bid);

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
	url_common(c, &u, "/api/v1/health/symbols", true);
	h = api(c, u.p);
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
			mcp_text_line(&c->out, "- %s build_id %s: %s", jstr(r, "path"),
				      *jstr(r, "build_id") ? jstr(r, "build_id") : "(none)",
				      jstr(r, "status"));
		}
	} else {
		mcp_text_line(&c->out, "No native binary of this selection needed the symbolizer: "
				       "its frames were named by the profiler that sent them (so "
				       "no build ID is recorded for them).");
	}
out:
	make_link(c, fn);
	buf_release(&u);
	buf_release(&re);
	json_decref(t);
	json_decref(h);
	return 0;
}

/* --- the tool table ------------------------------------------------------------------------ */

static const struct arg_spec args_types[] = { ARG_FROM, ARG_TO, ARG_TOKENS };
static const struct arg_spec args_labels[] = { ARG_TYPE, ARG_QUERY, ARG_FROM, ARG_TO, ARG_TOKENS };
static const struct arg_spec args_label_values[] = {
	{ "name", A_STR, true, 0, 0, NULL, "Label name, e.g. service.name." },
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_TOKENS,
};
static const struct arg_spec args_top[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "sort", A_STR, false, 0, 0, sorts, "self (default) or total (with callees)." },
	{ "limit", A_INT, false, 1, 200, NULL, NULL },
	{ "search", A_STR, false, 0, 0, NULL, "Name substring." },
	{ "stack_filter", A_STR, false, 0, 0, NULL, NULL },
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_flame[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "min_share", A_NUM, false, 0, 1, NULL, "Default 0.01." },
	{ "max_depth", A_INT, false, 1, MAX_DEPTH, NULL, "Default 16." },
	{ "hot_paths", A_INT, false, 0, 50, NULL, "Paths listed first (default 10)." },
	{ "invert", A_BOOL, false, 0, 0, NULL, "Leaves first, callers below." },
	{ "stack_filter", A_STR, false, 0, 0, NULL, NULL },
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_sandwich[] = {
	ARG_FUNCTION,
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "min_share", A_NUM, false, 0, 1, NULL, "Default 0.005." },
	{ "max_depth", A_INT, false, 1, MAX_DEPTH, NULL, "Default 8." },
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_compare[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_AB,
	{ "sort", A_STR, false, 0, 0, sorts, "Metric: self (default) or total." },
	{ "limit", A_INT, false, 1, 200, NULL, NULL },
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_explain[] = {
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_AB,
	{ "z", A_NUM, false, 0, 100, NULL, "Level as a |z| (default 1.96: q < 0.05)." },
	{ "min_delta", A_NUM, false, 0, 100, NULL, "Smallest change, % of A's total (0.5)." },
	{ "limit", A_INT, false, 1, 50, NULL, "Default 8." },
	{ "paths", A_INT, false, 0, 10, NULL, "Paths per function (default 3)." },
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_series[] = {
	ARG_FUNCTION,
	{ "mode", A_STR, false, 0, 0, modes, "total (default) or self (as leaf)." },
	{ "step", A_STR, false, 0, 0, NULL, "10s, 1m, ... (default range / 60)." },
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	ARG_HIDE,
	ARG_TOKENS,
};
static const struct arg_spec args_find[] = {
	{ "search", A_STR, true, 0, 0, NULL, "Substring or regex." },
	{ "regex", A_BOOL, false, 0, 0, NULL, "search is a PCRE2 regex." },
	ARG_TYPE,
	ARG_QUERY,
	ARG_FROM,
	ARG_TO,
	{ "limit", A_INT, false, 1, 200, NULL, NULL },
	ARG_TOKENS,
};
static const struct arg_spec args_source[] = {
	ARG_FUNCTION, ARG_TYPE, ARG_QUERY, ARG_FROM, ARG_TO, ARG_TOKENS,
};

#define TOOL(n, t, d, a, r)                       \
	{                                         \
		n, t, d, a, PROF_ARRAY_SIZE(a), r \
	}

static const struct tool_spec tools[] = {
	TOOL("list_profile_types", "List profile types",
	     "Profile types with data (CPU, allocations, heap, ...), unit, cumulative or gauge. "
	     "Start here.",
	     args_types, run_profile_types),
	TOOL("list_labels", "List label names",
	     "Label names of a selection (service.name, k8s.pod.name, thread.name, ...).",
	     args_labels, run_list_labels),
	TOOL("label_values", "List label values",
	     "Values of one label in a selection, to build selectors.", args_label_values,
	     run_label_values),
	TOOL("top_functions", "Top functions",
	     "Functions by self and total cost, values and shares (pprof -top).", args_top,
	     run_top_functions),
	TOOL("flamegraph_summary", "Flame graph summary",
	     "Hottest root-to-leaf paths, then the call tree pruned to min_share.", args_flame,
	     run_flamegraph),
	TOOL("callers_callees", "Callers and callees",
	     "Callers tree and callees tree of one function, over all its call paths.",
	     args_sandwich, run_callers_callees),
	TOOL("compare", "Compare A and B",
	     "Functions whose cost per second grew / shrank most between sides A and B, with "
	     "absolute (Poisson, window as exposure) and share tests, Benjamini-Hochberg "
	     "adjusted.",
	     args_compare, run_compare),
	TOOL("function_timeseries", "Function time series",
	     "One function's cost per step beside the selection's: when did it get hot?",
	     args_series, run_timeseries),
	TOOL("find_function", "Find functions",
	     "Function names matching a substring or regex, with self and total.", args_find,
	     run_find_function),
	TOOL("source_location", "Source location of a function",
	     "Source file:line, binary and build ID of a function when known; the selection's "
	     "binaries and symbol status.",
	     args_source, run_source_location),
	TOOL("explain_change", "Explain a change",
	     "What changed from A to B (deploy, canary): functions whose self cost per second "
	     "changed significantly (tests as compare), with the call paths that changed most; "
	     "share-only moves named apart.",
	     args_explain, run_explain_change),
};

/* --- schemas and dispatch ------------------------------------------------------------------- */

static json_t *arg_schema(const struct arg_spec *a)
{
	json_t *s = json_object();

	switch (a->kind) {
	case A_STR:
		json_object_set_new(s, "type", json_string("string"));
		if (a->values) {
			json_t *e = json_array();

			for (const char *const *p = a->values; *p; p++)
				json_array_append_new(e, json_string(*p));
			json_object_set_new(s, "enum", e);
		}
		break;
	case A_TIME:
		json_object_set_new(s, "type", json_pack("[ss]", "string", "integer"));
		break;
	case A_INT:
		json_object_set_new(s, "type", json_string("integer"));
		if (a->desc) { /* shared ones: the range is in the shared text */
			json_object_set_new(s, "minimum", json_integer((json_int_t)a->min));
			json_object_set_new(s, "maximum", json_integer((json_int_t)a->max));
		}
		break;
	case A_NUM:
		json_object_set_new(s, "type", json_string("number"));
		json_object_set_new(s, "minimum", json_real(a->min));
		json_object_set_new(s, "maximum", json_real(a->max));
		break;
	case A_BOOL:
		json_object_set_new(s, "type", json_string("boolean"));
		break;
	}
	if (a->desc) /* shared arguments: described once (mcp_tools_shared_args) */
		json_object_set_new(s, "description", json_string(a->desc));
	return s;
}

json_t *mcp_tools_list(void)
{
	json_t *arr = json_array();

	for (size_t i = 0; i < PROF_ARRAY_SIZE(tools); i++) {
		const struct tool_spec *t = &tools[i];
		json_t *props = json_object(), *req = json_array();

		for (size_t k = 0; k < t->nargs; k++) {
			json_object_set_new(props, t->args[k].name, arg_schema(&t->args[k]));
			if (t->args[k].required)
				json_array_append_new(req, json_string(t->args[k].name));
		}
		json_t *schema = json_pack("{s:s, s:o, s:b}", "type", "object", "properties", props,
					   "additionalProperties", 0);
		if (json_array_size(req))
			json_object_set_new(schema, "required", req);
		else
			json_decref(req);
		/* read-only implies idempotent and no side effects: one hint says it */
		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:o, s:{s:b}}", "name",
						     t->name, "title", t->title, "description",
						     t->desc, "inputSchema", schema, "annotations",
						     "readOnlyHint", 1));
	}
	return arr;
}

/* The CallToolResult of @c: the text (or the failure), the queries, the link. */
static json_t *finish(struct call *c)
{
	struct mcp_text *t = &c->out;
	json_t *res;

	if (c->failed) {
		buf_reset(&t->b);
		mcp_text_tail(t, "Error: %s", c->msg);
	} else if (t->truncated) {
		mcp_text_tail(t,
			      "[truncated: the output reached its budget of %zu tokens; raise "
			      "max_tokens (up to %d), lower limit/max_depth, or narrow the query]",
			      t->limit / MCP_CHARS_PER_TOKEN, MCP_MAX_TOKENS);
	}
	if (barg(c, "links", false)) {
		mcp_text_tail(t, "%s (query API, reproducible with curl):",
			      c->queries.n > 1 ? "Queries" : "Query");
		for (size_t i = 0; i < c->queries.n; i++)
			mcp_text_tail(t, "- GET %s%s", c->be->base_url ? c->be->base_url : "",
				      c->queries.v[i]);
		if (c->link[0] && !c->failed)
			mcp_text_tail(t, "Explorer%s: %s", c->link_note, c->link);
	}
	res = json_pack("{s:[{s:s, s:s%}], s:b}", "content", "type", "text", "text",
			t->b.p ? t->b.p : "", t->b.len, "isError", c->failed);
	return res;
}

int mcp_tools_call(const struct mcp_backend *be, const char *name, json_t *args, json_t **result,
		   char *msg, size_t msgsz)
{
	struct call c;
	json_t *empty = NULL;
	int rc;

	*result = NULL;
	memset(&c, 0, sizeof(c));
	for (size_t i = 0; i < PROF_ARRAY_SIZE(tools) && !c.tool; i++)
		if (!strcmp(tools[i].name, name))
			c.tool = &tools[i];
	if (!c.tool) {
		snprintf(msg, msgsz, "Unknown tool: %.200s (tools/list names them)", name);
		return -PROF_ENOTFOUND;
	}
	if (!args)
		args = empty = json_object();
	c.be = be;
	c.args = args;
	c.now_ms = prof_now_ns() / 1000000;
	c.link_note = "";
	rc = check_args(&c);
	mcp_text_init(&c.out, (size_t)iarg(&c, "max_tokens", MCP_DEFAULT_TOKENS));
	if (!rc)
		rc = c.tool->run(&c);
	if (rc)
		snprintf(msg, msgsz, "%s", c.msg);
	else
		*result = finish(&c);
	for (size_t i = 0; i < c.queries.n; i++)
		free(c.queries.v[i]);
	VEC_FREE(&c.queries);
	mcp_text_release(&c.out);
	json_decref(empty);
	return rc;
}
