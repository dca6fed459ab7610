/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mem.h - allocation helpers and the growable vector used everywhere.
 *
 * xmalloc/xcalloc/xrealloc abort on out-of-memory (git's xmalloc): callers
 * that read untrusted input must cap sizes *before* allocating, so running
 * out of memory is a bug, not an input error. Sizes are checked for
 * multiplication overflow.
 *
 * VEC(T) is a plain struct { T *v; size_t n, cap; }; VEC_PUSH grows it by
 * doubling. The vector owns its array; elements are owned as the user says.
 */
#ifndef PROF_BASE_MEM_H
#define PROF_BASE_MEM_H

#include "base/compat.h"

#include <pthread.h>

void *xmalloc(size_t n);
void *xcalloc(size_t nmemb, size_t size);
void *xrealloc(void *p, size_t n);
/** xreallocarray() - realloc @p to @nmemb * @size bytes; aborts on overflow. */
void *xreallocarray(void *p, size_t nmemb, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
/** xasprintf() - malloc'd formatted string; caller frees. */
char *xasprintf(const char *fmt, ...) PROF_PRINTF(1, 2);

#define VEC(T)                 \
	struct {               \
		T *v;          \
		size_t n, cap; \
	}

/* Make room for @extra more elements in @vec. */
#define VEC_RESERVE(vec, extra)                                                    \
	do {                                                                       \
		if ((vec)->n + (extra) > (vec)->cap) {                             \
			size_t c_ = (vec)->cap ? (vec)->cap * 2 : 8;               \
			while (c_ < (vec)->n + (extra))                            \
				c_ *= 2;                                           \
			(vec)->v = xreallocarray((vec)->v, c_, sizeof(*(vec)->v)); \
			(vec)->cap = c_;                                           \
		}                                                                  \
	} while (0)

#define VEC_PUSH(vec, x)                    \
	do {                                \
		VEC_RESERVE(vec, 1);        \
		(vec)->v[(vec)->n++] = (x); \
	} while (0)

#define VEC_FREE(vec)                      \
	do {                               \
		free((vec)->v);            \
		(vec)->v = NULL;           \
		(vec)->n = (vec)->cap = 0; \
	} while (0)

/*
 * Spares: a bounded last-in-first-out stack of objects kept between calls
 * (a decoder's pools, the head's scratch tables) and shared by threads. A
 * call takes the one given back last, which the previous call left warm in
 * the cache (a server thread per connection would otherwise start each
 * request on tables another request evicted), and at most PROF_SPARES_MAX
 * are kept however many threads there are. Thread-safe.
 */
#define PROF_SPARES_MAX 16
struct prof_spares {
	pthread_mutex_t mu;
	unsigned n;
	void *v[PROF_SPARES_MAX];
};
#define PROF_SPARES_INIT                      \
	{                                     \
		PTHREAD_MUTEX_INITIALIZER, 0, \
		{                             \
			0                     \
		}                             \
	}

/** prof_spares_take() - the newest spare of @s (the caller owns it now), or NULL. */
void *prof_spares_take(struct prof_spares *s);
/** prof_spares_give() - keep @p in @s; false when @s is full (the caller frees @p). */
bool prof_spares_give(struct prof_spares *s, void *p);

#endif
