/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tools_int.h - what the parts of the MCP tools share and nothing else
 * includes: tools.c (argument schemas, the tool table, dispatch),
 * tools_call.c (one call: its arguments, time range and type, the query
 * API), tools_text.c (text helpers and trees), tools_read.c (the tools
 * that read views) and tools_compare.c (compare, explain_change).
 */
#ifndef PROFD_MCP_TOOLS_INT_H
#define PROFD_MCP_TOOLS_INT_H

#include "base/mem.h"
#include "mcp/text.h"
#include "mcp/tools.h"

#include <jansson.h>

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

enum arg_kind { A_STR, A_INT, A_NUM, A_BOOL, A_TIME };

struct arg_spec {
	const char *name;
	enum arg_kind kind;
	bool required;
	double min, max;	   /* A_INT, A_NUM */
	const char *const *values; /* A_STR: the allowed values, NULL-terminated, or NULL */
	const char *desc;
};

struct call;

struct tool_spec {
	const char *name, *desc;
	const struct arg_spec *args;
	size_t nargs;
	int (*run)(struct call *c);
};

/* --- one call ------------------------------------------------------------------------------- */

/* An API answer's "nearest" (docs/api.md): data of a selection outside its range. */
struct tool_nearest {
	bool have_before, have_after;
	int64_t before_ms, after_ms;
};

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
	const char *fold; /* the fold= a stack view was asked for (tool_url_fold), or NULL */
	struct tool_nearest near; /* the API answers' "nearest" so far */
};

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

struct hot_path {
	double self;
	const char **names; /* owned array, root first; strings lent from the JSON */
	size_t n;
};

int tool_bad_arg(struct call *c, const char *fmt, ...) PROF_PRINTF(2, 3);

void tool_fail(struct call *c, const char *fmt, ...) PROF_PRINTF(2, 3);

const char *tool_sarg(const struct call *c, const char *name);

int64_t tool_iarg(const struct call *c, const char *name, int64_t def);

double tool_narg(const struct call *c, const char *name, double def);

bool tool_barg(const struct call *c, const char *name, bool def);

/* A time argument as text (integers are unix ms), or NULL. */
const char *tool_targ(const struct call *c, const char *name, char *tmp, size_t n);

/* Check @args against the tool's schema. 0 or -EINVAL with c->msg. */
int tool_check_args(struct call *c);

/*
 * Resolve the time arguments @fk/@tk (defaults: [*@from_def, *@to_def]
 * when not NULL, else the last hour) into inclusive unix ms. 0 or -EINVAL.
 */
int tool_resolve_range(struct call *c, const char *fk, const char *tk, const int64_t *def,
		       int64_t *from, int64_t *to);

/* The common range (from/to) and, when the range is "the last X", the explorer's preset. */
int tool_common_range(struct call *c);

void tool_url_time(struct buf *u, const char *key, int64_t ms);

/*
 * Add fold= to a stack view's URL @u: the tool's 'fold' argument, else
 * "recursion" (MCP answers fold direct recursion by default); noted in
 * c->fold so tool_header says so.
 */
void tool_url_fold(struct call *c, struct buf *u);

/* The "Frames: fold=..." line when c->fold is set (tool_header prints it). */
void tool_fold_note(struct call *c);

/* "/api/v1/VIEW" with type, query, from, to (and hide when given). */
void tool_url_common(struct call *c, struct buf *u, const char *path, bool with_type);

/*
 * GET @url (path + query) through the backend into @body (capped at
 * MCP_MAX_ANSWER): 0 for a 200 answer, else -1 after tool_fail() with the
 * reason (the API's own message for a 4xx).
 */
int tool_api_body(struct call *c, const char *url, struct buf *body);

/*
 * GET @url: the parsed JSON answer (new reference), or NULL after tool_fail()
 * with the reason; c->too_deep tells a JSON nested past jansson's limit.
 */
json_t *tool_api(struct call *c, const char *url);

/*
 * Keep the "nearest" of an API answer @j (any JSON, NULL included) in @c:
 * the latest time before and the earliest after the range seen so far.
 */
void tool_take_nearest(struct call *c, json_t *j);

/* The closing line "No samples in range; nearest data ... at T (N h before the range)". */
void tool_nearest_note(struct call *c);

/*
 * A line (within the budget) for one side of a comparison, @who ("Side A")
 * over [@from, @to] ms: "Side A: no samples in range; nearest data for its
 * selector at T (N h before its range)". Nothing when @n has neither side.
 */
void tool_nearest_side(struct call *c, const char *who, const struct tool_nearest *n, int64_t from,
		       int64_t to);

double tool_jnum(json_t *o, const char *k);

const char *tool_jstr(json_t *o, const char *k);

int tool_cmp_str(const void *a, const void *b);

/*
 * The type to query: split_type's, or the default (CPU) among the types
 * with data in [@from, @to]. Returns false when there is nothing to query
 * (no data: a line says so, or the API failed: c->failed).
 */
bool tool_resolve_type(struct call *c, int64_t from, int64_t to);

/* The type argument, or the type written before the selector in query ("type{...}"). */
void tool_split_type(struct call *c);

/*
 * The common start of a tool over one selection: the time range, then the
 * profile type (asked of the server when not given). False when the tool
 * stops there: *@rc is the error (a bad range), or 0 with the answer
 * already written (no type to query).
 */
bool tool_range_and_type(struct call *c, int *rc);

const char *tool_unit_words(const char *unit);

/* "Type: ... (values in ...)" and "Selection: ..., FROM .. TO (SPAN)". */
void tool_header(struct call *c);

/* The explorer link for the common selection (ui/js/state.js: type, query, range, search). */
void tool_make_link(struct call *c, const char *search);

char *tool_val(const struct call *c, double v, char *out, size_t n);

/* Escape @s for a PCRE2 pattern matching it literally. */
void tool_regex_escape(struct buf *b, const char *s);

/* A call path root -> leaf, the middle elided past PATH_SHOW frames. */
void tool_path_text(const char *const *names, size_t n, char *out, size_t outsz);

/*
 * Print @root's tree: pre-order, children in the API's order (total,
 * descending), those under min_share of the total and those deeper than
 * max_depth summed into one "... N more" line. Iterative.
 */
void tool_render_tree(struct call *c, json_t *root, const struct tree_opts *o);

/*
 * The @k nodes of @root's tree with the largest self value, with their
 * paths (root's name excluded), largest first; ties keep tree order.
 * Fills @out (caller frees each names array), returns how many.
 */
size_t tool_hot_paths(json_t *root, size_t k, struct hot_path *out);

/* Up to 5 function names containing @fn, as suggestions. */
void tool_suggest(struct call *c, const char *fn);

int tool_run_profile_types(struct call *c);

int tool_run_list_labels(struct call *c);

int tool_run_label_values(struct call *c);

int tool_run_top_functions(struct call *c);

int tool_run_find_function(struct call *c);

int tool_run_flamegraph(struct call *c);

int tool_run_callers_callees(struct call *c);

int tool_run_compare(struct call *c);

int tool_run_explain_change(struct call *c);

int tool_run_timeseries(struct call *c);

int tool_run_source_location(struct call *c);

/* optimization_candidates (tools_optimize.c). */
int tool_run_optimization_candidates(struct call *c);

#endif
