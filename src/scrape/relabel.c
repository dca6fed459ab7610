// SPDX-License-Identifier: Apache-2.0
/*
 * relabel.c - label sets and relabeling rules; see relabel.h.
 *
 * Label sets are small (<= SCRAPE_MAX_LABELS) sorted arrays: lookups are
 * binary searches, inserts shift. Replacement expansion follows Go's
 * regexp.Expand, which Prometheus uses: "$name" takes the longest run of
 * letters, digits and '_' ("$1x" is group "1x", not group 1 then "x"),
 * "${name}" delimits it, "$$" is a literal '$', an unknown group expands
 * to "".
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"
#include "scrape/relabel.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <strings.h>
#include <xxhash.h>

#define RELABEL_MATCH_LIMIT 1000000
#define RELABEL_DEPTH_LIMIT 10000
#define RELABEL_MAX_VALUE   (64 * 1024) /* joined source values */

void scrape_labels_release(struct scrape_labels *ls)
{
	if (!ls)
		return;
	for (size_t i = 0; i < ls->l.n; i++) {
		free(ls->l.v[i].name);
		free(ls->l.v[i].value);
	}
	VEC_FREE(&ls->l);
}

void scrape_labels_copy(struct scrape_labels *dst, const struct scrape_labels *src)
{
	memset(dst, 0, sizeof(*dst));
	VEC_RESERVE(&dst->l, src->l.n);
	for (size_t i = 0; i < src->l.n; i++) {
		dst->l.v[i].name = xstrdup(src->l.v[i].name);
		dst->l.v[i].value = xstrdup(src->l.v[i].value);
	}
	dst->l.n = src->l.n;
}

/* Index of @name, or -(insertion point) - 1. */
static ptrdiff_t find(const struct scrape_labels *ls, const char *name)
{
	size_t lo = 0, hi = ls->l.n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ls->l.v[mid].name, name);

		if (!c)
			return (ptrdiff_t)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -(ptrdiff_t)lo - 1;
}

const char *scrape_labels_get(const struct scrape_labels *ls, const char *name)
{
	ptrdiff_t i = find(ls, name);

	return i >= 0 ? ls->l.v[i].value : NULL;
}

void scrape_labels_set(struct scrape_labels *ls, const char *name, const char *value)
{
	ptrdiff_t i = find(ls, name);
	size_t at;

	if (i >= 0) {
		char *v = xstrdup(value);

		free(ls->l.v[i].value);
		ls->l.v[i].value = v;
		return;
	}
	at = (size_t)(-i - 1);
	VEC_RESERVE(&ls->l, 1);
	memmove(&ls->l.v[at + 1], &ls->l.v[at], (ls->l.n - at) * sizeof(ls->l.v[0]));
	ls->l.v[at].name = xstrdup(name);
	ls->l.v[at].value = xstrdup(value);
	ls->l.n++;
}

void scrape_labels_del(struct scrape_labels *ls, const char *name)
{
	ptrdiff_t i = find(ls, name);

	if (i < 0)
		return;
	free(ls->l.v[i].name);
	free(ls->l.v[i].value);
	memmove(&ls->l.v[i], &ls->l.v[i + 1], (ls->l.n - (size_t)i - 1) * sizeof(ls->l.v[0]));
	ls->l.n--;
}

uint64_t scrape_labels_hash(const struct scrape_labels *ls)
{
	XXH3_state_t *st = XXH3_createState();
	uint64_t h;

	PROF_ASSERT(st);
	XXH3_64bits_reset(st);
	for (size_t i = 0; i < ls->l.n; i++) {
		XXH3_64bits_update(st, ls->l.v[i].name, strlen(ls->l.v[i].name) + 1);
		XXH3_64bits_update(st, ls->l.v[i].value, strlen(ls->l.v[i].value) + 1);
	}
	h = XXH3_64bits_digest(st);
	XXH3_freeState(st);
	return h;
}

int scrape_labels_json(const struct scrape_labels *ls, bool skip_internal, struct buf *out)
{
	int rc = buf_addstr(out, "{");
	bool first = true;

	for (size_t i = 0; i < ls->l.n && !rc; i++) {
		const struct scrape_label *l = &ls->l.v[i];

		if (skip_internal && l->name[0] == '_' && l->name[1] == '_')
			continue;
		if (!first)
			rc = buf_addstr(out, ",");
		first = false;
		if (!rc)
			rc = buf_add_json_str(out, l->name, strlen(l->name));
		if (!rc)
			rc = buf_addstr(out, ":");
		if (!rc)
			rc = buf_add_json_str(out, l->value, strlen(l->value));
	}
	return rc ? rc : buf_addstr(out, "}");
}

bool scrape_label_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > SCRAPE_MAX_LABEL_NAME)
		return false;
	if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '_'))
		return false;
	for (size_t i = 1; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.'))
			return false;
	}
	return true;
}

int scrape_relabel_action_parse(const char *s, enum scrape_relabel_action *out)
{
	static const struct {
		const char *name;
		enum scrape_relabel_action a;
	} map[] = {
		{ "replace", SCRAPE_RELABEL_REPLACE },
		{ "keep", SCRAPE_RELABEL_KEEP },
		{ "drop", SCRAPE_RELABEL_DROP },
		{ "hashmod", SCRAPE_RELABEL_HASHMOD },
		{ "labelmap", SCRAPE_RELABEL_LABELMAP },
		{ "labeldrop", SCRAPE_RELABEL_LABELDROP },
		{ "labelkeep", SCRAPE_RELABEL_LABELKEEP },
	};

	for (size_t i = 0; i < PROF_ARRAY_SIZE(map); i++)
		if (!strcasecmp(s, map[i].name)) {
			*out = map[i].a;
			return 0;
		}
	return -EINVAL;
}

static const char *action_name(enum scrape_relabel_action a)
{
	switch (a) {
	case SCRAPE_RELABEL_REPLACE:
		return "replace";
	case SCRAPE_RELABEL_KEEP:
		return "keep";
	case SCRAPE_RELABEL_DROP:
		return "drop";
	case SCRAPE_RELABEL_HASHMOD:
		return "hashmod";
	case SCRAPE_RELABEL_LABELMAP:
		return "labelmap";
	case SCRAPE_RELABEL_LABELDROP:
		return "labeldrop";
	case SCRAPE_RELABEL_LABELKEEP:
		return "labelkeep";
	}
	return "?";
}

int scrape_relabel_compile(struct scrape_relabel *r, struct prof_err *err)
{
	const char *src = r->regex ? r->regex : "(.*)";
	char *anchored;
	int ec;
	PCRE2_SIZE eo;

	if ((r->action == SCRAPE_RELABEL_REPLACE || r->action == SCRAPE_RELABEL_HASHMOD) &&
	    (!r->target_label || !*r->target_label))
		return prof_err_set(err, -EINVAL, -1, "action %s needs a target_label",
				    action_name(r->action));
	if (r->action == SCRAPE_RELABEL_HASHMOD && !r->modulus)
		return prof_err_set(err, -EINVAL, -1, "action hashmod needs a modulus > 0");
	if (r->action == SCRAPE_RELABEL_HASHMOD && !scrape_label_name_ok(r->target_label))
		return prof_err_set(err, -EINVAL, -1, "target_label '%.100s' is not a label name",
				    r->target_label);
	if (r->target_label && strlen(r->target_label) > SCRAPE_MAX_LABEL_NAME)
		return prof_err_set(err, -EINVAL, -1, "target_label is longer than %d bytes",
				    SCRAPE_MAX_LABEL_NAME);
	for (size_t i = 0; i < r->nsource; i++)
		if (!scrape_label_name_ok(r->source_labels[i]))
			return prof_err_set(err, -EINVAL, -1,
					    "source_labels: '%.100s' is not a label name",
					    r->source_labels[i]);
	if (strlen(src) > 8192)
		return prof_err_set(err, -EINVAL, -1, "regex is longer than 8192 bytes");
	anchored = xasprintf("^(?:%s)$", src);
	if (r->re)
		pcre2_code_free(r->re);
	r->re = pcre2_compile((PCRE2_SPTR)anchored, PCRE2_ZERO_TERMINATED, 0, &ec, &eo, NULL);
	free(anchored);
	if (!r->re) {
		PCRE2_UCHAR msg[160];

		pcre2_get_error_message(ec, msg, sizeof(msg));
		return prof_err_set(err, -EINVAL, -1, "regex '%.100s': %s at offset %zu", src,
				    (const char *)msg, eo > 4 ? (size_t)eo - 4 : 0);
	}
	return 0;
}

void scrape_relabel_release(struct scrape_relabel *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nsource; i++)
		free(r->source_labels[i]);
	free(r->source_labels);
	free(r->separator);
	free(r->regex);
	free(r->target_label);
	free(r->replacement);
	if (r->re)
		pcre2_code_free(r->re);
	memset(r, 0, sizeof(*r));
}

/* Match @s against @r's regex; >0 on a match (ovector in @md), else 0. */
static int re_match(const struct scrape_relabel *r, const char *s, pcre2_match_data *md,
		    pcre2_match_context *mc)
{
	int rc = pcre2_match(r->re, (PCRE2_SPTR)s, strlen(s), 0, 0, md, mc);

	return rc > 0 ? rc : 0;
}

/* Append group @g of the last match on @subj to @out (nothing when unset). */
static void add_group(struct buf *out, const char *subj, pcre2_match_data *md, int ngroups, long g)
{
	PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);

	if (g < 0 || g >= ngroups || ov[2 * g] == PCRE2_UNSET)
		return;
	(void)buf_add(out, subj + ov[2 * g], ov[2 * g + 1] - ov[2 * g]);
}

/* Go's regexp.Expand of @tmpl with the match in @md on @subj, into @out. */
static void expand(const struct scrape_relabel *r, const char *tmpl, const char *subj,
		   pcre2_match_data *md, int ngroups, struct buf *out)
{
	const char *p = tmpl;

	buf_reset(out);
	while (*p) {
		const char *dollar = strchr(p, '$');
		const char *name, *end;
		size_t nn;

		if (!dollar) {
			(void)buf_addstr(out, p);
			break;
		}
		(void)buf_add(out, p, (size_t)(dollar - p));
		p = dollar + 1;
		if (*p == '$') {
			(void)buf_add(out, "$", 1);
			p++;
			continue;
		}
		if (*p == '{') {
			name = p + 1;
			end = strchr(name, '}');
			if (!end) {
				(void)buf_add(out, "$", 1); /* Go: a bad reference is literal */
				continue;
			}
			nn = (size_t)(end - name);
			p = end + 1;
		} else {
			name = p;
			while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			       (*p >= '0' && *p <= '9') || *p == '_')
				p++;
			nn = (size_t)(p - name);
			if (!nn) {
				(void)buf_add(out, "$", 1);
				continue;
			}
		}
		if (!nn || nn > 64)
			continue;
		char tmp[65];
		bool digits = true;

		memcpy(tmp, name, nn);
		tmp[nn] = '\0';
		for (size_t i = 0; i < nn; i++)
			digits &= tmp[i] >= '0' && tmp[i] <= '9';
		if (digits) {
			uint64_t g;

			if (!parse_u64(tmp, &g) && g < (uint64_t)ngroups)
				add_group(out, subj, md, ngroups, (long)g);
		} else {
			int g = pcre2_substring_number_from_name(r->re, (PCRE2_SPTR)tmp);

			if (g > 0)
				add_group(out, subj, md, ngroups, g);
		}
	}
}

static bool value_ok(const char *v)
{
	return strlen(v) <= SCRAPE_MAX_LABEL_VALUE;
}

/* One rule; false = discard the target. */
static bool apply_one(const struct scrape_relabel *r, struct scrape_labels *ls,
		      pcre2_match_data *md, pcre2_match_context *mc, struct buf *val,
		      struct buf *tmp, struct buf *tmp2)
{
	const char *sep = r->separator ? r->separator : ";";
	int m;

	buf_reset(val);
	for (size_t i = 0; i < r->nsource; i++) {
		const char *v = scrape_labels_get(ls, r->source_labels[i]);

		if (i)
			(void)buf_addstr(val, sep);
		(void)buf_addstr(val, v ? v : "");
	}
	const char *value = val->p ? val->p : "";

	switch (r->action) {
	case SCRAPE_RELABEL_KEEP:
		return re_match(r, value, md, mc) > 0;
	case SCRAPE_RELABEL_DROP:
		return re_match(r, value, md, mc) == 0;
	case SCRAPE_RELABEL_REPLACE:
		m = re_match(r, value, md, mc);
		if (!m)
			return true;
		expand(r, r->target_label, value, md, m, tmp);
		expand(r, r->replacement ? r->replacement : "$1", value, md, m, tmp2);
		if (!tmp->p || !scrape_label_name_ok(tmp->p))
			return true;
		if (!tmp2->len)
			scrape_labels_del(ls, tmp->p);
		else if (value_ok(tmp2->p))
			scrape_labels_set(ls, tmp->p, tmp2->p);
		return true;
	case SCRAPE_RELABEL_HASHMOD: {
		char num[24];

		snprintf(num, sizeof(num), "%" PRIu64,
			 XXH3_64bits(value, strlen(value)) % r->modulus);
		scrape_labels_set(ls, r->target_label, num);
		return true;
	}
	case SCRAPE_RELABEL_LABELMAP: {
		/* Collect first: setting labels while walking would revisit them. */
		struct scrape_labels add = { 0 };

		for (size_t i = 0; i < ls->l.n; i++) {
			const char *name = ls->l.v[i].name;

			m = re_match(r, name, md, mc);
			if (!m)
				continue;
			expand(r, r->replacement ? r->replacement : "$1", name, md, m, tmp);
			if (tmp->p && scrape_label_name_ok(tmp->p))
				scrape_labels_set(&add, tmp->p, ls->l.v[i].value);
		}
		for (size_t i = 0; i < add.l.n; i++)
			scrape_labels_set(ls, add.l.v[i].name, add.l.v[i].value);
		scrape_labels_release(&add);
		return true;
	}
	case SCRAPE_RELABEL_LABELDROP:
	case SCRAPE_RELABEL_LABELKEEP:
		for (size_t i = 0; i < ls->l.n;) {
			bool hit = re_match(r, ls->l.v[i].name, md, mc) > 0;

			if (hit == (r->action == SCRAPE_RELABEL_LABELDROP)) {
				free(ls->l.v[i].name);
				free(ls->l.v[i].value);
				memmove(&ls->l.v[i], &ls->l.v[i + 1],
					(ls->l.n - i - 1) * sizeof(ls->l.v[0]));
				ls->l.n--;
			} else {
				i++;
			}
		}
		return true;
	}
	return true;
}

bool scrape_relabel_apply(const struct scrape_relabel *rules, size_t n, struct scrape_labels *ls)
{
	pcre2_match_context *mc;
	struct buf val, tmp, tmp2;
	bool keep = true;

	if (!n)
		return true;
	mc = pcre2_match_context_create(NULL);
	if (mc) {
		pcre2_set_match_limit(mc, RELABEL_MATCH_LIMIT);
		pcre2_set_depth_limit(mc, RELABEL_DEPTH_LIMIT);
	}
	buf_init(&val, RELABEL_MAX_VALUE);
	buf_init(&tmp, RELABEL_MAX_VALUE);
	buf_init(&tmp2, RELABEL_MAX_VALUE);
	for (size_t i = 0; i < n && keep; i++) {
		pcre2_match_data *md;

		if (!rules[i].re)
			continue;
		md = pcre2_match_data_create_from_pattern(rules[i].re, NULL);
		if (!md)
			continue;
		keep = apply_one(&rules[i], ls, md, mc, &val, &tmp, &tmp2);
		pcre2_match_data_free(md);
	}
	buf_release(&val);
	buf_release(&tmp);
	buf_release(&tmp2);
	pcre2_match_context_free(mc);
	return keep;
}
