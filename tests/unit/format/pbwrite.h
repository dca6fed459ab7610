/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pbwrite.h - protobuf wire writers for the format unit tests that build
 * requests field by field (included by tests/unit/format/test_*.c; no
 * library code uses it). Each appends to @b with buf_add and ignores its
 * cap: the tests use uncapped buffers.
 *   pv      an unsigned varint
 *   fv      field @num as a varint
 *   fbytes  field @num length-delimited, @n bytes of @p
 *   fmsg    field @num holding the message built in @m, then @m emptied
 */
#ifndef PROF_TESTS_UNIT_FORMAT_PBWRITE_H
#define PROF_TESTS_UNIT_FORMAT_PBWRITE_H

#include "base/buf.h"

static inline void pv(struct buf *b, uint64_t v)
{
	do {
		unsigned char c = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));

		buf_add(b, &c, 1);
		v >>= 7;
	} while (v);
}

static inline void fv(struct buf *b, unsigned num, uint64_t v)
{
	pv(b, (uint64_t)num << 3);
	pv(b, v);
}

static inline void fbytes(struct buf *b, unsigned num, const void *p, size_t n)
{
	pv(b, (uint64_t)num << 3 | 2);
	pv(b, n);
	buf_add(b, p, n);
}

static inline void fmsg(struct buf *b, unsigned num, struct buf *m)
{
	fbytes(b, num, m->p ? m->p : "", m->len);
	buf_reset(m);
}

#endif
