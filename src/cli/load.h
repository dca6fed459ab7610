/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.h - what the profile-reading subcommands (top, convert) share:
 * read a file, decode whatever profile format it holds, report a
 * failure as "profd CMD: FILE: reason at byte N", and match --type
 * against a sample type.
 */
#ifndef PROF_CLI_LOAD_H
#define PROF_CLI_LOAD_H

#include "base/compat.h"
#include "base/buf.h"
#include "base/err.h"
#include "format/detect.h"
#include "model/profile.h"

/** Input files are read whole; profiles are far smaller than this. */
#define CLI_MAX_FILE (1024u << 20)

/**
 * cli_read_file() - read @file whole into @data (initialised by the caller
 * with buf_init(data, CLI_MAX_FILE), released by the caller). On failure
 * prints "profd @cmd: @file: reason" and returns the negative code.
 */
int cli_read_file(const char *cmd, const char *file, struct buf *data);

/**
 * cli_decode_profile() - decode the bytes in @data (read from @file, whose
 * name is a format hint) with fmt_decode_any and @opts (may be NULL) into
 * @p, initialised by the caller who owns it. On failure prints the
 * reason, prefixed with "profd @cmd: @file: ", and returns the code.
 */
int cli_decode_profile(const char *cmd, const char *file, const struct buf *data,
		       const struct fmt_decode_opts *opts, struct model_profile *p);

/**
 * cli_load_profile() - read @file and decode it (any format fmt_decode_any
 * reads, gzipped or not) into @p, initialised by the caller who owns it.
 * @kind (may be NULL) receives the format. On failure prints the reason to
 * stderr, prefixed with "profd @cmd: @file: ", and returns the negative
 * code.
 */
int cli_load_profile(const char *cmd, const char *file, struct model_profile *p,
		     enum fmt_kind *kind);

/**
 * cli_load_profile_opts() - cli_load_profile with decoder options @opts
 * (may be NULL: defaults; opts->kind forces the format, opts->event picks
 * the JFR events). *@kind gets opts->kind when set, else the sniffed one.
 */
int cli_load_profile_opts(const char *cmd, const char *file, const struct fmt_decode_opts *opts,
			  struct model_profile *p, enum fmt_kind *kind);

/**
 * cli_print_decode_error() - print @err (or the text of @rc when @err
 * holds nothing) as "profd @cmd: @file: message (at byte N)" on stderr.
 */
void cli_print_decode_error(const char *cmd, const char *file, int rc, const struct prof_err *err);

/**
 * cli_print_decode_notes() - print on stderr, as "profd @cmd: @file: note:
 * ...", what the decoder of @kind skipped in @p (model_skipped_text) and
 * the JFR decoder's note on a family without events. Nothing when there is
 * nothing to say. cli_load_profile_opts calls it after a successful decode.
 */
void cli_print_decode_notes(const char *cmd, const char *file, enum fmt_kind kind,
			    const struct model_profile *p);

/**
 * cli_type_matches() - does sample type @t of @p match @want, a --type
 * argument: the type's name ("cpu") or name/unit ("cpu/nanoseconds")?
 */
bool cli_type_matches(const struct model_profile *p, size_t t, const char *want);

#endif
