// SPDX-License-Identifier: Apache-2.0
/*
 * profile.c - the canonical profile model: construction, validation and
 * naming. See profile.h for the invariants.
 */
#include "base/compat.h"
#include "base/parse.h"
#include "model/profile.h"

void model_profile_init(struct model_profile *p)
{
	struct model_mapping m0 = { 0 };
	struct model_function f0 = { 0 };
	struct model_location l0 = { 0 };
	struct model_link k0 = { { 0 }, { 0 } };

	memset(p, 0, sizeof(*p));
	strtab_init(&p->strings);
	VEC_PUSH(&p->mappings, m0);
	VEC_PUSH(&p->functions, f0);
	VEC_PUSH(&p->locations, l0);
	VEC_PUSH(&p->links, k0);
}

void model_profile_release(struct model_profile *p)
{
	if (!p)
		return;
	strtab_release(&p->strings);
	VEC_FREE(&p->mappings);
	VEC_FREE(&p->functions);
	VEC_FREE(&p->locations);
	VEC_FREE(&p->lines);
	VEC_FREE(&p->links);
	VEC_FREE(&p->sample_types);
	VEC_FREE(&p->samples);
	VEC_FREE(&p->stack_locs);
	VEC_FREE(&p->values);
	VEC_FREE(&p->labels);
	VEC_FREE(&p->attrs);
	VEC_FREE(&p->comments);
	free(p->fn_slots);
	p->fn_slots = NULL;
	p->fn_nslots = 0;
}

static void skipped_note(struct model_skipped *s, uint64_t n, const char *what, const char *first)
{
	if (!n)
		return;
	if (!s->n) {
		snprintf(s->what, sizeof(s->what), "%s", what);
		snprintf(s->first, sizeof(s->first), "%s", first);
	} else if (strcmp(s->what, what) != 0) {
		snprintf(s->what, sizeof(s->what), "items");
	}
	s->n = n > UINT64_MAX - s->n ? UINT64_MAX : s->n + n;
}

void model_profile_skip(struct model_profile *p, uint64_t n, const char *what, const char *fmt, ...)
{
	char first[sizeof(p->skipped.first)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(first, sizeof(first), fmt, ap);
	va_end(ap);
	skipped_note(&p->skipped, n, what, first);
}

void model_skipped_add(struct model_skipped *dst, const struct model_skipped *src)
{
	skipped_note(dst, src->n, src->what, src->first);
}

size_t model_skipped_text(const struct model_skipped *s, char *out, size_t outsz)
{
	int k;

	if (!outsz)
		return 0;
	out[0] = '\0';
	if (!s->n)
		return 0;
	k = snprintf(out, outsz, "skipped %" PRIu64 " %s (first: %s)", s->n, s->what, s->first);
	return k < 0 ? 0 : PROF_MIN((size_t)k, outsz - 1);
}

uint32_t model_sample_type_add(struct model_profile *p, const char *type, const char *unit)
{
	struct model_value_type vt = { model_intern(p, type), model_intern(p, unit) };

	PROF_ASSERT(p->samples.n == 0);
	VEC_PUSH(&p->sample_types, vt);
	return (uint32_t)p->sample_types.n - 1;
}

uint32_t model_mapping_add(struct model_profile *p, const struct model_mapping *m)
{
	VEC_PUSH(&p->mappings, *m);
	return (uint32_t)p->mappings.n - 1;
}

uint32_t model_build_id_checked(const struct model_profile *p, uint32_t id)
{
	if (id == 0 || id >= p->strings.n)
		return 0;
	return parse_build_id_ok(p->strings.s[id], p->strings.len[id]) ? id : 0;
}

uint32_t model_function_add(struct model_profile *p, const struct model_function *f)
{
	VEC_PUSH(&p->functions, *f);
	return (uint32_t)p->functions.n - 1;
}

static uint64_t function_hash(const struct model_function *f)
{
	uint64_t h = f->name * 0x9e3779b97f4a7c15ULL;

	h ^= (f->system_name + 0x632be59bd9b4e019ULL) * 0xbf58476d1ce4e5b9ULL;
	h ^= (f->filename + 0x1f83d9abfb41bd6bULL) * 0x94d049bb133111ebULL;
	h ^= (uint64_t)f->start_line * 0xff51afd7ed558ccdULL;
	return h ^ (h >> 31);
}

static void function_rehash(struct model_profile *p)
{
	uint32_t ns = 256;

	while (ns <= p->functions.n * 2 + 2)
		ns *= 2;
	free(p->fn_slots);
	p->fn_slots = xcalloc(ns, sizeof(uint32_t));
	p->fn_nslots = ns;
	for (size_t i = 1; i < p->functions.n; i++) {
		uint32_t h = (uint32_t)function_hash(&p->functions.v[i]) & (ns - 1);

		while (p->fn_slots[h])
			h = (h + 1) & (ns - 1);
		p->fn_slots[h] = (uint32_t)i;
	}
	p->fn_indexed = p->functions.n;
}

uint32_t model_function_intern(struct model_profile *p, uint32_t name, uint32_t system_name,
			       uint32_t filename, int64_t start_line)
{
	struct model_function f = { name, system_name, filename, start_line };
	uint32_t h, id;

	/* The index covers every function, including ones added directly. */
	if ((p->functions.n + 1) * 2 >= p->fn_nslots || p->fn_indexed != p->functions.n)
		function_rehash(p);
	h = (uint32_t)function_hash(&f) & (p->fn_nslots - 1);
	while ((id = p->fn_slots[h])) {
		const struct model_function *g = &p->functions.v[id];

		if (g->name == name && g->system_name == system_name && g->filename == filename &&
		    g->start_line == start_line)
			return id;
		h = (h + 1) & (p->fn_nslots - 1);
	}
	id = model_function_add(p, &f);
	p->fn_slots[h] = id;
	p->fn_indexed = p->functions.n;
	return id;
}

uint32_t model_location_add(struct model_profile *p, uint32_t mapping, uint64_t address,
			    const struct model_line *lines, uint32_t nlines)
{
	struct model_location l = { 0 };

	l.mapping = mapping;
	l.address = address;
	l.line_off = (uint32_t)p->lines.n;
	l.nlines = nlines;
	VEC_RESERVE(&p->lines, nlines);
	for (uint32_t i = 0; i < nlines; i++)
		p->lines.v[p->lines.n++] = lines[i];
	VEC_PUSH(&p->locations, l);
	return (uint32_t)p->locations.n - 1;
}

uint32_t model_stack_add(struct model_profile *p, const uint32_t *locs, uint32_t n)
{
	uint32_t off = (uint32_t)p->stack_locs.n;

	VEC_RESERVE(&p->stack_locs, n);
	if (n)
		memcpy(p->stack_locs.v + off, locs, n * sizeof(*locs));
	p->stack_locs.n += n;
	return off;
}

uint32_t model_labels_add(struct model_profile *p, const struct model_label *l, size_t n)
{
	uint32_t off = (uint32_t)p->labels.n;

	VEC_RESERVE(&p->labels, n);
	if (n)
		memcpy(p->labels.v + p->labels.n, l, n * sizeof(*l));
	p->labels.n += n;
	return off;
}

uint32_t model_sample_add(struct model_profile *p, uint32_t stack_off, uint32_t nstack,
			  const int64_t *values, const struct model_label *labels, uint32_t nlabels,
			  int64_t timestamp_ns, uint32_t link)
{
	struct model_sample s = { 0 };
	size_t nv = p->sample_types.n;

	s.stack_off = stack_off;
	s.nstack = nstack;
	s.value_off = (uint32_t)p->values.n;
	s.label_off = (uint32_t)p->labels.n;
	s.nlabels = nlabels;
	s.link = link;
	s.timestamp_ns = timestamp_ns;
	VEC_RESERVE(&p->values, nv);
	for (size_t i = 0; i < nv; i++)
		p->values.v[p->values.n++] = values ? values[i] : 0;
	VEC_RESERVE(&p->labels, nlabels);
	for (uint32_t i = 0; i < nlabels; i++)
		p->labels.v[p->labels.n++] = labels[i];
	VEC_PUSH(&p->samples, s);
	return (uint32_t)p->samples.n - 1;
}

void model_attr_add_str(struct model_profile *p, const char *key, const char *value)
{
	struct model_label l = { model_intern(p, key), model_intern(p, value), 0, 0 };

	VEC_PUSH(&p->attrs, l);
}

void model_attr_add_num(struct model_profile *p, const char *key, int64_t value)
{
	struct model_label l = { model_intern(p, key), 0, value, 0 };

	VEC_PUSH(&p->attrs, l);
}

const char *model_attr_get(const struct model_profile *p, const char *key)
{
	for (size_t i = 0; i < p->attrs.n; i++)
		if (strcmp(model_str(p, p->attrs.v[i].key), key) == 0)
			return model_str(p, p->attrs.v[i].str);
	return NULL;
}

#define CHECK_STR(id, what, i)                                                                   \
	do {                                                                                     \
		if ((id) >= ns)                                                                  \
			return prof_err_set(err, -PROF_ECORRUPT, -1,                             \
					    "%s %zu: string index %u out of range (%u strings)", \
					    what, (size_t)(i), (unsigned)(id), ns);              \
	} while (0)

/* The dictionary part of model_profile_validate. */
static int validate_dict(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	for (size_t i = 0; i < p->mappings.n; i++) {
		CHECK_STR(p->mappings.v[i].filename, "mapping", i);
		CHECK_STR(p->mappings.v[i].build_id, "mapping", i);
	}
	for (size_t i = 0; i < p->functions.n; i++) {
		const struct model_function *f = &p->functions.v[i];

		CHECK_STR(f->name, "function", i);
		CHECK_STR(f->system_name, "function", i);
		CHECK_STR(f->filename, "function", i);
	}
	for (size_t i = 0; i < p->locations.n; i++) {
		const struct model_location *l = &p->locations.v[i];

		if (l->mapping >= p->mappings.n)
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "location %zu: mapping index %u out of range", i,
					    l->mapping);
		if ((uint64_t)l->line_off + l->nlines > p->lines.n)
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "location %zu: line range out of bounds", i);
		for (uint32_t k = 0; k < l->nlines; k++)
			if (p->lines.v[l->line_off + k].function >= p->functions.n)
				return prof_err_set(
					err, -PROF_ECORRUPT, -1,
					"location %zu line %u: function index %u out of range", i,
					k, p->lines.v[l->line_off + k].function);
	}
	for (size_t i = 0; i < p->stack_locs.n; i++)
		if (p->stack_locs.v[i] >= p->locations.n || p->stack_locs.v[i] == 0)
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "stack entry %zu: location index %u out of range", i,
					    p->stack_locs.v[i]);
	return 0;
}

int model_profile_validate_samples(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	if (p->values.n != p->samples.n * p->sample_types.n)
		return prof_err_set(err, -PROF_ECORRUPT, -1,
				    "values: %zu values for %zu samples of %zu types", p->values.n,
				    p->samples.n, p->sample_types.n);
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];

		if (p->pending ? s->nstack || s->stack_off >= p->pending->nkeys
			       : (uint64_t)s->stack_off + s->nstack > p->stack_locs.n)
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "sample %zu: stack range out of bounds", i);
		if ((uint64_t)s->label_off + s->nlabels > p->labels.n)
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "sample %zu: label range out of bounds", i);
		if (s->link >= p->links.n)
			return prof_err_set(err, -PROF_ECORRUPT, -1,
					    "sample %zu: link index %u out of range", i, s->link);
	}
	for (size_t i = 0; i < p->labels.n; i++) {
		CHECK_STR(p->labels.v[i].key, "label", i);
		CHECK_STR(p->labels.v[i].str, "label", i);
		CHECK_STR(p->labels.v[i].num_unit, "label", i);
	}
	for (size_t i = 0; i < p->sample_types.n; i++) {
		CHECK_STR(p->sample_types.v[i].type, "sample type", i);
		CHECK_STR(p->sample_types.v[i].unit, "sample type", i);
	}
	return 0;
}

int model_profile_validate(const struct model_profile *p, struct prof_err *err)
{
	int rc = validate_dict(p, err);

	return rc ? rc : model_profile_validate_samples(p, err);
}

/* The dictionary tables model_profile_borrow_dict shares. */
#define DICT_TABLES(X) X(mappings) X(functions) X(locations) X(lines) X(links) X(stack_locs)

void model_profile_borrow_dict(struct model_profile *p, const struct model_profile *from)
{
	strtab_release(&p->strings);
	p->strings = from->strings;
#define X(t)                \
	VEC_FREE(&p->t);    \
	p->t.v = from->t.v; \
	p->t.n = from->t.n; \
	p->t.cap = from->t.cap;
	DICT_TABLES(X)
#undef X
	free(p->fn_slots);
	p->fn_slots = NULL;
	p->fn_nslots = 0;
	p->fn_indexed = 0;
}

void model_profile_unborrow_dict(struct model_profile *p)
{
	memset(&p->strings, 0, sizeof(p->strings));
#define X(t)           \
	p->t.v = NULL; \
	p->t.n = 0;    \
	p->t.cap = 0;
	DICT_TABLES(X)
#undef X
}

bool model_profile_same_dict(const struct model_profile *a, const struct model_profile *b)
{
	bool same = a->strings.s == b->strings.s && a->strings.n == b->strings.n;

#define X(t) same = same && a->t.v == b->t.v && a->t.n == b->t.n;
	DICT_TABLES(X)
#undef X
	return same;
}

void model_profile_type_id(const struct model_profile *p, uint32_t idx, char *out, size_t outsz)
{
	const char *type = idx < p->sample_types.n ? model_str(p, p->sample_types.v[idx].type) : "";
	const char *unit = idx < p->sample_types.n ? model_str(p, p->sample_types.v[idx].unit) : "";
	const char *ptype = model_str(p, p->period_type.type);
	const char *punit = model_str(p, p->period_type.unit);
	const char *name = model_str(p, p->name);

	if (!*name) {
		if (!strcmp(ptype, "cpu") || !strcmp(type, "cpu"))
			name = "process_cpu";
		else if (!strcmp(ptype, "space") || !strcmp(type, "alloc_space") ||
			 !strcmp(type, "inuse_space"))
			name = "memory";
		else if (!strcmp(ptype, "contentions") || !strcmp(type, "contentions"))
			name = "contention";
		else if (!strcmp(ptype, "goroutine") || !strcmp(type, "goroutine"))
			name = "goroutine";
		else if (!strcmp(type, "off_cpu") || !strcmp(ptype, "off_cpu"))
			name = "off_cpu";
		else
			name = *type ? type : "unknown";
	}
	snprintf(out, outsz, "%s:%s:%s:%s:%s", name, type, unit, ptype, punit);
}

const char *model_frame_name(const struct model_profile *p, const struct model_location *loc,
			     uint32_t line_idx, char *tmp, size_t tmpsz)
{
	if (line_idx < loc->nlines) {
		const struct model_line *ln = &p->lines.v[loc->line_off + line_idx];
		const struct model_function *f = &p->functions.v[ln->function];

		if (f->name)
			return model_str(p, f->name);
		if (f->system_name)
			return model_str(p, f->system_name);
	}
	if (loc->mapping && p->mappings.v[loc->mapping].filename) {
		const char *path = model_str(p, p->mappings.v[loc->mapping].filename);
		const char *base = strrchr(path, '/');

		snprintf(tmp, tmpsz, "[%s]", base ? base + 1 : path);
		return tmp;
	}
	return "<unknown>";
}
