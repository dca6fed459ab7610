#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_otlp.sh - OTLP ingest beyond protobuf over HTTP:
#   - OTLP/HTTP JSON from curl (docs/formats.md "OTLP/JSON": camelCase, 64-bit ints as
#     strings, snake_case accepted too) -> 200 with "{}" as JSON; stored
#     totals; malformed JSON -> 400 with a JSON google.rpc.Status naming
#     the line and column; gzip JSON; the second OTLP/HTTP port
#     (--otlp-http-listen) takes the same requests;
#   - OTLP/gRPC from a client that is not ours (@grpc/grpc-js + protobufjs
#     with our .proto files, tests/js/otlp_grpc_export.mjs) over h2c:
#     plain and grpc-encoding gzip -> OK and stored; a bad stack index ->
#     INVALID_ARGUMENT; another method -> UNIMPLEMENTED; with tokens:
#     none -> UNAUTHENTICATED, wrong dataset -> PERMISSION_DENIED; a
#     message over max_body -> RESOURCE_EXHAUSTED; the server keeps serving.
# The gRPC part needs node and tests/js/node_modules (npm ci in tests/js).
source "$(dirname "$0")/ingest_lib.sh"

TOKEN=otlp-token-0123456789abcdef
cat >"$tmp/profd.yaml" <<EOF
datasets:
  - name: default
  - name: other
tokens:
  - name: agent
    secret: $TOKEN
    permissions: [ingest, query, metrics]
    datasets: [default]
limits:
  max_body: 1MiB
EOF
start_server --config "$tmp/profd.yaml" --otlp-http-listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0
H="Authorization: Bearer $TOKEN"

cat >"$tmp/req.json" <<'EOF'
{
  "resourceProfiles": [{
    "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "json-app"}},
                                {"key": "host.name", "value": {"stringValue": "h1"}}]},
    "scopeProfiles": [{
      "scope": {"name": "curl"},
      "profiles": [{
        "sampleType": {"typeStrindex": 1, "unitStrindex": 2},
        "periodType": {"typeStrindex": 1, "unitStrindex": 2},
        "period": "10000000",
        "samples": [
          {"stackIndex": 1, "values": ["40000000"]},
          {"stackIndex": 2, "values": [60000000]}
        ]
      }]
    }]
  }],
  "dictionary": {
    "stringTable": ["", "cpu", "nanoseconds", "main", "encode", "decode"],
    "functionTable": [{}, {"nameStrindex": 3}, {"nameStrindex": 4}, {"name_strindex": 5}],
    "locationTable": [{}, {"lines": [{"functionIndex": 1}]}, {"lines": [{"functionIndex": 2}]},
                      {"lines": [{"functionIndex": 3}]}],
    "stackTable": [{}, {"locationIndices": [2, 1]}, {"locationIndices": [3, 1]}]
  }
}
EOF
CT=application/json otlp "$tmp/req.json" -H "$H"
checkx "OTLP/HTTP JSON from curl -> 200 with {} as application/json" \
	'[ "$code" = 200 ] && [ "$(cat "$tmp/body")" = "{}" ] && header_has "Content-Type: application/json"'
check "JSON request stored: 100 ms of CPU" [ "$(total "$CPU" '{service.name="json-app",host.name="h1"}' -H "$H")" = 100000000 ]
checkx "JSON stacks are there" 'has_frame encode && has_frame decode'
gzip -c "$tmp/req.json" >"$tmp/req.json.gz"
CT=application/json otlp "$tmp/req.json.gz" -H "$H" -H 'Content-Encoding: gzip'
check "gzip OTLP/JSON -> 200" [ "$code" = 200 ]
check "now 200 ms stored" [ "$(total "$CPU" '{service.name="json-app"}' -H "$H")" = 200000000 ]
printf '{"resourceProfiles": [ {"scopeProfiles": 12, }' >"$tmp/bad.json"
CT=application/json otlp "$tmp/bad.json" -H "$H"
checkx "malformed JSON -> 400 with a JSON Status naming line:column" \
	'[ "$code" = 400 ] && body_has "\"code\":3" && body_has "otlp-json: line 1:"'
echo "  $(cat "$tmp/body")"
printf '{"resourceProfiles":[{"scopeProfiles":[{"profiles":[{"samples":[{"stackIndex":7,"values":["1"]}]}]}]}],"dictionary":{"stringTable":[""],"stackTable":[{}]}}' >"$tmp/badidx.json"
CT=application/json otlp "$tmp/badidx.json" -H "$H"
checkx "JSON with a stack index out of range -> 400 naming it" \
	'[ "$code" = 400 ] && body_has "stack_index 7 out of range"'
CT=application/json otlp "$tmp/req.json"
checkx "JSON without a token -> 401 as JSON" '[ "$code" = 401 ] && body_has "\"code\":16"'

# The OTLP/HTTP port (--otlp-http-listen).
code=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST -H "$H" \
	-H 'Content-Type: application/json' --data-binary "@$tmp/req.json" \
	"http://127.0.0.1:$otlp_port/v1development/profiles")
check "OTLP/HTTP port $otlp_port -> 200" [ "$code" = 200 ]
check "stored through the second port too: 300 ms" [ "$(total "$CPU" '{service.name="json-app"}' -H "$H")" = 300000000 ]

# --- OTLP/gRPC with @grpc/grpc-js ---------------------------------------------------------------------
if command -v node >/dev/null && [ -d tests/js/node_modules/@grpc/grpc-js ]; then
	grpc() { timeout 60 node tests/js/otlp_grpc_export.mjs "127.0.0.1:$grpc_port" "$@" 2>&1; }
	out=$(grpc ok "$TOKEN")
	checkx "gRPC Export -> OK ($out)" '[ "$(echo "$out" | python3 -c "import json,sys; print(json.load(sys.stdin)[\"code\"])")" = 0 ]'
	out=$(grpc gzip "$TOKEN")
	checkx "gRPC Export with grpc-encoding gzip -> OK" 'echo "$out" | grep -q "\"code\":0"'
	check "both gRPC exports stored: 200 ns (70+30 twice)" \
		[ "$(total "$CPU" '{service.name="grpc-app"}' -H "$H")" = 200 ]
	checkx "gRPC stacks are there" 'has_frame work && has_frame idle'
	out=$(grpc bad "$TOKEN")
	checkx "gRPC bad stack index -> INVALID_ARGUMENT (3) naming it" \
		'echo "$out" | grep -q "\"code\":3" && echo "$out" | grep -q "out of range"'
	out=$(grpc unknown "$TOKEN")
	checkx "gRPC unknown method -> UNIMPLEMENTED (12)" 'echo "$out" | grep -q "\"code\":12"'
	out=$(grpc ok)
	checkx "gRPC without a token -> UNAUTHENTICATED (16)" 'echo "$out" | grep -q "\"code\":16"'
	out=$(grpc ok wrong-token-000)
	checkx "gRPC with a wrong token -> UNAUTHENTICATED (16)" 'echo "$out" | grep -q "\"code\":16"'
	out=$(grpc ok "$TOKEN" other)
	checkx "gRPC into a dataset the token lacks -> PERMISSION_DENIED (7)" \
		'echo "$out" | grep -q "\"code\":7" && echo "$out" | grep -q "no access to dataset"'
	out=$(grpc big "$TOKEN")
	checkx "gRPC message over max_body (1 MiB) -> RESOURCE_EXHAUSTED (8) naming the limit" \
		'echo "$out" | grep -q "\"code\":8" && echo "$out" | grep -q "max_body"'
	check "nothing more stored by the refused calls" \
		[ "$(total "$CPU" '{service.name="grpc-app"}' -H "$H")" = 200 ]
	req GET /metrics -H "$H"
	checkx "metrics count gRPC calls by status" \
		'body_has "profd_grpc_requests_total{method=\"Export\",grpc_status=\"0\"} 2" && body_has "grpc_status=\"16\"} 2"'
else
	echo "skip: gRPC part (node or tests/js/node_modules missing; run npm ci in tests/js)"
fi

require_alive "after the OTLP tests"
req GET /healthz
check "server still serving" [ "$code" = 200 ]
stop_server TERM
check "SIGTERM stops cleanly with the gRPC listener" [ "$stop_rc" = 0 ]
finish
