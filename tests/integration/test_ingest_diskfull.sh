#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_diskfull.sh - ingest onto a full disk (a 3 MiB tmpfs):
# once the WAL cannot grow, ingest answers 507 naming the cause (no
# acknowledgement for what is not on disk), queries still work, and after
# a restart on the same full disk exactly the acknowledged samples are
# there and the replay finds nothing corrupt. Needs root (mount); skipped
# otherwise.
source "$(dirname "$0")/ingest_lib.sh"
LOAD=${LOAD:-$TOOLS/ingestload}
LT='process_cpu:samples:count:cpu:nanoseconds'

if [ "$(id -u)" != 0 ]; then
	echo "skip: needs root to mount a small tmpfs"
	exit 0
fi
mkdir -p "$tmp/full"
if ! mount -t tmpfs -o size=3m tmpfs "$tmp/full" 2>/dev/null; then
	echo "skip: cannot mount a tmpfs here"
	exit 0
fi
unmount() { umount "$tmp/full" 2>/dev/null; }
trap 'unmount; cleanup' EXIT

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
finish
