#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_scrape_forward.sh - `profd scrape` without a store, into another
# profd server over OTLP/HTTP:
#   - forwarder (--config --forward URL) scraping a static pprof target
#     every second: after SIGTERM (which drains the queue) the receiver
#     holds exactly (scrapes the target saw) x (the profile's total), with
#     the job/instance labels;
#   - --target ... --once: one round, exit 0; with the Go workload (when Go
#     is installed) its CPU profile arrives and main.hotSpin dominates;
#   - file mode (--watch GLOB --server URL --once): each file is sent once;
#     a second run (a restart) sends nothing again, remembering in
#     DATA/scrape-watch.state; a new file and a garbage file: only the new
#     one is sent, the garbage is remembered as bad; totals add up exactly;
#   - the server's own watch_configs ingests files dropped in a directory.
source "$(dirname "$0")/scrape_lib.sh"

mkdir -p "$tmp/serverwatch"
cat >"$tmp/receiver.yaml" <<EOF
watch_configs:
  - job_name: dropbox
    files: ["$tmp/serverwatch/*.pprof"]
    poll_interval: 500ms
    settle: 200ms
EOF
start_server --scrape-config "$tmp/receiver.yaml"
RECV=$base
mk() { # mk NAME VALUE: a pprof file with one stack of that value
	printf 'main;work %s\n' "$2" >"$tmp/mk.folded"
	"$PROFD" convert "$tmp/mk.folded" "$1" >/dev/null 2>&1 || fail "convert $1"
}
T='memory:samples:count::'   # a scraped "heap" of a folded-made profile
F='samples:samples:count::'  # the same profile as a file: named after its sample type

# --- forwarder, continuous ------------------------------------------------------------------
mk "$tmp/static.pb.gz" 7
start_fake "ok:$tmp/static.pb.gz"
S=127.0.0.1:${fake_port[ok]}
cat >"$tmp/fwd.yaml" <<EOF
scrape_configs:
  - job_name: fwd
    scrape_interval: 1s
    profiles: [heap]
    static_configs:
      - targets: ["$S"]
        labels: {via: forwarder}
EOF
"$PROFD" scrape --config "$tmp/fwd.yaml" --forward "$RECV" >"$tmp/fwd.out" 2>"$tmp/log.fwd" &
fwd_pid=$!
extra_pids+=("$fwd_pid")
fwd_stored() { [ "$(total "$T" '{job="fwd"}')" -ge 14 ] 2>/dev/null; }
checkx "forwarded profiles arrive (at least two scrapes, polled up to 20 s)" 'wait_for 20 fwd_stored'
kill -TERM "$fwd_pid"
wait "$fwd_pid"
rc=$?
check "forwarder exits 0 on SIGTERM" [ "$rc" = 0 ]
scrapes=$(curl -s --noproxy '*' "http://$S/__stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["hits"].get("/debug/pprof/heap", 0))')
got=$(total "$T" "{job=\"fwd\",instance=\"$S\",via=\"forwarder\"}")
echo "# target scraped $scrapes times; receiver total $got"
check "receiver total == scrapes x 7 (nothing lost or doubled)" [ "$got" = $((scrapes * 7)) ]
checkx "forwarder log has no sanitizer report" '! grep -q "Sanitizer\|runtime error" "$tmp/log.fwd"'

# --- --target --once ------------------------------------------------------------------------
"$PROFD" scrape --target "$S" --job once --profiles heap --forward "$RECV" --once \
	>"$tmp/once.out" 2>"$tmp/log.once"
rc=$?
check "--target --once: exit 0" [ "$rc" = 0 ]
check "--target --once: one profile of total 7 arrived" [ "$(total "$T" '{job="once"}')" = 7 ]
"$PROFD" scrape --target 127.0.0.1:1 --job downonce --profiles heap --forward "$RECV" --once \
	>"$tmp/down.out" 2>"$tmp/log.down"
check "--once against a dead target: exit 1, says down=1" [ $? = 1 ] && grep -q "down=1" "$tmp/down.out"
if command -v go >/dev/null 2>&1; then
	build_gohot
	start_gohot
	"$PROFD" scrape --target "$gohot_addr" --job gocpu --profiles cpu --interval 2s \
		--forward "$RECV" --once >"$tmp/gocpu.out" 2>"$tmp/log.gocpu"
	check "Go CPU via the forwarder: exit 0" [ $? = 0 ]
	t=$(total "$CPU" "{job=\"gocpu\",instance=\"$gohot_addr\"}")
	hot=$(frame_total main.hotSpin)
	echo "# forwarded CPU total $t, main.hotSpin $hot"
	check "Go CPU via the forwarder: main.hotSpin dominates" [ "$t" -gt 0 ] && [ $((hot * 100 / t)) -gt 60 ]
else
	echo "# go not installed: Go CPU forwarding not checked"
fi

# --- file mode ------------------------------------------------------------------------------
mkdir -p "$tmp/files"
mk "$tmp/files/a.pb.gz" 7
mk "$tmp/files/b.pb.gz" 11
mk "$tmp/files/c.pb.gz" 13
touch -d '-10 seconds' "$tmp/files"/*.pb.gz
watch_once() {
	"$PROFD" scrape --watch "$tmp/files/*.pb.gz" --server "$RECV" --data "$tmp/wdata" \
		--job files --label team=x --once 2>>"$tmp/log.watch"
}
out=$(watch_once)
echo "# $out"
checkx "file mode: three files sent" '[[ "$out" == *"ingested=3 "* ]]'
check "file mode: receiver total 7+11+13" [ "$(total "$F" '{job="files",team="x"}')" = 31 ]
out=$(watch_once)
checkx "file mode again (a restart): nothing sent twice" '[[ "$out" == *"ingested=0 skipped=3 "* ]]'
check "... total unchanged" [ "$(total "$F" '{job="files",team="x"}')" = 31 ]
check "state file in the data dir" [ "$(grep -c '^ok ' "$tmp/wdata/scrape-watch.state")" = 3 ]
mk "$tmp/files/d.pb.gz" 5
cp "$tmp/files/a.pb.gz" "$tmp/files/copy-of-a.pb.gz"
printf 'not a profile\0\1\2' | gzip >"$tmp/files/junk.pb.gz"
touch -d '-10 seconds' "$tmp/files"/*.pb.gz
out=$(watch_once)
echo "# $out"
checkx "new file sent, the copy skipped, garbage recorded as bad" '[[ "$out" == *"ingested=1 skipped=4 unsettled=0 bad=1 "* ]]'
out=$(watch_once)
checkx "garbage not retried" '[[ "$out" == *"ingested=0 skipped=6 unsettled=0 bad=0 "* ]]'
check "receiver total 7+11+13+5" [ "$(total "$F" '{job="files",team="x"}')" = 36 ]

# --- the server's own watch_configs ---------------------------------------------------------
mk "$tmp/serverwatch/one.pprof" 3
mk "$tmp/serverwatch/two.pprof" 4
dropbox() { [ "$(total "$F" '{job="dropbox"}')" = 7 ] 2>/dev/null; }
checkx "server watch_configs: both files ingested (3+4)" 'wait_for 20 dropbox'
check "server state file in its data dir" [ -f "$tmp/data/scrape-watch.state" ]
stop_server TERM
check "receiver stops cleanly" [ "$stop_rc" = 0 ]
if grep -q "Sanitizer\|runtime error" "$tmp"/log.once "$tmp"/log.watch "$tmp"/log.down 2>/dev/null; then
	fail "sanitizer report in a profd scrape log"
fi
finish
