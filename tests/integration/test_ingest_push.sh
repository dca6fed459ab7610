#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_push.sh - Pyroscope's Connect push API,
# POST /push.v1.PusherService/Push (server/pyroscope.c, format/push.h):
#   - a client that is not ours (tests/js/pyroscope_connect_push.mjs:
#     protobufjs from our .proto files, fetch over HTTP/1.1, Connect
#     unary) pushes a gzipped pprof (main;work 70 + main;idle 30) as
#     application/proto and as application/json: 200 with the empty
#     PushResponse in the request's encoding, and the data is queryable
#     under process_cpu with the labels it sent (service_name, env), 100
#     per push;
#   - no token -> Connect unauthenticated (401, JSON code), a body that is
#     not a PushRequest -> invalid_argument (400) naming the byte, a bad
#     base64 rawProfile -> invalid_argument naming the field, a raw
#     profile that is not pprof -> invalid_argument naming
#     series[0].samples[0], an unsupported Content-Type -> 415; nothing
#     is stored by the refused requests.
# Needs node and tests/js/node_modules (npm ci in tests/js); skipped
# without them.
source "$(dirname "$0")/ingest_lib.sh"

if ! command -v node >/dev/null || [ ! -d tests/js/node_modules/protobufjs ]; then
	skip "node or protobufjs missing (npm ci in tests/js)"
fi
TOKEN=push-token-0123456789abcdef
cat >"$tmp/profd.yaml" <<EOF2
datasets: [{name: apps}]
tokens:
  - {name: alloy, secret: $TOKEN, permissions: [ingest, query], datasets: [apps]}
EOF2
start_server --config "$tmp/profd.yaml"
H="Authorization: Bearer $TOKEN"
push() { (cd tests/js && timeout 30 node pyroscope_connect_push.mjs "$base" "$@") 2>&1 | tail -n 1; }
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1]).get(sys.argv[2]))' "$1" "$2" 2>/dev/null; }

out=$(push proto connect-app "$TOKEN")
checkx "protobuf push -> 200 application/proto, empty body ($out)" \
	'[ "$(field "$out" status)" = 200 ] && [ "$(field "$out" contentType)" = application/proto ] && [ -z "$(field "$out" body)" ]'
check "stored under process_cpu with service_name and env: 100" \
	[ "$(total "$CPU" '{service_name="connect-app",env="connect"}' -H "$H")" = 100 ]
checkx "the stacks are there" 'has_frame work && has_frame idle'
out=$(push json connect-app "$TOKEN")
checkx "JSON push -> 200 application/json {} ($out)" \
	'[ "$(field "$out" status)" = 200 ] && [ "$(field "$out" contentType)" = application/json ] && [ "$(field "$out" body)" = "{}" ]'
check "both pushes stored: 200" [ "$(total "$CPU" '{service_name="connect-app"}' -H "$H")" = 200 ]

out=$(push proto connect-app)
checkx "no token -> 401 Connect unauthenticated" \
	'[ "$(field "$out" status)" = 401 ] && field "$out" body | grep -q "\"code\":\"unauthenticated\""'
P=/push.v1.PusherService/Push
req POST $P -H "$H" -H 'Content-Type: application/proto' --data-binary $'\x0a\x05\x12\x03'
checkx "a truncated PushRequest -> 400 invalid_argument naming the byte" \
	'[ "$code" = 400 ] && body_has "\"code\":\"invalid_argument\"" && body_has "byte"'
req POST $P -H "$H" -H 'Content-Type: application/json' \
	--data '{"series":[{"labels":[{"name":"service_name","value":"x"}],"samples":[{"rawProfile":"!!"}]}]}'
checkx "bad base64 -> 400 naming series[0].samples[0].rawProfile" \
	'[ "$code" = 400 ] && body_has "series\[0\].samples\[0\].rawProfile: not base64"'
req POST $P -H "$H" -H 'Content-Type: application/json' \
	--data '{"series":[{"labels":[{"name":"service_name","value":"x"}],"samples":[{"rawProfile":"aGVsbG8gd29ybGQ="}]}]}'
checkx "a raw profile that is not pprof -> 400 naming series[0].samples[0]" \
	'[ "$code" = 400 ] && body_has "series\[0\].samples\[0\].raw_profile"'
req POST $P -H "$H" -H 'Content-Type: text/plain' --data 'x'
check "text/plain -> 415" [ "$code" = 415 ]
check "nothing stored by the refused pushes" \
	[ "$(total "$CPU" '{service_name="x"}' -H "$H")" = 0 ]
require_alive "after the push tests"
stop_server TERM
finish
