// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_elf.c - libFuzzer target for the ELF reader (src/symbolize/elf.c):
 * any byte string given to sym_elf_open_mem must yield either an error
 * with a reason or a usable object whose lookups stay in bounds.
 * Build: clang -fsanitize=fuzzer,address,undefined -Isrc tests/fuzz/fuzz_elf.c
 * plus the profd library and -lelf (scripts/fuzz.sh does this). A seed
 * corpus worth using: any ELF binaries, e.g. the unit test executables.
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/elf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_elf *e = NULL;
	struct prof_err err;
	uint64_t vaddr, start;
	size_t n;

	prof_err_init(&err);
	if (sym_elf_open_mem(data, size, &e, &err) != 0) {
		PROF_ASSERT(e == NULL && err.code < 0 && err.msg[0] != '\0');
		return 0;
	}
	PROF_ASSERT(strlen(sym_elf_build_id(e)) % 2 == 0);
	n = sym_elf_nsymbols(e);
	/* Probe lookups at addresses derived from the input itself. */
	for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
		uint64_t a;
		const char *name;

		memcpy(&a, data + i, sizeof(a));
		name = sym_elf_lookup(e, a, &start);
		PROF_ASSERT(!name || (start <= a && strlen(name) < 8192));
		if (sym_elf_offset_to_vaddr(e, a, &vaddr) == 0)
			sym_elf_lookup(e, vaddr, NULL);
	}
	if (n > 0)
		sym_elf_lookup(e, UINT64_MAX, NULL);
	sym_elf_free(e);
	return 0;
}
