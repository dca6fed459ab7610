# SPDX-License-Identifier: Apache-2.0
# sortline_lib.sh - data for the per-line tests (sourced after server_lib.sh): a build of
# tests/workloads/sortline.c, whose comparator cmp_slow spends its time in the one-line loop
# marked HOT and compares on the line marked CMP, and a profile of samples at addresses of
# cmp_slow that addr2line (binutils, not profd) maps to those lines.
#
#   sortline_have_tools          0 when gcc, readelf, nm and addr2line are installed
#   sortline_lines               sets $SL_HOT and $SL_CMP, the HOT and CMP line numbers
#   sortline_ingest SRC BIN SERVICE TIME_MS [CURL ARGS...]
#                                builds SRC (-O0 -g, $tmp named /build in the DWARF, as
#                                on a build machine: the source path finds the file by its
#                                trailing components) into BIN and POSTs to $base, as service
#                                SERVICE at TIME_MS, 20 samples of 10 ms on the HOT line, 3 on
#                                the CMP line and 1 on cmp_slow's first line calling memcpy,
#                                each under main;qsort; sets $SL_FIRST (that first line) and
#                                $SL_BID; returns 1 (after `fail`) when anything went wrong.
sortline_have_tools() {
	local t
	for t in gcc readelf nm addr2line; do
		command -v $t >/dev/null || return 1
	done
}

sortline_lines() {
	SL_HOT=$(grep -n '/\* HOT \*/' tests/workloads/sortline.c | cut -d: -f1)
	SL_CMP=$(grep -n '/\* CMP \*/' tests/workloads/sortline.c | cut -d: -f1)
}

sortline_ingest() {
	local src=$1 bin=$2 svc=$3 at=$4 start size ah ac ae fs=() code
	shift 4
	sortline_lines
	gcc -O0 -g -fno-omit-frame-pointer -fdebug-prefix-map="$tmp"=/build -o "$bin" "$src" ||
		{ fail "cannot build $src"; return 1; }
	SL_BID=$(readelf -n "$bin" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
	read -r start size < <(nm -S "$bin" | awk '$4 == "cmp_slow" { print $1, $2 }')
	# The first address addr2line puts on each line of cmp_slow: "LINE 0xADDR".
	seq $((0x$start)) $((0x$start + 0x$size - 1)) | awk '{ printf "0x%x\n", $1 }' >"$bin.addrs"
	addr2line -e "$bin" <"$bin.addrs" | sed 's/.*://; s/ .*//' | paste -d' ' - "$bin.addrs" |
		awk '!seen[$1]++ { print $1, $2 }' >"$bin.lines"
	SL_FIRST=$(head -n 1 "$bin.lines" | cut -d' ' -f1)
	ah=$(awk -v l="$SL_HOT" '$1 == l { print $2 }' "$bin.lines")
	ac=$(awk -v l="$SL_CMP" '$1 == l { print $2 }' "$bin.lines")
	ae=$(awk -v l="$SL_FIRST" '$1 == l { print $2 }' "$bin.lines")
	if [ -z "$ah" ] || [ -z "$ac" ] || [ -z "$ae" ]; then
		fail "addr2line: no address of lines $SL_HOT/$SL_CMP/$SL_FIRST of cmp_slow ($(tr '\n' ' ' <"$bin.lines"))"
		return 1
	fi
	for _ in $(seq 20); do fs+=(--stack "main;qsort;@$bin@$SL_BID@$ah=10000000"); done
	for _ in 1 2 3; do fs+=(--stack "main;qsort;@$bin@$SL_BID@$ac=10000000"); done
	fs+=(--stack "main;qsort;@$bin@$SL_BID@$ae;memcpy=10000000")
	"$MKOTLP" --attr service.name="$svc" --time-ms "$at" "${fs[@]}" "$bin.pb" || { fail "mkotlp $svc"; return 1; }
	code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' -X POST "$@" \
		-H 'Content-Type: application/x-protobuf' --data-binary "@$bin.pb" "$base/v1development/profiles")
	[ "$code" = 200 ] || { fail "ingest $svc: HTTP $code"; return 1; }
}
