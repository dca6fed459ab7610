#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_producer_otelcol.sh - an OpenTelemetry Collector made by the
# Collector builder from Go modules (scripts/producers.sh: the OTLP
# receiver and the OTLP/gRPC exporter; the contrib pprof receiver is not
# served by the Go module proxy here) forwards profiles to profd:
#   - a pprof file (the corpus' Go heap profile when $PROFD_CORPUS has
#     it, and always one profd writes from folded stacks of known counts)
#     is turned into OTLP by `profd convert`, POSTed to the Collector's
#     OTLP/HTTP receiver, and exported by the Collector (its own encoder,
#     its own proto release) to profd's OTLP/gRPC endpoint;
#   - every sample type's total arrives exactly (the corpus facts; the
#     folded counts), with the resource attribute service.name set by
#     the sender, and the leaf frames of the folded stacks.
# Skipped, with the reason, when the Collector cannot be built.
source "$(dirname "$0")/ingest_lib.sh"
CORPUS=${PROFD_CORPUS:-../shared/corpus}
if ! read -r col ver < <(bash scripts/producers.sh otelcol 2>"$tmp/why"); then
	echo "skip: OpenTelemetry Collector: $(tail -n 1 "$tmp/why")"
	exit 0
fi
echo "  OpenTelemetry Collector (builder $ver: otlpreceiver, otlpexporter)"
col_pid=
at_exit() { [ -n "$col_pid" ] && kill "$col_pid" 2>/dev/null && wait "$col_pid" 2>/dev/null; }

start_server --grpc-listen 127.0.0.1:0
cport=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$tmp/otelcol.yaml" <<EOF
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:$cport
exporters:
  otlp_grpc:
    endpoint: 127.0.0.1:$grpc_port
    tls:
      insecure: true
    sending_queue:
      enabled: false
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp_grpc]
EOF
"$col" --config "$tmp/otelcol.yaml" --feature-gates=service.profilesSupport >"$tmp/otelcol.log" 2>&1 &
col_pid=$!
wait_for -p "$col_pid" 30 'grep -q "Everything is ready" "$tmp/otelcol.log"'
check "the Collector started ($(grep -m1 -i 'error' "$tmp/otelcol.log" | cut -c1-200))" \
	grep -q 'Everything is ready' "$tmp/otelcol.log"

# send NAME PPROF: the pprof file as OTLP (service.name=NAME) through the Collector
send() {
	"$PROFD" convert "$2" "$tmp/$1.otlp.pb" >"$tmp/convert.out" 2>&1 ||
		fail "profd convert $2: $(cat "$tmp/convert.out")"
	python3 - "$tmp/$1.otlp.pb" "$1" <<'PY'
# Put a resource attribute service.name=NAME on the request's first
# ResourceProfiles (a KeyValue with a string AnyValue: common.proto).
import sys
b = open(sys.argv[1], "rb").read()
def varint(v):
    out = b""
    while True:
        c = v & 0x7F; v >>= 7
        out += bytes([c | (0x80 if v else 0)])
        if not v:
            return out
def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload
def rd(i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7F) << s; s += 7
        if c < 0x80:
            return v, i
out, i, done = b"", 0, False
while i < len(b):
    start = i
    key, i = rd(i)
    n, i = rd(i)  # every top-level field is length-delimited
    body = b[i:i + n]; i += n
    if key >> 3 == 1 and not done:
        kv = field(1, b"service.name") + field(2, field(1, sys.argv[2].encode()))
        body = field(1, field(1, kv)) + body  # Resource{attributes}; merged with any later one
        done = True
        out += field(1, body)
    else:
        out += b[start:i]
open(sys.argv[1], "wb").write(out)
PY
	code=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -H 'Content-Type: application/x-protobuf' \
		--data-binary "@$tmp/$1.otlp.pb" "http://127.0.0.1:$cport/v1development/profiles")
	check "$1: the Collector's OTLP/HTTP receiver took it ($code)" [ "$code" = 200 ]
}
# arrived NAME TYPE: poll (10 s) until profd has TYPE for service.name=NAME; print its total
arrived() {
	local svc=$1 typ=$2 t
	wait_for 10 't=$(total "$typ" "{service.name=\"$svc\"}"); [ "${t%% *}" != error ] && [ "$t" != 0 ]'
	echo "$t"
}

# --- folded stacks of known counts, as pprof ------------------------------------------------------
printf 'main;work;hot 700\nmain;work;cold 250\nmain;idle 50\n' >"$tmp/f.folded"
"$PROFD" convert "$tmp/f.folded" "$tmp/f.pb.gz" >"$tmp/convert.out" 2>&1 ||
	fail "profd convert folded -> pprof: $(cat "$tmp/convert.out")"
send folded "$tmp/f.pb.gz"
ty=$(types | python3 -c 'import json,sys; t=json.load(sys.stdin); print(t[0] if t else "none")')
t=$(arrived folded "$ty")
check "folded: the total arrives exactly through the Collector ($t of 1000, type $ty)" [ "$t" = 1000 ]
checkx "folded: the leaves are there (hot, cold, idle)" 'has_frame hot && has_frame cold && has_frame idle'

# --- the corpus' Go heap profile ---------------------------------------------------------------------
HEAP="$CORPUS/pprof/gen--heap.pprof"
if [ -f "$HEAP" ] && [ -f "$CORPUS/facts/gen-go-heap.json" ]; then
	read -r t_ao t_as t_io t_is < <(python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["facts"]["pprof_format"]["totals"])' "$CORPUS/facts/gen-go-heap.json")
	send goheap "$HEAP"
	for pair in "alloc_objects:count:$t_ao" "alloc_space:bytes:$t_as" "inuse_objects:count:$t_io" "inuse_space:bytes:$t_is"; do
		IFS=: read -r st unit want <<<"$pair"
		t=$(arrived goheap "memory:$st:$unit:space:bytes")
		check "goheap: $st total arrives exactly through the Collector ($t, corpus fact $want)" [ "$t" = "$want" ]
	done
else
	echo "skip: corpus part (no $HEAP)"
fi

bad=$(grep 'ProfilesService/Export' "$tmp/log.1" | grep -vc 'grpc_status=0')
n=$(grep -c 'ProfilesService/Export' "$tmp/log.1")
checkx "the Collector's Exports to profd were all OK ($n, $bad not)" '[ "$n" -gt 0 ] && [ "$bad" = 0 ]'
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
