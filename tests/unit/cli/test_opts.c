// SPDX-License-Identifier: Apache-2.0
/*
 * test_opts.c - shared option values (cli/opts.h): bearer tokens read
 * from a file are the first line without its line end and trailing
 * blanks, NULL for a missing file, an empty first line, or a file over
 * CLI_MAX_TOKEN_FILE; --log-level takes the four level names only.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "cli/opts.h"

#include <setjmp.h>
#include <cmocka.h>
#include <unistd.h>

/* The token read from a temporary file holding the @n bytes of @data. */
static char *token_of(const char *data, size_t n)
{
	char path[] = "/tmp/profd-test-token.XXXXXX";
	int fd = mkstemp(path);
	char *tok;

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
	tok = cli_read_token(path);
	unlink(path);
	return tok;
}

static void test_token_first_line_trimmed(void **state)
{
	static const struct {
		const char *file, *want;
	} cases[] = {
		{ "s3cret\n", "s3cret" },
		{ "s3cret", "s3cret" },
		{ "s3cret \t\r\nsecond line\n", "s3cret" },
		{ "  lead kept\n", "  lead kept" },
		{ "a b\n", "a b" },
		{ "\nafter an empty line\n", NULL },
		{ " \t\n", NULL },
		{ "", NULL },
	};

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cases); i++) {
		char *tok = token_of(cases[i].file, strlen(cases[i].file));

		if (cases[i].want)
			assert_string_equal(tok, cases[i].want);
		else
			assert_null(tok);
		free(tok);
	}
}

static void test_token_missing_or_too_big(void **state)
{
	size_t n = CLI_MAX_TOKEN_FILE + 1;
	char *big = malloc(n);

	(void)state;
	assert_null(cli_read_token("/nonexistent/profd-token"));
	assert_non_null(big);
	memset(big, 'x', n);
	assert_null(token_of(big, n));
	big[CLI_MAX_TOKEN_FILE - 1] = '\n'; /* exactly at the cap: read */
	{
		char *tok = token_of(big, CLI_MAX_TOKEN_FILE);

		assert_non_null(tok);
		assert_int_equal(strlen(tok), CLI_MAX_TOKEN_FILE - 1);
		free(tok);
	}
	free(big);
}

static void test_log_level_option(void **state)
{
	(void)state;
	assert_int_equal(cli_set_log_level("test", "debug"), 0);
	assert_int_equal(cli_set_log_level("test", "error"), 0);
	assert_int_equal(cli_set_log_level("test", "verbose"), 2); /* and one line on stderr */
	assert_int_equal(cli_set_log_level("test", "Info"), 2);
	assert_int_equal(cli_set_log_level("test", "info"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_first_line_trimmed),
		cmocka_unit_test(test_token_missing_or_too_big),
		cmocka_unit_test(test_log_level_option),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
