#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_ingest.sh - ingest throughput of `profd server`, loopback only,
# fsync on (every acknowledged request is in the WAL on disk):
#   1. agent-shaped OTLP/HTTP protobuf: 8 keep-alive clients for SECONDS
#      (default 60), each request 200 samples over 50 stacks 24 frames deep;
#   2. Pyroscope pprof pushes (POST /ingest?format=pprof, gzipped pprof)
#      of the same shape, same clients, SECONDS / 4.
# For each: requests/s, samples/s, p50/p99/max latency as the clients see
# it, the server's CPU seconds (utime + stime from /proc) and samples per
# server CPU-second ("per core"), its peak RSS, and a check that every
# acknowledged sample is in the store (flame graph total == acknowledged).
#   3. the OTLP decoders alone on the same request (tests/tools/otlpdecode):
#      the direct decoder (src/format/otlp_direct.c) and the protobuf-c
#      one, in model samples per CPU-second of one thread.
# The load generator (tests/tools/ingestload) runs on the same machine and
# competes for its cores. Writes bench/results/ingest.md.
# Environment: PROFD_FAST (default build/profd), SECONDS_OTLP (60),
# CLIENTS (8), BENCH_DIR (a disk-backed scratch directory, default /tmp).
set -euo pipefail
cd "$(dirname "$0")/.."
PROFD=${PROFD_FAST:-build/profd}
LOAD=${LOAD:-$(dirname "$PROFD")/tests/tools/ingestload}
DECODE=${DECODE:-$(dirname "$PROFD")/tests/tools/otlpdecode}
SECS=${SECONDS_OTLP:-60}
CLIENTS=${CLIENTS:-8}
OUTMD=bench/results/ingest.md
[ -x "$PROFD" ] || { echo "FAIL: $PROFD is not built"; exit 1; }
[ -x "$LOAD" ] || { echo "FAIL: $LOAD is not built"; exit 1; }
[ -x "$DECODE" ] || { echo "FAIL: $DECODE is not built"; exit 1; }
tmp=$(mktemp -d "${BENCH_DIR:-/tmp}/profd-bench-ingest.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill -9 $pid 2>/dev/null; rm -rf "$tmp"' EXIT
ticks=$(getconf CLK_TCK)

cpu_s() { awk -v t="$ticks" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$pid/stat"; }
hwm_kb() { awk '/VmHWM/ { print $2 }' "/proc/$pid/status"; }

# run NAME TYPE SELECTOR SECONDS [ingestload args...]: one measured section.
run() {
	local name=$1 type=$2 sel=$3 secs=$4 f
	shift 4
	f="$tmp/run.$(echo "$name" | tr -c 'A-Za-z0-9\n' _).json"
	rm -rf "$tmp/data"
	"$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data" >"$tmp/out" 2>"$tmp/log" &
	pid=$!
	local port=
	for _ in $(seq 1 200); do
		port=$(sed -n 's|.*explorer at http://127.0.0.1:\([0-9]*\)/.*|\1|p' "$tmp/out" 2>/dev/null)
		[ -n "$port" ] && break
		sleep 0.05
	done
	[ -n "$port" ] || { echo "FAIL: server did not start"; cat "$tmp/log"; exit 1; }
	local c0 c1
	c0=$(cpu_s)
	"$LOAD" --port "$port" --clients "$CLIENTS" --seconds "$secs" "$@" >"$f"
	c1=$(cpu_s)
	local hwm stored
	hwm=$(hwm_kb)
	stored=$(curl -s --noproxy '*' -G --data-urlencode "type=$type" --data-urlencode "query=$sel" \
		--data-urlencode from=0 --data-urlencode to=now "http://127.0.0.1:$port/api/v1/flamegraph" |
		python3 -c 'import json,sys; print(json.load(sys.stdin)["total"])')
	local syncs
	syncs=$(curl -s --noproxy '*' "http://127.0.0.1:$port/metrics" |
		sed -n 's/^profd_wal_fsync_total{dataset="default"} //p')
	kill -TERM $pid
	wait $pid || true
	pid=
	python3 - "$f" "$c0" "$c1" "$hwm" "$stored" "$syncs" "$name" >>"$tmp/rows" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
cpu = float(sys.argv[3]) - float(sys.argv[2])
hwm, stored, syncs, name = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6], sys.argv[7]
ok = "yes" if stored == d["acked_samples"] else f"NO ({stored} stored)"
per_core = d["acked_samples"] / cpu if cpu > 0 else 0
print(f"| {name} | {d['seconds']:.0f} s | {d['clients']} | {d['acked_requests']} | "
      f"{d['requests_per_s']:.0f} | {d['samples_per_s']:,.0f} | {per_core:,.0f} | "
      f"{d['p50_ms']:.1f} / {d['p99_ms']:.1f} / {d['max_ms']:.1f} | {cpu:.1f} s | "
      f"{hwm // 1024} MiB | {syncs} | {ok} |")
PY
	tail -n 1 "$tmp/rows"
}

"$DECODE" --samples 200 --stacks 50 --depth 24 --seconds 3 >"$tmp/decode.json"
: >"$tmp/rows"
run "OTLP/HTTP protobuf" process_cpu:samples:count:cpu:nanoseconds '{service.name="bench"}' "$SECS" \
	--service bench --samples 200
run "Pyroscope /ingest pprof" process_cpu:samples:count:cpu:nanoseconds '{service_name="benchp"}' \
	$((SECS / 4 > 5 ? SECS / 4 : 5)) --service benchp --samples 200 --pprof

{
	echo "# Ingest throughput (bench/bench_ingest.sh)"
	echo
	echo "Measured $(date -u +%Y-%m-%d) on $(nproc) CPU(s) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))," \
		"loopback, fsync on; the load generator shares the machine (load average" \
		"$(cut -d' ' -f1 /proc/loadavg) when the report was written). Each request:"
	echo "one profile of 200 samples (value 1) over 50 stacks 24 frames deep; the"
	echo "flame graph total after the run is compared with the samples acknowledged."
	echo
	echo "| workload | duration | clients | requests | requests/s | samples/s | samples per server CPU-second | latency p50 / p99 / max (ms) | server CPU | peak RSS | WAL fsyncs | all acknowledged samples stored |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	cat "$tmp/rows"
	echo
	python3 - "$tmp/decode.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("The OTLP decoders alone on one such request (%d bytes, %d model samples;" % (d["bytes"], d["samples"]))
print("tests/tools/otlpdecode, one thread, CPU time):")
print()
print("| decoder | samples per CPU-second | us per request |")
print("|---|---|---|")
print(f"| direct (src/format/otlp_direct.c) | {d['direct_samples_per_cpu_s']:,.0f} | {d['direct_us_per_request']:.1f} |")
print(f"| protobuf-c (fmt_otlp_decode_pbc) | {d['pbc_samples_per_cpu_s']:,.0f} | {d['pbc_us_per_request']:.1f} |")
PY
	echo
	echo "Before / after the head and decoder work of 2026-11-30 (15 s runs of the OTLP"
	echo "workload alternating the two builds, load average 7.7-8.5 from other work):"
	echo "before 455,233 / 436,692 / 415,126 samples per server CPU-second, p50 3.7-3.9"
	echo "ms; after 661,911 / 639,857 / 658,026, p50 2.5-2.7 ms (+50%). Decode + store"
	echo "alone (one thread, no HTTP, no WAL; best of 8 half-second rounds) went from"
	echo "220-260 to 115-130 us per request. What changed: the head's whole-stack memo"
	echo "keys a stack by the content of its locations (128-bit hashes of their fields"
	echo "and strings, each computed once per profile), so a stack seen before costs no"
	echo "dictionary lookups; locations with lines get their own hash table (no key"
	echo "blobs, no allocation per location); the store checks a profile once, each"
	echo "stack entry once instead of once per sample; the direct decoder sizes the"
	echo "model's tables up front. Earlier, the direct decoder took the protobuf-c path's"
	echo "224,099 / 224,726 to 402,769 / 410,688 samples per server CPU-second."
	echo
	echo "Where the server's time goes now (perf record --call-graph dwarf on the server"
	echo "during the OTLP run, share of server CPU): decoding ~39% (wire parse ~20%,"
	echo "building the model ~19%, a quarter of it interning strings), storing ~44%"
	echo "(WAL append with fdatasync and group-commit waits ~21%, head insert ~20%, most"
	echo "of it hashing the 1200 locations each request carries, checks ~4%), HTTP and"
	echo "the rest ~15%. The load generator does not share locations between stacks, so"
	echo "every request has 1200 locations for 200 samples; agents that do share them"
	echo "cost less. 1 M per core needs about 1.5x more: a decoder feeding the head"
	echo "directly (no intermediate model, one validation), a faster WAL checksum (zlib"
	echo "crc32 ~2.6%) and fewer wake-ups per group commit. Per-core figures drop when"
	echo "other work shares the two cores (cache and hyperthread contention): compare"
	echo "runs at a similar load average. Group commit keeps fsyncs far below the"
	echo "request count."
} >"$OUTMD"
echo "wrote $OUTMD"
