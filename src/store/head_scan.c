// SPDX-License-Identifier: Apache-2.0
/*
 * head_scan.c - scanning the head: series selection, rows by time range
 * (spans skip runs outside it) and totals per stack, with the per-series,
 * per-run and tail sums queries build and keep.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/stackkey.h"
#include "store/head.h"
#include "store/head_int.h"

#include <pthread.h>

static const char *series_label(const struct series *s, const char *name)
{
	const char *alt = store_label_alias(name);

	for (size_t i = 0; i < s->labels.n; i++)
		if (!strcmp(s->labels.v[i].name, name))
			return s->labels.v[i].value;
	for (size_t i = 0; alt && i < s->labels.n; i++) /* stored by an earlier version */
		if (!strcmp(s->labels.v[i].name, alt))
			return s->labels.v[i].value;
	return NULL;
}

bool head_series_selected(const struct series *s, const char *type, const struct store_matcher *m,
			  size_t nm, int64_t from_ns, int64_t to_ns)
{
	if (!s->rows.n || s->pub.max_ts_ns < from_ns || s->pub.min_ts_ns > to_ns)
		return false;
	return head_series_match(s, type, m, nm);
}

bool head_series_match(const struct series *s, const char *type, const struct store_matcher *m,
		       size_t nm)
{
	if (type && strcmp(type, s->pub.type))
		return false;
	for (size_t i = 0; i < nm; i++)
		if (!store_matcher_match(&m[i], series_label(s, m[i].name)))
			return false;
	return true;
}

/* Memory of kept sums @t, as h->tot_bytes counts it. */
static size_t totals_bytes(const struct series_totals *t)
{
	return sizeof(*t) + t->n * sizeof(t->e[0]);
}

/*
 * Put @t (NULL ok) in *@slot, moving h->tot_bytes from the sums there
 * before to @t's; returns those (the caller frees them after tot_mu).
 */
static struct series_totals *totals_install(struct store_head *h, struct series_totals **slot,
					    struct series_totals *t)
{
	struct series_totals *old = *slot;

	if (old)
		__atomic_sub_fetch(&h->tot_bytes, totals_bytes(old), __ATOMIC_RELAXED);
	if (t)
		__atomic_add_fetch(&h->tot_bytes, totals_bytes(t), __ATOMIC_RELAXED);
	*slot = t;
	return old;
}

/*
 * The totals of @rows[@n] (see struct series_totals), or NULL when a
 * value is negative or the stacks are too many for sums to pay.
 */
static struct series_totals *series_totals_build(const struct store_row *rows, size_t n)
{
	size_t nslots = 64, max = n / 4;
	struct series_totals *t;
	uint32_t *slot; /* (entry index + 1, stack) pairs; index 0 = empty */

	while (nslots < 2 * max)
		nslots *= 2;
	slot = xcalloc(nslots, 2 * sizeof(*slot));
	t = xmalloc(sizeof(*t) + (max + 1) * sizeof(t->e[0]));
	t->nrows = n;
	t->n = 0;
	for (size_t i = 0; i < n; i++) {
		const struct store_row *r = &rows[i];
		uint32_t k = (uint32_t)(r->stack * 0x9E3779B1u) & (uint32_t)(nslots - 1);

		if (r->value < 0)
			goto fail;
		while (slot[2 * k] && slot[2 * k + 1] != r->stack)
			k = (k + 1) & (uint32_t)(nslots - 1);
		if (!slot[2 * k]) {
			if (t->n == max)
				goto fail;
			slot[2 * k] = (uint32_t)++t->n;
			slot[2 * k + 1] = r->stack;
			t->e[t->n - 1] = (struct store_stack_total){ r->stack, 0, 0 };
		}
		struct store_stack_total *e = &t->e[slot[2 * k] - 1];

		e->total = prof_add_sat(e->total, r->value);
		e->rows++;
	}
	free(slot);
	return t;
fail:
	free(slot);
	free(t);
	return NULL;
}

/*
 * Hand @tfn the kept sums of @s's first rows, building or renewing them
 * first when the rows appended since are over a quarter of the series
 * (rdlock held: rows do not change; tot_mu orders the queries that build).
 * Sets *@done to the rows the sums cover (0 = none: scan them all).
 */
static int series_totals_use(struct store_head *h, struct series *s, store_scan_totals_fn tfn,
			     void *arg, size_t *done)
{
	size_t n = s->rows.n;
	struct series_totals *t, *old = NULL;
	int rc = 0;

	*done = 0;
	if (n < SPAN_ROWS)
		return 0;
	pthread_mutex_lock(&h->tot_mu);
	t = s->tot;
	if (!(t && n - t->nrows <= n / 4)) {
		bool tried = s->tot_tried && n - s->tot_tried <= n / 4;

		pthread_mutex_unlock(&h->tot_mu);
		if (tried)
			return 0;
		t = series_totals_build(s->rows.v, n);
		pthread_mutex_lock(&h->tot_mu);
		if (!t) {
			s->tot_tried = n;
		} else if (!s->tot || s->tot->nrows < t->nrows) {
			old = totals_install(h, &s->tot, t);
		} else {
			old = t; /* another query built as much or more meanwhile */
			t = s->tot;
		}
	}
	if (t) {
		rc = tfn(arg, &s->pub, t->e, t->n, t->nrows);
		*done = t->nrows;
	}
	pthread_mutex_unlock(&h->tot_mu);
	free(old);
	return rc;
}

/*
 * The kept sums of run @k of @s (complete: (@k + 1) * CHUNK_ROWS <=
 * rows.n; see CHUNK_ROWS), built now when no query has tried yet, or
 * NULL when the run keeps none. Kept sums do not change until the head is
 * freed, so they are read without tot_mu (rdlock held).
 */
static const struct series_totals *series_chunk(struct store_head *h, struct series *s, size_t k)
{
	struct series_totals *t, *mine;

	pthread_mutex_lock(&h->tot_mu);
	t = k < s->nchunk ? s->chunk[k] : NULL;
	pthread_mutex_unlock(&h->tot_mu);
	if (t)
		return t == CHUNK_NONE ? NULL : t;
	mine = series_totals_build(s->rows.v + k * CHUNK_ROWS, CHUNK_ROWS);
	if (!mine)
		mine = CHUNK_NONE;
	pthread_mutex_lock(&h->tot_mu);
	if (k >= s->nchunk) {
		size_t want = s->rows.n / CHUNK_ROWS;

		s->chunk = xreallocarray(s->chunk, want, sizeof(*s->chunk));
		memset(s->chunk + s->nchunk, 0, (want - s->nchunk) * sizeof(*s->chunk));
		__atomic_add_fetch(&h->tot_bytes, (want - s->nchunk) * sizeof(*s->chunk),
				   __ATOMIC_RELAXED);
		s->nchunk = want;
	}
	t = s->chunk[k];
	if (!t) {
		t = s->chunk[k] = mine;
		if (mine != CHUNK_NONE)
			__atomic_add_fetch(&h->tot_bytes, totals_bytes(t), __ATOMIC_RELAXED);
	} else if (mine != CHUNK_NONE) {
		free(mine); /* another query built it meanwhile */
	}
	pthread_mutex_unlock(&h->tot_mu);
	return t == CHUNK_NONE ? NULL : t;
}

/* Are spans @sp[@n] all within [@from_ns, @to_ns]? */
static bool spans_within(const struct span *sp, size_t n, int64_t from_ns, int64_t to_ns)
{
	for (size_t i = 0; i < n; i++)
		if (sp[i].min_ts < from_ns || sp[i].max_ts > to_ns)
			return false;
	return true;
}

/*
 * Hand @tfn the kept sums of the unfinished last run of @s, which starts
 * at row @lo (see TAIL_MIN_ROWS), when [@from_ns, @to_ns] covers the spans
 * they sum; built or renewed first (rdlock held: rows do not change;
 * tot_mu orders the queries that build and guards s->tail while @tfn
 * reads it). Sets *@done to the rows the sums cover (0 = none).
 */
static int series_tail_use(struct store_head *h, struct series *s, size_t lo, int64_t from_ns,
			   int64_t to_ns, store_scan_totals_fn tfn, void *arg, size_t *done)
{
	size_t avail = (s->rows.n - lo) / SPAN_ROWS * SPAN_ROWS; /* rows of completed spans */
	struct series_totals *t, *old = NULL;
	int rc = 0;

	*done = 0;
	if (avail < TAIL_MIN_ROWS ||
	    !spans_within(&s->spans.v[lo / SPAN_ROWS], avail / SPAN_ROWS, from_ns, to_ns))
		return 0;
	pthread_mutex_lock(&h->tot_mu);
	t = s->tail && s->tail_lo == lo ? s->tail : NULL;
	if (!(t && avail - t->nrows <= avail / 4)) {
		bool tried =
			s->tail_lo == lo && s->tail_tried && avail - s->tail_tried <= avail / 4;

		pthread_mutex_unlock(&h->tot_mu);
		if (tried)
			return 0;
		t = series_totals_build(s->rows.v + lo, avail);
		pthread_mutex_lock(&h->tot_mu);
		if (!t || !s->tail || s->tail_lo != lo || s->tail->nrows < t->nrows) {
			/* the old one is stale, or another run's: not used again */
			old = totals_install(h, &s->tail, t);
			s->tail_lo = lo;
			s->tail_tried = t ? 0 : avail;
		} else {
			old = t; /* another query built as much or more meanwhile */
			t = s->tail;
		}
	}
	if (t) {
		rc = tfn(arg, &s->pub, t->e, t->n, t->nrows);
		*done = t->nrows;
	}
	pthread_mutex_unlock(&h->tot_mu);
	free(old);
	return rc;
}

int store_head_scan(struct store_head *h, const char *type, const struct store_matcher *m,
		    size_t nm, int64_t from_ns, int64_t to_ns, store_scan_fn fn, void *arg)
{
	return store_head_scan_totals(h, type, m, nm, from_ns, to_ns, fn, NULL, arg);
}

int store_head_scan_totals(struct store_head *h, const char *type, const struct store_matcher *m,
			   size_t nm, int64_t from_ns, int64_t to_ns, store_scan_fn fn,
			   store_scan_totals_fn tfn, void *arg)
{
	struct store_row batch[1024];
	int rc;

	for (size_t i = 0; i < h->series.n; i++) {
		struct series *s = h->series.v[i];

		if (!head_series_selected(s, type, m, nm, from_ns, to_ns))
			continue;
		if (s->pub.min_ts_ns >= from_ns && s->pub.max_ts_ns <= to_ns) {
			/* The whole series is in range: its kept sums, then the
			 * rows in place. */
			size_t done = 0;

			if (tfn) {
				rc = series_totals_use(h, s, tfn, arg, &done);
				if (rc)
					return rc;
			}
			if (done < s->rows.n) {
				rc = fn(arg, &s->pub, s->rows.v + done, s->rows.n - done);
				if (rc)
					return rc;
			}
			continue;
		}
		/*
		 * Part of it: by spans (see SPAN_ROWS), a completed run of
		 * CHUNK_ROWS rows wholly in range by its kept sums when it has
		 * them (see CHUNK_ROWS); the batch keeps arrival order.
		 */
		size_t nb = 0;
		for (size_t k = 0; k < s->spans.n; k++) {
			const struct span *sp = &s->spans.v[k];
			size_t lo = k * SPAN_ROWS, hi = PROF_MIN(lo + SPAN_ROWS, s->rows.n);

			if (sp->max_ts < from_ns || sp->min_ts > to_ns)
				continue;
			if (tfn && k % CHUNK_SPANS == 0 && lo + CHUNK_ROWS <= s->rows.n &&
			    spans_within(sp, CHUNK_SPANS, from_ns, to_ns)) {
				const struct series_totals *t = series_chunk(h, s, k / CHUNK_SPANS);

				if (t) {
					if (nb) {
						rc = fn(arg, &s->pub, batch, nb);
						if (rc)
							return rc;
						nb = 0;
					}
					rc = tfn(arg, &s->pub, t->e, t->n, t->nrows);
					if (rc)
						return rc;
					k += CHUNK_SPANS - 1;
					continue;
				}
			}
			if (tfn && k % CHUNK_SPANS == 0 && lo + CHUNK_ROWS > s->rows.n &&
			    s->rows.n - lo >= TAIL_MIN_ROWS) {
				/* The unfinished last run: its kept sums, if in range. */
				size_t done;

				if (nb) {
					rc = fn(arg, &s->pub, batch, nb);
					if (rc)
						return rc;
					nb = 0;
				}
				rc = series_tail_use(h, s, lo, from_ns, to_ns, tfn, arg, &done);
				if (rc)
					return rc;
				if (done) {
					k += done / SPAN_ROWS - 1;
					continue;
				}
			}
			if (sp->min_ts >= from_ns && sp->max_ts <= to_ns) {
				/* A run of spans wholly in range: in place (up to a
				 * run with sums, with @tfn). */
				while (k + 1 < s->spans.n && (!tfn || (k + 1) % CHUNK_SPANS) &&
				       s->spans.v[k + 1].min_ts >= from_ns &&
				       s->spans.v[k + 1].max_ts <= to_ns) {
					k++;
					hi = PROF_MIN(hi + SPAN_ROWS, s->rows.n);
				}
				if (nb) {
					rc = fn(arg, &s->pub, batch, nb);
					if (rc)
						return rc;
					nb = 0;
				}
				rc = fn(arg, &s->pub, s->rows.v + lo, hi - lo);
				if (rc)
					return rc;
				continue;
			}
			for (size_t j = lo; j < hi; j++) {
				const struct store_row *r = &s->rows.v[j];

				if (r->ts_ns < from_ns || r->ts_ns > to_ns)
					continue;
				batch[nb++] = *r;
				if (nb == PROF_ARRAY_SIZE(batch)) {
					rc = fn(arg, &s->pub, batch, nb);
					if (rc)
						return rc;
					nb = 0;
				}
			}
		}
		if (nb) {
			rc = fn(arg, &s->pub, batch, nb);
			if (rc)
				return rc;
		}
	}
	return 0;
}
