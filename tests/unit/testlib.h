/* SPDX-License-Identifier: Apache-2.0 */
/*
 * testlib.h - helpers shared by the unit tests of the store and of the
 * query engine: build small profiles from folded stacks ("main;work;leaf",
 * root first), and read a store back as name-based totals, keyed
 * "type|k=v,k=v|root;...;leaf", which is what must survive every flush,
 * compaction and restart unchanged. The query tests' request runner is in
 * query/qhelp.h, on top of this. And one comparison of two model
 * profiles, field by field (the decoders' differential tests). static
 * inline so each test uses what it needs.
 */
#ifndef PROF_TESTS_UNIT_TESTLIB_H
#define PROF_TESTS_UNIT_TESTLIB_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/profile.h"
#include "store/store.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#define TL_CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

/*
 * A profile with one column, cpu/nanoseconds (or, with @heap,
 * inuse_space/bytes over a space/bytes period type), a 10 ms period and
 * the attribute @key = @value (none when @value is NULL); time_ns 0.
 */
static inline void tl_profile_init_attr(struct model_profile *p, bool heap, const char *key,
					const char *value)
{
	model_profile_init(p);
	if (heap) {
		model_sample_type_add(p, "inuse_space", "bytes");
		p->period_type.type = model_intern(p, "space");
		p->period_type.unit = model_intern(p, "bytes");
	} else {
		model_sample_type_add(p, "cpu", "nanoseconds");
		p->period_type.type = model_intern(p, "cpu");
		p->period_type.unit = model_intern(p, "nanoseconds");
	}
	p->period = 10000000;
	if (value)
		model_attr_add_str(p, key, value);
}

/* A CPU profile with host.name = @host (NULL = none). */
static inline void tl_profile_init(struct model_profile *p, const char *host)
{
	tl_profile_init_attr(p, false, "host.name", host);
}

/* The location of a plain function frame @name (@n bytes), one per name. */
static inline uint32_t tl_fn_loc(struct model_profile *p, const char *name, size_t n)
{
	uint32_t fn = model_function_intern(p, model_intern_n(p, name, n), 0, 0, 0);
	struct model_line ln = { fn, 0, 0 };

	for (uint32_t i = 1; i < p->locations.n; i++) {
		const struct model_location *l = &p->locations.v[i];

		if (l->nlines == 1 && p->lines.v[l->line_off].function == fn && !l->mapping)
			return i;
	}
	return model_location_add(p, 0, 0, &ln, 1);
}

/* A sample over locations @root_first[@n] with @labels[@nlabels] at @ts. */
static inline void tl_sample_locs(struct model_profile *p, const uint32_t *root_first, uint32_t n,
				  int64_t value, int64_t ts, const struct model_label *labels,
				  uint32_t nlabels)
{
	uint32_t *leaf_first = xcalloc(n + 1, sizeof(uint32_t));

	for (uint32_t i = 0; i < n; i++)
		leaf_first[i] = root_first[n - 1 - i];
	uint32_t off = model_stack_add(p, leaf_first, n);
	model_sample_add(p, off, n, &value, labels, nlabels, ts, 0);
	free(leaf_first);
}

/* A sample of @value for "A;B;C" (root first; "" = empty stack) at @ts. */
static inline void tl_sample(struct model_profile *p, const char *folded, int64_t value, int64_t ts)
{
	VEC(uint32_t) locs = { 0 };

	for (const char *s = folded; *s;) {
		size_t k = strcspn(s, ";");

		VEC_PUSH(&locs, tl_fn_loc(p, s, k));
		s += k;
		if (*s == ';')
			s++;
	}
	tl_sample_locs(p, locs.v, (uint32_t)locs.n, value, ts, NULL, 0);
	VEC_FREE(&locs);
}

static inline int tl_ingest(struct store *st, const struct model_profile *p)
{
	const struct model_profile *v[1] = { p };
	struct prof_err err;

	prof_err_init(&err);
	int rc = store_ingest_profiles(st, v, 1, NULL, 0, NULL, &err);
	if (rc)
		fprintf(stderr, "ingest: %s\n", err.msg);
	return rc;
}

/* --- name-based totals of a store --------------------------------------------------- */

struct tl_totals {
	struct strtab keys;
	VEC(int64_t) val;
	VEC(uint64_t) rows;
	struct buf tmp;
};

static inline void tl_totals_init(struct tl_totals *t)
{
	memset(t, 0, sizeof(*t));
	strtab_init(&t->keys);
	buf_init(&t->tmp, 0);
}

static inline void tl_totals_release(struct tl_totals *t)
{
	strtab_release(&t->keys);
	VEC_FREE(&t->val);
	VEC_FREE(&t->rows);
	buf_release(&t->tmp);
}

static inline void tl_totals_add(struct tl_totals *t, const char *key, size_t n, int64_t v,
				 uint64_t rows)
{
	uint32_t id = strtab_intern(&t->keys, key, n);

	while (t->val.n <= id) {
		VEC_PUSH(&t->val, 0);
		VEC_PUSH(&t->rows, 0);
	}
	t->val.v[id] += v;
	t->rows.v[id] += rows;
}

static inline int64_t tl_totals_get(const struct tl_totals *t, const char *key)
{
	uint32_t id = strtab_find(&t->keys, key, strlen(key));

	return id == UINT32_MAX || id >= t->val.n ? 0 : t->val.v[id];
}

/* "root;...;leaf" of stack node @s of @src into @b (appending). */
static inline void tl_folded(const struct store_source *src, uint32_t s, struct buf *b)
{
	uint32_t path[4096], n = 0;

	while (s && n < 4096) {
		path[n++] = src->stacks[s].loc;
		s = src->stacks[s].parent;
	}
	for (uint32_t i = n; i-- > 0;) {
		const struct model_location *l = &src->dict->locations.v[path[i]];

		for (uint32_t j = l->nlines; j-- > 0;) {
			const struct model_line *ln = &src->dict->lines.v[l->line_off + j];
			const char *name =
				model_str(src->dict, src->dict->functions.v[ln->function].name);

			buf_addf(b, "%s%s", b->len && b->p[b->len - 1] != '|' ? ";" : "", name);
		}
		if (!l->nlines)
			buf_addf(b, "%s0x%" PRIx64, b->len && b->p[b->len - 1] != '|' ? ";" : "",
				 l->address);
	}
}

static inline void tl_series_key(const struct store_series *s, struct buf *b)
{
	buf_addf(b, "%s|", s->type);
	for (uint32_t i = 0; i < s->nlabels; i++)
		buf_addf(b, "%s%s=%s", i ? "," : "", s->labels[i].name, s->labels[i].value);
	buf_addstr(b, "|");
}

static inline int tl_rows_cb(void *arg, const struct store_source *src,
			     const struct store_series *s, const struct store_row *rows, size_t n)
{
	struct tl_totals *t = arg;

	for (size_t i = 0; i < n; i++) {
		buf_reset(&t->tmp);
		tl_series_key(s, &t->tmp);
		tl_folded(src, rows[i].stack, &t->tmp);
		tl_totals_add(t, t->tmp.p, t->tmp.len, rows[i].value, 1);
	}
	return 0;
}

/* Per (series, stack) totals of the whole store, through the rows form of store_scan. */
static inline int tl_scan_rows(struct store *st, const struct store_query *q, struct tl_totals *t,
			       struct store_scan_stats *stats)
{
	struct store_visitor v = { .arg = t, .rows = tl_rows_cb };
	struct store_query all = { NULL, NULL, 0, INT64_MIN, INT64_MAX };
	struct prof_err err;

	prof_err_init(&err);
	return store_scan(st, q ? q : &all, &v, stats, &err);
}

static inline int tl_totals_cb(void *arg, const struct store_source *src,
			       const struct store_stack_total *tt, size_t n, uint64_t nrows)
{
	struct tl_totals *t = arg;

	(void)nrows;
	for (size_t i = 0; i < n; i++) {
		buf_reset(&t->tmp);
		tl_folded(src, tt[i].stack, &t->tmp);
		tl_totals_add(t, t->tmp.p, t->tmp.len, tt[i].total, 0);
	}
	return 0;
}

/* Per stack totals (series merged) through the totals form. */
static inline int tl_scan_totals(struct store *st, const struct store_query *q, struct tl_totals *t,
				 struct store_scan_stats *stats)
{
	struct store_visitor v = { .arg = t, .totals = tl_totals_cb };
	struct prof_err err;

	prof_err_init(&err);
	return store_scan(st, q, &v, stats, &err);
}

/* Are two totals equal (same keys, same values)? Prints the first difference. */
static inline bool tl_totals_equal(const struct tl_totals *a, const struct tl_totals *b)
{
	for (int pass = 0; pass < 2; pass++) {
		const struct tl_totals *x = pass ? b : a, *y = pass ? a : b;

		for (uint32_t i = 1; i < x->keys.n; i++) {
			int64_t vx = i < x->val.n ? x->val.v[i] : 0;
			int64_t vy = tl_totals_get(y, x->keys.s[i]);

			if (vx != vy) {
				fprintf(stderr,
					"totals differ at '%s': %" PRId64 " vs %" PRId64 "\n",
					x->keys.s[i], pass ? vy : vx, pass ? vx : vy);
				return false;
			}
		}
	}
	return true;
}

/*
 * A fresh directory; on tmpfs (/dev/shm) when there is one, where fsync
 * costs nothing: the logic under test is the same (a kill -9 or an error
 * path does not depend on what fsync costs), the tests just run faster.
 */
static inline char *tl_tmpdir(const char *what)
{
	const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	char *t = xasprintf("%s/profd-test-%s-XXXXXX", base, what);

	PROF_ASSERT(mkdtemp(t));
	return t;
}

static inline void tl_rmdir(const char *dir)
{
	char *cmd = xasprintf("rm -rf '%s'", dir);

	PROF_ASSERT(system(cmd) == 0);
	free(cmd);
}

static inline int tl_sh(const char *fmt, ...) PROF_PRINTF(1, 2);
static inline int tl_sh(const char *fmt, ...)
{
	va_list ap;
	char *cmd;
	int rc;

	va_start(ap, fmt);
	PROF_ASSERT(vasprintf(&cmd, fmt, ap) >= 0);
	va_end(ap);
	rc = system(cmd);
	free(cmd);
	return rc;
}

static inline struct store_options tl_opts(void)
{
	struct store_options o;

	store_options_default(&o);
	o.background = false;
	o.head_max_bytes = (uint64_t)1 << 40;
	o.block_duration_ns = 0;
	return o;
}

static inline struct store *tl_open(const char *dir, const struct store_options *o)
{
	struct store *st = NULL;
	struct prof_err err;

	prof_err_init(&err);
	if (store_open_opts(dir, o, &st, &err)) {
		fprintf(stderr, "store_open: %s\n", err.msg);
		return NULL;
	}
	return st;
}

/*
 * tl_profile_equal() - assert that @a and @b are the same model profile,
 * table by table and field by field: strings, mappings (each has_* flag),
 * functions, locations, lines, links, sample types, samples, stack
 * locations, values, labels, attributes, comments, the profile's scalars
 * and what the decoder skipped. Ids are compared as they are, so both
 * must have interned in one order (two decoders of one input do).
 */
static inline void tl_profile_equal(const struct model_profile *a, const struct model_profile *b)
{
	assert_int_equal(a->strings.n, b->strings.n);
	for (uint32_t i = 0; i < a->strings.n; i++) {
		assert_int_equal(a->strings.len[i], b->strings.len[i]);
		assert_memory_equal(a->strings.s[i], b->strings.s[i], a->strings.len[i]);
	}
	assert_int_equal(a->mappings.n, b->mappings.n);
	for (size_t i = 0; i < a->mappings.n; i++) {
		const struct model_mapping *x = &a->mappings.v[i], *y = &b->mappings.v[i];

		assert_int_equal(x->memory_start, y->memory_start);
		assert_int_equal(x->memory_limit, y->memory_limit);
		assert_int_equal(x->file_offset, y->file_offset);
		assert_int_equal(x->filename, y->filename);
		assert_int_equal(x->build_id, y->build_id);
		assert_int_equal(x->has_functions, y->has_functions);
		assert_int_equal(x->has_filenames, y->has_filenames);
		assert_int_equal(x->has_line_numbers, y->has_line_numbers);
		assert_int_equal(x->has_inline_frames, y->has_inline_frames);
	}
	assert_int_equal(a->functions.n, b->functions.n);
	for (size_t i = 0; i < a->functions.n; i++) {
		const struct model_function *x = &a->functions.v[i], *y = &b->functions.v[i];

		assert_int_equal(x->name, y->name);
		assert_int_equal(x->system_name, y->system_name);
		assert_int_equal(x->filename, y->filename);
		assert_int_equal(x->start_line, y->start_line);
	}
	assert_int_equal(a->locations.n, b->locations.n);
	for (size_t i = 0; i < a->locations.n; i++) {
		const struct model_location *x = &a->locations.v[i], *y = &b->locations.v[i];

		assert_int_equal(x->mapping, y->mapping);
		assert_int_equal(x->address, y->address);
		assert_int_equal(x->line_off, y->line_off);
		assert_int_equal(x->nlines, y->nlines);
		assert_int_equal(x->is_folded, y->is_folded);
		assert_int_equal(x->frame_type, y->frame_type);
	}
	assert_int_equal(a->lines.n, b->lines.n);
	for (size_t i = 0; i < a->lines.n; i++) {
		assert_int_equal(a->lines.v[i].function, b->lines.v[i].function);
		assert_int_equal(a->lines.v[i].line, b->lines.v[i].line);
		assert_int_equal(a->lines.v[i].column, b->lines.v[i].column);
	}
	assert_int_equal(a->links.n, b->links.n);
	for (size_t i = 0; i < a->links.n; i++)
		assert_memory_equal(&a->links.v[i], &b->links.v[i], sizeof(a->links.v[i]));
	assert_int_equal(a->sample_types.n, b->sample_types.n);
	for (size_t i = 0; i < a->sample_types.n; i++) {
		assert_int_equal(a->sample_types.v[i].type, b->sample_types.v[i].type);
		assert_int_equal(a->sample_types.v[i].unit, b->sample_types.v[i].unit);
	}
	assert_int_equal(a->samples.n, b->samples.n);
	for (size_t i = 0; i < a->samples.n; i++) {
		const struct model_sample *x = &a->samples.v[i], *y = &b->samples.v[i];

		assert_int_equal(x->stack_off, y->stack_off);
		assert_int_equal(x->nstack, y->nstack);
		assert_int_equal(x->value_off, y->value_off);
		assert_int_equal(x->label_off, y->label_off);
		assert_int_equal(x->nlabels, y->nlabels);
		assert_int_equal(x->link, y->link);
		assert_int_equal(x->timestamp_ns, y->timestamp_ns);
	}
	assert_int_equal(a->stack_locs.n, b->stack_locs.n);
	if (a->stack_locs.n)
		assert_memory_equal(a->stack_locs.v, b->stack_locs.v,
				    a->stack_locs.n * sizeof(*a->stack_locs.v));
	assert_int_equal(a->values.n, b->values.n);
	if (a->values.n)
		assert_memory_equal(a->values.v, b->values.v, a->values.n * sizeof(*a->values.v));
	assert_int_equal(a->labels.n, b->labels.n);
	for (size_t i = 0; i < a->labels.n; i++) {
		assert_int_equal(a->labels.v[i].key, b->labels.v[i].key);
		assert_int_equal(a->labels.v[i].str, b->labels.v[i].str);
		assert_int_equal(a->labels.v[i].num, b->labels.v[i].num);
		assert_int_equal(a->labels.v[i].num_unit, b->labels.v[i].num_unit);
	}
	assert_int_equal(a->attrs.n, b->attrs.n);
	for (size_t i = 0; i < a->attrs.n; i++) {
		assert_int_equal(a->attrs.v[i].key, b->attrs.v[i].key);
		assert_int_equal(a->attrs.v[i].str, b->attrs.v[i].str);
		assert_int_equal(a->attrs.v[i].num, b->attrs.v[i].num);
		assert_int_equal(a->attrs.v[i].num_unit, b->attrs.v[i].num_unit);
	}
	assert_int_equal(a->comments.n, b->comments.n);
	if (a->comments.n)
		assert_memory_equal(a->comments.v, b->comments.v,
				    a->comments.n * sizeof(*a->comments.v));
	assert_int_equal(a->period_type.type, b->period_type.type);
	assert_int_equal(a->period_type.unit, b->period_type.unit);
	assert_int_equal(a->period, b->period);
	assert_int_equal(a->time_ns, b->time_ns);
	assert_int_equal(a->duration_ns, b->duration_ns);
	assert_int_equal(a->default_sample_type, b->default_sample_type);
	assert_int_equal(a->drop_frames, b->drop_frames);
	assert_int_equal(a->keep_frames, b->keep_frames);
	assert_int_equal(a->name, b->name);
	assert_int_equal(a->skipped.n, b->skipped.n);
	assert_string_equal(a->skipped.what, b->skipped.what);
	assert_string_equal(a->skipped.first, b->skipped.first);
}

#endif
