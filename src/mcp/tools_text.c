// SPDX-License-Identifier: Apache-2.0
/*
 * tools_text.c - text helpers of the MCP tools: values in their units,
 * call paths, and trees (flame graph, sandwich) written with an explicit
 * stack, never recursion.
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

/* --- text helpers --------------------------------------------------------------------------- */

char *tool_val(const struct call *c, double v, char *out, size_t n)
{
	return mcp_fmt_value(c->unit, v, out, n);
}

/* Escape @s for a PCRE2 pattern matching it literally. */
void tool_regex_escape(struct buf *b, const char *s)
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
void tool_path_text(const char *const *names, size_t n, char *out, size_t outsz)
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

static void tree_line(struct call *c, const struct tree_opts *o, json_t *n, int depth)
{
	char ind[2 * INDENT_CAP + 1], tv[48], sv[48], tp[16], sp[16], fp[16], dl[24] = "";
	int k = PROF_MIN(depth, INDENT_CAP);
	double total = tool_jnum(n, "total"), self = tool_jnum(n, "self");

	memset(ind, ' ', (size_t)(2 * k));
	ind[2 * k] = '\0';
	if (depth > INDENT_CAP)
		snprintf(dl, sizeof(dl), "[depth %d] ", depth);
	tool_val(c, total, tv, sizeof(tv));
	tool_val(c, self, sv, sizeof(sv));
	mcp_fmt_pct(total, o->grand, tp, sizeof(tp));
	mcp_fmt_pct(self, o->grand, sp, sizeof(sp));
	if (json_is_true(json_object_get(n, "other")))
		mcp_text_line(&c->out, "%s%s(other: smaller nodes merged by the API) total %s (%s)",
			      ind, dl, tv, tp);
	else if (o->fn_total > 0 && o->no_self)
		mcp_text_line(&c->out, "%s%s%s  %s (%s of all, %s of %s)", ind, dl,
			      tool_jstr(n, "name"), tv, tp,
			      mcp_fmt_pct(total, o->fn_total, fp, sizeof(fp)), o->fn);
	else if (o->fn_total > 0)
		mcp_text_line(&c->out, "%s%s%s  total %s (%s of all, %s of %s), self %s (%s)", ind,
			      dl, tool_jstr(n, "name"), tv, tp,
			      mcp_fmt_pct(total, o->fn_total, fp, sizeof(fp)), o->fn, sv, sp);
	else if (o->no_self)
		mcp_text_line(&c->out, "%s%s%s  %s (%s)", ind, dl, tool_jstr(n, "name"), tv, tp);
	else
		mcp_text_line(&c->out, "%s%s%s  total %s (%s), self %s (%s)", ind, dl,
			      tool_jstr(n, "name"), tv, tp, sv, sp);
}

/*
 * Print @root's tree: pre-order, children in the API's order (total,
 * descending), those under min_share of the total and those deeper than
 * max_depth summed into one "... N more" line. Iterative.
 */
void tool_render_tree(struct call *c, json_t *root, const struct tree_opts *o)
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
				      o->label, tool_val(c, it.more_total, tv, sizeof(tv)),
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
			double t = tool_jnum(ch, "total");

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
			double t = tool_jnum(ch, "total");

			if (it.depth + 1 >= o->max_depth ||
			    (o->grand > 0 && t < o->min_share * o->grand))
				continue;
			struct tree_item ci = { ch, it.depth + 1, 0, 0 };
			VEC_PUSH(&st, ci);
		}
	}
	VEC_FREE(&st);
}

/*
 * The @k nodes of @root's tree with the largest self value, with their
 * paths (root's name excluded), largest first; ties keep tree order.
 * Fills @out (caller frees each names array), returns how many.
 */
size_t tool_hot_paths(json_t *root, size_t k, struct hot_path *out)
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
			VEC_PUSH(&path, tool_jstr(w.node, "name"));
		double self = tool_jnum(w.node, "self");
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
