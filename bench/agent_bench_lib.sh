# SPDX-License-Identifier: Apache-2.0
# agent_bench_lib.sh - sourced by the agent benches (bench_agent.sh,
# _interp.sh, _jit.sh, _trace.sh):
#
#   agent_bench_init NAME  skip without root or kernel BTF, fail without
#                  $PROFD; $tmp (/tmp/profd-bench-NAME.*), pids=() (killed
#                  at exit), kernel.bpf_stats_enabled restored at exit
#   free_port      a free loopback port
#   cpu_ticks PID  utime + stime of PID, in clock ticks (getconf CLK_TCK)
#   rss_kb PID / hwm_kb PID   current / peak resident set, KiB
#   bpf_ns PID     run_time_ns (kernel.bpf_stats_enabled=1) of the BPF
#                  programs PID holds, by their ids in its fds' fdinfo
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
hwm_kb() { awk '/^VmHWM/ { print $2 }' "/proc/$1/status"; }
rss_kb() { awk '/^VmRSS/ { print $2 }' "/proc/$1/status"; }
bpf_ns() {
	local ids
	ids=$(grep -h '^prog_id:' /proc/"$1"/fdinfo/* 2>/dev/null | awk '{ print $2 }' | sort -u | tr '\n' ' ')
	bpftool prog show --json 2>/dev/null | python3 -c '
import json, sys
ids = set(int(x) for x in sys.argv[1].split())
print(sum(p.get("run_time_ns", 0) for p in json.load(sys.stdin) if p.get("id") in ids))' "$ids"
}

agent_bench_init() {
	[ "$(id -u)" = 0 ] || { echo "skip: needs root"; exit 0; }
	[ -r /sys/kernel/btf/vmlinux ] || { echo "skip: no kernel BTF"; exit 0; }
	[ -x "$PROFD" ] || { echo "FAIL: $PROFD is not built"; exit 1; }
	tmp=$(mktemp -d "/tmp/profd-bench-$1.XXXXXX")
	pids=()
	old_stats=$(sysctl -n kernel.bpf_stats_enabled 2>/dev/null || echo 0)
	trap agent_bench_cleanup EXIT
}

agent_bench_cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	sysctl -qw kernel.bpf_stats_enabled="$old_stats" 2>/dev/null || true
	rm -rf "$tmp"
}
