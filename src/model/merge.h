/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merge.h - merge several profiles into one (e.g. the Profiles of an OTLP
 * request, one per sample type, back into one pprof-shaped profile for
 * `profd convert x.otlp.pb y.pb.gz` or `profd top`).
 *
 * The result has the union of the inputs' sample types (equal type and
 * unit strings are one column, in order of first appearance) and one
 * deduplicated dictionary. Samples:
 *   - inputs are taken in order and grouped: an input joins the current
 *     group when it has the same number of samples as the group's first
 *     input, sample i of both has the same stack, labels, timestamp and
 *     link, and its sample types are columns the group does not fill yet.
 *     That is exactly how a K-type pprof profile was split into K OTLP
 *     Profiles (format/otlp.h), so pprof -> OTLP -> pprof gives back the
 *     same samples;
 *   - each group contributes its samples once, with the values of all its
 *     inputs side by side and 0 in the other columns.
 * Profile attributes that every input has (same key and value) stay
 * profile attributes; the others become labels of that input's samples,
 * so nothing that told the inputs apart is lost. Period type, default
 * sample type, drop/keep frames and name come from the first input that
 * sets them (the period with its period type; without one, the first
 * non-zero period); the time range covers all inputs; comments are united.
 *
 * Laws (tests/unit/model/test_merge.c, also over every corpus file):
 *   - order does not matter to any per-type view: for every sample type
 *     and every stack (with its labels) the summed value is the same for
 *     merge(A, B) and merge(B, A), and equals A's plus B's; only the
 *     column order (first appearance) and which aligned inputs are zipped
 *     into one record can differ;
 *   - the empty profile (model_profile_init, no samples or sample types)
 *     is the identity: merge(A, empty) and merge(empty, A) have A's sample
 *     types, samples, values, labels, attributes, period and time range.
 *     Inputs without samples neither add profile attributes nor make
 *     another input's attributes uncommon.
 *
 * Summing is right for cumulative values (CPU time, allocations,
 * contentions over an interval). Gauges -- what was true at one instant,
 * heap in use or a goroutine count -- do not add up over time: two heap
 * snapshots of 1 GiB in use are 1 GiB, not 2.
 * model_profile_merge_over_time averages those instead.
 */
#ifndef PROF_MODEL_MERGE_H
#define PROF_MODEL_MERGE_H

#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"

/**
 * model_profile_merge() - merge the @n profiles @in into @out, which must
 * be freshly initialised (model_profile_init) and is owned by the caller.
 * The inputs are only read. Returns 0, or -PROF_ETOOBIG when the result
 * would exceed the model's 32-bit indexes (@err says which table).
 */
int model_profile_merge(const struct model_profile *const *in, size_t n, struct model_profile *out,
			struct prof_err *err);

/**
 * model_value_type_is_gauge() - true for sample types that measure a state
 * at one instant rather than events over an interval: "inuse_space",
 * "inuse_objects" (Go/pprof heap), "goroutine", "goroutines" (Go
 * goroutine profiles), "thread" (threadz). Types are matched by name;
 * @type may be NULL (false).
 */
bool model_value_type_is_gauge(const char *type);

/**
 * model_profile_merge_over_time() - merge @n profiles of one source taken
 * over consecutive intervals (e.g. heap profiles scraped every 15 s into
 * one for the hour) into @out (freshly initialised, owned by the caller).
 * As model_profile_merge, except for gauge columns
 * (model_value_type_is_gauge) carried by two or more inputs: samples with
 * the same stack, labels, link and timestamp are summed into one record,
 * then each gauge value is divided by the number of inputs that carry the
 * column (an input lacking it, such as the empty profile, does not count),
 * rounded to the nearest integer, halves away from zero. So the gauge
 * totals are the average snapshot (to within half a unit per stack),
 * cumulative columns of the same records are still summed, and a merge
 * without such columns is exactly model_profile_merge. Errors as
 * model_profile_merge.
 */
int model_profile_merge_over_time(const struct model_profile *const *in, size_t n,
				  struct model_profile *out, struct prof_err *err);

#endif
