// SPDX-License-Identifier: Apache-2.0
/*
 * folded.c - folded/collapsed stacks decoder and encoder; see folded.h
 * for the rules and docs/formats.md "Folded stacks" for the format.
 *
 * Decoding interns every frame name as a function with one location, and
 * every stack (the location ids, leaf first) as a key of a strtab whose
 * dense ids index the stack offsets, so repeated stacks cost nothing.
 * Output size is bounded by the input: each stack entry comes from at
 * least one input byte.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/folded.h"
#include "format/textutil.h"

#define WHAT "folded"

struct fd_ctx {
	struct model_profile *p;
	struct strtab stacks;	    /* key: leaf-first location ids */
	VEC(uint32_t) stack_of_key; /* strtab id -> stack offset + 1 */
	VEC(uint32_t) loc_of_fn;    /* function index -> location index */
	VEC(uint32_t) locs;	    /* the line's stack, root first */
	uint32_t kernel;	    /* string id of "kernel" */
};

static bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

/* Parses the count token [s, e): digits, optionally '.' and digits; rounds half up. */
static bool parse_count(const char *s, const char *e, int64_t *out)
{
	uint64_t v = 0;
	const char *p = s;

	if (p == e || *p < '0' || *p > '9')
		return false;
	for (; p < e && *p >= '0' && *p <= '9'; p++) {
		if (v > ((uint64_t)INT64_MAX - (uint64_t)(*p - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p < e && *p == '.') {
		bool up = p + 1 < e && p[1] >= '5' && p[1] <= '9';

		for (p++; p < e && *p >= '0' && *p <= '9'; p++)
			;
		if (up) {
			if (v == (uint64_t)INT64_MAX)
				return false;
			v++;
		}
	}
	if (p != e)
		return false;
	*out = (int64_t)v;
	return true;
}

static uint32_t fd_location(struct fd_ctx *c, const char *name, size_t len)
{
	struct model_profile *p = c->p;
	uint32_t fn = model_function_intern(p, model_intern_n(p, name, len), 0, 0, 0);
	struct model_line ln = { fn, 0, 0 };

	while (c->loc_of_fn.n <= fn)
		VEC_PUSH(&c->loc_of_fn, 0);
	if (!c->loc_of_fn.v[fn]) {
		uint32_t li = model_location_add(p, 0, 0, &ln, 1);

		if (len >= 4 && memcmp(name + len - 4, "_[k]", 4) == 0)
			p->locations.v[li].frame_type = c->kernel;
		c->loc_of_fn.v[fn] = li;
	}
	return c->loc_of_fn.v[fn];
}

/* Interns the stack in c->locs (root first) and returns its offset. */
static uint32_t fd_stack(struct fd_ctx *c)
{
	uint32_t id, n = (uint32_t)c->locs.n;

	for (uint32_t i = 0; i < n / 2; i++) {
		uint32_t t = c->locs.v[i];

		c->locs.v[i] = c->locs.v[n - 1 - i];
		c->locs.v[n - 1 - i] = t;
	}
	id = strtab_intern(&c->stacks, (const char *)c->locs.v, n * sizeof(uint32_t));
	while (c->stack_of_key.n <= id)
		VEC_PUSH(&c->stack_of_key, 0);
	if (!c->stack_of_key.v[id])
		c->stack_of_key.v[id] = model_stack_add(c->p, c->locs.v, n) + 1;
	return c->stack_of_key.v[id] - 1;
}

int fmt_folded_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
		      struct model_profile *out, struct prof_err *err)
{
	static const struct fmt_decode_opts defaults;
	struct fd_ctx c = { 0 };
	struct fmt_lines it;
	size_t max = opts && opts->max_input ? opts->max_input : FMT_DEFAULT_MAX_INPUT;
	size_t valid = 0, invalid = 0, first_invalid = 0, first_len = 0;
	const char *first_line = NULL;
	int rc = 0;

	if (!opts)
		opts = &defaults;
	if (n > max)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    WHAT ": input of %zu bytes exceeds the limit of %zu bytes", n,
				    max);
	if (fmt_utf16_bom(data, n)) {
		struct buf u8 = BUF_INIT;

		rc = fmt_utf16_to_utf8(data, n, max, &u8, err);
		if (!rc)
			rc = fmt_folded_decode(u8.p ? u8.p : "", u8.len, opts, out, err);
		buf_release(&u8);
		return rc;
	}
	c.p = out;
	strtab_init(&c.stacks);
	c.kernel = model_intern(out, "kernel");
	model_sample_type_add(out, opts->sample_type ? opts->sample_type : "samples",
			      opts->sample_unit ? opts->sample_unit : "count");
	fmt_lines_init(&it, data, n);
	while (fmt_lines_next(&it)) {
		const char *s = it.line, *e = it.line + it.len, *ws, *f;
		int64_t count;

		while (e > s && is_ws(e[-1]))
			e--;
		if (e == s)
			continue; /* blank */
		if (!first_line) {
			first_line = s;
			first_len = (size_t)(e - s);
		}
		for (ws = e; ws > s && !is_ws(ws[-1]); ws--)
			;
		if (ws == s || !parse_count(ws, e, &count)) {
			if (opts->strict && ws == s) {
				rc = fmt_text_err(err, 0, WHAT, &it, e, "no count after the stack");
				goto out;
			}
			if (opts->strict) {
				rc = fmt_text_err(err, 0, WHAT, &it, ws,
						  "count \"%.*s\" is not a non-negative number",
						  (int)PROF_MIN(e - ws, 64), ws);
				goto out;
			}
			if (!invalid++)
				first_invalid = it.lineno;
			continue;
		}
		valid++;
		if (count == 0)
			continue;
		if (opts->max_samples && out->samples.n >= opts->max_samples) {
			rc = fmt_text_err(err, -PROF_ETOOBIG, WHAT, &it, s, "more than %zu samples",
					  opts->max_samples);
			goto out;
		}
		e = ws;
		while (e > s && is_ws(e[-1]))
			e--;
		c.locs.n = 0;
		for (f = s; f < e;) {
			const char *semi = memchr(f, ';', (size_t)(e - f));
			const char *fe = semi ? semi : e;

			if (fe > f)
				VEC_PUSH(&c.locs, fd_location(&c, f, (size_t)(fe - f)));
			f = semi ? semi + 1 : e;
		}
		model_sample_add(out, fd_stack(&c), (uint32_t)c.locs.n, &count, NULL, 0, 0, 0);
	}
	if (!valid && first_line) {
		rc = prof_err_set(
			err, -PROF_EFORMAT, 0,
			WHAT ": no line of the form \"frame;frame count\" (first line: \"%.*s\")",
			(int)PROF_MIN(first_len, 80), first_line);
		goto out;
	}
	if (invalid) {
		char *msg = xasprintf(WHAT ": skipped %zu invalid line%s (first: line %zu)",
				      invalid, invalid == 1 ? "" : "s", first_invalid);

		VEC_PUSH(&out->comments, model_intern(out, msg));
		free(msg);
		model_profile_skip(out, invalid, "invalid lines", "line %zu", first_invalid);
	}
out:
	strtab_release(&c.stacks);
	VEC_FREE(&c.stack_of_key);
	VEC_FREE(&c.loc_of_fn);
	VEC_FREE(&c.locs);
	return rc;
}

/* Appends @name to @b with ';' -> ':' and control characters -> ' '. */
static void fe_name(struct buf *b, const char *name)
{
	for (const char *s = name; *s; s++) {
		char ch = *s;

		if (ch == ';')
			ch = ':';
		else if ((unsigned char)ch < 0x20 || ch == 0x7f)
			ch = ' ';
		buf_add(b, &ch, 1);
	}
}

int fmt_folded_encode(const struct model_profile *p, uint32_t sample_type, struct buf *out)
{
	struct strtab keys;
	VEC(int64_t) sums = { 0 };
	VEC(uint32_t) order = { 0 };
	VEC(bool) seen = { 0 };
	struct buf key = BUF_INIT;
	char tmp[256];
	int rc = 0;

	if (sample_type >= p->sample_types.n)
		return -EINVAL;
	strtab_init(&keys);
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];
		int64_t v = p->values.v[s->value_off + sample_type];
		bool first = true;
		uint32_t id;

		if (v == 0)
			continue;
		buf_reset(&key);
		for (uint32_t k = s->nstack; k-- > 0;) {
			const struct model_location *loc =
				&p->locations.v[p->stack_locs.v[s->stack_off + k]];
			uint32_t nl = loc->nlines ? loc->nlines : 1;

			for (uint32_t l = nl; l-- > 0;) {
				if (!first)
					buf_add(&key, ";", 1);
				fe_name(&key, model_frame_name(p, loc, l, tmp, sizeof(tmp)));
				first = false;
			}
		}
		id = strtab_intern(&keys, key.p ? key.p : "", key.len);
		while (sums.n <= id) {
			VEC_PUSH(&sums, 0);
			VEC_PUSH(&seen, false);
		}
		if (!seen.v[id]) {
			seen.v[id] = true;
			VEC_PUSH(&order, id);
		}
		if (__builtin_add_overflow(sums.v[id], v, &sums.v[id]))
			sums.v[id] = v > 0 ? INT64_MAX : INT64_MIN;
	}
	for (size_t i = 0; i < order.n && !rc; i++) {
		uint32_t id = order.v[i];

		if (sums.v[id] <= 0)
			continue;
		/* A first frame that starts like a byte order mark would be read as
		 * one: a UTF-8 BOM first keeps it a name (the decoder skips one). */
		if (out->len == 0 &&
		    (fmt_utf16_bom(keys.s[id], keys.len[id]) ||
		     (keys.len[id] >= 3 && !memcmp(keys.s[id], "\xef\xbb\xbf", 3))))
			rc = buf_add(out, "\xef\xbb\xbf", 3);
		if (!rc)
			rc = buf_add(out, keys.s[id], keys.len[id]);
		if (!rc)
			rc = buf_addf(out, " %" PRId64 "\n", sums.v[id]);
	}
	buf_release(&key);
	strtab_release(&keys);
	VEC_FREE(&sums);
	VEC_FREE(&order);
	VEC_FREE(&seen);
	return rc;
}
