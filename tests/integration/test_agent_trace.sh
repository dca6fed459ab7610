#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_trace.sh - trace and span IDs on the agent's samples, for
# real (docs/runtimes.md "Trace context"):
#   - Go: tests/workloads/gotrace, a net/http server whose handlers run
#     under pprof.Do with trace_id/span_id/span_name labels, built with
#     the newer Go on PATH (with DWARF: offsets from DWARF) and with
#     Debian's Go 1.19 (-ldflags=-w, no DWARF: offsets from the version
#     table); its own client sends requests that alternate /alpha
#     (main.spinAlpha) and /beta (main.spinBeta), each with its own trace,
#     and reports the CPU time each handler measured on its thread; one
#     request carries 24 more labels, named before span_id and trace_id,
#     so that the link is past the first labels BPF reads in order.
#   - Any language: tests/workloads/ctxthreads.c, two threads switching
#     spans published with the OpenTelemetry thread-context record
#     (tests/workloads/otelctx.c), spin_red / spin_blue, three times: the
#     publisher linked into the executable (static TLS), and built as a
#     shared library libotelctx.so in each x86-64 TLS dialect, TLSDESC
#     (-mtls-dialect=gnu2, ctxthreads-desc) and general dynamic (the
#     default, __tls_get_addr: ctxthreads-gd), which the agent finds
#     through the library's GOT slot for otel_thread_ctx_v1. Then each
#     library dlopen'd (tests/workloads/ctxdlopen.c): the span of the
#     thread that uses it is read as above; a thread that never touched
#     the library gets no context (the agent's ctx_events / ctx_none
#     counters: no more events than the span's samples).
# For every request / span: the flame graph filtered by its trace ID (and
# span ID) holds its own hot function (>= 95 % of it) and never the
# other's, and its sample count matches
# the CPU time its handler measured (count = cpu_ns * frequency / 1e9,
# +-10 %). The last request / span of each blocks ~300 ms in read(2) on a
# pipe: its off-CPU samples carry its span (>= 250 ms of off-CPU time in
# the blocking function). Trace and span IDs never become labels.
# GET /api/v1/traces/{id}/profile equals the filtered flame graph; in
# chromium (tests/js/explorer_trace.test.mjs, when it is installed) the
# explorer's Trace / span fields and "Its window" show the same samples.
# Needs root, kernel BTF, and both Go toolchains (skip otherwise).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init agent-trace
FREQ=299
SPAN_MS=${TRACE_SPAN_MS:-1000}
GO_NEW=${GO_NEW:-$(command -v go || true)}
GO_OLD=${GO_OLD:-/usr/bin/go}
[ -n "$GO_NEW" ] && [ -x "$GO_OLD" ] || {
	echo "skip: needs go on PATH and Debian's Go at $GO_OLD"
	exit 0
}
export GOFLAGS=-mod=mod GOTOOLCHAIN=local
(cd tests/workloads/gotrace && "$GO_NEW" build -o "$tmp/gotrace-new" .) || die "cannot build gotrace ($GO_NEW)"
(cd tests/workloads/gotrace && "$GO_OLD" build -ldflags=-w -o "$tmp/gotrace-old" .) ||
	die "cannot build gotrace ($GO_OLD)"
${CC:-cc} -O2 -g -pthread -o "$tmp/ctxthreads" tests/workloads/ctxthreads.c tests/workloads/otelctx.c ||
	die "cannot build ctxthreads"
for d in desc gd; do
	mkdir -p "$tmp/lib-$d"
	flags=()
	[ "$d" = desc ] && flags=(-mtls-dialect=gnu2)
	${CC:-cc} -O2 -g -fPIC -shared "${flags[@]}" -o "$tmp/lib-$d/libotelctx.so" tests/workloads/otelctx.c &&
		${CC:-cc} -O2 -g -pthread -o "$tmp/ctxthreads-$d" tests/workloads/ctxthreads.c \
			-L"$tmp/lib-$d" -lotelctx -Wl,-rpath,"$tmp/lib-$d" || die "cannot build ctxthreads-$d"
done
${CC:-cc} -O2 -g -pthread -o "$tmp/ctxdlopen" tests/workloads/ctxdlopen.c -ldl || die "cannot build ctxdlopen"
readelf -rW "$tmp/lib-desc/libotelctx.so" | grep -q 'R_X86_64_TLSDESC.*otel_thread_ctx_v1' ||
	die "libotelctx.so (gnu2) has no TLSDESC relocation for otel_thread_ctx_v1"
readelf -rW "$tmp/lib-gd/libotelctx.so" | grep -q 'R_X86_64_DTPMOD64.*otel_thread_ctx_v1' ||
	die "libotelctx.so (default dialect) has no DTPMOD64 relocation for otel_thread_ctx_v1"
echo "ok built gotrace with $("$GO_NEW" env GOVERSION) and $("$GO_OLD" env GOVERSION), and ctxthreads"

agent_start_server
mport=$(free_port)
agent_start --server "$base" --interval 1s --frequency "$FREQ" --off-cpu --off-cpu-threshold 50ms \
	--metrics-listen "127.0.0.1:$mport" --include-exe ctxdlopen \
	--include-exe gotrace-new --include-exe gotrace-old --include-exe ctxthreads \
	--include-exe ctxthreads-desc --include-exe ctxthreads-gd

# Flame graph of type $1 for pid $2 with trace $3 (and span $4) -> "total name1 name2 name3".
span_flame() {
	curl -fsG "$base/api/v1/flamegraph" --data-urlencode "type=$1" \
		--data-urlencode "query={process.pid=\"$2\"}" --data-urlencode from=now-10m \
		--data-urlencode to=now --data-urlencode "trace_id=$3" --data-urlencode "span_id=$4" \
		--data-urlencode max_nodes=20000 -o "$tmp/span.json" || die "flame graph query failed"
	python3 tests/integration/agent_check.py "$tmp/span.json" "$5" "$6" "$7" |
		python3 -c 'import json,sys; d=json.load(sys.stdin); n=d["names"]; print(d["total"], *n.values())'
}

# Checks every line "<path> <trace> <span> <cpu ns> <fn>" of $1 for pid $2.
check_spans() {
	local out=$1 pid=$2 path trace span ns fn total a b c
	local fns=("${@:3}") # the two hot functions, then the blocking one
	local io_ok=0 io_seen=0
	while read -r path trace span ns fn; do
		if [ "$fn" = "${fns[2]}" ]; then
			# Two blocking requests: at least one must show its span off CPU
			# (a thread parked elsewhere by the Go scheduler now and then
			# sleeps without the goroutine's labels).
			io_seen=$((io_seen + 1))
			read -r total a b c < <(span_flame 'off_cpu:off_cpu:nanoseconds::' "$pid" "$trace" "$span" "${fns[@]}")
			if [ "$c" -ge 250000000 ]; then
				io_ok=1
				echo "ok $path: its off-CPU samples carry its span ($((c / 1000000)) ms in ${fns[2]})"
			else
				echo "# $path span $span: ${c} ns off CPU in ${fns[2]}"
			fi
			continue
		fi
		read -r total a b c < <(span_flame 'process_cpu:samples:count:cpu:nanoseconds' "$pid" "$trace" "$span" "${fns[@]}")
		local want other
		[ "$fn" = "${fns[0]}" ] && want=$a other=$b || want=$b other=$a
		# The span also covers the handler's few instructions around its hot loop.
		[ "$total" -gt 0 ] && [ "$((want * 100))" -ge "$((total * 95))" ] && [ "$other" = 0 ] ||
			die "$path trace $trace: $total samples, $want in $fn, $other in the other endpoint's function"
		python3 - "$total" "$ns" "$FREQ" "$path" <<-'EOF' || die "$path span $span: samples and CPU time disagree"
			import sys
			n, ns, hz, path = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
			want = ns * hz / 1e9
			ok = abs(n - want) <= 0.10 * want
			print("%s %s: %d samples for %.0f ms of CPU (expected %.1f, %+.1f %%)" % (
			    "ok" if ok else "FAIL", path, n, ns / 1e6, want, 100 * (n - want) / want))
			sys.exit(0 if ok else 1)
		EOF
	done <"$out"
	if [ "$io_seen" -gt 0 ] && [ "$io_ok" = 0 ]; then
		die "no blocking request of $out had its span on its off-CPU samples (want >= 250 ms in ${fns[2]})"
	fi
}

ports=()
for v in new old; do
	port=$(free_port)
	"$tmp/gotrace-$v" server "127.0.0.1:$port" >"$tmp/gotrace-$v.log" 2>&1 &
	eval "pid_$v=$!"
	extra_pids="$extra_pids $!"
	wait_for 10 'curl -fs "http://127.0.0.1:$port/alpha?ms=1" >/dev/null 2>&1' ||
		die "gotrace-$v server does not answer: $(tail -3 "$tmp/gotrace-$v.log")"
	ports+=("$port")
	# A first request the agent sees the process by (it registers it at its first sample).
	"$tmp/gotrace-$v" client "http://127.0.0.1:$port" 1 300 >/dev/null || die "gotrace-$v client failed"
done
sleep 1.5
# One span spins at a time (no two workloads at once): on a shared 2-CPU
# host two spinning spans slice each other's time and widen the spread.
i=0
for v in new old; do
	"$tmp/gotrace-$v" client "http://127.0.0.1:${ports[$i]}" 4 "$SPAN_MS" |
		awk '{ fn = $1 ~ /^\/alpha/ ? "main.spinAlpha" : $1 ~ /^\/beta/ ? "main.spinBeta" : "main.blockOnPipe"; print $0, fn }' \
			>"$tmp/go-$v.out" || die "gotrace-$v client failed"
	i=$((i + 1))
done
declare -A cpids
for c in ctxthreads ctxthreads-desc ctxthreads-gd; do
	"$tmp/$c" 4 "$SPAN_MS" 1500 >"$tmp/$c.out" &
	cpids[$c]=$!
	wait "${cpids[$c]}" || die "$c failed"
	awk '{ print "thread" $2 "/" $3, $4, $5, $6, $3 }' "$tmp/$c.out" >"$tmp/$c.spans"
done
# BPF's trace-context counters (the metrics page is rendered once a second).
ctx_counters() {
	sleep 2.5
	curl -fs "http://127.0.0.1:$mport/metrics" |
		awk -F'[ ]' '/event="ctx_events"/ { e = $2 } /event="ctx_none"/ { n = $2 } END { print e + 0, n + 0 }'
}
declare -A dlpids dlctr
for d in desc gd; do
	read -r e0 n0 < <(ctx_counters)
	"$tmp/ctxdlopen" "$tmp/lib-$d/libotelctx.so" "$SPAN_MS" >"$tmp/dlopen-$d.out" &
	dlpids[$d]=$!
	wait "${dlpids[$d]}" || die "ctxdlopen $d failed"
	read -r e1 n1 < <(ctx_counters)
	dlctr[$d]="$((e1 - e0)) $((n1 - n0))"
	awk '$1 == "span" { print "dlopen-'"$d"'/" $3, $4, $5, $6, $3 }' "$tmp/dlopen-$d.out" >"$tmp/dlopen-$d.spans"
done
sleep 2.5
agent_stop

grep -q "trace context pid=$pid_new exe=gotrace-new go=go1.* offsets=dwarf" "$tmp/agent.log" ||
	die "gotrace-new not registered with DWARF offsets"
grep -q "trace context pid=$pid_old exe=gotrace-old go=go1.19.* offsets=table" "$tmp/agent.log" ||
	die "gotrace-old not registered with table offsets"
grep -q "trace context pid=${cpids[ctxthreads]} exe=ctxthreads go=- offsets=- otel=yes tls=-" "$tmp/agent.log" ||
	die "ctxthreads not registered for its thread context"
# Both libraries are loaded at start, so in static TLS: the TLSDESC slot
# holds the offset from the thread pointer; GD gives a module ID (DTV walk).
grep -q "trace context pid=${cpids[ctxthreads-desc]} exe=ctxthreads-desc .* otel=yes lib=$tmp/lib-desc/libotelctx.so tls=tlsdesc (tp)" "$tmp/agent.log" ||
	die "ctxthreads-desc not registered through its library's TLSDESC slot"
grep -q "trace context pid=${cpids[ctxthreads-gd]} exe=ctxthreads-gd .* otel=yes lib=$tmp/lib-gd/libotelctx.so tls=general-dynamic (dtv)" "$tmp/agent.log" ||
	die "ctxthreads-gd not registered through its library's DTPMOD64 slot"
echo "ok registered: Go offsets from DWARF and from the table, the OTel thread context (executable, TLSDESC, GD)"
# dlopen'd: glibc puts a TLSDESC library in static TLS when its surplus
# has room; a GD one is reached through the DTV.
for d in desc gd; do
	want="tls=tlsdesc (tp)"
	[ "$d" = gd ] && want="tls=general-dynamic (dtv)"
	grep -q "trace context pid=${dlpids[$d]} exe=ctxdlopen .* otel=yes lib=$tmp/lib-$d/libotelctx.so $want" "$tmp/agent.log" ||
		die "ctxdlopen ($d) not registered through its dlopen'd library ($want)"
done

echo "-- Go $("$GO_NEW" env GOVERSION) (pprof labels, map-free slice layout)"
check_spans "$tmp/go-new.out" "$pid_new" main.spinAlpha main.spinBeta main.blockOnPipe
echo "-- Go 1.19 (pprof labels, map layout)"
check_spans "$tmp/go-old.out" "$pid_old" main.spinAlpha main.spinBeta main.blockOnPipe
for c in ctxthreads ctxthreads-desc ctxthreads-gd; do
	echo "-- C threads with the OpenTelemetry thread context ($c)"
	check_spans "$tmp/$c.spans" "${cpids[$c]}" spin_red spin_blue block_on_pipe
done
for d in desc gd; do
	echo "-- the publisher dlopen'd ($d)"
	check_spans "$tmp/dlopen-$d.spans" "${dlpids[$d]}" spin_red spin_blue block_on_pipe
	read -r _ _ _ _ _ ns_red < <(grep '^span' "$tmp/dlopen-$d.out")
	read -r _ _ _ ns_blue < <(grep '^nospan' "$tmp/dlopen-$d.out")
	read -r events none <<<"${dlctr[$d]}"
	python3 - "$events" "$none" "$ns_red" "$ns_blue" "$FREQ" "$d" <<-'EOF' || die "dlopen $d: contexts on the untouched thread"
		import sys
		ev, none, red, blue, hz, d = [int(x) for x in sys.argv[1:6]] + [sys.argv[6]]
		span, other = red * hz / 1e9, blue * hz / 1e9
		# Every context sent is the span's (none for the thread that never used the library).
		ok = ev <= 1.10 * span and none >= 0.90 * other
		print("%s dlopen %s: %d contexts sent for %.0f span samples, %d samples without one for %.0f of the untouched thread" % (
		    "ok" if ok else "FAIL", d, ev, span, none, other))
		sys.exit(0 if ok else 1)
	EOF
done

# GET /api/v1/traces/{trace_id}/profile: the flame graph of one request.
read -r path trace span ns fn <"$tmp/go-new.out"
curl -fsG "$base/api/v1/traces/$trace/profile" --data-urlencode 'type=process_cpu:samples:count:cpu:nanoseconds' \
	-o "$tmp/trace.json" || die "GET /api/v1/traces/$trace/profile failed"
read -r total a b c < <(python3 tests/integration/agent_check.py "$tmp/trace.json" main.spinAlpha main.spinBeta x |
	python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["total"], *d["names"].values())')
read -r want _ < <(span_flame 'process_cpu:samples:count:cpu:nanoseconds' "$pid_new" "$trace" "$span" main.spinAlpha main.spinBeta x)
[ "$total" = "$want" ] && [ "$b" = 0 ] && [ "$a" -gt 0 ] ||
	die "/api/v1/traces/$trace/profile: $total samples ($a in spinAlpha, $b in spinBeta), the filtered flame graph $want"
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/api/v1/traces/nothex/profile?type=process_cpu:samples:count:cpu:nanoseconds")
[ "$code" = 400 ] || die "a bad trace ID in the path answered $code"
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/api/v1/traces/$trace/profile?type=process_cpu:samples:count:cpu:nanoseconds&trace_id=$trace")
[ "$code" = 400 ] || die "trace_id both in the path and as a parameter answered $code"
echo "ok GET /api/v1/traces/{trace_id}/profile: $total samples, all of the request's (400 for a bad ID)"

# The explorer's Trace / span fields, in the browser (when chromium and playwright are here).
if [ -x "${CHROMIUM:-/usr/bin/chromium}" ] && [ -d tests/js/node_modules/playwright-core ]; then
	PROFD_URL="$base/" TRACE_TYPE=process_cpu:samples:count:cpu:nanoseconds \
		TRACE_QUERY="{process.pid=\"$pid_new\"}" TRACE_ID=$trace SPAN_ID=$span \
		TRACE_HOT=main.spinAlpha TRACE_OTHER=main.spinBeta \
		node tests/js/explorer_trace.test.mjs || die "explorer trace fields"
else
	echo "note: no chromium or playwright-core: the explorer's trace fields not checked in a browser"
fi

labels=$(curl -fsG "$base/api/v1/labels" --data-urlencode "type=process_cpu:samples:count:cpu:nanoseconds")
case "$labels" in
*'"span_id"'* | *'"trace_id"'*) die "trace or span IDs became labels: $labels" ;;
esac
for k in span_name http.route; do
	case "$labels" in
	*"\"$k\""*) ;;
	*) die "no $k attribute among the labels: $labels" ;;
	esac
done
echo "ok span_name and other goroutine labels are attributes; trace/span IDs are links only"
echo "PASS test_agent_trace"
