// SPDX-License-Identifier: Apache-2.0
/* jit_hotspot.c - placeholder until the runtime lands: recognises no file. */
#include "base/compat.h"
#include "agent/jit.h"

static bool hotspot_match(const char *basename)
{
	(void)basename;
	return false;
}

const struct agent_jit_ops agent_jit_hotspot = {
	.name = "jvm",
	.match = hotspot_match,
};
