// SPDX-License-Identifier: Apache-2.0
/*
 * series.c - active series of a dataset; see series.h. An open-addressing
 * table of 64-bit series hashes (0 stands for the hash 0 remapped to 1)
 * with the time each was last stored into; idle entries are dropped by a
 * rebuild when the table is full or at most once a minute when the limit
 * is reached.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "server/series.h"

#include <pthread.h>

struct series_slot {
	uint64_t h; /* 0 = empty */
	int64_t last_ns;
};

struct server_series_set {
	pthread_mutex_t lock;
	struct series_slot *slots;
	size_t nslots, n; /* nslots: power of two */
	int64_t swept_ns;
};

struct server_series_set *server_series_new(void)
{
	struct server_series_set *s = xcalloc(1, sizeof(*s));

	pthread_mutex_init(&s->lock, NULL);
	s->nslots = 1024;
	s->slots = xcalloc(s->nslots, sizeof(*s->slots));
	return s;
}

void server_series_free(struct server_series_set *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->slots);
	free(s);
}

static uint64_t key_of(uint64_t h)
{
	return h ? h : 1;
}

static struct series_slot *find(const struct server_series_set *s, uint64_t k)
{
	size_t i = (size_t)(k ^ (k >> 29)) & (s->nslots - 1);

	while (s->slots[i].h && s->slots[i].h != k)
		i = (i + 1) & (s->nslots - 1);
	return &s->slots[i];
}

/* Re-inserts the entries active at @cutoff_ns into a table of @nslots. */
static void rebuild(struct server_series_set *s, size_t nslots, int64_t cutoff_ns)
{
	struct series_slot *old = s->slots;
	size_t oldn = s->nslots;

	s->slots = xcalloc(nslots, sizeof(*s->slots));
	s->nslots = nslots;
	s->n = 0;
	for (size_t i = 0; i < oldn; i++)
		if (old[i].h && old[i].last_ns >= cutoff_ns) {
			*find(s, old[i].h) = old[i];
			s->n++;
		}
	free(old);
}

/* The distinct series of @h[0..n) that @s does not hold (a duplicate in @h counts once). */
static size_t count_new(const struct server_series_set *s, const uint64_t *h, size_t n)
{
	size_t fresh = 0;

	for (size_t i = 0; i < n; i++) {
		uint64_t k = key_of(h[i]);
		bool dup = false;

		if (find(s, k)->h)
			continue;
		for (size_t j = 0; j < i && !dup; j++)
			dup = key_of(h[j]) == k;
		fresh += !dup;
	}
	return fresh;
}

bool server_series_admit(struct server_series_set *s, const uint64_t *h, size_t n, size_t limit,
			 int64_t now_ns, size_t *nnew)
{
	size_t fresh;
	bool ok;

	*nnew = 0;
	pthread_mutex_lock(&s->lock);
	fresh = count_new(s, h, n);
	if (fresh && s->n + fresh > limit && now_ns - s->swept_ns >= 60 * (int64_t)1000000000) {
		s->swept_ns = now_ns;
		rebuild(s, s->nslots, now_ns - SERVER_SERIES_IDLE_NS);
		fresh = count_new(s, h, n);
	}
	ok = !fresh || s->n + fresh <= limit;
	if (ok) {
		for (size_t i = 0; i < n; i++) {
			struct series_slot *sl;

			if ((s->n + 1) * 2 > s->nslots)
				rebuild(s, s->nslots * 2, INT64_MIN);
			sl = find(s, key_of(h[i]));
			if (!sl->h) {
				sl->h = key_of(h[i]);
				s->n++;
			}
			sl->last_ns = now_ns;
		}
	} else {
		*nnew = fresh;
	}
	pthread_mutex_unlock(&s->lock);
	return ok;
}

size_t server_series_count(struct server_series_set *s)
{
	size_t n;

	pthread_mutex_lock(&s->lock);
	n = s->n;
	pthread_mutex_unlock(&s->lock);
	return n;
}
