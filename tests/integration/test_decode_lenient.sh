#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_decode_lenient.sh - inputs that are good enough are read, and what
# was left out is said (docs/formats.md, "Skipped, not refused"), in
# `profd top` and in the ingest answer. The inputs come from
# lenient_inputs.py (built byte by byte, each with one flaw):
#   - a JFR recording with one jdk.ActiveSetting of a bad string encoding:
#     its 3 samples read, the period of the good setting applies, top
#     notes "skipped 1 jdk.ActiveSetting events (first: ...)" on stderr
#     and in --json; POST /ingest?format=jfr stores it and answers that
#     line;
#   - async-profiler's nativemem events: --event malloc gives the
#     allocation profile (3 mallocs, 1028 bytes; the Free is not one), the
#     default cpu family says which families the file has, and the server
#     stores memory:alloc_space with jfr_event=malloc;
#   - pprof with a function of id 0: read, the skip noted; /ingest answers
#     it;
#   - UTF-16 folded text with a BOM: read as its UTF-8, also on ingest;
#   - a pre-2016 .cpuprofile (nested head): read like the current layout.
source "$(dirname "$0")/ingest_lib.sh"
python3 tests/integration/lenient_inputs.py "$tmp" || { fail "lenient_inputs.py"; finish; }

top() { # top ARGS...: profd top, stdout in $tmp/top.out, stderr in $tmp/top.err
	"$PROFD" top "$@" >"$tmp/top.out" 2>"$tmp/top.err"
}
jget() { # jget EXPR: fields of $tmp/top.out (JSON) as d, printed space-separated
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
v = eval(sys.argv[2])
print(" ".join(map(str, v)) if isinstance(v, tuple) else v)' "$tmp/top.out" "$1"
}

# --- profd top ---------------------------------------------------------------------------------
top --json "$tmp/bad-setting.jfr"
checkx "JFR with a bad setting string: read (3 samples, 10 ms period of the good setting)" \
	'[ "$(jget "d[\"samples\"], d[\"totals\"][\"cpu\"]")" = "3 30000000" ]'
checkx "... top --json says what was skipped" \
	'[ "$(jget "d[\"skipped\"][\"count\"], d[\"skipped\"][\"what\"]")" = "1 jdk.ActiveSetting events" ]'
checkx "... and stderr notes it with the reason" \
	'grep -q "note: skipped 1 jdk.ActiveSetting events (first: jfr: chunk 0 (at byte 0): event jdk.ActiveSetting: bad string encoding 9 at byte [0-9]*)" "$tmp/top.err"'

top --json --event malloc "$tmp/nativemem.jfr"
checkx "nativemem --event malloc: 3 allocations, 1028 bytes" \
	'[ "$(jget "d[\"totals\"][\"alloc_objects\"], d[\"totals\"][\"alloc_space\"]")" = "3 1028" ]'
top "$tmp/nativemem.jfr"
checkx "nativemem read as cpu: a note names the malloc family" \
	'grep -q "note: jfr: no cpu events; the recording has events of the families malloc (--event)" "$tmp/top.err"'

top --json "$tmp/fn0.pb"
checkx "pprof with function id 0: read (2 samples, 12)" \
	'[ "$(jget "d[\"samples\"], d[\"totals\"][\"samples\"]")" = "2 12" ]'
checkx "... the skip is noted" \
	'grep -q "note: skipped 1 dictionary entries (first: pprof: function\[0\] has the reserved id 0" "$tmp/top.err"'

top --json "$tmp/utf16le.folded"
checkx "UTF-16 folded with a BOM: read as UTF-8 (5 samples, frame café)" \
	'[ "$(jget "d[\"totals\"][\"samples\"], d[\"top\"][\"samples\"][0][\"function\"]")" = "5 café" ]'

top --json "$tmp/old.cpuprofile"
checkx "pre-2016 cpuprofile: 4 samples, hot 2 ms self" \
	'[ "$(jget "d[\"samples\"], d[\"top\"][\"wall\"][0][\"function\"], d[\"top\"][\"wall\"][0][\"self\"]")" = "4 hot 2000000" ]'

# --- ingest ------------------------------------------------------------------------------------
start_server
req POST "/ingest?name=lenient&format=jfr" --data-binary "@$tmp/bad-setting.jfr"
checkx "ingest JFR with a bad setting string: 200" '[ "$code" = 200 ]'
checkx "... the answer says what was skipped" \
	'body_has "skipped 1 jdk.ActiveSetting events (first: jfr: chunk 0"'
checkx "... and the samples are stored" \
	'[ "$(total "$CPU" "{service_name=\"lenient\",jfr_event=\"cpu\"}")" = 30000000 ]'
req POST "/ingest?name=native&format=jfr" --data-binary "@$tmp/nativemem.jfr"
checkx "ingest nativemem JFR: 200, stored as memory:alloc_space with jfr_event=malloc (1028 bytes)" \
	'[ "$code" = 200 ] && [ "$(total "memory:alloc_space:bytes:space:bytes" "{service_name=\"native\",jfr_event=\"malloc\"}")" = 1028 ]'
req POST "/ingest?name=fnzero&format=pprof" --data-binary "@$tmp/fn0.pb"
checkx "ingest pprof with function id 0: 200 and the skip in the answer" \
	'[ "$code" = 200 ] && body_has "skipped 1 dictionary entries (first: pprof: function\[0\]"'
req POST "/ingest?name=wide.cpu&format=folded&sampleRate=100" --data-binary "@$tmp/utf16le.folded"
checkx "ingest UTF-16 folded: 200, 5 samples = 50 ms" \
	'[ "$code" = 200 ] && [ "$(total "$CPU" "{service_name=\"wide\"}")" = 50000000 ]'
require_alive "after the lenient inputs"
finish
