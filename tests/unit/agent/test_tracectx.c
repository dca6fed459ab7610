// SPDX-License-Identifier: Apache-2.0
/*
 * test_tracectx.c - the trace-context decoders (agent/tracectx.h): raw
 * BPF events (goroutine labels, OTel records) to a sample's link and
 * attributes, the Go version in .go.buildinfo, the per-version offset
 * table, and the OTel symbol's TLS offset in a real executable (this
 * test, which defines otel_thread_ctx_v1: the offset found from its ELF
 * file must be where the variable is, from the thread pointer), and
 * the TLS relocations and GOT slots of a shared library's variable
 * (Elf64_Rela records as a linker writes them; slots laid out in this
 * process's memory as glibc fills them, read back with process_vm_readv).
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/tracectx.h"

#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

__attribute__((visibility("default"), used)) __thread void *otel_thread_ctx_v1;

static void put_label(struct profile_ctx_event *e, const char *k, const char *v)
{
	struct profile_ctx_label *l = &e->labels[e->n++];
	size_t kl = strlen(k), vl = strlen(v);

	l->klen = (uint8_t)PROF_MIN(kl, 255u);
	l->vlen = (uint8_t)PROF_MIN(vl, 255u);
	memcpy(l->key, k, PROF_MIN(kl, (size_t)PROFILE_CTX_KEY));
	memcpy(l->val, v, PROF_MIN(vl, (size_t)PROFILE_CTX_VAL));
}

static void test_decode_go(void **state)
{
	static const uint8_t trace[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
					   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
	static const uint8_t span[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
	const char *allow[] = { "tenant" };
	struct profile_ctx_event e = { .kind = PROFILE_EV_CTX, .flags = PROFILE_CTXF_GO_LABELS };
	struct agent_tracectx_sample s;

	(void)state;
	put_label(&e, "span_id", "00F067aa0ba902b7");
	put_label(&e, "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736");
	put_label(&e, "span_name", "GET /alpha");
	put_label(&e, "tenant", "acme");
	put_label(&e, "http.route", "/alpha");
	put_label(&e, "a_key_longer_than_16", "x"); /* cut in BPF: dropped */
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_true(s.has_link);
	assert_memory_equal(s.trace_id, trace, 16);
	assert_memory_equal(s.span_id, span, 8);
	assert_int_equal(s.nattrs, 3);
	assert_string_equal(s.attrs[0].key, "span_name");
	assert_string_equal(s.attrs[0].val, "GET /alpha");
	assert_string_equal(s.attrs[1].key, "tenant");
	assert_string_equal(s.attrs[2].key, "http.route");
	assert_string_equal(s.attrs[2].val, "/alpha");

	/* The allow-list keeps tenant; span_name always stays. */
	assert_true(agent_tracectx_decode(&e, allow, 1, &s));
	assert_int_equal(s.nattrs, 2);
	assert_string_equal(s.attrs[1].key, "tenant");
	assert_true(agent_tracectx_decode(&e, allow, 0, &s));
	assert_int_equal(s.nattrs, 1);
}

/* The link's labels found past the ten read in order (PROFILE_CTXF_GO_IDS). */
static void test_decode_ids(void **state)
{
	static const uint8_t trace[16] = { 0x4b, 0xf9, 0x2f, 0x35, 0x77, 0xb3, 0x4d, 0xa6,
					   0xa3, 0xce, 0x92, 0x9d, 0x0e, 0x0e, 0x47, 0x36 };
	static const uint8_t span[8] = { 0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7 };
	struct profile_ctx_event e = { .kind = PROFILE_EV_CTX,
				       .flags = PROFILE_CTXF_GO_LABELS | PROFILE_CTXF_GO_MORE };
	struct profile_ctx_event ids = { 0 };
	struct agent_tracectx_sample s;
	char k[16];

	(void)state;
	for (int i = 0; i < PROFILE_CTX_LABELS; i++) {
		snprintf(k, sizeof(k), "a%02d", i);
		put_label(&e, k, "v");
	}
	put_label(&ids, "trace_id", "4bf92f3577b34da6a3ce929d0e0e4736");
	put_label(&ids, "span_id", "00f067aa0ba902b7");
	memcpy(e.ids, ids.labels, sizeof(e.ids));
	/* Without the flag the ids slots are not read. */
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_false(s.has_link);
	assert_int_equal(s.nattrs, PROFILE_CTX_LABELS);
	e.flags |= PROFILE_CTXF_GO_IDS;
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_true(s.has_link);
	assert_memory_equal(s.trace_id, trace, 16);
	assert_memory_equal(s.span_id, span, 8);
	assert_int_equal(s.nattrs, PROFILE_CTX_LABELS);
	/* Only trace_id and span_id are taken from there: nothing else becomes an attribute. */
	ids.n = 0;
	put_label(&ids, "tenant", "acme");
	put_label(&ids, "span_id", "00f067aa0ba902b7");
	memcpy(e.ids, ids.labels, sizeof(e.ids));
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_int_equal(s.nattrs, PROFILE_CTX_LABELS);
	assert_true(s.has_link);
	assert_memory_equal(s.span_id, span, 8);
	assert_memory_equal(s.trace_id, (uint8_t[16]){ 0 }, 16);
}

static void test_decode_bad(void **state)
{
	struct profile_ctx_event e = { .kind = PROFILE_EV_CTX };
	struct agent_tracectx_sample s;
	char big[80];

	(void)state;
	assert_false(agent_tracectx_decode(&e, NULL, 0, &s));
	/* Not hex, wrong length: no link; the labels are not attributes either. */
	put_label(&e, "trace_id", "4bf92f3577b34da6a3ce929d0e0e473g");
	put_label(&e, "span_id", "00f067aa0ba902b");
	assert_false(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_false(s.has_link);
	/* A span ID alone is a link with a zero trace ID. */
	e.n = 0;
	put_label(&e, "span_id", "00f067aa0ba902b7");
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_true(s.has_link);
	assert_int_equal(s.trace_id[0] | s.trace_id[15], 0);
	assert_int_equal(s.span_id[7], 0xb7);
	/* A long value is cut at PROFILE_CTX_VAL, a cut UTF-8 sequence dropped. */
	e.n = 0;
	memset(big, 'a', sizeof(big));
	memcpy(big + 47, "\xc3\xa9", 2); /* e-acute in bytes 47, 48: cut at 48, so dropped */
	big[sizeof(big) - 1] = '\0';
	put_label(&e, "k", big);
	/* NUL inside a key or value: dropped. */
	put_label(&e, "n", "x");
	e.labels[1].val[0] = '\0';
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_int_equal(s.nattrs, 1);
	assert_int_equal(strlen(s.attrs[0].val), 47);
	/* A label count past the bound reads no further than the array. */
	e.n = 1000;
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
}

static void test_decode_otel(void **state)
{
	struct profile_ctx_event e = { .kind = PROFILE_EV_CTX, .flags = PROFILE_CTXF_OTEL };
	struct agent_tracectx_sample s;

	(void)state;
	/* All-zero trace ID: no context. */
	assert_false(agent_tracectx_decode(&e, NULL, 0, &s));
	e.trace_id[0] = 0x11;
	e.trace_id[15] = 0x22;
	e.span_id[0] = 0x33;
	put_label(&e, "span_id", "00f067aa0ba902b7"); /* the record wins */
	assert_true(agent_tracectx_decode(&e, NULL, 0, &s));
	assert_true(s.has_link);
	assert_int_equal(s.trace_id[0], 0x11);
	assert_int_equal(s.trace_id[15], 0x22);
	assert_int_equal(s.span_id[0], 0x33);
}

static size_t buildinfo(uint8_t *b, uint8_t flags, const char *v)
{
	size_t n = strlen(v);

	memset(b, 0, 64);
	memcpy(b, "\xff Go buildinf:", 14);
	b[14] = 8;
	b[15] = flags;
	b[32] = (uint8_t)n;
	memcpy(b + 33, v, n);
	return 33 + n;
}

static void test_go_version(void **state)
{
	uint8_t b[64];
	char out[32];
	size_t n;

	(void)state;
	n = buildinfo(b, 2, "go1.19.8");
	assert_int_equal(agent_tracectx_go_version(b, n, out, sizeof(out)), 0);
	assert_string_equal(out, "go1.19.8");
	assert_int_equal(agent_tracectx_go_version(b, n, out, 8), -E2BIG);
	assert_int_equal(agent_tracectx_go_version(b, n - 1, out, sizeof(out)), -PROF_EFORMAT);
	n = buildinfo(b, 0, "go1.19.8"); /* pointer strings (before Go 1.18) */
	assert_int_equal(agent_tracectx_go_version(b, n, out, sizeof(out)), -PROF_EFORMAT);
	n = buildinfo(b, 2, "devel");
	assert_int_equal(agent_tracectx_go_version(b, n, out, sizeof(out)), -PROF_EFORMAT);
	n = buildinfo(b, 2, "go1.26.8");
	b[32] = 0x80; /* a varint running past the end */
	memset(b + 33, 0xff, sizeof(b) - 33);
	assert_int_equal(agent_tracectx_go_version(b, sizeof(b), out, sizeof(out)), -PROF_EFORMAT);
}

static void test_go_table(void **state)
{
	struct profile_ctx_proc p;

	(void)state;
	memset(&p, 0, sizeof(p));
	assert_int_equal(agent_tracectx_go_table(1, 19, &p), 0);
	assert_int_equal(p.flags, PROFILE_CTX_GO | PROFILE_CTX_GO_MAP);
	assert_int_equal(p.go_m, 48);
	assert_int_equal(p.go_curg, 192);
	assert_int_equal(p.go_labels, 360);
	memset(&p, 0, sizeof(p));
	assert_int_equal(agent_tracectx_go_table(1, 26, &p), 0);
	assert_int_equal(p.flags, PROFILE_CTX_GO);
	assert_int_equal(p.go_curg, 184);
	assert_int_equal(p.go_labels, 352);
	assert_int_equal(agent_tracectx_go_table(1, 22, &p), -ENOTSUP);
	assert_int_equal(agent_tracectx_go_table(2, 19, &p), -ENOTSUP);
}

static void test_inspect_self(void **state)
{
	struct agent_tracectx_info info;
	intptr_t tp = (intptr_t)__builtin_thread_pointer();

	(void)state;
	assert_int_equal(agent_tracectx_inspect("/proc/self/exe", &info), 0);
	assert_int_equal(info.proc.flags, PROFILE_CTX_OTEL);
	assert_string_equal(info.go_version, "");
	assert_int_equal(info.proc.otel_tls_off, (intptr_t)&otel_thread_ctx_v1 - tp);
	assert_int_equal(agent_tracectx_inspect("/nonexistent", &info), -ENOENT);
	assert_int_equal(agent_tracectx_inspect("/proc/self/status", &info), -PROF_EFORMAT);
}

static void put_rela(uint8_t *b, uint64_t off, uint32_t sym, uint32_t type, int64_t addend)
{
	uint64_t info = (uint64_t)sym << 32 | type;

	memcpy(b, &off, 8);
	memcpy(b + 8, &info, 8);
	memcpy(b + 16, &addend, 8);
}

static void test_tls_relocs(void **state)
{
	uint8_t r[6 * 24];
	struct agent_tracectx_tlsref ref;

	(void)state;
	/* libotelctx.so built with the default dialect: an LD pair (symbol 0), then GD. */
	put_rela(r, 0x3fa8, 0, 16, 0);	     /* R_X86_64_DTPMOD64 of the module itself */
	put_rela(r + 24, 0x3fb8, 1, 6, 0);   /* R_X86_64_GLOB_DAT of another symbol */
	put_rela(r + 48, 0x3fc0, 6, 16, 0);  /* DTPMOD64 otel_thread_ctx_v1 */
	put_rela(r + 72, 0x3fc8, 6, 17, 0);  /* DTPOFF64 otel_thread_ctx_v1 */
	put_rela(r + 96, 0x4000, 4, 7, 0);   /* R_X86_64_JUMP_SLOT */
	put_rela(r + 120, 0x5000, 6, 17, 8); /* a second DTPOFF64: the first pair stays */
	memset(&ref, 0, sizeof(ref));
	assert_int_equal(agent_tracectx_tls_relocs(r, sizeof(r), 6, &ref), AGENT_TRACECTX_TLS_GD);
	assert_int_equal(ref.slot, 0x3fc0);
	assert_int_equal(ref.slot_off, 0x3fc8);
	assert_int_equal(ref.addend, 0);
	/* Half a pair is not GD; the other half in another section completes it. */
	memset(&ref, 0, sizeof(ref));
	assert_int_equal(agent_tracectx_tls_relocs(r, 3 * 24, 6, &ref), AGENT_TRACECTX_TLS_NONE);
	assert_int_equal(agent_tracectx_tls_relocs(r + 72, 24 + 23, 6, &ref),
			 AGENT_TRACECTX_TLS_GD);
	assert_int_equal(ref.slot, 0x3fc0);
	/* Another symbol index finds nothing. */
	memset(&ref, 0, sizeof(ref));
	assert_int_equal(agent_tracectx_tls_relocs(r, sizeof(r), 5, &ref), AGENT_TRACECTX_TLS_NONE);
	/* TPOFF64 wins over GD, TLSDESC over both, whichever section comes first. */
	memset(&ref, 0, sizeof(ref));
	put_rela(r + 24, 0x3fd0, 6, 18, 0); /* R_X86_64_TPOFF64 */
	assert_int_equal(agent_tracectx_tls_relocs(r, sizeof(r), 6, &ref), AGENT_TRACECTX_TLS_IE);
	assert_int_equal(ref.slot, 0x3fd0);
	put_rela(r, 0x4010, 6, 36, 0); /* R_X86_64_TLSDESC, as in .rela.plt */
	assert_int_equal(agent_tracectx_tls_relocs(r, 24, 6, &ref), AGENT_TRACECTX_TLS_DESC);
	assert_int_equal(agent_tracectx_tls_relocs(r + 24, sizeof(r) - 24, 6, &ref),
			 AGENT_TRACECTX_TLS_DESC);
	assert_int_equal(ref.slot, 0x4010);
	memset(&ref, 0, sizeof(ref));
	assert_int_equal(agent_tracectx_tls_relocs(r, 23, 6, &ref), AGENT_TRACECTX_TLS_NONE);
}

static void tlsdesc_return(void)
{
}

static void test_tls_locate(void **state)
{
	const struct agent_memreader mem = { agent_procmem_read, (void *)(uintptr_t)getpid() };
	uint64_t got[2], dyn[3] = { 3, 32, 1 }; /* tlsdesc_dynamic_arg {module, offset, gen} */
	struct agent_tracectx_tlsref desc = { AGENT_TRACECTX_TLS_DESC, 0x4010, 0, 0 },
				     ie = { AGENT_TRACECTX_TLS_IE, 0x4010, 0, 0 },
				     gd = { AGENT_TRACECTX_TLS_GD, 0x4010, 0x4018, 0 };
	uint64_t bias = (uint64_t)(uintptr_t)got - 0x4010;
	struct profile_ctx_proc p;

	(void)state;
	/* Static TLS: {_dl_tlsdesc_return, offset from the thread pointer}. */
	got[0] = (uint64_t)(uintptr_t)tlsdesc_return;
	got[1] = (uint64_t)-40;
	memset(&p, 0, sizeof(p));
	assert_int_equal(agent_tracectx_tls_locate(&desc, bias, 32, &mem, &p), 0);
	assert_int_equal(p.flags, PROFILE_CTX_OTEL);
	assert_int_equal(p.otel_tls_off, -40);
	/* Dynamic TLS: arg -> {module 3, offset 32}, checked against st_value + addend. */
	got[1] = (uint64_t)(uintptr_t)dyn;
	memset(&p, 0, sizeof(p));
	assert_int_equal(agent_tracectx_tls_locate(&desc, bias, 32, &mem, &p), 0);
	assert_int_equal(p.flags, PROFILE_CTX_OTEL | PROFILE_CTX_OTEL_DTV);
	assert_int_equal(p.otel_mod, 3);
	assert_int_equal(p.otel_tls_off, 32);
	memset(&p, 0, sizeof(p));
	assert_int_equal(agent_tracectx_tls_locate(&desc, bias, 24, &mem, &p), -ENOENT);
	assert_int_equal(p.flags, 0);
	got[1] = 8; /* an argument that points nowhere */
	assert_int_equal(agent_tracectx_tls_locate(&desc, bias, 32, &mem, &p), -EFAULT);
	got[0] = 0; /* not relocated */
	got[1] = (uint64_t)-40;
	assert_int_equal(agent_tracectx_tls_locate(&desc, bias, 32, &mem, &p), -ENOENT);
	assert_int_equal(agent_tracectx_tls_locate(&desc, 8, 32, &mem, &p), -EFAULT);

	/* Initial exec: the slot is the offset; it must be negative. */
	got[0] = (uint64_t)-16;
	memset(&p, 0, sizeof(p));
	assert_int_equal(agent_tracectx_tls_locate(&ie, bias, 32, &mem, &p), 0);
	assert_int_equal(p.otel_tls_off, -16);
	got[0] = 16;
	assert_int_equal(agent_tracectx_tls_locate(&ie, bias, 32, &mem, &p), -ENOENT);

	/* General dynamic: {module ID, DTPOFF64 = st_value + addend}. */
	got[0] = 1;
	got[1] = 32;
	memset(&p, 0, sizeof(p));
	assert_int_equal(agent_tracectx_tls_locate(&gd, bias, 32, &mem, &p), 0);
	assert_int_equal(p.flags, PROFILE_CTX_OTEL | PROFILE_CTX_OTEL_DTV);
	assert_int_equal(p.otel_mod, 1);
	assert_int_equal(p.otel_tls_off, 32);
	gd.addend = 8;
	assert_int_equal(agent_tracectx_tls_locate(&gd, bias, 24, &mem, &p), 0);
	gd.addend = 0;
	got[1] = 0; /* DTPOFF64 not written yet */
	assert_int_equal(agent_tracectx_tls_locate(&gd, bias, 32, &mem, &p), -ENOENT);
	got[1] = 32;
	got[0] = 0;
	assert_int_equal(agent_tracectx_tls_locate(&gd, bias, 32, &mem, &p), -ENOENT);
	got[0] = 70000;
	assert_int_equal(agent_tracectx_tls_locate(&gd, bias, 32, &mem, &p), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_decode_go),    cmocka_unit_test(test_decode_ids),
		cmocka_unit_test(test_decode_bad),   cmocka_unit_test(test_decode_otel),
		cmocka_unit_test(test_go_version),   cmocka_unit_test(test_go_table),
		cmocka_unit_test(test_inspect_self), cmocka_unit_test(test_tls_relocs),
		cmocka_unit_test(test_tls_locate),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
