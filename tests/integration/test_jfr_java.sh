#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_jfr_java.sh - a real producer: compile tests/workloads/Hot.java
# (about 90 % of its CPU in Hot.hotLoop, the rest in Hot.coldLoop, plus an
# allocating thread), record 4 s with the JDK's own
# -XX:StartFlightRecording (settings=profile), decode it with
# fmt_jfr_decode (tests/tools/jfrdump) and check: the cpu profile has as
# many samples as `jfr print` has jdk.ExecutionSample events, hotLoop is
# the top self function with >= 70 % of the cpu time and coldLoop second,
# the main and hot-worker threads are labelled, timestamps lie inside the
# recording, and the alloc profile's top self function is Hot.allocate;
# the converted pprof (gzipped) is written too.
set -uo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/jfr_lib.sh
for t in javac java jfr python3; do
	if ! command -v $t >/dev/null; then
		skip "$t not installed"
	fi
done
lib_tmp
find_jfrdump "$tmp" || die "no tests/tools/jfrdump and no libprofd.a to build it (run make)"
javac -d "$tmp" tests/workloads/Hot.java || die "javac tests/workloads/Hot.java"
if ! java -XX:StartFlightRecording=settings=profile,filename="$tmp/hot.jfr",dumponexit=true \
	-cp "$tmp" Hot "${HOT_SECONDS:-4}" >"$tmp/java.log" 2>&1; then
	cat "$tmp/java.log"
	die "java Hot did not run"
fi
decoded=1
"$JFRDUMP" --event cpu --pprof "$tmp/hot.pb.gz" "$tmp/hot.jfr" >"$tmp/cpu.json" || decoded=0
"$JFRDUMP" --event alloc "$tmp/hot.jfr" >"$tmp/alloc.json" || decoded=0
jfr print --json --events jdk.ExecutionSample "$tmp/hot.jfr" >"$tmp/exec.json" || decoded=0
[ $decoded = 1 ] || die "decoding the recording"
python3 - "$tmp/cpu.json" "$tmp/alloc.json" "$tmp/exec.json" "$tmp/hot.pb.gz" <<'PY'
import json, os, sys
cpu, alloc, ref = (json.load(open(p)) for p in sys.argv[1:4])
bad = 0
def check(ok, what):
    global bad
    print(("ok " if ok else "FAIL ") + what)
    bad += not ok
nref = len(ref["recording"]["events"])
check(cpu["samples"] == nref and nref >= 50,
      f"cpu samples {cpu['samples']} = jfr print jdk.ExecutionSample events {nref} (>= 50)")
top = cpu["self"]
share = top[0][3] / cpu["totals"][1] if cpu["totals"][1] else 0
check(top[0][0] == "Hot.hotLoop" and share >= 0.70,
      f"top self {top[0][0]} has {share:.0%} of {cpu['totals'][1]} cpu ns (want Hot.hotLoop, >= 70%)")
check(len(top) > 1 and top[1][0] == "Hot.coldLoop", f"second self {top[1][0] if len(top) > 1 else None} (want Hot.coldLoop)")
check(cpu["threads"] >= 2, f"{cpu['threads']} threads labelled (main, hot-worker)")
check(cpu["time_ns"] <= cpu["first_ns"] <= cpu["last_ns"] <= cpu["time_ns"] + cpu["duration_ns"],
      "sample timestamps inside the recording")
check(cpu["period"] in (10000000, 20000000), f"period {cpu['period']} ns from jdk.ActiveSetting")
check(alloc["samples"] > 0 and alloc["self"][0][0] == "Hot.allocate",
      f"alloc: {alloc['samples']} samples, top self {alloc['self'][0][0] if alloc['self'] else None} (want Hot.allocate)")
check(os.path.getsize(sys.argv[4]) > 0, "pprof written")
sys.exit(1 if bad else 0)
PY
