// SPDX-License-Identifier: Apache-2.0
/*
 * ctxthreads.c - threads switching spans, published with otelctx.h: each
 * of two threads runs SPANS spans one after another, alternately in
 * spin_red() and spin_blue(), each for MS ms of its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID), then one span blocked ~300 ms in read(2) on
 * a pipe another thread writes to later. The threads take turns (thread
 * 0's first span, thread 1's first, thread 0's second, ...), so each span
 * runs alone and its CPU time is not sliced with its sibling's: the
 * samples per span then vary less around their expectation. Before the spans every thread
 * spins 300 ms without a span and all wait WAIT ms, so the agent has seen
 * the process before the first span. Prints one line per span:
 *   span <thread> <fn> <trace hex> <span hex> <cpu ns>
 * Usage: ctxthreads SPANS MS WAIT_MS. For test_agent_trace.sh.
 */
#include "ctxspin.h"
#include "otelctx.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static int spans, ms, wait_ms;
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_cond = PTHREAD_COND_INITIALIZER;
static long turn; /* the span number * 2 + thread whose turn it is */

static void *feed(void *arg)
{
	int fd = *(int *)arg;

	usleep(300000);
	if (write(fd, "x", 1) != 1)
		abort();
	return NULL;
}

__attribute__((noinline)) static void block_on_pipe(void)
{
	int fds[2];
	char c;
	pthread_t t;

	if (pipe(fds))
		abort();
	pthread_create(&t, NULL, feed, &fds[1]);
	if (read(fds[0], &c, 1) != 1)
		abort();
	pthread_join(t, NULL);
	close(fds[0]);
	close(fds[1]);
}

static void new_ids(unsigned *seed, uint8_t trace[16], uint8_t span[8])
{
	for (int i = 0; i < 16; i++)
		trace[i] = (uint8_t)rand_r(seed);
	for (int i = 0; i < 8; i++)
		span[i] = (uint8_t)rand_r(seed);
	trace[0] |= 1;
	span[0] |= 1;
}

static void print_span(long id, const char *fn, const uint8_t trace[16], const uint8_t span[8],
		       long long ns)
{
	pthread_mutex_lock(&out_lock);
	printf("span %ld %s ", id, fn);
	for (int i = 0; i < 16; i++)
		printf("%02x", trace[i]);
	printf(" ");
	for (int i = 0; i < 8; i++)
		printf("%02x", span[i]);
	printf(" %lld\n", ns);
	fflush(stdout);
	pthread_mutex_unlock(&out_lock);
}

static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned seed = (unsigned)(time(NULL) ^ (getpid() << 8) ^ (unsigned)id * 7919u);
	uint8_t trace[16], span[8];

	otelctx_thread_init();
	spin_red(300000000LL);
	usleep((useconds_t)wait_ms * 1000);
	for (int k = 0; k < spans; k++) {
		int red = (k + (int)id) % 2 == 0;
		long long t0;

		pthread_mutex_lock(&turn_lock);
		while (turn != k * 2 + id)
			pthread_cond_wait(&turn_cond, &turn_lock);
		pthread_mutex_unlock(&turn_lock);
		new_ids(&seed, trace, span);
		otelctx_enter(trace, span);
		t0 = thread_cpu_ns();
		if (red)
			spin_red((long long)ms * 1000000);
		else
			spin_blue((long long)ms * 1000000);
		t0 = thread_cpu_ns() - t0;
		otelctx_leave();
		print_span(id, red ? "spin_red" : "spin_blue", trace, span, t0);
		pthread_mutex_lock(&turn_lock);
		turn++;
		pthread_cond_broadcast(&turn_cond);
		pthread_mutex_unlock(&turn_lock);
	}
	new_ids(&seed, trace, span);
	otelctx_enter(trace, span);
	block_on_pipe();
	otelctx_leave();
	print_span(id, "block_on_pipe", trace, span, 0);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[2];

	if (argc != 4) {
		fprintf(stderr, "usage: ctxthreads SPANS MS WAIT_MS\n");
		return 2;
	}
	spans = atoi(argv[1]);
	ms = atoi(argv[2]);
	wait_ms = atoi(argv[3]);
	for (long i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, (void *)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	return 0;
}
