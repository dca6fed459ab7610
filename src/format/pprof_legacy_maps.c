// SPDX-License-Identifier: Apache-2.0
/*
 * pprof_legacy_maps.c - memory maps of the legacy formats
 * (ParseMemoryMapFromScanner, massageMappings of google/pprof
 * profile/legacy_profile.go): the two expressions with optional groups
 * run on PCRE2 (same syntax; \s spelled out as RE2's [\t\n\f\r ]) with
 * match limits and a line cap.
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

/* ---- memory maps (ParseMemoryMapFromScanner) ------------------------------- */

#define RS	  "[\\t\\n\\f\\r ]"
#define RNS	  "[^\\t\\n\\f\\r ]"
#define HEX	  "(?:0x)?([[:xdigit:]]+)"
#define HEX_RANGE RS "*" HEX "[\\t\\n\\f\\r -]?" RS "*" HEX ":?"
#define PERM	  "(?:" RS "+([-rwxp]+))?"

/* procMapsRE and briefMapsRE of legacy_profile.go, \s spelled as RE2 has it. */
static const char proc_maps_re[] =
	"^" HEX_RANGE PERM "(?:" RS "+([[:xdigit:]]+))?" RS "+[[:xdigit:]]+:[[:xdigit:]]+" RS
	"+[[:digit:]]+(?:" RS "+(" RNS "+))?";
static const char brief_maps_re[] = "^" HEX_RANGE PERM "(?:" RS "+(" RNS "+))?(?:" RS
				    "+\\(@([[:xdigit:]]+)\\))?(?:" RS "+([[:xdigit:]]+))?";

struct lg_re {
	pcre2_code *proc, *brief;
	pcre2_match_data *md;
	pcre2_match_context *mc;
};

static bool re_open(struct lg_re *r)
{
	int ec;
	PCRE2_SIZE eo;

	memset(r, 0, sizeof(*r));
	r->proc = pcre2_compile((PCRE2_SPTR)proc_maps_re, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
	r->brief =
		pcre2_compile((PCRE2_SPTR)brief_maps_re, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
	r->md = pcre2_match_data_create(8, NULL);
	r->mc = pcre2_match_context_create(NULL);
	if (r->mc) {
		pcre2_set_match_limit(r->mc, 100000);
		pcre2_set_depth_limit(r->mc, 1000);
	}
	return r->proc && r->brief && r->md && r->mc;
}

static void re_close(struct lg_re *r)
{
	pcre2_code_free(r->proc);
	pcre2_code_free(r->brief);
	pcre2_match_data_free(r->md);
	pcre2_match_context_free(r->mc);
}

/* Group @i of the last match ("" when unset). */
static struct sl re_group(const struct lg_re *r, const char *s, int rc, int i)
{
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(r->md);

	if (i >= rc || ov[2 * i] == PCRE2_UNSET)
		return sl_make("", 0);
	return sl_make(s + ov[2 * i], ov[2 * i + 1] - ov[2 * i]);
}

/*
 * parseMappingEntry: LG_MAP_OK with a mapping in *m, 0 = skipped (not
 * executable), LG_UNRECOGNIZED otherwise.
 */
static int map_entry(struct lg *g, struct lg_re *r, struct sl l, struct lg_map *m)
{
	struct sl start, end, perm, file, offset, build_id = sl_make("", 0);
	int rc = pcre2_match(r->proc, (PCRE2_SPTR)l.p, l.n, 0, 0, r->md, r->mc);

	if (rc > 0) {
		start = re_group(r, l.p, rc, 1);
		end = re_group(r, l.p, rc, 2);
		perm = re_group(r, l.p, rc, 3);
		offset = re_group(r, l.p, rc, 4);
		file = re_group(r, l.p, rc, 5);
	} else {
		rc = pcre2_match(r->brief, (PCRE2_SPTR)l.p, l.n, 0, 0, r->md, r->mc);
		if (rc <= 0)
			return LG_UNRECOGNIZED;
		start = re_group(r, l.p, rc, 1);
		end = re_group(r, l.p, rc, 2);
		perm = re_group(r, l.p, rc, 3);
		file = re_group(r, l.p, rc, 4);
		offset = re_group(r, l.p, rc, 5);
		build_id = re_group(r, l.p, rc, 6);
	}
	if (perm.n && !memchr(perm.p, 'x', perm.n))
		return 0;
	memset(m, 0, sizeof(*m));
	if (!go_atou_base(start, 16, &m->start) || !go_atou_base(end, 16, &m->limit) ||
	    (offset.n && !go_atou_base(offset, 16, &m->offset)))
		return LG_UNRECOGNIZED;
	m->file = strtab_intern(&g->strs, file.p, file.n);
	m->build_id = strtab_intern(&g->strs, build_id.p, build_id.n);
	return LG_MAP_OK;
}

/* removeLoggingInfo: logInfoRE ^[^\[\]]+:[0-9]+]\s (greedy, so the last such prefix). */
static struct sl strip_log_prefix(struct sl l)
{
	/* [^\[\]]+ stops at the first bracket: the match ends at the first ']'. */
	const char *e = l.p + l.n, *b = l.p;

	while (b < e && *b != '[' && *b != ']')
		b++;
	if (b >= e || *b != ']' || b + 1 >= e || !is_re_space(b[1]))
		return l;
	/* [^\[\]]+ : [0-9]+ before the ']': digits, then ':' with at least one char before. */
	const char *d = b;

	while (d > l.p && is_digit(d[-1]))
		d--;
	if (d == b || d - 1 <= l.p || d[-1] != ':')
		return l;
	return sl_make(b + 2, (size_t)(e - b - 2));
}

struct lg_attrs {
	size_t n;
	struct {
		size_t koff, klen, voff, vlen; /* "$key" (without '$') and value in @store */
	} a[LG_MAX_ATTRS];
	struct buf store;
};

/* strings.Replacer over "$key" -> value pairs: at each byte the first pair that matches. */
static bool attrs_replace(const struct lg_attrs *a, struct sl in, struct buf *out)
{
	const char *st = a->store.p;

	buf_reset(out);
	for (size_t i = 0; i < in.n;) {
		size_t k = a->n;

		if (in.p[i] == '$')
			for (k = 0; k < a->n; k++)
				if (in.n - i - 1 >= a->a[k].klen &&
				    !memcmp(in.p + i + 1, st + a->a[k].koff, a->a[k].klen))
					break;
		if (k < a->n) {
			buf_add(out, st + a->a[k].voff, a->a[k].vlen);
			i += 1 + a->a[k].klen;
		} else {
			buf_add(out, in.p + i, 1);
			i++;
		}
		if (out->len > LG_MAP_LINE_MAX)
			return false;
	}
	return true;
}

/* An unrecognised map line "key = value" defines $key for the lines after it. */
static void attrs_add(struct lg_attrs *a, struct sl line)
{
	const char *eq = memchr(line.p, '=', line.n);
	struct sl k, v;

	if (!eq || a->n >= LG_MAX_ATTRS)
		return;
	k = trim(sl_make(line.p, (size_t)(eq - line.p)));
	v = trim(sl_make(eq + 1, (size_t)(line.p + line.n - eq - 1)));
	a->a[a->n].koff = a->store.len;
	a->a[a->n].klen = k.n;
	buf_add(&a->store, k.p, k.n);
	a->a[a->n].voff = a->store.len;
	a->a[a->n].vlen = v.n;
	buf_add(&a->store, v.p, v.n);
	a->n++;
}

/* adjacent(m1, m2) of profile.go */
static bool maps_adjacent(const struct lg *g, const struct lg_map *a, const struct lg_map *b)
{
	if (a->file && b->file && a->file != b->file)
		return false;
	if (a->build_id && b->build_id && a->build_id != b->build_id)
		return false;
	if (a->limit != b->start)
		return false;
	if (a->offset && b->offset && a->offset + (a->limit - a->start) != b->offset)
		return false;
	(void)g;
	return true;
}

/* libRx ([.]so$|[.]so[._][0-9]+) */
static bool is_lib(struct sl f)
{
	for (size_t i = 0; i + 3 <= f.n; i++) {
		if (memcmp(f.p + i, ".so", 3))
			continue;
		if (i + 3 == f.n)
			return true;
		if (i + 4 < f.n && (f.p[i + 3] == '.' || f.p[i + 3] == '_') && is_digit(f.p[i + 4]))
			return true;
	}
	return false;
}

/* massageMappings */
static void maps_massage(struct lg *g)
{
	struct buf tmp = BUF_INIT;

	if (g->maps.n > 1) {
		size_t w = 1;

		for (size_t i = 1; i < g->maps.n; i++) {
			struct lg_map *lm = &g->maps.v[w - 1], *m = &g->maps.v[i];

			if (maps_adjacent(g, lm, m)) {
				lm->limit = m->limit;
				if (m->file)
					lm->file = m->file;
				if (m->build_id)
					lm->build_id = m->build_id;
				continue;
			}
			g->maps.v[w++] = *m;
		}
		g->maps.n = w;
	}
	for (size_t i = 0; i < g->maps.n; i++) {
		const char *f = strtab_get(&g->strs, g->maps.v[i].file);
		struct sl t;

		/* strings.ReplaceAll(file, "(deleted)", "") then TrimSpace */
		buf_reset(&tmp);
		for (const char *p = f; *p;) {
			if (!strncmp(p, "(deleted)", 9)) {
				p += 9;
				continue;
			}
			buf_add(&tmp, p++, 1);
		}
		t = trim(sl_make(tmp.p ? tmp.p : "", tmp.len));
		if (!t.n || is_lib(t) || t.p[0] == '[')
			continue;
		struct lg_map sw = g->maps.v[0];

		g->maps.v[0] = g->maps.v[i];
		g->maps.v[i] = sw;
		break;
	}
	buf_release(&tmp);
}

/*
 * parseProcMapsFromScanner + ParseMemoryMapFromScanner up to the
 * renumbering: reads the remaining lines of @s as mappings.
 */
int lg_maps_parse(struct lg *g, struct lg_scan *s)
{
	struct lg_re re;
	struct lg_attrs a;
	struct buf rep = BUF_INIT;
	bool opened = false;
	int rc = 0;

	memset(&a, 0, sizeof(a));
	buf_init(&a.store, 0);
	while (scan_next(s)) {
		struct sl l = strip_log_prefix(s->cur);
		struct lg_map m;
		int mr;

		if (!opened) {
			opened = true;
			if (!re_open(&re)) {
				re_close(&re);
				rc = prof_err_set(g->err, -ENOMEM, -1, "%s: cannot compile a regex",
						  g->what);
				goto out;
			}
		}
		if (a.n) {
			if (!attrs_replace(&a, l, &rep))
				continue;
			l = sl_make(rep.p ? rep.p : "", rep.len);
		}
		if (l.n > LG_MAP_LINE_MAX)
			continue;
		mr = map_entry(g, &re, l, &m);
		if (mr == LG_UNRECOGNIZED) {
			attrs_add(&a, l);
			continue;
		}
		if (mr == LG_MAP_OK)
			VEC_PUSH(&g->maps, m);
	}
	maps_massage(g);
out:
	if (opened && !rc)
		re_close(&re);
	buf_release(&rep);
	buf_release(&a.store);
	return rc;
}
