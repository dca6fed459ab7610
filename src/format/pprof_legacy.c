// SPDX-License-Identifier: Apache-2.0
/*
 * pprof_legacy.c - the legacy profile formats `go tool pprof` reads; see
 * pprof_legacy.h for the formats and what comes out.
 *
 * The code follows google/pprof's profile/legacy_profile.go and
 * legacy_java_profile.go step by step (parseLegacy, parseCPU,
 * cpuProfile, parseCPUSamples, parseHeap, parseHeapHeader,
 * parseHeapSample, scaleHeapSample, parseGoCount, parseThread,
 * parseContention, parseJavaProfile, ParseMemoryMapFromScanner,
 * massageMappings, remapLocationIDs, remapMappingIDs,
 * cleanupDuplicateLocations, addLegacyFrameInfo), because the point is
 * to give the numbers pprof gives: the corpus facts come from it. pprof
 * builds a Profile in memory, then renumbers it; we do the same in a
 * small intermediate form (struct lg: locations by address, samples over
 * a shared stack array, mappings, Java functions) and only then write the
 * model, so the renumbering steps keep pprof's order.
 *
 * pprof's regular expressions are matched by hand, each next to its Go
 * text, with RE2's leftmost-first semantics worked out case by case: they
 * are simple, and hand matching is linear where a backtracking engine on
 * hostile lines is not. The two memory-map expressions are the exception:
 * their optional groups interact, so they run on PCRE2 (same syntax; \s
 * spelled out as RE2's [\t\n\f\r ]), with match limits and a line cap.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/pprof_legacy.h"
#include "format/textutil.h"

#include <math.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

/* A parser's "not my format": pprof's errUnrecognized, try the next one. */
#define LG_UNRECOGNIZED 1
#define LG_MAP_OK	2 /* map_entry: a mapping */
/* Longest memory-map line (after $attr substitution) we try to match. */
#define LG_MAP_LINE_MAX 4096
#define LG_MAX_ATTRS	64

struct lg_loc {
	uint64_t addr;
	uint32_t map;  /* index into lg.maps + 1; 0 = none */
	uint32_t fn;   /* index into lg.fns + 1; 0 = no line */
	int64_t line;  /* source line (Java), with fn */
	uint32_t id;   /* 1-based position after remapLocationIDs; 0 = dropped */
	bool addr_set; /* Java: address cleared once resolved */
};

struct lg_map {
	uint64_t start, limit, offset;
	uint32_t file, build_id; /* ids in lg.strs */
};

struct lg_fn {
	uint32_t name, file; /* ids in lg.strs */
};

struct lg_sample {
	uint32_t off, n; /* range of lg.stk: location indexes, leaf first */
	int64_t v[4];
	int64_t bytes; /* numeric label "bytes" when has_bytes */
	bool has_bytes;
};

struct lg {
	const char *data;
	size_t size;
	const struct fmt_decode_opts *opts;
	struct prof_err *err;
	const char *what; /* "pprof-legacy heap", ... */

	int nv;		      /* value columns */
	const char *st[4][2]; /* sample types (type, unit), static or in strs */
	const char *pt[2];    /* period type */
	int64_t period, duration_ns;
	const char *drop, *keep;

	VEC(struct lg_loc) locs;
	struct fmt_idmap by_addr; /* address -> index into locs */
	VEC(uint32_t) stk;
	VEC(struct lg_sample) samples;
	VEC(struct lg_map) maps;
	VEC(struct lg_fn) fns;
	VEC(uint32_t) order; /* location indexes by id (remapLocationIDs) */
	struct strtab strs;
	VEC(uint32_t) fn_of_name; /* strs id -> fns index + 1 (Java) */

	char why[200]; /* what the last header-matching parser disliked */
};

/* ---- strings and numbers, Go style --------------------------------------- */

struct sl {
	const char *p;
	size_t n;
};

static struct sl sl_make(const char *p, size_t n)
{
	struct sl s = { p, n };

	return s;
}

static bool sl_eq(struct sl s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n == n && !memcmp(s.p, lit, n);
}

static bool sl_prefix(struct sl s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n >= n && !memcmp(s.p, lit, n);
}

static bool sl_contains(struct sl s, const char *lit)
{
	size_t n = strlen(lit);

	return n <= s.n && memmem(s.p, s.n, lit, n) != NULL;
}

static bool is_space(char c) /* Go's unicode.IsSpace on ASCII */
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static bool is_re_space(char c) /* RE2's \s */
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static bool is_lhex(char c) /* [0-9a-f] */
{
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

static bool is_word(char c) /* RE2's \w */
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static struct sl trim(struct sl s) /* strings.TrimSpace on ASCII */
{
	while (s.n && is_space(s.p[0]))
		s.p++, s.n--;
	while (s.n && is_space(s.p[s.n - 1]))
		s.n--;
	return s;
}

/* isSpaceOrComment */
static bool blank_or_comment(struct sl s)
{
	s = trim(s);
	return s.n == 0 || s.p[0] == '#';
}

/* isMemoryMapSentinel */
static bool map_sentinel(struct sl s)
{
	return sl_contains(s, "--- Memory map: ---") || sl_contains(s, "MAPPED_LIBRARIES:");
}

static int digit_val(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'Z')
		return c - 'A' + 10;
	return 99;
}

/* strconv.ParseUint(s, base, 64) for base 2..16, no prefix, no '_'. */
static bool go_atou_base(struct sl s, int base, uint64_t *out)
{
	uint64_t v = 0;

	if (!s.n)
		return false;
	for (size_t i = 0; i < s.n; i++) {
		int d = digit_val(s.p[i]);

		if (d >= base || v > (UINT64_MAX - (uint64_t)d) / (uint64_t)base)
			return false;
		v = v * (uint64_t)base + (uint64_t)d;
	}
	*out = v;
	return true;
}

/* strconv.ParseUint(s, 0, 64): 0x / 0b / 0o / 0 prefixes; no '_' (see the header). */
static bool go_atou0(struct sl s, uint64_t *out)
{
	if (s.n >= 2 && s.p[0] == '0') {
		char c = (char)(s.p[1] | 0x20);

		if (c == 'x')
			return go_atou_base(sl_make(s.p + 2, s.n - 2), 16, out);
		if (c == 'b')
			return go_atou_base(sl_make(s.p + 2, s.n - 2), 2, out);
		if (c == 'o')
			return go_atou_base(sl_make(s.p + 2, s.n - 2), 8, out);
		return go_atou_base(sl_make(s.p + 1, s.n - 1), 8, out);
	}
	return go_atou_base(s, 10, out);
}

/* strconv.ParseInt(s, base, 64), base 0 or 10: optional sign. */
static bool go_atoi(struct sl s, int base, int64_t *out)
{
	bool neg = false;
	uint64_t u;

	if (s.n && (s.p[0] == '+' || s.p[0] == '-')) {
		neg = s.p[0] == '-';
		s.p++, s.n--;
	}
	if (!(base == 0 ? go_atou0(s, &u) : go_atou_base(s, base, &u)))
		return false;
	if (u > (uint64_t)INT64_MAX + neg)
		return false;
	*out = neg ? (int64_t)(0 - u) : (int64_t)u;
	return true;
}

/* Go's int64(float64) on amd64 (CVTTSD2SQ): out of range and NaN give INT64_MIN. */
static int64_t go_f2i(double d)
{
	if (isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

static int64_t wmul(int64_t a, int64_t b) /* Go's wrapping int64 multiply */
{
	return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* Length of the run of [0-9] at @p (up to @e). */
static size_t digits(const char *p, const char *e)
{
	const char *q = p;

	while (q < e && is_digit(*q))
		q++;
	return (size_t)(q - p);
}

static const char *spaces(const char *p, const char *e) /* ` *` */
{
	while (p < e && *p == ' ')
		p++;
	return p;
}

/* ---- the intermediate profile ---------------------------------------------- */

static void lg_init(struct lg *g, const void *data, size_t n, const struct fmt_decode_opts *opts,
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

static void lg_release(struct lg *g)
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
static void lg_reset(struct lg *g, const char *what)
{
	char why[sizeof(g->why)];

	memcpy(why, g->why, sizeof(why));
	lg_release(g);
	lg_init(g, g->data, g->size, g->opts, g->err);
	memcpy(g->why, why, sizeof(why));
	g->what = what;
}

static int lg_unrecognized(struct lg *g, const char *fmt, ...) PROF_PRINTF(2, 3);
static int lg_unrecognized(struct lg *g, const char *fmt, ...)
{
	va_list ap;
	int len = snprintf(g->why, sizeof(g->why), "%s: ", g->what);

	va_start(ap, fmt);
	if (len > 0 && (size_t)len < sizeof(g->why))
		vsnprintf(g->why + len, sizeof(g->why) - (size_t)len, fmt, ap);
	va_end(ap);
	return LG_UNRECOGNIZED;
}

static void lg_types(struct lg *g, int nv, const char *const *types, const char *pt_type,
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
static uint32_t lg_loc(struct lg *g, uint64_t addr)
{
	uint32_t idx;

	if (fmt_idmap_get(&g->by_addr, addr, &idx))
		return idx;
	idx = (uint32_t)g->locs.n;
	VEC_PUSH(&g->locs, ((struct lg_loc){ .addr = addr, .addr_set = true }));
	fmt_idmap_put(&g->by_addr, addr, idx);
	return idx;
}

static int lg_sample_begin(struct lg *g, size_t *off)
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

static struct lg_sample *lg_sample_end(struct lg *g, size_t off)
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
static void lg_drop_frame(struct lg *g, struct lg_sample *s, uint32_t k)
{
	uint32_t *v = g->stk.v + s->off;

	memmove(v + k, v + k + 1, (s->n - k - 1) * sizeof(*v));
	s->n--;
}

static uint64_t lg_addr(const struct lg *g, const struct lg_sample *s, uint32_t k)
{
	return g->locs.v[g->stk.v[s->off + k]].addr;
}

/* ---- hex addresses and pprof's regular expressions ------------------------- */

/*
 * parseHexAddresses: every match of 0x[0-9a-f]+ in [p, e) (leftmost,
 * non-overlapping), each parsed as a 64-bit number; pushes the location
 * of each (minus @adjust, wrapping) onto g->stk. With @leaf non-NULL the
 * first address of a stack (*leaf true) is not adjusted; *leaf carries the
 * state over calls for stacks that span lines. Returns false when an
 * address does not fit in 64 bits, with *bad pointing at it.
 */
static bool lg_hex_addrs(struct lg *g, const char *p, const char *e, uint64_t adjust, bool *leaf,
			 const char **bad)
{
	while (p + 2 < e) {
		const char *q;
		uint64_t a;

		if (p[0] != '0' || p[1] != 'x' || !is_lhex(p[2])) {
			p++;
			continue;
		}
		for (q = p + 2; q < e && is_lhex(*q); q++)
			;
		if (!go_atou_base(sl_make(p + 2, (size_t)(q - p - 2)), 16, &a)) {
			*bad = p;
			return false;
		}
		if (leaf && *leaf)
			*leaf = false;
		else
			a -= adjust;
		VEC_PUSH(&g->stk, lg_loc(g, a));
		p = q;
	}
	return true;
}

/*
 * heapHeaderRE  heap profile: *(\d+): *(\d+) *\[ *(\d+): *(\d+) *\] *@ *(heap[_a-z0-9]*)/?(\d*)
 * growthHeaderRE        ...  *\] @ growthz?
 * fragmentationHeaderRE ...  *\] @ fragmentationz?
 * Unanchored: the first "heap profile:" from which the expression matches.
 * @kind is "heap" (groups 5 and 6 filled), "growth" or "fragmentation".
 */
struct heap_hdr {
	struct sl num[4], name, rate;
};

static bool match_heap_header(struct sl line, const char *kind, struct heap_hdr *h)
{
	static const char lead[] = "heap profile:";
	const char *e = line.p + line.n, *p = line.p;

	while ((p = memmem(p, (size_t)(e - p), lead, sizeof(lead) - 1)) != NULL) {
		const char *q = p + sizeof(lead) - 1;
		bool ok = true;

		p++;
		for (int i = 0; i < 4 && ok; i++) {
			size_t d;

			q = spaces(q, e);
			d = digits(q, e);
			h->num[i] = sl_make(q, d);
			q += d;
			if (!d)
				ok = false;
			else if (i == 0 || i == 2)
				ok = q < e && *q++ == ':';
			else if (i == 1)
				ok = (q = spaces(q, e)) < e && *q++ == '[';
		}
		if (!ok || (q = spaces(q, e)) >= e || *q++ != ']')
			continue;
		if (!strcmp(kind, "heap")) {
			const char *n0;

			q = spaces(q, e);
			if (q >= e || *q++ != '@')
				continue;
			q = spaces(q, e);
			if ((size_t)(e - q) < 4 || memcmp(q, "heap", 4))
				continue;
			n0 = q;
			for (q += 4;
			     q < e && (is_digit(*q) || (*q >= 'a' && *q <= 'z') || *q == '_'); q++)
				;
			h->name = sl_make(n0, (size_t)(q - n0));
			if (q < e && *q == '/')
				q++;
			h->rate = sl_make(q, digits(q, e));
			return true;
		}
		if ((size_t)(e - q) >= 3 + strlen(kind) && !memcmp(q, " @ ", 3) &&
		    !memcmp(q + 3, kind, strlen(kind)))
			return true;
	}
	return false;
}

/*
 * heapSampleRE  (-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)
 * Unanchored. A match must start at a digit run (or the '-' before it)
 * and then is determined by it; when it fails, it fails from anywhere in
 * the same run too, so the search moves on to the next run: linear.
 */
static bool match_heap_sample(struct sl line, struct sl g[4], struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *q = p;
		bool ok = true;

		if (!is_digit(*p) && !(*p == '-' && p + 1 < e && is_digit(p[1]))) {
			p++;
			continue;
		}
		for (int i = 0; i < 4 && ok; i++) {
			const char *s0;

			if (i)
				q = spaces(q, e);
			s0 = q;
			if (i < 2 && q < e && *q == '-')
				q++;
			if (!digits(q, e)) {
				ok = false;
				break;
			}
			q += digits(q, e);
			g[i] = sl_make(s0, (size_t)(q - s0));
			if (i == 0 || i == 2)
				ok = q < e && *q++ == ':';
			else if (i == 1)
				ok = (q = spaces(q, e)) < e && *q++ == '[';
			else
				ok = (q = spaces(q, e)) <= e && e - q >= 3 && !memcmp(q, "] @", 3);
		}
		if (ok) {
			q += 3;
			stack->p = q;
			while (q < e && (*q == ' ' || *q == 'x' || is_lhex(*q)))
				q++;
			stack->n = (size_t)(q - stack->p);
			return true;
		}
		/* Skip the run this attempt started at. */
		if (*p == '-')
			p++;
		p += digits(p, e);
	}
	return false;
}

/*
 * contentionSampleRE  (\d+) *(\d+) @([ x0-9a-f]*)
 * From the start of a digit run D1: either D1, spaces (>= 1), a digit run
 * D2, " @" (groups D1, D2); or, backtracking into D1, all of D1 but its
 * last digit and that digit, when D1 (2+ digits) is followed by " @".
 */
static bool match_contention_sample(struct sl line, struct sl *v1, struct sl *v2, struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *d1e, *q, *at = NULL;
		size_t l1;

		if (!is_digit(*p)) {
			p++;
			continue;
		}
		l1 = digits(p, e);
		d1e = p + l1;
		q = spaces(d1e, e);
		if (q > d1e && q < e && is_digit(*q)) {
			size_t l2 = digits(q, e);

			if (e - (q + l2) >= 2 && q[l2] == ' ' && q[l2 + 1] == '@') {
				*v1 = sl_make(p, l1);
				*v2 = sl_make(q, l2);
				at = q + l2 + 2;
			}
		}
		if (!at && l1 >= 2 && e - d1e >= 2 && d1e[0] == ' ' && d1e[1] == '@') {
			*v1 = sl_make(p, l1 - 1);
			*v2 = sl_make(d1e - 1, 1);
			at = d1e + 2;
		}
		if (at) {
			stack->p = at;
			while (at < e && (*at == ' ' || *at == 'x' || is_lhex(*at)))
				at++;
			stack->n = (size_t)(at - stack->p);
			return true;
		}
		p = d1e;
	}
	return false;
}

/* javaSampleRx   *(\d+) +(\d+) +@ +([ x0-9a-f]*) (unanchored). */
static bool match_java_sample(struct sl line, struct sl *v1, struct sl *v2, struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *q, *r;
		size_t l1, l2;

		if (!is_digit(*p)) {
			p++;
			continue;
		}
		l1 = digits(p, e);
		q = spaces(p + l1, e);
		l2 = q > p + l1 ? digits(q, e) : 0;
		r = spaces(q + l2, e);
		if (l2 && r > q + l2 && r < e && *r == '@' && r + 1 < e && r[1] == ' ') {
			*v1 = sl_make(p, l1);
			*v2 = sl_make(q, l2);
			r = spaces(r + 1, e);
			stack->p = r;
			while (r < e && (*r == ' ' || *r == 'x' || is_lhex(*r)))
				r++;
			stack->n = (size_t)(r - stack->p);
			return true;
		}
		p += l1;
	}
	return false;
}

/* countStartRE  \A(\S+) profile: total \d+\z */
static bool match_count_start(struct sl line, struct sl *type)
{
	const char *p = line.p, *e = line.p + line.n, *q = p;
	static const char mid[] = " profile: total ";

	while (q < e && !is_re_space(*q))
		q++;
	if (q == p || (size_t)(e - q) < sizeof(mid) - 1 || memcmp(q, mid, sizeof(mid) - 1))
		return false;
	*type = sl_make(p, (size_t)(q - p));
	q += sizeof(mid) - 1;
	return q < e && digits(q, e) == (size_t)(e - q);
}

/* countRE  \A(\d+) @(( 0x[0-9a-f]+)+)\z: *count and the stack text. */
static bool match_count(struct sl line, struct sl *count, struct sl *stack)
{
	const char *p = line.p, *e = line.p + line.n, *q;
	size_t d = digits(p, e);

	if (!d || (size_t)(e - p - d) < 2 || p[d] != ' ' || p[d + 1] != '@')
		return false;
	*count = sl_make(p, d);
	q = p + d + 2;
	stack->p = q;
	if (q == e)
		return false;
	while (q < e) {
		if (e - q < 4 || q[0] != ' ' || q[1] != '0' || q[2] != 'x' || !is_lhex(q[3]))
			return false;
		for (q += 3; q < e && is_lhex(*q); q++)
			;
	}
	stack->n = (size_t)(e - stack->p);
	return true;
}

/* threadzStartRE  --- threadz \d+ --- (unanchored) */
static bool match_threadz_start(struct sl line)
{
	static const char lead[] = "--- threadz ";
	const char *e = line.p + line.n, *p = line.p;

	while ((p = memmem(p, (size_t)(e - p), lead, sizeof(lead) - 1)) != NULL) {
		const char *q = p + sizeof(lead) - 1;
		size_t d = digits(q, e);

		p++;
		if (d && e - (q + d) >= 4 && !memcmp(q + d, " ---", 4))
			return true;
	}
	return false;
}

/* threadStartRE  --- Thread ([[:xdigit:]]+) \(name: (.*)/(\d+)\) stack: --- (unanchored) */
static bool match_thread_start(struct sl line)
{
	static const char lead[] = "--- Thread ", name[] = " (name: ", tail[] = ") stack: ---";
	const char *e = line.p + line.n, *p = line.p;

	while ((p = memmem(p, (size_t)(e - p), lead, sizeof(lead) - 1)) != NULL) {
		const char *q = p + sizeof(lead) - 1;

		p++;
		if (q >= e || !is_xdigit(*q))
			continue;
		while (q < e && is_xdigit(*q))
			q++;
		if ((size_t)(e - q) < sizeof(name) - 1 || memcmp(q, name, sizeof(name) - 1))
			continue;
		for (q += sizeof(name) - 1; q < e; q++) {
			size_t d;

			if (*q != '/')
				continue;
			d = digits(q + 1, e);
			if (d && (size_t)(e - (q + 1 + d)) >= sizeof(tail) - 1 &&
			    !memcmp(q + 1 + d, tail, sizeof(tail) - 1))
				return true;
		}
	}
	return false;
}

/*
 * attributeRx  ([\w ]+)=([\w ]+): the first run of [\w ] that is followed
 * by '=' and then by at least one [\w ]; both groups trimmed.
 */
static bool match_java_attr(struct sl line, struct sl *key, struct sl *val)
{
	const char *p = line.p, *e = line.p + line.n;

	while (p < e) {
		const char *q = p, *v;

		if (!is_word(*p) && *p != ' ') {
			p++;
			continue;
		}
		while (q < e && (is_word(*q) || *q == ' '))
			q++;
		if (q < e && *q == '=' && q + 1 < e && (is_word(q[1]) || q[1] == ' ')) {
			*key = trim(sl_make(p, (size_t)(q - p)));
			for (v = q + 1; v < e && (is_word(*v) || *v == ' '); v++)
				;
			*val = trim(sl_make(q + 1, (size_t)(v - q - 1)));
			return true;
		}
		p = q;
	}
	return false;
}

/* ---- line scanning (bufio.Scanner with ScanLines) --------------------------- */

struct lg_scan {
	struct fmt_lines it;
	struct sl cur; /* s.Text(): "" once Scan has returned false */
};

static void scan_init(struct lg_scan *s, const void *data, size_t n)
{
	fmt_lines_init(&s->it, data, n);
	s->cur = sl_make("", 0);
}

static bool scan_next(struct lg_scan *s)
{
	if (!fmt_lines_next(&s->it)) {
		s->cur = sl_make("", 0);
		s->it.line = s->it.end;
		s->it.len = 0;
		return false;
	}
	s->cur = sl_make(s->it.line, s->it.len);
	return true;
}

static int lg_line_err(struct lg *g, const struct lg_scan *s, const char *at, const char *fmt, ...)
	PROF_PRINTF(4, 5);
static int lg_line_err(struct lg *g, const struct lg_scan *s, const char *at, const char *fmt, ...)
{
	char msg[300];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return fmt_text_err(g->err, -PROF_ECORRUPT, g->what, &s->it, at ? at : s->it.line, "%s",
			    msg);
}

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
static int maps_parse(struct lg *g, struct lg_scan *s)
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

/* ---- renumbering ------------------------------------------------------------ */

/* remapLocationIDs: ids in order of first use by the samples; unused ones dropped. */
static void remap_locations(struct lg *g)
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
static void remap_mappings(struct lg *g)
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
static int memory_map(struct lg *g, struct lg_scan *s)
{
	int rc = maps_parse(g, s);

	if (rc)
		return rc;
	remap_locations(g);
	remap_mappings(g);
	return 0;
}

/* parseAdditionalSections */
static int additional_sections(struct lg *g, struct lg_scan *s)
{
	while (!map_sentinel(s->cur) && scan_next(s))
		;
	return memory_map(g, s);
}

/* cleanupDuplicateLocations */
static void cleanup_duplicates(struct lg *g)
{
	for (size_t i = 0; i < g->samples.n; i++) {
		struct lg_sample *s = &g->samples.v[i];

		if (s->n > 1 && lg_addr(g, s, 0) == lg_addr(g, s, 1) + 1)
			lg_drop_frame(g, s, 1);
	}
}

/* ---- binary CPU (parseCPU, cpuProfile, javaCPUProfile) ---------------------- */

struct lg_words {
	const unsigned char *p, *e, *start;
	int size; /* 4 or 8 */
	bool big;
};

static bool word(struct lg_words *w, uint64_t *out)
{
	uint64_t v = 0;

	if (w->e - w->p < w->size)
		return false;
	for (int i = 0; i < w->size; i++)
		v |= (uint64_t)w->p[w->big ? w->size - 1 - i : i] << (8 * i);
	w->p += w->size;
	*out = v;
	return true;
}

/* The header in one of get32l, get32b, get64l, get64b: 0 (no), 1 (C++), 2 (Java). */
static int cpu_header(const void *data, size_t n, struct lg_words *w)
{
	static const struct {
		int size;
		bool big;
	} enc[] = { { 4, false }, { 4, true }, { 8, false }, { 8, true } };

	for (size_t i = 0; i < PROF_ARRAY_SIZE(enc); i++) {
		uint64_t h[5];
		bool ok = true;

		w->start = w->p = data;
		w->e = w->p + n;
		w->size = enc[i].size;
		w->big = enc[i].big;
		for (int k = 0; k < 5 && ok; k++)
			ok = word(w, &h[k]);
		if (!ok || h[0] != 0 || h[1] != 3 || h[3] == 0 || h[4] != 0)
			continue;
		if (h[2] == 0 || h[2] == 1)
			return h[2] == 0 ? 1 : 2;
	}
	return 0;
}

/* parseCPUSamples: records up to the end marker; *rest = the bytes after it. */
static int cpu_samples(struct lg *g, struct lg_words *w, bool adjust)
{
	while (w->p < w->e) {
		size_t at = (size_t)(w->p - w->start), off;
		uint64_t count, nstk, first = 0;
		struct lg_sample *s;
		int rc;

		if (!word(w, &count) || !word(w, &nstk))
			return prof_err_set(g->err, -PROF_ECORRUPT, (int64_t)at,
					    "%s: record at byte %zu: cut short (%zu bytes left)",
					    g->what, at, (size_t)(w->e - w->start) - at);
		if (nstk > (uint64_t)(w->e - w->p) / (uint64_t)w->size)
			return prof_err_set(g->err, -PROF_ECORRUPT, (int64_t)at,
					    "%s: record at byte %zu: %" PRIu64
					    " stack words but %zu bytes left",
					    g->what, at, nstk, (size_t)(w->e - w->p));
		if (count == 0 && nstk == 1) {
			struct lg_words peek = *w;

			word(&peek, &first);
			if (first == 0) {
				*w = peek;
				return 0; /* end of data */
			}
		}
		rc = lg_sample_begin(g, &off);
		if (rc)
			return rc;
		for (uint64_t i = 0; i < nstk; i++) {
			uint64_t a;

			word(w, &a);
			if (adjust && i > 0)
				a--;
			VEC_PUSH(&g->stk, lg_loc(g, a));
		}
		s = lg_sample_end(g, off);
		s->v[0] = (int64_t)count;
		s->v[1] = wmul((int64_t)count, g->period);
	}
	return 0;
}

/* cpuProfile: drops the signal handler's frame when most samples share it. */
static void cpu_strip_handler_frames(struct lg *g)
{
	size_t margin = g->samples.n / 32;

	for (int iter = 0; iter < 2; iter++) {
		struct fmt_idmap cnt;
		VEC(uint64_t) n = { 0 };
		uint64_t found = 0;
		bool any = false;

		fmt_idmap_init(&cnt);
		for (size_t i = 0; i < g->samples.n; i++) {
			const struct lg_sample *s = &g->samples.v[i];
			uint32_t k;

			if (s->n <= 1)
				continue;
			if (!fmt_idmap_get(&cnt, lg_addr(g, s, 1), &k)) {
				k = (uint32_t)n.n;
				fmt_idmap_put(&cnt, lg_addr(g, s, 1), k);
				VEC_PUSH(&n, 0);
			}
			n.v[k]++;
		}
		/* At most one address can reach the threshold: Go's random map order is moot. */
		for (size_t i = 0; i < g->samples.n && !any; i++) {
			const struct lg_sample *s = &g->samples.v[i];
			uint32_t k;

			if (s->n > 1 && fmt_idmap_get(&cnt, lg_addr(g, s, 1), &k) &&
			    (int64_t)n.v[k] >= (int64_t)g->samples.n - (int64_t)margin) {
				found = lg_addr(g, s, 1);
				any = true;
			}
		}
		if (any)
			for (size_t i = 0; i < g->samples.n; i++) {
				struct lg_sample *s = &g->samples.v[i];

				if (s->n > 1 && lg_addr(g, s, 1) == found)
					lg_drop_frame(g, s, 1);
			}
		fmt_idmap_release(&cnt);
		VEC_FREE(&n);
	}
}

static int java_locations(struct lg *g, const char *p, const char *e);

static int parse_cpu(struct lg *g)
{
	struct lg_words w;
	struct lg_scan s;
	uint64_t h[5];
	int kind = cpu_header(g->data, g->size, &w), rc;
	static const char *const types[] = { "samples", "count", "cpu", "nanoseconds" };

	if (!kind)
		return LG_UNRECOGNIZED;
	/* Re-read the header in the encoding found. */
	w.p = w.start;
	for (int k = 0; k < 5; k++)
		word(&w, &h[k]);
	g->what = kind == 1 ? "pprof-legacy cpu" : "pprof-legacy java cpu";
	lg_types(g, 2, types, "cpu", "nanoseconds");
	g->period = wmul((int64_t)h[3], 1000);
	rc = cpu_samples(g, &w, kind == 1);
	if (rc)
		return rc;
	if (kind == 2)
		return java_locations(g, (const char *)w.p, (const char *)w.e);
	cpu_strip_handler_frames(g);
	scan_init(&s, w.p, (size_t)(w.e - w.p));
	rc = memory_map(g, &s);
	if (rc)
		return rc;
	cleanup_duplicates(g);
	return 0;
}

/* ---- heap text (parseHeap) -------------------------------------------------- */

/* scaleHeapSample */
static void scale_heap(int64_t *count, int64_t *size, int64_t rate)
{
	double avg, scale;

	if (*count == 0 || *size == 0) {
		*count = *size = 0;
		return;
	}
	if (rate <= 1)
		return;
	avg = (double)*size / (double)*count;
	scale = 1 / (1 - exp(-avg / (double)rate));
	*count = go_f2i((double)*count * scale);
	*size = go_f2i((double)*size * scale);
}

static int parse_heap(struct lg *g)
{
	struct lg_scan s;
	struct heap_hdr h;
	bool v2 = false, has_alloc = false;

	g->what = "pprof-legacy heap";
	scan_init(&s, g->data, g->size);
	if (!scan_next(&s))
		return lg_unrecognized(g, "empty input");
	g->period = 0;
	if (match_heap_header(s.cur, "heap", &h)) {
		/* parseHeapHeader */
		if (h.rate.n && !go_atoi(h.rate, 10, &g->period))
			return lg_unrecognized(g, "rate '%.*s' out of range", (int)h.rate.n,
					       h.rate.p);
		has_alloc =
			(!sl_eq(h.num[2], "0") && !(h.num[2].n == h.num[0].n &&
						    !memcmp(h.num[2].p, h.num[0].p, h.num[0].n))) ||
			(!sl_eq(h.num[3], "0") && !(h.num[3].n == h.num[1].n &&
						    !memcmp(h.num[3].p, h.num[1].p, h.num[1].n)));
		if (sl_eq(h.name, "heapz_v2") || sl_eq(h.name, "heap_v2")) {
			v2 = true;
		} else if (sl_eq(h.name, "heapprofile")) {
			g->period = 1;
		} else if (sl_eq(h.name, "heap")) {
			v2 = true;
			g->period /= 2;
		} else {
			return lg_unrecognized(g, "unknown heap profile kind '%.*s'", (int)h.name.n,
					       h.name.p);
		}
	} else if (match_heap_header(s.cur, "growth", &h) ||
		   match_heap_header(s.cur, "fragmentation", &h)) {
		g->period = 1;
	} else {
		return LG_UNRECOGNIZED;
	}
	if (has_alloc) {
		static const char *const t[] = { "alloc_objects", "count", "alloc_space", "bytes",
						 "inuse_objects", "count", "inuse_space", "bytes" };

		lg_types(g, 4, t, "space", "bytes");
	} else {
		static const char *const t[] = { "objects", "count", "space", "bytes" };

		lg_types(g, 2, t, "space", "bytes");
	}
	while (scan_next(&s)) {
		struct sl line = trim(s.cur), grp[4], stack;
		struct lg_sample *smp;
		int64_t v[4];
		int64_t bytes = 0;
		const char *bad = NULL;
		size_t off;
		int rc, nv = 0;

		if (blank_or_comment(line))
			continue;
		if (map_sentinel(line))
			break;
		if (!match_heap_sample(line, grp, &stack))
			return lg_line_err(g, &s, line.p,
					   "not a heap sample \"N: M [N: M] @ 0x...\" (pprof: "
					   "unexpected number of sample values)");
		/* addValues: allocation pair (groups 3, 4) first when present, then in-use (1, 2). */
		for (int pass = has_alloc ? 0 : 1; pass < 2; pass++) {
			struct sl cs = grp[pass ? 0 : 2], ss = grp[pass ? 1 : 3];
			const char *label = pass ? "inuse" : "allocation";
			int64_t count, size;

			if (!go_atoi(cs, 10, &count))
				return lg_line_err(g, &s, cs.p, "%s count '%.*s' out of range",
						   label, (int)cs.n, cs.p);
			if (!go_atoi(ss, 10, &size))
				return lg_line_err(g, &s, ss.p, "%s bytes '%.*s' out of range",
						   label, (int)ss.n, ss.p);
			if (count == 0 && size != 0)
				return lg_line_err(g, &s, cs.p,
						   "%s count was 0 but %s bytes was %" PRId64,
						   label, label, size);
			if (count != 0) {
				/* Go's int64 division: INT64_MIN / -1 wraps. */
				bytes = count == -1 ? (int64_t)(0 - (uint64_t)size) : size / count;
				if (v2)
					scale_heap(&count, &size, g->period);
			}
			v[nv++] = count;
			v[nv++] = size;
		}
		rc = lg_sample_begin(g, &off);
		if (rc)
			return rc;
		if (!lg_hex_addrs(g, stack.p, stack.p + stack.n, 1, NULL, &bad))
			return lg_line_err(g, &s, bad, "address does not fit in 64 bits");
		smp = lg_sample_end(g, off);
		memcpy(smp->v, v, sizeof(int64_t) * (size_t)nv);
		smp->bytes = bytes;
		smp->has_bytes = true;
	}
	return additional_sections(g, &s);
}

/* ---- Go count text (parseGoCount) ------------------------------------------ */

static int parse_go_count(struct lg *g)
{
	struct lg_scan s;
	struct sl type;
	uint32_t tid;
	const char *t;

	g->what = "pprof-legacy count";
	scan_init(&s, g->data, g->size);
	while (scan_next(&s) && blank_or_comment(s.cur))
		;
	if (!match_count_start(s.cur, &type))
		return LG_UNRECOGNIZED;
	tid = strtab_intern(&g->strs, type.p, type.n);
	t = strtab_get(&g->strs, tid);
	{
		const char *types[] = { t, "count" };

		lg_types(g, 1, types, t, "count");
	}
	g->period = 1;
	while (scan_next(&s)) {
		struct sl count, stack;
		struct lg_sample *smp;
		const char *bad = NULL;
		int64_t n;
		size_t off;
		int rc;

		if (blank_or_comment(s.cur))
			continue;
		if (sl_prefix(s.cur, "---"))
			break;
		if (!match_count(s.cur, &count, &stack))
			return lg_line_err(g, &s, NULL,
					   "not a sample \"N @ 0x... 0x...\" (pprof: malformed "
					   "profile format)");
		if (!go_atoi(count, 0, &n))
			return lg_line_err(g, &s, count.p, "count '%.*s' is not a number in range",
					   (int)count.n, count.p);
		rc = lg_sample_begin(g, &off);
		if (rc)
			return rc;
		if (!lg_hex_addrs(g, stack.p, stack.p + stack.n, 1, NULL, &bad))
			return lg_line_err(g, &s, bad, "address does not fit in 64 bits");
		smp = lg_sample_end(g, off);
		smp->v[0] = n;
	}
	return additional_sections(g, &s);
}

/* ---- threadz text (parseThread) --------------------------------------------- */

/* parseThreadSample: the next line after the trace into *next; no frames when "same as previous". */
static int thread_sample(struct lg *g, struct lg_scan *s, struct sl *next, bool *same)
{
	struct sl line = sl_make("", 0);
	bool leaf = true;

	*same = false;
	while (scan_next(s)) {
		const char *bad = NULL;

		line = trim(s->cur);
		if (!line.n)
			continue;
		if (sl_prefix(line, "---"))
			break;
		if (sl_contains(line, "same as previous thread")) {
			*same = true;
			continue;
		}
		if (!lg_hex_addrs(g, line.p, line.p + line.n, 1, &leaf, &bad))
			return lg_line_err(g, s, bad, "address does not fit in 64 bits");
	}
	*next = line;
	return 0;
}

static int parse_thread(struct lg *g)
{
	static const char *const types[] = { "thread", "count" };
	struct lg_scan s;
	struct sl line;
	int rc;

	g->what = "pprof-legacy threadz";
	scan_init(&s, g->data, g->size);
	while (scan_next(&s) && blank_or_comment(s.cur))
		;
	line = s.cur;
	if (match_threadz_start(line)) {
		while (scan_next(&s)) {
			line = s.cur;
			if (map_sentinel(line) || sl_prefix(line, "-"))
				break;
		}
	} else if (!match_thread_start(line)) {
		return LG_UNRECOGNIZED;
	}
	lg_types(g, 1, types, "thread", "count");
	g->period = 1;
	while (!map_sentinel(line)) {
		struct lg_sample *smp;
		size_t off;
		bool same;

		if (sl_prefix(line, "---- no stack trace for"))
			break;
		if (!match_thread_start(line))
			return lg_unrecognized(g, "line %zu: expected \"--- Thread ...\"",
					       s.it.lineno);
		rc = lg_sample_begin(g, &off);
		if (rc)
			return rc;
		/* Frames go to the stack array; a same-as-previous trace keeps none. */
		rc = thread_sample(g, &s, &line, &same);
		if (rc)
			return rc;
		if (same || g->stk.n == off) {
			g->stk.n = off;
			if (g->samples.n)
				g->samples.v[g->samples.n - 1].v[0]++;
			continue;
		}
		smp = lg_sample_end(g, off);
		smp->v[0] = 1;
	}
	rc = additional_sections(g, &s);
	if (rc)
		return rc;
	cleanup_duplicates(g);
	return 0;
}

/* ---- contention text (parseContention) -------------------------------------- */

static int parse_contention(struct lg *g)
{
	static const char *const types[] = { "contentions", "count", "delay", "nanoseconds" };
	struct lg_scan s;
	int64_t cpu_hz = 0;

	g->what = "pprof-legacy contention";
	scan_init(&s, g->data, g->size);
	if (!scan_next(&s))
		return LG_UNRECOGNIZED;
	if (!sl_prefix(s.cur, "--- contentionz ") && !sl_prefix(s.cur, "--- mutex:") &&
	    !sl_prefix(s.cur, "--- contention:"))
		return LG_UNRECOGNIZED;
	lg_types(g, 2, types, "contentions", "count");
	g->period = 1;
	while (scan_next(&s)) {
		struct sl line = trim(s.cur), key, val;
		const char *eq;
		int64_t v;

		if (blank_or_comment(line))
			continue;
		if (sl_prefix(line, "---"))
			break;
		eq = memchr(line.p, '=', line.n);
		if (!eq)
			break;
		key = trim(sl_make(line.p, (size_t)(eq - line.p)));
		val = trim(sl_make(eq + 1, (size_t)(line.p + line.n - eq - 1)));
		if (sl_eq(key, "cycles/second") || sl_eq(key, "sampling period") ||
		    sl_eq(key, "ms since reset")) {
			if (!go_atoi(val, 0, &v))
				return lg_unrecognized(g, "line %zu: %.*s: '%.*s' is not a number",
						       s.it.lineno, (int)key.n, key.p, (int)val.n,
						       val.p);
			if (key.p[0] == 'c')
				cpu_hz = v;
			else if (key.p[0] == 's')
				g->period = v;
			else
				g->duration_ns = wmul(v, 1000 * 1000);
		} else if (sl_eq(key, "format") || sl_eq(key, "resolution")) {
			/* Java's contention profile (parseJavaProfile takes it). */
			return lg_unrecognized(g, "line %zu: attribute '%.*s' (a Java profile)",
					       s.it.lineno, (int)key.n, key.p);
		} else if (!sl_eq(key, "discarded samples")) {
			return lg_unrecognized(g, "line %zu: unknown attribute '%.*s'", s.it.lineno,
					       (int)key.n, key.p);
		}
	}
	for (;;) {
		struct sl line = trim(s.cur), a, b, stack;

		if (sl_prefix(line, "---"))
			break;
		if (!blank_or_comment(line)) {
			struct lg_sample *smp;
			const char *bad = NULL;
			int64_t v1, v2;
			size_t off;
			int rc;

			if (!match_contention_sample(line, &a, &b, &stack))
				return lg_unrecognized(g, "line %zu: not a sample \"N N @ 0x...\"",
						       s.it.lineno);
			if (!go_atoi(a, 10, &v1) || !go_atoi(b, 10, &v2))
				return lg_line_err(g, &s, a.p, "number out of range");
			/* parseContentionSample: unsample with the period and CPU frequency. */
			if (g->period > 0) {
				if (cpu_hz > 0) {
					double ghz = (double)cpu_hz / 1e9;

					v1 = go_f2i((double)v1 * (double)g->period / ghz);
				}
				v2 = wmul(v2, g->period);
			}
			rc = lg_sample_begin(g, &off);
			if (rc)
				return rc;
			if (!lg_hex_addrs(g, stack.p, stack.p + stack.n, 1, NULL, &bad))
				return lg_line_err(g, &s, bad, "address does not fit in 64 bits");
			smp = lg_sample_end(g, off);
			smp->v[0] = v2;
			smp->v[1] = v1;
		}
		if (!scan_next(&s))
			break;
	}
	return additional_sections(g, &s);
}

/* ---- Java text (parseJavaProfile, parseJavaLocations) ----------------------- */

/* filepath.Base */
static struct sl path_base(struct sl p)
{
	const char *slash;

	if (!p.n)
		return sl_make(".", 1);
	while (p.n > 1 && p.p[p.n - 1] == '/')
		p.n--;
	if (p.n == 1 && p.p[0] == '/')
		return p;
	slash = memrchr(p.p, '/', p.n);
	if (slash)
		return sl_make(slash + 1, (size_t)(p.p + p.n - slash - 1));
	return p;
}

static uint32_t java_function(struct lg *g, struct sl name, struct sl file)
{
	uint32_t id = strtab_intern(&g->strs, name.p, name.n);

	while (g->fn_of_name.n <= id)
		VEC_PUSH(&g->fn_of_name, 0);
	if (!g->fn_of_name.v[id]) {
		struct lg_fn f = { id, strtab_intern(&g->strs, file.p, file.n) };

		VEC_PUSH(&g->fns, f);
		g->fn_of_name.v[id] = (uint32_t)g->fns.n;
	}
	return g->fn_of_name.v[id];
}

/* One "0xADDR function (file:line)" line (javaLocationRx and the two that follow). */
static int java_location(struct lg *g, struct sl line, size_t at)
{
	const char *p = line.p, *e = line.p + line.n, *h;
	struct sl rest, fn, file = sl_make("", 0);
	int64_t lineno = 0;
	uint64_t addr;
	uint32_t idx;

	/* ^\s*0x([[:xdigit:]]+)\s+(.*)\s*$ on the trimmed line */
	if (e - p < 3 || p[0] != '0' || p[1] != 'x' || !is_xdigit(p[2]))
		return 0;
	for (h = p + 2; h < e && is_xdigit(*h); h++)
		;
	if (h >= e || !is_re_space(*h))
		return 0;
	if (!go_atou_base(sl_make(p + 2, (size_t)(h - p - 2)), 16, &addr))
		return prof_err_set(g->err, -PROF_ECORRUPT, (int64_t)at,
				    "%s: location at byte %zu: address does not fit in 64 bits",
				    g->what, at);
	while (h < e && is_re_space(*h))
		h++;
	rest = sl_make(h, (size_t)(e - h));
	if (!fmt_idmap_get(&g->by_addr, addr, &idx))
		return 0; /* unused */
	fn = rest;
	/* ^(.*)\s+\((.+):(-?[[:digit:]]+)\)$ : the last ':' and the last "\s(" before it. */
	const char *colon = rest.n ? memrchr(rest.p, ':', rest.n) : NULL;
	bool matched = false;

	if (rest.n >= 6 && rest.p[rest.n - 1] == ')' && colon) {
		struct sl num = sl_make(colon + 1, (size_t)(rest.p + rest.n - 1 - colon - 1));
		const char *d = num.p + (num.n && num.p[0] == '-');

		if (num.n && d < num.p + num.n &&
		    digits(d, num.p + num.n) == (size_t)(num.p + num.n - d)) {
			for (const char *q = colon - 2; q > rest.p; q--) {
				if (*q == '(' && is_re_space(q[-1])) {
					int64_t n;

					fn = sl_make(rest.p, (size_t)(q - 1 - rest.p));
					file = sl_make(q + 1, (size_t)(colon - q - 1));
					if (go_atoi(num, 10, &n) && n > 0)
						lineno = n;
					matched = true;
					break;
				}
			}
		}
	}
	/* ^(.*)\s+\((.*)\)$ : a shared library path, keep its base name. */
	if (!matched && rest.n >= 3 && rest.p[rest.n - 1] == ')') {
		for (const char *q = rest.p + rest.n - 2; q > rest.p; q--) {
			if (*q == '(' && is_re_space(q[-1])) {
				fn = sl_make(rest.p, (size_t)(q - 1 - rest.p));
				file = path_base(sl_make(q + 1, (size_t)(rest.p + rest.n - 2 - q)));
				matched = true;
				break;
			}
		}
	}
	if (!matched && sl_contains(rest, "generated stub/JIT"))
		fn = sl_make("STUB", 4);
	g->locs.v[idx].fn = java_function(g, fn, file);
	g->locs.v[idx].line = lineno;
	g->locs.v[idx].addr = 0;
	return 0;
}

/* parseJavaLocations on [p, e), then the renumbering and Aggregate (addresses cleared). */
static int java_locations(struct lg *g, const char *p, const char *e)
{
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		const char *le = nl ? nl : e;
		struct sl line = trim(sl_make(p, (size_t)(le - p)));
		int rc;

		if (line.n) {
			rc = java_location(g, line, (size_t)(line.p - g->data));
			if (rc)
				return rc;
		}
		p = nl ? nl + 1 : e;
	}
	remap_locations(g);
	remap_mappings(g);
	for (size_t i = 0; i < g->locs.n; i++)
		g->locs.v[i].addr = 0;
	return 0;
}

static int parse_java(struct lg *g)
{
	const char *p = g->data, *e = p + g->size, *nl = memchr(p, '\n', g->size);
	struct sl header;
	bool heap;

	g->what = "pprof-legacy java";
	if (!nl)
		return LG_UNRECOGNIZED;
	header = trim(sl_make(p, (size_t)(nl - p)));
	if (sl_eq(header, "--- heapz 1 ---"))
		heap = true;
	else if (sl_eq(header, "--- contentionz 1 ---"))
		heap = false;
	else
		return LG_UNRECOGNIZED;
	g->what = heap ? "pprof-legacy java heap" : "pprof-legacy java contention";
	g->pt[0] = g->pt[1] = "";
	p = nl + 1;
	/* parseJavaHeader: "attribute = value" lines (only those ending in '\n'). */
	while ((nl = memchr(p, '\n', (size_t)(e - p))) != NULL) {
		struct sl line = trim(sl_make(p, (size_t)(nl - p))), key, val;

		if (line.n) {
			if (!match_java_attr(line, &key, &val))
				break;
			if (sl_eq(key, "format")) {
				if (!sl_eq(val, "java"))
					return lg_unrecognized(g, "format '%.*s' is not java",
							       (int)val.n, val.p);
			} else if (sl_eq(key, "resolution")) {
				uint32_t u = strtab_intern(&g->strs, val.p, val.n);
				const char *t[] = { heap ? "inuse_objects" : "contentions", "count",
						    heap ? "inuse_space" : "delay",
						    strtab_get(&g->strs, u) };

				lg_types(g, 2, t, g->pt[0], g->pt[1]);
			} else if (!heap && sl_eq(key, "sampling period")) {
				g->pt[0] = "contentions";
				g->pt[1] = "count";
				if (!go_atoi(val, 0, &g->period))
					return prof_err_set(
						g->err, -PROF_ECORRUPT, (int64_t)(val.p - g->data),
						"%s: sampling period '%.*s' is not a number",
						g->what, (int)val.n, val.p);
			} else if (!heap && sl_eq(key, "ms since reset")) {
				int64_t ms;

				if (!go_atoi(val, 0, &ms))
					return prof_err_set(
						g->err, -PROF_ECORRUPT, (int64_t)(val.p - g->data),
						"%s: ms since reset '%.*s' is not a number",
						g->what, (int)val.n, val.p);
				g->duration_ns = wmul(ms, 1000 * 1000);
			} else {
				return lg_unrecognized(g, "unknown attribute '%.*s'", (int)key.n,
						       key.p);
			}
		}
		p = nl + 1;
	}
	/* parseJavaSamples */
	while ((nl = memchr(p, '\n', (size_t)(e - p))) != NULL) {
		struct sl line = trim(sl_make(p, (size_t)(nl - p))), a, b, stack;
		struct lg_sample *smp;
		const char *bad = NULL;
		int64_t v0, v1;
		size_t off;
		int rc;

		if (line.n) {
			if (!match_java_sample(line, &a, &b, &stack))
				break;
			rc = lg_sample_begin(g, &off);
			if (rc)
				return rc;
			if (!lg_hex_addrs(g, stack.p, stack.p + stack.n, 0, NULL, &bad))
				return prof_err_set(
					g->err, -PROF_ECORRUPT, (int64_t)(bad - g->data),
					"%s: sample \"%.*s\": address does not fit in 64 bits",
					g->what, (int)PROF_MIN(line.n, 80), line.p);
			if (!go_atoi(b, 0, &v0) || !go_atoi(a, 0, &v1))
				return prof_err_set(g->err, -PROF_ECORRUPT,
						    (int64_t)(a.p - g->data),
						    "%s: sample \"%.*s\": a value is not a number",
						    g->what, (int)PROF_MIN(line.n, 80), line.p);
			if (heap) {
				if (v0 == 0)
					return prof_err_set(
						g->err, -PROF_ECORRUPT, (int64_t)(line.p - g->data),
						"%s: sample \"%.*s\" at byte %zu: second value must be "
						"non-zero",
						g->what, (int)PROF_MIN(line.n, 80), line.p,
						(size_t)(line.p - g->data));
				smp = lg_sample_end(g, off);
				smp->has_bytes = true;
				smp->bytes = v1 / v0; /* v0 > 0: \d+ */
				scale_heap(&v0, &v1, 524288);
			} else {
				smp = lg_sample_end(g, off);
				if (g->period != 0) {
					v0 = wmul(v0, g->period);
					v1 = wmul(v1, g->period);
				}
			}
			smp->v[0] = v0;
			smp->v[1] = v1;
		}
		p = nl + 1;
	}
	if (g->nv == 0) {
		if (g->samples.n)
			return prof_err_set(g->err, -PROF_ECORRUPT, -1,
					    "%s: no \"resolution\" attribute, so no sample types "
					    "(pprof: missing sample type information)",
					    g->what);
	}
	return java_locations(g, p, e);
}

/* ---- writing the model ------------------------------------------------------ */

/* addLegacyFrameInfo */
static const char alloc_rx[] =
	"calloc|cfree|malloc|free|memalign|do_memalign|(__)?posix_memalign|pvalloc|valloc|"
	"realloc|tcmalloc::.*|tc_calloc|tc_cfree|tc_malloc|tc_free|tc_memalign|"
	"tc_posix_memalign|tc_pvalloc|tc_valloc|tc_realloc|tc_new|tc_delete|tc_newarray|"
	"tc_deletearray|tc_new_nothrow|tc_newarray_nothrow|malloc_zone_malloc|"
	"malloc_zone_calloc|malloc_zone_valloc|malloc_zone_realloc|malloc_zone_memalign|"
	"malloc_zone_free|runtime\\..*|BaseArena::.*|(::)?do_malloc_no_errno|"
	"(::)?do_malloc_pages|(::)?do_malloc|DoSampledAllocation|"
	"MallocedMemBlock::MallocedMemBlock|_M_allocate|__builtin_(vec_)?delete|"
	"__builtin_(vec_)?new|__gnu_cxx::new_allocator::allocate|__libc_malloc|"
	"__malloc_alloc_template::allocate|allocate|cpp_alloc|operator new(\\[\\])?|"
	"simple_alloc::allocate";
static const char alloc_skip_rx[] = "runtime\\.panic|runtime\\.reflectcall|runtime\\.call[0-9]*";
static const char cpu_rx[] = "ProfileData::Add|ProfileData::prof_handler|CpuProfiler::prof_handler|"
			     "__pthread_sighandler|__restore";
static const char lock_rx[] =
	"RecordLockProfileData|(base::)?RecordLockProfileData.*|"
	"(base::)?SubmitMutexProfileData.*|(base::)?SubmitSpinLockProfileData.*|"
	"(base::Mutex::)?AwaitCommon.*|(base::Mutex::)?Unlock.*|(base::Mutex::)?UnlockSlow.*|"
	"(base::Mutex::)?ReaderUnlock.*|(base::MutexLock::)?~MutexLock.*|(Mutex::)?AwaitCommon.*|"
	"(Mutex::)?Unlock.*|(Mutex::)?UnlockSlow.*|(Mutex::)?ReaderUnlock.*|"
	"(MutexLock::)?~MutexLock.*|(SpinLock::)?Unlock.*|(SpinLock::)?SlowUnlock.*|"
	"(SpinLockHolder::)?~SpinLockHolder.*";

static bool types_are(const struct lg *g, const char *a, const char *b, const char *c,
		      const char *d)
{
	const char *want[] = { a, b, c, d };
	int n = d ? 4 : 2;

	if (g->nv != n)
		return false;
	for (int i = 0; i < n; i++)
		if (strcmp(g->st[i][0], want[i]))
			return false;
	return true;
}

static void frame_info(struct lg *g)
{
	if (types_are(g, "allocations", "size", NULL, NULL) ||
	    types_are(g, "objects", "space", NULL, NULL) ||
	    types_are(g, "inuse_objects", "inuse_space", NULL, NULL) ||
	    types_are(g, "alloc_objects", "alloc_space", NULL, NULL) ||
	    types_are(g, "alloc_objects", "alloc_space", "inuse_objects", "inuse_space")) {
		g->drop = alloc_rx;
		g->keep = alloc_skip_rx;
	} else if (types_are(g, "contentions", "delay", NULL, NULL)) {
		g->drop = lock_rx;
		g->keep = "";
	} else {
		g->drop = cpu_rx;
		g->keep = "";
	}
}

static uint32_t lg_intern(struct model_profile *out, const struct lg *g, uint32_t id)
{
	return model_intern_n(out, g->strs.s[id], g->strs.len[id]);
}

static int lg_emit(struct lg *g, struct model_profile *out)
{
	VEC(uint32_t) fnid = { 0 };  /* lg fn -> model function */
	VEC(uint32_t) locid = { 0 }; /* lg loc -> model location */
	VEC(uint32_t) stack = { 0 };
	uint32_t bytes_key = model_intern(out, "bytes");

	for (int i = 0; i < g->nv; i++)
		model_sample_type_add(out, g->st[i][0], g->st[i][1]);
	out->period_type.type = model_intern(out, g->pt[0] ? g->pt[0] : "");
	out->period_type.unit = model_intern(out, g->pt[1] ? g->pt[1] : "");
	out->period = g->period;
	out->duration_ns = g->duration_ns;
	out->drop_frames = model_intern(out, g->drop ? g->drop : "");
	out->keep_frames = model_intern(out, g->keep ? g->keep : "");
	for (size_t i = 0; i < g->maps.n; i++) {
		const struct lg_map *m = &g->maps.v[i];
		struct model_mapping mm = { 0 };

		mm.memory_start = m->start;
		mm.memory_limit = m->limit;
		mm.file_offset = m->offset;
		mm.filename = lg_intern(out, g, m->file);
		mm.build_id = model_build_id_checked(out, lg_intern(out, g, m->build_id));
		model_mapping_add(out, &mm);
	}
	/* remapFunctionIDs: functions in order of first use by the locations. */
	VEC_RESERVE(&fnid, g->fns.n + 1);
	memset(fnid.v, 0, (g->fns.n + 1) * sizeof(*fnid.v));
	VEC_RESERVE(&locid, g->locs.n + 1);
	memset(locid.v, 0, (g->locs.n + 1) * sizeof(*locid.v));
	for (size_t i = 0; i < g->order.n; i++) {
		const struct lg_loc *l = &g->locs.v[g->order.v[i]];
		struct model_line ln = { 0 };

		if (l->fn) {
			if (!fnid.v[l->fn - 1]) {
				const struct lg_fn *f = &g->fns.v[l->fn - 1];
				struct model_function mf = { 0 };

				mf.name = mf.system_name = lg_intern(out, g, f->name);
				mf.filename = lg_intern(out, g, f->file);
				fnid.v[l->fn - 1] = model_function_add(out, &mf);
			}
			ln.function = fnid.v[l->fn - 1];
			ln.line = l->line;
		}
		locid.v[g->order.v[i]] =
			model_location_add(out, l->map, l->addr, l->fn ? &ln : NULL, l->fn ? 1 : 0);
	}
	for (size_t i = 0; i < g->samples.n; i++) {
		const struct lg_sample *s = &g->samples.v[i];
		struct model_label lab = { 0 };
		uint32_t off;

		stack.n = 0;
		VEC_RESERVE(&stack, s->n);
		for (uint32_t k = 0; k < s->n; k++)
			stack.v[stack.n++] = locid.v[g->stk.v[s->off + k]];
		off = model_stack_add(out, stack.v, (uint32_t)stack.n);
		lab.key = bytes_key;
		lab.num = s->bytes;
		model_sample_add(out, off, (uint32_t)stack.n, s->v, s->has_bytes ? &lab : NULL,
				 s->has_bytes ? 1 : 0, 0, 0);
	}
	VEC_FREE(&fnid);
	VEC_FREE(&locid);
	VEC_FREE(&stack);
	return model_profile_validate(out, g->err);
}

/* ---- entry points ----------------------------------------------------------- */

bool fmt_pprof_legacy_sniff(const void *data, size_t n)
{
	struct lg_words w;
	struct lg_scan s;
	struct heap_hdr h;
	struct sl first, type, t;

	if (cpu_header(data, n, &w))
		return true;
	scan_init(&s, data, n);
	if (!scan_next(&s))
		return false;
	first = s.cur;
	if (match_heap_header(first, "heap", &h) || match_heap_header(first, "growth", &h) ||
	    match_heap_header(first, "fragmentation", &h))
		return true;
	if (sl_prefix(first, "--- contentionz ") || sl_prefix(first, "--- mutex:") ||
	    sl_prefix(first, "--- contention:"))
		return true;
	t = trim(first);
	if (sl_eq(t, "--- heapz 1 ---") || sl_eq(t, "--- contentionz 1 ---"))
		return true;
	while (blank_or_comment(s.cur) && scan_next(&s))
		;
	return match_count_start(s.cur, &type) || match_threadz_start(s.cur) ||
	       match_thread_start(s.cur);
}

int fmt_pprof_legacy_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			    struct model_profile *out, struct prof_err *err)
{
	static int (*const parsers[])(struct lg *) = { parse_cpu,	 parse_heap,
						       parse_go_count,	 parse_thread,
						       parse_contention, parse_java };
	struct lg g;
	int rc = LG_UNRECOGNIZED;

	lg_init(&g, data ? data : "", data ? n : 0, opts, err);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(parsers) && rc == LG_UNRECOGNIZED; i++) {
		lg_reset(&g, "pprof-legacy");
		rc = parsers[i](&g);
	}
	if (rc == LG_UNRECOGNIZED) {
		rc = prof_err_set(err, -PROF_EFORMAT, -1,
				  "pprof-legacy: not a legacy profile pprof reads%s%s",
				  g.why[0] ? ": " : "", g.why);
	} else if (rc == 0) {
		frame_info(&g);
		rc = lg_emit(&g, out);
	}
	lg_release(&g);
	return rc;
}
