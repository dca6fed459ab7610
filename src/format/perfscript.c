// SPDX-License-Identifier: Apache-2.0
/*
 * perfscript.c - `perf script` text decoder; see perfscript.h for the
 * accepted shape and the mapping.
 *
 * Two passes over the lines: the first reads only the sample headers to
 * learn the events (each event with a period gets a value column, and the
 * model wants its columns before its samples), the second builds the
 * samples. Functions, mappings, locations and stacks are interned, so the
 * output grows with the number of distinct frames and stacks, each of
 * which costs input bytes. The line format follows perf's
 * tools/perf/builtin-script.c (process_event, perf_sample__fprintf_*)
 * with default fields.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/perfscript.h"
#include "format/textutil.h"

#define WHAT "perf-script"

struct ps_hdr {
	const char *comm;
	size_t comm_len;
	int64_t pid, tid, cpu, ts_ns, period;
	bool has_pid, has_cpu, has_period;
	const char *event; /* modifiers stripped */
	size_t event_len;
	const char *rest; /* after the event token */
	const char *bad;  /* where parsing failed */
	const char *why;
};

struct ps_event {
	const char *name;
	size_t len;
	uint32_t col; /* value column, 0 = none (no period seen) */
};

struct ps_ctx {
	struct model_profile *p;
	VEC(struct ps_event) events;
	struct strtab lockeys, stackkeys;
	VEC(uint32_t) loc_of_key, stack_of_key; /* strtab id -> index + 1 */
	VEC(uint32_t) map_of_str;		/* dso string id -> mapping + 1 */
	VEC(uint32_t) locs;
	VEC(int64_t) vals;
	struct model_label labels[4];
	uint32_t nlabels;
	int64_t ts;
	bool open;
	uint32_t k_comm, k_tid, k_pid, k_cpu, t_kernel, t_native;
};

static bool is_ws(char c)
{
	return c == ' ' || c == '\t';
}

static bool is_digits(const char *s, const char *e)
{
	if (s == e)
		return false;
	for (; s < e; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

static bool is_hex(const char *s, const char *e)
{
	if (s == e)
		return false;
	for (; s < e; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') ||
		      (*s >= 'A' && *s <= 'F')))
			return false;
	return true;
}

static bool dec(const char *s, const char *e, int64_t *out)
{
	uint64_t v = 0;

	if (!is_digits(s, e))
		return false;
	for (; s < e; s++) {
		if (v > ((uint64_t)INT64_MAX - (uint64_t)(*s - '0')) / 10)
			return false;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = (int64_t)v;
	return true;
}

static bool hex(const char *s, const char *e, uint64_t *out)
{
	uint64_t v = 0;

	if (!is_hex(s, e) || e - s > 16)
		return false;
	for (; s < e; s++) {
		char c = *s;

		v = v * 16 + (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	*out = v;
	return true;
}

/* "581.331917:" -> ns. Fraction digits beyond 9 are dropped. */
static bool parse_time(const char *s, const char *e, int64_t *ns)
{
	const char *dot;
	int64_t sec, frac = 0;
	int digits = 0;

	if (e - s < 4 || e[-1] != ':')
		return false;
	e--;
	dot = memchr(s, '.', (size_t)(e - s));
	if (!dot || !dec(s, dot, &sec) || !is_digits(dot + 1, e))
		return false;
	for (const char *p = dot + 1; p < e && digits < 9; p++, digits++)
		frac = frac * 10 + (*p - '0');
	for (; digits < 9; digits++)
		frac *= 10;
	if (sec > (INT64_MAX - frac) / 1000000000)
		return false;
	*ns = sec * 1000000000 + frac;
	return true;
}

static const char *skip_ws(const char *s, const char *e)
{
	while (s < e && is_ws(*s))
		s++;
	return s;
}

static const char *token_end(const char *s, const char *e)
{
	while (s < e && !is_ws(*s))
		s++;
	return s;
}

/* Parses a sample header; false with h->bad / h->why set. */
static bool ps_header(const char *s, const char *e, struct ps_hdr *h)
{
	const char *prev[2] = { NULL, NULL }, *prev_end[2] = { NULL, NULL };
	const char *t = s, *te, *pidt, *pide;

	memset(h, 0, sizeof(*h));
	h->bad = s;
	h->why = "expected a sample header \"comm tid time: [period] event:\"";
	if (s == e || is_ws(*s))
		return false;
	for (;;) {
		t = skip_ws(t, e);
		if (t == e)
			return false;
		te = token_end(t, e);
		if (prev[0] && te - t >= 4 && te[-1] == ':' && memchr(t, '.', (size_t)(te - t)) &&
		    is_digits(t, memchr(t, '.', (size_t)(te - t))))
			break;
		prev[1] = prev[0];
		prev_end[1] = prev_end[0];
		prev[0] = t;
		prev_end[0] = te;
		t = te;
	}
	if (!parse_time(t, te, &h->ts_ns)) {
		h->bad = t;
		h->why = "bad timestamp";
		return false;
	}
	pidt = prev[0];
	pide = prev_end[0];
	if (pide - pidt >= 3 && *pidt == '[' && pide[-1] == ']') {
		h->has_cpu = dec(pidt + 1, pide - 1, &h->cpu);
		if (!h->has_cpu) {
			h->bad = pidt;
			h->why = "bad cpu number";
			return false;
		}
		pidt = prev[1];
		pide = prev_end[1];
	}
	if (!pidt) {
		h->bad = s;
		h->why = "no thread id before the timestamp";
		return false;
	}
	{
		const char *slash = memchr(pidt, '/', (size_t)(pide - pidt));

		if (slash ? !(dec(pidt, slash, &h->pid) && dec(slash + 1, pide, &h->tid))
			  : !dec(pidt, pide, &h->tid)) {
			h->bad = pidt;
			h->why = "bad thread id (expected TID or PID/TID)";
			return false;
		}
		h->has_pid = slash != NULL;
	}
	h->comm = s;
	h->comm_len = (size_t)(pidt - s);
	while (h->comm_len && is_ws(s[h->comm_len - 1]))
		h->comm_len--;
	if (!h->comm_len) {
		h->bad = s;
		h->why = "no command name before the thread id";
		return false;
	}
	t = skip_ws(te, e);
	te = token_end(t, e);
	if (is_digits(t, te)) {
		h->has_period = dec(t, te, &h->period);
		if (!h->has_period) {
			h->bad = t;
			h->why = "period out of range";
			return false;
		}
		t = skip_ws(te, e);
		te = token_end(t, e);
	}
	if (te - t < 2 || te[-1] != ':') {
		h->bad = t;
		h->why = "expected the event name followed by ':'";
		return false;
	}
	h->event = t;
	h->event_len = (size_t)(te - t - 1);
	{
		/* Strip modifiers: "cpu-clock:ppp" -> "cpu-clock", keep "sched:sched_switch". */
		const char *c = memrchr(h->event, ':', h->event_len);

		if (c && c > h->event) {
			const char *m = c + 1, *me = h->event + h->event_len;

			while (m < me && *m && strchr("ukhIGHpPSDWeb", *m))
				m++;
			if (m == me && c + 1 < me)
				h->event_len = (size_t)(c - h->event);
		}
	}
	h->rest = te;
	return true;
}

bool fmt_perfscript_sniff(const void *data, size_t n)
{
	struct fmt_lines it;
	struct ps_hdr h;

	fmt_lines_init(&it, data, PROF_MIN(n, 4096));
	while (fmt_lines_next(&it)) {
		const char *s = it.line, *e = s + it.len;

		if (skip_ws(s, e) == e || *s == '#')
			continue;
		/* A line cut by the 4 KiB window still has its header part. */
		return ps_header(s, e, &h);
	}
	return false;
}

static uint32_t ps_event_find(struct ps_ctx *c, const char *name, size_t len)
{
	for (size_t i = 0; i < c->events.n; i++)
		if (c->events.v[i].len == len && memcmp(c->events.v[i].name, name, len) == 0)
			return (uint32_t)i;
	return UINT32_MAX;
}

static uint32_t ps_mapping(struct ps_ctx *c, const char *dso, size_t len)
{
	struct model_profile *p = c->p;
	uint32_t sid;

	if (len == 0 || (len == 9 && memcmp(dso, "[unknown]", 9) == 0))
		return 0;
	sid = model_intern_n(p, dso, len);
	while (c->map_of_str.n <= sid)
		VEC_PUSH(&c->map_of_str, 0);
	if (!c->map_of_str.v[sid]) {
		struct model_mapping m = { 0 };

		m.filename = sid;
		m.has_functions = true;
		c->map_of_str.v[sid] = model_mapping_add(p, &m) + 1;
	}
	return c->map_of_str.v[sid] - 1;
}

/* One frame "addr sym+off (dso)" in [s, e), s at the address. */
static int ps_frame(struct ps_ctx *c, struct fmt_lines *it, const char *s, const char *e,
		    struct prof_err *err)
{
	struct model_profile *p = c->p;
	const char *ae = token_end(s, e), *sym, *sym_e, *dso = NULL, *dso_e = NULL;
	uint64_t addr;
	uint32_t map, fn = 0, li, id;
	bool kernel;
	char key[16];

	if (!hex(s, ae, &addr))
		return fmt_text_err(err, 0, WHAT, it, s,
				    "expected a frame \"address symbol (dso)\"");
	sym = skip_ws(ae, e);
	sym_e = e;
	while (sym_e > sym && is_ws(sym_e[-1]))
		sym_e--;
	if (sym_e > sym && sym_e[-1] == ')') {
		int depth = 0;

		for (const char *q = sym_e; q-- > sym;) {
			if (*q == ')')
				depth++;
			else if (*q == '(' && --depth == 0) {
				dso = q + 1;
				dso_e = sym_e - 1;
				sym_e = q;
				break;
			}
		}
		while (sym_e > sym && is_ws(sym_e[-1]))
			sym_e--;
	}
	/* Strip "+0x1f" from the symbol. */
	for (const char *q = sym_e; q-- > sym;) {
		if (*q != '+')
			continue;
		if (q > sym && sym_e - q > 3 && q[1] == '0' && q[2] == 'x' && is_hex(q + 3, sym_e))
			sym_e = q;
		break;
	}
	map = dso ? ps_mapping(c, dso, (size_t)(dso_e - dso)) : 0;
	kernel = dso && ((dso_e - dso >= 8 && memcmp(dso, "[kernel.", 8) == 0) ||
			 (dso_e - dso >= 14 && memcmp(dso, "[guest.kernel.", 14) == 0));
	if (sym_e > sym && !(sym_e - sym == 9 && memcmp(sym, "[unknown]", 9) == 0))
		fn = model_function_intern(p, model_intern_n(p, sym, (size_t)(sym_e - sym)), 0, 0,
					   0);
	memcpy(key, &map, 4);
	memcpy(key + 4, &fn, 4);
	memcpy(key + 8, &addr, 8);
	id = strtab_intern(&c->lockeys, key, sizeof(key));
	while (c->loc_of_key.n <= id)
		VEC_PUSH(&c->loc_of_key, 0);
	if (!c->loc_of_key.v[id]) {
		struct model_line ln = { fn, 0, 0 };

		li = model_location_add(p, map, addr, &ln, fn ? 1 : 0);
		p->locations.v[li].frame_type = kernel ? c->t_kernel : c->t_native;
		c->loc_of_key.v[id] = li + 1;
	}
	VEC_PUSH(&c->locs, c->loc_of_key.v[id] - 1);
	return 0;
}

static void ps_finish(struct ps_ctx *c)
{
	uint32_t id, off;

	if (!c->open)
		return;
	id = strtab_intern(&c->stackkeys, (const char *)c->locs.v, c->locs.n * sizeof(uint32_t));
	while (c->stack_of_key.n <= id)
		VEC_PUSH(&c->stack_of_key, 0);
	if (!c->stack_of_key.v[id])
		c->stack_of_key.v[id] = model_stack_add(c->p, c->locs.v, (uint32_t)c->locs.n) + 1;
	off = c->stack_of_key.v[id] - 1;
	model_sample_add(c->p, off, (uint32_t)c->locs.n, c->vals.v, c->labels, c->nlabels, c->ts,
			 0);
	c->open = false;
}

static void ps_start(struct ps_ctx *c, const struct ps_hdr *h)
{
	struct model_profile *p = c->p;
	struct model_label *l = c->labels;
	uint32_t ev = ps_event_find(c, h->event, h->event_len);

	memset(c->vals.v, 0, c->vals.n * sizeof(*c->vals.v));
	c->vals.v[0] = 1;
	if (ev != UINT32_MAX && c->events.v[ev].col && h->has_period)
		c->vals.v[c->events.v[ev].col] = h->period;
	memset(c->labels, 0, sizeof(c->labels));
	l->key = c->k_comm;
	l->str = model_intern_n(p, h->comm, h->comm_len);
	l++;
	l->key = c->k_tid;
	l->num = h->tid;
	l++;
	if (h->has_pid) {
		l->key = c->k_pid;
		l->num = h->pid;
		l++;
	}
	if (h->has_cpu) {
		l->key = c->k_cpu;
		l->num = h->cpu;
		l++;
	}
	c->nlabels = (uint32_t)(l - c->labels);
	c->ts = h->ts_ns;
	c->locs.n = 0;
	c->open = true;
}

/* Pass 1: the events, and which carry a period; sets up the value columns. */
static void ps_columns(struct ps_ctx *c, const void *data, size_t n)
{
	struct model_profile *p = c->p;
	struct fmt_lines it;
	struct ps_hdr h;
	bool have_period_type = false;

	fmt_lines_init(&it, data, n);
	while (fmt_lines_next(&it)) {
		uint32_t i;

		if (!it.len || is_ws(*it.line) || !ps_header(it.line, it.line + it.len, &h))
			continue;
		i = ps_event_find(c, h.event, h.event_len);
		if (i == UINT32_MAX) {
			struct ps_event ev = { h.event, h.event_len, 0 };

			VEC_PUSH(&c->events, ev);
			i = (uint32_t)c->events.n - 1;
		}
		if (h.has_period && !c->events.v[i].col) {
			bool clock = (h.event_len == 9 && !memcmp(h.event, "cpu-clock", 9)) ||
				     (h.event_len == 10 && !memcmp(h.event, "task-clock", 10));
			char *name = xstrndup(h.event, h.event_len);
			bool cpu_taken = false;

			for (size_t k = 0; k < p->sample_types.n; k++)
				if (!strcmp(model_str(p, p->sample_types.v[k].type), "cpu"))
					cpu_taken = true;
			if (!p->sample_types.n)
				model_sample_type_add(p, "samples", "count");
			c->events.v[i].col =
				model_sample_type_add(p, clock && !cpu_taken ? "cpu" : name,
						      clock ? "nanoseconds" : "count");
			if (!have_period_type) {
				p->period_type = p->sample_types.v[c->events.v[i].col];
				p->period = h.period;
				have_period_type = true;
			}
			free(name);
		}
	}
	if (!p->sample_types.n)
		model_sample_type_add(p, "samples", "count");
	VEC_RESERVE(&c->vals, p->sample_types.n);
	c->vals.n = p->sample_types.n;
}

int fmt_perfscript_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			  struct model_profile *out, struct prof_err *err)
{
	struct ps_ctx c = { 0 };
	struct fmt_lines it;
	size_t max = opts && opts->max_input ? opts->max_input : FMT_DEFAULT_MAX_INPUT;
	size_t max_samples = opts ? opts->max_samples : 0;
	int rc = 0;

	if (n > max)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    WHAT ": input of %zu bytes exceeds the limit of %zu bytes", n,
				    max);
	c.p = out;
	strtab_init(&c.lockeys);
	strtab_init(&c.stackkeys);
	c.k_comm = model_intern(out, "thread.name");
	c.k_tid = model_intern(out, "thread.id");
	c.k_pid = model_intern(out, "process.pid");
	c.k_cpu = model_intern(out, "cpu.logical_number");
	c.t_kernel = model_intern(out, "kernel");
	c.t_native = model_intern(out, "native");
	ps_columns(&c, data, n);

	fmt_lines_init(&it, data, n);
	while (fmt_lines_next(&it)) {
		const char *s = it.line, *e = s + it.len, *f;
		struct ps_hdr h;

		f = skip_ws(s, e);
		if (f == e) {
			ps_finish(&c);
			continue;
		}
		if (f == s && *s == '#' && !c.open)
			continue; /* perf script --header lines */
		if (f > s) {
			if (!c.open) {
				rc = fmt_text_err(
					err, 0, WHAT, &it, f,
					"frame line outside a sample (no header above it)");
				goto out;
			}
			rc = ps_frame(&c, &it, f, e, err);
			if (rc)
				goto out;
			continue;
		}
		if (!ps_header(s, e, &h)) {
			rc = fmt_text_err(err, 0, WHAT, &it, h.bad, "%s", h.why);
			goto out;
		}
		ps_finish(&c);
		if (max_samples && out->samples.n >= max_samples) {
			rc = fmt_text_err(err, -PROF_ETOOBIG, WHAT, &it, s, "more than %zu samples",
					  max_samples);
			goto out;
		}
		ps_start(&c, &h);
		f = skip_ws(h.rest, e);
		if (f < e && is_hex(f, token_end(f, e)) && skip_ws(token_end(f, e), e) < e) {
			rc = ps_frame(&c, &it, f, e, err);
			if (rc)
				goto out;
		}
	}
	ps_finish(&c);
	if (!out->samples.n)
		rc = prof_err_set(err, -PROF_EFORMAT, 0, WHAT ": no sample header found");
out:
	strtab_release(&c.lockeys);
	strtab_release(&c.stackkeys);
	VEC_FREE(&c.events);
	VEC_FREE(&c.loc_of_key);
	VEC_FREE(&c.stack_of_key);
	VEC_FREE(&c.map_of_str);
	VEC_FREE(&c.locs);
	VEC_FREE(&c.vals);
	return rc;
}
