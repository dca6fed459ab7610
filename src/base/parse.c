// SPDX-License-Identifier: Apache-2.0
/* parse.c - checked parsing; see parse.h. */
#include "base/compat.h"
#include "base/mem.h"
#include "base/parse.h"

int parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -EINVAL;
		if (__builtin_mul_overflow(v, 10, &v) ||
		    __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
			return -ERANGE;
	}
	*out = v;
	return 0;
}

int parse_i64(const char *s, int64_t *out)
{
	uint64_t v;
	int neg = 0, rc;

	if (s && *s == '-') {
		neg = 1;
		s++;
	}
	rc = parse_u64(s, &v);
	if (rc)
		return rc;
	if (neg) {
		if (v > (uint64_t)INT64_MAX + 1)
			return -ERANGE;
		*out = (int64_t)(0 - v);
	} else {
		if (v > (uint64_t)INT64_MAX)
			return -ERANGE;
		*out = (int64_t)v;
	}
	return 0;
}

int parse_duration_ns(const char *s, int64_t *out)
{
	static const struct {
		const char *suffix;
		int64_t mult;
	} units[] = { { "ns", 1 },
		      { "us", 1000 },
		      { "ms", 1000000 },
		      { "s", 1000000000 },
		      { "m", 60000000000LL },
		      { "h", 3600000000000LL },
		      { "d", 86400000000000LL } };
	char num[32];
	size_t i = 0;
	uint64_t v;
	int64_t r;

	if (!s)
		return -EINVAL;
	while (s[i] >= '0' && s[i] <= '9' && i < sizeof(num) - 1) {
		num[i] = s[i];
		i++;
	}
	num[i] = '\0';
	if (parse_u64(num, &v))
		return -EINVAL;
	if (v > (uint64_t)INT64_MAX)
		return -ERANGE;
	if (s[i] == '\0') {
		if (__builtin_mul_overflow((int64_t)v, 1000000000LL, &r))
			return -ERANGE;
		*out = r;
		return 0;
	}
	for (size_t u = 0; u < PROF_ARRAY_SIZE(units); u++) {
		if (strcmp(s + i, units[u].suffix) == 0) {
			if (__builtin_mul_overflow((int64_t)v, units[u].mult, &r))
				return -ERANGE;
			*out = r;
			return 0;
		}
	}
	return -EINVAL;
}

int parse_time_ms(const char *s, int64_t now_ms, int64_t *out)
{
	int64_t d;

	if (!s || !*s)
		return -EINVAL;
	if (strncmp(s, "now", 3) == 0) {
		if (s[3] == '\0') {
			*out = now_ms;
			return 0;
		}
		if (s[3] != '-' || parse_duration_ns(s + 4, &d))
			return -EINVAL;
		*out = now_ms - d / 1000000;
		return 0;
	}
	return parse_i64(s, out);
}

int64_t prof_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int parse_size_bytes(const char *s, uint64_t *out)
{
	static const struct {
		const char *sfx;
		unsigned shift;
	} sfx[] = { { "B", 0 },	   { "KB", 10 }, { "KiB", 10 }, { "K", 10 },   { "MB", 20 },
		    { "MiB", 20 }, { "M", 20 },	 { "GB", 30 },	{ "GiB", 30 }, { "G", 30 } };
	size_t i = 0;
	char num[32];
	uint64_t v;

	while (s[i] >= '0' && s[i] <= '9')
		i++;
	if (i == 0 || i >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, i);
	num[i] = '\0';
	if (parse_u64(num, &v))
		return -EINVAL;
	if (!s[i]) {
		*out = v;
		return 0;
	}
	for (size_t k = 0; k < PROF_ARRAY_SIZE(sfx); k++)
		if (!strcmp(s + i, sfx[k].sfx)) {
			if (v > (UINT64_MAX >> sfx[k].shift))
				return -ERANGE;
			*out = v << sfx[k].shift;
			return 0;
		}
	return -EINVAL;
}

bool parse_build_id_ok(const char *s, size_t n)
{
	if (!s || n < PARSE_BUILD_ID_MIN || n > PARSE_BUILD_ID_MAX || n % 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (parse_hex_digit((unsigned char)s[i]) < 0)
			return false;
	return true;
}

uint8_t *parse_base64(const char *s, size_t n, size_t *outn)
{
	uint8_t *o = xmalloc(n / 4 * 3 + 3);
	uint32_t acc = 0;
	size_t k = 0;
	int bits = 0;

	while (n && s[n - 1] == '=')
		n--;
	for (size_t i = 0; i < n; i++) {
		int v;
		char c = s[i];

		if (c >= 'A' && c <= 'Z')
			v = c - 'A';
		else if (c >= 'a' && c <= 'z')
			v = c - 'a' + 26;
		else if (c >= '0' && c <= '9')
			v = c - '0' + 52;
		else if (c == '+' || c == '-')
			v = 62;
		else if (c == '/' || c == '_')
			v = 63;
		else {
			free(o);
			return NULL;
		}
		acc = acc << 6 | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			o[k++] = (uint8_t)(acc >> bits);
		}
	}
	if (n % 4 == 1) { /* one leftover character cannot encode a byte */
		free(o);
		return NULL;
	}
	*outn = k;
	return o;
}
