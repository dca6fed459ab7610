/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cli.h - the subcommands of `profd` (git builtin.h style): one
 * cmd_<name>.c per subcommand, one dispatch table in main.c.
 * Each takes argc/argv with argv[0] = the subcommand name and returns the
 * process exit status (0 ok, 1 error, 2 usage).
 */
#ifndef PROF_CLI_CLI_H
#define PROF_CLI_CLI_H

int cmd_top(int argc, char **argv);
int cmd_convert(int argc, char **argv);
int cmd_server(int argc, char **argv);
int cmd_agent(int argc, char **argv);
int cmd_query(int argc, char **argv);
int cmd_flamegraph(int argc, char **argv);
int cmd_debuginfo(int argc, char **argv);
int cmd_scrape(int argc, char **argv);
int cmd_store(int argc, char **argv);
int cmd_mcp(int argc, char **argv);

#endif
