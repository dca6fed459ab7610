// SPDX-License-Identifier: Apache-2.0
/*
 * local.c - in-process requests: decoding of path and query string; see
 * local.h.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "server/local.h"

/*
 * Decode @s in place up to its NUL: %XX always, '+' as a space when
 * @plus. A '%' not followed by two hex digits stays as it is (MHD does the
 * same). -EINVAL when a byte decodes to NUL.
 */
static int unescape(char *s, bool plus)
{
	char *w = s;

	for (const char *r = s; *r; r++) {
		int hi, lo;

		if (*r == '%' && (hi = parse_hex_digit((unsigned char)r[1])) >= 0 &&
		    (lo = parse_hex_digit((unsigned char)r[2])) >= 0) {
			if (!hi && !lo)
				return -EINVAL;
			*w++ = (char)(hi << 4 | lo);
			r += 2;
		} else {
			*w++ = plus && *r == '+' ? ' ' : *r;
		}
	}
	*w = '\0';
	return 0;
}

int server_local_parse(struct server_local *l, const char *path_and_query)
{
	char *q, *p;

	memset(l, 0, sizeof(*l));
	if (!path_and_query || path_and_query[0] != '/' ||
	    strlen(path_and_query) > SERVER_LOCAL_MAX_INPUT)
		return -EINVAL;
	l->buf = xstrdup(path_and_query);
	q = strchr(l->buf, '?');
	if (q)
		*q++ = '\0';
	if (unescape(l->buf, false))
		return -EINVAL;
	l->path = l->buf;
	for (p = q; p && *p;) {
		char *amp = strchr(p, '&'), *eq;

		if (amp)
			*amp = '\0';
		if (*p) {
			if (l->nargs == SERVER_LOCAL_MAX_ARGS)
				return -EINVAL;
			eq = strchr(p, '=');
			if (eq)
				*eq++ = '\0';
			if (unescape(p, true) || (eq && unescape(eq, true)))
				return -EINVAL;
			l->args[l->nargs].key = p;
			l->args[l->nargs].value = eq;
			l->nargs++;
		}
		p = amp ? amp + 1 : NULL;
	}
	return 0;
}

void server_local_release(struct server_local *l)
{
	if (!l)
		return;
	free(l->buf);
	memset(l, 0, sizeof(*l));
}

const char *server_local_arg(const struct server_local *l, const char *name)
{
	for (size_t i = 0; i < l->nargs; i++)
		if (!strcmp(l->args[i].key, name))
			return l->args[i].value; /* NULL for "key" alone, as MHD */
	return NULL;
}

const char *server_local_header(const struct server_local *l, const char *name)
{
	if (!strcasecmp(name, "Authorization"))
		return l->authorization;
	if (!strcasecmp(name, "X-Profd-Dataset"))
		return l->dataset;
	return NULL;
}
