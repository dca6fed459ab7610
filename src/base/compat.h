/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compat.h - the first header every profd source file includes.
 *
 * Pulls in the C library headers nearly every file needs and bans the
 * functions that caused bugs elsewhere (git banned.h): unbounded string
 * copies and non-reentrant time conversion. Use snprintf, memcpy with an
 * explicit length, gmtime_r and localtime_r instead.
 */
#ifndef PROF_BASE_COMPAT_H
#define PROF_BASE_COMPAT_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * prof_add_sat() - @a + @b, saturating at INT64_MIN / INT64_MAX instead of
 * overflowing: sums of sample values (allocation counts near 2^63 exist in
 * the wild) stay at the extreme rather than wrap to a negative total.
 */
static inline int64_t prof_add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

#define PROF_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define PROF_MIN(a, b)	   ((a) < (b) ? (a) : (b))
#define PROF_MAX(a, b)	   ((a) > (b) ? (a) : (b))
#define PROF_UNUSED	   __attribute__((unused))
#define PROF_PRINTF(f, a)  __attribute__((format(printf, f, a)))

/* Always-on invariant check: prints file:line and aborts (Redis serverAssert). */
#define PROF_ASSERT(cond)                                            \
	do {                                                         \
		if (!(cond))                                         \
			prof_assert_fail(#cond, __FILE__, __LINE__); \
	} while (0)
void prof_assert_fail(const char *expr, const char *file, int line) __attribute__((noreturn));

#define BANNED(func) sorry_##func##_is_a_banned_function
#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gmtime
#define gmtime(t) BANNED(gmtime)
#undef localtime
#define localtime(t) BANNED(localtime)
#undef ctime
#define ctime(t) BANNED(ctime)
#undef mktemp
#define mktemp(t) BANNED(mktemp)

#endif
