/* SPDX-License-Identifier: Apache-2.0 */
/*
 * selector.h - parse PromQL-style series selectors (docs/api.md,
 * "Common parameters", `query`):
 *
 *   {service.name="api", k8s.pod.name=~"api-.*", thread.name!="", "odd key"!~"x|y"}
 *   process_cpu:cpu:nanoseconds:cpu:nanoseconds{service.name="api"}
 *
 * Grammar (whitespace allowed between tokens):
 *
 *   selector := [ type ] [ "{" [ matcher { "," matcher } [ "," ] ] "}" ]
 *   type     := 1*( ALNUM / "_" / "." / ":" / "-" )     a profile type id
 *   matcher  := name op value
 *   name     := ( ALPHA / "_" ) *( ALNUM / "_" / "." )  |  string
 *   op       := "=" | "!=" | "=~" | "!~"
 *   value    := string
 *   string   := '"' chars '"' | "'" chars "'" | "`" raw "`"
 *
 * Quoted strings take the escapes \\ \" \' \n \r \t; backquoted ones are
 * raw (handy for regexes). An empty selector (or "{}") selects every
 * series. Regexes are anchored at both ends (PromQL semantics), see
 * store/matcher.h for the rest of the matching rules.
 */
#ifndef PROF_QUERY_SELECTOR_H
#define PROF_QUERY_SELECTOR_H

#include "base/compat.h"
#include "base/err.h"
#include "store/matcher.h"

/** struct query_selector - a parsed selector; owns its matchers and @type. */
struct query_selector {
	char *type; /* profile type id given before "{", or NULL */
	struct store_matcher *m;
	size_t n;
};

/**
 * query_selector_parse() - parse @s into @out (overwritten; release with
 * query_selector_release, also after an error). Errors: -EINVAL with
 * @err->offset the byte offset in @s and a message naming it and what
 * was expected ("selector: at byte 7: expected '=', '!=', '=~' or '!~'").
 */
int query_selector_parse(const char *s, struct query_selector *out, struct prof_err *err);

/** query_selector_release() - free what @sel owns; NULL is allowed. */
void query_selector_release(struct query_selector *sel);

#endif
