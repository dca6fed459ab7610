// SPDX-License-Identifier: Apache-2.0
/* log.c - structured log lines; see log.h. */
#include "base/compat.h"
#include "base/log.h"

#include <sys/time.h>
#include <unistd.h>

static enum prof_log_level min_level = PROF_LOG_INFO;
static const char *const level_names[] = { "debug", "info", "warn", "error" };

void prof_log_set_level(enum prof_log_level level)
{
	min_level = level;
}

/*
 * One line, one write(2) to stderr (fd 2): lines of concurrent threads do
 * not interleave (a write of up to PIPE_BUF bytes to a pipe is atomic),
 * and no stdio lock or formatting pass is added per line. The second's
 * text is kept per thread (an access-log line per request would otherwise
 * pay gmtime_r and strftime each time).
 */
void prof_log(enum prof_log_level level, const char *fmt, ...)
{
	static __thread char ts[32];
	static __thread time_t ts_sec = -1;
	char line[2048];
	struct timeval tv;
	va_list ap;
	size_t n;
	int k;

	if (level < min_level)
		return;
	gettimeofday(&tv, NULL);
	if (tv.tv_sec != ts_sec) {
		struct tm tm;

		gmtime_r(&tv.tv_sec, &tm);
		strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
		ts_sec = tv.tv_sec;
	}
	/* "2026-11-30T10:29:04.123Z info ": the prefix by hand, not by snprintf */
	unsigned ms = (unsigned)(tv.tv_usec / 1000);
	size_t tl = strlen(ts), ll = strlen(level_names[level]);

	memcpy(line, ts, tl);
	n = tl;
	line[n++] = '.';
	line[n++] = (char)('0' + ms / 100);
	line[n++] = (char)('0' + ms / 10 % 10);
	line[n++] = (char)('0' + ms % 10);
	line[n++] = 'Z';
	line[n++] = ' ';
	memcpy(line + n, level_names[level], ll);
	n += ll;
	line[n++] = ' ';
	va_start(ap, fmt);
	k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	n += k > 0 ? (size_t)k : 0;
	n = PROF_MIN(n, sizeof(line) - 2); /* a long line is cut to the buffer */
	line[n++] = '\n';
	for (size_t off = 0; off < n;) {
		ssize_t w = write(STDERR_FILENO, line + off, n - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break; /* nowhere to report a failing stderr */
		off += (size_t)w;
	}
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
