/* SPDX-License-Identifier: Apache-2.0 */
/*
 * varint.h - the integer encodings of profd's on-disk files:
 *
 *   - unsigned varint: LEB128 / protobuf base-128, 7 bits per byte, least
 *     significant group first, high bit set on every byte but the last;
 *     at most 10 bytes for a uint64_t;
 *   - signed varint: zigzag ((v << 1) ^ (v >> 63)), then unsigned varint,
 *     so small negative numbers stay short (protobuf sint64);
 *   - fixed-width little-endian 16/32/64-bit integers.
 *
 * The reader (struct varint_rd) carries an end pointer (SQLite's
 * aDataEnd) and a sticky "bad" flag: reading past the end, or a varint
 * longer than 10 bytes, sets bad and returns 0, so a decoder may read a
 * whole record and check once. Its offset is the position of the first
 * failure, for error messages that name a byte offset.
 *
 * Everything here is inline: the block decoder runs these in its inner
 * loop.
 */
#ifndef PROF_BASE_VARINT_H
#define PROF_BASE_VARINT_H

#include "base/compat.h"
#include "base/buf.h"

#define VARINT_MAX_LEN 10

/** varint_put() - write @v at @p (room for VARINT_MAX_LEN bytes); returns bytes written. */
static inline size_t varint_put(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static inline uint64_t zigzag_enc(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t zigzag_dec(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void le16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void le32_put(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline void le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t le16_get(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64_get(const uint8_t *p)
{
	return (uint64_t)le32_get(p) | (uint64_t)le32_get(p + 4) << 32;
}

/** buf_add_uvarint() / buf_add_svarint() - append a varint; 0 or -PROF_ETOOBIG (buf cap). */
static inline int buf_add_uvarint(struct buf *b, uint64_t v)
{
	uint8_t t[VARINT_MAX_LEN];

	return buf_add(b, t, varint_put(t, v));
}

static inline int buf_add_svarint(struct buf *b, int64_t v)
{
	return buf_add_uvarint(b, zigzag_enc(v));
}

/** struct varint_rd - a bounds-checked reader over [start, end). */
struct varint_rd {
	const uint8_t *start, *p, *end;
	bool bad;
};

static inline void varint_rd_init(struct varint_rd *r, const void *data, size_t n)
{
	r->start = r->p = data;
	r->end = r->p + n;
	r->bad = false;
}

/** varint_rd_offset() - bytes consumed so far (the failure point once bad is set). */
static inline size_t varint_rd_offset(const struct varint_rd *r)
{
	return (size_t)(r->p - r->start);
}

static inline size_t varint_rd_left(const struct varint_rd *r)
{
	return (size_t)(r->end - r->p);
}

static inline uint64_t varint_rd_u64(struct varint_rd *r)
{
	uint64_t v = 0;

	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (r->p >= r->end)
			break;
		uint8_t c = *r->p++;

		if (shift == 63 && c > 1)
			break; /* more than 64 bits */
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

static inline int64_t varint_rd_s64(struct varint_rd *r)
{
	return zigzag_dec(varint_rd_u64(r));
}

/** varint_rd_u32() - an unsigned varint that must fit 32 bits (else bad). */
static inline uint32_t varint_rd_u32(struct varint_rd *r)
{
	uint64_t v = varint_rd_u64(r);

	if (v > UINT32_MAX) {
		r->bad = true;
		return 0;
	}
	return (uint32_t)v;
}

static inline uint8_t varint_rd_byte(struct varint_rd *r)
{
	if (r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

/** varint_rd_bytes() - @n bytes lent from the input, or NULL (and bad) past the end. */
static inline const uint8_t *varint_rd_bytes(struct varint_rd *r, size_t n)
{
	const uint8_t *p = r->p;

	if (n > varint_rd_left(r)) {
		r->bad = true;
		return NULL;
	}
	r->p += n;
	return p;
}

#endif
