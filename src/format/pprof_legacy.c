// SPDX-License-Identifier: Apache-2.0
/*
 * pprof_legacy.c - the legacy profile formats `go tool pprof` reads; see
 * pprof_legacy.h for the formats and what comes out. This file: the
 * parsers of each format and the model output; the parts are named in
 * pprof_legacy_int.h.
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
#include "format/pprof_legacy_int.h"

#include <math.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

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
	lg_remap_locations(g);
	lg_remap_mappings(g);
	for (size_t i = 0; i < g->locs.n; i++)
		g->locs.v[i].addr = 0;
	return 0;
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
	rc = lg_memory_map(g, &s);
	if (rc)
		return rc;
	lg_cleanup_duplicates(g);
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
	if (lg_match_heap_header(s.cur, "heap", &h)) {
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
	} else if (lg_match_heap_header(s.cur, "growth", &h) ||
		   lg_match_heap_header(s.cur, "fragmentation", &h)) {
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
		if (!lg_match_heap_sample(line, grp, &stack))
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
	return lg_additional_sections(g, &s);
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
	if (!lg_match_count_start(s.cur, &type))
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
		if (!lg_match_count(s.cur, &count, &stack))
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
	return lg_additional_sections(g, &s);
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
	if (lg_match_threadz_start(line)) {
		while (scan_next(&s)) {
			line = s.cur;
			if (map_sentinel(line) || sl_prefix(line, "-"))
				break;
		}
	} else if (!lg_match_thread_start(line)) {
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
		if (!lg_match_thread_start(line))
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
	rc = lg_additional_sections(g, &s);
	if (rc)
		return rc;
	lg_cleanup_duplicates(g);
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

			if (!lg_match_contention_sample(line, &a, &b, &stack))
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
	return lg_additional_sections(g, &s);
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
			if (!lg_match_java_attr(line, &key, &val))
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
			if (!lg_match_java_sample(line, &a, &b, &stack))
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
	if (lg_match_heap_header(first, "heap", &h) || lg_match_heap_header(first, "growth", &h) ||
	    lg_match_heap_header(first, "fragmentation", &h))
		return true;
	if (sl_prefix(first, "--- contentionz ") || sl_prefix(first, "--- mutex:") ||
	    sl_prefix(first, "--- contention:"))
		return true;
	t = trim(first);
	if (sl_eq(t, "--- heapz 1 ---") || sl_eq(t, "--- contentionz 1 ---"))
		return true;
	while (blank_or_comment(s.cur) && scan_next(&s))
		;
	return lg_match_count_start(s.cur, &type) || lg_match_threadz_start(s.cur) ||
	       lg_match_thread_start(s.cur);
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
