#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_symbolize_native.sh - the symbolizer on real binaries of several
# toolchains, through the symq helper (tests/tools/symq.c):
#   - runtime addresses in a running PIE whose text segment's file offset
#     differs from its address (-Ttext-segment), and in a shared library
#     loaded at a randomized address, mapped through /proc/PID/maps to
#     ELF virtual addresses as the agent does: inline chains with files
#     and lines;
#   - separate debug files found by build ID under a debug root
#     (.build-id/xx/rest.debug) and by .gnu_debuglink next to the binary;
#   - every instruction of a -O2 -g program's .text that has a source
#     line gives the same frames as `addr2line -i -f -C` (names, files,
#     lines, inline order);
#   - C++ names demangled from DWARF and from .symtab; Rust names, legacy
#     and v0 manglings, demangled;
#   - a stripped Go binary resolves through .gopclntab (name, file, line),
#     inlined frames included (the inline trees in go:func.*), as its DWARF says.
# Needs $PROFD's build dir to hold tests/tools/symq; gcc, g++, objcopy,
# strip, addr2line; rustc and go are used when installed.
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
SYMQ=${SYMQ:-$(dirname "$PROFD")/tests/tools/symq}
FIX=$PWD/tests/integration/symbolize

source tests/integration/lib.sh
need_bin "$SYMQ"
for t in gcc g++ objcopy strip addr2line nm python3; do
	command -v $t >/dev/null || skip "$t not installed"
done
# $tmp and ok/fail/checkx (no server runs here).
source tests/integration/server_lib.sh
pids=()
at_exit() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done; }
line_of() { grep -n "$2" "$FIX/$1" | head -1 | cut -d: -f1; }
# frames OUT: the "NAME FILE:LINE" list of symq output, one frame per line
frames() { cut -f3,4 "$1" | tr '\t' ' '; }

L_LEAF=$(line_of inl.c MARK_LEAF)
L_MID=$(line_of inl.c MARK_MID)
L_OUTER=$(line_of inl.c MARK_OUTER)
L_LINNER=$(line_of lib.c MARK_LIB_INNER)
L_LENTRY=$(line_of lib.c MARK_LIB_ENTRY)
WANT_EXE="inl_leaf inl.c:$L_LEAF
inl_mid inl.c:$L_MID
inl_outer inl.c:$L_OUTER"
WANT_LIB="lib_inner lib.c:$L_LINNER
lib_entry lib.c:$L_LENTRY"

# --- PIE (offset != vaddr) + shared library at a random address, at run time -------
# (-Ttext-segment links the PIE at 0x200000, so its code's file offset 0x1000
# sits at vaddr 0x201000; the kernel still loads it at a random base.)
gcc -O2 -g -fPIC -shared -o "$tmp/libdemo.so" "$FIX/lib.c" &&
	gcc -O2 -g -fPIE -pie -Wl,-Ttext-segment=0x200000 -DWITH_LIB -o "$tmp/pie" "$FIX/inl.c" \
		-L"$tmp" -ldemo -Wl,-rpath,"$tmp" || { fail "cannot build the PIE fixture"; exit 1; }
read -r x_off x_vaddr < <(readelf -lW "$tmp/pie" | awk '$1 == "LOAD" && / R E / { print $2, $3; exit }')
checkx "PIE's executable segment has file offset ($x_off) != vaddr ($x_vaddr)" \
	'[ -n "$x_off" ] && [ "$((x_off))" != "$((x_vaddr))" ]'
"$tmp/pie" wait >"$tmp/pie.out" &
pid=$!
pids+=("$pid")
wait_for 5 '[ -s "$tmp/pie.out" ]' || true
read -r ra_exe ra_lib <"$tmp/pie.out"
lib_base=$(awk '/libdemo.so/ { split($1, a, "-"); print a[1]; exit }' "/proc/$pid/maps")
checkx "libdemo.so is mapped at a randomized address (0x$lib_base), not its link address 0" \
	'[ -n "$lib_base" ] && [ "$((0x$lib_base))" != 0 ]'
"$SYMQ" --pid "$pid" "$(printf '0x%x' $((ra_exe - 1)))" >"$tmp/pie.sym"
checkx "PIE runtime address -> inline chain leaf/mid/outer with lines ($(frames "$tmp/pie.sym" | tr '\n' '|'))" \
	'[ "$(frames "$tmp/pie.sym")" = "$WANT_EXE" ]'
"$SYMQ" --pid "$pid" "$(printf '0x%x' $((ra_lib - 1)))" >"$tmp/lib.sym"
checkx "shared library runtime address -> lib_inner/lib_entry ($(frames "$tmp/lib.sym" | tr '\n' '|'))" \
	'[ "$(frames "$tmp/lib.sym")" = "$WANT_LIB" ]'
kill "$pid" 2>/dev/null

# --- separate debug files: by build ID under a debug root, and by debuglink ---------
gcc -O2 -g -o "$tmp/inl" "$FIX/inl.c"
bid=$(readelf -n "$tmp/inl" | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p')
call=$(objdump -d -j .text --no-show-raw-insn "$tmp/inl" | awk '/<inl_outer>:/,/^$/' |
	grep 'call.*<sink_call>' | head -1 | awk -F: '{gsub(/ /, "", $1); print $1}')
mkdir -p "$tmp/dbgroot/.build-id/${bid:0:2}" "$tmp/a" "$tmp/b"
objcopy --only-keep-debug "$tmp/inl" "$tmp/dbgroot/.build-id/${bid:0:2}/${bid:2}.debug"
strip --strip-all -o "$tmp/a/inl" "$tmp/inl"
"$SYMQ" --debug-root /nonexistent "$tmp/a/inl" "0x$call" >"$tmp/none.sym"
checkx "stripped, no debug file anywhere: no answer" 'grep -q "??" "$tmp/none.sym"'
"$SYMQ" --debug-root "$tmp/dbgroot" "$tmp/a/inl" "0x$call" >"$tmp/dbgroot.sym"
checkx "stripped + <root>/.build-id/xx/rest.debug: full chain" \
	'[ "$(frames "$tmp/dbgroot.sym")" = "$WANT_EXE" ]'
objcopy --only-keep-debug "$tmp/inl" "$tmp/b/inl.dbg"
strip --strip-all -o "$tmp/b/inl" "$tmp/inl"
objcopy --add-gnu-debuglink="$tmp/b/inl.dbg" "$tmp/b/inl"
"$SYMQ" --debug-root /nonexistent "$tmp/b/inl" "0x$call" >"$tmp/link.sym"
checkx "stripped + .gnu_debuglink next to it: full chain" \
	'[ "$(frames "$tmp/link.sym")" = "$WANT_EXE" ]'
"$SYMQ" --build-id "$bid" --debug-root "$tmp/dbgroot" "" "0x$call" >"$tmp/byid.sym"
checkx "by build ID alone (no binary path): full chain" \
	'[ "$(frames "$tmp/byid.sym")" = "$WANT_EXE" ]'
"$SYMQ" --build-id 0123456789abcdef0123456789abcdef01234567 "$tmp/inl" "0x$call" >"$tmp/mis.sym"
checkx "a binary with another build ID is not used" 'grep -q "??" "$tmp/mis.sym"'

# --- agreement with addr2line -i -f -C over every instruction of a program ---------
objdump -d -j .text --no-show-raw-insn "$tmp/inl" | awk -F: '/^ +[0-9a-f]+:/ { gsub(/ /, "", $1); print "0x" $1 }' >"$tmp/all.addrs"
addr2line -a -i -f -C -e "$tmp/inl" <"$tmp/all.addrs" >"$tmp/a2l.txt"
"$SYMQ" --bench --print "$tmp/inl" <"$tmp/all.addrs" >"$tmp/sq.txt" 2>/dev/null
nm -S "$tmp/inl" >"$tmp/nm.txt"
python3 - "$tmp/a2l.txt" "$tmp/sq.txt" "$tmp/nm.txt" >"$tmp/cmp.txt" <<'PY'
import os, sys
funcs = []  # (start, size) of sized symbols: addresses outside them are padding
for l in open(sys.argv[3]):
    p = l.split()
    if len(p) == 4 and p[2] in "tTwW":
        funcs.append((int(p[0], 16), int(p[1], 16)))
in_func = lambda a: any(s <= a < s + n for s, n in funcs)
a2l, cur, lines, i = {}, None, open(sys.argv[1]).read().split("\n"), 0
while i < len(lines):
    l = lines[i]
    if l.startswith("0x"):
        cur = int(l, 16); a2l[cur] = []; i += 1; continue
    if not l:
        i += 1; continue
    f, _, ln = lines[i + 1].rpartition(":")
    ln = ln.split()[0]
    if l != "??":
        a2l[cur].append((l, os.path.basename(f) if f != "??" else "??", ln if ln != "?" else "0"))
    i += 2
sq = {}
for l in open(sys.argv[2]):
    p = l.rstrip("\n").split("\t")
    a = int(p[0], 16)
    if p[1] in ("0", "-"):
        sq[a] = []
    if p[1] != "-":
        f, _, ln = p[3].rpartition(":")
        sq[a].append((p[2], f, ln))
same = diff = 0
for a, want in a2l.items():
    # Compare where DWARF has a line for the address (not crt glue or padding).
    if not want or all(ln == "0" for _, _, ln in want) or not in_func(a):
        continue
    got = sq.get(a, [])
    # addr2line names crt code it has no DWARF for without a file; so do we ("??").
    if [(n, f if f != "" else "??", ln) for n, f, ln in want] == got:
        same += 1
    else:
        diff += 1
        if diff <= 5:
            print("differs at", hex(a), "addr2line", want, "profd", got)
print("same", same, "diff", diff)
PY
checkx "every instruction: same frames as addr2line -i -f -C ($(tail -1 "$tmp/cmp.txt"))" \
	'grep -q "diff 0$" "$tmp/cmp.txt" && [ "$(awk "/^same/ { print \$2 }" "$tmp/cmp.txt")" -gt 20 ]'

# --- C++ ----------------------------------------------------------------------------
g++ -O2 -g -o "$tmp/cx" "$FIX/cx.cc" && strip --strip-debug -o "$tmp/cx.sym" "$tmp/cx"
area=$(nm "$tmp/cx" | awk '$3 ~ /Circle4area/ { print $1; exit }')
tot=$(nm "$tmp/cx" | awk '$3 ~ /5totalIl/ { print $1; exit }')
"$SYMQ" "$tmp/cx" "0x$area" "0x$tot" >"$tmp/cx.out"
checkx "C++ from DWARF: shapes::Circle::area(int) const" \
	'grep -qP "\t0\tshapes::Circle::area\(int\) const\tcx.cc:" "$tmp/cx.out"'
checkx "C++ template from DWARF: long shapes::total<long>(std::vector<long, ...> const&)" \
	'grep -q "long shapes::total<long>(std::vector<long, std::allocator<long> > const&)" "$tmp/cx.out"'
"$SYMQ" "$tmp/cx.sym" "0x$area" >"$tmp/cxs.out"
checkx "C++ from .symtab only: demangled too" \
	'grep -q "shapes::Circle::area(int) const" "$tmp/cxs.out" && grep -q "symtab" "$tmp/cxs.out"'

# --- Rust -----------------------------------------------------------------------------
if command -v rustc >/dev/null; then
	rustc -O -g -C symbol-mangling-version=v0 -o "$tmp/rs_v0" "$FIX/rs.rs" 2>"$tmp/rustc.log"
	RUSTC_BOOTSTRAP=1 rustc -O -g -Z unstable-options -C symbol-mangling-version=legacy \
		-o "$tmp/rs_legacy" "$FIX/rs.rs" 2>>"$tmp/rustc.log"
	for m in v0 legacy; do
		b=$tmp/rs_$m
		[ -x "$b" ] || { fail "rustc could not build the $m fixture: $(tail -2 "$tmp/rustc.log")"; continue; }
		sym=$(nm "$b" | awk '$3 ~ /spin_up/ { print $3; exit }')
		a=$(nm "$b" | awk '$3 ~ /spin_up/ { print $1; exit }')
		strip --strip-debug -o "$b.sym" "$b"
		"$SYMQ" "$b" "0x$a" >"$b.out"
		"$SYMQ" "$b.sym" "0x$a" >"$b.sym.out"
		checkx "Rust $m ($sym): DWARF and .symtab both give the demangled path" \
			'grep -q "rs::engine::Motor>\?::spin_up" "$b.out" && grep -q "rs::engine::Motor>\?::spin_up" "$b.sym.out" && ! grep -q "17h[0-9a-f]\{16\}E\|_R" "$b.sym.out"'
	done
else
	echo "skip - rustc not installed"
fi

# --- Go, stripped: .gopclntab ------------------------------------------------------------
if command -v go >/dev/null; then
	export GOCACHE=${GOCACHE:-$tmp/gocache} GO111MODULE=off GOFLAGS=
	(cd "$tmp" && cp "$FIX/gomain.go" . && go build -o gobin gomain.go) 2>"$tmp/go.log"
	if [ -x "$tmp/gobin" ]; then
		hot=$(go tool nm "$tmp/gobin" | awk '$3 == "main.hotLoop" { print $1 }')
		strip -o "$tmp/gobin.stripped" "$tmp/gobin"
		checkx "the stripped Go binary has no .symtab and no DWARF" \
			'! readelf -SW "$tmp/gobin.stripped" | grep -q "\.symtab\|\.debug_info"'
		want_line=$(go tool addr2line "$tmp/gobin" <<<"0x$hot" | tail -1 | sed 's/.*://')
		"$SYMQ" "$tmp/gobin.stripped" "0x$hot" >"$tmp/go.out"
		checkx "stripped Go: main.hotLoop at gomain.go:$want_line via gopclntab ($(cut -f3- "$tmp/go.out"))" \
			'grep -qP "\tmain.hotLoop\tgomain.go:$want_line\tgopclntab" "$tmp/go.out"'
		# Inlined Go frames, with each Go here: every instruction of the binary
		# symbolized from the stripped file (pclntab + the inline trees in
		# its funcdata: go.func.* in 1.19, go:func.* later) against the
		# unstripped one (DWARF inlined subroutines, written independently by
		# the Go compiler): the whole chain, names, files and lines.
		for gobin in go /usr/bin/go; do
			command -v "$gobin" >/dev/null || continue
			gv=$("$gobin" env GOVERSION)
			rm -f "$tmp/goinl" "$tmp/goinl.stripped"
			(cd "$tmp" && "$gobin" build -o goinl gomain.go) 2>>"$tmp/go.log" ||
				{ fail "$gv: go build failed: $(tail -3 "$tmp/go.log")"; continue; }
			strip -o "$tmp/goinl.stripped" "$tmp/goinl"
			objdump -d -j .text --no-show-raw-insn "$tmp/goinl" |
				awk -F: '/^ +[0-9a-f]+:/ { gsub(/ /, "", $1); print "0x" $1 }' >"$tmp/go.addrs"
			"$SYMQ" --bench --print "$tmp/goinl" <"$tmp/go.addrs" >"$tmp/go.dwarf" 2>/dev/null
			"$SYMQ" --bench --print "$tmp/goinl.stripped" <"$tmp/go.addrs" >"$tmp/go.pcln" 2>/dev/null
			python3 - "$tmp/go.dwarf" "$tmp/go.pcln" >"$tmp/go.cmp" <<'PY'
import sys
def load(f):
    d = {}
    for l in open(f):
        p = l.rstrip("\n").split("\t")
        d.setdefault(p[0], []).append(tuple(p[2:4]) if len(p) > 3 else ("-",))
    return d
dw, pc = load(sys.argv[1]), load(sys.argv[2])
same = sum(dw[a] == pc.get(a) for a in dw)
main = [a for a in dw if dw[a][-1][0].startswith("main.")]
main_same = sum(dw[a] == pc.get(a) for a in main)
chain = sum([f[0] for f in pc.get(a, [])] == ["main.square", "main.mix", "main.hotLoop"] for a in main)
inl = sum(len(pc.get(a, [])) > 1 and dw[a] == pc.get(a) for a in dw)
print("all", len(dw), "same", same, "main", len(main), "main_same", main_same,
      "square<mix<hotLoop", chain, "inlined_same", inl)
PY
			read -r _ all _ same _ nmain _ msame _ chain _ inl <"$tmp/go.cmp"
			checkx "stripped Go ($gv), inlined frames: square<mix<hotLoop chains ($chain), main.* as DWARF ($msame/$nmain)" \
				'[ "$chain" -gt 0 ] && [ "$msame" = "$nmain" ] && [ "$nmain" -gt 10 ]'
			checkx "stripped Go ($gv), every instruction: >= 99.5% as DWARF ($same/$all; $inl with inlined frames)" \
				'[ $((same * 1000)) -ge $((all * 995)) ] && [ "$inl" -gt 1000 ]'
		done
		# Stripped PIE builds, with each Go here (Debian's 1.19 names the
		# section .data.rel.ro.gopclntab and leaves textStart to a relocation).
		for gobin in go /usr/bin/go; do
			command -v "$gobin" >/dev/null || continue
			gv=$("$gobin" env GOVERSION)
			(cd "$tmp" && "$gobin" build -buildmode=pie -o gopie gomain.go) 2>>"$tmp/go.log" ||
				fail "$gv: go build -buildmode=pie failed: $(tail -3 "$tmp/go.log")"
			hot=$(go tool nm "$tmp/gopie" | awk '$3 == "main.hotLoop" { print $1 }')
			want_line=$(go tool addr2line "$tmp/gopie" <<<"0x$hot" | tail -1 | sed 's/.*://')
			strip -o "$tmp/gopie.stripped" "$tmp/gopie"
			"$SYMQ" "$tmp/gopie.stripped" "0x$hot" >"$tmp/gopie.out"
			checkx "stripped Go PIE ($gv): main.hotLoop at gomain.go:$want_line ($(cut -f3- "$tmp/gopie.out"))" \
				'grep -qP "\tmain.hotLoop\tgomain.go:$want_line\tgopclntab" "$tmp/gopie.out"'
		done
	else
		fail "go build failed: $(tail -3 "$tmp/go.log")"
	fi
else
	echo "skip - go not installed"
fi

[ "$nfail" = 0 ] || exit 1
