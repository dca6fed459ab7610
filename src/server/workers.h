/* SPDX-License-Identifier: Apache-2.0 */
/*
 * workers.h - a pool of threads for request handlers that may block
 * (a WAL group commit, a query over a month, a debug info check), so the
 * few threads that serve the sockets never wait on one: the HTTP front
 * suspends the connection (MHD_suspend_connection), hands the request
 * here and resumes it when the answer is ready.
 *
 * Threads are started on demand, up to @max_threads, and then stay; a
 * job submitted while all are busy waits in FIFO order. Jobs are the
 * caller's (struct server_job embedded in its request state): no
 * allocation per job.
 *
 * Calling sequence: server_workers_new -> server_workers_submit from any
 * thread -> server_workers_free, which runs every job already submitted
 * to completion before it returns.
 */
#ifndef PROF_SERVER_WORKERS_H
#define PROF_SERVER_WORKERS_H

#include "base/buf.h"
#include "base/compat.h"

/** struct server_job - one unit of work; the caller owns it until @fn returns. */
struct server_job {
	void (*fn)(struct server_job *job);
	struct server_job *next; /* the pool's */
	int64_t queued_ns;	 /* the pool's: when submitted */
};

struct server_workers;

/**
 * server_workers_new() - a pool named @name (a metric label; static) of
 * at most @max_threads (>= 1) threads, none started yet. Never NULL.
 */
struct server_workers *server_workers_new(const char *name, unsigned max_threads);

/**
 * server_workers_submit() - run @job->fn(@job) on a pool thread, starting
 * one when none is idle and fewer than max_threads run. 0, or -EAGAIN
 * when no thread runs and none could be started (the caller answers
 * 503 itself) or the pool is stopping.
 */
int server_workers_submit(struct server_workers *w, struct server_job *job);

/**
 * server_workers_write_metrics() - append this pool's gauges to @b:
 * profd_workers_threads, _busy, _queued and _limit, with pool="@name",
 * and the counter profd_workers_wait_seconds_total (time jobs waited).
 * Families' HELP/TYPE lines are written when @head is true.
 */
void server_workers_write_metrics(struct server_workers *w, struct buf *b, bool head);

/** server_workers_free() - finish every submitted job, join the threads, free; NULL ok. */
void server_workers_free(struct server_workers *w);

#endif
