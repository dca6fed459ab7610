// SPDX-License-Identifier: Apache-2.0
/*
 * test_pprof.c - pprof decoder and encoder (src/format/pprof.c) on
 * handmade inputs: a valid profile and its round trips, then each way an
 * input can be wrong (truncated, random bytes, gzip bomb, references to
 * nothing, string indexes out of range) with the exact error expected.
 * Profiles are written with protobuf-c from our profile.proto, or byte by
 * byte where the bytes themselves must be wrong.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/mem.h"
#include "format/pprof.h"
#include "model/profile.h"
#include "query/top.h"

#include "profile.pb-c.h"

#include <setjmp.h>
#include <cmocka.h>

typedef Perftools__Profiles__Profile PbProfile;

/*
 * A small CPU profile: main -> foo (leaf) 10 times, main -> main -> bar 5
 * times (recursion), one empty-stack sample of 1; location 3 has bar
 * inlined into baz. Ids are addresses (not 1..n) to exercise the id map.
 */
struct fixture {
	PbProfile p;
	Perftools__Profiles__ValueType vt[2], *vtp[2], period;
	Perftools__Profiles__Function fn[4], *fnp[4];
	Perftools__Profiles__Line ln[4], *lnp[4];
	Perftools__Profiles__Location loc[3], *locp[3];
	Perftools__Profiles__Mapping map[1], *mapp[1];
	Perftools__Profiles__Sample s[3], *sp[3];
	Perftools__Profiles__Label lab[1], *labp[1];
	uint64_t ids0[2], ids1[3];
	int64_t v0[2], v1[2], v2[2];
	ProtobufCBinaryData st[12];
};

static const char *const strings[] = { "",	 "samples", "count", "cpu", "nanoseconds",
				       "main",	 "foo",	    "bar",   "baz", "/bin/app",
				       "abc123", "thread" };

static void fixture_init(struct fixture *f)
{
	memset(f, 0, sizeof(*f));
	perftools__profiles__profile__init(&f->p);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(strings); i++) {
		f->st[i].data = (uint8_t *)strings[i];
		f->st[i].len = strlen(strings[i]);
	}
	f->p.string_table = f->st;
	f->p.n_string_table = PROF_ARRAY_SIZE(strings);
	for (int i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&f->vt[i]);
		f->vt[i].type = 1 + 2 * i;
		f->vt[i].unit = 2 + 2 * i;
		f->vtp[i] = &f->vt[i];
	}
	f->p.sample_type = f->vtp;
	f->p.n_sample_type = 2;
	perftools__profiles__value_type__init(&f->period);
	f->period.type = 3;
	f->period.unit = 4;
	f->p.period_type = &f->period;
	f->p.period = 10000000;
	f->p.time_nanos = 1700000000000000000;
	f->p.duration_nanos = 10000000000;

	perftools__profiles__mapping__init(&f->map[0]);
	f->map[0].id = 7;
	f->map[0].memory_start = 0x400000;
	f->map[0].memory_limit = 0x500000;
	f->map[0].filename = 9;
	f->map[0].build_id = 10;
	f->map[0].has_functions = true;
	f->mapp[0] = &f->map[0];
	f->p.mapping = f->mapp;
	f->p.n_mapping = 1;

	for (int i = 0; i < 4; i++) {
		perftools__profiles__function__init(&f->fn[i]);
		f->fn[i].id = 100 + (uint64_t)i;
		f->fn[i].name = 5 + i; /* main foo bar baz */
		f->fnp[i] = &f->fn[i];
		perftools__profiles__line__init(&f->ln[i]);
		f->lnp[i] = &f->ln[i];
	}
	f->p.function = f->fnp;
	f->p.n_function = 4;
	f->ln[0].function_id = 100; /* main */
	f->ln[1].function_id = 101; /* foo */
	f->ln[2].function_id = 102; /* bar, inlined into */
	f->ln[3].function_id = 103; /* baz */
	for (int i = 0; i < 3; i++) {
		perftools__profiles__location__init(&f->loc[i]);
		f->loc[i].id = 0x401000 + 0x10 * (uint64_t)i;
		f->loc[i].mapping_id = 7;
		f->loc[i].address = f->loc[i].id;
		f->locp[i] = &f->loc[i];
	}
	f->loc[0].line = &f->lnp[0];
	f->loc[0].n_line = 1;
	f->loc[1].line = &f->lnp[1];
	f->loc[1].n_line = 1;
	f->loc[2].line = &f->lnp[2]; /* bar, baz */
	f->loc[2].n_line = 2;
	f->p.location = f->locp;
	f->p.n_location = 3;

	f->ids0[0] = 0x401010; /* foo <- main */
	f->ids0[1] = 0x401000;
	f->ids1[0] = 0x401020; /* bar(baz) <- main <- main */
	f->ids1[1] = 0x401000;
	f->ids1[2] = 0x401000;
	f->v0[0] = 10;
	f->v0[1] = 100;
	f->v1[0] = 5;
	f->v1[1] = 50;
	f->v2[0] = 1;
	f->v2[1] = 10;
	for (int i = 0; i < 3; i++) {
		perftools__profiles__sample__init(&f->s[i]);
		f->sp[i] = &f->s[i];
		f->s[i].n_value = 2;
	}
	f->s[0].location_id = f->ids0;
	f->s[0].n_location_id = 2;
	f->s[0].value = f->v0;
	f->s[1].location_id = f->ids1;
	f->s[1].n_location_id = 3;
	f->s[1].value = f->v1;
	f->s[2].value = f->v2; /* empty stack */
	perftools__profiles__label__init(&f->lab[0]);
	f->lab[0].key = 11;
	f->lab[0].str = 6;
	f->labp[0] = &f->lab[0];
	f->s[0].label = f->labp;
	f->s[0].n_label = 1;
	f->p.sample = f->sp;
	f->p.n_sample = 3;
}

static void pack(const PbProfile *p, struct buf *out)
{
	size_t n = perftools__profiles__profile__get_packed_size(p);
	uint8_t *b = xmalloc(n + 1);

	perftools__profiles__profile__pack(p, b);
	buf_reset(out);
	assert_int_equal(buf_add(out, b, n), 0);
	free(b);
}

/* Decodes @data and expects failure @code with @msg (exact) in err.msg. */
static void expect_error(const void *data, size_t n, size_t max, int code, const char *msg)
{
	struct model_profile p;
	struct prof_err err;
	int rc;

	model_profile_init(&p);
	prof_err_init(&err);
	rc = fmt_pprof_decode(data, n, max, &p, &err);
	if (rc != code || (msg && strcmp(err.msg, msg)))
		fail_msg("rc %d (want %d), message \"%s\"\n           want \"%s\"", rc, code,
			 err.msg, msg ? msg : "(any)");
	assert_int_equal(err.code, code);
	assert_int_not_equal(err.msg[0], '\0');
	model_profile_release(&p);
}

/*
 * Decodes @data and expects success with @n entries skipped, the first
 * with reason @first, and the fixture's 3 samples and 16 counts intact.
 */
static void expect_skipped(const void *data, size_t n, uint64_t nskip, const char *first)
{
	struct model_profile p;
	struct prof_err err;
	int64_t total = 0;
	int rc;

	model_profile_init(&p);
	prof_err_init(&err);
	rc = fmt_pprof_decode(data, n, 0, &p, &err);
	if (rc)
		fail_msg("rc %d, message \"%s\"", rc, err.msg);
	assert_int_equal(model_profile_validate(&p, NULL), 0);
	assert_int_equal(p.samples.n, 3);
	for (size_t i = 0; i < p.samples.n; i++)
		total += p.values.v[p.samples.v[i].value_off];
	assert_int_equal(total, 16);
	assert_int_equal(p.skipped.n, nskip);
	assert_string_equal(p.skipped.what, "dictionary entries");
	assert_string_equal(p.skipped.first, first);
	model_profile_release(&p);
}

static void check_fixture_model(const struct model_profile *p)
{
	struct query_top top;
	struct query_top_row *rows;
	size_t n;

	assert_int_equal(model_profile_validate(p, NULL), 0);
	assert_int_equal(p->sample_types.n, 2);
	assert_string_equal(model_str(p, p->sample_types.v[1].type), "cpu");
	assert_int_equal(p->samples.n, 3);
	assert_int_equal(p->locations.n, 4); /* zero entry + 3 */
	assert_int_equal(p->mappings.n, 2);
	assert_string_equal(model_str(p, p->mappings.v[1].build_id), "abc123");
	assert_true(p->mappings.v[1].has_functions);
	assert_int_equal(p->period, 10000000);
	assert_int_equal(p->time_ns, 1700000000000000000);
	assert_int_equal(p->samples.v[0].nlabels, 1);
	assert_string_equal(model_str(p, p->labels.v[p->samples.v[0].label_off].key), "thread");

	/* self = leaf, total once per sample even under recursion, inline expanded. */
	assert_int_equal(query_top_build(p, &top), 0);
	assert_int_equal(top.totals[0], 16);
	assert_int_equal(top.totals[1], 160);
	rows = query_top_rows(&top, 0, false, &n);
	assert_int_equal(n, 4);
	assert_string_equal(top.names.s[rows[0].fn], "foo");
	assert_int_equal(rows[0].self, 10);
	assert_int_equal(rows[0].total, 10);
	assert_string_equal(top.names.s[rows[1].fn], "bar");
	assert_int_equal(rows[1].self, 5);
	assert_int_equal(rows[1].total, 5);
	/* zero self: ordered by name, "baz" < "main" */
	assert_string_equal(top.names.s[rows[2].fn], "baz");
	assert_int_equal(rows[2].self, 0);
	assert_int_equal(rows[2].total, 5);
	assert_string_equal(top.names.s[rows[3].fn], "main");
	assert_int_equal(rows[3].self, 0);
	assert_int_equal(rows[3].total, 15);
	free(rows);
	rows = query_top_rows(&top, 0, true, &n);
	assert_string_equal(top.names.s[rows[0].fn], "main");
	free(rows);
	query_top_release(&top);
}

static void test_decode_valid_raw_and_gzip(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT, gz = BUF_INIT;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	fixture_init(&f);
	pack(&f.p, &raw);
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_pprof_decode(raw.p, raw.len, 0, &p, &err), 0);
	check_fixture_model(&p);
	model_profile_release(&p);

	assert_int_equal(gzip_deflate(raw.p, raw.len, &gz), 0);
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(gz.p, gz.len, 0, &p, &err), 0);
	check_fixture_model(&p);
	model_profile_release(&p);
	buf_release(&raw);
	buf_release(&gz);
}

static void test_encode_decode_round_trip(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT, enc = BUF_INIT, enc2 = BUF_INIT;
	struct model_profile p, q;

	(void)state;
	fixture_init(&f);
	pack(&f.p, &raw);
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(raw.p, raw.len, 0, &p, NULL), 0);
	for (int gzip = 0; gzip < 2; gzip++) {
		buf_reset(&enc);
		assert_int_equal(fmt_pprof_encode(&p, gzip, &enc), 0);
		model_profile_init(&q);
		assert_int_equal(fmt_pprof_decode(enc.p, enc.len, 0, &q, NULL), 0);
		check_fixture_model(&q);
		/* Encoding is deterministic: the re-decoded profile encodes the same. */
		buf_reset(&enc2);
		assert_int_equal(fmt_pprof_encode(&q, gzip, &enc2), 0);
		assert_int_equal(enc.len, enc2.len);
		assert_memory_equal(enc.p, enc2.p, enc.len);
		model_profile_release(&q);
	}
	model_profile_release(&p);
	buf_release(&raw);
	buf_release(&enc);
	buf_release(&enc2);
}

static void test_truncated_input(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT, gz = BUF_INIT;

	(void)state;
	fixture_init(&f);
	pack(&f.p, &raw);
	/* The first field is sample_type[0] = 0a 04 08 01 10 02: cut inside it. */
	assert_int_equal((unsigned char)raw.p[0], 0x0a);
	assert_int_equal(raw.p[1], 4);
	expect_error(raw.p, 4, 0, -PROF_ECORRUPT,
		     "pprof: Profile.sample_type: length 4 runs past the end (2 bytes left) at "
		     "byte 1");
	/* Every prefix fails cleanly or decodes a smaller valid profile. */
	for (size_t n = 1; n < raw.len; n++) {
		struct model_profile p;
		struct prof_err err;

		model_profile_init(&p);
		prof_err_init(&err);
		if (fmt_pprof_decode(raw.p, n, 0, &p, &err) == 0)
			assert_int_equal(model_profile_validate(&p, NULL), 0);
		else {
			assert_int_not_equal(err.msg[0], '\0');
			assert_true(err.code < 0);
		}
		model_profile_release(&p);
	}
	/* Truncated gzip stream. */
	assert_int_equal(gzip_deflate(raw.p, raw.len, &gz), 0);
	expect_error(gz.p, gz.len - 10, 0, -PROF_ECORRUPT, NULL);
	buf_release(&raw);
	buf_release(&gz);
}

static void test_random_bytes(void **state)
{
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	uint8_t b[512];

	(void)state;
	/* xorshift64: the same bytes every run. */
	for (int round = 0; round < 2000; round++) {
		struct model_profile p;
		struct prof_err err;
		size_t n = 1 + (size_t)(x % sizeof(b));

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			b[i] = (uint8_t)x;
		}
		model_profile_init(&p);
		prof_err_init(&err);
		if (fmt_pprof_decode(b, n, 0, &p, &err) == 0)
			assert_int_equal(model_profile_validate(&p, NULL), 0);
		else
			assert_int_not_equal(err.msg[0], '\0');
		model_profile_release(&p);
	}
	/* A fixed one: field 7 (drop_frames) given as a 64-bit value. */
	static const uint8_t bad[] = { 0x39, 1, 2, 3, 4, 5, 6, 7, 8 };
	expect_error(bad, sizeof(bad), 0, -PROF_ECORRUPT,
		     "pprof: Profile.drop_frames: wire type 1, expected 0 at byte 0");
	static const uint8_t group[] = { 0x0b, 0x0c };
	expect_error(group, sizeof(group), 0, -PROF_ECORRUPT,
		     "pprof: Profile.sample_type: unsupported wire type 3 at byte 0");
}

static void test_gzip_bomb_over_the_cap(void **state)
{
	size_t big = 16u << 20;
	char *zeros = xcalloc(big, 1);
	struct buf gz = BUF_INIT;

	(void)state;
	assert_int_equal(gzip_deflate(zeros, big, &gz), 0);
	free(zeros);
	assert_true(gz.len < 64 * 1024); /* ~1000:1 */
	expect_error(gz.p, gz.len, 1u << 20, -PROF_ETOOBIG,
		     "gzip: decompressed size exceeds the limit of 1048576 bytes");
	buf_release(&gz);
}

static void test_missing_references(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT;

	(void)state;
	fixture_init(&f);
	f.ids1[1] = 99;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: sample[1]: location_id[1] = 99 not found (3 locations)");

	/* A line whose function is missing is still a frame: kept unnamed, counted. */
	fixture_init(&f);
	f.ln[3].function_id = 5;
	pack(&f.p, &raw);
	expect_skipped(raw.p, raw.len, 1,
		       "pprof: location[2] (id 4198432) line 1: function_id 5 not found (4 "
		       "functions); the line has no function");

	fixture_init(&f);
	f.ids0[0] = 0;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: sample[0]: location_id[0] = 0 not found (3 locations)");
	buf_release(&raw);
}

static void test_bad_ids_and_values(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT;

	(void)state;
	fixture_init(&f);
	f.loc[2].id = f.loc[0].id;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: location[2]: duplicate id 4198400 (also location[0])");

	/* Function id 0: left out (no line can name it); the line that meant it has none. */
	fixture_init(&f);
	f.fn[1].id = 0;
	pack(&f.p, &raw);
	expect_skipped(raw.p, raw.len, 2,
		       "pprof: function[1] has the reserved id 0, which every reference reads "
		       "as none");

	fixture_init(&f);
	f.s[2].n_value = 1;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: sample[2]: 1 values for 2 sample types");
	buf_release(&raw);
}

/* A build ID that is not hex (a path, say) is dropped at ingest; the rest of the profile reads. */
static void test_bad_build_id_dropped(void **state)
{
	static const char *const bad[] = { "../../../../etc/passwd", "abc", "0123/4567", "zz" };
	struct fixture f;
	struct buf raw = BUF_INIT;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++) {
		fixture_init(&f);
		f.st[10].data = (uint8_t *)bad[i];
		f.st[10].len = strlen(bad[i]);
		pack(&f.p, &raw);
		model_profile_init(&p);
		prof_err_init(&err);
		assert_int_equal(fmt_pprof_decode(raw.p, raw.len, 0, &p, &err), 0);
		assert_int_equal(p.mappings.n, 2);
		assert_int_equal(p.mappings.v[1].build_id, 0);
		assert_string_equal(model_str(&p, p.mappings.v[1].filename), "/bin/app");
		assert_int_equal(p.samples.n, 3);
		model_profile_release(&p);
		buf_release(&raw);
	}
}

static void test_string_index_out_of_range(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT;

	(void)state;
	fixture_init(&f);
	f.fn[2].name = 12;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: function[2].name: string index 12 out of range (12 strings)");

	fixture_init(&f);
	f.lab[0].str = -1;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: sample[0].label[0].str: string index -1 out of range (12 strings)");

	fixture_init(&f);
	f.vt[1].unit = 1000;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: sample_type[1].unit: string index 1000 out of range (12 strings)");

	fixture_init(&f);
	f.st[0].len = 3; /* string_table[0] = "s\n1" */
	f.st[0].data = (uint8_t *)"s\n1";
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: string_table[0] is \"s?1\" (3 bytes); it must be the empty string, "
		     "which every unset string field refers to");
	buf_release(&raw);
}

static void test_empty_and_unpacked(void **state)
{
	/*
	 * sample_type {1, 2}; sample {location_id 1, location_id 1 (unpacked
	 * varints), value [7] (packed)}; location {id 1}; strings "", "n", "u".
	 */
	static const uint8_t prof[] = {
		0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x12, 0x07, 0x08, 0x01, 0x08, 0x01, 0x12, 0x01,
		0x07, 0x22, 0x02, 0x08, 0x01, 0x32, 0x00, 0x32, 0x01, 'n',  0x32, 0x01, 'u',
	};
	struct model_profile p;
	struct prof_err err;

	(void)state;
	expect_error("", 0, 0, -PROF_EFORMAT, "pprof: empty input");
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_pprof_decode(prof, sizeof(prof), 0, &p, &err), 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(p.samples.v[0].nstack, 2);
	assert_int_equal(p.values.v[0], 7);
	assert_string_equal(model_str(&p, p.sample_types.v[0].type), "n");
	model_profile_release(&p);
}

/*
 * docs/formats.md "pprof (profile.proto)": its cases, one test each. The fixture's totals
 * are samples 16, cpu 160 over 3 samples.
 */

static int64_t total(const struct model_profile *p, size_t col)
{
	int64_t t = 0;

	for (size_t i = 0; i < p->samples.n; i++)
		t += p->values.v[p->samples.v[i].value_off + col];
	return t;
}

static bool has_comment(const struct model_profile *p, const char *text)
{
	for (size_t i = 0; i < p->comments.n; i++)
		if (!strcmp(model_str(p, p->comments.v[i]), text))
			return true;
	return false;
}

static void test_edge_id_zero_and_duplicates(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT;

	(void)state;
	/* id 0 is "none" in every reference: an object cannot have it (pprof: reserved). */
	/* An object with id 0 is left out; a sample that needs it has a hole: error. */
	fixture_init(&f);
	f.loc[1].id = 0;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: sample[0]: location_id[0] = 4198416 not found (3 locations; "
		     "location[1] has the reserved id 0)");
	fixture_init(&f);
	f.map[0].id = 0;
	pack(&f.p, &raw);
	expect_skipped(raw.p, raw.len, 1,
		       "pprof: mapping[0] has the reserved id 0, which every reference reads as "
		       "none");
	/* Duplicates: which object a reference means is unknowable (pprof: error). */
	fixture_init(&f);
	f.fn[3].id = f.fn[0].id;
	pack(&f.p, &raw);
	expect_error(raw.p, raw.len, 0, -PROF_ECORRUPT,
		     "pprof: function[3]: duplicate id 100 (also function[0])");
	buf_release(&raw);
}

static void test_edge_missing_ids(void **state)
{
	struct fixture f;
	struct buf raw = BUF_INIT;
	struct model_profile p;

	(void)state;
	/* A mapping_id that names nothing: no mapping, as pprof reads it, and a comment. */
	fixture_init(&f);
	f.loc[1].mapping_id = 8;
	pack(&f.p, &raw);
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(raw.p, raw.len, 0, &p, NULL), 0);
	assert_int_equal(p.locations.v[2].mapping, 0);
	assert_int_equal(p.locations.v[1].mapping, 1);
	assert_true(has_comment(&p, "profd: 1 locations referred to mappings that do not exist "
				    "(first: mapping_id 8); they have no mapping"));
	assert_int_equal(total(&p, 1), 160);
	model_profile_release(&p);
	/* Gaps in ids are fine: any non-zero ids (the fixture's are addresses). */
	fixture_init(&f);
	f.map[0].id = 1u << 20;
	f.loc[0].mapping_id = f.loc[1].mapping_id = f.loc[2].mapping_id = 1u << 20;
	pack(&f.p, &raw);
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(raw.p, raw.len, 0, &p, NULL), 0);
	check_fixture_model(&p);
	model_profile_release(&p);
	/* A missing string table reads as [""]: every string is "". */
	static const uint8_t bare[] = { 0x12, 0x00 }; /* one empty sample, nothing else */
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(bare, sizeof(bare), 0, &p, NULL), 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(p.strings.n, 1);
	model_profile_release(&p);
	buf_release(&raw);
}

/* The top-level fields of @in with field @first moved to the front (the Go runtime's order). */
static void move_field_first(const struct buf *in, unsigned first, struct buf *out)
{
	const uint8_t *b = (const uint8_t *)in->p, *p = b, *e = b + in->len;
	struct buf rest = BUF_INIT;

	buf_reset(out);
	while (p < e) {
		const uint8_t *at = p;
		uint64_t tag = 0, len = 0;

		for (int sh = 0;; sh += 7) {
			tag |= (uint64_t)(*p & 0x7f) << sh;
			if (!(*p++ & 0x80))
				break;
		}
		if ((tag & 7) == 0) {
			while (*p++ & 0x80)
				;
		} else {
			assert_int_equal(tag & 7, 2);
			for (int sh = 0;; sh += 7) {
				len |= (uint64_t)(*p & 0x7f) << sh;
				if (!(*p++ & 0x80))
					break;
			}
			p += len;
		}
		buf_add((tag >> 3) == first ? out : &rest, at, (size_t)(p - at));
	}
	buf_add(out, rest.p, rest.len);
	buf_release(&rest);
}

static void test_edge_concatenated(void **state)
{
	struct fixture f;
	struct buf one = BUF_INIT, two = BUF_INIT, gz = BUF_INIT, rt = BUF_INIT;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	fixture_init(&f);
	pack(&f.p, &one);
	/* cat a.pb a.pb: one message by protobuf's rules, two profiles by intent: merged. */
	buf_add(&two, one.p, one.len);
	buf_add(&two, one.p, one.len);
	model_profile_init(&p);
	prof_err_init(&err);
	assert_int_equal(fmt_pprof_decode(two.p, two.len, 0, &p, &err), 0);
	assert_int_equal(p.samples.n, 6);
	assert_int_equal(p.sample_types.n, 2);
	assert_int_equal(total(&p, 0), 32);
	assert_int_equal(total(&p, 1), 320);
	assert_int_equal(p.time_ns, 1700000000000000000);
	assert_int_equal(p.duration_ns, 10000000000);
	assert_true(has_comment(&p, "profd: 2 concatenated pprof Profile messages, merged"));
	model_profile_release(&p);

	/* Runtime field order (time_nanos first): the second message starts at its time_nanos. */
	move_field_first(&one, 9, &rt);
	buf_reset(&two);
	buf_add(&two, rt.p, rt.len);
	buf_add(&two, rt.p, rt.len);
	buf_add(&two, one.p, one.len);
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(two.p, two.len, 0, &p, NULL), 0);
	assert_int_equal(p.samples.n, 9);
	assert_int_equal(total(&p, 1), 480);
	assert_true(has_comment(&p, "profd: 3 concatenated pprof Profile messages, merged"));
	model_profile_release(&p);

	/* Multi-member gzip of the two: the same (gunzip gives the concatenation). */
	buf_reset(&two);
	assert_int_equal(gzip_deflate(one.p, one.len, &gz), 0);
	assert_int_equal(gzip_deflate(one.p, one.len, &gz), 0);
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(gz.p, gz.len, 0, &p, NULL), 0);
	assert_int_equal(p.samples.n, 6);
	model_profile_release(&p);
	/* Zero padding after the last member is ignored (gzip(1)); anything else is not. */
	buf_add(&gz, "\0\0\0", 3);
	model_profile_init(&p);
	assert_int_equal(fmt_pprof_decode(gz.p, gz.len, 0, &p, NULL), 0);
	model_profile_release(&p);
	{
		size_t at = gz.len;

		buf_add(&gz, "xy", 2);
		char want[160];

		snprintf(want, sizeof(want),
			 "gzip: 5 bytes after the end of the gzip data (at byte %zu) are not "
			 "another gzip member",
			 at - 3);
		expect_error(gz.p, gz.len, 0, -PROF_ECORRUPT, want);
	}

	/* A broken second message: the error names it and where it is. */
	fixture_init(&f);
	f.ids0[0] = 99;
	pack(&f.p, &two);
	buf_reset(&gz);
	buf_add(&gz, one.p, one.len);
	buf_add(&gz, two.p, two.len);
	{
		char want[300];

		snprintf(want, sizeof(want),
			 "pprof: the input is 2 Profile messages back to back; message 2 (bytes "
			 "%zu-%zu): pprof: sample[0]: location_id[0] = 99 not found (3 locations)",
			 one.len, gz.len);
		expect_error(gz.p, gz.len, 0, -PROF_ECORRUPT, want);
	}
	buf_release(&one);
	buf_release(&two);
	buf_release(&gz);
	buf_release(&rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_valid_raw_and_gzip),
		cmocka_unit_test(test_encode_decode_round_trip),
		cmocka_unit_test(test_truncated_input),
		cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_gzip_bomb_over_the_cap),
		cmocka_unit_test(test_missing_references),
		cmocka_unit_test(test_bad_ids_and_values),
		cmocka_unit_test(test_string_index_out_of_range),
		cmocka_unit_test(test_bad_build_id_dropped),
		cmocka_unit_test(test_empty_and_unpacked),
		cmocka_unit_test(test_edge_id_zero_and_duplicates),
		cmocka_unit_test(test_edge_missing_ids),
		cmocka_unit_test(test_edge_concatenated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
