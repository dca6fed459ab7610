// SPDX-License-Identifier: Apache-2.0
/*
 * interp_php.c - PHP 8.2 (non-ZTS, x86-64): detection, layout check and
 * frame naming for the interpreter framework (interp.h); the BPF half is
 * bpf/php.bpf.h, the decoders interp_php_decode.c.
 *
 * Detection: a mapped file named php, php-fpm, php-cgi (with a version:
 * php8.2) or libphp*.so that defines executor_globals and execute_ex
 * (Debian's php8.2 has them in .dynsym only: the file is stripped). The
 * version is the string after "X-Powered-By: PHP/" in the file (.rodata;
 * main/SAPI.c). Only 8.2 is supported: another version, a ZTS build
 * (executor_globals_offset instead of executor_globals: the globals live
 * in TLS) or an executor_globals of another size than 8.2's 1800 bytes
 * (a build whose layout differs) is refused with -ENOTSUP, never named
 * with wrong offsets.
 *
 * Interpreter loop: the HYBRID VM runs every opcode inside execute_ex
 * (handlers are labels in it; helpers it calls are separate static
 * functions, below it on the stack). gdb on a running php8.2 shows PHP
 * code as execute_ex <- zend_execute <- zend_execute_scripts, and a
 * callback as execute_ex <- zend_call_function <- (the C function) <-
 * execute_ex: only execute_ex is the loop range.
 *
 * Naming: the zend_function at the frame's address is read (its check
 * value must be the one BPF read: PHP_FUNC_CHECK of type, name pointer
 * and first line), then its name, class and file; the line is the one
 * BPF read from the frame's opline. Decoded functions are cached per
 * process by address and check value. Display names: "func",
 * "Class::method", "{closure}" (PHP's own name for closures, with the
 * class when defined in one), "<main>" for a file's top-level code
 * (the function name is NULL there; the file tells which), "<eval>" for
 * eval'd code; internal functions by their PHP name (str_repeat) with no
 * file or line.
 *
 * Facts checked on Debian php8.2-cli 8.2.36 (NTS, no DWARF) by a small
 * process_vm_readv probe on a running tests/workloads/hot.php: from
 * executor_globals + 488 (current_execute_data) each frame's opline @0,
 * func @24, This.u1.type_info @40, prev_execute_data @48; function type
 * @0 (1 array_map, 2 user), function_name @8, scope @16 (Outer::run's
 * class name at ce + 8), op_array filename @152 and line_start @160
 * (spin 12, work_a 21: the lines of their "function" keyword), opline
 * lineno @24 (16: spin's loop), zend_string len @16 and val @24; call
 * info 0x13 << 16 (CODE | TOP) on the script's frame, TOP on a closure
 * array_map called, none on nested calls. Where these offsets come
 * from: the OpenTelemetry eBPF profiler's PHP unwinder
 * (facts only); PHP 8.2 Zend/zend_compile.h, zend_globals.h.
 */
#include "base/compat.h"
#include "base/err.h"
#include "base/mem.h"
#include "agent/interp.h"
#include "agent/interp_php.h"
#include "agent/bpf/interp.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define PHP_CACHE_ENTRIES 1024
#define PHP_EG_CUR_EX	  488	      /* zend_executor_globals.current_execute_data (8.2) */
#define PHP_EG_SIZE_82	  1800	      /* sizeof(zend_executor_globals), 8.2 NTS x86-64 */
#define PHP_FILE_SCAN_MAX (256 << 20) /* larger files are not searched for the version */

static const uint16_t php_off_82[PHP_O_MAX] = {
	[PHP_O_EX_OPLINE] = 0,
	[PHP_O_EX_FUNC] = 24,
	[PHP_O_EX_TYPEINFO] = 40,
	[PHP_O_EX_PREV] = 48,
	[PHP_O_FN_TYPE] = 0,
	[PHP_O_FN_NAME] = 8,
	[PHP_O_OP_LINESTART] = AGENT_PHP_OP_LINESTART,
	[PHP_O_OPLINE_LINENO] = 24,
};

struct php_fn {
	uint64_t addr; /* 0 = empty */
	uint32_t check;
	uint32_t line_start;
	char *name, *file;
};

struct php_priv {
	struct php_fn cache[PHP_CACHE_ENTRIES];
};

/* The PHP version in file @path ("8.2.36" into @out), from its X-Powered-By string. */
static int php_file_version(const char *path, char *out, size_t max, int *major, int *minor)
{
	struct stat st;
	void *p;
	int fd, rc;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size <= 0 || st.st_size > PHP_FILE_SCAN_MAX) {
		close(fd);
		return -ENOENT;
	}
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (p == MAP_FAILED)
		return -errno;
	rc = agent_php_version(p, (size_t)st.st_size, out, max, major, minor);
	munmap(p, (size_t)st.st_size);
	return rc;
}

static void php_version_note(struct agent_interp_attach *out, const char *what)
{
	size_t k = strlen(out->version);

	snprintf(out->version + k, sizeof(out->version) - k, "%s%s", k ? " " : "", what);
}

static int php_attach(const char *path, uint64_t bias, const struct agent_memreader *mem,
		      struct agent_interp_attach *out)
{
	struct agent_interp_sym syms[] = {
		{ .name = "executor_globals" },
		{ .name = "execute_ex" },
		{ .name = "executor_globals_offset" },
	};
	int rc, major = 0, minor = 0;

	(void)mem;
	rc = agent_interp_elf_symbols(path, syms, PROF_ARRAY_SIZE(syms));
	if (rc)
		return rc == -PROF_EFORMAT ? -ENOENT : rc;
	if ((!syms[0].found && !syms[2].found) || !syms[1].found || !syms[1].size)
		return -ENOENT;
	rc = php_file_version(path, out->version, sizeof(out->version), &major, &minor);
	if (rc == -ENOENT)
		return -ENOTSUP; /* a PHP without its version string: unknown, not guessed */
	if (rc)
		return rc;
	if (major != 8 || minor != 2)
		return -ENOTSUP;
	if (!syms[0].found) {
		php_version_note(out, "(ZTS)");
		return -ENOTSUP;
	}
	if (syms[0].size != PHP_EG_SIZE_82) {
		php_version_note(out, "(other layout)");
		return -ENOTSUP;
	}
	memcpy(out->bpf.off, php_off_82, sizeof(php_off_82));
	for (size_t i = PHP_O_MAX; i < PROFILE_INTERP_OFFS; i++)
		out->bpf.off[i] = PROFILE_INTERP_OFF_NONE;
	out->bpf.addr[PHP_A_CUR_EX] = bias + syms[0].value + PHP_EG_CUR_EX;
	out->loops[0].lo = bias + syms[1].value;
	out->loops[0].hi = out->loops[0].lo + syms[1].size;
	out->nloops = 1;
	out->priv = xcalloc(1, sizeof(struct php_priv));
	return 0;
}

static void php_fn_clear(struct php_fn *c)
{
	free(c->name);
	free(c->file);
	memset(c, 0, sizeof(*c));
}

static void php_free(void *priv)
{
	struct php_priv *pv = priv;

	if (!pv)
		return;
	for (size_t i = 0; i < PHP_CACHE_ENTRIES; i++)
		php_fn_clear(&pv->cache[i]);
	free(pv);
}

static int php_name_frame(void *priv, const struct agent_memreader *mem,
			  const struct profile_interp_frame *f, struct agent_interp_name *out)
{
	struct php_priv *pv = priv;
	struct php_fn *c = &pv->cache[(f->addr >> 3) * 0x9e3779b97f4a7c15ULL >> 54];

	if (c->addr != f->addr || c->check != f->check) {
		char name[AGENT_PHP_NAME_MAX], file[AGENT_PHP_NAME_MAX];
		uint32_t line_start;
		int rc;

		php_fn_clear(c);
		rc = agent_php_describe(mem, f->addr, f->check, name, file, sizeof(name),
					&line_start);
		if (rc)
			return rc;
		c->addr = f->addr;
		c->check = f->check;
		c->line_start = line_start;
		c->name = xstrdup(name);
		c->file = file[0] ? xstrdup(file) : NULL;
	}
	out->function = c->name;
	out->file = c->file;
	out->start_line = c->line_start;
	out->line = (int64_t)f->aux;
	return 0;
}

const struct agent_interp_ops agent_interp_php = {
	.name = "php",
	.runtime = PROFILE_RT_PHP,
	.match = agent_php_match,
	.attach = php_attach,
	.name_frame = php_name_frame,
	.free = php_free,
};
