// SPDX-License-Identifier: Apache-2.0
/*
 * test_yaml.c - the configuration walk (base/yaml.h) on small documents:
 * every reader's value and its error text "NAME:LINE: WHAT: reason" with
 * the offending node's 1-based line; scalars with a NUL byte refused;
 * a scalar read as a list of one; list caps; syntax errors with line and
 * column; an empty document (NULL root); release after a failed load.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/yaml.h"

#include <setjmp.h>
#include <cmocka.h>

static const char doc[] = "size: 64MiB\n"	/* line 1 */
			  "every: 10s\n"	/* 2 */
			  "on: yes\n"		/* 3 */
			  "count: 42\n"		/* 4 */
			  "hosts: [a:1, b:2]\n" /* 5 */
			  "one: c:3\n"		/* 6 */
			  "nul: \"x\\0y\"\n"	/* 7 */
			  "map: {k: v}\n"	/* 8 */
			  "bad_size: lots\n"	/* 9 */
			  "bad_bool: maybe\n"	/* 10 */
			  "bad_every: 8d\n"	/* 11 */
			  "bad_count: 43\n";	/* 12 */

/* The value node of key @key in the root mapping, or NULL. */
static yaml_node_t *get(struct ywalk *w, yaml_node_t *root, const char *key)
{
	YWALK_MAP_FOREACH(root, pair)
	{
		const char *k = ywalk_scalar(ywalk_node(w, pair->key));

		if (k && !strcmp(k, key))
			return ywalk_node(w, pair->value);
	}
	return NULL;
}

static void test_ywalk_readers_and_errors(void **state)
{
	struct prof_err err;
	struct ywalk w;
	yaml_node_t *root;
	const char *s;
	size_t sz, n;
	int64_t d;
	uint64_t u;
	bool b = false;
	char **v;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(ywalk_load(&w, doc, strlen(doc), "t.yaml", &err, &root), 0);
	assert_non_null(root);
	assert_int_equal(ywalk_want_type(&w, root, YAML_MAPPING_NODE, "top level"), 0);

	assert_int_equal(ywalk_want_size(&w, get(&w, root, "size"), "size", &sz), 0);
	assert_int_equal(sz, (size_t)64 << 20);
	assert_int_equal(ywalk_want_duration(&w, get(&w, root, "every"), "every", &d), 0);
	assert_int_equal(d, 10 * 1000000000LL);
	assert_int_equal(ywalk_want_bool(&w, get(&w, root, "on"), "on", &b), 0);
	assert_true(b);
	assert_int_equal(ywalk_want_u64(&w, get(&w, root, "count"), "count", 42, &u), 0);
	assert_int_equal(u, 42);
	assert_int_equal(ywalk_want_strings(&w, get(&w, root, "hosts"), "hosts", 2, &v, &n), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0], "a:1");
	assert_string_equal(v[1], "b:2");
	ywalk_strings_free(v, n);
	/* a scalar is a list of one */
	assert_int_equal(ywalk_want_strings(&w, get(&w, root, "one"), "one", 2, &v, &n), 0);
	assert_int_equal(n, 1);
	assert_string_equal(v[0], "c:3");
	ywalk_strings_free(v, n);
	assert_int_equal(err.code, 0);

	/*
	 * errors: the node's line, the key path, what was expected and given;
	 * the first error recorded wins (base/err.h), so each check starts clean
	 */
	prof_err_init(&err);
	assert_int_equal(ywalk_want_strings(&w, get(&w, root, "hosts"), "hosts", 1, &v, &n),
			 -EINVAL);
	assert_string_equal(err.msg, "t.yaml:5: hosts: more than 1 entries");
	ywalk_strings_free(v, n);
	assert_null(ywalk_scalar(get(&w, root, "nul")));
	prof_err_init(&err);
	assert_int_equal(ywalk_want_scalar(&w, get(&w, root, "nul"), "nul", &s), -EINVAL);
	assert_string_equal(err.msg,
			    "t.yaml:7: nul: expected a single value (text without NUL bytes)");
	prof_err_init(&err);
	assert_int_equal(ywalk_want_scalar(&w, get(&w, root, "map"), "map", &s), -EINVAL);
	assert_string_equal(err.msg,
			    "t.yaml:8: map: expected a single value (text without NUL bytes)");
	prof_err_init(&err);
	assert_int_equal(ywalk_want_type(&w, get(&w, root, "map"), YAML_SEQUENCE_NODE, "map"),
			 -EINVAL);
	assert_string_equal(err.msg, "t.yaml:8: map: expected a list");
	prof_err_init(&err);
	assert_int_equal(ywalk_want_type(&w, get(&w, root, "hosts"), YAML_MAPPING_NODE, "hosts"),
			 -EINVAL);
	assert_string_equal(err.msg, "t.yaml:5: hosts: expected a mapping (key: value lines)");
	prof_err_init(&err);
	assert_int_equal(ywalk_want_size(&w, get(&w, root, "bad_size"), "limits.size", &sz),
			 -EINVAL);
	assert_string_equal(err.msg, "t.yaml:9: limits.size: expected a size such as 64MiB or "
				     "1048576 (1 byte .. 16 GiB), got 'lots'");
	prof_err_init(&err);
	assert_int_equal(ywalk_want_bool(&w, get(&w, root, "bad_bool"), "bad_bool", &b), -EINVAL);
	assert_string_equal(err.msg, "t.yaml:10: bad_bool: expected true or false, got 'maybe'");
	prof_err_init(&err);
	assert_int_equal(ywalk_want_duration(&w, get(&w, root, "bad_every"), "every", &d), -EINVAL);
	assert_string_equal(err.msg, "t.yaml:11: every: expected a duration such as 10s, 500ms "
				     "or 1m (up to 7 days), got '8d'");
	prof_err_init(&err);
	assert_int_equal(ywalk_want_u64(&w, get(&w, root, "bad_count"), "count", 42, &u), -EINVAL);
	assert_string_equal(err.msg, "t.yaml:12: count: expected an integer 0..42, got '43'");
	/* a missing node: line 0 */
	prof_err_init(&err);
	assert_int_equal(ywalk_want_scalar(&w, get(&w, root, "absent"), "absent", &s), -EINVAL);
	assert_string_equal(err.msg,
			    "t.yaml:0: absent: expected a single value (text without NUL bytes)");
	ywalk_release(&w);
	ywalk_release(&w); /* twice is harmless */
}

static void test_ywalk_load_empty_and_syntax_error(void **state)
{
	struct prof_err err;
	struct ywalk w;
	yaml_node_t *root = (yaml_node_t *)&w;

	(void)state;
	prof_err_init(&err);
	assert_int_equal(ywalk_load(&w, NULL, 0, "empty.yaml", &err, &root), 0);
	assert_null(root);
	ywalk_release(&w);
	assert_int_equal(ywalk_load(&w, "a: [1, 2\nb: 3\n", 14, "bad.yaml", &err, &root), -EINVAL);
	assert_null(root);
	assert_true(!strncmp(err.msg, "bad.yaml:2:", 11));
	assert_non_null(strstr(err.msg, "YAML: "));
	ywalk_release(&w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ywalk_readers_and_errors),
		cmocka_unit_test(test_ywalk_load_empty_and_syntax_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
