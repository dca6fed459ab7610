/* SPDX-License-Identifier: Apache-2.0 */
/*
 * merge.h - merge several profiles into one (e.g. the Profiles of an OTLP
 * request, one per sample type, back into one pprof-shaped profile for
 * `profd convert x.otlp.pb y.pb.gz` or `profd top`).
 *
 * The result has the union of the inputs' sample types (equal type and
 * unit strings are one column, in order of first appearance) and one
 * deduplicated dictionary. Samples:
 *   - inputs are taken in order and grouped: an input joins the current
 *     group when it has the same number of samples as the group's first
 *     input, sample i of both has the same stack, labels, timestamp and
 *     link, and its sample types are columns the group does not fill yet.
 *     That is exactly how a K-type pprof profile was split into K OTLP
 *     Profiles (format/otlp.h), so pprof -> OTLP -> pprof gives back the
 *     same samples;
 *   - each group contributes its samples once, with the values of all its
 *     inputs side by side and 0 in the other columns.
 * Profile attributes that every input has (same key and value) stay
 * profile attributes; the others become labels of that input's samples,
 * so nothing that told the inputs apart is lost. Period type, default
 * sample type, drop/keep frames and name come from the first input that
 * sets them; the time range covers all inputs; comments are united.
 */
#ifndef PROF_MODEL_MERGE_H
#define PROF_MODEL_MERGE_H

#include "base/compat.h"
#include "base/err.h"
#include "model/profile.h"

/**
 * model_profile_merge() - merge the @n profiles @in into @out, which must
 * be freshly initialised (model_profile_init) and is owned by the caller.
 * The inputs are only read. Returns 0, or -PROF_ETOOBIG when the result
 * would exceed the model's 32-bit indexes (@err says which table).
 */
int model_profile_merge(const struct model_profile *const *in, size_t n, struct model_profile *out,
			struct prof_err *err);

#endif
