// SPDX-License-Identifier: Apache-2.0
/* diff.c - differential call tree of two stack sets; see diff.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/change.h"
#include "query/jsonout.h"
#include "query/scratch.h"
#include "query/diff.h"
#include "query/units.h"

#include <math.h>

#define DEFAULT_Z	   1.96
#define DEFAULT_MAX_STACKS 100

int query_diff_check(const char *type_a, const char *type_b, struct prof_err *err)
{
	struct query_type_id a, b;

	query_type_split(type_a, &a);
	query_type_split(type_b, &b);
	if (strcmp(a.sample_unit, b.sample_unit))
		return prof_err_set(err, -EINVAL, -1,
				    "cannot compare different units: A (%s) is in %s, B (%s) in %s",
				    type_a, a.sample_unit[0] ? a.sample_unit : "(none)", type_b,
				    b.sample_unit[0] ? b.sample_unit : "(none)");
	if (strcmp(type_a, type_b))
		return prof_err_set(err, -EINVAL, -1,
				    "cannot compare different profile types: A is %s, B is %s",
				    type_a, type_b);
	return 0;
}

double query_diff_z(enum query_diff_mode mode, uint64_t ka, uint64_t na, uint64_t kb, uint64_t nb,
		    double ta, double tb)
{
	if (mode == QUERY_DIFF_ABSOLUTE) {
		if (ta <= 0 || tb <= 0)
			ta = tb = 1;
		return query_change_rate_z((double)ka, ta, (double)kb, tb);
	}
	return query_change_share_z((double)ka, (double)na, (double)kb, (double)nb);
}

/* Windows for the rate test: equal when unknown. */
static void windows(const struct query_diff_opts *o, double *ta, double *tb)
{
	bool known = o->a_seconds > 0 && o->b_seconds > 0;

	*ta = known ? o->a_seconds : 1;
	*tb = known ? o->b_seconds : 1;
}

/*
 * BH-adjusted p-values of both tests for every node of the built tree
 * that is part of the output (d->share_q, d->rate_q; 1 where untestable).
 */
static void adjust(struct query_diff *d, const struct query_diff_opts *o)
{
	const struct query_flamegraph *fg = &d->fg;
	size_t n = fg->nodes.n, ns = 0, nr = 0;
	double *ps = xmalloc((n + 1) * sizeof(double)), *pr = xmalloc((n + 1) * sizeof(double));
	uint32_t *is = xmalloc((n + 1) * sizeof(uint32_t)),
		 *ir = xmalloc((n + 1) * sizeof(uint32_t));
	double ta, tb;

	windows(o, &ta, &tb);
	d->share_q = xmalloc((n + 1) * sizeof(double));
	d->rate_q = xmalloc((n + 1) * sizeof(double));
	for (size_t i = 0; i < n; i++) {
		const struct query_flame_node *nd = &fg->nodes.v[i];

		d->share_q[i] = d->rate_q[i] = 1;
		if (nd->dropped)
			continue;
		if (fg->base_samples && fg->samples) {
			double z = query_change_share_z((double)nd->base_samples,
							(double)fg->base_samples,
							(double)nd->samples, (double)fg->samples);
			is[ns] = (uint32_t)i;
			ps[ns++] = query_change_p_of_z(z);
		}
		if (nd->base_samples + nd->samples) {
			ir[nr] = (uint32_t)i;
			pr[nr++] = query_change_rate_p((double)nd->base_samples, ta,
						       (double)nd->samples, tb);
		}
	}
	query_change_bh(ps, ns, ps);
	query_change_bh(pr, nr, pr);
	for (size_t k = 0; k < ns; k++)
		d->share_q[is[k]] = ps[k];
	for (size_t k = 0; k < nr; k++)
		d->rate_q[ir[k]] = pr[k];
	d->ntested_share = ns;
	d->ntested_rate = nr;
	free(ps);
	free(pr);
	free(is);
	free(ir);
}

/* By value, then stack content (query_stackset_node_cmp), not node id. */
static int cmp_dstack(const void *a, const void *b, void *arg)
{
	const struct query_diff_stack *x = a, *y = b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	return query_stackset_node_cmp(arg, x->node, y->node);
}

void query_diff_build(const struct query_stackset *ss, const struct query_diff_opts *o,
		      struct query_diff *d)
{
	size_t max_stacks = o->max_stacks ? o->max_stacks : DEFAULT_MAX_STACKS;
	size_t nn = ss->nodes.n;
	int64_t *self[2] = { query_scratch_take(nn + 1, sizeof(int64_t), true),
			     query_scratch_take(nn + 1, sizeof(int64_t), true) };
	uint64_t *count[2] = { query_scratch_take(nn + 1, sizeof(uint64_t), true),
			       query_scratch_take(nn + 1, sizeof(uint64_t), true) };
	uint64_t rows[2] = { 0, 0 };

	memset(d, 0, sizeof(*d));
	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[i];
		uint32_t side = e->bucket ? 1 : 0;

		self[side][e->node] = prof_add_sat(self[side][e->node], e->value);
		count[side][e->node] += e->count;
		rows[side] += e->count;
	}
	for (size_t i = 1; i < nn; i++) {
		if (count[1][i] && !count[0][i]) {
			struct query_diff_stack s = { (uint32_t)i, self[1][i], count[1][i] };
			VEC_PUSH(&d->appeared, s);
		} else if (count[0][i] && !count[1][i]) {
			struct query_diff_stack s = { (uint32_t)i, self[0][i], count[0][i] };
			VEC_PUSH(&d->disappeared, s);
		}
	}
	d->nappeared = d->appeared.n;
	d->ndisappeared = d->disappeared.n;
	if (d->appeared.n > 1)
		qsort_r(d->appeared.v, d->appeared.n, sizeof(*d->appeared.v), cmp_dstack,
			(void *)ss);
	if (d->disappeared.n > 1)
		qsort_r(d->disappeared.v, d->disappeared.n, sizeof(*d->disappeared.v), cmp_dstack,
			(void *)ss);
	d->appeared.n = PROF_MIN(d->appeared.n, max_stacks);
	d->disappeared.n = PROF_MIN(d->disappeared.n, max_stacks);

	query_flamegraph_init(&d->fg, "total");
	d->fg.diff = true;
	snprintf(d->fg.unit, sizeof(d->fg.unit), "%s", ss->unit);
	d->fg.samples = rows[1];
	d->fg.base_samples = rows[0];
	d->fg.unsymbolized = ss->unsymbolized;
	struct query_flame_src src = { ss, self[1], count[1], self[0], count[0] };
	query_flamegraph_shape(&d->fg, &src, o->max_nodes, o->min_share);
	adjust(d, o);
	for (int k = 0; k < 2; k++) {
		query_scratch_give(self[k]);
		query_scratch_give(count[k]);
	}
}

void query_diff_release(struct query_diff *d)
{
	if (!d)
		return;
	query_flamegraph_release(&d->fg);
	VEC_FREE(&d->appeared);
	VEC_FREE(&d->disappeared);
	free(d->share_q);
	free(d->rate_q);
	memset(d, 0, sizeof(*d));
}

struct node_ctx {
	const struct query_diff *d;
	const struct query_diff_opts *o;
	double alpha;
};

static int write_double(struct buf *out, const char *key, double v)
{
	if (!isfinite(v))
		v = 0;
	return buf_addf(out, ",\"%s\":%.6g", key, v);
}

static int diff_node_json(const struct query_flamegraph *fg, uint32_t id, struct buf *out,
			  void *arg)
{
	const struct node_ctx *c = arg;
	const struct query_flame_node *nd = &fg->nodes.v[id];
	bool absolute = c->o->mode == QUERY_DIFF_ABSOLUTE;
	double as = fg->base_total ? (double)nd->base_total / (double)fg->base_total : 0.0;
	double bs = fg->total ? (double)nd->total / (double)fg->total : 0.0;
	double ta, tb;

	windows(c->o, &ta, &tb);
	double sz = query_change_share_z((double)nd->base_samples, (double)fg->base_samples,
					 (double)nd->samples, (double)fg->samples);
	double rz = query_change_rate_z((double)nd->base_samples, ta, (double)nd->samples, tb);
	double sq = c->d->share_q[id], rq = c->d->rate_q[id];
	bool testable =
		absolute ? nd->base_samples + nd->samples > 0 : fg->base_samples && fg->samples;
	const char *status = !nd->base_samples && nd->samples	? "appeared"
			     : nd->base_samples && !nd->samples ? "disappeared"
								: "both";
	int rc = buf_addstr(out, "{\"name\":");

	if (!rc)
		rc = query_json_str(out, strtab_get(&fg->names, nd->name), fg->names.len[nd->name]);
	if (!rc)
		rc = buf_addf(out,
			      ",\"a_self\":%" PRId64 ",\"a_total\":%" PRId64
			      ",\"a_samples\":%" PRIu64 ",\"b_self\":%" PRId64
			      ",\"b_total\":%" PRId64 ",\"b_samples\":%" PRIu64,
			      nd->base_self, nd->base_total, nd->base_samples, nd->self, nd->total,
			      nd->samples);
	if (!rc)
		rc = write_double(out, "a_share", as);
	if (!rc)
		rc = write_double(out, "b_share", bs);
	if (!rc && absolute)
		rc = buf_addf(out, ",\"delta\":%" PRId64, nd->total - nd->base_total);
	else if (!rc)
		rc = write_double(out, "delta", bs - as);
	if (!rc)
		rc = write_double(out, "z", absolute ? rz : sz);
	if (!rc)
		rc = write_double(out, "share_z", sz);
	if (!rc)
		rc = write_double(out, "share_q", sq);
	if (!rc)
		rc = write_double(out, "rate_z", rz);
	if (!rc)
		rc = write_double(out, "rate_q", rq);
	if (!rc && c->o->a_seconds > 0 && c->o->b_seconds > 0) {
		double ar = (double)nd->base_total / c->o->a_seconds;
		double br = (double)nd->total / c->o->b_seconds;

		rc = write_double(out, "a_rate", ar);
		if (!rc)
			rc = write_double(out, "b_rate", br);
		if (!rc)
			rc = write_double(out, "rate_delta", br - ar);
	}
	if (!rc)
		rc = buf_addf(out, ",\"noise\":%s,\"status\":\"%s\"%s,\"children\":[",
			      testable && (absolute ? rq : sq) >= c->alpha ? "true" : "false",
			      status, nd->other ? ",\"other\":true" : "");
	return rc;
}

/* ,"seconds":X,"rate":X of one side when its window is known. */
static int side_rate(struct buf *out, int64_t total, double seconds)
{
	if (seconds <= 0)
		return 0;
	int rc = write_double(out, "seconds", seconds);

	return rc ? rc : write_double(out, "rate", (double)total / seconds);
}

static int write_stacks(const struct query_stackset *ss, const char *key, size_t count,
			const struct query_diff_stack *v, size_t n, struct buf *out)
{
	VEC(uint32_t) path = { 0 };
	int rc = buf_addf(out, ",\"%s\":{\"count\":%zu,\"stacks\":[", key, count);

	for (size_t i = 0; i < n && !rc; i++) {
		path.n = 0;
		for (uint32_t at = v[i].node; at; at = ss->nodes.v[at].parent)
			VEC_PUSH(&path, ss->nodes.v[at].name);
		rc = buf_addstr(out, i ? ",{\"stack\":[" : "{\"stack\":[");
		for (size_t j = path.n; j-- > 0 && !rc;) {
			uint32_t nm = path.v[j];

			if (j + 1 < path.n)
				rc = buf_add(out, ",", 1);
			if (!rc)
				rc = query_json_str(out, strtab_get(&ss->names, nm),
						    ss->names.len[nm]);
		}
		if (!rc)
			rc = buf_addf(out, "],\"value\":%" PRId64 ",\"samples\":%" PRIu64 "}",
				      v[i].value, v[i].samples);
	}
	VEC_FREE(&path);
	return rc ? rc : buf_addstr(out, "]}");
}

int query_diff_write_json(const struct query_diff *d, const struct query_stackset *ss,
			  const struct query_diff_opts *o, struct buf *out)
{
	double zt = o->z_threshold > 0 ? o->z_threshold : DEFAULT_Z;
	struct node_ctx c = { d, o, query_change_alpha(zt) };
	const struct query_flamegraph *fg = &d->fg;
	int rc = query_json_open(out, ss->type, fg->unit);

	if (!rc)
		rc = buf_addf(
			out,
			",\"mode\":\"%s\",\"noise_test\":\"%s\",\"z_threshold\":%.4g"
			",\"alpha\":%.4g,\"tests\":{\"share\":%zu,\"rate\":%zu}"
			",\"a\":{\"total\":%" PRId64 ",\"samples\":%" PRIu64,
			o->mode == QUERY_DIFF_ABSOLUTE ? "absolute" : "normalized",
			o->mode == QUERY_DIFF_ABSOLUTE
				? "conditional Poisson test on sample rows, the windows' lengths "
				  "as exposure; Benjamini-Hochberg over the nodes; noise when "
				  "q >= alpha"
				: "two-proportion z-test on sample rows (pooled); "
				  "Benjamini-Hochberg over the nodes; noise when q >= alpha; "
				  "untestable (false) when a side is empty",
			zt, c.alpha, d->ntested_share, d->ntested_rate, fg->base_total,
			fg->base_samples);
	if (!rc)
		rc = side_rate(out, fg->base_total, o->a_seconds);
	if (!rc)
		rc = buf_addf(out, "},\"b\":{\"total\":%" PRId64 ",\"samples\":%" PRIu64, fg->total,
			      fg->samples);
	if (!rc)
		rc = side_rate(out, fg->total, o->b_seconds);
	if (!rc)
		rc = buf_addf(out,
			      "},\"max_nodes\":%zu,\"truncated\":{\"nodes\":%" PRIu64
			      ",\"a_total\":%" PRId64 ",\"b_total\":%" PRId64 "},\"root\":",
			      o->max_nodes, fg->truncated_nodes, fg->truncated_base_total,
			      fg->truncated_total);
	if (!rc)
		rc = query_flamegraph_write_tree(fg, 0, diff_node_json, &c, out);
	if (!rc)
		rc = write_stacks(ss, "appeared", d->nappeared, d->appeared.v, d->appeared.n, out);
	if (!rc)
		rc = write_stacks(ss, "disappeared", d->ndisappeared, d->disappeared.v,
				  d->disappeared.n, out);
	return rc ? rc : buf_add(out, "}", 1);
}
