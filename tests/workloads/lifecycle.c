// SPDX-License-Identifier: Apache-2.0
/*
 * lifecycle.c - processes at the edges of their lives, for the agent's
 * lifecycle test (tests/integration/test_agent_lifecycle.sh):
 *
 *   lifecycle mainexit SECONDS   the main thread starts a worker and
 *                                calls pthread_exit; the worker spins in
 *                                worker_spin() for SECONDS of CPU time.
 *                                /proc/PID then shows no executable or
 *                                maps (they belong to the main thread).
 *   lifecycle bigexit MIB        touches MIB MiB of memory and exits: the
 *                                kernel then spends tens of milliseconds
 *                                in exit_mmap freeing it, after the
 *                                process's exit tracepoint and without an
 *                                mm (exit_mm cleared it).
 *   lifecycle forkexit MIB N     touches MIB MiB, then forks N children
 *                                one after another that exit at once
 *                                (never exec): each tears down its copy
 *                                of the page tables without an mm, and
 *                                is too short-lived to be sampled alive.
 *   lifecycle forkspin N MS      forks N children one after another, each
 *                                spinning MS ms of CPU in worker_spin() and
 *                                exiting without exec: gone before the
 *                                agent reads them, known only by their
 *                                parent's image.
 *
 * Build: cc -O2 -g -fno-omit-frame-pointer -pthread -o lifecycle lifecycle.c
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile unsigned long sink;

__attribute__((noinline)) static void worker_spin(double seconds)
{
	double end = cpu_seconds() + seconds;

	while (cpu_seconds() < end)
		for (int i = 0; i < 100000; i++)
			sink += (unsigned long)i * 2654435761u;
}

static void *worker(void *arg)
{
	worker_spin(*(double *)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	static double seconds;
	pthread_t t;

	if (argc < 3) {
		fprintf(stderr,
			"usage: lifecycle mainexit SECONDS | bigexit MIB | forkexit MIB N | "
			"forkspin N MS\n");
		return 2;
	}
	if (!strcmp(argv[1], "mainexit")) {
		seconds = atof(argv[2]);
		if (pthread_create(&t, NULL, worker, &seconds))
			return 1;
		pthread_exit(NULL);
	}
	if (!strcmp(argv[1], "forkspin") && argc > 3) {
		int children = atoi(argv[2]);
		double ms = atof(argv[3]);

		for (int i = 0; i < children; i++) {
			pid_t pid = fork();

			if (pid < 0)
				return 1;
			if (pid == 0) {
				worker_spin(ms / 1000.0);
				_exit(0);
			}
			if (waitpid(pid, NULL, 0) != pid)
				return 1;
		}
		return 0;
	}
	if (!strcmp(argv[1], "bigexit") || !strcmp(argv[1], "forkexit")) {
		size_t n = (size_t)atol(argv[2]) << 20;
		int children = argc > 3 ? atoi(argv[3]) : 0;
		char *p = malloc(n);

		if (!p)
			return 1;
		memset(p, 1, n);
		sink = (unsigned long)p[n / 2];
		for (int i = 0; i < children; i++) {
			pid_t pid = fork();

			if (pid < 0)
				return 1;
			if (pid == 0)
				_exit(0);
			if (waitpid(pid, NULL, 0) != pid)
				return 1;
		}
		return 0;
	}
	return 2;
}
