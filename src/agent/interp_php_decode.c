// SPDX-License-Identifier: Apache-2.0
/*
 * interp_php_decode.c - the pure decoders of PHP's files and memory
 * (interp_php.h): file name match, version string, zend_function head,
 * zend_string, and a function's display name. Everything remote is read
 * through struct agent_memreader, all or nothing, so the same code runs
 * on a live process, a unit test's buffer and fuzz input.
 *
 * Invariants: nothing is read past a length the caller gave; every
 * remote length is bounded before use; a name is written whole or the
 * call fails.
 *
 * Sources: PHP 8.2 Zend/zend_compile.h (zend_function, zend_op_array,
 * ZEND_*_FUNCTION, ZEND_CALL_*), Zend/zend_types.h (zend_string),
 * main/SAPI.c (the X-Powered-By header); offsets checked on Debian's
 * php8.2 8.2.36 (interp_php.c).
 */
#include "base/compat.h"
#include "base/err.h"
#include "agent/interp_php.h"
#include "agent/bpf/interp.h"

#include <ctype.h>

#define PHP_ZSTR_MAX_LEN (1u << 20)

static bool php_version_tail(const char *p)
{
	if (!*p)
		return true;
	for (; *p; p++)
		if (!isdigit((unsigned char)*p) && *p != '.')
			return false;
	return true;
}

bool agent_php_match(const char *base)
{
	static const char *const names[] = { "php-fpm", "php-cgi", "php" };

	if (!strncmp(base, "libphp", 6))
		return strstr(base + 6, ".so") != NULL;
	for (size_t i = 0; i < PROF_ARRAY_SIZE(names); i++) {
		size_t k = strlen(names[i]);

		if (!strncmp(base, names[i], k) && php_version_tail(base + k))
			return true;
	}
	return false;
}

int agent_php_version(const uint8_t *buf, size_t n, char *out, size_t max, int *major, int *minor)
{
	static const char key[] = "X-Powered-By: PHP/";
	const uint8_t *p = memmem(buf, n, key, sizeof(key) - 1), *end = buf + n;
	size_t k = 0;
	int dots = 0;

	if (!max)
		return -ENOENT;
	out[0] = '\0';
	if (!p)
		return -ENOENT;
	p += sizeof(key) - 1;
	while (p < end && k + 1 < max && (isdigit(*p) || (*p == '.' && k > 0))) {
		dots += *p == '.';
		out[k++] = (char)*p++;
	}
	out[k] = '\0';
	if (dots < 1 || sscanf(out, "%d.%d", major, minor) != 2) {
		out[0] = '\0';
		return -ENOENT;
	}
	return 0;
}

int agent_php_func_decode(const uint8_t *head, size_t n, struct agent_php_func *out)
{
	memset(out, 0, sizeof(*out));
	if (n < AGENT_PHP_FN_HEAD_INTERNAL)
		return -EAGAIN;
	out->type = head[0];
	memcpy(&out->name, head + 8, 8);
	memcpy(&out->scope, head + AGENT_PHP_FN_SCOPE, 8);
	if (out->type == PHP_FUNC_USER || out->type == PHP_FUNC_EVAL) {
		if (n < AGENT_PHP_FN_HEAD_USER)
			return -EAGAIN;
		memcpy(&out->filename, head + AGENT_PHP_OP_FILENAME, 8);
		memcpy(&out->line_start, head + AGENT_PHP_OP_LINESTART, 4);
	} else if (out->type != PHP_FUNC_INTERNAL) {
		return -PROF_ECORRUPT;
	}
	out->check = PHP_FUNC_CHECK(out->type, out->name, out->line_start);
	return 0;
}

int agent_php_read_zstr(const struct agent_memreader *mem, uint64_t addr, char *out, size_t max)
{
	uint64_t len = 0;
	size_t k;

	if (!max)
		return -E2BIG;
	out[0] = '\0';
	if (!addr || mem->read(mem->ctx, addr + AGENT_PHP_ZSTR_LEN, &len, sizeof(len)))
		return -EFAULT;
	if (len > PHP_ZSTR_MAX_LEN)
		return -PROF_ECORRUPT;
	k = (size_t)PROF_MIN(len, (uint64_t)(max - 1));
	if (k && mem->read(mem->ctx, addr + AGENT_PHP_ZSTR_VAL, out, k))
		return -EFAULT;
	out[k] = '\0';
	return 0;
}

int agent_php_describe(const struct agent_memreader *mem, uint64_t addr, uint32_t check, char *name,
		       char *file, size_t max, uint32_t *line_start)
{
	uint8_t head[AGENT_PHP_FN_HEAD_USER];
	char fn[AGENT_PHP_NAME_MAX], cls[AGENT_PHP_NAME_MAX];
	struct agent_php_func f;
	int rc;

	if (max < 2)
		return -E2BIG;
	name[0] = file[0] = '\0';
	*line_start = 0;
	if (mem->read(mem->ctx, addr, head, AGENT_PHP_FN_HEAD_INTERNAL))
		return -EFAULT;
	rc = agent_php_func_decode(head, AGENT_PHP_FN_HEAD_INTERNAL, &f);
	if (rc == -EAGAIN) {
		if (mem->read(mem->ctx, addr + AGENT_PHP_FN_HEAD_INTERNAL,
			      head + AGENT_PHP_FN_HEAD_INTERNAL,
			      AGENT_PHP_FN_HEAD_USER - AGENT_PHP_FN_HEAD_INTERNAL))
			return -EFAULT;
		rc = agent_php_func_decode(head, sizeof(head), &f);
	}
	if (rc)
		return rc == -PROF_ECORRUPT ? -ESTALE : rc; /* not a function any more */
	if (f.check != check)
		return -ESTALE;
	if (!f.name) {
		if (f.type == PHP_FUNC_INTERNAL)
			return -PROF_ECORRUPT;
		snprintf(fn, sizeof(fn), "%s", f.type == PHP_FUNC_EVAL ? "<eval>" : "<main>");
	} else if ((rc = agent_php_read_zstr(mem, f.name, fn, sizeof(fn)))) {
		return rc;
	}
	cls[0] = '\0';
	if (f.scope && f.name) {
		uint64_t cname = 0;

		if (mem->read(mem->ctx, f.scope + AGENT_PHP_CE_NAME, &cname, sizeof(cname)))
			return -EFAULT;
		if ((rc = agent_php_read_zstr(mem, cname, cls, sizeof(cls))))
			return rc;
	}
	if (f.type != PHP_FUNC_INTERNAL && (rc = agent_php_read_zstr(mem, f.filename, file, max)))
		return rc;
	if (cls[0])
		snprintf(name, max, "%s::%s", cls, fn);
	else
		snprintf(name, max, "%s", fn);
	*line_start = f.line_start;
	return 0;
}
