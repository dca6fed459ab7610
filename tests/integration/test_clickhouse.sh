#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_clickhouse.sh - the ClickHouse backend (store/clickhouse.h) gives
# the embedded store's answers: a clickhouse-server on loopback
# (clickhouse_lib.sh), one profd server on the embedded store and one
# with --storage clickhouse://..., the same corpus files ingested into
# both at fixed times (the set test_views_golden.sh uses), then every
# view of every profile type compared byte for byte (flame graph and
# inverted, table, frame table, series by label, flame chart, diff,
# exports, sandwich, labels, label values, profile types). Then: a
# second ClickHouse-backed server ingesting the same stacks adds no
# stack row (content ids agree), and with ClickHouse killed ingest
# answers 503 with Retry-After and queries fail with a clear error;
# restarted, ingest is accepted again.
# Environment: PROFD, PROFD_CORPUS; skips without clickhouse-server or
# the corpus.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}

if [ ! -d "$CORPUS/pprof" ]; then
	echo "skip: no corpus at $CORPUS (set PROFD_CORPUS)"
	exit 0
fi
source tests/integration/server_lib.sh
source tests/integration/clickhouse_lib.sh
need_bin "$PROFD"
ch_available || skip "clickhouse-server is not installed (Debian: apt-get install clickhouse-server)"

ch_start
ok "clickhouse-server $(ch_query 'SELECT version()') on port $ch_http_port"
URL="clickhouse://127.0.0.1:$ch_http_port/profd_test"

start_server --data "$tmp/emb"
e_pid=$server_pid e_base=$base
server_pid=
at_exit() { kill -9 "$e_pid" 2>/dev/null; return 0; }
start_server --data "$tmp/chd" --storage "$URL"
c_base=$base
checkx "schema version table written" '[ "$(ch_query "SELECT max(version) FROM profd_test.profd_schema")" = 1 ]'

T0=1700000000
FROM=1600000000000 TO=1800000000000
post() { # post BASE NAME FILE QUERY: POST /ingest, expect 200
	local c
	c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
		--data-binary "@$3" "$1/ingest?$4")
	[ "$c" = 200 ] || fail "ingest $2 into $1: HTTP $c $(head -c 300 "$tmp/body")"
}
specs=("pprof/gen--cpu.pprof pprof" "pprof/gen--heap.pprof pprof"
	"pprof/pyroscope--go.cpu.labels.pprof pprof" "pprof/parca--two-stacks.pb.gz pprof"
	"jfr/gen--jdk17-profile.jfr jfr" "collapsed/gen--perf-collapsed-fp.txt folded")
i=0
for spec in "${specs[@]}"; do
	set -- $spec
	[ -f "$CORPUS/$1" ] || continue
	i=$((i + 1))
	q="name=golden$i%7Bfile%3D%22$(basename "$1")%22%7D&format=$2&from=$((T0 + 3600 * i))&until=$((T0 + 3600 * i + 10))"
	post "$e_base" "$1" "$CORPUS/$1" "$q"
	post "$c_base" "$1" "$CORPUS/$1" "$q"
done
otlp=$CORPUS/otlp/pyroscope--otel-ebpf-profile.pb.json
if [ -f "$otlp" ]; then
	for b in "$e_base" "$c_base"; do
		c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
			-H 'Content-Type: application/json' --data-binary "@$otlp" "$b/v1development/profiles")
		[ "$c" = 200 ] || fail "ingest OTLP/JSON into $b: HTTP $c"
	done
fi
rows=$(ch_query "SELECT count() FROM profd_test.samples")
checkx "ClickHouse holds the sample rows ($rows)" '[ "${rows:-0}" -gt 100 ]'

# same NAME PATH [curl -G args]: GET PATH from both servers; the statuses
# agree and the bodies are equal byte for byte, or else say the same up
# to the order stacks were first stored in (clickhouse_same.py: ties and
# the table's representative line follow that order in the embedded
# store too, where a head and a block of the same rows differ).
nsame=0 nequiv=0 nviews=0
same() {
	local name=$1 p=$2 ce cc
	shift 2
	nviews=$((nviews + 1))
	ce=$(curl -s --noproxy '*' -G -o "$tmp/e.body" -w '%{http_code}' "$@" "$e_base$p")
	cc=$(curl -s --noproxy '*' -G -o "$tmp/c.body" -w '%{http_code}' "$@" "$c_base$p")
	if [ "$ce" = "$cc" ] && cmp -s "$tmp/e.body" "$tmp/c.body"; then
		nsame=$((nsame + 1))
	elif [ "$ce" = 200 ] && [ "$cc" = 200 ] &&
		python3 tests/integration/clickhouse_same.py "$tmp/e.body" "$tmp/c.body" "$PROFD" \
			>"$tmp/same.out" 2>&1; then
		nequiv=$((nequiv + 1))
	else
		fail "$name: embedded HTTP $ce ($(wc -c <"$tmp/e.body") bytes), ClickHouse HTTP $cc ($(wc -c <"$tmp/c.body") bytes): $(tail -c 300 "$tmp/same.out" 2>/dev/null)"
		cp "$tmp/e.body" "$tmp/fail.$nfail.e"
		cp "$tmp/c.body" "$tmp/fail.$nfail.c"
	fi
}
R=(--data-urlencode "from=$FROM" --data-urlencode "to=$TO")
same "profile-types" /api/v1/profile-types "${R[@]}"
same "labels" /api/v1/labels "${R[@]}"
same "label values file" /api/v1/labels/file/values "${R[@]}"
same "label values service.name" /api/v1/labels/service.name/values "${R[@]}"
types=$(curl -s --noproxy '*' -G "${R[@]}" "$e_base/api/v1/profile-types" |
	python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
ntypes=$(echo "$types" | wc -w)
checkx "the embedded server has profile types ($ntypes)" '[ "$ntypes" -ge 3 ]'
mid=$(((T0 + 3600 * 4) * 1000))
for t in $types; do
	T=(--data-urlencode "type=$t" "${R[@]}")
	same "$t flamegraph" /api/v1/flamegraph "${T[@]}"
	same "$t flamegraph inverted" /api/v1/flamegraph "${T[@]}" --data-urlencode invert=true \
		--data-urlencode max_nodes=50
	same "$t flamegraph one file" /api/v1/flamegraph "${T[@]}" \
		--data-urlencode 'query={file="gen--cpu.pprof"}'
	same "$t table" /api/v1/table "${T[@]}"
	same "$t table frame" /api/v1/table "${T[@]}" --data-urlencode granularity=frame
	same "$t series" /api/v1/series "${T[@]}" --data-urlencode step=1h --data-urlencode group_by=file
	same "$t flamechart" /api/v1/flamechart "${T[@]}" --data-urlencode group_by=file
	same "$t diff" /api/v1/diff --data-urlencode "type=$t" --data-urlencode "a_from=$FROM" \
		--data-urlencode "a_to=$mid" --data-urlencode "b_from=$mid" --data-urlencode "b_to=$TO"
	same "$t export folded" /api/v1/export/folded "${T[@]}"
	same "$t export pprof" /api/v1/export/pprof "${T[@]}"
	curl -s --noproxy '*' -G -o "$tmp/table.json" "${T[@]}" "$e_base/api/v1/table"
	fn=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1])).get("rows") or [{}]
print(r[0].get("name", ""))' "$tmp/table.json" 2>/dev/null)
	[ -n "$fn" ] && same "$t sandwich" /api/v1/sandwich "${T[@]}" --data-urlencode "function=$fn"
done
# Per-sample attribute matchers (evaluated per row in profd on what
# ClickHouse selected), a regex and a negative matcher on series labels.
C=(--data-urlencode "type=process_cpu:cpu:nanoseconds:cpu:nanoseconds" "${R[@]}")
for sel in '{function="slow"}' '{profile_id=~"0.*"}' '{foo="bar",function!="fast"}' '{file=~"gen.*"}' \
	'{file!="gen--cpu.pprof"}' '{nosuchlabel="x"}'; do
	same "cpu flamegraph $sel" /api/v1/flamegraph "${C[@]}" --data-urlencode "query=$sel"
	same "cpu series $sel" /api/v1/series "${C[@]}" --data-urlencode "query=$sel" \
		--data-urlencode step=10s
done
same "label values function" /api/v1/labels/function/values "${R[@]}"
same "label values profile_id" /api/v1/labels/profile_id/values "${R[@]}"
checkx "all $nviews views agree: $nsame byte for byte, $nequiv up to first-seen order" \
	'[ $((nsame + nequiv)) = "$nviews" ] && [ "$nsame" -ge $((nviews * 3 / 4)) ]'

# Content ids: a second ClickHouse-backed server writing the same stacks adds no stack.
stacks_before=$(ch_query "SELECT uniqExact(stack_id) FROM profd_test.stacks")
c_pid=$server_pid
server_pid=
start_server --data "$tmp/chd2" --storage "$URL"
post "$base" "again" "$CORPUS/pprof/gen--cpu.pprof" "name=other%7Bfile%3D%22again%22%7D&format=pprof&from=$((T0 + 90000))&until=$((T0 + 90010))"
ch_query "OPTIMIZE TABLE profd_test.stacks FINAL" >/dev/null
stacks_after=$(ch_query "SELECT uniqExact(stack_id) FROM profd_test.stacks")
stack_rows=$(ch_query "SELECT count() FROM profd_test.stacks")
checkx "same stacks from another server: one id each ($stacks_before before, $stacks_after after)" \
	'[ "$stacks_before" = "$stacks_after" ]'
checkx "one stack row per stack after merging ($stack_rows rows)" '[ "$stack_rows" = "$stacks_after" ]'
kill -9 "$server_pid" 2>/dev/null
server_pid=$c_pid

out=$("$PROFD" store stats "$URL" 2>&1)
rc=$?
checkx "profd store on a ClickHouse URL says why not (exit $rc)" \
	'[ "$rc" = 2 ] && grep -q "is a ClickHouse store" <<<"$out"'

# ClickHouse away: ingest is refused with 503 and Retry-After, queries fail clearly.
ch_kill 9
c=$(curl -s --noproxy '*' -D "$tmp/hdr" -o "$tmp/body" -w '%{http_code}' -X POST \
	--data-binary "@$CORPUS/pprof/gen--cpu.pprof" \
	"$c_base/ingest?name=down&format=pprof&from=$((T0 + 99000))&until=$((T0 + 99010))")
checkx "ingest with ClickHouse down: 503 (got $c)" '[ "$c" = 503 ]'
checkx "ingest with ClickHouse down: Retry-After" 'grep -qi "^retry-after:" "$tmp/hdr"'
c=$(curl -s --noproxy '*' -G -o "$tmp/body" -w '%{http_code}' "${R[@]}" \
	--data-urlencode "type=process_cpu:cpu:nanoseconds:cpu:nanoseconds" "$c_base/api/v1/flamegraph")
checkx "query with ClickHouse down: an error (HTTP $c) naming ClickHouse" \
	'[ "$c" -ge 500 ] && grep -q clickhouse "$tmp/body"'
require_alive "after ClickHouse went away"
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
