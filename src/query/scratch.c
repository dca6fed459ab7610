// SPDX-License-Identifier: Apache-2.0
/*
 * scratch.c - the pool of big per-query arrays; see scratch.h.
 *
 * A fixed table of parked blocks (pointer, usable size, when parked),
 * searched linearly under one mutex: there are at most
 * QUERY_SCRATCH_SLOTS, and a take or give happens a few dozen times per
 * query, against milliseconds of work over each block. A take picks the
 * smallest block that fits (best fit, so one query's small arrays do not
 * take the blocks its large ones need); a give into a full pool evicts
 * the smallest block if the given one is larger. Sizes come from
 * malloc_usable_size, so a caller gives back a pointer alone and a VEC
 * grown by realloc is kept at its real size.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "query/scratch.h"

#include <malloc.h>
#include <pthread.h>
#include <time.h>

struct scratch_slot {
	void *p;
	size_t bytes;
	int64_t parked_s; /* CLOCK_MONOTONIC seconds */
};

static struct {
	pthread_mutex_t mu;
	struct scratch_slot slot[QUERY_SCRATCH_SLOTS];
	size_t n, bytes;
	uint64_t hits, misses;
} pool = { .mu = PTHREAD_MUTEX_INITIALIZER };

static int64_t mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec;
}

/* Remove slot @i (mu held); returns its block. */
static void *slot_remove(size_t i)
{
	void *p = pool.slot[i].p;

	pool.bytes -= pool.slot[i].bytes;
	pool.slot[i] = pool.slot[--pool.n];
	return p;
}

/* Move blocks parked longer than the idle time to @drop (mu held); returns how many. */
static size_t collect_idle(int64_t now, void **drop, size_t max)
{
	size_t nd = 0;

	for (size_t i = 0; i < pool.n && nd < max;) {
		if (now - pool.slot[i].parked_s >= QUERY_SCRATCH_IDLE_S)
			drop[nd++] = slot_remove(i);
		else
			i++;
	}
	return nd;
}

void *query_scratch_take(size_t nmemb, size_t size, bool zero)
{
	void *drop[QUERY_SCRATCH_SLOTS];
	size_t bytes, nd, best = SIZE_MAX;
	void *p = NULL;

	if (size && nmemb > SIZE_MAX / size)
		PROF_ASSERT(!"query_scratch_take: size overflow");
	bytes = nmemb * size;
	if (bytes < QUERY_SCRATCH_MIN_BYTES)
		return zero ? xcalloc(bytes ? bytes : 1, 1) : xmalloc(bytes ? bytes : 1);

	pthread_mutex_lock(&pool.mu);
	nd = collect_idle(mono_s(), drop, QUERY_SCRATCH_SLOTS);
	for (size_t i = 0; i < pool.n; i++)
		if (pool.slot[i].bytes >= bytes &&
		    (best == SIZE_MAX || pool.slot[i].bytes < pool.slot[best].bytes))
			best = i;
	if (best != SIZE_MAX) {
		p = slot_remove(best);
		pool.hits++;
	} else {
		pool.misses++;
	}
	pthread_mutex_unlock(&pool.mu);
	for (size_t i = 0; i < nd; i++)
		free(drop[i]);

	if (!p)
		return zero ? xcalloc(bytes, 1) : xmalloc(bytes);
	if (zero)
		memset(p, 0, bytes);
	return p;
}

void query_scratch_give(void *p)
{
	void *drop[QUERY_SCRATCH_SLOTS + 1];
	size_t bytes, nd;

	if (!p)
		return;
	bytes = malloc_usable_size(p);
	if (bytes < QUERY_SCRATCH_MIN_BYTES || bytes > QUERY_SCRATCH_MAX_BYTES) {
		free(p);
		return;
	}
	int64_t now = mono_s();

	pthread_mutex_lock(&pool.mu);
	nd = collect_idle(now, drop, QUERY_SCRATCH_SLOTS);
	/* Room by count and bytes: drop the smallest blocks while they are smaller than @p. */
	while (pool.n == QUERY_SCRATCH_SLOTS || pool.bytes + bytes > QUERY_SCRATCH_MAX_BYTES) {
		size_t small = 0;

		for (size_t i = 1; i < pool.n; i++)
			if (pool.slot[i].bytes < pool.slot[small].bytes)
				small = i;
		if (!pool.n || pool.slot[small].bytes >= bytes)
			break;
		drop[nd++] = slot_remove(small);
	}
	if (pool.n < QUERY_SCRATCH_SLOTS && pool.bytes + bytes <= QUERY_SCRATCH_MAX_BYTES) {
		struct scratch_slot s = { p, bytes, now };

		pool.slot[pool.n++] = s;
		pool.bytes += bytes;
		p = NULL;
	}
	pthread_mutex_unlock(&pool.mu);
	for (size_t i = 0; i < nd; i++)
		free(drop[i]);
	free(p);
}

void query_scratch_trim(void)
{
	void *drop[QUERY_SCRATCH_SLOTS];
	size_t nd = 0;

	pthread_mutex_lock(&pool.mu);
	while (pool.n)
		drop[nd++] = slot_remove(pool.n - 1);
	pthread_mutex_unlock(&pool.mu);
	for (size_t i = 0; i < nd; i++)
		free(drop[i]);
}

void query_scratch_expire(void)
{
	void *drop[QUERY_SCRATCH_SLOTS];
	size_t nd;

	pthread_mutex_lock(&pool.mu);
	nd = collect_idle(mono_s(), drop, QUERY_SCRATCH_SLOTS);
	pthread_mutex_unlock(&pool.mu);
	for (size_t i = 0; i < nd; i++)
		free(drop[i]);
}

void query_scratch_stats(struct query_scratch_stats *st)
{
	pthread_mutex_lock(&pool.mu);
	st->blocks = pool.n;
	st->bytes = pool.bytes;
	st->hits = pool.hits;
	st->misses = pool.misses;
	pthread_mutex_unlock(&pool.mu);
}
