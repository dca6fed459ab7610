// SPDX-License-Identifier: Apache-2.0
/*
 * test_config.c - the server's YAML config (datasets, tokens, rules,
 * limits) and the token check: a full file loads with every field; each
 * kind of mistake is refused naming the line and key; secrets compare in
 * constant time; authorization picks the dataset and answers 401, 403
 * and 404 as tenant.h says.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "server/config.h"
#include "server/tenant.h"

#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static char *write_tmp(const char *text)
{
	char *path = xstrdup("/tmp/profd-test-config.XXXXXX");
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

static int load(const char *text, struct server_conf *c, struct prof_err *err)
{
	char *path = write_tmp(text);
	int rc;

	prof_err_init(err);
	rc = server_conf_load(path, c, err);
	unlink(path);
	free(path);
	return rc;
}

static const char full[] = "default_dataset: prod\n"
			   "datasets:\n"
			   "  - name: prod\n"
			   "    retention: 30d\n"
			   "    head_max_bytes: 64MiB\n"
			   "    block_duration: 30m\n"
			   "    rules:\n"
			   "      - action: drop\n"
			   "        type: 'memory:*'\n"
			   "        selector: '{service_name=\"noisy\"}'\n"
			   "      - action: keep\n"
			   "        fraction: 0.25\n"
			   "      - action: drop_below\n"
			   "        value: 1000\n"
			   "  - name: staging\n"
			   "tokens:\n"
			   "  - name: agents\n"
			   "    secret: agents-secret-0123456789\n"
			   "    permissions: [ingest]\n"
			   "    datasets: [prod]\n"
			   "  - name: reader\n"
			   "    secret: reader-secret-0123456789\n"
			   "    permissions: [query, ingest]\n"
			   "    datasets: ['*']\n"
			   "    default_dataset: staging\n"
			   "limits:\n"
			   "  max_body: 8MiB\n"
			   "  max_ratio: 50\n"
			   "  max_series: 7\n"
			   "  max_active_series: 12345\n"
			   "  max_inflight: 3\n"
			   "  retry_after: 5s\n";

static void test_config_full_file_loads_every_field(void **state)
{
	struct server_conf c;
	struct prof_err err;

	(void)state;
	assert_int_equal(load(full, &c, &err), 0);
	assert_true(c.from_file);
	assert_string_equal(c.default_dataset, "prod");
	assert_int_equal(c.ndatasets, 2);
	assert_string_equal(c.datasets[0].name, "prod");
	assert_int_equal(c.datasets[0].retention_ns, 30LL * 86400 * 1000000000LL);
	assert_int_equal(c.datasets[0].head_max_bytes, 64ULL << 20);
	assert_int_equal(c.datasets[0].block_duration_ns, 1800LL * 1000000000LL);
	assert_int_equal(c.datasets[1].head_max_bytes, 0);
	assert_int_equal(c.datasets[1].block_duration_ns, 0);
	assert_int_equal(c.datasets[0].nrules, 3);
	assert_int_equal(c.datasets[0].rules[0].action, SERVER_RULE_DROP);
	assert_string_equal(c.datasets[0].rules[0].type, "memory:*");
	assert_int_equal(c.datasets[0].rules[0].sel.n, 1);
	/* service_name in a selector is service.name, the canonical key (store/matcher.h) */
	assert_string_equal(c.datasets[0].rules[0].sel.m[0].name, "service.name");
	assert_int_equal(c.datasets[0].rules[1].action, SERVER_RULE_KEEP);
	assert_float_equal(c.datasets[0].rules[1].fraction, 0.25, 0);
	assert_int_equal(c.datasets[0].rules[2].min_value, 1000);
	assert_int_equal(c.datasets[1].nrules, 0);
	assert_int_equal(c.ntokens, 2);
	assert_string_equal(c.tokens[0].name, "agents");
	assert_int_equal(c.tokens[0].perms, SERVER_PERM_INGEST);
	assert_int_equal(c.tokens[1].perms, SERVER_PERM_INGEST | SERVER_PERM_QUERY);
	assert_string_equal(c.tokens[1].datasets[0], "*");
	assert_int_equal(c.limits.max_body, 8 << 20);
	assert_int_equal(c.limits.max_ratio, 50);
	assert_int_equal(c.limits.max_series, 7);
	assert_int_equal(c.limits.max_active_series, 12345);
	assert_int_equal(c.limits.retry_after_s, 5);
	server_limits_fill_defaults(&c.limits, 1 << 20);
	assert_int_equal(c.limits.max_body, 8 << 20);	      /* kept */
	assert_int_equal(c.limits.max_decompressed, 8 << 20); /* = max_body */
	assert_int_equal(c.limits.max_labels, SERVER_DEFAULT_MAX_LABELS);
	server_conf_release(&c);
}

static void test_config_mistakes_name_line_and_key(void **state)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{ "datasets: [ {name: a} ]\nbogus: 1\n", ":2: top level: unknown key 'bogus'" },
		{ "datasets:\n  - name: Bad/Name\n", "is not a dataset name" },
		{ "datasets:\n  - name: a\n  - name: a\n", "listed twice" },
		{ "datasets:\n  - name: a\n    head_max_bytes: 1KiB\n",
		  ":3: datasets[].head_max_bytes: at least 1MiB" },
		{ "datasets:\n  - name: a\n    block_duration: 10s\n",
		  "datasets[].block_duration: expected a duration from 1m to 7d" },
		{ "datasets:\n  - name: a\n    rules:\n      - action: keep\n",
		  "action keep needs 'fraction'" },
		{ "datasets:\n  - name: a\n    rules:\n      - action: keep\n        fraction: 2\n",
		  "expected a number 0..1" },
		{ "datasets:\n  - name: a\n    rules:\n      - action: nuke\n",
		  "expected drop, keep or drop_below" },
		{ "datasets:\n  - name: a\n    rules:\n      - action: drop\n        selector: "
		  "'{a=~\"(\"}'\n",
		  "rules.selector" },
		{ "datasets: [{name: a}]\ntokens:\n  - name: t\n    secret: s3cret-s3cret-s3cret\n"
		  "    permissions: [admin]\n    datasets: [a]\n",
		  "unknown permission 'admin'" },
		{ "datasets: [{name: a}]\ntokens:\n  - name: t\n    secret: s3cret-s3cret-s3cret\n"
		  "    permissions: [query]\n    datasets: [b]\n",
		  "names dataset 'b', which is not in datasets" },
		{ "datasets: [{name: a}]\ntokens:\n  - name: t\n    secret_env: PROFD_NO_SUCH_VAR_X\n"
		  "    permissions: [query]\n    datasets: [a]\n",
		  "PROFD_NO_SUCH_VAR_X is not set" },
		{ "datasets: [{name: a}]\ntokens:\n  - name: t\n    permissions: [query]\n"
		  "    datasets: [a]\n",
		  "exactly one of secret" },
		{ "datasets: [{name: a}]\ntokens:\n  - {name: t, secret: same-same-same-same, "
		  "permissions: [query], datasets: [a]}\n  - {name: u, secret: same-same-same-same, "
		  "permissions: [query], datasets: [a]}\n",
		  "have the same secret" },
		{ "datasets: [{name: a}]\nlimits:\n  max_body: lots\n", "limits.max_body" },
		{ "datasets: [{name: a}\n", "YAML" },
		{ "tokens: []\n", "missing: list at least one dataset" },
	};

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cases); i++) {
		struct server_conf c;
		struct prof_err err;
		int rc = load(cases[i].text, &c, &err);

		if (rc != -EINVAL || !strstr(err.msg, cases[i].want))
			fail_msg("case %zu: rc %d, message '%s', wanted '%s'", i, rc, err.msg,
				 cases[i].want);
		server_conf_release(&c);
	}
}

static void test_secret_compare_is_exact(void **state)
{
	(void)state;
	assert_true(server_secret_eq("abc", 3, "abc", 3));
	assert_false(server_secret_eq("abd", 3, "abc", 3));
	assert_false(server_secret_eq("ab", 2, "abc", 3));
	assert_false(server_secret_eq("abcd", 4, "abc", 3));
	assert_false(server_secret_eq("", 0, "abc", 3));
	assert_false(server_secret_eq("abcabc", 6, "abc", 3));
}

static void test_authorize_picks_dataset_and_refuses(void **state)
{
	struct server_conf c;
	struct server_tenants t = { 0 };
	struct server_dataset ds[2] = { 0 };
	struct server_auth a;
	struct prof_err err;

	(void)state;
	assert_int_equal(load(full, &c, &err), 0);
	/* Tenants without stores: authorization only looks at names. */
	t.conf = &c;
	t.ds = ds;
	t.n = 2;
	ds[0].name = "prod";
	ds[1].name = "staging";

	server_authorize(&t, NULL, NULL, SERVER_PERM_INGEST, &a);
	assert_int_equal(a.status, 401);
	server_authorize(&t, "Bearer wrong-secret", NULL, SERVER_PERM_INGEST, &a);
	assert_int_equal(a.status, 401);
	assert_null(strstr(a.msg, "wrong-secret"));
	/* agents: only dataset prod, only ingest. */
	server_authorize(&t, "Bearer agents-secret-0123456789", NULL, SERVER_PERM_INGEST, &a);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.ds->name, "prod");
	assert_string_equal(a.token, "agents");
	server_authorize(&t, "bearer  agents-secret-0123456789", "staging", SERVER_PERM_INGEST, &a);
	assert_int_equal(a.status, 403);
	server_authorize(&t, "Bearer agents-secret-0123456789", NULL, SERVER_PERM_QUERY, &a);
	assert_int_equal(a.status, 403);
	assert_non_null(strstr(a.msg, "may not query"));
	/* An unknown dataset for a token that lists names: 403, not 404. */
	server_authorize(&t, "Bearer agents-secret-0123456789", "ghost", SERVER_PERM_INGEST, &a);
	assert_int_equal(a.status, 403);
	/* reader: every dataset, default staging; unknown one is 404. */
	server_authorize(&t, "Bearer reader-secret-0123456789", NULL, SERVER_PERM_QUERY, &a);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.ds->name, "staging");
	server_authorize(&t, "Bearer reader-secret-0123456789", "prod", SERVER_PERM_QUERY, &a);
	assert_string_equal(a.ds->name, "prod");
	server_authorize(&t, "Bearer reader-secret-0123456789", "ghost", SERVER_PERM_QUERY, &a);
	assert_int_equal(a.status, 404);
	/* Basic auth: the password is the secret (Pyroscope SDKs). echo -n
	 * 'user:reader-secret-0123456789' | base64 */
	server_authorize(&t, "Basic dXNlcjpyZWFkZXItc2VjcmV0LTAxMjM0NTY3ODk=", NULL,
			 SERVER_PERM_QUERY, &a);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.token, "reader");
	assert_true(server_may(&t, "Bearer reader-secret-0123456789", &ds[0], SERVER_PERM_QUERY));
	assert_false(server_may(&t, "Bearer agents-secret-0123456789", &ds[1], SERVER_PERM_INGEST));
	server_conf_release(&c);
}

static void test_default_conf_is_open_default_dataset(void **state)
{
	struct server_conf c;
	struct server_tenants t = { 0 };
	struct server_dataset ds = { 0 };
	struct server_auth a;

	(void)state;
	server_conf_default(&c);
	assert_false(c.from_file);
	assert_int_equal(c.ndatasets, 1);
	assert_string_equal(c.datasets[0].name, "default");
	t.conf = &c;
	t.ds = &ds;
	t.n = 1;
	ds.name = "default";
	server_authorize(&t, NULL, NULL, SERVER_PERM_QUERY, &a);
	assert_int_equal(a.status, 0);
	assert_string_equal(a.token, "-");
	server_authorize(&t, "Bearer anything", "other", SERVER_PERM_QUERY, &a);
	assert_int_equal(a.status, 404);
	server_authorize(&t, NULL, "../etc", SERVER_PERM_QUERY, &a);
	assert_int_equal(a.status, 400);
	server_conf_release(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_config_full_file_loads_every_field),
		cmocka_unit_test(test_config_mistakes_name_line_and_key),
		cmocka_unit_test(test_secret_compare_is_exact),
		cmocka_unit_test(test_authorize_picks_dataset_and_refuses),
		cmocka_unit_test(test_default_conf_is_open_default_dataset),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
