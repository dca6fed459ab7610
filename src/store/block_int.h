/* SPDX-License-Identifier: Apache-2.0 */
/*
 * block_int.h - what the parts of the block module share and nothing
 * else includes: block_write.c (writer), block_read.c (open, index,
 * series selection), block_syms.c (symbols and rollups), block_page.c
 * (page decoding) and block_check.c (verification). The format is in
 * block.h and docs/storage-format.md.
 */
#ifndef PROFD_STORE_BLOCK_INT_H
#define PROFD_STORE_BLOCK_INT_H

#include "base/buf.h"
#include "base/err.h"
#include "base/mem.h"
#include "base/varint.h"
#include "store/block.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "block structures are stored with memcpy: little-endian hosts only");
_Static_assert(offsetof(struct store_block_meta, level) == 112, "meta layout");
_Static_assert(offsetof(struct store_block_page, col) == 24, "page entry layout");

/* Fill the prof_err `err` in scope: -PROF_ECORRUPT at byte offset @off. */
#define CORRUPT(off, ...) prof_err_set(err, -PROF_ECORRUPT, (int64_t)(off), __VA_ARGS__)

/* floor(a / b) for b > 0, also for a < 0. */
static inline int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* @c rows of value @v summed with saturation (= the rows added one by one). */
static inline int64_t mul_sat(uint64_t c, int64_t v)
{
	int64_t r;

	if (c > INT64_MAX || __builtin_mul_overflow((int64_t)c, v, &r))
		return v > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/*
 * One series' rows (rounded timestamp, leaf rank, value; sorted by time)
 * and the scratch that encodes them; the writer and store_block_check
 * (which re-encodes a series from its pages and compares) share it.
 * Zero-initialised is empty; block_hours_enc_release frees it.
 */
struct block_hours_enc {
	VEC(int64_t) ts;
	VEC(uint32_t) rank;
	VEC(int64_t) val;
	uint32_t *local; /* leaf rank -> series dictionary index + 1; nlocal entries */
	size_t nlocal;
	VEC(uint32_t) dict;
	VEC(uint64_t) cnt;
	VEC(int64_t) tot;
};

/** Free what @e holds (it stays usable as an empty one). */
void block_hours_enc_release(struct block_hours_enc *e);
/** Empty the rows of @e and make room for @n. */
void block_hours_enc_reserve(struct block_hours_enc *e, size_t n);
/**
 * Append the RHRS record of the series in @e (docs/storage-format.md,
 * chunk RHRS; buckets of @width ns) to @out. block_write.c.
 */
void block_hours_encode(struct block_hours_enc *e, struct buf *out, int64_t width);

/**
 * Read a string table (a count, then (length, bytes) from entry 1; entry
 * 0 is "") from @r into *@out (*@nout entries, one allocation, freed with
 * block_strings_free); error offsets are @base plus the reader's, @what
 * names the table. Returns 0 or -PROF_ECORRUPT with @err set. block_read.c.
 */
int block_strings_read(struct varint_rd *r, char ***out, uint32_t *nout, uint64_t base,
		       const char *what, struct prof_err *err);
/** Free what block_strings_read returned; NULL is fine. */
void block_strings_free(char **s);

/**
 * Set @err to -PROF_ECORRUPT naming page @pg of @b and @what; returns
 * the code. block_page.c.
 */
int block_page_corrupt(const struct store_block *b, const struct store_block_page *pg,
		       const char *what, struct prof_err *err);

#endif
