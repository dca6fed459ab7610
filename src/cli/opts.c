// SPDX-License-Identifier: Apache-2.0
/* opts.c - option values several subcommands share; see opts.h. */
#include "base/compat.h"
#include "cli/opts.h"

#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"

char *cli_read_token(const char *path)
{
	struct buf b;
	char *tok = NULL;

	buf_init(&b, CLI_MAX_TOKEN_FILE);
	if (buf_read_file(&b, path) == 0 && b.p) {
		size_t n = strcspn(b.p, "\r\n");

		while (n > 0 && (b.p[n - 1] == ' ' || b.p[n - 1] == '\t'))
			n--;
		if (n)
			tok = xstrndup(b.p, n);
	}
	buf_release(&b);
	return tok;
}

int cli_set_log_level(const char *cmd, const char *arg)
{
	enum prof_log_level lv;

	if (prof_log_level_parse(arg, &lv)) {
		fprintf(stderr,
			"profd %s: --log-level: expected debug, info, warn or error, got '%s'\n",
			cmd, arg);
		return 2;
	}
	prof_log_set_level(lv);
	return 0;
}
