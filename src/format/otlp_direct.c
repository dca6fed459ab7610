// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_direct.c - the fast OTLP profiles decoder: wire bytes straight to
 * model profiles, without protobuf-c's tree of small allocations (see
 * otlp.h, fmt_otlp_decode_direct). This file: the wire parse and the
 * entry points; the conversion is otlp_direct_convert.c.
 *
 * Two phases. Parse: one pass over every byte of the request (field
 * numbers and types from src/format/proto, docs/formats.md "OTLP profiles messages") into a
 * few flat arrays (dictionary tables, resource/scope/profile/sample
 * records, index pools), checking each field's wire type exactly as
 * format/pbcheck.c does and summing the same memory estimate it computes
 * for protobuf-c. Convert: the same steps, in the same order, as the
 * protobuf-c path in otlp.c (so strings get the same ids and the model is
 * identical), with lazy per-profile translation of dictionary entries.
 * For the store (fmt_otlp_decode_shared) the translation is per request
 * instead: every dictionary entry a profile uses goes to profile 0's
 * tables, once, and the other profiles borrow them at the end (the
 * agent sends a profile per process and sample type over the same
 * stacks, up to 150 per request).
 *
 * Anything this decoder does not reproduce exactly - malformed bytes, a
 * singular message field sent twice (protobuf merges those), kvlist
 * attribute values, nested arrays, tags or lengths in more bytes than
 * protobuf-c reads - makes it return FMT_OTLP_FALLBACK, and
 * fmt_otlp_decode runs the protobuf-c path, which gives the result or the
 * precise error. A request that parses but does not convert (an index
 * out of range, values vs timestamps, a link id's size, max_samples, the
 * decoded size limit) gets its error here, code and words as otlp.c's
 * (C_ERR): the replay pass converts it again as otlp.c does, a profile at
 * a time, so the first error and the size count are that path's, and a
 * rejected request costs about what an accepted one does (protobuf-c would
 * unpack it whole and convert every profile before the bad one). The
 * unit test and the fuzz_otlp_direct target check that both paths agree,
 * on results and on errors.
 */
#include "base/buf.h"
#include "base/compat.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "format/otlp_direct_int.h"
#include "format/pbwire.h"
#include "model/stackkey.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

/* ---- wire ---------------------------------------------------------------- */

/* An unknown field: protobuf-c keeps a record and a copy of it. */
static inline void fld_unknown(struct dd *d, const struct pbwire_field *f, const uint8_t *next)
{
	d->alloc += 32 + (size_t)(next - f->tagp);
}

/* A singular varint field of a 4-byte (@sz 4) or 8-byte C type. */
static inline bool want_varint(struct dd *d, const struct pbwire_field *f, size_t sz)
{
	if (f->wt != 0)
		return false;
	d->alloc += sz;
	return true;
}

static inline bool want_len(struct dd *d, const struct pbwire_field *f, size_t extra)
{
	if (f->wt != 2)
		return false;
	d->alloc += extra;
	return true;
}

/* string/bytes: payload + 24 (pbcheck.c). */
static inline bool want_bytes(struct dd *d, const struct pbwire_field *f)
{
	return want_len(d, f, (size_t)(f->bend - f->body) + 24);
}

/* A repeated int32 (varint or packed) appended to @v. */
#define REP_I32(d, f, vec)                                                   \
	do {                                                                 \
		if ((f)->wt == 0) {                                          \
			VEC_PUSH(vec, (int32_t)(uint32_t)(f)->v);            \
			(d)->alloc += 4;                                     \
		} else if ((f)->wt == 2) {                                   \
			const uint8_t *q_ = (f)->body;                       \
			while (q_ < (f)->bend) {                             \
				uint64_t x_;                                 \
				if (!pbwire_varint(&q_, (f)->bend, 10, &x_)) \
					BAIL();                              \
				VEC_PUSH(vec, (int32_t)(uint32_t)x_);        \
				(d)->alloc += 4;                             \
			}                                                    \
		} else {                                                     \
			BAIL();                                              \
		}                                                            \
	} while (0)

/* ---- parse ---------------------------------------------------------------- */

/* Length of @s up to its first NUL (protobuf-c strings are C strings). */
static inline struct span cstr(const uint8_t *p, const uint8_t *end)
{
	const uint8_t *z = memchr(p, 0, (size_t)(end - p));

	return (struct span){ p, (size_t)((z ? z : end) - p) };
}

static bool p_any(struct dd *d, const uint8_t *p, const uint8_t *end, struct dany *a, bool nested);

/* ArrayValue (1 values) of scalars into d->arr; nested arrays fall back. */
static bool p_array(struct dd *d, const uint8_t *p, const uint8_t *end, struct dany *a)
{
	VEC(struct dany) elems = { 0 };
	bool ok = true;

	while (p < end && ok) {
		struct pbwire_field f;
		struct dany e;

		if (!pbwire_field_next(&p, end, &f)) {
			ok = false;
		} else if (f.num == 1) {
			ok = want_len(d, &f, SZ_ANY) && p_any(d, f.body, f.bend, &e, true);
			if (ok)
				VEC_PUSH(&elems, e);
		} else {
			fld_unknown(d, &f, p);
		}
	}
	/* Elements are contiguous in d->arr (an array holds no arrays here). */
	a->arr_off = (uint32_t)d->arr.n;
	a->narr = (uint32_t)elems.n;
	for (size_t i = 0; ok && i < elems.n; i++)
		VEC_PUSH(&d->arr, elems.v[i]);
	VEC_FREE(&elems);
	return ok;
}

static bool p_any(struct dd *d, const uint8_t *p, const uint8_t *end, struct dany *a, bool nested)
{
	a->kase = AV_NONE;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (!want_bytes(d, &f))
				BAIL();
			a->kase = AV_STR;
			a->s = cstr(f.body, f.bend);
			break;
		case 2: {
			bool any = false;

			if (!want_varint(d, &f, 4))
				BAIL();
			/* protobuf-c: true when any payload bit of the varint is set */
			for (const uint8_t *q = f.vp; q < p; q++)
				any |= (*q & 0x7f) != 0;
			a->kase = AV_BOOL;
			a->b = any;
			break;
		}
		case 3:
			if (!want_varint(d, &f, 8))
				BAIL();
			a->kase = AV_INT;
			a->i = (int64_t)f.v;
			break;
		case 4: {
			uint64_t bits = f.v;

			if (f.wt != 1)
				BAIL();
			d->alloc += 8;
			memcpy(&a->d, &bits, sizeof(a->d));
			a->kase = AV_DOUBLE;
			break;
		}
		case 5:
			/* a oneof member replaces the previous one (protobuf-c) */
			if (nested || !want_len(d, &f, SZ_ARRAY) || !p_array(d, f.body, f.bend, a))
				BAIL();
			a->kase = AV_ARRAY;
			break;
		case 6:
			BAIL(); /* kvlists: the protobuf-c path renders them */
		case 7:
			if (!want_bytes(d, &f))
				BAIL();
			a->kase = AV_BYTES;
			a->s = (struct span){ f.body, (size_t)(f.bend - f.body) };
			break;
		case 8:
			if (!want_varint(d, &f, 4))
				BAIL();
			a->kase = AV_IDX;
			a->i = (int32_t)(uint32_t)f.v;
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	return true;
}

static bool p_kv(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dkv kv = { .key = { (const uint8_t *)"", 0 } };

	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (!want_bytes(d, &f))
				BAIL();
			kv.key = cstr(f.body, f.bend);
			break;
		case 2:
			if (kv.has_value || !want_len(d, &f, SZ_ANY) ||
			    !p_any(d, f.body, f.bend, &kv.v, false))
				BAIL();
			kv.has_value = true;
			break;
		case 3:
			if (!want_varint(d, &f, 4))
				BAIL();
			kv.key_idx = (int32_t)(uint32_t)f.v;
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	VEC_PUSH(&d->kvs, kv);
	return true;
}

/* Messages we only check (EntityRef: strings and repeated strings). */
static bool p_strings_only(struct dd *d, const uint8_t *p, const uint8_t *end, uint32_t maxnum)
{
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		if (f.num >= 1 && f.num <= maxnum) {
			if (!want_bytes(d, &f))
				BAIL();
		} else {
			fld_unknown(d, &f, p);
		}
	}
	return true;
}

/* Resource (1 attributes, 2 dropped_attributes_count, 3 entity_refs). */
static bool p_resource(struct dd *d, const uint8_t *p, const uint8_t *end, uint32_t *off,
		       uint32_t *n)
{
	*off = (uint32_t)d->kvs.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (!want_len(d, &f, SZ_KV) || !p_kv(d, f.body, f.bend))
				BAIL();
			break;
		case 2:
			if (!want_varint(d, &f, 4))
				BAIL();
			break;
		case 3:
			if (!want_len(d, &f, SZ_ENTITY) || !p_strings_only(d, f.body, f.bend, 4))
				BAIL();
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	*n = (uint32_t)(d->kvs.n - *off);
	return true;
}

/* InstrumentationScope (1 name, 2 version, 3 attributes, 4 dropped count). */
static bool p_scope(struct dd *d, const uint8_t *p, const uint8_t *end, uint32_t *off, uint32_t *n)
{
	*off = (uint32_t)d->kvs.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
		case 2:
			if (!want_bytes(d, &f))
				BAIL();
			break;
		case 3:
			if (!want_len(d, &f, SZ_KV) || !p_kv(d, f.body, f.bend))
				BAIL();
			break;
		case 4:
			if (!want_varint(d, &f, 4))
				BAIL();
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	*n = (uint32_t)(d->kvs.n - *off);
	return true;
}

static bool p_vtype(struct dd *d, const uint8_t *p, const uint8_t *end, struct dvt *vt)
{
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		if (f.num == 1 || f.num == 2) {
			if (!want_varint(d, &f, 4))
				BAIL();
			if (f.num == 1)
				vt->type = (int32_t)(uint32_t)f.v;
			else
				vt->unit = (int32_t)(uint32_t)f.v;
		} else {
			fld_unknown(d, &f, p);
		}
	}
	return true;
}

static bool p_sample(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dsample s = { 0 };

	s.ai_off = (uint32_t)d->samp_ai.n;
	s.v_off = (uint32_t)d->vals.n;
	s.t_off = (uint32_t)d->tss.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (!want_varint(d, &f, 4))
				BAIL();
			s.stack = (int32_t)(uint32_t)f.v;
			break;
		case 2:
			REP_I32(d, &f, &d->samp_ai);
			break;
		case 3:
			if (!want_varint(d, &f, 4))
				BAIL();
			s.link = (int32_t)(uint32_t)f.v;
			break;
		case 4:
			if (f.wt == 0) {
				VEC_PUSH(&d->vals, (int64_t)f.v);
				d->alloc += 8;
			} else if (f.wt == 2) {
				const uint8_t *q = f.body;

				while (q < f.bend) {
					uint64_t x;

					if (!pbwire_varint(&q, f.bend, 10, &x))
						BAIL();
					VEC_PUSH(&d->vals, (int64_t)x);
					d->alloc += 8;
				}
			} else {
				BAIL();
			}
			break;
		case 5:
			if (f.wt == 1) {
				VEC_PUSH(&d->tss, f.v);
				d->alloc += 8;
			} else if (f.wt == 2) {
				size_t len = (size_t)(f.bend - f.body);

				if (len % 8)
					BAIL();
				VEC_RESERVE(&d->tss, len / 8);
				for (size_t k = 0; k < len; k += 8)
					d->tss.v[d->tss.n++] = le64_get(f.body + k);
				d->alloc += len;
			} else {
				BAIL();
			}
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	s.nai = (uint32_t)(d->samp_ai.n - s.ai_off);
	s.nv = (uint32_t)(d->vals.n - s.v_off);
	s.nt = (uint32_t)(d->tss.n - s.t_off);
	VEC_PUSH(&d->samples, s);
	return true;
}

static bool p_profile(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dprof pr = { 0 };

	pr.ai_off = (uint32_t)d->prof_ai.n;
	pr.s_off = (uint32_t)d->samples.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (pr.has_st || !want_len(d, &f, SZ_VTYPE) ||
			    !p_vtype(d, f.body, f.bend, &pr.st))
				BAIL();
			pr.has_st = true;
			break;
		case 2:
			if (!want_len(d, &f, SZ_SAMPLE) || !p_sample(d, f.body, f.bend))
				BAIL();
			break;
		case 3:
			if (f.wt != 1)
				BAIL();
			d->alloc += 8;
			pr.time = f.v;
			break;
		case 4:
			if (!want_varint(d, &f, 8))
				BAIL();
			pr.dur = f.v;
			break;
		case 5:
			if (pr.has_pt || !want_len(d, &f, SZ_VTYPE) ||
			    !p_vtype(d, f.body, f.bend, &pr.pt))
				BAIL();
			pr.has_pt = true;
			break;
		case 6:
			if (!want_varint(d, &f, 8))
				BAIL();
			pr.period = (int64_t)f.v;
			break;
		case 7:
		case 9:
		case 10:
			if (!want_bytes(d, &f))
				BAIL();
			break;
		case 8:
			if (!want_varint(d, &f, 4))
				BAIL();
			break;
		case 11:
			REP_I32(d, &f, &d->prof_ai);
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	pr.nai = (uint32_t)(d->prof_ai.n - pr.ai_off);
	pr.ns = (uint32_t)(d->samples.n - pr.s_off);
	VEC_PUSH(&d->profs, pr);
	return true;
}

static bool p_scope_profiles(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dsp sp = { 0 };
	bool scope = false;

	sp.pr_off = (uint32_t)d->profs.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (scope || !want_len(d, &f, SZ_SCOPE) ||
			    !p_scope(d, f.body, f.bend, &sp.kv_off, &sp.nkv))
				BAIL();
			scope = true;
			break;
		case 2:
			if (!want_len(d, &f, SZ_PROFILE) || !p_profile(d, f.body, f.bend))
				BAIL();
			break;
		case 3:
			if (!want_bytes(d, &f))
				BAIL();
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	sp.npr = (uint32_t)(d->profs.n - sp.pr_off);
	VEC_PUSH(&d->sps, sp);
	return true;
}

static bool p_resource_profiles(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct drp rp = { 0 };
	bool res = false;

	rp.sp_off = (uint32_t)d->sps.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (res || !want_len(d, &f, SZ_RESOURCE) ||
			    !p_resource(d, f.body, f.bend, &rp.kv_off, &rp.nkv))
				BAIL();
			res = true;
			break;
		case 2:
			if (!want_len(d, &f, SZ_SP) || !p_scope_profiles(d, f.body, f.bend))
				BAIL();
			break;
		case 3:
			if (!want_bytes(d, &f))
				BAIL();
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	rp.nsp = (uint32_t)(d->sps.n - rp.sp_off);
	VEC_PUSH(&d->rps, rp);
	return true;
}

static bool p_mapping(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dmap m = { 0 };

	m.ai_off = (uint32_t)d->ai.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
		case 2:
		case 3:
			if (!want_varint(d, &f, 8))
				BAIL();
			if (f.num == 1)
				m.start = f.v;
			else if (f.num == 2)
				m.limit = f.v;
			else
				m.off = f.v;
			break;
		case 4:
			if (!want_varint(d, &f, 4))
				BAIL();
			m.file = (int32_t)(uint32_t)f.v;
			break;
		case 5:
			REP_I32(d, &f, &d->ai);
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	m.nai = (uint32_t)(d->ai.n - m.ai_off);
	VEC_PUSH(&d->maps, m);
	return true;
}

static bool p_line(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dline l = { 0 };

	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (!want_varint(d, &f, 4))
				BAIL();
			l.fn = (int32_t)(uint32_t)f.v;
			break;
		case 2:
			if (!want_varint(d, &f, 8))
				BAIL();
			l.line = (int64_t)f.v;
			break;
		case 3:
			if (!want_varint(d, &f, 8))
				BAIL();
			l.col = (int64_t)f.v;
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	VEC_PUSH(&d->lines, l);
	return true;
}

static bool p_location(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dloc l = { 0 };

	l.ai_off = (uint32_t)d->ai.n;
	l.line_off = (uint32_t)d->lines.n;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (!want_varint(d, &f, 4))
				BAIL();
			l.map = (int32_t)(uint32_t)f.v;
			break;
		case 2:
			if (!want_varint(d, &f, 8))
				BAIL();
			l.addr = f.v;
			break;
		case 3:
			if (!want_len(d, &f, SZ_LINE) || !p_line(d, f.body, f.bend))
				BAIL();
			break;
		case 4:
			REP_I32(d, &f, &d->ai);
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	l.nai = (uint32_t)(d->ai.n - l.ai_off);
	l.nlines = (uint32_t)(d->lines.n - l.line_off);
	VEC_PUSH(&d->locs, l);
	return true;
}

static bool p_function(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dfn fn = { 0 };

	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		if (f.num >= 1 && f.num <= 3) {
			if (!want_varint(d, &f, 4))
				BAIL();
			if (f.num == 1)
				fn.name = (int32_t)(uint32_t)f.v;
			else if (f.num == 2)
				fn.sys = (int32_t)(uint32_t)f.v;
			else
				fn.file = (int32_t)(uint32_t)f.v;
		} else if (f.num == 4) {
			if (!want_varint(d, &f, 8))
				BAIL();
			fn.start = (int64_t)f.v;
		} else {
			fld_unknown(d, &f, p);
		}
	}
	VEC_PUSH(&d->fns, fn);
	return true;
}

static bool p_link(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dlink k = { { NULL, 0 }, { NULL, 0 } };

	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		if (f.num == 1 || f.num == 2) {
			if (!want_bytes(d, &f))
				BAIL();
			if (f.num == 1)
				k.trace = (struct span){ f.body, (size_t)(f.bend - f.body) };
			else
				k.span = (struct span){ f.body, (size_t)(f.bend - f.body) };
		} else {
			fld_unknown(d, &f, p);
		}
	}
	VEC_PUSH(&d->links, k);
	return true;
}

static bool p_attr(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dattr a = { 0 };

	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
		case 3:
			if (!want_varint(d, &f, 4))
				BAIL();
			if (f.num == 1)
				a.key = (int32_t)(uint32_t)f.v;
			else
				a.unit = (int32_t)(uint32_t)f.v;
			break;
		case 2:
			if (a.has_value || !want_len(d, &f, SZ_ANY) ||
			    !p_any(d, f.body, f.bend, &a.v, false))
				BAIL();
			a.has_value = true;
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	VEC_PUSH(&d->attrs, a);
	return true;
}

static bool p_stack(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	struct dstack s = { (uint32_t)d->stack_li.n, 0 };

	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		if (f.num == 1)
			REP_I32(d, &f, &d->stack_li);
		else
			fld_unknown(d, &f, p);
	}
	s.n = (uint32_t)(d->stack_li.n - s.off);
	VEC_PUSH(&d->stacks, s);
	return true;
}

static bool p_dict(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	while (p < end) {
		struct pbwire_field f;
		bool ok;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			ok = want_len(d, &f, SZ_MAPPING) && p_mapping(d, f.body, f.bend);
			break;
		case 2:
			ok = want_len(d, &f, SZ_LOCATION) && p_location(d, f.body, f.bend);
			break;
		case 3:
			ok = want_len(d, &f, SZ_FUNCTION) && p_function(d, f.body, f.bend);
			break;
		case 4:
			ok = want_len(d, &f, SZ_LINK) && p_link(d, f.body, f.bend);
			break;
		case 5:
			ok = want_bytes(d, &f);
			if (ok)
				VEC_PUSH(&d->strs,
					 ((struct span){ f.body, (size_t)(f.bend - f.body) }));
			break;
		case 6:
			ok = want_len(d, &f, SZ_KVU) && p_attr(d, f.body, f.bend);
			break;
		case 7:
			ok = want_len(d, &f, SZ_STACK) && p_stack(d, f.body, f.bend);
			break;
		default:
			fld_unknown(d, &f, p);
			ok = true;
		}
		if (!ok)
			BAIL();
	}
	return true;
}

bool od_parse_request(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	d->alloc = SZ_REQUEST;
	while (p < end) {
		struct pbwire_field f;

		if (!pbwire_field_next(&p, end, &f))
			BAIL();
		switch (f.num) {
		case 1:
			if (!want_len(d, &f, SZ_RP) || !p_resource_profiles(d, f.body, f.bend))
				BAIL();
			break;
		case 2:
			if (d->have_dict || !want_len(d, &f, SZ_DICT) || !p_dict(d, f.body, f.bend))
				BAIL();
			d->have_dict = true;
			break;
		default:
			fld_unknown(d, &f, p);
		}
	}
	return true;
}

/* Every pool of struct dd, for dd_release and dd_put. */
/* clang-format off */
#define DD_POOLS(X)                                                                   \
	X(strs) X(maps) X(locs) X(lines) X(fns) X(links) X(attrs) X(stacks) X(ai)       \
	X(stack_li) X(prof_ai) X(samp_ai) X(vals) X(tss) X(kvs) X(rps) X(sps) X(profs)  \
	X(samples) X(arr) X(mlines) X(mlocs) X(labels) X(skeys) X(kpath) X(klines)
/* clang-format on */

static void dd_release(struct dd *d)
{
#define X(f) VEC_FREE(&d->f);
	DD_POOLS(X)
#undef X
	buf_release(&d->tmp);
	free(d->memo);
	free(d->stack_len);
	free(d->attr_lab);
	free(d->attr_loc_key);
	free(d->kmemo);
}

/*
 * Decoder states with their parse pools, kept between requests (spares,
 * base/mem.h) so a request does not grow them by doubling each time (a
 * few dozen reallocations and copies per request) and finds them warm in
 * the cache. A kept state holds at most DD_KEEP_BYTES of pool capacity;
 * a larger one is freed after its request.
 */
#define DD_KEEP_BYTES (4u << 20)

static struct prof_spares dd_spares = PROF_SPARES_INIT;

static void dd_free(struct dd *d)
{
	if (d) {
		dd_release(d);
		free(d);
	}
}

/* A zeroed decoder state with kept pools (empty, capacity kept) and memo, or a new one. */
static struct dd *dd_get(void)
{
	struct dd *d = prof_spares_take(&dd_spares);

	return d ? d : xcalloc(1, sizeof(*d));
}

/* Empties @d's pools and keeps it as a spare, or frees it. */
static void dd_put(struct dd *d)
{
	struct dd keep = { 0 };
	size_t bytes = 0;

#define X(f) bytes += d->f.cap * sizeof(*d->f.v);
	DD_POOLS(X)
#undef X
	bytes += d->memo_cap * 2 * sizeof(*d->memo) + d->stack_len_cap * sizeof(*d->stack_len) +
		 d->attr_cap * (sizeof(*d->attr_lab) + sizeof(*d->attr_loc_key)) +
		 d->kmemo_cap * sizeof(*d->kmemo);
	if (bytes > DD_KEEP_BYTES) {
		dd_free(d);
		return;
	}
	buf_release(&d->tmp);
#define X(f)               \
	keep.f.v = d->f.v; \
	keep.f.cap = d->f.cap;
	DD_POOLS(X)
#undef X
	keep.memo = d->memo;
	keep.memo_cap = d->memo_cap;
	keep.stack_len_cap = d->stack_len_cap;
	keep.attr_cap = d->attr_cap;
	keep.last_epoch = d->last_epoch;
	keep.stack_len = d->stack_len;
	keep.attr_lab = d->attr_lab;
	keep.attr_loc_key = d->attr_loc_key;
	keep.kmemo = d->kmemo;
	keep.kmemo_cap = d->kmemo_cap;
	*d = keep;
	if (!prof_spares_give(&dd_spares, d))
		dd_free(d);
}

/*
 * model_pending.resolve of a pending batch: translate every stack its
 * samples use into profile 0's dictionary, with the memo epoch of the
 * key pass (strings, mappings and attributes it translated are reused),
 * and lend the grown tables to the other profiles again.
 */
static void pending_resolve(struct model_pending *pd)
{
	struct dd *d = (struct dd *)((char *)pd - offsetof(struct dd, pub));
	struct model_profile *ps = d->pend_profiles;

	if (!ps || !ps[0].pending)
		return;
	d->dict = &ps[0];
	d->epoch = d->pend_epoch;
	VEC_RESERVE(&d->dict->locations, d->locs.n + 1);
	VEC_RESERVE(&d->dict->stack_locs, d->pend_frames);
	for (size_t i = 0; i < d->pend_n; i++) {
		struct model_profile *p = &ps[i];

		for (size_t j = 0; j < p->samples.n; j++) {
			struct model_sample *s = &p->samples.v[j];
			uint32_t off = 0, n = 0;

			/* k_stack made every check c_stack makes */
			if (s->stack_off)
				PROF_ASSERT(od_c_stack(d, (int32_t)s->stack_off, &off, &n));
			s->stack_off = off;
			s->nstack = n;
		}
		p->pending = NULL;
	}
	for (size_t i = 1; i < d->pend_n; i++) {
		model_profile_unborrow_dict(&ps[i]);
		model_profile_borrow_dict(&ps[i], &ps[0]);
	}
}

/*
 * The direct decoder: 0 with @out filled; with @err, the error of a
 * request that parses but does not od_convert (replay); otherwise
 * FMT_OTLP_FALLBACK with @out empty.
 */
static int decode_direct(const void *data, size_t n, size_t max_samples, bool shared, bool pending,
			 struct fmt_otlp_batch *out, struct prof_err *err)
{
	struct dd *d;
	bool parsed, ok;
	int rc = FMT_OTLP_FALLBACK;

	memset(out, 0, sizeof(*out));
	/* Offsets into the pools are 32-bit; bigger requests take the other path. */
	if (n > (1u << 30))
		return FMT_OTLP_FALLBACK;
	d = dd_get();
	d->max_samples = max_samples;
	d->shared = shared;
	d->pending = pending;
	if (pending)
		d->k_empty = model_key_bytes("", 0);
	buf_init(&d->tmp, 1u << 20);
	parsed = od_parse_request(d, data, (const uint8_t *)data + n) &&
		 d->alloc <= 24 * n + (1u << 20); /* otlp.c: fmt_pb_check's cap */
	ok = parsed && od_convert(d, n, out);
	if (ok && pending && out->n) {
		d->pub = (struct model_pending){ d->skeys.v, PROF_MAX(d->stacks.n, 1),
						 pending_resolve };
		d->handle.d = d;
		d->pend_profiles = out->profiles;
		d->pend_n = out->n;
		d->pend_epoch = d->epoch;
		for (size_t i = 0; i < out->n; i++)
			out->profiles[i].pending = &d->pub;
		out->pending = &d->handle; /* d goes back at fmt_otlp_batch_release */
		return 0;
	}
	if (!ok) {
		fmt_otlp_batch_release(out);
		if (parsed && err)
			rc = od_replay(d, n, err);
	}
	dd_put(d);
	return ok ? 0 : rc;
}

int fmt_otlp_decode_direct(const void *data, size_t n, size_t max_samples,
			   struct fmt_otlp_batch *out)
{
	return decode_direct(data, n, max_samples, false, false, out, NULL);
}

int fmt_otlp_decode_direct_err(const void *data, size_t n, size_t max_samples,
			       struct fmt_otlp_batch *out, struct prof_err *err)
{
	return decode_direct(data, n, max_samples, false, false, out, err);
}

int fmt_otlp_decode_shared(const void *data, size_t n, size_t max_samples,
			   struct fmt_otlp_batch *out, struct prof_err *err)
{
	int rc = decode_direct(data, n, max_samples, true, false, out, err);

	return rc != FMT_OTLP_FALLBACK ? rc : fmt_otlp_decode_pbc(data, n, max_samples, out, err);
}

int fmt_otlp_decode_pending(const void *data, size_t n, size_t max_samples,
			    struct fmt_otlp_batch *out, struct prof_err *err)
{
	int rc = decode_direct(data, n, max_samples, true, true, out, err);

	return rc != FMT_OTLP_FALLBACK ? rc : fmt_otlp_decode_pbc(data, n, max_samples, out, err);
}

void fmt_otlp_batch_resolve(struct fmt_otlp_batch *b)
{
	if (b && b->n && b->profiles[0].pending)
		b->profiles[0].pending->resolve(b->profiles[0].pending);
}

void fmt_otlp_pending_release(struct fmt_otlp_batch *b)
{
	if (b && b->pending) {
		struct dd *d = b->pending->d;

		b->pending = NULL;
		for (size_t i = 0; i < b->n; i++)
			b->profiles[i].pending = NULL;
		dd_put(d);
	}
}
