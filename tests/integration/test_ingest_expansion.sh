#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_expansion.sh - requests of under 1 MB that used to expand
# without bound when decoded (issue #4), sent to a server with a memory
# cap (ulimit -v 2 GiB; under ASan, whose shadow memory needs far more
# address space, hard_rss_limit_mb=1536 and max_allocation_size_mb=512
# instead): each must be answered with a 413 naming its limit, the server
# serving on.
#   - one sample with 30000 attribute indices and 100000 timestamps: its
#     labels were copied per observation (3e9 labels, 72 GB); now shared,
#     and the request is refused by max_sample_labels (16 x max_samples);
#   - 8000 profiles using one 200 KB function name: each profile copied
#     it (1.6 GB from 560 KB) and the decoders' decoded size limit (64 x
#     the request + 16 MiB, format/otlp.h) refused it; the server's
#     profiles now share one copy of the request's dictionary
#     (fmt_otlp_decode_shared), so it is stored within that limit;
#   - limits.max_sample_labels from the config: 3 labels x 5 timestamps
#     over 10 refused, 3 x 3 stored.
source "$(dirname "$0")/ingest_lib.sh"

# grep -q would stop reading early: ldd then dies of SIGPIPE and pipefail fails the test.
if ldd "$PROFD" 2>/dev/null | grep -c libasan >/dev/null; then
	export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=1536:max_allocation_size_mb=512"
else
	ulimit -v $((2 * 1024 * 1024))
fi

# gen OUT FN_LEN NPROF NATTR NTS: an OTLP request (tests/unit/format/test_otlp_limits.c's shape)
gen() {
	python3 - "$@" <<'PY'
import struct, sys
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)
def fld(num, wt, payload):
    tag = varint(num << 3 | wt)
    return tag + varint(len(payload)) + payload if wt == 2 else tag + payload
def msg(num, payload): return fld(num, 2, payload)
out, fn_len, nprof, nattr, nts = sys.argv[1], *map(int, sys.argv[2:])
strings = [b"", b"cpu", b"nanoseconds", b"m" * fn_len if fn_len else b"main", b"k"]
d = b"".join(msg(5, s) for s in strings)
d += msg(3, b"") + msg(3, fld(1, 0, varint(3)))
d += msg(2, b"") + msg(2, msg(3, fld(1, 0, varint(1))))
d += msg(7, b"") + msg(7, msg(1, varint(1)))
d += msg(6, b"") + msg(6, fld(1, 0, varint(4)) + msg(2, msg(1, b"v")))
sample = fld(1, 0, varint(1))
if nattr:
    sample += msg(2, varint(1) * nattr)
if nts:
    sample += msg(5, b"".join(struct.pack("<Q", 1700000000000000000 + i * 1000000) for i in range(nts)))
else:
    sample += msg(4, varint(7))
vt = fld(1, 0, varint(1)) + fld(2, 0, varint(2))  # cpu/nanoseconds
prof = msg(1, vt) + msg(2, sample) + msg(5, vt)  # sample_type, period_type
res = msg(1, msg(1, msg(1, b"service.name") + msg(2, msg(1, b"expansion"))))
rp = res + msg(2, b"".join(msg(2, prof) for _ in range(nprof)))
open(out, "wb").write(msg(1, rp) + msg(2, d))
PY
}

gen "$tmp/labels.pb" 0 1 30000 100000
gen "$tmp/dict.pb" 200000 8000 1 0
gen "$tmp/ok.pb" 0 1 3 3
gen "$tmp/over.pb" 0 1 3 5
checkx "the crafted requests are under 1 MB" \
	'[ "$(stat -c %s "$tmp/labels.pb")" -lt 1000000 ] && [ "$(stat -c %s "$tmp/dict.pb")" -lt 1000000 ]'

start_server
otlp "$tmp/labels.pb"
checkx "30000 labels x 100000 timestamps -> 413 naming max_sample_labels (16000000)" \
	'[ "$code" = 413 ] && body_has "limit max_sample_labels (16000000) exceeded"'
require_alive "after the label expansion"
otlp "$tmp/dict.pb"
check "8000 profiles x a 200 KB name -> 200 (one copy of the dictionary)" [ "$code" = 200 ]
require_alive "after the dictionary expansion"
check "they are stored (8000 samples of value 7)" [ "$(total "$CPU" '')" = 56000 ]
otlp "$tmp/ok.pb"
check "a small request still -> 200" [ "$code" = 200 ]
check "it is stored too (56003 in all)" [ "$(total "$CPU" '')" = 56003 ]
peak=$(awk '/VmHWM/ {print int($2 / 1024)}' "/proc/$server_pid/status")
check "server peak RSS under 1 GiB ($peak MiB)" [ "$peak" -lt 1024 ]
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]

cat >"$tmp/profd.yaml" <<'EOF'
datasets: [{name: default}]
limits:
  max_sample_labels: 10
EOF
rm -rf "$tmp/data"
start_server --config "$tmp/profd.yaml"
otlp "$tmp/over.pb"
checkx "3 labels x 5 timestamps -> 413 naming max_sample_labels (10)" \
	'[ "$code" = 413 ] && body_has "limit max_sample_labels (10) exceeded: the request'"'"'s samples carry 15 labels"'
otlp "$tmp/ok.pb"
check "3 labels x 3 timestamps -> 200" [ "$code" = 200 ]
check "only that one is stored (3 samples)" [ "$(total "$CPU" '')" = 3 ]
req GET /metrics
checkx "metrics count the max_sample_labels reject" \
	'body_has "profd_ingest_rejects_total{reason=\"max_sample_labels\"} 1"'
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
