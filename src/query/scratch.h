// SPDX-License-Identifier: Apache-2.0
/*
 * scratch.h - big per-query arrays kept between queries.
 *
 * A query over a large stack set allocates arrays over its nodes and
 * names (per-node sums, marks, children lists, sort and heap buffers):
 * megabytes each. glibc serves such sizes with mmap and gives them back
 * with munmap on free, so every query page-faults them in again and the
 * kernel clears each 4 KiB page. A pool keeps up to QUERY_SCRATCH_SLOTS
 * of them (at most QUERY_SCRATCH_MAX_BYTES together) for the next query.
 *
 * A block is plain malloc memory: taken by one caller at a time, given
 * back with query_scratch_give() or, where that is not convenient,
 * released with free() (it is then simply not kept). Small requests
 * (below QUERY_SCRATCH_MIN_BYTES) bypass the pool. Blocks not taken for
 * QUERY_SCRATCH_IDLE_S seconds are freed by the next take or give, and
 * query_scratch_trim() frees all of them. Thread-safe (one mutex, held
 * only to pick or park a block, never while clearing one).
 */
#ifndef PROF_QUERY_SCRATCH_H
#define PROF_QUERY_SCRATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUERY_SCRATCH_SLOTS	32
#define QUERY_SCRATCH_MIN_BYTES ((size_t)256 << 10)
#define QUERY_SCRATCH_MAX_BYTES ((size_t)256 << 20)
#define QUERY_SCRATCH_IDLE_S	60

/**
 * query_scratch_take() - a block of at least @nmemb * @size bytes.
 * @zero: clear it (as calloc); otherwise its contents are unspecified.
 *
 * The smallest kept block that fits, else a new one. Never NULL (aborts
 * on overflow or out of memory, as xmalloc). The caller owns the block
 * until it hands it to query_scratch_give() or free().
 */
void *query_scratch_take(size_t nmemb, size_t size, bool zero);

/**
 * query_scratch_give() - hand @p back for a later query (NULL: nothing).
 *
 * @p must come from malloc (query_scratch_take, xmalloc, a VEC's
 * storage); its usable size decides whether it is kept. It is kept when
 * it is big enough to matter and the pool has room (a full pool drops
 * its smallest block for a larger one), else freed. The caller must not
 * use @p afterwards.
 */
void query_scratch_give(void *p);

/** query_scratch_trim() - free every kept block (idle servers, tests). */
void query_scratch_trim(void);

/**
 * query_scratch_expire() - free the blocks not taken for
 * QUERY_SCRATCH_IDLE_S seconds, so an idle process gives them back (the
 * server calls it every 10 s). Thread-safe.
 */
void query_scratch_expire(void);

/** struct query_scratch_stats - what the pool holds and how it served takes. */
struct query_scratch_stats {
	size_t blocks, bytes; /* kept now */
	uint64_t hits;	      /* takes served by a kept block */
	uint64_t misses;      /* takes of pool size that allocated */
};

/** query_scratch_stats() - a snapshot of the pool's counters into @st. */
void query_scratch_stats(struct query_scratch_stats *st);

#endif
