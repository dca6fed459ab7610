// SPDX-License-Identifier: Apache-2.0
/*
 * text.c - budgeted text, units, times and URLs for the MCP tools; see
 * text.h.
 */
#include "base/compat.h"
#include "base/parse.h"
#include "mcp/text.h"
#include "query/units.h"

#include <math.h>
#include <time.h>

void mcp_text_init(struct mcp_text *t, size_t max_tokens)
{
	buf_init(&t->b, 0);
	t->limit = max_tokens * MCP_CHARS_PER_TOKEN;
	t->truncated = false;
}

void mcp_text_release(struct mcp_text *t)
{
	buf_release(&t->b);
}

size_t mcp_text_room(const struct mcp_text *t)
{
	if (t->truncated || t->b.len >= t->limit)
		return 0;
	return t->limit - t->b.len;
}

bool mcp_text_line(struct mcp_text *t, const char *fmt, ...)
{
	char line[2048];
	va_list ap;
	int n;

	if (t->truncated)
		return false;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return false;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1; /* a very long name: cut the line, keep the text */
	if (t->b.len + (size_t)n + 1 > t->limit) {
		t->truncated = true;
		return false;
	}
	(void)buf_add(&t->b, line, (size_t)n);
	(void)buf_add(&t->b, "\n", 1);
	return true;
}

void mcp_text_tail(struct mcp_text *t, const char *fmt, ...)
{
	char line[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = (int)sizeof(line) - 1;
	(void)buf_add(&t->b, line, (size_t)n);
	(void)buf_add(&t->b, "\n", 1);
}

char *mcp_fmt_value(const char *unit, double v, char *out, size_t n)
{
	char num[64];

	if (!unit)
		unit = "";
	query_unit_format(unit, v, num, sizeof(num));
	if (!strcmp(unit, "nanoseconds") || !strcmp(unit, "bytes") || !strcmp(unit, "count") ||
	    !*unit)
		snprintf(out, n, "%s", num);
	else
		snprintf(out, n, "%s %s", num, unit);
	return out;
}

char *mcp_fmt_pct(double part, double whole, char *out, size_t n)
{
	double p = whole ? 100.0 * part / whole : 0.0;

	if (!isfinite(p))
		p = 0;
	snprintf(out, n, "%.2f%%", p);
	return out;
}

char *mcp_fmt_time(int64_t ms, char *out, size_t n)
{
	time_t sec;
	int frac;
	struct tm tm;

	/* years 1 to 9999 only: RFC 3339 has four year digits */
	if (ms < -62135596800000LL || ms > 253402300799999LL) {
		snprintf(out, n, "%" PRId64 "ms", ms);
		return out;
	}
	sec = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
	frac = (int)(ms - (int64_t)sec * 1000);
	if (!gmtime_r(&sec, &tm)) {
		snprintf(out, n, "%" PRId64 "ms", ms);
		return out;
	}
	if (frac)
		snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
			 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, frac);
	else
		snprintf(out, n, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1,
			 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec);
	return out;
}

char *mcp_fmt_span(int64_t ms, char *out, size_t n)
{
	static const struct {
		int64_t ms;
		const char *unit;
	} u[] = { { 86400000, "d" }, { 3600000, "h" }, { 60000, "m" }, { 1000, "s" } };
	size_t w = 0, parts = 0;

	if (ms < 0)
		ms = 0;
	if (ms < 1000 || (ms % 1000 && ms < 60000)) {
		snprintf(out, n, "%.3gs", (double)ms / 1000.0);
		return out;
	}
	out[0] = '\0';
	/* at most two units, largest first: "2d3h", "10m20s", "1h" */
	for (size_t i = 0; i < PROF_ARRAY_SIZE(u) && parts < 2 && w < n; i++) {
		int64_t k = ms / u[i].ms;

		if (!k && !parts)
			continue;
		if (k)
			w += (size_t)snprintf(out + w, n - w, "%" PRId64 "%s", k, u[i].unit);
		ms -= k * u[i].ms;
		parts++;
	}
	return out;
}

/* Exactly @n decimal digits at @s into *@v. */
static bool digits(const char *s, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		*v = *v * 10 + (s[i] - '0');
	}
	return true;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int64_t y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;

	return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DDTHH:MM:SS[.fff][Z|+HH:MM|-HH:MM]" (also ' ' or 't' for 'T', 'z'). */
static int parse_rfc3339(const char *s, int64_t *out)
{
	int y, mo, d, h, mi, sec, ms = 0, off = 0, oh, om;
	const char *p = s + 19;

	if (strlen(s) < 20 || !digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) ||
	    s[7] != '-' || !digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') || !digits(s + 11, 2, &h) ||
	    s[13] != ':' || !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &sec))
		return -EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return -EINVAL;
	if (*p == '.') {
		int scale = 100;

		p++;
		if (*p < '0' || *p > '9')
			return -EINVAL;
		for (; *p >= '0' && *p <= '9'; p++) {
			ms += (*p - '0') * scale;
			scale /= 10;
		}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		if (!digits(p + 1, 2, &oh) || p[3] != ':' || !digits(p + 4, 2, &om) || oh > 23 ||
		    om > 59)
			return -EINVAL;
		off = (oh * 60 + om) * (*p == '-' ? -1 : 1);
		p += 6;
	} else {
		return -EINVAL;
	}
	if (*p)
		return -EINVAL;
	*out = ((days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + sec) - off * 60) * 1000 +
	       ms;
	return 0;
}

int mcp_parse_time(const char *s, int64_t now_ms, int64_t *out_ms)
{
	if (!s || !*s)
		return -EINVAL;
	if (!parse_time_ms(s, now_ms, out_ms))
		return 0;
	return parse_rfc3339(s, out_ms);
}

int mcp_url_arg(struct buf *b, const char *key, const char *value)
{
	int rc;

	if (!value)
		return 0;
	rc = buf_add(b, b->p && strchr(b->p, '?') ? "&" : "?", 1);
	if (!rc)
		rc = buf_add_url_escaped(b, key);
	if (!rc)
		rc = buf_add(b, "=", 1);
	if (!rc)
		rc = buf_add_url_escaped(b, value);
	return rc;
}
