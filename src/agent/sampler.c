// SPDX-License-Identifier: Apache-2.0
/* sampler.c - BPF program lifecycle and ring buffer polling; see sampler.h. */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/sampler.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profile.skel.h"

#define SAMPLER_RINGBUF_MIN (256u << 10)
#define SAMPLER_RINGBUF_MAX (64u << 20)

struct agent_sampler {
	struct agent_sampler_opts o;
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	VEC(struct bpf_link *) links;
	VEC(int) pfds;
	int ncpus_possible;
	unsigned ncpus_attached;
};

static int sampler_libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[1024];
	size_t n;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n > 0 && line[n - 1] == '\n')
		line[--n] = '\0';
	if (level == LIBBPF_WARN)
		log_warn("agent libbpf msg=\"%s\"", line);
	else
		log_debug("agent libbpf msg=\"%s\"", line);
	return 0;
}

static int sampler_on_ringbuf(void *ctx, void *data, size_t size)
{
	struct agent_sampler *s = ctx;

	/* The ring buffer is input: check the size before reading. */
	if (size < sizeof(struct profile_event))
		return 0;
	s->o.on_event(s->o.ctx, data);
	return 0;
}

static size_t sampler_ringbuf_size(const struct agent_sampler_opts *o, int ncpus)
{
	size_t want = (size_t)o->frequency * (size_t)ncpus * sizeof(struct profile_event);
	size_t sz = SAMPLER_RINGBUF_MIN;

	while (sz < want && sz < SAMPLER_RINGBUF_MAX)
		sz *= 2;
	return sz;
}

static const char *sampler_priv_hint(int rc)
{
	if (rc == -EPERM || rc == -EACCES)
		return " (profd agent needs root, or CAP_BPF + CAP_PERFMON)";
	return "";
}

static int sampler_attach(struct agent_sampler *s, struct prof_err *err)
{
	uint64_t period = 1000000000ull / s->o.frequency;

	for (int cpu = 0; cpu < s->ncpus_possible; cpu++) {
		struct perf_event_attr attr;
		struct bpf_link *link;
		int fd, rc;

		memset(&attr, 0, sizeof(attr));
		attr.size = sizeof(attr);
		attr.type = PERF_TYPE_SOFTWARE;
		attr.config = PERF_COUNT_SW_CPU_CLOCK;
		attr.sample_period = period; /* cpu-clock counts nanoseconds */
		fd = (int)syscall(__NR_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0) {
			rc = -errno;
			if (rc == -ENODEV || rc == -ENOENT)
				continue; /* possible but offline CPU */
			return prof_err_set(err, rc, -1, "perf_event_open(cpu-clock, cpu %d): %s%s",
					    cpu, strerror(-rc), sampler_priv_hint(rc));
		}
		VEC_PUSH(&s->pfds, fd);
		link = bpf_program__attach_perf_event(s->skel->progs.profile_sample, fd);
		if (!link) {
			rc = -errno;
			return prof_err_set(err, rc ? rc : -EINVAL, -1,
					    "attaching the BPF program to cpu %d: %s%s", cpu,
					    strerror(rc ? -rc : EINVAL), sampler_priv_hint(rc));
		}
		VEC_PUSH(&s->links, link);
	}
	if (s->links.n == 0)
		return prof_err_set(err, -ENOENT, -1, "no online CPU to attach to");
	s->ncpus_attached = (unsigned)s->links.n;
	return 0;
}

int agent_sampler_open(const struct agent_sampler_opts *opts, struct agent_sampler **out,
		       struct prof_err *err)
{
	struct agent_sampler *s;
	size_t rbsz;
	int rc;

	*out = NULL;
	if (!opts || !opts->on_event || opts->frequency < 1 || opts->frequency > 10000)
		return prof_err_set(err, -EINVAL, -1, "sampling frequency must be 1..10000 Hz");
	if (opts->ringbuf_bytes &&
	    (opts->ringbuf_bytes < 4096 || (opts->ringbuf_bytes & (opts->ringbuf_bytes - 1))))
		return prof_err_set(err, -EINVAL, -1,
				    "ring buffer size must be a power of two >= 4096");

	libbpf_set_print(sampler_libbpf_print);
	s = xcalloc(1, sizeof(*s));
	s->o = *opts;
	s->ncpus_possible = libbpf_num_possible_cpus();
	if (s->ncpus_possible <= 0) {
		rc = prof_err_set(err, s->ncpus_possible ? s->ncpus_possible : -EINVAL, -1,
				  "cannot count the CPUs: %s", strerror(-s->ncpus_possible));
		goto fail;
	}

	s->skel = profile_bpf__open();
	if (!s->skel) {
		rc = -errno ? -errno : -EINVAL;
		prof_err_set(err, rc, -1, "opening the BPF object: %s", strerror(-rc));
		goto fail;
	}
	s->skel->rodata->agent_tgid = (__u32)getpid();
	rbsz = opts->ringbuf_bytes ? opts->ringbuf_bytes
				   : sampler_ringbuf_size(opts, s->ncpus_possible);
	rc = bpf_map__set_max_entries(s->skel->maps.events, (__u32)rbsz);
	if (rc) {
		prof_err_set(err, rc, -1, "sizing the ring buffer: %s", strerror(-rc));
		goto fail;
	}
	rc = profile_bpf__load(s->skel);
	if (rc) {
		const char *hint = sampler_priv_hint(rc);

		if (!*hint && access("/sys/kernel/btf/vmlinux", R_OK) != 0)
			hint = " (this kernel has no BTF at /sys/kernel/btf/vmlinux; profd needs "
			       "CONFIG_DEBUG_INFO_BTF=y and Linux >= 5.8)";
		prof_err_set(err, rc, -1, "loading the BPF program: %s%s", strerror(-rc), hint);
		goto fail;
	}
	rc = sampler_attach(s, err);
	if (rc)
		goto fail;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), sampler_on_ringbuf, s, NULL);
	if (!s->rb) {
		rc = -errno ? -errno : -ENOMEM;
		prof_err_set(err, rc, -1, "creating the ring buffer reader: %s", strerror(-rc));
		goto fail;
	}
	log_info("agent sampling cpus=%zu frequency_hz=%u ringbuf_bytes=%zu", s->links.n,
		 opts->frequency, rbsz);
	*out = s;
	return 0;
fail:
	agent_sampler_free(s);
	return rc;
}

void agent_sampler_stop(struct agent_sampler *s)
{
	for (size_t i = 0; i < s->links.n; i++)
		bpf_link__destroy(s->links.v[i]);
	for (size_t i = 0; i < s->pfds.n; i++)
		close(s->pfds.v[i]);
	VEC_FREE(&s->links);
	VEC_FREE(&s->pfds);
}

void agent_sampler_free(struct agent_sampler *s)
{
	if (!s)
		return;
	agent_sampler_stop(s);
	ring_buffer__free(s->rb);
	profile_bpf__destroy(s->skel);
	free(s);
}

int agent_sampler_poll(struct agent_sampler *s, int timeout_ms)
{
	int n = 0, m;

	/*
	 * The program wakes us only when the buffer is half full (see
	 * profile.bpf.c), so a poll that times out must still read what came.
	 */
	if (timeout_ms > 0) {
		n = ring_buffer__poll(s->rb, timeout_ms);
		if (n == -EINTR)
			n = 0;
		if (n < 0)
			return n;
	}
	m = ring_buffer__consume(s->rb);
	if (m == -EINTR)
		m = 0;
	return m < 0 ? m : n + m;
}

unsigned agent_sampler_ncpus(const struct agent_sampler *s)
{
	return s->ncpus_attached;
}

int agent_sampler_read_stats(struct agent_sampler *s, uint64_t out[PROFILE_STAT_MAX])
{
	uint64_t *vals = xcalloc((size_t)s->ncpus_possible, sizeof(*vals));
	int rc = 0;

	for (__u32 k = 0; k < PROFILE_STAT_MAX; k++) {
		out[k] = 0;
		rc = bpf_map__lookup_elem(s->skel->maps.stats, &k, sizeof(k), vals,
					  (size_t)s->ncpus_possible * sizeof(*vals), 0);
		if (rc)
			break;
		for (int c = 0; c < s->ncpus_possible; c++)
			out[k] += vals[c];
	}
	free(vals);
	return rc;
}

const char *agent_sampler_stat_name(enum profile_stat st)
{
	switch (st) {
	case PROFILE_STAT_SAMPLES:
		return "samples";
	case PROFILE_STAT_IDLE:
		return "idle";
	case PROFILE_STAT_SELF:
		return "self";
	case PROFILE_STAT_RINGBUF_FULL:
		return "ringbuf_full";
	case PROFILE_STAT_KSTACK_ERR:
		return "kstack_err";
	case PROFILE_STAT_USTACK_ERR:
		return "ustack_err";
	case PROFILE_STAT_MAX:
		break;
	}
	return "unknown";
}
