// SPDX-License-Identifier: Apache-2.0
/*
 * pprof_legacy_lg.c - the legacy decoder's intermediate profile (struct
 * lg: locations by address, samples over a shared stack array, mappings,
 * Java functions) and its renumbering steps in pprof's order
 * (remapLocationIDs, remapMappingIDs, cleanupDuplicateLocations of
 * google/pprof profile/legacy_profile.go).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/pprof_legacy.h"
#include "format/textutil.h"
#include "format/pprof_legacy_int.h"

#include <math.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* ---- the intermediate profile ---------------------------------------------- */

void lg_init(struct lg *g, const void *data, size_t n, const struct fmt_decode_opts *opts,
	     struct prof_err *err)
{
	memset(g, 0, sizeof(*g));
	g->data = data;
	g->size = n;
	g->opts = opts;
	g->err = err;
	fmt_idmap_init(&g->by_addr);
	strtab_init(&g->strs);
}

void lg_release(struct lg *g)
{
	VEC_FREE(&g->locs);
	fmt_idmap_release(&g->by_addr);
	VEC_FREE(&g->stk);
	VEC_FREE(&g->samples);
	VEC_FREE(&g->maps);
	VEC_FREE(&g->fns);
	VEC_FREE(&g->order);
	VEC_FREE(&g->fn_of_name);
	strtab_release(&g->strs);
}

/* Back to an empty profile for the next parser; the reason (why) is kept. */
void lg_reset(struct lg *g, const char *what)
{
	char why[sizeof(g->why)];

	memcpy(why, g->why, sizeof(why));
	lg_release(g);
	lg_init(g, g->data, g->size, g->opts, g->err);
	memcpy(g->why, why, sizeof(why));
	g->what = what;
}

int lg_unrecognized(struct lg *g, const char *fmt, ...)
{
	va_list ap;
	int len = snprintf(g->why, sizeof(g->why), "%s: ", g->what);

	va_start(ap, fmt);
	if (len > 0 && (size_t)len < sizeof(g->why))
		vsnprintf(g->why + len, sizeof(g->why) - (size_t)len, fmt, ap);
	va_end(ap);
	return LG_UNRECOGNIZED;
}

void lg_types(struct lg *g, int nv, const char *const *types, const char *pt_type,
	      const char *pt_unit)
{
	g->nv = nv;
	for (int i = 0; i < nv; i++) {
		g->st[i][0] = types[2 * i];
		g->st[i][1] = types[2 * i + 1];
	}
	g->pt[0] = pt_type;
	g->pt[1] = pt_unit;
}

/* The location of address @addr (created on first use, in order of appearance). */
uint32_t lg_loc(struct lg *g, uint64_t addr)
{
	uint32_t idx;

	if (fmt_idmap_get(&g->by_addr, addr, &idx))
		return idx;
	idx = (uint32_t)g->locs.n;
	VEC_PUSH(&g->locs, ((struct lg_loc){ .addr = addr, .addr_set = true }));
	fmt_idmap_put(&g->by_addr, addr, idx);
	return idx;
}

int lg_sample_begin(struct lg *g, size_t *off)
{
	size_t max = g->opts ? g->opts->max_samples : 0;

	if (max && g->samples.n >= max)
		return prof_err_set(g->err, -PROF_ETOOBIG, -1,
				    "%s: more than %zu samples (the limit)", g->what, max);
	if (g->samples.n >= UINT32_MAX - 1 || g->stk.n >= UINT32_MAX - 1)
		return prof_err_set(g->err, -PROF_ETOOBIG, -1, "%s: more than 2^32 samples",
				    g->what);
	*off = g->stk.n;
	return 0;
}

struct lg_sample *lg_sample_end(struct lg *g, size_t off)
{
	struct lg_sample s = { 0 };

	if (g->stk.n > UINT32_MAX - 1)
		return NULL;
	s.off = (uint32_t)off;
	s.n = (uint32_t)(g->stk.n - off);
	VEC_PUSH(&g->samples, s);
	return &g->samples.v[g->samples.n - 1];
}

/* Removes frame @k of sample @s (pprof: s.Location = append(s.Location[:k], s.Location[k+1:]...)). */
void lg_drop_frame(struct lg *g, struct lg_sample *s, uint32_t k)
{
	uint32_t *v = g->stk.v + s->off;

	memmove(v + k, v + k + 1, (s->n - k - 1) * sizeof(*v));
	s->n--;
}

uint64_t lg_addr(const struct lg *g, const struct lg_sample *s, uint32_t k)
{
	return g->locs.v[g->stk.v[s->off + k]].addr;
}

/* ---- renumbering ------------------------------------------------------------ */

/* remapLocationIDs: ids in order of first use by the samples; unused ones dropped. */
void lg_remap_locations(struct lg *g)
{
	g->order.n = 0;
	for (size_t i = 0; i < g->locs.n; i++)
		g->locs.v[i].id = 0;
	for (size_t i = 0; i < g->samples.n; i++) {
		const struct lg_sample *s = &g->samples.v[i];

		for (uint32_t k = 0; k < s->n; k++) {
			struct lg_loc *l = &g->locs.v[g->stk.v[s->off + k]];

			if (l->id)
				continue;
			VEC_PUSH(&g->order, g->stk.v[s->off + k]);
			l->id = (uint32_t)g->order.n;
		}
	}
}

/* remapMappingIDs */
void lg_remap_mappings(struct lg *g)
{
	uint32_t fake = 0;

	if (g->maps.n > 1 &&
	    !strncmp(strtab_get(&g->strs, g->maps.v[0].file), "/anon_hugepage", 14) &&
	    g->maps.v[0].limit == g->maps.v[1].start) {
		memmove(g->maps.v, g->maps.v + 1, (g->maps.n - 1) * sizeof(*g->maps.v));
		g->maps.n--;
	}
	if (g->maps.n && g->maps.v[0].start - g->maps.v[0].offset == 0x400000) {
		g->maps.v[0].start = 0x400000;
		g->maps.v[0].offset = 0;
	}
	for (size_t i = 0; i < g->order.n; i++) {
		struct lg_loc *l = &g->locs.v[g->order.v[i]];
		uint64_t a = l->addr;
		size_t k;

		if (l->map || a == 0)
			continue;
		for (k = 0; k < g->maps.n; k++)
			if (g->maps.v[k].start <= a && a < g->maps.v[k].limit)
				break;
		if (k == g->maps.n) {
			for (k = 0; k < g->maps.n; k++) {
				struct lg_map *m = &g->maps.v[k];

				if (m->offset && m->start - m->offset <= a && a < m->start) {
					m->start -= m->offset;
					m->offset = 0;
					break;
				}
			}
		}
		if (k == g->maps.n) {
			if (!fake) {
				VEC_PUSH(&g->maps, ((struct lg_map){ .limit = UINT64_MAX }));
				fake = (uint32_t)g->maps.n;
			}
			k = fake - 1;
		}
		l->map = (uint32_t)k + 1;
	}
}

/* ParseMemoryMapFromScanner: maps, then the renumbering. */
int lg_memory_map(struct lg *g, struct lg_scan *s)
{
	int rc = lg_maps_parse(g, s);

	if (rc)
		return rc;
	lg_remap_locations(g);
	lg_remap_mappings(g);
	return 0;
}

/* parseAdditionalSections */
int lg_additional_sections(struct lg *g, struct lg_scan *s)
{
	while (!map_sentinel(s->cur) && scan_next(s))
		;
	return lg_memory_map(g, s);
}

/* cleanupDuplicateLocations */
void lg_cleanup_duplicates(struct lg *g)
{
	for (size_t i = 0; i < g->samples.n; i++) {
		struct lg_sample *s = &g->samples.v[i];

		if (s->n > 1 && lg_addr(g, s, 0) == lg_addr(g, s, 1) + 1)
			lg_drop_frame(g, s, 1);
	}
}
