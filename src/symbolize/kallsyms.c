// SPDX-License-Identifier: Apache-2.0
/*
 * kallsyms.c - kernel text symbols from /proc/kallsyms; see kallsyms.h.
 *
 * Each line is "ADDRESS TYPE NAME[\t[MODULE]]" (hex address, one-letter
 * type as nm prints it; Documentation/filesystems/proc.rst). Only text
 * symbols (t, T, w, W) are kept; the module suffix is dropped. Symbols are
 * sorted by address, and of several at one address the global one (upper
 * case type) wins, so lookups name "schedule", not a local alias.
 *
 * When kptr_restrict hides addresses every address reads as zero; the
 * table then holds nothing useful and every lookup returns NULL.
 *
 * Malformed lines are skipped, not fatal: the file is produced by the
 * running kernel and its format is stable, but a test or a copy of it may
 * not be; a file with no parsable text symbol at all is -PROF_EFORMAT.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/parse.h"
#include "symbolize/kallsyms.h"

#define KALLSYMS_MAX_BYTES (512u << 20) /* refuse a larger "kallsyms" file */
#define KALLSYMS_MAX_NAME  1024

struct kallsyms_sym {
	uint64_t addr;
	uint32_t name;	/* offset into names */
	uint8_t global; /* 1 for T/W */
};

struct sym_kallsyms {
	VEC(struct kallsyms_sym) syms;
	VEC(char) names;
	bool hidden; /* all addresses were zero */
};

/* Parse one line [p, end); returns true and fills the outputs when it is a text symbol. */
static bool kallsyms_parse_line(const char *p, const char *end, uint64_t *addr, bool *global,
				const char **name, size_t *namelen)
{
	uint64_t a = 0;
	int ndig = 0, d;
	char type;
	const char *n;

	while (p < end && (d = parse_hex_digit((unsigned char)*p)) >= 0) {
		if (++ndig > 16)
			return false;
		a = (a << 4) | (uint64_t)d;
		p++;
	}
	if (ndig == 0 || p + 3 > end || p[0] != ' ' || p[2] != ' ')
		return false;
	type = p[1];
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return false;
	p += 3;
	n = p;
	while (p < end && *p != '\t' && *p != ' ' && *p != '\n')
		p++;
	if (p == n || (size_t)(p - n) > KALLSYMS_MAX_NAME)
		return false;
	*addr = a;
	*global = type == 'T' || type == 'W';
	*name = n;
	*namelen = (size_t)(p - n);
	return true;
}

static int kallsyms_cmp(const void *pa, const void *pb)
{
	const struct kallsyms_sym *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->global != b->global)
		return a->global ? -1 : 1;
	return a->name < b->name ? -1 : a->name > b->name; /* file order */
}

int sym_kallsyms_load(const char *path, struct sym_kallsyms **out, struct prof_err *err)
{
	struct buf b;
	struct sym_kallsyms *k;
	const char *p, *end;
	bool any_nonzero = false;
	size_t w = 0;
	int rc;

	*out = NULL;
	buf_init(&b, KALLSYMS_MAX_BYTES);
	/* /proc files report size 0: read until EOF. */
	rc = buf_read_file(&b, path);
	if (rc) {
		buf_release(&b);
		return prof_err_set(err, rc, -1, "%s: %s", path, prof_strerror(rc));
	}
	k = xcalloc(1, sizeof(*k));
	p = b.p ? b.p : "";
	end = p + b.len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *name;
		size_t namelen;
		uint64_t addr;
		bool global;

		if (kallsyms_parse_line(p, eol, &addr, &global, &name, &namelen)) {
			struct kallsyms_sym s = { .addr = addr, .global = global };

			PROF_ASSERT(k->names.n + namelen + 1 < UINT32_MAX);
			s.name = (uint32_t)k->names.n;
			VEC_RESERVE(&k->names, namelen + 1);
			memcpy(k->names.v + k->names.n, name, namelen);
			k->names.v[k->names.n + namelen] = '\0';
			k->names.n += namelen + 1;
			VEC_PUSH(&k->syms, s);
			any_nonzero |= addr != 0;
		}
		p = eol + 1;
	}
	buf_release(&b);
	if (k->syms.n == 0) {
		sym_kallsyms_free(k);
		return prof_err_set(err, -PROF_EFORMAT, -1, "%s: no kernel text symbols found",
				    path);
	}
	k->hidden = !any_nonzero;
	qsort(k->syms.v, k->syms.n, sizeof(k->syms.v[0]), kallsyms_cmp);
	for (size_t r = 0; r < k->syms.n; r++) {
		if (w > 0 && k->syms.v[w - 1].addr == k->syms.v[r].addr)
			continue;
		k->syms.v[w++] = k->syms.v[r];
	}
	k->syms.n = w;
	*out = k;
	return 0;
}

void sym_kallsyms_free(struct sym_kallsyms *k)
{
	if (!k)
		return;
	VEC_FREE(&k->syms);
	VEC_FREE(&k->names);
	free(k);
}

const char *sym_kallsyms_lookup(const struct sym_kallsyms *k, uint64_t addr)
{
	size_t lo = 0, hi;

	if (!k || k->hidden)
		return NULL;
	hi = k->syms.n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->syms.v[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || k->syms.v[lo - 1].addr == 0)
		return NULL;
	return k->names.v + k->syms.v[lo - 1].name;
}

size_t sym_kallsyms_count(const struct sym_kallsyms *k)
{
	return k && !k->hidden ? k->syms.n : 0;
}
