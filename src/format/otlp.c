// SPDX-License-Identifier: Apache-2.0
/*
 * otlp.c - OTLP profiles (v1development, v1.10/v1.11 wire layout;
 * docs/formats.md "OTLP profiles messages", "OTLP attributes") protobuf
 * decoder (the encoder is otlp_encode.c).
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
 * `pprof.scope.default_sample_type` (semantic conventions, docs/formats.md "OTLP attributes").
 * Other mapping/location attributes are dropped (the model has no place
 * for them); resource, scope and profile attributes go to model attrs.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "format/otlp_int.h"
#include "format/pbcheck.h"

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
