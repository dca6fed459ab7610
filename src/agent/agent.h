/* SPDX-License-Identifier: Apache-2.0 */
/*
 * agent.h - `profd agent`: sample every process on this host with eBPF
 * (sampler.h), build profiles per process per interval (collect.h):
 * on-CPU, and off-CPU when asked; send them as OTLP profiles (export.h);
 * keep per-process facts across intervals (procs.h), fed by the kernel's
 * exec/exit events; serve counters on /metrics (metrics.h).
 *
 * Main loop (libbpf-bootstrap bootstrap.c): poll the ring buffer with a
 * 100 ms timeout, check the caller's stop flag, publish /metrics once a second, and
 * at each interval boundary hand the interval's profiles to the
 * exporter. On stop: read what is left in the ring buffer, detach, send
 * the last interval and whatever is queued (within a deadline), return 0.
 */
#ifndef PROF_AGENT_AGENT_H
#define PROF_AGENT_AGENT_H

#include "base/compat.h"
#include "base/err.h"

#include <signal.h>

#define AGENT_DEFAULT_FREQUENCY	  19
#define AGENT_DEFAULT_INTERVAL_NS (10 * 1000000000LL)

#define AGENT_DEFAULT_OFFCPU_NS	  1000000LL /* --off-cpu-threshold 1ms */
#define AGENT_MAX_RULES		  64	    /* --include-* / --exclude-* of each kind */

/**
 * struct agent_opts - what `profd agent` was asked to do. Strings are
 * borrowed for the duration of agent_run.
 * @server_url:     base URL of the profd server (or any OTLP/HTTP profiles
 *                  receiver), NULL to only dump
 * @dump_dir:       also write each request body there, or NULL
 * @frequency:      samples per second per CPU
 * @interval_ns:    export period
 * @duration_ns:    stop after this long (0 = until stopped)
 * @proc_root:      "/proc" unless testing
 * @off_cpu:        also profile time threads spend off CPU
 * @off_cpu_threshold_ns: shortest time off CPU recorded
 * @unwind_fp_only: no stack copies: frame-pointer user stacks only
 * @include_exe, @exclude_exe: executable names (n_* of each, <= AGENT_MAX_RULES)
 * @include_cgroup, @exclude_cgroup: cgroup v2 directories (paths)
 * @command_line:   add process.command_line
 * @bearer_token, @dataset: sent with every request, or NULL
 * @ca_file:        CA certificates (PEM) that sign the https:// / grpcs://
 *                  server's certificate (export and debuginfo upload),
 *                  instead of the system's; NULL = the system's
 * @cert_file, @key_file: client certificate and key (PEM) for a server
 *                  that asks for one (export and debuginfo upload), or NULL
 * @max_buffer_bytes: export queue cap (0 = 32 MiB)
 * @max_backoff_ns: longest wait between export retries (0 = 30 s)
 * @metrics_listen: "HOST:PORT" for /metrics, or NULL
 * @upload_debuginfo: upload the binaries behind exported frames whose
 *                  build ID the server lacks (debuginfo.h; needs @server_url)
 * @debug_dir:      root of separate debug files (NULL = /usr/lib/debug)
 * @debuginfo_max_bytes, @debuginfo_rate, @debuginfo_files_per_min: upload
 *                  caps: file size (bytes), bytes per second, files per
 *                  minute (0 = the defaults of debuginfo.h)
 * @debuginfo_url:  profd server for uploads (NULL = @server_url when it is
 *                  http(s); a grpc:// server has no debuginfo API, so
 *                  uploads are off unless this is given)
 * @no_interp:      no interpreter frames (interp.h): Python, Ruby and PHP
 *                  processes show their native frames only
 * @no_trace_context: do not read trace context (tracectx.h)
 * @trace_labels:   goroutine labels that become sample attributes (@n_trace_labels
 *                  of them) when @trace_labels_set; every label otherwise
 * @allow_pidns:    run outside the host's PID namespace (refused otherwise:
 *                  samples carry host pids that such an agent cannot read)
 * @k8s:            add pod metadata from the node's kubelet (k8s.h)
 * @k8s_kubelet, @k8s_token_file, @k8s_ca_file, @k8s_insecure: its pods
 *                  URL, credentials and TLS (NULL: k8s.h's defaults)
 * @host_name:      host.name of every sample (NULL: gethostname(2); in a
 *                  pod that is the pod's name, so manifests pass the node
 *                  name from the downward API)
 */
struct agent_opts {
	const char *server_url;
	const char *dump_dir;
	unsigned frequency;
	int64_t interval_ns;
	int64_t duration_ns;
	const char *proc_root;
	bool off_cpu;
	int64_t off_cpu_threshold_ns;
	bool unwind_fp_only;
	const char *include_exe[AGENT_MAX_RULES], *exclude_exe[AGENT_MAX_RULES];
	size_t n_include_exe, n_exclude_exe;
	const char *include_cgroup[AGENT_MAX_RULES], *exclude_cgroup[AGENT_MAX_RULES];
	size_t n_include_cgroup, n_exclude_cgroup;
	bool command_line;
	const char *bearer_token;
	const char *dataset;
	const char *ca_file;
	const char *cert_file, *key_file;
	size_t max_buffer_bytes;
	int64_t max_backoff_ns;
	const char *metrics_listen;
	bool upload_debuginfo;
	const char *debug_dir;
	uint64_t debuginfo_max_bytes, debuginfo_rate;
	unsigned debuginfo_files_per_min;
	const char *debuginfo_url;
	bool no_interp;
	bool no_trace_context;
	bool trace_labels_set;
	const char *trace_labels[AGENT_MAX_RULES];
	size_t n_trace_labels;
	bool allow_pidns;
	bool k8s;
	const char *k8s_kubelet, *k8s_token_file, *k8s_ca_file;
	bool k8s_insecure;
	const char *host_name;
};

/**
 * agent_run() - run until *@stop becomes non-zero (set it from a signal
 * handler) or the duration ends. Returns 0, or a negative code when the
 * agent could not start (no privileges, no BTF, bad options; @err says
 * what and what to do). Failures while running (a server that is down,
 * a process that exits) are logged and do not stop the agent.
 */
int agent_run(const struct agent_opts *opts, volatile sig_atomic_t *stop, struct prof_err *err);

#endif
