#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_python.sh - Python functions by name from the eBPF agent,
# with no change to the programs (agent/interp.h, interp_python.c):
#   - Debian's python3.11 runs tests/workloads/hot.py, which measures its
#     own CPU split (time.thread_time per call) between work_a, work_b,
#     Outer.run and work_hash (hashlib: a C extension into libcrypto):
#     profd's shares of each must be within 5 points of the program's;
#     the stack must read <module> -> main -> work_a -> spin; the hash
#     path Python -> the extension's native frames -> libcrypto; each
#     function's file is hot.py and its line lies in its body (the def
#     lines come from Python's own ast of the file);
#   - a mixed host: two Python processes started before the agent and two
#     after, each named (functions of its own in its flame graph);
#   - any other CPython 3.11 / 3.12 build on PATH (a build with libpython
#     linked in) is named too; a CPython whose version is not supported is
#     refused and counted (supported="false"), never named;
#   - tests/workloads/pycorrupt.py breaks its own code objects (a name
#     pointer to unmapped memory, a garbage line table): the agent keeps
#     running under ASan, counts those stacks as not named and shows no
#     garbage name.
# The agent samples at 99 Hz; hot.py runs until it has used 4 s of CPU
# (~400 samples: the binomial sd of a 50 % share is 2.5 points).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
agent_lib_init

PY=/usr/bin/python3.11
if [ ! -x "$PY" ]; then
	skip "no python3.11 (Debian package python3.11)"
fi
type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
mport=$(free_port)

# Two Python processes that run before the agent starts.
for i in 1 2; do
	"$PY" tests/workloads/hot.py 30 >"$tmp/early$i.out" 2>&1 &
	extra_pids="$extra_pids $!"
done
early_pids=$extra_pids

agent_start_server
agent_start --server "$base" --interval 2s --frequency 99 --metrics-listen "127.0.0.1:$mport"
echo "ok agent attached"

"$PY" tests/workloads/hot.py 4 hash >"$tmp/hot.out" 2>&1 &
hot_pid=$!
late_pids=
for i in 1 2; do
	"$PY" tests/workloads/hot.py 3 >"$tmp/late$i.out" 2>&1 &
	late_pids="$late_pids $!"
done
extra_pids="$extra_pids $hot_pid $late_pids"
others=()
for name in python3.11 python3.12 python3.13; do
	# The interpreter itself (a version manager's shim may stand on PATH).
	p=$("$name" -c 'import sys; print(sys.executable)' 2>/dev/null || true)
	[ -n "$p" ] && [ -x "$p" ] && [ "$(readlink -f "$p")" != "$(readlink -f "$PY")" ] && others+=("$p")
done
# Builds a version manager keeps beside the one on PATH (pyenv's 3.12, 3.13).
if command -v pyenv >/dev/null; then
	for v in $(pyenv versions --bare 2>/dev/null | grep -E '^3\.1[23]\.[0-9]+$'); do
		p="$(pyenv root)/versions/$v/bin/python${v%.*}"
		[ -x "$p" ] && others+=("$p")
	done
fi
other_pids=
for p in "${others[@]}"; do
	"$p" tests/workloads/hot.py 2 >"$tmp/other-$(basename "$p").out" 2>&1 &
	other_pids="$other_pids $!"
done
extra_pids="$extra_pids $other_pids"
"$PY" tests/workloads/pycorrupt.py 2 >"$tmp/corrupt.out" 2>&1 &
corrupt_pid=$!
extra_pids="$extra_pids $corrupt_pid"

wait "$hot_pid" || die "hot.py failed: $(cat "$tmp/hot.out")"
for p in $late_pids $other_pids $corrupt_pid; do
	wait "$p" || true
done
grep -q done "$tmp/corrupt.out" || die "pycorrupt.py failed: $(cat "$tmp/corrupt.out")"
sleep 3 # the last interval
kill -0 "$agent_pid" || die "agent died"
curl -fs "http://127.0.0.1:$mport/metrics" >"$tmp/metrics.txt" || die "no agent metrics"
for p in $early_pids; do
	kill "$p" 2>/dev/null || true
done
agent_stop

curl -fsG "$base/api/v1/table" --data-urlencode "type=$type" \
	--data-urlencode "query={process.pid=\"$hot_pid\"}" --data-urlencode "from=now-10m" \
	--data-urlencode "to=now" --data-urlencode "limit=5000" -o "$tmp/table.json" ||
	die "table query failed"
agent_flame "$type" "{process.pid=\"$hot_pid\"}" "$tmp/flame.json"
python3 - "$tmp/table.json" "$tmp/flame.json" "$tmp/hot.out" tests/workloads/hot.py <<'PY' ||
import ast, json, sys

table, flame = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
own = dict((l.split()[0], float(l.split()[1])) for l in open(sys.argv[3]) if l.strip())
defs = {}
for n in ast.walk(ast.parse(open(sys.argv[4]).read())):
    if isinstance(n, (ast.FunctionDef, ast.ClassDef)):
        for m in [n] + [b for b in n.body if isinstance(b, ast.FunctionDef)]:
            name = m.name if m is n or isinstance(n, ast.FunctionDef) else n.name + "." + m.name
            defs[name] = (m.lineno, m.end_lineno)
rows = {r["name"]: r for r in table["rows"]}
total = table["total"]
if table["samples"] < 250:
    sys.exit(f"too few samples: {table['samples']}")
for fn, share in own.items():
    r = rows.get(fn)
    if not r:
        sys.exit(f"{fn} not in the table (functions: {sorted(rows)[:40]})")
    got = r["total"] / total
    print(f"  {fn}: profd {got:.3f}, program {share:.3f}")
    if abs(got - share) > 0.05:
        sys.exit(f"{fn}: share {got:.3f}, the program measured {share:.3f}")
    lo, hi = defs[fn]
    if not (r.get("file") or "").endswith("hot.py") or not (lo <= (r.get("line") or 0) <= hi):
        sys.exit(f"{fn}: file {r.get('file')} line {r.get('line')}, want hot.py lines {lo}-{hi}")

def paths(node, prefix):
    here = prefix + [node["name"]]
    yield here
    for c in node.get("children", []):
        yield from paths(c, here)

def has_run(seq):
    for p in paths(flame["root"], []):
        for i in range(len(p) - len(seq) + 1):
            if p[i:i + len(seq)] == seq:
                return True
    return False

if not has_run(["<module>", "main", "work_a", "spin"]):
    sys.exit("no <module> -> main -> work_a -> spin path")
# work_hash -> native frames of the extension (EVP_*) -> libcrypto, in that order.
ok = False
for p in paths(flame["root"], []):
    if "work_hash" in p:
        rest = p[p.index("work_hash") + 1:]
        ext = [i for i, n in enumerate(rest) if n.startswith(("EVP_", "_hashlib", "py_digest"))]
        crypto = [i for i, n in enumerate(rest) if "libcrypto" in n or n.startswith(("SHA256", "sha256"))]
        if ext and crypto and ext[0] < crypto[-1] and not any(n in own for n in rest):
            ok = True
            break
if not ok:
    sys.exit("no work_hash -> extension -> libcrypto path")
print("ok python stack order and the program's own shares")
PY
	die "python flame graph check"

named=$(awk -F' ' '/profd_agent_interp_samples_total\{runtime="cpython",exe="python3.11",version="3.11[^"]*",result="named"\}/ { s += $2 } END { print s + 0 }' "$tmp/metrics.txt")
sent=$(awk -F' ' '/profd_agent_interp_samples_total\{runtime="cpython",exe="python3.11",version="3.11[^"]*",result="sent"\}/ { s += $2 } END { print s + 0 }' "$tmp/metrics.txt")
bad=$(awk -F' ' '/profd_agent_interp_samples_total\{runtime="cpython",exe="python3.11",.*result="(read_failed|corrupt|stale)"\}/ { s += $2 } END { print s + 0 }' "$tmp/metrics.txt")
echo "  interpreter stacks: sent $sent, named $named, not named $bad"
[ "$named" -gt 0 ] || die "no Python stack named"
# All but pycorrupt's broken stacks are named.
python3 -c "import sys; n,s,b=map(int,sys.argv[1:]); sys.exit(0 if n >= 0.99*(s-b) else 1)" "$named" "$sent" "$bad" ||
	die "only $named of $((sent - bad)) unbroken Python stacks named"
[ "$bad" -gt 0 ] || die "pycorrupt.py's broken stacks were not counted"
echo "ok $named Python stacks named, pycorrupt's $bad counted as not named"

# Every Python process, before and after the agent, is named.
for p in $early_pids $late_pids; do
	agent_flame "$type" "{process.pid=\"$p\"}" "$tmp/p$p.json"
	grep -q '"work_a"' "$tmp/p$p.json" || die "process $p (hot.py) not named"
done
echo "ok 2 Python processes started before the agent and 2 after named"

# The broken program: no garbage name, its intact function named.
agent_flame "$type" "{process.pid=\"$corrupt_pid\"}" "$tmp/corrupt.json"
python3 - "$tmp/corrupt.json" <<'PY' || die "pycorrupt check"
import json, sys
names = set()
def walk(n):
    names.add(n["name"])
    for c in n.get("children", []):
        walk(c)
walk(json.load(open(sys.argv[1]))["root"])
if "bad_name" in names:
    sys.exit("bad_name was named through a broken name pointer")
odd = [n for n in names if any(ord(ch) < 32 for ch in n)]
if odd:
    sys.exit(f"garbage names: {odd}")
print("ok pycorrupt.py: no garbage names")
PY

# Other builds on PATH: 3.11 and 3.12 named, later versions refused and counted.
for p in "${others[@]}"; do
	v=$("$p" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	case "${v%.*}" in
	3.11 | 3.12)
		grep -q "runtime=\"cpython\".*version=\"$v\",result=\"named\"} [1-9]" "$tmp/metrics.txt" ||
			die "$p ($v) not named: $(grep 'runtime="cpython"' "$tmp/metrics.txt" | head -n 20)"
		echo "ok $p ($v) named"
		;;
	*)
		grep -q "runtime=\"cpython\",.*version=\"${v%.*}[^\"]*\",supported=\"false\"" "$tmp/metrics.txt" ||
			die "$p ($v) not counted as unsupported"
		echo "ok $p ($v) refused and counted"
		;;
	esac
done

# A refused version reaches stack health with its reason.
for p in "${others[@]}"; do
	v=$("$p" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	case "${v%.*}" in
	3.11 | 3.12) continue ;;
	esac
	curl -fsG "$base/api/v1/health/symbols" --data-urlencode "type=$type" \
		--data-urlencode "from=now-10m" --data-urlencode "to=now" -o "$tmp/health.json" ||
		die "stack health query failed"
	python3 - "$tmp/health.json" "$v" <<'PY' || die "stack health does not name $p ($v) as unsupported"
import json, sys
got = json.load(open(sys.argv[1])).get("unsupported_runtimes", [])
want = f"cpython {sys.argv[2]}: interpreter frames not supported"
if want not in got:
    sys.exit(f"want {want!r} in {got}")
print(f"ok stack health: {want}")
PY
done
