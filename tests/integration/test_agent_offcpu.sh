#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_offcpu.sh - off-CPU profiling for real: `profd agent
# --off-cpu` (sanitized build) watches tests/workloads/offcpu.c, built
# with the distribution's defaults (no frame pointers), whose thread
# sleeps 200 ms in in_sleep() and then blocks ~100 ms in in_pipe() on a
# pipe a child answers 100 ms after being asked. In the server, the
# off_cpu:off_cpu:nanoseconds:: profile of the process must show both
# under main with a 2:1 ratio of blocked time (67 % / 33 % +- 7 points),
# their blocked time must match what the workload measured (+-15 %), and
# the kernel stacks must be the ones they slept in (hrtimer_nanosleep,
# pipe_read). The include filter (--include-exe) keeps other processes out.
# Needs root and kernel BTF; prints "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
# Known intermittent defect (issue 8 note): in some runs the BPF copy of the
# user stack at sys_exit fails for every sample of the workload (stack_len
# 0), so user frames are lost. One retry, said out loud; two failures fail.
if [ -z "${PROFD_OFFCPU_RETRY:-}" ]; then
	if PROFD_OFFCPU_RETRY=1 bash "$0"; then
		exit 0
	fi
	echo "retry: off-CPU run failed once (known intermittent stack-copy failure); running again"
	PROFD_OFFCPU_RETRY=2 exec bash "$0"
fi
. tests/integration/agent_lib.sh
agent_lib_init agent-offcpu
SECONDS_RUN=${OFFCPU_SECONDS:-4}

${CC:-cc} -O2 -g -o "$tmp/offcpu" tests/workloads/offcpu.c || fail "cannot build offcpu.c"
agent_start_server
agent_start --server "$base" --interval 1s --off-cpu --off-cpu-threshold 1ms \
	--include-exe offcpu --metrics-listen "127.0.0.1:$(agent_free_port)"
echo "ok agent attached with --off-cpu"
"$tmp/offcpu" "$SECONDS_RUN" >"$tmp/offcpu.out" &
wpid=$!
wait "$wpid" || fail "workload failed"
sleep 0.3
agent_stop
read -r t_sleep t_pipe < <(sed -n 's/^offcpu: in_sleep \([0-9.]*\) s in_pipe \([0-9.]*\) s$/\1 \2/p' "$tmp/offcpu.out")
[ -n "${t_pipe:-}" ] || fail "workload printed no times: $(cat "$tmp/offcpu.out")"

curl -fs "$base/api/v1/profile-types" | grep -q '"off_cpu:off_cpu:nanoseconds::"' ||
	fail "server has no off_cpu:off_cpu:nanoseconds:: profiles"
# The workload's own process (its child, the feeder, blocks too).
agent_flame 'off_cpu:off_cpu:nanoseconds::' "{process.executable.name=\"offcpu\",process.pid=\"$wpid\"}" "$tmp/off.json"
python3 tests/integration/agent_check.py "$tmp/off.json" in_sleep in_pipe \
	'~nanosleep' '~pipe_read' main >"$tmp/off.sum" || fail "flame graph check"
python3 - "$tmp/off.sum" "$t_sleep" "$t_pipe" <<'PY' || fail "off-CPU shares"
import json, sys
s = json.load(open(sys.argv[1]))
t_sleep, t_pipe = float(sys.argv[2]), float(sys.argv[3])
n = s["names"]
a, b = n["in_sleep"] / 1e9, n["in_pipe"] / 1e9
if a <= 0 or b <= 0:
    print(f"in_sleep={a} s in_pipe={b} s: one is missing")
    sys.exit(1)
share = 100 * a / (a + b)
print(f"ok off-CPU: in_sleep {a:.2f} s, in_pipe {b:.2f} s blocked ({share:.1f}% / "
      f"{100 - share:.1f}%, want 67/33 +-7); workload measured {t_sleep:.2f} s / {t_pipe:.2f} s")
ok = abs(share - 100 * 2 / 3) <= 7
for got, want, what in ((a, t_sleep, "in_sleep"), (b, t_pipe, "in_pipe")):
    if abs(got - want) > 0.15 * want:
        print(f"{what}: profile says {got:.2f} s blocked, the workload measured {want:.2f} s")
        ok = False
# Kernel stacks: what each slept in (the join of the switch-in kernel stack).
if n["~nanosleep"] < 0.9 * n["in_sleep"] or n["~pipe_read"] < 0.9 * n["in_pipe"]:
    print(f"kernel frames missing: nanosleep {n['~nanosleep']} pipe_read {n['~pipe_read']}")
    ok = False
if n["main"] < 0.95 * (n["in_sleep"] + n["in_pipe"]):
    print(f"stacks incomplete: main {n['main']}")
    ok = False
sys.exit(0 if ok else 1)
PY
echo "ok agent off-CPU"
