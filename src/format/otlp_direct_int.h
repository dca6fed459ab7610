/* SPDX-License-Identifier: Apache-2.0 */
/*
 * otlp_direct_int.h - what the two halves of the direct OTLP decoder
 * share and nothing else includes: otlp_direct.c (the wire parse into
 * flat arrays, and the entry points) and otlp_direct_convert.c (those
 * arrays to model profiles, step for step as otlp.c).
 */
#ifndef PROFD_FORMAT_OTLP_DIRECT_INT_H
#define PROFD_FORMAT_OTLP_DIRECT_INT_H

#include "base/buf.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "format/otlp_keys.h"
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
	 * gets its message when set (the replay pass, see od_replay()).
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

bool od_parse_request(struct dd *d, const uint8_t *p, const uint8_t *end);

bool od_c_stack(struct dd *d, int32_t si, uint32_t *off, uint32_t *n);

bool od_convert(struct dd *d, size_t n, struct fmt_otlp_batch *out);

/*
 * After od_convert() failed on a request that parsed: convert it again as
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
int od_replay(struct dd *d, size_t n, struct prof_err *err);

#endif
