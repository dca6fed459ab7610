#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_deploy_manifests.sh - deploy/ passes a Kubernetes schema validation
# run offline (tests/js/validate_manifests.mjs: kubernetes-models, pinned
# in tests/js/package.json) for the base and every overlay, and the policy
# that the agent's DaemonSet asks for no capability it does not use (each
# one named with its reason; which ones are really needed is shown by
# test_deploy_image.sh, which runs the agent with exactly this list). The
# checks must fail on broken manifests too: a wrong type, an unknown
# capability, a privileged container, a server running as root. The
# flags the manifests pass are ones `profd` takes.
source "$(dirname "$0")/server_lib.sh"

if ! command -v node >/dev/null || [ ! -d tests/js/node_modules/kubernetes-models ]; then
	skip "node or tests/js/node_modules (npm ci in tests/js) is missing"
fi
V="node tests/js/validate_manifests.mjs"
$V deploy >"$tmp/ok.out" 2>&1
rc=$?
cat "$tmp/ok.out" | sed 's/^/# /'
check "deploy/ validates, base and overlays (exit $rc)" [ "$rc" = 0 ]
checkx "every object was checked ($(grep -c '^valid' "$tmp/ok.out") objects)" \
	'[ "$(grep -c "^valid" "$tmp/ok.out")" -ge 20 ]'
checkx "the agent-only overlay points the agent elsewhere" \
	'grep "^overlays/agent-only: DaemonSet" "$tmp/ok.out" | grep -c -- "--server=https://profiles.example.com" >/dev/null'

# mutate NAME SED-EXPR FILE: a copy of deploy/ with FILE edited; the validator must refuse it
mutate() {
	rm -rf "$tmp/bad" && cp -r deploy "$tmp/bad"
	sed -i "$2" "$tmp/bad/$3"
	$V "$tmp/bad" >"$tmp/bad.out" 2>&1
	local brc=$? why
	why=$(grep -m1 '^problem' "$tmp/bad.out" | cut -c1-160)
	checkx "refused: $1 ($why)" '[ "$brc" = 1 ] && [ -n "$why" ]'
}
mutate "hostPID as a string" 's/hostPID: true/hostPID: "yes"/' base/agent/daemonset.yaml
mutate "an extra capability" 's/add: \["BPF", /add: ["SYS_ADMIN", "BPF", /' base/agent/daemonset.yaml
mutate "a capability without its reason" '/^#   SYSLOG/d' base/agent/daemonset.yaml
mutate "a privileged agent" 's/privileged: false/privileged: true/' base/agent/daemonset.yaml
mutate "a server as root" 's/runAsNonRoot: true/runAsNonRoot: false/' base/server/statefulset.yaml
mutate "a port that is not a number" 's/containerPort: 4040}/containerPort: http}/' base/server/statefulset.yaml
mutate "an overlay patch that misses" 's|/args/1|/args/99|' overlays/agent-only/kustomization.yaml

# The flags in the manifests exist.
for role in agent server scrape; do
	"$PROFD" "$role" --help >"$tmp/help.$role" 2>&1
done
flags=$(grep -ho -- '- --[a-z-]*' deploy/base/*/*.yaml | sort -u | sed 's/^- //')
missing=
for f in $flags; do
	grep -h -c -- "$f" "$tmp"/help.* | grep -c -v '^0$' >/dev/null || missing="$missing $f"
done
checkx "every flag in the manifests is one profd takes ($(echo $flags | wc -w) flags${missing:+; missing:$missing})" \
	'[ -z "$missing" ]'
# The forwarder's scrape config (kubernetes_sd_configs, relabel rules) is one profd reads.
node -e '
const YAML = require(process.cwd() + "/tests/js/node_modules/yaml");
const d = YAML.parse(require("fs").readFileSync("deploy/base/forwarder/configmap.yaml", "utf8"));
process.stdout.write(d.data["scrape.yaml"]);' >"$tmp/scrape.yaml"
timeout 30 "$PROFD" scrape --config "$tmp/scrape.yaml" --forward http://127.0.0.1:9 --once \
	>"$tmp/scrape.out" 2>&1
rc=$?
checkx "the forwarder's scrape config parses (exit $rc; $(grep -c kubernetes_sd_configs "$tmp/scrape.out") discovery messages)" \
	'[ "$rc" = 0 ]'
sed 's/regex: ".\*true.\*"/regex: "(unclosed"/' "$tmp/scrape.yaml" >"$tmp/scrape-bad.yaml"
timeout 30 "$PROFD" scrape --config "$tmp/scrape-bad.yaml" --forward http://127.0.0.1:9 --once \
	>"$tmp/scrape-bad.out" 2>&1
rc=$?
checkx "... and a broken relabel regex in it would be refused (exit $rc)" '[ "$rc" = 2 ]'
finish_counts
