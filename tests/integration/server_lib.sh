#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# server_lib.sh - what the tests that run a `profd server` share (sourced,
# not run; ingest_lib.sh builds on it):
#   - lib.sh's pieces: $tmp (removed at exit unless a check failed, then
#     "logs kept in $tmp"), ok / fail / die / skip / wait_for, counting
#     passes in $npass and failures in $nfail; the server is killed at
#     exit, after the test's own at_exit function (if it defines one);
#   - check / checkx: ok or fail by a command's or an expression's status;
#   - start_server [profd server args...]: a server on loopback port 0,
#     data in $tmp/data (unless the args give --data), explorer files from
#     $SERVER_UI (default $tmp/ui, which does not exist: the built-in
#     page), the array SERVER_ARGS before the args (options every start
#     of the test takes). Start number $n writes $tmp/out.$n and
#     $tmp/log.$n; sets server_pid, port, base (https:// with --tls-cert),
#     and otlp_port / grpc_port
#     when asked for; a server that does not start fails the test and
#     exits;
#   - server_port OUT PID: wait for the server PID writing its stdout to
#     OUT to name its port (for a server started by hand);
#   - stop_server SIGNAL (sets stop_rc), require_alive WHEN;
#   - rpc_status: the google.rpc.Status in $tmp/body as "CODE MESSAGE".
# Before sourcing: the repository root as working directory, PROFD set.
set -uo pipefail

source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
lib_tmp
SERVER_ARGS=()
server_pid=
n=0
# At exit, after the test's own at_exit: the server goes.
server_lib_exit() {
	if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null; fi
}
lib_exit_hooks+=(server_lib_exit)

check() { # check DESCRIPTION COMMAND...
	local what=$1
	shift
	if "$@"; then ok "$what"; else fail "$what"; fi
}
checkx() { # checkx DESCRIPTION 'SHELL EXPRESSION' (evaluated here, may use && and ||)
	if eval "$2"; then ok "$1"; else fail "$1"; fi
}

# server_port OUT PID: print the port of the explorer URL the server PID
# writes first to OUT; nothing if it exits or stays silent for 20 s.
server_port() {
	local out=$1 p=
	wait_for -p "$2" 20 'p=$(sed -n "s|.*explorer at https\\{0,1\\}://127.0.0.1:\\([0-9]*\\)/.*|\\1|p" "$out" 2>/dev/null); [ -n "$p" ]'
	echo "$p"
}

start_server() {
	n=$((n + 1))
	port= otlp_port= grpc_port=
	"$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data" --ui "${SERVER_UI:-$tmp/ui}" \
		"${SERVER_ARGS[@]}" "$@" >"$tmp/out.$n" 2>"$tmp/log.$n" &
	server_pid=$!
	port=$(server_port "$tmp/out.$n" "$server_pid")
	[ -n "$port" ] || die "server $n did not start: $(tail -n 3 "$tmp/log.$n")"
	otlp_port=$(sed -n 's|.*OTLP/HTTP on port \([0-9]*\).*|\1|p' "$tmp/out.$n")
	grpc_port=$(sed -n 's|.*OTLP/gRPC on port \([0-9]*\).*|\1|p' "$tmp/out.$n")
	base="http://127.0.0.1:$port"
	# with --tls-cert
	grep -q 'explorer at https://' "$tmp/out.$n" && base="https://127.0.0.1:$port"
}

stop_server() { # stop_server SIGNAL: stop and wait; sets stop_rc
	kill "-$1" "$server_pid"
	stop_rc=0
	wait "$server_pid" || stop_rc=$?
	server_pid=
}

require_alive() { # require_alive WHEN: stop the test (with the log) if the server died
	if ! kill -0 "$server_pid" 2>/dev/null; then
		fail "server died $1; log tail:"
		tail -n 20 "$tmp/log.$n"
		exit 1
	fi
}

# rpc_status: decode $tmp/body as a google.rpc.Status (1: code, 2: message)
# and print "CODE MESSAGE"; prints "undecodable" when it is not one.
rpc_status() {
	python3 - "$tmp/body" <<'PY'
import sys
b = open(sys.argv[1], "rb").read()
i, code, msg = 0, 0, ""
def varint():
    global i
    v = s = 0
    while True:
        c = b[i]; i += 1
        v |= (c & 0x7F) << s; s += 7
        if c < 0x80:
            return v
try:
    while i < len(b):
        key = varint()
        if key == 8:
            code = varint()
        elif key == 18:
            n = varint(); msg = b[i:i + n].decode(); i += n
        else:
            raise ValueError
    print(code, msg)
except Exception:
    print("undecodable")
PY
}
