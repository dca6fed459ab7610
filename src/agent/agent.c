// SPDX-License-Identifier: Apache-2.0
/* agent.c - the agent's main loop; see agent.h. */
#include "base/compat.h"
#include "base/log.h"
#include "base/parse.h"
#include "agent/agent.h"
#include "agent/collect.h"
#include "agent/elfinfo.h"
#include "agent/export.h"
#include "agent/sampler.h"
#include "symbolize/kallsyms.h"

#include <sys/resource.h>
#include <unistd.h>

#define AGENT_POLL_MS	   100
#define AGENT_DRAIN_MS	   5000L /* time allowed at exit to send what is queued */
#define AGENT_MAX_ELFFILES 4096

struct agent_loop {
	struct agent_collect *collect;
	int64_t mono_to_unix_ns; /* add to a CLOCK_MONOTONIC time to get unix time */
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void agent_on_event(void *ctx, const struct profile_event *e)
{
	struct agent_loop *l = ctx;

	agent_collect_add(l->collect, e, (int64_t)e->time_ns + l->mono_to_unix_ns);
}

/* Self-measurement for the flush log line: CPU ms used and peak RSS. */
static void agent_self_usage(int64_t *cpu_ms, long *maxrss_kb)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0) {
		*cpu_ms = 0;
		*maxrss_kb = 0;
		return;
	}
	*cpu_ms = ((int64_t)ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000 +
		  (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000;
	*maxrss_kb = ru.ru_maxrss;
}

static void agent_flush(struct agent_collect *collect, struct agent_export *x,
			struct agent_sampler *s, int64_t start_unix, int64_t dur_ns)
{
	uint64_t bst[PROFILE_STAT_MAX] = { 0 };
	struct agent_collect_stats cst;
	struct agent_export_stats xst;
	struct model_profile **profiles;
	size_t n, nsamples = 0;
	int64_t cpu_ms;
	long rss_kb;

	n = agent_collect_take(collect, start_unix, dur_ns, &profiles);
	for (size_t i = 0; i < n; i++)
		nsamples += profiles[i]->samples.n;
	if (n)
		agent_export_submit(x, (const struct model_profile *const *)profiles, n);
	agent_collect_profiles_free(profiles, n);

	if (s)
		agent_sampler_read_stats(s, bst);
	agent_collect_get_stats(collect, &cst);
	agent_export_get_stats(x, &xst);
	agent_self_usage(&cpu_ms, &rss_kb);
	log_info("agent interval profiles=%zu samples=%zu"
		 " | since start: bpf samples=%" PRIu64 " idle=%" PRIu64 " self=%" PRIu64
		 " ringbuf_full=%" PRIu64 " kstack_err=%" PRIu64 " ustack_err=%" PRIu64
		 " | dropped=%" PRIu64 " maps_failed=%" PRIu64 " unknown_frames=%" PRIu64
		 " | export sent=%" PRIu64 " failures=%" PRIu64 " dropped=%" PRIu64
		 " queued_bytes=%" PRIu64 " | self_cpu_ms=%" PRId64 " maxrss_kb=%ld",
		 n, nsamples, bst[PROFILE_STAT_SAMPLES], bst[PROFILE_STAT_IDLE],
		 bst[PROFILE_STAT_SELF], bst[PROFILE_STAT_RINGBUF_FULL],
		 bst[PROFILE_STAT_KSTACK_ERR], bst[PROFILE_STAT_USTACK_ERR], cst.dropped,
		 cst.maps_failed, cst.unknown_frames, xst.sent, xst.failures, xst.dropped,
		 xst.queued_bytes, cpu_ms, rss_kb);
}

int agent_run(const struct agent_opts *opts, volatile sig_atomic_t *stop, struct prof_err *err)
{
	struct agent_collect_opts co = { 0 };
	struct agent_export_opts xo = { 0 };
	struct agent_sampler_opts so = { 0 };
	struct agent_elfinfo_cache *elfcache = NULL;
	struct sym_kallsyms *ksyms = NULL;
	struct agent_collect *collect = NULL;
	struct agent_export *x = NULL;
	struct agent_sampler *s = NULL;
	struct agent_loop loop = { 0 };
	struct prof_err kerr;
	char host[256];
	int64_t t0, next_flush, interval_start_unix, deadline = 0;
	int rc, run_rc = 0;

	if (!opts || opts->frequency < 1 || opts->frequency > 10000 || opts->interval_ns <= 0 ||
	    opts->duration_ns < 0)
		return prof_err_set(err, -EINVAL, -1,
				    "frequency must be 1..10000 Hz and the interval positive");

	if (gethostname(host, sizeof(host)) != 0)
		host[0] = '\0';
	host[sizeof(host) - 1] = '\0';

	prof_err_init(&kerr);
	rc = sym_kallsyms_load("/proc/kallsyms", &ksyms, &kerr);
	if (rc) {
		log_warn("agent: kernel frames will not be symbolized: /proc/kallsyms: %s",
			 kerr.msg[0] ? kerr.msg : prof_strerror(rc));
		ksyms = NULL;
	}

	elfcache = agent_elfinfo_cache_new(AGENT_MAX_ELFFILES);
	co.period_ns = 1000000000LL / opts->frequency;
	co.host_name = host;
	co.proc_root = opts->proc_root ? opts->proc_root : "/proc";
	co.ksyms = ksyms;
	co.elfcache = elfcache;
	rc = agent_collect_new(&co, &collect);
	if (rc) {
		prof_err_set(err, rc, -1, "agent: bad collector options");
		goto out;
	}

	loop.collect = collect;
	so.frequency = opts->frequency;
	so.on_event = agent_on_event;
	so.ctx = &loop;
	rc = agent_sampler_open(&so, &s, err);
	if (rc)
		goto out;
	/* Events wait in the ring buffer until the first poll, after this. */
	xo.server_url = opts->server_url;
	xo.dump_dir = opts->dump_dir;
	rc = agent_export_new(&xo, &x, err);
	if (rc)
		goto out;

	t0 = mono_ns();
	interval_start_unix = prof_now_ns();
	next_flush = t0 + opts->interval_ns;
	if (opts->duration_ns)
		deadline = t0 + opts->duration_ns;
	log_info("agent started server=%s dump=%s frequency_hz=%u interval_ms=%" PRId64 " host=%s",
		 opts->server_url ? opts->server_url : "-", opts->dump_dir ? opts->dump_dir : "-",
		 opts->frequency, opts->interval_ns / 1000000, host);

	while (!*stop) {
		int64_t now;

		loop.mono_to_unix_ns = prof_now_ns() - mono_ns();
		rc = agent_sampler_poll(s, AGENT_POLL_MS);
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
		if (now >= next_flush) {
			int64_t now_unix = prof_now_ns();

			agent_flush(collect, x, s, interval_start_unix,
				    now_unix - interval_start_unix);
			interval_start_unix = now_unix;
			next_flush += opts->interval_ns;
			if (next_flush <= now)
				next_flush = now + opts->interval_ns;
		}
	}
	/* Stop: detach, take what the ring buffer still holds, send the rest. */
	log_info("agent stopping");
	agent_sampler_stop(s);
	loop.mono_to_unix_ns = prof_now_ns() - mono_ns();
	agent_sampler_poll(s, 0);
	agent_flush(collect, x, s, interval_start_unix, prof_now_ns() - interval_start_unix);
	rc = run_rc;
out:
	agent_sampler_free(s);
	agent_export_close(x, AGENT_DRAIN_MS);
	agent_collect_free(collect);
	agent_elfinfo_cache_free(elfcache);
	sym_kallsyms_free(ksyms);
	return rc;
}
