// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_direct_convert.c - the convert phase of the direct OTLP decoder
 * (otlp_direct.c parses): the flat arrays of one request to model
 * profiles, the same steps in the same order as the protobuf-c path in
 * otlp.c (so strings get the same ids and the model is identical), with
 * lazy per-profile translation of dictionary entries, or per request for
 * the store (fmt_otlp_decode_shared); content keys of pending stacks
 * straight from the wire; and the replay pass that gives a request that
 * parses but does not convert otlp.c's first error.
 */
#include "base/buf.h"
#include "base/compat.h"
#include "base/mem.h"
#include "format/otlp.h"
#include "format/otlp_direct_int.h"
#include "model/stackkey.h"

#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb-c.h"

/* ---- od_convert (mirrors otlp.c step for step) -------------------------------- */

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

bool od_c_stack(struct dd *d, int32_t si, uint32_t *off, uint32_t *n)
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
 * head hashes a model location (store/head_dict.c xh_location).
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
		} else if (s->stack && !od_c_stack(d, s->stack, &off, &n)) {
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

bool od_convert(struct dd *d, size_t n, struct fmt_otlp_batch *out)
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
int od_replay(struct dd *d, size_t n, struct prof_err *err)
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
