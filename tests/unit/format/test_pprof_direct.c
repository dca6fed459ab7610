// SPDX-License-Identifier: Apache-2.0
/*
 * test_pprof_direct.c - the pprof decoder's direct unpack (pw_unpack in
 * src/format/pprof.c) against the protobuf-c path (fmt_pprof_decode_pbc):
 * on every input, fmt_pprof_decode and fmt_pprof_decode_pbc must give the
 * same code, message and error offset and, when they succeed, the same
 * model profile (strings by id, mappings, functions, locations, lines,
 * samples with their stacks, values, labels and timestamps, comments,
 * the skipped record). Inputs: every pprof file of the shared corpus
 * ($PROFD_CORPUS, else ../shared/corpus) and every other corpus file
 * decoded and written as pprof by fmt_pprof_encode; hand-made profiles
 * for the edge cases (several sample types, numeric labels with units,
 * locations without lines and with a mapping only, a missing location,
 * zero values, sparse ids, packed and unpacked repeated fields mixed,
 * doc_url, an unknown field, period_type twice, id 0, a mapping_id that
 * names nothing); and mutations of them all (bit flips, truncations,
 * overwritten and inserted bytes). The direct unpack must take the
 * corpus and our encoder's output (fmt_pprof_direct_shape), or the test
 * would pass without testing it.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/mem.h"
#include "format/detect.h"
#include "format/pprof.h"
#include "model/profile.h"
#include "pbwrite.h"
#include "unit/testlib.h"

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static size_t agreed_ok, agreed_err;

/*
 * Both decoders on @n bytes at @data: the same answer. Returns the code
 * (0 when both decoded it).
 */
static int differential(const void *data, size_t n)
{
	struct model_profile a, b;
	struct prof_err ea, eb;
	int ra, rb;

	model_profile_init(&a);
	model_profile_init(&b);
	prof_err_init(&ea);
	prof_err_init(&eb);
	ra = fmt_pprof_decode(data, n, 64u << 20, &a, &ea);
	rb = fmt_pprof_decode_pbc(data, n, 64u << 20, &b, &eb);
	if (ra != rb || strcmp(ea.msg, eb.msg))
		print_message("direct: %d '%s', protobuf-c: %d '%s'\n", ra, ea.msg, rb, eb.msg);
	assert_int_equal(ra, rb);
	assert_string_equal(ea.msg, eb.msg);
	assert_int_equal(ea.offset, eb.offset);
	if (ra == 0) {
		tl_profile_equal(&a, &b);
		agreed_ok++;
	} else {
		agreed_err++;
	}
	model_profile_release(&a);
	model_profile_release(&b);
	return ra;
}

/* @rounds mutations of @in (xorshift from @seed), each through differential. */
static void mutate(const struct buf *in, unsigned rounds, uint64_t seed)
{
	struct buf m = BUF_INIT;
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

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
		(void)differential(m.p ? m.p : "", m.len);
	}
	buf_release(&m);
}

/* ---- hand-made profiles ----------------------------------------------------------- */

/* Profile.string_table entries "", then @strs. */
static void strings(struct buf *b, const char *const *strs, size_t n)
{
	fbytes(b, 6, "", 0);
	for (size_t i = 0; i < n; i++)
		fbytes(b, 6, strs[i], strlen(strs[i]));
}

static const char *const S[] = { "cpu",	  "nanoseconds", "samples",  "count", "main",
				 "foo",	  "a.go",	 "/bin/app", "bid0",  "thread",
				 "bytes", "w1",		 "alloc",    "doc" };
/* string indexes of S (1-based: 0 is "") */
enum {
	S_CPU = 1,
	S_NS,
	S_SAMPLES,
	S_COUNT,
	S_MAIN,
	S_FOO,
	S_FILE,
	S_BIN,
	S_BID,
	S_THREAD,
	S_BYTES,
	S_W1,
	S_ALLOC,
	S_DOC
};

static void value_type(struct buf *b, unsigned num, uint64_t type, uint64_t unit)
{
	struct buf m = BUF_INIT;

	fv(&m, 1, type);
	fv(&m, 2, unit);
	fmsg(b, num, &m);
	buf_release(&m);
}

/*
 * The base profile, in the shapes named by @shape bits:
 *   1  location ids packed in one sample, unpacked in the next, mixed in a third
 *   2  sparse ids (addresses) for mappings, functions, locations
 *   4  an unknown field 99 in the profile (protobuf-c path only)
 *   8  period_type twice (merged by protobuf-c: its path only)
 *  16  a sample naming location 777, which does not exist
 *  32  a location with mapping_id 4242, which names nothing
 *  64  a function with the reserved id 0
 */
static void handmade(struct buf *b, unsigned shape)
{
	struct buf m = BUF_INIT, l = BUF_INIT, x = BUF_INIT;
	uint64_t mid = shape & 2 ? 0x400000 : 1, f1 = shape & 2 ? 0x1000 : 1,
		 f2 = shape & 2 ? 0x2000 : 2;
	uint64_t loc[4] = { 1, 2, 3, 4 };

	if (shape & 2)
		for (int i = 0; i < 4; i++)
			loc[i] = 0x401000 + 16 * (uint64_t)i;
	buf_reset(b);
	value_type(b, 1, S_SAMPLES, S_COUNT);
	value_type(b, 1, S_CPU, S_NS);
	value_type(b, 1, S_ALLOC, S_BYTES);
	/* sample 1: packed ids, three values (one zero), a string and a numeric label */
	{
		struct buf pk = BUF_INIT;

		pv(&pk, loc[0]);
		pv(&pk, loc[1]);
		fmsg(&m, 1, &pk);
		pv(&pk, 1);
		pv(&pk, 0);
		pv(&pk, 4096);
		fmsg(&m, 2, &pk);
		buf_release(&pk);
	}
	fv(&l, 1, S_THREAD);
	fv(&l, 2, S_W1);
	fmsg(&m, 3, &l);
	fv(&l, 1, S_ALLOC);
	fv(&l, 3, (uint64_t)-5);
	fv(&l, 4, S_BYTES);
	fmsg(&m, 3, &l);
	fmsg(b, 2, &m);
	/* sample 2: unpacked ids, all values zero, a mapping-only frame at the root */
	fv(&m, 1, loc[0]);
	fv(&m, 1, shape & 16 ? 777 : loc[2]);
	fv(&m, 1, loc[3]);
	fv(&m, 2, 0);
	fv(&m, 2, 0);
	fv(&m, 2, 0);
	fmsg(b, 2, &m);
	/* sample 3: mixed; no labels, the empty stack in a fourth sample */
	if (shape & 1) {
		struct buf pk = BUF_INIT;

		fv(&m, 1, loc[1]);
		pv(&pk, loc[2]);
		pv(&pk, loc[3]);
		fmsg(&m, 1, &pk);
		buf_release(&pk);
	} else {
		fv(&m, 1, loc[1]);
	}
	fv(&m, 2, 7);
	fv(&m, 2, (uint64_t)-1);
	fv(&m, 2, 1u << 30);
	fmsg(b, 2, &m);
	fv(&m, 2, 2);
	fv(&m, 2, 3);
	fv(&m, 2, 4);
	fmsg(b, 2, &m);
	/* mapping */
	fv(&m, 1, mid);
	fv(&m, 2, 0x400000);
	fv(&m, 3, 0x800000);
	fv(&m, 4, 0x1000);
	fv(&m, 5, S_BIN);
	fv(&m, 6, S_BID);
	fv(&m, 7, 1);
	fv(&m, 9, 1);
	fmsg(b, 3, &m);
	/* locations: leaf with two lines (foo inlined into main), main, an
	 * unsymbolized native frame, a mapping-only frame with no address */
	fv(&m, 1, loc[0]);
	fv(&m, 2, mid);
	fv(&m, 3, 0x401234);
	fv(&x, 1, f2);
	fv(&x, 2, 12);
	fv(&x, 3, 4);
	fmsg(&m, 4, &x);
	fv(&x, 1, f1);
	fv(&x, 2, 30);
	fmsg(&m, 4, &x);
	fmsg(b, 4, &m);
	fv(&m, 1, loc[1]);
	fv(&m, 2, shape & 32 ? 4242 : mid);
	fv(&m, 3, 0x401300);
	fv(&x, 1, f1);
	fv(&x, 2, 31);
	fmsg(&m, 4, &x);
	fv(&m, 5, 1);
	fmsg(b, 4, &m);
	fv(&m, 1, loc[2]);
	fv(&m, 2, mid);
	fv(&m, 3, 0x405000);
	fmsg(b, 4, &m);
	fv(&m, 1, loc[3]);
	fv(&m, 2, mid);
	fmsg(b, 4, &m);
	/* functions */
	fv(&m, 1, f1);
	fv(&m, 2, S_MAIN);
	fv(&m, 3, S_MAIN);
	fv(&m, 4, S_FILE);
	fv(&m, 5, 10);
	fmsg(b, 5, &m);
	fv(&m, 1, f2);
	fv(&m, 2, S_FOO);
	fv(&m, 4, S_FILE);
	fmsg(b, 5, &m);
	if (shape & 64) {
		fv(&m, 1, 0);
		fv(&m, 2, S_FOO);
		fmsg(b, 5, &m);
	}
	strings(b, S, PROF_ARRAY_SIZE(S));
	fv(b, 9, 1700000000000000000ull);
	fv(b, 10, 10000000000ull);
	value_type(b, 11, S_CPU, S_NS);
	if (shape & 8)
		value_type(b, 11, S_SAMPLES, S_COUNT);
	fv(b, 12, 10000000);
	fv(b, 13, S_DOC);
	fv(b, 13, S_FOO);
	fv(b, 14, S_CPU);
	fv(b, 15, S_DOC);
	if (shape & 4)
		fv(b, 99, 5);
	buf_release(&m);
	buf_release(&l);
	buf_release(&x);
}

static void test_handmade_agrees(void **state)
{
	struct buf b = BUF_INIT, gz = BUF_INIT;

	(void)state;
	for (unsigned shape = 0; shape < 128; shape++) {
		int want = shape & 16 ? -PROF_ECORRUPT : 0;

		handmade(&b, shape);
		assert_int_equal(differential(b.p, b.len), want);
		/* the direct unpack takes every shape but the unknown field and merging */
		assert_int_equal(fmt_pprof_direct_shape(b.p, b.len), !(shape & (4 | 8)));
		buf_reset(&gz);
		assert_int_equal(gzip_deflate(b.p, b.len, &gz), 0);
		assert_int_equal(differential(gz.p, gz.len), want);
		mutate(&b, 400, shape + 1);
	}
	/* what the base profile decodes to: several types, labels, zero values */
	{
		struct model_profile p;
		struct prof_err err;

		handmade(&b, 3);
		model_profile_init(&p);
		prof_err_init(&err);
		assert_int_equal(fmt_pprof_decode(b.p, b.len, 0, &p, &err), 0);
		assert_int_equal(p.sample_types.n, 3);
		assert_int_equal(p.samples.n, 4);
		assert_int_equal(p.samples.v[0].nstack, 2);
		assert_int_equal(p.samples.v[1].nstack, 3);
		assert_int_equal(p.samples.v[2].nstack, 3);
		assert_int_equal(p.samples.v[3].nstack, 0);
		assert_int_equal(p.values.v[p.samples.v[0].value_off + 2], 4096);
		assert_int_equal(p.values.v[p.samples.v[2].value_off + 1], -1);
		assert_int_equal(p.samples.v[0].nlabels, 2);
		assert_int_equal(p.labels.v[p.samples.v[0].label_off + 1].num, -5);
		assert_string_equal(
			model_str(&p, p.labels.v[p.samples.v[0].label_off + 1].num_unit), "bytes");
		assert_int_equal(p.locations.v[4].nlines, 0);
		assert_int_equal(p.locations.v[2].is_folded, 1);
		assert_int_equal(p.time_ns, 1700000000000000000ll);
		assert_int_equal(p.comments.n, 2);
		model_profile_release(&p);
	}
	print_message("hand-made: %zu inputs decoded alike, %zu refused alike\n", agreed_ok,
		      agreed_err);
	buf_release(&b);
	buf_release(&gz);
}

/* ---- the corpus ---------------------------------------------------------------- */

static void test_corpus_agrees(void **state)
{
	const char *dir = getenv("PROFD_CORPUS") ? getenv("PROFD_CORPUS") : "../shared/corpus";
	static const char *const folders[] = { "pprof",	     "pprof-legacy", "otlp",
					       "collapsed",  "perf-script",  "speedscope",
					       "cpuprofile", "jfr" };
	size_t files = 0, direct = 0, pprofs = 0;

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
			struct buf data, raw = BUF_INIT, enc = BUF_INIT;
			struct model_profile p;
			struct prof_err err;

			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", dir, folders[f], de->d_name);
			buf_init(&data, 16u << 20);
			if (buf_read_file(&data, path)) {
				buf_release(&data);
				continue;
			}
			if (!strcmp(folders[f], "pprof")) {
				/* the file as it is, then its raw bytes mutated */
				pprofs++;
				(void)differential(data.p ? data.p : "", data.len);
				prof_err_init(&err);
				if (gzip_is(data.p, data.len) &&
				    gzip_inflate(data.p, data.len, 64u << 20, &raw, &err) == 0) {
					direct += fmt_pprof_direct_shape(raw.p, raw.len);
					mutate(&raw, 200, pprofs);
				} else {
					direct += fmt_pprof_direct_shape(data.p, data.len);
					mutate(&data, 200, pprofs);
				}
			}
			model_profile_init(&p);
			prof_err_init(&err);
			if (fmt_decode_any(data.p ? data.p : "", data.len, de->d_name, NULL, &p,
					   &err) == 0 &&
			    fmt_pprof_encode(&p, false, &enc) == 0) {
				files++;
				assert_int_equal(differential(enc.p, enc.len), 0);
				/* our own encoder's output never needs protobuf-c */
				assert_true(fmt_pprof_direct_shape(enc.p, enc.len));
				mutate(&enc, strcmp(folders[f], "jfr") ? 100 : 10, files);
			}
			model_profile_release(&p);
			buf_release(&enc);
			buf_release(&raw);
			buf_release(&data);
		}
		closedir(d);
	}
	if (!files) {
		print_message("skip: no corpus at %s (set PROFD_CORPUS)\n", dir);
		return;
	}
	print_message("corpus: %zu pprof files (%zu read directly), %zu files re-encoded as "
		      "pprof; %zu inputs decoded alike, %zu refused alike\n",
		      pprofs, direct, files, agreed_ok, agreed_err);
	assert_true(direct >= pprofs / 2);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_handmade_agrees),
		cmocka_unit_test(test_corpus_agrees),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
