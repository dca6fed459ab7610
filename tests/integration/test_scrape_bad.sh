#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_scrape_bad.sh - misbehaving scrape targets (scrape_fake_target.py)
# next to a good one, every 1-2 s with a 1 s timeout and a 1 MiB body limit:
#   - a target that hangs, answers 500, answers garbage, announces a 1 GiB
#     body, streams an endless chunked body, or refuses connections is
#     marked down at /api/v1/targets with the reason (timeout, HTTP 500 and
#     the body, decode, body_size_limit, connect);
#   - the 1 GiB bodies are cut off: the fake sent only a few MiB, and the
#     server's peak memory stays bounded;
#   - the good target is scraped on its interval meanwhile (never blocked
#     by the hung one) and its profiles are stored;
#   - the server stops within seconds although a scrape is hanging.
source "$(dirname "$0")/scrape_lib.sh"

printf 'main;work;hot 30\nmain;idle 10\n' >"$tmp/p.folded"
"$PROFD" convert "$tmp/p.folded" "$tmp/p.pb.gz" >/dev/null 2>&1 || { fail "convert"; exit 1; }
start_fake "ok:$tmp/p.pb.gz" hang 500 garbage huge chunked

cat >"$tmp/scrape.yaml" <<EOF
scrape_configs:
  - job_name: bad
    scrape_interval: 2s
    scrape_timeout: 1s
    body_size_limit: 1MiB
    profiles: [heap]
    static_configs:
      - {targets: ["127.0.0.1:${fake_port[hang]}"], labels: {kind: hang}}
      - {targets: ["127.0.0.1:${fake_port[500]}"], labels: {kind: err500}}
      - {targets: ["127.0.0.1:${fake_port[garbage]}"], labels: {kind: garbage}}
      - {targets: ["127.0.0.1:${fake_port[huge]}"], labels: {kind: huge}}
      - {targets: ["127.0.0.1:${fake_port[chunked]}"], labels: {kind: chunked}}
      - {targets: ["127.0.0.1:1"], labels: {kind: refused}}
  - job_name: good
    scrape_interval: 1s
    profiles: [heap]
    static_configs:
      - targets: ["127.0.0.1:${fake_port[ok]}"]
EOF
start_server --scrape-config "$tmp/scrape.yaml"

kind_err() { # kind_err KIND: "health|lastError" of the bad target labelled KIND (cached)
	targets_cached "[x['health'] + '|' + x['lastError'] for x in by_job('bad') if x['labels'].get('kind') == '$1'][0]"
}
all_bad_down() {
	[ "$(targets_get 'len(by_job("bad")) == 6 and all(x["health"] == "down" for x in by_job("bad"))')" = True ]
}
good_up() { [ "$(targets_get 'by_job("good")[0]["health"]')" = up ]; }
checkx "every bad target is down (polled up to 30 s)" 'wait_for 30 all_bad_down'
for k in hang err500 garbage huge chunked refused; do
	echo "# $k: $(kind_err $k)"
done
checkx "hang: down, timeout" '[[ "$(kind_err hang)" == "down|heap: timeout after 1.0 s"* ]]'
checkx "500: down, HTTP 500 and the body" '[[ "$(kind_err err500)" == "down|heap: HTTP 500: internal error: the database is on fire" ]]'
checkx "garbage: down, decode error" '[[ "$(kind_err garbage)" == "down|heap: decode: "* ]]'
checkx "1 GiB Content-Length: down, body_size_limit" '[[ "$(kind_err huge)" == *"body exceeds body_size_limit (1048576 bytes"* ]]'
checkx "endless chunked body: down, body_size_limit" '[[ "$(kind_err chunked)" == *"body exceeds body_size_limit (1048576 bytes)"* ]]'
checkx "refused: down, connect" '[[ "$(kind_err refused)" == "down|heap: connect: "* ]]'
hang_dur=$(targets_cached "[x['profiles'][0]['lastScrapeDuration'] for x in by_job('bad') if x['labels']['kind'] == 'hang'][0]")
checkx "hang: the scrape took the timeout (1 s), not longer ($hang_dur s)" \
	"python3 -c 'import sys; sys.exit(not (0.9 <= $hang_dur < 3))'"

# The good target is scraped on time meanwhile.
checkx "good target up" 'wait_for 20 good_up'
# Over 5 s (timed, not assumed): at 1 s a scrape that waited for the hung
# one (1 s timeout every 2 s, plus the huge bodies) would fall to about
# one per 2 s; 5 s leaves a slow tick or two of margin on a loaded machine.
t0=$(date +%s%N)
g0=$(targets_get 'prof(by_job("good")[0], "heap")["scrapes"]')
sleep 5
g1=$(targets_get 'prof(by_job("good")[0], "heap")["scrapes"]')
el=$((($(date +%s%N) - t0) / 1000000))
echo "# good target scrapes: $g0 -> $g1 in $el ms"
check "good target scraped every second while the hang hangs (>= 70 % of $el ms / 1 s, at least 3)" \
	[ $((g1 - g0)) -ge 3 ] && [ $(((g1 - g0) * 1000)) -ge $((el * 7 / 10)) ]
type=$(types | python3 -c 'import json,sys; print([t for t in json.load(sys.stdin) if t.startswith("memory:")][0])')
check "good target's profiles stored ($type)" [ "$(total "$type" '{job="good"}')" -gt 0 ]
check "nothing stored for the bad job" [ "$(total "$type" '{job="bad"}')" = 0 ]

# Bounded: the huge bodies were cut off, the server stayed small.
for k in huge chunked; do
	read -r hits bytes < <(fake_stats $k | python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(d["hits"].values()), d["bytes"])')
	echo "# $k: $hits requests, $bytes bytes sent"
	check "$k: at most 16 MiB sent per request (of 1 GiB)" [ "$bytes" -le $((hits * 16 << 20)) ]
done
hwm=$(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")
echo "# server peak RSS: $((hwm / 1024)) MiB"
check "server peak RSS below 512 MiB" [ "$hwm" -lt $((512 * 1024)) ]

require_alive "while scraping bad targets"
start=$(date +%s%N)
stop_server TERM
ms=$((($(date +%s%N) - start) / 1000000))
echo "# stopped in $ms ms"
check "server stops within 5 s although a scrape hangs (exit 0)" [ "$stop_rc" = 0 ] && [ "$ms" -lt 5000 ]
finish
