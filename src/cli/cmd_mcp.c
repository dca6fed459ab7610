// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_mcp.c - `profd mcp`: a Model Context Protocol server on stdio for
 * coding agents (Claude Code, Cursor, ...), answering from a running
 * profd server's query API (mcp/mcp.h, mcp/tools.h). The server itself
 * serves the same tools over streamable HTTP at POST /mcp.
 *
 *   profd mcp --server http://127.0.0.1:4040 [--token T] [--dataset D]
 *
 * An agent's configuration runs it as a subprocess, e.g.
 *   {"mcpServers": {"profd": {"command": "profd", "args": ["mcp",
 *     "--server", "http://profd:4040"], "env": {"PROFD_TOKEN": "..."}}}}
 */
#include "base/compat.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "mcp/curl_backend.h"
#include "mcp/mcp.h"
#include "mcp/stdio.h"

#include <getopt.h>
#include <signal.h>
#include <unistd.h>

#define DEFAULT_SERVER "http://127.0.0.1:4040"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: profd mcp [--server URL] [--token T] [--dataset D] [--log-level LEVEL]\n"
		"                 [--ca-file FILE] [--cert-file FILE [--key-file FILE]]\n"
		"\n"
		"Serve the Model Context Protocol on stdin/stdout (JSON-RPC, one message per\n"
		"line) for coding agents: tools list_profile_types, list_labels, label_values,\n"
		"top_functions, flamegraph_summary, callers_callees, compare,\n"
		"function_timeseries, find_function, source_location, explain_change,\n"
		"optimization_candidates, read from a profd server's query API. Logs go to\n"
		"stderr.\n"
		"\n"
		"  --server URL      the profd server (default $PROFD_SERVER or " DEFAULT_SERVER
		")\n"
		"  --token T         bearer token with the query permission (default $PROFD_TOKEN)\n"
		"  --dataset D       dataset to query (default $PROFD_DATASET, else the token's)\n"
		"  --ca-file FILE    trust the CA certificates in FILE (PEM) for an https://\n"
		"                    server instead of the system's\n"
		"  --cert-file FILE  client certificate (PEM) for a server that asks for one\n"
		"  --key-file FILE   its private key (PEM; default: in --cert-file)\n"
		"  --log-level LEVEL debug, info, warn or error (default warn)\n"
		"\n"
		"The server also serves MCP over streamable HTTP at POST /mcp.\n");
}

int cmd_mcp(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "server", required_argument, NULL, 's' },
		{ "token", required_argument, NULL, 't' },
		{ "dataset", required_argument, NULL, 'd' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "ca-file", required_argument, NULL, 1000 },
		{ "cert-file", required_argument, NULL, 1001 },
		{ "key-file", required_argument, NULL, 1002 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *server = getenv("PROFD_SERVER"), *token = getenv("PROFD_TOKEN");
	const char *dataset = getenv("PROFD_DATASET");
	struct mcp_backend be = { 0 };
	struct mcp_curl_tls tls = { 0 };
	struct mcp_curl *cb = NULL;
	struct mcp_server *s;
	struct prof_err err;
	int c, rc;

	prof_log_set_level(PROF_LOG_WARN);
	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's':
			server = optarg;
			break;
		case 't':
			token = optarg;
			break;
		case 'd':
			dataset = optarg;
			break;
		case 1000:
			tls.ca_file = optarg;
			break;
		case 1001:
			tls.cert_file = optarg;
			break;
		case 1002:
			tls.key_file = optarg;
			break;
		case 'L':
			if (cli_set_log_level("mcp", optarg))
				return 2;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "profd mcp: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if (!server || !*server)
		server = DEFAULT_SERVER;
	prof_err_init(&err);
	rc = mcp_curl_new(server, token, dataset, &tls, &cb, &be, &err);
	if (rc) {
		fprintf(stderr, "profd mcp: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		return rc == -EINVAL ? 2 : 1;
	}
	signal(SIGPIPE, SIG_IGN); /* a client that goes away ends the loop with EPIPE */
	log_info("mcp: serving on stdio, server=%s dataset=%s", be.base_url,
		 dataset ? dataset : "-");
	s = mcp_server_new(&be);
	rc = mcp_stdio_serve(s, STDIN_FILENO, STDOUT_FILENO);
	mcp_server_free(s);
	mcp_curl_free(cb);
	if (rc && rc != -EPIPE) {
		fprintf(stderr, "profd mcp: %s\n", prof_strerror(rc));
		return 1;
	}
	return 0;
}
