#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# clickhouse_same.py A B [PROFD] - do two answers of one view say the
# same, up to what depends on the order a store first saw stacks in?
# (test_clickhouse.sh, for the views whose bytes differ.) The embedded
# store's own answers move with it: ties between equal values come out
# in the order their stacks were first stored, and a function's
# file:line in the table is that of its first location stored, which may
# belong to another profile type (a head and a block of the same rows
# differ there too). So: folded text compares as sorted lines; pprof
# through `PROFD convert` to folded; JSON with flame chart stack indexes
# resolved to frame names and spans summed per stack, frame type indexes to their names, the
# table's representative "line" dropped, the diff's appeared and
# disappeared stacks (a cut among equal values) by their values only,
# every list sorted. Prints "same" or where they differ; exit 0 / 1.
import json
import os
import subprocess
import sys
import tempfile


def frame_types(o, ft):
    if isinstance(o, dict):
        return {k: (ft[v] if k == "ft" and isinstance(v, int) and v < len(ft) else
                    frame_types(v, ft)) for k, v in o.items()}
    if isinstance(o, list):
        return [frame_types(x, ft) for x in o]
    return o


def norm(o):
    if isinstance(o, dict):
        o = dict(o)
        if isinstance(o.get("frame_types"), list):
            o = frame_types(o, o["frame_types"])
        for k in ("appeared", "disappeared"):
            # the diff's top stacks: which of equal ones make the cut is order
            if isinstance(o.get(k), dict) and isinstance(o[k].get("stacks"), list):
                o[k] = dict(o[k])
                o[k]["stacks"] = [s.get("value") for s in o[k]["stacks"]]
        if "names" in o and "stacks" in o and isinstance(o["stacks"], list):
            names = o["names"]
            stacks = [[names[i] for i in s] for s in o["stacks"]]
            o["stacks"] = stacks
            # spans: [start, duration, stack, value, samples]; how samples of
            # one time split into spans follows the rows' order among equal
            # times, which is the store's (a head's and a block's differ)
            for lane in o.get("lanes", []):
                per = {}
                for sp in lane.get("spans", []):
                    k = ";".join(stacks[sp[2]])
                    v = per.setdefault(k, [0, 0])
                    v[0] += sp[3]
                    v[1] += sp[4]
                lane["spans"] = sorted(per.items())
            o.pop("spans_total", None)
            o.pop("names")
        if "rows" in o and isinstance(o["rows"], list):
            o["rows"] = [{k: v for k, v in r.items() if k != "line"} for r in o["rows"]]
        return {k: norm(v) for k, v in o.items()}
    if isinstance(o, list):
        return sorted((norm(x) for x in o), key=lambda x: json.dumps(x, sort_keys=True))
    return o


def folded(path, profd):
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "x.folded")
        subprocess.run([profd, "convert", path, out], check=True, capture_output=True)
        return sorted(open(out, "rb").read().split(b"\n"))


def main():
    a, b = sys.argv[1], sys.argv[2]
    profd = sys.argv[3] if len(sys.argv) > 3 else "build/profd"
    x, y = open(a, "rb").read(), open(b, "rb").read()
    if x[:2] == b"\x1f\x8b":
        same = folded(a, profd) == folded(b, profd)
    else:
        try:
            jx, jy = json.loads(x), json.loads(y)
        except ValueError:
            same = sorted(x.split(b"\n")) == sorted(y.split(b"\n"))
        else:
            nx, ny = norm(jx), norm(jy)
            same = nx == ny
            if not same and isinstance(nx, dict):
                for k in nx:
                    if nx[k] != ny.get(k):
                        print("differ at", k, json.dumps(nx[k])[:300], "|",
                              json.dumps(ny.get(k))[:300])
                        break
    print("same" if same else "differ")
    return 0 if same else 1


sys.exit(main())
