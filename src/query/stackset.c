// SPDX-License-Identifier: Apache-2.0
/*
 * stackset.c - the aggregated, name-based stack set; see stackset.h.
 *
 * Collecting from the store, in four steps:
 *   (1) scan: sum values and count rows per (store stack id, group,
 *       bucket): a dense array indexed by stack id when there is neither
 *       group_by nor step (the flame graph / table / diff path), else a
 *       hash of entries. Group ids are found once per series (memo).
 *       Gauge types with a step get a first pass counting each series'
 *       snapshots per bucket, so each row can be weighted by 1/nsnap;
 *   (2) close the set of touched store stacks under "parent of" and sort
 *       it by id: parents come first (store invariant parent < id);
 *   (3) translate each store stack node to a trie node: its location's
 *       frames (inline chain expanded outer first, symbolized or named by
 *       the fallback, frame-filtered) appended under its parent's trie
 *       node; the stack-filter match is inherited from the parent, so it
 *       costs one regex match per distinct location, not per row;
 *   (4) move the aggregates to entries keyed by trie node (several store
 *       stacks may share a names path: same function, other addresses).
 * Locations are translated once per query (memo by location index).
 *
 * The store hands rows over source by source (each block has its own
 * symbol tables and stack ids, the heads theirs): steps (2)-(4) run at the
 * end of each source, so stack ids never outlive their source, and the
 * trie merges equal name paths of different sources. Without group_by,
 * step or kept samples the store itself sums per stack (its totals scan,
 * which skips the timestamp column) and step (1) is empty.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "query/stackset.h"
#include "query/units.h"

/* --- the set itself -------------------------------------------------------------- */

void query_stackset_init(struct query_stackset *ss)
{
	struct query_ss_node root = { 0, 0, 0 };

	memset(ss, 0, sizeof(*ss));
	strtab_init(&ss->names);
	strtab_init(&ss->groups);
	VEC_PUSH(&ss->nodes, root);
	ss->nbuckets = 1;
	ss->cumulative = true;
}

void query_stackset_release(struct query_stackset *ss)
{
	if (!ss)
		return;
	strtab_release(&ss->names);
	strtab_release(&ss->groups);
	VEC_FREE(&ss->nodes);
	VEC_FREE(&ss->entries);
	VEC_FREE(&ss->samples);
	for (size_t i = 0; i < ss->ngroup_by; i++)
		free(ss->group_by[i]);
	free(ss->group_by);
	qmap_release(&ss->child_idx);
	qmap_release(&ss->raw_idx);
	VEC_FREE(&ss->raw);
	free(ss->entry_slots);
	memset(ss, 0, sizeof(*ss));
}

uint32_t query_stackset_child(struct query_stackset *ss, uint32_t parent, uint32_t name)
{
	uint64_t key = (uint64_t)parent << 32 | name;
	uint32_t id = qmap_get(&ss->child_idx, key);

	if (id != QMAP_NONE)
		return id;
	PROF_ASSERT(parent < ss->nodes.n && ss->nodes.n < QMAP_NONE - 1);
	struct query_ss_node nd = { parent, name, ss->nodes.v[parent].depth + 1 };
	id = (uint32_t)ss->nodes.n;
	VEC_PUSH(&ss->nodes, nd);
	qmap_put(&ss->child_idx, key, id);
	return id;
}

static size_t entry_hash(uint32_t node, uint32_t group, uint32_t bucket)
{
	return qmap_hash((uint64_t)node << 32 ^ (uint64_t)group << 20 ^ bucket);
}

static void entry_rehash(struct query_stackset *ss)
{
	size_t ns = ss->entry_nslots ? ss->entry_nslots * 2 : 1024;

	free(ss->entry_slots);
	ss->entry_slots = xcalloc(ns, sizeof(uint32_t));
	ss->entry_nslots = ns;
	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[i];
		size_t s = entry_hash(e->node, e->group, e->bucket) & (ns - 1);

		while (ss->entry_slots[s])
			s = (s + 1) & (ns - 1);
		ss->entry_slots[s] = (uint32_t)i + 1;
	}
}

int query_stackset_add(struct query_stackset *ss, uint32_t node, uint32_t group, uint32_t bucket,
		       int64_t value, uint64_t count, double gauge_value)
{
	size_t s;
	uint32_t id;

	PROF_ASSERT(bucket < ss->nbuckets);
	if ((ss->entries.n + 1) * 2 > ss->entry_nslots)
		entry_rehash(ss);
	s = entry_hash(node, group, bucket) & (ss->entry_nslots - 1);
	while ((id = ss->entry_slots[s])) {
		struct query_ss_entry *e = &ss->entries.v[id - 1];

		if (e->node == node && e->group == group && e->bucket == bucket) {
			e->value += value;
			e->count += count;
			e->gauge += gauge_value;
			ss->total += value;
			ss->rows += count;
			return 0;
		}
		s = (s + 1) & (ss->entry_nslots - 1);
	}
	if (ss->max_entries && ss->entries.n >= ss->max_entries)
		return -PROF_ETOOBIG;
	PROF_ASSERT(ss->entries.n < UINT32_MAX - 1);
	struct query_ss_entry e = { node, group, bucket, 0, value, count, gauge_value };
	VEC_PUSH(&ss->entries, e);
	ss->entry_slots[s] = (uint32_t)ss->entries.n;
	ss->total += value;
	ss->rows += count;
	return 0;
}

void query_stackset_set_group_by(struct query_stackset *ss, const char *const *names, size_t n)
{
	PROF_ASSERT(ss->entries.n == 0 && ss->ngroup_by == 0);
	ss->group_by = xcalloc(n + 1, sizeof(char *));
	for (size_t i = 0; i < n; i++)
		ss->group_by[i] = xstrdup(names[i]);
	ss->ngroup_by = n;
}

uint32_t query_stackset_group(struct query_stackset *ss, const char *const *values)
{
	size_t len = 0;

	if (!ss->ngroup_by)
		return 0;
	for (size_t i = 0; i < ss->ngroup_by; i++)
		len += strlen(values[i] ? values[i] : "") + (i ? 1 : 0);
	char stackbuf[512];
	char *key = len < sizeof(stackbuf) ? stackbuf : xmalloc(len + 1);
	size_t at = 0;
	for (size_t i = 0; i < ss->ngroup_by; i++) {
		const char *v = values[i] ? values[i] : "";
		size_t k = strlen(v);

		if (i)
			key[at++] = '\0';
		memcpy(key + at, v, k);
		at += k;
	}
	uint32_t id = strtab_intern(&ss->groups, key, len);
	if (key != stackbuf)
		free(key);
	return id;
}

const char *query_stackset_group_value(const struct query_stackset *ss, uint32_t group, size_t i,
				       size_t *len)
{
	const char *k = strtab_get(&ss->groups, group);
	size_t klen = group < ss->groups.n ? ss->groups.len[group] : 0, at = 0;

	for (size_t j = 0; j < i && at <= klen; j++) {
		const char *z = memchr(k + at, '\0', klen - at);

		at = z ? (size_t)(z - k) + 1 : klen + 1;
	}
	if (at > klen) {
		*len = 0;
		return "";
	}
	const char *z = memchr(k + at, '\0', klen - at);
	*len = z ? (size_t)(z - (k + at)) : klen - at;
	return k + at;
}

const struct query_ss_raw *query_stackset_raw(const struct query_stackset *ss, uint32_t name)
{
	uint32_t i = ss->raw.n ? qmap_get(&ss->raw_idx, name) : QMAP_NONE;

	return i == QMAP_NONE ? NULL : &ss->raw.v[i];
}

void query_stackset_path(const struct query_stackset *ss, uint32_t node, struct query_ss_path *out)
{
	uint32_t depth = ss->nodes.v[node].depth;

	out->n = 0;
	VEC_RESERVE(out, depth + 1);
	out->n = depth;
	for (uint32_t at = node, i = depth; at; at = ss->nodes.v[at].parent)
		out->v[--i] = ss->nodes.v[at].name;
}

void query_stackset_node_sums(const struct query_stackset *ss, int64_t **self, uint64_t **count)
{
	int64_t *s = self ? xcalloc(ss->nodes.n + 1, sizeof(int64_t)) : NULL;
	uint64_t *c = count ? xcalloc(ss->nodes.n + 1, sizeof(uint64_t)) : NULL;

	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[i];

		if (s)
			s[e->node] += e->value;
		if (c)
			c[e->node] += e->count;
	}
	if (self)
		*self = s;
	if (count)
		*count = c;
}

/* --- location translation, shared by the store and profile paths ---------------------- */

#define FR_HIDDEN 1u
#define FR_MATCH  2u

struct xlator {
	struct query_stackset *ss;
	const struct model_profile *dict;
	struct symbolizer *sym;
	const struct query_filter *filter;
	uint32_t kernel_type;	  /* string id of "kernel" in dict, or UINT32_MAX */
	struct qmap loc_off;	  /* location -> offset in frames */
	VEC(uint32_t) frames;	  /* per location: n, then n x (name id, FR_* flags), outer first */
	struct sym_frame *symbuf; /* SYM_FRAMES_MAX, allocated on first use */
};

static void xlator_init(struct xlator *x, struct query_stackset *ss,
			const struct model_profile *dict, const struct query_stackset_params *p)
{
	memset(x, 0, sizeof(*x));
	x->ss = ss;
	x->dict = dict;
	x->sym = p->sym;
	x->filter = p->filter;
	x->kernel_type = strtab_find(&dict->strings, "kernel", 6);
}

static void xlator_release(struct xlator *x)
{
	qmap_release(&x->loc_off);
	VEC_FREE(&x->frames);
	free(x->symbuf);
}

static uint32_t push_frame(struct xlator *x, const char *name, size_t n, bool kernel,
			   const char *module)
{
	uint32_t flags = 0, id;

	if (!n) { /* id 0 names the root: an empty name would vanish from the table */
		name = "<unknown>";
		n = strlen(name);
	}
	id = query_stackset_name(x->ss, name, n);

	if (query_filter_hides(x->filter, name, n, kernel, module))
		flags |= FR_HIDDEN;
	if (query_filter_stack_match(x->filter, name, n))
		flags |= FR_MATCH;
	VEC_PUSH(&x->frames, id);
	VEC_PUSH(&x->frames, flags);
	return id;
}

/*
 * Name of line @j of @l with its length (names may hold any bytes, NUL
 * included): model_frame_name's rules (function name, else system name,
 * else "[basename of mapping]", else "<unknown>").
 */
static const char *line_name(const struct model_profile *d, const struct model_location *l,
			     uint32_t j, char *tmp, size_t tmpsz, size_t *len)
{
	const struct model_function *f = &d->functions.v[d->lines.v[l->line_off + j].function];
	uint32_t sid = f->name ? f->name : f->system_name;

	if (sid) {
		*len = d->strings.len[sid];
		return model_str(d, sid);
	}
	const char *s = model_frame_name(d, l, l->nlines, tmp, tmpsz);
	*len = strlen(s);
	return s;
}

/* Frames of location @loc: offset of its record in x->frames. */
static uint32_t xlator_location(struct xlator *x, uint32_t loc)
{
	uint32_t off = qmap_get(&x->loc_off, loc);

	if (off != QMAP_NONE)
		return off;
	const struct model_profile *d = x->dict;
	const struct model_location *l = &d->locations.v[loc];
	bool kernel = l->frame_type && l->frame_type == x->kernel_type;
	char tmp[SYM_FRAME_NAME_MAX];
	size_t len;
	const struct model_mapping *m = l->mapping ? &d->mappings.v[l->mapping] : NULL;
	const char *path = m ? model_str(d, m->filename) : "";
	const char *bid = m ? model_str(d, m->build_id) : "";
	const char *module = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;

	off = (uint32_t)x->frames.n;
	qmap_put(&x->loc_off, loc, off);
	if (l->nlines) {
		VEC_PUSH(&x->frames, l->nlines);
		for (uint32_t j = l->nlines; j-- > 0;) {
			const char *nm = line_name(d, l, j, tmp, sizeof(tmp), &len);

			push_frame(x, nm, len, kernel, module);
		}
		return off;
	}
	if (x->sym && *path != '[' && (*path || *bid)) {
		if (!x->symbuf)
			x->symbuf = xcalloc(SYM_FRAMES_MAX, sizeof(*x->symbuf));
		int nf = symbolizer_lookup_frames(x->sym, path, bid, l->address, x->symbuf,
						  SYM_FRAMES_MAX);
		if (nf > 0) {
			/* Innermost first from the symbolizer; the trie wants outer first. */
			VEC_PUSH(&x->frames, (uint32_t)nf);
			for (int j = nf; j-- > 0;) {
				const char *nm =
					x->symbuf[j].name[0] ? x->symbuf[j].name : "<unknown>";

				push_frame(x, nm, strlen(nm), kernel, module);
			}
			return off;
		}
	}
	VEC_PUSH(&x->frames, 1);
	if (*path)
		snprintf(tmp, sizeof(tmp), "%s+0x%" PRIx64, module, l->address);
	else
		snprintf(tmp, sizeof(tmp), "0x%" PRIx64, l->address);
	x->ss->unsymbolized++;
	uint32_t id = push_frame(x, tmp, strlen(tmp), kernel, module);
	if (qmap_get(&x->ss->raw_idx, id) == QMAP_NONE) {
		struct query_ss_raw r = { l->address, 0, 0 };

		if (*path) {
			r.mapping = query_stackset_name(x->ss, path, strlen(path));
			snprintf(tmp, sizeof(tmp), "[%s]", module);
		} else {
			snprintf(tmp, sizeof(tmp), "<unknown>");
		}
		r.fn_name = query_stackset_name(x->ss, tmp, strlen(tmp));
		qmap_put(&x->ss->raw_idx, id, (uint32_t)x->ss->raw.n);
		VEC_PUSH(&x->ss->raw, r);
	}
	return off;
}

/* Append location @loc's visible frames under trie node @at; ORs the stack-filter match. */
static uint32_t xlator_apply(struct xlator *x, uint32_t at, uint32_t loc, bool *match)
{
	uint32_t off = xlator_location(x, loc);
	uint32_t nf = x->frames.v[off];

	for (uint32_t f = 0; f < nf; f++) {
		uint32_t name = x->frames.v[off + 1 + 2 * f], flags = x->frames.v[off + 2 + 2 * f];

		if (flags & FR_MATCH)
			*match = true;
		if (!(flags & FR_HIDDEN))
			at = query_stackset_child(x->ss, at, name);
	}
	return at;
}

/* --- common parameter handling ---------------------------------------------------------- */

static int setup(struct query_stackset *ss, const char *type, const struct query_stackset_params *p,
		 struct prof_err *err)
{
	struct query_type_id t;

	query_stackset_init(ss);
	if (!type || !*type)
		return prof_err_set(err, -EINVAL, -1, "query: a profile type is required");
	if (p->ngroup_by > QUERY_SS_MAX_GROUP_BY)
		return prof_err_set(err, -EINVAL, -1,
				    "parameter 'group_by': at most %d labels, got %zu",
				    QUERY_SS_MAX_GROUP_BY, p->ngroup_by);
	if (p->from_ns > p->to_ns)
		return prof_err_set(err, -EINVAL, -1, "query: 'from' is after 'to'");
	if (p->step_ns < 0)
		return prof_err_set(err, -EINVAL, -1, "parameter 'step': must be positive");
	snprintf(ss->type, sizeof(ss->type), "%s", type);
	query_type_split(type, &t);
	snprintf(ss->unit, sizeof(ss->unit), "%s", t.sample_unit);
	ss->cumulative = query_type_is_cumulative(type);
	ss->from_ns = p->from_ns;
	ss->to_ns = p->to_ns;
	ss->step_ns = p->step_ns;
	if (p->step_ns > 0) {
		uint64_t nb =
			(uint64_t)((__int128)p->to_ns - p->from_ns) / (uint64_t)p->step_ns + 1;

		if (nb > QUERY_SS_MAX_BUCKETS)
			return prof_err_set(err, -EINVAL, -1,
					    "parameter 'step': %" PRIu64
					    " steps in the range; at most %d (use a larger step)",
					    nb, QUERY_SS_MAX_BUCKETS);
		ss->nbuckets = (uint32_t)nb;
	}
	if (p->ngroup_by)
		query_stackset_set_group_by(ss, p->group_by, p->ngroup_by);
	ss->max_entries = p->max_entries ? p->max_entries : QUERY_SS_MAX_ENTRIES;
	return 0;
}

static int too_many_entries(const struct query_stackset *ss, struct prof_err *err)
{
	return prof_err_set(
		err, -PROF_ETOOBIG, -1,
		"query: more than %zu distinct (stack, group, step) cells; narrow the "
		"time range or the selector, use a larger step or fewer group_by labels",
		ss->max_entries);
}

static int too_many_samples(size_t max, struct prof_err *err)
{
	return prof_err_set(err, -PROF_ETOOBIG, -1,
			    "query: more than %zu samples to keep for a flame chart; narrow the "
			    "time range or the selector",
			    max);
}

static uint32_t bucket_of(const struct query_stackset *ss, int64_t ts)
{
	if (ss->nbuckets == 1)
		return 0;
	return (uint32_t)((uint64_t)((__int128)ts - ss->from_ns) / (uint64_t)ss->step_ns);
}

/* --- snapshots of gauge series: nsnap per (series, bucket) ------------------------------ */

struct snap {
	uint32_t series, bucket;
	int64_t ts;
};

struct snaps {
	VEC(struct snap) v;
	struct qmap count; /* series << 32 | bucket -> distinct timestamps */
};

static void snaps_add(struct snaps *sn, uint32_t series, uint32_t bucket, int64_t ts)
{
	if (sn->v.n) {
		const struct snap *last = &sn->v.v[sn->v.n - 1];

		if (last->series == series && last->ts == ts)
			return;
	}
	struct snap s = { series, bucket, ts };
	VEC_PUSH(&sn->v, s);
}

static int cmp_snap(const void *a, const void *b)
{
	const struct snap *x = a, *y = b;

	if (x->series != y->series)
		return x->series < y->series ? -1 : 1;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static void snaps_finish(struct snaps *sn)
{
	if (sn->v.n > 1)
		qsort(sn->v.v, sn->v.n, sizeof(*sn->v.v), cmp_snap);
	for (size_t i = 0; i < sn->v.n; i++) {
		const struct snap *s = &sn->v.v[i];

		if (i && !cmp_snap(s, &sn->v.v[i - 1]))
			continue;
		uint64_t key = (uint64_t)s->series << 32 | s->bucket;
		uint32_t c = qmap_get(&sn->count, key);
		qmap_put(&sn->count, key, c == QMAP_NONE ? 1 : c + 1);
	}
	VEC_FREE(&sn->v);
}

static double snaps_weight(const struct snaps *sn, uint32_t series, uint32_t bucket)
{
	uint32_t c = qmap_get(&sn->count, (uint64_t)series << 32 | bucket);

	return c == QMAP_NONE || c == 0 ? 1.0 : 1.0 / c;
}

/* --- collecting from the store ---------------------------------------------------------- */

struct collector {
	struct query_stackset *ss;
	const struct query_stackset_params *p;
	bool filtering, gauge, keep;
	/* per source (the store's stack ids are the source's) */
	size_t nstacks;
	bool dense;
	int64_t *dval; /* dense: per source stack */
	uint64_t *dcnt;
	struct query_stackset raw;	      /* hash mode: entries keyed by source stack id */
	VEC(struct store_stack_total) totals; /* totals scan: what the store summed */
	size_t samples_from;		      /* first kept sample of this source */
	struct qmap local;		      /* source series id -> global series id */
	/* whole scan */
	struct strtab series_keys; /* type '\0' labels: the global series ids */
	struct qmap series_group;  /* global series id -> group id */
	struct buf key;
	struct snaps snaps;
	size_t max_samples;
	bool over_entries, over_samples; /* the visitor stopped on a cap */
	int rc;				 /* error of a source_end step */
};

/*
 * The same label set has a different series id in every source (each
 * block numbers its own series), so series are identified across sources
 * by their key: type, then name, value pairs, '\0'-separated.
 */
static uint32_t global_series(struct collector *c, const struct store_series *s)
{
	uint32_t g = qmap_get(&c->local, s->id);

	if (g != QMAP_NONE)
		return g;
	buf_reset(&c->key);
	buf_add(&c->key, s->type, strlen(s->type) + 1);
	for (uint32_t i = 0; i < s->nlabels; i++) {
		buf_add(&c->key, s->labels[i].name, strlen(s->labels[i].name) + 1);
		buf_add(&c->key, s->labels[i].value, strlen(s->labels[i].value) + 1);
	}
	g = strtab_intern(&c->series_keys, c->key.p, c->key.len);
	qmap_put(&c->local, s->id, g);
	return g;
}

static uint32_t series_group(struct collector *c, const struct store_series *s)
{
	uint32_t gid = global_series(c, s);
	uint32_t g = qmap_get(&c->series_group, gid);

	if (g != QMAP_NONE)
		return g;
	const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
	for (size_t i = 0; i < c->ss->ngroup_by; i++)
		for (uint32_t j = 0; j < s->nlabels; j++)
			if (!strcmp(s->labels[j].name, c->ss->group_by[i]))
				vals[i] = s->labels[j].value;
	g = query_stackset_group(c->ss, vals);
	qmap_put(&c->series_group, gid, g);
	c->ss->series++;
	return g;
}

static int snaps_begin(void *arg, const struct store_source *src)
{
	struct collector *c = arg;

	(void)src;
	qmap_release(&c->local);
	return 0;
}

static int scan_snaps(void *arg, const struct store_source *src, const struct store_series *s,
		      const struct store_row *rows, size_t n)
{
	struct collector *c = arg;
	uint32_t gid = global_series(c, s);

	(void)src;
	for (size_t i = 0; i < n; i++)
		snaps_add(&c->snaps, gid, bucket_of(c->ss, rows[i].ts_ns), rows[i].ts_ns);
	return 0;
}

static int source_begin(void *arg, const struct store_source *src)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;

	qmap_release(&c->local);
	c->nstacks = src->nstacks;
	c->dense = !ss->ngroup_by && ss->nbuckets == 1 && c->nstacks <= ((size_t)8 << 20);
	if (!c->p->keep_samples)
		c->dense = false; /* the store sums (totals scan), or groups/steps: hash */
	if (c->dense) {
		c->dval = xcalloc(c->nstacks + 1, sizeof(int64_t));
		c->dcnt = xcalloc(c->nstacks + 1, sizeof(uint64_t));
	}
	query_stackset_release(&c->raw);
	query_stackset_init(&c->raw);
	c->raw.nbuckets = ss->nbuckets;
	c->raw.max_entries = ss->max_entries;
	c->totals.n = 0;
	c->samples_from = ss->samples.n;
	return 0;
}

static int scan_series(void *arg, const struct store_source *src, const struct store_series *s)
{
	(void)src;
	series_group(arg, s);
	return 0;
}

static int scan_totals(void *arg, const struct store_source *src, const struct store_stack_total *t,
		       size_t n, uint64_t nrows)
{
	struct collector *c = arg;

	(void)src;
	(void)nrows;
	VEC_RESERVE(&c->totals, n);
	memcpy(c->totals.v, t, sizeof(*t) * n);
	c->totals.n = n;
	return 0;
}

static int scan_rows(void *arg, const struct store_source *src, const struct store_series *s,
		     const struct store_row *rows, size_t n)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;
	uint32_t g = series_group(c, s);
	uint32_t gid = global_series(c, s);

	(void)src;
	if (c->p->keep_samples) {
		if (ss->samples.n + n > c->max_samples) {
			c->over_samples = true;
			return 1;
		}
		VEC_RESERVE(&ss->samples, n);
		for (size_t i = 0; i < n; i++) {
			struct query_ss_sample sm = { rows[i].ts_ns, rows[i].value, rows[i].stack,
						      g };

			ss->samples.v[ss->samples.n++] = sm;
		}
	}
	if (c->dense) {
		for (size_t i = 0; i < n; i++) {
			uint32_t st = rows[i].stack;

			PROF_ASSERT(st < c->nstacks);
			c->dval[st] += rows[i].value;
			c->dcnt[st]++;
		}
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t b = bucket_of(ss, rows[i].ts_ns);
		double w = c->gauge ? snaps_weight(&c->snaps, gid, b) : 1.0;

		PROF_ASSERT(rows[i].stack < c->nstacks);
		if (query_stackset_add(&c->raw, c->p->merge_stacks ? 0 : rows[i].stack, g, b,
				       rows[i].value, 1, (double)rows[i].value * w)) {
			c->over_entries = true;
			return 1;
		}
	}
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int cmp_sample(const void *a, const void *b)
{
	const struct query_ss_sample *x = a, *y = b;

	if (x->group != y->group)
		return x->group < y->group ? -1 : 1;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->node < y->node ? -1 : x->node > y->node;
}

/*
 * Store stack id -> trie node << 1 | stack-filter match. Dense (an array
 * over the source's stack ids, value + 1, 0 = absent) when the source's
 * tree is small enough that the array costs less than hashing the nodes
 * a query touches (a flame graph of an hour touches millions); else a
 * hash map.
 */
#define SMAP_DENSE_MAX ((size_t)32 << 20)

struct smap {
	uint32_t *dense; /* [nstacks] or NULL */
	struct qmap sparse;
};

static uint32_t smap_get(const struct smap *m, uint32_t s)
{
	if (m->dense)
		return m->dense[s] ? m->dense[s] - 1 : QMAP_NONE;
	return qmap_get(&m->sparse, s);
}

static void smap_put(struct smap *m, uint32_t s, uint32_t v)
{
	if (m->dense)
		m->dense[s] = v + 1;
	else
		qmap_put(&m->sparse, s, v);
}

static void smap_release(struct smap *m)
{
	free(m->dense);
	qmap_release(&m->sparse);
	memset(m, 0, sizeof(*m));
}

/*
 * Translate the touched store stacks (@touched, @n distinct ids) and their
 * ancestors into trie nodes, parents first: @map receives store id ->
 * trie node << 1 | match.
 */
static void translate_stacks(struct xlator *x, const struct store_stack_node *stacks,
			     size_t nstacks, uint32_t *touched, size_t n, struct smap *map)
{
	VEC(uint32_t) ids = { 0 };

	memset(map, 0, sizeof(*map));
	if (nstacks <= SMAP_DENSE_MAX && n * 8 >= nstacks / 64) {
		/* Dense: mark the touched nodes and their ancestors, then walk ids in order. */
		uint8_t *mark = xcalloc(nstacks + 1, 1);
		size_t nmarked = 0;

		map->dense = xcalloc(nstacks + 1, sizeof(uint32_t));
		for (size_t i = 0; i < n; i++) {
			for (uint32_t s = touched[i]; s != 0 && !mark[s]; s = stacks[s].parent) {
				PROF_ASSERT(s < nstacks);
				mark[s] = 1;
				nmarked++;
			}
		}
		qmap_reserve(&x->ss->child_idx, x->ss->nodes.n + nmarked);
		VEC_RESERVE(&x->ss->nodes, nmarked);
		smap_put(map, 0, 0); /* the empty stack: root, no match */
		for (size_t s = 1; s < nstacks; s++) {
			if (!mark[s])
				continue;
			uint32_t p = stacks[s].parent, pv = map->dense[p] - 1;

			PROF_ASSERT(p < s && map->dense[p]);
			bool match = pv & 1;
			uint32_t node = xlator_apply(x, pv >> 1, stacks[s].loc, &match);
			PROF_ASSERT(node < (QMAP_NONE >> 1));
			map->dense[s] = (node << 1 | (uint32_t)match) + 1;
		}
		free(mark);
		return;
	}
	struct qmap seen = { 0 };
	for (size_t i = 0; i < n; i++) {
		uint32_t s = touched[i];

		while (s != 0 && qmap_get(&seen, s) == QMAP_NONE) {
			PROF_ASSERT(s < nstacks);
			qmap_put(&seen, s, 0);
			VEC_PUSH(&ids, s);
			s = stacks[s].parent;
		}
	}
	qmap_release(&seen);
	if (ids.n > 1)
		qsort(ids.v, ids.n, sizeof(uint32_t), cmp_u32);
	qmap_reserve(&x->ss->child_idx, x->ss->nodes.n + ids.n);
	smap_put(map, 0, 0);
	for (size_t i = 0; i < ids.n; i++) {
		uint32_t s = ids.v[i], p = stacks[s].parent;
		uint32_t pv = smap_get(map, p);

		PROF_ASSERT(p < s && pv != QMAP_NONE);
		bool match = pv & 1;
		uint32_t node = xlator_apply(x, pv >> 1, stacks[s].loc, &match);
		PROF_ASSERT(node < (QMAP_NONE >> 1));
		smap_put(map, s, node << 1 | (uint32_t)match);
	}
	VEC_FREE(&ids);
}

/* Kept samples from @from on: source stack -> trie node, dropping the stack-filtered ones. */
static void remap_samples(struct query_stackset *ss, size_t from, const struct smap *map,
			  bool filtering)
{
	size_t k = from;

	for (size_t i = from; i < ss->samples.n; i++) {
		struct query_ss_sample sm = ss->samples.v[i];
		uint32_t v = smap_get(map, sm.node);

		PROF_ASSERT(v != QMAP_NONE);
		if (filtering && !(v & 1))
			continue;
		sm.node = v >> 1;
		ss->samples.v[k++] = sm;
	}
	ss->samples.n = k;
}

/* Add one aggregate of source stack @s (translated through @map) to the set. */
static int add_one(struct collector *c, const struct smap *map, uint32_t s, uint32_t group,
		   uint32_t bucket, int64_t value, uint64_t count, double gauge)
{
	uint32_t v = smap_get(map, s);

	if (c->filtering && !(v & 1)) {
		c->ss->filtered_rows += count;
		c->ss->filtered_value += value;
		return 0;
	}
	return query_stackset_add(c->ss, v >> 1, group, bucket, value, count, gauge);
}

/* The end of a source: translate its stacks to names and move its aggregates into the set. */
static int source_end(void *arg, const struct store_source *src)
{
	struct collector *c = arg;
	struct query_stackset *ss = c->ss;
	VEC(uint32_t) touched = { 0 };
	struct smap map = { 0 };
	struct xlator x;
	int rc = 0;

	if (c->dense) {
		for (size_t s = 0; s < c->nstacks; s++)
			if (c->dcnt[s])
				VEC_PUSH(&touched, (uint32_t)s);
	} else if (c->totals.n) {
		for (size_t i = 0; i < c->totals.n; i++)
			VEC_PUSH(&touched, c->totals.v[i].stack);
	} else {
		struct qmap seen = { 0 };

		for (size_t i = 0; i < c->raw.entries.n; i++) {
			uint32_t s = c->raw.entries.v[i].node;

			if (qmap_get(&seen, s) == QMAP_NONE) {
				qmap_put(&seen, s, 0);
				VEC_PUSH(&touched, s);
			}
		}
		qmap_release(&seen);
	}
	xlator_init(&x, ss, src->dict, c->p);
	translate_stacks(&x, src->stacks, src->nstacks, touched.v, touched.n, &map);
	xlator_release(&x);

	for (size_t i = 0; i < touched.n && c->dense && !rc; i++) {
		uint32_t s = touched.v[i];

		rc = add_one(c, &map, s, 0, 0, c->dval[s], c->dcnt[s], (double)c->dval[s]);
	}
	for (size_t i = 0; i < c->totals.n && !c->dense && !rc; i++) {
		const struct store_stack_total *t = &c->totals.v[i];

		rc = add_one(c, &map, t->stack, 0, 0, t->total, t->rows, (double)t->total);
	}
	for (size_t i = 0; i < c->raw.entries.n && !c->dense && !rc; i++) {
		const struct query_ss_entry *e = &c->raw.entries.v[i];

		rc = add_one(c, &map, e->node, e->group, e->bucket, e->value, e->count, e->gauge);
	}
	if (!rc && c->p->keep_samples)
		remap_samples(ss, c->samples_from, &map, c->filtering);
	free(c->dval);
	free(c->dcnt);
	c->dval = NULL;
	c->dcnt = NULL;
	query_stackset_release(&c->raw);
	smap_release(&map);
	VEC_FREE(&touched);
	if (rc)
		c->rc = rc;
	return rc;
}

int query_stackset_collect(struct store *st, const struct query_stackset_params *p,
			   struct query_stackset *ss, struct prof_err *err)
{
	struct collector c = { 0 };
	struct store_query q = { p->type, p->m, p->nm, p->from_ns, p->to_ns };
	struct store_visitor v = { .arg = &c };
	int rc;

	rc = setup(ss, p->type, p, err);
	if (rc)
		return rc;
	c.ss = ss;
	c.p = p;
	c.filtering = query_filter_has_stack(p->filter);
	c.max_samples = p->max_samples ? p->max_samples : QUERY_SS_MAX_SAMPLES;
	c.gauge = !ss->cumulative && ss->nbuckets > 1;
	strtab_init(&c.series_keys);
	buf_init(&c.key, 0);
	query_stackset_init(&c.raw);

	if (c.gauge) {
		v.source_begin = snaps_begin;
		v.rows = scan_snaps;
		rc = store_scan(st, &q, &v, NULL, err);
		snaps_finish(&c.snaps);
	}
	/* No group_by, no step, no samples: the store sums per stack (fast path). */
	bool totals = !ss->ngroup_by && ss->nbuckets == 1 && !p->keep_samples;
	v.source_begin = source_begin;
	v.series = scan_series;
	v.rows = totals ? NULL : scan_rows;
	v.totals = totals ? scan_totals : NULL;
	v.source_end = source_end;
	if (!rc)
		rc = store_scan(st, &q, &v, NULL, err);
	if (c.rc)
		rc = c.rc;
	if (!rc && p->keep_samples && ss->samples.n > 1)
		qsort(ss->samples.v, ss->samples.n, sizeof(*ss->samples.v), cmp_sample);
	if (c.over_samples)
		rc = too_many_samples(c.max_samples, err);
	else if (c.over_entries || rc == -PROF_ETOOBIG)
		rc = too_many_entries(ss, err);
	free(c.dval);
	free(c.dcnt);
	query_stackset_release(&c.raw);
	VEC_FREE(&c.totals);
	qmap_release(&c.local);
	qmap_release(&c.series_group);
	qmap_release(&c.snaps.count);
	VEC_FREE(&c.snaps.v);
	strtab_release(&c.series_keys);
	buf_release(&c.key);
	return rc;
}

/* --- from a model profile ------------------------------------------------------------- */

int query_stackset_from_profile(const struct model_profile *prof, uint32_t sample_type,
				const struct query_stackset_params *p, struct query_stackset *ss,
				struct prof_err *err)
{
	struct query_stackset_params q = *p;
	struct xlator x;
	struct qmap memo = { 0 }; /* stack_off << 32 | nstack -> node << 1 | match */
	struct snaps snaps = { 0 };
	char type[512];
	bool filtering = query_filter_has_stack(p->filter), over_samples = false;
	int rc;

	if (sample_type >= prof->sample_types.n) {
		query_stackset_init(ss);
		return prof_err_set(err, -EINVAL, -1,
				    "sample type %u out of range (the profile has %zu)",
				    sample_type, prof->sample_types.n);
	}
	model_profile_type_id(prof, sample_type, type, sizeof(type));
	bool all_time = !q.from_ns && !q.to_ns;
	if (all_time) {
		int64_t lo = INT64_MAX, hi = INT64_MIN;

		for (size_t i = 0; i < prof->samples.n; i++) {
			int64_t ts = prof->samples.v[i].timestamp_ns
					     ? prof->samples.v[i].timestamp_ns
					     : prof->time_ns;
			lo = PROF_MIN(lo, ts);
			hi = PROF_MAX(hi, ts);
		}
		q.from_ns = prof->samples.n ? lo : 0;
		q.to_ns = prof->samples.n ? hi : 0;
	}
	rc = setup(ss, type, &q, err);
	if (rc)
		return rc;
	bool gauge = !ss->cumulative && ss->nbuckets > 1;
	size_t max_samples = p->max_samples ? p->max_samples : QUERY_SS_MAX_SAMPLES;

	if (gauge) {
		for (size_t i = 0; i < prof->samples.n; i++) {
			const struct model_sample *s = &prof->samples.v[i];
			int64_t ts = s->timestamp_ns ? s->timestamp_ns : prof->time_ns;

			if (ts >= q.from_ns && ts <= q.to_ns)
				snaps_add(&snaps, 0, bucket_of(ss, ts), ts);
		}
		snaps_finish(&snaps);
	}
	xlator_init(&x, ss, prof, p);
	ss->series = prof->samples.n ? 1 : 0;
	for (size_t i = 0; i < prof->samples.n && !rc; i++) {
		const struct model_sample *s = &prof->samples.v[i];
		int64_t v = prof->values.v[s->value_off + sample_type];
		int64_t ts = s->timestamp_ns ? s->timestamp_ns : prof->time_ns;

		if (v == 0 || ts < q.from_ns || ts > q.to_ns)
			continue;
		uint64_t key = (uint64_t)s->stack_off << 32 | s->nstack;
		uint32_t nv = s->nstack ? qmap_get(&memo, key) : 0;
		if (nv == QMAP_NONE) {
			uint32_t at = 0;
			bool match = false;

			for (uint32_t j = s->nstack; j-- > 0;)
				at = xlator_apply(&x, at, prof->stack_locs.v[s->stack_off + j],
						  &match);
			PROF_ASSERT(at < (QMAP_NONE >> 1));
			nv = at << 1 | (uint32_t)match;
			qmap_put(&memo, key, nv);
		}
		if (filtering && !(nv & 1)) {
			ss->filtered_rows++;
			ss->filtered_value += v;
			continue;
		}
		uint32_t g = 0;
		if (ss->ngroup_by) {
			const char *vals[QUERY_SS_MAX_GROUP_BY] = { 0 };
			char nums[QUERY_SS_MAX_GROUP_BY][24];

			for (size_t k = 0; k < ss->ngroup_by; k++) {
				for (uint32_t j = 0; j < s->nlabels; j++) {
					const struct model_label *l =
						&prof->labels.v[s->label_off + j];

					if (strcmp(model_str(prof, l->key), ss->group_by[k]))
						continue;
					if (l->str) {
						vals[k] = model_str(prof, l->str);
					} else {
						snprintf(nums[k], sizeof(nums[k]), "%" PRId64,
							 l->num);
						vals[k] = nums[k];
					}
					break;
				}
			}
			g = query_stackset_group(ss, vals);
		}
		uint32_t b = bucket_of(ss, ts);
		double w = gauge ? snaps_weight(&snaps, 0, b) : 1.0;
		rc = query_stackset_add(ss, nv >> 1, g, b, v, 1, (double)v * w);
		if (!rc && p->keep_samples) {
			if (ss->samples.n >= max_samples) {
				over_samples = true;
				rc = too_many_samples(max_samples, err);
				break;
			}
			struct query_ss_sample sm = { ts, v, nv >> 1, g };
			VEC_PUSH(&ss->samples, sm);
		}
	}
	if (rc == -PROF_ETOOBIG && !over_samples)
		rc = too_many_entries(ss, err);
	if (!rc && ss->samples.n > 1)
		qsort(ss->samples.v, ss->samples.n, sizeof(*ss->samples.v), cmp_sample);
	xlator_release(&x);
	qmap_release(&memo);
	qmap_release(&snaps.count);
	VEC_FREE(&snaps.v);
	return rc;
}
