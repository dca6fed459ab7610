/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store_int.h - private to the store's own files (store.c: open, close,
 * ingest; maint.c: flush, compaction, retention, background thread;
 * scan.c: the query side). Nothing outside src/store includes it.
 *
 * Locks, in the order they may be taken:
 *   maint_mu   one flush / compaction / retention at a time;
 *   ingest_rw  ingest holds it shared around WAL append + head add;
 *              a rotation holds it exclusively, so every record of a
 *              sealed segment is in the frozen head and no later one is;
 *   view_mu    the source lists (active, frozen, blocks), reference
 *              counts, the symbol cache, counters; held only briefly,
 *              never across I/O. view_cond (with view_mu) signals
 *              "a flush finished or failed" and wakes the maintenance
 *              thread.
 * A head's own rwlock (head.h) is taken inside any of these.
 */
#ifndef PROF_STORE_STORE_INT_H
#define PROF_STORE_STORE_INT_H

#include "base/compat.h"
#include "base/mem.h"
#include "store/backend.h"
#include "store/block.h"
#include "store/store.h"

#include <pthread.h>

/** struct store_hold - a head in the view, reference counted under view_mu. */
struct store_hold {
	struct store_head *h;
	int refs;
	uint64_t wal_first; /* first WAL segment whose records are in h */
	uint64_t wal_last;  /* last one; set when the head is frozen */
	int64_t created_ns; /* wall clock of the first row added (0 = none yet) */
	bool borrowed;	    /* store_open_head: h is the caller's */
};

/** struct store_blk - a block in the view, reference counted under view_mu. */
struct store_blk {
	struct store_block *b;
	int refs;
	bool doomed; /* out of the view: its directory goes when the last ref does */
	struct store_block_syms *syms; /* cached, or NULL */
	int syms_pins;
	uint64_t syms_used; /* tick of last use, for eviction */
};

struct store {
	char *dir, *blocks_dir;
	int lock_fd;
	struct store_options opt;
	struct store_wal *wal;

	pthread_mutex_t maint_mu;
	pthread_rwlock_t ingest_rw;
	pthread_mutex_t view_mu;
	pthread_cond_t view_cond;

	/* under view_mu */
	struct store_hold *active, *frozen;
	VEC(struct store_blk *) blocks; /* by (min_ts, id) */
	uint64_t covered;		/* WAL segments <= this are in blocks */
	uint64_t next_block_id;
	int flush_err; /* last flush failure; 0 after a success */
	uint64_t tick, syms_bytes;
	uint64_t flushes, flush_failures, compactions, blocks_deleted, blocks_broken;
	bool stopping;
	bool mem;	     /* store_open_mem: no directory, nothing durable */
	uint64_t replay_seg; /* open: the segment the replay is in */
	/* Background replay (store_options.replay_background): the frozen
	 * head is the replay's while @replaying (atomic): no rotation, no
	 * flush but the replay's own, and ingest waits rather than freeze. */
	bool replaying, replay_stop, replay_started;
	pthread_t replay_thread;
	int64_t replay_start_ns, replay_end_ns; /* wall clock; end 0 while running */
	int64_t oldest_ns; /* wall clock of the oldest WAL record not in a block (replay) */
	/* under view_mu: a zeroed head totals accumulator kept between scans
	 * (scan.c acc_take/acc_put), so a query does not fault in fresh pages */
	struct store_leaf_acc *head_acc;
	size_t head_acc_n;

	pthread_t thread;
	bool thread_running;

	/* store_open_backend: rows are kept by @be (store/backend.h), NULL = here */
	const struct store_backend *be;
	void *be_ctx;
};

/* store.c */
struct store_hold *store_hold_new(uint64_t wal_first);
/** store_hold_put() / store_blk_put() - drop a reference; view_mu NOT held. */
void store_hold_put(struct store *s, struct store_hold *h);
void store_blk_put(struct store *s, struct store_blk *b);
/** store_blk_new() - wrap an open block (one reference, the view's). */
struct store_blk *store_blk_new(struct store_block *b);
/**
 * store_delete_block_dir() - remove block directory @dir crash-safely:
 * rename to <dir>.del, fsync @blocks_dir, remove the files.
 */
void store_delete_block_dir(const char *blocks_dir, const char *dir);
/** store_view_add_block() - insert into s->blocks in order (view_mu held). */
void store_view_add_block(struct store *s, struct store_blk *b);
/** store_head_due() - is the active head due for a flush (memory, rows, time)? */
bool store_head_due(struct store *s, struct store_hold *h, int64_t now_ns);

/* maint.c */
/**
 * store_flush_replay() - the background replay writes the frozen head
 * (its own) as a block, as store_flush would once replay is over.
 */
int store_flush_replay(struct store *s, struct prof_err *err);
/** store_rotate() - freeze the active head (no-op if one is frozen or it is empty). */
int store_rotate(struct store *s, struct prof_err *err);
int store_maint_start(struct store *s, struct prof_err *err);
void store_maint_stop(struct store *s);
/** store_new_block_id() - a fresh id, above every id used (view_mu held). */
uint64_t store_new_block_id(struct store *s);
/**
 * store_write_head() - write head @h, which no longer changes, as block
 * @id (durable and renamed into place when this returns 0). -ENODATA when
 * it has no rows (nothing written).
 */
int store_write_head(struct store *s, struct store_head *h, uint64_t id,
		     const struct store_block_info *info, struct prof_err *err);
/**
 * store_rows_sort() - sort @r[@n] by time, then stack id, stably (rows
 * with equal time and stack keep their order): the row order of a block's
 * series. Takes scratch of up to 32 bytes a row (xmalloc: aborts when out
 * of memory).
 */
void store_rows_sort(struct store_row *r, size_t n);

/* scan.c */
/**
 * store_syms_pin() - the block's symbols, loaded if needed, pinned until
 * store_syms_unpin. -PROF_ECORRUPT etc. with @err when they cannot be read.
 */
int store_syms_pin(struct store *s, struct store_blk *b, struct store_block_syms **out,
		   struct prof_err *err);
void store_syms_unpin(struct store *s, struct store_blk *b);

#endif
