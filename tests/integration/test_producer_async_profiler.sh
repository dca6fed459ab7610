#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_producer_async_profiler.sh - async-profiler (from Maven Central,
# scripts/producers.sh) profiles tests/workloads/HotSplit.java (about 50
# / 30 / 20 % of its CPU in HotSplit$Alpha.work, HotSplit$Beta.work and
# HotSplit.gamma, by the clock) on the JVM on PATH, and what it writes
# reaches profd by every path async-profiler offers:
#   - its OTLP output (otlp,file=...), POSTed to profd's OTLP/HTTP port
#     unchanged: async-profiler 4.3/4.4 write the OTLP v1.9 layout, which
#     profd rewrites (format/otlp_compat.h);
#   - its JFR output (jfr,file=...), POSTed to /ingest?format=jfr;
#   - jfr-converter's pprof and OTLP output from that JFR file, POSTed
#     to /api/v1/ingest/pprof and the OTLP port.
# Each path lands in a dataset of its own. For each: the three leaves'
# shares of their sum are within 0.08 of 50/30/20 (about 600 samples:
# 4 standard deviations),
# each leaf below HotSplit.drive <- HotSplit.main. Across paths: the
# JFR file read by profd and by jfr-converter (pprof, OTLP) gives the
# same sample count for each leaf, exactly; `profd convert` reads both
# OTLP files (v1.9 and v1.7 layouts) to folded stacks with the leaf
# counts the server found.
# Needs java and javac; async-profiler needs Linux x64. Skipped, with the
# reason, when either cannot be had.
source "$(dirname "$0")/ingest_lib.sh"
for t in java javac; do
	command -v "$t" >/dev/null || { echo "skip: $t not installed"; exit 0; }
done
if [ "$(uname -m)" != x86_64 ]; then
	echo "skip: the test uses async-profiler's linux-x64 library"
	exit 0
fi
if ! read -r so conv ver cver < <(bash scripts/producers.sh async-profiler 2>"$tmp/why"); then
	echo "skip: async-profiler: $(tail -n 1 "$tmp/why")"
	exit 0
fi
echo "  async-profiler $ver, jfr-converter $cver, $(java -version 2>&1 | head -n 1)"
cat >"$tmp/profd.yaml" <<EOF
datasets: [{name: otlp}, {name: jfr}, {name: convpprof}, {name: convotlp}]
EOF
start_server --config "$tmp/profd.yaml" --otlp-http-listen 127.0.0.1:0
javac -d "$tmp/classes" tests/workloads/HotSplit.java || { fail "javac"; finish; }

# profile OUTPUT FILE: HotSplit for 3 s and 6 CPU seconds under async-profiler.
profile() {
	timeout 120 java "-agentpath:$so=start,event=cpu,interval=10ms,$1,file=$2" \
		-cp "$tmp/classes" HotSplit 3 6 >"$tmp/java.$1.out" 2>&1
	check "HotSplit ran under async-profiler ($1 output: $(stat -c %s "$2" 2>/dev/null) bytes)" \
		grep -Eq 'done [01]$' "$tmp/java.$1.out"
}
profile otlp "$tmp/ap.otlp"
profile jfr "$tmp/ap.jfr"
java -cp "$conv" Main -o pprof "$tmp/ap.jfr" "$tmp/conv.pprof" >"$tmp/conv.out" 2>&1
java -cp "$conv" Main -o otlp "$tmp/ap.jfr" "$tmp/conv.otlp" >>"$tmp/conv.out" 2>&1
check "jfr-converter wrote pprof and OTLP ($(tr '\n' ' ' <"$tmp/conv.out"))" \
	[ -s "$tmp/conv.pprof" ] && [ -s "$tmp/conv.otlp" ]

# push: each path into its dataset
code=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -H 'X-Scope-OrgID: otlp' \
	-H 'Content-Type: application/x-protobuf' --data-binary "@$tmp/ap.otlp" \
	"http://127.0.0.1:$otlp_port/v1development/profiles")
check "async-profiler's OTLP accepted on the OTLP/HTTP port ($code $(head -c 200 "$tmp/body"))" [ "$code" = 200 ]
req POST '/ingest?name=hotsplit&format=jfr' -H 'X-Scope-OrgID: jfr' --data-binary "@$tmp/ap.jfr"
check "async-profiler's JFR accepted on /ingest ($code)" [ "$code" = 200 ]
req POST '/api/v1/ingest/pprof?service_name=hotsplit' -H 'X-Scope-OrgID: convpprof' \
	--data-binary "@$tmp/conv.pprof"
check "jfr-converter's pprof accepted ($code $(head -c 200 "$tmp/body"))" [ "$code" = 200 ]
code=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -H 'X-Scope-OrgID: convotlp' \
	-H 'Content-Type: application/x-protobuf' --data-binary "@$tmp/conv.otlp" \
	"http://127.0.0.1:$otlp_port/v1development/profiles")
check "jfr-converter's OTLP accepted ($code $(head -c 200 "$tmp/body"))" [ "$code" = 200 ]

# leaves DATASET: "TYPE ALPHA BETA GAMMA BAD" - the samples under each leaf
# in the dataset's CPU sample-count type (the one type with unit count,
# else the only type), BAD the leaf samples not below drive <- main.
leaves() {
	local ds=$1 ty
	ty=$(types -H "X-Scope-OrgID: $ds" | python3 -c '
import json, sys
t = json.load(sys.stdin)
c = [x for x in t if x.split(":")[2] == "count"] or t
print(c[0] if c else "none")')
	total "$ty" '{}' -H "X-Scope-OrgID: $ds" >/dev/null
	python3 - "$tmp/flame.json" "$ty" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
leaves = {"HotSplit$Alpha.work": 0, "HotSplit$Beta.work": 0, "HotSplit.gamma": 0}
bad = 0
stack = [(d["root"], ())]
while stack:
    n, path = stack.pop()
    # frame names as the paths spell them: dots or slashes in packages
    name = n["name"].replace("/", ".")
    if name in leaves:
        leaves[name] += n["total"]
        if path[-2:] != ("HotSplit.main", "HotSplit.drive"):
            bad += n["total"]
        continue
    stack.extend((c, path + (name,)) for c in n.get("children", []))
print(sys.argv[2], *leaves.values(), bad)
PY
}

declare -A counts
for ds in otlp jfr convpprof convotlp; do
	read -r ty a b g bad < <(leaves "$ds")
	counts[$ds]="$a $b $g"
	sh=$(python3 -c 'import sys; a,b,g=map(int,sys.argv[1:]); s=max(a+b+g,1); print("%.3f %.3f %.3f" % (a/s, b/s, g/s))' "$a" "$b" "$g")
	read -r sa sb sg <<<"$sh"
	echo "  $ds ($ty): Alpha $a, Beta $b, gamma $g samples (shares $sh)"
	checkx "$ds: shares $sh within 0.08 of 0.50/0.30/0.20 ($((a + b + g)) samples)" \
		'python3 -c "import sys; sys.exit(not (abs($sa-.5) <= .08 and abs($sb-.3) <= .08 and abs($sg-.2) <= .08 and $a+$b+$g >= 300))"'
	check "$ds: every leaf sample below HotSplit.drive <- HotSplit.main ($bad not)" [ "$bad" = 0 ]
done
check "the JFR file gives the same leaf counts read by profd and by jfr-converter's pprof (${counts[jfr]} / ${counts[convpprof]})" \
	[ "${counts[jfr]}" = "${counts[convpprof]}" ]
check "... and by jfr-converter's OTLP (${counts[convotlp]})" [ "${counts[jfr]}" = "${counts[convotlp]}" ]

# folded_leaves FILE: "ALPHA BETA GAMMA" samples of a folded file
folded_leaves() {
	python3 - "$1" <<'PY'
import sys
got = {"HotSplit$Alpha.work": 0, "HotSplit$Beta.work": 0, "HotSplit.gamma": 0}
for line in open(sys.argv[1]):
    stack, _, n = line.rstrip("\n").rpartition(" ")
    for f in stack.split(";"):
        f = f.replace("/", ".")
        if f in got:
            got[f] += int(n)
            break
print(*got.values())
PY
}
for f in ap:otlp conv:convotlp; do
	"$PROFD" convert "$tmp/${f%%:*}.otlp" "$tmp/${f%%:*}.folded" >"$tmp/convert.out" 2>&1
	got=$(folded_leaves "$tmp/${f%%:*}.folded" 2>/dev/null)
	check "profd convert reads ${f%%:*}.otlp to folded with the server's leaf counts ($got / ${counts[${f#*:}]}; $(head -c 200 "$tmp/convert.out"))" \
		[ "$got" = "${counts[${f#*:}]}" ]
done

stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
