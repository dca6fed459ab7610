/* SPDX-License-Identifier: Apache-2.0 */
/*
 * units.h - profile type ids and the units of their values:
 *
 *   name:sample_type:sample_unit:period_type:period_unit
 *   process_cpu:cpu:nanoseconds:cpu:nanoseconds
 *
 * (the Pyroscope/Parca convention, model_profile_type_id). Values are
 * shown in their unit: nanoseconds as durations ("1.25s", "340ms"), bytes
 * as binary sizes ("12.0MiB"), everything else as plain counts with a
 * thousands suffix when large ("1.23M").
 *
 * Cumulative vs gauge: a sample of a cumulative type is a cost accrued
 * over time (CPU time, allocated bytes, contentions, delay), so values
 * add up over a time range and have a rate; a gauge type is a snapshot
 * (heap in use, goroutines alive), so a range is summarized by averaging
 * snapshots. Gauges: sample types starting with "inuse", and profile
 * names or sample types "goroutine" / "goroutines".
 */
#ifndef PROF_QUERY_UNITS_H
#define PROF_QUERY_UNITS_H

#include "base/compat.h"

/** struct query_type_id - the five fields of a type id, NUL-terminated, truncated to fit. */
struct query_type_id {
	char name[64], sample_type[64], sample_unit[64], period_type[64], period_unit[64];
};

/**
 * query_type_split() - split @id into @out. Missing fields are "". Returns
 * true when @id has exactly five ':'-separated fields.
 */
bool query_type_split(const char *id, struct query_type_id *out);

/** query_type_is_cumulative() - false for gauge types (see above). */
bool query_type_is_cumulative(const char *id);

/**
 * query_unit_format() - write @v in @unit to @out (always NUL-terminated):
 * "nanoseconds" -> "1.25s", "bytes" -> "1.50MiB", else "12345" or "1.23M".
 * Returns @out.
 */
char *query_unit_format(const char *unit, double v, char *out, size_t outsz);

#endif
