#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_explorer.sh - the Profiling Explorer (ui/) in Debian's chromium,
# driven by tests/js/explorer_views.test.mjs against a real `profd server`
# serving the repository's ui/ directory, on deterministic data (mkotlp):
#   - "shop" (process.executable.name=checkoutd): period A then period B,
#     10 min apart; computePrice (called by handle and by batch) doubles
#     its samples from A to B, parseJSON loses as many, the rest keeps
#     the same share: the compare view must paint computePrice red,
#     parseJSON green and logRequest / gcBgMarkWorker neutral;
#   - a heap profile of "shop" (bytes: compare refuses it against CPU);
#   - "search" (indexer) with an unsymbolized frame of a binary the
#     server has no file for (stack health);
#   - "worker": one sample every 100 ms in runs of the same stack
#     (flame chart spans);
#   - "big": a 16 000-leaf profile (16 421 nodes) for the render timing;
#   - "pyapp": Python frames (frame type cpython) between CPython's own
#     native frames, for hide=python and colour by frame type;
#   - "deep": a 300-frame stack (the page must stay one screen tall);
#   - "svc00".."svc79": a fleet, a profile every 10 s for an hour each
#     (the flame chart at fleet size, its drawing time measured);
#   - the corpus Go CPU profile (gen--cpu.pprof) when $PROFD_CORPUS has it;
#   - a second, empty server for the newcomer check (the browser test
#     posts the first profile to it with the page open).
# tests/js/explorer_views.test.mjs checks the views' numbers against the
# API's, the URL round trip, the dark theme; explorer_investigate.test.mjs
# the problems of issue 22 (first run, stale answers, compare defaults,
# deep stacks, chart rates, bare words, the frame menu, the fleet flame
# chart). Both save screenshots in tests/artifacts/ui/ (ui/screenshots/
# is renewed from there).
# Needs $PROFD and mkotlp built next to it, node + tests/js/node_modules.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
MKOTLP=${MKOTLP:-$(dirname "$PROFD")/tests/tools/mkotlp}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
T0=1700000000000 # ms: shop period A; B starts 10 min later
NS=10000000      # one sample: 10 ms of CPU

source tests/integration/lib.sh
need_bin "$PROFD"
need_bin "$MKOTLP"
command -v node >/dev/null || skip "node is not installed"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || skip "chromium is not installed"
[ -d tests/js/node_modules/playwright-core ] || die "tests/js/node_modules missing (make deps)"
bash scripts/build-ui.sh || die "scripts/build-ui.sh"

source tests/integration/server_lib.sh
SERVER_UI=ui start_server
post() { curl -s --noproxy '*' -o /dev/null -w '%{http_code}' -X POST \
	-H 'Content-Type: application/x-protobuf' --data-binary "@$1" "$base/v1development/profiles"; }

# rep STACK N: N "--stack STACK" arguments (N samples of that stack per profile).
rep() { for _ in $(seq "$2"); do printf -- '--stack\n%s\n' "$1"; done; }
mapfile -t SA < <(rep "main;serve;handle;parseJSON=$NS" 6; rep "main;serve;handle;computePrice=$NS" 4
	rep "main;serve;logRequest=$NS" 2; rep "main;batch;computePrice=$NS" 1; rep "main;runtime.gcBgMarkWorker=$NS" 1)
mapfile -t SB < <(rep "main;serve;handle;parseJSON=$NS" 2; rep "main;serve;handle;computePrice=$NS" 8
	rep "main;serve;logRequest=$NS" 2; rep "main;batch;computePrice=$NS" 1; rep "main;runtime.gcBgMarkWorker=$NS" 1)
SHOP=(--attr service.name=shop --attr process.executable.name=checkoutd --count 30 --every-ms 10000)
"$MKOTLP" "${SHOP[@]}" --time-ms $T0 "${SA[@]}" "$tmp/a.pb"
"$MKOTLP" "${SHOP[@]}" --time-ms $((T0 + 600000)) "${SB[@]}" "$tmp/b.pb"
"$MKOTLP" --attr service.name=search --attr process.executable.name=indexer --time-ms $T0 \
	--count 60 --every-ms 10000 --stack "main;indexLoop;tokenize=$NS" --stack "main;indexLoop;tokenize=$NS" \
	--stack "main;indexLoop;@/opt/search/libidx.so@4f2a9c0de1b37788@0x1a2b=$NS" \
	--stack "[truncated];deepScan;@/opt/search/libidx.so@4f2a9c0de1b37788@0x1a2b=$NS" "$tmp/c.pb"
# a heap profile of shop: another type, another unit (compare must refuse the pair)
"$MKOTLP" --type inuse_space:bytes --attr service.name=shop --attr process.executable.name=checkoutd \
	--time-ms $T0 --stack 'main;serve;handle;parseJSON=4096' "$tmp/heap.pb"
# worker: runs of one stack, a sample every 100 ms, from T0 + 5 min
W0=$((T0 + 300000))
k=0
for s in "main;work;step" "main;work;flush;write" "main;work;step" "main;work;compress" "main;work;step" "main;work;flush;write"; do
	# per-sample thread.name: the flush/write runs on thread "io", the rest on "cpu"
	th=cpu
	[[ "$s" == *flush* ]] && th=io
	"$MKOTLP" --attr service.name=worker --attr process.executable.name=worker --time-ms $((W0 + k * 2000)) \
		--count 20 --every-ms 100 --stack "$s=$NS" --sattr "thread.name=$th" "$tmp/w$k.pb"
	k=$((k + 1))
done
# big: 20 x 20 x 40 = 16 000 leaves under main, 30 min after T0
python3 - "$tmp/big.args" "$NS" <<'EOF'
import sys
out, ns = sys.argv[1], int(sys.argv[2])
with open(out, "w") as f:
    i = 0
    for a in range(20):
        for b in range(20):
            for c in range(40):
                f.write("--stack\nmain;pkg%02d.Serve;pkg%02d/sub%02d.Handle;pkg%02d/sub%02d.leaf%02d=%d\n"
                        % (a, a, b, a, b, c, ns * (1 + (i * 7) % 13)))
                i += 1
EOF
mapfile -t BIG <"$tmp/big.args"
"$MKOTLP" --attr service.name=big --attr process.executable.name=bigapp --time-ms $((T0 + 1800000)) "${BIG[@]}" "$tmp/big.pb"
# pyapp: Python frames named by the agent (frame type cpython on "[cpython]")
# between CPython's own native frames (python3.12), 40 min after T0
PY=/usr/bin/python3.12
PYN="main!native!$PY;Py_RunMain!native!$PY;_PyEval_EvalFrameDefault!native!$PY;work_a!cpython"
"$MKOTLP" --attr service.name=pyapp --attr process.executable.name=python3.12 --time-ms $((T0 + 2400000)) \
	--stack "$PYN;spin!cpython;PyObject_Malloc!native!$PY=$((3 * NS))" \
	--stack "$PYN;_PyObject_Vectorcall!native!$PY;_PyEval_EvalFrameDefault!native!$PY;spin!cpython=$((2 * NS))" \
	"$tmp/py.pb"
# deep: one 300-frame stack, 3 h 10 min after T0 (the page must not grow 5 000 px tall)
DEEP=main
for i in $(seq 299); do DEEP="$DEEP;deep$i"; done
"$MKOTLP" --attr service.name=deep --attr process.executable.name=deepd --time-ms $((T0 + 11400000)) \
	--stack "$DEEP=$((5 * NS))" --stack "main;shallow=$NS" "$tmp/deep.pb"
# fleet: 80 services over one hour from T0 + 2 h, a profile every 10 s each,
# service k with k % 5 + 1 samples of its steady stack, a square wave of a
# second stack, and a 40-frame stack for every tenth (flame chart at fleet size)
F0=$((T0 + 7200000))
FLEET=()
for k in $(seq -w 0 79); do
	steady="main;svc$k.serve;svc$k.handle;svc$k.work=$NS"
	extra=()
	if [ $((10#$k % 10)) = 0 ]; then
		d="main"
		for i in $(seq 39); do d="$d;svc$k.level$i"; done
		extra=(--stack "$d=$NS")
	fi
	"$MKOTLP" --attr service.name="svc$k" --attr process.executable.name="svc$k" --time-ms $F0 \
		--count 360 --every-ms 10000 $(for _ in $(seq $((10#$k % 5 + 1))); do printf -- '--stack %s ' "$steady"; done) \
		"${extra[@]}" --wave "main;svc$k.serve;svc$k.gc=$NS" --wave-half-ms 60000 "$tmp/fleet$k.pb"
	FLEET+=("fleet$k")
done
for f in a b c heap w0 w1 w2 w3 w4 w5 big py deep "${FLEET[@]}"; do
	c=$(post "$tmp/$f.pb")
	[ "$c" = 200 ] || fail "ingest $f answered $c"
done
corpus_from=
if [ -f "$CORPUS/pprof/gen--cpu.pprof" ]; then
	if "$PROFD" convert "$CORPUS/pprof/gen--cpu.pprof" "$tmp/corpus.otlp.pb" 2>"$tmp/convert.err" &&
		[ "$(post "$tmp/corpus.otlp.pb")" = 200 ]; then
		corpus_from=1795978800000 # the profile starts 2026-11-29T19:00:59Z (MANIFEST.md)
	else
		fail "corpus gen--cpu.pprof: convert or ingest failed: $(head -c 300 "$tmp/convert.err")"
	fi
else
	echo "skip: no corpus at $CORPUS (the corpus part of the browser test is left out)"
fi

# newcomer: a second, empty server; the browser test opens its page and
# then posts a profile of "now" to it (first data must show by itself)
main_base=$base main_pid=$server_pid
"$MKOTLP" --attr service.name=newcomer --attr process.executable.name=newcomer --time-ms "$(($(date +%s) * 1000 - 60000))" \
	--count 6 --every-ms 10000 --stack "main;firstRun=$NS" "$tmp/newcomer.pb"
SERVER_UI=ui start_server --data "$tmp/data-empty"
empty_base=$base empty_pid=$server_pid
base=$main_base server_pid=$main_pid
at_exit() { kill -9 "$empty_pid" 2>/dev/null; }

mkdir -p tests/artifacts/ui
for t in explorer_views explorer_investigate; do
	PROFD_URL="$base/" PROFD_T0=$T0 PROFD_CORPUS_FROM=$corpus_from PROFD_ARTIFACTS=tests/artifacts/ui \
		PROFD_EMPTY_URL="$empty_base/" PROFD_NEWCOMER_PB="$tmp/newcomer.pb" PROFD_BENCH_OUT="$tmp/bench.txt" \
		timeout 300 node "tests/js/$t.test.mjs" >"$tmp/node.out" 2>&1
	rc=$?
	cat "$tmp/node.out"
	[ $rc = 0 ] || fail "browser test $t (exit $rc)"
	grep -q '^FAIL' "$tmp/node.out" && [ $rc = 0 ] && fail "browser test $t printed FAIL lines"
done

if grep -l "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$tmp"/log >/dev/null 2>&1; then
	fail "sanitizer reports"
fi
[ "$nfail" = 0 ] && ok "explorer: every view checked in the browser"
exit $((nfail > 0))
