#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_deploy_image.sh - the container image (scripts/image.sh, make image)
# under Debian's podman, configured as deploy/ configures it:
#   - the server runs from the image as its unprivileged user with the
#     manifests' config (deploy/base/server/configmap.yaml, tokens from the
#     environment), the data on a volume;
#   - the agent from the image, --pid=host --privileged, profiles a
#     workload on the host (tests/workloads/spin.c: hot_a ~70 % of
#     hot_a + hot_b), named through its debug info upload;
#   - a workload in another podman container carries its container.id;
#   - the agent with exactly the capabilities of deploy/base/agent/
#     daemonset.yaml (all others dropped) does the same, and without each
#     one of them something is lost: BPF or PERFMON, the agent cannot
#     start; SYS_PTRACE, the workload's functions are not named; SYSLOG,
#     the kernel's symbols are hidden (so none is asked for in vain);
#   - an agent on the host (not in a container) sends to the server's
#     container, and its workload's share is right;
#   - the data survives the server container's restart with the volume.
# Skips (with the reason) without root, BTF, podman or a container
# runtime podman can drive here.
source "$(dirname "$0")/server_lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (the agent's eBPF)"
[ -r /sys/kernel/btf/vmlinux ] || skip "no kernel BTF"
command -v podman >/dev/null || skip "podman is not installed (make deps)"
command -v node >/dev/null && [ -d tests/js/node_modules/yaml ] ||
	skip "node or tests/js/node_modules is missing"
BIN=${PROFD_FAST:-build/profd}
IMAGE=localhost/profd-test:$$
VOL=profd-test-$$
NAMES=()
at_exit() {
	for c in "${NAMES[@]}"; do podman rm -f -v -t 2 "$c" >/dev/null 2>&1; done
	podman volume rm -f "$VOL" >/dev/null 2>&1
	podman rmi -f "$IMAGE" >/dev/null 2>&1
}
IMAGE=$IMAGE PROFD_BIN=$BIN bash scripts/image.sh >"$tmp/image.out" 2>&1 ||
	{ cat "$tmp/image.out"; die "make image"; }
ok "$(cat "$tmp/image.out")"
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
checkx "the image is small ($((size / 1024 / 1024)) MiB)" '[ "$size" -lt 100000000 ]'

# A runtime that works on this host: crun (podman's default) refuses
# hybrid cgroup hierarchies, runc does not; rlimits above the hard ones
# cannot be set without CAP_SYS_RESOURCE.
nofile=$(ulimit -Hn)
[ "$nofile" = unlimited ] && nofile=1048576
RUN=
for rt in "" "--runtime runc"; do
	# shellcheck disable=SC2086
	if podman run --rm $rt --ulimit "nofile=$nofile:$nofile" --ulimit nproc=4096:4096 \
		--network none "$IMAGE" --version >"$tmp/rt.out" 2>&1; then
		RUN="podman run $rt --ulimit nofile=$nofile:$nofile --ulimit nproc=4096:4096"
		break
	fi
done
if [ -z "$RUN" ]; then
	skip "podman cannot run a container here: $(tail -1 "$tmp/rt.out")"
fi
ok "podman runs the image ($(cat "$tmp/rt.out"); ${RUN#podman run })"

# What the manifests say.
yq() { # yq FILE JS-EXPRESSION-OVER-docs
	node -e '
const YAML = require(process.cwd() + "/tests/js/node_modules/yaml");
const docs = YAML.parseAllDocuments(require("fs").readFileSync(process.argv[1], "utf8")).map((d) => d.toJS());
console.log(eval(process.argv[2]));' "$1" "$2"
}
yq deploy/base/server/configmap.yaml 'docs[0].data["profd.yaml"]' >"$tmp/profd.yaml"
caps=$(yq deploy/base/agent/daemonset.yaml 'docs[0].spec.template.spec.containers[0].securityContext.capabilities.add.join(" ")')
check "the manifests' capabilities read ($caps)" [ -n "$caps" ]
AT=agent-secret-$$ QT=query-secret-$$
printf '%s' "$AT" >"$tmp/agent-token"
chmod 644 "$tmp/agent-token" "$tmp/profd.yaml"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base=http://127.0.0.1:$port
start_srv() {
	NAMES+=("profd-srv-$$-$1")
	$RUN -d --name "profd-srv-$$-$1" --network host -v "$VOL:/data" \
		-v "$tmp/profd.yaml:/etc/profd/profd.yaml:ro" \
		-e PROFD_AGENT_TOKEN="$AT" -e PROFD_QUERY_TOKEN="$QT" -e PROFD_FORWARDER_TOKEN=unused \
		"$IMAGE" server --listen "127.0.0.1:$port" --data /data --ui /usr/share/profd/ui \
		--config /etc/profd/profd.yaml >/dev/null || return 1
	wait_for 30 'curl -fs --noproxy "*" "$base/healthz" >/dev/null 2>&1' && return 0
	podman logs "profd-srv-$$-$1" 2>&1 | tail -5
	return 1
}
podman volume create "$VOL" >/dev/null
start_srv 1 || die "the server container starts"
user=$(podman top "profd-srv-$$-1" user | awk 'NR == 2 { print $1 }')
check "the server runs from the image as its unprivileged user ($user)" [ "$user" = profd ]

CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
q() { curl -s --noproxy '*' -H "Authorization: Bearer $QT" "$base$1"; }
# shares EXE: "hot_a_share total named" of the process's flame graph
shares() {
	q "/api/v1/flamegraph?type=$CPU&from=now-10m&to=now&query=%7Bprocess.executable.name%3D%22$1%22%7D" |
		python3 -c '
import json, sys
d = json.load(sys.stdin)
acc = {}
def walk(n):
    acc[n["name"]] = acc.get(n["name"], 0) + n["self"]
    for c in n["children"]:
        walk(c)
walk(d["root"])
a, b = acc.get("hot_a", 0), acc.get("hot_b", 0)
print(round(100 * a / (a + b), 1) if a + b else 0, d["total"], int(a + b > 0))'
}
cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls \
	-fno-inline -o "$tmp/spin" tests/workloads/spin.c || die "build spin"
# agent NAME [podman args...]: an agent container sending to the server
agent() {
	local name=profd-agent-$$-$1
	shift
	NAMES+=("$name")
	$RUN -d --name "$name" --user 0 --pid=host --network host "$@" \
		-v "$tmp/agent-token:/etc/profd/agent-token:ro" "$IMAGE" agent \
		--server "$base" --bearer-token-file /etc/profd/agent-token --host-name testnode \
		--interval 2s --include-exe spin-host --include-exe spin-ctr --include-exe spin-caps \
		--include-exe spin-noptrace --debuginfo-rate 64MiB >/dev/null
}
# workload EXE: spin under that name on the host, 3 s of CPU
workload() {
	cp "$tmp/spin" "$tmp/$1"
	SPIN_CPU_SECONDS=3 "$tmp/$1" 8 >"$tmp/$1.out"
	sleep 5 # the last interval and the debug info upload
}
stop_agent() { podman rm -f -v -t 5 "profd-agent-$$-$1" >/dev/null 2>&1; }

# --- privileged agent: the host's workload, a container's ---------------------------------------
agent priv --privileged
sleep 3
workload spin-host
read -r share total named < <(shares spin-host)
checkx "privileged agent: the host's spin is named, hot_a $share % of hot_a + hot_b (want 70 +- 12)" \
	'[ "$named" = 1 ] && python3 -c "import sys; sys.exit(not 58 <= $share <= 82)"'
hosts=$(q "/api/v1/labels/host.name/values?from=now-10m&to=now")
checkx "samples carry --host-name ($hosts)" 'echo "$hosts" | grep -c "\"testnode\"" >/dev/null'
NAMES+=("spin-ctr-$$")
cp "$tmp/spin" "$tmp/spin-ctr"
cid=$($RUN -d --name "spin-ctr-$$" --network none -v "$tmp/spin-ctr:/spin-ctr:ro" \
	--entrypoint /spin-ctr "$IMAGE" 6)
podman wait "spin-ctr-$$" >/dev/null 2>&1
sleep 4
ids=$(q "/api/v1/labels/container.id/values?from=now-10m&to=now&query=%7Bprocess.executable.name%3D%22spin-ctr%22%7D")
checkx "a workload in another container carries its container.id (${cid:0:12}: $ids)" \
	'[ -n "$cid" ] && echo "$ids" | grep -c "\"$cid\"" >/dev/null'
stop_agent priv

# --- exactly the manifests' capabilities ----------------------------------------------------------
capargs() { # capargs [CAP-TO-LEAVE-OUT]: --cap-add for the manifests' list
	local c
	for c in $caps; do [ "$c" = "${1:-}" ] || printf -- '--cap-add=%s ' "$c"; done
}
# shellcheck disable=SC2046
agent caps --cap-drop=all $(capargs) --security-opt seccomp=unconfined
sleep 3
workload spin-caps
read -r share total named < <(shares spin-caps)
checkx "agent with only $caps: spin named, hot_a $share % (want 70 +- 12)" \
	'[ "$named" = 1 ] && python3 -c "import sys; sys.exit(not 58 <= $share <= 82)"'
podman logs "profd-agent-$$-caps" >"$tmp/agent.caps.log" 2>&1
checkx "... and the kernel's symbols readable (no 'kernel frames will be sent unnamed')" \
	'! grep -c "kernel frames will be sent unnamed" "$tmp/agent.caps.log" >/dev/null'
stop_agent caps

# --- each capability is used -------------------------------------------------------------------
for c in $caps; do
	# shellcheck disable=SC2046
	agent "no-$c" --cap-drop=all $(capargs "$c") --security-opt seccomp=unconfined
	case $c in
	BPF | PERFMON)
		rc=$(timeout 20 podman wait "profd-agent-$$-no-$c" 2>/dev/null)
		why=$(podman logs "profd-agent-$$-no-$c" 2>&1 | grep -v '^ *$' | tail -1 | cut -c1-120)
		checkx "without $c the agent cannot start (exit ${rc:-still running}: $why)" \
			'[ -n "$rc" ] && [ "$rc" != 0 ]'
		;;
	SYS_PTRACE)
		sleep 3
		workload spin-noptrace
		read -r share total named < <(shares spin-noptrace)
		checkx "without SYS_PTRACE the workload's functions are not named ($total ns sampled, named $named)" \
			'[ "$named" = 0 ]'
		;;
	SYSLOG)
		sleep 3
		podman logs "profd-agent-$$-no-$c" >"$tmp/agent.nosyslog.log" 2>&1
		checkx "without SYSLOG the kernel's symbols are hidden" \
			'grep -c "kernel frames will be sent unnamed" "$tmp/agent.nosyslog.log" >/dev/null'
		;;
	*)
		fail "the test does not know how to show that $c is used"
		;;
	esac
	stop_agent "no-$c"
done

# --- an agent on the host, outside any container, sends to the server's container ----------------
"$BIN" agent --server "$base" --bearer-token-file "$tmp/agent-token" --host-name hostagent \
	--interval 2s --include-exe spin-outside --debuginfo-rate 64MiB >"$tmp/hostagent.log" 2>&1 &
hostagent=$!
if wait_for -p "$hostagent" 30 'grep -q "agent started" "$tmp/hostagent.log"' \
	"the host's agent starts ($(tail -1 "$tmp/hostagent.log"))"; then
	workload spin-outside
	read -r share total named < <(shares spin-outside)
	checkx "an agent outside the containers sends to the server's: hot_a $share % (want 70 +- 12)" \
		'[ "$named" = 1 ] && python3 -c "import sys; sys.exit(not 58 <= $share <= 82)"'
	hosts=$(q "/api/v1/labels/host.name/values?from=now-10m&to=now&query=%7Bprocess.executable.name%3D%22spin-outside%22%7D")
	check "... and those samples are the host agent's (host.name $hosts)" [ "$hosts" != "${hosts/\"hostagent\"/}" ]
fi
kill "$hostagent" 2>/dev/null
wait "$hostagent" 2>/dev/null

# --- the data survives the server container's restart -------------------------------------------
before=$(shares spin-host)
podman stop -t 10 "profd-srv-$$-1" >/dev/null
podman rm -v "profd-srv-$$-1" >/dev/null
start_srv 2 || fail "the server container starts again on the volume"
after=$(shares spin-host)
checkx "after a restart on the volume the data is all there ($before -> $after)" \
	'[ "$before" = "$after" ] && [ "${after#* }" != "0 0" ]'
finish_counts
