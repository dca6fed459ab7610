/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pbwire.h - the one protobuf wire reader of the format layer: varints
 * and fields as protobuf-c reads them (docs/formats.md, "Protobuf wire
 * format"; the encoding is protobuf's, protobuf.dev "Encoding").
 *
 *   - a varint is base-128, low group first, at most 10 bytes; bits past
 *     the 64th are dropped, as protobuf-c does (a 10th byte keeps bit 0);
 *   - a field is a tag varint (field number << 3 | wire type) and a value:
 *     wire type 0 a varint, 1 eight bytes and 5 four bytes little-endian,
 *     2 a length varint and that many bytes.
 *
 * pbwire_varint takes the byte limit: 10 for values, 5 for tags and
 * lengths where a decoder must refuse what protobuf-c refuses (it reads
 * no more for a 32-bit quantity). pbwire_field_next reads one field with
 * protobuf-c's limits. Users: pbcheck.c (the checker over descriptors),
 * otlp_direct.c (the direct decoder's inner loop), pprof.c (splitting
 * concatenated profiles). Everything is inline: otlp_direct.c's inner
 * loop runs it per field.
 */
#ifndef PROFD_FORMAT_PBWIRE_H
#define PROFD_FORMAT_PBWIRE_H

#include "base/compat.h"
#include "base/varint.h"

/* Wire types (protobuf encoding). */
#define PBWIRE_VARINT 0
#define PBWIRE_I64    1
#define PBWIRE_LEN    2
#define PBWIRE_I32    5

/* The largest field number protobuf allows (2^29 - 1). */
#define PBWIRE_MAX_FIELD 0x1fffffff

/**
 * pbwire_varint() - read a varint of at most @max bytes (1..10) at *@pp,
 * before @end. Returns true with the value in *@out and *@pp past it;
 * false (nothing moved) when it is truncated or longer than @max bytes.
 */
static inline bool pbwire_varint(const uint8_t **pp, const uint8_t *end, unsigned max,
				 uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;

	if (p < end && !(*p & 0x80)) {
		*out = *p;
		*pp = p + 1;
		return true;
	}
	if (end - p >= 10) { /* no end check per byte: a varint has at most 10 */
		for (unsigned i = 0; i < max; i++) {
			uint64_t b = p[i];

			v |= (b & 0x7f) << (7 * i);
			if (!(b & 0x80)) {
				*pp = p + i + 1;
				*out = v;
				return true;
			}
		}
		return false;
	}
	for (unsigned i = 0, shift = 0; i < max; i++, shift += 7) {
		if (p >= end)
			return false;
		v |= (uint64_t)(*p & 0x7f) << (shift < 64 ? shift : 0);
		if (!(*p++ & 0x80)) {
			*pp = p;
			*out = v;
			return true;
		}
	}
	return false;
}

/** One field as pbwire_field_next reads it. */
struct pbwire_field {
	uint32_t num;		    /* field number, 1..PBWIRE_MAX_FIELD */
	int wt;			    /* wire type: PBWIRE_VARINT, _I64, _LEN or _I32 */
	uint64_t v;		    /* the varint / fixed value (0 for PBWIRE_LEN) */
	const uint8_t *vp, *tagp;   /* start of the value; of the tag */
	const uint8_t *body, *bend; /* PBWIRE_LEN payload [body, bend); NULL otherwise */
};

/**
 * pbwire_field_next() - read one field at *@pp, before @end, with
 * protobuf-c's limits: tags and lengths in more than 5 bytes, field
 * number 0 or above PBWIRE_MAX_FIELD, wire types other than 0, 1, 2, 5
 * and a length past @end are refused. Returns true with *@f filled and
 * *@pp past the field; false when the bytes are malformed by those rules.
 * Forced inline: it is the direct OTLP decoder's inner loop (about 10 %
 * faster); the members a wire type does not set are zeroed, which also
 * keeps the inlined callers free of maybe-uninitialized warnings.
 */
static inline __attribute__((always_inline)) bool
pbwire_field_next(const uint8_t **pp, const uint8_t *end, struct pbwire_field *f)
{
	const uint8_t *p = *pp;
	uint64_t tag, len;

	f->tagp = p;
	f->v = 0;
	f->body = f->bend = NULL;
	if (!pbwire_varint(&p, end, 5, &tag) || (tag >> 3) == 0 || (tag >> 3) > PBWIRE_MAX_FIELD)
		return false;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	f->vp = p;
	switch (f->wt) {
	case PBWIRE_VARINT:
		if (!pbwire_varint(&p, end, 10, &f->v))
			return false;
		break;
	case PBWIRE_I64:
		if (end - p < 8)
			return false;
		f->v = le64_get(p);
		p += 8;
		break;
	case PBWIRE_I32:
		if (end - p < 4)
			return false;
		f->v = le32_get(p);
		p += 4;
		break;
	case PBWIRE_LEN:
		if (!pbwire_varint(&p, end, 5, &len) || len > (uint64_t)(end - p))
			return false;
		f->body = p;
		f->bend = p + len;
		p += len;
		break;
	default:
		return false;
	}
	*pp = p;
	return true;
}

#endif
