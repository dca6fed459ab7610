#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_query_nearest.sh - the "nearest data" hint (docs/api.md, Common
# parameters): a Pyroscope push whose from/until put it 30 h in the past
# (service oldsvc) and one in range (service newsvc); then
#   - flamegraph, table, series and source over the last hour for oldsvc
#     answer no samples and "nearest": {"before": T, "before_ms": N} with
#     T the push's time (within from..until), no "after"; so do labels
#     and label values in their object form (limit);
#   - a range 48 h..40 h ago answers "after" at the push's time;
#   - a selector that matches nothing anywhere ({service.name="nobody"})
#     and a selector with data in range (newsvc, also when it lacks the
#     label asked for) get no hint;
#   - the same with the data in a block (`profd store compact`; series
#     times from the block's series index).
source "$(dirname "$0")/ingest_lib.sh"

start_server
now=$(date +%s)
old=$((now - 30 * 3600))
printf 'main;work;hot 30\nmain;idle 10\n' >"$tmp/f.txt"
req POST "/ingest?name=oldsvc.cpu%7Bregion%3Deu%7D&sampleRate=100&from=$old&until=$((old + 10))" \
	--data-binary "@$tmp/f.txt"
check "old push -> 200" [ "$code" = 200 ]
req POST "/ingest?name=newsvc.cpu&sampleRate=100&from=now-10s&until=now" --data-binary "@$tmp/f.txt"
check "push in range -> 200" [ "$code" = 200 ]

# view VIEW SELECTOR [curl args...]: GET /api/v1/VIEW of the CPU type; body in $tmp/view.json.
view() {
	local v=$1 q=$2
	shift 2
	code=$(curl -s --noproxy '*' -G -o "$tmp/view.json" -w '%{http_code}' \
		--data-urlencode "type=$CPU" --data-urlencode "query=$q" "$@" "$base/api/v1/$v")
}
# nearest SIDE: the hint's SIDE_ms in the last answer, "none" without the side, "nohint".
nearest() {
	python3 - "$tmp/view.json" "$1" <<'PY'
import datetime, json, sys
d = json.load(open(sys.argv[1]))
n = d.get("nearest")
if n is None:
    print("nohint"); sys.exit()
side = sys.argv[2]
if side not in n:
    print("none"); sys.exit()
# The RFC 3339 text and the ms agree.
t = datetime.datetime.strptime(n[side], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc)
assert abs(t.timestamp() * 1000 - n[side + "_ms"]) < 1, n
print(n[side + "_ms"])
PY
}
in_push() { [ "$1" != none ] && [ "$1" != nohint ] && [ "$1" -ge $((old * 1000)) ] && [ "$1" -le $(((old + 10) * 1000 + 999)) ]; }

checks() { # checks WHEN
	local v b
	for v in flamegraph table series "source?function=hot"; do
		local path=${v%%\?*} extra=()
		[ "$path" != "$v" ] && extra=(--data-urlencode "${v#*\?}")
		view "$path" '{service.name="oldsvc"}' "${extra[@]}"
		b=$(nearest before)
		checkx "$1: $path over the last hour for oldsvc: nearest.before at the push ($b)" \
			'[ "$code" = 200 ] && in_push "$b" && [ "$(nearest after)" = none ]'
	done
	view flamegraph '{service_name="oldsvc"}' --data-urlencode from=now-48h --data-urlencode to=now-40h
	b=$(nearest after)
	checkx "$1: a range before it (service_name key): nearest.after at the push ($b)" \
		'[ "$code" = 200 ] && in_push "$b" && [ "$(nearest before)" = none ]'
	view flamegraph '{service.name="nobody"}'
	checkx "$1: a selector matching nothing anywhere: no hint" \
		'[ "$code" = 200 ] && [ "$(nearest before)" = nohint ]'
	view table '{service.name="newsvc"}'
	checkx "$1: data in range: no hint" '[ "$code" = 200 ] && [ "$(nearest before)" = nohint ]'
	for v in labels labels/region/values; do
		view "$v" '{service.name="oldsvc"}' --data-urlencode limit=10
		b=$(nearest before)
		checkx "$1: $v (limit: the object form) over the last hour for oldsvc: nearest.before at the push ($b)" \
			'[ "$code" = 200 ] && in_push "$b"'
	done
	view labels/region/values '{service.name="newsvc"}' --data-urlencode limit=10
	checkx "$1: label values empty for a selection with data in range: no hint" \
		'[ "$code" = 200 ] && [ "$(nearest before)" = nohint ]'
}
checks head
stop_server TERM
check "server stopped cleanly" [ "$stop_rc" = 0 ]
"$PROFD" store compact "$tmp/data/default" >"$tmp/compact.out" 2>&1
nblocks=$(find "$tmp/data/default/blocks" -mindepth 1 -maxdepth 1 -type d 2>/dev/null | wc -l)
checkx "the data is in blocks ($nblocks)" '[ "$nblocks" -ge 1 ]'
start_server
checks "in a block"
stop_server TERM
finish
