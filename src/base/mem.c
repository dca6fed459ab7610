// SPDX-License-Identifier: Apache-2.0
/* mem.c - allocation helpers; see mem.h. */
#include "base/compat.h"
#include "base/mem.h"

static void oom(size_t n)
{
	fprintf(stderr, "profd: out of memory allocating %zu bytes\n", n);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom(n);
	return p;
}

void *xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);

	if (!p)
		oom(nmemb * size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		oom(n);
	return q;
}

void *xreallocarray(void *p, size_t nmemb, size_t size)
{
	size_t n;

	if (__builtin_mul_overflow(nmemb, size, &n))
		oom(SIZE_MAX);
	return xrealloc(p, n);
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *p;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&p, fmt, ap);
	va_end(ap);
	if (n < 0)
		oom(0);
	return p;
}

void *prof_spares_take(struct prof_spares *s)
{
	void *p = NULL;

	pthread_mutex_lock(&s->mu);
	if (s->n)
		p = s->v[--s->n];
	pthread_mutex_unlock(&s->mu);
	return p;
}

bool prof_spares_give(struct prof_spares *s, void *p)
{
	bool kept = false;

	pthread_mutex_lock(&s->mu);
	if (s->n < PROF_SPARES_MAX) {
		s->v[s->n++] = p;
		kept = true;
	}
	pthread_mutex_unlock(&s->mu);
	return kept;
}
