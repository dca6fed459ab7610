// SPDX-License-Identifier: Apache-2.0
/*
 * demangle.c - see demangle.h. libiberty's demanglers return a malloc'd
 * string (free with free()) or NULL when the input is not theirs.
 *
 * Source: libiberty/cp-demangle.c (Itanium C++ ABI mangling),
 * libiberty/rust-demangle.c (Rust legacy and v0, RFC 2603).
 */
#include "base/compat.h"
#include "symbolize/demangle.h"

#include <libiberty/demangle.h>

#define SYM_DEMANGLE_MAX_IN 8192 /* longer inputs are left alone (pathological) */

bool sym_demangle(const char *name, char *out, size_t outsz)
{
	char *d = NULL;

	if (outsz == 0)
		return false;
	if (name[0] == '_' && (name[1] == 'Z' || name[1] == 'R') &&
	    strnlen(name, SYM_DEMANGLE_MAX_IN) < SYM_DEMANGLE_MAX_IN) {
		d = rust_demangle(name, DMGL_PARAMS | DMGL_ANSI);
		if (!d && name[1] == 'Z')
			d = cplus_demangle_v3(name, DMGL_PARAMS | DMGL_ANSI);
	}
	snprintf(out, outsz, "%s", d ? d : name);
	free(d);
	return d != NULL;
}
