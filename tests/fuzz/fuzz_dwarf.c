// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_dwarf.c - libFuzzer target for the DWARF reader
 * (src/symbolize/dwarf.c, over libdw): a debug file uploaded to the
 * server is untrusted, and it is read at query time. Any byte string,
 * written to a memory file, must open with an error or give lookups that
 * stay in bounds and end (the DIE walks are iterative and depth-capped).
 * Seeds: small -g objects built by scripts/fuzz.sh (object, executable,
 * DWARF 4 and 5, compressed sections, separate debug file, shared
 * object) and tests/fuzz/corpus/fuzz_dwarf/.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/dwarf.h"

#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sym_frame fr[SYM_FRAMES_MAX];
	struct sym_dwarf *d = NULL;
	struct prof_err err;
	char path[64];
	int fd = memfd_create("fuzz_dwarf", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	prof_err_init(&err);
	if (sym_dwarf_open(path, &d, &err) != 0) {
		PROF_ASSERT(d == NULL && err.code < 0 && err.msg[0] != '\0');
		close(fd);
		return 0;
	}
	/*
	 * Every 4th byte where small objects put their code (0 for a
	 * relocatable object, 0x1000 for a linked one: the seeds'
	 * functions, their inlined calls and blocks), then a sweep.
	 */
	for (uint64_t a = 0; a < 0x4000; a += a < 0x400 || (a >= 0x1000 && a < 0x1400) ? 4 : 0x7f) {
		int n = sym_dwarf_lookup(d, a, fr, SYM_FRAMES_MAX);

		PROF_ASSERT(n >= 0 && n <= SYM_FRAMES_MAX);
		for (int i = 0; i < n; i++)
			PROF_ASSERT(strlen(fr[i].name) < sizeof(fr[i].name));
	}
	for (size_t i = 0; i + 8 <= size && i < 32 * 8; i += 8) {
		uint64_t a;

		memcpy(&a, data + i, sizeof(a));
		(void)sym_dwarf_lookup(d, a, fr, SYM_FRAMES_MAX);
	}
	sym_dwarf_free(d);
	close(fd);
	return 0;
}
