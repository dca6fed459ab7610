/* SPDX-License-Identifier: Apache-2.0 */
/*
 * jsonout.h - JSON strings for query answers. Frame names and label values
 * are bytes as ingested (pprof string tables hold any bytes); a JSON text
 * must be UTF-8 (RFC 8259 section 8.1), so each byte that does not start a
 * valid UTF-8 sequence is written as \ufffd, as Go's encoding/json does,
 * and control characters are escaped. base/buf.h buf_add_json_str does
 * all of that (every JSON writer of profd uses it); this name stays so the
 * views say where their strings come from.
 */
#ifndef PROF_QUERY_JSONOUT_H
#define PROF_QUERY_JSONOUT_H

#include "base/buf.h"
#include "base/compat.h"

/** query_json_str() - append @s (@n bytes) as a quoted JSON string. 0 or -PROF_ETOOBIG. */
int query_json_str(struct buf *out, const char *s, size_t n);

/**
 * query_json_open() - append the opening every view's answer shares,
 * `{"type":TYPE,"unit":UNIT` (both JSON strings; the object is left open
 * for the view's own members). 0 or -PROF_ETOOBIG.
 */
int query_json_open(struct buf *out, const char *type, const char *unit);

#endif
