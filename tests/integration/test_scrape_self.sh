#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_scrape_self.sh - `profd server --self-profile` (scrape/selfprof.h):
# the server samples its own CPU while it decodes a few large folded
# uploads; its last samples are stored when it stops; after a restart on
# the same data the series {job="profd-self", service.name="profd-self"}
# holds them as process_cpu, with profd's own functions named by the
# server's query-time symbolizer (request_job, the folded decoder).
source "$(dirname "$0")/scrape_lib.sh"

python3 -c '
import random
random.seed(7)
for i in range(40000):
    print("main;work_%d;leaf_%d %d" % (i % 97, i, random.randint(1, 9)))' >"$tmp/big.folded"
start_server --self-profile
for i in $(seq 1 6); do
	req POST "/ingest?name=load$i.cpu&format=folded" --data-binary "@$tmp/big.folded"
done
check "the uploads worked" [ "$code" = 200 ]
require_alive "while self-profiling"
stop_server TERM
check "server with --self-profile stops cleanly (exit 0)" [ "$stop_rc" = 0 ]
start_server
t=$(total "$CPU" '{job="profd-self",service.name="profd-self"}')
echo "# self CPU total: $t ns"
check "self profile stored (process_cpu, job=profd-self)" [ "${t:-0}" -gt 0 ]
checkx "profd's own frames are symbolized (request_job, the ingest worker's)" 'has_frame request_job'
checkx "... down to the folded decoder" 'has_frame fmt_folded'
stop_server TERM
finish
