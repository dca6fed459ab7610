#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_node.sh - Node.js JavaScript functions by name from the eBPF
# agent, with no flag in the program (agent/jit.h, jit_v8.c):
#   - node (20.x on PATH: V8 11.3, with its v8dbg_* constants) runs
#     tests/workloads/v8mix.js, which spends its CPU in crunch (plain),
#     digest (async), an anonymous closure and Matrix.prototype.multiply,
#     under `--cpu-prof`: V8's own sampler in the same process is the
#     reference. For each of the four, profd's share of the process's CPU
#     (frames of type v8js, named as V8's DebugName: the closure is
#     "(anonymous)", cpuprofile's "") must be within 5 points of the
#     cpuprofile's. Shares are of the program's own run: a function's
#     samples directly under main over main's, on both sides (the two
#     samplers see node's start-up, its other threads and the GC
#     differently);
#   - each function's file is v8mix.js and its line lies in its body;
#   - the stack reads main -> crunch (JavaScript caller above callee) and
#     native frames stay in place: node's own entry trampolines
#     (Builtins_JSRunMicrotasksEntry: main resumes after its awaits) below
#     main;
#   - a function run interpreted, then optimized, has one name (crunch
#     appears once in the table);
#   - the agent's metrics count V8 frames stepped and named.
# The agent samples at 99 Hz; v8mix.js runs 6 s, on until it has used
# 4.5 s of CPU (~450 samples: a 30 % share has a binomial sd of 2.2
# points; both samplers see the same run, so most of that is shared).
# Needs root, kernel BTF and node 20; prints "skip: <why>" otherwise.
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
command -v node >/dev/null || {
	skip "node is not installed"
}
case "$(node --version)" in
v20.*) ;;
*)
	skip "node $(node --version) is not Node.js 20 (V8 11.3)"
	;;
esac
agent_lib_init
MS=${NODE_MS:-6000}
type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
mport=$(free_port)

agent_start_server
agent_start --server "$base" --interval 2s --frequency 99 --include-exe node \
	--metrics-listen "127.0.0.1:$mport"
echo "ok agent attached"
node --cpu-prof --cpu-prof-dir="$tmp/cpuprof" tests/workloads/v8mix.js "$MS" 4500 &
npid=$!
extra_pids=$npid
wait "$npid" || die "node failed"
extra_pids=
sleep 3 # the last interval
kill -0 "$agent_pid" || die "agent died"
curl -fs "http://127.0.0.1:$mport/metrics" >"$tmp/metrics.txt" || die "no agent metrics"
agent_stop
prof=$(ls "$tmp"/cpuprof/*.cpuprofile 2>/dev/null | head -n 1)
[ -s "$prof" ] || die "node wrote no .cpuprofile"

curl -fsG "$base/api/v1/table" --data-urlencode "type=$type" \
	--data-urlencode "query={process.pid=\"$npid\"}" --data-urlencode "from=now-10m" \
	--data-urlencode "to=now" --data-urlencode "limit=5000" -o "$tmp/table.json" ||
	die "table query failed"
agent_flame "$type" "{process.pid=\"$npid\"}" "$tmp/flame.json"
python3 - "$tmp/table.json" "$tmp/flame.json" "$prof" tests/workloads/v8mix.js \
	"$tmp/metrics.txt" <<'PY' || die "V8 frames"
import json, re, sys

table, flame, prof = (json.load(open(p)) for p in sys.argv[1:4])
total = table["total"]
src = open(sys.argv[4]).read().split("\n")
metrics = open(sys.argv[5]).read()

def paths(node, prefix):
    here = prefix + [node["name"]]
    yield here
    for c in node.get("children", []):
        yield from paths(c, here)

# Shares of the program's own run: each function's samples directly under
# main, over main's (both samplers see node's start-up, its other threads
# and the GC differently; under main they see the same work). The closure
# is V8's "" (cpuprofile) and profd's "(anonymous)".
want = {"crunch": "crunch", "digest": "digest", "(anonymous)": "", "multiply": "multiply"}
nodes = {n["id"]: n for n in prof["nodes"]}
parent = {c: n["id"] for n in prof["nodes"] for c in n.get("children", [])}
ref, ref_main = dict.fromkeys(want, 0), 0
for s in prof["samples"]:
    chain, i = [], s
    while i is not None:
        cf = nodes[i]["callFrame"]
        chain.append((cf["functionName"], cf["url"].endswith("v8mix.js")))
        i = parent.get(i)
    chain.reverse()  # root first
    for k in range(len(chain)):
        if chain[k] == ("main", True):
            ref_main += 1
            if k + 1 < len(chain) and chain[k + 1][1]:
                for fn, v in want.items():
                    ref[fn] += chain[k + 1][0] == v
            break

mine, mine_main = dict.fromkeys(want, 0), 0
def under_main(node, above):
    global mine_main
    if node["name"] == "main" and "main" not in above:
        mine_main += node["total"]
        for c in node.get("children", []):
            if c["name"] in mine:
                mine[c["name"]] += c["total"]
        return
    for c in node.get("children", []):
        under_main(c, above + [node["name"]])
under_main(flame["root"], [])
if table["samples"] < 250 or not mine_main or not ref_main:
    sys.exit(f"too few samples: {table['samples']}, under main {mine_main}, cpuprofile {ref_main}")

# Function bodies: from the definition to the next line closing a block at
# the definition's indentation.
def body(name):
    pat = {"crunch": r"^function crunch\(", "digest": r"^async function digest\(",
           "multiply": r"^\tmultiply\("}[name]
    lo = next(i for i, l in enumerate(src, 1) if re.search(pat, l))
    ind = re.match(r"^\t*", src[lo - 1]).group(0)
    hi = next((i for i, l in enumerate(src, 1) if i > lo and l == ind + "}"), len(src))
    return lo, hi

rows = table["rows"]
for fn in want:
    got, exp = mine[fn] / mine_main, ref[fn] / ref_main
    line = ""
    if fn != "(anonymous)":  # the table merges every "(anonymous)" of node's own files
        r = [r for r in rows if r["name"] == fn]
        if len(r) != 1 or not (r[0].get("file") or "").endswith("v8mix.js"):
            sys.exit(f"{fn}: rows {r} (functions: {sorted(x['name'] for x in rows)[:60]})")
        lo, hi = body(fn)
        line = f"; line {r[0].get('line')} in {lo}-{hi}"
        if not (lo <= (r[0].get("line") or 0) <= hi):
            sys.exit(f"{fn}: line {r[0].get('line')}, want {lo}-{hi}")
    print(f"  {fn}: profd {got:.3f}, cpuprofile {exp:.3f}{line}")
    if abs(got - exp) > 0.05:
        sys.exit(f"{fn}: share {got:.3f}, cpuprofile {exp:.3f}")

ok_run = ok_native = False
for p in paths(flame["root"], []):
    for i in range(len(p) - 1):
        if p[i] == "main" and p[i + 1] == "crunch":
            ok_run = True
            ok_native |= any(re.match(r"Builtins_JS\w*Entry", x) for x in p[:i])
if not ok_run:
    sys.exit("no main -> crunch path")
if not ok_native:
    sys.exit("no Builtins_JS*Entry native frame below main")

named = [l for l in metrics.splitlines() if "v8js" in l and not l.startswith("#")]
if not named:
    sys.exit("no v8js series in the agent's metrics")
print(f"ok {table['samples']} samples ({mine_main / total:.0%} under main), "
      f"{len(prof['samples'])} cpuprofile samples; {len(named)} v8js metric series")
PY
echo "ok agent names Node.js functions as V8's profiler does"

# hide=node: Node.js's own frames (native, Builtins_*, and its JavaScript in
# node:* scripts) go; the workload's functions keep their whole time.
curl -fsG "$base/api/v1/flamegraph" --data-urlencode "type=$type" \
	--data-urlencode "query={process.pid=\"$npid\"}" --data-urlencode "from=now-10m" \
	--data-urlencode "to=now" --data-urlencode "max_nodes=20000" --data-urlencode "hide=node" \
	-o "$tmp/flame-hidden.json" || die "flame graph with hide=node failed"
python3 - "$tmp/flame.json" "$tmp/flame-hidden.json" <<'PY' || die "hide=node"
import json, sys

def totals(fg):
    out, todo = {}, [fg["root"]]
    while todo:
        n = todo.pop()
        out.setdefault(n["name"], 0)
        out[n["name"]] += n.get("value", n.get("total", 0))
        todo.extend(n.get("children", []))
    return out

full, hidden = (totals(json.load(open(p))) for p in sys.argv[1:3])
internal_js = [n for n in full if n in ("Module._compile", "executeUserEntryPoint", "processTicksAndRejections",
                                        "runMicrotasks", "Module._load", "Module.load")]
left = [n for n in hidden if n.startswith("Builtins_") or n.startswith("node::") or n in internal_js]
if not any(n.startswith("Builtins_") for n in full):
    sys.exit(f"no Node.js frame in the full graph to hide: {sorted(full)[:40]}")
if left:
    sys.exit(f"hide=node left Node.js frames: {left[:10]}")
for fn in ("crunch", "digest", "multiply"):
    if full.get(fn, 0) == 0 or hidden.get(fn, 0) < full[fn]:
        sys.exit(f"{fn}: {full.get(fn)} in the full graph, {hidden.get(fn)} with hide=node")
print(f"ok hide=node: every Builtins_*/node:: frame and Node.js JavaScript name sampled "
      f"({', '.join(internal_js) or 'none this run'}) hidden; crunch/digest/multiply kept")
PY
