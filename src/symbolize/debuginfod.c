// SPDX-License-Identifier: Apache-2.0
/*
 * debuginfod.c - background debuginfod fetches; see debuginfod.h.
 *
 * One table of build IDs, each with the state of its two files (unknown,
 * queued, found with a path, missing until a time), one queue of build
 * IDs to fetch, one fetcher thread. The mutex guards the table and the
 * queue and is never held during a fetch or while @done runs.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "symbolize/debuginfod.h"

#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

/* libdebuginfod's API (elfutils/debuginfod.h), resolved at run time. */
typedef struct debuginfod_client debuginfod_client;
struct sym_dfd_api {
	debuginfod_client *(*begin)(void);
	int (*find_debuginfo)(debuginfod_client *c, const unsigned char *id, int len, char **path);
	int (*find_executable)(debuginfod_client *c, const unsigned char *id, int len, char **path);
	void (*set_progressfn)(debuginfod_client *c, int (*fn)(debuginfod_client *, long, long));
	void (*end)(debuginfod_client *c);
};

enum sym_dfd_state { SYM_DFD_QUEUED, SYM_DFD_DONE };

struct sym_dfd_entry {
	char build_id[SYM_BUILD_ID_MAX_HEX + 1];
	enum sym_dfd_state state;
	char *path[2];	  /* per enum sym_debuginfo_kind; NULL = not found */
	int64_t retry_ns; /* SYM_DFD_DONE with a file missing: ask again after */
};

struct sym_debuginfod {
	struct sym_dfd_api api;
	void *lib;
	void (*done)(void *arg, const char *build_id);
	void *arg;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	bool stop;
	VEC(struct sym_dfd_entry) entries; /* linear search: a few thousand binaries at most */
	VEC(size_t) queue;		   /* indexes into entries */
	size_t qhead;
};

static struct sym_debuginfod *sym_dfd_current; /* for the progress callback (one fetcher) */

/* libdebuginfod progress callback: non-zero aborts the transfer (we are stopping). */
static int sym_dfd_progress_stop(debuginfod_client *c, long a, long b)
{
	struct sym_debuginfod *d = sym_dfd_current;

	(void)c;
	(void)a;
	(void)b;
	return d && __atomic_load_n(&d->stop, __ATOMIC_SEQ_CST) ? 1 : 0;
}

static void *sym_dfd_main(void *arg)
{
	struct sym_debuginfod *d = arg;
	debuginfod_client *c = d->api.begin();

	if (c)
		d->api.set_progressfn(c, sym_dfd_progress_stop);
	pthread_mutex_lock(&d->lock);
	for (;;) {
		char id[SYM_BUILD_ID_MAX_HEX + 1];
		char *paths[2] = { NULL, NULL };
		size_t idx;

		while (!d->stop && d->qhead == d->queue.n)
			pthread_cond_wait(&d->cond, &d->lock);
		if (d->stop)
			break;
		idx = d->queue.v[d->qhead++];
		if (d->qhead == d->queue.n)
			d->qhead = d->queue.n = 0;
		snprintf(id, sizeof(id), "%s", d->entries.v[idx].build_id);
		pthread_mutex_unlock(&d->lock);

		for (int k = 0; k < 2 && c; k++) {
			char *p = NULL;
			int fd =
				k == SYM_DI_DEBUGINFO
					? d->api.find_debuginfo(c, (const unsigned char *)id, 0, &p)
					: d->api.find_executable(c, (const unsigned char *)id, 0,
								 &p);

			if (fd >= 0) {
				close(fd);
				paths[k] = p;
			} else {
				free(p);
			}
		}

		pthread_mutex_lock(&d->lock);
		struct sym_dfd_entry *e = &d->entries.v[idx];
		for (int k = 0; k < 2; k++) {
			free(e->path[k]);
			e->path[k] = paths[k];
		}
		e->state = SYM_DFD_DONE;
		e->retry_ns = prof_now_ns() + SYM_DEBUGINFOD_RETRY_NS;
		if (d->stop)
			break;
		if (paths[0] || paths[1]) { /* a miss changes nothing for the symbolizer */
			pthread_mutex_unlock(&d->lock);
			d->done(d->arg, id);
			pthread_mutex_lock(&d->lock);
		}
	}
	pthread_mutex_unlock(&d->lock);
	if (c)
		d->api.end(c);
	return NULL;
}

int sym_debuginfod_new(void (*done)(void *arg, const char *build_id), void *arg,
		       struct sym_debuginfod **out, struct prof_err *err)
{
	const char *urls = getenv("DEBUGINFOD_URLS");
	struct sym_debuginfod *d;
	void *lib;

	*out = NULL;
	if (!urls || !urls[strspn(urls, " \t")])
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1, "DEBUGINFOD_URLS is not set");
	if (sym_dfd_current)
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1,
				    "a debuginfod fetcher is already running");
	lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!lib)
		return prof_err_set(err, -PROF_EUNSUPPORTED, -1,
				    "cannot load libdebuginfod.so.1: %s", dlerror());
	d = xcalloc(1, sizeof(*d));
	d->lib = lib;
#define SYM_DFD_SYM(field, name)                                                                 \
	do {                                                                                     \
		*(void **)&d->api.field = dlsym(lib, name);                                      \
		if (!d->api.field) {                                                             \
			prof_err_set(err, -PROF_EUNSUPPORTED, -1, "libdebuginfod.so.1 lacks %s", \
				     name);                                                      \
			dlclose(lib);                                                            \
			free(d);                                                                 \
			return -PROF_EUNSUPPORTED;                                               \
		}                                                                                \
	} while (0)
	SYM_DFD_SYM(begin, "debuginfod_begin");
	SYM_DFD_SYM(find_debuginfo, "debuginfod_find_debuginfo");
	SYM_DFD_SYM(find_executable, "debuginfod_find_executable");
	SYM_DFD_SYM(set_progressfn, "debuginfod_set_progressfn");
	SYM_DFD_SYM(end, "debuginfod_end");
#undef SYM_DFD_SYM
	d->done = done;
	d->arg = arg;
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	sym_dfd_current = d;
	if (pthread_create(&d->thread, NULL, sym_dfd_main, d) != 0) {
		sym_dfd_current = NULL;
		pthread_mutex_destroy(&d->lock);
		pthread_cond_destroy(&d->cond);
		dlclose(lib);
		free(d);
		return prof_err_set(err, -EAGAIN, -1, "cannot start the debuginfod thread");
	}
	*out = d;
	return 0;
}

void sym_debuginfod_free(struct sym_debuginfod *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	__atomic_store_n(&d->stop, true, __ATOMIC_SEQ_CST);
	pthread_cond_broadcast(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	sym_dfd_current = NULL;
	for (size_t i = 0; i < d->entries.n; i++) {
		free(d->entries.v[i].path[0]);
		free(d->entries.v[i].path[1]);
	}
	VEC_FREE(&d->entries);
	VEC_FREE(&d->queue);
	pthread_mutex_destroy(&d->lock);
	pthread_cond_destroy(&d->cond);
	/* libdebuginfod keeps curl state per process: leave the library loaded. */
	free(d);
}

int sym_debuginfod_lookup(struct sym_debuginfod *d, const char *build_id,
			  enum sym_debuginfo_kind kind, char *path, size_t pathsz)
{
	struct sym_dfd_entry *e = NULL;
	int rc = 0;

	if (!d || !build_id[0] || strlen(build_id) > SYM_BUILD_ID_MAX_HEX)
		return -ENOENT;
	pthread_mutex_lock(&d->lock);
	for (size_t i = 0; i < d->entries.n && !e; i++)
		if (!strcmp(d->entries.v[i].build_id, build_id))
			e = &d->entries.v[i];
	if (e && e->state == SYM_DFD_DONE && e->path[kind]) {
		rc = (size_t)snprintf(path, pathsz, "%s", e->path[kind]) < pathsz ? 1 : -ENOENT;
	} else if (e && e->state == SYM_DFD_DONE && prof_now_ns() < e->retry_ns) {
		rc = -ENOENT;
	} else if (!e || e->state == SYM_DFD_DONE) {
		if (d->queue.n - d->qhead < SYM_DEBUGINFOD_MAX_QUEUE) {
			if (!e) {
				struct sym_dfd_entry ne = { .state = SYM_DFD_QUEUED };

				snprintf(ne.build_id, sizeof(ne.build_id), "%s", build_id);
				VEC_PUSH(&d->entries, ne);
				e = &d->entries.v[d->entries.n - 1];
			}
			e->state = SYM_DFD_QUEUED;
			VEC_PUSH(&d->queue, (size_t)(e - d->entries.v));
			pthread_cond_signal(&d->cond);
		}
	}
	pthread_mutex_unlock(&d->lock);
	return rc;
}
