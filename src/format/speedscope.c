// SPDX-License-Identifier: Apache-2.0
/*
 * speedscope.c - speedscope JSON decoder; see speedscope.h for the mapping.
 *
 * Evented profiles keep the open frames as a node of a trie of stacks
 * (parent node, location) -> node, so each event costs O(1) and a stack
 * is written to the model once, when a sample first needs it; every
 * stack entry written is charged against FMT_STACK_BUDGET, which bounds
 * the output of deep, wide event streams by the input size. No recursion:
 * nesting lives in explicit vectors.
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "format/speedscope.h"
#include "format/textutil.h"

#include <math.h>

#define WHAT "speedscope"

struct ss_node {
	uint32_t parent; /* node index, 0 = the empty stack */
	uint32_t loc;
	uint32_t depth;
	uint32_t stack_off; /* + 1, 0 = not written yet */
};

struct ss_ctx {
	struct model_profile *p;
	struct prof_err *err;
	json_t *frames;
	size_t nframes;
	VEC(uint32_t) loc_of_frame; /* frame index -> location (0 = not yet) */
	VEC(struct ss_node) nodes;
	struct fmt_idmap children; /* parent << 32 | loc -> node */
	struct strtab stackkeys;   /* sampled: leaf-first location ids */
	VEC(uint32_t) stack_of_key;
	VEC(uint32_t) locs;
	VEC(int64_t) vals;
	uint64_t budget, budget0, max_samples;
	struct model_label label;
};

struct ss_unit {
	const char *name;
	double factor; /* to the column's unit */
	const char *type, *unit;
};

static const struct ss_unit units[] = {
	{ "none", 1, "samples", "count" },
	{ "nanoseconds", 1, "cpu", "nanoseconds" },
	{ "microseconds", 1e3, "cpu", "nanoseconds" },
	{ "milliseconds", 1e6, "cpu", "nanoseconds" },
	{ "seconds", 1e9, "cpu", "nanoseconds" },
	{ "bytes", 1, "alloc_space", "bytes" },
};

#define SS_ERR(c, ...) prof_err_set((c)->err, -PROF_ECORRUPT, -1, WHAT ": " __VA_ARGS__)

static const char *frame_name(struct ss_ctx *c, size_t fi)
{
	const char *s = json_string_value(json_object_get(json_array_get(c->frames, fi), "name"));

	return s ? s : "?";
}

/* Location of shared frame @fi (checked to be in range by the caller). */
static int ss_location(struct ss_ctx *c, size_t fi, uint32_t *out)
{
	struct model_profile *p = c->p;
	json_t *f = json_array_get(c->frames, fi), *name, *file, *line, *col;
	int64_t ln = 0, cn = 0;
	struct model_line l = { 0 };

	if (c->loc_of_frame.v[fi]) {
		*out = c->loc_of_frame.v[fi];
		return 0;
	}
	name = json_object_get(f, "name");
	file = json_object_get(f, "file");
	line = json_object_get(f, "line");
	col = json_object_get(f, "col");
	if (!json_is_object(f) || !json_is_string(name))
		return SS_ERR(c, "shared.frames[%zu]: not an object with a string \"name\"", fi);
	if ((file && !json_is_null(file) && !json_is_string(file)) ||
	    (line && !json_is_null(line) && !fmt_json_i64(line, false, &ln)) ||
	    (col && !json_is_null(col) && !fmt_json_i64(col, false, &cn)))
		return SS_ERR(c,
			      "shared.frames[%zu]: \"file\" must be a string, \"line\" and "
			      "\"col\" integers",
			      fi);
	l.function = model_function_intern(
		p, model_intern_n(p, json_string_value(name), json_string_length(name)), 0,
		json_is_string(file)
			? model_intern_n(p, json_string_value(file), json_string_length(file))
			: 0,
		ln);
	l.line = ln;
	l.column = cn;
	*out = c->loc_of_frame.v[fi] = model_location_add(p, 0, 0, &l, 1);
	return 0;
}

static int ss_frame_index(struct ss_ctx *c, const json_t *v, const char *path, size_t pi, size_t i,
			  size_t *fi)
{
	int64_t x;

	if (!fmt_json_i64(v, false, &x) || x < 0 || (uint64_t)x >= c->nframes)
		return SS_ERR(c,
			      "profiles[%zu].%s[%zu]: frame index must be an integer in [0, %zu)",
			      pi, path, i, c->nframes);
	*fi = (size_t)x;
	return 0;
}

static int ss_charge(struct ss_ctx *c, uint64_t entries)
{
	if (entries > c->budget)
		return prof_err_set(c->err, -PROF_ETOOBIG, -1,
				    WHAT ": stacks would exceed %" PRIu64
					 " entries (the limit for an input of this size)",
				    c->budget0);
	c->budget -= entries;
	return 0;
}

static int ss_add_sample(struct ss_ctx *c, uint32_t off, uint32_t n)
{
	if (c->max_samples && c->p->samples.n >= c->max_samples)
		return prof_err_set(c->err, -PROF_ETOOBIG, -1,
				    WHAT ": more than %" PRIu64 " samples", c->max_samples);
	model_sample_add(c->p, off, n, c->vals.v, &c->label, 1, 0, 0);
	return 0;
}

/* Value of weight @w (already checked finite, >= 0) in the column's unit. */
static int ss_scale(struct ss_ctx *c, double w, double factor, size_t pi, int64_t *out)
{
	double v = round(w * factor);

	if (!(v < 9.2e18))
		return SS_ERR(c, "profiles[%zu]: value %g out of range", pi, w);
	*out = (int64_t)v;
	return 0;
}

static int ss_sampled(struct ss_ctx *c, json_t *prof, size_t pi, uint32_t col, double factor)
{
	json_t *samples = json_object_get(prof, "samples");
	json_t *weights = json_object_get(prof, "weights");
	size_t ns;
	int rc;

	if (!json_is_array(samples))
		return SS_ERR(c, "profiles[%zu]: sampled profile without a \"samples\" array", pi);
	ns = json_array_size(samples);
	if (weights && !json_is_null(weights) &&
	    (!json_is_array(weights) || json_array_size(weights) != ns))
		return SS_ERR(
			c,
			"profiles[%zu]: \"weights\" must be an array as long as \"samples\" (%zu)",
			pi, ns);
	if (json_is_null(weights))
		weights = NULL;
	for (size_t i = 0; i < ns; i++) {
		json_t *st = json_array_get(samples, i);
		double w = 1;
		size_t depth;
		uint32_t id;

		if (weights &&
		    (!fmt_json_num(json_array_get(weights, i), &w) || !isfinite(w) || w < 0))
			return SS_ERR(
				c,
				"profiles[%zu].weights[%zu]: weight must be a non-negative number",
				pi, i);
		if (!json_is_array(st))
			return SS_ERR(c,
				      "profiles[%zu].samples[%zu]: not an array of frame indexes",
				      pi, i);
		if (w == 0)
			continue;
		depth = json_array_size(st);
		c->locs.n = 0;
		VEC_RESERVE(&c->locs, depth);
		for (size_t k = depth; k-- > 0;) {
			size_t fi;
			uint32_t loc;

			rc = ss_frame_index(c, json_array_get(st, k), "samples", pi, i, &fi);
			if (!rc)
				rc = ss_location(c, fi, &loc);
			if (rc)
				return rc;
			c->locs.v[c->locs.n++] = loc;
		}
		memset(c->vals.v, 0, c->vals.n * sizeof(int64_t));
		rc = ss_scale(c, w, factor, pi, &c->vals.v[col]);
		if (rc)
			return rc;
		id = strtab_intern(&c->stackkeys, (const char *)c->locs.v,
				   c->locs.n * sizeof(uint32_t));
		while (c->stack_of_key.n <= id)
			VEC_PUSH(&c->stack_of_key, 0);
		if (!c->stack_of_key.v[id]) {
			rc = ss_charge(c, c->locs.n);
			if (rc)
				return rc;
			c->stack_of_key.v[id] =
				model_stack_add(c->p, c->locs.v, (uint32_t)c->locs.n) + 1;
		}
		rc = ss_add_sample(c, c->stack_of_key.v[id] - 1, (uint32_t)c->locs.n);
		if (rc)
			return rc;
	}
	return 0;
}

/* The model stack of trie node @ni, written on first use. */
static int ss_node_stack(struct ss_ctx *c, uint32_t ni, uint32_t *off)
{
	struct ss_node *nd = &c->nodes.v[ni];
	int rc;

	if (!nd->stack_off) {
		uint32_t depth = nd->depth;

		rc = ss_charge(c, depth);
		if (rc)
			return rc;
		c->locs.n = 0;
		VEC_RESERVE(&c->locs, depth);
		for (uint32_t k = ni; k; k = c->nodes.v[k].parent)
			c->locs.v[c->locs.n++] = c->nodes.v[k].loc;
		c->nodes.v[ni].stack_off = model_stack_add(c->p, c->locs.v, depth) + 1;
	}
	*off = c->nodes.v[ni].stack_off - 1;
	return 0;
}

static int ss_evented(struct ss_ctx *c, json_t *prof, size_t pi, uint32_t col, double factor)
{
	json_t *events = json_object_get(prof, "events");
	VEC(size_t) open = { 0 }; /* frame indexes, innermost last */
	uint32_t cur = 0;	  /* trie node of the open frames */
	int64_t prev_t = 0;
	double prev_at = 0;
	int rc = 0;

	if (!json_is_array(events))
		return SS_ERR(c, "profiles[%zu]: evented profile without an \"events\" array", pi);
	for (size_t i = 0; i < json_array_size(events); i++) {
		json_t *ev = json_array_get(events, i);
		const char *type = json_string_value(json_object_get(ev, "type"));
		double at;
		int64_t t = 0;
		size_t fi;

		if (!json_is_object(ev) || !type || (strcmp(type, "O") && strcmp(type, "C")) ||
		    !fmt_json_num(json_object_get(ev, "at"), &at) || !isfinite(at)) {
			rc = SS_ERR(c,
				    "profiles[%zu].events[%zu]: expected {\"type\": \"O\"|\"C\", "
				    "\"at\": number, \"frame\": index}",
				    pi, i);
			goto out;
		}
		rc = ss_frame_index(c, json_object_get(ev, "frame"), "events", pi, i, &fi);
		if (rc)
			goto out;
		if (i > 0 && at < prev_at) {
			rc = SS_ERR(
				c,
				"profiles[%zu].events[%zu]: at %g is before the previous event's %g",
				pi, i, at, prev_at);
			goto out;
		}
		rc = ss_scale(c, fabs(at), factor, pi, &t);
		if (rc)
			goto out;
		if (at < 0)
			t = -t;
		if (i > 0 && cur && t > prev_t) {
			uint32_t off;

			rc = ss_node_stack(c, cur, &off);
			if (rc)
				goto out;
			memset(c->vals.v, 0, c->vals.n * sizeof(int64_t));
			c->vals.v[col] = t - prev_t;
			rc = ss_add_sample(c, off, c->nodes.v[cur].depth);
			if (rc)
				goto out;
		}
		prev_t = t;
		prev_at = at;
		if (type[0] == 'O') {
			uint32_t loc, child;
			uint64_t key;

			rc = ss_location(c, fi, &loc);
			if (rc)
				goto out;
			key = (uint64_t)cur << 32 | loc;
			if (!fmt_idmap_get(&c->children, key, &child)) {
				struct ss_node nd = { cur, loc, c->nodes.v[cur].depth + 1, 0 };

				child = (uint32_t)c->nodes.n;
				VEC_PUSH(&c->nodes, nd);
				fmt_idmap_put(&c->children, key, child);
			}
			cur = child;
			VEC_PUSH(&open, fi);
		} else {
			if (!open.n) {
				rc = SS_ERR(
					c,
					"profiles[%zu].events[%zu]: closes frame %zu (\"%s\") but no frame is open",
					pi, i, fi, frame_name(c, fi));
				goto out;
			}
			if (open.v[open.n - 1] != fi) {
				size_t top = open.v[open.n - 1];

				rc = SS_ERR(
					c,
					"profiles[%zu].events[%zu]: closes frame %zu (\"%s\") but frame %zu (\"%s\") is on top",
					pi, i, fi, frame_name(c, fi), top, frame_name(c, top));
				goto out;
			}
			open.n--;
			cur = c->nodes.v[cur].parent;
		}
	}
	if (open.n)
		rc = SS_ERR(
			c,
			"profiles[%zu]: %zu frame%s still open at the end (innermost: %zu, \"%s\")",
			pi, open.n, open.n == 1 ? "" : "s", open.v[open.n - 1],
			frame_name(c, open.v[open.n - 1]));
out:
	VEC_FREE(&open);
	return rc;
}

static const struct ss_unit *ss_unit(const char *name)
{
	for (size_t i = 0; i < PROF_ARRAY_SIZE(units); i++)
		if (name && !strcmp(units[i].name, name))
			return &units[i];
	return NULL;
}

/* The value column of @u, added when new. */
static uint32_t ss_column(struct model_profile *p, const struct ss_unit *u)
{
	for (size_t i = 0; i < p->sample_types.n; i++)
		if (!strcmp(model_str(p, p->sample_types.v[i].type), u->type))
			return (uint32_t)i;
	return model_sample_type_add(p, u->type, u->unit);
}

static void ss_attr(struct model_profile *p, json_t *root, const char *key, const char *attr)
{
	const char *s = json_string_value(json_object_get(root, key));

	if (s)
		model_attr_add_str(p, attr, s);
}

int fmt_speedscope_decode(const void *data, size_t n, const struct fmt_decode_opts *opts,
			  struct model_profile *out, struct prof_err *err)
{
	struct ss_ctx c = { 0 };
	size_t max = opts && opts->max_input ? opts->max_input : FMT_DEFAULT_MAX_INPUT;
	unsigned only = opts ? opts->profile : 0;
	json_t *root, *profiles;
	size_t np, first, last;
	int64_t duration = 0;
	int rc = 0;

	if (n > max)
		return prof_err_set(err, -PROF_ETOOBIG, -1,
				    WHAT ": input of %zu bytes exceeds the limit of %zu bytes", n,
				    max);
	root = fmt_json_load(data, n, WHAT, err);
	if (!root)
		return err && err->code ? err->code : -PROF_ECORRUPT;
	c.p = out;
	c.err = err;
	c.budget = c.budget0 = FMT_STACK_BUDGET(n);
	c.max_samples = opts ? opts->max_samples : 0;
	fmt_idmap_init(&c.children);
	strtab_init(&c.stackkeys);
	{
		struct ss_node root_node = { 0, 0, 0, 0 };

		VEC_PUSH(&c.nodes, root_node);
	}
	c.frames = json_object_get(json_object_get(root, "shared"), "frames");
	profiles = json_object_get(root, "profiles");
	if (!json_is_object(root) || !json_is_array(c.frames) || !json_is_array(profiles)) {
		rc = prof_err_set(err, -PROF_ECORRUPT, -1,
				  WHAT ": expected an object with \"shared\": {\"frames\": [...]} "
				       "and \"profiles\": [...]");
		goto out;
	}
	c.nframes = json_array_size(c.frames);
	np = json_array_size(profiles);
	if (only > np) {
		rc = prof_err_set(err, -EINVAL, -1,
				  WHAT ": profile %u requested but the file has %zu profiles", only,
				  np);
		goto out;
	}
	first = only ? only - 1 : 0;
	last = only ? only : np;
	for (size_t i = 0; i < c.nframes; i++)
		VEC_PUSH(&c.loc_of_frame, 0);

	/* Columns first: the model wants them before any sample. */
	for (size_t pi = first; pi < last; pi++) {
		json_t *prof = json_array_get(profiles, pi);
		const char *un = json_string_value(json_object_get(prof, "unit"));
		const struct ss_unit *u = ss_unit(un);

		if (!json_is_object(prof)) {
			rc = SS_ERR(&c, "profiles[%zu]: not an object", pi);
			goto out;
		}
		if (!u) {
			rc = SS_ERR(&c,
				    "profiles[%zu]: unknown unit \"%s\" (none, nanoseconds, "
				    "microseconds, milliseconds, seconds, bytes)",
				    pi, un ? un : "(missing)");
			goto out;
		}
		ss_column(out, u);
	}
	if (!out->sample_types.n)
		model_sample_type_add(out, "samples", "count");
	VEC_RESERVE(&c.vals, out->sample_types.n);
	c.vals.n = out->sample_types.n;
	c.label.key = model_intern(out, "speedscope.profile");

	for (size_t pi = first; pi < last; pi++) {
		json_t *prof = json_array_get(profiles, pi);
		const char *type = json_string_value(json_object_get(prof, "type"));
		const char *name = json_string_value(json_object_get(prof, "name"));
		const struct ss_unit *u = ss_unit(json_string_value(json_object_get(prof, "unit")));
		uint32_t col = ss_column(out, u);
		double sv, ev;

		if (name) {
			c.label.str = model_intern(out, name);
		} else {
			char tmp[32];

			snprintf(tmp, sizeof(tmp), "profile %zu", pi + 1);
			c.label.str = model_intern(out, tmp);
		}
		if (type && !strcmp(type, "sampled")) {
			rc = ss_sampled(&c, prof, pi, col, u->factor);
		} else if (type && !strcmp(type, "evented")) {
			rc = ss_evented(&c, prof, pi, col, u->factor);
		} else {
			rc = SS_ERR(&c, "profiles[%zu]: unknown type \"%s\" (sampled or evented)",
				    pi, type ? type : "(missing)");
		}
		if (rc)
			goto out;
		if (strcmp(u->unit, "nanoseconds") == 0 &&
		    fmt_json_num(json_object_get(prof, "startValue"), &sv) &&
		    fmt_json_num(json_object_get(prof, "endValue"), &ev) && isfinite(ev - sv) &&
		    ev > sv && (ev - sv) * u->factor < 9.2e18)
			duration = PROF_MAX(duration, (int64_t)llround((ev - sv) * u->factor));
	}
	out->duration_ns = duration;
	ss_attr(out, root, "name", "speedscope.name");
	ss_attr(out, root, "exporter", "speedscope.exporter");
out:
	json_decref(root);
	fmt_idmap_release(&c.children);
	strtab_release(&c.stackkeys);
	VEC_FREE(&c.stack_of_key);
	VEC_FREE(&c.loc_of_frame);
	VEC_FREE(&c.nodes);
	VEC_FREE(&c.locs);
	VEC_FREE(&c.vals);
	return rc;
}
