// SPDX-License-Identifier: Apache-2.0
/* export.c - pprof, folded and SVG exports of query results; see export.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "base/utf8.h"
#include "format/pprof.h"
#include "model/profile.h"
#include "query/export.h"
#include "query/hashmap.h"
#include "query/scratch.h"
#include "query/units.h"

/* --- pprof ------------------------------------------------------------------------------ */

/*
 * The pprof location of frame name @nm: a function line for a real name;
 * for an unsymbolized frame its address (and mapping file), no line, as
 * it was ingested, so pprof names it as it would have.
 */
static uint32_t export_location(struct model_profile *p, const struct query_stackset *ss,
				uint32_t nm, struct qmap *mapping_of)
{
	const struct query_ss_raw *raw = query_stackset_raw(ss, nm);

	if (!raw) {
		uint32_t s = model_intern_n(p, ss->names.s[nm], ss->names.len[nm]);
		struct model_line ln = { model_function_intern(p, s, s, 0, 0), 0, 0 };

		return model_location_add(p, 0, 0, &ln, 1);
	}
	uint32_t mi = 0;
	if (raw->mapping) {
		mi = qmap_get(mapping_of, raw->mapping);
		if (mi == QMAP_NONE) {
			struct model_mapping m = { 0 };

			m.memory_limit = UINT64_MAX;
			m.filename = model_intern_n(p, ss->names.s[raw->mapping],
						    ss->names.len[raw->mapping]);
			mi = model_mapping_add(p, &m);
			qmap_put(mapping_of, raw->mapping, mi);
		}
	}
	return model_location_add(p, mi, raw->address, NULL, 0);
}

struct entry_order {
	const struct query_stackset *ss;
	const uint32_t *rank; /* query_stackset_node_order */
};

/* Entries by stack (node rank), then group values, then bucket. */
static int cmp_entry(const void *a, const void *b, void *arg)
{
	const struct entry_order *o = arg;
	const struct query_ss_entry *x = &o->ss->entries.v[*(const uint32_t *)a];
	const struct query_ss_entry *y = &o->ss->entries.v[*(const uint32_t *)b];
	int c;

	if (x->node != y->node)
		return o->rank[x->node] < o->rank[y->node] ? -1 : 1;
	if ((c = query_stackset_group_cmp(o->ss, x->group, y->group)))
		return c;
	return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

int query_export_pprof(const struct query_stackset *ss, bool gzip, struct buf *out,
		       struct prof_err *err)
{
	struct model_profile p;
	struct query_type_id t;
	struct qmap sample_of = { 0 };	/* node << 32 | group -> sample index */
	struct qmap mapping_of = { 0 }; /* names id of a mapping path -> mapping */
	uint32_t *loc_of = xcalloc(ss->names.n + 1, sizeof(uint32_t)); /* name -> location */
	VEC(uint32_t) locs = { 0 };
	VEC(struct model_label) labels = { 0 };
	int rc;

	model_profile_init(&p);
	query_type_split(ss->type, &t);
	model_sample_type_add(&p, t.sample_type[0] ? t.sample_type : "samples",
			      t.sample_unit[0] ? t.sample_unit : "count");
	p.period_type.type = model_intern(&p, t.period_type);
	p.period_type.unit = model_intern(&p, t.period_unit);
	p.time_ns = ss->from_ns;
	p.duration_ns = ss->to_ns > ss->from_ns ? ss->to_ns - ss->from_ns : 0;
	if (t.sample_type[0])
		p.default_sample_type = model_intern(&p, t.sample_type);

	/* Samples, locations and strings in the stacks' order, not the entries' (insertion). */
	uint32_t *rank, *ent = query_scratch_take(ss->entries.n + 1, sizeof(uint32_t), false);
	struct entry_order eo = { ss, NULL };

	query_stackset_node_order(ss, NULL, &rank);
	eo.rank = rank;
	for (size_t i = 0; i < ss->entries.n; i++)
		ent[i] = (uint32_t)i;
	if (ss->entries.n > 1)
		qsort_r(ent, ss->entries.n, sizeof(uint32_t), cmp_entry, &eo);
	for (size_t i = 0; i < ss->entries.n; i++) {
		const struct query_ss_entry *e = &ss->entries.v[ent[i]];
		uint64_t key = (uint64_t)e->node << 32 | e->group;
		uint32_t si = qmap_get(&sample_of, key);

		if (si != QMAP_NONE) {
			p.values.v[p.samples.v[si].value_off] =
				prof_add_sat(p.values.v[p.samples.v[si].value_off], e->value);
			continue;
		}
		/* A new (stack, group): its locations leaf first. */
		locs.n = 0;
		for (uint32_t at = e->node; at; at = ss->nodes.v[at].parent) {
			uint32_t nm = ss->nodes.v[at].name;

			if (!loc_of[nm])
				loc_of[nm] = export_location(&p, ss, nm, &mapping_of);
			VEC_PUSH(&locs, loc_of[nm]);
		}
		labels.n = 0;
		for (size_t k = 0; k < ss->ngroup_by; k++) {
			size_t len;
			const char *v = query_stackset_group_value(ss, e->group, k, &len);

			if (!len)
				continue;
			struct model_label l = { 0 };
			l.key = model_intern(&p, ss->group_by[k]);
			l.str = model_intern_n(&p, v, len);
			VEC_PUSH(&labels, l);
		}
		uint32_t off = model_stack_add(&p, locs.v, (uint32_t)locs.n);
		si = model_sample_add(&p, off, (uint32_t)locs.n, &e->value, labels.v,
				      (uint32_t)labels.n, 0, 0);
		qmap_put(&sample_of, key, si);
	}
	rc = model_profile_validate(&p, err);
	PROF_ASSERT(rc == 0); /* built above from valid parts */
	rc = fmt_pprof_encode(&p, gzip, out);
	if (rc)
		prof_err_set(err, rc, -1, "export: the pprof output exceeds %zu bytes", out->max);
	model_profile_release(&p);
	query_scratch_give(rank);
	query_scratch_give(ent);
	qmap_release(&sample_of);
	qmap_release(&mapping_of);
	free(loc_of);
	VEC_FREE(&locs);
	VEC_FREE(&labels);
	return rc;
}

/* --- folded ------------------------------------------------------------------------------ */

static int add_folded_name(struct buf *out, const char *s, size_t n)
{
	char tmp[256];
	size_t k = 0;
	int rc = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		unsigned char c = (unsigned char)s[i];

		tmp[k++] = c == ';' ? ':' : (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
		if (k == sizeof(tmp)) {
			rc = buf_add(out, tmp, k);
			k = 0;
		}
	}
	return rc ? rc : buf_add(out, tmp, k);
}

int query_export_folded(const struct query_stackset *ss, struct buf *out)
{
	int64_t *self;
	uint64_t *count;
	struct query_ss_path path = { 0 };
	int rc = 0;

	uint32_t *order;

	query_stackset_node_sums(ss, &self, &count);
	query_stackset_node_order(ss, &order, NULL);
	for (size_t k = 1; k < ss->nodes.n && !rc; k++) {
		uint32_t i = order[k];

		if (!self[i])
			continue;
		query_stackset_path(ss, i, &path);
		for (size_t j = 0; j < path.n && !rc; j++) {
			if (j)
				rc = buf_add(out, ";", 1);
			if (!rc)
				rc = add_folded_name(out, ss->names.s[path.v[j]],
						     ss->names.len[path.v[j]]);
		}
		if (!rc)
			rc = buf_addf(out, " %" PRId64 "\n", self[i]);
	}
	free(path.v);
	query_scratch_give(order);
	free(self);
	free(count);
	return rc;
}

/* --- SVG ------------------------------------------------------------------------------------ */

#define SVG_FRAME_H 16
#define SVG_PAD	    10
#define SVG_TOP	    60
#define SVG_BOTTOM  34

static int add_xml(struct buf *out, const char *s, size_t n)
{
	int rc = 0;
	size_t start = 0;

	for (size_t i = 0; i < n && !rc; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t k = c >= 0x80 ? utf8_seq_len((const unsigned char *)s + i, n - i) : 1;
		const char *rep = c == '&'		    ? "&amp;"
				  : c == '<'		    ? "&lt;"
				  : c == '>'		    ? "&gt;"
				  : c == '"'		    ? "&quot;"
				  : c == '\''		    ? "&apos;"
				  : (c < 0x20 || c == 0x7f) ? "?"
							    : NULL;

		if (!k) /* not UTF-8, which the document must be (XML 1.0 section 4.3.3) */
			rep = "&#xfffd;";
		if (!rep) {
			i += k - 1;
			continue;
		}
		rc = buf_add(out, s + start, i - start);
		if (!rc)
			rc = buf_addstr(out, rep);
		start = i + 1;
	}
	return rc ? rc : buf_add(out, s + start, n - start);
}

/* flamegraph.pl's "hot" palette, seeded by the name so colours are stable. */
static void frame_color(const char *s, size_t n, bool other, char *out, size_t outsz)
{
	uint64_t h = 1469598103934665603ULL;

	if (other) {
		snprintf(out, outsz, "rgb(190,190,190)");
		return;
	}
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	unsigned r = 205 + (unsigned)(h % 51), g = (unsigned)((h >> 8) % 231),
		 b = (unsigned)((h >> 20) % 56);
	snprintf(out, outsz, "rgb(%u,%u,%u)", r, g, b);
}

static const char svg_script[] =
	"<script type=\"text/ecmascript\"><![CDATA[\n"
	"'use strict';\n"
	"var W, FW, frames, details, matchedtxt, zoomed = null;\n"
	"function init() {\n"
	"  var svg = document.documentElement;\n"
	"  W = +svg.getAttribute('width'); FW = W - 2 * " /* pad */ "10;\n"
	"  frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
	"  details = document.getElementById('details');\n"
	"  matchedtxt = document.getElementById('matched');\n"
	"  frames.forEach(function (g) {\n"
	"    g.addEventListener('click', function () { zoom(g); });\n"
	"    g.addEventListener('mouseover', function () {\n"
	"      details.textContent = g.querySelector('title').textContent; });\n"
	"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  });\n"
	"  document.getElementById('search').addEventListener('click', search);\n"
	"  document.getElementById('reset').addEventListener('click', reset);\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if (e.key === 'Escape') { reset(); clearSearch(); }\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
	"  });\n"
	"  frames.forEach(function (g) { place(g, +g.dataset.x, +g.dataset.w); });\n"
	"}\n"
	"function place(g, x, w) {\n"
	"  var r = g.querySelector('rect'), t = g.querySelector('text');\n"
	"  var px = 10 + x * FW, pw = w * FW;\n"
	"  r.setAttribute('x', px.toFixed(2)); r.setAttribute('width', Math.max(pw, 0).toFixed(2));\n"
	"  t.setAttribute('x', (px + 3).toFixed(2));\n"
	"  var name = g.dataset.n, fit = Math.floor((pw - 6) / 7);\n"
	"  t.textContent = fit < 3 ? '' : name.length <= fit ? name : name.slice(0, fit - 2) + '..';\n"
	"}\n"
	"function zoom(g) {\n"
	"  var zx = +g.dataset.x, zw = +g.dataset.w, zd = +g.dataset.d;\n"
	"  if (zd === 0) { reset(); return; }\n"
	"  zoomed = g;\n"
	"  document.getElementById('reset').style.display = 'block';\n"
	"  frames.forEach(function (f) {\n"
	"    var x = +f.dataset.x, w = +f.dataset.w, d = +f.dataset.d, eps = 1e-12;\n"
	"    if (d >= zd && x >= zx - eps && x + w <= zx + zw + eps) {\n"
	"      f.style.display = ''; f.style.opacity = ''; place(f, (x - zx) / zw, w / zw);\n"
	"    } else if (d < zd && x <= zx + eps && x + w >= zx + zw - eps) {\n"
	"      f.style.display = ''; f.style.opacity = '0.5'; place(f, 0, 1);\n"
	"    } else { f.style.display = 'none'; }\n"
	"  });\n"
	"}\n"
	"function reset() {\n"
	"  zoomed = null;\n"
	"  document.getElementById('reset').style.display = 'none';\n"
	"  frames.forEach(function (f) {\n"
	"    f.style.display = ''; f.style.opacity = ''; place(f, +f.dataset.x, +f.dataset.w); });\n"
	"}\n"
	"function clearSearch() {\n"
	"  frames.forEach(function (f) {\n"
	"    var r = f.querySelector('rect'); r.setAttribute('fill', r.dataset.fill); });\n"
	"  matchedtxt.textContent = ' ';\n"
	"}\n"
	"function search() {\n"
	"  var term = prompt('Search frames (regular expression):', '');\n"
	"  if (term === null) return;\n"
	"  clearSearch();\n"
	"  if (term === '') return;\n"
	"  var re; try { re = new RegExp(term); } catch (e) { alert(e); return; }\n"
	"  var spans = [];\n"
	"  frames.forEach(function (f) {\n"
	"    if (!re.test(f.dataset.n)) return;\n"
	"    var r = f.querySelector('rect'); r.setAttribute('fill', 'rgb(230,0,230)');\n"
	"    spans.push([+f.dataset.x, +f.dataset.x + +f.dataset.w]);\n"
	"  });\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  var sum = 0, end = -1;\n"
	"  spans.forEach(function (s) {\n"
	"    if (s[0] >= end) { sum += s[1] - s[0]; end = s[1]; }\n"
	"    else if (s[1] > end) { sum += s[1] - end; end = s[1]; } });\n"
	"  matchedtxt.textContent = 'Matched: ' + (100 * sum).toFixed(2) + '%';\n"
	"}\n"
	"window.addEventListener('load', init);\n"
	"]]></script>\n";

int query_export_svg(const struct query_flamegraph *fg, const char *type,
		     const struct query_svg_opts *o, struct buf *out)
{
	unsigned width = o && o->width ? o->width : 1200;
	double fw = (double)width - 2 * SVG_PAD;
	double total = fg->nodes.v[0].total > 0 ? (double)fg->nodes.v[0].total : 1.0;
	size_t n = fg->nodes.n;
	double *x = xcalloc(n + 1, sizeof(double)); /* start, in value units */
	uint32_t *depth = xcalloc(n + 1, sizeof(uint32_t));
	uint32_t maxdepth = 0;
	uint64_t skipped = 0;
	char val[64], tot[64], color[32];
	int rc;

	/* Positions: children laid left to right in their sorted order, parents first. */
	VEC(uint32_t) st = { 0 };
	VEC_PUSH(&st, 0);
	while (st.n) {
		uint32_t id = st.v[--st.n];
		const struct query_flame_node *nd = &fg->nodes.v[id];
		double at = x[id];

		if (depth[id] > maxdepth)
			maxdepth = depth[id];
		for (uint32_t c = 0; c < nd->nchildren; c++) {
			uint32_t ch = fg->children.v[nd->child_off + c];

			x[ch] = at;
			depth[ch] = depth[id] + 1;
			at += (double)PROF_MAX(fg->nodes.v[ch].total, 0);
			VEC_PUSH(&st, ch);
		}
	}
	unsigned height = SVG_TOP + (maxdepth + 1) * SVG_FRAME_H + SVG_BOTTOM;

	rc = buf_addf(out,
		      "<?xml version=\"1.0\" standalone=\"no\"?>\n"
		      "<svg version=\"1.1\" width=\"%u\" height=\"%u\" viewBox=\"0 0 %u %u\" "
		      "xmlns=\"http://www.w3.org/2000/svg\">\n"
		      "<style>text { font-family: Verdana, sans-serif; font-size: 12px; fill: "
		      "rgb(0,0,0); } g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; "
		      "cursor: pointer; } #title { font-size: 17px; } .btn { cursor: pointer; "
		      "}</style>\n",
		      width, height, width, height);
	if (!rc)
		rc = buf_add(out, svg_script, sizeof(svg_script) - 1);
	if (!rc)
		rc = buf_addf(out,
			      "<rect x=\"0\" y=\"0\" width=\"%u\" height=\"%u\" "
			      "fill=\"rgb(248,248,240)\"/>\n<text id=\"title\" x=\"%u\" y=\"24\" "
			      "text-anchor=\"middle\">",
			      width, height, width / 2);
	const char *title = o && o->title ? o->title : "Flame Graph";
	if (!rc)
		rc = add_xml(out, title, strlen(title));
	query_unit_format(fg->unit, (double)fg->total, tot, sizeof(tot));
	if (!rc)
		rc = buf_addf(out, "</text>\n<text x=\"%u\" y=\"44\" text-anchor=\"middle\">",
			      width / 2);
	if (!rc && o && o->subtitle)
		rc = add_xml(out, o->subtitle, strlen(o->subtitle));
	else if (!rc && type)
		rc = add_xml(out, type, strlen(type));
	if (!rc)
		rc = buf_addf(out, " (total %s%s)</text>\n", tot, fg->inverted ? ", inverted" : "");
	if (!rc)
		rc = buf_addf(
			out,
			"<text id=\"reset\" class=\"btn\" x=\"%d\" y=\"24\" "
			"style=\"display:none\">Reset Zoom</text>\n"
			"<text id=\"search\" class=\"btn\" x=\"%u\" y=\"24\" "
			"text-anchor=\"end\">Search</text>\n"
			"<text id=\"matched\" x=\"%u\" y=\"%u\" text-anchor=\"end\"> </text>\n"
			"<text id=\"details\" x=\"%d\" y=\"%u\"> </text>\n",
			SVG_PAD, width - SVG_PAD, width - SVG_PAD, height - 12, SVG_PAD,
			height - 12);

	/* Frames, parents before children. */
	st.n = 0;
	VEC_PUSH(&st, 0);
	while (st.n && !rc) {
		uint32_t id = st.v[--st.n];
		const struct query_flame_node *nd = &fg->nodes.v[id];
		double w = (double)PROF_MAX(nd->total, 0) / total;

		if (w * fw < 0.1 && id) {
			skipped++;
			continue; /* children are narrower still */
		}
		const char *name = strtab_get(&fg->names, nd->name);
		size_t nlen = fg->names.len[nd->name];
		double y = (double)height - SVG_BOTTOM - (double)(depth[id] + 1) * SVG_FRAME_H;

		frame_color(name, nlen, nd->other, color, sizeof(color));
		query_unit_format(fg->unit, (double)nd->total, val, sizeof(val));
		rc = buf_addf(
			out,
			"<g class=\"f\" data-x=\"%.9f\" data-w=\"%.9f\" data-d=\"%u\" data-n=\"",
			x[id] / total, w, depth[id]);
		if (!rc)
			rc = add_xml(out, name, nlen);
		if (!rc)
			rc = buf_addstr(out, "\"><title>");
		if (!rc)
			rc = add_xml(out, name, nlen);
		if (!rc)
			rc = buf_addf(
				out,
				" (%s, %.2f%%)</title><rect x=\"%.2f\" y=\"%.1f\" "
				"width=\"%.2f\" height=\"%d\" fill=\"%s\" data-fill=\"%s\" "
				"rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%.1f\"></text></g>\n",
				val, 100.0 * w, SVG_PAD + x[id] / total * fw, y, w * fw,
				SVG_FRAME_H - 1, color, color, SVG_PAD + x[id] / total * fw + 3,
				y + SVG_FRAME_H - 4.5);
		for (uint32_t c = nd->nchildren; c-- > 0;)
			VEC_PUSH(&st, fg->children.v[nd->child_off + c]);
	}
	if (!rc)
		rc = buf_addf(out,
			      "<text x=\"%u\" y=\"%u\" text-anchor=\"end\" "
			      "style=\"font-size:10px\">%" PRIu64
			      " frames too narrow to draw; %" PRIu64 " nodes merged into \"other\""
			      "</text>\n</svg>\n",
			      width - SVG_PAD, SVG_TOP - 6, skipped, fg->truncated_nodes);
	VEC_FREE(&st);
	free(x);
	free(depth);
	return rc;
}
