// SPDX-License-Identifier: Apache-2.0
/* jsonout.c - UTF-8-safe JSON strings; see jsonout.h. */
#include "base/compat.h"
#include "query/jsonout.h"

int query_json_str(struct buf *out, const char *s, size_t n)
{
	return buf_add_json_str(out, s, n);
}

int query_json_open(struct buf *out, const char *type, const char *unit)
{
	int rc = buf_addstr(out, "{\"type\":");

	if (!rc)
		rc = query_json_str(out, type, strlen(type));
	if (!rc)
		rc = buf_addstr(out, ",\"unit\":");
	if (!rc)
		rc = query_json_str(out, unit, strlen(unit));
	return rc;
}
