// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_agent.c - `profd agent`: sample this host with eBPF and send OTLP
 * profiles to a server (agent/agent.h). SIGINT/SIGTERM stop it cleanly:
 * what was sampled is sent before it exits 0.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/parse.h"
#include "agent/agent.h"
#include "cli/cli.h"

#include <signal.h>

static volatile sig_atomic_t agent_stop;

static void agent_on_signal(int sig)
{
	(void)sig;
	agent_stop = 1;
}

static void agent_usage(FILE *f)
{
	fprintf(f,
		"usage: profd agent --server URL [options]\n"
		"\n"
		"Samples what every process on this host runs on CPU (eBPF on a per-CPU\n"
		"perf_event cpu-clock; kernel and user stacks) and sends one OTLP profile per\n"
		"process every interval to URL/v1development/profiles (protobuf, gzip).\n"
		"Profile type process_cpu:cpu:nanoseconds:cpu:nanoseconds (plus sample counts).\n"
		"Needs root (or CAP_BPF + CAP_PERFMON) and a kernel with BTF.\n"
		"\n"
		"options:\n"
		"  --server URL       profd server (or OTLP/HTTP receiver), e.g. http://127.0.0.1:4040\n"
		"  --frequency HZ     samples per second per CPU (default %d)\n"
		"  --interval DUR     how often to send profiles (default 10s; e.g. 500ms, 2s, 1m)\n"
		"  --duration DUR     stop after this long (default: until SIGINT/SIGTERM)\n"
		"  --dump DIR         also write each request body (OTLP protobuf, uncompressed)\n"
		"                     to DIR/agent-<unix ms>-<seq>.otlp.pb; without --server, only dump\n"
		"  --log-level LEVEL  debug, info (default), warn or error\n"
		"  -h, --help         this text\n",
		AGENT_DEFAULT_FREQUENCY);
}

/* "--name value" or "--name=value": true and *@val set when argv[*i] is option @name. */
static bool agent_opt(int argc, char **argv, int *i, const char *name, const char **val,
		      bool *missing)
{
	size_t n = strlen(name);
	const char *a = argv[*i];

	if (strncmp(a, name, n))
		return false;
	if (a[n] == '=') {
		*val = a + n + 1;
		return true;
	}
	if (a[n] != '\0')
		return false;
	if (*i + 1 >= argc) {
		*missing = true;
		return true;
	}
	*val = argv[++*i];
	return true;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_opts o = { 0 };
	struct sigaction sa;
	struct prof_err err;
	int rc;

	o.frequency = AGENT_DEFAULT_FREQUENCY;
	o.interval_ns = AGENT_DEFAULT_INTERVAL_NS;
	o.proc_root = "/proc";
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false;
		uint64_t u;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			agent_usage(stdout);
			return 0;
		} else if (agent_opt(argc, argv, &i, "--server", &v, &missing)) {
			if (!missing)
				o.server_url = v;
		} else if (agent_opt(argc, argv, &i, "--dump", &v, &missing)) {
			if (!missing)
				o.dump_dir = v;
		} else if (agent_opt(argc, argv, &i, "--frequency", &v, &missing)) {
			if (!missing && (parse_u64(v, &u) || u < 1 || u > 10000)) {
				fprintf(stderr,
					"profd agent: --frequency '%s': want 1..10000 (Hz)\n", v);
				return 2;
			}
			if (!missing)
				o.frequency = (unsigned)u;
		} else if (agent_opt(argc, argv, &i, "--interval", &v, &missing)) {
			if (!missing &&
			    (parse_duration_ns(v, &o.interval_ns) || o.interval_ns < 100000000LL)) {
				fprintf(stderr,
					"profd agent: --interval '%s': want a duration >= 100ms (e.g. 10s)\n",
					v);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--duration", &v, &missing)) {
			if (!missing &&
			    (parse_duration_ns(v, &o.duration_ns) || o.duration_ns <= 0)) {
				fprintf(stderr,
					"profd agent: --duration '%s': want a positive duration (e.g. 30s)\n",
					v);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--log-level", &v, &missing)) {
			if (missing)
				;
			else if (!strcmp(v, "debug"))
				prof_log_set_level(PROF_LOG_DEBUG);
			else if (!strcmp(v, "info"))
				prof_log_set_level(PROF_LOG_INFO);
			else if (!strcmp(v, "warn"))
				prof_log_set_level(PROF_LOG_WARN);
			else if (!strcmp(v, "error"))
				prof_log_set_level(PROF_LOG_ERROR);
			else {
				fprintf(stderr,
					"profd agent: --log-level '%s': want debug, info, warn or error\n",
					v);
				return 2;
			}
		} else {
			fprintf(stderr, "profd agent: unknown option '%s'\n\n", argv[i]);
			agent_usage(stderr);
			return 2;
		}
		if (missing) {
			fprintf(stderr, "profd agent: %s needs a value\n", argv[i]);
			return 2;
		}
	}
	if (!o.server_url && !o.dump_dir) {
		fprintf(stderr, "profd agent: --server URL (or --dump DIR) is required\n\n");
		agent_usage(stderr);
		return 2;
	}

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = agent_on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);

	prof_err_init(&err);
	rc = agent_run(&o, &agent_stop, &err);
	if (rc) {
		fprintf(stderr, "profd agent: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		return 1;
	}
	return 0;
}
