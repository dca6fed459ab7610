// SPDX-License-Identifier: Apache-2.0
/*
 * otlp.c - OTLP profiles (v1development, v1.10/v1.11 wire layout; shared
 * formats.md 1.4, 1.5, 1.7) protobuf decoder and encoder.
 *
 * Decoding: otlp_direct.c decodes the wire bytes straight into the model
 * and leaves anything unusual to the path here (fmt_otlp_decode_pbc):
 * fmt_pb_check validates the bytes (offset and field path of the
 * first malformed byte, nesting and allocation bounds), protobuf-c unpacks
 * them with our src/format/proto files, then each OTLP Profile becomes a
 * model_profile. The request has one dictionary shared by all profiles;
 * each model profile gets its own, so dictionary entries are translated
 * lazily per profile through memo tables stamped with the profile number
 * (no clearing between profiles). Every index is range-checked against its
 * table with an error naming the referrer, the field and the index.
 *
 * Attributes with a home in the model are taken out of the attribute lists:
 * Mapping `process.executable.build_id.gnu` -> mapping build_id,
 * `pprof.mapping.has_*` -> the has_* flags, Location `profile.frame.type`
 * and `pprof.location.is_folded`, Profile `pprof.profile.comment`,
 * `pprof.profile.drop_frames|keep_frames`, `profd.profile.name` (the
 * model's name, our own key, so a named profile survives the WAL), scope
 * `pprof.scope.default_sample_type` (semantic conventions, formats.md 1.7).
 * Other mapping/location attributes are dropped (the model has no place
 * for them); resource, scope and profile attributes go to model attrs.
 *
 * Encoding: one dictionary for the request, each table interned by value
 * (a record's bytes are its key in a strtab, so the strtab id is the table
 * index and id 0, the empty key, is the zero entry the spec requires).
 * Samples that carry timestamps and share stack, attributes and link are
 * grouped into one OTLP Sample (values + timestamps, shape (c) of 1.4.6);
 * samples without a timestamp stay one OTLP Sample each (shape (b)), so a
 * pprof -> OTLP -> pprof trip keeps its sample count.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "format/pbcheck.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	OtRequest;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary OtDict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles OtResourceProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles OtScopeProfiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile OtProfile;
typedef Opentelemetry__Proto__Profiles__V1development__Sample OtSample;
typedef Opentelemetry__Proto__Profiles__V1development__Stack OtStack;
typedef Opentelemetry__Proto__Profiles__V1development__Location OtLocation;
typedef Opentelemetry__Proto__Profiles__V1development__Line OtLine;
typedef Opentelemetry__Proto__Profiles__V1development__Function OtFunction;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping OtMapping;
typedef Opentelemetry__Proto__Profiles__V1development__Link OtLink;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType OtValueType;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit OtAttr;
typedef Opentelemetry__Proto__Common__V1__AnyValue OtAnyValue;
typedef Opentelemetry__Proto__Common__V1__ArrayValue OtArrayValue;
typedef Opentelemetry__Proto__Common__V1__KeyValueList OtKeyValueList;
typedef Opentelemetry__Proto__Common__V1__KeyValue OtKeyValue;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope OtScope;
typedef Opentelemetry__Proto__Resource__V1__Resource OtResource;

#define OT_REQUEST_DESC \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor

#define ANY(x) OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_##x

/* Well-known attribute keys (shared formats.md 1.7). */
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
/* The model's profile name (process_cpu, memory, ...) when set: profd's own key. */
#define KEY_PROFILE_NAME "profd.profile.name"

/* ======================================================================== */
/* decode                                                                   */
/* ======================================================================== */

/* Lazy translation table: val[i] is valid when epoch[i] == the current profile. */
struct memo {
	uint32_t *val, *epoch;
};

static void memo_init(struct memo *m, size_t n)
{
	m->val = xcalloc(n + 1, sizeof(*m->val));
	m->epoch = xcalloc(n + 1, sizeof(*m->epoch));
}

static void memo_release(struct memo *m)
{
	free(m->val);
	free(m->epoch);
}

struct ot_dec {
	const OtDict *d;
	size_t nstr, nmap, nloc, nfn, nlink, nattr, nstack;
	struct prof_err *err;
	struct model_profile *p; /* profile being built */
	uint32_t epoch;		 /* 1 + its number */
	struct memo str, map, fn, loc, link, stack;
	uint32_t *stack_len; /* per stack index, valid with the stack memo */
	VEC(struct model_line) lines;
	VEC(uint32_t) locs;
	VEC(struct model_label) labels;
	struct buf tmp; /* rendering of non-string attribute values */
	size_t max_samples, nsamples;
	size_t n; /* request bytes */
};

/* Conversion errors: otlp_direct_convert.c (C_ERR) gives the same words; change both together. */
#define OT_ERR(...) prof_err_set(c->err, -PROF_ECORRUPT, -1, "otlp: " __VA_ARGS__)

/* String @idx of the dictionary as a model string id; false when out of range. */
static bool ot_str(struct ot_dec *c, int64_t idx, uint32_t *out)
{
	if (idx == 0 && c->nstr == 0) {
		*out = 0;
		return true;
	}
	if (idx < 0 || (uint64_t)idx >= c->nstr)
		return false;
	if (c->str.epoch[idx] != c->epoch) {
		const ProtobufCBinaryData *s = &c->d->string_table[idx];

		c->str.val[idx] = model_intern_n(c->p, (const char *)s->data, s->len);
		c->str.epoch[idx] = c->epoch;
	}
	*out = c->str.val[idx];
	return true;
}

/* The bytes of dictionary string @idx (already range-checked). */
static const ProtobufCBinaryData *ot_str_bytes(const struct ot_dec *c, int32_t idx)
{
	static const ProtobufCBinaryData empty = { 0, NULL };

	return idx > 0 && (size_t)idx < c->nstr ? &c->d->string_table[idx] : &empty;
}

static bool ot_str_is(const struct ot_dec *c, int32_t idx, const char *s)
{
	const ProtobufCBinaryData *b = ot_str_bytes(c, idx);
	size_t n = strlen(s);

	return b->len == n && (n == 0 || memcmp(b->data, s, n) == 0);
}

static int ot_render(struct ot_dec *c, const OtAnyValue *v, int depth);

/* Appends @v as JSON-like text to c->tmp (arrays and kvlists as labels). */
static int ot_render(struct ot_dec *c, const OtAnyValue *v, int depth)
{
	if (!v || depth > FMT_PB_MAX_DEPTH)
		return 0;
	switch (v->value_case) {
	case ANY(STRING_VALUE):
		return buf_add_json_str(&c->tmp, v->string_value, strlen(v->string_value));
	case ANY(STRING_VALUE_STRINDEX): {
		const ProtobufCBinaryData *s;

		if (v->string_value_strindex < 0 || (size_t)v->string_value_strindex >= c->nstr)
			return OT_ERR("attribute value: string_value_strindex %d out of range "
				      "(%zu strings)",
				      v->string_value_strindex, c->nstr);
		s = ot_str_bytes(c, v->string_value_strindex);
		return buf_add_json_str(&c->tmp, (const char *)s->data, s->len);
	}
	case ANY(BOOL_VALUE):
		return buf_addstr(&c->tmp, v->bool_value ? "true" : "false");
	case ANY(INT_VALUE):
		return buf_addf(&c->tmp, "%" PRId64, v->int_value);
	case ANY(DOUBLE_VALUE):
		return buf_addf(&c->tmp, "%.17g", v->double_value);
	case ANY(BYTES_VALUE):
		buf_addstr(&c->tmp, "\"");
		for (size_t i = 0; i < v->bytes_value.len; i++)
			buf_addf(&c->tmp, "%02x", v->bytes_value.data[i]);
		return buf_addstr(&c->tmp, "\"");
	case ANY(ARRAY_VALUE):
		buf_addstr(&c->tmp, "[");
		for (size_t i = 0; v->array_value && i < v->array_value->n_values; i++) {
			int rc;

			if (i)
				buf_addstr(&c->tmp, ",");
			if ((rc = ot_render(c, v->array_value->values[i], depth + 1)))
				return rc;
		}
		return buf_addstr(&c->tmp, "]");
	case ANY(KVLIST_VALUE):
		buf_addstr(&c->tmp, "{");
		for (size_t i = 0; v->kvlist_value && i < v->kvlist_value->n_values; i++) {
			const OtKeyValue *kv = v->kvlist_value->values[i];
			int rc;

			if (i)
				buf_addstr(&c->tmp, ",");
			buf_add_json_str(&c->tmp, kv->key, strlen(kv->key));
			buf_addstr(&c->tmp, ":");
			if ((rc = ot_render(c, kv->value, depth + 1)))
				return rc;
		}
		return buf_addstr(&c->tmp, "}");
	default:
		return buf_addstr(&c->tmp, "null");
	}
}

/*
 * Converts an attribute value into a model label value: ints stay numbers,
 * strings are interned, the rest is rendered as text ("true", "1.5", hex
 * bytes, JSON for arrays and kvlists).
 */
static int ot_value(struct ot_dec *c, const OtAnyValue *v, struct model_label *l, const char *who,
		    size_t who_idx)
{
	l->str = 0;
	l->num = 0;
	if (!v)
		return 0;
	switch (v->value_case) {
	case ANY(_NOT_SET):
		return 0;
	case ANY(STRING_VALUE):
		l->str = model_intern(c->p, v->string_value);
		return 0;
	case ANY(STRING_VALUE_STRINDEX):
		if (!ot_str(c, v->string_value_strindex, &l->str))
			return OT_ERR("%s[%zu].value.string_value_strindex %d out of range (%zu "
				      "strings)",
				      who, who_idx, v->string_value_strindex, c->nstr);
		return 0;
	case ANY(INT_VALUE):
		l->num = v->int_value;
		return 0;
	case ANY(BOOL_VALUE):
		l->str = model_intern(c->p, v->bool_value ? "true" : "false");
		return 0;
	default: {
		int rc;

		buf_reset(&c->tmp);
		rc = ot_render(c, v, 0);
		if (rc)
			return rc;
		if (v->value_case == ANY(BYTES_VALUE) && c->tmp.len >= 2) /* drop the quotes */
			l->str = model_intern_n(c->p, c->tmp.p + 1, c->tmp.len - 2);
		else
			l->str = model_intern_n(c->p, c->tmp.p ? c->tmp.p : "", c->tmp.len);
		return 0;
	}
	}
}

/* Attribute table entry @ai (range-checked by the caller) as a model label. */
static int ot_attr(struct ot_dec *c, int32_t ai, struct model_label *l)
{
	const OtAttr *a = c->d->attribute_table[ai];

	memset(l, 0, sizeof(*l));
	if (!ot_str(c, a->key_strindex, &l->key))
		return OT_ERR("attribute_table[%d].key_strindex %d out of range (%zu strings)", ai,
			      a->key_strindex, c->nstr);
	if (!ot_str(c, a->unit_strindex, &l->num_unit))
		return OT_ERR("attribute_table[%d].unit_strindex %d out of range (%zu strings)", ai,
			      a->unit_strindex, c->nstr);
	return ot_value(c, a->value, l, "attribute_table", (size_t)ai);
}

static bool ot_bool(const OtAttr *a)
{
	return a->value && a->value->value_case == ANY(BOOL_VALUE) && a->value->bool_value;
}

static int ot_mapping(struct ot_dec *c, int32_t mi, uint32_t *out)
{
	const OtMapping *m;
	struct model_mapping mm = { 0 };

	if (c->map.epoch[mi] == c->epoch) {
		*out = c->map.val[mi];
		return 0;
	}
	m = c->d->mapping_table[mi];
	mm.memory_start = m->memory_start;
	mm.memory_limit = m->memory_limit;
	mm.file_offset = m->file_offset;
	if (!ot_str(c, m->filename_strindex, &mm.filename))
		return OT_ERR("mapping_table[%d].filename_strindex %d out of range (%zu strings)",
			      mi, m->filename_strindex, c->nstr);
	for (size_t k = 0; k < m->n_attribute_indices; k++) {
		int32_t ai = m->attribute_indices[k];
		const OtAttr *a;

		if (ai < 0 || (size_t)ai >= c->nattr)
			return OT_ERR("mapping_table[%d].attribute_indices[%zu] = %d out of range "
				      "(%zu attributes)",
				      mi, k, ai, c->nattr);
		a = c->d->attribute_table[ai];
		if (ot_str_is(c, a->key_strindex, KEY_BUILD_ID_GNU)) {
			struct model_label l;
			int rc = ot_attr(c, ai, &l);

			if (rc)
				return rc;
			mm.build_id = l.str;
		} else if (ot_str_is(c, a->key_strindex, KEY_HAS_FUNCTIONS)) {
			mm.has_functions = ot_bool(a);
		} else if (ot_str_is(c, a->key_strindex, KEY_HAS_FILENAMES)) {
			mm.has_filenames = ot_bool(a);
		} else if (ot_str_is(c, a->key_strindex, KEY_HAS_LINES)) {
			mm.has_line_numbers = ot_bool(a);
		} else if (ot_str_is(c, a->key_strindex, KEY_HAS_INLINE)) {
			mm.has_inline_frames = ot_bool(a);
		}
	}
	mm.build_id = model_build_id_checked(c->p, mm.build_id);
	c->map.val[mi] = model_mapping_add(c->p, &mm);
	c->map.epoch[mi] = c->epoch;
	*out = c->map.val[mi];
	return 0;
}

static int ot_function(struct ot_dec *c, int32_t fi, uint32_t *out)
{
	const OtFunction *f;
	struct model_function mf = { 0 };

	if (c->fn.epoch[fi] == c->epoch) {
		*out = c->fn.val[fi];
		return 0;
	}
	f = c->d->function_table[fi];
	if (!ot_str(c, f->name_strindex, &mf.name))
		return OT_ERR("function_table[%d].name_strindex %d out of range (%zu strings)", fi,
			      f->name_strindex, c->nstr);
	if (!ot_str(c, f->system_name_strindex, &mf.system_name))
		return OT_ERR("function_table[%d].system_name_strindex %d out of range (%zu "
			      "strings)",
			      fi, f->system_name_strindex, c->nstr);
	if (!ot_str(c, f->filename_strindex, &mf.filename))
		return OT_ERR("function_table[%d].filename_strindex %d out of range (%zu strings)",
			      fi, f->filename_strindex, c->nstr);
	mf.start_line = f->start_line;
	c->fn.val[fi] = model_function_add(c->p, &mf);
	c->fn.epoch[fi] = c->epoch;
	*out = c->fn.val[fi];
	return 0;
}

static int ot_location(struct ot_dec *c, int32_t li, uint32_t *out)
{
	const OtLocation *l;
	uint32_t mapping = 0, frame_type = 0, idx;
	bool folded = false;
	int rc;

	if (c->loc.epoch[li] == c->epoch) {
		*out = c->loc.val[li];
		return 0;
	}
	l = c->d->location_table[li];
	if (l->mapping_index) {
		if (l->mapping_index < 0 || (size_t)l->mapping_index >= c->nmap)
			return OT_ERR("location_table[%d].mapping_index %d out of range (%zu "
				      "mappings)",
				      li, l->mapping_index, c->nmap);
		if ((rc = ot_mapping(c, l->mapping_index, &mapping)))
			return rc;
	}
	c->lines.n = 0;
	for (size_t k = 0; k < l->n_lines; k++) {
		const OtLine *ln = l->lines[k];
		struct model_line ml = { 0, ln->line, ln->column };

		if (ln->function_index) {
			if (ln->function_index < 0 || (size_t)ln->function_index >= c->nfn)
				return OT_ERR("location_table[%d].lines[%zu].function_index %d out "
					      "of range (%zu functions)",
					      li, k, ln->function_index, c->nfn);
			if ((rc = ot_function(c, ln->function_index, &ml.function)))
				return rc;
		}
		VEC_PUSH(&c->lines, ml);
	}
	for (size_t k = 0; k < l->n_attribute_indices; k++) {
		int32_t ai = l->attribute_indices[k];
		const OtAttr *a;

		if (ai < 0 || (size_t)ai >= c->nattr)
			return OT_ERR("location_table[%d].attribute_indices[%zu] = %d out of range "
				      "(%zu attributes)",
				      li, k, ai, c->nattr);
		a = c->d->attribute_table[ai];
		if (ot_str_is(c, a->key_strindex, KEY_FRAME_TYPE)) {
			struct model_label lab;

			if ((rc = ot_attr(c, ai, &lab)))
				return rc;
			frame_type = lab.str;
		} else if (ot_str_is(c, a->key_strindex, KEY_IS_FOLDED)) {
			folded = ot_bool(a);
		}
	}
	if (c->lines.n > UINT32_MAX)
		return OT_ERR("location_table[%d]: too many lines", li);
	idx = model_location_add(c->p, mapping, l->address, c->lines.v, (uint32_t)c->lines.n);
	c->p->locations.v[idx].is_folded = folded;
	c->p->locations.v[idx].frame_type = frame_type;
	c->loc.val[li] = idx;
	c->loc.epoch[li] = c->epoch;
	*out = idx;
	return 0;
}

static int ot_stack(struct ot_dec *c, int32_t si, uint32_t *off, uint32_t *n)
{
	const OtStack *s;
	int rc;

	if (c->stack.epoch[si] == c->epoch) {
		*off = c->stack.val[si];
		*n = c->stack_len[si];
		return 0;
	}
	s = c->d->stack_table[si];
	c->locs.n = 0;
	VEC_RESERVE(&c->locs, s->n_location_indices);
	for (size_t k = 0; k < s->n_location_indices; k++) {
		int32_t li = s->location_indices[k];
		uint32_t loc = 0;

		if (li <= 0 || (size_t)li >= c->nloc)
			return OT_ERR("stack_table[%d].location_indices[%zu] = %d out of range "
				      "(%zu locations; 0 is the null location)",
				      si, k, li, c->nloc);
		if ((rc = ot_location(c, li, &loc)))
			return rc;
		c->locs.v[c->locs.n++] = loc;
	}
	if (c->locs.n > UINT32_MAX || c->p->stack_locs.n + c->locs.n > UINT32_MAX)
		return prof_err_set(c->err, -PROF_ETOOBIG, -1,
				    "otlp: more than 2^32 stack entries");
	*off = model_stack_add(c->p, c->locs.v, (uint32_t)c->locs.n);
	*n = (uint32_t)c->locs.n;
	c->stack.val[si] = *off;
	c->stack_len[si] = *n;
	c->stack.epoch[si] = c->epoch;
	return 0;
}

static int ot_link(struct ot_dec *c, int32_t ki, uint32_t *out)
{
	const OtLink *k;
	struct model_link ml;

	if (c->link.epoch[ki] == c->epoch) {
		*out = c->link.val[ki];
		return 0;
	}
	k = c->d->link_table[ki];
	memset(&ml, 0, sizeof(ml));
	if (k->trace_id.len != 0 && k->trace_id.len != sizeof(ml.trace_id))
		return OT_ERR("link_table[%d].trace_id has %zu bytes (16 expected)", ki,
			      k->trace_id.len);
	if (k->span_id.len != 0 && k->span_id.len != sizeof(ml.span_id))
		return OT_ERR("link_table[%d].span_id has %zu bytes (8 expected)", ki,
			      k->span_id.len);
	if (k->trace_id.len)
		memcpy(ml.trace_id, k->trace_id.data, sizeof(ml.trace_id));
	if (k->span_id.len)
		memcpy(ml.span_id, k->span_id.data, sizeof(ml.span_id));
	VEC_PUSH(&c->p->links, ml);
	c->link.val[ki] = (uint32_t)c->p->links.n - 1;
	c->link.epoch[ki] = c->epoch;
	*out = c->link.val[ki];
	return 0;
}

/* Resolves a resource/scope KeyValue (key or key_strindex) into p->attrs. */
static int ot_keyvalue(struct ot_dec *c, const OtKeyValue *kv, const char *who, size_t i)
{
	struct model_label l = { 0 };
	int rc;

	if (kv->key && *kv->key) {
		l.key = model_intern(c->p, kv->key);
	} else if (!ot_str(c, kv->key_strindex, &l.key)) {
		return OT_ERR("%s[%zu].key_strindex %d out of range (%zu strings)", who, i,
			      kv->key_strindex, c->nstr);
	}
	if ((rc = ot_value(c, kv->value, &l, who, i)))
		return rc;
	if (!strcmp(model_str(c->p, l.key), KEY_DEFAULT_TYPE))
		c->p->default_sample_type = l.str;
	else
		VEC_PUSH(&c->p->attrs, l);
	return 0;
}

/* Profile.attribute_indices: pprof compatibility keys, the rest to attrs. */
static int ot_profile_attrs(struct ot_dec *c, const OtProfile *pr, size_t pi)
{
	for (size_t k = 0; k < pr->n_attribute_indices; k++) {
		int32_t ai = pr->attribute_indices[k];
		const OtAttr *a;
		struct model_label l;
		int rc;

		if (ai < 0 || (size_t)ai >= c->nattr)
			return OT_ERR("profile %zu: attribute_indices[%zu] = %d out of range (%zu "
				      "attributes)",
				      pi, k, ai, c->nattr);
		a = c->d->attribute_table[ai];
		if (ot_str_is(c, a->key_strindex, KEY_COMMENT) && a->value &&
		    a->value->value_case == ANY(ARRAY_VALUE) && a->value->array_value) {
			const OtArrayValue *av = a->value->array_value;

			for (size_t j = 0; j < av->n_values; j++) {
				if ((rc = ot_value(c, av->values[j], &l, "attribute_table",
						   (size_t)ai)))
					return rc;
				VEC_PUSH(&c->p->comments, l.str);
			}
			continue;
		}
		if ((rc = ot_attr(c, ai, &l)))
			return rc;
		if (ot_str_is(c, a->key_strindex, KEY_DROP_FRAMES))
			c->p->drop_frames = l.str;
		else if (ot_str_is(c, a->key_strindex, KEY_PROFILE_NAME))
			c->p->name = l.str;
		else if (ot_str_is(c, a->key_strindex, KEY_KEEP_FRAMES))
			c->p->keep_frames = l.str;
		else
			VEC_PUSH(&c->p->attrs, l);
	}
	return 0;
}

static int ot_value_type(struct ot_dec *c, const OtValueType *vt, struct model_value_type *out,
			 size_t pi, const char *field)
{
	out->type = out->unit = 0;
	if (!vt)
		return 0;
	if (!ot_str(c, vt->type_strindex, &out->type))
		return OT_ERR("profile %zu: %s.type_strindex %d out of range (%zu strings)", pi,
			      field, vt->type_strindex, c->nstr);
	if (!ot_str(c, vt->unit_strindex, &out->unit))
		return OT_ERR("profile %zu: %s.unit_strindex %d out of range (%zu strings)", pi,
			      field, vt->unit_strindex, c->nstr);
	return 0;
}

static int ot_samples(struct ot_dec *c, const OtProfile *pr, size_t pi)
{
	for (size_t i = 0; i < pr->n_samples; i++) {
		const OtSample *s = pr->samples[i];
		uint32_t off = 0, n = 0, link = 0, lab;
		size_t nobs;
		int rc;

		if (s->stack_index < 0 || (size_t)s->stack_index >= c->nstack)
			return OT_ERR("profile %zu sample %zu: stack_index %d out of range (%zu "
				      "stacks)",
				      pi, i, s->stack_index, c->nstack);
		if (s->stack_index && (rc = ot_stack(c, s->stack_index, &off, &n)))
			return rc;
		if (s->link_index) {
			if (s->link_index < 0 || (size_t)s->link_index >= c->nlink)
				return OT_ERR("profile %zu sample %zu: link_index %d out of range "
					      "(%zu links)",
					      pi, i, s->link_index, c->nlink);
			if ((rc = ot_link(c, s->link_index, &link)))
				return rc;
		}
		c->labels.n = 0;
		for (size_t k = 0; k < s->n_attribute_indices; k++) {
			int32_t ai = s->attribute_indices[k];
			struct model_label l;

			if (ai < 0 || (size_t)ai >= c->nattr)
				return OT_ERR("profile %zu sample %zu: attribute_indices[%zu] = %d "
					      "out of range (%zu attributes)",
					      pi, i, k, ai, c->nattr);
			if ((rc = ot_attr(c, ai, &l)))
				return rc;
			VEC_PUSH(&c->labels, l);
		}
		if (s->n_values && s->n_timestamps_unix_nano &&
		    s->n_values != s->n_timestamps_unix_nano)
			return OT_ERR("profile %zu sample %zu: %zu values but %zu timestamps (must "
				      "be equal when both are present)",
				      pi, i, s->n_values, s->n_timestamps_unix_nano);
		nobs = PROF_MAX(s->n_values, s->n_timestamps_unix_nano);
		if (c->max_samples && c->nsamples + nobs > c->max_samples)
			return prof_err_set(c->err, -PROF_ETOOBIG, -1,
					    "otlp: more than %zu samples (profile %zu sample %zu)",
					    c->max_samples, pi, i);
		if (!nobs)
			continue;
		if (c->p->labels.n + c->labels.n > UINT32_MAX)
			return prof_err_set(c->err, -PROF_ETOOBIG, -1,
					    "otlp: more than 2^32 sample labels");
		c->nsamples += nobs;
		/* One model sample per observation (otlp.h); a bare timestamp counts 1.
		 * They share one copy of the sample's labels (model_labels_add). */
		lab = model_labels_add(c->p, c->labels.v, c->labels.n);
		for (size_t j = 0; j < nobs; j++) {
			int64_t v = s->n_values ? s->values[j] : 1;
			int64_t ts =
				s->n_timestamps_unix_nano ? (int64_t)s->timestamps_unix_nano[j] : 0;
			uint32_t k = model_sample_add(c->p, off, n, &v, NULL, 0, ts, link);

			c->p->samples.v[k].label_off = lab;
			c->p->samples.v[k].nlabels = (uint32_t)c->labels.n;
		}
	}
	return 0;
}

static int ot_profile(struct ot_dec *c, const OtResourceProfiles *rp, const OtScopeProfiles *sp,
		      const OtProfile *pr, size_t pi)
{
	struct model_profile *p = c->p;
	struct model_value_type vt;
	int rc;

	if ((rc = ot_value_type(c, pr->sample_type, &vt, pi, "sample_type")))
		return rc;
	VEC_PUSH(&p->sample_types, vt);
	if ((rc = ot_value_type(c, pr->period_type, &p->period_type, pi, "period_type")))
		return rc;
	p->period = pr->period;
	p->time_ns = (int64_t)pr->time_unix_nano;
	p->duration_ns = (int64_t)pr->duration_nano;
	for (size_t k = 0; rp->resource && k < rp->resource->n_attributes; k++)
		if ((rc = ot_keyvalue(c, rp->resource->attributes[k], "resource.attributes", k)))
			return rc;
	for (size_t k = 0; sp->scope && k < sp->scope->n_attributes; k++)
		if ((rc = ot_keyvalue(c, sp->scope->attributes[k], "scope.attributes", k)))
			return rc;
	if ((rc = ot_profile_attrs(c, pr, pi)) || (rc = ot_samples(c, pr, pi)))
		return rc;
	return model_profile_validate(p, c->err);
}

/* malloc's bookkeeping per allocated block (glibc: 16 bytes, rounded up) */
#define MALLOC_OVERHEAD 32

/* Bytes a VEC's storage holds: its capacity, and malloc's overhead when allocated. */
#define VEC_HELD(x) ((x).cap ? (x).cap * sizeof(*(x).v) + MALLOC_OVERHEAD : 0)

size_t fmt_otlp_profile_bytes(const struct model_profile *p)
{
	const struct strtab *st = &p->strings;
	size_t b = sizeof(*p); /* its slot in the batch */

	/* The string table: its arrays, index and chunks (the chunks hold
	 * the strings and at least the newest chunk's whole size). */
	b += (size_t)st->cap * (sizeof(*st->s) + sizeof(*st->len)) + 2 * MALLOC_OVERHEAD;
	b += (size_t)st->nslots * sizeof(*st->slots) + (st->nslots ? MALLOC_OVERHEAD : 0);
	b += st->chunk_size + MALLOC_OVERHEAD;
	for (uint32_t i = 0; i < st->n; i++)
		b += st->len[i] + 1;
	b += (size_t)p->fn_nslots * sizeof(*p->fn_slots) + (p->fn_nslots ? MALLOC_OVERHEAD : 0);
	b += VEC_HELD(p->mappings) + VEC_HELD(p->functions) + VEC_HELD(p->locations) +
	     VEC_HELD(p->lines) + VEC_HELD(p->links) + VEC_HELD(p->sample_types) +
	     VEC_HELD(p->samples) + VEC_HELD(p->stack_locs) + VEC_HELD(p->values) +
	     VEC_HELD(p->labels) + VEC_HELD(p->attrs) + VEC_HELD(p->comments);
	return b;
}

static int ot_to_batch(struct ot_dec *c, const OtRequest *req, struct fmt_otlp_batch *out)
{
	size_t np = 0, pi = 0, bytes = 0;
	int rc = 0;

	for (size_t r = 0; r < req->n_resource_profiles; r++)
		for (size_t s = 0; s < req->resource_profiles[r]->n_scope_profiles; s++)
			np += req->resource_profiles[r]->scope_profiles[s]->n_profiles;
	out->profiles = xcalloc(np ? np : 1, sizeof(*out->profiles));
	for (size_t r = 0; r < req->n_resource_profiles && !rc; r++) {
		const OtResourceProfiles *rp = req->resource_profiles[r];

		for (size_t s = 0; s < rp->n_scope_profiles && !rc; s++) {
			const OtScopeProfiles *sp = rp->scope_profiles[s];

			for (size_t k = 0; k < sp->n_profiles && !rc; k++, pi++) {
				model_profile_init(&out->profiles[pi]);
				out->n = pi + 1;
				c->p = &out->profiles[pi];
				c->epoch = (uint32_t)pi + 1;
				rc = ot_profile(c, rp, sp, sp->profiles[k], pi);
				if (rc || !c->max_samples)
					continue;
				/* otlp.h FMT_OTLP_DECODED_MAX; checked per profile, so
				 * it is passed by at most one profile's size */
				bytes += fmt_otlp_profile_bytes(c->p);
				if (bytes > FMT_OTLP_DECODED_MAX(c->n))
					rc = prof_err_set(
						c->err, -PROF_ETOOBIG, -1,
						"otlp: decoded size limit (64 x the request's %zu "
						"bytes + 16 MiB) exceeded at profile %zu: %zu bytes "
						"(each profile copies the dictionary entries it uses)",
						c->n, pi, bytes);
			}
		}
	}
	return rc;
}

int fmt_otlp_decode(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *out,
		    struct prof_err *err)
{
	int rc = fmt_otlp_decode_direct_err(data, n, max_samples, out, err);

	return rc != FMT_OTLP_FALLBACK ? rc : fmt_otlp_decode_pbc(data, n, max_samples, out, err);
}

int fmt_otlp_decode_pbc(const void *data, size_t n, size_t max_samples, struct fmt_otlp_batch *out,
			struct prof_err *err)
{
	static const OtDict empty_dict =
		OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT;
	struct ot_dec c;
	OtRequest *req;
	int rc;

	memset(out, 0, sizeof(*out));
	memset(&c, 0, sizeof(c));
	/* Realistic requests unpack to under ~16x their size; see pbcheck.h. */
	rc = fmt_pb_check(&OT_REQUEST_DESC, data, n, "otlp", 24 * n + (1u << 20), NULL, err);
	if (rc)
		return rc;
	req = (OtRequest *)protobuf_c_message_unpack(&OT_REQUEST_DESC, NULL, n, data);
	if (!req)
		return prof_err_set(err, -PROF_ECORRUPT, -1,
				    "otlp: protobuf-c could not unpack the request (%zu bytes)", n);
	c.d = req->dictionary ? req->dictionary : &empty_dict;
	c.nstr = c.d->n_string_table;
	c.nmap = c.d->n_mapping_table;
	c.nloc = c.d->n_location_table;
	c.nfn = c.d->n_function_table;
	c.nlink = c.d->n_link_table;
	c.nattr = c.d->n_attribute_table;
	c.nstack = c.d->n_stack_table;
	c.err = err;
	c.max_samples = max_samples;
	c.n = n;
	if (c.nstr > INT32_MAX || c.nmap > INT32_MAX || c.nloc > INT32_MAX || c.nfn > INT32_MAX ||
	    c.nlink > INT32_MAX || c.nattr > INT32_MAX || c.nstack > INT32_MAX) {
		rc = prof_err_set(err, -PROF_ETOOBIG, -1,
				  "otlp: dictionary table over 2^31 entries");
		goto out;
	}
	memo_init(&c.str, c.nstr);
	memo_init(&c.map, c.nmap);
	memo_init(&c.fn, c.nfn);
	memo_init(&c.loc, c.nloc);
	memo_init(&c.link, c.nlink);
	memo_init(&c.stack, c.nstack);
	c.stack_len = xcalloc(c.nstack + 1, sizeof(*c.stack_len));
	buf_init(&c.tmp, 1u << 20);
	rc = ot_to_batch(&c, req, out);
	memo_release(&c.str);
	memo_release(&c.map);
	memo_release(&c.fn);
	memo_release(&c.loc);
	memo_release(&c.link);
	memo_release(&c.stack);
	free(c.stack_len);
	VEC_FREE(&c.lines);
	VEC_FREE(&c.locs);
	VEC_FREE(&c.labels);
	buf_release(&c.tmp);
out:
	protobuf_c_message_free_unpacked(&req->base, NULL);
	if (rc)
		fmt_otlp_batch_release(out);
	return rc;
}

void fmt_otlp_batch_release(struct fmt_otlp_batch *b)
{
	if (!b)
		return;
	fmt_otlp_pending_release(b);
	for (size_t i = 0; i < b->n; i++) {
		if (b->shared_dict && i)
			model_profile_unborrow_dict(&b->profiles[i]);
		model_profile_release(&b->profiles[i]);
	}
	free(b->profiles);
	b->profiles = NULL;
	b->n = 0;
	b->shared_dict = false;
}

/* ======================================================================== */
/* encode                                                                   */
/* ======================================================================== */

/* Record key builder: little-endian fields appended to a buf. */
static void kb_u32(struct buf *b, uint32_t v)
{
	buf_add(b, &v, sizeof(v));
}
static void kb_u64(struct buf *b, uint64_t v)
{
	buf_add(b, &v, sizeof(v));
}
static uint32_t kb_get32(const char **p)
{
	uint32_t v;

	memcpy(&v, *p, sizeof(v));
	*p += sizeof(v);
	return v;
}
static uint64_t kb_get64(const char **p)
{
	uint64_t v;

	memcpy(&v, *p, sizeof(v));
	*p += sizeof(v);
	return v;
}

enum { ATTR_STR = 1, ATTR_INT = 2, ATTR_BOOL = 3, ATTR_STRS = 4 };

/* Per model profile: one OTLP Sample ("slot") per group of model samples. */
struct ot_slot {
	uint32_t stack, link;
	uint32_t attr_off, nattr; /* range of enc.slot_attrs */
	uint32_t mem_off, nmem;	  /* range of enc.members (model sample indexes) */
	bool timed;
};

struct ot_enc {
	struct strtab str;			       /* dictionary strings */
	struct strtab map, fn, loc, stack, attr, link; /* record key -> table index */
	struct buf key;
	/* per model profile */
	uint32_t *smap, *mmap, *fmap, *lmap; /* model index -> dictionary index + 1 */
	VEC(uint32_t) ids, stk;		     /* scratch: function ids of a location, a stack */
	VEC(struct ot_slot) slots;
	VEC(uint32_t) slot_attrs, members;
	/* memory to free after packing */
	VEC(void *) allocs;
};

static void *enc_alloc(struct ot_enc *e, size_t nmemb, size_t size)
{
	void *p = xcalloc(nmemb ? nmemb : 1, size);

	VEC_PUSH(&e->allocs, p);
	return p;
}

static uint32_t enc_rec(struct strtab *t, const struct buf *key)
{
	return strtab_intern(t, key->p ? key->p : "", key->len);
}

static uint32_t enc_str(struct ot_enc *e, const struct model_profile *p, uint32_t id)
{
	if (!e->smap[id])
		e->smap[id] = strtab_intern(&e->str, p->strings.s[id], p->strings.len[id]) + 1;
	return e->smap[id] - 1;
}

static uint32_t enc_cstr(struct ot_enc *e, const char *s)
{
	return strtab_intern_cstr(&e->str, s);
}

/* Attribute record: key strindex, unit strindex, kind, payload. */
static uint32_t enc_attr(struct ot_enc *e, uint32_t key, uint32_t unit, int kind, uint64_t v,
			 const uint32_t *strs, uint32_t nstrs)
{
	buf_reset(&e->key);
	kb_u32(&e->key, key);
	kb_u32(&e->key, unit);
	kb_u32(&e->key, (uint32_t)kind);
	if (kind == ATTR_STRS) {
		kb_u32(&e->key, nstrs);
		for (uint32_t i = 0; i < nstrs; i++)
			kb_u32(&e->key, strs[i]);
	} else {
		kb_u64(&e->key, v);
	}
	return enc_rec(&e->attr, &e->key);
}

static uint32_t enc_label(struct ot_enc *e, const struct model_profile *p,
			  const struct model_label *l)
{
	uint32_t key = enc_str(e, p, l->key), unit = enc_str(e, p, l->num_unit);

	if (l->str)
		return enc_attr(e, key, unit, ATTR_STR, enc_str(e, p, l->str), NULL, 0);
	return enc_attr(e, key, unit, ATTR_INT, (uint64_t)l->num, NULL, 0);
}

static uint32_t enc_mapping(struct ot_enc *e, const struct model_profile *p, uint32_t mi)
{
	const struct model_mapping *m = &p->mappings.v[mi];
	uint32_t attrs[5], na = 0;

	if (!mi)
		return 0;
	if (e->mmap[mi])
		return e->mmap[mi] - 1;
	if (m->build_id)
		attrs[na++] = enc_attr(e, enc_cstr(e, KEY_BUILD_ID_GNU), 0, ATTR_STR,
				       enc_str(e, p, m->build_id), NULL, 0);
	if (m->has_functions)
		attrs[na++] = enc_attr(e, enc_cstr(e, KEY_HAS_FUNCTIONS), 0, ATTR_BOOL, 1, NULL, 0);
	if (m->has_filenames)
		attrs[na++] = enc_attr(e, enc_cstr(e, KEY_HAS_FILENAMES), 0, ATTR_BOOL, 1, NULL, 0);
	if (m->has_line_numbers)
		attrs[na++] = enc_attr(e, enc_cstr(e, KEY_HAS_LINES), 0, ATTR_BOOL, 1, NULL, 0);
	if (m->has_inline_frames)
		attrs[na++] = enc_attr(e, enc_cstr(e, KEY_HAS_INLINE), 0, ATTR_BOOL, 1, NULL, 0);
	uint32_t filename = enc_str(e, p, m->filename);

	buf_reset(&e->key);
	kb_u64(&e->key, m->memory_start);
	kb_u64(&e->key, m->memory_limit);
	kb_u64(&e->key, m->file_offset);
	kb_u32(&e->key, filename);
	for (uint32_t i = 0; i < na; i++)
		kb_u32(&e->key, attrs[i]);
	e->mmap[mi] = enc_rec(&e->map, &e->key) + 1;
	return e->mmap[mi] - 1;
}

static uint32_t enc_function(struct ot_enc *e, const struct model_profile *p, uint32_t fi)
{
	const struct model_function *f = &p->functions.v[fi];
	uint32_t name, sys, file;

	if (!fi)
		return 0;
	if (e->fmap[fi])
		return e->fmap[fi] - 1;
	name = enc_str(e, p, f->name);
	sys = enc_str(e, p, f->system_name);
	file = enc_str(e, p, f->filename);
	buf_reset(&e->key);
	kb_u32(&e->key, name);
	kb_u32(&e->key, sys);
	kb_u32(&e->key, file);
	kb_u64(&e->key, (uint64_t)f->start_line);
	e->fmap[fi] = enc_rec(&e->fn, &e->key) + 1;
	return e->fmap[fi] - 1;
}

static uint32_t enc_location(struct ot_enc *e, const struct model_profile *p, uint32_t li)
{
	const struct model_location *l = &p->locations.v[li];
	uint32_t mapping, attrs[2], na = 0;

	if (e->lmap[li])
		return e->lmap[li] - 1;
	mapping = enc_mapping(e, p, l->mapping);
	e->ids.n = 0;
	for (uint32_t k = 0; k < l->nlines; k++)
		VEC_PUSH(&e->ids, enc_function(e, p, p->lines.v[l->line_off + k].function));
	if (l->frame_type)
		attrs[na++] = enc_attr(e, enc_cstr(e, KEY_FRAME_TYPE), 0, ATTR_STR,
				       enc_str(e, p, l->frame_type), NULL, 0);
	if (l->is_folded)
		attrs[na++] = enc_attr(e, enc_cstr(e, KEY_IS_FOLDED), 0, ATTR_BOOL, 1, NULL, 0);
	buf_reset(&e->key);
	kb_u32(&e->key, mapping);
	kb_u64(&e->key, l->address);
	kb_u32(&e->key, l->nlines);
	for (uint32_t k = 0; k < l->nlines; k++) {
		const struct model_line *ln = &p->lines.v[l->line_off + k];

		kb_u32(&e->key, e->ids.v[k]);
		kb_u64(&e->key, (uint64_t)ln->line);
		kb_u64(&e->key, (uint64_t)ln->column);
	}
	for (uint32_t i = 0; i < na; i++)
		kb_u32(&e->key, attrs[i]);
	e->lmap[li] = enc_rec(&e->loc, &e->key) + 1;
	return e->lmap[li] - 1;
}

static uint32_t enc_stack(struct ot_enc *e, const struct model_profile *p,
			  const struct model_sample *s)
{
	/* enc_location uses e->ids and e->key itself: collect into e->stk first. */
	e->stk.n = 0;
	for (uint32_t k = 0; k < s->nstack; k++) {
		uint32_t loc = enc_location(e, p, p->stack_locs.v[s->stack_off + k]);

		VEC_PUSH(&e->stk, loc);
	}
	buf_reset(&e->key);
	for (size_t k = 0; k < e->stk.n; k++)
		kb_u32(&e->key, e->stk.v[k]);
	return enc_rec(&e->stack, &e->key);
}

static uint32_t enc_link(struct ot_enc *e, const struct model_profile *p, uint32_t ki)
{
	const struct model_link *k = &p->links.v[ki];

	if (!ki)
		return 0;
	buf_reset(&e->key);
	buf_add(&e->key, k->trace_id, sizeof(k->trace_id));
	buf_add(&e->key, k->span_id, sizeof(k->span_id));
	return enc_rec(&e->link, &e->key);
}

/*
 * Groups the samples of @p into slots (see struct ot_slot): timestamped
 * samples with equal stack, attributes and link share a slot, in order of
 * first appearance; members keep the order of the samples.
 */
static void enc_slots(struct ot_enc *e, const struct model_profile *p)
{
	struct strtab groups;
	VEC(uint32_t) group_slot = { 0 };
	uint32_t *slot_of = xcalloc(p->samples.n + 1, sizeof(*slot_of));

	strtab_init(&groups);
	VEC_PUSH(&group_slot, 0); /* group id 0 is the empty key, never used */
	e->slots.n = e->slot_attrs.n = e->members.n = 0;
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];
		struct ot_slot sl = { 0 };

		sl.stack = enc_stack(e, p, s);
		sl.link = enc_link(e, p, s->link);
		sl.attr_off = (uint32_t)e->slot_attrs.n;
		sl.nattr = s->nlabels;
		sl.timed = s->timestamp_ns != 0;
		for (uint32_t k = 0; k < s->nlabels; k++) {
			uint32_t a = enc_label(e, p, &p->labels.v[s->label_off + k]);

			VEC_PUSH(&e->slot_attrs, a);
		}
		if (sl.timed) {
			uint32_t g;

			buf_reset(&e->key);
			kb_u32(&e->key, sl.stack);
			kb_u32(&e->key, sl.link);
			for (uint32_t k = 0; k < sl.nattr; k++)
				kb_u32(&e->key, e->slot_attrs.v[sl.attr_off + k]);
			g = enc_rec(&groups, &e->key);
			if (g < group_slot.n) {
				/* Seen before: join that slot, forget this copy of the attrs. */
				e->slot_attrs.n = sl.attr_off;
				slot_of[i] = group_slot.v[g];
				e->slots.v[slot_of[i]].nmem++;
				continue;
			}
			VEC_PUSH(&group_slot, (uint32_t)e->slots.n);
		}
		sl.nmem = 1;
		slot_of[i] = (uint32_t)e->slots.n;
		VEC_PUSH(&e->slots, sl);
	}
	/* Members: prefix sums, then fill in sample order. */
	uint32_t off = 0;

	for (size_t k = 0; k < e->slots.n; k++) {
		e->slots.v[k].mem_off = off;
		off += e->slots.v[k].nmem;
		e->slots.v[k].nmem = 0;
	}
	VEC_RESERVE(&e->members, off);
	e->members.n = off;
	for (size_t i = 0; i < p->samples.n; i++) {
		struct ot_slot *sl = &e->slots.v[slot_of[i]];

		e->members.v[sl->mem_off + sl->nmem++] = (uint32_t)i;
	}
	VEC_FREE(&group_slot);
	strtab_release(&groups);
	free(slot_of);
}

static OtValueType *enc_value_type(struct ot_enc *e, const struct model_profile *p,
				   const struct model_value_type *vt)
{
	OtValueType *v = enc_alloc(e, 1, sizeof(*v));

	opentelemetry__proto__profiles__v1development__value_type__init(v);
	v->type_strindex = (int32_t)enc_str(e, p, vt->type);
	v->unit_strindex = (int32_t)enc_str(e, p, vt->unit);
	return v;
}

static int32_t *enc_i32s(struct ot_enc *e, const uint32_t *v, size_t n)
{
	int32_t *out = enc_alloc(e, n, sizeof(*out));

	for (size_t i = 0; i < n; i++)
		out[i] = (int32_t)v[i];
	return out;
}

/* The K OTLP Profiles (one per sample type) of model profile @p. */
static OtProfile **enc_profiles(struct ot_enc *e, const struct model_profile *p)
{
	size_t nt = p->sample_types.n, ns;
	OtProfile *prs = enc_alloc(e, nt, sizeof(*prs));
	OtProfile **prp = enc_alloc(e, nt, sizeof(*prp));
	uint32_t pattrs[4], npattrs = 0;
	int32_t *pattr_idx;
	OtValueType *period = NULL;

	e->smap = xcalloc(p->strings.n + 1, sizeof(*e->smap));
	e->mmap = xcalloc(p->mappings.n + 1, sizeof(*e->mmap));
	e->fmap = xcalloc(p->functions.n + 1, sizeof(*e->fmap));
	e->lmap = xcalloc(p->locations.n + 1, sizeof(*e->lmap));
	enc_slots(e, p);
	ns = e->slots.n;

	/* Profile attributes: pprof fields with no OTLP home (formats.md 1.7). */
	if (p->comments.n) {
		uint32_t *strs = xcalloc(p->comments.n, sizeof(*strs));

		for (size_t i = 0; i < p->comments.n; i++)
			strs[i] = enc_str(e, p, p->comments.v[i]);
		pattrs[npattrs++] = enc_attr(e, enc_cstr(e, KEY_COMMENT), 0, ATTR_STRS, 0, strs,
					     (uint32_t)p->comments.n);
		free(strs);
	}
	if (p->drop_frames)
		pattrs[npattrs++] = enc_attr(e, enc_cstr(e, KEY_DROP_FRAMES), 0, ATTR_STR,
					     enc_str(e, p, p->drop_frames), NULL, 0);
	if (p->keep_frames)
		pattrs[npattrs++] = enc_attr(e, enc_cstr(e, KEY_KEEP_FRAMES), 0, ATTR_STR,
					     enc_str(e, p, p->keep_frames), NULL, 0);
	if (p->name)
		pattrs[npattrs++] = enc_attr(e, enc_cstr(e, KEY_PROFILE_NAME), 0, ATTR_STR,
					     enc_str(e, p, p->name), NULL, 0);
	pattr_idx = enc_i32s(e, pattrs, npattrs);
	if (p->period_type.type || p->period_type.unit)
		period = enc_value_type(e, p, &p->period_type);

	/* Per slot, shared by the K profiles: attribute indexes and timestamps. */
	int32_t **slot_attr = enc_alloc(e, ns, sizeof(*slot_attr));
	uint64_t **slot_ts = enc_alloc(e, ns, sizeof(*slot_ts));

	for (size_t k = 0; k < ns; k++) {
		const struct ot_slot *sl = &e->slots.v[k];

		slot_attr[k] =
			enc_i32s(e, sl->nattr ? e->slot_attrs.v + sl->attr_off : NULL, sl->nattr);
		if (sl->timed) {
			slot_ts[k] = enc_alloc(e, sl->nmem, sizeof(**slot_ts));
			for (uint32_t j = 0; j < sl->nmem; j++)
				slot_ts[k][j] =
					(uint64_t)p->samples.v[e->members.v[sl->mem_off + j]]
						.timestamp_ns;
		}
	}
	for (size_t t = 0; t < nt; t++) {
		OtProfile *pr = &prs[t];
		OtSample *sm = enc_alloc(e, ns, sizeof(*sm));
		OtSample **smp = enc_alloc(e, ns, sizeof(*smp));

		opentelemetry__proto__profiles__v1development__profile__init(pr);
		pr->sample_type = enc_value_type(e, p, &p->sample_types.v[t]);
		pr->time_unix_nano = (uint64_t)p->time_ns;
		pr->duration_nano = (uint64_t)p->duration_ns;
		pr->period_type = period;
		pr->period = p->period;
		pr->n_attribute_indices = npattrs;
		pr->attribute_indices = pattr_idx;
		for (size_t k = 0; k < ns; k++) {
			const struct ot_slot *sl = &e->slots.v[k];
			int64_t *vals = enc_alloc(e, sl->nmem, sizeof(*vals));

			opentelemetry__proto__profiles__v1development__sample__init(&sm[k]);
			sm[k].stack_index = (int32_t)sl->stack;
			sm[k].link_index = (int32_t)sl->link;
			sm[k].n_attribute_indices = sl->nattr;
			sm[k].attribute_indices = slot_attr[k];
			for (uint32_t j = 0; j < sl->nmem; j++) {
				const struct model_sample *s =
					&p->samples.v[e->members.v[sl->mem_off + j]];

				vals[j] = p->values.v[s->value_off + t];
			}
			sm[k].n_values = sl->nmem;
			sm[k].values = vals;
			if (sl->timed) {
				sm[k].n_timestamps_unix_nano = sl->nmem;
				sm[k].timestamps_unix_nano = slot_ts[k];
			}
			smp[k] = &sm[k];
		}
		pr->n_samples = ns;
		pr->samples = smp;
		prp[t] = pr;
	}
	free(e->smap);
	free(e->mmap);
	free(e->fmap);
	free(e->lmap);
	e->smap = e->mmap = e->fmap = e->lmap = NULL;
	return prp;
}

/* Resource attributes of @p as KeyValues (strings lent from @p). */
static OtResource *enc_resource(struct ot_enc *e, const struct model_profile *p)
{
	OtResource *r = enc_alloc(e, 1, sizeof(*r));
	OtKeyValue *kv = enc_alloc(e, p->attrs.n, sizeof(*kv));
	OtKeyValue **kvp = enc_alloc(e, p->attrs.n, sizeof(*kvp));
	OtAnyValue *av = enc_alloc(e, p->attrs.n, sizeof(*av));

	opentelemetry__proto__resource__v1__resource__init(r);
	for (size_t i = 0; i < p->attrs.n; i++) {
		const struct model_label *l = &p->attrs.v[i];

		opentelemetry__proto__common__v1__key_value__init(&kv[i]);
		opentelemetry__proto__common__v1__any_value__init(&av[i]);
		kv[i].key = p->strings.s[l->key];
		if (l->str) {
			av[i].value_case = ANY(STRING_VALUE);
			av[i].string_value = p->strings.s[l->str];
		} else {
			av[i].value_case = ANY(INT_VALUE);
			av[i].int_value = l->num;
		}
		kv[i].value = &av[i];
		kvp[i] = &kv[i];
	}
	r->n_attributes = p->attrs.n;
	r->attributes = kvp;
	return r;
}

static OtScope *enc_scope(struct ot_enc *e, const struct model_profile *p)
{
	OtScope *sc = enc_alloc(e, 1, sizeof(*sc));

	opentelemetry__proto__common__v1__instrumentation_scope__init(sc);
	sc->name = (char *)"profd";
	if (p->default_sample_type) {
		OtKeyValue *kv = enc_alloc(e, 1, sizeof(*kv));
		OtKeyValue **kvp = enc_alloc(e, 1, sizeof(*kvp));
		OtAnyValue *av = enc_alloc(e, 1, sizeof(*av));

		opentelemetry__proto__common__v1__key_value__init(kv);
		opentelemetry__proto__common__v1__any_value__init(av);
		kv->key = (char *)KEY_DEFAULT_TYPE;
		av->value_case = ANY(STRING_VALUE);
		av->string_value = p->strings.s[p->default_sample_type];
		kv->value = av;
		kvp[0] = kv;
		sc->n_attributes = 1;
		sc->attributes = kvp;
	}
	return sc;
}

/* Key identifying the resource attributes of @p (for sharing ResourceProfiles). */
static void enc_resource_key(const struct model_profile *p, struct buf *key)
{
	buf_reset(key);
	for (size_t i = 0; i < p->attrs.n; i++) {
		const struct model_label *l = &p->attrs.v[i];

		kb_u32(key, p->strings.len[l->key]);
		buf_add(key, p->strings.s[l->key], p->strings.len[l->key]);
		kb_u32(key, p->strings.len[l->str]);
		buf_add(key, p->strings.s[l->str], p->strings.len[l->str]);
		kb_u64(key, (uint64_t)l->num);
	}
	kb_u32(key, 0xffffffffu); /* never empty */
}

/* Builds the dictionary tables from the interned record keys. */
static OtDict *enc_dictionary(struct ot_enc *e)
{
	OtDict *d = enc_alloc(e, 1, sizeof(*d));
	ProtobufCBinaryData *st = enc_alloc(e, e->str.n, sizeof(*st));
	OtMapping *mp = enc_alloc(e, e->map.n, sizeof(*mp));
	OtMapping **mpp = enc_alloc(e, e->map.n, sizeof(*mpp));
	OtFunction *fn = enc_alloc(e, e->fn.n, sizeof(*fn));
	OtFunction **fnp = enc_alloc(e, e->fn.n, sizeof(*fnp));
	OtLocation *lc = enc_alloc(e, e->loc.n, sizeof(*lc));
	OtLocation **lcp = enc_alloc(e, e->loc.n, sizeof(*lcp));
	OtStack *sk = enc_alloc(e, e->stack.n, sizeof(*sk));
	OtStack **skp = enc_alloc(e, e->stack.n, sizeof(*skp));
	OtAttr *at = enc_alloc(e, e->attr.n, sizeof(*at));
	OtAttr **atp = enc_alloc(e, e->attr.n, sizeof(*atp));
	OtAnyValue *av = enc_alloc(e, e->attr.n, sizeof(*av));
	OtLink *lk = enc_alloc(e, e->link.n, sizeof(*lk));
	OtLink **lkp = enc_alloc(e, e->link.n, sizeof(*lkp));
	static uint8_t zero_ids[16];

	opentelemetry__proto__profiles__v1development__profiles_dictionary__init(d);
	for (uint32_t i = 0; i < e->str.n; i++) {
		st[i].data = (uint8_t *)e->str.s[i];
		st[i].len = e->str.len[i];
	}
	for (uint32_t i = 0; i < e->map.n; i++) {
		const char *k = e->map.s[i];

		opentelemetry__proto__profiles__v1development__mapping__init(&mp[i]);
		mpp[i] = &mp[i];
		if (!i)
			continue;
		mp[i].memory_start = kb_get64(&k);
		mp[i].memory_limit = kb_get64(&k);
		mp[i].file_offset = kb_get64(&k);
		mp[i].filename_strindex = (int32_t)kb_get32(&k);
		mp[i].n_attribute_indices = (size_t)(e->map.s[i] + e->map.len[i] - k) / 4;
		mp[i].attribute_indices = enc_alloc(e, mp[i].n_attribute_indices, sizeof(int32_t));
		for (size_t a = 0; a < mp[i].n_attribute_indices; a++)
			mp[i].attribute_indices[a] = (int32_t)kb_get32(&k);
	}
	for (uint32_t i = 0; i < e->fn.n; i++) {
		const char *k = e->fn.s[i];

		opentelemetry__proto__profiles__v1development__function__init(&fn[i]);
		fnp[i] = &fn[i];
		if (!i)
			continue;
		fn[i].name_strindex = (int32_t)kb_get32(&k);
		fn[i].system_name_strindex = (int32_t)kb_get32(&k);
		fn[i].filename_strindex = (int32_t)kb_get32(&k);
		fn[i].start_line = (int64_t)kb_get64(&k);
	}
	for (uint32_t i = 0; i < e->loc.n; i++) {
		const char *k = e->loc.s[i];
		uint32_t nl;
		OtLine *ln, **lnp;

		opentelemetry__proto__profiles__v1development__location__init(&lc[i]);
		lcp[i] = &lc[i];
		if (!i)
			continue;
		lc[i].mapping_index = (int32_t)kb_get32(&k);
		lc[i].address = kb_get64(&k);
		nl = kb_get32(&k);
		ln = enc_alloc(e, nl, sizeof(*ln));
		lnp = enc_alloc(e, nl, sizeof(*lnp));
		for (uint32_t j = 0; j < nl; j++) {
			opentelemetry__proto__profiles__v1development__line__init(&ln[j]);
			ln[j].function_index = (int32_t)kb_get32(&k);
			ln[j].line = (int64_t)kb_get64(&k);
			ln[j].column = (int64_t)kb_get64(&k);
			lnp[j] = &ln[j];
		}
		lc[i].n_lines = nl;
		lc[i].lines = lnp;
		lc[i].n_attribute_indices = (size_t)(e->loc.s[i] + e->loc.len[i] - k) / 4;
		lc[i].attribute_indices = enc_alloc(e, lc[i].n_attribute_indices, sizeof(int32_t));
		for (size_t a = 0; a < lc[i].n_attribute_indices; a++)
			lc[i].attribute_indices[a] = (int32_t)kb_get32(&k);
	}
	for (uint32_t i = 0; i < e->stack.n; i++) {
		const char *k = e->stack.s[i];

		opentelemetry__proto__profiles__v1development__stack__init(&sk[i]);
		skp[i] = &sk[i];
		sk[i].n_location_indices = e->stack.len[i] / 4;
		sk[i].location_indices = enc_alloc(e, sk[i].n_location_indices, sizeof(int32_t));
		for (size_t a = 0; a < sk[i].n_location_indices; a++)
			sk[i].location_indices[a] = (int32_t)kb_get32(&k);
	}
	for (uint32_t i = 0; i < e->attr.n; i++) {
		const char *k = e->attr.s[i];
		uint32_t kind;

		opentelemetry__proto__profiles__v1development__key_value_and_unit__init(&at[i]);
		atp[i] = &at[i];
		if (!i)
			continue;
		opentelemetry__proto__common__v1__any_value__init(&av[i]);
		at[i].value = &av[i];
		at[i].key_strindex = (int32_t)kb_get32(&k);
		at[i].unit_strindex = (int32_t)kb_get32(&k);
		kind = kb_get32(&k);
		if (kind == ATTR_STRS) {
			uint32_t n = kb_get32(&k);
			OtArrayValue *arr = enc_alloc(e, 1, sizeof(*arr));
			OtAnyValue *el = enc_alloc(e, n, sizeof(*el));
			OtAnyValue **elp = enc_alloc(e, n, sizeof(*elp));

			opentelemetry__proto__common__v1__array_value__init(arr);
			for (uint32_t j = 0; j < n; j++) {
				opentelemetry__proto__common__v1__any_value__init(&el[j]);
				el[j].value_case = ANY(STRING_VALUE);
				el[j].string_value = e->str.s[kb_get32(&k)];
				elp[j] = &el[j];
			}
			arr->n_values = n;
			arr->values = elp;
			av[i].value_case = ANY(ARRAY_VALUE);
			av[i].array_value = arr;
			continue;
		}
		uint64_t v = kb_get64(&k);

		if (kind == ATTR_STR) {
			av[i].value_case = ANY(STRING_VALUE);
			av[i].string_value = e->str.s[v];
		} else if (kind == ATTR_INT) {
			av[i].value_case = ANY(INT_VALUE);
			av[i].int_value = (int64_t)v;
		} else {
			av[i].value_case = ANY(BOOL_VALUE);
			av[i].bool_value = v != 0;
		}
	}
	for (uint32_t i = 0; i < e->link.n; i++) {
		opentelemetry__proto__profiles__v1development__link__init(&lk[i]);
		lkp[i] = &lk[i];
		if (!i) {
			/* Zero entry with fixed-length ids (formats.md 1.4.1). */
			lk[i].trace_id.data = zero_ids;
			lk[i].trace_id.len = 16;
			lk[i].span_id.data = zero_ids;
			lk[i].span_id.len = 8;
			continue;
		}
		lk[i].trace_id.data = (uint8_t *)e->link.s[i];
		lk[i].trace_id.len = 16;
		lk[i].span_id.data = (uint8_t *)e->link.s[i] + 16;
		lk[i].span_id.len = 8;
	}
	d->n_string_table = e->str.n;
	d->string_table = st;
	d->n_mapping_table = e->map.n;
	d->mapping_table = mpp;
	d->n_function_table = e->fn.n;
	d->function_table = fnp;
	d->n_location_table = e->loc.n;
	d->location_table = lcp;
	d->n_stack_table = e->stack.n;
	d->stack_table = skp;
	d->n_attribute_table = e->attr.n;
	d->attribute_table = atp;
	d->n_link_table = e->link.n;
	d->link_table = lkp;
	return d;
}

int fmt_otlp_encode(const struct model_profile *const *profiles, size_t n, struct buf *out)
{
	OtRequest req =
		OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT;
	struct ot_enc e;
	struct strtab rkeys;
	uint32_t *group = xcalloc(n + 1, sizeof(*group));
	size_t ngroups = 0, size;
	uint8_t *packed;
	int rc;

	memset(&e, 0, sizeof(e));
	strtab_init(&e.str);
	strtab_init(&e.map);
	strtab_init(&e.fn);
	strtab_init(&e.loc);
	strtab_init(&e.stack);
	strtab_init(&e.attr);
	strtab_init(&e.link);
	strtab_init(&rkeys);
	buf_init(&e.key, 0);

	/* Profiles with identical attrs share one ResourceProfiles. */
	for (size_t i = 0; i < n; i++) {
		enc_resource_key(profiles[i], &e.key);
		group[i] = enc_rec(&rkeys, &e.key) - 1;
		ngroups = PROF_MAX(ngroups, group[i] + 1);
	}
	OtResourceProfiles *rps = enc_alloc(&e, ngroups, sizeof(*rps));
	OtResourceProfiles **rpp = enc_alloc(&e, ngroups, sizeof(*rpp));

	for (size_t g = 0; g < ngroups; g++) {
		size_t members = 0, k = 0;
		OtScopeProfiles *sps, **spp;

		for (size_t i = 0; i < n; i++)
			members += group[i] == g;
		sps = enc_alloc(&e, members, sizeof(*sps));
		spp = enc_alloc(&e, members, sizeof(*spp));
		opentelemetry__proto__profiles__v1development__resource_profiles__init(&rps[g]);
		for (size_t i = 0; i < n; i++) {
			if (group[i] != g)
				continue;
			if (k == 0)
				rps[g].resource = enc_resource(&e, profiles[i]);
			opentelemetry__proto__profiles__v1development__scope_profiles__init(
				&sps[k]);
			sps[k].scope = enc_scope(&e, profiles[i]);
			sps[k].n_profiles = profiles[i]->sample_types.n;
			sps[k].profiles = enc_profiles(&e, profiles[i]);
			spp[k] = &sps[k];
			k++;
		}
		rps[g].n_scope_profiles = members;
		rps[g].scope_profiles = spp;
		rpp[g] = &rps[g];
	}
	if (e.str.n > INT32_MAX || e.map.n > INT32_MAX || e.fn.n > INT32_MAX ||
	    e.loc.n > INT32_MAX || e.stack.n > INT32_MAX || e.attr.n > INT32_MAX) {
		rc = -PROF_ETOOBIG;
		goto out;
	}
	req.n_resource_profiles = ngroups;
	req.resource_profiles = rpp;
	req.dictionary = enc_dictionary(&e);
	size = protobuf_c_message_get_packed_size(&req.base);
	packed = xmalloc(size ? size : 1);
	protobuf_c_message_pack(&req.base, packed);
	rc = buf_add(out, packed, size);
	free(packed);
out:
	for (size_t i = 0; i < e.allocs.n; i++)
		free(e.allocs.v[i]);
	VEC_FREE(&e.allocs);
	VEC_FREE(&e.ids);
	VEC_FREE(&e.stk);
	VEC_FREE(&e.slots);
	VEC_FREE(&e.slot_attrs);
	VEC_FREE(&e.members);
	buf_release(&e.key);
	strtab_release(&e.str);
	strtab_release(&e.map);
	strtab_release(&e.fn);
	strtab_release(&e.loc);
	strtab_release(&e.stack);
	strtab_release(&e.attr);
	strtab_release(&e.link);
	strtab_release(&rkeys);
	free(group);
	return rc;
}
