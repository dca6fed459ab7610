// SPDX-License-Identifier: Apache-2.0
/*
 * delta.c - baselines of cumulative profiles and the per-kind shaping of
 * scraped profiles; see delta.h.
 *
 * A baseline is an open-addressing hash table (linear probing, power of
 * two slots, at most half full) from sample identity to a row of
 * @nv int64 values; key 0 marks an empty slot (a real hash of 0 is
 * stored as 1).
 */
#include "base/compat.h"
#include "base/mem.h"
#include "scrape/delta.h"

#include <xxhash.h>

struct delta_tab {
	uint64_t *keys; /* 0 = empty */
	int64_t *vals;	/* cap * nv */
	uint8_t *seen;	/* per slot: emitted in the current pass */
	size_t cap, n;
	uint32_t nv;
	uint64_t sig; /* hash of the sample types */
	int64_t time_ns;
	bool valid;
};

struct scrape_delta {
	struct delta_tab base, pending;
};

static void tab_release(struct delta_tab *t)
{
	free(t->keys);
	free(t->vals);
	free(t->seen);
	memset(t, 0, sizeof(*t));
}

static void tab_init(struct delta_tab *t, size_t want, uint32_t nv)
{
	size_t cap = 16;

	while (cap < want * 2)
		cap *= 2;
	memset(t, 0, sizeof(*t));
	t->cap = cap;
	t->nv = nv;
	t->keys = xcalloc(cap, sizeof(*t->keys));
	t->vals = xcalloc(cap, (nv ? nv : 1) * sizeof(*t->vals));
	t->seen = xcalloc(cap, 1);
	t->valid = true;
}

/* The slot of @key: where it is, or the empty slot where it would go. */
static size_t tab_slot(const struct delta_tab *t, uint64_t key)
{
	size_t i = (size_t)key & (t->cap - 1);

	while (t->keys[i] && t->keys[i] != key)
		i = (i + 1) & (t->cap - 1);
	return i;
}

static const int64_t *tab_get(const struct delta_tab *t, uint64_t key)
{
	size_t i;

	if (!t->valid || !t->cap)
		return NULL;
	i = tab_slot(t, key);
	return t->keys[i] ? &t->vals[i * t->nv] : NULL;
}

struct scrape_delta *scrape_delta_new(void)
{
	return xcalloc(1, sizeof(struct scrape_delta));
}

void scrape_delta_free(struct scrape_delta *d)
{
	if (!d)
		return;
	tab_release(&d->base);
	tab_release(&d->pending);
	free(d);
}

void scrape_delta_commit(struct scrape_delta *d)
{
	if (!d->pending.valid)
		return;
	tab_release(&d->base);
	d->base = d->pending;
	memset(&d->pending, 0, sizeof(d->pending));
}

void scrape_delta_discard(struct scrape_delta *d)
{
	tab_release(&d->pending);
}

size_t scrape_delta_stacks(const struct scrape_delta *d)
{
	return d->base.valid ? d->base.n : 0;
}

static void hash_str(XXH3_state_t *st, const struct model_profile *p, uint32_t id)
{
	const char *s = model_str(p, id);

	XXH3_64bits_update(st, s, strlen(s) + 1);
}

static void hash_i64(XXH3_state_t *st, int64_t v)
{
	XXH3_64bits_update(st, &v, sizeof(v));
}

static uint64_t types_sig(const struct model_profile *p)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t h;

	PROF_ASSERT(st);
	XXH3_64bits_reset(st);
	for (size_t i = 0; i < p->sample_types.n; i++) {
		hash_str(st, p, p->sample_types.v[i].type);
		hash_str(st, p, p->sample_types.v[i].unit);
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

static uint64_t sample_key(XXH3_state_t *st, const struct model_profile *p,
			   const struct model_sample *s)
{
	uint64_t h;

	XXH3_64bits_reset(st);
	hash_i64(st, s->nstack);
	for (uint32_t k = 0; k < s->nstack; k++) {
		const struct model_location *loc =
			&p->locations.v[p->stack_locs.v[s->stack_off + k]];

		hash_i64(st, (int64_t)loc->address);
		hash_str(st, p, loc->mapping ? p->mappings.v[loc->mapping].filename : 0);
		hash_i64(st, loc->nlines);
		for (uint32_t l = 0; l < loc->nlines; l++) {
			const struct model_line *ln = &p->lines.v[loc->line_off + l];
			const struct model_function *f = &p->functions.v[ln->function];

			hash_str(st, p, f->name);
			hash_str(st, p, f->system_name);
			hash_str(st, p, f->filename);
			hash_i64(st, ln->line);
		}
	}
	hash_i64(st, s->nlabels);
	for (uint32_t k = 0; k < s->nlabels; k++) {
		const struct model_label *lb = &p->labels.v[s->label_off + k];

		hash_str(st, p, lb->key);
		hash_str(st, p, lb->str);
		hash_i64(st, lb->num);
		hash_str(st, p, lb->num_unit);
	}
	h = XXH3_64bits_digest(st);
	return h ? h : 1;
}

int scrape_delta_compute(struct scrape_delta *d, struct model_profile *p, bool *had_base,
			 struct prof_err *err)
{
	size_t ns = p->samples.n, nv = p->sample_types.n, out = 0;
	uint64_t sig = types_sig(p);
	struct delta_tab *nt = &d->pending;
	const struct delta_tab *bt = &d->base;
	XXH3_state_t *st;
	uint64_t *keys;
	int64_t *vals;
	bool base_ok;

	if (ns > INT32_MAX)
		return prof_err_set(err, -PROF_ETOOBIG, -1, "profile has too many samples (%zu)",
				    ns);
	tab_release(nt);
	tab_init(nt, ns, (uint32_t)nv);
	nt->sig = sig;
	nt->time_ns = p->time_ns;
	st = XXH3_createState();
	PROF_ASSERT(st);
	keys = xcalloc(ns ? ns : 1, sizeof(*keys));
	/* 1. totals per identity: the new baseline */
	for (size_t i = 0; i < ns; i++) {
		const struct model_sample *s = &p->samples.v[i];
		size_t slot;

		keys[i] = sample_key(st, p, s);
		slot = tab_slot(nt, keys[i]);
		if (!nt->keys[slot]) {
			nt->keys[slot] = keys[i];
			nt->n++;
		}
		for (size_t c = 0; c < nv; c++)
			nt->vals[slot * nv + c] += p->values.v[s->value_off + c];
	}
	XXH3_freeState(st);
	base_ok = bt->valid && bt->sig == sig && bt->nv == nv;
	*had_base = base_ok;
	/* 2. one sample per identity, valued current - baseline */
	vals = xcalloc(ns * (nv ? nv : 1) + 1, sizeof(*vals));
	for (size_t i = 0; i < ns && base_ok; i++) {
		size_t slot = tab_slot(nt, keys[i]);
		const int64_t *cur = &nt->vals[slot * nv];
		const int64_t *old = tab_get(bt, keys[i]);
		bool nonzero = false;

		if (nt->seen[slot])
			continue;
		nt->seen[slot] = 1;
		for (size_t c = 0; c < nv; c++) {
			int64_t o = old ? old[c] : 0, v;

			/* Below the baseline: the counters restarted. */
			v = cur[c] >= o ? cur[c] - o : cur[c];
			vals[out * nv + c] = v;
			nonzero |= v != 0;
		}
		if (!nonzero)
			continue;
		p->samples.v[out] = p->samples.v[i];
		p->samples.v[out].value_off = (uint32_t)(out * nv);
		out++;
	}
	p->samples.n = out;
	p->values.n = 0;
	if (out && nv) {
		VEC_RESERVE(&p->values, out * nv);
		memcpy(p->values.v, vals, out * nv * sizeof(*vals));
	}
	p->values.n = out * nv;
	if (base_ok && bt->time_ns > 0 && p->time_ns > bt->time_ns)
		p->duration_ns = p->time_ns - bt->time_ns;
	free(vals);
	free(keys);
	return 0;
}

size_t scrape_profile_keep_columns(struct model_profile *p, const char *prefix)
{
	size_t nv = p->sample_types.n, keep[64], nk = 0, plen = strlen(prefix);
	bool def_kept = false;

	for (size_t c = 0; c < nv && nk < PROF_ARRAY_SIZE(keep); c++)
		if (!strncmp(model_str(p, p->sample_types.v[c].type), prefix, plen))
			keep[nk++] = c;
	if (!nk || nk == nv)
		return nk;
	int64_t *vals = xcalloc(p->samples.n * nk + 1, sizeof(*vals));

	for (size_t i = 0; i < p->samples.n; i++) {
		struct model_sample *s = &p->samples.v[i];

		for (size_t k = 0; k < nk; k++)
			vals[i * nk + k] = p->values.v[s->value_off + keep[k]];
		s->value_off = (uint32_t)(i * nk);
	}
	if (p->samples.n)
		memcpy(p->values.v, vals, p->samples.n * nk * sizeof(*vals));
	free(vals);
	p->values.n = p->samples.n * nk;
	for (size_t k = 0; k < nk; k++) {
		p->sample_types.v[k] = p->sample_types.v[keep[k]];
		def_kept |= p->sample_types.v[k].type == p->default_sample_type;
	}
	p->sample_types.n = nk;
	if (!def_kept)
		p->default_sample_type = 0;
	return nk;
}

void scrape_profile_shape(struct model_profile *p, enum scrape_kind k, const char *custom)
{
	const char *name = scrape_kind_type_name(k);

	if (k == SCRAPE_KIND_HEAP)
		(void)scrape_profile_keep_columns(p, "inuse_");
	else if (k == SCRAPE_KIND_ALLOCS)
		(void)scrape_profile_keep_columns(p, "alloc_");
	if (k == SCRAPE_KIND_CUSTOM)
		name = custom;
	if (name)
		p->name = model_intern(p, name);
}
