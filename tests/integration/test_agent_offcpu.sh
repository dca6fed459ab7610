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
# Every process's off-CPU samples must keep their user frames: four more
# short runs alongside the long one, each started as "offcpu 0.7 gap" so
# that its stack has a never-touched page between its frames and its
# environment strings (it re-executes itself until it has one; about one
# process in four or fewer has it by chance), must each have main in
# their stacks. Such a page once made every stack copy of the process
# fail; see copy_user_stack() in profile.bpf.c.
# Needs root and kernel BTF; prints "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init
SECONDS_RUN=${OFFCPU_SECONDS:-4}

${CC:-cc} -O2 -g -o "$tmp/offcpu" tests/workloads/offcpu.c || die "cannot build offcpu.c"
agent_start_server
mport=$(free_port)
agent_start --server "$base" --interval 1s --off-cpu --off-cpu-threshold 1ms \
	--include-exe offcpu --metrics-listen "127.0.0.1:$mport"
echo "ok agent attached with --off-cpu"
"$tmp/offcpu" "$SECONDS_RUN" >"$tmp/offcpu.out" &
wpid=$!
short_pids=
for i in 1 2 3 4; do
	# An empty environment keeps the gap close to the frames (within the
	# shortest of the old copy's retries), as in most daemons.
	env -i "$tmp/offcpu" 0.7 gap >/dev/null &
	short_pids="$short_pids $!"
	sleep 0.2
done
for p in $short_pids; do
	wait "$p" || die "short workload $p failed"
done
wait "$wpid" || die "workload failed"
sleep 0.3
copy_err=$(agent_metric "$mport" 'profd_agent_unwind_failures_total{reason="stack_copy_error"}')
agent_stop
# Not asserted: a copy can fail legitimately, e.g. for a sample taken
# inside execve (the gap runs re-execute themselves), whose registers
# still hold the old image's stack pointer.
echo "ok user stack copies that failed: $copy_err"
read -r t_sleep t_pipe < <(sed -n 's/^offcpu: in_sleep \([0-9.]*\) s in_pipe \([0-9.]*\) s$/\1 \2/p' "$tmp/offcpu.out")
[ -n "${t_pipe:-}" ] || die "workload printed no times: $(cat "$tmp/offcpu.out")"

curl -fs "$base/api/v1/profile-types" | grep -q '"off_cpu:off_cpu:nanoseconds::"' ||
	die "server has no off_cpu:off_cpu:nanoseconds:: profiles"
# The workload's own process (its child, the feeder, blocks too).
agent_flame 'off_cpu:off_cpu:nanoseconds::' "{process.executable.name=\"offcpu\",process.pid=\"$wpid\"}" "$tmp/off.json"
python3 tests/integration/agent_check.py "$tmp/off.json" in_sleep in_pipe \
	'~nanosleep' '~pipe_read' main >"$tmp/off.sum" || die "flame graph check"
python3 - "$tmp/off.sum" "$t_sleep" "$t_pipe" <<'PY' || die "off-CPU shares"
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
# Each short run: its in_sleep/in_pipe time all under main.
for p in $short_pids; do
	agent_flame 'off_cpu:off_cpu:nanoseconds::' "{process.executable.name=\"offcpu\",process.pid=\"$p\"}" "$tmp/short.json"
	python3 tests/integration/agent_check.py "$tmp/short.json" in_sleep in_pipe main >"$tmp/short-$p.sum" ||
		die "flame graph check (pid $p)"
done
python3 - $short_pids <<PY || die "off-CPU user stacks of the short runs"
import json, sys
bad = 0
for p in sys.argv[1:]:
    n = json.load(open(f"$tmp/short-{p}.sum"))["names"]
    if n["in_sleep"] <= 0 or n["main"] < 0.95 * (n["in_sleep"] + n["in_pipe"]):
        print(f"pid {p}: in_sleep {n['in_sleep']} in_pipe {n['in_pipe']} main {n['main']} ns")
        bad += 1
sys.exit(1 if bad else 0)
PY
echo "ok user stacks (main) in the off-CPU samples of all $(echo $short_pids | wc -w) short runs"
echo "ok agent off-CPU"
