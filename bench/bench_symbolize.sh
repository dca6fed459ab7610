#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_symbolize.sh - the query-time symbolizer (symbolize/symbolizer.h,
# through the tests/tools/symq helper of the optimized build) against
# binutils `addr2line -i -f -C` and elfutils `eu-addr2line -i -f -C` on the
# same addresses of the same binary, in the same run. Writes
# bench/results/symbolize.md (target: warm >= 10x faster than addr2line).
#
# The binary: the optimized profd itself (-O2 -g: DWARF with inlined
# code), or $SYMBOLIZE_BIN. The addresses: N (default 1M) instruction
# addresses of its .text, drawn at random with a fixed seed (so repeats
# occur, as in profiles). symq answers every address twice in one
# process: cold (a fresh symbolizer: opening and indexing the file, then
# each distinct address resolved once and memoized) and warm (all from
# the memo); addr2line and eu-addr2line read the same list once each,
# output to /dev/null (eu-addr2line on a prefix, see below). CPU time is
# measured (busy shared machines skew wall time). Every tool
# resolves the full inline chain. Environment: PROFD_FAST (its folder
# holds tests/tools/symq), SYMBOLIZE_BIN, N, EU_N.
set -euo pipefail
cd "$(dirname "$0")/.."
PROFD=${PROFD_FAST:-build/profd}
BIN=${SYMBOLIZE_BIN:-$PROFD}
N=${N:-1000000}
OUTMD=bench/results/symbolize.md
SYMQ=$(dirname "$PROFD")/tests/tools/symq

[ -x "$SYMQ" ] || { echo "FAIL: $SYMQ is not built (make build)"; exit 1; }
command -v addr2line >/dev/null || { echo "skip: addr2line (binutils) not installed"; exit 0; }
tmp=$(mktemp -d /tmp/profd-bench-sym.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

objdump -d -j .text --no-show-raw-insn "$BIN" |
	awk -F: '/^ +[0-9a-f]+:/ { gsub(/ /, "", $1); print $1 }' >"$tmp/insns"
python3 - "$tmp/insns" "$N" >"$tmp/addrs" <<'PY'
import random, sys
insns = open(sys.argv[1]).read().split()
random.seed(42)
print("\n".join("0x" + random.choice(insns) for _ in range(int(sys.argv[2]))))
PY
distinct=$(sort -u "$tmp/addrs" | wc -l)
insns=$(wc -l <"$tmp/insns")

# CPU time (user + sys) of a command, in seconds: steadier than wall time when
# the machine is shared. Usage: cpu_time OUTFILE CMD... (stdin passes through).
cpu_time() {
	local out=$1
	shift
	# A tool that exits non-zero (eu-addr2line does when some address has
	# no answer) makes time(1) add a "Command exited..." line first.
	/usr/bin/time -f '%U %S' -o "$tmp/time" "$@" >"$out" || true
	tail -1 "$tmp/time" | awk '{ printf "%.3f\n", $1 + $2 }'
}
"$SYMQ" --bench "$BIN" <"$tmp/addrs" 2>"$tmp/symq.txt"
cold=$(awk '/^cold/ { print $(NF-3) }' "$tmp/symq.txt")
warm=$(awk '/^warm/ { print $(NF-3) }' "$tmp/symq.txt")
named=$(awk '/^cold/ { print $4 }' "$tmp/symq.txt")
a2l=$(cpu_time /dev/null addr2line -i -f -C -e "$BIN" <"$tmp/addrs")
# eu-addr2line takes about a millisecond per address here: time the first
# EU_N addresses and scale to N (stated in the table).
eu=n/a
EU_N=${EU_N:-20000}
if command -v eu-addr2line >/dev/null; then
	head -n "$EU_N" "$tmp/addrs" >"$tmp/addrs.eu"
	t=$(cpu_time /dev/null eu-addr2line -i -f -C -e "$BIN" <"$tmp/addrs.eu")
	eu=$(python3 -c "import sys; print(f'{float(sys.argv[1]) * int(sys.argv[2]) / int(sys.argv[3]):.1f}')" \
		"$t" "$N" "$(wc -l <"$tmp/addrs.eu")")
fi
# ratio BASE T: "N.Nx faster" or "N.Nx slower" of T against BASE.
ratio() {
	python3 -c "import sys; a, b = float(sys.argv[1]), float(sys.argv[2])
print('n/a' if a <= 0 or b <= 0 else f'{a / b:.1f}x faster' if a >= b else f'{b / a:.1f}x slower')" "$1" "$2"
}
ns() { python3 -c "import sys; print(f'{float(sys.argv[1]) * 1e9 / int(sys.argv[2]):.0f}')" "$1" "$N"; }

size=$(stat -c %s "$BIN")
mkdir -p bench/results
cat >"$OUTMD" <<MD
# Symbolization: profd vs addr2line vs eu-addr2line

\`bash bench/bench_symbolize.sh\` ($(date -u +%Y-%m-%d), $(nproc) CPUs). Binary:
\`$(basename "$BIN")\` ($size bytes, -O2 -g), $insns instructions in .text; $N
addresses drawn from them at random (seed 42), $distinct distinct. Every tool
prints the full inline chain with files and lines (\`-i -f -C\`); profd named
$named of $N.

| run | CPU time (s) | ns / address | vs addr2line |
|---|---:|---:|---:|
| profd cold (fresh symbolizer: index + resolve each distinct address once) | $cold | $(ns "$cold") | $(ratio "$a2l" "$cold") |
| profd warm (memoized, as for the next query) | $warm | $(ns "$warm") | $(ratio "$a2l" "$warm") |
| addr2line -i -f -C (binutils $(addr2line --version | head -1 | awk '{print $NF}')) | $a2l | $(ns "$a2l") | 1x |
| eu-addr2line -i -f -C (elfutils; first $EU_N addresses, scaled to $N) | $eu | $( [ "$eu" = n/a ] && echo n/a || ns "$eu") | $( [ "$eu" = n/a ] && echo n/a || ratio "$a2l" "$eu") |

Target: warm >= 10x faster than addr2line. Times are CPU times (user +
system) of each tool, steadier than wall time on this shared 2-CPU
machine (load average $(cut -d' ' -f1 /proc/loadavg) when the run ended);
symq's include reading the addresses, not starting the process.
MD
cat "$OUTMD"
