/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pprof_legacy_int.h - what the parts of the legacy pprof decoder share
 * and nothing else includes: the intermediate profile (struct lg) and its
 * helpers (pprof_legacy_lg.c: building and renumbering it), Go-style
 * string and number helpers and line scanning (static inline here),
 * pprof's regular expressions matched by hand (pprof_legacy_match.c),
 * memory maps (pprof_legacy_maps.c), and the parsers and the model
 * output (pprof_legacy.c, which has the idea and the sources).
 */
#ifndef PROFD_FORMAT_PPROF_LEGACY_INT_H
#define PROFD_FORMAT_PPROF_LEGACY_INT_H

#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/pprof_legacy.h"
#include "format/textutil.h"

#include <math.h>

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

static inline struct sl sl_make(const char *p, size_t n)
{
	struct sl s = { p, n };

	return s;
}

static inline bool sl_eq(struct sl s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n == n && !memcmp(s.p, lit, n);
}

static inline bool sl_prefix(struct sl s, const char *lit)
{
	size_t n = strlen(lit);

	return s.n >= n && !memcmp(s.p, lit, n);
}

static inline bool sl_contains(struct sl s, const char *lit)
{
	size_t n = strlen(lit);

	return n <= s.n && memmem(s.p, s.n, lit, n) != NULL;
}

static inline bool is_space(char c) /* Go's unicode.IsSpace on ASCII */
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static inline bool is_re_space(char c) /* RE2's \s */
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static inline bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static inline bool is_lhex(char c) /* [0-9a-f] */
{
	return is_digit(c) || (c >= 'a' && c <= 'f');
}

static inline bool is_word(char c) /* RE2's \w */
{
	return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static inline struct sl trim(struct sl s) /* strings.TrimSpace on ASCII */
{
	while (s.n && is_space(s.p[0]))
		s.p++, s.n--;
	while (s.n && is_space(s.p[s.n - 1]))
		s.n--;
	return s;
}

/* isSpaceOrComment */
static inline bool blank_or_comment(struct sl s)
{
	s = trim(s);
	return s.n == 0 || s.p[0] == '#';
}

/* isMemoryMapSentinel */
static inline bool map_sentinel(struct sl s)
{
	return sl_contains(s, "--- Memory map: ---") || sl_contains(s, "MAPPED_LIBRARIES:");
}

static inline int digit_val(char c)
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
static inline bool go_atou_base(struct sl s, int base, uint64_t *out)
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
static inline bool go_atou0(struct sl s, uint64_t *out)
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
static inline bool go_atoi(struct sl s, int base, int64_t *out)
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
static inline int64_t go_f2i(double d)
{
	if (isnan(d) || d >= 9223372036854775808.0 || d < -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)d;
}

static inline int64_t wmul(int64_t a, int64_t b) /* Go's wrapping int64 multiply */
{
	return (int64_t)((uint64_t)a * (uint64_t)b);
}

/* Length of the run of [0-9] at @p (up to @e). */
static inline size_t digits(const char *p, const char *e)
{
	const char *q = p;

	while (q < e && is_digit(*q))
		q++;
	return (size_t)(q - p);
}

static inline const char *spaces(const char *p, const char *e) /* ` *` */
{
	while (p < e && *p == ' ')
		p++;
	return p;
}

struct heap_hdr {
	struct sl num[4], name, rate;
};

/* ---- line scanning (bufio.Scanner with ScanLines) --------------------------- */

struct lg_scan {
	struct fmt_lines it;
	struct sl cur; /* s.Text(): "" once Scan has returned false */
};

static inline void scan_init(struct lg_scan *s, const void *data, size_t n)
{
	fmt_lines_init(&s->it, data, n);
	s->cur = sl_make("", 0);
}

static inline bool scan_next(struct lg_scan *s)
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

void lg_init(struct lg *g, const void *data, size_t n, const struct fmt_decode_opts *opts,
	     struct prof_err *err);

void lg_release(struct lg *g);

/* Back to an empty profile for the next parser; the reason (why) is kept. */
void lg_reset(struct lg *g, const char *what);

int lg_unrecognized(struct lg *g, const char *fmt, ...) PROF_PRINTF(2, 3);

void lg_types(struct lg *g, int nv, const char *const *types, const char *pt_type,
	      const char *pt_unit);

/* The location of address @addr (created on first use, in order of appearance). */
uint32_t lg_loc(struct lg *g, uint64_t addr);

int lg_sample_begin(struct lg *g, size_t *off);

struct lg_sample *lg_sample_end(struct lg *g, size_t off);

/* Removes frame @k of sample @s (pprof: s.Location = append(s.Location[:k], s.Location[k+1:]...)). */
void lg_drop_frame(struct lg *g, struct lg_sample *s, uint32_t k);

uint64_t lg_addr(const struct lg *g, const struct lg_sample *s, uint32_t k);

/*
 * parseHexAddresses: every match of 0x[0-9a-f]+ in [p, e) (leftmost,
 * non-overlapping), each parsed as a 64-bit number; pushes the location
 * of each (minus @adjust, wrapping) onto g->stk. With @leaf non-NULL the
 * first address of a stack (*leaf true) is not adjusted; *leaf carries the
 * state over calls for stacks that span lines. Returns false when an
 * address does not fit in 64 bits, with *bad pointing at it.
 */
bool lg_hex_addrs(struct lg *g, const char *p, const char *e, uint64_t adjust, bool *leaf,
		  const char **bad);

bool lg_match_heap_header(struct sl line, const char *kind, struct heap_hdr *h);

/*
 * heapSampleRE  (-?\d+): *(-?\d+) *\[ *(\d+): *(\d+) *] @([ x0-9a-f]*)
 * Unanchored. A match must start at a digit run (or the '-' before it)
 * and then is determined by it; when it fails, it fails from anywhere in
 * the same run too, so the search moves on to the next run: linear.
 */
bool lg_match_heap_sample(struct sl line, struct sl g[4], struct sl *stack);

/*
 * contentionSampleRE  (\d+) *(\d+) @([ x0-9a-f]*)
 * From the start of a digit run D1: either D1, spaces (>= 1), a digit run
 * D2, " @" (groups D1, D2); or, backtracking into D1, all of D1 but its
 * last digit and that digit, when D1 (2+ digits) is followed by " @".
 */
bool lg_match_contention_sample(struct sl line, struct sl *v1, struct sl *v2, struct sl *stack);

/* javaSampleRx   *(\d+) +(\d+) +@ +([ x0-9a-f]*) (unanchored). */
bool lg_match_java_sample(struct sl line, struct sl *v1, struct sl *v2, struct sl *stack);

/* countStartRE  \A(\S+) profile: total \d+\z */
bool lg_match_count_start(struct sl line, struct sl *type);

/* countRE  \A(\d+) @(( 0x[0-9a-f]+)+)\z: *count and the stack text. */
bool lg_match_count(struct sl line, struct sl *count, struct sl *stack);

/* threadzStartRE  --- threadz \d+ --- (unanchored) */
bool lg_match_threadz_start(struct sl line);

/* threadStartRE  --- Thread ([[:xdigit:]]+) \(name: (.*)/(\d+)\) stack: --- (unanchored) */
bool lg_match_thread_start(struct sl line);

/*
 * attributeRx  ([\w ]+)=([\w ]+): the first run of [\w ] that is followed
 * by '=' and then by at least one [\w ]; both groups trimmed.
 */
bool lg_match_java_attr(struct sl line, struct sl *key, struct sl *val);

int lg_line_err(struct lg *g, const struct lg_scan *s, const char *at, const char *fmt, ...)
	PROF_PRINTF(4, 5);

/*
 * parseProcMapsFromScanner + ParseMemoryMapFromScanner up to the
 * renumbering: reads the remaining lines of @s as mappings.
 */
int lg_maps_parse(struct lg *g, struct lg_scan *s);

/* remapLocationIDs: ids in order of first use by the samples; unused ones dropped. */
void lg_remap_locations(struct lg *g);

/* remapMappingIDs */
void lg_remap_mappings(struct lg *g);

/* ParseMemoryMapFromScanner: maps, then the renumbering. */
int lg_memory_map(struct lg *g, struct lg_scan *s);

/* parseAdditionalSections */
int lg_additional_sections(struct lg *g, struct lg_scan *s);

/* cleanupDuplicateLocations */
void lg_cleanup_duplicates(struct lg *g);

#endif
