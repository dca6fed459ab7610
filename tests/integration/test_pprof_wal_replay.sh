#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_pprof_wal_replay.sh - pushed pprof profiles are logged as pprof
# (WAL record type 2, docs/storage-format.md) and a restart after kill -9
# answers as before it:
#   - the corpus's pprof files pushed to Pyroscope's /ingest (gzipped and
#     not, with from/until and without), to /api/v1/ingest/pprof, and a
#     Connect push (/push.v1.PusherService/Push) of two series;
#   - the WAL then holds a type 2 record for each, but for the corpus's
#     legacy (text and binary CPU) profiles and a gzip inside the gzip,
#     logged as OTLP (type 1);
#   - `profd store check` takes the log;
#   - kill -9 once every push is acknowledged, restart on the same data:
#     profile types, label values, and per profile type the flame graph
#     total, the series and the folded export (lines sorted: their order
#     follows hashes seeded per process) are the same as before.
# Environment: PROFD (binary under test), PROFD_CORPUS (corpus folder).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}
source tests/integration/server_lib.sh
need_bin "$PROFD"
need_corpus "$CORPUS/pprof"

start_server
T0=1700000000
FROM=1600000000000 TO=$(($(date +%s) * 1000 + 3600000))
pushed=0
post() { # post URL FILE: POST FILE; counts the accepted ones
	local c
	c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
		--data-binary "@$2" "$base$1")
	if [ "$c" = 200 ]; then
		pushed=$((pushed + 1))
	else
		echo "# $1: HTTP $c $(head -c 120 "$tmp/body")"
	fi
}
i=0
for f in "$CORPUS"/pprof/*; do
	i=$((i + 1))
	b=$(basename "$f")
	post "/ingest?name=replay$i%7Bfile%3D%22$b%22%7D&format=pprof&from=$((T0 + 600 * i))&until=$((T0 + 600 * i + 10))" "$f"
	gzip -c "$f" >"$tmp/p.gz"
	post "/ingest?name=gz$i&format=pprof&from=$((T0 + 600 * i + 20))" "$tmp/p.gz"
	post "/ingest?name=now$i&format=pprof" "$f"
	post "/api/v1/ingest/pprof?service_name=direct$i&file=$b" "$f"
done
# Pyroscope's Connect push: two series of two profiles each, gzipped and not.
python3 - "$tmp/push.pb" "$CORPUS/pprof/gen--cpu.pprof" "$CORPUS/pprof/gen--heap.pprof" \
	"$CORPUS/pprof/parca--two-stacks.pb.gz" <<'PY'
import gzip, sys
def v(n):
    b = b""
    while True:
        if n < 0x80:
            return b + bytes([n])
        b += bytes([n & 0x7f | 0x80]); n >>= 7
def f(num, data):
    return v(num << 3 | 2) + v(len(data)) + data
raw = [open(p, "rb").read() for p in sys.argv[2:]]
raw = [gzip.decompress(b) if b[:2] == b"\x1f\x8b" else b for b in raw]
def series(name, profiles):
    labels = f(1, f(1, b"service_name") + f(2, name)) + f(1, f(1, b"env") + f(2, b"test"))
    return f(1, labels + b"".join(f(2, f(1, p)) for p in profiles))
req = series(b"connect-a", [raw[0], gzip.compress(raw[1])]) + \
    series(b"connect-b", [gzip.compress(raw[0]), raw[2]])
open(sys.argv[1], "wb").write(req)
PY
c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST -H 'Content-Type: application/proto' \
	--data-binary "@$tmp/push.pb" "$base/push.v1.PusherService/Push")
checkx "Connect push of four profiles accepted (HTTP $c)" '[ "$c" = 200 ]'
[ "$c" = 200 ] && pushed=$((pushed + 1))
checkx "pushes accepted ($pushed)" '[ "$pushed" -ge 20 ]'

types_of() { # types_of RECORD-TYPE: number of WAL records of that type (last: the last's type)
	python3 - "$tmp/data/default/wal" "$1" <<'PY'
import os, struct, sys
d, want, n = sys.argv[1], sys.argv[2], 0
for name in sorted(os.listdir(d)):
    if not name.endswith(".wal"):
        continue
    b = open(os.path.join(d, name), "rb").read()
    assert b[:8] == b"PROFDWAL" and struct.unpack_from("<I", b, 8)[0] == 2, name
    off = 16
    while off + 20 <= len(b):
        ln = struct.unpack_from("<I", b, off)[0]
        n = b[off + 8] if want == "last" else n + (b[off + 8] == int(want))
        off += 20 + ln
print(n)
PY
}
n2=$(types_of 2)
n1=$(types_of 1)
checkx "the WAL holds a record per push ($n2 pprof, $n1 OTLP, $pushed pushes)" \
	'[ $((n1 + n2)) = "$pushed" ]'
checkx "most are pprof records" '[ "$n2" -ge $((pushed * 2 / 3)) ]'
checkx "the legacy profiles and the gzip inside a gzip are OTLP records" '[ "$n1" -ge 1 ]'
last=$(types_of last)
checkx "the Connect push is one pprof record (type $last)" '[ "$last" = 2 ]'

R=(--data-urlencode "from=$FROM" --data-urlencode "to=$TO")
views() { # views OUT: what must survive the restart
	local t
	: >"$1"
	for p in profile-types labels labels/service.name/values labels/file/values; do
		curl -s --noproxy '*' -G "${R[@]}" "$base/api/v1/$p" >>"$1"
		echo >>"$1"
	done
	for t in $(curl -s --noproxy '*' -G "${R[@]}" "$base/api/v1/profile-types" |
		python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))'); do
		T=(--data-urlencode "type=$t" "${R[@]}")
		echo "== $t" >>"$1"
		curl -s --noproxy '*' -G "${T[@]}" "$base/api/v1/flamegraph" |
			python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])' >>"$1"
		curl -s --noproxy '*' -G "${T[@]}" --data-urlencode step=10m \
			--data-urlencode group_by=service.name "$base/api/v1/series" >>"$1"
		echo >>"$1"
		curl -s --noproxy '*' -G "${T[@]}" "$base/api/v1/export/folded" | sort >>"$1"
	done
}
views "$tmp/before"
ntypes=$(grep -c '^== ' "$tmp/before")
checkx "views before the kill ($ntypes profile types)" '[ "$ntypes" -ge 4 ]'
kill -9 "$server_pid"
wait "$server_pid" 2>/dev/null
server_pid=
"$PROFD" store check "$tmp/data/default" >"$tmp/check" 2>&1
check_rc=$?
checkx "profd store check takes the pprof records (rc $check_rc)" '[ "$check_rc" = 0 ]'
start_server
wait_for 60 'curl -s --noproxy "*" "$base/readyz?for=query" | grep -q ready' \
	"the replay did not finish"
views "$tmp/after"
if cmp -s "$tmp/before" "$tmp/after"; then
	ok "same answers after kill -9 and the replay ($(wc -c <"$tmp/after") bytes of views)"
else
	fail "answers changed by the replay"
	diff "$tmp/before" "$tmp/after" | head -n 20
fi
checkx "every record replayed" 'grep -q "wal_records=$pushed skipped=0" "$tmp/log.2"'
finish_counts
