#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Runs every integration test: tests/integration/test_*.sh in name order.
# Environment: PROFD = the profd binary under test (sanitized build),
# PROFD_FAST = an optimized build for tests that measure a real workload.
# Each test prints "ok"/"FAIL" lines; a test that cannot run here (no
# ../shared corpus) says "skip: <why>" and exits 0.
set -uo pipefail
cd "$(dirname "$0")/.."
export PROFD=${PROFD:-build-san/profd} PROFD_FAST=${PROFD_FAST:-build/profd}
export PROFD_ROOT=$PWD
export PROFD_CORPUS=${PROFD_CORPUS:-$PWD/../shared/corpus}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
mkdir -p tests/artifacts
fail=0
for t in tests/integration/test_*.sh; do
	[ -f "$t" ] || continue
	[ -n "${ONLY:-}" ] && [[ "$t" != *"$ONLY"* ]] && continue
	echo "=== $t"
	start=$(date +%s)
	if bash "$t"; then
		echo "=== PASS $t ($(($(date +%s) - start))s)"
	else
		echo "=== FAIL $t ($(($(date +%s) - start))s)"
		fail=1
	fi
done
exit $fail
