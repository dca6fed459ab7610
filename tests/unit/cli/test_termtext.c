// SPDX-License-Identifier: Apache-2.0
/*
 * test_termtext.c - names as text for a terminal (cli/termtext.h): C0
 * controls and DEL as \xNN, C1 controls as \uNNNN, bytes that are not
 * UTF-8 as \xNN, the rest as it is; cli_term_name's ring keeps the last
 * CLI_TERM_NAME_RING results valid together (one printf of several names).
 */
#include "base/compat.h"
#include "cli/termtext.h"

#include <setjmp.h>
#include <cmocka.h>

static void test_term_str_escapes_what_a_terminal_acts_on(void **state)
{
	struct buf b = BUF_INIT;

	(void)state;
	assert_string_equal(cli_term_str(&b, "a\x1b[31mb\x7f", 8), "a\\x1b[31mb\\x7f");
	assert_string_equal(cli_term_str(&b, "\xc2\x9b\xff\\ \xc3\xa9", 7),
			    "\\u009b\\xff\\ \xc3\xa9");
	assert_string_equal(cli_term_str(&b, "a\0b", 3), "a\\x00b");
	buf_release(&b);
}

static void test_term_name_ring_of_four(void **state)
{
	const char *r[CLI_TERM_NAME_RING];
	char in[CLI_TERM_NAME_RING][16];

	(void)state;
	for (int i = 0; i < CLI_TERM_NAME_RING; i++) {
		snprintf(in[i], sizeof(in[i]), "f%d\x1b", i);
		r[i] = cli_term_name(in[i]);
	}
	for (int i = 0; i < CLI_TERM_NAME_RING; i++) {
		char want[24];

		snprintf(want, sizeof(want), "f%d\\x1b", i);
		assert_string_equal(r[i], want); /* all still valid */
	}
	assert_string_equal(cli_term_name(NULL), "");
	assert_string_equal(cli_term_name("plain/path.pb"), "plain/path.pb");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_term_str_escapes_what_a_terminal_acts_on),
		cmocka_unit_test(test_term_name_ring_of_four),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
