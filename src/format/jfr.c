// SPDX-License-Identifier: Apache-2.0
/*
 * jfr.c - Java Flight Recorder decoder; see jfr.h for what comes out.
 * This file: constant pools, settings, events to samples, chunks and the
 * API; jfr_read.c reads bytes, metadata and values.
 *
 * Sources: docs/formats.md "JFR layout" (from OpenJDK ChunkHeader.java,
 * ChunkParser.java, metadata.xml; JMC ChunkStructure.java; async-profiler
 * flightRecorder.cpp, jfrMetadata.cpp, JfrReader.java; grafana/jfr-parser).
 *
 * The idea: a chunk describes its own types. We read the chunk's metadata
 * (a tree of class/field elements) into a table of classes, compile per
 * class a "plan" of the fields that occupy bytes, and then read every
 * value generically by walking plans. The few things a profile needs
 * (thread names, stack traces, method and class names, event fields such
 * as startTime or weight) are *roles* assigned to fields by name when the
 * metadata is loaded; the walk drops role-tagged values into a capture.
 * Fields are therefore bound by name, never by position, so JDK versions
 * that add fields (Thread.virtual, Class.hidden, ThreadPark.until) and
 * async-profiler's shorter types decode alike (docs/formats.md "JFR layout").
 *
 * Per chunk, in order:
 *   1. header (68 bytes, big-endian) and metadata (at its header offset);
 *      then a scan of all records counting the events of each kind;
 *   (after all chunks: which event kinds feed the profile, e.g.
 *    ObjectAllocationSample instead of the TLAB events when present)
 *   2. constant pools, following the checkpoint chain backwards from the
 *      header's constant_pool_offset (delta 0 ends it). Pool values keep
 *      raw keys; references are resolved lazily when an event needs them;
 *   3. a scan for jdk.ActiveSetting (sampling periods, async-profiler's
 *      engine), then a scan for the events, each becoming a sample.
 *
 * Bounds and costs (the input is hostile until proven otherwise):
 *   - every read goes through struct rd, whose end is the end of the
 *     current record; a count or length is rejected when it exceeds the
 *     bytes left, so every allocation is bounded by the input size;
 *   - plans omit fields of zero-size types, so every field visited
 *     consumes at least one byte: work is linear in the input;
 *   - the element tree and nested values stop at MAX_DEPTH levels,
 *     string indirections at STR_DEPTH; each checkpoint of the chain must
 *     lie wholly before the one that points to it, so the chain ends and
 *     reads no byte twice.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/jfr.h"
#include "format/jfr_int.h"

#include <zlib.h>

/* ---- constant pools ----------------------------------------------------- */

static bool has(const struct cap *cap, int role)
{
	return cap->has >> role & 1;
}

static struct cval cval_or_null(const struct cap *cap, int role)
{
	struct cval v = { 0 };

	if (has(cap, role))
		return cap->v[role];
	v.kind = FK_STRING;
	v.s.kind = JS_NULL;
	return v;
}

/* Index for @key in a pool (a new or the existing entry: a later definition wins). */
static uint32_t pool_slot(struct u64map *m, uint64_t key, size_t n, bool *fresh)
{
	uint32_t old = u64map_put_new(m, key, (uint32_t)n);

	*fresh = old == NONE;
	return *fresh ? (uint32_t)n : old;
}

static void pool_store(struct chunk *c, uint8_t known, uint64_t key, const struct cap *cap)
{
	struct pools *p = &c->pools;
	bool fresh;
	uint32_t i;

	switch (known) {
	case K_THREAD: {
		struct pthread t = { 0 };

		t.os_name = cval_or_null(cap, R_T_OSNAME);
		t.java_name = cval_or_null(cap, R_T_JNAME);
		t.os_tid = has(cap, R_T_OSTID) ? cap->v[R_T_OSTID].u : 0;
		t.java_tid = has(cap, R_T_JTID) ? cap->v[R_T_JTID].u : 0;
		i = pool_slot(&p->thr_map, key, p->thr.n, &fresh);
		if (fresh)
			VEC_PUSH(&p->thr, t);
		else
			p->thr.v[i] = t;
		break;
	}
	case K_STACKTRACE: {
		struct pstack s = { 0 };

		s.truncated = has(cap, R_ST_TRUNC) && cap->v[R_ST_TRUNC].u;
		if (has(cap, R_ST_FRAMES)) {
			s.frame_off = cap->frame_off;
			s.nframes = cap->nframes;
		}
		i = pool_slot(&p->st_map, key, p->st.n, &fresh);
		if (fresh)
			VEC_PUSH(&p->st, s);
		else
			p->st.v[i] = s;
		break;
	}
	case K_METHOD: {
		struct pmethod m = { 0 };

		m.name = cval_or_null(cap, R_M_NAME);
		m.has_cls = has(cap, R_M_TYPE);
		m.cls = m.has_cls ? cap->v[R_M_TYPE].u : 0;
		i = pool_slot(&p->m_map, key, p->m.n, &fresh);
		if (fresh)
			VEC_PUSH(&p->m, m);
		else
			p->m.v[i] = m;
		break;
	}
	case K_CLASS:
	case K_SYMBOL:
	case K_STRING:
	case K_FRAMETYPE: {
		static const uint8_t roles[] = { [K_CLASS] = R_C_NAME,
						 [K_SYMBOL] = R_SYM_STRING,
						 [K_STRING] = R_STRVAL,
						 [K_FRAMETYPE] = R_FT_DESC };
		struct u64map *m = known == K_CLASS    ? &p->c_map
				   : known == K_SYMBOL ? &p->sym_map
				   : known == K_STRING ? &p->str_map
						       : &p->ft_map;
		__typeof__(p->cls) *v = known == K_CLASS    ? &p->cls
					: known == K_SYMBOL ? &p->sym
					: known == K_STRING ? &p->str
							    : &p->ft;
		struct ptext t = { cval_or_null(cap, roles[known]), 0 };

		i = pool_slot(m, key, v->n, &fresh);
		if (fresh)
			VEC_PUSH(v, t);
		else
			v->v[i] = t;
		break;
	}
	default:
		break;
	}
}

/*
 * The checkpoint at @at, which must end by @limit: the chunk end for the
 * first one, the start of the one read before for the others.
 */
static int read_checkpoint(struct dec *d, struct chunk *c, const uint8_t *at, const uint8_t *limit,
			   int64_t *delta)
{
	struct rd r = { at, limit };
	uint64_t size, type, skip, npools, u;
	int rc;

	if ((rc = rd_u64(d, &r, &size)))
		return rc;
	if (size == 0 || size > (size_t)(limit - at))
		return jfr_bad(d, -PROF_ECORRUPT, at,
			       "checkpoint of %" PRIu64 " bytes runs past byte %zu (%s)", size,
			       (size_t)(limit - d->base),
			       limit == d->base + c->off + c->size ? "the chunk end"
								   : "the next checkpoint");
	r.end = at + size;
	if ((rc = rd_u64(d, &r, &type)))
		return rc;
	if (type != 1)
		return jfr_bad(d, -PROF_ECORRUPT, at,
			       "expected a checkpoint (type 1), found type %" PRIu64, type);
	if ((rc = rd_u64(d, &r, &skip)) || (rc = rd_u64(d, &r, &skip)) ||
	    (rc = rd_u64(d, &r, &u)) || (rc = jfr_rd_fixed(d, &r, 1, &skip)))
		return rc;
	*delta = (int64_t)u;
	if ((rc = jfr_rd_count(d, &r, &npools, "pool count")))
		return rc;
	for (uint64_t i = 0; i < npools; i++) {
		const uint8_t *pat = r.p;
		uint64_t tid, cnt;
		uint32_t ci;
		uint8_t known;

		if ((rc = rd_u64(d, &r, &tid)))
			return rc;
		ci = u64map_get(&c->cls_by_id, tid);
		if (ci == NONE)
			return jfr_bad(d, -PROF_ECORRUPT, pat,
				       "constant pool of unknown type id %" PRIu64, tid);
		/* Lenient: a count of 0 is accepted (the JDK rejects it; see jfr.h). */
		if ((rc = jfr_rd_count(d, &r, &cnt, "pool entry count")))
			return rc;
		known = c->classes.v[ci].known;
		d->part = "constant pool";
		d->part_c = c;
		d->part_ci = ci;
		for (uint64_t j = 0; j < cnt; j++) {
			struct cap cap;
			uint64_t key;

			cap.has = 0;
			if ((rc = rd_u64(d, &r, &key)) ||
			    (rc = jfr_read_value(d, c, &r, ci, known ? &cap : NULL)))
				return rc;
			if (known)
				pool_store(c, known, key, &cap);
		}
		d->part = "checkpoint";
		d->part_ci = NONE;
	}
	return 0;
}

static int read_pools(struct dec *d, struct chunk *c)
{
	size_t pos = c->cp_off, limit = c->size;

	d->part = "checkpoint";
	/*
	 * Each checkpoint must lie wholly before the one that led to it, as
	 * writers lay them out: the chain then reads every byte at most once.
	 */
	for (;;) {
		int64_t delta = 0;
		int rc = read_checkpoint(d, c, d->base + c->off + pos, d->base + c->off + limit,
					 &delta);

		if (rc)
			return rc;
		if (delta == 0)
			return 0;
		/* The chain leads backwards (docs/formats.md "JFR layout"): that also guarantees it ends. */
		if (delta > 0 || (uint64_t) - (delta + 1) + 1 > pos - HDR_SIZE)
			return jfr_bad(d, -PROF_ECORRUPT, d->base + c->off + pos,
				       "checkpoint delta %" PRId64
				       " does not lead back into the chunk",
				       delta);
		limit = pos;
		pos -= (uint64_t) - (delta + 1) + 1;
	}
}

/* ---- text resolution ---------------------------------------------------- */

static bool pool_text(const struct chunk *c, uint8_t pool, uint64_t key, const char **p, size_t *n,
		      int depth);

static bool cval_text(const struct chunk *c, const struct cval *v, const char **p, size_t *n,
		      int depth)
{
	if (depth > STR_DEPTH)
		return false;
	if (v->kind == FK_STRING) {
		if (v->s.kind == JS_INL) {
			*p = v->s.p;
			*n = v->s.len;
			return true;
		}
		return v->s.kind == JS_REF && pool_text(c, K_STRING, v->s.ref, p, n, depth + 1);
	}
	return v->kind == FK_CPOOL && pool_text(c, v->pool, v->u, p, n, depth + 1);
}

static bool pool_text(const struct chunk *c, uint8_t pool, uint64_t key, const char **p, size_t *n,
		      int depth)
{
	const struct pools *ps = &c->pools;
	uint32_t i;

	switch (pool) {
	case K_SYMBOL:
		i = u64map_get(&ps->sym_map, key);
		return i != NONE && cval_text(c, &ps->sym.v[i].s, p, n, depth);
	case K_STRING:
		i = u64map_get(&ps->str_map, key);
		return i != NONE && cval_text(c, &ps->str.v[i].s, p, n, depth);
	default:
		return false;
	}
}

static bool text_eq(const char *p, size_t n, const char *lit)
{
	return n == strlen(lit) && memcmp(p, lit, n) == 0;
}

/* ---- settings ----------------------------------------------------------- */

static bool setting_ns(const char *p, size_t n, int64_t *out)
{
	char tmp[48];
	size_t o = 0;
	int64_t v;

	for (size_t i = 0; i < n; i++) {
		if (p[i] == ' ')
			continue;
		if (o + 1 >= sizeof(tmp))
			return false;
		tmp[o++] = p[i];
	}
	tmp[o] = '\0';
	if (o == 0 || parse_duration_ns(tmp, &v) || v <= 0)
		return false;
	*out = v;
	return true;
}

static void apply_setting(struct chunk *c, const struct cap *cap)
{
	const char *name, *val;
	size_t nn, nv;
	uint32_t ci;
	int64_t ns;

	if (!has(cap, R_SET_NAME) || !has(cap, R_SET_VALUE) ||
	    !cval_text(c, &cap->v[R_SET_NAME], &name, &nn, 0) ||
	    !cval_text(c, &cap->v[R_SET_VALUE], &val, &nv, 0))
		return;
	ci = has(cap, R_SET_ID) ? u64map_get(&c->cls_by_id, cap->v[R_SET_ID].u) : NONE;
	if (ci != NONE && text_eq(name, nn, "period") &&
	    (c->classes.v[ci].ev == EV_EXEC || c->classes.v[ci].ev == EV_NATIVE)) {
		int64_t *slot =
			c->classes.v[ci].ev == EV_EXEC ? &c->set.exec_ns : &c->set.native_ns;

		/* Several recordings: the JVM samples at the smallest period. */
		if (setting_ns(val, nv, &ns) && (*slot == 0 || ns < *slot))
			*slot = ns;
		c->set.jdk_set = true;
		return;
	}
	if (!c->asprof)
		return;
	if (text_eq(name, nn, "event")) {
		c->set.wall_engine = text_eq(val, nv, "wall");
		c->set.asprof_set = true;
	} else if (text_eq(name, nn, "interval") || text_eq(name, nn, "wall")) {
		char tmp[24];
		uint64_t u;

		if (nv == 0 || nv >= sizeof(tmp))
			return;
		memcpy(tmp, val, nv);
		tmp[nv] = '\0';
		if (parse_u64(tmp, &u) || u == 0 || u > INT64_MAX)
			return;
		*(text_eq(name, nn, "wall") ? &c->set.wall_ns : &c->set.interval_ns) = (int64_t)u;
		c->set.asprof_set = true;
	}
}

/* ---- model output ------------------------------------------------------- */

static int64_t clamp64(uint64_t v)
{
	return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

static int64_t ticks_to_ns(const struct chunk *c, uint64_t ticks)
{
	__int128 dt = (__int128)(int64_t)(ticks - c->start_ticks);
	__int128 ns = (__int128)c->start_ns + dt * 1000000000 / (__int128)c->tps;

	return ns < 0 ? 0 : ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
}

static int64_t span_to_ns(const struct chunk *c, uint64_t ticks)
{
	unsigned __int128 ns = (unsigned __int128)ticks * 1000000000u / c->tps;

	return ns > INT64_MAX ? INT64_MAX : (int64_t)ns;
}

static uint32_t frame_type_id(struct dec *d, struct chunk *c, const struct pframe *f)
{
	uint32_t i;
	const char *p;
	size_t n;

	if (!f->has_type || (i = u64map_get(&c->pools.ft_map, f->type)) == NONE)
		return 0;
	if (!c->pools.ft.v[i].ft) {
		uint32_t id = d->ft_jvm;

		if (cval_text(c, &c->pools.ft.v[i].s, &p, &n, 0)) {
			if (text_eq(p, n, "Native") || text_eq(p, n, "C++"))
				id = d->ft_native;
			else if (text_eq(p, n, "Kernel"))
				id = d->ft_kernel;
		}
		c->pools.ft.v[i].ft = id + 1;
	}
	return c->pools.ft.v[i].ft - 1;
}

static uint32_t method_func(struct dec *d, struct chunk *c, const struct pframe *f)
{
	struct pmethod *m;
	const char *p;
	size_t n;
	uint32_t i;

	if (!f->has_method || (i = u64map_get(&c->pools.m_map, f->method)) == NONE)
		return d->fn_unknown;
	m = &c->pools.m.v[i];
	if (m->func)
		return m->func;
	buf_reset(&d->name);
	if (m->has_cls) {
		uint32_t k = u64map_get(&c->pools.c_map, m->cls);

		if (k != NONE && cval_text(c, &c->pools.cls.v[k].s, &p, &n, 0))
			buf_add(&d->name, p, n);
	}
	buf_add(&d->name, ".", 1);
	if (cval_text(c, &m->name, &p, &n, 0))
		buf_add(&d->name, p, n);
	else
		buf_addstr(&d->name, "[unknown]");
	m->func =
		model_function_intern(d->p, model_intern_n(d->p, d->name.p, d->name.len), 0, 0, 0);
	return m->func;
}

static uint32_t frame_loc(struct dec *d, struct chunk *c, const struct pframe *f)
{
	uint32_t fn = method_func(d, c, f);
	int64_t line = f->line > 0 ? f->line : 0;
	uint64_t key = (uint64_t)fn << 32 | (uint32_t)line;
	uint32_t loc = u64map_get(&d->locmap, key);
	struct model_line ln = { fn, line, 0 };

	if (loc != NONE)
		return loc;
	loc = model_location_add(d->p, 0, 0, &ln, 1);
	d->p->locations.v[loc].frame_type = frame_type_id(d, c, f);
	u64map_put_new(&d->locmap, key, loc);
	return loc;
}

static int stack_of(struct dec *d, struct chunk *c, uint64_t key, uint32_t *off, uint32_t *n)
{
	uint32_t i = u64map_get(&c->pools.st_map, key);
	struct pstack *s;

	*off = 0;
	*n = 0;
	if (i == NONE)
		return 0;
	s = &c->pools.st.v[i];
	if (!s->resolved) {
		d->locs.n = 0;
		for (uint32_t j = 0; j < s->nframes; j++)
			VEC_PUSH(&d->locs, frame_loc(d, c, &c->pools.frames.v[s->frame_off + j]));
		if (s->truncated)
			VEC_PUSH(&d->locs, d->loc_truncated);
		if (d->p->stack_locs.n + d->locs.n > UINT32_MAX)
			return jfr_bad(d, -PROF_ETOOBIG, NULL, "more than 2^32 stack entries");
		s->model_off = model_stack_add(d->p, d->locs.v, (uint32_t)d->locs.n);
		s->model_n = (uint32_t)d->locs.n;
		s->resolved = true;
	}
	*off = s->model_off;
	*n = s->model_n;
	return 0;
}

static uint32_t thread_labels(struct dec *d, struct chunk *c, uint64_t key, struct model_label *l)
{
	uint32_t i = u64map_get(&c->pools.thr_map, key);
	struct pthread *t;

	if (i == NONE)
		return 0;
	t = &c->pools.thr.v[i];
	if (!t->resolved) {
		const char *p = "";
		size_t n = 0;

		if (!cval_text(c, &t->java_name, &p, &n, 0) || n == 0)
			if (!cval_text(c, &t->os_name, &p, &n, 0))
				n = 0;
		t->name_id = model_intern_n(d->p, p, n);
		t->tid = clamp64(t->java_tid ? t->java_tid : t->os_tid);
		t->resolved = true;
	}
	memset(l, 0, 2 * sizeof(*l));
	l[0].key = d->k_tname;
	l[0].str = t->name_id;
	l[1].key = d->k_tid;
	l[1].num = t->tid;
	return 2;
}

/* Sampling period of @ev in chunk @c for the cpu/wall families. */
static int64_t period_ns(const struct chunk *c, uint8_t ev, bool wall)
{
	if (ev == EV_NATIVE)
		return c->set.native_ns ? c->set.native_ns : 20000000;
	if (c->asprof && wall) {
		if (c->set.wall_ns)
			return c->set.wall_ns;
		return c->set.wall_engine && c->set.interval_ns ? c->set.interval_ns : 50000000;
	}
	if (c->asprof)
		return c->set.interval_ns ? c->set.interval_ns : 10000000;
	return c->set.exec_ns ? c->set.exec_ns : 20000000;
}

static int emit(struct dec *d, struct chunk *c, uint8_t ev, const struct cap *cap)
{
	struct model_label l[2];
	uint32_t nl = 0, off = 0, ns = 0;
	int64_t v[2] = { 1, 0 }, ts = 0;
	int rc;

	switch (ev) {
	case EV_EXEC:
	case EV_NATIVE:
		v[1] = period_ns(c, ev, d->o->event == FMT_JFR_WALL);
		break;
	case EV_CPUTIME:
		v[1] = has(cap, R_PERIOD) ? span_to_ns(c, cap->v[R_PERIOD].u)
					  : period_ns(c, EV_EXEC, false);
		break;
	case EV_WALLCLOCK:
		if (has(cap, R_SAMPLES))
			v[0] = (int64_t)(uint32_t)cap->v[R_SAMPLES].u;
		if (has(cap, R_TIMESPAN) && cap->v[R_TIMESPAN].u)
			v[1] = span_to_ns(c, cap->v[R_TIMESPAN].u);
		else if (__builtin_mul_overflow(v[0], period_ns(c, ev, true), &v[1]))
			v[1] = INT64_MAX;
		break;
	case EV_ALLOC_SAMPLE:
		v[1] = has(cap, R_WEIGHT) ? clamp64(cap->v[R_WEIGHT].u) : 0;
		break;
	case EV_TLAB_IN:
		if (has(cap, R_TLAB_SIZE) && !d->o->tlab_allocation_size)
			v[1] = clamp64(cap->v[R_TLAB_SIZE].u);
		else if (has(cap, R_ALLOC_SIZE))
			v[1] = clamp64(cap->v[R_ALLOC_SIZE].u);
		break;
	case EV_TLAB_OUT:
	case EV_MALLOC:
		v[1] = has(cap, R_ALLOC_SIZE) ? clamp64(cap->v[R_ALLOC_SIZE].u) : 0;
		break;
	default: /* lock events */
		v[1] = has(cap, R_DURATION) ? span_to_ns(c, cap->v[R_DURATION].u) : 0;
		break;
	}
	if (!d->period && (ev == EV_EXEC || ev == EV_NATIVE || ev == EV_CPUTIME))
		d->period = v[1];
	else if (!d->period && ev == EV_WALLCLOCK)
		d->period = period_ns(c, ev, true);
	if (has(cap, R_START))
		ts = ticks_to_ns(c, cap->v[R_START].u);
	if (has(cap, R_STACK) && (rc = stack_of(d, c, cap->v[R_STACK].u, &off, &ns)))
		return rc;
	if (has(cap, R_THREAD))
		nl = thread_labels(d, c, cap->v[R_THREAD].u, l);
	if (d->p->samples.n >= UINT32_MAX - 1 || d->p->values.n + 2 > UINT32_MAX ||
	    d->p->labels.n + nl > UINT32_MAX)
		return jfr_bad(d, -PROF_ETOOBIG, NULL,
			       "more samples than the model's 32-bit indexes hold");
	model_sample_add(d->p, off, ns, v, l, nl, ts, 0);
	return 0;
}

/* ---- chunks ------------------------------------------------------------- */

enum scan_mode { SCAN_COUNT, SCAN_SETTINGS, SCAN_EVENTS };

static bool wanted(const struct dec *d, const struct chunk *c, uint8_t ev)
{
	if (!d->sel[ev])
		return false;
	if (ev != EV_EXEC || d->exec_any_engine)
		return true;
	/* async-profiler's wall engine writes its samples as ExecutionSample (3.10). */
	return (c->asprof && c->set.wall_engine) == (d->o->event == FMT_JFR_WALL);
}

/*
 * One jdk.ActiveSetting record (bounded by @r): applied, or, when its
 * fields cannot be read (a bad string encoding, a length past the record),
 * skipped and counted in the profile. A setting only tunes a period or
 * names an engine, and the record's size frames it, so the records after
 * it still read; the defaults of jfr.h stand in for what it said.
 */
static int read_setting(struct dec *d, struct chunk *c, struct rd *r, uint32_t ci, struct cap *cap)
{
	struct prof_err *keep = d->err, why;
	int rc;

	prof_err_init(&why);
	d->err = &why;
	rc = jfr_walk(d, c, r, ci, 0, cap);
	d->err = keep;
	if (rc == -PROF_ECORRUPT) {
		model_profile_skip(d->p, 1, "jdk.ActiveSetting events", "%s", why.msg);
		return 0;
	}
	if (rc)
		return prof_err_set(d->err, rc, why.offset, "%s", why.msg);
	apply_setting(c, cap);
	return 0;
}

static int scan_records(struct dec *d, struct chunk *c, enum scan_mode mode)
{
	const uint8_t *p = d->base + c->off + HDR_SIZE, *end = d->base + c->off + c->size;
	uint64_t last_type = UINT64_MAX;
	uint32_t ci = NONE;
	int rc;

	d->part = "event records";
	while (p < end) {
		struct rd r = { p, end };
		uint64_t size, type;
		uint8_t ev;

		if ((rc = rd_u64(d, &r, &size)))
			return rc;
		if (size == 0)
			return jfr_bad(d, -PROF_ECORRUPT, p, "record size 0");
		if (size > (size_t)(end - p))
			return jfr_bad(d, -PROF_ECORRUPT, p,
				       "record of %" PRIu64
				       " bytes runs past the end of the chunk (%zu bytes left)",
				       size, (size_t)(end - p));
		r.end = p + size;
		if ((rc = rd_u64(d, &r, &type)))
			return rc;
		if (type != last_type) {
			last_type = type;
			ci = type < 2 ? NONE : u64map_get(&c->cls_by_id, type);
		}
		ev = ci == NONE ? EV_NONE : c->classes.v[ci].ev;
		if (mode == SCAN_COUNT) {
			d->counts[ev]++;
		} else if ((mode == SCAN_SETTINGS && ev == EV_SETTING) ||
			   (mode == SCAN_EVENTS && ev != EV_NONE && ev != EV_SETTING &&
			    wanted(d, c, ev))) {
			struct cap cap;

			d->part = "event";
			d->part_c = c;
			d->part_ci = ci;
			cap.has = 0;
			if (mode == SCAN_SETTINGS) {
				if ((rc = read_setting(d, c, &r, ci, &cap)))
					return rc;
			} else if ((rc = jfr_walk(d, c, &r, ci, 0, &cap)) ||
				   (rc = emit(d, c, ev, &cap))) {
				return rc;
			}
			d->part = "event records";
			d->part_ci = NONE;
		}
		p += size;
	}
	return 0;
}

static void chunk_release(struct chunk *c)
{
	struct pools *p = &c->pools;

	VEC_FREE(&c->strs);
	VEC_FREE(&c->classes);
	VEC_FREE(&c->fields);
	VEC_FREE(&c->plan);
	u64map_release(&c->cls_by_id);
	u64map_release(&p->thr_map);
	u64map_release(&p->st_map);
	u64map_release(&p->m_map);
	u64map_release(&p->c_map);
	u64map_release(&p->sym_map);
	u64map_release(&p->str_map);
	u64map_release(&p->ft_map);
	VEC_FREE(&p->thr);
	VEC_FREE(&p->st);
	VEC_FREE(&p->frames);
	VEC_FREE(&p->m);
	VEC_FREE(&p->cls);
	VEC_FREE(&p->sym);
	VEC_FREE(&p->str);
	VEC_FREE(&p->ft);
}

static uint64_t be64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * Header of the chunk at d->chunk_off. Returns 1 for an incomplete trailing
 * chunk to skip, 0 when @c is filled in, or an error.
 */
static int read_header(struct dec *d, struct chunk *c)
{
	const uint8_t *h = d->base + d->chunk_off;
	size_t left = d->n - d->chunk_off;
	unsigned major, minor;
	uint32_t features;

	d->part = "chunk header";
	if (left < HDR_SIZE)
		return jfr_bad(d, -PROF_ECORRUPT, h, "truncated chunk header (%zu of %d bytes)",
			       left, HDR_SIZE);
	if (memcmp(h, "FLR\0", 4) != 0)
		return jfr_bad(d, -PROF_EFORMAT, h,
			       "bad magic %02x %02x %02x %02x (expected 46 4c 52 00, \"FLR\\0\")",
			       h[0], h[1], h[2], h[3]);
	major = (unsigned)h[4] << 8 | h[5];
	minor = (unsigned)h[6] << 8 | h[7];
	if (major != 2)
		return jfr_bad(d, -PROF_EUNSUPPORTED, h + 4,
			       "JFR version %u.%u is not supported (2.x only%s)", major, minor,
			       major == 1 ? "; 1.x is JDK 7/8" : "");
	memset(c, 0, sizeof(*c));
	c->off = d->chunk_off;
	c->size = (size_t)PROF_MIN(be64(h + 8), (uint64_t)SIZE_MAX);
	c->cp_off = be64(h + 16);
	c->meta_off = be64(h + 24);
	c->start_ns = clamp64(be64(h + 32));
	c->dur_ns = clamp64(be64(h + 40));
	c->start_ticks = be64(h + 48);
	c->tps = be64(h + 56);
	features = (uint32_t)h[64] << 24 | (uint32_t)h[65] << 16 | (uint32_t)h[66] << 8 | h[67];
	if (c->cp_off == 0 || c->meta_off == 0) {
		if (d->chunks.n > 0)
			return 1;
		return jfr_bad(d, -PROF_ECORRUPT, h + 16,
			       "chunk is incomplete (constant pool offset %" PRIu64
			       ", metadata offset %" PRIu64
			       "): the recording was still being written",
			       c->cp_off, c->meta_off);
	}
	if (be64(h + 8) < HDR_SIZE)
		return jfr_bad(d, -PROF_ECORRUPT, h + 8,
			       "chunk size %" PRIu64 " is smaller than its %d-byte header",
			       be64(h + 8), HDR_SIZE);
	if (be64(h + 8) > left)
		return jfr_bad(d, -PROF_ECORRUPT, h + 8,
			       "chunk size %" PRIu64
			       " runs past the end of the input (%zu bytes left)",
			       be64(h + 8), left);
	if (!(features & 1))
		return jfr_bad(d, -PROF_EUNSUPPORTED, h + 64,
			       "integers are not compressed (features 0x%08x): not supported",
			       features);
	if (c->tps == 0)
		return jfr_bad(d, -PROF_ECORRUPT, h + 56, "ticks per second is 0");
	if (c->meta_off < HDR_SIZE || c->meta_off >= c->size)
		return jfr_bad(d, -PROF_ECORRUPT, h + 24,
			       "metadata offset %" PRIu64 " is outside the chunk (size %zu)",
			       c->meta_off, c->size);
	if (c->cp_off < HDR_SIZE || c->cp_off >= c->size)
		return jfr_bad(d, -PROF_ECORRUPT, h + 16,
			       "constant pool offset %" PRIu64 " is outside the chunk (size %zu)",
			       c->cp_off, c->size);
	return 0;
}

static int select_events(struct dec *d)
{
	const struct fmt_jfr_opts *o = d->o;

	if (o->event_type) {
		for (size_t i = 0; i < PROF_ARRAY_SIZE(ev_table); i++) {
			uint8_t ev = ev_table[i].ev;

			if (strcmp(o->event_type, ev_table[i].name) != 0)
				continue;
			if (ev_table[i].family == o->event ||
			    (ev == EV_EXEC && o->event == FMT_JFR_WALL)) {
				d->sel[ev] = true;
				d->exec_any_engine = true;
				return 0;
			}
		}
		return prof_err_set(d->err, -EINVAL, -1,
				    "jfr: event type '%s' is not one the %s family reads",
				    o->event_type, fmt_jfr_event_name(o->event));
	}
	switch (o->event) {
	case FMT_JFR_CPU:
		d->sel[d->counts[EV_CPUTIME] ? EV_CPUTIME : EV_EXEC] = true;
		break;
	case FMT_JFR_WALL:
		d->sel[EV_WALLCLOCK] = d->sel[EV_EXEC] = d->sel[EV_NATIVE] = true;
		break;
	case FMT_JFR_ALLOC:
		if (d->counts[EV_ALLOC_SAMPLE])
			d->sel[EV_ALLOC_SAMPLE] = true;
		else
			d->sel[EV_TLAB_IN] = d->sel[EV_TLAB_OUT] = true;
		break;
	case FMT_JFR_MALLOC:
		d->sel[EV_MALLOC] = true;
		break;
	default:
		d->sel[EV_MON_ENTER] = d->sel[EV_PARK] = true;
		break;
	}
	return 0;
}

static void setup_profile(struct dec *d)
{
	static const struct {
		const char *name, *t0, *u0, *t1, *u1, *pt, *pu;
	} shapes[] = {
		[FMT_JFR_CPU] = { "process_cpu", "samples", "count", "cpu", "nanoseconds", "cpu",
				  "nanoseconds" },
		[FMT_JFR_WALL] = { "wall", "samples", "count", "wall", "nanoseconds", "wall",
				   "nanoseconds" },
		[FMT_JFR_ALLOC] = { "memory", "alloc_objects", "count", "alloc_space", "bytes",
				    "space", "bytes" },
		[FMT_JFR_LOCK] = { NULL, "contentions", "count", "delay", "nanoseconds",
				   "contentions", "count" },
		[FMT_JFR_MALLOC] = { "memory", "alloc_objects", "count", "alloc_space", "bytes",
				     "space", "bytes" },
	};
	struct model_profile *p = d->p;
	unsigned e = d->o->event;

	model_sample_type_add(p, shapes[e].t0, shapes[e].u0);
	model_sample_type_add(p, shapes[e].t1, shapes[e].u1);
	p->period_type.type = model_intern(p, shapes[e].pt);
	p->period_type.unit = model_intern(p, shapes[e].pu);
	p->default_sample_type = p->sample_types.v[1].type;
	if (shapes[e].name)
		p->name = model_intern(p, shapes[e].name);
	d->k_tname = model_intern(p, "thread.name");
	d->k_tid = model_intern(p, "thread.id");
	d->ft_jvm = model_intern(p, "jvm");
	d->ft_native = model_intern(p, "native");
	d->ft_kernel = model_intern(p, "kernel");
	d->fn_unknown = model_function_intern(p, model_intern(p, "[unknown]"), 0, 0, 0);
	{
		struct model_line ln = {
			model_function_intern(p, model_intern(p, "[truncated]"), 0, 0, 0), 0, 0
		};

		d->loc_truncated = model_location_add(p, 0, 0, &ln, 1);
	}
}

/*
 * When the family read has no events in the recording but others have,
 * a comment names them ("jfr: no alloc events; the recording has events
 * of the families malloc, lock (--event)") so that an empty profile is
 * never the only answer; cli/load.c prints it.
 */
static void note_other_families(struct dec *d)
{
	char fams[96] = "";
	bool seen[FMT_JFR_MALLOC + 1] = { false };
	size_t o = 0;

	for (size_t ev = 0; ev < EV_MAX; ev++)
		if (d->sel[ev] && d->counts[ev])
			return;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(ev_table); i++) {
		unsigned f = ev_table[i].family;

		if (f > FMT_JFR_MALLOC || f == (unsigned)d->o->event || seen[f] ||
		    !d->counts[ev_table[i].ev])
			continue;
		seen[f] = true;
		o += (size_t)snprintf(fams + o, sizeof(fams) - o, "%s%s", o ? ", " : "",
				      fmt_jfr_event_name((enum fmt_jfr_event)f));
		if (o >= sizeof(fams))
			break;
	}
	if (!o)
		return;
	buf_reset(&d->name);
	buf_addf(&d->name,
		 "jfr: no %s events; the recording has events of the families %s (--event)",
		 fmt_jfr_event_name(d->o->event), fams);
	VEC_PUSH(&d->p->comments, model_intern_n(d->p, d->name.p, d->name.len));
}

static int decode(struct dec *d)
{
	int64_t t0 = INT64_MAX, t1 = 0;
	int rc;

	/*
	 * Pass 1: headers, metadata, event counts. Only the headers are kept:
	 * pass 2 parses the metadata again (a small part of a chunk), so the
	 * tables of one chunk at a time are in memory, however many chunks.
	 */
	for (d->chunk_off = 0; d->chunk_off < d->n;) {
		struct chunk *c;

		VEC_RESERVE(&d->chunks, 1);
		c = &d->chunks.v[d->chunks.n];
		rc = read_header(d, c);
		if (rc == 1)
			break;
		if (rc)
			return rc;
		d->chunks.n++;
		if ((rc = jfr_read_metadata(d, c)) || (rc = scan_records(d, c, SCAN_COUNT)))
			return rc;
		chunk_release(c);
		d->chunk_off += c->size;
		d->chunk_no++;
	}
	if ((rc = select_events(d)))
		return rc;
	setup_profile(d);
	if (!d->o->event_type)
		note_other_families(d);
	/* Pass 2: pools, settings, events; one chunk's pools at a time. */
	for (size_t i = 0; i < d->chunks.n; i++) {
		struct chunk *c = &d->chunks.v[i];

		d->chunk_no = (unsigned)i;
		d->chunk_off = c->off;
		if ((rc = jfr_read_metadata(d, c)) || (rc = read_pools(d, c)) ||
		    (rc = scan_records(d, c, SCAN_SETTINGS)))
			return rc;
		/* async-profiler writes its settings only into its first chunk. */
		if (c->asprof && !c->set.asprof_set && d->last_asprof.asprof_set) {
			c->set.asprof_set = true;
			c->set.wall_engine = d->last_asprof.wall_engine;
			c->set.interval_ns = d->last_asprof.interval_ns;
			c->set.wall_ns = d->last_asprof.wall_ns;
		} else if (c->asprof && c->set.asprof_set) {
			d->last_asprof = c->set;
		}
		if (!c->set.jdk_set && d->last_jdk.jdk_set) {
			c->set.exec_ns = d->last_jdk.exec_ns;
			c->set.native_ns = d->last_jdk.native_ns;
		} else if (c->set.jdk_set) {
			d->last_jdk = c->set;
		}
		if ((rc = scan_records(d, c, SCAN_EVENTS)))
			return rc;
		t0 = PROF_MIN(t0, c->start_ns);
		t1 = PROF_MAX(t1, c->start_ns + PROF_MIN(c->dur_ns, INT64_MAX - c->start_ns));
		chunk_release(c);
	}
	if (t0 != INT64_MAX) {
		d->p->time_ns = t0;
		d->p->duration_ns = t1 - t0;
	}
	d->p->period = d->period;
	return 0;
}

/* ---- public API ----------------------------------------------------------- */

int fmt_jfr_event_parse(const char *s, enum fmt_jfr_event *out)
{
	static const char *const names[] = { "cpu", "wall", "alloc", "lock", "malloc" };

	for (size_t i = 0; s && i < PROF_ARRAY_SIZE(names); i++)
		if (strcmp(s, names[i]) == 0) {
			*out = (enum fmt_jfr_event)i;
			return 0;
		}
	return -EINVAL;
}

const char *fmt_jfr_event_name(enum fmt_jfr_event e)
{
	static const char *const names[] = { "cpu", "wall", "alloc", "lock", "malloc" };

	return (unsigned)e < PROF_ARRAY_SIZE(names) ? names[e] : "?";
}

bool fmt_jfr_sniff(const void *data, size_t n)
{
	unsigned char head[4];
	z_stream zs;
	int zrc;

	if (n >= 4 && memcmp(data, "FLR\0", 4) == 0)
		return true;
	if (!gzip_is(data, n))
		return false;
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return false;
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)PROF_MIN(n, (size_t)65536);
	zs.next_out = head;
	zs.avail_out = sizeof(head);
	do
		zrc = inflate(&zs, Z_NO_FLUSH);
	while (zrc == Z_OK && zs.avail_out > 0 && zs.avail_in > 0);
	inflateEnd(&zs);
	return zs.avail_out == 0 && memcmp(head, "FLR\0", 4) == 0;
}

int fmt_jfr_decode(const void *data, size_t n, const struct fmt_jfr_opts *opts,
		   struct model_profile *out, struct prof_err *err)
{
	static const struct fmt_jfr_opts defaults = { FMT_JFR_CPU, NULL, false, 0 };
	struct buf raw = BUF_INIT;
	struct dec d;
	size_t max;
	int rc;

	memset(&d, 0, sizeof(d));
	d.o = opts ? opts : &defaults;
	d.err = err;
	d.p = out;
	d.part = "input";
	d.part_ci = NONE;
	buf_init(&d.name, 0);
	max = d.o->max_decoded ? d.o->max_decoded : FMT_JFR_DEFAULT_MAX;
	if ((unsigned)d.o->event > FMT_JFR_MALLOC)
		return prof_err_set(err, -EINVAL, -1, "jfr: unknown event family %d",
				    (int)d.o->event);
	PROF_ASSERT(out->samples.n == 0 && out->sample_types.n == 0);
	if (gzip_is(data, n)) {
		rc = gzip_inflate(data, n, max, &raw, err);
		if (rc)
			goto out;
		data = raw.p;
		n = raw.len;
		d.gz = true;
	} else if (n > max) {
		rc = prof_err_set(err, -PROF_ETOOBIG, -1,
				  "jfr: input of %zu bytes exceeds the limit of %zu bytes", n, max);
		goto out;
	}
	if (n == 0) {
		rc = prof_err_set(err, -PROF_EFORMAT, 0, "jfr: empty input");
		goto out;
	}
	/* Lengths, counts and offsets below are then < 2^32 (the model's indexes too). */
	if (n > UINT32_MAX) {
		rc = prof_err_set(
			err, -PROF_ETOOBIG, -1,
			"jfr: %zu bytes (decoded): recordings over 4 GiB are not supported", n);
		goto out;
	}
	d.base = data;
	d.n = n;
	rc = decode(&d);
out:
	for (size_t i = 0; i < d.chunks.n; i++)
		chunk_release(&d.chunks.v[i]);
	VEC_FREE(&d.chunks);
	u64map_release(&d.locmap);
	VEC_FREE(&d.locs);
	buf_release(&d.name);
	arena_release(&d.ar);
	buf_release(&raw);
	return rc;
}
