# SPDX-License-Identifier: Apache-2.0
"""agent_check.py - flame graph arithmetic for the agent tests.

    python3 agent_check.py FLAME.json [NAME ...]

prints one JSON object: total (the root's total), complete (the part of
the total whose stack reaches the outermost frame: every path through a
frame named "main", counted once, that is not under a "[truncated]"
frame), and for each NAME its inclusive total (each path counted once,
however often NAME occurs on it) and whether it was seen; names ending in
"*" match as prefixes, names starting with "~" as substrings.
"""
import json
import sys


def match(pattern, name):
    if pattern.startswith("~"):
        return pattern[1:] in name
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return name == pattern


def main():
    fg = json.load(open(sys.argv[1]))
    names = sys.argv[2:]
    root = fg["root"]
    out = {"total": root.get("total", 0), "complete": 0,
           "names": {n: 0 for n in names}}

    # Iterative walk: (node, set of patterns already counted on this path,
    # main seen, truncated seen).
    stack = [(c, frozenset(), False, False) for c in root.get("children", [])]
    while stack:
        node, counted, main_seen, trunc = stack.pop()
        name = node["name"]
        trunc = trunc or name == "[truncated]"
        if name == "main" and not main_seen and not trunc:
            out["complete"] += node["total"]
            main_seen = True
        now = set(counted)
        for n in names:
            if n not in counted and match(n, name):
                out["names"][n] += node["total"]
                now.add(n)
        now = frozenset(now)
        for c in node.get("children", []):
            stack.append((c, now, main_seen, trunc))
    print(json.dumps(out))


main()
