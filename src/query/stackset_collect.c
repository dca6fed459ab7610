// SPDX-License-Identifier: Apache-2.0
/*
 * stackset_collect.c - collecting a stack set from the store or a profile.
 *
 * Collecting from the store, in four steps:
 *   (1) scan: sum values and count rows per (store stack id, group,
 *       bucket): a dense array indexed by stack id when there is neither
 *       group_by nor step (the flame graph / table / diff path), else a
 *       hash of entries. Group ids are found once per series (memo).
 *       Gauge types get a first pass counting each series' snapshots
 *       per bucket (the whole range without a step), so each row can be
 *       weighted by 1/nsnap, and their entries' values are then those
 *       means (gauge_means): every view shows the mean snapshot;
 *   (2) close the set of touched store stacks under "parent of" and sort
 *       it by id: parents come first (store invariant parent < id);
 *   (3) translate each store stack node to a trie node: its location's
 *       frames (inline chain expanded outer first, symbolized or named by
 *       the fallback, frame-filtered) appended under its parent's trie
 *       node; the stack-filter match is inherited from the parent, so it
 *       costs one regex match per distinct location, not per row;
 *   (4) move the aggregates to entries keyed by trie node (several store
 *       stacks may share a names path: same function, other addresses).
 * Locations are translated once per query (memo by location index).
 *
 * The store hands rows over source by source (each block has its own
 * symbol tables and stack ids, the heads theirs): steps (2)-(4) run at the
 * end of each source, so stack ids never outlive their source, and the
 * trie merges equal name paths of different sources. Without group_by,
 * step or kept samples the store itself sums per stack (its totals scan,
 * which skips the timestamp column) and step (1) is empty.
 *
 * That totals path, without a frame filter, skips steps (2)-(4): the
 * translation of a source's stacks is kept across queries in a shared
 * names trie (stackset_cache.c), the totals are summed
 * per trie node, and the touched trie nodes are copied into the set,
 * which borrows the trie's names.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "query/scratch.h"
#include "query/stackset.h"
#include "query/units.h"
#include "query/stackset_int.h"

#include <math.h>
#include <pthread.h>
#include <xxhash.h>

/* --- common parameter handling ---------------------------------------------------------- */

static int setup(struct query_stackset *ss, const char *type, const struct query_stackset_params *p,
		 struct prof_err *err)
{
	struct query_type_id t;

	query_stackset_init(ss);
	if (!type || !*type)
		return prof_err_set(err, -EINVAL, -1, "query: a profile type is required");
	if (p->ngroup_by > QUERY_SS_MAX_GROUP_BY)
		return prof_err_set(err, -EINVAL, -1,
				    "parameter 'group_by': at most %d labels, got %zu",
				    QUERY_SS_MAX_GROUP_BY, p->ngroup_by);
	if (p->from_ns > p->to_ns)
		return prof_err_set(err, -EINVAL, -1, "query: 'from' is after 'to'");
	if (p->step_ns < 0)
		return prof_err_set(err, -EINVAL, -1, "parameter 'step': must be positive");
	snprintf(ss->type, sizeof(ss->type), "%s", type);
	query_type_split(type, &t);
	snprintf(ss->unit, sizeof(ss->unit), "%s", t.sample_unit);
	ss->cumulative = query_type_is_cumulative(type);
	ss->from_ns = p->from_ns;
	ss->to_ns = p->to_ns;
	ss->step_ns = p->step_ns;
	if (p->step_ns > 0) {
		uint64_t nb =
			(uint64_t)((__int128)p->to_ns - p->from_ns) / (uint64_t)p->step_ns + 1;

		if (nb > QUERY_SS_MAX_BUCKETS)
			return prof_err_set(err, -EINVAL, -1,
					    "parameter 'step': %" PRIu64
					    " steps in the range; at most %d (use a larger step)",
					    nb, QUERY_SS_MAX_BUCKETS);
		ss->nbuckets = (uint32_t)nb;
	}
	if (p->ngroup_by)
		query_stackset_set_group_by(ss, p->group_by, p->ngroup_by);
	ss->max_entries = p->max_entries ? p->max_entries : QUERY_SS_MAX_ENTRIES;
	return 0;
}

static int too_many_entries(const struct query_stackset *ss, struct prof_err *err)
{
	return prof_err_set(
		err, -PROF_ETOOBIG, -1,
		"query: more than %zu distinct (stack, group, step) cells; narrow the "
		"time range or the selector, use a larger step or fewer group_by labels",
		ss->max_entries);
}

static int too_many_samples(size_t max, struct prof_err *err)
{
	return prof_err_set(err, -PROF_ETOOBIG, -1,
			    "query: more than %zu samples to keep for a flame chart; narrow the "
			    "time range or the selector",
			    max);
}

static uint32_t bucket_of(const struct query_stackset *ss, int64_t ts)
{
	if (ss->step_ns <= 0)
		return 0;
	return (uint32_t)((uint64_t)((__int128)ts - ss->from_ns) / (uint64_t)ss->step_ns);
}

/* --- snapshots of gauge series: nsnap per (series, bucket) ------------------------------ */

struct snap {
	uint32_t series, bucket;
	int64_t ts;
};

struct snaps {
	VEC(struct snap) v;
	struct qmap count; /* series << 32 | bucket -> distinct timestamps */
};

static void snaps_add(struct snaps *sn, uint32_t series, uint32_t bucket, int64_t ts)
{
	if (sn->v.n) {
		const struct snap *last = &sn->v.v[sn->v.n - 1];

		if (last->series == series && last->ts == ts)
			return;
	}
	struct snap s = { series, bucket, ts };
	VEC_PUSH(&sn->v, s);
}

static int cmp_snap(const void *a, const void *b)
{
	const struct snap *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void snaps_finish(struct snaps *sn)
{
	if (sn->v.n > 1)
		qsort(sn->v.v, sn->v.n, sizeof(*sn->v.v), cmp_snap);
	for (size_t i = 0; i < sn->v.n; i++) {
		const struct snap *s = &sn->v.v[i];

		if (i && !cmp_snap(s, &sn->v.v[i - 1]))
			continue;
		uint64_t key = (uint64_t)s->series << 32 | s->bucket;
		uint32_t c = qmap_get(&sn->count, key);
		qmap_put(&sn->count, key, c == QMAP_NONE ? 1 : c + 1);
	}
	VEC_FREE(&sn->v);
}

static double snaps_weight(const struct snaps *sn, uint32_t series, uint32_t bucket)
{
	uint32_t c = qmap_get(&sn->count, (uint64_t)series << 32 | bucket);

	return c == QMAP_NONE || c == 0 ? 1.0 : 1.0 / c;
}

/* --- collecting from the store ---------------------------------------------------------- */

struct collector {
	struct query_stackset *ss;
	const struct query_stackset_params *p;
	bool filtering, gauge, keep;
	/* per source (the store's stack ids are the source's) */
	size_t nstacks;
	bool dense;
	int64_t *dval; /* dense: per source stack */
	uint64_t *dcnt;
	struct query_stackset raw;	      /* hash mode: entries keyed by source stack id */
	VEC(struct store_stack_total) totals; /* totals scan: what the store summed */
	size_t samples_from;		      /* first kept sample of this source */
	struct qmap local;		      /* source series id -> global series id */
	struct qmap attr_group;		      /* (series id << 32 | attribute set) -> group */
	/* whole scan */
	struct strtab series_keys; /* type '\0' labels: the global series ids */
	struct qmap series_group;  /* global series id -> group id */
	struct buf key;
	struct snaps snaps;
	size_t max_samples;
	bool over_entries, over_samples; /* the visitor stopped on a cap */
	int rc;				 /* error of a source_end step */
	/* the cached path (see "the translation cache") */
	bool cached, epoch_set, xc_lost;
	uint32_t side; /* 0, or 1 for side B of a pair */
	uint64_t epoch;
	uint32_t *qslot; /* [nqslot]: trie node -> index in qacc + 1, 0 = none yet */
	size_t nqslot;
	VEC(struct qacc) qacc;
	uint32_t *qvar; /* [nqvar]: trie name at XC_MULTI -> the variant picked, 0 = none */
	size_t nqvar;
	bool var_set, var_moved; /* var_gen seen; it moved since (the query runs again) */
	uint64_t var_gen;
};

/*
 * The same label set has a different series id in every source (each
 * block numbers its own series), so series are identified across sources
 * by their key: type, then name, value pairs, '\0'-separated.
 */
static uint32_t global_series(struct collector *c, const struct store_series *s)
{
	uint32_t g = qmap_get(&c->local, s->id);

	if (g != QMAP_NONE)
		return g;
	buf_reset(&c->key);
	buf_add(&c->key, s->type, strlen(s->type) + 1);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		buf_add(&c->key, s->labels[i].name, strlen(s->labels[i].name) + 1);
		buf_add(&c->key, s->labels[i].value, strlen(s->labels[i].value) + 1);
	}
	g = strtab_intern(&c->series_keys, c->key.p, c->key.len);
	qmap_put(&c->local, s->id, g);
	return g;
}

static uint32_t series_group(struct collector *c, const struct store_series *s)
{
	uint32_t gid = global_series(c, s);
	uint32_t g = qmap_get(&c->series_group, gid);

	if (g != QMAP_NONE)
		return g;
	const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
	for (size_t i = 0; i < c->ss->ngroup_by; i++) {
		/* service_name and service.name are one label (store/matcher.h) */
		const char *want = store_label_canonical(c->ss->group_by[i]);

		for (uint32_t j = 0; j < s->nlabels; j++)
			if (!vals[i] && !strcmp(store_label_canonical(s->labels[j].name), want))
				vals[i] = s->labels[j].value;
	}
	g = query_stackset_group(c->ss, vals);
	qmap_put(&c->series_group, gid, g);
	c->ss->series++;
	return g;
}

/*
 * The group of a row of series @s with attribute set @a (> 0) of @src:
 * group_by names the set has take its values, the others the series'
 * (per-sample attributes such as thread.name give flame chart lanes).
 */
static uint32_t row_group(struct collector *c, const struct store_source *src,
			  const struct store_series *s, uint32_t a, uint32_t series_g)
{
	uint64_t key = (uint64_t)s->id << 32 | a;
	uint32_t g = qmap_get(&c->attr_group, key);

	if (g != QMAP_NONE)
		return g;
	const struct store_attr_set *set = a < src->nattrs ? &src->attrs[a] : NULL;
	const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
	bool own = false;
	for (size_t i = 0; i < c->ss->ngroup_by; i++) {
		for (uint32_t j = 0; j < s->nlabels; j++)
			if (!strcmp(s->labels[j].name, c->ss->group_by[i]))
				vals[i] = s->labels[j].value;
		for (uint32_t j = 0; set && j < set->nlabels; j++)
			if (!strcmp(set->labels[j].name, c->ss->group_by[i])) {
				vals[i] = set->labels[j].value;
				own = true;
			}
	}
	g = own ? query_stackset_group(c->ss, vals) : series_g;
	qmap_put(&c->attr_group, key, g);
	return g;
}

static int snaps_begin(void *arg, const struct store_source *src)
{
	struct collector *c = arg;

	(void)src;
	qmap_release(&c->local);
	return 0;
}

static int scan_snaps(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_row *rows, size_t n)
{
	struct collector *c = arg;
	uint32_t gid = global_series(c, s);

	(void)src;
	for (size_t i = 0; i < n; i++)
		snaps_add(&c->snaps, gid, bucket_of(c->ss, rows[i].ts_ns), rows[i].ts_ns);
	return 0;
}

static int source_begin(void *arg, const struct store_source *src)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;

	qmap_release(&c->local);
	qmap_release(&c->attr_group);
	c->nstacks = src->nstacks;
	c->dense = !ss->ngroup_by && ss->nbuckets == 1 && c->nstacks <= ((size_t)8 << 20);
	if (!c->p->keep_samples)
		c->dense = false; /* the store sums (totals scan), or groups/steps: hash */
	if (c->dense) {
		c->dval = xcalloc(c->nstacks + 1, sizeof(int64_t));
		c->dcnt = xcalloc(c->nstacks + 1, sizeof(uint64_t));
	}
	query_stackset_release(&c->raw);
	query_stackset_init(&c->raw);
	c->raw.nbuckets = ss->nbuckets;
	c->raw.max_entries = ss->max_entries;
	c->totals.n = 0;
	c->samples_from = ss->samples.n;
	return 0;
}

static int scan_series(void *arg, const struct store_source *src, const struct store_series *s)
{
	(void)src;
	series_group(arg, s);
	return 0;
}

static int scan_totals(void *arg, const struct store_source *src, const struct store_stack_total *t,
		       size_t n, uint64_t nrows)
{
	struct collector *c = arg;

	(void)src;
	(void)nrows;
	SS_VEC_RESERVE_SCRATCH(&c->totals, n);
	memcpy(c->totals.v, t, sizeof(*t) * n);
	c->totals.n = n;
	return 0;
}

/*
 * scan_rows for a series of group @g whose rows all count at the root
 * (merge_stacks, cumulative, no per-row group): one entry add per run of
 * consecutive rows in one step bucket instead of one per row (a page of a
 * block is sorted by time, so a run is every row of the series in the
 * bucket: 760 rows per minute on the fleet of bench/bench_query.sh). The
 * sums are the same as the row by row adds: a run is summed only while
 * its values are >= 0 and their sum does not overflow (then saturating
 * adds of it and of its rows one by one agree); a row that breaks that
 * is added on its own. The gauge sum (only read for gauges, which do not
 * come here) gets the run's sum.
 */
static int add_runs(struct collector *c, uint32_t g, const struct store_row *rows, size_t n)
{
	struct query_stackset *ss = c->ss;
	int64_t step = ss->step_ns, lo = 0, hi = -1; /* the run's bucket: [lo, hi] */
	uint32_t b = 0;

	for (size_t i = 0; i < n;) {
		int64_t ts = rows[i].ts_ns, sum = 0;
		size_t j = i;

		if (ts < lo || ts > hi) {
			b = bucket_of(ss, ts);
			if (step > 0) {
				lo = (int64_t)((__int128)ss->from_ns + (__int128)b * step);
				hi = (int64_t)((__int128)lo + step - 1);
			} else {
				lo = INT64_MIN;
				hi = INT64_MAX;
			}
		}
		for (int64_t t;
		     j < n && rows[j].ts_ns >= lo && rows[j].ts_ns <= hi && rows[j].value >= 0 &&
		     !__builtin_add_overflow(sum, rows[j].value, &t);
		     j++)
			sum = t;
		if (j == i) {
			sum = rows[i].value; /* negative, or past the run's overflow: alone */
			j = i + 1;
		}
		if (query_stackset_add(&c->raw, 0, g, b, sum, j - i, (double)sum)) {
			c->over_entries = true;
			return 1;
		}
		i = j;
	}
	return 0;
}

/* The steps form of the same (blocks' pages summed per step; see add_runs). */
static int scan_steps(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_step_sum *v, size_t n)
{
	struct collector *c = arg;
	uint32_t g = series_group(c, s);

	(void)src;
	for (size_t i = 0; i < n; i++) {
		PROF_ASSERT(v[i].step < c->ss->nbuckets);
		if (query_stackset_add(&c->raw, 0, g, v[i].step, v[i].value, v[i].rows,
				       (double)v[i].value)) {
			c->over_entries = true;
			return 1;
		}
	}
	return 0;
}

static int scan_rows(void *arg, const struct store_source *src, const struct store_series *s,
		     const struct store_row *rows, size_t n)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;
	uint32_t g = series_group(c, s);
	uint32_t gid = global_series(c, s);
	bool per_row = ss->ngroup_by && src->nattrs > 1;

	if (c->p->keep_samples) {
		if (ss->samples.n + n > c->max_samples) {
			c->over_samples = true;
			return 1;
		}
		VEC_RESERVE(&ss->samples, n);
		for (size_t i = 0; i < n; i++) {
			uint32_t gr = per_row && rows[i].attrs
					      ? row_group(c, src, s, rows[i].attrs, g)
					      : g;
			struct query_ss_sample sm = { rows[i].ts_ns, rows[i].value, rows[i].stack,
						      gr };

			ss->samples.v[ss->samples.n++] = sm;
		}
	}
	if (c->dense) {
		for (size_t i = 0; i < n; i++) {
			uint32_t st = rows[i].stack;

			PROF_ASSERT(st < c->nstacks);
			c->dval[st] += rows[i].value;
			c->dcnt[st]++;
		}
		return 0;
	}
	if (c->p->merge_stacks && !c->gauge && !per_row && ss->cumulative)
		return add_runs(c, g, rows, n);
	for (size_t i = 0; i < n; i++) {
		uint32_t b = bucket_of(ss, rows[i].ts_ns);
		double w = c->gauge ? snaps_weight(&c->snaps, gid, b) : 1.0;

		PROF_ASSERT(rows[i].stack < c->nstacks);
		uint32_t gr = per_row && rows[i].attrs ? row_group(c, src, s, rows[i].attrs, g) : g;
		if (query_stackset_add(&c->raw, c->p->merge_stacks ? 0 : rows[i].stack, gr, b,
				       rows[i].value, 1, (double)rows[i].value * w)) {
			c->over_entries = true;
			return 1;
		}
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct query_ss_sample *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/*
 * Store stack id -> trie node << 1 | stack-filter match. Dense (an array
 * over the source's stack ids, value + 1, 0 = absent) when the source's
 * tree is small enough that the array costs less than hashing the nodes
 * a query touches (a flame graph of an hour touches millions); else a
 * hash map.
 */
#define SMAP_DENSE_MAX ((size_t)32 << 20)

struct smap {
	uint32_t *dense; /* [nstacks] or NULL */
	struct qmap sparse;
};

static uint32_t smap_get(const struct smap *m, uint32_t s)
{
	if (m->dense)
		return m->dense[s] ? m->dense[s] - 1 : QMAP_NONE;
	return qmap_get(&m->sparse, s);
}

static void smap_put(struct smap *m, uint32_t s, uint32_t v)
{
	if (m->dense)
		m->dense[s] = v + 1;
	else
		qmap_put(&m->sparse, s, v);
}

static void smap_release(struct smap *m)
{
	free(m->dense);
	qmap_release(&m->sparse);
	memset(m, 0, sizeof(*m));
}

/*
 * Translate the touched store stacks (@touched, @n distinct ids) and their
 * ancestors into trie nodes, parents first: @map receives store id ->
 * trie node << 1 | match.
 */
static void translate_stacks(struct xlator *x, const struct store_stack_node *stacks,
			     size_t nstacks, uint32_t *touched, size_t n, struct smap *map)
{
	VEC(uint32_t) ids = { 0 };

	memset(map, 0, sizeof(*map));
	if (nstacks <= SMAP_DENSE_MAX && n * 8 >= nstacks / 64) {
		/* Dense: mark the touched nodes and their ancestors, then walk ids in order. */
		uint8_t *mark = xcalloc(nstacks + 1, 1);
		size_t nmarked = 0;

		map->dense = xcalloc(nstacks + 1, sizeof(uint32_t));
		for (size_t i = 0; i < n; i++) {
			for (uint32_t s = touched[i]; s != 0 && !mark[s]; s = stacks[s].parent) {
				PROF_ASSERT(s < nstacks);
				mark[s] = 1;
				nmarked++;
			}
		}
		qmap_reserve(&x->ss->child_idx, x->ss->nodes.n + nmarked);
		VEC_RESERVE(&x->ss->nodes, nmarked);
		smap_put(map, 0, 0); /* the empty stack: root, no match */
		for (size_t s = 1; s < nstacks; s++) {
			if (!mark[s])
				continue;
			uint32_t p = stacks[s].parent, pv = map->dense[p] - 1;

			PROF_ASSERT(p < s && map->dense[p]);
			bool match = pv & 1;
			uint32_t node = ss_xlator_apply(x, pv >> 1, stacks[s].loc, &match);
			PROF_ASSERT(node < (QMAP_NONE >> 1));
			map->dense[s] = (node << 1 | (uint32_t)match) + 1;
		}
		free(mark);
		return;
	}
	struct qmap seen = { 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t s = touched[i];

		while (s != 0 && qmap_get(&seen, s) == QMAP_NONE) {
			PROF_ASSERT(s < nstacks);
			qmap_put(&seen, s, 0);
			VEC_PUSH(&ids, s);
			s = stacks[s].parent;
		}
	}
	qmap_release(&seen);
	if (ids.n > 1)
		qsort(ids.v, ids.n, sizeof(uint32_t), cmp_u32);
	qmap_reserve(&x->ss->child_idx, x->ss->nodes.n + ids.n);
	smap_put(map, 0, 0);
	for (size_t i = 0; i < ids.n; i++) {
		uint32_t s = ids.v[i], p = stacks[s].parent;
		uint32_t pv = smap_get(map, p);

		PROF_ASSERT(p < s && pv != QMAP_NONE);
		bool match = pv & 1;
		uint32_t node = ss_xlator_apply(x, pv >> 1, stacks[s].loc, &match);
		PROF_ASSERT(node < (QMAP_NONE >> 1));
		smap_put(map, s, node << 1 | (uint32_t)match);
	}
	VEC_FREE(&ids);
}

/* Kept samples from @from on: source stack -> trie node, dropping the stack-filtered ones. */
static void remap_samples(struct query_stackset *ss, size_t from, const struct smap *map,
			  bool filtering)
{
	size_t k = from;

	for (size_t i = from; i < ss->samples.n; i++) {
		struct query_ss_sample sm = ss->samples.v[i];
		uint32_t v = smap_get(map, sm.node);

		PROF_ASSERT(v != QMAP_NONE);
		if (filtering && !(v & 1))
			continue;
		sm.node = v >> 1;
		ss->samples.v[k++] = sm;
	}
	ss->samples.n = k;
}

/* Add one aggregate of source stack @s (translated through @map) to the set. */
static int add_one(struct collector *c, const struct smap *map, uint32_t s, uint32_t group,
		   uint32_t bucket, int64_t value, uint64_t count, double gauge)
{
	uint32_t v = smap_get(map, s);

	if (c->filtering && !(v & 1)) {
		c->ss->filtered_rows += count;
		c->ss->filtered_value = prof_add_sat(c->ss->filtered_value, value);
		return 0;
	}
	return query_stackset_add(c->ss, v >> 1, group, bucket, value, count, gauge);
}

/*
 * The source-location variants of this source's frames of names at
 * XC_MULTI into c->qvar: of the touched stacks and their ancestors, per
 * name the variant ss_srcloc_cmp puts first (ss_srcloc_note's rule, as the
 * uncached path notes them, so both give the same record whatever the
 * order of the sources and stacks). Called with ss_xc.mu held.
 */
static void xc_note_variants(struct collector *c, struct xc_src *e, const struct store_source *src)
{
	ss_xc_variant_stacks(e, src);
	if (c->nqvar < ss_xc.trie.names.n) {
		size_t want = ss_xc.trie.names.n + ss_xc.trie.names.n / 4 + 1;
		uint32_t *q = query_scratch_take(want, sizeof(uint32_t), true);

		if (c->nqvar)
			memcpy(q, c->qvar, c->nqvar * sizeof(uint32_t));
		query_scratch_give(c->qvar);
		c->qvar = q;
		c->nqvar = want;
	}
	if (!e->vnames.n)
		return;
	uint8_t *mark = query_scratch_take(e->n + 1, 1, true);

	/*
	 * The touched stacks and their ancestors: few, by walking up from
	 * each; many, by one sweep down the ids (parent < id), which reads
	 * the stacks in order instead of at random.
	 */
	if (c->totals.n < e->n / 16) {
		for (size_t i = 0; i < c->totals.n; i++)
			for (uint32_t s = c->totals.v[i].stack; s && !mark[s];
			     s = src->stacks[s].parent)
				mark[s] = 1;
	} else {
		for (size_t i = 0; i < c->totals.n; i++)
			mark[c->totals.v[i].stack] = 1;
		for (size_t s = e->n; s-- > 1;)
			if (mark[s])
				mark[src->stacks[s].parent] = 1;
	}
	for (size_t k = 0; k < e->vstk.n; k++) {
		uint32_t s = e->vstk.v[k];

		if (!mark[s])
			continue;
		const uint32_t *fr = &ss_xc.lwords.v[e->locrec[src->stacks[s].loc] - 1];
		for (uint32_t f = 0; f < fr[0]; f++) {
			uint32_t nm = fr[1 + 2 * f], v = fr[2 + 2 * f], cur;

			if (!v || !ss_xc_is_multi(nm))
				continue;
			cur = c->qvar[nm];
			if (!cur || (cur != v && ss_srcloc_cmp(&ss_xc.var.v[v], &ss_xc.var.v[cur],
							       &ss_xc.trie.names) < 0))
				c->qvar[nm] = v;
		}
	}
	query_scratch_give(mark);
}

/* How many totals ahead source_end_cached prefetches (two stages). */
#define XC_SUM_AHEAD 16

/* The end of a source, cached path: sum its per-stack totals per trie node. */
static int source_end_cached(struct collector *c, const struct store_source *src)
{
	pthread_mutex_lock(&ss_xc.mu);
	struct xc_src *e = ss_xc_source(src, c->p->sym);
	if (!e || (c->epoch_set && ss_xc.epoch != c->epoch)) {
		pthread_mutex_unlock(&ss_xc.mu);
		c->xc_lost = true;
		return 1;
	}
	c->epoch = ss_xc.epoch;
	c->epoch_set = true;
	if (c->var_set && c->var_gen != ss_xc.var_gen) {
		/* A name got a second variant: the sources summed before did not note it. */
		pthread_mutex_unlock(&ss_xc.mu);
		c->xc_lost = c->var_moved = true;
		return 1;
	}
	c->var_gen = ss_xc.var_gen;
	c->var_set = true;
	if (ss_xc.nmulti)
		xc_note_variants(c, e, src);
	if (!c->qslot && ss_xc.qslot_spare) {
		c->qslot = ss_xc.qslot_spare; /* all zero */
		c->nqslot = ss_xc.nqslot_spare;
		ss_xc.qslot_spare = NULL;
		ss_xc.nqslot_spare = 0;
	}
	if (c->nqslot < ss_xc.trie.nodes.n) {
		size_t want = ss_xc.trie.nodes.n + ss_xc.trie.nodes.n / 4 + 1;

		c->qslot = xreallocarray(c->qslot, want, sizeof(uint32_t));
		memset(c->qslot + c->nqslot, 0, (want - c->nqslot) * sizeof(uint32_t));
		c->nqslot = want;
	}
	SS_VEC_RESERVE_SCRATCH(&c->qacc, c->totals.n); /* at most one new sum per total */
	/*
	 * The totals come in the store's order, their stacks and trie nodes
	 * at random over arrays of MBs: the map entry of the total
	 * 2 * XC_SUM_AHEAD on and the slot of the one XC_SUM_AHEAD on are
	 * prefetched (the slot's address needs the map entry).
	 */
	for (size_t i = 0; i < c->totals.n; i++) {
		if (i + 2 * XC_SUM_AHEAD < c->totals.n)
			__builtin_prefetch(&e->node[c->totals.v[i + 2 * XC_SUM_AHEAD].stack]);
		if (i + XC_SUM_AHEAD < c->totals.n) {
			uint32_t ahead = c->totals.v[i + XC_SUM_AHEAD].stack;

			if (ahead < e->n)
				__builtin_prefetch(&c->qslot[e->node[ahead]], 1);
		}
		const struct store_stack_total *t = &c->totals.v[i];

		PROF_ASSERT(t->stack < e->n);
		uint32_t node = e->node[t->stack];
		uint32_t k = c->qslot[node];
		if (!k) {
			struct qacc a = { node, { 0, 0 }, { 0, 0 } };

			VEC_PUSH(&c->qacc, a);
			k = c->qslot[node] = (uint32_t)c->qacc.n;
		}
		k--;
		c->qacc.v[k].value[c->side] = prof_add_sat(c->qacc.v[k].value[c->side], t->total);
		c->qacc.v[k].count[c->side] += t->rows;
	}
	pthread_mutex_unlock(&ss_xc.mu);
	c->totals.n = 0;
	query_stackset_release(&c->raw);
	return 0;
}

/* The end of a source: translate its stacks to names and move its aggregates into the set. */
static int source_end(void *arg, const struct store_source *src)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;
	VEC(uint32_t) touched = { 0 };
	struct smap map = { 0 };
	struct xlator x;
	int rc = 0;

	if (c->cached)
		return source_end_cached(c, src);
	if (c->dense) {
		for (size_t s = 0; s < c->nstacks; s++)
			if (c->dcnt[s])
				VEC_PUSH(&touched, (uint32_t)s);
	} else if (c->totals.n) {
		for (size_t i = 0; i < c->totals.n; i++)
			VEC_PUSH(&touched, c->totals.v[i].stack);
	} else {
		struct qmap seen = { 0 };

		for (size_t i = 0; i < c->raw.entries.n; i++) {
			uint32_t s = c->raw.entries.v[i].node;

			if (qmap_get(&seen, s) == QMAP_NONE) {
				qmap_put(&seen, s, 0);
				VEC_PUSH(&touched, s);
			}
		}
		qmap_release(&seen);
	}
	ss_xlator_init(&x, ss, src->dict, c->p);
	translate_stacks(&x, src->stacks, src->nstacks, touched.v, touched.n, &map);
	ss_xlator_release(&x);

	for (size_t i = 0; i < touched.n && c->dense && !rc; i++) {
		uint32_t s = touched.v[i];

		rc = add_one(c, &map, s, 0, 0, c->dval[s], c->dcnt[s], (double)c->dval[s]);
	}
	for (size_t i = 0; i < c->totals.n && !c->dense && !rc; i++) {
		const struct store_stack_total *t = &c->totals.v[i];

		rc = add_one(c, &map, t->stack, 0, 0, t->total, t->rows, (double)t->total);
	}
	for (size_t i = 0; i < c->raw.entries.n && !c->dense && !rc; i++) {
		const struct query_ss_entry *e = &c->raw.entries.v[i];

		rc = add_one(c, &map, e->node, e->group, e->bucket, e->value, e->count, e->gauge);
	}
	if (!rc && c->p->keep_samples)
		remap_samples(ss, c->samples_from, &map, c->filtering);
	free(c->dval);
	free(c->dcnt);
	c->dval = NULL;
	c->dcnt = NULL;
	query_stackset_release(&c->raw);
	smap_release(&map);
	VEC_FREE(&touched);
	if (rc)
		c->rc = rc;
	return rc;
}

/*
 * Can this query use the translation cache? (per-stack totals, names not
 * frame-filtered; not a gauge, whose rows are weighted per series)
 */
static bool cacheable(const struct query_stackset_params *p)
{
	const struct query_filter *f = p->filter;

	return !p->ngroup_by && !p->step_ns && !p->keep_samples && !p->line_fn &&
	       !(f && (f->frame_re || f->hide)) && query_type_is_cumulative(p->type);
}

/*
 * A gauge set's values become its means: each entry's value the rounded
 * sum over its series of value / snapshots (@gauge), so the flame graph,
 * table, sandwich, diff and exports show the average snapshot over the
 * range (per step for the series view, which reads @gauge), not the sum
 * of every snapshot in it. Kept samples (the flame chart) stay as taken.
 */
static void gauge_means(struct query_stackset *ss)
{
	if (ss->cumulative)
		return;
	ss->total = 0;
	for (size_t i = 0; i < ss->entries.n; i++) {
		struct query_ss_entry *e = &ss->entries.v[i];

		e->value = (int64_t)llround(e->gauge);
		ss->total = prof_add_sat(ss->total, e->value);
	}
}

/*
 * One scan of @p into @c->ss (set up by the caller), as side @side. In the
 * cached path the totals go to @c->qacc (moved into the set by
 * ss_xc_extract); c->xc_lost says the cache could not serve it.
 */
static int collect_scan(struct store *st, const struct query_stackset_params *p,
			struct collector *c, uint32_t side, struct prof_err *err)
{
	struct query_stackset *ss = c->ss;
	struct store_query q = { p->type, p->m, p->nm, p->from_ns, p->to_ns };
	struct store_link_filter lf = { p->trace_id, p->span_id };
	struct store_visitor v = { .arg = c };
	int rc = 0;

	c->p = p;
	c->side = side;
	c->filtering = !c->cached && query_filter_has_stack(p->filter);
	c->max_samples = p->max_samples ? p->max_samples : QUERY_SS_MAX_SAMPLES;
	/* Gauges weigh each row by 1/snapshots of its series (per step, or the whole range). */
	c->gauge = !ss->cumulative && !p->keep_samples;

	if (c->gauge) {
		v.source_begin = snaps_begin;
		v.rows = scan_snaps;
		rc = store_scan_ex(st, &q, &lf, &v, NULL, err);
		snaps_finish(&c->snaps);
	}
	/* No group_by, no step, no samples: the store sums per stack (fast path). */
	bool totals = !ss->ngroup_by && !p->step_ns && !p->keep_samples && !c->gauge;
	v.source_begin = source_begin;
	v.series = scan_series;
	v.rows = totals ? NULL : scan_rows;
	v.totals = totals ? scan_totals : NULL;
	v.source_end = source_end;
	/* scan_rows reads no stack then (add_runs; the row path counts at 0) */
	v.rows_no_stacks = !totals && p->merge_stacks && !p->keep_samples && !c->gauge;
	/* and blocks may sum a page per step (pages with per-row attribute
	 * sets, which may name groups, still come as rows) */
	if (v.rows_no_stacks && ss->cumulative && ss->step_ns > 0) {
		v.steps = scan_steps;
		v.step_from_ns = ss->from_ns;
		v.step_ns = ss->step_ns;
	}
	if (!rc)
		rc = store_scan_ex(st, &q, &lf, &v, NULL, err);
	if (c->rc)
		rc = c->rc;
	if (c->xc_lost)
		rc = 0;
	return rc;
}

static void collector_release(struct collector *c)
{
	free(c->dval);
	free(c->dcnt);
	query_stackset_release(&c->raw);
	query_scratch_give(c->totals.v);
	memset(&c->totals, 0, sizeof(c->totals));
	qmap_release(&c->local);
	qmap_release(&c->attr_group);
	qmap_release(&c->series_group);
	qmap_release(&c->snaps.count);
	VEC_FREE(&c->snaps.v);
	strtab_release(&c->series_keys);
	buf_release(&c->key);
	if (c->qslot) {
		/* Zero again where used, and keep it as the spare if it is the larger. */
		for (size_t i = 0; i < c->qacc.n; i++)
			c->qslot[c->qacc.v[i].node] = 0;
		pthread_mutex_lock(&ss_xc.mu);
		if (c->nqslot > ss_xc.nqslot_spare) {
			uint32_t *old = ss_xc.qslot_spare;

			ss_xc.qslot_spare = c->qslot;
			ss_xc.nqslot_spare = c->nqslot;
			c->qslot = old;
		}
		pthread_mutex_unlock(&ss_xc.mu);
		free(c->qslot);
		c->qslot = NULL;
	}
	query_scratch_give(c->qacc.v);
	memset(&c->qacc, 0, sizeof(c->qacc));
	query_scratch_give(c->qvar);
	c->qvar = NULL;
	c->nqvar = 0;
}

/*
 * Collect @p (and, with @pb, side B into bucket 1) into @ss. @use_cache:
 * try the translation cache; *@lost is set when it could not serve the
 * query (nothing usable is in @ss then), *@moved too when that was a
 * name getting a second source-location variant (another try is likely
 * to be served: the sources are translated now).
 */
static int collect(struct store *st, const struct query_stackset_params *p,
		   const struct query_stackset_params *pb, struct query_stackset *ss,
		   bool use_cache, bool *lost, bool *moved, struct prof_err *err)
{
	struct collector c = { 0 };
	int rc;

	*lost = false;
	*moved = false;
	rc = setup(ss, p->type, p, err);
	if (rc)
		return rc;
	if (pb)
		ss->nbuckets = 2;
	c.ss = ss;
	c.cached = use_cache;
	buf_init(&c.key, 0);
	strtab_init(&c.series_keys);
	query_stackset_init(&c.raw);

	rc = collect_scan(st, p, &c, 0, err);
	if (!rc && pb && !c.xc_lost)
		rc = collect_scan(st, pb, &c, 1, err);
	if (!rc && c.cached && !c.xc_lost) {
		pthread_mutex_lock(&ss_xc.mu);
		if (c.epoch_set && ss_xc.epoch != c.epoch)
			c.xc_lost = true;
		else if (c.var_set && ss_xc.var_gen != c.var_gen)
			c.xc_lost = c.var_moved = true;
		else if (c.qacc.n)
			rc = ss_xc_extract(c.qacc.v, c.qacc.n, pb != NULL, p->filter, c.qvar,
					   c.nqvar, ss);
		pthread_mutex_unlock(&ss_xc.mu);
	}
	if (c.xc_lost)
		*lost = true;
	*moved = c.var_moved;
	if (!rc && p->keep_samples && ss->samples.n > 1)
		qsort(ss->samples.v, ss->samples.n, sizeof(*ss->samples.v), cmp_sample);
	if (c.over_samples)
		rc = too_many_samples(c.max_samples, err);
	else if (c.over_entries || rc == -PROF_ETOOBIG)
		rc = too_many_entries(ss, err);
	if (!rc && c.gauge)
		gauge_means(ss);
	collector_release(&c);
	return rc;
}

int query_stackset_collect(struct store *st, const struct query_stackset_params *p,
			   struct query_stackset *ss, struct prof_err *err)
{
	bool lost, moved;
	int rc = collect(st, p, NULL, ss, cacheable(p), &lost, &moved, err);

	if (!rc && lost && moved) { /* once more through the cache, now filled */
		query_stackset_release(ss);
		rc = collect(st, p, NULL, ss, true, &lost, &moved, err);
	}
	if (!rc && lost) {
		query_stackset_release(ss);
		rc = collect(st, p, NULL, ss, false, &lost, &moved, err);
	}
	return rc;
}

/* Add the nodes and entries of @b to @ss as bucket 1 (the uncached pair). */
static int merge_side_b(struct query_stackset *ss, const struct query_stackset *b)
{
	uint32_t *map = xcalloc(b->nodes.n + 1, sizeof(uint32_t));
	uint32_t *memo = xcalloc(b->names.n + 1, sizeof(uint32_t));
	int rc = 0;

	for (size_t i = 1; i < b->nodes.n; i++)
		map[i] = query_stackset_child(ss, map[b->nodes.v[i].parent],
					      ss_copy_name(ss, b, memo, b->nodes.v[i].name));
	for (size_t i = 0; i < b->entries.n && !rc; i++) {
		const struct query_ss_entry *e = &b->entries.v[i];

		rc = query_stackset_add(ss, map[e->node], 0, 1, e->value, e->count, e->gauge);
	}
	ss->filtered_rows += b->filtered_rows;
	ss->filtered_value = prof_add_sat(ss->filtered_value, b->filtered_value);
	ss->series += b->series;
	free(map);
	free(memo);
	return rc;
}

int query_stackset_collect_pair(struct store *st, const struct query_stackset_params *a,
				const struct query_stackset_params *b, struct query_stackset *ss,
				struct prof_err *err)
{
	struct query_stackset sb;
	bool lost = false, moved = false;
	int rc;

	if (cacheable(a) && cacheable(b)) {
		rc = collect(st, a, b, ss, true, &lost, &moved, err);
		if (!rc && lost && moved) {
			query_stackset_release(ss);
			rc = collect(st, a, b, ss, true, &lost, &moved, err);
		}
		if (rc || !lost)
			return rc;
		query_stackset_release(ss);
	}
	rc = query_stackset_collect(st, a, ss, err);
	if (rc)
		return rc;
	rc = query_stackset_collect(st, b, &sb, err);
	if (!rc) {
		uint64_t unsym = ss->unsymbolized;

		ss->nbuckets = 2;
		rc = merge_side_b(ss, &sb);
		ss->unsymbolized = unsym + sb.unsymbolized;
		if (rc == -PROF_ETOOBIG)
			rc = too_many_entries(ss, err);
	}
	query_stackset_release(&sb);
	return rc;
}

/* --- from a model profile ------------------------------------------------------------- */

int query_stackset_from_profile(const struct model_profile *prof, uint32_t sample_type,
				const struct query_stackset_params *p, struct query_stackset *ss,
				struct prof_err *err)
{
	struct query_stackset_params q = *p;
	struct xlator x;
	struct qmap memo = { 0 }; /* stack_off << 32 | nstack -> node << 1 | match */
	struct snaps snaps = { 0 };
	char type[512];
	bool filtering = query_filter_has_stack(p->filter), over_samples = false;
	int rc;

	if (sample_type >= prof->sample_types.n) {
		query_stackset_init(ss);
		return prof_err_set(err, -EINVAL, -1,
				    "sample type %u out of range (the profile has %zu)",
				    sample_type, prof->sample_types.n);
	}
	model_profile_type_id(prof, sample_type, type, sizeof(type));
	bool all_time = !q.from_ns && !q.to_ns;
	if (all_time) {
		int64_t lo = INT64_MAX, hi = INT64_MIN;

		for (size_t i = 0; i < prof->samples.n; i++) {
			int64_t ts = prof->samples.v[i].timestamp_ns
					     ? prof->samples.v[i].timestamp_ns
					     : prof->time_ns;
			lo = PROF_MIN(lo, ts);
			hi = PROF_MAX(hi, ts);
		}
		q.from_ns = prof->samples.n ? lo : 0;
		q.to_ns = prof->samples.n ? hi : 0;
	}
	rc = setup(ss, type, &q, err);
	if (rc)
		return rc;
	bool gauge = !ss->cumulative && !p->keep_samples;
	size_t max_samples = p->max_samples ? p->max_samples : QUERY_SS_MAX_SAMPLES;

	if (gauge) {
		for (size_t i = 0; i < prof->samples.n; i++) {
			const struct model_sample *s = &prof->samples.v[i];
			int64_t ts = s->timestamp_ns ? s->timestamp_ns : prof->time_ns;

			if (ts >= q.from_ns && ts <= q.to_ns)
				snaps_add(&snaps, 0, bucket_of(ss, ts), ts);
		}
		snaps_finish(&snaps);
	}
	ss_xlator_init(&x, ss, prof, p);
	ss->series = prof->samples.n ? 1 : 0;
	for (size_t i = 0; i < prof->samples.n && !rc; i++) {
		const struct model_sample *s = &prof->samples.v[i];
		int64_t v = prof->values.v[s->value_off + sample_type];
		int64_t ts = s->timestamp_ns ? s->timestamp_ns : prof->time_ns;

		if (v == 0 || ts < q.from_ns || ts > q.to_ns)
			continue;
		uint64_t key = (uint64_t)s->stack_off << 32 | s->nstack;
		uint32_t nv = s->nstack ? qmap_get(&memo, key) : 0;
		if (nv == QMAP_NONE) {
			uint32_t at = 0;
			bool match = false;

			for (uint32_t j = s->nstack; j-- > 0;)
				at = ss_xlator_apply(&x, at, prof->stack_locs.v[s->stack_off + j],
						     &match);
			PROF_ASSERT(at < (QMAP_NONE >> 1));
			nv = at << 1 | (uint32_t)match;
			qmap_put(&memo, key, nv);
		}
		if (filtering && !(nv & 1)) {
			ss->filtered_rows++;
			ss->filtered_value = prof_add_sat(ss->filtered_value, v);
			continue;
		}
		uint32_t g = 0;
		if (ss->ngroup_by) {
			const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
			char nums[QUERY_SS_MAX_GROUP_BY][24];

			for (size_t k = 0; k < ss->ngroup_by; k++) {
				for (uint32_t j = 0; j < s->nlabels; j++) {
					const struct model_label *l =
						&prof->labels.v[s->label_off + j];

					if (strcmp(model_str(prof, l->key), ss->group_by[k]))
						continue;
					if (l->str) {
						vals[k] = model_str(prof, l->str);
					} else {
						snprintf(nums[k], sizeof(nums[k]), "%" PRId64,
							 l->num);
						vals[k] = nums[k];
					}
					break;
				}
			}
			g = query_stackset_group(ss, vals);
		}
		uint32_t b = bucket_of(ss, ts);
		double w = gauge ? snaps_weight(&snaps, 0, b) : 1.0;
		rc = query_stackset_add(ss, nv >> 1, g, b, v, 1, (double)v * w);
		if (!rc && p->keep_samples) {
			if (ss->samples.n >= max_samples) {
				over_samples = true;
				rc = too_many_samples(max_samples, err);
				break;
			}
			struct query_ss_sample sm = { ts, v, nv >> 1, g };
			VEC_PUSH(&ss->samples, sm);
		}
	}
	if (rc == -PROF_ETOOBIG && !over_samples)
		rc = too_many_entries(ss, err);
	if (!rc && gauge)
		gauge_means(ss);
	if (!rc && ss->samples.n > 1)
		qsort(ss->samples.v, ss->samples.n, sizeof(*ss->samples.v), cmp_sample);
	ss_xlator_release(&x);
	qmap_release(&memo);
	qmap_release(&snaps.count);
	VEC_FREE(&snaps.v);
	return rc;
}
