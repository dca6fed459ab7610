// SPDX-License-Identifier: Apache-2.0
/*
 * test_base.c - checked parsing, string interning, buffers and gzip caps,
 * UTF-8 validation and JSON strings made from any bytes, URL escaping, hex
 * digits, log level names, log lines (one write each, cut to the buffer).
 */
#include "base/compat.h"
#include "base/buf.h"
#include "base/compress.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/strtab.h"
#include "base/utf8.h"

#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

static void test_parse_u64_rejects_trailing_garbage(void **state)
{
	uint64_t v = 7;
	int64_t s;

	(void)state;
	assert_int_equal(parse_u64("12", &v), 0);
	assert_int_equal(v, 12);
	assert_int_equal(parse_u64("12abc", &v), -EINVAL);
	assert_int_equal(parse_u64("", &v), -EINVAL);
	assert_int_equal(parse_u64("18446744073709551615", &v), 0);
	assert_int_equal(v, UINT64_MAX);
	assert_int_equal(parse_u64("18446744073709551616", &v), -ERANGE);
	assert_int_equal(parse_i64("-9223372036854775808", &s), 0);
	assert_int_equal(s, INT64_MIN);
	assert_int_equal(parse_i64("9223372036854775808", &s), -ERANGE);
}

static void test_parse_duration_units(void **state)
{
	int64_t ns;

	(void)state;
	assert_int_equal(parse_duration_ns("10s", &ns), 0);
	assert_int_equal(ns, 10000000000LL);
	assert_int_equal(parse_duration_ns("500ms", &ns), 0);
	assert_int_equal(ns, 500000000LL);
	assert_int_equal(parse_duration_ns("2m", &ns), 0);
	assert_int_equal(ns, 120000000000LL);
	assert_int_equal(parse_duration_ns("3", &ns), 0);
	assert_int_equal(ns, 3000000000LL);
	assert_int_equal(parse_duration_ns("10x", &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("ms", &ns), -EINVAL);
	assert_int_equal(parse_duration_ns("99999999999999999h", &ns), -ERANGE);
}

static void test_parse_size_bytes_binary_multiples(void **state)
{
	uint64_t v;

	(void)state;
	assert_int_equal(parse_size_bytes("64MiB", &v), 0);
	assert_int_equal(v, 64ULL << 20);
	assert_int_equal(parse_size_bytes("512KB", &v), 0);
	assert_int_equal(v, 512ULL << 10);
	assert_int_equal(parse_size_bytes("123", &v), 0);
	assert_int_equal(v, 123);
	assert_int_equal(parse_size_bytes("1TB", &v), -EINVAL);
	assert_int_equal(parse_size_bytes("MiB", &v), -EINVAL);
	assert_int_equal(parse_size_bytes("99999999999999999999G", &v), -EINVAL);
	assert_int_equal(parse_size_bytes("18446744073709551615G", &v), -ERANGE);
}

static void test_parse_time_relative(void **state)
{
	int64_t t;

	(void)state;
	assert_int_equal(parse_time_ms("now-15m", 1000000000, &t), 0);
	assert_int_equal(t, 1000000000 - 15 * 60 * 1000);
	assert_int_equal(parse_time_ms("now", 42, &t), 0);
	assert_int_equal(t, 42);
	assert_int_equal(parse_time_ms("1700000000000", 0, &t), 0);
	assert_int_equal(t, 1700000000000LL);
	assert_int_equal(parse_time_ms("now+5m", 0, &t), -EINVAL);
}

static void test_strtab_interns_once(void **state)
{
	struct strtab t;
	char name[32];

	(void)state;
	strtab_init(&t);
	assert_int_equal(strtab_intern_cstr(&t, ""), 0);
	assert_int_equal(strtab_intern_cstr(&t, "main"), 1);
	assert_int_equal(strtab_intern_cstr(&t, "main"), 1);
	for (int i = 0; i < 5000; i++) {
		snprintf(name, sizeof(name), "f%d", i);
		assert_int_equal(strtab_intern_cstr(&t, name), (uint32_t)i + 2);
	}
	assert_int_equal(strtab_find(&t, "f4999", 5), 5001);
	assert_string_equal(strtab_get(&t, 5001), "f4999");
	assert_int_equal(strtab_find(&t, "nope", 4), UINT32_MAX);
	/* embedded NUL bytes are part of the key */
	assert_int_not_equal(strtab_intern(&t, "a\0b", 3), strtab_intern(&t, "a\0c", 3));
	strtab_release(&t);
}

static void test_buf_cap(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_addstr(&b, "12345678"), 0);
	assert_int_equal(buf_addstr(&b, "9"), -PROF_ETOOBIG);
	assert_int_equal(b.len, 8);
	assert_string_equal(b.p, "12345678");
	buf_release(&b);
	buf_init(&b, 0);
	assert_int_equal(buf_add_json_str(&b, "a\"\n", 3), 0);
	assert_string_equal(b.p, "\"a\\\"\\u000a\"");
	buf_release(&b);
}

/* @s (@n bytes) through buf_add_json_str must give exactly @want. */
static void json_is(const char *s, size_t n, const char *want)
{
	struct buf b = BUF_INIT;

	assert_int_equal(buf_add_json_str(&b, s, n), 0);
	assert_string_equal(b.p, want);
	assert_int_equal(b.len, strlen(want));
	assert_true(utf8_valid(b.p, b.len));
	buf_release(&b);
}

static void test_utf8_seq_len_well_formed_table(void **state)
{
	(void)state;
	assert_int_equal(utf8_seq_len((const unsigned char *)"a", 1), 1);
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xc3\xa9", 2), 2);     /* é */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 3), 3); /* € */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xf0\x9f\x98\x80", 4),
			 4); /* U+1F600 */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xf4\x8f\xbf\xbf", 4),
			 4); /* U+10FFFF */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xff", 1), 0);
	assert_int_equal(utf8_seq_len((const unsigned char *)"\x80", 1), 0);	 /* continuation */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xc0\xaf", 2), 0); /* overlong '/' */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xe0\x80\xaf", 3), 0); /* overlong */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xed\xa0\x80", 3), 0); /* U+D800 */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xf4\x90\x80\x80", 4),
			 0); /* > U+10FFFF */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xe2\x82\xac", 2), 0); /* cut by n */
	assert_int_equal(utf8_seq_len((const unsigned char *)"\xe2\x28\xa1", 3), 0);
	assert_true(utf8_valid("ok_\xc3\xa9", 5));
	assert_false(utf8_valid("bad\xffname", 8));
	assert_true(utf8_valid("", 0));
}

static void test_json_str_any_bytes_valid_utf8(void **state)
{
	struct buf b;

	(void)state;
	json_is("plain", 5, "\"plain\"");
	json_is("", 0, "\"\"");
	json_is("a\"\\b", 4, "\"a\\\"\\\\b\"");
	/* control characters, DEL and NUL are escaped */
	json_is("\x01\x1b[31m\x7f", 7, "\"\\u0001\\u001b[31m\\u007f\"");
	json_is("a\0b", 3, "\"a\\u0000b\"");
	/* valid UTF-8 passes as it is */
	json_is("ok_\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14,
		"\"ok_\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"");
	/* each byte that does not start a valid sequence is one \ufffd (Go's rule) */
	json_is("bad\xffname\x01", 9, "\"bad\\ufffdname\\u0001\"");
	json_is("trunc\xe2\x82", 7, "\"trunc\\ufffd\\ufffd\"");
	json_is("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"");
	json_is("\xc0\xaf"
		"x",
		3, "\"\\ufffd\\ufffdx\"");
	json_is("\xe2\x82\xac\x80", 4, "\"\xe2\x82\xac\\ufffd\"");
	/* U+2028, U+2029 escaped as Go does (JavaScript line ends); their
	 * neighbours U+2027, U+202A and a cut separator are not special */
	json_is("a\xe2\x80\xa8"
		"b\xe2\x80\xa9",
		8, "\"a\\u2028b\\u2029\"");
	json_is("\xe2\x80\xa7\xe2\x80\xaa", 6, "\"\xe2\x80\xa7\xe2\x80\xaa\"");
	json_is("\xe2\x80", 2, "\"\\ufffd\\ufffd\"");
	/* a cap: all or nothing */
	buf_init(&b, 12);
	assert_int_equal(buf_addstr(&b, "[x,"), 0);
	assert_int_equal(buf_add_json_str(&b, "abc\xff", 4), -PROF_ETOOBIG);
	assert_int_equal(b.len, 3);
	assert_string_equal(b.p, "[x,");
	assert_int_equal(buf_add_json_str(&b, "abc\x01", 4), -PROF_ETOOBIG);
	assert_string_equal(b.p, "[x,");
	assert_int_equal(buf_add_json_str(&b, "abcdefg", 7), 0);
	assert_string_equal(b.p, "[x,\"abcdefg\"");
	buf_release(&b);
}

static void test_gzip_roundtrip_and_bomb(void **state)
{
	struct buf z = BUF_INIT, out = BUF_INIT;
	struct prof_err err;
	char *zeros = calloc(1, 1 << 20);

	(void)state;
	assert_int_equal(gzip_deflate(zeros, 1 << 20, &z), 0);
	assert_true(gzip_is(z.p, z.len));
	prof_err_init(&err);
	assert_int_equal(gzip_inflate(z.p, z.len, 1 << 20, &out, &err), 0);
	assert_int_equal(out.len, 1 << 20);
	buf_reset(&out);
	/* 1 MiB of zeros compresses ~1000x; a 64 KiB cap must refuse it */
	prof_err_init(&err);
	assert_int_equal(gzip_inflate(z.p, z.len, 65536, &out, &err), -PROF_ETOOBIG);
	assert_non_null(strstr(err.msg, "65536"));
	assert_int_equal(out.len, 0);
	/* truncated stream */
	prof_err_init(&err);
	assert_int_equal(gzip_inflate(z.p, z.len / 2, 1 << 21, &out, &err), -PROF_ECORRUPT);
	assert_non_null(strstr(err.msg, "truncated"));
	/* two members concatenated (RFC 1952) decode as one stream */
	{
		char *copy = malloc(z.len);
		size_t n = z.len;

		memcpy(copy, z.p, n);
		buf_add(&z, copy, n);
		free(copy);
	}
	prof_err_init(&err);
	buf_reset(&out);
	assert_int_equal(gzip_inflate(z.p, z.len, 4 << 20, &out, &err), 0);
	assert_int_equal(out.len, 2 << 20);
	free(zeros);
	buf_release(&z);
	buf_release(&out);
}

/* One gzip_inflate against gzip_inflate_zlib: same code, message, offset, output. */
static void same_inflate(const void *z, size_t n, size_t max)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	struct prof_err ea, eb;
	int ra, rb;

	prof_err_init(&ea);
	prof_err_init(&eb);
	ra = gzip_inflate(z, n, max, &a, &ea);
	rb = gzip_inflate_zlib(z, n, max, &b, &eb);
	if (ra != rb || strcmp(ea.msg, eb.msg) || ea.offset != eb.offset || a.len != b.len ||
	    memcmp(a.p ? a.p : "", b.p ? b.p : "", a.len))
		fail_msg("inflate of %zu bytes (cap %zu): %d '%s' %zu bytes vs zlib %d '%s' %zu", n,
			 max, ra, ea.msg, a.len, rb, eb.msg, b.len);
	buf_release(&a);
	buf_release(&b);
}

/*
 * The ISA-L inflate gives zlib's answer on gzip streams of several shapes
 * (one member, two, zero padding, trailing bytes, a named header) and on
 * 20 000 mutations of them: bytes changed anywhere, cut short, capped.
 */
static void test_gzip_isal_agrees_with_zlib(void **state)
{
	struct buf seeds[5], z = BUF_INIT, m = BUF_INIT;
	size_t plain = 300000;
	char *text = malloc(plain);
	uint64_t r = 0x9e3779b97f4a7c15ULL;

	(void)state;
	for (size_t i = 0; i < plain; i++) {
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		text[i] = (char)("abcdefgh;\n"[(r >> 33) % 10] + (i % 997 == 0));
	}
	for (int i = 0; i < 5; i++)
		buf_init(&seeds[i], 0);
	assert_int_equal(gzip_deflate(text, plain, &seeds[0]), 0);
	assert_int_equal(gzip_deflate(text, 5000, &seeds[1]), 0);
	assert_int_equal(gzip_deflate(text + 7, 9000, &seeds[1]), 0);
	assert_int_equal(gzip_deflate(text, 20000, &seeds[2]), 0);
	buf_add(&seeds[2], "\0\0\0\0", 4);
	assert_int_equal(gzip_deflate(text, 20000, &seeds[3]), 0);
	buf_add(&seeds[3], "\0\0junk", 6);
	/* FNAME set: the name, NUL-terminated, before the deflate data */
	assert_int_equal(gzip_deflate(text, 3000, &z), 0);
	buf_add(&seeds[4], z.p, 3);
	buf_add(&seeds[4], "\x08", 1);
	buf_add(&seeds[4], z.p + 4, 6);
	buf_add(&seeds[4], "name.txt", 9);
	buf_add(&seeds[4], z.p + 10, z.len - 10);
	for (int i = 0; i < 5; i++) {
		same_inflate(seeds[i].p, seeds[i].len, 1 << 20);
		same_inflate(seeds[i].p, seeds[i].len, 4000);
	}
	for (int k = 0; k < 20000; k++) {
		const struct buf *sd = &seeds[k % 5];
		size_t n = sd->len, at;

		buf_reset(&m);
		buf_add(&m, sd->p, n);
		r = r * 6364136223846793005ULL + 1442695040888963407ULL;
		at = (size_t)(r >> 20) % n;
		switch ((r >> 8) % 4) {
		case 0: /* a byte of the header or the first deflate block */
			at %= PROF_MIN(n, (size_t)64);
			/* fall through */
		case 1:
			m.p[at] ^= (char)(1u << ((r >> 4) % 8));
			break;
		case 2:
			m.len = at;
			break;
		default: /* a random byte near the end: the trailer, padding */
			at = n - 1 - at % PROF_MIN(n, (size_t)16);
			m.p[at] = (char)(r >> 40);
			break;
		}
		same_inflate(m.p, m.len, (r >> 50) % 8 ? 1 << 20 : (r >> 30) % 40000);
	}
	for (int i = 0; i < 5; i++)
		buf_release(&seeds[i]);
	buf_release(&z);
	buf_release(&m);
	free(text);
}

static void test_buf_url_escaped_rfc3986(void **state)
{
	struct buf b;

	(void)state;
	buf_init(&b, 1 << 10);
	assert_int_equal(buf_add_url_escaped(&b, "AZaz09-._~"), 0);
	assert_string_equal(b.p, "AZaz09-._~"); /* unreserved: as they are */
	buf_reset(&b);
	assert_int_equal(buf_add_url_escaped(&b, "{service.name=\"a b\"}/%&+\xc3\xa9\x7f"), 0);
	assert_string_equal(b.p, "%7Bservice.name%3D%22a%20b%22%7D%2F%25%26%2B%C3%A9%7F");
	buf_release(&b);
	buf_init(&b, 4);
	assert_int_equal(buf_add_url_escaped(&b, "ab c"), -PROF_ETOOBIG);
	assert_int_equal(b.len, 2); /* what fitted: "ab", not half of "%20" */
	assert_memory_equal(b.p, "ab", 2);
	buf_release(&b);
}

static void test_parse_hex_digit_all_bytes(void **state)
{
	(void)state;
	for (int c = 0; c < 256; c++) {
		int want = c >= '0' && c <= '9'	  ? c - '0'
			   : c >= 'a' && c <= 'f' ? c - 'a' + 10
			   : c >= 'A' && c <= 'F' ? c - 'A' + 10
						  : -1;

		assert_int_equal(parse_hex_digit(c), want);
	}
	assert_int_equal(parse_hex_digit('F'), 15);
	assert_int_equal(parse_hex_digit('g'), -1);
	assert_int_equal(parse_hex_digit('@'), -1); /* 0x40 | 0x20 is '`', not a digit */
}

static void test_parse_base64_alphabets_and_padding(void **state)
{
	static const struct {
		const char *in, *out; /* out NULL: refused */
	} cases[] = {
		{ "aGVsbG8=", "hello" }, { "aGVsbG8", "hello" }, { "", "" },
		{ "-_8=", "\xfb\xff" },	 { "+/8=", "\xfb\xff" }, { "aGVsbG8=x", NULL },
		{ "a", NULL },		 { "aGV sbG8=", NULL },	 { "aGVs\nbG8=", NULL },
	};
	uint8_t *b;
	size_t n;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(cases); i++) {
		b = parse_base64(cases[i].in, strlen(cases[i].in), &n);
		if (!cases[i].out) {
			assert_null(b);
			continue;
		}
		assert_non_null(b);
		assert_int_equal(n, strlen(cases[i].out));
		assert_memory_equal(b, cases[i].out, n);
		free(b);
	}
}

static void test_parse_build_id_ok_only_hex(void **state)
{
	static const char *const good[] = { "ab", "abc123", "0123456789ABCDEFabcdef01" };
	static const char *const bad[] = { "",	    "a",	"abc",	     "zz",	"../../etc",
					   "ab/cd", "ab.debug", "0123 4567", "abcdef\n" };
	char big[PARSE_BUILD_ID_MAX + 3];

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(good); i++)
		assert_true(parse_build_id_ok(good[i], strlen(good[i])));
	for (size_t i = 0; i < PROF_ARRAY_SIZE(bad); i++)
		assert_false(parse_build_id_ok(bad[i], strlen(bad[i])));
	assert_false(parse_build_id_ok("ab\0cd", 5)); /* a NUL inside */
	assert_false(parse_build_id_ok(NULL, 2));
	memset(big, 'a', sizeof(big));
	assert_true(parse_build_id_ok(big, PARSE_BUILD_ID_MAX));
	assert_false(parse_build_id_ok(big, PARSE_BUILD_ID_MAX + 2));
}

static void test_log_level_parse_names(void **state)
{
	static const char *names[] = { "debug", "info", "warn", "error" };
	enum prof_log_level lv;

	(void)state;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(names); i++) {
		lv = PROF_LOG_ERROR + 1;
		assert_int_equal(prof_log_level_parse(names[i], &lv), 0);
		assert_int_equal(lv, (int)i);
	}
	assert_int_equal(PROF_LOG_DEBUG, 0);
	assert_int_equal(PROF_LOG_ERROR, 3);
	lv = PROF_LOG_WARN;
	assert_int_equal(prof_log_level_parse("INFO", &lv), -EINVAL); /* names are lower case */
	assert_int_equal(prof_log_level_parse("warning", &lv), -EINVAL);
	assert_int_equal(prof_log_level_parse("", &lv), -EINVAL);
	assert_int_equal(lv, PROF_LOG_WARN); /* untouched on failure */
}

/* Run prof_log with stderr on a pipe; return what it wrote (static buffer). */
static const char *log_capture(enum prof_log_level level, const char *fmt, const char *arg)
{
	static char got[8192];
	int fds[2], saved;
	ssize_t n;

	assert_int_equal(pipe(fds), 0);
	saved = dup(STDERR_FILENO);
	assert_true(dup2(fds[1], STDERR_FILENO) >= 0);
	prof_log(level, fmt, arg);
	assert_true(dup2(saved, STDERR_FILENO) >= 0);
	close(saved);
	close(fds[1]);
	n = read(fds[0], got, sizeof(got) - 1);
	close(fds[0]);
	got[n > 0 ? n : 0] = '\0';
	return got;
}

static void test_log_line_shape_and_cut(void **state)
{
	const char *l;
	char big[5000];

	(void)state;
	prof_log_set_level(PROF_LOG_INFO);
	l = log_capture(PROF_LOG_WARN, "store: %s", "x=1");
	/* 2026-11-30T09:10:11.123Z warn store: x=1\n */
	assert_int_equal(strlen(l), 24 + strlen(" warn store: x=1\n"));
	assert_int_equal(l[4], '-');
	assert_int_equal(l[7], '-');
	assert_int_equal(l[10], 'T');
	assert_int_equal(l[13], ':');
	assert_int_equal(l[16], ':');
	assert_int_equal(l[19], '.');
	assert_int_equal(l[23], 'Z');
	assert_string_equal(l + 24, " warn store: x=1\n");
	assert_string_equal(log_capture(PROF_LOG_DEBUG, "%s", "hidden"), "");
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	l = log_capture(PROF_LOG_ERROR, "%s", big);
	assert_int_equal(strlen(l), 2047); /* the 2048-byte buffer less its NUL */
	assert_int_equal(l[2046], '\n');
	assert_int_equal(l[2045], 'a');
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_u64_rejects_trailing_garbage),
		cmocka_unit_test(test_parse_duration_units),
		cmocka_unit_test(test_parse_time_relative),
		cmocka_unit_test(test_parse_size_bytes_binary_multiples),
		cmocka_unit_test(test_parse_build_id_ok_only_hex),
		cmocka_unit_test(test_strtab_interns_once),
		cmocka_unit_test(test_buf_cap),
		cmocka_unit_test(test_gzip_roundtrip_and_bomb),
		cmocka_unit_test(test_gzip_isal_agrees_with_zlib),
		cmocka_unit_test(test_utf8_seq_len_well_formed_table),
		cmocka_unit_test(test_json_str_any_bytes_valid_utf8),
		cmocka_unit_test(test_buf_url_escaped_rfc3986),
		cmocka_unit_test(test_parse_hex_digit_all_bytes),
		cmocka_unit_test(test_parse_base64_alphabets_and_padding),
		cmocka_unit_test(test_log_level_parse_names),
		cmocka_unit_test(test_log_line_shape_and_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
