/* SPDX-License-Identifier: Apache-2.0 */
/*
 * text.h - what the MCP tools write for a model to read: a text buffer
 * with a budget, values in their units, times in UTC, URL building.
 *
 * Budget: a tool's output is cut to about max_tokens * 4 characters
 * (MCP_CHARS_PER_TOKEN), the usual size of an English/code token. Lines
 * are added whole or not at all; once a line did not fit, the text is
 * marked truncated and says so at its end, with what to change. The
 * closing lines (the exact API queries and the explorer link) are added
 * after the budget with mcp_text_tail, so they are never cut; they are
 * bounded by the argument length limits.
 */
#ifndef PROF_MCP_TEXT_H
#define PROF_MCP_TEXT_H

#include "base/buf.h"
#include "base/compat.h"

#define MCP_CHARS_PER_TOKEN 4

/** struct mcp_text - budgeted text; @b is NUL-terminated, owned. */
struct mcp_text {
	struct buf b;
	size_t limit;	/* bytes the body may reach */
	bool truncated; /* a line was dropped */
};

/** mcp_text_init() - an empty text of at most @max_tokens tokens. */
void mcp_text_init(struct mcp_text *t, size_t max_tokens);
/** mcp_text_release() - free @t's buffer. */
void mcp_text_release(struct mcp_text *t);

/**
 * mcp_text_line() - append one formatted line (a '\n' is added) when it
 * fits the budget; else mark @t truncated and drop it (and every later
 * line: a cut text stays a prefix). Returns true when the line was added.
 */
bool mcp_text_line(struct mcp_text *t, const char *fmt, ...) PROF_PRINTF(2, 3);

/** mcp_text_room() - bytes left in the budget (0 once truncated). */
size_t mcp_text_room(const struct mcp_text *t);

/**
 * mcp_text_tail() - append a line outside the budget (closing lines: the
 * query, the link, the truncation note). Never dropped.
 */
void mcp_text_tail(struct mcp_text *t, const char *fmt, ...) PROF_PRINTF(2, 3);

/**
 * mcp_fmt_value() - @v in @unit for a person: nanoseconds as durations
 * ("1.20s"), bytes as binary sizes ("1.50MiB"), anything else as a count
 * ("12345", "1.23M") followed by the unit unless it is "count"/"". @out is
 * always NUL-terminated; returns it.
 */
char *mcp_fmt_value(const char *unit, double v, char *out, size_t n);

/** mcp_fmt_pct() - 100 * @part / @whole as "12.34%" ("0.00%" for whole 0). */
char *mcp_fmt_pct(double part, double whole, char *out, size_t n);

/**
 * mcp_fmt_time() - unix milliseconds as RFC 3339 UTC, "2023-11-14T22:13:20Z",
 * with ".mmm" when @ms is not a whole second. Returns @out.
 */
char *mcp_fmt_time(int64_t ms, char *out, size_t n);

/** mcp_fmt_span() - a duration in ms as "20s", "1h", "2d3h", "1.5s". Returns @out. */
char *mcp_fmt_span(int64_t ms, char *out, size_t n);

/**
 * mcp_parse_time() - a time argument: unix milliseconds, "now",
 * "now-<duration>" (base/parse.h) or RFC 3339 ("2024-05-01T12:00:00Z",
 * fractions and "+02:00" offsets accepted). 0 or -EINVAL.
 */
int mcp_parse_time(const char *s, int64_t now_ms, int64_t *out_ms);

/**
 * mcp_url_arg() - append "&key=value" ('?' when @b holds no '?' yet),
 * the value percent-encoded; nothing when @value is NULL.
 */
int mcp_url_arg(struct buf *b, const char *key, const char *value);

#endif
