// SPDX-License-Identifier: Apache-2.0
/* perfmap.c - /tmp/perf-PID.map symbol tables; see perfmap.h. */
#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "base/parse.h"
#include "agent/perfmap.h"

#include <sys/stat.h>

void agent_perfmap_release(struct agent_perfmap *pm)
{
	if (!pm)
		return;
	VEC_FREE(&pm->syms);
	VEC_FREE(&pm->names);
}

static bool perfmap_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int digits = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	while (s < end) {
		int d = parse_hex_digit((unsigned char)*s);

		if (d < 0)
			break;
		if (++digits > 16)
			return false;
		v = v << 4 | d;
		s++;
	}
	if (!digits)
		return false;
	*out = v;
	*p = s;
	return true;
}

static int perfmap_cmp(const void *a, const void *b)
{
	const struct agent_perfmap_sym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

size_t agent_perfmap_parse(struct agent_perfmap *pm, const char *text, size_t n, size_t max_syms)
{
	const char *p = text, *end = text + n;
	uint32_t line = 0;
	size_t w = 0;

	pm->syms.n = 0;
	pm->names.n = 0;
	pm->bad_lines = 0;
	while (p < end && (!max_syms || pm->syms.n < max_syms)) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end, *q = p;
		struct agent_perfmap_sym s;
		uint64_t size;

		line++;
		if (eol > p && eol[-1] == '\r')
			eol--;
		if (eol == p) {
			p = nl ? nl + 1 : end;
			continue;
		}
		if (!perfmap_hex(&q, eol, &s.start) || q >= eol || *q++ != ' ' ||
		    !perfmap_hex(&q, eol, &size) || q >= eol || *q++ != ' ' || size == 0 ||
		    s.start + size < s.start || pm->names.n + (size_t)(eol - q) >= UINT32_MAX) {
			pm->bad_lines++;
			p = nl ? nl + 1 : end;
			continue;
		}
		s.end = s.start + size;
		s.name_off = (uint32_t)pm->names.n;
		s.line = line;
		VEC_RESERVE(&pm->names, (size_t)(eol - q) + 1);
		memcpy(pm->names.v + pm->names.n, q, (size_t)(eol - q));
		pm->names.n += (size_t)(eol - q);
		pm->names.v[pm->names.n++] = '\0';
		VEC_PUSH(&pm->syms, s);
		p = nl ? nl + 1 : end;
	}
	if (pm->syms.n > 1)
		qsort(pm->syms.v, pm->syms.n, sizeof(*pm->syms.v), perfmap_cmp);
	/* Equal starts: the later line (sorted last) wins. */
	for (size_t i = 0; i < pm->syms.n; i++) {
		if (w > 0 && pm->syms.v[w - 1].start == pm->syms.v[i].start)
			w--;
		pm->syms.v[w++] = pm->syms.v[i];
	}
	pm->syms.n = w;
	return w;
}

int agent_perfmap_load(struct agent_perfmap *pm, const char *path, size_t max_bytes,
		       size_t max_syms)
{
	struct stat st;
	struct buf b;
	int64_t mtime;
	int rc;

	if (stat(path, &st) != 0)
		return -errno;
	mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	if (pm->syms.v && pm->dev == (uint64_t)st.st_dev && pm->ino == (uint64_t)st.st_ino &&
	    pm->size == (uint64_t)st.st_size && pm->mtime_ns == mtime)
		return 0;
	if ((uint64_t)st.st_size > max_bytes)
		return -PROF_ETOOBIG;
	buf_init(&b, max_bytes);
	rc = buf_read_file(&b, path);
	if (rc == 0) {
		agent_perfmap_parse(pm, b.p ? b.p : "", b.len, max_syms);
		pm->dev = (uint64_t)st.st_dev;
		pm->ino = (uint64_t)st.st_ino;
		pm->size = (uint64_t)st.st_size;
		pm->mtime_ns = mtime;
		if (!pm->syms.v) /* remember an empty file as loaded */
			VEC_RESERVE(&pm->syms, 1);
	}
	buf_release(&b);
	return rc ? rc : 1;
}

const char *agent_perfmap_lookup(const struct agent_perfmap *pm, uint64_t addr)
{
	size_t lo = 0, hi = pm->syms.n;

	/* The last symbol starting at or below @addr... */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->syms.v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ...or, for overlapping entries, one of the few before it. */
	for (size_t i = lo, k = 0; i > 0 && k < 8; i--, k++) {
		const struct agent_perfmap_sym *s = &pm->syms.v[i - 1];

		if (addr < s->end)
			return pm->names.v + s->name_off;
	}
	return NULL;
}
