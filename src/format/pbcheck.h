/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pbcheck.h - a protobuf wire-format checker driven by protobuf-c
 * descriptors, run before protobuf_c_message_unpack().
 *
 * Why: protobuf-c's unpack says only "failed" (NULL), recurses without a
 * depth bound (OTLP's AnyValue can nest itself, so a few megabytes of
 * `2a 02 2a 02 ...` would overflow the stack) and allocates a C struct of
 * ~100 bytes for a 2-byte empty sub-message, which lets a small request
 * claim gigabytes. One linear pass over the bytes finds the first
 * malformed byte and names it ("Profile.sample[3].location_id: truncated
 * varint at byte 1234"), bounds nesting, and estimates what unpack will
 * allocate so the caller can refuse an amplification attack. A buffer this
 * checker accepts unpacks without error (same rules as protobuf-c 1.4:
 * known fields must have their declared wire type or, for repeated
 * scalars, the packed form; groups are not supported; varints are at most
 * 10 bytes).
 *
 * Sources: protobuf encoding (protobuf.dev/programming-guides/encoding),
 * docs/formats.md "Protobuf wire format" (packed and unpacked repeated
 * scalars).
 */
#ifndef PROF_FORMAT_PBCHECK_H
#define PROF_FORMAT_PBCHECK_H

#include "base/compat.h"
#include "base/err.h"

#include <protobuf-c/protobuf-c.h>

/** Deepest message nesting accepted (the root message is depth 1). */
#define FMT_PB_MAX_DEPTH 64

/**
 * fmt_pb_check() - validate @n bytes at @data as message @desc.
 * @what prefixes error messages (e.g. "pprof", "otlp").
 * @max_alloc caps the estimated memory protobuf-c would allocate to unpack
 * it (0 = no cap); over it the result is -PROF_ETOOBIG.
 * @alloc_out (may be NULL) receives that estimate in bytes.
 * Returns 0, -PROF_ECORRUPT (err: byte offset and field path) or
 * -PROF_ETOOBIG (nesting deeper than FMT_PB_MAX_DEPTH, or @max_alloc).
 */
int fmt_pb_check(const ProtobufCMessageDescriptor *desc, const void *data, size_t n,
		 const char *what, size_t max_alloc, size_t *alloc_out, struct prof_err *err);

/**
 * fmt_pb_top_fields() - bit set of the top-level field numbers (1..63) of
 * the message at @data, read until the first malformed byte (bit 0 set
 * when one was found). Used to tell formats apart without decoding them.
 * @first_wt (may be NULL) receives, for the first length-delimited field
 * 1, the wire type of the first tag inside its payload (-1 when none).
 */
uint64_t fmt_pb_top_fields(const void *data, size_t n, int *first_wt);

#endif
