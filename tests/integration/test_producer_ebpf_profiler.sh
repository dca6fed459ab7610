#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_producer_ebpf_profiler.sh - the OpenTelemetry eBPF profiler
# (go.opentelemetry.io/ebpf-profiler from the Go module proxy, built by
# scripts/producers.sh) profiles this host at 50 Hz and exports to profd's
# OTLP/gRPC endpoint, unchanged, while tests/workloads/spin.c runs (70 %
# of its CPU in hot_a, 30 % in hot_b), built with -g, then stripped, its
# debug info split off (objcopy --only-keep-debug):
#   - every Export is answered OK; the profiler's release sends the OTLP
#     v1.9 layout, which profd rewrites (format/otlp_compat.h);
#   - the workload's samples are queryable by the profiler's attributes:
#     process.executable.name and .path, process.pid, thread.name, and
#     container.id;
#   - its frames carry the profiler's frame types (native, as the
#     flame graph's frame_types);
#   - the profiler does not symbolize native frames: they arrive as
#     addresses in mappings with the binary's GNU build ID
#     (process.executable.build_id.gnu); before any debug info the flame
#     graph shows no hot_a and counts unsymbolized frames; after the debug
#     file is uploaded by build ID (profd debuginfo upload), the same query
#     names main -> hot_a / hot_b, and hot_a's share of hot_a+hot_b is
#     within 0.08 of 0.70 (about 400 samples: 3.5 standard deviations).
# Needs root, kernel BTF, x86_64, tracefs (mounted here when it is not,
# and unmounted at exit), gcc, objcopy; skipped with the reason where
# eBPF or the profiler cannot be had.
source "$(dirname "$0")/ingest_lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: the eBPF profiler needs root"; exit 0; }
[ -r /sys/kernel/btf/vmlinux ] || { echo "skip: no kernel BTF at /sys/kernel/btf/vmlinux"; exit 0; }
[ "$(uname -m)" = x86_64 ] || { echo "skip: the test builds the profiler for x86_64 only"; exit 0; }
for t in gcc objcopy strip; do
	command -v "$t" >/dev/null || { echo "skip: $t not installed"; exit 0; }
done
if ! read -r prof ver how < <(bash scripts/producers.sh ebpf-profiler 2>"$tmp/why"); then
	echo "skip: eBPF profiler: $(tail -n 1 "$tmp/why")"
	exit 0
fi
echo "  go.opentelemetry.io/ebpf-profiler $ver ($how build)"

mounted_tracefs=
prof_pid= spin_pid=
at_exit() {
	[ -n "$spin_pid" ] && kill "$spin_pid" 2>/dev/null
	[ -n "$prof_pid" ] && kill "$prof_pid" 2>/dev/null && wait "$prof_pid" 2>/dev/null
	[ -n "$mounted_tracefs" ] && umount /sys/kernel/tracing 2>/dev/null
}
# The profiler attaches to sched tracepoints through tracefs.
if [ ! -e /sys/kernel/tracing/events ] && [ ! -e /sys/kernel/debug/tracing/events ]; then
	if mount -t tracefs nodev /sys/kernel/tracing 2>"$tmp/why"; then
		mounted_tracefs=1
	else
		echo "skip: tracefs is not mounted and cannot be: $(cat "$tmp/why")"
		exit 0
	fi
fi

# The workload: a name of its own (the profiler sees every process here).
name=ebspin$$
gcc -O1 -g -fno-omit-frame-pointer -o "$tmp/$name.full" tests/workloads/spin.c || { fail "gcc"; finish; }
objcopy --only-keep-debug "$tmp/$name.full" "$tmp/$name.debug"
strip -o "$tmp/$name" "$tmp/$name.full"
bid=$(readelf -n "$tmp/$name" | sed -n 's/.*Build ID: *//p')
check "the stripped workload keeps its GNU build ID ($bid)" [ -n "$bid" ]

start_server --grpc-listen 127.0.0.1:0
"$prof" -collection-agent "127.0.0.1:$grpc_port" -disable-tls -reporter-interval 2s \
	-samples-per-second 50 >"$tmp/ebpf.log" 2>&1 &
prof_pid=$!
wait_for -p "$prof_pid" 60 'grep -q "Attached sched monitor" "$tmp/ebpf.log"'
if ! grep -q 'Attached sched monitor' "$tmp/ebpf.log"; then
	echo "skip: the eBPF profiler did not start here: $(grep -m1 -i 'error\|fail' "$tmp/ebpf.log" | cut -c1-300)"
	exit 0
fi
SPIN_CPU_SECONDS=8 "$tmp/$name" 8 >"$tmp/spin.out" 2>&1 &
spin_pid=$!
wpid=$spin_pid
wait "$spin_pid"
spin_pid=
check "the workload ran ($(cat "$tmp/spin.out"))" grep -q 'rounds' "$tmp/spin.out"
# Two report intervals for the last samples, then stop the profiler.
sleep 5
kill "$prof_pid"
wait "$prof_pid" 2>/dev/null
prof_pid=
exports=$(grep -c 'ProfilesService/Export grpc_status=0' "$tmp/log.1")
bad=$(grep 'ProfilesService/Export' "$tmp/log.1" | grep -vc 'grpc_status=0')
checkx "the profiler's Exports were all answered OK ($exports OK, $bad not)" \
	'[ "$exports" -gt 0 ] && [ "$bad" = 0 ]'

SEL="{process.executable.name=\"$name\"}"
TYPE=process_cpu:samples:count:cpu:nanoseconds
t=$(total "$TYPE" "$SEL")
checkx "the workload's samples are queryable by process.executable.name ($t)" \
	'[ "${t%% *}" != error ] && [ "$t" -gt 100 ]'
for kv in "process.pid=\"$wpid\"" "process.executable.path=\"$tmp/$name\"" \
	"thread.name=\"${name:0:15}\""; do
	t2=$(total "$TYPE" "{process.executable.name=\"$name\",$kv}")
	check "the profiler's attribute $kv is a label ($t2 of $t samples)" [ "$t2" = "$t" ]
done
v=$(curl -s --noproxy '*' -G --data-urlencode from=0 --data-urlencode "query=$SEL" \
	"$base/api/v1/labels/container.id/values")
checkx "container.id is a label of the workload's series ($v)" '[[ $v == \[\"* ]]'

# frame graph facts: "UNSYMBOLIZED FRAME_TYPES HOT_A HOT_B MAIN_OK"
facts() {
	total "$TYPE" "$SEL" >/dev/null
	python3 - "$tmp/flame.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
got = {"hot_a": 0, "hot_b": 0}
bad = 0
stack = [(d["root"], ())]
while stack:
    n, path = stack.pop()
    if n["name"] in got:
        got[n["name"]] += n["total"]
        bad += n["total"] if "main" not in path else 0
        continue
    stack.extend((c, path + (n["name"],)) for c in n.get("children", []))
print(d.get("unsymbolized", 0), ",".join(d.get("frame_types", [])) or "-", got["hot_a"], got["hot_b"], bad)
PY
}
read -r unsym fts ha hb bad < <(facts)
checkx "before debug info: native frames unsymbolized ($unsym frames), no hot_a ($ha)" \
	'[ "$unsym" -gt 0 ] && [ "$ha" = 0 ]'
checkx "the frames carry the profiler's frame types ($fts)" '[[ ,$fts, == *,native,* ]]'
"$PROFD" debuginfo upload --server "$base" "$tmp/$name.debug" >"$tmp/upload.out" 2>&1
check "the debug file is stored by its build ID ($(cat "$tmp/upload.out"))" grep -q "$bid" "$tmp/upload.out"
read -r unsym fts ha hb bad < <(facts)
share=$(python3 -c 'import sys; a,b=map(int,sys.argv[1:]); print("%.3f" % (a/max(a+b,1)))' "$ha" "$hb")
echo "  after upload: hot_a $ha, hot_b $hb samples (share $share), $unsym frames unsymbolized"
checkx "after the upload the same query names hot_a and hot_b below main ($ha/$hb, $bad not below main)" \
	'[ "$ha" -gt 0 ] && [ "$hb" -gt 0 ] && [ "$bad" = 0 ]'
checkx "hot_a's share of hot_a+hot_b ($share) is within 0.08 of 0.70 ($((ha + hb)) samples)" \
	'python3 -c "import sys; sys.exit(not (abs($share - 0.70) <= 0.08 and $ha + $hb >= 200))"'

stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
