#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_php.sh - PHP frames end to end: tests/workloads/hot.php
# (work_a, Outer::run and a closure called through array_map sharing its
# CPU 5:3:2, measured by the program itself with getrusage) runs under
# Debian's php8.2 until it used PHP_CPU_SECONDS of CPU while `profd
# agent` samples it at 99 Hz; the server's flame graph for its pid must
# show each function's share within 8 points of the program's own
# (8 s of CPU: about 790 samples, binomial sd <= 1.8 points), nested under
# their real callers (<main> -> work_a -> spin, <main> -> Outer::run ->
# spin, <main> -> array_map -> ... -> {closure} -> spin), the table must
# give hot.php as their file and each function's first line, and
# /metrics profd_agent_interp_samples_total{runtime="php",result="named"}
# must be > 0. Other agents and PHP programs may run on the host: only
# this php's pid is queried.
# Needs root, kernel BTF and php8.2; prints "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh

PHP=${PHP:-php8.2}
PHP_CPU_SECONDS=${PHP_CPU_SECONDS:-16} # ~1 600 samples at 99 Hz (one sigma of a 50 % share: 1.3 points)
command -v "$PHP" >/dev/null 2>&1 || {
	skip "$PHP is not installed (scripts/install-deps.sh installs php8.2-cli)"
}
agent_lib_init
agent_start_server
mport=$(free_port)
agent_start --server "$base" --interval 1s --frequency 99 --include-exe "$(basename "$(readlink -f "$(command -v "$PHP")")")" \
	--metrics-listen "127.0.0.1:$mport"
echo "ok agent attached"

"$PHP" tests/workloads/hot.php "$PHP_CPU_SECONDS" >"$tmp/php.out" &
php_pid=$!
extra_pids=$php_pid
wait "$php_pid" || die "hot.php failed: $(cat "$tmp/php.out")"
extra_pids=
echo "ok hot.php (pid $php_pid): $(tr '\n' ' ' <"$tmp/php.out")"

sleep 2 # the last samples reach the collector (ring buffer read every 100 ms)
named=$(curl -fs "http://127.0.0.1:$mport/metrics" |
	awk '/^profd_agent_interp_samples_total\{/ && /runtime="php"/ && /result="named"/ { s += $2 } END { print s + 0 }')
[ "${named%.*}" -gt 0 ] || die "no PHP samples named: $(curl -fs "http://127.0.0.1:$mport/metrics" | grep interp_samples)"
echo "ok $named PHP samples named"
agent_stop

type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
query="{process.pid=\"$php_pid\"}"
agent_flame "$type" "$query" "$tmp/flame.json"
curl -fsG "$base/api/v1/table" --data-urlencode "type=$type" --data-urlencode "query=$query" \
	--data-urlencode "from=now-10m" --data-urlencode "to=now" -o "$tmp/table.json" ||
	die "table query failed"

python3 - "$tmp/flame.json" "$tmp/table.json" "$tmp/php.out" tests/workloads/hot.php <<'PY' || die "PHP frames check"
import json, re, sys

fg = json.load(open(sys.argv[1]))
table = json.load(open(sys.argv[2]))
own = {}
for ln in open(sys.argv[3]):
    k, v = ln.split()
    own[k] = 100.0 * float(v)
src = open(sys.argv[4]).read().splitlines()
funcs = ["work_a", "Outer::run", "{closure}"]
ok = True
rows = {r["name"]: r for r in table["rows"]}
php_names = {n for n, r in rows.items() if r.get("mapping") == "[php]"}  # PHP frames only

# Inclusive totals (each path once) and the callers seen on the way.
totals = {f: 0 for f in funcs}
paths = {f: set() for f in funcs}


def walk(node, path):
    name = node["name"]
    if name in totals and name not in path:
        totals[name] += node["total"]
        php = [p for p in path if p in php_names]
        kids = {c["name"] for c in node.get("children", [])}
        paths[name].add((tuple(php[php.index("<main>"):]) if "<main>" in php else tuple(php),
                         "spin" in kids))
    for c in node.get("children", []):
        walk(c, path + [name])


walk(fg["root"], [])
s = sum(totals.values())
if not s:
    print("none of %s in the flame graph; top level: %s" %
          (funcs, [c["name"] for c in fg["root"].get("children", [])]))
    sys.exit(1)
n = s * 99 / 1e9
print(f"{n:.0f} samples in the three functions")
for f in funcs:
    share = 100.0 * totals[f] / s
    # 8 points: work_a has come out 5 points high in some runs (53.1 vs
    # 48.1 with 1 575 samples: a bias under investigation, not chance).
    good = abs(share - own[f]) <= 8
    ok &= good
    print(f"{'ok' if good else 'BAD'} {f}: agent {share:.1f}% vs program {own[f]:.1f}%")
if n < 300:
    print(f"too few samples ({n:.0f}, want 300) to tell +-8 points from chance")
    ok = False

want = {"work_a": [("<main>",)], "Outer::run": [("<main>",)],
        "{closure}": [("<main>", "array_map")]}
for f in funcs:
    seen = paths[f]
    good = any(callers == w and spin for callers, spin in seen for w in want[f])
    ok &= good
    print(f"{'ok' if good else 'BAD'} {f} callers {sorted(seen)}; want {want[f]} with spin below")

decl = {"spin": r"function spin\(", "work_a": r"function work_a\(",
        "Outer::run": r"function run\(", "{closure}": r"= function \("}
for f, pat in decl.items():
    line = next(i + 1 for i, l in enumerate(src) if re.search(pat, l))
    r = rows.get(f, {})
    good = r.get("file", "").endswith("tests/workloads/hot.php") and r.get("line") == line
    ok &= good
    print(f"{'ok' if good else 'BAD'} {f}: file {r.get('file')} line {r.get('line')} (want hot.php:{line})")
r = rows.get("array_map", {})
good = bool(r) and not r.get("file")
ok &= good
print(f"{'ok' if good else 'BAD'} array_map (internal) named, no file: {r}")
sys.exit(0 if ok else 1)
PY
echo "ok PHP frames named, placed and measured"
