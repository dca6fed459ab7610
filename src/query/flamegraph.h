/* SPDX-License-Identifier: Apache-2.0 */
/*
 * flamegraph.h - flame graphs (call trees) built from a stack set
 * (query/stackset.h): a tree from the root ("total") to the leaves, one
 * node per call path, frames merged by name under the same parent.
 *
 *   - frames are the stack set's: inline chains expanded (outer function
 *     first, innermost callee deepest), native frames symbolized or named
 *     "<module>+0x<addr>", never dropped; recursion (A;B;A;D) is kept as
 *     the path it is;
 *   - invert: the tree of reversed stacks, leaves first: the root's
 *     children are the functions where samples were taken (their totals
 *     are those functions' self values), their children the callers;
 *   - max_nodes / min_share: the largest nodes by total are kept (a node
 *     only with its parent), at most max_nodes of them and none whose
 *     total is below min_share of the root's; the rest of each kept
 *     node's children are merged into one explicit child named "other"
 *     with "other": true, and the response says how many nodes and how
 *     much value were merged away. Never silent.
 *
 * The same tree type carries differential flame graphs (query/diff.h):
 * then @diff is set, the base_* fields hold side A (baseline) and
 * self/total/samples side B, and ranking for truncation uses the larger of
 * the two sides' shares.
 *
 * Nothing here recurses: trees are built in node order (parents first),
 * totals are summed in reverse creation order, and the JSON writer keeps
 * an explicit stack, so 30000-deep stacks work on a small thread stack.
 *
 * Lower-level calling sequence (diff.c, sandwich.c): query_flamegraph_init
 * -> query_flamegraph_child / add self values -> query_flamegraph_finish
 * -> query_flamegraph_write_tree.
 */
#ifndef PROF_QUERY_FLAMEGRAPH_H
#define PROF_QUERY_FLAMEGRAPH_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "query/filter.h"
#include "query/hashmap.h"
#include "query/stackset.h"
#include "store/head.h"
#include "store/matcher.h"
#include "store/store.h"
#include "symbolize/symbolizer.h"

/** struct query_flame_params - what query_flamegraph_build aggregates. */
struct query_flame_params {
	const char *type; /* profile type id, required */
	const struct store_matcher *m;
	size_t nm;
	int64_t from_ns, to_ns; /* inclusive, unix ns */
	size_t max_nodes;	/* nodes kept besides the "other" nodes; 0 = no limit */
	struct symbolizer *sym; /* may be NULL: no query-time symbolization */
	bool invert;		/* leaves first */
	double min_share;	/* 0..1; nodes below this share of the total are merged */
	const struct query_filter *filter; /* may be NULL */
};

/** struct query_flame_opts - shaping a flame graph from a stack set. */
struct query_flame_opts {
	size_t max_nodes; /* 0 = no limit */
	double min_share; /* 0 = none */
	bool invert;
};

/** struct query_flame_node - one node; node 0 is the root. */
struct query_flame_node {
	uint32_t name;		       /* string id in query_flamegraph.names */
	uint32_t parent;	       /* node index; the root's is 0 */
	uint32_t child_off, nchildren; /* range of query_flamegraph.children */
	int64_t self, total;
	uint64_t samples;	       /* sample rows under this node (total) */
	int64_t base_self, base_total; /* diff only: side A */
	uint64_t base_samples, base_self_samples, self_samples;
	bool other;   /* the synthetic node that merges truncated children */
	bool dropped; /* merged into an "other" node, or empty; not part of the output */
};

/**
 * struct query_flamegraph - a built tree. @children lists node indexes,
 * each node's range sorted by total (descending; diff: by rank), "other"
 * last among equals, then name. Owns everything; release with
 * query_flamegraph_release.
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
	uint64_t filtered_rows;	  /* rows dropped by a stack filter */
	int64_t filtered_value;
	bool inverted;
	bool diff;
	int64_t base_total; /* diff: side A's total */
	uint64_t base_samples;
	int64_t truncated_base_total;
	/*
	 * Frame types (profile.frame.type: "cpython", "native", ...): id 0 is
	 * "" (none); @ftype_of[@nftype_of] gives a name's type id, NULL when
	 * no name has one (query_flamegraph_frame_types).
	 */
	struct strtab ftypes;
	uint32_t *ftype_of;
	size_t nftype_of;
	/* private */
	struct qmap child_idx;
};

/**
 * query_flamegraph_build() - collect the rows of series of @p->type
 * matching @p->m in [from_ns, to_ns] of @st (query_stackset_collect) and
 * shape them into @fg (overwritten; release it also after an error).
 * Errors: query_stackset_collect's (-EINVAL with @err when @p->type is
 * missing, -PROF_ETOOBIG). An empty selection gives a root with total 0.
 */
int query_flamegraph_build(struct store *st, const struct query_flame_params *p,
			   struct query_flamegraph *fg, struct prof_err *err);

/**
 * query_flamegraph_from_stackset() - shape @ss (all groups and buckets
 * merged) into @fg (overwritten; release it). Cannot fail.
 */
void query_flamegraph_from_stackset(const struct query_stackset *ss,
				    const struct query_flame_opts *o, struct query_flamegraph *fg);

/**
 * query_flamegraph_write_json() - append
 * {"type":..,"unit":..,"total":N,"samples":N,"max_nodes":N,
 *  "truncated":{"nodes":N,"total":N},"inverted":B,"unsymbolized":N,
 *  "filtered_samples":N,"filtered_total":N,["frame_types":[S,...],]
 *  "root":{"name":"total","self":N,"total":N,"children":[...]}}
 * to @out; @type is echoed as given. Nodes merged by truncation add
 * "other":true. When frames have frame types, "frame_types" lists them
 * and a node whose name has one adds "ft":I, its index there. 0 or -PROF_ETOOBIG when @out's cap is reached.
 */
int query_flamegraph_write_json(const struct query_flamegraph *fg, const char *type,
				size_t max_nodes, struct buf *out);

/**
 * query_flamegraph_frame_types() - note in @fg the frame type of each of
 * its names that @ss knows one of (struct query_ss_srcloc.frame_type);
 * done by query_flamegraph_from_stackset.
 */
void query_flamegraph_frame_types(struct query_flamegraph *fg, const struct query_stackset *ss);

/** query_flamegraph_release() - free what @fg owns; NULL is allowed. */
void query_flamegraph_release(struct query_flamegraph *fg);

/* --- lower level ------------------------------------------------------------------ */

/** query_flamegraph_init() - an empty tree whose root is named @root_name. */
void query_flamegraph_init(struct query_flamegraph *fg, const char *root_name);

/** query_flamegraph_child() - node (@parent, name @s of @n bytes), created if new. */
uint32_t query_flamegraph_child(struct query_flamegraph *fg, uint32_t parent, const char *s,
				size_t n);

/**
 * struct query_flame_src - per-node values over a stack set's trie, for
 * query_flamegraph_shape: @self and @count (rows) per node of @ss (arrays
 * of ss->nodes.n); for a diff also @base_self / @base_count (side A),
 * else NULL.
 */
struct query_flame_src {
	const struct query_stackset *ss;
	const int64_t *self;
	const uint64_t *count;
	const int64_t *base_self;
	const uint64_t *base_count;
};

/**
 * query_flamegraph_shape() - build @fg (initialized, empty; diff set for a
 * diff) from the trie of @s->ss, truncating first: totals are summed on
 * arrays, the nodes to keep chosen there (max_nodes / min_share, the same
 * order as query_flamegraph_finish), and only kept nodes and one "other"
 * child per kept parent become tree nodes; then finishes @fg. Costs one
 * pass over arrays of the trie (sums, which nodes are live, their child
 * lists), then work in proportion to the kept nodes and their children,
 * not a tree node per trie node.
 */
void query_flamegraph_shape(struct query_flamegraph *fg, const struct query_flame_src *s,
			    size_t max_nodes, double min_share);

/** query_flamegraph_child_id() - node (@parent, name id @name of fg->names), created if new. */
uint32_t query_flamegraph_child_id(struct query_flamegraph *fg, uint32_t parent, uint32_t name);

/**
 * query_flamegraph_names_of() - intern every name of @ss in @fg: a
 * malloc'd array mapping the set's name ids to @fg's (caller frees).
 */
uint32_t *query_flamegraph_names_of(struct query_flamegraph *fg, const struct query_stackset *ss);

/**
 * query_flamegraph_finish() - after self values (and self_samples,
 * base_self, base_self_samples) are in place: sum totals bottom-up, drop
 * empty nodes, truncate per @max_nodes / @min_share, link and sort
 * children. Sets fg->total (and base_total for a diff).
 */
void query_flamegraph_finish(struct query_flamegraph *fg, size_t max_nodes, double min_share);

/**
 * query_flamegraph_node_fn - writes the opening of node @id:
 * '{"name":...,<fields>,"children":[' (the walker closes it with "]}").
 */
typedef int (*query_flamegraph_node_fn)(const struct query_flamegraph *fg, uint32_t id,
					struct buf *out, void *arg);

/**
 * query_flamegraph_node_json() - the flame graph's node writer:
 * {"name":..,"self":N,"total":N[,"other":true],"children":[  (@arg unused).
 */
int query_flamegraph_node_json(const struct query_flamegraph *fg, uint32_t id, struct buf *out,
			       void *arg);

/**
 * query_flamegraph_write_tree() - append the tree under @root (kept nodes
 * only, children in sorted order) with @fn writing each node. Iterative.
 * 0 or -PROF_ETOOBIG.
 */
int query_flamegraph_write_tree(const struct query_flamegraph *fg, uint32_t root,
				query_flamegraph_node_fn fn, void *arg, struct buf *out);

#endif
