/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jfr_int.h - what the two parts of the JFR decoder share and nothing
 * else includes: jfr_read.c (errors, primitive reads, metadata, the walk
 * of values by plan) and jfr.c (constant pools, settings, events to
 * model samples, chunks, the public API). The format: docs/formats.md
 * (JFR).
 */
#ifndef PROFD_FORMAT_JFR_INT_H
#define PROFD_FORMAT_JFR_INT_H

#include "base/buf.h"
#include "base/mem.h"
#include "format/jfr.h"

#define HDR_SIZE  68
#define MAX_DEPTH 16
#define STR_DEPTH 4
#define NONE	  UINT32_MAX

/* ---- u64 -> u32 hash map ------------------------------------------------ */

struct u64map {
	uint64_t *keys;
	uint32_t *vals; /* value + 1; 0 = empty slot */
	uint32_t mask;
	size_t n;
};

static inline uint32_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return (uint32_t)k;
}

static inline void u64map_release(struct u64map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

static inline uint32_t u64map_get(const struct u64map *m, uint64_t k)
{
	if (!m->vals)
		return NONE;
	for (uint32_t h = hash64(k) & m->mask;; h = (h + 1) & m->mask) {
		if (!m->vals[h])
			return NONE;
		if (m->keys[h] == k)
			return m->vals[h] - 1;
	}
}

static inline void u64map_grow(struct u64map *m)
{
	uint32_t ncap = m->vals ? (m->mask + 1) * 2 : 64;
	uint64_t *keys = xcalloc(ncap, sizeof(*keys));
	uint32_t *vals = xcalloc(ncap, sizeof(*vals));

	for (uint32_t i = 0; m->vals && i <= m->mask; i++) {
		uint32_t h;

		if (!m->vals[i])
			continue;
		for (h = hash64(m->keys[i]) & (ncap - 1); vals[h]; h = (h + 1) & (ncap - 1))
			;
		keys[h] = m->keys[i];
		vals[h] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->mask = ncap - 1;
}

/* Value stored under @k, or NONE after storing @v under it. */
static inline uint32_t u64map_put_new(struct u64map *m, uint64_t k, uint32_t v)
{
	uint32_t h;

	if (!m->vals || (m->n + 1) * 2 > (size_t)m->mask + 1)
		u64map_grow(m);
	for (h = hash64(k) & m->mask; m->vals[h]; h = (h + 1) & m->mask)
		if (m->keys[h] == k)
			return m->vals[h] - 1;
	m->keys[h] = k;
	m->vals[h] = v + 1;
	m->n++;
	return NONE;
}

/* ---- string arena (converted strings; blocks never move) --------------- */

struct arena {
	VEC(char *) blocks;
	char *cur;
	size_t left;
};

static inline char *arena_alloc(struct arena *a, size_t n)
{
	char *p;

	if (n > a->left) {
		size_t sz = PROF_MAX(n, (size_t)65536);

		a->cur = xmalloc(sz);
		a->left = sz;
		VEC_PUSH(&a->blocks, a->cur);
	}
	p = a->cur;
	a->cur += n;
	a->left -= n;
	return p;
}

static inline void arena_release(struct arena *a)
{
	for (size_t i = 0; i < a->blocks.n; i++)
		free(a->blocks.v[i]);
	VEC_FREE(&a->blocks);
	a->cur = NULL;
	a->left = 0;
}

/* ---- metadata model ----------------------------------------------------- */

enum fk {
	FK_NONE = 0, /* occupies no bytes (array element of a zero-size type) */
	FK_BOOL,
	FK_BYTE,
	FK_SHORT,
	FK_CHAR,
	FK_INT,
	FK_LONG,
	FK_FLOAT,
	FK_DOUBLE,
	FK_STRING,
	FK_CPOOL,
	FK_STRUCT,
};

/* Classes the decoder understands (pool types). */
enum known {
	K_NONE = 0,
	K_THREAD,
	K_STACKTRACE,
	K_STACKFRAME,
	K_METHOD,
	K_CLASS,
	K_SYMBOL,
	K_STRING,
	K_FRAMETYPE,
};

/* Event types the decoder understands. */
enum ev {
	EV_NONE = 0,
	EV_EXEC,
	EV_NATIVE,
	EV_CPUTIME,
	EV_WALLCLOCK,
	EV_ALLOC_SAMPLE,
	EV_TLAB_IN,
	EV_TLAB_OUT,
	EV_MON_ENTER,
	EV_MON_WAIT,
	EV_PARK,
	EV_MALLOC,
	EV_FREE,
	EV_SETTING,
	EV_MAX,
};

/* What a field means to us; captured by the jfr_walk (at most 63 roles). */
enum role {
	R_NONE = 0,
	R_START,
	R_DURATION,
	R_THREAD,
	R_STACK,
	R_WEIGHT,
	R_ALLOC_SIZE,
	R_TLAB_SIZE,
	R_SAMPLES,
	R_PERIOD,
	R_TIMESPAN,
	R_SET_ID,
	R_SET_NAME,
	R_SET_VALUE,
	R_T_OSNAME,
	R_T_OSTID,
	R_T_JNAME,
	R_T_JTID,
	R_M_TYPE,
	R_M_NAME,
	R_C_NAME,
	R_SYM_STRING,
	R_FT_DESC,
	R_ST_TRUNC,
	R_ST_FRAMES,
	R_F_METHOD,
	R_F_LINE,
	R_F_TYPE,
	R_STRVAL, /* the value of a java.lang.String pool entry */
	R_MAX,
};

static const struct {
	const char *name;
	uint8_t ev;
	uint8_t family; /* enum fmt_jfr_event */
} ev_table[] = {
	{ "jdk.ExecutionSample", EV_EXEC, FMT_JFR_CPU },
	{ "jdk.NativeMethodSample", EV_NATIVE, FMT_JFR_WALL },
	{ "jdk.CPUTimeSample", EV_CPUTIME, FMT_JFR_CPU },
	{ "profiler.WallClockSample", EV_WALLCLOCK, FMT_JFR_WALL },
	{ "jdk.ObjectAllocationSample", EV_ALLOC_SAMPLE, FMT_JFR_ALLOC },
	{ "jdk.ObjectAllocationInNewTLAB", EV_TLAB_IN, FMT_JFR_ALLOC },
	{ "jdk.ObjectAllocationOutsideTLAB", EV_TLAB_OUT, FMT_JFR_ALLOC },
	{ "jdk.JavaMonitorEnter", EV_MON_ENTER, FMT_JFR_LOCK },
	{ "jdk.JavaMonitorWait", EV_MON_WAIT, FMT_JFR_LOCK },
	{ "jdk.ThreadPark", EV_PARK, FMT_JFR_LOCK },
	{ "profiler.Malloc", EV_MALLOC, FMT_JFR_MALLOC },
	{ "profiler.Free", EV_FREE, 254 }, /* counted only: no family reads it (jfr.h) */
	{ "jdk.ActiveSetting", EV_SETTING, 255 },
};

static const struct {
	const char *name;
	uint8_t known;
} known_table[] = {
	{ "java.lang.Thread", K_THREAD },	  { "jdk.types.StackTrace", K_STACKTRACE },
	{ "jdk.types.StackFrame", K_STACKFRAME }, { "jdk.types.Method", K_METHOD },
	{ "java.lang.Class", K_CLASS },		  { "jdk.types.Symbol", K_SYMBOL },
	{ "java.lang.String", K_STRING },	  { "jdk.types.FrameType", K_FRAMETYPE },
};

static const struct {
	const char *name;
	uint8_t kind;
} prim_table[] = {
	{ "boolean", FK_BOOL }, { "byte", FK_BYTE },	 { "short", FK_SHORT },
	{ "char", FK_CHAR },	{ "int", FK_INT },	 { "long", FK_LONG },
	{ "float", FK_FLOAT },	{ "double", FK_DOUBLE }, { "java.lang.String", FK_STRING },
};

struct mstr {
	const char *p;
	uint32_t len;
};

struct mfield {
	uint32_t name; /* metadata string index */
	uint32_t cls;  /* class index of the field's type */
	uint64_t type; /* type id as written */
	uint8_t kind;  /* enum fk */
	uint8_t role;  /* enum role */
	bool array, cpool;
};

enum { NZ_UNKNOWN = 0, NZ_VISITING, NZ_ZERO, NZ_NONZERO };

struct mclass {
	uint64_t id;
	uint32_t name;		  /* metadata string index, NONE if absent */
	uint32_t fld_off, nfld;	  /* fields as declared */
	uint32_t plan_off, nplan; /* fields that occupy bytes */
	uint8_t prim;		  /* FK_* of a primitive/String type, else FK_STRUCT */
	uint8_t known, ev, nz;
	bool has_id;
};

/* A string value as read: inline bytes, or a key into the String pool. */
enum { JS_NULL = 0, JS_INL, JS_REF };
struct jstr {
	const char *p;
	uint32_t len;
	uint8_t kind;
	uint64_t ref;
};

/* A captured value: a number/key, or a string; @pool says which pool a key refers to. */
struct cval {
	uint64_t u;
	struct jstr s;
	uint8_t kind, pool;
};

struct cap {
	uint64_t has; /* bit per role */
	struct cval v[R_MAX];
	uint32_t frame_off, nframes;
};

/* ---- constant pools (per chunk) ---------------------------------------- */

struct pthread {
	struct cval os_name, java_name;
	uint64_t os_tid, java_tid;
	uint32_t name_id; /* model string, valid when resolved */
	int64_t tid;
	bool resolved;
};

struct pstack {
	uint32_t frame_off, nframes;
	uint32_t model_off, model_n;
	bool truncated, resolved;
};

struct pframe {
	uint64_t method, type;
	int64_t line;
	bool has_method, has_type;
};

struct pmethod {
	struct cval name;
	uint64_t cls;
	bool has_cls;
	uint32_t func; /* model function, 0 = not yet resolved */
};

struct ptext {
	struct cval s;
	uint32_t ft; /* FrameType: model string id of profile.frame.type + 1, 0 = not yet */
};

struct pools {
	struct u64map thr_map, st_map, m_map, c_map, sym_map, str_map, ft_map;
	VEC(struct pthread) thr;
	VEC(struct pstack) st;
	VEC(struct pframe) frames;
	VEC(struct pmethod) m;
	VEC(struct ptext) cls, sym, str, ft;
};

struct settings {
	bool asprof_set, jdk_set;
	bool wall_engine;	      /* async-profiler event=wall */
	int64_t interval_ns, wall_ns; /* async-profiler */
	int64_t exec_ns, native_ns;   /* JDK "period" of the sampling events */
};

struct chunk {
	size_t off, size; /* absolute offset, size in bytes */
	uint64_t cp_off, meta_off, start_ticks, tps;
	int64_t start_ns, dur_ns;
	VEC(struct mstr) strs;
	VEC(struct mclass) classes;
	VEC(struct mfield) fields;
	VEC(struct mfield) plan;
	struct u64map cls_by_id;
	bool asprof; /* written by async-profiler (defines profiler.* types) */
	struct settings set;
	struct pools pools;
};

struct dec {
	const uint8_t *base;
	size_t n;
	bool gz;
	struct prof_err *err;
	const struct fmt_jfr_opts *o;
	struct model_profile *p;

	unsigned chunk_no;
	size_t chunk_off;
	const char *part;	    /* what is being read, for errors */
	const struct chunk *part_c; /* with part_ci: the class named after @part */
	uint32_t part_ci;

	struct arena ar;
	VEC(struct chunk) chunks;
	uint64_t counts[EV_MAX];
	bool sel[EV_MAX];
	bool exec_any_engine; /* event_type named jdk.ExecutionSample */
	struct settings last_asprof, last_jdk;

	struct u64map locmap; /* (function << 32 | line) -> location */
	uint32_t k_tname, k_tid;
	uint32_t fn_unknown, loc_truncated;
	uint32_t ft_jvm, ft_native, ft_kernel;
	VEC(uint32_t) locs;
	struct buf name;
	int64_t period; /* of the first cpu/wall sample, ns */
};

/* ---- primitive reads ---------------------------------------------------- */

struct rd {
	const uint8_t *p, *end;
};

static inline size_t rd_left(const struct rd *r)
{
	return (size_t)(r->end - r->p);
}

/* LEB128, 7 bits a byte, low group first; the 9th byte carries 8 bits (docs/formats.md "JFR layout"). */

int jfr_bad(struct dec *d, int code, const uint8_t *at, const char *fmt, ...) PROF_PRINTF(4, 5);

/* A count or length: each unit takes at least one byte, so it cannot exceed the bytes left. */
int jfr_rd_count(struct dec *d, struct rd *r, uint64_t *v, const char *what);

int jfr_rd_fixed(struct dec *d, struct rd *r, size_t n, uint64_t *v);

int jfr_read_metadata(struct dec *d, struct chunk *c);

/* The fields of one value of struct class @ci; role values go to @cap (may be NULL). */
int jfr_walk(struct dec *d, struct chunk *c, struct rd *r, uint32_t ci, int depth, struct cap *cap);

/* One value of class @ci: a primitive or String (pool of java.lang.String, ...) or a struct. */
int jfr_read_value(struct dec *d, struct chunk *c, struct rd *r, uint32_t ci, struct cap *cap);

/* LEB128, 7 bits a byte, low group first; the 9th byte carries 8 bits (docs/formats.md). */
__attribute__((noinline)) int jfr_rd_u64_slow(struct dec *d, struct rd *r, uint64_t *v);

/* Most varints are one byte: that case stays inline. */
static inline int rd_u64(struct dec *d, struct rd *r, uint64_t *v)
{
	if (r->p < r->end && *r->p < 0x80) {
		*v = *r->p++;
		return 0;
	}
	return jfr_rd_u64_slow(d, r, v);
}

#endif
