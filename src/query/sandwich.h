/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandwich.h - the sandwich view of one function F over a stack set:
 *
 *   callers  an inverted tree rooted at F: F's callers, their callers, up
 *            to the root frames, aggregated over every call path;
 *   callees  a tree rooted at F: what F calls, down to the leaves,
 *            aggregated over every call path.
 *
 * Recursion: each stack counts once. Both trees split a stack at its
 * outermost F (the one nearest the root): the callers tree gets the
 * frames above it (reversed), the callees tree the frames below it, which
 * keeps any recursive F frames deeper in the path visible there. So both
 * roots' totals equal F's total in the table (query/table.h), and the
 * callees root's self is the value of stacks whose outermost F is their
 * leaf. F is matched by exact frame name.
 */
#ifndef PROF_QUERY_SANDWICH_H
#define PROF_QUERY_SANDWICH_H

#include "base/buf.h"
#include "base/compat.h"
#include "query/flamegraph.h"
#include "query/stackset.h"

struct query_sandwich {
	struct query_flamegraph callers, callees; /* roots named F */
	int64_t self, total;			  /* F's, as in the table */
	bool found;				  /* F is a frame of a selected stack */
};

/**
 * query_sandwich_build() - the sandwich of @function in @ss into @sw
 * (overwritten; release it). @max_nodes truncates each tree as the flame
 * graph does (0 = no limit). An absent function gives empty trees.
 */
void query_sandwich_build(const struct query_stackset *ss, const char *function, size_t max_nodes,
			  struct query_sandwich *sw);

/**
 * query_sandwich_write_json() - append
 * {"type":..,"unit":..,"function":F,"found":B,"self":N,"total":N,
 *  "samples":N (the set's rows),"max_nodes":N,
 *  "callers":{"truncated":{...},"root":{node}},
 *  "callees":{"truncated":{...},"root":{node}}}
 * with nodes as in the flame graph JSON. 0 or -PROF_ETOOBIG.
 */
int query_sandwich_write_json(const struct query_sandwich *sw, const struct query_stackset *ss,
			      const char *function, size_t max_nodes, struct buf *out);

/** query_sandwich_release() - NULL is allowed. */
void query_sandwich_release(struct query_sandwich *sw);

#endif
