#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_deploy_checks.sh - an agent deployed wrong says so instead of
# sending unattributable stacks:
#   - started in a PID namespace other than the host's (unshare --pid, as
#     a container without host PID), it refuses to start with a message
#     that names the fix; with --allow-pidns it runs;
#   - with kernel.kptr_restrict=2 (/proc/kallsyms all zeros) it warns once
#     that kernel frames go unnamed, and still samples (the sysctl is put
#     back on exit).
# Needs root, kernel BTF and unshare; prints "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init
command -v unshare >/dev/null || {
	skip "unshare is not installed"
}
mkdir -p "$tmp/dump"

rc=0
unshare --pid --fork --mount-proc "$PROFD" agent --dump "$tmp/dump" --duration 1s \
	>"$tmp/pidns.log" 2>&1 || rc=$?
[ "$rc" != 0 ] || die "agent in a PID namespace started (want a refusal)"
grep -q "not in the host's PID namespace" "$tmp/pidns.log" &&
	grep -q -- "--pid=host" "$tmp/pidns.log" && grep -q "hostPID: true" "$tmp/pidns.log" ||
	die "refusal does not say why and how: $(cat "$tmp/pidns.log")"
echo "ok refused in a PID namespace (exit $rc): $(head -c 120 "$tmp/pidns.log")..."
unshare --pid --fork --mount-proc "$PROFD" agent --dump "$tmp/dump" --duration 1s --allow-pidns \
	>"$tmp/pidns2.log" 2>&1 || die "--allow-pidns: agent failed: $(tail -5 "$tmp/pidns2.log")"
grep -q "agent started" "$tmp/pidns2.log" || die "--allow-pidns: no start in the log"
echo "ok --allow-pidns runs"

old=$(cat /proc/sys/kernel/kptr_restrict)
restore_kptr() { echo "$old" >/proc/sys/kernel/kptr_restrict; }
agent_cleanup_hook=restore_kptr
echo 2 >/proc/sys/kernel/kptr_restrict
"$PROFD" agent --dump "$tmp/dump" --duration 1s >"$tmp/kptr.log" 2>&1 ||
	die "agent with kptr_restrict=2 failed: $(tail -5 "$tmp/kptr.log")"
restore_kptr
n=$(grep -c "kernel frames will be sent unnamed" "$tmp/kptr.log" || true)
[ "$n" = 1 ] || die "want one kptr_restrict warning, got $n: $(head -5 "$tmp/kptr.log")"
grep -q "kptr_restrict=2" "$tmp/kptr.log" || die "warning does not name the setting"
echo "ok kptr_restrict=2: warned once"
"$PROFD" agent --dump "$tmp/dump" --duration 1s >"$tmp/kptr0.log" 2>&1 || die "agent failed"
! grep -q "kernel frames will be sent unnamed" "$tmp/kptr0.log" ||
	die "warning with kptr_restrict=$old"
echo "ok kptr_restrict=$old: no warning"
echo "ok agent deploy checks"
