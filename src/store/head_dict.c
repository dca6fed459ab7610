// SPDX-License-Identifier: Apache-2.0
/*
 * head_dict.c - the head's hash-consed symbol dictionary and stack tree:
 * a profile's strings, mappings, functions and locations translated into
 * it, content keys, stack nodes.
 *
 * Hash-consing of mappings reuses strtab: a mapping is serialized into a
 * small key blob and interned, and the dense strtab id is its index
 * (strtab id 0 is "", which no blob equals, matching the zero entry at
 * index 0 of the dictionary tables). Locations, many per request, get
 * open-addressing tables without key blobs: plain native locations
 * (mapping + address, no lines: what eBPF agents send) one keyed by
 * (mapping, address), the others one holding a hash of the translated
 * fields and lines and the location id, compared field by field with
 * the dictionary entry. Stack nodes, far more numerous, get their own
 * table keyed by (parent, location) with the key in the slot, one cache
 * line per probe.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/stackkey.h"
#include "store/head.h"
#include "store/head_int.h"

#include <pthread.h>

/*
 * The translation table *@t for a profile table of @n entries: allocated
 * on first use (a profile whose stacks all hit the whole-stack memo needs
 * none but the mappings'), every entry unmapped except the zero entry.
 */
static uint32_t *xl_tab(uint32_t **t, size_t n)
{
	if (!*t) {
		*t = xmalloc(sizeof(uint32_t) * (n + 1));
		memset(*t, 0xff, sizeof(uint32_t) * (n + 1));
		(*t)[0] = 0;
	}
	return *t;
}

void head_xlate_release(struct xlate *x)
{
	free(x->str);
	free(x->map);
	free(x->fn);
	free(x->loc);
	VEC_FREE(&x->lines);
	VEC_FREE(&x->klines);
}

static uint32_t xl_str(struct store_head *h, struct xlate *x, uint32_t id)
{
	xl_tab(&x->str, x->p->strings.n);
	if (x->str[id] == UINT32_MAX)
		x->str[id] =
			h_intern(h, &h->dict.strings, x->p->strings.s[id], x->p->strings.len[id]);
	return x->str[id];
}

static uint32_t xl_mapping(struct store_head *h, struct xlate *x, uint32_t id)
{
	if (xl_tab(&x->map, x->p->mappings.n)[id] != UINT32_MAX)
		return x->map[id];
	const struct model_mapping *m = &x->p->mappings.v[id];
	struct model_mapping nm = *m;
	struct blob k = { .n = 0 };
	bool is_new;

	nm.filename = xl_str(h, x, m->filename);
	nm.build_id = xl_str(h, x, m->build_id);
	blob_add(&k, "M", 1);
	blob_u64(&k, nm.memory_start);
	blob_u64(&k, nm.memory_limit);
	blob_u64(&k, nm.file_offset);
	blob_u32(&k, nm.filename);
	blob_u32(&k, nm.build_id);
	blob_u32(&k, model_mapping_flags(&nm));
	uint32_t hid = blob_intern(h, &h->map_keys, &k, &is_new);
	if (is_new) {
		uint32_t got = model_mapping_add(&h->dict, &nm);

		PROF_ASSERT(got == hid);
	}
	x->map[id] = hid;
	return hid;
}

static uint32_t xl_function(struct store_head *h, struct xlate *x, uint32_t id)
{
	if (xl_tab(&x->fn, x->p->functions.n)[id] != UINT32_MAX)
		return x->fn[id];
	const struct model_function *f = &x->p->functions.v[id];

	x->fn[id] =
		model_function_intern(&h->dict, xl_str(h, x, f->name), xl_str(h, x, f->system_name),
				      xl_str(h, x, f->filename), f->start_line);
	return x->fn[id];
}

/* A plain native location: named by (mapping, address) alone (see addr_slot). */
static bool plain_location(const struct model_location *l)
{
	return !l->nlines && !l->is_folded && !l->frame_type;
}

static uint32_t addr_hash(uint32_t mapping, uint64_t addr)
{
	uint64_t z = addr * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)mapping << 32 | mapping);

	z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
	return (uint32_t)(z ^ (z >> 32));
}

static void addr_rehash(struct store_head *h)
{
	uint32_t ns = h->addr_nslots ? h->addr_nslots * 2 : 1024;
	struct addr_slot *old = h->addr_slots;
	uint32_t on = h->addr_nslots;

	h->addr_slots = xcalloc(ns, sizeof(*h->addr_slots));
	h->addr_nslots = ns;
	for (uint32_t i = 0; i < on; i++) {
		if (!old[i].id1)
			continue;
		uint32_t s = addr_hash(old[i].mapping, old[i].addr) & (ns - 1);

		while (h->addr_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->addr_slots[s] = old[i];
	}
	free(old);
}

/* Slot of (mapping, addr) in the plain-location table: holds it, or is empty. */
static struct addr_slot *addr_slot(struct store_head *h, uint32_t mapping, uint64_t addr)
{
	if ((h->addr_n + 1) * 2 > h->addr_nslots)
		addr_rehash(h);
	uint32_t s = addr_hash(mapping, addr) & (h->addr_nslots - 1);
	struct addr_slot *sl;

	while ((sl = &h->addr_slots[s])->id1) {
		if (sl->addr == addr && sl->mapping == mapping)
			break;
		s = (s + 1) & (h->addr_nslots - 1);
	}
	return sl;
}

/*
 * Hash of a location with lines (splitmix64-style mixing of every field;
 * the table compares the fields on a hash match, so this only spreads).
 */
static uint32_t loc_hash(uint32_t mapping, uint64_t addr, bool folded, uint32_t frame_type,
			 const struct model_line *lines, uint32_t nlines)
{
	uint64_t z = addr * 0x9e3779b97f4a7c15ULL ^
		     ((uint64_t)mapping << 32 | (uint64_t)frame_type << 1 | folded);

	z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL ^ nlines;
	for (uint32_t i = 0; i < nlines; i++) {
		z ^= lines[i].function + 0x632be59bd9b4e019ULL;
		z = (z ^ (z >> 31)) * 0x94d049bb133111ebULL;
		z ^= (uint64_t)lines[i].line * 0xff51afd7ed558ccdULL ^ (uint64_t)lines[i].column;
		z = (z ^ (z >> 29)) * 0xbf58476d1ce4e5b9ULL;
	}
	return (uint32_t)(z ^ (z >> 32));
}

static void loc_rehash(struct store_head *h)
{
	uint32_t ns = h->loc_nslots ? h->loc_nslots * 2 : 1024;
	struct loc_slot *old = h->loc_slots;
	uint32_t on = h->loc_nslots;

	h->loc_slots = xcalloc(ns, sizeof(*h->loc_slots));
	h->loc_nslots = ns;
	for (uint32_t i = 0; i < on; i++) {
		if (!old[i].id1)
			continue;
		uint32_t s = old[i].hash & (ns - 1);

		while (h->loc_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->loc_slots[s] = old[i];
	}
	free(old);
}

/* Field by field: struct model_line has padding, so no memcmp. */
static bool lines_equal(const struct model_line *a, const struct model_line *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i].function != b[i].function || a[i].line != b[i].line ||
		    a[i].column != b[i].column)
			return false;
	return true;
}

/*
 * Head id of the location with these translated fields and @lines[@nlines]
 * (head function ids), adding it if new (write lock held).
 */
static uint32_t loc_intern(struct store_head *h, uint32_t mapping, uint64_t addr, bool folded,
			   uint32_t frame_type, const struct model_line *lines, uint32_t nlines)
{
	uint32_t hash = loc_hash(mapping, addr, folded, frame_type, lines, nlines), s, got;
	struct loc_slot *sl;

	if ((h->loc_n + 1) * 2 > h->loc_nslots)
		loc_rehash(h);
	s = hash & (h->loc_nslots - 1);
	while ((sl = &h->loc_slots[s])->id1) {
		const struct model_location *l = &h->dict.locations.v[sl->id1 - 1];

		if (sl->hash == hash && l->address == addr && l->mapping == mapping &&
		    l->nlines == nlines && l->is_folded == folded && l->frame_type == frame_type &&
		    lines_equal(&h->dict.lines.v[l->line_off], lines, nlines))
			return sl->id1 - 1;
		s = (s + 1) & (h->loc_nslots - 1);
	}
	got = model_location_add(&h->dict, mapping, addr, lines, nlines);
	h->dict.locations.v[got].is_folded = folded;
	h->dict.locations.v[got].frame_type = frame_type;
	*sl = (struct loc_slot){ hash, got + 1 };
	h->loc_n++;
	return got;
}

uint32_t head_xl_location(struct store_head *h, struct xlate *x, uint32_t id)
{
	if (xl_tab(&x->loc, x->p->locations.n)[id] != UINT32_MAX)
		return x->loc[id];
	const struct model_location *l = &x->p->locations.v[id];
	uint32_t mapping = l->mapping ? xl_mapping(h, x, l->mapping) : 0;
	if (plain_location(l)) {
		struct addr_slot *sl = addr_slot(h, mapping, l->address);

		if (!sl->id1) {
			uint32_t got = model_location_add(&h->dict, mapping, l->address, NULL, 0);

			*sl = (struct addr_slot){ l->address, mapping, got + 1 };
			h->addr_n++;
		}
		x->loc[id] = sl->id1 - 1;
		return x->loc[id];
	}
	uint32_t frame_type = xl_str(h, x, l->frame_type);

	x->lines.n = 0;
	VEC_RESERVE(&x->lines, l->nlines);
	for (uint32_t i = 0; i < l->nlines; i++) {
		struct model_line ln = x->p->lines.v[l->line_off + i];

		ln.function = ln.function ? xl_function(h, x, ln.function) : 0;
		x->lines.v[x->lines.n++] = ln;
	}
	x->loc[id] =
		loc_intern(h, mapping, l->address, l->is_folded, frame_type, x->lines.v, l->nlines);
	return x->loc[id];
}

/* --- content keys --------------------------------------------------------- */

/*
 * The whole-stack memo (stack_node) keys a stack by the content of its
 * locations (model/stackkey.h), the same key fmt_otlp_decode_pending
 * computes from the wire, so a stack seen before costs no dictionary
 * lookups at all. Each string, mapping and location key is computed once
 * per dictionary.
 */
static struct model_key xh_str(struct xlate *x, uint32_t id)
{
	struct hslot *e = &x->str_h[id];

	if (e->epoch != x->epoch) {
		e->h = model_key_bytes(x->p->strings.s[id], x->p->strings.len[id]);
		e->epoch = x->epoch;
	}
	return e->h;
}

static struct model_key xh_mapping(struct xlate *x, uint32_t id)
{
	struct hslot *e = &x->map_h[id];

	if (!id)
		return (struct model_key){ 0, 0 };
	if (e->epoch != x->epoch) {
		const struct model_mapping *m = &x->p->mappings.v[id];

		e->h = model_key_mapping(m->memory_start, m->memory_limit, m->file_offset,
					 xh_str(x, m->filename), xh_str(x, m->build_id),
					 model_mapping_flags(m));
		e->epoch = x->epoch;
	}
	return e->h;
}

/* The key of location @id of the profile (model_key_location), once per dictionary. */
static struct model_key xh_location(struct xlate *x, uint32_t id)
{
	struct hslot *e = &x->loc_h[id];

	if (e->epoch == x->epoch)
		return e->h;
	e->epoch = x->epoch;
	const struct model_location *l = &x->p->locations.v[id];
	struct model_key map = xh_mapping(x, l->mapping), ft = xh_str(x, l->frame_type);

	x->klines.n = 0;
	VEC_RESERVE(&x->klines, l->nlines);
	for (uint32_t i = 0; i < l->nlines; i++) {
		const struct model_line *ln = &x->p->lines.v[l->line_off + i];
		const struct model_function *f = &x->p->functions.v[ln->function];

		/* Function 0 (none) reads as all empty strings, like a function with
		 * empty names, which the head keeps apart: has_function tells them apart. */
		x->klines.v[i] = (struct model_key_line){ x->p->strings.s[f->name],
							  x->p->strings.s[f->system_name],
							  x->p->strings.s[f->filename],
							  x->p->strings.len[f->name],
							  x->p->strings.len[f->system_name],
							  x->p->strings.len[f->filename],
							  f->start_line,
							  ln->function != 0,
							  ln->line,
							  ln->column };
	}
	e->h = model_key_location(map, l->address, l->is_folded, ft, x->klines.v, l->nlines);
	return e->h;
}

/* --- stack tree ------------------------------------------------------------ */

static uint32_t node_hash(uint32_t parent, uint32_t loc)
{
	uint64_t z = ((uint64_t)parent << 32 | loc) + 0x9e3779b97f4a7c15ULL;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return (uint32_t)(z ^ (z >> 31));
}

static void node_rehash(struct store_head *h)
{
	uint32_t ns = h->node_nslots ? h->node_nslots * 2 : 1024;

	free(h->node_slots);
	h->node_slots = xcalloc(ns, sizeof(*h->node_slots));
	h->node_nslots = ns;
	for (uint32_t id = 1; id < h->nodes.n; id++) {
		const struct store_stack_node *nd = &h->nodes.v[id];
		uint32_t s = node_hash(nd->parent, nd->loc) & (ns - 1);

		while (h->node_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->node_slots[s] = (struct node_slot){ nd->parent, nd->loc, id + 1 };
	}
}

uint32_t head_node_intern(struct store_head *h, uint32_t parent, uint32_t loc)
{
	uint32_t s;
	struct node_slot *sl;

	if ((h->nodes.n + 1) * 2 > h->node_nslots)
		node_rehash(h);
	s = node_hash(parent, loc) & (h->node_nslots - 1);
	while ((sl = &h->node_slots[s])->id1) {
		if (sl->parent == parent && sl->loc == loc)
			return sl->id1 - 1;
		s = (s + 1) & (h->node_nslots - 1);
	}
	PROF_ASSERT(h->nodes.n < UINT32_MAX - 1);
	struct store_stack_node nd = { parent, loc };
	VEC_PUSH(&h->nodes, nd);
	uint32_t id = (uint32_t)h->nodes.n - 1;
	*sl = (struct node_slot){ parent, loc, id + 1 };
	return id;
}

/*
 * Whole stacks: a table from the 128-bit XXH3 of a stack's location keys
 * (root first; see stack_node) to its leaf node, so a stack seen before in
 * this head costs one probe instead of one per frame (deep stacks: 20..60
 * probes, each a cache miss in a large tree) and no dictionary lookups. A
 * collision of two different stacks needs a 2^-128 event; the first walk
 * of every stack is exact.
 */
static void stack_rehash(struct store_head *h)
{
	uint32_t ns = h->stack_nslots ? h->stack_nslots * 2 : 1024;
	struct stack_slot *old = h->stack_slots;
	uint32_t on = h->stack_nslots;

	h->stack_slots = xcalloc(ns, sizeof(*h->stack_slots));
	h->stack_nslots = ns;
	for (uint32_t i = 0; i < on; i++) {
		if (!old[i].id1)
			continue;
		uint32_t s = (uint32_t)old[i].lo & (ns - 1);

		while (h->stack_slots[s].id1)
			s = (s + 1) & (ns - 1);
		h->stack_slots[s] = old[i];
	}
	free(old);
}

/* The stack-memo slot of @key: holds it, or is empty (write lock held). */
struct stack_slot *head_stack_slot(struct store_head *h, struct model_key key)
{
	uint32_t s = (uint32_t)key.lo & (h->stack_nslots - 1);
	struct stack_slot *sl;

	while ((sl = &h->stack_slots[s])->id1) {
		if (sl->lo == key.lo && sl->hi == key.hi)
			break;
		s = (s + 1) & (h->stack_nslots - 1);
	}
	return sl;
}

/*
 * Leaf node of the stack @locs[@n] (profile location ids, leaf first).
 * The stack's key (model_key_stack) is built without looking locations
 * up in the head, so a stack seen before costs one probe in all; @given,
 * when not NULL, is that key already (a decoder computed it).
 */
uint32_t head_stack_node(struct store_head *h, struct xlate *x, const uint32_t *locs, uint32_t n,
			 struct locpath *path, const struct model_key *given)
{
	uint32_t node = 0;
	struct model_key key;

	if (!n)
		return 0;
	if (given) {
		key = *given;
	} else {
		VEC_RESERVE(path, n);
		for (uint32_t j = 0; j < n; j++)
			path->v[j] = xh_location(x, locs[n - 1 - j]);
		key = model_key_stack(path->v, n);
	}
	if ((h->stack_n + 1) * 2 > h->stack_nslots)
		stack_rehash(h);
	struct stack_slot *sl = head_stack_slot(h, key);
	if (sl->id1)
		return sl->id1 - 1;
	for (uint32_t j = 0; j < n; j++)
		node = head_node_intern(h, node, head_xl_location(h, x, locs[n - 1 - j]));
	*sl = (struct stack_slot){ key.lo, key.hi, node + 1 };
	h->stack_n++;
	return node;
}
