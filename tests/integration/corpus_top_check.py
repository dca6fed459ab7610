#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check `profd top --json` against the corpus facts (shared corpus README).

usage: corpus_top_check.py PROFD CORPUS_DIR

For every file in CORPUS/pprof and CORPUS/pprof-legacy (the formats before
profile.proto that pprof reads: binary CPU, heap/contention text, Go
debug=1 text) with a facts/<id>.json, runs
`PROFD top --json -n 0 FILE` and compares with the facts computed by
Google's pprof (pproffacts, `go tool pprof -top`):
  - sample types, sample count (records) and the total of each type;
  - the top-5 flat rows of every sample type: the flat values in order,
    and each listed function with the same flat and cum values (ties may
    order either way, so names are matched by value, not by position);
  - the top-5 cum rows: each function with the same flat and cum values;
  - the number of functions with a non-zero value (pprof's node count).
Files the reference rejected must fail cleanly: exit status 1 and a reason
on stderr, no crash. Prints one "ok"/"FAIL" line per file and a closing
"N passed, N failed" line; exits 1 on any failure.
"""
import json
import os
import re
import subprocess
import sys

UNITS = {  # pprof's scaled units -> factor to the base unit
    "": 1, "ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9, "mins": 60e9, "hrs": 3600e9,
    "B": 1, "kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4, "PB": 1024**5,
}


def parse_value(text):
    """'7910000000ns' -> (7910000000, exact); '1.50MB' -> (approx value, False)."""
    m = re.fullmatch(r"(-?[0-9]+(?:\.[0-9]+)?)([A-Za-z]*)", text.strip())
    if not m or m.group(2) not in UNITS:
        raise ValueError("cannot parse pprof value %r" % text)
    num, unit = m.group(1), m.group(2)
    if "." not in num and UNITS[unit] == 1:
        return int(num), True
    return float(num) * UNITS[unit], False


# Size of a sample type's unit in pprof's base unit (ns for time, B for memory).
UNIT_FACTOR = {"microseconds": 1e3, "milliseconds": 1e6, "seconds": 1e9}


def same_value(ours, ref_text, unit=""):
    """Our value (in the sample type's @unit) equals pprof's printed one."""
    ref, exact = parse_value(ref_text)
    factor = UNIT_FACTOR.get(unit, 1)
    if factor != 1 and ref_text.strip() != "0":
        ours, exact = ours * factor, False
    if exact:
        return ours == ref
    return abs(ours - ref) <= max(1.0, abs(ref) * 0.006)  # pprof prints 2 decimals


def strip_inline(name):
    """go tool pprof -top appends ' (inline)' / ' (partial-inline)' to names."""
    for suffix in (" (inline)", " (partial-inline)"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def name_matches(ours, ref):
    """Exact, or the reference was cut at a newline inside the name (the facts
    were parsed from pprof's text output, one row per line)."""
    return ours == ref or (ours.startswith(ref) and ours[len(ref):len(ref) + 1] == "\n")


def check_file(profd, path, facts):
    problems = []
    pf = facts["facts"].get("pproffacts", {})
    rejected = bool(pf.get("parse_error"))
    run = subprocess.run([profd, "top", "--json", "-n", "0", path], capture_output=True)
    stderr = run.stderr.decode("utf-8", "replace")
    if "Sanitizer" in stderr or "runtime error" in stderr or run.returncode < 0:
        return ["crashed (rc %d): %s" % (run.returncode, stderr.strip()[:300])]
    if rejected:
        if run.returncode != 1 or not stderr.strip():
            problems.append("reference rejected it (%s) but profd exited %d with stderr %r"
                            % (pf["parse_error"], run.returncode, stderr.strip()[:200]))
        return problems
    if run.returncode != 0:
        return ["profd top failed (rc %d): %s" % (run.returncode, stderr.strip()[:300])]
    try:
        out = json.loads(run.stdout.decode("utf-8"))
    except ValueError as e:
        return ["output is not JSON: %s" % e]

    types = [(t["type"], t["unit"]) for t in out["sample_types"]]
    want_types = [(t["type"], t["unit"]) for t in pf["sample_types"]]
    if types != want_types:
        problems.append("sample types %s, want %s" % (types, want_types))
    if out["samples"] != pf["samples"]:
        problems.append("samples %s, want %s" % (out["samples"], pf["samples"]))
    for (tname, _), want in zip(want_types, pf["totals"]):
        got = out["totals"].get(tname)
        if got != want:
            problems.append("total[%s] %s, want %s" % (tname, got, want))

    for top in facts["facts"].get("tops", []):
        tname, unit = top["sample_type"].split("/", 1)
        flat = top["flat"]
        if flat.get("rc", 0) != 0:
            continue
        rows = out["top"].get(tname)
        if rows is None:
            problems.append("no top list for %s" % tname)
            continue
        ref_rows = flat["rows"]
        for i, r in enumerate(ref_rows):
            if i >= len(rows):
                problems.append("%s: only %d rows, reference has %d" % (tname, len(rows), len(ref_rows)))
                break
            if not same_value(rows[i]["self"], r["flat"], unit):
                problems.append("%s row %d: self %s, reference flat %s (%s)"
                                % (tname, i + 1, rows[i]["self"], r["flat"], r["name"]))
            name = strip_inline(r["name"])
            match = [o for o in rows if name_matches(o["function"], name)]
            if not match:
                problems.append("%s: function %r missing" % (tname, name))
            elif not any(same_value(o["self"], r["flat"], unit)
                         and same_value(o["total"], r["cum"], unit)
                         for o in match):
                problems.append("%s: %r self/total %s/%s, reference %s/%s"
                                % (tname, name, match[0]["self"], match[0]["total"],
                                   r["flat"], r["cum"]))
        for r in top.get("cum", {}).get("rows", []) if top.get("cum", {}).get("rc", 0) == 0 else []:
            name = strip_inline(r["name"])
            if not any(name_matches(o["function"], name) and same_value(o["total"], r["cum"], unit)
                       and same_value(o["self"], r["flat"], unit) for o in rows):
                problems.append("%s: top-cum row %r %s/%s not matched" % (tname, name, r["flat"], r["cum"]))
        nodes = flat.get("nodes")
        if nodes is not None and nodes != len(rows):
            problems.append("%s: %d functions with non-zero values, reference %d nodes"
                            % (tname, len(rows), nodes))
    return problems


def main():
    profd, corpus = sys.argv[1], sys.argv[2]
    by_path = {}
    for name in sorted(os.listdir(os.path.join(corpus, "facts"))):
        if name.endswith(".json"):
            with open(os.path.join(corpus, "facts", name)) as f:
                facts = json.load(f)
            by_path[facts["path"]] = facts
    files = []
    for d in ("pprof", "pprof-legacy"):
        full = os.path.join(corpus, d)
        if not os.path.isdir(full):
            continue
        for name in sorted(os.listdir(full)):
            rel = d + "/" + name
            files.append((rel, by_path.get(rel)))
    passed = failed = 0
    for rel, facts in files:
        if facts is None:
            print("FAIL %s: no facts file" % rel)
            failed += 1
            continue
        problems = check_file(profd, os.path.join(corpus, rel), facts)
        if problems:
            failed += 1
            print("FAIL %s (%s)" % (rel, facts["id"]))
            for p in problems:
                print("     " + p)
        else:
            passed += 1
            print("ok   %s (%s)" % (rel, facts["id"]))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
