// SPDX-License-Identifier: Apache-2.0
/*
 * test_otlp_direct.c - the direct OTLP decoder (src/format/otlp_direct.c)
 * against the protobuf-c one (fmt_otlp_decode_pbc): on every input both
 * accept, the model profiles must be identical (same string ids, tables,
 * samples, labels); on every input the direct decoder takes (returns 0),
 * protobuf-c must succeed too. Inputs: every file of the shared corpus
 * ($PROFD_CORPUS, else ../shared/corpus) decoded and re-encoded as OTLP,
 * hand-made requests in the shapes other producers use (resource
 * attributes by key_strindex / string_value_strindex as the spec's example
 * and the eBPF profiler write, packed and unpacked repeated fields, unknown
 * fields, links, bool/double/bytes values, a scalar sent twice), and
 * thousands of mutations of them (bit flips, truncations, inserted bytes).
 * On every input the direct decoder rejects itself
 * (fmt_otlp_decode_direct_err: it parses but does not convert), the code
 * and message must be protobuf-c's, word for word; and on every input
 * protobuf-c rejects, the store's decoders (fmt_otlp_decode_shared,
 * _pending) answer with its code and message.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "format/detect.h"
#include "format/otlp.h"
#include "model/profile.h"
#include "store/head.h"
#include "unit/testlib.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

/* ---- model equality ----------------------------------------------------------- */

#define EQ(field) assert_int_equal(a->field, b->field)

/* String @i of @a equals string @j of @b. */
static void eq_str(const struct model_profile *a, uint32_t i, const struct model_profile *b,
		   uint32_t j)
{
	assert_int_equal(a->strings.len[i], b->strings.len[j]);
	assert_memory_equal(a->strings.s[i], b->strings.s[j], a->strings.len[i]);
}

static void eq_labels(const struct model_profile *a, const struct model_label *x,
		      const struct model_profile *b, const struct model_label *y, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		eq_str(a, x[i].key, b, y[i].key);
		eq_str(a, x[i].str, b, y[i].str);
		eq_str(a, x[i].num_unit, b, y[i].num_unit);
		assert_int_equal(x[i].num, y[i].num);
	}
}

static void eq_location(const struct model_profile *a, uint32_t li, const struct model_profile *b,
			uint32_t lj)
{
	const struct model_location *x = &a->locations.v[li], *y = &b->locations.v[lj];
	const struct model_mapping *mx = &a->mappings.v[x->mapping],
				   *my = &b->mappings.v[y->mapping];

	assert_int_equal(x->address, y->address);
	assert_int_equal(x->nlines, y->nlines);
	assert_int_equal(x->is_folded, y->is_folded);
	assert_int_equal((x->mapping == 0), (y->mapping == 0));
	eq_str(a, x->frame_type, b, y->frame_type);
	assert_int_equal(mx->memory_start, my->memory_start);
	assert_int_equal(mx->memory_limit, my->memory_limit);
	assert_int_equal(mx->file_offset, my->file_offset);
	assert_int_equal(mx->has_functions, my->has_functions);
	assert_int_equal(mx->has_filenames, my->has_filenames);
	assert_int_equal(mx->has_line_numbers, my->has_line_numbers);
	assert_int_equal(mx->has_inline_frames, my->has_inline_frames);
	eq_str(a, mx->filename, b, my->filename);
	eq_str(a, mx->build_id, b, my->build_id);
	for (uint32_t k = 0; k < x->nlines; k++) {
		const struct model_line *lx = &a->lines.v[x->line_off + k],
					*ly = &b->lines.v[y->line_off + k];
		const struct model_function *fx = &a->functions.v[lx->function],
					    *fy = &b->functions.v[ly->function];

		assert_int_equal(lx->line, ly->line);
		assert_int_equal(lx->column, ly->column);
		assert_int_equal((lx->function == 0), (ly->function == 0));
		assert_int_equal(fx->start_line, fy->start_line);
		eq_str(a, fx->name, b, fy->name);
		eq_str(a, fx->system_name, b, fy->system_name);
		eq_str(a, fx->filename, b, fy->filename);
	}
}

/*
 * @a and @b hold the same profile by content (strings, stacks, labels
 * resolved; ids may differ): what fmt_otlp_decode_shared must keep of
 * fmt_otlp_decode_direct's profiles.
 */
static void same_content(const struct model_profile *a, const struct model_profile *b)
{
	assert_int_equal(a->sample_types.n, b->sample_types.n);
	for (size_t i = 0; i < a->sample_types.n; i++) {
		eq_str(a, a->sample_types.v[i].type, b, b->sample_types.v[i].type);
		eq_str(a, a->sample_types.v[i].unit, b, b->sample_types.v[i].unit);
	}
	eq_str(a, a->period_type.type, b, b->period_type.type);
	eq_str(a, a->period_type.unit, b, b->period_type.unit);
	eq_str(a, a->default_sample_type, b, b->default_sample_type);
	eq_str(a, a->drop_frames, b, b->drop_frames);
	eq_str(a, a->keep_frames, b, b->keep_frames);
	eq_str(a, a->name, b, b->name);
	EQ(period);
	EQ(time_ns);
	EQ(duration_ns);
	assert_int_equal(a->attrs.n, b->attrs.n);
	eq_labels(a, a->attrs.v, b, b->attrs.v, a->attrs.n);
	assert_int_equal(a->comments.n, b->comments.n);
	for (size_t i = 0; i < a->comments.n; i++)
		eq_str(a, a->comments.v[i], b, b->comments.v[i]);
	assert_int_equal(a->values.n, b->values.n);
	if (a->values.n)
		assert_memory_equal(a->values.v, b->values.v, a->values.n * sizeof(*a->values.v));
	assert_int_equal(a->samples.n, b->samples.n);
	for (size_t i = 0; i < a->samples.n; i++) {
		const struct model_sample *x = &a->samples.v[i], *y = &b->samples.v[i];

		assert_int_equal(x->nstack, y->nstack);
		assert_int_equal(x->value_off, y->value_off);
		assert_int_equal(x->nlabels, y->nlabels);
		assert_int_equal(x->timestamp_ns, y->timestamp_ns);
		assert_int_equal((x->link == 0), (y->link == 0));
		if (x->link)
			assert_memory_equal(&a->links.v[x->link], &b->links.v[y->link],
					    sizeof(a->links.v[0]));
		for (uint32_t k = 0; k < x->nstack; k++)
			eq_location(a, a->stack_locs.v[x->stack_off + k], b,
				    b->stack_locs.v[y->stack_off + k]);
		eq_labels(a, a->labels.v + x->label_off, b, b->labels.v + y->label_off, x->nlabels);
	}
}

/*
 * fmt_otlp_decode_pending on @data (which @d, the direct decoder's
 * profiles, and @sh, the shared ones, came from): valid while pending;
 * a head that holds @sh finds every pending stack by its key (so the
 * decoder keys wire stacks exactly as the head keys model ones) and
 * takes the batch without resolving it; resolved, the profiles have @d's
 * content and share one dictionary.
 */
static void pending_agrees(const void *data, size_t n, size_t max_samples,
			   const struct fmt_otlp_batch *d, const struct fmt_otlp_batch *sh)
{
	struct fmt_otlp_batch pb;
	struct prof_err err;
	bool checked = true;

	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode_pending(data, n, max_samples, &pb, &err), 0);
	assert_int_equal(pb.n, d->n);
	for (size_t i = 0; i < pb.n; i++) {
		assert_non_null(pb.profiles[i].pending);
		assert_int_equal(model_profile_validate(&pb.profiles[i], NULL), 0);
		checked = checked && !store_head_check_validated(&sh->profiles[i], NULL);
	}
	if (checked && pb.n) {
		struct store_head *h = store_head_new();
		const struct model_profile **pp = xcalloc(pb.n, sizeof(*pp));

		for (size_t i = 0; i < pb.n; i++)
			pp[i] = &sh->profiles[i];
		store_head_add_batch(h, pp, pb.n, 1);
		for (size_t i = 0; i < pb.n; i++)
			pp[i] = &pb.profiles[i];
		store_head_add_batch(h, pp, pb.n, 1);
		for (size_t i = 0; i < pb.n; i++)
			if (!pb.profiles[i].pending)
				fail_msg("profile %zu: a stack's wire key differs from the head's",
					 i);
		free(pp);
		store_head_free(h);
	}
	fmt_otlp_batch_resolve(&pb);
	for (size_t i = 0; i < pb.n; i++) {
		assert_null(pb.profiles[i].pending);
		assert_int_equal(model_profile_validate(&pb.profiles[i], NULL), 0);
		assert_true(model_profile_same_dict(&pb.profiles[i], &pb.profiles[0]));
		same_content(&d->profiles[i], &pb.profiles[i]);
	}
	fmt_otlp_batch_release(&pb);
}

/* Inputs the direct decoder rejected itself, with protobuf-c's words (differential). */
static size_t direct_errors;

/*
 * The store's decoder @fn on @data, which protobuf-c rejects with @rr and
 * @want: the same code and message, and nothing decoded; or, past the
 * decoded size limit only, the profiles (the store's one dictionary for
 * all of them is counted once, not per profile).
 */
static void same_error(int (*fn)(const void *, size_t, size_t, struct fmt_otlp_batch *,
				 struct prof_err *),
		       const char *name, const void *data, size_t n, size_t max_samples, int rr,
		       const char *want)
{
	struct fmt_otlp_batch b;
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = fn(data, n, max_samples, &b, &err);
	if (rc == 0 && strstr(want, "decoded size limit")) {
		fmt_otlp_batch_release(&b);
		return;
	}
	if (rc != rr || strcmp(err.msg, want))
		fail_msg("%s: rc %d, \"%s\"\n  protobuf-c: rc %d, \"%s\"", name, rc, err.msg, rr,
			 want);
	assert_int_equal(b.n, 0);
	assert_null(b.profiles);
}

/*
 * Both decoders on @data: returns true when the direct one took it. When
 * it did, protobuf-c must agree exactly, and fmt_otlp_decode_shared must
 * give the same profiles by content, valid, sharing one dictionary. When
 * it gave an error, protobuf-c must give the same code and message; when
 * protobuf-c gives one, so must fmt_otlp_decode_shared and _pending.
 */
static bool differential(const void *data, size_t n, size_t max_samples)
{
	struct fmt_otlp_batch d, r;
	struct prof_err err, derr;
	int rd, rr;

	prof_err_init(&derr);
	rd = fmt_otlp_decode_direct_err(data, n, max_samples, &d, &derr);
	assert_true(rd == 0 || rd == FMT_OTLP_FALLBACK || rd < 0);
	prof_err_init(&err);
	rr = fmt_otlp_decode_pbc(data, n, max_samples, &r, &err);
	if (rd < 0 && rd != FMT_OTLP_FALLBACK) {
		direct_errors++;
		if (rd != rr || strcmp(derr.msg, err.msg))
			fail_msg("direct: rc %d, \"%s\"\n  protobuf-c: rc %d, \"%s\"", rd, derr.msg,
				 rr, err.msg);
	} else if (rd == FMT_OTLP_FALLBACK) {
		assert_string_equal(derr.msg, "");
	}
	if (rr != 0) {
		same_error(fmt_otlp_decode_shared, "shared", data, n, max_samples, rr, err.msg);
		same_error(fmt_otlp_decode_pending, "pending", data, n, max_samples, rr, err.msg);
		same_error(fmt_otlp_decode, "fmt_otlp_decode", data, n, max_samples, rr, err.msg);
	}
	if (rd == 0) {
		if (rr != 0)
			fail_msg("direct decoder accepted what protobuf-c rejects: %s", err.msg);
		assert_int_equal(d.n, r.n);
		for (size_t i = 0; i < d.n; i++) {
			/* valid by construction: the decoder does not check it itself */
			assert_int_equal(model_profile_validate(&d.profiles[i], NULL), 0);
			tl_profile_equal(&d.profiles[i], &r.profiles[i]);
		}
		struct fmt_otlp_batch sh;

		assert_int_equal(fmt_otlp_decode_shared(data, n, max_samples, &sh, &err), 0);
		assert_int_equal(sh.n, d.n);
		assert_int_equal(sh.shared_dict, (sh.n > 1));
		for (size_t i = 0; i < sh.n; i++) {
			assert_int_equal(model_profile_validate(&sh.profiles[i], NULL), 0);
			assert_true(model_profile_same_dict(&sh.profiles[i], &sh.profiles[0]));
			same_content(&d.profiles[i], &sh.profiles[i]);
		}
		pending_agrees(data, n, max_samples, &d, &sh);
		fmt_otlp_batch_release(&sh);
	} else {
		assert_int_equal(d.n, 0);
	}
	fmt_otlp_batch_release(&d);
	fmt_otlp_batch_release(&r);
	return rd == 0;
}

/* Cheap deterministic mutations of @in; returns how many the direct path took. */
static size_t mutate(const struct buf *in, unsigned rounds, uint64_t seed)
{
	struct buf m = BUF_INIT;
	size_t took = 0;
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	buf_init(&m, 0);
	for (unsigned r = 0; r < rounds && in->len; r++) {
		size_t at;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		at = (size_t)(s % in->len);
		buf_reset(&m);
		buf_add(&m, in->p, in->len);
		switch (r % 4) {
		case 0:
			m.p[at] ^= (char)(1u << ((s >> 32) % 8));
			break;
		case 1:
			m.len = at;
			break;
		case 2:
			m.p[at] = (char)(s >> 40);
			break;
		default:
			m.len = at;
			buf_add(&m, "\x08\x01\x12\x00\x1a\x01", (s >> 20) % 6 + 1);
			buf_add(&m, in->p + at, in->len - at);
		}
		took += differential(m.p ? m.p : "", m.len, 1u << 20);
	}
	buf_release(&m);
	return took;
}

/* ---- the corpus ---------------------------------------------------------------- */

static void test_corpus_agrees(void **state)
{
	const char *dir = getenv("PROFD_CORPUS") ? getenv("PROFD_CORPUS") : "../shared/corpus";
	static const char *const folders[] = { "pprof",	     "pprof-legacy", "otlp",
					       "collapsed",  "perf-script",  "speedscope",
					       "cpuprofile", "jfr" };
	size_t files = 0, took = 0;

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
			struct buf data, enc = BUF_INIT;
			struct model_profile p;
			const struct model_profile *pp = &p;
			struct prof_err err;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", dir, folders[f], de->d_name);
			buf_init(&data, 16u << 20); /* the big JFR recordings add nothing */
			if (buf_read_file(&data, path)) {
				buf_release(&data);
				continue;
			}
			model_profile_init(&p);
			prof_err_init(&err);
			if (fmt_decode_any(data.p ? data.p : "", data.len, de->d_name, NULL, &p,
					   &err) == 0 &&
			    fmt_otlp_encode(&pp, 1, &enc) == 0) {
				files++;
				if (differential(enc.p, enc.len, 0))
					took++;
				else
					print_message("direct decoder fell back on %s\n", path);
				mutate(&enc, strcmp(folders[f], "jfr") ? 200 : 20, files);
			}
			model_profile_release(&p);
			buf_release(&enc);
			buf_release(&data);
		}
		closedir(d);
	}
	if (!files) {
		print_message("skip: no corpus at %s (set PROFD_CORPUS)\n", dir);
		return;
	}
	print_message("corpus: %zu files re-encoded as OTLP, direct decoder took %zu\n", files,
		      took);
	assert_int_equal(took, files); /* our own encoder's output never needs the fallback */
}

/* ---- hand-made requests ---------------------------------------------------------- */

static void pv(struct buf *b, uint64_t v)
{
	do {
		unsigned char c = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));

		buf_add(b, &c, 1);
		v >>= 7;
	} while (v);
}
static void tag(struct buf *b, unsigned num, unsigned wt)
{
	pv(b, (uint64_t)num << 3 | wt);
}
static void fv(struct buf *b, unsigned num, uint64_t v)
{
	tag(b, num, 0);
	pv(b, v);
}
static void fbytes(struct buf *b, unsigned num, const void *p, size_t n)
{
	tag(b, num, 2);
	pv(b, n);
	buf_add(b, p, n);
}
static void fstr(struct buf *b, unsigned num, const char *s)
{
	fbytes(b, num, s, strlen(s));
}
static void fmsg(struct buf *b, unsigned num, struct buf *m)
{
	fbytes(b, num, m->p ? m->p : "", m->len);
	buf_reset(m);
}
static void f64(struct buf *b, unsigned num, uint64_t v)
{
	tag(b, num, 1);
	for (int i = 0; i < 8; i++) {
		unsigned char c = (unsigned char)(v >> (8 * i));

		buf_add(b, &c, 1);
	}
}

/*
 * A request shaped like the OTel eBPF profiler's and the spec's example:
 * resource attributes with key_strindex and string_value_strindex, sample
 * attributes through the table, a link, a location with two lines and a
 * frame type, a mapping with a build ID, values and timestamps side by
 * side, repeated fields packed and unpacked, unknown fields. @variant
 * changes one detail (see the cases); from BAD_FIRST on, each makes one
 * error protobuf-c's path reports (bad_requests lists them).
 */
enum {
	BAD_FIRST = 5,
	BAD_STACK_INDEX = BAD_FIRST,
	BAD_FUNCTION_INDEX,
	BAD_MAPPING_INDEX,
	BAD_NAME_STRINDEX,
	BAD_SAMPLE_ATTR,
	BAD_TRACE_ID,
	BAD_VALUES_TIMESTAMPS,
	BAD_LINK_INDEX,
	BAD_LOCATION_INDEX,
	BAD_VALUE_STRINDEX,
	BAD_LOCATION_ATTR,
	BAD_ARRAY_STRINDEX,
	BAD_PROFILE_ATTR,
	BAD_SAMPLE_TYPE,
	BAD_LAST = BAD_SAMPLE_TYPE
};

/* @good, or @bad in variant @v */
#define V(v, good, bad) (variant == (v) ? (bad) : (good))

static void build_request(struct buf *out, int variant)
{
	static const char *const strs[] = {
		"",
		"cpu",
		"nanoseconds",
		"service.name",
		"checkout",
		"main",
		"work",
		"a.go",
		"/bin/app",
		"abc123",
		"profile.frame.type",
		"native",
		"process.executable.build_id.gnu",
		"thread.name",
		"worker-1",
		"samples",
		"count",
		"host.name",
		"pprof.mapping.has_functions",
		"pprof.profile.comment",
		"tags",
	};
	struct buf dict = BUF_INIT, m = BUF_INIT, s = BUF_INIT, a = BUF_INIT, rp = BUF_INIT,
		   sp = BUF_INIT, pr = BUF_INIT, v = BUF_INIT;

	buf_init(&dict, 0);
	buf_init(&m, 0);
	buf_init(&s, 0);
	buf_init(&a, 0);
	buf_init(&rp, 0);
	buf_init(&sp, 0);
	buf_init(&pr, 0);
	buf_init(&v, 0);
	buf_reset(out);
	/* mapping_table: zero, then /bin/app with build ID (attr 2) and has_functions (attr 4) */
	fmsg(&dict, 1, &m);
	fv(&m, 1, 0x400000);
	fv(&m, 2, 0x500000);
	fv(&m, 4, 8);
	tag(&m, 5, 2);
	pv(&m, 2);
	pv(&m, 2);
	pv(&m, 4);
	fmsg(&dict, 1, &m);
	/* location_table: zero; 1 = main+work inlined, frame type; 2 = address only */
	fmsg(&dict, 2, &m);
	fv(&m, 1, V(BAD_MAPPING_INDEX, 1, 5));
	fv(&m, 2, 0x401234);
	fv(&s, 1, 2);
	fv(&s, 2, 42);
	fmsg(&m, 3, &s);
	fv(&s, 1, V(BAD_FUNCTION_INDEX, 1, 9));
	fv(&s, 2, 7);
	fv(&s, 3, 3);
	fmsg(&m, 3, &s);
	fv(&m, 4, 1);
	if (variant == BAD_LOCATION_ATTR)
		fv(&m, 4, 50);
	fmsg(&dict, 2, &m);
	fv(&m, 1, 1);
	fv(&m, 2, 0x401300);
	if (variant == 3)
		fv(&m, 2, 0x401301); /* a scalar sent twice: the last wins */
	fmsg(&dict, 2, &m);
	/* function_table */
	fmsg(&dict, 3, &m);
	fv(&m, 1, V(BAD_NAME_STRINDEX, 5, 99));
	fv(&m, 3, 7);
	fv(&m, 4, 10);
	fmsg(&dict, 3, &m);
	fv(&m, 1, 6);
	fv(&m, 2, 6);
	fmsg(&dict, 3, &m);
	/* link_table: zero (all-zero ids, as writers should), one link */
	fbytes(&m, 1, "\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 16);
	fbytes(&m, 2, "\0\0\0\0\0\0\0\0", 8);
	fmsg(&dict, 4, &m);
	fbytes(&m, 1, "0123456789abcdef", V(BAD_TRACE_ID, 16, 15));
	fbytes(&m, 2, "01234567", 8);
	fmsg(&dict, 4, &m);
	/* string_table */
	for (size_t i = 0; i < PROF_ARRAY_SIZE(strs); i++)
		fstr(&dict, 5, strs[i]);
	if (variant == 4)
		fbytes(&dict, 5, "with\0nul", 8);
	/* attribute_table: 0 zero, 1 frame type, 2 build id, 3 thread.name, 4 has_functions, 5 double, 6 bytes */
	fmsg(&dict, 6, &m);
	fv(&m, 1, 10);
	fv(&v, 8, 11);
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	fv(&m, 1, 12);
	fstr(&v, 1, "abc123");
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	fv(&m, 1, 13);
	fv(&v, 8, 14);
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	fv(&m, 1, 18);
	fv(&v, 2, 1);
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	fv(&m, 1, 17);
	f64(&v, 4, 0x3ff8000000000000ull); /* 1.5 */
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	fv(&m, 1, 17);
	fbytes(&v, 7, "\x01\xab", 2);
	fv(&m, 3, 16);
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	/* 7: comments [string, int]; 8: tags [bool, double, strindex, bytes, empty] */
	fv(&m, 1, 19);
	fstr(&s, 1, "first comment");
	fmsg(&a, 1, &s);
	fv(&s, 3, 5);
	fmsg(&a, 1, &s);
	fmsg(&v, 5, &a);
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	fv(&m, 1, 20);
	fv(&s, 2, 1);
	fmsg(&a, 1, &s);
	f64(&s, 4, 0x3ff8000000000000ull);
	fmsg(&a, 1, &s);
	fv(&s, 8, V(BAD_ARRAY_STRINDEX, 4, 77));
	fmsg(&a, 1, &s);
	fbytes(&s, 7, "\x00\xff", 2);
	fmsg(&a, 1, &s);
	fmsg(&a, 1, &s);
	fmsg(&v, 5, &a);
	fmsg(&m, 2, &v);
	fmsg(&dict, 6, &m);
	/* stack_table: zero, [1, 2] packed, [2] unpacked */
	fmsg(&dict, 7, &m);
	tag(&m, 1, 2);
	pv(&m, 2);
	pv(&m, 1);
	pv(&m, V(BAD_LOCATION_INDEX, 2, 3));
	fmsg(&dict, 7, &m);
	fv(&m, 1, 2);
	fmsg(&dict, 7, &m);
	if (variant == 1)
		fstr(&dict, 99, "an unknown field"); /* kept by protobuf-c, ignored */

	/* resource: service.name by key_strindex + string_value_strindex; host.name plain */
	fv(&a, 3, 3);
	fv(&v, 8, V(BAD_VALUE_STRINDEX, 4, -1));
	fmsg(&a, 2, &v);
	fmsg(&s, 1, &a);
	if (variant == 4)
		fbytes(&a, 1, "host.na\0me", 10); /* protobuf-c's C string ends at the NUL */
	else
		fstr(&a, 1, "host.name");
	fstr(&v, 1, "box-1");
	fmsg(&a, 2, &v);
	fmsg(&s, 1, &a);
	fmsg(&rp, 1, &s);
	/* scope with a name and one attribute */
	fstr(&s, 1, "profd-test");
	fstr(&a, 1, "scope.attr");
	fv(&v, 3, 77);
	fmsg(&a, 2, &v);
	fmsg(&s, 3, &a);
	fmsg(&sp, 1, &s);
	/* profile: cpu/nanoseconds, period, time, attributes 5 and 6 */
	fv(&s, 1, 1);
	fv(&s, 2, V(BAD_SAMPLE_TYPE, 2, 21));
	fmsg(&pr, 1, &s);
	f64(&pr, 3, 1700000000000000000ull);
	fv(&pr, 4, 10000000000ull);
	fv(&s, 1, 1);
	fv(&s, 2, 2);
	fmsg(&pr, 5, &s);
	fv(&pr, 6, 10000000);
	fv(&pr, 11, V(BAD_PROFILE_ATTR, 5, 9));
	/* sample 1: stack 1, attr 3, link 1, values [10 20] packed, timestamps [t t+1] packed */
	fv(&s, 1, 1);
	fv(&s, 2, V(BAD_SAMPLE_ATTR, 3, 9));
	fv(&s, 3, V(BAD_LINK_INDEX, 1, 2));
	tag(&s, 4, 2);
	pv(&s, V(BAD_VALUES_TIMESTAMPS, 2, 3));
	pv(&s, 10);
	pv(&s, 20);
	if (variant == BAD_VALUES_TIMESTAMPS)
		pv(&s, 30);
	tag(&s, 5, 2);
	pv(&s, 16);
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < 8; i++) {
			unsigned char c = (unsigned char)((1700000000000000001ull + k) >> (8 * i));

			buf_add(&s, &c, 1);
		}
	fmsg(&pr, 2, &s);
	/* sample 2: stack 2, one value unpacked, then profile attribute 6 unpacked after it */
	fv(&s, 1, V(BAD_STACK_INDEX, 2, 7));
	fv(&s, 4, 5);
	fv(&s, 2, 8);
	fmsg(&pr, 2, &s);
	fv(&pr, 11, 6);
	fv(&pr, 11, 7);
	if (variant == 2) {
		/* timestamps only: each counts 1 */
		fv(&s, 1, 1);
		f64(&s, 5, 1700000000000000005ull);
		f64(&s, 5, 1700000000000000006ull);
		fmsg(&pr, 2, &s);
	}
	fmsg(&sp, 2, &pr);
	fmsg(&rp, 2, &sp);
	fmsg(out, 1, &rp);
	fmsg(out, 2, &dict);
	buf_release(&dict);
	buf_release(&m);
	buf_release(&s);
	buf_release(&a);
	buf_release(&rp);
	buf_release(&sp);
	buf_release(&pr);
	buf_release(&v);
}

static void test_handmade_agrees(void **state)
{
	struct buf req = BUF_INIT;
	struct fmt_otlp_batch b;
	size_t took = 0;

	(void)state;
	buf_init(&req, 0);
	for (int variant = 0; variant <= 4; variant++) {
		build_request(&req, variant);
		assert_true(differential(req.p, req.len, 0));
		took += mutate(&req, 3000, (uint64_t)variant + 100);
	}
	/* The mutations both break and keep requests valid: the direct path took some. */
	assert_true(took > 0);

	/* The values landed where they should (checked on the direct path's output). */
	build_request(&req, 2);
	assert_int_equal(fmt_otlp_decode_direct(req.p, req.len, 0, &b), 0);
	assert_int_equal(b.n, 1);
	{
		const struct model_profile *p = &b.profiles[0];
		int64_t total = 0;

		assert_int_equal(p->samples.n, 5); /* 2 + 1 + 2 timestamps */
		for (size_t i = 0; i < p->values.n; i++)
			total += p->values.v[i];
		assert_int_equal(total, 10 + 20 + 5 + 1 + 1);
		assert_string_equal(model_attr_get(p, "service.name"), "checkout");
		assert_string_equal(model_attr_get(p, "host.name"), "box-1");
		assert_int_equal(p->links.n, 2);
		assert_memory_equal(p->links.v[1].trace_id, "0123456789abcdef", 16);
		assert_int_equal(p->samples.v[0].nlabels, 1);
		assert_string_equal(model_str(p, p->labels.v[p->samples.v[0].label_off].str),
				    "worker-1");
		assert_int_equal(p->mappings.n, 2);
		assert_string_equal(model_str(p, p->mappings.v[1].build_id), "abc123");
		assert_true(p->mappings.v[1].has_functions);
		assert_int_equal(p->comments.n, 2);
		assert_string_equal(model_str(p, p->comments.v[0]), "first comment");
		assert_string_equal(model_str(p, p->labels.v[p->samples.v[2].label_off].str),
				    "[true,1.5,\"checkout\",\"00ff\",null]");
	}
	fmt_otlp_batch_release(&b);

	/* Shapes left to protobuf-c: fall back, and fmt_otlp_decode still answers. */
	{
		struct buf bad = BUF_INIT, v = BUF_INIT, a = BUF_INIT;
		struct prof_err err;

		buf_init(&bad, 0);
		buf_init(&v, 0);
		buf_init(&a, 0);
		/* a dictionary sent twice (protobuf merges: tables concatenate) */
		build_request(&req, 0);
		buf_add(&bad, req.p, req.len);
		fstr(&v, 5, "");
		fmsg(&bad, 2, &v);
		assert_int_equal(fmt_otlp_decode_direct(bad.p, bad.len, 0, &b), FMT_OTLP_FALLBACK);
		prof_err_init(&err);
		assert_int_equal(fmt_otlp_decode(bad.p, bad.len, 0, &b, &err), 0);
		fmt_otlp_batch_release(&b);
		/* an index out of range: the direct decoder words it as protobuf-c */
		buf_reset(&bad);
		fv(&v, 1, 9);
		fmsg(&a, 2, &v);
		fmsg(&v, 2, &a);
		fmsg(&a, 2, &v);
		fmsg(&bad, 1, &a);
		fstr(&v, 5, "");
		fv(&a, 1, 1);
		fmsg(&v, 7, &a);
		fmsg(&bad, 2, &v);
		assert_int_equal(fmt_otlp_decode_direct(bad.p, bad.len, 0, &b), FMT_OTLP_FALLBACK);
		prof_err_init(&err);
		assert_int_equal(fmt_otlp_decode_direct_err(bad.p, bad.len, 0, &b, &err),
				 -PROF_ECORRUPT);
		assert_string_equal(
			err.msg, "otlp: profile 0 sample 0: stack_index 9 out of range (1 stacks)");
		assert_false(differential(bad.p, bad.len, 0));
		prof_err_init(&err);
		assert_int_equal(fmt_otlp_decode(bad.p, bad.len, 0, &b, &err), -PROF_ECORRUPT);
		assert_non_null(strstr(err.msg, "stack_index 9 out of range"));
		buf_release(&bad);
		buf_release(&v);
		buf_release(&a);
	}
	buf_release(&req);
}

/*
 * Requests that parse but do not convert: the direct decoder rejects each
 * itself (no protobuf-c unpacking) with protobuf-c's code and words, as do
 * the store's decoders; so it does on their mutations and when the
 * sample limit is what the request passes.
 */
static void test_errors_agree(void **state)
{
	static const struct {
		int variant;
		int code;
		const char *msg;
	} bad[] = {
		{ BAD_STACK_INDEX, -PROF_ECORRUPT,
		  "otlp: profile 0 sample 1: stack_index 7 out of range (3 stacks)" },
		{ BAD_FUNCTION_INDEX, -PROF_ECORRUPT,
		  "otlp: location_table[1].lines[1].function_index 9 out of range (3 functions)" },
		{ BAD_MAPPING_INDEX, -PROF_ECORRUPT,
		  "otlp: location_table[1].mapping_index 5 out of range (2 mappings)" },
		{ BAD_NAME_STRINDEX, -PROF_ECORRUPT,
		  "otlp: function_table[1].name_strindex 99 out of range (21 strings)" },
		{ BAD_SAMPLE_ATTR, -PROF_ECORRUPT,
		  "otlp: profile 0 sample 0: attribute_indices[0] = 9 out of range (9 "
		  "attributes)" },
		{ BAD_TRACE_ID, -PROF_ECORRUPT,
		  "otlp: link_table[1].trace_id has 15 bytes (16 expected)" },
		{ BAD_VALUES_TIMESTAMPS, -PROF_ECORRUPT,
		  "otlp: profile 0 sample 0: 3 values but 2 timestamps (must be equal when both "
		  "are present)" },
		{ BAD_LINK_INDEX, -PROF_ECORRUPT,
		  "otlp: profile 0 sample 0: link_index 2 out of range (2 links)" },
		{ BAD_LOCATION_INDEX, -PROF_ECORRUPT,
		  "otlp: stack_table[1].location_indices[1] = 3 out of range (3 locations; 0 is "
		  "the null location)" },
		{ BAD_VALUE_STRINDEX, -PROF_ECORRUPT,
		  "otlp: resource.attributes[0].value.string_value_strindex -1 out of range (21 "
		  "strings)" },
		{ BAD_LOCATION_ATTR, -PROF_ECORRUPT,
		  "otlp: location_table[1].attribute_indices[1] = 50 out of range (9 attributes)" },
		{ BAD_ARRAY_STRINDEX, -PROF_ECORRUPT,
		  "otlp: attribute value: string_value_strindex 77 out of range (21 strings)" },
		{ BAD_PROFILE_ATTR, -PROF_ECORRUPT,
		  "otlp: profile 0: attribute_indices[0] = 9 out of range (9 attributes)" },
		{ BAD_SAMPLE_TYPE, -PROF_ECORRUPT,
		  "otlp: profile 0: sample_type.unit_strindex 21 out of range (21 strings)" },
	};
	struct buf req = BUF_INIT;
	struct fmt_otlp_batch b;
	struct prof_err err;
	size_t before;

	(void)state;
	buf_init(&req, 0);
	PROF_ASSERT(PROF_ARRAY_SIZE(bad) == BAD_LAST - BAD_FIRST + 1);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++) {
		build_request(&req, bad[i].variant);
		prof_err_init(&err);
		assert_int_equal(fmt_otlp_decode_direct_err(req.p, req.len, 0, &b, &err),
				 bad[i].code);
		assert_string_equal(err.msg, bad[i].msg);
		assert_int_equal(b.n, 0);
		before = direct_errors;
		assert_false(differential(req.p, req.len, 0));
		assert_int_equal(direct_errors, before + 1);
		mutate(&req, 500, (uint64_t)bad[i].variant);
	}
	/* the sample limit: 5 model samples, 4 allowed */
	build_request(&req, 2);
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode_direct_err(req.p, req.len, 4, &b, &err), -PROF_ETOOBIG);
	assert_string_equal(err.msg, "otlp: more than 4 samples (profile 0 sample 2)");
	assert_false(differential(req.p, req.len, 4));
	assert_true(differential(req.p, req.len, 5));
	print_message("direct decoder's own errors so far: %zu\n", direct_errors);
	buf_release(&req);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handmade_agrees),
		cmocka_unit_test(test_errors_agree),
		cmocka_unit_test(test_corpus_agrees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
