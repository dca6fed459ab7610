// SPDX-License-Identifier: Apache-2.0
/* sampler.c - BPF program lifecycle and ring buffer polling; see sampler.h. */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "agent/sampler.h"

#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "profile.skel.h"

#define SAMPLER_RINGBUF_MIN  (256u << 10)
#define SAMPLER_RINGBUF_MAX  (16u << 20)
#define SAMPLER_OFFCPU_LRU   16384
#define SAMPLER_VERDICT_LRU  16384
#define SAMPLER_INTERP_PROCS 4096
#define SAMPLER_CTX_PROCS    4096
/* The dynamic loader whose r_debug profile_libs reads (x86-64 glibc). */
#define SAMPLER_LDSO "/lib64/ld-linux-x86-64.so.2"

struct agent_sampler {
	struct agent_sampler_opts o;
	struct profile_bpf *skel;
	struct ring_buffer *rb;
	VEC(struct bpf_link *) links;  /* perf_event links, one per CPU */
	VEC(struct bpf_link *) tlinks; /* tracepoints */
	VEC(int) pfds;
	int ncpus_possible;
	unsigned ncpus_attached;
	char ldso[4096]; /* resolved loader path, "" when the link-map hook is off */
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
	__u32 kind;

	/* The ring buffer is input: check the size before reading. */
	if (size < sizeof(kind))
		return 0;
	memcpy(&kind, data, sizeof(kind));
	switch (kind) {
	case PROFILE_EV_CPU:
	case PROFILE_EV_OFFCPU: {
		const struct profile_event *e = data;

		if (size < sizeof(*e) ||
		    ((e->flags & PROFILE_F_STACK_COPY) && size < sizeof(struct profile_event_ext)))
			return 0;
		s->o.on_event(s->o.ctx, e, size);
		break;
	}
	case PROFILE_EV_OFFCPU_KSTACK:
		if (size >= sizeof(struct profile_kstack_event) && s->o.on_kstack)
			s->o.on_kstack(s->o.ctx, data);
		break;
	case PROFILE_EV_INTERP: {
		/* Sent with only the frames used (interp_send). */
		const struct profile_interp_event *ie = data;
		size_t head = offsetof(struct profile_interp_event, frames);

		if (size >= head && ie->n <= PROFILE_INTERP_MAX_FRAMES &&
		    size >= head + ie->n * sizeof(ie->frames[0]) && s->o.on_interp)
			s->o.on_interp(s->o.ctx, ie);
		break;
	}
	case PROFILE_EV_CTX:
		if (size >= sizeof(struct profile_ctx_event) && s->o.on_ctx)
			s->o.on_ctx(s->o.ctx, data);
		break;
	case PROFILE_EV_LIBS:
		if (size >= sizeof(struct profile_libs_event) && s->o.on_libs)
			s->o.on_libs(s->o.ctx, data);
		break;
	case PROFILE_EV_EXEC:
	case PROFILE_EV_EXIT:
		if (size >= sizeof(struct profile_proc_event) && s->o.on_proc)
			s->o.on_proc(s->o.ctx, data);
		break;
	default:
		break;
	}
	return 0;
}

static size_t sampler_ringbuf_size(const struct agent_sampler_opts *o, int ncpus)
{
	size_t ev = o->stack_copy ? sizeof(struct profile_event_ext) : sizeof(struct profile_event);
	/*
	 * A quarter second of samples: the reader drains it every 100 ms and
	 * is woken at half full, and every byte here is resident memory.
	 */
	size_t want = (size_t)o->frequency * (size_t)ncpus * ev / 4;
	size_t sz = SAMPLER_RINGBUF_MIN;

	if (o->off_cpu) /* bursts of wake-ups: ~100 off-CPU events more */
		want += 100 * ev;
	/* At least ~48 events: a reader busy for a moment must not lose any. */
	want = PROF_MAX(want, 48 * ev);

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

/*
 * The host's dynamic loader (symlinks resolved) and the distance from
 * _dl_debug_state to _r_debug in it (both exported in .dynsym). 0, or
 * -ENOENT when there is no such loader or symbol (the hook stays off).
 */
static int sampler_find_ldso(char *path, size_t pathsz, int64_t *rdebug_off)
{
	uint64_t dbg = 0, rdebug = 0;
	Elf_Scn *scn = NULL;
	Elf *elf;
	int fd;

	if (!realpath(SAMPLER_LDSO, path) || strlen(path) >= pathsz)
		return -ENOENT;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	while (elf && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym) ||
			    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)))
				continue;
			if (!strcmp(name, "_dl_debug_state"))
				dbg = sym.st_value;
			else if (!strcmp(name, "_r_debug"))
				rdebug = sym.st_value;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	if (!dbg || !rdebug)
		return -ENOENT;
	*rdebug_off = (int64_t)(rdebug - dbg);
	return 0;
}

static int sampler_attach_tracing(struct agent_sampler *s, struct prof_err *err)
{
	struct bpf_program *progs[] = { s->skel->progs.profile_exec, s->skel->progs.profile_exit,
					s->skel->progs.profile_fork, s->skel->progs.profile_switch,
					s->skel->progs.profile_sys_exit };
	struct bpf_link *link;
	int rc;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(progs); i++) {
		if (!bpf_program__autoload(progs[i]))
			continue;
		link = bpf_program__attach(progs[i]);
		if (!link) {
			rc = -errno ? -errno : -EINVAL;
			return prof_err_set(err, rc, -1, "attaching %s: %s%s",
					    bpf_program__name(progs[i]), strerror(-rc),
					    sampler_priv_hint(rc));
		}
		VEC_PUSH(&s->tlinks, link);
	}
	if (s->o.off_cpu)
		log_info("agent off-cpu attached threshold_ns=%" PRIu64, s->o.off_cpu_min_ns);
	if (s->ldso[0]) {
		LIBBPF_OPTS(bpf_uprobe_opts, uo, .func_name = "_dl_debug_state");

		link = bpf_program__attach_uprobe_opts(s->skel->progs.profile_libs, -1, s->ldso, 0,
						       &uo);
		if (!link) /* not fatal: short-lived processes lose their libraries' frames */
			log_warn("agent: no link-map hook on %s: %s", s->ldso, strerror(errno));
		else
			VEC_PUSH(&s->tlinks, link);
	}
	return 0;
}

/* Fill the targeting maps (after load). */
static int sampler_fill_filters(struct agent_sampler *s, struct prof_err *err)
{
	const struct {
		const char *const *names;
		size_t n;
		__u8 verdict;
	} exes[] = { { s->o.include_exe, s->o.n_include_exe, PROFILE_V_INCLUDE },
		     { s->o.exclude_exe, s->o.n_exclude_exe, PROFILE_V_EXCLUDE } };
	const struct {
		const uint64_t *ids;
		size_t n;
		__u8 verdict;
	} cgs[] = { { s->o.include_cgroup, s->o.n_include_cgroup, PROFILE_V_INCLUDE },
		    { s->o.exclude_cgroup, s->o.n_exclude_cgroup, PROFILE_V_EXCLUDE } };
	int rc;

	for (size_t k = 0; k < PROF_ARRAY_SIZE(exes); k++) {
		for (size_t i = 0; i < exes[k].n; i++) {
			struct profile_exe_key key;

			memset(&key, 0, sizeof(key));
			snprintf(key.name, sizeof(key.name), "%s", exes[k].names[i]);
			rc = bpf_map__update_elem(s->skel->maps.exe_filter, &key, sizeof(key),
						  &exes[k].verdict, 1, BPF_ANY);
			if (rc)
				return prof_err_set(err, rc, -1,
						    "filling the executable filter: %s",
						    strerror(-rc));
		}
	}
	for (size_t k = 0; k < PROF_ARRAY_SIZE(cgs); k++) {
		for (size_t i = 0; i < cgs[k].n; i++) {
			__u64 id = cgs[k].ids[i];

			rc = bpf_map__update_elem(s->skel->maps.cgroup_filter, &id, sizeof(id),
						  &cgs[k].verdict, 1, BPF_ANY);
			if (rc)
				return prof_err_set(err, rc, -1, "filling the cgroup filter: %s",
						    strerror(-rc));
		}
	}
	return 0;
}

static int sampler_configure(struct agent_sampler *s, const struct agent_sampler_opts *opts,
			     size_t rbsz, struct prof_err *err)
{
	struct profile_bpf *sk = s->skel;
	size_t nexe = opts->n_include_exe + opts->n_exclude_exe;
	size_t ncg = opts->n_include_cgroup + opts->n_exclude_cgroup;
	int64_t rdebug_off = 0;
	__u32 flags = 0;
	int rc;

	sk->rodata->agent_tgid = (__u32)getpid();
	sk->rodata->offcpu_min_ns = opts->off_cpu_min_ns;
	sk->rodata->stack_copy = opts->stack_copy ? 1 : 0;
	if (opts->n_include_exe)
		flags |= PROFILE_FILTER_INCLUDE_EXE;
	if (opts->n_exclude_exe)
		flags |= PROFILE_FILTER_EXCLUDE_EXE;
	if (opts->n_include_cgroup)
		flags |= PROFILE_FILTER_INCLUDE_CGROUP;
	if (opts->n_exclude_cgroup)
		flags |= PROFILE_FILTER_EXCLUDE_CGROUP;
	sk->rodata->filter_flags = flags;
	/* Half the buffer: wake the reader early only when it is filling up. */
	sk->rodata->wakeup_bytes = rbsz / 2;

	if ((rc = bpf_map__set_max_entries(sk->maps.events, (__u32)rbsz)) ||
	    (rc = bpf_map__set_max_entries(sk->maps.exe_filter, (__u32)PROF_MAX(nexe, 1))) ||
	    (rc = bpf_map__set_max_entries(sk->maps.cgroup_filter, (__u32)PROF_MAX(ncg, 1))) ||
	    (rc = bpf_map__set_max_entries(sk->maps.verdicts, SAMPLER_VERDICT_LRU)) ||
	    (rc = bpf_map__set_max_entries(sk->maps.interp_procs, SAMPLER_INTERP_PROCS)) ||
	    (rc = bpf_map__set_max_entries(sk->maps.ctx_procs, SAMPLER_CTX_PROCS)) ||
	    (rc = bpf_map__set_max_entries(
		     sk->maps.offcpu_start,
		     opts->off_cpu
			     ? (opts->offcpu_threads ? opts->offcpu_threads : SAMPLER_OFFCPU_LRU)
			     : 1)))
		return prof_err_set(err, rc, -1, "sizing the BPF maps: %s", strerror(-rc));
	bpf_program__set_autoload(sk->progs.profile_switch, opts->off_cpu);
	if (sampler_find_ldso(s->ldso, sizeof(s->ldso), &rdebug_off) == 0) {
		sk->rodata->rdebug_off = rdebug_off;
	} else {
		s->ldso[0] = '\0';
		bpf_program__set_autoload(sk->progs.profile_libs, false);
	}
	bpf_program__set_autoload(sk->progs.profile_sys_exit, opts->off_cpu);
	bpf_program__set_autoload(sk->progs.profile_fork, nexe > 0);
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
	rbsz = opts->ringbuf_bytes ? opts->ringbuf_bytes
				   : sampler_ringbuf_size(opts, s->ncpus_possible);
	rc = sampler_configure(s, opts, rbsz, err);
	if (rc)
		goto fail;
	rc = profile_bpf__load(s->skel);
	if (rc) {
		const char *hint = sampler_priv_hint(rc);

		if (!*hint && access("/sys/kernel/btf/vmlinux", R_OK) != 0)
			hint = " (this kernel has no BTF at /sys/kernel/btf/vmlinux; profd needs "
			       "CONFIG_DEBUG_INFO_BTF=y and Linux >= 5.8)";
		prof_err_set(err, rc, -1, "loading the BPF program: %s%s", strerror(-rc), hint);
		goto fail;
	}
	rc = sampler_fill_filters(s, err);
	if (rc)
		goto fail;
	rc = sampler_attach_tracing(s, err);
	if (rc)
		goto fail;
	rc = sampler_attach(s, err);
	if (rc)
		goto fail;
	s->rb = ring_buffer__new(bpf_map__fd(s->skel->maps.events), sampler_on_ringbuf, s, NULL);
	if (!s->rb) {
		rc = -errno ? -errno : -ENOMEM;
		prof_err_set(err, rc, -1, "creating the ring buffer reader: %s", strerror(-rc));
		goto fail;
	}
	log_info("agent sampling cpus=%zu frequency_hz=%u ringbuf_bytes=%zu off_cpu=%d "
		 "stack_copy=%d filters=%zu",
		 s->links.n, opts->frequency, rbsz, opts->off_cpu, opts->stack_copy,
		 opts->n_include_exe + opts->n_exclude_exe + opts->n_include_cgroup +
			 opts->n_exclude_cgroup);
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
	for (size_t i = 0; i < s->tlinks.n; i++)
		bpf_link__destroy(s->tlinks.v[i]);
	VEC_FREE(&s->tlinks);
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
	static const char *const names[PROFILE_STAT_MAX] = {
		[PROFILE_STAT_SAMPLES] = "samples",
		[PROFILE_STAT_IDLE] = "idle",
		[PROFILE_STAT_SELF] = "self",
		[PROFILE_STAT_RINGBUF_FULL] = "ringbuf_full",
		[PROFILE_STAT_KSTACK_ERR] = "kstack_err",
		[PROFILE_STAT_USTACK_ERR] = "ustack_err",
		[PROFILE_STAT_FILTERED] = "filtered",
		[PROFILE_STAT_USTACK_TRUNCATED] = "ustack_truncated",
		[PROFILE_STAT_STACK_COPY_ERR] = "stack_copy_err",
		[PROFILE_STAT_OFFCPU_SAMPLES] = "offcpu_samples",
		[PROFILE_STAT_OFFCPU_SHORT] = "offcpu_short",
		[PROFILE_STAT_OFFCPU_UNTRACKED] = "offcpu_untracked",
		[PROFILE_STAT_OFFCPU_MAP_FULL] = "offcpu_map_full",
		[PROFILE_STAT_OFFCPU_RINGBUF_FULL] = "offcpu_ringbuf_full",
		[PROFILE_STAT_OFFCPU_SKIP_IDLE] = "offcpu_skip_idle",
		[PROFILE_STAT_OFFCPU_SKIP_SELF] = "offcpu_skip_self",
		[PROFILE_STAT_OFFCPU_SKIP_KTHREAD] = "offcpu_skip_kthread",
		[PROFILE_STAT_OFFCPU_SKIP_EXITING] = "offcpu_skip_exiting",
		[PROFILE_STAT_OFFCPU_FILTERED] = "offcpu_filtered",
		[PROFILE_STAT_PROC_EVENTS] = "proc_events",
		[PROFILE_STAT_PROC_RINGBUF_FULL] = "proc_ringbuf_full",
		[PROFILE_STAT_PROC_FILTERED] = "proc_filtered",
		[PROFILE_STAT_PROC_SELF] = "proc_self",
		[PROFILE_STAT_THREAD_EXIT] = "thread_exit",
		[PROFILE_STAT_VERDICT_UPDATE_ERR] = "verdict_update_err",
		[PROFILE_STAT_OFFCPU_STALE] = "offcpu_stale",
		[PROFILE_STAT_OFFCPU_SKIP_PREEMPTED] = "offcpu_skip_preempted",
		[PROFILE_STAT_OFFCPU_KSTACK_LOST] = "offcpu_kstack_lost",
		[PROFILE_STAT_LIBS_EVENTS] = "libs_events",
		[PROFILE_STAT_LIBS_NOT_READY] = "libs_not_ready",
		[PROFILE_STAT_LIBS_READ_ERR] = "libs_read_err",
		[PROFILE_STAT_LIBS_RINGBUF_FULL] = "libs_ringbuf_full",
		[PROFILE_STAT_LIBS_FILTERED] = "libs_filtered",
		[PROFILE_STAT_INTERP_EVENTS] = "interp_events",
		[PROFILE_STAT_INTERP_NO_THREAD] = "interp_no_thread",
		[PROFILE_STAT_INTERP_RINGBUF_FULL] = "interp_ringbuf_full",
		[PROFILE_STAT_INTERP_TAILCALL_ERR] = "interp_tailcall_err",
		[PROFILE_STAT_INTERP_READ_ERR] = "interp_read_err",
		[PROFILE_STAT_INTERP_BAD_OBJ] = "interp_bad_obj",
		[PROFILE_STAT_INTERP_TOO_DEEP] = "interp_too_deep",
		[PROFILE_STAT_CTX_EVENTS] = "ctx_events",
		[PROFILE_STAT_CTX_NONE] = "ctx_none",
		[PROFILE_STAT_CTX_READ_ERR] = "ctx_read_err",
		[PROFILE_STAT_CTX_RINGBUF_FULL] = "ctx_ringbuf_full",
	};

	if ((unsigned)st < PROFILE_STAT_MAX && names[st])
		return names[st];
	return "unknown";
}

int agent_sampler_interp_set(struct agent_sampler *s, uint32_t pid,
			     const struct profile_interp_proc *p)
{
	return bpf_map__update_elem(s->skel->maps.interp_procs, &pid, sizeof(pid), p, sizeof(*p),
				    BPF_ANY);
}

int agent_sampler_interp_del(struct agent_sampler *s, uint32_t pid)
{
	int rc = bpf_map__delete_elem(s->skel->maps.interp_procs, &pid, sizeof(pid), 0);

	return rc == -ENOENT ? 0 : rc;
}

int agent_sampler_ctx_set(struct agent_sampler *s, uint32_t pid, const struct profile_ctx_proc *p)
{
	return bpf_map__update_elem(s->skel->maps.ctx_procs, &pid, sizeof(pid), p, sizeof(*p),
				    BPF_ANY);
}

int agent_sampler_ctx_del(struct agent_sampler *s, uint32_t pid)
{
	int rc = bpf_map__delete_elem(s->skel->maps.ctx_procs, &pid, sizeof(pid), 0);

	return rc == -ENOENT ? 0 : rc;
}
