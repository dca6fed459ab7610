/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flamegraph.h - aggregate the selected samples of the store into a flame
 * graph: a tree from the root ("total") to the leaves, one node per call
 * path, frames merged by name under the same parent.
 *
 *   - a location with an inline chain becomes one frame per line, the
 *     outer function first and the innermost inlined callee deepest;
 *   - a location without lines (an unsymbolized native frame) is resolved
 *     now through the symbolizer from its mapping's file and build ID and
 *     its ELF virtual address; when that fails it is named
 *     "<basename of the mapping>+0x<address>" (or "0x<address>" without a
 *     mapping): frames are never dropped;
 *   - recursion (A;B;A;D) is kept as the path it is;
 *   - max_nodes: the largest nodes by total (a node is kept only with its
 *     parent) are kept; the rest of each kept node's children are merged
 *     into one explicit child named "other" with "other":true, and the
 *     response says how many nodes were merged away. Never silent.
 *
 * Nothing here recurses: building walks stack nodes in id order (parents
 * first, store/head.h invariant) and the JSON writer keeps an explicit
 * stack, so 30000-deep stacks work on a small thread stack.
 *
 * Thread-safety: a build takes the head's read lock for its duration; the
 * result is independent of the head afterwards.
 */
#ifndef PROF_QUERY_FLAMEGRAPH_H
#define PROF_QUERY_FLAMEGRAPH_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "store/head.h"
#include "store/matcher.h"
#include "symbolize/symbolizer.h"

/** struct query_flame_params - what to aggregate. */
struct query_flame_params {
	const char *type; /* profile type id, required */
	const struct store_matcher *m;
	size_t nm;
	int64_t from_ns, to_ns; /* inclusive, unix ns */
	size_t max_nodes;	/* nodes kept besides the "other" nodes; 0 = no limit */
	struct symbolizer *sym; /* may be NULL: no query-time symbolization */
};

/** struct query_flame_node - one node; node 0 is the root "total". */
struct query_flame_node {
	uint32_t name;		       /* string id in query_flamegraph.names */
	uint32_t parent;	       /* node index; the root's is 0 */
	uint32_t child_off, nchildren; /* range of query_flamegraph.children */
	int64_t self, total;
	bool other;   /* the synthetic node that merges truncated children */
	bool dropped; /* merged into an "other" node; not part of the output */
};

/**
 * struct query_flamegraph - a built flame graph. @children lists node
 * indexes, each node's range sorted by total (descending), then name.
 * Owns everything; release with query_flamegraph_release.
 */
struct query_flamegraph {
	struct strtab names;
	VEC(struct query_flame_node) nodes;
	VEC(uint32_t) children;
	char unit[64];		  /* sample unit, from the type id */
	int64_t total;		  /* == nodes.v[0].total */
	uint64_t samples;	  /* rows aggregated */
	uint64_t truncated_nodes; /* nodes merged into "other" nodes */
	int64_t truncated_total;  /* sum of the "other" nodes' totals */
	uint64_t unsymbolized;	  /* frames named by the module+offset fallback */
};

/**
 * query_flamegraph_build() - aggregate rows of series of @p->type matching
 * @p->m in [from_ns, to_ns] of @h into @fg (overwritten; release it also
 * after an error). Errors: -EINVAL with @err when @p->type is missing.
 * An empty selection gives a root with total 0.
 */
int query_flamegraph_build(struct store_head *h, const struct query_flame_params *p,
			   struct query_flamegraph *fg, struct prof_err *err);

/**
 * query_flamegraph_write_json() - append
 * {"type":..,"unit":..,"total":N,"samples":N,"max_nodes":N,
 *  "truncated":{"nodes":N,"total":N},
 *  "root":{"name":"total","self":N,"total":N,"children":[...]}}
 * to @out; @type is echoed as given. 0 or -PROF_ETOOBIG when @out's cap
 * is reached.
 */
int query_flamegraph_write_json(const struct query_flamegraph *fg, const char *type,
				size_t max_nodes, struct buf *out);

/** query_flamegraph_release() - free what @fg owns; NULL is allowed. */
void query_flamegraph_release(struct query_flamegraph *fg);

#endif
