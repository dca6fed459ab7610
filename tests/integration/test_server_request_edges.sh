#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_server_request_edges.sh - requests at the edges of the query API's
# request parsing (docs/api.md "Request size"), sent by a raw socket
# client (python3) so that curl's own limits do not get in the way:
#   - long URLs: 200 stack_filter values in 16 KiB and 512 parameters
#     answer 200; 513 and 600 (an empty reply before, when libmicrohttpd's
#     32 KiB connection pool ran out) answer 414 naming the limit of 512;
#     a 300 KiB URL is libmicrohttpd's own 414;
#   - headers: 100 answer 200, 129 answer 431 naming the limit of 128, a
#     100 KiB header is taken, a 300 KiB one is libmicrohttpd's own 431;
#   - group_by=x,x in one value groups by x once, like group_by=x&group_by=x;
#   - a repeated stack_filter whose value refers to a capture group (\1,
#     \k<n>, (?1)) is a 400 naming the value: joined after another value
#     its numbers would point into that value's groups; alone it works;
#   - a well-formed profile type the store has never seen is a 400
#     naming /api/v1/profile-types; a malformed one is a 400 too.
# The server keeps serving throughout and the sanitizers stay quiet.
source "$(dirname "$0")/ingest_lib.sh"

start_server
T0=1700000000000
"$MKOTLP" --attr service.name=api --attr process.executable.name=spin --time-ms $T0 \
	--stack 'main;hot=70' --stack 'main;cold=30' "$tmp/a.pb"
otlp "$tmp/a.pb"
check "ingest -> 200" [ "$code" = 200 ]
SEL=(--data-urlencode "type=$CPU" --data-urlencode "from=$T0" --data-urlencode "to=$((T0 + 59999))")

# raw MODE N LEN: one GET built in python; prints "STATUS-LINE" (or <closed>), body in $tmp/raw.
#   args: N stack_filter values of LEN bytes each; hdrs: N headers with LEN-byte values.
raw() {
	python3 - "$port" "$1" "$2" "$3" "$tmp/raw" "$CPU" "$T0" <<'PY'
import socket, sys
port, mode, n, l, out, typ, t0 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], sys.argv[7]
path = "/api/v1/flamegraph?type=%s&from=%s&to=%d" % (typ, t0, int(t0) + 59999)
hdrs = ""
if mode == "args":
    path += "".join("&stack_filter=" + ("f%d" % i).ljust(l, "x") for i in range(n))
else:
    hdrs = "".join("X-H%d: %s\r\n" % (i, "v" * l) for i in range(n))
req = ("GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n" % (path, hdrs)).encode()
s = socket.create_connection(("127.0.0.1", int(port)))
s.settimeout(20)
data = b""
try:
    s.sendall(req)
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except OSError as e:
    data += ("<%s>" % e).encode()
open(out, "wb").write(data.split(b"\r\n\r\n", 1)[-1] if b"\r\n\r\n" in data else data)
print(data.split(b"\r\n", 1)[0].decode("latin-1") if data else "<closed>")
PY
}
status_is() { case "$r" in "HTTP/1.1 $1 "*) true ;; *) false ;; esac; }
raw_has() { grep -qa -- "$1" "$tmp/raw"; }

# --- URL length and parameter count ---------------------------------------------------------
r=$(raw args 200 80)
checkx "200 stack_filter values, 16 KiB URL -> 200, no frame matches ($r)" \
	'status_is 200 && raw_has "\"filtered_total\":100"'
r=$(raw args 509 5)
checkx "512 query parameters, the limit -> 200 ($r)" 'status_is 200'
r=$(raw args 510 5)
checkx "513 query parameters -> 414 naming the limit ($r)" \
	'status_is 414 && raw_has "513 query parameters; the server takes at most 512"'
r=$(raw args 597 5)
checkx "600 query parameters -> 414 (was an empty reply) ($r)" \
	'status_is 414 && raw_has "600 query parameters"'
r=$(raw args 100 3000)
checkx "a 300 KiB URL -> 414 from libmicrohttpd ($r)" 'status_is 414'

# --- header count and size -----------------------------------------------------------------
r=$(raw hdrs 100 10)
checkx "100 headers -> 200 ($r)" 'status_is 200'
r=$(raw hdrs 127 10)
checkx "129 headers -> 431 naming the limit ($r)" \
	'status_is 431 && raw_has "129 header fields; the server takes at most 128"'
r=$(raw hdrs 1 100000)
checkx "one 100 KiB header -> 200 ($r)" 'status_is 200'
r=$(raw hdrs 1 300000)
checkx "one 300 KiB header -> 431 from libmicrohttpd ($r)" 'status_is 431'
require_alive "after the long requests"

# --- group_by items once --------------------------------------------------------------------
series() { req GET "/api/v1/series" -G "${SEL[@]}" --data-urlencode "step=60s" "$@"; }
# jpy EXPR: a Python expression over the JSON body as j, printed as compact JSON.
jpy() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); print(json.dumps(eval(sys.argv[2]), separators=(",", ":")))' "$tmp/body" "$1" 2>&1; }
series --data-urlencode "group_by=service.name, service.name"
got=$(jpy '[j["group_by"], [sorted(s["labels"]) for s in j["series"]]]')
checkx "group_by=x,x in one value -> grouped by x once ($got)" \
	'[ "$code" = 200 ] && [ "$got" = '"'"'[["service.name"],[["service.name"]]]'"'"' ]'
series --data-urlencode "group_by=service.name,process.executable.name,service.name"
got=$(jpy 'j["group_by"]')
checkx "group_by=x,y,x -> x,y ($got)" \
	'[ "$code" = 200 ] && [ "$got" = '"'"'["service.name","process.executable.name"]'"'"' ]'

# --- references to capture groups in repeated regexes ---------------------------------------
fg() { req GET "/api/v1/flamegraph" -G "${SEL[@]}" "$@"; }
fg --data-urlencode 'stack_filter=(o)\1' # "cold" has no "oo": nothing matches alone
checkx "stack_filter=(o)\\1 alone -> 200, nothing kept" '[ "$code" = 200 ] && [ "$(jpy "j[\"total\"]")" = 0 ]'
fg --data-urlencode 'stack_filter=(h)ot' --data-urlencode 'stack_filter=(c)\1?old'
want="value '(c)\\\\1?old' refers to a capture group" # as JSON writes it
checkx "stack_filter=(h)ot & =(c)\\1?old -> 400 naming the second value and the offset" \
	'[ "$code" = 400 ] && grep -qaF -- "$want" "$tmp/body" && body_has "at offset 3"'
for v in '(?<n>c)\k<n>' '(c(?1)?)old'; do
	fg --data-urlencode 'stack_filter=hot' --data-urlencode "stack_filter=$v"
	checkx "stack_filter=hot & =$v -> 400" '[ "$code" = 400 ] && body_has "refers to a capture group"'
done
fg --data-urlencode 'stack_filter=(h)ot' --data-urlencode 'stack_filter=[\1]|cold'
checkx "an octal \\1 in a class is no reference: both kept (70 + 30)" \
	'[ "$code" = 200 ] && [ "$(jpy "j[\"total\"]")" = 100 ]'

# --- profile types ---------------------------------------------------------------------------
req GET "/api/v1/flamegraph?type=nonsense:x:y:z:w"
checkx "a well-formed type never stored -> 400 naming /api/v1/profile-types" \
	'[ "$code" = 400 ] && body_has "unknown profile type" && body_has "/api/v1/profile-types"'
req GET "/api/v1/flamegraph?type=nonsense:x:y:z"
checkx "a type of four fields -> 400" '[ "$code" = 400 ] && body_has "parameter '"'"'type'"'"'"'

otlp "$tmp/a.pb"
check "the server still ingests afterwards" [ "$code" = 200 ]
require_alive "at the end"
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
