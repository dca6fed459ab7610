// SPDX-License-Identifier: Apache-2.0
/*
 * scrape.c - the scrape manager: discovery, per-target threads, health;
 * see scrape.h.
 *
 * Locking: m->lock guards the target list and the dropped list; each
 * target's t->lock guards its health fields (read by the JSON writer,
 * written by the target's thread). Lock order: m->lock, then t->lock.
 * A target is freed only by the manager thread (or scrape_mgr_free)
 * after its thread has been joined, with the target already out of the
 * list, so the JSON writer never sees a freed target.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/pprof.h"
#include "scrape/delta.h"
#include "scrape/fetch.h"
#include "scrape/k8s.h"
#include "scrape/scrape.h"

#include <glob.h>
#include <pthread.h>
#include <sys/stat.h>

#define SCRAPE_MAX_DROPPED 1000 /* dropped targets listed per manager */
#define NS_PER_S	   ((int64_t)1000000000)

struct target_prof {
	const struct scrape_profile_conf *pc;
	struct scrape_delta *delta; /* cumulative kinds only */
	/* health, under target.lock */
	bool ever, ok, primed;
	char last_error[640];
	int64_t last_ns, dur_ns;
	uint64_t samples, bytes, scrapes, failures;
	char url[1200]; /* set before the thread starts, then read-only */
};

struct target {
	struct scrape_mgr *m;
	const struct scrape_job_conf *job;
	uint64_t id;
	struct scrape_labels discovered; /* before relabeling */
	struct scrape_labels labels;	 /* after, including "__" ones */
	char *address, *scheme, *prefix, *base_url;
	int64_t interval_ns, timeout_ns;
	struct target_prof *profs;
	size_t nprofs;
	void *curl;
	pthread_t th;
	bool started, keep;
	bool stop; /* atomic */
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* health, under lock */
	int64_t last_ns, round_dur_ns;
	char logged_error[1024]; /* what was last logged, to log changes only */
};

struct sd_file {
	char *path;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	int64_t read_ns; /* monotonic time of the last read */
	struct scrape_group *groups;
	size_t ngroups;
	bool seen;
};

struct job_state {
	const struct scrape_job_conf *conf;
	VEC(struct sd_file) files;
	struct scrape_k8s **k8s; /* one per kubernetes_sd_configs entry; NULL where it failed */
};

struct dropped {
	const struct scrape_job_conf *job;
	struct scrape_labels discovered;
};

struct scrape_mgr {
	const struct scrape_config *conf;
	struct scrape_sink sink;
	struct job_state *jobs;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	VEC(struct target *) targets;
	VEC(struct dropped) dropped;
	pthread_t th;
	bool started, stop, once;
	/* stats, atomics */
	uint64_t scrapes, failures, profiles_stored, samples_stored, bytes_fetched;
};

static int64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec;
}

static void cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

/* Wait on @c (with @mu held) until monotonic @deadline_ns or *@stop. */
static void wait_until(pthread_cond_t *c, pthread_mutex_t *mu, const bool *stop,
		       int64_t deadline_ns)
{
	while (!__atomic_load_n(stop, __ATOMIC_ACQUIRE)) {
		struct timespec ts;

		if (mono_ns() >= deadline_ns)
			return;
		ts.tv_sec = deadline_ns / NS_PER_S;
		ts.tv_nsec = deadline_ns % NS_PER_S;
		pthread_cond_timedwait(c, mu, &ts);
	}
}

void scrape_format_time(int64_t ns, char *out, size_t outsz)
{
	struct tm tm;
	time_t t;

	if (ns <= 0) {
		snprintf(out, outsz, "%s", "");
		return;
	}
	t = (time_t)(ns / NS_PER_S);
	gmtime_r(&t, &tm);
	snprintf(out, outsz, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (int)(ns % NS_PER_S / 1000000));
}

/* --- one target ---------------------------------------------------------------------- */

static void target_free(struct target *t)
{
	if (!t)
		return;
	for (size_t i = 0; i < t->nprofs; i++)
		scrape_delta_free(t->profs[i].delta);
	free(t->profs);
	scrape_labels_release(&t->discovered);
	scrape_labels_release(&t->labels);
	free(t->address);
	free(t->scheme);
	free(t->prefix);
	free(t->base_url);
	scrape_fetch_handle_free(t->curl);
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->cond);
	free(t);
}

/* Recompute the target's summary after a profile attempt; logs changes. Under t->lock. */
static void target_health_locked(struct target *t, char *err, size_t errsz, int *health)
{
	size_t n = 0;
	bool any = false, down = false;

	err[0] = '\0';
	for (size_t i = 0; i < t->nprofs; i++) {
		const struct target_prof *tp = &t->profs[i];

		if (!tp->ever)
			continue;
		any = true;
		if (tp->ok)
			continue;
		down = true;
		if (n < errsz - 1)
			n += (size_t)snprintf(err + n, errsz - n, "%s%s: %s", n ? "; " : "",
					      tp->pc->name, tp->last_error);
	}
	*health = !any ? -1 : down ? 0 : 1;
}

static void note_result(struct target *t, struct target_prof *tp, int64_t start_ns, int64_t dur_ns,
			bool ok, const char *why, uint64_t samples, uint64_t bytes)
{
	char err[1024];
	int health;

	pthread_mutex_lock(&t->lock);
	tp->ever = true;
	tp->ok = ok;
	snprintf(tp->last_error, sizeof(tp->last_error), "%s", ok ? "" : why);
	tp->last_ns = start_ns;
	tp->dur_ns = dur_ns;
	tp->scrapes++;
	if (!ok)
		tp->failures++;
	else
		tp->samples = samples;
	tp->bytes = bytes;
	t->last_ns = start_ns;
	target_health_locked(t, err, sizeof(err), &health);
	if (strcmp(err, t->logged_error)) {
		if (err[0])
			log_warn("scrape: target down job=%s instance=%s error=\"%s\"",
				 t->job->name, scrape_labels_get(&t->labels, "instance"), err);
		else
			log_info("scrape: target up job=%s instance=%s", t->job->name,
				 scrape_labels_get(&t->labels, "instance"));
		snprintf(t->logged_error, sizeof(t->logged_error), "%s", err);
	}
	pthread_mutex_unlock(&t->lock);
	__atomic_add_fetch(&t->m->scrapes, 1, __ATOMIC_RELAXED);
	if (!ok)
		__atomic_add_fetch(&t->m->failures, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&t->m->bytes_fetched, bytes, __ATOMIC_RELAXED);
}

/* The public labels of @t as profile attributes. */
static void add_attrs(const struct target *t, struct model_profile *p)
{
	for (size_t i = 0; i < t->labels.l.n; i++) {
		const struct scrape_label *l = &t->labels.l.v[i];

		if (l->name[0] == '_' && l->name[1] == '_')
			continue;
		model_attr_add_str(p, l->name, l->value);
	}
}

/* Fetch, decode, shape, store one endpoint of @t. */
static void scrape_profile(struct target *t, struct target_prof *tp, struct buf *body)
{
	const struct scrape_profile_conf *pc = tp->pc;
	const struct scrape_job_conf *job = t->job;
	struct scrape_fetch_opts o = { .max_body = job->body_size_limit, .stop = &t->stop };
	int64_t start_ns = prof_now_ns(), t0 = mono_ns();
	struct model_profile p;
	struct prof_err err;
	char why[640];
	bool decoded = false, had_base = true;
	uint64_t samples = 0;
	size_t nbytes;
	int rc;

	o.timeout_ms = (long)(t->timeout_ns / 1000000);
	if (pc->kind == SCRAPE_KIND_CPU)
		o.timeout_ms += (long)pc->seconds * 1000;
	prof_err_init(&err);
	rc = scrape_fetch(t->curl, tp->url, &o, body, NULL, &err);
	nbytes = body->len;
	if (rc == -ECANCELED)
		return;
	if (rc) {
		snprintf(why, sizeof(why), "%s", err.msg);
		goto done;
	}
	if (!body->len) {
		rc = -PROF_EFORMAT;
		snprintf(why, sizeof(why), "empty body (not a pprof profile)");
		goto done;
	}
	model_profile_init(&p);
	decoded = true;
	rc = fmt_pprof_decode(body->p, body->len, job->body_size_limit, &p, &err);
	buf_release(body); /* the body is no longer needed: keep memory at one copy */
	if (rc) {
		snprintf(why, sizeof(why), "decode: %s", err.msg);
		goto done;
	}
	if (!p.sample_types.n) {
		rc = -PROF_EFORMAT;
		snprintf(why, sizeof(why), "decode: not a pprof profile (no sample types)");
		goto done;
	}
	scrape_profile_shape(&p, pc->kind, pc->name);
	if (!p.time_ns)
		p.time_ns = start_ns;
	if (tp->delta) {
		rc = scrape_delta_compute(tp->delta, &p, &had_base, &err);
		if (rc) {
			snprintf(why, sizeof(why), "delta: %s", err.msg);
			goto done;
		}
	}
	samples = p.samples.n;
	if (p.samples.n) {
		struct model_profile *pp = &p;

		add_attrs(t, &p);
		prof_err_init(&err);
		rc = t->m->sink.submit(t->m->sink.arg, job->dataset, &pp, 1, &err);
		if (rc) {
			snprintf(why, sizeof(why), "store: %s",
				 err.msg[0] ? err.msg : prof_strerror(rc));
			if (tp->delta)
				scrape_delta_discard(tp->delta);
			goto done;
		}
		__atomic_add_fetch(&t->m->profiles_stored, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&t->m->samples_stored, samples, __ATOMIC_RELAXED);
	}
	if (tp->delta)
		scrape_delta_commit(tp->delta);
	if (!had_base)
		tp->primed = true;
done:
	if (decoded)
		model_profile_release(&p);
	buf_release(body);
	log_debug("scrape: job=%s url=%s ok=%d bytes=%zu samples=%" PRIu64 " ms=%.1f%s%s",
		  job->name, tp->url, !rc, nbytes, samples, (double)(mono_ns() - t0) / 1e6,
		  rc ? " error=" : "", rc ? why : "");
	note_result(t, tp, start_ns, mono_ns() - t0, !rc, rc ? why : "", samples, nbytes);
}

static void *target_main(void *arg)
{
	struct target *t = arg;
	struct buf body;
	int64_t next;

	buf_init(&body, t->job->body_size_limit);
	/* Spread first rounds over the interval by identity (Prometheus' offset). */
	next = mono_ns() + (t->m->once ? 0 : (int64_t)(t->id % (uint64_t)t->interval_ns));
	pthread_mutex_lock(&t->lock);
	wait_until(&t->cond, &t->lock, &t->stop, next);
	pthread_mutex_unlock(&t->lock);
	while (!__atomic_load_n(&t->stop, __ATOMIC_ACQUIRE)) {
		int64_t start = mono_ns();

		/* Endpoints in config order, the CPU profile (which takes seconds) last. */
		for (int pass = 0; pass < 2; pass++)
			for (size_t i = 0; i < t->nprofs; i++) {
				bool cpu = t->profs[i].pc->kind == SCRAPE_KIND_CPU;

				if (cpu != (pass == 1) ||
				    __atomic_load_n(&t->stop, __ATOMIC_ACQUIRE))
					continue;
				scrape_profile(t, &t->profs[i], &body);
			}
		pthread_mutex_lock(&t->lock);
		t->round_dur_ns = mono_ns() - start;
		if (t->m->once) {
			pthread_mutex_unlock(&t->lock);
			break;
		}
		next = start + t->interval_ns;
		if (next < mono_ns())
			next = mono_ns(); /* overran: start again now, no catch-up */
		wait_until(&t->cond, &t->lock, &t->stop, next);
		pthread_mutex_unlock(&t->lock);
	}
	buf_release(&body);
	return NULL;
}

/*
 * A target from its labels after relabeling, or NULL (logged) when they do
 * not make one: no/invalid __address__, bad scheme or interval.
 */
static struct target *target_new(struct scrape_mgr *m, const struct scrape_job_conf *job,
				 const struct scrape_labels *discovered, struct scrape_labels *ls)
{
	const char *addr = scrape_labels_get(ls, "__address__");
	const char *scheme = scrape_labels_get(ls, "__scheme__");
	const char *iv = scrape_labels_get(ls, "__scrape_interval__");
	const char *to = scrape_labels_get(ls, "__scrape_timeout__");
	const char *prefix = scrape_labels_get(ls, "__path_prefix__");
	size_t nstored = 0;
	int64_t interval, timeout;
	struct target *t;

	if (!addr || !scrape_target_ok(addr)) {
		log_warn(
			"scrape: job=%s: dropping a target whose __address__ '%s' is not host:port",
			job->name, addr ? addr : "");
		return NULL;
	}
	if (!scheme || (strcmp(scheme, "http") && strcmp(scheme, "https"))) {
		log_warn("scrape: job=%s target=%s: __scheme__ '%s' is not http or https",
			 job->name, addr, scheme ? scheme : "");
		return NULL;
	}
	if (!iv || parse_duration_ns(iv, &interval) || interval <= 0 || !to ||
	    parse_duration_ns(to, &timeout) || timeout <= 0) {
		log_warn("scrape: job=%s target=%s: bad __scrape_interval__ or __scrape_timeout__",
			 job->name, addr);
		return NULL;
	}
	if (!scrape_labels_get(ls, "instance"))
		scrape_labels_set(ls, "instance", addr);
	/* "__" labels are never stored; discovery bounds them (k8s.h). */
	for (size_t i = 0; i < ls->l.n; i++)
		nstored += !(ls->l.v[i].name[0] == '_' && ls->l.v[i].name[1] == '_');
	if (nstored > SCRAPE_MAX_LABELS) {
		log_warn("scrape: job=%s target=%s: more than %d labels", job->name, addr,
			 SCRAPE_MAX_LABELS);
		return NULL;
	}
	t = xcalloc(1, sizeof(*t));
	t->m = m;
	t->job = job;
	pthread_mutex_init(&t->lock, NULL);
	cond_init_mono(&t->cond);
	scrape_labels_copy(&t->discovered, discovered);
	t->labels = *ls;
	memset(ls, 0, sizeof(*ls));
	t->address = xstrdup(addr);
	t->scheme = xstrdup(scheme);
	t->prefix = xstrdup(prefix ? prefix : "");
	t->interval_ns = interval;
	t->timeout_ns = timeout;
	t->base_url = xasprintf("%s://%s%s", t->scheme, t->address, t->prefix);
	t->id = scrape_labels_hash(&t->labels);
	t->nprofs = job->nprofiles;
	t->profs = xcalloc(t->nprofs, sizeof(*t->profs));
	for (size_t i = 0; i < t->nprofs; i++) {
		const struct scrape_profile_conf *pc = &job->profiles[i];

		t->profs[i].pc = pc;
		if (pc->kind == SCRAPE_KIND_CPU)
			snprintf(t->profs[i].url, sizeof(t->profs[i].url), "%s%s?seconds=%" PRId64,
				 t->base_url, pc->path, pc->seconds);
		else
			snprintf(t->profs[i].url, sizeof(t->profs[i].url), "%s%s", t->base_url,
				 pc->path);
		if (job->profiles[i].delta)
			t->profs[i].delta = scrape_delta_new();
	}
	return t;
}

static int target_start(struct target *t)
{
	int rc;

	t->curl = scrape_fetch_handle_new();
	rc = pthread_create(&t->th, NULL, target_main, t);
	if (rc)
		return -rc;
	t->started = true;
	log_info("scrape: target added job=%s instance=%s url=%s interval_ms=%" PRId64,
		 t->job->name, scrape_labels_get(&t->labels, "instance"), t->base_url,
		 t->interval_ns / 1000000);
	return 0;
}

static void target_signal_stop(struct target *t)
{
	pthread_mutex_lock(&t->lock);
	__atomic_store_n(&t->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&t->cond);
	pthread_mutex_unlock(&t->lock);
}

static void target_join_free(struct target *t)
{
	if (t->started)
		pthread_join(t->th, NULL);
	target_free(t);
}

/* --- discovery ----------------------------------------------------------------------- */

static void fmt_duration(int64_t ns, char *out, size_t outsz)
{
	if (ns % NS_PER_S == 0)
		snprintf(out, outsz, "%" PRId64 "s", ns / NS_PER_S);
	else
		snprintf(out, outsz, "%" PRId64 "ms", ns / 1000000);
}

static void add_dropped(struct scrape_mgr *m, const struct scrape_job_conf *job,
			const struct scrape_labels *discovered)
{
	struct dropped d = { job, { { 0 } } };

	if (m->dropped.n >= SCRAPE_MAX_DROPPED)
		return;
	scrape_labels_copy(&d.discovered, discovered);
	VEC_PUSH(&m->dropped, d);
}

struct desired {
	VEC(struct target *) t;
	VEC(struct dropped) d; /* discarded by relabeling, at most SCRAPE_MAX_DROPPED */
	size_t over;	       /* targets past the job's target_limit, ignored */
	char over_first[256];  /* the first of them, for the one log line */
};

/* The targets of one group after relabeling, appended to @want (deduplicated). */
static void group_targets(struct scrape_mgr *m, const struct scrape_job_conf *job,
			  const struct scrape_group *g, const char *filepath, struct desired *want)
{
	char iv[32], to[32];

	fmt_duration(job->interval_ns, iv, sizeof(iv));
	fmt_duration(job->timeout_ns, to, sizeof(to));
	for (size_t i = 0; i < g->ntargets; i++) {
		struct scrape_labels ls = { 0 }, disc;
		struct target *t;
		bool dup = false;

		scrape_labels_copy(&ls, &g->labels);
		scrape_labels_set(&ls, "__address__", g->targets[i]);
		if (filepath)
			scrape_labels_set(&ls, "__meta_filepath", filepath);
		if (!scrape_labels_get(&ls, "job"))
			scrape_labels_set(&ls, "job", job->name);
		scrape_labels_set(&ls, "__scheme__", job->scheme);
		scrape_labels_set(&ls, "__scrape_interval__", iv);
		scrape_labels_set(&ls, "__scrape_timeout__", to);
		scrape_labels_set(&ls, "__path_prefix__", job->path_prefix);
		scrape_labels_copy(&disc, &ls);
		if (!scrape_relabel_apply(job->relabel, job->nrelabel, &ls)) {
			if (want->d.n < SCRAPE_MAX_DROPPED) {
				struct dropped d = { job, disc };

				VEC_PUSH(&want->d, d);
			} else {
				scrape_labels_release(&disc);
			}
			scrape_labels_release(&ls);
			continue;
		}
		if (want->t.n >= job->target_limit) {
			if (!want->over++)
				snprintf(want->over_first, sizeof(want->over_first), "%s",
					 g->targets[i]);
			scrape_labels_release(&ls);
			scrape_labels_release(&disc);
			continue;
		}
		t = target_new(m, job, &disc, &ls);
		scrape_labels_release(&ls);
		scrape_labels_release(&disc);
		if (!t)
			continue;
		for (size_t k = 0; k < want->t.n && !dup; k++)
			dup = want->t.v[k]->id == t->id;
		if (dup)
			target_free(t);
		else
			VEC_PUSH(&want->t, t);
	}
}

/* Re-read the target files of @js that changed; true when anything did. */
static bool poll_files(struct job_state *js, bool force)
{
	const struct scrape_job_conf *job = js->conf;
	int64_t now = mono_ns();
	bool changed = false;

	for (size_t i = 0; i < js->files.n; i++)
		js->files.v[i].seen = false;
	for (size_t k = 0; k < job->nfile_sds; k++) {
		const struct scrape_file_sd *sd = &job->file_sds[k];

		for (size_t p = 0; p < sd->nfiles; p++) {
			glob_t gl;

			if (glob(sd->files[p], GLOB_NOSORT, NULL, &gl))
				continue;
			for (size_t g = 0; g < gl.gl_pathc; g++) {
				const char *path = gl.gl_pathv[g];
				struct sd_file *f = NULL;
				struct stat st;

				for (size_t i = 0; i < js->files.n && !f; i++)
					if (!strcmp(js->files.v[i].path, path))
						f = &js->files.v[i];
				if (stat(path, &st) || !S_ISREG(st.st_mode))
					continue;
				if (!f) {
					struct sd_file nf = { 0 };

					nf.path = xstrdup(path);
					VEC_PUSH(&js->files, nf);
					f = &js->files.v[js->files.n - 1];
					f->read_ns = INT64_MIN;
				}
				f->seen = true;
				if (!force && f->dev == st.st_dev && f->ino == st.st_ino &&
				    f->size == st.st_size && f->mtime.tv_sec == st.st_mtim.tv_sec &&
				    f->mtime.tv_nsec == st.st_mtim.tv_nsec &&
				    now - f->read_ns < sd->refresh_ns)
					continue;
				f->dev = st.st_dev;
				f->ino = st.st_ino;
				f->size = st.st_size;
				f->mtime = st.st_mtim;
				f->read_ns = now;

				struct buf b;
				struct prof_err err;
				struct scrape_group *groups;
				size_t ng;
				int rc;

				buf_init(&b, SCRAPE_MAX_SD_FILE);
				prof_err_init(&err);
				rc = buf_read_file(&b, path);
				if (rc)
					prof_err_set(&err, rc, -1, "%s: %s", path,
						     prof_strerror(rc));
				else
					rc = scrape_sd_parse(b.p, b.len, path, &groups, &ng, &err);
				buf_release(&b);
				if (rc) {
					/* Keep the last good targets, as Prometheus does. */
					log_warn("scrape: job=%s: target file: %s", job->name,
						 err.msg);
					continue;
				}
				scrape_groups_free(f->groups, f->ngroups);
				f->groups = groups;
				f->ngroups = ng;
				changed = true;
			}
			globfree(&gl);
		}
	}
	for (size_t i = 0; i < js->files.n;) {
		struct sd_file *f = &js->files.v[i];

		if (f->seen) {
			i++;
			continue;
		}
		log_info("scrape: job=%s: target file %s is gone", job->name, f->path);
		scrape_groups_free(f->groups, f->ngroups);
		free(f->path);
		js->files.v[i] = js->files.v[--js->files.n];
		changed = true;
	}
	return changed;
}

struct k8s_groups_arg {
	struct scrape_mgr *m;
	const struct scrape_job_conf *job;
	struct desired *want;
};

static void k8s_group_cb(void *arg, const struct scrape_group *g)
{
	struct k8s_groups_arg *a = arg;

	group_targets(a->m, a->job, g, NULL, a->want);
}

/* Make the running targets of @js's job what its groups say. */
static void reconcile(struct scrape_mgr *m, struct job_state *js)
{
	const struct scrape_job_conf *job = js->conf;
	struct desired want = { 0 };
	VEC(struct target *) gone = { 0 };

	for (size_t i = 0; i < job->ngroups; i++)
		group_targets(m, job, &job->groups[i], NULL, &want);
	for (size_t i = 0; i < js->files.n; i++)
		for (size_t g = 0; g < js->files.v[i].ngroups; g++)
			group_targets(m, job, &js->files.v[i].groups[g], js->files.v[i].path,
				      &want);
	for (size_t i = 0; i < job->nk8s_sds; i++) {
		struct k8s_groups_arg a = { m, job, &want };

		if (js->k8s[i])
			scrape_k8s_foreach_group(js->k8s[i], k8s_group_cb, &a);
	}
	/* One line per change, not one per target: discovery may offer thousands too many. */
	if (want.over)
		log_warn("scrape: job=%s: more than target_limit=%zu targets; ignoring %zu of "
			 "them, the first %s",
			 job->name, job->target_limit, want.over, want.over_first);

	pthread_mutex_lock(&m->lock);
	/* Dropped list: replace this job's entries. */
	for (size_t i = 0; i < m->dropped.n;) {
		if (m->dropped.v[i].job == job) {
			scrape_labels_release(&m->dropped.v[i].discovered);
			memmove(&m->dropped.v[i], &m->dropped.v[i + 1],
				(m->dropped.n - i - 1) * sizeof(m->dropped.v[0]));
			m->dropped.n--;
		} else {
			i++;
		}
	}
	for (size_t i = 0; i < want.d.n; i++)
		add_dropped(m, job, &want.d.v[i].discovered);
	/* Keep running targets that are still wanted; stop the others. */
	for (size_t i = 0; i < m->targets.n; i++)
		m->targets.v[i]->keep = m->targets.v[i]->job != job;
	for (size_t k = 0; k < want.t.n; k++) {
		struct target *nt = want.t.v[k];
		bool found = false;

		for (size_t i = 0; i < m->targets.n && !found; i++) {
			struct target *t = m->targets.v[i];

			if (t->job == job && t->id == nt->id) {
				t->keep = true;
				found = true;
			}
		}
		if (found) {
			target_free(nt);
			continue;
		}
		if (target_start(nt)) {
			log_error("scrape: job=%s: cannot start a thread for %s", job->name,
				  nt->address);
			target_free(nt);
			continue;
		}
		nt->keep = true;
		VEC_PUSH(&m->targets, nt);
	}
	for (size_t i = 0; i < m->targets.n;) {
		struct target *t = m->targets.v[i];

		if (t->keep) {
			i++;
			continue;
		}
		log_info("scrape: target removed job=%s instance=%s", job->name,
			 scrape_labels_get(&t->labels, "instance"));
		target_signal_stop(t);
		VEC_PUSH(&gone, t);
		memmove(&m->targets.v[i], &m->targets.v[i + 1],
			(m->targets.n - i - 1) * sizeof(m->targets.v[0]));
		m->targets.n--;
	}
	pthread_mutex_unlock(&m->lock);
	for (size_t i = 0; i < gone.n; i++)
		target_join_free(gone.v[i]);
	for (size_t i = 0; i < want.d.n; i++)
		scrape_labels_release(&want.d.v[i].discovered);
	VEC_FREE(&want.d);
	VEC_FREE(&gone);
	VEC_FREE(&want.t);
}

static void *mgr_main(void *arg)
{
	struct scrape_mgr *m = arg;

	pthread_mutex_lock(&m->lock);
	while (!m->stop) {
		wait_until(&m->cond, &m->lock, &m->stop, mono_ns() + NS_PER_S);
		if (m->stop)
			break;
		pthread_mutex_unlock(&m->lock);
		for (size_t j = 0; j < m->conf->njobs; j++) {
			struct job_state *js = &m->jobs[j];

			bool changed = js->conf->nfile_sds && poll_files(js, false);

			for (size_t i = 0; i < js->conf->nk8s_sds; i++)
				if (js->k8s[i] && scrape_k8s_take_changed(js->k8s[i]))
					changed = true;
			if (changed)
				reconcile(m, js);
		}
		pthread_mutex_lock(&m->lock);
	}
	pthread_mutex_unlock(&m->lock);
	return NULL;
}

int scrape_mgr_new(const struct scrape_config *c, const struct scrape_sink *sink, unsigned flags,
		   struct scrape_mgr **out, struct prof_err *err)
{
	struct scrape_mgr *m;
	int rc;

	*out = NULL;
	rc = scrape_fetch_init(err);
	if (rc)
		return rc;
	m = xcalloc(1, sizeof(*m));
	m->conf = c;
	m->sink = *sink;
	m->once = flags & SCRAPE_ONCE;
	pthread_mutex_init(&m->lock, NULL);
	cond_init_mono(&m->cond);
	m->jobs = xcalloc(c->njobs ? c->njobs : 1, sizeof(*m->jobs));
	for (size_t j = 0; j < c->njobs; j++) {
		struct job_state *js = &m->jobs[j];

		js->conf = &c->jobs[j];
		js->k8s = xcalloc(js->conf->nk8s_sds ? js->conf->nk8s_sds : 1, sizeof(*js->k8s));
		for (size_t i = 0; i < js->conf->nk8s_sds; i++) {
			struct prof_err kerr;

			prof_err_init(&kerr);
			/* Not fatal: the other jobs scrape; the reason is logged. */
			if (scrape_k8s_new(&js->conf->k8s_sds[i], js->conf->name, m->once,
					   &js->k8s[i], &kerr))
				log_error("scrape: job=%s: kubernetes_sd_configs[%zu]: %s",
					  js->conf->name, i, kerr.msg);
			else
				(void)scrape_k8s_take_changed(js->k8s[i]);
		}
		(void)poll_files(&m->jobs[j], true);
		reconcile(m, &m->jobs[j]);
	}
	rc = m->once ? 0 : pthread_create(&m->th, NULL, mgr_main, m);
	if (rc) {
		scrape_mgr_free(m);
		return prof_err_set(err, -rc, -1, "scrape: cannot start the discovery thread: %s",
				    strerror(rc));
	}
	m->started = !m->once;
	*out = m;
	return 0;
}

void scrape_mgr_wait(struct scrape_mgr *m)
{
	/* Only the caller's thread changes the list in once mode (no discovery thread). */
	for (size_t i = 0; i < m->targets.n; i++) {
		struct target *t = m->targets.v[i];

		if (t->started) {
			pthread_join(t->th, NULL);
			t->started = false;
		}
	}
}

void scrape_mgr_free(struct scrape_mgr *m)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->lock);
	__atomic_store_n(&m->stop, true, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&m->cond);
	pthread_mutex_unlock(&m->lock);
	if (m->started)
		pthread_join(m->th, NULL);
	for (size_t j = 0; j < m->conf->njobs; j++)
		for (size_t i = 0; m->jobs[j].k8s && i < m->conf->jobs[j].nk8s_sds; i++) {
			scrape_k8s_free(m->jobs[j].k8s[i]);
			m->jobs[j].k8s[i] = NULL;
		}
	/* Stop all at once, then join: shutdown takes one abort, not one per target. */
	for (size_t i = 0; i < m->targets.n; i++)
		target_signal_stop(m->targets.v[i]);
	for (size_t i = 0; i < m->targets.n; i++)
		target_join_free(m->targets.v[i]);
	VEC_FREE(&m->targets);
	for (size_t i = 0; i < m->dropped.n; i++)
		scrape_labels_release(&m->dropped.v[i].discovered);
	VEC_FREE(&m->dropped);
	for (size_t j = 0; j < m->conf->njobs; j++) {
		struct job_state *js = &m->jobs[j];

		for (size_t i = 0; i < js->files.n; i++) {
			scrape_groups_free(js->files.v[i].groups, js->files.v[i].ngroups);
			free(js->files.v[i].path);
		}
		VEC_FREE(&js->files);
		free(js->k8s);
	}
	free(m->jobs);
	pthread_mutex_destroy(&m->lock);
	pthread_cond_destroy(&m->cond);
	free(m);
}

void scrape_mgr_get_stats(struct scrape_mgr *m, struct scrape_stats *st)
{
	memset(st, 0, sizeof(*st));
	pthread_mutex_lock(&m->lock);
	for (size_t i = 0; i < m->targets.n; i++) {
		struct target *t = m->targets.v[i];
		char err[8];
		int health;

		pthread_mutex_lock(&t->lock);
		target_health_locked(t, err, sizeof(err), &health);
		pthread_mutex_unlock(&t->lock);
		st->targets++;
		st->targets_up += health == 1;
		st->targets_down += health == 0;
	}
	pthread_mutex_unlock(&m->lock);
	st->scrapes = __atomic_load_n(&m->scrapes, __ATOMIC_RELAXED);
	st->failures = __atomic_load_n(&m->failures, __ATOMIC_RELAXED);
	st->profiles_stored = __atomic_load_n(&m->profiles_stored, __ATOMIC_RELAXED);
	st->samples_stored = __atomic_load_n(&m->samples_stored, __ATOMIC_RELAXED);
	st->bytes_fetched = __atomic_load_n(&m->bytes_fetched, __ATOMIC_RELAXED);
}

/* --- health JSON --------------------------------------------------------------------- */

static int json_kv_str(struct buf *b, const char *key, const char *val, bool comma)
{
	int rc = buf_addf(b, "%s\"%s\":", comma ? "," : "", key);

	return rc ? rc : buf_add_json_str(b, val, strlen(val));
}

static int target_json(struct target *t, struct buf *b)
{
	char err[1024], ts[40], iv[32], to[32];
	int health, rc;

	pthread_mutex_lock(&t->lock);
	target_health_locked(t, err, sizeof(err), &health);
	scrape_format_time(t->last_ns, ts, sizeof(ts));
	fmt_duration(t->interval_ns, iv, sizeof(iv));
	fmt_duration(t->timeout_ns, to, sizeof(to));
	rc = buf_addstr(b, "{\"discoveredLabels\":");
	rc = rc ? rc : scrape_labels_json(&t->discovered, false, b);
	rc = rc ? rc : buf_addstr(b, ",\"labels\":");
	rc = rc ? rc : scrape_labels_json(&t->labels, true, b);
	rc = rc ? rc : json_kv_str(b, "scrapePool", t->job->name, true);
	rc = rc ? rc : json_kv_str(b, "scrapeUrl", t->base_url, true);
	rc = rc ? rc
		: json_kv_str(b, "health",
			      health < 0 ? "unknown"
			      : health	 ? "up"
					 : "down",
			      true);
	rc = rc ? rc : buf_addf(b, ",\"up\":%s", health == 1 ? "true" : "false");
	rc = rc ? rc : json_kv_str(b, "lastError", err, true);
	rc = rc ? rc : json_kv_str(b, "lastScrape", ts, true);
	rc = rc ? rc
		: buf_addf(b, ",\"lastScrapeUnixMs\":%" PRId64 ",\"lastScrapeDuration\":%.6f",
			   t->last_ns / 1000000, (double)t->round_dur_ns / 1e9);
	rc = rc ? rc : json_kv_str(b, "scrapeInterval", iv, true);
	rc = rc ? rc : json_kv_str(b, "scrapeTimeout", to, true);
	rc = rc ? rc : buf_addstr(b, ",\"profiles\":[");
	for (size_t i = 0; i < t->nprofs && !rc; i++) {
		const struct target_prof *tp = &t->profs[i];

		scrape_format_time(tp->last_ns, ts, sizeof(ts));
		rc = buf_addstr(b, i ? ",{" : "{");
		rc = rc ? rc : json_kv_str(b, "name", tp->pc->name, false);
		rc = rc ? rc : json_kv_str(b, "url", tp->url, true);
		rc = rc ? rc
			: json_kv_str(b, "health",
				      !tp->ever ? "unknown"
				      : tp->ok	? "up"
						: "down",
				      true);
		rc = rc ? rc : json_kv_str(b, "lastError", tp->last_error, true);
		rc = rc ? rc : json_kv_str(b, "lastScrape", ts, true);
		rc = rc ? rc
			: buf_addf(b,
				   ",\"lastScrapeDuration\":%.6f,\"delta\":%s,\"primed\":%s,"
				   "\"samples\":%" PRIu64 ",\"bytes\":%" PRIu64
				   ",\"scrapes\":%" PRIu64 ",\"failures\":%" PRIu64 "}",
				   (double)tp->dur_ns / 1e9, tp->delta ? "true" : "false",
				   tp->primed ? "true" : "false", tp->samples, tp->bytes,
				   tp->scrapes, tp->failures);
	}
	rc = rc ? rc : buf_addstr(b, "]}");
	pthread_mutex_unlock(&t->lock);
	return rc;
}

int scrape_mgr_targets_json(struct scrape_mgr *m, struct buf *out)
{
	int rc;

	pthread_mutex_lock(&m->lock);
	rc = buf_addstr(out, "{\"status\":\"success\",\"data\":{\"activeTargets\":[");
	for (size_t i = 0; i < m->targets.n && !rc; i++) {
		rc = i ? buf_addstr(out, ",") : 0;
		rc = rc ? rc : target_json(m->targets.v[i], out);
	}
	rc = rc ? rc : buf_addstr(out, "],\"droppedTargets\":[");
	for (size_t i = 0; i < m->dropped.n && !rc; i++) {
		rc = buf_addstr(out, i ? ",{\"discoveredLabels\":" : "{\"discoveredLabels\":");
		rc = rc ? rc : scrape_labels_json(&m->dropped.v[i].discovered, false, out);
		rc = rc ? rc : json_kv_str(out, "scrapePool", m->dropped.v[i].job->name, true);
		rc = rc ? rc : buf_addstr(out, "}");
	}
	rc = rc ? rc : buf_addstr(out, "]}}\n");
	pthread_mutex_unlock(&m->lock);
	return rc;
}
