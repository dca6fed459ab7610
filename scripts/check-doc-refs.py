#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check-doc-refs.py [ROOT] - every reference to the project's own pages
resolves in a fresh clone (make check-refs, part of make test).

In the tracked files of src/, tests/, bench/ (not bench/results/),
scripts/ (not this one), ui/, deploy/, docs/, README.md and
CONTRIBUTING.md, with
comment leaders and line breaks folded so that a reference may span
lines, it reports:

  - a page that is not in the repository: one called "shared" (the
    sessions' notes outside the repository), DESIGN.md or STYLE.md;
  - docs/NAME.md when there is no such file (but an upstream project's
    docs/ page in a "Source:" sentence, as docs/formats.md names them);
  - NAME.md (a page of docs/) followed by a section number ("formats.md
    1.6"): our pages have no numbered sections;
  - NAME.md followed by a quoted section ('formats.md, "OTLP/JSON"') that
    is neither a heading of that page nor one of its bold labels or
    "Label:" paragraph starts.

Prints one line per finding (FILE: what, and the text around it) and
exits 1 when there is any, else prints a count and exits 0.
"""
import os
import re
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
os.chdir(root)
TRACKED = ["src", "tests", "bench", "scripts", "ui", "deploy", "docs", "README.md", "CONTRIBUTING.md"]
files = subprocess.check_output(["git", "ls-files", "--"] + TRACKED, text=True).split()


def norm(s):
    return re.sub(r"\s+", " ", re.sub(r"[`*]", "", s)).strip().lower()


pages = {}
for name in sorted(os.listdir("docs")):
    if not name.endswith(".md"):
        continue
    body = open(os.path.join("docs", name), encoding="utf-8").read()
    names = [l.lstrip("#") for l in body.splitlines() if l.startswith("#")]
    names += re.findall(r"\*\*([^*]+)\*\*", body)
    names += re.findall(r"(?m)^([A-Z][^:\n]{2,60}):", body)
    pages[name] = [norm(n) for n in names if norm(n)]


def section_ok(page, sec):
    s = norm(sec)
    return any(s in n or n in s for n in pages[page])


REF = re.compile(r'(docs/)?\b([A-Za-z][A-Za-z0-9_-]*\.md)\b(,? (?:section |sections )?)?'
                 r'("([A-Za-z`\'][^"]{2,100})"|\d+(?:\.\d+)+|§)?')
findings = []
for path in files:
    # bench/results is generated; this script names the patterns it refuses.
    if path.startswith("bench/results/") or path == "scripts/check-doc-refs.py" or not os.path.isfile(path):
        continue
    try:
        text = open(path, encoding="utf-8").read()
    except (UnicodeDecodeError, OSError):
        continue
    flat = re.sub(r"\n[ \t]*(?:\*|//|#|--)?[ \t]*", " ", text)
    for m in REF.finditer(flat):
        prefix, page, sec = m.group(1), m.group(2), m.group(5)
        before = flat[max(0, m.start() - 12):m.start()].lower()
        # An upstream project's own docs/ page, named in a "Source:" line.
        sentence = flat[max(0, m.start() - 200):m.start()].rsplit(". ", 1)[-1]
        if prefix and page not in pages and "Source:" in sentence:
            continue
        around = flat[max(0, m.start() - 30):m.end() + 20]
        what = None
        if "shared" in before or page in ("DESIGN.md", "STYLE.md"):
            what = "a page outside the repository"
        elif prefix and page not in pages:
            what = "no docs/" + page
        elif page in pages and m.group(4) and not sec:
            what = "a section number (" + m.group(4) + "); name the section"
        elif page in pages and sec and not section_ok(page, sec):
            what = 'no section "%s" in docs/%s' % (sec, page)
        if what:
            findings.append("%s: %s: ...%s..." % (path, what, around))
for f in findings:
    print(f)
if findings:
    print("check-doc-refs: %d references do not resolve in the repository" % len(findings))
    sys.exit(1)
print("check-doc-refs: every reference to docs/ resolves")
