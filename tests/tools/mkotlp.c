// SPDX-License-Identifier: Apache-2.0
/*
 * mkotlp.c - test helper: write a small OTLP ExportProfilesServiceRequest
 * (protobuf) built from the command line, so server tests need no corpus.
 *
 *   mkotlp [--attr KEY=VALUE]... [--type TYPE:UNIT] [--time-ms MS]
 *          [--gzip] --stack 'main;foo;bar=70' [--stack ...] OUT
 *   mkotlp --bad missing-location OUT
 *
 * A workload over time, in one request: --count N profiles, the k-th at
 * time MS + k * --every-ms (default 10000), each with every --stack; a
 * --wave 'FRAMES=VALUE' stack is added only to the profiles in the "on"
 * half of a square wave of half-period --wave-half-ms (default 20000):
 * those whose offset k * every-ms lies in [0, half), [2 half, 3 half), ...
 *
 * A stack lists frames root first, separated by ';', then '=' and the
 * value. A frame "@PATH@BUILDID@0xADDR" is an unsymbolized native frame
 * (a location with a mapping and an address but no lines), for testing
 * query-time symbolization. A frame "NAME!TYPE" or "NAME!TYPE!PATH" is a
 * function frame whose location has profile.frame.type TYPE (may be
 * empty) on a mapping of file PATH (default: none; "[TYPE]" for types
 * other than native and kernel, the agent's interpreter pseudo mappings).
 * After a --stack, --sattr KEY=VALUE gives its
 * samples a per-sample attribute (OTLP Sample attribute, e.g.
 * thread.name; repeatable) and --link TRACEHEX:SPANHEX a link (32 and 16
 * hex digits). Valid requests are built as a model profile
 * and encoded with fmt_otlp_encode; "--bad missing-location" writes a
 * hand-made request whose stack refers to a location that does not exist
 * (the encoder would never produce it). OUT may be "-" for stdout.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/mem.h"
#include "base/parse.h"
#include "format/otlp.h"
#include "model/profile.h"

#include <unistd.h>

static void die(const char *fmt, ...) PROF_PRINTF(1, 2);
static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "mkotlp: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	exit(2);
}

/* --- the hand-made bad request -------------------------------------------- */

static void pb_varint(struct buf *b, uint64_t v)
{
	unsigned char t[10];
	size_t n = 0;

	do {
		t[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	PROF_ASSERT(buf_add(b, t, n) == 0);
}

static void pb_int(struct buf *b, unsigned field, uint64_t v)
{
	pb_varint(b, field << 3 | 0);
	pb_varint(b, v);
}

static void pb_bytes(struct buf *b, unsigned field, const void *p, size_t n)
{
	pb_varint(b, field << 3 | 2);
	pb_varint(b, n);
	PROF_ASSERT(buf_add(b, p, n) == 0);
}

static void pb_msg(struct buf *b, unsigned field, struct buf *m)
{
	pb_bytes(b, field, m->p ? m->p : "", m->len);
	buf_reset(m);
}

static void bad_missing_location(struct buf *out)
{
	struct buf dict = BUF_INIT, m = BUF_INIT, m2 = BUF_INIT, prof = BUF_INIT;
	struct buf sp = BUF_INIT, rp = BUF_INIT;
	static const char *strs[] = { "", "cpu", "nanoseconds", "main" };

	/* dictionary: mapping_table [{}], location_table [{}, {lines [{function 1}]}],
	 * function_table [{}, {name 3}], string_table, stack_table [{}, {locs [1, 7]}] */
	pb_msg(&dict, 1, &m);
	pb_msg(&dict, 2, &m);
	pb_int(&m2, 1, 1);
	pb_msg(&m, 3, &m2);
	pb_msg(&dict, 2, &m);
	pb_msg(&dict, 3, &m);
	pb_int(&m, 1, 3);
	pb_msg(&dict, 3, &m);
	for (size_t i = 0; i < PROF_ARRAY_SIZE(strs); i++)
		pb_bytes(&dict, 5, strs[i], strlen(strs[i]));
	pb_msg(&dict, 7, &m);
	pb_varint(&m2, 1);
	pb_varint(&m2, 7); /* location 7: the table has 2 entries */
	pb_msg(&m, 1, &m2);
	pb_msg(&dict, 7, &m);

	/* profile: sample_type {cpu, nanoseconds}, one sample {stack 1, values [10]} */
	pb_int(&m, 1, 1);
	pb_int(&m, 2, 2);
	pb_msg(&prof, 1, &m);
	pb_int(&m, 1, 1);
	pb_varint(&m2, 10);
	pb_msg(&m, 4, &m2);
	pb_msg(&prof, 2, &m);
	pb_int(&m, 1, 1);
	pb_int(&m, 2, 2);
	pb_msg(&prof, 5, &m);
	pb_int(&prof, 6, 10000000);

	pb_msg(&sp, 2, &prof);
	pb_msg(&rp, 2, &sp);
	pb_msg(out, 1, &rp);
	pb_msg(out, 2, &dict);
	buf_release(&dict);
	buf_release(&m);
	buf_release(&m2);
	buf_release(&prof);
	buf_release(&sp);
	buf_release(&rp);
}

/* --- valid requests through the model and the real encoder ------------------ */

struct frames {
	struct strtab names; /* frame text -> id; loc_of[id] = location */
	VEC(uint32_t) loc_of;
};

static uint32_t frame_location(struct model_profile *p, struct frames *fr, const char *f, size_t n)
{
	uint32_t before = fr->names.n, id = strtab_intern(&fr->names, f, n);

	if (fr->names.n == before)
		return fr->loc_of.v[id];
	char *s = xstrndup(f, n);
	uint32_t loc;
	if (s[0] == '@') {
		/* @PATH@BUILDID@ADDR */
		char *b = strchr(s + 1, '@'), *a = b ? strchr(b + 1, '@') : NULL;
		uint64_t addr;

		if (!a)
			die("native frame '%s': expected @PATH@BUILDID@0xADDR", s);
		*b++ = '\0';
		*a++ = '\0';
		if (a[0] != '0' || (a[1] != 'x' && a[1] != 'X') || !a[2])
			die("native frame address '%s': expected 0xHEX", a);
		addr = 0;
		for (const char *h = a + 2; *h; h++) {
			int d = *h >= '0' && *h <= '9'	 ? *h - '0'
				: *h >= 'a' && *h <= 'f' ? *h - 'a' + 10
				: *h >= 'A' && *h <= 'F' ? *h - 'A' + 10
							 : -1;
			if (d < 0 || addr >> 60)
				die("native frame address '%s': expected 0xHEX", a);
			addr = addr << 4 | (uint64_t)d;
		}
		struct model_mapping m = { 0 };
		m.memory_start = 0;
		m.memory_limit = UINT64_MAX;
		m.filename = model_intern(p, s + 1);
		m.build_id = model_intern(p, b);
		loc = model_location_add(p, model_mapping_add(p, &m), addr, NULL, 0);
	} else {
		struct model_line ln = { 0 };
		char *ft = strchr(s, '!'), *path = NULL, pseudo[64];
		uint32_t map = 0;

		if (ft) {
			*ft++ = '\0';
			path = strchr(ft, '!');
			if (path)
				*path++ = '\0';
			else if (*ft && strcmp(ft, "native") && strcmp(ft, "kernel") &&
				 strlen(ft) < sizeof(pseudo) - 2)
				path = (snprintf(pseudo, sizeof(pseudo), "[%s]", ft), pseudo);
		}
		if (path && *path) {
			struct model_mapping m = { 0 };

			m.memory_limit = UINT64_MAX;
			m.filename = model_intern(p, path);
			map = model_mapping_add(p, &m);
		}
		ln.function = model_function_intern(p, model_intern(p, s), 0, 0, 0);
		loc = model_location_add(p, map, 0, &ln, 1);
		if (ft && *ft)
			p->locations.v[loc].frame_type = model_intern(p, ft);
	}
	free(s);
	VEC_RESERVE(&fr->loc_of, id + 1 - fr->loc_of.n);
	while (fr->loc_of.n <= id)
		fr->loc_of.v[fr->loc_of.n++] = 0;
	fr->loc_of.v[id] = loc;
	return loc;
}

/* A --stack with its --sattr and --link options. */
struct stack_opt {
	const char *spec;
	const char *sattrs[16];
	int nsattrs;
	const char *link;
};

static int hexdig(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

static void parse_hex(const char *s, uint8_t *out, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		int a = hexdig(s[2 * i]), b = a < 0 ? -1 : hexdig(s[2 * i + 1]);

		if (a < 0 || b < 0)
			die("--link: %s: expected %zu lowercase hex digits", what, 2 * n);
		out[i] = (uint8_t)(a << 4 | b);
	}
}

static void add_stack(struct model_profile *p, struct frames *fr, const struct stack_opt *so,
		      int64_t ts)
{
	const char *spec = so->spec;
	const char *eq = strrchr(spec, '=');
	VEC(uint32_t) locs = { 0 };
	char *vs;
	int64_t value;

	if (!eq)
		die("stack '%s': expected FRAMES=VALUE", spec);
	vs = xstrdup(eq + 1);
	if (parse_i64(vs, &value))
		die("stack '%s': bad value", spec);
	free(vs);
	for (const char *s = spec; s < eq;) {
		size_t n = strcspn(s, ";=");

		if (n > (size_t)(eq - s))
			n = (size_t)(eq - s);
		VEC_PUSH(&locs, frame_location(p, fr, s, n));
		s += n;
		if (*s == ';')
			s++;
	}
	/* Samples list locations leaf first. */
	for (size_t i = 0; i < locs.n / 2; i++) {
		uint32_t t = locs.v[i];

		locs.v[i] = locs.v[locs.n - 1 - i];
		locs.v[locs.n - 1 - i] = t;
	}
	uint32_t off = model_stack_add(p, locs.v, (uint32_t)locs.n);
	struct model_label ls[16];
	uint32_t link = 0;
	memset(ls, 0, sizeof(ls));
	for (int i = 0; i < so->nsattrs; i++) {
		const char *e = strchr(so->sattrs[i], '=');
		char *key;

		if (!e)
			die("--sattr: expected KEY=VALUE");
		key = xstrndup(so->sattrs[i], (size_t)(e - so->sattrs[i]));
		ls[i].key = model_intern(p, key);
		ls[i].str = model_intern(p, e + 1);
		free(key);
	}
	if (so->link) {
		struct model_link k;

		if (strlen(so->link) != 49 || so->link[32] != ':')
			die("--link: expected TRACE:SPAN, 32 and 16 hex digits");
		parse_hex(so->link, k.trace_id, 16, "trace id");
		parse_hex(so->link + 33, k.span_id, 8, "span id");
		VEC_PUSH(&p->links, k);
		link = (uint32_t)p->links.n - 1;
	}
	model_sample_add(p, off, (uint32_t)locs.n, &value, ls, (uint32_t)so->nsattrs, ts, link);
	VEC_FREE(&locs);
}

int main(int argc, char **argv)
{
	struct frames fr;
	struct buf out = BUF_INIT;
	const char *type = "cpu:nanoseconds", *bad = NULL, *path = NULL;
	int64_t time_ms = prof_now_ns() / 1000000;
	bool gzip = false;
	VEC(struct stack_opt) stacks = { 0 };
	VEC(const char *) attrs = { 0 };
	VEC(struct stack_opt) waves = { 0 };
	VEC(struct model_profile *) profs = { 0 };
	int64_t count = 1, every_ms = 10000, half_ms = 20000;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--attr") && i + 1 < argc)
			VEC_PUSH(&attrs, argv[++i]);
		else if (!strcmp(a, "--stack") && i + 1 < argc) {
			struct stack_opt so = { .spec = argv[++i] };

			VEC_PUSH(&stacks, so);
		} else if (!strcmp(a, "--sattr") && i + 1 < argc) {
			if (!stacks.n || stacks.v[stacks.n - 1].nsattrs == 16)
				die("--sattr: follows a --stack, at most 16 times");
			stacks.v[stacks.n - 1].sattrs[stacks.v[stacks.n - 1].nsattrs++] = argv[++i];
		} else if (!strcmp(a, "--link") && i + 1 < argc) {
			if (!stacks.n)
				die("--link: follows a --stack");
			stacks.v[stacks.n - 1].link = argv[++i];
		} else if (!strcmp(a, "--type") && i + 1 < argc)
			type = argv[++i];
		else if (!strcmp(a, "--time-ms") && i + 1 < argc) {
			if (parse_i64(argv[++i], &time_ms))
				die("--time-ms: bad number");
		} else if (!strcmp(a, "--bad") && i + 1 < argc)
			bad = argv[++i];
		else if (!strcmp(a, "--gzip"))
			gzip = true;
		else if (!strcmp(a, "--wave") && i + 1 < argc) {
			struct stack_opt so = { .spec = argv[++i] };

			VEC_PUSH(&waves, so);
		} else if (!strcmp(a, "--count") && i + 1 < argc) {
			if (parse_i64(argv[++i], &count) || count < 1 || count > 100000)
				die("--count: expected 1 to 100000");
		} else if (!strcmp(a, "--every-ms") && i + 1 < argc) {
			if (parse_i64(argv[++i], &every_ms) || every_ms < 1)
				die("--every-ms: expected a positive number");
		} else if (!strcmp(a, "--wave-half-ms") && i + 1 < argc) {
			if (parse_i64(argv[++i], &half_ms) || half_ms < 1)
				die("--wave-half-ms: expected a positive number");
		} else if (a[0] == '-' && a[1])
			die("unknown option %s", a);
		else
			path = a;
	}
	if (!path)
		die("usage: mkotlp [--attr K=V] [--type TYPE:UNIT] [--time-ms MS] [--gzip] "
		    "[--count N] [--every-ms MS] [--wave 'a;b=1'] [--wave-half-ms MS] "
		    "--stack 'a;b=1' [--sattr K=V]... [--link TRACE:SPAN] ... OUT | "
		    "mkotlp --bad missing-location OUT");

	if (bad) {
		if (strcmp(bad, "missing-location"))
			die("--bad: only missing-location is known");
		bad_missing_location(&out);
	} else {
		const char *colon = strchr(type, ':');

		if (!colon)
			die("--type: expected TYPE:UNIT");
		for (int64_t k = 0; k < count; k++) {
			struct model_profile *q = xcalloc(1, sizeof(*q));
			char *t;
			bool on = ((k * every_ms) / half_ms) % 2 == 0;

			model_profile_init(q);
			strtab_init(&fr.names);
			memset(&fr.loc_of, 0, sizeof(fr.loc_of));
			t = xstrndup(type, (size_t)(colon - type));
			model_sample_type_add(q, t, colon + 1);
			q->period_type.type = model_intern(q, t);
			q->period_type.unit = model_intern(q, colon + 1);
			q->period = 10000000;
			free(t);
			q->time_ns = (time_ms + k * every_ms) * 1000000;
			q->duration_ns = 10000000000LL;
			for (size_t i = 0; i < attrs.n; i++) {
				const char *eq = strchr(attrs.v[i], '=');
				char *key;

				if (!eq)
					die("--attr: expected KEY=VALUE");
				key = xstrndup(attrs.v[i], (size_t)(eq - attrs.v[i]));
				model_attr_add_str(q, key, eq + 1);
				free(key);
			}
			for (size_t i = 0; i < stacks.n; i++)
				add_stack(q, &fr, &stacks.v[i], q->time_ns + (int64_t)i);
			for (size_t i = 0; i < waves.n && on; i++)
				add_stack(q, &fr, &waves.v[i],
					  q->time_ns + (int64_t)(stacks.n + i));
			strtab_release(&fr.names);
			VEC_FREE(&fr.loc_of);
			VEC_PUSH(&profs, q);
		}
		if (fmt_otlp_encode((const struct model_profile *const *)profs.v, profs.n, &out))
			die("fmt_otlp_encode failed");
		for (size_t i = 0; i < profs.n; i++) {
			model_profile_release(profs.v[i]);
			free(profs.v[i]);
		}
		VEC_FREE(&profs);
	}
	if (gzip) {
		struct buf z = BUF_INIT;

		if (gzip_deflate(out.p, out.len, &z))
			die("gzip failed");
		buf_release(&out);
		out = z;
	}
	int rc = 0;
	if (!strcmp(path, "-"))
		rc = fwrite(out.p, 1, out.len, stdout) == out.len ? 0 : -EIO;
	else
		rc = buf_write_file(path, out.p, out.len);
	if (rc)
		die("writing %s: %s", path, strerror(-rc));
	buf_release(&out);
	VEC_FREE(&stacks);
	VEC_FREE(&attrs);
	VEC_FREE(&waves);
	return 0;
}
