/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof.h - pprof profile.proto (perftools.profiles, shared formats.md 2.1)
 * decoder and encoder.
 */
#ifndef PROF_FORMAT_PPROF_H
#define PROF_FORMAT_PPROF_H

#include "base/buf.h"
#include "base/err.h"
#include "model/profile.h"

/** Decompressed-size cap applied when the caller passes 0. */
#define FMT_PPROF_DEFAULT_MAX (256u << 20)

/**
 * fmt_pprof_decode() - decode a pprof profile (gzip or raw protobuf,
 * sniffed by the gzip magic) into @out, which must be initialised by the
 * caller (model_profile_init) and is owned by the caller.
 * @max_decoded caps the decompressed size (0 = FMT_PPROF_DEFAULT_MAX).
 * Errors: -PROF_ECORRUPT (bad protobuf, id referring to nothing: @err names
 * the message, field and byte offset), -PROF_ETOOBIG (over the cap).
 */
int fmt_pprof_decode(const void *data, size_t n, size_t max_decoded, struct model_profile *out,
		     struct prof_err *err);

/**
 * fmt_pprof_encode() - encode @p as pprof protobuf, gzipped when @gzip,
 * appended to @out. Profile-level attributes become labels on every
 * sample (pprof has no resource). Returns 0 or -errno.
 */
int fmt_pprof_encode(const struct model_profile *p, bool gzip, struct buf *out);

#endif
