// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_block.c - libFuzzer target for the block decoders of per-sample
 * attributes and of the hour rollup (src/store/block_page.c, block_syms.c;
 * docs/storage-format.md "Blocks"): the ATTR chunk of the symbols file,
 * the SATK chunk of the index, the PATR chunk of the samples file and the
 * ATR column frame a PATR entry addresses, and the RHRS chunk of the
 * samples file. A valid block with attribute sets and an hour rollup
 * (50 ms buckets) is written once (through the head and the block writer,
 * as compaction does); each input then replaces one of those five with
 * its bytes (selected by the first byte: 0xff for RHRS, else its value
 * modulo 4),
 * with the chunk and file checksums recomputed so the bytes reach the
 * decoders, and store_block_check plus a full read (open, symbols, every
 * page's rows) must either succeed or fail with a code and a reason,
 * never crash, and every row's set id must be inside the set table.
 * Speed: the template's chunks are read once into memory and the work
 * block (on tmpfs when there is one) is written once; an input rewrites
 * only the one file it changes and the next input puts that file back,
 * so the cost per input is one small file written and the reads under
 * test (about 1,000 inputs a second, against 19 when every input copied
 * the block and re-read the template).
 * Build and run: scripts/fuzz.sh.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "store/block.h"
#include "store/chunkfile.h"
#include "store/head.h"

#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define T0 (1700000000LL * 1000000000LL)

static char *g_tmpl, *g_work; /* the template block, the block each input rewrites */

/* The template's files, read once: whole bytes and raw chunks in order. */
#define NFILES 4
static const char *const g_names[NFILES] = { "meta", "symbols", "index", "samples" };
static struct tmpl_file {
	struct buf bytes;
	uint32_t nents;
	struct store_chunkfile_entry ents[STORE_CHUNKFILE_MAX_CHUNKS];
	struct buf raw[STORE_CHUNKFILE_MAX_CHUNKS];
} g_files[NFILES];
static int g_dirty = -1;		   /* the work file the last input rewrote, or -1 */
static struct store_block_col_ref *g_refs; /* the template's PATR entries */
static uint32_t g_npages;
static uint64_t g_cols_end; /* where bytes appended to COLS start */

static void die(const char *what)
{
	fprintf(stderr, "fuzz_block: %s\n", what);
	abort();
}

/* One sample of @p with stack main;f<k>, thread attributes and maybe a link. */
static void add_sample(struct model_profile *p, int k)
{
	char name[16];
	struct model_line ln = { 0 };
	struct model_label l[2];
	uint32_t loc[2], link = 0;
	int64_t v = 1 + k % 7;

	ln.function = model_function_intern(p, model_intern(p, "main"), 0, 0, 0);
	loc[1] = model_location_add(p, 0, 0, &ln, 1);
	snprintf(name, sizeof(name), "f%d", k % 5);
	ln.function = model_function_intern(p, model_intern(p, name), 0, 0, 0);
	loc[0] = model_location_add(p, 0, 0, &ln, 1);
	memset(l, 0, sizeof(l));
	snprintf(name, sizeof(name), "t%d", k % 3);
	l[0].key = model_intern(p, "thread.name");
	l[0].str = model_intern(p, name);
	l[1].key = model_intern(p, "thread.id");
	l[1].num = k % 3;
	if (k % 4 == 0) {
		struct model_link lk;

		memset(&lk, 0, sizeof(lk));
		lk.trace_id[0] = (uint8_t)k;
		lk.span_id[0] = (uint8_t)(k / 4);
		VEC_PUSH(&p->links, lk);
		link = (uint32_t)p->links.n - 1;
	}
	model_sample_add(p, model_stack_add(p, loc, 2), 2, &v, l, k % 5 ? 2 : 0,
			 T0 + (int64_t)k * 1000000, link);
}

static int cmp_row(const void *a, const void *b)
{
	const struct store_row *x = a, *y = b;

	return x->ts_ns < y->ts_ns ? -1 : x->ts_ns > y->ts_ns;
}

/* The template: one series, 200 rows in pages of 64, with attribute sets. */
static void make_template(void)
{
	/* tmpfs when there is one: every input rewrites and fsyncs a file */
	struct stat st;
	char base[64];

	snprintf(base, sizeof(base), "%s/profd-fuzz-block.XXXXXX",
		 stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct prof_err err;
	struct store_block_writer *w;
	struct store_block_write_opts o = { .page_rows = 64,
					    .rollup = true,
					    .rollup_bucket_ns = 50 * 1000000 };
	struct store_block_info info = { .level = 1 };
	size_t nn, nsets;

	if (!mkdtemp(base))
		die("mkdtemp");
	model_profile_init(&p);
	model_sample_type_add(&p, "cpu", "nanoseconds");
	p.period_type.type = model_intern(&p, "cpu");
	p.period_type.unit = model_intern(&p, "nanoseconds");
	model_attr_add_str(&p, "service.name", "fuzz");
	for (int k = 0; k < 200; k++)
		add_sample(&p, k);
	prof_err_init(&err);
	if (store_head_add(h, &p, T0, &err))
		die(err.msg);
	model_profile_release(&p);
	char *blocks = xasprintf("%s/blocks", base);
	mkdir(blocks, 0755);
	if (store_block_writer_new(blocks, 1, &o, &w, &err))
		die(err.msg);
	const struct store_stack_node *nodes = store_head_stacks(h, &nn);
	const struct store_attr_set *sets = store_head_attrs(h, &nsets);
	const struct store_row *rows;
	const struct store_series *s = store_head_series_at(h, 0, &rows);
	uint64_t *leaf = xcalloc(nn + 1, sizeof(uint64_t));
	struct store_row *tmp = xmalloc(sizeof(*tmp) * s->nrows);
	for (uint64_t r = 0; r < s->nrows; r++)
		leaf[rows[r].stack]++;
	memcpy(tmp, rows, sizeof(*tmp) * s->nrows);
	qsort(tmp, s->nrows, sizeof(*tmp), cmp_row);
	if (store_block_writer_symbols(w, store_head_dict(h), nodes, nn, leaf, sets, nsets, &err) ||
	    store_block_writer_series(w, s->type, s->labels, s->nlabels, tmp, s->nrows, &err) ||
	    store_block_writer_finish(w, &info, &err))
		die(err.msg);
	store_block_writer_free(w);
	free(tmp);
	free(leaf);
	store_head_free(h);
	char name[17];
	store_block_dir_name(1, name);
	g_tmpl = xasprintf("%s/%s", blocks, name);
	store_block_dir_name(2, name);
	g_work = xasprintf("%s/%s", blocks, name);
	mkdir(g_work, 0755);
	free(blocks);
}

static int file_index(const char *name)
{
	for (int i = 0; i < NFILES; i++)
		if (!strcmp(g_names[i], name))
			return i;
	die(name);
	return -1;
}

static void write_work(int i, const void *p, size_t n)
{
	char *dst = xasprintf("%s/%s", g_work, g_names[i]);

	if (buf_write_file(dst, p, n))
		die("write");
	free(dst);
}

/* Read the template's files and chunks, and write the work block once. */
static void load_template(void)
{
	struct prof_err err;
	struct store_block *b = NULL;

	prof_err_init(&err);
	for (int i = 0; i < NFILES; i++) {
		struct tmpl_file *t = &g_files[i];
		struct store_chunkfile f;
		char *src = xasprintf("%s/%s", g_tmpl, g_names[i]);

		if (buf_read_file(&t->bytes, src))
			die("read template");
		write_work(i, t->bytes.p, t->bytes.len);
		if (i > 0) { /* meta is not a chunk file */
			static const char *const magic[NFILES] = { NULL, STORE_BLOCK_MAGIC_SYMBOLS,
								   STORE_BLOCK_MAGIC_INDEX,
								   STORE_BLOCK_MAGIC_SAMPLES };

			if (store_chunkfile_open(&f, src, magic[i], STORE_BLOCK_VERSION, true,
						 &err))
				die(err.msg);
			t->nents = f.nents;
			memcpy(t->ents, f.ents, sizeof(f.ents[0]) * f.nents);
			for (uint32_t k = 0; k < f.nents; k++) {
				buf_init(&t->raw[k], 0);
				if (store_chunkfile_read(&f, &f.ents[k], (size_t)1 << 30,
							 &t->raw[k], &err))
					die(err.msg);
				if (i == 3 && !strcmp(f.ents[k].id, "COLS"))
					g_cols_end = f.ents[k].offset + f.ents[k].raw_len;
			}
			store_chunkfile_close(&f);
		}
		free(src);
	}
	if (store_block_open(g_tmpl, &b, &err) || !b->attr_cols)
		die("template has no PATR");
	g_npages = b->meta.npages;
	g_refs = xmalloc(sizeof(*g_refs) * g_npages);
	memcpy(g_refs, b->attr_cols, sizeof(*g_refs) * g_npages);
	store_block_free(b);
}

/*
 * Rewrite file @name of the work block from the template's chunks, in
 * their order, chunk @id replaced by @data[@n] (added when absent); with
 * @append (the samples file), @append_n bytes go after COLS's own bytes
 * inside COLS, so frames keep their offsets and the new bytes start at
 * g_cols_end.
 */
static void rewrite(const char *name, const char *magic, const char *id, const void *data, size_t n,
		    const void *append, size_t append_n)
{
	int fi = file_index(name);
	const struct tmpl_file *t = &g_files[fi];
	struct store_chunkfile_writer cw;
	struct prof_err err;
	struct buf cols = BUF_INIT;
	char *dst = xasprintf("%s/%s", g_work, name);
	bool done = false;

	prof_err_init(&err);
	unlink(dst);
	g_dirty = fi;
	if (store_chunkfile_create(&cw, dst, magic, STORE_BLOCK_VERSION, 1, &err))
		die(err.msg);
	for (uint32_t i = 0; i < t->nents; i++) {
		const struct store_chunkfile_entry *e = &t->ents[i];
		const struct buf *raw = &t->raw[i];

		if (!strcmp(e->id, id)) {
			store_chunkfile_add(&cw, e->id, STORE_CHUNKFILE_RAW, data, n, &err);
			done = true;
			continue;
		}
		if (append && !strcmp(e->id, "COLS")) {
			PROF_ASSERT(buf_add(&cols, raw->p, raw->len) == 0);
			PROF_ASSERT(buf_add(&cols, append, append_n) == 0);
			raw = &cols;
		}
		store_chunkfile_add(&cw, e->id, e->codec, raw->p ? raw->p : "", raw->len, &err);
	}
	if (!done)
		store_chunkfile_add(&cw, id, STORE_CHUNKFILE_RAW, data, n, &err);
	if (store_chunkfile_finish(&cw, &err))
		die(err.msg);
	buf_release(&cols);
	free(dst);
}

/* Open, load the symbols, read every page: errors are fine, crashes are not. */
static void read_all(void)
{
	struct store_block *b = NULL;
	struct store_block_syms *sy = NULL;
	struct store_block_scratch sc = { 0 };
	struct prof_err err;

	prof_err_init(&err);
	if (store_block_check(g_work, NULL, &err))
		PROF_ASSERT(err.code < 0 && err.msg[0]);
	prof_err_init(&err);
	if (store_block_open(g_work, &b, &err)) {
		PROF_ASSERT(err.code < 0 && err.msg[0] && !b);
		return;
	}
	if (!store_block_syms_load(b, &sy, &err)) {
		for (size_t i = 1; i < sy->nsets; i++)
			for (uint32_t j = 1; j < sy->sets[i].nlabels; j++)
				PROF_ASSERT(strcmp(sy->sets[i].labels[j - 1].name,
						   sy->sets[i].labels[j].name) < 0);
		for (uint32_t p = 0; p < b->meta.npages; p++) {
			prof_err_init(&err);
			if (store_block_page_rows(b, p, sy, INT64_MIN, INT64_MAX, &sc, &err)) {
				PROF_ASSERT(err.code < 0 && err.msg[0]);
				continue;
			}
			for (size_t r = 0; r < sc.rows.n; r++)
				PROF_ASSERT(sc.rows.v[r].attrs < sy->nsets);
		}
		for (uint32_t k = 0; k < b->nakeys; k++)
			(void)store_block_has_attr_key(b, b->akeys[k]);
		/* The rollup, when it loaded, is trusted: ranges over it stay in bounds. */
		struct store_leaf_acc *acc = xcalloc(sy->nleaves + 1, sizeof(*acc));
		for (int k = 0; k < 4 && sy->rh_width; k++) {
			int64_t lo, hi;
			uint64_t nr;

			for (uint32_t s = 0; s < b->nseries; s++)
				(void)store_block_hours_add(b, sy, s, T0 + k * 40000000LL,
							    T0 + 150000000LL + k * 30000000LL, acc,
							    &lo, &hi, &nr);
		}
		free(acc);
	} else {
		PROF_ASSERT(err.code < 0 && err.msg[0]);
	}
	store_block_syms_free(sy);
	store_block_scratch_release(&sc);
	store_block_free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!g_tmpl) {
		make_template();
		load_template();
	}
	if (size < 1)
		return 0;
	if (g_dirty >= 0) /* put back what the last input changed */
		write_work(g_dirty, g_files[g_dirty].bytes.p, g_files[g_dirty].bytes.len);
	g_dirty = -1;
	const uint8_t *d = data + 1;
	size_t n = size - 1;
	if (data[0] == 0xff) {
		rewrite("samples", STORE_BLOCK_MAGIC_SAMPLES, "RHRS", d, n, NULL, 0);
		read_all();
		return 0;
	}
	switch (data[0] % 4) {
	case 0:
		rewrite("symbols", STORE_BLOCK_MAGIC_SYMBOLS, "ATTR", d, n, NULL, 0);
		break;
	case 1:
		rewrite("index", STORE_BLOCK_MAGIC_INDEX, "SATK", d, n, NULL, 0);
		break;
	case 2:
		rewrite("samples", STORE_BLOCK_MAGIC_SAMPLES, "PATR", d, n, NULL, 0);
		break;
	default: {
		/* The ATR frame of page (data[0] / 4) % npages: @d as its raw column. */
		uint32_t pg = (uint32_t)((data[0] / 4) % g_npages);
		struct store_block_col_ref *refs = xmalloc(sizeof(*refs) * g_npages);

		memcpy(refs, g_refs, sizeof(*refs) * g_npages);
		memset(&refs[pg], 0, sizeof(refs[pg]));
		refs[pg].offset = g_cols_end;
		refs[pg].stored_len = (uint32_t)n;
		refs[pg].raw_len = (uint32_t)n;
		refs[pg].crc = store_chunkfile_crc32(0, d, n);
		rewrite("samples", STORE_BLOCK_MAGIC_SAMPLES, "PATR", refs,
			sizeof(*refs) * g_npages, d, n);
		free(refs);
		break;
	}
	}
	read_all();
	return 0;
}
