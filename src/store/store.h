/* SPDX-License-Identifier: Apache-2.0 */
/*
 * store.h - the profile store of one data directory: write-ahead log,
 * in-memory head, immutable columnar blocks, compaction, retention, and
 * the scan API the query engine reads through.
 *
 * Directory layout (docs/storage-format.md):
 *   DIR/LOCK                  flock()ed while a process has the store open
 *   DIR/wal/NNNNNNNN.wal      write-ahead log segments (store/wal.h)
 *   DIR/wal/checkpoint        segments <= N are in blocks
 *   DIR/blocks/<id>/          immutable blocks (store/block.h)
 *
 * Data path: an ingest is appended to the WAL (fdatasync) and added to the
 * *active* head. When the head is full (memory, rows, or the time its
 * data spans, all configurable) it is *flushed*: the WAL is rotated, the
 * head becomes *frozen* (read-only, still queried) while a new active
 * head takes ingest, the frozen head is written as a block, the block
 * replaces it in the view, and the WAL segments it came from are
 * checkpointed and deleted. Compaction merges the blocks of one time
 * window; retention deletes whole blocks. Every step is crash-safe: a
 * block becomes visible only by an atomic rename, its WAL range says
 * which segments replay must skip, and a compacted block lists the
 * blocks it replaces (deleted at open if a crash left them), so every
 * acknowledged sample is in exactly one of: the WAL tail, one block.
 *
 * Memory: the active head is bounded by store_options.head_max_bytes;
 * when full it is flushed, and an ingest that finds both the active head
 * full and a flush still writing waits for that flush (backpressure), so
 * the heads hold at most about twice the bound.
 *
 * Views: a query sees a consistent set of sources (blocks overlapping its
 * range, the frozen head, the active head) taken under a mutex with
 * reference counts; a flush or compaction that publishes meanwhile never
 * makes a row visible twice or not at all.
 *
 * Calling sequence: store_open[_opts] (replays the WAL into the head, or with
 * replay_background starts a thread that does while ingest goes on) ->
 * store_ingest_* from any number of threads, store_scan / store_types
 * from any number of threads -> store_close after the last call returned.
 */
#ifndef PROF_STORE_STORE_H
#define PROF_STORE_STORE_H

#include "base/compat.h"
#include "base/err.h"
#include "store/head.h"
#include "store/matcher.h"
#include "store/wal.h"
#include "store/wal_pprof.h"

struct store;

/**
 * struct store_options - knobs of a store; store_options_default() fills
 * the defaults, which store_open uses.
 */
struct store_options {
	int64_t block_duration_ns; /* flush when the head's rows span this much time, or
				    * the head got its first row this long ago (1 h) */
	uint64_t head_max_bytes;   /* flush when the head holds this much memory (256 MiB) */
	uint64_t head_max_rows;	   /* ... or this many rows (0 = no row limit) */
	int64_t retention_ns; /* delete blocks whose newest row is older than this (0 = keep) */
	int64_t compact_window_ns;   /* compaction merges blocks of one aligned window (24 h) */
	uint32_t compact_min_blocks; /* merge flushed blocks of a window still filling once it
				      * has this many (4); a closed window is merged at 2 */
	uint64_t compact_max_rows;   /* no compacted block above this many rows (1 G) */
	int64_t ts_resolution_ns;    /* block timestamp resolution (1 ms; 1 = exact) */
	int zstd_level;		     /* for flushed blocks (3); compaction uses +6, max 19 */
	uint32_t page_rows;	     /* rows per page (65536) */
	bool rollups;		     /* flushes and compaction write per-series, per-hour stack
		       * totals (RHRS) that totals scans use for the hours their
		       * range covers (true) */
	int64_t rollup_bucket_ns;    /* the rollup's bucket width (1 h) */
	uint64_t wal_segment_bytes;  /* start a new WAL segment past this size (64 MiB;
				      * 0 = only at flushes); replay can flush between them */
	uint64_t syms_cache_bytes;   /* decoded block symbols kept in memory (512 MiB) */
	bool background;	     /* a thread flushes, compacts, applies retention (true) */
	int64_t maint_interval_ns;   /* how often that thread looks (10 s) */
	bool read_only;		     /* inspect only: no lock, no writes, no ingest (false) */
	bool replay_background;	     /* open returns before the WAL is replayed: ingest
				      * goes to a new segment at once, a thread replays
				      * the old ones into a head of their own, queried as
				      * it fills (false: open replays) */
};

/** store_options_default() - the defaults listed in struct store_options. */
void store_options_default(struct store_options *o);

/** struct store_ingest_result - what one ingest added. */
struct store_ingest_result {
	uint64_t profiles; /* model profiles (one per OTLP Profile) */
	uint64_t samples;  /* model samples */
};

/**
 * store_open() - open (creating as needed) the store in @dir and rebuild
 * the head from the WAL. *@out is the caller's, closed with store_close.
 * Errors: -EBUSY when another process holds DIR/LOCK; -errno for I/O;
 * -PROF_EFORMAT/-PROF_ECORRUPT when the WAL header is not ours (the files
 * are left untouched). @err names the file.
 */
int store_open(const char *dir, struct store **out, struct prof_err *err);

/**
 * store_open_mem() - a store in memory only: no directory, no WAL, no
 * blocks, one head that ingest adds to (store_get_head gives it, for
 * tests that fill it with store_head_add). Nothing is durable; flush,
 * compaction and retention fail with -EROFS. For tests and one-shot CLI
 * queries over files.
 */
int store_open_mem(struct store **out);

/**
 * store_open_head() - store_open_mem over an existing head @h, which stays
 * the caller's: store_close does not free it, and the caller must not
 * free it before store_close. For tests that build a head by hand.
 */
int store_open_head(struct store_head *h, struct store **out);

/**
 * store_open_opts() - store_open with @o (NULL = defaults). Opening also
 * repairs what a crash left: removes unfinished (*.tmp) and condemned
 * (*.del) block directories and blocks already merged into another, and
 * skips WAL segments the blocks cover. A block that cannot be opened is
 * logged (file and offset) and left out; the rest of the store is used.
 * With o->read_only nothing on disk changes (no lock taken, torn tails
 * not truncated): for `profd store stats` on a live directory.
 */
int store_open_opts(const char *dir, const struct store_options *o, struct store **out,
		    struct prof_err *err);

/**
 * store_close() - stop the maintenance thread and close; the head is not
 * written as a block (its rows are in the WAL, which the next open
 * replays). NULL is allowed.
 */
void store_close(struct store *s);

/**
 * store_ingest_otlp() - decode an OTLP ExportProfilesServiceRequest
 * (protobuf, already inflated, @n bytes), check it, append it to the WAL
 * and make it durable, then add it to the head. Returns only after the
 * fdatasync, so a 0 return may be acknowledged to the client. An empty
 * request succeeds without touching the log. Errors, with @err saying
 * what is wrong: -PROF_ECORRUPT / -PROF_EFORMAT for bad input (nothing is
 * stored); -PROF_ETOOBIG over @max_samples samples (0 = no cap); -errno
 * when the log could not be written (nothing acknowledged). Thread-safe.
 */
int store_ingest_otlp(struct store *s, const void *data, size_t n, size_t max_samples,
		      struct store_ingest_result *res, struct prof_err *err);

/**
 * store_ingest_profiles() - store @n decoded profiles (model, any source:
 * pprof, JFR, folded, OTLP after signal control), with the durability of
 * store_ingest_otlp: each is checked (model_profile_validate,
 * store_head_check), the WAL gets one OTLP record, fdatasync, then the
 * head. @otlp (@otlp_len bytes) is the OTLP ExportProfilesServiceRequest
 * the profiles were decoded from, unchanged, which the WAL then keeps as
 * is; NULL makes the store encode the profiles (fmt_otlp_encode), so the
 * profiles must then survive an OTLP round trip (they do: otlp.h). The
 * profiles are only read, except that pending stacks (struct
 * model_pending, fmt_otlp_decode_pending) are resolved when the WAL needs
 * them encoded or the head has not seen one of them; otherwise the head
 * takes them by their keys. Profiles without samples add nothing; a call
 * with no sample at all succeeds without touching the log. Errors as
 * store_ingest_otlp (nothing is stored on error). Thread-safe.
 */
int store_ingest_profiles(struct store *s, const struct model_profile *const *p, size_t n,
			  const void *otlp, size_t otlp_len, struct store_ingest_result *res,
			  struct prof_err *err);

/**
 * store_ingest_pprof() - store_ingest_profiles for pushed pprof
 * profiles: @p[i] was decoded by fmt_pprof_decode from @src[i] (its
 * bytes, not gzip) and then given its time, duration, name and
 * attributes; the WAL gets one STORE_WAL_PPROF record (store/wal_pprof.h)
 * with those bytes and edits instead of an OTLP encoding, and replay
 * decodes them again. @src[i].data must stay unchanged until the call
 * returns. Same checks, durability and errors as store_ingest_profiles,
 * which it is for a store in memory only or on another backend (nothing
 * is logged there). Thread-safe.
 */
int store_ingest_pprof(struct store *s, const struct model_profile *const *p,
		       const struct store_pprof_src *src, size_t n, struct store_ingest_result *res,
		       struct prof_err *err);

/**
 * store_get_head() - the *active* head only (rows not yet flushed to a
 * block), lent until the next flush: queries use store_scan, which sees
 * the blocks too. Kept for tests and stats.
 */
struct store_head *store_get_head(struct store *s);

/** store_get_wal() - the log, for stats. Lent. */
struct store_wal *store_get_wal(struct store *s);

/* --- scan API ---------------------------------------------------------------------- */

/**
 * struct store_query - which rows a scan visits.
 *
 * Matchers apply to series labels and to per-sample attributes: in a
 * source (block or head) where some row's attribute set has a label named
 * like the matcher (the first 63 matchers are considered), the matcher is
 * evaluated per row on the row's value for that name, falling back to the
 * series label when the row's set lacks it; elsewhere it selects series
 * as before. So {thread.name="w1"} keeps the rows of thread w1 whatever
 * series they are in (Pyroscope and Parca users expect that).
 */
struct store_query {
	const char *type;	       /* profile type id; NULL = any */
	const struct store_matcher *m; /* all must hold; their match data is used */
	size_t nm;
	int64_t from_ns, to_ns; /* inclusive, unix ns */
};

/**
 * struct store_link_filter - trace-to-profile correlation (store_scan_ex):
 * keep only rows linked to that trace / span: an OTLP link with those
 * bytes, or a "trace_id" / "span_id" attribute (pprof labels) whose value
 * is the id in hex, either case. A NULL field matches any row.
 */
struct store_link_filter {
	const uint8_t *trace_id; /* 16 bytes, or NULL */
	const uint8_t *span_id;	 /* 8 bytes, or NULL */
};

/**
 * struct store_source - where the stack ids of a batch are defined: a
 * block's symbol tables or a head's dictionary. Stack ids are node ids
 * of @stacks (node 0 the root, parent < id); locations, functions,
 * mappings and strings are the tables of @dict (it has no samples).
 * @id is unique among the sources of one scan (a block id, or 1 for the
 * frozen head and 0 for the active head); @attrs[@nattrs] is the table
 * the rows' attrs ids index (entry 0 the empty set, @nattrs >= 1); @dict,
 * @stacks and @attrs are lent from source_begin to source_end.
 */
struct store_source {
	uint64_t id;
	bool is_head;
	const struct model_profile *dict;
	const struct store_stack_node *stacks;
	size_t nstacks;
	const struct store_attr_set *attrs;
	size_t nattrs;
};

/**
 * struct store_visitor - what a scan calls. Sources are visited one after
 * the other (blocks by time, then the frozen head, then the active head),
 * never interleaved, and only when they have selected series:
 * source_begin; series once per selected series of the source (@s is the
 * source's own series: its id is valid within the source only, the same
 * label set has another id in another source); then either rows (batches
 * of one series, after that series' series call; rows in time order for
 * blocks, arrival order for heads) or, for a totals scan, one totals call
 * with the per-stack sums of every selected row of the source (each
 * stack at most once, @n >= 1 entries, @nrows rows summed; no call when
 * no row was summed); then source_end.
 * Rows and totals hold only the rows that pass the per-row filters of the
 * query (per-sample matchers, trace and span); a series whose rows all
 * fail them may still get its series call.
 * Set at most one of rows and totals (neither: a series-only scan, which
 * reads no rows; a block series counts as selected when its time range
 * overlaps the query's). source_begin, series and source_end may be NULL.
 * A non-zero return stops the scan and is returned by it.
 */
/** struct store_step_sum - rows of one series in one step (see store_visitor.steps). */
struct store_step_sum {
	uint32_t step;
	int64_t value; /* their values' sum */
	uint64_t rows;
};

struct store_visitor {
	void *arg;
	int (*source_begin)(void *arg, const struct store_source *src);
	int (*series)(void *arg, const struct store_source *src, const struct store_series *s);
	int (*rows)(void *arg, const struct store_source *src, const struct store_series *s,
		    const struct store_row *rows, size_t n);
	int (*totals)(void *arg, const struct store_source *src, const struct store_stack_total *t,
		      size_t n, uint64_t nrows);
	int (*source_end)(void *arg, const struct store_source *src);
	/* rows form: the visitor reads no stack (every row's stack may be 0),
	 * so blocks skip decoding their stack column */
	bool rows_no_stacks;
	/* rows form, optional: a block page's rows in range summed per step
	 * (step k = [step_from_ns + k * step_ns, + step_ns - 1]) instead of
	 * handed over as rows, for pages without per-row attribute sets whose
	 * values are >= 0 and whose sums do not overflow (the sums are then
	 * those of the rows added one by one, saturating or not); other pages
	 * and the heads still go to @rows. Each call: one series, steps
	 * increasing, every rows > 0. */
	int (*steps)(void *arg, const struct store_source *src, const struct store_series *s,
		     const struct store_step_sum *v, size_t n);
	int64_t step_from_ns, step_ns; /* steps form: step_ns > 0 */
};

/** struct store_scan_stats - what a scan did (may be NULL). */
struct store_scan_stats {
	uint64_t sources, blocks, series, pages, rows;
	uint64_t rollup_series;	 /* series summed from a block's rollup, not its rows */
	uint64_t rollup_buckets; /* hour buckets summed from a block's hour rollup (RHRS) */
	uint64_t pages_corrupt;	 /* damaged pages skipped (logged with file and offset) */
	uint64_t blocks_failed;	 /* blocks whose symbols could not be read (logged) */
};

/**
 * store_scan() - visit the rows of @q over the head and every block
 * overlapping the range. The totals form decodes no timestamp for pages
 * wholly inside the range. A damaged page or block is skipped, logged
 * with its file and offset and counted in @st; the scan goes on (the rest
 * of the store stays queryable). Errors: -EINVAL when both rows and
 * totals are set, the visitor's non-zero return. Thread-safe; the matchers must not be used
 * by another thread meanwhile.
 */
int store_scan(struct store *s, const struct store_query *q, const struct store_visitor *v,
	       struct store_scan_stats *st, struct prof_err *err);

/**
 * store_scan_ex() - store_scan that also keeps only the rows passing @lf
 * (NULL = store_scan). Rows filtered by it or by per-sample matchers are
 * decoded and summed row by row (the totals form's dense fast path is
 * for unfiltered sources).
 */
int store_scan_ex(struct store *s, const struct store_query *q, const struct store_link_filter *lf,
		  const struct store_visitor *v, struct store_scan_stats *st, struct prof_err *err);

/**
 * store_types() - call @fn once per distinct profile type id that has rows
 * in [from_ns, to_ns] in the heads or the blocks, in byte order.
 * Returns 0 or @fn's non-zero return.
 */
int store_types(struct store *s, int64_t from_ns, int64_t to_ns,
		int (*fn)(void *arg, const char *type), void *arg);

/* --- maintenance ------------------------------------------------------------------- */

/**
 * store_flush() - write the head's rows to a block now (no-op when the
 * head is empty): rotate the WAL, freeze the head, write and publish the
 * block, checkpoint the WAL. A failure keeps the frozen head (queried,
 * and written again by the next flush). Errors: -errno with @err.
 */
int store_flush(struct store *s, struct prof_err *err);

/**
 * store_compact() - merge one group of blocks (see struct store_options:
 * blocks of one aligned window); *@merged (may be NULL) gets the number
 * of blocks merged, 0 when there was nothing to do. @force merges every
 * window with two blocks or more, closed or not.
 */
int store_compact(struct store *s, bool force, uint32_t *merged, struct prof_err *err);

/**
 * store_apply_retention() - delete the blocks whose newest row is older
 * than @now_ns - retention (no-op without a retention). *@deleted (may be
 * NULL) gets how many.
 */
int store_apply_retention(struct store *s, int64_t now_ns, uint32_t *deleted, struct prof_err *err);

/**
 * store_maintain() - one round of what the background thread does: flush
 * when the head is due, compact while there is work, apply retention.
 */
int store_maintain(struct store *s, int64_t now_ns, struct prof_err *err);

/** struct store_stats - sizes and counters, for logs, /metrics and `store stats`. */
struct store_stats {
	struct store_head_stats head; /* active + frozen heads */
	struct store_wal_stats wal;
	uint64_t blocks, block_rows, block_series, block_stacks, block_locations;
	uint64_t block_bytes;	      /* files of the blocks in the view */
	uint64_t blocks_broken;	      /* present on disk but not opened */
	int64_t min_ts_ns, max_ts_ns; /* over heads and blocks; INT64_MAX/MIN when empty */
	uint64_t flushes, flush_failures, compactions, blocks_deleted;
	/* A ClickHouse store (store/clickhouse.h): day partitions retention
	 * dropped, and retention rounds that failed (logged). */
	uint64_t partitions_dropped, retention_failures;
	uint64_t syms_cached_bytes;
	/* Replay (store_options.replay_background): */
	bool replaying; /* the WAL's old segments are still being read */
	uint64_t replay_done_bytes, replay_total_bytes; /* of those segments */
	int64_t replay_ns;				/* time replay took, or has taken so far */
	int64_t wal_oldest_ns; /* wall clock of the oldest record not yet in a block
				* (0 = none) */
};

/**
 * store_wait_replayed() - wait up to @timeout_ns (0: just look) for the
 * background replay to end. True when the store holds every acknowledged
 * sample (replay over, or never in the background), false while queries
 * would still miss some. Thread-safe.
 */
bool store_wait_replayed(struct store *s, int64_t timeout_ns);

/** store_get_stats() - a snapshot. Thread-safe. */
void store_get_stats(struct store *s, struct store_stats *st);

/* --- verification (`profd store check`) ------------------------------------------- */

/** enum store_check_level - a finding of store_check_dir. */
enum store_check_level {
	STORE_CHECK_OK,	     /* a block verified: @msg says what it holds */
	STORE_CHECK_NOTE,    /* an expected leftover the next open cleans up */
	STORE_CHECK_WARNING, /* a torn WAL tail: never acknowledged, nothing lost */
	STORE_CHECK_ERROR,   /* damage or inconsistency */
};

/** struct store_check_result - totals of store_check_dir. */
struct store_check_result {
	uint64_t blocks, block_rows, wal_segments, wal_records;
	uint64_t errors, warnings;
};

/**
 * store_check_dir() - verify the store in @dir without changing it (no
 * lock; run it on a stopped store, or expect blocks a live one deletes
 * meanwhile to be reported missing): every block completely
 * (store_block_check: checksums, structure, row and value totals), that
 * no two blocks hold the same WAL segment (a sample stored twice), the
 * checkpoint, and every WAL record not yet in a block (CRC, and that its
 * payload decodes and passes the checks ingest applies). Each finding is
 * passed to @report with the file and byte offset (-1 when none).
 * Returns 0 when no error was found, -PROF_ECORRUPT otherwise, or -errno
 * when @dir cannot be read.
 */
int store_check_dir(const char *dir,
		    void (*report)(void *arg, enum store_check_level lvl, const char *path,
				   int64_t offset, const char *msg),
		    void *arg, struct store_check_result *res);

/* --- per-block sizes (`profd store stats`) ---------------------------------------- */

/** struct store_block_sizes - one block of the view: what it holds and what its rollup costs. */
struct store_block_sizes {
	uint64_t id;
	uint32_t level; /* 1 = flushed from a head; more = compacted */
	int64_t min_ts_ns, max_ts_ns;
	uint64_t rows, series;
	uint64_t bytes;		   /* the block's four files */
	char rollup[5];		   /* "RHRS", "RSER" (older blocks) or "" (no rollup) */
	uint64_t rollup_bytes;	   /* that chunk in the samples file (after zstd) */
	uint64_t rollup_raw_bytes; /* the same before zstd */
};

/**
 * store_blocks_sizes() - a snapshot of the blocks in @s's view, in view
 * order (min_ts, id), into a new array @*out of @*n entries that the
 * caller frees (NULL when there are none). The sizes come from the
 * files' chunk tables read at open: nothing is read from disk. A block
 * with both RHRS and RSER reports RHRS (the one scans use).
 * Thread-safe. Errors: -ENOMEM.
 */
int store_blocks_sizes(struct store *s, struct store_block_sizes **out, size_t *n);

#endif
