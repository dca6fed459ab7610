/* SPDX-License-Identifier: Apache-2.0 */
/*
 * qargs.h - the query parameters of one API request, each name once, as
 * the views read them (query/request.h query_arg_fn).
 *
 * A URL may repeat a parameter (?group_by=a&group_by=b); libmicrohttpd and
 * server_local_arg hand out the first value only, which would silently
 * drop the rest. docs/api.md says which parameters are lists, and so how
 * their repeats combine:
 *   - comma lists (group_by, hide): the values' items together, in order,
 *     each once (group_by=a&group_by=b,a is group_by=a,b);
 *   - frame regexes (stack_filter, frame_filter): any of them, as the
 *     explorer joins its filter chips: stack_filter=a&stack_filter=b is
 *     stack_filter=(?:a\E)|(?:b\E), a stack with a frame matching a or b.
 *     Each value must compile alone (PCRE2, as query/filter.h), and the
 *     \E closes a \Q it leaves open (PCRE2 ignores a stray \E), so no
 *     value changes the meaning of the next; a value that refers to a
 *     group (\1, \g{1}, \k<n>, (?1), (?R), (?(1)..)) is refused when
 *     there are several, as its numbers would point into another value;
 *   - for both, an empty value adds nothing (as one empty value means no
 *     filter and no grouping);
 *   - any other parameter given twice is an error (two types, two ranges:
 *     the server does not pick one).
 *
 * Keys and single values are lent from the request (valid while it is
 * being handled); combined values are owned here.
 */
#ifndef PROF_SERVER_QARGS_H
#define PROF_SERVER_QARGS_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"

/* Distinct parameters per request; a view takes fewer (query/request.c). */
#define SERVER_QARGS_MAX 48
/* Bytes of one combined value; a URL is shorter (libmicrohttpd's buffer). */
#define SERVER_QARGS_MAX_JOINED (256u << 10)

struct server_qarg {
	const char *key;   /* lent */
	const char *value; /* lent (count 1) or @joined.p; NULL for "key" without '=' */
	size_t count;	   /* times given */
	size_t items;	   /* items (comma) or regexes in @joined */
	struct buf joined; /* owned: the combined value once a list repeats */
};

/** struct server_qargs - zero-initialise (= { 0 }); release with server_qargs_release. */
struct server_qargs {
	struct server_qarg v[SERVER_QARGS_MAX];
	size_t n;
};

/**
 * server_qargs_add() - record parameter @key = @value (NULL: no '=').
 * -EINVAL, with @err naming the parameter, when @key repeats and is not
 * a list, or past SERVER_QARGS_MAX distinct keys; when a repeated regex
 * does not compile alone (@err as query_regex_compile: the value, and the
 * error's offset in it in @err->offset and the message) or does not
 * combine with the others (an item such as (*UCP) that may only start a
 * pattern, or an (?x) comment that hides the closing parenthesis); -PROF_ETOOBIG
 * when a combined value would pass SERVER_QARGS_MAX_JOINED bytes; -ENOMEM.
 */
int server_qargs_add(struct server_qargs *q, const char *key, const char *value,
		     struct prof_err *err);

/** server_qargs_get() - the (combined) value of @key, or NULL when absent. Lent from @q. */
const char *server_qargs_get(const struct server_qargs *q, const char *key);

/** server_qargs_release() - free the combined values; @q is empty after. */
void server_qargs_release(struct server_qargs *q);

#endif
