#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_debuginfo.sh - the agent uploads debug info the server lacks
# (issue 7), with no manual upload: tests/workloads/spin.c is built twice,
#   - di_full: -O2 -g, symbols and DWARF in the binary;
#   - di_strip: -O1 -g (another build ID), stripped, its DWARF only in a
#     separate debug file DIR/.build-id/xx/rest.debug (--debug-dir DIR);
#   - di_link: -O3 -g (a third build ID), stripped, found only through its
#     .gnu_debuglink to bin/.debug/di_link.debug (GDB's search order, CRC
#     checked);
# both run under `profd agent --server` (sanitized build). Then:
#   - the agent's /metrics count one binary and two debug files uploaded,
#     no failures; the server's store has both build IDs at quality dwarf,
#     di_strip's as a separate file of the debug file's size;
#   - every local copy is deleted (binaries, debug file), so the server
#     can only use what the agent sent: the flame graph of each process
#     names main, hot_a and hot_b (>= 90 % of the time under main) and has
#     no frame of the binary left as module+0xaddr;
#   - file:line: the server's table places hot_a in spin.c within hot_a's
#     lines; the files it serves back (debuginfod endpoint) are
#     byte-identical to the local ones, and addr2line on them maps hot_a's
#     address to spin.c at hot_a's line;
#   - a second agent run against the same server only checks (HEAD) and
#     uploads nothing; with --debuginfo-files-per-minute 1 against a fresh
#     server, one of two new binaries is uploaded and the other waits;
#     --no-upload-debuginfo turns it all off.
# Needs root and kernel BTF (else "skip"), objcopy, strip, addr2line, nm.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init
for t in objcopy strip addr2line nm readelf; do
	command -v $t >/dev/null || {
		skip "$t not installed"
	}
done

mkdir -p "$tmp/bin"
${CC:-cc} -O2 -g -fno-inline -o "$tmp/bin/di_full" tests/workloads/spin.c || die "cannot build spin.c"
${CC:-cc} -O1 -g -fno-inline -o "$tmp/di_strip.g" tests/workloads/spin.c || die "cannot build spin.c"
${CC:-cc} -O3 -g -fno-inline -o "$tmp/di_link.g" tests/workloads/spin.c || die "cannot build spin.c"
bid() { readelf -n "$1" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p'; }
id_full=$(bid "$tmp/bin/di_full")
id_strip=$(bid "$tmp/di_strip.g")
id_link=$(bid "$tmp/di_link.g")
[ -n "$id_full" ] && [ -n "$id_strip" ] && [ "$id_full" != "$id_strip" ] ||
	die "want two different build IDs, got '$id_full' '$id_strip'"
dbg="$tmp/debug/.build-id/${id_strip:0:2}/${id_strip:2}.debug"
mkdir -p "$(dirname "$dbg")"
objcopy --only-keep-debug "$tmp/di_strip.g" "$dbg"
strip --strip-all -o "$tmp/bin/di_strip" "$tmp/di_strip.g"
mkdir -p "$tmp/bin/.debug"
objcopy --only-keep-debug "$tmp/di_link.g" "$tmp/bin/.debug/di_link.debug"
strip --strip-all -o "$tmp/bin/di_link" "$tmp/di_link.g"
objcopy --add-gnu-debuglink="$tmp/bin/.debug/di_link.debug" "$tmp/bin/di_link"
[ "$(bid "$tmp/bin/di_link")" = "$id_link" ] && [ "$id_link" != "$id_strip" ] &&
	[ "$id_link" != "$id_full" ] || die "di_link: want a third build ID, got $id_link"
# A decoy with the link's name but other bytes, where GDB looks first: the CRC refuses it.
cp "$tmp/bin/.debug/di_link.debug" "$tmp/bin/di_link.debug"
printf 'x' >>"$tmp/bin/di_link.debug"
cp "$tmp/bin/di_full" "$tmp/full.copy"
cp "$dbg" "$tmp/strip.debug.copy"
line_a=$(grep -n 'void hot_a' tests/workloads/spin.c | cut -d: -f1)
addr_full=$(nm "$tmp/bin/di_full" | awk '$3 == "hot_a" { print $1 }')
addr_strip=$(nm "$tmp/di_strip.g" | awk '$3 == "hot_a" { print $1 }')
rm "$tmp/di_strip.g" "$tmp/di_link.g"
nm "$tmp/bin/di_strip" 2>&1 | grep -q hot_a && die "di_strip still has symbols"

agent_start_server
mport=$(free_port)
agent_start --server "$base" --interval 1s --frequency 99 --include-exe di_full \
	--include-exe di_strip --include-exe di_link --debug-dir "$tmp/debug" \
	--metrics-listen "127.0.0.1:$mport"
"$tmp/bin/di_full" 2.5 >/dev/null &
p_full=$!
"$tmp/bin/di_strip" 2.5 >/dev/null &
p_strip=$!
"$tmp/bin/di_link" 2.5 >/dev/null &
p_link=$!
wait "$p_full" || die "di_full failed"
wait "$p_strip" || die "di_strip failed"
wait "$p_link" || die "di_link failed"
# The last interval's offers reach the uploader at the next flush (up to
# 30 s: the sanitized agent on a loaded CI machine is slow; the loop ends
# as soon as both uploads show).
uploads_done() {
	up_bin=$(agent_metric "$mport" 'profd_agent_debuginfo_uploads_total{file="binary"}')
	up_dbg=$(agent_metric "$mport" 'profd_agent_debuginfo_uploads_total{file="debug_file"}')
	queue=$(agent_metric "$mport" 'profd_agent_debuginfo_queue')
	[ "$up_dbg" -ge 2 ] && [ "$up_bin" -ge 1 ] && [ "$queue" = 0 ]
}
wait_for 30 uploads_done || true
di_fail=$(agent_metric "$mport" 'profd_agent_debuginfo_failures_total')
agent_stop
[ "$up_dbg" = 2 ] || die "want 2 debug files uploaded, /metrics says $up_dbg"
[ "$up_bin" -ge 1 ] || die "want di_full uploaded, /metrics says $up_bin binaries"
[ "$di_fail" = 0 ] || die "$di_fail debuginfo failures"
grep -q "agent debuginfo uploaded build_id=$id_full file=.*di_full" "$tmp/agent.log" ||
	die "no upload of di_full ($id_full) in the agent log"
grep -q "agent debuginfo uploaded build_id=$id_strip file=.*/${id_strip:0:2}/${id_strip:2}.debug .*debug_file=1" \
	"$tmp/agent.log" || die "no upload of di_strip's debug file in the agent log"
grep -q "agent debuginfo uploaded build_id=$id_link file=.*/bin/.debug/di_link.debug .*debug_file=1" \
	"$tmp/agent.log" || die "no upload of di_link's linked debug file in the agent log"
echo "ok agent uploaded di_full, di_strip's debug file by build ID, di_link's by .gnu_debuglink"

# Nothing local is left to the server.
rm -rf "$tmp/bin" "$tmp/debug"
curl -fs "$base/api/v1/debuginfo/$id_full" >"$tmp/full.json" || die "server lacks $id_full"
curl -fs "$base/api/v1/debuginfo/$id_strip" >"$tmp/strip.json" || die "server lacks $id_strip"
python3 - "$tmp/full.json" "$tmp/strip.json" "$(stat -c %s "$tmp/strip.debug.copy")" <<'PY' ||
import json, sys
f, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
ok = f["quality"] == "dwarf" and s["quality"] == "dwarf" and s["separate"] is True \
    and s["debuginfo_size"] == int(sys.argv[3])
print(f"{'ok' if ok else 'FAIL:'} server store: di_full {f['quality']}, di_strip {s['quality']} "
      f"separate={s['separate']} size={s['debuginfo_size']} (debug file {sys.argv[3]})")
sys.exit(0 if ok else 1)
PY
	die "server store"

type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
for exe in di_full di_strip di_link; do
	agent_flame "$type" "{process.executable.name=\"$exe\"}" "$tmp/$exe.json"
	python3 tests/integration/agent_check.py "$tmp/$exe.json" main hot_a hot_b >"$tmp/$exe.sum" ||
		die "flame graph check $exe"
	python3 - "$tmp/$exe.sum" "$tmp/$exe.json" "$exe" <<'PY' || die "$exe symbolized through the upload"
import json, sys
s, fg, exe = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
n = s["names"]
raw = []
todo = [fg["root"]]
while todo:
    node = todo.pop()
    if node["name"].startswith(exe + "+0x") or node["name"] == exe:
        raw.append(node["name"])
    todo.extend(node.get("children", []))
print(f"{exe}: {s['total'] / 1e9:.2f} s of CPU; main {100 * n['main'] / s['total']:.0f}%, "
      f"hot_a {100 * n['hot_a'] / s['total']:.0f}%, hot_b {100 * n['hot_b'] / s['total']:.0f}%; "
      f"unsymbolized frames of {exe}: {raw[:5]}")
sys.exit(0 if n["main"] >= 0.9 * s["total"] and n["hot_a"] > 0 and n["hot_b"] > 0 and not raw else 1)
PY
	echo "ok $exe: names from the uploaded debug info"
done

# file:line in the server's own answer (the table's source location of hot_a).
line_end=$(awk -v a="$line_a" 'NR > a && /^}/ { print NR; exit }' tests/workloads/spin.c)
for exe in di_full di_strip; do
	curl -fsG "$base/api/v1/table" --data-urlencode "type=$type" \
		--data-urlencode "query={process.executable.name=\"$exe\"}" --data-urlencode "search=hot_a" \
		--data-urlencode "from=now-10m" -o "$tmp/$exe.table.json" || die "table query $exe"
	python3 - "$tmp/$exe.table.json" "$line_a" "$line_end" "$exe" <<'PY' || die "$exe: hot_a file:line"
import json, sys
t = json.load(open(sys.argv[1]))
lo, hi, exe = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
row = next((r for r in t["rows"] if r["name"] == "hot_a"), None)
where = f"{row.get('file')}:{row.get('line')}" if row else "no hot_a row"
print(f"{exe}: the server places hot_a at {where} (want spin.c:{lo}..{hi})")
sys.exit(0 if row and str(row.get("file", "")).endswith("spin.c") and lo <= row.get("line", 0) <= hi else 1)
PY
	echo "ok $exe: hot_a at spin.c:$line_a..$line_end in the server's table"
done

# file:line from what the server stored, with an independent tool.
curl -fs "$base/buildid/$id_full/debuginfo" -o "$tmp/full.dl" || die "debuginfod GET $id_full"
curl -fs "$base/buildid/$id_strip/debuginfo" -o "$tmp/strip.dl" || die "debuginfod GET $id_strip"
cmp -s "$tmp/full.dl" "$tmp/full.copy" || die "stored di_full differs from the binary"
cmp -s "$tmp/strip.dl" "$tmp/strip.debug.copy" || die "stored debug file differs"
for f in "full.dl:$addr_full" "strip.dl:$addr_strip"; do
	where=$(addr2line -e "$tmp/${f%%:*}" -f "0x${f#*:}" | tr '\n' ' ')
	case "$where" in
	"hot_a "*spin.c:"$line_a"* | "hot_a "*spin.c:"$((line_a + 1))"*) echo "ok ${f%%:*}: hot_a at $where" ;;
	*) die "${f%%:*}: hot_a resolves to '$where', want spin.c:$line_a" ;;
	esac
done

# Again, against the same server: di_full already there, not sent again
# (a system library the first agent had not reached yet may still go up);
# then off.
log_mark=$(wc -l <"$tmp/server.log")
mkdir -p "$tmp/bin"
cp "$tmp/full.copy" "$tmp/bin/di_full"
mport=$(free_port)
agent_start --server "$base" --interval 1s --frequency 99 --include-exe di_full \
	--metrics-listen "127.0.0.1:$mport"
"$tmp/bin/di_full" 1.5 >/dev/null || die "di_full failed"
# Up to 20 s, as above.
wait_for 20 'present=$(agent_metric "$mport" "profd_agent_debuginfo_build_ids_total{outcome=\"present\"}"); [ "$present" -ge 1 ]' ||
	true
agent_stop
ups=$(tail -n +"$((log_mark + 1))" "$tmp/server.log" | grep -c "method=POST path=/api/v1/debuginfo/$id_full" || true)
[ "$present" -ge 1 ] && [ "$ups" = 0 ] ||
	die "second run: want present >= 1 and di_full not uploaded again, got $present / $ups"
echo "ok second agent: $present build IDs already on the server, di_full not uploaded again"
# Rate limit: a fresh server, two new binaries, one file a minute: one upload, one waiting.
agent_stop_server() { kill "$server_pid" && wait "$server_pid" 2>/dev/null || true; }
agent_stop_server
rm -rf "$tmp/data"
agent_start_server
${CC:-cc} -O0 -g -o "$tmp/bin/di_o0" tests/workloads/spin.c || die "cannot build spin.c"
mport=$(free_port)
agent_start --server "$base" --interval 1s --frequency 99 --include-exe di_full \
	--include-exe di_o0 --debuginfo-files-per-minute 1 --metrics-listen "127.0.0.1:$mport"
"$tmp/bin/di_full" 1.5 >/dev/null &
p_full=$!
"$tmp/bin/di_o0" 1.5 >/dev/null || die "di_o0 failed"
wait "$p_full" || die "di_full failed"
# /metrics is republished once a second: wait until it shows both the one
# upload and the one wait (or 20 s: a loaded CI machine is slow).
limited_and_one_upload() {
	limited=$(agent_metric "$mport" 'profd_agent_debuginfo_rate_limited_total')
	# The one upload may be any of the binaries mapped (di_full, di_o0, or
	# libc's separate debug file where the machine has libc6-dbg).
	ups=$(($(agent_metric "$mport" 'profd_agent_debuginfo_uploads_total{file="binary"}') +
		$(agent_metric "$mport" 'profd_agent_debuginfo_uploads_total{file="debug_file"}')))
	[ "$limited" -ge 1 ] && [ "$ups" -ge 1 ]
}
wait_for 20 limited_and_one_upload || true
curl -fs "http://127.0.0.1:$mport/metrics" >"$tmp/agent_metrics.txt" 2>/dev/null || true
agent_stop
[ "$limited" -ge 1 ] && [ "$ups" = 1 ] || {
	grep -i "debuginfo" "$tmp/agent.log" | tail -n 15
	grep debuginfo "$tmp/agent_metrics.txt" || true
	die "--debuginfo-files-per-minute 1: want 1 upload and one waiting, got $ups uploads, $limited waits"
}
echo "ok --debuginfo-files-per-minute 1: 1 upload, the next one waiting"

mport=$(free_port)
agent_start --server "$base" --interval 1s --include-exe di_full --no-upload-debuginfo \
	--metrics-listen "127.0.0.1:$mport"
curl -fs "http://127.0.0.1:$mport/metrics" | grep -q profd_agent_debuginfo &&
	die "--no-upload-debuginfo: the uploader still runs"
grep -q "upload_debuginfo=0" "$tmp/agent.log" || die "--no-upload-debuginfo not in the start line"
agent_stop
echo "ok --no-upload-debuginfo"
echo "ok agent debuginfo upload"
