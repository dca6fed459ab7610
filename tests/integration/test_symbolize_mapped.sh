#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_symbolize_mapped.sh - pprof data with runtime addresses (what Go's
# runtime/pprof and other producers send: Location.address in the
# process, Mapping memory_start/memory_limit/file_offset where the file
# was loaded) is symbolized through the mapping: runtime address -> file
# offset -> ELF virtual address by the binary's PT_LOAD segments, as the
# agent does for its own data (design.md).
#   - a shared library built here (cc -shared) whose code segment's file
#     offset (0x1000) differs from its address (0x11000), two functions a
#     page apart, "loaded" at a base chosen so that second_fn's runtime
#     address equals first_fn's ELF address: read as an ELF address it
#     would name the wrong function;
#   - a pprof written here (a protobuf encoder in Python, no library)
#     with those runtime addresses is ingested; the flame graph names
#     first_fn -> second_fn, the table has both with their values;
#   - the same addresses with a mapping of no range (memory_limit 0) are
#     taken as ELF addresses as before.
# Needs $PROFD (+ mkotlp next to it), gcc, readelf, nm, python3, curl.
source "$(dirname "$0")/ingest_lib.sh"

for t in gcc readelf nm python3 curl; do
	command -v $t >/dev/null || skip "$t not installed"
done

mkdir -p "$tmp/lib"
cat >"$tmp/lib.c" <<'EOF'
__attribute__((noinline, aligned(4096))) long second_fn(long n)
{
	long x = 0;
	for (long i = 0; i < n; i++)
		x = x * 7 + i;
	return x;
}
__attribute__((noinline, aligned(4096))) long first_fn(long n) { return second_fn(n) + 1; }
EOF
gcc -O1 -shared -fPIC -Wl,--build-id -Wl,-Ttext-segment=0x10000 -o "$tmp/lib/libmapped.so" \
	"$tmp/lib.c" || { fail "cannot build the library"; exit 1; }
lib=$tmp/lib/libmapped.so
bid=$(readelf -n "$lib" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
# the code segment: offset, vaddr, memsz; the lowest segment address (the load base's image)
read -r x_off x_vaddr x_memsz < <(readelf -lW "$lib" | awk '$1 == "LOAD" && / E / { print $2, $3, $6; exit }')
low=$(readelf -lW "$lib" | awk '$1 == "LOAD" { print $3; exit }')
first=0x$(nm "$lib" | awk '$3 == "first_fn" { print $1 }')
second=0x$(nm "$lib" | awk '$3 == "second_fn" { print $1 }')
checkx "fixture: code segment offset ($x_off) differs from its address ($x_vaddr)" \
	'[ -n "$bid" ] && [ $((x_off)) -ne $((x_vaddr)) ] && [ $((first)) -gt $((second)) ]'

# Load base: second_fn's runtime address = first_fn's ELF address.
base=$((first - second + low))
python3 - "$tmp/mapped.pb" "$lib" "$bid" $base $((low)) $((x_off)) $((x_vaddr)) $((x_memsz)) \
	$((first)) $((second)) <<'PY'
import sys, time
out, lib, bid = sys.argv[1], sys.argv[2], sys.argv[3]
base, low, x_off, x_vaddr, x_memsz, first, second = map(int, sys.argv[4:])

def varint(v):
    b = bytearray()
    while True:
        c = v & 0x7F
        v >>= 7
        b.append(c | (0x80 if v else 0))
        if not v:
            return bytes(b)
def field(n, wt, payload):
    return varint(n << 3 | wt) + payload
def u(n, v): return field(n, 0, varint(v))
def msg(n, body): return field(n, 2, varint(len(body)) + body)
def packed(n, vals): return msg(n, b"".join(varint(v) for v in vals))

strings = ["", "cpu", "nanoseconds", lib, bid]
s = {x: i for i, x in enumerate(strings)}
page = 0x1000
start = base + (x_vaddr & ~(page - 1)) - low          # where the code segment was mapped
limit = start + ((x_vaddr % page + x_memsz + page - 1) & ~(page - 1))
offset = x_off & ~(page - 1)
rt = lambda vaddr: base + vaddr - low                  # runtime address of an ELF address
p = msg(1, u(1, s["cpu"]) + u(2, s["nanoseconds"]))
# mapping 1: where the library was loaded; mapping 2: the same file, no range known
p += msg(3, u(1, 1) + u(2, start) + u(3, limit) + u(4, offset) + u(5, s[lib]) + u(6, s[bid]))
p += msg(3, u(1, 2) + u(5, s[lib]) + u(6, s[bid]))
# locations 1, 2: runtime addresses inside second_fn and first_fn; 3, 4: ELF addresses, mapping 2
p += msg(4, u(1, 1) + u(2, 1) + u(3, rt(second) + 4))
p += msg(4, u(1, 2) + u(2, 1) + u(3, rt(first) + 4))
p += msg(4, u(1, 3) + u(2, 2) + u(3, second + 8))
p += msg(4, u(1, 4) + u(2, 2) + u(3, first + 8))
p += msg(2, packed(1, [1, 2]) + packed(2, [7000]))     # leaf first: first_fn -> second_fn
p += msg(2, packed(1, [2]) + packed(2, [3000]))
p += msg(2, packed(1, [3, 4]) + packed(2, [500]))
for x in strings:
    p += msg(6, x.encode())
p += u(9, time.time_ns()) + u(10, 10**9)
p += msg(11, u(1, s["cpu"]) + u(2, s["nanoseconds"])) + u(12, 10**7)
open(out, "wb").write(p)
print("# runtime: mapping [0x%x, 0x%x) offset 0x%x; second_fn at 0x%x (first_fn's ELF address 0x%x)"
      % (start, limit, offset, rt(second), first))
PY

start_server --symbol-path "$tmp/lib"
req POST "/api/v1/ingest/pprof?service.name=mapped" --data-binary "@$tmp/mapped.pb"
check "pprof with runtime addresses ingested (HTTP $code)" [ "$code" = 200 ]
type=$(curl -s --noproxy '*' -G --data-urlencode from=0 "$base/api/v1/profile-types" |
	python3 -c 'import json,sys; d=json.load(sys.stdin); d=d.get("types", d) if isinstance(d, dict) else d; print([t if isinstance(t, str) else t.get("id", t.get("type")) for t in d][0])')
t=$(total "$type" '{service.name="mapped"}')
check "total 10500 (got $t)" [ "$t" = 10500 ]
node() { # node 'a;b' -> self value, or none
	python3 - "$tmp/flame.json" "$1" <<'PY'
import json, sys
node = json.load(open(sys.argv[1]))["root"]
for name in sys.argv[2].split(";"):
    node = next((c for c in node["children"] if c["name"] == name), None)
    if node is None:
        print("none"); sys.exit(0)
print(node["self"])
PY
}
check "first_fn -> second_fn: 7000 by runtime address + 500 by ELF address (got $(node 'first_fn;second_fn'))" \
	[ "$(node 'first_fn;second_fn')" = 7500 ]
check "first_fn's own samples: 3000 (got $(node first_fn))" [ "$(node first_fn)" = 3000 ]
checkx "no unsymbolized frame" \
	'[ "$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))[\"unsymbolized\"])" "$tmp/flame.json")" = 0 ]'
curl -s --noproxy '*' -G -o "$tmp/table.json" --data-urlencode "type=$type" \
	--data-urlencode 'query={service.name="mapped"}' --data-urlencode from=0 \
	--data-urlencode to=now "$base/api/v1/table"
checkx "table: second_fn self 7500, first_fn self 3000 total 10500" \
	'[ "$(python3 -c "import json,sys; r={x[\"name\"]: (x[\"self\"], x[\"total\"]) for x in json.load(open(sys.argv[1]))[\"rows\"]}; print(r.get(\"second_fn\"), r.get(\"first_fn\"))" "$tmp/table.json")" = "(7500, 7500) (3000, 10500)" ]'
finish
