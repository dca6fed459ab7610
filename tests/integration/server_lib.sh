#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# server_lib.sh - what the tests that run a `profd server` share (sourced,
# not run; ingest_lib.sh builds on it):
#   - $tmp, a temporary directory, removed at exit unless a check failed
#     (then "logs kept in $tmp"); the server is killed at exit;
#   - ok / fail / check / checkx: print "ok - ..." or "FAIL - ...",
#     counting failures in $nfail;
#   - start_server [profd server args...]: a server on loopback port 0,
#     data in $tmp/data (unless the args give --data), explorer files from
#     $SERVER_UI (default $tmp/ui, which does not exist: the built-in
#     page), the array SERVER_ARGS before the args (options every start
#     of the test takes). Start number $n writes $tmp/out.$n and
#     $tmp/log.$n; sets server_pid, port, base, and otlp_port / grpc_port
#     when asked for; a server that does not start fails the test and
#     exits;
#   - server_port OUT PID: wait for the server PID writing its stdout to
#     OUT to name its port (for a server started by hand);
#   - stop_server SIGNAL (sets stop_rc), require_alive WHEN.
# Before sourcing: the repository root as working directory, PROFD set.
set -uo pipefail

tmp=$(mktemp -d -t "profd-$(basename "$0" .sh).XXXXXX")
SERVER_ARGS=()
server_pid=
nfail=0
n=0
cleanup() {
	[ -n "$server_pid" ] && kill -9 "$server_pid" 2>/dev/null
	wait 2>/dev/null
	if [ "$nfail" -gt 0 ]; then echo "logs kept in $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT

ok() { echo "ok - $*"; }
fail() {
	echo "FAIL - $*"
	nfail=$((nfail + 1))
}
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
	local p=
	for _ in $(seq 1 400); do
		p=$(sed -n 's|.*explorer at http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$1" 2>/dev/null)
		[ -n "$p" ] && break
		kill -0 "$2" 2>/dev/null || break
		sleep 0.05
	done
	echo "$p"
}

start_server() {
	n=$((n + 1))
	port= otlp_port= grpc_port=
	"$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data" --ui "${SERVER_UI:-$tmp/ui}" \
		"${SERVER_ARGS[@]}" "$@" >"$tmp/out.$n" 2>"$tmp/log.$n" &
	server_pid=$!
	port=$(server_port "$tmp/out.$n" "$server_pid")
	if [ -z "$port" ]; then
		fail "server $n did not start: $(tail -n 3 "$tmp/log.$n")"
		exit 1
	fi
	otlp_port=$(sed -n 's|.*OTLP/HTTP on port \([0-9]*\).*|\1|p' "$tmp/out.$n")
	grpc_port=$(sed -n 's|.*OTLP/gRPC on port \([0-9]*\).*|\1|p' "$tmp/out.$n")
	base="http://127.0.0.1:$port"
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
