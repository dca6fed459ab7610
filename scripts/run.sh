#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The main job: profd server on http://127.0.0.1:4040 (data in ./data) and
# profd agent sampling this host and sending to it. Ctrl-C (or SIGTERM:
# a background job without a terminal ignores SIGINT) stops both.
# Environment: PROFD_LISTEN (127.0.0.1:4040), PROFD_DATA (./data),
# PROFD_AGENT_ARGS (extra agent flags, e.g. "--frequency 99").
set -uo pipefail
cd "$(dirname "$0")/.."
listen=${PROFD_LISTEN:-127.0.0.1:4040}
data=${PROFD_DATA:-./data}
bin=build/profd
mkdir -p "$data"
if curl -fs "http://$listen/healthz" >/dev/null 2>&1; then
	echo "run: something already answers on $listen (another profd?); stop it, or run" \
		"this one elsewhere: PROFD_LISTEN=127.0.0.1:4041 PROFD_DATA=./data2 make run" >&2
	exit 1
fi

# Each in its own session: a terminal Ctrl-C reaches only this script, whose
# trap stops the agent first (it sends its last interval) and then the server.
# Server and agent share this host: its files may name the agent's frames
# (--symbol-path /; the build ID must still match).
setsid "$bin" server --listen "$listen" --data "$data" --ui ui --symbol-path / &
server=$!
for _ in $(seq 1 100); do
	curl -fs "http://$listen/healthz" >/dev/null 2>&1 && break
	kill -0 "$server" 2>/dev/null || { echo "run: profd server exited" >&2; exit 1; }
	sleep 0.1
done
# shellcheck disable=SC2086
setsid "$bin" agent --server "http://$listen" ${PROFD_AGENT_ARGS:-} &
agent=$!

stop() {
	local rc=${1:-0}
	trap - INT TERM
	echo
	echo "run: stopping agent and server"
	kill -TERM "$agent" 2>/dev/null
	wait "$agent" 2>/dev/null
	kill -TERM "$server" 2>/dev/null
	wait "$server" 2>/dev/null
	exit "$rc"
}
trap stop INT TERM

echo
echo "  profd explorer: http://$listen/"
echo "  (CPU profiles of every process on this host appear within ~10 s; Ctrl-C stops)"
echo
# Either process exiting ends the job.
wait -n "$server" "$agent"
rc=$?
echo "run: a profd process exited (status $rc); stopping the other" >&2
stop 1
