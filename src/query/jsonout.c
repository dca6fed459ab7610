// SPDX-License-Identifier: Apache-2.0
/* jsonout.c - UTF-8-safe JSON strings; see jsonout.h. */
#include "base/compat.h"
#include "query/jsonout.h"

/* Length of the valid UTF-8 sequence at @s (@n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	size_t len;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

int query_json_str(struct buf *out, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t i = 0;

	while (i < n && utf8_len(u + i, n - i))
		i += utf8_len(u + i, n - i);
	if (i == n)
		return buf_add_json_str(out, s, n); /* the common case: valid already */

	struct buf clean;
	int rc = 0;

	buf_init(&clean, 0);
	for (i = 0; i < n && !rc;) {
		size_t k = utf8_len(u + i, n - i);

		if (k) {
			rc = buf_add(&clean, s + i, k);
			i += k;
		} else {
			rc = buf_add(&clean, "\xef\xbf\xbd", 3); /* U+FFFD */
			i++;
		}
	}
	if (!rc)
		rc = buf_add_json_str(out, clean.p ? clean.p : "", clean.len);
	buf_release(&clean);
	return rc;
}
