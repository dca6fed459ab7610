#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# scrape_lib.sh - helpers shared by tests/integration/test_scrape*.sh
# (sourced, not run), on top of ingest_lib.sh (server, ok/fail, HTTP,
# flame graph totals, the sanitizer check):
#   build_gohot      build tests/workloads/gohot offline with Go (standard
#                    library only; GOCACHE/GOPATH in a temp dir kept per
#                    source hash, so later tests reuse the binary); skips
#                    the test when Go is not installed;
#   start_gohot      run it; sets gohot_addr (host:port);
#   start_fake MODE...  scrape_fake_target.py; sets fake_port[MODE];
#   targets_get PY_EXPR  evaluate PY_EXPR over /api/v1/targets (t = the
#                    parsed JSON, act = activeTargets, by_job(j), prof(tgt, name));
#   targets_cached PY_EXPR  the same over the answer targets_get last fetched;
#   spawn CMD...     run CMD in the background and kill it at exit.
source "$(dirname "${BASH_SOURCE[0]}")/ingest_lib.sh"

declare -a extra_pids=()
declare -A fake_port=()
# At exit, before the server goes (lib.sh runs the hooks in order).
scrape_lib_exit() {
	local p
	for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
}
lib_exit_hooks=(scrape_lib_exit "${lib_exit_hooks[@]}")

spawn() {
	"$@" &
	extra_pids+=("$!")
	last_pid=$!
}

build_gohot() {
	if ! command -v go >/dev/null 2>&1; then
		skip "go is not installed"
	fi
	local src=tests/workloads/gohot/main.go key dir
	key=$(sha256sum "$src" | cut -c1-12)
	dir=${TMPDIR:-/tmp}/profd-gohot-$key
	GOHOT=$dir/gohot
	[ -x "$GOHOT" ] && return 0
	mkdir -p "$dir"
	if ! GOCACHE=$dir/cache GOPATH=$dir/gopath GOFLAGS= GOPROXY=off GO111MODULE=on \
		go build -o "$dir/gohot.tmp" "$src" >"$tmp/gobuild.log" 2>&1; then
		die "go build gohot: $(tail -n 5 "$tmp/gobuild.log")"
	fi
	mv "$dir/gohot.tmp" "$GOHOT"
}

start_gohot() {
	n=$((n + 1))
	spawn "$GOHOT" >"$tmp/gohot.$n" 2>&1
	gohot_pid=$last_pid
	gohot_addr=
	wait_for 10 'gohot_addr=$(sed -n "s/^listening on //p" "$tmp/gohot.$n"); [ -n "$gohot_addr" ]' ||
		die "gohot did not start"
}

start_fake() {
	n=$((n + 1))
	spawn python3 "$PROFD_ROOT_DIR/tests/integration/scrape_fake_target.py" "$@" >"$tmp/fake.$n" 2>&1
	local line=
	wait_for 10 'line=$(head -n 1 "$tmp/fake.$n"); [ -n "$line" ]' ||
		die "fake target did not start: $(cat "$tmp/fake.$n")"
	local m
	for m in $(python3 -c 'import json,sys; d=json.loads(sys.argv[1]); print(" ".join(f"{k}={v}" for k,v in d.items()))' "$line"); do
		fake_port[${m%%=*}]=${m#*=}
	done
}

# fake_stats MODE: the /__stats JSON of that fake port.
fake_stats() {
	curl -s --noproxy '*' "http://127.0.0.1:${fake_port[$1]}/__stats"
}

targets_get() {
	curl -s --noproxy '*' "$base/api/v1/targets" >"$tmp/targets.json"
	targets_cached "$1"
}
# targets_cached PY_EXPR: the same over the answer the last targets_get fetched.
targets_cached() {
	python3 - "$tmp/targets.json" "$1" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
act = t["data"]["activeTargets"]
def by_job(j):
    return [x for x in act if x["scrapePool"] == j]
def prof(tgt, name):
    return [p for p in tgt["profiles"] if p["name"] == name][0]
print(eval(sys.argv[2]))
PY
}


# frame_total NAME: the summed totals of the outermost flame graph nodes
# whose name contains NAME, from the last total() call ($tmp/flame.json).
frame_total() {
	python3 - "$tmp/flame.json" "$1" <<'PY'
import json, sys
root = json.load(open(sys.argv[1]))["root"]
tot = 0
stack = [root]
while stack:
    n = stack.pop()
    if sys.argv[2] in n["name"]:
        tot += n["total"]
        continue
    stack.extend(n.get("children", []))
print(tot)
PY
}

PROFD_ROOT_DIR=$PWD
