// SPDX-License-Identifier: Apache-2.0
/*
 * block_check.c - `profd store check` for one block: every file's magic,
 * version and checksums, every page decoded, the rollups re-encoded from
 * the rows and compared.
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

/* --- verification ------------------------------------------------------------------------- */

int store_block_check(const char *dir, uint64_t *nrows_out, struct prof_err *err)
{
	static const char *const files[] = { "meta", "symbols", "index", "samples" };
	static const char *const magics[] = { STORE_BLOCK_MAGIC_META, STORE_BLOCK_MAGIC_SYMBOLS,
					      STORE_BLOCK_MAGIC_INDEX, STORE_BLOCK_MAGIC_SAMPLES };
	struct store_block *b = NULL;
	struct store_block_syms *sy = NULL;
	struct store_block_scratch sc = { 0 };
	uint64_t *seen = NULL, rows = 0, sum = 0;
	struct store_leaf_acc *racc = NULL;
	struct block_hours_enc he = { 0 };
	struct buf hbuf = BUF_INIT;
	int rc = 0;

	if (nrows_out)
		*nrows_out = 0;
	/* Whole-file checksums, except the samples file, whose frames are
	 * checked one by one below so a damaged one is named by its offset;
	 * its whole-file checksum comes last. */
	for (size_t i = 0; i + 1 < PROF_ARRAY_SIZE(files) && !rc; i++) {
		struct store_chunkfile f;
		char *path = xasprintf("%s/%s", dir, files[i]);

		rc = store_chunkfile_open(&f, path, magics[i], STORE_BLOCK_VERSION, true, err);
		free(path);
		if (!rc)
			store_chunkfile_close(&f);
	}
	if (!rc)
		rc = store_block_open(dir, &b, err);
	if (!rc)
		rc = store_block_syms_load(b, &sy, err);
	if (rc)
		goto out;
	/* Name in the directory == id in the meta. */
	{
		char name[17];
		const char *base = strrchr(dir, '/');

		store_block_dir_name(b->meta.id, name);
		base = base ? base + 1 : dir;
		if (strcmp(base, name)) {
			rc = CORRUPT(0, "%s/meta: id %s does not match the directory name", dir,
				     name);
			goto out;
		}
	}
	/* Attribute names: every set's names are listed in the index (SATK). */
	for (size_t i = 1; i < sy->nsets && b->attr_cols; i++)
		for (uint32_t j = 0; j < sy->sets[i].nlabels; j++)
			if (!store_block_has_attr_key(b, sy->sets[i].labels[j].name)) {
				rc = CORRUPT(
					0, "%s/index: SATK lacks attribute name \"%s\" of set %zu",
					dir, sy->sets[i].labels[j].name, i);
				goto out;
			}
	/* The rollups (RSER, RHRS), when present: decode, and equal the pages' sums below. */
	rc = store_block_rollup_load(b, sy, err);
	if (rc)
		goto out;
	racc = sy->rsum ? xcalloc(sy->nleaves + 1, sizeof(*racc)) : NULL;
	seen = xcalloc(sy->nleaves + 1, sizeof(uint64_t));
	/* Leaf rank -> node, inverted to count rows per leaf. */
	uint32_t *rank_of = xmalloc(sizeof(uint32_t) * (sy->nnodes + 1));
	memset(rank_of, 0xff, sizeof(uint32_t) * (sy->nnodes + 1));
	for (size_t r = 0; r < sy->nleaves; r++) {
		if (rank_of[sy->leaf_node[r]] != UINT32_MAX) {
			free(rank_of);
			rc = CORRUPT(0, "%s/symbols: LEAF: node %u is listed twice", dir,
				     sy->leaf_node[r]);
			goto out;
		}
		rank_of[sy->leaf_node[r]] = (uint32_t)r;
	}
	for (uint32_t p = 0; p < b->meta.npages && !rc; p++) {
		const struct store_block_page *pg = &b->pages[p];

		rc = store_block_page_rows(b, p, sy, INT64_MIN, INT64_MAX, &sc, err);
		if (rc)
			break;
		for (size_t i = 0; i < sc.rows.n; i++) {
			const struct store_row *r = &sc.rows.v[i];

			if ((i && r->ts_ns < sc.rows.v[i - 1].ts_ns) ||
			    r->ts_ns % b->meta.ts_resolution_ns) {
				rc = block_page_corrupt(
					b, pg, "timestamps not sorted or not rounded", err);
				break;
			}
			seen[rank_of[r->stack]]++;
			sum += (uint64_t)r->value;
			if (racc) {
				racc[rank_of[r->stack]].total =
					prof_add_sat(racc[rank_of[r->stack]].total, r->value);
				racc[rank_of[r->stack]].rows++;
			}
			if (sy->rh_width) {
				VEC_PUSH(&he.ts, r->ts_ns);
				VEC_PUSH(&he.rank, rank_of[r->stack]);
				VEC_PUSH(&he.val, r->value);
			}
		}
		rows += sc.rows.n;
		bool last = p + 1 == b->meta.npages || b->pages[p + 1].series != pg->series;
		if (sy->rh_width && last && !rc) {
			/* End of a series: its hour rollup is what the writer would
			 * encode from these rows, byte for byte. */
			uint64_t at = sy->rh_ser[pg->series], len = sy->rh_ser[pg->series + 1] - at;

			const struct store_chunkfile_entry *ce =
				store_chunkfile_find(&b->samples, "RHRS");

			buf_reset(&hbuf);
			block_hours_encode(&he, &hbuf, sy->rh_width);
			if (hbuf.len != len || memcmp(hbuf.p, sy->rh_raw + at, len))
				rc = CORRUPT(ce ? ce->offset : 0,
					     "%s/samples: RHRS: the hour rollup of series %u (at "
					     "byte %" PRIu64 " of the chunk's content) disagrees "
					     "with its pages",
					     dir, pg->series, at);
			block_hours_enc_reserve(&he, 0);
		}
		if (racc && last && !rc) {
			/* End of a series: its rollup entries are exactly its sums. */
			for (uint64_t e = sy->rsum_off[pg->series];
			     e < sy->rsum_off[pg->series + 1] && !rc; e++) {
				const struct store_block_rsum *x = &sy->rsum[e];

				if (racc[x->rank].total != x->total ||
				    racc[x->rank].rows != x->rows)
					rc = CORRUPT(
						0,
						"%s/samples: RSER: series %u, leaf %u: %" PRIu64
						" rows summing to %" PRId64
						", the pages hold %" PRIu64 " summing to %" PRId64,
						dir, pg->series, x->rank, x->rows, x->total,
						racc[x->rank].rows, racc[x->rank].total);
				racc[x->rank].total = 0;
				racc[x->rank].rows = 0;
			}
			for (size_t k = 0; k < sy->nleaves && !rc; k++)
				if (racc[k].rows)
					rc = CORRUPT(0,
						     "%s/samples: RSER: series %u lacks leaf %zu",
						     dir, pg->series, k);
		}
	}
	free(rank_of);
	if (rc)
		goto out;
	for (size_t r = 0; r < sy->nleaves; r++)
		if (seen[r] != sy->leaf_rows[r]) {
			rc = CORRUPT(0,
				     "%s/symbols: LEAF: leaf %zu counts %" PRIu64
				     " rows but the pages hold %" PRIu64,
				     dir, r, sy->leaf_rows[r], seen[r]);
			goto out;
		}
	if (rows != b->meta.nrows || sum != b->meta.value_sum ||
	    b->pages[0].first_ts_ns < b->meta.min_ts_ns) {
		rc = CORRUPT(0, "%s/meta: row count or value sum disagrees with the pages", dir);
		goto out;
	}
	{
		int64_t lo = INT64_MAX, hi = INT64_MIN;

		for (uint32_t s = 0; s < b->nseries; s++) {
			lo = PROF_MIN(lo, b->series[s].pub.min_ts_ns);
			hi = PROF_MAX(hi, b->series[s].pub.max_ts_ns);
		}
		if (lo != b->meta.min_ts_ns || hi != b->meta.max_ts_ns)
			rc = CORRUPT(0, "%s/meta: time range disagrees with the series", dir);
	}
	if (!rc)
		rc = store_chunkfile_verify(&b->samples, err);
	if (!rc && nrows_out)
		*nrows_out = rows;
out:
	free(seen);
	free(racc);
	block_hours_enc_release(&he);
	buf_release(&hbuf);
	store_block_scratch_release(&sc);
	store_block_syms_free(sy);
	store_block_free(b);
	return rc;
}
