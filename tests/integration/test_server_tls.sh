#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_server_tls.sh - `profd server --tls-cert/--tls-key [--tls-client-ca]`
# on loopback, with a throwaway CA, server and client certificates made
# here by openssl:
#   (a) curl over HTTPS with --cacert ingests (the main and the OTLP/HTTP
#       listener) and queries; plain HTTP to the TLS ports is refused
#       (the server goes on); OTLP/gRPC over TLS negotiates h2 by ALPN and
#       answers a gRPC status, an HTTP/1.1-only ALPN client is refused in
#       the handshake; the connection guard's header deadline closes a
#       silent TCP connection on the TLS ports as on plain ones;
#   (b) the agent (root and kernel BTF, else that part is skipped) with
#       --ca-file to https:// and grpcs://: spin's profiles are queryable;
#   (c) the scrape forwarder (--target, async) and file mode (--watch,
#       sync) to an https:// server with --ca-file: every profile arrives;
#       without --ca-file the certificate is refused;
#   (d) `profd mcp --server https://... --ca-file` answers tools from it;
#       without --ca-file the tool result is an error naming the
#       certificate;
#   (e) with --tls-client-ca: no client certificate, one of another CA, or
#       the server's own certificate (extended key usage: server only) are
#       refused over HTTP (403) and gRPC (handshake), /healthz answers all;
#       the right certificate is accepted by curl, the agent (https:// and
#       grpcs://, --cert-file/--key-file), the forwarder and the MCP client;
#   (f) --listen 0.0.0.0:0 without TLS (with a config) logs a warning; with
#       TLS it does not; bad TLS files stop the server at start with the
#       reason.
# Environment: PROFD (the binary under test; runs the agent too), PROFD_FAST.
source "$(dirname "$0")/scrape_lib.sh"

command -v openssl >/dev/null || {
	skip "openssl is not installed"
}

# --- certificates -------------------------------------------------------------------------
pki() {
	local d=$tmp/pki
	mkdir -p "$d"
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=profd test CA" \
		-addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign \
		-keyout "$d/ca.key" -out "$d/ca.pem" 2>/dev/null || return 1
	# sign NAME CN EXTENSIONS: NAME.pem / NAME.key signed by the CA
	sign() {
		openssl req -newkey rsa:2048 -nodes -subj "/CN=$2" -keyout "$d/$1.key" \
			-out "$d/$1.csr" 2>/dev/null &&
			printf '%b' "$3" >"$d/$1.ext" &&
			openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.pem" -CAkey "$d/ca.key" \
				-CAcreateserial -days 1 -extfile "$d/$1.ext" -out "$d/$1.pem" 2>/dev/null
	}
	sign srv 127.0.0.1 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' &&
		sign cli agent-1 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n' &&
		openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=someone else" \
			-keyout "$d/other.key" -out "$d/other.pem" 2>/dev/null
}
pki || {
	fail "openssl could not make the certificates"
	exit 1
}
P=$tmp/pki
CA=(--cacert "$P/ca.pem")
TLS=(--tls-cert "$P/srv.pem" --tls-key "$P/srv.key")
CERT=(--cert "$P/cli.pem" --key "$P/cli.key")
EXPORT=/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export
mk() { # mk NAME VALUE: a pprof file with one stack of that value
	printf 'main;work %s\n' "$2" >"$tmp/mk.folded"
	"$PROFD" convert "$tmp/mk.folded" "$1" >/dev/null 2>&1 || fail "convert $1"
}
T='samples:samples:count::' # a pprof made from folded text, as ingested
ingest_pprof() {            # ingest_pprof FILE SERVICE [curl args...]: POST, sets $code
	local f=$1 svc=$2
	shift 2
	req POST "/api/v1/ingest/pprof?service_name=$svc" --data-binary "@$f" "$@"
}
# grpc_call PORT [curl args...]: an empty Export over HTTP/2 + TLS; prints
# "HTTPCODE GRPCSTATUS" (000 when the handshake or connection failed).
grpc_call() {
	local p=$1
	shift
	curl -s --noproxy '*' --http2 -o /dev/null -D "$tmp/gh" -w '%{http_code}' \
		-H 'content-type: application/grpc' --data-binary '' "$@" \
		"https://127.0.0.1:$p$EXPORT" >"$tmp/gc" 2>/dev/null
	echo "$(cat "$tmp/gc") $(sed -n 's/^grpc-status: *\([0-9]*\).*/\1/p' "$tmp/gh" | tr -d '\r')"
}
# silent_closed PORT: a TCP connection that sends nothing is closed by the
# server within 6 s (the header deadline is 1 s here, the sweep 250 ms).
silent_closed() {
	python3 - "$1" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(6)
t = time.time()
try:
    d = s.recv(100)
except socket.timeout:
    sys.exit(1)
except ConnectionResetError:
    d = b""
sys.exit(0 if time.time() - t < 6 else 1)
PY
}
mk "$tmp/one.pb.gz" 7

# --- (a) HTTPS: ingest, query, plain HTTP refused, gRPC with ALPN h2 ----------------------
start_server "${TLS[@]}" --otlp-http-listen 127.0.0.1:0 --grpc-listen 127.0.0.1:0 \
	--header-timeout 1s
checkx "the server announces an https:// explorer URL" '[ "${base%%://*}" = https ]'
checkx "the start log says tls=on" 'grep -q "listening .*tls=on" "$tmp/log.$n"'
ingest_pprof "$tmp/one.pb.gz" tls-a "${CA[@]}"
checkx "POST over HTTPS with --cacert: 200" '[ "$code" = 200 ]'
got=$(total "$T" '{service_name="tls-a"}' "${CA[@]}")
checkx "the profile is queryable over HTTPS (total 7, got $got)" '[ "$got" = 7 ]'
code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "$base/healthz" 2>/dev/null)
checkx "HTTPS without the CA: the certificate is refused (code $code)" '[ "$code" = 000 ]'
rc=0
curl -s --noproxy '*' -o "$tmp/plain.out" "http://127.0.0.1:$port/api/v1/profile-types" 2>/dev/null || rc=$?
checkx "plain HTTP to the TLS port gets no answer (curl exit $rc: 52 empty reply or 56 reset)" \
	'{ [ "$rc" = 52 ] || [ "$rc" = 56 ]; } && [ ! -s "$tmp/plain.out" ]'
require_alive "after plain HTTP on the TLS port"
"$PROFD" convert "$tmp/one.pb.gz" "$tmp/one.otlp.pb" >/dev/null 2>&1 || fail "convert to OTLP"
code=$(curl -s --noproxy '*' -o /dev/null -w '%{http_code}' "${CA[@]}" \
	-H 'Content-Type: application/x-protobuf' --data-binary "@$tmp/one.otlp.pb" \
	"https://127.0.0.1:$otlp_port/v1development/profiles")
checkx "OTLP/HTTP on --otlp-http-listen over HTTPS: 200 (got $code)" '[ "$code" = 200 ]'
rc=0
curl -s --noproxy '*' -o /dev/null "http://127.0.0.1:$otlp_port/healthz" 2>/dev/null || rc=$?
checkx "plain HTTP to --otlp-http-listen gets no answer (curl exit $rc)" '[ "$rc" = 52 ] || [ "$rc" = 56 ]'
g=$(grpc_call "$grpc_port" "${CA[@]}")
checkx "gRPC over TLS (ALPN h2): HTTP/2 200 with grpc-status 3 for an empty call (got $g)" \
	'[ "$g" = "200 3" ]'
# Clients stalled mid-handshake (half a ClientHello, then nothing) hold up
# nobody else: the handshakes run step by step in the event loop.
python3 -c '
import socket, sys, time
ss = []
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(bytes.fromhex("160301020001") + bytes(10))
    ss.append(s)
time.sleep(6)' "$grpc_port" &
stall_pid=$!
sleep 0.5
t0=$(date +%s%N)
g=$(grpc_call "$grpc_port" "${CA[@]}")
ms=$((($(date +%s%N) - t0) / 1000000))
kill "$stall_pid" 2>/dev/null
wait "$stall_pid" 2>/dev/null
checkx "... also while 20 clients stall mid-handshake ($g in $ms ms)" '[ "$g" = "200 3" ] && [ "$ms" -lt 1000 ]'
g=$(curl -s --noproxy '*' --http1.1 "${CA[@]}" -o /dev/null -w '%{http_code}' \
	"https://127.0.0.1:$grpc_port/" 2>/dev/null)
checkx "a TLS client offering only http/1.1 by ALPN is refused by the gRPC port (code $g)" \
	'[ "$g" = 000 ] && grep -q "grpc: refused client=127.0.0.1: TLS handshake: No common application protocol" "$tmp/log.$n"'
rc=0
curl -s --noproxy '*' --http2-prior-knowledge -o /dev/null "http://127.0.0.1:$grpc_port$EXPORT" 2>/dev/null || rc=$?
checkx "h2c (cleartext) to the TLS gRPC port is refused (curl exit $rc)" '[ "$rc" != 0 ]'
checkx "a silent connection to the HTTPS port is closed at the header deadline" "silent_closed $port"
checkx "... and to the TLS gRPC port" "silent_closed $grpc_port"
require_alive "after part (a)"

# --- (c) the scrape forwarder and file mode to https:// -------------------------------------
start_fake "ok:$tmp/one.pb.gz"
S=127.0.0.1:${fake_port[ok]}
"$PROFD" scrape --target "$S" --profiles heap --job tlsfwd --once --forward "$base" \
	--ca-file "$P/ca.pem" >"$tmp/fwd.out" 2>"$tmp/fwd.log"
rc=$?
got=$(total 'memory:samples:count::' '{job="tlsfwd"}' "${CA[@]}")
checkx "forwarder (--target --once) to https:// with --ca-file: exit 0, total 7 (rc $rc, got $got)" \
	'[ "$rc" = 0 ] && [ "$got" = 7 ]'
"$PROFD" scrape --target "$S" --profiles heap --job tlsnoca --once --forward "$base" \
	>"$tmp/fwd2.out" 2>"$tmp/fwd2.log"
got=$(total 'memory:samples:count::' '{job="tlsnoca"}' "${CA[@]}")
checkx "... without --ca-file nothing arrives and the log names the certificate (got $got)" \
	'[ "$got" = 0 ] && grep -qi "certificate" "$tmp/fwd2.log"'
mkdir -p "$tmp/watch"
cp "$tmp/one.pb.gz" "$tmp/watch/a.pb.gz"
touch -d '1 minute ago' "$tmp/watch/a.pb.gz" # settled: written a while ago
"$PROFD" scrape --watch "$tmp/watch/*.pb.gz" --job tlsfile --server "$base" --once \
	--data "$tmp/wdata" --ca-file "$P/ca.pem" >"$tmp/watch.out" 2>"$tmp/watch.log"
rc=$?
got=$(total "$T" '{job="tlsfile"}' "${CA[@]}")
checkx "file mode (--watch --once) to https:// with --ca-file: exit 0, total 7 (rc $rc, got $got)" \
	'[ "$rc" = 0 ] && [ "$got" = 7 ]'
rc=0
"$PROFD" scrape --watch "$tmp/watch/*.pb.gz" --server "$base" --once --ca-file "$tmp/nope.pem" \
	>"$tmp/nope.out" 2>&1 || rc=$?
checkx "a missing --ca-file stops the scraper at start (rc $rc)" \
	'[ "$rc" != 0 ] && grep -q "nope.pem" "$tmp/nope.out"'

# --- (d) the MCP client to https:// ----------------------------------------------------------
MCP_IN='{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"sh","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"list_profile_types","arguments":{"from":"now-30d"}}}'
mcp_types() { # mcp_types OUT [profd mcp args...]: answer of tools/call 2 -> "ok TEXT" / "error TEXT"
	local out=$1
	shift
	printf '%s\n' "$MCP_IN" | "$PROFD" mcp --server "$base" "$@" >"$out" 2>"$out.err"
	python3 - "$out" <<'PY'
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][-1]["result"]
print(("error " if r.get("isError") else "ok ") + r["content"][0]["text"].replace("\n", " ")[:300])
PY
}
m=$(mcp_types "$tmp/mcp.out" --ca-file "$P/ca.pem")
checkx "profd mcp --server https://... --ca-file lists the ingested type ($m)" \
	'[ "${m%% *}" = ok ] && [[ "$m" == *samples:samples:count* ]]'
m=$(mcp_types "$tmp/mcp2.out")
checkx "... without --ca-file the tool result is an error naming the certificate ($m)" \
	'[ "${m%% *}" = error ] && [[ "$m" == *ertificate* ]]'

# --- (b) the agent to https:// and grpcs:// --------------------------------------------------
agent_ok=1
if [ "$(id -u)" != 0 ] || [ ! -r /sys/kernel/btf/vmlinux ]; then
	echo "skip: agent parts (need root and kernel BTF)"
	agent_ok=0
elif ! ${CC:-cc} -O2 -g -fno-omit-frame-pointer -fno-inline -o "$tmp/spin" tests/workloads/spin.c; then
	fail "cannot build spin.c"
	agent_ok=0
fi
agent_pid=
at_exit() { [ -n "$agent_pid" ] && kill -9 "$agent_pid" 2>/dev/null; }
# agent_run LOG SECONDS ARGS...: start the agent, spin for SECONDS, stop it (SIGINT, exit 0)
agent_run() {
	local log=$1 secs=$2
	shift 2
	: >"$log"
	"$PROFD" agent --interval 300ms --include-exe spin "$@" >>"$log" 2>&1 &
	agent_pid=$!
	wait_for -p "$agent_pid" 60 'grep -qs "agent started" "$log"' || true
	if ! grep -qs "agent started" "$log"; then
		if grep -qiE "needs root|BTF|Operation not permitted" "$log"; then
			echo "skip: eBPF unavailable here: $(tail -n 1 "$log")"
			agent_ok=0
		else
			fail "agent did not start: $(tail -n 3 "$log")"
		fi
		kill -9 "$agent_pid" 2>/dev/null
		agent_pid=
		return 1
	fi
	SPIN_CPU_SECONDS=1 "$tmp/spin" "$secs" >/dev/null
	kill -INT "$agent_pid"
	local rc=0
	wait "$agent_pid" || rc=$?
	agent_pid=
	[ "$rc" = 0 ] || fail "agent exited $rc after SIGINT: $(tail -n 3 "$log")"
}
SPIN='{process.executable.name="spin"}'
ACPU='process_cpu:samples:count:cpu:nanoseconds'
agent_part() { # agent_part LABEL URL LOG [agent args...]: spin's samples arrive over URL
	local label=$1 url=$2 log=$3 before after
	shift 3
	[ "$agent_ok" = 1 ] || return 0
	before=$(total "$ACPU" "$SPIN" "$@" 2>/dev/null)
	[[ "$before" =~ ^[0-9]+$ ]] || before=0
	agent_run "$log" 1.5 --server "$url" --no-upload-debuginfo --ca-file "$P/ca.pem" \
		"${AGENT_EXTRA[@]}" || return 0
	after=$(total "$ACPU" "$SPIN" "$@")
	checkx "agent $label: spin's samples are queryable ($before -> $after), no failed export" \
		'[[ "$after" =~ ^[0-9]+$ ]] && [ "$after" -gt "$before" ] && ! grep -q "agent export failed" "$log"'
}
AGENT_EXTRA=()
agent_part "--server https:// --ca-file" "$base" "$tmp/agent.https.log" "${CA[@]}"
agent_part "--server grpcs:// --ca-file" "grpcs://127.0.0.1:$grpc_port" "$tmp/agent.grpcs.log" "${CA[@]}"
finish_a=$n
stop_server TERM
checkx "the TLS server stops cleanly (exit $stop_rc)" '[ "$stop_rc" = 0 ]'

# --- (e) client certificates ------------------------------------------------------------------
start_server "${TLS[@]}" --tls-client-ca "$P/ca.pem" --grpc-listen 127.0.0.1:0 --data "$tmp/data-e"
checkx "the start log says tls=on,client-certificates" 'grep -q "tls=on,client-certificates" "$tmp/log.$n"'
ingest_pprof "$tmp/one.pb.gz" tls-e "${CA[@]}"
checkx "no client certificate: 403 naming it" \
	'[ "$code" = 403 ] && body_has "no client certificate was sent"'
ingest_pprof "$tmp/one.pb.gz" tls-e "${CA[@]}" --cert "$P/other.pem" --key "$P/other.key"
checkx "a certificate of another CA: 403" '[ "$code" = 403 ] && body_has "not signed by"'
ingest_pprof "$tmp/one.pb.gz" tls-e "${CA[@]}" --cert "$P/srv.pem" --key "$P/srv.key"
checkx "the server's certificate (extended key usage serverAuth only): 403" \
	'[ "$code" = 403 ] && body_has "extended key usage"'
req GET /healthz "${CA[@]}"
checkx "/healthz answers a client without a certificate (probes)" '[ "$code" = 200 ]'
ingest_pprof "$tmp/one.pb.gz" tls-e "${CA[@]}" "${CERT[@]}"
checkx "the CA's client certificate: ingest 200" '[ "$code" = 200 ]'
got=$(total "$T" '{service_name="tls-e"}' "${CA[@]}" "${CERT[@]}")
checkx "... and the query sees it (total 7, got $got)" '[ "$got" = 7 ]'
got=$(total "$T" '{service_name="tls-e"}' "${CA[@]}")
checkx "a query without a certificate is refused too ($got)" '[ "$got" = "error 403" ]'
g=$(grpc_call "$grpc_port" "${CA[@]}")
checkx "gRPC without a client certificate: the handshake fails (got $g)" \
	'[ "${g%% *}" = 000 ] && grep -q "grpc: refused client=127.0.0.1: TLS handshake: no client certificate" "$tmp/log.$n"'
g=$(grpc_call "$grpc_port" "${CA[@]}" --cert "$P/other.pem" --key "$P/other.key")
checkx "gRPC with another CA's certificate: refused (got $g)" \
	'[ "${g%% *}" = 000 ] && grep -q "grpc: refused client=127.0.0.1: TLS: the client certificate is not signed" "$tmp/log.$n"'
g=$(grpc_call "$grpc_port" "${CA[@]}" "${CERT[@]}")
checkx "gRPC with the CA's client certificate: answered (got $g)" '[ "$g" = "200 3" ]'
refused=$(curl -s --noproxy '*' "${CA[@]}" "$base/metrics" "${CERT[@]}" |
	awk '$1 ~ /^profd_tls_client_refused_total/ { s += $2 } END { print s + 0 }')
checkx "profd_tls_client_refused_total counts the refusals (>= 5, got $refused)" '[ "$refused" -ge 5 ]'
"$PROFD" scrape --target "$S" --profiles heap --job tlsmtls --once --forward "$base" \
	--ca-file "$P/ca.pem" --cert-file "$P/cli.pem" --key-file "$P/cli.key" \
	>"$tmp/fwd3.out" 2>"$tmp/fwd3.log"
got=$(total 'memory:samples:count::' '{job="tlsmtls"}' "${CA[@]}" "${CERT[@]}")
checkx "the forwarder with --cert-file/--key-file gets through (total 7, got $got)" '[ "$got" = 7 ]'
m=$(mcp_types "$tmp/mcp3.out" --ca-file "$P/ca.pem" --cert-file "$P/cli.pem" --key-file "$P/cli.key")
checkx "profd mcp with --cert-file/--key-file answers ($m)" \
	'[ "${m%% *}" = ok ] && [[ "$m" == *samples:samples:count* ]]'
m=$(mcp_types "$tmp/mcp4.out" --ca-file "$P/ca.pem")
checkx "profd mcp without a certificate gets the 403's reason ($m)" \
	'[ "${m%% *}" = error ] && [[ "$m" == *"client certificate"* ]]'
AGENT_EXTRA=(--cert-file "$P/cli.pem" --key-file "$P/cli.key")
agent_part "--server https:// --cert-file --key-file" "$base" "$tmp/agent.mtls.log" "${CA[@]}" "${CERT[@]}"
agent_part "--server grpcs:// --cert-file --key-file" "grpcs://127.0.0.1:$grpc_port" \
	"$tmp/agent.mtlsg.log" "${CA[@]}" "${CERT[@]}"
if [ "$agent_ok" = 1 ]; then
	rc=0
	"$PROFD" agent --server "$base" --key-file "$P/cli.key" >"$tmp/keyonly.out" 2>&1 || rc=$?
	checkx "agent --key-file without --cert-file is a usage error (rc $rc)" \
		'[ "$rc" = 2 ] && grep -q -- "--key-file needs --cert-file" "$tmp/keyonly.out"'
fi
stop_server TERM

# --- (f) exposure warning, bad files ---------------------------------------------------------
printf 'datasets:\n  - name: default\n' >"$tmp/open.yaml"
start_server --config "$tmp/open.yaml" --listen 0.0.0.0:0 --data "$tmp/data-f"
checkx "--listen 0.0.0.0 without TLS logs a warning naming the flags" \
	'grep -q "warn server: --listen 0.0.0.0:0 is not a loopback address and TLS is off: .*--tls-cert" "$tmp/log.$n"'
stop_server TERM
start_server --config "$tmp/open.yaml" --listen 0.0.0.0:0 --data "$tmp/data-f" "${TLS[@]}"
checkx "... with TLS it does not" '! grep -q "TLS is off" "$tmp/log.$n"'
stop_server TERM
bad_start() { # bad_start WANT_RC ARGS...: the server exits WANT_RC at once; output in $tmp/bad.out
	local want=$1 rc=0
	shift
	timeout 20 "$PROFD" server --listen 127.0.0.1:0 --data "$tmp/data-bad" "$@" >"$tmp/bad.out" 2>&1 || rc=$?
	[ "$rc" = "$want" ]
}
checkx "--tls-cert without --tls-key: usage error" \
	'bad_start 2 --tls-cert "$P/srv.pem" && grep -q "needs --tls-key" "$tmp/bad.out"'
checkx "a key that is not the certificate's: exit 1 naming both files" \
	'bad_start 1 --tls-cert "$P/srv.pem" --tls-key "$P/cli.key" && grep -q "srv.pem.*cli.key" "$tmp/bad.out"'
printf 'not a certificate\n' >"$tmp/junk.pem"
checkx "a --tls-client-ca without a certificate: exit 1" \
	'bad_start 1 "${TLS[@]}" --tls-client-ca "$tmp/junk.pem" && grep -q -- "--tls-client-ca" "$tmp/bad.out"'
checkx "a missing --tls-cert: exit 1 with the errno text" \
	'bad_start 1 --tls-cert "$tmp/none.pem" --tls-key "$P/srv.key" && grep -q "No such file" "$tmp/bad.out"'

if grep -l "ERROR: AddressSanitizer\|runtime error:\|LeakSanitizer" "$tmp"/agent.*.log "$tmp"/*.err \
	"$tmp"/fwd*.log >/dev/null 2>&1; then
	fail "sanitizer report from a client (agent, scrape, mcp)"
fi
finish
