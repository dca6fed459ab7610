/* SPDX-License-Identifier: Apache-2.0 */
/*
 * rules.h - signal control: a dataset's rules (config.h) applied to a
 * decoded profile before it is stored (docs/ingest.md, "Signal
 * control").
 *
 * A profile with K value columns makes K series (profile type id of the
 * column + the profile's labels, as store_head_add forms them). Each
 * series meets the rules in order:
 *   - drop (type and selector match): the series is dropped; later rules
 *     are not consulted;
 *   - keep fraction F: the series is kept when its hash (XXH3 of the type
 *     id and the sorted labels, mapped to [0, 1)) is below F, else dropped
 *     as by drop. The same series is thus always kept or always dropped,
 *     across requests, restarts and servers, and F of the series survive;
 *   - drop_below V: samples of the series whose value is below V are
 *     dropped (the largest V of all matching rules applies); later rules
 *     are still consulted.
 * A rule without type matches every type, one without selector every
 * label set. Dropped columns are removed from the profile, as are samples
 * left with no non-zero value; a profile left with no column is empty
 * (samples.n == 0).
 */
#ifndef PROF_SERVER_RULES_H
#define PROF_SERVER_RULES_H

#include "base/compat.h"
#include "model/profile.h"
#include "server/config.h"

#include <pthread.h>

/** struct server_label - one series label of a profile (lent from the profile or @num). */
struct server_label {
	const char *key, *val;
	uint32_t pos; /* index in p->attrs: the first value of a repeated key wins */
	char num[24]; /* text of a numeric value */
};

/**
 * server_profile_labels() - the series labels of @p, sorted by key, one
 * per key (the first value of a repeated key), empty keys skipped, numbers
 * in decimal: exactly the label set store_head_add files the profile
 * under. *@out is malloc'd (the caller frees it; its strings are lent
 * from @p, except numbers, which live in the array); returns the count.
 */
size_t server_profile_labels(const struct model_profile *p, struct server_label **out);

/**
 * server_series_hash() - 64-bit hash of a series (type id + labels as
 * returned by server_profile_labels). Stable across runs and hosts.
 */
uint64_t server_series_hash(const char *type, const struct server_label *l, size_t n);

/**
 * server_rules_apply() - apply @nrules @rules to @p in place. @types[k]
 * must be the profile type id of column k (model_profile_type_id).
 * @lock guards the matchers' regex match data (held during the call).
 * Sets *@changed when @p was modified (then it no longer matches the
 * bytes it was decoded from). Never fails.
 */
void server_rules_apply(const struct server_rule *rules, size_t nrules, pthread_mutex_t *lock,
			struct model_profile *p, char *const *types, bool *changed);

/**
 * server_profile_drop_columns() - remove the value columns k with
 * !@keep[k] from @p, then the samples whose remaining values are all 0.
 * Returns true when something was removed.
 */
bool server_profile_drop_columns(struct model_profile *p, const bool *keep);

#endif
