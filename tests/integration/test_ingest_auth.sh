#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_auth.sh - datasets, tokens and signal control with a config
# file (server/config.h, tenant.h, rules.h, usage.h):
#   - no token / a wrong token -> 401 with WWW-Authenticate, for ingest
#     and for queries; a token without the permission or the dataset ->
#     403; an unknown dataset -> 404 for a wildcard token;
#   - data ingested into dataset a is never visible through dataset b
#     (flame graph totals, profile types), whichever token asks;
#   - the dataset is picked by X-Profd-Dataset, ?dataset= or the token's
#     default; Basic auth (Pyroscope SDKs) works with the secret as password;
#   - signal control: a drop rule, keep fraction 0 and drop_below remove
#     what they should, the answer carries partial_success, the usage API
#     counts received/accepted/dropped per type, and the counts survive a
#     restart (the usage file);
#   - GET /metrics needs a token with the metrics permission (401 without,
#     403 for an ingest/query token) and then counts what dataset a got;
#   - secrets never appear in the server log;
#   - without a config the server refuses a non-loopback listen address.
source "$(dirname "$0")/ingest_lib.sh"

A_ING=ingest-a-0123456789abcdef
A_READ=read-a-0123456789abcdef
ALL=all-0123456789abcdef
PROM=prom-0123456789abcdef
cat >"$tmp/profd.yaml" <<EOF
datasets:
  - name: a
    retention: 7d
    rules:
      - action: drop
        selector: '{service.name="noisy"}'
      - action: keep
        fraction: 0
        selector: '{service.name="sampled-out"}'
      - action: drop_below
        value: 50
        selector: '{service.name="small"}'
  - name: b
tokens:
  - name: ingest-a
    secret: $A_ING
    permissions: [ingest]
    datasets: [a]
  - name: read-a
    secret_env: PROFD_TEST_READ_A
    permissions: [query]
    datasets: [a]
  - name: all
    secret: $ALL
    permissions: [ingest, query]
    datasets: ['*']
    default_dataset: b
  - name: prom
    secret: $PROM
    permissions: [metrics]
    datasets: ['*']
EOF
export PROFD_TEST_READ_A=$A_READ
start_server --config "$tmp/profd.yaml"

"$MKOTLP" --attr service.name=alpha --stack 'main;alpha_work=70' --stack 'main;idle=30' "$tmp/alpha.pb"
"$MKOTLP" --attr service.name=beta --stack 'main;beta_work=5' "$tmp/beta.pb"
"$MKOTLP" --attr service.name=noisy --stack 'main;noise=1000' "$tmp/noisy.pb"
"$MKOTLP" --attr service.name=sampled-out --stack 'main;s=7' "$tmp/sampled.pb"
"$MKOTLP" --attr service.name=small --stack 'main;big=60' --stack 'main;tiny=40' "$tmp/small.pb"
AUTH() { echo "Authorization: Bearer $1"; }

# --- 401 / 403 / 404 -------------------------------------------------------------------
otlp "$tmp/alpha.pb"
checkx "ingest without a token -> 401 with WWW-Authenticate" \
	'[ "$code" = 401 ] && header_has "WWW-Authenticate: Bearer" && rpc_status | grep -q "^16 "'
otlp "$tmp/alpha.pb" -H "$(AUTH wrong-token-xyz)"
checkx "ingest with a wrong token -> 401 (UNAUTHENTICATED)" \
	'[ "$code" = 401 ] && rpc_status | grep -q "^16 the bearer token is not valid"'
otlp "$tmp/alpha.pb" -H "$(AUTH $A_ING)" -H 'X-Profd-Dataset: b'
checkx "ingest token of dataset a into b -> 403 (PERMISSION_DENIED)" \
	'[ "$code" = 403 ] && rpc_status | grep -q "^7 .*no access to dataset .b."'
otlp "$tmp/alpha.pb" -H "$(AUTH $A_READ)"
checkx "query-only token ingesting -> 403" '[ "$code" = 403 ] && rpc_status | grep -q "may not ingest"'
otlp "$tmp/alpha.pb" -H "$(AUTH $ALL)" -H 'X-Profd-Dataset: nope'
checkx "wildcard token, unknown dataset -> 404" '[ "$code" = 404 ] && rpc_status | grep -q "no dataset .nope."'
req GET "/api/v1/profile-types"
checkx "query without a token -> 401 JSON" '[ "$code" = 401 ] && body_has "\"error\""'
req GET "/api/v1/profile-types" -H "$(AUTH $A_ING)"
checkx "ingest-only token querying -> 403" '[ "$code" = 403 ] && body_has "may not query"'
req GET "/api/v1/profile-types?dataset=b" -H "$(AUTH $A_READ)"
check "read token of a asking for b -> 403" [ "$code" = 403 ]

# --- ingest into a and b; queries stay inside their dataset --------------------------
otlp "$tmp/alpha.pb" -H "$(AUTH $A_ING)"
check "ingest token of a -> 200 into a (its only dataset)" [ "$code" = 200 ]
otlp "$tmp/beta.pb" -H "$(AUTH $ALL)"
check "wildcard token -> 200 into its default dataset b" [ "$code" = 200 ]
check "read-a sees alpha's 100 in a" [ "$(total "$CPU" '' -H "$(AUTH $A_READ)")" = 100 ]
check "read-a: beta is not in a" [ "$(total "$CPU" '{service.name="beta"}' -H "$(AUTH $A_READ)")" = 0 ]
check "all token (default b) sees only beta's 5" [ "$(total "$CPU" '' -H "$(AUTH $ALL)")" = 5 ]
check "all token with X-Profd-Dataset a sees 100" \
	[ "$(total "$CPU" '' -H "$(AUTH $ALL)" -H 'X-Profd-Dataset: a')" = 100 ]
check "all token with ?dataset=a sees 100" [ "$(total "$CPU" '' -H "$(AUTH $ALL)" -G --data-urlencode dataset=a)" = 100 ]
check "all token in b: alpha's service is not there" \
	[ "$(total "$CPU" '{service.name="alpha"}' -H "$(AUTH $ALL)" -H 'X-Profd-Dataset: b')" = 0 ]
# Basic auth, as the Pyroscope SDKs send it: the password is the secret.
check "Basic auth with the secret as password reads a" \
	[ "$(total "$CPU" '' -u "tenant:$A_READ")" = 100 ]

# --- signal control ---------------------------------------------------------------------------
CT=application/json
cat >"$tmp/noisy.json" <<'EOF'
{"resourceProfiles":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"noisy"}}]},
 "scopeProfiles":[{"profiles":[{"sampleType":{"typeStrindex":1,"unitStrindex":2},
  "periodType":{"typeStrindex":1,"unitStrindex":2},"period":"10000000",
  "samples":[{"stackIndex":1,"values":["10","20"]}]}]}]}],
 "dictionary":{"stringTable":["","cpu","nanoseconds","main"],
  "functionTable":[{},{"nameStrindex":3}],"locationTable":[{},{"lines":[{"functionIndex":1}]}],
  "stackTable":[{},{"locationIndices":[1]}]}}
EOF
otlp "$tmp/noisy.json" -H "$(AUTH $A_ING)"
checkx "dropped by a rule -> 200 with partialSuccess in JSON" \
	'[ "$code" = 200 ] && body_has "\"partialSuccess\"" && body_has "\"rejectedProfiles\":\"1\"" && body_has "dropped 2 of 2 samples"'
unset CT
otlp "$tmp/noisy.pb" -H "$(AUTH $A_ING)"
checkx "dropped by a rule (protobuf) -> 200 with partial_success" \
	'[ "$code" = 200 ] && [ -s "$tmp/body" ] && grep -qa "signal control" "$tmp/body"'
otlp "$tmp/sampled.pb" -H "$(AUTH $A_ING)"
check "keep fraction 0 -> 200 (nothing stored)" [ "$code" = 200 ]
otlp "$tmp/small.pb" -H "$(AUTH $A_ING)"
check "drop_below -> 200" [ "$code" = 200 ]
check "noisy never stored" [ "$(total "$CPU" '{service.name="noisy"}' -H "$(AUTH $A_READ)")" = 0 ]
check "sampled-out never stored" [ "$(total "$CPU" '{service.name="sampled-out"}' -H "$(AUTH $A_READ)")" = 0 ]
check "drop_below kept 60, dropped 40" [ "$(total "$CPU" '{service.name="small"}' -H "$(AUTH $A_READ)")" = 60 ]

usage_of() { # usage_of TOKEN DATASET: "received accepted dropped" of the usage API
	curl -s --noproxy '*' -G -H "Authorization: Bearer $1" --data-urlencode "dataset=$2" \
		--data-urlencode from=now-48h "$base/api/v1/usage" |
		python3 -c 'import json,sys; d=json.load(sys.stdin)["datasets"][0]["total"]; print(d["received"], d["accepted"], d["dropped"])'
}
# a: alpha 2 + noisy json 2 + noisy 1 + sampled 1 + small 2 = 8 received; 2 + 1 accepted.
check "usage of a: 8 received, 3 accepted, 5 dropped" [ "$(usage_of $A_READ a)" = "8 3 5" ]
check "usage of b: 1 1 0" [ "$(usage_of $ALL b)" = "1 1 0" ]
req GET "/api/v1/usage" -H "$(AUTH $A_READ)"
checkx "usage without dataset= lists only the token's datasets" \
	'[ "$code" = 200 ] && body_has "\"dataset\":\"a\"" && ! body_has "\"dataset\":\"b\""'
req GET "/api/v1/usage?dataset=b" -H "$(AUTH $A_READ)"
check "usage of another dataset -> 403" [ "$code" = 403 ]

# --- /metrics behind the metrics permission -----------------------------------------------
req GET /metrics
checkx "metrics without a token -> 401 with WWW-Authenticate" \
	'[ "$code" = 401 ] && header_has "WWW-Authenticate: Bearer" && ! body_has profd_'
req GET /metrics -H "$(AUTH $ALL)"
checkx "metrics with an ingest+query token -> 403" '[ "$code" = 403 ] && body_has "may not read metrics"'
req GET /metrics -H "$(AUTH $PROM)"
checkx "metrics token -> 200, a received 8 and accepted 3 samples" \
	'[ "$code" = 200 ] && body_has "^profd_ingest_samples_total{dataset=\"a\",result=\"received\"} 8$" &&
	 body_has "^profd_ingest_samples_total{dataset=\"a\",result=\"accepted\"} 3$"'
req GET /api/v1/profile-types -H "$(AUTH $PROM)"
check "the metrics token may not query" [ "$code" = 403 ]

require_alive "during the auth tests"
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
check "the usage file of a exists" [ -s "$tmp/data/a.usage.json" ]
start_server --config "$tmp/profd.yaml"
check "usage survives a restart" [ "$(usage_of $A_READ a)" = "8 3 5" ]
check "data of a survives a restart" [ "$(total "$CPU" '{service.name="alpha"}' -H "$(AUTH $A_READ)")" = 100 ]
checkx "each dataset has its own store directory" '[ -d "$tmp/data/a/wal" ] && [ -d "$tmp/data/b/wal" ]'

if grep -q -e "$A_ING" -e "$A_READ" -e "$ALL" -e "$PROM" "$tmp"/log.* "$tmp"/out.*; then
	fail "a secret appears in the server output"
else
	ok "no secret in the server logs"
fi
check "the log names tokens by name" grep -q "token=ingest-a" "$tmp/log.1"
stop_server TERM

# --- no config: loopback only ------------------------------------------------------------
rc=0
"$PROFD" server --listen 0.0.0.0:0 --data "$tmp/data2" >"$tmp/out.open" 2>&1 || rc=$?
checkx "no config + 0.0.0.0 -> refused, exit 1, saying why" \
	'[ "$rc" = 1 ] && grep -q "refusing to listen on 0.0.0.0:0 without a config file" "$tmp/out.open"'
rc=0
"$PROFD" server --listen 127.0.0.1:0 --grpc-listen :0 --data "$tmp/data2" >"$tmp/out.open2" 2>&1 || rc=$?
checkx "no config + gRPC on all addresses -> refused" '[ "$rc" = 1 ] && grep -q "refusing" "$tmp/out.open2"'
printf 'datasets: [{name: a}]\ntokens: [{name: t, secret: x, permissions: [fly], datasets: [a]}]\n' >"$tmp/bad.yaml"
rc=0
"$PROFD" server --config "$tmp/bad.yaml" --data "$tmp/data2" >"$tmp/out.bad" 2>&1 || rc=$?
checkx "bad config -> exit 1 naming file, line and key" \
	'[ "$rc" = 1 ] && grep -q "bad.yaml:2: tokens\[\].permissions: unknown permission .fly." "$tmp/out.bad"'
finish
