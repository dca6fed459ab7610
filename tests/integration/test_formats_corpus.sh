#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_formats_corpus.sh - the text and JSON decoders (folded, perf script,
# speedscope, V8 cpuprofile, OTLP/JSON) against facts of independent tools
# and against real producers:
#   1. every corpus file of these formats decodes to the sample counts,
#      totals and top self/cum functions of its facts/<id>.json
#      (formats_corpus_check.py; "skip:" when there is no corpus);
#   2. each of them survives model -> OTLP/JSON -> model and
#      model -> folded -> model with its sample count and totals;
#   3. `node --cpu-prof` of tests/workloads/hot.js: hotLoop is the top
#      self function, and our per-function self times equal a direct
#      computation from the raw JSON (time to the next sample);
#   4. `perf record -g` + `perf script` of tests/workloads/spin.c built
#      with frame pointers: as many samples as perf script headers, and
#      hot_a / hot_b self counts equal `perf report --no-children`'s, with
#      main on every stack.
# Steps 3 and 4 say "skip:" when node or perf cannot run here.
# The driver is tests/tools/fmtdump.c, built with the library by
# `make build` next to $PROFD (build-san/tests/tools/fmtdump).
# Environment: PROFD (binary under test), PROFD_CORPUS (corpus folder),
# FMTDUMP (overrides the driver's path).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
FMTDUMP=${FMTDUMP:-$(dirname "$PROFD")/tests/tools/fmtdump}

source tests/integration/lib.sh
need_bin "$FMTDUMP" "make O=$(dirname "$PROFD") build"
lib_tmp

# Sample count and totals of two fmtdump outputs must agree.
same_totals() {
	python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ta = {(t["type"], t["unit"]): t["total"] for t in a["sample_types"]}
tb = {(t["type"], t["unit"]): t["total"] for t in b["sample_types"]}
if ta != tb or (len(sys.argv) > 3 and a["samples"] != b["samples"]):
    print("   totals %s -> %s" % (ta, tb))
    sys.exit(1)
PY
}

# 1-2. Corpus.
if [ -d "$CORPUS/facts" ]; then
	python3 tests/integration/formats_corpus_check.py "$FMTDUMP" "$CORPUS" ||
		fail "formats_corpus_check.py: fmtdump against the facts files (see above)"
	for f in "$CORPUS"/collapsed/* "$CORPUS"/perf-script/* "$CORPUS"/speedscope/* \
		"$CORPUS"/cpuprofile/* "$CORPUS"/otlp/*; do
		[ -f "$f" ] || continue
		name=$(basename "$f")
		if ! "$FMTDUMP" "$f" >"$tmp/a.json" 2>"$tmp/err" ||
			! "$FMTDUMP" --encode otlp-json "$f" >"$tmp/x.otlp.json" 2>>"$tmp/err" ||
			! "$FMTDUMP" "$tmp/x.otlp.json" >"$tmp/b.json" 2>>"$tmp/err"; then
			fail "otlp-json roundtrip $name: $(cat "$tmp/err")"
		elif ! same_totals "$tmp/a.json" "$tmp/b.json"; then
			fail "otlp-json roundtrip $name"
		else
			ok "otlp-json roundtrip $name"
		fi
		# Folded keeps one value column: compare the first one.
		if "$FMTDUMP" --encode folded "$f" >"$tmp/x.folded" 2>"$tmp/err" &&
			"$FMTDUMP" --format folded "$tmp/x.folded" >"$tmp/c.json" 2>>"$tmp/err" &&
			python3 - "$tmp/a.json" "$tmp/c.json" <<'PY'; then
import json, sys
a, c = (json.load(open(p)) for p in sys.argv[1:3])
if a["sample_types"][0]["total"] != c["sample_types"][0]["total"]:
    print("   total %s -> %s" % (a["sample_types"][0]["total"], c["sample_types"][0]["total"]))
    sys.exit(1)
PY
			ok "folded roundtrip $name"
		else
			fail "folded roundtrip $name: $(cat "$tmp/err")"
		fi
	done
else
	echo "skip: no corpus at $CORPUS (set PROFD_CORPUS)"
fi

# 3. node --cpu-prof.
if command -v node >/dev/null &&
	node --cpu-prof --cpu-prof-dir="$tmp/node" --cpu-prof-interval 250 \
		tests/workloads/hot.js 1500 2>"$tmp/err"; then
	prof=$(ls "$tmp"/node/*.cpuprofile | head -1)
	if "$FMTDUMP" --key file-line "$prof" >"$tmp/node.json" 2>"$tmp/err" &&
		python3 - "$prof" "$tmp/node.json" <<'PY'; then
import json, sys
raw, ours = (json.load(open(p)) for p in sys.argv[1:3])
# Independent computation: a sample's time is the delta to the next one.
nodes = {n["id"]: n for n in raw["nodes"]}
def key(n):
    cf = n["callFrame"]
    name = cf["functionName"] or "(anonymous)"
    return "%s %s:%d" % (name, cf["url"], cf["lineNumber"] + 1) if cf["url"] else name
want = {}
deltas, samples = raw["timeDeltas"], raw["samples"]
for i, s in enumerate(samples):
    t = deltas[i + 1] * 1000 if i + 1 < len(samples) and deltas[i + 1] > 0 else 0
    k = key(nodes[s])
    want[k] = want.get(k, 0) + t
got = ours["self"]["wall/nanoseconds"]
top = max(got, key=got.get)
if not top.startswith("hotLoop "):
    print("   top self function is %s, not hotLoop" % top); sys.exit(1)
bad = [k for k in want if want[k] and got.get(k) != want[k]]
if bad or ours["samples"] != len(samples):
    print("   self time differs for %s" % bad[:3]); sys.exit(1)
print("   hotLoop: %.0f%% of %d samples" % (100.0 * ours["self"]["samples/count"][top] / len(samples), len(samples)))
PY
		ok "node --cpu-prof hot.js"
	else
		fail "node --cpu-prof hot.js: $(cat "$tmp/err")"
	fi
else
	echo "skip: node --cpu-prof is not available"
fi

# 4. perf record -g + perf script.
if command -v perf >/dev/null && cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -fno-inline -o "$tmp/spin" tests/workloads/spin.c &&
	perf record -q -e cpu-clock -F 499 -g -o "$tmp/perf.data" "$tmp/spin" 2 >/dev/null 2>"$tmp/err"; then
	perf script -i "$tmp/perf.data" >"$tmp/perf.txt" 2>/dev/null
	perf report -i "$tmp/perf.data" --stdio --no-children --sort symbol -n -q -g none \
		>"$tmp/report.txt" 2>/dev/null
	if "$FMTDUMP" "$tmp/perf.txt" >"$tmp/perf.json" 2>"$tmp/err" &&
		python3 - "$tmp/perf.txt" "$tmp/report.txt" "$tmp/perf.json" <<'PY'; then
import json, re, sys
text, report, ours = open(sys.argv[1]).read(), open(sys.argv[2]).read(), json.load(open(sys.argv[3]))
headers = sum(1 for l in text.splitlines() if l and not l[0].isspace() and not l.startswith("#"))
perf = {}
for l in report.splitlines():
    m = re.match(r"\s*[\d.]+%\s+(\d+)\s+\[.\]\s+(\S+)", l)
    if m:
        perf[m.group(2)] = int(m.group(1))
self, cum = ours["self"]["samples/count"], ours["cum"]["samples/count"]
ok = ours["samples"] == headers and ours["format"] == "perf-script"
for f in ("hot_a", "hot_b"):
    ok = ok and self.get(f) == perf.get(f)
in_main = sum(1 for blk in text.split("\n\n") if re.search(r"\smain\+0x", blk))
ok = ok and max(self, key=self.get) == "hot_a" and cum.get("main") == in_main
print("   %d samples; self hot_a %s / hot_b %s (perf report: %s / %s); main %s of %s" % (
    ours["samples"], self.get("hot_a"), self.get("hot_b"), perf.get("hot_a"), perf.get("hot_b"),
    cum.get("main"), in_main))
sys.exit(0 if ok else 1)
PY
		ok "perf record -g + perf script spin.c"
	else
		fail "perf record -g + perf script spin.c: $(cat "$tmp/err")"
	fi
else
	echo "skip: perf record does not work here: $(head -c 200 "$tmp/err" 2>/dev/null)"
fi
finish_counts
