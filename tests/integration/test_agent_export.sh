#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_export.sh - the agent's export path under trouble:
#   1. credentials: with --bearer-token-file and --dataset every request
#      carries "Authorization: Bearer <token>" and "X-Profd-Dataset", and
#      the token never shows in the agent's log; TLS: an https:// receiver
#      (export_peer.py record-tls) with a certificate signed by a CA made
#      here by openssl gets nothing while the agent does not know the CA
#      (a certificate error in its log, a refused handshake at the
#      receiver) and every request with --ca-file; a missing --ca-file is
#      a usage error (exit 2);
#   2. a server that goes away: the server is stopped for GAP_SECONDS (8;
#      the issue's 30 s shortened for make test) while tests/workloads/
#      spin.c runs, then restarted on the same port and data; the samples
#      taken during the gap must reach it (their rate per second within
#      the gap >= 60 % of the rate outside it), and /metrics must have shown
#      export errors and a non-empty buffer meanwhile;
#   3. a server that hangs (accepts, never answers): with --max-buffer 8KiB
#      the buffer stays within its cap, requests are dropped oldest first
#      and counted, the optimized agent's RSS stays under 64 MiB and grows
#      by less than 8 MiB, and SIGINT still ends it within its 5 s drain.
# Needs root and kernel BTF; prints "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init
GAP_SECONDS=${GAP_SECONDS:-8}

${CC:-cc} -O2 -g -fno-omit-frame-pointer -fno-inline -o "$tmp/spin" tests/workloads/spin.c ||
	die "cannot build spin.c"

# start_peer ARGS...: export_peer.py ARGS in the background (its pid in
# extra_pids), once it listens (up to 30 s: Python starts slowly on a loaded
# machine, and an agent that finds nobody listening logs a connect error,
# not the one a check below looks for).
start_peer() {
	local out=$tmp/peer.$RANDOM
	python3 tests/integration/export_peer.py "$@" >"$out" 2>&1 &
	extra_pids=$!
	wait_for -p "$extra_pids" 30 'grep -qs "^listening" "$out"' ||
		die "export_peer.py $1 did not start: $(cat "$out")"
}
# The short spins below run until they have had 1 s of CPU (19 samples at
# the default 19 Hz), so each agent has something to send however loaded
# the machine is.

# --- 1. credentials
rport=$(free_port)
start_peer record "$rport" "$tmp/requests.jsonl"
printf 'tok-%s\n' "$RANDOM$RANDOM" >"$tmp/token"
agent_start --server "http://127.0.0.1:$rport" --interval 300ms --include-exe spin \
	--bearer-token-file "$tmp/token" --dataset team-a
SPIN_CPU_SECONDS=1 "$tmp/spin" 1.5 >/dev/null
agent_stop
python3 - "$tmp/requests.jsonl" "$(head -n 1 "$tmp/token")" <<'PY' || die "request headers"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
tok = sys.argv[2]
bad = [r for r in reqs if r["path"] != "/v1development/profiles"
       or r["headers"].get("Authorization") != "Bearer " + tok
       or r["headers"].get("X-Profd-Dataset") != "team-a"
       or r["headers"].get("Content-Encoding") != "gzip"]
print(f"ok {len(reqs)} requests, all with the bearer token and X-Profd-Dataset: team-a"
      if reqs and not bad else f"bad requests: {bad[:2]} of {len(reqs)}")
sys.exit(0 if reqs and not bad else 1)
PY
! grep -qF "$(head -n 1 "$tmp/token")" "$tmp/agent.log" || die "the token is in the agent's log"
kill "$extra_pids" 2>/dev/null || true
extra_pids=

# --- 1b. TLS: an https:// receiver whose certificate a CA made here signs
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=profd test CA" \
	-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
	-keyout "$tmp/ca.key" -out "$tmp/ca.pem" 2>/dev/null || die "openssl: the CA"
openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$tmp/srv.key" \
	-out "$tmp/srv.csr" 2>/dev/null || die "openssl: the server key"
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' >"$tmp/srv.ext"
openssl x509 -req -in "$tmp/srv.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" -CAcreateserial \
	-days 1 -extfile "$tmp/srv.ext" -out "$tmp/srv.pem" 2>/dev/null || die "openssl: the server certificate"
tport=$(free_port)
start_peer record-tls "$tport" "$tmp/tls.jsonl" "$tmp/srv.pem" "$tmp/srv.key"
# without the CA the certificate is refused: nothing arrives, the log says why
agent_start --server "https://127.0.0.1:$tport" --interval 300ms --include-exe spin --no-upload-debuginfo
SPIN_CPU_SECONDS=1 "$tmp/spin" 1 >/dev/null
agent_stop
[ ! -s "$tmp/tls.jsonl" ] || die "an export reached the TLS receiver without the CA"
grep -q "agent export failed url=https://127.0.0.1:$tport/v1development/profiles .*certificate" \
	"$tmp/agent.log" || die "no certificate error in the agent's log"
grep -qs "handshake failed" "$tmp/tls.jsonl.tls" || die "the receiver saw no refused handshake"
echo "ok TLS without the CA: nothing sent, $(grep -c "agent export failed" "$tmp/agent.log") failed attempts naming the certificate"
# with --ca-file it is trusted
agent_start --server "https://127.0.0.1:$tport" --interval 300ms --include-exe spin --no-upload-debuginfo \
	--ca-file "$tmp/ca.pem"
SPIN_CPU_SECONDS=1 "$tmp/spin" 1.5 >/dev/null
agent_stop
python3 - "$tmp/tls.jsonl" <<'PY' || die "requests over TLS"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
bad = [r for r in reqs if r["path"] != "/v1development/profiles" or r["bytes"] <= 0
       or r["headers"].get("Content-Encoding") != "gzip"
       or r["headers"].get("Content-Type") != "application/x-protobuf"]
print(f"ok {len(reqs)} requests over TLS with --ca-file, all OTLP protobuf, gzip"
      if reqs and not bad else f"bad requests: {bad[:2]} of {len(reqs)}")
sys.exit(0 if reqs and not bad else 1)
PY
kill "$extra_pids" 2>/dev/null || true
extra_pids=
rc=0
"$PROFD" agent --server "https://127.0.0.1:$tport" --ca-file "$tmp/no-such.pem" >"$tmp/ca.out" 2>&1 || rc=$?
[ "$rc" = 2 ] && grep -q -- "--ca-file '$tmp/no-such.pem': No such file or directory" "$tmp/ca.out" ||
	die "a missing --ca-file: exit $rc, $(cat "$tmp/ca.out")"
echo "ok a missing --ca-file is a usage error: $(cat "$tmp/ca.out")"
# a file or directory that holds no PEM certificate is one too, before sampling
head -c 300 /dev/urandom >"$tmp/junk.pem"
for f in "$tmp/junk.pem" "$tmp"; do
	rc=0
	"$PROFD" agent --server "https://127.0.0.1:$tport" --ca-file "$f" >"$tmp/ca.out" 2>&1 || rc=$?
	[ "$rc" = 2 ] && grep -Eq -- "--ca-file '$f': (no PEM certificate|not a regular file)" "$tmp/ca.out" ||
		die "--ca-file $f: exit $rc, $(cat "$tmp/ca.out")"
done
echo "ok --ca-file without a PEM certificate is a usage error"

# --- 2. the server goes away and comes back
sport=$(free_port)
mport=$(free_port)
agent_start_server "$sport"
agent_start --server "$base" --interval 1s --max-backoff 1s --frequency 49 --include-exe spin \
	--metrics-listen "127.0.0.1:$mport"
run_s=$((GAP_SECONDS + 5))
"$tmp/spin" "$run_s" >/dev/null &
spin_pid=$!
extra_pids=$spin_pid
t_start=$(date +%s%3N)
sleep 2
kill "$server_pid"
wait "$server_pid" 2>/dev/null || true
server_pid=
t_stop=$(date +%s%3N)
sleep "$GAP_SECONDS"
errors=$(agent_metric "$mport" profd_agent_export_errors_total)
buffered=$(agent_metric "$mport" profd_agent_export_buffer_bytes)
t_restart=$(date +%s%3N)
agent_start_server "$sport"
wait "$spin_pid" || die "spin failed"
extra_pids=
t_end=$(date +%s%3N)
# Until what was buffered is sent (15 s at most).
WAIT_STEP=0.25 wait_for 15 '[ "$(agent_metric "$mport" profd_agent_export_buffer_requests)" = 0 ]' || true
agent_stop
[ "${errors%.*}" -ge 1 ] && [ "${buffered%.*}" -gt 0 ] ||
	die "during the gap /metrics showed errors=$errors buffer_bytes=$buffered"
echo "ok during the gap: export errors=$errors, buffered bytes=$buffered"
type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
q='{process.executable.name="spin"}'
agent_flame "$type" "$q" "$tmp/gap.json" $((t_stop + 500)) $((t_restart - 500))
agent_flame "$type" "$q" "$tmp/all.json" "$t_start" "$t_end"
python3 - "$tmp/gap.json" "$tmp/all.json" $((t_restart - t_stop - 1000)) $((t_end - t_start)) <<'PY' ||
import json, sys
gap = json.load(open(sys.argv[1]))["root"].get("total", 0)
allt = json.load(open(sys.argv[2]))["root"].get("total", 0)
gap_ms, all_ms = int(sys.argv[3]), int(sys.argv[4])
rest = max(allt - gap, 0)
r_gap = gap / gap_ms
r_rest = rest / max(all_ms - gap_ms, 1)
print(f"ok samples from the {gap_ms / 1000:.1f} s gap reached the server: {gap / 1e9:.2f} s of CPU "
      f"({r_gap / 1e3:.0f} ms/s vs {r_rest / 1e3:.0f} ms/s outside the gap; want >= 60 %)")
sys.exit(0 if gap > 0 and r_gap >= 0.6 * r_rest else 1)
PY
	die "samples from the gap"

# --- 3. a hung server
hport=$(free_port)
mport=$(free_port)
start_peer hang "$hport"
AGENT_BIN=$PROFD_FAST agent_start --server "http://127.0.0.1:$hport" --interval 200ms \
	--frequency 499 --max-buffer 8KiB --include-exe spin --metrics-listen "127.0.0.1:$mport"
"$tmp/spin" 7 >/dev/null &
spin_pid=$!
extra_pids="$extra_pids $spin_pid"
sleep 2
rss0=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
wait "$spin_pid" || die "spin failed"
rss1=$(awk '/^VmRSS/ { print $2 }' "/proc/$agent_pid/status")
buf=$(agent_metric "$mport" profd_agent_export_buffer_bytes)
lim=$(agent_metric "$mport" profd_agent_export_buffer_limit_bytes)
dropped=$(agent_metric "$mport" 'profd_agent_export_dropped_total{reason="buffer_full"}')
t0=$(date +%s%3N)
agent_stop
stop_ms=$(($(date +%s%3N) - t0))
echo "ok hung server: buffer $buf of $lim bytes, $dropped requests dropped (buffer full)," \
	"RSS ${rss0} -> ${rss1} KiB, SIGINT to exit ${stop_ms} ms"
[ "$lim" = 8192 ] && [ "${buf%.*}" -le 8192 ] && [ "${dropped%.*}" -ge 1 ] ||
	die "the buffer is not bounded: $buf of $lim, dropped $dropped"
[ "$rss1" -lt 65536 ] && [ $((rss1 - rss0)) -lt 8192 ] || die "RSS grew: $rss0 -> $rss1 KiB"
[ "$stop_ms" -lt 8000 ] || die "the agent took $stop_ms ms to stop"
echo "ok agent export under trouble"
