// SPDX-License-Identifier: Apache-2.0
/*
 * test_clickhouse.c - what the ClickHouse backend decides before any
 * ClickHouse answers (store/clickhouse.h): URLs it cannot read are
 * refused with -EINVAL and a message naming the part (no host, bad
 * database name, bad %-escape, unknown parameter, bad cluster name,
 * timeout_ms out of range); a port where nothing accepts gives -ECONNREFUSED naming the
 * server, which the server turns into 503. Queries and ingest against a
 * real clickhouse-server: tests/integration/test_clickhouse.sh.
 */
#include "base/compat.h"
#include "store/clickhouse.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static void open_fails(const char *url, int want, const char *msg_has)
{
	struct store *s = NULL;
	struct prof_err err;

	prof_err_init(&err);
	assert_int_equal(store_open_clickhouse(url, "default", NULL, &s, &err), want);
	assert_null(s);
	if (!strstr(err.msg, msg_has))
		fail_msg("'%s': message '%s' lacks '%s'", url, err.msg, msg_has);
}

static void test_ch_url_kind(void **state)
{
	(void)state;
	assert_true(store_ch_is_url("clickhouse://h:8123/db"));
	assert_false(store_ch_is_url("http://h:8123/db"));
	assert_false(store_ch_is_url("data"));
	assert_false(store_ch_is_url(NULL));
}

static void test_ch_bad_urls_are_refused_with_the_reason(void **state)
{
	(void)state;
	open_fails("http://127.0.0.1:8123/db", -EINVAL, "not a clickhouse:// URL");
	open_fails("clickhouse://127.0.0.1:8123", -EINVAL, "want clickhouse://HOST:PORT/DB");
	open_fails("clickhouse:///db", -EINVAL, "want clickhouse://HOST:PORT/DB");
	open_fails("clickhouse://127.0.0.1:8123/", -EINVAL, "database name");
	open_fails("clickhouse://127.0.0.1:8123/a-b", -EINVAL, "database name");
	open_fails("clickhouse://127.0.0.1:8123/db;drop", -EINVAL, "database name");
	open_fails("clickhouse://ho st:8123/db", -EINVAL, "bad host");
	open_fails("clickhouse://u%zz@127.0.0.1:8123/db", -EINVAL, "%-escape");
	open_fails("clickhouse://u:p%4@127.0.0.1:8123/db", -EINVAL, "%-escape");
	open_fails("clickhouse://127.0.0.1:8123/db?bogus=c", -EINVAL, "unknown parameter 'bogus'");
	open_fails("clickhouse://127.0.0.1:8123/db?cluster=", -EINVAL, "cluster name");
	open_fails("clickhouse://127.0.0.1:8123/db?cluster=a-b", -EINVAL, "cluster name");
	open_fails("clickhouse://127.0.0.1:8123/db?user", -EINVAL, "without '='");
	open_fails("clickhouse://127.0.0.1:8123/db?timeout_ms=0", -EINVAL, "timeout_ms");
	open_fails("clickhouse://127.0.0.1:8123/db?timeout_ms=12x", -EINVAL, "timeout_ms");
}

static void test_ch_nothing_listening_is_econnrefused(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	char url[96];
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)state;
	assert_true(fd >= 0);
	/* bound but not listening: the port stays ours, a connect is refused */
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	snprintf(url, sizeof(url), "clickhouse://127.0.0.1:%u/profd?user=u&password=p",
		 (unsigned)ntohs(a.sin_port));
	open_fails(url, -ECONNREFUSED, "cannot connect");
	open_fails(url, -ECONNREFUSED, "clickhouse://127.0.0.1:");
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ch_url_kind),
		cmocka_unit_test(test_ch_bad_urls_are_refused_with_the_reason),
		cmocka_unit_test(test_ch_nothing_listening_is_econnrefused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
