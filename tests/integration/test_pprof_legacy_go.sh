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
# Environment: PROFD (binary under test). Needs go (skip otherwise).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
if ! command -v go >/dev/null; then
	echo "skip: go is not installed"
	exit 0
fi
[ -x "$PROFD" ] || { echo "FAIL: $PROFD is not built"; exit 1; }
tmp=$(mktemp -d /tmp/profd-legacy-go.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/out" "$tmp/empty"
if ! GO111MODULE=off GOFLAGS= go build -o "$tmp/bin/legacyprof" tests/workloads/legacyprof.go ||
	! "$tmp/bin/legacyprof" "$tmp/out"; then
	echo "FAIL: could not build or run tests/workloads/legacyprof.go"
	exit 1
fi
export PPROF_BINARY_PATH=$tmp/empty
pass=0 bad=0
for f in "$tmp"/out/*.txt; do
	name=$(basename "$f")
	# The reference is pprof's own protobuf of the file, printed: what pprof
	# keeps through the format profd writes (newer pprof drops a numeric
	# label of value 0 without a unit when it reads protobuf, as it drops
	# the "bytes:[0]" of an empty heap record; Go 1.19's kept it).
	if go tool pprof -symbolize=none -proto "$f" >"$f.own.pb" 2>"$f.ref" &&
		go tool pprof -symbolize=none -raw "$f.own.pb" >"$f.ref" 2>&1; then
		if ! "$PROFD" convert "$f" "$f.pb" 2>"$f.err"; then
			echo "FAIL $name: pprof reads it, profd convert fails: $(cat "$f.err")"
			bad=$((bad + 1))
			continue
		fi
		go tool pprof -symbolize=none -raw "$f.pb" >"$f.ours" 2>&1
		if diff "$f.ref" "$f.ours" >"$f.diff"; then
			echo "ok   $name: $(grep -c '^ *[0-9-]' "$f.ref") lines of pprof -raw agree"
			pass=$((pass + 1))
		else
			echo "FAIL $name: go tool pprof -raw differs"
			head -20 "$f.diff" | sed 's/^/     /'
			bad=$((bad + 1))
		fi
	else
		"$PROFD" convert "$f" "$f.pb" 2>"$f.err"
		rc=$?
		if [ $rc = 1 ] && [ -s "$f.err" ] && ! grep -q Sanitizer "$f.err"; then
			echo "ok   $name: refused like pprof ($(head -c 120 "$f.err"))"
			pass=$((pass + 1))
		else
			echo "FAIL $name: pprof refuses it ($(head -1 "$f.ref")), profd exit $rc"
			bad=$((bad + 1))
		fi
	fi
done
echo "$pass passed, $bad failed"
[ "$bad" = 0 ] && [ "$pass" = 6 ]
