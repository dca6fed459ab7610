/* SPDX-License-Identifier: Apache-2.0 */
/*
 * block.h - immutable columnar blocks: the head's content (or several
 * blocks merged by compaction) written once to a directory of four
 * chunk files (store/chunkfile.h) and never modified afterwards.
 *
 *   DIR/blocks/<16 hex digits id>/meta     PROFDMET  time range, counts, WAL range, sources
 *   DIR/blocks/<id>/symbols                PROFDSYM  strings, mappings, functions,
 *                                                    locations + lines, stack tree, leaves
 *   DIR/blocks/<id>/index                  PROFDIDX  series (sorted label sets),
 *                                                    postings per label pair
 *   DIR/blocks/<id>/samples                PROFDSMP  pages of rows: ts, stack, value columns
 *
 * The full byte layout, with OFFSET/SIZE/MEANING tables, is in
 * docs/storage-format.md ("Blocks"); the fixed-size structures are here
 * with _Static_asserts. Essentials:
 *
 *   - symbols are per block and hold only what the block's rows refer
 *     to; stack nodes are numbered in depth-first preorder (so a parent
 *     precedes its children and is usually the node just before);
 *   - rows reference a stack through a *leaf rank*: leaves (stack nodes
 *     that end some row's stack) are ranked by row count, most frequent
 *     first, so hot stacks get one-byte varints;
 *   - rows are sorted by (series, timestamp); a series' rows are cut into
 *     pages of at most page_rows rows, a page never spans two series;
 *     each page has three columns, each its own frame (zstd when that is
 *     smaller): TS (deltas in units of the block's timestamp resolution),
 *     STK (leaf ranks), VAL (run-length pairs of zigzag values);
 *   - timestamps are rounded down to the block's resolution (1 ms by
 *     default; 1 ns keeps them exactly);
 *   - per-sample attributes and links (struct store_attr_set) are a table
 *     in the symbols file (chunk ATTR) and an optional fourth column per
 *     page, ATR (chunk PATR of the samples file addresses it), holding a
 *     page dictionary of set ids like STK; a block whose rows have none
 *     has neither, so old blocks and old readers are unaffected; the
 *     index lists the attribute names (chunk SATK);
 *   - compaction adds an hour rollup (chunk RHRS of the samples file):
 *     per series and hour bucket, the rows (and total, when the bucket's
 *     values differ) of each stack of the series, so a totals scan takes
 *     the whole hours of its range from there and reads rows only for the
 *     partial hours at its ends; blocks of older versions may carry RSER
 *     (per series, whole-series totals) instead, which readers still use;
 *   - every file ends with a CRC-32 of all its bytes, every chunk and
 *     every page frame carries its own CRC-32, so damage is reported with
 *     the file and offset and, for a page, only that page is lost.
 *
 * Lifecycle: a writer creates DIR/blocks/<id>.tmp/, writes and fsyncs
 * the files, renames the directory to <id> and fsyncs DIR/blocks; a
 * crash leaves either a .tmp directory (removed at open) or a complete
 * block. A reader (store_block_open) keeps the meta, the index and the
 * page directory in memory; symbols are loaded on demand.
 *
 * Thread-safety: an open block is read-only; several threads may decode
 * pages at once, each with its own struct store_block_scratch.
 */
#ifndef PROF_STORE_BLOCK_H
#define PROF_STORE_BLOCK_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "model/profile.h"
#include "store/chunkfile.h"
#include "store/head.h"
#include "store/matcher.h"
#include "store/store.h"

#define STORE_BLOCK_VERSION	  1u
#define STORE_BLOCK_MAGIC_META	  "PROFDMET"
#define STORE_BLOCK_MAGIC_SYMBOLS "PROFDSYM"
#define STORE_BLOCK_MAGIC_INDEX	  "PROFDIDX"
#define STORE_BLOCK_MAGIC_SAMPLES "PROFDSMP"
#define STORE_BLOCK_DEFAULT_ROWS  65536u	    /* rows per page */
#define STORE_BLOCK_MAX_PAGE_ROWS (1u << 20)	    /* a reader refuses larger pages */
#define STORE_BLOCK_MAX_CHUNK	  ((size_t)1 << 31) /* raw bytes of one symbols/index chunk */
#define STORE_BLOCK_MAX_SOURCES	  65536u
#define STORE_BLOCK_TS_MARK	  1024u /* rows between the time marks of a TS column */
#define STORE_BLOCK_HOUR_NS	  (3600LL * 1000000000) /* default bucket of chunk RHRS */

/* Column numbers inside a page: frozen. */
enum store_block_col { STORE_COL_TS = 0, STORE_COL_STK = 1, STORE_COL_VAL = 2, STORE_NCOLS = 3 };

/*
 * Chunk META of the meta file: 128 bytes, little-endian, no padding.
 * Stored with memcpy on little-endian hosts (the only ones supported:
 * see the _Static_assert in block_int.h).
 */
struct store_block_meta {
	uint64_t id;		  /* block id, == the directory name in hex */
	int64_t min_ts_ns;	  /* smallest row timestamp (rounded) */
	int64_t max_ts_ns;	  /* largest row timestamp (rounded) */
	uint64_t nrows;		  /* rows in the samples file */
	uint64_t nseries;	  /* series in the index */
	uint64_t nstacks;	  /* stack tree nodes, root included */
	uint64_t nleaves;	  /* entries of the leaf table */
	uint64_t nlocations;	  /* locations, zero entry included */
	uint64_t npages;	  /* entries of the page directory */
	uint64_t wal_first;	  /* first WAL segment whose records are in here; 0 = none */
	uint64_t wal_last;	  /* last one; segments <= wal_last may be deleted */
	int64_t ts_resolution_ns; /* timestamps are multiples of this, >= 1 */
	int64_t created_ns;	  /* wall clock when written */
	uint64_t value_sum;	  /* sum of every row's value, modulo 2^64 */
	uint32_t level;		  /* 1 = flushed from the head; compaction: 1 + max of sources */
	uint32_t nsources;	  /* entries of chunk SRCS (compaction inputs) */
	uint64_t reserved;	  /* 0 */
};
_Static_assert(sizeof(struct store_block_meta) == 128, "block meta is 128 bytes on disk");

/** struct store_block_col_ref - where one column frame of a page lies (24 bytes). */
struct store_block_col_ref {
	uint64_t offset;     /* in the samples file */
	uint32_t stored_len; /* bytes in the file */
	uint32_t raw_len;    /* bytes after decompression */
	uint32_t crc;	     /* CRC-32 of the stored bytes */
	uint8_t codec;	     /* enum store_chunkfile_codec */
	uint8_t reserved[3];
};
_Static_assert(sizeof(struct store_block_col_ref) == 24, "column reference is 24 bytes");

/** struct store_block_page - one entry of chunk PAGE of the samples file (96 bytes). */
struct store_block_page {
	uint32_t series;     /* index of the series in the index file */
	uint32_t nrows;	     /* 1 .. STORE_BLOCK_MAX_PAGE_ROWS */
	int64_t first_ts_ns; /* timestamp of the first row */
	int64_t last_ts_ns;  /* timestamp of the last row (rows are sorted) */
	struct store_block_col_ref col[STORE_NCOLS];
};
_Static_assert(sizeof(struct store_block_page) == 96, "page directory entry is 96 bytes");

/** struct store_block_series - a series of an open block (in memory). */
struct store_block_series {
	struct store_series pub; /* id = index in the block; labels sorted by name */
	uint32_t first_page, npages;
};

/** struct store_block_syms - a block's symbols, decoded (see store_block_syms_load). */
struct store_block_syms {
	struct model_profile dict; /* strings, mappings, functions, locations, lines */
	struct store_stack_node *nodes;
	size_t nnodes;
	uint32_t *leaf_node; /* leaf rank -> node id */
	uint64_t *leaf_rows; /* leaf rank -> rows */
	size_t nleaves;
	struct store_attr_set *sets; /* chunk ATTR: nsets >= 1, entry 0 the empty set */
	size_t nsets;
	char **set_strs;		/* ATTR's own string table */
	struct store_label *set_labels; /* the sets' labels, back to back */
	/* chunk RSER of the samples file (rollup), or NULL: per series s, entries
	 * rsum_off[s] .. rsum_off[s + 1] - 1 of rsum (leaf rank, total, rows) */
	struct store_block_rsum *rsum;
	uint64_t *rsum_off;
	/* chunk RHRS of the samples file (hour rollup), or rh_width 0: per series
	 * s, its leaf ranks rh_dict[rh_dict_off[s] .. rh_dict_off[s + 1]) and its
	 * buckets rh[rh_off[s] .. rh_off[s + 1]), whose entries are varints in
	 * rh_raw (see store_block_hours_add) */
	int64_t rh_width; /* bucket width, ns */
	uint8_t *rh_raw;
	size_t rh_len;
	uint32_t *rh_dict;
	uint64_t *rh_dict_off;
	struct store_block_hour *rh;
	uint64_t *rh_off;
	uint64_t *rh_ser; /* per series, where its record starts in rh_raw (nseries + 1) */
	size_t bytes;	  /* memory held, for the cache */
};

/** struct store_block_hour - one time bucket of a series' hour rollup (chunk RHRS). */
struct store_block_hour {
	int64_t bucket; /* the rows with floor(ts / rh_width) == bucket */
	int64_t value;	/* every row of the bucket has this value; 0: entries carry totals */
	uint64_t off;	/* where its entries start in rh_raw */
	uint64_t nrows; /* rows of the series in the bucket, >= 1 */
};

/** struct store_block_rsum - one entry of a series' rollup (chunk RSER). */
struct store_block_rsum {
	uint32_t rank; /* leaf rank */
	int64_t total; /* sum of the series' values with that stack */
	uint64_t rows; /* rows summed */
};

/** struct store_block - an open block (see store_block_open). */
struct store_block {
	char *dir; /* DIR/blocks/<id> */
	struct store_block_meta meta;
	uint64_t *sources; /* meta.nsources ids */
	char **lstr;	   /* index strings */
	uint32_t nlstr;
	struct store_label *labels; /* all series' labels, back to back */
	struct store_block_series *series;
	uint32_t nseries;
	struct {
		uint32_t name, value; /* index strings */
		uint32_t off, n;      /* range of post_ids */
	} * pairs;
	uint32_t npairs;
	uint32_t *post_ids;
	struct store_block_page *pages;
	struct store_block_col_ref *attr_cols; /* chunk PATR: per page, or NULL (none) */
	const char **akeys;		       /* chunk SATK: attribute names (into lstr) */
	uint32_t nakeys;
	struct store_chunkfile samples;
	uint64_t bytes_on_disk; /* all four files */
};

/** struct store_block_scratch - per-thread decode buffers; zero-init, release when done. */
struct store_block_scratch {
	void *dctx; /* ZSTD_DCtx *, created on first use */
	struct buf frame, col[STORE_NCOLS], acol;
	VEC(struct store_row) rows;
	VEC(uint32_t) ranks;
	VEC(uint32_t) asets; /* attribute set id of each row of the page */
	VEC(uint64_t) marks;
	VEC(uint32_t) hist; /* per page dictionary index, rows; all zero between uses */
};

/** struct store_leaf_acc - per leaf rank, the sum of the values and the rows summed. */
struct store_leaf_acc {
	int64_t total;
	uint64_t rows;
};
void store_block_scratch_release(struct store_block_scratch *sc);

/* --- writing ---------------------------------------------------------------------- */

struct store_block_writer;

/** struct store_block_write_opts - knobs of the writer; zero fields take defaults. */
struct store_block_write_opts {
	int zstd_level;		  /* default 6 */
	int64_t ts_resolution_ns; /* default 1 ms */
	uint32_t page_rows;	  /* default STORE_BLOCK_DEFAULT_ROWS */
	bool rollup;		  /* write chunk RHRS: per-series, per-hour stack totals
				   * (compaction) */
	int64_t rollup_bucket_ns; /* RHRS bucket width (default STORE_BLOCK_HOUR_NS) */
	bool rser;		  /* also write chunk RSER (per-series stack totals), as
				   * versions before RHRS did: tests of reading old blocks */
};

/** struct store_block_info - what the writer cannot know from the rows. */
struct store_block_info {
	uint32_t level;
	uint64_t wal_first, wal_last;
	const uint64_t *sources;
	uint32_t nsources;
};

/**
 * store_block_writer_new() - start block @id in @blocks_dir: creates
 * <id>.tmp/ (removing a leftover one). Calling sequence: _symbols once,
 * _series once per series in increasing store_series_key_cmp order,
 * then _finish; _free at the end in every case (it removes the
 * temporary directory of an unfinished block). Errors: -errno.
 */
int store_block_writer_new(const char *blocks_dir, uint64_t id,
			   const struct store_block_write_opts *o, struct store_block_writer **out,
			   struct prof_err *err);

/**
 * store_block_writer_symbols() - write the symbols file from @dict and the
 * stack tree @nodes[@nnodes] (node 0 the root, parent < id). @leaf_rows
 * [node] is the number of rows that will name node as their stack; only
 * those nodes, their ancestors and the symbols they reach are written.
 * The rows given to _series must use node ids of this tree with
 * leaf_rows > 0. @sets[@nsets] (entry 0 the empty set; NULL/0 or 1 = no
 * attributes) is the attribute set table the rows' attrs ids index; it is
 * written as is (chunk ATTR) when it has more than the empty set. Nothing
 * is kept from the arguments.
 */
int store_block_writer_symbols(struct store_block_writer *w, const struct model_profile *dict,
			       const struct store_stack_node *nodes, size_t nnodes,
			       const uint64_t *leaf_rows, const struct store_attr_set *sets,
			       size_t nsets, struct prof_err *err);

/**
 * store_block_writer_series() - append series (@type, @labels sorted by
 * name) with @n >= 1 rows sorted by timestamp. Timestamps are rounded
 * down to the resolution here. Errors: -EINVAL when the series is out of
 * order or a row names a stack that is not a leaf; -errno for I/O.
 */
int store_block_writer_series(struct store_block_writer *w, const char *type,
			      const struct store_label *labels, uint32_t nlabels,
			      const struct store_row *rows, size_t n, struct prof_err *err);

/**
 * store_block_writer_finish() - write index and meta, fsync the files and
 * the directory, rename <id>.tmp to <id>, fsync @blocks_dir. On success
 * the block is durable and complete. A block with no rows is not written
 * (returns -ENODATA and removes the temporary directory).
 */
int store_block_writer_finish(struct store_block_writer *w, const struct store_block_info *info,
			      struct prof_err *err);

/** store_block_writer_free() - NULL is allowed; removes an unfinished block's files. */
void store_block_writer_free(struct store_block_writer *w);

/** store_block_dir_name() - "<16 hex digits>" for @id into @out (17 bytes). */
void store_block_dir_name(uint64_t id, char out[17]);

/** store_series_key_cmp() - order of series in a block: type, then labels pairwise. */
int store_series_key_cmp(const char *ta, const struct store_label *la, uint32_t na, const char *tb,
			 const struct store_label *lb, uint32_t nb);

/* --- reading ----------------------------------------------------------------------- */

/**
 * store_block_open() - open the block in directory @dir: meta and index
 * (whole-file CRCs checked) and the samples file's page directory.
 * *@out is the caller's (store_block_free). Errors: -errno,
 * -PROF_EFORMAT, -PROF_ECORRUPT with @err naming file and offset.
 */
int store_block_open(const char *dir, struct store_block **out, struct prof_err *err);
void store_block_free(struct store_block *b);

/**
 * store_block_read_meta() - read only the meta file of the block in @dir
 * (CRC checked), e.g. to learn its WAL range when the rest is damaged.
 */
int store_block_read_meta(const char *dir, struct store_block_meta *meta, uint64_t **sources,
			  struct prof_err *err);

/**
 * store_block_rollup_load() - decode the rollups of the samples file:
 * chunk RSER (per series, the totals and rows per leaf rank of all its
 * rows; written by older versions) into @sy->rsum / rsum_off, and chunk
 * RHRS (the same per series and hour bucket) into @sy->rh*; both need
 * @sy's leaf table; NULL / rh_width 0 when the block has none. store_block_syms_load calls it (and ignores a damaged
 * rollup, logged, so scans read the rows); store_block_check verifies it
 * against the pages. -PROF_ECORRUPT with the file and offset.
 */
int store_block_rollup_load(const struct store_block *b, struct store_block_syms *sy,
			    struct prof_err *err);

/**
 * store_block_hours_add() - add to @acc[leaf rank] the hour-rollup
 * buckets (chunk RHRS, loaded in @sy) of series @series whose rows all
 * lie in [from_ns, to_ns], i.e. the buckets the range covers once the
 * series' own time range is taken into account. Those buckets are
 * consecutive: *@cov_lo .. *@cov_hi gets the time span of their rows
 * (the rows there were added; the caller reads the rows of the range
 * outside it from the pages), *@nrows the rows added. Returns the number
 * of buckets added; 0 (and *@cov_lo > *@cov_hi) when none or when the
 * block has no RHRS. Saturating sums, as the pages' totals.
 */
uint32_t store_block_hours_add(const struct store_block *b, const struct store_block_syms *sy,
			       uint32_t series, int64_t from_ns, int64_t to_ns,
			       struct store_leaf_acc *acc, int64_t *cov_lo, int64_t *cov_hi,
			       uint64_t *nrows);

/**
 * store_block_syms_load() - decode the symbols file (CRC checked) into
 * *@out (caller's; store_block_syms_free). -PROF_ECORRUPT with the file
 * and offset when it is damaged or inconsistent with the meta.
 */
int store_block_syms_load(const struct store_block *b, struct store_block_syms **out,
			  struct prof_err *err);
void store_block_syms_free(struct store_block_syms *sy);

/**
 * store_block_select() - indexes of the series with profile type @type
 * (NULL = any) whose labels satisfy the @nm matchers and whose rows
 * overlap [from_ns, to_ns], ascending, appended to @out. Equality
 * matchers go through the postings. The matchers' match data is used.
 */
void store_block_select(const struct store_block *b, const char *type,
			const struct store_matcher *m, size_t nm, int64_t from_ns, int64_t to_ns,
			void *out_vec /* VEC(uint32_t) * */);

/** store_block_has_attr_key() - does some attribute set of @b have a label @name (SATK)? */
bool store_block_has_attr_key(const struct store_block *b, const char *name);

/**
 * store_block_page_rows() - decode page @p into sc->rows (stack = node id
 * through @sy's leaf table, attrs = set id in @sy->sets, 0 when the page
 * has no ATR column), keeping rows with from_ns <= ts <= to_ns.
 * -PROF_ECORRUPT naming file and offset for a damaged page.
 */
int store_block_page_rows(const struct store_block *b, uint32_t p,
			  const struct store_block_syms *sy, int64_t from_ns, int64_t to_ns,
			  struct store_block_scratch *sc, struct prof_err *err);

/**
 * store_block_page_times() - store_block_page_rows without the stacks:
 * every row's stack is 0 and the STK column is neither read nor checked
 * (a series that sums values per time step and group needs no stacks).
 * Times, values and attribute sets as store_block_page_rows; the same
 * errors for the columns it reads.
 */
int store_block_page_times(const struct store_block *b, uint32_t p,
			   const struct store_block_syms *sy, int64_t from_ns, int64_t to_ns,
			   struct store_block_scratch *sc, struct prof_err *err);

/**
 * store_block_page_steps() - the rows of page @p in [from_ns, to_ns]
 * summed per step (step k = [step_from_ns + k * step_ns, + step_ns - 1],
 * step_ns > 0, from_ns >= step_from_ns), appended to @out_vec
 * (VEC(struct store_step_sum) *; steps increasing, rows > 0): only the
 * TS and VAL columns are read. Returns 0, 1 when the page cannot be
 * summed so (it has per-row attribute sets, a value < 0, or a sum that
 * overflows: nothing appended; read its rows instead), or -PROF_ECORRUPT
 * naming file and offset for a damaged page.
 */
int store_block_page_steps(const struct store_block *b, uint32_t p, int64_t from_ns, int64_t to_ns,
			   int64_t step_from_ns, int64_t step_ns, void *out_vec,
			   struct store_block_scratch *sc, struct prof_err *err);

/**
 * store_block_page_totals() - add the values of page @p's rows in
 * [from_ns, to_ns] to @acc[leaf rank] (meta.nleaves entries); the TS
 * column is not decoded when the whole page is in range. *@nrows gets the
 * rows added. When the rows in range all have one value (a CPU profile's
 * page), they are counted per page dictionary entry with a histogram of
 * the stack column's byte planes and each entry adds count x value to its
 * leaf; otherwise the ranks are decoded into an array first, then summed
 * with prefetching, so the random accesses into @acc overlap. Both give
 * the saturating sums of adding row by row.
 */
int store_block_page_totals(const struct store_block *b, uint32_t p, int64_t from_ns, int64_t to_ns,
			    struct store_leaf_acc *acc, uint64_t *nrows,
			    struct store_block_scratch *sc, struct prof_err *err);

/** store_block_keep_fn - does a row with attribute set @set pass the query's filters? */
typedef bool (*store_block_keep_fn)(void *arg, uint32_t set);

/**
 * store_block_page_totals_keep() - store_block_page_totals for the rows
 * that also pass @keep (called once per run of equal sets of the page's
 * ATR column, set 0 when the page has none; @sy gives the set table to
 * check the column against). @acc needs meta.nleaves + 1 entries: the
 * last is scratch (left zero).
 */
int store_block_page_totals_keep(const struct store_block *b, uint32_t p, int64_t from_ns,
				 int64_t to_ns, const struct store_block_syms *sy,
				 store_block_keep_fn keep, void *karg, struct store_leaf_acc *acc,
				 uint64_t *nrows, struct store_block_scratch *sc,
				 struct prof_err *err);

/**
 * store_block_check() - verify the block in @dir completely: every file's
 * checksums and structure, every page decoded and consistent with the
 * index and the meta (row counts, time ranges, leaf ranks and counts,
 * value sum). 0 or the first problem in @err (file and offset).
 * *@nrows (may be NULL) gets the rows read.
 */
int store_block_check(const char *dir, uint64_t *nrows, struct prof_err *err);

#endif
