#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_scrape_sd.sh - file-based discovery (file_sd_configs) and
# relabeling, with static pprof targets (scrape_fake_target.py), no restart:
#   - no target file yet: no targets;
#   - a JSON file naming target A: A is scraped within seconds, its
#     profiles carry the file's labels and a label relabeled from
#     __meta_filepath;
#   - a YAML file with B and C, C labelled drop=yes: B is scraped, C is
#     listed under droppedTargets (relabel action drop), not scraped;
#   - A removed from its file: A is no longer scraped (its hit count stops);
#   - a broken target file keeps the last good targets; the YAML file
#     deleted: B stops;
#   - a job with 5 static targets and target_limit 2: the first 2 are its
#     targets, and one log line (not one per target) counts the 3 ignored.
source "$(dirname "$0")/scrape_lib.sh"

printf 'main;work 7\n' >"$tmp/p.folded"
"$PROFD" convert "$tmp/p.folded" "$tmp/p.pb.gz" >/dev/null 2>&1 || { fail "convert"; exit 1; }
start_fake "ok:$tmp/p.pb.gz"
A=127.0.0.1:${fake_port[ok]}
start_fake "ok:$tmp/p.pb.gz"
B=127.0.0.1:${fake_port[ok]}
start_fake "ok:$tmp/p.pb.gz"
C=127.0.0.1:${fake_port[ok]}
hits() { # hits HOST:PORT: requests the fake at that address got
	curl -s --noproxy '*' "http://$1/__stats" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["hits"].values()))'
}

mkdir -p "$tmp/sd"
cat >"$tmp/scrape.yaml" <<EOF
scrape_configs:
  - job_name: sd
    scrape_interval: 1s
    profiles: [heap]
    file_sd_configs:
      - files: ["sd/*.json", "sd/*.yaml"]
    relabel_configs:
      - source_labels: [drop]
        regex: "yes"
        action: drop
      - source_labels: [__meta_filepath]
        regex: ".*/([^/]+)"
        target_label: sd_file
  - job_name: capped
    scrape_interval: 60s
    profiles: [heap]
    target_limit: 2
    static_configs:
      - targets: ["127.0.0.1:1", "127.0.0.1:2", "127.0.0.1:3", "127.0.0.1:4", "127.0.0.1:5"]
EOF
put() { # put FILE CONTENT: replace a target file atomically, as deploy tools do
	printf '%s\n' "$2" >"$tmp/sd/.tmp" && mv "$tmp/sd/.tmp" "$tmp/sd/$1"
}
start_server --scrape-config "$tmp/scrape.yaml"

active() { targets_get '" ".join(sorted(x["labels"]["instance"] for x in by_job("sd")))'; }
sorted() { printf '%s\n' "$@" | LC_ALL=C sort | xargs; }
is_active() { [ "$(active)" = "$(sorted $1)" ]; }
check "no target file: no targets" [ -z "$(active)" ]
capped() { targets_get '" ".join(sorted(x["labels"]["instance"] for x in by_job("capped")))'; }
checkx "target_limit 2 of 5 static targets: the first two are the targets" \
	"wait_for 20 '[ \"\$(capped)\" = \"127.0.0.1:1 127.0.0.1:2\" ]'"
check "... and one log line says 3 are ignored (not one line per target)" \
	[ "$(grep -c 'job=capped: more than target_limit=2' "$tmp/log.$n")/$(grep -c 'ignoring 3 of them, the first 127.0.0.1:3' "$tmp/log.$n")" = 1/1 ]

put a.json "[{\"targets\": [\"$A\"], \"labels\": {\"team\": \"a\"}}]"
checkx "A added to a.json: scraped (polled up to 20 s)" "wait_for 20 'is_active \"$A\"'"
type_of() { types | python3 -c 'import json,sys; print([t for t in json.load(sys.stdin) if t.startswith("memory:")][0])' 2>/dev/null; }
stored_a() { t=$(type_of) && [ "$(total "$t" "{instance=\"$A\",team=\"a\",sd_file=\"a.json\"}")" -gt 0 ] 2>/dev/null; }
checkx "A's profiles stored with the file's label and sd_file=a.json" 'wait_for 20 stored_a'

put b.yaml "- targets: [\"$B\"]
- targets: [\"$C\"]
  labels: {drop: \"yes\"}"
checkx "b.yaml: B scraped too" "wait_for 20 'is_active \"$A $B\"'"
check "C dropped by relabeling, listed under droppedTargets" \
	[ "$(targets_get '[x["discoveredLabels"]["__address__"] for x in t["data"]["droppedTargets"]]')" = "['$C']" ]
check "C never scraped" [ "$(hits "$C")" = 0 ]

put a.json "[]"
checkx "A removed from a.json: no longer a target" "wait_for 20 'is_active \"$B\"'"
h0=$(hits "$A")
sleep 1.5
h1=$(hits "$A")
check "A no longer scraped ($h0 -> $h1 requests in 1.5 s)" [ "$h0" = "$h1" ]

put a.json "[{\"targets\": [\"$A\"]}]"
checkx "A back" "wait_for 20 'is_active \"$A $B\"'"
put a.json '[{"targets": ["no-port"]}]'
# The log line shows the server has read the broken file; only then does
# "targets unchanged" say something (a fixed sleep could check too early).
logged_broken() { grep -q "a.json: group 0: targets\[0\]" "$tmp/log.$n"; }
checkx "a broken a.json: the server logs why" 'wait_for 20 logged_broken'
check "... and keeps its last good targets" [ "$(active)" = "$(sorted $A $B)" ]
rm "$tmp/sd/b.yaml"
checkx "b.yaml deleted: B stops" "wait_for 20 'is_active \"$A\"'"
require_alive "after the target file changes"
stop_server TERM
check "server stops cleanly (exit 0)" [ "$stop_rc" = 0 ]
finish
