// SPDX-License-Identifier: Apache-2.0
/*
 * scan.c - the query side of the store: a consistent view of the sources
 * (blocks overlapping the range, the frozen head, the active head), the
 * cache of decoded block symbols, and the two scan forms of store.h
 * (rows, or per-stack totals).
 *
 * The totals form is the fast path of flame graphs and tables: per block
 * it sums values into a dense array indexed by leaf rank (the block's
 * stacks ranked by frequency) and decodes the timestamp column only for
 * pages that straddle the range boundary, and takes the hours of a series
 * that the query's range covers from the block's hour rollup (RHRS:
 * per-series, per-hour stack totals written by flushes and compaction; in
 * blocks flushed before flushes wrote it, none; or, in blocks
 * of older versions, a series wholly in range from RSER) without reading
 * their pages: only partial hours at the ends of the range are read from
 * rows. The visitor then gets one sparse (stack, total) list per source.
 * The rows form decodes a page's stack column only when the visitor reads
 * stacks (rows_no_stacks: a series summed per step and group), and with
 * the visitor's steps form sums a page per step as it decodes its times
 * (store_block_page_steps), handing over sums instead of rows.
 * A head's totals go to one (total, rows) pair per stack node, summed row
 * by row in a tight loop that prefetches the pair of a row a few rows
 * ahead (head_sum); the head skips the parts of a series outside the
 * range by its per-run time spans (store_head_scan).
 *
 * Per-row filters (per-sample matchers, trace/span ids; see struct
 * rowfilt) are decided once per attribute set: the totals form then also
 * decodes each page's ATR column and skips the rows whose set fails
 * (store_block_page_totals_keep); rollups are not used then.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "store/store_int.h"

/* --- symbols cache -------------------------------------------------------------- */

/* Free unpinned symbols, least recently used first, until under budget (view_mu held). */
static void evict(struct store *s, struct store_block_syms **freed, size_t *nfreed, size_t cap)
{
	while (s->syms_bytes > s->opt.syms_cache_bytes && *nfreed < cap) {
		struct store_blk *lru = NULL;

		for (size_t i = 0; i < s->blocks.n; i++) {
			struct store_blk *b = s->blocks.v[i];

			if (b->syms && !b->syms_pins && (!lru || b->syms_used < lru->syms_used))
				lru = b;
		}
		if (!lru)
			break;
		s->syms_bytes -= lru->syms->bytes;
		freed[(*nfreed)++] = lru->syms;
		lru->syms = NULL;
	}
}

int store_syms_pin(struct store *s, struct store_blk *b, struct store_block_syms **out,
		   struct prof_err *err)
{
	struct store_block_syms *sy = NULL;
	int rc;

	pthread_mutex_lock(&s->view_mu);
	if (b->syms) {
		b->syms_pins++;
		b->syms_used = ++s->tick;
		*out = b->syms;
		pthread_mutex_unlock(&s->view_mu);
		return 0;
	}
	pthread_mutex_unlock(&s->view_mu);
	/* Load outside the lock; a racing loader's copy is dropped. */
	rc = store_block_syms_load(b->b, &sy, err);
	if (rc)
		return rc;
	struct store_block_syms *freed[8];
	size_t nfreed = 0;
	pthread_mutex_lock(&s->view_mu);
	if (b->syms) {
		freed[nfreed++] = sy;
	} else {
		b->syms = sy;
		s->syms_bytes += sy->bytes;
	}
	b->syms_pins++;
	b->syms_used = ++s->tick;
	*out = b->syms;
	evict(s, freed, &nfreed, PROF_ARRAY_SIZE(freed));
	pthread_mutex_unlock(&s->view_mu);
	for (size_t i = 0; i < nfreed; i++)
		store_block_syms_free(freed[i]);
	return 0;
}

void store_syms_unpin(struct store *s, struct store_blk *b)
{
	struct store_block_syms *freed[8];
	size_t nfreed = 0;

	pthread_mutex_lock(&s->view_mu);
	PROF_ASSERT(b->syms_pins > 0);
	b->syms_pins--;
	evict(s, freed, &nfreed, PROF_ARRAY_SIZE(freed));
	pthread_mutex_unlock(&s->view_mu);
	for (size_t i = 0; i < nfreed; i++)
		store_block_syms_free(freed[i]);
}

/* --- view ------------------------------------------------------------------------ */

struct view {
	struct store_blk **blocks;
	size_t nblocks;
	struct store_hold *heads[2]; /* frozen, active */
};

static void view_get(struct store *s, int64_t from_ns, int64_t to_ns, struct view *v)
{
	memset(v, 0, sizeof(*v));
	pthread_mutex_lock(&s->view_mu);
	v->blocks = xcalloc(s->blocks.n + 1, sizeof(*v->blocks));
	for (size_t i = 0; i < s->blocks.n; i++) {
		struct store_blk *b = s->blocks.v[i];

		if (b->b->meta.max_ts_ns < from_ns || b->b->meta.min_ts_ns > to_ns)
			continue;
		b->refs++;
		v->blocks[v->nblocks++] = b;
	}
	v->heads[0] = s->frozen;
	v->heads[1] = s->active;
	for (int i = 0; i < 2; i++)
		if (v->heads[i])
			v->heads[i]->refs++;
	pthread_mutex_unlock(&s->view_mu);
}

static void view_put(struct store *s, struct view *v)
{
	for (size_t i = 0; i < v->nblocks; i++)
		store_blk_put(s, v->blocks[i]);
	for (int i = 0; i < 2; i++)
		store_hold_put(s, v->heads[i]);
	free(v->blocks);
}

/* --- per-row filters ------------------------------------------------------------------ */

/*
 * The per-row part of a query in one source (see struct store_query):
 * matchers whose name is an attribute name of the source are *deferred*
 * (bit i of @deferred for matcher i); the others select series. Per
 * attribute set, computed on first use: @fail, the deferred matchers the
 * set's own value fails (bit 63: the trace/span filter fails), and @fb,
 * the deferred matchers it has no value for (decided by the series
 * label). Per series, @series_fail: the deferred matchers its labels fail.
 * A row passes when !fail[set] && !(fb[set] & series_fail).
 */
#define RF_MAX	63
#define RF_LINK (UINT64_C(1) << 63)

struct rowfilt {
	bool on;
	uint64_t deferred;
	VEC(struct store_matcher) sel; /* shallow copies of the non-deferred matchers */
	const struct store_attr_set *sets;
	size_t nsets;
	uint64_t *fail, *fb;
	uint8_t *done;
	uint64_t series_fail;
	const struct store_link_filter *lf;
};

static void rf_reset(struct rowfilt *f)
{
	free(f->fail);
	free(f->fb);
	free(f->done);
	f->fail = f->fb = NULL;
	f->done = NULL;
	f->sel.n = 0;
	f->on = false;
	f->deferred = 0;
}

/* Set the filter up for a source whose attribute names @has_key answers. */
static void rf_begin(struct rowfilt *f, const struct store_query *q,
		     const struct store_link_filter *lf,
		     bool (*has_key)(const void *src, const char *name), const void *src)
{
	rf_reset(f);
	for (size_t i = 0; i < q->nm; i++) {
		if (i < RF_MAX && has_key(src, q->m[i].name))
			f->deferred |= UINT64_C(1) << i;
		else
			VEC_PUSH(&f->sel, q->m[i]);
	}
	f->on = f->deferred || lf->trace_id || lf->span_id;
	f->lf = lf;
}

/* The source's set table, once known (after the symbols are loaded). */
static void rf_sets(struct rowfilt *f, const struct store_attr_set *sets, size_t nsets)
{
	f->sets = sets;
	f->nsets = nsets;
	if (!f->on)
		return;
	f->fail = xcalloc(nsets + 1, sizeof(uint64_t));
	f->fb = xcalloc(nsets + 1, sizeof(uint64_t));
	f->done = xcalloc(nsets + 1, 1);
}

static const char *labels_get(const struct store_label *l, uint32_t n, const char *name)
{
	const char *alt = store_label_alias(name);

	for (uint32_t i = 0; i < n; i++)
		if (!strcmp(l[i].name, name))
			return l[i].value;
	for (uint32_t i = 0; alt && i < n; i++) /* stored by an earlier version */
		if (!strcmp(l[i].name, alt))
			return l[i].value;
	return NULL;
}

static void rf_series(struct rowfilt *f, const struct store_query *q, const struct store_series *s)
{
	f->series_fail = 0;
	for (size_t i = 0; i < q->nm && i < RF_MAX; i++)
		if ((f->deferred >> i & 1) &&
		    !store_matcher_match(&q->m[i], labels_get(s->labels, s->nlabels, q->m[i].name)))
			f->series_fail |= UINT64_C(1) << i;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Is @s the @n bytes @b in hex (either case)? */
static bool hex_eq(const char *s, const uint8_t *b, size_t n)
{
	if (!s || strlen(s) != 2 * n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (hexval(s[2 * i]) != b[i] >> 4 || hexval(s[2 * i + 1]) != (b[i] & 15))
			return false;
	return true;
}

static bool rf_keep(struct rowfilt *f, const struct store_query *q, uint32_t a)
{
	if (a >= f->nsets)
		return false;
	if (!f->done[a]) {
		const struct store_attr_set *st = &f->sets[a];
		uint64_t fail = 0, fb = 0;

		for (size_t i = 0; i < q->nm && i < RF_MAX; i++) {
			if (!(f->deferred >> i & 1))
				continue;
			const char *v = labels_get(st->labels, st->nlabels, q->m[i].name);

			if (!v)
				fb |= UINT64_C(1) << i;
			else if (!store_matcher_match(&q->m[i], v))
				fail |= UINT64_C(1) << i;
		}
		const struct store_link_filter *lf = f->lf;

		if (lf->trace_id && !(st->has_link && !memcmp(st->trace_id, lf->trace_id, 16)) &&
		    !hex_eq(labels_get(st->labels, st->nlabels, "trace_id"), lf->trace_id, 16))
			fail |= RF_LINK;
		if (lf->span_id && !(st->has_link && !memcmp(st->span_id, lf->span_id, 8)) &&
		    !hex_eq(labels_get(st->labels, st->nlabels, "span_id"), lf->span_id, 8))
			fail |= RF_LINK;
		f->fail[a] = fail;
		f->fb[a] = fb;
		f->done[a] = 1;
	}
	return !f->fail[a] && !(f->fb[a] & f->series_fail);
}

/* Keep the rows of @rows[@n] that pass, in place; returns how many. */
static size_t rf_rows(struct rowfilt *f, const struct store_query *q, struct store_row *rows,
		      size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (rf_keep(f, q, rows[i].attrs))
			rows[k++] = rows[i];
	return k;
}

static bool block_has_key(const void *src, const char *name)
{
	return store_block_has_attr_key(src, name);
}

static bool head_has_key(const void *src, const char *name)
{
	return store_head_has_attr_key(src, name);
}

/* --- scanning a block ---------------------------------------------------------------- */

struct scan {
	struct store *s;
	const struct store_query *q;
	const struct store_link_filter *lf;
	const struct store_visitor *v;
	struct store_scan_stats *st;
	struct store_block_scratch sc;
	VEC(uint32_t) sel;
	VEC(struct store_stack_total) tot;
	bool begun;
	struct store_source src;
	struct rowfilt rf;
	VEC(struct store_row) fbuf;	  /* head rows that passed the filter */
	VEC(struct store_step_sum) steps; /* a page summed per step (visitor's steps form) */
};

static int begin(struct scan *c)
{
	c->begun = true;
	c->st->sources++;
	return c->v->source_begin ? c->v->source_begin(c->v->arg, &c->src) : 0;
}

static int end(struct scan *c)
{
	if (!c->begun)
		return 0;
	c->begun = false;
	return c->v->source_end ? c->v->source_end(c->v->arg, &c->src) : 0;
}

static void page_damaged(struct scan *c, struct prof_err *perr)
{
	c->st->pages_corrupt++;
	log_error("store: skipping a damaged page: %s", perr->msg);
}

/* store_block_keep_fn over the scan's row filter (the current series' state). */
static bool block_keep(void *arg, uint32_t set)
{
	struct scan *c = arg;

	return rf_keep(&c->rf, c->q, set);
}

/*
 * The pages of series @se of block @k with rows in [from_ns, to_ns]: into
 * @acc (totals form) or to the visitor's rows. *@nrows grows by the rows
 * taken.
 */
static int scan_pages(struct scan *c, struct store_blk *k, struct store_block_syms *sy,
		      const struct store_block_series *se, struct store_leaf_acc *acc,
		      int64_t from_ns, int64_t to_ns, uint64_t *nrows)
{
	const struct store_block *b = k->b;
	const struct store_visitor *v = c->v;
	struct prof_err perr;
	int rc = 0;

	for (uint32_t p = se->first_page; p < se->first_page + se->npages && !rc; p++) {
		const struct store_block_page *pg = &b->pages[p];

		if (pg->last_ts_ns < from_ns)
			continue;
		if (pg->first_ts_ns > to_ns)
			break;
		c->st->pages++;
		prof_err_init(&perr);
		if (acc) {
			uint64_t n;
			int prc = c->rf.on ? store_block_page_totals_keep(b, p, from_ns, to_ns, sy,
									  block_keep, c, acc, &n,
									  &c->sc, &perr)
					   : store_block_page_totals(b, p, from_ns, to_ns, acc, &n,
								     &c->sc, &perr);

			if (prc) {
				page_damaged(c, &perr);
				continue;
			}
			*nrows += n;
		} else {
			if (v->steps && !c->rf.on && v->step_ns > 0 && from_ns >= v->step_from_ns) {
				c->steps.n = 0;
				int src = store_block_page_steps(b, p, from_ns, to_ns,
								 v->step_from_ns, v->step_ns,
								 &c->steps, &c->sc, &perr);

				if (src < 0) {
					page_damaged(c, &perr);
					continue;
				}
				if (src == 0) {
					for (size_t i = 0; i < c->steps.n; i++)
						*nrows += c->steps.v[i].rows;
					if (c->steps.n)
						rc = v->steps(v->arg, &c->src, &se->pub, c->steps.v,
							      c->steps.n);
					continue;
				}
				prof_err_init(&perr); /* 1: this page goes as rows */
			}
			int prc = v->rows_no_stacks ? store_block_page_times(b, p, sy, from_ns,
									     to_ns, &c->sc, &perr)
						    : store_block_page_rows(b, p, sy, from_ns,
									    to_ns, &c->sc, &perr);

			if (prc) {
				page_damaged(c, &perr);
				continue;
			}
			if (c->rf.on)
				c->sc.rows.n = rf_rows(&c->rf, c->q, c->sc.rows.v, c->sc.rows.n);
			*nrows += c->sc.rows.n;
			if (c->sc.rows.n)
				rc = v->rows(v->arg, &c->src, &se->pub, c->sc.rows.v, c->sc.rows.n);
		}
	}
	return rc;
}

static int scan_block(struct scan *c, struct store_blk *k)
{
	const struct store_block *b = k->b;
	const struct store_query *q = c->q;
	const struct store_visitor *v = c->v;
	struct store_block_syms *sy;
	struct prof_err perr;
	struct store_leaf_acc *acc = NULL;
	uint64_t nrows = 0;
	int rc;

	c->sel.n = 0;
	rf_begin(&c->rf, q, c->lf, block_has_key, b);
	store_block_select(b, q->type, c->rf.sel.v, c->rf.sel.n, q->from_ns, q->to_ns, &c->sel);
	if (!c->sel.n)
		return 0;
	prof_err_init(&perr);
	rc = store_syms_pin(c->s, k, &sy, &perr);
	if (rc) {
		c->st->blocks_failed++;
		log_error("store: skipping block %s: %s", b->dir, perr.msg);
		return 0;
	}
	c->st->blocks++;
	c->src.id = b->meta.id;
	c->src.is_head = false;
	c->src.dict = &sy->dict;
	c->src.stacks = sy->nodes;
	c->src.nstacks = sy->nnodes;
	c->src.attrs = sy->sets;
	c->src.nattrs = sy->nsets;
	rf_sets(&c->rf, sy->sets, sy->nsets);
	rc = begin(c);
	if (!rc && v->totals)
		acc = xcalloc(sy->nleaves + 2, sizeof(*acc)); /* + the filter's reject slot */
	for (size_t i = 0; i < c->sel.n && !rc; i++) {
		const struct store_block_series *se = &b->series[c->sel.v[i]];

		c->st->series++;
		if (v->series)
			rc = v->series(v->arg, &c->src, &se->pub);
		if (rc)
			break;
		if (!v->rows && !v->totals)
			continue;
		if (c->rf.on)
			rf_series(&c->rf, q, &se->pub);
		if (acc && !c->rf.on && sy->rsum && se->pub.min_ts_ns >= q->from_ns &&
		    se->pub.max_ts_ns <= q->to_ns) {
			/* The whole series is in range: its rollup, not its pages. */
			for (uint64_t e = sy->rsum_off[se->pub.id];
			     e < sy->rsum_off[se->pub.id + 1]; e++) {
				acc[sy->rsum[e].rank].total = prof_add_sat(
					acc[sy->rsum[e].rank].total, sy->rsum[e].total);
				acc[sy->rsum[e].rank].rows += sy->rsum[e].rows;
			}
			nrows += se->pub.nrows;
			c->st->rollup_series++;
			continue;
		}
		if (acc && !c->rf.on && sy->rh_width) {
			/* The hour buckets the range covers from the hour rollup; the
			 * rest of the range (partial hours at either end) from pages. */
			int64_t lo, hi;
			uint64_t hn;
			uint32_t nb = store_block_hours_add(b, sy, se->pub.id, q->from_ns, q->to_ns,
							    acc, &lo, &hi, &hn);

			if (nb) {
				nrows += hn;
				c->st->rollup_buckets += nb;
				if (lo <= se->pub.min_ts_ns && hi >= se->pub.max_ts_ns) {
					c->st->rollup_series++;
					continue;
				}
				if (lo > q->from_ns)
					rc = scan_pages(c, k, sy, se, acc, q->from_ns, lo - 1,
							&nrows);
				if (!rc && hi < q->to_ns)
					rc = scan_pages(c, k, sy, se, acc, hi + 1, q->to_ns,
							&nrows);
				continue;
			}
		}
		rc = scan_pages(c, k, sy, se, acc, q->from_ns, q->to_ns, &nrows);
	}
	if (!rc && acc) {
		c->tot.n = 0;
		for (size_t r = 0; r < sy->nleaves; r++) {
			if (acc[r].rows) {
				struct store_stack_total t = { sy->leaf_node[r], acc[r].total,
							       acc[r].rows };

				VEC_PUSH(&c->tot, t);
			}
		}
		if (c->tot.n)
			rc = v->totals(v->arg, &c->src, c->tot.v, c->tot.n, nrows);
	}
	c->st->rows += nrows;
	if (!rc)
		rc = end(c);
	else
		c->begun = false;
	free(acc);
	store_syms_unpin(c->s, k);
	return rc;
}

/* --- scanning a head -------------------------------------------------------------------- */

struct head_scan {
	struct scan *c;
	const struct store_series *last; /* series of the previous batch */
	struct store_leaf_acc *acc;	 /* totals form: per stack node */
	VEC(uint32_t) touched;		 /* nodes with acc[k].rows > 0, first-summed order */
	uint64_t nrows;
};

/*
 * How many rows ahead head_sum prefetches its accumulator: the rows are
 * read in order (the hardware prefetcher follows them), the accumulators
 * at random over the stack nodes (861 k nodes, 14 MB, on the fleet of
 * bench/bench_query.sh), so each row's add waits on a miss unless that
 * line was asked for a few rows earlier.
 */
#define HEAD_SUM_AHEAD 16

/*
 * Sum @rows[@n] into @hs->acc by stack node: one load, one saturating
 * add (prof_add_sat, as blocks sum) and one count per row, with the
 * accumulator of the row HEAD_SUM_AHEAD ahead prefetched.
 */
static void head_sum(struct head_scan *hs, const struct store_row *rows, size_t n)
{
	struct store_leaf_acc *acc = hs->acc;
	size_t i = 0;

	for (; i + HEAD_SUM_AHEAD < n; i++) {
		__builtin_prefetch(&acc[rows[i + HEAD_SUM_AHEAD].stack], 1);
		struct store_leaf_acc *a = &acc[rows[i].stack];

		if (!a->rows)
			VEC_PUSH(&hs->touched, rows[i].stack);
		a->total = prof_add_sat(a->total, rows[i].value);
		a->rows++;
	}
	for (; i < n; i++) {
		struct store_leaf_acc *a = &acc[rows[i].stack];

		if (!a->rows)
			VEC_PUSH(&hs->touched, rows[i].stack);
		a->total = prof_add_sat(a->total, rows[i].value);
		a->rows++;
	}
}

/* Start the source and a new series as @s's batches begin (see head_rows). */
static int head_series(struct head_scan *hs, const struct store_series *s)
{
	struct scan *c = hs->c;
	const struct store_visitor *v = c->v;
	int rc;

	if (!c->begun) {
		rc = begin(c);
		if (rc)
			return rc;
	}
	if (s != hs->last) {
		/* Batches of one series are consecutive. */
		hs->last = s;
		c->st->series++;
		if (v->series) {
			rc = v->series(v->arg, &c->src, s);
			if (rc)
				return rc;
		}
		if (c->rf.on)
			rf_series(&c->rf, c->q, s);
	}
	return 0;
}

static int head_rows(void *arg, const struct store_series *s, const struct store_row *rows,
		     size_t n)
{
	struct head_scan *hs = arg;
	struct scan *c = hs->c;
	const struct store_visitor *v = c->v;
	int rc = head_series(hs, s);

	if (rc)
		return rc;
	if (c->rf.on && (v->rows || hs->acc)) {
		c->fbuf.n = 0;
		VEC_RESERVE(&c->fbuf, n);
		memcpy(c->fbuf.v, rows, sizeof(*rows) * n);
		n = rf_rows(&c->rf, c->q, c->fbuf.v, n);
		rows = c->fbuf.v;
		if (!n)
			return 0;
	}
	hs->nrows += n;
	if (v->rows)
		return v->rows(v->arg, &c->src, s, rows, n);
	if (hs->acc)
		head_sum(hs, rows, n);
	return 0;
}

/*
 * A series' kept per-stack sums (store_head_scan_totals): into the
 * accumulator as its rows would go, the pair of the entry HEAD_SUM_AHEAD
 * on prefetched as head_sum does (a run's sums are about 1600 stacks
 * spread over the head's nodes: each add a miss otherwise).
 */
static int head_totals(void *arg, const struct store_series *s, const struct store_stack_total *t,
		       size_t n, size_t nrows)
{
	struct head_scan *hs = arg;
	struct store_leaf_acc *acc = hs->acc;
	int rc = head_series(hs, s);

	if (rc)
		return rc;
	hs->nrows += nrows;
	for (size_t i = 0; i < n; i++) {
		if (i + HEAD_SUM_AHEAD < n)
			__builtin_prefetch(&acc[t[i + HEAD_SUM_AHEAD].stack], 1);
		struct store_leaf_acc *a = &acc[t[i].stack];

		if (!a->rows)
			VEC_PUSH(&hs->touched, t[i].stack);
		a->total = prof_add_sat(a->total, t[i].total);
		a->rows += t[i].rows;
	}
	return 0;
}

/*
 * A zeroed accumulator of at least @n entries (*@cap of them): the
 * store's spare if it is big enough, else a new one with a quarter more
 * for the head's growth. A fresh one per query (16 bytes per stack node,
 * 14 MB on the fleet of bench/bench_query.sh) pays a page fault and a
 * page clear per 4 KiB; a kept one is zeroed at the touched entries only.
 */
static struct store_leaf_acc *acc_take(struct store *s, size_t n, size_t *cap)
{
	struct store_leaf_acc *a = NULL;

	pthread_mutex_lock(&s->view_mu);
	if (s->head_acc && s->head_acc_n >= n) {
		a = s->head_acc;
		*cap = s->head_acc_n;
		s->head_acc = NULL;
		s->head_acc_n = 0;
	}
	pthread_mutex_unlock(&s->view_mu);
	if (!a) {
		*cap = n + n / 4;
		a = xcalloc(*cap, sizeof(*a));
	}
	return a;
}

/* Give back @a[@cap], zeroed again by the caller; the store keeps the larger spare. */
static void acc_put(struct store *s, struct store_leaf_acc *a, size_t cap)
{
	struct store_leaf_acc *drop = a;

	pthread_mutex_lock(&s->view_mu);
	if (!s->head_acc || s->head_acc_n < cap) {
		drop = s->head_acc;
		s->head_acc = a;
		s->head_acc_n = cap;
	}
	pthread_mutex_unlock(&s->view_mu);
	free(drop);
}

static int scan_head(struct scan *c, struct store_hold *h, uint64_t id)
{
	const struct store_query *q = c->q;
	struct head_scan hs = { .c = c };
	size_t acc_cap = 0;
	int rc;

	store_head_rdlock(h->h);
	c->src.id = id;
	c->src.is_head = true;
	c->src.dict = store_head_dict(h->h);
	c->src.stacks = store_head_stacks(h->h, &c->src.nstacks);
	c->src.attrs = store_head_attrs(h->h, &c->src.nattrs);
	rf_begin(&c->rf, q, c->lf, head_has_key, h->h);
	rf_sets(&c->rf, c->src.attrs, c->src.nattrs);
	if (c->v->totals)
		hs.acc = acc_take(c->s, c->src.nstacks + 1, &acc_cap);
	/* Sums kept per series stand for its rows when nothing filters them. */
	rc = store_head_scan_totals(h->h, q->type, c->rf.sel.v, c->rf.sel.n, q->from_ns, q->to_ns,
				    head_rows,
				    hs.acc && !c->rf.on && !c->v->rows ? head_totals : NULL, &hs);
	if (!rc && hs.acc && c->begun) {
		c->tot.n = 0;
		for (size_t i = 0; i < hs.touched.n; i++) {
			uint32_t k = hs.touched.v[i];
			struct store_stack_total t = { k, hs.acc[k].total, hs.acc[k].rows };

			VEC_PUSH(&c->tot, t);
		}
		if (c->tot.n)
			rc = c->v->totals(c->v->arg, &c->src, c->tot.v, c->tot.n, hs.nrows);
	}
	c->st->rows += c->v->rows || c->v->totals ? hs.nrows : 0;
	if (!rc)
		rc = end(c);
	else
		c->begun = false;
	store_head_rdunlock(h->h);
	if (hs.acc) {
		for (size_t i = 0; i < hs.touched.n; i++)
			hs.acc[hs.touched.v[i]] = (struct store_leaf_acc){ 0, 0 };
		acc_put(c->s, hs.acc, acc_cap);
	}
	VEC_FREE(&hs.touched);
	return rc;
}

int store_scan(struct store *s, const struct store_query *q, const struct store_visitor *v,
	       struct store_scan_stats *st, struct prof_err *err)
{
	return store_scan_ex(s, q, NULL, v, st, err);
}

int store_scan_ex(struct store *s, const struct store_query *q, const struct store_link_filter *lf,
		  const struct store_visitor *v, struct store_scan_stats *st, struct prof_err *err)
{
	struct store_scan_stats dummy;
	struct store_link_filter nolf = { 0 };
	struct scan c = { .s = s, .q = q, .lf = lf ? lf : &nolf, .v = v };
	struct view vw;
	int rc = 0;

	if (!v || (v->rows && v->totals))
		return prof_err_set(err, -EINVAL, -1,
				    "store_scan: set at most one of rows and totals");
	if (s->be)
		return s->be->scan(s->be_ctx, q, lf, v, st, err);
	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	c.st = st;
	if (q->from_ns > q->to_ns)
		return 0;
	view_get(s, q->from_ns, q->to_ns, &vw);
	for (size_t i = 0; i < vw.nblocks && !rc; i++)
		rc = scan_block(&c, vw.blocks[i]);
	if (!rc && vw.heads[0])
		rc = scan_head(&c, vw.heads[0], 1);
	if (!rc && vw.heads[1])
		rc = scan_head(&c, vw.heads[1], 0);
	view_put(s, &vw);
	store_block_scratch_release(&c.sc);
	VEC_FREE(&c.sel);
	VEC_FREE(&c.tot);
	rf_reset(&c.rf);
	VEC_FREE(&c.rf.sel);
	VEC_FREE(&c.fbuf);
	VEC_FREE(&c.steps);
	return rc;
}

/* --- profile types ---------------------------------------------------------------------- */

static int collect_type(void *arg, const char *type)
{
	struct strtab *t = arg;

	strtab_intern_cstr(t, type);
	return 0;
}

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int store_types(struct store *s, int64_t from_ns, int64_t to_ns,
		int (*fn)(void *arg, const char *type), void *arg)
{
	struct strtab t;
	struct view vw;
	int rc = 0;

	if (s->be)
		return s->be->types(s->be_ctx, from_ns, to_ns, fn, arg);
	strtab_init(&t);
	view_get(s, from_ns, to_ns, &vw);
	for (size_t i = 0; i < vw.nblocks; i++) {
		const struct store_block *b = vw.blocks[i]->b;

		for (uint32_t k = 0; k < b->nseries; k++) {
			const struct store_series *se = &b->series[k].pub;

			if (se->max_ts_ns >= from_ns && se->min_ts_ns <= to_ns)
				strtab_intern_cstr(&t, se->type);
		}
	}
	for (int i = 0; i < 2; i++) {
		if (!vw.heads[i])
			continue;
		store_head_rdlock(vw.heads[i]->h);
		store_head_types(vw.heads[i]->h, from_ns, to_ns, collect_type, &t);
		store_head_rdunlock(vw.heads[i]->h);
	}
	view_put(s, &vw);
	const char **v = xcalloc(t.n + 1, sizeof(*v));
	for (uint32_t i = 1; i < t.n; i++)
		v[i - 1] = t.s[i];
	if (t.n > 2)
		qsort(v, t.n - 1, sizeof(*v), cmp_cstr);
	for (uint32_t i = 0; i + 1 < t.n && !rc; i++)
		rc = fn(arg, v[i]);
	free(v);
	strtab_release(&t);
	return rc;
}
