// SPDX-License-Identifier: Apache-2.0
/*
 * compress.c - gzip with output caps; see compress.h. Inflate runs ISA-L's
 * igzip first (Intel ISA-L, Debian libisal: several times zlib's speed on
 * the pushes the server inflates); any input it does not take whole
 * (corrupt, truncated, over the cap, trailing bytes) is inflated again by
 * zlib, whose answer and words stand, so the two agree by construction.
 */
#include "base/compat.h"
#include "base/compress.h"
#include "base/mem.h"

#include <isa-l/igzip_lib.h>
#include <zlib.h>

bool gzip_is(const void *data, size_t n)
{
	const unsigned char *p = data;

	return n >= 2 && p[0] == 0x1f && p[1] == 0x8b;
}

/* Inflate states (87 KB each) kept between calls. */
static struct prof_spares isal_spares = PROF_SPARES_INIT;

/*
 * Every member of the gzip @data[@n] inflated by ISA-L and appended to
 * @out: true when all of it inflated within @max_out and only zero
 * padding follows the last member; false (with @out as it was) for
 * anything else, which gzip_inflate_zlib then answers.
 */
static bool isal_gunzip(const void *data, size_t n, size_t max_out, struct buf *out)
{
	struct inflate_state *st;
	const uint8_t *in = data;
	size_t left = n, start = out->len;
	uint8_t tmp[65536];
	bool ok = false;

	if (n > UINT32_MAX)
		return false;
	st = prof_spares_take(&isal_spares);
	if (!st)
		st = xmalloc(sizeof(*st));
	for (;;) {
		if (left < 10 || in[3] & 0xe0)
			goto done; /* short, or reserved flags (RFC 1952 2.3.1) zlib refuses */
		isal_inflate_init(st);
		st->crc_flag = ISAL_GZIP;
		st->next_in = (uint8_t *)in;
		st->avail_in = (uint32_t)left;
		while (st->block_state != ISAL_BLOCK_FINISH) {
			uint32_t avail = st->avail_in;
			size_t got;

			st->next_out = tmp;
			st->avail_out = sizeof(tmp);
			if (isal_inflate(st) != ISAL_DECOMP_OK)
				goto done;
			got = sizeof(tmp) - st->avail_out;
			if (out->len - start + got > max_out || (got && buf_add(out, tmp, got)))
				goto done;
			if (!got && st->avail_in == avail && st->block_state != ISAL_BLOCK_FINISH)
				goto done; /* no progress: truncated */
		}
		in = st->next_in;
		left = st->avail_in;
		if (left >= 2 && gzip_is(in, left))
			continue; /* another member (RFC 1952 2.2) */
		while (left && in[0] == 0)
			in++, left--;
		ok = left == 0;
		break;
	}
done:
	if (!prof_spares_give(&isal_spares, st))
		free(st);
	if (!ok)
		out->len = start;
	return ok;
}

int gzip_inflate(const void *data, size_t n, size_t max_out, struct buf *out, struct prof_err *err)
{
	if (gzip_is(data, n) && isal_gunzip(data, n, max_out, out))
		return 0;
	return gzip_inflate_zlib(data, n, max_out, out, err);
}

int gzip_inflate_zlib(const void *data, size_t n, size_t max_out, struct buf *out,
		      struct prof_err *err)
{
	unsigned char tmp[65536];
	z_stream zs;
	size_t start = out->len;
	int zrc, rc = 0;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return prof_err_set(err, -ENOMEM, -1, "gzip: cannot initialise zlib");
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)PROF_MIN(n, (size_t)UINT32_MAX);
	for (;;) {
		zs.next_out = tmp;
		zs.avail_out = sizeof(tmp);
		zrc = inflate(&zs, Z_NO_FLUSH);
		if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR) {
			rc = prof_err_set(err, -PROF_ECORRUPT, (int64_t)(n - zs.avail_in),
					  "gzip: corrupt data at byte %zu: %s", n - zs.avail_in,
					  zs.msg ? zs.msg : "inflate failed");
			break;
		}
		size_t got = sizeof(tmp) - zs.avail_out;
		if (out->len - start + got > max_out) {
			rc = prof_err_set(err, -PROF_ETOOBIG, (int64_t)(n - zs.avail_in),
					  "gzip: decompressed size exceeds the limit of %zu bytes",
					  max_out);
			break;
		}
		if (got && buf_add(out, tmp, got)) {
			rc = prof_err_set(err, -PROF_ETOOBIG, -1,
					  "gzip: output buffer limit reached");
			break;
		}
		if (zrc == Z_STREAM_END) {
			size_t left = zs.avail_in, at = n - left;

			/* Another member may follow (concatenated gzip, RFC 1952 2.2). */
			if (left >= 2 && gzip_is(zs.next_in, left)) {
				inflateReset(&zs);
				continue;
			}
			/* Zero padding is ignored, as gzip(1) does; other bytes are an error. */
			while (left && zs.next_in[0] == 0)
				zs.next_in++, left--;
			if (left)
				rc = prof_err_set(
					err, -PROF_ECORRUPT, (int64_t)at,
					"gzip: %zu bytes after the end of the gzip data (at "
					"byte %zu) are not another gzip member",
					(size_t)zs.avail_in, at);
			break;
		}
		if (zrc == Z_BUF_ERROR && zs.avail_in == 0 && got == 0) {
			rc = prof_err_set(err, -PROF_ECORRUPT, (int64_t)n,
					  "gzip: truncated stream (%zu bytes)", n);
			break;
		}
	}
	inflateEnd(&zs);
	if (rc)
		out->len = start;
	return rc;
}

int gzip_deflate(const void *data, size_t n, struct buf *out)
{
	unsigned char tmp[65536];
	z_stream zs;
	int zrc;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)n;
	do {
		zs.next_out = tmp;
		zs.avail_out = sizeof(tmp);
		zrc = deflate(&zs, Z_FINISH);
		if (buf_add(out, tmp, sizeof(tmp) - zs.avail_out)) {
			deflateEnd(&zs);
			return -PROF_ETOOBIG;
		}
	} while (zrc == Z_OK);
	deflateEnd(&zs);
	return zrc == Z_STREAM_END ? 0 : -EIO;
}
