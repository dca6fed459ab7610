// SPDX-License-Identifier: Apache-2.0
/* jit_v8.c - placeholder until the runtime lands: recognises no file. */
#include "base/compat.h"
#include "agent/jit.h"

static bool v8_match(const char *basename)
{
	(void)basename;
	return false;
}

const struct agent_jit_ops agent_jit_v8 = {
	.name = "v8js",
	.match = v8_match,
};
