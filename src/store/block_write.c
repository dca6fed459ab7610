// SPDX-License-Identifier: Apache-2.0
/*
 * block_write.c - writing an immutable block (format: block.h and
 * docs/storage-format.md): symbols, rows cut into pages, the hour rollup,
 * the index and the meta, then the commit (temp directory, fsync, rename).
 *
 * The symbols are garbage-collected to what the rows reach (leaves with
 * rows, their ancestors, their locations and everything those name) and
 * renumbered: stack nodes in depth-first preorder, locations sorted by
 * (mapping, address) so addresses delta-encode to a few bytes,
 * mappings/functions/strings in order of first use. Rows arrive series by
 * series and are cut into pages as they come, so the writer holds one
 * series at a time, never the whole block.
 */
#include "base/compat.h"
#include "base/fs.h"
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

/* Round @ts down to a multiple of @res (floor, also for negative times). */
static int64_t ts_round(int64_t ts, int64_t res)
{
	int64_t m = ts % res;

	if (m < 0)
		m += res;
	if (ts < INT64_MIN + m)
		return ts;
	return ts - m;
}

/* ======================================================================== */
/* writer                                                                    */
/* ======================================================================== */

struct wseries {
	uint32_t type;
	uint32_t label_off, nlabels; /* pairs in w->labels */
	int64_t min_ts, max_ts;
	uint64_t nrows;
	uint32_t first_page, npages;
};

/* --- hour rollup (chunk RHRS) ------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

void block_hours_enc_release(struct block_hours_enc *e)
{
	VEC_FREE(&e->ts);
	VEC_FREE(&e->rank);
	VEC_FREE(&e->val);
	free(e->local);
	VEC_FREE(&e->dict);
	VEC_FREE(&e->cnt);
	VEC_FREE(&e->tot);
}

/* Empty the rows and make room for @n. */
void block_hours_enc_reserve(struct block_hours_enc *e, size_t n)
{
	e->ts.n = e->rank.n = e->val.n = 0;
	VEC_RESERVE(&e->ts, n);
	VEC_RESERVE(&e->rank, n);
	VEC_RESERVE(&e->val, n);
}

/*
 * Append the RHRS record of the series in @e (see docs/storage-format.md,
 * chunk RHRS) to @out: its leaf ranks as an ascending dictionary, then per
 * bucket of @width ns holding rows: the bucket number, the common value of
 * its rows (0 when they differ) and, per dictionary entry, its rows (and
 * total when the value is not common). Every entry is written, 0 for a
 * stack without rows in the bucket: the stacks of a process recur hour
 * after hour, so that costs less than naming the present ones, and the
 * zeros of sparse buckets compress to little.
 */
void block_hours_encode(struct block_hours_enc *e, struct buf *out, int64_t width)
{
	size_t n = e->ts.n;

	e->dict.n = 0;
	for (size_t i = 0; i < n; i++) {
		uint32_t r = e->rank.v[i];

		if (r >= e->nlocal) {
			size_t m = PROF_MAX((size_t)r + 1, 2 * e->nlocal);

			e->local = xrealloc(e->local, m * sizeof(*e->local));
			memset(e->local + e->nlocal, 0, (m - e->nlocal) * sizeof(*e->local));
			e->nlocal = m;
		}
		if (!e->local[r]) {
			e->local[r] = 1;
			VEC_PUSH(&e->dict, r);
		}
	}
	qsort(e->dict.v, e->dict.n, sizeof(uint32_t), cmp_u32);
	size_t nd = e->dict.n;
	buf_add_uvarint(out, nd);
	for (size_t k = 0; k < nd; k++) {
		e->local[e->dict.v[k]] = (uint32_t)k + 1;
		buf_add_uvarint(out, k ? e->dict.v[k] - e->dict.v[k - 1] - 1 : e->dict.v[k]);
	}
	VEC_RESERVE(&e->cnt, nd + 1);
	VEC_RESERVE(&e->tot, nd + 1);
	memset(e->cnt.v, 0, nd * sizeof(uint64_t));
	memset(e->tot.v, 0, nd * sizeof(int64_t));
	/* The rows are sorted by time: a bucket ends at the first row past its
	 * last ns (a compare per row, not a division). */
	uint64_t nb = 0;
	for (size_t i = 0; i < n; nb++) {
		__int128 end = (__int128)floor_div(e->ts.v[i], width) * width + width - 1;

		while (i < n && e->ts.v[i] <= end)
			i++;
	}
	buf_add_uvarint(out, nb);
	int64_t prev = 0;
	for (size_t i = 0, j; i < n; i = j) {
		int64_t bk = floor_div(e->ts.v[i], width), u = e->val.v[i];
		__int128 end = (__int128)bk * width + width - 1;

		for (j = i; j < n && e->ts.v[j] <= end; j++) {
			uint32_t k = e->local[e->rank.v[j]] - 1;

			e->cnt.v[k]++;
			e->tot.v[k] = prof_add_sat(e->tot.v[k], e->val.v[j]);
			if (e->val.v[j] != u)
				u = 0;
		}
		if (i == 0)
			buf_add_svarint(out, bk);
		else
			buf_add_uvarint(out, (uint64_t)bk - (uint64_t)prev - 1);
		prev = bk;
		buf_add_svarint(out, u);
		for (size_t k = 0; k < nd; k++) {
			buf_add_uvarint(out, e->cnt.v[k]);
			if (!u && e->cnt.v[k])
				buf_add_svarint(out, e->tot.v[k]);
			e->cnt.v[k] = 0;
			e->tot.v[k] = 0;
		}
	}
	for (size_t k = 0; k < nd; k++)
		e->local[e->dict.v[k]] = 0;
}

struct store_block_writer {
	char *blocks_dir, *tmp_dir, *final_dir;
	uint64_t id;
	struct store_block_write_opts o;

	struct store_chunkfile_writer samples;
	bool samples_open;
	uint64_t region;

	/* from _symbols */
	bool syms_done;
	uint32_t *rank_of; /* old node id -> leaf rank + 1; 0 = not a leaf */
	size_t nold;
	uint64_t *leaf_want, *leaf_seen;
	uint64_t nstacks, nleaves, nlocations;

	struct strtab lstr;
	VEC(struct wseries) series;
	VEC(uint32_t) labels; /* name, value string ids */
	VEC(struct store_block_page) pages;
	int64_t min_ts, max_ts;
	uint64_t nrows, value_sum;
	struct buf col[STORE_NCOLS];
	uint32_t *page_ranks; /* leaf rank of each row of the page being written */
	struct buf tsd;	      /* TS deltas of the page being written */
	VEC(uint64_t) marks;  /* its time marks: (offset in tsd, time in resolution units) */
	uint32_t *page_local; /* leaf rank -> page dictionary index + 1 (0 = unused) */
	/* attribute sets (from _symbols) */
	size_t nsets;			       /* 0 or 1: rows carry no attributes */
	uint32_t *page_sets;		       /* set id of each row of the page being written */
	uint32_t *set_local;		       /* set id -> page dictionary index + 1 */
	VEC(struct store_block_col_ref) acols; /* PATR: per page */
	bool any_attrs;
	VEC(uint32_t) akeys; /* lstr ids of the attribute names, distinct */
	struct buf acol;
	/* hour rollup (o.rollup): chunk RHRS after its header, and scratch */
	bool rollup;
	struct buf rhrs;
	struct block_hours_enc he;
	/* o.rser: the series being written, summed by leaf rank, for chunk RSER */
	struct store_leaf_acc *racc;
	VEC(uint32_t) rtouched;
	struct buf rser; /* chunk RSER after its count */
	bool done;
};

int store_block_writer_new(const char *blocks_dir, uint64_t id,
			   const struct store_block_write_opts *o, struct store_block_writer **out,
			   struct prof_err *err)
{
	struct store_block_writer *w = xcalloc(1, sizeof(*w));
	char name[17];
	int rc;

	*out = NULL;
	if (o)
		w->o = *o;
	if (w->o.zstd_level == 0)
		w->o.zstd_level = 6;
	if (w->o.ts_resolution_ns <= 0)
		w->o.ts_resolution_ns = 1000000;
	if (w->o.page_rows == 0 || w->o.page_rows > STORE_BLOCK_MAX_PAGE_ROWS)
		w->o.page_rows = STORE_BLOCK_DEFAULT_ROWS;
	if (w->o.rollup_bucket_ns <= 0)
		w->o.rollup_bucket_ns = STORE_BLOCK_HOUR_NS;
	store_block_dir_name(id, name);
	w->id = id;
	w->blocks_dir = xstrdup(blocks_dir);
	w->tmp_dir = xasprintf("%s/%s.tmp", blocks_dir, name);
	w->final_dir = xasprintf("%s/%s", blocks_dir, name);
	w->min_ts = INT64_MAX;
	w->max_ts = INT64_MIN;
	strtab_init(&w->lstr);
	for (int c = 0; c < STORE_NCOLS; c++)
		buf_init(&w->col[c], 0);
	fs_rm_flat_dir(w->tmp_dir, NULL);
	if (mkdir(w->tmp_dir, 0755)) {
		rc = prof_err_set(err, -errno, -1, "block: mkdir %s: %s", w->tmp_dir,
				  strerror(errno));
		store_block_writer_free(w);
		return rc;
	}
	char *p = xasprintf("%s/samples", w->tmp_dir);
	rc = store_chunkfile_create(&w->samples, p, STORE_BLOCK_MAGIC_SAMPLES, STORE_BLOCK_VERSION,
				    w->o.zstd_level, err);
	free(p);
	if (rc) {
		store_block_writer_free(w);
		return rc;
	}
	w->samples_open = true;
	store_chunkfile_region_begin(&w->samples, "COLS", &w->region);
	*out = w;
	return 0;
}

void store_block_writer_free(struct store_block_writer *w)
{
	if (!w)
		return;
	if (w->samples_open)
		store_chunkfile_abort(&w->samples);
	if (!w->done && w->tmp_dir)
		fs_rm_flat_dir(w->tmp_dir, NULL);
	free(w->rank_of);
	free(w->page_ranks);
	free(w->page_local);
	free(w->page_sets);
	free(w->set_local);
	buf_release(&w->rhrs);
	block_hours_enc_release(&w->he);
	free(w->racc);
	VEC_FREE(&w->rtouched);
	buf_release(&w->rser);
	VEC_FREE(&w->acols);
	VEC_FREE(&w->akeys);
	buf_release(&w->acol);
	free(w->leaf_want);
	free(w->leaf_seen);
	strtab_release(&w->lstr);
	VEC_FREE(&w->series);
	VEC_FREE(&w->labels);
	VEC_FREE(&w->pages);
	for (int c = 0; c < STORE_NCOLS; c++)
		buf_release(&w->col[c]);
	buf_release(&w->tsd);
	VEC_FREE(&w->marks);
	free(w->blocks_dir);
	free(w->tmp_dir);
	free(w->final_dir);
	free(w);
}

/* --- symbols ---------------------------------------------------------------------- */

struct gc {
	const struct model_profile *d;
	uint32_t *str, *map, *fn; /* old -> new, UINT32_MAX = unused */
	uint32_t nstr, nmap, nfn;
	VEC(uint32_t) str_order, map_order, fn_order; /* new -> old */
};

static uint32_t gc_str(struct gc *g, uint32_t old)
{
	if (g->str[old] == UINT32_MAX) {
		g->str[old] = g->nstr++;
		VEC_PUSH(&g->str_order, old);
	}
	return g->str[old];
}

static uint32_t gc_map(struct gc *g, uint32_t old)
{
	if (g->map[old] == UINT32_MAX) {
		g->map[old] = g->nmap++;
		VEC_PUSH(&g->map_order, old);
	}
	return g->map[old];
}

static uint32_t gc_fn(struct gc *g, uint32_t old)
{
	if (g->fn[old] == UINT32_MAX) {
		g->fn[old] = g->nfn++;
		VEC_PUSH(&g->fn_order, old);
	}
	return g->fn[old];
}

static int cmp_loc(const void *a, const void *b, void *arg)
{
	const struct model_profile *d = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	const struct model_location *lx = &d->locations.v[x], *ly = &d->locations.v[y];

	if (lx->mapping != ly->mapping)
		return lx->mapping < ly->mapping ? -1 : 1;
	if (lx->address != ly->address)
		return lx->address < ly->address ? -1 : 1;
	return x < y ? -1 : x > y;
}

struct leafsort {
	uint32_t node; /* new id */
	uint32_t old;
	uint64_t rows;
};

static int cmp_leaf(const void *a, const void *b)
{
	const struct leafsort *x = a, *y = b;

	if (x->rows != y->rows)
		return x->rows > y->rows ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

static int put_chunk(struct store_chunkfile_writer *cf, const char *id, struct buf *b,
		     struct prof_err *err)
{
	int rc = store_chunkfile_add(cf, id, STORE_CHUNKFILE_ZSTD, b->p ? b->p : "", b->len, err);

	buf_reset(b);
	return rc;
}

/*
 * Chunk ATTR: a string table of its own (names and values), then varint
 * count C (= nsets), then sets 1 .. C - 1: varint nlabels, nlabels x
 * (varint name, varint value) string indexes with names strictly
 * increasing, one flags byte (bit 0: a link follows), and when linked the
 * 16-byte trace id and 8-byte span id. Names are also interned into the
 * index strings for chunk SATK.
 */
static void encode_attrs(struct store_block_writer *w, const struct store_attr_set *sets,
			 size_t nsets, struct buf *b)
{
	struct strtab t;
	struct buf body;

	strtab_init(&t);
	buf_init(&body, 0);
	buf_add_uvarint(&body, nsets);
	for (size_t i = 1; i < nsets; i++) {
		const struct store_attr_set *st = &sets[i];
		uint8_t fl = st->has_link ? 1 : 0;

		buf_add_uvarint(&body, st->nlabels);
		for (uint32_t j = 0; j < st->nlabels; j++) {
			uint32_t k = strtab_intern_cstr(&w->lstr, st->labels[j].name);
			bool seen = false;

			for (size_t q = 0; q < w->akeys.n && !seen; q++)
				seen = w->akeys.v[q] == k;
			if (!seen)
				VEC_PUSH(&w->akeys, k);
			buf_add_uvarint(&body, strtab_intern_cstr(&t, st->labels[j].name));
			buf_add_uvarint(&body, strtab_intern_cstr(&t, st->labels[j].value));
		}
		buf_add(&body, &fl, 1);
		if (st->has_link) {
			buf_add(&body, st->trace_id, 16);
			buf_add(&body, st->span_id, 8);
		}
	}
	buf_add_uvarint(b, t.n);
	for (uint32_t i = 1; i < t.n; i++) {
		buf_add_uvarint(b, t.len[i]);
		buf_add(b, t.s[i], t.len[i]);
	}
	buf_add(b, body.p ? body.p : "", body.len);
	buf_release(&body);
	strtab_release(&t);
}

int store_block_writer_symbols(struct store_block_writer *w, const struct model_profile *d,
			       const struct store_stack_node *nodes, size_t nnodes,
			       const uint64_t *leaf_rows, const struct store_attr_set *sets,
			       size_t nsets, struct prof_err *err)
{
	struct gc g = { .d = d };
	uint8_t *used = xcalloc(nnodes + 1, 1);
	uint32_t *newid = xmalloc(sizeof(uint32_t) * (nnodes + 1));
	uint32_t *cstart = xcalloc(nnodes + 2, sizeof(uint32_t));
	uint32_t *clist = NULL, *stack = NULL, *order = NULL, *locs = NULL, *locnew = NULL;
	struct leafsort *leaves = NULL;
	struct store_chunkfile_writer cf;
	struct buf b;
	size_t nused = 0, nleaves = 0, nlocs = 0;
	int rc;

	PROF_ASSERT(!w->syms_done && nnodes >= 1 && nnodes < UINT32_MAX);
	buf_init(&b, 0);

	/* Nodes reached: leaves with rows and their ancestors (parent < id). */
	used[0] = 1;
	for (size_t i = nnodes; i-- > 1;) {
		PROF_ASSERT(nodes[i].parent < i);
		if (leaf_rows[i])
			used[i] = 1;
		if (used[i])
			used[nodes[i].parent] = 1;
	}
	/* Children lists (CSR), then preorder numbering with an explicit stack. */
	for (size_t i = 1; i < nnodes; i++) {
		if (used[i]) {
			cstart[nodes[i].parent + 1]++;
			nused++;
		}
	}
	for (size_t i = 0; i < nnodes; i++)
		cstart[i + 1] += cstart[i];
	clist = xmalloc(sizeof(uint32_t) * (nused + 1));
	{
		uint32_t *fill = xmalloc(sizeof(uint32_t) * (nnodes + 1));

		memcpy(fill, cstart, sizeof(uint32_t) * (nnodes + 1));
		for (size_t i = 1; i < nnodes; i++)
			if (used[i])
				clist[fill[nodes[i].parent]++] = (uint32_t)i;
		free(fill);
	}
	stack = xmalloc(sizeof(uint32_t) * (nused + 2));
	order = xmalloc(sizeof(uint32_t) * (nused + 2)); /* new id -> old id */
	memset(newid, 0xff, sizeof(uint32_t) * (nnodes + 1));
	{
		size_t sp = 0, next = 0;

		stack[sp++] = 0;
		while (sp) {
			uint32_t n = stack[--sp];

			newid[n] = (uint32_t)next;
			order[next++] = n;
			for (uint32_t c = cstart[n + 1]; c-- > cstart[n];)
				stack[sp++] = clist[c];
		}
		PROF_ASSERT(next == nused + 1);
	}
	w->nstacks = nused + 1;

	/* Locations reached, sorted by (mapping, address); zero entry stays 0. */
	g.str = xmalloc(sizeof(uint32_t) * (d->strings.n + 1));
	g.map = xmalloc(sizeof(uint32_t) * (d->mappings.n + 1));
	g.fn = xmalloc(sizeof(uint32_t) * (d->functions.n + 1));
	memset(g.str, 0xff, sizeof(uint32_t) * (d->strings.n + 1));
	memset(g.map, 0xff, sizeof(uint32_t) * (d->mappings.n + 1));
	memset(g.fn, 0xff, sizeof(uint32_t) * (d->functions.n + 1));
	gc_str(&g, 0);
	gc_map(&g, 0);
	gc_fn(&g, 0);
	locnew = xmalloc(sizeof(uint32_t) * (d->locations.n + 1));
	memset(locnew, 0xff, sizeof(uint32_t) * (d->locations.n + 1));
	locs = xmalloc(sizeof(uint32_t) * (d->locations.n + 1));
	for (size_t k = 1; k <= nused; k++) {
		uint32_t l = nodes[order[k]].loc;

		PROF_ASSERT(l < d->locations.n);
		if (l && locnew[l] == UINT32_MAX) {
			locnew[l] = 0;
			locs[nlocs++] = l;
		}
	}
	qsort_r(locs, nlocs, sizeof(*locs), cmp_loc, (void *)d);
	locnew[0] = 0;
	for (size_t k = 0; k < nlocs; k++)
		locnew[locs[k]] = (uint32_t)k + 1;
	w->nlocations = nlocs + 1;
	/* Mappings, functions, strings in order of first use. */
	for (size_t k = 0; k < nlocs; k++) {
		const struct model_location *l = &d->locations.v[locs[k]];

		if (l->mapping)
			gc_map(&g, l->mapping);
		for (uint32_t j = 0; j < l->nlines; j++)
			if (d->lines.v[l->line_off + j].function)
				gc_fn(&g, d->lines.v[l->line_off + j].function);
	}
	for (size_t k = 1; k < g.map_order.n; k++) {
		const struct model_mapping *m = &d->mappings.v[g.map_order.v[k]];

		gc_str(&g, m->filename);
		gc_str(&g, m->build_id);
	}
	for (size_t k = 1; k < g.fn_order.n; k++) {
		const struct model_function *f = &d->functions.v[g.fn_order.v[k]];

		gc_str(&g, f->name);
		gc_str(&g, f->system_name);
		gc_str(&g, f->filename);
	}
	for (size_t k = 0; k < nlocs; k++)
		gc_str(&g, d->locations.v[locs[k]].frame_type);

	char *path = xasprintf("%s/symbols", w->tmp_dir);
	rc = store_chunkfile_create(&cf, path, STORE_BLOCK_MAGIC_SYMBOLS, STORE_BLOCK_VERSION,
				    w->o.zstd_level, err);
	free(path);
	if (rc)
		goto out;

	/* STRS */
	buf_add_uvarint(&b, g.str_order.n);
	for (size_t k = 1; k < g.str_order.n; k++) {
		uint32_t s = g.str_order.v[k];

		buf_add_uvarint(&b, d->strings.len[s]);
		buf_add(&b, d->strings.s[s], d->strings.len[s]);
	}
	rc = put_chunk(&cf, "STRS", &b, err);
	/* MAPS */
	buf_add_uvarint(&b, g.map_order.n);
	for (size_t k = 1; k < g.map_order.n && !rc; k++) {
		const struct model_mapping *m = &d->mappings.v[g.map_order.v[k]];

		buf_add_uvarint(&b, m->memory_start);
		buf_add_uvarint(&b, m->memory_limit);
		buf_add_uvarint(&b, m->file_offset);
		buf_add_uvarint(&b, g.str[m->filename]);
		buf_add_uvarint(&b, g.str[m->build_id]);
		uint8_t fl = (uint8_t)(m->has_functions | m->has_filenames << 1 |
				       m->has_line_numbers << 2 | m->has_inline_frames << 3);
		buf_add(&b, &fl, 1);
	}
	if (!rc)
		rc = put_chunk(&cf, "MAPS", &b, err);
	/* FUNC */
	buf_add_uvarint(&b, g.fn_order.n);
	for (size_t k = 1; k < g.fn_order.n && !rc; k++) {
		const struct model_function *f = &d->functions.v[g.fn_order.v[k]];

		buf_add_uvarint(&b, g.str[f->name]);
		buf_add_uvarint(&b, g.str[f->system_name]);
		buf_add_uvarint(&b, g.str[f->filename]);
		buf_add_svarint(&b, f->start_line);
	}
	if (!rc)
		rc = put_chunk(&cf, "FUNC", &b, err);
	/* LOCS */
	buf_add_uvarint(&b, nlocs + 1);
	{
		uint64_t prev = 0;

		for (size_t k = 0; k < nlocs && !rc; k++) {
			const struct model_location *l = &d->locations.v[locs[k]];

			buf_add_uvarint(&b, l->mapping ? g.map[l->mapping] : 0);
			buf_add_svarint(&b, (int64_t)(l->address - prev));
			prev = l->address;
			uint8_t fl = l->is_folded ? 1 : 0;
			buf_add(&b, &fl, 1);
			buf_add_uvarint(&b, g.str[l->frame_type]);
			buf_add_uvarint(&b, l->nlines);
			for (uint32_t j = 0; j < l->nlines; j++) {
				const struct model_line *ln = &d->lines.v[l->line_off + j];

				buf_add_uvarint(&b, ln->function ? g.fn[ln->function] : 0);
				buf_add_svarint(&b, ln->line);
				buf_add_svarint(&b, ln->column);
			}
		}
	}
	if (!rc)
		rc = put_chunk(&cf, "LOCS", &b, err);
	/* STCK: per node in preorder, (id - parent) and location. */
	buf_add_uvarint(&b, nused + 1);
	for (size_t k = 1; k <= nused && !rc; k++) {
		const struct store_stack_node *nd = &nodes[order[k]];

		buf_add_uvarint(&b, k - newid[nd->parent]);
		buf_add_uvarint(&b, locnew[nd->loc]);
	}
	if (!rc)
		rc = put_chunk(&cf, "STCK", &b, err);
	/* LEAF: leaves by row count, most first. */
	leaves = xmalloc(sizeof(*leaves) * (nused + 2));
	for (size_t k = 0; k <= nused; k++)
		if (leaf_rows[order[k]])
			leaves[nleaves++] =
				(struct leafsort){ (uint32_t)k, order[k], leaf_rows[order[k]] };
	qsort(leaves, nleaves, sizeof(*leaves), cmp_leaf);
	w->rank_of = xcalloc(nnodes + 1, sizeof(uint32_t));
	w->nold = nnodes;
	w->leaf_want = xcalloc(nleaves + 1, sizeof(uint64_t));
	w->leaf_seen = xcalloc(nleaves + 1, sizeof(uint64_t));
	w->page_local = xcalloc(nleaves + 1, sizeof(uint32_t));
	w->page_ranks = xmalloc(sizeof(uint32_t) * w->o.page_rows);
	w->nleaves = nleaves;
	if (w->o.rollup)
		w->rollup = true;
	if (w->o.rser)
		w->racc = xcalloc(nleaves + 1, sizeof(*w->racc));
	buf_add_uvarint(&b, nleaves);
	for (size_t r = 0; r < nleaves; r++) {
		w->rank_of[leaves[r].old] = (uint32_t)r + 1;
		w->leaf_want[r] = leaves[r].rows;
		buf_add_uvarint(&b, leaves[r].node);
		buf_add_uvarint(&b, leaves[r].rows);
	}
	if (!rc)
		rc = put_chunk(&cf, "LEAF", &b, err);
	if (!rc && sets && nsets > 1) {
		PROF_ASSERT(nsets < UINT32_MAX);
		w->nsets = nsets;
		w->page_sets = xmalloc(sizeof(uint32_t) * w->o.page_rows);
		w->set_local = xcalloc(nsets + 1, sizeof(uint32_t));
		encode_attrs(w, sets, nsets, &b);
		rc = put_chunk(&cf, "ATTR", &b, err);
	}
	if (rc)
		store_chunkfile_abort(&cf);
	else
		rc = store_chunkfile_finish(&cf, err);
	w->syms_done = rc == 0;
out:
	buf_release(&b);
	free(used);
	free(newid);
	free(cstart);
	free(clist);
	free(stack);
	free(order);
	free(locs);
	free(locnew);
	free(leaves);
	free(g.str);
	free(g.map);
	free(g.fn);
	VEC_FREE(&g.str_order);
	VEC_FREE(&g.map_order);
	VEC_FREE(&g.fn_order);
	return rc;
}

/* --- rows ------------------------------------------------------------------------- */

/*
 * The STK column of a page from w->page_ranks[0..n): a page dictionary of
 * the leaf ranks it uses, ascending, then each row's index into it as
 * byte planes (all low bytes, then the next bytes...):
 *
 *   width W (1 byte, 1..3) | count D (varint) | D leaf ranks, the first as
 *   is, each next as (rank - previous rank - 1) (varints) |
 *   W planes of n bytes, plane j = byte j of each row's dictionary index
 *
 * Why: a page is one series (one process), whose hot stacks are a few of
 * the block's; local indexes put them in the first byte values, where
 * zstd's entropy coder takes them to a few bits, and fixed-width planes
 * decode without a branch per row. The ATR column (attribute set ids) is
 * encoded the same way (encode_dict over set ids).
 */
static void encode_dict(struct buf *out, const uint32_t *vals, size_t n, uint32_t *local)
{
	VEC(uint32_t) f = { 0 };

	for (size_t i = 0; i < n; i++) {
		uint32_t r = vals[i];

		if (!local[r]) {
			VEC_PUSH(&f, r);
			local[r] = 1;
		}
	}
	/* By leaf rank: the block's frequency order, which for one series is
	 * nearly its own, and the dictionary delta-encodes to a byte or so. */
	qsort(f.v, f.n, sizeof(*f.v), cmp_u32);
	for (size_t k = 0; k < f.n; k++)
		local[f.v[k]] = (uint32_t)k + 1;
	uint8_t width = f.n <= 256 ? 1 : f.n <= 65536 ? 2 : 3;
	buf_add(out, &width, 1);
	buf_add_uvarint(out, f.n);
	for (size_t k = 0; k < f.n; k++)
		buf_add_uvarint(out, k ? f.v[k] - f.v[k - 1] - 1 : f.v[k]);
	size_t at = out->len;
	if (out->cap < at + width * n + 1) {
		out->p = xrealloc(out->p, at + width * n + 1);
		out->cap = at + width * n + 1;
	}
	uint8_t *planes = (uint8_t *)out->p + at;
	for (size_t i = 0; i < n; i++) {
		uint32_t idx = local[vals[i]] - 1;

		for (uint8_t j = 0; j < width; j++)
			planes[j * n + i] = (uint8_t)(idx >> (8 * j));
	}
	out->len = at + width * n;
	out->p[out->len] = '\0';
	for (size_t k = 0; k < f.n; k++)
		local[f.v[k]] = 0;
	VEC_FREE(&f);
}

static void encode_stk(struct store_block_writer *w, size_t n)
{
	encode_dict(&w->col[STORE_COL_STK], w->page_ranks, n, w->page_local);
}

static int write_page(struct store_block_writer *w, uint32_t series, const struct store_row *rows,
		      size_t n, struct prof_err *err)
{
	struct store_block_page pg;
	int64_t res = w->o.ts_resolution_ns;
	int64_t prev = ts_round(rows[0].ts_ns, res);
	int rc = 0;

	memset(&pg, 0, sizeof(pg));
	for (int c = 0; c < STORE_NCOLS; c++)
		buf_reset(&w->col[c]);
	pg.series = series;
	pg.nrows = (uint32_t)n;
	pg.first_ts_ns = prev;
	for (size_t i = 0; i < n; i++) {
		int64_t q = ts_round(rows[i].ts_ns, res);
		uint32_t rank = rows[i].stack < w->nold ? w->rank_of[rows[i].stack] : 0;

		if (q < prev)
			return prof_err_set(err, -EINVAL, -1,
					    "block: rows of a series are not sorted by time");
		if (!rank)
			return prof_err_set(err, -EINVAL, -1,
					    "block: a row names stack %u, which has no rows in "
					    "the leaf counts",
					    rows[i].stack);
		if (i > 0)
			buf_add_uvarint(&w->tsd, ((uint64_t)q - (uint64_t)prev) / (uint64_t)res);
		prev = q;
		if (i && i % STORE_BLOCK_TS_MARK == 0) {
			/* where row i's successor's delta starts, and row i's time */
			VEC_PUSH(&w->marks, w->tsd.len);
			VEC_PUSH(&w->marks,
				 ((uint64_t)q - (uint64_t)pg.first_ts_ns) / (uint64_t)res);
		}
		if (rows[i].attrs && rows[i].attrs >= w->nsets)
			return prof_err_set(err, -EINVAL, -1,
					    "block: a row names attribute set %u of %zu",
					    rows[i].attrs, w->nsets);
		w->page_ranks[i] = rank - 1;
		w->leaf_seen[rank - 1]++;
		if (w->rollup) {
			w->he.ts.v[w->he.ts.n++] = q;
			w->he.rank.v[w->he.rank.n++] = rank - 1;
			w->he.val.v[w->he.val.n++] = rows[i].value;
		}
		if (w->racc) {
			struct store_leaf_acc *a = &w->racc[rank - 1];

			if (!a->rows)
				VEC_PUSH(&w->rtouched, rank - 1);
			a->total = prof_add_sat(a->total, rows[i].value);
			a->rows++;
		}
		w->value_sum += (uint64_t)rows[i].value;
		/* VAL: (zigzag value, run length) pairs. */
		if (i == 0 || rows[i].value != rows[i - 1].value) {
			size_t run = 1;

			while (i + run < n && rows[i + run].value == rows[i].value)
				run++;
			buf_add_svarint(&w->col[STORE_COL_VAL], rows[i].value);
			buf_add_uvarint(&w->col[STORE_COL_VAL], run);
		}
	}
	pg.last_ts_ns = prev;
	/* TS: marks (deltas of offset and time between marks), then the deltas. */
	struct buf *tc = &w->col[STORE_COL_TS];
	buf_add_uvarint(tc, w->marks.n / 2);
	for (size_t k = 0; k < w->marks.n; k += 2) {
		buf_add_uvarint(tc, w->marks.v[k] - (k ? w->marks.v[k - 2] : 0));
		buf_add_uvarint(tc, w->marks.v[k + 1] - (k ? w->marks.v[k - 1] : 0));
	}
	buf_add(tc, w->tsd.p ? w->tsd.p : "", w->tsd.len);
	buf_reset(&w->tsd);
	w->marks.n = 0;
	encode_stk(w, n);
	for (int c = 0; c < STORE_NCOLS && !rc; c++) {
		struct store_block_col_ref *r = &pg.col[c];

		r->raw_len = (uint32_t)w->col[c].len;
		rc = store_chunkfile_frame(&w->samples, STORE_CHUNKFILE_ZSTD,
					   w->col[c].p ? w->col[c].p : "", w->col[c].len,
					   &r->offset, &r->stored_len, &r->codec, &r->crc, err);
	}
	/* ATR: only when some row has attributes. */
	struct store_block_col_ref ar = { 0 };
	bool has = false;
	for (size_t i = 0; i < n && w->nsets && !has; i++)
		has = rows[i].attrs != 0;
	if (!rc && has) {
		for (size_t i = 0; i < n; i++)
			w->page_sets[i] = rows[i].attrs;
		buf_reset(&w->acol);
		encode_dict(&w->acol, w->page_sets, n, w->set_local);
		ar.raw_len = (uint32_t)w->acol.len;
		rc = store_chunkfile_frame(&w->samples, STORE_CHUNKFILE_ZSTD, w->acol.p,
					   w->acol.len, &ar.offset, &ar.stored_len, &ar.codec,
					   &ar.crc, err);
		w->any_attrs = true;
	}
	if (rc)
		return rc;
	VEC_PUSH(&w->acols, ar);
	VEC_PUSH(&w->pages, pg);
	w->min_ts = PROF_MIN(w->min_ts, pg.first_ts_ns);
	w->max_ts = PROF_MAX(w->max_ts, pg.last_ts_ns);
	w->nrows += n;
	return 0;
}

int store_block_writer_series(struct store_block_writer *w, const char *type,
			      const struct store_label *labels, uint32_t nlabels,
			      const struct store_row *rows, size_t n, struct prof_err *err)
{
	struct wseries ws = { 0 };
	int rc;

	PROF_ASSERT(w->syms_done && n >= 1);
	if (w->series.n) {
		const struct wseries *p = &w->series.v[w->series.n - 1];
		struct store_label *pl = xcalloc(p->nlabels + 1, sizeof(*pl));

		for (uint32_t i = 0; i < p->nlabels; i++) {
			pl[i].name = strtab_get(&w->lstr, w->labels.v[p->label_off + 2 * i]);
			pl[i].value = strtab_get(&w->lstr, w->labels.v[p->label_off + 2 * i + 1]);
		}
		int c = store_series_key_cmp(strtab_get(&w->lstr, p->type), pl, p->nlabels, type,
					     labels, nlabels);
		free(pl);
		if (c >= 0)
			return prof_err_set(err, -EINVAL, -1,
					    "block: series out of order or repeated (%s)", type);
	}
	if (w->series.n >= UINT32_MAX - 1)
		return prof_err_set(err, -PROF_ETOOBIG, -1, "block: too many series");
	ws.type = strtab_intern_cstr(&w->lstr, type);
	ws.label_off = (uint32_t)w->labels.n;
	ws.nlabels = nlabels;
	for (uint32_t i = 0; i < nlabels; i++) {
		VEC_PUSH(&w->labels, strtab_intern_cstr(&w->lstr, labels[i].name));
		VEC_PUSH(&w->labels, strtab_intern_cstr(&w->lstr, labels[i].value));
	}
	ws.first_page = (uint32_t)w->pages.n;
	ws.nrows = n;
	if (w->rollup)
		block_hours_enc_reserve(&w->he, n);
	for (size_t off = 0; off < n; off += w->o.page_rows) {
		size_t k = PROF_MIN((size_t)w->o.page_rows, n - off);

		rc = write_page(w, (uint32_t)w->series.n, rows + off, k, err);
		if (rc)
			return rc;
	}
	ws.npages = (uint32_t)w->pages.n - ws.first_page;
	if (w->rollup)
		block_hours_encode(&w->he, &w->rhrs, w->o.rollup_bucket_ns);
	if (w->racc) {
		/* RSER entry of this series: (rank delta, total, rows) by rank. */
		if (w->rtouched.n > 1)
			qsort(w->rtouched.v, w->rtouched.n, sizeof(uint32_t), cmp_u32);
		buf_add_uvarint(&w->rser, w->rtouched.n);
		for (size_t k = 0; k < w->rtouched.n; k++) {
			uint32_t r = w->rtouched.v[k];

			buf_add_uvarint(&w->rser, k ? r - w->rtouched.v[k - 1] - 1 : r);
			buf_add_svarint(&w->rser, w->racc[r].total);
			buf_add_uvarint(&w->rser, w->racc[r].rows);
			w->racc[r].total = 0;
			w->racc[r].rows = 0;
		}
		w->rtouched.n = 0;
	}
	ws.min_ts = w->pages.v[ws.first_page].first_ts_ns;
	ws.max_ts = w->pages.v[w->pages.n - 1].last_ts_ns;
	VEC_PUSH(&w->series, ws);
	return 0;
}

/* --- index, meta, commit ------------------------------------------------------------ */

struct post {
	uint32_t name, value, series;
};

static int cmp_str_id(const void *a, const void *b, void *arg)
{
	const struct strtab *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	size_t lx = t->len[x], ly = t->len[y];
	int c = memcmp(t->s[x], t->s[y], PROF_MIN(lx, ly));

	if (c)
		return c;
	return lx < ly ? -1 : lx > ly;
}

static int cmp_post(const void *a, const void *b, void *arg)
{
	const struct post *x = a, *y = b;
	const uint32_t *sort_rank = arg;

	if (x->name != y->name)
		return sort_rank[x->name] < sort_rank[y->name] ? -1 : 1;
	if (x->value != y->value)
		return sort_rank[x->value] < sort_rank[y->value] ? -1 : 1;
	return x->series < y->series ? -1 : x->series > y->series;
}

static int write_index(struct store_block_writer *w, struct prof_err *err)
{
	struct store_chunkfile_writer cf;
	struct buf b;
	VEC(struct post) posts = { 0 };
	int rc;

	char *path = xasprintf("%s/index", w->tmp_dir);
	rc = store_chunkfile_create(&cf, path, STORE_BLOCK_MAGIC_INDEX, STORE_BLOCK_VERSION,
				    w->o.zstd_level, err);
	free(path);
	if (rc)
		return rc;
	buf_init(&b, 0);
	/* LSTR */
	buf_add_uvarint(&b, w->lstr.n);
	for (uint32_t i = 1; i < w->lstr.n; i++) {
		buf_add_uvarint(&b, w->lstr.len[i]);
		buf_add(&b, w->lstr.s[i], w->lstr.len[i]);
	}
	rc = put_chunk(&cf, "LSTR", &b, err);
	/* SERS */
	buf_add_uvarint(&b, w->series.n);
	for (size_t i = 0; i < w->series.n && !rc; i++) {
		const struct wseries *s = &w->series.v[i];

		buf_add_uvarint(&b, s->type);
		buf_add_uvarint(&b, s->nlabels);
		for (uint32_t j = 0; j < 2 * s->nlabels; j++)
			buf_add_uvarint(&b, w->labels.v[s->label_off + j]);
		buf_add_svarint(&b, s->min_ts);
		buf_add_uvarint(&b, (uint64_t)s->max_ts - (uint64_t)s->min_ts);
		buf_add_uvarint(&b, s->nrows);
		buf_add_uvarint(&b, s->first_page);
		buf_add_uvarint(&b, s->npages);
	}
	if (!rc)
		rc = put_chunk(&cf, "SERS", &b, err);
	/* POST: per (name, value) in byte order, the series ids. */
	for (size_t i = 0; i < w->series.n; i++) {
		const struct wseries *s = &w->series.v[i];

		for (uint32_t j = 0; j < s->nlabels; j++) {
			struct post p = { w->labels.v[s->label_off + 2 * j],
					  w->labels.v[s->label_off + 2 * j + 1], (uint32_t)i };
			VEC_PUSH(&posts, p);
		}
	}
	{
		uint32_t *ids = xmalloc(sizeof(uint32_t) * (w->lstr.n + 1));
		uint32_t *rank = xmalloc(sizeof(uint32_t) * (w->lstr.n + 1));

		for (uint32_t i = 0; i < w->lstr.n; i++)
			ids[i] = i;
		qsort_r(ids, w->lstr.n, sizeof(uint32_t), cmp_str_id, &w->lstr);
		for (uint32_t i = 0; i < w->lstr.n; i++)
			rank[ids[i]] = i;
		if (posts.n > 1)
			qsort_r(posts.v, posts.n, sizeof(*posts.v), cmp_post, rank);
		free(ids);
		free(rank);
	}
	size_t npairs = 0;
	for (size_t i = 0; i < posts.n; i++)
		if (i == 0 || posts.v[i].name != posts.v[i - 1].name ||
		    posts.v[i].value != posts.v[i - 1].value)
			npairs++;
	buf_add_uvarint(&b, npairs);
	for (size_t i = 0; i < posts.n && !rc;) {
		size_t j = i;

		while (j < posts.n && posts.v[j].name == posts.v[i].name &&
		       posts.v[j].value == posts.v[i].value)
			j++;
		buf_add_uvarint(&b, posts.v[i].name);
		buf_add_uvarint(&b, posts.v[i].value);
		buf_add_uvarint(&b, j - i);
		for (size_t k = i; k < j; k++)
			buf_add_uvarint(&b, k == i ? posts.v[k].series
						   : posts.v[k].series - posts.v[k - 1].series);
		i = j;
	}
	if (!rc)
		rc = put_chunk(&cf, "POST", &b, err);
	/* SATK: the attribute names, as LSTR indexes (only when rows have some). */
	if (!rc && w->any_attrs && w->akeys.n) {
		buf_add_uvarint(&b, w->akeys.n);
		for (size_t i = 0; i < w->akeys.n; i++)
			buf_add_uvarint(&b, w->akeys.v[i]);
		rc = put_chunk(&cf, "SATK", &b, err);
	}
	VEC_FREE(&posts);
	buf_release(&b);
	if (rc) {
		store_chunkfile_abort(&cf);
		return rc;
	}
	return store_chunkfile_finish(&cf, err);
}

static int write_meta(struct store_block_writer *w, const struct store_block_info *info,
		      struct prof_err *err)
{
	struct store_chunkfile_writer cf;
	struct store_block_meta m;
	int rc;

	memset(&m, 0, sizeof(m));
	m.id = w->id;
	m.min_ts_ns = w->min_ts;
	m.max_ts_ns = w->max_ts;
	m.nrows = w->nrows;
	m.nseries = w->series.n;
	m.nstacks = w->nstacks;
	m.nleaves = w->nleaves;
	m.nlocations = w->nlocations;
	m.npages = w->pages.n;
	m.wal_first = info->wal_first;
	m.wal_last = info->wal_last;
	m.ts_resolution_ns = w->o.ts_resolution_ns;
	m.created_ns = prof_now_ns();
	m.value_sum = w->value_sum;
	m.level = info->level ? info->level : 1;
	m.nsources = info->nsources;
	char *path = xasprintf("%s/meta", w->tmp_dir);
	rc = store_chunkfile_create(&cf, path, STORE_BLOCK_MAGIC_META, STORE_BLOCK_VERSION, 1, err);
	free(path);
	if (rc)
		return rc;
	rc = store_chunkfile_add(&cf, "META", STORE_CHUNKFILE_RAW, &m, sizeof(m), err);
	if (!rc)
		rc = store_chunkfile_add(&cf, "SRCS", STORE_CHUNKFILE_RAW,
					 info->nsources ? (const void *)info->sources : "",
					 sizeof(uint64_t) * info->nsources, err);
	if (rc) {
		store_chunkfile_abort(&cf);
		return rc;
	}
	return store_chunkfile_finish(&cf, err);
}

int store_block_writer_finish(struct store_block_writer *w, const struct store_block_info *info,
			      struct prof_err *err)
{
	int rc;

	PROF_ASSERT(w->syms_done && !w->done);
	if (w->nrows == 0)
		return prof_err_set(err, -ENODATA, -1, "block: no rows to write");
	for (uint64_t r = 0; r < w->nleaves; r++)
		if (w->leaf_seen[r] != w->leaf_want[r])
			return prof_err_set(err, -EINVAL, -1,
					    "block: leaf %" PRIu64 " was announced with %" PRIu64
					    " rows but got %" PRIu64,
					    r, w->leaf_want[r], w->leaf_seen[r]);
	rc = store_chunkfile_region_end(&w->samples, "COLS", w->region, err);
	if (!rc)
		rc = store_chunkfile_add(&w->samples, "PAGE", STORE_CHUNKFILE_RAW, w->pages.v,
					 sizeof(*w->pages.v) * w->pages.n, err);
	if (!rc && w->any_attrs)
		rc = store_chunkfile_add(&w->samples, "PATR", STORE_CHUNKFILE_RAW, w->acols.v,
					 sizeof(*w->acols.v) * w->acols.n, err);
	if (!rc && w->racc) {
		struct buf b;

		buf_init(&b, 0);
		buf_add_uvarint(&b, w->series.n);
		buf_add(&b, w->rser.p ? w->rser.p : "", w->rser.len);
		rc = store_chunkfile_add(&w->samples, "RSER", STORE_CHUNKFILE_ZSTD, b.p, b.len,
					 err);
		buf_release(&b);
	}
	if (!rc && w->rollup) {
		struct buf b;

		buf_init(&b, 0);
		buf_add_uvarint(&b, (uint64_t)w->o.rollup_bucket_ns);
		buf_add_uvarint(&b, w->series.n);
		buf_add(&b, w->rhrs.p ? w->rhrs.p : "", w->rhrs.len);
		rc = store_chunkfile_add(&w->samples, "RHRS", STORE_CHUNKFILE_ZSTD, b.p, b.len,
					 err);
		buf_release(&b);
	}
	w->samples_open = false;
	if (rc)
		store_chunkfile_abort(&w->samples);
	else
		rc = store_chunkfile_finish(&w->samples, err);
	if (!rc)
		rc = write_index(w, err);
	if (!rc)
		rc = write_meta(w, info, err);
	if (!rc) {
		rc = fs_fsync_dir(w->tmp_dir);
		if (rc)
			prof_err_set(err, rc, -1, "block: fsync %s: %s", w->tmp_dir, strerror(-rc));
	}
	if (!rc && rename(w->tmp_dir, w->final_dir)) {
		rc = -errno;
		prof_err_set(err, rc, -1, "block: rename %s to %s: %s", w->tmp_dir, w->final_dir,
			     strerror(errno));
	}
	if (rc)
		return rc;
	w->done = true;
	rc = fs_fsync_dir(w->blocks_dir);
	if (rc)
		return prof_err_set(err, rc, -1, "block: fsync %s: %s", w->blocks_dir,
				    strerror(-rc));
	return 0;
}
