// SPDX-License-Identifier: Apache-2.0
/*
 * wal_pprof.c - STORE_WAL_PPROF record payloads: encode at ingest, decode
 * at replay and in `profd store check`; the layout is in wal_pprof.h.
 */
#include "store/wal_pprof.h"

#include "base/compress.h"
#include "base/mem.h"
#include "format/pprof.h"

static int put_u32(struct buf *b, size_t v)
{
	unsigned char x[4] = { (unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
			       (unsigned char)(v >> 24) };

	return v > UINT32_MAX ? -PROF_ETOOBIG : buf_add(b, x, 4);
}

static int put_i64(struct buf *b, int64_t s)
{
	uint64_t v = (uint64_t)s;
	unsigned char x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (unsigned char)(v >> (8 * i));
	return buf_add(b, x, 8);
}

static int put_str(struct buf *b, const struct model_profile *p, uint32_t id)
{
	size_t n = id < p->strings.n ? p->strings.len[id] : 0;
	int rc = put_u32(b, n);

	return rc ? rc : buf_add(b, model_str(p, id), n);
}

int store_wal_pprof_encode(const struct model_profile *p, const struct store_pprof_src *src,
			   struct buf *out)
{
	int rc = put_u32(out, src->len);

	rc = rc ? rc : put_u32(out, src->gz ? src->gz_len : 0);
	rc = rc ? rc : put_i64(out, p->time_ns);
	rc = rc ? rc : put_i64(out, p->duration_ns);
	rc = rc ? rc : put_i64(out, src->shift);
	rc = rc ? rc : put_str(out, p, p->name);
	rc = rc ? rc : put_u32(out, p->attrs.n);
	for (size_t i = 0; i < p->attrs.n && !rc; i++) {
		const struct model_label *l = &p->attrs.v[i];

		rc = put_str(out, p, l->key);
		rc = rc ? rc : put_str(out, p, l->str);
		rc = rc ? rc : put_i64(out, l->num);
		rc = rc ? rc : put_str(out, p, l->num_unit);
	}
	if (src->gz)
		return rc ? rc : buf_add(out, src->gz, src->gz_len);
	return rc ? rc : buf_add(out, src->data, src->len);
}

/* A reader of one payload: @p moves on, @end is the payload's end. */
struct rd {
	const unsigned char *start, *p, *end;
	bool bad;
};

static uint64_t get_n(struct rd *r, int n)
{
	uint64_t v = 0;

	if (r->bad || r->end - r->p < n) {
		r->bad = true;
		return 0;
	}
	for (int i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

/* The next @n bytes, or NULL (and r->bad) when the payload has fewer. */
static const char *get_bytes(struct rd *r, uint64_t n)
{
	const char *s = (const char *)r->p;

	if (r->bad || (uint64_t)(r->end - r->p) < n) {
		r->bad = true;
		return NULL;
	}
	r->p += n;
	return s;
}

/* The id in @p of the next string. */
static uint32_t get_str(struct rd *r, struct model_profile *p)
{
	uint64_t n = get_n(r, 4);
	const char *s = get_bytes(r, n);

	return s ? model_intern_n(p, s, n) : 0;
}

/* Entry at r->p into @p (initialized); the profile bytes are decoded first. */
static int decode_entry(struct rd *r, struct model_profile *p, size_t k, struct prof_err *err)
{
	size_t at = (size_t)(r->p - r->start);
	uint64_t plen = get_n(r, 4), glen = get_n(r, 4);
	int64_t time_ns = (int64_t)get_n(r, 8), dur = (int64_t)get_n(r, 8);
	int64_t shift = (int64_t)get_n(r, 8);
	struct rd hdr;
	uint64_t na;
	int rc;

	/* The header's strings go in after the decoder's: read it twice. */
	hdr = *r;
	(void)get_bytes(r, get_n(r, 4));
	na = get_n(r, 4);
	for (uint64_t i = 0; i < na && !r->bad; i++) {
		(void)get_bytes(r, get_n(r, 4));
		(void)get_bytes(r, get_n(r, 4));
		(void)get_n(r, 8);
		(void)get_bytes(r, get_n(r, 4));
	}
	const char *pb = get_bytes(r, glen ? glen : plen);
	struct buf raw = BUF_INIT;

	if (r->bad)
		return prof_err_set(err, -PROF_ECORRUPT, (int64_t)at,
				    "wal pprof record: entry %zu runs past the payload's end", k);
	rc = 0;
	if (glen) {
		struct prof_err ge;

		prof_err_init(&ge);
		rc = gzip_inflate(pb, glen, plen, &raw, &ge);
		if (rc)
			rc = prof_err_set(err, -PROF_ECORRUPT, (int64_t)at,
					  "wal pprof record: entry %zu: %s", k, ge.msg);
		else if (raw.len != plen)
			rc = prof_err_set(err, -PROF_ECORRUPT, (int64_t)at,
					  "wal pprof record: entry %zu inflates to %zu bytes, not "
					  "%" PRIu64,
					  k, raw.len, plen);
		pb = raw.p;
	}
	if (!rc && gzip_is(pb, plen))
		rc = prof_err_set(err, -PROF_ECORRUPT, (int64_t)at,
				  "wal pprof record: entry %zu holds gzip, not a Profile", k);
	if (!rc)
		rc = fmt_pprof_decode(pb, plen, plen ? plen : 1, p, err);
	buf_release(&raw);
	if (rc)
		return rc;
	p->time_ns = time_ns;
	p->duration_ns = dur;
	for (size_t i = 0; shift && i < p->samples.n; i++)
		if (p->samples.v[i].timestamp_ns)
			p->samples.v[i].timestamp_ns =
				(int64_t)((uint64_t)p->samples.v[i].timestamp_ns + (uint64_t)shift);
	p->name = get_str(&hdr, p);
	na = get_n(&hdr, 4);
	p->attrs.n = 0;
	for (uint64_t i = 0; i < na; i++) {
		struct model_label l;

		l.key = get_str(&hdr, p);
		l.str = get_str(&hdr, p);
		l.num = (int64_t)get_n(&hdr, 8);
		l.num_unit = get_str(&hdr, p);
		VEC_PUSH(&p->attrs, l);
	}
	return 0;
}

int store_wal_pprof_decode(const void *data, size_t n, struct model_profile **out, size_t *nout,
			   struct prof_err *err)
{
	struct rd r = { data, data, (const unsigned char *)data + n, false };
	VEC(struct model_profile) v = { 0 };
	int rc = 0;

	*out = NULL;
	*nout = 0;
	if (!n)
		return prof_err_set(err, -PROF_ECORRUPT, 0, "wal pprof record: empty payload");
	while (r.p < r.end && !rc) {
		struct model_profile p;

		model_profile_init(&p);
		rc = decode_entry(&r, &p, v.n, err);
		VEC_PUSH(&v, p);
	}
	if (rc) {
		for (size_t i = 0; i < v.n; i++)
			model_profile_release(&v.v[i]);
		VEC_FREE(&v);
		return rc;
	}
	*out = v.v;
	*nout = v.n;
	return 0;
}
