#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# bench_ingest.sh - ingest throughput of `profd server`, loopback only,
# fsync on (every acknowledged request is in the WAL on disk):
#   1. agent-shaped OTLP/HTTP protobuf: 8 keep-alive clients for SECONDS
#      (default 60), each request 200 samples over 50 stacks 24 frames deep;
#      then the same with the server pinned to CPU 0 and the clients to
#      CPU 1 (taskset), which measures what one server core does;
#   2. what our agent really sends: `profd agent --dump` with its default
#      settings (19 Hz, one request per 10 s) records a few requests on
#      this host first (AGENT_SECONDS, default 31: three requests and the
#      one it sends when it stops; needs root and BPF, else the row says
#      why it is missing),
#      and the same clients replay them, gzipped as the agent sends them,
#      for SECONDS (ingestload --replay); the files are not kept;
#   3. Pyroscope pprof pushes (POST /ingest?format=pprof, gzipped pprof)
#      of the first shape, same clients, SECONDS / 4.
# For each: requests/s, samples/s, p50/p99/max latency as the clients see
# it, the server's CPU seconds (utime + stime from /proc) and samples per
# server CPU-second ("per core"), its peak RSS, and a check that every
# acknowledged sample is in the store (flame graph total == acknowledged;
# for the agent's requests, the total of process_cpu:cpu:nanoseconds over
# {} == the nanoseconds acknowledged). A sample is a stored row: the
# agent sends each eBPF sample twice, as CPU time and as a sample count.
#   4. the OTLP decoders alone on the first shape's request and on the
#      largest recorded agent request (tests/tools/otlpdecode): the direct decoder
#      (src/format/otlp_direct.c), the protobuf-c one, and the direct one
#      followed by the store's checks and head insert (no WAL, no HTTP),
#      in model samples per CPU-second of one thread.
# The load generator (tests/tools/ingestload) runs on the same machine and
# competes for its cores. Writes bench/results/ingest.md.
# Environment: PROFD_FAST (default build/profd), SECONDS_OTLP (60),
# CLIENTS (8), AGENT_SECONDS (31), BENCH_DIR (a disk-backed scratch
# directory, default /tmp), PROFD_BASE (a build to compare: its pprof push
# row comes before the build's, in the same run), PPROF_ONLY=1 (the pprof
# push rows alone, ROUNDS times, printed; the results file is left as it is).
set -euo pipefail
cd "$(dirname "$0")/.."
PROFD=${PROFD_FAST:-build/profd}
LOAD=${LOAD:-$(dirname "$PROFD")/tests/tools/ingestload}
DECODE=${DECODE:-$(dirname "$PROFD")/tests/tools/otlpdecode}
SECS=${SECONDS_OTLP:-60}
CLIENTS=${CLIENTS:-8}
AGENT_SECS=${AGENT_SECONDS:-31}
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
	$PIN_SERVER "$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data" >"$tmp/out" 2>"$tmp/log" &
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
	$PIN_LOAD "$LOAD" --port "$port" --clients "$CLIENTS" --seconds "$secs" "$@" >"$f"
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
want = d.get("acked_value", d["acked_samples"])
ok = "yes" if stored == want else f"NO ({stored} stored, {want} acknowledged)"
per_core = d["acked_samples"] / cpu if cpu > 0 else 0
print(f"| {name} | {d['seconds']:.0f} s | {d['clients']} | {d['acked_requests']} | "
      f"{d['requests_per_s']:.0f} | {d['samples_per_s']:,.0f} | {per_core:,.0f} | "
      f"{d['p50_ms']:.1f} / {d['p99_ms']:.1f} / {d['max_ms']:.1f} | {cpu:.1f} s | "
      f"{hwm // 1024} MiB | {syncs} | {ok} |")
PY
	tail -n 1 "$tmp/rows"
}

pprof_rows() { # the pprof push rows: PROFD, and PROFD_BASE before it when set
	local secs=$((SECS / 4 > 5 ? SECS / 4 : 5)) new=$PROFD
	if [ -n "${PROFD_BASE:-}" ]; then
		PROFD=$PROFD_BASE
		run "Pyroscope /ingest pprof, base build" process_cpu:samples:count:cpu:nanoseconds \
			'{service_name="benchp"}' "$secs" --service benchp --samples 200 --pprof
		PROFD=$new
	fi
	run "Pyroscope /ingest pprof" process_cpu:samples:count:cpu:nanoseconds '{service_name="benchp"}' \
		"$secs" --service benchp --samples 200 --pprof
}

# PPROF_ONLY=1: the pprof push rows alone (ROUNDS pairs with PROFD_BASE),
# printed, bench/results/ingest.md left as it is.
if [ "${PPROF_ONLY:-}" = 1 ]; then
	: >"$tmp/rows"
	PIN_SERVER= PIN_LOAD=
	for _ in $(seq 1 "${ROUNDS:-1}"); do
		pprof_rows >/dev/null
	done
	cat "$tmp/rows"
	exit 0
fi

# The agent's requests, recorded while nothing else of ours runs.
replay=()
agent_note=
mkdir "$tmp/agent"
if "$PROFD" agent --dump "$tmp/agent" --duration "${AGENT_SECS}s" >"$tmp/agent.log" 2>&1; then
	for f in "$tmp"/agent/*.otlp.pb; do
		if [ -s "$f" ]; then
			replay+=(--replay "$f")
		fi
	done
fi
if [ ${#replay[@]} -eq 0 ]; then
	agent_note="(no recorded agent requests: \`profd agent\` needs root and BPF; $(tail -n 1 "$tmp/agent.log" | cut -c1-120))"
	echo "note: $agent_note"
fi

"$DECODE" --samples 200 --stacks 50 --depth 24 --seconds 3 >"$tmp/decode.json"
echo '{}' >"$tmp/decode_agent.json"
if [ ${#replay[@]} -gt 0 ]; then
	# the largest recorded request (the last one, sent at stop, is partial)
	"$DECODE" --seconds 3 "$(ls -S "$tmp"/agent/*.otlp.pb | head -n 1)" >"$tmp/decode_agent.json"
fi
: >"$tmp/rows"
PIN_SERVER= PIN_LOAD=
run "OTLP/HTTP protobuf" process_cpu:samples:count:cpu:nanoseconds '{service.name="bench"}' "$SECS" \
	--service bench --samples 200
# The same with the server confined to CPU 0 and the load generator to
# CPU 1: what one core of the server does (taskset; needs 2 CPUs).
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_SERVER="taskset -c 0" PIN_LOAD="taskset -c 1"
	run "OTLP/HTTP protobuf, server on one CPU" process_cpu:samples:count:cpu:nanoseconds \
		'{service.name="bench1"}' "$SECS" --service bench1 --samples 200
	PIN_SERVER= PIN_LOAD=
fi
agent_name="OTLP/HTTP protobuf, recorded agent requests ($((${#replay[@]} / 2)))"
if [ ${#replay[@]} -gt 0 ]; then
	run "$agent_name" process_cpu:cpu:nanoseconds:cpu:nanoseconds '{}' "$SECS" "${replay[@]}"
	# What the recorded requests held: it depends on what ran on the host then.
	agent_note=$(python3 - "$tmp/run.$(echo "$agent_name" | tr -c 'A-Za-z0-9\n' _).json" \
		"$tmp"/agent/*.otlp.pb <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
def fields(b):
    i = 0
    while i < len(b):
        t = s = 0
        while True:
            c = b[i]; i += 1; t |= (c & 0x7f) << s; s += 7
            if c < 0x80:
                break
        w = t & 7
        if w == 0:
            while b[i] & 0x80:
                i += 1
            i += 1; yield t >> 3, None
        elif w == 1:
            i += 8; yield t >> 3, None
        elif w == 5:
            i += 4; yield t >> 3, None
        else:
            n = s = 0
            while True:
                c = b[i]; i += 1; n |= (c & 0x7f) << s; s += 7
                if c < 0x80:
                    break
            yield t >> 3, b[i:i + n]; i += n
procs = profs = locs = 0
for path in sys.argv[2:]:
    for f, v in fields(open(path, "rb").read()):
        if f == 1:
            procs += 1
            profs += sum(1 for g, sp in fields(v) if g == 2 for h, _ in fields(sp) if h == 2)
        elif f == 2:
            locs += sum(1 for g, _ in fields(v) if g == 2)
k = len(sys.argv) - 2
print(f"The recorded agent requests held {procs / k:.0f} processes, {profs / k:.0f} profiles, "
      f"{locs / k:.0f} locations and {d['samples_per_request']:.0f} rows on average "
      f"({d['replay_bytes']} bytes gzipped): what the agent sends depends on what runs "
      "on the host while it records, so this row varies from run to run.")
PY
)
fi
pprof_rows

{
	echo "# Ingest throughput (bench/bench_ingest.sh)"
	echo
	echo "Measured $(date -u +%Y-%m-%d) on $(nproc) CPU(s) ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'))," \
		"loopback, fsync on; the load generator shares the machine (load average" \
		"$(cut -d' ' -f1 /proc/loadavg) when the report was written). Each request:"
	echo "one profile of 200 samples (value 1) over 50 stacks 24 frames deep (612"
	echo "locations: the 12 frames nearest the root are the same in every stack; the"
	echo "times moved to the present before each send), or one of the requests \`profd agent\`"
	echo "sent on this host just before (a profile per process and profile type, real"
	echo "stacks, thread attributes; gzipped), replayed in turn. The flame graph total"
	echo "after the run is compared with what was acknowledged. Samples are stored"
	echo "rows: the agent sends each eBPF sample twice (CPU time and sample count)."
	[ -z "$agent_note" ] || echo "$agent_note"
	echo
	echo "| workload | duration | clients | requests | requests/s | samples/s | samples per server CPU-second | latency p50 / p99 / max (ms) | server CPU | peak RSS | WAL fsyncs | all acknowledged samples stored |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
	cat "$tmp/rows"
	echo
	python3 - "$tmp/decode.json" "$tmp/decode_agent.json" <<'PY'
import json, sys
print("The OTLP decoders alone on one request of each kind (tests/tools/otlpdecode,")
print("one thread, CPU time, best of 5 rounds); \"+ store\" is what the store does")
print("around its WAL: the direct decoder keying the request's stacks without")
print("translating them (fmt_otlp_decode_pending, so it can take less than the")
print("direct decoder alone), model_profile_validate, store_head_check_validated")
print("and the head insert (store_head_add_batch), into a head that has seen the")
print("stacks, as a server's head has after the first requests:")
print()
print("| request | decoder | samples per CPU-second | us per request |")
print("|---|---|---|---|")
for path, what in ((sys.argv[1], "synthetic"), (sys.argv[2], "recorded agent")):
    d = json.load(open(path))
    if not d:
        continue
    req = f"{what} ({d['bytes']} bytes, {d['samples']} samples)"
    st = d["samples"] / (d["store_us_per_request"] / 1e6)
    print(f"| {req} | direct (src/format/otlp_direct.c) | {d['direct_samples_per_cpu_s']:,.0f} | {d['direct_us_per_request']:.1f} |")
    print(f"| {req} | protobuf-c (fmt_otlp_decode_pbc) | {d['pbc_samples_per_cpu_s']:,.0f} | {d['pbc_us_per_request']:.1f} |")
    print(f"| {req} | direct + store | {st:,.0f} | {d['store_us_per_request']:.1f} |")
PY
	echo
	cat <<'TXT'
Ingest-path work of 2026-11-30, fifth round: stacks the head knows are
found by content key straight from the wire. The server's OTLP decoder
(fmt_otlp_decode_pending, src/format/otlp_direct.c) no longer
translates a request's locations, functions and their strings into the
model: it keys each stack a sample uses (src/model/stackkey.c: XXH3-128,
each kind of key with its own per-process random seed, of a frame's
mapping, address, frame type and lines with its function's names, then
of the frames root first), and the head looks the keys up in its
whole-stack table, which holds the same keys for every stack it added
(store_head_add_batch). When it knows them all, the request costs no
dictionary translation; when one is new, the dictionary is translated as
before and the head adds just the new stacks. Decode + store of the
synthetic request (tests/tools/otlpdecode --only store, instructions per
request by callgrind): 1.051 M before, 0.755 M with the keys, 0.735 M
after hashing function names as bytes inside the location key, keeping
frame type keys per attribute and reading long varints without a bound
check per byte (the per-process seeds cost 2.6% of that). The decoder
states and the head's scratch are now spares shared by threads, the one
used last taken first (base/mem.h prof_spares), instead of one per
thread. Server samples per CPU-second with the server pinned to CPU 0
and the load generator to CPU 1, 12 s runs alternating the previous
commit and the key change (load average 4.5-6.2): before 666,190 /
688,269, after 859,669 / 825,668; with the helpers' rounds below, the
row "server on one CPU" in the table above: one server core takes about
1 M samples a second. Unpinned, the server's 8 connection threads and
the load generator share both CPUs and the CPU-second figure is lower
(it falls as the server gets more of the machine, see earlier rounds).
Decode and head insert took 52% of the server's CPU before (decode 33%,
translation in the head 19%) and 43% after (decode 38%, head 5%).
Tests that this is not a shortcut: a head holding the stacks the model
path added takes every pending request of the corpus, hand-made inputs
and mutations without translating anything, and the unit tests fail as
soon as one field of the wire key differs from the head's
(tests/unit/format/test_otlp_direct.c, test_head.c, test_stackkey.c).
The break-it check found that the first version's cheap key for frames
without lines (an XOR of the mapping and frame type keys) let two
crafted frames swap into one, and that unseeded XXH3 lets anyone build
two long names with one key (true before this change too); both are
closed by the seeds and a real hash per kind. ingestload now moves each
request's times to the present before sending it (it re-sent one
request with the same 200 times, which made the flush sort see a
million rows over 200 distinct times). A well-formed request that fails
conversion is now rejected by the direct decoder in protobuf-c's words
(converting again a profile at a time) instead of protobuf-c unpacking
it: a rejected 9.6 MB request of 50 profiles x 10 000 stacks peaks at
+54 MiB, was +261 MiB (accepted: +77 MiB); 19 MB, 20 000 stacks: +107,
was +419 MiB (accepted +149 MiB).

Head flush sort, 2026-11-30 (src/store/maint.c). A flush sorts each
series' rows by time, then stack (stably); it split them into segments
that no later row undercuts and merge-sorted each. On the synthetic load
a series is one segment of about a million rows: every request of a
client repeats the same 200 times, so one series holds 200 times of
about 5,000 rows each, and the merge sort did 15 passes. Segments of 128
rows and more now take an LSD radix sort on the time's offset from the
segment's oldest (8-bit digits, a digit all rows share skipped; one pass
here), then runs of equal times are put in stack order (already so
here); all rows at one time (a pprof profile) are radix-sorted by stack;
small segments, or ones whose times need more than one digit per 128
rows, keep the merge sort. The order is unchanged
(tests/unit/store/test_maint.c checks it against a stable reference
sort on each shape).
A throwaway program on a million rows shaped like the synthetic series
(best of 5, load 4.7-10): 80.6 / 97.2 / 111.3 -> 39.0 / 41.1 / 41.8 ns
a row; a million rows at random times over 100 s, 272 -> 61 ns. In the
server (perf, 20 s synthetic runs with one flush of the 256 MiB head,
alternating a build of the previous commit and one with the change,
load 6.0-6.3): the sort's share of server CPU 5.4% / 4.3% -> 1.8% /
2.1%, 0.59 / 0.51 -> 0.23 / 0.24 CPU-seconds per flush. Samples per
server CPU-second, 20 s runs in 5 pairs (load 5.6-6.3): before 878,158
/ 912,942 / 1,056,036 / 1,111,205 / 1,080,554, after 1,166,013 /
1,237,821 / 855,382 / 1,169,104 / 1,173,338 (means 1,008 k and 1,120 k;
more than the sort's share explains, and within one build's spread:
whether and how many flushes fall inside a run moves it by 10%).
Preallocating WAL segments (zeros written 1 MiB ahead of the end, so an
fdatasync does not also write the inode: this ext4 has no journal and
writes the inode when a sync follows a write that grew the file) was
tried and left out: the WAL alone (one thread, 17307-byte records) took
61 / 67 / 48 -> 52 / 51 / 38 us of CPU a record, but in the server the
zeros' copy into fresh page-cache pages cost more than the syncs saved
(fdatasync 7.8% / 7.5% -> 5.5% / 6.0% of server CPU, pwritev 4.6% /
4.5% -> 9.7% / 9.9%); fallocate()'s unwritten extents did not help the
WAL alone, and FALLOC_FL_WRITE_ZEROES is not supported by this disk.

Server work around ingest, 2026-11-30 (everything per request outside
decode, head insert and WAL). Where it went before (perf, 15 s,
server pinned to one CPU, load average 6.5): the HTTP glue around
the handler 2.0% (access log 1.4%, half of it its write(2)), the
pipeline around decode and store 1.7% (info_fill 0.5%), libmicrohttpd's
select 2.2%, memset 2.7%, send and recv 7% (kernel loopback TCP, the
client's receive included), scheduling and futex about 5% (mostly the
WAL's group commit, by strace -k). The memset is libmicrohttpd's,
twice per keep-alive request: shrinking the 64 KiB read buffer
(MHD_pool_reallocate zeroes the freed part) and MHD_pool_reset zeroing
the whole 128 KiB pool, 192 KiB per request (206 k of the request's
1.37 M user-space instructions by callgrind). Both scale with the pool
only, and 1.0.1 zeroes the same way; the documented limits (a 64 KiB
URL with 512 parameters, a 100 KiB header) need the 128 KiB, so it
stays. What changed: the access log lends a field that needs no escape
instead of copying it, formats an IPv4 client with inet_ntop instead
of getnameinfo, and keeps its two metric labels per thread; prof_log
writes its time and level prefix by hand; the pipeline keeps the last
type ids a thread formatted (by their five strings), puts a profile's
ids in one allocation instead of one each, keeps the dataset's four
ingest metric labels per thread and takes its per-request arrays from
the stack for up to 7 profiles. User-space instructions per request
(callgrind, 4 clients): the HTTP glue around the handler 42.5 k ->
34.7 k, the pipeline around decode and store 14.3 k -> 8.2 k (together
56.7 k -> 42.9 k, -24%; the request took 1.37 M on the commit before
30257a0). Server samples per CPU-second on the synthetic load, 12 s
runs alternating a build of commit 30257a0 (the stack-key decoder)
and one with this change (load average 5.6-6.8): before 898,172 /
820,050 / 929,393 / 868,000 / 835,867, after 982,494 / 920,501 /
854,245 / 999,090 / 874,769 (means 870 k and 926 k, +6%, 230 -> 217
us of server CPU per request; about the spread of one build's runs,
and more than the instruction counts explain); on the commit before
it, 4 pairs under load 8-11: 638.6 k -> 656.9 k (+3%). The daemons
now wait in poll(2) instead of select(2): no faster (2.2% -> 2.0%
of the profile), but in select mode libmicrohttpd did not start when
its descriptors were numbered past 1023 (a parent passing many open
files, many datasets' files) and would close connections numbered
past it (tests/integration/test_server_many_fds.sh, which fails on
the previous build). Left: the pool zeroing (about 3%), the body copy
out of libmicrohttpd's read buffer (17 KB and a 32 KiB allocation
per request, about 18 k instructions), the access log's one write(2)
per request.

Ingest-path work of 2026-11-30, fourth round. The WAL writes each group
commit with one pwritev: an appender queues its record (header and
payload stay on its stack) and the one that finds no write in progress
takes the whole queue, writes it at the log's end, runs one fdatasync
for all of it and then wakes the records' owners (src/store/wal.c);
before, every appender wrote its own record under the log's mutex and
then waited for a sync. Same record format, same contract: nobody
returns before the fdatasync that covers its record, a failed write is
rolled back and fails the records of that write, a failed sync poisons
the log. The direct decoder keeps its per-dictionary memo between a
thread's requests (an epoch per dictionary instead of a table zeroed
for every request), and so does the head for the content hashes of a
dictionary's strings and locations and for its stack-range cache
(store_head_add_batch: a per-thread scratch of at most 4 MiB whose
entries hold for the epoch they carry).

The WAL alone (8 threads appending 17307-byte records for 5 s, process
CPU time per record; a throwaway program linked once with the previous
src/store/wal.c and once with this one): before 39.4 / 37.5 / 39.1 us,
after 24.8 / 23.2 / 23.9 us (-39%; 4.2 -> 2.8 context switches per
record; load average 1.8); under a load of 5-8 earlier, 33.8 / 30.9 /
29.5 -> 29.3 / 23.5 / 27.1 us. Decode + store alone (tests/tools/otlpdecode
--only store, instructions per request counted by callgrind): synthetic
1.122 M -> 1.055 M (-6.0%), the largest recorded agent request (64 KiB,
104 profiles) 4.99 M -> 4.88 M (-2.1%). The server, samples per server
CPU-second, alternating a build of the previous commit and one with the
change: synthetic 20 s runs (load average 2.8-6.2) before 694,681 /
824,618 / 676,498 / 800,359, after 811,830 / 685,846 / 820,750 /
759,704; 25 s runs, each with a head flush (load 1.6-5.0), before
606,663 / 548,663 / 604,327, after 687,819 / 599,685 / 583,967: +4% on
the means of the seven pairs (679 k to 707 k), less than one run's
noise here; recorded agent requests (15 s, load 5.8-6.6) before 574,995
/ 579,912 / 472,160, after 515,011 / 567,896 / 539,014 (means 542 k and
541 k: the WAL is a smaller share of that load and its per-request
tables are small). The tables above come from this round's build on a
machine with less other work than before (the server got 89 of 120
CPU-seconds; its per-CPU figure falls as it gets more of the machine, so
they do not compare with earlier tables), and the agent recorded a
nearly idle host (3 processes, 7 rows per request): that row measures
the per-request cost (HTTP, WAL, log line), not rows.

Where the synthetic server's time goes now (perf record --call-graph
dwarf, 20 s, load 5.0-5.3; after the third round in brackets): decode
32% [31%] (parse 14%, model build 18%), head insert 24% [22%] (location
content keys 16% [14%]), WAL append 14% [17.5%] (fdatasync 6.5%, the
write 3.9% [4.9%], waiting 2.1% [3.5%]), the head flush 5.5% [7.3%],
the access log 3.3% [3.9%: one fprintf to unbuffered stderr per
request, half of it formatting], memset 2.4% [4.2%: mostly
libmicrohttpd zeroing the whole 128 KiB connection pool in
MHD_pool_reset at every keep-alive request, which the HTTP connection
pool note below could not see in A/B runs], send 2.9%, futex and
scheduling about 5%.

What is left for 1 M per server CPU-second on the synthetic row: the
same two largest items as after the third round, building the model
(18%) and the head's location content keys (16%) for stacks the head
has seen; a decoder that hands the head the wire tables (no model for
known stacks, strings hashed once from the wire) remains the next step
(about 30%). Smaller: the access log line (write it with one write(2)
instead of fprintf), libmicrohttpd's pool zeroing (2-4%; a smaller pool
would cut it but long query URLs need 128 KiB), the per-request
allocations of the decoder's and head's other tables (calloc/free about
4%).

Ingest-path work of 2026-11-30, third round. The profiles of one OTLP
request now share one decoded dictionary (fmt_otlp_decode_shared: the
direct decoder translates each string, mapping, function, location and
stack once per request instead of once per profile; the other profiles
borrow the first one's tables), the store checks that dictionary once
(model_profile_validate_samples, store_head_check_samples for the
others) and the head translates it once for all of them
(store_head_add_batch: one translation table, content-key memo and stack
cache per dictionary); the WAL still logs the request bytes and replay
goes through the same path. Query answers are byte-identical (flame
graph and table JSON of both CPU types after the same requests, old and
new build). A head flush sorts each series' rows by time: glibc's qsort
(a merge sort through a comparison callback) took 11% of the server's CPU
on the synthetic load (rows of a request come grouped by stack, so every
series is out of order); it is now a stable merge sort of the short
segments that lie wholly before the rest (src/store/maint.c; same order,
4 M rows of the synthetic shape 0.58 s -> 0.07 s, random times 1.36 s ->
0.63 s).

15-25 s runs alternating a build of the previous commit and one
with the change, load average 2.3-6.6 from other work, samples per server
CPU-second: recorded agent requests (this host, quiet: 2-52 processes and
4-104 profiles per request, 4 requests) before 257,129 / 271,472 / 256,164
/ 230,338 / 250,913, after 379,355 / 316,848 / 402,335 / 376,792 / 470,282
(+54% on the means, 253 k to 389 k; p50 6-14 ms to 5-7 ms); synthetic (25 s
runs, so that the head flushes) before 560,775 / 528,093 / 572,249, after
663,200 / 715,672 / 587,357 (+18%, 554 k to 655 k; p50 2.5-2.6 ms to
2.0-2.5 ms). Decode + store alone (tests/tools/otlpdecode, instructions per
request counted by callgrind): the largest recorded agent request (64 KiB,
52 processes, 104 profiles, 1560 locations, 700 rows) 8.30 M to 4.98 M; the synthetic
request 1.13 M before and after (one profile: nothing to share). A
per-function content hash in the head's location keys was tried and
dropped: with two locations per function it hashed as many bytes as
before (1.20 M instructions). That round's table (60 s, load average about 5.9
from other work on the machine) measured the synthetic row at 596 k
against the previous report's 659 k at 5.7, and the agent row on other
recorded requests (more processes, since more ran): 60 s figures taken at
different times do not compare builds here; the alternated pairs do.

Where the synthetic server's time went after the third round (perf
record --call-graph dwarf, 20 s, load 4.3-4.5; before this round in brackets, 15 s, load 1.9-3.3):
decode 31% [29%] (parse 11.5% [11.5%], model build 19% [17%]), head
insert 22% [21%] (location content keys 14% [13%]: XXH3-128 of each
function string and location), WAL append 16% [14.5%] (fdatasync 6.6%,
the write 5.5%), the head flush 7.3% [13.7%] (the row sort 4.4% [11.3%]),
HTTP, the access log (2.8%), scheduling and the rest ~23%.

What was left for 1 M per server CPU-second on the synthetic row: a
request's single profile still goes through a model (17% building it)
and the head computes a content key for each of its 1200 locations
(13%) before the whole-stack memo finds the stacks it has seen; a
decoder that hands the head the wire tables (strings hashed once from
the wire, no model for stacks the memo already knows) is the next step,
then one WAL write per group commit instead of one per request, and
per-thread scratch for the decoder's and head's per-request tables
(zeroing them is 4.7% of decode + store).

Before / after the ingest-path work of 2026-11-30, second round (15 s runs
alternating a build of the previous commit and one with the change, load
average 3.8-4.8 for the first workload, 5.7-6.3 for the agent's requests;
samples per server CPU-second): synthetic before 652,262 / 585,038 / 552,826,
after 692,250 / 636,600 / 675,273 (+12% on the means, 597 k to 668 k; p50
1.6-2.1 ms before, 1.5-2.3 ms after); agent requests recorded at 99 Hz every
2 s while the host was busy compiling (25 processes, about 800 rows each)
before 304,081 / 321,981 / 340,186, after 523,222 / 491,431 / 484,630 (+55%,
322 k to 500 k; p50 18-20 ms to 11-13 ms); agent requests recorded with the
default settings like the table's row (up to 75 processes, 150 profiles and
about 350 rows each) before 111,116 / 125,928 / 109,957, after 141,200 /
128,284 / 134,544 (+16%, 116 k to 135 k). Decode + store alone
(tests/tools/otlpdecode, instructions per request counted by callgrind,
which other load does not disturb): synthetic 1.31 M to 1.14 M (decoder
alone 856 k to 718 k), the 99 Hz agent request 10.8 M to 5.5 M (decoder
alone 4.9 M to 3.2 M). What changed: the head
memoizes a profile's attribute sets (samples whose labels and link are the
same (key, string, number) triples share the set without rendering, sorting
or interning it again: agents repeat a thread's attributes on each of its
samples) and keys frames without lines (unsymbolized native frames) in the
whole-stack memo by (frame type, mapping, address) instead of a content
hash; the direct decoder memoizes attribute values and which Location
attribute key an attribute has per request, keeps its parse pools per
thread between requests (no growth by doubling each time), sizes every
profile's tables (not only a request's single profile), and no longer
re-validates what it built (valid by construction; the unit test checks it);
the store runs model_profile_validate and then only the head checks that one
lacks (store_head_check_validated) instead of both in full; the pipeline
computes a profile's type ids, labels and row counts once per request instead
of four times; the WAL's CRC-32 (zlib's, the same values) is
computed by ISA-L (crc32_gzip_refl, PCLMULQDQ), 1.3 us per 17 KiB request instead of zlib's 9-10 us;
strtab_reserve sizes its index in one step.

Earlier the same day (first round): the head's whole-stack memo keyed by
location content, locations with lines in their own hash table, one check
per stack entry and a direct decoder sizing its tables took the first
workload from 455,233 / 436,692 / 415,126 to 661,911 / 639,857 / 658,026
samples per server CPU-second (load 7.7-8.5); before that the direct decoder
took the protobuf-c path's 224,099 / 224,726 to 402,769 / 410,688.

Where the server's time goes now (perf record --call-graph dwarf on the
server, share of server CPU). Synthetic requests: decoding 35% (wire parse
16%, building the model 19%), head insert 25% (17% the content hashes of the
612 locations with lines each request carries, XXH3-128 of every function
name and location: the whole-stack memo needs them to find a stack seen
before), WAL 18% (fdatasync 7%, the write 5%, group-commit waits 3%; the CRC
is under 0.5% now), HTTP, the access log (3%) and the rest ~20%. The agent's
requests (25 processes, two profiles each, about 800 rows, 50 KiB raw and
17 KiB gzipped): decoding 34% (parse 8%, building 50 models 25%), head insert
31% (stack keys 16%), gzip inflate 15%, WAL 5%, HTTP and the rest ~15%.
The default agent's requests (150 profiles, 900-2700 locations, about 350
rows): decoding 32%, head insert 34% (location content hashes 14%: few
samples per stack, so nearly every location is new to the request and is
built and hashed once per profile, twice per process), gzip inflate 10%,
the pipeline's per-profile work (type ids, labels, series admission) 4%,
WAL 4%.

What is left for 1 M per server CPU-second on the synthetic row (about 1.5x):
a decode path that feeds the head straight from the wire tables (no model
per profile, strings interned and hashed once, one validation: about a
quarter of decode + store by the instruction counts), fewer system calls in
the WAL (one write per group commit instead of one per request) and a
cheaper HTTP layer and access log. The agent's requests cost more per row than the
synthetic ones because each carries many small profiles (two per process,
the CPU time and the sample count over the same stacks): each gets its own
model, tables and head translation of the same locations, and the same
decode path, translating the request's dictionary once for all its
profiles, would remove most of that (done in the third round, above).

Per-core figures depend on the load from other work (cache and hyperthread
contention) and on how many requests each fsync covers (more when the cores
are busy): compare runs at a similar load average; the A/B pairs above
alternate builds for that reason.

HTTP connection pool (2026-11-30; src/server/http.c). libmicrohttpd's
per-connection pool went from its 32 KiB default to 128 KiB so that a URL
with a few hundred query parameters is answered (an empty reply before; past
512 parameters it is now a 414 naming the limit, docs/api.md). The pool is
zeroed between keep-alive requests, so every ingest request pays a memset of
it. 15 s runs of the OTLP workload (8 clients, the table's request shape),
alternating the two builds, load average 5.9-9.1 from other work, samples per
server CPU-second: 32 KiB 723,232 / 622,779 / 751,706 / 765,978 / 788,974 /
854,565, p50 1.6-2.5 ms; 128 KiB 626,344 / 802,326 / 704,416 / 764,949 /
833,134 / 906,509, p50 1.7-2.8 ms: no difference above the noise (means 751 k
and 773 k). A 256 KiB pool measured 571,280 / 563,472 / 577,032 against
571,949 / 627,605 / 619,544 for 32 KiB in the same way (load 6.2-9.3), about
6% less (noisy, but the memset is twice as long), so the pool stops at 128 KiB.

Peak RSS (2026-11-30, issue #4). The table's 1198 MiB for the agent's
requests (542 MiB synthetic) is not one structure outgrowing the head's
accounting: the head flushes at head_max_bytes as it should, and what it
counts is what heaptrack finds in it (row arrays 35 MB at the peak of a 32
MiB head). Measured on the replay of four recorded agent requests (8
clients, 30-70 s, head_max_bytes 32 MiB so that flushes and a compaction
fall inside the run; heaptrack on a 70 s run, peak heap 85 MB): the peak
comes while a compaction runs, and is made of the active head (up to
head_max_bytes), the head being flushed (up to head_max_bytes more while its
block is written), the compaction of four blocks (store_compact's merge,
25 MB + 14 MB, and the block writer's per-hour encoders, 4 x 8 MB:
about 17 bytes per compacted row, so about 1.7 x head_max_bytes for four
full heads), and what glibc keeps: each ingest thread had a malloc arena of
its own (eight per CPU by default) holding the pages its requests freed,
about a third above the heap. The decoders' per-thread pools (at most 4
MiB each) held under 2 MB; decoded requests under 1 MB. With the default
256 MiB head that is about 256 + 256 + 450 MiB plus the arenas, the 1.2 GiB
of the table. Fixed: the server now caps malloc arenas at one per CPU
(src/cli/cmd_server.c; MALLOC_ARENA_MAX overrides): peak RSS 146 / 129 /
118 MiB with glibc's arenas, 104 / 95 MiB with the cap (30 s runs
alternated, load average 4.0-7.7; samples/s 190 k / 180 k / 198 k before,
183 k / 164 k after, within this machine's noise; MALLOC_ARENA_MAX=2 from
the environment measured 119 / 109 MiB, 204 k / 198 k). Left: a flush and
a compaction at once double-count the rows (compaction could stream its
blocks instead of merging them in memory), and head_max_bytes bounds one
head, not the two a flush holds.
Pyroscope pprof pushes, 2026-12-02 (issue 24): the WAL keeps a pushed pprof
as it came (record type 2, docs/storage-format.md: the gunzipped profile
bytes behind a header with what ingest changed, from/until, name and
labels; store_ingest_pprof, src/store/wal_pprof.c) instead of the store's
OTLP encoding of the decoded profile, and replay decodes those bytes with
the pprof decoder again. The OTLP encode had been 36% of the server's CPU
on these pushes. Samples per server CPU-second, `PPROF_ONLY=1
SECONDS_OTLP=40 ROUNDS=2 PROFD_BASE=<previous commit's build>
bench/bench_ingest.sh` (10 s runs alternating the builds, 8 clients, load
average about 7 from other work): before 175,719 / 186,699, after 314,395 /
323,899. Where the server's CPU goes after it (perf, 10 s of the same
load): the pprof decoder 30% (pw_fill 15%, pw_check 6%, the model's
tables, strings and mallocs the rest), the kernel 30% (fdatasync 9%,
futex and scheduling of the 8 connection threads 11%, epoll and
loopback TCP), zlib's inflate 12.5%, the head 8% (head_stack_node 4%,
store_head_add_batch, stack keys), memset 3.7% and memmove 2.4%.
Inflate, 2026-12-02 (issue 24): gzip_inflate (src/base/compress.c) runs
ISA-L's igzip first (libisal, already linked for CRC-32) and gives any
input it does not take whole (corrupt, truncated, over the cap, reserved
header flags, trailing bytes) to zlib as before, whose answer and words
stand; tests/unit/base/test_base.c holds the two equal (code, message,
offset, output) on five stream shapes and 20,000 mutations (400,000 once
by hand). Same runs as above, PROFD_BASE the WAL change's build: before
317,407 / 316,731, after 337,799 / 348,265 samples per server
CPU-second (load average about 10). zlib had been 12.5% of the server's
CPU on these pushes.
The three pprof push changes of 2026-12-02 together (the two above and
Connect pushes logged as pprof records), same runs, PROFD_BASE the build
before them, three pairs (load average about 6): before 195,850 / 189,963
/ 203,953, after 328,079 / 341,205 / 365,896 samples per server
CPU-second (1.75x); p50 latency 10.7-12.6 ms -> 9.0-9.3 ms. Where the CPU
goes now (perf, 10 s of the same load): the pprof decoder into the model
34% (pw_fill 16%, pw_check 7%, pp_to_model, model_location_add, strings,
malloc), the kernel 36% (context switches of the 8 connection threads
13%, spinlocks 5%, fdatasync and its virtio notify 4-9%, loopback TCP),
the head 9% (head_stack_node 4%, XXH3 stack keys 3%,
store_head_add_batch 2%), ISA-L inflate 6.5%, memset 3%, memmove 2%.
The goal of 600 k needs the decoder to key pprof stacks from the wire
as the OTLP path does (no model locations, functions or strings for
stacks the head knows: most of the 34% and of the head's 9%).
The pprof WAL record keeps a gzipped push as the gzip it came in (its
header says the inflated length, which replay checks), 2026-12-02: 11.1
KB per request of the bench's pprof push, against 35.1 KB for the
inflated bytes and 17 KB for the OTLP encoding of before. Server CPU
does not change (same runs, PROFD_BASE the previous commit's build,
three pairs, load about 7: before 355,939 / 342,205 / 346,701, after
361,170 / 341,598 / 348,380 samples per server CPU-second); the log and
its replay read a third of the bytes.
TXT
} >"$OUTMD"
echo "wrote $OUTMD"
