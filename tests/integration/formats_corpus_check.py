#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check the text/JSON decoders against the corpus facts (shared corpus README).

usage: formats_corpus_check.py FMTDUMP CORPUS_DIR

For every facts/<id>.json whose format is collapsed, perf-script,
speedscope, cpuprofile or otlp, runs `FMTDUMP [options] FILE` (the test
driver tests/tools/fmtdump.c, JSON on stdout) and compares with the facts,
which independent tools computed (collapsed_facts.py, perfscript_facts.py,
speedscope_facts.py, cpuprofile_facts.js, protobufjs; see MANIFEST.md):
  - sample counts, totals per value column (in the file's own unit),
    distinct functions and maximal stack depth where the facts give them;
  - top-5 self and cum lists: every listed function has exactly the listed
    value, and our five largest values equal the listed ones (so no
    function is missing; ties may list different names);
  - per format: invalid lines (collapsed), thread names and time range
    (perf script), each profile of a speedscope file on its own, samples
    and time in microseconds (cpuprofile), profile time range and
    attribute keys (OTLP).
Prints one "ok"/"FAIL" line per file and "N passed, N failed"; exit 1 on
any failure.
"""
import json
import os
import subprocess
import sys

FORMATS = ("collapsed", "perf-script", "speedscope", "cpuprofile", "otlp")
TIME_NS = {"nanoseconds": 1, "microseconds": 1e3, "milliseconds": 1e6, "seconds": 1e9}


class Check:
    def __init__(self, name):
        self.name = name
        self.problems = []

    def eq(self, what, got, want):
        if got != want:
            self.problems.append("%s: got %r, want %r" % (what, got, want))

    def top(self, what, ours, facts, scale=1):
        """ours: {name: value}; facts: [[name, value], ...] (zero values ignored)."""
        facts = [(n, v) for n, v in facts if v]
        for name, want in facts:
            self.eq("%s[%s]" % (what, name), ours.get(name, 0), round(want * scale))
        best = sorted((v for v in ours.values() if v), reverse=True)[: len(facts)]
        self.eq("%s values" % what, best, [round(v * scale) for _, v in facts])


def dump(fmtdump, path, *opts):
    out = subprocess.run([fmtdump, *opts, path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("fmtdump failed: %s" % out.stderr.strip())
    return json.loads(out.stdout)


def column(d, type_, unit):
    key = "%s/%s" % (type_, unit)
    for t in d["sample_types"]:
        if t["type"] == type_ and t["unit"] == unit:
            return key, t["total"]
    raise RuntimeError("no value column %s in %s" % (key, d["sample_types"]))


def check_collapsed(c, fmtdump, path, f):
    d = dump(fmtdump, path)
    key, total = column(d, "samples", "count")
    c.eq("format", d["format"], "folded")
    c.eq("total", total, f["total"])
    c.eq("samples (stack lines)", d["samples"], f["stack_lines"])
    c.eq("distinct frames", d["functions"], f["distinct_frames"])
    c.eq("max depth", d["max_depth"], f["max_depth"])
    skipped = [s for s in d["comments"] if s.startswith("folded: skipped")]
    if f["invalid_lines"]:
        want = "folded: skipped %d invalid line%s" % (
            f["invalid_lines"], "" if f["invalid_lines"] == 1 else "s")
        c.eq("invalid lines", bool(skipped) and skipped[0].startswith(want), True)
    else:
        c.eq("invalid lines", skipped, [])
    c.top("self", d["self"][key], f["top5_self"])
    c.top("cum", d["cum"][key], f["top5_cum"])


def check_perf(c, fmtdump, path, f):
    d = dump(fmtdump, path)
    key, total = column(d, "samples", "count")
    c.eq("format", d["format"], "perf-script")
    c.eq("samples", d["samples"], f["samples"])
    c.eq("total", total, sum(f["events"].values()))
    c.eq("thread.name labels", d["labels"].get("thread.name"), f["samples"])
    c.eq("distinct symbols", d["functions"], f["distinct_symbols"])
    c.eq("max depth", d["max_depth"], f["max_depth"])
    c.eq("first time (us)", round(d["timestamps"]["min"] / 1e3), round(f["first_time"] * 1e6))
    c.eq("last time (us)", round(d["timestamps"]["max"] / 1e3), round(f["last_time"] * 1e6))
    c.top("self", d["self"][key], f["top5_self"])
    c.top("cum", d["cum"][key], f["top5_cum"])


def check_speedscope(c, fmtdump, path, f):
    for i, pf in enumerate(f["profiles"]):
        d = dump(fmtdump, path, "--profile", str(i + 1))
        c.eq("format", d["format"], "speedscope")
        unit = pf["unit"]
        if unit in TIME_NS:
            key, total = column(d, "cpu", "nanoseconds")
            scale = TIME_NS[unit]
        else:
            key, total = column(d, "samples" if unit == "none" else "alloc_space",
                                "count" if unit == "none" else "bytes")
            scale = 1
        what = "profile %d" % (i + 1)
        c.eq(what + " total", total, round(pf["total"] * scale))
        if pf["type"] == "sampled":
            c.eq(what + " samples", d["samples"], pf["samples"])
        c.top(what + " self", d["self"][key], pf["top5_self"], scale)
        c.top(what + " cum", d["cum"][key], pf["top5_cum"], scale)


def check_cpuprofile(c, fmtdump, path, f):
    d = dump(fmtdump, path, "--key", "file-line")
    skey, samples = column(d, "samples", "count")
    tkey, _ = column(d, "wall", "nanoseconds")
    c.eq("format", d["format"], "cpuprofile")
    c.eq("samples", d["samples"], f["samples"])
    c.eq("sample total", samples, f["samples"])
    c.eq("distinct functions", d["functions"], f["distinct_functions"])
    c.eq("max depth", d["max_depth"], f["max_depth"])
    c.eq("duration (us)", d["duration_ns"] // 1000, f["duration_us"])
    c.top("self samples", d["self"][skey], f["top5_self_samples"])
    c.top("cum samples", d["cum"][skey], f["top5_cum_samples"])
    c.top("self time", d["self"][tkey], f["top5_self_time_us"], 1000)
    c.top("cum time", d["cum"][tkey], f["top5_cum_time_us"], 1000)


def check_otlp(c, fmtdump, path, f):
    d = dump(fmtdump, path)
    c.eq("format", d["format"], "otlp-json" if path.endswith(".json") else "otlp")
    c.eq("samples (events)", d["samples"], f["events"])
    for st, total in f["totals"].items():
        type_, unit = st.split("/")
        key, ours = column(d, type_, unit)
        c.eq("total " + st, ours, int(total))
        c.top("self " + st, d["self"][key], f["top5_self"][st])
        c.top("cum " + st, d["cum"][key], f["top5_cum"][st])
    for k, n in f["attribute_keys"].items():
        c.eq("label " + k, d["labels"].get(k, 0) > 0 and n > 0, True)
    for k in f["resource_attribute_keys"]:
        c.eq("resource attribute " + k, k in d["attrs"] or k in d["labels"], True)
    c.eq("time start", d["time_ns"], int(f["time_min_unix_nano"]))
    c.eq("time end", d["time_ns"] + d["duration_ns"], int(f["time_max_unix_nano"]))


CHECKS = {"collapsed": check_collapsed, "perf-script": check_perf,
          "speedscope": check_speedscope, "cpuprofile": check_cpuprofile, "otlp": check_otlp}


def main():
    fmtdump, corpus = sys.argv[1], sys.argv[2]
    passed = failed = 0
    for name in sorted(os.listdir(os.path.join(corpus, "facts"))):
        facts = json.load(open(os.path.join(corpus, "facts", name)))
        if facts.get("format") not in FORMATS:
            continue
        path = os.path.join(corpus, facts["path"])
        c = Check(facts["id"])
        try:
            CHECKS[facts["format"]](c, fmtdump, path, facts["facts"])
        except Exception as e:  # a decode failure or a missing column
            c.problems.append(str(e))
        if c.problems:
            failed += 1
            print("FAIL %s (%s)" % (c.name, facts["path"]))
            for p in c.problems:
                print("     " + p)
        else:
            passed += 1
            print("ok   %s (%s)" % (c.name, facts["path"]))
    print("formats corpus: %d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
