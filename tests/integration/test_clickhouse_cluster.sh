#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_clickhouse_cluster.sh - the ClickHouse backend over a cluster
# (store/clickhouse.h, ?cluster=NAME): a ZooKeeper and three
# clickhouse-servers on loopback (clickhouse_lib.sh), two shards, the
# first with two replicas (a, b), the second with one (c); profd writes
# ReplicatedMergeTree / ReplicatedReplacingMergeTree tables on every node
# (ON CLUSTER) and Distributed tables over them. Two profd servers in
# front: ingest through the one on node a, query through the one on
# node c, and every view agrees with an embedded profd given the same
# data (the checks of test_clickhouse.sh). Both shards hold rows and b
# holds a's (replication). Then kill -9 of replica b while ingest runs
# under load: no acknowledged sample is lost once b is back, and queries
# answer meanwhile. Last, retention over the cluster: a dataset keeping 2
# days loses its older day partitions on every node (listed with
# cluster(), dropped ON CLUSTER), recent rows and other datasets stay.
# Environment: PROFD, PROFD_CORPUS; skips without clickhouse-server,
# ZooKeeper (Java and Debian's zookeeper package) or the corpus.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
CORPUS=${PROFD_CORPUS:-../shared/corpus}

if [ ! -d "$CORPUS/pprof" ]; then
	echo "skip: no corpus at $CORPUS (set PROFD_CORPUS)"
	exit 0
fi
source tests/integration/server_lib.sh
source tests/integration/clickhouse_lib.sh
need_bin "$PROFD"
ch_available || skip "clickhouse-server is not installed (Debian: apt-get install clickhouse-server)"
zk_available || skip "ZooKeeper is not installed (Debian: apt-get install zookeeper)"

zk_start
ok "zookeeper on port $zk_port"
declare -A H T I
for nd in a b c; do H[$nd]=$(free_port) T[$nd]=$(free_port) I[$nd]=$(free_port); done
cluster="<remote_servers><profd_c>
  <shard><internal_replication>true</internal_replication>
    <replica><host>127.0.0.1</host><port>${T[a]}</port></replica>
    <replica><host>127.0.0.1</host><port>${T[b]}</port></replica></shard>
  <shard><internal_replication>true</internal_replication>
    <replica><host>127.0.0.1</host><port>${T[c]}</port></replica></shard>
</profd_c></remote_servers>
<zookeeper><node><host>127.0.0.1</host><port>$zk_port</port></node></zookeeper>
<distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>"
declare -A P D
for nd in a b c; do
	shard=01
	[ "$nd" = c ] && shard=02
	ch_start "${H[$nd]}" "${T[$nd]}" "${I[$nd]}" "$cluster<macros><shard>$shard</shard><replica>$nd</replica></macros>"
	P[$nd]=$ch_pid D[$nd]=$ch_dir
done
ok "3 clickhouse-servers $(ch_query 'SELECT version()' "${H[a]}"): shard 01 = a, b; shard 02 = c"
url() { echo "clickhouse://127.0.0.1:${H[$1]}/profd_c?cluster=profd_c"; }

start_server --data "$tmp/emb"
e_pid=$server_pid e_base=$base
server_pid=
start_server --data "$tmp/pa" --storage "$(url a)"
a_pid=$server_pid a_base=$base
server_pid=
start_server --data "$tmp/pc" --storage "$(url c)"
c_pid=$server_pid c_base=$base
at_exit() { kill -9 "$e_pid" "$a_pid" 2>/dev/null; return 0; }
for nd in a b c; do
	checkx "node $nd has the local and the Distributed tables" \
		'[ "$(ch_query "SELECT count() FROM system.tables WHERE database = '"'"'profd_c'"'"'" "${H[$nd]}")" = 16 ]'
done

T0=1700000000
FROM=1600000000000 TO=1800000000000
ch_ingest_golden "$e_base" "$a_base"
# (an insert goes to either replica of shard 01; the other fetches it)
same_ab() {
	ra=$(ch_query "SELECT count() FROM profd_c.samples_local" "${H[a]}")
	[ "$(ch_query "SELECT count() FROM profd_c.samples_local" "${H[b]}")" = "$ra" ]
}
wait_for 60 same_ab && ok "replicas a and b of shard 01 agree ($ra rows)" ||
	fail "replicas a and b of shard 01 do not agree"
rc=$(ch_query "SELECT count() FROM profd_c.samples_local" "${H[c]}")
checkx "both shards hold sample rows (01: $ra, 02: $rc)" '[ "${ra:-0}" -gt 0 ] && [ "${rc:-0}" -gt 0 ]'
# ingest through a, query through c
ch_wait_flushed
ch_views
checkx "all $ch_nviews views through the other server agree byte for byte ($ch_nequiv only up to first-seen order)" \
	'[ "$ch_nsame" = "$ch_nviews" ]'

# Kill -9 replica b during ingest under load.
total0=$(ch_query "SELECT count() FROM profd_c.samples" "${H[c]}")
f=$CORPUS/pprof/gen--cpu.pprof
acked=0 refused=0 qok=0 qbad=0
for k in $(seq 1 40); do
	if [ "$k" = 10 ]; then ch_kill 9 "${P[b]}"; fi
	c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST --data-binary "@$f" \
		"$a_base/ingest?name=load%7Bk%3D%22$k%22%7D&format=pprof&from=$((T0 + 200000 + k))&until=$((T0 + 200000 + k))")
	if [ "$c" = 200 ]; then acked=$((acked + 1)); else refused=$((refused + 1)); fi
	if [ $((k % 5)) = 0 ]; then
		c=$(curl -s --noproxy '*' -G -o /dev/null -w '%{http_code}' \
			--data-urlencode "type=process_cpu:cpu:nanoseconds:cpu:nanoseconds" \
			--data-urlencode "from=$FROM" --data-urlencode "to=$TO" "$c_base/api/v1/flamegraph")
		if [ "$c" = 200 ]; then qok=$((qok + 1)); else qbad=$((qbad + 1)); fi
	fi
done
checkx "ingest went on with replica b killed ($acked acknowledged, $refused refused)" '[ "$acked" -ge 30 ]'
checkx "queries answered meanwhile ($qok of $((qok + qbad)))" '[ "$qbad" = 0 ]'
ch_run "${D[b]}" "${H[b]}"
ok "replica b restarted"
wait_for 120 same_ab && ok "replica b caught up after its restart ($ra rows)" ||
	fail "replica b did not catch up after its restart"
# Read once the replicas agree (a query may be served by either replica of
# shard 01, and a replica serves what it has fetched so far).
per=$(ch_query "SELECT count() FROM profd_c.samples WHERE series_id GLOBAL IN (SELECT series_id FROM profd_c.series WHERE has(lnames, 'k') AND has(lvalues, '\"1\"'))" "${H[c]}")
total1=$(ch_query "SELECT count() FROM profd_c.samples" "${H[c]}")
checkx "every acknowledged sample is there ($total1 = $total0 + $acked x $per, maybe more from refused ones)" \
	'[ "${per:-0}" -gt 0 ] && [ "$total1" -ge $((total0 + acked * per)) ] && [ "$total1" -le $((total0 + (acked + refused) * per)) ]'

# Retention over the cluster: old rows of two series (so both shards may
# hold some) gone from every node, recent ones kept.
cat >"$tmp/ret.yaml" <<'YAML'
datasets:
  - name: ret
    retention: 2d
YAML
other=$(ch_query "SELECT count() FROM profd_c.samples WHERE dataset = 'default'" "${H[c]}")
start_server --data "$tmp/pr" --storage "$(url c)" --config "$tmp/ret.yaml"
r_pid=$server_pid r_base=$base
at_exit() { kill -9 "$e_pid" "$a_pid" "$c_pid" "$r_pid" 2>/dev/null; return 0; }
now=$(date +%s)
for k in 1 2 3 4; do
	for age in $((4 * 86400)) 3600; do
		c=$(curl -s --noproxy '*' -o "$tmp/body" -w '%{http_code}' -X POST --data-binary "@$f" \
			"$r_base/ingest?name=ret%7Bk%3D%22$k%22%7D&format=pprof&from=$((now - age))&until=$((now - age + 10))")
		[ "$c" = 200 ] || fail "ingest into dataset ret: HTTP $c $(head -c 300 "$tmp/body")"
	done
done
cut=$(((now - 3 * 86400) * 1000000000))
old_n() { # old_n NODE: old rows of dataset ret in NODE's local tables (samples, rollup)
	ch_query "SELECT (SELECT count() FROM profd_c.samples_local WHERE dataset = 'ret' AND ts < $cut) +
		(SELECT count() FROM profd_c.samples_hour_local WHERE dataset = 'ret' AND hour < $cut)" "${H[$1]}"
}
recent_q="SELECT count() FROM profd_c.samples WHERE dataset = 'ret' AND ts >= $cut"
recent=$(ch_query "$recent_q" "${H[c]}")
checkx "old rows on the nodes before retention (a $(old_n a), b $(old_n b), c $(old_n c))" \
	'[ $(($(old_n a) + $(old_n c))) -gt 0 ]'
wait_for 90 '[ "$(old_n a)$(old_n b)$(old_n c)" = 000 ]' \
	"retention dropped the old days on every node (a $(old_n a), b $(old_n b), c $(old_n c))" &&
	ok "retention dropped the old days on every node"
checkx "recent rows kept ($recent)" '[ "${recent:-0}" -gt 0 ] && [ "$(ch_query "$recent_q" "${H[c]}")" = "$recent" ]'
checkx "the other dataset kept ($other rows)" \
	'[ "$(ch_query "SELECT count() FROM profd_c.samples WHERE dataset = '"'default'"'" "${H[c]}")" = "$other" ]'
# (the drop's answer comes once every node ran it: distributed DDL)
r_dropped() { curl -s --noproxy '*' "$r_base/metrics" | sed -n 's/^profd_retention_partitions_dropped_total{dataset="ret"} //p'; }
wait_for 200 '[ "$(r_dropped)" -ge 1 ]' "/metrics counts the dropped partitions ($(r_dropped))" &&
	ok "/metrics counts the dropped partitions ($(r_dropped))"
checkx "/metrics: no failed retention round" \
	'curl -s --noproxy "*" "$r_base/metrics" | grep -q "^profd_retention_failures_total{dataset=\"ret\"} 0$"'
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
