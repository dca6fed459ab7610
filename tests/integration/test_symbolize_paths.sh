#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_symbolize_paths.sh - the server opens no file the data names
# (symbolize/symbolizer.h, docs/security.md). A server run under
# `strace -f -e trace=open,openat,openat2` ingests crafted profiles and
# answers flame graphs over them; its file opens are then checked:
#   - a mapping path outside every --symbol-path (a real ELF binary with
#     the right build ID, /etc/passwd, a FIFO) is never opened, and its
#     frames stay module+0xaddr;
#   - a FIFO and a symlink to the outside binary *inside* the symbol path
#     are not opened either (a FIFO is not a regular file; a symlink is
#     judged by where it leads), and the query answers promptly;
#   - a build ID such as "../../../../etc/passwd" is dropped at ingest:
#     no path is ever made of it (nothing under the debug root, nothing
#     named passwd);
#   - the same binary under --symbol-path is opened and its frame named;
#   - without --symbol-path even that file is not opened.
# Needs $PROFD (+ mkotlp next to it), gcc, readelf, nm, strace, curl.
source "$(dirname "$0")/ingest_lib.sh"

for t in gcc readelf nm strace curl python3 mkfifo; do
	command -v $t >/dev/null || skip "$t not installed"
done
strace -f -qq -o /dev/null true 2>/dev/null || skip "strace cannot trace here"

# --- fixture -------------------------------------------------------------------
mkdir -p "$tmp/outside" "$tmp/syms"
printf '%s\n' 'volatile long sink;' \
	'__attribute__((noinline)) long trusted_leaf(long n) { long x = 0; for (long i = 0; i < n; i++) x = x * 31 + i; return x; }' \
	'int main(void) { sink = trusted_leaf(1000); return 0; }' >"$tmp/app.c"
gcc -O0 -g -o "$tmp/outside/app" "$tmp/app.c" || { fail "cannot build app.c"; exit 1; }
cp "$tmp/outside/app" "$tmp/syms/app"
sed 's/trusted_leaf/linked_leaf/g' "$tmp/app.c" >"$tmp/app2.c"
gcc -O0 -g -o "$tmp/outside/app2" "$tmp/app2.c" || { fail "cannot build app2.c"; exit 1; }
ln -s "$tmp/outside/app2" "$tmp/syms/link"
mkfifo "$tmp/outside/fifo" "$tmp/syms/fifo"
bid=$(readelf -n "$tmp/outside/app" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
addr=$(nm "$tmp/outside/app" | awk '$3 == "trusted_leaf" { print $1 }')
addr=$(printf '%x' $((0x${addr:-0} + 4)))
bid2=$(readelf -n "$tmp/outside/app2" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
addr2=$(nm "$tmp/outside/app2" | awk '$3 == "linked_leaf" { print $1 }')
addr2=$(printf '%x' $((0x${addr2:-0} + 4)))
check "fixture: build IDs and the functions' addresses" \
	[ -n "$bid" -a "$addr" != 4 -a -n "$bid2" -a "$bid2" != "$bid" -a "$addr2" != 4 ]

"$MKOTLP" --attr service.name=outside --stack "main;@$tmp/outside/app@$bid@0x$addr=11" "$tmp/a.pb"
"$MKOTLP" --attr service.name=passwd --stack "main;@/etc/passwd@@0x10=12" "$tmp/b.pb"
"$MKOTLP" --attr service.name=fifo --stack "main;@$tmp/outside/fifo@@0x10=13" \
	--stack "main;@$tmp/syms/fifo@@0x10=14" "$tmp/c.pb"
"$MKOTLP" --attr service.name=badid --stack "main;@@../../../../etc/passwd@0x10=15" \
	--stack "main;@$tmp/syms/app@0123/../../x@0x$addr=16" "$tmp/d.pb"
"$MKOTLP" --attr service.name=link --stack "main;@$tmp/syms/link@$bid2@0x$addr2=17" "$tmp/e.pb"
"$MKOTLP" --attr service.name=allowed --stack "main;@$tmp/syms/app@$bid@0x$addr=18" "$tmp/f.pb"

# A server under strace; at exit the server itself (strace's child) is killed too.
# LeakSanitizer cannot run under ptrace: leaks are checked by the other tests.
cat >"$tmp/profd-traced" <<EOF
#!/bin/sh
ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}detect_leaks=0
export ASAN_OPTIONS
exec strace -f -qq -e trace=open,openat,openat2 -o "$tmp/trace.\$\$" "$PWD/$PROFD" "\$@"
EOF
chmod +x "$tmp/profd-traced"
REAL_PROFD=$PROFD
PROFD=$tmp/profd-traced
traced_children() { pgrep -P "$1" 2>/dev/null; }
at_exit() { [ -n "${server_pid:-}" ] && for c in $(traced_children "$server_pid"); do kill -9 "$c"; done; }
stop_traced() {
	local c
	c=$(traced_children "$server_pid")
	[ -n "$c" ] && kill -TERM $c
	wait "$server_pid" 2>/dev/null
	server_pid=
}
# flame SERVICE: flame graph of one service into $tmp/flame.json; prints the seconds it took
flame() {
	local t0 t1
	t0=$(date +%s.%N)
	code=$(curl -s --noproxy '*' -m 20 -G -o "$tmp/flame.json" -w '%{http_code}' \
		--data-urlencode "type=$CPU" --data-urlencode "query={service.name=\"$1\"}" \
		--data-urlencode from=0 --data-urlencode to=now "$base/api/v1/flamegraph")
	t1=$(date +%s.%N)
	python3 -c "print(round($t1 - $t0, 2))"
}
# opened PATTERN: the trace's opens (any thread) of paths matching PATTERN
opened() { grep -h 'open' "$tmp"/trace.* 2>/dev/null | grep -F -- "$1"; }

# --- with a symbol path ------------------------------------------------------------
start_server --symbol-path "$tmp/syms"
for f in a b c d e f; do
	otlp "$tmp/$f.pb"
	check "crafted profile $f.pb ingested" [ "$code" = 200 ]
done

secs=$(flame outside)
check "outside the symbol path: frame stays app+0x$addr" has_frame "app+0x$addr"
checkx "... and is not named" '! has_frame trusted_leaf'
secs=$(flame passwd)
check "/etc/passwd as a mapping: frame passwd+0x10" has_frame "passwd+0x10"
secs=$(flame fifo)
checkx "FIFOs as mappings (outside and inside the symbol path): answered promptly (${secs}s)" \
	'[ "$code" = 200 ] && python3 -c "import sys; sys.exit(0 if $secs < 5 else 1)"'
check "... frames fifo+0x10" has_frame "fifo+0x10"
secs=$(flame badid)
check "a build ID of ../../../../etc/passwd: answered, frame 0x10" has_frame "0x10"
check "a bad build ID on an allowed path: the file is used without it (named)" has_frame trusted_leaf
secs=$(flame link)
check "a symlink in the symbol path to a file outside it: not followed, link+0x$addr2" \
	has_frame "link+0x$addr2"
secs=$(flame allowed)
check "inside the symbol path with the right build ID: trusted_leaf named" has_frame trusted_leaf
require_alive "after the queries"
stop_traced

checkx "the server opened the allowed binary (the trace works)" \
	'[ -n "$(opened "\"$tmp/syms/app\"")" ]'
checkx "never opened anything under $tmp/outside" '[ -z "$(opened "$tmp/outside")" ] || { opened "$tmp/outside"; false; }'
checkx "never opened /etc/passwd" '[ -z "$(opened /etc/passwd)" ] || { opened /etc/passwd; false; }'
checkx "never opened the FIFO inside the symbol path" '[ -z "$(opened "$tmp/syms/fifo")" ]'
checkx "never opened the symlink" '[ -z "$(opened "$tmp/syms/link")" ]'
checkx "never made a path of a build ID (no .build-id, no ../)" \
	'[ -z "$(opened .build-id)" ] && [ -z "$(opened "../")" ] || { opened .build-id; opened ../; false; }'

# --- without a symbol path: the data's paths are nobody's promise ---------------------
rm -f "$tmp"/trace.*
start_server
secs=$(flame allowed)
check "no --symbol-path: the same frame stays app+0x$addr" has_frame "app+0x$addr"
stop_traced
checkx "... and the binary was not opened" '[ -z "$(opened "$tmp/syms/app")" ] || { opened "$tmp/syms/app"; false; }'

PROFD=$REAL_PROFD
code=$("$PROFD" server --symbol-path "$tmp/syms/app" --data "$tmp/d2" --listen 127.0.0.1:0 \
	>/dev/null 2>"$tmp/sp.err" </dev/null; echo $?)
checkx "--symbol-path of a file is refused (exit 2, named)" \
	'[ "$code" = 2 ] && grep -q "not a directory" "$tmp/sp.err"'
finish
