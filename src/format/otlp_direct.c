// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_direct.c - the fast OTLP profiles decoder: wire bytes straight to
 * model profiles, without protobuf-c's tree of small allocations (see
 * otlp.h, fmt_otlp_decode_direct).
 *
 * Two phases. Parse: one pass over every byte of the request (field
 * numbers and types from src/format/proto, shared formats.md 1.4) into a
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
#include "model/stackkey.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

/* Sizes protobuf-c allocates per message (pbcheck.c adds 16 per sub-message). */
#define D_(x)	    opentelemetry__proto__##x##__descriptor.sizeof_message
#define SZ_REQUEST  D_(collector__profiles__v1development__export_profiles_service_request)
#define SZ_DICT	    (D_(profiles__v1development__profiles_dictionary) + 16)
#define SZ_RP	    (D_(profiles__v1development__resource_profiles) + 16)
#define SZ_SP	    (D_(profiles__v1development__scope_profiles) + 16)
#define SZ_PROFILE  (D_(profiles__v1development__profile) + 16)
#define SZ_SAMPLE   (D_(profiles__v1development__sample) + 16)
#define SZ_STACK    (D_(profiles__v1development__stack) + 16)
#define SZ_LOCATION (D_(profiles__v1development__location) + 16)
#define SZ_LINE	    (D_(profiles__v1development__line) + 16)
#define SZ_FUNCTION (D_(profiles__v1development__function) + 16)
#define SZ_MAPPING  (D_(profiles__v1development__mapping) + 16)
#define SZ_LINK	    (D_(profiles__v1development__link) + 16)
#define SZ_VTYPE    (D_(profiles__v1development__value_type) + 16)
#define SZ_KVU	    (D_(profiles__v1development__key_value_and_unit) + 16)
#define SZ_ANY	    (D_(common__v1__any_value) + 16)
#define SZ_ARRAY    (D_(common__v1__array_value) + 16)
#define SZ_KV	    (D_(common__v1__key_value) + 16)
#define SZ_SCOPE    (D_(common__v1__instrumentation_scope) + 16)
#define SZ_RESOURCE (D_(resource__v1__resource) + 16)
#define SZ_ENTITY   (D_(common__v1__entity_ref) + 16)

/* Well-known attribute keys (shared formats.md 1.7), as in otlp.c. */
#define KEY_BUILD_ID_GNU  "process.executable.build_id.gnu"
#define KEY_FRAME_TYPE	  "profile.frame.type"
#define KEY_IS_FOLDED	  "pprof.location.is_folded"
#define KEY_HAS_FUNCTIONS "pprof.mapping.has_functions"
#define KEY_HAS_FILENAMES "pprof.mapping.has_filenames"
#define KEY_HAS_LINES	  "pprof.mapping.has_line_numbers"
#define KEY_HAS_INLINE	  "pprof.mapping.has_inline_frames"
#define KEY_COMMENT	  "pprof.profile.comment"
#define KEY_DROP_FRAMES	  "pprof.profile.drop_frames"
#define KEY_KEEP_FRAMES	  "pprof.profile.keep_frames"
#define KEY_DEFAULT_TYPE  "pprof.scope.default_sample_type"
#define KEY_PROFILE_NAME  "profd.profile.name"

/* Give up and let the protobuf-c path decide (otlp.h). */
#define BAIL() return false

/*
 * A conversion error protobuf-c's path reports too: records @code (and,
 * when d->err is set, the message, word for word otlp.c's) and evaluates
 * to false. Formatting is skipped in the fast pass (d->err NULL).
 */
#define C_FAIL(d, code, ...)                                                                  \
	((d)->rc = (d)->rc ? (d)->rc : (code),                                                \
	 (d)->err ? (void)prof_err_set((d)->err, (code), -1, "otlp: " __VA_ARGS__) : (void)0, \
	 false)
#define C_ERR(d, ...) C_FAIL(d, -PROF_ECORRUPT, __VA_ARGS__)

struct span {
	const uint8_t *p;
	size_t n;
};

/* AnyValue cases (field numbers of the oneof; 0 = not set); kvlists fall back. */
enum {
	AV_NONE = 0,
	AV_STR = 1,
	AV_BOOL = 2,
	AV_INT = 3,
	AV_DOUBLE = 4,
	AV_ARRAY = 5,
	AV_BYTES = 7,
	AV_IDX = 8
};

struct dany {
	int kase;
	struct span s; /* AV_STR (cut at the first NUL, as protobuf-c's C string), AV_BYTES */
	int64_t i;     /* AV_INT, AV_IDX */
	double d;
	bool b;
	uint32_t arr_off, narr; /* AV_ARRAY: range of dd.arr (scalars only) */
};

struct dmap {
	uint64_t start, limit, off;
	int32_t file;
	uint32_t ai_off, nai;
};
struct dloc {
	int32_t map;
	uint64_t addr;
	uint32_t line_off, nlines, ai_off, nai;
};
struct dline {
	int32_t fn;
	int64_t line, col;
};
struct dfn {
	int32_t name, sys, file;
	int64_t start;
};
struct dlink {
	struct span trace, span;
};
struct dattr {
	int32_t key, unit;
	bool has_value;
	struct dany v;
};
struct dstack {
	uint32_t off, n;
};
struct dkv {
	struct span key; /* cut at the first NUL */
	int32_t key_idx;
	bool has_value;
	struct dany v;
};
struct drp {
	uint32_t kv_off, nkv, sp_off, nsp;
};
struct dsp {
	uint32_t kv_off, nkv, pr_off, npr;
};
struct dvt {
	int32_t type, unit;
};
struct dprof {
	bool has_st, has_pt;
	struct dvt st, pt;
	int64_t period;
	uint64_t time, dur;
	uint32_t ai_off, nai, s_off, ns;
};
struct dsample {
	int32_t stack, link;
	uint32_t ai_off, nai, v_off, nv, t_off, nt;
};

/* A content key, valid for the conversion whose epoch it carries. */
struct kslot {
	struct model_key k;
	uint32_t epoch;
};

/* What a pending batch holds (fmt_otlp_decode_pending): its decoder state. */
struct fmt_otlp_pending {
	struct dd *d;
};

struct dd {
	size_t alloc; /* pbcheck.c's estimate of protobuf-c's allocation */
	VEC(struct span) strs;
	VEC(struct dmap) maps;
	VEC(struct dloc) locs;
	VEC(struct dline) lines;
	VEC(struct dfn) fns;
	VEC(struct dlink) links;
	VEC(struct dattr) attrs;
	VEC(struct dstack) stacks;
	VEC(int32_t) ai;       /* attribute_indices of mappings, locations */
	VEC(int32_t) stack_li; /* location_indices of stacks */
	VEC(int32_t) prof_ai;  /* attribute_indices of profiles */
	VEC(int32_t) samp_ai;  /* attribute_indices of samples */
	VEC(int64_t) vals;
	VEC(uint64_t) tss;
	VEC(struct dkv) kvs;
	VEC(struct drp) rps;
	VEC(struct dsp) sps;
	VEC(struct dprof) profs;
	VEC(struct dsample) samples;
	VEC(struct dany) arr; /* elements of array values */
	bool have_dict;

	/* convert */
	struct model_profile *p;    /* the profile being converted: samples, attributes */
	struct model_profile *dict; /* where dictionary entries go: p, or profile 0 (shared) */
	bool shared;		    /* fmt_otlp_decode_shared: one dictionary for all */
	/*
	 * The memo is kept between requests (dd_put) and never
	 * zeroed again: an entry holds for the conversion whose epoch it
	 * carries, and epochs only grow (one per request when shared, one per
	 * profile otherwise) until they would wrap, when the memo is zeroed.
	 * stack_len and attr_lab entries hold where the memo entry does.
	 */
	uint32_t epoch;
	uint32_t last_epoch; /* the highest epoch used so far; 0 = none */
	uint32_t *memo;	     /* val/epoch pairs for each table, see memo_at */
	size_t memo_cap;     /* entries (pairs) memo holds */
	uint32_t *stack_len;
	size_t stack_len_cap;
	struct model_label *attr_lab; /* c_attr_memo's results, by attribute index */
	uint8_t *attr_loc_key;	      /* loc_attr_key's answers, by attribute index */
	size_t attr_cap;	      /* entries attr_lab and attr_loc_key hold */
	size_t base_str, base_map, base_fn, base_loc, base_link, base_stack, base_attr;
	VEC(struct model_line) mlines;
	VEC(uint32_t) mlocs;
	VEC(struct model_label) labels;
	struct buf tmp; /* rendering of non-string attribute values */
	size_t max_samples, nsamples;
	size_t pi; /* number of the profile being converted, in wire order */
	/*
	 * Conversion errors (C_ERR): @rc is the code of the first one, @err
	 * gets its message when set (the replay pass, see replay()).
	 */
	int rc;
	struct prof_err *err;

	/*
	 * fmt_otlp_decode_pending: stacks are keyed (k_stack), not translated.
	 * kmemo holds the keys of mappings, locations, stacks and frame type
	 * attributes by the memo's bases, valid for the epoch they carry (like
	 * memo); skeys the key of each stack a sample uses, by stack id.
	 * pend_bytes and pend_frames bound what resolving would add to the
	 * dictionary.
	 */
	bool pending;
	struct kslot *kmemo;
	size_t kmemo_cap;
	VEC(struct model_key) skeys;
	VEC(struct model_key) kpath;
	VEC(struct model_key_line) klines;
	struct model_key k_empty; /* key of "" */
	size_t pend_bytes, pend_frames;
	uint32_t pend_epoch;
	struct model_pending pub;	/* the profiles' @pending */
	struct fmt_otlp_pending handle; /* the batch's @pending */
	struct model_profile *pend_profiles;
	size_t pend_n;
};

/* ---- wire ---------------------------------------------------------------- */

struct fld {
	uint32_t num;
	int wt;
	uint64_t v;		    /* varint / fixed value */
	const uint8_t *vp, *tagp;   /* start of the varint; of the tag */
	const uint8_t *body, *bend; /* wt 2 payload */
};

/* A varint of at most @max bytes (pbcheck.c / protobuf-c value rules). */
static inline bool rd_varint(const uint8_t **pp, const uint8_t *end, unsigned max, uint64_t *out)
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

static inline uint64_t rd_le(const uint8_t *p, unsigned w)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < w; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/*
 * Reads one field. Tags and length prefixes in more than 5 bytes are
 * refused (protobuf-c reads no more), field number 0 or above 2^29 - 1 and
 * wire types other than 0, 1, 2, 5 too (pbcheck.c). Forced inline: it is
 * the decoder's inner loop (about 10% faster); the fields a wire type does
 * not set are zeroed, which also keeps the inlined callers free of
 * maybe-uninitialized warnings.
 */
static inline __attribute__((always_inline)) bool fld_next(const uint8_t **pp, const uint8_t *end,
							   struct fld *f)
{
	const uint8_t *p = *pp;
	uint64_t tag, len;

	f->tagp = p;
	f->v = 0;
	f->body = f->bend = NULL;
	if (!rd_varint(&p, end, 5, &tag) || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return false;
	f->num = (uint32_t)(tag >> 3);
	f->wt = (int)(tag & 7);
	f->vp = p;
	switch (f->wt) {
	case 0:
		if (!rd_varint(&p, end, 10, &f->v))
			return false;
		break;
	case 1:
		if (end - p < 8)
			return false;
		f->v = rd_le(p, 8);
		p += 8;
		break;
	case 5:
		if (end - p < 4)
			return false;
		f->v = rd_le(p, 4);
		p += 4;
		break;
	case 2:
		if (!rd_varint(&p, end, 5, &len) || len > (uint64_t)(end - p))
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

/* An unknown field: protobuf-c keeps a record and a copy of it. */
static inline void fld_unknown(struct dd *d, const struct fld *f, const uint8_t *next)
{
	d->alloc += 32 + (size_t)(next - f->tagp);
}

/* A singular varint field of a 4-byte (@sz 4) or 8-byte C type. */
static inline bool want_varint(struct dd *d, const struct fld *f, size_t sz)
{
	if (f->wt != 0)
		return false;
	d->alloc += sz;
	return true;
}

static inline bool want_len(struct dd *d, const struct fld *f, size_t extra)
{
	if (f->wt != 2)
		return false;
	d->alloc += extra;
	return true;
}

/* string/bytes: payload + 24 (pbcheck.c). */
static inline bool want_bytes(struct dd *d, const struct fld *f)
{
	return want_len(d, f, (size_t)(f->bend - f->body) + 24);
}

/* A repeated int32 (varint or packed) appended to @v. */
#define REP_I32(d, f, vec)                                               \
	do {                                                             \
		if ((f)->wt == 0) {                                      \
			VEC_PUSH(vec, (int32_t)(uint32_t)(f)->v);        \
			(d)->alloc += 4;                                 \
		} else if ((f)->wt == 2) {                               \
			const uint8_t *q_ = (f)->body;                   \
			while (q_ < (f)->bend) {                         \
				uint64_t x_;                             \
				if (!rd_varint(&q_, (f)->bend, 10, &x_)) \
					BAIL();                          \
				VEC_PUSH(vec, (int32_t)(uint32_t)x_);    \
				(d)->alloc += 4;                         \
			}                                                \
		} else {                                                 \
			BAIL();                                          \
		}                                                        \
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
		struct fld f;
		struct dany e;

		if (!fld_next(&p, end, &f)) {
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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

					if (!rd_varint(&q, f.bend, 10, &x))
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
					d->tss.v[d->tss.n++] = rd_le(f.body + k, 8);
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;

		if (!fld_next(&p, end, &f))
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
		struct fld f;
		bool ok;

		if (!fld_next(&p, end, &f))
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

static bool p_request(struct dd *d, const uint8_t *p, const uint8_t *end)
{
	d->alloc = SZ_REQUEST;
	while (p < end) {
		struct fld f;

		if (!fld_next(&p, end, &f))
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

/* ---- convert (mirrors otlp.c step for step) -------------------------------- */

static inline uint32_t *memo_val(struct dd *d, size_t base, size_t i)
{
	return &d->memo[2 * (base + i)];
}

static bool c_str(struct dd *d, int64_t idx, uint32_t *out)
{
	uint32_t *m;

	if (idx == 0 && d->strs.n == 0) {
		*out = 0;
		return true;
	}
	if (idx < 0 || (uint64_t)idx >= d->strs.n)
		return false;
	m = memo_val(d, d->base_str, (size_t)idx);
	if (m[1] != d->epoch) {
		const struct span *s = &d->strs.v[idx];

		m[0] = model_intern_n(d->dict, (const char *)s->p, s->n);
		m[1] = d->epoch;
	}
	*out = m[0];
	return true;
}

/* Dictionary string @idx equals @s (an index out of range reads as ""). */
static bool c_str_is(const struct dd *d, int32_t idx, const char *s)
{
	size_t n = strlen(s);
	const struct span *b;

	if (idx <= 0 || (size_t)idx >= d->strs.n)
		return n == 0;
	b = &d->strs.v[idx];
	return b->n == n && (n == 0 || memcmp(b->p, s, n) == 0);
}

/* @v as JSON-like text into d->tmp (otlp.c ot_render, arrays of scalars). */
static bool c_render(struct dd *d, const struct dany *v)
{
	switch (v->kase) {
	case AV_STR:
		return buf_add_json_str(&d->tmp, (const char *)v->s.p, v->s.n) == 0;
	case AV_IDX:
		if (v->i < 0 || (uint64_t)v->i >= d->strs.n)
			return C_ERR(d,
				     "attribute value: string_value_strindex %d out of range "
				     "(%zu strings)",
				     (int)v->i, d->strs.n);
		if (v->i == 0)
			return buf_add_json_str(&d->tmp, "", 0) == 0;
		return buf_add_json_str(&d->tmp, (const char *)d->strs.v[v->i].p,
					d->strs.v[v->i].n) == 0;
	case AV_BOOL:
		return buf_addstr(&d->tmp, v->b ? "true" : "false") == 0;
	case AV_INT:
		return buf_addf(&d->tmp, "%" PRId64, v->i) == 0;
	case AV_DOUBLE:
		return buf_addf(&d->tmp, "%.17g", v->d) == 0;
	case AV_BYTES:
		buf_addstr(&d->tmp, "\"");
		for (size_t i = 0; i < v->s.n; i++)
			buf_addf(&d->tmp, "%02x", v->s.p[i]);
		return buf_addstr(&d->tmp, "\"") == 0;
	case AV_ARRAY:
		buf_addstr(&d->tmp, "[");
		for (uint32_t i = 0; i < v->narr; i++) {
			if (i)
				buf_addstr(&d->tmp, ",");
			if (!c_render(d, &d->arr.v[v->arr_off + i]))
				return false;
		}
		return buf_addstr(&d->tmp, "]") == 0;
	default:
		return buf_addstr(&d->tmp, "null") == 0;
	}
}

/* An attribute value as a model label value (otlp.c ot_value; errors name @who[@wi]). */
static bool c_value(struct dd *d, const struct dany *v, bool has, struct model_label *l,
		    const char *who, size_t wi)
{
	l->str = 0;
	l->num = 0;
	if (!has)
		return true;
	switch (v->kase) {
	case AV_NONE:
		return true;
	case AV_STR:
		l->str = model_intern_n(d->dict, (const char *)v->s.p, v->s.n);
		return true;
	case AV_IDX:
		if (!c_str(d, v->i, &l->str))
			return C_ERR(d,
				     "%s[%zu].value.string_value_strindex %d out of range (%zu "
				     "strings)",
				     who, wi, (int)v->i, d->strs.n);
		return true;
	case AV_INT:
		l->num = v->i;
		return true;
	case AV_BOOL:
		l->str = model_intern(d->dict, v->b ? "true" : "false");
		return true;
	default:
		buf_reset(&d->tmp);
		if (!c_render(d, v))
			return false;
		if (v->kase == AV_BYTES && d->tmp.len >= 2) /* drop the quotes */
			l->str = model_intern_n(d->dict, d->tmp.p + 1, d->tmp.len - 2);
		else
			l->str = model_intern_n(d->dict, d->tmp.p ? d->tmp.p : "", d->tmp.len);
		return true;
	}
}

static bool c_attr(struct dd *d, int32_t ai, struct model_label *l)
{
	const struct dattr *a = &d->attrs.v[ai];

	memset(l, 0, sizeof(*l));
	if (!c_str(d, a->key, &l->key))
		return C_ERR(d, "attribute_table[%d].key_strindex %d out of range (%zu strings)",
			     ai, a->key, d->strs.n);
	if (!c_str(d, a->unit, &l->num_unit))
		return C_ERR(d, "attribute_table[%d].unit_strindex %d out of range (%zu strings)",
			     ai, a->unit, d->strs.n);
	return c_value(d, &a->v, a->has_value, l, "attribute_table", (size_t)ai);
}

/*
 * c_attr of attribute @ai, once per profile: samples repeat their
 * threads' attributes, locations their frame type.
 */
static bool c_attr_memo(struct dd *d, int32_t ai, struct model_label *l)
{
	uint32_t *m = memo_val(d, d->base_attr, (size_t)ai);

	if (m[1] != d->epoch) {
		if (!c_attr(d, ai, &d->attr_lab[ai]))
			return false;
		m[1] = d->epoch;
	}
	*l = d->attr_lab[ai];
	return true;
}

static bool a_bool(const struct dattr *a)
{
	return a->has_value && a->v.kase == AV_BOOL && a->v.b;
}

static bool c_mapping(struct dd *d, int32_t mi, uint32_t *out)
{
	uint32_t *m = memo_val(d, d->base_map, (size_t)mi);
	const struct dmap *dm;
	struct model_mapping mm = { 0 };

	if (m[1] == d->epoch) {
		*out = m[0];
		return true;
	}
	dm = &d->maps.v[mi];
	mm.memory_start = dm->start;
	mm.memory_limit = dm->limit;
	mm.file_offset = dm->off;
	if (!c_str(d, dm->file, &mm.filename))
		return C_ERR(d, "mapping_table[%d].filename_strindex %d out of range (%zu strings)",
			     mi, dm->file, d->strs.n);
	for (uint32_t k = 0; k < dm->nai; k++) {
		int32_t ai = d->ai.v[dm->ai_off + k];
		const struct dattr *a;

		if (ai < 0 || (size_t)ai >= d->attrs.n)
			return C_ERR(d,
				     "mapping_table[%d].attribute_indices[%u] = %d out of range "
				     "(%zu attributes)",
				     mi, k, ai, d->attrs.n);
		a = &d->attrs.v[ai];
		if (c_str_is(d, a->key, KEY_BUILD_ID_GNU)) {
			struct model_label l;

			if (!c_attr(d, ai, &l))
				return false;
			mm.build_id = l.str;
		} else if (c_str_is(d, a->key, KEY_HAS_FUNCTIONS)) {
			mm.has_functions = a_bool(a);
		} else if (c_str_is(d, a->key, KEY_HAS_FILENAMES)) {
			mm.has_filenames = a_bool(a);
		} else if (c_str_is(d, a->key, KEY_HAS_LINES)) {
			mm.has_line_numbers = a_bool(a);
		} else if (c_str_is(d, a->key, KEY_HAS_INLINE)) {
			mm.has_inline_frames = a_bool(a);
		}
	}
	mm.build_id = model_build_id_checked(d->dict, mm.build_id);
	m[0] = model_mapping_add(d->dict, &mm);
	m[1] = d->epoch;
	*out = m[0];
	return true;
}

static bool c_function(struct dd *d, int32_t fi, uint32_t *out)
{
	uint32_t *m = memo_val(d, d->base_fn, (size_t)fi);
	const struct dfn *f;
	struct model_function mf = { 0 };

	if (m[1] == d->epoch) {
		*out = m[0];
		return true;
	}
	f = &d->fns.v[fi];
	if (!c_str(d, f->name, &mf.name))
		return C_ERR(d, "function_table[%d].name_strindex %d out of range (%zu strings)",
			     fi, f->name, d->strs.n);
	if (!c_str(d, f->sys, &mf.system_name))
		return C_ERR(d,
			     "function_table[%d].system_name_strindex %d out of range (%zu "
			     "strings)",
			     fi, f->sys, d->strs.n);
	if (!c_str(d, f->file, &mf.filename))
		return C_ERR(d,
			     "function_table[%d].filename_strindex %d out of range (%zu strings)",
			     fi, f->file, d->strs.n);
	mf.start_line = f->start;
	m[0] = model_function_add(d->dict, &mf);
	m[1] = d->epoch;
	*out = m[0];
	return true;
}

enum { LOC_KEY_UNKNOWN, LOC_KEY_FRAME_TYPE, LOC_KEY_FOLDED, LOC_KEY_OTHER };

/* Which Location attribute key attribute @a (index @ai) has, once per request. */
static int loc_attr_key(struct dd *d, int32_t ai, const struct dattr *a)
{
	uint8_t *k = &d->attr_loc_key[ai];

	if (*k == LOC_KEY_UNKNOWN)
		*k = c_str_is(d, a->key, KEY_FRAME_TYPE)  ? LOC_KEY_FRAME_TYPE
		     : c_str_is(d, a->key, KEY_IS_FOLDED) ? LOC_KEY_FOLDED
							  : LOC_KEY_OTHER;
	return *k;
}

static bool c_location(struct dd *d, int32_t li, uint32_t *out)
{
	uint32_t *m = memo_val(d, d->base_loc, (size_t)li);
	const struct dloc *l;
	uint32_t mapping = 0, frame_type = 0, idx;
	bool folded = false;

	if (m[1] == d->epoch) {
		*out = m[0];
		return true;
	}
	l = &d->locs.v[li];
	if (l->map) {
		if (l->map < 0 || (size_t)l->map >= d->maps.n)
			return C_ERR(d,
				     "location_table[%d].mapping_index %d out of range (%zu "
				     "mappings)",
				     li, l->map, d->maps.n);
		if (!c_mapping(d, l->map, &mapping))
			return false;
	}
	d->mlines.n = 0;
	VEC_RESERVE(&d->mlines, l->nlines);
	for (uint32_t k = 0; k < l->nlines; k++) {
		const struct dline *ln = &d->lines.v[l->line_off + k];
		struct model_line ml = { 0, ln->line, ln->col };

		if (ln->fn) {
			if (ln->fn < 0 || (size_t)ln->fn >= d->fns.n)
				return C_ERR(d,
					     "location_table[%d].lines[%u].function_index %d out "
					     "of range (%zu functions)",
					     li, k, ln->fn, d->fns.n);
			if (!c_function(d, ln->fn, &ml.function))
				return false;
		}
		d->mlines.v[d->mlines.n++] = ml;
	}
	for (uint32_t k = 0; k < l->nai; k++) {
		int32_t ai = d->ai.v[l->ai_off + k];
		const struct dattr *a;

		if (ai < 0 || (size_t)ai >= d->attrs.n)
			return C_ERR(d,
				     "location_table[%d].attribute_indices[%u] = %d out of range "
				     "(%zu attributes)",
				     li, k, ai, d->attrs.n);
		a = &d->attrs.v[ai];
		if (loc_attr_key(d, ai, a) == LOC_KEY_FRAME_TYPE) {
			struct model_label lab;

			if (!c_attr_memo(d, ai, &lab))
				return false;
			frame_type = lab.str;
		} else if (loc_attr_key(d, ai, a) == LOC_KEY_FOLDED) {
			folded = a_bool(a);
		}
	}
	idx = model_location_add(d->dict, mapping, l->addr, d->mlines.v, (uint32_t)d->mlines.n);
	d->dict->locations.v[idx].is_folded = folded;
	d->dict->locations.v[idx].frame_type = frame_type;
	m[0] = idx;
	m[1] = d->epoch;
	*out = idx;
	return true;
}

static bool c_stack(struct dd *d, int32_t si, uint32_t *off, uint32_t *n)
{
	uint32_t *m = memo_val(d, d->base_stack, (size_t)si);
	const struct dstack *s;

	if (m[1] == d->epoch) {
		*off = m[0];
		*n = d->stack_len[si];
		return true;
	}
	s = &d->stacks.v[si];
	d->mlocs.n = 0;
	VEC_RESERVE(&d->mlocs, s->n);
	for (uint32_t k = 0; k < s->n; k++) {
		int32_t li = d->stack_li.v[s->off + k];
		uint32_t loc = 0;

		if (li <= 0 || (size_t)li >= d->locs.n)
			return C_ERR(d,
				     "stack_table[%d].location_indices[%u] = %d out of range "
				     "(%zu locations; 0 is the null location)",
				     si, k, li, d->locs.n);
		if (!c_location(d, li, &loc))
			return false;
		d->mlocs.v[d->mlocs.n++] = loc;
	}
	if (d->dict->stack_locs.n + d->mlocs.n > UINT32_MAX)
		return C_FAIL(d, -PROF_ETOOBIG, "more than 2^32 stack entries");
	*off = model_stack_add(d->dict, d->mlocs.v, (uint32_t)d->mlocs.n);
	*n = (uint32_t)d->mlocs.n;
	m[0] = *off;
	m[1] = d->epoch;
	d->stack_len[si] = *n;
	return true;
}

/* --- pending stacks: content keys straight from the wire ------------------ */

static inline struct kslot *kmemo_at(struct dd *d, size_t base, size_t i)
{
	return &d->kmemo[base + i];
}

/* The bytes of string @idx (what c_str would intern), with c_str's checks. */
static inline bool k_span(const struct dd *d, int64_t idx, const void **p, uint32_t *n)
{
	if (idx == 0 && d->strs.n == 0) {
		*p = NULL;
		*n = 0;
		return true;
	}
	if (idx < 0 || (uint64_t)idx >= d->strs.n)
		return false;
	*p = d->strs.v[idx].p;
	*n = (uint32_t)d->strs.v[idx].n;
	return true;
}

/* The key of a string of the dictionary being built (d->dict). */
static struct model_key k_dict_str(const struct dd *d, uint32_t id)
{
	return model_key_bytes(d->dict->strings.s[id], d->dict->strings.len[id]);
}

/* The key of mapping @mi: the mapping is translated (c_mapping; requests hold few). */
static bool k_mapping(struct dd *d, int32_t mi, struct model_key *out)
{
	struct kslot *k = kmemo_at(d, d->base_map, (size_t)mi);
	const struct model_mapping *m;
	uint32_t id;

	if (k->epoch != d->epoch) {
		if (!c_mapping(d, mi, &id))
			return false;
		m = &d->dict->mappings.v[id];
		k->k = model_key_mapping(m->memory_start, m->memory_limit, m->file_offset,
					 k_dict_str(d, m->filename), k_dict_str(d, m->build_id),
					 model_mapping_flags(m));
		k->epoch = d->epoch;
	}
	*out = k->k;
	return true;
}

/*
 * The key of location @li: the fields and checks of c_location, read from
 * the wire (frame type through c_attr_memo, as c_location), hashed as the
 * head hashes a model location (store/head.c xh_location).
 */
static bool k_location(struct dd *d, int32_t li, struct model_key *out)
{
	struct kslot *k = kmemo_at(d, d->base_loc, (size_t)li);
	const struct dloc *l;
	struct model_key map = { 0, 0 }, ft = d->k_empty;
	bool folded = false;

	if (k->epoch == d->epoch) {
		*out = k->k;
		return true;
	}
	l = &d->locs.v[li];
	if (l->map) {
		if (l->map < 0 || (size_t)l->map >= d->maps.n || !k_mapping(d, l->map, &map))
			return false;
	}
	d->klines.n = 0;
	VEC_RESERVE(&d->klines, l->nlines);
	for (uint32_t j = 0; j < l->nlines; j++) {
		const struct dline *ln = &d->lines.v[l->line_off + j];
		struct model_key_line *kl = &d->klines.v[j];

		kl->line = ln->line;
		kl->column = ln->col;
		kl->has_function = ln->fn != 0;
		if (ln->fn) {
			const struct dfn *f;

			if (ln->fn < 0 || (size_t)ln->fn >= d->fns.n)
				return false;
			f = &d->fns.v[ln->fn];
			if (!k_span(d, f->name, &kl->name, &kl->name_len) ||
			    !k_span(d, f->sys, &kl->system_name, &kl->system_name_len) ||
			    !k_span(d, f->file, &kl->filename, &kl->filename_len))
				return false;
			kl->start_line = f->start;
		} else {
			kl->name = kl->system_name = kl->filename = NULL;
			kl->name_len = kl->system_name_len = kl->filename_len = 0;
			kl->start_line = 0;
		}
	}
	for (uint32_t j = 0; j < l->nai; j++) {
		int32_t ai = d->ai.v[l->ai_off + j];
		const struct dattr *a;

		if (ai < 0 || (size_t)ai >= d->attrs.n)
			return false;
		a = &d->attrs.v[ai];
		if (loc_attr_key(d, ai, a) == LOC_KEY_FRAME_TYPE) {
			struct kslot *ka = kmemo_at(d, d->base_attr, (size_t)ai);

			if (ka->epoch != d->epoch) { /* once per attribute: most frames have one */
				struct model_label lab;

				if (!c_attr_memo(d, ai, &lab))
					return false;
				ka->k = k_dict_str(d, lab.str);
				ka->epoch = d->epoch;
			}
			ft = ka->k;
		} else if (loc_attr_key(d, ai, a) == LOC_KEY_FOLDED) {
			folded = a_bool(a);
		}
	}
	k->k = model_key_location(map, l->addr, folded, ft, d->klines.v, l->nlines);
	k->epoch = d->epoch;
	d->pend_bytes += sizeof(struct model_location) +
			 l->nlines * (sizeof(struct model_line) + sizeof(struct model_function));
	*out = k->k;
	return true;
}

/* The key of stack @si (> 0) into d->skeys, with c_stack's checks. */
static bool k_stack(struct dd *d, int32_t si)
{
	struct kslot *k = kmemo_at(d, d->base_stack, (size_t)si);
	const struct dstack *s;

	if (k->epoch == d->epoch)
		return true;
	s = &d->stacks.v[si];
	d->kpath.n = 0;
	VEC_RESERVE(&d->kpath, s->n);
	for (uint32_t j = 0; j < s->n; j++) {
		int32_t li = d->stack_li.v[s->off + j];

		/* root first: the wire lists the leaf first */
		if (li <= 0 || (size_t)li >= d->locs.n ||
		    !k_location(d, li, &d->kpath.v[s->n - 1 - j]))
			return false;
	}
	d->pend_frames += s->n;
	if (d->pend_frames > UINT32_MAX)
		return false;
	d->pend_bytes += (size_t)s->n * sizeof(uint32_t);
	d->skeys.v[si] = model_key_stack(d->kpath.v, s->n);
	k->epoch = d->epoch;
	return true;
}

static bool c_link(struct dd *d, int32_t ki, uint32_t *out)
{
	uint32_t *m = memo_val(d, d->base_link, (size_t)ki);
	const struct dlink *k;
	struct model_link ml;

	if (m[1] == d->epoch) {
		*out = m[0];
		return true;
	}
	k = &d->links.v[ki];
	memset(&ml, 0, sizeof(ml));
	if (k->trace.n != 0 && k->trace.n != sizeof(ml.trace_id))
		return C_ERR(d, "link_table[%d].trace_id has %zu bytes (16 expected)", ki,
			     k->trace.n);
	if (k->span.n != 0 && k->span.n != sizeof(ml.span_id))
		return C_ERR(d, "link_table[%d].span_id has %zu bytes (8 expected)", ki, k->span.n);
	if (k->trace.n)
		memcpy(ml.trace_id, k->trace.p, sizeof(ml.trace_id));
	if (k->span.n)
		memcpy(ml.span_id, k->span.p, sizeof(ml.span_id));
	VEC_PUSH(&d->dict->links, ml);
	m[0] = (uint32_t)d->dict->links.n - 1;
	m[1] = d->epoch;
	*out = m[0];
	return true;
}

/* A resource/scope KeyValue, @who[@i], into p->attrs (otlp.c ot_keyvalue). */
static bool c_keyvalue(struct dd *d, const struct dkv *kv, const char *who, size_t i)
{
	struct model_label l = { 0 };

	if (kv->key.n)
		l.key = model_intern_n(d->dict, (const char *)kv->key.p, kv->key.n);
	else if (!c_str(d, kv->key_idx, &l.key))
		return C_ERR(d, "%s[%zu].key_strindex %d out of range (%zu strings)", who, i,
			     kv->key_idx, d->strs.n);
	if (!c_value(d, &kv->v, kv->has_value, &l, who, i))
		return false;
	if (!strcmp(model_str(d->dict, l.key), KEY_DEFAULT_TYPE))
		d->p->default_sample_type = l.str;
	else
		VEC_PUSH(&d->p->attrs, l);
	return true;
}

static bool c_profile_attrs(struct dd *d, const struct dprof *pr)
{
	for (uint32_t k = 0; k < pr->nai; k++) {
		int32_t ai = d->prof_ai.v[pr->ai_off + k];
		const struct dattr *a;
		struct model_label l;

		if (ai < 0 || (size_t)ai >= d->attrs.n)
			return C_ERR(d,
				     "profile %zu: attribute_indices[%u] = %d out of range (%zu "
				     "attributes)",
				     d->pi, k, ai, d->attrs.n);
		a = &d->attrs.v[ai];
		if (c_str_is(d, a->key, KEY_COMMENT) && a->has_value && a->v.kase == AV_ARRAY) {
			for (uint32_t j = 0; j < a->v.narr; j++) {
				if (!c_value(d, &d->arr.v[a->v.arr_off + j], true, &l,
					     "attribute_table", (size_t)ai))
					return false;
				VEC_PUSH(&d->p->comments, l.str);
			}
			continue;
		}
		if (!c_attr(d, ai, &l))
			return false;
		if (c_str_is(d, a->key, KEY_DROP_FRAMES))
			d->p->drop_frames = l.str;
		else if (c_str_is(d, a->key, KEY_PROFILE_NAME))
			d->p->name = l.str;
		else if (c_str_is(d, a->key, KEY_KEEP_FRAMES))
			d->p->keep_frames = l.str;
		else
			VEC_PUSH(&d->p->attrs, l);
	}
	return true;
}

/* One observation: a model sample whose labels are the range @lab, @nlab of p->labels. */
static void obs_add(struct model_profile *p, uint32_t off, uint32_t n, int64_t v, uint32_t lab,
		    uint32_t nlab, int64_t ts, uint32_t link)
{
	uint32_t i = model_sample_add(p, off, n, &v, NULL, 0, ts, link);

	p->samples.v[i].label_off = lab;
	p->samples.v[i].nlabels = nlab;
}

static bool c_samples(struct dd *d, const struct dprof *pr)
{
	for (uint32_t i = 0; i < pr->ns; i++) {
		const struct dsample *s = &d->samples.v[pr->s_off + i];
		uint32_t off = 0, n = 0, link = 0, lab;
		size_t nobs;

		if (s->stack < 0 || (size_t)s->stack >= d->stacks.n)
			return C_ERR(d,
				     "profile %zu sample %u: stack_index %d out of range (%zu "
				     "stacks)",
				     d->pi, i, s->stack, d->stacks.n);
		if (d->pending) {
			/* the stack id stands in until pending_resolve */
			if (s->stack && !k_stack(d, s->stack))
				return false;
			off = (uint32_t)s->stack;
		} else if (s->stack && !c_stack(d, s->stack, &off, &n)) {
			return false;
		}
		if (s->link) {
			if (s->link < 0 || (size_t)s->link >= d->links.n)
				return C_ERR(d,
					     "profile %zu sample %u: link_index %d out of range "
					     "(%zu links)",
					     d->pi, i, s->link, d->links.n);
			if (!c_link(d, s->link, &link))
				return false;
		}
		d->labels.n = 0;
		VEC_RESERVE(&d->labels, s->nai);
		for (uint32_t k = 0; k < s->nai; k++) {
			int32_t ai = d->samp_ai.v[s->ai_off + k];

			if (ai < 0 || (size_t)ai >= d->attrs.n)
				return C_ERR(d,
					     "profile %zu sample %u: attribute_indices[%u] = %d "
					     "out of range (%zu attributes)",
					     d->pi, i, k, ai, d->attrs.n);
			if (!c_attr_memo(d, ai, &d->labels.v[d->labels.n]))
				return false;
			d->labels.n++;
		}
		if (s->nv && s->nt && s->nv != s->nt)
			return C_ERR(d,
				     "profile %zu sample %u: %u values but %u timestamps (must "
				     "be equal when both are present)",
				     d->pi, i, s->nv, s->nt);
		nobs = PROF_MAX(s->nv, s->nt);
		if (d->max_samples && d->nsamples + nobs > d->max_samples)
			return C_FAIL(d, -PROF_ETOOBIG,
				      "more than %zu samples (profile %zu sample %u)",
				      d->max_samples, d->pi, i);
		if (!nobs)
			continue;
		if (d->p->labels.n + d->labels.n > UINT32_MAX)
			return C_FAIL(d, -PROF_ETOOBIG, "more than 2^32 sample labels");
		d->nsamples += nobs;
		lab = model_labels_add(d->p, d->labels.v, d->labels.n);
		for (size_t j = 0; j < nobs; j++) {
			int64_t v = s->nv ? d->vals.v[s->v_off + j] : 1;
			int64_t ts = s->nt ? (int64_t)d->tss.v[s->t_off + j] : 0;

			obs_add(d->p, off, n, v, lab, (uint32_t)d->labels.n, ts, link);
		}
	}
	return true;
}

static bool c_vtype(struct dd *d, bool has, const struct dvt *vt, struct model_value_type *out,
		    const char *field)
{
	out->type = out->unit = 0;
	if (!has)
		return true;
	if (!c_str(d, vt->type, &out->type))
		return C_ERR(d, "profile %zu: %s.type_strindex %d out of range (%zu strings)",
			     d->pi, field, vt->type, d->strs.n);
	if (!c_str(d, vt->unit, &out->unit))
		return C_ERR(d, "profile %zu: %s.unit_strindex %d out of range (%zu strings)",
			     d->pi, field, vt->unit, d->strs.n);
	return true;
}

static bool c_profile(struct dd *d, const struct drp *rp, const struct dsp *sp,
		      const struct dprof *pr)
{
	struct model_profile *p = d->p;
	struct model_value_type vt;

	if (!c_vtype(d, pr->has_st, &pr->st, &vt, "sample_type"))
		return false;
	VEC_PUSH(&p->sample_types, vt);
	if (!c_vtype(d, pr->has_pt, &pr->pt, &p->period_type, "period_type"))
		return false;
	p->period = pr->period;
	p->time_ns = (int64_t)pr->time;
	p->duration_ns = (int64_t)pr->dur;
	for (uint32_t k = 0; k < rp->nkv; k++)
		if (!c_keyvalue(d, &d->kvs.v[rp->kv_off + k], "resource.attributes", k))
			return false;
	for (uint32_t k = 0; k < sp->nkv; k++)
		if (!c_keyvalue(d, &d->kvs.v[sp->kv_off + k], "scope.attributes", k))
			return false;
	/* No model_profile_validate here: every index is made by the steps above
	 * from a checked one, so the profile holds the invariants by construction
	 * (the unit test and the fuzz target check it), and the store validates
	 * what it is given anyway. */
	return c_profile_attrs(d, pr) && c_samples(d, pr);
}

/*
 * Size the tables of d->p for profile @pr, so growing by doubling does
 * not copy every table several times: samples, values and sample labels
 * exactly; locations and stack entries for at most what the profile's
 * stacks can reach (their summed lengths, counted per sample, capped by
 * the request's tables), lines for one per location; a request's only
 * profile takes at most the whole dictionary, so it gets every table
 * sized for that, as does profile 0 when the dictionary is shared.
 */
static void reserve(struct dd *d, const struct dprof *pr)
{
	struct model_profile *p = d->p, *dict = d->dict;
	size_t nobs = 0, nlab = 0, frames = 0, nloc, nline;

	for (uint32_t i = 0; i < pr->ns; i++) {
		const struct dsample *s = &d->samples.v[pr->s_off + i];
		size_t k = PROF_MAX(PROF_MAX(s->nv, s->nt), 1u);

		nobs += k;
		nlab += s->nai;
		if (s->stack > 0 && (size_t)s->stack < d->stacks.n)
			frames += d->stacks.v[s->stack].n;
	}
	frames = PROF_MIN(frames, d->stack_li.n);
	nloc = PROF_MIN(frames, d->locs.n);
	nline = PROF_MIN(nloc, d->lines.n);
	if ((d->shared && p != dict) || d->pending)
		goto own; /* profile 0 sized the shared dictionary; pending: nothing to size */
	if (d->profs.n == 1 || d->shared) {
		/* The string table's hash index is worth sizing only here: with
		 * several profiles, each takes a small part of the dictionary. */
		strtab_reserve(&dict->strings, (uint32_t)PROF_MIN(d->strs.n + 8, UINT32_MAX / 8));
		VEC_RESERVE(&dict->mappings, d->maps.n);
		VEC_RESERVE(&dict->functions, d->fns.n);
		nline = d->lines.n;
		if (d->shared) {
			nloc = d->locs.n;
			frames = d->stack_li.n;
		}
	}
	VEC_RESERVE(&dict->locations, nloc + 1);
	VEC_RESERVE(&dict->lines, nline);
	VEC_RESERVE(&dict->stack_locs, frames);
own:
	VEC_RESERVE(&p->samples, nobs);
	VEC_RESERVE(&p->values, nobs);
	VEC_RESERVE(&p->labels, nlab);
}

/* Every table's indices fit int32 (otlp.c: else "dictionary table over 2^31 entries"). */
static bool tables_fit(const struct dd *d)
{
	return d->strs.n <= INT32_MAX && d->maps.n <= INT32_MAX && d->locs.n <= INT32_MAX &&
	       d->fns.n <= INT32_MAX && d->links.n <= INT32_MAX && d->attrs.n <= INT32_MAX &&
	       d->stacks.n <= INT32_MAX;
}

static bool convert(struct dd *d, size_t n, struct fmt_otlp_batch *out)
{
	size_t total, pi = 0, bytes = 0;

	if (!tables_fit(d))
		return false;
	d->base_str = 0;
	d->base_map = d->base_str + d->strs.n + 1;
	d->base_fn = d->base_map + d->maps.n + 1;
	d->base_loc = d->base_fn + d->fns.n + 1;
	d->base_link = d->base_loc + d->locs.n + 1;
	d->base_stack = d->base_link + d->links.n + 1;
	d->base_attr = d->base_stack + d->stacks.n + 1;
	total = d->base_attr + d->attrs.n + 1;
	if (total > d->memo_cap || d->last_epoch > UINT32_MAX - d->profs.n - 1) {
		free(d->memo);
		d->memo_cap = PROF_MAX(total, 2 * d->memo_cap);
		d->memo = xcalloc(d->memo_cap, 2 * sizeof(*d->memo));
		d->last_epoch = 0;
		free(d->kmemo); /* its epochs start again too */
		d->kmemo = NULL;
		d->kmemo_cap = 0;
	}
	if (d->stacks.n + 1 > d->stack_len_cap) {
		free(d->stack_len);
		d->stack_len_cap = PROF_MAX(d->stacks.n + 1, 2 * d->stack_len_cap);
		d->stack_len = xmalloc(d->stack_len_cap * sizeof(*d->stack_len));
	}
	if (d->attrs.n + 1 > d->attr_cap) {
		free(d->attr_lab);
		free(d->attr_loc_key);
		d->attr_cap = PROF_MAX(d->attrs.n + 1, 2 * d->attr_cap);
		d->attr_lab = xmalloc(d->attr_cap * sizeof(*d->attr_lab));
		d->attr_loc_key = xmalloc(d->attr_cap * sizeof(*d->attr_loc_key));
	}
	memset(d->attr_loc_key, 0, (d->attrs.n + 1) * sizeof(*d->attr_loc_key));
	if (d->pending) {
		/* keys hold for the memo's epochs: a new memo starts them afresh */
		if (total > d->kmemo_cap) {
			free(d->kmemo);
			d->kmemo_cap = PROF_MAX(total, d->memo_cap);
			d->kmemo = xcalloc(d->kmemo_cap, sizeof(*d->kmemo));
		}
		d->skeys.n = 0;
		VEC_RESERVE(&d->skeys, d->stacks.n + 1);
		d->skeys.v[0] = (struct model_key){ 0, 0 };
		d->pend_bytes = d->pend_frames = 0;
		/* resolving interns at most every string: bytes and index entries */
		for (size_t i = 0; i < d->strs.n; i++)
			d->pend_bytes += d->strs.v[i].n + 1 + 16;
	}
	out->profiles = xcalloc(d->profs.n ? d->profs.n : 1, sizeof(*out->profiles));
	/* Profiles in wire order: resource, then scope, then profile. */
	for (size_t r = 0; r < d->rps.n; r++) {
		const struct drp *rp = &d->rps.v[r];

		for (uint32_t s = 0; s < rp->nsp; s++) {
			const struct dsp *sp = &d->sps.v[rp->sp_off + s];

			for (uint32_t k = 0; k < sp->npr; k++, pi++) {
				model_profile_init(&out->profiles[pi]);
				out->n = pi + 1;
				d->p = &out->profiles[pi];
				d->dict = d->shared ? &out->profiles[0] : d->p;
				d->pi = pi;
				reserve(d, &d->profs.v[sp->pr_off + k]);
				/* shared: one translation of the dictionary for all */
				if (!d->shared || pi == 0)
					d->epoch = ++d->last_epoch;
				if (!c_profile(d, rp, sp, &d->profs.v[sp->pr_off + k]))
					return false;
				/* as otlp.c ot_to_batch (otlp.h FMT_OTLP_DECODED_MAX);
				 * shared, profile 0 (the dictionary) counts at the end */
				if (d->max_samples && !(d->shared && pi == 0))
					bytes += fmt_otlp_profile_bytes(d->p);
				if (bytes > FMT_OTLP_DECODED_MAX(n))
					return false;
			}
		}
	}
	if (d->shared && out->n) {
		bytes += d->max_samples ? fmt_otlp_profile_bytes(&out->profiles[0]) : 0;
		/* what resolving may add, tables doubling as they grow */
		bytes += d->max_samples ? 2 * d->pend_bytes : 0;
		if (bytes > FMT_OTLP_DECODED_MAX(n))
			return false;
		for (size_t i = 1; i < out->n; i++)
			model_profile_borrow_dict(&out->profiles[i], &out->profiles[0]);
		out->shared_dict = out->n > 1;
	}
	return true;
}

/*
 * After convert() failed on a request that parsed: convert it again as
 * otlp.c does, each profile with its own dictionary and tables grown
 * the same way (no reserve), one profile at a time, freed once counted,
 * so its checks, its decoded-size count (fmt_otlp_profile_bytes of the
 * same tables) and so its first error are protobuf-c's path's, without
 * protobuf-c's unpacked tree nor every profile held at once. Returns
 * that error's code with @err set, or FMT_OTLP_FALLBACK when it finds
 * none (the fast pass failed for its own reasons: the shared
 * dictionary's count, a rendering over d->tmp's cap) or one only the
 * protobuf-c path words.
 */
static int replay(struct dd *d, size_t n, struct prof_err *err)
{
	struct model_profile p;
	size_t pi = 0, bytes = 0;
	int rc;

	if (!tables_fit(d)) /* convert stopped before sizing the memos */
		return FMT_OTLP_FALLBACK;
	if (d->last_epoch > UINT32_MAX - d->profs.n - 1) {
		/* epochs would wrap: start the memos afresh (as convert) */
		memset(d->memo, 0, d->memo_cap * 2 * sizeof(*d->memo));
		d->last_epoch = 0;
		free(d->kmemo);
		d->kmemo = NULL;
		d->kmemo_cap = 0;
	}
	d->shared = d->pending = false;
	d->nsamples = 0;
	d->rc = 0;
	d->err = err;
	for (size_t r = 0; r < d->rps.n; r++) {
		const struct drp *rp = &d->rps.v[r];

		for (uint32_t s = 0; s < rp->nsp; s++) {
			const struct dsp *sp = &d->sps.v[rp->sp_off + s];

			for (uint32_t k = 0; k < sp->npr; k++, pi++) {
				model_profile_init(&p);
				d->p = d->dict = &p;
				d->pi = pi;
				d->epoch = ++d->last_epoch;
				if (!c_profile(d, rp, sp, &d->profs.v[sp->pr_off + k]))
					rc = d->rc ? d->rc : FMT_OTLP_FALLBACK;
				else /* otlp.c ot_profile; holds by construction */
					rc = model_profile_validate(&p, err);
				if (!rc && d->max_samples) {
					bytes += fmt_otlp_profile_bytes(&p);
					if (bytes > FMT_OTLP_DECODED_MAX(n))
						rc = prof_err_set(
							err, -PROF_ETOOBIG, -1,
							"otlp: decoded size limit (64 x the "
							"request's %zu bytes + 16 MiB) exceeded at "
							"profile %zu: %zu bytes (each profile "
							"copies the dictionary entries it uses)",
							n, pi, bytes);
				}
				model_profile_release(&p);
				if (rc)
					goto out;
			}
		}
	}
	rc = FMT_OTLP_FALLBACK;
out:
	d->err = NULL;
	/* an error without its words (an allocation cap): protobuf-c's path words it */
	if (rc < 0 && err && !err->msg[0])
		rc = FMT_OTLP_FALLBACK;
	return rc;
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
				PROF_ASSERT(c_stack(d, (int32_t)s->stack_off, &off, &n));
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
 * request that parses but does not convert (replay); otherwise
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
	parsed = p_request(d, data, (const uint8_t *)data + n) &&
		 d->alloc <= 24 * n + (1u << 20); /* otlp.c: fmt_pb_check's cap */
	ok = parsed && convert(d, n, out);
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
			rc = replay(d, n, err);
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
