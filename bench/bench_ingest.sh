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
	echo "Before / after the direct decoder, same conditions (2026-11-30, 15 s runs of"
	echo "the OTLP workload alternating the two builds, load average ~5.8 from other"
	echo "work): protobuf-c path 224,099 / 224,726 samples per server CPU-second, 181 k"
	echo "samples/s, latency p50 / p99 7.7 / 32.5 ms; direct decoder 402,769 / 410,688"
	echo "samples per server CPU-second, 312 k samples/s, p50 / p99 4.5 / 16.5 ms."
	echo "(Earlier, on a quieter machine, the protobuf-c path measured 243,355 per"
	echo "CPU-second and 6.0 / 33.6 ms in the 60 s run.)"
	echo
	echo "Where the server's time goes now (perf record --call-graph dwarf on the server"
	echo "during the OTLP run, share of server CPU): storing ~51% (store_ingest_profiles:"
	echo "head insert store_head_add ~33%, mostly interning locations, functions and"
	echo "strings into the head dictionary; WAL append with fsync ~15%), decoding ~30%"
	echo "(wire parse ~9%, building the model ~20%, half of it interning function names),"
	echo "HTTP and the rest ~19%. Even a decoder costing nothing would leave this shape"
	echo "near 0.7 M samples per core: 1 M needs the head insert (src/store) about twice"
	echo "as fast. Per-core figures drop when other work shares the two cores (cache and"
	echo "hyperthread contention): compare runs at a similar load average. Group commit"
	echo "keeps fsyncs far below the request count."
} >"$OUTMD"
echo "wrote $OUTMD"
