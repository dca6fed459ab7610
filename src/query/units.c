// SPDX-License-Identifier: Apache-2.0
/* units.c - type ids and value formatting; see units.h. */
#include "base/compat.h"
#include "query/units.h"

#include <math.h>

bool query_type_split(const char *id, struct query_type_id *out)
{
	char *fields[5] = { out->name, out->sample_type, out->sample_unit, out->period_type,
			    out->period_unit };
	size_t nf = 0;
	const char *s = id ? id : "";

	memset(out, 0, sizeof(*out));
	for (;;) {
		size_t k = strcspn(s, ":");

		if (nf < 5)
			snprintf(fields[nf], sizeof(out->name), "%.*s", (int)PROF_MIN(k, 63), s);
		nf++;
		if (!s[k])
			break;
		s += k + 1;
	}
	return nf == 5;
}

bool query_type_is_cumulative(const char *id)
{
	struct query_type_id t;

	query_type_split(id, &t);
	if (!strncmp(t.sample_type, "inuse", 5))
		return false;
	if (!strcmp(t.name, "goroutine") || !strcmp(t.name, "goroutines") ||
	    !strcmp(t.sample_type, "goroutine") || !strcmp(t.sample_type, "goroutines"))
		return false;
	return true;
}

char *query_unit_format(const char *unit, double v, char *out, size_t outsz)
{
	double a = fabs(v);

	if (!unit)
		unit = "";
	if (!strcmp(unit, "nanoseconds")) {
		static const struct {
			double f;
			const char *s;
		} d[] = { { 3600e9, "h" }, { 60e9, "min" }, { 1e9, "s" },
			  { 1e6, "ms" },   { 1e3, "us" },   { 1, "ns" } };

		for (size_t i = 0; i < PROF_ARRAY_SIZE(d); i++) {
			if (a >= d[i].f || i + 1 == PROF_ARRAY_SIZE(d)) {
				if (d[i].f == 1)
					snprintf(out, outsz, "%.0fns", v);
				else
					snprintf(out, outsz, "%.2f%s", v / d[i].f, d[i].s);
				return out;
			}
		}
	}
	if (!strcmp(unit, "bytes")) {
		static const char *s[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
		size_t i = 0;
		double x = v;

		while (fabs(x) >= 1024 && i + 1 < PROF_ARRAY_SIZE(s)) {
			x /= 1024;
			i++;
		}
		if (i == 0)
			snprintf(out, outsz, "%.0fB", v);
		else
			snprintf(out, outsz, "%.2f%s", x, s[i]);
		return out;
	}
	if (a >= 1e9)
		snprintf(out, outsz, "%.2fG", v / 1e9);
	else if (a >= 1e6)
		snprintf(out, outsz, "%.2fM", v / 1e6);
	else if (a >= 1e4)
		snprintf(out, outsz, "%.1fk", v / 1e3);
	else if (v == floor(v))
		snprintf(out, outsz, "%.0f", v);
	else
		snprintf(out, outsz, "%.2f", v);
	return out;
}
