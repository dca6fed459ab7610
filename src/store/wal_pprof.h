/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wal_pprof.h - the payload of a STORE_WAL_PPROF record (wal.h): pprof
 * profiles as they were pushed, so a pprof push is logged without
 * re-encoding it as OTLP, and replay decodes it again with the pprof
 * decoder (docs/storage-format.md "Record types").
 *
 * The payload is one or more entries back to back, integers
 * little-endian, a string a u32 byte length and its bytes:
 *
 *   u32   P, the length of the profile.proto bytes
 *   u32   G, 0: the P bytes are at the end as they are; else the G bytes
 *         at the end are gzip (as pushed) that inflates to exactly them
 *   i64   time_ns       the profile's time after ingest's edits
 *   i64   duration_ns   its duration after them
 *   i64   shift         added to every sample timestamp that is not 0
 *   str   name          the profile name ("" = derive)
 *   u32   A, then A attributes: str key, str value, i64 num, str num_unit
 *   P|G   bytes of one pprof Profile message, uncompressed, or its gzip
 *
 * What ingest changes after decoding a push (Pyroscope's from/until, its
 * name and labels) is in the header, so replay rebuilds the profile ingest
 * stored: fmt_pprof_decode of the bytes, then time, duration, timestamps,
 * name and attributes set from the header.
 */
#ifndef PROF_STORE_WAL_PPROF_H
#define PROF_STORE_WAL_PPROF_H

#include "base/buf.h"
#include "base/err.h"
#include "model/profile.h"

/* One pushed pprof profile as the log keeps it (store_ingest_profiles). */
struct store_pprof_src {
	const void *data; /* the profile.proto bytes fmt_pprof_decode read; not gzip */
	size_t len;
	int64_t shift; /* what ingest added to the non-zero sample timestamps, ns */
	/* the gzip that gzip_inflate turned into @data (what the log keeps), or NULL */
	const void *gz;
	size_t gz_len;
};

/**
 * store_wal_pprof_encode() - append the entry of profile @p, decoded
 * from @src and then edited (time, duration, name, attributes), to @out.
 * 0, or -PROF_ETOOBIG when @out's cap is reached or a length passes
 * 2^32 - 1 (@out is then left with a partial entry: discard it).
 */
int store_wal_pprof_encode(const struct model_profile *p, const struct store_pprof_src *src,
			   struct buf *out);

/**
 * store_wal_pprof_decode() - the profiles of a STORE_WAL_PPROF payload
 * @data[@n]: *@out gets *@nout profiles (an array the caller frees,
 * after model_profile_release of each), as ingest stored them.
 * Errors, with @err saying where: -PROF_ECORRUPT for an entry that runs
 * past the payload, an empty payload, profile bytes that are gzip, or
 * stored gzip that does not inflate to exactly P bytes (gzip_inflate,
 * capped at P), and what fmt_pprof_decode returns for the profile bytes
 * (its cap is their length, so nothing inflates there). Nothing is
 * returned on error. Never reads outside @data.
 */
int store_wal_pprof_decode(const void *data, size_t n, struct model_profile **out, size_t *nout,
			   struct prof_err *err);

#endif
