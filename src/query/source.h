/* SPDX-License-Identifier: Apache-2.0 */
/*
 * source.h - the line-level view of one function F: its self and total
 * per source line, from a stack set collected with params.line_fn = F
 * (query/stackset.h "Line keys"), so F's frames are named by (line, file,
 * build ID).
 *
 * A frame's line is the line of its sample's address (pprof Line.line,
 * OTLP's Line, or the query-time symbolizer's DWARF line table; for the
 * outer part of an inline chain, the call site of the inlined callee),
 * so cost inlined into F from a callee shows on the line that calls it.
 *
 *   self   of a line: the value of the stacks whose leaf is F at that line;
 *   total  of a line: the value of the stacks with a frame of F at that
 *          line, each stack once however often it recurses through it.
 *
 * F's own self and total are as the table has them (self: leaf frames of
 * F; total: each stack with F once). Lines are kept apart per build ID,
 * so a range over two builds of a binary gives each build its own lines.
 */
#ifndef PROF_QUERY_SOURCE_H
#define PROF_QUERY_SOURCE_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/mem.h"
#include "query/stackset.h"
#include "symbolize/srcroot.h"

struct query_source_line {
	const char *file, *build_id; /* point into the set's names; "" when unknown */
	size_t file_len, build_id_len;
	int64_t line; /* 0 = unknown */
	int64_t self, total;
};

struct query_source {
	int64_t self, total; /* F's */
	bool found;	     /* F is a frame of a selected stack */
	VEC(struct query_source_line) lines;
};

enum query_source_sort {
	QUERY_SOURCE_BY_SELF,  /* self, then total, descending */
	QUERY_SOURCE_BY_TOTAL, /* total, then self, descending */
	QUERY_SOURCE_BY_LINE,  /* build ID, file, line ascending */
};

/** What the JSON answer holds of the source text. */
enum query_source_text {
	QUERY_SOURCE_TEXT_LINES, /* each listed line's text */
	QUERY_SOURCE_TEXT_FILE,	 /* and each file's lines (at most QUERY_SOURCE_MAX_FILE_LINES) */
	QUERY_SOURCE_TEXT_NONE,
};

#define QUERY_SOURCE_MAX_LINE_TEXT  240
#define QUERY_SOURCE_MAX_FILE_LINES 20000
/* Source text read for one answer: files past it get a reason, not their text. */
#define QUERY_SOURCE_MAX_TEXT_BYTES (16u << 20)

/**
 * query_source_build() - the lines of @function in @ss (collected with
 * line_fn == @function) into @out (overwritten; release it), sorted by
 * @sort. Lent strings point into @ss: valid while it lives unchanged.
 */
void query_source_build(const struct query_stackset *ss, const char *function,
			enum query_source_sort sort, struct query_source *out);

/** query_source_release() - NULL is allowed. */
void query_source_release(struct query_source *s);

/**
 * query_source_write_json() - append
 * {"type":..,"unit":..,"function":F,"found":B,"self":N,"total":N,
 *  "profile_total":N,"samples":N,"sort":S,"limit":N,"nlines":N,
 *  "truncated":B,"builds":[ID,...],
 *  "lines":[{"file":..,"build_id":..,"line":N,"self":N,"total":N
 *            [,"text":..]}],
 *  "files":[{"file":..,"build_id":..,"self":N,"lines":N,
 *            "source":"available"|"unavailable","reason":..[,"text":[..]]}]}
 * with the first @limit lines (0 = all). With @root NULL or @text NONE
 * there is no text, and each file's reason says why. 0 or -PROF_ETOOBIG.
 */
int query_source_write_json(const struct query_source *s, const struct query_stackset *ss,
			    const char *function, enum query_source_sort sort, size_t limit,
			    enum query_source_text text, const struct sym_srcroot *root,
			    struct buf *out);

#endif
