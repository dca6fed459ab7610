/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse_ingest.c - the ClickHouse backend's ingest: content ids
 * (XXH3-64 with a fixed seed over a canonical key, so every profd server
 * writes the same id for the same stack, location, mapping, series or
 * attribute set) and one batched RowBinary INSERT per table, the
 * dictionaries before the samples.
 */
#include "base/compat.h"
#include "store/clickhouse.h"
#include "store/clickhouse_int.h"

#include "base/buf.h"
#include "base/curl_dl.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "store/backend.h"
#include "store/head_int.h"
#include "store/store_int.h"

#include <errno.h>
#include <string.h>
#include <xxhash.h>

/* --- content ids -------------------------------------------------------- */

static uint64_t id_of(const struct buf *b)
{
	uint64_t id = XXH3_64bits_withSeed(b->p, b->len, CH_ID_SEED);

	return id ? id : 1; /* 0 means "none" (no mapping, the root, no attributes) */
}

static void key_u64(struct buf *b, uint64_t v)
{
	PROF_ASSERT(buf_add(b, &v, sizeof(v)) == 0);
}

static void key_str(struct buf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	key_u64(b, n);
	PROF_ASSERT(buf_add(b, s ? s : "", n) == 0);
}

static uint64_t mapping_id(const struct model_profile *d, const struct model_mapping *m)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "M", 1) == 0);
	key_u64(&k, m->memory_start);
	key_u64(&k, m->memory_limit);
	key_u64(&k, m->file_offset);
	key_str(&k, model_str(d, m->filename));
	key_str(&k, model_str(d, m->build_id));
	key_u64(&k, model_mapping_flags(m));
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t location_id(const struct model_profile *d, const struct model_location *l,
			    uint64_t map_id)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "L", 1) == 0);
	key_u64(&k, map_id);
	key_u64(&k, l->address);
	key_u64(&k, l->is_folded);
	key_str(&k, model_str(d, l->frame_type));
	key_u64(&k, l->nlines);
	for (uint32_t i = 0; i < l->nlines; i++) {
		const struct model_line *ln = &d->lines.v[l->line_off + i];
		const struct model_function *f =
			ln->function ? &d->functions.v[ln->function] : NULL;

		key_u64(&k, f != NULL);
		key_str(&k, f ? model_str(d, f->name) : "");
		key_str(&k, f ? model_str(d, f->system_name) : "");
		key_str(&k, f ? model_str(d, f->filename) : "");
		key_u64(&k, f ? (uint64_t)f->start_line : 0);
		key_u64(&k, (uint64_t)ln->line);
		key_u64(&k, (uint64_t)ln->column);
	}
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t stack_id(uint64_t parent, uint64_t loc)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "S", 1) == 0);
	key_u64(&k, parent);
	key_u64(&k, loc);
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t attrs_id(const struct store_attr_set *a)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "A", 1) == 0);
	key_u64(&k, a->nlabels);
	for (uint32_t i = 0; i < a->nlabels; i++) {
		key_str(&k, a->labels[i].name);
		key_str(&k, a->labels[i].value);
	}
	key_u64(&k, a->has_link);
	if (a->has_link) {
		PROF_ASSERT(buf_add(&k, a->trace_id, 16) == 0);
		PROF_ASSERT(buf_add(&k, a->span_id, 8) == 0);
	}
	id = id_of(&k);
	buf_release(&k);
	return id;
}

static uint64_t series_id(const struct store_series *s)
{
	struct buf k = BUF_INIT;
	uint64_t id;

	PROF_ASSERT(buf_add(&k, "T", 1) == 0);
	key_str(&k, s->type);
	key_u64(&k, s->nlabels);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		key_str(&k, s->labels[i].name);
		key_str(&k, s->labels[i].value);
	}
	id = id_of(&k);
	buf_release(&k);
	return id;
}

/* --- ingest ------------------------------------------------------------- */

/* INSERT the RowBinary rows of @rows into table @table (released here). */
static int ch_insert(struct ch *c, const char *table, struct buf *rows, struct prof_err *err)
{
	char sql[160];
	int rc = 0;

	snprintf(sql, sizeof(sql), "INSERT INTO %s.%s FORMAT RowBinary", c->db, table);
	if (rows->len)
		rc = store_ch_call(c, sql, rows->p, rows->len, NULL, err);
	buf_release(rows);
	return rc;
}

static void rb_ds(struct buf *b, const struct ch *c)
{
	rb_cstr(b, c->dsraw);
}

int store_ch_ingest(void *ctx, const struct model_profile *const *p, size_t n, int64_t now_ns,
		    struct prof_err *err)
{
	struct ch *c = ctx;
	struct store_head *h = store_head_new();
	const struct model_profile *d;
	const struct store_stack_node *nodes;
	const struct store_attr_set *sets;
	size_t nn, na;
	uint64_t *mid, *lid, *sid, *aid;
	uint8_t *used;
	struct buf rows[6];
	int rc = 0;

	for (int i = 0; i < 6; i++)
		buf_init(&rows[i], 0);
	/* The head derives series, labels, attribute sets and stacks exactly as
	 * the embedded store does; its tables become the rows. */
	store_head_add_batch(h, p, n, now_ns);
	d = store_head_dict(h);
	nodes = store_head_stacks(h, &nn);
	sets = store_head_attrs(h, &na);
	mid = xcalloc(d->mappings.n + 1, sizeof(*mid));
	lid = xcalloc(d->locations.n + 1, sizeof(*lid));
	sid = xcalloc(nn + 1, sizeof(*sid));
	aid = xcalloc(na + 1, sizeof(*aid));
	used = xcalloc(nn + 1, 1);
	for (size_t i = 1; i < d->mappings.n; i++) {
		const struct model_mapping *m = &d->mappings.v[i];

		mid[i] = mapping_id(d, m);
		rb_ds(&rows[0], c);
		rb_u64(&rows[0], mid[i]);
		rb_u64(&rows[0], m->memory_start);
		rb_u64(&rows[0], m->memory_limit);
		rb_u64(&rows[0], m->file_offset);
		rb_cstr(&rows[0], model_str(d, m->filename));
		rb_cstr(&rows[0], model_str(d, m->build_id));
		rb_u8(&rows[0], (uint8_t)model_mapping_flags(m));
	}
	for (size_t i = 1; i < d->locations.n; i++) {
		const struct model_location *l = &d->locations.v[i];
		struct buf *b = &rows[1];

		lid[i] = location_id(d, l, mid[l->mapping]);
		rb_ds(b, c);
		rb_u64(b, lid[i]);
		rb_u64(b, mid[l->mapping]);
		rb_u64(b, l->address);
		rb_u8(b, l->is_folded);
		rb_cstr(b, model_str(d, l->frame_type));
		for (int col = 0; col < 7; col++) {
			rb_varint(b, l->nlines);
			for (uint32_t k = 0; k < l->nlines; k++) {
				const struct model_line *ln = &d->lines.v[l->line_off + k];
				const struct model_function *f =
					ln->function ? &d->functions.v[ln->function] : NULL;

				switch (col) {
				case 0:
					rb_cstr(b, f ? model_str(d, f->name) : "");
					break;
				case 1:
					rb_cstr(b, f ? model_str(d, f->system_name) : "");
					break;
				case 2:
					rb_cstr(b, f ? model_str(d, f->filename) : "");
					break;
				case 3:
					rb_u64(b, f ? (uint64_t)f->start_line : 0);
					break;
				case 4:
					rb_u8(b, f != NULL);
					break;
				case 5:
					rb_u64(b, (uint64_t)ln->line);
					break;
				default:
					rb_u64(b, (uint64_t)ln->column);
					break;
				}
			}
		}
	}
	for (size_t i = 1; i < nn; i++)
		sid[i] = stack_id(sid[nodes[i].parent], lid[nodes[i].loc]);
	for (size_t i = 1; i < na; i++) {
		const struct store_attr_set *a = &sets[i];
		struct buf *b = &rows[2];

		aid[i] = attrs_id(a);
		rb_ds(b, c);
		rb_u64(b, aid[i]);
		rb_varint(b, a->nlabels);
		for (uint32_t k = 0; k < a->nlabels; k++)
			rb_cstr(b, a->labels[k].name);
		rb_varint(b, a->nlabels);
		for (uint32_t k = 0; k < a->nlabels; k++)
			rb_cstr(b, a->labels[k].value);
		rb_u8(b, a->has_link);
		rb_str(b, a->has_link ? (const char *)a->trace_id : "", a->has_link ? 16 : 0);
		rb_str(b, a->has_link ? (const char *)a->span_id : "", a->has_link ? 8 : 0);
	}
	for (size_t i = 0; i < store_head_nseries(h); i++) {
		const struct store_row *r;
		const struct store_series *s = store_head_series_at(h, i, &r);
		uint64_t id = series_id(s);
		struct buf *b = &rows[3];

		rb_ds(b, c);
		rb_u64(b, id);
		rb_cstr(b, s->type);
		rb_varint(b, s->nlabels);
		for (uint32_t k = 0; k < s->nlabels; k++)
			rb_cstr(b, s->labels[k].name);
		rb_varint(b, s->nlabels);
		for (uint32_t k = 0; k < s->nlabels; k++)
			rb_cstr(b, s->labels[k].value);
		rb_u64(b, (uint64_t)now_ns);
		rb_u32(b, (uint32_t)i);
		for (uint64_t k = 0; k < s->nrows; k++) {
			b = &rows[5];
			rb_ds(b, c);
			rb_u64(b, id);
			/* 1 ms, as the embedded store's blocks keep times (ts >= 0) */
			rb_u64(b, (uint64_t)(r[k].ts_ns - r[k].ts_ns % CH_TS_RESOLUTION_NS));
			rb_u64(b, sid[r[k].stack]);
			rb_u64(b, aid[r[k].attrs]);
			rb_u64(b, (uint64_t)r[k].value);
			rb_u64(b, (uint64_t)now_ns);
			rb_u32(b, (uint32_t)k);
			if (!used[r[k].stack]) {
				/* the stack's row: its locations, leaf first */
				struct buf *sb = &rows[4];
				size_t depth = 0;

				used[r[k].stack] = 1;
				for (uint32_t at = r[k].stack; at; at = nodes[at].parent)
					depth++;
				rb_ds(sb, c);
				rb_u64(sb, sid[r[k].stack]);
				rb_varint(sb, depth);
				for (uint32_t at = r[k].stack; at; at = nodes[at].parent)
					rb_u64(sb, lid[nodes[at].loc]);
				rb_u64(sb, (uint64_t)now_ns);
				rb_u32(sb, r[k].stack);
			}
		}
	}
	/* Dictionaries first: a sample read back always finds its stack. */
	rc = ch_insert(c, "mappings", &rows[0], err);
	if (!rc)
		rc = ch_insert(c, "locations", &rows[1], err);
	if (!rc)
		rc = ch_insert(c, "stacks", &rows[4], err);
	if (!rc)
		rc = ch_insert(c, "attrs", &rows[2], err);
	if (!rc)
		rc = ch_insert(c, "series", &rows[3], err);
	if (!rc)
		rc = ch_insert(c, "samples", &rows[5], err);
	for (int i = 0; i < 6; i++)
		buf_release(&rows[i]);
	free(mid);
	free(lid);
	free(sid);
	free(aid);
	free(used);
	store_head_free(h);
	return rc;
}
