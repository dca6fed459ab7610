// SPDX-License-Identifier: Apache-2.0
/* agent.c - the agent's main loop; see agent.h. */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/parse.h"
#include "agent/agent.h"
#include "agent/collect.h"
#include "agent/debuginfo.h"
#include "agent/elfinfo.h"
#include "agent/export.h"
#include "agent/interp.h"
#include "agent/tracectx.h"
#include "agent/jit.h"
#include "agent/k8s.h"
#include "agent/metrics.h"
#include "agent/procs.h"
#include "agent/sampler.h"
#include "agent/unwind.h"
#include "symbolize/kallsyms.h"

#include <linux/magic.h>
#include <malloc.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#define AGENT_POLL_MS		   100
#define AGENT_DRAIN_MS		   5000L /* time allowed at exit to send what is queued */
#define AGENT_MAX_ELFFILES	   4096
#define AGENT_METRICS_EVERY_NS	   1000000000LL
#define AGENT_MAX_SAMPLES	   200000 /* per interval: bounds the collector's memory */
#define AGENT_METRICS_TOP_BINARIES 20	  /* executables with their own /metrics series */

struct agent_loop {
	struct agent_collect *collect;
	struct agent_procs *procs;
	struct agent_interp *interp;	 /* NULL: --no-interpreters */
	struct agent_jit *jit;		 /* NULL: --no-interpreters */
	struct agent_tracectx *tracectx; /* NULL: --no-trace-context */
	int64_t mono_to_unix_ns;	 /* add to a CLOCK_MONOTONIC time to get unix time */
};

/* Everything /metrics and the interval log line report. */
struct agent_parts {
	struct agent_sampler *s;
	struct agent_collect *collect;
	struct agent_procs *procs;
	struct agent_unwinder *unwinder;
	struct agent_export *x;
	struct agent_elfinfo_cache *elfcache;
	struct agent_debuginfo *di;	 /* NULL: no debuginfo upload */
	struct agent_k8s *k8s;		 /* NULL: no --k8s */
	struct agent_interp *interp;	 /* NULL: no interpreter frames */
	struct agent_jit *jit;		 /* NULL: no JIT runtime frames */
	struct agent_tracectx *tracectx; /* NULL: no trace context */
};

/* The initial PID namespace's inode (PROC_PID_INIT_INO, include/linux/proc_ns.h). */
#define AGENT_INIT_PIDNS_INO 0xEFFFFFFCu

/*
 * 0 when the agent runs in the host's (initial) PID namespace. BPF sees
 * host pids while /proc shows the namespace's, so elsewhere no sample
 * could be matched to its process's mappings and names: refused unless
 * the user says otherwise (--allow-pidns).
 */
static int agent_check_pidns(struct prof_err *err)
{
	struct stat st;

	if (stat("/proc/self/ns/pid", &st) || st.st_ino == AGENT_INIT_PIDNS_INO)
		return 0; /* no namespace file (very old kernel): nothing to tell */
	return prof_err_set(err, -EPERM, -1,
			    "agent: not in the host's PID namespace (pid:[%llu]): the kernel "
			    "reports host pids, so samples could not be matched to processes; "
			    "run with the host's PID namespace (docker/podman --pid=host, "
			    "Kubernetes hostPID: true), or pass --allow-pidns to run anyway",
			    (unsigned long long)st.st_ino);
}

/* kernel.kptr_restrict as the file says it ("?" when unreadable); static buffer. */
static const char *agent_kptr_restrict(void)
{
	static char v[16];
	FILE *f = fopen("/proc/sys/kernel/kptr_restrict", "re");

	snprintf(v, sizeof(v), "?");
	if (f) {
		if (fgets(v, sizeof(v), f))
			v[strcspn(v, "\n")] = '\0';
		fclose(f);
	}
	return v;
}

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void agent_on_event(void *ctx, const struct profile_event *e, size_t size)
{
	struct agent_loop *l = ctx;

	(void)size; /* checked by the sampler against e->flags */
	agent_collect_add(l->collect, e, (int64_t)e->time_ns + l->mono_to_unix_ns);
}

static void agent_on_proc(void *ctx, const struct profile_proc_event *pe)
{
	struct agent_loop *l = ctx;
	char comm[PROFILE_COMM_LEN + 1], file[PROFILE_PATH_LEN + 1];

	/* Ring buffer bytes are input: terminate the strings ourselves. */
	snprintf(comm, sizeof(comm), "%.*s", PROFILE_COMM_LEN, pe->comm);
	snprintf(file, sizeof(file), "%.*s", PROFILE_PATH_LEN, pe->filename);
	if (pe->kind == PROFILE_EV_EXEC) {
		struct agent_exec ex = { file,	      comm,	   pe->img,   pe->ppid,
					 pe->exe_dev, pe->exe_ino, pe->mnt_ns };

		agent_procs_on_exec(l->procs, pe->pid, &ex, (int64_t)pe->time_ns);
	} else {
		agent_procs_on_exit(l->procs, pe->pid, (int64_t)pe->time_ns);
	}
	/* A new image may run another runtime or none; a gone process none. */
	if (l->interp)
		agent_interp_forget(l->interp, pe->pid);
	agent_jit_forget(l->jit, pe->pid);
	if (l->tracectx)
		agent_tracectx_forget(l->tracectx, pe->pid);
}

static void agent_on_ctx(void *ctx, const struct profile_ctx_event *ce)
{
	struct agent_loop *l = ctx;

	if (l->tracectx)
		agent_tracectx_add_event(l->tracectx, ce);
}

/* agent_tracectx_opts callbacks. */
static int agent_ctx_install(void *ctx, uint32_t pid, const struct profile_ctx_proc *p)
{
	struct agent_parts *a = ctx;

	return a->s ? agent_sampler_ctx_set(a->s, pid, p) : -EAGAIN;
}

static int agent_ctx_remove(void *ctx, uint32_t pid)
{
	struct agent_parts *a = ctx;

	return a->s ? agent_sampler_ctx_del(a->s, pid) : 0;
}

static void agent_on_interp(void *ctx, const struct profile_interp_event *ie)
{
	struct agent_loop *l = ctx;

	if (l->interp)
		agent_interp_add_event(l->interp, ie);
}

/* agent_interp_opts callbacks: the sampler opens after the collector. */
static int agent_interp_install(void *ctx, uint32_t pid, const struct profile_interp_proc *p)
{
	struct agent_parts *a = ctx;

	return a->s ? agent_sampler_interp_set(a->s, pid, p) : -EAGAIN;
}

static int agent_interp_remove(void *ctx, uint32_t pid)
{
	struct agent_parts *a = ctx;

	return a->s ? agent_sampler_interp_del(a->s, pid) : 0;
}

static void agent_on_libs(void *ctx, const struct profile_libs_event *le)
{
	struct agent_loop *l = ctx;

	agent_procs_on_libs(l->procs, le, (int64_t)le->time_ns);
}

static void agent_on_kstack(void *ctx, const struct profile_kstack_event *ke)
{
	struct agent_loop *l = ctx;

	agent_collect_add_kstack(l->collect, ke);
}

/* Self-measurement: CPU ms used, peak RSS and current RSS. */
static void agent_self_usage(int64_t *cpu_ms, long *maxrss_kb, long *rss_kb)
{
	struct rusage ru;
	FILE *f;
	long resident = 0;

	*cpu_ms = 0;
	*maxrss_kb = 0;
	*rss_kb = 0;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		*cpu_ms = ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
			  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
		*maxrss_kb = ru.ru_maxrss;
	}
	/* statm: "size resident shared ..." in pages; the second field is RSS. */
	f = fopen("/proc/self/statm", "re");
	if (f) {
		char line[256], *sp;
		uint64_t v;

		if (fgets(line, sizeof(line), f) && (sp = strchr(line, ' '))) {
			char *end = sp + 1 + strcspn(sp + 1, " \n");

			*end = '\0';
			if (parse_u64(sp + 1, &v) == 0)
				resident = (long)v;
		}
		fclose(f);
		*rss_kb = resident * (sysconf(_SC_PAGESIZE) / 1024);
	}
}

static void metric_head(struct buf *b, const char *name, const char *type, const char *help)
{
	buf_addf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void metric_u64(struct buf *b, const char *name, const char *labels, uint64_t v)
{
	buf_addf(b, "%s%s%s%s %" PRIu64 "\n", name, labels ? "{" : "", labels ? labels : "",
		 labels ? "}" : "", v);
}

/* One series of a family: its labels without braces (NULL: none) and value. */
struct metric_row {
	const char *labels;
	uint64_t v;
};

static void metric_family(struct buf *b, const char *name, const char *type, const char *help,
			  const struct metric_row *rows, size_t n)
{
	metric_head(b, name, type, help);
	for (size_t i = 0; i < n; i++)
		metric_u64(b, name, rows[i].labels, rows[i].v);
}

/*
 * AGENT_METRIC(b, name, type, help, { labels, value }...): a family's HELP and
 * TYPE lines, then one series a row, in order (Prometheus text format
 * 0.0.4). A family with series made in a loop adds them with metric_u64.
 */
#define AGENT_METRIC(b, name, type, help, ...)                                                 \
	metric_family((b), (name), (type), (help), (const struct metric_row[]){ __VA_ARGS__ }, \
		      sizeof((const struct metric_row[]){ __VA_ARGS__ }) /                     \
			      sizeof(struct metric_row))

/* A label value: printable ASCII, with \ and " escaped, others as '?'. */
static void metric_label_value(char *out, size_t outsz, const char *v)
{
	size_t o = 0;

	for (; *v && o + 3 < outsz; v++) {
		unsigned char ch = (unsigned char)*v;

		if (ch == '\\' || ch == '"')
			out[o++] = '\\';
		out[o++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
	}
	out[o] = '\0';
}

/*
 * Per-executable unwind counters (collect.h, agent_binary_stats): the
 * AGENT_METRICS_TOP_BINARIES executables with the most samples, the rest
 * as exe="other", so the series count stays bounded.
 */
static void agent_render_binary_metrics(struct buf *b, const struct agent_parts *a)
{
	struct agent_binary_stats top[AGENT_METRICS_TOP_BINARIES], other;
	size_t n = agent_collect_binary_stats(a->collect, top, AGENT_METRICS_TOP_BINARIES, &other);
	char exe[2 * AGENT_BINARY_NAME_MAX], lb[512];

	metric_head(b, "profd_agent_binary_samples_total", "counter",
		    "Samples per executable (top by samples, the rest as exe=\"other\").");
	for (size_t i = 0; i <= n; i++) {
		const struct agent_binary_stats *s = i < n ? &top[i] : &other;

		metric_label_value(exe, sizeof(exe), s->exe);
		snprintf(lb, sizeof(lb), "exe=\"%s\",build_id=\"%s\"", exe, s->build_id);
		metric_u64(b, "profd_agent_binary_samples_total", lb, s->samples);
	}
	metric_head(
		b, "profd_agent_binary_stacks_total", "counter",
		"User stacks per executable by result: complete, truncated (marked), "
		"no_user_stack; dwarf_<reason>: how CFI unwinding ended when it stopped early.");
	for (size_t i = 0; i <= n; i++) {
		const struct agent_binary_stats *s = i < n ? &top[i] : &other;
		const struct {
			const char *what;
			uint64_t v;
		} rows[] = { { "complete", s->complete },
			     { "truncated", s->truncated },
			     { "no_user_stack", s->no_user_stack } };

		metric_label_value(exe, sizeof(exe), s->exe);
		for (size_t k = 0; k < PROF_ARRAY_SIZE(rows); k++) {
			snprintf(lb, sizeof(lb), "exe=\"%s\",build_id=\"%s\",result=\"%s\"", exe,
				 s->build_id, rows[k].what);
			metric_u64(b, "profd_agent_binary_stacks_total", lb, rows[k].v);
		}
		for (int k = 1; k < AGENT_UNWIND_END_MAX; k++) {
			if (!s->ends[k])
				continue; /* reasons that never happened: no series */
			snprintf(lb, sizeof(lb), "exe=\"%s\",build_id=\"%s\",result=\"dwarf_%s\"",
				 exe, s->build_id, agent_unwind_end_name(k));
			metric_u64(b, "profd_agent_binary_stacks_total", lb, s->ends[k]);
		}
	}
}

/*
 * Interpreter frames per (runtime, executable, version) (interp.h,
 * agent_interp_stats): processes, and samples by how their naming ended.
 */
static void agent_render_interp_metrics(struct buf *b, struct agent_interp *ip)
{
	struct agent_interp_stats st[AGENT_INTERP_MAX_STATS];
	size_t n = agent_interp_get_stats(ip, st, AGENT_INTERP_MAX_STATS);
	char exe[2 * sizeof(st[0].exe)], ver[2 * sizeof(st[0].version)], why[2 * 96];
	char lb[sizeof(exe) + sizeof(ver) + sizeof(why) + 128];

	metric_head(b, "profd_agent_interp_processes_total", "counter",
		    "Processes found running an interpreter, by runtime, executable, version "
		    "and whether its frames are supported (reason says why not).");
	for (size_t i = 0; i < n; i++) {
		metric_label_value(exe, sizeof(exe), st[i].exe);
		metric_label_value(ver, sizeof(ver), st[i].version);
		metric_label_value(why, sizeof(why), st[i].reason);
		snprintf(
			lb, sizeof(lb),
			"runtime=\"%.15s\",exe=\"%s\",version=\"%s\",supported=\"%s\",reason=\"%s\"",
			st[i].runtime, exe, ver, st[i].supported ? "true" : "false", why);
		metric_u64(b, "profd_agent_interp_processes_total", lb, st[i].procs);
	}
	metric_head(b, "profd_agent_interp_samples_total", "counter",
		    "Samples of interpreter processes by result: named (every interpreter frame "
		    "named), read_failed (while the process lived), exited (the process "
		    "had exited when named), stale, corrupt (native frames kept), no_event "
		    "(an interpreter-loop frame without interpreter frames).");
	for (size_t i = 0; i < n; i++) {
		const struct {
			const char *what;
			uint64_t v;
		} rows[] = { { "sent", st[i].samples },
			     { "named", st[i].named },
			     { "read_failed", st[i].read_failed },
			     { "exited", st[i].exited },
			     { "stale", st[i].stale },
			     { "corrupt", st[i].corrupt },
			     { "no_event", st[i].no_event } };

		if (!st[i].supported)
			continue;
		metric_label_value(exe, sizeof(exe), st[i].exe);
		metric_label_value(ver, sizeof(ver), st[i].version);
		for (size_t k = 0; k < PROF_ARRAY_SIZE(rows); k++) {
			snprintf(lb, sizeof(lb),
				 "runtime=\"%.15s\",exe=\"%s\",version=\"%s\",result=\"%s\"",
				 st[i].runtime, exe, ver, rows[k].what);
			metric_u64(b, "profd_agent_interp_samples_total", lb, rows[k].v);
		}
	}
}

/*
 * JIT runtime frames per (runtime, executable, version) (jit.h,
 * agent_jit_stats): processes, and frames by how stepping and naming ended.
 */
static void agent_render_jit_metrics(struct buf *b, struct agent_jit *j)
{
	struct agent_jit_stats st[AGENT_INTERP_MAX_STATS];
	size_t n = agent_jit_get_stats(j, st, AGENT_INTERP_MAX_STATS);
	char exe[2 * sizeof(st[0].exe)], ver[2 * sizeof(st[0].version)], why[2 * 96];
	char lb[sizeof(exe) + sizeof(ver) + sizeof(why) + 128];

	metric_head(b, "profd_agent_jit_processes_total", "counter",
		    "Processes found running a JIT runtime, by runtime, executable, version "
		    "and whether its frames are supported (reason says why not).");
	for (size_t i = 0; i < n; i++) {
		metric_label_value(exe, sizeof(exe), st[i].exe);
		metric_label_value(ver, sizeof(ver), st[i].version);
		metric_label_value(why, sizeof(why), st[i].reason);
		snprintf(
			lb, sizeof(lb),
			"runtime=\"%.15s\",exe=\"%s\",version=\"%s\",supported=\"%s\",reason=\"%s\"",
			st[i].runtime, exe, ver, st[i].supported ? "true" : "false", why);
		metric_u64(b, "profd_agent_jit_processes_total", lb, st[i].procs);
	}
	metric_head(
		b, "profd_agent_jit_runtime_frames_total", "counter",
		"Frames in JIT runtimes' code by result: stepped (unwound by the runtime), "
		"step_failed (frame pointer used instead), named, stale, read_failed, exited, corrupt "
		"(native name kept).");
	for (size_t i = 0; i < n; i++) {
		const struct {
			const char *what;
			uint64_t v;
		} rows[] = { { "stepped", st[i].frames },
			     { "step_failed", st[i].step_failed },
			     { "named", st[i].named },
			     { "stale", st[i].stale },
			     { "read_failed", st[i].read_failed },
			     { "exited", st[i].exited },
			     { "corrupt", st[i].corrupt } };

		if (!st[i].supported)
			continue;
		metric_label_value(exe, sizeof(exe), st[i].exe);
		metric_label_value(ver, sizeof(ver), st[i].version);
		for (size_t k = 0; k < PROF_ARRAY_SIZE(rows); k++) {
			snprintf(lb, sizeof(lb),
				 "runtime=\"%.15s\",exe=\"%s\",version=\"%s\",result=\"%s\"",
				 st[i].runtime, exe, ver, rows[k].what);
			metric_u64(b, "profd_agent_jit_runtime_frames_total", lb, rows[k].v);
		}
	}
	metric_head(b, "profd_agent_jit_samples_total", "counter",
		    "Samples with frames in a JIT runtime's code: all (result=\"sent\") and "
		    "those whose every such frame was named (result=\"named\").");
	for (size_t i = 0; i < n; i++) {
		if (!st[i].supported)
			continue;
		metric_label_value(exe, sizeof(exe), st[i].exe);
		metric_label_value(ver, sizeof(ver), st[i].version);
		snprintf(lb, sizeof(lb),
			 "runtime=\"%.15s\",exe=\"%s\",version=\"%s\",result=\"sent\"",
			 st[i].runtime, exe, ver);
		metric_u64(b, "profd_agent_jit_samples_total", lb, st[i].samples);
		snprintf(lb, sizeof(lb),
			 "runtime=\"%.15s\",exe=\"%s\",version=\"%s\",result=\"named\"",
			 st[i].runtime, exe, ver);
		metric_u64(b, "profd_agent_jit_samples_total", lb, st[i].samples_named);
	}
}

/* The Prometheus text page (metrics.h). */
static void agent_render_metrics(struct buf *b, const struct agent_parts *a)
{
	uint64_t bst[PROFILE_STAT_MAX] = { 0 };
	struct agent_collect_stats cst;
	struct agent_procs_stats pst;
	struct agent_unwind_stats ust = { 0 };
	struct agent_export_stats xst;
	int64_t cpu_ms;
	long maxrss_kb, rss_kb;
	char lb[128];

	if (a->s)
		agent_sampler_read_stats(a->s, bst);
	agent_collect_get_stats(a->collect, &cst);
	agent_procs_get_stats(a->procs, &pst);
	if (a->unwinder)
		agent_unwind_get_stats(a->unwinder, &ust);
	agent_export_get_stats(a->x, &xst);
	agent_self_usage(&cpu_ms, &maxrss_kb, &rss_kb);

	AGENT_METRIC(
		b, "profd_agent_samples_total", "counter",
		"Samples the BPF programs sent, by kind (cpu: on-CPU ticks; off_cpu: times away).",
		{ "kind=\"cpu\"", bst[PROFILE_STAT_SAMPLES] },
		{ "kind=\"off_cpu\"", bst[PROFILE_STAT_OFFCPU_SAMPLES] });
	AGENT_METRIC(b, "profd_agent_lost_samples_total", "counter",
		     "Samples lost, by reason (BPF ring buffer or map full, collector bound, "
		     "stale_image: the process exec'd before its sample was read).",
		     { "reason=\"ringbuf_full\"", bst[PROFILE_STAT_RINGBUF_FULL] },
		     { "reason=\"offcpu_ringbuf_full\"", bst[PROFILE_STAT_OFFCPU_RINGBUF_FULL] },
		     { "reason=\"offcpu_map_full\"", bst[PROFILE_STAT_OFFCPU_MAP_FULL] },
		     { "reason=\"collector_bound\"", cst.dropped },
		     { "reason=\"stale_image\"", cst.stale_image },
		     { "reason=\"proc_event_ringbuf_full\"", bst[PROFILE_STAT_PROC_RINGBUF_FULL] });
	metric_head(
		b, "profd_agent_bpf_events_total", "counter",
		"Every BPF program counter (per-CPU, summed), by name (src/agent/bpf/profile.h).");
	for (int i = 0; i < PROFILE_STAT_MAX; i++) {
		snprintf(lb, sizeof(lb), "event=\"%s\"", agent_sampler_stat_name(i));
		metric_u64(b, "profd_agent_bpf_events_total", lb, bst[i]);
	}
	AGENT_METRIC(b, "profd_agent_unwind_failures_total", "counter",
		     "Stacks or frames the agent could not unwind fully, by reason.",
		     { "reason=\"kstack_error\"", bst[PROFILE_STAT_KSTACK_ERR] },
		     { "reason=\"ustack_error\"", bst[PROFILE_STAT_USTACK_ERR] },
		     { "reason=\"stack_copy_error\"", bst[PROFILE_STAT_STACK_COPY_ERR] },
		     { "reason=\"truncated\"", cst.truncated },
		     { "reason=\"unknown_mapping\"", cst.unknown_frames });
	for (int i = 1; i < AGENT_UNWIND_END_MAX; i++) {
		snprintf(lb, sizeof(lb), "reason=\"dwarf_%s\"", agent_unwind_end_name(i));
		metric_u64(b, "profd_agent_unwind_failures_total", lb, ust.ends[i]);
	}
	AGENT_METRIC(
		b, "profd_agent_unwound_stacks_total", "counter",
		"User stacks unwound from stack copies with CFI, and those complete to the outermost frame.",
		{ "result=\"all\"", cst.dwarf_stacks },
		{ "result=\"complete\"", cst.dwarf_complete });
	agent_render_binary_metrics(b, a);
	if (a->interp)
		agent_render_interp_metrics(b, a->interp);
	if (a->jit)
		agent_render_jit_metrics(b, a->jit);
	AGENT_METRIC(
		b, "profd_agent_jit_frames_total", "counter",
		"User frames in JIT code, all and those named (by the JIT runtime or a perf map).",
		{ "result=\"all\"", cst.jit_frames }, { "result=\"named\"", cst.jit_named });
	AGENT_METRIC(b, "profd_agent_export_requests_total", "counter", "Export requests queued.",
		     { NULL, xst.requests });
	AGENT_METRIC(b, "profd_agent_export_sent_total", "counter",
		     "Export requests the server accepted.", { NULL, xst.sent });
	AGENT_METRIC(b, "profd_agent_export_errors_total", "counter",
		     "Failed export attempts (each retry counts).", { NULL, xst.failures });
	AGENT_METRIC(
		b, "profd_agent_export_dropped_total", "counter",
		"Export requests given up, by reason.",
		{ "reason=\"buffer_full\"", xst.dropped_full },
		{ "reason=\"rejected\"", xst.dropped_rejected },
		{ "reason=\"shutdown\"", xst.dropped - xst.dropped_full - xst.dropped_rejected });
	AGENT_METRIC(b, "profd_agent_export_buffer_bytes", "gauge",
		     "Compressed bytes waiting to be sent.", { NULL, xst.queued_bytes });
	AGENT_METRIC(b, "profd_agent_export_buffer_limit_bytes", "gauge",
		     "Cap on the bytes waiting to be sent (--max-buffer).",
		     { NULL, xst.max_queue_bytes });
	AGENT_METRIC(b, "profd_agent_export_buffer_requests", "gauge",
		     "Requests waiting to be sent.", { NULL, xst.queued });
	if (a->k8s) {
		struct agent_k8s_stats kst;

		agent_k8s_get_stats(a->k8s, &kst);
		AGENT_METRIC(b, "profd_agent_k8s_fetches_total", "counter",
			     "Pod lists read from the kubelet (--k8s), by outcome.",
			     { "outcome=\"ok\"", kst.fetches },
			     { "outcome=\"error\"", kst.fetch_errors });
		AGENT_METRIC(b, "profd_agent_k8s_pods", "gauge", "Pods in the last pod list.",
			     { NULL, kst.pods });
		AGENT_METRIC(b, "profd_agent_k8s_lookups_total", "counter",
			     "Profiles of pod processes given pod metadata, by outcome.",
			     { "outcome=\"found\"", kst.lookups - kst.misses },
			     { "outcome=\"unknown_pod\"", kst.misses });
		AGENT_METRIC(b, "profd_agent_k8s_skipped_total", "gauge",
			     "Labels and annotations of the last pod list left out by the bounds.",
			     { NULL, kst.skipped });
	}
	if (a->di) {
		struct agent_debuginfo_stats dst;

		agent_debuginfo_get_stats(a->di, &dst);
		AGENT_METRIC(b, "profd_agent_debuginfo_uploads_total", "counter",
			     "Files uploaded to the server's debuginfo store (accepted), by kind.",
			     { "file=\"binary\"", dst.uploads - dst.debug_files },
			     { "file=\"debug_file\"", dst.debug_files });
		AGENT_METRIC(b, "profd_agent_debuginfo_upload_bytes_total", "counter",
			     "Bytes of the files uploaded.", { NULL, dst.upload_bytes });
		AGENT_METRIC(
			b, "profd_agent_debuginfo_failures_total", "counter",
			"Debuginfo checks and uploads that failed (transport error, 5xx; retried later).",
			{ NULL, dst.failures });
		AGENT_METRIC(b, "profd_agent_debuginfo_build_ids_total", "counter",
			     "Build IDs of exported binaries, by what became of them.",
			     { "outcome=\"offered\"", dst.offered },
			     { "outcome=\"present\"", dst.present },
			     { "outcome=\"uploaded\"", dst.uploads },
			     { "outcome=\"no_file\"", dst.no_file },
			     { "outcome=\"too_big\"", dst.too_big },
			     { "outcome=\"rejected\"", dst.rejected },
			     { "outcome=\"dropped_full\"", dst.dropped_full });
		AGENT_METRIC(b, "profd_agent_debuginfo_rate_limited_total", "counter",
			     "Uploads that waited for the files-per-minute limit.",
			     { NULL, dst.rate_limited });
		AGENT_METRIC(b, "profd_agent_debuginfo_queue", "gauge",
			     "Build IDs waiting to be checked or uploaded.", { NULL, dst.queued });
	}
	AGENT_METRIC(b, "profd_agent_processes", "gauge", "Processes in the agent's cache.",
		     { NULL, pst.entries });
	AGENT_METRIC(b, "profd_agent_proc_reads_total", "counter",
		     "Reads of /proc/PID/maps, by outcome and trigger.",
		     { "what=\"maps\"", pst.maps_reads },
		     { "what=\"maps_failed\"", pst.maps_failed },
		     { "what=\"at_exec\"", pst.exec_reads },
		     { "what=\"maps_rebuilt_from_events\"", pst.maps_rebuilt },
		     { "what=\"exec_rate_limited\"", pst.exec_skipped },
		     { "what=\"image_changed\"", pst.image_rereads },
		     { "what=\"exec_relative_resolved\"", pst.exec_relative },
		     { "what=\"inherited_from_parent\"", pst.inherited });
	AGENT_METRIC(
		b, "profd_agent_loader_events_total", "counter",
		"Dynamic loader link maps received, and mappings they added that /proc had not shown.",
		{ "what=\"events\"", pst.libs_events },
		{ "what=\"mappings_added\"", pst.libs_mapped });
	metric_head(b, "process_cpu_seconds_total", "counter",
		    "CPU time the agent used (user + system).");
	buf_addf(b, "process_cpu_seconds_total %.3f\n", (double)cpu_ms / 1000.0);
	AGENT_METRIC(b, "process_resident_memory_bytes", "gauge", "The agent's resident memory.",
		     { NULL, (uint64_t)rss_kb * 1024 });
	AGENT_METRIC(b, "process_max_resident_memory_bytes", "gauge",
		     "The agent's peak resident memory.", { NULL, (uint64_t)maxrss_kb * 1024 });
}

/*
 * Offer the binaries behind @p's frames for debuginfo upload: every
 * mapping with a file path and a build ID (pseudo mappings have neither).
 */
static void agent_offer_debuginfo(struct agent_debuginfo *di, const struct model_profile *p)
{
	int64_t pid = -1;

	/* collect.c adds process.pid as a number. */
	for (size_t i = 0; i < p->attrs.n && pid < 0; i++)
		if (!p->attrs.v[i].str && !strcmp(model_str(p, p->attrs.v[i].key), "process.pid"))
			pid = p->attrs.v[i].num;
	if (pid <= 0 || pid > UINT32_MAX)
		return;
	for (size_t i = 1; i < p->mappings.n; i++) {
		const struct model_mapping *m = &p->mappings.v[i];
		const char *id = model_str(p, m->build_id), *path = model_str(p, m->filename);

		if (id[0] && path[0] == '/')
			agent_debuginfo_offer(di, id, path, (uint32_t)pid);
	}
}

static void agent_flush(struct agent_parts *a, int64_t start_unix, int64_t dur_ns)
{
	uint64_t bst[PROFILE_STAT_MAX] = { 0 };
	struct agent_collect_stats cst;
	struct agent_export_stats xst;
	struct agent_procs_stats pst;
	struct model_profile **profiles;
	size_t n, nsamples = 0;
	int64_t cpu_ms;
	long maxrss_kb, rss_kb;

	n = agent_collect_take(a->collect, start_unix, dur_ns, &profiles);
	for (size_t i = 0; i < n; i++)
		nsamples += profiles[i]->samples.n;
	if (n)
		agent_export_submit(a->x, (const struct model_profile *const *)profiles, n);
	for (size_t i = 0; a->di && i < n; i++)
		agent_offer_debuginfo(a->di, profiles[i]);
	agent_collect_profiles_free(profiles, n);
	/* The interval's profiles are gone: give their pages back (RSS budget, issue 8). */
	malloc_trim(0);

	if (a->s)
		agent_sampler_read_stats(a->s, bst);
	agent_collect_get_stats(a->collect, &cst);
	agent_export_get_stats(a->x, &xst);
	agent_procs_get_stats(a->procs, &pst);
	agent_self_usage(&cpu_ms, &maxrss_kb, &rss_kb);
	log_info("agent interval profiles=%zu samples=%zu"
		 " | since start: bpf samples=%" PRIu64 " offcpu=%" PRIu64 " idle=%" PRIu64
		 " self=%" PRIu64 " filtered=%" PRIu64 " ringbuf_full=%" PRIu64
		 " kstack_err=%" PRIu64 " ustack_err=%" PRIu64 " | dropped=%" PRIu64
		 " stale_image=%" PRIu64 " maps_failed=%" PRIu64 " unknown_frames=%" PRIu64
		 " jit=%" PRIu64 "/%" PRIu64 " truncated=%" PRIu64 " dwarf=%" PRIu64 "/%" PRIu64
		 " procs=%" PRIu64 " | export sent=%" PRIu64 " failures=%" PRIu64
		 " dropped=%" PRIu64 " queued_bytes=%" PRIu64 " | self_cpu_ms=%" PRId64
		 " rss_kb=%ld maxrss_kb=%ld",
		 n, nsamples, bst[PROFILE_STAT_SAMPLES], bst[PROFILE_STAT_OFFCPU_SAMPLES],
		 bst[PROFILE_STAT_IDLE], bst[PROFILE_STAT_SELF], bst[PROFILE_STAT_FILTERED],
		 bst[PROFILE_STAT_RINGBUF_FULL], bst[PROFILE_STAT_KSTACK_ERR],
		 bst[PROFILE_STAT_USTACK_ERR], cst.dropped, cst.stale_image, cst.maps_failed,
		 cst.unknown_frames, cst.jit_named, cst.jit_frames, cst.truncated,
		 cst.dwarf_complete, cst.dwarf_stacks, pst.entries, xst.sent, xst.failures,
		 xst.dropped, xst.queued_bytes, cpu_ms, rss_kb, maxrss_kb);
}

static void agent_publish_metrics(struct agent_metrics *m, const struct agent_parts *a)
{
	struct buf b;

	if (!m)
		return;
	buf_init(&b, 1u << 20);
	agent_render_metrics(&b, a);
	agent_metrics_publish(m, b.p ? b.p : "", b.len);
	buf_release(&b);
}

/* Cgroup v2 directories -> their ids (the directory's inode number). */
static int agent_cgroup_ids(const char *const *paths, size_t n, uint64_t *ids, struct prof_err *err)
{
	for (size_t i = 0; i < n; i++) {
		struct statfs sfs;
		struct stat st;

		if (statfs(paths[i], &sfs) != 0 || stat(paths[i], &st) != 0)
			return prof_err_set(err, -errno, -1, "cgroup '%s': %s", paths[i],
					    strerror(errno));
		if (sfs.f_type != CGROUP2_SUPER_MAGIC || !S_ISDIR(st.st_mode))
			return prof_err_set(
				err, -EINVAL, -1,
				"cgroup '%s' is not a cgroup v2 directory (BPF sees the "
				"v2 hierarchy only; e.g. /sys/fs/cgroup/<path> or "
				"/sys/fs/cgroup/unified/<path>)",
				paths[i]);
		ids[i] = (uint64_t)st.st_ino;
	}
	return 0;
}

int agent_run(const struct agent_opts *opts, volatile sig_atomic_t *stop, struct prof_err *err)
{
	struct agent_collect_opts co = { 0 };
	struct agent_export_opts xo = { 0 };
	struct agent_sampler_opts so = { 0 };
	struct agent_procs_opts po = { 0 };
	struct agent_parts a = { 0 };
	struct agent_metrics *metrics = NULL;
	struct sym_kallsyms *ksyms = NULL;
	struct agent_loop loop = { 0 };
	uint64_t inc_cg[AGENT_MAX_RULES], exc_cg[AGENT_MAX_RULES];
	struct prof_err kerr;
	char host[256];
	int64_t t0, next_flush, next_metrics, interval_start_unix, deadline = 0;
	int rc, run_rc = 0;

	if (!opts || opts->frequency < 1 || opts->frequency > 10000 || opts->interval_ns <= 0 ||
	    opts->duration_ns < 0 || opts->off_cpu_threshold_ns < 0 ||
	    opts->n_include_exe > AGENT_MAX_RULES || opts->n_exclude_exe > AGENT_MAX_RULES ||
	    opts->n_include_cgroup > AGENT_MAX_RULES || opts->n_exclude_cgroup > AGENT_MAX_RULES)
		return prof_err_set(err, -EINVAL, -1,
				    "frequency must be 1..10000 Hz, the interval positive and at "
				    "most %d rules of each kind",
				    AGENT_MAX_RULES);
	if (!opts->allow_pidns && (rc = agent_check_pidns(err)))
		return rc;
	rc = agent_cgroup_ids(opts->include_cgroup, opts->n_include_cgroup, inc_cg, err);
	if (!rc)
		rc = agent_cgroup_ids(opts->exclude_cgroup, opts->n_exclude_cgroup, exc_cg, err);
	if (rc)
		return rc;

	/*
	 * One malloc arena: the agent's threads (sender, uploader, /metrics)
	 * allocate little, and each extra arena keeps its own free pages
	 * resident (bench/results/agent.md).
	 */
	mallopt(M_ARENA_MAX, 1);
	if (opts->host_name && *opts->host_name)
		snprintf(host, sizeof(host), "%s", opts->host_name);
	else if (gethostname(host, sizeof(host)) != 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';

	prof_err_init(&kerr);
	rc = sym_kallsyms_load("/proc/kallsyms", &ksyms, &kerr);
	if (rc) {
		log_warn("agent: kernel frames will not be symbolized: /proc/kallsyms: %s",
			 kerr.msg[0] ? kerr.msg : prof_strerror(rc));
		ksyms = NULL;
	} else if (!sym_kallsyms_count(ksyms)) {
		log_warn(
			"agent: /proc/kallsyms shows every address as 0 (kernel.kptr_restrict=%s): "
			"kernel frames will be sent unnamed; run as root with kptr_restrict 0 or 1",
			agent_kptr_restrict());
	}

	a.elfcache = agent_elfinfo_cache_new(AGENT_MAX_ELFFILES);
	po.proc_root = opts->proc_root ? opts->proc_root : "/proc";
	po.elfcache = a.elfcache;
	po.command_line = opts->command_line;
	rc = agent_procs_new(&po, &a.procs);
	if (rc) {
		prof_err_set(err, rc, -1, "agent: bad process cache options");
		goto out;
	}
#if defined(__x86_64__)
	if (!opts->unwind_fp_only)
		a.unwinder = agent_unwinder_new(0);
#endif
	co.period_ns = 1000000000LL / opts->frequency;
	co.host_name = host;
	co.proc_root = po.proc_root;
	co.ksyms = ksyms;
	co.elfcache = a.elfcache;
	co.procs = a.procs;
	co.unwinder = a.unwinder;
	co.max_samples = AGENT_MAX_SAMPLES;
	if (!opts->no_interp) {
		struct agent_interp_opts io = { 0 };

		io.install = agent_interp_install;
		io.remove = agent_interp_remove;
		io.ctx = &a;
		rc = agent_interp_new(&io, &a.interp);
		if (rc) {
			prof_err_set(err, rc, -1, "agent: bad interpreter options");
			goto out;
		}
		co.interp = a.interp;
		if (a.unwinder) {
			/* JIT frames are stepped in the stack copy: no copy, no JIT frames. */
			struct agent_jit_opts jo = { 0 };

			rc = agent_jit_new(&jo, &a.jit);
			if (rc) {
				prof_err_set(err, rc, -1, "agent: bad JIT options");
				goto out;
			}
			agent_unwinder_set_jit(a.unwinder, a.jit);
			co.jit = a.jit;
		}
	}
	if (!opts->no_trace_context) {
		struct agent_tracectx_opts to = { 0 };

		to.install = agent_ctx_install;
		to.remove = agent_ctx_remove;
		to.allow = opts->trace_labels_set ? opts->trace_labels : NULL;
		to.nallow = opts->n_trace_labels;
		to.ctx = &a;
		rc = agent_tracectx_new(&to, &a.tracectx);
		if (rc) {
			prof_err_set(err, rc, -1, "agent: bad trace context options");
			goto out;
		}
		co.tracectx = a.tracectx;
	}
	if (opts->k8s) {
		struct agent_k8s_opts ko = { .url = opts->k8s_kubelet,
					     .token_file = opts->k8s_token_file,
					     .ca_file = opts->k8s_ca_file,
					     .insecure = opts->k8s_insecure };

		rc = agent_k8s_new(&ko, &a.k8s, err);
		if (rc)
			goto out;
		co.k8s = a.k8s;
	}
	rc = agent_collect_new(&co, &a.collect);
	if (rc) {
		prof_err_set(err, rc, -1, "agent: bad collector options");
		goto out;
	}

	loop.collect = a.collect;
	loop.procs = a.procs;
	loop.interp = a.interp;
	loop.jit = a.jit;
	loop.tracectx = a.tracectx;
	so.frequency = opts->frequency;
	so.off_cpu = opts->off_cpu;
	so.off_cpu_min_ns = (uint64_t)opts->off_cpu_threshold_ns;
	so.stack_copy = a.unwinder != NULL;
	so.include_exe = opts->include_exe;
	so.n_include_exe = opts->n_include_exe;
	so.exclude_exe = opts->exclude_exe;
	so.n_exclude_exe = opts->n_exclude_exe;
	so.include_cgroup = inc_cg;
	so.n_include_cgroup = opts->n_include_cgroup;
	so.exclude_cgroup = exc_cg;
	so.n_exclude_cgroup = opts->n_exclude_cgroup;
	so.on_event = agent_on_event;
	so.on_proc = agent_on_proc;
	so.on_kstack = agent_on_kstack;
	so.on_libs = agent_on_libs;
	so.on_interp = agent_on_interp;
	so.on_ctx = agent_on_ctx;
	so.ctx = &loop;
	rc = agent_sampler_open(&so, &a.s, err);
	if (rc)
		goto out;
	/* Events wait in the ring buffer until the first poll, after this. */
	xo.server_url = opts->server_url;
	xo.dump_dir = opts->dump_dir;
	xo.max_queue_bytes = opts->max_buffer_bytes;
	xo.max_backoff_ms = (long)(opts->max_backoff_ns / 1000000);
	xo.bearer_token = opts->bearer_token;
	xo.dataset = opts->dataset;
	xo.ca_file = opts->ca_file;
	xo.cert_file = opts->cert_file;
	xo.key_file = opts->key_file;
	rc = agent_export_new(&xo, &a.x, err);
	if (rc)
		goto out;
	const char *di_url = opts->debuginfo_url;

	if (!di_url && opts->server_url && strncmp(opts->server_url, "grpc", 4))
		di_url = opts->server_url;
	if (opts->upload_debuginfo && opts->server_url && !di_url)
		log_info("agent: debuginfo upload is off: a grpc:// server has no debuginfo API "
			 "(--debuginfo-server http://HOST:4040 turns it on)");
	if (opts->upload_debuginfo && di_url) {
		struct agent_debuginfo_opts dio = { 0 };

		dio.server_url = di_url;
		dio.bearer_token = opts->bearer_token;
		dio.dataset = opts->dataset;
		dio.ca_file = opts->ca_file;
		dio.cert_file = opts->cert_file;
		dio.key_file = opts->key_file;
		dio.proc_root = po.proc_root;
		dio.debug_dir = opts->debug_dir;
		dio.max_file_bytes = opts->debuginfo_max_bytes;
		dio.max_bytes_per_sec = opts->debuginfo_rate;
		dio.max_files_per_min = opts->debuginfo_files_per_min;
		rc = agent_debuginfo_new(&dio, &a.di, err);
		if (rc)
			goto out;
	}
	if (opts->metrics_listen) {
		rc = agent_metrics_start(opts->metrics_listen, &metrics, err);
		if (rc)
			goto out;
		log_info("agent metrics listening=%s port=%u", opts->metrics_listen,
			 agent_metrics_port(metrics));
	}

	t0 = mono_ns();
	interval_start_unix = prof_now_ns();
	next_flush = t0 + opts->interval_ns;
	next_metrics = t0;
	if (opts->duration_ns)
		deadline = t0 + opts->duration_ns;
	log_info("agent started server=%s dump=%s frequency_hz=%u interval_ms=%" PRId64
		 " off_cpu=%d unwind=%s upload_debuginfo=%d host=%s",
		 opts->server_url ? opts->server_url : "-", opts->dump_dir ? opts->dump_dir : "-",
		 opts->frequency, opts->interval_ns / 1000000, opts->off_cpu,
		 a.unwinder ? "dwarf+fp" : "fp", a.di != NULL, host);

	while (!*stop) {
		int64_t now;

		agent_procs_tick(a.procs, mono_ns());
		loop.mono_to_unix_ns = prof_now_ns() - mono_ns();
		rc = agent_sampler_poll(a.s, AGENT_POLL_MS);
		if (rc < 0) {
			/* Still send what we have, then report the failure. */
			prof_err_set(err, rc, -1, "polling the BPF ring buffer failed: %s",
				     strerror(-rc));
			log_error("agent: %s", err ? err->msg : "polling the ring buffer failed");
			run_rc = rc;
			break;
		}
		now = mono_ns();
		if (deadline && now >= deadline)
			break;
		if (now >= next_metrics) {
			/* Once a second: metrics, and the unwinder gives back what it mapped. */
			agent_publish_metrics(metrics, &a);
			if (a.unwinder)
				agent_unwinder_trim(a.unwinder);
			next_metrics = now + AGENT_METRICS_EVERY_NS;
		}
		if (now >= next_flush) {
			int64_t now_unix = prof_now_ns();

			agent_flush(&a, interval_start_unix, now_unix - interval_start_unix);
			interval_start_unix = now_unix;
			next_flush += opts->interval_ns;
			if (next_flush <= now)
				next_flush = now + opts->interval_ns;
		}
	}
	/* Stop: detach, take what the ring buffer still holds, send the rest. */
	log_info("agent stopping");
	agent_sampler_stop(a.s);
	loop.mono_to_unix_ns = prof_now_ns() - mono_ns();
	agent_sampler_poll(a.s, 0);
	agent_flush(&a, interval_start_unix, prof_now_ns() - interval_start_unix);
	rc = run_rc;
out:
	agent_metrics_stop(metrics);
	agent_sampler_free(a.s);
	agent_debuginfo_close(a.di);
	agent_export_close(a.x, AGENT_DRAIN_MS);
	agent_collect_free(a.collect);
	agent_interp_free(a.interp);
	agent_jit_free(a.jit);
	agent_tracectx_free(a.tracectx);
	agent_k8s_free(a.k8s);
	agent_unwinder_free(a.unwinder);
	agent_procs_free(a.procs);
	agent_elfinfo_cache_free(a.elfcache);
	sym_kallsyms_free(ksyms);
	return rc;
}
