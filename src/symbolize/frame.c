// SPDX-License-Identifier: Apache-2.0
/*
 * frame.c - names of frame sources; see frame.h.
 */
#include "base/compat.h"
#include "symbolize/frame.h"

const char *sym_source_name(enum sym_source s)
{
	switch (s) {
	case SYM_SRC_DYNSYM:
		return "dynsym";
	case SYM_SRC_SYMTAB:
		return "symtab";
	case SYM_SRC_GOPCLNTAB:
		return "gopclntab";
	case SYM_SRC_DWARF:
		return "dwarf";
	default:
		return "none";
	}
}
