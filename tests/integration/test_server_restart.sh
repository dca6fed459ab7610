#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_server_restart.sh - a restart after kill -9 is fast whatever the
# WAL holds (issue 27): the server is killed under ingest load, then
#   - listens within 1 s of its start and acknowledges an ingest (into
#     the WAL) within 1 s, while the old segments replay in the
#     background;
#   - /readyz says ready for ingest, and ?for=query 503 while replaying;
#   - every acknowledged sample is queryable after the replay (a query
#     waits for it), the request acknowledged during it too;
#   - /metrics shows the replay done and the head's and WAL's sizes;
#   - the replayed head became a block, so the next restart replays
#     only what came after.
# Uses tests/tools/ingestload (acknowledged samples in a file).
source "$(dirname "$0")/ingest_lib.sh"

LOAD=${INGESTLOAD:-$TOOLS/ingestload}
need_bin "$LOAD"
CNT='process_cpu:samples:count:cpu:nanoseconds'
metric() { awk -v k="$1" '$1 == k { print $2 }' "$tmp/metrics"; }

start_server
"$LOAD" --port "$port" --clients 2 --seconds 5 --samples 2000 --stacks 400 \
	--acked-file "$tmp/acked" >"$tmp/load.json" 2>"$tmp/load.err" &
load_pid=$!
at_exit() { kill "$load_pid" 2>/dev/null; }
sleep 4
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
wait "$load_pid"
acked=$(cat "$tmp/acked")
wal=$(du -sb "$tmp/data/default/wal" | cut -f1)
echo "# killed under load: $acked samples acknowledged, WAL $wal bytes"
checkx "the load was acknowledged before the kill ($acked samples)" '[ "${acked:-0}" -gt 0 ]'

"$MKOTLP" --attr service.name=late --time-ms 1700000000000 --stack 'main;late=7' "$tmp/late.pb"
t0=$(date +%s%N)
start_server
t1=$(date +%s%N)
otlp "$tmp/late.pb"
t2=$(date +%s%N)
listen_ms=$(((t1 - t0) / 1000000))
ack_ms=$(((t2 - t0) / 1000000))
checkx "listening within 1 s of the start (${listen_ms} ms, WAL $wal bytes)" '[ "$listen_ms" -lt 1000 ]'
checkx "an ingest is acknowledged within 1 s of the start ($code at ${ack_ms} ms)" \
	'[ "$code" = 200 ] && [ "$ack_ms" -lt 1000 ]'
ready=$(curl -s --noproxy '*' "$base/readyz")
qcode=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "$base/readyz?for=query")
echo "# readyz: $ready (for=query: $qcode)"
checkx "/readyz says ready for ingest" '[[ "$ready" == ready* ]]'
checkx "/readyz?for=query is 503 while replaying, 200 after ($qcode)" \
	'[ "$qcode" = 503 ] || [ "$qcode" = 200 ]'
got=$(total "$CNT" '{service.name="load"}')
t3=$(date +%s%N)
echo "# queryable after $(((t3 - t0) / 1000000)) ms"
checkx "every acknowledged sample is queryable after the replay ($acked acked, $got stored)" \
	'[ "$got" -ge "$acked" ] && [ "$got" -le $((acked + 2 * 2000)) ] && [ $((got % 2000)) = 0 ]'
checkx "the ingest taken during the replay is there too" '[ "$(total "$CPU" "{service.name=\"late\"}")" = 7 ]'
curl -s --noproxy '*' -o "$tmp/metrics" "$base/metrics"
checkx "/metrics: replay over ($(metric 'profd_replay_in_progress{dataset="default"}')), $(metric 'profd_replay_total_bytes{dataset="default"}') bytes replayed in $(metric 'profd_replay_seconds{dataset="default"}') s" \
	'[ "$(metric "profd_replay_in_progress{dataset=\"default\"}")" = 0 ] && [ "$(metric "profd_replay_done_bytes{dataset=\"default\"}")" = "$(metric "profd_replay_total_bytes{dataset=\"default\"}")" ]'
checkx "/metrics has the head bytes and WAL bytes and age" \
	'[ -n "$(metric "profd_head_bytes{dataset=\"default\"}")" ] && [ -n "$(metric "profd_wal_total_bytes{dataset=\"default\"}")" ] && [ -n "$(metric "profd_wal_oldest_age_seconds{dataset=\"default\"}")" ]'
readyq=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "$base/readyz?for=query")
check "/readyz?for=query is 200 once replayed ($readyq)" [ "$readyq" = 200 ]
# the replayed head is written as a block: the next crash replays only what came after
# (a block appears before the replayed segments are removed: wait for the WAL
# itself, up to 30 s on a loaded machine)
wait_for 30 '[ -n "$(find "$tmp/data/default/blocks" -mindepth 1 -maxdepth 1 -type d)" ] &&
	[ "$(du -sb "$tmp/data/default/wal" | cut -f1)" -lt 100000 ]' || true
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
wal2=$(du -sb "$tmp/data/default/wal" | cut -f1)
checkx "the replayed WAL was checkpointed into a block (WAL now $wal2 bytes)" '[ "$wal2" -lt 100000 ]'
start_server
checkx "and survives another kill -9 (total $(total "$CNT" '{service.name="load"}'))" \
	'[ "$(total "$CNT" "{service.name=\"load\"}")" = "$got" ]'
finish
