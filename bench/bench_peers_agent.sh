#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_peers_agent.sh - profd's agent beside the OpenTelemetry eBPF
# profiler (go.opentelemetry.io/ebpf-profiler, built by
# scripts/producers.sh from the Go module proxy) on the same host load, in
# the same run, each at 19 Hz exporting OTLP to a profd server of its own
# (the profiler over gRPC, the agent over HTTP; neither server is measured).
# Load, for the whole run: tests/workloads/spin.c (native, frame pointers,
# debug info), hot.py (CPython 3.11), HotSplit.java (HotSpot 17) and
# hot.js (Node), each one process. Rows, BENCH_SECONDS each (default 20)
# after a 5 s warm-up, one tool at a time (two samplers at once would
# each unwind the other):
#   - CPU: the tool's utime + stime (/proc/PID/stat) as % of one core, and
#     its BPF programs' run time (kernel.bpf_stats_enabled) as % of one
#     core;
#   - RSS at the end of the row and its peak (VmHWM, start-up included);
#   - samples kept: samples stored for the four workload processes in the
#     row's window / (19 Hz x the CPU seconds they used in it);
#   - complete: share of spin's samples whose stack reaches main (its
#     debug file uploaded to both servers by build ID, as the profiler
#     does not symbolize native frames);
#   - named: share of each runtime process's samples that carry at least
#     one of the workload's own function names (Python work_a/work_b/spin,
#     Java HotSplit.*, JavaScript hotLoop/coldWork) rather than only the
#     interpreter's or "[jit]".
# Writes bench/results/peers.md (the agent section; other peer sections
# are kept). Needs root, kernel BTF, python3.11, java 17, node; prints
# "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/results_lib.sh
PEERS_HEAD="# profd beside its peers

Figures from \`make bench\` runs, each peer built and configured as described in its section."
PROFD=${PROFD_FAST:-build/profd}
SECS=${BENCH_SECONDS:-20}
OUTMD=bench/results/peers.md
HZ_SAMPLE=19

. bench/agent_bench_lib.sh
agent_bench_init peers-agent
py=$(command -v python3.11 || true)
java=/usr/lib/jvm/java-17-openjdk-amd64/bin/java
for t in "$py" "$java" "$(command -v node || true)" "$(command -v javac || true)"; do
	[ -n "$t" ] && [ -x "$t" ] || { echo "skip: python3.11, java 17, javac and node are needed"; exit 0; }
done
if ! read -r prof ver how < <(bash scripts/producers.sh ebpf-profiler 2>"$tmp/why"); then
	echo "skip: eBPF profiler: $(tail -n 1 "$tmp/why")"
	exit 0
fi
echo "go.opentelemetry.io/ebpf-profiler $ver ($how build)"
if [ ! -e /sys/kernel/tracing/events ] && [ ! -e /sys/kernel/debug/tracing/events ]; then
	mount -t tracefs nodev /sys/kernel/tracing || { echo "skip: no tracefs"; exit 0; }
	trap 'agent_bench_cleanup; umount /sys/kernel/tracing 2>/dev/null || true' EXIT
fi

${CC:-cc} -O1 -g -fno-omit-frame-pointer -o "$tmp/pspin" tests/workloads/spin.c
javac -d "$tmp/classes" tests/workloads/HotSplit.java
start_server() { # PORT GRPC_PORT DIR
	"$PROFD" server --listen "127.0.0.1:$1" --grpc-listen "127.0.0.1:$2" --data "$3" >"$3.log" 2>&1 &
	pids+=($!)
	for _ in $(seq 1 100); do curl -fs "http://127.0.0.1:$1/api/v1/profile-types" >/dev/null 2>&1 && break; sleep 0.1; done
}
pa=$(free_port) ga=$(free_port) pb=$(free_port) gb=$(free_port)
start_server "$pa" "$ga" "$tmp/srv-agent"
start_server "$pb" "$gb" "$tmp/srv-otel"
for p in "$pa" "$pb"; do
	"$PROFD" debuginfo upload --server "http://127.0.0.1:$p" "$tmp/pspin" >/dev/null
done

# The load, for the whole run.
total=$((2 * (SECS + 15) + 20))
SPIN_CPU_SECONDS=$total "$tmp/pspin" "$total" >/dev/null 2>&1 &
spin=$!
"$py" tests/workloads/hot.py "$total" >/dev/null 2>&1 &
pyp=$!
"$java" -cp "$tmp/classes" HotSplit "$total" "$total" >/dev/null 2>&1 &
jp=$!
node tests/workloads/hot.js "$((total * 1000))" >/dev/null 2>&1 &
np=$!
pids+=("$spin" "$pyp" "$jp" "$np")
work_pids="$spin $pyp $jp $np"
sysctl -qw kernel.bpf_stats_enabled=1 || echo "note: bpf_stats unavailable; kernel-side BPF time not measured"
clk=$(getconf CLK_TCK)
work_ticks() { local s=0 p; for p in $work_pids; do s=$((s + $(cpu_ticks "$p"))); done; echo "$s"; }

# run_tool LABEL PORT: the tool is $tool_pid; measures one row, stops it.
run_tool() {
	local label=$1 port=$2
	sleep 5
	local c0 b0 w0 wt0 c1 b1 w1 wt1 rss hwm
	c0=$(cpu_ticks "$tool_pid") b0=$(bpf_ns "$tool_pid") wt0=$(work_ticks) w0=$(date +%s%N)
	sleep "$SECS"
	c1=$(cpu_ticks "$tool_pid") b1=$(bpf_ns "$tool_pid") wt1=$(work_ticks) w1=$(date +%s%N)
	rss=$(rss_kb "$tool_pid") hwm=$(hwm_kb "$tool_pid")
	sleep 6 # two report intervals for the window's last samples
	kill -INT "$tool_pid"
	wait "$tool_pid" || true
	python3 - "$label" "http://127.0.0.1:$port" "$c0" "$c1" "$b0" "$b1" "$w0" "$w1" "$wt0" "$wt1" \
		"$clk" "$rss" "$hwm" "$HZ_SAMPLE" "$spin" "$pyp" "$jp" "$np" >>"$tmp/rows" 2>>"$tmp/raw" <<'PY'
import json, sys, urllib.parse, urllib.request
(label, base, c0, c1, b0, b1, w0, w1, wt0, wt1, clk, rss, hwm, hz, spin, pyp, jp, np) = sys.argv[1:]
w0, w1, clk, hz = int(w0), int(w1), int(clk), int(hz)
wall = (w1 - w0) / 1e9


def get(path, **q):
    with urllib.request.urlopen(f"{base}{path}?{urllib.parse.urlencode(q)}") as r:
        return json.load(r)


types = get("/api/v1/profile-types", **{"from": w0 // 10**6, "to": w1 // 10**6})
cpu_types = [t for t in types if t.startswith("process_cpu:")]
if not cpu_types:
    sys.exit(f"{label}: no process_cpu profile stored in the window ({types})")
ptype = cpu_types[0]


def flame(pid):
    return get("/api/v1/flamegraph", type=ptype, query=f'{{process.pid="{pid}"}}', **{"from": w0 // 10**6, "to": w1 // 10**6})


def samples(total):
    # NAME:SAMPLE_TYPE:UNIT:PERIOD_TYPE:PERIOD_UNIT; a nanosecond sample is 1/hz s
    return total * hz / 1e9 if ptype.split(":")[2] == "nanoseconds" else total


def share(fg, want):
    tot = fg.get("total", 0)
    hit = 0
    stack = [(fg["root"], False)]
    while stack:
        n, seen = stack.pop()
        seen = seen or any(w(n["name"]) for w in want)
        kids = n.get("children", [])
        if seen:
            hit += n["total"]
            continue
        stack.extend((c, False) for c in kids)
    return 100 * hit / tot if tot else 0


fgs = {p: flame(p) for p in (spin, pyp, jp, np)}
kept_samples = sum(samples(f.get("total", 0)) for f in fgs.values())
want_samples = (int(wt1) - int(wt0)) / clk * hz
keep = 100 * kept_samples / want_samples if want_samples else 0
complete = share(fgs[spin], [lambda s: s == "main"])
pyn = share(fgs[pyp], [lambda s: s in ("work_a", "work_b", "spin") or s.endswith((".work_a", ".work_b", ".spin"))])
jn = share(fgs[jp], [lambda s: "HotSplit" in s])
nn = share(fgs[np], [lambda s: s in ("hotLoop", "coldWork") or s.endswith(("hotLoop", "coldWork"))])
cpu = (int(c1) - int(c0)) / clk / wall * 100
bpf = (int(b1) - int(b0)) / 1e9 / wall * 100
print(f"| {label} | {cpu:.2f} % | {bpf:.2f} % | {cpu + bpf:.2f} % | {int(rss) / 1024:.1f} MiB ({int(hwm) / 1024:.1f} peak) | "
      f"{keep:.1f} % | {complete:.1f} % | {pyn:.1f} % | {jn:.1f} % | {nn:.1f} % |")
print(json.dumps([cpu, bpf, cpu + bpf, int(rss) / 1024, keep, complete, pyn, jn, nn]), file=sys.stderr)
PY
	tail -n 1 "$tmp/rows"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
"$PROFD" agent --server "http://127.0.0.1:$pa" --interval 2s --frequency "$HZ_SAMPLE" \
	--exclude-exe profd --no-upload-debuginfo >"$tmp/agent.log" 2>&1 &
tool_pid=$!
pids+=("$tool_pid")
run_tool "profd agent $("$PROFD" --version 2>/dev/null | awk '{ print $2, $3 }' || true)" "$pa"
"$prof" -collection-agent "127.0.0.1:$gb" -disable-tls -reporter-interval 2s \
	-samples-per-second "$HZ_SAMPLE" >"$tmp/ebpf.log" 2>&1 &
tool_pid=$!
pids+=("$tool_pid")
for _ in $(seq 1 600); do grep -q 'Attached sched monitor' "$tmp/ebpf.log" && break; sleep 0.1; done
run_tool "OpenTelemetry eBPF profiler $ver" "$pb"
load1=$(cut -d' ' -f1-3 /proc/loadavg)

section=$(
	cat <<EOF
<!-- peers-agent: begin (written by bench/bench_peers_agent.sh) -->
## The agent beside the OpenTelemetry eBPF profiler

\`bench/bench_peers_agent.sh\`, $(date -u +%Y-%m-%d), $(nproc) CPUs, kernel $(uname -r),
load average $load0 at the start and $load1 at the end (other work ran on
the machine). The OpenTelemetry eBPF profiler $ver, built by
\`scripts/producers.sh ebpf-profiler\` from the Go module proxy with the Go
on PATH ($how build), run as
\`-collection-agent 127.0.0.1:PORT -disable-tls -reporter-interval 2s
-samples-per-second $HZ_SAMPLE\`; profd's agent as \`--interval 2s --frequency
$HZ_SAMPLE --exclude-exe profd --no-upload-debuginfo\`. Each exports to its own
profd server; one tool at a time over the same load (spin.c, hot.py on
CPython 3.11, HotSplit on HotSpot 17, hot.js on Node), ${SECS} s per row
after a 5 s warm-up. Columns: see the script's header.

| tool | CPU (one core) | BPF in kernel | both | RSS | samples kept | spin complete | Python named | Java named | JS named |
| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |
$(cat "$tmp/rows")
$(python3 -c '
import json, sys
a, b = (json.loads(l) for l in open(sys.argv[1]) if l.startswith("["))
r = [f"{x / y:.2f}x" if y else "n/a" for x, y in zip(a, b)]
print("| profd / peer | " + " | ".join(r[:4]) + " | " + " | ".join(r[4:]) + " |")' "$tmp/raw")
<!-- peers-agent: end -->
EOF
)
write_section "$OUTMD" peers-agent "$section" "$PEERS_HEAD"
