// SPDX-License-Identifier: Apache-2.0
/*
 * block.c - writing, reading and checking immutable blocks; the format is
 * in block.h and docs/storage-format.md.
 *
 * Writer: the symbols are garbage-collected to what the rows reach
 * (leaves with rows, their ancestors, their locations and everything
 * those name) and renumbered: stack nodes in depth-first preorder,
 * locations sorted by (mapping, address) so addresses delta-encode to a
 * few bytes, mappings/functions/strings in order of first use. Rows
 * arrive series by series and are cut into pages as they come, so the
 * writer holds one series at a time, never the whole block.
 *
 * Reader: every length, count and index read from a file is checked
 * against the bytes that remain and the tables it points into before it
 * is used (SQLite's rule: a corrupt file is an error, never a crash).
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

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "block structures are stored with memcpy: little-endian hosts only");
_Static_assert(offsetof(struct store_block_meta, level) == 112, "meta layout");
_Static_assert(offsetof(struct store_block_page, col) == 24, "page entry layout");

#define CORRUPT(off, ...) prof_err_set(err, -PROF_ECORRUPT, (int64_t)(off), __VA_ARGS__)

void store_block_dir_name(uint64_t id, char out[17])
{
	snprintf(out, 17, "%016" PRIx64, id);
}

int store_series_key_cmp(const char *ta, const struct store_label *la, uint32_t na, const char *tb,
			 const struct store_label *lb, uint32_t nb)
{
	int c = strcmp(ta, tb);

	if (c)
		return c;
	for (uint32_t i = 0; i < na && i < nb; i++) {
		c = strcmp(la[i].name, lb[i].name);
		if (c)
			return c;
		c = strcmp(la[i].value, lb[i].value);
		if (c)
			return c;
	}
	return na < nb ? -1 : na > nb;
}

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

static void rm_rf(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d) {
		while ((de = readdir(d))) {
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
				continue;
			char *p = xasprintf("%s/%s", dir, de->d_name);
			unlink(p);
			free(p);
		}
		closedir(d);
	}
	rmdir(dir);
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

static int cmp_u32(const void *a, const void *b);

/* floor(a / b) for b > 0, also for a < 0. */
static int64_t floor_div(int64_t a, int64_t b)
{
	int64_t q = a / b;

	return (a % b != 0 && a < 0) ? q - 1 : q;
}

/* @c rows of value @v summed with saturation (= the rows added one by one). */
static int64_t mul_sat(uint64_t c, int64_t v)
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
 */
struct hours_enc {
	VEC(int64_t) ts;
	VEC(uint32_t) rank;
	VEC(int64_t) val;
	uint32_t *local; /* leaf rank -> series dictionary index + 1; nlocal entries */
	size_t nlocal;
	VEC(uint32_t) dict;
	VEC(uint64_t) cnt;
	VEC(int64_t) tot;
};

static void hours_enc_release(struct hours_enc *e)
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
static void hours_enc_reserve(struct hours_enc *e, size_t n)
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
static void hours_encode(struct hours_enc *e, struct buf *out, int64_t width)
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
	struct hours_enc he;
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
	rm_rf(w->tmp_dir);
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
		rm_rf(w->tmp_dir);
	free(w->rank_of);
	free(w->page_ranks);
	free(w->page_local);
	free(w->page_sets);
	free(w->set_local);
	buf_release(&w->rhrs);
	hours_enc_release(&w->he);
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

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

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
		hours_enc_reserve(&w->he, n);
	for (size_t off = 0; off < n; off += w->o.page_rows) {
		size_t k = PROF_MIN((size_t)w->o.page_rows, n - off);

		rc = write_page(w, (uint32_t)w->series.n, rows + off, k, err);
		if (rc)
			return rc;
	}
	ws.npages = (uint32_t)w->pages.n - ws.first_page;
	if (w->rollup)
		hours_encode(&w->he, &w->rhrs, w->o.rollup_bucket_ns);
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
		rc = store_chunkfile_fsync_dir(w->tmp_dir);
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
	rc = store_chunkfile_fsync_dir(w->blocks_dir);
	if (rc)
		return prof_err_set(err, rc, -1, "block: fsync %s: %s", w->blocks_dir,
				    strerror(-rc));
	return 0;
}

/* ======================================================================== */
/* reader                                                                    */
/* ======================================================================== */

void store_block_scratch_release(struct store_block_scratch *sc)
{
	ZSTD_freeDCtx(sc->dctx);
	sc->dctx = NULL;
	buf_release(&sc->frame);
	buf_release(&sc->acol);
	VEC_FREE(&sc->asets);
	for (int c = 0; c < STORE_NCOLS; c++)
		buf_release(&sc->col[c]);
	VEC_FREE(&sc->rows);
	VEC_FREE(&sc->ranks);
	VEC_FREE(&sc->marks);
	VEC_FREE(&sc->hist);
}

static int read_meta_file(const char *dir, struct store_block_meta *m, uint64_t **sources,
			  struct prof_err *err)
{
	struct store_chunkfile f;
	struct buf b;
	char *path = xasprintf("%s/meta", dir);
	int rc;

	*sources = NULL;
	rc = store_chunkfile_open(&f, path, STORE_BLOCK_MAGIC_META, STORE_BLOCK_VERSION, true, err);
	free(path);
	if (rc)
		return rc;
	buf_init(&b, 0);
	const struct store_chunkfile_entry *e = store_chunkfile_find(&f, "META");
	const struct store_chunkfile_entry *s = store_chunkfile_find(&f, "SRCS");
	if (!e || e->raw_len != sizeof(*m) || !s) {
		rc = CORRUPT(e ? e->offset : 0, "%s/meta: chunk META (128 bytes) or SRCS missing",
			     dir);
		goto out;
	}
	rc = store_chunkfile_read(&f, e, sizeof(*m), &b, err);
	if (rc)
		goto out;
	memcpy(m, b.p, sizeof(*m));
	if (m->nsources > STORE_BLOCK_MAX_SOURCES || s->raw_len != sizeof(uint64_t) * m->nsources) {
		rc = CORRUPT(s->offset, "%s/meta: SRCS holds %" PRIu64 " bytes for %u sources", dir,
			     s->raw_len, m->nsources);
		goto out;
	}
	if (m->ts_resolution_ns < 1 || m->nrows == 0 || m->min_ts_ns > m->max_ts_ns ||
	    m->nstacks == 0 || m->nstacks > UINT32_MAX || m->nleaves > m->nstacks ||
	    m->nlocations == 0 || m->nlocations > UINT32_MAX || m->nseries == 0 ||
	    m->nseries > UINT32_MAX || m->npages == 0 || m->npages > UINT32_MAX ||
	    m->wal_first > m->wal_last || m->level == 0 || m->reserved) {
		rc = CORRUPT(e->offset,
			     "%s/meta: META chunk at offset %" PRIu64 " holds impossible values",
			     dir, e->offset);
		goto out;
	}
	rc = store_chunkfile_read(&f, s, sizeof(uint64_t) * STORE_BLOCK_MAX_SOURCES, &b, err);
	if (rc)
		goto out;
	*sources = xmalloc(sizeof(uint64_t) * (m->nsources + 1));
	memcpy(*sources, b.p, sizeof(uint64_t) * m->nsources);
out:
	buf_release(&b);
	store_chunkfile_close(&f);
	return rc;
}

int store_block_read_meta(const char *dir, struct store_block_meta *meta, uint64_t **sources,
			  struct prof_err *err)
{
	return read_meta_file(dir, meta, sources, err);
}

/* A string table: count, then (length, bytes) from entry 1; entry 0 is "". */
static int read_strings(struct varint_rd *r, char ***out, uint32_t *nout, uint64_t base,
			const char *what, struct prof_err *err)
{
	uint64_t n = varint_rd_u64(r);
	size_t total = 0;
	const uint8_t *start = r->p;

	if (r->bad || n == 0 || n > varint_rd_left(r) + 1)
		return CORRUPT(base + varint_rd_offset(r), "%s: bad string count", what);
	/* First pass: lengths, so the strings go into one allocation. */
	for (uint64_t i = 1; i < n; i++) {
		uint64_t len = varint_rd_u64(r);

		if (r->bad || !varint_rd_bytes(r, len))
			return CORRUPT(base + varint_rd_offset(r),
				       "%s: string %" PRIu64 " runs past the chunk", what, i);
		total += len + 1;
	}
	char **s = xmalloc(sizeof(char *) * (n + 1));
	char *blob = xmalloc(total + 2);
	r->p = start;
	s[0] = blob;
	*blob++ = '\0';
	for (uint64_t i = 1; i < n; i++) {
		uint64_t len = varint_rd_u64(r);
		const uint8_t *p = varint_rd_bytes(r, len);

		memcpy(blob, p, len);
		blob[len] = '\0';
		s[i] = blob;
		blob += len + 1;
	}
	*out = s;
	*nout = (uint32_t)n;
	return 0;
}

static void free_strings(char **s)
{
	if (s)
		free(s[0]);
	free(s);
}

static int decode_index(struct store_block *b, const struct store_chunkfile *f,
			struct prof_err *err)
{
	const struct store_chunkfile_entry *el = store_chunkfile_find(f, "LSTR"),
					   *es = store_chunkfile_find(f, "SERS"),
					   *ep = store_chunkfile_find(f, "POST");
	struct varint_rd r;
	struct buf raw;
	int rc;

	if (!el || !es || !ep)
		return CORRUPT(0, "%s: chunk LSTR, SERS or POST missing", f->path);
	buf_init(&raw, 0);
	rc = store_chunkfile_read(f, el, STORE_BLOCK_MAX_CHUNK, &raw, err);
	if (rc)
		goto out;
	varint_rd_init(&r, raw.p, raw.len);
	rc = read_strings(&r, &b->lstr, &b->nlstr, el->offset, f->path, err);
	if (rc)
		goto out;

	rc = store_chunkfile_read(f, es, STORE_BLOCK_MAX_CHUNK, &raw, err);
	if (rc)
		goto out;
	varint_rd_init(&r, raw.p, raw.len);
	uint64_t ns = varint_rd_u64(&r);
	if (r.bad || ns != b->meta.nseries || ns > raw.len) {
		rc = CORRUPT(es->offset, "%s: SERS: %" PRIu64 " series, the meta says %" PRIu64,
			     f->path, ns, b->meta.nseries);
		goto out;
	}
	b->nseries = (uint32_t)ns;
	b->series = xcalloc(ns + 1, sizeof(*b->series));
	VEC(struct store_label) labels = { 0 };
	VEC(size_t) loff = { 0 };
	uint64_t next_page = 0, rows = 0;
	for (uint32_t i = 0; i < ns; i++) {
		struct store_block_series *s = &b->series[i];
		uint32_t type = varint_rd_u32(&r), nl = varint_rd_u32(&r);

		if (r.bad || type >= b->nlstr || nl > varint_rd_left(&r)) {
			rc = CORRUPT(es->offset, "%s: SERS: series %u: bad type or label count",
				     f->path, i);
			break;
		}
		s->pub.id = i;
		s->pub.type = b->lstr[type];
		VEC_PUSH(&loff, labels.n);
		for (uint32_t j = 0; j < nl; j++) {
			uint32_t k = varint_rd_u32(&r), v = varint_rd_u32(&r);
			struct store_label l;

			if (r.bad || k >= b->nlstr || v >= b->nlstr) {
				r.bad = true;
				break;
			}
			l.name = b->lstr[k];
			l.value = b->lstr[v];
			if (j && strcmp(labels.v[labels.n - 1].name, l.name) >= 0)
				r.bad = true;
			VEC_PUSH(&labels, l);
		}
		s->pub.nlabels = nl;
		s->pub.min_ts_ns = varint_rd_s64(&r);
		s->pub.max_ts_ns = (int64_t)((uint64_t)s->pub.min_ts_ns + varint_rd_u64(&r));
		s->pub.nrows = varint_rd_u64(&r);
		s->first_page = varint_rd_u32(&r);
		s->npages = varint_rd_u32(&r);
		if (r.bad || s->first_page != next_page || s->npages == 0 ||
		    s->npages > b->meta.npages - next_page || s->pub.min_ts_ns > s->pub.max_ts_ns ||
		    s->pub.min_ts_ns < b->meta.min_ts_ns || s->pub.max_ts_ns > b->meta.max_ts_ns ||
		    s->pub.nrows == 0) {
			rc = CORRUPT(
				es->offset,
				"%s: SERS: series %u: labels, time range or page range invalid "
				"(labels must be sorted and unique)",
				f->path, i);
			break;
		}
		if (i) {
			const struct store_block_series *p = &b->series[i - 1];

			if (store_series_key_cmp(p->pub.type, labels.v + loff.v[i - 1],
						 p->pub.nlabels, s->pub.type, labels.v + loff.v[i],
						 s->pub.nlabels) >= 0) {
				rc = CORRUPT(es->offset, "%s: SERS: series %u is out of order",
					     f->path, i);
				break;
			}
		}
		next_page += s->npages;
		rows += s->pub.nrows;
	}
	if (!rc && (next_page != b->meta.npages || rows != b->meta.nrows || varint_rd_left(&r)))
		rc = CORRUPT(es->offset,
			     "%s: SERS: series cover %" PRIu64 " pages and %" PRIu64
			     " rows, the meta says %" PRIu64 " and %" PRIu64,
			     f->path, next_page, rows, b->meta.npages, b->meta.nrows);
	b->labels = labels.v;
	for (uint32_t i = 0; i < ns && !rc; i++)
		b->series[i].pub.labels = b->labels + loff.v[i];
	VEC_FREE(&loff);
	if (rc)
		goto out;

	rc = store_chunkfile_read(f, ep, STORE_BLOCK_MAX_CHUNK, &raw, err);
	if (rc)
		goto out;
	varint_rd_init(&r, raw.p, raw.len);
	uint64_t np = varint_rd_u64(&r);
	if (r.bad || np > raw.len) {
		rc = CORRUPT(ep->offset, "%s: POST: bad pair count", f->path);
		goto out;
	}
	b->npairs = (uint32_t)np;
	b->pairs = xcalloc(np + 1, sizeof(*b->pairs));
	VEC(uint32_t) ids = { 0 };
	for (uint32_t i = 0; i < np && !rc; i++) {
		uint32_t k = varint_rd_u32(&r), v = varint_rd_u32(&r);
		uint64_t cnt = varint_rd_u64(&r);
		uint64_t prev = 0;

		if (r.bad || k >= b->nlstr || v >= b->nlstr || cnt == 0 || cnt > ns) {
			rc = CORRUPT(ep->offset, "%s: POST: pair %u invalid", f->path, i);
			break;
		}
		b->pairs[i].name = k;
		b->pairs[i].value = v;
		b->pairs[i].off = (uint32_t)ids.n;
		b->pairs[i].n = (uint32_t)cnt;
		for (uint64_t j = 0; j < cnt; j++) {
			uint64_t d = varint_rd_u64(&r), id = j ? prev + d : d;

			if (r.bad || (j && d == 0) || id >= ns) {
				rc = CORRUPT(ep->offset, "%s: POST: pair %u: bad series id",
					     f->path, i);
				break;
			}
			VEC_PUSH(&ids, (uint32_t)id);
			prev = id;
		}
		if (!rc && i) {
			int c = strcmp(b->lstr[b->pairs[i - 1].name], b->lstr[k]);

			if (c > 0 ||
			    (c == 0 && strcmp(b->lstr[b->pairs[i - 1].value], b->lstr[v]) >= 0))
				rc = CORRUPT(ep->offset, "%s: POST: pairs out of order", f->path);
		}
	}
	if (!rc && varint_rd_left(&r))
		rc = CORRUPT(ep->offset, "%s: POST: trailing bytes", f->path);
	b->post_ids = ids.v;
	const struct store_chunkfile_entry *ek = store_chunkfile_find(f, "SATK");
	if (!rc && ek) {
		rc = store_chunkfile_read(f, ek, STORE_BLOCK_MAX_CHUNK, &raw, err);
		if (rc)
			goto out;
		varint_rd_init(&r, raw.p, raw.len);
		uint64_t nk = varint_rd_u64(&r);
		if (r.bad || nk > raw.len) {
			rc = CORRUPT(ek->offset, "%s: SATK: bad count", f->path);
			goto out;
		}
		b->akeys = xcalloc(nk + 1, sizeof(*b->akeys));
		for (uint64_t i = 0; i < nk; i++) {
			uint32_t k = varint_rd_u32(&r);

			if (r.bad || k == 0 || k >= b->nlstr) {
				rc = CORRUPT(ek->offset, "%s: SATK: name %" PRIu64 " invalid",
					     f->path, i);
				goto out;
			}
			b->akeys[i] = b->lstr[k];
		}
		b->nakeys = (uint32_t)nk;
		if (varint_rd_left(&r))
			rc = CORRUPT(ek->offset, "%s: SATK: trailing bytes", f->path);
	}
out:
	buf_release(&raw);
	return rc;
}

static int decode_pages(struct store_block *b, struct prof_err *err)
{
	const struct store_chunkfile *f = &b->samples;
	const struct store_chunkfile_entry *ep = store_chunkfile_find(f, "PAGE"),
					   *ec = store_chunkfile_find(f, "COLS");
	struct buf raw;
	int rc;

	if (!ep || !ec)
		return CORRUPT(0, "%s: chunk PAGE or COLS missing", f->path);
	if (ep->raw_len != b->meta.npages * sizeof(struct store_block_page))
		return CORRUPT(ep->offset, "%s: PAGE holds %" PRIu64 " bytes for %" PRIu64 " pages",
			       f->path, ep->raw_len, b->meta.npages);
	buf_init(&raw, 0);
	rc = store_chunkfile_read(f, ep, STORE_BLOCK_MAX_CHUNK, &raw, err);
	if (rc) {
		buf_release(&raw);
		return rc;
	}
	b->pages = xmalloc(raw.len + 1);
	memcpy(b->pages, raw.p, raw.len);
	buf_release(&raw);
	for (uint64_t i = 0; i < b->meta.npages; i++) {
		const struct store_block_page *pg = &b->pages[i];
		uint64_t at = ep->offset + i * sizeof(*pg);
		bool ok = pg->series < b->nseries && pg->nrows >= 1 &&
			  pg->nrows <= STORE_BLOCK_MAX_PAGE_ROWS &&
			  pg->first_ts_ns <= pg->last_ts_ns;

		for (int c = 0; c < STORE_NCOLS && ok; c++) {
			const struct store_block_col_ref *cr = &pg->col[c];
			/* A varint is at most 10 bytes; a VAL run is two. */
			uint64_t maxraw = (uint64_t)pg->nrows * (c == STORE_COL_VAL ? 20 : 10);

			ok = cr->offset >= ec->offset &&
			     cr->offset <= ec->offset + ec->stored_len &&
			     cr->stored_len <= ec->offset + ec->stored_len - cr->offset &&
			     cr->codec <= STORE_CHUNKFILE_ZSTD && cr->raw_len <= maxraw &&
			     !cr->reserved[0] && !cr->reserved[1] && !cr->reserved[2];
		}
		if (ok) {
			const struct store_block_series *s = &b->series[pg->series];

			ok = i >= s->first_page && i < (uint64_t)s->first_page + s->npages &&
			     pg->first_ts_ns >= s->pub.min_ts_ns &&
			     pg->last_ts_ns <= s->pub.max_ts_ns;
			if (ok && i > s->first_page)
				ok = pg->first_ts_ns >= b->pages[i - 1].last_ts_ns;
		}
		if (!ok)
			return CORRUPT(at,
				       "%s: page directory entry %" PRIu64 " at offset %" PRIu64
				       " is inconsistent (series, rows, times or column ranges)",
				       f->path, i, at);
	}
	/* PATR: the ATR column of each page (all zero: the page has none). */
	const struct store_chunkfile_entry *ea = store_chunkfile_find(f, "PATR");
	if (ea) {
		if (ea->raw_len != b->meta.npages * sizeof(struct store_block_col_ref))
			return CORRUPT(ea->offset,
				       "%s: PATR holds %" PRIu64 " bytes for %" PRIu64 " pages",
				       f->path, ea->raw_len, b->meta.npages);
		buf_init(&raw, 0);
		rc = store_chunkfile_read(f, ea, STORE_BLOCK_MAX_CHUNK, &raw, err);
		if (rc) {
			buf_release(&raw);
			return rc;
		}
		b->attr_cols = xmalloc(raw.len + 1);
		memcpy(b->attr_cols, raw.p, raw.len);
		buf_release(&raw);
		for (uint64_t i = 0; i < b->meta.npages; i++) {
			const struct store_block_col_ref *cr = &b->attr_cols[i];
			uint64_t at = ea->offset + i * sizeof(*cr);

			if (!cr->raw_len && !cr->stored_len && !cr->offset)
				continue;
			if (!(cr->offset >= ec->offset &&
			      cr->offset <= ec->offset + ec->stored_len &&
			      cr->stored_len <= ec->offset + ec->stored_len - cr->offset &&
			      cr->codec <= STORE_CHUNKFILE_ZSTD && cr->raw_len >= 3 &&
			      cr->raw_len <= (uint64_t)b->pages[i].nrows * 8 + 16 &&
			      !cr->reserved[0] && !cr->reserved[1] && !cr->reserved[2]))
				return CORRUPT(at,
					       "%s: PATR entry %" PRIu64 " at offset %" PRIu64
					       " is outside the column region or invalid",
					       f->path, i, at);
		}
	}
	/* Per series: rows and first/last times add up. */
	for (uint32_t s = 0; s < b->nseries; s++) {
		const struct store_block_series *se = &b->series[s];
		uint64_t rows = 0;

		for (uint32_t p = se->first_page; p < se->first_page + se->npages; p++)
			rows += b->pages[p].nrows;
		if (rows != se->pub.nrows ||
		    b->pages[se->first_page].first_ts_ns != se->pub.min_ts_ns ||
		    b->pages[se->first_page + se->npages - 1].last_ts_ns != se->pub.max_ts_ns)
			return CORRUPT(ep->offset, "%s: pages of series %u disagree with the index",
				       f->path, s);
	}
	return 0;
}

static uint64_t file_size(const char *dir, const char *name)
{
	char *p = xasprintf("%s/%s", dir, name);
	struct stat st;
	uint64_t n = stat(p, &st) ? 0 : (uint64_t)st.st_size;

	free(p);
	return n;
}

int store_block_open(const char *dir, struct store_block **out, struct prof_err *err)
{
	struct store_block *b = xcalloc(1, sizeof(*b));
	struct store_chunkfile idx;
	int rc;

	*out = NULL;
	b->samples.fd = -1;
	b->dir = xstrdup(dir);
	rc = read_meta_file(dir, &b->meta, &b->sources, err);
	if (rc)
		goto fail;
	char *path = xasprintf("%s/index", dir);
	rc = store_chunkfile_open(&idx, path, STORE_BLOCK_MAGIC_INDEX, STORE_BLOCK_VERSION, true,
				  err);
	free(path);
	if (rc)
		goto fail;
	rc = decode_index(b, &idx, err);
	store_chunkfile_close(&idx);
	if (rc)
		goto fail;
	path = xasprintf("%s/samples", dir);
	rc = store_chunkfile_open(&b->samples, path, STORE_BLOCK_MAGIC_SAMPLES, STORE_BLOCK_VERSION,
				  false, err);
	free(path);
	if (rc)
		goto fail;
	rc = decode_pages(b, err);
	if (rc)
		goto fail;
	b->bytes_on_disk = file_size(dir, "meta") + file_size(dir, "symbols") +
			   file_size(dir, "index") + file_size(dir, "samples");
	*out = b;
	return 0;
fail:
	store_block_free(b);
	return rc;
}

void store_block_free(struct store_block *b)
{
	if (!b)
		return;
	store_chunkfile_close(&b->samples);
	free(b->sources);
	free_strings(b->lstr);
	free(b->labels);
	free(b->series);
	free(b->pairs);
	free(b->post_ids);
	free(b->pages);
	free(b->attr_cols);
	free(b->akeys);
	free(b->dir);
	free(b);
}

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

static int rser_load(const struct store_block *b, struct store_block_syms *sy,
		     struct prof_err *err);

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
		rc = read_strings(&r, &sy->set_strs, &nst, store_chunkfile_find(&f, "ATTR")->offset,
				  f.path, err);
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
	free_strings(sy->set_strs);
	free(sy->rsum);
	free(sy->rsum_off);
	hours_free(sy);
	free(sy);
}

/* --- series selection -------------------------------------------------------------------- */

static const char *label_exact(const struct store_block_series *s, const char *name)
{
	uint32_t lo = 0, hi = s->pub.nlabels;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(s->pub.labels[mid].name, name);

		if (!c)
			return s->pub.labels[mid].value;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* The label @name of @s, or its older key (store_label_alias), or NULL. */
static const char *label_of(const struct store_block_series *s, const char *name)
{
	const char *v = label_exact(s, name), *alt = v ? NULL : store_label_alias(name);

	return alt ? label_exact(s, alt) : v;
}

/* Postings of name=value, or NULL (no series has it). */
static const uint32_t *postings(const struct store_block *b, const char *name, const char *value,
				uint32_t *n)
{
	uint32_t lo = 0, hi = b->npairs;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(b->lstr[b->pairs[mid].name], name);

		if (!c)
			c = strcmp(b->lstr[b->pairs[mid].value], value);
		if (!c) {
			*n = b->pairs[mid].n;
			return b->post_ids + b->pairs[mid].off;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*n = 0;
	return NULL;
}

void store_block_select(const struct store_block *b, const char *type,
			const struct store_matcher *m, size_t nm, int64_t from_ns, int64_t to_ns,
			void *out_vec)
{
	VEC(uint32_t) *out = out_vec;
	const uint32_t *cand = NULL;
	uint32_t ncand = b->nseries;

	if (b->meta.max_ts_ns < from_ns || b->meta.min_ts_ns > to_ns)
		return;
	/* The shortest postings list of a non-empty equality matcher drives. */
	for (size_t i = 0; i < nm; i++) {
		uint32_t n;
		const uint32_t *p;

		if (m[i].op != STORE_MATCH_EQ || !*m[i].value)
			continue;
		const char *alt = store_label_alias(m[i].name);
		if (alt && postings(b, alt, m[i].value, &n))
			continue; /* series under the older key too: no one list has them all */
		p = postings(b, m[i].name, m[i].value, &n);
		if (!p)
			return;
		if (!cand || n < ncand) {
			cand = p;
			ncand = n;
		}
	}
	for (uint32_t k = 0; k < ncand; k++) {
		uint32_t i = cand ? cand[k] : k;
		const struct store_block_series *s = &b->series[i];
		bool ok = s->pub.max_ts_ns >= from_ns && s->pub.min_ts_ns <= to_ns &&
			  (!type || !strcmp(type, s->pub.type));

		for (size_t j = 0; j < nm && ok; j++)
			ok = store_matcher_match(&m[j], label_of(s, m[j].name));
		if (ok)
			VEC_PUSH(out, i);
	}
}

bool store_block_has_attr_key(const struct store_block *b, const char *name)
{
	for (uint32_t i = 0; i < b->nakeys; i++)
		if (!strcmp(b->akeys[i], name))
			return true;
	return false;
}

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

static int page_corrupt(const struct store_block *b, const struct store_block_page *pg,
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
		return page_corrupt(b, pg, "bad stack column header", err);
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
		return page_corrupt(b, pg, "bad stack dictionary", err);
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
		return page_corrupt(b, pg, "stack index outside the page dictionary", err);
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
		return page_corrupt(b, pg, "bad time marks", err);
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
				return page_corrupt(b, pg, "time marks disagree with the times",
						    err);
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
			return page_corrupt(b, pg, "bad column data", err);
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
		return page_corrupt(b, pg, "columns disagree with the page directory", err);
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
		return page_corrupt(b, pg, "bad time marks", err);
	varint_rd_init(&rv, sc->col[STORE_COL_VAL].p, sc->col[STORE_COL_VAL].len);
	struct store_row *out = sc->rows.v;
	size_t k = 0;
	/* By stretches of one value (a VAL run) up to the next time mark. */
	for (uint32_t i = 0, n = pg->nrows; i < n;) {
		if (!run) {
			v = varint_rd_s64(&rv);
			run = varint_rd_u64(&rv);
			if (!run || rv.bad)
				return page_corrupt(b, pg, "bad column data", err);
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
					return page_corrupt(
						b, pg, "time marks disagree with the times", err);
			}
			struct store_row r = { ts, v, 0, asets ? asets[i] : 0 };

			out[k] = r;
			k += ts >= from_ns && ts <= to_ns;
		}
	}
	sc->rows.n = k;
	if (rt.bad || run || varint_rd_left(&rt) || varint_rd_left(&rv) || ts != pg->last_ts_ns)
		return page_corrupt(b, pg, "columns disagree with the page directory", err);
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
		return page_corrupt(b, pg, "bad time marks", err);
	varint_rd_init(&rv, sc->col[STORE_COL_VAL].p, sc->col[STORE_COL_VAL].len);
	/* The deltas through a local cursor (1- and 2-byte varints inline: a
	 * delta under 16 s at 1 ms resolution), so the loop stays in registers. */
	const uint8_t *tp = rt.p, *te = rt.end;
	for (uint32_t i = 0, n = pg->nrows; i < n;) {
		if (!run) {
			v = varint_rd_s64(&rv);
			run = varint_rd_u64(&rv);
			if (!run || rv.bad)
				return page_corrupt(b, pg, "bad column data", err);
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
					return page_corrupt(
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
		return page_corrupt(b, pg, "columns disagree with the page directory", err);
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
		return page_corrupt(b, pg, "stack index outside the page dictionary", err);
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
			return page_corrupt(b, pg, "bad time marks", err);
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
			return page_corrupt(b, pg, "bad time column", err);
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
				return page_corrupt(b, pg, "bad value runs", err);
			if (i + run > lo && i < hi) {
				uni = uni && (first || v == v0);
				v0 = v;
				first = false;
			}
			i += (uint32_t)run;
		}
		if (varint_rd_left(&rv))
			return page_corrupt(b, pg, "columns disagree with the page directory", err);
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
			return page_corrupt(b, pg, "bad value runs", err);
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
		return page_corrupt(b, pg, "columns disagree with the page directory", err);
	if (keep) {
		/* what went to the rejected slot is not counted */
		added -= acc[b->meta.nleaves].rows;
		acc[b->meta.nleaves].rows = 0;
		acc[b->meta.nleaves].total = 0;
	}
	*nrows = added;
	return 0;
}

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
	struct hours_enc he = { 0 };
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
				rc = page_corrupt(b, pg, "timestamps not sorted or not rounded",
						  err);
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
			hours_encode(&he, &hbuf, sy->rh_width);
			if (hbuf.len != len || memcmp(hbuf.p, sy->rh_raw + at, len))
				rc = CORRUPT(ce ? ce->offset : 0,
					     "%s/samples: RHRS: the hour rollup of series %u (at "
					     "byte %" PRIu64 " of the chunk's content) disagrees "
					     "with its pages",
					     dir, pg->series, at);
			hours_enc_reserve(&he, 0);
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
	hours_enc_release(&he);
	buf_release(&hbuf);
	store_block_scratch_release(&sc);
	store_block_syms_free(sy);
	store_block_free(b);
	return rc;
}
