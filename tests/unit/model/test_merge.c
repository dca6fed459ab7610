// SPDX-License-Identifier: Apache-2.0
/*
 * test_merge.c - the laws of model_profile_merge (src/model/merge.c) and
 * the averaging of model_profile_merge_over_time:
 *   - handmade profiles: merge(A, empty) == A == merge(empty, A) field by
 *     field (attributes and time range included); merge(A, B) and
 *     merge(B, A) give the same per-type, per-stack values; heap snapshots
 *     merged over time average inuse_* (exact rounded values) and sum
 *     alloc_*;
 *   - every file of the shared corpus ($PROFD_CORPUS, else
 *     ../shared/corpus; skipped when absent), decoded with fmt_decode_any:
 *     merge(A, empty) == A for each, and for pairs A, B (each file with
 *     itself, its neighbour and one far away in the list) the view
 *     (per sample type, per stack of frame names, per label set: the summed
 *     value) of merge(A, B) equals that of merge(B, A) and view(A) + view(B).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/detect.h"
#include "model/merge.h"
#include "model/profile.h"

#include <dirent.h>
#include <setjmp.h>
#include <cmocka.h>

/* ---- the view: (type/unit, stack, labels) -> summed value ------------------ */

struct view {
	struct strtab keys;
	VEC(int64_t) sum; /* by key id */
};

static void view_init(struct view *v)
{
	strtab_init(&v->keys);
	memset(&v->sum, 0, sizeof(v->sum));
}

static void view_release(struct view *v)
{
	strtab_release(&v->keys);
	VEC_FREE(&v->sum);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void label_text(const struct model_profile *p, const struct model_label *l, struct buf *b)
{
	buf_reset(b);
	if (l->str)
		buf_addf(b, "%s=%s", model_str(p, l->key), model_str(p, l->str));
	else
		buf_addf(b, "%s=%" PRId64 "%s", model_str(p, l->key), l->num,
			 model_str(p, l->num_unit));
}

/* Adds profile @p into @v (values scaled by @mult, 1 or -1). */
static void view_add(struct view *v, const struct model_profile *p, int mult)
{
	struct buf key = BUF_INIT, lb = BUF_INIT;
	VEC(char *) labs = { 0 };

	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];
		struct buf stack = BUF_INIT;

		for (uint32_t k = 0; k < s->nstack; k++) {
			const struct model_location *l =
				&p->locations.v[p->stack_locs.v[s->stack_off + k]];

			for (uint32_t ln = 0; ln < (l->nlines ? l->nlines : 1); ln++) {
				char tmp[256];

				buf_addstr(&stack, model_frame_name(p, l, ln, tmp, sizeof(tmp)));
				buf_add(&stack, "\x1f", 1);
			}
		}
		/* Sample labels and profile attributes, as a sorted set. */
		labs.n = 0;
		for (uint32_t k = 0; k < s->nlabels; k++) {
			label_text(p, &p->labels.v[s->label_off + k], &lb);
			VEC_PUSH(&labs, xstrdup(lb.p));
		}
		for (size_t k = 0; k < p->attrs.n; k++) {
			label_text(p, &p->attrs.v[k], &lb);
			VEC_PUSH(&labs, xstrdup(lb.p));
		}
		if (labs.n > 1)
			qsort(labs.v, labs.n, sizeof(*labs.v), cmp_str);
		for (size_t t = 0; t < p->sample_types.n; t++) {
			int64_t val = p->values.v[s->value_off + t];
			uint32_t id;

			if (!val)
				continue;
			buf_reset(&key);
			buf_addf(&key, "%s/%s\x1e", model_str(p, p->sample_types.v[t].type),
				 model_str(p, p->sample_types.v[t].unit));
			buf_add(&key, stack.p ? stack.p : "", stack.len);
			for (size_t k = 0; k < labs.n; k++)
				buf_addf(&key, "\x1d%s", labs.v[k]);
			id = strtab_intern(&v->keys, key.p, key.len);
			while (v->sum.n <= id)
				VEC_PUSH(&v->sum, 0);
			v->sum.v[id] = (int64_t)((uint64_t)v->sum.v[id] + (uint64_t)(mult * val));
		}
		for (size_t k = 0; k < labs.n; k++)
			free(labs.v[k]);
		buf_release(&stack);
	}
	VEC_FREE(&labs);
	buf_release(&key);
	buf_release(&lb);
}

/* Is every summed value of @v zero (so the views that built it agree)? */
static bool view_zero(const struct view *v, const char *what)
{
	for (size_t i = 0; i < v->sum.n; i++) {
		if (v->sum.v[i]) {
			print_message("%s: %" PRId64 " left at key %s\n", what, v->sum.v[i],
				      v->keys.s[i]);
			return false;
		}
	}
	return true;
}

static int merge2(const struct model_profile *a, const struct model_profile *b,
		  struct model_profile *out, bool over_time)
{
	const struct model_profile *in[2] = { a, b };

	model_profile_init(out);
	return over_time ? model_profile_merge_over_time(in, 2, out, NULL)
			 : model_profile_merge(in, 2, out, NULL);
}

/* merge(A, empty) and merge(empty, A) == A, field by field. */
static void check_identity(const struct model_profile *a, const char *what)
{
	struct model_profile e, m;

	model_profile_init(&e);
	for (int side = 0; side < 2; side++) {
		struct view v;

		assert_int_equal(side ? merge2(&e, a, &m, false) : merge2(a, &e, &m, false), 0);
		assert_int_equal(m.sample_types.n, a->sample_types.n);
		for (size_t t = 0; t < a->sample_types.n; t++) {
			assert_string_equal(model_str(&m, m.sample_types.v[t].type),
					    model_str(a, a->sample_types.v[t].type));
			assert_string_equal(model_str(&m, m.sample_types.v[t].unit),
					    model_str(a, a->sample_types.v[t].unit));
		}
		if (m.samples.n != a->samples.n)
			fail_msg("%s: %zu samples after merging with the empty profile, %zu before",
				 what, m.samples.n, a->samples.n);
		for (size_t i = 0; i < a->samples.n; i++) {
			assert_int_equal(m.samples.v[i].nstack, a->samples.v[i].nstack);
			assert_int_equal(m.samples.v[i].nlabels, a->samples.v[i].nlabels);
			assert_int_equal(m.samples.v[i].timestamp_ns, a->samples.v[i].timestamp_ns);
			assert_memory_equal(&m.values.v[m.samples.v[i].value_off],
					    &a->values.v[a->samples.v[i].value_off],
					    a->sample_types.n * sizeof(int64_t));
		}
		assert_int_equal(m.attrs.n, a->attrs.n);
		assert_int_equal(m.time_ns, a->time_ns);
		assert_int_equal(m.duration_ns, a->duration_ns);
		assert_int_equal(m.period, a->period);
		view_init(&v);
		view_add(&v, &m, 1);
		view_add(&v, a, -1);
		if (!view_zero(&v, what))
			fail_msg("%s: merge with the empty profile changed the view", what);
		view_release(&v);
		model_profile_release(&m);
	}
	model_profile_release(&e);
}

/* view(merge(A, B)) == view(merge(B, A)) == view(A) + view(B). */
static void check_pair(const struct model_profile *a, const struct model_profile *b,
		       const char *what)
{
	struct model_profile ab, ba;
	struct view v;

	assert_int_equal(merge2(a, b, &ab, false), 0);
	assert_int_equal(merge2(b, a, &ba, false), 0);
	view_init(&v);
	view_add(&v, &ab, 1);
	view_add(&v, a, -1);
	view_add(&v, b, -1);
	if (!view_zero(&v, what))
		fail_msg("%s: merge(A, B) != A + B", what);
	view_release(&v);
	view_init(&v);
	view_add(&v, &ab, 1);
	view_add(&v, &ba, -1);
	if (!view_zero(&v, what))
		fail_msg("%s: merge(A, B) != merge(B, A)", what);
	view_release(&v);
	model_profile_release(&ab);
	model_profile_release(&ba);
}

/* ---- handmade profiles ------------------------------------------------------ */

/* A profile with @nt types (names @types, unit "count" or "bytes") and stacks "a;b;c" -> values. */
static void build(struct model_profile *p, const char *const *types, size_t nt,
		  const char *const *stacks, const int64_t *vals, size_t ns, const char *attr)
{
	model_profile_init(p);
	for (size_t t = 0; t < nt; t++)
		model_sample_type_add(p, types[t], strstr(types[t], "space") ? "bytes" : "count");
	for (size_t i = 0; i < ns; i++) {
		uint32_t locs[8], n = 0, off;
		char buf[64];
		char *save = NULL, *tok;

		snprintf(buf, sizeof(buf), "%s", stacks[i]);
		for (tok = strtok_r(buf, ";", &save); tok && n < 8;
		     tok = strtok_r(NULL, ";", &save)) {
			struct model_line ln = { 0 };

			ln.function = model_function_intern(p, model_intern(p, tok), 0, 0, 0);
			locs[n++] = model_location_add(p, 0, 0, &ln, 1);
		}
		off = model_stack_add(p, locs, n);
		model_sample_add(p, off, n, &vals[i * nt], NULL, 0, 0, 0);
	}
	if (attr)
		model_attr_add_str(p, "service.name", attr);
}

static void test_identity_and_order(void **state)
{
	static const char *const cpu[] = { "samples", "cpu" };
	static const char *const heap[] = { "alloc_space", "inuse_space" };
	static const char *const st[] = { "main;foo", "main;bar", "main;foo" };
	static const int64_t v1[] = { 1, 10, 2, 20, 3, 30 };
	static const int64_t v2[] = { 100, 7, 200, 8 };
	struct model_profile a, b, m;

	(void)state;
	build(&a, cpu, 2, st, v1, 3, "api");
	a.time_ns = 1000;
	a.duration_ns = 50;
	a.period = 10;
	build(&b, heap, 2, st, v2, 2, "db");
	check_identity(&a, "handmade cpu");
	check_identity(&b, "handmade heap");
	check_pair(&a, &b, "handmade cpu + heap");
	check_pair(&a, &a, "handmade cpu + cpu");
	/* Attributes that differ become labels; the empty profile adds none. */
	assert_int_equal(merge2(&a, &b, &m, false), 0);
	assert_int_equal(m.attrs.n, 0);
	assert_int_equal(m.samples.v[0].nlabels, 1);
	assert_string_equal(model_str(&m, m.labels.v[m.samples.v[0].label_off].str), "api");
	model_profile_release(&m);
	model_profile_release(&a);
	model_profile_release(&b);
}

static void test_over_time_averages_gauges(void **state)
{
	static const char *const heap[] = { "alloc_space", "inuse_space" };
	static const char *const st1[] = { "main;foo", "main;bar" };
	static const char *const st2[] = { "main;foo", "main;baz" };
	static const int64_t v1[] = { 100, 40, 10, 5 };
	static const int64_t v2[] = { 50, 61, 20, 0 };
	static const char *const gor[] = { "goroutine" };
	static const int64_t g1[] = { 4 }, g2[] = { 7 };
	struct model_profile a, b, e, m;
	const struct model_profile *three[3];

	(void)state;
	build(&a, heap, 2, st1, v1, 2, NULL);
	build(&b, heap, 2, st2, v2, 2, NULL);
	model_profile_init(&e);
	three[0] = &a, three[1] = &e, three[2] = &b;
	model_profile_init(&m);
	{
		struct prof_err err;

		prof_err_init(&err);
		if (model_profile_merge_over_time(three, 3, &m, &err))
			fail_msg("merge over time: %s", err.msg);
	}
	/* main;foo: alloc 100 + 50 summed, inuse (40 + 61) / 2 = 50.5 -> 51 (the empty one does not count). */
	assert_int_equal(m.samples.n, 3);
	assert_int_equal(m.values.v[0], 150);
	assert_int_equal(m.values.v[1], 51);
	assert_int_equal(m.values.v[2], 10);
	assert_int_equal(m.values.v[3], 3); /* main;bar: 5 / 2 = 2.5 -> 3 */
	assert_int_equal(m.values.v[4], 20);
	assert_int_equal(m.values.v[5], 0);
	assert_true(model_value_type_is_gauge("inuse_objects"));
	assert_false(model_value_type_is_gauge("alloc_space"));
	model_profile_release(&m);
	/* The same inputs summed: what over-time merging corrects. */
	model_profile_init(&m);
	assert_int_equal(model_profile_merge(three, 3, &m, NULL), 0);
	assert_int_equal(m.samples.n, 4);
	assert_int_equal(m.values.v[1] + m.values.v[5], 101);
	model_profile_release(&m);
	model_profile_release(&a);
	model_profile_release(&b);

	/* Goroutine counts: (4 + 7) / 2 = 5.5 -> 6; in order or not. */
	build(&a, gor, 1, st1, g1, 1, NULL);
	build(&b, gor, 1, st1, g2, 1, NULL);
	for (int side = 0; side < 2; side++) {
		assert_int_equal(side ? merge2(&b, &a, &m, true) : merge2(&a, &b, &m, true), 0);
		assert_int_equal(m.samples.n, 1);
		assert_int_equal(m.values.v[0], 6);
		model_profile_release(&m);
	}
	/* No gauge column: exactly model_profile_merge. */
	model_profile_release(&e);
	build(&e, (const char *const[]){ "cpu" }, 1, st1, g1, 1, NULL);
	assert_int_equal(merge2(&e, &e, &m, true), 0);
	assert_int_equal(m.samples.n, 2);
	model_profile_release(&m);
	model_profile_release(&e);
	model_profile_release(&a);
	model_profile_release(&b);
}

/* ---- the corpus ------------------------------------------------------------- */

static void test_corpus_laws(void **state)
{
	const char *dir = getenv("PROFD_CORPUS") ? getenv("PROFD_CORPUS") : "../shared/corpus";
	static const char *const folders[] = { "pprof",	     "pprof-legacy", "jfr",
					       "otlp",	     "collapsed",    "perf-script",
					       "speedscope", "cpuprofile" };
	VEC(struct model_profile *) ps = { 0 };
	VEC(char *) names = { 0 };
	size_t pairs = 0;

	(void)state;
	for (size_t f = 0; f < PROF_ARRAY_SIZE(folders); f++) {
		char path[4096];
		DIR *d;
		struct dirent *de;

		snprintf(path, sizeof(path), "%s/%s", dir, folders[f]);
		d = opendir(path);
		if (!d)
			continue;
		while ((de = readdir(d)) != NULL) {
			struct buf data;
			struct model_profile *p;
			struct prof_err err;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", dir, folders[f], de->d_name);
			buf_init(&data, 64u << 20);
			if (buf_read_file(&data, path)) {
				buf_release(&data);
				continue;
			}
			p = xmalloc(sizeof(*p));
			model_profile_init(p);
			prof_err_init(&err);
			if (fmt_decode_any(data.p ? data.p : "", data.len, de->d_name, NULL, p,
					   &err)) {
				model_profile_release(p); /* files the reference tools reject too */
				free(p);
			} else {
				VEC_PUSH(&ps, p);
				VEC_PUSH(&names, xstrdup(de->d_name));
			}
			buf_release(&data);
		}
		closedir(d);
	}
	if (!ps.n) {
		print_message("skip: no corpus at %s (set PROFD_CORPUS)\n", dir);
		VEC_FREE(&ps);
		VEC_FREE(&names);
		return;
	}
	for (size_t i = 0; i < ps.n; i++) {
		/*
		 * Each file with itself, its neighbour and the file half the list
		 * away (formats differ along the list): every file in three pairs.
		 * All n^2 pairs take a minute under ASan and exercise nothing new.
		 */
		size_t with[3] = { i, (i + 1) % ps.n, (i + ps.n / 2) % ps.n };

		check_identity(ps.v[i], names.v[i]);
		for (size_t k = 0; k < 3; k++) {
			char what[512];

			snprintf(what, sizeof(what), "%s + %s", names.v[i], names.v[with[k]]);
			check_pair(ps.v[i], ps.v[with[k]], what);
			pairs++;
		}
	}
	print_message("corpus: %zu profiles, identity for each, %zu pairs\n", ps.n, pairs);
	for (size_t i = 0; i < ps.n; i++) {
		model_profile_release(ps.v[i]);
		free(ps.v[i]);
		free(names.v[i]);
	}
	VEC_FREE(&ps);
	VEC_FREE(&names);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_identity_and_order),
		cmocka_unit_test(test_over_time_averages_gauges),
		cmocka_unit_test(test_corpus_laws),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
