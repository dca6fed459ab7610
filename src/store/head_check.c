// SPDX-License-Identifier: Apache-2.0
/*
 * head_check.c - the checks a profile passes before the head takes it:
 * every index in range, values and timestamps consistent, limits.
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/mem.h"
#include "base/strtab.h"
#include "model/stackkey.h"
#include "store/head.h"
#include "store/head_int.h"

#include <pthread.h>

/* --- input checks -------------------------------------------------------- */

#define CHECK(cond, ...)                                                           \
	do {                                                                       \
		if (!(cond))                                                       \
			return prof_err_set(err, -PROF_ECORRUPT, -1, __VA_ARGS__); \
	} while (0)

/* The checks both store_head_check and store_head_check_validated start with. */
static int check_header(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	CHECK(ns >= 1 && p->mappings.n >= 1 && p->functions.n >= 1 && p->locations.n >= 1,
	      "profile: dictionary tables lack their zero entry");
	CHECK(p->time_ns >= 0 && p->time_ns <= STORE_HEAD_MAX_TIME_NS,
	      "profile: time %" PRId64 " ns out of range (0 .. %" PRId64 " unix ns)", p->time_ns,
	      (int64_t)STORE_HEAD_MAX_TIME_NS);
	return 0;
}

int store_head_check(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	if (check_header(p, err))
		return -PROF_ECORRUPT;
	for (size_t i = 0; i < p->sample_types.n; i++)
		CHECK(p->sample_types.v[i].type < ns && p->sample_types.v[i].unit < ns,
		      "sample type %zu: string index out of range", i);
	CHECK(p->period_type.type < ns && p->period_type.unit < ns && p->name < ns,
	      "profile: period type or name string index out of range");
	for (size_t i = 0; i < p->mappings.n; i++)
		CHECK(p->mappings.v[i].filename < ns && p->mappings.v[i].build_id < ns,
		      "mapping %zu: string index out of range (%u strings)", i, ns);
	for (size_t i = 0; i < p->functions.n; i++) {
		const struct model_function *f = &p->functions.v[i];

		CHECK(f->name < ns && f->system_name < ns && f->filename < ns,
		      "function %zu: string index out of range (%u strings)", i, ns);
	}
	for (size_t i = 0; i < p->locations.n; i++) {
		const struct model_location *l = &p->locations.v[i];

		CHECK(l->mapping < p->mappings.n, "location %zu: mapping %u out of range (%zu)", i,
		      l->mapping, p->mappings.n);
		CHECK(l->frame_type < ns, "location %zu: frame type string out of range", i);
		CHECK((uint64_t)l->line_off + l->nlines <= p->lines.n,
		      "location %zu: lines out of range", i);
		for (uint32_t j = 0; j < l->nlines; j++)
			CHECK(p->lines.v[l->line_off + j].function < p->functions.n,
			      "location %zu line %u: function out of range", i, j);
	}
	for (size_t i = 0; i < p->attrs.n; i++)
		CHECK(p->attrs.v[i].key < ns && p->attrs.v[i].str < ns,
		      "attribute %zu: string index out of range", i);
	/* Every stack entry once: samples share stack ranges (decoders intern stacks). */
	for (size_t i = 0; i < p->stack_locs.n; i++)
		CHECK(p->stack_locs.v[i] < p->locations.n,
		      "stack entry %zu: location %u out of range (%zu locations)", i,
		      p->stack_locs.v[i], p->locations.n);
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];

		CHECK((uint64_t)s->stack_off + s->nstack <= p->stack_locs.n,
		      "sample %zu: stack range out of bounds", i);
		CHECK((uint64_t)s->value_off + p->sample_types.n <= p->values.n,
		      "sample %zu: values out of bounds", i);
		CHECK((uint64_t)s->label_off + s->nlabels <= p->labels.n,
		      "sample %zu: attributes out of bounds", i);
		CHECK(s->link == 0 || s->link < p->links.n, "sample %zu: link %u out of range", i,
		      s->link);
		CHECK(s->timestamp_ns >= 0 && s->timestamp_ns <= STORE_HEAD_MAX_TIME_NS,
		      "sample %zu: timestamp %" PRId64 " ns out of range (0 .. %" PRId64
		      " unix ns)",
		      i, s->timestamp_ns, (int64_t)STORE_HEAD_MAX_TIME_NS);
	}
	for (size_t i = 0; i < p->labels.n; i++)
		CHECK(p->labels.v[i].key < ns && p->labels.v[i].str < ns,
		      "sample attribute %zu: string index out of range", i);
	return 0;
}

int store_head_check_validated(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	for (size_t i = 0; i < p->locations.n; i++)
		CHECK(p->locations.v[i].frame_type < ns,
		      "location %zu: frame type string out of range", i);
	return store_head_check_samples(p, err);
}

int store_head_check_samples(const struct model_profile *p, struct prof_err *err)
{
	uint32_t ns = p->strings.n;

	if (check_header(p, err))
		return -PROF_ECORRUPT;
	CHECK(p->period_type.type < ns && p->period_type.unit < ns && p->name < ns,
	      "profile: period type or name string index out of range");
	for (size_t i = 0; i < p->attrs.n; i++)
		CHECK(p->attrs.v[i].key < ns && p->attrs.v[i].str < ns,
		      "attribute %zu: string index out of range", i);
	for (size_t i = 0; i < p->samples.n; i++) {
		const struct model_sample *s = &p->samples.v[i];

		CHECK((uint64_t)s->value_off + p->sample_types.n <= p->values.n,
		      "sample %zu: values out of bounds", i);
		CHECK(s->timestamp_ns >= 0 && s->timestamp_ns <= STORE_HEAD_MAX_TIME_NS,
		      "sample %zu: timestamp %" PRId64 " ns out of range (0 .. %" PRId64
		      " unix ns)",
		      i, s->timestamp_ns, (int64_t)STORE_HEAD_MAX_TIME_NS);
	}
	return 0;
}
