#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_otlp_independent.sh - OTLP written by profd, read by an independent
# decoder: npm protobufjs with our .proto files (tests/js/otlp_decode.mjs)
# must find, for every pprof file of the corpus converted with
# `profd convert X Y.otlp.pb`, one OTLP Profile per sample type with the
# sample count and total that `profd top --json` reports for the pprof
# file (itself checked against google/pprof by test_corpus_top.sh), and
# every dictionary index in range.
# Environment: PROFD (binary under test), PROFD_CORPUS (corpus folder).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
source tests/integration/lib.sh

need_corpus "$CORPUS/pprof"
if ! command -v node >/dev/null || [ ! -d tests/js/node_modules/protobufjs ]; then
	skip "node or tests/js/node_modules/protobufjs missing (run: make deps)"
fi
lib_tmp
for f in "$CORPUS"/pprof/*; do
	name=$(basename "$f")
	if ! "$PROFD" convert "$f" "$tmp/x.otlp.pb" 2>"$tmp/err" ||
		! "$PROFD" top --json -n 0 "$f" >"$tmp/ours.json" 2>>"$tmp/err" ||
		! node tests/js/otlp_decode.mjs src/format/proto "$tmp/x.otlp.pb" >"$tmp/js.json" 2>>"$tmp/err"; then
		fail "$name: $(head -c 600 "$tmp/err")"
		continue
	fi
	if python3 - "$tmp/ours.json" "$tmp/js.json" <<'PY'; then
import json, sys
ours, js = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["profiles"]
want = [(t["type"], t["unit"]) for t in ours["sample_types"]]
got = [(p["type"], p["unit"]) for p in js]
if got != want:
    print("   profiles %s, want one per sample type %s" % (got, want)); sys.exit(1)
for p in js:
    if p["samples"] != ours["samples"] or int(p["total"]) != ours["totals"][p["type"]]:
        print("   %s: protobufjs sees %d samples, total %s; profd top: %d samples, total %d"
              % (p["type"], p["samples"], p["total"], ours["samples"], ours["totals"][p["type"]]))
        sys.exit(1)
PY
		ok "$name"
	else
		fail "$name"
	fi
done
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ] && [ "$npass" -gt 0 ]
