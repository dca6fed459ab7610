// SPDX-License-Identifier: Apache-2.0
/* multipart.c - multipart/form-data parts of an in-memory body; see multipart.h. */
#include "base/compat.h"
#include "server/multipart.h"

#include <strings.h>

/* Value of parameter @param in a header value ("name=\"x\"; filename=y"). */
static bool header_param(const char *v, size_t vn, const char *param, char *out, size_t outsz)
{
	size_t pl = strlen(param);
	const char *end = v + vn;

	for (const char *p = v; p < end; p++) {
		/* A parameter starts after ';' or at a blank. */
		if (p != v && p[-1] != ';' && p[-1] != ' ' && p[-1] != '\t')
			continue;
		if ((size_t)(end - p) <= pl || strncasecmp(p, param, pl) || p[pl] != '=')
			continue;
		const char *q = p + pl + 1;
		size_t n = 0;

		if (q < end && *q == '"') {
			q++;
			while (q < end && *q != '"') {
				if (*q == '\\' && q + 1 < end)
					q++;
				if (n + 1 < outsz)
					out[n++] = *q;
				q++;
			}
		} else {
			while (q < end && *q != ';' && *q != ' ' && *q != '\t') {
				if (n + 1 < outsz)
					out[n++] = *q;
				q++;
			}
		}
		out[n] = '\0';
		return true;
	}
	return false;
}

int server_multipart_boundary(const char *ctype, char *out, size_t outsz)
{
	size_t n = strcspn(ctype, ";");

	while (n && (ctype[n - 1] == ' ' || ctype[n - 1] == '\t'))
		n--;
	if (n != strlen("multipart/form-data") || strncasecmp(ctype, "multipart/form-data", n))
		return -EINVAL;
	if (!header_param(ctype, strlen(ctype), "boundary", out, outsz))
		return -EINVAL;
	n = strlen(out);
	if (n < 1 || n > 70)
		return -EINVAL;
	return 0;
}

static const char *find(const char *hay, size_t hn, const char *needle, size_t nn)
{
	return nn <= hn ? memmem(hay, hn, needle, nn) : NULL;
}

static void copy_trim(char *out, size_t outsz, const char *s, size_t n)
{
	while (n && (*s == ' ' || *s == '\t')) {
		s++;
		n--;
	}
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	n = PROF_MIN(n, outsz - 1);
	memcpy(out, s, n);
	out[n] = '\0';
}

int server_multipart_parse(const char *boundary, const char *body, size_t n,
			   struct server_part *parts, size_t max, size_t *nparts,
			   struct prof_err *err)
{
	char delim[80];
	size_t dl;
	const char *p, *end = body + n;

	*nparts = 0;
	dl = (size_t)snprintf(delim, sizeof(delim), "\r\n--%s", boundary);
	if (dl >= sizeof(delim))
		return prof_err_set(err, -PROF_ECORRUPT, -1, "multipart: boundary too long");
	/* The first delimiter may start the body without the leading CRLF. */
	if (n >= dl - 2 && !memcmp(body, delim + 2, dl - 2))
		p = body + dl - 2;
	else if ((p = find(body, n, delim, dl)))
		p += dl;
	else
		return prof_err_set(err, -PROF_ECORRUPT, 0,
				    "multipart: the body does not contain the boundary '%s' "
				    "from the Content-Type",
				    boundary);
	for (;;) {
		/* After a delimiter: "--" closes, else transport padding and CRLF. */
		if (end - p >= 2 && p[0] == '-' && p[1] == '-')
			return 0;
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return prof_err_set(
				err, -PROF_ECORRUPT, p - body,
				"multipart: expected CRLF after the boundary at byte %td",
				p - body);
		p += 2;
		if (*nparts >= max)
			return prof_err_set(err, -PROF_ETOOBIG, p - body,
					    "multipart: more than %zu parts", max);
		struct server_part *pt = &parts[(*nparts)++];

		memset(pt, 0, sizeof(*pt));
		/* Headers, one per line, up to an empty line. */
		for (;;) {
			const char *eol = find(p, (size_t)(end - p), "\r\n", 2);
			size_t ln;

			if (!eol)
				return prof_err_set(err, -PROF_ECORRUPT, p - body,
						    "multipart: part %zu: headers do not end",
						    *nparts - 1);
			ln = (size_t)(eol - p);
			if (ln == 0) {
				p = eol + 2;
				break;
			}
			if (ln > 1024)
				return prof_err_set(err, -PROF_ECORRUPT, p - body,
						    "multipart: part %zu: header line over 1 KiB",
						    *nparts - 1);
			const char *colon = memchr(p, ':', ln);

			if (colon) {
				size_t kn = (size_t)(colon - p);
				const char *v = colon + 1;
				size_t vn = (size_t)(eol - v);

				if (kn == 19 && !strncasecmp(p, "Content-Disposition", kn)) {
					header_param(v, vn, "name", pt->name, sizeof(pt->name));
					header_param(v, vn, "filename", pt->filename,
						     sizeof(pt->filename));
				} else if (kn == 12 && !strncasecmp(p, "Content-Type", kn)) {
					copy_trim(pt->ctype, sizeof(pt->ctype), v, vn);
				}
			}
			p = eol + 2;
		}
		const char *next = find(p, (size_t)(end - p), delim, dl);

		if (!next)
			return prof_err_set(
				err, -PROF_ECORRUPT, p - body,
				"multipart: part %zu ('%s') is not closed by the boundary "
				"(truncated upload?)",
				*nparts - 1, pt->name);
		pt->data = p;
		pt->len = (size_t)(next - p);
		p = next + dl;
	}
}

const struct server_part *server_multipart_find(const struct server_part *parts, size_t n,
						const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(parts[i].name, name))
			return &parts[i];
	return NULL;
}
