#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""lenient_inputs.py DIR - write the inputs of test_decode_lenient.sh to DIR.

Each is good data with one unreadable or unusual part, built byte by byte
here (nothing taken from elsewhere) so the test knows what it holds:

  bad-setting.jfr  a JFR chunk (async-profiler style: padded record sizes)
                   with 3 jdk.ExecutionSample events and 2 jdk.ActiveSetting
                   records, the second with a string of encoding 9
  nativemem.jfr    the same chunk layout with profiler.Malloc events of
                   100, 28 and 900 bytes and one profiler.Free
  fn0.pb           a pprof profile with a function of the reserved id 0
                   next to the real one; 2 samples of 5 and 7
  utf16le.folded   folded text in UTF-16 with a BOM, CRLF line ends
  old.cpuprofile   a pre-2016 V8 profile (nested "head", seconds, timestamps)

Formats: docs/formats.md, "pprof profile.proto", "JFR layout", "Folded stacks"
and "V8 cpuprofile"; the cases of its first half ("A setting that cannot be
read", "async-profiler's native memory events", "Id 0 on a mapping,
location or function", "Text encodings", "V8 `.cpuprofile`: the pre-2016
layout").
"""
import json
import os
import struct
import sys


def var(v):
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def padvar(v):
    return bytes([(v >> (7 * i)) & 0x7F | 0x80 for i in range(4)] + [(v >> 28) & 0x7F])


def jstr(s):
    b = s.encode()
    return b"\x03" + var(len(b)) + b


def rec(type_id, body):
    t = var(type_id)
    return padvar(5 + len(t) + len(body)) + t + body


class Meta:
    def __init__(self):
        self.strs, self.tree = [], bytearray()

    def idx(self, s):
        if s not in self.strs:
            self.strs.append(s)
        return self.strs.index(s)

    def el(self, name, attrs, nchildren):
        self.tree += var(self.idx(name)) + var(len(attrs))
        for k, v in attrs:
            self.tree += var(self.idx(k)) + var(self.idx(v))
        self.tree += var(nchildren)


LONG, STRING, THREAD, STACK, EXEC, SETTING, MALLOC, FREE = 10, 12, 20, 26, 100, 103, 110, 111


def jfr(events, extra_classes):
    """One chunk: metadata, an empty checkpoint, then @events (type, body)."""
    m = Meta()
    classes = [
        (LONG, "long", []),
        (STRING, "java.lang.String", []),
        (THREAD, "java.lang.Thread", [("osName", STRING, False)]),
        (STACK, "jdk.types.StackTrace", []),
        (EXEC, "jdk.ExecutionSample",
         [("startTime", LONG, False), ("sampledThread", THREAD, True),
          ("stackTrace", STACK, True)]),
        (SETTING, "jdk.ActiveSetting",
         [("startTime", LONG, False), ("id", LONG, False), ("name", STRING, False),
          ("value", STRING, False)]),
    ] + extra_classes
    m.el("root", [], 1)
    m.el("metadata", [], len(classes))
    for cid, name, fields in classes:
        m.el("class", [("id", str(cid)), ("name", name)], len(fields))
        for fname, ftype, cpool in fields:
            attrs = [("name", fname), ("class", str(ftype))]
            if cpool:
                attrs.append(("constantPool", "true"))
            m.el("field", attrs, 0)
    meta_body = var(0) + var(0) + var(1) + var(len(m.strs))
    meta_body += b"".join(jstr(s) for s in m.strs) + bytes(m.tree)
    body = bytearray()
    meta_off = 68
    body += rec(0, meta_body)
    cp_off = 68 + len(body)
    body += rec(1, var(0) + var(0) + var(0) + b"\x01" + var(0))  # no pools
    for type_id, ev in events:
        body += rec(type_id, ev)
    size = 68 + len(body)
    hdr = b"FLR\0" + struct.pack(">HHQQQqqQQI", 2, 0, size, cp_off, meta_off,
                                 1700000000000000000, 1000000000, 5000, 1000000000, 1)
    return hdr + bytes(body)


def main(d):
    exec_ev = [(EXEC, var(5000 + i) + var(0) + var(0)) for i in range(3)]
    good = var(5000) + var(EXEC) + jstr("period") + jstr("10 ms")
    bad = var(5000) + var(EXEC) + jstr("enabled") + b"\x09"
    with open(os.path.join(d, "bad-setting.jfr"), "wb") as f:
        f.write(jfr([(SETTING, good), (SETTING, bad)] + exec_ev, []))

    nm = [(MALLOC, "profiler.Malloc",
           [("startTime", LONG, False), ("eventThread", THREAD, True),
            ("stackTrace", STACK, True), ("address", LONG, False), ("size", LONG, False)]),
          (FREE, "profiler.Free",
           [("startTime", LONG, False), ("eventThread", THREAD, True),
            ("stackTrace", STACK, True), ("address", LONG, False)])]
    evs = [(MALLOC, var(6000 + i) + var(0) + var(0) + var(0x7F0000 + i) + var(sz))
           for i, sz in enumerate((100, 28, 900))]
    evs.append((FREE, var(7000) + var(0) + var(0) + var(0x7F0000)))
    with open(os.path.join(d, "nativemem.jfr"), "wb") as f:
        f.write(jfr(evs, nm))

    def fld(n, wt, payload):
        return var(n << 3 | wt) + payload

    def msg(n, payload):
        return fld(n, 2, var(len(payload)) + payload)

    strings = ["", "samples", "count", "main", "ghost"]
    pb = msg(1, fld(1, 0, var(1)) + fld(2, 0, var(2)))           # sample_type
    pb += msg(2, fld(1, 0, var(1)) + fld(2, 0, var(5)))          # sample: loc 1, 5
    pb += msg(2, fld(1, 0, var(1)) + fld(2, 0, var(7)))          # sample: loc 1, 7
    pb += msg(4, fld(1, 0, var(1)) + msg(4, fld(1, 0, var(1))))  # location 1 -> function 1
    pb += msg(5, fld(1, 0, var(0)) + fld(2, 0, var(4)))          # function id 0 "ghost"
    pb += msg(5, fld(1, 0, var(1)) + fld(2, 0, var(3)))          # function 1 "main"
    pb += b"".join(msg(6, s.encode()) for s in strings)
    with open(os.path.join(d, "fn0.pb"), "wb") as f:
        f.write(pb)

    with open(os.path.join(d, "utf16le.folded"), "wb") as f:
        f.write(b"\xff\xfe" + "main;caf\u00e9 3\r\nmain;foo 2\r\n".encode("utf-16-le"))

    def node(i, name, line, children=()):
        return {"id": i, "functionName": name, "url": "file:///w.js" if line else "",
                "lineNumber": line, "columnNumber": 1 if line else 0, "hitCount": 0,
                "children": list(children)}

    old = {"head": node(1, "(root)", 0, [node(2, "main", 3, [node(3, "hot", 9)])]),
           "startTime": 10.0, "endTime": 10.01, "samples": [3, 3, 2, 3],
           "timestamps": [10000100, 10001100, 10002100, 10003100]}
    with open(os.path.join(d, "old.cpuprofile"), "w") as f:
        json.dump(old, f)


if __name__ == "__main__":
    main(sys.argv[1])
