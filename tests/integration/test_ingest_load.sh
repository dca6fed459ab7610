#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_load.sh - bounded load and crash safety of ingest, loopback
# only (tests/tools/ingestload.c: 8 keep-alive clients posting
# agent-shaped OTLP, each request 200 samples of value 1, so a flame
# graph total counts stored samples):
#   - 8 clients for 10 s against the server under test: no errors, and
#     every acknowledged sample is in the store (total == acked), the
#     server's RSS stays bounded;
#   - kill -9 at a random moment while 4 clients push, 20 times, each
#     time restarting on the same data and replaying the WAL: no
#     acknowledged sample is ever lost (total >= all acknowledged) and
#     nothing unacknowledged is half-stored (total is a whole number of
#     requests; at most the requests in flight at each kill are extra).
# The crash cycles use $PROFD_FAST (quicker restarts) when it exists.
source "$(dirname "$0")/ingest_lib.sh"
LOAD=${LOAD:-$TOOLS/ingestload}
FAST=${PROFD_FAST:-$PROFD}
[ -x "$FAST" ] || FAST=$PROFD
[ -x "$LOAD" ] || { fail "$LOAD is not built"; exit 1; }
LT='process_cpu:samples:count:cpu:nanoseconds'
SECONDS_LOAD=${LOAD_SECONDS:-10}

start_server
rss_kb() { awk '/VmRSS/ { print $2 }' "/proc/$server_pid/status"; }
rss0=$(rss_kb)
"$LOAD" --port "$port" --clients 8 --seconds "$SECONDS_LOAD" --samples 200 --service load \
	>"$tmp/load.json" 2>"$tmp/load.err"
lrc=$?
rss1=$(rss_kb)
echo "  load: $(cat "$tmp/load.json")"
echo "  server RSS: ${rss0} kB before, ${rss1} kB after"
read -r acked errs reqs < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["acked_samples"], d["errors"], d["acked_requests"])' "$tmp/load.json")
checkx "8 clients for ${SECONDS_LOAD} s: no errors (exit $lrc)" '[ "$lrc" = 0 ] && [ "$errs" = 0 ]'
checkx "at least 100 requests acknowledged ($reqs)" '[ "$reqs" -ge 100 ]'
stored=$(total "$LT" '{service.name="load"}')
check "every acknowledged sample is in the store ($acked acked, $stored stored)" [ "$stored" = "$acked" ]
checkx "server RSS stays bounded (< 1.5 GiB: ${rss1} kB)" '[ "$rss1" -lt 1572864 ]'
require_alive "under load"
stop_server TERM
check "SIGTERM after the load stops cleanly" [ "$stop_rc" = 0 ]

# --- kill -9 during load, 20 times -----------------------------------------------------------------
# Each cycle: a fresh data directory, 4 clients, kill -9 after 0.2-0.7 s,
# restart on the same directory (WAL replay), count.
fast_start() { # fast_start DATA: like start_server, with $FAST; fails rather than exits
	n=$((n + 1))
	"$FAST" server --listen 127.0.0.1:0 --data "$1" --ui "$tmp/ui" >"$tmp/out.$n" 2>"$tmp/log.$n" &
	server_pid=$!
	port=$(server_port "$tmp/out.$n" "$server_pid")
	base="http://127.0.0.1:$port"
	[ -n "$port" ]
}
cycles=${CRASH_CYCLES:-20}
lost=0 half=0 extra_bad=0 all_acked=0 all_stored=0 corrupt=0
for i in $(seq 1 "$cycles"); do
	data="$tmp/crash$i"
	fast_start "$data" || { fail "crash cycle $i: server did not start: $(tail -n 2 "$tmp/log.$n")"; break; }
	rm -f "$tmp/acked"
	"$LOAD" --port "$port" --clients 4 --seconds 5 --samples 100 --service crash \
		--acked-file "$tmp/acked" >/dev/null 2>&1 &
	lpid=$!
	sleep "0.$((RANDOM % 6 + 2))"
	kill -9 "$server_pid"
	wait "$server_pid" 2>/dev/null
	# Nothing can be acknowledged any more: stop the clients too.
	kill "$lpid" 2>/dev/null
	wait "$lpid" 2>/dev/null
	a=$(cat "$tmp/acked" 2>/dev/null || echo 0)
	fast_start "$data" || { fail "crash cycle $i: restart failed: $(tail -n 2 "$tmp/log.$n")"; break; }
	t=$(total "$LT" '{service.name="crash"}')
	kill -9 "$server_pid"
	wait "$server_pid" 2>/dev/null
	server_pid=
	grep -q "corrupt_bytes=[1-9]\|saved path=" "$tmp/log.$n" && corrupt=$((corrupt + 1))
	if [ "${t%% *}" = error ] || [ "$t" -lt "$a" ]; then
		lost=$((lost + 1))
		echo "  cycle $i: $a acknowledged, $t stored"
		continue
	fi
	[ $((t % 100)) = 0 ] || half=$((half + 1))
	[ $((t - a)) -le 400 ] || extra_bad=$((extra_bad + 1)) # 4 clients x 1 request in flight
	all_acked=$((all_acked + a))
	all_stored=$((all_stored + t))
done
echo "  $cycles kill -9 cycles: $all_acked samples acknowledged, $all_stored stored after replay"
check "no acknowledged sample lost in any of $cycles kill -9 cycles" [ "$lost" = 0 ]
check "nothing half-stored: whole requests only, every cycle" [ "$half" = 0 ]
check "at most the requests in flight at the kill are extra, every cycle" [ "$extra_bad" = 0 ]
checkx "the cycles acknowledged something ($all_acked)" '[ "$all_acked" -gt 0 ]'
check "no replay found a corrupt record" [ "$corrupt" = 0 ]
finish
