#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_jfr_corpus.sh - every JFR recording of the shared corpus
# ($PROFD_CORPUS/jfr, plain and gzipped, JDK 17/25, async-profiler,
# Datadog, multi-chunk) decoded by fmt_jfr_decode (through the
# tests/tools/jfrdump helper) must give, per event type its facts file
# lists, the numbers `jfr print --json` gave the corpus builders: event
# count, value total in ns or bytes, other sums (tlabSize, coalesced
# wall samples), events without a stack, threads, first/last event time to
# the nanosecond, max stack depth, distinct functions and the top-5 self
# functions (tests/integration/jfr_facts_check.py does the comparing). For
# jfrp-fastslow-multichunk, which `jfr` refuses, the facts of the chunk
# that holds each event type. Then the family rules of format/jfr.h (lock
# = MonitorEnter + ThreadPark, alloc = ObjectAllocationSample or the TLAB
# events), `profd top` on the JFR files against the facts' top-5
# cumulative values, and a JFR -> pprof -> `go tool pprof -top` round trip.
set -uo pipefail
cd "$(dirname "$0")/../.."
CORPUS=${PROFD_CORPUS:-../shared/corpus}
. tests/integration/jfr_lib.sh
if [ ! -d "$CORPUS/jfr" ]; then
	skip "no JFR corpus at $CORPUS/jfr"
fi
if ! command -v python3 >/dev/null; then
	skip "python3 is needed to compare with the facts files"
fi
lib_tmp
find_jfrdump "$tmp" || die "no tests/tools/jfrdump and no libprofd.a to build it (run make)"
echo "using $JFRDUMP"
python3 tests/integration/jfr_facts_check.py "$JFRDUMP" "$CORPUS" ||
	fail "jfr_facts_check.py: jfrdump against the facts files (see above)"

# profd top reads JFR directly (format/detect.c): its cumulative values
# (a function once per sample) must equal the facts' top-5 cum of the
# events the cpu family reads (CPUTimeSample if present, else ExecutionSample).
PROFD=${PROFD:-build-san/profd}
if [ -x "$PROFD" ]; then
	python3 - "$PROFD" "$CORPUS" <<'PY' || fail "profd top on the JFR files (see above)"
import json, os, subprocess, sys
profd, corpus = sys.argv[1:3]
bad = 0
for name in sorted(os.listdir(os.path.join(corpus, "facts"))):
    facts = json.load(open(os.path.join(corpus, "facts", name)))
    ev = facts["facts"].get("profiling_events", {})
    src = ev.get("jdk.CPUTimeSample") or ev.get("jdk.ExecutionSample")
    if facts.get("format") != "jfr" or not src or "error" in src:
        continue
    out = subprocess.run([profd, "top", "--json", "-n", "0", "--type", "samples",
                          os.path.join(corpus, facts["path"])], capture_output=True, text=True)
    if out.returncode != 0:
        print(f"FAIL {facts['id']}: profd top: {out.stderr.strip()}")
        bad += 1
        continue
    top = json.loads(out.stdout)
    cum = {r["function"]: r["total"] for r in top["top"]["samples"]}
    want = dict(src["top5_cum"])
    got = {k: cum.get(k) for k in want}
    if top["samples"] != src["events"] or got != want:
        print(f"FAIL {facts['id']}: profd top: {top['samples']} samples, cum {got}; "
              f"want {src['events']}, {want}")
        bad += 1
    else:
        print(f"ok {facts['id']}: profd top cum = facts top-5 cum ({src['top5_cum'][0][0]} {src['top5_cum'][0][1]})")
sys.exit(1 if bad else 0)
PY
else
	echo "note: $PROFD not built, profd top not checked"
fi

# JFR -> pprof -> go tool pprof agrees with our own top (flat = self).
if command -v go >/dev/null; then
	f=$CORPUS/jfr/gen--jdk17-profile.jfr
	if "$JFRDUMP" --event alloc --pprof "$tmp/a.pb.gz" "$f" >"$tmp/a.json"; then
		PPROF_BINARY_PATH=/nonexistent go tool pprof -top -nodecount=3 -sample_index=alloc_space \
			-unit=bytes "$tmp/a.pb.gz" 2>/dev/null >"$tmp/top.txt"
		if python3 - "$tmp/a.json" "$tmp/top.txt" <<'PY'; then
import json, re, sys
mine = {r[0]: r[3] for r in json.load(open(sys.argv[1]))["self"]}
rows = [l.split() for l in open(sys.argv[2]) if re.match(r"\s*\d+B\s", l)]
assert rows, "no rows in go tool pprof -top output"
for r in rows:
    flat, name = int(r[0].rstrip("B")), r[5]
    assert mine.get(name) == flat, f"{name}: pprof flat {flat}, jfrdump self {mine.get(name)}"
print(f"ok pprof round trip: top {len(rows)} of go tool pprof -top = jfrdump self ({rows[0][5]} {rows[0][0]})")
PY
			:
		else
			fail "go tool pprof -top on the converted profile disagrees (see above)"
		fi
	else
		fail "jfrdump --pprof $f"
	fi
else
	echo "note: go not installed, pprof round trip not checked"
fi
finish_counts
