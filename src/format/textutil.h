/* SPDX-License-Identifier: Apache-2.0 */
/*
 * textutil.h - what the text and JSON decoders of format/ share: a line
 * reader that knows its line number and byte offset, errors that name
 * "line:column (byte N)", a JSON loader that refuses inputs whose parse
 * tree would be out of proportion to their size, an integer-id map, and
 * the budget on stack entries that keeps a decoder's output proportional
 * to its input.
 *
 * Why a budget: in a tree-shaped input (V8 nodes, speedscope open/close
 * events) a sample's stack is as deep as its node, so N nodes can ask for
 * N^2 stack entries while the input grows by N. Decoders charge every
 * stack entry they materialise against FMT_STACK_BUDGET(input size) and
 * fail with -PROF_ETOOBIG instead of exhausting memory.
 */
#ifndef PROF_FORMAT_TEXTUTIL_H
#define PROF_FORMAT_TEXTUTIL_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"

#include <jansson.h>

/** Stack entries (uint32 each) a decoder may create for @n input bytes. */
#define FMT_STACK_BUDGET(n) ((uint64_t)(n)*8 + (1u << 20))

/**
 * struct fmt_lines - iterate over the lines of a buffer.
 * @line, @len: the current line without its "\n" or "\r\n" (not NUL-terminated)
 * @off:        byte offset of @line in the buffer
 * @lineno:     1-based line number
 */
struct fmt_lines {
	const char *data, *end, *next;
	const char *line;
	size_t len;
	size_t off;
	size_t lineno;
};

/**
 * fmt_utf16_bom() - 'L' when @data starts with the UTF-16 little-endian
 * byte order mark (FF FE), 'B' for big-endian (FE FF), else 0. Windows
 * tools (PowerShell's `>` and Out-File before 7, Notepad's "Unicode")
 * write text files so.
 */
int fmt_utf16_bom(const void *data, size_t n);

/**
 * fmt_utf16_to_utf8() - transcode the UTF-16 text @data (@n bytes that
 * start with a byte order mark, fmt_utf16_bom; the mark is dropped) to
 * UTF-8, appended to @out (the caller's, initialised). Surrogate pairs
 * become 4-byte sequences; an unpaired surrogate or an odd last byte
 * becomes U+FFFD, as decoders of text do. The result is at most 1.5 times
 * @n; more than @max bytes of it is -PROF_ETOOBIG, as is @out's own cap.
 * Returns 0 or that code with @err set (may be NULL). -EINVAL without a BOM.
 */
int fmt_utf16_to_utf8(const void *data, size_t n, size_t max, struct buf *out,
		      struct prof_err *err);

/** fmt_lines_init() - start before the first line; a UTF-8 BOM is skipped. */
void fmt_lines_init(struct fmt_lines *it, const void *data, size_t n);
/** fmt_lines_next() - advance; false at the end of the buffer. */
bool fmt_lines_next(struct fmt_lines *it);

/**
 * fmt_text_err() - record -PROF_ECORRUPT (or @code when non-zero) for the
 * byte at @p inside the current line of @it, as
 * "<what>: line L:C (byte B): <message>". Returns the code.
 */
int fmt_text_err(struct prof_err *err, int code, const char *what, const struct fmt_lines *it,
		 const char *p, const char *fmt, ...) PROF_PRINTF(6, 7);

/**
 * fmt_json_load() - parse @n bytes of JSON (a leading UTF-8 BOM is
 * skipped) with duplicate keys rejected. Before parsing, one pass counts
 * the containers and values and refuses (-PROF_ETOOBIG) inputs whose
 * jansson tree would need more than 32 bytes per input byte plus
 * 256 MiB. Parse errors are -PROF_ECORRUPT naming line, column and byte
 * offset as jansson reports them. Returns the tree (caller json_decref's
 * it) or NULL with @err set.
 */
json_t *fmt_json_load(const void *data, size_t n, const char *what, struct prof_err *err);

/**
 * fmt_json_i64() - the integer in @v: a JSON integer, a real with an
 * integral value in range, or (when @allow_string) a decimal string.
 * false when @v is none of these.
 */
bool fmt_json_i64(const json_t *v, bool allow_string, int64_t *out);
/** fmt_json_num() - the number in @v as a double (integer or real); false otherwise. */
bool fmt_json_num(const json_t *v, double *out);

/**
 * struct fmt_idmap - map from a 64-bit key to a dense uint32 value
 * (open addressing, grows by doubling). Not thread-safe.
 */
struct fmt_idmap {
	uint64_t *keys;
	uint32_t *vals; /* value + 1; 0 = empty slot */
	size_t n, cap;
};

void fmt_idmap_init(struct fmt_idmap *m);
void fmt_idmap_release(struct fmt_idmap *m);
/** fmt_idmap_get() - true and *val when @key is present. */
bool fmt_idmap_get(const struct fmt_idmap *m, uint64_t key, uint32_t *val);
/** fmt_idmap_put() - insert @key -> @val; false (map unchanged) when @key is present. */
bool fmt_idmap_put(struct fmt_idmap *m, uint64_t key, uint32_t val);

#endif
