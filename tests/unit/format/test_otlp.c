// SPDX-License-Identifier: Apache-2.0
/*
 * test_otlp.c - OTLP profiles decoder and encoder (src/format/otlp.c) and
 * the merge back into one profile (src/model/merge.c): a model profile
 * with everything OTLP can carry goes through encode -> decode -> merge
 * unchanged; handmade requests with each kind of bad index get the exact
 * error; nesting and allocation bombs are refused.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "format/pprof.h"
#include "model/merge.h"
#include "model/profile.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

#include <setjmp.h>
#include <cmocka.h>

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	OtRequest;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary OtDict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles OtResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles OtScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile OtProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample OtSample;
typedef Opentelemetry__Proto__Profiles__V1development__Stack OtStack;
typedef Opentelemetry__Proto__Profiles__V1development__Location OtLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line OtLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function OtFunction;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping OtMapping;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit OtAttr;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType OtValueType;
typedef Opentelemetry__Proto__Common__V1__AnyValue OtAnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue OtKeyValue;
typedef Opentelemetry__Proto__Resource__V1__Resource OtResource;

/*
 * A CPU-like profile as the agent makes it: two sample types, one sample
 * per observation with a timestamp (two share a stack), a label, a link,
 * a mapping with a build ID, a kernel frame type, resource attributes.
 */
static void build_model(struct model_profile *p)
{
	struct model_mapping m = { 0 };
	struct model_function f = { 0 };
	struct model_line ln[2] = { { 0 } };
	struct model_label lab = { 0 };
	struct model_link link;
	uint32_t locs[2], off;
	int64_t v[2];

	model_profile_init(p);
	model_sample_type_add(p, "samples", "count");
	model_sample_type_add(p, "cpu", "nanoseconds");
	p->period_type.type = model_intern(p, "cpu");
	p->period_type.unit = model_intern(p, "nanoseconds");
	p->period = 52631578;
	p->time_ns = 1700000000000000000;
	p->duration_ns = 10000000000;
	m.memory_start = 0x1000;
	m.memory_limit = 0x9000;
	m.filename = model_intern(p, "/usr/bin/spin");
	m.build_id = model_intern(p, "0123abcd");
	model_mapping_add(p, &m);
	f.name = model_intern(p, "main");
	ln[1].function = model_function_add(p, &f);
	ln[1].line = 12;
	f.name = model_intern(p, "hot");
	ln[0].function = model_function_add(p, &f);
	ln[0].line = 3;
	locs[1] = model_location_add(p, 1, 0x1100, &ln[1], 1);
	locs[0] = model_location_add(p, 1, 0x1200, &ln[0], 1); /* leaf */
	p->locations.v[locs[0]].frame_type = model_intern(p, "native");
	memset(&link, 0, sizeof(link));
	link.trace_id[0] = 0xaa;
	link.span_id[7] = 0xbb;
	VEC_PUSH(&p->links, link);
	lab.key = model_intern(p, "thread.name");
	lab.str = model_intern(p, "worker");
	off = model_stack_add(p, locs, 2);
	for (int i = 0; i < 3; i++) {
		v[0] = 1;
		v[1] = 52631578;
		model_sample_add(p, off, 2, v, &lab, 1, 1700000000000000000 + i * 1000, i == 2);
	}
	v[0] = 2;
	v[1] = 2 * 52631578;
	model_sample_add(p, off + 1, 1, v, NULL, 0, 1700000000500000000, 0);
	model_attr_add_str(p, "process.executable.name", "spin");
	model_attr_add_num(p, "process.pid", 4242);
	assert_int_equal(model_profile_validate(p, NULL), 0);
}

static int64_t total(const struct model_profile *p, size_t t)
{
	int64_t s = 0;

	for (size_t i = 0; i < p->samples.n; i++)
		s += p->values.v[p->samples.v[i].value_off + t];
	return s;
}

static void test_round_trip_keeps_everything(void **state)
{
	struct model_profile p, merged;
	const struct model_profile *one = &p, **in;
	struct fmt_otlp_batch b;
	struct buf out = BUF_INIT;
	struct prof_err err;

	(void)state;
	build_model(&p);
	assert_int_equal(fmt_otlp_encode(&one, 1, &out), 0);
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode(out.p, out.len, 0, &b, &err), 0);
	/* K sample types -> K OTLP Profiles, each with every observation. */
	assert_int_equal(b.n, 2);
	for (size_t k = 0; k < 2; k++) {
		const struct model_profile *q = &b.profiles[k];

		assert_int_equal(q->sample_types.n, 1);
		assert_int_equal(q->samples.n, 4);
		assert_int_equal(total(q, 0), total(&p, k));
		assert_int_equal(q->samples.v[1].timestamp_ns, 1700000000000001000);
		assert_int_equal(q->samples.v[3].timestamp_ns, 1700000000500000000);
		assert_string_equal(model_str(q, q->mappings.v[1].build_id), "0123abcd");
		assert_string_equal(model_str(q, q->locations.v[q->stack_locs.v[0]].frame_type),
				    "native");
		assert_string_equal(model_attr_get(q, "process.executable.name"), "spin");
		assert_int_equal(q->links.n, 2);
		assert_int_equal(q->links.v[1].trace_id[0], 0xaa);
		assert_int_equal(q->links.v[1].span_id[7], 0xbb);
		assert_int_equal(q->samples.v[2].link, 1);
		assert_string_equal(model_str(q, q->labels.v[q->samples.v[0].label_off].str),
				    "worker");
		assert_int_equal(q->period, 52631578);
		assert_int_equal(q->time_ns, p.time_ns);
	}
	/* Merged back: the original samples, columns side by side. */
	in = xcalloc(b.n, sizeof(*in));
	for (size_t k = 0; k < b.n; k++)
		in[k] = &b.profiles[k];
	model_profile_init(&merged);
	assert_int_equal(model_profile_merge(in, b.n, &merged, &err), 0);
	assert_int_equal(merged.sample_types.n, 2);
	assert_int_equal(merged.samples.n, 4);
	assert_int_equal(total(&merged, 0), total(&p, 0));
	assert_int_equal(total(&merged, 1), total(&p, 1));
	assert_int_equal(merged.attrs.n, 2);
	for (size_t i = 0; i < 4; i++) {
		assert_int_equal(merged.samples.v[i].timestamp_ns, p.samples.v[i].timestamp_ns);
		assert_int_equal(merged.samples.v[i].nstack, p.samples.v[i].nstack);
		assert_int_equal(merged.samples.v[i].nlabels, p.samples.v[i].nlabels);
	}
	free(in);
	model_profile_release(&merged);
	fmt_otlp_batch_release(&b);
	model_profile_release(&p);
	buf_release(&out);
}

/* Two resources merged: the attrs that differ become sample labels. */
static void test_merge_distinct_resources(void **state)
{
	struct model_profile a, c, merged;
	const struct model_profile *in[2];
	struct fmt_otlp_batch b;
	struct buf out = BUF_INIT;

	(void)state;
	build_model(&a);
	build_model(&c);
	c.attrs.v[1].num = 4343; /* another pid */
	in[0] = &a;
	in[1] = &c;
	assert_int_equal(fmt_otlp_encode(in, 2, &out), 0);
	assert_int_equal(fmt_otlp_decode(out.p, out.len, 0, &b, NULL), 0);
	assert_int_equal(b.n, 4);
	const struct model_profile *all[4] = { &b.profiles[0], &b.profiles[1], &b.profiles[2],
					       &b.profiles[3] };
	model_profile_init(&merged);
	assert_int_equal(model_profile_merge(all, 4, &merged, NULL), 0);
	assert_int_equal(merged.samples.n, 8);
	assert_int_equal(merged.attrs.n, 1); /* process.executable.name */
	assert_int_equal(total(&merged, 1), 2 * total(&a, 1));
	/* the last sample had no labels; now it carries process.pid */
	const struct model_sample *s = &merged.samples.v[7];
	assert_int_equal(s->nlabels, 1);
	assert_string_equal(model_str(&merged, merged.labels.v[s->label_off].key), "process.pid");
	assert_int_equal(merged.labels.v[s->label_off].num, 4343);
	model_profile_release(&merged);
	fmt_otlp_batch_release(&b);
	model_profile_release(&a);
	model_profile_release(&c);
	buf_release(&out);
}

/* ---- handmade requests -------------------------------------------------- */

struct req {
	OtRequest r;
	OtDict d;
	OtResourceProfiles rp, *rpp;
	OtScopeProfiles sp, *spp;
	OtProfile pr, *prp;
	OtValueType st;
	OtSample s, *sp_;
	OtStack stk[2], *stkp[2];
	OtLocation loc[2], *locp[2];
	OtLine ln, *lnp;
	OtFunction fn[2], *fnp[2];
	OtMapping map[2], *mapp[2];
	OtAttr at[2], *atp[2];
	OtAnyValue av[2];
	OtResource res;
	OtKeyValue kv, *kvp;
	OtAnyValue kvv;
	ProtobufCBinaryData str[6];
	int32_t stack_locs[1], attr_idx[1];
	int64_t values[2];
	uint64_t ts[2];
};

static const char *const rstr[] = { "", "cpu", "nanoseconds", "main", "service.name", "api" };

/* A valid request: one profile, one sample (values 5) of stack [main]. */
static void req_init(struct req *q)
{
	memset(q, 0, sizeof(*q));
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__init(
		&q->r);
	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(&q->d);
	for (int i = 0; i < 6; i++) {
		q->str[i].data = (uint8_t *)rstr[i];
		q->str[i].len = strlen(rstr[i]);
	}
	q->d.string_table = q->str;
	q->d.n_string_table = 6;
	for (int i = 0; i < 2; i++) {
		opentelemetry__proto__profiles__v1development__function__init(&q->fn[i]);
		opentelemetry__proto__profiles__v1development__mapping__init(&q->map[i]);
		opentelemetry__proto__profiles__v1development__location__init(&q->loc[i]);
		opentelemetry__proto__profiles__v1development__stack__init(&q->stk[i]);
		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&q->at[i]);
		opentelemetry__proto__common__v1__any_value__init(&q->av[i]);
		q->fnp[i] = &q->fn[i];
		q->mapp[i] = &q->map[i];
		q->locp[i] = &q->loc[i];
		q->stkp[i] = &q->stk[i];
		q->atp[i] = &q->at[i];
	}
	q->fn[1].name_strindex = 3;
	q->map[1].memory_limit = 0x1000;
	opentelemetry__proto__profiles__v1development__line__init(&q->ln);
	q->ln.function_index = 1;
	q->lnp = &q->ln;
	q->loc[1].mapping_index = 1;
	q->loc[1].lines = &q->lnp;
	q->loc[1].n_lines = 1;
	q->stack_locs[0] = 1;
	q->stk[1].location_indices = q->stack_locs;
	q->stk[1].n_location_indices = 1;
	q->at[1].key_strindex = 4;
	q->at[1].value = &q->av[1];
	q->av[1].value_case =
		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
	q->av[1].string_value_strindex = 5;
	q->d.function_table = q->fnp;
	q->d.n_function_table = 2;
	q->d.mapping_table = q->mapp;
	q->d.n_mapping_table = 2;
	q->d.location_table = q->locp;
	q->d.n_location_table = 2;
	q->d.stack_table = q->stkp;
	q->d.n_stack_table = 2;
	q->d.attribute_table = q->atp;
	q->d.n_attribute_table = 2;
	q->r.dictionary = &q->d;

	opentelemetry__proto__profiles__v1development__sample__init(&q->s);
	q->s.stack_index = 1;
	q->values[0] = 5;
	q->s.values = q->values;
	q->s.n_values = 1;
	q->attr_idx[0] = 1;
	q->s.attribute_indices = q->attr_idx;
	q->s.n_attribute_indices = 1;
	q->sp_ = &q->s;
	opentelemetry__proto__profiles__v1development__value_type__init(&q->st);
	q->st.type_strindex = 1;
	q->st.unit_strindex = 2;
	opentelemetry__proto__profiles__v1development__profile__init(&q->pr);
	q->pr.sample_type = &q->st;
	q->pr.samples = &q->sp_;
	q->pr.n_samples = 1;
	q->prp = &q->pr;
	opentelemetry__proto__profiles__v1development__scope_profiles__init(&q->sp);
	q->sp.profiles = &q->prp;
	q->sp.n_profiles = 1;
	q->spp = &q->sp;
	/* Resource attribute by reference: key_strindex + string_value_strindex. */
	opentelemetry__proto__resource__v1__resource__init(&q->res);
	opentelemetry__proto__common__v1__key_value__init(&q->kv);
	opentelemetry__proto__common__v1__any_value__init(&q->kvv);
	q->kv.key_strindex = 4;
	q->kvv.value_case =
		OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX;
	q->kvv.string_value_strindex = 5;
	q->kv.value = &q->kvv;
	q->kvp = &q->kv;
	q->res.attributes = &q->kvp;
	q->res.n_attributes = 1;
	opentelemetry__proto__profiles__v1development__resource_profiles__init(&q->rp);
	q->rp.resource = &q->res;
	q->rp.scope_profiles = &q->spp;
	q->rp.n_scope_profiles = 1;
	q->rpp = &q->rp;
	q->r.resource_profiles = &q->rpp;
	q->r.n_resource_profiles = 1;
}

static void req_pack(const struct req *q, struct buf *out)
{
	size_t n = protobuf_c_message_get_packed_size(&q->r.base);
	uint8_t *b = xmalloc(n + 1);

	protobuf_c_message_pack(&q->r.base, b);
	buf_reset(out);
	assert_int_equal(buf_add(out, b, n), 0);
	free(b);
}

static void expect_error(const struct req *q, size_t max_samples, int code, const char *msg)
{
	struct buf out = BUF_INIT;
	struct fmt_otlp_batch b;
	struct prof_err err;
	int rc;

	req_pack(q, &out);
	prof_err_init(&err);
	rc = fmt_otlp_decode(out.p, out.len, max_samples, &b, &err);
	if (rc != code || strcmp(err.msg, msg))
		fail_msg("rc %d (want %d), message \"%s\"\n           want \"%s\"", rc, code,
			 err.msg, msg);
	assert_int_equal(b.n, 0);
	buf_release(&out);
}

static void test_handmade_valid(void **state)
{
	struct req q;
	struct buf out = BUF_INIT;
	struct fmt_otlp_batch b;
	const struct model_profile *p;

	(void)state;
	req_init(&q);
	q.ts[0] = 11;
	q.ts[1] = 12;
	q.s.timestamps_unix_nano = q.ts;
	q.s.n_timestamps_unix_nano = 2;
	q.s.n_values = 0; /* shape (a): timestamps only, each counts 1 */
	req_pack(&q, &out);
	assert_int_equal(fmt_otlp_decode(out.p, out.len, 0, &b, NULL), 0);
	assert_int_equal(b.n, 1);
	p = &b.profiles[0];
	assert_int_equal(p->samples.n, 2);
	assert_int_equal(p->values.v[0], 1);
	assert_int_equal(p->values.v[1], 1);
	assert_int_equal(p->samples.v[1].timestamp_ns, 12);
	assert_string_equal(model_attr_get(p, "service.name"), "api");
	assert_string_equal(model_str(p, p->labels.v[0].key), "service.name");
	assert_string_equal(model_str(p, p->labels.v[0].str), "api");
	assert_string_equal(model_str(p, p->functions.v[1].name), "main");
	fmt_otlp_batch_release(&b);
	buf_release(&out);
}

static void test_index_out_of_range(void **state)
{
	struct req q;

	(void)state;
	req_init(&q);
	q.s.stack_index = 9;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: profile 0 sample 0: stack_index 9 out of range (2 stacks)");
	req_init(&q);
	q.stack_locs[0] = 2;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: stack_table[1].location_indices[0] = 2 out of range (2 locations; 0 "
		     "is the null location)");
	req_init(&q);
	q.loc[1].mapping_index = -1;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: location_table[1].mapping_index -1 out of range (2 mappings)");
	req_init(&q);
	q.ln.function_index = 2;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: location_table[1].lines[0].function_index 2 out of range (2 "
		     "functions)");
	req_init(&q);
	q.fn[1].name_strindex = 6;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: function_table[1].name_strindex 6 out of range (6 strings)");
	req_init(&q);
	q.attr_idx[0] = 2;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: profile 0 sample 0: attribute_indices[0] = 2 out of range (2 "
		     "attributes)");
	req_init(&q);
	q.av[1].string_value_strindex = 60;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: attribute_table[1].value.string_value_strindex 60 out of range (6 "
		     "strings)");
	req_init(&q);
	q.kv.key_strindex = 7;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: resource.attributes[0].key_strindex 7 out of range (6 strings)");
	req_init(&q);
	q.s.link_index = 1;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: profile 0 sample 0: link_index 1 out of range (0 links)");
	req_init(&q);
	q.st.unit_strindex = 99;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: profile 0: sample_type.unit_strindex 99 out of range (6 strings)");
	req_init(&q);
	q.s.timestamps_unix_nano = q.ts;
	q.s.n_timestamps_unix_nano = 2;
	expect_error(&q, 0, -PROF_ECORRUPT,
		     "otlp: profile 0 sample 0: 1 values but 2 timestamps (must be equal when "
		     "both are present)");
	req_init(&q);
	q.values[1] = 1;
	q.s.n_values = 2;
	expect_error(&q, 1, -PROF_ETOOBIG, "otlp: more than 1 samples (profile 0 sample 0)");
}

static void test_truncated_and_random(void **state)
{
	struct req q;
	struct buf out = BUF_INIT;
	uint64_t x = 88172645463325252ULL;

	(void)state;
	req_init(&q);
	req_pack(&q, &out);
	for (size_t n = 0; n < out.len; n++) {
		struct fmt_otlp_batch b;
		struct prof_err err;

		prof_err_init(&err);
		if (fmt_otlp_decode(out.p, n, 0, &b, &err) == 0) {
			for (size_t i = 0; i < b.n; i++)
				assert_int_equal(model_profile_validate(&b.profiles[i], NULL), 0);
			fmt_otlp_batch_release(&b);
		} else {
			assert_int_not_equal(err.msg[0], '\0');
		}
	}
	for (int round = 0; round < 2000; round++) {
		uint8_t r[300];
		size_t n = 1 + (size_t)(x % sizeof(r));
		struct fmt_otlp_batch b;

		for (size_t i = 0; i < n; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			r[i] = (uint8_t)x;
		}
		if (fmt_otlp_decode(r, n, 0, &b, NULL) == 0)
			fmt_otlp_batch_release(&b);
	}
	buf_release(&out);
}

static void test_nesting_and_amplification_bombs(void **state)
{
	struct buf b = BUF_INIT;
	struct fmt_otlp_batch batch;
	struct prof_err err;
	size_t depth = 200;

	(void)state;
	/*
	 * dictionary { attribute_table { value { array_value { values { array_value
	 * ... } } } } }: built inside out, lengths as one-byte varints where they fit.
	 */
	struct buf inner = BUF_INIT, next = BUF_INIT;

	for (size_t i = 0; i < depth; i++) {
		/* AnyValue{5: ArrayValue{1: <inner AnyValue>}} */
		buf_reset(&next);
		uint8_t hdr[12];
		size_t h = 0, alen = inner.len + 1 + (inner.len < 128 ? 1 : 2);

		hdr[h++] = 0x2a; /* AnyValue.array_value */
		if (alen < 128) {
			hdr[h++] = (uint8_t)alen;
		} else {
			hdr[h++] = (uint8_t)(alen | 0x80);
			hdr[h++] = (uint8_t)(alen >> 7);
		}
		hdr[h++] = 0x0a; /* ArrayValue.values */
		if (inner.len < 128) {
			hdr[h++] = (uint8_t)inner.len;
		} else {
			hdr[h++] = (uint8_t)(inner.len | 0x80);
			hdr[h++] = (uint8_t)(inner.len >> 7);
		}
		buf_add(&next, hdr, h);
		buf_add(&next, inner.p ? inner.p : "", inner.len);
		buf_reset(&inner);
		buf_add(&inner, next.p, next.len);
		if (inner.len > 16000)
			break;
	}
	/* KeyValueAndUnit{2: value}, in ProfilesDictionary{6: ...}, in request{2: ...} */
	uint8_t h1[4] = { 0x12, (uint8_t)(inner.len | 0x80), (uint8_t)(inner.len >> 7), 0 };
	size_t kvlen = 3 + inner.len;
	uint8_t h2[4] = { 0x32, (uint8_t)(kvlen | 0x80), (uint8_t)(kvlen >> 7), 0 };
	size_t dlen = 3 + kvlen;
	uint8_t h3[4] = { 0x12, (uint8_t)(dlen | 0x80), (uint8_t)(dlen >> 7), 0 };

	assert_true(inner.len < 16384 && dlen < 16384);
	buf_add(&b, h3, 3);
	buf_add(&b, h2, 3);
	buf_add(&b, h1, 3);
	buf_add(&b, inner.p, inner.len);
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode(b.p, b.len, 0, &batch, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "nested deeper than 64 levels"));

	/* 100000 empty Sample messages (2 bytes each) in one Profile. */
	buf_reset(&b);
	buf_reset(&inner);
	for (int i = 0; i < 100000; i++)
		buf_add(&inner, "\x12\x00", 2);
	/* request{1: ResourceProfiles{2: ScopeProfiles{2: Profile{...}}}} */
	struct buf tmp = BUF_INIT;
	const uint8_t tags[3] = { 0x12, 0x12, 0x0a };

	for (int level = 0; level < 3; level++) {
		uint8_t hdr[8];
		size_t h = 0, len = inner.len;

		hdr[h++] = tags[level];
		while (len >= 0x80) {
			hdr[h++] = (uint8_t)(len | 0x80);
			len >>= 7;
		}
		hdr[h++] = (uint8_t)len;
		buf_reset(&tmp);
		buf_add(&tmp, hdr, h);
		buf_add(&tmp, inner.p, inner.len);
		buf_reset(&inner);
		buf_add(&inner, tmp.p, tmp.len);
	}
	prof_err_init(&err);
	assert_int_equal(fmt_otlp_decode(inner.p, inner.len, 0, &batch, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "too many tiny messages"));
	buf_release(&tmp);
	buf_release(&inner);
	buf_release(&next);
	buf_release(&b);
}

/* pprof -> model -> OTLP -> model (merged) -> pprof keeps the totals. */
static void test_pprof_otlp_pprof(void **state)
{
	struct model_profile p, merged;
	struct buf pp = BUF_INIT, ot = BUF_INIT;
	struct fmt_otlp_batch b;
	const struct model_profile *one = &p, *in[2];

	(void)state;
	build_model(&p);
	assert_int_equal(fmt_otlp_encode(&one, 1, &ot), 0);
	assert_int_equal(fmt_otlp_decode(ot.p, ot.len, 0, &b, NULL), 0);
	in[0] = &b.profiles[0];
	in[1] = &b.profiles[1];
	model_profile_init(&merged);
	assert_int_equal(model_profile_merge(in, 2, &merged, NULL), 0);
	assert_int_equal(fmt_pprof_encode(&merged, true, &pp), 0);
	model_profile_release(&merged);
	model_profile_init(&merged);
	assert_int_equal(fmt_pprof_decode(pp.p, pp.len, 0, &merged, NULL), 0);
	assert_int_equal(merged.samples.n, p.samples.n);
	assert_int_equal(total(&merged, 0), total(&p, 0));
	assert_int_equal(total(&merged, 1), total(&p, 1));
	model_profile_release(&merged);
	fmt_otlp_batch_release(&b);
	model_profile_release(&p);
	buf_release(&pp);
	buf_release(&ot);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_keeps_everything),
		cmocka_unit_test(test_merge_distinct_resources),
		cmocka_unit_test(test_handmade_valid),
		cmocka_unit_test(test_index_out_of_range),
		cmocka_unit_test(test_truncated_and_random),
		cmocka_unit_test(test_nesting_and_amplification_bombs),
		cmocka_unit_test(test_pprof_otlp_pprof),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
