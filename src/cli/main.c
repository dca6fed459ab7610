// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - `profd <command> [args]`: dispatch to one cmd_<name> function.
 */
#include "base/compat.h"
#include "cli/cli.h"

#ifndef PROFD_VERSION
#define PROFD_VERSION "dev"
#endif

struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static const struct cmd commands[] = {
	{ "server", cmd_server, "run the ingest + query server and the explorer" },
	{ "agent", cmd_agent, "sample this host with eBPF and send OTLP profiles" },
	{ "top", cmd_top, "print the top functions of a profile file" },
	{ "convert", cmd_convert, "convert a profile file between formats" },
	{ "query", cmd_query, "ask a server: flame graph, table, series, diff, exports" },
	{ "flamegraph", cmd_flamegraph, "draw an interactive SVG flame graph of a profile file" },
	{ "debuginfo", cmd_debuginfo, "upload debug info to a server, or look a build ID up" },
	{ "scrape", cmd_scrape, "scrape pprof endpoints / watch pprof files, send OTLP" },
	{ "store", cmd_store, "check, inspect or compact a data directory offline" },
	{ "mcp", cmd_mcp, "serve profiles to coding agents (Model Context Protocol, stdio)" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: profd <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < PROF_ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nRun 'profd <command> --help' for a command's options; "
		   "'profd --version' for the version.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("profd %s\n", PROFD_VERSION);
		return 0;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "profd: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return 2;
}
