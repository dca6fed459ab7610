// SPDX-License-Identifier: Apache-2.0
/*
 * block_page.c - decoding a block's pages: the columns of one page into
 * rows, timestamps, per-step sums and totals, with the per-page
 * dictionaries checked against the block's tables.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "base/varint.h"
#include "store/block.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include "store/block_int.h"

/* --- page decoding ------------------------------------------------------------------------ */

static int read_col(const struct store_block *b, const struct store_block_page *pg, int c,
		    struct store_block_scratch *sc, struct prof_err *err)
{
	const struct store_block_col_ref *cr = &pg->col[c];
	struct buf *dst = &sc->col[c];

	if (!sc->dctx) {
		sc->dctx = ZSTD_createDCtx();
		PROF_ASSERT(sc->dctx);
	}
	if (dst->cap < (size_t)cr->raw_len + 1) {
		dst->p = xrealloc(dst->p, (size_t)cr->raw_len + 1);
		dst->cap = (size_t)cr->raw_len + 1;
	}
	dst->len = cr->raw_len;
	return store_chunkfile_read_frame(&b->samples, cr->offset, cr->stored_len, cr->raw_len,
					  cr->codec, cr->crc, sc->dctx, &sc->frame, dst->p, err);
}

/*
 * The time marks at the start of a TS column: mk[2k] = offset in the
 * delta stream of the delta after row (k+1)·STORE_BLOCK_TS_MARK, mk[2k+1]
 * = that row's time in resolution units since first_ts. On success *@d
 * is the delta stream and the return the number of marks; -1 when bad.
 */
static long read_marks(const struct buf *col, uint32_t nrows, struct store_block_scratch *sc,
		       struct varint_rd *d)
{
	struct varint_rd r;
	uint64_t nm, off = 0, t = 0;

	varint_rd_init(&r, col->p, col->len);
	nm = varint_rd_u64(&r);
	if (r.bad || nm != (nrows ? (nrows - 1) / STORE_BLOCK_TS_MARK : 0))
		return -1;
	VEC_RESERVE(&sc->marks, 2 * nm + 1);
	for (uint64_t k = 0; k < nm; k++) {
		off += varint_rd_u64(&r);
		t += varint_rd_u64(&r);
		sc->marks.v[2 * k] = off;
		sc->marks.v[2 * k + 1] = t;
	}
	if (r.bad || (nm && off > varint_rd_left(&r)))
		return -1;
	varint_rd_init(d, r.p, varint_rd_left(&r));
	return (long)nm;
}

/* Fast path of an unsigned varint: one byte. */
#define RD_U64(r) ((r)->p < (r)->end && *(r)->p < 0x80 ? *(r)->p++ : varint_rd_u64(r))

uint32_t store_block_hours_add(const struct store_block *b, const struct store_block_syms *sy,
			       uint32_t series, int64_t from_ns, int64_t to_ns,
			       struct store_leaf_acc *acc, int64_t *cov_lo, int64_t *cov_hi,
			       uint64_t *nrows)
{
	uint32_t used = 0;

	*cov_lo = INT64_MAX;
	*cov_hi = INT64_MIN;
	*nrows = 0;
	if (!sy->rh_width || series >= b->nseries)
		return 0;
	const struct store_series *se = &b->series[series].pub;
	const uint32_t *dict = sy->rh_dict + sy->rh_dict_off[series];
	size_t nd = sy->rh_dict_off[series + 1] - sy->rh_dict_off[series];
	__int128 w = sy->rh_width;
	/* No row lies outside [min_ts, max_ts]: a bound beyond those is no bound. */
	bool all_lo = from_ns <= se->min_ts_ns, all_hi = to_ns >= se->max_ts_ns;

	for (uint64_t h = sy->rh_off[series]; h < sy->rh_off[series + 1]; h++) {
		const struct store_block_hour *x = &sy->rh[h];
		__int128 lo = (__int128)x->bucket * w, hi = lo + w - 1;

		if (!all_lo && lo < from_ns)
			continue;
		if (!all_hi && hi > to_ns)
			break;
		if (!used)
			*cov_lo = lo < se->min_ts_ns ? se->min_ts_ns : (int64_t)lo;
		*cov_hi = hi > se->max_ts_ns ? se->max_ts_ns : (int64_t)hi;
		used++;
		*nrows += x->nrows;
		struct varint_rd r;
		varint_rd_init(&r, sy->rh_raw + x->off, sy->rh_len - x->off);
		if (x->value) {
			for (size_t k = 0; k < nd; k++) {
				uint64_t c = RD_U64(&r);

				if (c) {
					struct store_leaf_acc *a = &acc[dict[k]];

					a->total = prof_add_sat(a->total, mul_sat(c, x->value));
					a->rows += c;
				}
			}
		} else {
			for (size_t k = 0; k < nd; k++) {
				uint64_t c = RD_U64(&r);

				if (c) {
					struct store_leaf_acc *a = &acc[dict[k]];

					a->total = prof_add_sat(a->total, varint_rd_s64(&r));
					a->rows += c;
				}
			}
		}
	}
	return used;
}

int block_page_corrupt(const struct store_block *b, const struct store_block_page *pg,
		       const char *what, struct prof_err *err)
{
	return CORRUPT(pg->col[0].offset, "%s: page of series %u at offset %" PRIu64 ": %s",
		       b->samples.path, pg->series, pg->col[0].offset, what);
}

/*
 * Read the STK column header and page dictionary of @pg (see encode_stk)
 * into sc->ranks.v[@at .. @at + *@nd): leaf ranks, each checked against the
 * block's leaf table. *@width is the bytes per row index, *@planes the
 * first byte plane (nrows bytes per plane follow it).
 */
static int read_stk_dict(const struct store_block *b, const struct store_block_page *pg,
			 struct store_block_scratch *sc, uint32_t at, uint8_t *width, uint32_t *nd,
			 const uint8_t **planes, struct prof_err *err)
{
	const struct buf *col = &sc->col[STORE_COL_STK];
	uint32_t n = pg->nrows;
	struct varint_rd r;

	varint_rd_init(&r, col->p, col->len);
	uint8_t w = varint_rd_byte(&r);
	uint64_t k, nk = varint_rd_u64(&r);
	if (r.bad || w < 1 || w > 3 || nk == 0 || nk > n)
		return block_page_corrupt(b, pg, "bad stack column header", err);
	VEC_RESERVE(&sc->ranks, (size_t)at + nk);
	uint32_t *dict = sc->ranks.v + at;
	for (k = 0; k < nk; k++) {
		uint64_t d = RD_U64(&r), v = k ? (uint64_t)dict[k - 1] + 1 + d : d;

		if (v >= b->meta.nleaves) {
			r.bad = true;
			break;
		}
		dict[k] = (uint32_t)v;
	}
	if (r.bad || varint_rd_left(&r) != (size_t)w * n)
		return block_page_corrupt(b, pg, "bad stack dictionary", err);
	*width = w;
	*nd = (uint32_t)nk;
	*planes = r.p;
	return 0;
}

/*
 * Decode the STK column of page @pg (see encode_stk) into leaf ranks in
 * sc->ranks. Every index and rank is checked against the page dictionary
 * and the block's leaf table.
 */
static int decode_stk(const struct store_block *b, const struct store_block_page *pg, uint32_t r0,
		      uint32_t r1, struct store_block_scratch *sc, struct prof_err *err)
{
	uint32_t n = pg->nrows, m = r1 - r0, nd;
	const uint8_t *pl;
	uint8_t width;
	int rc = read_stk_dict(b, pg, sc, m, &width, &nd, &pl, err);

	if (rc)
		return rc;
	uint32_t *dict = sc->ranks.v + m;
	/* Only rows [r0, r1): the planes allow random access by row. */
	pl += r0;
	uint32_t *out = sc->ranks.v, max = 0;
	if (width == 1) {
		for (uint32_t i = 0; i < m; i++) {
			out[i] = pl[i];
			max = out[i] > max ? out[i] : max;
		}
	} else {
		for (uint32_t i = 0; i < m; i++) {
			uint32_t v = pl[i] | (uint32_t)pl[n + i] << 8;

			if (width == 3)
				v |= (uint32_t)pl[2 * n + i] << 16;
			out[i] = v;
			max = v > max ? v : max;
		}
	}
	if (m && max >= nd)
		return block_page_corrupt(b, pg, "stack index outside the page dictionary", err);
	for (uint32_t i = 0; i < m; i++)
		out[i] = dict[out[i]];
	return 0;
}

/*
 * The ATR column of page @p into sc->asets (one set id per row, checked
 * against @sy's set table); false in *@has when the page has none. With
 * @ndict, the rows get dictionary indexes instead, the dictionary (set
 * ids) follows them at sc->asets.v + nrows, and *@ndict is its size.
 */
static int decode_atr(const struct store_block *b, uint32_t p, const struct store_block_syms *sy,
		      struct store_block_scratch *sc, bool *has, uint32_t *ndict,
		      struct prof_err *err)
{
	const struct store_block_page *pg = &b->pages[p];
	const struct store_block_col_ref *cr = b->attr_cols ? &b->attr_cols[p] : NULL;
	struct buf *dst = &sc->acol;
	uint32_t n = pg->nrows;
	struct varint_rd r;
	int rc;

	*has = false;
	if (!cr || (!cr->raw_len && !cr->stored_len && !cr->offset))
		return 0;
	if (!sc->dctx) {
		sc->dctx = ZSTD_createDCtx();
		PROF_ASSERT(sc->dctx);
	}
	if (dst->cap < (size_t)cr->raw_len + 1) {
		dst->p = xrealloc(dst->p, (size_t)cr->raw_len + 1);
		dst->cap = (size_t)cr->raw_len + 1;
	}
	dst->len = cr->raw_len;
	rc = store_chunkfile_read_frame(&b->samples, cr->offset, cr->stored_len, cr->raw_len,
					cr->codec, cr->crc, sc->dctx, &sc->frame, dst->p, err);
	if (rc)
		return rc;
	varint_rd_init(&r, dst->p, dst->len);
	uint8_t width = varint_rd_byte(&r);
	uint64_t nd = varint_rd_u64(&r);
	if (r.bad || width < 1 || width > 3 || nd == 0 || nd > n)
		return CORRUPT(cr->offset,
			       "%s: attribute column of page %u at offset %" PRIu64 ": bad header",
			       b->samples.path, p, cr->offset);
	VEC_RESERVE(&sc->asets, n + nd);
	uint32_t *dict = sc->asets.v + n, *out = sc->asets.v;
	for (uint64_t k = 0; k < nd && !r.bad; k++) {
		uint64_t d = varint_rd_u64(&r), v = k ? (uint64_t)dict[k - 1] + 1 + d : d;

		if (v >= sy->nsets)
			r.bad = true;
		else
			dict[k] = (uint32_t)v;
	}
	if (r.bad || varint_rd_left(&r) != (size_t)width * n)
		return CORRUPT(cr->offset,
			       "%s: attribute column of page %u at offset %" PRIu64
			       ": bad dictionary (a set outside the %zu of the symbols)",
			       b->samples.path, p, cr->offset, sy->nsets);
	const uint8_t *pl = r.p;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t v = pl[i];

		if (width > 1)
			v |= (uint32_t)pl[n + i] << 8;
		if (width > 2)
			v |= (uint32_t)pl[2 * n + i] << 16;
		if (v >= nd)
			return CORRUPT(cr->offset,
				       "%s: attribute column of page %u at offset %" PRIu64
				       ": index outside the page dictionary",
				       b->samples.path, p, cr->offset);
		out[i] = ndict ? v : dict[v];
	}
	if (ndict)
		*ndict = (uint32_t)nd;
	*has = true;
	return 0;
}

int store_block_page_rows(const struct store_block *b, uint32_t p,
			  const struct store_block_syms *sy, int64_t from_ns, int64_t to_ns,
			  struct store_block_scratch *sc, struct prof_err *err)
{
	const struct store_block_page *pg = &b->pages[p];
	struct varint_rd rt, rv;
	int64_t res = b->meta.ts_resolution_ns, ts = pg->first_ts_ns, v = 0;
	uint64_t run = 0, nleaves = sy->nleaves;
	int rc = 0;

	sc->rows.n = 0;
	for (int c = 0; c < STORE_NCOLS && !rc; c++)
		rc = read_col(b, pg, c, sc, err);
	if (rc)
		return rc;
	rc = decode_stk(b, pg, 0, pg->nrows, sc, err);
	if (rc)
		return rc;
	bool has_atr;
	rc = decode_atr(b, p, sy, sc, &has_atr, NULL, err);
	if (rc)
		return rc;
	const uint32_t *asets = has_atr ? sc->asets.v : NULL;
	VEC_RESERVE(&sc->rows, pg->nrows);
	if (read_marks(&sc->col[STORE_COL_TS], pg->nrows, sc, &rt) < 0)
		return block_page_corrupt(b, pg, "bad time marks", err);
	varint_rd_init(&rv, sc->col[STORE_COL_VAL].p, sc->col[STORE_COL_VAL].len);
	struct store_row *out = sc->rows.v;
	const uint32_t *ranks = sc->ranks.v;
	size_t k = 0;
	for (uint32_t i = 0; i < pg->nrows; i++) {
		if (i)
			ts = (int64_t)((uint64_t)ts + RD_U64(&rt) * (uint64_t)res);
		if (i && i % STORE_BLOCK_TS_MARK == 0) {
			const uint64_t *mk = sc->marks.v + 2 * (i / STORE_BLOCK_TS_MARK - 1);

			if (mk[0] != varint_rd_offset(&rt) ||
			    mk[1] != ((uint64_t)ts - (uint64_t)pg->first_ts_ns) / (uint64_t)res)
				return block_page_corrupt(
					b, pg, "time marks disagree with the times", err);
		}
		uint64_t rank = ranks[i];
		if (!run) {
			v = varint_rd_s64(&rv);
			run = varint_rd_u64(&rv);
			if (!run)
				rv.bad = true;
		}
		run--;
		if (rank >= nleaves || rv.bad || rt.bad)
			return block_page_corrupt(b, pg, "bad column data", err);
		if (ts >= from_ns && ts <= to_ns) {
			out[k].ts_ns = ts;
			out[k].value = v;
			out[k].stack = sy->leaf_node[rank];
			out[k].attrs = asets ? asets[i] : 0;
			k++;
		}
	}
	sc->rows.n = k;
	if (run || varint_rd_left(&rt) || varint_rd_left(&rv) || ts != pg->last_ts_ns)
		return block_page_corrupt(b, pg, "columns disagree with the page directory", err);
	return 0;
}

int store_block_page_times(const struct store_block *b, uint32_t p,
			   const struct store_block_syms *sy, int64_t from_ns, int64_t to_ns,
			   struct store_block_scratch *sc, struct prof_err *err)
{
	const struct store_block_page *pg = &b->pages[p];
	struct varint_rd rt, rv;
	int64_t res = b->meta.ts_resolution_ns, ts = pg->first_ts_ns, v = 0;
	uint64_t run = 0;
	int rc;

	sc->rows.n = 0;
	rc = read_col(b, pg, STORE_COL_TS, sc, err);
	if (!rc)
		rc = read_col(b, pg, STORE_COL_VAL, sc, err);
	if (rc)
		return rc;
	bool has_atr;
	rc = decode_atr(b, p, sy, sc, &has_atr, NULL, err);
	if (rc)
		return rc;
	const uint32_t *asets = has_atr ? sc->asets.v : NULL;
	VEC_RESERVE(&sc->rows, pg->nrows);
	if (read_marks(&sc->col[STORE_COL_TS], pg->nrows, sc, &rt) < 0)
		return block_page_corrupt(b, pg, "bad time marks", err);
	varint_rd_init(&rv, sc->col[STORE_COL_VAL].p, sc->col[STORE_COL_VAL].len);
	struct store_row *out = sc->rows.v;
	size_t k = 0;
	/* By stretches of one value (a VAL run) up to the next time mark. */
	for (uint32_t i = 0, n = pg->nrows; i < n;) {
		if (!run) {
			v = varint_rd_s64(&rv);
			run = varint_rd_u64(&rv);
			if (!run || rv.bad)
				return block_page_corrupt(b, pg, "bad column data", err);
		}
		uint32_t stop = PROF_MIN(n, (i / STORE_BLOCK_TS_MARK + 1) * STORE_BLOCK_TS_MARK);
		uint32_t m = (uint32_t)PROF_MIN((uint64_t)(stop - i), run);

		run -= m;
		for (uint32_t e = i + m; i < e; i++) {
			if (i)
				ts = (int64_t)((uint64_t)ts + RD_U64(&rt) * (uint64_t)res);
			if (i % STORE_BLOCK_TS_MARK == 0 && i) {
				const uint64_t *mk =
					sc->marks.v + 2 * (i / STORE_BLOCK_TS_MARK - 1);

				if (mk[0] != varint_rd_offset(&rt) ||
				    mk[1] != ((uint64_t)ts - (uint64_t)pg->first_ts_ns) /
						     (uint64_t)res)
					return block_page_corrupt(
						b, pg, "time marks disagree with the times", err);
			}
			struct store_row r = { ts, v, 0, asets ? asets[i] : 0 };

			out[k] = r;
			k += ts >= from_ns && ts <= to_ns;
		}
	}
	sc->rows.n = k;
	if (rt.bad || run || varint_rd_left(&rt) || varint_rd_left(&rv) || ts != pg->last_ts_ns)
		return block_page_corrupt(b, pg, "columns disagree with the page directory", err);
	return 0;
}

/*
 * Add @c rows of value @v to a step's (*@sum, *@cnt) and zero @c; false
 * when @v < 0 or the sum overflows (then the rows added one by one might
 * saturate: the caller reads the page as rows). With values >= 0 the sum
 * of c rows is c * v, and no partial sum overflows if the whole does not.
 */
static bool step_add(int64_t *sum, uint64_t *cnt, uint64_t *c, int64_t v)
{
	int64_t t;

	if (!*c)
		return true;
	if (v < 0 || __builtin_mul_overflow((int64_t)*c, v, &t) ||
	    __builtin_add_overflow(*sum, t, sum))
		return false;
	*cnt += *c;
	*c = 0;
	return true;
}

/* The sum of the eight bytes of @w, each < 0x80 (at most 1016). */
static inline uint64_t step_bytes_sum(uint64_t w)
{
	w = (w & 0x00ff00ff00ff00ffull) + (w >> 8 & 0x00ff00ff00ff00ffull);
	return w * 0x0001000100010001ull >> 48;
}

int store_block_page_steps(const struct store_block *b, uint32_t p, int64_t from_ns, int64_t to_ns,
			   int64_t step_from_ns, int64_t step_ns, void *out_vec,
			   struct store_block_scratch *sc, struct prof_err *err)
{
	VEC(struct store_step_sum) *out = out_vec;
	const struct store_block_page *pg = &b->pages[p];
	const struct store_block_col_ref *ar = b->attr_cols ? &b->attr_cols[p] : NULL;
	struct varint_rd rt, rv;
	int64_t res = b->meta.ts_resolution_ns, ts = pg->first_ts_ns, v = 0;
	int64_t lo = 0, hi = -1, sum = 0; /* the current step: [lo, hi] */
	uint64_t run = 0, cnt = 0, c = 0; /* c: rows of the step at value v, not yet in sum */
	uint32_t k = 0;
	size_t n0 = out->n;
	int rc;

	PROF_ASSERT(step_ns > 0 && from_ns >= step_from_ns);
	if (ar && (ar->raw_len || ar->stored_len || ar->offset))
		return 1; /* per-row attribute sets: the caller groups by them */
	rc = read_col(b, pg, STORE_COL_TS, sc, err);
	if (!rc)
		rc = read_col(b, pg, STORE_COL_VAL, sc, err);
	if (rc)
		return rc;
	if (read_marks(&sc->col[STORE_COL_TS], pg->nrows, sc, &rt) < 0)
		return block_page_corrupt(b, pg, "bad time marks", err);
	varint_rd_init(&rv, sc->col[STORE_COL_VAL].p, sc->col[STORE_COL_VAL].len);
	/* The deltas through a local cursor (1- and 2-byte varints inline: a
	 * delta under 16 s at 1 ms resolution), so the loop stays in registers. */
	const uint8_t *tp = rt.p, *te = rt.end;
	for (uint32_t i = 0, n = pg->nrows; i < n;) {
		if (!run) {
			v = varint_rd_s64(&rv);
			run = varint_rd_u64(&rv);
			if (!run || rv.bad)
				return block_page_corrupt(b, pg, "bad column data", err);
		}
		uint32_t stop = PROF_MIN(n, (i / STORE_BLOCK_TS_MARK + 1) * STORE_BLOCK_TS_MARK);
		uint32_t m = (uint32_t)PROF_MIN((uint64_t)(stop - i), run);

		run -= m;
		for (uint32_t e = i + m; i < e; i++) {
			/*
			 * Eight bytes of 1- and 2-byte deltas at once while the
			 * rows stay in the step and the range of the row before
			 * (times do not decrease within a page): their sum
			 * decides, no row needs its own time. Not across a time
			 * mark (i stops short of the next one).
			 */
			int64_t bound = PROF_MIN(hi, to_ns);
			while (i % STORE_BLOCK_TS_MARK && e - i >= 8 && te - tp >= 8 && ts >= lo &&
			       ts >= from_ns && ts <= bound) {
				uint64_t w, cont, hm, d8;

				memcpy(&w, tp, 8);
				cont = w & 0x8080808080808080ull; /* bytes a delta goes on from */
				if ((cont << 8 & cont) || cont >> 56)
					break; /* a 3-byte delta, or one past the eight bytes */
				hm = (cont << 8 >> 7) * 0xff; /* high parts of 2-byte deltas */
				w &= 0x7f7f7f7f7f7f7f7full;
				d8 = (step_bytes_sum(w & ~hm) + 128 * step_bytes_sum(w & hm)) *
				     (uint64_t)res;
				if (d8 > (uint64_t)bound - (uint64_t)ts)
					break;
				uint32_t r = 8 - (uint32_t)__builtin_popcountll(cont);

				ts = (int64_t)((uint64_t)ts + d8);
				tp += 8;
				i += r;
				c += r;
			}
			if (i >= e)
				break;
			if (i) {
				uint64_t d;

				if (tp < te && tp[0] < 0x80) {
					d = tp[0];
					tp++;
				} else if (te - tp >= 2 && tp[1] < 0x80) {
					d = (uint64_t)(tp[0] & 0x7f) | (uint64_t)tp[1] << 7;
					tp += 2;
				} else {
					rt.p = tp;
					d = varint_rd_u64(&rt);
					tp = rt.p;
				}
				ts = (int64_t)((uint64_t)ts + d * (uint64_t)res);
			}
			if (i % STORE_BLOCK_TS_MARK == 0 && i) {
				const uint64_t *mk =
					sc->marks.v + 2 * (i / STORE_BLOCK_TS_MARK - 1);

				if (mk[0] != (uint64_t)(tp - rt.start) ||
				    mk[1] != ((uint64_t)ts - (uint64_t)pg->first_ts_ns) /
						     (uint64_t)res)
					return block_page_corrupt(
						b, pg, "time marks disagree with the times", err);
			}
			if (ts < from_ns || ts > to_ns)
				continue;
			if (ts < lo || ts > hi) {
				if (!step_add(&sum, &cnt, &c, v))
					goto not_here;
				if (cnt) {
					struct store_step_sum x = { k, sum, cnt };

					VEC_PUSH(out, x);
				}
				uint64_t q =
					(uint64_t)((__int128)ts - step_from_ns) / (uint64_t)step_ns;

				if (q > UINT32_MAX)
					goto not_here;
				k = (uint32_t)q;
				lo = (int64_t)((__int128)step_from_ns + (__int128)k * step_ns);
				hi = (int64_t)((__int128)lo + step_ns - 1);
				sum = 0;
				cnt = 0;
			}
			c++;
		}
		if (!step_add(&sum, &cnt, &c, v)) /* the value may change */
			goto not_here;
	}
	if (rt.bad || run || tp != te || varint_rd_left(&rv) || ts != pg->last_ts_ns)
		return block_page_corrupt(b, pg, "columns disagree with the page directory", err);
	if (cnt) {
		struct store_step_sum x = { k, sum, cnt };

		VEC_PUSH(out, x);
	}
	return 0;
not_here:
	out->n = n0;
	return 1;
}

static int page_totals(const struct store_block *b, uint32_t p, int64_t from_ns, int64_t to_ns,
		       const struct store_block_syms *sy, store_block_keep_fn keep, void *karg,
		       struct store_leaf_acc *acc, uint64_t *nrows, struct store_block_scratch *sc,
		       struct prof_err *err);

int store_block_page_totals(const struct store_block *b, uint32_t p, int64_t from_ns, int64_t to_ns,
			    struct store_leaf_acc *acc, uint64_t *nrows,
			    struct store_block_scratch *sc, struct prof_err *err)
{
	return page_totals(b, p, from_ns, to_ns, NULL, NULL, NULL, acc, nrows, sc, err);
}

int store_block_page_totals_keep(const struct store_block *b, uint32_t p, int64_t from_ns,
				 int64_t to_ns, const struct store_block_syms *sy,
				 store_block_keep_fn keep, void *karg, struct store_leaf_acc *acc,
				 uint64_t *nrows, struct store_block_scratch *sc,
				 struct prof_err *err)
{
	return page_totals(b, p, from_ns, to_ns, sy, keep, karg, acc, nrows, sc, err);
}

/*
 * Rows [lo, hi) of page @pg when every one of them has the value @v (one
 * value run, the usual case of CPU profiles: a sample is worth the
 * sampling period): count the rows per page dictionary index with a
 * histogram over the STK planes (no leaf rank per row, no random access
 * into @acc), then add count x v to each used entry's leaf. Adding c rows
 * of one value with saturation at every step equals clamping the exact
 * sum once, so the totals are those of the row-by-row path.
 */
static int totals_uniform(const struct store_block *b, const struct store_block_page *pg,
			  uint32_t lo, uint32_t hi, int64_t v, struct store_leaf_acc *acc,
			  struct store_block_scratch *sc, struct prof_err *err)
{
	uint32_t n = pg->nrows, m = hi - lo, nd;
	const uint8_t *planes;
	uint8_t width;
	int rc = read_stk_dict(b, pg, sc, 0, &width, &nd, &planes, err);

	if (rc)
		return rc;
	uint32_t *dict = sc->ranks.v;
	/* The histogram: zero between calls; 4 x 256 counters for width 1
	 * (four interleaved copies, so repeats of a hot stack do not wait on
	 * each other's increments), 65 536 for width 2, nd for width 3. */
	size_t hn = width == 1 ? 1024 : width == 2 ? 65536 : nd;
	if (sc->hist.n < hn) {
		VEC_RESERVE(&sc->hist, hn);
		memset(sc->hist.v + sc->hist.n, 0, (hn - sc->hist.n) * sizeof(uint32_t));
		sc->hist.n = hn;
	}
	uint32_t *h = sc->hist.v;
	const uint8_t *p0 = planes + lo;
	bool bad = false;
	if (width == 1) {
		uint32_t k = 0;

		for (; k + 4 <= m; k += 4) {
			h[p0[k]]++;
			h[256 + p0[k + 1]]++;
			h[512 + p0[k + 2]]++;
			h[768 + p0[k + 3]]++;
		}
		for (; k < m; k++)
			h[p0[k]]++;
		for (uint32_t j = 0; j < 256; j++) {
			h[j] += h[256 + j] + h[512 + j] + h[768 + j];
			h[256 + j] = h[512 + j] = h[768 + j] = 0;
			if (j >= nd && h[j]) {
				bad = true;
				h[j] = 0;
			}
		}
	} else if (width == 2) {
		const uint8_t *p1 = p0 + n;
		uint32_t mx = 0;

		for (uint32_t k = 0; k < m; k++) {
			uint32_t x = p0[k] | (uint32_t)p1[k] << 8;

			h[x]++;
			mx = x > mx ? x : mx;
		}
		if (m && mx >= nd) {
			memset(h, 0, 65536 * sizeof(uint32_t));
			bad = true;
		}
	} else {
		const uint8_t *p1 = p0 + n, *p2 = p0 + 2 * (size_t)n;

		for (uint32_t k = 0; k < m; k++) {
			uint32_t x = p0[k] | (uint32_t)p1[k] << 8 | (uint32_t)p2[k] << 16;

			if (x < nd)
				h[x]++;
			else
				bad = true;
		}
	}
	for (uint64_t j = 0; j < nd; j++) {
		uint32_t c = h[j];

		if (!c)
			continue;
		h[j] = 0;
		struct store_leaf_acc *a = &acc[dict[j]];
		__int128 t = (__int128)a->total + (__int128)c * v;

		a->total = t > INT64_MAX ? INT64_MAX : t < INT64_MIN ? INT64_MIN : (int64_t)t;
		a->rows += c;
	}
	if (bad)
		return block_page_corrupt(b, pg, "stack index outside the page dictionary", err);
	return 0;
}

static int page_totals(const struct store_block *b, uint32_t p, int64_t from_ns, int64_t to_ns,
		       const struct store_block_syms *sy, store_block_keep_fn keep, void *karg,
		       struct store_leaf_acc *acc, uint64_t *nrows, struct store_block_scratch *sc,
		       struct prof_err *err)
{
	const struct store_block_page *pg = &b->pages[p];
	bool whole = pg->first_ts_ns >= from_ns && pg->last_ts_ns <= to_ns;
	uint32_t n = pg->nrows;
	uint64_t added = 0;
	int rc;

	*nrows = 0;
	rc = read_col(b, pg, STORE_COL_STK, sc, err);
	if (!rc)
		rc = read_col(b, pg, STORE_COL_VAL, sc, err);
	if (!rc && !whole)
		rc = read_col(b, pg, STORE_COL_TS, sc, err);
	if (rc)
		return rc;
	uint32_t lo = 0, hi = n;
	if (!whole) {
		/*
		 * Rows are sorted by time: the ones in range are [lo, hi). Start
		 * at the last time mark before from_ns, so only the rows in range
		 * (and up to STORE_BLOCK_TS_MARK before) are decoded.
		 */
		struct varint_rd d;
		int64_t res = b->meta.ts_resolution_ns, t = pg->first_ts_ns;
		long nm = read_marks(&sc->col[STORE_COL_TS], n, sc, &d);
		uint32_t i = 0;

		if (nm < 0)
			return block_page_corrupt(b, pg, "bad time marks", err);
		const uint64_t *mk = sc->marks.v;
		long lo_k = 0, hi_k = nm; /* marks [0, lo_k) are before from_ns */
		while (lo_k < hi_k) {
			long mid = (lo_k + hi_k) / 2;

			if ((int64_t)((uint64_t)pg->first_ts_ns + mk[2 * mid + 1] * (uint64_t)res) <
			    from_ns)
				lo_k = mid + 1;
			else
				hi_k = mid;
		}
		if (lo_k > 0) {
			i = (uint32_t)lo_k * STORE_BLOCK_TS_MARK;
			t = (int64_t)((uint64_t)pg->first_ts_ns + mk[2 * lo_k - 1] * (uint64_t)res);
			d.p = d.start + mk[2 * lo_k - 2];
		}
#define ADVANCE()                                                                \
	do {                                                                     \
		if (i + 1 >= n) {                                                \
			i = n;                                                   \
		} else {                                                         \
			t = (int64_t)((uint64_t)t + RD_U64(&d) * (uint64_t)res); \
			i++;                                                     \
		}                                                                \
	} while (0)
		while (i < n && t < from_ns)
			ADVANCE();
		lo = i;
		if (pg->last_ts_ns > to_ns) {
			/* Jump to the last time mark at or before to_ns (when ahead),
			 * so only up to STORE_BLOCK_TS_MARK rows are decoded there
			 * too, not every row of the range. */
			long a = 0, z = nm; /* marks [1, a] have times <= to_ns */
			while (a < z) {
				long mid = (a + z + 1) / 2;

				if ((int64_t)((uint64_t)pg->first_ts_ns +
					      mk[2 * mid - 1] * (uint64_t)res) <= to_ns)
					a = mid;
				else
					z = mid - 1;
			}
			if (a > 0 && (uint64_t)a * STORE_BLOCK_TS_MARK > i) {
				i = (uint32_t)a * STORE_BLOCK_TS_MARK;
				t = (int64_t)((uint64_t)pg->first_ts_ns +
					      mk[2 * a - 1] * (uint64_t)res);
				d.p = d.start + mk[2 * a - 2];
			}
			while (i < n && t <= to_ns)
				ADVANCE();
			hi = i;
		}
#undef ADVANCE
		if (d.bad || d.p > d.end)
			return block_page_corrupt(b, pg, "bad time column", err);
		if (lo > hi)
			lo = hi;
	}
	if (!keep) {
		/* One value over [lo, hi)? Then a histogram does (totals_uniform). */
		struct varint_rd rv;
		int64_t v0 = 0;
		bool uni = true, first = true;

		varint_rd_init(&rv, sc->col[STORE_COL_VAL].p, sc->col[STORE_COL_VAL].len);
		for (uint32_t i = 0; i < n;) {
			int64_t v = varint_rd_s64(&rv);
			uint64_t run = varint_rd_u64(&rv);

			if (rv.bad || run == 0 || run > n - i)
				return block_page_corrupt(b, pg, "bad value runs", err);
			if (i + run > lo && i < hi) {
				uni = uni && (first || v == v0);
				v0 = v;
				first = false;
			}
			i += (uint32_t)run;
		}
		if (varint_rd_left(&rv))
			return block_page_corrupt(b, pg, "columns disagree with the page directory",
						  err);
		if (uni) {
			if (hi > lo)
				rc = totals_uniform(b, pg, lo, hi, v0, acc, sc, err);
			if (!rc)
				*nrows = hi - lo;
			return rc;
		}
	}
	rc = decode_stk(b, pg, lo, hi, sc, err);
	if (rc)
		return rc;
	const uint32_t *rk = sc->ranks.v; /* rk[k - lo] for rows k in [lo, hi) */
	/* With a filter: the rows' sets (ATR) decide, one call per entry of the
	 * page's set dictionary; a rejected row's rank becomes meta.nleaves, a
	 * slot of @acc past the leaves that the caller empties. */
	if (keep) {
		bool has;
		uint32_t nd = 0;

		rc = decode_atr(b, p, sy, sc, &has, &nd, err);
		if (rc)
			return rc;
		uint32_t *w = sc->ranks.v;
		if (!has) {
			if (!keep(karg, 0))
				for (uint32_t k = lo; k < hi; k++)
					w[k - lo] = (uint32_t)b->meta.nleaves;
		} else {
			const uint32_t *idx = sc->asets.v, *dict = sc->asets.v + n;
			uint8_t pass[256], *pv = nd <= sizeof(pass) ? pass : xmalloc(nd);

			for (uint32_t j = 0; j < nd; j++)
				pv[j] = keep(karg, dict[j]);
			for (uint32_t k = lo; k < hi; k++)
				if (!pv[idx[k]])
					w[k - lo] = (uint32_t)b->meta.nleaves;
			if (pv != pass)
				free(pv);
		}
	}
	struct varint_rd rv;
	varint_rd_init(&rv, sc->col[STORE_COL_VAL].p, sc->col[STORE_COL_VAL].len);
	for (uint32_t i = 0; i < n;) {
		int64_t v = varint_rd_s64(&rv);
		uint64_t run = varint_rd_u64(&rv);

		if (rv.bad || run == 0 || run > n - i)
			return block_page_corrupt(b, pg, "bad value runs", err);
		uint32_t end = i + (uint32_t)run;
		uint32_t a = PROF_MAX(i, lo), z = PROF_MIN(end, hi);
		for (uint32_t k = a; k < z; k++) {
			if (k + 16 < z)
				__builtin_prefetch(&acc[rk[k + 16 - lo]], 1);
			acc[rk[k - lo]].total = prof_add_sat(acc[rk[k - lo]].total, v);
			acc[rk[k - lo]].rows++;
		}
		if (z > a)
			added += z - a;
		i = end;
	}
	if (varint_rd_left(&rv))
		return block_page_corrupt(b, pg, "columns disagree with the page directory", err);
	if (keep) {
		/* what went to the rejected slot is not counted */
		added -= acc[b->meta.nleaves].rows;
		acc[b->meta.nleaves].rows = 0;
		acc[b->meta.nleaves].total = 0;
	}
	*nrows = added;
	return 0;
}
