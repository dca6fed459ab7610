// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_server.c - `profd server`: read the config (datasets, tokens,
 * limits; server/config.h), open one store per dataset (replaying its
 * WAL), serve HTTP (and OTLP/gRPC, a second OTLP/HTTP port when asked)
 * until SIGINT/SIGTERM, then refuse new ingest, let requests in flight
 * finish, and close the stores.
 *
 * Signals are blocked in every thread (the mask is set before any thread
 * starts) and taken synchronously with sigwait in the main thread, so no
 * work happens in a signal handler.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/parse.h"
#include "cli/cli.h"
#include "cli/opts.h"
#include "scrape/config.h"
#include "server/config.h"
#include "mcp/endpoint.h"
#include "server/http.h"
#include "store/clickhouse.h"
#include "symbolize/debuginfo.h"
#include "symbolize/srcroot.h"
#include "symbolize/symbolizer.h"

#include <getopt.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>

static void usage(FILE *f)
{
	fprintf(f,
		"usage: profd server [--config FILE] [--listen HOST:PORT] [--data DIR] [--ui DIR]\n"
		"                    [--otlp-http-listen HOST:PORT] [--grpc-listen HOST:PORT]\n"
		"                    [--max-body BYTES] [--log-level LEVEL]\n"
		"                    [--scrape-config FILE] [--self-profile] [--symbol-path DIR]...\n"
		"                    [--source-path DIR]\n"
		"                    [--max-connections N] [--max-connections-per-client N]\n"
		"                    [--header-timeout DUR] [--idle-timeout DUR]\n"
		"                    [--min-upload-rate BYTES] [--upload-window DUR]\n"
		"                    [--http-threads N] [--query-workers N]\n"
		"                    [--replay-query-wait DUR] [--storage URL]\n"
		"                    [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
		"\n"
		"  --config FILE       datasets, tokens, signal control, limits (YAML); without\n"
		"                      it: one open dataset 'default', loopback addresses only\n"
		"  --listen HOST:PORT  address to serve on (default " SERVER_DEFAULT_LISTEN
		"; port 0 picks one)\n"
		"  --otlp-http-listen HOST:PORT  also serve OTLP/HTTP there (OTLP's port: 4318)\n"
		"  --grpc-listen HOST:PORT       serve OTLP/gRPC (h2c; with --tls-cert TLS, ALPN h2)\n"
		"                                there (OTLP's port: 4317)\n"
		"  --data DIR          data directory, one store per dataset in DIR/<name>/\n"
		"                      (default ./data)\n"
		"  --storage URL       keep the datasets' profiles in ClickHouse instead:\n"
		"                      clickhouse://[USER[:PASSWORD]@]HOST:PORT/DB[?user=U&\n"
		"                      password=P&timeout_ms=N] (HTTP port; docs/clickhouse.md);\n"
		"                      --data still holds usage and debuginfo\n"
		"  --ui DIR            explorer files (default ui)\n"
		"  --max-body BYTES    request body limit, also after gzip (default 64 MiB)\n"
		"  --log-level LEVEL   debug, info, warn or error (default info)\n"
		"  --scrape-config FILE  scrape pprof endpoints / watch files (scrape_configs,\n"
		"                      watch_configs; also read from --config); health at\n"
		"                      /api/v1/targets\n"
		"  --self-profile      profile profd's own CPU into job=\"profd-self\"\n"
		"  --tls-cert FILE     serve HTTPS and gRPC over TLS on every listener with this\n"
		"                      certificate (PEM, then any intermediates) ...\n"
		"  --tls-key FILE      ... and its private key (PEM, unencrypted)\n"
		"  --tls-client-ca FILE  clients must present a certificate this CA (PEM) signed\n"
		"                      (mutual TLS; /healthz and /readyz excepted)\n"
		"  --symbol-path DIR   also name native frames from this host's files under DIR\n"
		"                      (the mapping paths the data names, DIR/.build-id/xx/\n"
		"                      rest.debug); may repeat. Default: none, only uploaded\n"
		"                      debug info (and DEBUGINFOD_URLS) is used\n"
		"  --source-path DIR   the source view (/api/v1/source) may show the text of\n"
		"                      source files the profiles name, read from under DIR\n"
		"                      only. Default: none, per-line costs without text\n"
		"connections (HTTP and gRPC listeners together; docs/ingest.md):\n"
		"  --max-connections N             open connections in all (default 8192,\n"
		"                                  at most the descriptor limit less 512)\n"
		"  --max-connections-per-client N  from one client address (default 256)\n"
		"  --header-timeout DUR  a new connection's request headers must be complete\n"
		"                      within DUR of accept, however slowly bytes come (10s)\n"
		"  --idle-timeout DUR  a keep-alive connection's next request must be in\n"
		"                      within DUR of the last answer (60s)\n"
		"  --min-upload-rate BYTES  a request body must move BYTES per second ...\n"
		"  --upload-window DUR      ... in every window of DUR (4KiB, 10s)\n"
		"  --http-threads N    socket threads per HTTP listener (default CPUs, 2..16)\n"
		"  --query-workers N   threads for queries and other slow requests (16)\n"
		"  --replay-query-wait DUR  after a restart the WAL replays in the background\n"
		"                      (ingest is taken at once); a query waits this long for\n"
		"                      it, then answers with X-Profd-Replay (30s)\n");
}

/*
 * The scrape configuration: --scrape-config, else the scrape_configs /
 * watch_configs of --config. 0, or 1 after printing why.
 */
static int load_scrape(const char *path, const char *server_config, struct scrape_config *sc)
{
	struct scrape_config emb = { 0 };
	struct prof_err err;
	int rc = 0;

	prof_err_init(&err);
	if (server_config)
		rc = scrape_config_load(server_config, SCRAPE_CONF_EMBEDDED, &emb, &err);
	if (!rc && path && (emb.njobs || emb.nwatches))
		rc = prof_err_set(
			&err, -EINVAL, -1,
			"%s has scrape_configs/watch_configs and --scrape-config is given: "
			"keep them in one place",
			server_config);
	if (!rc && path) {
		scrape_config_release(&emb);
		rc = scrape_config_load(path, 0, sc, &err);
	} else if (!rc) {
		*sc = emb;
		memset(&emb, 0, sizeof(emb));
	}
	scrape_config_release(&emb);
	if (rc) {
		scrape_config_release(sc);
		fprintf(stderr, "profd server: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
	}
	return rc ? 1 : 0;
}

/* The long name of the option whose value is @val. */
static const char *opt_name(const struct option *opts, int val)
{
	for (; opts->name; opts++)
		if (opts->val == val)
			return opts->name;
	return "?";
}

int cmd_server(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "listen", required_argument, NULL, 'l' },
		{ "config", required_argument, NULL, 'c' },
		{ "otlp-http-listen", required_argument, NULL, 'o' },
		{ "grpc-listen", required_argument, NULL, 'g' },
		{ "data", required_argument, NULL, 'd' },
		{ "ui", required_argument, NULL, 'u' },
		{ "max-body", required_argument, NULL, 'b' },
		{ "log-level", required_argument, NULL, 'L' },
		{ "scrape-config", required_argument, NULL, 'S' },
		{ "self-profile", no_argument, NULL, 'P' },
		{ "symbol-path", required_argument, NULL, 'Y' },
		{ "max-connections", required_argument, NULL, 1000 },
		{ "max-connections-per-client", required_argument, NULL, 1001 },
		{ "header-timeout", required_argument, NULL, 1002 },
		{ "idle-timeout", required_argument, NULL, 1003 },
		{ "min-upload-rate", required_argument, NULL, 1004 },
		{ "upload-window", required_argument, NULL, 1005 },
		{ "http-threads", required_argument, NULL, 1006 },
		{ "query-workers", required_argument, NULL, 1007 },
		{ "replay-query-wait", required_argument, NULL, 1008 },
		{ "tls-cert", required_argument, NULL, 1009 },
		{ "tls-key", required_argument, NULL, 1010 },
		{ "tls-client-ca", required_argument, NULL, 1011 },
		{ "storage", required_argument, NULL, 1012 },
		{ "source-path", required_argument, NULL, 1013 },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_config cfg = { .listen = SERVER_DEFAULT_LISTEN, .ui_dir = "ui" };
	const char *data_dir = "data", *config = NULL, *scrape_path = NULL;
	struct scrape_config sc = { 0 };
	struct server_conf conf;
	struct symbolizer *sym = NULL;
	struct sym_debuginfo *di = NULL;
	const char *symbol_paths[16];
	size_t nsymbol_paths = 0;
	const char *source_path = NULL;
	struct sym_srcroot *src_root = NULL;
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
		case 'c':
			config = optarg;
			break;
		case 'S':
			scrape_path = optarg;
			break;
		case 'P':
			cfg.self_profile = true;
			break;
		case 'Y':
			if (nsymbol_paths == PROF_ARRAY_SIZE(symbol_paths)) {
				fprintf(stderr, "profd server: --symbol-path: at most %zu\n",
					PROF_ARRAY_SIZE(symbol_paths));
				return 2;
			}
			symbol_paths[nsymbol_paths++] = optarg;
			break;
		case 1013:
			source_path = optarg;
			break;
		case 'o':
			cfg.otlp_listen = optarg;
			break;
		case 'g':
			cfg.grpc_listen = optarg;
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
		case 1000:
		case 1001:
		case 1006:
		case 1007: {
			unsigned *dst = c == 1000   ? &cfg.conn_limits.max_conns
					: c == 1001 ? &cfg.conn_limits.max_per_client
					: c == 1006 ? &cfg.http_threads
						    : &cfg.query_workers;

			if (parse_u64(optarg, &v) || v == 0 || v > 1000000) {
				fprintf(stderr,
					"profd server: --%s: expected 1..1000000, got '%s'\n",
					opt_name(opts, c), optarg);
				return 2;
			}
			*dst = (unsigned)v;
			break;
		}
		case 1002:
		case 1003:
		case 1005: {
			int64_t *dst = c == 1002   ? &cfg.conn_limits.header_timeout_ns
				       : c == 1003 ? &cfg.conn_limits.idle_timeout_ns
						   : &cfg.conn_limits.upload_window_ns;

			if (parse_duration_ns(optarg, dst) || *dst < 1000000) {
				fprintf(stderr,
					"profd server: --%s: expected a duration of 1ms or more "
					"(10s, 500ms), got '%s'\n",
					opt_name(opts, c), optarg);
				return 2;
			}
			break;
		}
		case 1008:
			if (parse_duration_ns(optarg, &cfg.replay_wait_ns) ||
			    cfg.replay_wait_ns < 0) {
				fprintf(stderr,
					"profd server: --replay-query-wait: expected a duration "
					"(30s, 0), got '%s'\n",
					optarg);
				return 2;
			}
			if (!cfg.replay_wait_ns)
				cfg.replay_wait_ns = 1; /* 0 = do not wait (1 ns) */
			break;
		case 1009:
			cfg.tls_cert = optarg;
			break;
		case 1010:
			cfg.tls_key = optarg;
			break;
		case 1011:
			cfg.tls_client_ca = optarg;
			break;
		case 1012:
			if (!store_ch_is_url(optarg)) {
				fprintf(stderr,
					"profd server: --storage wants clickhouse://HOST:PORT/DB, "
					"got '%s'\n",
					optarg);
				return 2;
			}
			cfg.storage = optarg;
			break;
		case 1004:
			if (parse_size_bytes(optarg, &v) || v == 0) {
				fprintf(stderr,
					"profd server: --min-upload-rate: expected bytes per second "
					"(4KiB, 1024), got '%s'\n",
					optarg);
				return 2;
			}
			cfg.conn_limits.min_upload_bps = v;
			break;
		case 'L':
			if (cli_set_log_level("server", optarg))
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
		fprintf(stderr, "profd server: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}
	if ((cfg.tls_cert || cfg.tls_client_ca) && !cfg.tls_key) {
		fprintf(stderr, "profd server: --tls-cert%s needs --tls-key\n",
			cfg.tls_cert ? "" : " (which --tls-client-ca needs)");
		return 2;
	}
	if (cfg.tls_key && !cfg.tls_cert) {
		fprintf(stderr, "profd server: --tls-key needs --tls-cert\n");
		return 2;
	}

	/* Block the stop signals before any thread exists; all threads inherit it. */
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);

	prof_err_init(&err);
	if (config) {
		rc = server_conf_load(config, &conf, &err);
		if (rc) {
			fprintf(stderr, "profd server: %s\n",
				err.msg[0] ? err.msg : prof_strerror(rc));
			server_conf_release(&conf);
			return 1;
		}
	} else {
		server_conf_default(&conf);
	}
	if (load_scrape(scrape_path, config, &sc)) {
		server_conf_release(&conf);
		return 1;
	}
	cfg.scrape = sc.njobs || sc.nwatches ? &sc : NULL;
	cfg.conf = &conf;
	cfg.data_dir = data_dir;
	/* MCP over streamable HTTP at POST /mcp (mcp/endpoint.h). */
	static const struct server_hook hooks[] = { MCP_ENDPOINT_HOOK };
	cfg.hooks = hooks;
	cfg.nhooks = PROF_ARRAY_SIZE(hooks);
	sym = symbolizer_new(64);
	/*
	 * Files of this host: only under --symbol-path, and the server's own
	 * executable and libraries for frames with their build ID (its
	 * self-profile). The data's mapping paths are nobody's promise.
	 */
	prof_err_init(&err);
	if (symbolizer_set_symbol_paths(sym, symbol_paths, nsymbol_paths, &err)) {
		fprintf(stderr, "profd server: --symbol-path: %s\n", err.msg);
		symbolizer_free(sym);
		server_conf_release(&conf);
		scrape_config_release(&sc);
		return 2;
	}
	symbolizer_allow_own_objects(sym);
	/* Debug info by build ID, shared by all datasets: DATA_DIR/debuginfo/. */
	char di_dir[4096];
	snprintf(di_dir, sizeof(di_dir), "%s/debuginfo", data_dir);
	prof_err_init(&err);
	rc = sym_debuginfo_open(di_dir, &di, &err);
	if (rc) {
		fprintf(stderr, "profd server: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		symbolizer_free(sym);
		server_conf_release(&conf);
		scrape_config_release(&sc);
		return 1;
	}
	symbolizer_set_debuginfo(sym, di);
	/* Build IDs nobody uploaded: ask DEBUGINFOD_URLS in the background, when set. */
	prof_err_init(&err);
	if (symbolizer_enable_debuginfod(sym, &err) == 0)
		log_info("server: debuginfod client on, servers=\"%s\"", getenv("DEBUGINFOD_URLS"));
	else if (getenv("DEBUGINFOD_URLS"))
		log_warn("server: debuginfod client off: %s", err.msg);
	/*
	 * Malloc arenas: one per CPU, not glibc's eight. Each ingest thread
	 * would otherwise get an arena of its own that keeps the pages its
	 * requests freed resident: 15-20% of the peak RSS under 8 clients
	 * (bench/results/ingest.md). MALLOC_ARENA_MAX in the environment wins.
	 */
	if (!getenv("MALLOC_ARENA_MAX"))
		mallopt(M_ARENA_MAX, (int)PROF_MAX(2L, sysconf(_SC_NPROCESSORS_ONLN)));
	prof_err_init(&err);
	rc = source_path ? sym_srcroot_new(source_path, &src_root, &err) : 0;
	if (rc)
		fprintf(stderr, "profd server: --source-path: %s\n", err.msg);
	cfg.src_root = src_root;
	if (!rc) {
		prof_err_init(&err);
		rc = server_start(&cfg, sym, &srv, &err);
		if (rc)
			fprintf(stderr, "profd server: %s\n",
				err.msg[0] ? err.msg : prof_strerror(rc));
	}
	if (rc) {
		sym_srcroot_free(src_root);
		symbolizer_free(sym);
		sym_debuginfo_free(di);
		server_conf_release(&conf);
		scrape_config_release(&sc);
		return 1;
	}

	const char *host = server_host(srv);
	if (!*host || !strcmp(host, "0.0.0.0") || !strcmp(host, "::"))
		host = "127.0.0.1";
	bool v6 = strchr(host, ':') != NULL;
	log_info("server: listening addr=%s port=%u data=%s ui=%s config=%s datasets=%zu "
		 "tokens=%zu tls=%s",
		 cfg.listen, server_port(srv), data_dir, cfg.ui_dir, config ? config : "-",
		 conf.ndatasets, conf.ntokens,
		 !cfg.tls_cert	     ? "off"
		 : cfg.tls_client_ca ? "on,client-certificates"
				     : "on");
	if (cfg.otlp_listen)
		log_info("server: OTLP/HTTP listening addr=%s port=%u", cfg.otlp_listen,
			 server_otlp_port(srv));
	if (cfg.grpc_listen)
		log_info("server: OTLP/gRPC listening addr=%s port=%u", cfg.grpc_listen,
			 server_grpc_listen_port(srv));
	printf("profd server: explorer at http%s://%s%s%s:%u/ (data in %s; Ctrl-C stops)\n",
	       cfg.tls_cert ? "s" : "", v6 ? "[" : "", host, v6 ? "]" : "", server_port(srv),
	       data_dir);
	if (cfg.otlp_listen)
		printf("profd server: OTLP/HTTP on port %u\n", server_otlp_port(srv));
	if (cfg.grpc_listen)
		printf("profd server: OTLP/gRPC on port %u\n", server_grpc_listen_port(srv));
	fflush(stdout);

	do {
		rc = sigwait(&sigs, &sig);
	} while (rc == EINTR);
	log_info("server: %s received, shutting down", sig == SIGINT ? "SIGINT" : "SIGTERM");
	server_stop(srv);
	sym_srcroot_free(src_root);
	symbolizer_free(sym);
	sym_debuginfo_free(di);
	server_conf_release(&conf);
	scrape_config_release(&sc);
	log_info("server: stopped");
	return 0;
}
