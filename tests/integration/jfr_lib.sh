# SPDX-License-Identifier: Apache-2.0
# jfr_lib.sh - sourced by the JFR integration tests: find_jfrdump sets
# JFRDUMP to the tests/tools/jfrdump helper (tests/tools/jfrdump.c) of the
# build under test: the one next to $PROFD (the sanitized build run.sh
# passes), else next to $PROFD_FAST, else build-jfr/, build-san/, build/.
# When only a libprofd.a is there, it builds jfrdump against it in $1 (a
# scratch folder), with the sanitizers the library was built with. On top
# of lib.sh (ok / fail / die / skip, $tmp).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
find_jfrdump() {
	local scratch=$1 dir lib flags=
	local dirs=("$(dirname "${PROFD:-build-san/profd}")" "$(dirname "${PROFD_FAST:-build/profd}")"
		build-jfr build-san build)
	JFRDUMP=${JFRDUMP:-}
	[ -n "$JFRDUMP" ] && [ -x "$JFRDUMP" ] && return 0
	for dir in "${dirs[@]}"; do
		if [ -x "$dir/tests/tools/jfrdump" ]; then
			JFRDUMP=$dir/tests/tools/jfrdump
			return 0
		fi
	done
	for dir in "${dirs[@]}"; do
		lib=$dir/libprofd.a
		[ -f "$lib" ] || continue
		if nm "$lib" 2>/dev/null | grep -q '__asan_report'; then
			flags="-fsanitize=address,undefined"
		fi
		if ${CC:-cc} -std=gnu11 -O2 -Isrc -Itests $flags -o "$scratch/jfrdump" \
			tests/tools/jfrdump.c "$lib" -lz -lxxhash -lprotobuf-c -lm 2>"$scratch/cc.log"; then
			JFRDUMP=$scratch/jfrdump
			return 0
		fi
	done
	return 1
}
