/* SPDX-License-Identifier: Apache-2.0 */
/*
 * parse.h - checked number, duration and time parsing.
 * Every parser checks the whole string was consumed ("12abc" is not 12)
 * and reports overflow; never use bare strtol.
 */
#ifndef PROF_BASE_PARSE_H
#define PROF_BASE_PARSE_H

#include "base/compat.h"

/** parse_u64() - decimal unsigned; 0 or -EINVAL / -ERANGE. */
int parse_u64(const char *s, uint64_t *out);
/** parse_i64() - decimal signed, optional leading '-'; 0 or -EINVAL / -ERANGE. */
int parse_i64(const char *s, int64_t *out);
/**
 * parse_duration_ns() - "10s", "500ms", "2m", "1h", "250us", "100ns"
 * (a bare number means seconds) into nanoseconds. 0 or -EINVAL / -ERANGE.
 */
int parse_duration_ns(const char *s, int64_t *out);
/**
 * parse_time_ms() - a query time: unix milliseconds, "now", or
 * "now-15m" / "now-1h" (any parse_duration_ns suffix), relative to @now_ms.
 */
int parse_time_ms(const char *s, int64_t now_ms, int64_t *out);
/**
 * parse_size_bytes() - "64MiB", "512KB", "1GiB", "123" (bytes) into bytes;
 * K/KB/KiB, M/MB/MiB, G/GB/GiB are all binary multiples. 0 or -EINVAL /
 * -ERANGE.
 */
int parse_size_bytes(const char *s, uint64_t *out);
/** parse_hex_digit() - the value 0..15 of hex digit @c (either case), or -1. */
static inline int parse_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20; /* ASCII lower case; maps no non-letter into 'a'..'f' */
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}
/*
 * Build IDs as profiles carry them: hex digits (either case), an even
 * number of them (whole bytes), PARSE_BUILD_ID_MIN..PARSE_BUILD_ID_MAX
 * digits (1 to 64 bytes; GNU build IDs are 8 to 20, Go's ELF ones 20).
 */
#define PARSE_BUILD_ID_MIN 2
#define PARSE_BUILD_ID_MAX 128
/**
 * parse_build_id_ok() - true when the @n bytes at @s are a build ID as
 * above. Nothing else is ever used to build a path or key a lookup: a
 * value with '/', '.', NUL or anything but hex digits is refused.
 */
bool parse_build_id_ok(const char *s, size_t n);
/** prof_now_ns() - CLOCK_REALTIME in nanoseconds since the epoch. */
int64_t prof_now_ns(void);

/**
 * parse_base64() - decode @n bytes of base64 (RFC 4648: the standard or
 * the URL-safe alphabet, padding optional, no blanks) into a new buffer
 * of *@outn bytes, owned by the caller (free); NULL when @s is not base64.
 */
uint8_t *parse_base64(const char *s, size_t n, size_t *outn);

#endif
