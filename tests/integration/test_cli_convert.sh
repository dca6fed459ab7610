#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_convert.sh - `profd convert IN OUT [--event E] [--type T]` and
# `profd top --event E` (src/cli/cmd_convert.c, cmd_top.c):
#   - one corpus file of several input families (pprof, legacy pprof,
#     OTLP/JSON, JFR, folded; the text formats' own round trips are in
#     test_formats_corpus.sh) converted to each output (.pb.gz, .otlp.pb.gz,
#     .otlp.json, .folded) reads back (profd top --json) with the same
#     sample types and totals; folded output holds one column, the one
#     --type names (default: the last);
#   - JFR: for each event family, `top --event E` of the recording and of
#     its conversion (`convert --event E`) agree;
#   - usage errors exit 2 with a reason: --event on non-JFR input, --type
#     with a non-folded output, a sample type the profile does not have.
# Environment: PROFD (binary under test), PROFD_CORPUS (corpus folder).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
source tests/integration/lib.sh
need_corpus "$CORPUS/pprof"
need_bin "$PROFD"
lib_tmp

# compare A.json B.json [COLUMN]: same types and totals, or (folded) B's one
# column "samples" equal to A's total of COLUMN.
compare() {
	python3 - "$@" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
if len(sys.argv) > 3:
    col = sys.argv[3]
    want = a["totals"][col]
    got = b["totals"].get("samples")
    if got != want:
        print("   folded total %s, want %s (%s)" % (got, want, col))
        sys.exit(1)
    sys.exit(0)
for key in ("sample_types", "totals"):
    if a[key] != b[key]:
        print("   %s: %s -> %s" % (key, a[key], b[key]))
        sys.exit(1)
PY
}

inputs=(
	"$CORPUS/pprof/gen--cpu.pprof"
	"$CORPUS/pprof-legacy/gpprof--gobench.heap"
	"$CORPUS/otlp/pyroscope--otel-ebpf-profile.pb.json"
	"$CORPUS/jfr/jfrparser--example.jfr.gz"
	"$CORPUS/collapsed/asyncprofiler--sample1.collapsed"
)
for f in "${inputs[@]}"; do
	[ -f "$f" ] || continue
	name=$(basename "$f")
	if ! "$PROFD" top --json -n 0 "$f" >"$tmp/in.json" 2>"$tmp/err"; then
		fail "$name: top: $(cat "$tmp/err")"
		continue
	fi
	last=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["sample_types"][-1]["type"])' "$tmp/in.json")
	for out in x.pb.gz x.otlp.pb.gz x.otlp.json x.folded; do
		if ! "$PROFD" convert "$f" "$tmp/$out" 2>"$tmp/err" ||
			! "$PROFD" top --json -n 0 "$tmp/$out" >"$tmp/out.json" 2>>"$tmp/err"; then
			fail "$name -> $out: $(cat "$tmp/err")"
			continue
		fi
		if [ "$out" = x.folded ]; then
			compare "$tmp/in.json" "$tmp/out.json" "$last" && ok "$name -> $out ($last)" ||
				fail "$name -> $out"
		else
			compare "$tmp/in.json" "$tmp/out.json" && ok "$name -> $out" || fail "$name -> $out"
		fi
	done
done

# --type picks the folded column.
f=$CORPUS/pprof/gen--cpu.pprof
"$PROFD" top --json -n 0 "$f" >"$tmp/in.json"
if "$PROFD" convert --type samples/count "$f" "$tmp/s.txt" &&
	"$PROFD" top --json -n 0 "$tmp/s.txt" >"$tmp/out.json" &&
	compare "$tmp/in.json" "$tmp/out.json" samples; then
	ok "convert --type samples/count -> folded"
else
	fail "convert --type samples/count -> folded"
fi

# JFR event families: top --event E == top of convert --event E.
j=$CORPUS/jfr/gen--jdk17-profile.jfr
for e in cpu wall alloc lock; do
	[ -f "$j" ] || break
	if "$PROFD" top --json -n 0 --event $e "$j" >"$tmp/a.json" 2>"$tmp/err" &&
		"$PROFD" convert --event $e "$j" "$tmp/e.pb.gz" 2>>"$tmp/err" &&
		"$PROFD" top --json -n 0 "$tmp/e.pb.gz" >"$tmp/b.json" 2>>"$tmp/err" &&
		compare "$tmp/a.json" "$tmp/b.json"; then
		ok "jfr --event $e: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["totals"])' "$tmp/a.json")"
	else
		fail "jfr --event $e: $(cat "$tmp/err")"
	fi
done

# Usage errors: exit 2 and a reason.
usage() {
	local what=$1
	shift
	"$PROFD" "$@" >/dev/null 2>"$tmp/err"
	local rc=$?
	if [ $rc = 2 ] && grep -q "$what" "$tmp/err"; then
		ok "usage error: $what"
	else
		fail "usage error '$what': exit $rc, stderr: $(cat "$tmp/err")"
	fi
}
usage "applies to JFR input" convert --event cpu "$f" "$tmp/x.pb"
usage "applies to JFR input" top --event alloc "$f"
usage "applies to folded output only" convert --type cpu "$f" "$tmp/x.pb"
usage "no sample type 'nope'" convert --type nope "$f" "$tmp/x.folded"
usage "unknown output format" convert "$f" "$tmp/x.svg"
usage "unknown event" convert --event heap "$j" "$tmp/x.pb" || true

echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
