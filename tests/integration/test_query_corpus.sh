#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_query_corpus.sh - agreement of the query API with `go tool pprof`:
# every corpus pprof file converted to OTLP (`profd convert`), ingested
# into a real server, then per sample type the table's self/total equal
# pprof's flat/cum for every function, and the exported pprof
# (/api/v1/export/pprof) read back by `go tool pprof` gives the same
# totals and rows (query_agree_check.py has the details).
# Environment: PROFD (binary under test), PROFD_CORPUS (corpus folder).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
source tests/integration/lib.sh

need_corpus "$CORPUS/pprof"
if ! command -v go >/dev/null 2>&1; then
	skip "go is not installed (go tool pprof is the reference)"
fi
need_bin "$PROFD"
lib_tmp
python3 tests/integration/query_agree_check.py "$PROFD" "$CORPUS" "$tmp"
