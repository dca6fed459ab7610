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
	/*
	 * Takes part in the attributes rule. Inputs without samples describe
	 * nothing, so they neither make an attribute uncommon nor add one (the
	 * empty profile is the identity) -- unless no input has samples.
	 */
	bool counts;
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

/*
 * The key of attribute @a of @p for counting in how many inputs it occurs:
 * key and string value bytes and the number (not the unit), as inputs
 * compare attributes.
 */
static void attr_key(const struct model_profile *p, const struct model_label *a, struct buf *b)
{
	buf_reset(b);
	buf_add(b, "a", 1); /* never the empty key */
	buf_add(b, &p->strings.len[a->key], sizeof(uint32_t));
	buf_add(b, p->strings.s[a->key], p->strings.len[a->key]);
	buf_add(b, &p->strings.len[a->str], sizeof(uint32_t));
	buf_add(b, p->strings.s[a->str], p->strings.len[a->str]);
	buf_add(b, &a->num, sizeof(a->num));
}

static void mg_header(struct mg_ctx *c, struct mg_input *in, size_t n)
{
	struct model_profile *out = c->out;
	int64_t start = 0, end = 0;
	size_t timed = 0, last_timed = 0, first_attrs = SIZE_MAX, counting = 0;
	bool any = false;
	struct strtab akeys; /* attribute -> id; seen[id]: inputs having it, last[id]: last one */
	VEC(size_t) seen = { 0 };
	VEC(size_t) last = { 0 };

	for (size_t i = 0; i < n; i++)
		any = any || in[i].p->samples.n;
	strtab_init(&akeys);
	for (size_t i = 0; i < n; i++) {
		in[i].counts = !any || in[i].p->samples.n;
		if (!in[i].counts)
			continue;
		if (first_attrs == SIZE_MAX)
			first_attrs = i;
		counting++;
		/* Attributes common to all counting inputs: occurrences counted once per input. */
		for (size_t k = 0; k < in[i].p->attrs.n; k++) {
			uint32_t id;

			attr_key(in[i].p, &in[i].p->attrs.v[k], &c->key);
			id = strtab_intern(&akeys, c->key.p, c->key.len);
			while (seen.n <= id) {
				VEC_PUSH(&seen, 0);
				VEC_PUSH(&last, SIZE_MAX);
			}
			if (last.v[id] != i) {
				last.v[id] = i;
				seen.v[id]++;
			}
		}
	}
	for (size_t i = 0; i < n; i++) {
		const struct model_profile *p = in[i].p;

		/* Period with its type, from the first input that has one; else the first period. */
		if (!out->period_type.type && !out->period_type.unit &&
		    (p->period_type.type || p->period_type.unit)) {
			out->period_type.type = mg_str(c, &in[i], p->period_type.type);
			out->period_type.unit = mg_str(c, &in[i], p->period_type.unit);
			out->period = p->period;
		} else if (!out->period_type.type && !out->period_type.unit && !out->period) {
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
		if (p->time_ns || p->duration_ns) {
			timed++;
			last_timed = i;
		}
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
		model_skipped_add(&out->skipped, &p->skipped);
		for (size_t k = 0; k < p->comments.n; k++) {
			uint32_t id = mg_str(c, &in[i], p->comments.v[k]);
			bool dup = false;

			for (size_t j = 0; j < out->comments.n && !dup; j++)
				dup = out->comments.v[j] == id;
			if (!dup)
				VEC_PUSH(&out->comments, id);
		}
		/* Attributes: common to all inputs, else labels of this input's samples. */
		for (size_t k = 0; k < p->attrs.n && in[i].counts; k++) {
			struct model_label l = p->attrs.v[k];
			bool common;

			attr_key(p, &l, &c->key);
			common = seen.v[strtab_find(&akeys, c->key.p, c->key.len)] == counting;
			l.key = mg_str(c, &in[i], l.key);
			l.str = mg_str(c, &in[i], l.str);
			l.num_unit = mg_str(c, &in[i], l.num_unit);
			if (!common)
				VEC_PUSH(&in[i].extra, l);
			else if (i == first_attrs)
				VEC_PUSH(&out->attrs, l);
		}
	}
	strtab_release(&akeys);
	VEC_FREE(&seen);
	VEC_FREE(&last);
	out->time_ns = start;
	if (end <= start || __builtin_sub_overflow(end, start, &out->duration_ns))
		out->duration_ns = 0;
	if (timed == 1) { /* one timed input (the others empty of time): its times as they are */
		out->time_ns = in[last_timed].p->time_ns;
		out->duration_ns = in[last_timed].p->duration_ns;
	}
}

int model_profile_merge(const struct model_profile *const *inputs, size_t n,
			struct model_profile *out, struct prof_err *err)
{
	struct mg_input *in = xcalloc(n + 1, sizeof(*in));
	struct mg_ctx c;
	struct strtab colkeys; /* (type, unit) of the output -> column + 1 */
	VEC(uint32_t) group_cols = { 0 };
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
	strtab_init(&colkeys);
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
			char k[1 + sizeof(vt)];
			uint32_t before = colkeys.n, id;

			k[0] = 'c'; /* never the empty key */
			memcpy(k + 1, &vt, sizeof(vt));
			id = strtab_intern(&colkeys, k, sizeof(k));
			if (colkeys.n != before)
				VEC_PUSH(&out->sample_types, vt);
			in[i].col[t] = id - 1; /* ids 1.. in order of first appearance */
		}
	}
	strtab_release(&colkeys);
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
			/* Clear the group's columns only: many inputs with many columns stay linear. */
			for (size_t k = 0; k < group_cols.n; k++)
				used[group_cols.v[k]] = 0;
			group_cols.n = 0;
		}
		for (size_t t = 0; i < n && t < in[i].p->sample_types.n; t++) {
			used[in[i].col[t]] = 1;
			VEC_PUSH(&group_cols, in[i].col[t]);
		}
	}
	free(used);
	VEC_FREE(&group_cols);
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

/* ---- over time -------------------------------------------------------------- */

bool model_value_type_is_gauge(const char *type)
{
	static const char *const gauges[] = { "inuse_space", "inuse_objects", "goroutine",
					      "goroutines", "thread" };

	for (size_t i = 0; type && i < PROF_ARRAY_SIZE(gauges); i++)
		if (!strcmp(type, gauges[i]))
			return true;
	return false;
}

/* @s / @k (k > 0) rounded to nearest, halves away from zero. */
static int64_t div_round(int64_t s, int64_t k)
{
	int64_t q = s / k, r = s % k;
	uint64_t ar = r < 0 ? 0 - (uint64_t)r : (uint64_t)r;

	if (ar * 2 >= (uint64_t)k)
		q += s < 0 ? -1 : 1;
	return q;
}

/* Column of @out with the type and unit strings of sample type @t of @p, or -1. */
static long mg_column(const struct model_profile *out, const struct model_profile *p, size_t t)
{
	const char *type = model_str(p, p->sample_types.v[t].type);
	const char *unit = model_str(p, p->sample_types.v[t].unit);

	for (size_t c = 0; c < out->sample_types.n; c++)
		if (!strcmp(model_str(out, out->sample_types.v[c].type), type) &&
		    !strcmp(model_str(out, out->sample_types.v[c].unit), unit))
			return (long)c;
	return -1;
}

int model_profile_merge_over_time(const struct model_profile *const *inputs, size_t n,
				  struct model_profile *out, struct prof_err *err)
{
	size_t nt;
	int64_t *snaps;
	bool average = false;
	struct strtab keys;
	struct buf key;
	VEC(struct model_sample) samples = { 0 };
	VEC(int64_t) values = { 0 };
	VEC(struct model_label) labels = { 0 };
	int rc = model_profile_merge(inputs, n, out, err);

	if (rc)
		return rc;
	nt = out->sample_types.n;
	snaps = xcalloc(nt + 1, sizeof(*snaps));
	/* Snapshots per column: the inputs that carry it (an empty profile carries none). */
	for (size_t i = 0; i < n; i++)
		for (size_t t = 0; t < inputs[i]->sample_types.n; t++) {
			long c = mg_column(out, inputs[i], t);

			if (c >= 0)
				snaps[c]++;
		}
	for (size_t c = 0; c < nt; c++) {
		if (!model_value_type_is_gauge(model_str(out, out->sample_types.v[c].type)))
			snaps[c] = 1;
		average = average || snaps[c] > 1;
	}
	if (!average) {
		free(snaps);
		return 0;
	}
	/* One sample per (stack, labels, link, timestamp), values summed, then gauges divided. */
	strtab_init(&keys);
	buf_init(&key, 0);
	for (size_t i = 0; i < out->samples.n; i++) {
		const struct model_sample *s = &out->samples.v[i];
		uint32_t before = keys.n, id;

		buf_reset(&key);
		buf_add(&key, "k", 1); /* never the empty key (id 0) */
		buf_add(&key, &s->stack_off, sizeof(s->stack_off));
		buf_add(&key, &s->nstack, sizeof(s->nstack));
		buf_add(&key, &s->link, sizeof(s->link));
		buf_add(&key, &s->timestamp_ns, sizeof(s->timestamp_ns));
		for (uint32_t k = 0; k < s->nlabels; k++) {
			const struct model_label *l = &out->labels.v[s->label_off + k];

			buf_add(&key, &l->key, sizeof(l->key));
			buf_add(&key, &l->str, sizeof(l->str));
			buf_add(&key, &l->num, sizeof(l->num));
			buf_add(&key, &l->num_unit, sizeof(l->num_unit));
		}
		id = strtab_intern(&keys, key.p, key.len);
		if (keys.n != before) {
			struct model_sample ns = *s;

			ns.value_off = (uint32_t)values.n;
			ns.label_off = (uint32_t)labels.n;
			for (uint32_t k = 0; k < s->nlabels; k++)
				VEC_PUSH(&labels, out->labels.v[s->label_off + k]);
			for (size_t t = 0; t < nt; t++)
				VEC_PUSH(&values, out->values.v[s->value_off + t]);
			VEC_PUSH(&samples, ns);
		} else {
			int64_t *v = &values.v[samples.v[id - 1].value_off];

			for (size_t t = 0; t < nt; t++) /* wraps, as Go's int64 sums */
				v[t] = (int64_t)((uint64_t)v[t] +
						 (uint64_t)out->values.v[s->value_off + t]);
		}
	}
	for (size_t i = 0; i < samples.n; i++)
		for (size_t c = 0; c < nt; c++)
			if (snaps[c] > 1)
				values.v[samples.v[i].value_off + c] =
					div_round(values.v[samples.v[i].value_off + c], snaps[c]);
	VEC_FREE(&out->samples);
	VEC_FREE(&out->values);
	VEC_FREE(&out->labels);
	out->samples.v = samples.v, out->samples.n = samples.n, out->samples.cap = samples.cap;
	out->values.v = values.v, out->values.n = values.n, out->values.cap = values.cap;
	out->labels.v = labels.v, out->labels.n = labels.n, out->labels.cap = labels.cap;
	strtab_release(&keys);
	buf_release(&key);
	free(snaps);
	return model_profile_validate(out, err);
}
