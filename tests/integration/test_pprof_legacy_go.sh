#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_pprof_legacy_go.sh - a real producer of the legacy pprof text
# formats: tests/workloads/legacyprof.go writes the Go runtime's debug=1
# heap, allocs, goroutine, threadcreate, mutex and block profiles; for each,
# `go tool pprof -raw` of the file itself (pprof's legacy parsers, through
# pprof's own protobuf of it) must print exactly what it prints for profd's
# conversion of the file to pprof protobuf (`profd convert F F.pb`): same samples and values, same
# locations (addresses moved back into the call), same mappings, same
# period and drop/keep frames. Where pprof refuses a file (Go writes an
# empty threadcreate stack as "N @", which pprof calls malformed), profd
# must refuse it too, with exit status 1 and a reason.
# Run with each Go the machine has (Debian's 1.19 and a newer one).
# Environment: PROFD (binary under test). Needs go (skip otherwise).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
source tests/integration/lib.sh
if ! command -v go >/dev/null; then
	skip "go is not installed"
fi
need_bin "$PROFD"
lib_tmp
[ -z "${KEEP:-}" ] || keep_tmp=1
mkdir -p "$tmp/empty"
export PPROF_BINARY_PATH=$tmp/empty
# With each Go here (Debian's 1.19 and the newer one on PATH): each
# runtime's own files, read by its own pprof.
ngo=0
for gobin in go /usr/bin/go; do
	command -v "$gobin" >/dev/null || continue
	gv=$("$gobin" env GOVERSION)
	ngo=$((ngo + 1))
	bin=$tmp/$gv/bin out=$tmp/$gv/out
	mkdir -p "$bin" "$out"
	if ! GO111MODULE=off GOFLAGS= "$gobin" build -o "$bin/legacyprof" tests/workloads/legacyprof.go ||
		! "$bin/legacyprof" "$out"; then
		die "$gv: could not build or run tests/workloads/legacyprof.go"
	fi
	for f in "$out"/*.txt; do
		name="$gv $(basename "$f")"
		# The reference is pprof's own protobuf of the file, printed: what pprof
		# keeps through the format profd writes (newer pprof drops a numeric
		# label of value 0 without a unit when it reads protobuf, as it drops
		# the "bytes:[0]" of an empty heap record; Go 1.19's kept it).
		if "$gobin" tool pprof -symbolize=none -proto "$f" >"$f.own.pb" 2>"$f.ref" &&
			"$gobin" tool pprof -symbolize=none -raw "$f.own.pb" >"$f.ref" 2>&1; then
			if ! "$PROFD" convert "$f" "$f.pb" 2>"$f.err"; then
				fail "$name: pprof reads it, profd convert fails: $(cat "$f.err")"
				continue
			fi
			"$gobin" tool pprof -symbolize=none -raw "$f.pb" >"$f.ours" 2>&1
			if diff "$f.ref" "$f.ours" >"$f.diff"; then
				ok "$name: $(grep -c '^ *[0-9-]' "$f.ref") lines of pprof -raw agree"
			else
				fail "$name: $gobin tool pprof -raw differs"
				head -20 "$f.diff" | sed 's/^/     /'
			fi
		else
			"$PROFD" convert "$f" "$f.pb" 2>"$f.err"
			rc=$?
			if [ $rc = 1 ] && [ -s "$f.err" ] && ! grep -q Sanitizer "$f.err"; then
				ok "$name: refused like pprof ($(head -c 120 "$f.err"))"
			else
				fail "$name: pprof refuses it ($(head -1 "$f.ref")), profd exit $rc"
			fi
		fi
	done
done
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ] && [ "$npass" = $((6 * ngo)) ]
