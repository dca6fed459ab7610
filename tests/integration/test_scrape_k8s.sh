#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_scrape_k8s.sh - Kubernetes discovery (kubernetes_sd_configs) against
# an API server stand-in (k8s_api_standin.py, list/watch shapes of the
# Kubernetes API reference) with static pprof targets as the pods
# (scrape_fake_target.py), no restart:
#   - role pod in namespace shop with a label selector: only the pod
#     annotated profiles.grafana.com/memory.scrape=true is scraped, at the
#     port its .port annotation names; its discovered labels are
#     Prometheus' __meta_kubernetes_pod_* with the exact values; the
#     unannotated pod is dropped (listed, never scraped); a pod in another
#     namespace is never seen; the selectors reach the API as labelSelector
#     and fieldSelector, and an annotated shop pod the field selector
#     excludes is never listed nor scraped;
#   - role endpoints: one target per address and port, with its labels and
#     its service's and pod's joined in (the stand-in serves services too);
#   - role service: one target per service port at NAME.NAMESPACE.svc:PORT;
#     role node (cluster-scoped): one per node at InternalIP:kubelet port;
#     each with its __meta_kubernetes_service_* / _node_* labels;
#   - credentials: bearer_token_file's token and a kubeconfig's user token
#     reach the API as Authorization: Bearer; the kubeconfig's https server
#     is verified with its certificate-authority-data and asks for (and
#     gets) its client certificate (client-certificate-data, client-key
#     file); its context namespace is own_namespace; in-cluster mode
#     finds the server in KUBERNETES_SERVICE_HOST/PORT (https) and lists
#     all namespaces; the
#     same server without the CA is refused (logged, no targets);
#   - watch events apply live: ADDED starts a target (its event carries a
#     300 kB annotation: the stream is not cut at the error-body bound),
#     MODIFIED (annotation removed) stops one (its hit count stops),
#     DELETED stops one;
#   - a dropped watch resumes from the last resourceVersion sent (no new list);
#   - 410 Gone as an ERROR event, and as the HTTP status, makes a new list,
#     which shows a change the watch never announced;
#   - watches that answer only a bookmark of the same resourceVersion and
#     end at once are retried with back-off, not in a loop; events flow
#     again once the watches hold.
source "$(dirname "$0")/scrape_lib.sh"

printf 'main;work 7\n' >"$tmp/p.folded"
"$PROFD" convert "$tmp/p.folded" "$tmp/p.pb.gz" >/dev/null 2>&1 || die "convert"
for x in A B C D E F; do
	start_fake "ok:$tmp/p.pb.gz"
	declare "P$x=${fake_port[ok]}"
done
hits() { # hits PORT: requests the fake on that port got
	curl -s --noproxy '*' "http://127.0.0.1:$1/__stats" | python3 -c 'import json,sys; print(sum(json.load(sys.stdin)["hits"].values()))'
}
ann() { # ann PORT: the Grafana-style annotations asking for a memory scrape at PORT
	printf '{"profiles.grafana.com/memory.scrape": "true", "profiles.grafana.com/memory.port": "%s"}' "$1"
}
labels='{"app.kubernetes.io/name": "web", "app.kubernetes.io/part-of": "shop"}'
cat >"$tmp/spec.json" <<EOF
{"pods": [
  {"name": "web-7d4b9c8f6-aaaaa", "port": 9, "labels": $labels, "annotations": $(ann "$PA")},
  {"name": "web-7d4b9c8f6-bbbbb", "port": $PB, "labels": $labels},
  {"name": "web-7d4b9c8f6-ddddd", "namespace": "other", "port": 9, "labels": $labels, "annotations": $(ann "$PD")},
  {"name": "web-7d4b9c8f6-fffff", "port": 9, "labels": $labels, "annotations": $(ann "$PF")}
 ],
 "endpoints": [{"name": "web", "port": $PE, "pod": "web-7d4b9c8f6-aaaaa"}],
 "services": [{"name": "web", "port": $PE, "annotations": {"parca.dev/scrape": "true"}}],
 "nodes": [{"name": "node-a", "ip": "10.0.0.11"}, {"name": "node-b", "ip": "10.0.0.12"}]}
EOF
# TLS for the kubeconfig's cluster: a self-signed server certificate (its
# own CA) and a self-signed client certificate the stand-in requires.
command -v openssl >/dev/null || skip "openssl is not installed"
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
	-addext subjectAltName=IP:127.0.0.1 -keyout "$tmp/api.key" -out "$tmp/api.pem" 2>/dev/null &&
	openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=profd" \
		-keyout "$tmp/client.key" -out "$tmp/client.pem" 2>/dev/null ||
	die "openssl could not make the certificates"
spawn python3 tests/integration/k8s_api_standin.py "$tmp/spec.json" "$tmp/api.pem" "$tmp/api.key" \
	"$tmp/client.pem" >"$tmp/api.out" 2>"$tmp/api.err"
wait_for 10 '[ -s "$tmp/api.out" ]'
api_port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$tmp/api.out" 2>/dev/null)
tls_port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["tls_port"])' "$tmp/api.out" 2>/dev/null)
[ -n "$api_port" ] && [ -n "$tls_port" ] || die "stand-in did not start: $(cat "$tmp/api.err")"
api="http://127.0.0.1:$api_port"
ctl() { curl -s --noproxy '*' -X POST -d "$2" "$api/__ctl/$1" >/dev/null; }
apilog() { curl -s --noproxy '*' "$api/__ctl/log" | python3 -c "import json,sys; log=json.load(sys.stdin); print($1)"; }
pod_event() { # pod_event TYPE NAME PORT [silent [BIG]]: an event for a shop pod, annotated for
	# PORT (or not: PORT -), with a BIG-byte last-applied-configuration annotation
	local a='{}'
	[ "$3" != - ] && a=$(ann "$3")
	ctl event "{\"collection\": \"pods\", \"type\": \"$1\", \"silent\": ${4:-false}, \"spec\": {\"name\": \"$2\", \"port\": 9, \"big\": ${5:-0}, \"labels\": $labels, \"annotations\": $a}}"
}

printf 'file-token\n' >"$tmp/token"
cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
current-context: test
contexts:
  - name: test
    context: {cluster: standin, user: tester, namespace: shop}
clusters:
  - name: standin
    cluster:
      server: "https://127.0.0.1:$tls_port"
      certificate-authority-data: $(base64 -w0 "$tmp/api.pem")
users:
  - name: tester
    user:
      token: kubeconfig-token
      client-certificate-data: $(base64 -w0 "$tmp/client.pem")
      client-key: client.key
EOF
cat >"$tmp/scrape.yaml" <<EOF
scrape_configs:
  - job_name: pods
    scrape_interval: 1s
    profiles: [heap]
    kubernetes_sd_configs:
      - role: pod
        api_server: $api
        bearer_token_file: token
        namespaces: {names: [shop]}
        selectors: [{role: pod, label: "app.kubernetes.io/part-of=shop", field: "metadata.name!=web-7d4b9c8f6-fffff"}]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_profiles_grafana_com_memory_scrape]
        regex: "true"
        action: keep
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_profiles_grafana_com_memory_port]
        regex: "(.+?)(?::\\\\d+)?;(\\\\d+)"
        replacement: "\$1:\$2"
        target_label: __address__
      - source_labels: [__meta_kubernetes_namespace]
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        target_label: pod
  - job_name: eps
    scrape_interval: 1s
    profiles: [heap]
    kubernetes_sd_configs:
      - role: endpoints
        kubeconfig_file: kubeconfig
        namespaces: {own_namespace: true}
  - job_name: svcs
    profiles: [heap]
    kubernetes_sd_configs:
      - role: service
        api_server: $api
        bearer_token_file: token
        namespaces: {names: [shop]}
    relabel_configs:
      - {source_labels: [__address__], target_label: discovered_address}
      - {target_label: __address__, replacement: "127.0.0.1:9"}
  - job_name: nodes
    profiles: [heap]
    kubernetes_sd_configs:
      - role: node
        api_server: $api
        bearer_token_file: token
    relabel_configs:
      - {source_labels: [__address__], target_label: discovered_address}
      - {target_label: __address__, replacement: "127.0.0.1:9"}
  - job_name: incluster
    profiles: [heap]
    kubernetes_sd_configs:
      - role: pod
        bearer_token_file: incluster-token
        tls_config: {ca_file: api.pem, cert_file: client.pem, key_file: client.key}
    relabel_configs:
      - action: drop
        regex: ".*"
        source_labels: [__address__]
  - job_name: untrusted
    profiles: [heap]
    kubernetes_sd_configs:
      - role: pod
        api_server: https://127.0.0.1:$tls_port
        tls_config: {cert_file: client.pem, key_file: client.key}
EOF
printf 'incluster-token' >"$tmp/incluster-token"
# In-cluster discovery takes the API server from these (as a pod's environment has them).
export KUBERNETES_SERVICE_HOST=127.0.0.1 KUBERNETES_SERVICE_PORT=$tls_port
start_server --scrape-config "$tmp/scrape.yaml"
unset KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT

active() { targets_get "\" \".join(sorted(x[\"labels\"][\"instance\"] for x in by_job(\"$1\")))"; }
sorted() { printf '%s\n' "$@" | LC_ALL=C sort | xargs; }
is_active() { [ "$(active "$1")" = "$(sorted $2)" ]; }
A=127.0.0.1:$PA C=127.0.0.1:$PC
checkx "only the annotated shop pod is a target, at its annotated port" "wait_for 20 'is_active pods $A'"
disc() { targets_cached "by_job('pods')[0]['discoveredLabels'].get('$1')"; }
want() { [ "$(disc "__meta_kubernetes_$1")" = "$2" ] || { echo "  $1: '$(disc "__meta_kubernetes_$1")' != '$2'"; return 1; }; }
meta_ok() {
	want namespace shop && want pod_name web-7d4b9c8f6-aaaaa && want pod_ip 127.0.0.1 &&
		want pod_label_app_kubernetes_io_name web && want pod_labelpresent_app_kubernetes_io_part_of true &&
		want pod_annotation_profiles_grafana_com_memory_port "$PA" &&
		want pod_annotationpresent_profiles_grafana_com_memory_scrape true &&
		want pod_container_name app && want pod_container_port_name http-pprof &&
		want pod_container_port_number 9 && want pod_container_port_protocol TCP &&
		want pod_container_init false && want pod_container_image registry.example/shop/web-7d4b9c8f6-aaaaa:1.4.2 &&
		want pod_ready true && want pod_phase Running && want pod_node_name node-a &&
		want pod_host_ip 10.0.0.11 && want pod_controller_kind ReplicaSet &&
		want pod_controller_name web-7d4b9c8f6 && [ "$(disc __address__)" = 127.0.0.1:9 ] &&
		[ "$(targets_cached "by_job('pods')[0]['labels']['namespace'] + '/' + by_job('pods')[0]['labels']['pod']")" = shop/web-7d4b9c8f6-aaaaa ]
}
check "its discovered labels are Prometheus' __meta_kubernetes_pod_* ones, relabeled to namespace/pod" meta_ok
dropped_b() { targets_get "[x['discoveredLabels']['__meta_kubernetes_pod_name'] for x in t['data']['droppedTargets'] if x['scrapePool'] == 'pods']"; }
check "the unannotated pod is dropped by relabeling" [ "$(dropped_b)" = "['web-7d4b9c8f6-bbbbb']" ]
check "the API saw the pod job's label selector (and none from the endpoints job's pod watch)" \
	[ "$(apilog "sorted(set(str(w['query'].get('labelSelector')) for w in log['watches'] if w['collection'] == 'pods'))")" = "['None', 'app.kubernetes.io/part-of=shop']" ]
check "... and its field selector" \
	[ "$(apilog "sorted(set(str(w['query'].get('fieldSelector')) for w in log['watches'] if w['collection'] == 'pods'))")" = "['None', 'metadata.name!=web-7d4b9c8f6-fffff']" ]
checkx "endpoints: one target per address and port, and one for the pod's declared port no endpoint names" \
	"wait_for 20 'is_active eps \"127.0.0.1:$PE 127.0.0.1:9\"'"
extra_ok() {
	[ "$(targets_cached "[sorted(k for k in x['discoveredLabels'] if k.startswith('__meta_kubernetes_endpoint_')) + [x['discoveredLabels'].get(k) for k in ('__meta_kubernetes_endpoints_name', '__meta_kubernetes_service_name', '__meta_kubernetes_pod_name', '__meta_kubernetes_pod_container_port_number')] for x in by_job('eps') if x['labels']['instance'] == '127.0.0.1:9']")" = \
		"[['web', 'web', 'web-7d4b9c8f6-aaaaa', '9']]" ]
}
check "... that one with the endpoints', service's and pod's labels and no endpoint_* ones" extra_ok
ep_ok() {
	[ "$(targets_cached "sorted((k, v) for k, v in [x for x in by_job('eps') if x['labels']['instance'] == '127.0.0.1:$PE'][0]['discoveredLabels'].items() if k.startswith(('__meta_kubernetes_endpoint', '__meta_kubernetes_namespace')))")" = \
		"[('__meta_kubernetes_endpoint_address_target_kind', 'Pod'), ('__meta_kubernetes_endpoint_address_target_name', 'web-7d4b9c8f6-aaaaa'), ('__meta_kubernetes_endpoint_node_name', 'node-a'), ('__meta_kubernetes_endpoint_port_name', 'http-pprof'), ('__meta_kubernetes_endpoint_port_protocol', 'TCP'), ('__meta_kubernetes_endpoint_ready', 'true'), ('__meta_kubernetes_endpoints_annotation_endpoints_kubernetes_io_last_change_trigger_time', '2024-05-01T10:00:03Z'), ('__meta_kubernetes_endpoints_annotationpresent_endpoints_kubernetes_io_last_change_trigger_time', 'true'), ('__meta_kubernetes_endpoints_label_app_kubernetes_io_name', 'web'), ('__meta_kubernetes_endpoints_labelpresent_app_kubernetes_io_name', 'true'), ('__meta_kubernetes_endpoints_name', 'web'), ('__meta_kubernetes_namespace', 'shop')]" ]
}
check "... with Prometheus' __meta_kubernetes_endpoint(s)_* labels" ep_ok
ep_join() {
	[ "$(targets_cached "[[x for x in by_job('eps') if x['labels']['instance'] == '127.0.0.1:$PE'][0]['discoveredLabels'].get('__meta_kubernetes_' + k) for k in ('service_name', 'service_cluster_ip', 'service_type', 'service_annotation_parca_dev_scrape', 'service_port_name', 'pod_name', 'pod_node_name', 'pod_controller_kind', 'pod_container_port_number')]")" = \
		"['web', '10.96.0.12', 'ClusterIP', 'true', None, 'web-7d4b9c8f6-aaaaa', 'node-a', 'ReplicaSet', None]" ]
}
check "... joined with its service's labels and its pod's (no container: port not declared)" ep_join
svc_ok() {
	[ "$(targets_get "[(x['labels']['discovered_address'], x['discoveredLabels'].get('__meta_kubernetes_service_name'), x['discoveredLabels'].get('__meta_kubernetes_service_port_name'), x['discoveredLabels'].get('__meta_kubernetes_service_cluster_ip'), x['discoveredLabels'].get('__meta_kubernetes_service_annotation_parca_dev_scrape')) for x in by_job('svcs')]")" = \
		"[('web.shop.svc:$PE', 'web', 'http-pprof', '10.96.0.12', 'true')]" ]
}
checkx "role service: one target per service port, at its DNS name, with __meta_kubernetes_service_*" 'wait_for 20 svc_ok'
nodes_ok() {
	[ "$(targets_get "sorted((x['labels']['discovered_address'], x['discoveredLabels'].get('__meta_kubernetes_node_name'), x['discoveredLabels'].get('__meta_kubernetes_node_address_InternalIP'), x['discoveredLabels'].get('__meta_kubernetes_node_label_kubernetes_io_arch')) for x in by_job('nodes'))")" = \
		"[('10.0.0.11:10250', 'node-a', '10.0.0.11', 'amd64'), ('10.0.0.12:10250', 'node-b', '10.0.0.12', 'amd64')]" ]
}
checkx "role node: one target per node, InternalIP and kubelet port, with __meta_kubernetes_node_*" 'wait_for 20 nodes_ok'
check "bearer_token_file's, the in-cluster job's and the kubeconfig's tokens reach the API" \
	[ "$(apilog "sorted(log['auth'])")" = "['Bearer file-token', 'Bearer incluster-token', 'Bearer kubeconfig-token']" ]
incluster_seen() { [ "$(targets_get "sorted(x['discoveredLabels']['__meta_kubernetes_pod_name'] for x in t['data']['droppedTargets'] if x['scrapePool'] == 'incluster')")" = "['web-7d4b9c8f6-aaaaa', 'web-7d4b9c8f6-bbbbb', 'web-7d4b9c8f6-ddddd', 'web-7d4b9c8f6-fffff']" ]; }
checkx "in-cluster (KUBERNETES_SERVICE_HOST/PORT, https, token and CA overridden): all namespaces' pods seen" 'wait_for 20 incluster_seen'
untrusted_logged() { grep 'job=untrusted: kubernetes pods in all namespaces: list https://127.0.0.1:[0-9]*/api/v1/pods: .*certificate' "$tmp/log.$n" >/dev/null; }
checkx "an https API server without its CA in tls_config.ca_file is refused, and logged" 'wait_for 20 untrusted_logged'
check "... and gives no targets" [ "$(active untrusted)" = "" ]
checkx "A is scraped" "wait_for 20 '[ \$(hits $PA) -gt 0 ]'"
check "the unannotated pod is never scraped" [ "$(hits "$PB")" = 0 ]
check "the pod in another namespace is never scraped" [ "$(hits "$PD")" = 0 ]
check "the annotated pod the field selector excludes is never scraped" [ "$(hits "$PF")" = 0 ]

pod_event ADDED web-7d4b9c8f6-ccccc "$PC" false 300000
checkx "ADDED (with a 300 kB annotation): the new annotated pod becomes a target" "wait_for 20 'is_active pods \"$A $C\"'"
big_present() { targets_get "[x['discoveredLabels'].get('__meta_kubernetes_pod_annotationpresent_kubectl_kubernetes_io_last_applied_configuration') for x in by_job('pods') if x['labels']['pod'].endswith('ccccc')]"; }
check "... whose over-long annotation keeps only its present label" [ "$(big_present)" = "['true']" ]
pod_event MODIFIED web-7d4b9c8f6-aaaaa -
checkx "MODIFIED (annotation removed): A is no longer a target" "wait_for 20 'is_active pods $C'"
h0=$(hits "$PA")
sleep 1.5
check "... and no longer scraped" [ "$(hits "$PA")" = "$h0" ]
pod_event DELETED web-7d4b9c8f6-ccccc -
checkx "DELETED: C is no longer a target" "wait_for 20 'is_active pods \"\"'"
pod_event MODIFIED web-7d4b9c8f6-aaaaa "$PA"
checkx "MODIFIED (annotated again): A is back" "wait_for 20 'is_active pods $A'"

lists0=$(apilog "log['lists']['pods']")
last=$(apilog "log['last_rv']['pods']")
nw=$(apilog "len(log['watches'])")
ctl drop '{}'
# Both jobs watch pods (the endpoints job joins pod labels): each resumes.
resumed() { [ "$(apilog "sorted(set(w['rv'] for w in log['watches'][$nw:] if w['collection'] == 'pods')) + [len([w for w in log['watches'][$nw:] if w['collection'] == 'pods']) >= 2]")" = "['$last', True]" ]; }
checkx "a dropped watch resumes from the last resourceVersion sent ($last)" 'wait_for 20 resumed'
check "... without listing again" [ "$(apilog "log['lists']['pods']")" = "$lists0" ]
pod_event ADDED web-7d4b9c8f6-ccccc "$PC"
checkx "... and the resumed watch delivers events" "wait_for 20 'is_active pods \"$A $C\"'"

# A change the watch never announces, then the history compacted away.
pod_event DELETED web-7d4b9c8f6-ccccc - true
ctl compact '{"mode": "event"}'
ctl drop '{}'
checkx "410 as an ERROR event: listed again" "wait_for 20 '[ \$(apilog \"log[\\\"lists\\\"][\\\"pods\\\"]\") -gt $lists0 ]'"
checkx "... and the new list shows the silent deletion" "wait_for 20 'is_active pods $A'"
lists1=$(apilog "log['lists']['pods']")
pod_event ADDED web-7d4b9c8f6-ccccc "$PC" true
ctl compact '{"mode": "status"}'
ctl drop '{}'
checkx "410 as the HTTP status: listed again" "wait_for 20 '[ \$(apilog \"log[\\\"lists\\\"][\\\"pods\\\"]\") -gt $lists1 ]'"
checkx "... and the new list shows the silent addition" "wait_for 20 'is_active pods \"$A $C\"'"
# Watches that bring only a bookmark of the same resourceVersion and end at once: back-off,
# not a reconnect loop (it made about 20 watches a second per watcher).
ctl bookmarks '{"on": true}'
ctl drop '{}'
nw=$(apilog "len(log['watches'])")
sleep 3
nb=$(apilog "len(log['watches']) - $nw")
check "watches that end at once with only a bookmark back off ($nb watches in 3 s, at most 12)" [ "$nb" -le 12 ]
ctl bookmarks '{"on": false}'
pod_event DELETED web-7d4b9c8f6-ccccc -
checkx "... and once the watches hold again, events arrive (within the back-off)" "wait_for 20 'is_active pods $A'"
check "every resourceVersion asked for was one the API handed out" [ "$(apilog "log['bad_rv']")" = "[]" ]
require_alive "after the watch events"
stop_server TERM
check "server stops cleanly (exit 0)" [ "$stop_rc" = 0 ]
finish
