/* SPDX-License-Identifier: Apache-2.0 */
/*
 * multipart.h - multipart/form-data (RFC 7578, RFC 2046 section 5.1)
 * over a body already in memory, as Pyroscope SDKs upload profiles
 * (docs/formats.md "Pyroscope ingest": fields profile, prev_profile,
 * sample_type_config, jfr, labels).
 *
 * The parser only finds the parts: it copies nothing, each part's data
 * points into the body. Parts are separated by CRLF "--" boundary;
 * a part's headers end at the first empty line; only
 * Content-Disposition (name, filename) and Content-Type are read. The
 * preamble and epilogue are ignored; a body that ends before the closing
 * delimiter is an error (a truncated upload must not pass as complete).
 */
#ifndef PROF_SERVER_MULTIPART_H
#define PROF_SERVER_MULTIPART_H

#include "base/compat.h"
#include "base/err.h"

#define SERVER_MULTIPART_MAX_PARTS 16

struct server_part {
	char name[64];	    /* form field name ("" when absent) */
	char filename[128]; /* "" when absent */
	char ctype[96];	    /* the part's Content-Type, "" when absent */
	const char *data;   /* lent from the body */
	size_t len;
};

/**
 * server_multipart_boundary() - the boundary parameter of a
 * multipart/form-data Content-Type value (quoted or not) into @out.
 * -EINVAL when the type is not multipart/form-data or has no valid
 * boundary (1..70 characters, RFC 2046).
 */
int server_multipart_boundary(const char *ctype, char *out, size_t outsz);

/**
 * server_multipart_parse() - split @body (@n bytes) into at most @max
 * parts (@parts, filled in order; *@nparts their count). Errors:
 * -PROF_ECORRUPT with @err saying what is wrong (no opening boundary, a
 * part without a header end, no closing boundary, a header line over
 * 1 KiB), -PROF_ETOOBIG over @max parts.
 */
int server_multipart_parse(const char *boundary, const char *body, size_t n,
			   struct server_part *parts, size_t max, size_t *nparts,
			   struct prof_err *err);

/** server_multipart_find() - the first part named @name, or NULL. */
const struct server_part *server_multipart_find(const struct server_part *parts, size_t n,
						const char *name);

#endif
