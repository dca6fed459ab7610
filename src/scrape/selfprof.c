// SPDX-License-Identifier: Apache-2.0
/*
 * selfprof.c - SIGPROF self-profiling; see selfprof.h.
 *
 * The ring lives in static storage because a signal handler can reach
 * nothing else; a slot goes free (0) -> writing (1) by a CAS in the
 * handler, -> ready (2) by a release store when filled, and back to 0 by
 * the drainer after copying. Only the handler's own thread writes a slot
 * it claimed, and a handler never waits, so the handler is
 * async-signal-safe apart from backtrace() itself (whose one allocation,
 * loading libgcc's unwinder, happens at start).
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "scrape/selfprof.h"

#include <elf.h>
#include <execinfo.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define SELF_SLOTS     4096 /* power of two */
#define SELF_FRAMES    64
#define SELF_PERIOD_NS (10 * (int64_t)1000000000)

struct slot {
	uint32_t state; /* 0 free, 1 writing, 2 ready */
	uint32_t n;
	int64_t ts_ns;
	uint64_t pc[SELF_FRAMES];
};

static struct slot g_ring[SELF_SLOTS];
static uint64_t g_next, g_dropped;
static bool g_active; /* one self profiler per process */

struct object {
	uint64_t bias, lo, hi; /* runtime range of its PT_LOAD segments */
	char *path;
	char build_id[81];
	uint32_t mapping; /* model index in the profile being built, 0 = not yet */
};

struct scrape_selfprof {
	struct scrape_sink sink;
	unsigned hz;
	int64_t period_ns; /* ns of CPU per sample */
	pthread_t th;
	pthread_mutex_t lock; /* stop, flush */
	pthread_cond_t cond;
	bool started, stop;
	VEC(struct object) objs;
	char host[256], exe[4096];
	struct sigaction old;
};

static uint64_t context_pc(void *ucv)
{
	ucontext_t *uc = ucv;

#if defined(__x86_64__)
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uint64_t)uc->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

static void on_sigprof(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno;
	void *bt[SELF_FRAMES + 8];
	uint64_t pc = context_pc(ucv);
	struct slot *s;
	uint32_t expect = 0;
	int n, start = -1;
	struct timespec ts;

	(void)sig;
	(void)si;
	s = &g_ring[__atomic_fetch_add(&g_next, 1, __ATOMIC_RELAXED) & (SELF_SLOTS - 1)];
	if (!__atomic_compare_exchange_n(&s->state, &expect, 1, false, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED)) {
		__atomic_add_fetch(&g_dropped, 1, __ATOMIC_RELAXED);
		errno = saved;
		return;
	}
	n = backtrace(bt, (int)PROF_ARRAY_SIZE(bt));
	/* Frames above the handler and the signal trampoline start at the interrupted PC. */
	for (int i = 0; i < n && start < 0; i++)
		if ((uint64_t)(uintptr_t)bt[i] == pc)
			start = i;
	s->n = 0;
	if (start < 0) {
		s->pc[s->n++] = pc;
		start = n > 2 ? 3 : n; /* handler, trampoline, interrupted frame */
	}
	for (int i = start; i < n && s->n < SELF_FRAMES; i++)
		s->pc[s->n++] = (uint64_t)(uintptr_t)bt[i];
	clock_gettime(CLOCK_REALTIME, &ts);
	s->ts_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	__atomic_store_n(&s->state, 2, __ATOMIC_RELEASE);
	errno = saved;
}

/* --- loaded objects ------------------------------------------------------------------ */

static void build_id_hex(const struct dl_phdr_info *info, char *out, size_t outsz)
{
	out[0] = '\0';
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
			const char *name = p + sizeof(*nh);
			const unsigned char *desc =
				(const unsigned char *)name + ((nh->n_namesz + 3) & ~3u);

			if ((const char *)desc + nh->n_descsz > end)
				break;
			if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) && nh->n_descsz * 2 < outsz) {
				for (uint32_t k = 0; k < nh->n_descsz; k++)
					snprintf(out + 2 * k, 3, "%02x", desc[k]);
				return;
			}
			p = (const char *)desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
}

static int object_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct scrape_selfprof *s = arg;
	struct object o = { 0 };
	bool any = false;

	(void)size;
	o.bias = info->dlpi_addr;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;

		if (!any || lo < o.lo)
			o.lo = lo;
		if (!any || hi > o.hi)
			o.hi = hi;
		any = true;
	}
	if (!any)
		return 0;
	const char *name = info->dlpi_name;

	if (!name || !*name)
		name = s->exe; /* the main program */
	if (!*name || !strncmp(name, "linux-vdso", 10))
		return 0;
	o.path = xstrdup(name);
	build_id_hex(info, o.build_id, sizeof(o.build_id));
	VEC_PUSH(&s->objs, o);
	return 0;
}

static void objects_release(struct scrape_selfprof *s)
{
	for (size_t i = 0; i < s->objs.n; i++)
		free(s->objs.v[i].path);
	s->objs.n = 0;
}

static struct object *object_of(struct scrape_selfprof *s, uint64_t pc)
{
	for (size_t i = 0; i < s->objs.n; i++)
		if (pc >= s->objs.v[i].lo && pc < s->objs.v[i].hi)
			return &s->objs.v[i];
	return NULL;
}

/* --- building the profile ------------------------------------------------------------ */

struct locmap {
	uint64_t *keys; /* (mapping << 48) ^ vaddr hash keys; 0 empty */
	uint64_t *addr;
	uint32_t *mapping, *loc;
	size_t cap, n;
};

static uint32_t location_for(struct model_profile *p, struct locmap *lm, uint32_t mapping,
			     uint64_t vaddr)
{
	uint64_t key = (vaddr * 0x9e3779b97f4a7c15ULL) ^ mapping;
	size_t i;

	if (!key)
		key = 1;
	if ((lm->n + 1) * 2 > lm->cap) {
		struct locmap old = *lm;

		lm->cap = old.cap ? old.cap * 2 : 1024;
		lm->n = 0;
		lm->keys = xcalloc(lm->cap, sizeof(*lm->keys));
		lm->addr = xcalloc(lm->cap, sizeof(*lm->addr));
		lm->mapping = xcalloc(lm->cap, sizeof(*lm->mapping));
		lm->loc = xcalloc(lm->cap, sizeof(*lm->loc));
		for (size_t k = 0; k < old.cap; k++) {
			if (!old.keys[k])
				continue;
			size_t j = (size_t)old.keys[k] & (lm->cap - 1);

			while (lm->keys[j])
				j = (j + 1) & (lm->cap - 1);
			lm->keys[j] = old.keys[k];
			lm->addr[j] = old.addr[k];
			lm->mapping[j] = old.mapping[k];
			lm->loc[j] = old.loc[k];
			lm->n++;
		}
		free(old.keys);
		free(old.addr);
		free(old.mapping);
		free(old.loc);
	}
	i = (size_t)key & (lm->cap - 1);
	while (lm->keys[i]) {
		if (lm->keys[i] == key && lm->addr[i] == vaddr && lm->mapping[i] == mapping)
			return lm->loc[i];
		i = (i + 1) & (lm->cap - 1);
	}
	lm->keys[i] = key;
	lm->addr[i] = vaddr;
	lm->mapping[i] = mapping;
	lm->loc[i] = model_location_add(p, mapping, vaddr, NULL, 0);
	lm->n++;
	return lm->loc[i];
}

static void locmap_release(struct locmap *lm)
{
	free(lm->keys);
	free(lm->addr);
	free(lm->mapping);
	free(lm->loc);
}

int scrape_selfprof_flush(struct scrape_selfprof *s)
{
	struct model_profile p, *pp = &p;
	struct locmap lm = { 0 };
	struct prof_err err;
	uint32_t locs[SELF_FRAMES];
	int64_t vals[2] = { 1, s->period_ns };
	int64_t tmin = INT64_MAX, tmax = 0;
	int rc = 0;

	model_profile_init(&p);
	model_sample_type_add(&p, "samples", "count");
	model_sample_type_add(&p, "cpu", "nanoseconds");
	p.period_type.type = model_intern(&p, "cpu");
	p.period_type.unit = model_intern(&p, "nanoseconds");
	p.period = s->period_ns;
	p.name = model_intern(&p, "process_cpu");
	objects_release(s);
	dl_iterate_phdr(object_cb, s);
	for (size_t i = 0; i < s->objs.n; i++)
		s->objs.v[i].mapping = 0;
	for (size_t k = 0; k < SELF_SLOTS; k++) {
		struct slot *sl = &g_ring[k];
		uint32_t n = 0;

		if (__atomic_load_n(&sl->state, __ATOMIC_ACQUIRE) != 2)
			continue;
		for (uint32_t f = 0; f < sl->n && f < SELF_FRAMES; f++) {
			/* Non-leaf frames hold return addresses: step back into the call. */
			uint64_t pc = sl->pc[f] - (f ? 1 : 0);
			struct object *o = object_of(s, pc);
			uint32_t mapping = 0;

			if (o) {
				if (!o->mapping) {
					struct model_mapping m = { 0 };

					m.memory_start = o->lo;
					m.memory_limit = o->hi;
					m.filename = model_intern(&p, o->path);
					m.build_id = model_intern(&p, o->build_id);
					o->mapping = model_mapping_add(&p, &m);
				}
				mapping = o->mapping;
				pc -= o->bias;
			}
			locs[n++] = location_for(&p, &lm, mapping, pc);
		}
		if (n) {
			uint32_t off = model_stack_add(&p, locs, n);

			model_sample_add(&p, off, n, vals, NULL, 0, sl->ts_ns, 0);
			tmin = PROF_MIN(tmin, sl->ts_ns);
			tmax = PROF_MAX(tmax, sl->ts_ns);
		}
		__atomic_store_n(&sl->state, 0, __ATOMIC_RELEASE);
	}
	locmap_release(&lm);
	if (p.samples.n) {
		p.time_ns = tmin;
		p.duration_ns = tmax - tmin;
		model_attr_add_str(&p, "job", "profd-self");
		model_attr_add_str(&p, "service.name", "profd-self");
		model_attr_add_str(&p, "instance", s->host);
		prof_err_init(&err);
		rc = s->sink.submit(s->sink.arg, NULL, &pp, 1, &err);
		if (rc)
			log_warn("self-profile: not stored: %s",
				 err.msg[0] ? err.msg : prof_strerror(rc));
		else
			rc = (int)p.samples.n;
	}
	model_profile_release(&p);
	return rc;
}

uint64_t scrape_selfprof_dropped(const struct scrape_selfprof *s)
{
	(void)s;
	return __atomic_load_n(&g_dropped, __ATOMIC_RELAXED);
}

static void *selfprof_main(void *arg)
{
	struct scrape_selfprof *s = arg;
	sigset_t block;

	/* The drainer itself is not sampled: it would only show the profiler. */
	sigemptyset(&block);
	sigaddset(&block, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &block, NULL);
	pthread_mutex_lock(&s->lock);
	while (!s->stop) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += (time_t)(SELF_PERIOD_NS / 1000000000);
		pthread_cond_timedwait(&s->cond, &s->lock, &ts);
		if (s->stop)
			break;
		pthread_mutex_unlock(&s->lock);
		(void)scrape_selfprof_flush(s);
		pthread_mutex_lock(&s->lock);
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int scrape_selfprof_new(unsigned hz, const struct scrape_sink *sink, struct scrape_selfprof **out,
			struct prof_err *err)
{
	struct scrape_selfprof *s;
	struct sigaction sa;
	struct itimerval it;
	void *prime[4];
	bool expect = false;
	ssize_t n;
	int rc;

	*out = NULL;
	memset(&it, 0, sizeof(it));
#if !defined(__x86_64__) && !defined(__aarch64__)
	return prof_err_set(err, -PROF_EUNSUPPORTED, -1,
			    "self-profiling needs x86-64 or arm64 (reads the PC from the signal "
			    "context)");
#endif
	if (!hz)
		hz = SCRAPE_SELFPROF_DEFAULT_HZ;
	if (hz > 1000)
		return prof_err_set(err, -EINVAL, -1, "self-profile rate %u Hz: expected 1..1000",
				    hz);
	if (!__atomic_compare_exchange_n(&g_active, &expect, true, false, __ATOMIC_SEQ_CST,
					 __ATOMIC_SEQ_CST))
		return prof_err_set(err, -EBUSY, -1,
				    "a self profiler already runs in this process");
	(void)backtrace(prime, 4); /* loads the unwinder now, not in the handler */
	s = xcalloc(1, sizeof(*s));
	s->sink = *sink;
	s->hz = hz;
	s->period_ns = 1000000000 / (int64_t)hz;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	if (gethostname(s->host, sizeof(s->host) - 1) || !s->host[0])
		snprintf(s->host, sizeof(s->host), "localhost");
	n = readlink("/proc/self/exe", s->exe, sizeof(s->exe) - 1);
	s->exe[n > 0 ? n : 0] = '\0';
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, &s->old)) {
		rc = prof_err_set(err, -errno, -1, "sigaction(SIGPROF): %s", strerror(errno));
		goto fail;
	}
	rc = pthread_create(&s->th, NULL, selfprof_main, s);
	if (rc) {
		sigaction(SIGPROF, &s->old, NULL);
		rc = prof_err_set(err, -rc, -1, "self-profile thread: %s", strerror(rc));
		goto fail;
	}
	s->started = true;
	it.it_interval.tv_sec = 0;
	it.it_interval.tv_usec = (suseconds_t)(1000000 / hz);
	if (!it.it_interval.tv_usec)
		it.it_interval.tv_usec = 1;
	it.it_value = it.it_interval;
	if (setitimer(ITIMER_PROF, &it, NULL)) {
		rc = prof_err_set(err, -errno, -1, "setitimer(ITIMER_PROF): %s", strerror(errno));
		scrape_selfprof_free(s);
		return rc;
	}
	log_info("self-profile: sampling this process at %u Hz into job=profd-self", hz);
	*out = s;
	return 0;
fail:
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	__atomic_store_n(&g_active, false, __ATOMIC_SEQ_CST);
	return rc;
}

void scrape_selfprof_free(struct scrape_selfprof *s)
{
	struct itimerval off;
	struct sigaction ign;

	if (!s)
		return;
	memset(&off, 0, sizeof(off));
	setitimer(ITIMER_PROF, &off, NULL);
	/* A SIGPROF still pending must not kill the process: ignore, not default. */
	memset(&ign, 0, sizeof(ign));
	ign.sa_handler = SIG_IGN;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPROF, &ign, NULL);
	pthread_mutex_lock(&s->lock);
	s->stop = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	if (s->started)
		pthread_join(s->th, NULL);
	(void)scrape_selfprof_flush(s);
	objects_release(s);
	VEC_FREE(&s->objs);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
	__atomic_store_n(&g_active, false, __ATOMIC_SEQ_CST);
}
