/* SPDX-License-Identifier: Apache-2.0 */
/*
 * labels.h - label names and values of the series a selection touches,
 * for /api/v1/labels and /api/v1/labels/NAME/values (and selector
 * autocompletion in the explorer): scoped by profile type (NULL = every
 * type), matchers and time range, so a listing never offers a value that
 * selects nothing. Series labels (resource attributes and the like) from
 * a series-only scan; per-sample attributes (thread.name, ...), when a
 * source touched has any, from a second scan of the selected rows (time
 * range and per-sample matchers applied per row; the stack column is not
 * read, and block pages without attribute sets come summed), so a
 * per-sample value is listed only when a selected sample has it.
 *
 * Like query_stackset_collect this is a single place that talks to the
 * store's scan API: when the store gains a label index, only this file
 * changes.
 */
#ifndef PROF_QUERY_LABELS_H
#define PROF_QUERY_LABELS_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "store/head.h"
#include "store/matcher.h"
#include "store/store.h"

/** struct query_strlist - sorted distinct strings (bytewise); owns them. */
struct query_strlist {
	char **v;
	size_t n;
};

/**
 * query_labels_collect() - the label names (@name NULL) or the values of
 * label @name of every series of @type (NULL = any) matching @m with rows
 * in [from_ns, to_ns] (for blocks: whose time range overlaps it), and of
 * the per-sample attributes of the selected rows, into @out (overwritten;
 * release it). Rows are read only when a selected source has per-sample
 * attribute sets. Returns 0 (an empty selection gives an empty list) or
 * the scan's error.
 */
int query_labels_collect(struct store *st, const char *type, const struct store_matcher *m,
			 size_t nm, int64_t from_ns, int64_t to_ns, const char *name,
			 struct query_strlist *out);

/** struct query_nearest - where a selection's data lies outside a range (query_nearest_find). */
struct query_nearest {
	bool have_before, have_after;
	int64_t before_ns; /* the latest row time before the range */
	int64_t after_ns;  /* the earliest row time after it */
};

#define QUERY_NEAREST_MAX_SERIES 100000 /* series one query_nearest_find looks at */

/**
 * query_nearest_find() - for a selection with no rows in [from_ns,
 * to_ns]: the nearest row times of the series of @type (NULL = any)
 * matching @m before and after the range, into @out, from the series
 * index only (each series' min and max row time; a series-only scan
 * reads no rows). A series overlapping the range (its rows there failed
 * a per-sample matcher) counts for neither side. Bounded work: at most
 * QUERY_NEAREST_MAX_SERIES series are looked at per side, blocks nearest
 * the range first being no promise (blocks come in time order), so for
 * a store larger than that the times are data that exists, not always
 * the nearest. Returns 0 or the scan's error.
 */
int query_nearest_find(struct store *st, const char *type, const struct store_matcher *m, size_t nm,
		       int64_t from_ns, int64_t to_ns, struct query_nearest *out);

/** query_strlist_write_json() - append ["a","b",...]. 0 or -PROF_ETOOBIG. */
int query_strlist_write_json(const struct query_strlist *l, struct buf *out);

/**
 * query_strlist_write_json_limited() - append {"values":[the first @limit
 * strings],"total":N,"limit":@limit,"truncated":N > @limit}: an answer
 * whose size is bounded by the caller, saying what it left out.
 * 0 or -PROF_ETOOBIG.
 */
int query_strlist_write_json_limited(const struct query_strlist *l, size_t limit, struct buf *out);

/** query_strlist_release() - NULL is allowed. */
void query_strlist_release(struct query_strlist *l);

#endif
