#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_store_crash.sh - kill -9 the store at random points, many times:
#   - tests/tools/storecrash ingests into one data directory, flushing and
#     compacting as it goes, printing each acknowledged request;
#   - it is killed after a random 60..260 ms, in whatever it was doing
#     (ingest and its WAL fsync, a block write, a compaction); the phase
#     it was in is counted;
#   - `profd store check` must pass on the crashed directory as left (a
#     torn WAL tail is only a warning), then the verifier opens the store
#     (repair) and checks every acknowledged request is present exactly
#     once, then `profd store check` must pass again.
# ITER (default 60) iterations on one growing directory. Needs $PROFD and
# the storecrash helper built next to it.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
TOOL=${STORECRASH:-$(dirname "$PROFD")/tests/tools/storecrash}
ITER=${ITER:-60}

source tests/integration/lib.sh
need_bin "$PROFD"
need_bin "$TOOL" "make O=$(dirname "$PROFD") build"

lib_tmp
pid=
at_exit() { if [ -n "$pid" ]; then kill -9 "$pid" 2>/dev/null; fi; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
data=$tmp/data
acks=$tmp/acks
: >"$acks"
declare -A phases=([ingest]=0 [flush]=0 [compact]=0 [none]=0)
start=$(date +%s)
next=1
RANDOM=${SEED:-$$}
for i in $(seq 1 "$ITER"); do
	# Past every id tried so far: a request in flight at a kill may be stored.
	"$TOOL" run "$data" $((next)) >"$tmp/out" 2>"$tmp/err.$i" &
	pid=$!
	sleep "0.$(printf '%03d' $((60 + RANDOM % 200)))"
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	pid=
	grep '^ack ' "$tmp/out" >>"$acks"
	tried=$(awk '$1 == "phase" && $2 == "ingest" && $3 > m { m = $3 } END { print m + 0 }' "$tmp/out")
	[ "$tried" -ge "$next" ] && next=$((tried + 1))
	last=$(grep '^phase ' "$tmp/out" | tail -1 | cut -d' ' -f2)
	phases[${last:-none}]=$((${phases[${last:-none}]} + 1))
	if ! "$PROFD" store check --quiet "$data" >"$tmp/check.$i" 2>&1; then
		fail "iteration $i: store check on the crashed directory (killed in ${last:-?})"
		cat "$tmp/check.$i"
		break
	fi
	if ! "$TOOL" verify "$data" "$acks" >"$tmp/verify.$i" 2>&1; then
		fail "iteration $i: acknowledged samples not exactly once (killed in ${last:-?})"
		tail -5 "$tmp/verify.$i"
		break
	fi
	if ! "$PROFD" store check --quiet "$data" >"$tmp/check2.$i" 2>&1; then
		fail "iteration $i: store check after the restart"
		cat "$tmp/check2.$i"
		break
	fi
	rm -f "$tmp/err.$i" "$tmp/check.$i" "$tmp/check2.$i"
done
nacks=$(grep -c '^ack ' "$acks")
echo "kills: $ITER (in ingest ${phases[ingest]}, flush ${phases[flush]}, compaction ${phases[compact]}, before the first step ${phases[none]}); acknowledged requests: $nacks; $(($(date +%s) - start))s"
cat "$tmp/verify.$ITER" 2>/dev/null
[ "$nacks" -gt 100 ] || fail "too few requests acknowledged ($nacks) for the test to mean anything"
[ $((phases[flush] + phases[compact])) -gt 0 ] || fail "no kill landed in a flush or a compaction"
if [ "$nfail" -eq 0 ]; then ok "$ITER kill -9 crashes: store check passes, every acknowledged sample exactly once"; fi
finish_counts
