#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_store_cli.sh - the server reading blocks, and `profd store`:
#   - ingest through the server, stop it, `profd store compact` flushes the
#     head into a block (the WAL segments it held are deleted); `store
#     check` passes, `store stats` counts the samples; the restarted server
#     answers the same totals and types from the block, plus what it
#     ingests next (block + head in one query);
#   - a byte flipped in the block's samples: `store check` exits 1 naming
#     the file and the offset, the server still starts and answers (totals
#     from the block's hour rollup; a view reading the rows leaves the
#     damaged page out, logged);
#   - a byte flipped in a WAL record: `store check` names the segment and
#     offset; bad usage exits 2, a missing directory 1;
#   - `store stats` says it does not verify checksums (exit 0 on that
#     damage) and counts a block it cannot open as broken (exit 1);
#   - `store stats` lists each block with its rollup (RHRS; a compacted
#     block has one) with the bytes the samples file's chunk table gives
#     it (read here in python), its share of the block's bytes, and the
#     totals, in text and --json, after a flush and after a compaction.
source "$(dirname "$0")/ingest_lib.sh"

for i in 1 2 3; do
	"$MKOTLP" --attr service.name=cli --attr host.name="h$i" --time-ms $((1700000000000 + i * 1000)) \
		--stack "main;work;leaf_$i=$((i * 100))" --stack "main;gc=7" "$tmp/req$i.pb" ||
		fail "mkotlp $i"
done
start_server
for i in 1 2; do
	otlp "$tmp/req$i.pb"
	check "ingest $i answered 200" [ "$code" = 200 ]
done
before=$(total "$CPU" '{service.name="cli"}')
check "total before the flush is 314 ($before)" [ "$before" = 314 ]
stop_server TERM
check "server stopped cleanly" [ "$stop_rc" = 0 ]

ds=$tmp/data/default
"$PROFD" store compact "$ds" >"$tmp/compact.out" 2>"$tmp/compact.err"
check "store compact exits 0: $(cat "$tmp/compact.out")" [ $? = 0 ]
nblocks=$(find "$ds/blocks" -mindepth 1 -maxdepth 1 -type d | wc -l)
check "the head became one block ($nblocks)" [ "$nblocks" = 1 ]
nseg=$(find "$ds/wal" -name '*.wal' | wc -l)
check "the flushed WAL segment was deleted ($nseg segment left: the new one)" [ "$nseg" = 1 ]
"$PROFD" store check "$ds" >"$tmp/check.out" 2>&1
check "store check passes: $(tail -1 "$tmp/check.out")" [ $? = 0 ]
checkx "store check lists the block as ok" 'grep -q "^ok .*rows=4 series=2" "$tmp/check.out"'
"$PROFD" store stats "$ds" >"$tmp/stats.out" 2>&1
checkx "store stats counts 2 series and 4 samples" \
	'grep -q "^series *2 " "$tmp/stats.out" && grep -q "^samples *4 rows (4 in 1 blocks" "$tmp/stats.out"'
"$PROFD" store stats --json "$ds" >"$tmp/stats.json" 2>/dev/null
checkx "store stats --json is JSON with bytes_per_sample" \
	'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d[\"samples\"]==4 and d[\"bytes_per_sample\"]>0" "$tmp/stats.json"'

start_server
after=$(total "$CPU" '{service.name="cli"}')
check "the restarted server reads the block: total $after" [ "$after" = 314 ]
checkx "profile types come from the block" 'types | grep -q "process_cpu:cpu:nanoseconds"'
otlp "$tmp/req3.pb"
check "ingest 3 answered 200" [ "$code" = 200 ]
both=$(total "$CPU" '{service.name="cli"}')
check "one query sums block and head: $both" [ "$both" = 621 ]
h1=$(total "$CPU" '{host.name="h1"}')
check "a selector on the block's postings: h1 = $h1" [ "$h1" = 107 ]
stop_server TERM

# Damage in the block: named by store check; the server still serves.
blk=$(find "$ds/blocks" -mindepth 1 -maxdepth 1 -type d | head -1)
off=$(python3 - "$blk/samples" <<'PY'
import struct, sys
f = open(sys.argv[1], "rb").read()
toff, n, _ = struct.unpack("<QII", f[-16:])
for i in range(n):
    e = f[toff + 40 * i: toff + 40 * i + 40]
    if e[:4] == b"PAGE":
        off = struct.unpack("<Q", e[16:24])[0]
        print(struct.unpack("<Q", f[off + 48: off + 56])[0])  # STK frame of page 0
PY
)
printf '\xff' | dd of="$blk/samples" bs=1 seek="$off" conv=notrunc status=none
"$PROFD" store check "$ds" >"$tmp/check2.out" 2>&1
rc=$?
check "store check exits 1 on a damaged block" [ "$rc" = 1 ]
checkx "and names the samples file and offset $off" \
	'grep -q "^error .*samples offset $off: frame at offset $off: checksum mismatch" "$tmp/check2.out"'
start_server
damaged=$(total "$CPU" '{service.name="cli"}')
checkx "the server still answers: totals from the block's hour rollup ($damaged)" \
	'[ "$damaged" = 621 ]'
# A view that reads the rows with their stacks (a series of a function)
# leaves the damaged page out.
code=$(curl -s --noproxy '*' -G -o "$tmp/series.json" -w '%{http_code}' \
	--data-urlencode "type=$CPU" --data-urlencode 'query={service.name="cli"}' \
	--data-urlencode "from=1699999000000" --data-urlencode "to=1700000010000" \
	--data-urlencode "step=3600s" --data-urlencode "function=main" "$base/api/v1/series")
rows=$(python3 -c 'import json,sys; print(sum(s["total"] for s in json.load(open(sys.argv[1]))["series"]))' \
	"$tmp/series.json" 2>/dev/null)
checkx "a series of main reads the rows, the damaged page left out ($code, $rows)" \
	'[ "$code" = 200 ] && [ "$rows" -lt 621 ]'
checkx "the damaged page is logged with file and offset" \
	'grep -q "skipping a damaged page: .*samples: frame at offset $off" "$tmp/log.$n"'
# A record for the WAL check below: what a start replays it writes to a
# block, so the log holds only what came in since.
otlp "$tmp/req1.pb"
check "an ingest for the WAL check answered 200" [ "$code" = 200 ]
stop_server TERM

# Damage in a WAL record: in the newest segment holding one.
seg=$(find "$ds/wal" -name '*.wal' -size +16c | sort | tail -1)
size=$(stat -c %s "$seg")
printf '\x00' | dd of="$seg" bs=1 seek=$((size - 5)) conv=notrunc status=none
"$PROFD" store check "$ds" >"$tmp/check3.out" 2>&1
checkx "store check names the WAL segment of a damaged record" \
	'grep -q "$(basename "$seg") offset [0-9]*: damaged" "$tmp/check3.out"'

# store stats reads chunk tables, not checksums: it says so, and a block
# that cannot be opened is counted broken with exit 1.
"$PROFD" store stats "$ds" >"$tmp/stats3.out" 2>&1
rc=$?
checkx "store stats on data damage it does not read: exit 0, says checksums are store check's" \
	'[ "$rc" = 0 ] && grep -q "^broken blocks *none found opening them (checksums of the data are verified by profd store check)" "$tmp/stats3.out"'
cp -a "$ds" "$tmp/dsbroken"
bblk=$(find "$tmp/dsbroken/blocks" -mindepth 1 -maxdepth 1 -type d | head -1)
truncate -s -8 "$bblk/samples"
"$PROFD" store stats "$tmp/dsbroken" >"$tmp/stats4.out" 2>&1
rc=$?
checkx "store stats on a block that cannot be opened: exit 1, broken blocks 1" \
	'[ "$rc" = 1 ] && grep -q "^broken blocks *1 (1 could not be opened, 0 with unreadable symbols" "$tmp/stats4.out"'
"$PROFD" store stats --json "$tmp/dsbroken" >"$tmp/stats4.json" 2>/dev/null
rc=$?
checkx "and --json says blocks_broken 1, exit 1" \
	'[ "$rc" = 1 ] && python3 -c "import json,sys; assert json.load(open(sys.argv[1]))[\"blocks_broken\"]==1" "$tmp/stats4.json"'
cp -a "$ds" "$tmp/dssyms"
sblk=$(find "$tmp/dssyms/blocks" -mindepth 1 -maxdepth 1 -type d | head -1)
truncate -s 100 "$sblk/symbols"
"$PROFD" store stats "$tmp/dssyms" >"$tmp/stats5.out" 2>&1
rc=$?
checkx "store stats on a block whose symbols cannot be read: exit 1, broken blocks 1" \
	'[ "$rc" = 1 ] && grep -q "^broken blocks *1 (0 could not be opened, 1 with unreadable symbols" "$tmp/stats5.out"'

"$PROFD" store >/dev/null 2>&1
check "profd store without a subcommand exits 2" [ $? = 2 ]
"$PROFD" store check "$tmp/nonexistent" >/dev/null 2>&1
check "store check of a missing directory exits 1" [ $? = 1 ]
mkdir -p "$tmp/notastore"
"$PROFD" store check "$tmp/notastore" >"$tmp/nas.out" 2>&1
rc=$?
checkx "store check of a directory that is not a store exits 1 and says so" \
	'[ "$rc" = 1 ] && grep -q "not a profd store" "$tmp/nas.out"'
checkx "profd --version names the version" '"$PROFD" --version | grep -qE "^profd [0-9]+\.[0-9]+ \("'
"$PROFD" store compact "$tmp/data/default" --retention bogus >/dev/null 2>&1
check "store compact with a bad --retention exits 2" [ $? = 2 ]

# Rollup sizes, after a flush and after compaction merged two blocks:
# `store stats` agrees with the chunk table of the block's samples file.
ds2=$tmp/data2/default
# block_rollup: "STORED RAW BLOCK-BYTES ID LEVEL" of the one block of $ds2 (RHRS; 0 0 when none)
block_rollup() {
	python3 - "$(find "$ds2/blocks" -mindepth 1 -maxdepth 1 -type d | head -1)" <<'PY'
import os, struct, sys
d = sys.argv[1]
f = open(os.path.join(d, "samples"), "rb").read()
toff, n, _ = struct.unpack("<QII", f[-16:])
ents = [f[toff + 40 * i: toff + 40 * i + 40] for i in range(n)]
rh = [struct.unpack("<QQ", e[24:40]) for e in ents if e[:4] == b"RHRS"] or [(0, 0)]
size = sum(os.path.getsize(os.path.join(d, x)) for x in ("meta", "symbols", "index", "samples"))
print(rh[0][0], rh[0][1], size, os.path.basename(d))
PY
}
# check_rollup LEVEL: the text and JSON of `store stats` against block_rollup
check_rollup() {
	local rb rraw bbytes bid share with rname lvl=$1 # checkx evaluates in its own $1
	read -r rb rraw bbytes bid <<<"$(block_rollup)"
	share=$(python3 -c "print('%.1f' % (100 * $rb / $bbytes))")
	with=$((rb > 0)) rname=RHRS
	[ "$rb" = 0 ] && rname=-
	"$PROFD" store stats "$ds2" >"$tmp/stats2.out" 2>&1
	checkx "store stats, level $1 block: RHRS of $rb bytes ($rraw raw) of $bbytes, $share%" \
		'grep -q "^rollups *$rb bytes in $with of 1 blocks, $share% of the block bytes ($rraw before zstd)" "$tmp/stats2.out" &&
		 grep -qE "^$bid +$lvl .* $bbytes +$rname +$rb +$share%$" "$tmp/stats2.out"'
	"$PROFD" store stats --json "$ds2" >"$tmp/stats2.json" 2>/dev/null
	checkx "store stats --json, level $1 block: rollup bytes, raw bytes and share, in total and per block" \
		'python3 - "$tmp/stats2.json" "$rb" "$rraw" "$bbytes" "$bid" "$lvl" <<'"'"'PY'"'"'
import json, sys
d = json.load(open(sys.argv[1]))
rb, raw, size, bid, lvl = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], int(sys.argv[6])
b = d["block_list"]
assert d["rollup_bytes"] == rb and d["rollup_raw_bytes"] == raw, d
assert abs(d["rollup_share"] - rb / size) < 1e-4 and d["block_bytes"] == size, d
assert len(b) == 1 and b[0]["id"] == bid and b[0]["level"] == lvl, b
assert b[0]["rollup"] == ("RHRS" if rb else "") and b[0]["rollup_bytes"] == rb, b
assert b[0]["bytes"] == size and b[0]["rows"] == d["samples"], b
assert abs(b[0]["rollup_share"] - rb / size) < 1e-4, b
PY'
}
start_server --data "$tmp/data2"
otlp "$tmp/req1.pb"
stop_server TERM
"$PROFD" store compact "$ds2" >/dev/null 2>&1
check_rollup 1
start_server --data "$tmp/data2"
otlp "$tmp/req2.pb"
stop_server TERM
"$PROFD" store compact "$ds2" >"$tmp/compact2.out" 2>&1
checkx "compaction merged the two blocks: $(cat "$tmp/compact2.out")" \
	'grep -q "2 blocks merged" "$tmp/compact2.out"'
check_rollup 2
checkx "the compacted block has an RHRS chunk" '[ "$(block_rollup | cut -d" " -f1)" -gt 0 ]'
finish
