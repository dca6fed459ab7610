// SPDX-License-Identifier: Apache-2.0
/*
 * block_syms.c - loading a block's symbols (the dictionary of strings,
 * mappings, functions, locations and stack nodes) and its rollups (RHRS
 * hour buckets, RSER per-series sums of older versions), each checked
 * as it is read.
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

/* --- symbols ------------------------------------------------------------------------ */

static int syms_chunk(const struct store_chunkfile *f, const char *id, struct buf *raw,
		      struct varint_rd *r, uint64_t *count, struct prof_err *err)
{
	const struct store_chunkfile_entry *e = store_chunkfile_find(f, id);
	int rc;

	if (!e)
		return CORRUPT(0, "%s: chunk %s missing", f->path, id);
	rc = store_chunkfile_read(f, e, STORE_BLOCK_MAX_CHUNK, raw, err);
	if (rc)
		return rc;
	varint_rd_init(r, raw->p, raw->len);
	*count = varint_rd_u64(r);
	if (r->bad || *count > raw->len + 1)
		return CORRUPT(e->offset, "%s: chunk %s: bad count", f->path, id);
	return 0;
}

static void hours_free(struct store_block_syms *sy)
{
	free(sy->rh_raw);
	free(sy->rh_dict);
	free(sy->rh_dict_off);
	free(sy->rh);
	free(sy->rh_off);
	free(sy->rh_ser);
	sy->rh_raw = NULL;
	sy->rh_dict = NULL;
	sy->rh_dict_off = sy->rh_off = sy->rh_ser = NULL;
	sy->rh = NULL;
	sy->rh_width = 0;
	sy->rh_len = 0;
}

/*
 * Chunk RHRS (hour rollup) into @sy->rh*: every count, rank and bucket is
 * checked against the index (the rows of a series' buckets add up to its
 * rows; its first and last buckets hold its first and last rows), so
 * store_block_hours_add trusts it.
 */
static int hours_load(const struct store_block *b, struct store_block_syms *sy,
		      struct prof_err *err)
{
	const struct store_chunkfile_entry *e = store_chunkfile_find(&b->samples, "RHRS");
	VEC(uint32_t) dict = { 0 };
	VEC(struct store_block_hour) hv = { 0 };
	struct varint_rd r;
	struct buf raw;
	int rc;

	hours_free(sy);
	if (!e)
		return 0;
	buf_init(&raw, 0);
	rc = store_chunkfile_read(&b->samples, e, STORE_BLOCK_MAX_CHUNK, &raw, err);
	if (rc) {
		buf_release(&raw);
		return rc;
	}
	varint_rd_init(&r, raw.p, raw.len);
	uint64_t width = varint_rd_u64(&r), ns = varint_rd_u64(&r);
	uint64_t *doff = xcalloc(b->nseries + 2, sizeof(uint64_t));
	uint64_t *hoff = xcalloc(b->nseries + 2, sizeof(uint64_t));
	uint64_t *ser = xcalloc(b->nseries + 2, sizeof(uint64_t));
	if (width == 0 || width > INT64_MAX || ns != b->nseries)
		r.bad = true;
	for (uint32_t s = 0; s < b->nseries && !r.bad; s++) {
		const struct store_series *se = &b->series[s].pub;

		ser[s] = varint_rd_offset(&r);
		uint64_t nd = varint_rd_u64(&r), rows = 0;
		doff[s] = dict.n;
		hoff[s] = hv.n;
		if (nd == 0 || nd > sy->nleaves || nd > varint_rd_left(&r)) {
			r.bad = true;
			break;
		}
		for (uint64_t k = 0; k < nd && !r.bad; k++) {
			uint64_t d = varint_rd_u64(&r), v = k ? dict.v[dict.n - 1] + 1 + d : d;

			if (v >= sy->nleaves || d >= sy->nleaves)
				r.bad = true;
			else
				VEC_PUSH(&dict, (uint32_t)v);
		}
		uint64_t nb = varint_rd_u64(&r);
		if (nb == 0 || nb > varint_rd_left(&r))
			r.bad = true;
		for (uint64_t j = 0; j < nb && !r.bad; j++) {
			struct store_block_hour h = { 0 };

			if (j == 0) {
				h.bucket = varint_rd_s64(&r);
			} else {
				__int128 x =
					(__int128)hv.v[hv.n - 1].bucket + 1 + varint_rd_u64(&r);

				if (x > INT64_MAX)
					r.bad = true;
				else
					h.bucket = (int64_t)x;
			}
			h.value = varint_rd_s64(&r);
			h.off = varint_rd_offset(&r);
			for (uint64_t k = 0; k < nd && !r.bad; k++) {
				uint64_t c = varint_rd_u64(&r);

				if (c > se->nrows || (h.nrows += c) > se->nrows)
					r.bad = true;
				if (c && !h.value)
					(void)varint_rd_s64(&r);
			}
			if (h.nrows == 0 || (rows += h.nrows) > se->nrows)
				r.bad = true;
			VEC_PUSH(&hv, h);
		}
		if (!r.bad && (rows != se->nrows ||
			       hv.v[hoff[s]].bucket != floor_div(se->min_ts_ns, (int64_t)width) ||
			       hv.v[hv.n - 1].bucket != floor_div(se->max_ts_ns, (int64_t)width)))
			r.bad = true;
	}
	ser[b->nseries] = varint_rd_offset(&r);
	doff[b->nseries] = dict.n;
	hoff[b->nseries] = hv.n;
	if (r.bad || varint_rd_left(&r)) {
		size_t at = varint_rd_offset(&r);

		free(doff);
		free(hoff);
		free(ser);
		VEC_FREE(&dict);
		VEC_FREE(&hv);
		buf_release(&raw);
		return CORRUPT(e->offset,
			       "%s: chunk RHRS at offset %" PRIu64
			       " is invalid near byte %zu of its content (series, buckets, ranks "
			       "or row counts disagree with the index)",
			       b->samples.path, e->offset, at);
	}
	sy->rh_width = (int64_t)width;
	sy->rh_len = raw.len;
	sy->rh_raw = (uint8_t *)buf_detach(&raw, NULL);
	sy->rh_dict = dict.v ? dict.v : xcalloc(1, sizeof(uint32_t));
	sy->rh_dict_off = doff;
	sy->rh = hv.v ? hv.v : xcalloc(1, sizeof(*sy->rh));
	sy->rh_off = hoff;
	sy->rh_ser = ser;
	sy->bytes += sy->rh_len + dict.n * sizeof(uint32_t) + hv.n * sizeof(*hv.v) +
		     3 * (b->nseries + 2) * sizeof(uint64_t);
	return 0;
}

/* Chunk RSER (older versions' rollup) into @sy->rsum / rsum_off. */
static int rser_load(const struct store_block *b, struct store_block_syms *sy, struct prof_err *err)
{
	const struct store_chunkfile_entry *e = store_chunkfile_find(&b->samples, "RSER");
	VEC(struct store_block_rsum) v = { 0 };
	struct varint_rd r;
	struct buf raw;
	int rc;

	free(sy->rsum);
	free(sy->rsum_off);
	sy->rsum = NULL;
	sy->rsum_off = NULL;
	if (!e)
		return 0;
	buf_init(&raw, 0);
	rc = store_chunkfile_read(&b->samples, e, STORE_BLOCK_MAX_CHUNK, &raw, err);
	if (rc) {
		buf_release(&raw);
		return rc;
	}
	varint_rd_init(&r, raw.p, raw.len);
	uint64_t ns = varint_rd_u64(&r);
	uint64_t *off = xcalloc(b->nseries + 2, sizeof(uint64_t));
	if (r.bad || ns != b->nseries)
		r.bad = true;
	for (uint32_t s = 0; s < b->nseries && !r.bad; s++) {
		uint64_t k = varint_rd_u64(&r), rows = 0, prev = 0;

		if (k > varint_rd_left(&r) || k > sy->nleaves) {
			r.bad = true;
			break;
		}
		off[s] = v.n;
		for (uint64_t j = 0; j < k && !r.bad; j++) {
			uint64_t d = varint_rd_u64(&r), rank = j ? prev + 1 + d : d;
			struct store_block_rsum x = { (uint32_t)rank, varint_rd_s64(&r),
						      varint_rd_u64(&r) };

			if (rank >= sy->nleaves || x.rows == 0 || x.rows > b->series[s].pub.nrows)
				r.bad = true;
			prev = rank;
			rows += x.rows;
			VEC_PUSH(&v, x);
		}
		if (rows != b->series[s].pub.nrows)
			r.bad = true;
	}
	off[b->nseries] = v.n;
	buf_release(&raw);
	if (r.bad || varint_rd_left(&r)) {
		free(off);
		VEC_FREE(&v);
		return CORRUPT(e->offset,
			       "%s: chunk RSER at offset %" PRIu64
			       " is invalid (series, ranks or row counts disagree with the index)",
			       b->samples.path, e->offset);
	}
	sy->rsum = v.v ? v.v : xcalloc(1, sizeof(*sy->rsum));
	sy->rsum_off = off;
	sy->bytes += v.n * sizeof(*v.v) + (b->nseries + 2) * sizeof(uint64_t);
	return 0;
}

int store_block_rollup_load(const struct store_block *b, struct store_block_syms *sy,
			    struct prof_err *err)
{
	/* Each on its own: a damaged one does not take the other with it. */
	int rc = hours_load(b, sy, err), rc2;
	struct prof_err e2;

	prof_err_init(&e2);
	rc2 = rser_load(b, sy, rc ? &e2 : err);
	return rc ? rc : rc2;
}

int store_block_syms_load(const struct store_block *b, struct store_block_syms **out,
			  struct prof_err *err)
{
	struct store_block_syms *sy = xcalloc(1, sizeof(*sy));
	struct model_profile *d = &sy->dict;
	struct store_chunkfile f;
	struct varint_rd r;
	struct buf raw;
	uint64_t n;
	char *path = xasprintf("%s/symbols", b->dir);
	int rc;

	*out = NULL;
	model_profile_init(d);
	buf_init(&raw, 0);
	rc = store_chunkfile_open(&f, path, STORE_BLOCK_MAGIC_SYMBOLS, STORE_BLOCK_VERSION, true,
				  err);
	free(path);
	if (rc)
		goto fail_nofile;
#define BAD(id, ...)                                                                   \
	do {                                                                           \
		const struct store_chunkfile_entry *e_ = store_chunkfile_find(&f, id); \
		rc = CORRUPT(e_ ? e_->offset : 0, "%s: chunk %s: " __VA_ARGS__);       \
		goto fail;                                                             \
	} while (0)

	/* STRS */
	rc = syms_chunk(&f, "STRS", &raw, &r, &n, err);
	if (rc)
		goto fail;
	for (uint64_t i = 1; i < n; i++) {
		uint64_t len = varint_rd_u64(&r);
		const uint8_t *p = r.bad ? NULL : varint_rd_bytes(&r, len);

		if (!p)
			BAD("STRS", "string %" PRIu64 " runs past the chunk", f.path, "STRS", i);
		if (strtab_intern(&d->strings, (const char *)p, len) != i)
			BAD("STRS", "string %" PRIu64 " is a duplicate", f.path, "STRS", i);
	}
	uint32_t nstr = d->strings.n;
	/* MAPS */
	rc = syms_chunk(&f, "MAPS", &raw, &r, &n, err);
	if (rc)
		goto fail;
	for (uint64_t i = 1; i < n; i++) {
		struct model_mapping m = { 0 };
		uint8_t fl;

		m.memory_start = varint_rd_u64(&r);
		m.memory_limit = varint_rd_u64(&r);
		m.file_offset = varint_rd_u64(&r);
		m.filename = varint_rd_u32(&r);
		m.build_id = varint_rd_u32(&r);
		fl = varint_rd_byte(&r);
		if (r.bad || m.filename >= nstr || m.build_id >= nstr || fl > 15)
			BAD("MAPS", "mapping %" PRIu64 " is invalid", f.path, "MAPS", i);
		m.has_functions = fl & 1;
		m.has_filenames = fl >> 1 & 1;
		m.has_line_numbers = fl >> 2 & 1;
		m.has_inline_frames = fl >> 3 & 1;
		model_mapping_add(d, &m);
	}
	/* FUNC */
	rc = syms_chunk(&f, "FUNC", &raw, &r, &n, err);
	if (rc)
		goto fail;
	for (uint64_t i = 1; i < n; i++) {
		struct model_function fn;

		fn.name = varint_rd_u32(&r);
		fn.system_name = varint_rd_u32(&r);
		fn.filename = varint_rd_u32(&r);
		fn.start_line = varint_rd_s64(&r);
		if (r.bad || fn.name >= nstr || fn.system_name >= nstr || fn.filename >= nstr)
			BAD("FUNC", "function %" PRIu64 " is invalid", f.path, "FUNC", i);
		model_function_add(d, &fn);
	}
	/* LOCS */
	rc = syms_chunk(&f, "LOCS", &raw, &r, &n, err);
	if (rc)
		goto fail;
	if (n != b->meta.nlocations)
		BAD("LOCS", "%" PRIu64 " locations, the meta says %" PRIu64, f.path, "LOCS", n,
		    b->meta.nlocations);
	{
		uint64_t addr = 0;
		VEC(struct model_line) lines = { 0 };

		for (uint64_t i = 1; i < n; i++) {
			uint32_t mapping = varint_rd_u32(&r);
			uint8_t fl;
			uint32_t ft, nl;

			addr += (uint64_t)varint_rd_s64(&r);
			fl = varint_rd_byte(&r);
			ft = varint_rd_u32(&r);
			nl = varint_rd_u32(&r);
			if (r.bad || mapping >= d->mappings.n || fl > 1 || ft >= nstr ||
			    nl > varint_rd_left(&r)) {
				VEC_FREE(&lines);
				BAD("LOCS", "location %" PRIu64 " is invalid", f.path, "LOCS", i);
			}
			lines.n = 0;
			for (uint32_t j = 0; j < nl; j++) {
				struct model_line ln;

				ln.function = varint_rd_u32(&r);
				ln.line = varint_rd_s64(&r);
				ln.column = varint_rd_s64(&r);
				if (ln.function >= d->functions.n)
					r.bad = true;
				VEC_PUSH(&lines, ln);
			}
			if (r.bad) {
				VEC_FREE(&lines);
				BAD("LOCS", "location %" PRIu64 ": bad line", f.path, "LOCS", i);
			}
			uint32_t id = model_location_add(d, mapping, addr, lines.v, nl);
			d->locations.v[id].is_folded = fl & 1;
			d->locations.v[id].frame_type = ft;
		}
		VEC_FREE(&lines);
	}
	/* STCK */
	rc = syms_chunk(&f, "STCK", &raw, &r, &n, err);
	if (rc)
		goto fail;
	if (n != b->meta.nstacks || n == 0)
		BAD("STCK", "%" PRIu64 " nodes, the meta says %" PRIu64, f.path, "STCK", n,
		    b->meta.nstacks);
	sy->nodes = xmalloc(sizeof(*sy->nodes) * n);
	sy->nnodes = n;
	sy->nodes[0].parent = sy->nodes[0].loc = 0;
	for (uint64_t i = 1; i < n; i++) {
		uint64_t delta = varint_rd_u64(&r);
		uint32_t loc = varint_rd_u32(&r);

		if (r.bad || delta == 0 || delta > i || loc >= d->locations.n)
			BAD("STCK", "node %" PRIu64 " is invalid", f.path, "STCK", i);
		sy->nodes[i].parent = (uint32_t)(i - delta);
		sy->nodes[i].loc = loc;
	}
	/* LEAF */
	rc = syms_chunk(&f, "LEAF", &raw, &r, &n, err);
	if (rc)
		goto fail;
	if (n != b->meta.nleaves)
		BAD("LEAF", "%" PRIu64 " leaves, the meta says %" PRIu64, f.path, "LEAF", n,
		    b->meta.nleaves);
	sy->leaf_node = xmalloc(sizeof(uint32_t) * (n + 1));
	sy->leaf_rows = xmalloc(sizeof(uint64_t) * (n + 1));
	sy->nleaves = n;
	for (uint64_t i = 0; i < n; i++) {
		sy->leaf_node[i] = varint_rd_u32(&r);
		sy->leaf_rows[i] = varint_rd_u64(&r);
		if (r.bad || sy->leaf_node[i] >= sy->nnodes || sy->leaf_rows[i] == 0 ||
		    (i && sy->leaf_rows[i] > sy->leaf_rows[i - 1]))
			BAD("LEAF", "leaf %" PRIu64 " is invalid", f.path, "LEAF", i);
	}
	/* ATTR (optional): attribute sets, see encode_attrs. */
	sy->nsets = 1;
	if (store_chunkfile_find(&f, "ATTR")) {
		uint32_t nst;

		rc = store_chunkfile_read(&f, store_chunkfile_find(&f, "ATTR"),
					  STORE_BLOCK_MAX_CHUNK, &raw, err);
		if (rc)
			goto fail;
		varint_rd_init(&r, raw.p, raw.len);
		rc = block_strings_read(&r, &sy->set_strs, &nst,
					store_chunkfile_find(&f, "ATTR")->offset, f.path, err);
		if (rc)
			goto fail;
		n = varint_rd_u64(&r);
		if (r.bad || n == 0 || n > varint_rd_left(&r) + 1)
			BAD("ATTR", "bad set count", f.path, "ATTR");
		sy->sets = xcalloc(n + 1, sizeof(*sy->sets));
		sy->nsets = n;
		VEC(struct store_label) ls = { 0 };
		VEC(size_t) off = { 0 };
		for (uint64_t i = 1; i < n && !r.bad; i++) {
			uint64_t nl = varint_rd_u64(&r);

			if (nl > varint_rd_left(&r)) {
				r.bad = true;
				break;
			}
			VEC_PUSH(&off, ls.n);
			for (uint64_t j = 0; j < nl; j++) {
				uint32_t k = varint_rd_u32(&r), v = varint_rd_u32(&r);
				struct store_label l;

				if (r.bad || k == 0 || k >= nst || v >= nst ||
				    (j && strcmp(ls.v[ls.n - 1].name, sy->set_strs[k]) >= 0)) {
					r.bad = true;
					break;
				}
				l.name = sy->set_strs[k];
				l.value = sy->set_strs[v];
				VEC_PUSH(&ls, l);
			}
			uint8_t fl = varint_rd_byte(&r);
			sy->sets[i].nlabels = (uint32_t)nl;
			sy->sets[i].has_link = fl & 1;
			if (fl & ~1u)
				r.bad = true;
			if (!r.bad && (fl & 1)) {
				const uint8_t *p = varint_rd_bytes(&r, 24);

				if (!p) {
					r.bad = true;
					break;
				}
				memcpy(sy->sets[i].trace_id, p, 16);
				memcpy(sy->sets[i].span_id, p + 16, 8);
			}
		}
		sy->set_labels = ls.v;
		for (uint64_t i = 1; i < n && !r.bad; i++)
			sy->sets[i].labels = ls.v ? ls.v + off.v[i - 1] : NULL; /* links only */
		VEC_FREE(&off);
		if (r.bad || varint_rd_left(&r))
			BAD("ATTR", "a set is invalid (labels must be sorted and unique)", f.path,
			    "ATTR");
	}
	if (!sy->sets)
		sy->sets = xcalloc(1, sizeof(*sy->sets));
#undef BAD
	store_chunkfile_close(&f);
	buf_release(&raw);
	sy->bytes = sizeof(*sy) + sy->nnodes * sizeof(*sy->nodes) + sy->nleaves * 12 +
		    d->locations.n * sizeof(*d->locations.v) + d->lines.n * sizeof(*d->lines.v) +
		    d->functions.n * sizeof(*d->functions.v) +
		    d->mappings.n * sizeof(*d->mappings.v) + d->strings.n * 40;
	for (uint32_t i = 0; i < d->strings.n; i++)
		sy->bytes += d->strings.len[i];
	sy->bytes += sy->nsets * sizeof(*sy->sets);
	for (size_t i = 1; i < sy->nsets; i++)
		sy->bytes += sy->sets[i].nlabels * sizeof(struct store_label);
	{
		/* A damaged rollup costs the rollup only: scans read the rows. */
		struct prof_err rerr;

		prof_err_init(&rerr);
		if (store_block_rollup_load(b, sy, &rerr))
			log_error("store: ignoring the rollup of %s: %s", b->dir, rerr.msg);
	}
	*out = sy;
	return 0;
fail:
	store_chunkfile_close(&f);
fail_nofile:
	buf_release(&raw);
	store_block_syms_free(sy);
	return rc;
}

void store_block_syms_free(struct store_block_syms *sy)
{
	if (!sy)
		return;
	model_profile_release(&sy->dict);
	free(sy->nodes);
	free(sy->leaf_node);
	free(sy->leaf_rows);
	free(sy->sets);
	free(sy->set_labels);
	block_strings_free(sy->set_strs);
	free(sy->rsum);
	free(sy->rsum_off);
	hours_free(sy);
	free(sy);
}
