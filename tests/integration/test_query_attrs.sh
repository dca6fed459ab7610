#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_query_attrs.sh - per-sample attributes and trace links end to end:
# OTLP requests (mkotlp --sattr/--link) whose samples carry thread.name,
# thread.id and links to two traces (and one sample with pprof-style
# trace_id/span_id labels) go into a real `profd server`; then
#   - selectors on per-sample attributes ({thread.name="worker-1"}, regex,
#     != "", combined with a series label) give exact totals;
#   - trace_id= / span_id= keep only the linked samples, on the flame
#     graph, the table and the flame chart; a bad id is a 400 naming it;
#   - the flame chart with group_by=thread.name has one lane per thread
#     with exact totals;
# in four states of the store: the head, after kill -9 and restart (WAL
# replay), in a block (`profd store compact` flushed the log) and, with a
# second copy of the data an hour later, after `profd store compact`
# flushed it and merged the two blocks (values double); `profd store
# check` passes on the blocks.
source "$(dirname "$0")/ingest_lib.sh"

T0=1700000000000
T1=0af7651916cd43dd8448eb211c80319c
S1=b7ad6b7169203331
S2=00f067aa0ba902b7
T2=4bf92f3577b34da6a3ce929d0e0e4736
S3=53995c3f42cd8ad8
S4=1111222233334444

# mkreq TIME OUT: the request of one copy of the data.
mkreq() {
	"$MKOTLP" --attr service.name=app --time-ms "$1" \
		--stack 'main;work;compute=60' --sattr thread.name=worker-1 --sattr thread.id=101 \
		--link "$T1:$S1" \
		--stack 'main;work;io=25' --sattr thread.name=worker-2 --sattr thread.id=102 \
		--link "$T1:$S2" \
		--stack 'main;idle=10' --sattr thread.name=main --sattr thread.id=100 \
		--stack 'main;gc=5' \
		--stack 'main;legacy=7' --sattr trace_id="$T1" --sattr span_id="$S4" \
		"$2.app.pb" || fail "mkotlp app"
	"$MKOTLP" --attr service.name=db --time-ms "$1" \
		--stack 'main;query=40' --sattr thread.name=worker-1 --link "$T2:$S3" \
		"$2.db.pb" || fail "mkotlp db"
}

# flame SELECTOR [curl args...]: the flame graph total (over all time).
flame() {
	local q=$1
	shift
	total "$CPU" "$q" "$@"
}

# lanes [curl args...]: the flame chart of service app grouped by thread.name,
# as "thread:total" sorted.
lanes() {
	curl -s --noproxy '*' -G -o "$tmp/chart.json" \
		--data-urlencode "type=$CPU" --data-urlencode 'query={service.name="app"}' \
		--data-urlencode "from=0" --data-urlencode "to=now" \
		--data-urlencode "group_by=thread.name" "$@" "$base/api/v1/flamechart"
	python3 - "$tmp/chart.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
out = sorted("%s:%d" % (l["labels"].get("thread.name", ""), l["total"]) for l in j["lanes"])
print(" ".join(out))
PY
}

# table_self NAME [curl args...]: self of function NAME in the table of all services.
table_self() {
	local name=$1
	shift
	curl -s --noproxy '*' -G -o "$tmp/table.json" --data-urlencode "type=$CPU" \
		--data-urlencode "from=0" --data-urlencode "to=now" "$@" "$base/api/v1/table"
	python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(sum(r["self"] for r in j["rows"] if r["name"] == sys.argv[2]))' \
		"$tmp/table.json" "$name"
}

# queries STATE K: every check, values times K (the number of copies stored).
queries() {
	local s=$1 k=$2
	local v
	v=$(flame '{service.name="app"}')
	check "$s: app total $((107 * k)) ($v)" [ "$v" = $((107 * k)) ]
	v=$(flame '{thread.name="worker-1"}')
	check "$s: {thread.name=\"worker-1\"} across services $((100 * k)) ($v)" [ "$v" = $((100 * k)) ]
	v=$(flame '{service.name="app",thread.name="worker-1"}')
	check "$s: series label and sample attribute together $((60 * k)) ($v)" [ "$v" = $((60 * k)) ]
	v=$(flame '{thread.name=~"worker.*"}')
	check "$s: regex on thread.name $((125 * k)) ($v)" [ "$v" = $((125 * k)) ]
	v=$(flame '{service.name="app",thread.name!=""}')
	check "$s: thread.name!=\"\" keeps threaded samples $((95 * k)) ($v)" [ "$v" = $((95 * k)) ]
	v=$(flame '{thread.id="102"}')
	check "$s: {thread.id=\"102\"} $((25 * k)) ($v)" [ "$v" = $((25 * k)) ]
	v=$(flame '' --data-urlencode "trace_id=$T1")
	check "$s: trace_id of trace 1 (links and a trace_id label) $((92 * k)) ($v)" \
		[ "$v" = $((92 * k)) ]
	v=$(flame '' --data-urlencode "trace_id=${T1^^}" --data-urlencode "span_id=$S2")
	check "$s: trace_id (upper case) and span_id $((25 * k)) ($v)" [ "$v" = $((25 * k)) ]
	v=$(flame '' --data-urlencode "trace_id=$T2")
	check "$s: trace_id of trace 2 $((40 * k)) ($v)" [ "$v" = $((40 * k)) ]
	v=$(flame '' --data-urlencode "span_id=$S4")
	check "$s: span_id from a span_id label $((7 * k)) ($v)" [ "$v" = $((7 * k)) ]
	v=$(flame '{service.name="app"}' --data-urlencode "trace_id=$T2")
	check "$s: trace 2 is not in app (0: $v)" [ "$v" = 0 ]
	v=$(table_self compute --data-urlencode "trace_id=$T1")
	check "$s: table with trace_id: compute self $((60 * k)) ($v)" [ "$v" = $((60 * k)) ]
	v=$(table_self query --data-urlencode "trace_id=$T1")
	check "$s: table with trace_id: query absent ($v)" [ "$v" = 0 ]
	v=$(curl -s --noproxy '*' -G --data-urlencode from=0 --data-urlencode to=now "$base/api/v1/labels")
	check "$s: labels lists the per-sample names: $v" [ "$v" = '["service.name","span_id","thread.id","thread.name","trace_id"]' ]
	v=$(curl -s --noproxy '*' -G --data-urlencode from=0 --data-urlencode to=now \
		--data-urlencode 'query={service.name="app"}' "$base/api/v1/labels/thread.name/values")
	check "$s: thread.name values: $v" [ "$v" = '["main","worker-1","worker-2"]' ]
	# Per-sample labels honour the selector: db's samples have only worker-1 and no
	# thread.id / trace_id / span_id, though they share app's blocks and heads.
	v=$(curl -s --noproxy '*' -G --data-urlencode from=0 --data-urlencode to=now \
		--data-urlencode 'query={service.name="db"}' "$base/api/v1/labels/thread.name/values")
	check "$s: thread.name values of db only: $v" [ "$v" = '["worker-1"]' ]
	v=$(curl -s --noproxy '*' -G --data-urlencode from=0 --data-urlencode to=now \
		--data-urlencode 'query={service.name="db"}' "$base/api/v1/labels")
	check "$s: label names of db only: $v" [ "$v" = '["service.name","thread.name"]' ]
	v=$(curl -s --noproxy '*' -G --data-urlencode from=0 --data-urlencode to=now \
		--data-urlencode 'query={thread.name="main"}' "$base/api/v1/labels/thread.id/values")
	check "$s: thread.id values of the main thread's samples: $v" [ "$v" = '["100"]' ]
	v=$(lanes)
	want=":$((12 * k)) main:$((10 * k)) worker-1:$((60 * k)) worker-2:$((25 * k))"
	check "$s: flame chart lanes by thread.name: $v" [ "$v" = "$want" ]
	v=$(lanes --data-urlencode "trace_id=$T1")
	want=":$((7 * k)) worker-1:$((60 * k)) worker-2:$((25 * k))"
	check "$s: flame chart lanes of trace 1: $v" [ "$v" = "$want" ]
}

mkreq $T0 "$tmp/r1"
start_server
for f in "$tmp/r1.app.pb" "$tmp/r1.db.pb"; do
	otlp "$f"
	check "ingest $(basename "$f") answered 200" [ "$code" = 200 ]
done
queries head 1

req GET "/api/v1/flamegraph?type=$CPU&from=0&to=now&trace_id=xyz"
checkx "a bad trace_id is a 400 naming it" '[ "$code" = 400 ] && body_has trace_id'
req GET "/api/v1/flamechart?type=$CPU&from=0&to=now&span_id=0123456789abcdeg"
checkx "a bad span_id is a 400 naming the offset" '[ "$code" = 400 ] && body_has "offset 15"'

stop_server KILL
start_server
queries "after kill -9 (WAL replay)" 1

stop_server TERM
check "server stopped cleanly" [ "$stop_rc" = 0 ]
ds=$tmp/data/default
# The restart's replay already wrote the replayed WAL as a block (a start
# checkpoints what it replays); compact flushes whatever the log still has.
"$PROFD" store compact "$ds" >"$tmp/compact1.out" 2>&1
"$PROFD" store check "$ds" >"$tmp/check1.out" 2>&1
check "store check passes on the flushed block: $(tail -1 "$tmp/check1.out")" [ $? = 0 ]
checkx "the 6 rows are in a block (replay checkpoint or compact): $(cat "$tmp/compact1.out"); $(tail -1 "$tmp/check1.out")" \
	'grep -q "6 rows flushed from the WAL" "$tmp/compact1.out" || grep -q "blocks (6 rows)" "$tmp/check1.out"'
nblocks=$(find "$ds/blocks" -mindepth 1 -maxdepth 1 -type d | wc -l)
check "the head became a block ($nblocks)" [ "$nblocks" = 1 ]
start_server
queries "from a block" 1

mkreq $((T0 + 3600000)) "$tmp/r2"
for f in "$tmp/r2.app.pb" "$tmp/r2.db.pb"; do
	otlp "$f"
	check "ingest $(basename "$f") answered 200" [ "$code" = 200 ]
done
stop_server TERM
"$PROFD" store compact "$ds" >"$tmp/compact.out" 2>&1
check "store compact: $(cat "$tmp/compact.out")" grep -q "2 blocks merged" "$tmp/compact.out"
"$PROFD" store check "$ds" >"$tmp/check2.out" 2>&1
check "store check passes on the compacted block: $(tail -1 "$tmp/check2.out")" [ $? = 0 ]
start_server
queries "after compaction" 2
stop_server TERM
finish
