#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_ingest_pyroscope.sh - the Pyroscope-compatible ingest
# (server/pyroscope.c, docs/formats.md "Pyroscope ingest") with curl:
#   - folded ("groups", the default) and lines: the app name's suffix
#     picks the type, sampleRate scales cpu to nanoseconds, labels of
#     name={...} are queryable, service_name is the app name without the
#     suffix, pyroscope_spy the spyName;
#   - pprof raw (gzip) and multipart (profile + sample_type_config), from
#     the corpus' Go heap profile: totals of all four sample types match
#     the corpus facts; the profile name is "memory";
#   - JFR raw (gzip) and multipart (field jfr): the CPU samples of
#     async-profiler's dump1 recording (2188, per `jfr print`) with
#     jfr_event=cpu;
#   - POST /api/v1/ingest/pprof with labels as query parameters;
#   - bad input: unknown format, legacy trie, missing/bad name, bad from,
#     prev_profile, multipart without the field, corrupt pprof, a non-JFR
#     body with format=jfr, an unknown type suffix -> 4xx naming what is
#     wrong; the server keeps serving and nothing half-stored.
# Needs the shared corpus ($PROFD_CORPUS) for the pprof and JFR parts
# (skipped without it).
source "$(dirname "$0")/ingest_lib.sh"
CORPUS=${PROFD_CORPUS:-../shared/corpus}
start_server

ingest() { # ingest QUERY [curl args...]: POST /ingest?QUERY
	local q=$1
	shift
	req POST "/ingest?$q" "$@"
}

# --- folded and lines ------------------------------------------------------------------------
printf 'main;work;hot 30\nmain;work;cold 10\nmain;idle 5\n# not a sample line\n' >"$tmp/f.txt"
ingest 'name=shop.cpu%7Benv%3Dprod%2Cregion%3Deu%7D&sampleRate=100&spyName=rbspy&from=now-10s&until=now' \
	--data-binary "@$tmp/f.txt"
check "folded -> 200" [ "$code" = 200 ]
check "folded cpu scaled by 1e9/100: 45 samples = 450000000 ns" \
	[ "$(total "$CPU" '{service_name="shop",env="prod",region="eu",pyroscope_spy="rbspy"}')" = 450000000 ]
checkx "folded stack main;work;hot is there" 'has_frame hot'
# One service key: the push's service_name is stored as service.name (the agent's and OTLP's),
# and a selector or label lookup on either key finds it.
check "the app name is stored under service.name: {service.name=\"shop\"} selects it" \
	[ "$(total "$CPU" '{service.name="shop",env="prod"}')" = 450000000 ]
lv() { curl -s --noproxy '*' -G --data-urlencode from=now-1h "$@"; }
v=$(lv "$base/api/v1/labels")
checkx "labels list service.name, not service_name: $v" \
	'[[ $v == *'"'"'"service.name"'"'"'* && $v != *service_name* ]]'
v=$(lv "$base/api/v1/labels/service.name/values")
check "label_values service.name lists the pushed app: $v" [ "$v" = '["shop"]' ]
v=$(lv "$base/api/v1/labels/service_name/values")
check "label_values service_name is the same list: $v" [ "$v" = '["shop"]' ]
printf 'main;a;b\nmain;a;b\nmain;c\n' >"$tmp/l.txt"
ingest 'name=lines.alloc_objects%7B%7D&format=lines' --data-binary "@$tmp/l.txt"
check "lines -> 200" [ "$code" = 200 ]
check "lines: identical lines counted (3 objects) as memory:alloc_objects" \
	[ "$(total 'memory:alloc_objects:count::' '{service_name="lines"}')" = 3 ]
ingest 'name=walls.wall&format=folded&sampleRate=50' --data-binary 'main;sleep 4'
check "wall suffix -> wall:wall:nanoseconds:cpu:nanoseconds, 4 x 20 ms" \
	[ "$(total 'wall:wall:nanoseconds:cpu:nanoseconds' '{service_name="walls"}')" = 80000000 ]

# --- pprof: raw and multipart ---------------------------------------------------------------
HEAP="$CORPUS/pprof/gen--heap.pprof"
if [ -f "$HEAP" ] && [ -f "$CORPUS/facts/gen-go-heap.json" ]; then
	read -r t_ao t_as t_io t_is < <(python3 -c 'import json,sys; print(*json.load(open(sys.argv[1]))["facts"]["pprof_format"]["totals"])' "$CORPUS/facts/gen-go-heap.json")
	ingest 'name=goapp%7Bpod%3Dp1%7D&format=pprof&spyName=gospy&from=1700000000&until=1700000010' \
		-H 'Content-Type: application/octet-stream' --data-binary "@$HEAP"
	check "pprof raw (gzip) -> 200" [ "$code" = 200 ]
	check "pprof raw: inuse_space total = corpus fact $t_is" \
		[ "$(total 'memory:inuse_space:bytes:space:bytes' '{service_name="goapp",pod="p1",pyroscope_spy="gospy"}')" = "$t_is" ]
	check "pprof raw: alloc_objects total = corpus fact $t_ao" \
		[ "$(total 'memory:alloc_objects:count:space:bytes' '{service_name="goapp"}')" = "$t_ao" ]
	# from/until are the profile's time (Pyroscope's), not the pprof's own time_nanos.
	curl -s --noproxy '*' -G -o "$tmp/win.json" --data-urlencode 'type=memory:inuse_space:bytes:space:bytes' \
		--data-urlencode 'query={service_name="goapp"}' --data-urlencode from=1700000000000 \
		--data-urlencode to=1700000010000 "$base/api/v1/flamegraph"
	check "pprof raw: stored at from (1700000000 s), the pprof's own time replaced" \
		[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["total"])' "$tmp/win.json")" = "$t_is" ]
	echo '{"alloc_space":{"units":"bytes","aggregation":"sum","cumulative":false}}' >"$tmp/stc.json"
	ingest 'name=gomulti%7Bpod%3Dp2%7D&spyName=gospy&from=1700000000000000000&until=1700000010000000000' \
		-F "profile=@$HEAP;filename=profile.pprof" -F "sample_type_config=@$tmp/stc.json"
	check "pprof multipart (profile + sample_type_config, no format) -> 200" [ "$code" = 200 ]
	check "pprof multipart: alloc_space total = corpus fact $t_as" \
		[ "$(total 'memory:alloc_space:bytes:space:bytes' '{service_name="gomulti",pod="p2"}')" = "$t_as" ]
	check "pprof multipart: inuse_objects total = corpus fact $t_io" \
		[ "$(total 'memory:inuse_objects:count:space:bytes' '{service_name="gomulti"}')" = "$t_io" ]
	# The plain pprof route, labels as query parameters.
	req POST '/api/v1/ingest/pprof?service_name=plain&team=core' --data-binary "@$HEAP"
	check "/api/v1/ingest/pprof -> 200" [ "$code" = 200 ]
	check "/api/v1/ingest/pprof: labels from the query" \
		[ "$(total 'memory:inuse_space:bytes:space:bytes' '{service_name="plain",team="core"}')" = "$t_is" ]
	# A client that sent its own service_name: the app name goes to app_name.
	ingest 'name=appx%7Bservice_name%3Dsvc%7D&format=pprof' --data-binary "@$HEAP"
	check "own service_name kept, app name in app_name" \
		[ "$(total 'memory:inuse_space:bytes:space:bytes' '{service_name="svc",app_name="appx"}')" = "$t_is" ]
	# Bad pprof input.
	head -c 300 "$HEAP" >"$tmp/cut.pprof"
	ingest 'name=bad&format=pprof' --data-binary "@$tmp/cut.pprof"
	checkx "truncated gzip pprof -> 400 naming gzip" '[ "$code" = 400 ] && body_has "gzip"'
	printf '\x0a\xff\xff\xff\xff\x0f' >"$tmp/junk.pprof"
	ingest 'name=bad&format=pprof' --data-binary "@$tmp/junk.pprof"
	checkx "malformed pprof protobuf -> 400 naming pprof" '[ "$code" = 400 ] && body_has "pprof"'
	ingest 'name=bad' -F "profile=@$HEAP" -F "prev_profile=@$HEAP"
	checkx "prev_profile -> 400 saying it is not supported" '[ "$code" = 400 ] && body_has "prev_profile"'
	ingest 'name=bad' -F "other=@$HEAP"
	checkx "multipart without profile -> 400 naming the field" '[ "$code" = 400 ] && body_has "profile"'
	ingest 'name=bad' -F "profile=@$HEAP" -F "sample_type_config=not json"
	checkx "bad sample_type_config -> 400" '[ "$code" = 400 ] && body_has "sample_type_config"'
	ingest 'name=bad&from=1700000010&until=1700000000' --data-binary "@$HEAP"
	checkx "until before from -> 400 naming both" '[ "$code" = 400 ] && body_has "until" && body_has "from"'
	# Old clients push the legacy (pre-protobuf) Go CPU format: samples/count
	# total 305 (MANIFEST gpprof-gobench-cpu, pproffacts).
	LEG="$CORPUS/pprof-legacy/gpprof--gobench.cpu"
	if [ -f "$LEG" ]; then
		ingest 'name=legacy&format=pprof&from=1700000000&until=1700000010' --data-binary "@$LEG"
		check "legacy binary Go CPU profile -> 200" [ "$code" = 200 ]
		check "legacy CPU profile: samples total = corpus fact 305" \
			[ "$(total 'process_cpu:samples:count:cpu:nanoseconds' '{service_name="legacy"}')" = 305 ]
	fi
else
	echo "skip: pprof part (no corpus at $CORPUS)"
fi

# --- JFR ---------------------------------------------------------------------------------------
JFR="$CORPUS/jfr/pyroscope--dump1.jfr.gz"
if [ -f "$JFR" ]; then
	JT='process_cpu:samples:count:cpu:nanoseconds'
	ingest 'name=javaapp%7Benv%3Dqa%7D&format=jfr&spyName=javaspy&sampleRate=100' --data-binary "@$JFR"
	check "JFR raw (gzip) -> 200" [ "$code" = 200 ]
	check "JFR: 2188 CPU samples (jdk.ExecutionSample, jfr print)" \
		[ "$(total "$JT" '{service_name="javaapp",env="qa",jfr_event="cpu",pyroscope_spy="javaspy"}')" = 2188 ]
	checkx "JFR: App.fib is in the flame graph" 'has_frame App.fib'
	ingest 'name=javamp&format=jfr' -F "jfr=@$JFR" -F 'labels=@/dev/null'
	check "JFR multipart (jfr + labels) -> 200" [ "$code" = 200 ]
	check "JFR multipart: 2188 CPU samples" [ "$(total "$JT" '{service_name="javamp"}')" = 2188 ]
	ingest 'name=javamp&format=jfr' -F "other=@$JFR"
	checkx "JFR multipart without jfr -> 400" '[ "$code" = 400 ] && body_has "jfr"'
else
	echo "skip: JFR part (no corpus at $CORPUS)"
fi
ingest 'name=x&format=jfr' --data-binary 'not a recording'
checkx "format=jfr with a non-JFR body -> 400" '[ "$code" = 400 ] && body_has "not a JFR recording"'

# --- bad parameters -------------------------------------------------------------------------------
ingest 'name=x&format=protobufish' --data-binary 'a 1'
checkx "unknown format -> 400 naming it" '[ "$code" = 400 ] && body_has "unknown format .protobufish."'
ingest 'name=x&format=trie' --data-binary 'a 1'
checkx "legacy trie format -> 415 saying so" '[ "$code" = 415 ] && body_has "not supported"'
ingest 'format=folded' --data-binary 'a 1'
checkx "missing name -> 400" '[ "$code" = 400 ] && body_has "parameter .name. is required"'
ingest 'name=x%7Bnoequals%7D' --data-binary 'a 1'
checkx "label without = -> 400" '[ "$code" = 400 ] && body_has "has no"'
ingest 'name=x%7B9bad%3Dv%7D' --data-binary 'a 1'
checkx "invalid label name -> 400" '[ "$code" = 400 ] && body_has "not valid"'
ingest 'name=x&from=yesterday' --data-binary 'a 1'
checkx "bad from -> 400 naming the parameter" '[ "$code" = 400 ] && body_has "parameter .from."'
ingest 'name=x.bogus_type' --data-binary 'a 1'
checkx "unknown type suffix -> 400" '[ "$code" = 400 ] && body_has "unknown profile type .bogus_type."'
ingest 'name=x' -H 'Content-Type: multipart/form-data' --data-binary 'x'
checkx "multipart without boundary -> 400" '[ "$code" = 400 ] && body_has "boundary"'
req GET '/ingest?name=x'
check "GET /ingest -> 405" [ "$code" = 405 ]

require_alive "after bad Pyroscope input"
check "nothing of the bad requests was stored" [ "$(total "$CPU" '{service_name="x"}')" = 0 ]
req GET /healthz
check "server still serving" [ "$code" = 200 ]
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
