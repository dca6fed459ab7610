// SPDX-License-Identifier: Apache-2.0
/* selector.c - hand-written single-pass selector parser; see selector.h. */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "query/selector.h"

#include <ctype.h>

struct parser {
	const char *s;
	size_t pos;
	struct prof_err *err;
};

#define PARSE_FAIL(ps, at, ...) \
	prof_err_set((ps)->err, -EINVAL, (int64_t)(at), "selector: at byte " __VA_ARGS__)

static void skip_ws(struct parser *ps)
{
	while (ps->s[ps->pos] == ' ' || ps->s[ps->pos] == '\t' || ps->s[ps->pos] == '\n' ||
	       ps->s[ps->pos] == '\r')
		ps->pos++;
}

static bool is_name_start(char c)
{
	return isalpha((unsigned char)c) || c == '_';
}

static bool is_name_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.';
}

static bool is_type_char(char c)
{
	return isalnum((unsigned char)c) || c == '_' || c == '.' || c == ':' || c == '-';
}

/* A quoted string at ps->pos into @out. */
static int parse_string(struct parser *ps, struct buf *out)
{
	size_t start = ps->pos;
	char q = ps->s[ps->pos];

	if (q != '"' && q != '\'' && q != '`')
		return PARSE_FAIL(ps, ps->pos, "%zu: expected a quoted string", ps->pos);
	ps->pos++;
	for (;;) {
		char c = ps->s[ps->pos];

		if (c == '\0')
			return PARSE_FAIL(ps, start, "%zu: unterminated string", start);
		if (c == q) {
			ps->pos++;
			return 0;
		}
		if (c == '\\' && q != '`') {
			char e = ps->s[ps->pos + 1];

			switch (e) {
			case '\\':
			case '"':
			case '\'':
				c = e;
				break;
			case 'n':
				c = '\n';
				break;
			case 'r':
				c = '\r';
				break;
			case 't':
				c = '\t';
				break;
			default:
				return PARSE_FAIL(ps, ps->pos, "%zu: unknown escape sequence",
						  ps->pos);
			}
			ps->pos++;
		}
		if (buf_add(out, &c, 1))
			return PARSE_FAIL(ps, ps->pos, "%zu: string too long", ps->pos);
		ps->pos++;
	}
}

static int parse_matcher(struct parser *ps, struct query_selector *sel)
{
	struct buf name, value;
	enum store_match_op op;
	size_t name_at = ps->pos, value_at;
	int rc;

	buf_init(&name, 4096);
	buf_init(&value, 1 << 20);
	if (is_name_start(ps->s[ps->pos])) {
		while (is_name_char(ps->s[ps->pos]))
			ps->pos++;
		if (buf_add(&name, ps->s + name_at, ps->pos - name_at)) {
			rc = PARSE_FAIL(ps, name_at, "%zu: label name too long", name_at);
			goto out;
		}
	} else if (ps->s[ps->pos] == '"' || ps->s[ps->pos] == '\'' || ps->s[ps->pos] == '`') {
		rc = parse_string(ps, &name);
		if (rc)
			goto out;
		if (!name.len) {
			rc = PARSE_FAIL(ps, name_at, "%zu: empty label name", name_at);
			goto out;
		}
	} else {
		rc = PARSE_FAIL(ps, ps->pos, "%zu: expected a label name", ps->pos);
		goto out;
	}
	skip_ws(ps);
	const char *o = ps->s + ps->pos;
	if (o[0] == '=' && o[1] == '~') {
		op = STORE_MATCH_RE;
		ps->pos += 2;
	} else if (o[0] == '!' && o[1] == '~') {
		op = STORE_MATCH_NOT_RE;
		ps->pos += 2;
	} else if (o[0] == '!' && o[1] == '=') {
		op = STORE_MATCH_NE;
		ps->pos += 2;
	} else if (o[0] == '=') {
		op = STORE_MATCH_EQ;
		ps->pos += 1;
	} else {
		rc = PARSE_FAIL(ps, ps->pos, "%zu: expected '=', '!=', '=~' or '!~' after label %s",
				ps->pos, name.p);
		goto out;
	}
	skip_ws(ps);
	value_at = ps->pos;
	rc = parse_string(ps, &value);
	if (rc)
		goto out;
	struct store_matcher m;
	struct prof_err rerr;
	prof_err_init(&rerr);
	rc = store_matcher_init(&m, name.p, op, value.p ? value.p : "", &rerr);
	if (rc) {
		/* Point at the byte of the regex error inside the selector. */
		size_t at = value_at + 1 + (size_t)PROF_MAX(rerr.offset, 0);
		rc = PARSE_FAIL(ps, at, "%zu: %s", at, rerr.msg);
		goto out;
	}
	sel->m = xreallocarray(sel->m, sel->n + 1, sizeof(*sel->m));
	sel->m[sel->n++] = m;
out:
	buf_release(&name);
	buf_release(&value);
	return rc;
}

int query_selector_parse(const char *s, struct query_selector *sel, struct prof_err *err)
{
	struct parser ps = { s ? s : "", 0, err };
	int rc;

	memset(sel, 0, sizeof(*sel));
	skip_ws(&ps);
	if (is_type_char(ps.s[ps.pos])) {
		size_t at = ps.pos;

		while (is_type_char(ps.s[ps.pos]))
			ps.pos++;
		sel->type = xstrndup(ps.s + at, ps.pos - at);
		skip_ws(&ps);
	}
	if (ps.s[ps.pos] == '{') {
		ps.pos++;
		skip_ws(&ps);
		while (ps.s[ps.pos] != '}') {
			rc = parse_matcher(&ps, sel);
			if (rc)
				return rc;
			skip_ws(&ps);
			if (ps.s[ps.pos] == ',') {
				ps.pos++;
				skip_ws(&ps);
			} else if (ps.s[ps.pos] != '}') {
				return PARSE_FAIL(&ps, ps.pos, "%zu: expected ',' or '}'", ps.pos);
			}
		}
		ps.pos++;
		skip_ws(&ps);
	}
	if (ps.s[ps.pos] != '\0')
		return PARSE_FAIL(&ps, ps.pos, "%zu: unexpected '%c'%s", ps.pos, ps.s[ps.pos],
				  sel->n || ps.pos == 0 ? "" : ", expected '{'");
	return 0;
}

void query_selector_release(struct query_selector *sel)
{
	if (!sel)
		return;
	for (size_t i = 0; i < sel->n; i++)
		store_matcher_release(&sel->m[i]);
	free(sel->m);
	free(sel->type);
	memset(sel, 0, sizeof(*sel));
}
