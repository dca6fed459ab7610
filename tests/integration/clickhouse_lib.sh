#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# clickhouse_lib.sh - a ClickHouse server for a test (sourced after
# server_lib.sh or lib.sh): Debian's clickhouse-server (18.16) started as
# a plain process, not the system service, on free loopback ports with
# its own config, users file and data under $tmp/ch.N/; killed at exit.
#   ch_available         0 when clickhouse-server is installed
#   ch_start             start one (sets ch_pid, ch_http_port, ch_dir);
#                        fails the test (die) when it does not answer
#   ch_query SQL         run SQL over HTTP, print the answer
#   ch_kill SIGNAL       stop it (ch_pid emptied)
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
	ch_http_port=$(free_port)
	local tcp_port
	tcp_port=$(free_port)
	mkdir -p "$ch_dir/data" "$ch_dir/tmp" "$ch_dir/uf" "$ch_dir/fs"
	cat >"$ch_dir/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$ch_dir/server.log</log><errorlog>$ch_dir/error.log</errorlog></logger>
  <http_port>$ch_http_port</http_port>
  <tcp_port>$tcp_port</tcp_port>
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
	"$CH_SERVER" --config-file="$ch_dir/config.xml" >"$ch_dir/stdout" 2>&1 &
	ch_pid=$!
	ch_pids+=("$ch_pid")
	wait_for -p "$ch_pid" 60 '[ "$(ch_query "SELECT 1" 2>/dev/null)" = 1 ]' ||
		die "clickhouse-server did not start: $(tail -n 3 "$ch_dir/error.log" "$ch_dir/stdout" 2>/dev/null)"
}

ch_query() {
	curl -s --noproxy '*' --data-binary "$1" "http://127.0.0.1:$ch_http_port/"
}

ch_kill() {
	kill "-$1" "$ch_pid" 2>/dev/null
	wait "$ch_pid" 2>/dev/null
	ch_pid=
}
