#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_meta.sh - process metadata and in-kernel targeting, for real:
#   - a fake Kubernetes container: a cgroup v2 directory named as the
#     kubelet and containerd name them (kubepods-burstable-pod<uid>.slice/
#     cri-containerd-<64 hex>.scope); a process in it must carry
#     container.id and k8s.pod.uid;
#   - a process in its own PID namespace (unshare --pid) must carry its
#     host pid in process.pid and its namespace pid (1) in process.vpid;
#   - --command-line adds process.command_line;
#   - targeting: --include-cgroup (the pod) and --include-exe metaspin
#     sample those and nothing else, --exclude-exe wins over the include
#     (a process in the pod running exclspin is never sampled, nor named
#     in samples taken of it as bash just before it exec'd exclspin), and
#     the BPF side counts what it skipped (/metrics);
#   - every sample carries thread.name, thread.id and cpu.logical_number;
#   - --k8s: pod name, namespace, node, container name, owner Deployment,
#     pod labels and annotations from a kubelet's GET /pods (a stand-in
#     kubelet in python serving a v1 PodList for the fake pod, answering 401
#     without the service-account token the agent must send). A real kubelet
#     needs a Kubernetes node, which a test machine is not.
# Needs root, kernel BTF and a writable cgroup v2 hierarchy; prints
# "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init
RUN=${META_SECONDS:-4}

cg2=$(awk '$3 == "cgroup2" { print $2; exit }' /proc/mounts)
[ -n "$cg2" ] && [ -w "$cg2" ] || {
	skip "no writable cgroup v2 hierarchy"
}
hex=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
uid=$(python3 -c 'import uuid; print(uuid.uuid4())')
top=$cg2/profd-test-$$
pod=$top/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${uid//-/_}.slice
ctr=$pod/cri-containerd-$hex.scope
meta_cleanup() {
	for d in "$ctr" "$pod" "$top/kubepods.slice/kubepods-burstable.slice" \
		"$top/kubepods.slice" "$top"; do
		[ -d "$d" ] && rmdir "$d" 2>/dev/null
	done
	return 0
}
agent_cleanup_hook=meta_cleanup
mkdir -p "$ctr" || {
	skip "cannot create cgroups under $cg2"
}

${CC:-cc} -O2 -g -o "$tmp/spin" tests/workloads/spin.c || die "cannot build spin.c"
for n in ctrspin metaspin otherspin exclspin; do cp "$tmp/spin" "$tmp/$n"; done
mport=$(free_port)
mkdir -p "$tmp/dump"
agent_start_server
# The stand-in kubelet: GET /pods with "Authorization: Bearer <token>".
kport=$(free_port)
printf 'sa-token-%s\n' "$RANDOM$RANDOM" >"$tmp/ktoken"
python3 - "$kport" "$(head -n 1 "$tmp/ktoken")" "$uid" "$hex" >"$tmp/kubelet.log" 2>&1 <<'PY' &
import http.server, json, sys
port, token, uid, cid = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
pods = {"kind": "PodList", "apiVersion": "v1", "items": [{
    "metadata": {"name": "checkout-7d9f8c6b5-x2x4q", "namespace": "shop", "uid": uid,
                 "labels": {"app": "checkout", "pod-template-hash": "7d9f8c6b5"},
                 "annotations": {"team": "payments"},
                 "ownerReferences": [{"kind": "ReplicaSet", "name": "checkout-7d9f8c6b5"}]},
    "spec": {"nodeName": "node-7"},
    "status": {"containerStatuses": [{"name": "app", "containerID": "containerd://" + cid}]}}]}
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.path == "/pods" and self.headers.get("Authorization") == "Bearer " + token
        body = json.dumps(pods if ok else {"kind": "Status", "code": 401}).encode()
        self.send_response(200 if ok else 401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        print(self.path, 200 if ok else 401, flush=True)
http.server.ThreadingHTTPServer(("127.0.0.1", port), H).serve_forever()
PY
extra_pids=$!
# Up to 30 s: Python starts slowly on a loaded machine.
wait_for 30 'curl -s -o /dev/null "http://127.0.0.1:$kport/pods"' || die "the stand-in kubelet did not start"
agent_start --server "$base" --interval 1s --frequency 49 --dump "$tmp/dump" \
	--include-cgroup "$pod" --include-exe metaspin --exclude-exe exclspin --command-line \
	--metrics-listen "127.0.0.1:$mport" --k8s --k8s-kubelet "http://127.0.0.1:$kport/pods" \
	--k8s-token-file "$tmp/ktoken"
echo "ok agent attached"

# Into the container's cgroup before exec, so every sample is from inside.
sh -c "echo \$\$ >'$ctr/cgroup.procs' && exec '$tmp/ctrspin' $RUN" >/dev/null &
p1=$!
# Exec races, twenty times: a bash started outside the pod (so no exec
# event announced it) moves itself into the pod, spins about 20 ms there
# (sampled: nothing excludes bash) and becomes exclspin. The agent reads
# those samples up to its 100 ms poll period later, after the exec: they
# must not be named after the new image.
for r in $(seq 20); do
	bash -c "echo \$\$ >'$ctr/cgroup.procs' && for ((i = 0; i < 5000; i++)); do :; done &&
		exec '$tmp/exclspin' 0.2" >/dev/null
done &
p2=$!
unshare --pid --fork --mount-proc "$tmp/metaspin" "$RUN" marker-arg-7731 >/dev/null &
p3=$!
"$tmp/otherspin" "$RUN" >/dev/null &
p4=$!
kubelet_pid=$extra_pids
extra_pids="$kubelet_pid $p1 $p2 $p3 $p4"
wait $p1 $p2 $p3 $p4 || die "a workload failed"
extra_pids=$kubelet_pid
filtered=$(agent_metric "$mport" 'profd_agent_bpf_events_total{event="filtered"}')
stale=$(agent_metric "$mport" 'profd_agent_lost_samples_total{reason="stale_image"}')
sleep 0.3
agent_stop

values() { curl -fs "$base/api/v1/labels/$1/values"; }
names=$(values process.executable.name)
for want in ctrspin metaspin; do
	grep -q "\"$want\"" <<<"$names" || die "no samples of $want: $names"
done
for unwanted in otherspin exclspin; do
	! grep -q "\"$unwanted\"" <<<"$names" || die "$unwanted was sampled: $names"
done
[ "${filtered%.*}" -gt 0 ] || die "the BPF side filtered nothing (filtered=$filtered)"
echo "ok targeting: ctrspin (cgroup) and metaspin (exe) sampled; otherspin, exclspin not;" \
	"$filtered ticks skipped in the kernel, $stale samples of a replaced image refused"
values container.id | grep -q "\"$hex\"" || die "container.id $hex missing: $(values container.id)"
values k8s.pod.uid | grep -q "\"$uid\"" || die "k8s.pod.uid $uid missing: $(values k8s.pod.uid)"
agent_flame 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' \
	"{container.id=\"$hex\",k8s.pod.uid=\"$uid\",process.executable.name=\"ctrspin\"}" "$tmp/ctr.json"
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["root"]["total"] > 0 else 1)' \
	"$tmp/ctr.json" || die "no samples under the container's labels"
echo "ok container.id=${hex:0:12}... k8s.pod.uid=$uid on the container's process"
for kv in k8s.pod.name=checkout-7d9f8c6b5-x2x4q k8s.namespace.name=shop k8s.node.name=node-7 \
	k8s.container.name=app k8s.deployment.name=checkout k8s.replicaset.name=checkout-7d9f8c6b5 \
	k8s.pod.label.app=checkout k8s.pod.annotation.team=payments; do
	values "${kv%%=*}" | grep -q "\"${kv#*=}\"" || die "--k8s: ${kv%%=*} is not ${kv#*=}: $(values "${kv%%=*}")"
done
agent_flame 'process_cpu:cpu:nanoseconds:cpu:nanoseconds' \
	'{k8s.namespace.name="shop",k8s.pod.name="checkout-7d9f8c6b5-x2x4q",k8s.container.name="app",process.executable.name="ctrspin"}' "$tmp/k8s.json"
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["root"]["total"] > 0 else 1)' \
	"$tmp/k8s.json" || die "no samples under the pod's kubelet names"
grep -q "^/pods 200" "$tmp/kubelet.log" || die "the kubelet never got the token: $(head -3 "$tmp/kubelet.log")"
! grep -q "$(head -n 1 "$tmp/ktoken")" "$tmp/agent.log" || die "the service-account token shows in the agent log"
echo "ok --k8s: pod name, namespace, node, container, deployment, labels, annotations from the kubelet"
values process.vpid | grep -q '"1"' || die "process.vpid 1 missing: $(values process.vpid)"
values process.command_line | grep -q "metaspin $RUN marker-arg-7731" ||
	die "process.command_line missing: $(values process.command_line)"
echo "ok process.vpid=1 for the process in its own PID namespace; process.command_line"

fmtdump=$(dirname "$PROFD")/tests/tools/fmtdump
[ -x "$fmtdump" ] || fmtdump=$(dirname "$PROFD_FAST")/tests/tools/fmtdump
[ -x "$fmtdump" ] || die "tests/tools/fmtdump is not built"
python3 - "$fmtdump" "$tmp"/dump/*.otlp.pb <<'PY' || die "per-sample labels"
import json, subprocess, sys
n = bad = 0
for f in sys.argv[2:]:
    d = json.loads(subprocess.run([sys.argv[1], "--profile", "0", f], check=True,
                                  capture_output=True, text=True).stdout)
    n += d["samples"]
    for k in ("thread.name", "thread.id", "cpu.logical_number"):
        if d["labels"].get(k, 0) != d["samples"]:
            bad += 1
print(f"ok thread.name, thread.id, cpu.logical_number on every one of {n} samples"
      if n and not bad else f"labels missing in {bad} profiles of {n} samples")
sys.exit(0 if n and not bad else 1)
PY
echo "ok agent metadata and targeting"
