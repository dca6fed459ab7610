// SPDX-License-Identifier: Apache-2.0
/*
 * test_local.c - in-process requests (server/local.h), the parsing
 * server_local_get uses to run the query API without a socket:
 *   - path and arguments decoded as libmicrohttpd decodes them ('+' is a
 *     space in arguments only, %XX everywhere, a bad escape kept);
 *   - a key without '=' has no value; the first of repeated keys wins;
 *   - only Authorization and X-Profd-Dataset are visible as headers;
 *   - refused: no leading '/', %00, too many arguments.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "server/local.h"

#include <setjmp.h>
#include <cmocka.h>

static void test_local_parse_decodes_like_mhd(void **state)
{
	struct server_local l;

	(void)state;
	assert_int_equal(server_local_parse(&l, "/api/v1/labels/a%2Eb/values?query=%7Bx%3D%22a+b"
						"%22%7D&flag&k=1&k=2&bad=%zz&plus=a%2Bb"),
			 0);
	assert_string_equal(l.path, "/api/v1/labels/a.b/values");
	assert_string_equal(server_local_arg(&l, "query"), "{x=\"a b\"}");
	assert_null(server_local_arg(&l, "flag"));
	assert_int_equal(l.nargs, 6);
	assert_string_equal(server_local_arg(&l, "k"), "1");
	assert_string_equal(server_local_arg(&l, "bad"), "%zz");
	assert_string_equal(server_local_arg(&l, "plus"), "a+b");
	assert_null(server_local_arg(&l, "missing"));
	l.authorization = "Bearer s3cret";
	l.dataset = "prod";
	assert_string_equal(server_local_header(&l, "authorization"), "Bearer s3cret");
	assert_string_equal(server_local_header(&l, "X-PROFD-DATASET"), "prod");
	assert_null(server_local_header(&l, "Host"));
	server_local_release(&l);

	assert_int_equal(server_local_parse(&l, "/x+y"), 0);
	assert_string_equal(l.path, "/x+y");
	assert_int_equal(l.nargs, 0);
	server_local_release(&l);
}

static void test_local_parse_refuses(void **state)
{
	struct server_local l;
	struct buf b = BUF_INIT;

	(void)state;
	assert_int_equal(server_local_parse(&l, "api/v1/table"), -EINVAL);
	server_local_release(&l);
	assert_int_equal(server_local_parse(&l, "/a?x=%00"), -EINVAL);
	server_local_release(&l);
	assert_int_equal(server_local_parse(&l, "/a%00b"), -EINVAL);
	server_local_release(&l);
	(void)buf_addstr(&b, "/a?");
	for (int i = 0; i <= SERVER_LOCAL_MAX_ARGS; i++)
		(void)buf_addf(&b, "k%d=v&", i);
	assert_int_equal(server_local_parse(&l, b.p), -EINVAL);
	server_local_release(&l);
	buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_local_parse_decodes_like_mhd),
		cmocka_unit_test(test_local_parse_refuses),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
