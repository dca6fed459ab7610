#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Agreement of the query API with `go tool pprof` on corpus pprof files.

usage: query_agree_check.py PROFD CORPUS_DIR WORK_DIR

For every pprof file in CORPUS_DIR/pprof that `go tool pprof` reads:
  1. `profd convert FILE x.otlp.pb`, a fresh `profd server`, the OTLP
     request ingested over HTTP;
  2. for every sample type of the file, /api/v1/table (limit=0) of the
     matching profile type must give, for every function, the flat and
     cum of `go tool pprof -top -symbolize=none -nodecount=100000
     -nodefraction=0 -edgefraction=0 -sample_index=N` on the original
     file (exact integers: -unit=ns / -unit=B / counts), the same number
     of functions and the same total;
  3. /api/v1/export/pprof of that type, read back by `go tool pprof`,
     gives the same total and the same flat/cum rows.
Files go tool pprof rejects are skipped ("skip:"). Prints one ok/FAIL
line per file and type; exits 1 on any failure.
"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.parse
import urllib.request

FAR_MS = 4102444800000


def go_top(path, index, unit):
    args = ["go", "tool", "pprof", "-top", "-symbolize=none", "-nodecount=100000",
            "-nodefraction=0", "-edgefraction=0", "-sample_index=%d" % index]
    if unit == "nanoseconds":
        args.append("-unit=ns")
    elif unit == "bytes":
        args.append("-unit=B")
    run = subprocess.run(args + [path], capture_output=True, text=True, errors="replace")
    if run.returncode != 0:
        return None, run.stderr.strip()[:200]
    total, rows, started = None, {}, False
    for line in run.stdout.splitlines():
        m = re.search(r" of (-?[0-9.]+)([A-Za-z]*) total", line)
        if m and total is None:
            total = num(m.group(1))
        if line.strip().startswith("flat"):
            started = True
            continue
        if not started:
            continue
        m = re.match(r"\s*(-?[0-9.]+)([A-Za-z]*)\s+\S+%\s+\S+%\s+(-?[0-9.]+)([A-Za-z]*)\s+\S+%\s+(.*)$",
                     line)
        if not m:
            continue
        name = m.group(5)
        for suffix in (" (inline)", " (partial-inline)"):
            if name.endswith(suffix):
                name = name[: -len(suffix)]
        rows[name] = (num(m.group(1)), num(m.group(3)))
    if total is None:  # "Showing nodes accounting for 0, 0% of 0 total" may be absent
        total = sum(v[0] for v in rows.values())
    return (total, rows), None


def num(text):
    return int(text) if re.fullmatch(r"-?[0-9]+", text) else float(text)


class Server:
    def __init__(self, profd, work):
        self.out = open(os.path.join(work, "server.out"), "w+")
        self.err = open(os.path.join(work, "server.log"), "w+")
        self.proc = subprocess.Popen(
            [profd, "server", "--listen", "127.0.0.1:0", "--data", os.path.join(work, "data"),
             "--ui", os.path.join(work, "ui")], stdout=self.out, stderr=self.err)
        self.base = None
        for _ in range(400):
            self.out.seek(0)
            m = re.search(r"explorer at http://127\.0\.0\.1:(\d+)/", self.out.read())
            if m:
                self.base = "http://127.0.0.1:%s" % m.group(1)
                break
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not self.base:
            self.err.seek(0)
            raise RuntimeError("server did not start: " + self.err.read()[-300:])

    def post(self, body):
        req = urllib.request.Request(self.base + "/v1development/profiles", data=body,
                                     headers={"Content-Type": "application/x-protobuf"})
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status

    def get(self, path, **params):
        url = self.base + path + "?" + urllib.parse.urlencode(params)
        with urllib.request.urlopen(url, timeout=120) as r:
            return r.read()

    def stop(self):
        self.proc.terminate()
        rc = self.proc.wait(timeout=30)
        self.err.seek(0)
        log = self.err.read()
        self.out.close()
        self.err.close()
        return rc, log


def compare(what, ref, ours_total, ours_rows):
    total, rows = ref
    problems = []
    if total != ours_total:
        problems.append("%s total %s, pprof %s" % (what, ours_total, total))
    nonzero = {k: v for k, v in ours_rows.items() if v != (0, 0)}
    if len(nonzero) != len(rows) and len({k.split("\n")[0] for k in nonzero}) != len(rows):
        problems.append("%s: %d functions, pprof %d (only ours: %s; only pprof: %s)" % (
            what, len(nonzero), len(rows), sorted(set(nonzero) - set(rows))[:3],
            sorted(set(rows) - set(nonzero))[:3]))
    for name, (flat, cum) in rows.items():
        got = ours_rows.get(name)
        if got is None:  # pprof's text output cuts a name at a newline inside it
            cut = [v for k, v in ours_rows.items() if k.startswith(name + "\n")]
            got = cut[0] if len(cut) == 1 else None
        if got is None:
            problems.append("%s: no row %r" % (what, name))
        elif got != (flat, cum):
            problems.append("%s: %r self/total %s, pprof flat/cum %s" % (what, name, got,
                                                                       (flat, cum)))
        if len(problems) > 5:
            break
    return problems


def check_file(profd, path, work):
    name = os.path.basename(path)
    top = subprocess.run([profd, "top", "--json", "-n", "0", path], capture_output=True, text=True)
    if top.returncode != 0:
        print("skip: %s: profd top refuses it: %s" % (name, top.stderr.strip()[:120]))
        return 0, 0
    types = json.loads(top.stdout)["sample_types"]
    refs = []
    for i, t in enumerate(types):
        ref, err = go_top(path, i, t["unit"])
        if ref is None:
            print("skip: %s: go tool pprof rejects it: %s" % (name, err))
            return 0, 0
        refs.append(ref)
    otlp = os.path.join(work, "x.otlp.pb")
    conv = subprocess.run([profd, "convert", path, otlp], capture_output=True, text=True)
    if conv.returncode != 0:
        print("FAIL %s: profd convert: %s" % (name, conv.stderr.strip()[:200]))
        return 0, 1
    srv = Server(profd, work)
    passed = failed = 0
    try:
        if srv.post(open(otlp, "rb").read()) != 200:
            raise RuntimeError("ingest refused")
        ids = json.loads(srv.get("/api/v1/profile-types", **{"from": 0, "to": FAR_MS}))
        for i, t in enumerate(types):
            match = [x for x in ids if x.split(":")[1:3] == [t["type"], t["unit"]]]
            if len(match) != 1:
                print("skip: %s %s/%s: %d profile types match" % (name, t["type"], t["unit"],
                                                                  len(match)))
                continue
            tid = match[0]
            table = json.loads(srv.get("/api/v1/table", type=tid, limit=0,
                                       **{"from": 0, "to": FAR_MS}))
            ours = {r["name"]: (r["self"], r["total"]) for r in table["rows"]}
            problems = compare("table", refs[i], table["total"], ours)
            exported = os.path.join(work, "export.pb.gz")
            with open(exported, "wb") as f:
                f.write(srv.get("/api/v1/export/pprof", type=tid, **{"from": 0, "to": FAR_MS}))
            back, err = go_top(exported, 0, t["unit"])
            if back is None:
                problems.append("go tool pprof refuses the export: %s" % err)
            else:
                problems += compare("export", refs[i], back[0], back[1])
            label = "%s %s/%s (%d functions, total %s)" % (name, t["type"], t["unit"],
                                                          len(refs[i][1]), refs[i][0])
            if problems:
                print("FAIL %s\n   %s" % (label, "\n   ".join(problems)))
                failed += 1
            else:
                print("ok   %s" % label)
                passed += 1
    finally:
        rc, log = srv.stop()
        if rc != 0 or "Sanitizer" in log or "runtime error" in log:
            print("FAIL %s: server exit %d: %s" % (name, rc, log[-400:]))
            failed += 1
        subprocess.run(["rm", "-rf", os.path.join(work, "data")])
    return passed, failed


def main():
    profd, corpus, work = sys.argv[1:4]
    passed = failed = 0
    for f in sorted(os.listdir(os.path.join(corpus, "pprof"))):
        p, fl = check_file(profd, os.path.join(corpus, "pprof", f), work)
        passed += p
        failed += fl
    print("query agreement: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
