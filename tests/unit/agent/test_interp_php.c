// SPDX-License-Identifier: Apache-2.0
/*
 * test_interp_php.c - the PHP decoders (agent/interp_php.h): file name
 * match, the X-Powered-By version, zend_function heads and display names
 * from a fake process memory laid out as Debian's php8.2 8.2.36 has them
 * (offsets, types, call info and lines as read from a running
 * tests/workloads/hot.php: spin at line 12, Outer::run at 28, array_map
 * internal, the script's frame with no function name).
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/interp_php.h"
#include "agent/bpf/interp.h"

#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#define MEM_BASE 0x7f0000000000ULL
#define MEM_SIZE 4096

static uint8_t mem_buf[MEM_SIZE];

static int buf_read(void *ctx, uint64_t addr, void *out, size_t len)
{
	(void)ctx;
	if (addr < MEM_BASE || addr - MEM_BASE > MEM_SIZE || len > MEM_SIZE - (addr - MEM_BASE))
		return -EFAULT;
	memcpy(out, mem_buf + (addr - MEM_BASE), len);
	return 0;
}

static const struct agent_memreader mem = { buf_read, NULL };

static void put64(uint64_t off, uint64_t v)
{
	memcpy(mem_buf + off, &v, 8);
}

static void put32(uint64_t off, uint32_t v)
{
	memcpy(mem_buf + off, &v, 4);
}

/* A zend_string at @off holding @s. */
static uint64_t zstr(uint64_t off, const char *s)
{
	put64(off + AGENT_PHP_ZSTR_LEN, strlen(s));
	memcpy(mem_buf + off + AGENT_PHP_ZSTR_VAL, s, strlen(s) + 1);
	return MEM_BASE + off;
}

/* A zend_function at @off: @type, @name and @scope addresses, @file, @line. */
static uint64_t func(uint64_t off, uint8_t type, uint64_t name, uint64_t scope, uint64_t file,
		     uint32_t line)
{
	memset(mem_buf + off, 0, AGENT_PHP_FN_HEAD_USER);
	mem_buf[off] = type;
	put64(off + 8, name);
	put64(off + AGENT_PHP_FN_SCOPE, scope);
	if (type != PHP_FUNC_INTERNAL) {
		put64(off + AGENT_PHP_OP_FILENAME, file);
		put32(off + AGENT_PHP_OP_LINESTART, line);
	}
	return MEM_BASE + off;
}

static const char hot[] = "/srv/app/tests/workloads/hot.php";

static void test_match(void **state)
{
	(void)state;
	assert_true(agent_php_match("php"));
	assert_true(agent_php_match("php8.2"));
	assert_true(agent_php_match("php-fpm8.2"));
	assert_true(agent_php_match("php-cgi"));
	assert_true(agent_php_match("libphp8.2.so"));
	assert_true(agent_php_match("libphp.so"));
	assert_false(agent_php_match("phpize"));
	assert_false(agent_php_match("php.ini"));
	assert_false(agent_php_match("php-config8.2"));
	assert_false(agent_php_match("libphp8.2.a"));
	assert_false(agent_php_match("python3.11"));
}

static void test_version(void **state)
{
	static const char rodata[] = "\0Content-type\0X-Powered-By: PHP/8.2.36\0PHP_EOL";
	static const char old[] = "X-Powered-By: PHP/7.4.33";
	static const char bad[] = "X-Powered-By: PHP/\0";
	static const char nominor[] = "X-Powered-By: PHP/8";
	char v[32];
	int major = 0, minor = 0;

	(void)state;
	assert_int_equal(agent_php_version((const uint8_t *)rodata, sizeof(rodata), v, sizeof(v),
					   &major, &minor),
			 0);
	assert_string_equal(v, "8.2.36");
	assert_int_equal(major, 8);
	assert_int_equal(minor, 2);
	assert_int_equal(agent_php_version((const uint8_t *)old, sizeof(old) - 1, v, sizeof(v),
					   &major, &minor),
			 0);
	assert_string_equal(v, "7.4.33");
	assert_int_equal(minor, 4);
	assert_int_equal(
		agent_php_version((const uint8_t *)bad, sizeof(bad), v, sizeof(v), &major, &minor),
		-ENOENT);
	assert_int_equal(agent_php_version((const uint8_t *)nominor, sizeof(nominor) - 1, v,
					   sizeof(v), &major, &minor),
			 -ENOENT);
	/* The key cut by the buffer's end is not found. */
	assert_int_equal(
		agent_php_version((const uint8_t *)rodata, 20, v, sizeof(v), &major, &minor),
		-ENOENT);
	/* A small output buffer cuts the version. */
	assert_int_equal(
		agent_php_version((const uint8_t *)rodata, sizeof(rodata), v, 4, &major, &minor),
		0);
	assert_string_equal(v, "8.2");
}

static void test_func_decode(void **state)
{
	struct agent_php_func f;
	uint64_t spin;

	(void)state;
	spin = func(0x100, PHP_FUNC_USER, MEM_BASE + 0x800, 0, MEM_BASE + 0x900, 12);
	assert_int_equal(agent_php_func_decode(mem_buf + 0x100, AGENT_PHP_FN_HEAD_INTERNAL, &f),
			 -EAGAIN);
	assert_int_equal(agent_php_func_decode(mem_buf + 0x100, AGENT_PHP_FN_HEAD_USER, &f), 0);
	assert_int_equal(f.type, PHP_FUNC_USER);
	assert_int_equal(f.name, MEM_BASE + 0x800);
	assert_int_equal(f.filename, MEM_BASE + 0x900);
	assert_int_equal(f.line_start, 12);
	assert_int_equal(f.check, PHP_FUNC_CHECK(2, MEM_BASE + 0x800, 12));
	(void)spin;
	func(0x200, PHP_FUNC_INTERNAL, MEM_BASE + 0xa00, 0, 0, 0);
	assert_int_equal(agent_php_func_decode(mem_buf + 0x200, AGENT_PHP_FN_HEAD_INTERNAL, &f), 0);
	assert_int_equal(f.line_start, 0);
	assert_int_equal(f.check, PHP_FUNC_CHECK(1, MEM_BASE + 0xa00, 0));
	mem_buf[0x200] = 3; /* no such type in PHP 8 */
	assert_int_equal(agent_php_func_decode(mem_buf + 0x200, AGENT_PHP_FN_HEAD_INTERNAL, &f),
			 -PROF_ECORRUPT);
	assert_int_equal(agent_php_func_decode(mem_buf + 0x200, 8, &f), -EAGAIN);
}

static void test_describe(void **state)
{
	char name[AGENT_PHP_NAME_MAX], file[AGENT_PHP_NAME_MAX];
	uint64_t fspin, frun, fmap, fmain, feval, sname, rname, cname, mname, path, ce;
	uint32_t line;

	(void)state;
	memset(mem_buf, 0, sizeof(mem_buf));
	sname = zstr(0x800, "spin");
	rname = zstr(0x840, "run");
	cname = zstr(0x880, "Outer");
	mname = zstr(0x8c0, "array_map");
	path = zstr(0x900, hot);
	ce = MEM_BASE + 0xa00;
	put64(0xa00 + AGENT_PHP_CE_NAME, cname);
	fspin = func(0x000, PHP_FUNC_USER, sname, 0, path, 12);
	frun = func(0x0c0, PHP_FUNC_USER, rname, ce, path, 28);
	fmap = func(0x180, PHP_FUNC_INTERNAL, mname, 0, 0, 0);
	fmain = func(0x200, PHP_FUNC_USER, 0, 0, path, 1);
	feval = func(0x2c0, PHP_FUNC_EVAL, 0, 0, path, 1);

	assert_int_equal(agent_php_describe(&mem, fspin, PHP_FUNC_CHECK(2, sname, 12), name, file,
					    sizeof(name), &line),
			 0);
	assert_string_equal(name, "spin");
	assert_string_equal(file, hot);
	assert_int_equal(line, 12);
	assert_int_equal(agent_php_describe(&mem, frun, PHP_FUNC_CHECK(2, rname, 28), name, file,
					    sizeof(name), &line),
			 0);
	assert_string_equal(name, "Outer::run");
	assert_int_equal(line, 28);
	assert_int_equal(agent_php_describe(&mem, fmap, PHP_FUNC_CHECK(1, mname, 0), name, file,
					    sizeof(name), &line),
			 0);
	assert_string_equal(name, "array_map");
	assert_string_equal(file, "");
	assert_int_equal(agent_php_describe(&mem, fmain, PHP_FUNC_CHECK(2, 0, 1), name, file,
					    sizeof(name), &line),
			 0);
	assert_string_equal(name, "<main>");
	assert_string_equal(file, hot);
	assert_int_equal(agent_php_describe(&mem, feval, PHP_FUNC_CHECK(4, 0, 1), name, file,
					    sizeof(name), &line),
			 0);
	assert_string_equal(name, "<eval>");

	/* Another function at the address since BPF read it. */
	assert_int_equal(agent_php_describe(&mem, fspin, PHP_FUNC_CHECK(2, sname, 13), name, file,
					    sizeof(name), &line),
			 -ESTALE);
	mem_buf[0x000] = 0x55; /* freed: garbage type */
	assert_int_equal(agent_php_describe(&mem, fspin, PHP_FUNC_CHECK(2, sname, 12), name, file,
					    sizeof(name), &line),
			 -ESTALE);
	mem_buf[0x000] = PHP_FUNC_USER;
	/* Unreadable: past the end, and a name string pointing outside. */
	assert_int_equal(agent_php_describe(&mem, MEM_BASE + MEM_SIZE - 8, 0, name, file,
					    sizeof(name), &line),
			 -EFAULT);
	put64(0x000 + 8, MEM_BASE + 2 * MEM_SIZE);
	assert_int_equal(agent_php_describe(&mem, fspin,
					    PHP_FUNC_CHECK(2, MEM_BASE + 2 * MEM_SIZE, 12), name,
					    file, sizeof(name), &line),
			 -EFAULT);
	/* An internal function without a name makes no sense. */
	func(0x180, PHP_FUNC_INTERNAL, 0, 0, 0, 0);
	assert_int_equal(agent_php_describe(&mem, fmap, PHP_FUNC_CHECK(1, 0, 0), name, file,
					    sizeof(name), &line),
			 -PROF_ECORRUPT);
}

static void test_zstr(void **state)
{
	char out[8];
	uint64_t s;

	(void)state;
	memset(mem_buf, 0, sizeof(mem_buf));
	s = zstr(0x100, "a_long_function_name");
	assert_int_equal(agent_php_read_zstr(&mem, s, out, sizeof(out)), 0);
	assert_string_equal(out, "a_long_");
	s = zstr(0x200, "");
	assert_int_equal(agent_php_read_zstr(&mem, s, out, sizeof(out)), 0);
	assert_string_equal(out, "");
	put64(0x300 + AGENT_PHP_ZSTR_LEN, 2u << 20);
	assert_int_equal(agent_php_read_zstr(&mem, MEM_BASE + 0x300, out, sizeof(out)),
			 -PROF_ECORRUPT);
	assert_int_equal(agent_php_read_zstr(&mem, 0, out, sizeof(out)), -EFAULT);
	/* The value runs past readable memory. */
	put64(MEM_SIZE - 24 + AGENT_PHP_ZSTR_LEN, 5);
	assert_int_equal(agent_php_read_zstr(&mem, MEM_BASE + MEM_SIZE - 24, out, sizeof(out)),
			 -EFAULT);
}

/* The real file, when installed: symbols, version and layout check pass. */
static void test_attach_debian(void **state)
{
	struct agent_interp_attach att;
	int rc;

	(void)state;
	if (access("/usr/bin/php8.2", R_OK)) {
		skip();
		return;
	}
	memset(&att, 0, sizeof(att));
	rc = agent_interp_php.attach("/usr/bin/php8.2", 0x1000, &mem, &att);
	assert_int_equal(rc, 0);
	assert_memory_equal(att.version, "8.2.", 4);
	assert_int_equal(att.nloops, 1);
	assert_true(att.loops[0].hi > att.loops[0].lo + 1000); /* execute_ex: ~37 KB */
	assert_int_equal(att.bpf.off[PHP_O_EX_FUNC], 24);
	assert_int_equal(att.bpf.off[PHP_O_EX_PREV], 48);
	assert_int_equal(att.bpf.off[PHP_O_MAX], PROFILE_INTERP_OFF_NONE);
	assert_true(att.bpf.addr[PHP_A_CUR_EX] > 0x1000);
	agent_interp_php.free(att.priv);
	/* The same file saying another version is refused, with the version. */
	{
		char path[] = "/tmp/test_interp_php.XXXXXX", *hit;
		FILE *in = fopen("/usr/bin/php8.2", "rb");
		size_t n = 0, cap = 64 << 20;
		uint8_t *buf = malloc(cap);
		int fd = mkstemp(path);

		assert_non_null(in);
		assert_non_null(buf);
		assert_true(fd >= 0);
		n = fread(buf, 1, cap, in);
		fclose(in);
		hit = memmem(buf, n, "X-Powered-By: PHP/8.2", 21);
		assert_non_null(hit);
		hit[20] = '3';
		assert_int_equal(write(fd, buf, n), (ssize_t)n);
		close(fd);
		free(buf);
		memset(&att, 0, sizeof(att));
		assert_int_equal(agent_interp_php.attach(path, 0, &mem, &att), -ENOTSUP);
		assert_memory_equal(att.version, "8.3.", 4);
		assert_null(att.priv);
		unlink(path);
	}
	/* Not PHP: no interpreter symbols. */
	memset(&att, 0, sizeof(att));
	assert_int_equal(agent_interp_php.attach("/proc/self/exe", 0, &mem, &att), -ENOENT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),	    cmocka_unit_test(test_version),
		cmocka_unit_test(test_func_decode), cmocka_unit_test(test_describe),
		cmocka_unit_test(test_zstr),	    cmocka_unit_test(test_attach_debian),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
