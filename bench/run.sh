#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# run.sh - `make bench`: runs every bench/bench_*.sh in name order. Each
# section measures one thing against its real peer in the same run and
# writes its figures to bench/results/<section>.md. Add a section by adding
# a bench/bench_<name>.sh; ONLY=<substring> runs the matching ones only.
# Environment: PROFD_FAST (optimized profd, default build/profd),
# PROFD_CORPUS (shared corpus, default ../shared/corpus).
set -uo pipefail
cd "$(dirname "$0")/.."
export PROFD_FAST=${PROFD_FAST:-build/profd}
export PROFD_CORPUS=${PROFD_CORPUS:-$PWD/../shared/corpus}
mkdir -p bench/results
fail=0
for b in bench/bench_*.sh; do
	[ -f "$b" ] || continue
	[ -n "${ONLY:-}" ] && [[ "$b" != *"$ONLY"* ]] && continue
	echo "=== $b"
	if ! bash "$b"; then
		echo "=== FAIL $b"
		fail=1
	fi
done
exit $fail
