// SPDX-License-Identifier: Apache-2.0
/*
 * source.c - the line-level view (source.h): F's frames are named by
 * their line keys, so a line's self is its nodes' self and its total the
 * subtree sums of its nodes that have no ancestor of the same key (one
 * pass over the nodes in id order, parents first, and one back up).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "query/jsonout.h"
#include "query/scratch.h"
#include "query/source.h"

#include <stdlib.h>
#include <string.h>

/* The fields of line key @s (@n bytes) after the "F\x1f" prefix of @plen bytes. */
static bool parse_key(const char *s, size_t n, size_t plen, struct query_source_line *l)
{
	const char *end = s + n, *p = s + plen, *sep1, *sep2;
	int64_t v = 0;

	sep1 = memchr(p, QUERY_SS_LINE_SEP, (size_t)(end - p));
	if (!sep1)
		return false;
	for (const char *q = p; q < sep1; q++) {
		if (*q < '0' || *q > '9' || v > INT64_MAX / 10 - 9)
			return false;
		v = v * 10 + (*q - '0');
	}
	sep2 = memchr(sep1 + 1, QUERY_SS_LINE_SEP, (size_t)(end - sep1 - 1));
	if (!sep2)
		return false;
	memset(l, 0, sizeof(*l));
	l->line = v;
	l->file = sep1 + 1;
	l->file_len = (size_t)(sep2 - sep1 - 1);
	l->build_id = sep2 + 1;
	l->build_id_len = (size_t)(end - sep2 - 1);
	return true;
}

static int cmp_i64_desc(int64_t a, int64_t b)
{
	return a < b ? 1 : a > b ? -1 : 0;
}

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
	int c = memcmp(a, b, an < bn ? an : bn);

	return c ? c : an < bn ? -1 : an > bn ? 1 : 0;
}

static int cmp_place(const struct query_source_line *a, const struct query_source_line *b)
{
	int c = cmp_bytes(a->build_id, a->build_id_len, b->build_id, b->build_id_len);

	if (!c)
		c = cmp_bytes(a->file, a->file_len, b->file, b->file_len);
	if (!c)
		c = a->line < b->line ? -1 : a->line > b->line ? 1 : 0;
	return c;
}

static int cmp_self(const void *x, const void *y)
{
	const struct query_source_line *a = x, *b = y;
	int c = cmp_i64_desc(a->self, b->self);

	if (!c)
		c = cmp_i64_desc(a->total, b->total);
	return c ? c : cmp_place(a, b);
}

static int cmp_total(const void *x, const void *y)
{
	const struct query_source_line *a = x, *b = y;
	int c = cmp_i64_desc(a->total, b->total);

	if (!c)
		c = cmp_i64_desc(a->self, b->self);
	return c ? c : cmp_place(a, b);
}

static int cmp_line(const void *x, const void *y)
{
	return cmp_place(x, y);
}

void query_source_build(const struct query_stackset *ss, const char *function,
			enum query_source_sort sort, struct query_source *out)
{
	size_t fl = strlen(function), nn = ss->nodes.n;
	uint32_t *line_of, *up;
	int64_t *self = NULL, *sub;

	memset(out, 0, sizeof(*out));
	/* Line keys of F: name id -> index in out->lines + 1. */
	line_of = xcalloc(ss->names.n + 1, sizeof(uint32_t));
	for (uint32_t id = 1; id < ss->names.n; id++) {
		const char *s = ss->names.s[id];
		size_t n = ss->names.len[id];
		struct query_source_line l;

		if (n <= fl || memcmp(s, function, fl) || s[fl] != QUERY_SS_LINE_SEP ||
		    !parse_key(s, n, fl + 1, &l))
			continue;
		VEC_PUSH(&out->lines, l);
		line_of[id] = (uint32_t)out->lines.n;
	}
	if (!out->lines.n || !nn) {
		free(line_of);
		return;
	}
	query_stackset_node_sums(ss, &self, NULL);
	/* Subtree sums: children have larger ids than their parents. */
	sub = xcalloc(nn, sizeof(int64_t));
	for (size_t i = nn; i-- > 0;) {
		sub[i] = prof_add_sat(sub[i], self[i]);
		if (i)
			sub[ss->nodes.v[i].parent] =
				prof_add_sat(sub[ss->nodes.v[i].parent], sub[i]);
	}
	/* up[i]: the nearest node at or above i that is a frame of F (0 = none). */
	up = xcalloc(nn, sizeof(uint32_t));
	for (size_t i = 1; i < nn; i++) {
		const struct query_ss_node *nd = &ss->nodes.v[i];
		uint32_t k = line_of[nd->name];

		up[i] = k ? (uint32_t)i : up[nd->parent];
		if (!k)
			continue;
		struct query_source_line *l = &out->lines.v[k - 1];
		bool outer_f = up[nd->parent] == 0, outer_line = true;

		l->self = prof_add_sat(l->self, self[i]);
		out->self = prof_add_sat(out->self, self[i]);
		for (uint32_t a = up[nd->parent]; a && outer_line; a = up[ss->nodes.v[a].parent])
			outer_line = ss->nodes.v[a].name != nd->name;
		if (outer_line)
			l->total = prof_add_sat(l->total, sub[i]);
		if (outer_f)
			out->total = prof_add_sat(out->total, sub[i]);
	}
	/* Keys met only under hidden or filtered stacks have no value: drop them. */
	size_t k = 0;
	for (size_t i = 0; i < out->lines.n; i++)
		if (out->lines.v[i].total || out->lines.v[i].self)
			out->lines.v[k++] = out->lines.v[i];
	out->lines.n = k;
	out->found = k > 0;
	qsort(out->lines.v, out->lines.n, sizeof(*out->lines.v),
	      sort == QUERY_SOURCE_BY_TOTAL  ? cmp_total
	      : sort == QUERY_SOURCE_BY_LINE ? cmp_line
					     : cmp_self);
	query_scratch_give(self);
	free(sub);
	free(up);
	free(line_of);
}

void query_source_release(struct query_source *s)
{
	if (!s)
		return;
	VEC_FREE(&s->lines);
	memset(s, 0, sizeof(*s));
}

/* --- JSON ----------------------------------------------------------------------------------- */

/* A file of the answer: its place, its text when read, and why not otherwise. */
struct src_file {
	const struct query_source_line *first; /* for file and build ID */
	int64_t self;
	size_t nlines;
	bool have;					  /* text read */
	struct buf text;				  /* the file */
	VEC(uint32_t) starts;				  /* offset of each line in @text */
	char reason[sizeof(((struct prof_err *)0)->msg)]; /* why there is no text */
};

static bool same_file(const struct query_source_line *a, const struct query_source_line *b)
{
	return a->file_len == b->file_len && a->build_id_len == b->build_id_len &&
	       !memcmp(a->file, b->file, a->file_len) &&
	       !memcmp(a->build_id, b->build_id, a->build_id_len);
}

/* Index the lines of @f's text: starts.v[i] is where line i + 1 begins. */
static void index_lines(struct src_file *f)
{
	const char *p = f->text.p, *end = f->text.p + f->text.len;

	while (p && p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		VEC_PUSH(&f->starts, (uint32_t)(p - f->text.p));
		p = nl ? nl + 1 : end;
	}
}

/* Line @line (1-based) of @f's text: its start and length, NULL past the end. */
static const char *text_line(const struct src_file *f, int64_t line, size_t *len)
{
	*len = 0;
	if (line < 1 || (uint64_t)line > f->starts.n)
		return NULL;
	const char *p = f->text.p + f->starts.v[line - 1];
	const char *end = (uint64_t)line < f->starts.n ? f->text.p + f->starts.v[line] - 1
						       : f->text.p + f->text.len;

	*len = (size_t)(end - p);
	if (*len && p[*len - 1] == '\n') /* the last line's own newline */
		(*len)--;
	if (*len && p[*len - 1] == '\r')
		(*len)--;
	return p;
}

static int add_text(struct buf *out, const char *s, size_t n)
{
	return query_json_str(out, s,
			      n > QUERY_SOURCE_MAX_LINE_TEXT ? QUERY_SOURCE_MAX_LINE_TEXT : n);
}

static void files_collect(const struct query_source *s, enum query_source_text text,
			  const struct sym_srcroot *root, struct src_file **out, size_t *nout)
{
	struct src_file *f = NULL;
	size_t n = 0;

	for (size_t i = 0; i < s->lines.n; i++) {
		const struct query_source_line *l = &s->lines.v[i];
		size_t k = 0;

		while (k < n && !same_file(f[k].first, l))
			k++;
		if (k == n) {
			if (n == 64)
				continue; /* the files beyond the 64th are counted in no file */
			f = xreallocarray(f, n + 1, sizeof(*f));
			memset(&f[n], 0, sizeof(*f));
			f[n].first = l;
			buf_init(&f[n].text, 0);
			n++;
		}
		f[k].self = prof_add_sat(f[k].self, l->self);
		f[k].nlines++;
	}
	size_t read_bytes = 0;

	for (size_t k = 0; k < n; k++) {
		char name[4096];
		struct prof_err err;

		if (text == QUERY_SOURCE_TEXT_NONE) {
			snprintf(f[k].reason, sizeof(f[k].reason), "no text was asked for");
			continue;
		}
		if (!f[k].first->file_len) {
			snprintf(f[k].reason, sizeof(f[k].reason),
				 "the profile and the symbolizer name no source file");
			continue;
		}
		if (!root) {
			snprintf(f[k].reason, sizeof(f[k].reason),
				 "the server has no source path (profd server --source-path DIR)");
			continue;
		}
		if (f[k].first->file_len >= sizeof(name)) {
			snprintf(f[k].reason, sizeof(f[k].reason), "the file name is too long");
			continue;
		}
		/* Bounds a query's memory: 64 files of the 4 MiB a file may have is 256 MiB. */
		if (read_bytes >= QUERY_SOURCE_MAX_TEXT_BYTES) {
			snprintf(f[k].reason, sizeof(f[k].reason),
				 "this answer's source files are over %u MiB; narrow the query",
				 QUERY_SOURCE_MAX_TEXT_BYTES >> 20);
			continue;
		}
		memcpy(name, f[k].first->file, f[k].first->file_len);
		name[f[k].first->file_len] = '\0';
		prof_err_init(&err);
		if (memchr(f[k].first->file, '\0', f[k].first->file_len))
			snprintf(f[k].reason, sizeof(f[k].reason),
				 "the file name holds a NUL byte");
		else if (sym_srcroot_read(root, name, &f[k].text, &err))
			snprintf(f[k].reason, sizeof(f[k].reason), "%s", err.msg);
		else
			f[k].have = true;
		if (f[k].have) {
			read_bytes += f[k].text.len;
			index_lines(&f[k]);
		}
	}
	*out = f;
	*nout = n;
}

static int write_file_text(const struct src_file *f, struct buf *out)
{
	int rc = buf_addstr(out, ",\"text\":[");

	for (size_t i = 0; !rc && i < f->starts.n && i < QUERY_SOURCE_MAX_FILE_LINES; i++) {
		size_t n;
		const char *p = text_line(f, (int64_t)i + 1, &n);

		if (i)
			rc = buf_add(out, ",", 1);
		if (!rc)
			rc = add_text(out, p, n);
	}
	return rc ? rc : buf_add(out, "]", 1);
}

int query_source_write_json(const struct query_source *s, const struct query_stackset *ss,
			    const char *function, enum query_source_sort sort, size_t limit,
			    enum query_source_text text, const struct sym_srcroot *root,
			    struct buf *out)
{
	static const char *const sorts[] = { "self", "total", "line" };
	size_t nshow = limit && limit < s->lines.n ? limit : s->lines.n, nf = 0;
	struct src_file *files = NULL;
	int rc = query_json_open(out, ss->type, ss->unit);

	files_collect(s, text, root, &files, &nf);
	if (!rc)
		rc = buf_addstr(out, ",\"function\":");
	if (!rc)
		rc = query_json_str(out, function, strlen(function));
	if (!rc)
		rc = buf_addf(out,
			      ",\"found\":%s,\"self\":%" PRId64 ",\"total\":%" PRId64
			      ",\"profile_total\":%" PRId64 ",\"samples\":%" PRIu64
			      ",\"sort\":\"%s\",\"limit\":%zu,\"nlines\":%zu,\"truncated\":%s"
			      ",\"builds\":[",
			      s->found ? "true" : "false", s->self, s->total, ss->total, ss->rows,
			      sorts[sort], limit, s->lines.n,
			      nshow < s->lines.n ? "true" : "false");
	/* The distinct build IDs, in the order their first line comes. */
	for (size_t i = 0, nb = 0; !rc && i < nf; i++) {
		const struct query_source_line *l = files[i].first;
		bool seen = false;

		for (size_t j = 0; j < i && !seen; j++)
			seen = files[j].first->build_id_len == l->build_id_len &&
			       !memcmp(files[j].first->build_id, l->build_id, l->build_id_len);
		if (seen || !l->build_id_len)
			continue;
		if (nb++)
			rc = buf_add(out, ",", 1);
		if (!rc)
			rc = query_json_str(out, l->build_id, l->build_id_len);
	}
	if (!rc)
		rc = buf_addstr(out, "],\"lines\":[");
	for (size_t i = 0; !rc && i < nshow; i++) {
		const struct query_source_line *l = &s->lines.v[i];

		rc = buf_addstr(out, i ? ",{\"file\":" : "{\"file\":");
		if (!rc)
			rc = query_json_str(out, l->file, l->file_len);
		if (!rc)
			rc = buf_addstr(out, ",\"build_id\":");
		if (!rc)
			rc = query_json_str(out, l->build_id, l->build_id_len);
		if (!rc)
			rc = buf_addf(out,
				      ",\"line\":%" PRId64 ",\"self\":%" PRId64
				      ",\"total\":%" PRId64,
				      l->line, l->self, l->total);
		for (size_t k = 0; !rc && k < nf; k++) {
			size_t n;
			const char *t;

			if (!files[k].have || !same_file(files[k].first, l))
				continue;
			t = text_line(&files[k], l->line, &n);
			if (t) {
				rc = buf_addstr(out, ",\"text\":");
				if (!rc)
					rc = add_text(out, t, n);
			}
		}
		if (!rc)
			rc = buf_add(out, "}", 1);
	}
	if (!rc)
		rc = buf_addstr(out, "],\"files\":[");
	for (size_t k = 0; !rc && k < nf; k++) {
		const struct src_file *f = &files[k];

		rc = buf_addstr(out, k ? ",{\"file\":" : "{\"file\":");
		if (!rc)
			rc = query_json_str(out, f->first->file, f->first->file_len);
		if (!rc)
			rc = buf_addstr(out, ",\"build_id\":");
		if (!rc)
			rc = query_json_str(out, f->first->build_id, f->first->build_id_len);
		if (!rc)
			rc = buf_addf(out, ",\"self\":%" PRId64 ",\"lines\":%zu,\"source\":\"%s\"",
				      f->self, f->nlines, f->have ? "available" : "unavailable");
		if (!rc && !f->have) {
			rc = buf_addstr(out, ",\"reason\":");
			if (!rc)
				rc = query_json_str(out, f->reason, strlen(f->reason));
		}
		if (!rc && f->have && text == QUERY_SOURCE_TEXT_FILE)
			rc = write_file_text(f, out);
		if (!rc)
			rc = buf_add(out, "}", 1);
	}
	for (size_t k = 0; k < nf; k++) {
		buf_release(&files[k].text);
		VEC_FREE(&files[k].starts);
	}
	free(files);
	return rc ? rc : buf_add(out, "]}", 2);
}
