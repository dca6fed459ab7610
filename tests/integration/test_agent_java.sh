#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# test_agent_java.sh - Java methods by name from the eBPF agent, with no
# flag in the JVM (agent/jit_hotspot.c reads the JVM's own tables):
# Debian's OpenJDK 17 runs tests/workloads/HotSplit.java (about 50 / 30 /
# 20 % of its CPU in HotSplit$Alpha.work, HotSplit$Beta.work and
# HotSplit.gamma, the first two through an interface, gamma calling the
# small HotSplit.mix that C2 inlines) with JFR recording in the same JVM
# (-XX:StartFlightRecording, the reference only; -XX:+PrintCompilation to
# see the JIT's steps), and:
#   - profd's shares of the three methods (each method's self time over
#     the three's, mix counted with gamma) agree with JFR's
#     jdk.ExecutionSample shares within 5 points;
#   - the stack below each reads HotSplit.main -> HotSplit.drive -> it,
#     over the call stub (a HotSpot stub frame named by the JVM) and
#     libjvm's JavaCalls down to the launcher's native frames;
#   - HotSplit.drive ran interpreted, then compiled by C2, then was
#     deoptimized when HotSplit$Delta came in (PrintCompilation: the tier
#     4 drive made not entrant after "delta at"), and recompiled: samples
#     of the main thread under HotSplit.main show drive (one name) in at
#     least 97 % of them, no "[jit]" or "Interpreter" frame in their Java
#     part;
#   - the agent's metrics count the JVM as supported and nearly all its
#     JIT frames as named.
# The agent samples at 499 Hz and JFR every 2 ms; the JVM runs until it
# has used 5 s of CPU: over 1000 samples of the three methods each, so
# the sd of the difference of two samplers' shares of a 30 % method is
# about 2 points (at 99 Hz and 10 ms it was 3.4, and 5 points failed
# by chance).
set -euo pipefail
cd "$(dirname "$0")/../.."
. tests/integration/agent_lib.sh
for t in java javac jfr; do
	command -v "$t" >/dev/null || {
		skip "$t is not installed"
	}
done
agent_lib_init
javac -d "$tmp/classes" tests/workloads/HotSplit.java tests/workloads/C2I.java || die "javac"
type='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
mport=$(free_port)

agent_start_server
agent_start --server "$base" --interval 2s --frequency 499 --metrics-listen "127.0.0.1:$mport"
echo "ok agent attached"
# JFR's Java sampler every 2 ms (the profile settings take 10 ms: too few samples).
cat >"$tmp/exec.jfc" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="exec" description="jdk.ExecutionSample only">
  <event name="jdk.ExecutionSample"><setting name="enabled">true</setting><setting name="period">2 ms</setting></event>
</configuration>
EOF
java -XX:StartFlightRecording=filename="$tmp/rec.jfr",settings="$tmp/exec.jfc" -XX:+PrintCompilation \
	-cp "$tmp/classes" HotSplit "${JAVA_SECONDS:-4}" "${JAVA_CPU_SECONDS:-5}" >"$tmp/java.out" 2>&1 &
jpid=$!
extra_pids=$jpid
wait "$jpid" || die "java HotSplit failed: $(tail -n 5 "$tmp/java.out")"
extra_pids=
# Another JDK the machine has (not 16..19): refused and counted, never named.
other=
for j in /usr/lib/jvm/*/bin/java; do
	v=$("$j" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -1)
	[ -n "$v" ] && { [ "$v" -lt 16 ] || [ "$v" -gt 19 ]; } && other=$j && break
done
if [ -n "$other" ]; then
	"$other" -cp "$tmp/classes" HotSplit 1.5 1 >"$tmp/other.out" 2>&1 &
	opid=$!
	wait "$opid" || die "$other failed"
fi
# An interpreted method called from compiled code (the compiled caller's rbp is no frame pointer).
java -XX:CompileCommand=quiet -XX:CompileCommand=exclude,C2I::leafInterp -cp "$tmp/classes" C2I 3 \
	>"$tmp/c2i.out" 2>&1 &
cpid=$!
wait "$cpid" || die "java C2I failed: $(tail -n 3 "$tmp/c2i.out")"
sleep 3 # the last interval
kill -0 "$agent_pid" || die "agent died"
curl -fs "http://127.0.0.1:$mport/metrics" >"$tmp/metrics.txt" || die "no agent metrics"
agent_stop
grep -Eq 'done [01]$' "$tmp/java.out" || die "HotSplit did not finish" # PrintCompilation may share its line

jfr print --json --events jdk.ExecutionSample "$tmp/rec.jfr" >"$tmp/jfr.json" ||
	die "jfr print of the recording"
curl -fsG "$base/api/v1/table" --data-urlencode "type=$type" \
	--data-urlencode "query={process.pid=\"$jpid\"}" --data-urlencode "from=now-10m" \
	--data-urlencode "to=now" --data-urlencode "limit=5000" -o "$tmp/table.json" ||
	die "table query failed"
agent_flame "$type" "{process.pid=\"$jpid\"}" "$tmp/flame.json"
python3 - "$tmp/table.json" "$tmp/flame.json" "$tmp/jfr.json" "$tmp/java.out" <<'PY' ||
import json, re, sys

table, flame, jfr = (json.load(open(p)) for p in sys.argv[1:4])
log = open(sys.argv[4]).read().splitlines()
LEAVES = ["HotSplit$Alpha.work", "HotSplit$Beta.work", "HotSplit.gamma"]
MIX = "HotSplit.mix"

def shares(per):
    tot = sum(per.values())
    return {m: v / tot for m, v in per.items()} if tot else {}, tot

# A sample counts for the innermost of the three methods on its stack (gamma's
# include the inlined mix; Beta's the JDK's Long.rotateLeft inlined in it).
rows = {r["name"]: r for r in table["rows"]}
ours, n_ours = shares({m: rows[m]["total_samples"] if m in rows else 0 for m in LEAVES})
per = dict.fromkeys(LEAVES, 0)
for ev in jfr["recording"]["events"]:
    for fr in ev["values"]["stackTrace"]["frames"]:
        name = fr["method"]["type"]["name"].replace("/", ".") + "." + fr["method"]["name"]
        if name in per:
            per[name] += 1
            break
theirs, n_theirs = shares(per)
print(f"  samples of the three methods: profd {n_ours:.0f}, JFR {n_theirs:.0f}")
if n_ours < 1000 or n_theirs < 1000:
    sys.exit("too few samples")
bad = False
for m in LEAVES:
    d = ours.get(m, 0) - theirs.get(m, 0)
    print(f"  {m}: profd {100 * ours.get(m, 0):.1f}%, JFR {100 * theirs.get(m, 0):.1f}% ({100 * d:+.1f})")
    bad |= abs(d) > 0.05
if bad:
    sys.exit("profd's shares differ from JFR's by more than 5 points")
print("ok profd's shares agree with JFR's within 5 points")

def paths(node, prefix):
    here = prefix + [node["name"]]
    if node.get("self"):
        yield here, node["self"]
    for c in node.get("children", []):
        yield from paths(c, here)

# Each method's stacks: main -> drive -> it, main over the call stub and JavaCalls.
under_main = drive = unnamed = 0
for m in LEAVES:
    mine = good = 0
    for p, v in paths(flame["root"], []):
        if p[-1] != m and not (m == "HotSplit.gamma" and p[-1] == MIX):
            continue
        mine += v
        i = p.index("HotSplit.main") if "HotSplit.main" in p else -1
        if i >= 2 and p[i + 1:i + 2] == ["HotSplit.drive"] and p[i - 1].startswith("StubRoutines") \
                and any(s.startswith("JavaCalls::call") for s in p[:i]):
            good += v
    print(f"  {m}: {100 * good / max(mine, 1):.1f}% of its time under JavaCalls -> stub -> main -> drive")
    if mine == 0 or good < 0.95 * mine:
        sys.exit(f"{m}: its callers are not HotSplit.drive <- HotSplit.main <- the call stub")
for p, v in paths(flame["root"], []):
    if "HotSplit.main" not in p:
        continue
    java = p[p.index("HotSplit.main"):]
    under_main += v
    drive += v * ("HotSplit.drive" in java)
    unnamed += v * any(s in ("[jit]", "Interpreter") for s in java)
print(f"  under HotSplit.main: drive in {100 * drive / under_main:.1f}%, unnamed JIT frames in {100 * unnamed / under_main:.1f}%")
if drive < 0.97 * under_main or unnamed > 0.01 * under_main:
    sys.exit("HotSplit.drive did not keep its name through its compilations")

# The JIT's steps for drive: tier 4 (C2) before Delta, that code made not entrant after.
at = next((i for i, l in enumerate(log) if re.search(r"\bdelta at \d+", l)), None)  # PrintCompilation may share its line
c2 = [i for i, l in enumerate(log) if "HotSplit::drive" in l and re.search(r"\s4\s+HotSplit::drive", l)]
if at is None or not any(i < at for i in c2) or \
        not any(i > at and "made not entrant" in log[i] for i in c2):
    sys.exit("drive was not compiled by C2 before Delta and deoptimized after (PrintCompilation)")
print("ok drive: interpreted, C2-compiled, deoptimized, recompiled; one name throughout")
PY
	die "java profile check"

# Frames the agent could not name: stale (code freed or moved between the
# sample and its naming: detected, never misnamed), exited (the JVM had
# exited before its last samples were named: its memory is gone), and the
# reader's own failures while the JVM lived (read_failed, corrupt), which
# must stay rare.
jvm_frames() {
	awk -v r="$1" '/profd_agent_jit_runtime_frames_total\{runtime="jvm",exe="java",version="17/ && $0 ~ "result=\"(" r ")\"" { s += $2 } END { print s + 0 }' "$tmp/metrics.txt"
}
named=$(jvm_frames named)
failed=$(jvm_frames 'read_failed|corrupt')
grep -q 'profd_agent_jit_processes_total{runtime="jvm",exe="java",version="17[^"]*",supported="true"' "$tmp/metrics.txt" ||
	die "the JVM was not attached: $(grep jit_processes "$tmp/metrics.txt")"
echo "  JVM frames: named $named, stale $(jvm_frames stale), exited $(jvm_frames exited)," \
	"read_failed $(jvm_frames read_failed), corrupt $(jvm_frames corrupt)"
[ "$named" -gt 0 ] && [ "$failed" -le $((named / 100)) ] && [ "$(jvm_frames stale)" -le $((named / 100)) ] ||
	die "too few JVM frames named"
echo "ok agent names Java frames with no flag in the JVM"

agent_flame "$type" "{process.pid=\"$cpid\"}" "$tmp/c2i.json"
python3 - "$tmp/c2i.json" <<'PY' || die "C2I: interpreted callee of compiled code"
import json, sys
fg = json.load(open(sys.argv[1]))
def walk(n, path, out):
    path = path + [n["name"]]
    kids = n.get("children", [])
    self_ = n.get("self", 0)
    if self_ > 0:
        out.append((path, self_))
    for k in kids:
        walk(k, path, out)
out = []
walk(fg["root"], [], out)
# Among the Java main thread's samples (under C2I.main): the JIT compiler and
# GC threads take a share of the process that depends on the machine's speed.
mine = [(p, v) for p, v in out if "C2I.main" in p]
total = sum(v for _, v in mine)
leaf = sum(v for p, v in mine if "C2I.leafInterp" in p and "C2I.compiledCaller" in p)
jit = sum(v for p, v in mine if "[jit]" in p)
if not total:
    sys.exit("no sample under C2I.main")
print(f"  C2I: under C2I.main, leafInterp under compiledCaller {100 * leaf / total:.1f}%, "
      f"[jit] {100 * jit / total:.1f}% of {total}")
sys.exit(0 if leaf >= 0.7 * total and jit <= 0.05 * total else 1)
PY
echo "ok an interpreted method called from compiled code is named with its caller"

if [ -n "$other" ]; then
	ov=$("$other" -version 2>&1 | sed -n 's/.*version "\([^"]*\)".*/\1/p' | head -1)
	grep -q "profd_agent_jit_processes_total{runtime=\"jvm\",exe=\"java\",version=\"[^\"]*\",supported=\"false\"" \
		"$tmp/metrics.txt" || die "$other ($ov) not counted as unsupported: $(grep jit_processes "$tmp/metrics.txt")"
	curl -fsG "$base/api/v1/health/symbols" --data-urlencode "type=$type" \
		--data-urlencode "from=now-10m" --data-urlencode "to=now" -o "$tmp/health.json" ||
		die "stack health query failed"
	python3 - "$tmp/health.json" <<'PY' || die "stack health does not name the refused JVM ($ov)"
import json, sys
got = json.load(open(sys.argv[1])).get("unsupported_runtimes", [])
hit = [u for u in got if u.startswith("jvm") and "JIT frames not supported" in u]
if not hit:
    sys.exit(f"want a refused jvm in {got}")
print(f"ok stack health: {hit[0]}")
PY
	# Its JIT frames stay [jit]: stack health must not count them as named.
	curl -fsG "$base/api/v1/health/symbols" --data-urlencode "type=$type" \
		--data-urlencode "query={process.pid=\"$opid\"}" --data-urlencode "from=now-10m" \
		--data-urlencode "to=now" -o "$tmp/health2.json" || die "stack health query failed"
	python3 - "$tmp/health2.json" <<'PY' || die "stack health counts the refused JVM's [jit] frames as named"
import json, sys
h = json.load(open(sys.argv[1]))
jvm = [r for r in h.get("runtimes", []) if r["runtime"] == "jvm"]
if not jvm or jvm[0]["frames"] == 0:
    sys.exit(f"no jvm frames in {h.get('runtimes')}")
share = jvm[0]["frames_symbolized"] / jvm[0]["frames"]
print(f"ok stack health of the refused JVM: jvm frames {jvm[0]['frames']}, named {100 * share:.0f}%")
sys.exit(0 if share < 0.5 else 1)
PY
	echo "ok $other ($ov) refused and counted"
fi
