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
# stack row (content ids agree); a dataset with a retention loses the
# day partitions older than it (and keeps recent rows and other
# datasets); and with ClickHouse killed ingest
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
checkx "schema version table written" '[ "$(ch_query "SELECT max(version) FROM profd_test.profd_schema")" = 2 ]'

T0=1700000000
FROM=1600000000000 TO=1800000000000
R=(--data-urlencode "from=$FROM" --data-urlencode "to=$TO")
post() { # post BASE NAME FILE QUERY: POST /ingest, expect 200
	local c
	c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
		--data-binary "@$3" "$1/ingest?$4")
	[ "$c" = 200 ] || fail "ingest $2 into $1: HTTP $c $(head -c 300 "$tmp/body")"
}
ch_ingest_golden "$e_base" "$c_base"
rows=$(ch_query "SELECT count() FROM profd_test.samples")
checkx "ClickHouse holds the sample rows ($rows)" '[ "${rows:-0}" -gt 100 ]'
ch_wait_flushed
ch_views
checkx "the embedded server has profile types ($ch_ntypes)" '[ "$ch_ntypes" -ge 3 ]'
# Views break ties by content, not by the order stacks were stored in:
# every view is equal byte for byte.
checkx "all $ch_nviews views agree byte for byte ($ch_nequiv only up to first-seen order)" \
	'[ "$ch_nsame" = "$ch_nviews" ]'
curl -s --noproxy '*' -G -o "$tmp/series.json" --data-urlencode "from=$((T0 * 1000))" \
	--data-urlencode "to=$(((T0 + 8 * 3600) * 1000))" --data-urlencode step=1m \
	--data-urlencode "type=process_cpu:cpu:nanoseconds:cpu:nanoseconds" "$c_base/api/v1/series"
checkx "the compared series view has samples ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["samples"])' "$tmp/series.json"))" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d[\"samples\"] > 0 and any(g[\"total\"] > 0 for g in d[\"series\"]) else 1)" "$tmp/series.json"'

# Rollups: a totals scan reads the whole hours of its range from
# samples_hour and the partial hours at either end from samples; ranges
# of whole hours, of hours cut at either end, and of no whole hour agree
# with the embedded store.
hour_rows=$(ch_query "SELECT count() FROM profd_test.samples_hour")
checkx "the hour rollup holds rows ($hour_rows)" '[ "${hour_rows:-0}" -gt 0 ]'
H0=$((T0 - T0 % 3600)) # the hour of T0; file i is ingested at H0 + 3600 i + 800 s
rollup_views() { # rollup_views WHEN: the views over whole and cut hours, through ch_same
	local n0=$ch_nviews s0=$ch_nsame q0=$ch_nequiv rng f t t_ X
	for rng in "$H0 $((H0 + 7 * 3600))" "$((T0 + 3600 - 100)) $((T0 + 5 * 3600 + 5))" \
		"$((T0 + 3600 + 5)) $((T0 + 3 * 3600 + 2))" "$((T0 + 3600 - 100)) $((T0 + 3600 + 100))"; do
		read -r f t <<<"$rng"
		for t_ in process_cpu:cpu:nanoseconds:cpu:nanoseconds memory:inuse_space:bytes:space:bytes; do
			X=(--data-urlencode "type=$t_" --data-urlencode "from=$((f * 1000))" --data-urlencode "to=$((t * 1000 - 1))")
			ch_same "$t_ flamegraph $f..$t" /api/v1/flamegraph "${X[@]}"
			ch_same "$t_ table $f..$t" /api/v1/table "${X[@]}"
			ch_same "$t_ flamegraph one file $f..$t" /api/v1/flamegraph "${X[@]}" \
				--data-urlencode 'query={file="gen--cpu.pprof"}'
		done
	done
	checkx "$1: $((ch_nviews - n0)) views over whole and cut hours agree byte for byte ($((ch_nequiv - q0)) only up to first-seen order)" \
		'[ $((ch_nsame - s0)) = $((ch_nviews - n0)) ]'
}
rollup_views "rollup"

# Migration from schema 1 (set back: a version-1 row, no rollup rows): a
# restarted server fills the rollup from samples and records version 2.
hour_sums() { ch_query "SELECT sumMerge(sum_value), countMerge(nrows) FROM profd_test.samples_hour"; }
sums_before=$(hour_sums)
ch_query "INSERT INTO profd_test.profd_schema VALUES (1, 0)"
ch_query "ALTER TABLE profd_test.profd_schema DELETE WHERE version = 2"
ch_query "ALTER TABLE profd_test.samples_hour DELETE WHERE 1"
wait_for 60 '[ "$(ch_query "SELECT max(version), (SELECT count() FROM profd_test.samples_hour) FROM profd_test.profd_schema")" = "$(printf "1\t0")" ]' \
	"the database set back to schema 1 without rollup rows"
kill -9 "$server_pid" 2>/dev/null
start_server --data "$tmp/chd" --storage "$URL"
c_base=$base
checkx "restarted on schema 1: migrated to 2 ($(grep -c 'schema 1 -> 2' "$tmp/log.$n") log line)" \
	'[ "$(ch_query "SELECT max(version) FROM profd_test.profd_schema")" = 2 ] && grep -q "schema 1 -> 2" "$tmp/log.$n"'
sums_after=$(hour_sums)
checkx "the rollup filled from samples: sum, rows (${sums_after//$'\t'/ }) as before" '[ "$sums_after" = "$sums_before" ]'
rollup_views "after the migration"
# ... and the whole hours do come from samples_hour: a row added there
# alone shows in a range of that hour, not in one that cuts it.
cpu=process_cpu:cpu:nanoseconds:cpu:nanoseconds
fg_total() {
	curl -s --noproxy '*' -G --data-urlencode "type=$cpu" --data-urlencode "from=$1" \
		--data-urlencode "to=$2" "$c_base/api/v1/flamegraph" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])'
}
h=$((H0 + 3600)) # the hour of file 1, gen--cpu.pprof
before=$(fg_total $((h * 1000)) $(((h + 3600) * 1000 - 1)))
ch_query "INSERT INTO profd_test.samples_hour SELECT dataset, series_id, $((h * 1000000000)), stack_id,
	sumState(toInt64(1000)), countState(), minState(ts), maxState(ts), minState((ingest_ns, ord))
	FROM (SELECT * FROM profd_test.samples WHERE dataset = 'default' AND ts >= $((h * 1000000000))
	AND ts < $(((h + 3600) * 1000000000)) AND series_id IN (SELECT series_id FROM profd_test.series
	WHERE type = '$cpu') LIMIT 1) GROUP BY dataset, series_id, stack_id" >"$tmp/ins.out"
after=$(fg_total $((h * 1000)) $(((h + 3600) * 1000 - 1)))
cut=$(fg_total $((h * 1000 + 1)) $(((h + 3600) * 1000 - 1)))
checkx "a whole hour is read from samples_hour ($before, $after with 1000 added there; $(head -c 200 "$tmp/ins.out"))" \
	'[ -n "$before" ] && [ "$after" = $((before + 1000)) ]'
checkx "an hour cut at its start is read from samples ($cut)" '[ "$cut" = "$before" ]'

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

# Retention: a server whose only dataset keeps 2 days drops the day
# partitions wholly older than that (ClickHouse 18.16 has no TTL), keeps
# recent rows and leaves the other datasets alone.
cat >"$tmp/ret.yaml" <<'YAML'
datasets:
  - name: ret
    retention: 2d
YAML
golden_rows=$(ch_query "SELECT count() FROM profd_test.samples WHERE dataset = 'default'")
start_server --data "$tmp/chd3" --storage "$URL" --config "$tmp/ret.yaml"
now=$(date +%s)
post "$base" "old" "$CORPUS/pprof/gen--cpu.pprof" "name=old&format=pprof&from=$((now - 4 * 86400))&until=$((now - 4 * 86400 + 10))"
post "$base" "recent" "$CORPUS/pprof/gen--cpu.pprof" "name=recent&format=pprof&from=$((now - 3600))&until=$((now - 3590))"
old_q="SELECT (SELECT count() FROM profd_test.samples WHERE dataset = 'ret' AND ts < $(((now - 3 * 86400) * 1000000000))) +
	(SELECT count() FROM profd_test.samples_hour WHERE dataset = 'ret' AND hour < $(((now - 3 * 86400) * 1000000000)))"
recent_q="SELECT count() FROM profd_test.samples WHERE dataset = 'ret' AND ts >= $(((now - 7200) * 1000000000))"
recent_rows=$(ch_query "$recent_q")
checkx "old and recent rows stored ($(ch_query "$old_q") old, $recent_rows recent)" \
	'[ "$(ch_query "$old_q")" -gt 0 ] && [ "$recent_rows" -gt 0 ]'
dropped() { curl -s --noproxy '*' "$base/metrics" | sed -n 's/^profd_retention_partitions_dropped_total{dataset="ret"} //p'; }
wait_for 60 '[ "$(ch_query "$old_q")" = 0 ]' "retention dropped the day of the old rows" &&
	ok "retention dropped the day of the old rows"
checkx "recent rows kept ($(ch_query "$recent_q"))" '[ "$(ch_query "$recent_q")" = "$recent_rows" ]'
checkx "the other dataset's rows kept" \
	'[ "$(ch_query "SELECT count() FROM profd_test.samples WHERE dataset = '"'default'"'")" = "$golden_rows" ]'
checkx "/metrics counts the dropped partition ($(dropped))" '[ "$(dropped)" -ge 1 ]'
checkx "/metrics: no failed retention round" \
	'curl -s --noproxy "*" "$base/metrics" | grep -q "^profd_retention_failures_total{dataset=\"ret\"} 0$"'
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
