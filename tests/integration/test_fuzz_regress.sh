#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_fuzz_regress.sh - replays the inputs that once crashed a fuzz target
# (tests/fuzz/regress/<target>/, see scripts/fuzz.sh) through the sanitized
# profd: `profd top` and `profd convert` to pprof and to OTLP must exit 0 or
# 1 (a clean refusal) with no sanitizer report, so a fixed crash stays fixed
# without a clang/libFuzzer build. Environment: PROFD (binary under test).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
source tests/integration/lib.sh
need_bin "$PROFD"
lib_tmp
for f in tests/fuzz/regress/*/*; do
	[ -f "$f" ] || continue
	for cmd in "top --json" "convert-otlp" "convert-pprof"; do
		case "$cmd" in
		convert-otlp) "$PROFD" convert "$f" "$tmp/out.otlp.pb" >/dev/null 2>"$tmp/err" ;;
		convert-pprof) "$PROFD" convert "$f" "$tmp/out.pb.gz" >/dev/null 2>"$tmp/err" ;;
		*) "$PROFD" $cmd "$f" >/dev/null 2>"$tmp/err" ;;
		esac
		rc=$?
		if { [ $rc = 0 ] || [ $rc = 1 ]; } && ! grep -qE 'Sanitizer|runtime error|assertion failed' "$tmp/err"; then
			npass=$((npass + 1)) # no line each: there are many
		else
			fail "$cmd $f: exit $rc: $(head -c 800 "$tmp/err")"
		fi
	done
done
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
