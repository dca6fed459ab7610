// SPDX-License-Identifier: Apache-2.0
/* series.c - per-step, per-group values of a stack set; see series.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/jsonout.h"
#include "query/series.h"

/* Which trie nodes the derived metric counts (NULL = all). */
static bool *function_mask(const struct query_stackset *ss, const struct query_series_opts *o)
{
	if (!o->function || !*o->function)
		return NULL;
	bool *m = xcalloc(ss->nodes.n + 1, sizeof(bool));
	uint32_t fn = strtab_find(&ss->names, o->function, strlen(o->function));

	if (fn == UINT32_MAX || fn == 0)
		return m; /* nothing has that name */
	for (size_t i = 1; i < ss->nodes.n; i++) {
		const struct query_ss_node *nd = &ss->nodes.v[i];
		bool here = nd->name == fn;

		m[i] = o->mode == QUERY_FN_SELF ? here : (here || m[nd->parent]);
	}
	return m;
}

struct rank_ctx {
	const struct query_stackset *ss;
};

static int cmp_group(const void *a, const void *b, void *arg)
{
	const struct query_stackset *ss = ((const struct rank_ctx *)arg)->ss;
	const struct query_series_group *x = a, *y = b;

	if (x->sum != y->sum)
		return x->sum > y->sum ? -1 : 1;
	size_t lx = ss->groups.len[x->group], ly = ss->groups.len[y->group];
	int c = memcmp(ss->groups.s[x->group], ss->groups.s[y->group], PROF_MIN(lx, ly));
	return c ? c : (lx < ly ? -1 : lx > ly);
}

int query_series_build(const struct query_stackset *ss, const struct query_series_opts *o,
		       struct query_series *s)
{
	size_t ng = ss->groups.n, nb = ss->nbuckets;
	bool *mask = function_mask(ss, o);
	double *cells = xcalloc(ng * nb + 1, sizeof(double));
	bool *seen = xcalloc(ng + 1, sizeof(bool));

	memset(s, 0, sizeof(*s));
	s->nbuckets = nb;
	if (!ss->ngroup_by)
		seen[0] = true; /* one series, zeros for an empty range */
	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[i];

		seen[e->group] = true;
		if (mask && !mask[e->node])
			continue;
		double v = ss->cumulative ? (double)e->value : e->gauge;
		cells[(size_t)e->group * nb + e->bucket] += v;
		s->matched += v;
	}
	size_t n = 0;
	struct query_series_group *all = xcalloc(ng + 1, sizeof(*all));
	for (size_t g = 0; g < ng; g++) {
		if (!seen[g])
			continue;
		all[n].group = (uint32_t)g;
		all[n].values = cells + g * nb; /* borrowed until copied below */
		for (size_t b = 0; b < nb; b++)
			all[n].sum += all[n].values[b];
		n++;
	}
	struct rank_ctx rc = { ss };
	if (n > 1)
		qsort_r(all, n, sizeof(*all), cmp_group, &rc);
	size_t keep = o->limit && n > o->limit ? o->limit : n;
	s->groups = xcalloc(keep + 1, sizeof(*s->groups));
	for (size_t i = 0; i < keep; i++) {
		s->groups[i] = all[i];
		s->groups[i].values = xcalloc(nb, sizeof(double));
		memcpy(s->groups[i].values, all[i].values, nb * sizeof(double));
	}
	s->ngroups = keep;
	s->nother = n - keep;
	if (s->nother) {
		s->other = xcalloc(nb, sizeof(double));
		for (size_t i = keep; i < n; i++)
			for (size_t b = 0; b < nb; b++)
				s->other[b] += all[i].values[b];
	}
	free(all);
	free(cells);
	free(seen);
	free(mask);
	return 0;
}

void query_series_release(struct query_series *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->ngroups; i++)
		free(s->groups[i].values);
	free(s->groups);
	free(s->other);
	memset(s, 0, sizeof(*s));
}

static int write_values(struct buf *out, const double *v, size_t n, bool integers, double div)
{
	int rc = buf_add(out, "[", 1);

	for (size_t b = 0; b < n && !rc; b++) {
		double x = v[b] / div;

		if (integers)
			rc = buf_addf(out, b ? ",%.0f" : "%.0f", x);
		else
			rc = buf_addf(out, b ? ",%.6g" : "%.6g", x);
	}
	return rc ? rc : buf_add(out, "]", 1);
}

static int write_labels(struct buf *out, const struct query_stackset *ss, uint32_t group)
{
	int rc = buf_add(out, "{", 1);

	for (size_t i = 0; i < ss->ngroup_by && !rc; i++) {
		size_t len;
		const char *v = query_stackset_group_value(ss, group, i, &len);

		if (i)
			rc = buf_add(out, ",", 1);
		if (!rc)
			rc = query_json_str(out, ss->group_by[i], strlen(ss->group_by[i]));
		if (!rc)
			rc = buf_add(out, ":", 1);
		if (!rc)
			rc = query_json_str(out, v, len);
	}
	return rc ? rc : buf_add(out, "}", 1);
}

int query_series_write_json(const struct query_series *s, const struct query_stackset *ss,
			    const struct query_series_opts *o, struct buf *out)
{
	bool cum = ss->cumulative;
	double step_s = ss->step_ns > 0 ? (double)ss->step_ns / 1e9 : 1.0;
	int rc = query_json_open(out, ss->type, ss->unit);

	if (!rc)
		rc = buf_addf(out, ",\"cumulative\":%s,\"aggregation\":\"%s\"",
			      cum ? "true" : "false", cum ? "sum" : "average");
	if (!rc && cum)
		rc = buf_addf(out, ",\"rate_unit\":\"%s/s\"", ss->unit);
	if (!rc)
		rc = buf_addf(out,
			      ",\"from_ms\":%" PRId64 ",\"to_ms\":%" PRId64 ",\"step_ms\":%" PRId64
			      ",\"samples\":%" PRIu64 ",\"timestamps\":[",
			      ss->from_ns / 1000000, ss->to_ns / 1000000, ss->step_ns / 1000000,
			      ss->rows);
	for (size_t b = 0; b < s->nbuckets && !rc; b++)
		rc = buf_addf(out, b ? ",%" PRId64 : "%" PRId64,
			      (ss->from_ns + (int64_t)b * ss->step_ns) / 1000000);
	if (!rc)
		rc = buf_addstr(out, "],\"group_by\":[");
	for (size_t i = 0; i < ss->ngroup_by && !rc; i++) {
		if (i)
			rc = buf_add(out, ",", 1);
		if (!rc)
			rc = query_json_str(out, ss->group_by[i], strlen(ss->group_by[i]));
	}
	if (!rc)
		rc = buf_addstr(out, "],\"function\":");
	if (!rc && o->function && *o->function)
		rc = query_json_str(out, o->function, strlen(o->function));
	else if (!rc)
		rc = buf_addstr(out, "null");
	if (!rc)
		rc = buf_addf(out, ",\"mode\":\"%s\",\"series\":[",
			      o->mode == QUERY_FN_SELF ? "self" : "total");
	for (size_t i = 0; i < s->ngroups && !rc; i++) {
		const struct query_series_group *g = &s->groups[i];

		rc = buf_addstr(out, i ? ",{\"labels\":" : "{\"labels\":");
		if (!rc)
			rc = write_labels(out, ss, g->group);
		if (!rc && cum)
			rc = buf_addf(out, ",\"total\":%.0f,\"values\":", g->sum);
		else if (!rc)
			rc = buf_addf(out, ",\"mean\":%.6g,\"values\":",
				      s->nbuckets ? g->sum / (double)s->nbuckets : 0.0);
		if (!rc)
			rc = write_values(out, g->values, s->nbuckets, cum, 1.0);
		if (!rc && cum) {
			rc = buf_addstr(out, ",\"rates\":");
			if (!rc)
				rc = write_values(out, g->values, s->nbuckets, false, step_s);
		}
		if (!rc)
			rc = buf_add(out, "}", 1);
	}
	if (!rc)
		rc = buf_addstr(out, "],\"other\":");
	if (!rc && !s->nother) {
		rc = buf_addstr(out, "null");
	} else if (!rc) {
		rc = buf_addf(out, "{\"groups\":%zu,\"values\":", s->nother);
		if (!rc)
			rc = write_values(out, s->other, s->nbuckets, cum, 1.0);
		if (!rc && cum) {
			rc = buf_addstr(out, ",\"rates\":");
			if (!rc)
				rc = write_values(out, s->other, s->nbuckets, false, step_s);
		}
		if (!rc)
			rc = buf_add(out, "}", 1);
	}
	if (!rc)
		rc = buf_add(out, "}", 1);
	return rc;
}
