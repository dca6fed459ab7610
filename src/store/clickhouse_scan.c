/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clickhouse_scan.c - the ClickHouse backend's scans: the query's
 * dataset, time range, type and equality matchers pushed down as SQL
 * (GROUP BY series, stack with sum(value) for totals without per-row
 * filters); the answer's rows rebuilt into a head that the store's own
 * visitor walks, so views do not know which backend answered.
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

/* Source ids of the heads scans build: unique, so the query layer's
 * translation cache (keyed by source id and dictionary) never takes one
 * query's head for another's. */
static uint64_t ch_source_seq = 1ULL << 62;

/* --- scans -------------------------------------------------------------- */

/* id -> index, sorted by id for bsearch. */
struct idx {
	uint64_t id;
	uint32_t at;
};

static int idx_cmp(const void *a, const void *b)
{
	const struct idx *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static bool idx_find(const struct idx *v, size_t n, uint64_t id, uint32_t *at)
{
	struct idx key = { id, 0 };
	const struct idx *e = bsearch(&key, v, n, sizeof(*v), idx_cmp);

	if (e)
		*at = e->at;
	return e != NULL;
}

typedef VEC(struct idx) idx_vec;

static void idx_sort(idx_vec *v)
{
	if (v->n)
		qsort(v->v, v->n, sizeof(v->v[0]), idx_cmp);
}

/* The label condition "a label @name = @value" on the arrays names, values. */
static void sql_has_label(struct buf *b, const char *name, const char *value)
{
	PROF_ASSERT(buf_addstr(b, "arrayExists((k, v) -> k = ") == 0);
	sql_str(b, name, strlen(name));
	PROF_ASSERT(buf_addstr(b, " AND v = ") == 0);
	sql_str(b, value, strlen(value));
	PROF_ASSERT(buf_addstr(b, ", lnames, lvalues)") == 0);
}

/* Does some attribute set of the dataset have a label @name? (@keys sorted) */
static bool is_attr_key(char **keys, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(keys[i], name))
			return true;
	return false;
}

/* The rollup's bucket (samples_hour.hour): an hour, in ns. */
#define CH_HOUR_NS 3600000000000LL

struct scan_q {
	struct buf samples_where; /* WHERE of samples: dataset, range, series */
	struct buf series_in;	  /* "series_id IN (...)": the series of the query */
	/* A totals scan whose range holds whole hours [h0, h1) reads them from
	 * samples_hour and only the rest of the range from samples (h1 > h0);
	 * else h0 = h1 = 0. */
	int64_t h0, h1;
	char **keys; /* attribute keys of the dataset */
	size_t nkeys;
	bool row_filters; /* some matcher or the link filter applies per row */
};

static void scan_q_release(struct scan_q *sq)
{
	buf_release(&sq->samples_where);
	buf_release(&sq->series_in);
	for (size_t i = 0; i < sq->nkeys; i++)
		free(sq->keys[i]);
	free(sq->keys);
}

static int load_attr_keys(struct ch *c, struct scan_q *sq, struct prof_err *err)
{
	struct buf sql = BUF_INIT, ans = BUF_INIT;
	struct rd r;
	int rc;

	PROF_ASSERT(buf_addf(&sql,
			     "SELECT DISTINCT arrayJoin(lnames) FROM %s.attrs WHERE dataset = ",
			     c->db) == 0);
	PROF_ASSERT(buf_addstr(&sql, c->ds) == 0);
	PROF_ASSERT(buf_addstr(&sql, " FORMAT RowBinary") == 0);
	rc = store_ch_sql(c, &sql, &ans, err);
	if (rc)
		return rc;
	r = (struct rd){ (const unsigned char *)ans.p, (const unsigned char *)ans.p + ans.len,
			 false };
	while (rd_more(&r)) {
		size_t n;
		const char *s = rd_str(&r, &n);

		if (r.bad)
			break;
		sq->keys = xrealloc(sq->keys, (sq->nkeys + 1) * sizeof(*sq->keys));
		sq->keys[sq->nkeys++] = xstrndup(s, n);
	}
	buf_release(&ans);
	if (r.bad)
		return prof_err_set(err, -EIO, -1, "%s: malformed answer (attribute keys)",
				    c->desc);
	return 0;
}

/* Build the pushed-down WHERE of @q into sq->samples_where. */
static int scan_where(struct ch *c, const struct store_query *q, const struct store_link_filter *lf,
		      struct scan_q *sq, struct prof_err *err)
{
	struct buf *w = &sq->samples_where;
	int64_t from = PROF_MAX(q->from_ns, (int64_t)0);
	int rc;

	buf_init(w, 0);
	if (q->nm) {
		rc = load_attr_keys(c, sq, err);
		if (rc)
			return rc;
	}
	sq->row_filters = lf && (lf->trace_id || lf->span_id);
	PROF_ASSERT(buf_addstr(w, "dataset = ") == 0);
	PROF_ASSERT(buf_addstr(w, c->ds) == 0);
	PROF_ASSERT(buf_addf(w, " AND ts >= %lld AND ts <= %lld AND ", (long long)from,
			     (long long)q->to_ns) == 0);
	w = &sq->series_in;
	buf_init(w, 0);
	PROF_ASSERT(buf_addf(w, "series_id IN (SELECT series_id FROM %s.series WHERE dataset = ",
			     c->db) == 0);
	PROF_ASSERT(buf_addstr(w, c->ds) == 0);
	if (q->type) {
		PROF_ASSERT(buf_addstr(w, " AND type = ") == 0);
		sql_str(w, q->type, strlen(q->type));
	}
	for (size_t i = 0; i < q->nm; i++) {
		const struct store_matcher *m = &q->m[i];
		const char *alias = store_label_alias(m->name);

		if (is_attr_key(sq->keys, sq->nkeys, m->name) ||
		    (alias && is_attr_key(sq->keys, sq->nkeys, alias))) {
			sq->row_filters = true; /* evaluated per row, in profd */
			continue;
		}
		/* Pushed down: equality on a non-empty value (a superset of what
		 * profd's own evaluation keeps, which runs again on the rows). */
		if (m->op != STORE_MATCH_EQ || !m->value[0])
			continue;
		PROF_ASSERT(buf_addstr(w, " AND (") == 0);
		sql_has_label(w, m->name, m->value);
		if (alias) {
			PROF_ASSERT(buf_addstr(w, " OR ") == 0);
			sql_has_label(w, alias, m->value);
		}
		PROF_ASSERT(buf_addstr(w, ")") == 0);
	}
	PROF_ASSERT(buf_addstr(w, ")") == 0);
	PROF_ASSERT(buf_add(&sq->samples_where, w->p, w->len) == 0);
	PROF_ASSERT(buf_add(&sq->samples_where, "", 1) == 0);
	sq->samples_where.len--;
	PROF_ASSERT(buf_add(w, "", 1) == 0);
	w->len--;
	return 0;
}

/*
 * The whole hours [*h0, *h1) of [from, to] (to inclusive) when there is
 * at least one, else 0, 0: every stored row of such an hour is in range,
 * and every other row in range lies in the partial hours at either end.
 */
static void whole_hours(int64_t from, int64_t to, int64_t *h0, int64_t *h1)
{
	*h0 = *h1 = 0;
	from = PROF_MAX(from, (int64_t)0);
	if (to < CH_HOUR_NS - 1 || from > INT64_MAX - CH_HOUR_NS)
		return;
	/* Stored times are multiples of the resolution: a range ending at
	 * the last millisecond of an hour holds all of it. */
	if (to <= INT64_MAX - CH_TS_RESOLUTION_NS)
		to = to / CH_TS_RESOLUTION_NS * CH_TS_RESOLUTION_NS + (CH_TS_RESOLUTION_NS - 1);
	int64_t a = (from + CH_HOUR_NS - 1) / CH_HOUR_NS * CH_HOUR_NS;
	int64_t b = (to - (CH_HOUR_NS - 1)) / CH_HOUR_NS * CH_HOUR_NS + CH_HOUR_NS;

	if (b > a) {
		*h0 = a;
		*h1 = b;
	}
}

/* A query's answer: SQL with %1$s the db and %2$s the samples WHERE. */
static int scan_fetch(struct ch *c, const struct scan_q *sq, const char *fmt, struct buf *ans,
		      struct prof_err *err)
{
	struct buf sql = BUF_INIT;
	const char *w = sq->samples_where.p ? sq->samples_where.p : "1";
	/* fmt names %s pairs in order: db, where, ... expanded by hand to
	 * avoid positional printf: each "@D" is the db, "@W" the where,
	 * "@S" the dataset literal */
	for (const char *p = fmt; *p; p++) {
		if (p[0] == '@' && p[1] == 'I' && sq->h1 > sq->h0) {
			/* the (series, stack) pairs of the rows: the edges from
			 * samples, the whole hours from the rollup */
			PROF_ASSERT(
				buf_addf(
					&sql,
					"(SELECT series_id, stack_id FROM %s.samples WHERE %s AND "
					"(ts < %lld OR ts >= %lld) UNION ALL SELECT series_id, "
					"stack_id FROM %s.samples_hour WHERE dataset = %s AND hour "
					">= %lld AND hour < %lld AND %s)",
					c->db, w, (long long)sq->h0, (long long)sq->h1, c->db,
					c->ds, (long long)sq->h0, (long long)sq->h1,
					sq->series_in.p) == 0);
			p++;
			continue;
		}
		if (p[0] == '@' && p[1] == 'I') {
			PROF_ASSERT(buf_addf(&sql, "%s.samples WHERE %s", c->db, w) == 0);
			p++;
			continue;
		}
		if (p[0] == '@' && (p[1] == 'D' || p[1] == 'W' || p[1] == 'S')) {
			PROF_ASSERT(buf_addstr(&sql, p[1] == 'D'   ? c->db
						     : p[1] == 'W' ? w
								   : c->ds) == 0);
			p++;
			continue;
		}
		PROF_ASSERT(buf_add(&sql, p, 1) == 0);
	}
	PROF_ASSERT(buf_addstr(&sql, " FORMAT RowBinary") == 0);
	return store_ch_sql(c, &sql, ans, err);
}

static struct rd rd_of(const struct buf *b)
{
	return (struct rd){ (const unsigned char *)b->p, (const unsigned char *)b->p + b->len,
			    false };
}

/* What a scan rebuilt: a head of its own and the maps from ClickHouse ids. */
struct scan_build {
	struct store_head *h;
	idx_vec series; /* series_id -> index into ser */
	VEC(struct series *) ser;
	idx_vec stacks; /* stack_id -> head node */
	idx_vec attrs;	/* attrs_id -> head set */
	bool no_stacks; /* stacks not read: every row's stack is node 0 */
};

static void scan_build_release(struct scan_build *b)
{
	VEC_FREE(&b->series);
	VEC_FREE(&b->ser);
	VEC_FREE(&b->stacks);
	VEC_FREE(&b->attrs);
	store_head_free(b->h);
}

static int bad_answer(struct ch *c, const char *what, struct prof_err *err)
{
	return prof_err_set(err, -EIO, -1, "%s: malformed answer (%s)", c->desc, what);
}

/* The series that have rows in the pushed-down selection. */
static int build_series(struct ch *c, const struct scan_q *sq, struct scan_build *b,
			struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct rd r;
	VEC(struct store_label) lab = { 0 };
	int rc = scan_fetch(
		c, sq,
		"SELECT series_id, type, lnames, lvalues FROM @D.series WHERE dataset = "
		"@S AND series_id IN (SELECT DISTINCT series_id FROM @I) ORDER BY first_ns, first_ord LIMIT 1 BY series_id",
		&ans, err);

	if (rc)
		return rc;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t id = rd_u64(&r);
		size_t tn, nn, nv;
		const char *t = rd_str(&r, &tn);
		char *type = xstrndup(t, tn);
		char **names, **values;

		nn = rd_count(&r);
		names = xcalloc(nn + 1, sizeof(*names));
		for (size_t i = 0; i < nn; i++) {
			size_t n;
			const char *s = rd_str(&r, &n);

			names[i] = xstrndup(s, n);
		}
		nv = rd_count(&r);
		values = xcalloc(nv + 1, sizeof(*values));
		for (size_t i = 0; i < nv; i++) {
			size_t n;
			const char *s = rd_str(&r, &n);

			values[i] = xstrndup(s, n);
		}
		if (!r.bad && nn == nv) {
			struct idx e = { id, (uint32_t)b->ser.n };

			lab.n = 0;
			for (size_t i = 0; i < nn; i++) {
				struct store_label l = { names[i], values[i] };

				VEC_PUSH(&lab, l);
			}
			VEC_PUSH(&b->ser, head_series_labels(b->h, type, lab.v, nn));
			VEC_PUSH(&b->series, e);
		} else {
			r.bad = true;
		}
		for (size_t i = 0; i < nn; i++)
			free(names[i]);
		for (size_t i = 0; i < nv; i++)
			free(values[i]);
		free(names);
		free(values);
		free(type);
	}
	VEC_FREE(&lab);
	buf_release(&ans);
	if (r.bad)
		return bad_answer(c, "series", err);
	idx_sort(&b->series);
	return 0;
}

/* Mappings, locations and stacks of the selected rows into the head's dictionary. */
static int build_stacks(struct ch *c, const struct scan_q *sq, struct scan_build *b,
			struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct model_profile d;
	idx_vec maps = { 0 }, locs = { 0 }, leaf = { 0 };
	VEC(struct store_stack_node) nodes = { 0 };
	VEC(struct model_line) lines = { 0 };
	uint32_t *map = NULL;
	struct rd r;
	int rc;

	model_profile_init(&d);
	rc = scan_fetch(c, sq,
			"SELECT mapping_id, mem_start, mem_limit, file_offset, filename, build_id, "
			"flags FROM @D.mappings WHERE dataset = @S AND mapping_id IN (SELECT "
			"mapping_id FROM @D.locations WHERE dataset = @S AND loc_id IN (SELECT "
			"arrayJoin(locs) FROM @D.stacks WHERE dataset = @S AND stack_id IN (SELECT "
			"DISTINCT stack_id FROM @I))) LIMIT 1 BY mapping_id",
			&ans, err);
	if (rc)
		goto out;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		struct model_mapping m = { 0 };
		uint64_t id = rd_u64(&r);
		size_t n;
		const char *s;
		unsigned fl;

		m.memory_start = rd_u64(&r);
		m.memory_limit = rd_u64(&r);
		m.file_offset = rd_u64(&r);
		s = rd_str(&r, &n);
		m.filename = model_intern_n(&d, s, n);
		s = rd_str(&r, &n);
		m.build_id = model_intern_n(&d, s, n);
		fl = rd_u8(&r);
		m.has_functions = fl & 1;
		m.has_filenames = fl >> 1 & 1;
		m.has_line_numbers = fl >> 2 & 1;
		m.has_inline_frames = fl >> 3 & 1;
		if (r.bad)
			break;
		struct idx e = { id, model_mapping_add(&d, &m) };

		VEC_PUSH(&maps, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "mappings", err);
		goto out;
	}
	idx_sort(&maps);
	rc = scan_fetch(
		c, sq,
		"SELECT loc_id, mapping_id, address, folded, frame_type, fn_name, "
		"fn_system_name, fn_file, fn_start_line, has_fn, line, col FROM "
		"@D.locations WHERE dataset = @S AND loc_id IN (SELECT arrayJoin(locs) FROM "
		"@D.stacks WHERE dataset = @S AND stack_id IN (SELECT DISTINCT stack_id FROM "
		"@I)) LIMIT 1 BY loc_id",
		&ans, err);
	if (rc)
		goto out;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t id = rd_u64(&r), mid = rd_u64(&r), addr = rd_u64(&r);
		uint8_t folded = rd_u8(&r);
		size_t n, nl = 0;
		const char *s = rd_str(&r, &n);
		uint32_t ft = n ? model_intern_n(&d, s, n) : 0, mapping = 0;
		struct model_function f[1];
		/* columns of lines: 7 arrays of the same length */
		VEC(struct model_function) fns = { 0 };
		VEC(uint8_t) has = { 0 };

		lines.n = 0;
		for (int col = 0; col < 7 && !r.bad; col++) {
			size_t cnt = rd_count(&r);

			if (col == 0)
				nl = cnt;
			else if (cnt != nl)
				r.bad = true;
			for (size_t k = 0; k < cnt && !r.bad; k++) {
				if (col == 0) {
					struct model_function z = { 0 };
					struct model_line lz = { 0 };

					VEC_PUSH(&fns, z);
					VEC_PUSH(&lines, lz);
					VEC_PUSH(&has, 0);
				}
				switch (col) {
				case 0:
				case 1:
				case 2:
					s = rd_str(&r, &n);
					*(col == 0   ? &fns.v[k].name
					  : col == 1 ? &fns.v[k].system_name
						     : &fns.v[k].filename) =
						model_intern_n(&d, s, n);
					break;
				case 3:
					fns.v[k].start_line = (int64_t)rd_u64(&r);
					break;
				case 4:
					has.v[k] = rd_u8(&r);
					break;
				case 5:
					lines.v[k].line = (int64_t)rd_u64(&r);
					break;
				default:
					lines.v[k].column = (int64_t)rd_u64(&r);
					break;
				}
			}
		}
		for (size_t k = 0; k < nl && !r.bad; k++) {
			f[0] = fns.v[k];
			lines.v[k].function =
				has.v[k] ? model_function_intern(&d, f->name, f->system_name,
								 f->filename, f->start_line)
					 : 0;
		}
		VEC_FREE(&fns);
		VEC_FREE(&has);
		if (r.bad)
			break;
		if (mid && !idx_find(maps.v, maps.n, mid, &mapping)) {
			r.bad = true;
			break;
		}
		uint32_t at = model_location_add(&d, mapping, addr, lines.v, (uint32_t)nl);

		d.locations.v[at].is_folded = folded;
		d.locations.v[at].frame_type = ft;
		struct idx e = { id, at };

		VEC_PUSH(&locs, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "locations", err);
		goto out;
	}
	idx_sort(&locs);
	rc = scan_fetch(c, sq,
			"SELECT stack_id, locs FROM @D.stacks WHERE dataset = @S AND stack_id IN "
			"(SELECT DISTINCT stack_id FROM @I) ORDER BY first_ns, first_ord "
			"LIMIT 1 BY stack_id",
			&ans, err);
	if (rc)
		goto out;
	{
		struct store_stack_node root = { 0, 0 };

		VEC_PUSH(&nodes, root);
	}
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t id = rd_u64(&r);
		size_t depth = rd_count(&r);
		uint32_t *path = xcalloc(depth + 1, sizeof(*path));
		uint32_t parent = 0;

		for (size_t k = 0; k < depth && !r.bad; k++)
			if (!idx_find(locs.v, locs.n, rd_u64(&r), &path[k]))
				r.bad = true;
		for (size_t k = depth; k-- > 0 && !r.bad;) {
			struct store_stack_node nd = { parent, path[k] };

			VEC_PUSH(&nodes, nd);
			parent = (uint32_t)(nodes.n - 1);
		}
		free(path);
		if (r.bad)
			break;
		struct idx e = { id, parent };

		VEC_PUSH(&leaf, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "stacks", err);
		goto out;
	}
	map = xcalloc(nodes.n + 1, sizeof(*map));
	rc = store_head_import(b->h, &d, nodes.v, nodes.n, map);
	if (rc) {
		rc = prof_err_set(err, rc, -1, "%s: stacks read back do not check", c->desc);
		goto out;
	}
	for (size_t i = 0; i < leaf.n; i++) {
		struct idx e = { leaf.v[i].id, map[leaf.v[i].at] };

		VEC_PUSH(&b->stacks, e);
	}
	idx_sort(&b->stacks);
out:
	free(map);
	buf_release(&ans);
	VEC_FREE(&maps);
	VEC_FREE(&locs);
	VEC_FREE(&leaf);
	VEC_FREE(&nodes);
	VEC_FREE(&lines);
	model_profile_release(&d);
	return rc;
}

/* The attribute sets of the selected rows into the head's table. */
static int build_attrs(struct ch *c, const struct scan_q *sq, struct scan_build *b,
		       struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	VEC(struct store_attr_set) sets = { 0 };
	VEC(char *) strs = { 0 };
	idx_vec ids = { 0 };
	uint32_t *map = NULL;
	struct rd r;
	int rc = scan_fetch(c, sq,
			    "SELECT attrs_id, lnames, lvalues, has_link, trace_id, span_id FROM "
			    "@D.attrs WHERE dataset = @S AND attrs_id IN (SELECT DISTINCT attrs_id "
			    "FROM @D.samples WHERE @W) LIMIT 1 BY attrs_id",
			    &ans, err);

	if (rc)
		return rc;
	{
		struct store_attr_set z = { 0 };

		VEC_PUSH(&sets, z);
	}
	r = rd_of(&ans);
	while (rd_more(&r)) {
		struct store_attr_set a = { 0 };
		uint64_t id = rd_u64(&r);
		size_t nn = rd_count(&r), nv, n;
		struct store_label *l = xcalloc(nn + 1, sizeof(*l));
		const char *s;

		for (size_t k = 0; k < nn; k++) {
			s = rd_str(&r, &n);
			l[k].name = xstrndup(s, n);
			VEC_PUSH(&strs, (char *)l[k].name);
		}
		nv = rd_count(&r);
		for (size_t k = 0; k < nv && k < nn; k++) {
			s = rd_str(&r, &n);
			l[k].value = xstrndup(s, n);
			VEC_PUSH(&strs, (char *)l[k].value);
		}
		a.labels = l;
		a.nlabels = (uint32_t)nn;
		a.has_link = rd_u8(&r);
		s = rd_str(&r, &n);
		if (a.has_link && n == 16)
			memcpy(a.trace_id, s, 16);
		else if (a.has_link)
			r.bad = true;
		s = rd_str(&r, &n);
		if (a.has_link && n == 8)
			memcpy(a.span_id, s, 8);
		else if (a.has_link)
			r.bad = true;
		if (nv != nn)
			r.bad = true;
		if (r.bad) {
			for (size_t k = 0; k < nn; k++)
				if (!l[k].value)
					l[k].value = "";
			VEC_PUSH(&sets, a);
			break;
		}
		struct idx e = { id, (uint32_t)sets.n };

		VEC_PUSH(&sets, a);
		VEC_PUSH(&ids, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "attribute sets", err);
		goto out;
	}
	map = xcalloc(sets.n + 1, sizeof(*map));
	store_head_import_attrs(b->h, sets.v, sets.n, map);
	for (size_t i = 0; i < ids.n; i++) {
		struct idx e = { ids.v[i].id, map[ids.v[i].at] };

		VEC_PUSH(&b->attrs, e);
	}
	idx_sort(&b->attrs);
out:
	for (size_t i = 1; i < sets.n; i++)
		free((void *)sets.v[i].labels);
	for (size_t i = 0; i < strs.n; i++)
		free(strs.v[i]);
	VEC_FREE(&strs);
	VEC_FREE(&sets);
	VEC_FREE(&ids);
	free(map);
	buf_release(&ans);
	return rc;
}

/* The wrapped visitor: the head's source under a unique id. */
struct wrap {
	const struct store_visitor *v;
	uint64_t id;
};

static const struct store_source *wrap_src(const struct wrap *w, const struct store_source *src,
					   struct store_source *tmp)
{
	*tmp = *src;
	tmp->id = w->id;
	return tmp;
}

static int w_begin(void *arg, const struct store_source *src)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->source_begin ? w->v->source_begin(w->v->arg, wrap_src(w, src, &t)) : 0;
}

static int w_series(void *arg, const struct store_source *src, const struct store_series *s)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->series ? w->v->series(w->v->arg, wrap_src(w, src, &t), s) : 0;
}

static int w_rows(void *arg, const struct store_source *src, const struct store_series *s,
		  const struct store_row *rows, size_t n)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->rows(w->v->arg, wrap_src(w, src, &t), s, rows, n);
}

static int w_totals(void *arg, const struct store_source *src, const struct store_stack_total *tt,
		    size_t n, uint64_t nrows)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->totals(w->v->arg, wrap_src(w, src, &t), tt, n, nrows);
}

static int w_end(void *arg, const struct store_source *src)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->source_end ? w->v->source_end(w->v->arg, wrap_src(w, src, &t)) : 0;
}

static int w_steps(void *arg, const struct store_source *src, const struct store_series *s,
		   const struct store_step_sum *v, size_t n)
{
	struct wrap *w = arg;
	struct store_source t;

	return w->v->steps(w->v->arg, wrap_src(w, src, &t), s, v, n);
}

static bool find_ser(const struct scan_build *b, uint64_t id, struct series **out)
{
	uint32_t at;

	if (!idx_find(b->series.v, b->series.n, id, &at))
		return false;
	*out = b->ser.v[at];
	return true;
}

/* One (series, stack) group of a totals scan, as ClickHouse summed it. */
struct group {
	uint32_t ser;  /* index into scan_build.ser (creation order) */
	uint32_t node; /* head node */
	int64_t sum;
	uint64_t rows;
	int64_t lo, hi;	   /* time range of its rows */
	uint64_t first_ns; /* its first row: ingest time, then order in the ingest */
	uint32_t first_ord;
};

/* Series by creation, then each series' stacks by their first row: the
 * order a head's totals scan first touches the stacks in. */
static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	if (x->ser != y->ser)
		return x->ser < y->ser ? -1 : 1;
	if (x->first_ns != y->first_ns)
		return x->first_ns < y->first_ns ? -1 : 1;
	return x->first_ord < y->first_ord ? -1 : x->first_ord > y->first_ord;
}

/*
 * Totals scan without per-row filters: ClickHouse sums per (series,
 * stack), with each group's first row; profd keeps the series its
 * matchers select and makes the one totals call a head's totals scan
 * makes: the same sums, row counts and entry order.
 */
static int scan_totals_direct(struct ch *c, const struct store_query *q, const struct scan_q *sq,
			      struct scan_build *b, const struct store_visitor *v,
			      struct store_scan_stats *st, struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct rd r;
	VEC(struct group) g = { 0 };
	VEC(struct store_stack_total) tot = { 0 };
	uint32_t *slot = NULL; /* head node -> index in tot + 1 */
	uint64_t nrows = 0;
	size_t nn, nattrs, nsel = 0;
	bool *sel = NULL;
	char *sql =
		sq->h1 > sq->h0
			? xasprintf(
				  "SELECT series_id, stack_id, sum(s), sum(n), min(lo), max(hi), "
				  "tupleElement(min(f), 1), tupleElement(min(f), 2) FROM (SELECT "
				  "series_id, stack_id, sum(value) AS s, count() AS n, min(ts) AS "
				  "lo, max(ts) AS hi, min((ingest_ns, ord)) AS f FROM @D.samples "
				  "WHERE @W AND (ts < %lld OR ts >= %lld) GROUP BY series_id, "
				  "stack_id UNION ALL SELECT series_id, stack_id, "
				  "sumMerge(sum_value) AS s, countMerge(nrows) AS n, "
				  "minMerge(min_ts) AS lo, maxMerge(max_ts) AS hi, "
				  "minMerge(first_row) AS f FROM @D.samples_hour WHERE dataset = "
				  "@S AND hour >= %lld AND hour < %lld AND %s GROUP BY series_id, "
				  "stack_id) GROUP BY series_id, stack_id",
				  (long long)sq->h0, (long long)sq->h1, (long long)sq->h0,
				  (long long)sq->h1, sq->series_in.p)
			: xstrdup("SELECT series_id, stack_id, sum(s), sum(n), min(lo), max(hi), "
				  "min(ingest_ns), argMin(o, ingest_ns) FROM (SELECT series_id, "
				  "stack_id, ingest_ns, sum(value) AS s, count() AS n, min(ts) AS "
				  "lo, max(ts) AS hi, min(ord) AS o FROM @D.samples WHERE @W GROUP "
				  "BY series_id, stack_id, ingest_ns) GROUP BY series_id, stack_id");
	int rc = scan_fetch(c, sq, sql, &ans, err);

	free(sql);
	if (!rc && sq->h1 > sq->h0)
		st->rollup_buckets += (uint64_t)((sq->h1 - sq->h0) / CH_HOUR_NS);
	if (rc)
		return rc;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t sid = rd_u64(&r), kid = rd_u64(&r);
		struct group e;
		uint32_t at;

		e.sum = (int64_t)rd_u64(&r);
		e.rows = rd_u64(&r);
		e.lo = (int64_t)rd_u64(&r);
		e.hi = (int64_t)rd_u64(&r);
		e.first_ns = rd_u64(&r);
		e.first_ord = (uint32_t)rd_u8(&r);
		e.first_ord |= (uint32_t)rd_u8(&r) << 8;
		e.first_ord |= (uint32_t)rd_u8(&r) << 16;
		e.first_ord |= (uint32_t)rd_u8(&r) << 24;
		if (r.bad)
			break;
		if (!idx_find(b->series.v, b->series.n, sid, &at) ||
		    !idx_find(b->stacks.v, b->stacks.n, kid, &e.node))
			continue; /* ingested after the series / stacks were read */
		e.ser = at;
		VEC_PUSH(&g, e);
	}
	if (r.bad) {
		rc = bad_answer(c, "totals", err);
		goto out;
	}
	if (g.n)
		qsort(g.v, g.n, sizeof(g.v[0]), group_cmp);
	/* The series' time ranges (rows at min and max), so selection by
	 * range is the head's. */
	for (size_t i = 0; i < g.n; i++) {
		struct series *se = b->ser.v[g.v[i].ser];
		struct store_row lo = { g.v[i].lo, 0, g.v[i].node, 0 };
		struct store_row hi = { g.v[i].hi, 0, g.v[i].node, 0 };

		head_series_push(b->h, se, &lo);
		if (g.v[i].hi != g.v[i].lo)
			head_series_push(b->h, se, &hi);
	}
	store_head_rdlock(b->h);
	const struct store_stack_node *stacks = store_head_stacks(b->h, &nn);
	const struct store_attr_set *attrs = store_head_attrs(b->h, &nattrs);
	struct store_source src = {
		.id = __atomic_add_fetch(&ch_source_seq, 1, __ATOMIC_RELAXED),
		.is_head = true,
		.dict = store_head_dict(b->h),
		.stacks = stacks,
		.nstacks = nn,
		.attrs = attrs,
		.nattrs = nattrs,
	};
	sel = xcalloc(b->ser.n + 1, sizeof(*sel));
	slot = xcalloc(nn + 1, sizeof(*slot));
	for (size_t i = 0; i < b->ser.n; i++) {
		sel[i] = head_series_selected(b->ser.v[i], q->type, q->m, q->nm, q->from_ns,
					      q->to_ns);
		nsel += sel[i];
	}
	if (nsel) {
		st->sources++;
		rc = v->source_begin ? v->source_begin(v->arg, &src) : 0;
		for (size_t i = 0; i < b->ser.n && !rc; i++) {
			if (!sel[i])
				continue;
			st->series++;
			if (v->series)
				rc = v->series(v->arg, &src, &b->ser.v[i]->pub);
		}
		for (size_t i = 0; i < g.n && !rc; i++) {
			const struct group *e = &g.v[i];

			if (!sel[e->ser])
				continue;
			if (!slot[e->node]) {
				struct store_stack_total t = { e->node, 0, 0 };

				VEC_PUSH(&tot, t);
				slot[e->node] = (uint32_t)tot.n;
			}
			struct store_stack_total *t = &tot.v[slot[e->node] - 1];

			t->total = prof_add_sat(t->total, e->sum);
			t->rows += e->rows;
			nrows += e->rows;
		}
		st->rows += nrows;
		if (!rc && tot.n)
			rc = v->totals(v->arg, &src, tot.v, tot.n, nrows);
		if (!rc && v->source_end)
			rc = v->source_end(v->arg, &src);
	}
	store_head_rdunlock(b->h);
out:
	VEC_FREE(&g);
	VEC_FREE(&tot);
	free(slot);
	free(sel);
	buf_release(&ans);
	return rc;
}

typedef VEC(struct store_row) row_vec;

/*
 * The rows of one series (in ingest order) into the head in the order a
 * block keeps them, by time, then stack (first stored first), stably:
 * what the embedded store's answers come from once its head is written.
 */
static void flush_run(struct scan_build *b, struct series *se, row_vec *run)
{
	if (se && run->n) {
		store_rows_sort(run->v, run->n);
		for (size_t i = 0; i < run->n; i++)
			head_series_push(b->h, se, &run->v[i]);
	}
	run->n = 0;
}

/* Rows (or, for a series-only scan, each series' first and last row) into the head. */
static int scan_fill_rows(struct ch *c, const struct scan_q *sq, struct scan_build *b,
			  bool series_only, const char *cond, struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct rd r;
	row_vec run = { 0 };
	struct series *run_se = NULL;
	char *sql =
		xasprintf(series_only ? "SELECT series_id, argMin(stack_id, ts), min(ts), "
					"argMax(stack_id, ts), max(ts) FROM @D.samples WHERE "
					"@W%s GROUP BY series_id"
				      : "SELECT series_id, ts, stack_id, attrs_id, value FROM "
					"@D.samples WHERE @W%s ORDER BY series_id, ingest_ns, ord",
			  cond);
	int rc = scan_fetch(c, sq, sql, &ans, err);

	free(sql);
	if (rc)
		return rc;
	r = rd_of(&ans);
	while (rd_more(&r)) {
		uint64_t sid = rd_u64(&r);
		struct series *se;
		uint32_t node = 0, set = 0;

		if (series_only) {
			uint64_t k0 = rd_u64(&r);
			int64_t lo = (int64_t)rd_u64(&r);
			uint64_t k1 = rd_u64(&r);
			int64_t hi = (int64_t)rd_u64(&r);
			uint32_t n0 = 0, n1 = 0;

			if (r.bad || !find_ser(b, sid, &se))
				continue;
			/* stacks are not read in this form: node 0 */
			(void)k0;
			(void)k1;
			struct store_row a = { lo, 0, n0, 0 }, z = { hi, 0, n1, 0 };

			head_series_push(b->h, se, &a);
			if (hi != lo)
				head_series_push(b->h, se, &z);
			continue;
		}
		int64_t ts = (int64_t)rd_u64(&r);
		uint64_t kid = rd_u64(&r), aid = rd_u64(&r);
		int64_t val = (int64_t)rd_u64(&r);

		if (r.bad)
			break;
		if (!find_ser(b, sid, &se) ||
		    (!b->no_stacks && !idx_find(b->stacks.v, b->stacks.n, kid, &node)))
			continue; /* ingested after the series / stacks were read */
		if (aid && !idx_find(b->attrs.v, b->attrs.n, aid, &set))
			continue;
		struct store_row row = { ts, val, node, set };

		if (se != run_se)
			flush_run(b, run_se, &run);
		run_se = se;
		VEC_PUSH(&run, row);
	}
	flush_run(b, run_se, &run);
	VEC_FREE(&run);
	buf_release(&ans);
	if (r.bad)
		return bad_answer(c, "rows", err);
	return 0;
}

/* One (series, step) of a steps scan, as ClickHouse summed it. */
struct step_group {
	uint32_t ser; /* index into scan_build.ser */
	struct store_step_sum sum;
	int64_t lo, hi; /* time range of its rows */
};

static int step_group_cmp(const void *a, const void *b)
{
	const struct step_group *x = a, *y = b;

	if (x->ser != y->ser)
		return x->ser < y->ser ? -1 : 1;
	return x->sum.step < y->sum.step ? -1 : x->sum.step > y->sum.step;
}

/*
 * A rows scan whose visitor takes per-step sums (store_visitor.steps)
 * and no stacks, without per-row filters: ClickHouse sums the rows
 * without an attribute set per (series, step); the rows with one (whose
 * attributes may name groups) come as rows, as a block's pages with
 * attribute sets do. The sums are handed over only when every group's
 * values are >= 0 and its sum cannot have overflowed (its Float64 sum
 * under 2^62), the condition on which the visitor's sums of rows one by
 * one equal them; else *@fallback is set, nothing is visited, and the
 * caller reads rows.
 */
static int scan_steps_direct(struct ch *c, const struct store_query *q, const struct scan_q *sq,
			     struct scan_build *b, const struct store_visitor *v,
			     struct store_scan_stats *st, bool *fallback, struct prof_err *err)
{
	struct buf ans = BUF_INIT;
	struct rd r;
	VEC(struct step_group) g = { 0 };
	VEC(struct store_step_sum) run = { 0 };
	char *sql = xasprintf("SELECT series_id, intDiv(toInt64(ts) - (%lld), %lld) AS k, "
			      "sum(value), count(), min(value), sum(toFloat64(value)), min(ts), "
			      "max(ts) FROM @D.samples WHERE @W AND attrs_id = 0 GROUP BY "
			      "series_id, k",
			      (long long)v->step_from_ns, (long long)v->step_ns);
	bool *sel = NULL;
	size_t nsel = 0;
	int rc = scan_fetch(c, sq, sql, &ans, err);

	free(sql);
	*fallback = false;
	if (rc)
		return rc;
	r = rd_of(&ans);
	while (rd_more(&r) && !*fallback) {
		uint64_t sid = rd_u64(&r);
		int64_t k = (int64_t)rd_u64(&r);
		struct step_group e = { 0 };
		int64_t mn;
		uint64_t fbits;
		double fsum;
		uint32_t at;

		e.sum.value = (int64_t)rd_u64(&r);
		e.sum.rows = rd_u64(&r);
		mn = (int64_t)rd_u64(&r);
		fbits = rd_u64(&r);
		memcpy(&fsum, &fbits, sizeof(fsum));
		e.lo = (int64_t)rd_u64(&r);
		e.hi = (int64_t)rd_u64(&r);
		if (r.bad)
			break;
		if (mn < 0 || !(fsum < 4611686018427387904.0) || k < 0 || k >= UINT32_MAX) {
			*fallback = true;
			break;
		}
		if (!idx_find(b->series.v, b->series.n, sid, &at))
			continue; /* ingested after the series were read */
		e.ser = at;
		e.sum.step = (uint32_t)k;
		VEC_PUSH(&g, e);
	}
	buf_release(&ans);
	if (r.bad)
		rc = bad_answer(c, "step sums", err);
	if (rc || *fallback)
		goto out;
	if (g.n)
		qsort(g.v, g.n, sizeof(g.v[0]), step_group_cmp);
	/* the rows with attribute sets, into the head */
	rc = scan_fill_rows(c, sq, b, false, " AND attrs_id != 0", err);
	if (rc)
		goto out;
	store_head_rdlock(b->h);
	size_t nn, nattrs;
	const struct store_stack_node *stacks = store_head_stacks(b->h, &nn);
	const struct store_attr_set *attrs = store_head_attrs(b->h, &nattrs);
	struct store_source src = {
		.id = __atomic_add_fetch(&ch_source_seq, 1, __ATOMIC_RELAXED),
		.is_head = true,
		.dict = store_head_dict(b->h),
		.stacks = stacks,
		.nstacks = nn,
		.attrs = attrs,
		.nattrs = nattrs,
	};
	sel = xcalloc(b->ser.n + 1, sizeof(*sel));
	for (size_t i = 0; i < g.n; i++)
		sel[g.v[i].ser] = true;
	for (size_t i = 0; i < b->ser.n; i++) {
		sel[i] = (sel[i] || b->ser.v[i]->rows.n) &&
			 head_series_match(b->ser.v[i], q->type, q->m, q->nm);
		nsel += sel[i];
	}
	if (nsel) {
		st->sources++;
		rc = v->source_begin ? v->source_begin(v->arg, &src) : 0;
	}
	for (size_t i = 0, at = 0; nsel && i < b->ser.n && !rc; i++) {
		const struct series *se = b->ser.v[i];
		struct store_series pub = se->pub;

		run.n = 0;
		if (!se->rows.n) {
			pub.min_ts_ns = INT64_MAX;
			pub.max_ts_ns = INT64_MIN;
			pub.nrows = 0;
		}
		for (; at < g.n && g.v[at].ser == i; at++) {
			VEC_PUSH(&run, g.v[at].sum);
			pub.min_ts_ns = PROF_MIN(pub.min_ts_ns, g.v[at].lo);
			pub.max_ts_ns = PROF_MAX(pub.max_ts_ns, g.v[at].hi);
			pub.nrows += g.v[at].sum.rows;
		}
		if (!sel[i])
			continue;
		st->series++;
		st->rows += pub.nrows;
		if (v->series)
			rc = v->series(v->arg, &src, &pub);
		if (!rc && run.n)
			rc = v->steps(v->arg, &src, &pub, run.v, run.n);
		if (!rc && se->rows.n)
			rc = v->rows(v->arg, &src, &pub, se->rows.v, se->rows.n);
	}
	if (nsel && !rc && v->source_end)
		rc = v->source_end(v->arg, &src);
	store_head_rdunlock(b->h);
out:
	VEC_FREE(&g);
	VEC_FREE(&run);
	free(sel);
	return rc;
}

int store_ch_scan(void *ctx, const struct store_query *q, const struct store_link_filter *lf,
		  const struct store_visitor *v, struct store_scan_stats *st, struct prof_err *err)
{
	struct ch *c = ctx;
	struct scan_q sq = { 0 };
	struct scan_build b = { .h = store_head_new() };
	struct store_scan_stats dummy;
	bool series_only = !v->rows && !v->totals;
	int rc;

	if (!st)
		st = &dummy;
	memset(st, 0, sizeof(*st));
	if (q->to_ns < 0 || q->to_ns < q->from_ns) {
		rc = 0;
		goto out;
	}
	rc = scan_where(c, q, lf, &sq, err);
	if (!rc)
		rc = build_series(c, &sq, &b, err);
	if (rc || !b.ser.n)
		goto out;
	if (v->totals && !sq.row_filters)
		whole_hours(q->from_ns, q->to_ns, &sq.h0, &sq.h1);
	b.no_stacks = series_only || v->rows_no_stacks;
	if (!b.no_stacks)
		rc = build_stacks(c, &sq, &b, err);
	if (!rc && (v->rows || sq.row_filters || series_only))
		rc = build_attrs(c, &sq, &b, err);
	if (rc)
		goto out;
	if (v->totals && !sq.row_filters) {
		rc = scan_totals_direct(c, q, &sq, &b, v, st, err);
		goto out;
	}
	if (v->rows && v->steps && v->step_ns > 0 && b.no_stacks && !sq.row_filters &&
	    v->step_from_ns <= PROF_MAX(q->from_ns, (int64_t)0)) {
		bool fallback;

		rc = scan_steps_direct(c, q, &sq, &b, v, st, &fallback, err);
		if (rc || !fallback)
			goto out;
	}
	rc = scan_fill_rows(c, &sq, &b, series_only, "", err);
	if (!rc) {
		struct store *tmp;
		struct wrap w = { v, __atomic_add_fetch(&ch_source_seq, 1, __ATOMIC_RELAXED) };
		struct store_visitor wv = *v;

		wv.arg = &w;
		wv.source_begin = w_begin;
		wv.series = w_series;
		wv.rows = v->rows ? w_rows : NULL;
		wv.totals = v->totals ? w_totals : NULL;
		wv.source_end = w_end;
		wv.steps = v->steps ? w_steps : NULL;
		store_open_head(b.h, &tmp);
		rc = store_scan_ex(tmp, q, lf, &wv, st, err);
		store_close(tmp);
	}
out:
	scan_q_release(&sq);
	scan_build_release(&b);
	return rc;
}

int store_ch_types(void *ctx, int64_t from_ns, int64_t to_ns,
		   int (*fn)(void *arg, const char *type), void *arg)
{
	struct ch *c = ctx;
	struct buf sql = BUF_INIT, ans = BUF_INIT;
	struct prof_err err;
	struct rd r;
	int rc;

	if (to_ns < 0 || to_ns < from_ns)
		return 0;
	prof_err_init(&err);
	PROF_ASSERT(buf_addf(&sql,
			     "SELECT DISTINCT type FROM %s.series WHERE dataset = %s AND "
			     "series_id IN (SELECT DISTINCT series_id FROM %s.samples WHERE "
			     "dataset = %s AND ts >= %lld AND ts <= %lld) ORDER BY type "
			     "FORMAT RowBinary",
			     c->db, c->ds, c->db, c->ds, (long long)PROF_MAX(from_ns, (int64_t)0),
			     (long long)to_ns) == 0);
	rc = store_ch_sql(c, &sql, &ans, &err);
	if (rc) {
		log_error("store %s: types: %s", c->desc, err.msg);
		return rc;
	}
	r = rd_of(&ans);
	while (!rc && rd_more(&r)) {
		size_t n;
		const char *s = rd_str(&r, &n);
		char *t;

		if (r.bad)
			break;
		t = xstrndup(s, n);
		rc = fn(arg, t);
		free(t);
	}
	buf_release(&ans);
	return rc;
}
