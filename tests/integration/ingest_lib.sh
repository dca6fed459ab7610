#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# ingest_lib.sh - helpers shared by tests/integration/test_ingest_*.sh
# (sourced, not run): server_lib.sh's (a temporary directory, a profd
# server on loopback port 0 with its ports read from its first lines,
# ok/fail counting), HTTP helpers that set $code and leave the body in
# $tmp/body, flame graph totals, and a final check that no sanitizer
# report reached the logs.
#
# Environment: PROFD (the binary under test), PROFD_ROOT (repo root).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PROFD=${PROFD:-build-san/profd}
TOOLS=${TOOLS:-$(dirname "$PROFD")/tests/tools}
MKOTLP=${MKOTLP:-$TOOLS/mkotlp}
CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'

source tests/integration/lib.sh
need_bin "$PROFD"
need_bin "$MKOTLP" "make O=$(dirname "$PROFD") build"

# $tmp, ok/fail/check/checkx, start_server (data in $tmp/data unless
# given; sets server_pid, port, base, otlp_port, grpc_port), stop_server,
# require_alive, rpc_status.
source tests/integration/server_lib.sh

# req METHOD PATH [curl args...]: sets code; body in $tmp/body, headers in $tmp/headers.
req() {
	local m=$1 p=$2
	shift 2
	code=$(curl -s --noproxy '*' -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$m" \
		"$@" "$base$p")
}

# otlp FILE [curl args...]: POST OTLP protobuf.
otlp() {
	local f=$1
	shift
	req POST /v1development/profiles -H "Content-Type: ${CT:-application/x-protobuf}" \
		--data-binary "@$f" "$@"
}

body_has() { grep -qa -- "$1" "$tmp/body"; }
header_has() { grep -qai -- "$1" "$tmp/headers"; }

# total TYPE SELECTOR [curl args...]: the flame graph total over all time, or "error CODE".
total() {
	local type=$1 q=$2
	shift 2
	local c
	c=$(curl -s --noproxy '*' -G -o "$tmp/flame.json" -w '%{http_code}' \
		--data-urlencode "type=$type" --data-urlencode "query=$q" \
		--data-urlencode "from=0" --data-urlencode "to=now" "$@" "$base/api/v1/flamegraph")
	[ "$c" = 200 ] || { echo "error $c"; return; }
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$tmp/flame.json"
}

# has_frame NAME: does the last flame graph ($tmp/flame.json) have a frame containing NAME?
has_frame() {
	python3 - "$tmp/flame.json" "$1" <<'PY'
import json, sys
root = json.load(open(sys.argv[1]))["root"]
stack = [root]
while stack:
    n = stack.pop()
    if sys.argv[2] in n["name"]:
        sys.exit(0)
    stack.extend(n.get("children", []))
sys.exit(1)
PY
}

# types [curl args...]: the profile type list (JSON) over all time.
types() {
	curl -s --noproxy '*' -G --data-urlencode "from=0" "$@" "$base/api/v1/profile-types"
}

# finish: the sanitizer check and the exit status.
finish() {
	if grep -l "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$tmp"/log.* >/dev/null 2>&1; then
		fail "sanitizer report in a server log:"
		grep -h -A5 "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$tmp"/log.* | head -30
	else
		ok "no sanitizer reports in the server logs"
	fi
	finish_counts
}
