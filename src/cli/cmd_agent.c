// SPDX-License-Identifier: Apache-2.0
/*
 * cmd_agent.c - `profd agent`: sample this host with eBPF and send OTLP
 * profiles to a server (agent/agent.h). SIGINT/SIGTERM stop it cleanly:
 * what was sampled is sent before it exits 0.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "agent/agent.h"
#include "cli/cli.h"
#include "cli/opts.h"

#include <signal.h>
#include <sys/stat.h>

static volatile sig_atomic_t agent_stop;

static void agent_on_signal(int sig)
{
	(void)sig;
	agent_stop = 1;
}

/* Whether @v is 1 to @max bytes without control characters. */
static bool agent_name_ok(const char *v, size_t max)
{
	size_t n = strlen(v);

	for (size_t k = 0; k < n; k++)
		if ((unsigned char)v[k] < 0x20 || v[k] == 0x7f)
			return false;
	return n && n <= max;
}

static void agent_usage(FILE *f)
{
	fprintf(f,
		"usage: profd agent --server URL [options]\n"
		"\n"
		"Samples what every process on this host runs on CPU (eBPF on a per-CPU\n"
		"perf_event cpu-clock; kernel and user stacks, unwound with .eh_frame where\n"
		"code has no frame pointers) and sends OTLP profiles per process every\n"
		"interval to URL/v1development/profiles (protobuf, gzip). Profile types\n"
		"process_cpu:cpu:nanoseconds:cpu:nanoseconds (plus sample counts) and, with\n"
		"--off-cpu, off_cpu:off_cpu:nanoseconds:: (time threads spent blocked).\n"
		"Needs root (or CAP_BPF + CAP_PERFMON) and a kernel with BTF.\n"
		"\n"
		"options:\n"
		"  --server URL       profd server (or OTLP/HTTP receiver), e.g. http://127.0.0.1:4040;\n"
		"                     grpc://HOST:4317 (h2c) or grpcs://HOST:4317 (TLS) for OTLP/gRPC\n"
		"  --frequency HZ     samples per second per CPU (default %d)\n"
		"  --interval DUR     how often to send profiles (default 10s; e.g. 500ms, 2s, 1m)\n"
		"  --duration DUR     stop after this long (default: until SIGINT/SIGTERM)\n"
		"  --off-cpu          also record time threads spend off CPU (sched_switch), with\n"
		"                     the stack they blocked in\n"
		"  --off-cpu-threshold DUR  shortest time off CPU recorded (default 1ms)\n"
		"  --unwind MODE      dwarf (default on x86-64: frame pointers plus .eh_frame\n"
		"                     unwinding of a 16 KiB stack copy) or fp (frame pointers only)\n"
		"  --include-exe NAME sample only processes running executable NAME (file name,\n"
		"                     e.g. postgres; repeatable; with --include-cgroup: either)\n"
		"  --exclude-exe NAME never sample executable NAME (repeatable; wins over includes)\n"
		"  --include-cgroup DIR / --exclude-cgroup DIR  the same by cgroup v2 directory\n"
		"                     (its subtree), e.g. /sys/fs/cgroup/system.slice/nginx.service\n"
		"  --command-line     add process.command_line (may contain secrets: opt-in)\n"
		"  --bearer-token TOKEN       send Authorization: Bearer TOKEN\n"
		"  --bearer-token-file FILE   read the token from FILE (keeps it out of ps)\n"
		"  --dataset NAME     send X-Profd-Dataset: NAME (the server's dataset)\n"
		"  --ca-file FILE     trust the CA certificates in FILE (PEM) for an https:// or\n"
		"                     grpcs:// server (and debuginfo uploads) instead of the system's\n"
		"  --cert-file FILE   client certificate (PEM) for a server that asks for one\n"
		"                     (profd server --tls-client-ca) ...\n"
		"  --key-file FILE    ... and its private key (PEM; default: in --cert-file)\n"
		"  --max-buffer SIZE  cap on compressed data waiting for the server (default 32MiB;\n"
		"                     oldest dropped first and counted), e.g. 8MiB, 512KiB\n"
		"  --max-backoff DUR  longest wait between retries to the server (default 30s)\n"
		"  --metrics-listen HOST:PORT  serve Prometheus metrics on http://HOST:PORT/metrics\n"
		"  --no-interpreters  no Python/Ruby/PHP/Java/Node.js frames: their processes\n"
		"                     show their native frames only\n"
		"  --no-trace-context do not read trace context (Go pprof labels, OpenTelemetry\n"
		"                     thread context): samples carry no trace/span IDs\n"
		"  --trace-label NAME goroutine label NAME becomes a sample attribute (repeatable;\n"
		"                     default: every label; span_id/trace_id are links, span_name\n"
		"                     always an attribute)\n"
		"  --no-trace-labels  no goroutine label but span_name becomes an attribute\n"
		"  --allow-pidns      run outside the host's PID namespace (refused by default:\n"
		"                     samples could not be matched to processes)\n"
		"  --upload-debuginfo / --no-upload-debuginfo  upload the binaries (or their\n"
		"                     separate debug files) behind exported frames whose build ID\n"
		"                     the server lacks, in the background (default: on with --server)\n"
		"  --debug-dir DIR    where separate debug files are, as DIR/.build-id/xx/rest.debug\n"
		"                     (default /usr/lib/debug; also looked for in containers)\n"
		"  --debuginfo-max-size SIZE  larger files are not uploaded (default 1GiB)\n"
		"  --debuginfo-rate SIZE      upload bytes per second (default 4MiB)\n"
		"  --debuginfo-files-per-minute N  upload at most N files a minute (default 30)\n"
		"  --debuginfo-server URL  where to upload (default: --server when it is http(s);\n"
		"                     with a grpc:// --server uploads need this)\n"
		"  --k8s              add pod name, namespace, node, container, owner workload,\n"
		"                     pod labels and annotations (k8s.*) from the node's kubelet\n"
		"  --k8s-kubelet URL  its pod list (default https://127.0.0.1:10250/pods)\n"
		"  --k8s-token-file FILE  bearer token (default: the pod's service-account token)\n"
		"  --k8s-ca-file FILE     CA for the kubelet's certificate (default: the\n"
		"                     service-account ca.crt); --k8s-insecure skips the check\n"
		"  --host-name NAME   host.name of the samples (default: this host's name; in a\n"
		"                     pod, pass the node name: --host-name=$(NODE_NAME))\n"
		"  --dump DIR         also write each request body (OTLP protobuf, uncompressed)\n"
		"                     to DIR/agent-<unix ms>-<seq>.otlp.pb; without --server, only dump\n"
		"  --log-level LEVEL  debug, info (default), warn or error\n"
		"  -h, --help         this text\n",
		AGENT_DEFAULT_FREQUENCY);
}

/*
 * A server URL the exporter can use: http, https, grpc or grpcs, a host, an
 * optional port 1..65535, an optional path. NULL when fine, else why not.
 */
static const char *agent_check_url(const char *url)
{
	static const char *const schemes[] = { "http://", "https://", "grpc://", "grpcs://" };
	const char *host = NULL, *end, *colon;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(schemes) && !host; i++)
		if (!strncmp(url, schemes[i], strlen(schemes[i])))
			host = url + strlen(schemes[i]);
	if (!host)
		return "want http://, https:// (OTLP/HTTP), grpc:// or grpcs:// (OTLP/gRPC)";
	end = host + strcspn(host, "/?#");
	if (end == host)
		return "no host";
	if (host[0] == '[') { /* [IPv6]:port */
		const char *rb = memchr(host, ']', (size_t)(end - host));

		if (!rb)
			return "unclosed '[' in the host";
		if (rb + 1 < end && rb[1] != ':')
			return "junk after ']'";
		colon = rb + 1 < end ? rb + 1 : NULL;
	} else {
		colon = memchr(host, ':', (size_t)(end - host));
	}
	if (colon) {
		unsigned long port = 0;
		const char *p = colon + 1;

		if (p == end)
			return "empty port";
		for (; p < end; p++) {
			if (*p < '0' || *p > '9' || port > 65535)
				return "port must be a number 1..65535";
			port = port * 10 + (unsigned long)(*p - '0');
		}
		if (port < 1 || port > 65535)
			return "port must be a number 1..65535";
		if (colon == host)
			return "no host";
	}
	return NULL;
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

/* "8MiB", "512KiB", "1GiB", "64M", "4096" (bytes) -> bytes; 0 or -EINVAL/-ERANGE. */
static int agent_parse_size(const char *s, uint64_t *out)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = { { "GiB", 1ull << 30 },
		      { "MiB", 1ull << 20 },
		      { "KiB", 1ull << 10 },
		      { "G", 1ull << 30 },
		      { "M", 1ull << 20 },
		      { "K", 1ull << 10 },
		      { "B", 1 } };
	size_t n = strlen(s);
	char num[32];
	uint64_t v, mult = 1;
	int rc;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(units); i++) {
		size_t k = strlen(units[i].suffix);

		if (n > k && !strcmp(s + n - k, units[i].suffix)) {
			mult = units[i].mult;
			n -= k;
			break;
		}
	}
	if (n == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n);
	num[n] = '\0';
	if ((rc = parse_u64(num, &v)))
		return rc;
	if (v > UINT64_MAX / mult)
		return -ERANGE;
	*out = v * mult;
	return 0;
}

/* A debuginfo size option: 1 KiB .. 1 TiB into *@out; else prints why and returns -1. */
static int agent_size_arg(const char *name, const char *v, uint64_t *out)
{
	if (agent_parse_size(v, out) || *out < 1024 || *out > (1ull << 40)) {
		fprintf(stderr, "profd agent: %s '%s': want a size from 1KiB to 1TiB (e.g. 4MiB)\n",
			name, v);
		return -1;
	}
	return 0;
}

/* Append @v to a rule list; false when full. */
static bool agent_add_rule(const char **list, size_t *n, const char *v)
{
	if (*n >= AGENT_MAX_RULES)
		return false;
	list[(*n)++] = v;
	return true;
}

/*
 * Why @path cannot be a PEM file of CA certificates (NULL: it can): not
 * readable, not a regular file, over 16 MiB, or without a complete
 * "-----BEGIN CERTIFICATE-----" ... "-----END CERTIFICATE-----" block
 * (RFC 7468). libcurl would otherwise only fail at each TLS handshake.
 * The reason is a static string or strerror's.
 */
static const char *pem_cert_file_problem(const char *path)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----";
	static const char end[] = "-----END CERTIFICATE-----";
	const char *why = NULL;
	struct stat st;
	char *text;
	FILE *f;
	size_t n;

	f = fopen(path, "rb");
	if (!f)
		return strerror(errno);
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		fclose(f);
		return "not a regular file";
	}
	if (st.st_size > (16 << 20)) {
		fclose(f);
		return "over 16 MiB: not a file of CA certificates";
	}
	text = xmalloc((size_t)st.st_size + 1);
	n = fread(text, 1, (size_t)st.st_size, f);
	text[n] = '\0';
	fclose(f);
	const char *b = memmem(text, n, begin, sizeof(begin) - 1);
	if (!b || !memmem(b, n - (size_t)(b - text), end, sizeof(end) - 1))
		why = "no PEM certificate in it (want -----BEGIN CERTIFICATE----- ... "
		      "-----END CERTIFICATE-----)";
	free(text);
	return why;
}

int cmd_agent(int argc, char **argv)
{
	struct agent_opts o = { 0 };
	struct sigaction sa;
	struct prof_err err;
	char *token = NULL;
	int rc;

	o.frequency = AGENT_DEFAULT_FREQUENCY;
	o.upload_debuginfo = true; /* used only with --server */
	o.interval_ns = AGENT_DEFAULT_INTERVAL_NS;
	o.off_cpu_threshold_ns = AGENT_DEFAULT_OFFCPU_NS;
	o.proc_root = "/proc";
	for (int i = 1; i < argc; i++) {
		const char *v = NULL;
		bool missing = false, ok = true;
		uint64_t u;

		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			agent_usage(stdout);
			free(token);
			return 0;
		} else if (!strcmp(argv[i], "--off-cpu")) {
			o.off_cpu = true;
		} else if (!strcmp(argv[i], "--command-line")) {
			o.command_line = true;
		} else if (!strcmp(argv[i], "--upload-debuginfo")) {
			o.upload_debuginfo = true;
		} else if (!strcmp(argv[i], "--no-interpreters")) {
			o.no_interp = true;
		} else if (!strcmp(argv[i], "--no-trace-context")) {
			o.no_trace_context = true;
		} else if (!strcmp(argv[i], "--no-trace-labels")) {
			o.trace_labels_set = true;
		} else if (!strcmp(argv[i], "--allow-pidns")) {
			o.allow_pidns = true;
		} else if (!strcmp(argv[i], "--no-upload-debuginfo")) {
			o.upload_debuginfo = false;
		} else if (!strcmp(argv[i], "--k8s")) {
			o.k8s = true;
		} else if (!strcmp(argv[i], "--k8s-insecure")) {
			o.k8s_insecure = true;
		} else if (agent_opt(argc, argv, &i, "--k8s-kubelet", &v, &missing)) {
			if (!missing) {
				o.k8s_kubelet = v;
				o.k8s = true;
			}
		} else if (agent_opt(argc, argv, &i, "--host-name", &v, &missing)) {
			if (!missing)
				o.host_name = v;
		} else if (agent_opt(argc, argv, &i, "--k8s-token-file", &v, &missing)) {
			if (!missing)
				o.k8s_token_file = v;
		} else if (agent_opt(argc, argv, &i, "--k8s-ca-file", &v, &missing)) {
			if (!missing)
				o.k8s_ca_file = v;
		} else if (agent_opt(argc, argv, &i, "--debuginfo-server", &v, &missing)) {
			if (!missing)
				o.debuginfo_url = v;
		} else if (agent_opt(argc, argv, &i, "--debug-dir", &v, &missing)) {
			if (!missing)
				o.debug_dir = v;
		} else if (agent_opt(argc, argv, &i, "--debuginfo-max-size", &v, &missing)) {
			if (!missing &&
			    agent_size_arg("--debuginfo-max-size", v, &o.debuginfo_max_bytes)) {
				free(token);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--debuginfo-rate", &v, &missing)) {
			if (!missing && agent_size_arg("--debuginfo-rate", v, &o.debuginfo_rate)) {
				free(token);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--debuginfo-files-per-minute", &v,
				     &missing)) {
			if (!missing && (parse_u64(v, &u) || u < 1 || u > 100000)) {
				fprintf(stderr,
					"profd agent: --debuginfo-files-per-minute '%s': want 1..100000\n",
					v);
				free(token);
				return 2;
			}
			if (!missing)
				o.debuginfo_files_per_min = (unsigned)u;
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
				free(token);
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
				free(token);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--duration", &v, &missing)) {
			if (!missing &&
			    (parse_duration_ns(v, &o.duration_ns) || o.duration_ns <= 0)) {
				fprintf(stderr,
					"profd agent: --duration '%s': want a positive duration (e.g. 30s)\n",
					v);
				free(token);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--off-cpu-threshold", &v, &missing)) {
			if (!missing && (parse_duration_ns(v, &o.off_cpu_threshold_ns) ||
					 o.off_cpu_threshold_ns < 0)) {
				fprintf(stderr,
					"profd agent: --off-cpu-threshold '%s': want a duration (e.g. 1ms)\n",
					v);
				free(token);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--unwind", &v, &missing)) {
			if (!missing && strcmp(v, "dwarf") && strcmp(v, "fp")) {
				fprintf(stderr, "profd agent: --unwind '%s': want dwarf or fp\n",
					v);
				free(token);
				return 2;
			}
			if (!missing)
				o.unwind_fp_only = !strcmp(v, "fp");
		} else if (agent_opt(argc, argv, &i, "--include-exe", &v, &missing)) {
			if (!missing)
				ok = agent_add_rule(o.include_exe, &o.n_include_exe, v);
		} else if (agent_opt(argc, argv, &i, "--trace-label", &v, &missing)) {
			o.trace_labels_set = true;
			if (!missing)
				ok = agent_add_rule(o.trace_labels, &o.n_trace_labels, v);
		} else if (agent_opt(argc, argv, &i, "--exclude-exe", &v, &missing)) {
			if (!missing)
				ok = agent_add_rule(o.exclude_exe, &o.n_exclude_exe, v);
		} else if (agent_opt(argc, argv, &i, "--include-cgroup", &v, &missing)) {
			if (!missing)
				ok = agent_add_rule(o.include_cgroup, &o.n_include_cgroup, v);
		} else if (agent_opt(argc, argv, &i, "--exclude-cgroup", &v, &missing)) {
			if (!missing)
				ok = agent_add_rule(o.exclude_cgroup, &o.n_exclude_cgroup, v);
		} else if (agent_opt(argc, argv, &i, "--bearer-token-file", &v, &missing)) {
			if (!missing) {
				free(token);
				token = cli_read_token(v);
				if (!token) {
					fprintf(stderr,
						"profd agent: --bearer-token-file '%s': cannot read a token from it\n",
						v);
					return 2;
				}
				o.bearer_token = token;
			}
		} else if (agent_opt(argc, argv, &i, "--bearer-token", &v, &missing)) {
			if (!missing)
				o.bearer_token = v;
		} else if (agent_opt(argc, argv, &i, "--dataset", &v, &missing)) {
			if (!missing)
				o.dataset = v;
		} else if (agent_opt(argc, argv, &i, "--ca-file", &v, &missing)) {
			const char *why = missing ? NULL : pem_cert_file_problem(v);

			if (why) {
				fprintf(stderr, "profd agent: --ca-file '%s': %s\n", v, why);
				free(token);
				return 2;
			}
			if (!missing)
				o.ca_file = v;
		} else if (agent_opt(argc, argv, &i, "--cert-file", &v, &missing)) {
			const char *why = missing ? NULL : pem_cert_file_problem(v);

			if (why) {
				fprintf(stderr, "profd agent: --cert-file '%s': %s\n", v, why);
				free(token);
				return 2;
			}
			if (!missing)
				o.cert_file = v;
		} else if (agent_opt(argc, argv, &i, "--key-file", &v, &missing)) {
			if (!missing && access(v, R_OK)) {
				fprintf(stderr, "profd agent: --key-file '%s': %s\n", v,
					strerror(errno));
				free(token);
				return 2;
			}
			if (!missing)
				o.key_file = v;
		} else if (agent_opt(argc, argv, &i, "--max-buffer", &v, &missing)) {
			if (!missing && (agent_parse_size(v, &u) || u < 4096 || u > (4ull << 30))) {
				fprintf(stderr,
					"profd agent: --max-buffer '%s': want a size from 4KiB to 4GiB "
					"(e.g. 32MiB)\n",
					v);
				free(token);
				return 2;
			}
			if (!missing)
				o.max_buffer_bytes = (size_t)u;
		} else if (agent_opt(argc, argv, &i, "--max-backoff", &v, &missing)) {
			if (!missing && (parse_duration_ns(v, &o.max_backoff_ns) ||
					 o.max_backoff_ns < 100000000LL)) {
				fprintf(stderr,
					"profd agent: --max-backoff '%s': want a duration >= 100ms\n",
					v);
				free(token);
				return 2;
			}
		} else if (agent_opt(argc, argv, &i, "--metrics-listen", &v, &missing)) {
			if (!missing)
				o.metrics_listen = v;
		} else if (agent_opt(argc, argv, &i, "--log-level", &v, &missing)) {
			if (!missing && cli_set_log_level("agent", v)) {
				free(token);
				return 2;
			}
		} else {
			fprintf(stderr, "profd agent: unknown option '%s'\n\n", argv[i]);
			agent_usage(stderr);
			free(token);
			return 2;
		}
		if (missing) {
			fprintf(stderr, "profd agent: %s needs a value\n", argv[i]);
			free(token);
			return 2;
		}
		if (!ok) {
			fprintf(stderr, "profd agent: %s: at most %d of each kind\n", argv[i - 1],
				AGENT_MAX_RULES);
			free(token);
			return 2;
		}
	}
	if (o.key_file && !o.cert_file) {
		fprintf(stderr, "profd agent: --key-file needs --cert-file\n");
		free(token);
		return 2;
	}
	if (o.host_name && !agent_name_ok(o.host_name, 255)) {
		fprintf(stderr, "profd agent: --host-name: want 1 to 255 bytes without control "
				"characters\n");
		free(token);
		return 2;
	}
	for (size_t k = 0; k < o.n_trace_labels; k++) {
		const char *l = o.trace_labels[k];

		if (!agent_name_ok(l, 16) || !strcmp(l, "span_id") || !strcmp(l, "trace_id")) {
			fprintf(stderr,
				"profd agent: --trace-label '%.40s': want a goroutine label name of 1 "
				"to 16 bytes without control characters (Go labels are read up to 16 "
				"bytes; span_id and trace_id are always links)\n",
				agent_name_ok(l, 4096) ? l : "?");
			free(token);
			return 2;
		}
	}
	if (o.n_trace_labels && o.no_trace_context)
		fprintf(stderr,
			"profd agent: --trace-label has no effect with --no-trace-context\n");
	if (!o.server_url && !o.dump_dir) {
		fprintf(stderr, "profd agent: --server URL (or --dump DIR) is required\n\n");
		agent_usage(stderr);
		free(token);
		return 2;
	}
	const char *why;
	const char *const urls[][2] = { { "--server", o.server_url },
					{ "--debuginfo-server", o.debuginfo_url },
					{ "--k8s-kubelet", o.k8s_kubelet } };
	for (size_t k = 0; k < PROF_ARRAY_SIZE(urls); k++) {
		if (!urls[k][1])
			continue;
		why = agent_check_url(urls[k][1]);
		/* Only the export speaks gRPC; uploads and the kubelet are HTTP. */
		if (k > 0 && strncmp(urls[k][1], "http://", 7) &&
		    strncmp(urls[k][1], "https://", 8))
			why = "want http:// or https://";
		if (!why)
			continue;
		fprintf(stderr, "profd agent: %s '%s': %s\n", urls[k][0], urls[k][1], why);
		free(token);
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
	if (token) {
		explicit_bzero(token, strlen(token));
		free(token);
	}
	if (rc) {
		fprintf(stderr, "profd agent: %s\n", err.msg[0] ? err.msg : prof_strerror(rc));
		return 1;
	}
	return 0;
}
