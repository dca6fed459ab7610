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
 *
 * "offcpu SECONDS gap" first makes sure its stack has a page that was
 * never touched between main's frames and the end of the environment
 * strings (the kernel's random 0-8 KiB gap at exec spans a whole page in
 * some runs only): it checks /proc/self/pagemap and re-executes itself
 * until it has one (at most 300 times, then it runs without). A one-piece BPF copy of such a
 * stack fails; test_agent_offcpu.sh checks the agent's copy does not.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

/* Whether a page between our frame and env_end (/proc/self/stat field 51) is not present. */
__attribute__((noinline)) static int stack_has_gap(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0), env_end = 0, page;
	char buf[4096], *p;
	ssize_t n;
	int fd, field = 2, gap = 0;

	fd = open("/proc/self/stat", O_RDONLY);
	n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the command name may hold spaces */
	while (p && *p && field < 51) {
		p = strchr(p + 1, ' ');
		field++;
	}
	if (!p)
		return 0;
	env_end = (uintptr_t)strtoull(p + 1, NULL, 10);
	fd = open("/proc/self/pagemap", O_RDONLY);
	if (fd < 0)
		return 0;
	for (page = sp & ~(uintptr_t)4095; page < env_end && !gap; page += 4096) {
		uint64_t e = 0;

		if (pread(fd, &e, sizeof(e), (off_t)(page / 4096 * 8)) == sizeof(e) && !(e >> 63))
			gap = 1;
	}
	close(fd);
	return gap;
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[2], "gap") && !stack_has_gap()) {
		char tries[16], *args[] = { argv[0], argv[1], argv[2], tries, NULL };
		int n = argc > 3 ? atoi(argv[3]) : 0;

		if (n < 300) {
			snprintf(tries, sizeof(tries), "%d", n + 1);
			/* By the same path: the process keeps its name (not "exe"). */
			execv(strchr(argv[0], '/') ? argv[0] : "/proc/self/exe", args);
			return 5;
		}
		/* Rare, but seen: run without one rather than fail the test. */
		fprintf(stderr, "offcpu: no stack gap after %d tries; running without one\n", n);
	}

	double seconds = argc > 1 ? atof(argv[1]) : 6.0, end, t_sleep = 0, t_pipe = 0;
	int req[2], resp[2];
	pid_t child;

	if (!(seconds > 0) || pipe(req) || pipe(resp)) {
		fprintf(stderr, "usage: offcpu [SECONDS [gap]]\n");
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
