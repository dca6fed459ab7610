#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_symbolize_server.sh - query-time symbolization through the server,
# with debug info uploaded after the data:
#   - a C program built -O2 -g with code inlined two levels deep
#     (tests/integration/symbolize/inl.c) is split into a stripped binary
#     and its debug file (objcopy --only-keep-debug);
#   - an OTLP profile whose frames are unsymbolized addresses of the
#     stripped binary is ingested; the flame graph shows module+0xaddr;
#   - the debug file is uploaded with `profd debuginfo upload`; the same
#     query, without re-ingesting, shows inl_outer -> inl_mid -> inl_leaf
#     (innermost deepest) and the table reports no unsymbolized frames;
#   - GET/HEAD /api/v1/debuginfo/<id>, `profd debuginfo find`, and the
#     debuginfod endpoints /buildid/<id>/{debuginfo,executable} serve what
#     was stored, byte for byte;
#   - the upgrade rule: stripped binary (executable only), then the debug
#     file (upgraded), then a symtab-only binary (replaces the executable,
#     not the DWARF), then the stripped binary again (kept, 200);
#   - stack health (/api/v1/health/symbols): before, the binary is
#     "stripped" with no frame named; after, "dwarf" with all named;
#   - debuginfod federation: a second server started with DEBUGINFOD_URLS
#     pointing at the first names the same frames, fetching the debug file
#     in the background;
#   - bad uploads: not ELF, build ID mismatch, truncated ELF, a
#     1-character build ID, an empty body, an oversized Content-Length,
#     a wrong method: each 4xx with the reason, nothing stored.
# Needs $PROFD (+ mkotlp next to it), gcc, objcopy, strip, curl, python3.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
MKOTLP=${MKOTLP:-$(dirname "$PROFD")/tests/tools/mkotlp}
CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
FIX=tests/integration/symbolize

source tests/integration/lib.sh
need_bin "$PROFD"
need_bin "$MKOTLP"
for t in gcc objcopy strip curl python3 readelf; do
	command -v $t >/dev/null || skip "$t not installed"
done

source tests/integration/server_lib.sh

# --- fixture -------------------------------------------------------------------
gcc -O2 -g -o "$tmp/inl" "$FIX/inl.c" || { fail "cannot build inl.c"; exit 1; }
objcopy --only-keep-debug "$tmp/inl" "$tmp/inl.debug"
mkdir -p "$tmp/bin"
strip --strip-all -o "$tmp/bin/inl" "$tmp/inl" # no .gnu_debuglink: nothing to find locally
strip --strip-debug -o "$tmp/inl.symtab" "$tmp/inl"
bid=$(readelf -n "$tmp/inl" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
check "fixture has a build ID" [ -n "$bid" ]
# The call inside the inlined code: an address with a three-frame chain.
call=$(objdump -d --no-show-raw-insn "$tmp/inl" | awk '/<inl_outer>:/,/^$/' |
	grep 'call.*<sink_call>' | head -1 | awk -F: '{gsub(/ /, "", $1); print $1}')
entry=$(nm "$tmp/inl" | awk '$3 == "inl_outer" { print $1 }')
entry=$(printf '%x' $((0x${entry:-0})))
line_of() { grep -n "$1" "$FIX/inl.c" | head -1 | cut -d: -f1; }
L_LEAF=$(line_of MARK_LEAF)
L_MID=$(line_of MARK_MID)
L_OUTER=$(line_of MARK_OUTER)
check "fixture: found the inlined call (0x$call) in inl_outer (0x$entry)" [ -n "$call" -a -n "$entry" ]

"$MKOTLP" --attr process.executable.name=inl \
	--stack "main;@$tmp/bin/inl@$bid@0x$call=60" \
	--stack "main;@$tmp/bin/inl@$bid@0x$entry=40" "$tmp/native.pb" || { fail "mkotlp"; exit 1; }

# --- server ----------------------------------------------------------------------
start_server --symbol-path "$tmp/bin" # the stripped binary: its status is "stripped"

req() { # req METHOD PATH [curl args...]: sets code, body in $tmp/body
	local m=$1 p=$2
	shift 2
	code=$(curl -s --noproxy '*' -X "$m" -o "$tmp/body" -w '%{http_code}' "$@" "$base$p")
}
upload() { # upload BUILDID FILE [curl args]: POST
	local id=$1 f=$2
	shift 2
	req POST "/api/v1/debuginfo/$id" --data-binary "@$f" \
		-H 'Content-Type: application/octet-stream' "$@"
}
flame() {
	code=$(curl -s --noproxy '*' -G -o "$tmp/flame.json" -w '%{http_code}' \
		--data-urlencode "type=$CPU" --data-urlencode 'query={process.executable.name="inl"}' \
		--data-urlencode "from=now-1h" --data-urlencode "to=now" "$base/api/v1/flamegraph")
}
node_self() { # node_self 'a;b;c' -> self value, or none
	python3 - "$tmp/flame.json" "$1" <<'PY'
import json, sys
node = json.load(open(sys.argv[1]))["root"]
for name in sys.argv[2].split(";"):
    node = next((c for c in node["children"] if c["name"] == name), None)
    if node is None:
        print("none"); sys.exit(0)
print(node["self"])
PY
}
stored_ids() { ls "$tmp/data/debuginfo" 2>/dev/null | grep -v '^\.' | sort | tr '\n' ' '; }

code=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
	-H 'Content-Type: application/x-protobuf' --data-binary "@$tmp/native.pb" \
	"$base/v1development/profiles")
check "profile with unsymbolized frames ingested" [ "$code" = 200 ]

flame
check "before the upload: frames are module+0xaddr" \
	[ "$(node_self "main;inl+0x$call")" = 60 -a "$(node_self "main;inl+0x$entry")" = 40 ]

health() { # health EXPR: evaluate a python expression over /api/v1/health/symbols (as h)
	curl -s --noproxy '*' -G -o "$tmp/health.json" --data-urlencode "type=$CPU" \
		--data-urlencode 'query={process.executable.name="inl"}' "$base/api/v1/health/symbols"
	python3 -c 'import json, sys; h = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' \
		"$tmp/health.json" "$1" 2>&1
}
checkx "stack health before: the stripped binary, nothing symbolized, with a hint" \
	'[ "$(health "[(b[\"path\"], b[\"status\"], b[\"frames_symbolized\"], b[\"frames\"] > 0, b[\"samples_unsymbolized\"] == b[\"samples\"], \"upload\" in b[\"hint\"]) for b in h[\"binaries\"]]")" = "[('"'"'$tmp/bin/inl'"'"', '"'"'stripped'"'"', 0, True, True, True)]" ]'
checkx "stack health before: every sample has an unsymbolized frame" \
	'[ "$(health "h[\"samples\"] > 0 and h[\"samples_with_unsymbolized\"] == h[\"samples\"]")" = True ]'

# --- bad uploads: 4xx with a reason, nothing stored ------------------------------
printf 'this is not an ELF file' >"$tmp/notelf"
head -c 3000 "$tmp/inl.debug" >"$tmp/trunc.debug"
: >"$tmp/empty"
other=0123456789abcdef0123456789abcdef01234567
upload "$bid" "$tmp/notelf"
checkx "non-ELF upload -> 400 saying so" '[ "$code" = 400 ] && grep -q "not an ELF file" "$tmp/body"'
upload "$other" "$tmp/inl.debug"
checkx "build ID mismatch -> 400 naming both IDs" \
	'[ "$code" = 400 ] && grep -q "mismatch" "$tmp/body" && grep -q "$bid" "$tmp/body"'
upload "$bid" "$tmp/trunc.debug"
checkx "truncated ELF -> 400 saying truncated ($(head -c 120 "$tmp/body"))" \
	'[ "$code" = 400 ] && grep -qi "truncated\|past the end" "$tmp/body"'
upload a "$tmp/inl.debug"
checkx "1-character build ID -> 400" '[ "$code" = 400 ] && grep -q "hex digits" "$tmp/body"'
upload "${bid}zz" "$tmp/inl.debug"
checkx "non-hex build ID -> 400" '[ "$code" = 400 ]'
upload "$bid" "$tmp/empty"
checkx "empty upload -> 400" '[ "$code" = 400 ] && grep -q "empty" "$tmp/body"'
req POST "/api/v1/debuginfo/$bid" -H 'Content-Length: 99999999999' --data-binary x
checkx "announced oversized upload -> 413" '[ "$code" = 413 ]'
req PUT "/api/v1/debuginfo/$bid" --data-binary "@$tmp/inl.debug"
checkx "PUT -> 405" '[ "$code" = 405 ]'
check "nothing stored after the bad uploads (store: '$(stored_ids)')" [ -z "$(stored_ids)" ]
req GET "/api/v1/debuginfo/$bid"
check "GET before any upload -> 404" [ "$code" = 404 ]
req HEAD "/api/v1/debuginfo/$bid" -I
check "HEAD before any upload -> 404" [ "$code" = 404 ]
req GET "/buildid/$bid/debuginfo"
check "debuginfod before any upload -> 404" [ "$code" = 404 ]

# --- upgrade path: stripped -> debug file -> symtab-only (kept) -------------------
upload "$bid" "$tmp/bin/inl"
checkx "stripped binary stored as the executable (201)" \
	'[ "$code" = 201 ] && grep -q "\"outcome\":\"stored\"" "$tmp/body" && grep -q "\"executable\":true" "$tmp/body"'
flame
check "a stripped upload does not name anything" [ "$(node_self "main;inl+0x$call")" = 60 ]

"$PROFD" debuginfo upload --server "$base" "$tmp/inl.debug" >"$tmp/cli.out" 2>&1
checkx "profd debuginfo upload: the debug file upgrades the entry ($(cat "$tmp/cli.out"))" \
	'grep -q "upgraded (server quality dwarf)" "$tmp/cli.out"'
"$PROFD" debuginfo upload --server "$base" "$tmp/inl.debug" >"$tmp/cli.out" 2>&1
checkx "uploading it again is skipped" 'grep -q "already has it" "$tmp/cli.out"'
upload "$bid" "$tmp/inl.symtab"
checkx "a symtab-only binary replaces the stripped executable, not the DWARF" \
	'[ "$code" = 201 ] && grep -q "\"outcome\":\"upgraded\"" "$tmp/body" && grep -q "\"quality\":\"dwarf\"" "$tmp/body" && grep -q "\"executable_quality\":\"symtab\"" "$tmp/body"'
upload "$bid" "$tmp/bin/inl"
checkx "the stripped binary again is worse than both: 200 kept" \
	'[ "$code" = 200 ] && grep -q "\"outcome\":\"kept\"" "$tmp/body"'

# --- after the upload: names, files and lines, inline chain, no re-ingest --------
flame
check "inline chain outer -> mid -> leaf, innermost deepest (self 60)" \
	[ "$(node_self 'main;inl_outer;inl_mid;inl_leaf')" = 60 ]
check "the function entry resolves to inl_outer alone (self 40)" \
	[ "$(node_self 'main;inl_outer')" = 40 ]
check "no module+0xaddr left" [ "$(node_self "main;inl+0x$call")" = none ]
checkx "flame graph reports 0 unsymbolized frames" 'grep -q "\"unsymbolized\":0" "$tmp/flame.json"'

checkx "stack health after: the binary resolves through DWARF, all frames named" \
	'[ "$(health "[(b[\"status\"], b[\"frames_symbolized\"] == b[\"frames\"], b[\"samples_unsymbolized\"]) for b in h[\"binaries\"]] + [h[\"samples_with_unsymbolized\"], h[\"frames_symbolized\"] == h[\"frames\"]]")" = "[('"'"'dwarf'"'"', True, 0), 0, True]" ]'
req GET "/api/v1/health/symbols?type=nope:x"
checkx "stack health of an unknown type: empty, 200" '[ "$code" = 200 ] && grep -q "\"samples\":0" "$tmp/body"'
req GET "/api/v1/health/symbols?from=yesterday"
checkx "stack health with a bad time -> 400" '[ "$code" = 400 ]'

req GET "/api/v1/debuginfo/$bid"
checkx "GET /api/v1/debuginfo/<id>: dwarf, separate debug file, executable" \
	'[ "$code" = 200 ] && grep -q "\"quality\":\"dwarf\"" "$tmp/body" && grep -q "\"separate\":true" "$tmp/body" && grep -q "\"executable\":true" "$tmp/body"'
req HEAD "/api/v1/debuginfo/$(echo "$bid" | tr a-f A-F)" -I
check "HEAD with an upper-case build ID -> 200" [ "$code" = 200 ]
curl -s --noproxy '*' -o "$tmp/got.debug" "$base/buildid/$bid/debuginfo"
check "debuginfod /debuginfo serves the debug file byte for byte" cmp -s "$tmp/got.debug" "$tmp/inl.debug"
curl -s --noproxy '*' -o "$tmp/got.exe" "$base/buildid/$bid/executable"
check "debuginfod /executable serves the best executable (symtab copy)" cmp -s "$tmp/got.exe" "$tmp/inl.symtab"
req GET "/buildid/$bid/source/usr/src/x.c"
check "debuginfod /source -> 404" [ "$code" = 404 ]
req GET "/buildid/zz/debuginfo"
check "debuginfod with a bad build ID -> 400" [ "$code" = 400 ]
"$PROFD" debuginfo find --server "$base" "$bid" >"$tmp/find.out" 2>&1
checkx "profd debuginfo find prints the entry" 'grep -q "\"build_id\":\"$bid\"" "$tmp/find.out"'
"$PROFD" debuginfo find --server "$base" --output "$tmp/found.debug" "$bid" >/dev/null 2>&1
check "profd debuginfo find --output downloads the debug file" cmp -s "$tmp/found.debug" "$tmp/inl.debug"
"$PROFD" debuginfo find --server "$base" "$other" >/dev/null 2>&1
check "profd debuginfo find of an unknown build ID exits 1" [ $? = 1 ]
"$PROFD" debuginfo upload --server "$base" "$tmp/notelf" >/dev/null 2>"$tmp/err"
checkx "profd debuginfo upload of a non-ELF file exits 1 with a reason" \
	'[ $? = 1 ] && grep -qi "not an ELF" "$tmp/err"'
"$PROFD" debuginfo bogus >/dev/null 2>&1
check "profd debuginfo with an unknown subcommand exits 2" [ $? = 2 ]

# --- federation: a second server with DEBUGINFOD_URLS pointing at this one ----------
DEBUGINFOD_URLS="$base" DEBUGINFOD_CACHE_PATH="$tmp/dcache" no_proxy='*' \
	"$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data2" --ui "$tmp/ui" >"$tmp/out3" 2>"$tmp/log3" &
pid2=$!
port2=$(server_port "$tmp/out3" "$pid2")
if [ -n "$port2" ]; then
	code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' -X POST \
		-H 'Content-Type: application/x-protobuf' --data-binary "@$tmp/native.pb" \
		"http://127.0.0.1:$port2/v1development/profiles")
	got=none
	# The first queries queue the fetch and show addresses.
	inl_symbolized() {
		curl -s --noproxy '*' -G -o "$tmp/flame.json" --data-urlencode "type=$CPU" \
			--data-urlencode 'query={process.executable.name="inl"}' \
			"http://127.0.0.1:$port2/api/v1/flamegraph"
		got=$(node_self 'main;inl_outer;inl_mid;inl_leaf')
		[ "$got" = 60 ] && return 0
		return 1
	}
	wait_for 10 inl_symbolized || true
	check "a server with DEBUGINFOD_URLS fetches the debug file from another (self $got)" \
		[ "$code" = 200 -a "$got" = 60 ]
	checkx "debuginfod client on, in its log" 'grep -q "debuginfod client on" "$tmp/log3"'
	kill -TERM "$pid2"
	wait "$pid2"
	check "second server stops cleanly" [ $? = 0 ]
	check "no sanitizer report in the second server's log" \
		bash -c "! grep -q 'runtime error\|AddressSanitizer\|LeakSanitizer' '$tmp/log3'"
else
	fail "second server did not start: $(tail -3 "$tmp/log3")"
	kill -9 "$pid2" 2>/dev/null
fi

# --- the uploaded symbols survive a restart ---------------------------------------
stop_server TERM
check "server stops cleanly (rc $stop_rc)" [ "$stop_rc" = 0 ]
check "no sanitizer report in the server log" bash -c "! grep -q 'runtime error\|AddressSanitizer\|LeakSanitizer' '$tmp/log.$n'"

[ "$nfail" = 0 ] || exit 1
