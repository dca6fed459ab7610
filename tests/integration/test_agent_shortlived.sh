#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_shortlived.sh - short-lived processes keep their identity: a
# spawner starts 100 processes a second (tests/workloads/burst.c), each
# spinning ~5 ms in burn() and exiting, long before the agent reads its
# samples (it polls every 100 ms). The kernel's exec event makes the agent
# snapshot /proc/PID at once (and again as the loader maps libc), so in
# the server the samples of those processes must be under
# process.executable.name="burst", with no burn() time attributed
# elsewhere; >= 70 % of them must have burn() symbolized (the rest is
# mostly exec, the dynamic loader and exit, as short processes are), and
# at most 15 % may have a frame left [unknown] (mappings never seen),
# not counting samples in execve (posix_spawn's child before the exec
# runs the spawner's code in the spawner's memory, and is counted under
# the new name as the kernel's exec event comes after its samples).
# On a loaded machine the spawner runs on past its 4 s until it has
# started 400 processes (at most 20 s; 80 in 4 s were seen under load),
# and each burst burns 5 ms of CPU rather than of wall time (at most
# 20 ms of wall time), so the counts and shares below do not depend on
# how much CPU the machine had to spare.
# Needs root and kernel BTF.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init
SECONDS_RUN=${SHORTLIVED_SECONDS:-4}

${CC:-cc} -O2 -g -o "$tmp/burst" tests/workloads/burst.c || die "cannot build burst.c"
cp "$tmp/burst" "$tmp/spawner"
agent_start_server
AGENT_BIN=$PROFD_FAST agent_start --server "$base" --interval 1s --frequency 99 \
	--metrics-listen "127.0.0.1:$(free_port)"
echo "ok agent attached"
# The spawner runs in $tmp and execs "./burst": a relative name, which the
# agent must find in the parent's directory for a process gone before
# /proc could be read.
(cd "$tmp" && SPAWN_MIN=$((SECONDS_RUN * 100)) ./spawner "$SECONDS_RUN" 100 ./burst 5) >"$tmp/spawner.out" ||
	die "spawner failed"
started=$(sed -n 's/^spawner: \([0-9]*\) processes.*/\1/p' "$tmp/spawner.out")
sleep 0.3
agent_stop
[ "${started:-0}" -ge $((SECONDS_RUN * 50)) ] || die "the spawner started only ${started:-0} processes"

type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
agent_flame "$type" '{process.executable.name="burst"}' "$tmp/burst.json"
agent_flame "$type" '{process.executable.name!="burst"}' "$tmp/other.json"
python3 tests/integration/agent_check.py "$tmp/burst.json" burn main '[unknown]*' '~execve' \
	>"$tmp/burst.sum"
python3 tests/integration/agent_check.py "$tmp/other.json" burn >"$tmp/other.sum"
python3 - "$tmp/burst.sum" "$tmp/other.sum" "$started" <<'PY' || die "short-lived attribution"
import json, sys
b = json.load(open(sys.argv[1]))
o = json.load(open(sys.argv[2]))
total = b["total"]
samples = total / (1e9 / 99)
named = 100 * b["names"]["burn"] / total if total else 0
elsewhere = o["names"]["burn"]
# Paths through execve hold the pre-exec [unknown] frames: leave them out.
unknown = 100 * max(b["names"]["[unknown]*"] - b["names"]["~execve"], 0) / total if total else 100
print(f"ok {sys.argv[3]} processes, {samples:.0f} samples under burst: burn() named in "
      f"{named:.1f}% (want >= 70), main in {100 * b['names']['main'] / max(total, 1):.1f}%, "
      f"a frame [unknown] in {unknown:.1f}% (want <= 15); "
      f"burn() elsewhere: {elsewhere / (1e9 / 99):.0f} samples")
if samples < 40 or named < 70 or unknown > 15 or elsewhere > 0:
    sys.exit(1)
PY
echo "ok agent attributes short-lived processes"
