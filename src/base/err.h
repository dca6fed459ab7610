/* SPDX-License-Identifier: Apache-2.0 */
/*
 * err.h - error codes and the error report decoders and the store fill in.
 *
 * Functions return 0 or a negative code: -errno values (-EINVAL, -ENOMEM,
 * -EIO) or project codes above the errno range (-PROF_ECORRUPT ...), as
 * libbpf 1.x does. Anything that parses input also fills a struct prof_err
 * so an HTTP handler can answer 4xx with a reason and the CLI can print the
 * byte offset or field (git refs.h "struct strbuf *err").
 */
#ifndef PROF_BASE_ERR_H
#define PROF_BASE_ERR_H

#include "base/compat.h"

enum prof_errcode {
	PROF_EBASE = 1000,
	PROF_ECORRUPT = 1001,	  /* input is malformed (bad varint, index out of range) */
	PROF_ETOOBIG = 1002,	  /* input exceeds a configured limit */
	PROF_EFORMAT = 1003,	  /* input is not in the format we expected */
	PROF_EUNSUPPORTED = 1004, /* valid but not something we handle */
	PROF_ENOTFOUND = 1005,	  /* a referenced object does not exist */
};

/**
 * struct prof_err - what went wrong, where.
 * @code:   negative error code (0 when no error was recorded)
 * @offset: byte offset in the input, or -1 when not applicable
 * @msg:    human-readable reason, always NUL-terminated
 */
struct prof_err {
	int code;
	int64_t offset;
	char msg[512];
};

/** prof_err_init() - reset @err to "no error" (offset -1). NULL is allowed. */
void prof_err_init(struct prof_err *err);

/**
 * prof_err_set() - record an error; returns @code so callers can
 * `return prof_err_set(err, -PROF_ECORRUPT, off, "...")`. @err may be NULL.
 * The first error recorded wins (sticky, SQLite btree.c *pRc) so the
 * innermost, most precise reason survives the unwinding of callers.
 */
int prof_err_set(struct prof_err *err, int code, int64_t offset, const char *fmt, ...)
	PROF_PRINTF(4, 5);

/** prof_strerror() - static text for a code (errno or PROF_E*), never NULL. */
const char *prof_strerror(int code);

#endif
