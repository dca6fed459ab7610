// SPDX-License-Identifier: Apache-2.0
/* qargs.c - repeated query parameters combined per docs/api.md; see qargs.h. */
#include "base/compat.h"
#include "server/qargs.h"
#include "query/filter.h"

enum qarg_kind { QARG_ONE, QARG_COMMA, QARG_REGEX };

static enum qarg_kind qarg_kind(const char *key)
{
	if (!strcmp(key, "group_by") || !strcmp(key, "hide"))
		return QARG_COMMA;
	if (!strcmp(key, "stack_filter") || !strcmp(key, "frame_filter"))
		return QARG_REGEX;
	return QARG_ONE;
}

/* @s (@n bytes) without its leading and trailing spaces, as request.c reads items. */
static void qarg_trim(const char **s, size_t *n)
{
	while (*n && **s == ' ')
		(*s)++, (*n)--;
	while (*n && (*s)[*n - 1] == ' ')
		(*n)--;
}

/* Is @item (@n bytes, trimmed) one of the items of the comma list @list? */
static bool qarg_list_has(const char *list, const char *item, size_t n)
{
	while (list && *list) {
		size_t k = strcspn(list, ",");
		const char *t = list;

		qarg_trim(&t, &k);
		if (k == n && !memcmp(t, item, n))
			return true;
		list += strcspn(list, ",");
		list += *list == ',';
	}
	return false;
}

/*
 * Append the items of @v (non-empty) to the comma list @a, each label or
 * preset once: group_by=x&group_by=x is group_by=x. Empty items are kept
 * for request.c to refuse.
 */
static int qarg_join_comma(struct server_qarg *a, const char *v)
{
	int rc = 0;

	for (const char *s = v; !rc;) {
		size_t k = strcspn(s, ","), n = k;
		const char *t = s;

		qarg_trim(&t, &n);
		if (!n || !qarg_list_has(a->joined.p, t, n)) {
			rc = buf_addf(&a->joined, "%s%.*s", a->items ? "," : "", (int)k, s);
			a->items++;
		}
		if (!s[k])
			break;
		s += k + 1;
	}
	return rc;
}

/* Is the "(?" construct at @p (just after the "(?") a group reference? */
static bool qarg_paren_ref(const char *p)
{
	bool digit = p[0] >= '0' && p[0] <= '9';
	bool sdigit = (p[0] == '+' || p[0] == '-') && p[1] >= '0' && p[1] <= '9';

	if (p[0] == '(') /* a condition: only an assertion refers to no group */
		return p[1] != '?' && p[1] != '*';
	return digit || sdigit || p[0] == '&' || (p[0] == 'R' && p[1] == ')') ||
	       (p[0] == 'P' && (p[1] == '=' || p[1] == '>'));
}

/*
 * Offset in the regex @v of its first reference to a capture group or to
 * the whole pattern, or -1 if there is none. Per pcre2pattern(3):
 * backreferences \1..\9.., \g.., \k.., (?P=name); subroutine calls and
 * recursion (?R), (?1), (?+1), (?-1), (?&name), (?P>name), \g<..>;
 * conditions on a group or on recursion (?(1)..), (?(<name>)..), (?(R)..),
 * (?(DEFINE)..). Skipped: \Q..\E literals, character classes (where \1 is
 * an octal escape) and (?#..) comments. A value compiled alone has its
 * groups numbered from 1; joined after another value its numbers would
 * point into that value's groups, so such a value cannot be combined.
 * Names are refused with numbers: one rule is easier to state. Also the
 * offset of a "(*" (sets *@verb): a backtracking control verb such as
 * (*COMMIT) or (*ACCEPT) acts on the whole match, so joined it would
 * change what the other values match; a start-of-pattern option such as
 * (*UTF) is valid only first.
 */
static long qarg_regex_ref(const char *v, bool *verb)
{
	const char *p = v;

	*verb = false;
	while (*p) {
		if (p[0] == '\\') {
			if ((p[1] >= '1' && p[1] <= '9') || p[1] == 'g' || p[1] == 'k')
				return p - v;
			if (p[1] == 'Q') {
				const char *e = strstr(p + 2, "\\E");

				p = e ? e + 2 : p + strlen(p);
				continue;
			}
			/* \cX: X is data, even a '(' */
			p += !p[1] ? 1 : p[1] == 'c' && p[2] ? 3 : 2;
		} else if (p[0] == '[') {
			/* a class: "[]..]" and "[^]..]" hold a ']' first; "[:alpha:]" nests */
			p += 1 + (p[1] == '^');
			p += *p == ']';
			while (*p && *p != ']') {
				if (p[0] == '\\' && p[1] == 'Q') {
					const char *e = strstr(p + 2, "\\E");

					p = e ? e + 2 : p + strlen(p);
				} else if (p[0] == '\\') {
					p += p[1] ? 2 : 1;
				} else if (p[0] == '[' && p[1] == ':') {
					size_t k = 2 + (p[2] == '^');

					while (p[k] >= 'a' && p[k] <= 'z')
						k++;
					p += p[k] == ':' && p[k + 1] == ']' ? k + 2 : 1;
				} else {
					p++;
				}
			}
			p += *p == ']';
		} else if (p[0] == '(' && p[1] == '?' && p[2] == '#') {
			p += strcspn(p, ")");
		} else if (p[0] == '(' && p[1] == '?' && qarg_paren_ref(p + 2)) {
			return p - v;
		} else if (p[0] == '(' && p[1] == '*') {
			*verb = true; /* (*COMMIT), (*SKIP), (*ACCEPT), (*UTF), ... */
			return p - v;
		} else {
			p++;
		}
	}
	return -1;
}

/*
 * Append the regex @v (non-empty) to the alternation @a as (?:v\E): @v
 * must compile alone, and the \E ends a \Q that @v leaves open (PCRE2
 * ignores a stray \E), so each value means what it means alone; a value
 * that refers to a group (qarg_regex_ref) is refused. The
 * result must compile too: a value that is valid only at the start of a
 * pattern ((*UCP)) or that comments out the rest ((?x)a#) is refused.
 */
static int qarg_join_regex(struct server_qarg *a, const char *key, const char *v,
			   struct prof_err *err)
{
	struct prof_err e;
	void *re, *md;
	size_t len = a->joined.len;
	bool verb;
	long off;
	int rc;

	rc = query_regex_compile(key, v, &re, &md, err);
	query_regex_free(re, md);
	if (rc)
		return rc;
	off = qarg_regex_ref(v, &verb);
	if (off >= 0 && verb)
		return prof_err_set(err, -EINVAL, off,
				    "parameter '%.100s': value '%.200s' has a (*...) verb or "
				    "option at offset %ld, which acts on the whole pattern; it "
				    "cannot be combined with other %s values: give it alone",
				    key, v, off, key);
	if (off >= 0)
		return prof_err_set(err, -EINVAL, off,
				    "parameter '%.100s': value '%.200s' refers to a capture group "
				    "or to the whole pattern at offset %ld (a backreference, "
				    "subroutine call or condition); it cannot be combined with "
				    "other %s values, whose groups would take its numbers: give it "
				    "alone",
				    key, v, off, key);
	rc = buf_addf(&a->joined, "%s(?:%s\\E)", a->items ? "|" : "", v);
	if (rc)
		return rc;
	prof_err_init(&e);
	rc = query_regex_compile(key, a->joined.p, &re, &md, &e);
	query_regex_free(re, md);
	if (rc) {
		a->joined.len = len;
		a->joined.p[len] = '\0';
		return prof_err_set(err, rc, -1,
				    "parameter '%.100s': value '%.200s' does not combine with "
				    "the others (%s)",
				    key, v, e.msg);
	}
	a->items++;
	return 0;
}

/* Append @v (non-empty) to the list @a of kind @k. */
static int qarg_join(struct server_qarg *a, const char *key, enum qarg_kind k, const char *v,
		     struct prof_err *err)
{
	int rc = k == QARG_COMMA ? qarg_join_comma(a, v) : qarg_join_regex(a, key, v, err);

	if (rc == -PROF_ETOOBIG)
		return prof_err_set(err, rc, -1, "parameter '%.100s': the values are too long",
				    key);
	return rc;
}

int server_qargs_add(struct server_qargs *q, const char *key, const char *value,
		     struct prof_err *err)
{
	struct server_qarg *a = NULL;
	enum qarg_kind k = qarg_kind(key);
	const char *first;
	int rc = 0;

	for (size_t i = 0; i < q->n && !a; i++)
		if (!strcmp(q->v[i].key, key))
			a = &q->v[i];
	if (!a) {
		if (q->n == SERVER_QARGS_MAX)
			return prof_err_set(err, -EINVAL, -1, "more than %d distinct parameters",
					    SERVER_QARGS_MAX);
		a = &q->v[q->n++];
		a->key = key;
		a->value = value;
		a->count = 1;
		a->items = 0;
		buf_init(&a->joined, SERVER_QARGS_MAX_JOINED);
		return 0;
	}
	if (k == QARG_ONE)
		return prof_err_set(
			err, -EINVAL, -1,
			"parameter '%.100s' given more than once (it takes one value; "
			"only group_by, hide, stack_filter and frame_filter may repeat)",
			key);
	first = a->count == 1 ? a->value : NULL;
	a->count++;
	if (first && *first)
		rc = qarg_join(a, key, k, first, err);
	if (!rc && value && *value)
		rc = qarg_join(a, key, k, value, err);
	if (rc)
		return rc;
	a->value = a->joined.p ? a->joined.p : "";
	return 0;
}

const char *server_qargs_get(const struct server_qargs *q, const char *key)
{
	for (size_t i = 0; i < q->n; i++)
		if (!strcmp(q->v[i].key, key))
			return q->v[i].value;
	return NULL;
}

void server_qargs_release(struct server_qargs *q)
{
	for (size_t i = 0; i < q->n; i++)
		buf_release(&q->v[i].joined);
	q->n = 0;
}
