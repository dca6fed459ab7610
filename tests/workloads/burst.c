// SPDX-License-Identifier: Apache-2.0
/*
 * burst.c - short-lived processes for test_agent_shortlived.sh. Built
 * twice by the test: as "spawner", which starts RATE processes a second
 * (posix_spawn + wait) for SECONDS, and with SPAWN_MIN set in the
 * environment runs on past SECONDS until it has started that many, but
 * for at most 5 * SECONDS (a loaded machine spawns slower: 20 a second
 * were seen instead of 100); and as "burst", each of which spins in
 * burn() until it has used MS milliseconds of CPU, or 4 * MS of wall time
 * if a loaded machine gives it less, and exits, so every process lives a
 * few milliseconds, far less than the agent's 100 ms poll, and spends
 * most of its CPU in burn() however loaded the machine is.
 *
 *   spawner SECONDS RATE PATH-TO-burst MS
 *   burst MS
 */
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;
static volatile uint64_t sink;

static double clock_s(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now_s(void)
{
	return clock_s(CLOCK_MONOTONIC);
}

__attribute__((noinline)) void burn(double ms)
{
	double end = now_s() + 4 * ms / 1000.0;
	double cpu_end = clock_s(CLOCK_PROCESS_CPUTIME_ID) + ms / 1000.0;
	uint64_t x = 1;

	while (now_s() < end && clock_s(CLOCK_PROCESS_CPUTIME_ID) < cpu_end)
		for (int i = 0; i < 20000; i++) {
			x = x * 6364136223846793005ULL + 1442695040888963407ULL;
			__asm__ volatile("" : "+r"(x));
		}
	sink = x;
}

__attribute__((noinline)) int spawn_loop(double seconds, double rate, char *path, char *ms)
{
	double start = now_s(), next = start;
	char *argv[] = { path, ms, NULL };
	const char *min_env = getenv("SPAWN_MIN");
	long started = 0, min = min_env ? atol(min_env) : 0;

	while (now_s() < start + seconds || (started < min && now_s() < start + 5 * seconds)) {
		pid_t pid;
		struct timespec ts;
		double wait_s;

		if (posix_spawn(&pid, path, NULL, NULL, argv, environ) != 0)
			return 1;
		waitpid(pid, NULL, 0);
		started++;
		next += 1.0 / rate;
		wait_s = next - now_s();
		if (wait_s > 0) {
			ts.tv_sec = (time_t)wait_s;
			ts.tv_nsec = (long)((wait_s - (double)ts.tv_sec) * 1e9);
			nanosleep(&ts, NULL);
		}
	}
	printf("spawner: %ld processes in %.1f s\n", started, now_s() - start);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5)
		return spawn_loop(atof(argv[1]), atof(argv[2]), argv[3], argv[4]);
	if (argc == 2) {
		burn(atof(argv[1]));
		return 0;
	}
	fprintf(stderr, "usage: spawner SECONDS RATE PATH MS | burst MS\n");
	return 2;
}
