// SPDX-License-Identifier: Apache-2.0
/*
 * otlp_encode.c - the OTLP profiles protobuf encoder (fmt_otlp_encode,
 * otlp.h); the decoder is otlp.c.
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
#include "format/otlp_int.h"
#include "format/pbcheck.h"

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

	/* Profile attributes: pprof fields with no OTLP home (docs/formats.md "OTLP attributes"). */
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
			/* Zero entry with fixed-length ids (docs/formats.md "OTLP profiles messages"). */
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
