#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_server_hostile_grpc.sh - the OTLP/gRPC listener holds thousands of
# connections without a thread each (issue 27): while one client address
# holds 2000 idle HTTP/2 connections (preface, one call, then silence)
# and another runs 300 slowloris connections (the preface a byte a
# second) against the gRPC port, a third client's gRPC exports and HTTP
# queries and ingests, each on a new connection, are all answered within
# 1 s, the server runs few threads, the slowloris connections are closed
# by the header deadline, and every export acknowledged is in the store.
# Then clients that reset their stream or close the connection while
# their export is being stored leave the server serving (and, under the
# sanitizers, clean).
# The clients are tests/integration/hostile_clients.py (a small HTTP/2
# client of its own), on 127.0.0.2 and 127.0.0.3.
source "$(dirname "$0")/ingest_lib.sh"

ulimit -n "$(ulimit -Hn)" 2>/dev/null
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 4096 ]; then
	echo "skip: the descriptor limit ($(ulimit -n)) is below the 4096 the clients need"
	exit 0
fi
HC="python3 tests/integration/hostile_clients.py"
metric() { # metric NAME_WITH_LABELS: its value in $tmp/metrics
	awk -v k="$1" '$1 == k { print $2 }' "$tmp/metrics"
}
T0=1700000000000
"$MKOTLP" --attr service.name=api --time-ms $T0 --stack 'main;hot=70' --stack 'main;cold=30' \
	"$tmp/a.pb"

start_server --grpc-listen 127.0.0.1:0 --header-timeout 3s --max-connections-per-client 4096
check "the gRPC listener is up (port $grpc_port)" [ -n "$grpc_port" ]
Q="/api/v1/flamegraph?type=$CPU&from=0&to=now"
$HC attack "$grpc_port" 14 --grpc --idle 2000 --slow 300 >"$tmp/attack.json" 2>"$tmp/attack.err" &
attack_pid=$!
at_exit() { kill "$attack_pid" 2>/dev/null; }
sleep 4
curl -s --noproxy '*' -o "$tmp/metrics" "$base/metrics"
open=$(metric profd_connections_open)
checkx "the server holds the attack's connections (${open:-?} open)" '[ "${open:-0}" -ge 2000 ]'
threads=$(ls "/proc/$server_pid/task" | wc -l)
checkx "... with few threads ($threads)" '[ "$threads" -lt 100 ]'
$HC probe "$port" 8 --otlp "$tmp/a.pb" --query "$Q" --grpc-port "$grpc_port" >"$tmp/probe.json"
wait "$attack_pid"
require_alive "after the attack"
echo "# attack: $(cat "$tmp/attack.json")"
echo "# probe:  $(cat "$tmp/probe.json")"
read -r nreq worst late acked < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
print(p["requests"], p["worst_s"], len(p["late_or_failed"]), p["acked"])' "$tmp/probe.json")
checkx "a normal client was answered, every request within 1 s ($nreq requests, worst ${worst}s, $late late or failed)" \
	'[ "$nreq" -ge 30 ] && [ "$late" = 0 ]'
read -r peak_idle closed < <(python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
print(a["peak_idle"], a["closed_by_server"])' "$tmp/attack.json")
checkx "2000 idle HTTP/2 connections were held at once (peak $peak_idle)" \
	'[ "$peak_idle" -ge 2000 ]'
checkx "slowloris connections were closed by the header deadline ($closed)" '[ "$closed" -ge 300 ]'
curl -s --noproxy '*' -o "$tmp/metrics" "$base/metrics"
hdr=$(metric 'profd_connections_closed_total{reason="header_timeout"}')
checkx "... and counted (header_timeout $hdr)" '[ "${hdr:-0}" -ge 300 ]'
calls=$(metric 'profd_grpc_requests_total{method="Export",grpc_status="12"}')
checkx "the idle connections' calls were answered (status 12: ${calls:-0})" '[ "${calls:-0}" -ge 2000 ]'
want=$((acked * 100))
checkx "every acknowledged ingest is stored ($acked acked, total $want)" \
	'[ "$(total "$CPU" "{}")" = "$want" ]'

# Callers that leave while their request is on a worker.
before=$(total "$CPU" "{}")
$HC abandon "$grpc_port" 300 --otlp "$tmp/a.pb" >"$tmp/abandon.json"
echo "# abandon: $(cat "$tmp/abandon.json")"
sleep 1
require_alive "after 300 abandoned exports"
out=$(python3 -c '
import sys; sys.path.insert(0, "tests/integration")
import hostile_clients as h
print(h.grpc_export(int(sys.argv[1]), open(sys.argv[2], "rb").read(), 5.0)[0])' "$grpc_port" "$tmp/a.pb")
checkx "an export after them is acknowledged ($out)" '[ "$out" = True ]'
out=$(python3 -c '
import sys; sys.path.insert(0, "tests/integration")
import hostile_clients as h
print(h.grpc_export(int(sys.argv[1]), open(sys.argv[2], "rb").read(), 5.0, True)[0])' "$grpc_port" "$tmp/a.pb")
checkx "a client that shuts its side down right after its call still gets the answer ($out)" \
	'[ "$out" = True ]'
after=$(total "$CPU" "{}")
checkx "... and stored, with what the abandoned ones left ($before -> $after)" \
	'[ "$after" -gt "$before" ]'
stop_server TERM
check "the server stops cleanly after the attack (exit $stop_rc)" [ "$stop_rc" = 0 ]
finish
