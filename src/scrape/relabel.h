/* SPDX-License-Identifier: Apache-2.0 */
/*
 * relabel.h - label sets of scrape targets and Prometheus-style
 * relabeling (`relabel_configs`), applied once per discovered target
 * before it is scraped.
 *
 * A target's labels start as the labels of its group (static_configs or
 * a file_sd file), its address as `__address__`, discovery metadata
 * (`__meta_filepath`) and the job's defaults (`job`, `__scheme__`,
 * `__scrape_interval__`, `__scrape_timeout__`, `__path_prefix__`). The
 * rules then run in order; `keep`/`drop` may discard the target. After
 * them `instance` defaults to `__address__`, and labels whose name starts
 * with "__" are removed from what the profiles carry (they stay in the
 * target's own set, which decides its identity).
 *
 * Rule semantics follow Prometheus (prometheus/model/relabel/relabel.go):
 *   value = the values of source_labels joined by separator (";"),
 *           a missing label counting as "";
 *   regex is anchored at both ends (compiled as ^(?:REGEX)$; default
 *           "(.*)"); replacement (default "$1") and target_label may
 *           refer to groups as $1, ${1}, $name or ${name} ($$ is "$");
 *   replace   when regex matches value: target_label = expanded
 *             replacement, or removed when that is empty;
 *   keep      discard the target unless regex matches value;
 *   drop      discard the target when regex matches value;
 *   hashmod   target_label = hash(value) % modulus (XXH3-64 of the value
 *             here, not Prometheus' MD5: only the spread matters);
 *   labelmap  for every label whose *name* matches, copy its value to the
 *             label named by the expanded replacement;
 *   labeldrop / labelkeep  remove labels whose name matches / does not.
 *
 * Regexes are PCRE2 (a superset of Go's RE2 syntax for what relabeling
 * uses) with match and depth limits, so a pathological pattern fails a
 * match instead of spinning.
 *
 * Ownership: a struct scrape_labels owns its names and values; a rule
 * owns its strings and its compiled regex. Not thread-safe per object;
 * rules are only read while applied (each call uses its own match data).
 */
#ifndef PROF_SCRAPE_RELABEL_H
#define PROF_SCRAPE_RELABEL_H

#include "base/buf.h"
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"

#define SCRAPE_MAX_LABELS      64   /* labels per target */
#define SCRAPE_MAX_LABEL_NAME  256  /* bytes */
#define SCRAPE_MAX_LABEL_VALUE 4096 /* bytes */

struct scrape_label {
	char *name, *value; /* owned */
};

/** struct scrape_labels - a label set, sorted by name, names unique. */
struct scrape_labels {
	VEC(struct scrape_label) l;
};

/** scrape_labels_release() - free every label; the set is left empty. NULL ok. */
void scrape_labels_release(struct scrape_labels *ls);
/** scrape_labels_copy() - @dst (empty or released) becomes a copy of @src. */
void scrape_labels_copy(struct scrape_labels *dst, const struct scrape_labels *src);
/** scrape_labels_get() - the value of @name, or NULL. Lent until the next change. */
const char *scrape_labels_get(const struct scrape_labels *ls, const char *name);
/** scrape_labels_set() - set @name to @value (both copied), replacing an old value. */
void scrape_labels_set(struct scrape_labels *ls, const char *name, const char *value);
/** scrape_labels_del() - remove @name if present. */
void scrape_labels_del(struct scrape_labels *ls, const char *name);
/** scrape_labels_hash() - a 64-bit hash of the whole set (names and values). */
uint64_t scrape_labels_hash(const struct scrape_labels *ls);
/** scrape_labels_json() - append {"name":"value",...} to @out (names in order). */
int scrape_labels_json(const struct scrape_labels *ls, bool skip_internal, struct buf *out);

/**
 * scrape_label_name_ok() - is @s a valid label name: [A-Za-z_][A-Za-z0-9_.]*,
 * 1..SCRAPE_MAX_LABEL_NAME bytes? (Dots allowed for OpenTelemetry keys
 * such as service.name.)
 */
bool scrape_label_name_ok(const char *s);

enum scrape_relabel_action {
	SCRAPE_RELABEL_REPLACE,
	SCRAPE_RELABEL_KEEP,
	SCRAPE_RELABEL_DROP,
	SCRAPE_RELABEL_HASHMOD,
	SCRAPE_RELABEL_LABELMAP,
	SCRAPE_RELABEL_LABELDROP,
	SCRAPE_RELABEL_LABELKEEP,
};

/** struct scrape_relabel - one rule; fields as in relabel_configs. */
struct scrape_relabel {
	enum scrape_relabel_action action;
	char **source_labels; /* owned; @nsource entries */
	size_t nsource;
	char *separator;    /* owned; NULL = ";" */
	char *regex;	    /* owned source text; NULL = "(.*)" */
	char *target_label; /* owned; required by replace and hashmod */
	char *replacement;  /* owned; NULL = "$1" */
	uint64_t modulus;   /* hashmod */
	void *re;	    /* compiled ^(?:regex)$ (pcre2_code *), owned */
	unsigned line;	    /* in the config file, for messages */
};

/**
 * scrape_relabel_action_parse() - "replace", "keep", "drop", "hashmod",
 * "labelmap", "labeldrop", "labelkeep" (case-insensitive, as Prometheus);
 * 0 or -EINVAL.
 */
int scrape_relabel_action_parse(const char *s, enum scrape_relabel_action *out);

/**
 * scrape_relabel_compile() - compile @r's regex and check the rule is
 * complete (target_label for replace/hashmod, modulus > 0 for hashmod,
 * a valid label name where one is needed). 0 or -EINVAL with @err saying
 * what is wrong (the PCRE2 message and offset for a bad regex).
 */
int scrape_relabel_compile(struct scrape_relabel *r, struct prof_err *err);

/** scrape_relabel_release() - free @r's strings and regex. NULL ok. */
void scrape_relabel_release(struct scrape_relabel *r);

/**
 * scrape_relabel_apply() - run the @n compiled rules over @ls in order.
 * Returns true when the target is kept, false when a keep/drop rule
 * discarded it (@ls is then in an unspecified but valid state). Labels
 * that a rule would give an invalid name or a value over the limits are
 * not set (the rule is skipped), as Prometheus skips invalid names.
 */
bool scrape_relabel_apply(const struct scrape_relabel *rules, size_t n, struct scrape_labels *ls);

#endif
