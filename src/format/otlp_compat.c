// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_compat.c - older OTLP profiles layouts sniffed and rewritten into
 * the current one (otlp_compat.h).
 *
 * Both passes walk the same five levels of the request: the request,
 * ResourceProfiles (request field 1), ScopeProfiles (field 2), Profile
 * (field 2) and Sample (Profile field 2). Field numbers and wire types
 * are from opentelemetry-proto v1.7.0 .. v1.10.0 profiles.proto
 * (docs/formats.md, "Field lists of older layouts"). The rewrite changes
 * tags and the length prefixes of the messages that contain a renumbered
 * one; payloads are copied as they are, so the current decoder checks
 * them as it checks any request.
 */
#include "format/otlp_compat.h"

#include "base/mem.h"
#include "base/varint.h"
#include "format/pbwire.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum { LV_REQUEST, LV_RESOURCE, LV_SCOPE, LV_PROFILE, LV_SAMPLE };

enum { WT_VARINT = PBWIRE_VARINT, WT_I64 = PBWIRE_I64, WT_LEN = PBWIRE_LEN, WT_I32 = PBWIRE_I32 };

/* One field of a message: number, wire type, and its bytes (the payload
 * of a WT_LEN field; the whole value otherwise). */
struct pb_field {
	uint32_t num;
	unsigned wt;
	const uint8_t *p;
	size_t n;
};

/* pb_next() - the next field of @r into @f (pbwire.h reads it); false at
 * the end or (r->bad) on malformed input (groups and unknown wire types
 * are malformed here). */
static bool pb_next(struct varint_rd *r, struct pb_field *f)
{
	struct pbwire_field w;
	const uint8_t *p = r->p;

	if (r->bad || p >= r->end)
		return false;
	if (!pbwire_field_next(&p, r->end, &w)) {
		r->bad = true;
		return false;
	}
	f->num = w.num;
	f->wt = (unsigned)w.wt;
	f->p = w.wt == PBWIRE_LEN ? w.body : w.vp;
	f->n = w.wt == PBWIRE_LEN ? (size_t)(w.bend - w.body) : (size_t)(p - w.vp);
	r->p = p;
	return true;
}

/* What the sniffer saw. */
struct sniff {
	unsigned v17, v18, v19, v110;
	bool bad;
};

/* Samples looked at per Profile: one producer writes a profile's samples
 * alike, and the sniffer must stay cheap beside the decode on the ingest
 * path (the Profile's own fields are always read). */
#define SNIFF_SAMPLES_MAX 64

static void sniff_sample(struct sniff *s, const uint8_t *p, size_t n)
{
	struct varint_rd r;
	struct pb_field f;
	unsigned c2 = 0, c3 = 0, c4 = 0, c5 = 0;
	bool p3 = false, p4 = false;

	varint_rd_init(&r, p, n);
	while (pb_next(&r, &f)) {
		if (f.num == 2)
			c2++;
		else if (f.num == 3)
			c3++, p3 |= f.wt == WT_LEN;
		else if (f.num == 4)
			c4++, p4 |= f.wt == WT_LEN;
		else if (f.num == 5)
			c5++;
	}
	s->bad |= r.bad;
	if (p3 || c3 > 1 || (c2 && !c4 && !c5))
		s->v19++;
	if (p4 || c4 > 1)
		s->v110++;
}

static void sniff_profile(struct sniff *s, const uint8_t *p, size_t n)
{
	struct varint_rd r;
	struct pb_field f;
	unsigned c1 = 0, nsamples = 0;

	varint_rd_init(&r, p, n);
	while (pb_next(&r, &f)) {
		switch (f.num) {
		case 1:
			c1++;
			break;
		case 2:
			/* once a sample showed v1.10's values, samples cannot say v1.9 */
			if (f.wt == WT_LEN && !s->v110 && nsamples++ < SNIFF_SAMPLES_MAX)
				sniff_sample(s, f.p, f.n);
			break;
		case 3:
			s->v17 += f.wt == WT_LEN;
			break;
		case 5:
			s->v17 += f.wt == WT_VARINT;
			break;
		case 6:
			s->v17 += f.wt == WT_LEN;
			break;
		case 8:
			s->v18 += f.wt == WT_LEN;
			break;
		case 12:
			s->v18++;
			break;
		case 13:
		case 14:
			s->v17++;
			break;
		default:
			break;
		}
	}
	s->bad |= r.bad;
	s->v17 += c1 > 1;
}

/* sniff_level() - walk the message at @lv down to its profiles. */
static void sniff_level(struct sniff *s, int lv, const uint8_t *p, size_t n)
{
	struct varint_rd r;
	struct pb_field f;
	uint32_t child = lv == LV_REQUEST ? 1 : 2;

	varint_rd_init(&r, p, n);
	while (pb_next(&r, &f)) {
		if (f.num != child || f.wt != WT_LEN)
			continue;
		if (lv == LV_SCOPE)
			sniff_profile(s, f.p, f.n);
		else
			sniff_level(s, lv + 1, f.p, f.n);
	}
	s->bad |= r.bad;
}

enum fmt_otlp_layout fmt_otlp_layout_sniff(const void *data, size_t n)
{
	struct sniff s = { 0 };

	sniff_level(&s, LV_REQUEST, data, n);
	if (s.bad)
		return FMT_OTLP_LAYOUT_CURRENT;
	if (s.v17)
		return FMT_OTLP_LAYOUT_V1_7;
	if (s.v18)
		return FMT_OTLP_LAYOUT_V1_8;
	if (s.v19 && !s.v110)
		return FMT_OTLP_LAYOUT_V1_9;
	return FMT_OTLP_LAYOUT_CURRENT;
}

const char *fmt_otlp_layout_name(enum fmt_otlp_layout l)
{
	switch (l) {
	case FMT_OTLP_LAYOUT_V1_9:
		return "v1.9";
	case FMT_OTLP_LAYOUT_V1_8:
		return "v1.8";
	case FMT_OTLP_LAYOUT_V1_7:
		return "v1.7";
	default:
		return "v1.10";
	}
}

/* The rewrite. */
struct up {
	enum fmt_otlp_layout from;
	struct prof_err *err;
	const uint8_t *base; /* the request, for error offsets */
	int rc;
};

/* new_num() - the current field number of field @num of a message at
 * level @lv, or 0 to drop it. */
static uint32_t new_num(const struct up *u, int lv, uint32_t num)
{
	static const uint32_t sample19[] = { [1] = 1, [2] = 4, [3] = 2, [4] = 3, [5] = 5 };

	if (lv == LV_SAMPLE && num < PROF_ARRAY_SIZE(sample19))
		return sample19[num];
	if (lv == LV_PROFILE && u->from == FMT_OTLP_LAYOUT_V1_8 && num >= 7 && num <= 12)
		return num == 7 ? 0 : num - 1;
	return num;
}

static void put_field(struct up *u, struct buf *out, uint32_t num, const struct pb_field *f)
{
	uint8_t t[2 * VARINT_MAX_LEN];
	size_t k = varint_put(t, (uint64_t)num << 3 | f->wt);

	if (f->wt == WT_LEN)
		k += varint_put(t + k, f->n);
	if (!u->rc && (buf_add(out, t, k) || buf_add(out, f->p, f->n)))
		u->rc = prof_err_set(u->err, -PROF_ETOOBIG, -1,
				     "otlp: the rewritten request exceeds its buffer");
}

/* up_level() - rewrite the message @p/@n at level @lv into @out. */
static void up_level(struct up *u, int lv, const uint8_t *p, size_t n, struct buf *out)
{
	struct varint_rd r;
	struct pb_field f;
	uint32_t child = lv == LV_REQUEST ? 1 : 2;

	varint_rd_init(&r, p, n);
	while (!u->rc && pb_next(&r, &f)) {
		uint32_t num = new_num(u, lv, f.num);

		if (!num)
			continue;
		if (lv == LV_SAMPLE || f.num != child || f.wt != WT_LEN) {
			put_field(u, out, num, &f);
			continue;
		}
		/* a child message: rewrite it into a buffer of its own, then frame it */
		struct buf sub = BUF_INIT;
		struct pb_field g = f;

		buf_init(&sub, out->max);
		up_level(u, lv + 1, f.p, f.n, &sub);
		g.p = (const uint8_t *)sub.p;
		g.n = sub.len;
		if (!g.p)
			g.p = (const uint8_t *)"";
		put_field(u, out, num, &g);
		buf_release(&sub);
	}
	if (r.bad && !u->rc)
		u->rc = prof_err_set(u->err, -PROF_ECORRUPT, (int64_t)(r.p - u->base),
				     "otlp: malformed protobuf at byte %td", r.p - u->base);
}

/*
 * v1.7 -> current. v1.7 has no Stack table: a Sample names a range of its
 * Profile's location_indices, and a Profile has several sample types with
 * one value each per Sample. The rewrite builds the stack table (one
 * entry per distinct location sequence, entry 0 the empty stack), splits
 * each Profile into one per sample type, turns the attribute table's
 * KeyValue (key string) into KeyValueAndUnit (key_strindex, new strings
 * appended to the string table; unit from attribute_units), and drops
 * the fields later releases removed (Mapping has_*, Location is_folded,
 * comment_strindices, default_sample_type_index, aggregation_temporality).
 */

/* Sample types of one v1.7 Profile (pprof files have a handful). */
#define V17_TYPES_MAX 64

/* A hash set of byte strings, entry = index into the caller's array. */
struct bset {
	uint32_t *slot; /* index + 1; 0 = empty */
	size_t cap;
};

static uint64_t bytes_hash(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

struct v17_bytes {
	const uint8_t *p;
	size_t n;
};

struct v17 {
	struct up *u;
	VEC(struct v17_bytes) strs; /* the string table, then the strings added */
	struct bset strset;
	VEC(int32_t) stack_ints; /* every stack's location indices, concatenated */
	VEC(size_t) stack_off;	 /* stack i = stack_ints[stack_off[i] .. stack_off[i + 1]) */
	struct bset stackset;
	VEC(int32_t) locidx; /* the current Profile's location_indices */
	VEC(int64_t) vals;
	VEC(uint64_t) ts;
	VEC(struct v17_bytes) types; /* the current Profile's sample types */
	size_t nloc;
};

typedef bool (*bset_eq)(struct v17 *, uint32_t, const void *, size_t);

/* bset_find() - the index of the entry equal to @p/@n, or -1; with
 * @add >= 0, insert @add when missing and return it. */
static int64_t bset_find(struct v17 *c, struct bset *s, const void *p, size_t n, bset_eq eq,
			 int64_t add, size_t count)
{
	if (add >= 0 && 2 * (count + 1) > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		uint32_t *slot = xcalloc(cap, sizeof(*slot));

		for (size_t i = 0; i < s->cap; i++) {
			if (!s->slot[i])
				continue;
			uint32_t k = s->slot[i] - 1;
			const void *kp;
			size_t kn;

			if (s == &c->strset) {
				kp = c->strs.v[k].p;
				kn = c->strs.v[k].n;
			} else {
				kp = c->stack_ints.v + c->stack_off.v[k];
				kn = (c->stack_off.v[k + 1] - c->stack_off.v[k]) * sizeof(int32_t);
			}
			size_t j = bytes_hash(kp, kn) & (cap - 1);

			while (slot[j])
				j = (j + 1) & (cap - 1);
			slot[j] = s->slot[i];
		}
		free(s->slot);
		s->slot = slot;
		s->cap = cap;
	}
	if (!s->cap)
		return -1;
	for (size_t j = bytes_hash(p, n) & (s->cap - 1);; j = (j + 1) & (s->cap - 1)) {
		if (!s->slot[j]) {
			if (add < 0)
				return -1;
			s->slot[j] = (uint32_t)add + 1;
			return add;
		}
		if (eq(c, s->slot[j] - 1, p, n))
			return s->slot[j] - 1;
	}
}

static bool str_eq(struct v17 *c, uint32_t k, const void *p, size_t n)
{
	return c->strs.v[k].n == n && !memcmp(c->strs.v[k].p, p, n);
}

static bool stack_eq(struct v17 *c, uint32_t k, const void *p, size_t n)
{
	size_t len = (c->stack_off.v[k + 1] - c->stack_off.v[k]) * sizeof(int32_t);

	return len == n && !memcmp(c->stack_ints.v + c->stack_off.v[k], p, n);
}

/* v17_intern() - the index of string @p/@n, appended when missing. */
static uint32_t v17_intern(struct v17 *c, const uint8_t *p, size_t n)
{
	int64_t k = bset_find(c, &c->strset, p, n, str_eq, -1, c->strs.n);

	if (k >= 0)
		return (uint32_t)k;
	VEC_PUSH(&c->strs, ((struct v17_bytes){ p, n }));
	return (uint32_t)bset_find(c, &c->strset, p, n, str_eq, (int64_t)c->strs.n - 1,
				   c->strs.n - 1);
}

/* v17_stack() - the stack index of locidx[start .. start + len). */
static int v17_stack(struct v17 *c, uint64_t start, uint64_t len, uint32_t *out)
{
	const int32_t *p;
	int64_t k;

	if (start > c->locidx.n || len > c->locidx.n - start)
		return c->u->rc = prof_err_set(c->u->err, -PROF_ECORRUPT, -1,
					       "otlp v1.7: sample locations [%" PRIu64 ", +%" PRIu64
					       ") outside the profile's %zu location_indices",
					       start, len, c->locidx.n);
	p = c->locidx.v + start;
	k = bset_find(c, &c->stackset, p, len * sizeof(int32_t), stack_eq, -1, c->stack_off.n - 1);
	if (k < 0) {
		VEC_RESERVE(&c->stack_ints, len);
		memcpy(c->stack_ints.v + c->stack_ints.n, p, len * sizeof(int32_t));
		c->stack_ints.n += len;
		VEC_PUSH(&c->stack_off, c->stack_ints.n);
		k = bset_find(c, &c->stackset, p, len * sizeof(int32_t), stack_eq,
			      (int64_t)c->stack_off.n - 2, c->stack_off.n - 2);
	}
	*out = (uint32_t)k;
	return 0;
}

/* Read a repeated integer field (packed or not) into a vector. */
#define READ_REPEATED(c, f, vec, T, get)                                                       \
	do {                                                                                   \
		struct varint_rd r_;                                                           \
		if ((f)->wt == WT_LEN) {                                                       \
			varint_rd_init(&r_, (f)->p, (f)->n);                                   \
			while (varint_rd_left(&r_) && !r_.bad)                                 \
				VEC_PUSH(vec, (T)get(&r_));                                    \
		} else {                                                                       \
			varint_rd_init(&r_, (f)->p, (f)->n);                                   \
			VEC_PUSH(vec, (T)get(&r_));                                            \
		}                                                                              \
		if (r_.bad && !(c)->u->rc)                                                     \
			(c)->u->rc = prof_err_set(                                             \
				(c)->u->err, -PROF_ECORRUPT, (int64_t)((f)->p - (c)->u->base), \
				"otlp v1.7: malformed repeated field %u", (f)->num);           \
	} while (0)

static uint64_t rd_varint(struct varint_rd *r)
{
	return varint_rd_u64(r);
}

static uint64_t rd_ts(struct varint_rd *r)
{
	return varint_rd_u64(r); /* v1.7 timestamps are uint64 varints */
}

static void put_varint_field(struct up *u, struct buf *b, uint32_t num, uint64_t v)
{
	if (!u->rc && (buf_add_uvarint(b, (uint64_t)num << 3 | WT_VARINT) || buf_add_uvarint(b, v)))
		u->rc = prof_err_set(u->err, -PROF_ETOOBIG, -1,
				     "otlp: the rewritten request exceeds its buffer");
}

static void put_bytes_field(struct up *u, struct buf *b, uint32_t num, const void *p, size_t n)
{
	struct pb_field f = { .num = num, .wt = WT_LEN, .p = p ? p : (const uint8_t *)"", .n = n };

	put_field(u, b, num, &f);
}

/* v17_value_type() - ValueType without aggregation_temporality. */
static void v17_value_type(struct up *u, struct buf *b, uint32_t num, const uint8_t *p, size_t n)
{
	struct buf vt = BUF_INIT;
	struct varint_rd r;
	struct pb_field f;

	varint_rd_init(&r, p, n);
	while (pb_next(&r, &f))
		if (f.num == 1 || f.num == 2)
			put_field(u, &vt, f.num, &f);
	put_bytes_field(u, b, num, vt.p, vt.len);
	buf_release(&vt);
}

/* v17_profile() - one v1.7 Profile as one current Profile per sample type. */
static void v17_profile(struct v17 *c, const uint8_t *p, size_t n, uint32_t num, struct buf *out)
{
	struct up *u = c->u;
	struct varint_rd r;
	struct pb_field f;
	struct buf common = BUF_INIT, samples = BUF_INIT, sm = BUF_INIT;
	size_t ntypes;

	c->locidx.n = 0;
	c->types.n = 0;
	varint_rd_init(&r, p, n);
	while (!u->rc && pb_next(&r, &f)) {
		switch (f.num) {
		case 1:
			VEC_PUSH(&c->types, ((struct v17_bytes){ f.p, f.n }));
			break;
		case 3:
			READ_REPEATED(c, &f, &c->locidx, int32_t, rd_varint);
			break;
		case 4: /* time_nanos int64 -> fixed64 time_unix_nano */
		{
			uint8_t t[8];
			struct varint_rd v;

			varint_rd_init(&v, f.p, f.n);
			le64_put(t, varint_rd_u64(&v));
			if (!u->rc &&
			    (buf_add_uvarint(&common, 3 << 3 | WT_I64) || buf_add(&common, t, 8)))
				u->rc = -PROF_ETOOBIG;
			break;
		}
		case 5: /* duration_nanos -> duration_nano */
			f.num = 4;
			put_field(u, &common, 4, &f);
			break;
		case 6:
			v17_value_type(u, &common, 5, f.p, f.n);
			break;
		case 7:
		case 10:
		case 11:
		case 12:
		case 13:
		case 14: /* period, profile_id, dropped, format, payload, attributes */
			put_field(u, &common, f.num - 1, &f);
			break;
		default: /* 2 samples (below), 8 comments and 9 default type: gone */
			break;
		}
	}
	if (r.bad && !u->rc)
		u->rc = prof_err_set(u->err, -PROF_ECORRUPT, (int64_t)(r.p - u->base),
				     "otlp v1.7: malformed Profile at byte %td", r.p - u->base);
	ntypes = c->types.n ? c->types.n : 1;
	/* each type is a pass over the samples: bound the passes */
	if (ntypes > V17_TYPES_MAX && !u->rc)
		u->rc = prof_err_set(u->err, -PROF_ETOOBIG, (int64_t)(p - u->base),
				     "otlp v1.7: a profile with %zu sample types (at most %d)",
				     ntypes, V17_TYPES_MAX);
	for (size_t k = 0; k < ntypes && !u->rc; k++) {
		buf_reset(&samples);
		varint_rd_init(&r, p, n);
		while (!u->rc && pb_next(&r, &f)) {
			struct varint_rd sr;
			struct pb_field g;
			uint64_t start = 0, len = 0;
			uint32_t stack = 0;

			if (f.num != 2 || f.wt != WT_LEN)
				continue;
			buf_reset(&sm);
			c->vals.n = 0;
			c->ts.n = 0;
			varint_rd_init(&sr, f.p, f.n);
			while (!u->rc && pb_next(&sr, &g)) {
				struct varint_rd v;

				varint_rd_init(&v, g.p, g.n);
				switch (g.num) {
				case 1:
					start = varint_rd_u64(&v);
					break;
				case 2:
					len = varint_rd_u64(&v);
					break;
				case 3:
					READ_REPEATED(c, &g, &c->vals, int64_t, rd_varint);
					break;
				case 4: /* attribute_indices -> 2 */
					put_field(u, &sm, 2, &g);
					break;
				case 5: /* link_index -> 3 */
					put_field(u, &sm, 3, &g);
					break;
				case 6:
					READ_REPEATED(c, &g, &c->ts, uint64_t, rd_ts);
					break;
				default:
					break;
				}
			}
			if (sr.bad && !u->rc)
				u->rc = prof_err_set(
					u->err, -PROF_ECORRUPT, (int64_t)(sr.p - u->base),
					"otlp v1.7: malformed Sample at byte %td", sr.p - u->base);
			if (u->rc || v17_stack(c, start, len, &stack))
				break;
			if (c->vals.n && c->vals.n != ntypes && !u->rc) {
				u->rc = prof_err_set(u->err, -PROF_ECORRUPT,
						     (int64_t)(f.p - u->base),
						     "otlp v1.7: a sample has %zu values for %zu "
						     "sample types",
						     c->vals.n, ntypes);
				break;
			}
			put_varint_field(u, &sm, 1, stack);
			if (c->vals.n)
				put_varint_field(u, &sm, 4, (uint64_t)c->vals.v[k]);
			if (c->ts.n) {
				struct buf t = BUF_INIT;

				for (size_t i = 0; i < c->ts.n; i++) {
					uint8_t le[8];

					le64_put(le, c->ts.v[i]);
					if (buf_add(&t, le, 8))
						u->rc = -PROF_ETOOBIG;
				}
				put_bytes_field(u, &sm, 5, t.p, t.len);
				buf_release(&t);
			}
			put_bytes_field(u, &samples, 2, sm.p, sm.len);
		}
		if (u->rc)
			break;
		/* the profile for type k */
		struct buf pr = BUF_INIT;

		if (c->types.n)
			v17_value_type(u, &pr, 1, c->types.v[k].p, c->types.v[k].n);
		if (!u->rc &&
		    (buf_add(&pr, samples.p, samples.len) || buf_add(&pr, common.p, common.len)))
			u->rc = -PROF_ETOOBIG;
		put_bytes_field(u, out, num, pr.p, pr.len);
		buf_release(&pr);
	}
	buf_release(&sm);
	buf_release(&samples);
	buf_release(&common);
}

/* v17_level() - the request down to its profiles (as up_level). */
static void v17_level(struct v17 *c, int lv, const uint8_t *p, size_t n, struct buf *out)
{
	struct up *u = c->u;
	struct varint_rd r;
	struct pb_field f;
	uint32_t child = lv == LV_REQUEST ? 1 : 2;

	varint_rd_init(&r, p, n);
	while (!u->rc && pb_next(&r, &f)) {
		if (lv == LV_REQUEST && f.num == 2)
			continue; /* the dictionary, written by v17_dictionary */
		if (f.num != child || f.wt != WT_LEN) {
			put_field(u, out, f.num, &f);
			continue;
		}
		if (lv == LV_SCOPE) {
			v17_profile(c, f.p, f.n, f.num, out);
			continue;
		}
		struct buf sub = BUF_INIT;

		buf_init(&sub, out->max);
		v17_level(c, lv + 1, f.p, f.n, &sub);
		put_bytes_field(u, out, f.num, sub.p, sub.len);
		buf_release(&sub);
	}
	if (r.bad && !u->rc)
		u->rc = prof_err_set(u->err, -PROF_ECORRUPT, (int64_t)(r.p - u->base),
				     "otlp: malformed protobuf at byte %td", r.p - u->base);
}

/* v17_strip() - a message of the dictionary with fields renumbered by
 * @map (index = old number, value = new, 0 = dropped; numbers past the
 * map are dropped). */
static void v17_strip(struct up *u, struct buf *b, uint32_t num, const struct v17_bytes *m,
		      const uint8_t *map, size_t nmap)
{
	struct buf s = BUF_INIT;
	struct varint_rd r;
	struct pb_field f;

	varint_rd_init(&r, m->p, m->n);
	while (pb_next(&r, &f))
		if (f.num < nmap && map[f.num])
			put_field(u, &s, map[f.num], &f);
	if (r.bad && !u->rc)
		u->rc = prof_err_set(u->err, -PROF_ECORRUPT, (int64_t)(r.p - u->base),
				     "otlp v1.7: malformed dictionary entry at byte %td",
				     r.p - u->base);
	put_bytes_field(u, b, num, s.p, s.len);
	buf_release(&s);
}

/* v17_dictionary() - the v1.7 dictionary @d as the current one, with the
 * stack table built while the profiles were rewritten. */
static void v17_dictionary(struct v17 *c, const struct v17_bytes *d, size_t nstr0, struct buf *out)
{
	static const uint8_t mapping[] = { 0, 1, 2, 3, 4, 5 };
	static const uint8_t location[] = { 0, 1, 2, 3, 0, 4 };
	struct up *u = c->u;
	struct buf dict = BUF_INIT;
	struct varint_rd r;
	struct pb_field f;
	VEC(uint32_t) unit_of = { 0 }; /* by key string index: unit string index */

	unit_of.n = nstr0;
	VEC_RESERVE(&unit_of, nstr0 + 1);
	memset(unit_of.v, 0, (nstr0 + 1) * sizeof(*unit_of.v));
	if (d) {
		varint_rd_init(&r, d->p, d->n);
		while (pb_next(&r, &f)) {
			if (f.num != 7 || f.wt != WT_LEN)
				continue;
			struct varint_rd a;
			struct pb_field g;
			uint64_t key = 0, unit = 0;

			varint_rd_init(&a, f.p, f.n);
			while (pb_next(&a, &g)) {
				struct varint_rd v;

				varint_rd_init(&v, g.p, g.n);
				if (g.num == 1)
					key = varint_rd_u64(&v);
				else if (g.num == 2)
					unit = varint_rd_u64(&v);
			}
			if (key < nstr0 && unit <= UINT32_MAX)
				unit_of.v[key] = (uint32_t)unit;
		}
		varint_rd_init(&r, d->p, d->n);
		while (!u->rc && pb_next(&r, &f)) {
			struct v17_bytes m = { f.p, f.n };

			switch (f.num) {
			case 1:
				v17_strip(u, &dict, 1, &m, mapping, sizeof(mapping));
				break;
			case 2:
				v17_strip(u, &dict, 2, &m, location, sizeof(location));
				break;
			case 3:
			case 4:
				put_field(u, &dict, f.num, &f);
				break;
			case 6: { /* KeyValue{1 key, 2 value} -> KeyValueAndUnit */
				struct varint_rd a;
				struct pb_field g;
				struct buf kv = BUF_INIT;
				uint32_t key = 0;

				varint_rd_init(&a, f.p, f.n);
				while (pb_next(&a, &g)) {
					if (g.num == 1 && g.wt == WT_LEN)
						key = v17_intern(c, g.p, g.n);
					else if (g.num == 2)
						put_field(u, &kv, 2, &g);
				}
				put_varint_field(u, &kv, 1, key);
				if (key < nstr0 && unit_of.v[key])
					put_varint_field(u, &kv, 3, unit_of.v[key]);
				put_bytes_field(u, &dict, 6, kv.p, kv.len);
				buf_release(&kv);
				break;
			}
			default: /* 5 strings: below; 7 attribute units: folded in */
				break;
			}
		}
		if (r.bad && !u->rc)
			u->rc = prof_err_set(u->err, -PROF_ECORRUPT, (int64_t)(r.p - u->base),
					     "otlp v1.7: malformed dictionary at byte %td",
					     r.p - u->base);
	}
	/* strings (those keys added last), then the stacks */
	for (size_t i = 0; i < c->strs.n && !u->rc; i++)
		put_bytes_field(u, &dict, 5, c->strs.v[i].p, c->strs.v[i].n);
	for (size_t i = 0; i + 1 < c->stack_off.n && !u->rc; i++) {
		struct buf st = BUF_INIT, li = BUF_INIT;

		for (size_t j = c->stack_off.v[i]; j < c->stack_off.v[i + 1]; j++)
			if (buf_add_uvarint(&li, (uint64_t)(uint32_t)c->stack_ints.v[j]))
				u->rc = -PROF_ETOOBIG;
		if (li.len)
			put_bytes_field(u, &st, 1, li.p, li.len);
		put_bytes_field(u, &dict, 7, st.p, st.len);
		buf_release(&li);
		buf_release(&st);
	}
	put_bytes_field(u, out, 2, dict.p, dict.len);
	buf_release(&dict);
	VEC_FREE(&unit_of);
}

static int v17_upgrade(struct up *u, const uint8_t *data, size_t n, struct buf *out)
{
	struct v17 c = { .u = u };
	struct v17_bytes dict = { 0 };
	bool have_dict = false;
	struct varint_rd r;
	struct pb_field f;
	size_t nstr0;

	/* the dictionary's strings first: keys are interned among them */
	varint_rd_init(&r, data, n);
	while (pb_next(&r, &f))
		if (f.num == 2 && f.wt == WT_LEN) {
			if (have_dict)
				return prof_err_set(u->err, -PROF_ECORRUPT, (int64_t)(f.p - data),
						    "otlp v1.7: more than one dictionary");
			dict = (struct v17_bytes){ f.p, f.n };
			have_dict = true;
		}
	if (r.bad)
		return prof_err_set(u->err, -PROF_ECORRUPT, (int64_t)(r.p - data),
				    "otlp: malformed protobuf at byte %td", r.p - data);
	if (have_dict) {
		varint_rd_init(&r, dict.p, dict.n);
		while (pb_next(&r, &f))
			if (f.num == 5 && f.wt == WT_LEN)
				VEC_PUSH(&c.strs, ((struct v17_bytes){ f.p, f.n }));
	}
	nstr0 = c.strs.n;
	for (size_t i = 0; i < nstr0; i++)
		(void)bset_find(&c, &c.strset, c.strs.v[i].p, c.strs.v[i].n, str_eq, (int64_t)i, i);
	/* stack 0: the empty stack */
	VEC_PUSH(&c.stack_off, 0);
	VEC_PUSH(&c.stack_off, 0);
	(void)bset_find(&c, &c.stackset, "", 0, stack_eq, 0, 0);
	v17_level(&c, LV_REQUEST, data, n, out);
	if (!u->rc)
		v17_dictionary(&c, have_dict ? &dict : NULL, nstr0, out);
	VEC_FREE(&c.strs);
	VEC_FREE(&c.stack_ints);
	VEC_FREE(&c.stack_off);
	VEC_FREE(&c.locidx);
	VEC_FREE(&c.vals);
	VEC_FREE(&c.ts);
	VEC_FREE(&c.types);
	free(c.strset.slot);
	free(c.stackset.slot);
	return u->rc;
}

int fmt_otlp_compat_upgrade(const void *data, size_t n, enum fmt_otlp_layout from, struct buf *out,
			    struct prof_err *err)
{
	struct up u = { .from = from, .err = err, .base = data };

	if (from == FMT_OTLP_LAYOUT_V1_7)
		return v17_upgrade(&u, data, n, out);
	if (from != FMT_OTLP_LAYOUT_V1_8 && from != FMT_OTLP_LAYOUT_V1_9)
		return prof_err_set(err, -EINVAL, -1, "otlp: cannot rewrite the %s layout",
				    fmt_otlp_layout_name(from));
	up_level(&u, LV_REQUEST, data, n, out);
	return u.rc;
}

int fmt_otlp_decode_any(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *out,
			struct prof_err *err)
{
	enum fmt_otlp_layout l = fmt_otlp_layout_sniff(data, n);
	struct buf up = BUF_INIT;
	int rc;

	if (l == FMT_OTLP_LAYOUT_CURRENT)
		return fmt_otlp_decode(data, n, max_samples, out, err);
	memset(out, 0, sizeof(*out));
	buf_init(&up, 4 * n + 64);
	rc = fmt_otlp_compat_upgrade(data, n, l, &up, err);
	if (!rc)
		rc = fmt_otlp_decode(up.p ? up.p : "", up.len, max_samples, out, err);
	if (rc && err) {
		size_t k = strlen(err->msg);

		snprintf(err->msg + k, sizeof(err->msg) - k, " (read as the OTLP %s layout)",
			 fmt_otlp_layout_name(l));
	}
	buf_release(&up);
	return rc;
}
