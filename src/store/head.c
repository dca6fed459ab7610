// SPDX-License-Identifier: Apache-2.0
/*
 * head.c - the in-memory head (head.h has the model and the locking):
 * its life, read locks, type listing, stats and import of a dictionary.
 * The parts: head_dict.c (symbol dictionary, stack tree), head_check.c
 * (input checks), head_series.c (series and adding profiles), head_scan.c
 * (scans).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/stackkey.h"
#include "store/head.h"
#include "store/head_int.h"

#include <pthread.h>

struct series_totals head_chunk_none;
struct store_head *store_head_new(void)
{
	struct store_head *h = xcalloc(1, sizeof(*h));
	struct store_stack_node root = { 0, 0 };
	pthread_rwlockattr_t attr;

	pthread_rwlockattr_init(&attr);
	/* Queued writers (ingest) go before new readers (queries). */
	pthread_rwlockattr_setkind_np(&attr, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&h->lock, &attr);
	pthread_rwlockattr_destroy(&attr);
	pthread_mutex_init(&h->tot_mu, NULL);
	model_profile_init(&h->dict);
	strtab_init(&h->map_keys);
	strtab_init(&h->series_keys);
	strtab_init(&h->label_strs);
	strtab_init(&h->set_keys);
	strtab_init(&h->attr_keys);
	{
		struct store_attr_set empty = { 0 };

		VEC_PUSH(&h->sets, empty);
	}
	VEC_PUSH(&h->nodes, root);
	h->min_ts = INT64_MAX;
	h->max_ts = INT64_MIN;
	return h;
}

void store_head_free(struct store_head *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->series.n; i++) {
		VEC_FREE(&h->series.v[i]->labels);
		VEC_FREE(&h->series.v[i]->rows);
		VEC_FREE(&h->series.v[i]->spans);
		free(h->series.v[i]->tot);
		for (size_t k = 0; k < h->series.v[i]->nchunk; k++)
			if (h->series.v[i]->chunk[k] != CHUNK_NONE)
				free(h->series.v[i]->chunk[k]);
		free(h->series.v[i]->chunk);
		free(h->series.v[i]->tail);
		free(h->series.v[i]);
	}
	VEC_FREE(&h->series);
	for (size_t i = 0; i < h->sets.n; i++)
		free((void *)h->sets.v[i].labels);
	VEC_FREE(&h->sets);
	strtab_release(&h->set_keys);
	strtab_release(&h->attr_keys);
	VEC_FREE(&h->nodes);
	free(h->node_slots);
	free(h->addr_slots);
	free(h->stack_slots);
	free(h->loc_slots);
	strtab_release(&h->label_strs);
	strtab_release(&h->series_keys);
	strtab_release(&h->map_keys);
	model_profile_release(&h->dict);
	pthread_rwlock_destroy(&h->lock);
	pthread_mutex_destroy(&h->tot_mu);
	free(h);
}

/* --- readers ------------------------------------------------------------- */

void store_head_rdlock(struct store_head *h)
{
	pthread_rwlock_rdlock(&h->lock);
}

void store_head_rdunlock(struct store_head *h)
{
	pthread_rwlock_unlock(&h->lock);
}

const struct model_profile *store_head_dict(const struct store_head *h)
{
	return &h->dict;
}

const struct store_stack_node *store_head_stacks(const struct store_head *h, size_t *n)
{
	*n = h->nodes.n;
	return h->nodes.v;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int store_head_types(struct store_head *h, int64_t from_ns, int64_t to_ns,
		     int (*fn)(void *arg, const char *type), void *arg)
{
	const char **types = xcalloc(h->series.n + 1, sizeof(*types));
	size_t n = 0;
	int rc = 0;

	for (size_t i = 0; i < h->series.n; i++)
		if (head_series_selected(h->series.v[i], NULL, NULL, 0, from_ns, to_ns))
			types[n++] = h->series.v[i]->pub.type;
	qsort(types, n, sizeof(*types), cmp_str);
	for (size_t i = 0; i < n && !rc; i++)
		if (i == 0 || strcmp(types[i - 1], types[i]))
			rc = fn(arg, types[i]);
	free(types);
	return rc;
}

/* Memory held, in bytes: an estimate within a few percent (allocator overhead aside). */
static uint64_t head_bytes(const struct store_head *h)
{
	const struct model_profile *d = &h->dict;

	return sizeof(*h) + h->row_bytes + h->series_bytes + h->str_bytes + h->set_bytes +
	       __atomic_load_n(&h->tot_bytes, __ATOMIC_RELAXED) + h->sets.cap * sizeof(*h->sets.v) +
	       h->nodes.cap * sizeof(*h->nodes.v) +
	       (uint64_t)h->node_nslots * sizeof(*h->node_slots) +
	       (uint64_t)h->addr_nslots * sizeof(*h->addr_slots) +
	       (uint64_t)h->loc_nslots * sizeof(*h->loc_slots) +
	       (uint64_t)h->stack_nslots * sizeof(*h->stack_slots) +
	       d->mappings.cap * sizeof(*d->mappings.v) +
	       d->functions.cap * sizeof(*d->functions.v) +
	       d->locations.cap * sizeof(*d->locations.v) + d->lines.cap * sizeof(*d->lines.v) +
	       (uint64_t)d->fn_nslots * sizeof(uint32_t);
}

size_t store_head_nseries(const struct store_head *h)
{
	return h->series.n;
}

const struct store_series *store_head_series_at(const struct store_head *h, size_t i,
						const struct store_row **rows)
{
	PROF_ASSERT(i < h->series.n);
	*rows = h->series.v[i]->rows.v;
	return &h->series.v[i]->pub;
}

int store_head_import(struct store_head *h, const struct model_profile *src,
		      const struct store_stack_node *nodes, size_t nnodes, uint32_t *map)
{
	struct xlate x = { .p = src };
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = store_head_check(src, &err);
	if (rc)
		return rc;
	for (size_t i = 1; i < nnodes; i++)
		if (nodes[i].parent >= i || nodes[i].loc >= src->locations.n)
			return -PROF_ECORRUPT;
	pthread_rwlock_wrlock(&h->lock);
	map[0] = 0;
	for (size_t i = 1; i < nnodes; i++)
		map[i] = head_node_intern(h, map[nodes[i].parent],
					  head_xl_location(h, &x, nodes[i].loc));
	pthread_rwlock_unlock(&h->lock);
	head_xlate_release(&x);
	return 0;
}

void store_head_get_stats(struct store_head *h, struct store_head_stats *st)
{
	pthread_rwlock_rdlock(&h->lock);
	st->series = h->series.n;
	st->rows = h->rows;
	st->stack_nodes = h->nodes.n;
	st->locations = h->dict.locations.n;
	st->functions = h->dict.functions.n;
	st->mappings = h->dict.mappings.n;
	st->strings = h->dict.strings.n;
	st->profiles = h->profiles;
	st->min_ts_ns = h->min_ts;
	st->max_ts_ns = h->max_ts;
	st->bytes = head_bytes(h);
	pthread_rwlock_unlock(&h->lock);
}
