#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_explorer_source.sh - the explorer's source view (ui/js/views/source.js) in Debian's
# chromium, driven by tests/js/explorer_source.test.mjs against a real `profd server` with
# --symbol-path and --source-path: the slow comparator of tests/workloads/sortline.c
# (sortline_lib.sh: samples on its HOT, CMP and first lines), built from a file under the
# source path (service sortline: the file's lines with cost bars) and from one outside it
# (sortline_ns: the per-line table and the reason); and the filter bar's fold control on a
# library sort recursing three levels deep above its comparator (service recur).
# Needs $PROFD and mkotlp built next to it, node + tests/js/node_modules, gcc and binutils.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
MKOTLP=${MKOTLP:-$(dirname "$PROFD")/tests/tools/mkotlp}
T=1700000000000

source tests/integration/lib.sh
need_bin "$PROFD"
need_bin "$MKOTLP"
command -v node >/dev/null || skip "node is not installed"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || skip "chromium is not installed"
[ -d tests/js/node_modules/playwright-core ] || die "tests/js/node_modules missing (make deps)"
source tests/integration/server_lib.sh
source tests/integration/sortline_lib.sh
sortline_have_tools || skip "gcc, readelf, nm or addr2line missing"
bash scripts/build-ui.sh || die "scripts/build-ui.sh"

mkdir -p "$tmp/src" "$tmp/nosrc"
cp tests/workloads/sortline.c "$tmp/src/sortline.c"
cp tests/workloads/sortline.c "$tmp/nosrc/sortline_ns.c"
SERVER_UI=ui start_server --symbol-path "$tmp" --source-path "$tmp/src"
sortline_ingest "$tmp/src/sortline.c" "$tmp/sortline" sortline $T || die "sortline data"
sortline_ingest "$tmp/nosrc/sortline_ns.c" "$tmp/sortline_ns" sortline_ns $T || die "sortline_ns data"
fs=()
for _ in 1 2 3 4 5 6 7; do fs+=(--stack 'main;qsort;msort;msort;msort;cmp=10000000'); done
fs+=(--stack 'main;qsort;msort;msort=10000000' --stack 'main;qsort;msort=10000000' --stack 'main;work=10000000')
"$MKOTLP" --attr service.name=recur --time-ms $T "${fs[@]}" "$tmp/recur.pb" || die "mkotlp recur"
code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' -X POST -H 'Content-Type: application/x-protobuf' \
	--data-binary "@$tmp/recur.pb" "$base/v1development/profiles")
[ "$code" = 200 ] || die "ingest recur: HTTP $code"

mkdir -p tests/artifacts/ui
PROFD_URL="$base/" PROFD_T=$T PROFD_HOT=$SL_HOT PROFD_CMP=$SL_CMP PROFD_FIRST=$SL_FIRST \
	PROFD_ARTIFACTS=tests/artifacts/ui timeout 120 node tests/js/explorer_source.test.mjs >"$tmp/node.out" 2>&1
rc=$?
cat "$tmp/node.out"
[ $rc = 0 ] || fail "browser test explorer_source (exit $rc)"
stop_server TERM
checkx "no sanitizer report from the server" '! grep -qE "Sanitizer|runtime error" "$tmp/log.$n"'
[ "$nfail" = 0 ] && ok "explorer source view checked in the browser"
exit $((nfail > 0))
