/* SPDX-License-Identifier: Apache-2.0 */
/*
 * utf8.h - UTF-8 validation for text made of bytes as ingested.
 *
 * Function and file names, label values and sample types come from
 * binaries and from pprof/OTLP string tables, which may hold any bytes;
 * JSON and XML texts must be UTF-8 (RFC 8259 section 8.1, XML 1.0 section
 * 4.3.3). Writers check each sequence with utf8_seq_len() and replace what
 * is not valid UTF-8 one byte at a time, as Go's encoding/json and
 * utf8.DecodeRune do (a truncated 3-byte sequence is two bad bytes).
 *
 * Valid: the shortest form of a code point in U+0000..U+10FFFF other than
 * the surrogates U+D800..U+DFFF (RFC 3629 section 4, "Well-Formed UTF-8
 * Byte Sequences" table in Unicode 15 section 3.9).
 */
#ifndef PROF_BASE_UTF8_H
#define PROF_BASE_UTF8_H

#include "base/compat.h"

/**
 * utf8_seq_len() - the length (1..4) of the valid UTF-8 sequence that
 * starts at @s, of which @n >= 1 bytes may be read; 0 when the first byte
 * does not start one (a stray continuation byte, 0xc0/0xc1/0xf5..0xff, an
 * overlong form, a surrogate, past U+10FFFF, or cut short by @n).
 */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/** utf8_valid() - are all @n bytes of @s valid UTF-8? */
bool utf8_valid(const void *s, size_t n);

#endif
