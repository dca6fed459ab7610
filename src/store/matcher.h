/* SPDX-License-Identifier: Apache-2.0 */
/*
 * matcher.h - one label matcher of a series selector (PromQL semantics):
 *
 *   name="v"   the label equals v
 *   name!="v"  the label differs from v
 *   name=~"re" the label matches the regex re, anchored at both ends
 *   name!~"re" the label does not match re (anchored)
 *
 * A series without the label is treated as having it with the value ""
 * (Prometheus' rule), so {thread.name!=""} means "has a thread.name" and
 * {k=""} means "has no k". Regexes are PCRE2, compiled once with
 * PCRE2_ANCHORED | PCRE2_ENDANCHORED and JIT-compiled when available.
 *
 * The matcher lives in the store layer, not the query layer, because the
 * store's series selection takes matchers: a later label index (postings
 * per name=value) turns the equality matchers into index lookups
 * (issue 5). The text syntax is parsed by query/selector.c.
 *
 * A matcher is immutable after store_matcher_init except for its PCRE2
 * match data, so one matcher must not be used by two threads at once.
 */
#ifndef PROF_STORE_MATCHER_H
#define PROF_STORE_MATCHER_H

#include "base/compat.h"
#include "base/err.h"

enum store_match_op {
	STORE_MATCH_EQ,	    /* = */
	STORE_MATCH_NE,	    /* != */
	STORE_MATCH_RE,	    /* =~ */
	STORE_MATCH_NOT_RE, /* !~ */
};

struct store_matcher {
	enum store_match_op op;
	char *name;  /* owned, NUL-terminated */
	char *value; /* owned; the literal or the regex source */
	void *re;    /* pcre2_code_8 *, owned, for the regex ops */
	void *md;    /* pcre2_match_data_8 *, owned */
};

/*
 * Label aliases. Pyroscope's clients and its push API name the service
 * `service_name`, OpenTelemetry (the agent, OTLP producers) `service.name`:
 * one service under two keys. The canonical key is `service.name`: the
 * Pyroscope ingest stores it, a matcher on `service_name` is a matcher on
 * `service.name`, and a series stored by an earlier version under
 * `service_name` answers for `service.name` when it has no `service.name`.
 */
#define STORE_LABEL_SERVICE	"service.name"
#define STORE_LABEL_SERVICE_ALT "service_name"

/** store_label_canonical() - @name, or "service.name" for "service_name". Never NULL. */
const char *store_label_canonical(const char *name);

/**
 * store_label_alias() - the older key a label @name (canonical) may be
 * stored under: "service_name" for "service.name", else NULL. Static.
 */
const char *store_label_alias(const char *name);

/**
 * store_matcher_init() - fill @m with copies of @name (canonical:
 * store_label_canonical) and @value and compile the regex for =~ and !~. Errors: -EINVAL with @err naming the
 * regex error and its offset in the pattern (err->offset). On error @m
 * needs no release.
 */
int store_matcher_init(struct store_matcher *m, const char *name, enum store_match_op op,
		       const char *value, struct prof_err *err);
/** store_matcher_release() - free what @m owns; NULL is allowed. */
void store_matcher_release(struct store_matcher *m);

/**
 * store_matcher_match() - does a label value @v (NULL = label absent = "")
 * satisfy @m? A regex that hits the match limit (store_regex_match)
 * counts as no match.
 */
bool store_matcher_match(const struct store_matcher *m, const char *v);

/* PCRE2 limits for label and frame-name regexes (PCRE2's defaults are 10 M
 * each: a pattern of nested repeats could spend seconds on one name). */
#define STORE_REGEX_MATCH_LIMIT 1000000
#define STORE_REGEX_DEPTH_LIMIT 10000

/**
 * store_regex_match() - pcre2_match of @re (a pcre2_code) on @s[@n] with
 * the match data @md under STORE_REGEX_MATCH_LIMIT / _DEPTH_LIMIT:
 * true on a match; false on none, on a string PCRE2 refuses (bad UTF-8)
 * and on a limit hit, which is counted for this thread. Between
 * store_regex_query_begin and _end (a query) a limit hit is an error the
 * query reports instead of answering less, so later matches return false
 * at once. Thread-safe (the match context is shared read-only).
 */
bool store_regex_match(void *re, void *md, const char *s, size_t n);

/** store_regex_query_begin() - start counting this thread's limit hits for one query. */
void store_regex_query_begin(void);

/** store_regex_query_end() - stop; the number of limit hits since _begin. */
unsigned store_regex_query_end(void);

/** store_match_op_str() - "=", "!=", "=~" or "!~". */
const char *store_match_op_str(enum store_match_op op);

#endif
