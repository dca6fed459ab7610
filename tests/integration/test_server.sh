#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_server.sh - `profd server` on loopback with a temporary data dir:
#   - OTLP/HTTP ingest (raw and gzip) answered 200 with an empty body;
#     profile types and flame graph totals per selector; an unsymbolized
#     native frame resolved on the server from the ELF it names;
#   - bad input: truncated protobuf, random bytes, a gzip bomb past the
#     limit, an oversized body (announced and chunked), bad gzip, a sample
#     pointing at a missing location, wrong content type / method, bad
#     query parameters: each 4xx with a reason; the server keeps serving
#     and the stored totals do not move;
#   - durability: kill -9 right after an acknowledged ingest, restart,
#     same totals; a torn WAL tail is dropped at restart; a second server
#     on the same data dir is refused; SIGTERM stops cleanly (exit 0,
#     no sanitizer reports);
#   - static explorer files with their content types, no path traversal.
# Needs $PROFD (tests/run.sh sets it) and the mkotlp helper built next to
# it ($(O)/tests/tools/mkotlp, part of `make O=... build`).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
MKOTLP=${MKOTLP:-$(dirname "$PROFD")/tests/tools/mkotlp}
CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
MAX_BODY=$((16 * 1024 * 1024))

source tests/integration/lib.sh
need_bin "$PROFD"
need_bin "$MKOTLP" "make O=$(dirname "$PROFD") build"

source tests/integration/server_lib.sh
SERVER_ARGS=(--max-body "$MAX_BODY") # every start: the limit the oversized bodies test

# post FILE [curl args...]: sets code and body (file $tmp/body). $CT
# overrides the Content-Type.
post() {
	local f=$1
	shift
	code=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
		-H "Content-Type: ${CT:-application/x-protobuf}" --data-binary "@$f" "$@" \
		"$base/v1development/profiles")
}

get() { # get PATH [curl args...]: sets code, body in $tmp/body
	local p=$1
	shift
	code=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' "$@" "$base$p")
}

flame() { # flame SELECTOR [extra curl args]: body in $tmp/flame.json, sets code
	local q=$1
	shift
	code=$(curl -s --noproxy '*' -G -o "$tmp/flame.json" -w '%{http_code}' \
		--data-urlencode "type=$CPU" --data-urlencode "query=$q" \
		--data-urlencode "from=now-1h" --data-urlencode "to=now" "$@" \
		"$base/api/v1/flamegraph")
}

# total SELECTOR: prints the flame graph total (or "error").
total() {
	flame "$1"
	[ "$code" = 200 ] || { echo "error $code"; return; }
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$tmp/flame.json"
}

# node_self PATH: self value of the node at "a;b;c" in $tmp/flame.json, or "none".
node_self() {
	python3 - "$tmp/flame.json" "$1" <<'PY'
import json, sys
node = json.load(open(sys.argv[1]))["root"]
for name in sys.argv[2].split(";"):
    node = next((c for c in node["children"] if c["name"] == name), None)
    if node is None:
        print("none")
        sys.exit(0)
print(node["self"])
PY
}

body_has() { grep -qa -- "$1" "$tmp/body"; }

# --- inputs --------------------------------------------------------------------
mkdir -p "$tmp/ui/sub"
echo '<!doctype html><title>profd</title>' >"$tmp/ui/index.html"
echo 'console.log("profd")' >"$tmp/ui/app.js"
echo 'body { margin: 0 }' >"$tmp/ui/style.css"
echo 'secret' >"$tmp/secret.txt"
echo 'hidden' >"$tmp/ui/.hidden"

"$MKOTLP" --attr service.name=api --attr process.executable.name=spin \
	--stack 'main;hot=70' --stack 'main;cold=30' "$tmp/a.pb" || { fail "mkotlp"; exit 1; }
"$MKOTLP" --attr process.executable.name=other --stack 'main;x=500' "$tmp/b.pb"
"$MKOTLP" --gzip --attr service.name=api --attr process.executable.name=spin \
	--stack 'main;hot=7' "$tmp/c.pb.gz"
"$MKOTLP" --attr process.executable.name=spin --stack 'main;hot=1000' "$tmp/d.pb"
"$MKOTLP" --bad missing-location "$tmp/missing.pb"
# A native frame: an address inside mkotlp's fmt_otlp_encode, unsymbolized,
# to be resolved by the server from the binary and its GNU build ID.
sym_addr=$(nm "$MKOTLP" | awk '$3 == "fmt_otlp_encode" { print $1; exit }')
build_id=$(readelf -n "$MKOTLP" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
mkotlp_abs=$(cd "$(dirname "$MKOTLP")" && pwd)/$(basename "$MKOTLP")
"$MKOTLP" --attr process.executable.name=native \
	--stack "main;@$mkotlp_abs@$build_id@0x$(printf '%x' $((0x$sym_addr + 4)))=9" \
	--stack "main;@/nonexistent/libgone.so@@0x1234=2" "$tmp/native.pb"

# --- ingest and query ----------------------------------------------------------
# The server names mkotlp's frames from its file: allowed by --symbol-path.
SERVER_ARGS+=(--symbol-path "$(dirname "$mkotlp_abs")")
start_server
get /healthz
check "healthz answers 200 ok" [ "$code" = 200 ]

post "$tmp/a.pb"
check "OTLP ingest answers 200 with an empty response" [ "$code" = 200 -a ! -s "$tmp/body" ]
post "$tmp/b.pb"
check "second resource ingested" [ "$code" = 200 ]
post "$tmp/c.pb.gz" -H 'Content-Encoding: gzip'
check "gzip-encoded ingest answers 200" [ "$code" = 200 ]
post "$tmp/native.pb"
check "native-frame profile ingested" [ "$code" = 200 ]

require_alive "during ingest"
get "/api/v1/profile-types?from=now-1h&to=now"
check "profile types list the CPU type" body_has "\"$CPU\""

t=$(total '{process.executable.name="spin"}')
check "spin total is 107 (got $t)" [ "$t" = 107 ]
check "hot self is 77 under main" [ "$(node_self 'main;hot')" = 77 ]
check "cold self is 30 under main" [ "$(node_self 'main;cold')" = 30 ]
t=$(total '{process.executable.name=~"spin|other"}')
check "regex selector sums both processes (607, got $t)" [ "$t" = 607 ]
t=$(total '{service.name="api", process.executable.name!="other"}')
check "dotted names, = and != (107, got $t)" [ "$t" = 107 ]
t=$(total '')
check "empty selector selects everything (618, got $t)" [ "$t" = 618 ]
flame '{process.executable.name="native"}'
check "native frame resolved from the ELF by build ID" [ "$(node_self 'main;fmt_otlp_encode')" = 9 ]
check "unresolvable native frame named module+0xaddr" \
	[ "$(node_self 'main;libgone.so+0x1234')" = 2 ]
flame '{process.executable.name="spin"}' --data-urlencode "max_nodes=2"
check "max_nodes truncates into an explicit other node" \
	grep -q '"name":"other","self":107,"total":107,"other":true' "$tmp/flame.json"

# --- bad query parameters ---------------------------------------------------------
flame '{process.executable.name="spin"'
checkx "unterminated selector -> 400 naming the byte" \
	'[ "$code" = 400 ] && grep -q "at byte 31" "$tmp/flame.json"'
flame '{a=~"("}'
checkx "bad regex -> 400" '[ "$code" = 400 ] && grep -q "regex for label a" "$tmp/flame.json"'
get "/api/v1/flamegraph?type=$CPU&from=yesterday"
checkx "bad from -> 400 naming the parameter" '[ "$code" = 400 ] && body_has "parameter .from."'
flame '{}' --data-urlencode "max_nodes=12abc"
checkx "bad max_nodes -> 400" '[ "$code" = 400 ] && grep -q "max_nodes" "$tmp/flame.json"'
get "/api/v1/flamegraph?query=%7B%7D"
checkx "missing type -> 400" '[ "$code" = 400 ] && body_has "type. is required"'
get "/api/v1/profile-types?to=now-1x"
check "bad to -> 400" [ "$code" = 400 ]
get /api/v1/nope
check "unknown API endpoint -> 404" [ "$code" = 404 ]

# --- bad input ------------------------------------------------------------------------
before=$(total '')
size=$(stat -c %s "$tmp/a.pb")
head -c $((size - 7)) "$tmp/a.pb" >"$tmp/truncated.pb"
post "$tmp/truncated.pb"
checkx "truncated protobuf -> 400 with a reason (google.rpc.Status INVALID_ARGUMENT)" \
	'[ "$code" = 400 ] && rpc_status | grep -q "^3 bad OTLP profiles request: "'
echo "  google.rpc.Status: $(rpc_status)"

LC_ALL=C awk 'BEGIN { srand(42); for (i = 0; i < 4096; i++) printf "%c", 1 + int(rand() * 255) }' \
	>"$tmp/random.bin"
post "$tmp/random.bin"
checkx "random bytes -> 400 with a reason" \
	'[ "$code" = 400 ] && rpc_status | grep -q "^3 bad OTLP profiles request: "'
echo "  google.rpc.Status: $(rpc_status)"

post "$tmp/missing.pb"
checkx "sample pointing at a missing location -> 400 naming it" \
	'[ "$code" = 400 ] && body_has "out of range"'
echo "  google.rpc.Status: $(rpc_status)"

head -c $((2 * MAX_BODY)) /dev/zero | gzip -c >"$tmp/bomb.gz"
post "$tmp/bomb.gz" -H 'Content-Encoding: gzip'
checkx "gzip bomb ($(stat -c %s "$tmp/bomb.gz") bytes -> 32 MiB) -> 413 naming the limit" \
	'[ "$code" = 413 ] && rpc_status | grep -Eq "^8 .*(limit of $MAX_BODY bytes|limit max_ratio)"'
echo "  google.rpc.Status: $(rpc_status)"

head -c $((MAX_BODY + 1)) /dev/zero >"$tmp/big.bin"
post "$tmp/big.bin"
checkx "body over the limit (Content-Length) -> 413" \
	'[ "$code" = 413 ] && body_has "limit of $MAX_BODY"'
post "$tmp/big.bin" -H 'Transfer-Encoding: chunked'
checkx "chunked body over the limit -> 413" '[ "$code" = 413 ] && body_has "limit of $MAX_BODY"'

printf '\037\213\010\000garbage-not-deflate' >"$tmp/badgz.bin"
post "$tmp/badgz.bin" -H 'Content-Encoding: gzip'
checkx "corrupt gzip -> 400" '[ "$code" = 400 ] && body_has "not valid gzip"'
post "$tmp/a.pb" -H 'Content-Encoding: br'
check "unknown Content-Encoding -> 415" [ "$code" = 415 ]
CT=application/json post "$tmp/a.pb"
checkx "protobuf sent as OTLP/JSON -> 400 in JSON" \
	'[ "$code" = 400 ] && body_has "\"code\":3" && body_has "otlp-json"'
CT=text/plain post "$tmp/a.pb"
checkx "wrong Content-Type -> 415 with a hint" '[ "$code" = 415 ] && body_has "application/x-protobuf"'
get /v1development/profiles
check "GET on the ingest path -> 405" [ "$code" = 405 ]

require_alive "on bad input"
get /healthz
check "server still serving after bad input" [ "$code" = 200 ]
after=$(total '')
check "stored data intact after bad input ($before = $after)" [ "$before" = "$after" ]

# --- concurrent ingest (group commit) ----------------------------------------------------
"$MKOTLP" --attr process.executable.name=par --stack 'main;p=1' "$tmp/p.pb"
pids=
for i in $(seq 1 16); do
	curl -s --noproxy '*' -o /dev/null -w '%{http_code}\n' -X POST \
		-H 'Content-Type: application/x-protobuf' --data-binary "@$tmp/p.pb" \
		"$base/v1development/profiles" >"$tmp/par.$i" &
	pids="$pids $!"
done
wait $pids
wait_ok=1
for i in $(seq 1 16); do [ "$(cat "$tmp/par.$i")" = 200 ] || wait_ok=0; done
check "16 concurrent ingests all acknowledged" [ "$wait_ok" = 1 ]
t=$(total '{process.executable.name="par"}')
check "concurrent ingests all stored (16, got $t)" [ "$t" = 16 ]

# --- static files ------------------------------------------------------------------------------
get /
checkx "/ serves index.html as text/html" '[ "$code" = 200 ] && body_has "<title>profd"'
ct=$(curl -s --noproxy '*' -o /dev/null -w '%{content_type}' "$base/app.js")
check "app.js served as text/javascript ($ct)" [ "${ct%%;*}" = text/javascript ]
ct=$(curl -s --noproxy '*' -o /dev/null -w '%{content_type}' "$base/style.css")
check "style.css served as text/css ($ct)" [ "${ct%%;*}" = text/css ]
for p in /../secret.txt /%2e%2e/secret.txt /sub/../../secret.txt /.hidden /sub/%2e%2e/%2e%2e/secret.txt \
	'/..%2fsecret.txt'; do
	get "$p" --path-as-is
	if [ "$code" = 404 ] && ! body_has secret && ! body_has hidden; then :; else
		fail "path traversal $p got $code"
	fi
done
ok "path traversal attempts get 404"

# --- durability ---------------------------------------------------------------------------------
want=$(total '')
post "$tmp/d.pb"
check "ingest acknowledged before kill -9" [ "$code" = 200 ]
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
want=$((want + 1000))
start_server
t=$(total '')
check "after kill -9 and restart the acknowledged data is there ($want, got $t)" [ "$t" = "$want" ]
t=$(total '{process.executable.name="spin"}')
check "per-selector totals survive the restart (1107, got $t)" [ "$t" = 1107 ]
check "node values survive the restart" [ "$(node_self 'main;hot')" = 1077 ]

"$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data" >"$tmp/out.second" 2>&1
rc=$?
checkx "a second server on the same data dir is refused (exit $rc)" \
	'[ "$rc" = 1 ] && grep -q "in use" "$tmp/out.second"'

stop_server TERM
check "SIGTERM stops the server cleanly (exit $stop_rc)" [ "$stop_rc" = 0 ]
check "shutdown logged" grep -q "server: stopped" "$tmp/log.$n"

# A torn tail (a crash in the middle of a write) is dropped at start.
# (the newest segment: each start appends to a fresh one)
seg=$(find "$tmp/data/default/wal" -name '*.wal' | sort | tail -1)
printf '\100\000\000\000\001\002\003' >>"$seg"
start_server
t=$(total '')
check "torn WAL tail dropped, acknowledged data intact ($want, got $t)" [ "$t" = "$want" ]
check "torn tail reported in the log" grep -q "torn tail dropped.*bytes=7" "$tmp/log.$n"
post "$tmp/p.pb"
check "ingest works after the torn-tail repair" [ "$code" = 200 ]
stop_server INT
check "SIGINT stops the server cleanly (exit $stop_rc)" [ "$stop_rc" = 0 ]
start_server
t=$(total '')
check "data after the repair survives another restart ($((want + 1)), got $t)" [ "$t" = $((want + 1)) ]
stop_server TERM

if grep -l "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$tmp"/log.* >/dev/null 2>&1; then
	fail "sanitizer reports in the server logs"
fi
[ "$nfail" = 0 ] || { echo "$nfail check(s) failed"; exit 1; }
echo "all server checks passed"
