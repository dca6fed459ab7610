#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_jit.sh - JIT frames named from perf maps (with runtime frames
# off, as for a JIT runtime the agent does not know): node, run with
# --perf-basic-prof, writes /tmp/perf-PID.map as V8 compiles; the agent
# must name the frames of tests/workloads/hot.js's hotLoop() from it, so
# the server's flame graph for {process.executable.name="node"} has a
# frame naming hotLoop holding most of the CPU time (the workload spends
# ~90 % of it there), under node's own native frames (main and V8's
# entry trampolines, unwound with .eh_frame), and anything in JIT code
# the map does not name stays as "[jit]", never dropped. node runs on past
# its 4 s until it has used 2.5 s of CPU (~250 samples at 99 Hz; a loaded
# machine gave it 1.5 s in 4 s, 147 samples, against the floor of 100).
# Needs root, kernel BTF and node; prints "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
command -v node >/dev/null || {
	skip "node is not installed"
}
agent_lib_init
MS=${JIT_MS:-4000}

agent_start_server
# --no-interpreters: V8's own frames would name hotLoop first (test_agent_node.sh);
# this checks the perf map, the fallback for runtimes the agent does not know.
agent_start --server "$base" --interval 1s --frequency 99 --include-exe node --no-interpreters
echo "ok agent attached"
node --perf-basic-prof tests/workloads/hot.js "$MS" 2500 &
npid=$!
extra_pids=$npid
wait "$npid" || die "node failed"
extra_pids=
sleep 0.3
agent_stop
[ -s "/tmp/perf-$npid.map" ] || die "node wrote no /tmp/perf-$npid.map"
rm -f "/tmp/perf-$npid.map"

type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
agent_flame "$type" "{process.executable.name=\"node\",process.pid=\"$npid\"}" "$tmp/cpu.json"
python3 tests/integration/agent_check.py "$tmp/cpu.json" '~hotLoop' '~coldWork' '~Builtins_' \
	'[jit]' _start >"$tmp/sum" || die "flame graph check"
python3 - "$tmp/sum" <<'PY' || die "JIT symbols"
import json, sys
s = json.load(open(sys.argv[1]))
total, n = s["total"], s["names"]
samples = total / (1e9 / 99)
hot = 100 * n["~hotLoop"] / total if total else 0
print(f"ok {samples:.0f} samples of node: hotLoop {hot:.1f}%, coldWork "
      f"{100 * n['~coldWork'] / max(total, 1):.1f}%, V8 builtins "
      f"{100 * n['~Builtins_'] / max(total, 1):.1f}%, unnamed [jit] "
      f"{100 * n['[jit]'] / max(total, 1):.1f}%; stacks reaching _start "
      f"{100 * n['_start'] / max(total, 1):.1f}%")
if samples < 100 or hot < 50 or n["~Builtins_"] == 0:
    sys.exit(1)
PY
echo "ok agent names JIT frames from the perf map"
