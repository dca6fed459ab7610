# SPDX-License-Identifier: Apache-2.0
# agent_lib.sh - sourced by the eBPF agent tests (test_agent_*.sh), on top
# of lib.sh (ok / fail / die / skip / wait_for, $tmp): checks that eBPF
# can run here (root, kernel BTF; else "skip: <why>", exit 0), starts and
# stops `profd server` and `profd agent`, queries the server. Environment: PROFD (sanitized build: runs
# the agent, so its user-space code runs under ASan+UBSan), PROFD_FAST
# (optimized build: runs the server).
#
#   agent_lib_init             checks, $tmp; at exit $extra_pids, the agent
#                              and the server are ended, then the function
#                              named by $agent_cleanup_hook runs
#   agent_start_server [PORT]  $server_pid, $base (waits until it answers)
#   agent_start [ARGS...]      $agent_pid ($AGENT_BIN, default $PROFD); skips
#                              the test when eBPF is refused
#   agent_stop                 SIGINT, exit status 0 required, "export closed" logged
#   agent_metric PORT SERIES   a value from the agent's /metrics
#   agent_flame TYPE QUERY OUT [FROM TO]  flame graph JSON into OUT
#   die MSG                    (lib.sh) prints the logs too, keeps $tmp
# A check that fails stops these tests: they use die, not fail.
PROFD=${PROFD:-build-san/profd}
PROFD_FAST=${PROFD_FAST:-build/profd}
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0}
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

agent_lib_init() {
	if [ "$(id -u)" != 0 ]; then
		skip "the eBPF agent needs root"
	fi
	if [ ! -r /sys/kernel/btf/vmlinux ]; then
		skip "no kernel BTF at /sys/kernel/btf/vmlinux"
	fi
	need_bin "$PROFD"
	need_bin "$PROFD_FAST"
	lib_tmp
	server_pid= agent_pid= extra_pids=
	lib_exit_hooks+=(agent_lib_exit)
}

agent_lib_exit() {
	for p in $extra_pids $agent_pid $server_pid; do
		kill "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [ -n "${agent_cleanup_hook:-}" ]; then
		$agent_cleanup_hook || true
	fi
}

# die's hook: the logs, the agent's first (CI keeps only part of a long
# output).
on_die() {
	for f in agent.log server.log; do
		[ -f "$tmp/$f" ] && {
			echo "--- $f (tail)"
			tail -n 20 "$tmp/$f"
		}
	done
	if [ -n "${server_pid:-}" ]; then
		kill -0 "$server_pid" 2>/dev/null && echo "--- server (pid $server_pid) still running" ||
			echo "--- server (pid $server_pid) has exited"
	fi
}

agent_start_server() {
	local port=${1:-$(free_port)}
	base="http://127.0.0.1:$port"
	# Agent and server share this host: the server may read its files (--symbol-path /).
	"$PROFD_FAST" server --listen "127.0.0.1:$port" --data "$tmp/data" --symbol-path / \
		>>"$tmp/server.log" 2>&1 &
	server_pid=$!
	# Up to 30 s (returns as soon as it answers): a loaded CI machine is slow.
	local rc=0
	wait_for -p "$server_pid" 30 'curl -fs "$base/api/v1/profile-types" >/dev/null 2>&1' || rc=$?
	case $rc in
	0) return 0 ;;
	2) die "server exited at start" ;;
	*) die "server not answering on $base" ;;
	esac
}

agent_start() {
	# Empty the log here, not in the background job's redirection: that one
	# runs whenever the job is scheduled, and until then the wait below
	# could read "agent started" from the previous agent's log (seen on a
	# loaded machine: the test went on before this agent had started).
	: >"$tmp/agent.log"
	"${AGENT_BIN:-$PROFD}" agent "$@" >>"$tmp/agent.log" 2>&1 &
	agent_pid=$!
	# Up to 60 s: the sanitized agent loads BPF on a loaded machine.
	wait_for -p "$agent_pid" 60 'grep -qs "agent started" "$tmp/agent.log"' && return 0
	if ! kill -0 "$agent_pid" 2>/dev/null; then
		agent_pid=
		if grep -qiE "needs root|BTF|Operation not permitted|Permission denied" "$tmp/agent.log"; then
			skip "eBPF unavailable here: $(tail -n 1 "$tmp/agent.log")"
		fi
		die "agent exited at start"
	fi
	die "agent did not start"
}

agent_stop() {
	local rc=0
	kill -INT "$agent_pid"
	wait "$agent_pid" || rc=$?
	agent_pid=
	[ "$rc" = 0 ] || die "agent exited $rc after SIGINT"
	grep -q "agent export closed" "$tmp/agent.log" || die "agent did not close its exporter"
}

agent_metric() { # PORT NAME{LABELS} -> value (0 when absent)
	curl -fs "http://127.0.0.1:$1/metrics" | awk -v m="$2" '$1 == m { print $2; found = 1 } END { if (!found) print 0 }'
}

agent_flame() {
	local type=$1 query=$2 out=$3 from=${4:-now-10m} to=${5:-now}
	curl -fsG "$base/api/v1/flamegraph" --data-urlencode "type=$type" \
		--data-urlencode "query=$query" --data-urlencode "from=$from" \
		--data-urlencode "to=$to" --data-urlencode "max_nodes=20000" -o "$out" ||
		die "flame graph query failed: $type $query"
}
