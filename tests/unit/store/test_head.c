// SPDX-License-Identifier: Apache-2.0
/*
 * test_head.c - the head's hash-consing as ingest sees it: a stack seen
 * again in a later profile (its dictionary numbered differently) reuses
 * the same stack node, location and function ids, by the whole-stack memo
 * keyed on location content; any field that tells two locations apart
 * also tells their stacks apart, for frames without lines (unsymbolized
 * native frames: mapping, address, frame type) too. Samples of a profile
 * with the same attributes share one attribute set, whatever label
 * ranges they use. A scan of part of a series' time range hands out
 * exactly its rows in range, in arrival order. The stack tests run three
 * ways: profiles handed to the head as models, as OTLP requests decoded
 * with pending stacks (fmt_otlp_decode_pending: the head finds stacks by
 * the decoder's wire keys), and alternating the two, so a stack keyed
 * from the wire finds the node a model stack made and the reverse, and
 * every field that splits model stacks splits wire keys too.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "model/profile.h"
#include "store/head.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#define T0 1700000000000000000LL

/* One frame of a test stack; every field feeds the location's identity. */
struct frame {
	const char *name, *sys, *file;
	int64_t start, line, col;
	uint64_t addr;
	bool folded;
	const char *frame_type;
	bool no_function; /* line without a function (index 0) */
};

static void profile_init(struct model_profile *p)
{
	model_profile_init(p);
	model_sample_type_add(p, "cpu", "nanoseconds");
	p->period_type.type = model_intern(p, "cpu");
	p->period_type.unit = model_intern(p, "nanoseconds");
	p->period = 10000000;
	model_attr_add_str(p, "service.name", "t");
}

/*
 * Add one sample over @f[@n] (root first) with value @v. With @pad, unused
 * strings, functions and locations go in first, so the profile's ids differ
 * from a profile built without.
 */
static void add_stack(struct model_profile *p, const struct frame *f, uint32_t n, int64_t v,
		      bool pad)
{
	uint32_t locs[16];

	assert_true(n <= 16);
	if (pad) {
		struct model_line ln = { 0 };

		ln.function = model_function_intern(p, model_intern(p, "pad"), 0, 0, 7);
		model_location_add(p, 0, 0x99, &ln, 1);
	}
	for (uint32_t i = 0; i < n; i++) {
		struct model_line ln = { 0 };
		uint32_t id;

		if (!f[i].no_function)
			ln.function = model_function_intern(
				p, model_intern(p, f[i].name),
				model_intern(p, f[i].sys ? f[i].sys : ""),
				model_intern(p, f[i].file ? f[i].file : ""), f[i].start);
		ln.line = f[i].line;
		ln.column = f[i].col;
		id = model_location_add(p, 0, f[i].addr, &ln, 1);
		p->locations.v[id].is_folded = f[i].folded;
		if (f[i].frame_type)
			p->locations.v[id].frame_type = model_intern(p, f[i].frame_type);
		locs[n - 1 - i] = id; /* leaf first */
	}
	uint32_t off = model_stack_add(p, locs, n);
	model_sample_add(p, off, n, &v, NULL, 0, T0, 0);
}

/*
 * How add_one and add_bare give the head their profile: VIA_MODEL
 * (store_head_add), VIA_PENDING (encoded as OTLP, decoded with pending
 * stacks, store_head_add_batch) or VIA_BOTH (alternating, model first).
 * *resolved counts pending batches the head had to resolve.
 */
enum { VIA_MODEL, VIA_PENDING, VIA_BOTH };
static int via;
static unsigned via_calls, resolved;

static void head_add(struct store_head *h, const struct model_profile *p)
{
	struct prof_err err;
	struct fmt_otlp_batch b;
	struct buf req;
	const struct model_profile *q[8];

	prof_err_init(&err);
	if (via == VIA_MODEL || (via == VIA_BOTH && via_calls++ % 2 == 0)) {
		assert_int_equal(store_head_add(h, p, T0, &err), 0);
		return;
	}
	buf_init(&req, 0);
	assert_int_equal(fmt_otlp_encode(&p, 1, &req), 0);
	assert_int_equal(fmt_otlp_decode_pending(req.p, req.len, 0, &b, &err), 0);
	assert_true(b.n >= 1 && b.n <= PROF_ARRAY_SIZE(q));
	for (size_t i = 0; i < b.n; i++) {
		assert_non_null(b.profiles[i].pending);
		assert_int_equal(model_profile_validate(&b.profiles[i], &err), 0);
		assert_int_equal(store_head_check_validated(&b.profiles[i], &err), 0);
		q[i] = &b.profiles[i];
	}
	store_head_add_batch(h, q, b.n, T0);
	resolved += b.profiles[0].pending == NULL;
	fmt_otlp_batch_release(&b);
	buf_release(&req);
}

/* Add a profile of one stack; returns the leaf node its row got. */
static uint32_t add_one(struct store_head *h, const struct frame *f, uint32_t n, bool pad)
{
	struct model_profile p;
	struct prof_err err;
	const struct store_row *rows;
	const struct store_series *s;

	profile_init(&p);
	add_stack(&p, f, n, 1, pad);
	prof_err_init(&err);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	head_add(h, &p);
	model_profile_release(&p);
	assert_int_equal(store_head_nseries(h), 1);
	s = store_head_series_at(h, 0, &rows);
	assert_true(s->nrows >= 1);
	return rows[s->nrows - 1].stack;
}

static const struct frame base3[3] = {
	{ .name = "main", .file = "main.c", .line = 10 },
	{ .name = "work", .file = "work.c", .line = 20, .col = 3 },
	{ .name = "leaf", .sys = "_Z4leafv", .file = "leaf.c", .start = 5, .line = 30 },
};

static void test_head_same_stack_later_profile_reuses_ids(void **state)
{
	struct store_head *h = store_head_new();
	struct store_head_stats a, b;
	uint32_t n1, n2;

	(void)state;
	n1 = add_one(h, base3, 3, false);
	store_head_get_stats(h, &a);
	assert_int_equal(a.stack_nodes, 4); /* root + 3 */
	n2 = add_one(h, base3, 3, true);
	store_head_get_stats(h, &b);
	assert_int_equal(n2, n1);
	assert_int_equal(b.rows, 2);
	/* the pad location is in the profile but on no stack: not added */
	assert_int_equal(b.stack_nodes, a.stack_nodes);
	assert_int_equal(b.locations, a.locations);
	assert_int_equal(b.functions, a.functions);

	/* the leaf's node names the leaf's location, its line the leaf function */
	store_head_rdlock(h);
	size_t nn;
	const struct store_stack_node *nodes = store_head_stacks(h, &nn);
	const struct model_profile *d = store_head_dict(h);
	const struct model_location *l = &d->locations.v[nodes[n1].loc];
	assert_int_equal(l->nlines, 1);
	const struct model_function *fn = &d->functions.v[d->lines.v[l->line_off].function];
	assert_string_equal(model_str(d, fn->name), "leaf");
	assert_string_equal(model_str(d, fn->system_name), "_Z4leafv");
	assert_int_equal(fn->start_line, 5);
	assert_int_equal(d->lines.v[l->line_off].line, 30);
	store_head_rdunlock(h);
	store_head_free(h);
}

static void test_head_any_location_field_splits_stacks(void **state)
{
	struct store_head *h = store_head_new();
	uint32_t base, leaf[16];
	size_t nv = 0;

	(void)state;
	base = add_one(h, base3, 3, false);
	/* Each variant changes one field of the leaf frame. */
	for (int v = 0; v < 10; v++) {
		struct frame f[3];

		memcpy(f, base3, sizeof(f));
		switch (v) {
		case 0:
			f[2].name = "leaf2";
			break;
		case 1:
			f[2].sys = "_Z5leaf2v";
			break;
		case 2:
			f[2].file = "other.c";
			break;
		case 3:
			f[2].start = 6;
			break;
		case 4:
			f[2].line = 31;
			break;
		case 5:
			f[2].col = 1;
			break;
		case 6:
			f[2].addr = 0x1000;
			break;
		case 7:
			f[2].folded = true;
			break;
		case 8:
			f[2].frame_type = "native";
			break;
		case 9:
			/* a line without a function vs one whose function has only empty strings */
			f[2] = (struct frame){ .no_function = true, .line = 30 };
			leaf[nv++] = add_one(h, f, 3, false);
			f[2] = (struct frame){ .name = "", .line = 30 };
			break;
		}
		leaf[nv++] = add_one(h, f, 3, v % 2);
		/* the same variant again, ids shuffled: the same node */
		assert_int_equal(add_one(h, f, 3, !(v % 2)), leaf[nv - 1]);
	}
	for (size_t i = 0; i < nv; i++) {
		assert_int_not_equal(leaf[i], base);
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(leaf[i], leaf[j]);
	}
	struct store_head_stats st;
	store_head_get_stats(h, &st);
	/* root, main, work, then one leaf node per distinct leaf frame */
	assert_int_equal(st.stack_nodes, 3 + 1 + nv);
	assert_int_equal(st.rows, 1 + 2 * 10 + 1);
	store_head_free(h);
}

/* A frame without lines: what an eBPF agent sends for native code. */
struct bare {
	const char *file; /* mapping file, NULL = no mapping */
	uint64_t addr;
	const char *frame_type;
	bool folded;
};

/* Add a profile of one two-frame stack (@root, then @leaf); returns its leaf node. */
static uint32_t add_bare(struct store_head *h, const struct bare *root, const struct bare *leaf,
			 bool pad)
{
	const struct bare *f[2] = { root, leaf };
	struct model_profile p;
	struct prof_err err;
	const struct store_row *rows;
	uint32_t locs[2];
	int64_t one = 1;

	profile_init(&p);
	if (pad) {
		struct model_mapping m = { .filename = model_intern(&p, "/pad") };

		model_location_add(&p, model_mapping_add(&p, &m), 0x77, NULL, 0);
	}
	for (int i = 0; i < 2; i++) {
		uint32_t map = 0, id;

		if (f[i]->file) {
			struct model_mapping m = { .memory_start = 0x400000,
						   .memory_limit = 0x500000,
						   .filename = model_intern(&p, f[i]->file) };

			map = model_mapping_add(&p, &m);
		}
		id = model_location_add(&p, map, f[i]->addr, NULL, 0);
		p.locations.v[id].is_folded = f[i]->folded;
		if (f[i]->frame_type)
			p.locations.v[id].frame_type = model_intern(&p, f[i]->frame_type);
		locs[1 - i] = id; /* leaf first */
	}
	model_sample_add(&p, model_stack_add(&p, locs, 2), 2, &one, NULL, 0, T0, 0);
	prof_err_init(&err);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	head_add(h, &p);
	model_profile_release(&p);
	const struct store_series *s = store_head_series_at(h, 0, &rows);
	return rows[s->nrows - 1].stack;
}

static void test_head_frames_without_lines_split_by_mapping_address_and_type(void **state)
{
	static const struct bare root = { "/bin/app", 0x401000, "native", false };
	static const struct bare leaves[] = {
		{ "/bin/app", 0x402000, "native", false },
		{ "/bin/app", 0x402000, "kernel", false },
		{ "/bin/app", 0x402000, NULL, false },
		{ "/bin/app", 0x402000, "native", true },
		{ "/bin/app", 0x402001, "native", false },
		{ "/lib/libc.so.6", 0x402000, "native", false },
		{ NULL, 0x402000, "native", false },
	};
	struct store_head *h = store_head_new();
	uint32_t leaf[PROF_ARRAY_SIZE(leaves)];
	struct store_head_stats st;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(leaves); i++) {
		leaf[i] = add_bare(h, &root, &leaves[i], i % 2);
		/* the same frames again, ids shuffled: the same node */
		assert_int_equal(add_bare(h, &root, &leaves[i], !(i % 2)), leaf[i]);
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(leaf[i], leaf[j]);
	}
	store_head_get_stats(h, &st);
	assert_int_equal(st.stack_nodes, 1 + 1 + PROF_ARRAY_SIZE(leaves));
	assert_int_equal(st.locations, 1 + 1 + PROF_ARRAY_SIZE(leaves));
	/* the leaf's location is the frame as sent */
	store_head_rdlock(h);
	size_t nn;
	const struct store_stack_node *nodes = store_head_stacks(h, &nn);
	const struct model_profile *d = store_head_dict(h);
	const struct model_location *l = &d->locations.v[nodes[leaf[1]].loc];
	assert_int_equal(l->address, 0x402000);
	assert_int_equal(l->nlines, 0);
	assert_string_equal(model_str(d, l->frame_type), "kernel");
	assert_string_equal(model_str(d, d->mappings.v[l->mapping].filename), "/bin/app");
	store_head_rdunlock(h);
	store_head_free(h);
}

/* The attribute set of each row of series 0, in arrival order, as "k=v,k=v[+link]". */
static void row_sets(struct store_head *h, char out[][64], size_t n)
{
	const struct store_row *rows;
	const struct store_series *s;
	const struct store_attr_set *sets;
	size_t nsets;

	store_head_rdlock(h);
	s = store_head_series_at(h, 0, &rows);
	sets = store_head_attrs(h, &nsets);
	assert_int_equal(s->nrows, n);
	for (size_t i = 0; i < n; i++) {
		const struct store_attr_set *a = &sets[rows[i].attrs];
		size_t k = 0;

		assert_true(rows[i].attrs < nsets);
		out[i][0] = '\0';
		for (uint32_t j = 0; j < a->nlabels; j++)
			k += (size_t)snprintf(out[i] + k, 64 - k, "%s%s=%s", j ? "," : "",
					      a->labels[j].name, a->labels[j].value);
		if (a->has_link)
			snprintf(out[i] + k, 64 - k, "+link%02x", a->span_id[0]);
	}
	store_head_rdunlock(h);
}

static void test_head_samples_with_equal_attributes_share_a_set(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct model_link ln = { { 1 }, { 0xab } };
	struct prof_err err;
	uint32_t tn = 0, tid = 0, a = 0, b = 0;
	int64_t one = 1;
	char got[8][64];
	const struct store_row *rows;

	(void)state;
	profile_init(&p);
	tn = model_intern(&p, "thread.name");
	tid = model_intern(&p, "thread.id");
	a = model_intern(&p, "worker-1");
	b = model_intern(&p, "worker-2");
	VEC_PUSH(&p.links, ln);
	const struct model_label l0[] = { { tn, a, 0, 0 }, { tid, 0, 7, 0 } };
	const struct model_label l1[] = { { tid, 0, 8, 0 }, { tn, a, 0, 0 } };
	const struct model_label l2[] = { { tn, b, 0, 0 }, { tid, 0, 7, 0 } };
	const struct model_label l3[] = { { tid, model_intern(&p, "7"), 0, 0 }, { tn, a, 0, 0 } };
	const struct model_label l4[] = { { tn, a, 0, 0 }, { tn, b, 0, 0 } };
	uint32_t st = 0; /* samples without a stack */

	model_sample_add(&p, st, 0, &one, l0, 2, T0 + 1, 0);
	model_sample_add(&p, st, 0, &one, l1, 2, T0 + 2, 0);
	model_sample_add(&p, st, 0, &one, l0, 2, T0 + 3, 0); /* l0 again, own label range */
	model_sample_add(&p, st, 0, &one, l2, 2, T0 + 4, 0);
	model_sample_add(&p, st, 0, &one, l3, 2, T0 + 5, 0); /* "7" as a string: l0's set */
	model_sample_add(&p, st, 0, &one, l0, 2, T0 + 6, 1); /* with a link */
	model_sample_add(&p, st, 0, &one, l4, 2, T0 + 7, 0); /* the first value of a key wins */
	model_sample_add(&p, st, 0, &one, NULL, 0, T0 + 8, 0);
	prof_err_init(&err);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(store_head_add(h, &p, T0, &err), 0);
	model_profile_release(&p);
	row_sets(h, got, 8);
	assert_string_equal(got[0], "thread.id=7,thread.name=worker-1");
	assert_string_equal(got[1], "thread.id=8,thread.name=worker-1");
	assert_string_equal(got[2], "thread.id=7,thread.name=worker-1");
	assert_string_equal(got[3], "thread.id=7,thread.name=worker-2");
	assert_string_equal(got[4], "thread.id=7,thread.name=worker-1");
	assert_string_equal(got[5], "thread.id=7,thread.name=worker-1+linkab");
	assert_string_equal(got[6], "thread.name=worker-1");
	assert_string_equal(got[7], "");
	store_head_rdlock(h);
	store_head_series_at(h, 0, &rows);
	assert_int_equal(rows[2].attrs, rows[0].attrs);
	assert_int_equal(rows[4].attrs, rows[0].attrs);
	assert_int_not_equal(rows[1].attrs, rows[0].attrs);
	assert_int_not_equal(rows[5].attrs, rows[0].attrs);
	assert_int_equal(rows[7].attrs, 0);
	size_t nsets;
	store_head_attrs(h, &nsets);
	assert_int_equal(nsets, 1 + 5); /* the empty set and five others */
	store_head_rdunlock(h);
	store_head_free(h);
}

static void test_head_rejects_stack_entry_out_of_range(void **state)
{
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct prof_err err;
	struct store_head_stats st;

	(void)state;
	profile_init(&p);
	add_stack(&p, base3, 3, 1, false);
	p.stack_locs.v[1] = (uint32_t)p.locations.n; /* one past the end */
	prof_err_init(&err);
	assert_int_equal(store_head_check(&p, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "stack entry 1"));
	prof_err_init(&err);
	assert_int_equal(store_head_add(h, &p, T0, &err), -PROF_ECORRUPT);
	store_head_get_stats(h, &st);
	assert_int_equal(st.rows, 0);
	model_profile_release(&p);
	store_head_free(h);
}

/* Times outside 0 .. STORE_HEAD_MAX_TIME_NS are refused (an OTLP fixed64 of
 * 2^63 arrives as INT64_MIN), the bounds themselves accepted. */
static void test_head_rejects_time_out_of_range(void **state)
{
	static const struct {
		int64_t ts, time;
		bool ok;
		const char *what;
	} cases[] = {
		{ INT64_MIN, 0, false, "sample 0: timestamp" },
		{ -1, 0, false, "sample 0: timestamp" },
		{ STORE_HEAD_MAX_TIME_NS + 1, 0, false, "sample 0: timestamp" },
		{ T0, -5, false, "profile: time" },
		{ T0, INT64_MAX, false, "profile: time" },
		{ 0, 0, true, NULL },
		{ STORE_HEAD_MAX_TIME_NS, 0, true, NULL },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct model_profile p;
		struct prof_err err;

		profile_init(&p);
		add_stack(&p, base3, 3, 1, false);
		p.samples.v[0].timestamp_ns = cases[i].ts;
		p.time_ns = cases[i].time;
		prof_err_init(&err);
		if (cases[i].ok) {
			assert_int_equal(store_head_check(&p, &err), 0);
		} else {
			assert_int_equal(store_head_check(&p, &err), -PROF_ECORRUPT);
			assert_non_null(strstr(err.msg, cases[i].what));
		}
		model_profile_release(&p);
	}
}

/* Visitor state of test_head_scan_range_matches_every_row: what the scan handed out. */
struct scanned {
	uint64_t rows, calls;
	int64_t sum;
	int64_t last_value; /* values grow with arrival order */
	int64_t from, to;
	uint64_t stop_after; /* calls; 0 = never */
};

static int scanned_rows(void *arg, const struct store_series *s, const struct store_row *rows,
			size_t n)
{
	struct scanned *sc = arg;

	(void)s;
	assert_true(n >= 1);
	for (size_t i = 0; i < n; i++) {
		assert_true(rows[i].ts_ns >= sc->from && rows[i].ts_ns <= sc->to);
		assert_true(rows[i].value > sc->last_value);
		sc->last_value = rows[i].value;
		sc->sum += rows[i].value;
	}
	sc->rows += n;
	sc->calls++;
	return sc->stop_after && sc->calls == sc->stop_after ? 7 : 0;
}

/*
 * A scan of part of a series' range (pruned by runs of rows' time spans)
 * hands out exactly the rows in range, each once, in arrival order: rows
 * whose times are shuffled within runs of 256 (run k holds times 256 k ..
 * 256 k + 255 ms), and rows 100 and 600 far out of order (at 899 and
 * 399 ms), so runs 0 and 2 overlap others in time.
 */
static void test_head_scan_range_matches_every_row(void **state)
{
	const int64_t ms = 1000000;
	struct store_head *h = store_head_new();
	struct model_profile p;
	struct prof_err err;
	const uint32_t nrows = 1000;

	(void)state;
	profile_init(&p);
	add_stack(&p, base3, 3, 1, false);
	for (uint32_t i = 1; i < nrows; i++) {
		int64_t v = i + 1;
		int64_t t = i == 100 || i == 600 ? (int64_t)(nrows - 1 - i)
						 : i / 256 * 256 + i * 37 % 256;

		model_sample_add(&p, p.samples.v[0].stack_off, 3, &v, NULL, 0, T0 + t * ms, 0);
	}
	prof_err_init(&err);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(store_head_add(h, &p, T0, &err), 0);
	model_profile_release(&p);

	const struct store_row *rows;
	const struct store_series *se = store_head_series_at(h, 0, &rows);
	assert_int_equal(se->nrows, nrows);
	static const int64_t ranges[][2] = {
		{ 0, 999 },   { 0, 0 },	     { 5, 5 },	    { 100, 300 },
		{ 255, 256 }, { 256, 511 },  { 300, 700 },  { 512, 767 },
		{ 768, 999 }, { 998, 1010 }, { -50, -1 },   { 1000, 1200 },
		{ 0, 255 },   { 257, 510 },  { 256, 1100 }, { 1, 1100 },
	};
	for (size_t r = 0; r < PROF_ARRAY_SIZE(ranges); r++) {
		struct scanned sc = { .from = T0 + ranges[r][0] * ms,
				      .to = T0 + ranges[r][1] * ms };
		uint64_t want = 0;
		int64_t want_sum = 0;

		for (uint32_t i = 0; i < nrows; i++)
			if (rows[i].ts_ns >= sc.from && rows[i].ts_ns <= sc.to) {
				want++;
				want_sum += rows[i].value;
			}
		store_head_rdlock(h);
		assert_int_equal(
			store_head_scan(h, NULL, NULL, 0, sc.from, sc.to, scanned_rows, &sc), 0);
		store_head_rdunlock(h);
		assert_int_equal(sc.rows, want);
		assert_int_equal(sc.sum, want_sum);
		if (ranges[r][0] == 1 && ranges[r][1] == 1100)
			assert_int_equal(sc.calls, 2); /* run 0 filtered, runs 1-3 in place */
	}
	/* A range holding the whole series: one call, all values 1 .. 1000. */
	{
		struct scanned sc = { .from = se->min_ts_ns, .to = se->max_ts_ns };

		store_head_rdlock(h);
		assert_int_equal(
			store_head_scan(h, NULL, NULL, 0, sc.from, sc.to, scanned_rows, &sc), 0);
		store_head_rdunlock(h);
		assert_int_equal(sc.calls, 1);
		assert_int_equal(sc.rows, nrows);
		assert_int_equal(sc.sum, 1000 * 1001 / 2);
	}
	/* A visitor's non-zero return stops the scan and is returned. */
	{
		struct scanned sc = { .from = T0 + 100 * ms, .to = T0 + 900 * ms, .stop_after = 1 };

		store_head_rdlock(h);
		assert_int_equal(
			store_head_scan(h, NULL, NULL, 0, sc.from, sc.to, scanned_rows, &sc), 7);
		store_head_rdunlock(h);
		assert_int_equal(sc.calls, 1);
	}
	store_head_free(h);
}

/* Per-stack sums as a totals scan hands them out, with the order stacks first came. */
#define TSUM_MAX 4096
struct tsum {
	int64_t total[TSUM_MAX];
	uint64_t rows[TSUM_MAX];
	uint32_t order[TSUM_MAX];
	size_t norder;
	uint64_t nrows, tcalls, cached_rows;
};

static void tsum_add(struct tsum *t, uint32_t stack, int64_t v, uint64_t rows)
{
	assert_true(stack < TSUM_MAX);
	if (!t->rows[stack])
		t->order[t->norder++] = stack;
	t->total[stack] += v;
	t->rows[stack] += rows;
}

static int tsum_rows(void *arg, const struct store_series *s, const struct store_row *rows,
		     size_t n)
{
	struct tsum *t = arg;

	(void)s;
	for (size_t i = 0; i < n; i++)
		tsum_add(t, rows[i].stack, rows[i].value, 1);
	t->nrows += n;
	return 0;
}

static int tsum_totals(void *arg, const struct store_series *s, const struct store_stack_total *e,
		       size_t n, size_t nrows)
{
	struct tsum *t = arg;

	(void)s;
	for (size_t i = 0; i < n; i++)
		tsum_add(t, e[i].stack, e[i].total, e[i].rows);
	t->nrows += nrows;
	t->tcalls++;
	t->cached_rows += nrows;
	return 0;
}

/* Add @n samples of stacks "f<k>" (k = (i * 7 + @round) % @nstacks) valued by @value. */
static void add_rows(struct store_head *h, int round, uint32_t n, uint32_t nstacks,
		     int64_t (*value)(uint32_t i))
{
	struct model_profile p;
	struct prof_err err;
	char name[16];

	profile_init(&p);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t k = (i * 7 + (uint32_t)round) % nstacks;
		struct frame f = { .name = name, .file = "f.c", .line = 1 };

		snprintf(name, sizeof(name), "f%u", k);
		add_stack(&p, &f, 1, value(i), false);
		p.samples.v[p.samples.n - 1].timestamp_ns = T0 + (int64_t)round * 1000000000LL + i;
	}
	prof_err_init(&err);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(store_head_add(h, &p, T0, &err), 0);
	model_profile_release(&p);
}

static int64_t value_pos(uint32_t i)
{
	return i % 5 + 1;
}

static int64_t value_mixed(uint32_t i)
{
	return i % 9 == 4 ? -3 : (int64_t)(i % 5 + 1);
}

/* Scan the whole range both ways; the sums, row counts and first-seen order must agree. */
static void scan_both(struct store_head *h, struct tsum *with, struct tsum *plain)
{
	memset(with, 0, sizeof(*with));
	memset(plain, 0, sizeof(*plain));
	store_head_rdlock(h);
	assert_int_equal(store_head_scan_totals(h, NULL, NULL, 0, INT64_MIN, INT64_MAX, tsum_rows,
						tsum_totals, with),
			 0);
	assert_int_equal(store_head_scan(h, NULL, NULL, 0, INT64_MIN, INT64_MAX, tsum_rows, plain),
			 0);
	store_head_rdunlock(h);
	assert_int_equal(with->nrows, plain->nrows);
	assert_int_equal(with->norder, plain->norder);
	assert_memory_equal(with->order, plain->order, plain->norder * sizeof(plain->order[0]));
	assert_memory_equal(with->total, plain->total, sizeof(plain->total));
	assert_memory_equal(with->rows, plain->rows, sizeof(plain->rows));
}

/*
 * A series wholly in range comes as its kept per-stack sums plus the rows
 * appended since, equal to summing its rows (values, row counts, and the
 * order stacks first appear); the sums are renewed once a quarter of the
 * rows are newer, and never kept for negative values or too many stacks.
 */
static void test_head_scan_totals_equal_rows(void **state)
{
	static struct tsum with, plain;
	struct store_head *h = store_head_new();
	uint64_t used = 0;

	(void)state;
	for (int round = 0; round < 8; round++) {
		add_rows(h, round, round == 0 ? 200 : 300, 12, value_pos);
		scan_both(h, &with, &plain);
		if (round == 0) {
			assert_int_equal(with.tcalls, 0); /* 200 rows: below one run */
			continue;
		}
		assert_int_equal(with.tcalls, 1);
		assert_true(with.cached_rows <= with.nrows);
		assert_true(with.nrows - with.cached_rows <= with.nrows / 4);
		used += with.nrows - with.cached_rows > 0;
	}
	assert_true(used > 0); /* some scans summed kept sums and newer rows */
	store_head_free(h);

	/* A negative value: rows every time, the same answers. */
	h = store_head_new();
	for (int round = 0; round < 4; round++) {
		add_rows(h, round, 300, 12, value_mixed);
		scan_both(h, &with, &plain);
		assert_int_equal(with.tcalls, 0);
	}
	store_head_free(h);

	/* Nearly every row its own stack: not worth keeping. */
	h = store_head_new();
	for (int round = 0; round < 3; round++) {
		add_rows(h, round, 600, 1000, value_pos);
		scan_both(h, &with, &plain);
		assert_int_equal(with.tcalls, 0);
	}
	store_head_free(h);
}

/* scan_both over [@from, @to]: the totals scan (kept sums where it can) against the plain rows. */
static void scan_range_both(struct store_head *h, int64_t from, int64_t to, struct tsum *with,
			    struct tsum *plain)
{
	memset(with, 0, sizeof(*with));
	memset(plain, 0, sizeof(*plain));
	store_head_rdlock(h);
	assert_int_equal(
		store_head_scan_totals(h, NULL, NULL, 0, from, to, tsum_rows, tsum_totals, with),
		0);
	assert_int_equal(store_head_scan(h, NULL, NULL, 0, from, to, tsum_rows, plain), 0);
	store_head_rdunlock(h);
	assert_int_equal(with->nrows, plain->nrows);
	assert_int_equal(with->norder, plain->norder);
	assert_memory_equal(with->order, plain->order, plain->norder * sizeof(plain->order[0]));
	assert_memory_equal(with->total, plain->total, sizeof(plain->total));
	assert_memory_equal(with->rows, plain->rows, sizeof(plain->rows));
}

/*
 * A range that cuts a series: each completed run of 8192 rows wholly in
 * range comes as its kept sums, the rest as rows, equal to summing the
 * rows (values, row counts, first-seen order), for random ranges that cut
 * runs anywhere, before and after more rows are appended; runs with a
 * negative value or too many stacks come as rows.
 */
static void test_head_scan_totals_runs_equal_rows(void **state)
{
	static struct tsum with, plain;
	uint64_t seed = 11;

	(void)state;
	for (int shape = 0; shape < 3; shape++) {
		struct store_head *h = store_head_new();
		uint64_t tcalls = 0;

		for (int round = 0; round < 14; round++) {
			/* 3000 rows a round, a second apart: runs of 8192 end mid-round */
			if (shape == 0)
				add_rows(h, round, 3000, 40 + (uint32_t)round, value_pos);
			else if (shape == 1) /* a negative value in rounds 5 and 9 only */
				add_rows(h, round, 3000, 40,
					 round == 5 || round == 9 ? value_mixed : value_pos);
			else /* too many stacks for a run, from round 6 on */
				add_rows(h, round, 3000, round < 6 ? 40 : 2900, value_pos);
			int64_t end = T0 + (int64_t)(round + 1) * 1000000000LL;
			for (int q = 0; q < 12; q++) {
				seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
				int64_t from =
					T0 - 5 + (int64_t)((seed >> 20) % (uint64_t)(end - T0));
				int64_t to =
					from + (int64_t)((seed >> 7) % (uint64_t)(end - T0 + 10));

				if (q ==
				    0) /* the rounds before this one: their runs all in range */
					from = T0, to = end - 1000000000LL + 2999;
				scan_range_both(h, from, to, &with, &plain);
				tcalls += with.tcalls;
			}
		}
		assert_true(tcalls > 0); /* kept sums served some ranges */
		store_head_free(h);
	}
}

/*
 * The unfinished last run of a series: a range that cuts the series but
 * covers the run's completed spans adds their kept sums (renewed once the
 * spans completed since are over a quarter) and reads the rows after,
 * equal to summing the rows; once the run completes its run sums serve.
 */
static void test_head_scan_totals_tail_equal_rows(void **state)
{
	static struct tsum with, plain;
	/* rows summed by kept sums after rounds 4..12: the tail needs 2048 rows of spans */
	static const uint64_t want[] = { 0, 0, 2816, 3840, 3840, 5888, 5888, 7936, 8192 };
	struct store_head *h = store_head_new();

	(void)state;
	for (int round = 0; round < 4; round++) /* 4 x 2048 rows: one completed run */
		add_rows(h, round, 2048, 40, value_pos);
	for (int round = 4; round <= 12; round++) {
		add_rows(h, round, 1000, 40 + (uint32_t)round, value_pos);
		/* from inside the completed run (its rows read) to past the end */
		scan_range_both(h, T0 + 1000000000LL + 1000, T0 + 100 * 1000000000LL, &with,
				&plain);
		assert_int_equal(with.cached_rows, want[round - 4]);
		assert_int_equal(with.tcalls, want[round - 4] ? 1 : 0);
	}
	/* A range from inside the tail: its rows, the same answer. */
	scan_range_both(h, T0 + 12 * 1000000000LL + 10, T0 + 100 * 1000000000LL, &with, &plain);
	assert_int_equal(with.tcalls, 0);
	store_head_free(h);

	/* A negative value in the tail: rows, the same answer. */
	h = store_head_new();
	for (int round = 0; round < 4; round++)
		add_rows(h, round, 2048, 40, value_pos);
	add_rows(h, 4, 3000, 40, value_mixed);
	for (int q = 0; q < 2; q++) {
		scan_range_both(h, T0 + 1000000000LL + 1000, T0 + 100 * 1000000000LL, &with,
				&plain);
		assert_int_equal(with.tcalls, 0);
	}
	store_head_free(h);
}

static void run_via(int how, void (*test)(void **), unsigned min_resolved)
{
	via = how;
	via_calls = resolved = 0;
	test(NULL);
	via = VIA_MODEL;
	/* each new variant is a stack the head lacks: its batch is resolved */
	assert_true(resolved >= min_resolved);
}

static void test_head_pending_stacks_split_and_reuse_like_model_ones(void **state)
{
	(void)state;
	run_via(VIA_PENDING, test_head_any_location_field_splits_stacks, 11);
	run_via(VIA_BOTH, test_head_any_location_field_splits_stacks, 0);
	run_via(VIA_PENDING, test_head_frames_without_lines_split_by_mapping_address_and_type, 7);
	run_via(VIA_BOTH, test_head_frames_without_lines_split_by_mapping_address_and_type, 0);
}

/*
 * One request with a stack the head has and one it lacks: the batch is
 * resolved, the known stack keeps its node, the new one gets its own;
 * the same request again is taken by keys alone, with the same nodes.
 */
static void test_head_pending_partly_known(void **state)
{
	struct store_head *h = store_head_new();
	struct frame other[3];
	uint32_t known, fresh;
	const struct store_row *rows;
	const struct store_series *s;
	struct model_profile p;

	(void)state;
	memcpy(other, base3, sizeof(other));
	other[2].name = "other_leaf";
	known = add_one(h, base3, 3, false);
	via = VIA_PENDING;
	via_calls = resolved = 0;
	/* a stack the model path added is found by its wire key: nothing resolved */
	assert_int_equal(add_one(h, base3, 3, true), known);
	assert_int_equal(resolved, 0);
	for (int round = 0; round < 2; round++) {
		profile_init(&p);
		add_stack(&p, other, 3, 5, round);
		add_stack(&p, base3, 3, 7, !round);
		head_add(h, &p);
		model_profile_release(&p);
		assert_int_equal(resolved, 1); /* only the first round */
		s = store_head_series_at(h, 0, &rows);
		assert_int_equal(s->nrows, 4 + 2 * round);
		fresh = rows[s->nrows - 2].stack;
		assert_int_equal(rows[s->nrows - 2].value, 5);
		assert_int_equal(rows[s->nrows - 1].value, 7);
		assert_int_equal(rows[s->nrows - 1].stack, known);
		assert_int_not_equal(fresh, known);
		if (round)
			assert_int_equal(fresh, rows[2].stack);
	}
	via = VIA_MODEL;
	assert_int_equal(add_one(h, other, 3, true), fresh);
	store_head_free(h);

	/* frames without lines (a mapping with a build ID, typed, folded) too */
	static const struct bare root = { "/bin/app", 0x401000, "native", false },
				 leaf = { "/lib/libc.so.6", 0x402000, "kernel", true };
	h = store_head_new();
	known = add_bare(h, &root, &leaf, false);
	via = VIA_PENDING;
	resolved = 0;
	assert_int_equal(add_bare(h, &root, &leaf, true), known);
	assert_int_equal(resolved, 0);
	via = VIA_MODEL;
	store_head_free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_head_same_stack_later_profile_reuses_ids),
		cmocka_unit_test(test_head_any_location_field_splits_stacks),
		cmocka_unit_test(test_head_frames_without_lines_split_by_mapping_address_and_type),
		cmocka_unit_test(test_head_pending_stacks_split_and_reuse_like_model_ones),
		cmocka_unit_test(test_head_pending_partly_known),
		cmocka_unit_test(test_head_samples_with_equal_attributes_share_a_set),
		cmocka_unit_test(test_head_rejects_stack_entry_out_of_range),
		cmocka_unit_test(test_head_rejects_time_out_of_range),
		cmocka_unit_test(test_head_scan_range_matches_every_row),
		cmocka_unit_test(test_head_scan_totals_equal_rows),
		cmocka_unit_test(test_head_scan_totals_runs_equal_rows),
		cmocka_unit_test(test_head_scan_totals_tail_equal_rows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
