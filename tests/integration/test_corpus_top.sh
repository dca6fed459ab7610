#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_corpus_top.sh - `profd top --json` on every pprof file of the shared
# corpus, protobuf (pprof/) and legacy (pprof-legacy/: binary CPU, heap and
# contention text, Go debug=1 text), gives the sample count, per-type
# totals and top-5 self functions that google/pprof gives
# (facts/<id>.json, MANIFEST.md); files the reference tool rejected must
# fail cleanly. Then, for every file it reads, pprof -> OTLP -> pprof
# (profd convert) keeps the sample count and every per-type total, and so
# does the OTLP file read directly.
# Environment: PROFD (binary under test), PROFD_CORPUS (corpus folder).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
source tests/integration/lib.sh

need_corpus "$CORPUS/pprof"
need_corpus "$CORPUS/facts"
need_bin "$PROFD"
lib_tmp
python3 tests/integration/corpus_top_check.py "$PROFD" "$CORPUS" ||
	fail "corpus_top_check.py: profd top against the facts files (see above)"

# Files pprof rejects (facts' parse_error): profd must too, checked above.
rejected=$(python3 -c '
import json, os, sys
d = os.path.join(sys.argv[1], "facts")
for n in os.listdir(d):
    f = json.load(open(os.path.join(d, n)))
    if f["facts"].get("pproffacts", {}).get("parse_error"):
        print(os.path.basename(f["path"]))' "$CORPUS")
for f in "$CORPUS"/pprof/* "$CORPUS"/pprof-legacy/*; do
	name=$(basename "$f")
	grep -qxF "$name" <<<"$rejected" && continue
	if ! "$PROFD" convert "$f" "$tmp/x.otlp.pb" 2>"$tmp/err" ||
		! "$PROFD" convert "$tmp/x.otlp.pb" "$tmp/x.pb.gz" 2>>"$tmp/err"; then
		fail "roundtrip $name: $(cat "$tmp/err")"
		continue
	fi
	"$PROFD" top --json -n 0 "$f" >"$tmp/a.json" &&
		"$PROFD" top --json -n 0 "$tmp/x.pb.gz" >"$tmp/b.json" &&
		"$PROFD" top --json -n 0 "$tmp/x.otlp.pb" >"$tmp/c.json"
	if python3 - "$tmp/a.json" "$tmp/b.json" "$tmp/c.json" <<'PY'; then
import json, sys
a, b, c = (json.load(open(p)) for p in sys.argv[1:4])
for other, what in ((b, "pprof->OTLP->pprof"), (c, "pprof->OTLP")):
    for key in ("sample_types", "samples", "totals"):
        if a[key] != other[key]:
            print("   %s changed %s: %s -> %s" % (what, key, a[key], other[key]))
            sys.exit(1)
PY
		ok "roundtrip $name"
	else
		fail "roundtrip $name"
	fi
done
echo "roundtrip: $npass passed, $nfail failed"
finish_counts
