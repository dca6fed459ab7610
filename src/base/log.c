// SPDX-License-Identifier: Apache-2.0
/* log.c - structured log lines; see log.h. */
#include "base/compat.h"
#include "base/log.h"

#include <sys/time.h>

static enum prof_log_level min_level = PROF_LOG_INFO;
static const char *const level_names[] = { "debug", "info", "warn", "error" };

void prof_log_set_level(enum prof_log_level level)
{
	min_level = level;
}

void prof_log(enum prof_log_level level, const char *fmt, ...)
{
	char line[2048], ts[32];
	struct timeval tv;
	struct tm tm;
	va_list ap;
	int n;

	if (level < min_level)
		return;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
	n = snprintf(line, sizeof(line), "%s.%03ldZ %s ", ts, (long)(tv.tv_usec / 1000),
		     level_names[level]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
}

int prof_log_level_parse(const char *s, enum prof_log_level *out)
{
	for (size_t i = 0; i < PROF_ARRAY_SIZE(level_names); i++)
		if (!strcmp(s, level_names[i])) {
			*out = (enum prof_log_level)i;
			return 0;
		}
	return -EINVAL;
}
