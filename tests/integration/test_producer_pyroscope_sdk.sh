#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_producer_pyroscope_sdk.sh - the real Pyroscope SDKs push to
# profd, unchanged (scripts/producers.sh installs them from PyPI and the
# Go module proxy into a cache outside the repository):
#   - Python: pyroscope-io profiles tests/workloads/pyroscope_sdk.py;
#   - Go: github.com/grafana/pyroscope-go profiles
#     tests/workloads/pyroscope_go, built once with the Go on PATH and
#     once with Debian's /usr/bin/go (1.19; the newest SDK release that
#     toolchain builds).
# Each workload alternates a hot and a cold function (3:1) on one thread
# until they have used 5 s of thread CPU time, and measures the split
# itself (thread CPU and wall time). For each:
#   - every push is answered 200;
#   - the CPU profile is queryable by its static tags (env, region) and
#     the SDK's own labels (pyroscope_spy=gospy, process.runtime.name=
#     cpython);
#   - the hot function's share of hot+cold in the flame graph is within
#     7 points of the workload's measured split (about 500 samples: 3.5
#     standard deviations): its CPU split for Go (SIGPROF counts CPU
#     time), its wall split for Python (py-spy counts a runnable thread
#     as busy, so on a loaded machine its profile is wall time of a
#     thread that never blocks); its time between 0.75 of its measured
#     CPU time and 1.25 of its wall time;
#   - the dynamic tag (phase=burst, a quarter of the hot calls) is a
#     label: its series holds the hot function and at most 5% of the
#     cold one (py-spy reads the tag and the stack at slightly different
#     times), about a quarter of the hot time.
# A producer the registries cannot serve (or that does not build) is
# skipped with the reason.
source "$(dirname "$0")/ingest_lib.sh"
start_server
SECS=5
CPUNS=process_cpu:cpu:nanoseconds:cpu:nanoseconds
workload_pid=
at_exit() { [ -n "$workload_pid" ] && kill "$workload_pid" 2>/dev/null; }

# run_workload OUT CMD...: run a workload (bounded), its output in OUT.
run_workload() {
	local out=$1
	shift
	timeout 60 "$@" >"$out" 2>&1 &
	workload_pid=$!
	wait "$workload_pid"
	workload_pid=
}

# shares FLAME HOT COLD: "TOTAL HOT COLD" - the flame graph total and the
# time under the frames named HOT and COLD (a frame counted once where it
# recurs below itself).
shares() {
	python3 - "$@" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
names = sys.argv[2:]
tot = dict.fromkeys(names, 0)
stack = [(d["root"], frozenset())]
while stack:
    n, inside = stack.pop()
    here = set(inside)
    for x in names:
        if n["name"] == x or n["name"].endswith("." + x):
            if x not in inside:
                tot[x] += n["total"]
            here.add(x)
    stack.extend((c, frozenset(here)) for c in n.get("children", []))
print(d["total"], *[tot[x] for x in names])
PY
}

# judge APP HOT COLD SELECTOR BASIS: the checks on one producer's pushes,
# its workload's JSON line in $tmp/$APP.out; BASIS (cpu or wall) is the
# split the profile's share is compared with.
judge() {
	local app=$1 hot=$2 cold=$3 sel=$4 basis=$5 line t h c bh bc burst
	line=$(tail -n 1 "$tmp/$app.out")
	check "$app: the workload ran to the end ($line)" grep -q '"done": *true' <<<"$line"
	t=$(total "$CPUNS" "{service_name=\"$app\",env=\"ci\",region=\"eu\"$sel}")
	checkx "$app: CPU profile queryable by its tags and the SDK's labels ($t ns)" \
		'[ "${t%% *}" != error ] && [ "$t" -gt 0 ]'
	read -r t h c < <(shares "$tmp/flame.json" "$hot" "$cold")
	burst=$(total "$CPUNS" "{service_name=\"$app\",phase=\"burst\"}")
	read -r t bh bc < <(shares "$tmp/flame.json" "$hot" "$cold")
	python3 - "$line" "$app" "$hot" "$cold" "$basis" "$h" "$c" "$burst" "$bh" "$bc" >"$tmp/judge" <<'PY'
import json, sys
app, hot, cold, basis = sys.argv[2:6]
h, c, burst, bh, bc = (int(x) if x.isdigit() else 0 for x in sys.argv[6:11])
try:
    m = json.loads(sys.argv[1])
except ValueError:
    m = {}
mh, mc = m.get("hot_ns", 0), m.get("cold_ns", 0)
wh, wc = m.get("hot_wall_ns", 0), m.get("cold_wall_ns", 0)
ps, ms, mw = h / max(h + c, 1), mh / max(mh + mc, 1), wh / max(wh + wc, 1)
print(f"  {app}: profile {hot}={h} {cold}={c} ns (share {ps:.3f}); measured CPU "
      f"{mh}/{mc} ns (share {ms:.3f}), wall {wh}/{wc} ns (share {mw:.3f})", file=sys.stderr)
ref = ms if basis == "cpu" else mw
def row(good, what):
    print(int(bool(good)), what)
row(abs(ps - ref) <= 0.07,
    f"{hot}'s share of {hot}+{cold} in the profile ({ps:.3f}) is within 0.07 of the measured {basis} split ({ref:.3f})")
row(0.75 * mh <= h <= 1.25 * max(wh, mh),
    f"{hot}'s profiled time ({h} ns) is within 0.75 x its CPU time ({mh}) .. 1.25 x its wall time ({wh})")
row(bh > 0 and bc <= 0.05 * max(burst, 1),
    f"the dynamic tag phase=burst is a label: {hot} {bh} ns of {burst}, {cold} {bc} (<= 5%)")
q = bh / max(h, 1)
row(0.15 <= q <= 0.35, f"phase=burst holds about a quarter of {hot}'s time ({q:.2f}, 0.15..0.35)")
PY
	while read -r good what; do
		if [ "$good" = 1 ]; then ok "$app: $what"; else fail "$app: $what"; fi
	done <"$tmp/judge"
}

# --- Python: pyroscope-io --------------------------------------------------------------------
if py=$(bash scripts/producers.sh pyroscope-python 2>"$tmp/why"); then
	ver=$("$py" -c 'import importlib.metadata as m; print(m.version("pyroscope-io"))')
	echo "  pyroscope-io $ver"
	run_workload "$tmp/py-shop.out" "$py" tests/workloads/pyroscope_sdk.py "$base" py-shop "$SECS"
	judge py-shop hot_work cold_work ',process.runtime.name="cpython"' wall
else
	echo "skip: Python SDK: $(cat "$tmp/why")"
fi

# --- Go: pyroscope-go with each toolchain ----------------------------------------------------
for go in go /usr/bin/go; do
	if ! command -v "$go" >/dev/null; then
		echo "skip: Go SDK with $go: no such toolchain"
		continue
	fi
	gover=$("$go" env GOVERSION)
	if ! read -r bin ver < <(bash scripts/producers.sh pyroscope-go "$go" 2>"$tmp/why"); then
		echo "skip: Go SDK with $gover: $(tail -n 1 "$tmp/why")"
		continue
	fi
	echo "  pyroscope-go $ver built with $gover"
	app=go-shop-$gover
	run_workload "$tmp/$app.out" "$bin" "$base" "$app" "$SECS"
	judge "$app" hotWork coldWork ',pyroscope_spy="gospy"' cpu
	t=$(total 'memory:inuse_space:bytes:space:bytes' "{service_name=\"$app\",env=\"ci\"}")
	checkx "$app: the heap profile arrived too ($t bytes in use)" '[ "${t%% *}" != error ] && [ "$t" -gt 0 ]'
done

bad=$(grep -c 'status=[45]' "$tmp/log.1")
checkx "no push was refused ($bad 4xx/5xx in the access log)" '[ "$bad" = 0 ]'
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
