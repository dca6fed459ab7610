#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_pyroscope_node.sh - the real Pyroscope Node SDK
# (@pyroscope/nodejs from npm, tests/js/pyroscope_push.mjs) profiles a
# Node workload for 4 s and pushes to profd's /ingest, unchanged, with a
# bearer token:
#   - CPU: the SDK's wall profiler with collectCpuTime sends
#     wall:cpu:nanoseconds:wall:nanoseconds (Pyroscope names the profile
#     "wall" when a wall sample type is present) with the workload's
#     hotLoop in it, queryable with every label it sent (service_name,
#     env, region, pyroscope_spy=nodespy);
#   - heap: memory:inuse_space:bytes with allocWork in it;
#   - the access log shows the pushes under the token's name.
# Needs node and tests/js/node_modules (npm ci in tests/js); skipped
# without them.
source "$(dirname "$0")/ingest_lib.sh"

if ! command -v node >/dev/null || [ ! -d tests/js/node_modules/@pyroscope/nodejs ]; then
	skip "node or @pyroscope/nodejs missing (npm ci in tests/js)"
fi
TOKEN=node-token-0123456789abcdef
cat >"$tmp/profd.yaml" <<EOF
datasets: [{name: apps}]
tokens:
  - {name: node-sdk, secret: $TOKEN, permissions: [ingest, query], datasets: [apps]}
EOF
start_server --config "$tmp/profd.yaml"
H="Authorization: Bearer $TOKEN"

(cd tests/js && timeout 60 node pyroscope_push.mjs "$base" node-shop 4000 "$TOKEN") >"$tmp/node.out" 2>&1
check "the workload ran to the end ($(tail -n 1 "$tmp/node.out"))" grep -q '"done":true' "$tmp/node.out"
pushes=$(grep -c 'path=/ingest status=200.*token=node-sdk' "$tmp/log.1")
checkx "the SDK pushed at least 4 profiles, all 200 ($pushes)" '[ "$pushes" -ge 4 ] && ! grep -q "path=/ingest status=[45]" "$tmp/log.1"'
types -H "$H" >"$tmp/types.json"
echo "  types: $(cat "$tmp/types.json")"
WALLCPU='wall:cpu:nanoseconds:wall:nanoseconds'
t=$(total "$WALLCPU" '{service_name="node-shop",env="ci",region="eu",pyroscope_spy="nodespy"}' -H "$H")
checkx "CPU time queryable with the labels the SDK sent ($t ns)" '[ "${t%% *}" != error ] && [ "$t" -gt 500000000 ]'
checkx "hotLoop is in the CPU flame graph" 'has_frame hotLoop'
hot=$(python3 - "$tmp/flame.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
best, stack = 0, [d["root"]]
while stack:
    n = stack.pop()
    if "hotLoop" in n["name"]:
        best = max(best, n["total"])
    stack.extend(n.get("children", []))
print(round(100 * best / max(d["total"], 1)))
PY
)
checkx "hotLoop has a real share of the CPU time ($hot%, >= 10%)" '[ "$hot" -ge 10 ]'
t=$(total 'memory:inuse_space:bytes:inuse_space:bytes' '{service_name="node-shop",env="ci"}' -H "$H")
checkx "heap profile queryable ($t bytes in use)" '[ "${t%% *}" != error ] && [ "$t" -gt 0 ]'
checkx "allocWork is in the heap flame graph" 'has_frame allocWork'
t=$(total "$WALLCPU" '{service_name="node-shop"}' -H "Authorization: Bearer wrong")
check "a wrong token cannot read it" [ "$t" = "error 401" ]
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
