// SPDX-License-Identifier: Apache-2.0
/* rules.c - signal-control rules on decoded profiles; see rules.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "server/rules.h"

#include <fnmatch.h>
#include <xxhash.h>

static int label_cmp(const void *a, const void *b)
{
	const struct server_label *x = a, *y = b;
	int c = strcmp(x->key, y->key);

	if (c)
		return c;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

size_t server_profile_labels(const struct model_profile *p, struct server_label **out)
{
	struct server_label *a = xcalloc(p->attrs.n + 1, sizeof(*a));
	size_t n = 0, k = 0;

	for (size_t i = 0; i < p->attrs.n; i++) {
		const struct model_label *l = &p->attrs.v[i];
		struct server_label *r = &a[n];

		r->key = model_str(p, l->key);
		if (!*r->key)
			continue;
		if (l->str) {
			r->val = model_str(p, l->str);
		} else {
			snprintf(r->num, sizeof(r->num), "%" PRId64, l->num);
			r->val = NULL;
		}
		r->pos = (uint32_t)i;
		n++;
	}
	qsort(a, n, sizeof(*a), label_cmp);
	for (size_t i = 0; i < n; i++) {
		if (k && !strcmp(a[k - 1].key, a[i].key))
			continue;
		a[k++] = a[i];
	}
	/* Numbers point into their own entry, which qsort moved: fix up last. */
	for (size_t i = 0; i < k; i++)
		if (!a[i].val)
			a[i].val = a[i].num;
	*out = a;
	return k;
}

uint64_t server_series_hash(const char *type, const struct server_label *l, size_t n)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t h;

	PROF_ASSERT(st != NULL);
	XXH3_64bits_reset(st);
	XXH3_64bits_update(st, type, strlen(type) + 1);
	for (size_t i = 0; i < n; i++) {
		XXH3_64bits_update(st, l[i].key, strlen(l[i].key) + 1);
		XXH3_64bits_update(st, l[i].val, strlen(l[i].val) + 1);
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

static const char *label_get(const struct server_label *l, size_t n, const char *key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(l[mid].key, key);

		if (!c)
			return l[mid].val;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The label @key of a profile, or its older key (service_name for service.name). */
static const char *rule_label(const struct server_label *l, size_t n, const char *key)
{
	const char *v = label_get(l, n, key), *alt = v ? NULL : store_label_alias(key);

	return alt ? label_get(l, n, alt) : v;
}

static bool rule_matches(const struct server_rule *r, const char *type,
			 const struct server_label *l, size_t n)
{
	if (r->type && fnmatch(r->type, type, 0))
		return false;
	for (size_t i = 0; i < r->sel.n; i++)
		if (!store_matcher_match(&r->sel.m[i], rule_label(l, n, r->sel.m[i].name)))
			return false;
	return true;
}

bool server_profile_drop_columns(struct model_profile *p, const bool *keep)
{
	size_t k = p->sample_types.n, kk = 0, ns = 0;
	bool changed = false;
	int64_t *nv;

	for (size_t t = 0; t < k; t++) {
		if (keep[t])
			p->sample_types.v[kk++] = p->sample_types.v[t];
		else
			changed = true;
	}
	nv = xcalloc(p->samples.n * kk + 1, sizeof(*nv));
	for (size_t i = 0; i < p->samples.n; i++) {
		struct model_sample s = p->samples.v[i];
		const int64_t *v = &p->values.v[s.value_off];
		bool any = false;
		size_t c = 0;

		for (size_t t = 0; t < k; t++) {
			if (!keep[t])
				continue;
			nv[ns * kk + c] = v[t];
			any |= v[t] != 0;
			c++;
		}
		if (!any) {
			changed = true;
			continue;
		}
		s.value_off = (uint32_t)(ns * kk);
		p->samples.v[ns++] = s;
	}
	p->sample_types.n = kk;
	p->samples.n = kk ? ns : 0;
	free(p->values.v);
	p->values.v = nv;
	p->values.n = p->samples.n * kk;
	p->values.cap = p->samples.n * kk + 1;
	return changed;
}

void server_rules_apply(const struct server_rule *rules, size_t nrules, pthread_mutex_t *lock,
			struct model_profile *p, char *const *types, bool *changed)
{
	size_t k = p->sample_types.n, nl;
	struct server_label *labels;
	bool *keep, any_drop = false, any_below = false;
	int64_t *below;

	*changed = false;
	if (!nrules || !k)
		return;
	keep = xcalloc(k, sizeof(*keep));
	below = xcalloc(k, sizeof(*below));
	nl = server_profile_labels(p, &labels);
	pthread_mutex_lock(lock);
	for (size_t t = 0; t < k; t++) {
		uint64_t h = 0;
		bool hashed = false;

		keep[t] = true;
		below[t] = INT64_MIN;
		for (size_t r = 0; r < nrules && keep[t]; r++) {
			const struct server_rule *ru = &rules[r];

			if (!rule_matches(ru, types[t], labels, nl))
				continue;
			switch (ru->action) {
			case SERVER_RULE_DROP:
				keep[t] = false;
				break;
			case SERVER_RULE_KEEP:
				if (!hashed) {
					h = server_series_hash(types[t], labels, nl);
					hashed = true;
				}
				/* Top 53 bits as a double in [0, 1). */
				if ((double)(h >> 11) * 0x1.0p-53 >= ru->fraction)
					keep[t] = false;
				break;
			case SERVER_RULE_DROP_BELOW:
				below[t] = PROF_MAX(below[t], ru->min_value);
				break;
			}
		}
		any_drop |= !keep[t];
		any_below |= keep[t] && below[t] != INT64_MIN;
	}
	pthread_mutex_unlock(lock);
	if (any_below) {
		for (size_t i = 0; i < p->samples.n; i++) {
			int64_t *v = &p->values.v[p->samples.v[i].value_off];

			for (size_t t = 0; t < k; t++)
				if (v[t] && v[t] < below[t]) {
					v[t] = 0;
					*changed = true;
				}
		}
	}
	if (any_drop || *changed)
		*changed |= server_profile_drop_columns(p, keep);
	free(labels);
	free(keep);
	free(below);
}
