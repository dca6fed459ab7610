// SPDX-License-Identifier: Apache-2.0
/* termtext.c - names made safe to print on a terminal; see termtext.h. */
#include "base/compat.h"
#include "base/utf8.h"
#include "cli/termtext.h"

const char *cli_term_str(struct buf *b, const char *s, size_t n)
{
	const unsigned char *u = (const unsigned char *)s;
	int rc = 0;

	buf_reset(b);
	for (size_t i = 0; i < n && !rc;) {
		size_t k = utf8_seq_len(u + i, n - i);

		if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f))
			rc = buf_addf(b, "\\x%02x", u[i]);
		else if (k == 2 && u[i] == 0xc2 && u[i + 1] < 0xa0)
			rc = buf_addf(b, "\\u%04x", u[i + 1]); /* U+0080..U+009F */
		else if (k == 0)
			rc = buf_addf(b, "\\x%02x", u[i]);
		else
			rc = buf_add(b, s + i, k);
		i += k ? k : 1;
	}
	return rc || !b->p ? "" : b->p;
}

const char *cli_term_name(const char *s)
{
	static struct buf ring[CLI_TERM_NAME_RING];
	static unsigned next;
	struct buf *b = &ring[next++ % CLI_TERM_NAME_RING];

	if (!b->max)
		buf_init(b, 1u << 20);
	return cli_term_str(b, s ? s : "", s ? strlen(s) : 0);
}
