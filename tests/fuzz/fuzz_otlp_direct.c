// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_otlp_direct.c - libFuzzer target comparing the two OTLP decoders:
 * whenever the direct one (src/format/otlp_direct.c) accepts a byte
 * string, the protobuf-c one (fmt_otlp_decode_pbc) must accept it too and
 * build identical model profiles (same string ids, tables, samples and
 * labels); when it falls back it must leave its output empty. The
 * shared-dictionary form (fmt_otlp_decode_shared) of an accepted input
 * must decode, validate, share one dictionary and keep every profile's
 * samples, values and labels (the unit test compares the content); so must
 * the pending form (fmt_otlp_decode_pending), valid before and after it is
 * resolved, over the same stacks once resolved. When the direct one
 * rejects a byte string itself (fmt_otlp_decode_direct_err), protobuf-c
 * must reject it with the same code and message; when protobuf-c rejects
 * one, the store's decoders must answer with its code and message (or,
 * past the decoded size limit only, take it: their one dictionary is
 * counted once). Build and run: scripts/fuzz.sh (seeds: the corpus as
 * OTLP protobuf).
 */
#include "base/compat.h"
#include "base/err.h"
#include "format/otlp.h"
#include "model/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SAME(x, y) PROF_ASSERT((x) == (y))

static void same_labels(const struct model_label *a, const struct model_label *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		SAME(a[i].key, b[i].key);
		SAME(a[i].str, b[i].str);
		SAME(a[i].num, b[i].num);
		SAME(a[i].num_unit, b[i].num_unit);
	}
}

static void same_profile(const struct model_profile *a, const struct model_profile *b)
{
	SAME(a->strings.n, b->strings.n);
	for (uint32_t i = 0; i < a->strings.n; i++) {
		SAME(a->strings.len[i], b->strings.len[i]);
		PROF_ASSERT(memcmp(a->strings.s[i], b->strings.s[i], a->strings.len[i]) == 0);
	}
	SAME(a->mappings.n, b->mappings.n);
	for (size_t i = 0; i < a->mappings.n; i++) {
		const struct model_mapping *x = &a->mappings.v[i], *y = &b->mappings.v[i];

		SAME(x->memory_start, y->memory_start);
		SAME(x->memory_limit, y->memory_limit);
		SAME(x->file_offset, y->file_offset);
		SAME(x->filename, y->filename);
		SAME(x->build_id, y->build_id);
		SAME(x->has_functions, y->has_functions);
		SAME(x->has_filenames, y->has_filenames);
		SAME(x->has_line_numbers, y->has_line_numbers);
		SAME(x->has_inline_frames, y->has_inline_frames);
	}
	SAME(a->functions.n, b->functions.n);
	for (size_t i = 0; i < a->functions.n; i++) {
		SAME(a->functions.v[i].name, b->functions.v[i].name);
		SAME(a->functions.v[i].system_name, b->functions.v[i].system_name);
		SAME(a->functions.v[i].filename, b->functions.v[i].filename);
		SAME(a->functions.v[i].start_line, b->functions.v[i].start_line);
	}
	SAME(a->locations.n, b->locations.n);
	for (size_t i = 0; i < a->locations.n; i++) {
		const struct model_location *x = &a->locations.v[i], *y = &b->locations.v[i];

		SAME(x->mapping, y->mapping);
		SAME(x->address, y->address);
		SAME(x->line_off, y->line_off);
		SAME(x->nlines, y->nlines);
		SAME(x->is_folded, y->is_folded);
		SAME(x->frame_type, y->frame_type);
	}
	SAME(a->lines.n, b->lines.n);
	for (size_t i = 0; i < a->lines.n; i++) {
		SAME(a->lines.v[i].function, b->lines.v[i].function);
		SAME(a->lines.v[i].line, b->lines.v[i].line);
		SAME(a->lines.v[i].column, b->lines.v[i].column);
	}
	SAME(a->links.n, b->links.n);
	for (size_t i = 0; i < a->links.n; i++)
		PROF_ASSERT(memcmp(&a->links.v[i], &b->links.v[i], sizeof(a->links.v[i])) == 0);
	SAME(a->sample_types.n, b->sample_types.n);
	for (size_t i = 0; i < a->sample_types.n; i++) {
		SAME(a->sample_types.v[i].type, b->sample_types.v[i].type);
		SAME(a->sample_types.v[i].unit, b->sample_types.v[i].unit);
	}
	SAME(a->samples.n, b->samples.n);
	for (size_t i = 0; i < a->samples.n; i++) {
		const struct model_sample *x = &a->samples.v[i], *y = &b->samples.v[i];

		SAME(x->stack_off, y->stack_off);
		SAME(x->nstack, y->nstack);
		SAME(x->value_off, y->value_off);
		SAME(x->label_off, y->label_off);
		SAME(x->nlabels, y->nlabels);
		SAME(x->link, y->link);
		SAME(x->timestamp_ns, y->timestamp_ns);
	}
	SAME(a->stack_locs.n, b->stack_locs.n);
	for (size_t i = 0; i < a->stack_locs.n; i++)
		SAME(a->stack_locs.v[i], b->stack_locs.v[i]);
	SAME(a->values.n, b->values.n);
	for (size_t i = 0; i < a->values.n; i++)
		SAME(a->values.v[i], b->values.v[i]);
	SAME(a->labels.n, b->labels.n);
	same_labels(a->labels.v, b->labels.v, a->labels.n);
	SAME(a->attrs.n, b->attrs.n);
	same_labels(a->attrs.v, b->attrs.v, a->attrs.n);
	SAME(a->comments.n, b->comments.n);
	for (size_t i = 0; i < a->comments.n; i++)
		SAME(a->comments.v[i], b->comments.v[i]);
	SAME(a->period_type.type, b->period_type.type);
	SAME(a->period_type.unit, b->period_type.unit);
	SAME(a->period, b->period);
	SAME(a->time_ns, b->time_ns);
	SAME(a->duration_ns, b->duration_ns);
	SAME(a->default_sample_type, b->default_sample_type);
	SAME(a->drop_frames, b->drop_frames);
	SAME(a->keep_frames, b->keep_frames);
	SAME(a->name, b->name);
}

/* @fn (a store decoder) on what protobuf-c rejects with @rr, @want: the same answer. */
static void same_error(int (*fn)(const void *, size_t, size_t, struct fmt_otlp_batch *,
				 struct prof_err *),
		       const uint8_t *data, size_t size, int rr, const char *want)
{
	struct fmt_otlp_batch b;
	struct prof_err err;
	int rc;

	prof_err_init(&err);
	rc = fn(data, size, 1u << 20, &b, &err);
	if (rc == 0 && strstr(want, "decoded size limit")) {
		fmt_otlp_batch_release(&b);
		return;
	}
	SAME(rc, rr);
	PROF_ASSERT(strcmp(err.msg, want) == 0);
	PROF_ASSERT(b.n == 0 && b.profiles == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fmt_otlp_batch d, r;
	struct prof_err err, derr;
	int rd, rr;

	/* The sample cap bounds what a tiny input can expand to (values x timestamps). */
	prof_err_init(&derr);
	rd = fmt_otlp_decode_direct_err(data, size, 1u << 20, &d, &derr);
	PROF_ASSERT(rd == 0 || rd == FMT_OTLP_FALLBACK || rd < 0);
	if (rd) {
		PROF_ASSERT(d.n == 0 && d.profiles == NULL);
		prof_err_init(&err);
		rr = fmt_otlp_decode_pbc(data, size, 1u << 20, &r, &err);
		if (rd != FMT_OTLP_FALLBACK) { /* its own error: protobuf-c's, word for word */
			SAME(rd, rr);
			PROF_ASSERT(strcmp(derr.msg, err.msg) == 0);
		}
		if (rr) {
			same_error(fmt_otlp_decode_shared, data, size, rr, err.msg);
			same_error(fmt_otlp_decode_pending, data, size, rr, err.msg);
		}
		fmt_otlp_batch_release(&r);
		return 0;
	}
	prof_err_init(&err);
	rr = fmt_otlp_decode_pbc(data, size, 1u << 20, &r, &err);
	PROF_ASSERT(rr == 0);
	SAME(d.n, r.n);
	for (size_t i = 0; i < d.n; i++)
		same_profile(&d.profiles[i], &r.profiles[i]);
	struct fmt_otlp_batch sh;

	PROF_ASSERT(fmt_otlp_decode_shared(data, size, 1u << 20, &sh, &err) == 0);
	SAME(sh.n, d.n);
	for (size_t i = 0; i < sh.n; i++) {
		const struct model_profile *a = &d.profiles[i], *b = &sh.profiles[i];

		PROF_ASSERT(model_profile_validate(b, NULL) == 0);
		PROF_ASSERT(model_profile_same_dict(b, &sh.profiles[0]));
		SAME(a->samples.n, b->samples.n);
		SAME(a->values.n, b->values.n);
		for (size_t k = 0; k < a->values.n; k++)
			SAME(a->values.v[k], b->values.v[k]);
		for (size_t k = 0; k < a->samples.n; k++) {
			SAME(a->samples.v[k].nstack, b->samples.v[k].nstack);
			SAME(a->samples.v[k].nlabels, b->samples.v[k].nlabels);
			SAME(a->samples.v[k].timestamp_ns, b->samples.v[k].timestamp_ns);
		}
		SAME(a->attrs.n, b->attrs.n);
	}
	/* Pending: valid as it is, and once resolved the same samples over the
	 * same stacks as the shared form (its string ids may differ). */
	struct fmt_otlp_batch pb;

	PROF_ASSERT(fmt_otlp_decode_pending(data, size, 1u << 20, &pb, &err) == 0);
	SAME(pb.n, sh.n);
	for (size_t i = 0; i < pb.n; i++)
		PROF_ASSERT(pb.profiles[i].pending &&
			    model_profile_validate(&pb.profiles[i], NULL) == 0);
	fmt_otlp_batch_resolve(&pb);
	for (size_t i = 0; i < pb.n; i++) {
		const struct model_profile *a = &sh.profiles[i], *b = &pb.profiles[i];

		PROF_ASSERT(!b->pending && model_profile_validate(b, NULL) == 0);
		PROF_ASSERT(model_profile_same_dict(b, &pb.profiles[0]));
		SAME(a->samples.n, b->samples.n);
		for (size_t k = 0; k < a->samples.n; k++) {
			const struct model_sample *x = &a->samples.v[k], *y = &b->samples.v[k];

			SAME(x->nstack, y->nstack);
			for (uint32_t j = 0; j < x->nstack; j++) {
				const struct model_location *la =
					&a->locations.v[a->stack_locs.v[x->stack_off + j]];
				const struct model_location *lb =
					&b->locations.v[b->stack_locs.v[y->stack_off + j]];

				SAME(la->address, lb->address);
				SAME(la->nlines, lb->nlines);
				SAME(la->is_folded, lb->is_folded);
			}
		}
	}
	fmt_otlp_batch_release(&pb);
	fmt_otlp_batch_release(&sh);
	fmt_otlp_batch_release(&d);
	fmt_otlp_batch_release(&r);
	return 0;
}
