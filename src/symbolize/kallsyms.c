// SPDX-License-Identifier: Apache-2.0
/*
 * kallsyms.c - kernel text symbols from /proc/kallsyms; see kallsyms.h.
 *
 * Each line is "ADDRESS TYPE NAME[\t[MODULE]]" (hex address, one-letter
 * type as nm prints it; Documentation/filesystems/proc.rst). Only text
 * symbols (t, T, w, W) are kept, with their module. Symbols are
 * sorted by address, and of several at one address the global one (upper
 * case type) wins, so lookups name "schedule", not a local alias.
 *
 * kallsyms has no sizes, so each symbol covers up to the next one, and
 * never past a bound that says the code ends: a symbol of the kernel
 * image below _etext ends there at the latest (_etext and _einittext are
 * markers and cover nothing), one of a module at the module's end, from
 * "modules" beside the kallsyms file (/proc/modules: "NAME SIZE ... ADDR",
 * when it is there and shows addresses). A symbol with neither a next
 * symbol nor a bound covers only its own address. Addresses past the
 * kernel's text or a module's code are thus left unnamed instead of being
 * given the last symbol before them.
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

#define KALLSYMS_MAX_BYTES   (512u << 20) /* refuse a larger "kallsyms" file */
#define KALLSYMS_MAX_NAME    1024
#define KALLSYMS_MAX_MODULES 65536

struct kallsyms_sym {
	uint64_t addr, end; /* covers [addr, end) */
	uint32_t name;	    /* offset into names */
	uint32_t module;    /* offset into names of its module's name, 0 = the kernel image */
	uint8_t global;	    /* 1 for T/W */
};

struct kallsyms_module {
	uint32_t name; /* offset into names */
	uint64_t start, end;
};

struct sym_kallsyms {
	VEC(struct kallsyms_sym) syms;
	VEC(char) names; /* starts with "" so that offset 0 means none */
	bool hidden;	 /* all addresses were zero */
};

/* One field of a line: [*p, end) after spaces, up to the next space or tab. */
static size_t kallsyms_field(const char **p, const char *end, const char **f)
{
	const char *q = *p;

	while (q < end && (*q == ' ' || *q == '\t'))
		q++;
	*f = q;
	while (q < end && *q != ' ' && *q != '\t')
		q++;
	*p = q;
	return (size_t)(q - *f);
}

/* Hex digits [p, p + n) (no prefix) into @out; false unless all are digits and fit. */
static bool kallsyms_hex(const char *p, size_t n, uint64_t *out)
{
	uint64_t a = 0;
	int d;

	if (n == 0 || n > 16)
		return false;
	for (size_t i = 0; i < n; i++) {
		if ((d = parse_hex_digit((unsigned char)p[i])) < 0)
			return false;
		a = a << 4 | (uint64_t)d;
	}
	*out = a;
	return true;
}

/*
 * Parse one line [p, end); returns true and fills the outputs when it is
 * a text symbol. @mod/@modlen: the module name inside "\t[...]", or
 * NULL/0 for the kernel image.
 */
static bool kallsyms_parse_line(const char *p, const char *end, uint64_t *addr, bool *global,
				const char **name, size_t *namelen, const char **mod,
				size_t *modlen)
{
	const char *n, *close;
	char type;

	n = p;
	while (p < end && parse_hex_digit((unsigned char)*p) >= 0)
		p++;
	if (!kallsyms_hex(n, (size_t)(p - n), addr) || p + 3 > end || p[0] != ' ' || p[2] != ' ')
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
	*global = type == 'T' || type == 'W';
	*name = n;
	*namelen = (size_t)(p - n);
	*mod = NULL;
	*modlen = 0;
	if (p + 2 < end && p[0] == '\t' && p[1] == '[' &&
	    (close = memchr(p + 2, ']', (size_t)(end - p - 2))) != NULL && close > p + 2 &&
	    (size_t)(close - p - 2) <= KALLSYMS_MAX_NAME) {
		*mod = p + 2;
		*modlen = (size_t)(close - p - 2);
	}
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

static uint32_t kallsyms_add_name(struct sym_kallsyms *k, const char *s, size_t n)
{
	uint32_t off;

	PROF_ASSERT(k->names.n + n + 1 < UINT32_MAX);
	off = (uint32_t)k->names.n;
	VEC_RESERVE(&k->names, n + 1);
	memcpy(k->names.v + k->names.n, s, n);
	k->names.v[k->names.n + n] = '\0';
	k->names.n += n + 1;
	return off;
}

/*
 * The code ranges of the modules, from the "modules" file in the
 * directory of @path (lines "NAME SIZE REFS DEPS STATE 0xADDR ...", as
 * /proc/modules): none when it is absent or shows no addresses. Names are
 * interned into @k.
 */
static void kallsyms_read_modules(struct sym_kallsyms *k, const char *path,
				  struct kallsyms_module **out, size_t *nout)
{
	VEC(struct kallsyms_module) mods = { 0 };
	const char *slash = strrchr(path, '/');
	char mpath[4096];
	struct buf b;

	*out = NULL;
	*nout = 0;
	if ((size_t)snprintf(mpath, sizeof(mpath), "%.*smodules",
			     slash ? (int)(slash - path + 1) : 0, path) >= sizeof(mpath))
		return;
	buf_init(&b, KALLSYMS_MAX_BYTES);
	if (buf_read_file(&b, mpath) == 0 && b.p) {
		const char *p = b.p, *end = b.p + b.len;

		while (p < end && mods.n < KALLSYMS_MAX_MODULES) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));
			const char *eol = nl ? nl : end, *q = p, *f[6];
			size_t fl[6], nf;
			uint64_t size, addr;

			for (nf = 0; nf < 6; nf++)
				fl[nf] = kallsyms_field(&q, eol, &f[nf]);
			p = eol + 1;
			if (!fl[0] || fl[0] > KALLSYMS_MAX_NAME || fl[5] < 3 || f[5][0] != '0' ||
			    f[5][1] != 'x' || !kallsyms_hex(f[5] + 2, fl[5] - 2, &addr) || !fl[1] ||
			    fl[1] > 16)
				continue;
			size = 0;
			for (size_t i = 0; i < fl[1] && size != UINT64_MAX; i++)
				size = f[1][i] >= '0' && f[1][i] <= '9'
					       ? size * 10 + (uint64_t)(f[1][i] - '0')
					       : UINT64_MAX;
			if (addr == 0 || size == UINT64_MAX || addr + size < addr)
				continue;
			struct kallsyms_module m = { kallsyms_add_name(k, f[0], fl[0]), addr,
						     addr + size };
			VEC_PUSH(&mods, m);
		}
	}
	buf_release(&b);
	*out = mods.v;
	*nout = mods.n;
}

/* Each symbol's end after sorting (see the head comment). */
static void kallsyms_set_ends(struct sym_kallsyms *k, const struct kallsyms_module *mods,
			      size_t nmods)
{
	uint64_t etext = 0;
	const struct kallsyms_module *last = NULL;

	for (size_t i = 0; i < k->syms.n; i++)
		if (!k->syms.v[i].module && !strcmp(k->names.v + k->syms.v[i].name, "_etext"))
			etext = k->syms.v[i].addr;
	for (size_t i = 0; i < k->syms.n; i++) {
		struct kallsyms_sym *s = &k->syms.v[i];
		const char *name = k->names.v + s->name;
		uint64_t next = i + 1 < k->syms.n ? k->syms.v[i + 1].addr : 0, bound = 0;

		if (!s->module) {
			if (!strcmp(name, "_etext") || !strcmp(name, "_einittext")) {
				s->end = s->addr; /* markers: the end of some code */
				continue;
			}
			if (etext && s->addr < etext)
				bound = etext;
		} else {
			const char *mod = k->names.v + s->module;

			if (!last || strcmp(k->names.v + last->name, mod) ||
			    s->addr < last->start || s->addr >= last->end) {
				last = NULL;
				for (size_t m = 0; m < nmods && !last; m++)
					if (!strcmp(k->names.v + mods[m].name, mod) &&
					    s->addr >= mods[m].start && s->addr < mods[m].end)
						last = &mods[m];
			}
			if (last)
				bound = last->end;
		}
		if (next && bound)
			s->end = PROF_MIN(next, bound);
		else
			s->end = next ? next : bound ? bound : s->addr + 1;
	}
}

int sym_kallsyms_load(const char *path, struct sym_kallsyms **out, struct prof_err *err)
{
	struct kallsyms_module *mods = NULL;
	size_t nmods = 0;
	struct buf b;
	struct sym_kallsyms *k;
	const char *p, *end;
	bool any_nonzero = false;
	uint32_t last_mod = 0;
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
	kallsyms_add_name(k, "", 0);
	p = b.p ? b.p : "";
	end = p + b.len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		const char *name, *mod;
		size_t namelen, modlen;
		uint64_t addr;
		bool global;

		if (kallsyms_parse_line(p, eol, &addr, &global, &name, &namelen, &mod, &modlen)) {
			struct kallsyms_sym s = { .addr = addr, .global = global };

			s.name = kallsyms_add_name(k, name, namelen);
			/* Lines of one module come together: intern its name once per run. */
			if (mod && !(last_mod && !strncmp(k->names.v + last_mod, mod, modlen) &&
				     !k->names.v[last_mod + modlen]))
				last_mod = kallsyms_add_name(k, mod, modlen);
			s.module = mod ? last_mod : 0;
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
	if (!k->hidden)
		kallsyms_read_modules(k, path, &mods, &nmods);
	kallsyms_set_ends(k, mods, nmods);
	free(mods);
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
	if (lo == 0 || k->syms.v[lo - 1].addr == 0 || addr >= k->syms.v[lo - 1].end)
		return NULL;
	return k->names.v + k->syms.v[lo - 1].name;
}

size_t sym_kallsyms_count(const struct sym_kallsyms *k)
{
	return k && !k->hidden ? k->syms.n : 0;
}
