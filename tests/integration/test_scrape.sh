#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_scrape.sh - `profd server --scrape-config` against a real Go 1.19
# program (tests/workloads/gohot: net/http/pprof, a hot function
# main.hotSpin, GET /contend for one burst of mutex contention), scraped
# every 1.5 s:
#   - /api/v1/targets: the target is up, with job/instance/static labels,
#     per-profile health, the CPU URL asks for seconds=1 (1.5 s: whole
#     seconds minus one, at least 1);
#   - its CPU profile is queryable as process_cpu:cpu:nanoseconds:cpu:nanoseconds
#     with {job=..., instance=...}, and main.hotSpin has most of it;
#   - heap is stored as inuse_* only; goroutine is stored;
#   - mutex is a delta taken exactly once: after the first scrape primed
#     it, one burst via /contend is stored with the very contention count
#     Go reports cumulatively for main.contendBurst, in one scrape (two
#     when a scrape fell inside the burst), and later scrapes add nothing;
#   - scrape_configs inside the server's --config, a job's dataset;
#   - a bad scrape config stops the server with file:line: key.
source "$(dirname "$0")/scrape_lib.sh"
build_gohot
start_gohot

# scrape_configs in the server's own --config (scrape/config.h, embedded)
cat >"$tmp/server.yaml" <<EOF
datasets:
  - name: default
  - name: goapps
scrape_configs:
  - job_name: gohot
    scrape_interval: 1500ms
    scrape_timeout: 1s
    profiles: [cpu, heap, mutex, goroutine]
    static_configs:
      - targets: ["$gohot_addr"]
        labels: {env: ci}
  - job_name: embedded
    scrape_interval: 2s
    dataset: goapps
    profiles: [heap]
    static_configs:
      - targets: ["$gohot_addr"]
EOF
start_server --config "$tmp/server.yaml"

gohot_prof() { targets_get "prof(by_job(\"gohot\")[0], \"$1\")[\"$2\"]"; }
target_up() { [ "$(targets_get 'by_job("gohot")[0]["health"]')" = up ]; }
cpu_stored() { [ "$(total "$CPU" "$SEL")" -gt 0 ] 2>/dev/null; }
mutex_primed() { [ "$(gohot_prof mutex primed)" = True ]; }
mutex_scrapes_ge() { [ "$(gohot_prof mutex scrapes)" -ge "$1" ]; }
embedded_stored() {
	[ "$(total memory:inuse_space:bytes:space:bytes '{job="embedded"}' -H "X-Profd-Dataset: goapps")" -gt 0 ] 2>/dev/null
}
SEL="{job=\"gohot\",instance=\"$gohot_addr\",env=\"ci\"}"
checkx "target is up (polled up to 30 s)" 'wait_for 30 target_up'
check "target labels: job, instance, env" \
	[ "$(targets_get 'sorted(by_job("gohot")[0]["labels"].items())')" = "[('env', 'ci'), ('instance', '$gohot_addr'), ('job', 'gohot')]" ]
check "CPU URL takes seconds = whole seconds of 1.5 s - 1, at least 1 = 1" \
	[ "$(targets_get 'prof(by_job("gohot")[0], "cpu")["url"]')" = "http://$gohot_addr/debug/pprof/profile?seconds=1" ]
check "mutex is a delta profile, cpu is not" \
	[ "$(targets_get '(prof(by_job("gohot")[0], "mutex")["delta"], prof(by_job("gohot")[0], "cpu")["delta"])')" = "(True, False)" ]

checkx "CPU profile stored (polled up to 30 s)" 'wait_for 30 cpu_stored'
t=$(total "$CPU" "$SEL")
hot=$(frame_total main.hotSpin)
echo "# cpu total $t ns, main.hotSpin $hot ns"
check "main.hotSpin dominates the CPU profile (> 60%)" [ "$((hot * 100 / (t > 0 ? t : 1)))" -gt 60 ]
check "job selector alone finds it" [ "$(total "$CPU" '{job="gohot"}')" -gt 0 ]
check "another job finds nothing" [ "$(total "$CPU" '{job="other"}')" = 0 ]
check "heap stored as inuse_space (a gauge)" [ "$(total 'memory:inuse_space:bytes:space:bytes' '{job="gohot"}')" -gt 0 ]
types >"$tmp/types.json"
checkx "heap's alloc_* columns are not stored (allocs endpoint not scraped)" '! grep -q alloc_space "$tmp/types.json"'
check "goroutine profile stored" [ "$(total 'goroutine:goroutine:count:goroutine:count' '{job="gohot"}')" -gt 0 ]

# --- mutex: delta exactly once -------------------------------------------------------------
MUTEX='mutex:contentions:count:contentions:count'
checkx "mutex primed by the first scrape" 'wait_for 20 mutex_primed'
curl -s --noproxy '*' "http://$gohot_addr/contend" >/dev/null
after=$(gohot_prof mutex scrapes) # one may have fallen inside the burst
checkx "a mutex scrape after the burst" "wait_for 20 'mutex_scrapes_ge $((after + 1))'"
curl -s --noproxy '*' -o "$tmp/mutex.pb.gz" "http://$gohot_addr/debug/pprof/mutex"
go_total=$("$PROFD" top --json --type contentions -n 0 "$tmp/mutex.pb.gz" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(f["total"] for f in d["top"]["contentions"] if f["function"].startswith("main.contendBurst")))')
stored=$(total "$MUTEX" '{job="gohot"}')
stored_burst=$(frame_total main.contendBurst)
echo "# go cumulative contentions in main.contendBurst: $go_total; stored: $stored_burst (all mutex: $stored)"
check "burst contentions > 0" [ "${go_total:-0}" -gt 0 ]
check "stored burst contentions == Go's cumulative count" [ "$stored_burst" = "$go_total" ]
checkx "two more mutex scrapes" "wait_for 20 'mutex_scrapes_ge $((after + 3))'"
total "$MUTEX" '{job="gohot"}' >/dev/null
check "... which add nothing: the burst is counted once, not once per scrape" \
	[ "$(frame_total main.contendBurst)" = "$go_total" ]
curl -s --noproxy '*' -G -o "$tmp/series.json" --data-urlencode "type=$MUTEX" \
	--data-urlencode 'query={job="gohot"}' --data-urlencode 'from=now-5m' --data-urlencode 'to=now' \
	--data-urlencode 'step=1s' --data-urlencode 'function=main.contendBurst.func1' "$base/api/v1/series"
points=$(python3 -c '
import json,sys
d=json.load(open(sys.argv[1]))
vals=[v for s in d.get("series",[]) for v in s.get("values",[]) if v]
print(len(vals))' "$tmp/series.json")
echo "# non-zero points of the burst's series: $points"
check "the burst is in one scrape (two when a scrape fell inside it), of 4+" \
	[ "$points" -ge 1 ] && [ "$points" -le 2 ]

checkx "embedded scrape_configs: heap stored in dataset goapps" 'wait_for 20 embedded_stored'
check "... and not in the default dataset" \
	[ "$(total memory:inuse_space:bytes:space:bytes '{job="embedded"}')" = 0 ]
stop_server TERM
check "server stops cleanly while scraping (exit 0)" [ "$stop_rc" = 0 ]

# --- bad config -----------------------------------------------------------------------------
printf 'scrape_configs:\n  - job_name: x\n    scrape_interval: 2s\n    scrape_timeout: 5s\n' >"$tmp/bad.yaml"
"$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data2" --scrape-config "$tmp/bad.yaml" \
	>/dev/null 2>"$tmp/log.bad"
rc=$?
check "bad scrape config: exit 1" [ "$rc" = 1 ]
checkx "... naming file, line and key" 'grep -q "bad.yaml:2: scrape_timeout" "$tmp/log.bad"'
finish
