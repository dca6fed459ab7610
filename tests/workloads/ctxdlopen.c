// SPDX-License-Identifier: Apache-2.0
/*
 * ctxdlopen.c - the OpenTelemetry thread-context publisher (otelctx.h)
 * loaded with dlopen, as a tracer loaded into a running program is: a
 * thread created before the dlopen spins MS ms in spin_blue() and never
 * touches the library (its TLS block for the library is never allocated
 * when the library is in dynamic TLS); a thread created after it enters
 * one span and spins MS ms in spin_red(). After the dlopen the main
 * thread spins 300 ms in warm_up() and the others wait 1.2 s more, so the
 * agent has seen the process (and its library) before either spins. Prints
 *   span 0 spin_red <trace hex> <span hex> <cpu ns>
 *   nospan 1 spin_blue <cpu ns>
 * Usage: ctxdlopen LIBRARY MS. For test_agent_trace.sh.
 */
#include "ctxspin.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void (*init_fn)(void);
static void (*enter_fn)(const uint8_t trace_id[16], const uint8_t span_id[8]);
static void (*leave_fn)(void);
static long long ms;

static void *in_span(void *arg)
{
	unsigned seed = (unsigned)(time(NULL) ^ (getpid() << 8));
	uint8_t trace[16], span[8];
	long long t0;

	for (int i = 0; i < 16; i++)
		trace[i] = (uint8_t)rand_r(&seed);
	for (int i = 0; i < 8; i++)
		span[i] = (uint8_t)rand_r(&seed);
	trace[0] |= 1;
	span[0] |= 1;
	init_fn();
	enter_fn(trace, span);
	t0 = thread_cpu_ns();
	spin_red(ms * 1000000);
	t0 = thread_cpu_ns() - t0;
	leave_fn();
	printf("span 0 spin_red ");
	for (int i = 0; i < 16; i++)
		printf("%02x", trace[i]);
	printf(" ");
	for (int i = 0; i < 8; i++)
		printf("%02x", span[i]);
	printf(" %lld\n", t0);
	fflush(stdout);
	return arg;
}

__attribute__((noinline)) static void warm_up(long long ns)
{
	spin_blue(ns);
}

static void *untouched(void *arg)
{
	long long t0;

	usleep(1500000); /* after the dlopen and the warm-up */
	t0 = thread_cpu_ns();
	spin_blue(ms * 1000000);
	printf("nospan 1 spin_blue %lld\n", thread_cpu_ns() - t0);
	fflush(stdout);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	void *h;

	if (argc != 3) {
		fprintf(stderr, "usage: ctxdlopen LIBRARY MS\n");
		return 2;
	}
	ms = atoll(argv[2]);
	pthread_create(&b, NULL, untouched, NULL);
	if (!(h = dlopen(argv[1], RTLD_NOW))) {
		fprintf(stderr, "ctxdlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&init_fn = dlsym(h, "otelctx_thread_init");
	*(void **)&enter_fn = dlsym(h, "otelctx_enter");
	*(void **)&leave_fn = dlsym(h, "otelctx_leave");
	if (!init_fn || !enter_fn || !leave_fn) {
		fprintf(stderr, "ctxdlopen: %s has no otelctx functions\n", argv[1]);
		return 1;
	}
	warm_up(300000000LL);
	pthread_join(b, NULL); /* one spinning thread at a time */
	pthread_create(&a, NULL, in_span, NULL);
	pthread_join(a, NULL);
	return 0;
}
