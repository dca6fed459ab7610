// SPDX-License-Identifier: Apache-2.0
/*
 * jfr_read.c - reading the bytes of a JFR chunk (jfr.c has the idea and
 * the bounds): errors with chunk and byte offset, primitive reads (LEB128
 * varints, fixed-size values, strings in their encodings), the metadata
 * (classes, fields, roles, per-class plans) and the generic walk of
 * values by plan that drops role-tagged values into a capture.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/jfr.h"
#include "format/jfr_int.h"

#include <zlib.h>

/* ---- errors ------------------------------------------------------------- */

/* ---- metadata ----------------------------------------------------------- */

static bool mstr_is(const struct chunk *c, uint32_t idx, const char *lit)
{
	size_t n = strlen(lit);

	return idx < c->strs.n && c->strs.v[idx].len == n && memcmp(c->strs.v[idx].p, lit, n) == 0;
}

static const char *class_name(const struct chunk *c, uint32_t ci, char *tmp, size_t tmpsz)
{
	const struct mclass *k = &c->classes.v[ci];

	if (k->name == NONE)
		snprintf(tmp, tmpsz, "#%" PRIu64, k->id);
	else
		snprintf(tmp, tmpsz, "%.*s", (int)PROF_MIN(c->strs.v[k->name].len, 80u),
			 c->strs.v[k->name].p);
	return tmp;
}

int jfr_bad(struct dec *d, int code, const uint8_t *at, const char *fmt, ...)
{
	char msg[320], cls[96] = "";
	va_list ap;
	size_t off = at ? (size_t)(at - d->base) : d->chunk_off;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (d->part_c && d->part_ci != NONE)
		class_name(d->part_c, d->part_ci, cls, sizeof(cls));
	return prof_err_set(d->err, code, (int64_t)off,
			    "jfr: chunk %u (at byte %zu): %s%s%s: %s at byte %zu%s", d->chunk_no,
			    d->chunk_off, d->part, *cls ? " " : "", cls, msg, off,
			    d->gz ? " of the gunzipped data" : "");
}

__attribute__((noinline)) int jfr_rd_u64_slow(struct dec *d, struct rd *r, uint64_t *v)
{
	const uint8_t *p = r->p;
	uint64_t x = 0;

	for (int i = 0; i < 8; i++) {
		if (p >= r->end)
			return jfr_bad(d, -PROF_ECORRUPT, r->p, "truncated varint");
		x |= (uint64_t)(*p & 0x7f) << (7 * i);
		if (!(*p++ & 0x80)) {
			*v = x;
			r->p = p;
			return 0;
		}
	}
	if (p >= r->end)
		return jfr_bad(d, -PROF_ECORRUPT, r->p, "truncated varint");
	x |= (uint64_t)*p++ << 56;
	*v = x;
	r->p = p;
	return 0;
}

/* A count or length: each unit takes at least one byte, so it cannot exceed the bytes left. */
int jfr_rd_count(struct dec *d, struct rd *r, uint64_t *v, const char *what)
{
	const uint8_t *at = r->p;
	int rc = rd_u64(d, r, v);

	if (rc)
		return rc;
	if (*v > rd_left(r))
		return jfr_bad(d, -PROF_ECORRUPT, at, "%s %" PRIu64 " exceeds the %zu bytes left",
			       what, *v, rd_left(r));
	return 0;
}

int jfr_rd_fixed(struct dec *d, struct rd *r, size_t n, uint64_t *v)
{
	uint64_t x = 0;

	if (rd_left(r) < n)
		return jfr_bad(d, -PROF_ECORRUPT, r->p, "truncated value (%zu of %zu bytes)",
			       rd_left(r), n);
	for (size_t i = 0; i < n; i++)
		x = x << 8 | r->p[i];
	r->p += n;
	*v = x;
	return 0;
}

static size_t utf8_put(char *o, uint32_t c)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | c >> 12);
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | c >> 18);
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/*
 * A string (docs/formats.md "JFR layout"): encoding byte, then nothing (0 null, 1
 * empty), a String pool key (2), UTF-8 bytes (3), UTF-16 code units as
 * varints (4) or Latin-1 bytes (5). UTF-8 stays in the input; the others
 * are converted to UTF-8 in the arena (only when @s is not NULL).
 */
static int rd_str(struct dec *d, struct rd *r, struct jstr *s)
{
	struct jstr t = { "", 0, JS_INL, 0 };
	const uint8_t *at = r->p;
	uint64_t len;
	int rc;

	if (r->p >= r->end)
		return jfr_bad(d, -PROF_ECORRUPT, r->p, "truncated string");
	switch (*r->p++) {
	case 0:
		t.kind = JS_NULL;
		break;
	case 1:
		break;
	case 2:
		if ((rc = rd_u64(d, r, &t.ref)))
			return rc;
		t.kind = JS_REF;
		break;
	case 3:
	case 5:
		if ((rc = jfr_rd_count(d, r, &len, "string length")))
			return rc;
		t.p = (const char *)r->p;
		t.len = (uint32_t)len;
		r->p += len;
		if (at[0] == 5 && s) {
			size_t hi = 0, o = 0;
			char *q;

			for (uint64_t i = 0; i < len; i++)
				hi += (uint8_t)t.p[i] >= 0x80;
			if (!hi)
				break;
			q = arena_alloc(&d->ar, len + hi);
			for (uint64_t i = 0; i < len; i++)
				o += utf8_put(q + o, (uint8_t)t.p[i]);
			t.p = q;
			t.len = (uint32_t)o;
		}
		break;
	case 4: {
		char *q = NULL;
		size_t o = 0;
		uint32_t hi_sur = 0;

		if ((rc = jfr_rd_count(d, r, &len, "string length")))
			return rc;
		if (s)
			q = arena_alloc(&d->ar, len * 3 + 1);
		for (uint64_t i = 0; i < len; i++) {
			uint64_t c;

			if ((rc = rd_u64(d, r, &c)))
				return rc;
			if (!q)
				continue;
			c &= 0xffff;
			if (hi_sur && c >= 0xdc00 && c <= 0xdfff) {
				/* A pair takes 6 bytes reserved for two units; it writes 4. */
				o += utf8_put(q + o, 0x10000 + ((hi_sur - 0xd800) << 10) +
							     ((uint32_t)c - 0xdc00));
				hi_sur = 0;
				continue;
			}
			if (hi_sur)
				o += utf8_put(q + o, 0xfffd);
			hi_sur = 0;
			if (c >= 0xd800 && c <= 0xdbff)
				hi_sur = (uint32_t)c;
			else
				o += utf8_put(q + o,
					      c >= 0xdc00 && c <= 0xdfff ? 0xfffd : (uint32_t)c);
		}
		if (q && hi_sur)
			o += utf8_put(q + o, 0xfffd);
		if (q) {
			t.p = q;
			t.len = (uint32_t)o;
		}
		break;
	}
	default:
		return jfr_bad(d, -PROF_ECORRUPT, at, "bad string encoding %u", at[0]);
	}
	if (s)
		*s = t;
	return 0;
}

static bool parse_dec_u64(const struct mstr *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s->len == 0 || s->len > 20)
		return false;
	for (uint32_t i = 0; i < s->len; i++) {
		unsigned dgt = (unsigned)(s->p[i] - '0');

		if (dgt > 9 || v > (UINT64_MAX - dgt) / 10)
			return false;
		v = v * 10 + dgt;
	}
	*out = v;
	return true;
}

/* Where an element sits: what its parent was (only these places matter). */
enum { P_NONE, P_ROOT, P_META, P_CLASS, P_OTHER };

static int parse_element(struct dec *d, struct chunk *c, struct rd *r, int depth, int parent)
{
	const uint8_t *at = r->p;
	uint64_t name, nattr, nchild;
	uint32_t ci = NONE, fi = NONE;
	int self = P_OTHER, rc;

	if (depth > MAX_DEPTH)
		return jfr_bad(d, -PROF_ECORRUPT, at, "element tree deeper than %d levels",
			       MAX_DEPTH);
	if ((rc = rd_u64(d, r, &name)))
		return rc;
	if (name >= c->strs.n)
		return jfr_bad(d, -PROF_ECORRUPT, at,
			       "element name index %" PRIu64 " out of range (%zu strings)", name,
			       c->strs.n);
	if (parent == P_ROOT && mstr_is(c, (uint32_t)name, "metadata")) {
		self = P_META;
	} else if (parent == P_META && mstr_is(c, (uint32_t)name, "class")) {
		struct mclass k = { 0 };

		self = P_CLASS;
		k.name = NONE;
		k.fld_off = (uint32_t)c->fields.n;
		k.prim = FK_STRUCT;
		ci = (uint32_t)c->classes.n;
		VEC_PUSH(&c->classes, k);
	} else if (parent == P_CLASS && mstr_is(c, (uint32_t)name, "field")) {
		struct mfield f = { 0 };

		f.name = NONE;
		f.cls = NONE;
		fi = (uint32_t)c->fields.n;
		VEC_PUSH(&c->fields, f);
		c->classes.v[c->classes.n - 1].nfld++;
	}
	if ((rc = jfr_rd_count(d, r, &nattr, "attribute count")))
		return rc;
	for (uint64_t i = 0; i < nattr; i++) {
		const uint8_t *aat = r->p;
		uint64_t key, val;
		const struct mstr *v;

		if ((rc = rd_u64(d, r, &key)) || (rc = rd_u64(d, r, &val)))
			return rc;
		if (key >= c->strs.n || val >= c->strs.n)
			return jfr_bad(d, -PROF_ECORRUPT, aat,
				       "attribute string index %" PRIu64
				       " out of range (%zu strings)",
				       PROF_MAX(key, val), c->strs.n);
		v = &c->strs.v[val];
		if (ci != NONE) {
			struct mclass *k = &c->classes.v[ci];

			if (mstr_is(c, (uint32_t)key, "id")) {
				if (!parse_dec_u64(v, &k->id))
					return jfr_bad(d, -PROF_ECORRUPT, aat,
						       "class id '%.*s' is not a number",
						       (int)PROF_MIN(v->len, 40u), v->p);
				k->has_id = true;
			} else if (mstr_is(c, (uint32_t)key, "name")) {
				k->name = (uint32_t)val;
			}
		} else if (fi != NONE) {
			struct mfield *f = &c->fields.v[fi];

			if (mstr_is(c, (uint32_t)key, "name")) {
				f->name = (uint32_t)val;
			} else if (mstr_is(c, (uint32_t)key, "class")) {
				if (!parse_dec_u64(v, &f->type))
					return jfr_bad(d, -PROF_ECORRUPT, aat,
						       "field type id '%.*s' is not a number",
						       (int)PROF_MIN(v->len, 40u), v->p);
				f->cls = 0; /* the type is known; resolved after the tree */
			} else if (mstr_is(c, (uint32_t)key, "constantPool")) {
				f->cpool = mstr_is(c, (uint32_t)val, "true");
			} else if (mstr_is(c, (uint32_t)key, "dimension")) {
				uint64_t dim = 0;

				if (!parse_dec_u64(v, &dim) || dim > 1)
					return jfr_bad(
						d, -PROF_EUNSUPPORTED, aat,
						"field dimension '%.*s' is not supported (only 0 or 1)",
						(int)PROF_MIN(v->len, 40u), v->p);
				f->array = dim == 1;
			}
		}
	}
	if (ci != NONE && !c->classes.v[ci].has_id)
		return jfr_bad(d, -PROF_ECORRUPT, at, "class element without an id");
	if (fi != NONE && c->fields.v[fi].cls == NONE)
		return jfr_bad(d, -PROF_ECORRUPT, at, "field element without a class");
	if ((rc = jfr_rd_count(d, r, &nchild, "child count")))
		return rc;
	for (uint64_t i = 0; i < nchild; i++) {
		int child = parent == P_NONE ? P_ROOT : self;

		if ((rc = parse_element(d, c, r, depth + 1, child)))
			return rc;
	}
	return 0;
}

static bool kind_is_int(uint8_t k)
{
	return k >= FK_BOOL && k <= FK_LONG;
}

/* Role of field @f of a class with known/ev kinds, given the field's name. */
static uint8_t field_role(const struct chunk *c, const struct mclass *k, const struct mfield *f)
{
	static const struct {
		uint8_t known, ev; /* K_NONE/EV_NONE = any event */
		const char *name;
		uint8_t role;
		uint8_t want; /* 1 int, 2 text, 3 cpool (pool kind in ptarget), 4 frames array */
		uint8_t target;
	} rules[] = {
		{ K_THREAD, 0, "osName", R_T_OSNAME, 2, 0 },
		{ K_THREAD, 0, "osThreadId", R_T_OSTID, 1, 0 },
		{ K_THREAD, 0, "javaName", R_T_JNAME, 2, 0 },
		{ K_THREAD, 0, "javaThreadId", R_T_JTID, 1, 0 },
		{ K_METHOD, 0, "type", R_M_TYPE, 3, K_CLASS },
		{ K_METHOD, 0, "name", R_M_NAME, 2, 0 },
		{ K_CLASS, 0, "name", R_C_NAME, 2, 0 },
		{ K_SYMBOL, 0, "string", R_SYM_STRING, 2, 0 },
		{ K_FRAMETYPE, 0, "description", R_FT_DESC, 2, 0 },
		{ K_STACKTRACE, 0, "truncated", R_ST_TRUNC, 1, 0 },
		{ K_STACKTRACE, 0, "frames", R_ST_FRAMES, 4, 0 },
		{ K_STACKFRAME, 0, "method", R_F_METHOD, 3, K_METHOD },
		{ K_STACKFRAME, 0, "lineNumber", R_F_LINE, 1, 0 },
		{ K_STACKFRAME, 0, "type", R_F_TYPE, 3, K_FRAMETYPE },
		{ 0, EV_SETTING, "id", R_SET_ID, 1, 0 },
		{ 0, EV_SETTING, "name", R_SET_NAME, 2, 0 },
		{ 0, EV_SETTING, "value", R_SET_VALUE, 2, 0 },
		{ 0, EV_MALLOC, "size", R_ALLOC_SIZE, 1, 0 },
		{ 0, 0, "startTime", R_START, 1, 0 },
		{ 0, 0, "duration", R_DURATION, 1, 0 },
		{ 0, 0, "sampledThread", R_THREAD, 3, K_THREAD },
		{ 0, 0, "eventThread", R_THREAD, 3, K_THREAD },
		{ 0, 0, "stackTrace", R_STACK, 3, K_STACKTRACE },
		{ 0, 0, "weight", R_WEIGHT, 1, 0 },
		{ 0, 0, "allocationSize", R_ALLOC_SIZE, 1, 0 },
		{ 0, 0, "tlabSize", R_TLAB_SIZE, 1, 0 },
		{ 0, 0, "samples", R_SAMPLES, 1, 0 },
		{ 0, 0, "samplingPeriod", R_PERIOD, 1, 0 },
		{ 0, 0, "timeSpan", R_TIMESPAN, 1, 0 },
	};
	const struct mclass *t = f->cls < c->classes.n ? &c->classes.v[f->cls] : NULL;

	if (f->name == NONE || !t)
		return R_NONE;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(rules); i++) {
		bool ok;

		if (rules[i].known ? rules[i].known != k->known
				   : (k->ev == EV_NONE || (rules[i].ev && rules[i].ev != k->ev)))
			continue;
		if (!mstr_is(c, f->name, rules[i].name))
			continue;
		switch (rules[i].want) {
		case 1:
			ok = !f->array && kind_is_int(f->kind);
			break;
		case 2:
			ok = !f->array && (f->kind == FK_STRING ||
					   (f->kind == FK_CPOOL &&
					    (t->known == K_STRING || t->known == K_SYMBOL)));
			break;
		case 3:
			ok = !f->array && f->kind == FK_CPOOL && t->known == rules[i].target;
			break;
		default:
			ok = f->array && f->kind == FK_STRUCT && t->known == K_STACKFRAME;
			break;
		}
		return ok ? rules[i].role : R_NONE;
	}
	return R_NONE;
}

/* Whether values of class @ci occupy bytes (conservatively true on cycles and depth). */
static bool class_nonzero(struct chunk *c, uint32_t ci, int depth)
{
	struct mclass *k = &c->classes.v[ci];
	bool nz = false;

	if (k->prim != FK_STRUCT || k->nz == NZ_NONZERO || k->nz == NZ_VISITING ||
	    depth > MAX_DEPTH)
		return true;
	if (k->nz == NZ_ZERO)
		return false;
	k->nz = NZ_VISITING;
	for (uint32_t i = 0; i < k->nfld && !nz; i++) {
		const struct mfield *f = &c->fields.v[k->fld_off + i];

		nz = f->array || f->kind != FK_STRUCT || class_nonzero(c, f->cls, depth + 1);
	}
	c->classes.v[ci].nz = nz ? NZ_NONZERO : NZ_ZERO;
	return nz;
}

static int resolve_metadata(struct dec *d, struct chunk *c)
{
	char tmp[96];

	for (size_t i = 0; i < c->classes.n; i++) {
		struct mclass *k = &c->classes.v[i];

		u64map_put_new(&c->cls_by_id, k->id, (uint32_t)i);
		if (k->name == NONE)
			continue;
		for (size_t j = 0; j < PROF_ARRAY_SIZE(prim_table); j++)
			if (mstr_is(c, k->name, prim_table[j].name))
				k->prim = prim_table[j].kind;
		for (size_t j = 0; j < PROF_ARRAY_SIZE(known_table); j++)
			if (mstr_is(c, k->name, known_table[j].name))
				k->known = known_table[j].known;
		for (size_t j = 0; j < PROF_ARRAY_SIZE(ev_table); j++)
			if (mstr_is(c, k->name, ev_table[j].name))
				k->ev = ev_table[j].ev;
		if (c->strs.v[k->name].len > 9 && memcmp(c->strs.v[k->name].p, "profiler.", 9) == 0)
			c->asprof = true;
	}
	for (size_t i = 0; i < c->fields.n; i++) {
		struct mfield *f = &c->fields.v[i];
		uint32_t ci = u64map_get(&c->cls_by_id, f->type);

		if (ci == NONE) {
			/* Find the owner for the message. */
			size_t owner = 0;

			while (owner + 1 < c->classes.n &&
			       c->classes.v[owner].fld_off + c->classes.v[owner].nfld <= i)
				owner++;
			return jfr_bad(d, -PROF_ECORRUPT, NULL,
				       "class %s: field %.*s has unknown type id %" PRIu64,
				       class_name(c, (uint32_t)owner, tmp, sizeof(tmp)),
				       f->name == NONE ? 1
						       : (int)PROF_MIN(c->strs.v[f->name].len, 60u),
				       f->name == NONE ? "?" : c->strs.v[f->name].p, f->type);
		}
		f->cls = ci;
		f->kind = f->cpool ? FK_CPOOL : c->classes.v[ci].prim;
	}
	for (size_t i = 0; i < c->classes.n; i++) {
		struct mclass *k = &c->classes.v[i];
		bool sampled = false;

		if (k->known == K_NONE && k->ev == EV_NONE)
			continue;
		for (uint32_t j = 0; j < k->nfld; j++)
			sampled |= mstr_is(c, c->fields.v[k->fld_off + j].name, "sampledThread");
		for (uint32_t j = 0; j < k->nfld; j++) {
			struct mfield *f = &c->fields.v[k->fld_off + j];

			f->role = field_role(c, k, f);
			if (sampled && f->role == R_THREAD && mstr_is(c, f->name, "eventThread"))
				f->role = R_NONE;
		}
	}
	for (size_t i = 0; i < c->classes.n; i++) {
		struct mclass *k = &c->classes.v[i];

		k->plan_off = (uint32_t)c->plan.n;
		for (uint32_t j = 0; j < k->nfld; j++) {
			struct mfield f = c->fields.v[c->classes.v[i].fld_off + j];

			if (f.kind == FK_STRUCT && !class_nonzero(c, f.cls, 0)) {
				if (!f.array)
					continue;
				f.kind = FK_NONE;
			}
			VEC_PUSH(&c->plan, f);
		}
		c->classes.v[i].nplan = (uint32_t)c->plan.n - c->classes.v[i].plan_off;
	}
	return 0;
}

int jfr_read_metadata(struct dec *d, struct chunk *c)
{
	const uint8_t *at = d->base + c->off + c->meta_off;
	struct rd r = { at, d->base + c->off + c->size };
	uint64_t size, type, skip, nstr;
	int rc;

	d->part = "metadata";
	if ((rc = rd_u64(d, &r, &size)))
		return rc;
	if (size == 0 || size > (size_t)(r.end - at))
		return jfr_bad(d, -PROF_ECORRUPT, at,
			       "metadata size %" PRIu64 " runs past the chunk end (%zu bytes left)",
			       size, (size_t)(r.end - at));
	r.end = at + size;
	if ((rc = rd_u64(d, &r, &type)))
		return rc;
	if (type != 0)
		return jfr_bad(d, -PROF_ECORRUPT, at,
			       "metadata offset points at a record of type %" PRIu64 ", not 0",
			       type);
	/* startTime, duration, metadata id */
	for (int i = 0; i < 3; i++)
		if ((rc = rd_u64(d, &r, &skip)))
			return rc;
	if ((rc = jfr_rd_count(d, &r, &nstr, "metadata string count")))
		return rc;
	VEC_RESERVE(&c->strs, nstr);
	for (uint64_t i = 0; i < nstr; i++) {
		struct jstr s;
		const uint8_t *sat = r.p;
		struct mstr m;

		if ((rc = rd_str(d, &r, &s)))
			return rc;
		if (s.kind == JS_REF)
			return jfr_bad(d, -PROF_ECORRUPT, sat,
				       "metadata string %" PRIu64 " is a constant pool reference",
				       i);
		m.p = s.kind == JS_NULL ? "" : s.p;
		m.len = s.kind == JS_NULL ? 0 : s.len;
		c->strs.v[c->strs.n++] = m;
	}
	if ((rc = parse_element(d, c, &r, 0, P_NONE)))
		return rc;
	return resolve_metadata(d, c);
}

/* ---- values ------------------------------------------------------------- */

static int read_elem(struct dec *d, struct chunk *c, struct rd *r, const struct mfield *f,
		     int depth, struct cap *cap)
{
	struct cval *v = cap && f->role ? &cap->v[f->role] : NULL;
	uint64_t x = 0;
	int rc = 0;

	switch (f->kind) {
	case FK_NONE:
		return 0;
	case FK_BOOL:
	case FK_BYTE:
		rc = jfr_rd_fixed(d, r, 1, &x);
		break;
	case FK_SHORT:
	case FK_CHAR:
	case FK_INT:
	case FK_LONG:
	case FK_CPOOL:
		rc = rd_u64(d, r, &x);
		break;
	case FK_FLOAT:
		rc = jfr_rd_fixed(d, r, 4, &x);
		break;
	case FK_DOUBLE:
		rc = jfr_rd_fixed(d, r, 8, &x);
		break;
	case FK_STRING:
		rc = rd_str(d, r, v ? &v->s : NULL);
		break;
	default:
		return jfr_walk(d, c, r, f->cls, depth + 1, NULL);
	}
	if (rc || !v)
		return rc;
	v->u = x;
	v->kind = f->kind;
	v->pool = c->classes.v[f->cls].known;
	cap->has |= 1ULL << f->role;
	return 0;
}

static int read_frames(struct dec *d, struct chunk *c, struct rd *r, const struct mfield *f,
		       uint64_t n, int depth, struct cap *cap)
{
	struct cap fc;
	int rc;

	cap->frame_off = (uint32_t)c->pools.frames.n;
	cap->nframes = (uint32_t)n;
	cap->has |= 1ULL << R_ST_FRAMES;
	VEC_RESERVE(&c->pools.frames, n);
	for (uint64_t i = 0; i < n; i++) {
		struct pframe pf = { 0 };

		fc.has = 0;
		if ((rc = jfr_walk(d, c, r, f->cls, depth + 1, &fc)))
			return rc;
		pf.has_method = fc.has >> R_F_METHOD & 1;
		pf.method = pf.has_method ? fc.v[R_F_METHOD].u : 0;
		pf.has_type = fc.has >> R_F_TYPE & 1;
		pf.type = pf.has_type ? fc.v[R_F_TYPE].u : 0;
		pf.line = fc.has >> R_F_LINE & 1 ? (int32_t)(uint32_t)fc.v[R_F_LINE].u : 0;
		c->pools.frames.v[c->pools.frames.n++] = pf;
	}
	return 0;
}

/* The fields of one value of struct class @ci; role values go to @cap (may be NULL). */
int jfr_walk(struct dec *d, struct chunk *c, struct rd *r, uint32_t ci, int depth, struct cap *cap)
{
	const struct mclass *k = &c->classes.v[ci];
	char tmp[96];
	int rc;

	if (depth > MAX_DEPTH)
		return jfr_bad(d, -PROF_ECORRUPT, r->p,
			       "values nested deeper than %d levels (class %s)", MAX_DEPTH,
			       class_name(c, ci, tmp, sizeof(tmp)));
	for (uint32_t i = 0; i < k->nplan; i++) {
		const struct mfield *f = &c->plan.v[k->plan_off + i];
		uint64_t n;

		if (!f->array) {
			if ((rc = read_elem(d, c, r, f, depth, cap)))
				return rc;
			continue;
		}
		if ((rc = jfr_rd_count(d, r, &n, "array length")))
			return rc;
		/* Elements of a zero-size type: nothing to read (nor to keep). */
		if (f->kind == FK_NONE)
			continue;
		if (cap && f->role == R_ST_FRAMES) {
			if ((rc = read_frames(d, c, r, f, n, depth, cap)))
				return rc;
			continue;
		}
		for (uint64_t j = 0; j < n; j++)
			if ((rc = read_elem(d, c, r, f, depth, NULL)))
				return rc;
	}
	return 0;
}

/* One value of class @ci: a primitive or String (pool of java.lang.String, ...) or a struct. */
int jfr_read_value(struct dec *d, struct chunk *c, struct rd *r, uint32_t ci, struct cap *cap)
{
	const struct mclass *k = &c->classes.v[ci];
	struct mfield f = { 0 };

	if (k->prim == FK_STRUCT)
		return jfr_walk(d, c, r, ci, 0, cap);
	f.kind = k->prim;
	f.cls = ci;
	f.role = R_STRVAL;
	return read_elem(d, c, r, &f, 0, cap);
}
