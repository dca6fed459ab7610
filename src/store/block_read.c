// SPDX-License-Identifier: Apache-2.0
/*
 * block_read.c - opening a block: its meta, the index (series, labels,
 * postings) and the page table, and selecting series by label.
 *
 * Every length, count and index read from a file is checked against the
 * bytes that remain and the tables it points into before it is used
 * (SQLite's rule: a corrupt file is an error, never a crash).
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
int block_strings_read(struct varint_rd *r, char ***out, uint32_t *nout, uint64_t base,
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

void block_strings_free(char **s)
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
	rc = block_strings_read(&r, &b->lstr, &b->nlstr, el->offset, f->path, err);
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
	block_strings_free(b->lstr);
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
