// SPDX-License-Identifier: Apache-2.0
/* flamechart.c - samples along time, identical neighbours merged; see flamechart.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/jsonout.h"
#include "query/flamechart.h"
#include "query/hashmap.h"
#include "query/scratch.h"

#define DEFAULT_INTERVAL_NS 10000000LL
#define DEFAULT_MAX_SPANS   100000

struct span {
	int64_t start, last;
	uint32_t node;
	int64_t value;
	uint64_t samples;
};

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Median gap between distinct consecutive timestamps of samples [lo, hi),
 * within each lane only (a lane change is not a gap); 0 if none.
 */
static int64_t median_gap(const struct query_ss_sample *s, size_t lo, size_t hi)
{
	VEC(int64_t) gaps = { 0 };
	int64_t med = 0;

	for (size_t i = lo + 1; i < hi; i++)
		if (s[i].group == s[i - 1].group && s[i].ts_ns > s[i - 1].ts_ns)
			VEC_PUSH(&gaps, s[i].ts_ns - s[i - 1].ts_ns);
	if (gaps.n) {
		qsort(gaps.v, gaps.n, sizeof(int64_t), cmp_i64);
		med = gaps.v[gaps.n / 2];
	}
	VEC_FREE(&gaps);
	return med;
}

static int write_labels(struct buf *out, const struct query_stackset *ss, uint32_t group)
{
	int rc = buf_add(out, "{", 1);

	for (size_t i = 0; i < ss->ngroup_by && !rc; i++) {
		size_t len;
		const char *v = query_stackset_group_value(ss, group, i, &len);

		rc = i ? buf_add(out, ",", 1) : 0;
		if (!rc)
			rc = query_json_str(out, ss->group_by[i], strlen(ss->group_by[i]));
		if (!rc)
			rc = buf_add(out, ":", 1);
		if (!rc)
			rc = query_json_str(out, v, len);
	}
	return rc ? rc : buf_add(out, "}", 1);
}

/*
 * Sample times are taken to this resolution (floor): a store block keeps
 * them to 1 ms by default (store_options.ts_resolution_ns) and the head
 * exactly, and the chart must be the same from either.
 */
#define TS_RES_NS 1000000

struct sample_order {
	const struct query_stackset *ss;
	const uint32_t *rank; /* query_stackset_node_order */
};

/* Lanes by label values, samples by time, then stack (node rank). */
static int cmp_sample(const void *a, const void *b, void *arg)
{
	const struct sample_order *o = arg;
	const struct query_ss_sample *x = a, *y = b;
	int c = query_stackset_group_cmp(o->ss, x->group, y->group);

	if (c)
		return c;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	if (x->node != y->node)
		return o->rank[x->node] < o->rank[y->node] ? -1 : 1;
	return x->value < y->value ? -1 : x->value > y->value;
}

int query_flamechart_write_json(const struct query_stackset *ss,
				const struct query_flamechart_opts *o, struct buf *out)
{
	size_t n = ss->samples.n;
	struct query_ss_sample *sm = query_scratch_take(n + 1, sizeof(*sm), false);
	struct sample_order so = { ss, NULL };
	uint32_t *rank;

	/*
	 * The samples in an order of their contents, not of group and node
	 * ids; times floored to TS_RES_NS.
	 */
	query_stackset_node_order(ss, NULL, &rank);
	so.rank = rank;
	for (size_t i = 0; i < n; i++) {
		sm[i] = ss->samples.v[i];
		sm[i].ts_ns -= ((sm[i].ts_ns % TS_RES_NS) + TS_RES_NS) % TS_RES_NS;
	}
	if (n > 1)
		qsort_r(sm, n, sizeof(*sm), cmp_sample, &so);
	query_scratch_give(rank);
	size_t max_spans = o->max_spans ? o->max_spans : DEFAULT_MAX_SPANS;
	int64_t global = o->interval_ns > 0 ? o->interval_ns : median_gap(sm, 0, n);
	VEC(struct span) spans = { 0 };
	VEC(size_t) lane_end = { 0 }; /* spans.n at the end of each lane */
	VEC(size_t) lane_first = { 0 };
	int rc = 0;

	if (global <= 0)
		global = DEFAULT_INTERVAL_NS; /* one timestamp per lane at most */

	/* Build spans lane by lane. */
	VEC(int64_t) lane_iv = { 0 };
	for (size_t lo = 0; lo < n;) {
		size_t hi = lo, first = spans.n;

		while (hi < n && sm[hi].group == sm[lo].group)
			hi++;
		int64_t iv = o->interval_ns > 0 ? o->interval_ns : median_gap(sm, lo, hi);
		if (iv <= 0)
			iv = global;
		VEC_PUSH(&lane_first, lo);
		VEC_PUSH(&lane_iv, iv);
		for (size_t i = lo; i < hi; i++) {
			struct span *last = spans.n > first ? &spans.v[spans.n - 1] : NULL;

			if (last && last->node == sm[i].node &&
			    sm[i].ts_ns - last->last <= iv + iv / 2) {
				last->last = sm[i].ts_ns;
				last->value = prof_add_sat(last->value, sm[i].value);
				last->samples++;
				continue;
			}
			struct span s = { sm[i].ts_ns, sm[i].ts_ns, sm[i].node, sm[i].value, 1 };
			VEC_PUSH(&spans, s);
		}
		/* A span ends one interval after its last sample. */
		for (size_t k = first; k < spans.n; k++)
			spans.v[k].last += iv;
		VEC_PUSH(&lane_end, spans.n);
		lo = hi;
	}

	/* Stacks and names used by the spans that are written. */
	size_t written = PROF_MIN(spans.n, max_spans);
	struct qmap stack_idx = { 0 }, name_idx = { 0 };
	VEC(uint32_t) stack_nodes = { 0 };
	VEC(uint32_t) names = { 0 };
	uint32_t *span_stack = xcalloc(written + 1, sizeof(uint32_t));
	for (size_t k = 0; k < written; k++) {
		uint32_t node = spans.v[k].node, id = qmap_get(&stack_idx, node);

		if (id == QMAP_NONE) {
			id = (uint32_t)stack_nodes.n;
			qmap_put(&stack_idx, node, id);
			VEC_PUSH(&stack_nodes, node);
			for (uint32_t at = node; at; at = ss->nodes.v[at].parent) {
				uint32_t nm = ss->nodes.v[at].name;

				if (qmap_get(&name_idx, nm) == QMAP_NONE) {
					qmap_put(&name_idx, nm, (uint32_t)names.n);
					VEC_PUSH(&names, nm);
				}
			}
		}
		span_stack[k] = id;
	}

	rc = query_json_open(out, ss->type, ss->unit);
	if (!rc)
		rc = buf_addf(out,
			      ",\"from_ms\":%" PRId64 ",\"to_ms\":%" PRId64
			      ",\"interval_ns\":%" PRId64
			      ",\"samples\":%zu,\"spans_total\":%zu,\"truncated_spans\":%zu"
			      ",\"group_by\":[",
			      ss->from_ns / 1000000, ss->to_ns / 1000000, global, n, spans.n,
			      spans.n - written);
	for (size_t i = 0; i < ss->ngroup_by && !rc; i++) {
		rc = i ? buf_add(out, ",", 1) : 0;
		if (!rc)
			rc = query_json_str(out, ss->group_by[i], strlen(ss->group_by[i]));
	}
	if (!rc)
		rc = buf_addstr(out, "],\"names\":[");
	for (size_t i = 0; i < names.n && !rc; i++) {
		rc = i ? buf_add(out, ",", 1) : 0;
		if (!rc)
			rc = query_json_str(out, ss->names.s[names.v[i]],
					    ss->names.len[names.v[i]]);
	}
	if (!rc)
		rc = buf_addstr(out, "],\"stacks\":[");
	for (size_t i = 0; i < stack_nodes.n && !rc; i++) {
		struct query_ss_path path = { 0 };

		query_stackset_path(ss, stack_nodes.v[i], &path);
		rc = buf_addstr(out, i ? ",[" : "[");
		for (size_t j = 0; j < path.n && !rc; j++)
			rc = buf_addf(out, j ? ",%u" : "%u", qmap_get(&name_idx, path.v[j]));
		if (!rc)
			rc = buf_add(out, "]", 1);
		free(path.v);
	}
	if (!rc)
		rc = buf_addstr(out, "],\"lanes\":[");
	size_t k = 0;
	for (size_t l = 0; l < lane_first.n && !rc; l++) {
		size_t s0 = l ? lane_end.v[l - 1] : 0, s1 = lane_end.v[l];
		size_t lo = lane_first.v[l], hi = l + 1 < lane_first.n ? lane_first.v[l + 1] : n;
		int64_t total = 0;

		for (size_t i = lo; i < hi; i++)
			total = prof_add_sat(total, sm[i].value);
		rc = buf_addstr(out, l ? ",{\"labels\":" : "{\"labels\":");
		if (!rc)
			rc = write_labels(out, ss, sm[lo].group);
		if (!rc)
			rc = buf_addf(out,
				      ",\"samples\":%zu,\"total\":%" PRId64
				      ",\"interval_ns\":%" PRId64 ",\"spans\":[",
				      hi - lo, total, lane_iv.v[l]);
		for (k = s0; k < s1 && k < written && !rc; k++) {
			const struct span *s = &spans.v[k];

			rc = buf_addf(out, "%s[%" PRId64 ",%" PRId64 ",%u,%" PRId64 ",%" PRIu64 "]",
				      k > s0 ? "," : "", s->start - ss->from_ns, s->last - s->start,
				      span_stack[k], s->value, s->samples);
		}
		if (!rc)
			rc = buf_addstr(out, "]}");
	}
	if (!rc)
		rc = buf_addstr(out, "]}");
	free(span_stack);
	query_scratch_give(sm);
	qmap_release(&stack_idx);
	qmap_release(&name_idx);
	VEC_FREE(&stack_nodes);
	VEC_FREE(&names);
	VEC_FREE(&spans);
	VEC_FREE(&lane_end);
	VEC_FREE(&lane_first);
	VEC_FREE(&lane_iv);
	return rc;
}
