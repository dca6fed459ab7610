#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_node_pyroscope.sh - one service, two sources, one key: a Node
# program profiled by the real Pyroscope Node SDK (@pyroscope/nodejs from
# npm, tests/js/pyroscope_push.mjs: app svc-node, tags env=ci, region=eu)
# pushes to profd's /ingest while `profd agent` samples the same process,
# started with OTEL_SERVICE_NAME=svc-node (the agent's service.name); and
# service other (OTLP, mkotlp) with a per-sample label endpoint. Then:
#   - label_values service.name lists svc-node for the pushed type
#     (wall:cpu) and for the agent's (process_cpu), and for the agent
#     type only data of the Node pid carries it;
#   - {service.name="svc-node"} and {service_name="svc-node"} select the
#     same pushed total (> 0.5 s of CPU) and the same agent total;
#   - through the real MCP client (tests/js/mcp_call.mjs, stdio):
#     label_values service.name with selector {region="eu"} lists only
#     svc-node; list_labels of {service.name="svc-node"} has region and
#     not endpoint (other's per-sample label), that of other has
#     endpoint; label_values endpoint of svc-node has none; a range in
#     2023 lists no service;
#   - hotLoop, where the workload spends its time, has a sensible share
#     of the pushed CPU time (>= 40 %) and of the agent's samples of the
#     process under the program's own frames (>= 40 %).
# No sanitizer report from the agent or `profd mcp` (PROFD, sanitized).
# Needs root, kernel BTF, node and tests/js/node_modules; "skip: <why>"
# otherwise. Hold /tmp/agent.lock (flock) when running it beside others.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
command -v node >/dev/null || skip "node is not installed"
[ -d tests/js/node_modules/@pyroscope/nodejs ] ||
	skip "@pyroscope/nodejs missing (npm ci in tests/js)"
[ -f tests/js/node_modules/@modelcontextprotocol/sdk/package.json ] ||
	skip "@modelcontextprotocol/sdk missing (npm ci in tests/js)"
MKOTLP=${MKOTLP:-$(dirname "$PROFD")/tests/tools/mkotlp}
need_bin "$MKOTLP"
agent_lib_init
CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
WALLCPU='wall:cpu:nanoseconds:wall:nanoseconds'

agent_start_server
agent_start --server "$base" --interval 1s --frequency 99 --include-exe node
echo "ok agent attached"
now_ms=$(($(date +%s) * 1000))
"$MKOTLP" --attr service.name=other --time-ms "$now_ms" \
	--stack 'main;serve=10000000' --sattr endpoint=/orders \
	--stack 'main;gc=10000000' --sattr endpoint=/health "$tmp/other.pb"
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/x-protobuf' \
	--data-binary "@$tmp/other.pb" "$base/v1development/profiles")
[ "$code" = 200 ] || die "OTLP push of service other: HTTP $code"

(cd tests/js && OTEL_SERVICE_NAME=svc-node exec node pyroscope_push.mjs "$base" svc-node 5000) \
	>"$tmp/node.out" 2>&1 &
npid=$!
extra_pids=$npid
wait "$npid" || die "the Node program failed: $(tail -n 3 "$tmp/node.out")"
extra_pids=
grep -q '"done":true' "$tmp/node.out" || die "the workload did not finish: $(tail -n 3 "$tmp/node.out")"
echo "ok the Node program ran 5 s under the SDK and the agent (pid $npid)"
sleep 2 # the agent's last interval
agent_stop

# get VIEW OUT [curl args...]: GET /api/v1/VIEW over the last 10 minutes into OUT.
get() {
	local v=$1 out=$2
	shift 2
	curl -fsG "$base/api/v1/$v" --data-urlencode from=now-10m --data-urlencode to=now "$@" \
		-o "$out" || die "query $v failed"
}
# total TYPE SELECTOR: the flame graph's total (its JSON in $tmp/flame.json).
total() {
	get flamegraph "$tmp/flame.json" --data-urlencode "type=$1" --data-urlencode "query=$2"
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$tmp/flame.json"
}
listed() { python3 -c 'import json,sys; print(" ".join(json.load(open(sys.argv[1]))))' "$1"; }

for t in "$WALLCPU" "$CPU"; do
	get labels/service.name/values "$tmp/lv.json" --data-urlencode "type=$t"
	v=$(listed "$tmp/lv.json")
	case " $v " in
	*" svc-node "*) echo "ok label_values service.name of $t lists svc-node ($v)" ;;
	*) die "label_values service.name of $t: $v (no svc-node)" ;;
	esac
done
get labels/service.name/values "$tmp/lv.json" --data-urlencode "type=$CPU" \
	--data-urlencode "query={process.pid=\"$npid\"}"
v=$(listed "$tmp/lv.json")
[ "$v" = svc-node ] || die "the agent's samples of pid $npid: service.name $v, not svc-node"
echo "ok the agent's samples of the Node pid carry service.name=svc-node"

push_dot=$(total "$WALLCPU" '{service.name="svc-node",region="eu"}')
push_us=$(total "$WALLCPU" '{service_name="svc-node",region="eu"}')
cp "$tmp/flame.json" "$tmp/push_flame.json"
[ "$push_dot" = "$push_us" ] && [ "$push_dot" -gt 500000000 ] ||
	die "pushed CPU: service.name $push_dot ns, service_name $push_us ns"
echo "ok both keys select the pushed data: $push_dot ns of CPU"
agent_dot=$(total "$CPU" "{service.name=\"svc-node\",process.pid=\"$npid\"}")
cp "$tmp/flame.json" "$tmp/agent_flame.json"
agent_us=$(total "$CPU" '{service_name="svc-node"}')
[ "$agent_dot" = "$agent_us" ] && [ "$agent_dot" -gt 0 ] ||
	die "agent CPU: service.name (pid) $agent_dot ns, service_name $agent_us ns"
echo "ok both keys select the agent's data: $agent_dot ns"

# hotLoop's share: of the pushed total; of the agent's samples under the program's own frames
# (the JavaScript of pyroscope_push.mjs, beside node's start-up, GC and the SDK's threads).
read -r push_share agent_share < <(python3 - "$tmp/push_flame.json" "$tmp/agent_flame.json" <<'PY'
import json, sys

def walk(n, above):
    yield n, above
    for c in n.get("children", []):
        yield from walk(c, above + [n["name"]])

def hot(path, under):
    d = json.load(open(path))
    hot = sum(n["total"] for n, above in walk(d["root"], [])
              if "hotLoop" in n["name"] and not any("hotLoop" in a for a in above))
    base = d["total"] if under is None else sum(
        n["total"] for n, above in walk(d["root"], [])
        if under(n["name"]) and not any(under(a) for a in above))
    return round(100 * hot / base) if base else -1  # -1: no frame of the program

print(hot(sys.argv[1], None),
      hot(sys.argv[2], lambda name: "pyroscope_push.mjs" in name or name in ("hotLoop", "allocWork")))
PY
)
[ "$push_share" -ge 40 ] || die "hotLoop is $push_share% of the pushed CPU time (< 40%)"
echo "ok hotLoop is $push_share% of the pushed CPU time"
[ "$agent_share" -ge 40 ] || die "hotLoop is $agent_share% of the agent's samples of the program (< 40%)"
echo "ok hotLoop is $agent_share% of the agent's samples of the program"

# Label discovery through the real MCP client.
from_ms=$(($(date +%s) * 1000 - 600000))
R="\"from\":$from_ms"
timeout 60 node tests/js/mcp_call.mjs "$PROFD" "$base" \
	label_values "{\"name\":\"service.name\",\"query\":\"{region=\\\"eu\\\"}\",\"type\":\"$WALLCPU\",$R}" \
	list_labels "{\"query\":\"{service.name=\\\"svc-node\\\"}\",$R}" \
	list_labels "{\"query\":\"{service_name=\\\"other\\\"}\",$R}" \
	label_values "{\"name\":\"endpoint\",\"query\":\"{service.name=\\\"svc-node\\\"}\",$R}" \
	label_values "{\"name\":\"service.name\",\"from\":1700000000000,\"to\":1700003600000}" \
	>"$tmp/mcp.out" 2>"$tmp/mcp.err" || die "MCP calls failed: $(tail -n 5 "$tmp/mcp.out" "$tmp/mcp.err")"
python3 - "$tmp/mcp.out" <<'PY' || die "MCP label discovery: $(cat "$tmp/mcp.out")"
import re, sys

parts = re.split(r"^=== (\S+)\n", open(sys.argv[1]).read(), flags=re.M)[1:]
ans = [parts[i + 1] for i in range(0, len(parts), 2)]
items = lambda t: set(re.findall(r"^- (\S+)", t, re.M))
lv_eu, ll_node, ll_other, lv_ep, lv_old = ans
assert items(lv_eu) == {"svc-node"}, lv_eu
assert "region" in items(ll_node) and "service.name" in items(ll_node), ll_node
assert "endpoint" not in items(ll_node), ll_node
assert "endpoint" in items(ll_other), ll_other
assert not items(lv_ep), lv_ep
assert not items(lv_old), lv_old
PY
echo "ok MCP list_labels / label_values honour the selector and the range"
if grep -l "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$tmp/agent.log" "$tmp/mcp.err" >/dev/null 2>&1; then
	die "a sanitizer report from the agent or profd mcp"
fi
echo "ok no sanitizer report from the agent or profd mcp"
