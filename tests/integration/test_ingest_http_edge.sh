#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_http_edge.sh - HTTP edge cases of the ingest routes, driven
# by a raw socket client (python3) so the requests can be malformed in ways
# curl refuses to produce:
#   - a body cut short: the client announces Content-Length, sends part of
#     the body and closes its side. The server must close within its
#     upload window (2 s here: a body that stops moving is cut; the epoll
#     front does not see a half-close earlier), store nothing, and give back the request's
#     ingest slot: after more cut requests than max_inflight (4 here) a
#     whole request is still accepted and the in-flight gauges are 0;
#   - a Content-Length above 2^64 - 1: libmicrohttpd refuses it itself
#     while parsing the headers (profd's handler is never called); the
#     client gets a 413 status line and the connection closes;
#   - a Content-Length of 2^64 - 1 (parses, over max_body): profd's own
#     413 naming the limit, before any body is read, one header block;
#   - a malformed Content-Length: 400.
# The server keeps serving throughout and the sanitizers stay quiet.
source "$(dirname "$0")/ingest_lib.sh"

printf 'datasets: [{name: default}]\nlimits: {max_inflight: 4, max_body: 1MiB}\n' >"$tmp/profd.yaml"
start_server --config "$tmp/profd.yaml" --upload-window 2s
"$MKOTLP" --attr service.name=edge --stack 'main;work=40' "$tmp/ok.pb"

# raw MODE: one raw request; prints "SECONDS FIRST-LINE" and the reply to $tmp/raw.
raw() {
	python3 - "$port" "$1" "$tmp/ok.pb" "$tmp/raw" <<'PY'
import socket, sys, time
port, mode, pb, out = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "rb").read(), sys.argv[4]
s = socket.create_connection(("127.0.0.1", port))
s.settimeout(10)
head = "POST /v1development/profiles HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf\r\n"
if mode == "cut":
    s.sendall((head + f"Content-Length: {len(pb)}\r\n\r\n").encode() + pb[: len(pb) // 2])
    s.shutdown(socket.SHUT_WR)
elif mode == "huge":
    s.sendall((head + "Content-Length: 18446744073709551616\r\n\r\n").encode())
elif mode == "max":
    s.sendall((head + "Content-Length: 18446744073709551615\r\n\r\n").encode())
elif mode == "bad":
    s.sendall((head + "Content-Length: 12abc\r\n\r\n").encode())
t0, data = time.time(), b""
try:
    while True:
        d = s.recv(65536)
        if not d:
            break
        data += d
except socket.timeout:
    data += b"<timeout>"
open(out, "wb").write(data)
first = data.split(b"\r\n", 1)[0].decode("latin-1") if data else "<closed>"
print(f"{time.time() - t0:.2f} {first}")
PY
}

gauge() { curl -s --noproxy '*' "$base/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }

# --- a body cut short -------------------------------------------------------------------
r=$(raw cut)
secs=${r%% *}
checkx "cut body: the server closes within its upload window ($r)" \
	'python3 -c "import sys; sys.exit(0 if float(sys.argv[1]) < 5 else 1)" "$secs"'
for _ in 1 2 3 4 5 6; do raw cut >/dev/null; done
check "cut bodies stored nothing" [ "$(total "$CPU" '{service.name="edge"}')" = 0 ]
check "ingest in-flight gauge back to 0 after 7 cut bodies" [ "$(gauge profd_ingest_inflight)" = 0 ]
otlp "$tmp/ok.pb"
check "then a whole request (max_inflight 4) -> 200" [ "$code" = 200 ]
check "and it is stored exactly once" [ "$(total "$CPU" '{service.name="edge"}')" = 40 ]

# --- Content-Length beyond 2^64 - 1, at 2^64 - 1, malformed ----------------------------------
r=$(raw huge)
checkx "Content-Length 2^64 -> 413 and the connection closes ($r)" \
	'case "$r" in *" HTTP/1.1 413 "*) true ;; *) false ;; esac && ! grep -qa "<timeout>" "$tmp/raw"'
r=$(raw max)
checkx "Content-Length 2^64-1 -> profd's 413 naming max_body, one header block" \
	'case "$r" in *" HTTP/1.1 413 "*) true ;; *) false ;; esac && grep -qa "limit max_body" "$tmp/raw" &&
	 [ "$(grep -ac "^HTTP/1.1 " "$tmp/raw")" = 1 ]'
r=$(raw bad)
checkx "Content-Length 12abc -> 400 ($r)" 'case "$r" in *" HTTP/1.1 400 "*) true ;; *) false ;; esac'

otlp "$tmp/ok.pb"
check "the server still ingests afterwards" [ "$code" = 200 ]
check "total 80 after two whole requests" [ "$(total "$CPU" '{service.name="edge"}')" = 80 ]
check "HTTP in-flight gauge: only the scrape itself" [ "$(gauge profd_http_inflight)" = 1 ]
require_alive "after the edge cases"
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
