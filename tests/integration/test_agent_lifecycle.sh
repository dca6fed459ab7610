#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_lifecycle.sh - the agent at the ends of a process's life
# (tests/workloads/lifecycle.c), sampling at 499 Hz:
#   - a process whose main thread exits first (pthread_exit) while a
#     worker spins in worker_spin(): /proc/PID no longer shows its
#     executable or maps, so the agent must read them through the live
#     thread (/proc/PID/task/TID). Its samples must be named after the
#     executable (not the 15-byte thread name) and >= 80 % of them must
#     have worker_spin() symbolized; before, none were ([unknown]).
#   - an excluded executable (--exclude-exe bigexit) that frees 1 GiB as
#     it exits, five times: the kernel tears its memory down after the
#     exit tracepoint and without an mm, where the agent's executable
#     verdict was lost; no sample of it may reach the server (there were
#     ~10 per exit before); nor of its 40 forked children that exit at
#     once, never sampled alive, tearing down their copy of its memory
#     (they inherit its verdict at fork; ~9 ticks each leaked before).
#   - 20 forked children that spin 50 ms in worker_spin() and exit without
#     exec, gone before the agent reads them: they run their parent's
#     image, so they must be named and symbolized from the parent's entry
#     (>= 85 % of forkspin_proc's samples in worker_spin(); brk9 saw half
#     the children with no path and [unknown] frames).
# Needs root and kernel BTF.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init

${CC:-cc} -O2 -g -fno-omit-frame-pointer -pthread -o "$tmp/lifecycle" tests/workloads/lifecycle.c ||
	die "cannot build lifecycle.c"
cp "$tmp/lifecycle" "$tmp/mainexit_process"
cp "$tmp/lifecycle" "$tmp/bigexit"
cp "$tmp/lifecycle" "$tmp/forkspin_proc"
agent_start_server
AGENT_BIN=$PROFD_FAST agent_start --server "$base" --interval 1s --frequency 499 \
	--exclude-exe bigexit
echo "ok agent attached"
"$tmp/mainexit_process" mainexit 2 &
p1=$!
extra_pids=$p1
for _ in 1 2 3 4 5; do
	"$tmp/bigexit" bigexit 1024 || die "bigexit failed"
done
"$tmp/bigexit" forkexit 1024 40 || die "bigexit forkexit failed"
"$tmp/forkspin_proc" forkspin 20 50 || die "forkspin_proc failed"
wait "$p1" || die "mainexit_process failed"
extra_pids=
sleep 0.3
agent_stop

names=$(curl -fs "$base/api/v1/labels/process.executable.name/values")
! grep -q '"bigexit"' <<<"$names" || die "the excluded bigexit was sampled: $names"
grep -q '"mainexit_process"' <<<"$names" || die "no samples named mainexit_process: $names"
type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
# worker_share EXE MIN WHAT: EXE's samples (>= 100 at 499 Hz) must have
# worker_spin() on >= MIN % of them.
worker_share() {
	agent_flame "$type" "{process.executable.name=\"$1\"}" "$tmp/$1.json"
	python3 tests/integration/agent_check.py "$tmp/$1.json" worker_spin '[unknown]*' >"$tmp/$1.sum"
	python3 - "$tmp/$1.sum" "$1" "$2" <<'PY' || die "$3"
import json, sys
s, exe, want = json.load(open(sys.argv[1])), sys.argv[2], float(sys.argv[3])
total = s["total"]
samples = total / (1e9 / 499)
named = 100 * s["names"]["worker_spin"] / total if total else 0
unknown = 100 * s["names"]["[unknown]*"] / total if total else 100
print(f"ok {exe}: {samples:.0f} samples, worker_spin() in {named:.1f}% (want >= {want:.0f}), "
      f"a frame [unknown] in {unknown:.1f}%")
sys.exit(0 if samples >= 100 and named >= want else 1)
PY
}
worker_share mainexit_process 80 "samples of a process without its main thread"
echo "ok excluded bigexit never sampled, even while its (or its children's) memory is torn down"
worker_share forkspin_proc 85 "forked children without exec"
