#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_limits.sh - every ingest limit of the config (config.h
# server_limits) and bad input, each answered with a 4xx that names the
# limit or the problem, the server serving on and nothing half-stored:
#   max_body (announced and chunked), max_decompressed, max_ratio (a gzip
#   bomb), max_samples, max_series, max_labels, max_label_name,
#   max_label_value, max_inflight (429 + Retry-After while a slow upload
#   holds the only slot, gRPC UNAVAILABLE; the slot comes back when that
#   client goes away);
#   wrong Content-Type, unknown Content-Encoding, malformed protobuf and
#   JSON; then /metrics counts the rejects by reason, /readyz is 200.
source "$(dirname "$0")/ingest_lib.sh"

cat >"$tmp/profd.yaml" <<'EOF'
datasets: [{name: default}]
limits:
  max_body: 64KiB
  max_decompressed: 256KiB
  max_ratio: 20
  max_samples: 50
  max_series: 3
  max_labels: 4
  max_label_name: 12
  max_label_value: 16
  max_inflight: 1
  retry_after: 2s
EOF
start_server --config "$tmp/profd.yaml" --grpc-listen 127.0.0.1:0

"$MKOTLP" --attr service.name=ok --stack 'main;a=10' "$tmp/ok.pb"
otlp "$tmp/ok.pb"
check "a request within the limits -> 200" [ "$code" = 200 ]
before=$(total "$CPU" '')

limit() { # limit DESCRIPTION CODE NAME: the last answer is CODE and names NAME
	local want=$2 name=$3
	checkx "$1 -> $2 naming $3" '[ "$code" = "$want" ] && grep -qa -- "$name" "$tmp/body"'
}

head -c $((64 * 1024 + 1)) /dev/zero >"$tmp/big.bin"
otlp "$tmp/big.bin"
limit "body over max_body (Content-Length)" 413 max_body
otlp "$tmp/big.bin" -H 'Transfer-Encoding: chunked'
limit "chunked body over max_body" 413 max_body
# 300 KiB of a two-letter alphabet: gzip ~7x, so under max_body and max_ratio, over max_decompressed.
python3 -c 'import random,sys; random.seed(7); sys.stdout.write("".join(random.choice("ab") for _ in range(300*1024)))' |
	gzip -c >"$tmp/wide.gz"
otlp "$tmp/wide.gz" -H 'Content-Encoding: gzip'
limit "gzip inflating past max_decompressed ($(stat -c %s "$tmp/wide.gz") bytes)" 413 max_decompressed
head -c $((1024 * 1024)) /dev/zero | gzip -c >"$tmp/bomb.gz"
otlp "$tmp/bomb.gz" -H 'Content-Encoding: gzip'
limit "gzip bomb (ratio ~1000)" 413 max_ratio
args=()
for i in $(seq 1 51); do args+=(--stack "main;f$i=1"); done
"$MKOTLP" --attr service.name=many "${args[@]}" "$tmp/samples.pb"
otlp "$tmp/samples.pb"
limit "51 samples" 413 "max_samples (50)"
"$MKOTLP" --attr a=1 --attr b=2 --attr c=3 --attr d=4 --attr e=5 --stack 'main=1' "$tmp/labels.pb"
otlp "$tmp/labels.pb"
limit "5 labels" 400 "max_labels (4)"
"$MKOTLP" --attr a_very_long_key=1 --stack 'main=1' "$tmp/lname.pb"
otlp "$tmp/lname.pb"
limit "a 15-byte label name" 400 max_label_name
"$MKOTLP" --attr k=0123456789abcdefXYZ --stack 'main=1' "$tmp/lval.pb"
otlp "$tmp/lval.pb"
limit "a 19-byte label value" 400 max_label_value
python3 - "$tmp/series.json" <<'PY'
import json, sys
rp = [{"resource": {"attributes": [{"key": "service.name", "value": {"stringValue": f"s{i}"}}]},
       "scopeProfiles": [{"profiles": [{"sampleType": {"typeStrindex": 1, "unitStrindex": 2},
                                        "samples": [{"stackIndex": 1, "values": ["1"]}]}]}]}
      for i in range(4)]
d = {"stringTable": ["", "cpu", "nanoseconds", "main"], "functionTable": [{}, {"nameStrindex": 3}],
     "locationTable": [{}, {"lines": [{"functionIndex": 1}]}], "stackTable": [{}, {"locationIndices": [1]}]}
json.dump({"resourceProfiles": rp, "dictionary": d}, open(sys.argv[1], "w"))
PY
CT=application/json otlp "$tmp/series.json"
limit "4 series in one request" 413 "max_series (3)"

# --- max_inflight: a slow upload holds the only slot -----------------------------------------
head -c 6000 /dev/zero >"$tmp/slow.bin"
curl -s --noproxy '*' -o /dev/null --limit-rate 1000 -X POST -H 'Content-Type: application/x-protobuf' \
	--data-binary "@$tmp/slow.bin" "$base/v1development/profiles" &
slow=$!
sleep 1
otlp "$tmp/ok.pb"
checkx "a second ingest while the slot is taken -> 429 with Retry-After: 2 naming max_inflight" \
	'[ "$code" = 429 ] && header_has "Retry-After: 2" && grep -qa max_inflight "$tmp/body"'
req GET /healthz
check "queries are not held back meanwhile" [ "$code" = 200 ]
if command -v node >/dev/null && [ -d tests/js/node_modules/@grpc/grpc-js ]; then
	out=$(timeout 30 node tests/js/otlp_grpc_export.mjs "127.0.0.1:$grpc_port" ok 2>&1)
	checkx "gRPC meanwhile -> UNAVAILABLE (14) naming max_inflight" \
		'echo "$out" | grep -q "\"code\":14" && echo "$out" | grep -q max_inflight'
fi
kill "$slow" 2>/dev/null
wait "$slow" 2>/dev/null
# The server frees the slot when it sees the connection close: poll (up to
# 10 s on a loaded machine) rather than assume a fixed delay; a slot that
# is never given back still fails.
WAIT_STEP=0.2 wait_for 10 'otlp "$tmp/ok.pb"; [ "$code" != 429 ]' || true
check "the slot is back once the slow client went away -> 200" [ "$code" = 200 ]

# --- bad input ---------------------------------------------------------------------------------------
CT=text/plain otlp "$tmp/ok.pb"
limit "Content-Type text/plain" 415 "unsupported Content-Type"
otlp "$tmp/ok.pb" -H 'Content-Encoding: zstd'
limit "Content-Encoding zstd" 415 "unsupported Content-Encoding"
head -c 100 "$tmp/samples.pb" >"$tmp/trunc.pb"
otlp "$tmp/trunc.pb"
checkx "truncated protobuf -> 400 INVALID_ARGUMENT with a reason" \
	'[ "$code" = 400 ] && rpc_status | grep -q "^3 bad OTLP profiles request: "'
printf '{"resourceProfiles": [{"scopeProfiles": [{"profiles": [{"samples": "no"}]}]}]}' >"$tmp/bad.json"
CT=application/json otlp "$tmp/bad.json"
checkx "JSON with a wrong type -> 400 naming the path" '[ "$code" = 400 ] && body_has "samples"'
echo "  $(cat "$tmp/body")"

require_alive "after the limits"
after=$(total "$CPU" '')
check "stored data: only the two good requests ($before + 10 = $after)" [ "$after" = $((before + 10)) ]
req GET /metrics
for r in max_body max_decompressed max_ratio max_samples max_series max_labels max_label_name \
	max_label_value overloaded content_type content_encoding decode; do
	checkx "metrics count rejects for $r" 'body_has "profd_ingest_rejects_total{reason=\"$r\"}"'
done
checkx "metrics count 413s on the OTLP route" 'body_has "profd_http_requests_total{route=\"otlp\",code=\"413\"}"'
checkx "metrics have WAL fsync latency" 'body_has "profd_wal_fsync_seconds_total{dataset=\"default\"}"'
checkx "metrics have the in-flight gauge" 'body_has "profd_ingest_inflight 0"'
req GET /readyz
checkx "/readyz -> 200 ready" '[ "$code" = 200 ] && body_has ready'
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
