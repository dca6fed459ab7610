#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""jfr_facts_check.py - compare jfrdump output with a corpus facts file.

Usage: jfr_facts_check.py JFRDUMP CORPUS_DIR
For every file in CORPUS_DIR/jfr, with the facts file that names it, and
for every event type the facts list (facts.profiling_events; for a file the
reference tool refused, the per-chunk facts of the one chunk that holds the
type) it runs JFRDUMP --type <event> and checks: event count, value total,
other sums (tlabSize, samples), events without a stack, threads, first and
last event time, max stack depth, distinct functions, and the top-5 self
functions (each listed function's value, and the k-th largest values).
Then the family rules of format/jfr.h: the lock profile has the
JavaMonitorEnter + ThreadPark events, alloc the ObjectAllocationSample
events if any, else the two TLAB kinds.
Prints "ok ..." / "FAIL ..." lines; exits 1 when anything failed.
"""
import calendar
import json
import os
import subprocess
import sys

FAMILY = {
    "jdk.ExecutionSample": "cpu",
    "jdk.CPUTimeSample": "cpu",
    "jdk.NativeMethodSample": "wall",
    "profiler.WallClockSample": "wall",
    "jdk.ObjectAllocationSample": "alloc",
    "jdk.ObjectAllocationInNewTLAB": "alloc",
    "jdk.ObjectAllocationOutsideTLAB": "alloc",
    "jdk.JavaMonitorEnter": "lock",
    "jdk.JavaMonitorWait": "lock",
    "jdk.ThreadPark": "lock",
}


def iso_ns(s):
    # 2022-05-21T17:51:08.869487195Z -> ns since the epoch
    date, frac = s.rstrip("Z").split(".")
    secs = calendar.timegm(tuple(int(x) for x in date.replace("T", "-").replace(":", "-").split("-")) + (0, 0, 0))
    return secs * 1000000000 + int(frac.ljust(9, "0")[:9])


def dump(tool, path, ev, extra=()):
    out = subprocess.run([tool, "--event", FAMILY[ev], "--type", ev, *extra, path],
                         capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)


def family_dump(tool, path, fam):
    out = subprocess.run([tool, "--event", fam, path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(out.stderr.strip())
    return json.loads(out.stdout)


def check_file(tool, facts, path):
    fid = facts["id"]
    f = facts["facts"]
    events = {}
    failed = 0
    for ev, fe in f.get("profiling_events", {}).items():
        if "error" not in fe:
            events[ev] = fe
            continue
        # The reference tool refused the file: use the chunk that holds the type.
        holders = [c["profiling_events"][ev] for c in f.get("per_chunk", [])
                   if ev in c.get("profiling_events", {})]
        if len(holders) == 1:
            events[ev] = holders[0]
        else:
            print(f"FAIL {fid} {ev}: no usable facts ({len(holders)} chunks)")
            failed += 1

    def check(ev, what, got, want):
        nonlocal failed
        if got != want:
            print(f"FAIL {fid} {ev}: {what}: got {got}, want {want}")
            failed += 1

    for ev, fe in sorted(events.items()):
        if ev not in FAMILY:
            continue
        tlab = ev == "jdk.ObjectAllocationInNewTLAB"
        try:
            d = dump(tool, path, ev, ["--tlab-allocation-size"] if tlab else [])
        except RuntimeError as e:
            print(f"FAIL {fid} {ev}: jfrdump failed: {e}")
            failed += 1
            continue
        by_count = fe["value_field"] == "(count)"
        nfail = failed
        check(ev, "events", d["samples"], fe["events"])
        check(ev, "total " + fe["value_field"], d["samples"] if by_count else d["totals"][1], fe["total"])
        for k, v in fe.get("other_sums", {}).items():
            if k == "samples":
                check(ev, "sum samples", d["totals"][0], v)
            elif k == "tlabSize":
                check(ev, "sum tlabSize", dump(tool, path, ev)["totals"][1], v)
        if "events_without_stack" in fe:
            check(ev, "events without stack", d["no_stack"], fe["events_without_stack"])
        if "threads" in fe:
            check(ev, "threads", d["threads"], fe["threads"])
        if fe.get("first_event"):
            check(ev, "first event", d["first_ns"], iso_ns(fe["first_event"]))
            check(ev, "last event", d["last_ns"], iso_ns(fe["last_event"]))
        check(ev, "max stack depth", d["max_depth"], fe["max_stack_depth"])
        check(ev, "distinct functions", d["functions"], fe["distinct_functions"])
        col = 1 if by_count else 3
        mine = {row[0]: row[col] for row in d["self"]}
        for name, v in fe["top5_self"]:
            check(ev, f"self {name}", mine.get(name, 0), v)
        got_top = sorted(mine.values(), reverse=True)[:len(fe["top5_self"])]
        check(ev, "top self values", got_top, [v for _, v in fe["top5_self"]])
        if failed == nfail:
            print(f"ok {fid} {ev}: {d['samples']} events, total {fe['total']}, "
                  f"top self {fe['top5_self'][0][0]}")

    # The family rules of format/jfr.h: which event types feed each profile.
    n = {ev: fe["events"] for ev, fe in events.items()}
    lock = n.get("jdk.JavaMonitorEnter", 0) + n.get("jdk.ThreadPark", 0)
    alloc = n.get("jdk.ObjectAllocationSample") or (
        n.get("jdk.ObjectAllocationInNewTLAB", 0) + n.get("jdk.ObjectAllocationOutsideTLAB", 0))
    for fam, want in (("lock", lock), ("alloc", alloc)):
        try:
            got = family_dump(tool, path, fam)["samples"]
        except RuntimeError as e:
            print(f"FAIL {fid} family {fam}: jfrdump failed: {e}")
            failed += 1
            continue
        if got == want:
            print(f"ok {fid} family {fam}: {got} samples")
        check(f"family {fam}", "samples", got, want)
    return failed


def main():
    tool, corpus = sys.argv[1:3]
    by_path = {}
    for name in sorted(os.listdir(os.path.join(corpus, "facts"))):
        facts = json.load(open(os.path.join(corpus, "facts", name)))
        by_path[facts.get("path")] = facts
    failed = 0
    for name in sorted(os.listdir(os.path.join(corpus, "jfr"))):
        rel = "jfr/" + name
        if rel not in by_path:
            print(f"FAIL {rel}: no facts file names it")
            failed += 1
            continue
        failed += check_file(tool, by_path[rel], os.path.join(corpus, rel))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
