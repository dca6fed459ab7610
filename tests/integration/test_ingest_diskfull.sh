#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_diskfull.sh - ingest onto a full disk (a 3 MiB tmpfs):
# once the WAL cannot grow, ingest answers 507 naming the cause (no
# acknowledgement for what is not on disk), queries still work, and after
# a restart on the same full disk exactly the acknowledged samples are
# there and the replay finds nothing corrupt. Needs root (mount); skipped
# otherwise. Then a file-size limit (RLIMIT_FSIZE, set on the running
# server with prlimit): the WAL write past it fails with EFBIG (507, the
# write rolled back) instead of SIGXFSZ killing the server, and after a
# restart without the limit exactly the acknowledged samples are there.
source "$(dirname "$0")/ingest_lib.sh"
LOAD=${LOAD:-$TOOLS/ingestload}
LT='process_cpu:samples:count:cpu:nanoseconds'

if [ "$(id -u)" != 0 ]; then
	skip "needs root to mount a small tmpfs"
fi
mkdir -p "$tmp/full"
if ! mount -t tmpfs -o size=3m tmpfs "$tmp/full" 2>/dev/null; then
	skip "cannot mount a tmpfs here"
fi
# At exit, once the server is gone (it keeps files there open): unmount,
# so that the folder can be removed.
unmount() {
	wait 2>/dev/null
	umount "$tmp/full" 2>/dev/null
}
lib_exit_hooks+=(unmount)

start_server --data "$tmp/full/data"
"$LOAD" --port "$port" --clients 2 --seconds 3 --samples 200 --service full \
	--acked-file "$tmp/acked" >"$tmp/load.json" 2>/dev/null
acked=$(cat "$tmp/acked" 2>/dev/null || echo 0)
echo "  load: $(cat "$tmp/load.json")"
n507=$(grep -c 'status=507.*No space left on device' "$tmp/log.$n")
checkx "the disk filled up: $n507 requests answered 507 naming ENOSPC" '[ "$n507" -gt 0 ]'
checkx "some requests were acknowledged before ($acked samples)" '[ "$acked" -gt 0 ]'
check "queries still answer on a full disk" [ "$(total "$LT" '{service.name="full"}')" = "$acked" ]
req GET /healthz
check "server alive" [ "$code" = 200 ]
stop_server TERM
check "SIGTERM on a full disk stops cleanly" [ "$stop_rc" = 0 ]
start_server --data "$tmp/full/data"
check "after restart: exactly the acknowledged samples ($acked)" \
	[ "$(total "$LT" '{service.name="full"}')" = "$acked" ]
checkx "replay found nothing corrupt" 'grep -q "corrupt_bytes=0" "$tmp/log.$n" && ! grep -q "saved path=" "$tmp/log.$n"'
stop_server TERM

# A file-size limit of 512 KiB on the running server.
start_server --data "$tmp/fsize"
if prlimit --fsize=524288 --pid "$server_pid" 2>/dev/null; then
	"$LOAD" --port "$port" --clients 4 --seconds 3 --samples 2000 --service fsize \
		--acked-file "$tmp/acked2" >"$tmp/load2.json" 2>/dev/null
	acked2=$(cat "$tmp/acked2" 2>/dev/null || echo 0)
	echo "  load: $(cat "$tmp/load2.json")"
	require_alive "past the file-size limit"
	nbig=$(grep -c 'status=507.*File too large' "$tmp/log.$n")
	checkx "past the file-size limit: $nbig requests answered 507 naming EFBIG, the server alive" \
		'[ "$nbig" -gt 0 ]'
	checkx "some requests were acknowledged before ($acked2 samples)" '[ "$acked2" -gt 0 ]'
	check "queries answer the acknowledged samples" \
		[ "$(total "$LT" '{service.name="fsize"}')" = "$acked2" ]
	stop_server TERM
	start_server --data "$tmp/fsize"
	check "after a restart without the limit: exactly the acknowledged samples ($acked2)" \
		[ "$(total "$LT" '{service.name="fsize"}')" = "$acked2" ]
	checkx "replay found nothing corrupt" 'grep -q "corrupt_bytes=0" "$tmp/log.$n"'
	stop_server TERM
else
	echo "  skip the file-size limit part: prlimit cannot set it here"
	stop_server TERM
fi
finish
