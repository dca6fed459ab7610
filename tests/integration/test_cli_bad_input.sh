#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_cli_bad_input.sh - `profd top` and `profd convert` on bad input exit
# with status 1 and a reason naming the field or byte offset, never crash:
# a truncated pprof, random bytes, a gzip bomb expanding past the 256 MiB
# cap, a sample pointing at a missing location, a string index out of
# range, and an OTLP request whose sample points past the stack table;
# `profd agent` with unusable server/kubelet URLs exits 2 before any BPF;
# file names with terminal escapes in them are printed escaped.
# Inputs are made here (python3, stdlib only), not taken from the corpus.
# Environment: PROFD (binary under test).
set -uo pipefail
cd "$(dirname "$0")/../.."
PROFD=${PROFD:-build-san/profd}
source tests/integration/lib.sh
need_bin "$PROFD"
lib_tmp

python3 - "$tmp" <<'PY'
import gzip, random, sys, zlib
d = sys.argv[1]
def w(name, data):
    open(d + "/" + name, "wb").write(data)
strings = b"\x32\x00\x32\x03cpu\x32\x0bnanoseconds\x32\x04main"
good = (b"\x0a\x04\x08\x01\x10\x02"      # sample_type {cpu, nanoseconds}
        b"\x12\x04\x08\x01\x10\x07"      # sample {location_id 1, value 7}
        b"\x22\x06\x08\x01\x22\x02\x08\x01"  # location {id 1, line {function_id 1}}
        b"\x2a\x04\x08\x01\x10\x03"      # function {id 1, name "main"}
        + strings)
w("good.pb", good)
w("truncated.pb.gz", gzip.compress(good[:9]))
w("missing-location.pb", good.replace(b"\x12\x04\x08\x01\x10\x07", b"\x12\x04\x08\x05\x10\x07"))
w("bad-string.pb", good.replace(b"\x2a\x04\x08\x01\x10\x03", b"\x2a\x04\x08\x01\x10\x09"))
w("random.bin", bytes(random.Random(7).getrandbits(8) for _ in range(4096)))
# 300 MiB of zeros, gzipped in pieces (~300 KiB on disk)
z = zlib.compressobj(1, zlib.DEFLATED, 31)
chunk = bytes(1 << 20)
out = [z.compress(chunk) for _ in range(300)]
out.append(z.flush())
w("bomb.pb.gz", b"".join(out))
# OTLP: resource_profiles{scope_profiles{profiles{sample_type{1,2}, samples{stack_index 3, values 1}}}}
sample = b"\x08\x03\x22\x01\x01"
profile = b"\x0a\x04\x08\x01\x10\x02" + b"\x12" + bytes([len(sample)]) + sample
scope = b"\x12" + bytes([len(profile)]) + profile
rp = b"\x12" + bytes([len(scope)]) + scope
dictionary = b"\x2a\x00\x2a\x03cpu\x2a\x0bnanoseconds\x3a\x00"
w("bad-stack.otlp.pb", b"\x0a" + bytes([len(rp)]) + rp + b"\x12" + bytes([len(dictionary)]) + dictionary)
PY

# expect FILE PATTERN: profd top must exit 1 with PATTERN (grep -E) on stderr.
expect() {
	local file=$1 pattern=$2 rc
	for cmd in "top" "convert"; do
		if [ "$cmd" = top ]; then
			"$PROFD" top "$tmp/$file" >"$tmp/out" 2>"$tmp/err"
		else
			"$PROFD" convert "$tmp/$file" "$tmp/out.pb.gz" >"$tmp/out" 2>"$tmp/err"
		fi
		rc=$?
		if [ $rc = 1 ] && grep -qE "$pattern" "$tmp/err" && ! grep -q Sanitizer "$tmp/err"; then
			ok "$cmd $file: $(head -c 300 "$tmp/err")"
		else
			fail "$cmd $file: exit $rc, stderr: $(head -c 600 "$tmp/err")"
			echo "     wanted exit 1 and /$pattern/"
		fi
	done
}

if "$PROFD" top --json "$tmp/good.pb" | grep -q '"totals":{"cpu":7}'; then
	ok "the handmade profile decodes"
else
	fail "the handmade profile does not decode"
fi
expect truncated.pb.gz 'Profile\.sample: length 4 runs past the end \(1 bytes left\) at byte 7 \(offset in the gunzipped data\)'
expect missing-location.pb 'sample\[0\]: location_id\[0\] = 5 not found \(1 locations\)'
expect bad-string.pb 'function\[0\]\.name: string index 9 out of range \(4 strings\)'
expect random.bin 'at byte [0-9]+'
expect bomb.pb.gz 'decompressed size exceeds the limit of 268435456 bytes'
head -c 4096 "$PROFD" >"$tmp/elf.bin"
expect elf.bin 'this is an ELF binary, not a profile'
expect bad-stack.otlp.pb 'otlp: profile 0 sample 0: stack_index 3 out of range \(1 stacks\)'
# Lenient folded input: bad lines are skipped, and said so on stderr.
printf 'main;foo 3\nmain;bar notanumber\na;b -5\nmain;foo 2\n' >"$tmp/badc.folded"
"$PROFD" top "$tmp/badc.folded" >"$tmp/out" 2>"$tmp/err"
if [ $? = 0 ] && grep -q "skipped 2 invalid lines (first: line 2)" "$tmp/err" && grep -q " 5 .*foo" "$tmp/out"; then
	ok "top on folded input with 2 bad lines: counts the rest, notes the skip"
else
	fail "top on folded input with bad lines: $(head -c 300 "$tmp/err")"
fi

# File names are text for a terminal (cli/termtext.h): an ESC or 0x9b in
# one is printed escaped, in the header and in the errors alike.
esc=$(printf 'x\033[31m\233y')
cp "$tmp/good.pb" "$tmp/$esc.pb"
names_escaped() { # DESCRIPTION WANT-FIXED-STRING FILE...
	local what=$1 want=$2
	shift 2
	if grep -qF -- "$want" "$@" && ! grep -q "$(printf '\033')" "$@" &&
		! LC_ALL=C grep -q "$(printf '\233')" "$@"; then
		ok "$what"
	else
		fail "$what: $(head -c 300 "$@" | od -c | head -5)"
	fi
}
"$PROFD" top "$tmp/$esc.pb" >"$tmp/out" 2>"$tmp/err"
names_escaped "top: the File: line escapes the name" 'File: '"$tmp"'/x\x1b[31m\x9by.pb' "$tmp/out" "$tmp/err"
"$PROFD" top "$tmp/no-$esc.pb" >"$tmp/out" 2>"$tmp/err"
names_escaped "top: the no-such-file error escapes the name" \
	'no-x\x1b[31m\x9by.pb: No such file' "$tmp/err"
"$PROFD" top --type "$esc" "$tmp/good.pb" >"$tmp/out" 2>"$tmp/err"
names_escaped "top: --type echoed escaped" "no sample type 'x\x1b[31m\x9by'" "$tmp/err"
"$PROFD" convert "$tmp/no-$esc.pb" "$tmp/out.pb.gz" >"$tmp/out" 2>"$tmp/err"
names_escaped "convert: the input name escaped" 'no-x\x1b[31m\x9by.pb: No such file' "$tmp/err"
"$PROFD" convert "$tmp/good.pb" "$tmp/$esc.unknown" >"$tmp/out" 2>"$tmp/err"
names_escaped "convert: the output name escaped" 'x\x1b[31m\x9by.unknown: unknown output format' "$tmp/err"
"$PROFD" store check "$tmp/no-$esc" >"$tmp/out" 2>"$tmp/err"
names_escaped "store check: the directory escaped" 'no-x\x1b[31m\x9by' "$tmp/out" "$tmp/err"

# The agent checks its URLs before it touches BPF (usage error: exit 2).
agent_url() { # ARGS... PATTERN
	local pattern=${*: -1} rc
	"$PROFD" agent "${@:1:$#-1}" --duration 1ms >"$tmp/out" 2>"$tmp/err"
	rc=$?
	if [ $rc = 2 ] && grep -qE -- "$pattern" "$tmp/err"; then
		ok "agent ${*:1:$#-1}: $(head -c 200 "$tmp/err")"
	else
		fail "agent ${*:1:$#-1}: exit $rc, stderr: $(head -c 300 "$tmp/err")"
	fi
}
agent_url --server http:// "--server 'http://': no host"
agent_url --server http://127.0.0.1:99999 "port must be a number 1\.\.65535"
agent_url --server ftp://x "want http://, https:// \(OTLP/HTTP\), grpc:// or grpcs://"
agent_url --server http://h: "empty port"
agent_url --server 'http://[::1' "unclosed '\['"
agent_url --server http://h:1 --k8s-kubelet grpc://x "--k8s-kubelet 'grpc://x': want http:// or https://"
agent_url --server grpc://h:4317 --debuginfo-server h:80 "--debuginfo-server 'h:80': want http"
echo "$npass passed, $nfail failed"
[ "$nfail" = 0 ]
