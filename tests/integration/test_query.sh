#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_query.sh - the query API (docs/api.md) and the query CLI against a
# real `profd server` on loopback, on handmade OTLP profiles (mkotlp):
#   - labels and label values scoped by selector and type;
#   - table (recursion counted once, search, sort, limit), inverted flame
#     graph, frame/stack filters and hide presets, sandwich;
#   - series: sum by a label, top-N + other, and the derived metric of a
#     function whose hot path switches on and off every 20 s: the square
#     wave, step by step;
#   - diff: identical selections all zero, the hot function disappearing
#     between two halves of the wave, different types refused with 400 in
#     words, an empty side;
#   - flame chart lanes; exports: folded, pprof (read by `go tool pprof`
#     when Go is installed, same total), SVG (well-formed XML);
#   - bad parameters -> 400 naming the parameter; unknown endpoint -> 404;
#   - the CLI: `profd query table|flamegraph|series|diff|export-pprof`
#     and `profd flamegraph FILE -o out.svg`.
# Needs $PROFD and mkotlp built next to it (make O=... build).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
MKOTLP=${MKOTLP:-$(dirname "$PROFD")/tests/tools/mkotlp}
CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
T0=1700000000000 # ms
FAR=4102444800000

source tests/integration/lib.sh
need_bin "$PROFD"
need_bin "$MKOTLP"

source tests/integration/server_lib.sh
start_server

post() { curl -s --noproxy '*' -o /dev/null -w '%{http_code}' -X POST \
	-H 'Content-Type: application/x-protobuf' --data-binary "@$1" "$base/v1development/profiles"; }
# api PATH [curl -G args...]: GET, body in $tmp/body, sets code.
api() {
	local p=$1
	shift
	code=$(curl -s --noproxy '*' -G -o "$tmp/body" -w '%{http_code}' "$@" "$base$p")
}
# jq_py EXPR: evaluate a Python expression over the JSON body as j.
jq_py() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$tmp/body" "$1" 2>&1; }
# expect DESCRIPTION PYEXPR WANT: the body answered 200 and PYEXPR prints WANT.
expect() {
	local got
	got=$(jq_py "$2")
	if [ "$code" = 200 ] && [ "$got" = "$3" ]; then ok "$1"; else fail "$1 (code $code, got $got)"; fi
}

# --- data ----------------------------------------------------------------------------
"$MKOTLP" --attr service.name=api --attr process.executable.name=spin --time-ms $T0 \
	--stack 'main;hot=70' --stack 'main;cold=30' --stack 'main;rec;rec;leaf=5' \
	--stack 'main;runtime.mallocgc=8' "$tmp/a.pb"
"$MKOTLP" --attr service.name=db --attr process.executable.name=pg --time-ms $T0 \
	--stack 'main;x=500' "$tmp/b.pb"
"$MKOTLP" --type inuse_space:bytes --attr service.name=api --time-ms $T0 \
	--stack 'main;alloc=4096' "$tmp/heap.pb"
# The wave: 48 profiles 10 s apart from T0 + 1 h; hot() runs 20 s on, 20 s off.
W0=$((T0 + 3600000))
"$MKOTLP" --attr service.name=wave --time-ms $W0 --count 48 --every-ms 10000 \
	--wave-half-ms 20000 --stack 'main;idle=50' --wave 'main;hot=90' "$tmp/wave.pb"
for f in a b heap wave; do
	c=$(post "$tmp/$f.pb")
	[ "$c" = 200 ] || fail "ingest $f answered $c"
done
R=(--data-urlencode "from=0" --data-urlencode "to=$FAR")
A=(--data-urlencode "type=$CPU" --data-urlencode 'query={service.name="api"}' "${R[@]}")

# --- labels -----------------------------------------------------------------------------
api /api/v1/labels "${R[@]}"
expect "labels lists the series label names" \
	"j" \
	"['process.executable.name', 'service.name']"
api /api/v1/labels/service.name/values "${R[@]}"
expect "label values sorted (api, db, wave)" \
	"j" \
	"['api', 'db', 'wave']"
api /api/v1/labels/service.name/values "${R[@]}" --data-urlencode 'query={process.executable.name="pg"}'
expect "label values scoped by selector (db)" \
	"j" \
	"['db']"
api /api/v1/labels/service.name/values "${R[@]}" --data-urlencode 'type=memory:inuse_space:bytes:inuse_space:bytes'
expect "label values scoped by type (api)" \
	"j" \
	"['api']"
api /api/v1/labels/service.name/values --data-urlencode "from=1000" --data-urlencode "to=2000"
expect "label values of an empty range: []" \
	"j" \
	"[]"

# --- table, flame graph, filters, sandwich -------------------------------------------------------
api /api/v1/table "${A[@]}"
row() { echo "[(r['self'], r['total']) for r in j['rows'] if r['name'] == '$1'][0]"; }
expect "table: main total 113, self 0" "$(row main)" "(0, 113)"
expect "table: rec counted once under recursion (0, 5)" "$(row rec)" "(0, 5)"
expect "table: hot self 70" "$(row hot)" "(70, 70)"
expect "table: unit nanoseconds" "j['unit']" nanoseconds
api /api/v1/table "${A[@]}" --data-urlencode "sort=name" --data-urlencode "limit=2"
expect "table sort=name limit=2 (cold, hot)" \
	"[r['name'] for r in j['rows']]" \
	"['cold', 'hot']"
api /api/v1/table "${A[@]}" --data-urlencode "search=^(hot|leaf)$" --data-urlencode "search_regex=true"
expect "table regex search (2 rows)" "len(j['rows'])" 2
api /api/v1/flamegraph "${A[@]}" --data-urlencode "invert=true"
expect "inverted flame graph: leaves first (hot 70 at the top level)" \
	"[c['total'] for c in j['root']['children'] if c['name'] == 'hot'][0]" 70
api /api/v1/flamegraph "${A[@]}" --data-urlencode "hide=go"
expect "hide=go: runtime.mallocgc's 8 go to main's self" "j['root']['children'][0]['self']" 8
api /api/v1/flamegraph "${A[@]}" --data-urlencode "stack_filter=^rec$"
expect "stack_filter keeps 5 of 113, reports 108 filtered" \
	"(j['total'], j['filtered_total'])" \
	"(5, 108)"
api /api/v1/sandwich "${A[@]}" --data-urlencode "function=rec"
expect "sandwich of rec: total 5, callers main, callees rec;leaf" \
	"(j['total'], j['callers']['root']['children'][0]['name'], j['callees']['root']['children'][0]['children'][0]['name'])" \
	"(5, 'main', 'leaf')"
api /api/v1/sandwich "${A[@]}" --data-urlencode "function=rec" --data-urlencode "stack_filter=^hot$"
expect "sandwich of rec where no selected stack has it: found false, total 0" \
	"(j['found'], j['total'], j['callers']['samples'])" \
	"(False, 0, 0)"

# --- repeated parameters (docs/api.md): lists combine, single values refuse -------------------------
api /api/v1/flamegraph "${A[@]}" --data-urlencode "stack_filter=^rec$" --data-urlencode "stack_filter=^hot$"
expect "stack_filter twice: stacks with either frame (5 + 70 of 113)" \
	"(j['total'], j['filtered_total'])" \
	"(75, 38)"
api /api/v1/flamegraph "${A[@]}" --data-urlencode "frame_filter=^hot$" --data-urlencode "frame_filter=^cold$"
expect "frame_filter twice: both hidden, their 70 + 30 go to main's self" \
	"j['root']['children'][0]['self']" 100
api /api/v1/flamegraph "${A[@]}" --data-urlencode "hide=libc" --data-urlencode "hide=go"
expect "hide twice is hide=libc,go: runtime.mallocgc's 8 go to main's self" \
	"j['root']['children'][0]['self']" 8
api /api/v1/series --data-urlencode "type=$CPU" --data-urlencode "from=$T0" \
	--data-urlencode "to=$((T0 + 59999))" --data-urlencode "step=60s" \
	--data-urlencode 'query={service.name="api"}' --data-urlencode "group_by=service.name" \
	--data-urlencode "group_by=process.executable.name"
expect "group_by twice groups by both labels" \
	"sorted(j['series'][0]['labels'].items())" \
	"[('process.executable.name', 'spin'), ('service.name', 'api')]"
api /api/v1/series --data-urlencode "type=$CPU" --data-urlencode "from=$T0" \
	--data-urlencode "to=$((T0 + 59999))" --data-urlencode "step=60s" \
	--data-urlencode 'query={service.name="api"}' --data-urlencode "group_by=service.name" \
	--data-urlencode "group_by=service.name"
expect "group_by=x twice groups by x once" \
	"(j['group_by'], [sorted(s['labels']) for s in j['series']])" \
	"(['service.name'], [['service.name']])"
# each regex means what it means alone: ho\Q quotes nothing past its own value
api /api/v1/flamegraph "${A[@]}" --data-urlencode 'stack_filter=ho\Q' --data-urlencode 'stack_filter=\Et'
expect "stack_filter=ho\\Q and =\\Et: stacks with hot or a 't' (70 + 8 of 113)" \
	"(j['total'], j['filtered_total'])" \
	"(78, 35)"
api /api/v1/flamegraph "${A[@]}" --data-urlencode 'stack_filter=a)|(?:b' --data-urlencode 'stack_filter=b'
checkx "a repeated stack_filter that is no regex alone -> 400 naming it and the offset in it" \
	'[ "$code" = 400 ] && grep -q "parameter .stack_filter.: regex error: .* at offset 1 of .a)|(?:b." "$tmp/body"'
api /api/v1/table "${A[@]}" --data-urlencode "type=$CPU"
checkx "type twice -> 400 naming it" \
	'[ "$code" = 400 ] && grep -q "parameter .type. given more than once" "$tmp/body"'
api /api/v1/series "${A[@]}" --data-urlencode "step=60s" --data-urlencode "step=10s"
checkx "step twice -> 400 naming it" \
	'[ "$code" = 400 ] && grep -q "parameter .step. given more than once" "$tmp/body"'
api /api/v1/profile-types --data-urlencode "from=0" --data-urlencode "from=now-1h"
checkx "profile-types with from twice -> 400" '[ "$code" = 400 ] && grep -q "each takes one value" "$tmp/body"'
api /api/v1/profile-types --data-urlencode "from=0" --data-urlencode "limit=1"
expect "profile-types limit=1: the first type, the count, truncated" \
	"(len(j['values']), j['total'] >= 2, j['limit'], j['truncated'])" "(1, True, 1, True)"
api /api/v1/profile-types --data-urlencode "from=0" --data-urlencode "limit=0"
checkx "profile-types limit=0 -> 400 naming it" '[ "$code" = 400 ] && grep -q "parameter .limit." "$tmp/body"'

# --- series and the square wave ------------------------------------------------------------------
api /api/v1/series --data-urlencode "type=$CPU" --data-urlencode "from=$T0" \
	--data-urlencode "to=$((T0 + 59999))" --data-urlencode "step=60s" \
	--data-urlencode "group_by=service.name" --data-urlencode "limit=1"
expect "series sum by service.name: top 1 (db 500) + other (api 113)" \
	"(j['series'][0]['labels']['service.name'], j['series'][0]['values'], j['other']['groups'], j['other']['values'])" \
	"('db', [500], 1, [113])"
WQ=(--data-urlencode "type=$CPU" --data-urlencode 'query={service.name="wave"}')
api /api/v1/series "${WQ[@]}" --data-urlencode "from=$W0" --data-urlencode "to=$((W0 + 479999))" \
	--data-urlencode "step=10s" --data-urlencode "function=hot" --data-urlencode "mode=self"
wave=$(jq_py "''.join('#' if v else '_' for v in j['series'][0]['values'])")
checkx "derived metric of hot(): square wave with a 40 s period ($wave)" \
	'[ "$wave" = "##__##__##__##__##__##__##__##__##__##__##__##__" ]'
expect "derived metric values are 90 when on" \
	"sorted(set(j['series'][0]['values']))" \
	"[0, 90]"
api /api/v1/series "${WQ[@]}" --data-urlencode "from=$W0" --data-urlencode "to=$((W0 + 479999))" \
	--data-urlencode "step=10s" --data-urlencode "function="
checkx "series with an empty function is a 400 naming it ($code)" \
	'[ "$code" = 400 ] && grep -q "parameter .function. is empty" "$tmp/body"'
api /api/v1/series "${WQ[@]}" --data-urlencode "from=$W0" --data-urlencode "to=$((W0 + 479999))" \
	--data-urlencode "step=40s"
expect "series without a function: every 40 s step holds 4 x 50 + 2 x 90 = 380, rate 9.5 ns/s" \
	"(set(j['series'][0]['values']), j['series'][0]['rates'][0])" \
	"({380}, 9.5)"

# --- diff -------------------------------------------------------------------------------------------
api /api/v1/diff "${A[@]}"
expect "diff of identical selections: every delta 0, every node noise" \
	"(lambda f: sorted(set((n['delta'], n['noise']) for n in f(f, j['root']))))(lambda f, n: [n] + sum((f(f, c) for c in n['children']), []))" \
	"[(0, True)]"
api /api/v1/diff "${WQ[@]}" --data-urlencode "a_from=$W0" --data-urlencode "a_to=$((W0 + 19999))" \
	--data-urlencode "b_from=$((W0 + 20000))" --data-urlencode "b_to=$((W0 + 39999))"
expect "diff on -> off: hot disappeared (listed), idle's share rises" \
	"(j['disappeared']['count'], [s['stack'] for s in j['disappeared']['stacks']], j['root']['children'][0]['children'][0]['name'])" \
	"(1, [['main', 'hot']], 'idle')"
api /api/v1/diff --data-urlencode "a_type=$CPU" --data-urlencode "b_type=memory:inuse_space:bytes:inuse_space:bytes" "${R[@]}"
checkx "diff across types -> 400 in words" \
	'[ "$code" = 400 ] && grep -q "cannot compare different units" "$tmp/body"'
api /api/v1/diff "${A[@]}" --data-urlencode "a_from=1000" --data-urlencode "a_to=2000"
expect "diff with an empty baseline -> 200, everything appeared" \
	"(j['a']['total'], j['root']['children'][0]['status'])" \
	"(0, 'appeared')"

# --- flame chart, exports --------------------------------------------------------------------------
api /api/v1/flamechart "${WQ[@]}" --data-urlencode "from=$W0" --data-urlencode "to=$((W0 + 479999))" \
	--data-urlencode "group_by=service.name"
expect "flame chart: one lane, 72 samples (48 idle + 24 hot), interval 10 s" \
	"(len(j['lanes']), j['samples'], round(j['lanes'][0]['interval_ns'] / 1e9))" \
	"(1, 72, 10)"
api /api/v1/export/folded "${A[@]}"
checkx "folded export" 'grep -qx "main;rec;rec;leaf 5" "$tmp/body" && grep -qx "main;hot 70" "$tmp/body"'
api /api/v1/export/svg "${A[@]}"
checkx "SVG export is well-formed XML with the frames" \
	'python3 -c "import sys,xml.etree.ElementTree as E; E.parse(sys.argv[1])" "$tmp/body" && grep -q "data-n=\"leaf\"" "$tmp/body"'
api /api/v1/export/pprof "${A[@]}"
cp "$tmp/body" "$tmp/export.pb.gz"
if command -v go >/dev/null 2>&1; then
	tot=$(go tool pprof -top -unit=ns "$tmp/export.pb.gz" 2>/dev/null | sed -n 's/.* of \([0-9]*\)ns total.*/\1/p' | head -1)
	checkx "exported pprof read by go tool pprof: total 113 (got $tot)" '[ "$tot" = 113 ]'
else
	echo "skip: go not installed (exported pprof not checked by go tool pprof)"
fi

# --- bad parameters ----------------------------------------------------------------------------------
bad() { # bad PATH PARAM VALUE MESSAGE
	local want=$4
	api "$1" --data-urlencode "type=$CPU" --data-urlencode "$2=$3"
	checkx "$1 $2=$3 -> 400 naming it" '[ "$code" = 400 ] && grep -q "$want" "$tmp/body"'
}
bad /api/v1/table sort size "parameter 'sort'"
bad /api/v1/series step 0 "parameter 'step'"
bad /api/v1/series group_by "a,,b" "parameter 'group_by'"
bad /api/v1/flamegraph invert maybe "parameter 'invert'"
bad /api/v1/flamegraph hide cobol "unknown preset 'cobol'"
bad /api/v1/flamegraph frame_filter "(" "parameter 'frame_filter'"
bad /api/v1/diff mode relative "parameter 'mode'"
bad /api/v1/flamechart interval soon "parameter 'interval'"
bad /api/v1/flamegraph maxnodes 10 "unknown parameter 'maxnodes'"
bad /api/v1/table max_nodes 10 "unknown parameter 'max_nodes'"
bad /api/v1/labels stack_filter x "unknown parameter 'stack_filter'"
api /api/v1/flamegraph "${R[@]}" --data-urlencode 'type=process_cpu:cpu'
checkx "a malformed type -> 400 saying the five fields" \
	'[ "$code" = 400 ] && grep -q "parameter .type.: expected a profile type id name:sample_type:sample_unit" "$tmp/body"'
api /api/v1/table "${R[@]}" --data-urlencode 'type=process_cpu:cpu:nanoseconds:cpu:nanosecond'
checkx "a well-formed type the store never saw -> 400 unknown profile type" \
	'[ "$code" = 400 ] && grep -q "unknown profile type .process_cpu:cpu:nanoseconds:cpu:nanosecond." "$tmp/body"'
api /api/v1/diff "${R[@]}" --data-urlencode 'type=alloc:x:count:y:count'
checkx "diff of an unknown type -> 400" '[ "$code" = 400 ] && grep -q "unknown profile type" "$tmp/body"'
api /api/v1/flamegraph --data-urlencode "type=$CPU" --data-urlencode from=1000 --data-urlencode to=2000
checkx "a known type over an empty range -> 200 with total 0" \
	'[ "$code" = 200 ] && [ "$(jq_py "j[\"total\"]")" = 0 ]'
api /api/v1/sandwich --data-urlencode "type=$CPU"
checkx "sandwich without function -> 400" '[ "$code" = 400 ] && grep -q "function" "$tmp/body"'
api /api/v1/tables
checkx "unknown endpoint -> 404" '[ "$code" = 404 ]'

# --- the CLI --------------------------------------------------------------------------------------------
Q=(--server "$base" --type "$CPU" --query '{service.name="api"}' --from 0 --to $FAR)
"$PROFD" query table "${Q[@]}" >"$tmp/cli.table" 2>&1
checkx "profd query table prints rows with units" \
	'grep -Eq "70ns +61.95% +70ns +61.95%  hot" "$tmp/cli.table"'
"$PROFD" query flamegraph "${Q[@]}" >"$tmp/cli.fg" 2>&1
checkx "profd query flamegraph prints an indented tree" 'grep -Eq "^ +5ns .*      leaf$" "$tmp/cli.fg"'
"$PROFD" query series --server "$base" --type "$CPU" --query '{service.name="wave"}' \
	--from $W0 --to $((W0 + 79999)) --step 10s --function hot >"$tmp/cli.series" 2>&1
checkx "profd query series prints one row per step" \
	'[ "$(grep -c "^20" "$tmp/cli.series")" = 8 ] && grep -q " 90ns" "$tmp/cli.series"'
"$PROFD" query diff --server "$base" --type "$CPU" --query '{service.name="wave"}' \
	--a-from $W0 --a-to $((W0 + 19999)) --b-from $((W0 + 20000)) --b-to $((W0 + 39999)) >"$tmp/cli.diff" 2>&1
checkx "profd query diff marks the disappeared function" 'grep -q "hot (gone)" "$tmp/cli.diff"'
"$PROFD" query export-pprof "${Q[@]}" -o "$tmp/cli.pb.gz" >/dev/null 2>&1
checkx "profd query export-pprof writes the same bytes as the API" 'cmp -s "$tmp/cli.pb.gz" "$tmp/export.pb.gz"'
"$PROFD" query table --server "$base" --type "$CPU" --sort size >"$tmp/cli.bad" 2>&1
rc=$?
checkx "profd query with a bad parameter: exit 1 and the server's reason" \
	'[ "$rc" = 1 ] && grep -q "parameter .sort." "$tmp/cli.bad"'
"$PROFD" flamegraph "$tmp/a.pb" -o "$tmp/a.svg" --title 'a <test>' >"$tmp/cli.svg" 2>&1
checkx "profd flamegraph FILE -o out.svg writes well-formed SVG" \
	'python3 -c "import sys,xml.etree.ElementTree as E; E.parse(sys.argv[1])" "$tmp/a.svg" && grep -q "a &lt;test&gt;" "$tmp/a.svg"'
"$PROFD" flamegraph "$tmp/a.pb" -o - --format folded >"$tmp/a.folded" 2>&1
checkx "profd flamegraph --format folded" 'grep -qx "main;hot 70" "$tmp/a.folded"'
"$PROFD" flamegraph "$tmp/nope.pb" -o "$tmp/x.svg" >"$tmp/cli.nofile" 2>&1
rc=$?
checkx "profd flamegraph on a missing file: exit 1, names it" '[ "$rc" = 1 ] && grep -q "nope.pb" "$tmp/cli.nofile"'

# Huge values: two samples of 2^63-1 under one caller. Sums saturate at
# 2^63-1 instead of wrapping negative (or tripping UBSan in this build).
printf 'a;b 9223372036854775807\na;c 9223372036854775807\n' >"$tmp/ovf.folded"
code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' --data-binary "@$tmp/ovf.folded" \
	"$base/ingest?name=ovf.alloc_objects&from=$((T0 / 1000))&until=$((T0 / 1000 + 10))")
checkx "ingest of 2^63-1 sample values: 200" '[ "$code" = 200 ]'
OVT="memory:alloc_objects:count::"
api /api/v1/table --data-urlencode "type=$OVT" --data-urlencode 'query={service_name="ovf"}' \
	--data-urlencode "from=$T0" --data-urlencode "to=$((T0 + 60000))"
expect "table: the caller of two 2^63-1 samples saturates at 2^63-1" "$(row a)" "(0, 9223372036854775807)"
api /api/v1/flamegraph --data-urlencode "type=$OVT" --data-urlencode 'query={service_name="ovf"}' \
	--data-urlencode "from=$T0" --data-urlencode "to=$((T0 + 60000))"
expect "flame graph: the root total saturates at 2^63-1" "j['root']['total']" 9223372036854775807
"$PROFD" flamegraph "$tmp/ovf.folded" -o "$tmp/ovf.svg" >"$tmp/cli.ovf" 2>&1
checkx "profd flamegraph on 2^63-1 values: exit 0, an SVG" '[ $? = 0 ] && grep -q "<svg" "$tmp/ovf.svg"'

stop_server TERM
checkx "server stops cleanly (exit $stop_rc)" '[ "$stop_rc" = 0 ]'
if grep -l "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$tmp"/log.* "$tmp"/cli.* >/dev/null 2>&1; then
	fail "sanitizer reports"
fi
[ "$nfail" = 0 ] || { echo "$nfail check(s) failed"; exit 1; }
echo "all query checks passed"
