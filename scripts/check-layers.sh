#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Checks the module layering of docs/design.md: a file in src/<layer>/ may
# include only headers of its own layer or of layers below it.
set -euo pipefail
cd "$(dirname "$0")/.."
order=(base model format store symbolize query agent scrape server mcp cli)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
bad=0
for f in $(git ls-files 'src/*.c' 'src/*.h' 2>/dev/null; find src -name '*.c' -o -name '*.h' | grep -v '/bpf/'); do
	[ -f "$f" ] || continue
	case "$f" in src/agent/bpf/*) continue ;; esac
	layer=$(echo "$f" | cut -d/ -f2)
	me=$(rank "$layer")
	while IFS= read -r inc; do
		other=${inc%%/*}
		r=$(rank "$other")
		[ "$r" -lt 0 ] && continue
		# agent (edge) may use format/model/base/symbolize only; query may not use agent, etc.
		if [ "$r" -gt "$me" ]; then
			echo "layering: $f includes $inc ($other is above $layer)"
			bad=1
		fi
	done < <(grep -oE '^#include "[a-z_]+/[a-z_0-9]+\.h"' "$f" | sed -E 's/#include "(.*)"/\1/')
done | sort -u | tee /tmp/profd-layers.$$
if [ -s /tmp/profd-layers.$$ ]; then rm -f /tmp/profd-layers.$$; exit 1; fi
rm -f /tmp/profd-layers.$$
