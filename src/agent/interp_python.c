// SPDX-License-Identifier: Apache-2.0
/*
 * interp_python.c - CPython 3.11 and 3.12: detection, layout check and
 * frame naming for the interpreter framework (interp.h); the BPF half is
 * bpf/python.bpf.h.
 *
 * Detection: a mapped file named python* or libpython* that defines
 * _PyRuntime and _PyEval_EvalFrameDefault (a python executable that
 * links libpython has neither: the library is the one). The version is
 * Py_Version (3.11+: major << 24 | minor << 16 | micro << 8 | level << 4 |
 * serial), read from the process. Structure offsets come from a table per
 * minor version (docs/runtimes.md: the same for every build of a minor
 * version on x86-64, e.g. 3.11.2 and 3.11.7), and the code object's are
 * checked against the runtime's own introspection data before use:
 * PyCode_Type.tp_basicsize (the offset of co_code_adaptive) and the
 * member table PyCode_Type.tp_members (name and offset of co_firstlineno,
 * co_argcount, co_flags, co_filename, co_name, co_qualname,
 * co_linetable). A build whose layout differs is refused, never named
 * with wrong offsets. 3.13+ publish every offset in _Py_DebugOffsets at
 * the start of _PyRuntime; reading it is where support for them goes.
 *
 * Naming: the code object at the frame's address is read (its type must
 * be PyCode_Type and its check value the one BPF read: its first line,
 * argument count and flags, and its qualified name's and file name's
 * length and edge bytes, PY_STR_CHECK), then its
 * qualified name, file name and location table; the line is found by
 * walking the table (PEP 626/657 format, Objects/locations.md in
 * CPython) to the frame's instruction. Decoded code objects are cached
 * per process by address.
 *
 * Sources: CPython 3.11/3.12 Include/cpython/code.h, Include/internal/
 * pycore_frame.h, Objects/locations.md; the OpenTelemetry eBPF profiler's
 * interpreter/python/python.go (introspection through tp_members); facts
 * collected in docs/runtimes.md.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "agent/interp.h"
#include "agent/interp_python.h"
#include "agent/bpf/interp.h"

#define PY_CACHE_ENTRIES   1024
#define PY_NAME_MAX	   512	      /* bytes of a name or file name read */
#define PY_LINETABLE_MAX   (64 << 10) /* larger location tables are refused */
#define PY_CODE_HEAD_MAX   256	      /* bytes of code object header read */
#define PY_TP_BASICSIZE	   32	      /* PyTypeObject.tp_basicsize */
#define PY_TP_MEMBERS	   240	      /* PyTypeObject.tp_members */
#define PY_MEMBERDEF_SIZE  40	      /* PyMemberDef: name @0, type @8, offset @16 */
#define PY_MEMBERS_MAX	   64
#define PY_BYTES_SIZE	   16 /* PyVarObject.ob_size of a bytes object */
#define PY_BYTES_DATA	   32 /* PyBytesObject.ob_sval */
#define PY_UNICODE_LENGTH  16 /* PyASCIIObject.length */
#define PY_UNICODE_STATE   32 /* PyASCIIObject.state */
#define PY_CODE_TYPE_FIELD 8  /* PyObject.ob_type */

/* The offsets of one minor version (x86-64). */
struct py_layout {
	int minor;
	uint16_t off[PY_O_MAX]; /* the BPF walker's (bpf/interp.h enum py_off) */
	uint16_t interp_main;	/* _PyRuntime.interpreters.main */
	uint16_t co_filename, co_name, co_qualname, co_linetable;
	uint16_t ascii_size,
		compact_size; /* sizeof(PyASCIIObject), sizeof(PyCompactUnicodeObject) */
};

#define N PROFILE_INTERP_OFF_NONE
static const struct py_layout py_layouts[] = {
	{ .minor = 11,
	  .off = { [PY_O_TS_HEAD] = 16,
		   [PY_O_TS_NEXT] = 8,
		   [PY_O_TS_TID] = 160,
		   [PY_O_TS_FRAME] = 56,
		   [PY_O_CF_FRAME] = 8,
		   [PY_O_FR_CODE] = 32,
		   [PY_O_FR_PREV] = 48,
		   [PY_O_FR_INSTR] = 56,
		   [PY_O_FR_ENTRY] = 68,
		   [PY_O_FR_OWNER] = 69,
		   [PY_O_CO_ADAPTIVE] = 184,
		   [PY_O_CO_FIRSTLINE] = 72,
		   [PY_O_CO_ARGCOUNT] = 56,
		   [PY_O_CO_FLAGS] = 48,
		   [PY_O_CO_QUALNAME] = 128,
		   [PY_O_CO_FILENAME] = 112,
		   [PY_O_STR_DATA] = 48 },
	  .interp_main = 48,
	  .co_filename = 112,
	  .co_name = 120,
	  .co_qualname = 128,
	  .co_linetable = 136,
	  .ascii_size = 48,
	  .compact_size = 72 },
	{ .minor = 12,
	  .off = { [PY_O_TS_HEAD] = 72,
		   [PY_O_TS_NEXT] = 8,
		   [PY_O_TS_TID] = 144,
		   [PY_O_TS_FRAME] = 56,
		   [PY_O_CF_FRAME] = 0,
		   [PY_O_FR_CODE] = 0,
		   [PY_O_FR_PREV] = 8,
		   [PY_O_FR_INSTR] = 56,
		   [PY_O_FR_ENTRY] = N,
		   [PY_O_FR_OWNER] = 70,
		   [PY_O_CO_ADAPTIVE] = 192,
		   [PY_O_CO_FIRSTLINE] = 68,
		   [PY_O_CO_ARGCOUNT] = 52,
		   [PY_O_CO_FLAGS] = 48,
		   [PY_O_CO_QUALNAME] = 128,
		   [PY_O_CO_FILENAME] = 112,
		   [PY_O_STR_DATA] = 40 },
	  .interp_main = 48,
	  .co_filename = 112,
	  .co_name = 120,
	  .co_qualname = 128,
	  .co_linetable = 136,
	  .ascii_size = 40,
	  .compact_size = 56 },
};
#undef N

struct py_code {
	uint64_t addr; /* 0 = empty */
	uint32_t check;
	char *name, *file;
	int64_t firstline;
	uint8_t *table;
	size_t ntable;
};

struct py_priv {
	const struct py_layout *lay;
	uint64_t code_type;
	struct py_code cache[PY_CACHE_ENTRIES];
};

static bool py_match(const char *base)
{
	return !strncmp(base, "python", 6) || !strncmp(base, "libpython", 9);
}

/* "3.9" from a file name like python3.9 or libpython3.9.so.1.0, for the unsupported message. */
static void py_version_from_name(const char *path, char *out, size_t n)
{
	const char *b = strrchr(path, '/'), *p;
	unsigned maj, min;

	b = b ? b + 1 : path;
	p = strstr(b, "python");
	out[0] = '\0';
	if (p && sscanf(p + 6, "%u.%u", &maj, &min) == 2)
		snprintf(out, n, "%u.%u", maj, min);
}

/* Check the code object layout against PyCode_Type's own member table. */
static int py_check_layout(const struct py_layout *lay, uint64_t code_type,
			   const struct agent_memreader *mem)
{
	static const char *const want_names[] = { "co_firstlineno", "co_argcount", "co_flags",
						  "co_filename",    "co_name",	   "co_qualname",
						  "co_linetable" };
	const uint16_t want_off[] = { lay->off[PY_O_CO_FIRSTLINE],
				      lay->off[PY_O_CO_ARGCOUNT],
				      lay->off[PY_O_CO_FLAGS],
				      lay->co_filename,
				      lay->co_name,
				      lay->co_qualname,
				      lay->co_linetable };
	unsigned seen = 0;
	uint64_t basicsize = 0, members = 0;

	if (mem->read(mem->ctx, code_type + PY_TP_BASICSIZE, &basicsize, 8) ||
	    mem->read(mem->ctx, code_type + PY_TP_MEMBERS, &members, 8) || !members)
		return -EFAULT;
	if (basicsize != lay->off[PY_O_CO_ADAPTIVE])
		return -ENOTSUP;
	for (int i = 0; i < PY_MEMBERS_MAX; i++) {
		uint8_t md[PY_MEMBERDEF_SIZE];
		uint64_t name_ptr, off;
		char name[32];

		if (mem->read(mem->ctx, members + (uint64_t)i * PY_MEMBERDEF_SIZE, md, sizeof(md)))
			return -EFAULT;
		memcpy(&name_ptr, md, 8);
		memcpy(&off, md + 16, 8);
		if (!name_ptr)
			break;
		if (agent_mem_read_str(mem, name_ptr, name, sizeof(name)))
			continue;
		for (size_t k = 0; k < PROF_ARRAY_SIZE(want_names); k++)
			if (!strcmp(name, want_names[k])) {
				if (off != want_off[k])
					return -ENOTSUP;
				seen |= 1u << k;
			}
	}
	return seen == (1u << PROF_ARRAY_SIZE(want_names)) - 1 ? 0 : -ENOTSUP;
}

static int py_attach(const char *path, uint64_t bias, const struct agent_memreader *mem,
		     struct agent_interp_attach *out)
{
	struct agent_interp_sym syms[] = {
		{ .name = "_PyRuntime" },
		{ .name = "_PyEval_EvalFrameDefault" },
		{ .name = "PyCode_Type" },
		{ .name = "Py_Version" },
		{ .name = "_PyEval_EvalFrameDefault.cold" },
	};
	const struct py_layout *lay = NULL;
	struct py_priv *pv;
	uint32_t hex = 0;
	int rc;

	rc = agent_interp_elf_symbols(path, syms, PROF_ARRAY_SIZE(syms));
	if (rc)
		return rc == -PROF_EFORMAT ? -ENOENT : rc;
	if (!syms[0].found || !syms[1].found || !syms[1].size)
		return -ENOENT;
	if (!syms[3].found) {
		/* Before 3.11 there is no Py_Version. */
		py_version_from_name(path, out->version, sizeof(out->version));
		return -ENOTSUP;
	}
	/* Unreadable (the process exited, or is not mapped yet): not a refusal, try again later. */
	if (mem->read(mem->ctx, bias + syms[3].value, &hex, sizeof(hex)))
		return -EFAULT;
	snprintf(out->version, sizeof(out->version), "%u.%u.%u", hex >> 24, (hex >> 16) & 0xff,
		 (hex >> 8) & 0xff);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(py_layouts); i++)
		if ((hex >> 24) == 3 && (int)((hex >> 16) & 0xff) == py_layouts[i].minor)
			lay = &py_layouts[i];
	if (!lay || !syms[2].found)
		return -ENOTSUP;
	rc = py_check_layout(lay, bias + syms[2].value, mem);
	if (rc == -ENOTSUP)
		snprintf(out->version + strlen(out->version),
			 sizeof(out->version) - strlen(out->version), " (other layout)");
	if (rc)
		return rc;
	memcpy(out->bpf.off, lay->off, sizeof(lay->off));
	for (size_t i = PY_O_MAX; i < PROFILE_INTERP_OFFS; i++)
		out->bpf.off[i] = PROFILE_INTERP_OFF_NONE;
	out->bpf.addr[PY_A_INTERP] = bias + syms[0].value + lay->interp_main;
	out->bpf.addr[PY_A_CODE_TYPE] = bias + syms[2].value;
	out->loops[0].lo = bias + syms[1].value;
	out->loops[0].hi = out->loops[0].lo + syms[1].size;
	out->nloops = 1;
	if (syms[4].found && syms[4].size) {
		out->loops[1].lo = bias + syms[4].value;
		out->loops[1].hi = out->loops[1].lo + syms[4].size;
		out->nloops = 2;
	}
	pv = xcalloc(1, sizeof(*pv));
	pv->lay = lay;
	pv->code_type = bias + syms[2].value;
	out->priv = pv;
	return 0;
}

void *agent_py_namer_new(int minor, uint64_t code_type)
{
	struct py_priv *pv;

	for (size_t i = 0; i < PROF_ARRAY_SIZE(py_layouts); i++) {
		if (py_layouts[i].minor != minor)
			continue;
		pv = xcalloc(1, sizeof(*pv));
		pv->lay = &py_layouts[i];
		pv->code_type = code_type;
		return pv;
	}
	return NULL;
}

static void py_code_clear(struct py_code *c)
{
	free(c->name);
	free(c->file);
	free(c->table);
	memset(c, 0, sizeof(*c));
}

static void py_free(void *priv)
{
	struct py_priv *pv = priv;

	if (!pv)
		return;
	for (size_t i = 0; i < PY_CACHE_ENTRIES; i++)
		py_code_clear(&pv->cache[i]);
	free(pv);
}

/* UTF-8 of code point @c into @o (room for 4); returns the bytes written. */
static size_t py_utf8(uint32_t c, char *o)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | (c >> 6));
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		if (c >= 0xd800 && c < 0xe000)
			c = 0xfffd; /* a lone surrogate is not UTF-8 */
		o[0] = (char)(0xe0 | (c >> 12));
		o[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	if (c > 0x10ffff)
		c = 0xfffd;
	if (c < 0x10000)
		return py_utf8(c, o);
	o[0] = (char)(0xf0 | (c >> 18));
	o[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	o[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

int agent_py_unicode_utf8(const uint8_t *data, size_t ndata, unsigned kind, char *out, size_t max)
{
	size_t o = 0;

	if (!max)
		return -E2BIG;
	if (kind != 1 && kind != 2 && kind != 4)
		return -PROF_ECORRUPT;
	for (size_t i = 0; i + kind <= ndata; i += kind) {
		uint32_t c = data[i];
		char u[4];
		size_t k;

		if (kind == 2)
			c = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8;
		else if (kind == 4)
			c = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 |
			    (uint32_t)data[i + 2] << 16 | (uint32_t)data[i + 3] << 24;
		k = py_utf8(c, u);
		if (o + k >= max)
			break;
		memcpy(out + o, u, k);
		o += k;
	}
	out[o] = '\0';
	return 0;
}

/* A str object at @addr as UTF-8 (cut at PY_NAME_MAX bytes) into a new string. */
static int py_read_str(const struct py_priv *pv, const struct agent_memreader *mem, uint64_t addr,
		       char **out)
{
	uint8_t head[80], data[PY_NAME_MAX * 4];

	PROF_ASSERT(pv->lay->ascii_size <= sizeof(head));
	uint64_t len;
	uint32_t state;
	unsigned kind;
	size_t hsz = pv->lay->compact_size, dsz;
	char buf[PY_NAME_MAX * 3 + 1];
	int rc;

	*out = NULL;
	if (!addr || mem->read(mem->ctx, addr, head, pv->lay->ascii_size))
		return -EFAULT;
	memcpy(&len, head + PY_UNICODE_LENGTH, 8);
	memcpy(&state, head + PY_UNICODE_STATE, 4);
	kind = (state >> 2) & 7;
	if (!(state & (1u << 5)) || len > (1u << 20))
		return -PROF_ECORRUPT; /* not compact: code objects' strings always are */
	if (state & (1u << 6)) {       /* compact ASCII: bytes right after the header */
		dsz = PROF_MIN(len, (uint64_t)PY_NAME_MAX);
		if (mem->read(mem->ctx, addr + pv->lay->ascii_size, buf, dsz))
			return -EFAULT;
		buf[dsz] = '\0';
		for (size_t i = 0; i < dsz; i++)
			if ((uint8_t)buf[i] >= 0x80)
				return -PROF_ECORRUPT;
		*out = xstrdup(buf);
		return 0;
	}
	if (kind != 1 && kind != 2 && kind != 4)
		return -PROF_ECORRUPT;
	dsz = PROF_MIN(len, (uint64_t)PY_NAME_MAX) * kind;
	if (mem->read(mem->ctx, addr + hsz, data, dsz))
		return -EFAULT;
	rc = agent_py_unicode_utf8(data, dsz, kind, buf, sizeof(buf));
	if (rc)
		return rc;
	*out = xstrdup(buf);
	return 0;
}

/* Objects/locations.md: 6-bit groups, low group first, bit 6 = more follow. */
static bool py_varint(const uint8_t *t, size_t n, size_t *i, uint32_t *v)
{
	uint32_t val = 0;
	unsigned shift = 0;

	for (;;) {
		uint8_t b;

		if (*i >= n || shift > 30)
			return false;
		b = t[(*i)++];
		val |= (uint32_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	*v = val;
	return true;
}

static bool py_svarint(const uint8_t *t, size_t n, size_t *i, int32_t *v)
{
	uint32_t u;

	if (!py_varint(t, n, i, &u))
		return false;
	*v = (u & 1) ? -(int32_t)(u >> 1) : (int32_t)(u >> 1);
	return true;
}

int64_t agent_py_linetable_line(const uint8_t *t, size_t n, int64_t firstline, uint64_t index)
{
	size_t i = 0;
	uint64_t at = 0; /* code units covered so far */
	int64_t line = firstline;

	while (i < n) {
		uint8_t b = t[i++];
		unsigned code = (b >> 3) & 15, len = (b & 7) + 1;
		int32_t delta = 0;
		uint32_t skip;
		bool none = false;

		if (!(b & 0x80))
			return 0; /* not the first byte of an entry: corrupt */
		switch (code) {
		case 15: /* no location */
			none = true;
			break;
		case 14: /* long form: line delta, end line delta, column, end column */
			if (!py_svarint(t, n, &i, &delta) || !py_varint(t, n, &i, &skip) ||
			    !py_varint(t, n, &i, &skip) || !py_varint(t, n, &i, &skip))
				return 0;
			break;
		case 13: /* no column */
			if (!py_svarint(t, n, &i, &delta))
				return 0;
			break;
		case 10:
		case 11:
		case 12: /* one line, delta code - 10, then column and end column bytes */
			delta = (int32_t)code - 10;
			if (i + 2 > n)
				return 0;
			i += 2;
			break;
		default: /* short form, same line, one column byte */
			if (i + 1 > n)
				return 0;
			i += 1;
			break;
		}
		line += delta;
		if (index < at + len)
			return none ? 0 : line;
		at += len;
	}
	return 0;
}

/* What BPF's py_str_check computes for the str at @str, read the same way. */
static uint32_t py_str_check(const struct py_layout *lay, const struct agent_memreader *mem,
			     uint64_t str)
{
	uint64_t len = 0, head = 0, tail = 0, data = str + lay->off[PY_O_STR_DATA];

	if (!str || mem->read(mem->ctx, str + PY_STR_LENGTH, &len, 8) || len > (1u << 20))
		return 0;
	if (len && mem->read(mem->ctx, data, &head, 8))
		return 0;
	if (len < 8)
		head &= (1ULL << ((len & 7) * 8)) - 1;
	else if (mem->read(mem->ctx, data + len - 8, &tail, 8))
		return 0;
	return PY_STR_CHECK(len, head, tail);
}

uint32_t agent_py_code_check(const void *priv, const struct agent_memreader *mem, uint64_t code)
{
	const struct py_priv *pv = priv;
	const struct py_layout *lay = pv->lay;
	uint8_t head[PY_CODE_HEAD_MAX];
	int32_t firstline, argcount, flags;
	uint64_t qual, file;

	if (lay->off[PY_O_CO_ADAPTIVE] > sizeof(head) ||
	    mem->read(mem->ctx, code, head, lay->off[PY_O_CO_ADAPTIVE]))
		return 0;
	memcpy(&firstline, head + lay->off[PY_O_CO_FIRSTLINE], 4);
	memcpy(&argcount, head + lay->off[PY_O_CO_ARGCOUNT], 4);
	memcpy(&flags, head + lay->off[PY_O_CO_FLAGS], 4);
	memcpy(&qual, head + lay->co_qualname, 8);
	memcpy(&file, head + lay->co_filename, 8);
	return PY_CODE_CHECK(firstline, argcount, flags) ^ py_str_check(lay, mem, qual) ^
	       (py_str_check(lay, mem, file) * 3);
}

static int py_name_frame(void *priv, const struct agent_memreader *mem,
			 const struct profile_interp_frame *f, struct agent_interp_name *out)
{
	struct py_priv *pv = priv;
	const struct py_layout *lay = pv->lay;
	struct py_code *c = &pv->cache[(f->addr >> 4) * 0x9e3779b97f4a7c15ULL >> 54];
	uint8_t head[PY_CODE_HEAD_MAX];
	uint64_t type, name_ptr, file_ptr, table_ptr, table_len;
	int32_t firstline, argcount, flags;
	int rc;

	if (c->addr != f->addr || c->check != f->check) {
		py_code_clear(c);
		if (lay->off[PY_O_CO_ADAPTIVE] > sizeof(head) ||
		    mem->read(mem->ctx, f->addr, head, lay->off[PY_O_CO_ADAPTIVE]))
			return -EFAULT;
		memcpy(&type, head + PY_CODE_TYPE_FIELD, 8);
		memcpy(&firstline, head + lay->off[PY_O_CO_FIRSTLINE], 4);
		memcpy(&argcount, head + lay->off[PY_O_CO_ARGCOUNT], 4);
		memcpy(&flags, head + lay->off[PY_O_CO_FLAGS], 4);
		memcpy(&name_ptr, head + lay->co_qualname, 8);
		memcpy(&file_ptr, head + lay->co_filename, 8);
		(void)argcount;
		(void)flags;
		if (type != pv->code_type || agent_py_code_check(pv, mem, f->addr) != f->check)
			return -ESTALE;
		memcpy(&table_ptr, head + lay->co_linetable, 8);
		if ((rc = py_read_str(pv, mem, name_ptr, &c->name)) ||
		    (rc = py_read_str(pv, mem, file_ptr, &c->file)))
			goto fail;
		if (table_ptr) {
			if (mem->read(mem->ctx, table_ptr + PY_BYTES_SIZE, &table_len, 8)) {
				rc = -EFAULT;
				goto fail;
			}
			if (table_len > PY_LINETABLE_MAX) {
				rc = -PROF_ECORRUPT;
				goto fail;
			}
			c->table = xmalloc(table_len ? table_len : 1);
			c->ntable = table_len;
			if (mem->read(mem->ctx, table_ptr + PY_BYTES_DATA, c->table, table_len)) {
				rc = -EFAULT;
				goto fail;
			}
		}
		c->addr = f->addr;
		c->check = f->check;
		c->firstline = firstline;
	}
	out->function = c->name;
	out->file = c->file;
	out->start_line = c->firstline;
	out->line = agent_py_linetable_line(c->table, c->ntable, c->firstline, f->aux);
	return 0;
fail:
	py_code_clear(c);
	return rc;
}

const struct agent_interp_ops agent_interp_python = {
	.name = "cpython",
	.runtime = PROFILE_RT_PYTHON,
	.match = py_match,
	.attach = py_attach,
	.name_frame = py_name_frame,
	.free = py_free,
};
