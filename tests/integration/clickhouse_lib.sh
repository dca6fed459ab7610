#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clickhouse_lib.sh - a ClickHouse server for a test (sourced after
# server_lib.sh or lib.sh): Debian's clickhouse-server (18.16) started as
# a plain process, not the system service, on free loopback ports with
# its own config, users file and data under $tmp/ch.N/; killed at exit.
#   ch_available         0 when clickhouse-server is installed
#   ch_start [HTTP TCP INTERSERVER EXTRA_XML]
#                        start one (sets ch_pid, ch_http_port, ch_dir) on
#                        those ports (default: free ones) with EXTRA_XML
#                        inside <yandex> (cluster, macros, zookeeper);
#                        fails the test (die) when it does not answer
#   ch_run DIR HTTP      start the server of DIR again (after a kill)
#   ch_query SQL [HTTP]  run SQL over HTTP (default port: ch_http_port)
#   ch_kill SIGNAL [PID] stop it (ch_pid emptied)
#   zk_available / zk_start   a ZooKeeper (Debian's zookeeper package) on a
#                        free loopback port, standalone (sets zk_port, zk_pid)
# ClickHouse facts: `clickhouse-server --config-file=FILE` reads the file
# (the <yandex> root of 18.16; newer releases also accept it); <path>,
# <tmp_path>, <user_files_path> and <format_schema_path> must be
# absolute and end in '/'; the users file is relative to the config's
# folder.

CH_SERVER=${CH_SERVER:-clickhouse-server}
ch_n=0
ch_pid=
ch_pids=()

ch_available() {
	command -v "$CH_SERVER" >/dev/null 2>&1
}

ch_lib_exit() {
	local p
	for p in "${ch_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	return 0
}
lib_exit_hooks+=(ch_lib_exit)

ch_start() {
	ch_n=$((ch_n + 1))
	ch_dir=$tmp/ch.$ch_n
	ch_http_port=${1:-$(free_port)}
	local tcp_port=${2:-$(free_port)} is_port=${3:-$(free_port)} extra=${4:-}
	mkdir -p "$ch_dir/data" "$ch_dir/tmp" "$ch_dir/uf" "$ch_dir/fs"
	cat >"$ch_dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$ch_dir/server.log</log><errorlog>$ch_dir/error.log</errorlog></logger>
  <http_port>$ch_http_port</http_port>
  <tcp_port>$tcp_port</tcp_port>
  <interserver_http_port>$is_port</interserver_http_port>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <listen_host>127.0.0.1</listen_host>
  <path>$ch_dir/data/</path>
  <tmp_path>$ch_dir/tmp/</tmp_path>
  <user_files_path>$ch_dir/uf/</user_files_path>
  <format_schema_path>$ch_dir/fs/</format_schema_path>
  <users_config>users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <mark_cache_size>67108864</mark_cache_size>
  <uncompressed_cache_size>67108864</uncompressed_cache_size>
  <max_concurrent_queries>50</max_concurrent_queries>
  <mlock_executable>false</mlock_executable>
  $extra
</yandex>
XML
	cat >"$ch_dir/users.xml" <<'XML'
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>2000000000</max_memory_usage></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip></networks>
    <profile>default</profile><quota>default</quota></default></users>
  <quotas><default></default></quotas>
</yandex>
XML
	ch_run "$ch_dir" "$ch_http_port"
}

ch_run() { # ch_run DIR HTTP_PORT: start (again) the server whose config is in DIR
	"$CH_SERVER" --config-file="$1/config.xml" >>"$1/stdout" 2>&1 &
	ch_pid=$!
	ch_pids+=("$ch_pid")
	ch_wait_port=$2
	wait_for -p "$ch_pid" 60 '[ "$(ch_query "SELECT 1" "$ch_wait_port" 2>/dev/null)" = 1 ]' ||
		die "clickhouse-server did not start: $(tail -n 3 "$1/error.log" "$1/stdout" 2>/dev/null)"
}

ch_query() {
	curl -s --noproxy '*' --data-binary "$1" "http://127.0.0.1:${2:-$ch_http_port}/"
}

ch_kill() {
	local p=${2:-$ch_pid}
	kill "-$1" "$p" 2>/dev/null
	wait "$p" 2>/dev/null
	[ "$p" = "$ch_pid" ] && ch_pid=
	return 0
}

# ZooKeeper: the jar and its classpath as Debian's package lays them out.
ZK_ENV=${ZK_ENV:-/etc/zookeeper/conf/environment}
zk_available() {
	command -v java >/dev/null 2>&1 && [ -f "$ZK_ENV" ] && [ -f /usr/share/java/zookeeper.jar ]
}

zk_start() {
	local CLASSPATH
	zk_port=$(free_port)
	mkdir -p "$tmp/zk/data"
	CLASSPATH=$(. "$ZK_ENV" && echo "$CLASSPATH")
	java -cp "$CLASSPATH" -Dzookeeper.log.dir="$tmp/zk" \
		org.apache.zookeeper.server.ZooKeeperServerMain "$zk_port" "$tmp/zk/data" \
		>"$tmp/zk/out" 2>&1 &
	zk_pid=$!
	ch_pids+=("$zk_pid")
	wait_for -p "$zk_pid" 60 '(exec 3<>"/dev/tcp/127.0.0.1/$zk_port") 2>/dev/null' ||
		die "zookeeper did not start: $(tail -n 3 "$tmp/zk/out")"
}

# ch_same NAME PATH [curl -G args]: GET PATH from $e_base and $c_base; the
# statuses agree and the bodies are equal byte for byte (counted in
# ch_nsame), or else say the same up to the order stacks were first
# stored in (ch_nequiv; clickhouse_same.py, for diagnosis: the views no
# longer depend on that order, so a test may require ch_nsame alone);
# else fail. ch_nviews counts.
ch_nsame=0 ch_nequiv=0 ch_nviews=0
ch_same() {
	local name=$1 p=$2 ce cc
	shift 2
	ch_nviews=$((ch_nviews + 1))
	ce=$(curl -s --noproxy '*' -G -o "$tmp/e.body" -w '%{http_code}' "$@" "$e_base$p")
	cc=$(curl -s --noproxy '*' -G -o "$tmp/c.body" -w '%{http_code}' "$@" "$c_base$p")
	if [ "$ce" = "$cc" ] && cmp -s "$tmp/e.body" "$tmp/c.body"; then
		ch_nsame=$((ch_nsame + 1))
	elif [ "$ce" = 200 ] && [ "$cc" = 200 ] &&
		python3 tests/integration/clickhouse_same.py "$tmp/e.body" "$tmp/c.body" "$PROFD" \
			>"$tmp/same.out" 2>&1; then
		ch_nequiv=$((ch_nequiv + 1))
	else
		fail "$name: embedded HTTP $ce ($(wc -c <"$tmp/e.body") bytes), ClickHouse HTTP $cc ($(wc -c <"$tmp/c.body") bytes): $(tail -c 300 "$tmp/same.out" 2>/dev/null)"
		cp "$tmp/e.body" "$tmp/fail.$nfail.e"
		cp "$tmp/c.body" "$tmp/fail.$nfail.c"
	fi
}

# ch_ingest_golden BASE...: the corpus files of test_views_golden.sh, at
# its fixed times, into each server BASE (200 expected).
ch_ingest_golden() {
	local b spec f fmt i q c
	for b in "$@"; do
		i=0
		for spec in "pprof/gen--cpu.pprof pprof" "pprof/gen--heap.pprof pprof" \
			"pprof/pyroscope--go.cpu.labels.pprof pprof" "pprof/parca--two-stacks.pb.gz pprof" \
			"jfr/gen--jdk17-profile.jfr jfr" "collapsed/gen--perf-collapsed-fp.txt folded"; do
			read -r f fmt <<<"$spec"
			[ -f "$CORPUS/$f" ] || continue
			i=$((i + 1))
			q="name=golden$i%7Bfile%3D%22$(basename "$f")%22%7D&format=$fmt&from=$((T0 + 3600 * i))&until=$((T0 + 3600 * i + 10))"
			c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
				--data-binary "@$CORPUS/$f" "$b/ingest?$q")
			[ "$c" = 200 ] || fail "ingest $f into $b: HTTP $c $(head -c 300 "$tmp/body")"
		done
		f=$CORPUS/otlp/pyroscope--otel-ebpf-profile.pb.json
		if [ -f "$f" ]; then
			c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST \
				-H 'Content-Type: application/json' --data-binary "@$f" "$b/v1development/profiles")
			[ "$c" = 200 ] || fail "ingest OTLP/JSON into $b: HTTP $c"
		fi
	done
}

# ch_wait_flushed: wait until the embedded server at $e_base has written
# its head to a block (its maintenance thread looks every 10 s): the
# answers compared are then the block's, which keeps times at 1 ms as
# ClickHouse-backed stores do (a head's answers show finer times).
ch_wait_flushed() {
	wait_for 60 '[ "$(curl -s --noproxy "*" "$e_base/metrics" | sed -n "s/^profd_head_rows{dataset=\"default\"} //p")" = 0 ]' ||
		fail "the embedded server did not flush its head"
}

# ch_views: every view of test_views_golden.sh and per-sample attribute
# matchers, through ch_same; T0, FROM and TO as ch_ingest_golden's.
ch_views() {
	local R W T C t types mid fn sel
	R=(--data-urlencode "from=$FROM" --data-urlencode "to=$TO")
	# the series view: the hours the files were ingested into (steps of the whole range would be too many)
	W=(--data-urlencode "from=$((T0 * 1000))" --data-urlencode "to=$(((T0 + 8 * 3600) * 1000))")
	ch_same "profile-types" /api/v1/profile-types "${R[@]}"
	ch_same "labels" /api/v1/labels "${R[@]}"
	ch_same "label values file" /api/v1/labels/file/values "${R[@]}"
	ch_same "label values service.name" /api/v1/labels/service.name/values "${R[@]}"
	ch_same "label values function" /api/v1/labels/function/values "${R[@]}"
	ch_same "label values profile_id" /api/v1/labels/profile_id/values "${R[@]}"
	types=$(curl -s --noproxy '*' -G "${R[@]}" "$e_base/api/v1/profile-types" |
		python3 -c 'import json,sys; print("\n".join(json.load(sys.stdin)))')
	ch_ntypes=$(echo "$types" | wc -w)
	mid=$(((T0 + 3600 * 4) * 1000))
	for t in $types; do
		T=(--data-urlencode "type=$t" "${R[@]}")
		ch_same "$t flamegraph" /api/v1/flamegraph "${T[@]}"
		ch_same "$t flamegraph inverted" /api/v1/flamegraph "${T[@]}" --data-urlencode invert=true \
			--data-urlencode max_nodes=50
		ch_same "$t flamegraph one file" /api/v1/flamegraph "${T[@]}" \
			--data-urlencode 'query={file="gen--cpu.pprof"}'
		ch_same "$t table" /api/v1/table "${T[@]}"
		ch_same "$t table frame" /api/v1/table "${T[@]}" --data-urlencode granularity=frame
		ch_same "$t series" /api/v1/series "${W[@]}" --data-urlencode "type=$t" \
			--data-urlencode step=1m --data-urlencode group_by=file
		ch_same "$t series total" /api/v1/series "${W[@]}" --data-urlencode "type=$t" \
			--data-urlencode step=10s
		ch_same "$t flamechart" /api/v1/flamechart "${T[@]}" --data-urlencode group_by=file
		ch_same "$t diff" /api/v1/diff --data-urlencode "type=$t" --data-urlencode "a_from=$FROM" \
			--data-urlencode "a_to=$mid" --data-urlencode "b_from=$mid" --data-urlencode "b_to=$TO"
		ch_same "$t export folded" /api/v1/export/folded "${T[@]}"
		ch_same "$t export pprof" /api/v1/export/pprof "${T[@]}"
		curl -s --noproxy '*' -G -o "$tmp/table.json" "${T[@]}" "$e_base/api/v1/table"
		fn=$(python3 -c 'import json,sys
r = json.load(open(sys.argv[1])).get("rows") or [{}]
print(r[0].get("name", ""))' "$tmp/table.json" 2>/dev/null)
		[ -n "$fn" ] && ch_same "$t sandwich" /api/v1/sandwich "${T[@]}" --data-urlencode "function=$fn"
	done
	# Per-sample attribute matchers (evaluated per row in profd on what
	# ClickHouse selected), regex and negative matchers on series labels.
	C=(--data-urlencode "type=process_cpu:cpu:nanoseconds:cpu:nanoseconds" "${R[@]}")
	for sel in '{function="slow"}' '{profile_id=~"0.*"}' '{foo="bar",function!="fast"}' \
		'{file=~"gen.*"}' '{file!="gen--cpu.pprof"}' '{nosuchlabel="x"}'; do
		ch_same "cpu flamegraph $sel" /api/v1/flamegraph "${C[@]}" --data-urlencode "query=$sel"
		ch_same "cpu series $sel" /api/v1/series "${W[@]}" --data-urlencode "query=$sel" \
			--data-urlencode "type=process_cpu:cpu:nanoseconds:cpu:nanoseconds" \
			--data-urlencode step=10s --data-urlencode group_by=file
	done
}
