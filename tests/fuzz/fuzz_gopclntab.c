// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_gopclntab.c - libFuzzer target for the Go pclntab reader
 * (src/symbolize/gopclntab.c): any byte string given to
 * sym_gopclntab_parse must yield an error with a reason or an object
 * whose lookups stay in bounds and answer NUL-terminated names. The
 * input's second half also serves as go:func.* data, so the inline-tree
 * walk (sym_gopclntab_lookup_frames) reads hostile trees too.
 * Seeds worth using: the .gopclntab of any Go binary
 * (objcopy -O binary --only-section=.gopclntab BIN seed).
 */
#include "base/compat.h"
#include "base/err.h"
#include "symbolize/gopclntab.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sym_gopclntab *g = NULL;
	struct sym_frame f, fr[8];
	struct prof_err err;

	prof_err_init(&err);
	if (sym_gopclntab_parse(data, size, 0x401000, &g, &err) != 0) {
		PROF_ASSERT(g == NULL && err.code < 0 && err.msg[0] != '\0');
		return 0;
	}
	(void)sym_gopclntab_nfuncs(g);
	/* Probe addresses near the text start and derived from the input. */
	for (uint64_t pc = 0x401000; pc < 0x401000 + 4096; pc += 61)
		if (sym_gopclntab_lookup(g, pc, &f))
			PROF_ASSERT(strlen(f.name) < sizeof(f.name) && f.name[0]);
	for (size_t i = 0; i + 8 <= size && i < 64 * 8; i += 8) {
		uint64_t a;

		memcpy(&a, data + i, sizeof(a));
		if (sym_gopclntab_lookup(g, a, &f))
			PROF_ASSERT(strlen(f.file) < sizeof(f.file));
	}
	sym_gopclntab_set_funcdata(g, data + size / 2, size - size / 2);
	for (uint64_t pc = 0x401000; pc < 0x401000 + 4096; pc += 61) {
		int n = sym_gopclntab_lookup_frames(g, pc, fr, PROF_ARRAY_SIZE(fr));

		PROF_ASSERT(n >= 0 && (size_t)n <= PROF_ARRAY_SIZE(fr));
		for (int i = 0; i < n; i++)
			PROF_ASSERT(fr[i].name[0] && strlen(fr[i].file) < sizeof(fr[i].file));
	}
	sym_gopclntab_free(g);
	return 0;
}
