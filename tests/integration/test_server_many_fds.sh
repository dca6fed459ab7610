#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_server_many_fds.sh - the server starts and serves with every
# descriptor it makes above FD_SETSIZE (1024), as when its parent passes
# it many open files or its datasets' files fill the low numbers before
# the HTTP daemons start. In select(2) mode libmicrohttpd refused to start
# ("file descriptor for inter-thread communication channel exceeds maximum
# value") and would close every connection numbered past 1023; the daemons
# wait in epoll(7) (src/server/http.c start_daemon). Checked: the server
# starts, ingests on keep-alive connections and answers a query, with
# descriptors 3..1100 taken.
source "$(dirname "$0")/ingest_lib.sh"

real=$(realpath "$PROFD")
PROFD=$tmp/profd-many-fds
cat >"$PROFD" <<'WRAP'
#!/usr/bin/env python3
import os, sys
fd = 0
while fd < 1100:  # the lowest free numbers first: 3..1100 end up taken
    fd = os.open("/dev/null", os.O_RDONLY)
    os.set_inheritable(fd, True)
os.execv(os.environ["PROFD_REAL"], [os.environ["PROFD_REAL"]] + sys.argv[1:])
WRAP
export PROFD_REAL=$real
chmod +x "$PROFD"
start_server
check "the server started with descriptors 3..1100 taken" [ -n "$port" ]
T0=1700000000000
"$MKOTLP" --attr service.name=api --time-ms $T0 --stack 'main;hot=70' --stack 'main;cold=30' \
	"$tmp/a.pb"
# two requests on one connection: the second waits for the socket in poll
post=(--noproxy '*' -s -o /dev/null -w '%{http_code} ' -H 'Content-Type: application/x-protobuf'
	--data-binary "@$tmp/a.pb" "$base/v1development/profiles")
code=$(curl "${post[@]}" --next "${post[@]}")
check "two ingest requests on one keep-alive connection -> 200 200 ($code)" [ "$code" = "200 200 " ]
checkx "the flame graph holds both (200 samples)" '[ "$(total "$CPU" "{}")" = 200 ]'
fds=$(ls "/proc/$server_pid/fd" | wc -l)
checkx "the server holds more than 1024 descriptors ($fds)" '[ "$fds" -gt 1024 ]'
require_alive "at the end"
stop_server TERM
check "SIGTERM stops cleanly" [ "$stop_rc" = 0 ]
finish
