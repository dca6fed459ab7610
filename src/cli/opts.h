/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opts.h - what several subcommands' options share:
 *   - --log-level LEVEL (server, scrape, mcp, agent): the level set, or
 *     one usage line naming the subcommand;
 *   - --bearer-token-file FILE (agent, debuginfo): a token read from a
 *     file, so that the secret stays out of the process list: the file's
 *     first line, trailing blanks cut, as a Kubernetes secret mounted as a
 *     file or `echo TOKEN > file` leaves it.
 */
#ifndef PROF_CLI_OPTS_H
#define PROF_CLI_OPTS_H

#include "base/compat.h"

/** Token files larger than this are not read (the token is its first line). */
#define CLI_MAX_TOKEN_FILE (64u << 10)

/**
 * cli_read_token() - the first line of the file at @path, without its line
 * end (\n or \r\n) and trailing spaces and tabs. Returns a string the
 * caller frees, or NULL when the file cannot be read, exceeds
 * CLI_MAX_TOKEN_FILE, or its first line is empty.
 */
char *cli_read_token(const char *path);

/**
 * cli_set_log_level() - --log-level @arg of `profd @cmd`: sets the log
 * level (base/log.h) and returns 0, or prints "profd @cmd: --log-level:
 * expected debug, info, warn or error, got '@arg'" on stderr and returns 2
 * (the usage exit status, cli.h).
 */
int cli_set_log_level(const char *cmd, const char *arg);

#endif
