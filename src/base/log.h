/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - structured log lines on stderr:
 *   2026-11-29T20:00:00.123Z info server listening addr=127.0.0.1:4040
 * Never log secrets (tokens): callers pass only what is safe to show.
 * Thread-safe (one fprintf per line).
 */
#ifndef PROF_BASE_LOG_H
#define PROF_BASE_LOG_H

#include "base/compat.h"

enum prof_log_level { PROF_LOG_DEBUG, PROF_LOG_INFO, PROF_LOG_WARN, PROF_LOG_ERROR };

/** prof_log_set_level() - lines below @level are dropped (default INFO). */
void prof_log_set_level(enum prof_log_level level);
void prof_log(enum prof_log_level level, const char *fmt, ...) PROF_PRINTF(2, 3);

/**
 * prof_log_level_parse() - the level named @s ("debug", "info", "warn" or
 * "error", as the lines print it) into *@out. Returns 0, or -EINVAL for
 * any other string (*@out untouched).
 */
int prof_log_level_parse(const char *s, enum prof_log_level *out);

#define log_debug(...) prof_log(PROF_LOG_DEBUG, __VA_ARGS__)
#define log_info(...)  prof_log(PROF_LOG_INFO, __VA_ARGS__)
#define log_warn(...)  prof_log(PROF_LOG_WARN, __VA_ARGS__)
#define log_error(...) prof_log(PROF_LOG_ERROR, __VA_ARGS__)

#endif
