/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selfprof.h - profd profiling its own CPU (`profd server --self-profile`),
 * stored like any other CPU profile in the series
 * {job="profd-self", service.name="profd-self", instance=<host>}.
 *
 * How: setitimer(ITIMER_PROF) at @hz; the kernel sends SIGPROF to the
 * thread that was running when a period of process CPU time elapsed (the
 * tick's current task: CPU-bound threads are sampled in proportion to
 * their CPU time, as Go's runtime profiler did before 1.18). The handler
 * records the interrupted PC (from the ucontext) and the stack above it
 * (glibc backtrace(), i.e. .eh_frame unwinding, primed once outside the
 * handler so it never allocates inside) into a fixed ring of slots,
 * lock-free (a slot is claimed by an atomic index and published with a
 * release store); a full ring drops the sample and counts it. A thread
 * drains the ring every @period and stores one profile: samples/count and
 * cpu/nanoseconds (value = 1e9/hz per sample), period type
 * cpu/nanoseconds, unsymbolized native frames in the project's convention
 * (docs/design.md: ELF virtual address + mapping path + GNU build ID,
 * non-leaf return addresses moved back one byte, found with
 * dl_iterate_phdr), so the server's own query-time symbolizer names them.
 *
 * Costs and caveats: about hz signals per second of busy CPU; a signal
 * can cut short a blocking call that is not restarted (SA_RESTART is set;
 * poll/nanosleep may return EINTR, which their callers here handle).
 * x86-64 and arm64 only (the PC is read from the ucontext). One per
 * process (the timer and the signal are process-wide).
 */
#ifndef PROF_SCRAPE_SELFPROF_H
#define PROF_SCRAPE_SELFPROF_H

#include "base/compat.h"
#include "base/err.h"
#include "scrape/scrape.h"

#define SCRAPE_SELFPROF_DEFAULT_HZ 97 /* not 100: avoid lockstep with periodic work */

struct scrape_selfprof;

/**
 * scrape_selfprof_new() - start sampling this process at @hz (1..1000; 0 =
 * the default), storing a profile through @sink (copied; its dataset is
 * NULL = the default) every 10 s. Errors: -EBUSY when another self
 * profiler runs in the process, -EINVAL for a bad @hz, -PROF_EUNSUPPORTED
 * on other architectures, -errno from sigaction/setitimer/pthread_create.
 */
int scrape_selfprof_new(unsigned hz, const struct scrape_sink *sink, struct scrape_selfprof **out,
			struct prof_err *err);

/**
 * scrape_selfprof_flush() - store what the ring holds now (also done by
 * the thread every period); returns the number of samples stored, or a
 * negative code from the sink.
 */
int scrape_selfprof_flush(struct scrape_selfprof *s);

/** scrape_selfprof_dropped() - samples dropped because the ring was full. */
uint64_t scrape_selfprof_dropped(const struct scrape_selfprof *s);

/** scrape_selfprof_free() - stop the timer, store the rest, free. NULL ok. */
void scrape_selfprof_free(struct scrape_selfprof *s);

#endif
