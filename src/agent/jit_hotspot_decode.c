// SPDX-License-Identifier: Apache-2.0
/*
 * jit_hotspot_decode.c - HotSpot's introspection tables and compressed
 * streams (jit_hotspot.h); needs only base/ and the memreader, so the
 * unit test and the fuzz target link it alone.
 *
 * The tables: gHotSpotVMStructs is an array of entries (stride, and the
 * offsets of typeName, fieldName, offset and address inside an entry,
 * each in its own exported variable) ending with a NULL typeName; an
 * entry describes a field (offset) or a static field (address). The
 * JVM fills the stride variables at start-up (they are in .bss), so a
 * zero stride means "not yet". gHotSpotVMTypes likewise gives type sizes.
 * Every field wanted is looked up by type and field name; an offset must
 * lie inside its type's size (a table that says otherwise is refused,
 * never used), as the OpenTelemetry eBPF profiler's hotspot data.go does.
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/jit_hotspot.h"

#define HS_TABLE_MAX  (1u << 16) /* entries read per table */
#define HS_STRIDE_MAX 256
#define HS_NAME_MAX   96

enum hs_want_kind {
	HS_FIELD,	  /* an offset inside @type, checked against @type's size */
	HS_FIELD_UNSIZED, /* an offset in a type the tables give no size for (< 256) */
	HS_STATIC,	  /* an address */
	HS_SIZE,	  /* a type's size */
};

struct hs_want {
	const char *type, *field;
	enum hs_want_kind kind;
	size_t at;	      /* offsetof the value in struct agent_hs_vm */
	uint8_t size;	      /* bytes the field has (offset + size <= type size) */
	const char *sized_by; /* type whose size bounds the offset, when not @type */
};

#define F(t, f, m, sz)                                                    \
	{                                                                 \
		t, f, HS_FIELD, offsetof(struct agent_hs_vm, m), sz, NULL \
	}
#define FB(t, f, m, sz, by)                                             \
	{                                                               \
		t, f, HS_FIELD, offsetof(struct agent_hs_vm, m), sz, by \
	}
#define FU(t, f, m, sz)                                                           \
	{                                                                         \
		t, f, HS_FIELD_UNSIZED, offsetof(struct agent_hs_vm, m), sz, NULL \
	}
#define S(t, f, m)                                                        \
	{                                                                 \
		t, f, HS_STATIC, offsetof(struct agent_hs_vm, m), 8, NULL \
	}
#define Z(t, m)                                                            \
	{                                                                  \
		t, NULL, HS_SIZE, offsetof(struct agent_hs_vm, m), 4, NULL \
	}

static const struct hs_want hs_wants[] = {
	S("CodeCache", "_heaps", heaps),
	S("Abstract_VM_Version", "_s_vm_release", vm_release),
	S("Abstract_VM_Version", "_vm_major_version", vm_major),
	S("Abstract_VM_Version", "_vm_minor_version", vm_minor),
	S("Abstract_VM_Version", "_vm_security_version", vm_security),
	FB("CodeBlob", "_name", blob_name, 8, "nmethod"),
	FB("CodeBlob", "_frame_complete_offset", blob_frame_complete, 4, "nmethod"),
	FB("CodeBlob", "_frame_size", blob_frame_size, 4, "nmethod"),
	FB("CodeBlob", "_code_begin", blob_code_begin, 8, "nmethod"),
	FB("CodeBlob", "_code_end", blob_code_end, 8, "nmethod"),
	FB("CodeBlob", "_size", blob_size, 4, "nmethod"),
	FB("CompiledMethod", "_method", nm_method, 8, "nmethod"),
	FB("CompiledMethod", "_scopes_data_begin", nm_scopes_data, 8, "nmethod"),
	FB("CompiledMethod", "_deopt_handler_begin", nm_deopt, 8, "nmethod"),
	F("nmethod", "_compile_id", nm_compile_id, 4),
	F("nmethod", "_orig_pc_offset", nm_orig_pc, 4),
	F("nmethod", "_metadata_offset", nm_metadata, 4),
	F("nmethod", "_scopes_pcs_offset", nm_scopes_pcs, 4),
	F("nmethod", "_dependencies_offset", nm_deps, 4),
	Z("nmethod", nm_sizeof),
	F("CodeHeap", "_memory", heap_memory, 8),
	F("CodeHeap", "_segmap", heap_segmap, 8),
	F("CodeHeap", "_log2_segment_size", heap_log2, 4),
	Z("CodeHeap", heap_sizeof),
	Z("VirtualSpace", vs_sizeof),
	FB("VirtualSpace", "_low_boundary", vs_low_boundary, 8, "VirtualSpace"),
	FB("VirtualSpace", "_high_boundary", vs_high_boundary, 8, "VirtualSpace"),
	FB("VirtualSpace", "_low", vs_low, 8, "VirtualSpace"),
	Z("HeapBlock", hb_sizeof),
	FB("HeapBlock::Header", "_used", hb_used, 1, "HeapBlock"),
	FU("GrowableArrayBase", "_len", ga_len, 4),
	FU("GrowableArray<int>", "_data", ga_data, 8),
	F("Method", "_constMethod", m_const, 8),
	Z("Method", m_sizeof),
	F("ConstMethod", "_constants", cm_constants, 8),
	F("ConstMethod", "_flags", cm_flags, 2),
	F("ConstMethod", "_code_size", cm_code_size, 2),
	F("ConstMethod", "_name_index", cm_name_index, 2),
	F("ConstMethod", "_method_idnum", cm_idnum, 2),
	Z("ConstMethod", cm_sizeof),
	F("ConstantPool", "_pool_holder", cp_holder, 8),
	F("ConstantPool", "_source_file_name_index", cp_source_file, 2),
	Z("ConstantPool", cp_sizeof),
	FB("Klass", "_name", k_name, 8, "InstanceKlass"),
	F("InstanceKlass", "_methods", ik_methods, 8),
	Z("InstanceKlass", ik_sizeof),
	FU("Array<Klass*>", "_length", arr_len, 4),
	FU("Array<Method*>", "_data", arr_data, 8),
	FU("Symbol", "_length", sym_length, 2),
	FU("Symbol", "_body", sym_body, 1),
	F("PcDesc", "_pc_offset", pc_pc_offset, 4),
	F("PcDesc", "_scope_decode_offset", pc_scope_offset, 4),
	Z("PcDesc", pc_sizeof),
};

#undef F
#undef FB
#undef FU
#undef S
#undef Z

#define HS_NWANTS PROF_ARRAY_SIZE(hs_wants)

static int hs_read_u64(const struct agent_memreader *mem, uint64_t addr, uint64_t *v)
{
	return mem->read(mem->ctx, addr, v, 8) ? -EFAULT : 0;
}

static bool hs_type_wanted(const char *type)
{
	for (size_t i = 0; i < HS_NWANTS; i++)
		if (!strcmp(hs_wants[i].type, type))
			return true;
	return false;
}

/*
 * Walk one table: entries of @stride bytes from @base; for each with a
 * wanted type name, set the matching wants (@val, @seen). @fieldoff is
 * UINT64_MAX for the types table (sizes at @valoff), else the structs
 * table (offsets at @valoff, addresses at @addroff).
 */
static int hs_walk(const struct agent_memreader *mem, uint64_t base, uint64_t stride,
		   uint64_t typeoff, uint64_t fieldoff, uint64_t valoff, uint64_t addroff,
		   uint64_t *val, bool *seen)
{
	uint8_t e[HS_STRIDE_MAX];
	uint64_t last_type = 0;
	bool last_wanted = false;
	char type[HS_NAME_MAX], field[HS_NAME_MAX];

	if (!base || !stride)
		return -EAGAIN;
	if (stride > HS_STRIDE_MAX || typeoff + 8 > stride || valoff + 8 > stride ||
	    (fieldoff != UINT64_MAX && (fieldoff + 8 > stride || addroff + 8 > stride)))
		return -PROF_ECORRUPT;
	type[0] = '\0';
	for (uint32_t i = 0; i < HS_TABLE_MAX; i++) {
		uint64_t tp, fp = 0, v, a = 0;

		if (mem->read(mem->ctx, base + (uint64_t)i * stride, e, stride))
			return -EFAULT;
		memcpy(&tp, e + typeoff, 8);
		if (!tp)
			return 0;
		if (tp != last_type) {
			last_type = tp;
			last_wanted = !agent_mem_read_str(mem, tp, type, sizeof(type)) &&
				      hs_type_wanted(type);
		}
		if (!last_wanted)
			continue;
		memcpy(&v, e + valoff, 8);
		field[0] = '\0';
		if (fieldoff != UINT64_MAX) {
			memcpy(&fp, e + fieldoff, 8);
			memcpy(&a, e + addroff, 8);
			if (!fp || agent_mem_read_str(mem, fp, field, sizeof(field)))
				continue;
		}
		for (size_t k = 0; k < HS_NWANTS; k++) {
			const struct hs_want *w = &hs_wants[k];

			if (strcmp(w->type, type))
				continue;
			if (fieldoff == UINT64_MAX
				    ? w->kind != HS_SIZE
				    : (w->kind == HS_SIZE || strcmp(w->field, field)))
				continue;
			val[k] = w->kind == HS_STATIC ? a : v;
			seen[k] = true;
		}
	}
	return -PROF_ECORRUPT; /* no end marker */
}

/* The size of @type from the wants already read, or 0 when none was asked for. */
static uint64_t hs_size_of(const char *type, const uint64_t *val, const bool *seen)
{
	for (size_t k = 0; k < HS_NWANTS; k++)
		if (hs_wants[k].kind == HS_SIZE && !strcmp(hs_wants[k].type, type) && seen[k])
			return val[k];
	return 0;
}

int agent_hs_vm_read(const struct agent_hs_tables *t, const struct agent_memreader *mem,
		     struct agent_hs_vm *out, char *why, size_t nwhy)
{
	uint64_t val[HS_NWANTS] = { 0 }, sp, ss, st, sf, so, sa, tp, ts, tt, tz;
	bool seen[HS_NWANTS] = { false };
	int rc;

	snprintf(why, nwhy, "tables unreadable");
	if (hs_read_u64(mem, t->structs, &sp) || hs_read_u64(mem, t->s_stride, &ss) ||
	    hs_read_u64(mem, t->s_type, &st) || hs_read_u64(mem, t->s_field, &sf) ||
	    hs_read_u64(mem, t->s_offset, &so) || hs_read_u64(mem, t->s_address, &sa) ||
	    hs_read_u64(mem, t->types, &tp) || hs_read_u64(mem, t->t_stride, &ts) ||
	    hs_read_u64(mem, t->t_type, &tt) || hs_read_u64(mem, t->t_size, &tz))
		return -EFAULT;
	snprintf(why, nwhy, "bad introspection table");
	rc = hs_walk(mem, tp, ts, tt, UINT64_MAX, tz, 0, val, seen);
	if (!rc)
		rc = hs_walk(mem, sp, ss, st, sf, so, sa, val, seen);
	if (rc)
		return rc;
	memset(out, 0, sizeof(*out));
	for (size_t k = 0; k < HS_NWANTS; k++) {
		const struct hs_want *w = &hs_wants[k];
		uint64_t lim;
		uint32_t v32;

		if (!seen[k]) {
			snprintf(why, nwhy, "%s%s%s missing", w->type, w->field ? "." : "",
				 w->field ? w->field : " size");
			return -ENOTSUP;
		}
		if (w->kind == HS_STATIC) {
			if (!val[k]) {
				snprintf(why, nwhy, "%s.%s has no address", w->type, w->field);
				return -ENOTSUP;
			}
			memcpy((char *)out + w->at, &val[k], 8);
			continue;
		}
		if (w->kind == HS_SIZE)
			lim = AGENT_HS_STRUCT_MAX;
		else if (w->kind == HS_FIELD_UNSIZED)
			lim = 256;
		else
			lim = hs_size_of(w->sized_by ? w->sized_by : w->type, val, seen);
		if (w->kind == HS_SIZE ? val[k] > lim : (val[k] > lim || lim - val[k] < w->size)) {
			snprintf(why, nwhy, "%s.%s = %" PRIu64 " outside its type (%" PRIu64 ")",
				 w->type, w->field ? w->field : "size", val[k], lim);
			return -ENOTSUP;
		}
		v32 = (uint32_t)val[k];
		memcpy((char *)out + w->at, &v32, 4);
	}
	if (out->pc_sizeof < 8 || out->hb_sizeof < 8 || out->cm_sizeof < 8) {
		snprintf(why, nwhy, "implausible sizes");
		return -ENOTSUP;
	}
	why[0] = '\0';
	return 0;
}

void agent_hs_jdk17_vm(struct agent_hs_vm *vm, uint64_t heaps)
{
	/* As Debian's 17.0.15+6 tables give them (tests/tools/jvmwalk --layout prints these). */
	*vm = (struct agent_hs_vm){
		.heaps = heaps,
		.blob_name = 96,
		.blob_frame_complete = 20,
		.blob_frame_size = 28,
		.blob_code_begin = 32,
		.blob_code_end = 40,
		.blob_size = 12,
		.nm_method = 112,
		.nm_scopes_data = 120,
		.nm_deopt = 128,
		.nm_compile_id = 304,
		.nm_orig_pc = 300,
		.nm_metadata = 260,
		.nm_scopes_pcs = 268,
		.nm_deps = 272,
		.nm_sizeof = 352,
		.heap_memory = 8,
		.heap_segmap = 120,
		.heap_log2 = 256,
		.heap_sizeof = 344,
		.vs_low_boundary = 0,
		.vs_high_boundary = 8,
		.vs_low = 16,
		.vs_sizeof = 112,
		.hb_sizeof = 16,
		.hb_used = 8,
		.ga_len = 0,
		.ga_data = 8,
		.m_const = 8,
		.m_sizeof = 88,
		.cm_constants = 8,
		.cm_flags = 28,
		.cm_code_size = 32,
		.cm_name_index = 34,
		.cm_idnum = 38,
		.cm_sizeof = 48,
		.cp_holder = 24,
		.cp_source_file = 54,
		.cp_sizeof = 72,
		.k_name = 24,
		.ik_methods = 408,
		.ik_sizeof = 464,
		.arr_len = 0,
		.arr_data = 8,
		.sym_length = 4,
		.sym_body = 6,
		.pc_pc_offset = 0,
		.pc_scope_offset = 4,
		.pc_sizeof = 16,
	};
}

bool agent_hs_u5(const uint8_t *p, size_t n, size_t *i, uint32_t *v)
{
	uint32_t sum = 0;

	for (unsigned k = 0; k < 5; k++) {
		uint32_t b;

		if (*i >= n)
			return false;
		b = p[(*i)++];
		sum += b << (6 * k);
		if (b < 192 || k == 4)
			break;
	}
	*v = sum;
	return true;
}

static bool hs_s5(const uint8_t *p, size_t n, size_t *i, int32_t *v)
{
	uint32_t u;

	if (!agent_hs_u5(p, n, i, &u))
		return false;
	*v = (int32_t)(u >> 1) ^ -(int32_t)(u & 1);
	return true;
}

int64_t agent_hs_line_for_bci(const uint8_t *t, size_t n, uint32_t bci)
{
	size_t i = 0;
	uint32_t cur_bci = 0, best_bci = 0;
	int64_t cur_line = 0, best_line = 0;

	while (i < n) {
		uint8_t b = t[i++];

		if (b == 0)
			break;
		if (b == 0xff) {
			int32_t db, dl;

			if (!hs_s5(t, n, &i, &db) || !hs_s5(t, n, &i, &dl))
				return 0;
			cur_bci += (uint32_t)db;
			cur_line += dl;
		} else {
			cur_bci += b >> 3;
			cur_line += b & 7;
		}
		if (cur_bci == bci)
			return cur_line > 0 ? cur_line : 0;
		if (cur_bci < bci && cur_bci >= best_bci) {
			best_bci = cur_bci;
			best_line = cur_line;
		}
	}
	return best_line > 0 ? best_line : 0;
}

int64_t agent_hs_pcdesc_scope(const struct agent_hs_vm *vm, const uint8_t *pcs, size_t n,
			      uint32_t off)
{
	size_t rec = vm->pc_sizeof;

	if (rec < 8 || vm->pc_pc_offset + 4 > rec || vm->pc_scope_offset + 4 > rec)
		return -1;
	for (size_t i = 0; i + rec <= n; i += rec) {
		int32_t pc, scope;

		memcpy(&pc, pcs + i + vm->pc_pc_offset, 4);
		memcpy(&scope, pcs + i + vm->pc_scope_offset, 4);
		/* pc -1 is the sentinel first record; scope 0 is serialized_null (no debug info) */
		if (pc < 0 || (uint32_t)pc <= off)
			continue;
		return scope > 0 ? scope : -1;
	}
	return -1;
}

int agent_hs_scope_decode(const uint8_t *d, size_t n, uint32_t off, struct agent_hs_scope *out)
{
	size_t i = off;
	uint32_t bci1;

	if (off >= n || !agent_hs_u5(d, n, &i, &out->sender) ||
	    !agent_hs_u5(d, n, &i, &out->method_index) || !agent_hs_u5(d, n, &i, &bci1))
		return -PROF_ECORRUPT;
	out->bci = (int32_t)(bci1 - 1);
	return 0;
}

void agent_hs_class_name(const uint8_t *s, size_t n, char *out, size_t max)
{
	size_t o = 0;

	if (!max)
		return;
	for (size_t i = 0; i < n && o + 1 < max; i++) {
		uint8_t c = s[i];

		if (c == '+' && i + 2 < n && s[i + 1] == '0' && s[i + 2] == 'x')
			break; /* hidden class: Name+0x0000000800c01234 */
		out[o++] = c == '/' ? '.' : (c >= 0x20 && c < 0x7f) ? (char)c : '?';
	}
	out[o] = '\0';
}
