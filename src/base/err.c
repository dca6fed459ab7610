// SPDX-License-Identifier: Apache-2.0
/* err.c - error reports; see err.h. */
#include "base/compat.h"
#include "base/err.h"

void prof_assert_fail(const char *expr, const char *file, int line)
{
	fprintf(stderr, "profd: assertion failed: %s (%s:%d)\n", expr, file, line);
	abort();
}

void prof_err_init(struct prof_err *err)
{
	if (!err)
		return;
	err->code = 0;
	err->offset = -1;
	err->msg[0] = '\0';
}

int prof_err_set(struct prof_err *err, int code, int64_t offset, const char *fmt, ...)
{
	va_list ap;

	if (!err || err->code)
		return code;
	err->code = code;
	err->offset = offset;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

const char *prof_strerror(int code)
{
	if (code < 0)
		code = -code;
	switch (code) {
	case 0:
		return "success";
	case PROF_ECORRUPT:
		return "corrupt input";
	case PROF_ETOOBIG:
		return "input too large";
	case PROF_EFORMAT:
		return "unrecognized format";
	case PROF_EUNSUPPORTED:
		return "unsupported";
	case PROF_ENOTFOUND:
		return "not found";
	default:
		return code < PROF_EBASE ? strerror(code) : "unknown error";
	}
}
