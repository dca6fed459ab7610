// SPDX-License-Identifier: Apache-2.0
/*
 * test_rules.c - signal control, usage metering and multipart parsing:
 *   - drop by type pattern and selector removes exactly the matching
 *     columns; a profile left with none is empty;
 *   - keep fraction is deterministic per series and keeps about the
 *     fraction of many series;
 *   - drop_below zeroes small values and removes samples left empty;
 *   - series labels sort by key, first value of a repeated key wins;
 *   - usage counts per hour and type survive a flush and reopen, and a
 *     broken file is set aside, not fatal;
 *   - multipart: fields, quoted boundary, preamble, a truncated upload
 *     is an error, the part cap holds.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "model/profile.h"
#include "server/multipart.h"
#include "server/rules.h"
#include "server/usage.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

/* A profile with columns (alloc_space bytes, inuse_space bytes) and @n samples. */
static void mk_profile(struct model_profile *p, const char *service, size_t n,
		       const int64_t *vals /* 2 per sample */)
{
	struct model_line ln = { 0 };
	struct model_function f = { 0 };
	uint32_t loc, st;

	model_profile_init(p);
	model_sample_type_add(p, "alloc_space", "bytes");
	model_sample_type_add(p, "inuse_space", "bytes");
	p->period_type.type = model_intern(p, "space");
	p->period_type.unit = model_intern(p, "bytes");
	f.name = model_intern(p, "main");
	ln.function = model_function_add(p, &f);
	loc = model_location_add(p, 0, 0, &ln, 1);
	st = model_stack_add(p, &loc, 1);
	for (size_t i = 0; i < n; i++)
		model_sample_add(p, st, 1, &vals[2 * i], NULL, 0, 0, 0);
	model_attr_add_str(p, "service_name", service);
	model_attr_add_num(p, "pid", 42);
}

static char **types_of(const struct model_profile *p)
{
	char **t = xcalloc(p->sample_types.n + 1, sizeof(*t));
	char b[256];

	for (size_t k = 0; k < p->sample_types.n; k++) {
		model_profile_type_id(p, (uint32_t)k, b, sizeof(b));
		t[k] = xstrdup(b);
	}
	return t;
}

static void free_types(char **t)
{
	for (size_t k = 0; t[k]; k++)
		free(t[k]);
	free(t);
}

static void rule(struct server_rule *r, enum server_rule_action a, const char *type,
		 const char *sel)
{
	struct prof_err err;

	memset(r, 0, sizeof(*r));
	r->action = a;
	r->type = type ? xstrdup(type) : NULL;
	prof_err_init(&err);
	assert_int_equal(query_selector_parse(sel ? sel : "", &r->sel, &err), 0);
}

static void rule_release(struct server_rule *r)
{
	free(r->type);
	query_selector_release(&r->sel);
}

static void test_rules_drop_by_type_and_selector(void **state)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const int64_t v[] = { 10, 1, 20, 2, 30, 3 };
	struct server_rule r;
	struct model_profile p;
	struct prof_err err;
	bool changed;
	char **t;

	(void)state;
	rule(&r, SERVER_RULE_DROP, "memory:alloc_*", "{service_name=~\"no.*\"}");
	/* Matching service: the alloc column goes, inuse stays. */
	mk_profile(&p, "noisy", 3, v);
	t = types_of(&p);
	server_rules_apply(&r, 1, &lock, &p, t, &changed);
	free_types(t);
	assert_true(changed);
	assert_int_equal(p.sample_types.n, 1);
	assert_string_equal(model_str(&p, p.sample_types.v[0].type), "inuse_space");
	assert_int_equal(p.samples.n, 3);
	assert_int_equal(p.values.v[p.samples.v[2].value_off], 3);
	prof_err_init(&err);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	model_profile_release(&p);
	/* Another service: untouched. */
	mk_profile(&p, "quiet", 3, v);
	t = types_of(&p);
	server_rules_apply(&r, 1, &lock, &p, t, &changed);
	free_types(t);
	assert_false(changed);
	assert_int_equal(p.sample_types.n, 2);
	model_profile_release(&p);
	rule_release(&r);
	/* A rule without type and selector drops everything: the profile is empty. */
	rule(&r, SERVER_RULE_DROP, NULL, NULL);
	mk_profile(&p, "any", 3, v);
	t = types_of(&p);
	server_rules_apply(&r, 1, &lock, &p, t, &changed);
	free_types(t);
	assert_true(changed);
	assert_int_equal(p.sample_types.n, 0);
	assert_int_equal(p.samples.n, 0);
	model_profile_release(&p);
	rule_release(&r);
}

static void test_rules_keep_fraction_is_deterministic(void **state)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const int64_t v[] = { 10, 1 };
	struct server_rule r;
	int kept = 0, again = 0;

	(void)state;
	rule(&r, SERVER_RULE_KEEP, "memory:inuse_space:*", NULL);
	r.fraction = 0.25;
	for (int pass = 0; pass < 2; pass++)
		for (int i = 0; i < 2000; i++) {
			struct model_profile p;
			char name[32], **t;
			bool changed;

			snprintf(name, sizeof(name), "svc-%d", i);
			mk_profile(&p, name, 1, v);
			t = types_of(&p);
			server_rules_apply(&r, 1, &lock, &p, t, &changed);
			free_types(t);
			/* alloc_space never matches the type: always kept. */
			assert_string_equal(model_str(&p, p.sample_types.v[0].type), "alloc_space");
			if (p.sample_types.n == 2)
				*(pass ? &again : &kept) += 1;
			model_profile_release(&p);
		}
	/* The same series are kept on the second pass; about a quarter of 2000. */
	assert_int_equal(kept, again);
	assert_in_range(kept, 400, 600);
	rule_release(&r);
}

static void test_rules_drop_below_removes_small_samples(void **state)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	const int64_t v[] = { 5, 0, 500, 7, 50, 900 };
	struct server_rule r[2];
	struct model_profile p;
	bool changed;
	char **t;

	(void)state;
	rule(&r[0], SERVER_RULE_DROP_BELOW, "memory:alloc_space:*", NULL);
	r[0].min_value = 40;
	rule(&r[1], SERVER_RULE_DROP_BELOW, "memory:alloc_space:*", NULL);
	r[1].min_value = 100; /* the largest threshold wins */
	mk_profile(&p, "svc", 3, v);
	t = types_of(&p);
	server_rules_apply(r, 2, &lock, &p, t, &changed);
	free_types(t);
	assert_true(changed);
	/* Sample 0 (5, 0) is gone; (500, 7) stays; (50, 900) keeps only inuse. */
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.values.v[p.samples.v[0].value_off], 500);
	assert_int_equal(p.values.v[p.samples.v[0].value_off + 1], 7);
	assert_int_equal(p.values.v[p.samples.v[1].value_off], 0);
	assert_int_equal(p.values.v[p.samples.v[1].value_off + 1], 900);
	model_profile_release(&p);
	rule_release(&r[0]);
	rule_release(&r[1]);
}

static void test_profile_labels_sorted_first_wins(void **state)
{
	struct model_profile p;
	struct server_label *l;
	size_t n;

	(void)state;
	model_profile_init(&p);
	model_attr_add_str(&p, "zeta", "1");
	model_attr_add_str(&p, "alpha", "first");
	model_attr_add_num(&p, "num", -12);
	model_attr_add_str(&p, "alpha", "second");
	n = server_profile_labels(&p, &l);
	assert_int_equal(n, 3);
	assert_string_equal(l[0].key, "alpha");
	assert_string_equal(l[0].val, "first");
	assert_string_equal(l[1].key, "num");
	assert_string_equal(l[1].val, "-12");
	assert_string_equal(l[2].key, "zeta");
	assert_int_not_equal(server_series_hash("t", l, n), server_series_hash("u", l, n));
	free(l);
	model_profile_release(&p);
}

static void test_usage_persists_per_hour_and_type(void **state)
{
	char path[] = "/tmp/profd-test-usage.XXXXXX";
	struct server_usage *u;
	struct prof_err err;
	struct buf b;
	uint64_t tot[3];
	int fd = mkstemp(path);
	/* An hour boundary a day ago (older hours than a year are forgotten). */
	int64_t h0 = (prof_now_ns() / 1000000 / 3600000 - 24) * 3600000;
	char want[64];
	time_t h0s;
	struct tm tm;

	(void)state;
	assert_true(fd >= 0);
	close(fd);
	unlink(path);
	prof_err_init(&err);
	assert_int_equal(server_usage_open(path, "prod", &u, &err), 0);
	server_usage_add(u, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", h0 + 5, 10, 8, 2);
	server_usage_add(u, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", h0 + 3599999, 5, 5, 0);
	server_usage_add(u, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", h0 + 3600000, 1, 1, 0);
	server_usage_add(u, "memory:alloc_space:bytes:space:bytes", h0, 7, 0, 7);
	assert_int_equal(server_usage_flush(u), 0);
	server_usage_close(u);

	assert_int_equal(server_usage_open(path, "prod", &u, &err), 0);
	buf_init(&b, 0);
	assert_int_equal(server_usage_json(u, h0, h0 + 10, &b, tot), 0);
	/* Only the first hour: two types, sums 22 / 13 / 9. */
	assert_int_equal(tot[0], 22);
	assert_int_equal(tot[1], 13);
	assert_int_equal(tot[2], 9);
	h0s = (time_t)(h0 / 1000);
	gmtime_r(&h0s, &tm);
	strftime(want, sizeof(want), "\"time\":\"%Y-%m-%dT%H:00:00Z\"", &tm);
	assert_non_null(strstr(b.p, want));
	assert_non_null(strstr(b.p, "\"received\":15,\"accepted\":13,\"dropped\":2"));
	buf_reset(&b);
	assert_int_equal(server_usage_json(u, h0, h0 + 2 * 3600000, &b, tot), 0);
	assert_int_equal(tot[0], 23);
	buf_release(&b);
	server_usage_close(u);

	/* A broken file is moved aside; counting starts afresh. */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "{nope", 5), 5);
	close(fd);
	assert_int_equal(server_usage_open(path, "prod", &u, &err), 0);
	buf_init(&b, 0);
	assert_int_equal(server_usage_json(u, 0, INT64_MAX / 2, &b, tot), 0);
	assert_int_equal(tot[0], 0);
	buf_release(&b);
	server_usage_close(u);
	unlink(path);
	char cmd[256];
	snprintf(cmd, sizeof(cmd), "rm -f %s.bad-*", path);
	assert_int_equal(system(cmd), 0);
}

static void test_multipart_fields_and_errors(void **state)
{
	static const char body[] = "preamble\r\n"
				   "--XyZ\r\n"
				   "Content-Disposition: form-data; name=\"profile\"; "
				   "filename=\"profile.pprof\"\r\n"
				   "Content-Type: application/octet-stream\r\n"
				   "\r\n"
				   "BIN\0ARY\r\n"
				   "--XyZ\r\n"
				   "Content-Disposition: form-data; name=sample_type_config\r\n"
				   "\r\n"
				   "{}\r\n"
				   "--XyZ--\r\n";
	struct server_part parts[4];
	const struct server_part *pt;
	struct prof_err err;
	char bd[80];
	size_t n;

	(void)state;
	assert_int_equal(
		server_multipart_boundary("multipart/form-data; boundary=\"XyZ\"", bd, sizeof(bd)),
		0);
	assert_string_equal(bd, "XyZ");
	assert_int_equal(server_multipart_boundary("application/json; boundary=x", bd, sizeof(bd)),
			 -EINVAL);
	assert_int_equal(server_multipart_boundary("multipart/form-data", bd, sizeof(bd)), -EINVAL);
	prof_err_init(&err);
	assert_int_equal(server_multipart_parse("XyZ", body, sizeof(body) - 1, parts, 4, &n, &err),
			 0);
	assert_int_equal(n, 2);
	pt = server_multipart_find(parts, n, "profile");
	assert_non_null(pt);
	assert_string_equal(pt->filename, "profile.pprof");
	assert_string_equal(pt->ctype, "application/octet-stream");
	assert_int_equal(pt->len, 7);
	assert_memory_equal(pt->data, "BIN\0ARY", 7);
	pt = server_multipart_find(parts, n, "sample_type_config");
	assert_non_null(pt);
	assert_int_equal(pt->len, 2);
	assert_null(server_multipart_find(parts, n, "jfr"));
	/* Truncated: the last part never closes. */
	prof_err_init(&err);
	assert_int_equal(server_multipart_parse("XyZ", body, sizeof(body) - 11, parts, 4, &n, &err),
			 -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "truncated"));
	/* Wrong boundary. */
	prof_err_init(&err);
	assert_int_equal(
		server_multipart_parse("Other", body, sizeof(body) - 1, parts, 4, &n, &err),
		-PROF_ECORRUPT);
	/* Part cap. */
	prof_err_init(&err);
	assert_int_equal(server_multipart_parse("XyZ", body, sizeof(body) - 1, parts, 1, &n, &err),
			 -PROF_ETOOBIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rules_drop_by_type_and_selector),
		cmocka_unit_test(test_rules_keep_fraction_is_deterministic),
		cmocka_unit_test(test_rules_drop_below_removes_small_samples),
		cmocka_unit_test(test_profile_labels_sorted_first_wins),
		cmocka_unit_test(test_usage_persists_per_hour_and_type),
		cmocka_unit_test(test_multipart_fields_and_errors),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
