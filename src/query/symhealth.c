// SPDX-License-Identifier: Apache-2.0
/*
 * symhealth.c - stack health; see symhealth.h.
 *
 * One totals scan: per source, each location's class is worked out once
 * (qmap location -> class and binary), then every stack is walked leaf to
 * root adding its rows to the counters of the frames on it; a stack whose
 * root is the producers' "[truncated]" marker counts as not fully
 * unwound, for the selection and for each binary on it. A binary's
 * "samples" counts each row once however many of its frames the stack
 * holds (a per-binary stamp of the last stack seen).
 */
#include "base/compat.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "query/hashmap.h"
#include "query/symhealth.h"
#include "store/head.h"

enum sh_class { SH_PRODUCER = 0, SH_RESOLVED = 1, SH_UNRESOLVED = 2 };

/* The agent's resource attribute for a runtime it found but cannot unwind (agent/interp.h). */
#define SH_UNSUPPORTED_LABEL "profd.interpreter.unsupported"
#define SH_MAX_UNSUPPORTED   32

struct sh_binary {
	uint32_t path, build_id; /* ids in sh.strs */
	uint64_t frames, frames_ok, samples, samples_bad, samples_truncated;
	uint64_t stamp; /* last stack counted in samples */
	bool stamp_bad; /* that stack had an unresolved frame of this binary */
	int reason;	/* enum symbolizer_reason, -1 = not asked yet */
};

struct sh_runtime {
	uint32_t name; /* id in sh.strs */
	uint64_t frames, frames_ok;
};

struct sh {
	const struct query_symhealth_params *p;
	struct strtab strs;
	struct qmap bin_of; /* strtab id of "path\0build_id" -> binary index */
	VEC(struct sh_binary) bins;
	VEC(struct sh_runtime) rts;
	struct sym_frame *frames; /* SYM_FRAMES_MAX scratch */
	uint64_t rows, rows_bad, rows_truncated, nframes, nframes_ok, stack_seq;
	/* per source */
	struct qmap loc;   /* location -> class | binary << 2 | runtime << 22 */
	struct qmap trunc; /* root location -> 1 when it is the "[truncated]" marker, else 0 */
	VEC(uint32_t) touched;
	/* distinct values of SH_UNSUPPORTED_LABEL over the selected series, ids in strs */
	uint32_t unsupported[SH_MAX_UNSUPPORTED];
	size_t nunsupported;
};

static uint32_t sh_runtime(struct sh *h, const char *name)
{
	uint32_t id = strtab_intern_cstr(&h->strs, name);

	for (size_t i = 0; i < h->rts.n; i++)
		if (h->rts.v[i].name == id)
			return (uint32_t)i;
	if (h->rts.n >= 255)
		return 0; /* bounded: odd producers share the first slot */
	struct sh_runtime r = { .name = id };
	VEC_PUSH(&h->rts, r);
	return (uint32_t)(h->rts.n - 1);
}

static uint32_t sh_binary(struct sh *h, const char *path, const char *bid)
{
	char key[8192];
	int n = snprintf(key, sizeof(key), "%s%c%s", path, '\0', bid);
	uint32_t kid, idx;

	if (n < 0 || (size_t)n >= sizeof(key))
		n = (int)sizeof(key) - 1;
	kid = strtab_intern(&h->strs, key, (size_t)n);
	idx = qmap_get(&h->bin_of, kid);
	if (idx != QMAP_NONE)
		return idx;
	if (h->bins.n >= (1u << 20) - 1)
		return (uint32_t)(h->bins.n - 1); /* bounded (20 bits in the class word) */
	struct sh_binary b = {
		.path = strtab_intern_cstr(&h->strs, path),
		.build_id = strtab_intern_cstr(&h->strs, bid),
		.reason = -1,
	};
	VEC_PUSH(&h->bins, b);
	idx = (uint32_t)(h->bins.n - 1);
	qmap_put(&h->bin_of, kid, idx);
	return idx;
}

/* Class word of location @li of @d. */
static uint32_t sh_classify(struct sh *h, const struct model_profile *d, uint32_t li)
{
	const struct model_location *l = &d->locations.v[li];
	const struct model_mapping *m = l->mapping ? &d->mappings.v[l->mapping] : NULL;
	const char *rt = l->frame_type ? model_str(d, l->frame_type) : "";
	const char *path = m ? model_str(d, m->filename) : "";
	const char *bid = m ? model_str(d, m->build_id) : "";
	uint32_t r = sh_runtime(h, rt[0] ? rt : "native"), b, cls;

	/* The agent's placeholder for JIT code nothing named ([jit], agent/collect.h) names nothing. */
	if (l->nlines &&
	    !(l->nlines == 1 && !strcmp(path, "[jit]") &&
	      !strcmp(model_str(d, d->functions.v[d->lines.v[l->line_off].function].name),
		      "[jit]")))
		return SH_PRODUCER | r << 22;
	b = sh_binary(h, path, bid);
	cls = SH_UNRESOLVED;
	if (h->p->sym && path[0] != '[' && (path[0] || bid[0])) {
		struct symbolizer_mapping sm = { m->memory_start, m->memory_limit, m->file_offset };

		if (symbolizer_lookup_frames_mapped(h->p->sym, path, bid, &sm, l->address,
						    h->frames, SYM_FRAMES_MAX) > 0)
			cls = SH_RESOLVED;
	}
	return cls | b << 2 | r << 22;
}

static int sh_source_begin(void *arg, const struct store_source *src)
{
	struct sh *h = arg;

	(void)src;
	qmap_release(&h->loc);
	qmap_release(&h->trunc);
	return 0;
}

/*
 * Is location @li of @d the root frame producers put on a stack they cut
 * short? The agent's "[truncated]" pseudo-frame (agent/collect.c: its
 * stack copy or bpf_get_stack's frame limit ran out), JFR's truncated
 * stack traces (format/jfr.c).
 */
static bool sh_is_truncated(struct sh *h, const struct model_profile *d, uint32_t li)
{
	uint32_t w = qmap_get(&h->trunc, li);

	if (w == QMAP_NONE) {
		const struct model_location *l = &d->locations.v[li];
		const char *name = "";

		if (l->nlines && l->line_off < d->lines.n) {
			uint32_t fn = d->lines.v[l->line_off].function;

			if (fn && fn < d->functions.n)
				name = model_str(d, d->functions.v[fn].name);
		}
		w = !strcmp(name, "[truncated]");
		qmap_put(&h->trunc, li, w);
	}
	return w == 1;
}

static int sh_totals(void *arg, const struct store_source *src, const struct store_stack_total *t,
		     size_t n, uint64_t nrows)
{
	struct sh *h = arg;

	(void)nrows;
	for (size_t i = 0; i < n; i++) {
		uint64_t rows = t[i].rows;
		bool bad = false;

		uint32_t root = UINT32_MAX;
		bool truncated;

		h->stack_seq++;
		h->touched.n = 0;
		for (uint32_t s = t[i].stack; s != 0 && s < src->nstacks;
		     s = src->stacks[s].parent) {
			uint32_t li = src->stacks[s].loc, w = qmap_get(&h->loc, li);

			if (li >= src->dict->locations.n)
				continue;
			root = li;
			if (w == QMAP_NONE) {
				w = sh_classify(h, src->dict, li);
				qmap_put(&h->loc, li, w);
			}
			uint32_t cls = w & 3, rt = w >> 22;
			h->nframes += rows;
			h->rts.v[rt].frames += rows;
			if (cls != SH_UNRESOLVED) {
				h->nframes_ok += rows;
				h->rts.v[rt].frames_ok += rows;
			}
			if (cls == SH_PRODUCER)
				continue;
			struct sh_binary *b = &h->bins.v[(w >> 2) & 0xfffff];
			b->frames += rows;
			if (cls == SH_RESOLVED)
				b->frames_ok += rows;
			else
				bad = true;
			if (b->stamp != h->stack_seq) {
				b->stamp = h->stack_seq;
				b->stamp_bad = false;
				VEC_PUSH(&h->touched, (w >> 2) & 0xfffff);
			}
			b->stamp_bad |= cls == SH_UNRESOLVED;
		}
		truncated = root != UINT32_MAX && sh_is_truncated(h, src->dict, root);
		for (size_t k = 0; k < h->touched.n; k++) {
			struct sh_binary *b = &h->bins.v[h->touched.v[k]];

			b->samples += rows;
			if (b->stamp_bad)
				b->samples_bad += rows;
			if (truncated)
				b->samples_truncated += rows;
		}
		h->rows += rows;
		if (truncated)
			h->rows_truncated += rows;
		if (bad)
			h->rows_bad += rows;
	}
	return 0;
}

static const char *sh_hint(int reason)
{
	switch (reason) {
	case SYMBOLIZER_NO_FILE:
		return "the server cannot read this binary: upload it or its debug file "
		       "(profd debuginfo upload FILE)";
	case SYMBOLIZER_MISMATCH:
		return "the file at this path is another build: upload the debug file of this "
		       "build ID (profd debuginfo upload FILE)";
	case SYMBOLIZER_STRIPPED:
		return "the binary is stripped: upload its debug file (objcopy --only-keep-debug) "
		       "or the unstripped binary";
	case SYMBOLIZER_OK_SYMBOLS:
		return "names from a symbol table: upload DWARF for files, lines and inlined frames";
	default:
		return "";
	}
}

static int sh_cmp(const void *pa, const void *pb)
{
	const struct sh_binary *a = pa, *b = pb;

	if (a->samples_bad != b->samples_bad)
		return a->samples_bad > b->samples_bad ? -1 : 1;
	if (a->samples != b->samples)
		return a->samples > b->samples ? -1 : 1;
	return a->path < b->path ? -1 : a->path > b->path;
}

static int sh_write(struct sh *h, struct buf *out)
{
	int rc = 0;

	rc |= buf_addstr(out, "{\"type\":");
	rc |= h->p->type ? buf_add_json_str(out, h->p->type, strlen(h->p->type))
			 : buf_addstr(out, "null");
	rc |= buf_addf(out,
		       ",\"from\":%" PRId64 ",\"to\":%" PRId64 ",\"samples\":%" PRIu64
		       ",\"samples_with_unsymbolized\":%" PRIu64 ",\"samples_truncated\":%" PRIu64
		       ",\"frames\":%" PRIu64 ",\"frames_symbolized\":%" PRIu64 ",\"runtimes\":[",
		       h->p->from_ns / 1000000, h->p->to_ns / 1000000, h->rows, h->rows_bad,
		       h->rows_truncated, h->nframes, h->nframes_ok);
	for (size_t i = 0, w = 0; i < h->rts.n; i++) {
		const char *name = strtab_get(&h->strs, h->rts.v[i].name);

		if (!h->rts.v[i].frames)
			continue;
		rc |= buf_addstr(out, w++ ? ",{\"runtime\":" : "{\"runtime\":");
		rc |= buf_add_json_str(out, name, strlen(name));
		rc |= buf_addf(out, ",\"frames\":%" PRIu64 ",\"frames_symbolized\":%" PRIu64 "}",
			       h->rts.v[i].frames, h->rts.v[i].frames_ok);
	}
	rc |= buf_addstr(out, "],\"unsupported_runtimes\":[");
	for (size_t i = 0; i < h->nunsupported; i++) {
		const char *why = strtab_get(&h->strs, h->unsupported[i]);

		if (i)
			rc |= buf_addstr(out, ",");
		rc |= buf_add_json_str(out, why, strlen(why));
	}
	rc |= buf_addstr(out, "],\"binaries\":[");
	if (h->bins.n > 1)
		qsort(h->bins.v, h->bins.n, sizeof(h->bins.v[0]), sh_cmp);
	for (size_t i = 0, w = 0; i < h->bins.n && w < QUERY_SYMHEALTH_MAX_BINARIES; i++) {
		struct sh_binary *b = &h->bins.v[i];
		const char *path = strtab_get(&h->strs, b->path);
		const char *bid = strtab_get(&h->strs, b->build_id);
		int reason = SYMBOLIZER_NO_FILE;

		if (!b->frames)
			continue;
		if (h->p->sym && path[0] != '[' && (path[0] || bid[0]))
			reason = (int)symbolizer_binary_status(h->p->sym, path, bid);
		rc |= buf_addstr(out, w++ ? ",{\"path\":" : "{\"path\":");
		rc |= buf_add_json_str(out, path, strlen(path));
		rc |= buf_addstr(out, ",\"build_id\":");
		rc |= buf_add_json_str(out, bid, strlen(bid));
		rc |= buf_addf(out,
			       ",\"status\":\"%s\",\"frames\":%" PRIu64
			       ",\"frames_symbolized\":%" PRIu64 ",\"samples\":%" PRIu64
			       ",\"samples_unsymbolized\":%" PRIu64
			       ",\"samples_truncated\":%" PRIu64 ",\"hint\":",
			       symbolizer_reason_name((enum symbolizer_reason)reason), b->frames,
			       b->frames_ok, b->samples, b->samples_bad, b->samples_truncated);
		const char *hint = sh_hint(reason);
		rc |= buf_add_json_str(out, hint, strlen(hint));
		rc |= buf_addstr(out, "}");
	}
	rc |= buf_addstr(out, "]}");
	return rc ? -PROF_ETOOBIG : 0;
}

static int sh_series(void *arg, const struct store_source *src, const struct store_series *s)
{
	struct sh *h = arg;

	(void)src;
	for (uint32_t i = 0; i < s->nlabels; i++) {
		uint32_t id;
		size_t k;

		if (strcmp(s->labels[i].name, SH_UNSUPPORTED_LABEL))
			continue;
		id = strtab_intern_cstr(&h->strs, s->labels[i].value);
		for (k = 0; k < h->nunsupported && h->unsupported[k] != id; k++)
			;
		if (k == h->nunsupported && h->nunsupported < SH_MAX_UNSUPPORTED)
			h->unsupported[h->nunsupported++] = id;
	}
	return 0;
}

int query_symhealth_run(struct store *st, const struct query_symhealth_params *p, struct buf *out,
			struct prof_err *err)
{
	struct sh h = { .p = p };
	struct store_query q = { p->type, p->m, p->nm, p->from_ns, p->to_ns };
	struct store_visitor v = {
		.arg = &h, .source_begin = sh_source_begin, .series = sh_series, .totals = sh_totals
	};
	int rc;

	strtab_init(&h.strs);
	h.frames = xcalloc(SYM_FRAMES_MAX, sizeof(*h.frames));
	sh_runtime(&h, "native");
	rc = store_scan(st, &q, &v, NULL, err);
	if (!rc)
		rc = sh_write(&h, out);
	qmap_release(&h.loc);
	qmap_release(&h.trunc);
	qmap_release(&h.bin_of);
	VEC_FREE(&h.bins);
	VEC_FREE(&h.rts);
	VEC_FREE(&h.touched);
	free(h.frames);
	strtab_release(&h.strs);
	return rc;
}
