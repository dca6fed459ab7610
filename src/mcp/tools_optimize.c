// SPDX-License-Identifier: Apache-2.0
/*
 * tools_optimize.c - the optimization_candidates tool: where a change to
 * the code would pay, with what a pull request would cite. The functions
 * with the most self cost (the time spent in their own code, what
 * optimizing them removes), each with its rate over the range, its
 * hottest source lines (the source view), the callers its cost comes
 * through (the sandwich's callers tree) and its binary and build ID.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "mcp/text.h"
#include "mcp/tools.h"
#include "mcp/tools_int.h"

#define CANDIDATES_DEFAULT 5
#define CANDIDATE_LINES	   2
#define CANDIDATE_CALLERS  3

/* The callers of @fn one level up (the sandwich's callers tree), heaviest first. */
static void candidate_callers(struct call *c, const char *fn, double ftot)
{
	struct buf u = BUF_INIT, line = BUF_INIT;
	json_t *s, *kids, *k;
	char pc[16];
	size_t i;

	tool_url_common(c, &u, "/api/v1/sandwich", true);
	tool_url_fold(c, &u);
	(void)mcp_url_arg(&u, "function", fn);
	(void)mcp_url_arg(&u, "max_nodes", "64");
	s = tool_api(c, u.p);
	buf_release(&u);
	if (!s) {
		c->failed = false; /* the rest of the answer stands */
		c->msg[0] = '\0';
		return;
	}
	kids = json_object_get(json_object_get(json_object_get(s, "callers"), "root"), "children");
	json_array_foreach(kids, i, k)
	{
		if (i == CANDIDATE_CALLERS) {
			(void)buf_addf(&line, ", %zu more", json_array_size(kids) - i);
			break;
		}
		(void)buf_addf(&line, "%s%s %s", i ? ", " : "", tool_jstr(k, "name"),
			       mcp_fmt_pct(tool_jnum(k, "total"), ftot, pc, sizeof(pc)));
	}
	if (line.len)
		mcp_text_line(&c->out, "   called from: %s", line.p);
	else
		mcp_text_line(&c->out, "   called from: nothing (a root frame)");
	buf_release(&line);
	json_decref(s);
}

/* The hottest lines of @fn by self (the source view), with their text when the server has it. */
static void candidate_lines(struct call *c, const char *fn, double fself)
{
	struct buf u = BUF_INIT;
	json_t *s, *l;
	char tv[48], pc[16], lim[8];
	size_t i, shown = 0;

	tool_url_common(c, &u, "/api/v1/source", true);
	tool_url_fold(c, &u);
	(void)mcp_url_arg(&u, "function", fn);
	snprintf(lim, sizeof(lim), "%d", CANDIDATE_LINES);
	(void)mcp_url_arg(&u, "limit", lim);
	s = tool_api(c, u.p);
	buf_release(&u);
	if (!s) {
		c->failed = false;
		c->msg[0] = '\0';
		return;
	}
	json_array_foreach(json_object_get(s, "lines"), i, l)
	{
		const char *file = tool_jstr(l, "file"), *base = strrchr(file, '/');
		const char *text = tool_jstr(l, "text");

		if (tool_jnum(l, "line") <= 0 || tool_jnum(l, "self") <= 0)
			continue;
		while (*text == ' ' || *text == '\t')
			text++;
		mcp_text_line(&c->out, "   line %s:%.0f  self %s (%s of its self)%s%.*s",
			      base ? base + 1 : file, tool_jnum(l, "line"),
			      tool_val(c, tool_jnum(l, "self"), tv, sizeof(tv)),
			      mcp_fmt_pct(tool_jnum(l, "self"), fself, pc, sizeof(pc)),
			      *text ? "  | " : "", 80, text);
		shown++;
	}
	if (!shown)
		mcp_text_line(&c->out, "   lines: unknown (no source line for its frames)");
	json_decref(s);
}

int tool_run_optimization_candidates(struct call *c)
{
	struct buf u = BUF_INIT;
	char lim[16], tv[48], tv2[48], p1[16], p2[16];
	double secs, total;
	json_t *t, *r;
	size_t i;
	int rc;

	if (!tool_range_and_type(c, &rc))
		return rc;
	snprintf(lim, sizeof(lim), "%" PRId64, tool_iarg(c, "limit", CANDIDATES_DEFAULT));
	tool_url_common(c, &u, "/api/v1/table", true);
	tool_url_fold(c, &u);
	(void)mcp_url_arg(&u, "sort", "self");
	(void)mcp_url_arg(&u, "limit", lim);
	t = tool_api(c, u.p);
	buf_release(&u);
	if (!t)
		return 0;
	tool_header(c);
	total = tool_jnum(t, "total");
	secs = (double)(c->to - c->from + 1) / 1000;
	if (!json_array_size(json_object_get(t, "rows"))) {
		mcp_text_line(&c->out, "(no samples in this selection)");
		goto out;
	}
	mcp_text_line(&c->out,
		      "Candidates by self cost (time in the function's own code: what a faster "
		      "version would save), with rate over the range, hottest lines, callers:");
	json_array_foreach(json_object_get(t, "rows"), i, r)
	{
		const char *fn = tool_jstr(r, "name"), *bin = tool_jstr(r, "mapping");
		double self = tool_jnum(r, "self"), tot = tool_jnum(r, "total");
		char rate[64] = "";

		if (self <= 0)
			break;
		if (!strcmp(c->unit, "nanoseconds"))
			snprintf(rate, sizeof(rate), ", %.3g cores on average", self / 1e9 / secs);
		if (!mcp_text_line(&c->out, "%zu. %s: self %s (%s of all%s), total %s (%s)", i + 1,
				   fn, tool_val(c, self, tv, sizeof(tv)),
				   mcp_fmt_pct(self, total, p1, sizeof(p1)), rate,
				   tool_val(c, tot, tv2, sizeof(tv2)),
				   mcp_fmt_pct(tot, total, p2, sizeof(p2))))
			break;
		candidate_lines(c, fn, self);
		candidate_callers(c, fn, tot);
		if (*bin)
			mcp_text_line(&c->out, "   binary: %s%s%.16s", bin,
				      *tool_jstr(r, "build_id") ? " build " : "",
				      tool_jstr(r, "build_id"));
	}
	mcp_text_line(&c->out, "Evidence to cite: a function's self share and rate here, its "
			       "hottest line, and a compare of the windows before and after the "
			       "change (significant in absolute terms).");
out:
	tool_make_link(c, NULL);
	json_decref(t);
	return 0;
}
