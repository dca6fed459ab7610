/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr.h - Java Flight Recorder decoder (JDK 11+ and async-profiler
 * recordings, version 2.x, plain or gzipped), docs/formats.md "JFR layout".
 *
 * A recording is a sequence of self-contained chunks (header, metadata,
 * constant pools, events). One call turns the events of one *family* into
 * one profile with two value columns:
 *
 *   family  JFR events read                                 columns (type/unit)
 *   cpu     jdk.CPUTimeSample if the file has any (JDK 25), samples/count,
 *           else jdk.ExecutionSample (JDK, async-profiler    cpu/nanoseconds
 *           cpu/itimer/ctimer/perf engines)
 *   wall    profiler.WallClockSample, jdk.ExecutionSample    samples/count,
 *           of chunks whose async-profiler engine is "wall", wall/nanoseconds
 *           jdk.NativeMethodSample (JDK: threads in native)
 *   alloc   jdk.ObjectAllocationSample if the file has any,  alloc_objects/count,
 *           else jdk.ObjectAllocationInNewTLAB + ...Outside  alloc_space/bytes
 *   lock    jdk.JavaMonitorEnter + jdk.ThreadPark            contentions/count,
 *                                                            delay/nanoseconds
 *   malloc  profiler.Malloc (async-profiler's nativemem      alloc_objects/count,
 *           mode: native allocations)                        alloc_space/bytes
 *
 * Values per event: cpu and wall count 1 (WallClockSample: its `samples`
 * field) and the sampling period in ns (CPUTimeSample: its samplingPeriod;
 * WallClockSample: its timeSpan when present, else samples x interval;
 * else the period from the chunk's jdk.ActiveSetting events: JDK "period"
 * of the event type, async-profiler "interval"/"wall"; defaults 20 ms for
 * JDK events, 10 ms async-profiler cpu, 50 ms async-profiler wall). alloc
 * counts 1 and bytes = weight (ObjectAllocationSample), tlabSize
 * (InNewTLAB, the JDK/async-profiler/Pyroscope estimate; allocationSize
 * with opts->tlab_allocation_size), allocationSize (OutsideTLAB). lock
 * counts 1 and the event duration in ns. malloc counts 1 and bytes = size;
 * profiler.Free events (the same mode's frees, for leak views) are not
 * read: the malloc profile is what was allocated, as async-profiler's
 * converter shows it without --leak.
 *
 * Output shape: frames leaf first, one location per (method, line), the
 * function name "<class name as stored>.<method name>" (class names keep
 * the JVM's '/' separators: "java/lang/Thread.run"; an empty class gives
 * ".name", as async-profiler native frames). A stack the recorder cut
 * (StackTrace.truncated) gets a "[truncated]" root frame. Locations carry
 * profile.frame.type "jvm", "native" (Native, C++) or "kernel". Each
 * sample has labels thread.name (Java name, else OS name) and thread.id
 * (Java thread id, else OS thread id) when the event has a thread, and
 * its timestamp in ns since the epoch. Events without a stack become
 * samples with an empty stack (so totals match `jfr print`). The profile
 * name is process_cpu / wall / memory (alloc and malloc); lock leaves it
 * to the model (contention). time_ns/duration_ns span the chunks. When the
 * family has no events in the recording but other families have, the
 * profile gets the comment "jfr: no alloc events; the recording has events
 * of the families malloc (--event)".
 *
 * Times: ns = chunk start_nanos + (ticks - start_ticks) * 1e9 /
 * ticks_per_second, computed exactly (128-bit integers) per chunk
 * (docs/formats.md "JFR layout"); durations likewise (we convert them to
 * nanoseconds, where grafana/jfr-parser passes ticks through). On every corpus file this
 * equals `jfr print` of JDK 17.0.15 to the nanosecond, tick rates of
 * 1.8 and 2.3 GHz included (some JDK versions' TimeConverter divides by
 * ticks_per_second / 1e9 in integer arithmetic; their `jfr` then differs).
 *
 * Leniency, chosen and documented: an empty constant pool is accepted
 * (the JDK rejects it; jfrp-fastslow-multichunk's middle chunk has an empty
 * StackTrace pool, and the chunks around it decode as `jfr print` of each
 * chunk alone); a key missing from its pool reads as null (no stack, no
 * thread, "[unknown]" method), as the JDK parser does; a trailing chunk
 * still being written (constant pool or metadata offset 0, as
 * async-profiler leaves it) is skipped when an earlier chunk was complete,
 * while a chunk whose size runs past the end of the input (a cut file) is
 * an error; async-profiler settings carry over to its later chunks, which
 * do not repeat them. Bytes after the metadata tree or after a record's
 * known fields are ignored (writers may append fields, docs/formats.md "JFR layout").
 * A jdk.ActiveSetting record whose fields cannot be read (a bad string
 * encoding or length) is skipped and counted (model_profile_skip: the
 * profile's @skipped says how many and the first reason): the record's
 * size frames it, and a setting only tunes a period, whose default then
 * applies. Records of the events read stay strict: they are the data.
 *
 * Not supported (-PROF_EUNSUPPORTED): JFR 1.x (JDK 7/8), chunks without
 * compressed integers (no known writer), array dimensions above 1.
 */
#ifndef PROF_FORMAT_JFR_H
#define PROF_FORMAT_JFR_H

#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"

/** Decompressed-size cap applied when opts->max_decoded is 0. */
#define FMT_JFR_DEFAULT_MAX (1024u << 20)

enum fmt_jfr_event {
	FMT_JFR_CPU = 0,
	FMT_JFR_WALL,
	FMT_JFR_ALLOC,
	FMT_JFR_LOCK,
	FMT_JFR_MALLOC,
};

struct fmt_jfr_opts {
	enum fmt_jfr_event event; /* the family to convert */
	/*
	 * NULL, or the name of one JFR event type to read instead of the
	 * family's set (testing, inspection): one of the types listed above
	 * for the family, or jdk.JavaMonitorWait for lock. jdk.ExecutionSample
	 * is valid for cpu and wall and then reads every such event.
	 */
	const char *event_type;
	bool tlab_allocation_size; /* alloc: InNewTLAB bytes = allocationSize, not tlabSize */
	size_t max_decoded;	   /* gunzip cap in bytes; 0 = FMT_JFR_DEFAULT_MAX */
};

/**
 * fmt_jfr_event_parse() - "cpu", "wall", "alloc", "lock" or "malloc" into @out.
 * Returns 0 or -EINVAL.
 */
int fmt_jfr_event_parse(const char *s, enum fmt_jfr_event *out);

/** fmt_jfr_event_name() - "cpu", "wall", "alloc", "lock", "malloc" ("?" when out of range). */
const char *fmt_jfr_event_name(enum fmt_jfr_event e);

/**
 * fmt_jfr_sniff() - true when @data is a JFR recording: it starts with
 * the chunk magic "FLR\0", or it is gzip whose first inflated bytes are
 * that magic (only a few bytes are inflated).
 */
bool fmt_jfr_sniff(const void *data, size_t n);

/**
 * fmt_jfr_decode() - decode the JFR recording at @data (@n bytes; gzip is
 * sniffed by its magic and inflated under opts->max_decoded) into @out,
 * initialised by the caller (model_profile_init) and owned by the caller;
 * @out must be empty. @opts may be NULL (cpu, defaults). The input is only
 * read and need not outlive the call. A recording without events of the
 * family gives a profile with its two sample types and no samples.
 *
 * Errors (@err says where: "chunk N (at byte C): <part>: <reason> at byte
 * X", err->offset = X, an offset in the gunzipped bytes when the input
 * was gzipped, and the message says so):
 *   -EINVAL            bad @opts (unknown event type for the family);
 *   -PROF_EFORMAT      not a JFR recording (bad chunk magic);
 *   -PROF_ECORRUPT     truncated chunk/record/varint, a length or count
 *                      past the end of its record, bad string encoding
 *                      (outside jdk.ActiveSetting records),
 *                      metadata that refers to unknown types, a constant
 *                      pool chain that does not lead backwards, nesting
 *                      deeper than 16 levels, ...;
 *   -PROF_ETOOBIG      input or gunzipped size over the cap or over 4 GiB,
 *                      or a result beyond the model's 32-bit indexes;
 *   -PROF_EUNSUPPORTED JFR 1.x, uncompressed integers, multi-dimensional arrays.
 * On error @out holds whatever was decoded so far; release it.
 * Memory: bounded by a small multiple of the (decompressed) input size;
 * no recursion deeper than 16 levels. Not thread-safe per @out.
 */
int fmt_jfr_decode(const void *data, size_t n, const struct fmt_jfr_opts *opts,
		   struct model_profile *out, struct prof_err *err);

#endif
