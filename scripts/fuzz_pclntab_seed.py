#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""fuzz_pclntab_seed.py - cut a Go 1.20+ pclntab down to its first functions.

Usage: fuzz_pclntab_seed.py IN OUT [NFUNC]

A whole .gopclntab (objcopy -O binary --only-section=.gopclntab BIN IN)
is half a megabyte even for a hello world, too big for a seed that
libFuzzer mutates thousands of times a second and for a corpus kept in
the repository. This keeps the first NFUNC functions (default: those
whose code starts in the first 8 KiB of text, at least 16), with the
parts of the name, CU, file and pc-value tables they use (the linker
writes each in function order, so these are prefixes), and a new
function table; the offsets inside each _func are
relative to their table, so only the header and the function table
change. The layout is Go's (src/internal/abi/symtab.go, runtime/symtab.go):

    header  magic u32, pad u16, quantum u8, ptrsize u8, then 8 words:
            nfunc nfiles textStart funcnameOff cuOff filetabOff pctabOff
            pclnOff (offsets from the start of the pclntab)
    pcln    nfunc+1 (entryOff u32, funcOff u32) pairs, funcOff from pcln,
            then the _func records: entryOff nameOff args deferreturn
            pcsp pcfile pcln npcdata cuOffset startLine (u32 each), funcID
            flag pad nfuncdata (u8), pcdata[npcdata] u32, funcdata[] u32
"""
import struct
import sys

MAGIC_120 = 0xFFFFFFF1


def uvarint(b, o):
    v = s = 0
    while True:
        c = b[o]
        o += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, o


def pcvalue_end(b, o):
    """End offset of the pc-value stream at @o: (value delta, pc delta) pairs up to a 0 delta."""
    first = True
    while True:
        uv, o = uvarint(b, o)
        if uv == 0 and not first:
            return o
        first = False
        _, o = uvarint(b, o)


def pcvalues(b, o):
    """The values of the pc-value stream at @o (Go's pcvalue: zigzag deltas from -1)."""
    v, first, out = -1, True, []
    while True:
        uv, o = uvarint(b, o)
        if uv == 0 and not first:
            return out
        first = False
        v += ~(uv >> 1) if uv & 1 else uv >> 1
        out.append(v)
        _, o = uvarint(b, o)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    b = open(src, "rb").read()
    magic, _, quantum, ptrsize = struct.unpack_from("<IHBB", b, 0)
    if magic != MAGIC_120 or ptrsize != 8:
        sys.exit("%s: not a 64-bit Go 1.20+ pclntab" % src)
    nfunc, nfiles, text, fname, cu, filetab, pctab, pcln = struct.unpack_from("<8Q", b, 8)
    ents = [struct.unpack_from("<II", b, pcln + 8 * i) for i in range(nfunc + 1)]
    if len(sys.argv) > 3:
        keep = int(sys.argv[3])
    else:
        keep = max(16, sum(1 for e, _ in ents[:nfunc] if e < 8192))
    keep = min(keep, nfunc)
    name_end = pct_end = cu_end = file_end = 0
    funcs = []
    for e, foff in ents[:keep]:
        fn = pcln + foff
        (_, nameoff, _, _, pcsp, pcfile, pcln_off, npcdata, cuoff, _) = struct.unpack_from("<10I", b, fn)
        nfuncdata = b[fn + 43]
        size = 44 + 4 * npcdata + 4 * nfuncdata
        funcs.append(bytearray(b[fn:fn + size]))
        name_end = max(name_end, b.index(b"\0", fname + nameoff) + 1 - fname)
        if pcfile:
            for fileno in set(pcvalues(b, pctab + pcfile)):
                if 0 <= fileno and cu + 4 * (cuoff + fileno) + 4 <= filetab:
                    cu_end = max(cu_end, 4 * (cuoff + fileno + 1))
                    (foff,) = struct.unpack_from("<I", b, cu + 4 * (cuoff + fileno))
                    if foff != 0xFFFFFFFF:
                        file_end = max(file_end, b.index(b"\0", filetab + foff) + 1 - filetab)
        pcdata = struct.unpack_from("<%dI" % npcdata, b, fn + 44)
        for off in (pcsp, pcfile, pcln_off) + pcdata:
            if off:
                pct_end = max(pct_end, pcvalue_end(b, pctab + off) - pctab)
    out = bytearray(72)
    parts = {}
    for key, start, n in (
        ("fname", fname, name_end),
        ("cu", cu, cu_end),
        ("filetab", filetab, file_end),
        ("pctab", pctab, pct_end),
    ):
        parts[key] = len(out)
        out += b[start:start + n]
    while len(out) % 8:
        out.append(0)
    new_pcln = len(out)
    table = bytearray()
    body = bytearray()
    base = 8 * (keep + 1)
    for i, f in enumerate(funcs):
        table += struct.pack("<II", ents[i][0], base + len(body))
        body += f
    table += struct.pack("<II", ents[keep][0], base + len(body))
    out += table + body
    struct.pack_into("<IHBB", out, 0, MAGIC_120, 0, quantum, ptrsize)
    struct.pack_into("<8Q", out, 8, keep, nfiles, text, parts["fname"], parts["cu"],
                     parts["filetab"], parts["pctab"], new_pcln)
    open(dst, "wb").write(out)


if __name__ == "__main__":
    main()
