// SPDX-License-Identifier: Apache-2.0
/*
 * jit_v8.c - Node.js / V8 JavaScript frames for the JIT framework
 * (jit.h): detection, one unwinding step per V8 frame, and names read
 * from V8's heap, with no flag in the target.
 *
 * Detection: a mapped file named node, node<N> or libnode.so* that
 * carries V8's post-mortem constants (v8dbg_*: data symbols whose value
 * is the constant, node builds always emit them) and the version
 * (v8::internal::Version::major_/minor_/build_). Each constant is read
 * at its symbol from the process (some live in .bss, set by a static
 * initializer); the ones V8 11.x lacks keep the values of
 * agent_v8_layout_default (OpenTelemetry's fallbacks, checked on node
 * 20). V8 before 11.1.204 (Code without an instruction-start pointer)
 * or from 12 on (sandboxed trusted objects, other Code layout), a build
 * with pointer compression, or other tag constants are refused. The
 * embedded builtins blob (v8_Default_embedded_blob_code_, its size at
 * v8_Default_embedded_blob_code_size_) is claimed as a range, and every
 * anonymous executable mapping as V8's code space.
 *
 * Stepping (V8 src/execution/frame-constants.h; every frame V8 builds,
 * in generated code and builtins alike, keeps rbp): with frame pointer
 * fp, [fp] is the caller's fp, [fp+8] the return address, so the
 * caller is pc = [fp+8], sp = fp+16, bp = [fp]. The slot at fp-8 holds
 * the context of a JavaScript frame or, in a typed frame (entry, exit,
 * stub, internal, builtin), a frame-type marker: type << 1, an even
 * word (StackFrame::TypeToMarker). A JavaScript frame has its
 * JSFunction at fp-16; an interpreted frame also its BytecodeArray at
 * fp-32 and the bytecode offset (a Smi, counted from the tagged array
 * pointer) at fp-40. A Sparkplug frame has the same slots but a feedback
 * vector at fp-40. Bytecode handlers run without a frame of their own,
 * on the interpreted frame's rbp, so a pc in a handler names the
 * function it interprets, as V8's own profiler does. Compiled code
 * (Sparkplug, Maglev, TurboFan) is checked against the function's
 * current Code: a pc inside [instruction_start, + instruction_size)
 * gives the pc offset for the line; a pc outside (deoptimized, replaced,
 * on-stack-replaced code) names the function without a line.
 *
 * The leaf: its rbp is the last frame V8 built. When the sampled pc is
 * in a callee that has not built its frame yet (its prologue, or a
 * builtin that builds none) and the frame is compiled code, the
 * return address into that frame's code is among the top 3 stack words
 * (OpenTelemetry's v8 unwinder does the same); the leaf is then a native
 * frame (AGENT_JIT_NONE: it keeps its [jit] or builtin name) whose caller
 * is that return address with the same rbp, so the JavaScript frame is
 * named once, on the next step. When the frame is interpreted, a leaf
 * in a frameless builtin called from a handler is counted as the
 * interpreted function (its own name is lost); nothing is duplicated.
 *
 * What is and is not guarded. The stack words come from the copy taken
 * at the tick; objects are read later (milliseconds), and V8's GC moves
 * them. Step reads the JSFunction, its map's instance type, the
 * SharedFunctionInfo and its map when the sample is handled, and keeps
 * the SFI's name_or_scope_info word as the frame's check; naming reads
 * the SFI again and refuses (-ESTALE) one whose map or word differ. A
 * GC between the tick and the step that left another JSFunction at the
 * same address is not detected (the frame names that function); maps
 * of immortal read-only roots (SFI, Code, strings, ...) are cached by
 * address, other maps never. Every length and offset from the target is
 * bounded before use; strings nest at most V8_STR_DEPTH deep.
 *
 * Naming (V8 src/objects/shared-function-info.cc DebugName, which the
 * CPU profiler uses): the SFI's name_or_scope_info is the name when it
 * is a string, else a ScopeInfo whose first string after the context
 * locals is the function's name or, for an anonymous function, its
 * inferred name (agent_v8_scope_info_parse; the same holds the function's
 * start position); "" is "(anonymous)". The file is the Script's name
 * (script_or_debug_info). Lines: a bytecode offset (interpreted) or pc
 * offset (compiled) through the source position table of the
 * BytecodeArray or Code to a script offset, then Script.line_ends when V8
 * has computed them, else the newlines in the script's source before
 * that offset. Sparkplug code has no source position table: its frames
 * get the start line only. A position TurboFan inlined from another
 * function (inlining id != 0) names the outer function without a line.
 * Results are cached per process: functions by SFI address and check,
 * lines by (SFI, kind, offset).
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "agent/jit.h"
#include "agent/jit_v8.h"

#include <time.h>

#define V8_FN_CACHE	  512			/* functions cached per process (power of 2) */
#define V8_LINE_CACHE	  2048			/* lines cached per process (power of 2) */
#define V8_NAME_MAX	  AGENT_INTERP_NAME_MAX /* bytes of a function name kept */
#define V8_FILE_MAX	  AGENT_INTERP_NAME_MAX /* bytes of a file name kept */
#define V8_STR_DEPTH	  16			/* cons / sliced / thin nesting followed */
#define V8_STR_MAX	  (1u << 30)
#define V8_SCAN_MAX	  (16u << 20) /* source bytes scanned for newlines per lookup */
#define V8_CHUNK	  (64u << 10)
#define V8_SCOPE_SLOTS	  16 /* ScopeInfo slots looked at (OpenTelemetry's count) */
#define V8_ROOT_MAPS	  16
#define V8_PROLOGUE_WORDS 3
#define V8_FRAME_MAX	  (8u << 20) /* farthest a frame pointer may be above sp */
#define V8_MARKER_MAX	  (64u << 1) /* frame-type markers are type << 1, types < 64 */

struct v8_fn {
	uint64_t sfi, check; /* sfi 0: empty */
	uint64_t script;     /* tagged Script, 0 = none */
	int64_t start_line;
	char name[V8_NAME_MAX], file[V8_FILE_MAX];
};

struct v8_line {
	uint64_t sfi, check, key; /* key: kind << 62 | offset */
	int64_t line;
};

/*
 * Instance types of other maps (a JSFunction's), kept for V8_MAP_TTL_NS:
 * the maps of one hot function are met at every sample, and a map's type
 * does not change while it lives; one freed and its address reused by a
 * map of another type within the TTL can pass one frame that is not a
 * JSFunction, which its SharedFunctionInfo's type check then refuses.
 */
#define V8_MAP_CACHE  64 /* power of 2 */
#define V8_MAP_TTL_NS 1000000000LL

struct v8_map_entry {
	uint64_t map; /* 0 = empty */
	int64_t at_ns;
	uint16_t type;
};

struct v8_priv {
	struct agent_v8_layout l;
	struct v8_map_entry maps[V8_MAP_CACHE];
	uint64_t root_maps[V8_ROOT_MAPS];
	uint16_t root_types[V8_ROOT_MAPS];
	size_t nroot_maps;
	struct v8_fn fns[V8_FN_CACHE];
	struct v8_line lines[V8_LINE_CACHE];
	uint8_t chunk[V8_CHUNK];
};

static size_t v8_hash(uint64_t a, size_t mask)
{
	a ^= a >> 29;
	a *= 0xbf58476d1ce4e5b9ull;
	a ^= a >> 32;
	return (size_t)a & mask;
}

static int64_t v8_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline bool v8_is_smi(uint64_t w)
{
	return !(w & 1);
}

static inline bool v8_is_obj(uint64_t w)
{
	return (w & 3) == 1 && w > 4096;
}

static inline int64_t v8_smi(uint64_t w)
{
	return (int64_t)w >> 32;
}

static int v8_read(const struct agent_memreader *mem, uint64_t addr, void *buf, size_t len)
{
	return mem->read(mem->ctx, addr, buf, len);
}

/* The word at runtime address @addr: from the stack copy when it holds it, else the process. */
static int v8_stack_word(const struct agent_jit_stack *stk, const struct agent_memreader *mem,
			 uint64_t addr, uint64_t *out)
{
	if (stk && addr >= stk->base && addr - stk->base <= stk->len &&
	    stk->len - (addr - stk->base) >= 8) {
		memcpy(out, stk->bytes + (addr - stk->base), 8);
		return 0;
	}
	return v8_read(mem, addr, out, 8);
}

/* Field @off (8 bytes) of heap object @tagged. */
static int v8_field(const struct agent_memreader *mem, uint64_t tagged, uint16_t off, uint64_t *out)
{
	if (!v8_is_obj(tagged))
		return -PROF_ECORRUPT;
	return v8_read(mem, tagged - 1 + off, out, 8);
}

#define V8_SPAN_MAX 256 /* bytes of an object read at once for its fields */

/*
 * The 8-byte fields at offsets @offs (@n) of heap object @tagged into
 * @out, in one read of the span they cover when it is at most
 * V8_SPAN_MAX bytes (each read is a system call), else, or when that
 * read fails (the span crosses into unmapped memory), one read each. A
 * 4-byte field is the low half of its word (x86-64 is little-endian).
 */
static int v8_fields(const struct agent_memreader *mem, uint64_t tagged, const uint16_t *offs,
		     size_t n, uint64_t *out)
{
	uint8_t span[V8_SPAN_MAX];
	uint16_t hi = 0;
	int rc;

	if (!v8_is_obj(tagged))
		return -PROF_ECORRUPT;
	for (size_t i = 0; i < n; i++)
		hi = offs[i] > hi ? offs[i] : hi;
	if ((size_t)hi + 8 <= sizeof(span) && !v8_read(mem, tagged - 1, span, (size_t)hi + 8)) {
		for (size_t i = 0; i < n; i++)
			memcpy(&out[i], span + offs[i], 8);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if ((rc = v8_read(mem, tagged - 1 + offs[i], &out[i], 8)))
			return rc;
	return 0;
}

static bool v8_is_root_type(const struct agent_v8_layout *l, uint16_t t)
{
	return t == l->t_sfi || t == l->t_code || t == l->t_bytecode_array ||
	       t == l->t_scope_info || t == l->t_script || t == l->t_fixed_array ||
	       t == l->t_byte_array || t == l->t_interpreter_data || t < l->first_nonstring;
}

/* The instance type of the map @map (tagged). */
static int v8_map_type(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t map,
		       uint16_t *type)
{
	int rc;

	if (!v8_is_obj(map))
		return -PROF_ECORRUPT;
	for (size_t i = 0; i < pv->nroot_maps; i++)
		if (pv->root_maps[i] == map) {
			*type = pv->root_types[i];
			return 0;
		}
	{
		struct v8_map_entry *e = &pv->maps[v8_hash(map, V8_MAP_CACHE - 1)];
		int64_t now = v8_now_ns();

		if (e->map == map && now >= e->at_ns && now - e->at_ns < V8_MAP_TTL_NS) {
			*type = e->type;
			return 0;
		}
		if ((rc = v8_read(mem, map - 1 + pv->l.map_instance_type, type, 2)))
			return rc;
		e->map = map;
		e->type = *type;
		e->at_ns = now;
	}
	if (v8_is_root_type(&pv->l, *type) && pv->nroot_maps < V8_ROOT_MAPS) {
		pv->root_maps[pv->nroot_maps] = map;
		pv->root_types[pv->nroot_maps++] = *type;
	}
	return 0;
}

/* The instance type of heap object @tagged. */
static int v8_type(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t tagged,
		   uint16_t *type)
{
	uint64_t map;
	int rc;

	if ((rc = v8_field(mem, tagged, pv->l.heapobject_map, &map)))
		return rc;
	return v8_map_type(pv, mem, map, type);
}

static bool v8_is_jsfunction(const struct agent_v8_layout *l, uint16_t t)
{
	return t >= l->t_jsfunction_first && t <= l->t_jsfunction_last;
}

/*
 * Strings. A sink takes the characters of a string part in order:
 * one-byte runs or UTF-16LE code-unit runs (@two); it returns false
 * when it wants no more.
 */
struct v8_sink {
	bool (*put)(struct v8_sink *s, const uint8_t *p, size_t n, bool two);
	char *out; /* utf-8 sink */
	size_t max, len;
	uint64_t lines; /* newline-counting sink */
};

static bool v8_sink_utf8(struct v8_sink *s, const uint8_t *p, size_t n, bool two)
{
	if (two) {
		s->len += agent_v8_utf16_to_utf8(p, n, s->out + s->len, s->max - s->len);
	} else {
		for (size_t i = 0; i < n && s->len + 1 < s->max; i++) {
			uint8_t c = p[i];

			if (c < 0x80) {
				s->out[s->len++] = (char)c;
			} else if (s->len + 2 < s->max) {
				s->out[s->len++] = (char)(0xc0 | c >> 6);
				s->out[s->len++] = (char)(0x80 | (c & 0x3f));
			} else {
				s->max = s->len + 1;
			}
		}
		s->out[s->len] = 0;
	}
	return s->len + 1 < s->max;
}

static bool v8_sink_lines(struct v8_sink *s, const uint8_t *p, size_t n, bool two)
{
	for (size_t i = 0; i < n; i++)
		if (two ? p[2 * i] == '\n' && p[2 * i + 1] == 0 : p[i] == '\n')
			s->lines++;
	return true;
}

/* Characters [@from, @from + @count) of flat character data at raw address @data. */
static int v8_chars(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t data,
		    uint64_t from, uint64_t count, bool two, struct v8_sink *s)
{
	size_t unit = two ? 2 : 1;

	while (count) {
		size_t n = PROF_MIN(count, V8_CHUNK / unit);
		int rc;

		if ((rc = v8_read(mem, data + from * unit, pv->chunk, n * unit)))
			return rc;
		if (!s->put(s, pv->chunk, n, two))
			return 0;
		from += n;
		count -= n;
	}
	return 0;
}

/* Characters [@from, @from + @count) of string @tagged (clipped to its length) into @s. */
static int v8_str_part(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t tagged,
		       uint64_t from, uint64_t count, struct v8_sink *s, int depth)
{
	const struct agent_v8_layout *l = &pv->l;
	uint16_t type, rep;
	uint32_t len;
	uint64_t a, b;
	int rc;

	if (depth > V8_STR_DEPTH)
		return -PROF_ECORRUPT;
	if ((rc = v8_type(pv, mem, tagged, &type)))
		return rc;
	if (type >= l->first_nonstring)
		return -PROF_ECORRUPT;
	if ((rc = v8_read(mem, tagged - 1 + l->string_length, &len, 4)))
		return rc;
	if (len > V8_STR_MAX)
		return -PROF_ECORRUPT;
	if (from >= len)
		return 0;
	count = PROF_MIN(count, len - from);
	rep = type & l->str_rep_mask;
	if (rep == l->str_seq)
		return v8_chars(pv, mem, tagged - 1 + l->seq_chars, from, count,
				(type & l->str_enc_mask) != l->str_one_byte, s);
	if (rep == l->str_external) {
		if ((rc = v8_read(mem, tagged - 1 + l->external_resource_data, &a, 8)))
			return rc;
		if (!a)
			return -ENOENT; /* uncached external string: data only through C++ */
		return v8_chars(pv, mem, a, from, count,
				(type & l->str_enc_mask) != l->str_one_byte, s);
	}
	if (rep == l->str_thin) {
		if ((rc = v8_field(mem, tagged, l->thin_actual, &a)))
			return rc;
		return v8_str_part(pv, mem, a, from, count, s, depth + 1);
	}
	if (rep == l->str_sliced) {
		if ((rc = v8_field(mem, tagged, l->sliced_parent, &a)) ||
		    (rc = v8_field(mem, tagged, l->sliced_offset, &b)))
			return rc;
		if (!v8_is_smi(b) || v8_smi(b) < 0 || v8_smi(b) > V8_STR_MAX)
			return -PROF_ECORRUPT;
		return v8_str_part(pv, mem, a, from + (uint64_t)v8_smi(b), count, s, depth + 1);
	}
	if (rep == l->str_cons) {
		uint32_t flen;

		if ((rc = v8_field(mem, tagged, l->cons_first, &a)) ||
		    (rc = v8_field(mem, tagged, l->cons_second, &b)))
			return rc;
		if (!v8_is_obj(a))
			return -PROF_ECORRUPT;
		if ((rc = v8_read(mem, a - 1 + l->string_length, &flen, 4)))
			return rc;
		if (flen > len)
			return -PROF_ECORRUPT;
		if (from < flen) {
			uint64_t n = PROF_MIN(count, flen - from);

			if ((rc = v8_str_part(pv, mem, a, from, n, s, depth + 1)))
				return rc;
			from += n;
			count -= n;
		}
		if (!count)
			return 0;
		return v8_str_part(pv, mem, b, from - flen, count, s, depth + 1);
	}
	return -PROF_ECORRUPT;
}

/* String @tagged as UTF-8 into @out (@max bytes, cut to fit). */
static int v8_str(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t tagged, char *out,
		  size_t max)
{
	struct v8_sink s = { .put = v8_sink_utf8, .out = out, .max = max };

	out[0] = 0;
	return v8_str_part(pv, mem, tagged, 0, max, &s, 0);
}

static bool v8_is_string_cb(void *ctx, uint64_t tagged)
{
	void **c = ctx;
	struct v8_priv *pv = c[0];
	const struct agent_memreader *mem = c[1];
	uint16_t type;

	return !v8_type(pv, mem, tagged, &type) && type < pv->l.first_nonstring;
}

/* Elements of FixedArray @tagged of type @type: *@n (bounded) and address of element 0. */
static int v8_array(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t tagged,
		    uint16_t want, uint64_t *n, uint64_t *data)
{
	uint16_t type;
	uint64_t len;
	int rc;

	if ((rc = v8_type(pv, mem, tagged, &type)))
		return rc;
	if (type != want)
		return -ENOENT;
	if ((rc = v8_field(mem, tagged, pv->l.fixed_array_length, &len)))
		return rc;
	if (!v8_is_smi(len) || v8_smi(len) < 0 || v8_smi(len) > (int64_t)V8_STR_MAX)
		return -PROF_ECORRUPT;
	*n = (uint64_t)v8_smi(len);
	*data = tagged - 1 + pv->l.fixed_array_data;
	return 0;
}

/* The 1-based line of script offset @pos in Script @script; 0 when unknown. */
static int64_t v8_script_line(struct v8_priv *pv, const struct agent_memreader *mem,
			      uint64_t script, int64_t pos)
{
	uint64_t ends, n, data, src;

	if (!script || pos < 0)
		return 0;
	if (!v8_field(mem, script, pv->l.script_line_ends, &ends) &&
	    !v8_array(pv, mem, ends, pv->l.t_fixed_array, &n, &data)) {
		uint64_t lo = 0, hi = n; /* first end >= pos */

		while (lo < hi) {
			uint64_t mid = lo + (hi - lo) / 2, w;

			if (v8_read(mem, data + 8 * mid, &w, 8) || !v8_is_smi(w))
				return 0;
			if (v8_smi(w) < pos)
				lo = mid + 1;
			else
				hi = mid;
		}
		return (int64_t)lo + 1;
	}
	if (pos > (int64_t)V8_SCAN_MAX || v8_field(mem, script, pv->l.script_source, &src))
		return 0;
	{
		struct v8_sink s = { .put = v8_sink_lines };

		if (v8_str_part(pv, mem, src, 0, (uint64_t)pos, &s, 0))
			return 0;
		return (int64_t)s.lines + 1;
	}
}

/* The function of SFI @sfi (checked against @check), from the cache or read. */
static int v8_fn_get(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t sfi,
		     uint64_t check, struct v8_fn **out)
{
	const struct agent_v8_layout *l = &pv->l;
	struct v8_fn *e = &pv->fns[v8_hash(sfi, V8_FN_CACHE - 1)];
	uint64_t nos, sod, map;
	int64_t start_pos = -1;
	uint16_t type;
	int rc;

	/* The SFI is read every time: the cache entry is valid only for the object there now. */
	{
		const uint16_t offs[2] = { l->heapobject_map, l->sfi_name_or_scope_info };
		uint64_t w[2];

		if ((rc = v8_fields(mem, sfi, offs, 2, w)))
			return rc;
		map = w[0];
		nos = w[1];
	}
	if ((rc = v8_map_type(pv, mem, map, &type)))
		return rc;
	if (type != l->t_sfi || (check && nos != check))
		return -ESTALE;
	if (e->sfi == sfi && e->check == nos) {
		*out = e;
		return 0;
	}
	memset(e, 0, sizeof(*e));
	if ((rc = v8_type(pv, mem, nos, &type)))
		return rc;
	if (type < l->first_nonstring) {
		rc = v8_str(pv, mem, nos, e->name, sizeof(e->name));
	} else if (type == l->t_scope_info) {
		uint64_t slots[V8_SCOPE_SLOTS];
		struct agent_v8_scope sc;
		void *ctx[2] = { pv, (void *)mem };

		if ((rc = v8_read(mem, nos - 1 + l->heapobject_map + 8, slots, sizeof(slots))))
			return rc;
		agent_v8_scope_info_parse(slots, V8_SCOPE_SLOTS, l->scope_info_first_vars,
					  l->scope_info_ncontext_locals, v8_is_string_cb, ctx, &sc);
		if (sc.name)
			rc = v8_str(pv, mem, sc.name, e->name, sizeof(e->name));
		start_pos = sc.start;
	} else {
		return -PROF_ECORRUPT;
	}
	if (rc && rc != -ENOENT)
		return rc;
	if (!e->name[0])
		snprintf(e->name, sizeof(e->name), "(anonymous)");
	if (!v8_field(mem, sfi, l->sfi_script_or_debug_info, &sod) && v8_is_obj(sod) &&
	    !v8_type(pv, mem, sod, &type) && type == l->t_script) {
		uint64_t name;

		e->script = sod;
		if (!v8_field(mem, sod, l->script_name, &name) && v8_is_obj(name))
			(void)v8_str(pv, mem, name, e->file, sizeof(e->file));
	}
	e->start_line = v8_script_line(pv, mem, e->script, start_pos);
	e->sfi = sfi;
	e->check = nos;
	*out = e;
	return 0;
}

/* The source position table (ByteArray) at field @off of @obj into pv->chunk: *@n bytes. */
static int v8_table(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t obj,
		    uint16_t off, size_t *n)
{
	uint64_t tab, len, data;
	int rc;

	if ((rc = v8_field(mem, obj, off, &tab)))
		return rc;
	if (!v8_is_obj(tab))
		return -ENOENT; /* undefined: not collected (lazy source positions) */
	if ((rc = v8_array(pv, mem, tab, pv->l.t_byte_array, &len, &data)))
		return rc;
	if (len > V8_CHUNK) /* larger tables: the line is not looked up */
		return -PROF_ETOOBIG;
	if ((rc = v8_read(mem, data, pv->chunk, len)))
		return rc;
	*n = len;
	return 0;
}

/* The BytecodeArray of SFI @sfi: function_data, through InterpreterData or baseline Code. */
static int v8_bytecode_of(struct v8_priv *pv, const struct agent_memreader *mem, uint64_t sfi,
			  uint64_t *out)
{
	const struct agent_v8_layout *l = &pv->l;
	uint64_t fd;
	uint16_t type;
	int rc;

	if ((rc = v8_field(mem, sfi, l->sfi_function_data, &fd)))
		return rc;
	for (int hop = 0; hop < 3; hop++) {
		if ((rc = v8_type(pv, mem, fd, &type)))
			return rc;
		if (type == l->t_bytecode_array) {
			*out = fd;
			return 0;
		}
		if (type == l->t_code)
			rc = v8_field(mem, fd, l->code_bytecode_or_interpreter_data, &fd);
		else if (type == l->t_interpreter_data)
			rc = v8_field(mem, fd, l->interpreter_data_bytecode_array, &fd);
		else
			return -ENOENT;
		if (rc)
			return rc;
	}
	return -ENOENT;
}

/* The line of raw frame @f of function @fn; 0 when unknown. */
static int64_t v8_frame_line(struct v8_priv *pv, const struct agent_memreader *mem,
			     const struct agent_jit_frame *f, const struct v8_fn *fn)
{
	const struct agent_v8_layout *l = &pv->l;
	uint64_t key = (uint64_t)f->kind << 62 | (f->offset & ((1ull << 62) - 1)), pos, obj;
	struct v8_line *e;
	int64_t line = 0;
	uint16_t type;
	size_t n;

	if (f->offset == AGENT_V8_NO_OFFSET || (f->flags & AGENT_V8_F_BASELINE) || !fn->script)
		return 0;
	e = &pv->lines[v8_hash(f->obj ^ key * 0x9e3779b97f4a7c15ull, V8_LINE_CACHE - 1)];
	if (e->sfi == f->obj && e->check == fn->check && e->key == key)
		return e->line;
	if (f->kind == AGENT_JIT_INTERPRETED) {
		if (v8_bytecode_of(pv, mem, f->obj, &obj) ||
		    v8_table(pv, mem, obj, l->bytecode_array_source_positions, &n))
			return 0;
	} else {
		obj = f->aux;
		if (v8_type(pv, mem, obj, &type) || type != l->t_code ||
		    v8_table(pv, mem, obj, l->code_source_positions, &n))
			return 0;
	}
	if (!agent_v8_srcpos_find(pv->chunk, n, f->offset, &pos) && !(pos >> 31))
		line = v8_script_line(pv, mem, fn->script, agent_v8_srcpos_script_offset(pos));
	e->sfi = f->obj;
	e->check = fn->check;
	e->key = key;
	e->line = line;
	return line;
}

static int v8_name_frame(void *priv, const struct agent_memreader *mem,
			 const struct agent_jit_frame *f, struct agent_interp_name *out, size_t max)
{
	struct v8_priv *pv = priv;
	struct v8_fn *fn;
	int rc;

	if (!pv || !max || (f->kind != AGENT_JIT_INTERPRETED && f->kind != AGENT_JIT_COMPILED))
		return -PROF_ECORRUPT;
	if ((rc = v8_fn_get(pv, mem, f->obj, f->check, &fn)))
		return rc == -ENOENT ? -PROF_ECORRUPT : rc;
	out[0].function = fn->name;
	out[0].file = fn->file;
	out[0].start_line = fn->start_line;
	out[0].line = v8_frame_line(pv, mem, f, fn);
	if (!out[0].line)
		out[0].line = fn->start_line;
	return 1;
}

/*
 * For a leaf whose pc is outside compiled frame code [@lo, @hi): the
 * stack slot among the top words that holds a return address into it
 * (the callee has not built its frame yet), or 0.
 */
static uint64_t v8_prologue_slot(const struct agent_jit_stack *stk,
				 const struct agent_memreader *mem, uint64_t sp, uint64_t fp,
				 uint64_t lo, uint64_t hi)
{
	for (int i = 0; i < V8_PROLOGUE_WORDS; i++) {
		uint64_t a = sp + 8 * (uint64_t)i, w;

		if (a + 8 > fp || v8_stack_word(stk, mem, a, &w))
			return 0;
		if (w > lo && w <= hi)
			return a;
	}
	return 0;
}

static int v8_step(void *priv, const struct agent_memreader *mem, const struct agent_jit_stack *stk,
		   const struct agent_jit_regs *r, bool leaf, struct agent_jit_regs *caller,
		   struct agent_jit_frame *f)
{
	struct v8_priv *pv = priv;
	const struct agent_v8_layout *l;
	uint64_t fp, marker, fn, sfi, nos, fd, bca, bco, code, pc, slot, code_start = 0;
	uint32_t code_size = 0, code_flags = 0;
	uint64_t jsf[8]; /* JSFunction up to code */
	uint16_t type;
	int rc;

	memset(f, 0, sizeof(*f));
	if (!pv || !r->bp_ok)
		return -ERANGE;
	l = &pv->l;
	fp = r->bp;
	pc = leaf ? r->pc : r->pc - 1;
	if ((fp & 7) || fp < r->sp || fp - r->sp > V8_FRAME_MAX)
		return -ERANGE;
	if ((rc = v8_stack_word(stk, mem, fp + 8, &caller->pc)) ||
	    (rc = v8_stack_word(stk, mem, fp, &caller->bp)))
		return rc;
	caller->sp = fp + 16;
	caller->bp_ok = true;
	if ((rc = v8_stack_word(stk, mem, fp + (uint64_t)(int64_t)l->fp_marker, &marker)))
		return rc;
	if (v8_is_smi(marker)) {
		/* a typed frame: entry, exit, stub, internal, builtin */
		f->kind = AGENT_JIT_NONE;
		f->check = marker < V8_MARKER_MAX ? marker >> 1 : 0;
		return 0;
	}
	if ((rc = v8_stack_word(stk, mem, fp + (uint64_t)(int64_t)l->fp_function, &fn)))
		return rc;
	if (!v8_is_obj(fn) || l->jsfunction_code + 8u > sizeof(jsf) ||
	    v8_read(mem, fn - 1, jsf, l->jsfunction_code + 8u) ||
	    v8_map_type(pv, mem, jsf[l->heapobject_map / 8], &type) || !v8_is_jsfunction(l, type))
		return 0; /* not a JavaScript frame after all: a frame-pointer step, named natively */
	sfi = jsf[l->jsfunction_shared / 8];
	{
		const uint16_t offs[3] = { l->heapobject_map, l->sfi_name_or_scope_info,
					   l->sfi_function_data };
		uint64_t w[3];

		if (v8_fields(mem, sfi, offs, 3, w) || v8_map_type(pv, mem, w[0], &type) ||
		    type != l->t_sfi)
			return 0;
		nos = w[1];
		fd = w[2];
	}
	if (v8_is_smi(fd))
		return 0; /* a builtin's function (its id): the pc's native name says more */
	f->obj = sfi;
	f->check = nos;
	f->aux = fn;
	if (!v8_stack_word(stk, mem, fp + (uint64_t)(int64_t)l->fp_bytecode_offset, &bco) &&
	    !v8_stack_word(stk, mem, fp + (uint64_t)(int64_t)l->fp_bytecode_array, &bca) &&
	    v8_is_smi(bco) && !v8_type(pv, mem, bca, &type) && type == l->t_bytecode_array) {
		int64_t off = v8_smi(bco) - (l->bytecode_array_data - 1);

		f->kind = AGENT_JIT_INTERPRETED;
		f->offset = off >= 0 ? (uint64_t)off : AGENT_V8_NO_OFFSET;
		return 0;
	}
	f->kind = AGENT_JIT_COMPILED;
	f->offset = AGENT_V8_NO_OFFSET;
	code = jsf[l->jsfunction_code / 8];
	{
		const uint16_t offs[4] = { l->heapobject_map, l->code_instruction_start,
					   l->code_instruction_size, l->code_flags };
		uint64_t w[4];

		if (v8_fields(mem, code, offs, 4, w) || v8_map_type(pv, mem, w[0], &type))
			type = 0;
		code_start = w[1];
		code_size = (uint32_t)w[2];
		code_flags = (uint32_t)w[3];
	}
	if (type == l->t_code) {
		uint64_t start = code_start;
		uint32_t size = code_size, flags = code_flags;

		if (((flags >> l->code_kind_shift) & l->code_kind_mask) == l->code_kind_baseline)
			f->flags |= AGENT_V8_F_BASELINE;
		if (pc >= start && pc - start < size) {
			f->offset = pc - start;
			f->aux = code;
			return 0;
		}
		if (leaf && size &&
		    (slot = v8_prologue_slot(stk, mem, r->sp, fp, start, start + size))) {
			/* the leaf is a callee without its frame: native, then this frame */
			memset(f, 0, sizeof(*f));
			if ((rc = v8_stack_word(stk, mem, slot, &caller->pc)))
				return rc;
			caller->sp = slot + 8;
			caller->bp = fp;
			return 0;
		}
	}
	return 0;
}

static bool v8_match(const char *base)
{
	const char *p;

	if (!strncmp(base, "libnode.so", 10))
		return true;
	if (strncmp(base, "node", 4))
		return false;
	for (p = base + 4; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

void *agent_v8_priv_new(const struct agent_v8_layout *l)
{
	struct v8_priv *pv = xcalloc(1, sizeof(*pv));

	pv->l = *l;
	return pv;
}

static void v8_free(void *priv)
{
	free(priv);
}

/* How a post-mortem constant is stored in struct agent_v8_layout. */
enum v8_kind { V8_I32, V8_U16, V8_U32 };

struct v8_const {
	const char *sym;
	size_t off;
	enum v8_kind kind;
	bool required;
};

#define C(s, f, k, r)                                                 \
	{                                                             \
		"v8dbg_" s, offsetof(struct agent_v8_layout, f), k, r \
	}
static const struct v8_const v8_consts[] = {
	C("off_fp_context_or_frame_type", fp_marker, V8_I32, true),
	C("off_fp_function", fp_function, V8_I32, true),
	C("off_fp_bytecode_array", fp_bytecode_array, V8_I32, false),
	C("off_fp_bytecode_offset", fp_bytecode_offset, V8_I32, false),
	C("type_JSFunction__JS_FUNCTION_TYPE", t_jsfunction_first, V8_U16, true),
	C("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE", t_sfi, V8_U16, true),
	C("type_Code__CODE_TYPE", t_code, V8_U16, true),
	C("type_BytecodeArray__BYTECODE_ARRAY_TYPE", t_bytecode_array, V8_U16, true),
	C("type_ScopeInfo__SCOPE_INFO_TYPE", t_scope_info, V8_U16, true),
	C("type_Script__SCRIPT_TYPE", t_script, V8_U16, true),
	C("type_FixedArray__FIXED_ARRAY_TYPE", t_fixed_array, V8_U16, true),
	C("type_ByteArray__BYTE_ARRAY_TYPE", t_byte_array, V8_U16, true),
	C("type_InterpreterData__INTERPRETER_DATA_TYPE", t_interpreter_data, V8_U16, false),
	C("FirstNonstringType", first_nonstring, V8_U16, true),
	C("class_HeapObject__map__Map", heapobject_map, V8_U16, true),
	C("class_Map__instance_type__uint16_t", map_instance_type, V8_U16, true),
	C("class_JSFunction__shared__SharedFunctionInfo", jsfunction_shared, V8_U16, true),
	C("class_SharedFunctionInfo__function_data__Object", sfi_function_data, V8_U16, false),
	C("class_SharedFunctionInfo__name_or_scope_info__Object", sfi_name_or_scope_info, V8_U16,
	  true),
	C("class_SharedFunctionInfo__script_or_debug_info__HeapObject", sfi_script_or_debug_info,
	  V8_U16, true),
	C("class_Code__source_position_table__ByteArray", code_source_positions, V8_U16, true),
	C("class_Code__bytecode_or_interpreter_data__HeapObject", code_bytecode_or_interpreter_data,
	  V8_U16, false),
	C("class_BytecodeArray__data__uintptr_t", bytecode_array_data, V8_U16, true),
	C("class_Script__name__Object", script_name, V8_U16, true),
	C("class_Script__source__Object", script_source, V8_U16, false),
	C("class_Script__line_ends__Object", script_line_ends, V8_U16, false),
	C("class_FixedArrayBase__length__SMI", fixed_array_length, V8_U16, true),
	C("class_FixedArray__data__uintptr_t", fixed_array_data, V8_U16, true),
	C("scopeinfo_idx_ncontextlocals", scope_info_ncontext_locals, V8_U16, false),
	C("scopeinfo_idx_first_vars", scope_info_first_vars, V8_U16, false),
	C("CodeKindFieldMask", code_kind_mask, V8_U32, false),
	C("CodeKindFieldShift", code_kind_shift, V8_U32, false),
	C("CodeKindBaseline", code_kind_baseline, V8_U32, false),
	C("CodeKindInterpretedFunction", code_kind_interpreted, V8_U32, false),
	C("class_String__length__int32_t", string_length, V8_U16, true),
	C("class_SeqOneByteString__chars__char", seq_chars, V8_U16, true),
	C("class_ConsString__first__String", cons_first, V8_U16, true),
	C("class_ConsString__second__String", cons_second, V8_U16, true),
	C("class_ThinString__actual__String", thin_actual, V8_U16, true),
	C("class_SlicedString__offset__SMI", sliced_offset, V8_U16, false),
	C("StringRepresentationMask", str_rep_mask, V8_U16, true),
	C("StringEncodingMask", str_enc_mask, V8_U16, true),
	C("OneByteStringTag", str_one_byte, V8_U16, true),
	C("SeqStringTag", str_seq, V8_U16, true),
	C("ConsStringTag", str_cons, V8_U16, true),
	C("ExternalStringTag", str_external, V8_U16, false),
	C("SlicedStringTag", str_sliced, V8_U16, true),
	C("ThinStringTag", str_thin, V8_U16, true),
};
#undef C

/* Tag constants the code assumes: name and the value it must have. */
static const struct {
	const char *sym;
	int32_t want;
} v8_fixed[] = {
	{ "v8dbg_HeapObjectTag", 1 }, { "v8dbg_HeapObjectTagMask", 3 },
	{ "v8dbg_SmiTagMask", 1 },    { "v8dbg_SmiShiftSize", 31 },
	{ "v8dbg_TaggedSize", 8 },    { "v8dbg_SystemPointerSize", 8 },
};

enum {
	V8_S_MAJOR,
	V8_S_MINOR,
	V8_S_BUILD,
	V8_S_PATCH,
	V8_S_BLOB,
	V8_S_BLOB_SIZE,
	V8_S_FIXED,
	V8_S_CONSTS = V8_S_FIXED + PROF_ARRAY_SIZE(v8_fixed),
	V8_S_N = V8_S_CONSTS + PROF_ARRAY_SIZE(v8_consts),
};

static uint32_t v8_ver(uint32_t a, uint32_t b, uint32_t c)
{
	return a << 24 | b << 16 | c;
}

static int v8_attach(const char *path, uint64_t bias, const struct agent_memreader *mem,
		     struct agent_jit_attach *out)
{
	struct agent_interp_sym syms[V8_S_N];
	struct agent_v8_layout l;
	int32_t v[4], val;
	uint32_t blob_size;
	int rc;

	memset(syms, 0, sizeof(syms));
	syms[V8_S_MAJOR].name = "_ZN2v88internal7Version6major_E";
	syms[V8_S_MINOR].name = "_ZN2v88internal7Version6minor_E";
	syms[V8_S_BUILD].name = "_ZN2v88internal7Version6build_E";
	syms[V8_S_PATCH].name = "_ZN2v88internal7Version6patch_E";
	syms[V8_S_BLOB].name = "v8_Default_embedded_blob_code_";
	syms[V8_S_BLOB_SIZE].name = "v8_Default_embedded_blob_code_size_";
	for (size_t i = 0; i < PROF_ARRAY_SIZE(v8_fixed); i++)
		syms[V8_S_FIXED + i].name = v8_fixed[i].sym;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(v8_consts); i++)
		syms[V8_S_CONSTS + i].name = v8_consts[i].sym;
	rc = agent_interp_elf_symbols(path, syms, V8_S_N);
	if (rc)
		return rc == -PROF_EFORMAT ? -ENOENT : rc;
	for (int i = V8_S_MAJOR; i <= V8_S_BUILD; i++)
		if (!syms[i].found)
			return -ENOENT;
	if (!syms[V8_S_CONSTS].found)
		return -ENOENT; /* no post-mortem metadata: a node built without it */
	for (int i = V8_S_MAJOR; i <= V8_S_PATCH; i++) {
		v[i] = 0;
		if (syms[i].found && (rc = v8_read(mem, bias + syms[i].value, &v[i], 4)))
			return rc;
	}
	if (v[0] < 0 || v[0] > 255 || v[1] < 0 || v[1] > 255 || v[2] < 0 || v[2] > 65535)
		return -ENOENT;
	snprintf(out->version, sizeof(out->version), "%d.%d.%d.%d", v[0], v[1], v[2], v[3]);
	agent_v8_layout_default(&l);
	l.version = v8_ver((uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2]);
	if (l.version < v8_ver(11, 1, 204) || l.version >= v8_ver(12, 0, 0))
		return -ENOTSUP;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(v8_fixed); i++) {
		const struct agent_interp_sym *s = &syms[V8_S_FIXED + i];

		if (!s->found)
			return -ENOTSUP;
		if ((rc = v8_read(mem, bias + s->value, &val, 4)))
			return rc;
		if (val != v8_fixed[i].want)
			return -ENOTSUP;
	}
	for (size_t i = 0; i < PROF_ARRAY_SIZE(v8_consts); i++) {
		const struct v8_const *c = &v8_consts[i];
		const struct agent_interp_sym *s = &syms[V8_S_CONSTS + i];
		uint8_t *dst = (uint8_t *)&l + c->off;

		if (!s->found) {
			if (c->required)
				return -ENOTSUP;
			continue;
		}
		if ((rc = v8_read(mem, bias + s->value, &val, 4)))
			return rc;
		if (c->kind == V8_I32) {
			if (val < -256 || val > 256 || (val & 7))
				return -ENOTSUP;
			memcpy(dst, &val, 4);
		} else if (c->kind == V8_U16) {
			uint16_t u = (uint16_t)val;

			if (val < 0 || val > 65535)
				return -ENOTSUP;
			memcpy(dst, &u, 2);
		} else {
			memcpy(dst, &val, 4);
		}
	}
	/* Fallbacks for what 11.x's metadata lacks (OpenTelemetry v8.go). */
	l.t_jsfunction_last = l.t_jsfunction_first + 14;
	l.jsfunction_code = l.jsfunction_shared + 3 * 8; /* before 11.7.368 */
	if (l.version >= v8_ver(11, 7, 368))
		l.jsfunction_code = l.jsfunction_shared - 8;
	l.code_instruction_start = l.code_source_positions + 2 * 8;
	l.code_flags = l.code_instruction_start + 8;
	l.code_instruction_size = l.code_flags + 4 + (l.version < v8_ver(11, 4, 59) ? 4 : 0);
	l.bytecode_array_source_positions = l.fixed_array_length + 3 * 8;
	l.sliced_parent = l.thin_actual;
	l.external_resource_data = l.cons_first + 8;
	if (l.fp_bytecode_array == 0)
		l.fp_bytecode_array = l.fp_function - 2 * 8;
	if (l.fp_bytecode_offset == 0)
		l.fp_bytecode_offset = l.fp_bytecode_array - 8;
	if (l.jsfunction_code + 8u > 64 || l.fp_marker >= 0 || l.fp_function >= 0)
		return -ENOTSUP;
	if (syms[V8_S_BLOB].found && syms[V8_S_BLOB_SIZE].found &&
	    !v8_read(mem, bias + syms[V8_S_BLOB_SIZE].value, &blob_size, 4) && blob_size) {
		out->ranges[0].lo = bias + syms[V8_S_BLOB].value;
		out->ranges[0].hi = out->ranges[0].lo + blob_size;
		out->nranges = 1;
	}
	out->anon_exec = true;
	out->priv = agent_v8_priv_new(&l);
	return 0;
}

const struct agent_jit_ops agent_jit_v8 = {
	.name = "v8js",
	.match = v8_match,
	.attach = v8_attach,
	.step = v8_step,
	.name_frame = v8_name_frame,
	.free = v8_free,
};
