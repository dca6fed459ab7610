// SPDX-License-Identifier: Apache-2.0
/*
 * pprof_legacy_match.c - pprof's regular expressions for the legacy text
 * formats matched by hand, each next to its Go text (google/pprof
 * profile/legacy_profile.go and legacy_java_profile.go), with RE2's
 * leftmost-first semantics: linear on hostile lines; and line errors.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/pprof_legacy.h"
#include "format/textutil.h"
#include "format/pprof_legacy_int.h"

#include <math.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* ---- hex addresses and pprof's regular expressions ------------------------- */

/*
 * parseHexAddresses: every match of 0x[0-9a-f]+ in [p, e) (leftmost,
 * non-overlapping), each parsed as a 64-bit number; pushes the location
 * of each (minus @adjust, wrapping) onto g->stk. With @leaf non-NULL the
 * first address of a stack (*leaf true) is not adjusted; *leaf carries the
 * state over calls for stacks that span lines. Returns false when an
 * address does not fit in 64 bits, with *bad pointing at it.
 */
bool lg_hex_addrs(struct lg *g, const char *p, const char *e, uint64_t adjust, bool *leaf,
		  const char **bad)
{
	while (p + 2 < e) {
		const char *q;
		uint64_t a;

		if (p[0] != '0' || p[1] != 'x' || !is_lhex(p[2])) {
			p++;
			continue;
		}
		for (q = p + 2; q < e && is_lhex(*q); q++)
			;
		if (!go_atou_base(sl_make(p + 2, (size_t)(q - p - 2)), 16, &a)) {
			*bad = p;
			return false;
		}
		if (leaf && *leaf)
			*leaf = false;
		else
			a -= adjust;
		VEC_PUSH(&g->stk, lg_loc(g, a));
		p = q;
	}
	return true;
}

/*
 * heapHeaderRE  heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)
 * growthHeaderRE        ...  *\] @ growthz?
 * fragmentationHeaderRE ...  *\] @ fragmentationz?
 * Unanchored: the first "heap profile:" from which the expression matches.
 * @kind is "heap" (groups 5 and 6 filled), "growth" or "fragmentation".
 */

bool lg_match_heap_header(struct sl line, const char *kind, struct heap_hdr *h)
{
	static const char lead[] = "heap profile:";
	const char *e = line.p + line.n, *p = line.p;

	while ((p = memmem(p, (size_t)(e - p), lead, sizeof(lead) - 1)) != NULL) {
		const char *q = p + sizeof(lead) - 1;
		bool ok = true;

		p++;
		for (int i = 0; i < 4 && ok; i++) {
			size_t d;

			q = spaces(q, e);
			d = digits(q, e);
			h->num[i] = sl_make(q, d);
			q += d;
			if (!d)
				ok = false;
			else if (i == 0 || i == 2)
				ok = q < e && *q++ == ':';
			else if (i == 1)
				ok = (q = spaces(q, e)) < e && *q++ == '[';
		}
		if (!ok || (q = spaces(q, e)) >= e || *q++ != ']')
			continue;
		if (!strcmp(kind, "heap")) {
			const char *n0;

			q = spaces(q, e);
			if (q >= e || *q++ != '@')
				continue;
			q = spaces(q, e);
			if ((size_t)(e - q) < 4 || memcmp(q, "heap", 4))
				continue;
			n0 = q;
			for (q += 4;
			     q < e && (is_digit(*q) || (*q >= 'a' && *q <= 'z') || *q == '_'); q++)
				;
			h->name = sl_make(n0, (size_t)(q - n0));
			if (q < e && *q == '/')
				q++;
			h->rate = sl_make(q, digits(q, e));
			return true;
		}
		if ((size_t)(e - q) >= 3 + strlen(kind) && !memcmp(q, " @ ", 3) &&
		    !memcmp(q + 3, kind, strlen(kind)))
			return true;
	}
	return false;
}

/*
 * heapSampleRE  (-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)
 * Unanchored. A match must start at a digit run (or the '-' before it)
 * and then is determined by it; when it fails, it fails from anywhere in
 * the same run too, so the search moves on to the next run: linear.
 */
bool lg_match_heap_sample(struct sl line, struct sl g[4], struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *q = p;
		bool ok = true;

		if (!is_digit(*p) && !(*p == '-' && p + 1 < e && is_digit(p[1]))) {
			p++;
			continue;
		}
		for (int i = 0; i < 4 && ok; i++) {
			const char *s0;

			if (i)
				q = spaces(q, e);
			s0 = q;
			if (i < 2 && q < e && *q == '-')
				q++;
			if (!digits(q, e)) {
				ok = false;
				break;
			}
			q += digits(q, e);
			g[i] = sl_make(s0, (size_t)(q - s0));
			if (i == 0 || i == 2)
				ok = q < e && *q++ == ':';
			else if (i == 1)
				ok = (q = spaces(q, e)) < e && *q++ == '[';
			else
				ok = (q = spaces(q, e)) <= e && e - q >= 3 && !memcmp(q, "] @", 3);
		}
		if (ok) {
			q += 3;
			stack->p = q;
			while (q < e && (*q == ' ' || *q == 'x' || is_lhex(*q)))
				q++;
			stack->n = (size_t)(q - stack->p);
			return true;
		}
		/* Skip the run this attempt started at. */
		if (*p == '-')
			p++;
		p += digits(p, e);
	}
	return false;
}

/*
 * contentionSampleRE  (\d+) *(\d+) @([ x0-9a-f]*)
 * From the start of a digit run D1: either D1, spaces (>= 1), a digit run
 * D2, " @" (groups D1, D2); or, backtracking into D1, all of D1 but its
 * last digit and that digit, when D1 (2+ digits) is followed by " @".
 */
bool lg_match_contention_sample(struct sl line, struct sl *v1, struct sl *v2, struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *d1e, *q, *at = NULL;
		size_t l1;

		if (!is_digit(*p)) {
			p++;
			continue;
		}
		l1 = digits(p, e);
		d1e = p + l1;
		q = spaces(d1e, e);
		if (q > d1e && q < e && is_digit(*q)) {
			size_t l2 = digits(q, e);

			if (e - (q + l2) >= 2 && q[l2] == ' ' && q[l2 + 1] == '@') {
				*v1 = sl_make(p, l1);
				*v2 = sl_make(q, l2);
				at = q + l2 + 2;
			}
		}
		if (!at && l1 >= 2 && e - d1e >= 2 && d1e[0] == ' ' && d1e[1] == '@') {
			*v1 = sl_make(p, l1 - 1);
			*v2 = sl_make(d1e - 1, 1);
			at = d1e + 2;
		}
		if (at) {
			stack->p = at;
			while (at < e && (*at == ' ' || *at == 'x' || is_lhex(*at)))
				at++;
			stack->n = (size_t)(at - stack->p);
			return true;
		}
		p = d1e;
	}
	return false;
}

/* javaSampleRx   *(\d+) +(\d+) +@ +([ x0-9a-f]*) (unanchored). */
bool lg_match_java_sample(struct sl line, struct sl *v1, struct sl *v2, struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *q, *r;
		size_t l1, l2;

		if (!is_digit(*p)) {
			p++;
			continue;
		}
		l1 = digits(p, e);
		q = spaces(p + l1, e);
		l2 = q > p + l1 ? digits(q, e) : 0;
		r = spaces(q + l2, e);
		if (l2 && r > q + l2 && r < e && *r == '@' && r + 1 < e && r[1] == ' ') {
			*v1 = sl_make(p, l1);
			*v2 = sl_make(q, l2);
			r = spaces(r + 1, e);
			stack->p = r;
			while (r < e && (*r == ' ' || *r == 'x' || is_lhex(*r)))
				r++;
			stack->n = (size_t)(r - stack->p);
			return true;
		}
		p += l1;
	}
	return false;
}

/* countStartRE  \A(\S+) profile: total \d+\z */
bool lg_match_count_start(struct sl line, struct sl *type)
{
	const char *p = line.p, *e = line.p + line.n, *q = p;
	static const char mid[] = " profile: total ";

	while (q < e && !is_re_space(*q))
		q++;
	if (q == p || (size_t)(e - q) < sizeof(mid) - 1 || memcmp(q, mid, sizeof(mid) - 1))
		return false;
	*type = sl_make(p, (size_t)(q - p));
	q += sizeof(mid) - 1;
	return q < e && digits(q, e) == (size_t)(e - q);
}

/* countRE  \A(\d+) @(( 0x[0-9a-f]+)+)\z: *count and the stack text. */
bool lg_match_count(struct sl line, struct sl *count, struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n, *q;
	size_t d = digits(p, e);

	if (!d || (size_t)(e - p - d) < 2 || p[d] != ' ' || p[d + 1] != '@')
		return false;
	*count = sl_make(p, d);
	q = p + d + 2;
	stack->p = q;
	if (q == e)
		return false;
	while (q < e) {
		if (e - q < 4 || q[0] != ' ' || q[1] != '0' || q[2] != 'x' || !is_lhex(q[3]))
			return false;
		for (q += 3; q < e && is_lhex(*q); q++)
			;
	}
	stack->n = (size_t)(e - stack->p);
	return true;
}

/* threadzStartRE  --- threadz \d+ --- (unanchored) */
bool lg_match_threadz_start(struct sl line)
{
	static const char lead[] = "--- threadz ";
	const char *e = line.p + line.n, *p = line.p;

	while ((p = memmem(p, (size_t)(e - p), lead, sizeof(lead) - 1)) != NULL) {
		const char *q = p + sizeof(lead) - 1;
		size_t d = digits(q, e);

		p++;
		if (d && e - (q + d) >= 4 && !memcmp(q + d, " ---", 4))
			return true;
	}
	return false;
}

/* threadStartRE  --- Thread ([[:xdigit:]]+) \(name: (.*)/(\d+)\) stack: --- (unanchored) */
bool lg_match_thread_start(struct sl line)
{
	static const char lead[] = "--- Thread ", name[] = " (name: ", tail[] = ") stack: ---";
	const char *e = line.p + line.n, *p = line.p;

	while ((p = memmem(p, (size_t)(e - p), lead, sizeof(lead) - 1)) != NULL) {
		const char *q = p + sizeof(lead) - 1;

		p++;
		if (q >= e || !is_xdigit(*q))
			continue;
		while (q < e && is_xdigit(*q))
			q++;
		if ((size_t)(e - q) < sizeof(name) - 1 || memcmp(q, name, sizeof(name) - 1))
			continue;
		for (q += sizeof(name) - 1; q < e; q++) {
			size_t d;

			if (*q != '/')
				continue;
			d = digits(q + 1, e);
			if (d && (size_t)(e - (q + 1 + d)) >= sizeof(tail) - 1 &&
			    !memcmp(q + 1 + d, tail, sizeof(tail) - 1))
				return true;
		}
	}
	return false;
}

/*
 * attributeRx  ([\w ]+)=([\w ]+): the first run of [\w ] that is followed
 * by '=' and then by at least one [\w ]; both groups trimmed.
 */
bool lg_match_java_attr(struct sl line, struct sl *key, struct sl *val)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *q = p, *v;

		if (!is_word(*p) && *p != ' ') {
			p++;
			continue;
		}
		while (q < e && (is_word(*q) || *q == ' '))
			q++;
		if (q < e && *q == '=' && q + 1 < e && (is_word(q[1]) || q[1] == ' ')) {
			*key = trim(sl_make(p, (size_t)(q - p)));
			for (v = q + 1; v < e && (is_word(*v) || *v == ' '); v++)
				;
			*val = trim(sl_make(q + 1, (size_t)(v - q - 1)));
			return true;
		}
		p = q;
	}
	return false;
}

int lg_line_err(struct lg *g, const struct lg_scan *s, const char *at, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fmt_text_err(g->err, -PROF_ECORRUPT, g->what, &s->it, at ? at : s->it.line, "%s",
			    msg);
}
