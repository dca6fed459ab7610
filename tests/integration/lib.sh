# SPDX-License-Identifier: Apache-2.0
# lib.sh - what every tests/integration/test_*.sh sources first (directly
# or through server_lib.sh, ingest_lib.sh, scrape_lib.sh, agent_lib.sh,
# which add their domain pieces on top). Sourced, not run; it sets no
# shell options (each test keeps its own `set`). Output is what
# tests/run.sh and a reader of a CI log expect: one line per check,
# "ok - WHAT" or "FAIL - WHAT", and "skip: WHY" for a test that cannot run
# here (exit 0).
#
#   ok WHAT              print "ok - WHAT", count it in $npass
#   fail WHAT            print "FAIL - WHAT", count it in $nfail, go on
#   die WHAT             fail WHAT, run the hook on_die if the test (or its
#                        helper library) defines one (agent_lib.sh prints
#                        the logs there), exit 1
#   skip WHY             print "skip: WHY", exit 0
#   finish_counts        exit 0 when no check failed, else 1
#   need_bin FILE [HINT] die unless FILE is an executable ("FILE is not
#                        built" and HINT)
#   need_corpus DIR      skip unless DIR (a corpus folder) exists
#   lib_tmp              $tmp: a new temporary folder; at exit, the test's
#                        own at_exit function runs if it defines one,
#                        then the functions named in lib_exit_hooks in
#                        order (the helper libraries end their servers
#                        there), then background jobs are waited for, and
#                        $tmp is removed, or kept with "logs kept in $tmp"
#                        when a check failed or keep_tmp=1
#   free_port            print a free loopback TCP port
#   wait_for [-p PID] SECONDS 'SHELL EXPRESSION' [MESSAGE]
#                        poll the expression (evaluated in the caller's
#                        scope, positional parameters excepted, every
#                        $WAIT_STEP s, default 0.1) until it holds: 0; or
#                        until SECONDS have passed: 1; with -p, stop early
#                        when process PID has exited: 2. With MESSAGE, a
#                        1 or 2 also prints "FAIL - MESSAGE" (counted).
#                        It returns as soon as the expression holds, so
#                        give a generous SECONDS: it bounds a hang and is
#                        no latency check (CI runs sanitized builds on a
#                        loaded 2-core machine).
#
# Before sourcing: the repository root as working directory.

[ -z "${PROFD_LIB_SH:-}" ] || return 0 # sourced once, by whichever comes first
PROFD_LIB_SH=1
npass=${npass:-0} nfail=${nfail:-0}
keep_tmp=${keep_tmp:-0}
lib_exit_hooks=()

ok() {
	echo "ok - $*"
	npass=$((npass + 1))
}

fail() {
	echo "FAIL - $*"
	nfail=$((nfail + 1))
}

die() {
	fail "$@"
	if declare -F on_die >/dev/null; then on_die; fi
	exit 1
}

skip() {
	echo "skip: $*"
	exit 0
}

finish_counts() {
	if [ "$nfail" -eq 0 ]; then exit 0; fi
	exit 1
}

need_bin() {
	if [ ! -x "$1" ]; then
		die "$1 is not built${2:+ ($2)}"
	fi
}

need_corpus() {
	if [ ! -d "$1" ]; then
		skip "no corpus at $1 (set PROFD_CORPUS)"
	fi
}

lib_tmp() {
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/profd-$(basename "$0" .sh).XXXXXX")
	trap lib_cleanup EXIT
}

lib_cleanup() {
	local h
	if declare -F at_exit >/dev/null; then at_exit || true; fi
	for h in "${lib_exit_hooks[@]}"; do
		"$h" || true
	done
	wait 2>/dev/null || true
	if [ "$nfail" -gt 0 ] || [ "$keep_tmp" = 1 ]; then
		echo "logs kept in $tmp"
	else
		rm -rf "$tmp"
	fi
}

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# The clock in milliseconds (bash 5's EPOCHREALTIME, else date).
lib_now_ms() {
	if [ -n "${EPOCHREALTIME:-}" ]; then
		local t=${EPOCHREALTIME/[.,]/}
		echo $((t / 1000))
	else
		echo $(($(date +%s%N) / 1000000))
	fi
}

wait_for() {
	# Names no caller uses: the expression sees the caller's variables.
	local _wf_pid= _wf_secs _wf_expr _wf_msg _wf_end _wf_rc=1
	if [ "$1" = -p ]; then
		_wf_pid=$2
		shift 2
	fi
	_wf_secs=$1 _wf_expr=$2 _wf_msg=${3:-}
	_wf_end=$(($(lib_now_ms) + _wf_secs * 1000))
	while :; do
		if eval "$_wf_expr"; then return 0; fi
		if [ -n "$_wf_pid" ] && ! kill -0 "$_wf_pid" 2>/dev/null; then
			_wf_rc=2
			break
		fi
		[ "$(lib_now_ms)" -lt "$_wf_end" ] || break
		sleep "${WAIT_STEP:-0.1}"
	done
	if [ -n "$_wf_msg" ]; then
		if [ $_wf_rc = 2 ]; then
			fail "$_wf_msg (process $_wf_pid exited)"
		else
			fail "$_wf_msg (not within $_wf_secs s)"
		fi
	fi
	return $_wf_rc
}
