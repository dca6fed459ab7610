// SPDX-License-Identifier: Apache-2.0
/*
 * pprof.c - pprof profile.proto decoder and encoder (docs/formats.md "pprof profile.proto",
 * 2.2; google/pprof proto/profile.proto and profile/encode.go semantics).
 *
 * Decoding: gzip is sniffed by its magic (pprof's own rule: "always sniff,
 * accept both") and inflated under a cap; the bytes are checked by
 * fmt_pb_check (exact byte offset and field path of the first malformed
 * byte, nesting and allocation bounds), unpacked by protobuf-c from our
 * src/format/proto/profile.proto, then translated into the model.
 * The usual shapes (every field known, with its declared wire type) skip
 * both: pw_unpack checks them in one pass and fills protobuf-c's structs
 * from one arena, pointing into the input for strings, so the translation
 * below reads the same structs either way (fmt_pprof_decode_pbc keeps the
 * protobuf-c path for the differential test). Translation:
 * pprof ids (any non-zero uint64, addresses included) become dense model
 * indexes through an id map that is the identity when ids are 1..n, as Go
 * writes them. Every id and string index is checked; a reference to
 * nothing is -PROF_ECORRUPT naming the object, the field and the value.
 *
 * Edge cases (docs/formats.md, "pprof (profile.proto)"): a missing string table reads as
 * [""]; a non-empty string_table[0], id 0, a duplicate id and a sample or
 * line that refers to a location or function that does not exist are
 * errors (pprof refuses them too); a location whose mapping_id names no
 * mapping loses the mapping, as pprof reads it, and the profile gets a
 * comment saying so. Input that is several serialized Profile messages
 * back to back (cat a.pb b.pb, a multi-member gzip) is by protobuf's rules
 * one message whose repeated fields run together, which never makes a
 * valid profile; when the whole does not decode, it is cut where the
 * top-level field numbers fall back (encoders write fields in number
 * order), each part is decoded on its own and the parts are merged
 * (model/merge.h), with a comment saying so.
 *
 * Encoding: model index i becomes pprof id i (dense), model string ids are
 * the string table indexes (both tables start with the zero entry).
 */
#include "base/compat.h"
#include "base/compress.h"
#include "base/mem.h"
#include "format/pbcheck.h"
#include "format/pbwire.h"
#include "format/pprof.h"
#include "model/merge.h"

#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

/* ---- id -> model index map ---------------------------------------------- */

/*
 * Identity when the ids are exactly 1..n in order (Go, most writers);
 * otherwise an open-addressing table. Lookups of unknown ids return 0.
 */
struct idmap {
	bool dense;
	size_t n;
	uint64_t *keys;
	uint32_t *vals;
	uint32_t mask;
	size_t first_zero; /* index of the first object with id 0, SIZE_MAX = none */
};

/* What model_profile_skip counts for pprof: id-0 objects and lines whose function is missing. */
#define PP_SKIPPED "dictionary entries"

static void idmap_release(struct idmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static uint32_t idmap_slot(uint64_t id, uint32_t mask)
{
	id ^= id >> 33;
	id *= 0xff51afd7ed558ccdULL;
	id ^= id >> 33;
	return (uint32_t)id & mask;
}

/*
 * Builds the map for @n objects whose ids are read by @get_id. @what names
 * the table in errors: a duplicate id is -PROF_ECORRUPT. An object with
 * the reserved id 0 is left out of the map (no reference can name it: 0
 * means "none") and counted in @out's skip record.
 */
static int idmap_build(struct idmap *m, void *const *objs, size_t n,
		       uint64_t (*get_id)(const void *), const char *what,
		       struct model_profile *out, struct prof_err *err)
{
	size_t cap = 16;

	memset(m, 0, sizeof(*m));
	m->n = n;
	m->dense = true;
	m->first_zero = SIZE_MAX;
	for (size_t i = 0; i < n; i++) {
		uint64_t id = get_id(objs[i]);

		if (id == 0 && m->first_zero == SIZE_MAX)
			m->first_zero = i;
		if (id == 0)
			model_profile_skip(out, 1, PP_SKIPPED,
					   "pprof: %s[%zu] has the reserved id 0, which every "
					   "reference reads as none",
					   what, i);
		if (id != i + 1)
			m->dense = false;
	}
	if (m->dense)
		return 0;
	while (cap < n * 2)
		cap *= 2;
	m->keys = xcalloc(cap, sizeof(*m->keys));
	m->vals = xcalloc(cap, sizeof(*m->vals));
	m->mask = (uint32_t)(cap - 1);
	for (size_t i = 0; i < n; i++) {
		uint64_t id = get_id(objs[i]);
		uint32_t h = idmap_slot(id, m->mask);

		if (!id)
			continue;
		while (m->keys[h]) {
			if (m->keys[h] == id)
				return prof_err_set(err, -PROF_ECORRUPT, -1,
						    "pprof: %s[%zu]: duplicate id %" PRIu64
						    " (also %s[%u])",
						    what, i, id, what, m->vals[h] - 1);
			h = (h + 1) & m->mask;
		}
		m->keys[h] = id;
		m->vals[h] = (uint32_t)(i + 1);
	}
	return 0;
}

static uint32_t idmap_get(const struct idmap *m, uint64_t id)
{
	if (m->dense)
		return id >= 1 && id <= m->n ? (uint32_t)id : 0;
	if (!id)
		return 0;
	for (uint32_t h = idmap_slot(id, m->mask); m->keys[h]; h = (h + 1) & m->mask)
		if (m->keys[h] == id)
			return m->vals[h];
	return 0;
}

static uint64_t mapping_id(const void *o)
{
	return ((const PbMapping *)o)->id;
}
static uint64_t function_id(const void *o)
{
	return ((const PbFunction *)o)->id;
}
static uint64_t location_id(const void *o)
{
	return ((const PbLocation *)o)->id;
}

/* ---- decode --------------------------------------------------------------- */

struct pp_ctx {
	const PbProfile *pb;
	struct model_profile *out;
	struct prof_err *err;
	uint32_t *sid; /* string index -> model string id */
	size_t nstr;
	struct idmap maps, funcs, locs;
	size_t lost_mappings; /* locations whose mapping_id named nothing */
	uint64_t first_lost;  /* the first such mapping_id */
};

/* Resolves string index @idx of field @field of @obj[@i]. */
static int pp_str(struct pp_ctx *c, int64_t idx, uint32_t *out, const char *obj, size_t i,
		  const char *field)
{
	if (idx == 0 && c->nstr == 0) {
		*out = 0;
		return 0;
	}
	if (idx < 0 || (uint64_t)idx >= c->nstr)
		return prof_err_set(c->err, -PROF_ECORRUPT, -1,
				    "pprof: %s[%zu].%s: string index %" PRId64
				    " out of range (%zu strings)",
				    obj, i, field, idx, c->nstr);
	*out = c->sid[idx];
	return 0;
}

#define PP_STR(idx, dst, obj, i, field)                                 \
	do {                                                            \
		int rc_ = pp_str(c, (idx), (dst), (obj), (i), (field)); \
		if (rc_)                                                \
			return rc_;                                     \
	} while (0)

static int pp_value_type(struct pp_ctx *c, const PbValueType *vt, struct model_value_type *out,
			 const char *obj, size_t i)
{
	out->type = out->unit = 0;
	if (!vt)
		return 0;
	PP_STR(vt->type, &out->type, obj, i, "type");
	PP_STR(vt->unit, &out->unit, obj, i, "unit");
	return 0;
}

static int pp_header(struct pp_ctx *c)
{
	const PbProfile *pb = c->pb;
	struct model_profile *p = c->out;
	int rc;

	for (size_t i = 0; i < pb->n_sample_type; i++) {
		struct model_value_type vt;

		rc = pp_value_type(c, pb->sample_type[i], &vt, "sample_type", i);

		if (rc)
			return rc;
		VEC_PUSH(&p->sample_types, vt);
	}
	rc = pp_value_type(c, pb->period_type, &p->period_type, "period_type", 0);
	if (rc)
		return rc;
	p->period = pb->period;
	p->time_ns = pb->time_nanos;
	p->duration_ns = pb->duration_nanos;
	PP_STR(pb->default_sample_type, &p->default_sample_type, "profile", 0,
	       "default_sample_type");
	PP_STR(pb->drop_frames, &p->drop_frames, "profile", 0, "drop_frames");
	PP_STR(pb->keep_frames, &p->keep_frames, "profile", 0, "keep_frames");
	for (size_t i = 0; i < pb->n_comment; i++) {
		uint32_t id;

		PP_STR(pb->comment[i], &id, "comment", i, "string");
		VEC_PUSH(&p->comments, id);
	}
	return 0;
}

static int pp_mappings(struct pp_ctx *c)
{
	const PbProfile *pb = c->pb;

	for (size_t i = 0; i < pb->n_mapping; i++) {
		const PbMapping *m = pb->mapping[i];
		struct model_mapping mm = { 0 };

		mm.memory_start = m->memory_start;
		mm.memory_limit = m->memory_limit;
		mm.file_offset = m->file_offset;
		PP_STR(m->filename, &mm.filename, "mapping", i, "filename");
		PP_STR(m->build_id, &mm.build_id, "mapping", i, "build_id");
		mm.has_functions = m->has_functions;
		mm.has_filenames = m->has_filenames;
		mm.has_line_numbers = m->has_line_numbers;
		mm.has_inline_frames = m->has_inline_frames;
		mm.build_id = model_build_id_checked(c->out, mm.build_id);
		model_mapping_add(c->out, &mm);
	}
	return 0;
}

static int pp_functions(struct pp_ctx *c)
{
	const PbProfile *pb = c->pb;

	for (size_t i = 0; i < pb->n_function; i++) {
		const PbFunction *f = pb->function[i];
		struct model_function mf = { 0 };

		PP_STR(f->name, &mf.name, "function", i, "name");
		PP_STR(f->system_name, &mf.system_name, "function", i, "system_name");
		PP_STR(f->filename, &mf.filename, "function", i, "filename");
		mf.start_line = f->start_line;
		model_function_add(c->out, &mf);
	}
	return 0;
}

static int pp_locations(struct pp_ctx *c)
{
	const PbProfile *pb = c->pb;
	VEC(struct model_line) lines = { 0 };
	int rc = 0;

	for (size_t i = 0; i < pb->n_location && !rc; i++) {
		const PbLocation *l = pb->location[i];
		uint32_t mapping = 0, idx;

		/* pprof reads a mapping_id that names nothing as no mapping: so do we. */
		if (l->mapping_id && !(mapping = idmap_get(&c->maps, l->mapping_id)))
			if (!c->lost_mappings++)
				c->first_lost = l->mapping_id;
		lines.n = 0;
		for (size_t k = 0; k < l->n_line; k++) {
			const PbLine *ln = l->line[k];
			struct model_line ml = { 0, ln->line, ln->column };

			/* The frame is still there, only unnamed: keep it, say so. */
			if (ln->function_id &&
			    !(ml.function = idmap_get(&c->funcs, ln->function_id)))
				model_profile_skip(
					c->out, 1, PP_SKIPPED,
					"pprof: location[%zu] (id %" PRIu64
					") line %zu: function_id %" PRIu64
					" not found (%zu functions); the line has no function",
					i, l->id, k, ln->function_id, pb->n_function);
			VEC_PUSH(&lines, ml);
		}
		idx = model_location_add(c->out, mapping, l->address, lines.v, (uint32_t)lines.n);
		c->out->locations.v[idx].is_folded = l->is_folded;
	}
	VEC_FREE(&lines);
	return rc;
}

/* Resolves label @k of sample @i; errors name "sample[i].label[k].field". */
static int pp_label(struct pp_ctx *c, const PbLabel *l, size_t i, size_t k, struct model_label *ml)
{
	static const char *const names[] = { "key", "str", "num_unit" };
	const int64_t idx[] = { l->key, l->str, l->num_unit };
	uint32_t *dst[] = { &ml->key, &ml->str, &ml->num_unit };

	for (int f = 0; f < 3; f++) {
		if (idx[f] == 0 && c->nstr == 0) {
			*dst[f] = 0;
			continue;
		}
		if (idx[f] < 0 || (uint64_t)idx[f] >= c->nstr)
			return prof_err_set(
				c->err, -PROF_ECORRUPT, -1,
				"pprof: sample[%zu].label[%zu].%s: string index %" PRId64
				" out of range (%zu strings)",
				i, k, names[f], idx[f], c->nstr);
		*dst[f] = c->sid[idx[f]];
	}
	ml->num = l->num;
	return 0;
}

static int pp_samples(struct pp_ctx *c)
{
	const PbProfile *pb = c->pb;
	struct model_profile *p = c->out;
	VEC(uint32_t) stack = { 0 };
	VEC(struct model_label) labels = { 0 };
	int rc = 0;

	for (size_t i = 0; i < pb->n_sample && !rc; i++) {
		const PbSample *s = pb->sample[i];
		uint32_t off;

		if (s->n_value != pb->n_sample_type) {
			rc = prof_err_set(c->err, -PROF_ECORRUPT, -1,
					  "pprof: sample[%zu]: %zu values for %zu sample types", i,
					  s->n_value, pb->n_sample_type);
			break;
		}
		stack.n = 0;
		VEC_RESERVE(&stack, s->n_location_id);
		for (size_t k = 0; k < s->n_location_id; k++) {
			uint32_t loc = idmap_get(&c->locs, s->location_id[k]);

			if (!loc && c->locs.first_zero != SIZE_MAX) {
				rc = prof_err_set(
					c->err, -PROF_ECORRUPT, -1,
					"pprof: sample[%zu]: location_id[%zu] = %" PRIu64
					" not found (%zu locations; location[%zu] has the "
					"reserved id 0)",
					i, k, s->location_id[k], pb->n_location,
					c->locs.first_zero);
				break;
			}
			if (!loc) {
				rc = prof_err_set(c->err, -PROF_ECORRUPT, -1,
						  "pprof: sample[%zu]: location_id[%zu] = %" PRIu64
						  " not found (%zu locations)",
						  i, k, s->location_id[k], pb->n_location);
				break;
			}
			stack.v[stack.n++] = loc;
		}
		labels.n = 0;
		for (size_t k = 0; k < s->n_label && !rc; k++) {
			const PbLabel *l = s->label[k];
			struct model_label ml = { 0 };

			rc = pp_label(c, l, i, k, &ml);
			if (rc)
				break;
			VEC_PUSH(&labels, ml);
		}
		if (rc)
			break;
		if (stack.n > UINT32_MAX || p->stack_locs.n + stack.n > UINT32_MAX ||
		    p->labels.n + labels.n > UINT32_MAX) {
			rc = prof_err_set(c->err, -PROF_ETOOBIG, -1,
					  "pprof: sample[%zu]: more than 2^32 stack entries", i);
			break;
		}
		off = model_stack_add(p, stack.v, (uint32_t)stack.n);
		model_sample_add(p, off, (uint32_t)stack.n, s->value, labels.v, (uint32_t)labels.n,
				 0, 0);
	}
	VEC_FREE(&stack);
	VEC_FREE(&labels);
	return rc;
}

static int pp_to_model(const PbProfile *pb, struct model_profile *out, struct prof_err *err)
{
	struct pp_ctx c = { 0 };
	int rc;

	c.pb = pb;
	c.out = out;
	c.err = err;
	c.nstr = pb->n_string_table;
	if (c.nstr && pb->string_table[0].len != 0) {
		char shown[41];
		size_t k = 0;

		/* The value, printable bytes only, so the message stays one line. */
		for (size_t i = 0; i < pb->string_table[0].len && k + 1 < sizeof(shown); i++) {
			unsigned char ch = pb->string_table[0].data[i];

			shown[k++] = ch >= 0x20 && ch < 0x7f ? (char)ch : '?';
		}
		shown[k] = '\0';
		return prof_err_set(
			err, -PROF_ECORRUPT, -1,
			"pprof: string_table[0] is \"%s\"%s (%zu bytes); it must be the "
			"empty string, which every unset string field refers to",
			shown, k < pb->string_table[0].len ? "..." : "", pb->string_table[0].len);
	}
	if (c.nstr > UINT32_MAX || pb->n_location >= UINT32_MAX || pb->n_function >= UINT32_MAX ||
	    pb->n_mapping >= UINT32_MAX)
		return prof_err_set(err, -PROF_ETOOBIG, -1, "pprof: tables exceed 2^32 entries");
	c.sid = xmalloc((c.nstr ? c.nstr : 1) * sizeof(*c.sid));
	for (size_t i = 0; i < c.nstr; i++)
		c.sid[i] = model_intern_n(out, (const char *)pb->string_table[i].data,
					  pb->string_table[i].len);
	if ((rc = idmap_build(&c.maps, (void *const *)pb->mapping, pb->n_mapping, mapping_id,
			      "mapping", out, err)) ||
	    (rc = idmap_build(&c.funcs, (void *const *)pb->function, pb->n_function, function_id,
			      "function", out, err)) ||
	    (rc = idmap_build(&c.locs, (void *const *)pb->location, pb->n_location, location_id,
			      "location", out, err)))
		goto out;
	if ((rc = pp_header(&c)) || (rc = pp_mappings(&c)) || (rc = pp_functions(&c)) ||
	    (rc = pp_locations(&c)) || (rc = pp_samples(&c)))
		goto out;
	if (c.lost_mappings) {
		char note[160];

		snprintf(note, sizeof(note),
			 "profd: %zu locations referred to mappings that do not exist (first: "
			 "mapping_id %" PRIu64 "); they have no mapping",
			 c.lost_mappings, c.first_lost);
		VEC_PUSH(&out->comments, model_intern(out, note));
	}
	rc = model_profile_validate(out, err);
out:
	idmap_release(&c.maps);
	idmap_release(&c.funcs);
	idmap_release(&c.locs);
	free(c.sid);
	return rc;
}

/* ---- direct unpack ---------------------------------------------------------- */

/*
 * The pprof schema as the direct unpacker reads it: per message kind, per
 * field number, the field's type, whether it repeats, the kind of a
 * message field and where it lives in the protobuf-c struct (its value or
 * array, and its count). The structs are protobuf-c's, so pp_to_model
 * reads what this fills exactly as it reads what protobuf-c unpacks.
 */
enum pw_type { PW_NONE, PW_U64, PW_I64, PW_BOOL, PW_BYTES, PW_MSG };
enum pw_kind {
	PW_PROFILE,
	PW_VT,
	PW_SAMPLE,
	PW_LABEL,
	PW_MAPPING,
	PW_LOCATION,
	PW_LINE,
	PW_FUNCTION,
	PW_NKINDS
};

struct pw_field {
	uint8_t type, rep, kind;
	uint16_t off, noff; /* offsetof the value / array; of its n_ count */
};

#define PW_MAX_NUM	    15

#define PW_S(k, t, s, f)    [k] = { t, 0, 0, offsetof(s, f), 0 }
#define PW_R(k, t, s, f)    [k] = { t, 1, 0, offsetof(s, f), offsetof(s, n_##f) }
#define PW_M(k, sub, s, f)  [k] = { PW_MSG, 0, sub, offsetof(s, f), 0 }
#define PW_RM(k, sub, s, f) [k] = { PW_MSG, 1, sub, offsetof(s, f), offsetof(s, n_##f) }

static const struct pw_field pw_schema[PW_NKINDS][PW_MAX_NUM + 1] = {
	[PW_PROFILE] = {
		PW_RM(1, PW_VT, PbProfile, sample_type),
		PW_RM(2, PW_SAMPLE, PbProfile, sample),
		PW_RM(3, PW_MAPPING, PbProfile, mapping),
		PW_RM(4, PW_LOCATION, PbProfile, location),
		PW_RM(5, PW_FUNCTION, PbProfile, function),
		PW_R(6, PW_BYTES, PbProfile, string_table),
		PW_S(7, PW_I64, PbProfile, drop_frames),
		PW_S(8, PW_I64, PbProfile, keep_frames),
		PW_S(9, PW_I64, PbProfile, time_nanos),
		PW_S(10, PW_I64, PbProfile, duration_nanos),
		PW_M(11, PW_VT, PbProfile, period_type),
		PW_S(12, PW_I64, PbProfile, period),
		PW_R(13, PW_I64, PbProfile, comment),
		PW_S(14, PW_I64, PbProfile, default_sample_type),
		PW_S(15, PW_I64, PbProfile, doc_url),
	},
	[PW_VT] = {
		PW_S(1, PW_I64, PbValueType, type),
		PW_S(2, PW_I64, PbValueType, unit),
	},
	[PW_SAMPLE] = {
		PW_R(1, PW_U64, PbSample, location_id),
		PW_R(2, PW_I64, PbSample, value),
		PW_RM(3, PW_LABEL, PbSample, label),
	},
	[PW_LABEL] = {
		PW_S(1, PW_I64, PbLabel, key),
		PW_S(2, PW_I64, PbLabel, str),
		PW_S(3, PW_I64, PbLabel, num),
		PW_S(4, PW_I64, PbLabel, num_unit),
	},
	[PW_MAPPING] = {
		PW_S(1, PW_U64, PbMapping, id),
		PW_S(2, PW_U64, PbMapping, memory_start),
		PW_S(3, PW_U64, PbMapping, memory_limit),
		PW_S(4, PW_U64, PbMapping, file_offset),
		PW_S(5, PW_I64, PbMapping, filename),
		PW_S(6, PW_I64, PbMapping, build_id),
		PW_S(7, PW_BOOL, PbMapping, has_functions),
		PW_S(8, PW_BOOL, PbMapping, has_filenames),
		PW_S(9, PW_BOOL, PbMapping, has_line_numbers),
		PW_S(10, PW_BOOL, PbMapping, has_inline_frames),
	},
	[PW_LOCATION] = {
		PW_S(1, PW_U64, PbLocation, id),
		PW_S(2, PW_U64, PbLocation, mapping_id),
		PW_S(3, PW_U64, PbLocation, address),
		PW_RM(4, PW_LINE, PbLocation, line),
		PW_S(5, PW_BOOL, PbLocation, is_folded),
	},
	[PW_LINE] = {
		PW_S(1, PW_U64, PbLine, function_id),
		PW_S(2, PW_I64, PbLine, line),
		PW_S(3, PW_I64, PbLine, column),
	},
	[PW_FUNCTION] = {
		PW_S(1, PW_U64, PbFunction, id),
		PW_S(2, PW_I64, PbFunction, name),
		PW_S(3, PW_I64, PbFunction, system_name),
		PW_S(4, PW_I64, PbFunction, filename),
		PW_S(5, PW_I64, PbFunction, start_line),
	},
};

static const ProtobufCMessageDescriptor *const pw_desc[PW_NKINDS] = {
	[PW_PROFILE] = &perftools__profiles__profile__descriptor,
	[PW_VT] = &perftools__profiles__value_type__descriptor,
	[PW_SAMPLE] = &perftools__profiles__sample__descriptor,
	[PW_LABEL] = &perftools__profiles__label__descriptor,
	[PW_MAPPING] = &perftools__profiles__mapping__descriptor,
	[PW_LOCATION] = &perftools__profiles__location__descriptor,
	[PW_LINE] = &perftools__profiles__line__descriptor,
	[PW_FUNCTION] = &perftools__profiles__function__descriptor,
};

/* The highest repeated field number of each kind (0: none repeats). */
static const uint8_t pw_last_rep[PW_NKINDS] = {
	[PW_PROFILE] = 13,
	[PW_SAMPLE] = 3,
	[PW_LOCATION] = 4,
};

/* What one pass over the bytes found: pbcheck's estimate and our own need. */
struct pw_sizes {
	size_t alloc; /* fmt_pb_check's estimate of protobuf-c's allocation */
	size_t need;  /* bytes the fill pass takes from its arena */
};

/*
 * Checks message @kind in [p, e): every field known, with its declared
 * wire type (or packed, for repeated scalars), lengths in bounds, a
 * singular message field at most once, bools one byte. Those are shapes
 * fmt_pb_check accepts and protobuf-c unpacks to exactly what the fill
 * pass builds; anything else returns false and the caller takes the
 * protobuf-c path (which words the error). Adds to @sz as fmt_pb_check
 * (pbcheck.c: sizeof_message + 16 per message, 8 per 64-bit scalar, 4
 * per bool, length + 24 per bytes field) and as the fill pass needs.
 */
static bool pw_check(enum pw_kind kind, const uint8_t *p, const uint8_t *e, struct pw_sizes *sz)
{
	const struct pw_field *sc = pw_schema[kind];
	bool seen_msg[PW_MAX_NUM + 1] = { false };
	struct pbwire_field f;

	while (p < e) {
		const struct pw_field *d;

		if (!pbwire_field_next(&p, e, &f) || f.num > PW_MAX_NUM)
			return false;
		d = &sc[f.num];
		switch (d->type) {
		case PW_U64:
		case PW_I64:
		case PW_BOOL:
			if (f.wt == PBWIRE_VARINT) {
				if (d->type == PW_BOOL && f.v > 1)
					return false;
				sz->alloc += d->type == PW_BOOL ? 4 : 8;
				sz->need += d->rep ? 8 : 0;
				break;
			}
			if (f.wt != PBWIRE_LEN || !d->rep)
				return false;
			for (const uint8_t *q = f.body; q < f.bend;) {
				uint64_t v;

				if (!pbwire_varint(&q, f.bend, 10, &v))
					return false;
				sz->alloc += 8;
				sz->need += 8;
			}
			break;
		case PW_BYTES:
			if (f.wt != PBWIRE_LEN)
				return false;
			sz->alloc += (size_t)(f.bend - f.body) + 24;
			sz->need += sizeof(ProtobufCBinaryData);
			break;
		case PW_MSG:
			if (f.wt != PBWIRE_LEN || (!d->rep && seen_msg[f.num]))
				return false;
			seen_msg[f.num] = true;
			sz->alloc += pw_desc[d->kind]->sizeof_message + 16;
			sz->need +=
				pw_desc[d->kind]->sizeof_message + (d->rep ? sizeof(void *) : 0);
			if (!pw_check(d->kind, f.body, f.bend, sz))
				return false;
			break;
		default:
			return false; /* unknown field: protobuf-c keeps it, we do not */
		}
	}
	return true;
}

struct pw_arena {
	uint8_t *p, *e;
};

static void *pw_take(struct pw_arena *a, size_t n)
{
	void *r = a->p;

	/* pw_check counted every byte the fill takes: running out is a bug */
	PROF_ASSERT(n <= (size_t)(a->e - a->p));
	a->p += n;
	return r;
}

/*
 * Fills message @kind at @dst from [p, e), bytes pw_check accepted:
 * repeated fields are counted first so each array is taken once, then
 * every field is stored as protobuf-c stores it (last value of a
 * singular scalar wins; packed and unpacked runs append in order; bytes
 * point into the input).
 */
static void pw_fill(enum pw_kind kind, const uint8_t *p, const uint8_t *e, void *dst,
		    struct pw_arena *a)
{
	const struct pw_field *sc = pw_schema[kind];
	size_t count[PW_MAX_NUM + 1];
	uint8_t *base = dst;
	struct pbwire_field f = { 0 };

	memset(count, 0, (pw_last_rep[kind] + 1u) * sizeof(count[0]));
	memset(dst, 0, pw_desc[kind]->sizeof_message);
	((ProtobufCMessage *)dst)->descriptor = pw_desc[kind];
	for (const uint8_t *q = pw_last_rep[kind] ? p : e; q < e;) {
		(void)pbwire_field_next(&q, e, &f);
		if (!sc[f.num].rep)
			continue;
		if (f.wt == PBWIRE_LEN && sc[f.num].type != PW_MSG && sc[f.num].type != PW_BYTES)
			for (const uint8_t *r = f.body; r < f.bend; r++)
				count[f.num] += !(*r & 0x80);
		else
			count[f.num]++;
	}
	for (uint32_t k = 1; k <= pw_last_rep[kind]; k++) {
		const struct pw_field *d = &sc[k];
		size_t w;

		if (!count[k])
			continue;
		w = d->type == PW_MSG	  ? sizeof(void *)
		    : d->type == PW_BYTES ? sizeof(ProtobufCBinaryData)
					  : sizeof(uint64_t);
		*(void **)(base + d->off) = pw_take(a, count[k] * w);
	}
	while (p < e) {
		const struct pw_field *d;
		size_t *n;
		uint8_t *arr;

		(void)pbwire_field_next(&p, e, &f);
		d = &sc[f.num];
		n = (size_t *)(base + d->noff);
		arr = d->rep ? *(uint8_t **)(base + d->off) : NULL;
		switch (d->type) {
		case PW_U64:
		case PW_I64:
			if (!d->rep) {
				*(uint64_t *)(base + d->off) = f.v;
			} else if (f.wt == PBWIRE_VARINT) {
				((uint64_t *)arr)[(*n)++] = f.v;
			} else {
				for (const uint8_t *q = f.body; q < f.bend;) {
					uint64_t v = 0;

					(void)pbwire_varint(&q, f.bend, 10, &v);
					((uint64_t *)arr)[(*n)++] = v;
				}
			}
			break;
		case PW_BOOL:
			*(protobuf_c_boolean *)(base + d->off) = f.v != 0;
			break;
		case PW_BYTES: {
			ProtobufCBinaryData *bd = &((ProtobufCBinaryData *)arr)[(*n)++];

			bd->len = (size_t)(f.bend - f.body);
			bd->data = (uint8_t *)f.body;
			break;
		}
		case PW_MSG: {
			void *sub = pw_take(a, pw_desc[d->kind]->sizeof_message);

			pw_fill(d->kind, f.body, f.bend, sub, a);
			if (d->rep)
				((void **)arr)[(*n)++] = sub;
			else
				*(void **)(base + d->off) = sub;
			break;
		}
		default:
			break;
		}
	}
}

/*
 * The Profile message in @n bytes at @data as protobuf-c would unpack it,
 * without its per-field allocations: one arena, returned in *@arena (free
 * it after the profile; the profile's bytes fields point into @data).
 * NULL when the bytes are not in the shapes pw_check reads, or when
 * fmt_pb_check would refuse them as over @max_alloc: the caller then
 * takes the protobuf-c path.
 */
static PbProfile *pw_unpack(const void *data, size_t n, size_t max_alloc, void **arena)
{
	struct pw_sizes sz = { sizeof(PbProfile), sizeof(PbProfile) };
	struct pw_arena a;
	PbProfile *pb;

	*arena = NULL;
	if (!pw_check(PW_PROFILE, data, (const uint8_t *)data + n, &sz) ||
	    (max_alloc && sz.alloc > max_alloc))
		return NULL;
	a.p = *arena = xmalloc(sz.need);
	a.e = a.p + sz.need;
	pb = pw_take(&a, sizeof(*pb));
	pw_fill(PW_PROFILE, data, (const uint8_t *)data + n, pb, &a);
	return pb;
}

bool fmt_pprof_direct_shape(const void *data, size_t n)
{
	struct pw_sizes sz = { sizeof(PbProfile), sizeof(PbProfile) };

	return pw_check(PW_PROFILE, data, (const uint8_t *)data + n, &sz) &&
	       sz.alloc <= 24 * n + (1u << 20);
}

/* Set by fmt_pprof_decode_pbc on its thread: no direct unpack. */
static __thread bool pp_pbc_only;

/*
 * Decodes one Profile message; *structural is set when the bytes are
 * well-formed protobuf (so a failure is about what they say).
 */
static int pp_decode_one(const void *data, size_t n, const char *what, struct model_profile *out,
			 struct prof_err *err, bool *structural)
{
	PbProfile *pb;
	void *arena;
	int rc;

	*structural = false;
	/* The usual shapes without protobuf-c's allocations (pw_unpack). */
	pb = pp_pbc_only ? NULL : pw_unpack(data, n, 24 * n + (1u << 20), &arena);
	if (pb) {
		*structural = true;
		rc = pp_to_model(pb, out, err);
		free(arena);
		return rc;
	}
	/* Realistic profiles unpack to under ~16x their size; see pbcheck.h. */
	rc = fmt_pb_check(&perftools__profiles__profile__descriptor, data, n, what,
			  24 * n + (1u << 20), NULL, err);
	if (rc)
		return rc;
	*structural = true;
	pb = perftools__profiles__profile__unpack(NULL, n, data);
	if (!pb)
		return prof_err_set(err, -PROF_ECORRUPT, -1,
				    "pprof: protobuf-c could not unpack the profile (%zu bytes)",
				    n);
	rc = pp_to_model(pb, out, err);
	perftools__profiles__profile__free_unpacked(pb, NULL);
	return rc;
}

/*
 * One varint at *p (the bytes passed fmt_pb_check: well-formed); a
 * malformed one, which cannot reach here, would end the walk at @e.
 */
static uint64_t pp_varint(const uint8_t **p, const uint8_t *e)
{
	uint64_t v = 0;

	if (!pbwire_varint(p, e, 10, &v))
		*p = e;
	return v;
}

/*
 * Where concatenated Profile messages start (0 first). Field order is no
 * guide inside a message (the Go runtime interleaves locations, functions
 * and samples), but every Profile has a string table starting with "",
 * written after its dictionary and samples (by the Go runtime last, by
 * google/pprof before the scalars 7..15). So: each "" string that is not
 * the first string starts the string table of a new message, and that
 * message starts, after the previous one's last string, at the first field
 * that cannot continue the previous message: a dictionary or sample field
 * (1..6), a field number lower than the one before it, or a singular field
 * the previous message already has (the runtime writes time_nanos first).
 * Returns the number of parts (1 = not a concatenation, also when the
 * first string is not ""); @starts gets their offsets, malloc'd.
 */
struct pp_field {
	size_t off;
	uint32_t num;
	bool empty_str; /* field 6 with a zero-length payload */
};

static size_t pp_parts(const void *data, size_t n, size_t **starts)
{
	const uint8_t *b = data, *p = b, *e = b + n;
	VEC(struct pp_field) f = { 0 };
	VEC(size_t) v = { 0 };
	size_t first_str = SIZE_MAX, part = 0;

	while (p < e) {
		struct pp_field x = { (size_t)(p - b), 0, false };
		uint64_t tag = pp_varint(&p, e), len;

		x.num = (uint32_t)PROF_MIN(tag >> 3, (uint64_t)UINT32_MAX);
		switch (tag & 7) {
		case 0:
			pp_varint(&p, e);
			break;
		case 1:
			p += PROF_MIN(8, (size_t)(e - p));
			break;
		case 2:
			len = pp_varint(&p, e);
			x.empty_str = x.num == 6 && len == 0;
			p += PROF_MIN(len, (uint64_t)(e - p));
			break;
		case 5:
			p += PROF_MIN(4, (size_t)(e - p));
			break;
		default:
			p = e; /* not reached: fmt_pb_check refuses other wire types */
			break;
		}
		if (x.num == 6 && first_str == SIZE_MAX)
			first_str = f.n;
		VEC_PUSH(&f, x);
	}
	VEC_PUSH(&v, 0);
	if (first_str == SIZE_MAX || !f.v[first_str].empty_str)
		goto out;
	for (size_t i = first_str + 1; i < f.n; i++) {
		uint64_t seen = 0;
		uint32_t prev = 6;
		size_t last = i, j;

		if (!f.v[i].empty_str)
			continue;
		/* The previous message's last string, and the fields it has. */
		while (last > part && f.v[last - 1].num != 6)
			last--;
		for (j = part; j < last; j++)
			seen |= f.v[j].num < 64 ? 1ull << f.v[j].num : 0;
		for (j = last; j < i; j++) {
			uint32_t k = f.v[j].num;
			bool has = k < 64 && (seen >> k & 1);

			if (k <= 6 || k < prev || (k == prev && k != 13) || (has && k != 13))
				break;
			prev = k;
			seen |= k < 64 ? 1ull << k : 0;
		}
		part = j;
		VEC_PUSH(&v, f.v[j].off);
	}
out:
	VEC_FREE(&f);
	*starts = v.v;
	return v.n;
}

/*
 * The input did not decode as one Profile: decode each concatenated part
 * on its own and merge them into @out (fresh). Returns 1 when the input
 * is not a concatenation (the caller reports its first error).
 */
static int pp_decode_concat(const void *data, size_t n, const char *what, struct model_profile *out,
			    struct prof_err *err)
{
	size_t *starts, k = pp_parts(data, n, &starts);
	struct model_profile *parts;
	const struct model_profile **in;
	int rc = 0;

	if (k < 2) {
		free(starts);
		return 1;
	}
	if (k > FMT_PPROF_MAX_CONCAT) {
		free(starts);
		return prof_err_set(
			err, -PROF_ETOOBIG, -1,
			"pprof: the input is %zu Profile messages back to back; more than "
			"%d are not merged",
			k, FMT_PPROF_MAX_CONCAT);
	}
	parts = xcalloc(k, sizeof(*parts));
	in = xcalloc(k, sizeof(*in));
	for (size_t i = 0; i < k && !rc; i++) {
		size_t end = i + 1 < k ? starts[i + 1] : n;
		struct prof_err e;
		bool structural;

		prof_err_init(&e);
		model_profile_init(&parts[i]);
		in[i] = &parts[i];
		rc = pp_decode_one((const uint8_t *)data + starts[i], end - starts[i], what,
				   &parts[i], &e, &structural);
		if (rc)
			prof_err_set(err, rc, e.offset < 0 ? -1 : (int64_t)starts[i] + e.offset,
				     "pprof: the input is %zu Profile messages back to back; "
				     "message %zu (bytes %zu-%zu): %s",
				     k, i + 1, starts[i], end, e.msg);
	}
	if (!rc)
		rc = model_profile_merge(in, k, out, err);
	if (!rc) {
		char note[96];

		snprintf(note, sizeof(note),
			 "profd: %zu concatenated pprof Profile messages, merged", k);
		VEC_PUSH(&out->comments, model_intern(out, note));
	}
	for (size_t i = 0; i < k; i++)
		model_profile_release(&parts[i]);
	free(parts);
	free(in);
	free(starts);
	return rc;
}

int fmt_pprof_decode(const void *data, size_t n, size_t max_decoded, struct model_profile *out,
		     struct prof_err *err)
{
	struct buf raw = BUF_INIT;
	const char *what = "pprof";
	size_t max = max_decoded ? max_decoded : FMT_PPROF_DEFAULT_MAX;
	bool structural;
	int rc;

	if (gzip_is(data, n)) {
		rc = gzip_inflate(data, n, max, &raw, err);
		if (rc)
			goto out;
		data = raw.p;
		n = raw.len;
		what = "pprof (offsets in the gunzipped data)";
	} else if (n > max) {
		rc = prof_err_set(err, -PROF_ETOOBIG, -1,
				  "pprof: input of %zu bytes exceeds the limit of %zu bytes", n,
				  max);
		goto out;
	}
	if (n == 0) {
		rc = prof_err_set(err, -PROF_EFORMAT, 0, "pprof: empty input");
		goto out;
	}
	rc = pp_decode_one(data, n, what, out, err, &structural);
	if (rc == -PROF_ECORRUPT && structural) {
		struct model_profile merged;
		struct prof_err e2;
		int rc2;

		prof_err_init(&e2);
		model_profile_init(&merged);
		rc2 = pp_decode_concat(data, n, what, &merged, &e2);
		if (rc2 != 1) {
			model_profile_release(out);
			*out = merged;
			if (err)
				*err = e2;
			rc = rc2;
		} else {
			model_profile_release(&merged);
		}
	}
out:
	buf_release(&raw);
	return rc;
}

int fmt_pprof_decode_pbc(const void *data, size_t n, size_t max_decoded, struct model_profile *out,
			 struct prof_err *err)
{
	int rc;

	pp_pbc_only = true;
	rc = fmt_pprof_decode(data, n, max_decoded, out, err);
	pp_pbc_only = false;
	return rc;
}

/* ---- encode --------------------------------------------------------------- */

int fmt_pprof_encode(const struct model_profile *p, bool gzip, struct buf *out)
{
	PbProfile pb = PERFTOOLS__PROFILES__PROFILE__INIT;
	size_t nt = p->sample_types.n, nm = p->mappings.n - 1, nf = p->functions.n - 1;
	size_t nl = p->locations.n - 1, ns = p->samples.n, nstack = 0, nlab = 0;
	PbValueType *vt = xcalloc(nt + 1, sizeof(*vt)), **vtp = xcalloc(nt + 1, sizeof(*vtp));
	PbMapping *mp = xcalloc(nm + 1, sizeof(*mp)), **mpp = xcalloc(nm + 1, sizeof(*mpp));
	PbFunction *fn = xcalloc(nf + 1, sizeof(*fn)), **fnp = xcalloc(nf + 1, sizeof(*fnp));
	PbLocation *lc = xcalloc(nl + 1, sizeof(*lc)), **lcp = xcalloc(nl + 1, sizeof(*lcp));
	PbLine *ln = xcalloc(p->lines.n + 1, sizeof(*ln));
	PbLine **lnp = xcalloc(p->lines.n + 1, sizeof(*lnp));
	PbSample *sm = xcalloc(ns + 1, sizeof(*sm)), **smp = xcalloc(ns + 1, sizeof(*smp));
	ProtobufCBinaryData *st = xcalloc(p->strings.n + 1, sizeof(*st));
	int64_t *comments = xcalloc(p->comments.n + 1, sizeof(*comments));
	uint64_t *ids;
	PbLabel *lb, **lbp;
	PbValueType period = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	uint8_t *packed = NULL;
	size_t size, li = 0, ii = 0;
	int rc;

	for (size_t i = 0; i < ns; i++) {
		nstack += p->samples.v[i].nstack;
		nlab += p->samples.v[i].nlabels + p->attrs.n;
	}
	ids = xcalloc(nstack + 1, sizeof(*ids));
	lb = xcalloc(nlab + 1, sizeof(*lb));
	lbp = xcalloc(nlab + 1, sizeof(*lbp));

	for (size_t i = 0; i < nt; i++) {
		perftools__profiles__value_type__init(&vt[i]);
		vt[i].type = p->sample_types.v[i].type;
		vt[i].unit = p->sample_types.v[i].unit;
		vtp[i] = &vt[i];
	}
	for (size_t i = 0; i < nm; i++) {
		const struct model_mapping *m = &p->mappings.v[i + 1];

		perftools__profiles__mapping__init(&mp[i]);
		mp[i].id = i + 1;
		mp[i].memory_start = m->memory_start;
		mp[i].memory_limit = m->memory_limit;
		mp[i].file_offset = m->file_offset;
		mp[i].filename = m->filename;
		mp[i].build_id = m->build_id;
		mp[i].has_functions = m->has_functions;
		mp[i].has_filenames = m->has_filenames;
		mp[i].has_line_numbers = m->has_line_numbers;
		mp[i].has_inline_frames = m->has_inline_frames;
		mpp[i] = &mp[i];
	}
	for (size_t i = 0; i < nf; i++) {
		const struct model_function *f = &p->functions.v[i + 1];

		perftools__profiles__function__init(&fn[i]);
		fn[i].id = i + 1;
		fn[i].name = f->name;
		fn[i].system_name = f->system_name;
		fn[i].filename = f->filename;
		fn[i].start_line = f->start_line;
		fnp[i] = &fn[i];
	}
	for (size_t i = 0; i < p->lines.n; i++) {
		perftools__profiles__line__init(&ln[i]);
		ln[i].function_id = p->lines.v[i].function;
		ln[i].line = p->lines.v[i].line;
		ln[i].column = p->lines.v[i].column;
		lnp[i] = &ln[i];
	}
	for (size_t i = 0; i < nl; i++) {
		const struct model_location *l = &p->locations.v[i + 1];

		perftools__profiles__location__init(&lc[i]);
		lc[i].id = i + 1;
		lc[i].mapping_id = l->mapping;
		lc[i].address = l->address;
		lc[i].n_line = l->nlines;
		lc[i].line = l->nlines ? &lnp[l->line_off] : NULL;
		lc[i].is_folded = l->is_folded;
		lcp[i] = &lc[i];
	}
	for (size_t i = 0; i < ns; i++) {
		const struct model_sample *s = &p->samples.v[i];

		perftools__profiles__sample__init(&sm[i]);
		sm[i].n_location_id = s->nstack;
		sm[i].location_id = &ids[ii];
		for (uint32_t k = 0; k < s->nstack; k++)
			ids[ii++] = p->stack_locs.v[s->stack_off + k];
		sm[i].n_value = nt;
		sm[i].value = nt ? &p->values.v[s->value_off] : NULL;
		sm[i].n_label = s->nlabels + p->attrs.n;
		sm[i].label = &lbp[li];
		for (size_t k = 0; k < s->nlabels + p->attrs.n; k++) {
			const struct model_label *ml = k < s->nlabels
							       ? &p->labels.v[s->label_off + k]
							       : &p->attrs.v[k - s->nlabels];

			perftools__profiles__label__init(&lb[li]);
			lb[li].key = ml->key;
			if (ml->str) {
				lb[li].str = ml->str;
			} else {
				lb[li].num = ml->num;
				lb[li].num_unit = ml->num_unit;
			}
			lbp[li] = &lb[li];
			li++;
		}
		smp[i] = &sm[i];
	}
	for (uint32_t i = 0; i < p->strings.n; i++) {
		st[i].data = (uint8_t *)p->strings.s[i];
		st[i].len = p->strings.len[i];
	}
	for (size_t i = 0; i < p->comments.n; i++)
		comments[i] = p->comments.v[i];

	pb.n_sample_type = nt;
	pb.sample_type = vtp;
	pb.n_sample = ns;
	pb.sample = smp;
	pb.n_mapping = nm;
	pb.mapping = mpp;
	pb.n_location = nl;
	pb.location = lcp;
	pb.n_function = nf;
	pb.function = fnp;
	pb.n_string_table = p->strings.n;
	pb.string_table = st;
	pb.drop_frames = p->drop_frames;
	pb.keep_frames = p->keep_frames;
	pb.time_nanos = p->time_ns;
	pb.duration_nanos = p->duration_ns;
	period.type = p->period_type.type;
	period.unit = p->period_type.unit;
	if (period.type || period.unit)
		pb.period_type = &period;
	pb.period = p->period;
	pb.n_comment = p->comments.n;
	pb.comment = comments;
	pb.default_sample_type = p->default_sample_type;

	size = perftools__profiles__profile__get_packed_size(&pb);
	packed = xmalloc(size ? size : 1);
	perftools__profiles__profile__pack(&pb, packed);
	rc = gzip ? gzip_deflate(packed, size, out) : buf_add(out, packed, size);

	free(packed);
	free(vt);
	free(vtp);
	free(mp);
	free(mpp);
	free(fn);
	free(fnp);
	free(lc);
	free(lcp);
	free(ln);
	free(lnp);
	free(sm);
	free(smp);
	free(st);
	free(comments);
	free(ids);
	free(lb);
	free(lbp);
	return rc;
}
