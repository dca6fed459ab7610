/* SPDX-License-Identifier: Apache-2.0 */
/*
 * delta.h - cumulative profiles into deltas, and the shaping of a scraped
 * profile by its kind.
 *
 * Go's mutex, block, allocs (and threadcreate) profiles count since the
 * process started (docs/formats.md "Go runtime profiles"): storing each scrape as is
 * would count a contention burst once per scrape for ever after. profd
 * stores differences instead, computed here exactly once, on the
 * scraping side (the server and a forwarder's receiver store what they
 * get): the previous scrape of the same target and endpoint is kept as a
 * baseline keyed by stack, and each new scrape becomes, per stack and
 * value column, current - baseline. The first scrape only primes the
 * baseline (nothing is stored: its values are the whole process history,
 * not one interval). A value below its baseline means the counters
 * restarted (the process restarted): the current value is the delta
 * then. Stacks whose delta is zero in every column are dropped.
 *
 * The identity of a sample is a 64-bit hash (XXH3) of its stack (per
 * location: address, mapping file, and each inline line's function name,
 * system name, file and line) and its labels (keys and values as text),
 * so it does not depend on the ids a pprof encoder happened to assign.
 * Samples with equal identity are summed first.
 *
 * Exactly once, also across failures: scrape_delta_compute leaves the new
 * baseline *pending*; the caller commits it only when the delta was
 * accepted by the store or forwarder, and discards it otherwise, so the
 * next delta covers both intervals and nothing is counted twice or lost.
 * A change of the sample types resets the baseline (priming again).
 *
 * Memory: the baseline holds one key and one value per column per
 * distinct stack of the last accepted scrape. Not thread-safe: one
 * struct scrape_delta per target and endpoint, used by its scrape thread.
 */
#ifndef PROF_SCRAPE_DELTA_H
#define PROF_SCRAPE_DELTA_H

#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"
#include "scrape/config.h"

struct scrape_delta;

/** scrape_delta_new() - an empty baseline; free with scrape_delta_free. */
struct scrape_delta *scrape_delta_new(void);
/** scrape_delta_free() - NULL ok. */
void scrape_delta_free(struct scrape_delta *d);

/**
 * scrape_delta_compute() - replace the values of the cumulative profile
 * @p (modified in place: samples summed by identity, zero deltas
 * removed) by their difference from the committed baseline, and make @p
 * the pending baseline (its totals, taken before the subtraction).
 * *@had_base is false when there was no usable baseline: @p is then
 * left with no samples (priming). @p->duration_ns becomes the time since
 * the baseline's time_ns when both are known. Returns 0 or -PROF_ETOOBIG
 * (more than 2^31 samples).
 */
int scrape_delta_compute(struct scrape_delta *d, struct model_profile *p, bool *had_base,
			 struct prof_err *err);

/** scrape_delta_commit() - the pending baseline becomes the baseline. */
void scrape_delta_commit(struct scrape_delta *d);
/** scrape_delta_discard() - drop the pending baseline; the old one stays. */
void scrape_delta_discard(struct scrape_delta *d);
/** scrape_delta_stacks() - distinct stacks in the committed baseline (for tests, stats). */
size_t scrape_delta_stacks(const struct scrape_delta *d);

/**
 * scrape_profile_shape() - give a decoded scrape of kind @k its profd
 * shape: the profile name of the type id (process_cpu, memory, mutex,
 * block, goroutine, threadcreate; a custom endpoint's own name @custom),
 * and for heap only the inuse_* columns (a gauge: alloc_* is what the
 * allocs endpoint delivers, as deltas) and for allocs only the alloc_*
 * columns. When the columns a kind wants are absent all are kept. @p is
 * modified in place.
 */
void scrape_profile_shape(struct model_profile *p, enum scrape_kind k, const char *custom);

/**
 * scrape_profile_keep_columns() - keep only the value columns whose
 * type name starts with @prefix (values and default_sample_type adjusted).
 * Returns how many were kept; 0 leaves @p unchanged.
 */
size_t scrape_profile_keep_columns(struct model_profile *p, const char *prefix);

#endif
