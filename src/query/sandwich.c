// SPDX-License-Identifier: Apache-2.0
/* sandwich.c - callers and callees trees of one function; see sandwich.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "query/jsonout.h"
#include "query/sandwich.h"
#include "query/scratch.h"
#include "query/table.h"

void query_sandwich_build(const struct query_stackset *ss, const char *function, size_t max_nodes,
			  struct query_sandwich *sw)
{
	uint32_t fn = strtab_find(&ss->names, function, strlen(function));
	struct query_ss_path path = { 0 };
	int64_t *self;
	uint64_t *count;

	memset(sw, 0, sizeof(*sw));
	query_flamegraph_init(&sw->callers, function);
	query_flamegraph_init(&sw->callees, function);
	snprintf(sw->callers.unit, sizeof(sw->callers.unit), "%s", ss->unit);
	snprintf(sw->callees.unit, sizeof(sw->callees.unit), "%s", ss->unit);
	sw->callers.inverted = true;
	if (fn != UINT32_MAX && fn != 0) {
		int64_t *nself, *ntotal;

		query_name_totals(ss, true, &nself, &ntotal, NULL, NULL);
		sw->self = nself[fn];
		sw->total = ntotal[fn];
		query_scratch_give(nself);
		query_scratch_give(ntotal);
		query_stackset_node_sums(ss, &self, &count);
		for (size_t i = 1; i < ss->nodes.n; i++) {
			if (!self[i] && !count[i])
				continue;
			query_stackset_path(ss, (uint32_t)i, &path);
			size_t k = 0;
			while (k < path.n && path.v[k] != fn)
				k++;
			if (k == path.n)
				continue;
			sw->found = true;
			uint32_t at = 0;
			for (size_t j = k; j-- > 0;)
				at = query_flamegraph_child(&sw->callers, at,
							    ss->names.s[path.v[j]],
							    ss->names.len[path.v[j]]);
			sw->callers.nodes.v[at].self =
				prof_add_sat(sw->callers.nodes.v[at].self, self[i]);
			sw->callers.nodes.v[at].self_samples += count[i];
			sw->callers.samples += count[i];
			at = 0;
			for (size_t j = k + 1; j < path.n; j++)
				at = query_flamegraph_child(&sw->callees, at,
							    ss->names.s[path.v[j]],
							    ss->names.len[path.v[j]]);
			sw->callees.nodes.v[at].self =
				prof_add_sat(sw->callees.nodes.v[at].self, self[i]);
			sw->callees.nodes.v[at].self_samples += count[i];
			sw->callees.samples += count[i];
		}
		query_scratch_give(self);
		query_scratch_give(count);
		free(path.v);
	}
	query_flamegraph_finish(&sw->callers, max_nodes, 0);
	query_flamegraph_finish(&sw->callees, max_nodes, 0);
}

void query_sandwich_release(struct query_sandwich *sw)
{
	if (!sw)
		return;
	query_flamegraph_release(&sw->callers);
	query_flamegraph_release(&sw->callees);
	memset(sw, 0, sizeof(*sw));
}

static int write_side(const struct query_flamegraph *fg, const char *key, struct buf *out)
{
	int rc = buf_addf(out,
			  ",\"%s\":{\"samples\":%" PRIu64 ",\"truncated\":{\"nodes\":%" PRIu64
			  ",\"total\":%" PRId64 "},\"root\":",
			  key, fg->samples, fg->truncated_nodes, fg->truncated_total);

	if (!rc)
		rc = query_flamegraph_write_tree(fg, 0, query_flamegraph_node_json, NULL, out);
	return rc ? rc : buf_add(out, "}", 1);
}

int query_sandwich_write_json(const struct query_sandwich *sw, const struct query_stackset *ss,
			      const char *function, size_t max_nodes, struct buf *out)
{
	int rc = query_json_open(out, ss->type, ss->unit);

	if (!rc)
		rc = buf_addstr(out, ",\"function\":");
	if (!rc)
		rc = query_json_str(out, function, strlen(function));
	if (!rc)
		rc = buf_addf(out,
			      ",\"found\":%s,\"self\":%" PRId64 ",\"total\":%" PRId64
			      ",\"profile_total\":%" PRId64 ",\"samples\":%" PRIu64
			      ",\"max_nodes\":%zu",
			      sw->found ? "true" : "false", sw->self, sw->total, ss->total,
			      ss->rows, max_nodes);
	if (!rc)
		rc = write_side(&sw->callers, "callers", out);
	if (!rc)
		rc = write_side(&sw->callees, "callees", out);
	return rc ? rc : buf_add(out, "}", 1);
}
