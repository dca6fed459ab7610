// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_php.c - libFuzzer target for the agent's PHP decoders
 * (src/agent/interp_php_decode.c), which read another process's memory:
 * the input is that memory (address = offset + FUZZ_BASE), with a
 * zend_function at its start; the function is described with the check
 * value its own head gives (so the decoding goes past the check), and
 * the input is also searched for a version string and taken as a file
 * name. Any bytes must give 0 with NUL-terminated strings within their
 * buffers, or a negative code; nothing is read outside the input.
 * Build: scripts/fuzz.sh. Seeds: a user function, its name and file.
 */
#include "base/compat.h"
#include "agent/interp_php.h"

#define FUZZ_BASE 0x10000ULL

struct fuzz_mem {
	const uint8_t *data;
	size_t size;
};

static int fuzz_read(void *ctx, uint64_t addr, void *out, size_t len)
{
	const struct fuzz_mem *m = ctx;

	if (addr < FUZZ_BASE || addr - FUZZ_BASE > m->size || len > m->size - (addr - FUZZ_BASE))
		return -EFAULT;
	memcpy(out, m->data + (addr - FUZZ_BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fuzz_mem fm = { data, size };
	struct agent_memreader mem = { fuzz_read, &fm };
	char name[AGENT_PHP_NAME_MAX], file[AGENT_PHP_NAME_MAX], v[32], base[64];
	struct agent_php_func f;
	uint32_t line;
	int major, minor, rc;

	if (!agent_php_func_decode(data, size, &f)) {
		rc = agent_php_describe(&mem, FUZZ_BASE, f.check, name, file, sizeof(name), &line);
		if (!rc && (strlen(name) >= sizeof(name) || strlen(file) >= sizeof(file) ||
			    line != f.line_start))
			__builtin_trap();
		if (rc > 0)
			__builtin_trap();
	}
	rc = agent_php_describe(&mem, FUZZ_BASE + (size ? data[0] : 0), 0, name, file, sizeof(name),
				&line);
	if (rc > 0)
		__builtin_trap();
	if (!agent_php_version(data, size, v, sizeof(v), &major, &minor) && strlen(v) >= sizeof(v))
		__builtin_trap();
	snprintf(base, sizeof(base), "%.*s", (int)PROF_MIN(size, sizeof(base) - 1),
		 (const char *)data);
	(void)agent_php_match(base);
	return 0;
}
