/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.h - what the profile-reading subcommands (top, convert) share:
 * read a file, decode whatever profile format it holds, and report a
 * failure as "profd CMD: FILE: reason at byte N".
 */
#ifndef PROF_CLI_LOAD_H
#define PROF_CLI_LOAD_H

#include "base/compat.h"
#include "base/err.h"
#include "format/detect.h"
#include "model/profile.h"

/** Input files are read whole; profiles are far smaller than this. */
#define CLI_MAX_FILE (1024u << 20)

/**
 * cli_load_profile() - read @file and decode it (pprof or OTLP, gzipped or
 * not; fmt_decode_any) into @p, initialised by the caller who owns it.
 * @kind (may be NULL) receives the format. On failure prints the reason to
 * stderr, prefixed with "profd @cmd: @file: ", and returns the negative
 * code.
 */
int cli_load_profile(const char *cmd, const char *file, struct model_profile *p,
		     enum fmt_kind *kind);

/**
 * cli_print_decode_error() - print @err (or the text of @rc when @err
 * holds nothing) as "profd @cmd: @file: message (at byte N)" on stderr.
 */
void cli_print_decode_error(const char *cmd, const char *file, int rc, const struct prof_err *err);

#endif
