// SPDX-License-Identifier: Apache-2.0
/* cmd_top.c - `profd top` (placeholder until its module lands). */
#include "base/compat.h"
#include "cli/cli.h"

int cmd_top(int argc, char **argv)
{
	(void)argc;
	fprintf(stderr, "profd: %s: this build does not include it yet\n", argv[0]);
	return 1;
}
