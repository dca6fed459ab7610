#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_peers_server.sh - profd's server beside a Grafana Pyroscope server
# and a Parca server on the same pushed data, in the same run. The peers
# are not built here: PEER_PYROSCOPE names a `pyroscope` binary and
# PEER_PARCA a `parca` binary, each built from its public source
# (bench/results/peers.md says how the recorded ones were built); with
# neither the script prints "skip: ..." and exits 0.
#
# For each server in turn, on loopback with a fresh data directory:
#   - ingest: tests/tools/ingestload --pprof (Pyroscope's /ingest with
#     format=pprof, uncompressed pprof bodies of 200 samples over 50 stacks
#     24 frames deep, 4 clients, keep-alive; to Parca the same pprof
#     through its HTTP gateway of WriteRaw) for BENCH_SECONDS (default
#     20); samples acknowledged per second of the server's CPU (utime +
#     stime from /proc/PID/stat over the load);
#   - query: the 1 h flame graph of the pushed service, 5 calls after the
#     load, median wall time (profd: /api/v1/flamegraph; Pyroscope:
#     /pyroscope/render; Parca: /api/profiles/query with the flame graph
#     report its UI asks for), and its total checked against the
#     acknowledged samples;
#   - backfill: a load of half as long stamped over the last 24 h
#     (ingestload --spread 86400), then the 24 h flame graph the same way,
#     its total checked against both loads' samples;
#   - disk: bytes allocated under the data directory (du -B1: sparse
#     preallocated files count what they hold) after a clean stop
#     (SIGTERM) per acknowledged sample; for profd also after `profd
#     store compact` (its head stays in the write-ahead log until the
#     flush point).
# Writes the peers-server section of bench/results/peers.md.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/results_lib.sh
PEERS_HEAD="# profd beside its peers

Figures from \`make bench\` runs, each peer built and configured as described in its section."
PROFD=${PROFD_FAST:-build/profd}
LOAD=${LOAD:-$(dirname "$PROFD")/tests/tools/ingestload}
SECS=${BENCH_SECONDS:-20}
BACK=$(((SECS + 1) / 2))
OUTMD=bench/results/peers.md
PEER=${PEER_PYROSCOPE:-}
PARCA=${PEER_PARCA:-}
[ -n "$PEER" ] && [ -x "$PEER" ] || PEER=
[ -n "$PARCA" ] && [ -x "$PARCA" ] || PARCA=
if [ -z "$PEER$PARCA" ]; then
	echo "skip: neither PEER_PYROSCOPE nor PEER_PARCA names a peer binary (built from its public source; see bench/results/peers.md)"
	exit 0
fi
[ -x "$PROFD" ] && [ -x "$LOAD" ] || { echo "FAIL: $PROFD or $LOAD is not built"; exit 1; }
tmp=$(mktemp -d /tmp/profd-bench-peers-server.XXXXXX)
spid=
cleanup() {
	[ -n "$spid" ] && kill "$spid" 2>/dev/null && wait "$spid" 2>/dev/null
	[ -n "${KEEP:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
clk=$(getconf CLK_TCK)
peer_ver=
[ -z "$PEER" ] || peer_ver=$("$PEER" -version 2>&1 | sed -n 's/.*version \([^ ,]*\).*/\1/p' | head -1)
parca_ver=
[ -z "$PARCA" ] || parca_ver=$("$PARCA" --version 2>&1 | sed -n 's/.*version \([^ ,]*\).*/\1/p' | head -1)
# a build from a source tree may print no version: the prose names what was built
[ -z "$PEER" ] || peer_ver=${peer_ver:-"(its version line names none)"}
[ -z "$PARCA" ] || parca_ver=${parca_ver:-"(its version line names none)"}

wait_http() { # URL: up to 180 s
	for _ in $(seq 1 900); do curl -fs -o /dev/null "$1" && return 0; sleep 0.2; done
	echo "FAIL: $1 never answered"
	exit 1
}

# measure LABEL PORT DATA_DIR: ingest, query (query_LABEL), stop, disk; one row.
measure() {
	local label=$1 port=$2 dir=$3
	local c0 c1 out acked
	c0=$(cpu_ticks "$spid")
	local mode=--pprof
	[ "$label" != parca ] || mode=--parca
	out=$("$LOAD" --port "$port" "$mode" --clients 4 --seconds "$SECS" --samples 200 --stacks 50 \
		--depth 24 --service benchsvc)
	c1=$(cpu_ticks "$spid")
	sleep 3
	local q q24 back
	q=$(query_"$label" "$port" 1h)
	# backfill: the same pushes stamped over the last 24 h, for the day's flame graph
	back=$("$LOAD" --port "$port" "$mode" --spread 86400 --clients 4 --seconds "$BACK" \
		--samples 200 --stacks 50 --depth 24 --service benchsvc)
	sleep 3
	q24=$(query_"$label" "$port" 24h)
	kill -TERM "$spid"
	wait "$spid" || true
	spid=
	local bytes stopped
	stopped=$(du -sB1 "$dir" | cut -f1)
	# profd keeps the head in its write-ahead log until the head's flush
	# point; `profd store compact` cuts it into a block as that point would.
	[ "$label" != profd ] || "$PROFD" store compact "$dir/default" >/dev/null
	bytes=$(du -sB1 "$dir" | cut -f1)
	python3 - "$label" "$out" "$c0" "$c1" "$clk" "$q" "$bytes" "$stopped" "$back" "$q24" >>"$tmp/raw" <<'PY'
import json, sys
label, out, c0, c1, clk, q, nbytes, stopped, back, q24 = sys.argv[1:]
o, b = json.loads(out), json.loads(back)
cpu = (int(c1) - int(c0)) / int(clk)
ms, total = q.split()
ms24, total24 = q24.split()
every = o["acked_samples"] + b["acked_samples"]
print(json.dumps({"label": label, "acked": o["acked_samples"], "errors": o["errors"],
                  "retries": o["retries"], "cpu": cpu, "per_cpu": o["acked_samples"] / cpu if cpu else 0,
                  "rate": o["samples_per_s"], "p99": o["p99_ms"], "flame_ms": float(ms),
                  "flame_total": float(total), "flame24_ms": float(ms24), "flame24_total": float(total24),
                  "every": every, "bytes": int(nbytes),
                  "bytes_per_sample": int(nbytes) / every if every else 0,
                  "stopped_per_sample": int(stopped) / every if every else 0}))
PY
	tail -n 1 "$tmp/raw"
}

# query_profd PORT / query_pyroscope PORT: "MEDIAN_MS TOTAL" of 5 calls.
median_of() { # CMD...: runs it 5 times, prints "median_ms last_output"
	python3 - "$@" <<'PY'
import subprocess, sys, time
ts, out = [], ""
for _ in range(5):
    t = time.monotonic()
    out = subprocess.run(sys.argv[1:], capture_output=True, text=True, check=True).stdout
    ts.append((time.monotonic() - t) * 1000)
print(f"{sorted(ts)[2]:.1f}", out.strip())
PY
}
query_profd() {
	median_of python3 -c '
import json, sys, urllib.parse, urllib.request
q = urllib.parse.urlencode({"type": "process_cpu:samples:count:cpu:nanoseconds",
                            "query": "{service.name=\"benchsvc\"}", "from": "now-" + sys.argv[2], "to": "now"})
print(json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/v1/flamegraph?{q}"))["total"])' "$1" "$2"
}
query_pyroscope() {
	median_of python3 -c '
import json, sys, urllib.parse, urllib.request
q = urllib.parse.urlencode({"query": "process_cpu:samples:count:cpu:nanoseconds{service_name=\"benchsvc\"}",
                            "from": "now-" + sys.argv[2], "until": "now", "format": "json"})
d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/pyroscope/render?{q}"))
print(d["flamebearer"]["numTicks"])' "$1" "$2"
}
query_parca() {
	median_of python3 -c '
import datetime, json, sys, urllib.parse, urllib.request
now = datetime.datetime.now(datetime.timezone.utc)
fmt = lambda t: t.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
q = urllib.parse.urlencode({"mode": "MODE_MERGE",
                            "merge.query": "process_cpu:samples:count:cpu:nanoseconds{service_name=\"benchsvc\"}",
                            "merge.start": fmt(now - datetime.timedelta(hours=int(sys.argv[2][:-1]))),
                            "merge.end": fmt(now),
                            "reportType": "REPORT_TYPE_FLAMEGRAPH_ARROW"})
# Parca weights each sample by the profile period (ingestload: 10 ms)
d = json.load(urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/api/profiles/query?{q}"))
print(int(d["total"]) / 10000000)' "$1" "$2"
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)
# profd
port=$(free_port)
"$PROFD" server --listen "127.0.0.1:$port" --data "$tmp/profd" >"$tmp/profd.log" 2>&1 &
spid=$!
wait_http "http://127.0.0.1:$port/api/v1/profile-types"
measure profd "$port" "$tmp/profd"
if [ -n "$PEER" ]; then
	# Pyroscope, single binary, local filesystem, no self-profiling or usage
	# reports, no ingestion rate limit (its default, 4 MiB/s, refuses most of the load).
	port=$(free_port)
	mkdir -p "$tmp/pyro"
	(cd "$tmp/pyro" && exec "$PEER" -target=all -server.http-listen-port="$port" \
		-server.grpc-listen-port="$(free_port)" -memberlist.bind-port="$(free_port)" \
		-self-profiling.disable-push=true -usage-stats.enabled=false \
		-distributor.ingestion-rate-limit-mb=100000 -distributor.ingestion-burst-size-mb=100000 \
		-validation.reject-older-than=25h \
		-storage.backend=filesystem -storage.filesystem.dir="$tmp/pyro/shared" \
		-pyroscopedb.data-path="$tmp/pyro/data" >"$tmp/pyro.log" 2>&1) &
	spid=$!
	wait_http "http://127.0.0.1:$port/ready"
	measure pyroscope "$port" "$tmp/pyro"
fi
if [ -n "$PARCA" ]; then
	# Parca, one process: FrostDB with persistence and its write-ahead log
	# on (what keeps acknowledged data over a crash, as profd's WAL does),
	# filesystem object storage, no scrape configs.
	port=$(free_port)
	mkdir -p "$tmp/parca/bucket"
	printf 'object_storage:\n  bucket:\n    type: "FILESYSTEM"\n    config:\n      directory: "%s"\n' \
		"$tmp/parca/bucket" >"$tmp/parca.yaml"
	(cd "$tmp/parca" && exec "$PARCA" --config-path="$tmp/parca.yaml" --http-address="127.0.0.1:$port" \
		--enable-persistence --storage-enable-wal --storage-path="$tmp/parca/data" \
		--debuginfod-upstream-servers= >"$tmp/parca.log" 2>&1) &
	spid=$!
	wait_http "http://127.0.0.1:$port/metrics"
	measure parca "$port" "$tmp/parca"
fi
load1=$(cut -d' ' -f1-3 /proc/loadavg)

table=$(python3 - "$tmp/raw" <<'PY'
import json, sys
rows = {r["label"]: r for r in map(json.loads, open(sys.argv[1]))}
names = {"profd": "profd", "pyroscope": "Pyroscope", "parca": "Parca"}
def row(name, r):
    return (f"| {name} | {r['acked']:,} | {r['rate']:,.0f} | {r['cpu']:.1f} s | {r['per_cpu']:,.0f} | "
            f"{r['p99']:.1f} ms | {r['flame_ms']:.1f} ms ({r['flame_total']:,.0f}) | "
            f"{r['flame24_ms']:.1f} ms ({r['flame24_total']:,.0f} of {r['every']:,}) | "
            f"{r['bytes_per_sample']:.2f} B ({r['stopped_per_sample']:.2f} B at stop) |")
def ratio(x, y):
    return f"{x / y:.2f}x" if y else "n/a"
a = rows["profd"]
for label, r in rows.items():
    print(row(names[label], r))
for label, b in rows.items():
    if label == "profd":
        continue
    print(f"| profd / {names[label]} | {ratio(a['acked'], b['acked'])} | {ratio(a['rate'], b['rate'])} | "
          f"{ratio(a['cpu'], b['cpu'])} | {ratio(a['per_cpu'], b['per_cpu'])} | {ratio(a['p99'], b['p99'])} | "
          f"{ratio(a['flame_ms'], b['flame_ms'])} | {ratio(a['flame24_ms'], b['flame24_ms'])} | "
          f"{ratio(a['bytes_per_sample'], b['bytes_per_sample'])} |")
PY
)
echo "$table"
section=$(
	cat <<EOF
<!-- peers-server: begin (written by bench/bench_peers_server.sh) -->
## The server beside Grafana Pyroscope and Parca

\`bench/bench_peers_server.sh\`, $(date -u +%Y-%m-%d), $(nproc) CPUs, load average
$load0 at the start and $load1 at the end. profd's server, then the peers
given: Pyroscope ${peer_ver:-(not run)} as a single binary (\`-target=all\`,
filesystem storage, self-profiling and usage reports off, its per-tenant
ingestion rate limit of 4 MiB/s raised out of the way); Parca
${parca_ver:-(not run)} (FrostDB with \`--enable-persistence
--storage-enable-wal\`, filesystem object storage, no scrape configs). Each
alone on loopback with a fresh data directory, fed by
\`tests/tools/ingestload --clients 4\` for ${SECS} s with 200 samples of 50
stacks 24 frames deep per request: \`--pprof\` (Pyroscope's
\`/ingest?format=pprof\`) for profd and Pyroscope, \`--parca\` (the same
pprof, base64 in the JSON of Parca's WriteRaw gateway) for Parca. 1 h
flame graph: median of 5 calls over the last hour after the load (total
in brackets: it must equal the samples acknowledged). Then a backfill of
${BACK} s, the same pushes stamped over the last 24 hours (\`--spread
86400\`; Pyroscope's \`from\`/\`until\`, its \`-validation.reject-older-than\`
set to 25h), and the 24 h flame graph, median of 5 calls (its total
against every sample acknowledged by both loads). Disk: bytes allocated
under the data directory (\`du -B1\`) per sample acknowledged by both
loads, for profd after \`profd store
compact\` cut its head into a block (in brackets: after the clean stop,
when profd still holds the head in its write-ahead log).

| server | samples acked | samples/s | server CPU | samples per CPU-s | p99 request | 1 h flame graph | 24 h flame graph | disk per sample |
| --- | --- | --- | --- | --- | --- | --- | --- | --- |
$table
<!-- peers-server: end -->
EOF
)
write_section "$OUTMD" peers-server "$section" "$PEERS_HEAD"
