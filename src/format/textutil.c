// SPDX-License-Identifier: Apache-2.0
/*
 * textutil.c - helpers shared by the text and JSON decoders; see textutil.h.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "format/textutil.h"

#include <math.h>

static const char bom[3] = { '\xef', '\xbb', '\xbf' };

int fmt_utf16_bom(const void *data, size_t n)
{
	const unsigned char *p = data;

	if (n < 2)
		return 0;
	if (p[0] == 0xff && p[1] == 0xfe)
		return 'L';
	return p[0] == 0xfe && p[1] == 0xff ? 'B' : 0;
}

/* @c (a scalar value, or U+FFFD) as UTF-8 into @o; returns the length. */
static size_t utf8_enc(uint32_t c, char *o)
{
	if (c < 0x80) {
		o[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		o[0] = (char)(0xc0 | c >> 6);
		o[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		o[0] = (char)(0xe0 | c >> 12);
		o[1] = (char)(0x80 | (c >> 6 & 0x3f));
		o[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | c >> 18);
	o[1] = (char)(0x80 | (c >> 12 & 0x3f));
	o[2] = (char)(0x80 | (c >> 6 & 0x3f));
	o[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

int fmt_utf16_to_utf8(const void *data, size_t n, size_t max, struct buf *out, struct prof_err *err)
{
	const unsigned char *p = data, *e = p + n;
	int order = fmt_utf16_bom(data, n);
	size_t start = out->len;
	char chunk[4096 + 8];
	size_t o = 0;

	if (!order)
		return prof_err_set(err, -EINVAL, 0, "text: no UTF-16 byte order mark");
	for (p += 2; p < e;) {
		uint32_t c, lo;

		if (e - p < 2) {
			c = 0xfffd; /* an odd last byte */
			p = e;
		} else {
			c = order == 'L' ? (uint32_t)(p[0] | p[1] << 8)
					 : (uint32_t)(p[0] << 8 | p[1]);
			p += 2;
			if (c >= 0xd800 && c <= 0xdbff && e - p >= 2) {
				lo = order == 'L' ? (uint32_t)(p[0] | p[1] << 8)
						  : (uint32_t)(p[0] << 8 | p[1]);
				if (lo >= 0xdc00 && lo <= 0xdfff) {
					c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
					p += 2;
				}
			}
			if (c >= 0xd800 && c <= 0xdfff)
				c = 0xfffd;
		}
		o += utf8_enc(c, chunk + o);
		if (o >= 4096 || p >= e) {
			if (out->len - start + o > max || buf_add(out, chunk, o))
				return prof_err_set(
					err, -PROF_ETOOBIG, -1,
					"text: UTF-16 input converted to UTF-8 exceeds the "
					"limit of %zu bytes",
					max);
			o = 0;
		}
	}
	return 0;
}

void fmt_lines_init(struct fmt_lines *it, const void *data, size_t n)
{
	memset(it, 0, sizeof(*it));
	it->data = data;
	it->end = it->data + n;
	it->next = it->data;
	if (n >= 3 && memcmp(data, bom, 3) == 0)
		it->next += 3;
}

bool fmt_lines_next(struct fmt_lines *it)
{
	const char *p = it->next, *nl;

	if (p >= it->end)
		return false;
	nl = memchr(p, '\n', (size_t)(it->end - p));
	it->line = p;
	it->off = (size_t)(p - it->data);
	it->len = (size_t)((nl ? nl : it->end) - p);
	it->next = nl ? nl + 1 : it->end;
	if (it->len && p[it->len - 1] == '\r')
		it->len--;
	it->lineno++;
	return true;
}

int fmt_text_err(struct prof_err *err, int code, const char *what, const struct fmt_lines *it,
		 const char *p, const char *fmt, ...)
{
	char msg[384];
	va_list ap;
	size_t col = p >= it->line ? (size_t)(p - it->line) : 0;

	if (!code)
		code = -PROF_ECORRUPT;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return prof_err_set(err, code, (int64_t)(it->off + col), "%s: line %zu:%zu (byte %zu): %s",
			    what, it->lineno, col + 1, it->off + col, msg);
}

/*
 * Upper estimate of what jansson 2.14 allocates for a document: an object
 * costs its struct and first hash table (~256 bytes with malloc overhead),
 * an array its struct and first 8 slots (~160), any other value ~64, and
 * strings their bytes. Counted without parsing: containers by their
 * opening brackets outside strings, values by separators.
 */
static uint64_t json_cost(const char *p, size_t n)
{
	uint64_t objects = 0, arrays = 0, values = 1;
	bool in_str = false;

	for (size_t i = 0; i < n; i++) {
		char ch = p[i];

		if (in_str) {
			if (ch == '\\')
				i++;
			else if (ch == '"')
				in_str = false;
			continue;
		}
		switch (ch) {
		case '"':
			in_str = true;
			break;
		case '{':
			objects++;
			break;
		case '[':
			arrays++;
			break;
		case ',':
		case ':':
			values++;
			break;
		default:
			break;
		}
	}
	return objects * 256 + arrays * 160 + values * 64 + n;
}

json_t *fmt_json_load(const void *data, size_t n, const char *what, struct prof_err *err)
{
	const char *p = data;
	size_t skip = 0;
	uint64_t cost, cap;
	json_error_t je;
	json_t *root;

	if (n >= 3 && memcmp(p, bom, 3) == 0)
		skip = 3;
	cost = json_cost(p + skip, n - skip);
	cap = (uint64_t)n * 32 + (256u << 20);
	if (cost > cap) {
		prof_err_set(err, -PROF_ETOOBIG, -1,
			     "%s: %zu bytes of JSON would need about %" PRIu64
			     " MiB to parse (limit %" PRIu64 " MiB for this size)",
			     what, n, cost >> 20, cap >> 20);
		return NULL;
	}
	root = json_loadb(p + skip, n - skip, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		/* jansson's position counts the bytes read, the bad one included. */
		int64_t off = je.position > 0 ? (int64_t)(je.position - 1 + (int)skip) : 0;

		prof_err_set(err, -PROF_ECORRUPT, off, "%s: line %d:%d (byte %" PRId64 "): %s",
			     what, je.line, je.column, off, je.text);
		return NULL;
	}
	return root;
}

bool fmt_json_i64(const json_t *v, bool allow_string, int64_t *out)
{
	if (json_is_integer(v)) {
		*out = (int64_t)json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);

		/* 2^63 is exact in a double; anything at or above it is out of range. */
		if (!isfinite(d) || d != floor(d) || d >= 9223372036854775808.0 ||
		    d < -9223372036854775808.0)
			return false;
		*out = (int64_t)d;
		return true;
	}
	if (allow_string && json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t len = json_string_length(v);
		bool neg = len && s[0] == '-';
		uint64_t acc = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;

		if (len == (size_t)neg || len > 20)
			return false;
		for (size_t i = neg; i < len; i++) {
			if (s[i] < '0' || s[i] > '9')
				return false;
			if (acc > (lim - (uint64_t)(s[i] - '0')) / 10)
				return false;
			acc = acc * 10 + (uint64_t)(s[i] - '0');
		}
		*out = neg ? (int64_t)(0 - acc) : (int64_t)acc;
		return true;
	}
	return false;
}

bool fmt_json_num(const json_t *v, double *out)
{
	if (json_is_integer(v)) {
		*out = (double)json_integer_value(v);
		return true;
	}
	if (json_is_real(v)) {
		*out = json_real_value(v);
		return true;
	}
	return false;
}

static size_t idmap_slot(uint64_t key, size_t cap)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

void fmt_idmap_init(struct fmt_idmap *m)
{
	memset(m, 0, sizeof(*m));
}

void fmt_idmap_release(struct fmt_idmap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

bool fmt_idmap_get(const struct fmt_idmap *m, uint64_t key, uint32_t *val)
{
	if (!m->cap)
		return false;
	for (size_t h = idmap_slot(key, m->cap);; h = (h + 1) & (m->cap - 1)) {
		if (!m->vals[h])
			return false;
		if (m->keys[h] == key) {
			*val = m->vals[h] - 1;
			return true;
		}
	}
}

static void idmap_grow(struct fmt_idmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	uint64_t *keys = xcalloc(cap, sizeof(*keys));
	uint32_t *vals = xcalloc(cap, sizeof(*vals));

	for (size_t i = 0; i < m->cap; i++) {
		size_t h;

		if (!m->vals[i])
			continue;
		for (h = idmap_slot(m->keys[i], cap); vals[h]; h = (h + 1) & (cap - 1))
			;
		keys[h] = m->keys[i];
		vals[h] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
}

bool fmt_idmap_put(struct fmt_idmap *m, uint64_t key, uint32_t val)
{
	size_t h;

	PROF_ASSERT(val < UINT32_MAX);
	if ((m->n + 1) * 2 > m->cap)
		idmap_grow(m);
	for (h = idmap_slot(key, m->cap); m->vals[h]; h = (h + 1) & (m->cap - 1))
		if (m->keys[h] == key)
			return false;
	m->keys[h] = key;
	m->vals[h] = val + 1;
	m->n++;
	return true;
}
