#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_grpc.sh - the agent exports over OTLP/gRPC (--server
# grpc://HOST:PORT, HTTP/2 without TLS) to `profd server --grpc-listen`:
# the profiles of tests/workloads/spin.c arrive (hot_a and hot_b in the
# flame graph, about 70/30), the agent's /metrics count the requests as
# sent; and the token goes along as metadata: a server with a token
# config accepts the right one and answers UNAUTHENTICATED (16) to a wrong
# one, which the agent drops as not retryable. Needs root and kernel BTF.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init

${CC:-cc} -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
	-fno-optimize-sibling-calls -fno-inline -o "$tmp/spin" tests/workloads/spin.c ||
	die "cannot build spin.c"

hport=$(free_port)
gport=$(free_port)
base="http://127.0.0.1:$hport"
"$PROFD_FAST" server --listen "127.0.0.1:$hport" --grpc-listen "127.0.0.1:$gport" \
	--data "$tmp/data" --symbol-path / >>"$tmp/server.log" 2>&1 &
server_pid=$!
# Up to 30 s on a loaded machine.
wait_for 30 'curl -fs "$base/api/v1/profile-types" >/dev/null 2>&1' || true
mport=$(free_port)
# 99 Hz, and spin runs on past 3 s until it has used 2 s of CPU (~200
# samples): on a loaded machine spin may get a third of a core or less,
# and the 70/30 share needs some 100 samples to be steady (sd of the share
# sqrt(0.21 / n): 3.3 points at 200 samples, the window is +-15).
agent_start --server "grpc://127.0.0.1:$gport" --interval 500ms --frequency 99 --include-exe spin \
	--metrics-listen "127.0.0.1:$mport"
SPIN_CPU_SECONDS=2 "$tmp/spin" 3 >/dev/null
sleep 1
sent=$(agent_metric "$mport" 'profd_agent_export_sent_total')
agent_stop
grep -q "rejected\|export failed" "$tmp/agent.log" && die "gRPC export errors: $(grep -m1 'rejected\|failed' "$tmp/agent.log")"
[ "${sent%.*}" -gt 0 ] || die "agent /metrics: no request sent over gRPC ($sent)"
grep -q "debuginfo upload is off: a grpc:// server" "$tmp/agent.log" ||
	die "a grpc:// server without --debuginfo-server must turn debuginfo upload off, saying so"
echo "ok agent sent $sent OTLP/gRPC requests, none rejected"

agent_flame "process_cpu:samples:count:cpu:nanoseconds" '{process.executable.name="spin"}' "$tmp/fg.json"
python3 - "$tmp/fg.json" <<'PY' || die "flame graph of the gRPC-exported profiles"
import json, sys
fg = json.load(open(sys.argv[1]))
tot = {}
def walk(n):
    tot[n["name"]] = tot.get(n["name"], 0) + n.get("total", 0)
    for c in n.get("children", []):
        walk(c)
walk(fg["root"] if "root" in fg else fg)
a, b = tot.get("hot_a", 0), tot.get("hot_b", 0)
if a + b < 20:
    sys.exit(f"too few samples of hot_a/hot_b: {a}, {b}")
share = 100 * a / (a + b)
if not 55 <= share <= 85:
    sys.exit(f"hot_a share {share:.0f} % (want 70 +- 15)")
print(f"ok spin's profiles arrived over gRPC: hot_a {share:.0f} % of hot_a+hot_b ({a + b} samples)")
PY

# --- tokens as gRPC metadata
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
cat >"$tmp/profd.yaml" <<YAML
datasets:
  - name: team
tokens:
  - {name: agents, secret_env: GRPC_TEST_TOKEN, permissions: [ingest, query], datasets: [team], default_dataset: team}
YAML
GRPC_TEST_TOKEN=s3cret-$RANDOM
export GRPC_TEST_TOKEN
"$PROFD_FAST" server --listen "127.0.0.1:$hport" --grpc-listen "127.0.0.1:$gport" \
	--config "$tmp/profd.yaml" --data "$tmp/data2" --symbol-path / >>"$tmp/server.log" 2>&1 &
server_pid=$!
wait_for 30 'curl -fs -H "Authorization: Bearer $GRPC_TEST_TOKEN" "$base/api/v1/profile-types" >/dev/null 2>&1' ||
	true
printf '%s\n' "$GRPC_TEST_TOKEN" >"$tmp/token.ok"
printf 'wrong-token\n' >"$tmp/token.bad"
agent_start --server "grpc://127.0.0.1:$gport" --no-upload-debuginfo --interval 500ms \
	--include-exe spin --bearer-token-file "$tmp/token.ok"
# At least 1 s of spin's CPU (~19 samples at the default 19 Hz): with only
# its 1.5 s of wall time a loaded machine gave it as few as 2 samples, and
# none would fail the check below by chance.
SPIN_CPU_SECONDS=1 "$tmp/spin" 1.5 >/dev/null
agent_stop
grep -q "rejected\|export failed" "$tmp/agent.log" && die "gRPC export with the right token: $(grep -m1 'rejected\|failed' "$tmp/agent.log")"
grep -q "$GRPC_TEST_TOKEN" "$tmp/agent.log" "$tmp/server.log" && die "the token shows in a log"
n=$(curl -fsG -H "Authorization: Bearer $GRPC_TEST_TOKEN" "$base/api/v1/flamegraph" \
	--data-urlencode "type=process_cpu:samples:count:cpu:nanoseconds" \
	--data-urlencode 'query={process.executable.name="spin"}' --data-urlencode from=now-10m \
	--data-urlencode to=now | python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
[ "${n:-0}" -gt 0 ] || die "no spin samples in dataset team after a gRPC export with the token"
echo "ok the right token as gRPC metadata: $n samples in dataset team"
agent_start --server "grpc://127.0.0.1:$gport" --no-upload-debuginfo --interval 500ms \
	--include-exe spin --bearer-token-file "$tmp/token.bad"
SPIN_CPU_SECONDS=1 "$tmp/spin" 1.5 >/dev/null
agent_stop
grep -q "grpc-status=16 action=drop" "$tmp/agent.log" ||
	die "a wrong token: no UNAUTHENTICATED drop in the agent log: $(grep -m1 'rejected' "$tmp/agent.log")"
echo "ok a wrong token: UNAUTHENTICATED, dropped without retrying"
