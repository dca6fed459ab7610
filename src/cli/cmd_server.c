// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_server.c - `profd server`: open the store (replaying its WAL),
 * serve HTTP until SIGINT/SIGTERM, then stop accepting, let requests in
 * flight finish, and close the store.
 *
 * Signals are blocked in every thread (the mask is set before any thread
 * starts) and taken synchronously with sigwait in the main thread, so no
 * work happens in a signal handler.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "server/http.h"
#include "store/store.h"
#include "symbolize/symbolizer.h"

#include <getopt.h>
#include <pthread.h>
#include <signal.h>

static void usage(FILE *f)
{
	fprintf(f, "usage: profd server [--listen HOST:PORT] [--data DIR] [--ui DIR]\n"
		   "                    [--max-body BYTES] [--log-level LEVEL]\n"
		   "\n"
		   "  --listen HOST:PORT  address to serve on (default " SERVER_DEFAULT_LISTEN
		   "; port 0 picks one)\n"
		   "  --data DIR          store directory (default ./data)\n"
		   "  --ui DIR            explorer files (default ui)\n"
		   "  --max-body BYTES    request body limit, also after gzip (default 64 MiB)\n"
		   "  --log-level LEVEL   debug, info, warn or error (default info)\n");
}

static int parse_level(const char *s, enum prof_log_level *out)
{
	static const char *names[] = { "debug", "info", "warn", "error" };

	for (size_t i = 0; i < PROF_ARRAY_SIZE(names); i++)
		if (!strcmp(s, names[i])) {
			*out = (enum prof_log_level)i;
			return 0;
		}
	return -EINVAL;
}

int cmd_server(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "data", required_argument, NULL, 'd' },
		{ "ui", required_argument, NULL, 'u' },
		{ "max-body", required_argument, NULL, 'b' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_config cfg = { .listen = SERVER_DEFAULT_LISTEN, .ui_dir = "ui" };
	const char *data_dir = "data";
	struct store *st = NULL;
	struct symbolizer *sym = NULL;
	struct server *srv = NULL;
	struct prof_err err;
	sigset_t sigs;
	uint64_t v;
	int c, sig, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			cfg.listen = optarg;
			break;
		case 'd':
			data_dir = optarg;
			break;
		case 'u':
			cfg.ui_dir = optarg;
			break;
		case 'b':
			if (parse_u64(optarg, &v) || v == 0 || v > ((uint64_t)1 << 31)) {
				fprintf(stderr,
					"profd server: --max-body: expected 1..2147483648 "
					"bytes, got '%s'\n",
					optarg);
				return 2;
			}
			cfg.max_body = (size_t)v;
			break;
		case 'L': {
			enum prof_log_level lv;

			if (parse_level(optarg, &lv)) {
				fprintf(stderr,
					"profd server: --log-level: expected debug, info, "
					"warn or error, got '%s'\n",
					optarg);
				return 2;
			}
			prof_log_set_level(lv);
			break;
		}
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "profd server: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	/* Block the stop signals before any thread exists; all threads inherit it. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	prof_err_init(&err);
	rc = store_open(data_dir, &st, &err);
	if (rc) {
		fprintf(stderr, "profd server: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		return 1;
	}
	sym = symbolizer_new(64);
	prof_err_init(&err);
	rc = server_start(&cfg, st, sym, &srv, &err);
	if (rc) {
		fprintf(stderr, "profd server: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		store_close(st);
		symbolizer_free(sym);
		return 1;
	}

	const char *host = server_host(srv);
	if (!*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
		host = "127.0.0.1";
	bool v6 = strchr(host, ':') != NULL;
	log_info("server: listening addr=%s port=%u data=%s ui=%s", cfg.listen, server_port(srv),
		 data_dir, cfg.ui_dir);
	printf("profd server: explorer at http://%s%s%s:%u/ (data in %s; Ctrl-C stops)\n",
	       v6 ? "[" : "", host, v6 ? "]" : "", server_port(srv), data_dir);
	fflush(stdout);

	do {
		rc = sigwait(&sigs, &sig);
	} while (rc == EINTR);
	log_info("server: %s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
	server_stop(srv);
	store_close(st);
	symbolizer_free(sym);
	log_info("server: stopped");
	return 0;
}
