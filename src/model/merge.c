// SPDX-License-Identifier: Apache-2.0
/*
 * merge.c - merge profiles into one; see merge.h for the rules.
 *
 * Dictionary entries of every input are imported lazily and deduplicated
 * by value: strings by interning, functions by model_function_intern,
 * mappings, locations, links and stacks by the bytes of their translated
 * fields used as keys of a strtab (its dense ids are the dedup ids).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/merge.h"

/* Named vector types so helpers can take them as parameters. */
struct mg_u32s {
	uint32_t *v;
	size_t n, cap;
};
struct mg_labels {
	struct model_label *v;
	size_t n, cap;
};

struct mg_input {
	const struct model_profile *p;
	uint32_t *smap, *mmap, *fmap, *lmap, *kmap; /* input index -> out index + 1 */
	uint32_t *col;				    /* sample type -> out column */
	VEC(struct model_label) extra;		    /* attrs not common to all: labels */
};

struct mg_ctx {
	struct model_profile *out;
	struct strtab mapkeys, lockeys, linkkeys, stackkeys;
	VEC(uint32_t) map_of_key, loc_of_key, link_of_key; /* strtab id -> out index */
	VEC(uint32_t) stack_of_key;			   /* strtab id -> stack offset */
	struct buf key;
	struct mg_u32s locs, locs2;
	struct mg_labels labels, labels2;
};

static void kb_add(struct buf *b, const void *v, size_t n)
{
	buf_add(b, v, n);
}

static uint32_t mg_str(struct mg_ctx *c, struct mg_input *in, uint32_t id)
{
	if (!id)
		return 0;
	if (!in->smap[id])
		in->smap[id] =
			model_intern_n(c->out, in->p->strings.s[id], in->p->strings.len[id]) + 1;
	return in->smap[id] - 1;
}

/* Finds or adds the record keyed by c->key; *is_new when added (index in @vec to fill). */
static uint32_t mg_key(struct strtab *t, const struct buf *key, bool *is_new)
{
	uint32_t before = t->n, id = strtab_intern(t, key->p ? key->p : "", key->len);

	*is_new = t->n != before;
	return id;
}

static uint32_t mg_mapping(struct mg_ctx *c, struct mg_input *in, uint32_t mi)
{
	struct model_mapping m;
	bool is_new;
	uint32_t id;

	if (!mi)
		return 0;
	if (in->mmap[mi])
		return in->mmap[mi] - 1;
	m = in->p->mappings.v[mi];
	m.filename = mg_str(c, in, m.filename);
	m.build_id = mg_str(c, in, m.build_id);
	buf_reset(&c->key);
	kb_add(&c->key, &m.memory_start, sizeof(m.memory_start));
	kb_add(&c->key, &m.memory_limit, sizeof(m.memory_limit));
	kb_add(&c->key, &m.file_offset, sizeof(m.file_offset));
	kb_add(&c->key, &m.filename, sizeof(m.filename));
	kb_add(&c->key, &m.build_id, sizeof(m.build_id));
	uint8_t flags[4] = { m.has_functions, m.has_filenames, m.has_line_numbers,
			     m.has_inline_frames };
	kb_add(&c->key, flags, sizeof(flags));
	id = mg_key(&c->mapkeys, &c->key, &is_new);
	if (is_new)
		VEC_PUSH(&c->map_of_key, model_mapping_add(c->out, &m));
	in->mmap[mi] = c->map_of_key.v[id] + 1;
	return c->map_of_key.v[id];
}

static uint32_t mg_function(struct mg_ctx *c, struct mg_input *in, uint32_t fi)
{
	const struct model_function *f = &in->p->functions.v[fi];

	if (!fi)
		return 0;
	if (!in->fmap[fi])
		in->fmap[fi] = model_function_intern(c->out, mg_str(c, in, f->name),
						     mg_str(c, in, f->system_name),
						     mg_str(c, in, f->filename), f->start_line) +
			       1;
	return in->fmap[fi] - 1;
}

static uint32_t mg_location(struct mg_ctx *c, struct mg_input *in, uint32_t li)
{
	const struct model_location *l = &in->p->locations.v[li];
	VEC(struct model_line) lines = { 0 };
	uint32_t mapping, frame_type, id;
	uint8_t folded = l->is_folded;
	bool is_new;

	if (in->lmap[li])
		return in->lmap[li] - 1;
	mapping = mg_mapping(c, in, l->mapping);
	frame_type = mg_str(c, in, l->frame_type);
	VEC_RESERVE(&lines, l->nlines);
	for (uint32_t k = 0; k < l->nlines; k++) {
		struct model_line ln = in->p->lines.v[l->line_off + k];

		ln.function = mg_function(c, in, ln.function);
		lines.v[lines.n++] = ln;
	}
	buf_reset(&c->key);
	kb_add(&c->key, &mapping, sizeof(mapping));
	kb_add(&c->key, &l->address, sizeof(l->address));
	kb_add(&c->key, &frame_type, sizeof(frame_type));
	kb_add(&c->key, &folded, sizeof(folded));
	for (size_t k = 0; k < lines.n; k++) {
		kb_add(&c->key, &lines.v[k].function, sizeof(lines.v[k].function));
		kb_add(&c->key, &lines.v[k].line, sizeof(lines.v[k].line));
		kb_add(&c->key, &lines.v[k].column, sizeof(lines.v[k].column));
	}
	id = mg_key(&c->lockeys, &c->key, &is_new);
	if (is_new) {
		uint32_t idx =
			model_location_add(c->out, mapping, l->address, lines.v, (uint32_t)lines.n);

		c->out->locations.v[idx].is_folded = l->is_folded;
		c->out->locations.v[idx].frame_type = frame_type;
		VEC_PUSH(&c->loc_of_key, idx);
	}
	VEC_FREE(&lines);
	in->lmap[li] = c->loc_of_key.v[id] + 1;
	return c->loc_of_key.v[id];
}

static uint32_t mg_link(struct mg_ctx *c, struct mg_input *in, uint32_t ki)
{
	const struct model_link *k = &in->p->links.v[ki];
	bool is_new;
	uint32_t id;

	if (!ki)
		return 0;
	if (in->kmap[ki])
		return in->kmap[ki] - 1;
	buf_reset(&c->key);
	kb_add(&c->key, k, sizeof(*k));
	id = mg_key(&c->linkkeys, &c->key, &is_new);
	if (is_new) {
		VEC_PUSH(&c->out->links, *k);
		VEC_PUSH(&c->link_of_key, (uint32_t)c->out->links.n - 1);
	}
	in->kmap[ki] = c->link_of_key.v[id] + 1;
	return c->link_of_key.v[id];
}

/* Translated stack of sample @s into @locs. */
static void mg_stack(struct mg_ctx *c, struct mg_input *in, const struct model_sample *s,
		     struct mg_u32s *locs)
{
	locs->n = 0;
	VEC_RESERVE(locs, s->nstack);
	for (uint32_t k = 0; k < s->nstack; k++)
		locs->v[locs->n++] = mg_location(c, in, in->p->stack_locs.v[s->stack_off + k]);
}

/* Translated labels of sample @s, then the input's non-common attributes. */
static void mg_labels(struct mg_ctx *c, struct mg_input *in, const struct model_sample *s,
		      struct mg_labels *labels)
{
	labels->n = 0;
	for (uint32_t k = 0; k < s->nlabels; k++) {
		struct model_label l = in->p->labels.v[s->label_off + k];

		l.key = mg_str(c, in, l.key);
		l.str = mg_str(c, in, l.str);
		l.num_unit = mg_str(c, in, l.num_unit);
		VEC_PUSH(labels, l);
	}
	for (size_t k = 0; k < in->extra.n; k++)
		VEC_PUSH(labels, in->extra.v[k]);
}

static bool label_eq(const struct model_label *a, const struct model_label *b)
{
	return a->key == b->key && a->str == b->str && a->num == b->num &&
	       a->num_unit == b->num_unit;
}

/* Out stack range of c->locs, shared by equal stacks. */
static uint32_t mg_stack_off(struct mg_ctx *c)
{
	bool is_new;
	uint32_t id;

	buf_reset(&c->key);
	kb_add(&c->key, c->locs.v, c->locs.n * sizeof(*c->locs.v));
	kb_add(&c->key, "s", 1); /* never the empty key */
	id = mg_key(&c->stackkeys, &c->key, &is_new);
	if (is_new) {
		while (c->stack_of_key.n < id) /* id 0 ("") is never used */
			VEC_PUSH(&c->stack_of_key, 0);
		VEC_PUSH(&c->stack_of_key, model_stack_add(c->out, c->locs.v, (uint32_t)c->locs.n));
	}
	return c->stack_of_key.v[id];
}

/* Does input @b line up sample by sample with input @a (see merge.h)? */
static bool mg_aligned(struct mg_ctx *c, struct mg_input *a, struct mg_input *b)
{
	if (a->p->samples.n != b->p->samples.n)
		return false;
	for (size_t i = 0; i < a->p->samples.n; i++) {
		const struct model_sample *sa = &a->p->samples.v[i], *sb = &b->p->samples.v[i];

		if (sa->nstack != sb->nstack || sa->timestamp_ns != sb->timestamp_ns ||
		    sa->nlabels + a->extra.n != sb->nlabels + b->extra.n ||
		    mg_link(c, a, sa->link) != mg_link(c, b, sb->link))
			return false;
		mg_stack(c, a, sa, &c->locs);
		mg_stack(c, b, sb, &c->locs2);
		if (c->locs.n && memcmp(c->locs.v, c->locs2.v, c->locs.n * sizeof(*c->locs.v)))
			return false;
		mg_labels(c, a, sa, &c->labels);
		mg_labels(c, b, sb, &c->labels2);
		for (size_t k = 0; k < c->labels.n; k++)
			if (!label_eq(&c->labels.v[k], &c->labels2.v[k]))
				return false;
	}
	return true;
}

/* Emits the samples of group in[g0..g1) into the output. */
static int mg_emit(struct mg_ctx *c, struct mg_input *in, size_t g0, size_t g1,
		   struct prof_err *err)
{
	struct model_profile *out = c->out;
	int64_t *vals = xcalloc(out->sample_types.n + 1, sizeof(*vals));
	const struct model_profile *p0 = in[g0].p;

	for (size_t i = 0; i < p0->samples.n; i++) {
		const struct model_sample *s = &p0->samples.v[i];
		uint32_t off;

		memset(vals, 0, out->sample_types.n * sizeof(*vals));
		for (size_t g = g0; g < g1; g++) {
			const struct model_profile *p = in[g].p;

			for (size_t t = 0; t < p->sample_types.n; t++)
				vals[in[g].col[t]] = p->values.v[p->samples.v[i].value_off + t];
		}
		mg_stack(c, &in[g0], s, &c->locs);
		mg_labels(c, &in[g0], s, &c->labels);
		if (out->stack_locs.n + c->locs.n > UINT32_MAX ||
		    out->labels.n + c->labels.n > UINT32_MAX || out->samples.n >= UINT32_MAX) {
			free(vals);
			return prof_err_set(
				err, -PROF_ETOOBIG, -1,
				"merge: more than 2^32 samples, stack entries or labels");
		}
		off = mg_stack_off(c);
		model_sample_add(out, off, (uint32_t)c->locs.n, vals, c->labels.v,
				 (uint32_t)c->labels.n, s->timestamp_ns,
				 mg_link(c, &in[g0], s->link));
	}
	free(vals);
	return 0;
}

/* Is attribute @a of input @p present, equal, in profile @q? */
static bool attr_in(const struct model_profile *p, const struct model_label *a,
		    const struct model_profile *q)
{
	for (size_t k = 0; k < q->attrs.n; k++) {
		const struct model_label *b = &q->attrs.v[k];

		if (a->num == b->num && p->strings.len[a->key] == q->strings.len[b->key] &&
		    p->strings.len[a->str] == q->strings.len[b->str] &&
		    !memcmp(p->strings.s[a->key], q->strings.s[b->key], p->strings.len[a->key]) &&
		    !memcmp(p->strings.s[a->str], q->strings.s[b->str], p->strings.len[a->str]))
			return true;
	}
	return false;
}

static void mg_header(struct mg_ctx *c, struct mg_input *in, size_t n)
{
	struct model_profile *out = c->out;
	int64_t start = 0, end = 0;

	for (size_t i = 0; i < n; i++) {
		const struct model_profile *p = in[i].p;

		if (!out->period_type.type && !out->period_type.unit &&
		    (p->period_type.type || p->period_type.unit)) {
			out->period_type.type = mg_str(c, &in[i], p->period_type.type);
			out->period_type.unit = mg_str(c, &in[i], p->period_type.unit);
			out->period = p->period;
		}
		if (!out->default_sample_type)
			out->default_sample_type = mg_str(c, &in[i], p->default_sample_type);
		if (!out->drop_frames)
			out->drop_frames = mg_str(c, &in[i], p->drop_frames);
		if (!out->keep_frames)
			out->keep_frames = mg_str(c, &in[i], p->keep_frames);
		if (!out->name)
			out->name = mg_str(c, &in[i], p->name);
		if (p->time_ns) {
			int64_t e;

			if (!start || p->time_ns < start)
				start = p->time_ns;
			/* Input values: saturate instead of overflowing. */
			if (__builtin_add_overflow(p->time_ns, PROF_MAX(p->duration_ns, 0), &e))
				e = INT64_MAX;
			if (e > end)
				end = e;
		}
		for (size_t k = 0; k < p->comments.n; k++) {
			uint32_t id = mg_str(c, &in[i], p->comments.v[k]);
			bool dup = false;

			for (size_t j = 0; j < out->comments.n && !dup; j++)
				dup = out->comments.v[j] == id;
			if (!dup)
				VEC_PUSH(&out->comments, id);
		}
		/* Attributes: common to all inputs, else labels of this input's samples. */
		for (size_t k = 0; k < p->attrs.n; k++) {
			struct model_label l = p->attrs.v[k];
			bool common = true;

			for (size_t j = 0; j < n && common; j++)
				common = attr_in(p, &l, in[j].p);
			l.key = mg_str(c, &in[i], l.key);
			l.str = mg_str(c, &in[i], l.str);
			l.num_unit = mg_str(c, &in[i], l.num_unit);
			if (!common)
				VEC_PUSH(&in[i].extra, l);
			else if (i == 0)
				VEC_PUSH(&out->attrs, l);
		}
	}
	out->time_ns = start;
	if (end <= start || __builtin_sub_overflow(end, start, &out->duration_ns))
		out->duration_ns = 0;
	if (n == 1) {
		out->time_ns = in[0].p->time_ns;
		out->duration_ns = in[0].p->duration_ns;
	}
}

int model_profile_merge(const struct model_profile *const *inputs, size_t n,
			struct model_profile *out, struct prof_err *err)
{
	struct mg_input *in = xcalloc(n + 1, sizeof(*in));
	struct mg_ctx c;
	size_t g0 = 0;
	int rc = 0;

	memset(&c, 0, sizeof(c));
	c.out = out;
	strtab_init(&c.mapkeys);
	strtab_init(&c.lockeys);
	strtab_init(&c.linkkeys);
	strtab_init(&c.stackkeys);
	VEC_PUSH(&c.map_of_key, 0);
	VEC_PUSH(&c.loc_of_key, 0);
	VEC_PUSH(&c.link_of_key, 0);
	buf_init(&c.key, 0);
	for (size_t i = 0; i < n; i++) {
		const struct model_profile *p = inputs[i];

		in[i].p = p;
		in[i].smap = xcalloc(p->strings.n + 1, sizeof(uint32_t));
		in[i].mmap = xcalloc(p->mappings.n + 1, sizeof(uint32_t));
		in[i].fmap = xcalloc(p->functions.n + 1, sizeof(uint32_t));
		in[i].lmap = xcalloc(p->locations.n + 1, sizeof(uint32_t));
		in[i].kmap = xcalloc(p->links.n + 1, sizeof(uint32_t));
		in[i].col = xcalloc(p->sample_types.n + 1, sizeof(uint32_t));
		/* Columns: the union of (type, unit) in order of first appearance. */
		for (size_t t = 0; t < p->sample_types.n; t++) {
			struct model_value_type vt = {
				mg_str(&c, &in[i], p->sample_types.v[t].type),
				mg_str(&c, &in[i], p->sample_types.v[t].unit),
			};
			size_t col = 0;

			while (col < out->sample_types.n &&
			       (out->sample_types.v[col].type != vt.type ||
				out->sample_types.v[col].unit != vt.unit))
				col++;
			if (col == out->sample_types.n)
				VEC_PUSH(&out->sample_types, vt);
			in[i].col[t] = (uint32_t)col;
		}
	}
	mg_header(&c, in, n);

	/* Groups of inputs that line up (merge.h), each emitted once. */
	uint8_t *used = xcalloc(out->sample_types.n + 1, 1);

	for (size_t i = 0; i <= n && !rc; i++) {
		bool joins = i < n && i > g0;

		if (joins) {
			for (size_t t = 0; t < in[i].p->sample_types.n && joins; t++)
				joins = !used[in[i].col[t]];
			joins = joins && mg_aligned(&c, &in[g0], &in[i]);
		}
		if (i > g0 && !joins) {
			rc = mg_emit(&c, in, g0, i, err);
			g0 = i;
			memset(used, 0, out->sample_types.n);
		}
		for (size_t t = 0; i < n && t < in[i].p->sample_types.n; t++)
			used[in[i].col[t]] = 1;
	}
	free(used);
	if (!rc)
		rc = model_profile_validate(out, err);

	for (size_t i = 0; i < n; i++) {
		free(in[i].smap);
		free(in[i].mmap);
		free(in[i].fmap);
		free(in[i].lmap);
		free(in[i].kmap);
		free(in[i].col);
		VEC_FREE(&in[i].extra);
	}
	free(in);
	strtab_release(&c.mapkeys);
	strtab_release(&c.lockeys);
	strtab_release(&c.linkkeys);
	strtab_release(&c.stackkeys);
	VEC_FREE(&c.map_of_key);
	VEC_FREE(&c.loc_of_key);
	VEC_FREE(&c.link_of_key);
	VEC_FREE(&c.stack_of_key);
	VEC_FREE(&c.locs);
	VEC_FREE(&c.locs2);
	VEC_FREE(&c.labels);
	VEC_FREE(&c.labels2);
	buf_release(&c.key);
	return rc;
}
