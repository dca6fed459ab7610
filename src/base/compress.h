/* SPDX-License-Identifier: Apache-2.0 */
/*
 * compress.h - gzip in and out (zlib; ISA-L's igzip inflates first, see
 * compress.c), with a hard cap on output size so
 * a "gzip bomb" is refused instead of exhausting memory.
 */
#ifndef PROF_BASE_COMPRESS_H
#define PROF_BASE_COMPRESS_H

#include "base/buf.h"
#include "base/err.h"

/** gzip_is() - true when @data starts with the gzip magic 1f 8b. */
bool gzip_is(const void *data, size_t n);

/**
 * gzip_inflate() - decompress gzip (all members, concatenated, RFC 1952
 * 2.2, as gzip(1) and Go's gzip.Reader do) from @data into @out
 * (appending). Zero bytes after the last member are ignored (gzip(1)'s
 * padding rule); any other trailing bytes are -PROF_ECORRUPT. Fails with
 * -PROF_ETOOBIG (naming the cap) when the output would exceed @max_out
 * bytes, and -PROF_ECORRUPT with the input offset for bad data or a
 * truncated stream.
 */
int gzip_inflate(const void *data, size_t n, size_t max_out, struct buf *out, struct prof_err *err);

/**
 * gzip_inflate_zlib() - gzip_inflate by zlib alone: the reference the
 * faster ISA-L path is checked against (tests/unit/base/test_base.c), and
 * what answers every input that path does not take whole. Same contract.
 */
int gzip_inflate_zlib(const void *data, size_t n, size_t max_out, struct buf *out,
		      struct prof_err *err);

/** gzip_deflate() - compress @data as one gzip member into @out (appending). */
int gzip_deflate(const void *data, size_t n, struct buf *out);

#endif
