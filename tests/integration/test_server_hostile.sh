#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_server_hostile.sh - no client can lock the others out (issue 27):
# while one client address holds 2000 idle keep-alive connections and
# another runs 300 slowloris connections (a header byte per second, each
# reopened when the server closes it), a third client's queries and
# ingests, each on a new connection, are all answered within 1 s, and
# every ingest acknowledged is in the store. Then: a body announced and
# never sent and a connection that sends nothing are closed by their
# deadlines, not by a per-byte timer; and past the per-client limit a
# client is refused (counted in /metrics) while others are served.
# The clients are tests/integration/hostile_clients.py, on 127.0.0.2 and
# 127.0.0.3 (loopback, distinct client addresses).
source "$(dirname "$0")/ingest_lib.sh"

ulimit -n "$(ulimit -Hn)" 2>/dev/null
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt 4096 ]; then
	skip "the descriptor limit ($(ulimit -n)) is below the 4096 the clients need"
fi
HC="python3 tests/integration/hostile_clients.py"
metric() { # metric NAME_WITH_LABELS: its value in $tmp/metrics
	awk -v k="$1" '$1 == k { print $2 }' "$tmp/metrics"
}
T0=1700000000000
"$MKOTLP" --attr service.name=api --time-ms $T0 --stack 'main;hot=70' --stack 'main;cold=30' \
	"$tmp/a.pb"

start_server --header-timeout 3s --max-connections-per-client 4096 --upload-window 2s
Q="/api/v1/flamegraph?type=$CPU&from=0&to=now"
$HC attack "$port" 14 --idle 2000 --slow 300 >"$tmp/attack.json" 2>"$tmp/attack.err" &
attack_pid=$!
at_exit() { kill "$attack_pid" 2>/dev/null; }
sleep 4
curl -s --noproxy '*' -o "$tmp/metrics" "$base/metrics"
open=$(metric profd_connections_open)
checkx "the server holds the attack's connections (${open:-?} open)" '[ "${open:-0}" -ge 2000 ]'
threads=$(ls "/proc/$server_pid/task" | wc -l)
checkx "... with few threads ($threads)" '[ "$threads" -lt 100 ]'
$HC probe "$port" 8 --otlp "$tmp/a.pb" --query "$Q" >"$tmp/probe.json"
wait "$attack_pid"
require_alive "after the attack"
echo "# attack: $(cat "$tmp/attack.json")"
echo "# probe:  $(cat "$tmp/probe.json")"
read -r nreq worst late acked < <(python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
print(p["requests"], p["worst_s"], len(p["late_or_failed"]), p["acked"])' "$tmp/probe.json")
checkx "a normal client was answered, every request within 1 s ($nreq requests, worst ${worst}s, $late late or failed)" \
	'[ "$nreq" -ge 20 ] && [ "$late" = 0 ]'
read -r peak_idle closed < <(python3 -c '
import json, sys
a = json.load(open(sys.argv[1]))
print(a["peak_idle"], a["closed_by_server"])' "$tmp/attack.json")
checkx "2000 idle keep-alive connections were held at once (peak $peak_idle)" \
	'[ "$peak_idle" -ge 2000 ]'
checkx "slowloris connections were closed by the header deadline ($closed)" '[ "$closed" -ge 300 ]'
curl -s --noproxy '*' -o "$tmp/metrics" "$base/metrics"
hdr=$(metric 'profd_connections_closed_total{reason="header_timeout"}')
checkx "... and counted (header_timeout $hdr)" '[ "${hdr:-0}" -ge 300 ]'
want=$((acked * 100))
checkx "every acknowledged ingest is stored ($acked acked, total $want)" \
	'[ "$(total "$CPU" "{}")" = "$want" ]'

# Deadlines that trickling cannot extend: an upload that stalls, a silent connection.
$HC stall "$port" 10 >"$tmp/stall.json"
echo "# stall: $(cat "$tmp/stall.json")"
read -r up silent < <(python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
print(s["upload"], s["silent"])' "$tmp/stall.json")
checkx "a 1 GiB body announced and not sent is closed by the upload window (${up}s)" \
	'[ "$up" != None ] && python3 -c "import sys; sys.exit(not 1.5 <= $up <= 5)"'
checkx "a connection that sends nothing is closed at the header deadline (${silent}s)" \
	'[ "$silent" != None ] && python3 -c "import sys; sys.exit(not 2.5 <= $silent <= 5)"'
curl -s --noproxy '*' -o "$tmp/metrics" "$base/metrics"
slow=$(metric 'profd_connections_closed_total{reason="slow_upload"}')
checkx "... counted as slow_upload ($slow)" '[ "${slow:-0}" -ge 1 ]'
stop_server TERM
check "the server stops cleanly after the attack (exit $stop_rc)" [ "$stop_rc" = 0 ]

# The per-client limit: one address cannot take more than its share.
start_server --max-connections-per-client 200
$HC attack "$port" 6 --idle 1000 >"$tmp/attack2.json" 2>"$tmp/attack2.err" &
attack_pid=$!
sleep 2
$HC probe "$port" 3 --otlp "$tmp/a.pb" --query "$Q" >"$tmp/probe2.json"
wait "$attack_pid"
echo "# attack: $(cat "$tmp/attack2.json")"
echo "# probe:  $(cat "$tmp/probe2.json")"
read -r peak_idle < <(python3 -c '
import json, sys
print(json.load(open(sys.argv[1]))["peak_idle"])' "$tmp/attack2.json")
checkx "one address holds at most its 200 connections (peak $peak_idle)" \
	'[ "$peak_idle" -le 200 ] && [ "$peak_idle" -ge 150 ]'
late=$(python3 -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["late_or_failed"]))' \
	"$tmp/probe2.json")
checkx "another address is served meanwhile ($late late or failed)" '[ "$late" = 0 ]'
curl -s --noproxy '*' -o "$tmp/metrics" "$base/metrics"
ref=$(metric 'profd_connections_refused_total{reason="per_client"}')
checkx "refusals are counted (per_client $ref)" '[ "${ref:-0}" -ge 800 ]'
require_alive "at the end"
finish
