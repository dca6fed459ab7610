/* SPDX-License-Identifier: Apache-2.0 */
/*
 * termtext.h - names from profiles as text for a terminal.
 *
 * Function, file and label names are bytes as ingested (binaries, pprof
 * string tables): a name holding ESC '[' ... would recolour or move the
 * cursor of the terminal that prints a report, a lone byte 0x9b is CSI to
 * a terminal in 8-bit mode. The text reports (profd top, profd query) pass
 * every such name through cli_term_str(), and the messages every file
 * name and argument through cli_term_name(), which write what a terminal
 * would act on or cannot show as escapes in the style of Go's
 * strconv.Quote: C0 controls and DEL as \xNN, C1 controls
 * (U+0080..U+009F) as \uNNNN, bytes that are not UTF-8 (base/utf8.h) as
 * \xNN. Everything else, backslashes included, is printed as it is.
 */
#ifndef PROF_CLI_TERMTEXT_H
#define PROF_CLI_TERMTEXT_H

#include "base/compat.h"
#include "base/buf.h"

/**
 * cli_term_str() - @s (@n bytes, any content) made safe to print, into @b
 * (reset first). Returns @b's NUL-terminated text ("" when out of memory),
 * lent until @b's next change.
 */
const char *cli_term_str(struct buf *b, const char *s, size_t n);

/**
 * cli_term_name() - the NUL-terminated @s (a file name, a command-line
 * argument, an error message quoting input; NULL is "") as cli_term_str
 * writes it, in one of CLI_TERM_NAME_RING static buffers used in turn (git
 * hex.c oid_to_hex), so one printf may show up to that many. Lent until
 * the CLI_TERM_NAME_RING-th later call; "" when out of memory. Not
 * thread-safe: for the CLI's main thread.
 */
const char *cli_term_name(const char *s);
#define CLI_TERM_NAME_RING 4

#endif
