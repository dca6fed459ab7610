// SPDX-License-Identifier: Apache-2.0
/*
 * cpuprofile.c - V8 .cpuprofile decoder; see cpuprofile.h for the mapping.
 *
 * The node tree is checked before any stack is built: ids are unique,
 * every node has at most one parent, and a breadth-first walk from the
 * root (an explicit queue, no recursion) reaches every node, which rules
 * out cycles. A node's stack is written on the first sample that needs
 * it by following parent links (depth known from the walk), charged
 * against FMT_STACK_BUDGET.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "format/cpuprofile.h"
#include "format/textutil.h"

#define WHAT "cpuprofile"

struct cp_node {
	uint32_t parent; /* node index + 1, 0 = none */
	uint32_t loc;
	uint32_t depth;	    /* frames on its stack; 0 = not reached yet */
	uint32_t stack_off; /* + 1, 0 = not written yet */
	int64_t id;
};

struct cp_ctx {
	struct model_profile *p;
	struct prof_err *err;
	json_t *nodes;
	VEC(struct cp_node) nd;
	struct fmt_idmap ids;	 /* node id -> index */
	VEC(uint32_t) loc_of_fn; /* function index -> location */
	VEC(uint32_t) locs;
	uint64_t budget, budget0;
	uint32_t v8js;
};

#define CP_ERR(c, ...) prof_err_set((c)->err, -PROF_ECORRUPT, -1, WHAT ": " __VA_ARGS__)

static int cp_location(struct cp_ctx *c, size_t i, json_t *cf, uint32_t *out)
{
	struct model_profile *p = c->p;
	json_t *fnv = json_object_get(cf, "functionName"), *url = json_object_get(cf, "url");
	json_t *lnv = json_object_get(cf, "lineNumber"), *cnv = json_object_get(cf, "columnNumber");
	int64_t ln = -1, cn = -1;
	uint32_t name, file, fn;
	struct model_line l = { 0 };

	if (!json_is_object(cf) || !json_is_string(fnv) || (url && !json_is_string(url)) ||
	    (lnv && !fmt_json_i64(lnv, false, &ln)) || (cnv && !fmt_json_i64(cnv, false, &cn)))
		return CP_ERR(c,
			      "nodes[%zu]: \"callFrame\" must be an object with a string "
			      "\"functionName\", a string \"url\" and integer line/column numbers",
			      i);
	name = json_string_length(fnv)
		       ? model_intern_n(p, json_string_value(fnv), json_string_length(fnv))
		       : model_intern(p, "(anonymous)");
	file = url ? model_intern_n(p, json_string_value(url), json_string_length(url)) : 0;
	fn = model_function_intern(p, name, 0, file, ln >= 0 ? ln + 1 : 0);
	while (c->loc_of_fn.n <= fn)
		VEC_PUSH(&c->loc_of_fn, 0);
	if (!c->loc_of_fn.v[fn]) {
		const char *s = json_string_value(fnv);
		uint32_t li;

		l.function = fn;
		l.line = ln >= 0 ? ln + 1 : 0;
		l.column = cn >= 0 ? cn + 1 : 0;
		li = model_location_add(p, 0, 0, &l, 1);
		if (file || (s[0] && s[0] != '('))
			p->locations.v[li].frame_type = c->v8js;
		c->loc_of_fn.v[fn] = li;
	}
	*out = c->loc_of_fn.v[fn];
	return 0;
}

/* Reads the nodes: ids, locations, parent links; then depths from the root. */
static int cp_tree(struct cp_ctx *c)
{
	size_t n = json_array_size(c->nodes);
	VEC(uint32_t) queue = { 0 };
	int rc = 0;

	if (n == 0)
		return CP_ERR(c, "\"nodes\" is empty (the first node must be the root)");
	if (n >= UINT32_MAX)
		return prof_err_set(c->err, -PROF_ETOOBIG, -1, WHAT ": too many nodes");
	VEC_RESERVE(&c->nd, n);
	for (size_t i = 0; i < n; i++) {
		json_t *node = json_array_get(c->nodes, i);
		struct cp_node cn = { 0 };
		uint32_t other;

		if (!json_is_object(node) ||
		    !fmt_json_i64(json_object_get(node, "id"), false, &cn.id))
			return CP_ERR(c, "nodes[%zu]: not an object with an integer \"id\"", i);
		if (!fmt_idmap_put(&c->ids, (uint64_t)cn.id, (uint32_t)i)) {
			fmt_idmap_get(&c->ids, (uint64_t)cn.id, &other);
			return CP_ERR(c,
				      "nodes[%zu]: duplicate node id %" PRId64 " (also nodes[%u])",
				      i, cn.id, other);
		}
		rc = cp_location(c, i, json_object_get(node, "callFrame"), &cn.loc);
		if (rc)
			return rc;
		c->nd.v[c->nd.n++] = cn;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *ch = json_object_get(json_array_get(c->nodes, i), "children");

		if (ch && !json_is_array(ch))
			return CP_ERR(c, "nodes[%zu]: \"children\" is not an array", i);
		for (size_t k = 0; k < json_array_size(ch); k++) {
			int64_t cid;
			uint32_t j;

			if (!fmt_json_i64(json_array_get(ch, k), false, &cid) ||
			    !fmt_idmap_get(&c->ids, (uint64_t)cid, &j))
				return CP_ERR(c, "nodes[%zu].children[%zu]: not the id of a node",
					      i, k);
			if (j == i)
				return CP_ERR(c,
					      "node id %" PRId64 " lists itself as a child (cycle)",
					      cid);
			if (c->nd.v[j].parent)
				return CP_ERR(
					c,
					"node id %" PRId64 " is a child of both node id %" PRId64
					" and node id %" PRId64,
					cid, c->nd.v[c->nd.v[j].parent - 1].id, c->nd.v[i].id);
			c->nd.v[j].parent = (uint32_t)i + 1;
		}
	}
	if (c->nd.v[0].parent)
		return CP_ERR(c,
			      "the first node (id %" PRId64
			      ") must be the root but is a child of node id %" PRId64,
			      c->nd.v[0].id, c->nd.v[c->nd.v[0].parent - 1].id);
	/* Breadth-first from the root: sets depths; what it misses is cut off. */
	c->nd.v[0].depth = 1;
	VEC_PUSH(&queue, 0);
	for (size_t q = 0; q < queue.n; q++) {
		uint32_t i = queue.v[q];
		json_t *ch = json_object_get(json_array_get(c->nodes, i), "children");

		for (size_t k = 0; k < json_array_size(ch); k++) {
			int64_t cid = 0;
			uint32_t j = 0;

			fmt_json_i64(json_array_get(ch, k), false, &cid);
			fmt_idmap_get(&c->ids, (uint64_t)cid, &j);
			c->nd.v[j].depth = c->nd.v[i].depth + 1;
			VEC_PUSH(&queue, j);
		}
	}
	VEC_FREE(&queue);
	for (size_t i = 0; i < n; i++) {
		if (c->nd.v[i].depth)
			continue;
		if (!c->nd.v[i].parent)
			return CP_ERR(
				c,
				"node id %" PRId64
				" has no parent and is not the first node (only one root allowed)",
				c->nd.v[i].id);
		return CP_ERR(c,
			      "node id %" PRId64
			      " is not reachable from the root: its parents form a cycle",
			      c->nd.v[i].id);
	}
	return 0;
}

static int cp_stack(struct cp_ctx *c, uint32_t i, uint32_t *off)
{
	if (!c->nd.v[i].stack_off) {
		uint32_t depth = c->nd.v[i].depth;

		if (depth > c->budget)
			return prof_err_set(c->err, -PROF_ETOOBIG, -1,
					    WHAT ": stacks would exceed %" PRIu64
						 " entries (the limit for an input of this size)",
					    c->budget0);
		c->budget -= depth;
		c->locs.n = 0;
		VEC_RESERVE(&c->locs, depth);
		for (uint32_t k = i + 1; k; k = c->nd.v[k - 1].parent)
			c->locs.v[c->locs.n++] = c->nd.v[k - 1].loc;
		PROF_ASSERT(c->locs.n == depth);
		c->nd.v[i].stack_off = model_stack_add(c->p, c->locs.v, depth) + 1;
	}
	*off = c->nd.v[i].stack_off - 1;
	return 0;
}

static int cp_i64_member(struct cp_ctx *c, json_t *root, const char *key, int64_t *out)
{
	json_t *v = json_object_get(root, key);

	if (v && !fmt_json_i64(v, false, out))
		return CP_ERR(c, "\"%s\" is not an integer (microseconds)", key);
	return 0;
}

static int cp_samples(struct cp_ctx *c, json_t *root, size_t max_samples)
{
	struct model_profile *p = c->p;
	json_t *samples = json_object_get(root, "samples"),
	       *deltas = json_object_get(root, "timeDeltas");
	int64_t start = 0, end = 0, t, next;
	size_t n;
	int rc;

	rc = cp_i64_member(c, root, "startTime", &start);
	if (!rc)
		rc = cp_i64_member(c, root, "endTime", &end);
	if (rc)
		return rc;
	if (end > start && end - start < INT64_MAX / 1000)
		p->duration_ns = (end - start) * 1000;
	if (!samples) {
		/* No sample list: aggregated hit counts per node. */
		for (size_t i = 0; i < c->nd.n; i++) {
			json_t *hc = json_object_get(json_array_get(c->nodes, i), "hitCount");
			int64_t v[2] = { 0, 0 };
			uint32_t off;

			if (hc && (!fmt_json_i64(hc, false, &v[0]) || v[0] < 0))
				return CP_ERR(
					c, "nodes[%zu]: \"hitCount\" is not a non-negative integer",
					i);
			if (!v[0])
				continue;
			rc = cp_stack(c, (uint32_t)i, &off);
			if (rc)
				return rc;
			model_sample_add(p, off, c->nd.v[i].depth, v, NULL, 0, 0, 0);
		}
		return 0;
	}
	if (!json_is_array(samples))
		return CP_ERR(c, "\"samples\" is not an array");
	n = json_array_size(samples);
	if (deltas && (!json_is_array(deltas) || json_array_size(deltas) != n))
		return CP_ERR(c, "\"samples\" has %zu entries but \"timeDeltas\" %zu", n,
			      json_is_array(deltas) ? json_array_size(deltas) : 0);
	if (max_samples && n > max_samples)
		return prof_err_set(c->err, -PROF_ETOOBIG, -1, WHAT ": %zu samples, more than %zu",
				    n, max_samples);
	t = start;
	next = start;
	for (size_t i = 0; i < n; i++) {
		int64_t id, d = 0, v[2] = { 1, 0 };
		uint32_t j, off;

		if (!fmt_json_i64(json_array_get(samples, i), false, &id) ||
		    !fmt_idmap_get(&c->ids, (uint64_t)id, &j))
			return CP_ERR(c, "samples[%zu]: not the id of a node", i);
		if (deltas) {
			if (i == 0 && (!fmt_json_i64(json_array_get(deltas, 0), false, &d) ||
				       __builtin_add_overflow(t, d, &next)))
				return CP_ERR(c, "timeDeltas[0]: not an integer in range");
			t = next;
			if (t > INT64_MAX / 1000 || t < INT64_MIN / 1000)
				return CP_ERR(c, "timeDeltas[%zu]: time out of range", i);
			if (i + 1 < n) {
				if (!fmt_json_i64(json_array_get(deltas, i + 1), false, &d) ||
				    __builtin_add_overflow(t, d, &next) || d > INT64_MAX / 1000)
					return CP_ERR(c, "timeDeltas[%zu]: not an integer in range",
						      i + 1);
				v[1] = d > 0 ? d * 1000 : 0;
			}
		}
		rc = cp_stack(c, j, &off);
		if (rc)
			return rc;
		model_sample_add(p, off, c->nd.v[j].depth, v, NULL, 0, deltas ? t * 1000 : 0, 0);
	}
	if (deltas && n >= 2 && p->samples.v[n - 1].timestamp_ns > p->samples.v[0].timestamp_ns)
		p->period = (p->samples.v[n - 1].timestamp_ns - p->samples.v[0].timestamp_ns) /
			    (int64_t)(n - 1);
	return 0;
}

/* Ids of the pre-2016 layout: the node's own, else one given in walk order. */
static void cp_head_id(json_t *old, int64_t *next)
{
	int64_t id;

	if (!fmt_json_i64(json_object_get(old, "id"), false, &id))
		json_object_set_new(old, "id", json_integer((json_int_t)++ * next));
}

/* A 1-based line or column number of the old layout as the current 0-based one. */
static void cp_head_line(json_t *old, json_t *cf, const char *key)
{
	json_t *v = json_object_get(old, key);
	int64_t k;

	if (v && fmt_json_i64(v, false, &k))
		json_object_set_new(cf, key, json_integer(k > 0 ? (json_int_t)(k - 1) : -1));
	else if (v)
		json_object_set(cf, key, v); /* refused below as in the current layout */
}

/*
 * A pre-2016 profile (v8-profiler's and old DevTools' layout): nodes
 * nested under "head", each with its call frame's fields inline and its
 * children as objects; startTime/endTime in seconds; "timestamps" the
 * absolute time of each sample in microseconds. Rewritten in place into
 * the current layout (flat "nodes" with child ids, microseconds,
 * "timeDeltas"), which the rest of the decoder then reads and checks.
 * Line and column numbers there are 1-based (V8's
 * CpuProfileNode::GetLineNumber; 0 = none), here 0-based. A node without
 * an "id" gets one above the largest id in walk order; samples cannot
 * name it. Both walks use an explicit stack: no recursion.
 */
static int cp_from_head(json_t *root, struct prof_err *err)
{
	static const char *const frame_keys[] = { "functionName", "url", "scriptId" };
	json_t *head = json_object_get(root, "head"), *ts = json_object_get(root, "timestamps");
	struct cp_ctx c = { .err = err };
	VEC(json_t *) pending = { 0 };
	json_t *nodes = NULL;
	int64_t max = 0, prev = 0, id;
	double sec;
	int rc = 0;

	/* Pass 1: the shape, and the largest id. */
	VEC_PUSH(&pending, head);
	for (size_t seen = 0; pending.n; seen++) {
		json_t *old = pending.v[--pending.n], *ch = json_object_get(old, "children");

		if (!json_is_object(old) || (ch && !json_is_array(ch))) {
			rc = CP_ERR(&c,
				    "head: node %zu (in walk order): not an object whose "
				    "\"children\" is an array",
				    seen);
			goto out;
		}
		if (fmt_json_i64(json_object_get(old, "id"), false, &id) && id > max)
			max = id;
		for (size_t i = 0; i < json_array_size(ch); i++)
			VEC_PUSH(&pending, json_array_get(ch, i));
	}
	/* Pass 2: the flat nodes, parents before children, children in order. */
	nodes = json_array();
	cp_head_id(head, &max);
	VEC_PUSH(&pending, head);
	while (pending.n) {
		json_t *old = pending.v[--pending.n], *ch = json_object_get(old, "children");
		json_t *node = json_object(), *cf = json_object(), *ids = json_array(), *v;

		json_object_set(node, "id", json_object_get(old, "id"));
		for (size_t i = 0; i < PROF_ARRAY_SIZE(frame_keys); i++)
			if ((v = json_object_get(old, frame_keys[i])))
				json_object_set(cf, frame_keys[i], v);
		if (!json_object_get(cf, "functionName"))
			json_object_set_new(cf, "functionName", json_string(""));
		cp_head_line(old, cf, "lineNumber");
		cp_head_line(old, cf, "columnNumber");
		json_object_set_new(node, "callFrame", cf);
		if ((v = json_object_get(old, "hitCount")))
			json_object_set(node, "hitCount", v);
		for (size_t i = 0; i < json_array_size(ch); i++) {
			cp_head_id(json_array_get(ch, i), &max);
			json_array_append(ids, json_object_get(json_array_get(ch, i), "id"));
		}
		json_object_set_new(node, "children", ids);
		json_array_append_new(nodes, node);
		for (size_t i = json_array_size(ch); i-- > 0;)
			VEC_PUSH(&pending, json_array_get(ch, i));
	}
	/* Times: seconds to microseconds; absolute timestamps to deltas. */
	if (fmt_json_num(json_object_get(root, "startTime"), &sec) && sec > 0 && sec < 9e12) {
		prev = (int64_t)(sec * 1e6 + 0.5);
		json_object_set_new(root, "startTime", json_integer((json_int_t)prev));
	}
	if (fmt_json_num(json_object_get(root, "endTime"), &sec) && sec > 0 && sec < 9e12)
		json_object_set_new(root, "endTime", json_integer((json_int_t)(sec * 1e6 + 0.5)));
	if (json_is_array(ts)) {
		json_t *deltas = json_array();

		json_object_set_new(root, "timeDeltas", deltas);
		for (size_t i = 0; i < json_array_size(ts); i++) {
			double t;
			int64_t ti, d;

			if (!fmt_json_num(json_array_get(ts, i), &t) || t < 0 || t > 9e18) {
				rc = CP_ERR(&c, "timestamps[%zu]: not a time in microseconds", i);
				goto out;
			}
			ti = (int64_t)(t + 0.5);
			d = ti - prev; /* both in [0, 9e18]: no overflow */
			json_array_append_new(deltas, json_integer((json_int_t)d));
			prev = ti;
		}
	}
	json_object_set(root, "nodes", nodes);
out:
	json_decref(nodes);
	VEC_FREE(&pending);
	return rc;
}

int fmt_cpuprofile_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			  struct model_profile *out, struct prof_err *err)
{
	struct cp_ctx c = { 0 };
	size_t max = opts && opts->max_input ? opts->max_input : FMT_DEFAULT_MAX_INPUT;
	json_t *root;
	int rc;

	if (n > max)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    WHAT ": input of %zu bytes exceeds the limit of %zu bytes", n,
				    max);
	root = fmt_json_load(data, n, WHAT, err);
	if (!root)
		return err && err->code ? err->code : -PROF_ECORRUPT;
	c.p = out;
	c.err = err;
	c.budget = c.budget0 = FMT_STACK_BUDGET(n);
	fmt_idmap_init(&c.ids);
	if (json_is_object(root) && !json_object_get(root, "nodes") &&
	    json_object_get(root, "head") && (rc = cp_from_head(root, err)))
		goto out;
	c.nodes = json_object_get(root, "nodes");
	if (json_is_array(root) || json_object_get(root, "traceEvents")) {
		rc = prof_err_set(err, -PROF_EUNSUPPORTED, -1,
				  WHAT ": Chrome trace-event files are not supported; save the "
				       "profile as .cpuprofile (DevTools or node --cpu-prof)");
		goto out;
	}
	if (!json_is_object(root) || !json_is_array(c.nodes)) {
		rc = prof_err_set(err, -PROF_ECORRUPT, -1,
				  WHAT ": expected an object with a \"nodes\" array");
		goto out;
	}
	c.v8js = model_intern(out, "v8js");
	model_sample_type_add(out, "samples", "count");
	model_sample_type_add(out, "wall", "nanoseconds");
	out->period_type = out->sample_types.v[1];
	out->name = model_intern(out, "wall");
	rc = cp_tree(&c);
	if (!rc)
		rc = cp_samples(&c, root, opts ? opts->max_samples : 0);
out:
	json_decref(root);
	fmt_idmap_release(&c.ids);
	VEC_FREE(&c.nd);
	VEC_FREE(&c.loc_of_fn);
	VEC_FREE(&c.locs);
	return rc;
}
