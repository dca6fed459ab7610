// SPDX-License-Identifier: Apache-2.0
/*
 * workers.c - on-demand thread pool for blocking request handlers; see
 * workers.h. One mutex and condition variable: a job queue is touched
 * once per request, far below the cost of the handlers it runs.
 */
#include "base/compat.h"
#include "base/log.h"
#include "base/mem.h"
#include "base/parse.h"
#include "server/workers.h"

#include <pthread.h>

struct server_workers {
	const char *name;
	unsigned max_threads;
	pthread_mutex_t mu;
	pthread_cond_t cond;
	struct server_job *head, *tail;
	unsigned queued, threads, idle, busy;
	uint64_t wait_ns;
	bool stop;
	VEC(pthread_t) tids;
};

static void *worker_main(void *arg)
{
	struct server_workers *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct server_job *j = w->head;

		if (!j) {
			if (w->stop)
				break;
			w->idle++;
			pthread_cond_wait(&w->cond, &w->mu);
			w->idle--;
			continue;
		}
		w->head = j->next;
		if (!w->head)
			w->tail = NULL;
		w->queued--;
		w->busy++;
		w->wait_ns += (uint64_t)(prof_now_ns() - j->queued_ns);
		pthread_mutex_unlock(&w->mu);
		j->fn(j); /* may free @j */
		pthread_mutex_lock(&w->mu);
		w->busy--;
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

struct server_workers *server_workers_new(const char *name, unsigned max_threads)
{
	struct server_workers *w = xcalloc(1, sizeof(*w));

	w->name = name;
	w->max_threads = max_threads ? max_threads : 1;
	pthread_mutex_init(&w->mu, NULL);
	pthread_cond_init(&w->cond, NULL);
	return w;
}

int server_workers_submit(struct server_workers *w, struct server_job *job)
{
	pthread_mutex_lock(&w->mu);
	if (w->stop) {
		pthread_mutex_unlock(&w->mu);
		return -EAGAIN;
	}
	job->next = NULL;
	job->queued_ns = prof_now_ns();
	/* Jobs queued ahead will each take an idle thread: start one when
	 * this job would otherwise wait for a busy one. */
	if (w->idle <= w->queued && w->threads < w->max_threads) {
		pthread_t t;

		if (pthread_create(&t, NULL, worker_main, w) == 0) {
			VEC_PUSH(&w->tids, t);
			w->threads++;
		} else if (!w->threads) {
			pthread_mutex_unlock(&w->mu);
			log_error("server: cannot start a %s worker thread", w->name);
			return -EAGAIN;
		}
	}
	if (w->tail)
		w->tail->next = job;
	else
		w->head = job;
	w->tail = job;
	w->queued++;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

void server_workers_write_metrics(struct server_workers *w, struct buf *b, bool head)
{
	unsigned threads, busy, queued;
	uint64_t wait_ns;

	pthread_mutex_lock(&w->mu);
	threads = w->threads;
	busy = w->busy;
	queued = w->queued;
	wait_ns = w->wait_ns;
	pthread_mutex_unlock(&w->mu);
	if (head)
		(void)buf_addstr(
			b, "# HELP profd_workers_threads Handler threads started per pool.\n"
			   "# TYPE profd_workers_threads gauge\n"
			   "# HELP profd_workers_busy Handler threads running a request.\n"
			   "# TYPE profd_workers_busy gauge\n"
			   "# HELP profd_workers_queued Requests waiting for a handler thread.\n"
			   "# TYPE profd_workers_queued gauge\n"
			   "# HELP profd_workers_limit Handler threads a pool may start.\n"
			   "# TYPE profd_workers_limit gauge\n"
			   "# HELP profd_workers_wait_seconds_total Time requests waited for a "
			   "handler thread.\n"
			   "# TYPE profd_workers_wait_seconds_total counter\n");
	(void)buf_addf(b,
		       "profd_workers_threads{pool=\"%s\"} %u\nprofd_workers_busy{pool=\"%s\"} %u\n"
		       "profd_workers_queued{pool=\"%s\"} %u\nprofd_workers_limit{pool=\"%s\"} %u\n"
		       "profd_workers_wait_seconds_total{pool=\"%s\"} %.6f\n",
		       w->name, threads, w->name, busy, w->name, queued, w->name, w->max_threads,
		       w->name, (double)wait_ns / 1e9);
}

void server_workers_free(struct server_workers *w)
{
	if (!w)
		return;
	pthread_mutex_lock(&w->mu);
	w->stop = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->mu);
	for (size_t i = 0; i < w->tids.n; i++)
		pthread_join(w->tids.v[i], NULL);
	VEC_FREE(&w->tids);
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->mu);
	free(w);
}
