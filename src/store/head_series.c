// SPDX-License-Identifier: Apache-2.0
/*
 * head_series.c - series (found or made per profile type and label set),
 * per-sample attribute sets, and adding profiles (one or a batch) with
 * their scratch.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/stackkey.h"
#include "store/head.h"
#include "store/head_int.h"

#include <pthread.h>

/* --- series -------------------------------------------------------------- */

struct attr_ref {
	const char *key, *val;
	size_t pos;
	char num[24];
};

static int attr_cmp(const void *a, const void *b)
{
	const struct attr_ref *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

/* The label set of @p (sorted by name, first value of a key wins). */
static size_t profile_labels(const struct model_profile *p, struct attr_ref **out)
{
	struct attr_ref *a = xcalloc(p->attrs.n + 1, sizeof(*a));
	size_t n = 0, k = 0;

	for (size_t i = 0; i < p->attrs.n; i++) {
		const struct model_label *l = &p->attrs.v[i];
		struct attr_ref *r = &a[n];

		r->key = model_str(p, l->key);
		if (!*r->key)
			continue;
		if (l->str) {
			r->val = model_str(p, l->str);
		} else {
			snprintf(r->num, sizeof(r->num), "%" PRId64, l->num);
			r->val = NULL; /* fixed up below: r->num moves with qsort */
		}
		r->pos = i;
		n++;
	}
	qsort(a, n, sizeof(*a), attr_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(a[k - 1].key, a[i].key))
			continue;
		a[k++] = a[i];
	}
	*out = a;
	return k;
}

static const char *attr_val(const struct attr_ref *r)
{
	return r->val ? r->val : r->num;
}

static struct series *series_get(struct store_head *h, const char *type,
				 const struct attr_ref *labels, size_t nlabels)
{
	struct blob key = { .n = 0 };
	uint32_t id;
	bool is_new;

	blob_add(&key, type, strlen(type) + 1);
	for (size_t i = 0; i < nlabels; i++) {
		blob_add(&key, labels[i].key, strlen(labels[i].key) + 1);
		blob_add(&key, attr_val(&labels[i]), strlen(attr_val(&labels[i])) + 1);
	}
	id = blob_intern(h, &h->series_keys, &key, &is_new);
	if (!is_new)
		return h->series.v[id - 1];

	struct series *s = xcalloc(1, sizeof(*s));
	PROF_ASSERT(id - 1 == h->series.n);
	s->pub.id = id - 1;
	s->pub.type = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, type, strlen(type)));
	for (size_t i = 0; i < nlabels; i++) {
		struct store_label l;
		const char *v = attr_val(&labels[i]);

		l.name = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, labels[i].key,
							     strlen(labels[i].key)));
		l.value = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, v, strlen(v)));
		VEC_PUSH(&s->labels, l);
	}
	h->series_bytes +=
		sizeof(*s) + sizeof(struct series *) + s->labels.cap * sizeof(struct store_label);
	s->pub.labels = s->labels.v;
	s->pub.nlabels = (uint32_t)s->labels.n;
	s->pub.min_ts_ns = INT64_MAX;
	s->pub.max_ts_ns = INT64_MIN;
	VEC_PUSH(&h->series, s);
	return s;
}

struct series *head_series_labels(struct store_head *h, const char *type,
				  const struct store_label *labels, size_t nlabels)
{
	struct attr_ref *a = xcalloc(nlabels + 1, sizeof(*a));
	struct series *s;

	for (size_t i = 0; i < nlabels; i++) {
		a[i].key = labels[i].name;
		a[i].val = labels[i].value;
		a[i].pos = i;
	}
	s = series_get(h, type, a, nlabels);
	free(a);
	return s;
}

void head_series_push(struct store_head *h, struct series *se, const struct store_row *r)
{
	size_t cap = se->rows.cap;
	int64_t ts = r->ts_ns;

	VEC_PUSH(&se->rows, *r);
	h->row_bytes += (se->rows.cap - cap) * sizeof(*r);
	if ((se->rows.n - 1) % SPAN_ROWS == 0) {
		struct span sp = { ts, ts };

		cap = se->spans.cap;
		VEC_PUSH(&se->spans, sp);
		h->row_bytes += (se->spans.cap - cap) * sizeof(sp);
	} else {
		struct span *sp = &se->spans.v[se->spans.n - 1];

		sp->min_ts = PROF_MIN(sp->min_ts, ts);
		sp->max_ts = PROF_MAX(sp->max_ts, ts);
	}
	se->pub.nrows = se->rows.n;
	se->pub.min_ts_ns = PROF_MIN(se->pub.min_ts_ns, ts);
	se->pub.max_ts_ns = PROF_MAX(se->pub.max_ts_ns, ts);
	h->min_ts = PROF_MIN(h->min_ts, ts);
	h->max_ts = PROF_MAX(h->max_ts, ts);
	h->rows++;
}

/* --- attribute sets ------------------------------------------------------ */

/*
 * Id of the set (@labels[@n], sorted by name, names distinct; @link or
 * NULL), hash-consed on a key blob: the count, length-prefixed names and
 * values, then 0xff and the link; the empty set is never interned (it is
 * set 0, and no blob equals "", strtab id 0).
 * Write lock held.
 */
static uint32_t set_intern(struct store_head *h, const struct store_label *labels, uint32_t n,
			   const struct model_link *link)
{
	struct blob key = { .n = 0 };
	uint32_t id;
	bool is_new;

	if (!n && !link)
		return 0;
	blob_u32(&key, n);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t ln = (uint32_t)strlen(labels[i].name),
			 lv = (uint32_t)strlen(labels[i].value);

		blob_u32(&key, ln);
		blob_add(&key, labels[i].name, ln);
		blob_u32(&key, lv);
		blob_add(&key, labels[i].value, lv);
	}
	if (link) {
		blob_add(&key, "\xff", 1);
		blob_add(&key, link->trace_id, 16);
		blob_add(&key, link->span_id, 8);
	}
	id = blob_intern(h, &h->set_keys, &key, &is_new);
	if (!is_new)
		return id;
	PROF_ASSERT(id == h->sets.n);
	struct store_attr_set st = { 0 };
	struct store_label *ls = xcalloc(n + 1, sizeof(*ls));
	for (uint32_t i = 0; i < n; i++) {
		ls[i].name = strtab_get(&h->label_strs, h_intern(h, &h->label_strs, labels[i].name,
								 strlen(labels[i].name)));
		ls[i].value =
			strtab_get(&h->label_strs, h_intern(h, &h->label_strs, labels[i].value,
							    strlen(labels[i].value)));
		h_intern(h, &h->attr_keys, labels[i].name, strlen(labels[i].name));
	}
	st.labels = ls;
	st.nlabels = n;
	if (link) {
		st.has_link = true;
		memcpy(st.trace_id, link->trace_id, 16);
		memcpy(st.span_id, link->span_id, 8);
	}
	VEC_PUSH(&h->sets, st);
	h->set_bytes += sizeof(st) + (n + 1) * sizeof(*ls) + 16;
	return id;
}

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct store_label *)a)->name, ((const struct store_label *)b)->name);
}

/*
 * The attribute set of sample @s of @p (write lock held). @num is scratch
 * for the decimal form of numeric values (24 bytes per label).
 */
static uint32_t sample_set(struct store_head *h, const struct model_profile *p,
			   const struct model_sample *s, struct store_label *tmp, char (*num)[24])
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < s->nlabels; k++) {
		const struct model_label *l = &p->labels.v[s->label_off + k];
		const char *key = model_str(p, l->key);
		bool dup = false;

		if (!*key)
			continue;
		for (uint32_t j = 0; j < n && !dup; j++)
			dup = !strcmp(tmp[j].name, key); /* the first value of a key wins */
		if (dup)
			continue;
		tmp[n].name = key;
		if (l->str) {
			tmp[n].value = model_str(p, l->str);
		} else {
			snprintf(num[n], sizeof(num[n]), "%" PRId64, l->num);
			tmp[n].value = num[n];
		}
		n++;
	}
	if (n > 1)
		qsort(tmp, n, sizeof(*tmp), label_cmp);
	return set_intern(h, tmp, n, s->link ? &p->links.v[s->link] : NULL);
}

/*
 * Per-profile memo of attribute sets: samples of one profile whose label
 * ranges hold the same (key, string, number) triples and the same link
 * get the same set, so only the first of them is rendered, sorted and
 * interned (agents repeat a thread's attributes on all its samples).
 * Open addressing on a hash of the triples and the link; an entry names
 * the sample it came from, whose labels are compared on a hash match.
 */
struct set_memo_slot {
	uint64_t hash;
	uint32_t sample1; /* sample index + 1, 0 = empty */
	uint32_t set;
};

struct set_memo {
	struct set_memo_slot *v;
	uint32_t nslots; /* power of two, >= 2 * samples */
};

static uint64_t sample_labels_hash(const struct model_profile *p, const struct model_sample *s)
{
	uint64_t z = (uint64_t)s->nlabels * 0x9e3779b97f4a7c15ULL ^ s->link;

	for (uint32_t k = 0; k < s->nlabels; k++) {
		const struct model_label *l = &p->labels.v[s->label_off + k];

		z ^= ((uint64_t)l->key << 32 | l->str) + 0x632be59bd9b4e019ULL;
		z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
		z ^= (uint64_t)l->num * 0xff51afd7ed558ccdULL;
		z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
	}
	return z ^ (z >> 32);
}

/* Same labels (key, string, number; the unit does not reach a set) and link. */
static bool sample_labels_equal(const struct model_profile *p, const struct model_sample *a,
				const struct model_sample *b)
{
	if (a->nlabels != b->nlabels || a->link != b->link)
		return false;
	for (uint32_t k = 0; k < a->nlabels; k++) {
		const struct model_label *x = &p->labels.v[a->label_off + k],
					 *y = &p->labels.v[b->label_off + k];

		if (x->key != y->key || x->str != y->str || x->num != y->num)
			return false;
	}
	return true;
}

/* sample_set through the memo @m (write lock held). */
static uint32_t sample_set_memo(struct store_head *h, const struct model_profile *p, size_t i,
				struct set_memo *m, struct store_label *tmp, char (*num)[24])
{
	const struct model_sample *s = &p->samples.v[i];
	uint64_t hash = sample_labels_hash(p, s);
	uint32_t at = (uint32_t)hash & (m->nslots - 1);
	struct set_memo_slot *sl;

	while ((sl = &m->v[at])->sample1) {
		if (sl->hash == hash && sample_labels_equal(p, &p->samples.v[sl->sample1 - 1], s))
			return sl->set;
		at = (at + 1) & (m->nslots - 1);
	}
	*sl = (struct set_memo_slot){ hash, (uint32_t)i + 1, sample_set(h, p, s, tmp, num) };
	return sl->set;
}

void store_head_import_attrs(struct store_head *h, const struct store_attr_set *sets, size_t n,
			     uint32_t *map)
{
	struct model_link ln;

	pthread_rwlock_wrlock(&h->lock);
	map[0] = 0;
	for (size_t i = 1; i < n; i++) {
		if (sets[i].has_link) {
			memcpy(ln.trace_id, sets[i].trace_id, 16);
			memcpy(ln.span_id, sets[i].span_id, 8);
		}
		map[i] = set_intern(h, sets[i].labels, sets[i].nlabels,
				    sets[i].has_link ? &ln : NULL);
	}
	pthread_rwlock_unlock(&h->lock);
}

const struct store_attr_set *store_head_attrs(const struct store_head *h, size_t *n)
{
	*n = h->sets.n;
	return h->sets.v;
}

bool store_head_has_attr_key(const struct store_head *h, const char *name)
{
	return strtab_find(&h->attr_keys, name, strlen(name)) != UINT32_MAX;
}

int store_head_add(struct store_head *h, const struct model_profile *p, int64_t default_ts_ns,
		   struct prof_err *err)
{
	int rc = store_head_check(p, err);

	if (rc)
		return rc;
	store_head_add_checked(h, p, default_ts_ns);
	return 0;
}

/*
 * What consecutive profiles of one store_head_add_batch that share a
 * dictionary (model_profile_same_dict) share: the translation of its
 * entries to head ids and content keys, and the leaf node of each stack
 * range, so the profiles of one OTLP request (one per process and sample
 * type over the same stacks) translate each entry once.
 */
/* The leaf node of a stack range (+ 1) and its length, for the dictionary
 * whose epoch it carries. */
struct stack_slot_memo {
	uint32_t node1, n, epoch;
};

/*
 * The tables add_ctx fills per dictionary (content hashes of its strings
 * and locations, leaf nodes by stack_off), kept between calls (spares,
 * base/mem.h) so that a request does not allocate and zero them (they are
 * sized by the dictionary: 50 KiB for a request of 1200 locations): an
 * entry holds for the dictionary whose epoch it carries, and epochs only
 * grow; the tables are zeroed when the epoch would wrap. A kept scratch
 * holds at most ADD_KEEP_BYTES.
 */
struct add_scratch {
	uint32_t epoch; /* of the dictionary in use, >= 1 */
	struct hslot *str_h, *map_h, *loc_h;
	struct stack_slot_memo *stack;
	size_t str_cap, map_cap, loc_cap, stack_cap;
};

#define ADD_KEEP_BYTES (4u << 20)

static struct prof_spares add_spares = PROF_SPARES_INIT;

static void add_scratch_free(struct add_scratch *sc)
{
	if (sc) {
		free(sc->str_h);
		free(sc->map_h);
		free(sc->loc_h);
		free(sc->stack);
		free(sc);
	}
}

/* A kept scratch (base/mem.h spares: the one used last), or a new one. */
static struct add_scratch *add_scratch_get(void)
{
	struct add_scratch *sc = prof_spares_take(&add_spares);

	return sc ? sc : xcalloc(1, sizeof(*sc));
}

/* Keeps @sc as a spare, or frees it when it is large or spares are full. */
static void add_scratch_put(struct add_scratch *sc)
{
	size_t bytes = (sc->str_cap + sc->map_cap + sc->loc_cap) * sizeof(struct hslot) +
		       sc->stack_cap * sizeof(*sc->stack);

	if (bytes > ADD_KEEP_BYTES || !prof_spares_give(&add_spares, sc))
		add_scratch_free(sc);
}

/* Zeroed room for @n entries of @size bytes in *@v (capacity *@cap). */
static void scratch_room(void **v, size_t *cap, size_t n, size_t size)
{
	if (n <= *cap)
		return;
	free(*v);
	*cap = PROF_MAX(n, 2 * *cap);
	*v = xcalloc(*cap, size);
}

/* A new epoch for dictionary @p, with room for its tables. */
static void add_scratch_use(struct add_scratch *sc, const struct model_profile *p)
{
	if (sc->epoch == UINT32_MAX) {
		memset(sc->str_h, 0, sc->str_cap * sizeof(*sc->str_h));
		memset(sc->map_h, 0, sc->map_cap * sizeof(*sc->map_h));
		memset(sc->loc_h, 0, sc->loc_cap * sizeof(*sc->loc_h));
		memset(sc->stack, 0, sc->stack_cap * sizeof(*sc->stack));
		sc->epoch = 0;
	}
	sc->epoch++;
	scratch_room((void **)&sc->str_h, &sc->str_cap, p->strings.n + 1, sizeof(*sc->str_h));
	scratch_room((void **)&sc->map_h, &sc->map_cap, p->mappings.n + 1, sizeof(*sc->map_h));
	scratch_room((void **)&sc->loc_h, &sc->loc_cap, p->locations.n + 1, sizeof(*sc->loc_h));
	scratch_room((void **)&sc->stack, &sc->stack_cap, p->stack_locs.n + 1, sizeof(*sc->stack));
}

struct add_ctx {
	struct xlate x;
	struct add_scratch *sc;
	struct locpath path;
};

static void add_ctx_release(struct add_ctx *c)
{
	head_xlate_release(&c->x);
	memset(&c->x, 0, sizeof(c->x));
}

/* Point @c at @p's dictionary, keeping what it has when @p shares it. */
static void add_ctx_use(struct add_ctx *c, const struct model_profile *p)
{
	if (c->x.p && (c->x.p == p || model_profile_same_dict(c->x.p, p))) {
		c->x.p = p;
		return;
	}
	add_ctx_release(c);
	add_scratch_use(c->sc, p);
	c->x.p = p;
	c->x.str_h = c->sc->str_h;
	c->x.map_h = c->sc->map_h;
	c->x.loc_h = c->sc->loc_h;
	c->x.epoch = c->sc->epoch;
}

/*
 * The leaf node of each stack the pending profiles @p[0..@n) (sharing
 * @pd) use, by the decoder's stack id; UINT32_MAX for those this head
 * lacks, counted in *@missing. Nodes are never removed from a head, so
 * the answer holds after the read lock is dropped.
 */
static uint32_t *pending_nodes(struct store_head *h, const struct model_pending *pd,
			       const struct model_profile *const *p, size_t n, size_t *missing)
{
	uint32_t *node = xmalloc(sizeof(*node) * pd->nkeys);

	memset(node, 0xff, sizeof(*node) * pd->nkeys);
	*missing = 0;
	pthread_rwlock_rdlock(&h->lock);
	for (size_t i = 0; i < n; i++) {
		for (size_t j = 0; j < p[i]->samples.n; j++) {
			uint32_t si = p[i]->samples.v[j].stack_off;
			struct model_key key = pd->key[si];
			const struct stack_slot *sl;

			if (node[si] != UINT32_MAX)
				continue;
			if (!key.lo && !key.hi) {
				node[si] = 0; /* the empty stack */
				continue;
			}
			sl = h->stack_nslots ? head_stack_slot(h, key) : NULL;
			if (sl && sl->id1) {
				node[si] = sl->id1 - 1;
			} else {
				node[si] = UINT32_MAX - 1; /* counted once */
				(*missing)++;
			}
		}
	}
	pthread_rwlock_unlock(&h->lock);
	for (size_t i = 0; *missing && i < pd->nkeys; i++)
		if (node[i] == UINT32_MAX - 1)
			node[i] = UINT32_MAX;
	return node;
}

/*
 * Add @p's rows. A profile with pending stacks takes each sample's leaf
 * node from @known (pending_nodes) and translates nothing. A profile
 * resolved because some stack was unknown comes with @sis, its samples'
 * stack ids from before: it takes the known nodes from @known, and the
 * others by translating with the decoder's @keys (then noted in @known).
 */
static void add_profile(struct store_head *h, struct add_ctx *c, const struct model_profile *p,
			int64_t default_ts_ns, uint32_t *known, const uint32_t *sis,
			const struct model_key *keys)
{
	struct xlate *xp = &c->x;
	struct attr_ref *labels = NULL;
	struct series **ser = NULL;
	struct set_memo memo = { NULL, 0 };
	struct stack_slot_memo *stack_cache;
	uint32_t epoch;
	char type[512];

	if (p->samples.n == 0 || p->sample_types.n == 0)
		return;
	/* The memo is sized for all samples at half load; huge profiles go without. */
	if (p->samples.n <= (1u << 28)) {
		memo.nslots = 16;
		while (memo.nslots < 2 * p->samples.n)
			memo.nslots *= 2;
	}

	if (!p->pending) {
		add_ctx_use(c, p);
		stack_cache = c->sc->stack;
		epoch = c->x.epoch;
	} else {
		stack_cache = NULL;
		epoch = 0;
	}

	size_t nlabels = profile_labels(p, &labels);
	ser = xcalloc(p->sample_types.n, sizeof(*ser));
	uint32_t maxsl = 0;
	for (size_t i = 0; i < p->samples.n; i++)
		maxsl = PROF_MAX(maxsl, p->samples.v[i].nlabels);
	struct store_label *sl = xcalloc(maxsl + 1, sizeof(*sl));
	char(*slnum)[24] = xcalloc(maxsl + 1, sizeof(*slnum));

	pthread_rwlock_wrlock(&h->lock);
	for (size_t t = 0; t < p->sample_types.n; t++) {
		model_profile_type_id(p, (uint32_t)t, type, sizeof(type));
		ser[t] = series_get(h, type, labels, nlabels);
	}
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];
		uint32_t node = 0;

		/* Samples sharing a stack range share the walk. */
		struct stack_slot_memo *sm =
			s->nstack && stack_cache ? &stack_cache[s->stack_off] : NULL;

		if (p->pending) {
			node = known[s->stack_off];
		} else if (sis && known[sis[i]] != UINT32_MAX) {
			node = known[sis[i]];
		} else if (sm && sm->epoch == epoch && sm->n == s->nstack) {
			node = sm->node1 - 1;
		} else {
			node = head_stack_node(h, xp, p->stack_locs.v + s->stack_off, s->nstack,
					       &c->path, sis ? &keys[sis[i]] : NULL);
			if (sm)
				*sm = (struct stack_slot_memo){ node + 1, s->nstack, epoch };
			if (sis)
				known[sis[i]] = node;
		}
		int64_t ts = s->timestamp_ns ? s->timestamp_ns
					     : (p->time_ns ? p->time_ns : default_ts_ns);
		uint32_t set = 0;

		if ((s->nlabels || s->link) && memo.nslots) {
			if (!memo.v)
				memo.v = xcalloc(memo.nslots, sizeof(*memo.v));
			set = sample_set_memo(h, p, i, &memo, sl, slnum);
		} else if (s->nlabels || s->link) {
			set = sample_set(h, p, s, sl, slnum);
		}
		for (size_t t = 0; t < p->sample_types.n; t++) {
			int64_t v = p->values.v[s->value_off + t];
			struct series *se = ser[t];

			if (v == 0)
				continue; /* adds nothing to any sum; pprof often has zero columns */
			struct store_row r = { ts, v, node, set };

			head_series_push(h, se, &r);
		}
	}
	h->profiles++;
	pthread_rwlock_unlock(&h->lock);

	free(ser);
	free(labels);
	free(sl);
	free(slnum);
	free(memo.v);
}

void store_head_add_checked(struct store_head *h, const struct model_profile *p,
			    int64_t default_ts_ns)
{
	store_head_add_batch(h, &p, 1, default_ts_ns);
}

void store_head_add_batch(struct store_head *h, const struct model_profile *const *p, size_t n,
			  int64_t default_ts_ns)
{
	struct add_ctx c;

	struct model_pending *pd = NULL;
	const struct model_key *keys = NULL;
	uint32_t *known = NULL, *sis = NULL;
	size_t end = 0, next = 0; /* profiles [.., end) share pd; next: their sis */

	memset(&c, 0, sizeof(c));
	c.sc = add_scratch_get();
	for (size_t i = 0; i < n; i++) {
		if (i >= end) {
			free(known);
			free(sis);
			known = sis = NULL;
			pd = NULL;
		}
		if (p[i]->pending && p[i]->pending != pd) {
			size_t missing, total = 0;

			pd = p[i]->pending;
			keys = pd->key;
			for (end = i; end < n && p[end]->pending == pd; end++)
				total += p[end]->samples.n;
			known = pending_nodes(h, pd, p + i, end - i, &missing);
			if (missing) {
				/* a stack this head lacks: translate the batch, keeping each
				 * sample's stack id to take the known ones and the keys */
				sis = xmalloc(sizeof(*sis) * (total + 1));
				next = 0;
				for (size_t j = i; j < end; j++)
					for (size_t k = 0; k < p[j]->samples.n; k++)
						sis[next++] = p[j]->samples.v[k].stack_off;
				next = 0;
				pd->resolve(pd);
			}
		}
		add_profile(h, &c, p[i], default_ts_ns, known, sis ? sis + next : NULL, keys);
		if (sis)
			next += p[i]->samples.n;
	}
	free(known);
	free(sis);
	add_ctx_release(&c);
	VEC_FREE(&c.path);
	add_scratch_put(c.sc);
}
