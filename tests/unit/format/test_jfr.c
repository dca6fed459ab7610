// SPDX-License-Identifier: Apache-2.0
/*
 * test_jfr.c - the JFR decoder on small handmade recordings: a writer
 * below builds chunks (header, metadata element tree, one checkpoint with
 * the Symbol/Class/Method/Thread/FrameType/StackTrace pools, events) the
 * way async-profiler does (padded 5-byte record sizes), so every test
 * knows the exact byte offsets its expected error names.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "format/jfr.h"
#include "model/profile.h"

#include <setjmp.h>
#include <cmocka.h>

/* ---- writer ------------------------------------------------------------ */

#define START_NS    1700000000000000000LL
#define START_TICKS 5000u
#define TPS	    2000000000u /* 2 GHz: 2 ticks per ns */

/* Type ids of the test metadata. */
enum {
	T_LONG = 10,
	T_INT,
	T_STRING,
	T_BOOL,
	T_THREAD = 20,
	T_SYMBOL,
	T_CLASS,
	T_METHOD,
	T_FRAME,
	T_FRAMETYPE,
	T_STACK,
	T_CYCLIC = 60,
	T_EXEC = 100,
	T_ALLOC,
	T_MONITOR,
	T_SETTING,
	T_PARK,
	T_MALLOC,
	T_FREE,
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_int_equal(buf_add(b, p, n), 0);
}

static void put_u8(struct buf *b, unsigned v)
{
	uint8_t c = (uint8_t)v;

	put(b, &c, 1);
}

static void put_var(struct buf *b, uint64_t v)
{
	for (int i = 0; i < 8 && v >= 0x80; i++) {
		put_u8(b, (unsigned)(v & 0x7f) | 0x80);
		v >>= 7;
	}
	put_u8(b, (unsigned)v);
}

/* The padded 5-byte form async-profiler uses for sizes it patches later. */
static void put_padvar(struct buf *b, uint64_t v)
{
	for (int i = 0; i < 4; i++)
		put_u8(b, (unsigned)((v >> (7 * i)) & 0x7f) | 0x80);
	put_u8(b, (unsigned)(v >> 28) & 0x7f);
}

static void put_be(struct buf *b, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--)
		put_u8(b, (unsigned)(v >> (8 * i)) & 0xff);
}

static void put_str(struct buf *b, const char *s)
{
	put_u8(b, 3);
	put_var(b, strlen(s));
	put(b, s, strlen(s));
}

/* A record: padded size (counting itself), type id, body. */
static void put_rec(struct buf *out, uint64_t type, const struct buf *body)
{
	struct buf t = BUF_INIT;

	put_var(&t, type);
	put_padvar(out, 5 + t.len + body->len);
	put(out, t.p, t.len);
	put(out, body->p, body->len);
	buf_release(&t);
}

struct meta {
	const char *s[128];
	unsigned n;
	struct buf tree;
};

static uint64_t sidx(struct meta *m, const char *s)
{
	for (unsigned i = 0; i < m->n; i++)
		if (!strcmp(m->s[i], s))
			return i;
	assert_true(m->n < 128);
	m->s[m->n] = s;
	return m->n++;
}

static void el(struct meta *m, const char *name, unsigned nattr)
{
	put_var(&m->tree, sidx(m, name));
	put_var(&m->tree, nattr);
}

static void attr(struct meta *m, const char *k, const char *v)
{
	put_var(&m->tree, sidx(m, k));
	put_var(&m->tree, sidx(m, v));
}

static void children(struct meta *m, unsigned n)
{
	put_var(&m->tree, n);
}

static const char *num(unsigned v)
{
	static char pool[64][12];
	static unsigned next;
	char *s = pool[next++ % 64];

	snprintf(s, 12, "%u", v);
	return s;
}

static void class_el(struct meta *m, unsigned id, const char *name, unsigned nfields)
{
	el(m, "class", 2);
	attr(m, "id", num(id));
	attr(m, "name", name);
	children(m, nfields);
}

static void field_el(struct meta *m, const char *name, unsigned type, bool cpool, bool array)
{
	el(m, "field", 2 + cpool + array);
	attr(m, "name", name);
	attr(m, "class", num(type));
	if (cpool)
		attr(m, "constantPool", "true");
	if (array)
		attr(m, "dimension", "1");
	children(m, 0);
}

struct mkopt {
	uint64_t shift;	      /* added to every constant pool key */
	bool empty_st_pool;   /* an extra StackTrace pool with no entries */
	int64_t delta;	      /* the checkpoint's delta (0: last in the chain) */
	bool overlap;	      /* chain to an earlier checkpoint that overlaps it */
	bool chain;	      /* the Symbol pool in an earlier checkpoint of the chain */
	int name_enc;	      /* encoding of the thread's Java name: 3 (UTF-8), 4 or 5 */
	uint64_t frames_len;  /* declared length of stack 50's frames (0: real) */
	bool cyclic;	      /* a pool of a class that contains itself inline */
	unsigned deep;	      /* nest this many elements under the root */
	const char *bad_type; /* field type id written for Thread.osName (NULL: real) */
	bool no_setting;      /* leave out the ExecutionSample period setting */
	bool nativemem;	      /* async-profiler's profiler.Malloc/Free types and events */
	const void *extra;    /* raw bytes appended after the events */
	size_t nextra;
};

struct layout {
	size_t off, size, meta, cp, ev[16], nev, extra;
};

static void write_metadata(struct buf *out, const struct mkopt *o)
{
	struct meta m = { { 0 }, 0, BUF_INIT };
	struct buf body = BUF_INIT;
	unsigned nclasses = 18 + (o->cyclic ? 1 : 0) + (o->nativemem ? 2 : 0);

	el(&m, "root", 0);
	children(&m, 1 + (o->deep ? 1 : 0));
	el(&m, "metadata", 0);
	children(&m, nclasses);
	class_el(&m, T_LONG, "long", 0);
	class_el(&m, T_INT, "int", 0);
	class_el(&m, T_STRING, "java.lang.String", 0);
	class_el(&m, T_BOOL, "boolean", 0);
	class_el(&m, T_THREAD, "java.lang.Thread", 4);
	el(&m, "field", 2);
	attr(&m, "name", "osName");
	attr(&m, "class", o->bad_type ? o->bad_type : num(T_STRING));
	children(&m, 0);
	field_el(&m, "osThreadId", T_LONG, false, false);
	field_el(&m, "javaName", T_STRING, false, false);
	field_el(&m, "javaThreadId", T_LONG, false, false);
	class_el(&m, T_SYMBOL, "jdk.types.Symbol", 1);
	field_el(&m, "string", T_STRING, false, false);
	class_el(&m, T_CLASS, "java.lang.Class", 1);
	field_el(&m, "name", T_SYMBOL, true, false);
	class_el(&m, T_METHOD, "jdk.types.Method", 2);
	field_el(&m, "type", T_CLASS, true, false);
	field_el(&m, "name", T_SYMBOL, true, false);
	class_el(&m, T_FRAME, "jdk.types.StackFrame", 3);
	field_el(&m, "method", T_METHOD, true, false);
	field_el(&m, "lineNumber", T_INT, false, false);
	field_el(&m, "type", T_FRAMETYPE, true, false);
	class_el(&m, T_FRAMETYPE, "jdk.types.FrameType", 1);
	field_el(&m, "description", T_STRING, false, false);
	class_el(&m, T_STACK, "jdk.types.StackTrace", 2);
	field_el(&m, "truncated", T_BOOL, false, false);
	field_el(&m, "frames", T_FRAME, false, true);
	class_el(&m, T_EXEC, "jdk.ExecutionSample", 3);
	field_el(&m, "startTime", T_LONG, false, false);
	field_el(&m, "sampledThread", T_THREAD, true, false);
	field_el(&m, "stackTrace", T_STACK, true, false);
	class_el(&m, T_ALLOC, "jdk.ObjectAllocationSample", 4);
	field_el(&m, "startTime", T_LONG, false, false);
	field_el(&m, "eventThread", T_THREAD, true, false);
	field_el(&m, "stackTrace", T_STACK, true, false);
	field_el(&m, "weight", T_LONG, false, false);
	class_el(&m, T_MONITOR, "jdk.JavaMonitorEnter", 4);
	field_el(&m, "startTime", T_LONG, false, false);
	field_el(&m, "duration", T_LONG, false, false);
	field_el(&m, "eventThread", T_THREAD, true, false);
	field_el(&m, "stackTrace", T_STACK, true, false);
	class_el(&m, T_SETTING, "jdk.ActiveSetting", 4);
	field_el(&m, "startTime", T_LONG, false, false);
	field_el(&m, "id", T_LONG, false, false);
	field_el(&m, "name", T_STRING, false, false);
	field_el(&m, "value", T_STRING, false, false);
	class_el(&m, T_PARK, "jdk.ThreadPark", 4);
	field_el(&m, "startTime", T_LONG, false, false);
	field_el(&m, "duration", T_LONG, false, false);
	field_el(&m, "eventThread", T_THREAD, true, false);
	field_el(&m, "stackTrace", T_STACK, true, false);
	/* Two more types nobody reads: a float and a struct with no fields. */
	class_el(&m, 14, "float", 0);
	class_el(&m, 15, "x.Empty", 0);
	if (o->nativemem) {
		/* As async-profiler's jfrMetadata.cpp declares them (docs/formats.md,
		 * "async-profiler's native memory events"). */
		class_el(&m, T_MALLOC, "profiler.Malloc", 5);
		field_el(&m, "startTime", T_LONG, false, false);
		field_el(&m, "eventThread", T_THREAD, true, false);
		field_el(&m, "stackTrace", T_STACK, true, false);
		field_el(&m, "address", T_LONG, false, false);
		field_el(&m, "size", T_LONG, false, false);
		class_el(&m, T_FREE, "profiler.Free", 4);
		field_el(&m, "startTime", T_LONG, false, false);
		field_el(&m, "eventThread", T_THREAD, true, false);
		field_el(&m, "stackTrace", T_STACK, true, false);
		field_el(&m, "address", T_LONG, false, false);
	}
	if (o->cyclic) {
		class_el(&m, T_CYCLIC, "x.Cyclic", 2);
		field_el(&m, "v", T_INT, false, false);
		field_el(&m, "next", T_CYCLIC, false, false);
	}
	for (unsigned i = 0; i < o->deep; i++) {
		el(&m, "region", 0);
		children(&m, i + 1 < o->deep);
	}
	put_var(&body, 0); /* startTime */
	put_var(&body, 0); /* duration */
	put_var(&body, 1); /* metadata id */
	put_var(&body, m.n);
	for (unsigned i = 0; i < m.n; i++)
		put_str(&body, m.s[i]);
	put(&body, m.tree.p, m.tree.len);
	put_rec(out, 0, &body);
	buf_release(&body);
	buf_release(&m.tree);
}

static void pool_head(struct buf *b, unsigned type, unsigned count)
{
	put_var(b, type);
	put_var(b, count);
}

/* A Symbol value is its one String field. */
static void put_symbols(struct buf *b, uint64_t s)
{
	pool_head(b, T_SYMBOL, 4);
	put_var(b, s + 1), put_str(b, "com/x/Foo");
	put_var(b, s + 2), put_str(b, "bar");
	put_var(b, s + 3), put_str(b, "baz");
	put_var(b, s + 4), put_str(b, "main");
}

static void write_checkpoint(struct buf *out, const struct mkopt *o)
{
	struct buf b = BUF_INIT;
	uint64_t s = o->shift;

	put_var(&b, 0); /* startTime */
	put_var(&b, 0); /* duration */
	put_var(&b, (uint64_t)o->delta);
	put_u8(&b, 1); /* type mask: flush */
	put_var(&b, 6 + !o->chain + o->empty_st_pool + o->cyclic);
	if (!o->chain)
		put_symbols(&b, s);
	pool_head(&b, T_CLASS, 1);
	put_var(&b, s + 10), put_var(&b, s + 1);
	pool_head(&b, T_METHOD, 3);
	put_var(&b, s + 20), put_var(&b, s + 10), put_var(&b, s + 2);
	put_var(&b, s + 21), put_var(&b, s + 10), put_var(&b, s + 3);
	put_var(&b, s + 22), put_var(&b, s + 10), put_var(&b, s + 4);
	pool_head(&b, T_THREAD, 1);
	put_var(&b, s + 30), put_str(&b, "os-thr"), put_var(&b, 111);
	if (o->name_enc == 4) {
		/* UTF-16 units as varints: "w", U+00E9, U+1F600 as a surrogate pair */
		static const unsigned u16[] = { 'w', 0xe9, 0xd83d, 0xde00 };

		put_u8(&b, 4), put_var(&b, 4);
		for (int i = 0; i < 4; i++)
			put_var(&b, u16[i]);
	} else if (o->name_enc == 5) {
		put_u8(&b, 5), put_var(&b, 3), put(&b, "w\xf6r", 3); /* Latin-1 "wör" */
	} else {
		put_str(&b, "worker-1");
	}
	put_var(&b, 7);
	pool_head(&b, T_FRAMETYPE, 2);
	put_var(&b, s + 40), put_str(&b, "JIT compiled");
	put_var(&b, s + 41), put_str(&b, "Native");
	pool_head(&b, T_STACK, 2);
	/* 50: bar:12 <- main:3 (leaf first) */
	put_var(&b, s + 50), put_u8(&b, 0), put_var(&b, o->frames_len ? o->frames_len : 2);
	put_var(&b, s + 20), put_var(&b, 12), put_var(&b, s + 40);
	put_var(&b, s + 22), put_var(&b, 3), put_var(&b, s + 40);
	/* 51: baz:7, cut by the recorder */
	put_var(&b, s + 51), put_u8(&b, 1), put_var(&b, 1);
	put_var(&b, s + 21), put_var(&b, 7), put_var(&b, s + 41);
	pool_head(&b, T_STRING, 1);
	put_var(&b, s + 70), put_str(&b, "10 ms");
	if (o->empty_st_pool)
		pool_head(&b, T_STACK, 0);
	if (o->cyclic) {
		pool_head(&b, T_CYCLIC, 1);
		put_var(&b, 1);
		for (int i = 0; i < 40; i++)
			put_var(&b, 1);
	}
	put_rec(out, 1, &b);
	buf_release(&b);
}

/* Appends one chunk to @out; @lay receives its offsets (absolute). */
static void mk_chunk(struct buf *out, const struct mkopt *o, struct layout *lay)
{
	struct buf b = BUF_INIT;
	size_t off = out->len;
	uint64_t s = o->shift;

	memset(lay, 0, sizeof(*lay));
	lay->off = off;
	put(out, "FLR\0", 4);
	put_be(out, 2, 2);
	put_be(out, 0, 2);
	for (int i = 0; i < 3; i++)
		put_be(out, 0, 8); /* size, cp offset, metadata offset: patched below */
	put_be(out, (uint64_t)START_NS, 8);
	put_be(out, 1000000000, 8);
	put_be(out, START_TICKS, 8);
	put_be(out, TPS, 8);
	put_be(out, 1, 4);
	lay->meta = out->len;
	write_metadata(out, o);
	if (o->overlap) {
		/*
		 * An empty checkpoint claiming 4 bytes more than it has, hidden
		 * in the body of a record of an unknown type (so the records
		 * still tile the chunk): only the chain leads to it.
		 */
		struct mkopt o2 = *o;

		put_padvar(out, 5 + 2 + 11);
		put_var(out, 200);
		lay->extra = out->len;
		put_padvar(out, 5 + 1 + 5 + 4);
		put_var(out, 1);
		put_var(out, 0), put_var(out, 0), put_var(out, 0), put_u8(out, 1), put_var(out, 0);
		o2.delta = -(int64_t)(out->len - lay->extra);
		lay->cp = out->len;
		write_checkpoint(out, &o2);
	} else if (o->chain) {
		/* The Symbol pool in a checkpoint of its own, earlier in the chain. */
		struct mkopt o2 = *o;
		struct buf b1 = BUF_INIT;
		size_t pre = out->len;

		put_var(&b1, 0), put_var(&b1, 0), put_var(&b1, 0), put_u8(&b1, 1), put_var(&b1, 1);
		put_symbols(&b1, o->shift);
		put_rec(out, 1, &b1);
		buf_release(&b1);
		o2.delta = -(int64_t)(out->len - pre);
		lay->cp = out->len;
		write_checkpoint(out, &o2);
	} else {
		lay->cp = out->len;
		write_checkpoint(out, o);
	}
	if (!o->no_setting) {
		/* JDK-style period of ExecutionSample; the value is a String pool reference. */
		buf_reset(&b);
		put_var(&b, START_TICKS), put_var(&b, T_EXEC), put_str(&b, "period");
		put_u8(&b, 2), put_var(&b, s + 70);
		lay->ev[lay->nev++] = out->len;
		put_rec(out, T_SETTING, &b);
	}
	buf_reset(&b); /* cpu sample at +1000 ticks = +500 ns, stack 50 */
	put_var(&b, START_TICKS + 1000), put_var(&b, s + 30), put_var(&b, s + 50);
	lay->ev[lay->nev++] = out->len;
	put_rec(out, T_EXEC, &b);
	buf_reset(&b); /* cpu sample, truncated stack 51 */
	put_var(&b, START_TICKS + 3000), put_var(&b, s + 30), put_var(&b, s + 51);
	lay->ev[lay->nev++] = out->len;
	put_rec(out, T_EXEC, &b);
	buf_reset(&b); /* allocation of 4096 bytes */
	put_var(&b, START_TICKS + 4000), put_var(&b, s + 30), put_var(&b, s + 50),
		put_var(&b, 4096);
	lay->ev[lay->nev++] = out->len;
	put_rec(out, T_ALLOC, &b);
	buf_reset(&b); /* monitor enter blocked 2000 ticks = 1000 ns; no stack */
	put_var(&b, START_TICKS + 5000), put_var(&b, 2000), put_var(&b, s + 30), put_var(&b, 0);
	lay->ev[lay->nev++] = out->len;
	put_rec(out, T_MONITOR, &b);
	buf_reset(&b); /* park 6000 ticks, stack 50 */
	put_var(&b, START_TICKS + 6000), put_var(&b, 6000), put_var(&b, s + 30),
		put_var(&b, s + 50);
	lay->ev[lay->nev++] = out->len;
	put_rec(out, T_PARK, &b);
	if (o->nativemem) {
		static const struct {
			unsigned type;
			uint64_t stack, size;
		} nm[] = { { T_MALLOC, 50, 100 }, { T_MALLOC, 51, 28 }, { T_FREE, 50, 0 } };

		for (size_t i = 0; i < PROF_ARRAY_SIZE(nm); i++) {
			buf_reset(&b);
			put_var(&b, START_TICKS + 7000 + i), put_var(&b, s + 30);
			put_var(&b, s + nm[i].stack), put_var(&b, 0x7f0000001000 + i * 64);
			if (nm[i].type == T_MALLOC)
				put_var(&b, nm[i].size);
			lay->ev[lay->nev++] = out->len;
			put_rec(out, nm[i].type, &b);
		}
	}
	if (!o->overlap)
		lay->extra = out->len;
	if (o->nextra)
		put(out, o->extra, o->nextra);
	lay->size = out->len - off;
	for (int i = 0; i < 8; i++) {
		out->p[off + 8 + i] = (char)((uint64_t)lay->size >> (56 - 8 * i));
		out->p[off + 16 + i] = (char)((uint64_t)(lay->cp - off) >> (56 - 8 * i));
		out->p[off + 24 + i] = (char)((uint64_t)(lay->meta - off) >> (56 - 8 * i));
	}
	buf_release(&b);
}

static int decode(const struct buf *in, const struct fmt_jfr_opts *o, struct model_profile *p,
		  struct prof_err *err)
{
	model_profile_init(p);
	prof_err_init(err);
	return fmt_jfr_decode(in->p, in->len, o, p, err);
}

/* Leaf-first function names of sample @i joined with ';'. */
static const char *stack_str(const struct model_profile *p, size_t i)
{
	static char out[512];
	const struct model_sample *s = &p->samples.v[i];
	size_t o = 0;

	out[0] = '\0';
	for (uint32_t k = 0; k < s->nstack; k++) {
		const struct model_location *loc =
			&p->locations.v[p->stack_locs.v[s->stack_off + k]];
		char tmp[64];

		o += (size_t)snprintf(out + o, sizeof(out) - o, "%s%s", k ? ";" : "",
				      model_frame_name(p, loc, 0, tmp, sizeof(tmp)));
	}
	return out;
}

/* ---- tests: decoding --------------------------------------------------- */

static void test_cpu_samples_frames_labels_times(void **state)
{
	struct mkopt o = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT;
	struct model_profile p;
	struct prof_err err;
	const struct model_sample *s;
	const struct model_label *l;
	const struct model_location *loc;
	char id[128];

	(void)state;
	mk_chunk(&in, &o, &lay);
	assert_int_equal(decode(&in, NULL, &p, &err), 0);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.sample_types.n, 2);
	model_profile_type_id(&p, 1, id, sizeof(id));
	assert_string_equal(id, "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
	/* leaf first, "<class>.<method>" as stored */
	assert_string_equal(stack_str(&p, 0), "com/x/Foo.bar;com/x/Foo.main");
	assert_string_equal(stack_str(&p, 1), "com/x/Foo.baz;[truncated]");
	s = &p.samples.v[0];
	assert_int_equal(s->timestamp_ns, START_NS + 500);
	assert_int_equal(p.samples.v[1].timestamp_ns, START_NS + 1500);
	/* period "10 ms" from jdk.ActiveSetting (a String pool reference) */
	assert_int_equal(p.values.v[s->value_off], 1);
	assert_int_equal(p.values.v[s->value_off + 1], 10000000);
	assert_int_equal(p.period, 10000000);
	assert_int_equal(s->nlabels, 2);
	l = &p.labels.v[s->label_off];
	assert_string_equal(model_str(&p, l[0].key), "thread.name");
	assert_string_equal(model_str(&p, l[0].str), "worker-1");
	assert_string_equal(model_str(&p, l[1].key), "thread.id");
	assert_int_equal(l[1].num, 7);
	loc = &p.locations.v[p.stack_locs.v[s->stack_off]];
	assert_int_equal(p.lines.v[loc->line_off].line, 12);
	assert_string_equal(model_str(&p, loc->frame_type), "jvm");
	loc = &p.locations.v[p.stack_locs.v[p.samples.v[1].stack_off]];
	assert_string_equal(model_str(&p, loc->frame_type), "native");
	assert_int_equal(p.time_ns, START_NS);
	assert_int_equal(p.duration_ns, 1000000000);
	model_profile_release(&p);
	buf_release(&in);
}

static void test_families_alloc_lock_wall(void **state)
{
	struct fmt_jfr_opts o = { FMT_JFR_ALLOC, NULL, false, 0 };
	struct mkopt mo = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT;
	struct model_profile p;
	struct prof_err err;
	char id[128];

	(void)state;
	mk_chunk(&in, &mo, &lay);
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(p.values.v[0], 1);
	assert_int_equal(p.values.v[1], 4096);
	model_profile_type_id(&p, 1, id, sizeof(id));
	assert_string_equal(id, "memory:alloc_space:bytes:space:bytes");
	model_profile_release(&p);

	o.event = FMT_JFR_LOCK;
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.values.v[1], 1000); /* 2000 ticks at 2 GHz */
	assert_int_equal(p.samples.v[0].nstack, 0);
	assert_int_equal(p.values.v[3], 3000);
	assert_string_equal(stack_str(&p, 1), "com/x/Foo.bar;com/x/Foo.main");
	model_profile_type_id(&p, 1, id, sizeof(id));
	assert_string_equal(id, "contention:delay:nanoseconds:contentions:count");
	model_profile_release(&p);

	/* One event type only. */
	o.event_type = "jdk.ThreadPark";
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(p.values.v[1], 3000);
	model_profile_release(&p);

	/* JDK ExecutionSamples are not wall samples. */
	o.event = FMT_JFR_WALL;
	o.event_type = NULL;
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(p.samples.n, 0);
	assert_int_equal(p.sample_types.n, 2);
	model_profile_release(&p);
	buf_release(&in);
}

static void test_multichunk_own_pools_and_gzip(void **state)
{
	struct mkopt a = { 0 }, b = { 0 };
	struct layout la, lb;
	struct buf in = BUF_INIT, gz = BUF_INIT;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	b.shift = 0x1000000; /* async-profiler shifts its ids per chunk */
	b.no_setting = true; /* the JDK period carries over from chunk 0 */
	b.empty_st_pool = true;
	mk_chunk(&in, &a, &la);
	mk_chunk(&in, &b, &lb);
	assert_int_equal(decode(&in, NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 4);
	assert_string_equal(stack_str(&p, 2), "com/x/Foo.bar;com/x/Foo.main");
	assert_int_equal(p.values.v[p.samples.v[3].value_off + 1], 10000000);
	/* The same functions and locations are shared across chunks. */
	assert_int_equal(p.samples.v[0].nstack, p.samples.v[2].nstack);
	assert_int_equal(p.stack_locs.v[p.samples.v[0].stack_off],
			 p.stack_locs.v[p.samples.v[2].stack_off]);
	model_profile_release(&p);

	assert_int_equal(gzip_deflate(in.p, in.len, &gz), 0);
	assert_true(fmt_jfr_sniff(gz.p, gz.len));
	assert_true(fmt_jfr_sniff(in.p, in.len));
	assert_false(fmt_jfr_sniff("FLR", 3));
	assert_int_equal(decode(&gz, NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 4);
	model_profile_release(&p);
	buf_release(&gz);
	buf_release(&in);
}

static void test_checkpoint_chain_and_string_encodings(void **state)
{
	static const struct {
		int enc;
		const char *want;
	} names[] = { { 4, "w\xc3\xa9\xf0\x9f\x98\x80" }, { 5, "w\xc3\xb6r" } };
	struct mkopt o = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	o.chain = true;
	mk_chunk(&in, &o, &lay);
	assert_int_equal(decode(&in, NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_string_equal(stack_str(&p, 0), "com/x/Foo.bar;com/x/Foo.main");
	model_profile_release(&p);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(names); i++) {
		memset(&o, 0, sizeof(o));
		o.name_enc = names[i].enc;
		buf_reset(&in);
		mk_chunk(&in, &o, &lay);
		assert_int_equal(decode(&in, NULL, &p, &err), 0);
		assert_string_equal(model_str(&p, p.labels.v[p.samples.v[0].label_off].str),
				    names[i].want);
		model_profile_release(&p);
	}
	buf_release(&in);
}

static void test_incomplete_trailing_chunk_is_skipped(void **state)
{
	struct mkopt o = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT, one = BUF_INIT;
	struct model_profile p;
	struct prof_err err;
	char hdr[68] = "FLR\0\0\2\0\0";

	(void)state;
	mk_chunk(&in, &o, &lay);
	/* async-profiler's chunk in progress: size 1 GiB, offsets 0 */
	hdr[12] = 0x40;
	put(&in, hdr, sizeof(hdr));
	assert_int_equal(decode(&in, NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	model_profile_release(&p);

	/* Alone it is an error. */
	put(&one, hdr, sizeof(hdr));
	assert_int_equal(decode(&one, NULL, &p, &err), -PROF_ECORRUPT);
	assert_string_equal(err.msg,
			    "jfr: chunk 0 (at byte 0): chunk header: chunk is incomplete "
			    "(constant pool offset 0, metadata offset 0): the recording was "
			    "still being written at byte 16");
	model_profile_release(&p);
	buf_release(&one);
	buf_release(&in);
}

/* ---- tests: errors ------------------------------------------------------ */

static void expect_err(const struct buf *in, const struct fmt_jfr_opts *o, int code,
		       const char *msg, int64_t off)
{
	struct model_profile p;
	struct prof_err err;

	assert_int_equal(decode(in, o, &p, &err), code);
	assert_string_equal(err.msg, msg);
	assert_int_equal(err.offset, off);
	model_profile_release(&p);
}

/*
 * An unreadable jdk.ActiveSetting record is skipped and counted, with
 * @why as the first reason; the samples around it still read, with the
 * period of the readable setting.
 */
static void expect_setting_skipped(const struct buf *in, const char *why)
{
	struct model_profile p;
	struct prof_err err;
	char text[512], want[512];

	assert_int_equal(decode(in, NULL, &p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	assert_int_equal(p.values.v[1], 10000000);
	assert_int_equal(p.skipped.n, 1);
	assert_string_equal(p.skipped.what, "jdk.ActiveSetting events");
	assert_string_equal(p.skipped.first, why);
	snprintf(want, sizeof(want), "skipped 1 jdk.ActiveSetting events (first: %s)", why);
	model_skipped_text(&p.skipped, text, sizeof(text));
	assert_string_equal(text, want);
	model_profile_release(&p);
}

static void test_bad_magic_version_and_truncation(void **state)
{
	struct mkopt o = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT, t = BUF_INIT;
	char msg[256];

	(void)state;
	mk_chunk(&in, &o, &lay);
	expect_err(&t, NULL, -PROF_EFORMAT, "jfr: empty input", 0);
	put(&t, in.p, 40);
	expect_err(
		&t, NULL, -PROF_ECORRUPT,
		"jfr: chunk 0 (at byte 0): chunk header: truncated chunk header (40 of 68 bytes) at byte 0",
		0);
	buf_reset(&t);
	put(&t, in.p, in.len);
	t.p[2] = 'Q';
	expect_err(
		&t, NULL, -PROF_EFORMAT,
		"jfr: chunk 0 (at byte 0): chunk header: bad magic 46 4c 51 00 (expected 46 4c 52 00, \"FLR\\0\") at byte 0",
		0);
	t.p[2] = 'R';
	t.p[5] = 1;
	expect_err(
		&t, NULL, -PROF_EUNSUPPORTED,
		"jfr: chunk 0 (at byte 0): chunk header: JFR version 1.0 is not supported (2.x only; 1.x is JDK 7/8) at byte 4",
		4);
	t.p[5] = 2;
	t.p[67] = 0;
	expect_err(
		&t, NULL, -PROF_EUNSUPPORTED,
		"jfr: chunk 0 (at byte 0): chunk header: integers are not compressed (features 0x00000000): not supported at byte 64",
		64);
	/* a file cut short */
	buf_reset(&t);
	put(&t, in.p, in.len - 10);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): chunk header: chunk size %zu runs past the end of the input (%zu bytes left) at byte 8",
		in.len, in.len - 10);
	expect_err(&t, NULL, -PROF_ECORRUPT, msg, 8);
	/* a second chunk cut inside its header */
	buf_reset(&t);
	put(&t, in.p, in.len);
	put(&t, in.p, 20);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 1 (at byte %zu): chunk header: truncated chunk header (20 of 68 bytes) at byte %zu",
		in.len, in.len);
	expect_err(&t, NULL, -PROF_ECORRUPT, msg, (int64_t)in.len);
	buf_release(&t);
	buf_release(&in);
}

static void test_bad_varint_and_huge_sizes(void **state)
{
	static const uint8_t trunc_varint[] = { 0x88, 0x80, 0x80, 0x80, 0x00, T_EXEC, 0xff, 0xff };
	/* record size 2^40 */
	static const uint8_t huge_rec[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, T_EXEC };
	/* an ActiveSetting whose name claims 2^31 bytes */
	static const uint8_t huge_str[] = { 0x90, 0x80, 0x80, 0x80, 0x00, T_SETTING, 0x01, 0x01,
					    0x03, 0x80, 0x80, 0x80, 0x80, 0x08,	     'a',  'b' };
	struct mkopt o = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT;
	char msg[256];

	(void)state;
	o.extra = trunc_varint;
	o.nextra = sizeof(trunc_varint);
	mk_chunk(&in, &o, &lay);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): event jdk.ExecutionSample: truncated varint at byte %zu",
		lay.extra + 6);
	expect_err(&in, NULL, -PROF_ECORRUPT, msg, (int64_t)lay.extra + 6);

	buf_reset(&in);
	o.extra = huge_rec;
	o.nextra = sizeof(huge_rec);
	mk_chunk(&in, &o, &lay);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): event records: record of 1099511627776 bytes runs past the end of the chunk (7 bytes left) at byte %zu",
		lay.extra);
	expect_err(&in, NULL, -PROF_ECORRUPT, msg, (int64_t)lay.extra);

	buf_reset(&in);
	o.extra = huge_str;
	o.nextra = sizeof(huge_str);
	mk_chunk(&in, &o, &lay);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): event jdk.ActiveSetting: string length 2147483648 exceeds the 2 bytes left at byte %zu",
		lay.extra + 9);
	expect_setting_skipped(&in, msg);

	/* a stack trace claiming 2^32 frames */
	buf_reset(&in);
	memset(&o, 0, sizeof(o));
	o.frames_len = 1ULL << 32;
	mk_chunk(&in, &o, &lay);
	{
		struct model_profile p;
		struct prof_err err;

		assert_int_equal(decode(&in, NULL, &p, &err), -PROF_ECORRUPT);
		assert_non_null(strstr(err.msg, "constant pool jdk.types.StackTrace: array length "
						"4294967296 exceeds the "));
		model_profile_release(&p);
	}
	buf_release(&in);
}

static void test_metadata_and_pool_errors(void **state)
{
	struct mkopt o = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT;
	struct model_profile p;
	struct prof_err err;
	char msg[256];

	(void)state;
	o.bad_type = "999";
	mk_chunk(&in, &o, &lay);
	expect_err(
		&in, NULL, -PROF_ECORRUPT,
		"jfr: chunk 0 (at byte 0): metadata: class java.lang.Thread: field osName has unknown type id 999 at byte 0",
		0);
	buf_reset(&in);
	o.bad_type = "12x";
	mk_chunk(&in, &o, &lay);
	assert_int_equal(decode(&in, NULL, &p, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "metadata: field type id '12x' is not a number at byte"));
	model_profile_release(&p);

	buf_reset(&in);
	memset(&o, 0, sizeof(o));
	o.deep = 20;
	mk_chunk(&in, &o, &lay);
	assert_int_equal(decode(&in, NULL, &p, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "metadata: element tree deeper than 16 levels at byte"));
	model_profile_release(&p);

	buf_reset(&in);
	memset(&o, 0, sizeof(o));
	o.cyclic = true;
	mk_chunk(&in, &o, &lay);
	assert_int_equal(decode(&in, NULL, &p, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg,
			       "constant pool x.Cyclic: values nested deeper than 16 levels "
			       "(class x.Cyclic) at byte"));
	model_profile_release(&p);

	buf_reset(&in);
	memset(&o, 0, sizeof(o));
	o.delta = 5;
	mk_chunk(&in, &o, &lay);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): checkpoint: checkpoint delta 5 does not lead back into the chunk at byte %zu",
		lay.cp);
	expect_err(&in, NULL, -PROF_ECORRUPT, msg, (int64_t)lay.cp);

	/* A chain whose earlier checkpoint overlaps the later one. */
	memset(&o, 0, sizeof(o));
	o.overlap = true;
	buf_reset(&in);
	mk_chunk(&in, &o, &lay);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): checkpoint: checkpoint of 15 bytes runs past byte %zu (the next checkpoint) at byte %zu",
		lay.cp, lay.extra);
	expect_err(&in, NULL, -PROF_ECORRUPT, msg, (int64_t)lay.extra);

	/* The header's constant pool offset must point at a checkpoint. */
	memset(&o, 0, sizeof(o));
	buf_reset(&in);
	mk_chunk(&in, &o, &lay);
	in.p[23] = (char)(lay.ev[0] & 0xff);
	in.p[22] = (char)(lay.ev[0] >> 8);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): checkpoint: expected a checkpoint (type 1), found type %d at byte %zu",
		T_SETTING, lay.ev[0]);
	expect_err(&in, NULL, -PROF_ECORRUPT, msg, (int64_t)lay.ev[0]);
	buf_release(&in);
}

static void test_bad_string_encoding_and_options(void **state)
{
	static const uint8_t bad_enc[] = {
		0x89, 0x80, 0x80, 0x80, 0x00, T_SETTING, 0x01, 0x01, 0x09
	};
	struct fmt_jfr_opts fo = { FMT_JFR_CPU, "jdk.ThreadPark", false, 0 };
	struct mkopt o = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT, gz = BUF_INIT;
	char msg[256];

	(void)state;
	o.extra = bad_enc;
	o.nextra = sizeof(bad_enc);
	mk_chunk(&in, &o, &lay);
	snprintf(
		msg, sizeof(msg),
		"jfr: chunk 0 (at byte 0): event jdk.ActiveSetting: bad string encoding 9 at byte %zu",
		lay.extra + 8);
	expect_setting_skipped(&in, msg);
	expect_err(&in, &fo, -EINVAL,
		   "jfr: event type 'jdk.ThreadPark' is not one the cpu family reads", -1);
	/* gzip bomb guard: the cap applies to the inflated size */
	assert_int_equal(gzip_deflate(in.p, in.len, &gz), 0);
	fo.event_type = NULL;
	fo.max_decoded = 100;
	{
		struct model_profile p;
		struct prof_err err;

		assert_int_equal(decode(&gz, &fo, &p, &err), -PROF_ETOOBIG);
		assert_non_null(strstr(err.msg, "exceeds the limit of 100 bytes"));
		model_profile_release(&p);
	}
	buf_release(&gz);
	buf_release(&in);
}

/* async-profiler's nativemem mode: profiler.Malloc becomes an allocation profile. */
static void test_nativemem_malloc_is_an_allocation_profile(void **state)
{
	struct fmt_jfr_opts o = { FMT_JFR_MALLOC, NULL, false, 0 };
	struct mkopt mo = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT;
	struct model_profile p;
	struct prof_err err;
	char id[128];

	(void)state;
	mo.nativemem = true;
	mk_chunk(&in, &mo, &lay);
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(model_profile_validate(&p, &err), 0);
	assert_int_equal(p.samples.n, 2); /* the Free is not an allocation */
	model_profile_type_id(&p, 1, id, sizeof(id));
	assert_string_equal(id, "memory:alloc_space:bytes:space:bytes");
	assert_int_equal(p.values.v[0], 1);
	assert_int_equal(p.values.v[1], 100);
	assert_int_equal(p.values.v[3], 28);
	assert_string_equal(stack_str(&p, 0), "com/x/Foo.bar;com/x/Foo.main");
	assert_int_equal(p.samples.v[0].timestamp_ns, START_NS + 3500);
	assert_int_equal(p.skipped.n, 0);
	model_profile_release(&p);

	/* The Java allocation family does not mix native allocations in. */
	o.event = FMT_JFR_ALLOC;
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(p.samples.n, 1);
	assert_int_equal(p.values.v[1], 4096);
	model_profile_release(&p);
	o.event_type = "profiler.Malloc";
	expect_err(&in, &o, -EINVAL,
		   "jfr: event type 'profiler.Malloc' is not one the alloc family reads", -1);
	o.event = FMT_JFR_MALLOC;
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(p.samples.n, 2);
	model_profile_release(&p);
	buf_release(&in);
}

/* A family without events says which families the recording has. */
static void test_empty_family_names_the_others(void **state)
{
	struct fmt_jfr_opts o = { FMT_JFR_MALLOC, NULL, false, 0 };
	struct mkopt mo = { 0 };
	struct layout lay;
	struct buf in = BUF_INIT;
	struct model_profile p;
	struct prof_err err;

	(void)state;
	mk_chunk(&in, &mo, &lay);
	assert_int_equal(decode(&in, &o, &p, &err), 0);
	assert_int_equal(p.samples.n, 0);
	assert_int_equal(p.comments.n, 1);
	assert_string_equal(model_str(&p, p.comments.v[0]),
			    "jfr: no malloc events; the recording has events of the families "
			    "cpu, alloc, lock (--event)");
	model_profile_release(&p);
	/* A family with events has no such comment. */
	assert_int_equal(decode(&in, NULL, &p, &err), 0);
	assert_int_equal(p.comments.n, 0);
	model_profile_release(&p);
	buf_release(&in);
}

static void test_event_parse(void **state)
{
	enum fmt_jfr_event e;

	(void)state;
	assert_int_equal(fmt_jfr_event_parse("lock", &e), 0);
	assert_int_equal(e, FMT_JFR_LOCK);
	assert_int_equal(fmt_jfr_event_parse("itimer", &e), -EINVAL);
	assert_string_equal(fmt_jfr_event_name(FMT_JFR_ALLOC), "alloc");
	assert_int_equal(fmt_jfr_event_parse("malloc", &e), 0);
	assert_int_equal(e, FMT_JFR_MALLOC);
	assert_string_equal(fmt_jfr_event_name(FMT_JFR_MALLOC), "malloc");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpu_samples_frames_labels_times),
		cmocka_unit_test(test_families_alloc_lock_wall),
		cmocka_unit_test(test_multichunk_own_pools_and_gzip),
		cmocka_unit_test(test_checkpoint_chain_and_string_encodings),
		cmocka_unit_test(test_incomplete_trailing_chunk_is_skipped),
		cmocka_unit_test(test_bad_magic_version_and_truncation),
		cmocka_unit_test(test_bad_varint_and_huge_sizes),
		cmocka_unit_test(test_metadata_and_pool_errors),
		cmocka_unit_test(test_bad_string_encoding_and_options),
		cmocka_unit_test(test_nativemem_malloc_is_an_allocation_profile),
		cmocka_unit_test(test_empty_family_names_the_others),
		cmocka_unit_test(test_event_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
