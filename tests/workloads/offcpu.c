// SPDX-License-Identifier: Apache-2.0
/*
 * offcpu.c - off-CPU workload for test_agent_offcpu.sh: one thread that,
 * in turn, sleeps 200 ms in in_sleep() (nanosleep) and blocks in
 * in_pipe() on a pipe read that a child process answers 100 ms after
 * being asked; so its blocked time splits 2:1 between the two functions
 * (~67 % / ~33 %), whatever the machine's load. Runs for SECONDS
 * (default 6) and prints the measured blocked time of each function.
 *
 * Built by the test with the distribution's defaults (-O2, no frame
 * pointers): the stacks are recovered with .eh_frame unwinding through
 * libc's syscall wrappers.
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) double in_sleep(void)
{
	struct timespec ts = { 0, 200 * 1000000L };
	double t0 = now_s();

	nanosleep(&ts, NULL);
	return now_s() - t0;
}

__attribute__((noinline)) double in_pipe(int ask, int answer)
{
	double t0 = now_s();
	char c = 'x';

	if (write(ask, &c, 1) != 1 || read(answer, &c, 1) != 1)
		exit(3);
	return now_s() - t0;
}

/* The child: answer each request 100 ms later. */
static void feeder(int req, int resp)
{
	struct timespec ts = { 0, 100 * 1000000L };
	char c;

	while (read(req, &c, 1) == 1) {
		nanosleep(&ts, NULL);
		if (write(resp, &c, 1) != 1)
			break;
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? atof(argv[1]) : 6.0, end, t_sleep = 0, t_pipe = 0;
	int req[2], resp[2];
	pid_t child;

	if (!(seconds > 0) || pipe(req) || pipe(resp)) {
		fprintf(stderr, "usage: offcpu [SECONDS]\n");
		return 2;
	}
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		close(req[1]);
		close(resp[0]);
		feeder(req[0], resp[1]);
	}
	close(req[0]);
	close(resp[1]);
	end = now_s() + seconds;
	while (now_s() < end) {
		t_sleep += in_sleep();
		t_pipe += in_pipe(req[1], resp[0]);
	}
	close(req[1]);
	kill(child, SIGTERM);
	printf("offcpu: in_sleep %.3f s in_pipe %.3f s\n", t_sleep, t_pipe);
	return 0;
}
